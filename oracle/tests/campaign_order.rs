//! Which finding of a signature a campaign reduces does not depend on the order in which
//! its workers finish: it is the lowest seed. The first seed is made slow (its backend
//! input waits three seconds), so with two workers the higher seeds complete first; a
//! campaign that reduced the first *completed* finding of a signature reduced one of them.
//! The planted bug holds for this whole test binary.

mod common;
use common::dce_flips_returns;
use std::sync::OnceLock;
use tandem_core::ir::Function;
use tandem_oracle::campaign;
use tandem_oracle::gen::{self, Profile};
use tandem_oracle::judge::check;

const START: u64 = 0;

/// The printed functions of the first seed's case.
static FIRST: OnceLock<Vec<String>> = OnceLock::new();

fn print(f: &Function) -> String {
    let mut s = String::new();
    tandem_core::text::printer::write_function(&mut s, f).unwrap();
    s
}

/// `dce` flips returned values; the first seed's backend input is three seconds late.
fn first_seed_slow(stage: &str, f: &mut Function) {
    if stage == "x86" && FIRST.get().is_some_and(|first| first.contains(&print(f))) {
        std::thread::sleep(std::time::Duration::from_secs(3));
    }
    dce_flips_returns(stage, f);
}

#[test]
fn the_lowest_seed_of_each_signature_is_reduced_whatever_finishes_first() {
    let g = gen::generate(START, &Profile::Small.config());
    FIRST.set(g.case.module.functions.iter().map(print).collect()).unwrap();
    check::plant_bug(Some(first_seed_slow));
    let c = common::small_campaign("order", START, 8);
    let out_dir = c.out_dir.clone();
    let s = campaign::run(&c, 2, |_| {}).unwrap();
    let groups = s.signatures();
    assert!(!groups.is_empty(), "the planted bug makes findings");
    assert!(groups.iter().any(|g| g.representative.seed == START), "the slow first seed has a finding: {:?}", s.findings);
    for g in &groups {
        let lowest = s.findings.iter().filter(|f| f.signature == g.signature || f.found_signature.as_deref() == Some(&g.signature)).map(|f| f.seed).min();
        assert_eq!(Some(g.representative.seed), lowest);
        let want = g.representative.path.with_extension("reduced.tir");
        assert_eq!(g.reduced.as_ref(), Some(&want), "[{}]: the lowest seed's case is the one reduced", g.signature);
        assert!(want.exists());
    }
    let reduced: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".reduced.tir"))
        .collect();
    let found: std::collections::BTreeSet<&str> = s.findings.iter().map(|f| f.found_signature.as_deref().unwrap_or(&f.signature)).collect();
    assert!(reduced.len() <= found.len(), "one reduction per signature found at most: {reduced:?}");
    let _ = std::fs::remove_dir_all(&out_dir);
}
