//! The unbounded check (issue 20): a per-block simulation proof that the function after a
//! pass behaves like the one before it on every run, whatever the iteration counts — the
//! Namjoshi–Zuck witness idea, with the witness *inferred* rather than given, so that it
//! needs nothing from `core` and trusts none of its analyses (no liveness, no dominance).
//!
//! **Block map.** Passes keep block identities and only add blocks on edges (split
//! edges, preheaders, landing blocks). A block of the source corresponds to the target's
//! block of the same index; a target block that the source's layout does not have is
//! *new* and stutters: the target runs through it within the step of the block before
//! it. A source block the target lost, or an entry block that something jumps to, and
//! the check gives up (the bounded check then answers).
//!
//! **Relation.** At the entry of each pair of corresponding blocks (phis applied), a
//! conjunction of candidate equalities ([`Candidate`]) between the two states: source and
//! target locals of related names (`%i` and its SSA versions `%i.3`), the heaps, each
//! callframe variable on both sides, a callframe variable and a target local (memopt's
//! promoted variables), and each local with an expression that assigns it on its own side
//! (SSAPRE's temporaries, hoisted loads, constants; a phi's destination with its
//! arguments' expressions). **Houdini**: assume the relation at a block's entry, run the
//! block on both sides ([`encode::encode_step`]), and drop every candidate at a successor
//! that some model of the step falsifies; repeat until no block drops any. What remains
//! is inductive. The entry block starts from the real initial state (arguments shared,
//! locals 0), so the relation holds on every run.
//!
//! **Observables.** With that relation assumed, every block must agree on how it ends
//! (return value, trap kind and code, invalid where the source is valid, or the same next
//! block), on the trace events it appends, and, where the run stops, on the heap and the
//! callframe. All blocks agree: [`Answer::Proved`](super::Answer::Proved) for every run.
//! A block that does not is no counterexample (its entry state may be unreachable): the
//! caller falls back to the bounded check.

use super::encode::{self, encode_step, eval_value, is_value_tree, State, SymOutcome, Trace};
use super::{Budget, Options, Unknown};
use cranelift_entity::EntityRef;
use std::collections::HashSet;
use tandem_core::ir::{Block, CfVar, Expr, ExprData, Function, Local, HEAP_BASE, HEAP_SIZE};
use z3::ast::{Array, Bool, BV};
use z3::{SatResult, Sort};

/// One candidate equality at a block entry, over the source state `s` and the target
/// state `t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Candidate {
    /// `s.heap == t.heap`.
    Heap,
    /// `s.callframe[v] == t.callframe[v]`.
    Cf(CfVar),
    /// A source local equals a target local.
    Locals(Local, Local),
    /// A source callframe variable equals a target local.
    CfLocal(CfVar, Local),
    /// A target local equals the value of a target expression in the target state.
    TargetDef(Local, Expr),
    /// A source local equals the value of a source expression in the source state.
    SourceDef(Local, Expr),
}

/// Most candidates per block: beyond this the relation is cut (the check may then fail,
/// never pass wrongly).
const MAX_CANDIDATES: usize = 1500;

/// The name of a local without its version suffix (`%i.3` → `i`).
fn base(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// Per local, the value trees assigned to it in `f` (phis: the trees of their arguments'
/// assignments, one level deep), at most four each.
fn definitions(f: &Function) -> Vec<Vec<Expr>> {
    let mut defs: Vec<Vec<Expr>> = vec![vec![]; f.locals.len()];
    for &b in &f.layout {
        for &s in &f.blocks[b].stmts {
            if let ExprData::Assign { local, value } = &f.exprs[s] {
                let d = &mut defs[local.index()];
                if d.len() < 4 && is_value_tree(f, *value) && !d.iter().any(|&x| same_tree(f, x, *value)) {
                    d.push(*value);
                }
            }
        }
    }
    let direct = defs.clone();
    for &b in &f.layout {
        for phi in &f.blocks[b].phis {
            for (_, a) in &phi.args {
                for &e in &direct[a.index()] {
                    let d = &mut defs[phi.dest.index()];
                    if d.len() < 4 && !d.iter().any(|&x| same_tree(f, x, e)) {
                        d.push(e);
                    }
                }
            }
        }
    }
    defs
}

/// Structural equality of two trees of `f`.
fn same_tree(f: &Function, a: Expr, b: Expr) -> bool {
    let (x, y) = (&f.exprs[a], &f.exprs[b]);
    if std::mem::discriminant(x) != std::mem::discriminant(y) {
        return false;
    }
    let (xo, yo) = (x.operands(), y.operands());
    let mut shallow_x = x.clone();
    let mut shallow_y = y.clone();
    for o in shallow_x.operands_mut() {
        *o = Expr::new(0);
    }
    for o in shallow_y.operands_mut() {
        *o = Expr::new(0);
    }
    shallow_x == shallow_y && xo.len() == yo.len() && xo.iter().zip(yo.iter()).all(|(&p, &q)| same_tree(f, p, q))
}

/// The candidates of every corresponding block (the same for each: which survive where is
/// Houdini's business).
fn candidates(src: &Function, tgt: &Function) -> Vec<Candidate> {
    // The likeliest first, since the list is cut at MAX_CANDIDATES: locals of the same
    // name, then each side's definitions, then SSA versions of one name, then promoted
    // callframe variables.
    let mut c = vec![Candidate::Heap];
    c.extend(src.cfvars.keys().map(Candidate::Cf));
    let pairs = |same: bool| {
        let mut v = vec![];
        for (s, sd) in src.locals.iter() {
            for (t, td) in tgt.locals.iter() {
                if sd.ty == td.ty && (sd.name == td.name) == same && base(&sd.name) == base(&td.name) {
                    v.push(Candidate::Locals(s, t));
                }
            }
        }
        v
    };
    c.extend(pairs(true));
    for (t, defs) in definitions(tgt).into_iter().enumerate() {
        c.extend(defs.into_iter().map(|e| Candidate::TargetDef(Local::new(t), e)));
    }
    for (s, defs) in definitions(src).into_iter().enumerate() {
        c.extend(defs.into_iter().map(|e| Candidate::SourceDef(Local::new(s), e)));
    }
    c.extend(pairs(false));
    for (v, vd) in src.cfvars.iter() {
        for (t, td) in tgt.locals.iter() {
            if vd.ty == td.ty {
                c.push(Candidate::CfLocal(v, t));
            }
        }
    }
    c.truncate(MAX_CANDIDATES);
    c
}

/// The candidate's truth in the source state `s` and the target state `t`; `None` when
/// an expression is too large to evaluate.
fn holds(c: Candidate, src: &Function, tgt: &Function, s: &State, t: &State, limit: usize) -> Option<Bool> {
    Some(match c {
        Candidate::Heap => s.heap.eq(&t.heap),
        Candidate::Cf(v) => s.callframe[v.index()].eq(&t.callframe[v.index()]),
        Candidate::Locals(a, b) => s.locals[a.index()].eq(&t.locals[b.index()]),
        Candidate::CfLocal(v, b) => s.callframe[v.index()].eq(&t.locals[b.index()]),
        Candidate::TargetDef(l, e) => t.locals[l.index()].eq(eval_value(tgt, e, t, tgt.locals[l].ty, limit).ok()?),
        Candidate::SourceDef(l, e) => s.locals[l.index()].eq(eval_value(src, e, s, src.locals[l].ty, limit).ok()?),
    })
}

/// A block's entry state: fresh symbols, or for the entry block the initial state of a
/// run (arguments shared between the sides through `args`, every other local 0).
fn entry_state(f: &Function, entry: bool, args: &[BV], heap: &Array, callframe: &[BV], slots: usize) -> State {
    let locals = f
        .locals
        .iter()
        .map(|(l, d)| match f.params.iter().position(|&p| p == l) {
            Some(i) if entry => args[i].clone(),
            _ if entry => BV::from_u64(0, d.ty.bits()),
            _ => BV::fresh_const("l", d.ty.bits()),
        })
        .collect();
    State { locals, heap: heap.clone(), callframe: callframe.to_vec(), trace: Trace::empty(slots) }
}

/// One corresponding pair of blocks, encoded once: the entry states and the step of each
/// side.
struct Step {
    block: Block,
    entry: bool,
    s_in: State,
    t_in: State,
    x: SymOutcome,
    y: SymOutcome,
    /// The source's successors (corresponding blocks), each with the condition that both
    /// sides continue there.
    succs: Vec<(Block, Bool)>,
}

/// The simulation check: `Ok(true)` when every block pair is proved under the inferred
/// relation (every run agrees), `Ok(false)` when the blocks do not correspond or some
/// block is not proved, `Err` when the budget ran out or a block is too large.
pub fn check_simulation(src: &Function, tgt: &Function, opts: &Options, budget: &mut Budget) -> Result<bool, Unknown> {
    let entry = src.entry();
    let src_blocks: HashSet<Block> = src.layout.iter().copied().collect();
    let fresh = |b: Block| !src_blocks.contains(&b);
    let corresponds = tgt.entry() == entry
        && src.layout.iter().all(|b| tgt.layout.contains(b))
        && src.params.len() == tgt.params.len()
        && src.params.iter().zip(&tgt.params).all(|(&p, &q)| src.locals[p].ty == tgt.locals[q].ty)
        && src.cfvars == tgt.cfvars
        && ![src, tgt].iter().any(|f| f.layout.iter().any(|&b| f.blocks[b].term.successors().contains(&entry)));
    if !corresponds {
        return Ok(false);
    }
    let slots = encode::trace_slots(src).max(encode::trace_slots(tgt));
    let cands = candidates(src, tgt);
    let limit = opts.max_nodes;
    // Houdini keeps a term per candidate at the entry and the exit of every block: on a
    // long function with many candidates (a local assigned in each of 5,000 blocks has
    // 5,000 definitions) that alone would take gigabytes. Past the encoding cap the
    // check is too large, and the bounded check answers instead.
    if src.layout.len().saturating_mul(cands.len().max(1)) > limit {
        return Err(Unknown::TooLarge);
    }
    let mut work = 0usize;
    let mut steps = vec![];
    for &b in &src.layout {
        let is_entry = b == entry;
        let (args, heaps, cfs): (Vec<BV>, [Array; 2], [Vec<BV>; 2]) = {
            let args = src.params.iter().map(|&p| BV::fresh_const("arg", src.locals[p].ty.bits())).collect();
            let heap = || Array::fresh_const("heap", &Sort::bitvector(32), &Sort::bitvector(8));
            let cf = || src.cfvars.values().map(|d| BV::fresh_const("cf", d.ty.bits())).collect::<Vec<BV>>();
            if is_entry {
                let (h, c) = (heap(), cf());
                (args, [h.clone(), h], [c.clone(), c])
            } else {
                (args, [heap(), heap()], [cf(), cf()])
            }
        };
        let s_in = entry_state(src, is_entry, &args, &heaps[0], &cfs[0], slots);
        let t_in = entry_state(tgt, is_entry, &args, &heaps[1], &cfs[1], slots);
        let left = limit.saturating_sub(work);
        let x = encode_step(src, b, s_in.clone(), &|_| false, left).map_err(|_| Unknown::TooLarge)?;
        let y = encode_step(tgt, b, t_in.clone(), &fresh, left).map_err(|_| Unknown::TooLarge)?;
        work += src.blocks[b].stmts.len() + tgt.blocks[b].stmts.len() + 1;
        let cont = |o: &SymOutcome, t: Block| {
            Bool::and(&[o.kind.eq(BV::from_u64(encode::END_CONTINUE, 8)), o.value.eq(BV::from_u64(t.index() as u64, 64))])
        };
        let mut succs: Vec<(Block, Bool)> = vec![];
        for t in src.blocks[b].term.successors() {
            if !succs.iter().any(|(u, _)| *u == t) {
                succs.push((t, Bool::and(&[cont(&x, t), cont(&y, t)])));
            }
        }
        steps.push(Step { block: b, entry: is_entry, s_in, t_in, x, y, succs });
    }
    let index = |b: Block| steps.iter().position(|s| s.block == b).expect("every successor is a source block");
    // Houdini: alive[i][k] says whether candidate k is still assumed at step i's block.
    let mut alive: Vec<Vec<bool>> = steps.iter().map(|s| vec![!s.entry; cands.len()]).collect();
    // The candidates' terms at each step's entry, and at each successor after the step.
    let mut at_entry: Vec<Vec<Option<Bool>>> = vec![];
    for st in &steps {
        at_entry.push(cands.iter().map(|&c| holds(c, src, tgt, &st.s_in, &st.t_in, limit)).collect());
    }
    let mut at_exit: Vec<Vec<Option<Bool>>> = vec![];
    for st in &steps {
        at_exit.push(cands.iter().map(|&c| holds(c, src, tgt, &st.x.state, &st.y.state, limit)).collect());
    }
    for (i, a) in alive.iter_mut().enumerate() {
        for (k, v) in a.iter_mut().enumerate() {
            *v &= at_entry[i][k].is_some() && at_exit[i][k].is_some();
        }
    }
    let valid = |st: &Step| st.x.kind.eq(BV::from_u64(encode::END_INVALID, 8)).not();
    let assumptions = |i: usize, alive: &[Vec<bool>]| -> Vec<Bool> {
        (0..cands.len()).filter(|&k| alive[i][k]).filter_map(|k| at_entry[i][k].clone()).collect()
    };
    let mut changed = true;
    while changed {
        changed = false;
        for (i, st) in steps.iter().enumerate() {
            let assumed = assumptions(i, &alive);
            let known: HashSet<Bool> = assumed.iter().cloned().collect();
            // Goals: every live candidate at every successor, unless it is literally one
            // of the assumptions (a local neither side touched).
            let mut goals: Vec<(usize, usize, Bool)> = vec![];
            for (t, both) in &st.succs {
                let j = index(*t);
                for k in 0..cands.len() {
                    if !alive[j][k] {
                        continue;
                    }
                    let c = at_exit[i][k].clone().expect("alive candidates have terms");
                    if known.contains(&c) {
                        continue;
                    }
                    goals.push((j, k, Bool::or(&[both.not(), c])));
                }
            }
            while !goals.is_empty() {
                let s = super::solver();
                s.assert(valid(st));
                for a in &assumed {
                    s.assert(a);
                }
                let refs: Vec<Bool> = goals.iter().map(|(_, _, g)| g.not()).collect();
                s.assert(Bool::or(&refs));
                match budget.check(&s) {
                    SatResult::Unsat => break,
                    SatResult::Unknown => return Err(Unknown::Budget),
                    SatResult::Sat => {
                        let m = s.get_model().expect("a model after sat");
                        let before = goals.len();
                        goals.retain(|(j, k, g)| {
                            let ok = m.eval(g, true).and_then(|v| v.as_bool()).unwrap_or(false);
                            if !ok {
                                alive[*j][*k] = false;
                            }
                            ok
                        });
                        assert!(goals.len() < before, "a model falsifies some goal");
                        changed = true;
                    }
                }
            }
        }
    }
    // The observables, under the inferred relation.
    for (i, st) in steps.iter().enumerate() {
        let s = super::solver();
        s.assert(valid(st));
        for a in assumptions(i, &alive) {
            s.assert(a);
        }
        s.assert(step_differs(&st.x, &st.y));
        match budget.check(&s) {
            SatResult::Unsat => {}
            SatResult::Sat => return Ok(false),
            SatResult::Unknown => return Err(Unknown::Budget),
        }
    }
    Ok(true)
}

/// The two sides' steps differ observably: how they end (the next block included), the
/// trace events they append, and, where the run stops, the heap and the callframe.
fn step_differs(a: &SymOutcome, b: &SymOutcome) -> Bool {
    let kind = |k: u64| BV::from_u64(k, 8);
    let addr = BV::fresh_const("addr", 32);
    let in_heap = Bool::and(&[
        addr.bvuge(BV::from_u64(HEAP_BASE as u64, 32)),
        addr.bvult(BV::from_u64((HEAP_BASE + HEAP_SIZE) as u64, 32)),
    ]);
    let sel = |h: &Array| h.select(&addr).as_bv().expect("bytes");
    let stops = a.kind.eq(kind(encode::END_CONTINUE)).not();
    let mut d = vec![
        a.kind.eq(&b.kind).not(),
        Bool::and(&[a.kind.eq(kind(encode::END_RETURN)), a.value.eq(&b.value).not()]),
        Bool::and(&[a.kind.eq(kind(encode::END_CONTINUE)), a.value.eq(&b.value).not()]),
        Bool::and(&[a.kind.eq(kind(encode::END_CHECK)), a.code.eq(&b.code).not()]),
        Bool::and(&[&stops, &in_heap, &sel(&a.state.heap).eq(sel(&b.state.heap)).not()]),
        super::trace_differs(&a.state.trace, &b.state.trace),
    ];
    for (x, y) in a.state.callframe.iter().zip(&b.state.callframe) {
        d.push(Bool::and(&[&stops, &x.eq(y).not()]));
    }
    Bool::or(&d)
}
