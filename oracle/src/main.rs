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
    /// Generates random case files (with expectations from the reference interpreter),
    /// or with --stats measures what the generator makes.
    Gen {
        /// The first seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// The profile: small, default, loops or memory.
        #[arg(long, default_value = "default")]
        profile: String,
        /// How many consecutive seeds.
        #[arg(long, default_value_t = 1)]
        count: u64,
        /// Print statistics over the seeds instead of the cases.
        #[arg(long)]
        stats: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run { paths, bless, verbose } => run(&paths, bless, verbose),
        Command::Gen { seed, profile, count, stats } => generate(seed, &profile, count, stats),
    }
}

fn generate(seed: u64, profile: &str, count: u64, stats: bool) -> ExitCode {
    let Some(p) = gen::Profile::from_name(profile) else {
        let names: Vec<&str> = gen::Profile::ALL.iter().map(|p| p.name()).collect();
        eprintln!("error: unknown profile `{profile}` (expected one of: {})", names.join(", "));
        return ExitCode::from(2);
    };
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

fn run(paths: &[PathBuf], bless: bool, verbose: bool) -> ExitCode {
    let files = match replay::collect_files(paths) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let (mut passed, mut failed, mut bad) = (0, 0, 0);
    for path in &files {
        match replay::replay_file(path, bless) {
            Err(e) => {
                eprintln!("error: {e}");
                bad += 1;
            }
            Ok(report) => {
                for r in &report.runs {
                    if r.mismatches.is_empty() {
                        passed += 1;
                        if verbose {
                            println!("ok   {}:{}: {}", path.display(), r.line, r.title);
                        }
                    } else {
                        failed += 1;
                        println!("FAIL {}:{}: {}", path.display(), r.line, r.title);
                        for m in &r.mismatches {
                            println!("       {m}");
                        }
                    }
                }
                if report.blessed {
                    println!("blessed {}", path.display());
                }
            }
        }
    }
    println!("{} file(s): {passed} run(s) passed, {failed} failed, {bad} file(s) with bad input", files.len());
    if bad > 0 {
        ExitCode::from(2)
    } else if failed > 0 && !bless {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
