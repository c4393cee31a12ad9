//! What `memopt` is for, measured: how many callframe reads and writes and heap loads and
//! stores the code executes, without and with the pass, over the runs of generated
//! programs.
//!
//! ```text
//! cargo run --release -p tandem-oracle --example memopt_counts -- [COUNT] [PROFILE]
//! ```
//!
//! For each seed `0..COUNT` (default 500) of the profile (default `default`), the function
//! goes through `ssa,dce,ssa-destroy,cprop` and through `ssa,memopt,dce,ssa-destroy,cprop`.
//! The result of each is instrumented after the passes: every `cfread`, `cfwrite`, load and
//! store `x` becomes `comma(call @log(MARK, kind), x)` (a `log` touches no memory, so the
//! accesses themselves are unchanged), and the interpreter runs it on the case's inputs;
//! the marked events of the trace are the dynamic counts. The backend emits one memory
//! instruction per access, so these are the counts of the x86 code's callframe and heap
//! accesses as well (spills aside). Runs whose reference is invalid are skipped; the two
//! results must end the same way or the program stops.

use tandem_core::helpers::HelperKind;
use tandem_core::ir::{ExprData, Function, Type};
use tandem_core::passes::{PassManager, Pipeline};
use tandem_oracle::gen::{self, Profile};
use tandem_oracle::exec::interp;
use tandem_oracle::exec::outcome::Value;

const MARK: i64 = 0x3E50_7A11;
const KINDS: [&str; 4] = ["cfread", "cfwrite", "heap load", "heap store"];

fn instrument(f: &mut Function) {
    let mut nodes = vec![];
    for r in f.roots() {
        f.visit_postorder(r, &mut |n| nodes.push(n));
    }
    for n in nodes {
        let kind = match f.exprs[n] {
            ExprData::CfRead(_) => 0,
            ExprData::CfWrite { .. } => 1,
            ExprData::Load { .. } => 2,
            ExprData::Store { .. } => 3,
            _ => continue,
        };
        let moved = f.add_expr(f.exprs[n].clone());
        let a = f.add_expr(ExprData::Const { ty: Type::I32, value: MARK });
        let b = f.add_expr(ExprData::Const { ty: Type::I32, value: kind });
        let call = f.add_expr(ExprData::Call { helper: HelperKind::Log, args: vec![a, b] });
        f.exprs[n] = ExprData::Comma { first: call, second: moved };
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let count: u64 = args.get(1).map_or(500, |s| s.parse().expect("COUNT is a number"));
    let profile = match args.get(2).map(String::as_str) {
        None | Some("default") => Profile::Default,
        Some("small") => Profile::Small,
        Some("loops") => Profile::Loops,
        Some("memory") => Profile::Memory,
        Some(p) => panic!("unknown profile {p}"),
    };
    let cfg = profile.config();
    let base = Pipeline::parse("ssa,dce,ssa-destroy,cprop").expect("valid");
    let with = Pipeline::parse("ssa,memopt,dce,ssa-destroy,cprop").expect("valid");
    let pm = PassManager { verify: false };
    let mut totals = [[0u64; 4]; 2];
    let mut runs = 0u64;
    for seed in 0..count {
        let case = gen::generate(seed, &cfg).case;
        let f = &case.module.functions[0];
        let mut outs = vec![];
        for p in [&base, &with] {
            let mut g = f.clone();
            pm.run(p, &mut g, &mut |_, _, _| {}).expect("the pipeline runs");
            instrument(&mut g);
            outs.push(g);
        }
        for r in &case.runs {
            let input = r.input(f).expect("a valid input");
            let Ok(Ok(_)) = interp::run(f, &input) else { continue };
            let mut ends = vec![];
            for (i, g) in outs.iter().enumerate() {
                let mut inp = input.clone();
                inp.fuel *= 8;
                let out = interp::run(g, &inp).expect("runs").expect("valid after the passes");
                for e in &out.trace {
                    if e.helper == HelperKind::Log && e.args.first() == Some(&Value::I32(MARK as i32)) {
                        if let Some(Value::I32(k)) = e.args.get(1) {
                            totals[i][*k as usize] += 1;
                        }
                    }
                }
                ends.push(out.end);
            }
            assert_eq!(ends[0], ends[1], "seed {seed}: the two pipelines end differently");
            runs += 1;
        }
    }
    println!("{count} {} programs, {runs} valid runs: dynamic accesses without / with memopt", profile.name());
    let mut sum = [0u64; 2];
    for k in 0..4 {
        let (a, b) = (totals[0][k], totals[1][k]);
        sum[0] += a;
        sum[1] += b;
        println!("  {:<11} {:>10} {:>10}  ({:.1}% removed)", KINDS[k], a, b, 100.0 * (a as f64 - b as f64) / (a.max(1) as f64));
    }
    let (a, b) = (sum[0], sum[1]);
    println!("  {:<11} {:>10} {:>10}  ({:.1}% removed)", "all", a, b, 100.0 * (a as f64 - b as f64) / (a.max(1) as f64));
}
