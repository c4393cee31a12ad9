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

use super::util::{remove_unmentioned_locals, LocalSet};
use super::Stats;
use crate::ir::{Expr, ExprData, Function, Local};
use cranelift_entity::EntityRef;

/// Removes dead code from `f`.
pub fn run(f: &mut Function) -> Stats {
    let mut stats = Stats::default();
    let n = f.locals.len();
    let mut needed = LocalSet::new(n);
    let mut work: Vec<Local> = vec![];
    // The locals the definitions of each local read (its phis' arguments, the trees
    // assigned to it) as (local, read) pairs, gathered by local below: needing the local
    // needs every one of them (one list, not a list per local).
    let mut defs: Vec<(Local, Local)> = vec![];
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
    // The nodes that name a local (reads and assignments), statement by statement in
    // layout order (`mentions[ends[i - 1]..ends[i]]` for the `i`th), then those of the
    // terminators: once the sweep has removed the dead statements, the rest say which
    // locals are unused and where to renumber the others, without a walk of every tree
    // again (`remove_unused_locals`'s walk was a third of the pass).
    let mut mentions: Vec<Expr> = vec![];
    let mut ends: Vec<u32> = vec![];
    let mut term_mentions: Vec<Expr> = vec![];
    for &b in &f.layout {
        let data = &f.blocks[b];
        for phi in &data.phis {
            defs.extend(phi.args.iter().map(|(_, a)| (phi.dest, *a)));
        }
        for &s in &data.stmts {
            // An assignment is itself an effect: with an effect in its value, the whole
            // statement is critical (and reads what its value reads).
            let (effect, local) = match f.exprs[s] {
                ExprData::Assign { local, value } => {
                    let effect = reads_and_effect(f, value, &mut read, &mut mentions);
                    mentions.push(s);
                    (effect, Some(local))
                }
                _ => (reads_and_effect(f, s, &mut read, &mut mentions), None),
            };
            effects.push(effect);
            ends.push(mentions.len() as u32);
            match local {
                Some(local) if !effect => defs.extend(read.iter().map(|&r| (local, r))),
                _ if effect => read.iter().for_each(|&l| need(l, &mut needed, &mut work)),
                _ => {}
            }
        }
        if let Some(t) = data.term.expr() {
            f.visit_postorder(t, &mut |e| match f.exprs[e] {
                ExprData::Local(l) => {
                    need(l, &mut needed, &mut work);
                    term_mentions.push(e);
                }
                ExprData::Assign { .. } => term_mentions.push(e),
                _ => {}
            });
        }
    }
    // The reads of each local's definitions, `reads[start[l]..start[l + 1]]` (a counting
    // sort of the pairs by local). A local is needed, and its reads visited, once.
    let mut start = vec![0u32; n + 1];
    for &(l, _) in &defs {
        start[l.index() + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut reads = vec![Local::new(0); defs.len()];
    let mut at = start.clone();
    for &(l, r) in &defs {
        reads[at[l.index()] as usize] = r;
        at[l.index()] += 1;
    }
    while let Some(l) = work.pop() {
        for &u in &reads[start[l.index()] as usize..start[l.index() + 1] as usize] {
            need(u, &mut needed, &mut work);
        }
    }
    let mut effects = effects.into_iter().zip(ends);
    // The kept statements' nodes that name a local, compacted to the front of `mentions`.
    let (mut from, mut to) = (0, 0);
    for i in 0..f.layout.len() {
        let b = f.layout[i];
        let before = f.blocks[b].phis.len();
        f.blocks[b].phis.retain(|p| needed.contains(p.dest));
        stats.add("phis", (before - f.blocks[b].phis.len()) as u64);
        let stmts = std::mem::take(&mut f.blocks[b].stmts);
        let mut kept = Vec::with_capacity(stmts.len());
        for s in stmts {
            let (effect, end) = effects.next().expect("one per statement");
            let dead = match f.exprs[s] {
                ExprData::Assign { local, .. } => !needed.contains(local) && !effect,
                _ => !effect,
            };
            if dead {
                stats.bump("stmts");
            } else {
                kept.push(s);
                mentions.copy_within(from..end as usize, to);
                to += end as usize - from;
            }
            from = end as usize;
        }
        f.blocks[b].stmts = kept;
    }
    mentions.truncate(to);
    mentions.extend_from_slice(&term_mentions);
    remove_unmentioned_locals(f, &mentions);
    stats
}

/// The locals the tree at `e` reads, in evaluation order, into `out` (emptied first), and
/// whether the tree has an effect or may trap. The nodes that name a local (reads and
/// assignments) are added to `mentions`.
fn reads_and_effect(f: &Function, e: Expr, out: &mut Vec<Local>, mentions: &mut Vec<Expr>) -> bool {
    out.clear();
    let mut effect = false;
    f.visit_postorder(e, &mut |n| {
        let d = &f.exprs[n];
        match *d {
            ExprData::Local(l) => {
                out.push(l);
                mentions.push(n);
            }
            ExprData::Assign { .. } => mentions.push(n),
            _ => {}
        }
        effect |= d.has_side_effect();
    });
    effect
}
