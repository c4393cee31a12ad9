//! `cprop` (`DESIGN.md` pass 5): local copy and constant propagation per block with
//! constant folding, and the tree mover of `seeds/tree-mover.txt` running inside it,
//! on non-SSA HIR.
//!
//! Each block is walked statement by statement, each tree in evaluation order. The ACP
//! (available copies and constants) maps a local to the constant or the other local it
//! was last assigned by a top-level statement of this block; a use of a local with an
//! ACP entry is rewritten at once, and a node whose operands are all constants is folded
//! (`super::fold`, exactly the semantics of `crate::ir`; a division that would trap is
//! left alone). A definition of `x` removes the entries of `x` and those that copy `x`.
//! A self-copy `x = x` left by propagation is deleted. Every event — a use after
//! rewriting, a definition, a memory write, a forwarding copy, a movable tree
//! definition, the end of the block — is passed to the [`TreeMover`]; its moves are
//! performed after the last block.
//!
//! Statistics: `copies` and `consts` propagated, `folded` nodes, `self_copies` removed,
//! and the tree mover's counters (see [`super::tree_mover`]).

use super::fold::fold_node;
use super::tree_mover::TreeMover;
use super::util::{postorder_into, remove_unused_locals};
use super::Stats;
use crate::ir::{Block, ExprData, Function, Local, Type};
use crate::hash::HashMap;

/// An ACP entry.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Avail {
    Const(Type, i64),
    Copy(Local),
}

/// Runs copy/constant propagation and the tree mover over `f`.
pub fn run(f: &mut Function) -> Stats {
    let mut stats = Stats::default();
    let mut tm = TreeMover::new(f.locals.len());
    // The nodes of the tree being propagated, in order: one list for every tree.
    let mut order = vec![];
    for b in f.layout.clone() {
        cprop_block(f, b, &mut tm, &mut stats, &mut order);
    }
    let deleted = tm.resolve(f, &mut stats);
    for b in f.layout.clone() {
        f.blocks[b].stmts.retain(|s| !deleted.contains(s));
    }
    remove_unused_locals(f);
    stats
}

/// The ACP of one block, with the reverse index of copies so that a definition kills in
/// time proportional to what it kills, not to the size of the ACP.
#[derive(Default)]
struct Acp {
    avail: HashMap<Local, Avail>,
    /// For each `y`, the locals that were made copies of `y` (some may be stale: an entry
    /// counts only while `avail` still says so).
    copies_of: HashMap<Local, Vec<Local>>,
}

impl Acp {
    fn get(&self, l: &Local) -> Option<&Avail> {
        self.avail.get(l)
    }

    fn insert(&mut self, x: Local, a: Avail) {
        if let Avail::Copy(y) = a {
            self.copies_of.entry(y).or_default().push(x);
        }
        self.avail.insert(x, a);
    }

    /// A definition of `x` removes the entry of `x` and those that copy `x`.
    fn kill(&mut self, x: Local) {
        self.avail.remove(&x);
        for z in self.copies_of.remove(&x).unwrap_or_default() {
            if self.avail.get(&z) == Some(&Avail::Copy(x)) {
                self.avail.remove(&z);
            }
        }
    }
}

fn cprop_block(f: &mut Function, b: Block, tm: &mut TreeMover, stats: &mut Stats, order: &mut Vec<crate::ir::Expr>) {
    let mut acp = Acp::default();
    let stmts = f.blocks[b].stmts.clone();
    let mut kept = vec![];
    for s in stmts {
        // A copy that propagation turns into `x = x` does nothing: drop it unseen.
        if let ExprData::Assign { local, value } = f.exprs[s] {
            if let ExprData::Local(y) = f.exprs[value] {
                if y == local || acp.get(&y) == Some(&Avail::Copy(local)) {
                    stats.bump("self_copies");
                    continue;
                }
            }
        }
        cprop_tree(f, b, s, &mut acp, tm, stats, true, order);
        kept.push(s);
    }
    f.blocks[b].stmts = kept;
    if let Some(t) = f.blocks[b].term.expr() {
        cprop_tree(f, b, t, &mut acp, tm, stats, false, order);
    }
    tm.end_block();
}

fn cprop_tree(
    f: &mut Function,
    b: Block,
    root: crate::ir::Expr,
    acp: &mut Acp,
    tm: &mut TreeMover,
    stats: &mut Stats,
    is_stmt: bool,
    order: &mut Vec<crate::ir::Expr>,
) {
    postorder_into(f, root, order);
    for &n in order.iter() {
        // Matched by copies of its fields (a clone of the node copied a call's arguments).
        match f.exprs[n] {
            ExprData::Local(l) => match acp.get(&l) {
                Some(&Avail::Const(ty, value)) => {
                    f.exprs[n] = ExprData::Const { ty, value };
                    stats.bump("consts");
                }
                Some(&Avail::Copy(m)) => {
                    f.exprs[n] = ExprData::Local(m);
                    stats.bump("copies");
                    tm.use_(m, n, stats);
                }
                None => tm.use_(l, n, stats),
            },
            ExprData::Assign { local: x, value } => {
                tm.def(x, stats);
                acp.kill(x);
                if !(is_stmt && n == root) {
                    continue;
                }
                match f.exprs[value] {
                    ExprData::Const { ty, value } => {
                        acp.insert(x, Avail::Const(ty, value));
                    }
                    ExprData::Local(y) => {
                        if y != x {
                            acp.insert(x, Avail::Copy(y));
                            tm.copy(x, y, value, n);
                        }
                    }
                    _ => {
                        // One walk for both questions (the tree's nodes were all
                        // propagated above: they are what a second walk would see).
                        let (mut reads_x, mut effect) = (false, false);
                        f.visit_postorder(value, &mut |e| {
                            reads_x |= f.exprs[e] == ExprData::Local(x);
                            effect |= f.exprs[e].has_side_effect();
                        });
                        if !reads_x && !effect {
                            tm.tree_def(f, b, x, n, value);
                        }
                    }
                }
            }
            ExprData::Store { .. } | ExprData::CfWrite { .. } => tm.memory_write(stats),
            ExprData::Call { helper, .. } => {
                let e = helper.effects();
                if e.writes_heap || e.writes_callframe {
                    tm.memory_write(stats);
                }
            }
            _ => {
                if let Some((ty, value)) = fold_node(f, n) {
                    f.exprs[n] = ExprData::Const { ty, value };
                    stats.bump("folded");
                }
            }
        }
    }
}
