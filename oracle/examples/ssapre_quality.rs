//! What `ssapre` buys at run time: over the generated programs of a profile, the dynamic
//! count of IR work of the IR the pipeline hands the backend, with and without `ssapre`,
//! in two measures:
//!
//! * interpreter fuel: one unit per block entered and per expression node evaluated,
//!   local reads, assignments and copies included. Both pipelines end in HIR, so the
//!   temporaries' phis are paid for as the copies `ssa-destroy` turns them into;
//! * computations: evaluations of the operator nodes PRE is about (unary, binary, compare,
//!   convert, select, pure helper calls), counted as each block's operator nodes times the
//!   number of times the block ran. The counts come from a copy of the function with one
//!   extra callframe counter per block (so functions whose helpers touch the callframe,
//!   whose behaviour depends on how many variables it has, are left out of this measure);
//!   runs that trap are left out too (they stop inside a block).
//!
//! Only runs valid under the reference and under both pipelines count; every counted run
//! must agree with the reference.
//!
//! `cargo run --release -p tandem-oracle --example ssapre_quality -- [count] [profile] [ssa]`
//!
//! Environment: `SSAPRE_QUALITY_FIRST=N` starts at seed N; `SSAPRE_QUALITY_SHOW=1` names
//! the runs that did more computations with `ssapre`; `SSAPRE_QUALITY_BLOCKS=1` prints
//! each block's operator count and execution count.

use tandem_core::ir::{BinOp, CfVarData, ExprData, Function, Type};
use tandem_core::passes::{PassManager, Pipeline};
use tandem_oracle::gen::{self, Profile};
use tandem_oracle::exec::interp::{run_measured, RunInput};

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
    // The default pipeline with and without `ssapre`; `ssa` as the third argument compares
    // the SSA form instead (after `dce`, where phis cost nothing).
    let at_ssa = args.get(3).is_some_and(|s| s == "ssa");
    let (without, with) = if at_ssa {
        ("ssa,memopt,dce", "ssa,memopt,ssapre,dce")
    } else {
        ("ssa,memopt,dce,ssa-destroy,cprop", "ssa,memopt,ssapre,dce,ssa-destroy,cprop")
    };
    let (without, with) = (Pipeline::parse(without).expect("valid"), Pipeline::parse(with).expect("valid"));
    let pm = PassManager { verify: false };
    let cfg = profile.config();
    let (mut runs, mut fuel_without, mut fuel_with, mut better, mut worse) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let (mut counted, mut ops_without, mut ops_with, mut ops_better, mut ops_worse) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let first_seed: u64 = std::env::var("SSAPRE_QUALITY_FIRST").ok().map_or(0, |s| s.parse().expect("seed"));
    for seed in first_seed..first_seed + count {
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
            if let (Some(c0), Some(c1)) = (computations(&g0, &input, &o0), computations(&g1, &input, &o1)) {
                counted += 1;
                ops_without += c0;
                ops_with += c1;
                ops_better += (c1 < c0) as u64;
                ops_worse += (c1 > c0) as u64;
                if c1 > c0 && std::env::var_os("SSAPRE_QUALITY_SHOW").is_some() {
                    println!("seed {seed}: {c0} -> {c1} computations");
                }
            }
        }
    }
    let pct = |a: u64, b: u64| 100.0 * (a as f64 - b as f64) / b.max(1) as f64;
    println!("{count} seeds ({profile:?} profile), {runs} valid runs");
    println!("  interpreter fuel without ssapre: {fuel_without}");
    println!("  interpreter fuel with ssapre:    {fuel_with} ({:+.2}%)", pct(fuel_with, fuel_without));
    println!("  runs that did less work: {better}, more work: {worse}, the same: {}", runs - better - worse);
    println!("  {counted} returning runs without callframe helpers: computations without ssapre: {ops_without}");
    println!("  computations with ssapre: {ops_with} ({:+.2}%)", pct(ops_with, ops_without));
    println!("  runs with fewer computations: {ops_better}, more: {ops_worse}, the same: {}", counted - ops_better - ops_worse);
}

/// Whether a node is a computation of the kinds PRE removes.
fn is_computation(d: &ExprData) -> bool {
    match d {
        ExprData::Unary { .. } | ExprData::Binary { .. } | ExprData::Cmp { .. } | ExprData::Convert { .. } => true,
        ExprData::Select { .. } => true,
        ExprData::Call { helper, .. } => helper.effects().is_pure(),
        _ => false,
    }
}

/// The computations a run of `g` on `input` evaluated (see the module docs), or `None`
/// when the function's helpers touch the callframe or the counting copy ends otherwise.
fn computations(g: &Function, input: &RunInput, plain: &tandem_oracle::exec::outcome::Outcome) -> Option<u64> {
    let touches_callframe = g.roots().into_iter().any(|r| {
        let mut any = false;
        g.visit_postorder(r, &mut |n| {
            if let ExprData::Call { helper, .. } = &g.exprs[n] {
                let e = helper.effects();
                any |= e.reads_callframe || e.writes_callframe;
            }
        });
        any
    });
    // A trapping run stops inside its last block, which this count would take whole.
    if touches_callframe || !matches!(plain.end, tandem_oracle::exec::outcome::End::Return(_)) {
        return None;
    }
    let mut h = g.clone();
    let first = h.cfvars.len();
    let mut per_block = vec![];
    for &b in &g.layout {
        let mut ops = 0u64;
        for r in g.blocks[b].stmts.iter().copied().chain(g.blocks[b].term.expr()) {
            g.visit_postorder(r, &mut |n| ops += is_computation(&g.exprs[n]) as u64);
        }
        per_block.push(ops);
        let v = h.cfvars.push(CfVarData { name: format!("count_{b}"), ty: Type::I64 });
        let read = h.add_expr(ExprData::CfRead(v));
        let one = h.add_expr(ExprData::Const { ty: Type::I64, value: 1 });
        let sum = h.add_expr(ExprData::Binary { op: BinOp::Add, lhs: read, rhs: one });
        let write = h.add_expr(ExprData::CfWrite { var: v, value: sum });
        h.blocks[b].stmts.insert(0, write);
    }
    let mut input = input.clone();
    input.fuel = input.fuel.saturating_mul(4);
    let (Ok(o), _) = run_measured(&h, &input).ok()? else { return None };
    if o.end != plain.end {
        return None;
    }
    if std::env::var_os("SSAPRE_QUALITY_BLOCKS").is_some() {
        for ((b, ops), c) in g.layout.iter().zip(&per_block).zip(&o.callframe[first..]) {
            println!("  {b}: {ops} x {}", c.as_i64());
        }
    }
    Some(per_block.iter().zip(&o.callframe[first..]).map(|(ops, c)| ops * c.as_i64() as u64).sum())
}
