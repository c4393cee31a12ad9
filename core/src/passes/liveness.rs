//! Liveness of locals at block boundaries, by the classic backward data-flow fixpoint.
//! Phis follow their semantics in `ir.rs`: a phi's destination is defined at the top of
//! its block, and its argument for predecessor `p` is used at the end of `p` (it is in
//! `p`'s live-out, not in the phi block's live-in). `live_in[b]` is what is live on entry
//! to `b` before its phis; it never holds `b`'s phi destinations. Liveness depends on the
//! statements, so every pass that changes code must recompute it before using it.

use super::cfg::Cfg;
use super::util::{accesses, Access, LocalSet};
use crate::ir::{Block, Function};
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
        let n = f.locals.len();
        // Upward-exposed uses and definitions of each block's statements and terminator.
        let mut gen: SecondaryMap<Block, LocalSet> = SecondaryMap::new();
        let mut kill: SecondaryMap<Block, LocalSet> = SecondaryMap::new();
        for &b in &cfg.rpo {
            let mut g = LocalSet::new(n);
            let mut k = LocalSet::new(n);
            for phi in &f.blocks[b].phis {
                k.insert(phi.dest);
            }
            let data = &f.blocks[b];
            for r in data.stmts.iter().copied().chain(data.term.expr()) {
                for a in accesses(f, r) {
                    match a {
                        Access::Use(l) => {
                            if !k.contains(l) {
                                g.insert(l);
                            }
                        }
                        Access::Def(l) => {
                            k.insert(l);
                        }
                    }
                }
            }
            gen[b] = g;
            kill[b] = k;
        }
        let mut lv = Liveness::default();
        for &b in &cfg.rpo {
            lv.live_in[b] = LocalSet::new(n);
            lv.live_out[b] = LocalSet::new(n);
        }
        let mut changed = true;
        while changed {
            changed = false;
            for &b in cfg.rpo.iter().rev() {
                let mut out = LocalSet::new(n);
                for &s in &cfg.succs[b] {
                    let mut from_s = lv.live_in[s].clone();
                    for phi in &f.blocks[s].phis {
                        from_s.remove(phi.dest);
                        for (p, a) in &phi.args {
                            if *p == b {
                                from_s.insert(*a);
                            }
                        }
                    }
                    out.union_with(&from_s);
                }
                let mut inn = gen[b].clone();
                for l in out.iter() {
                    if !kill[b].contains(l) {
                        inn.insert(l);
                    }
                }
                if inn != lv.live_in[b] || out != lv.live_out[b] {
                    changed = true;
                    lv.live_in[b] = inn;
                    lv.live_out[b] = out;
                }
            }
        }
        lv
    }
}
