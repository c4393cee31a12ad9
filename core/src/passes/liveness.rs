//! Liveness of locals at block boundaries, by the classic backward data-flow fixpoint.
//! Phis follow their semantics in `ir.rs`: a phi's destination is defined at the top of
//! its block, and its argument for predecessor `p` is used at the end of `p` (it is in
//! `p`'s live-out, not in the phi block's live-in). `live_in[b]` is what is live on entry
//! to `b` before its phis; it never holds `b`'s phi destinations. Liveness depends on the
//! statements, so every pass that changes code must recompute it before using it.

use super::cfg::Cfg;
use super::util::LocalSet;
use crate::ir::{Block, Expr, ExprData, Function, Local};
use cranelift_entity::SecondaryMap;

/// Live-in and live-out sets of every block.
#[derive(Clone, Debug, Default)]
pub struct Liveness {
    pub live_in: SecondaryMap<Block, LocalSet>,
    pub live_out: SecondaryMap<Block, LocalSet>,
}

impl Liveness {
    /// Computes liveness for the blocks of `cfg`.
    pub fn compute(f: &Function, cfg: &Cfg) -> Liveness {
        Liveness::compute_noting(f, cfg, |_, _, _, _| {})
    }

    /// [`Liveness::compute`], calling `note(b, n, x, def)` at every node `n` of a block
    /// `b` that names a local `x` (an assignment: `def`; else a read), blocks in `cfg`'s
    /// reverse post-order and each block's trees (statements, then the terminator's) in
    /// evaluation order: SSA construction's definition blocks and the nodes its renaming
    /// rewrites, from the walk that finds the uses and kills (a walk of every tree of its
    /// own otherwise).
    pub fn compute_noting(f: &Function, cfg: &Cfg, mut note: impl FnMut(Block, Expr, Local, bool)) -> Liveness {
        let n = f.locals.len();
        // Upward-exposed uses and definitions of each block's statements and terminator.
        let nb = f.blocks.len();
        let mut gen: SecondaryMap<Block, LocalSet> = super::cfg::sized(nb);
        let mut kill: SecondaryMap<Block, LocalSet> = super::cfg::sized(nb);
        for &b in &cfg.rpo {
            let mut g = LocalSet::new(n);
            let mut k = LocalSet::new(n);
            for phi in &f.blocks[b].phis {
                k.insert(phi.dest);
            }
            let data = &f.blocks[b];
            for r in data.stmts.iter().copied().chain(data.term.expr()) {
                // The reads and writes of the tree in evaluation order (`util::accesses`,
                // without a list per tree).
                f.visit_postorder(r, &mut |e| match f.exprs[e] {
                    ExprData::Local(l) => {
                        if !k.contains(l) {
                            g.insert(l);
                        }
                        note(b, e, l, false);
                    }
                    ExprData::Assign { local, .. } => {
                        k.insert(local);
                        note(b, e, local, true);
                    }
                    _ => {}
                });
            }
            gen[b] = g;
            kill[b] = k;
        }
        let mut lv = Liveness { live_in: super::cfg::sized(nb), live_out: super::cfg::sized(nb) };
        for &b in &cfg.rpo {
            lv.live_in[b] = LocalSet::new(n);
            lv.live_out[b] = LocalSet::new(n);
        }
        // Rounds in post-order until nothing changes, where a block is made again only
        // when a successor's live-in changed since it was last made (first, every
        // block): the least fixpoint, whatever the order. The sets of a block are made
        // in two buffers, swapped in when they differ.
        let mut dirty: SecondaryMap<Block, bool> = super::cfg::sized(nb);
        cfg.rpo.iter().for_each(|&b| dirty[b] = true);
        let (mut out, mut inn) = (LocalSet::new(n), LocalSet::new(n));
        let mut changed = true;
        while changed {
            changed = false;
            for &b in cfg.rpo.iter().rev() {
                if !std::mem::replace(&mut dirty[b], false) {
                    continue;
                }
                out.clear();
                for &s in &cfg.succs[b] {
                    // A live-in set never holds its block's phi destinations (they are in
                    // `kill`, and `gen` holds no local its block defined first), so what
                    // `s` passes back is its live-in and the arguments of its phis for `b`.
                    out.union_with(&lv.live_in[s]);
                    for phi in &f.blocks[s].phis {
                        for (p, a) in &phi.args {
                            if *p == b {
                                out.insert(*a);
                            }
                        }
                    }
                }
                inn.copy_from(&gen[b]);
                inn.union_with_difference(&out, &kill[b]);
                if out != lv.live_out[b] {
                    std::mem::swap(&mut out, &mut lv.live_out[b]);
                }
                if inn != lv.live_in[b] {
                    std::mem::swap(&mut inn, &mut lv.live_in[b]);
                    cfg.preds[b].iter().for_each(|&p| dirty[p] = true);
                    changed = true;
                }
            }
        }
        lv
    }
}
