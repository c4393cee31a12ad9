//! The full differential check of a function's runs, every stage against the reference
//! interpreter (`DESIGN.md`, "Differential check"):
//!
//! 1. the reference interpreter on the function as written;
//! 2. the interpreter after every IR pass of the check pipeline ([`crate::judge::passcheck`]),
//!    naming the first pass that changed the outcome; and, for a function without phis,
//!    after `cprop` alone, which is where the tree mover sees HIR as a front end writes it
//!    (redefinitions after uses, so every kind of tree move can fire);
//! 3. the x86 code of the function without IR optimization (a function already in SSA
//!    form only goes through `ssa-destroy`, since the backend takes IR without phis), run
//!    in the emulator ([`crate::judge::diff`]);
//! 4. the x86 code of the function as the check pipeline of stage 2 left it.
//!
//! The reference interpreter, each pipeline and each compilation run once per function,
//! however many runs are checked.
//!
//! A run the reference finds invalid is not compared. The first disagreeing stage names
//! the guilty part: a pass, the backend alone, or the backend on optimized IR.
//!
//! [`plant_bug`] lets the harness's own tests (campaigns, the reducer) plant a bug in a
//! pass or in the backend's input without editing the compiler; nothing else sets it.

use crate::judge::diff::{self, side_by_side};
use crate::exec::emu::EmuError;
use crate::exec::x86::{Infidelity, X86Runner};
use crate::exec::interp::{self, InputError, RunInput};
use crate::exec::outcome::{Invalid, Outcome};
use crate::judge::passcheck;
use tandem_core::backend;
use tandem_core::ir::Function;
use tandem_core::passes::{Form, PassError, PassManager, Pipeline, Stats};
use tandem_core::verify::Verified;

/// A bug planted for the harness's own tests: called with a pass name and the function
/// right after that pass (a buggy pass), and with `x86` and the function the backend
/// compiles when no IR optimization runs (a buggy backend).
pub type PlantedBug = fn(stage: &str, f: &mut Function);

static PLANTED: std::sync::RwLock<Option<PlantedBug>> = std::sync::RwLock::new(None);

/// Plants `bug` in every later check of this process (`None` removes it). For tests of
/// the harness only: campaigns and the reducer need real findings to work on.
pub fn plant_bug(bug: Option<PlantedBug>) {
    *PLANTED.write().unwrap_or_else(|e| e.into_inner()) = bug;
}

/// Whether a test planted a bug in this process (which a child process would not see).
pub fn bug_planted() -> bool {
    planted().is_some()
}

fn planted() -> Option<PlantedBug> {
    *PLANTED.read().unwrap_or_else(|e| e.into_inner())
}

thread_local! {
    /// Where this thread reports the stage it is in, if a watchdog asked ([`watch_stages`]).
    static STAGE: std::cell::RefCell<Option<StageSlot>> = const { std::cell::RefCell::new(None) };
}

/// The stage a thread's check is in, readable by another thread: a campaign's watchdog
/// names the stage of a seed that stays too long in one stage, and the stage of a panic.
pub type StageSlot = std::sync::Arc<std::sync::Mutex<Stage>>;

/// A stage a check entered, and when.
#[derive(Clone, Debug)]
pub struct Stage {
    pub name: String,
    pub since: std::time::Instant,
}

impl Stage {
    pub fn new(name: impl Into<String>) -> Stage {
        Stage { name: name.into(), since: std::time::Instant::now() }
    }
}

/// Makes this thread's checks report every stage they enter into `slot` (`None`: stop).
pub fn watch_stages(slot: Option<StageSlot>) {
    STAGE.with(|s| *s.borrow_mut() = slot);
}

/// Notes that this thread's check enters `stage`: `pass NAME` and `backend ...` are the
/// compiler under test ([`is_compiler_stage`]); anything else is the harness.
pub fn enter_stage(stage: impl FnOnce() -> String) {
    STAGE.with(|s| {
        if let Some(slot) = &*s.borrow() {
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Stage::new(stage());
        }
    });
}

/// Whether a stage [`enter_stage`] names is the compiler under test (a pass, or the
/// backend compiling), not the harness (generator, interpreter, x86 machines, validator).
pub fn is_compiler_stage(stage: &str) -> bool {
    stage.starts_with("pass ") || stage.starts_with("backend")
}

/// Runs `pipeline` over `g` as the pass manager does; with a planted bug, pass by pass,
/// the bug applied after each pass and the IR verified again (a planted bug that breaks
/// the IR is a verifier error of that pass, as a real one would be). The validator and
/// the finding pages drive pipelines through it too, so that they see what the checks
/// see.
pub fn drive(
    pm: &PassManager,
    pipeline: &Pipeline,
    g: &mut Function,
    hook: &mut passcheck::Hook<'_>,
) -> Result<Vec<(&'static str, Stats)>, PassError> {
    drive_keeping(pm, pipeline, g, hook, None)
}

/// [`drive`] over a function it owns, returned as [`Verified`] by the verification after
/// the last pass (and the last planted bug), which the backend then trusts
/// ([`BackendInput`]). An empty pipeline is [`PassError::EmptyName`].
pub fn drive_verified(
    pm: &PassManager,
    pipeline: &Pipeline,
    mut g: Function,
    hook: &mut passcheck::Hook<'_>,
) -> Result<(Vec<(&'static str, Stats)>, Verified), PassError> {
    let mut last = None;
    let stats = drive_keeping(pm, pipeline, &mut g, hook, Some(&mut last))?;
    last.map(|v| (stats, v)).ok_or(PassError::EmptyName)
}

/// [`drive`]; with `last`, the function after the last pass is verified whatever `pm`
/// says and moved there (leaving `g` empty).
fn drive_keeping(
    pm: &PassManager,
    pipeline: &Pipeline,
    g: &mut Function,
    hook: &mut passcheck::Hook<'_>,
    mut last: Option<&mut Option<Verified>>,
) -> Result<Vec<(&'static str, Stats)>, PassError> {
    let names: Vec<&'static str> = pipeline.passes.iter().map(|p| p.name).collect();
    let names = &names;
    let pass_stage = move |i: usize| move || names.get(i).map_or_else(|| "harness after the passes".to_string(), |n| format!("pass {n}"));
    enter_stage(pass_stage(0));
    let Some(bug) = planted() else {
        let mut done = 0;
        let mut staged = |name: &str, g: &Function, stats: &Stats| {
            enter_stage(|| format!("interpreter after pass {name}"));
            hook(name, g, stats);
            done += 1;
            enter_stage(pass_stage(done));
        };
        return match last {
            None => pm.run(pipeline, g, &mut staged),
            Some(last) => pm.run_verified(pipeline, g.take(), &mut staged).map(|(stats, v)| {
                *last = Some(v);
                stats
            }),
        };
    };
    let mut out = vec![];
    let mut form = pipeline.start;
    for p in &pipeline.passes {
        let one = Pipeline { passes: vec![*p], start: form };
        let (name, stats) = pm.run(&one, g, &mut |_, _, _| {})?.remove(0);
        form = pipeline.form_after(out.len() + 1);
        bug(name, g);
        let verified = tandem_core::passes::verify_after(name, g, form)?;
        enter_stage(|| format!("interpreter after pass {name}"));
        hook(name, &verified, &stats);
        out.push((name, stats));
        enter_stage(pass_stage(out.len()));
        match last.as_deref_mut().filter(|_| out.len() == pipeline.passes.len()) {
            Some(keep) => *keep = Some(verified),
            None => *g = verified.into_function(),
        }
    }
    Ok(out)
}

/// What one stage found wrong.
#[derive(Clone, Debug)]
pub struct Problem {
    /// The stage: `pass <name>`, `x86`, or `x86 after <pipeline>`.
    pub stage: String,
    /// One line per difference.
    pub lines: Vec<String>,
    /// The two outcomes in two columns, when both exist.
    pub side_by_side: Option<String>,
}

/// The result of checking one run.
#[derive(Clone, Debug)]
pub struct RunCheck {
    /// The reference interpreter's result.
    pub reference: Result<Outcome, Invalid>,
    /// Every stage that disagreed, in stage order; empty when all agree (or the run is
    /// invalid).
    pub problems: Vec<Problem>,
    /// What each pass did, by stage label (`ssa`, ..., `cprop`, and `cprop on HIR` for
    /// the pass alone); empty when no pipeline ran.
    pub pass_stats: Vec<(String, Stats)>,
    /// Stages that could not run because the program exceeds a limit of the harness
    /// (`emu::HarnessLimit`): (stage, what limit). Not a problem, and not a pass either.
    pub limits: Vec<(String, String)>,
    /// Stages whose run Unicorn and the CPU disagree on: (stage, the disagreement). Not
    /// a problem of the compiler: an emulator infidelity, reported on its own.
    pub infidelities: Vec<(String, Infidelity)>,
}

/// Why a run could not be checked at all.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum CheckError {
    /// The inputs do not fit the function.
    Input(InputError),
    /// The emulator itself failed (not the code under test).
    Emulator(EmuError),
}

impl std::fmt::Display for CheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckError::Input(e) => write!(f, "bad run input: {e}"),
            CheckError::Emulator(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CheckError {}

/// What an x86 stage compiles: a function verified as it is, by the pass manager after
/// the pass that made it, or one that nothing verified, which the backend verifies. So
/// every function compiled is verified once, and the fact comes from the verification
/// itself ([`Verified`]), never from where the function came from.
#[derive(Clone, Debug)]
pub enum BackendInput {
    Verified(Verified),
    Unverified(Function),
}

impl BackendInput {
    pub fn function(&self) -> &Function {
        match self {
            BackendInput::Verified(v) => v,
            BackendInput::Unverified(f) => f,
        }
    }

    pub fn into_function(self) -> Function {
        match self {
            BackendInput::Verified(v) => v.into_function(),
            BackendInput::Unverified(f) => f,
        }
    }

    /// As [`backend::compile_validated_timed`] takes it: `Ok` when verified.
    pub fn as_result(&self) -> Result<&Verified, &Function> {
        match self {
            BackendInput::Verified(v) => Ok(v),
            BackendInput::Unverified(f) => Err(f),
        }
    }

    /// Compiles with every backend checker ([`backend::compile_validated`]), the HIR
    /// verifier only if nothing verified the function.
    pub fn compile(&self) -> Result<tandem_core::abi::MachineCode, backend::CompileError> {
        match self {
            BackendInput::Verified(v) => backend::compile_verified(v),
            BackendInput::Unverified(f) => backend::compile_validated(f),
        }
    }
}

/// The function the backend compiles when no IR optimization runs: `f` itself (which
/// nothing verified here), or for a function with phis, `f` after `ssa-destroy`
/// (verified after it).
pub fn backend_input(f: &Function) -> Result<BackendInput, String> {
    if f.layout.iter().all(|&b| f.blocks[b].phis.is_empty()) {
        return Ok(BackendInput::Unverified(f.clone()));
    }
    let p = Pipeline::parse_from(Form::Ssa, "ssa-destroy").expect("valid pipeline");
    let (_, g) = PassManager { verify: true }.run_verified(&p, f.clone(), &mut |_, _, _| {}).map_err(|e| e.to_string())?;
    Ok(BackendInput::Verified(g))
}

/// What stage 3 compiles: [`backend_input`] (a panic caught as its message), with the
/// planted bug of a test applied (after which the function is unverified).
pub fn unoptimized_input(f: &Function) -> Result<BackendInput, String> {
    enter_stage(|| "pass ssa-destroy (the backend's input)".to_string());
    let unoptimized = caught(|| backend_input(f)).map_err(|msg| format!("ssa-destroy panicked: {msg}")).and_then(|r| r);
    enter_stage(|| "harness: the backend's input".to_string());
    match (planted(), unoptimized) {
        (Some(bug), Ok(g)) => {
            let mut g = g.into_function();
            bug("x86", &mut g);
            Ok(BackendInput::Unverified(g))
        }
        (_, unoptimized) => unoptimized,
    }
}

/// Runs `f`, turning a panic into its message: a pass or a backend stage that panics is
/// a finding of its stage (reported, replayed and reduced like any other), not the end of
/// the run, the campaign or the reducer.
pub(crate) fn caught<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into())
    })
}

/// Checks several runs of one function through every stage. The passes and the backend
/// run once per function, not once per run; one [`RunCheck`] per input, in order (each
/// carries the same pass statistics).
pub fn check_runs(f: &Function, inputs: &[RunInput], emu: &mut dyn X86Runner) -> Result<Vec<RunCheck>, CheckError> {
    // 1. The reference interpreter.
    enter_stage(|| "reference interpreter".to_string());
    let mut references = vec![];
    for input in inputs {
        references.push(interp::run_measured(f, input).map_err(CheckError::Input)?);
    }
    let mut found = Collected::new(inputs.len());
    // 2. The interpreter after the IR passes; what the x86 stages compile.
    let x86_stages = check_ir_stages(f, inputs, &references, &mut found);
    // 3. and 4. The x86 code, without and with IR optimization, compiled once.
    for (stage, g) in x86_stages {
        check_x86_stage(&stage, g, inputs, &references, emu, &mut found)?;
    }
    Ok(found.into_run_checks(references))
}

/// The interpreter's result of each run and the fuel it used.
type References = [(Result<Outcome, Invalid>, u64)];

/// What the stages found, per run, while [`check_runs`] goes through them.
struct Collected {
    problems: Vec<Vec<Problem>>,
    limits: Vec<Vec<(String, String)>>,
    infidelities: Vec<Vec<(String, Infidelity)>>,
    pass_stats: Vec<(String, Stats)>,
}

impl Collected {
    fn new(runs: usize) -> Collected {
        Collected { problems: vec![vec![]; runs], limits: vec![vec![]; runs], infidelities: vec![vec![]; runs], pass_stats: vec![] }
    }

    fn problem(&mut self, k: usize, stage: &str, lines: Vec<String>) {
        self.problems[k].push(Problem { stage: stage.to_string(), lines, side_by_side: None });
    }

    fn into_run_checks(self, references: Vec<(Result<Outcome, Invalid>, u64)>) -> Vec<RunCheck> {
        let Collected { problems, limits, infidelities, pass_stats } = self;
        references
            .into_iter()
            .zip(problems)
            .zip(limits)
            .zip(infidelities)
            .map(|((((reference, _), problems), limits), infidelities)| {
                // An invalid reference run is not compared: no stage can disagree with it.
                let problems = if reference.is_ok() { problems } else { vec![] };
                RunCheck { reference, problems, pass_stats: pass_stats.clone(), limits, infidelities }
            })
            .collect()
    }
}

/// Stage 2: the interpreter after `cprop` alone on HIR, and after every pass of the
/// check pipeline. Returns the x86 stages to run: the function the backend compiles
/// without IR optimization, and the pipeline's result (or why there is none).
fn check_ir_stages(
    f: &Function,
    inputs: &[RunInput],
    references: &References,
    found: &mut Collected,
) -> Vec<(String, Result<BackendInput, String>)> {
    let outcomes: Vec<_> = references.iter().map(|(r, _)| r.clone()).collect();
    let pm = PassManager { verify: true };
    let mut stages: Vec<(&str, Pipeline)> = vec![];
    if f.layout.iter().all(|&b| f.blocks[b].phis.is_empty()) {
        stages.push(("IR pass cprop on HIR", Pipeline::parse("cprop").expect("valid pipeline")));
    }
    let unoptimized = unoptimized_input(f);
    let mut x86_stages = vec![("x86".to_string(), unoptimized)];
    if let Some(p) = passcheck::replay_pipeline(f) {
        stages.push(("IR passes", p));
    }
    for (stage, pipeline) in stages {
        let optimizing = stage == "IR passes";
        let x86_stage = format!("x86 after {pipeline}");
        let checked = caught(|| passcheck::check_against(f, inputs, &outcomes, Some(&pipeline), |g, hook| drive_verified(&pm, &pipeline, g, hook)))
            .map_err(|msg| format!("a pass panicked: {msg}"))
            .and_then(|r| r.map_err(|e| e.to_string()));
        match checked {
            Ok(c) => {
                for (k, v) in c.verdicts.iter().enumerate() {
                    if !v.is_ok() {
                        found.problem(k, stage, v.problems());
                    }
                }
                let label = |n: &str| if optimizing { n.to_string() } else { "cprop on HIR".to_string() };
                found.pass_stats.extend(c.stats.into_iter().map(|(n, st)| (label(n), st)));
                if optimizing {
                    x86_stages.push((x86_stage, c.result.map(BackendInput::Verified).map_err(|e| e.to_string())));
                }
            }
            Err(e) => {
                (0..inputs.len()).for_each(|k| found.problem(k, stage, vec![format!("per-pass check: {e}")]));
                if optimizing {
                    x86_stages.push((x86_stage, Err(e)));
                }
            }
        }
    }
    x86_stages
}

/// Stages 3 and 4: compiles `g` once and runs every valid input on the x86 machines
/// against the interpreter's outcome. An emulator infidelity is recorded apart from the
/// problems, and the CPU's verdict judged as usual.
fn check_x86_stage(
    stage: &str,
    g: Result<BackendInput, String>,
    inputs: &[RunInput],
    references: &References,
    emu: &mut dyn X86Runner,
    found: &mut Collected,
) -> Result<(), CheckError> {
    enter_stage(|| format!("backend compiling for {stage}"));
    let compiled = g.map_err(|e| format!("the IR passes failed: {e}")).and_then(|g| match caught(|| g.compile()) {
        Ok(Ok(c)) => Ok((g, c)),
        Ok(Err(e)) => Err(format!("the backend failed: {e}")),
        Err(msg) => Err(format!("the backend panicked: {msg}")),
    });
    for (k, input) in inputs.iter().enumerate() {
        let (Ok(expected), fuel_used) = &references[k] else { continue };
        let (g, code) = match &compiled {
            Ok(gc) => gc,
            Err(e) => {
                found.problem(k, stage, vec![e.clone()]);
                continue;
            }
        };
        enter_stage(|| format!("x86 machine running {stage}"));
        // The instruction budget follows the fuel the reference used (`diff::budget_for`).
        let mut v = diff::check_against(expected.clone(), *fuel_used, g.function(), input, code, emu).map_err(CheckError::Emulator)?;
        if let diff::Verdict::Infidelity { infidelity, cpu } = v {
            found.infidelities[k].push((stage.to_string(), infidelity));
            v = *cpu;
        }
        match v {
            diff::Verdict::Agree(_) | diff::Verdict::Skipped(_) => {}
            diff::Verdict::Limit(l) => found.limits[k].push((stage.to_string(), l.to_string())),
            diff::Verdict::Disagree { interp, x86, diff } => found.problems[k].push(Problem {
                side_by_side: Some(side_by_side("interpreter", &interp, stage, &x86)),
                stage: stage.to_string(),
                lines: diff,
            }),
            diff::Verdict::Finding { finding, .. } => {
                found.problem(k, stage, finding.to_string().lines().map(str::to_string).collect())
            }
            diff::Verdict::Infidelity { .. } => unreachable!("unwrapped above"),
        }
    }
    Ok(())
}

/// Why a case file's runs could not be checked: which run, and why.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct CaseCheckError {
    /// Index of the run in the case file.
    pub run: usize,
    pub message: String,
}

impl std::fmt::Display for CaseCheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "run {}: {}", self.run + 1, self.message)
    }
}

/// Checks every run of a case file, the runs of each function together
/// ([`check_runs`]); one [`RunCheck`] per run, in the file's order.
pub fn check_case(case: &crate::cases::casefile::CaseFile, emu: &mut dyn X86Runner) -> Result<Vec<RunCheck>, CaseCheckError> {
    let mut checked: Vec<Option<RunCheck>> = vec![None; case.runs.len()];
    for f in &case.module.functions {
        let idx: Vec<usize> = (0..case.runs.len()).filter(|&k| case.runs[k].entry == f.name).collect();
        let Some(&first) = idx.first() else { continue };
        let inputs = idx
            .iter()
            .map(|&k| case.runs[k].input(f).map_err(|message| CaseCheckError { run: k, message }))
            .collect::<Result<Vec<_>, _>>()?;
        let results = check_runs(f, &inputs, emu).map_err(|e| CaseCheckError { run: first, message: e.to_string() })?;
        for (k, c) in idx.into_iter().zip(results) {
            checked[k] = Some(c);
        }
    }
    checked
        .into_iter()
        .enumerate()
        .map(|(k, c)| {
            c.ok_or_else(|| CaseCheckError { run: k, message: format!("no function %{}", case.runs[k].entry) })
        })
        .collect()
}
