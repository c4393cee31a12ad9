//! `tandem run`: replays case files and folders through every stage; console, JSON and JUnit reports.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tandem_oracle::campaign::replay;
use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// Case files or folders.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Rewrite the expectations of failing runs to what they did.
    #[arg(long)]
    pub bless: bool,
    /// Print passing runs too.
    #[arg(long, short)]
    pub verbose: bool,
    /// Write a JUnit XML report here (one test case per run).
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Write a JSON report here (format `tandem-run-report/1`, see the README).
    #[arg(long)]
    pub json: Option<PathBuf>,
}

pub fn main(a: Args) -> ExitCode {
    let Args { paths, bless, verbose, junit, json } = a;
    run(&paths, bless, verbose, junit, json)
}

fn run(paths: &[PathBuf], bless: bool, verbose: bool, junit: Option<PathBuf>, json: Option<PathBuf>) -> ExitCode {
    use tandem_oracle::campaign::report::{self, Replayed};
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
    let (mut passed, mut failed, mut bad, mut limited, mut undecided) = (0, 0, 0, 0, 0);
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
                    } else if r.undecided() {
                        undecided += 1;
                        text += &format!("UNDECIDED {}: %{} pass `{}`: z3 {}\n", path.display(), r.function, r.pass, r.answer);
                    }
                    z3.entries.push(tandem_oracle::smt::run::Entry {
                        origin: String::new(),
                        pass: r.pass.clone(),
                        answer: r.answer.clone(),
                        time: std::time::Duration::ZERO,
                        finding: None,
                        changed: true,
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
    let b = tandem_oracle::campaign::replay::replay_smt_options().bound;
    let _ = writeln!(
        out,
        "z3: {} (function, pass) pair(s): {} proved, {} proved to bound {b}, {} vacuous, {} unknown, {} counterexample(s), {} encoder disagreement(s)",
        z3.entries.len(),
        z3.count("proved"),
        z3.count("bounded"),
        z3.count("vacuous"),
        z3.count("unknown"),
        z3.count("counterexample"),
        z3.count("disagreement")
    );
    if bad > 0 {
        ExitCode::from(2)
    } else if failed > 0 {
        ExitCode::from(1)
    } else if limited > 0 || undecided > 0 {
        // Not a pass: a stage could not run, or the validator could not decide.
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

