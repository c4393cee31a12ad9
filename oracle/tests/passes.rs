//! The passes judged by the reference interpreter: the inputs of the core file tests,
//! programs of the project's generator (`tandem_oracle::gen`) and the corpus keep their
//! outcomes after every pass of `ssa,dce,ssa-destroy,cprop`; a broken step is caught and
//! named; constant folding agrees with the interpreter's arithmetic; every kind of tree
//! move fires; and `ssa-destroy` stays correct after SSA copy propagation.

use std::path::PathBuf;
use tandem_core::ir::{BinOp, ExprData, Function, Terminator, Type};
use tandem_core::passes::{check_pipeline, default_pipeline, fold, Form, PassManager, Pipeline, Stats};
use tandem_oracle::cases::casefile::CaseFile;
use tandem_oracle::gen::{self, Config, Profile, Source};
use tandem_oracle::exec::interp::{self, RunInput};
use tandem_oracle::exec::outcome::{End, Value};
use tandem_oracle::judge::passcheck::{check_function, check_with, replay_pipeline, Verdict};

mod machine;
use machine::{input};

/// Argument vectors for a function: a few values per parameter type.
fn arg_sets(f: &Function) -> Vec<Vec<Value>> {
    let picks: [i64; 6] = [0, 1, -1, 3, 5, 100];
    (0..picks.len())
        .map(|k| {
            f.params
                .iter()
                .enumerate()
                .map(|(i, &p)| Value::new(f.locals[p].ty, picks[(k + i) % picks.len()]))
                .collect()
        })
        .collect()
}

fn assert_agrees(f: &Function, inp: &RunInput, pipeline: &Pipeline, what: &str) -> Vec<(&'static str, Stats)> {
    let c = check_function(f, inp, pipeline).unwrap_or_else(|e| panic!("{what}: {e}"));
    if let Verdict::Mismatch { ir, .. } = &c.verdict {
        panic!("{what}: {}\n{f}\n--- after\n{ir}", c.verdict.problems().join("\n"));
    }
    assert!(c.verdict.is_ok(), "{what}: {}", c.verdict.problems().join("\n"));
    c.stats
}

#[test]
fn filetest_inputs_keep_their_outcomes() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../core/tests/filetests");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let path = e.path();
        let src = std::fs::read_to_string(&path).unwrap();
        let (head, _) = src.split_once("; ---- expect").unwrap();
        let list = head.lines().find_map(|l| l.strip_prefix("; pipeline:")).unwrap().trim();
        let start = if head.lines().any(|l| l.trim() == "; input: ssa") { Form::Ssa } else { Form::Hir };
        let pipeline = Pipeline::parse_from(start, list).unwrap();
        let (m, _) = tandem_core::text::parse_module(head).unwrap();
        for f in &m.functions {
            for args in arg_sets(f) {
                assert_agrees(f, &input(args), &pipeline, &path.display().to_string());
                n += 1;
            }
        }
    }
    assert!(n > 50);
}

/// The swap and lost-copy examples give the values worked out by hand, before and
/// after `ssa-destroy`.
#[test]
fn swap_and_lost_copy_values() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../core/tests/filetests");
    let load = |name: &str| {
        let src = std::fs::read_to_string(dir.join(name)).unwrap();
        let (head, _) = src.split_once("; ---- expect").unwrap();
        tandem_core::text::parse_module(head).unwrap().0.functions.remove(0)
    };
    let pipeline = Pipeline::parse_from(Form::Ssa, "ssa-destroy").unwrap();
    let cases = [
        ("destroy-swap.tir", vec![1, 2, 3], 21),
        ("destroy-swap.tir", vec![1, 2, 2], 12),
        ("destroy-swap.tir", vec![7, 4, 0], 74),
        ("destroy-lost-copy.tir", vec![5], 4),
        ("destroy-lost-copy.tir", vec![1], 1),
        ("destroy-branch-same-target.tir", vec![0], 3),
        ("destroy-branch-same-target.tir", vec![-4], 3),
    ];
    for (file, args, want) in cases {
        let f = load(file);
        let mut g = f.clone();
        PassManager { verify: true }.run(&pipeline, &mut g, &mut |_, _, _| {}).unwrap();
        for h in [&f, &g] {
            let args: Vec<Value> = args.iter().map(|&a| Value::new(Type::I32, a)).collect();
            let o = interp::run(h, &input(args)).unwrap().unwrap();
            assert_eq!(o.end, End::Return(Value::new(Type::I32, want)), "{file} {h}");
        }
    }
}

const TREE_MOVES: [&str; 9] = [
    "tm_safe",
    "tm_unsafe_accepted",
    "tm_unsafe_rejected_x",
    "tm_indirect",
    "tm_linked_rejected",
    "tm_forwarded",
    "tm_forward_rejected",
    "tm_killed",
    "tm_cancelled",
];

/// The generated case of `seed` (small profile: quick to check, and small enough that a
/// failing seed is easy to read): its function and the inputs of its runs.
fn generated(seed: u64) -> (Function, Vec<RunInput>) {
    generated_with(seed, &Profile::Small.config())
}

fn generated_with(seed: u64, cfg: &Config) -> (Function, Vec<RunInput>) {
    let g = gen::generate(seed, cfg);
    let f = g.case.module.functions[0].clone();
    let inputs = g.case.runs.iter().map(|r| r.input(&f).unwrap_or_else(|e| panic!("seed {seed}: {e}"))).collect();
    (f, inputs)
}

/// Runs the per-pass check on the generated cases of `seeds` (every run of each case),
/// and returns the summed statistics of every pass (counted once per case), the number
/// of compared runs and the number of programs.
fn random_campaign(seeds: std::ops::Range<u64>, pipeline: &Pipeline) -> (Vec<(&'static str, Stats)>, usize, usize) {
    let mut totals: Vec<(&'static str, Stats)> = vec![];
    let (mut compared, mut programs) = (0, 0);
    for seed in seeds {
        let (f, inputs) = generated(seed);
        programs += 1;
        for (k, inp) in inputs.iter().enumerate() {
            let c = check_function(&f, inp, pipeline).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            if let Verdict::Mismatch { ir, .. } = &c.verdict {
                panic!("seed {seed}: {}\n{f}\n--- after\n{ir}", c.verdict.problems().join("\n"));
            }
            assert!(c.verdict.is_ok(), "seed {seed}: {}\n{f}", c.verdict.problems().join("\n"));
            if matches!(c.verdict, Verdict::Agree) {
                compared += 1;
            }
            if k == 0 {
                for (name, s) in &c.stats {
                    match totals.iter_mut().find(|(n, _)| n == name) {
                        Some((_, t)) => t.merge(s),
                        None => totals.push((name, s.clone())),
                    }
                }
            }
        }
    }
    (totals, compared, programs)
}

#[test]
fn random_programs_keep_their_outcomes() {
    let (totals, compared, _) = random_campaign(0..300, &check_pipeline());
    assert!(compared > 500, "only {compared} runs were compared");
    for (n, s) in &totals {
        println!("{n}: {s}");
    }
}

/// On HIR as generated (locals assigned many times), `cprop` alone: every kind of tree
/// move fires, and the outcome never changes.
#[test]
fn every_kind_of_tree_move_fires() {
    let (totals, compared, programs) = random_campaign(0..300, &Pipeline::parse("cprop").unwrap());
    assert!(compared > 500, "only {compared} runs were compared");
    let cprop = &totals.iter().find(|(n, _)| *n == "cprop").unwrap().1;
    for k in TREE_MOVES {
        assert!(cprop.get(k) > 0, "tree move kind {k} never fired on {programs} programs: {cprop}");
    }
}

/// The tree-move rates on more programs; run with
/// `cargo test -p tandem-oracle --test passes tree_move_rates -- --ignored --nocapture`.
#[test]
#[ignore]
fn tree_move_rates() {
    let n = std::env::var("TANDEM_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(2000);
    for list in ["cprop", "ssa,dce,ssa-destroy,cprop"] {
        let pipeline = Pipeline::parse(list).unwrap();
        let (totals, compared, programs) = random_campaign(0..n, &pipeline);
        println!("== {list}: {programs} programs, {compared} runs compared after every pass");
        for (name, s) in &totals {
            println!("{name}: {s}");
        }
        let cprop = &totals.iter().find(|(n, _)| *n == "cprop").unwrap().1;
        for k in TREE_MOVES {
            println!("{k:24} {:8} total, {:.3} per program", cprop.get(k), cprop.get(k) as f64 / programs as f64);
        }
    }
}

#[test]
fn default_pipeline_keeps_outcomes() {
    let (_, compared, _) = random_campaign(1000..1100, &default_pipeline());
    assert!(compared > 150);
}

/// A step that changes the result is caught, and the verdict names it (not the steps
/// before it).
#[test]
fn a_broken_step_is_named() {
    // The first generated case whose first run returns (a trap would hide the change).
    let (f, inp) = (0..)
        .map(generated)
        .find_map(|(f, ins)| {
            let inp = ins[0].clone();
            let o = interp::run(&f, &inp).unwrap().ok()?;
            matches!(o.end, End::Return(_)).then_some((f, inp))
        })
        .unwrap();
    let f = &f;
    let ret = f.ret;
    let c = check_with(f, &inp, |g, hook| {
        let real = PassManager { verify: true };
        let mut out = real.run(&Pipeline::parse("ssa,dce").unwrap(), g, hook)?;
        // The broken step: every return now adds one.
        for b in g.layout.clone() {
            if let Terminator::Return(e) = g.blocks[b].term {
                let one = g.add_expr(ExprData::Const { ty: ret, value: 1 });
                let sum = g.add_expr(ExprData::Binary { op: BinOp::Add, lhs: e, rhs: one });
                g.blocks[b].term = Terminator::Return(sum);
            }
        }
        hook("broken", g, &Stats::default());
        out.push(("broken", Stats::default()));
        Ok(out)
    })
    .unwrap();
    match c.verdict {
        Verdict::Mismatch { pass, index, diff, .. } => {
            assert_eq!((pass.as_str(), index), ("broken", 2));
            assert!(diff[0].starts_with("end:"), "{diff:?}");
        }
        Verdict::ReferenceInvalid(_) => panic!("the generator promised a valid run"),
        v => panic!("the broken step went unnoticed: {v:?}"),
    }
}

/// Constant folding in core follows the interpreter's arithmetic, traps included.
#[test]
fn folding_agrees_with_the_interpreter() {
    let edge: [i64; 10] = [0, 1, -1, 2, 31, 32, 63, i32::MIN as i64, i32::MAX as i64, i64::MIN];
    let mut r = gen::SeededSource::new(99);
    let mut vals: Vec<i64> = edge.to_vec();
    vals.extend((0..40).map(|_| r.bits64() as i64));
    for ty in [Type::I32, Type::I64] {
        for op in BinOp::ALL {
            for &a in &vals {
                for &b in &vals {
                    let (a, b) = (ty.normalize(a), ty.normalize(b));
                    let want = interp::binary(op, ty, a, b).ok().map(|v| ty.normalize(v));
                    assert_eq!(fold::binary(op, ty, a, b), want, "{op:?} {ty} {a} {b}");
                }
            }
        }
    }
}

/// Every corpus run agrees after every pass (the replay also checks this; here the
/// verdicts must be real comparisons).
#[test]
fn corpus_agrees_after_every_pass() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let files = tandem_oracle::campaign::replay::collect_files(&[root]).unwrap();
    let mut compared = 0;
    for path in files {
        let case = CaseFile::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for run in &case.runs {
            let f = case.module.function(&run.entry).unwrap();
            let inp = run.input(f).unwrap();
            let Some(pipeline) = replay_pipeline(f) else { continue };
            let c = check_function(f, &inp, &pipeline).unwrap();
            assert!(c.verdict.is_ok(), "{}: {}", path.display(), c.verdict.problems().join("\n"));
            compared += matches!(c.verdict, Verdict::Agree) as usize;
        }
    }
    assert!(compared > 0);
}

/// SSA copy propagation, as a test driver step: every use of `x` where `x = y` is a
/// top-level copy is replaced by `y` (transitively), phi arguments included. The copies'
/// versions then live at the same time as their sources, which is what makes the swap and
/// lost-copy problems real for `ssa-destroy`.
fn ssa_copy_propagate(f: &mut Function) -> u64 {
    use cranelift_entity::SecondaryMap;
    use tandem_core::ir::Local;
    let mut copy_of: SecondaryMap<Local, Option<Local>> = SecondaryMap::new();
    for &b in &f.layout {
        for &s in &f.blocks[b].stmts {
            if let ExprData::Assign { local, value } = f.exprs[s] {
                if let ExprData::Local(y) = f.exprs[value] {
                    copy_of[local] = Some(y);
                }
            }
        }
    }
    let root = |mut l: Local| {
        while let Some(y) = copy_of[l] {
            l = y;
        }
        l
    };
    let mut n = 0;
    for b in f.layout.clone() {
        for i in 0..f.blocks[b].phis.len() {
            for j in 0..f.blocks[b].phis[i].args.len() {
                let a = f.blocks[b].phis[i].args[j].1;
                let r = root(a);
                if r != a {
                    f.blocks[b].phis[i].args[j].1 = r;
                    n += 1;
                }
            }
        }
        let roots: Vec<_> = f.blocks[b].stmts.iter().copied().chain(f.blocks[b].term.expr()).collect();
        for s in roots {
            let mut nodes = vec![];
            f.visit_postorder(s, &mut |e| nodes.push(e));
            for e in nodes {
                if let ExprData::Local(l) = f.exprs[e] {
                    let r = root(l);
                    if r != l {
                        f.exprs[e] = ExprData::Local(r);
                        n += 1;
                    }
                }
            }
        }
    }
    n
}

/// `ssa-destroy` stays correct after SSA copy propagation has made versions' live ranges
/// overlap: random programs, checked after every step.
#[test]
fn destruction_after_copy_propagation() {
    let (mut propagated, mut temps, mut splits, mut compared) = (0, 0, 0, 0);
    // Small programs with more loops, where the generator's swaps, rotations and lost
    // copies between loop-carried variables sit.
    let cfg = Config { loop_bias: 8, ..Profile::Small.config() };
    for seed in 2000..3000u64 {
        let (f, inputs) = generated_with(seed, &cfg);
        let f = &f;
        for (k, inp) in inputs.iter().take(2).enumerate() {
            let c = check_with(f, inp, |g, hook| {
                let pm = PassManager { verify: true };
                let mut out = pm.run(&Pipeline::parse("ssa").unwrap(), g, hook)?;
                let n = ssa_copy_propagate(g);
                let errs = tandem_core::passes::check_form(g, Form::Ssa);
                assert!(errs.is_empty(), "seed {seed}: copy propagation broke SSA: {errs:?}\n{g}");
                let mut s = Stats::default();
                s.add("propagated", n);
                hook("ssa-copyprop", g, &s);
                out.push(("ssa-copyprop", s));
                let rest = Pipeline::parse_from(Form::Ssa, "dce,ssa-destroy,cprop").unwrap();
                out.extend(pm.run(&rest, g, hook)?);
                Ok(out)
            })
            .unwrap();
            if let Verdict::Mismatch { ir, .. } = &c.verdict {
                panic!("seed {seed}: {}\n{f}\n--- after\n{ir}", c.verdict.problems().join("\n"));
            }
            assert!(c.verdict.is_ok(), "seed {seed}: {}", c.verdict.problems().join("\n"));
            compared += matches!(c.verdict, Verdict::Agree) as u64;
            if k == 0 {
                for (name, s) in &c.stats {
                    match *name {
                        "ssa-copyprop" => propagated += s.get("propagated"),
                        "ssa-destroy" => {
                            temps += s.get("cycle_temps");
                            splits += s.get("edges_split");
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    println!("propagated={propagated} cycle_temps={temps} edges_split={splits} compared={compared}");
    assert!(propagated > 100 && splits > 50 && temps > 5 && compared > 1500, "propagated={propagated} splits={splits} temps={temps}");
}
