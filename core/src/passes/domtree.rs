//! The dominator tree, computed with the iterative algorithm of Cooper, Harvey and
//! Kennedy ("A Simple, Fast Dominance Algorithm", 2001), and dominance frontiers computed
//! from it the same paper's way (walk up from each predecessor of a join block to the
//! join block's immediate dominator). SSA construction (`seeds/ssapre.txt` assumes SSA
//! form) places phis on the iterated dominance frontier of each variable's definitions.
//! Both are snapshots of one CFG and are recomputed when a pass changes the CFG.

use super::cfg::{sized, BlockLists, Cfg};
use cranelift_entity::EntityRef;
use crate::ir::{Block, Function};
use cranelift_entity::SecondaryMap;

/// Immediate dominators and dominator-tree children of the reachable blocks.
#[derive(Clone, Debug, Default)]
pub struct DomTree {
    /// The immediate dominator; `None` for the entry and for unreachable blocks.
    pub idom: SecondaryMap<Block, Option<Block>>,
    /// Children in the dominator tree, in block order.
    pub children: BlockLists,
    /// Reverse post-order positions, copied from the CFG for the intersection walk.
    rpo_index: SecondaryMap<Block, u32>,
    entry: Option<Block>,
    /// The blocks in dominator-tree pre-order.
    preorder: Vec<Block>,
    /// Each block's interval in a depth-first numbering of the tree (`pre` from 1, 0 for
    /// a block outside the tree; `last` the largest `pre` of its subtree): `a` dominates
    /// `b` exactly when `b`'s number lies in `a`'s interval.
    pre: SecondaryMap<Block, u32>,
    last: SecondaryMap<Block, u32>,
}

impl DomTree {
    /// Computes the dominator tree of `f` over `cfg`.
    pub fn compute(f: &Function, cfg: &Cfg) -> DomTree {
        let entry = f.entry();
        // Every map sized for every block at the start ([`sized`]).
        let n = f.blocks.len();
        let mut idom: SecondaryMap<Block, Option<Block>> = sized(n);
        idom[entry] = Some(entry);
        let intersect = |idom: &SecondaryMap<Block, Option<Block>>, mut a: Block, mut b: Block| {
            while a != b {
                while cfg.rpo_index[a] > cfg.rpo_index[b] {
                    a = idom[a].expect("processed");
                }
                while cfg.rpo_index[b] > cfg.rpo_index[a] {
                    b = idom[b].expect("processed");
                }
            }
            a
        };
        let mut changed = true;
        while changed {
            changed = false;
            for &b in cfg.rpo.iter().skip(1) {
                let mut new: Option<Block> = None;
                for &p in &cfg.preds[b] {
                    if idom[p].is_none() {
                        continue;
                    }
                    new = Some(match new {
                        None => p,
                        Some(n) => intersect(&idom, p, n),
                    });
                }
                if new.is_some() && idom[b] != new {
                    idom[b] = new;
                    changed = true;
                }
            }
        }
        idom[entry] = None;
        // Children in block order, so that walks (and the version numbers SSA renaming
        // hands out) follow the order a reader sees: the blocks with an immediate
        // dominator (the reachable ones but the entry) taken in block order, each list
        // given its place in one vector once they are counted.
        let mut counts = vec![0u32; n];
        for d in idom.values().flatten() {
            counts[d.index()] += 1;
        }
        let children = BlockLists::from_counts(&counts, idom.iter().filter_map(|(b, d)| d.map(|d| (d, b))));
        let mut tree = DomTree {
            idom,
            children,
            rpo_index: cfg.rpo_index.clone(),
            entry: Some(entry),
            preorder: Vec::with_capacity(cfg.rpo.len()),
            pre: sized(n),
            last: sized(n),
        };
        tree.number();
        tree
    }

    /// The pre-order and each block's interval (see [`DomTree::pre`]).
    fn number(&mut self) {
        let mut stack: Vec<Block> = self.entry.into_iter().collect();
        while let Some(b) = stack.pop() {
            self.preorder.push(b);
            self.pre[b] = self.preorder.len() as u32;
            stack.extend(self.children[b].iter().rev());
        }
        // In pre-order every subtree is one run starting at its root, so a reverse pass
        // gives each block the largest number below it.
        for &b in self.preorder.iter().rev() {
            let below = self.children[b].iter().map(|&c| self.last[c]).max().unwrap_or(0);
            self.last[b] = self.pre[b].max(below);
        }
    }

    /// Whether `a` dominates `b` (every block dominates itself).
    pub fn dominates(&self, a: Block, mut b: Block) -> bool {
        let (pa, pb) = (self.pre[a], self.pre[b]);
        if a != b && pa != 0 && pb != 0 {
            return pa <= pb && pb <= self.last[a];
        }
        // A block outside the tree: the walk up from `b`.
        loop {
            if a == b {
                return true;
            }
            if self.rpo_index[b] <= self.rpo_index[a] {
                return false;
            }
            match self.idom[b] {
                Some(d) => b = d,
                None => return false,
            }
        }
    }

    /// The blocks in dominator-tree pre-order, starting at the entry.
    pub fn preorder(&self) -> Vec<Block> {
        self.preorder.clone()
    }

    /// The position of `b` in [`DomTree::preorder`], from 1 (the order [`walk_scoped`]
    /// enters blocks in); 0 for a block outside the tree. A sparse walk (SSAPRE's Rename
    /// over the blocks where one expression occurs) sorts its blocks by it.
    ///
    /// [`walk_scoped`]: DomTree::walk_scoped
    pub fn preorder_number(&self, b: Block) -> u32 {
        self.pre[b]
    }

    /// The block numbered `n` by [`DomTree::preorder_number`] (from 1).
    pub fn at_preorder(&self, n: u32) -> Block {
        self.preorder[n as usize - 1]
    }

    /// Walks the dominator tree from the entry in pre-order with an explicit stack (no
    /// recursion): `enter` visits a block before its children and returns what `leave`
    /// undoes once the whole subtree is done. The walk of renaming, with its scoped stacks
    /// (SSA construction, SSAPRE's Rename). Both get `state`, which they may change.
    pub fn walk_scoped<S, T>(
        &self,
        state: &mut S,
        mut enter: impl FnMut(&mut S, Block) -> T,
        mut leave: impl FnMut(&mut S, T),
    ) {
        enum Work<T> {
            Enter(Block),
            Leave(T),
        }
        // Room for an entry and an exit of every block of the tree, the most the walk can
        // hold, rather than grown push by push.
        let mut work: Vec<Work<T>> = Vec::with_capacity(2 * self.preorder.len());
        work.extend(self.entry.into_iter().map(Work::Enter));
        while let Some(w) = work.pop() {
            match w {
                Work::Leave(t) => leave(state, t),
                Work::Enter(b) => {
                    let t = enter(state, b);
                    work.push(Work::Leave(t));
                    work.extend(self.children[b].iter().rev().map(|&c| Work::Enter(c)));
                }
            }
        }
    }
}

/// How long an iterated frontier [`DominanceFrontiers::iterated`] looks through for
/// membership before it hashes.
const SHORT_FRONTIER: usize = 16;

/// The dominance frontier of every block.
#[derive(Clone, Debug, Default)]
pub struct DominanceFrontiers {
    pub frontier: SecondaryMap<Block, Vec<Block>>,
}

impl DominanceFrontiers {
    /// Computes the frontiers from the CFG and the dominator tree.
    pub fn compute(cfg: &Cfg, dt: &DomTree) -> DominanceFrontiers {
        let mut frontier: SecondaryMap<Block, Vec<Block>> = SecondaryMap::new();
        for &b in &cfg.rpo {
            if cfg.preds[b].len() < 2 {
                continue;
            }
            let Some(id) = dt.idom[b] else { continue };
            for &p in &cfg.preds[b] {
                if cfg.rpo_index[p] == u32::MAX {
                    continue;
                }
                let mut runner = p;
                while runner != id {
                    if !frontier[runner].contains(&b) {
                        frontier[runner].push(b);
                    }
                    match dt.idom[runner] {
                        Some(d) => runner = d,
                        None => break,
                    }
                }
            }
        }
        DominanceFrontiers { frontier }
    }

    /// The iterated dominance frontier of a set of blocks, sorted by block number.
    pub fn iterated(&self, blocks: &[Block]) -> Vec<Block> {
        let mut out: Vec<Block> = Vec::with_capacity(SHORT_FRONTIER);
        // Membership by a look through `out` while it is short (most iterated frontiers
        // are a few blocks, and a hash set was an allocation and a probe each), then by
        // hash: a chain of blocks has a frontier as long as the chain.
        let mut seen: Option<crate::hash::HashSet<Block>> = None;
        let mut work: Vec<Block> = Vec::with_capacity(blocks.len() + SHORT_FRONTIER);
        work.extend_from_slice(blocks);
        while let Some(b) = work.pop() {
            for &d in &self.frontier[b] {
                let new = match &mut seen {
                    Some(seen) => seen.insert(d),
                    None if out.contains(&d) => false,
                    None => {
                        if out.len() == SHORT_FRONTIER {
                            seen = Some(out.iter().copied().chain([d]).collect());
                        }
                        true
                    }
                };
                if new {
                    out.push(d);
                    work.push(d);
                }
            }
        }
        out.sort();
        out
    }
}
