//! The edges SSAPRE may insert on. A Φ operand "occurs at the end of the predecessor"
//! (`seeds/ssapre.txt`), so an insertion goes at the end of a predecessor block, after
//! everything that block evaluates. That is only possible when the predecessor ends in a
//! plain `jump` (no terminator expression evaluated after the insertion point) and has the
//! merge as its only successor. [`split_edges`] gives every edge into a merge (a block
//! with several predecessors or with phis) whose source ends otherwise a new block of its
//! own holding a `jump`; [`unsplit_unused`] removes those that stayed empty, so the pass
//! changes the CFG only where it inserted.

use crate::ir::{Block, Function, Terminator};

/// Splits every edge `p -> s` into a merge `s` whose source `p` does not end in a plain
/// `jump`. Returns the new blocks with their source and target.
pub fn split_edges(f: &mut Function) -> Vec<(Block, Block, Block)> {
    let preds = f.predecessors();
    let mut made = vec![];
    for p in f.layout.clone() {
        if matches!(f.blocks[p].term, Terminator::Jump(_)) {
            continue;
        }
        let mut succs = f.blocks[p].term.successors();
        succs.dedup();
        let mut seen = vec![];
        for s in succs {
            if seen.contains(&s) {
                continue;
            }
            seen.push(s);
            if preds[s].len() < 2 && f.blocks[s].phis.is_empty() {
                continue;
            }
            let n = crate::passes::util::split_edge(f, p, s);
            let at = f.layout.iter().position(|&b| b == p).expect("in layout") + 1;
            f.layout.insert(at, n);
            made.push((n, p, s));
        }
    }
    made
}

/// Undoes the splits of [`split_edges`] whose new block is still empty. Returns how many
/// new blocks stay.
pub fn unsplit_unused(f: &mut Function, made: &[(Block, Block, Block)]) -> usize {
    let mut kept = 0;
    for &(n, p, s) in made {
        if !f.blocks[n].stmts.is_empty() || !f.blocks[n].phis.is_empty() {
            kept += 1;
            continue;
        }
        for t in f.blocks[p].term.successors_mut() {
            if *t == n {
                *t = s;
            }
        }
        for phi in f.blocks[s].phis.iter_mut() {
            for (b, _) in phi.args.iter_mut() {
                if *b == n {
                    *b = p;
                }
            }
        }
        f.layout.retain(|&b| b != n);
    }
    kept
}
