//! SSA destruction (`DESIGN.md` pass 4): every phi becomes a copy on each incoming edge,
//! and the copies of one edge are a *parallel* copy, sequentialized so that no source is
//! overwritten before it is read (the swap problem), with a fresh temporary to break each
//! cycle. The copies of an edge go at the end of its predecessor when that block ends in
//! a plain jump; otherwise the edge is split by a new block holding them (the
//! lost-copy problem: copies placed before a branch would clobber a phi result that is
//! still live on the other successor).
//!
//! Versions are not coalesced back into their original variable: each keeps its own
//! local, so the result is correct however the versions' live ranges overlap (after copy
//! propagation, for instance — the assumption `seeds/ssapre.txt` warns about). A phi's
//! destination is dead on its incoming edges before the copies (every path from the edge
//! reaches a use only through the phi's block), so writing it there is safe.
//!
//! Statistics: `phis` removed, `copies` emitted, `edges_split`, `cycle_temps`.

use super::{Analyses, Stats};
use crate::ir::{Block, BlockData, ExprData, Function, Local, Terminator};

/// Takes `f` out of SSA form.
pub fn run(f: &mut Function, an: &Analyses) -> Stats {
    let mut stats = Stats::default();
    let targets: Vec<Block> = f.layout.iter().copied().filter(|&b| !f.blocks[b].phis.is_empty()).collect();
    for b in targets {
        let phis = std::mem::take(&mut f.blocks[b].phis);
        stats.add("phis", phis.len() as u64);
        for &p in &an.cfg.preds[b] {
            let copies: Vec<(Local, Local)> = phis
                .iter()
                .map(|phi| {
                    let src = phi.args.iter().find(|(q, _)| *q == p).expect("verified phi").1;
                    (phi.dest, src)
                })
                .collect();
            let seq = sequentialize(f, copies, &mut stats);
            if seq.is_empty() {
                continue;
            }
            // Copies go before the terminator, so only a plain jump may host them: a
            // branch whose targets agree still reads its condition after them.
            let at = if matches!(f.blocks[p].term, Terminator::Jump(_)) {
                p
            } else {
                stats.bump("edges_split");
                split_edge(f, p, b)
            };
            for (d, s) in seq {
                let v = f.add_expr(ExprData::Local(s));
                let st = f.add_expr(ExprData::Assign { local: d, value: v });
                f.blocks[at].stmts.push(st);
                stats.bump("copies");
            }
        }
    }
    stats
}

/// Inserts a block on the edge `from -> to` (placed after `from` in the layout) and
/// returns it.
fn split_edge(f: &mut Function, from: Block, to: Block) -> Block {
    let n = f.blocks.push(BlockData { phis: vec![], stmts: vec![], term: Terminator::Jump(to) });
    for s in f.blocks[from].term.successors_mut() {
        if *s == to {
            *s = n;
        }
    }
    let pos = f.layout.iter().position(|&b| b == from).expect("in layout");
    f.layout.insert(pos + 1, n);
    n
}

/// Orders the parallel copy `dest <- src` (destinations distinct) into sequential copies
/// with the same effect, using a fresh temporary per cycle.
pub fn sequentialize(f: &mut Function, copies: Vec<(Local, Local)>, stats: &mut Stats) -> Vec<(Local, Local)> {
    let mut pending: Vec<(Local, Local)> = copies.into_iter().filter(|(d, s)| d != s).collect();
    let mut out = vec![];
    while !pending.is_empty() {
        // A copy whose destination no other pending copy still reads can go now.
        if let Some(i) = pending.iter().position(|(d, _)| !pending.iter().any(|(_, s)| s == d)) {
            out.push(pending.remove(i));
            continue;
        }
        // Only cycles remain: save one destination in a temporary and read that instead.
        let (d, _) = pending[0];
        let name = format!("{}.tmp", f.locals[d].name);
        let t = f.new_local(&name, f.locals[d].ty);
        stats.bump("cycle_temps");
        out.push((t, d));
        for (_, s) in pending.iter_mut() {
            if *s == d {
                *s = t;
            }
        }
    }
    out
}

