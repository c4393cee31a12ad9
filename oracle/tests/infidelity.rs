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

/// The planted change is process-wide: the tests of this file take turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

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
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
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

/// The held-out check of issue 21: a backend bug planted in the machine code that only
/// misbehaves on a flag the manual leaves undefined. The backend compares the product of
/// an `imul` with 0 before branching on ZF; the planted bug drops that compare, so the
/// branch reads imul's ZF, which the manual leaves undefined. Unicorn 2.1.5 computes ZF
/// from the product, so with Unicorn alone the bug is invisible (every run agrees); the
/// static flags check names the branch; and on a CPU whose imul leaves ZF otherwise (the
/// AMD Zen of this machine clears it), the CPU's run disagrees with the interpreter, an
/// infidelity whose CPU verdict is the compiler finding.
#[test]
fn a_backend_bug_hidden_by_unicorns_flags_is_caught_by_the_flags_check_and_the_cpu() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    use iced_x86::{Decoder, DecoderOptions, Mnemonic};
    use tandem_core::abi::CODE_BASE;
    use tandem_oracle::exec::interp::{RunInput, DEFAULT_FUEL};
    use tandem_oracle::judge::diff::{check, Verdict};
    let src = "function %mul_br(i32 %a, i32 %b) -> i32 {\nb0:\n    br eq(mul(%a, %b), 0), b1, b2\nb1:\n    ret 1\nb2:\n    ret 0\n}\n";
    let f = tandem_core::text::parse_module(src).unwrap().0.functions.remove(0);
    let mut code = tandem_core::backend::compile_validated(&f).unwrap();
    let mut d = Decoder::with_ip(32, &code.bytes, CODE_BASE as u64, DecoderOptions::NONE);
    let insns: Vec<_> = std::iter::from_fn(|| d.can_decode().then(|| d.decode())).collect();
    let k = insns.iter().position(|i| i.mnemonic() == Mnemonic::Imul).expect("an imul");
    let compare = &insns[k + 1];
    assert!(matches!(compare.mnemonic(), Mnemonic::Cmp | Mnemonic::Test), "{:?}", compare.mnemonic());
    let at = (compare.ip() as u32 - CODE_BASE) as usize;
    code.bytes[at..at + compare.len()].fill(0x90); // the planted bug: the compare is gone
    let err = tandem_core::backend::flags_check::check(&code).unwrap_err();
    assert!(err.len() == 1 && err[0].to_string().contains("reads ZF while undefined"), "{err:?}");

    let mut unicorn = X86::new(Some(X86Mode::Unicorn)).unwrap();
    let mut both = native::available().is_ok().then(|| X86::new(Some(X86Mode::Both)).unwrap());
    let mut caught_by_cpu = 0;
    // Products that are 0 (the branch must be taken: return 1) and some that are not.
    for (a, b) in [(65536, 65536), (0, 7), (7, 0), (-65536, 65536), (3, 5), (-1, -1)] {
        let input = RunInput { args: vec![Value::I32(a), Value::I32(b)], heap: vec![], callframe: vec![], fuel: DEFAULT_FUEL };
        let v = check(&f, &input, &code, &mut unicorn).unwrap();
        assert!(matches!(v, Verdict::Agree(_)), "Unicorn 2.1.5 defines imul's ZF from the product: {v}");
        let Some(both) = both.as_mut() else { continue };
        match check(&f, &input, &code, both).unwrap() {
            Verdict::Agree(_) => {}
            Verdict::Infidelity { infidelity, cpu } => {
                assert!(matches!(*cpu, Verdict::Disagree { .. }), "the CPU's run is the finding: {cpu}");
                assert!(infidelity.trace.contains("imul"), "{}", infidelity.trace);
                caught_by_cpu += 1;
            }
            other => panic!("unexpected verdict {other}"),
        }
    }
    eprintln!("the CPU caught the planted bug on {caught_by_cpu} of 6 inputs");
}
