//! Every stage a seed goes through is bounded, and a campaign always ends: a compiled loop
//! that calls a helper on every iteration is a timeout on both x86 machines (the CPU
//! runner used to allow it 50 µs per call, so it never ended and its trace grew without
//! end); a seed stuck in a pass stops the campaign through the watchdog as a `hang`
//! finding; and SIGTERM ends a campaign whose seed is stuck within a few seconds, with its
//! summary and state. The planted bug (a `dce` that never returns) holds for this whole
//! test binary, so only these tests live here.

mod common;
mod machine;

use machine::{func, input};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tandem_core::ir::Function;
use tandem_oracle::campaign::{self, Campaign};
use tandem_oracle::exec::emu::Finding;
use tandem_oracle::exec::outcome::Value;
use tandem_oracle::exec::x86::{X86Mode, X86};
use tandem_oracle::judge::diff::Verdict;
use tandem_oracle::judge::check;

/// `dce` never returns: the compiler under test hangs.
fn dce_hangs(stage: &str, _f: &mut Function) {
    if stage == "dce" {
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

fn config(name: &str) -> Campaign {
    common::small_campaign(&format!("runaway-{name}"), 0, 20)
}

/// An endless loop that calls an observable helper: both machines stop it at the budget
/// (Unicorn counts instructions; the CPU runner counts the calls, each at least one
/// instruction) and agree that it is a timeout. Run in a thread, so that a runner that
/// never ends fails the test instead of hanging it.
#[test]
fn an_endless_loop_of_helper_calls_is_a_timeout_on_every_machine() {
    let src = "helper @log(i32, i32) -> void effects(observable)\n\nfunction %f(i32 %a) -> i32 {\n    local i32 %i\nb0:\n    jump b1\nb1:\n    call @log(%i, %a)\n    %i = add(%i, 1)\n    jump b1\n}\n";
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let f = func(src);
        let code = tandem_core::backend::compile(&f).expect("the loop compiles");
        let mut x86 = X86::new(None).expect("the x86 machines");
        let started = Instant::now();
        let run = x86.run_with_budget(&code, &f, &input(vec![Value::I32(7)]), 200_000).expect("the machines run");
        let _ = tx.send((run.result, run.infidelity.map(|i| i.differences), started.elapsed()));
    });
    let (result, infidelity, took) = rx.recv_timeout(Duration::from_secs(120)).expect("the run ended within two minutes");
    assert!(matches!(result, Err(Finding::Timeout { .. } | Finding::CpuTimeout { .. })), "{result:?}");
    assert_eq!(infidelity, None, "both machines call it a timeout");
    eprintln!("the endless loop was stopped after {took:?}");
}

/// A compiled loop that calls an observable helper forever, where the reference run of
/// the same input returned after three calls: each machine stops the run at its fourth
/// event (its trace then differs from the reference's whatever it does next), so the
/// trace never grows with the instruction budget, and the verdict names the first event
/// that differs, as the outcomes' comparison does: a wrong outcome, never a pass. (It
/// used to run to the budget, a timeout, holding one event per iteration: 1.2 GB for
/// one planted `dce` slip.)
#[test]
fn a_run_whose_trace_outgrows_the_reference_stops_there_as_a_wrong_outcome() {
    let endless = "helper @log(i32, i32) -> void effects(observable)\n\nfunction %f(i32 %a) -> i32 {\n    local i32 %i\nb0:\n    jump b1\nb1:\n    call @log(%i, %a)\n    %i = add(%i, 1)\n    jump b1\n}\n";
    let three = "helper @log(i32, i32) -> void effects(observable)\n\nfunction %f(i32 %a) -> i32 {\n    local i32 %i\nb0:\n    jump b1\nb1:\n    call @log(%i, %a)\n    %i = add(%i, 1)\n    br slt(%i, 3), b1, b2\nb2:\n    ret 0\n}\n";
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (f, g) = (func(endless), func(three));
        let run = input(vec![Value::I32(7)]);
        let (expected, fuel) = tandem_oracle::exec::interp::run_measured(&g, &run).expect("the input fits");
        let expected = expected.expect("the reference returns");
        assert_eq!(expected.trace.len(), 3);
        let code = tandem_core::backend::compile(&f).expect("the loop compiles");
        // A budget far above what three calls take: the run stops at the trace, not here.
        let fuel = fuel.max(1_000_000);
        let mut verdicts = vec![];
        for mode in [X86Mode::Unicorn, X86Mode::Native] {
            if mode == X86Mode::Native && tandem_oracle::exec::native::available().is_err() {
                continue;
            }
            let mut x86 = X86::new(Some(mode)).expect("the x86 machine");
            let v = tandem_oracle::judge::diff::check_against(expected.clone(), fuel, &f, &run, &code, &mut x86).expect("the machine runs");
            verdicts.push((mode, v));
        }
        let _ = tx.send(verdicts);
    });
    let verdicts = rx.recv_timeout(Duration::from_secs(120)).expect("the runs ended within two minutes");
    for (mode, v) in verdicts {
        let Verdict::Finding { finding, .. } = &v else { panic!("{mode}: {v}") };
        assert_eq!(
            finding,
            &Finding::TraceBeyondReference { first_difference: "trace event 3: expected nothing, got @log(3, 7)".into(), reference_len: 3 },
            "{mode}"
        );
        let problem = check::Problem { stage: "x86 after ssa,dce".into(), lines: finding.to_string().lines().map(str::to_string).collect(), side_by_side: None };
        assert_eq!(tandem_oracle::campaign::findings::signature(&problem), "x86: wrong outcome", "{mode}: {finding}");
    }
}

/// A seed stuck in a pass: the watchdog records it as a `hang` finding of that pass and
/// stops the campaign (its thread cannot be stopped), which ends with its summary and a
/// state that `--resume` continues.
#[test]
fn the_watchdog_makes_a_hung_pass_a_finding_and_ends_the_campaign() {
    check::plant_bug(Some(dce_hangs));
    campaign::set_seed_watchdog(Duration::from_secs(2));
    let c = config("watchdog");
    let started = Instant::now();
    let s = campaign::run(&c, 1, |_| {}).expect("the campaign ends");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(60), "the campaign took {took:?}");
    assert_eq!(s.findings.len(), 1, "{:?}", s.findings);
    let f = &s.findings[0];
    assert_eq!((f.seed, f.signature.as_str()), (0, "pass dce: hang"), "{f:?}");
    assert!(f.reduced.is_none(), "a hang is not reduced");
    let text = std::fs::read_to_string(&f.path).expect("the finding file");
    assert!(text.contains("the compiler under test did not finish"), "{text}");
    assert_eq!(s.stopped.len(), 1, "{:?}", s.stopped);
    assert!(s.stopped[0].contains("seed 0") && s.stopped[0].contains("pass dce"), "{:?}", s.stopped);
    let state: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(c.out_dir.join(campaign::STATE_FILE)).unwrap()).unwrap();
    assert_eq!(state["finished"], false);
    assert_eq!(state["cases"], 1, "the hung seed is completed: a resume goes on after it");
    let _ = std::fs::remove_dir_all(&c.out_dir);
}

/// The child of [`sigterm_ends_a_campaign_whose_seed_hangs`]: a campaign whose first seed
/// hangs in `dce`, with the handlers of `tandem fuzz`; prints what the summary says.
#[test]
#[ignore = "run by sigterm_ends_a_campaign_whose_seed_hangs"]
fn child_hung_campaign() {
    campaign::interrupt::install();
    check::plant_bug(Some(dce_hangs));
    let mut c = config("unused");
    c.out_dir = PathBuf::from(std::env::var("TANDEM_HANG_DIR").expect("run by the parent test"));
    let s = campaign::run(&c, 1, |_| {}).expect("the campaign ends");
    println!("interrupted: {:?}", s.interrupted);
    for a in &s.abandoned {
        println!("abandoned: {a}");
    }
}

#[test]
fn sigterm_ends_a_campaign_whose_seed_hangs() {
    let dir = std::env::temp_dir().join(format!("tandem-test-runaway-sigterm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_hung_campaign", "--ignored", "--test-threads", "1", "--nocapture"])
        .env("TANDEM_HANG_DIR", &dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The state file is written before the first seed; then the seed is under way.
    let started = Instant::now();
    while !dir.join(campaign::STATE_FILE).exists() {
        assert!(started.elapsed() < Duration::from_secs(60), "the campaign did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: a plain kill(2) of our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let sent = Instant::now();
    while child.try_wait().unwrap().is_none() && sent.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let ended = child.try_wait().unwrap().is_some();
    if !ended {
        child.kill().unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let took = sent.elapsed();
    assert!(ended && took < Duration::from_secs(15), "SIGTERM took {took:?} to end the campaign (ended: {ended})");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("interrupted: Some({})", libc::SIGTERM)), "{stdout}");
    assert!(stdout.contains("abandoned: seed 0 (profile small)") && stdout.contains("pass dce"), "{stdout}");
    let state: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join(campaign::STATE_FILE)).unwrap()).unwrap();
    assert_eq!(state["finished"], false);
    assert_eq!(state["cases"], 0, "the abandoned seed is not completed: a resume tests it");
    let _ = std::fs::remove_dir_all(&dir);
}
