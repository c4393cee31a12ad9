//! Campaigns on real findings: bugs planted in a pass or in the backend's input
//! ([`check::plant_bug`]) must be found, grouped under one signature, reduced to a few
//! statements, and every finding file must replay as a failure. One test, in phases,
//! because a planted bug holds for the whole process.

mod common;
use common::dce_flips_returns;
use tandem_core::ir::{ExprData, Function, MemWidth, Phi};
use tandem_oracle::campaign::{self, Campaign, Summary};
use tandem_oracle::judge::check::{self, PlantedBug};
use tandem_oracle::exec::emu::Emulator;
use tandem_oracle::campaign::reduce::statement_count;
use tandem_oracle::campaign::replay;

/// `ssa-destroy` leaves a phi behind: the verifier rejects its output (a multi-line
/// error message).
fn ssa_destroy_leaves_a_phi(stage: &str, f: &mut Function) {
    if stage != "ssa-destroy" {
        return;
    }
    let b = *f.layout.last().unwrap();
    let dest = f.params.first().copied().unwrap_or_else(|| f.new_local("planted", f.ret));
    f.blocks[b].phis.push(Phi { dest, args: vec![] });
}

/// The backend's input stores to address 0 first: the x86 code faults.
fn backend_stores_to_null(stage: &str, f: &mut Function) {
    if stage != "x86" {
        return;
    }
    let addr = f.add_expr(ExprData::Const { ty: tandem_core::ir::Type::I32, value: 0 });
    let value = f.add_expr(ExprData::Const { ty: tandem_core::ir::Type::I32, value: 0 });
    let store = f.add_expr(ExprData::Store { width: MemWidth::W32, addr, value });
    let entry = f.entry();
    f.blocks[entry].stmts.insert(0, store);
}

fn campaign_with(bug: PlantedBug, name: &str, count: u64) -> (Campaign, Summary) {
    check::plant_bug(Some(bug));
    let c = common::small_campaign(&format!("planted-{name}"), 0, count);
    let s = campaign::run(&c, 2, |_| {}).unwrap();
    (c, s)
}

/// Replays `path` as `tandem run` does; returns the problems of every run as text.
fn replay_fails(path: &std::path::Path, emu: &mut Emulator) -> Vec<String> {
    let report = replay::replay_file(path, false, emu).unwrap_or_else(|e| panic!("{e}"));
    assert!(!report.passed(), "{} replays as a pass", path.display());
    report.runs.iter().flat_map(|r| r.problems.iter().map(|p| format!("{}: {}", p.stage, p.lines.join("\n")))).collect()
}

#[test]
fn planted_bugs_are_found_grouped_reduced_and_replayed() {
    let mut emu = Emulator::new().unwrap();
    let kinds: [(PlantedBug, &str, &str); 3] = [
        (dce_flips_returns, "difference", "pass dce: wrong outcome"),
        (ssa_destroy_leaves_a_phi, "verifier", "pass ssa-destroy: verifier error"),
        (backend_stores_to_null, "fault", "x86: emulator fault"),
    ];
    for (bug, name, want) in kinds {
        let (c, s) = campaign_with(bug, name, 8);
        assert!(!s.findings.is_empty(), "{name}: no finding");
        let groups = s.signatures();
        assert_eq!(groups.len(), 1, "{name}: {:?}", groups.iter().map(|g| &g.signature).collect::<Vec<_>>());
        assert_eq!(groups[0].signature, want);
        assert_eq!(groups[0].count, s.findings.len() as u64);
        // Every finding file parses and replays as a failure, twice with the same verdict.
        for f in &s.findings {
            assert!(f.path.starts_with(&c.out_dir));
            let first = replay_fails(&f.path, &mut emu);
            assert_eq!(first, replay_fails(&f.path, &mut emu), "{name}: {}", f.path.display());
        }
        // The representative's reduced case: small, the same signature, a failure too.
        let reduced = groups[0].reduced.clone().unwrap_or_else(|| panic!("{name}: not reduced"));
        let case = replay::load(&reduced).unwrap_or_else(|e| panic!("{e}"));
        let n = statement_count(&case.module);
        assert!(n <= 10, "{name}: {n} statements:\n{}", std::fs::read_to_string(&reduced).unwrap());
        let report = replay::replay_file(&reduced, false, &mut emu).unwrap();
        assert!(report.runs.iter().all(|r| r.mismatches.is_empty()), "{name}: the expectation is the reference's");
        let sig = report.runs.iter().find_map(|r| r.problems.first()).map(campaign::signature);
        assert_eq!(sig.as_deref(), Some(want));
    }
    check::plant_bug(None);
}
