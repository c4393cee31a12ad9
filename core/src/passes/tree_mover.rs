//! The tree mover of `seeds/tree-mover.txt`, run inside `cprop` (see [`super::cprop`]).
//!
//! A local defined (by a top-level statement of its block) with a pure proper tree — not
//! a local, not a constant, no effect, no trap, not reading the local it defines — and
//! used once later in the same block can have the tree moved to the use and the
//! definition deleted. The ACT holds one [`ActSlot`] per local with the seed's states
//! [E] (empty), [D] (defined by a tree, waiting for a use) and [U] (used once), the flags
//! [W] (no occurrence yet in this block), [X] (used before being defined in some block;
//! global and sticky) and [M] (the slot's tree is scheduled to move in this block).
//!
//! Events, in evaluation order of each block (the caller sends them after copy/constant
//! propagation has rewritten the node):
//! * [`TreeMover::def`]: clears [W]; kills the "affected trees" (trees in [D] reading the
//!   local; trees reading it only through another scheduled move get *linked* with that
//!   move instead: the moves of the chain become mutually exclusive); a slot in [U]
//!   becomes a *safe* move on the todo list.
//! * [`TreeMover::tree_def`]: the slot goes to [D], and the tree's locals are recorded in
//!   the affecting lists. A tree scheduled to move into this tree is *carried* by it:
//!   the trees that read a local through other moves are found at a definition by
//!   walking up the carrying chain from the tree that reads it directly, so that a chain
//!   of n trees costs O(n), not the O(n²) lists of the seed's indirect entries.
//! * [`TreeMover::use_`]: [W] becomes [X]; [D] goes to [U]; a second use in [U] cancels.
//! * [`TreeMover::memory_write`] (store, callframe write, helper that writes memory):
//!   kills the trees in [D] that read memory.
//! * [`TreeMover::copy`]: tree forwarding. At `b = a` where `a`'s tree was just used by
//!   this copy, `a` goes back to [D] (copy propagation will turn later uses of `b` into
//!   `a`), and `b` becomes a "must be dead" slot of the move: the move is aborted if `b`
//!   is used again in this block, or if `b` reaches the block's end and is flagged [X].
//! * [`TreeMover::end_block`]: every slot in [U] becomes an *unsafe* move on the todo
//!   list; the slots are reset to [E] with [W], the affecting lists cleared.
//!
//! The seed's [IndirectDefinition] is a write to memory here (locals have no address;
//! the trees that can change under it are those that read the heap or the callframe),
//! and its [IndirectUse] has no counterpart: nothing reads a local but a `Local` node.
//!
//! [`TreeMover::resolve`] walks the todo list at the end of the graph: safe moves happen,
//! unsafe ones only if their slot is not flagged [X], neither happens if a linked move
//! already happened or a must-be-dead slot is not dead. Statistics per kind of move:
//! `tm_safe`, `tm_unsafe_accepted`, `tm_unsafe_rejected_x`, `tm_indirect` (a move into a
//! tree that moved too), `tm_linked_rejected`, `tm_forwarded` (moves done through
//! copy propagation), `tm_forward_rejected`, `tm_killed`, `tm_cancelled` (second use),
//! `tm_depth_rejected` (a move that would make a tree deeper than [`MAX_MOVED_DEPTH`]).
//!
//! Trees stay shallow (`ir`'s semantics: [`MAX_EXPR_DEPTH`]): a chain of single-use
//! locals would otherwise become one tree as deep as the block is long, and every
//! recursive walk of it would overflow the stack. [`TreeMover::resolve`] keeps the parent
//! of every node as it moves trees, so the depth of a use and the height of the tree
//! moved there are known when the move is decided.

/// The deepest tree a move may make: half of [`MAX_EXPR_DEPTH`], the other half is room
/// for the passes that wrap a node in a few levels (`ssapre`, `memopt`).
pub const MAX_MOVED_DEPTH: usize = MAX_EXPR_DEPTH / 2;

use super::Stats;
use crate::ir::{Block, Expr, ExprData, Function, Local, MAX_EXPR_DEPTH};
use cranelift_entity::{entity_impl, EntityRef, PrimaryMap, SecondaryMap};
use crate::hash::HashSet;
use smallvec::SmallVec;

/// A pending tree move.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MoveId(u32);
entity_impl!(MoveId, "move");

/// The state of an ACT slot.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum SlotState {
    /// [E]: no tree definition available.
    Empty,
    /// [D]: defined by a tree, waiting for a use.
    Defined(MoveId),
    /// [U]: used once; the move is not yet on the todo list.
    Used(MoveId),
}

/// One ACT slot (one per local).
#[derive(Clone, Debug)]
pub struct ActSlot {
    pub state: SlotState,
    /// [W]: no occurrence of the local yet in this block.
    pub waiting: bool,
    /// [X]: used before being defined in some block.
    pub unsafe_use: bool,
    /// [M]: the slot's tree is scheduled to move in this block.
    pub scheduled: bool,
    /// The move for which this local must be dead (set by a forwarding copy).
    pub must_be_dead_for: Option<MoveId>,
}

/// A group of moves that must not happen together (an indirect move and the moves
/// carrying it, when a local read through the chain is redefined).
#[derive(Clone, Debug, Default)]
pub struct LinkGroup {
    /// One of the group's moves was performed.
    pub done: bool,
}

/// A link group's id.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupId(u32);
entity_impl!(GroupId, "group");

/// What became of a move.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum MoveStatus {
    /// In an ACT slot ([D] or [U]).
    Pending,
    /// Killed in [D] by a definition of a local of its tree or by a memory write.
    Killed,
    /// Used twice, or its local redefined or the block ended before any use.
    Cancelled,
    /// On the todo list.
    Scheduled,
    /// Performed at the end of the graph.
    Done,
    /// Refused at the end of the graph.
    Rejected,
}

/// A tree move: `local = tree` (statement `def_stmt` in `block`) to the `use_node`.
#[derive(Clone, Debug)]
pub struct TreeMove {
    pub local: Local,
    pub block: Block,
    pub def_stmt: Expr,
    pub tree: Expr,
    pub use_node: Option<Expr>,
    pub safe: bool,
    pub status: MoveStatus,
    /// The link groups this move belongs to: at most one move of each happens.
    pub links: Vec<GroupId>,
    /// The locals this tree reads directly.
    pub reads: SmallVec<[Local; 4]>,
    /// The moves scheduled to move into this tree (each has `carried_by` this move).
    pub carries: SmallVec<[MoveId; 2]>,
    /// The tree reads memory, directly or through the moves it carries.
    pub reads_memory: bool,
    /// "Must be dead" slots that reached the end of the block: they must not be [X].
    pub must_be_dead: Vec<Local>,
    /// The forwarding copies (`b = a`), deleted with the move.
    pub forward_copies: Vec<Expr>,
    /// A must-be-dead slot was used again in the block.
    pub aborted: bool,
    /// The move whose tree holds this move's use.
    pub carried_by: Option<MoveId>,
}

/// The state of the tree mover across one `cprop` run.
pub struct TreeMover {
    pub act: Vec<ActSlot>,
    pub moves: PrimaryMap<MoveId, TreeMove>,
    pub groups: PrimaryMap<GroupId, LinkGroup>,
    /// Affecting lists: for each local, the trees of this block that read it directly
    /// (the trees carrying them are found through `carried_by`), each with the top of
    /// its chain when a definition last linked it.
    affected: Vec<Vec<(MoveId, Option<MoveId>)>>,
    /// The locals that occurred in this block (whose [W] was cleared), so that the end
    /// of a block costs what the block used, not the number of locals.
    touched: Vec<Local>,
    /// Trees defined in this block that read memory.
    memory_trees: Vec<MoveId>,
    pub todo: Vec<MoveId>,
    /// The parent of every node of the function's trees as `cprop` leaves them (`None`:
    /// a root, or a node in no tree), noted by [`TreeMover::node_done`] in `cprop`'s walk
    /// and kept by [`TreeMover::resolve`] as it moves trees: a walk of every tree of its
    /// own at the end was a tenth of `cprop`.
    parent: SecondaryMap<Expr, Option<Expr>>,
}

impl TreeMover {
    /// A tree mover for a function with `nlocals` locals and `nexprs` nodes.
    pub fn new(nlocals: usize, nexprs: usize) -> TreeMover {
        let slot = ActSlot {
            state: SlotState::Empty,
            waiting: true,
            unsafe_use: false,
            scheduled: false,
            must_be_dead_for: None,
        };
        TreeMover {
            act: vec![slot; nlocals],
            moves: PrimaryMap::new(),
            groups: PrimaryMap::new(),
            affected: vec![vec![]; nlocals],
            touched: vec![],
            memory_trees: vec![],
            todo: vec![],
            parent: crate::passes::cfg::sized(nexprs),
        }
    }

    /// `cprop` is done with node `n` (its operands were done before it, and nothing
    /// changes it again before [`TreeMover::resolve`]): `n` is the parent of its operands.
    #[inline]
    pub fn node_done(&mut self, f: &Function, n: Expr) {
        f.exprs[n].for_each_operand(|c| self.parent[c] = Some(n));
    }

    /// A use of `l` at the node `node` (already rewritten by copy propagation).
    pub fn use_(&mut self, l: Local, node: Expr, stats: &mut Stats) {
        let slot = &mut self.act[l.index()];
        if slot.waiting {
            slot.waiting = false;
            slot.unsafe_use = true;
            self.touched.push(l);
        }
        if let Some(m) = slot.must_be_dead_for.take() {
            self.moves[m].aborted = true;
        }
        match slot.state {
            SlotState::Defined(m) => {
                slot.state = SlotState::Used(m);
                slot.scheduled = true;
                self.moves[m].use_node = Some(node);
            }
            SlotState::Used(m) => {
                slot.state = SlotState::Empty;
                slot.scheduled = false;
                self.moves[m].status = MoveStatus::Cancelled;
                stats.bump("tm_cancelled");
            }
            SlotState::Empty => {}
        }
    }

    /// Whether `m` is the tree in [D] of its slot.
    fn is_defined(&self, m: MoveId) -> bool {
        self.act[self.moves[m].local.index()].state == SlotState::Defined(m)
    }

    fn kill(&mut self, m: MoveId, stats: &mut Stats) {
        self.act[self.moves[m].local.index()].state = SlotState::Empty;
        self.moves[m].status = MoveStatus::Killed;
        stats.bump("tm_killed");
    }

    /// A definition of `x` (any assignment, top-level or nested).
    pub fn def(&mut self, x: Local, stats: &mut Stats) {
        let slot = &mut self.act[x.index()];
        if slot.waiting {
            slot.waiting = false;
            self.touched.push(x);
        }
        slot.must_be_dead_for = None;
        // A tree in [D] reading `x` directly is killed; a tree in [D] reading it through
        // the moves it carries is linked with them. A reader stays on the list while the
        // top of its carrying chain is pending (a later tree may still carry it, and a
        // later definition of `x` must then link that tree too).
        let mut readers = std::mem::take(&mut self.affected[x.index()]);
        readers.retain_mut(|(t, linked_top)| {
            let mut chain: SmallVec<[MoveId; 4]> = smallvec::smallvec![*t];
            let mut cur = *t;
            loop {
                if self.is_defined(cur) {
                    if chain.len() == 1 {
                        self.kill(cur, stats);
                    } else if *linked_top != Some(cur) {
                        let g = self.groups.push(LinkGroup::default());
                        for &m in &chain {
                            self.moves[m].links.push(g);
                        }
                        *linked_top = Some(cur);
                    }
                }
                match self.moves[cur].carried_by {
                    Some(c) => {
                        chain.push(c);
                        cur = c;
                    }
                    None => break,
                }
            }
            self.moves[cur].status == MoveStatus::Pending
        });
        self.affected[x.index()] = readers;
        let slot = &mut self.act[x.index()];
        match slot.state {
            SlotState::Used(m) => {
                self.moves[m].safe = true;
                self.moves[m].status = MoveStatus::Scheduled;
                self.todo.push(m);
            }
            SlotState::Defined(m) => self.moves[m].status = MoveStatus::Cancelled,
            SlotState::Empty => {}
        }
        slot.state = SlotState::Empty;
    }

    /// The statement `def_stmt` (`x = tree`, in `block`) defines `x` by a movable tree;
    /// [`TreeMover::def`] has already run for it.
    pub fn tree_def(&mut self, f: &Function, block: Block, x: Local, def_stmt: Expr, tree: Expr) {
        let m = self.moves.push(TreeMove {
            local: x,
            block,
            def_stmt,
            tree,
            use_node: None,
            safe: false,
            status: MoveStatus::Pending,
            links: vec![],
            reads: SmallVec::new(),
            carries: SmallVec::new(),
            reads_memory: false,
            must_be_dead: vec![],
            forward_copies: vec![],
            aborted: false,
            carried_by: None,
        });
        let mut reads: SmallVec<[Local; 4]> = SmallVec::new();
        let mut carries: SmallVec<[MoveId; 2]> = SmallVec::new();
        let mut reads_memory = false;
        f.visit_postorder(tree, &mut |n| match &f.exprs[n] {
            ExprData::Local(u) => {
                reads.push(*u);
                let slot = &self.act[u.index()];
                if let SlotState::Used(m2) = slot.state {
                    if slot.scheduled && self.moves[m2].use_node == Some(n) {
                        // An indirect tree move: `m2` moves into this tree, so this tree
                        // also reads, through `m2`, everything `m2` reads.
                        carries.push(m2);
                        reads_memory |= self.moves[m2].reads_memory;
                    }
                }
            }
            ExprData::Load { .. } | ExprData::CfRead(_) => reads_memory = true,
            _ => {}
        });
        for &m2 in &carries {
            self.moves[m2].carried_by = Some(m);
        }
        for &u in &reads {
            self.affected[u.index()].push((m, None));
        }
        self.moves[m].reads = reads;
        self.moves[m].carries = carries;
        self.moves[m].reads_memory = reads_memory;
        if reads_memory {
            self.memory_trees.push(m);
        }
        self.act[x.index()].state = SlotState::Defined(m);
    }

    /// A store, callframe write or memory-writing call: trees in [D] that read memory
    /// are killed.
    pub fn memory_write(&mut self, stats: &mut Stats) {
        for m in std::mem::take(&mut self.memory_trees) {
            if self.is_defined(m) {
                self.kill(m, stats);
            }
        }
    }

    /// The statement `copy_stmt` is `b = a` after propagation, with `a_node` the node
    /// reading `a`; [`TreeMover::def`] has run for `b`. Tree forwarding: if `a`'s tree
    /// was just used here, pretend `b` will be dead and put `a` back in [D].
    pub fn copy(&mut self, b: Local, a: Local, a_node: Expr, copy_stmt: Expr) {
        let SlotState::Used(m) = self.act[a.index()].state else { return };
        let mv = &self.moves[m];
        if mv.use_node != Some(a_node) || self.tree_reads(m, b) {
            return;
        }
        let mv = &mut self.moves[m];
        mv.use_node = None;
        mv.forward_copies.push(copy_stmt);
        self.act[a.index()].state = SlotState::Defined(m);
        self.act[a.index()].scheduled = false;
        self.act[b.index()].must_be_dead_for = Some(m);
    }

    /// Whether the tree of `m` reads `l`, directly or through the moves it carries.
    fn tree_reads(&self, m: MoveId, l: Local) -> bool {
        let mut work: SmallVec<[MoveId; 4]> = smallvec::smallvec![m];
        while let Some(m) = work.pop() {
            if self.moves[m].reads.contains(&l) {
                return true;
            }
            work.extend(self.moves[m].carries.iter().copied());
        }
        false
    }

    /// The end of a block: slots in [U] become unsafe moves; every slot that occurred in
    /// the block is reset (the others are untouched since the last end).
    pub fn end_block(&mut self) {
        // The list is emptied, not dropped: its room serves the next block.
        let mut touched = std::mem::take(&mut self.touched);
        for l in touched.drain(..) {
            let i = l.index();
            let slot = &mut self.act[i];
            match slot.state {
                SlotState::Used(m) => {
                    self.moves[m].status = MoveStatus::Scheduled;
                    self.todo.push(m);
                }
                SlotState::Defined(m) => self.moves[m].status = MoveStatus::Cancelled,
                SlotState::Empty => {}
            }
            if let Some(m) = slot.must_be_dead_for.take() {
                self.moves[m].must_be_dead.push(Local::new(i));
            }
            slot.state = SlotState::Empty;
            slot.waiting = true;
            slot.scheduled = false;
            self.affected[i].clear();
        }
        self.touched = touched;
        self.memory_trees.clear();
    }

    /// Walks the todo list at the end of the graph and performs the moves that may
    /// happen. Returns the statements to delete (moved definitions, forwarding copies).
    pub fn resolve(&mut self, f: &mut Function, stats: &mut Stats) -> HashSet<Expr> {
        let mut deleted = HashSet::default();
        let parent = &mut self.parent;
        for m in std::mem::take(&mut self.todo) {
            let mv = &self.moves[m];
            let x = &self.act;
            let verdict = if mv.aborted || mv.must_be_dead.iter().any(|b| x[b.index()].unsafe_use) {
                Err("tm_forward_rejected")
            } else if !mv.safe && x[mv.local.index()].unsafe_use {
                Err("tm_unsafe_rejected_x")
            } else if mv.links.iter().any(|&g| self.groups[g].done) {
                Err("tm_linked_rejected")
            } else {
                Ok(())
            };
            if let Err(why) = verdict {
                stats.bump(why);
                self.moves[m].status = MoveStatus::Rejected;
                continue;
            }
            let use_node = mv.use_node.expect("scheduled moves have a use");
            if depth_of(parent, use_node) + height(f, mv.tree) - 1 > MAX_MOVED_DEPTH {
                stats.bump("tm_depth_rejected");
                self.moves[m].status = MoveStatus::Rejected;
                continue;
            }
            let mv = &self.moves[m];
            f.exprs[use_node] = f.exprs[mv.tree].clone();
            for c in f.exprs[use_node].operands() {
                parent[c] = Some(use_node);
            }
            // The old root keeps no children, so trees stay trees.
            let ty = f.locals[mv.local].ty;
            f.exprs[mv.tree] = ExprData::Const { ty, value: 0 };
            deleted.insert(mv.def_stmt);
            deleted.extend(mv.forward_copies.iter().copied());
            stats.bump(if mv.safe { "tm_safe" } else { "tm_unsafe_accepted" });
            if !mv.forward_copies.is_empty() {
                stats.bump("tm_forwarded");
            }
            self.moves[m].status = MoveStatus::Done;
            for &g in &self.moves[m].links {
                self.groups[g].done = true;
            }
        }
        for (_, mv) in self.moves.iter() {
            if mv.status == MoveStatus::Done {
                if let Some(c) = mv.carried_by {
                    if self.moves[c].status == MoveStatus::Done {
                        stats.bump("tm_indirect");
                    }
                }
            }
        }
        deleted
    }
}

impl TreeMover {
    /// The root of the tree that holds node `n` once [`TreeMover::resolve`] has moved the
    /// trees, up the parents.
    pub fn root_of(&self, n: Expr) -> Expr {
        let mut cur = n;
        while let Some(p) = self.parent[cur] {
            cur = p;
        }
        cur
    }
}

/// The depth of `n` in its tree (a root is 1 deep), up the parents.
fn depth_of(parent: &SecondaryMap<Expr, Option<Expr>>, n: Expr) -> usize {
    let mut d = 1;
    let mut cur = n;
    while let Some(p) = parent[cur] {
        d += 1;
        cur = p;
    }
    d
}

/// The height of the tree at `e` (a leaf is 1 high), with an explicit stack.
fn height(f: &Function, e: Expr) -> usize {
    let mut h = 0;
    let mut work = vec![(e, 1)];
    while let Some((n, d)) = work.pop() {
        h = h.max(d);
        work.extend(f.exprs[n].operands().into_iter().map(|c| (c, d + 1)));
    }
    h
}
