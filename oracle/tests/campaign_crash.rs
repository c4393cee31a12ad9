//! A panic no stage catches as its own (here, in the harness's preparation of the
//! backend's input) is a `crash` finding of its seed, named with the seed, the profile,
//! the stage and whose bug it is, and the campaign goes on: it used to end with "a scoped
//! thread panicked" and no seed. The planted bug holds for this whole test binary.

mod common;
use tandem_core::ir::Function;
use tandem_oracle::campaign;
use tandem_oracle::judge::check;

/// Panics where the harness hands the backend its unoptimized input (outside every
/// stage that catches a pass's or the backend's panic).
fn backend_input_panics(stage: &str, _f: &mut Function) {
    if stage == "x86" {
        panic!("planted panic before the backend");
    }
}

#[test]
fn a_panic_in_a_worker_is_a_crash_finding_of_its_seed_and_the_campaign_goes_on() {
    check::plant_bug(Some(backend_input_panics));
    let c = common::small_campaign("crash", 40, 4);
    let out_dir = c.out_dir.clone();
    let s = campaign::run(&c, 2, |_| {}).expect("the campaign ends normally");
    assert_eq!(s.cases, 4, "every seed is completed");
    assert_eq!(s.findings.iter().map(|f| f.seed).collect::<Vec<_>>(), vec![40, 41, 42, 43]);
    let groups = s.signatures();
    assert_eq!(groups.len(), 1, "one planted panic, one signature: {:?}", groups.iter().map(|g| &g.signature).collect::<Vec<_>>());
    assert!(groups[0].signature.ends_with(": crash") && groups[0].signature.starts_with("harness "), "{}", groups[0].signature);
    for f in &s.findings {
        assert!(f.reduced.is_none(), "a crash is not reduced");
        let text = std::fs::read_to_string(&f.path).expect("the finding file");
        assert!(text.contains("planted panic before the backend"), "{text}");
        // The planted bug is in this test file, not in `core`: the harness's bug.
        assert!(text.contains("a harness bug"), "{text}");
        assert!(text.contains("campaign_crash.rs"), "the panic's place: {text}");
        // The case itself follows, so `tandem run` replays it.
        tandem_oracle::campaign::replay::load(&f.path).expect("a case file");
    }
    let state: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out_dir.join(campaign::STATE_FILE)).unwrap()).unwrap();
    assert_eq!(state["finished"], true);
    let _ = std::fs::remove_dir_all(&out_dir);
}
