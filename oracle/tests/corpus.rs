//! Every corpus file round-trips through parse/print byte for byte and replays with every
//! run matching its expectation and every stage (IR passes, x86) agreeing with the
//! reference interpreter.

use std::path::PathBuf;
use tandem_oracle::cases::casefile::CaseFile;
use tandem_oracle::campaign::replay;

fn corpus_files() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let files = replay::collect_files(&[root]).expect("corpus folder readable");
    assert!(!files.is_empty(), "the corpus is empty");
    files
}

#[test]
fn corpus_round_trips_byte_for_byte() {
    let mut bad = vec![];
    for path in corpus_files() {
        let src = std::fs::read_to_string(&path).unwrap();
        let case = CaseFile::parse(&src).unwrap_or_else(|e| panic!("{}:{e}", path.display()));
        let printed = case.print();
        if printed != src {
            bad.push(format!("{}:\n--- source\n{src}\n--- printed\n{printed}", path.display()));
        }
        // The module alone also round-trips through its canonical print.
        let again = tandem_core::text::parse_module(&case.module.to_string()).unwrap().0;
        assert_eq!(again.to_string(), case.module.to_string(), "{}", path.display());
    }
    assert!(bad.is_empty(), "files that do not round-trip:\n{}", bad.join("\n"));
}

#[test]
fn corpus_replays() {
    let mut failures = vec![];
    // Every x86 stage on Unicorn and, where this machine runs 32-bit code, on the CPU too:
    // the two must agree on every corpus run.
    let mut emu = tandem_oracle::exec::x86::X86::new(None).unwrap();
    for path in corpus_files() {
        let report = replay::replay_file(&path, false, &mut emu).unwrap_or_else(|e| panic!("{e}"));
        if report.runs.is_empty() {
            failures.push(format!("{}: the file has no `; run:` line, so it checks nothing", path.display()));
        }
        for r in report.runs {
            for (stage, i) in &r.infidelities {
                failures.push(format!("{}:{}: {}: stage {stage}: {i}", path.display(), r.line, r.title));
            }
            if !r.passed() {
                let problems: Vec<String> =
                    r.problems.iter().map(|p| format!("stage {}: {}", p.stage, p.lines.join("; "))).collect();
                failures.push(format!(
                    "{}:{}: {}\n  {}\n  {}",
                    path.display(),
                    r.line,
                    r.title,
                    r.mismatches.join("\n  "),
                    problems.join("\n  ")
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
