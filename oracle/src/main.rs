//! The `tandem` command: the command-line layer over `tandem-oracle`. It turns reports
//! into text and exit codes: 0 when everything passed, 1 on a mismatch, 2 on bad input.

use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tandem_oracle::{gen, replay};

#[derive(Parser)]
#[command(name = "tandem", version, about = "Differential testing harness for the Tandem x86-32 compiler")]
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
        /// Write a JUnit XML report here (one test case per run).
        #[arg(long)]
        junit: Option<PathBuf>,
        /// Write a JSON report here (format `tandem-run-report/1`, see the README).
        #[arg(long)]
        json: Option<PathBuf>,
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
        /// The profile: small, default, loops, memory or ssa.
        #[arg(long, default_value = "default", value_parser = parse_profile)]
        profile: gen::Profile,
        /// How many consecutive seeds.
        #[arg(long, default_value_t = 1)]
        count: u64,
        /// Print statistics over the seeds instead of the cases.
        #[arg(long)]
        stats: bool,
        /// Write each case to its own file in this folder (`PROFILE-seed-N.tir`, each
        /// replayable with `tandem run`) instead of printing them.
        #[arg(long, conflicts_with = "stats")]
        out: Option<PathBuf>,
    },
    /// A fuzzing campaign: generates the cases of consecutive seeds and checks every run
    /// through every stage (reference interpreter, each IR pass, x86 without and with the
    /// passes). Each failing case is written to the output folder as a case file that
    /// `tandem run` replays, grouped by signature; the first case of each signature is
    /// reduced beside it. The folder also holds the campaign's state and journal, so that
    /// `--resume DIR` continues a killed campaign. Exit status 1 when there was a finding.
    Fuzz {
        /// The first seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// How many consecutive seeds (of the whole campaign, before sharding). Default:
        /// 1000 when --seconds is not given either; with only --seconds, no end.
        #[arg(long)]
        count: Option<u64>,
        /// Stop taking new seeds after this many seconds.
        #[arg(long)]
        seconds: Option<u64>,
        /// The generator profile: small, default, loops, memory, ssa, or mix (a profile chosen
        /// from each seed).
        #[arg(long, default_value = "default", value_parser = parse_profile_choice)]
        profile: tandem_oracle::campaign::ProfileChoice,
        /// Test only shard I of N (the seeds whose offset from --seed is I modulo N).
        #[arg(long, value_parser = tandem_oracle::campaign::Shard::parse)]
        shard: Option<tandem_oracle::campaign::Shard>,
        /// Where finding files, the state file and the journal are written (a folder that
        /// holds no campaign yet; default: a new folder `findings/campaign-SECONDS`, named
        /// after the Unix time).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Continue the campaign in this folder (its configuration is read from its state
        /// file; other options but --jobs, --json and --quiet are ignored).
        #[arg(long)]
        resume: Option<PathBuf>,
        /// Do not reduce the first case of each signature.
        #[arg(long)]
        no_reduce: bool,
        /// The share of seeds, per mille, whose passes the Z3 validator also checks
        /// (bound 2, 300 ms per query); 0 turns it off.
        #[arg(long, default_value_t = tandem_oracle::campaign::VERIFY_PERMILLE, value_parser = clap::value_parser!(u32).range(0..=1000))]
        verify_permille: u32,
        /// Write a JSON summary here (format `tandem-fuzz-summary/1`, see the README).
        #[arg(long)]
        json: Option<PathBuf>,
        /// No progress output.
        #[arg(long, short)]
        quiet: bool,
        /// Worker threads, each with its own emulator (default: one per core).
        #[arg(long, short)]
        jobs: Option<usize>,
    },
    /// Reduces a failing case file: the smallest case the reducer finds that still fails
    /// with the same signature (the guilty stage and the kind of difference).
    Reduce {
        /// The failing case file.
        case: PathBuf,
        /// Where the reduced case goes (default: standard output).
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// Keep this signature instead of the first problem's (e.g. `x86: end`).
        #[arg(long)]
        signature: Option<String>,
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
        /// Instead: the scaling check, the time of every stage on functions of 100,
        /// 1,000 and 10,000 statements, locals and blocks, with each stage's growth.
        #[arg(long)]
        scaling: bool,
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
        Command::Run { paths, bless, verbose, junit, json } => run(&paths, bless, verbose, junit, json),
        Command::Compile { file, emit, after, pipeline, stats } => {
            compile(&file, &emit, after.as_deref(), pipeline.as_deref(), stats)
        }
        Command::Gen { seed, profile, count, stats, out } => generate(seed, profile, count, stats, out),
        Command::Bench { runs, seed, seeds, scaling } => bench(runs, seed, seeds, scaling),
        Command::Fuzz { seed, count, seconds, profile, shard, out, resume, no_reduce, verify_permille, json, quiet, jobs } => {
            let c = tandem_oracle::campaign::Campaign {
                start: seed,
                count: if count.is_none() && seconds.is_none() { Some(1000) } else { count },
                seconds,
                profile,
                shard: shard.unwrap_or(tandem_oracle::campaign::Shard::ALL),
                out_dir: out.unwrap_or_else(|| {
                    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
                    PathBuf::from(format!("findings/campaign-{now}"))
                }),
                reduce: !no_reduce,
                journal_limit: tandem_oracle::campaign::JOURNAL_LIMIT,
                verify_permille,
            };
            fuzz(c, resume, json, quiet, jobs)
        }
        Command::Reduce { case, out, signature } => reduce(&case, out.as_deref(), signature.as_deref()),
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
        // A function written in SSA form (with phis) skips the pipeline up to its `ssa`.
        let mut prefix = prefix.clone();
        if prefix.start == Form::Hir && f.layout.iter().any(|&b| !f.blocks[b].phis.is_empty()) {
            match prefix.passes.iter().position(|p| p.produces == Some(Form::Ssa)) {
                Some(i) => prefix = Pipeline { passes: prefix.passes[i + 1..].to_vec(), start: Form::Ssa },
                None if prefix.passes.is_empty() && backend.is_none() => {}
                None => {
                    return fail(format!(
                        "function %{} is written in SSA form, but the pipeline `{prefix}` does not start with `ssa`",
                        f.name
                    ))
                }
            }
        }
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
            // Every function is loaded at the start of the code region to run.
            let _ = writeln!(out, "%{}:   ; {} bytes at {:#010x}", f.name, staged.code.bytes.len(), tandem_core::abi::CODE_BASE);
            let _ = write!(out, "{}", tandem_core::backend::disassemble(&staged.code));
        }
        if stats {
            for (pass, counters) in staged.stats.by_pass() {
                let counters: Vec<String> = counters.iter().map(|(k, v)| format!("{k}={v}")).collect();
                eprintln!("%{} {pass}: {}", f.name, counters.join(" "));
            }
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

fn generate(seed: u64, p: gen::Profile, count: u64, stats: bool, dir: Option<PathBuf>) -> ExitCode {
    if count == 0 || seed.checked_add(count - 1).is_none() {
        let why = if count == 0 { "is empty" } else { "runs past the largest seed" };
        eprintln!("error: the seed range --seed {seed} --count {count} {why}: there is nothing to generate");
        return ExitCode::from(2);
    }
    if let Some(dir) = dir {
        if let Err(e) = std::fs::create_dir_all(&dir) {
            eprintln!("error: cannot create {}: {e}", dir.display());
            return ExitCode::from(2);
        }
        for s in seed..=seed + (count - 1) {
            let path = dir.join(format!("{}-seed-{s}.tir", p.name()));
            if let Err(e) = std::fs::write(&path, gen::render(s, p)) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
        println!("{count} case file(s) in {}", dir.display());
        return ExitCode::SUCCESS;
    }
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

/// Reads a campaign's profile (a generator profile or `mix`) for clap.
fn parse_profile_choice(name: &str) -> Result<tandem_oracle::campaign::ProfileChoice, String> {
    tandem_oracle::campaign::ProfileChoice::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = gen::Profile::ALL.iter().map(|p| p.name()).collect();
        format!("unknown profile `{name}` (expected one of: {}, mix)", names.join(", "))
    })
}

/// Writes `text` to `path` (atomically); the exit status 2 when it cannot.
fn write_report(path: &std::path::Path, text: &str) -> Result<(), ExitCode> {
    tandem_oracle::campaign::write_atomic(path, text.as_bytes()).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })
}

fn fuzz(
    c: tandem_oracle::campaign::Campaign,
    resume: Option<PathBuf>,
    json: Option<PathBuf>,
    quiet: bool,
    jobs: Option<usize>,
) -> ExitCode {
    use std::io::IsTerminal;
    use tandem_oracle::campaign;
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    if resume.is_none() {
        if let Err(e) = campaign::validate(&c) {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    }
    // A bar on a terminal; otherwise a line every ten seconds (and one per finding).
    let terminal = !quiet && std::io::stderr().is_terminal();
    // With a seed count and no time bound, a bar over the shard's seeds; else a spinner.
    let seeds = match (&resume, c.count, c.seconds) {
        (None, Some(n), None) => Some((n - c.shard.index).div_ceil(c.shard.count)),
        _ => None,
    };
    let (bar, template) = match seeds {
        _ if !terminal => (indicatif::ProgressBar::hidden(), "{msg}"),
        Some(n) => (indicatif::ProgressBar::new(n), "{elapsed_precise} [{bar:30}] {pos}/{len} seeds: {msg}"),
        None => (indicatif::ProgressBar::new_spinner(), "{spinner} {elapsed_precise} {msg}"),
    };
    bar.set_style(indicatif::ProgressStyle::with_template(template).expect("valid template").progress_chars("=> "));
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    let started = std::time::Instant::now();
    let mut last_line = started;
    let mut reported: std::collections::HashSet<(u64, String)> = std::collections::HashSet::new();
    let mut first = true;
    let progress = |s: &campaign::Summary| {
        // On resume, the findings of earlier sessions are not announced again.
        if first {
            first = false;
            if resume.is_some() {
                reported.extend(s.findings.iter().map(|f| (f.seed, f.profile.clone())));
            }
        }
        let secs = s.elapsed.as_secs_f64().max(1e-9);
        let line = format!(
            "{} cases ({:.0}/s), {} runs ({:.0}/s), {} findings, {} signatures",
            s.cases,
            s.cases as f64 / secs,
            s.runs,
            s.runs as f64 / secs,
            s.findings.len(),
            s.signatures().len()
        );
        for f in &s.findings {
            if reported.insert((f.seed, f.profile.clone())) {
                let reduced = f.reduced.as_ref().map_or(String::new(), |r| format!(" (reduced: {})", r.display()));
                let msg = format!("finding: seed {} [{}]: {} -> {}{reduced}", f.seed, f.signature, f.message, f.path.display());
                if terminal {
                    bar.println(msg);
                } else if !quiet {
                    eprintln!("{msg}");
                }
            }
        }
        if terminal {
            bar.set_position(s.cases);
            bar.set_message(line);
        } else if !quiet && last_line.elapsed() >= std::time::Duration::from_secs(10) {
            last_line = std::time::Instant::now();
            eprintln!("{:.0}s: {line}", s.elapsed.as_secs_f64());
        }
    };
    let (result, config) = match &resume {
        Some(dir) => (campaign::resume(dir, jobs, progress), dir.clone()),
        None => (campaign::run(&c, jobs, progress), c.out_dir.clone()),
    };
    bar.finish_and_clear();
    let s = match result {
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
        Ok(s) => s,
    };
    let state = campaign::state_config(&config).unwrap_or_else(|| c.config_record(jobs));
    let secs = s.elapsed.as_secs_f64().max(1e-9);
    let mut out = std::io::stdout().lock();
    let shard = if state.shard == "0/1" { String::new() } else { format!(", shard {}", state.shard) };
    let _ = writeln!(
        out,
        "{} seeds ({}{shard}, {jobs} jobs), {} runs: {} agreed at every stage, {} invalid (not compared), {} beyond a harness limit, {} findings; {:.1}s, {:.0} cases/s, {:.0} runs/s",
        s.cases,
        state.profile,
        s.runs,
        s.agreed,
        s.invalid,
        s.limited,
        s.findings.len(),
        secs,
        s.cases as f64 / secs,
        s.runs as f64 / secs,
    );
    // Each counter's total, and the share of programs in which it fired.
    for (pass, st) in &s.pass_stats {
        let counters: Vec<String> = st.iter().map(|(k, v)| format!("{k}={v} ({:.1}%)", s.fired_percent(pass, k))).collect();
        let _ = writeln!(out, "  {pass}: {}", counters.join(" "));
    }
    if !s.validator.is_empty() {
        let _ = writeln!(out, "Z3 validator ({}‰ of seeds, bound {}):", state.verify_permille, tandem_oracle::campaign::VALIDATOR_OPTIONS.bound);
        for l in s.validator_lines() {
            let _ = writeln!(out, "  {l}");
        }
    }
    let groups = s.signatures();
    if !groups.is_empty() {
        let _ = writeln!(out, "{} signature(s):", groups.len());
    }
    for g in &groups {
        let reduced = g.reduced.as_ref().map_or(String::new(), |r| format!(", reduced: {}", r.display()));
        let _ = writeln!(out, "  [{}] {} finding(s), e.g. seed {}: {}{reduced}", g.signature, g.count, g.representative.seed, g.representative.path.display());
    }
    if let Some(path) = json {
        let report = tandem_oracle::report::FuzzReport::new(state, &s, true);
        let text = serde_json::to_string_pretty(&report).expect("a report serializes") + "\n";
        if let Err(code) = write_report(&path, &text) {
            return code;
        }
    }
    if s.findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn reduce(case: &std::path::Path, out: Option<&std::path::Path>, signature: Option<&str>) -> ExitCode {
    let loaded = match replay::load(case) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut emu = match emulator() {
        Ok(e) => e,
        Err(code) => return code,
    };
    let mut progress = |line: &str| eprintln!("{line}");
    match tandem_oracle::reduce::reduce(&loaded, signature, &mut emu, &mut progress) {
        Err(e) => {
            eprintln!("error: {}: {e}", case.display());
            ExitCode::from(2)
        }
        Ok(r) => {
            eprintln!(
                "reduced [{}] from {} to {} statement(s) in {:.1}s ({} candidates, {} kept)",
                r.signature,
                r.statements_before,
                r.statements,
                r.elapsed.as_secs_f64(),
                r.candidates,
                r.accepted
            );
            match out {
                Some(path) => {
                    if let Err(code) = write_report(path, &r.text) {
                        return code;
                    }
                }
                None => {
                    let _ = write!(std::io::stdout().lock(), "{}", r.text);
                }
            }
            ExitCode::SUCCESS
        }
    }
}

fn bench(runs: u64, seed: u64, seeds: u64, scaling: bool) -> ExitCode {
    let mut emu = match emulator() {
        Ok(e) => e,
        Err(code) => return code,
    };
    if scaling {
        return match tandem_oracle::scaling::report(&mut emu, &mut std::io::stdout()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(1)
            }
        };
    }
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

fn run(paths: &[PathBuf], bless: bool, verbose: bool, junit: Option<PathBuf>, json: Option<PathBuf>) -> ExitCode {
    use tandem_oracle::report::{self, Replayed};
    let mut replayed: Vec<Replayed> = vec![];
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
    let (mut passed, mut failed, mut bad, mut limited) = (0, 0, 0, 0);
    let mut z3 = tandem_oracle::smt::run::Tally::default();
    for path in &files {
        let file_started = std::time::Instant::now();
        match replay::replay_file(path, bless, &mut emu) {
            Err(e) => {
                eprintln!("error: {e}");
                bad += 1;
                replayed.push(Replayed::Bad(e));
            }
            Ok(report) => {
                let mut text = String::new();
                for r in &report.runs {
                    // With --bless, an expectation mismatch has been rewritten; a stage
                    // disagreement never is.
                    let expectation_ok = r.mismatches.is_empty() || bless;
                    if expectation_ok && r.problems.is_empty() && !r.limits.is_empty() {
                        // Not a pass and not a failure: some stage could not run here.
                        limited += 1;
                        text += &format!("LIMIT {}:{}: {}\n", path.display(), r.line, r.title);
                        for (stage, l) in &r.limits {
                            text += &format!("       stage `{stage}` not run: {l}\n");
                        }
                        continue;
                    }
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
                replayed.push(Replayed::File { report, elapsed: file_started.elapsed() });
                if write!(out, "{text}").is_err() {
                    return ExitCode::from(1);
                }
            }
        }
    }
    if let Some(path) = junit {
        if let Err(code) = write_report(&path, &report::run_junit(&replayed, bless)) {
            return code;
        }
    }
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&report::run_json(&replayed, bless)).expect("a report serializes") + "\n";
        if let Err(code) = write_report(&path, &text) {
            return code;
        }
    }
    let limits = if limited > 0 { format!(", {limited} beyond a harness limit") } else { String::new() };
    let _ = writeln!(
        out,
        "{} file(s): {passed} run(s) passed, {failed} failed{limits}, {bad} file(s) with bad input",
        files.len()
    );
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
    } else if limited > 0 {
        ExitCode::from(3)
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
