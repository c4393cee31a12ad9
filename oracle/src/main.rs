//! The `tandem` command: the command-line layer over `tandem-oracle`. It turns reports
//! into text and exit codes: 0 when everything passed, 1 on a mismatch, 2 on bad input.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cli;

/// Every `mmap64` call of the code linked into the command (Unicorn's, the standard
/// library's), sent here by the linker (`--wrap=mmap64`, `oracle/build.rs`), so that
/// Unicorn's translation buffer lies within reach of direct calls to its helpers
/// (`tandem_oracle::exec::emu::mmap_for_unicorn`).
///
/// # Safety
/// As `mmap64`.
#[no_mangle]
pub unsafe extern "C" fn __wrap_mmap64(
    addr: *mut libc::c_void,
    len: usize,
    prot: libc::c_int,
    flags: libc::c_int,
    fd: libc::c_int,
    offset: libc::off_t,
) -> *mut libc::c_void {
    // SAFETY: the caller's own request, passed on.
    unsafe { tandem_oracle::exec::emu::mmap_for_unicorn(addr, len, prot, flags, fd, offset) }
}

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
    Run(cli::run::Args),
    /// Compiles every function of a file (a module or a case file) and prints it at a
    /// chosen point: the IR after an IR pass (`--emit hir|ssa`), the LIR after each
    /// backend pass (`--emit lir`), the machine code with addresses (`--emit asm`) or the CFG after an IR
    /// pass as Graphviz dot (`--emit dot`).
    Compile(cli::compile::Args),
    /// Generates random case files (with expectations from the reference interpreter),
    /// or with --stats measures what the generator makes.
    Gen(cli::generate::Args),
    /// A fuzzing campaign: generates the cases of consecutive seeds and checks every run
    /// through every stage (reference interpreter, each IR pass, x86 without and with the
    /// passes). Each failing case is written to the output folder as a case file that
    /// `tandem run` replays, grouped by signature; the first case of each signature is
    /// reduced beside it. The folder also holds the campaign's state and journal, so that
    /// `--resume DIR` continues a killed campaign. Exit status 1 when there was a finding.
    Fuzz(cli::fuzz::Args),
    /// Reduces a failing case file: the smallest case the reducer finds that still fails
    /// with the same signature (the guilty stage and the kind of difference).
    Reduce(cli::reduce::Args),
    /// Measures throughput: bare Unicorn runs, the runner with a reused and a fresh
    /// instance on a fixed program, and the pipeline on a fixed range of generated seeds
    /// (compile only, emulate only, emulate both x86 stages, end to end, full check). Build with `--release`.
    Bench(cli::bench::Args),
    /// Translation validation with Z3: for every function of the given files (or of
    /// generated cases with --generated) and every pass of the pipeline, asks Z3 for an
    /// input on which the function before and after the pass differ, and replays every
    /// answer in the interpreter. Prints each answer and its time, then counts and the
    /// latency histogram per pass. Exit status: 0 when everything is proved (bounded or
    /// not), 1 on a counterexample or encoder disagreement (each written as a case file to
    /// --out), 2 on bad input, 3 when some answer is unknown and none is a
    /// counterexample. With --self-check, checks the encoder against the interpreter on
    /// generated cases instead (exit 1 on any difference).
    Verify(cli::verify::Args),
    /// Writes one self-contained HTML page for a finding file: the reduced case, the IR
    /// before and after the guilty pass with changed lines marked, the input and both
    /// outcomes with the differences marked, the CFGs as pictures (Graphviz), the x86
    /// listing of a backend finding with the instruction where the emulator stopped, and
    /// the commands that replay, reduce and compile it.
    Explain(cli::explain::Args),
    /// The validator's child process (`smt::isolate`): one request on stdin, the answers
    /// as JSON lines on stdout. Not for people.
    #[command(name = "validate-child", hide = true)]
    ValidateChild,
}

fn main() -> ExitCode {
    // Campaigns, `tandem run` and `tandem verify` validate in a child process of this same
    // binary, under a hard memory cap and wall-clock limit (issue 23). `/proc/self/exe` is this process's
    // own program even when the file was rebuilt under it.
    let me = if cfg!(target_os = "linux") { std::path::PathBuf::from("/proc/self/exe") } else { std::env::current_exe().unwrap_or_default() };
    let command = Cli::parse().command;
    let limits = match &command {
        Command::Verify(_) => tandem_oracle::smt::isolate::VERIFY_LIMITS,
        Command::Fuzz(cli::fuzz::Args { validator_memory: mb, .. }) | Command::Run(cli::run::Args { validator_memory: mb, .. }) => {
            tandem_oracle::smt::isolate::Limits { memory: mb.saturating_mul(1_000_000), ..tandem_oracle::smt::isolate::LIMITS }
        }
        _ => tandem_oracle::smt::isolate::LIMITS,
    };
    tandem_oracle::smt::isolate::use_child_program(me, limits);
    if matches!(command, Command::Run(_) | Command::Fuzz(_) | Command::Verify(_)) {
        // The commands that run for hours give large blocks straight back (issue 23).
        tandem_oracle::measure::memory::return_large_blocks();
    }
    if matches!(command, Command::ValidateChild) {
        tandem_oracle::measure::memory::reuse_large_blocks(tandem_oracle::smt::isolate::KEEP_RESIDENT);
    }
    match command {
        Command::Run(a) => cli::run::main(a),
        Command::Compile(a) => cli::compile::main(a),
        Command::Gen(a) => cli::generate::main(a),
        Command::Fuzz(a) => cli::fuzz::main(a),
        Command::Reduce(a) => cli::reduce::main(a),
        Command::Bench(a) => cli::bench::main(a),
        Command::Verify(a) => cli::verify::main(a),
        Command::Explain(a) => cli::explain::main(a),
        Command::ValidateChild => cli::child::main(),
    }
}
