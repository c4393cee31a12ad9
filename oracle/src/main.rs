//! The `tandem` command: the command-line layer over `tandem-oracle`. It turns reports
//! into text and exit codes: 0 when everything passed, 1 on a mismatch, 2 on bad input.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use tandem_oracle::replay;

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
    /// Compiles every function of a case file with the x86 backend and prints the LIR
    /// after each backend pass (`--emit lir`) or the disassembly (`--emit asm`).
    Compile {
        file: PathBuf,
        /// What to print: `lir` (after every backend pass) or `asm`; both when omitted.
        #[arg(long)]
        emit: Option<EmitKind>,
    },
    /// Measures throughput: bare Unicorn runs, the runner with a reused and a fresh
    /// instance, and the differential check on a fixed program. Build with `--release`.
    Bench {
        /// Runs per measurement.
        #[arg(long, default_value_t = 20_000)]
        runs: u64,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum EmitKind {
    Lir,
    Asm,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run { paths, bless, verbose } => run(&paths, bless, verbose),
        Command::Compile { file, emit } => compile(&file, emit),
        Command::Bench { runs } => bench(runs),
    }
}

fn bench(runs: u64) -> ExitCode {
    match tandem_oracle::bench::emulator_bench(runs) {
        Ok(measurements) => {
            for m in measurements {
                println!("{m}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn compile(path: &std::path::Path, emit: Option<EmitKind>) -> ExitCode {
    let case = match replay::load(path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    for f in &case.module.functions {
        let staged = match tandem_core::backend::compile_staged(f) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: %{}: {e}", f.name);
                return ExitCode::from(2);
            }
        };
        if emit != Some(EmitKind::Asm) {
            for (pass, text) in &staged.lir {
                println!("; after {pass}");
                println!("{text}");
            }
        }
        if emit != Some(EmitKind::Lir) {
            println!("; %{}: {} bytes", f.name, staged.code.bytes.len());
            print!("{}", tandem_core::backend::disassemble(&staged.code));
        }
        println!("; stats {:?}", staged.stats);
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
