//! What the simulation check by term identity (`smt::simulate::proved_by_identity`, no Z3)
//! costs and proves, in-process, on generated seeds: the check pipeline's pairs of each
//! function, the time of the identity check on the pairs the pass changed, and how many
//! it proves, per pass.
//!
//! ```text
//! cargo run --release -p tandem-oracle --example identity_cost -- FIRST COUNT [PROFILE] [--list]
//! ```
//!
//! Prints the pipeline's and the check's time per seed, the pairs changed and proved, the
//! seeds all of whose changed pairs are proved, the slowest check, and the pairs not
//! proved per pass; with `--list`, each pair not proved (`seed pass`), for `tandem verify
//! --generated --seed N --count 1 --pass P --why`.

use std::collections::BTreeMap;
use std::time::Instant;
use tandem_oracle::gen::{self, Profile};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let first: u64 = args.get(1).expect("FIRST").parse().expect("FIRST is a number");
    let count: u64 = args.get(2).expect("COUNT").parse().expect("COUNT is a number");
    let profile = match args.get(3).map(String::as_str) {
        None | Some("default") | Some("--list") => Profile::Default,
        Some("small") => Profile::Small,
        Some("loops") => Profile::Loops,
        Some("memory") => Profile::Memory,
        Some("ssa") => Profile::Ssa,
        Some(p) => panic!("unknown profile {p}"),
    };
    let list = args.iter().any(|a| a == "--list");
    let opts = tandem_oracle::campaign::VALIDATOR_OPTIONS;
    let (mut pipeline_time, mut check_time) = (0.0, 0.0);
    let (mut changed, mut proved, mut seeds_proved) = (0, 0, 0);
    let mut slowest = (0.0f64, 0u64, String::new());
    let mut not_proved: BTreeMap<String, u32> = BTreeMap::new();
    for seed in first..first + count {
        let g = gen::generate(seed, &profile.config());
        let mut all = true;
        for f in &g.case.module.functions {
            let Some(pipeline) = tandem_oracle::judge::passcheck::replay_pipeline(f) else { continue };
            let t = Instant::now();
            let pairs = tandem_oracle::smt::isolate::pass_pairs(f, &pipeline).expect("the check pipeline runs");
            pipeline_time += t.elapsed().as_secs_f64();
            for (pass, before, after) in pairs.into_iter().filter(|(_, b, a)| b != a) {
                changed += 1;
                let t = Instant::now();
                let ok = tandem_oracle::smt::simulate::proved_by_identity(&before, &after, &opts);
                let took = t.elapsed().as_secs_f64();
                check_time += took;
                if took > slowest.0 {
                    slowest = (took, seed, pass.clone());
                }
                if ok {
                    proved += 1;
                } else {
                    all = false;
                    *not_proved.entry(pass.clone()).or_default() += 1;
                    if list {
                        println!("{seed} {pass}");
                    }
                }
            }
        }
        seeds_proved += all as u32;
    }
    let per_seed = |s: f64| s * 1e3 / count as f64;
    println!(
        "{count} seeds: pipeline {:.2} ms/seed, identity check {:.2} ms/seed; {changed} changed pairs, {proved} proved by identity; {seeds_proved} seeds with every changed pair proved; slowest {:.1} ms (seed {} {})",
        per_seed(pipeline_time),
        per_seed(check_time),
        slowest.0 * 1e3,
        slowest.1,
        slowest.2
    );
    println!("not proved by identity, per pass: {not_proved:?}");
}
