//! The console, `--json` and `--junit` of a replay agree, for every kind of problem: a
//! difference, an emulator fault, a verifier error, a pass failure, a backend checker
//! error, a validator counterexample, an encoder disagreement, a harness limit, an unknown
//! answer (and bad input). Each kind is made real where the harness can make it: bugs
//! planted in a pass or in the backend's input ([`check::plant_bug`]), which the validator
//! sees too; a frame larger than the emulated stack; a validator budget too small for
//! the function. Only the encoder disagreement (a bug of the encoder itself, which no
//! planted bug of the compiler can cause) is a report built by hand.
//!
//! Every kind is checked three ways against counts written by hand for its case file:
//! the console's last lines and its `FAIL`/`LIMIT`/`UNKNOWN` lines, the JSON counts and
//! entries, and the JUnit totals and elements. One test, in phases, because a planted bug
//! holds for the whole process.

mod common;
use common::dce_flips_returns;
use std::path::{Path, PathBuf};
use tandem_core::ir::{ExprData, Function, MemWidth, Phi};
use tandem_oracle::campaign::replay::{self, FileReport, ReplayOptions, RunReport, SmtReport, Validation};
use tandem_oracle::campaign::report::{self, Replayed, RunCounts};
use tandem_oracle::exec::emu::Emulator;
use tandem_oracle::exec::interp::RunInput;
use tandem_oracle::exec::outcome::Invalid;
use tandem_oracle::judge::check::{self, PlantedBug};

/// What every report must count for one case (written by hand from the case and the bug).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Want {
    passed: u64,
    failed: u64,
    limited: u64,
    bad_input: u64,
    validator_failed: u64,
    not_proved: u64,
    exit: u8,
}

const ONE_RUN: &str = "function %f(i32 %a) -> i32 {\nb0:\n    ret add(%a, 1)\n}\n; run: %f(2)\n; expect: return 3\n";

/// A case some passes change (`ssa` versions `%x`, `cprop` forwards it) and some leave as
/// they were.
const CHANGED_RUN: &str = "function %f(i32 %a) -> i32 {\n    local i32 %x\nb0:\n    %x = add(%a, 1)\n    ret %x\n}\n; run: %f(2)\n; expect: return 3\n";

/// How many passes of the check pipeline change the function of `text`.
fn changed_pairs(text: &str) -> u64 {
    let (m, _) = tandem_core::text::parse_module(text).expect("the case parses");
    let mut f = m.functions[0].clone();
    let mut before = f.clone();
    let mut changed = 0;
    tandem_core::passes::PassManager { verify: true }
        .run(&tandem_core::passes::check_pipeline(), &mut f, &mut |_, after, _| {
            changed += (before != *after) as u64;
            before = after.clone();
        })
        .expect("the pipeline runs");
    changed
}

fn ssa_destroy_leaves_a_phi(stage: &str, f: &mut Function) {
    if stage == "ssa-destroy" {
        let b = *f.layout.last().unwrap();
        let dest = f.params[0];
        f.blocks[b].phis.push(Phi { dest, args: vec![] });
    }
}

fn backend_stores_to_null(stage: &str, f: &mut Function) {
    if stage == "x86" {
        let addr = f.add_expr(ExprData::Const { ty: tandem_core::ir::Type::I32, value: 0 });
        let value = f.add_expr(ExprData::Const { ty: tandem_core::ir::Type::I32, value: 0 });
        let store = f.add_expr(ExprData::Store { width: MemWidth::W32, addr, value });
        let entry = f.entry();
        f.blocks[entry].stmts.insert(0, store);
    }
}

fn dce_panics(stage: &str, _f: &mut Function) {
    if stage == "dce" {
        panic!("planted panic in dce");
    }
}

/// The backend gets a function with a phi, which it does not take.
fn backend_input_has_a_phi(stage: &str, f: &mut Function) {
    if stage == "x86" {
        let b = *f.layout.last().unwrap();
        let dest = f.params[0];
        f.blocks[b].phis.push(Phi { dest, args: vec![] });
    }
}

fn write_case(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

fn replay(paths: &[PathBuf], options: &ReplayOptions) -> Vec<Replayed> {
    let mut emu = Emulator::new().unwrap();
    paths
        .iter()
        .map(|p| match replay::replay_file_with(p, options, &mut emu) {
            Ok(report) => Replayed::File { report, elapsed: std::time::Duration::from_millis(1) },
            Err(e) => Replayed::Bad(e),
        })
        .collect()
}

/// The number before `label` in `line` (`"3 failed"` -> 3).
fn number_before(line: &str, label: &str) -> u64 {
    let at = line.find(label).unwrap_or_else(|| panic!("no `{label}` in `{line}`"));
    line[..at].trim_end().rsplit([' ', ':', '(']).next().unwrap().parse().unwrap_or_else(|_| panic!("`{line}` before `{label}`"))
}

/// A JUnit attribute of the `<testsuites>` element.
fn junit_total(x: &str, attr: &str) -> u64 {
    let head = x.lines().find(|l| l.starts_with("<testsuites ")).expect("a <testsuites> element");
    let key = format!(" {attr}=\"");
    let at = head.find(&key).unwrap_or_else(|| panic!("no {attr} in {head}")) + key.len();
    head[at..].split('"').next().unwrap().parse().unwrap()
}

/// Checks the three reports of `replayed` against `want` and against one another.
fn assert_reports_agree(kind: &str, replayed: &[Replayed], bless: bool, want: Want) {
    let counts = RunCounts::of(replayed, bless);
    // The console: what `tandem run` prints (file by file, then the totals).
    let mut console: String = replayed.iter().map(|r| report::console_file(r, bless, false)).collect();
    console += &counts.console(Some(1));
    let totals = console.lines().find(|l| l.contains(" file(s): ")).unwrap();
    let z3 = console.lines().find(|l| l.starts_with("z3: ")).unwrap();
    let fail_lines = console.lines().filter(|l| l.starts_with("FAIL ")).count() as u64;
    let limit_lines = console.lines().filter(|l| l.starts_with("LIMIT ")).count() as u64;
    let unknown_lines = console.lines().filter(|l| l.starts_with("UNDECIDED ")).count() as u64;
    let error_lines = console.lines().filter(|l| l.starts_with("error: ")).count() as u64;
    let console_counts = Want {
        passed: number_before(totals, "run(s) passed"),
        failed: number_before(totals, "failed"),
        limited: if totals.contains("beyond a harness limit") { number_before(totals, "beyond a harness limit") } else { 0 },
        bad_input: number_before(totals, "file(s) with bad input"),
        validator_failed: number_before(z3, "counterexample(s)") + number_before(z3, "encoder disagreement(s)"),
        not_proved: number_before(z3, "unknown"),
        exit: counts.exit_status(),
    };
    assert_eq!(console_counts, want, "{kind}: console\n{console}");
    assert_eq!((fail_lines, limit_lines, unknown_lines, error_lines), (want.failed + want.validator_failed, want.limited, want.not_proved, want.bad_input), "{kind}: console lines\n{console}");
    // The JSON report.
    let j: serde_json::Value = serde_json::to_value(report::run_json(replayed, bless)).unwrap();
    let n = |k: &str| j[k].as_u64().unwrap_or_else(|| panic!("{kind}: no `{k}` in {j}"));
    let json_counts = Want {
        passed: n("passed"),
        failed: n("failed"),
        limited: n("limited"),
        bad_input: n("bad_input"),
        validator_failed: n("validator_failed"),
        not_proved: n("validator_not_proved"),
        exit: n("exit_status") as u8,
    };
    assert_eq!(json_counts, want, "{kind}: JSON\n{j:#}");
    let statuses = |s: &str| j["runs"].as_array().unwrap().iter().filter(|r| r["status"] == s).count() as u64;
    assert_eq!((statuses("passed"), statuses("failed"), statuses("limit")), (want.passed, want.failed, want.limited), "{kind}: JSON runs");
    let answers = |s: &str| j["answers"].as_array().unwrap().iter().filter(|r| r["status"] == s).count() as u64;
    assert_eq!((answers("failed"), answers("not proved")), (want.validator_failed, want.not_proved), "{kind}: JSON answers");
    // One list of answers: every answer, once.
    assert_eq!(j["answers"].as_array().unwrap().len() as u64, counts.validated, "{kind}: JSON answers");
    assert!(j.get("z3").is_none(), "{kind}: the answers are listed once");
    assert_eq!(j["format"], "tandem-run-report/3");
    assert_eq!(j["bad_inputs"].as_array().unwrap().len() as u64, want.bad_input);
    // The JUnit report: totals and elements.
    let x = report::run_junit(replayed, bless);
    let elements = |tag: &str| x.matches(&format!("<{tag} ")).count() as u64;
    assert_eq!(junit_total(&x, "failures"), want.failed + want.validator_failed, "{kind}: JUnit\n{x}");
    assert_eq!(elements("failure"), want.failed + want.validator_failed, "{kind}: JUnit\n{x}");
    // Skipped: runs beyond a limit, answers not proved, and generated files not validated
    // (the console's "N generated case(s) not validated").
    let unvalidated = counts.generated_not_validated;
    assert_eq!(junit_total(&x, "skipped"), want.limited + want.not_proved + unvalidated, "{kind}: JUnit\n{x}");
    assert_eq!(elements("skipped"), want.limited + want.not_proved + unvalidated, "{kind}: JUnit\n{x}");
    assert_eq!(junit_total(&x, "errors"), want.bad_input, "{kind}: JUnit\n{x}");
    assert_eq!(elements("error"), want.bad_input, "{kind}: JUnit\n{x}");
    let validated = counts.validated;
    assert_eq!(junit_total(&x, "tests"), want.passed + want.failed + want.limited + want.bad_input + validated + unvalidated, "{kind}: JUnit\n{x}");
}

/// A case with one run, replayed with `bug` planted; the signature of its first problem.
fn planted(dir: &Path, kind: &str, bug: PlantedBug, options: &ReplayOptions, want: Want) -> Vec<String> {
    check::plant_bug(Some(bug));
    let p = write_case(dir, &format!("{}.tir", kind.replace(' ', "-")), ONE_RUN);
    let replayed = replay(&[p], options);
    check::plant_bug(None);
    assert_reports_agree(kind, &replayed, false, want);
    let j: serde_json::Value = serde_json::to_value(report::run_json(&replayed, false)).unwrap();
    let mut sigs: Vec<String> = j["runs"][0]["problems"].as_array().unwrap().iter().map(|p| p["signature"].as_str().unwrap().to_string()).collect();
    sigs.extend(j["answers"].as_array().unwrap().iter().filter(|a| a["status"] == "failed").map(|a| a["signature"].as_str().unwrap().to_string()));
    sigs
}

const NO_VERIFY: ReplayOptions = ReplayOptions { bless: false, verify: None, verify_generated: false };

fn failed_run(validator_failed: u64) -> Want {
    Want { passed: 0, failed: 1, limited: 0, bad_input: 0, validator_failed, not_proved: 0, exit: 1 }
}

/// Held by the tests that replay in this process: a planted bug holds for the whole
/// process, so they take turns.
static PLANTED: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn console_json_and_junit_agree_for_every_kind_of_problem() {
    let _turn = PLANTED.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("tandem-test-reports-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // A difference: one failed run (counted once, though three stages disagree).
    let sigs = planted(&dir, "difference", dce_flips_returns, &NO_VERIFY, failed_run(0));
    assert_eq!(sigs.first().map(String::as_str), Some("pass dce: wrong outcome"), "{sigs:?}");
    // An emulator fault of the x86 code.
    let sigs = planted(&dir, "emulator fault", backend_stores_to_null, &NO_VERIFY, failed_run(0));
    assert_eq!(sigs.first().map(String::as_str), Some("x86: emulator fault"), "{sigs:?}");
    // A verifier error after a pass.
    let sigs = planted(&dir, "verifier error", ssa_destroy_leaves_a_phi, &NO_VERIFY, failed_run(0));
    assert_eq!(sigs.first().map(String::as_str), Some("pass ssa-destroy: verifier error"), "{sigs:?}");
    // A pass failure (a pass that panics).
    let sigs = planted(&dir, "pass failure", dce_panics, &NO_VERIFY, failed_run(0));
    assert!(sigs.first().is_some_and(|s| s.ends_with(": pass failure")), "{sigs:?}");
    // A backend checker error.
    let sigs = planted(&dir, "backend checker error", backend_input_has_a_phi, &NO_VERIFY, failed_run(0));
    assert_eq!(sigs.first().map(String::as_str), Some("x86: backend checker error"), "{sigs:?}");
    // A validator counterexample, beside the run the same bug fails: one failed run and
    // one validator finding, under the same signature.
    let sigs = planted(&dir, "validator counterexample", dce_flips_returns, &ReplayOptions::default(), failed_run(1));
    assert_eq!(sigs.first(), sigs.last(), "{sigs:?}");
    assert_eq!(sigs.last().map(String::as_str), Some("pass dce: wrong outcome"), "{sigs:?}");
    // An unknown answer: an encoding cap too small for any function. The run passes;
    // every (function, pass) pair the pass changed is listed as not proved, never as a
    // pass (exit 3); a pair it left as it was is proved without the solver.
    let tiny = ReplayOptions { bless: false, verify: Some(tandem_oracle::smt::Options { bound: 1, rlimit: 4_000_000, max_nodes: 1 }), verify_generated: false };
    let p = write_case(&dir, "unknown.tir", CHANGED_RUN);
    let replayed = replay(&[p], &tiny);
    let changed = changed_pairs(CHANGED_RUN);
    assert!(changed > 0 && RunCounts::of(&replayed, false).validated > changed);
    assert_reports_agree("unknown", &replayed, false, Want { passed: 1, failed: 0, limited: 0, bad_input: 0, validator_failed: 0, not_proved: changed, exit: 3 });
    // A harness limit: a frame larger than the emulated stack (exit 3).
    let p = write_case(&dir, "limit.tir", &big_frame());
    let replayed = replay(&[p], &NO_VERIFY);
    assert_reports_agree("harness limit", &replayed, false, Want { passed: 0, failed: 0, limited: 1, bad_input: 0, validator_failed: 0, not_proved: 0, exit: 3 });
    // Bad input beside a good file.
    let good = write_case(&dir, "good.tir", ONE_RUN);
    let bad = write_case(&dir, "bad.tir", "function %f( -> i32 {\n");
    let replayed = replay(&[good, bad], &NO_VERIFY);
    assert_reports_agree("bad input", &replayed, false, Want { passed: 1, failed: 0, limited: 0, bad_input: 1, validator_failed: 0, not_proved: 0, exit: 2 });
    // An encoder disagreement: no planted compiler bug makes one, so the report is built.
    let input = RunInput { args: vec![], heap: vec![], callframe: vec![], fuel: 1000 };
    let why = "the model's run returns 1 on both sides".to_string();
    let answer = tandem_oracle::smt::Answer::EncoderDisagreement(Box::new(tandem_oracle::smt::Disagreement {
        input,
        before: Err(Invalid::FuelExhausted),
        after: Err(Invalid::FuelExhausted),
        why,
    }));
    let run = RunReport { line: 5, title: "%f(2)".into(), mismatches: vec![], problems: vec![], limits: vec![], infidelities: vec![] };
    let smt = vec![
        SmtReport { function: "f".into(), pass: "cprop".into(), answer },
        SmtReport { function: "f".into(), pass: "dce".into(), answer: tandem_oracle::smt::Answer::Proved },
    ];
    let replayed = vec![Replayed::File {
        report: FileReport { path: "built.tir".into(), runs: vec![run], blessed: false, smt, validation: Validation::Validated },
        elapsed: std::time::Duration::from_millis(1),
    }];
    assert_reports_agree("encoder disagreement", &replayed, false, Want { passed: 1, failed: 0, limited: 0, bad_input: 0, validator_failed: 1, not_proved: 0, exit: 1 });
    let j: serde_json::Value = serde_json::to_value(report::run_json(&replayed, false)).unwrap();
    assert_eq!(j["answers"][0]["signature"], "z3 pass cprop: encoder disagreement");
    // `tandem reduce --signature` takes every signature a report or finding file prints,
    // in today's or an older spelling, the first problem's or a later stage's.
    check::plant_bug(Some(dce_flips_returns));
    let case = tandem_oracle::cases::casefile::CaseFile::parse(ONE_RUN).unwrap();
    let mut emu = Emulator::new().unwrap();
    for (given, kept) in [
        ("pass dce: end", "pass dce: wrong outcome"),
        ("pass dce: wrong outcome", "pass dce: wrong outcome"),
        ("x86 after ssa,memopt,ssapre,dce,ssa-destroy,cprop: end", "x86: wrong outcome"),
        ("z3 pass dce: validator counterexample", "pass dce: wrong outcome"),
    ] {
        let r = tandem_oracle::campaign::reduce::reduce(&case, Some(given), &mut emu, &mut |_| {});
        assert_eq!(r.map(|r| r.signature).map_err(|e| e.to_string()), Ok(kept.to_string()), "{given}");
    }
    let refused = tandem_oracle::campaign::reduce::reduce(&case, Some("pass cprop: heap"), &mut emu, &mut |_| {});
    assert!(refused.is_err_and(|e| e.to_string().contains("its runs fail with: pass dce: wrong outcome")));
    check::plant_bug(None);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Cases the generator wrote are not validated unless asked, and every report says how
/// many files were: the console's `z3:` line, the JSON's `validated_files` and
/// `generated_not_validated`.
#[test]
fn generated_cases_are_validated_when_asked() {
    let _turn = PLANTED.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("tandem-test-reports-gen-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let generated = write_case(&dir, "small-seed-1.tir", &format!("; tandem gen --seed 1 --profile small\n; swarm features If\n{ONE_RUN}"));
    let written = write_case(&dir, "written.tir", ONE_RUN);
    // A campaign's validator finding names the validator: replayed, it is validated.
    let z3 = write_case(&dir, "z3.tir", &format!("; stage `z3 pass dce` disagrees with the reference interpreter (pass dce: wrong outcome):\n; tandem gen --seed 1 --profile small\n{ONE_RUN}"));
    assert!(replay::generated(&std::fs::read_to_string(&generated).unwrap()));
    assert!(!replay::generated(&std::fs::read_to_string(&written).unwrap()));
    assert!(!replay::generated(&std::fs::read_to_string(&z3).unwrap()));
    let files = [generated, written, z3];
    let by_default = replay(&files, &ReplayOptions::default());
    let validation: Vec<Validation> = by_default.iter().map(|r| match r {
        Replayed::File { report, .. } => report.validation,
        Replayed::Bad(b) => panic!("{b}"),
    }).collect();
    assert_eq!(validation, vec![Validation::Generated, Validation::Validated, Validation::Validated]);
    let c = RunCounts::of(&by_default, false);
    assert_eq!((c.validated_files, c.generated_not_validated, c.exit_status()), (2, 1, 0));
    let console = c.console(Some(1));
    assert!(console.contains("z3: 2 of 3 file(s) validated (1 generated case(s) not validated: --verify-generated validates them), "), "{console}");
    let j: serde_json::Value = serde_json::to_value(report::run_json(&by_default, false)).unwrap();
    assert_eq!((j["validated_files"].as_u64(), j["generated_not_validated"].as_u64()), (Some(2), Some(1)));
    // JUnit counts the file the console says was not validated: a skipped test case of
    // its own (one run per file, and the other two files' answers, none skipped).
    let x = report::run_junit(&by_default, false);
    let answers = c.validated;
    assert_eq!(c.validator_not_proved, 0, "{console}");
    assert_eq!(junit_total(&x, "tests"), 3 + answers + 1, "{x}");
    assert_eq!(junit_total(&x, "skipped"), 1, "{x}");
    assert!(x.contains("name=\"z3 not validated\"") && x.contains("--verify-generated validates it"), "{x}");
    let all = replay(&files, &ReplayOptions { verify_generated: true, ..ReplayOptions::default() });
    let c = RunCounts::of(&all, false);
    assert_eq!((c.validated_files, c.generated_not_validated), (3, 0));
    assert!(c.console(Some(1)).contains("z3: 3 of 3 file(s) validated, "), "{}", c.console(Some(1)));
    assert!(!report::run_junit(&all, false).contains("z3 not validated"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// 34,000 `i64` locals: a 272,000-byte frame, more than the 256 KiB emulated stack.
fn big_frame() -> String {
    use std::fmt::Write;
    let mut t = String::from("function %f() -> i64 {\n");
    for k in 0..34_000 {
        let _ = writeln!(t, "    local i64 %v{k}");
    }
    t += "b0:\n    %v33999 = add(%v0, %v1)\n    ret %v33999\n}\n; run: %f()\n; expect: return 0:i64\n";
    t
}

/// The command itself: a file with one run whose validator fails counts one failed run
/// and one validator finding, and its exit status, console, JSON and JUnit say the same
/// (here a harness limit and a bad input, which need no planted bug, beside a good file).
#[test]
fn the_command_prints_what_its_reports_count() {
    let dir = std::env::temp_dir().join(format!("tandem-test-reports-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    write_case(&dir, "cases/good.tir", ONE_RUN);
    write_case(&dir, "cases/limit.tir", &big_frame());
    write_case(&dir, "cases/two.tir", "function %f(i32 %a) -> i32 {\nb0:\n    ret mul(%a, 2)\n}\n; run: %f(2)\n; expect: return 4\n; run: %f(3)\n; expect: return 7\n");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tandem"))
        .args(["run", "--no-verify"])
        .arg(dir.join("cases"))
        .arg("--json")
        .arg(dir.join("r.json"))
        .arg("--junit")
        .arg(dir.join("r.xml"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("3 file(s): 2 run(s) passed, 1 failed, 1 beyond a harness limit, 0 file(s) with bad input"), "{stdout}");
    assert!(stdout.contains("z3: not run (--no-verify)"), "{stdout}");
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
    assert_eq!((j["passed"].as_u64(), j["failed"].as_u64(), j["limited"].as_u64(), j["exit_status"].as_u64()), (Some(2), Some(1), Some(1), Some(1)));
    let x = std::fs::read_to_string(dir.join("r.xml")).unwrap();
    assert!(x.contains("<testsuites name=\"tandem run\" tests=\"4\" failures=\"1\" errors=\"0\" skipped=\"1\""), "{x}");
    // Without a report the command keeps counts, not the files: it prints the same.
    let alone = std::process::Command::new(env!("CARGO_BIN_EXE_tandem")).args(["run", "--no-verify"]).arg(dir.join("cases")).output().unwrap();
    assert_eq!(alone.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&alone.stdout), stdout);
    let _ = std::fs::remove_dir_all(&dir);
}
