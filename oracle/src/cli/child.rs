//! `tandem validate-child` (hidden): the child side of the validator's isolation
//! (`smt::isolate`). Reads one request as JSON on stdin and writes each pass's answer as a
//! JSON line on stdout; the parent that started it watches its memory and time. Exit
//! status 0 when every asked pass has its answer, 2 on a request it cannot read.

use std::io::Read;
use std::process::ExitCode;
use tandem_oracle::smt::isolate;

pub fn main() -> ExitCode {
    let mut request = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut request) {
        eprintln!("error: cannot read the request: {e}");
        return ExitCode::from(2);
    }
    let stdout = std::io::stdout();
    match isolate::serve(&request, &mut stdout.lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
