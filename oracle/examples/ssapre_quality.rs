//! What `ssapre` buys at run time: over the generated programs of a profile, the dynamic
//! count of IR work (interpreter fuel: one unit per block entered and per expression node
//! evaluated) of the IR the pipeline hands the backend, with and without `ssapre`. Both
//! pipelines end in HIR, so the temporaries' phis are paid for as the copies `ssa-destroy`
//! turns them into. Only runs valid under the reference and under both pipelines count;
//! every counted run must agree with the reference.
//!
//! `cargo run --release -p tandem-oracle --example ssapre_quality -- [count] [profile] [ssa]`

use tandem_core::passes::{PassManager, Pipeline};
use tandem_oracle::gen::{self, Profile};
use tandem_oracle::interp::{run_measured, RunInput};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let count: u64 = args.get(1).map_or(1000, |s| s.parse().expect("count"));
    let profile = match args.get(2).map(String::as_str).unwrap_or("default") {
        "small" => Profile::Small,
        "default" => Profile::Default,
        "loops" => Profile::Loops,
        "memory" => Profile::Memory,
        p => panic!("unknown profile {p}"),
    };
    // `ssa` as the third argument compares the SSA form instead (after `dce`, phis free).
    let at_ssa = args.get(3).is_some_and(|s| s == "ssa");
    let (without, with) = if at_ssa { ("ssa,dce", "ssa,ssapre,dce") } else { ("ssa,dce,ssa-destroy,cprop", "ssa,ssapre,dce,ssa-destroy,cprop") };
    let (without, with) = (Pipeline::parse(without).expect("valid"), Pipeline::parse(with).expect("valid"));
    let pm = PassManager { verify: false };
    let cfg = profile.config();
    let (mut runs, mut fuel_without, mut fuel_with, mut better, mut worse) = (0u64, 0u64, 0u64, 0u64, 0u64);
    for seed in 0..count {
        let case = gen::generate(seed, &cfg).case;
        let f = &case.module.functions[0];
        let compile = |p: &Pipeline| {
            let mut g = f.clone();
            pm.run(p, &mut g, &mut |_, _, _| {}).expect("the pipeline runs");
            g
        };
        let (g0, g1) = (compile(&without), compile(&with));
        for r in &case.runs {
            let input: RunInput = r.input(f).expect("generated inputs fit");
            let (Ok(reference), _) = run_measured(f, &input).expect("fits") else { continue };
            let (Ok(o0), u0) = run_measured(&g0, &input).expect("fits") else { continue };
            let (Ok(o1), u1) = run_measured(&g1, &input).expect("fits") else { continue };
            assert!(reference.diff(&o0).is_empty() && reference.diff(&o1).is_empty(), "seed {seed} disagrees");
            runs += 1;
            fuel_without += u0;
            fuel_with += u1;
            better += (u1 < u0) as u64;
            worse += (u1 > u0) as u64;
        }
    }
    let pct = |a: u64, b: u64| 100.0 * (a as f64 - b as f64) / b.max(1) as f64;
    println!("{count} seeds ({profile:?} profile), {runs} valid runs");
    println!("  interpreter fuel without ssapre: {fuel_without}");
    println!("  interpreter fuel with ssapre:    {fuel_with} ({:+.2}%)", pct(fuel_with, fuel_without));
    println!("  runs that did less work: {better}, more work: {worse}, the same: {}", runs - better - worse);
}
