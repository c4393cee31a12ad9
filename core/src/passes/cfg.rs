//! The control-flow graph analysis: successors and predecessors of every block in the
//! layout (duplicates removed: a branch whose two targets agree is one edge), and the
//! reverse post-order from the entry. It is a snapshot: a pass that adds, removes or
//! redirects blocks says so (`PassInfo::changes_cfg`) and the pass manager recomputes it
//! for the next pass that reads it.

use crate::ir::{Block, Function};
use cranelift_entity::{EntityRef, SecondaryMap};

/// A map holding the default value for each of `n` entities: a map sized once, where
/// one grown at each index higher than any before calls its resize each time (and moves
/// the lists it holds).
pub(crate) fn sized<K: EntityRef, V: Clone + Default>(n: usize) -> SecondaryMap<K, V> {
    let mut m = SecondaryMap::with_capacity(n);
    m.resize(n);
    m
}

/// The successors of block `b` as the CFG lists them: each once, in the order its
/// terminator names them.
pub(crate) fn successors(f: &Function, b: Block) -> smallvec::SmallVec<[Block; 4]> {
    let mut s = smallvec::SmallVec::new();
    for t in f.blocks[b].term.successors() {
        if !s.contains(&t) {
            s.push(t);
        }
    }
    s
}

/// Successors, predecessors and the reverse post-order of a function's blocks.
#[derive(Clone, Debug, Default)]
pub struct Cfg {
    pub succs: SecondaryMap<Block, Vec<Block>>,
    pub preds: SecondaryMap<Block, Vec<Block>>,
    /// Blocks reachable from the entry in reverse post-order; the entry is first.
    pub rpo: Vec<Block>,
    /// Position of each block in `rpo` (`u32::MAX` for unreachable blocks).
    pub rpo_index: SecondaryMap<Block, u32>,
}

impl Cfg {
    /// Computes the CFG of `f`.
    pub fn compute(f: &Function) -> Cfg {
        // Every map sized for every block at the start ([`sized`]).
        let n = f.blocks.len();
        let mut cfg = Cfg { succs: sized(n), preds: sized(n), rpo: vec![], rpo_index: sized(n) };
        // Each list is made at its size (the predecessors counted first), not grown.
        let mut npreds: SecondaryMap<Block, u32> = sized(n);
        for &b in &f.layout {
            let s = successors(f, b).into_vec();
            for &t in &s {
                npreds[t] += 1;
            }
            cfg.succs[b] = s;
        }
        for &b in &f.layout {
            cfg.preds[b] = Vec::with_capacity(npreds[b] as usize);
        }
        for &b in &f.layout {
            for &t in &cfg.succs[b] {
                cfg.preds[t].push(b);
            }
        }
        // Iterative depth-first search for the post-order.
        let mut post = Vec::with_capacity(n);
        let mut seen: SecondaryMap<Block, bool> = sized(n);
        let mut stack = vec![(f.entry(), 0usize)];
        seen[f.entry()] = true;
        while let Some((b, i)) = stack.pop() {
            if i < cfg.succs[b].len() {
                stack.push((b, i + 1));
                let t = cfg.succs[b][i];
                if !seen[t] {
                    seen[t] = true;
                    stack.push((t, 0));
                }
            } else {
                post.push(b);
            }
        }
        post.reverse();
        for &b in &f.layout {
            cfg.rpo_index[b] = u32::MAX;
        }
        for (i, &b) in post.iter().enumerate() {
            cfg.rpo_index[b] = i as u32;
        }
        cfg.rpo = post;
        cfg
    }
}
