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

use super::util::{accesses, remove_unused_locals, Access, LocalSet};
use super::Stats;
use crate::ir::{ExprData, Function, Local};
use cranelift_entity::EntityRef;

/// Removes dead code from `f`.
pub fn run(f: &mut Function) -> Stats {
    let mut stats = Stats::default();
    let n = f.locals.len();
    let mut needed = LocalSet::new(n);
    let mut work: Vec<Local> = vec![];
    // Definitions of each local: the locals their trees or phis read.
    let mut defs: Vec<Vec<Vec<Local>>> = vec![vec![]; n];
    let need = |l: Local, needed: &mut LocalSet, work: &mut Vec<Local>| {
        if needed.insert(l) {
            work.push(l);
        }
    };
    let reads = |f: &Function, e| -> Vec<Local> {
        accesses(f, e).into_iter().filter_map(|a| if let Access::Use(l) = a { Some(l) } else { None }).collect()
    };
    for &b in &f.layout {
        let data = &f.blocks[b];
        for phi in &data.phis {
            defs[phi.dest.index()].push(phi.args.iter().map(|(_, a)| *a).collect());
        }
        for &s in &data.stmts {
            match f.exprs[s] {
                ExprData::Assign { local, value } if !f.tree_has_side_effect(value) => {
                    defs[local.index()].push(reads(f, value));
                }
                _ if f.tree_has_side_effect(s) => {
                    for l in reads(f, s) {
                        need(l, &mut needed, &mut work);
                    }
                }
                _ => {}
            }
        }
        if let Some(t) = data.term.expr() {
            for l in reads(f, t) {
                need(l, &mut needed, &mut work);
            }
        }
    }
    while let Some(l) = work.pop() {
        for d in std::mem::take(&mut defs[l.index()]) {
            for u in d {
                need(u, &mut needed, &mut work);
            }
        }
    }
    for b in f.layout.clone() {
        let before = f.blocks[b].phis.len();
        f.blocks[b].phis.retain(|p| needed.contains(p.dest));
        stats.add("phis", (before - f.blocks[b].phis.len()) as u64);
        let stmts = std::mem::take(&mut f.blocks[b].stmts);
        let mut kept = vec![];
        for s in stmts {
            let dead = match f.exprs[s] {
                ExprData::Assign { local, value } => !needed.contains(local) && !f.tree_has_side_effect(value),
                _ => !f.tree_has_side_effect(s),
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
