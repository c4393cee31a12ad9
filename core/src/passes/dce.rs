//! Dead code elimination (`DESIGN.md` pass 4) by mark and sweep over locals, sound in
//! both HIR and SSA form. Critical statements — every terminator, and every statement
//! whose tree has an effect or may trap (stores, callframe writes, non-pure calls,
//! checks, divisions, nested assignments) — are kept and make the locals they read
//! needed; a needed local makes every definition of it (top-level `%x = e`, phi) needed,
//! and so on to a fixpoint. Then the sweep removes top-level assignments of pure trees to
//! unneeded locals, pure statements whose value nobody reads, and phis of unneeded
//! locals (dead phi cycles included). It never removes a trap, a store, a call or a
//! callframe write: those are critical by construction.
//!
//! Statistics: `stmts` removed, `phis` removed.

use super::util::{remove_unused_locals, LocalSet};
use super::Stats;
use crate::ir::{ExprData, Function, Local};
use cranelift_entity::EntityRef;

/// Removes dead code from `f`.
pub fn run(f: &mut Function) -> Stats {
    let mut stats = Stats::default();
    let n = f.locals.len();
    let mut needed = LocalSet::new(n);
    let mut work: Vec<Local> = vec![];
    // The locals the definitions of each local read (its phis' arguments, the trees
    // assigned to it), all definitions of a local in one list: needing the local needs
    // every one of them.
    let mut defs: Vec<Vec<Local>> = vec![vec![]; n];
    let need = |l: Local, needed: &mut LocalSet, work: &mut Vec<Local>| {
        if needed.insert(l) {
            work.push(l);
        }
    };
    // Whether each statement's value (an assignment's assigned tree, else the whole
    // statement) has an effect, in layout order: the mark asks it and the sweep again.
    let mut effects: Vec<bool> = vec![];
    // The locals the statement at hand reads, in evaluation order, found by the walk that
    // asks for its effect (a walk for each question was a fifth of the pass).
    let mut read = vec![];
    for &b in &f.layout {
        let data = &f.blocks[b];
        for phi in &data.phis {
            defs[phi.dest.index()].extend(phi.args.iter().map(|(_, a)| *a));
        }
        for &s in &data.stmts {
            // An assignment is itself an effect: with an effect in its value, the whole
            // statement is critical (and reads what its value reads).
            let (effect, local) = match f.exprs[s] {
                ExprData::Assign { local, value } => (reads_and_effect(f, value, &mut read), Some(local)),
                _ => (reads_and_effect(f, s, &mut read), None),
            };
            effects.push(effect);
            match local {
                Some(local) if !effect => defs[local.index()].extend_from_slice(&read),
                _ if effect => read.iter().for_each(|&l| need(l, &mut needed, &mut work)),
                _ => {}
            }
        }
        if let Some(t) = data.term.expr() {
            f.visit_postorder(t, &mut |e| {
                if let ExprData::Local(l) = f.exprs[e] {
                    need(l, &mut needed, &mut work);
                }
            });
        }
    }
    while let Some(l) = work.pop() {
        for u in std::mem::take(&mut defs[l.index()]) {
            need(u, &mut needed, &mut work);
        }
    }
    let mut effects = effects.into_iter();
    for b in f.layout.clone() {
        let before = f.blocks[b].phis.len();
        f.blocks[b].phis.retain(|p| needed.contains(p.dest));
        stats.add("phis", (before - f.blocks[b].phis.len()) as u64);
        let stmts = std::mem::take(&mut f.blocks[b].stmts);
        let mut kept = Vec::with_capacity(stmts.len());
        for s in stmts {
            let effect = effects.next().expect("one per statement");
            let dead = match f.exprs[s] {
                ExprData::Assign { local, .. } => !needed.contains(local) && !effect,
                _ => !effect,
            };
            if dead {
                stats.bump("stmts");
            } else {
                kept.push(s);
            }
        }
        f.blocks[b].stmts = kept;
    }
    remove_unused_locals(f);
    stats
}

/// The locals the tree at `e` reads, in evaluation order, into `out` (emptied first), and
/// whether the tree has an effect or may trap.
fn reads_and_effect(f: &Function, e: crate::ir::Expr, out: &mut Vec<Local>) -> bool {
    out.clear();
    let mut effect = false;
    f.visit_postorder(e, &mut |n| {
        let d = &f.exprs[n];
        if let ExprData::Local(l) = *d {
            out.push(l);
        }
        effect |= d.has_side_effect();
    });
    effect
}
