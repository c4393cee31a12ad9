//! `tandem run`: replays case files and folders through every stage; console, JSON and
//! JUnit reports (all three from [`tandem_oracle::campaign::report`], so they agree).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tandem_oracle::campaign::replay::{self, ReplayOptions};
use tandem_oracle::campaign::report::{self, Replayed, RunCounts};
use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// Case files or folders.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Rewrite the expectations of failing runs to what they did.
    #[arg(long)]
    pub bless: bool,
    /// Print passing runs (and proved passes) too.
    #[arg(long, short)]
    pub verbose: bool,
    /// Write a JUnit XML report here (one test case per run and per validated pass).
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Write a JSON report here (format `tandem-run-report/3`, see the README).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Do not validate the passes with Z3 (only the differential check runs).
    #[arg(long, conflicts_with = "verify_bound")]
    pub no_verify: bool,
    /// Validate cases written by the generator too (`tandem gen --out`, campaign finding
    /// files: a `; tandem gen --seed` comment line at the top). By default they get the
    /// differential check only: the validator costs up to seconds per generated case.
    #[arg(long, conflicts_with = "no_verify")]
    pub verify_generated: bool,
    /// Iterations per loop (per entry into the loop) the validator's bounded check unrolls
    /// (default 1).
    #[arg(long)]
    pub verify_bound: Option<u32>,
    /// The validator's deterministic budget per (function, pass), in Z3 resource units
    /// (default 4,000,000; an answer that runs out of it is `unknown`, listed as
    /// UNDECIDED and counted, never a pass).
    #[arg(long, conflicts_with = "no_verify")]
    pub verify_rlimit: Option<u32>,
    /// The most memory one validator child may hold, in MB (10^6 bytes): past it the
    /// child is killed and that pass's answer is `unknown (memory limit)`, never a pass.
    /// Default 250, which keeps the largest process of the tree under 300 MB.
    #[arg(long, conflicts_with = "no_verify", value_name = "MB", default_value_t = tandem_oracle::smt::isolate::LIMITS.memory / 1_000_000, value_parser = clap::value_parser!(u64).range(50..))]
    pub validator_memory: u64,
    /// The x86 machines: unicorn, native (this CPU in 32-bit mode) or both (default
    /// where the CPU runs 32-bit code; Unicorn and the CPU disagreeing is an emulator
    /// infidelity, never a compiler finding).
    #[arg(long, value_parser = parse_x86)]
    pub x86: Option<tandem_oracle::exec::x86::X86Mode>,
}

pub fn main(a: Args) -> ExitCode {
    let mut smt = replay::replay_smt_options();
    if let Some(k) = a.verify_bound {
        smt.bound = k;
    }
    if let Some(r) = a.verify_rlimit {
        smt.rlimit = r;
    }
    let options = ReplayOptions { bless: a.bless, verify: (!a.no_verify).then_some(smt), verify_generated: a.verify_generated };
    run(&a.paths, &options, a.verbose, a.junit, a.json, a.x86)
}

fn run(
    paths: &[PathBuf],
    options: &ReplayOptions,
    verbose: bool,
    junit: Option<PathBuf>,
    json: Option<PathBuf>,
    x86: Option<tandem_oracle::exec::x86::X86Mode>,
) -> ExitCode {
    let files = match replay::collect_files(paths) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    // The JSON and JUnit reports list every run, so only they need every file's report;
    // otherwise each file is counted and dropped (a run over thousands of files stays flat).
    let keep = junit.is_some() || json.is_some();
    let (counts, replayed) = match replay_all(&files, options, verbose, x86, keep) {
        Ok(r) => r,
        Err(code) => return code,
    };
    if let Err(code) = write_reports(&replayed, options.bless, junit, json) {
        return code;
    }
    let _ = write!(std::io::stdout().lock(), "{}", counts.console(options.verify.as_ref().map(|o| o.bound)));
    ExitCode::from(counts.exit_status())
}

/// Replays every file, printing each file's console lines as it is done (bad input on
/// standard error), and counts them; the files' reports are kept only with `keep`.
/// `Err` when standard output is closed (`| head`): the run ends quietly.
fn replay_all(
    files: &[PathBuf],
    options: &ReplayOptions,
    verbose: bool,
    x86: Option<tandem_oracle::exec::x86::X86Mode>,
    keep: bool,
) -> Result<(RunCounts, Vec<Replayed>), ExitCode> {
    let mut emu = x86_machines(x86)?;
    let mut out = std::io::stdout().lock();
    let mut counts = RunCounts::default();
    let mut replayed = vec![];
    for path in files {
        let file_started = std::time::Instant::now();
        let r = match replay::replay_file_with(path, options, &mut emu) {
            Err(e) => Replayed::Bad(e),
            Ok(report) => Replayed::File { report, elapsed: file_started.elapsed() },
        };
        let text = report::console_file(&r, options.bless, verbose);
        if matches!(r, Replayed::Bad(_)) {
            eprint!("{text}");
        } else if write!(out, "{text}").is_err() {
            return Err(ExitCode::from(1));
        }
        counts.add(&r, options.bless);
        tandem_oracle::measure::memory::release_free();
        if keep {
            replayed.push(r);
        }
    }
    Ok((counts, replayed))
}

/// Writes the JUnit and JSON reports that were asked for.
fn write_reports(replayed: &[Replayed], bless: bool, junit: Option<PathBuf>, json: Option<PathBuf>) -> Result<(), ExitCode> {
    if let Some(path) = junit {
        write_report(&path, &report::run_junit(replayed, bless))?;
    }
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&report::run_json(replayed, bless)).expect("a report serializes") + "\n";
        write_report(&path, &text)?;
    }
    Ok(())
}
