//! Throughput measurements for `tandem bench`: what one emulated run costs, bare and
//! through the runner, and why the runner reuses one Unicorn instance (issue 4, "A
//! benchmark command"). Each measurement runs a fixed program a fixed number of times and
//! reports runs per second; every runner measurement also checks that the runs agree with
//! the interpreter, so a broken runner cannot report a good figure.
//!
//! The fixed program is written by hand in x86: a loop of `n` calls to `@mix`, then one
//! `@log`. [`generated_bench`] measures the real pipeline on a fixed range of generated
//! seeds: compile only, emulate only, emulate both x86 stages, end to end, and the full
//! check of every stage.

use crate::judge::diff::{check, Verdict};
use crate::exec::emu::{EmuError, Emulator};
use crate::exec::interp::{RunInput, DEFAULT_FUEL};
use crate::exec::outcome::{Invalid, Outcome, Value};
use iced_x86::code_asm::*;
use std::fmt;
use std::time::Instant;
use tandem_core::abi::{MachineCode, RuntimeHelper, CODE_BASE};
use tandem_core::helpers::HelperKind;
use tandem_core::ir::Function;
use crate::judge::check::BackendInput;
use unicorn_engine::unicorn_const::{Arch, Mode, Prot};
use unicorn_engine::{RegisterX86, Unicorn};

/// The fixed program's IR; [`fixed_program`] is its compilation by hand.
pub const FIXED_PROGRAM: &str = "\
helper @log(i32, i32) -> void effects(observable)
helper @mix(i32, i32) -> i32 pure

function %f(i32 %n) -> i32 {
    local i32 %i
    local i32 %s
b0:
    jump b1
b1:
    (%s = add(%s, call @mix(%i, %s)))
    (%i = add(%i, 1))
    br slt(%i, %n), b1, b2
b2:
    call @log(%s, %i)
    ret %s
}
";

/// The loop count the fixed program runs with.
pub const FIXED_N: i32 = 10;

/// Why a benchmark could not run.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum BenchError {
    /// The emulator failed.
    Emulator(EmuError),
    /// A bare Unicorn operation failed.
    Unicorn(String),
    /// The fixed program's runs did not agree with the interpreter: the runner is broken.
    Disagreement(String),
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::Emulator(e) => e.fmt(f),
            BenchError::Unicorn(s) => write!(f, "unicorn: {s}"),
            BenchError::Disagreement(s) => write!(f, "the fixed program disagrees with the interpreter:\n{s}"),
        }
    }
}

impl std::error::Error for BenchError {}

/// One measurement: what was timed, how many runs, how long they took.
#[derive(Clone, Debug)]
pub struct Measurement {
    pub name: &'static str,
    /// How many units (runs or programs) were timed.
    pub runs: u64,
    /// What one unit is: `runs` or `programs`.
    pub unit: &'static str,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Seconds of CPU time of the measuring thread: on a machine shared with other work
    /// the wall clock also counts the time others had the core, this does not.
    pub cpu_seconds: f64,
}

/// The wall clock and the thread's CPU time since it was started.
struct Clock {
    wall: Instant,
    cpu: f64,
}

impl Clock {
    fn start() -> Clock {
        Clock { wall: Instant::now(), cpu: thread_cpu_seconds() }
    }

    /// `(wall seconds, CPU seconds)` since the start, each at least a nanosecond.
    fn elapsed(&self) -> (f64, f64) {
        (self.wall.elapsed().as_secs_f64().max(1e-9), (thread_cpu_seconds() - self.cpu).max(1e-9))
    }
}

/// The CPU time this thread has used, in seconds.
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write; the clock id is a constant Linux knows.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

impl Measurement {
    pub fn runs_per_second(&self) -> f64 {
        self.runs as f64 / self.seconds
    }

    pub fn micros_per_run(&self) -> f64 {
        self.seconds * 1e6 / self.runs as f64
    }

    /// Units per second of the thread's CPU time.
    pub fn runs_per_cpu_second(&self) -> f64 {
        self.runs as f64 / self.cpu_seconds
    }
}

impl fmt::Display for Measurement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:<56} {:>10.0} {}/s {:>10.2} us each ({} {}); CPU time: {:.0} {}/s",
            self.name,
            self.runs_per_second(),
            self.unit,
            self.micros_per_run(),
            self.runs,
            self.unit,
            self.runs_per_cpu_second(),
            self.unit
        )
    }
}

fn time(
    name: &'static str,
    runs: u64,
    mut body: impl FnMut() -> Result<(), BenchError>,
) -> Result<Measurement, BenchError> {
    let clock = Clock::start();
    for _ in 0..runs {
        body()?;
    }
    let (seconds, cpu_seconds) = clock.elapsed();
    Ok(Measurement { name, runs, unit: "runs", seconds, cpu_seconds })
}

/// The fixed program's function.
pub fn fixed_function() -> Function {
    let (m, _) = tandem_core::text::parse_module(FIXED_PROGRAM).expect("the fixed program parses");
    m.functions.into_iter().next().expect("one function")
}

/// The fixed program compiled by hand: `i` in `esi`, `s` in `edi`, `n` in `ebx`.
pub fn fixed_program() -> MachineCode {
    let mix = RuntimeHelper::Ir(HelperKind::Mix).address() as u64;
    let log = RuntimeHelper::Ir(HelperKind::Log).address() as u64;
    let build = |a: &mut CodeAssembler| -> Result<(), IcedError> {
        let mut top = a.create_label();
        a.push(ebx)?;
        a.push(esi)?;
        a.push(edi)?;
        a.xor(esi, esi)?;
        a.xor(edi, edi)?;
        a.mov(ebx, dword_ptr(esp + 16))?;
        a.set_label(&mut top)?;
        a.push(edi)?;
        a.push(esi)?;
        a.call(mix)?;
        a.add(esp, 8)?;
        a.add(edi, eax)?;
        a.inc(esi)?;
        a.cmp(esi, ebx)?;
        a.jl(top)?;
        a.push(esi)?;
        a.push(edi)?;
        a.call(log)?;
        a.add(esp, 8)?;
        a.mov(eax, edi)?;
        a.pop(edi)?;
        a.pop(esi)?;
        a.pop(ebx)?;
        a.ret()
    };
    let mut a = CodeAssembler::new(32).expect("32-bit assembler");
    build(&mut a).expect("the fixed program assembles");
    MachineCode::from_bytes(a.assemble(CODE_BASE as u64).expect("the fixed program encodes"))
}

/// The smallest function and its code: `ret 0`.
fn trivial() -> (Function, MachineCode) {
    let (m, _) = tandem_core::text::parse_module("function %f() -> i32 {\nb0:\n    ret 0\n}\n").expect("parses");
    let mut a = CodeAssembler::new(32).expect("32-bit assembler");
    a.xor(eax, eax).and_then(|_| a.ret()).expect("assembles");
    let code = MachineCode::from_bytes(a.assemble(CODE_BASE as u64).expect("encodes"));
    (m.functions.into_iter().next().expect("one function"), code)
}

fn uc_err(e: unicorn_engine::unicorn_const::uc_error) -> BenchError {
    BenchError::Unicorn(format!("{e:?}"))
}

/// One bare Unicorn run of `mov eax, 1` on `uc` (code page already mapped and written).
fn bare_run(uc: &mut Unicorn<'_, ()>) -> Result<(), BenchError> {
    uc.reg_write(RegisterX86::EAX, 0).map_err(uc_err)?;
    uc.emu_start(CODE_BASE as u64, CODE_BASE as u64 + 5, 0, 1000).map_err(uc_err)?;
    if uc.reg_read(RegisterX86::EAX).map_err(uc_err)? != 1 {
        return Err(BenchError::Unicorn("the bare program did not run".into()));
    }
    Ok(())
}

fn bare_instance() -> Result<Unicorn<'static, ()>, BenchError> {
    let mut uc = Unicorn::new(Arch::X86, Mode::MODE_32).map_err(uc_err)?;
    uc.mem_map(CODE_BASE as u64, 0x1000, Prot::READ | Prot::EXEC).map_err(uc_err)?;
    uc.mem_write(CODE_BASE as u64, &[0xB8, 1, 0, 0, 0]).map_err(uc_err)?;
    Ok(uc)
}

/// Runs every emulator measurement with `runs` runs each (the instance-per-run ones
/// with a tenth of that, as they are slow). The same program on the same instance keeps
/// its translated code between runs; the "new code every run" line shows the cost with
/// translation, which is what a campaign of fresh programs pays once per program.
pub fn emulator_bench(runs: u64) -> Result<Vec<Measurement>, BenchError> {
    let few = (runs / 10).max(1);
    let mut out = vec![];
    out.push(time("unicorn bare: new instance per run", few, || {
        let mut uc = bare_instance()?;
        bare_run(&mut uc)
    })?);
    let mut uc = bare_instance()?;
    out.push(time("unicorn bare: one reused instance", runs, || bare_run(&mut uc))?);

    let (tf, tcode) = trivial();
    let tinput = RunInput { args: vec![], heap: vec![], callframe: vec![], fuel: DEFAULT_FUEL };
    let agree = |v: Verdict| match v {
        Verdict::Agree(_) => Ok(()),
        other => Err(BenchError::Disagreement(other.to_string())),
    };
    out.push(time("runner, trivial program: new Emulator per run", few, || {
        let mut emu = Emulator::new().map_err(BenchError::Emulator)?;
        agree(check(&tf, &tinput, &tcode, &mut emu).map_err(|e| BenchError::Disagreement(e.to_string()))?)
    })?);
    let mut emu = Emulator::new().map_err(BenchError::Emulator)?;
    out.push(time("runner, trivial program: reused Emulator", runs, || {
        emu.run(&tcode, &tf, &tinput)
            .map_err(BenchError::Emulator)?
            .map(|_| ())
            .map_err(|f| BenchError::Disagreement(f.to_string()))
    })?);

    let f = fixed_function();
    let code = fixed_program();
    let input = RunInput { args: vec![Value::I32(FIXED_N)], heap: vec![], callframe: vec![], fuel: DEFAULT_FUEL };
    agree(check(&f, &input, &code, &mut emu).map_err(|e| BenchError::Disagreement(e.to_string()))?)?;
    // The instruction budget the check gives (from the fuel the interpreter used), so that
    // this line times exactly the emulation inside "interpreter + emulate + diff".
    let (_, fuel_used) = crate::exec::interp::run_measured(&f, &input).map_err(|e| BenchError::Disagreement(e.to_string()))?;
    let budget = crate::exec::emu::budget_for(fuel_used, &code.shape);
    out.push(time("runner, fixed program (10 helper calls): emulate", runs, || {
        emu.run_with_budget(&code, &f, &input, budget)
            .map_err(BenchError::Emulator)?
            .map(|_| ())
            .map_err(|f| BenchError::Disagreement(f.to_string()))
    })?);
    // Two byte-different copies of the program, alternated, so that every run loads and
    // translates new code, as a campaign's fresh programs do.
    let mut other = code.clone();
    other.bytes.push(0x90);
    let mut flip = false;
    out.push(time("runner, fixed program, new code every run: emulate", runs, || {
        flip = !flip;
        let c = if flip { &other } else { &code };
        emu.run_with_budget(c, &f, &input, budget)
            .map_err(BenchError::Emulator)?
            .map(|_| ())
            .map_err(|f| BenchError::Disagreement(f.to_string()))
    })?);
    out.push(time("runner, fixed program: interpreter + emulate + diff", runs, || {
        agree(check(&f, &input, &code, &mut emu).map_err(|e| BenchError::Disagreement(e.to_string()))?)
    })?);
    out.extend(native_bench(runs, (&tf, &tcode, &tinput), (&f, &code, &input))?);
    Ok(out)
}

/// The same runs on the CPU (the native runner, one reused context), beside Unicorn's
/// above; none where this machine cannot run 32-bit code natively.
fn native_bench(
    runs: u64,
    trivial: (&Function, &MachineCode, &RunInput),
    fixed: (&Function, &MachineCode, &RunInput),
) -> Result<Vec<Measurement>, BenchError> {
    use crate::exec::native::{self, Native};
    if native::available().is_err() {
        return Ok(vec![]);
    }
    let mut cpu = Native::new().map_err(BenchError::Emulator)?;
    let mut out = vec![];
    let budget = 1_000_000;
    let mut one = |name: &'static str, (f, code, input): (&Function, &MachineCode, &RunInput)| {
        time(name, runs, || {
            cpu.run_with_budget(code, f, input, budget)
                .map_err(BenchError::Emulator)?
                .map(|_| ())
                .map_err(|f| BenchError::Disagreement(f.to_string()))
        })
    };
    out.push(one("native, trivial program: reused context", trivial)?);
    out.push(one("native, fixed program (10 helper calls): run", fixed)?);
    let mut other = fixed.1.clone();
    other.bytes.push(0x90);
    let mut flip = false;
    out.push(time("native, fixed program, new code every run: run", runs, || {
        flip = !flip;
        let c = if flip { &other } else { fixed.1 };
        cpu.run_with_budget(c, fixed.0, fixed.2, budget)
            .map_err(BenchError::Emulator)?
            .map(|_| ())
            .map_err(|f| BenchError::Disagreement(f.to_string()))
    })?);
    Ok(out)
}

/// Measures the pipeline on the generated cases of `seeds` (default
/// profile), in programs per second: compiling with the backend alone, emulating the
/// compiled code of every run alone, end to end (generate, compile, interpret, emulate,
/// compare), and the full check of every stage ([`crate::judge::check::check_runs`]: every IR
/// pass interpreted, x86 without and with the passes). Every run must agree; a
/// disagreement is an error, not a figure.
///
/// "Emulate only" emulates exactly what the end-to-end check emulates: the runs the
/// reference interpreter finds valid (an invalid run, e.g. one out of fuel, is never
/// emulated by a check), each with the check's instruction budget, on an emulator already
/// warmed up by one untimed pass. It was once the first loop on a fresh emulator and so
/// paid its warm-up alone, which with few seeds reported emulation alone slower than the
/// end-to-end check that contains it.
pub fn generated_bench(seeds: std::ops::RangeInclusive<u64>, emu: &mut Emulator) -> Result<Vec<Measurement>, BenchError> {
    use crate::judge::check::{backend_input, check_runs};
    use crate::gen::{self, Profile};
    let count = seeds.end() - seeds.start() + 1;
    let cfg = Profile::Default.config();
    let programs = |name: &'static str, (seconds, cpu_seconds): (f64, f64)| Measurement { name, runs: count, unit: "programs", seconds, cpu_seconds };
    let bad = |seed: u64, what: String| BenchError::Disagreement(format!("seed {seed}: {what}"));
    // The cases and their backend inputs, outside every timing.
    let mut cases = vec![];
    let mut optimized_codes = vec![];
    for seed in seeds.clone() {
        let case = gen::generate(seed, &cfg).case;
        let f = case.module.functions[0].clone();
        let g = backend_input(&f).map_err(|e| bad(seed, e))?.into_function();
        let inputs: Vec<RunInput> = case.runs.iter().map(|r| r.input(&f)).collect::<Result<_, _>>().map_err(|e| bad(seed, e))?;
        // The runs a check emulates, with the fuel the reference used.
        let mut valid = vec![];
        for input in &inputs {
            if let (Ok(_), used) = crate::exec::interp::run_measured(&g, input).map_err(|e| bad(seed, e.to_string()))? {
                valid.push((input.clone(), used));
            }
        }
        // The full check's second x86 stage: the same runs of the function after the IR
        // passes (a pipeline that fails leaves that stage without code, as in the check).
        let optimized = crate::judge::passcheck::replay_pipeline(&f).and_then(|p| {
            let mut h = f.clone();
            tandem_core::passes::PassManager { verify: true }.run(&p, &mut h, &mut |_, _, _| {}).ok().map(|_| h)
        });
        optimized_codes.push(match optimized {
            Some(h) => Some((tandem_core::backend::compile(&h).map_err(|e| bad(seed, e.to_string()))?, h)),
            None => None,
        });
        cases.push((seed, f, g, inputs, valid));
    }
    let mut out = vec![];
    let t = Clock::start();
    let mut codes = vec![];
    for (seed, _, g, _, _) in &cases {
        codes.push(tandem_core::backend::compile(g).map_err(|e| bad(*seed, e.to_string()))?);
    }
    out.push(programs("generated programs: compile only (backend)", t.elapsed()));
    // What the checks campaigns run add: the LIR validator after every backend pass and
    // the register allocation checker.
    let t = Clock::start();
    for (seed, _, g, _, _) in &cases {
        tandem_core::backend::compile_validated(g).map_err(|e| bad(*seed, e.to_string()))?;
    }
    out.push(programs("generated programs: compile with LIR validator and allocation checker", t.elapsed()));
    // Every valid run of every case's code, without the IR passes (`optimized` false: what
    // "emulate only" measures) or with them (the full check's second x86 stage; a case
    // whose pipeline failed has none).
    let emulate = |emu: &mut Emulator, optimized: bool| -> Result<(), BenchError> {
        for (((seed, _, g, _, valid), code), after) in cases.iter().zip(&codes).zip(&optimized_codes) {
            let (code, f) = match (optimized, after) {
                (false, _) => (code, g),
                (true, Some((code, h))) => (code, h),
                (true, None) => continue,
            };
            for (input, used) in valid {
                let budget = crate::exec::emu::budget_for(*used, &code.shape);
                emu.run_with_budget(code, f, input, budget).map_err(BenchError::Emulator)?.map_err(|f| bad(*seed, f.to_string()))?;
            }
        }
        Ok(())
    };
    // Once untimed: the first loop over an emulator pays for its warm-up (the pages of
    // Unicorn's translation buffer are touched for the first time), which the later,
    // longer measurements do not, and which made this line slower than "end to end".
    emulate(emu, false)?;
    let t = Clock::start();
    emulate(emu, false)?;
    out.push(programs("generated programs: emulate only (every valid run)", t.elapsed()));
    // What the full check emulates: the same runs, of the code without and with the IR
    // passes, so that the part of the full check's ratio that is its two x86 stages shows.
    emulate(emu, true)?;
    let t = Clock::start();
    emulate(emu, false)?;
    emulate(emu, true)?;
    out.push(programs(BOTH_STAGES, t.elapsed()));
    let t = Clock::start();
    for seed in seeds.clone() {
        let case = gen::generate(seed, &cfg).case;
        let f = &case.module.functions[0];
        let g = backend_input(f).map_err(|e| bad(seed, e))?.into_function();
        let code = tandem_core::backend::compile(&g).map_err(|e| bad(seed, e.to_string()))?;
        for r in &case.runs {
            let input = r.input(f).map_err(|e| bad(seed, e))?;
            match check(&g, &input, &code, emu).map_err(|e| bad(seed, e.to_string()))? {
                Verdict::Agree(_) | Verdict::Skipped(_) => {}
                v => return Err(bad(seed, v.to_string())),
            }
        }
    }
    out.push(programs("generated programs: end to end (gen, compile, interp, x86)", t.elapsed()));
    let t = Clock::start();
    for (seed, f, _, inputs, _) in &cases {
        for c in check_runs(f, inputs, emu).map_err(|e| bad(*seed, e.to_string()))? {
            if let Some(p) = c.problems.first() {
                return Err(bad(*seed, format!("stage {}: {}", p.stage, p.lines.join("; "))));
            }
        }
    }
    out.push(programs("generated programs: full check of every stage", t.elapsed()));
    Ok(out)
}

/// How many times the time of emulating alone the full check of the same programs takes,
/// by the wall clock and by CPU time (the issue 22 target is at most 2): the line
/// `tandem bench` prints under the generated measurements, if both were made.
pub fn full_check_ratio(measurements: &[Measurement]) -> Option<String> {
    let find = |name: &str| measurements.iter().find(|m| m.name == name);
    let full = find("generated programs: full check of every stage")?;
    let floor = find("generated programs: emulate only (every valid run)")?;
    let mut line = format!(
        "full check / emulate only: {:.1}x the time (CPU time: {:.1}x)",
        full.seconds / floor.seconds,
        full.cpu_seconds / floor.cpu_seconds
    );
    // The full check emulates two compilations of each program; their emulation alone is
    // this many times the floor, a part of the ratio no harness work can take away.
    if let Some(both) = find(BOTH_STAGES) {
        line += &format!(
            "; its two x86 stages' emulation alone: {:.1}x (CPU time: {:.1}x)",
            both.seconds / floor.seconds,
            both.cpu_seconds / floor.cpu_seconds
        );
    }
    Some(line)
}

/// The measurement of emulating the runs of both x86 stages of the full check: the code
/// without and with the IR passes.
const BOTH_STAGES: &str = "generated programs: emulate both x86 stages (without and with the IR passes)";

/// The time of every stage of the full check, summed over a range of generated programs
/// (`tandem bench --profile-stages`): the same steps as
/// [`crate::judge::check::check_runs`], in its order, each timed on its own, so a user
/// sees the split without `perf`. Times are the measuring thread's CPU time, so the
/// shares hold on a machine shared with other work.
#[derive(Clone, Debug)]
pub struct StageProfile {
    /// How many programs were profiled.
    pub programs: u64,
    /// `(stage, CPU seconds)` in the order the stages first ran.
    pub stages: Vec<(String, f64)>,
}

impl StageProfile {
    fn add(&mut self, stage: &str, seconds: f64) {
        match self.stages.iter_mut().find(|(s, _)| s == stage) {
            Some((_, t)) => *t += seconds,
            None => self.stages.push((stage.to_string(), seconds)),
        }
    }

    /// Seconds over all stages.
    pub fn total(&self) -> f64 {
        self.stages.iter().map(|(_, t)| t).sum()
    }
}

impl fmt::Display for StageProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.total().max(1e-9);
        writeln!(f, "{:<56} {:>10} {:>7}", "stage of the full check", "us/program", "share")?;
        for (stage, t) in &self.stages {
            writeln!(f, "{:<56} {:>10.1} {:>6.1}%", stage, t * 1e6 / self.programs as f64, 100.0 * t / total)?;
        }
        write!(
            f,
            "{:<56} {:>10.1} {:>6.1}%   ({:.0} programs/CPU-s)",
            "total",
            total * 1e6 / self.programs as f64,
            100.0,
            self.programs as f64 / total
        )
    }
}

/// Profiles the full check on the generated cases of `seeds`
/// (default profile), stage by stage: generation, the reference interpreter, each IR pass
/// (with the verifier the pass manager runs after it), the snapshot and the
/// anticipability checker of `ssapre`, the interpreter after the passes, each backend
/// pass, the LIR validator, the allocation checker, emission, the undefined-flags check,
/// and the emulated runs with their comparison (the first run of each compiled function,
/// which pays for Unicorn's translation of the blocks it reaches, apart from the later
/// runs). Every run must agree, as in [`generated_bench`].
pub fn stage_profile(seeds: std::ops::RangeInclusive<u64>, emu: &mut Emulator) -> Result<StageProfile, BenchError> {
    use crate::exec::interp;
    use crate::gen::{self, Profile};
    use crate::judge::{check::backend_input, passcheck};
    use tandem_core::passes::Pipeline;
    let count = seeds.end() - seeds.start() + 1;
    let cfg = Profile::Default.config();
    let bad = |seed: u64, what: String| BenchError::Disagreement(format!("seed {seed}: {what}"));
    let mut p = StageProfile { programs: count, stages: vec![] };
    for seed in seeds.clone() {
        let t = thread_cpu_seconds();
        let case = gen::generate(seed, &cfg).case;
        let f = &case.module.functions[0];
        let inputs: Vec<RunInput> = case.runs.iter().map(|r| r.input(f)).collect::<Result<_, _>>().map_err(|e| bad(seed, e))?;
        p.add("generate", thread_cpu_seconds() - t);

        let t = thread_cpu_seconds();
        let references = inputs.iter().map(|i| interp::run_measured(f, i)).collect::<Result<Vec<_>, _>>().map_err(|e| bad(seed, e.to_string()))?;
        p.add("reference interpreter", thread_cpu_seconds() - t);

        let mut pipelines = vec![];
        if f.layout.iter().all(|&b| f.blocks[b].phis.is_empty()) {
            pipelines.push(("cprop on HIR: ", Pipeline::parse("cprop").expect("valid pipeline")));
        }
        let t = thread_cpu_seconds();
        let unoptimized = backend_input(f).map_err(|e| bad(seed, e))?;
        p.add("ssa-destroy for the x86 stage", thread_cpu_seconds() - t);
        if let Some(pipeline) = passcheck::replay_pipeline(f) {
            pipelines.push(("IR pass ", pipeline));
        }
        let mut x86 = vec![unoptimized];
        for (prefix, pipeline) in pipelines {
            let g = profile_pipeline(&mut p, f, &inputs, &references, prefix, &pipeline).map_err(|e| bad(seed, e))?;
            if prefix == "IR pass " {
                x86.push(g);
            }
        }
        for g in &x86 {
            profile_x86(&mut p, seed, g, &inputs, &references, emu)?;
        }
    }
    Ok(p)
}

/// The stages of one IR pipeline on `f` (its passes are named with `prefix`): each pass
/// with the IR verifier, the anticipability checker after `ssapre`, the snapshots, and
/// the interpreter after each pass on every input with a reference outcome. Returns the
/// function after the passes, or what went wrong.
fn profile_pipeline(
    p: &mut StageProfile,
    f: &Function,
    inputs: &[RunInput],
    references: &[(Result<Outcome, Invalid>, u64)],
    prefix: &str,
    pipeline: &tandem_core::passes::Pipeline,
) -> Result<BackendInput, String> {
    use crate::exec::interp;
    use crate::judge::{anticip, passcheck};
    let pm = tandem_core::passes::PassManager { verify: true };
    let t = thread_cpu_seconds();
    let g = f.clone();
    p.add("function snapshots (clone)", thread_cpu_seconds() - t);
    // As the check keeps it: the IR before an `ssapre`, for its anticipability check.
    let mut prev: Option<Function> = None;
    let mut index = 0;
    let mut mark = thread_cpu_seconds();
    let mut failed = None;
    let (_, g) = pm.run_verified(pipeline, g, &mut |pass, ir, _| {
        p.add(&format!("{prefix}{pass} (and IR verifier)"), thread_cpu_seconds() - mark);
        if pass == "ssapre" {
            let t = thread_cpu_seconds();
            if !anticip::check(prev.as_ref().unwrap_or(f), ir).is_empty() {
                failed = Some(format!("{pass} broke the trap rule of insertions"));
            }
            p.add("anticipability checker", thread_cpu_seconds() - t);
        }
        index += 1;
        if pipeline.passes.get(index).is_some_and(|p| p.name == "ssapre") {
            let t = thread_cpu_seconds();
            prev = Some(ir.clone());
            p.add("function snapshots (clone)", thread_cpu_seconds() - t);
        }
        let t = thread_cpu_seconds();
        for (input, (reference, _)) in inputs.iter().zip(references) {
            let Ok(reference) = reference else { continue };
            let mut after = input.clone();
            after.fuel = input.fuel.saturating_mul(passcheck::FUEL_FACTOR);
            let same = matches!(interp::run(ir, &after), Ok(Ok(o)) if reference.diff(&o).is_empty());
            if !same && failed.is_none() {
                failed = Some(format!("outcome changed after pass `{pass}`"));
            }
        }
        p.add("interpreter after each pass", thread_cpu_seconds() - t);
        mark = thread_cpu_seconds();
    })
    .map_err(|e| e.to_string())?;
    match failed {
        Some(what) => Err(what),
        None => Ok(BackendInput::Verified(g)),
    }
}

/// The stage of [`stage_profile`] that emulates and compares the first valid run of each
/// compiled function, with Unicorn's translation of the blocks that run reaches.
pub const FIRST_RUN_STAGE: &str = "emulate and compare: first run (translates)";

/// The stage of [`stage_profile`] that emulates and compares every later run of the same
/// code, reusing the first run's translations.
pub const LATER_RUNS_STAGE: &str = "emulate and compare: later runs";

/// The backend stages of `g` (each backend pass, the validators, emission), then every
/// run with a reference outcome emulated and compared (`seed` names the case in errors).
/// The first run's time is shown apart from the later runs' ([`FIRST_RUN_STAGE`]).
fn profile_x86(
    p: &mut StageProfile,
    seed: u64,
    g: &BackendInput,
    inputs: &[RunInput],
    references: &[(Result<Outcome, Invalid>, u64)],
    emu: &mut Emulator,
) -> Result<(), BenchError> {
    use crate::judge::diff;
    let bad = |what: String| BenchError::Disagreement(format!("seed {seed}: {what}"));
    let (code, times) = tandem_core::backend::compile_validated_timed(g.as_result(), &thread_cpu_seconds).map_err(|e| bad(e.to_string()))?;
    for (step, t) in times {
        p.add(&format!("backend: {step}"), t);
    }
    // The first run of new code pays for Unicorn's translation of every block it reaches
    // (the later runs reuse those translations and translate only the blocks they reach
    // first), so the two are shown apart: their difference is about the translation.
    let mut first = true;
    for (input, (reference, fuel_used)) in inputs.iter().zip(references) {
        let Ok(expected) = reference else { continue };
        let t = thread_cpu_seconds();
        match diff::check_against(expected.clone(), *fuel_used, g.function(), input, &code, emu).map_err(BenchError::Emulator)? {
            diff::Verdict::Agree(_) | diff::Verdict::Skipped(_) | diff::Verdict::Limit(_) => {}
            v => return Err(bad(v.to_string())),
        }
        let stage = if first { FIRST_RUN_STAGE } else { LATER_RUNS_STAGE };
        p.add(stage, thread_cpu_seconds() - t);
        first = false;
    }
    Ok(())
}
