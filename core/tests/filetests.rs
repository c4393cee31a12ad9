//! The file-test runner for the passes (STYLE.md item 6). Each `filetests/*.tir` file
//! holds directives, an input module, and after the line `; ---- expect` the module the
//! pipeline must print:
//!
//! ```text
//! ; pipeline: ssa,dce          the passes to run (required)
//! ; input: ssa                 the input is already in SSA form (default: hir)
//! ; stats: cprop.tm_safe=1     counters the passes must report (summed over functions)
//! ```
//!
//! The expected sections were written by hand from the seeds; `TANDEM_BLESS=1 cargo test`
//! rewrites them to what the passes print (review the diff before committing one).

use std::path::{Path, PathBuf};
use tandem_core::passes::{Form, PassManager, Pipeline, Stats};
use tandem_core::text::parse_module;
use tandem_core::verify::verify_module;

const MARKER: &str = "; ---- expect";

fn run_file(path: &Path, bless: bool) -> Result<(), String> {
    let src = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let (input, expected) = src.split_once(MARKER).ok_or("no `; ---- expect` line")?;
    let mut pipeline = None;
    let mut start = Form::Hir;
    let mut want_stats = vec![];
    for line in input.lines() {
        if let Some(p) = line.strip_prefix("; pipeline:") {
            pipeline = Some(p.trim().to_string());
        } else if let Some(p) = line.strip_prefix("; input:") {
            start = match p.trim() {
                "ssa" => Form::Ssa,
                "hir" => Form::Hir,
                other => return Err(format!("unknown input form `{other}`")),
            };
        } else if let Some(p) = line.strip_prefix("; stats:") {
            for kv in p.split_whitespace() {
                let (k, v) = kv.split_once('=').ok_or(format!("bad stats item `{kv}`"))?;
                want_stats.push((k.to_string(), v.parse::<u64>().map_err(|e| e.to_string())?));
            }
        }
    }
    let pipeline = Pipeline::parse_from(start, &pipeline.ok_or("no `; pipeline:` line")?).map_err(|e| e.to_string())?;
    let (mut m, _) = parse_module(input).map_err(|e| format!("input: {e}"))?;
    verify_module(&m).map_err(|e| format!("input does not verify: {}", e[0]))?;
    let pm = PassManager { verify: true };
    let mut stats: Vec<(String, Stats)> = vec![];
    for f in &mut m.functions {
        for (name, s) in pm.run(&pipeline, f, &mut |_, _, _| {}).map_err(|e| e.to_string())? {
            match stats.iter_mut().find(|(n, _)| n == name) {
                Some((_, t)) => t.merge(&s),
                None => stats.push((name.to_string(), s)),
            }
        }
    }
    let got = m.to_string();
    let expected_text: String = expected.trim_start_matches('\n').to_string();
    let mut errs = vec![];
    if got.trim_end() != expected_text.trim_end() {
        if bless {
            std::fs::write(path, format!("{input}{MARKER}\n{got}")).map_err(|e| e.to_string())?;
        } else {
            errs.push(format!("output differs\n--- expected\n{expected_text}\n--- got\n{got}"));
        }
    }
    for (k, v) in want_stats {
        let (pass, counter) = k.split_once('.').ok_or(format!("stats key `{k}` is not pass.counter"))?;
        let got = stats.iter().find(|(n, _)| n == pass).map_or(0, |(_, s)| s.get(counter));
        if got != v {
            errs.push(format!("stat {k}: expected {v}, got {got}"));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        let all: Vec<String> = stats.iter().map(|(n, s)| format!("{n}: {s}")).collect();
        errs.push(format!("stats: {}", all.join("; ")));
        Err(errs.join("\n"))
    }
}

#[test]
fn filetests() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/filetests");
    let bless = std::env::var_os("TANDEM_BLESS").is_some();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "tir"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "missing file tests in {}", dir.display());
    let mut failures = vec![];
    for f in &files {
        if let Err(e) = run_file(f, bless) {
            failures.push(format!("{}: {e}", f.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
