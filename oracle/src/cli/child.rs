//! `tandem validate-child` (hidden): the child side of the validator's isolation
//! (`smt::isolate`). Reads requests as JSON lines on stdin and writes each pass's answer
//! as a JSON line on stdout, then a line that says the request is done, until stdin ends;
//! the parent that started it watches its memory and time. Exit status 0 when every
//! request was answered, 2 on a request it cannot read.

use std::process::ExitCode;
use tandem_oracle::smt::isolate;

pub fn main() -> ExitCode {
    let stdout = std::io::stdout();
    match isolate::serve_each(std::io::stdin().lock(), &mut stdout.lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
