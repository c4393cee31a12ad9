//! The `tandem` command: the command-line layer over `tandem-oracle`. It turns reports
//! into text and exit codes: 0 when everything passed, 1 on a mismatch, 2 on bad input.

use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tandem_oracle::{gen, replay};

#[derive(Parser)]
#[command(name = "tandem", about = "Differential testing harness for the Tandem x86-32 compiler")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs every run of the given case files (folders are searched for `.tir` files) and
    /// checks each against its expectation.
    Run {
        /// Case files or folders.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Rewrite the expectations of failing runs to what they did.
        #[arg(long)]
        bless: bool,
        /// Print passing runs too.
        #[arg(long, short)]
        verbose: bool,
    },
    /// Compiles every function of a file (a module or a case file) and prints it at a
    /// chosen point: the IR after an IR pass (`--emit hir|ssa`), the LIR after each
    /// backend pass (`--emit lir`) or the machine code with addresses (`--emit asm`).
    Compile {
        /// The `.tir` file.
        file: PathBuf,
        /// What to print: `hir` (IR without phis), `ssa` (IR with phis), `lir` (after each
        /// backend pass) or `asm` (disassembly).
        #[arg(long, default_value = "asm")]
        emit: String,
        /// For `hir`/`ssa`: print the IR after this pass (default: after `ssa` for
        /// `--emit ssa`, else after the last pass).
        #[arg(long)]
        after: Option<String>,
        /// The IR passes to run, comma-separated (default: the default pipeline; `none`
        /// runs no IR pass, so the backend sees the input as written).
        #[arg(long)]
        pipeline: Option<String>,
        /// Print each pass's statistics to standard error.
        #[arg(long)]
        stats: bool,
    },
    /// Generates random case files (with expectations from the reference interpreter),
    /// or with --stats measures what the generator makes.
    Gen {
        /// The first seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// The profile: small, default, loops or memory.
        #[arg(long, default_value = "default", value_parser = parse_profile)]
        profile: gen::Profile,
        /// How many consecutive seeds.
        #[arg(long, default_value_t = 1)]
        count: u64,
        /// Print statistics over the seeds instead of the cases.
        #[arg(long)]
        stats: bool,
    },
    /// A fuzzing campaign: generates the cases of consecutive seeds and checks every run
    /// through every stage (reference interpreter, each IR pass, x86 without and with the
    /// passes). Each failing case is written to the output folder as a case file that
    /// `tandem run` replays. Exit status 1 when there was a finding.
    Fuzz {
        /// The first seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// How many consecutive seeds.
        #[arg(long, default_value_t = 1000)]
        count: u64,
        /// The generator profile: small, default, loops or memory.
        #[arg(long, default_value = "default", value_parser = parse_profile)]
        profile: gen::Profile,
        /// Where finding files are written.
        #[arg(long, default_value = "findings")]
        out: PathBuf,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
        /// Worker threads, each with its own emulator (default: one per core).
        #[arg(long, short)]
        jobs: Option<usize>,
    },
    /// Measures throughput: bare Unicorn runs, the runner with a reused and a fresh
    /// instance on a fixed program, and the pipeline on a fixed range of generated seeds
    /// (compile only, emulate only, end to end, full check). Build with `--release`.
    Bench {
        /// Runs per fixed-program measurement.
        #[arg(long, default_value_t = 20_000)]
        runs: u64,
        /// The first generated seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// How many generated seeds.
        #[arg(long, default_value_t = 500)]
        seeds: u64,
    },
    /// Translation validation with Z3: for every function of the given files (or of
    /// generated cases with --generated) and every pass of the pipeline, asks Z3 for an
    /// input on which the function before and after the pass differ, and replays every
    /// answer in the interpreter. Prints each answer and its time, then counts and the
    /// latency histogram per pass. Exit status: 0 when everything is proved (bounded or
    /// not), 1 on a counterexample or encoder disagreement (each written as a case file to
    /// --out), 2 on bad input, 3 when some answer is unknown and none is a
    /// counterexample. With --self-check, checks the encoder against the interpreter on
    /// generated cases instead (exit 1 on any difference).
    Verify {
        /// Case files or folders.
        paths: Vec<PathBuf>,
        /// Validate only this pass (the pipeline still runs up to it).
        #[arg(long)]
        pass: Option<String>,
        /// The IR passes, comma-separated (default: the check pipeline).
        #[arg(long)]
        pipeline: Option<String>,
        /// Back-edge traversals the bounded check unrolls.
        #[arg(long, default_value_t = 4)]
        bound: u32,
        /// Solver time limit per query, in milliseconds.
        #[arg(long, default_value_t = 10_000)]
        timeout_ms: u32,
        /// Validate generated cases instead of files.
        #[arg(long)]
        generated: bool,
        /// Check the encoder against the interpreter on generated cases.
        #[arg(long)]
        self_check: bool,
        /// The first generated seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// How many generated seeds.
        #[arg(long, default_value_t = 100)]
        count: u64,
        /// The generator profile: small, default, loops or memory.
        #[arg(long, default_value = "default", value_parser = parse_profile)]
        profile: gen::Profile,
        /// Where finding files are written.
        #[arg(long, default_value = "findings")]
        out: PathBuf,
        /// Print every answer, not only those that are not proofs.
        #[arg(long, short)]
        verbose: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run { paths, bless, verbose } => run(&paths, bless, verbose),
        Command::Compile { file, emit, after, pipeline, stats } => {
            compile(&file, &emit, after.as_deref(), pipeline.as_deref(), stats)
        }
        Command::Gen { seed, profile, count, stats } => generate(seed, profile, count, stats),
        Command::Bench { runs, seed, seeds } => bench(runs, seed, seeds),
        Command::Fuzz { seed, count, profile, out, quiet, jobs } => fuzz(seed, count, profile, out, quiet, jobs),
        Command::Verify { paths, pass, pipeline, bound, timeout_ms, generated, self_check, seed, count, profile, out, verbose } => {
            let opts = tandem_oracle::smt::Options { bound, timeout_ms, ..Default::default() };
            if self_check {
                verify_self_check(seed, count, profile, bound)
            } else {
                let w = VerifyWhat { paths: &paths, generated, seed, count, profile };
                verify(&w, pass.as_deref(), pipeline.as_deref(), &opts, &out, verbose)
            }
        }
    }
}

fn compile(file: &std::path::Path, emit: &str, after: Option<&str>, pipeline: Option<&str>, stats: bool) -> ExitCode {
    use tandem_core::passes::{default_pipeline, Form, PassManager, Pipeline};
    let fail = |msg: String| {
        eprintln!("error: {msg}");
        ExitCode::from(2)
    };
    let (want, backend) = match emit {
        "hir" => (Form::Hir, None),
        "ssa" => (Form::Ssa, None),
        "lir" => (Form::Hir, Some(false)),
        "asm" => (Form::Hir, Some(true)),
        other => return fail(format!("--emit {other}: expected `hir`, `ssa`, `lir` or `asm`")),
    };
    let pipeline = match pipeline {
        Some("none") => Pipeline { passes: vec![], start: Form::Hir },
        Some(p) => match Pipeline::parse(p) {
            Ok(p) => p,
            Err(e) => return fail(format!("--pipeline: {e}")),
        },
        None => default_pipeline(),
    };
    if backend.is_some() && after.is_some() {
        return fail("--after applies to --emit hir|ssa; the backend always starts after the whole pipeline".into());
    }
    let after = after.or(if want == Form::Ssa { Some("ssa") } else { None });
    let n = match after {
        None => pipeline.passes.len(),
        Some(a) => match pipeline.passes.iter().position(|p| p.name == a) {
            Some(i) => i + 1,
            None => return fail(format!("--after {a}: pass `{a}` is not in the pipeline `{pipeline}`")),
        },
    };
    let form = pipeline.form_after(n);
    if form != want {
        let at = if n == 0 { "the input".to_string() } else { format!("after `{}`", pipeline.passes[n - 1].name) };
        let hint = if backend.is_some() { "the backend needs IR without phis".to_string() } else { format!("use --emit {}", emit_name(form)) };
        return fail(format!("the IR {at} is in {form} form, not {want}; {hint}"));
    }
    let prefix = Pipeline { passes: pipeline.passes[..n].to_vec(), start: pipeline.start };
    let case = match replay::load(file) {
        Ok(c) => c,
        Err(e) => return fail(e.to_string()),
    };
    let mut module = case.module;
    // Output goes through a locked handle so that a closed pipe (`| head`) ends quietly.
    let mut out = std::io::stdout().lock();
    let pm = PassManager { verify: true };
    for f in &mut module.functions {
        match pm.run(&prefix, f, &mut |_, _, _| {}) {
            Ok(s) => {
                if stats {
                    for (pass, st) in s {
                        eprintln!("%{} {pass}: {st}", f.name);
                    }
                }
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(1);
            }
        }
    }
    let Some(asm) = backend else {
        let _ = write!(out, "{module}");
        return ExitCode::SUCCESS;
    };
    for f in &module.functions {
        let staged = match tandem_core::backend::compile_staged(f) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: %{}: {e}", f.name);
                return ExitCode::from(1);
            }
        };
        if !asm {
            for (pass, text) in &staged.lir {
                let _ = writeln!(out, "; %{} after {pass}", f.name);
                let _ = writeln!(out, "{text}");
            }
        } else {
            let _ = writeln!(out, "; %{}: {} bytes", f.name, staged.code.bytes.len());
            let _ = write!(out, "{}", tandem_core::backend::disassemble(&staged.code));
        }
        if stats {
            eprintln!("%{} backend: {:?}", f.name, staged.stats);
        }
    }
    ExitCode::SUCCESS
}

fn emit_name(f: tandem_core::passes::Form) -> &'static str {
    match f {
        tandem_core::passes::Form::Hir => "hir",
        tandem_core::passes::Form::Ssa => "ssa",
    }
}

fn generate(seed: u64, p: gen::Profile, count: u64, stats: bool) -> ExitCode {
    // Output goes through a locked handle and a closed pipe (`| head`) ends quietly.
    let mut out = std::io::stdout().lock();
    if stats {
        let s = gen::stats(seed, count, &p.config());
        let _ = write!(out, "{s}");
        return if s.broken.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) };
    }
    for (i, s) in (seed..seed.saturating_add(count)).enumerate() {
        let sep = if i > 0 { "\n" } else { "" };
        if write!(out, "{sep}{}", gen::render(s, p)).is_err() {
            break;
        }
    }
    ExitCode::SUCCESS
}

/// Reads a generator profile name for clap, which reports a bad one with exit status 2.
fn parse_profile(name: &str) -> Result<gen::Profile, String> {
    gen::Profile::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = gen::Profile::ALL.iter().map(|p| p.name()).collect();
        format!("unknown profile `{name}` (expected one of: {})", names.join(", "))
    })
}

/// The emulator every x86 stage runs in, or the exit status when it cannot start.
fn emulator() -> Result<tandem_oracle::emu::Emulator, ExitCode> {
    tandem_oracle::emu::Emulator::new().map_err(|e| {
        eprintln!("error: cannot start the emulator: {e}");
        ExitCode::from(2)
    })
}

fn fuzz(seed: u64, count: u64, profile: gen::Profile, out: PathBuf, quiet: bool, jobs: Option<usize>) -> ExitCode {
    use tandem_oracle::campaign::{self, Campaign};
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    let bar = if quiet { indicatif::ProgressBar::hidden() } else { indicatif::ProgressBar::new(count) };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} seeds, {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let c = Campaign { start: seed, count, profile, out_dir: out };
    let mut reported = 0;
    let result = campaign::run(&c, jobs, |_, s| {
        bar.inc(1);
        bar.set_message(format!("{} runs, {} findings", s.runs, s.findings.len()));
        // Each finding is announced as soon as its file exists.
        for f in &s.findings[reported..] {
            bar.println(format!("finding: seed {} ({}): stage `{}` -> {}", f.seed, f.problem.lines.first().map_or("", |l| l.as_str()), f.problem.stage, f.path.display()));
        }
        reported = s.findings.len();
    });
    bar.finish_and_clear();
    match result {
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
        Ok(s) => {
            let secs = s.elapsed.as_secs_f64().max(1e-9);
            let mut out = std::io::stdout().lock();
            let _ = writeln!(
                out,
                "{} seeds ({}, {jobs} jobs), {} runs: {} agreed at every stage, {} invalid (not compared), {} findings; {:.0} cases/s",
                s.cases,
                c.profile.name(),
                s.runs,
                s.agreed,
                s.invalid,
                s.findings.len(),
                s.cases as f64 / secs
            );
            // Each counter's total, and the share of programs in which it fired.
            for (pass, st) in &s.pass_stats {
                let counters: Vec<String> =
                    st.counters.iter().map(|(k, v)| format!("{k}={v} ({:.1}%)", s.fired_percent(pass, k))).collect();
                let _ = writeln!(out, "  {pass}: {}", counters.join(" "));
            }
            for f in &s.findings {
                let _ = writeln!(out, "  seed {}: stage `{}`: {}", f.seed, f.problem.stage, f.path.display());
            }
            if s.findings.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
    }
}

fn bench(runs: u64, seed: u64, seeds: u64) -> ExitCode {
    let mut emu = match emulator() {
        Ok(e) => e,
        Err(code) => return code,
    };
    let fixed = tandem_oracle::bench::emulator_bench(runs);
    let generated = fixed.and_then(|mut m| {
        m.extend(tandem_oracle::bench::generated_bench(seed, seeds, &mut emu)?);
        Ok(m)
    });
    match generated {
        Ok(measurements) => {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "fixed program: {runs} runs; generated programs: seeds {seed}..{} (default profile)", seed + seeds);
            for m in measurements {
                let _ = writeln!(out, "{m}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(paths: &[PathBuf], bless: bool, verbose: bool) -> ExitCode {
    let files = match replay::collect_files(paths) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut emu = match emulator() {
        Ok(e) => e,
        Err(code) => return code,
    };
    // Output goes through a locked handle so that a closed pipe (`| head`) ends quietly.
    let mut out = std::io::stdout().lock();
    let (mut passed, mut failed, mut bad) = (0, 0, 0);
    let mut z3 = tandem_oracle::smt::run::Tally::default();
    for path in &files {
        match replay::replay_file(path, bless, &mut emu) {
            Err(e) => {
                eprintln!("error: {e}");
                bad += 1;
            }
            Ok(report) => {
                let mut text = String::new();
                for r in &report.runs {
                    // With --bless, an expectation mismatch has been rewritten; a stage
                    // disagreement never is.
                    let expectation_ok = r.mismatches.is_empty() || bless;
                    if expectation_ok && r.problems.is_empty() {
                        passed += 1;
                        if verbose {
                            text += &format!("ok   {}:{}: {}\n", path.display(), r.line, r.title);
                        }
                        continue;
                    }
                    failed += 1;
                    text += &format!("FAIL {}:{}: {}\n", path.display(), r.line, r.title);
                    if !expectation_ok {
                        text += "       the reference interpreter does not match the expectation:\n";
                        for m in &r.mismatches {
                            text += &format!("         {m}\n");
                        }
                    }
                    for p in &r.problems {
                        text += &format!("       stage `{}` disagrees with the reference interpreter:\n", p.stage);
                        for l in &p.lines {
                            text += &format!("         {l}\n");
                        }
                        if let Some(sbs) = &p.side_by_side {
                            for l in sbs.lines() {
                                text += &format!("         {l}\n");
                            }
                        }
                    }
                }
                for r in &report.smt {
                    if r.failed() {
                        failed += 1;
                        text += &format!("FAIL {}: %{} pass `{}`: z3 {}\n", path.display(), r.function, r.pass, r.answer);
                    }
                    z3.entries.push(tandem_oracle::smt::run::Entry {
                        origin: String::new(),
                        pass: r.pass.clone(),
                        answer: r.answer.clone(),
                        time: std::time::Duration::ZERO,
                        finding: None,
                    });
                }
                if report.blessed {
                    text += &format!("blessed {}\n", path.display());
                }
                if write!(out, "{text}").is_err() {
                    return ExitCode::from(1);
                }
            }
        }
    }
    let _ = writeln!(out, "{} file(s): {passed} run(s) passed, {failed} failed, {bad} file(s) with bad input", files.len());
    let b = tandem_oracle::replay::replay_smt_options().bound;
    let _ = writeln!(
        out,
        "z3: {} (function, pass) pair(s): {} proved, {} proved to bound {b}, {} unknown, {} counterexample(s), {} encoder disagreement(s)",
        z3.entries.len(),
        z3.count("proved"),
        z3.count("bounded"),
        z3.count("unknown"),
        z3.count("counterexample"),
        z3.count("disagreement")
    );
    if bad > 0 {
        ExitCode::from(2)
    } else if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// What `tandem verify` validates.
struct VerifyWhat<'a> {
    paths: &'a [PathBuf],
    generated: bool,
    seed: u64,
    count: u64,
    profile: gen::Profile,
}

fn verify(
    what: &VerifyWhat,
    pass: Option<&str>,
    pipeline: Option<&str>,
    opts: &tandem_oracle::smt::Options,
    out_dir: &std::path::Path,
    verbose: bool,
) -> ExitCode {
    use tandem_core::passes::{check_pipeline, Form, Pipeline};
    use tandem_oracle::smt::run::Tally;
    let fail = |msg: String| {
        eprintln!("error: {msg}");
        ExitCode::from(2)
    };
    let pipeline = match pipeline {
        Some(p) => match Pipeline::parse(p) {
            Ok(p) => p,
            Err(e) => return fail(format!("--pipeline: {e}")),
        },
        None => check_pipeline(),
    };
    if let Some(p) = pass {
        if !pipeline.passes.iter().any(|q| q.name == p) {
            return fail(format!("--pass {p}: pass `{p}` is not in the pipeline `{pipeline}`"));
        }
    }
    if !what.generated && what.paths.is_empty() {
        return fail("give case files or folders, or --generated".into());
    }
    let plan = tandem_oracle::smt::run::Plan { pipeline: &pipeline, only: pass, opts, out: out_dir };
    let mut tally = Tally::default();
    let mut out = std::io::stdout().lock();
    let mut shown = 0;
    let mut show = |tally: &Tally, out: &mut std::io::StdoutLock| {
        for e in &tally.entries[shown..] {
            if verbose || !e.answer.is_proof() {
                let _ = writeln!(out, "{} {}: {} ({:.1} ms)", e.origin, e.pass, e.answer, e.time.as_secs_f64() * 1e3);
                if let Some(p) = &e.finding {
                    let _ = writeln!(out, "  finding: {}", p.display());
                }
            }
        }
        shown = tally.entries.len();
    };
    if what.generated {
        // Seed by seed, so that answers appear as they come.
        for s in what.seed..what.seed.saturating_add(what.count) {
            if let Err(e) = tally.add_generated(s, 1, what.profile, &plan) {
                return fail(e.to_string());
            }
            show(&tally, &mut out);
        }
    } else {
        let files = match replay::collect_files(what.paths) {
            Ok(f) => f,
            Err(e) => return fail(e.to_string()),
        };
        for path in &files {
            let case = match replay::load(path) {
                Ok(c) => c,
                Err(e) => return fail(e.to_string()),
            };
            let stem = path.file_stem().map_or("case".to_string(), |s| s.to_string_lossy().into_owned());
            for f in &case.module.functions {
                // A function already in SSA form skips the passes up to `ssa`.
                let has_phis = f.layout.iter().any(|&b| !f.blocks[b].phis.is_empty());
                let p = if has_phis && pipeline.start == Form::Hir {
                    let rest: Vec<&str> =
                        pipeline.passes.iter().skip_while(|q| q.name != "ssa").skip(1).map(|q| q.name).collect();
                    match Pipeline::new_from(Form::Ssa, &rest) {
                        Ok(p) => p,
                        Err(e) => return fail(format!("{}: %{}: {e}", path.display(), f.name)),
                    }
                } else {
                    pipeline.clone()
                };
                let origin = format!("{} %{}", path.display(), f.name);
                let plan = tandem_oracle::smt::run::Plan { pipeline: &p, ..plan };
                if let Err(e) = tally.add_function(f, &origin, &format!("{stem}-{}", f.name), &plan) {
                    return fail(format!("{origin}: {e}"));
                }
                show(&tally, &mut out);
            }
        }
    }
    let _ = write!(out, "{tally}");
    ExitCode::from(tally.status())
}

fn verify_self_check(seed: u64, count: u64, profile: gen::Profile, bound: u32) -> ExitCode {
    let s = tandem_oracle::smt::selfcheck::self_check(seed, count, profile, bound);
    let mut out = std::io::stdout().lock();
    for (sd, form, run, why) in &s.differences {
        let _ = writeln!(out, "seed {sd} ({form}), run {run}: {why}");
    }
    let _ = writeln!(
        out,
        "self-check, seeds {seed}..{} ({}), bound {bound}: {} runs agreed with the interpreter, {} differed, {} beyond the bound, {} out of fuel (not compared)",
        seed + count,
        profile.name(),
        s.compared,
        s.differences.len(),
        s.beyond_bound,
        s.fuel_exhausted
    );
    if s.differences.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
