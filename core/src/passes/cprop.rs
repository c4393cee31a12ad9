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
//! definition, the end of the block — is passed to the [`TreeMover`], and so is every
//! node once it is propagated (the mover keeps the parents of the nodes so, for the depth
//! of a use, without a walk of its own); its moves are performed after the last block.
//!
//! Statistics: `copies` and `consts` propagated, `folded` nodes, `self_copies` removed,
//! and the tree mover's counters (see [`super::tree_mover`]).

use super::fold::fold_node;
use super::tree_mover::{MoveStatus, TreeMover};
use super::util::{postorder_into, remove_unmentioned_locals};
use super::Stats;
use crate::hash::HashSet;
use crate::ir::{Block, Expr, ExprData, Function, Local, Type};
use cranelift_entity::EntityRef;
use smallvec::SmallVec;

/// An ACP entry.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Avail {
    Const(Type, i64),
    Copy(Local),
}

/// Runs copy/constant propagation and the tree mover over `f`.
pub fn run(f: &mut Function) -> Stats {
    let mut stats = Stats::default();
    let mut tm = TreeMover::new(f.locals.len(), f.exprs.len());
    // The nodes of the tree being propagated, in order: one list for every tree.
    let mut order = vec![];
    let mut acp = Acp::default();
    let mut mentions = Mentions::default();
    // Neither step changes the layout: it is indexed, not copied.
    for i in 0..f.layout.len() {
        let b = f.layout[i];
        cprop_block(f, b, &mut tm, &mut stats, &mut order, &mut acp, &mut mentions);
    }
    let deleted = tm.resolve(f, &mut stats);
    for &b in &f.layout {
        f.blocks[b].stmts.retain(|s| !deleted.contains(s));
    }
    remove_unused(f, &tm, &deleted, &mentions);
    stats
}

/// The nodes naming a local (reads and assignments) of every tree as propagation left
/// them, tree by tree: `nodes[ends[i - 1]..ends[i]]` for the tree at `roots[i]`.
#[derive(Default)]
struct Mentions {
    nodes: Vec<Expr>,
    roots: Vec<Expr>,
    ends: Vec<usize>,
}

/// Removes the locals nothing mentions after the moves, as `remove_unused_locals` does,
/// from the nodes propagation noted (a walk of every tree again was a sixth of the pass).
/// A tree left in place keeps the nodes that still name a local (a use a tree moved to
/// names none now); the statement a move deleted keeps those of its moved tree (all but
/// its root assignment), which now hang under the use, so long as the use is in a tree
/// that stays (up the parents the mover kept); a deleted forwarding copy keeps none.
fn remove_unused(f: &mut Function, tm: &TreeMover, deleted: &HashSet<Expr>, m: &Mentions) {
    let moved: HashSet<Expr> = tm
        .moves
        .values()
        .filter(|mv| mv.status == MoveStatus::Done)
        .filter(|mv| mv.use_node.is_some_and(|u| !deleted.contains(&tm.root_of(u))))
        .map(|mv| mv.def_stmt)
        .collect();
    let mut kept = Vec::with_capacity(m.nodes.len());
    let mut start = 0;
    for (&root, &end) in m.roots.iter().zip(&m.ends) {
        let (stays, moved_here) = (!deleted.contains(&root), moved.contains(&root));
        if stays || moved_here {
            for &n in &m.nodes[start..end] {
                if n == root && !stays {
                    continue;
                }
                kept.push(n);
            }
        }
        start = end;
    }
    remove_unmentioned_locals(f, &kept);
}

/// The ACP of one block, with the reverse index of copies so that a definition kills in
/// time proportional to what it kills, not to the size of the ACP. Both are lists by
/// local index (a hash map probe per use was most of a lookup), kept from block to block:
/// [`Acp::clear`] empties the entries the block touched.
#[derive(Default)]
struct Acp {
    avail: Vec<Option<Avail>>,
    /// For each `y`, the locals that were made copies of `y` (some may be stale: an entry
    /// counts only while `avail` still says so).
    copies_of: Vec<SmallVec<[Local; 2]>>,
    /// The locals whose entries the block set, to clear (some more than once).
    touched: Vec<Local>,
}

impl Acp {
    fn get(&self, l: &Local) -> Option<&Avail> {
        self.avail.get(l.index()).and_then(Option::as_ref)
    }

    /// Makes room for the entries of `l`.
    fn room(&mut self, l: Local) {
        if self.avail.len() <= l.index() {
            self.avail.resize(l.index() + 1, None);
            self.copies_of.resize_with(l.index() + 1, SmallVec::new);
        }
    }

    fn insert(&mut self, x: Local, a: Avail) {
        if let Avail::Copy(y) = a {
            self.room(y);
            self.copies_of[y.index()].push(x);
            self.touched.push(y);
        }
        self.room(x);
        self.avail[x.index()] = Some(a);
        self.touched.push(x);
    }

    /// A definition of `x` removes the entry of `x` and those that copy `x`.
    fn kill(&mut self, x: Local) {
        if self.avail.len() <= x.index() {
            return;
        }
        self.avail[x.index()] = None;
        let mut copies = std::mem::take(&mut self.copies_of[x.index()]);
        for &z in &copies {
            if self.avail[z.index()] == Some(Avail::Copy(x)) {
                self.avail[z.index()] = None;
            }
        }
        copies.clear();
        self.copies_of[x.index()] = copies;
    }

    /// Empties the ACP for the next block, keeping its room.
    fn clear(&mut self) {
        for l in self.touched.drain(..) {
            self.avail[l.index()] = None;
            self.copies_of[l.index()].clear();
        }
    }
}

fn cprop_block(
    f: &mut Function,
    b: Block,
    tm: &mut TreeMover,
    stats: &mut Stats,
    order: &mut Vec<crate::ir::Expr>,
    acp: &mut Acp,
    mentions: &mut Mentions,
) {
    acp.clear();
    // The statements are filtered in place, in order (nothing below reads the block's
    // list), rather than copied and collected into a new list.
    let mut stmts = std::mem::take(&mut f.blocks[b].stmts);
    stmts.retain(|&s| {
        // A copy that propagation turns into `x = x` does nothing: drop it unseen.
        if let ExprData::Assign { local, value } = f.exprs[s] {
            if let ExprData::Local(y) = f.exprs[value] {
                if y == local || acp.get(&y) == Some(&Avail::Copy(local)) {
                    stats.bump("self_copies");
                    return false;
                }
            }
        }
        cprop_tree(f, b, s, acp, tm, stats, true, order, mentions);
        true
    });
    f.blocks[b].stmts = stmts;
    if let Some(t) = f.blocks[b].term.expr() {
        cprop_tree(f, b, t, acp, tm, stats, false, order, mentions);
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
    mentions: &mut Mentions,
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
                    mentions.nodes.push(n);
                }
                None => {
                    tm.use_(l, n, stats);
                    mentions.nodes.push(n);
                }
            },
            ExprData::Assign { local: x, value } => {
                mentions.nodes.push(n);
                tm.node_done(f, n);
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
                        // One look at the tree's nodes for both questions: they are the
                        // statement's nodes before its root, all propagated above (and
                        // the operands of a node folded since, now out of the tree, are
                        // constants, which neither read `x` nor have an effect).
                        let (mut reads_x, mut effect) = (false, false);
                        for &e in &order[..order.len() - 1] {
                            reads_x |= f.exprs[e] == ExprData::Local(x);
                            effect |= f.exprs[e].has_side_effect();
                        }
                        if !reads_x && !effect {
                            tm.tree_def(f, b, x, n, value);
                        }
                    }
                }
            }
            ExprData::Store { .. } | ExprData::CfWrite { .. } => {
                tm.node_done(f, n);
                tm.memory_write(stats);
            }
            ExprData::Call { helper, .. } => {
                tm.node_done(f, n);
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
                tm.node_done(f, n);
            }
        }
    }
    mentions.roots.push(root);
    mentions.ends.push(mentions.nodes.len());
}
