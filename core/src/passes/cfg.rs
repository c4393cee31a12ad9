//! The control-flow graph analysis: successors and predecessors of every block in the
//! layout (duplicates removed: a branch whose two targets agree is one edge), and the
//! reverse post-order from the entry. It is a snapshot of the function it was computed
//! from: each pass computes it afresh, and one that adds, removes or redirects blocks
//! computes it again where it reads it after.

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

/// A list of blocks for each block, all in one vector: block `b`'s is `items[span]` of
/// its span (an empty list for a block it has none for). It reads as the map of `Vec`s it
/// replaces (`lists[b]` is a slice), without a `Vec` per block: the CFG is computed many
/// times per function (by the pass manager, `memopt`, `ssapre` and the SSA check), and
/// its two lists per block were most of its cost, and of its drop.
#[derive(Clone, Debug, Default)]
pub struct BlockLists {
    spans: Vec<(u32, u32)>,
    items: Vec<Block>,
}

impl BlockLists {
    /// The lists of `counts.len()` blocks, block `b`'s `counts[b]` long, holding the
    /// second block of each pair `(b, x)` of `pairs` in their order.
    pub(crate) fn from_counts(counts: &[u32], pairs: impl Iterator<Item = (Block, Block)>) -> BlockLists {
        let mut spans = Vec::with_capacity(counts.len());
        let mut at = 0u32;
        for &k in counts {
            spans.push((at, at));
            at += k;
        }
        let mut items = vec![Block::new(0); at as usize];
        for (b, x) in pairs {
            let span = &mut spans[b.index()];
            items[span.1 as usize] = x;
            span.1 += 1;
        }
        BlockLists { spans, items }
    }
}

impl std::ops::Index<Block> for BlockLists {
    type Output = [Block];

    #[inline]
    fn index(&self, b: Block) -> &[Block] {
        match self.spans.get(b.index()) {
            Some(&(start, end)) => &self.items[start as usize..end as usize],
            None => &[],
        }
    }
}

/// Successors, predecessors and the reverse post-order of a function's blocks.
#[derive(Clone, Debug, Default)]
pub struct Cfg {
    pub succs: BlockLists,
    pub preds: BlockLists,
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
        let mut succs = BlockLists { spans: vec![(0, 0); n], items: Vec::with_capacity(2 * f.layout.len()) };
        // The predecessors counted first, then each list given its place in one vector
        // (in block order) and filled in layout order of the predecessor.
        let mut npreds = vec![0u32; n];
        for &b in &f.layout {
            let start = succs.items.len() as u32;
            for t in f.blocks[b].term.successors() {
                if !succs.items[start as usize..].contains(&t) {
                    succs.items.push(t);
                    npreds[t.index()] += 1;
                }
            }
            succs.spans[b.index()] = (start, succs.items.len() as u32);
        }
        let edges = f.layout.iter().flat_map(|&b| succs[b].iter().map(move |&t| (t, b)));
        let preds = BlockLists::from_counts(&npreds, edges);
        let mut cfg = Cfg { succs, preds, rpo: vec![], rpo_index: sized(n) };
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
