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

use super::{Cfg, Stats};
use crate::ir::{Block, ExprData, Function, Local, Terminator};

/// Takes `f` out of SSA form, computing the one analysis it reads, the CFG (the rest of
/// [`super::Analyses`] after the passes that change the CFG was most of this pass).
pub fn run(f: &mut Function) -> Stats {
    let cfg = Cfg::compute(f);
    let mut stats = Stats::default();
    // Blocks made by splitting edges, each with the block it follows in the layout.
    let mut splits: Vec<(Block, Block)> = vec![];
    // Names cycle temporaries; made at the first cycle (it reads every name once).
    let mut namer: Option<super::util::Namer> = None;
    let targets: Vec<Block> = f.layout.iter().copied().filter(|&b| !f.blocks[b].phis.is_empty()).collect();
    for b in targets {
        let phis = std::mem::take(&mut f.blocks[b].phis);
        stats.add("phis", phis.len() as u64);
        for &p in &cfg.preds[b] {
            let copies: Vec<(Local, Local)> = phis
                .iter()
                .map(|phi| {
                    let src = phi.args.iter().find(|(q, _)| *q == p).expect("verified phi").1;
                    (phi.dest, src)
                })
                .collect();
            let seq = sequentialize(f, copies, &mut namer, &mut stats);
            if seq.is_empty() {
                continue;
            }
            // Copies go before the terminator, so only a plain jump may host them: a
            // branch whose targets agree still reads its condition after them.
            let at = if matches!(f.blocks[p].term, Terminator::Jump(_)) {
                p
            } else {
                stats.bump("edges_split");
                // Its phis were taken out above, so only the successor changes.
                let n = super::util::split_edge(f, p, b);
                splits.push((p, n));
                n
            };
            for (d, s) in seq {
                let v = f.add_expr(ExprData::Local(s));
                let st = f.add_expr(ExprData::Assign { local: d, value: v });
                f.blocks[at].stmts.push(st);
                stats.bump("copies");
            }
        }
    }
    // Each new block goes right after the block it was split from, in order of creation.
    if !splits.is_empty() {
        let mut after: crate::hash::HashMap<Block, Vec<Block>> = crate::hash::HashMap::default();
        for (from, n) in splits {
            after.entry(from).or_default().push(n);
        }
        let mut layout = Vec::with_capacity(f.layout.len() + after.len());
        for &b in &f.layout {
            layout.push(b);
            if let Some(new) = after.get(&b) {
                layout.extend(new.iter().rev());
            }
        }
        f.layout = layout;
    }
    stats
}

/// How many copies a parallel copy may have for [`sequentialize`] to look for a reader of
/// a destination pair by pair.
const FEW_COPIES: usize = 16;

/// Orders the parallel copy `dest <- src` (destinations distinct) into sequential copies
/// with the same effect, using a fresh temporary per cycle. A copy is *ready* when no
/// other pending copy still reads its destination; the ready copy that comes first in
/// the parallel copy goes first, and when only cycles remain, the first pending
/// destination is saved in a temporary that its readers read instead. Readers are
/// counted, so the order costs O(n log n), not a scan of the pending copies per copy.
pub fn sequentialize(
    f: &mut Function,
    copies: Vec<(Local, Local)>,
    namer: &mut Option<super::util::Namer>,
    stats: &mut Stats,
) -> Vec<(Local, Local)> {
    let copies: Vec<(Local, Local)> = copies.into_iter().filter(|(d, s)| d != s).collect();
    // Most parallel copies are a few copies none of which reads another's destination:
    // then every copy is ready from the start and they go in their order, which is what
    // the counting below finds too, without its maps and sets.
    if copies.len() <= FEW_COPIES && !copies.iter().any(|&(d, _)| copies.iter().any(|&(_, s)| s == d)) {
        return copies;
    }
    order_counted(f, copies, namer, stats)
}

/// [`sequentialize`]'s order for copies that are not self-copies, by counting readers.
/// What it keeps per local that is a destination is kept per copy (the destinations are
/// distinct), in lists by the copy's index: one map finds the copy a source is the
/// destination of (maps by local and ordered sets were most of the pass).
fn order_counted(
    f: &mut Function,
    copies: Vec<(Local, Local)>,
    namer: &mut Option<super::util::Namer>,
    stats: &mut Stats,
) -> Vec<(Local, Local)> {
    use std::cmp::Reverse;
    let n = copies.len();
    let index_of: crate::hash::HashMap<Local, usize> = copies.iter().enumerate().map(|(i, &(d, _))| (d, i)).collect();
    // How many pending copies read each copy's destination where it lives (a saved
    // destination is read from its temporary and no longer counted).
    let mut readers = vec![0u32; n];
    for (_, s) in &copies {
        if let Some(&j) = index_of.get(s) {
            readers[j] += 1;
        }
    }
    let mut saved: Vec<Option<Local>> = vec![None; n];
    let mut done = vec![false; n];
    // The first copy not done: every copy before it is.
    let mut first = 0;
    // The ready copies, the first in the parallel copy on top.
    let mut ready: std::collections::BinaryHeap<Reverse<usize>> = (0..n).filter(|&i| readers[i] == 0).map(Reverse).collect();
    let mut out = Vec::with_capacity(n);
    loop {
        while first < n && done[first] {
            first += 1;
        }
        if first == n {
            break;
        }
        let Some(Reverse(i)) = ready.pop() else {
            // Only cycles remain: save the first pending destination in a temporary.
            let d = copies[first].0;
            let name = format!("{}.tmp", f.locals[d].name);
            let ty = f.locals[d].ty;
            let t = namer.get_or_insert_with(|| super::util::Namer::new(f)).new_local(f, &name, ty);
            stats.bump("cycle_temps");
            out.push((t, d));
            saved[first] = Some(t);
            readers[first] = 0;
            ready.push(Reverse(first));
            continue;
        };
        done[i] = true;
        let (d, s) = copies[i];
        let j = index_of.get(&s).copied();
        match j.and_then(|j| saved[j]) {
            Some(t) => out.push((d, t)),
            None => {
                out.push((d, s));
                if let Some(j) = j {
                    readers[j] -= 1;
                    if readers[j] == 0 && !done[j] {
                        ready.push(Reverse(j));
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Type;
    use cranelift_entity::EntityRef;

    /// Every parallel copy over four locals (each local a destination or not, each
    /// destination with any of the four as its source): the sequence has the parallel
    /// copy's effect, and the shortcut for copies without a reader of a destination gives
    /// exactly the order the counting gives.
    #[test]
    fn sequentialize_every_parallel_copy_of_four_locals() {
        const N: usize = 4;
        let mut cases = 0;
        for mask in 0u32..1 << N {
            let dests: Vec<usize> = (0..N).filter(|i| mask >> i & 1 == 1).collect();
            for choice in 0..N.pow(dests.len() as u32) {
                let mut f = Function::new("f", Type::I32);
                let locals: Vec<Local> = (0..N).map(|i| f.new_local(&format!("x{i}"), Type::I32)).collect();
                let mut c = choice;
                let copies: Vec<(Local, Local)> = dests
                    .iter()
                    .map(|&d| {
                        let s = c % N;
                        c /= N;
                        (locals[d], locals[s])
                    })
                    .collect();
                let mut stats = Stats::default();
                let seq = sequentialize(&mut f, copies.clone(), &mut None, &mut stats);
                // The effect, on values that tell the locals apart (temporaries included).
                let mut values: Vec<i64> = (0..f.locals.len() as i64 + 8).map(|i| 100 + i).collect();
                let before = values.clone();
                for &(d, s) in &seq {
                    values[d.index()] = values[s.index()];
                }
                for (i, &l) in locals.iter().enumerate() {
                    let want = copies.iter().find(|(d, _)| *d == l).map_or(before[i], |(_, s)| before[s.index()]);
                    assert_eq!(values[l.index()], want, "{copies:?} sequentialized as {seq:?}");
                }
                let kept: Vec<(Local, Local)> = copies.iter().copied().filter(|(d, s)| d != s).collect();
                let mut g = Function::new("f", Type::I32);
                for i in 0..N {
                    g.new_local(&format!("x{i}"), Type::I32);
                }
                let counted = order_counted(&mut g, kept, &mut None, &mut Stats::default());
                assert_eq!(seq, counted, "{copies:?}");
                cases += 1;
            }
        }
        assert_eq!(cases, 625);
    }
}
