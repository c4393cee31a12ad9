//! `tandem reduce`: shrinks a failing case file while its signature holds.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tandem_oracle::campaign::replay;
use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The failing case file.
    pub case: PathBuf,
    /// Where the reduced case goes (default: standard output).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Keep this signature instead of the first problem's (e.g. `x86: end`).
    #[arg(long)]
    pub signature: Option<String>,
}

pub fn main(a: Args) -> ExitCode {
    let Args { case, out, signature } = a;
    reduce(&case, out.as_deref(), signature.as_deref())
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
    match tandem_oracle::campaign::reduce::reduce(&loaded, signature, &mut emu, &mut progress) {
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

