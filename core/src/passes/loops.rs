//! Loop nesting: natural loops found from back edges (an edge whose target dominates its
//! source), back edges to one header merged into one loop, loops nested by containment of
//! their block sets. Each block knows its innermost loop and its loop depth. Like the
//! other CFG analyses it is recomputed when a pass changes the CFG.

use super::cfg::Cfg;
use super::domtree::DomTree;
use crate::ir::Block;
use cranelift_entity::{entity_impl, PrimaryMap, SecondaryMap};

/// A natural loop.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Loop(u32);
entity_impl!(Loop, "loop");

/// One loop: its header, its blocks (header included), its parent and depth (outermost 1).
#[derive(Clone, Debug)]
pub struct LoopData {
    pub header: Block,
    pub blocks: Vec<Block>,
    pub parent: Option<Loop>,
    pub depth: u32,
}

/// The loop nest of a function.
#[derive(Clone, Debug, Default)]
pub struct LoopNest {
    pub loops: PrimaryMap<Loop, LoopData>,
    /// The innermost loop holding each block.
    pub innermost: SecondaryMap<Block, Option<Loop>>,
}

impl LoopNest {
    /// Finds the natural loops of the reachable blocks.
    pub fn compute(cfg: &Cfg, dt: &DomTree) -> LoopNest {
        let mut nest = LoopNest::default();
        // Headers in reverse post-order, so outer loops come before inner ones.
        for &h in &cfg.rpo {
            let latches: Vec<Block> =
                cfg.preds[h].iter().copied().filter(|&p| dt.dominates(h, p)).collect();
            if latches.is_empty() {
                continue;
            }
            let mut body = vec![h];
            let mut work = latches;
            while let Some(b) = work.pop() {
                if body.contains(&b) {
                    continue;
                }
                body.push(b);
                work.extend(cfg.preds[b].iter().copied().filter(|&p| cfg.rpo_index[p] != u32::MAX));
            }
            body.sort();
            nest.loops.push(LoopData { header: h, blocks: body, parent: None, depth: 1 });
        }
        // The parent of a loop is the smallest other loop containing its header.
        let ids: Vec<Loop> = nest.loops.keys().collect();
        for &l in &ids {
            let h = nest.loops[l].header;
            let parent = ids
                .iter()
                .copied()
                .filter(|&o| o != l && nest.loops[o].blocks.contains(&h) && nest.loops[o].header != h)
                .min_by_key(|&o| nest.loops[o].blocks.len());
            nest.loops[l].parent = parent;
        }
        // Depths: parents come first in `ids` (outer headers precede inner ones in RPO).
        for &l in &ids {
            nest.loops[l].depth = nest.loops[l].parent.map_or(1, |p| nest.loops[p].depth + 1);
        }
        for &l in &ids {
            for &b in &nest.loops[l].blocks.clone() {
                let better = match nest.innermost[b] {
                    None => true,
                    Some(o) => nest.loops[o].depth < nest.loops[l].depth,
                };
                if better {
                    nest.innermost[b] = Some(l);
                }
            }
        }
        nest
    }

    /// The loop depth of a block: 0 outside every loop.
    pub fn depth(&self, b: Block) -> u32 {
        self.innermost[b].map_or(0, |l| self.loops[l].depth)
    }
}
