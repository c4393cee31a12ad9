//! The `emulator infidelity` verdict: when Unicorn and the CPU disagree on a run, the
//! disagreement is reported on its own, never as a compiler finding, and the CPU's result
//! is the one judged against the interpreter. The disagreement is planted in Unicorn's
//! results through the test hook (no flag bug of Unicorn 2.1.5 is relied on: see
//! ARCHITECTURE.md), so the test means the same on every CPU that runs 32-bit code.

use std::path::PathBuf;
use tandem_oracle::campaign::replay::replay_file;
use tandem_oracle::exec::native;
use tandem_oracle::exec::outcome::{End, Value};
use tandem_oracle::exec::x86::{plant_infidelity, MachineRun, X86Mode, X86};

/// Unicorn's result made wrong: a returned value off by one.
fn off_by_one(r: &mut MachineRun) {
    if let Ok(o) = r {
        if let End::Return(Value::I32(v)) = o.end {
            o.end = End::Return(Value::I32(v.wrapping_add(1)));
        }
    }
}

#[test]
fn unicorn_and_the_cpu_disagreeing_is_an_infidelity_not_a_finding() {
    if let Err(why) = native::available() {
        eprintln!("skipped: this machine cannot run 32-bit code natively ({why})");
        return;
    }
    let dir = std::env::temp_dir().join(format!("tandem-infidelity-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path: PathBuf = dir.join("add.tir");
    // 40 + 2 = 42, worked out by hand.
    std::fs::write(&path, "function %f(i32 %a) -> i32 {\nb0:\n    ret add(%a, 2)\n}\n; run: %f(40)\n; expect: return 42\n").unwrap();

    let mut both = X86::new(Some(X86Mode::Both)).unwrap();
    let clean = replay_file(&path, false, &mut both).unwrap();
    assert!(clean.runs[0].passed() && clean.runs[0].infidelities.is_empty(), "{:?}", clean.runs[0]);

    plant_infidelity(Some(off_by_one));
    let report = replay_file(&path, false, &mut both);
    let unicorn_alone = replay_file(&path, false, &mut X86::new(Some(X86Mode::Unicorn)).unwrap());
    plant_infidelity(None);
    let run = &report.unwrap().runs[0];
    // The CPU's result agrees with the interpreter: no problem, no compiler finding.
    assert!(run.problems.is_empty(), "{:?}", run.problems);
    assert!(run.passed());
    assert!(!run.infidelities.is_empty());
    let (stage, i) = &run.infidelities[0];
    assert_eq!(stage, "x86");
    assert_eq!(i.differences, vec!["end: Unicorn return 43, the CPU return 42".to_string()]);
    // The planted change is in the result only: the instruction traces agree, and the
    // report says so rather than inventing a divergence.
    assert!(i.trace.contains("registers equal at every step"), "{}", i.trace);
    // With Unicorn alone the same wrong value is a compiler finding (the emulator is the
    // only witness): the comparison was not weakened, only the witness changed.
    let u = &unicorn_alone.unwrap().runs[0];
    assert!(!u.problems.is_empty() && u.infidelities.is_empty());
}
