//! `tandem explain`: writes the self-contained HTML page of one finding (see
//! `tandem_oracle::show::explain`): beside the finding as `NAME.html` by default, to
//! `-o FILE`, or to standard output with `-o -`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tandem_oracle::show::explain::{self, ExplainError};
use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The finding file (a case file a campaign, the validator or a person wrote); its
    /// `.reduced.tir` beside it is shown when there is one.
    pub finding: PathBuf,
    /// Where the page goes (default: beside the finding, `.html` for `.tir`; `-` for
    /// standard output).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
}

pub fn main(a: Args) -> ExitCode {
    let mut emu = match emulator() {
        Ok(e) => e,
        Err(code) => return code,
    };
    let evidence = match explain::gather(&a.finding, &mut emu) {
        Ok(e) => e,
        Err(ExplainError::BadInput(b)) => {
            eprintln!("error: {b}");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("error: {}: {e}", a.finding.display());
            return ExitCode::from(2);
        }
    };
    let html = explain::render(&evidence);
    let out = a.out.unwrap_or_else(|| a.finding.with_extension("html"));
    if out.as_os_str() == "-" {
        let _ = std::io::stdout().lock().write_all(html.as_bytes());
        return ExitCode::SUCCESS;
    }
    if let Err(code) = write_report(&out, &html) {
        return code;
    }
    let what = match (&evidence.located, &evidence.z3) {
        (Some(l), _) => format!("reproduces: {}", l.signature),
        (None, Some(z)) => format!("reproduces in the validator: pass {}", z.pass),
        (None, None) => "does not reproduce".to_string(),
    };
    println!("{} ({what})", out.display());
    ExitCode::SUCCESS
}
