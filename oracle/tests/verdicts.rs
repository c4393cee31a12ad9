//! Every verdict is the right one (issue 8): correct code that takes many x86
//! instructions per unit of interpreter fuel is not a `timeout` finding, and a program
//! that does not fit the emulated machine gets a harness-limit verdict of its own, never a
//! fault finding. Expected outcomes are worked out by hand in each case's comment.

use std::fmt::Write;
use std::path::PathBuf;
use tandem_oracle::exec::emu::Emulator;
use tandem_oracle::campaign::replay::{replay_file, FileReport};

fn replay_text(name: &str, text: &str) -> FileReport {
    let dir = std::env::temp_dir().join(format!("tandem-verdicts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path: PathBuf = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let mut emu = Emulator::new().unwrap();
    replay_file(&path, false, &mut emu).unwrap_or_else(|e| panic!("{e}"))
}

fn assert_all_pass(report: &FileReport) {
    for r in &report.runs {
        assert!(r.mismatches.is_empty(), "{}: {:?}", r.title, r.mismatches);
        assert!(r.problems.is_empty(), "{}: {:?}", r.title, r.problems);
        assert!(r.limits.is_empty(), "{}: {:?}", r.title, r.limits);
    }
}

/// A 2,000-case switch in a 500-round loop: the switch lowers to a chain of compares, so
/// the last case costs about 4,000 instructions per round for a few units of fuel (the
/// old budget of 32 instructions per unit of fuel plus 100,000 ran out in round 25).
/// Every case goes to b2, which counts: 1999 takes it in all 500 rounds, 2000 never.
#[test]
fn a_long_switch_chain_in_a_loop_is_not_a_timeout() {
    let cases: Vec<String> = (0..2000).map(|k| format!("{k}: b2")).collect();
    let text = format!(
        "function %f(i32 %n) -> i32 {{\n    local i32 %i\n    local i32 %s\nb0:\n    jump b1\nb1:\n    switch %n, default b3, [{}]\nb2:\n    %s = add(%s, 1)\n    jump b3\nb3:\n    %i = add(%i, 1)\n    br slt(%i, 500), b1, b4\nb4:\n    ret %s\n}}\n; run: %f(1999)\n; expect: return 500\n; run: %f(2000)\n; expect: return 0\n",
        cases.join(", ")
    );
    let report = replay_text("switch.tir", &text);
    assert_eq!(report.runs.len(), 2);
    assert_all_pass(&report);
}

/// An SSA loop whose 300 phis rotate 300 values every round: hundreds of moves per round
/// in x86 for little fuel. %x(k) starts at k and after r rounds holds (k + r) mod 300, so
/// after 1,000 rounds %x0 is 100 and %x299 is (299 + 1000) mod 300 = 99.
#[test]
fn three_hundred_phis_in_a_loop_are_not_a_timeout() {
    let n = 300;
    let mut t = String::from("function %f(i32 %rounds) -> i32 {\n    local i32 %i\n    local i32 %i0\n    local i32 %i1\n");
    for k in 0..n {
        let _ = writeln!(t, "    local i32 %x{k}\n    local i32 %c{k}");
    }
    t += "b0:\n";
    for k in 0..n {
        let _ = writeln!(t, "    %c{k} = {k}");
    }
    t += "    %i0 = 0\n    jump b1\nb1:\n    %i = phi(b0: %i0, b2: %i1)\n";
    for k in 0..n {
        let _ = writeln!(t, "    %x{k} = phi(b0: %c{k}, b2: %x{})", (k + 1) % n);
    }
    t += "    br slt(%i, %rounds), b2, b3\nb2:\n    %i1 = add(%i, 1)\n    jump b1\nb3:\n";
    let _ = writeln!(t, "    ret add(mul(%x0, 1000), %x{})\n}}", n - 1);
    t += "; run: %f(1000)\n; expect: return 100099\n";
    let report = replay_text("phis.tir", &t);
    assert_all_pass(&report);
}

/// 34,000 `i64` locals need a 272,000-byte frame, more than the 256 KiB emulated stack:
/// the x86 stages cannot run, which is a limit of the harness, reported as such, not a
/// fault of the compiled code. The interpreter's result (return 0) still matches.
#[test]
fn a_frame_larger_than_the_emulated_stack_is_a_harness_limit() {
    let mut t = String::from("function %f() -> i64 {\n");
    for k in 0..34_000 {
        let _ = writeln!(t, "    local i64 %v{k}");
    }
    t += "b0:\n    %v33999 = add(%v0, %v1)\n    ret %v33999\n}\n; run: %f()\n; expect: return 0:i64\n";
    let report = replay_text("frame.tir", &t);
    let r = &report.runs[0];
    assert!(r.mismatches.is_empty() && r.problems.is_empty(), "{:?} {:?}", r.mismatches, r.problems);
    assert!(!r.limits.is_empty(), "no limit reported");
    for (stage, l) in &r.limits {
        assert!(stage.starts_with("x86"), "{stage}");
        assert!(l.contains("does not fit the 262144 byte emulated stack"), "{l}");
    }
}
