//! The command-line layer, one file per subcommand (`main.rs` only dispatches): each
//! file holds its arguments (`Args`) and turns the library's reports into text and exit
//! codes: 0 when everything passed, 1 on a finding, 2 on bad input.

use std::process::ExitCode;
use tandem_oracle::gen;

pub mod run;
pub mod compile;
pub mod generate;
pub mod fuzz;
pub mod reduce;
pub mod bench;
pub mod verify;
pub mod explain;
pub mod child;

/// Reads a generator profile name for clap, which reports a bad one with exit status 2.
pub fn parse_profile(name: &str) -> Result<gen::Profile, String> {
    gen::Profile::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = gen::Profile::ALL.iter().map(|p| p.name()).collect();
        format!("unknown profile `{name}` (expected one of: {})", names.join(", "))
    })
}

/// The emulator every x86 stage runs in, or the exit status when it cannot start.
pub fn emulator() -> Result<tandem_oracle::exec::emu::Emulator, ExitCode> {
    tandem_oracle::exec::emu::Emulator::new().map_err(|e| {
        eprintln!("error: cannot start the emulator: {e}");
        ExitCode::from(2)
    })
}

/// The x86 machines every x86 stage runs on (`--x86`; default both where the CPU runs
/// 32-bit code, else Unicorn with a one-line notice on stderr), or the exit status when
/// they cannot start.
pub fn x86_machines(mode: Option<tandem_oracle::exec::x86::X86Mode>) -> Result<tandem_oracle::exec::x86::X86, ExitCode> {
    let x = tandem_oracle::exec::x86::X86::new(mode).map_err(|e| {
        eprintln!("error: cannot start the x86 machines: {e}");
        ExitCode::from(2)
    })?;
    if let Some(notice) = x.notice() {
        eprintln!("notice: {notice}");
    }
    Ok(x)
}

/// Reads `--x86` for clap.
pub fn parse_x86(s: &str) -> Result<tandem_oracle::exec::x86::X86Mode, String> {
    tandem_oracle::exec::x86::X86Mode::parse(s)
}

/// Reads a campaign's profile (a generator profile or `mix`) for clap.
pub fn parse_profile_choice(name: &str) -> Result<tandem_oracle::campaign::ProfileChoice, String> {
    tandem_oracle::campaign::ProfileChoice::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = gen::Profile::ALL.iter().map(|p| p.name()).collect();
        format!("unknown profile `{name}` (expected one of: {}, mix)", names.join(", "))
    })
}

/// Writes `text` to `path` (atomically); the exit status 2 when it cannot.
pub fn write_report(path: &std::path::Path, text: &str) -> Result<(), ExitCode> {
    tandem_oracle::campaign::write_atomic(path, text.as_bytes()).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })
}

