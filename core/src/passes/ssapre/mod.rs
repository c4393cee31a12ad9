//! SSAPRE: partial redundancy elimination in SSA form (`DESIGN.md` pass 3), after
//! `seeds/ssapre.txt` and the paper it follows (Kennedy, Chan, Liu, Lo, Tu, Chow,
//! "Partial Redundancy Elimination in SSA Form", TOPLAS 1999). The steps keep the seed's
//! and the paper's names:
//!
//! * **Initialization** ([`Initialization`]): one scan of the function collects every
//!   occurrence of every candidate expression into a worklist keyed by the expression's
//!   lexical form over *original* variables (an SSA version `%x.3` belongs to the original
//!   `x`: the name before its last `.N`), together with the effects and exits that
//!   down-safety needs and, per merge block, the current version of every original an
//!   expression of the round reads. A
//!   computation assigned to a local nothing reads is not an occurrence (it is dead: `dce`
//!   removes it, and PRE would otherwise move the expression to where it serves nothing).
//!   The scan of a later round walks only the trees the round before rewrote or added,
//!   and takes the others' facts from its own last scan ([`Kept`]).
//! * Per expression ([`frg`]): **Φ-Insertion**, **Rename**, **DownSafety**,
//!   **WillBeAvail** (CanBeAvail and Later), **Finalize** (the two steps, the second with
//!   unneeded-Φ elimination: Φs of the FRG that end up unused produce no phi) and
//!   **CodeMotion** (saves, reloads, insertions, and the temporary's phis, born in SSA).
//!
//! Candidates are pure computations whose operands are locals or constants: unary,
//! binary, compare, convert, `select` and calls to pure helpers (`mix`, `mix64`).
//! Composite expressions (the paper's second-order effects) are handled by rounds: once
//! `a + b` is a temporary `%h`, the tree `(a + b) * c` reads `%h` (or `comma(%h = a + b,
//! %h)` where the sum is saved), so the next round sees `h * c` as a candidate. Loads and
//! callframe reads are `memopt`'s, not candidates here.
//!
//! A save reuses the local its occurrence is assigned to (`%v = a + b` saves in `%v`);
//! otherwise it is a statement `%h = e` of its own just before the occurrence's statement
//! when `e`'s tree holds only computations that cannot trap (no load, callframe read or
//! non-pure call, which an operand saved as `comma(%t = load(..), %t)` may hold) and reads
//! nothing that statement assigns first, and in place as `comma(%h = e, %h)` otherwise
//! (evaluation order inside the statement is kept).
//! Reloads read the temporary; insertions are statements at the end of a predecessor.
//!
//! Rename decides that two occurrences have the same value only when the SSA versions
//! prove it (a real occurrence against a Φ: its versions are the ones current at the Φ's
//! block; a Φ operand: the Φ's versions translated through the block's phis), so a
//! version live beside another version of its original (which `memopt` may create) costs
//! an opportunity, never correctness.
//!
//! **Traps.** Divisions and remainders trap. Reusing an earlier evaluation is always
//! allowed (it would have trapped first); an insertion of a trapping expression is
//! allowed only where, on every path, the program evaluates the same expression with the
//! same operand values before any effect (store, `cfwrite`, non-pure call, `trapif`,
//! another trapping operation) or return. For a trapping expression, Rename treats each
//! effect like an exit: the Φ on top of the stack is not down-safe. An insertion of a
//! trapping composite expression (one over a temporary of an earlier round) is never
//! made, so every inserted trapping computation reads values of the input function and
//! `oracle::anticip` can check it against the input. Insertions go at the end of a
//! predecessor ending in a plain `jump` ([`split`]), after everything it evaluates.
//!
//! Statistics: `exprs` (expressions considered, per round), `insertions`, `saves`,
//! `reloads_full` (from a real occurrence or a Φ fed without insertion), `reloads_partial`
//! (from a Φ some operand of which was inserted), `loop_invariant` (insertions on the
//! entry edge of a loop whose header Φ is reloaded inside the loop), `phis_created`,
//! `phis_unneeded` (will-be-available Φs no reload needs, which produce no phi),
//! `phis_trivial` (needed Φs whose operands are all one value, or the Φ itself around a
//! loop: they produce no phi, their readers read that value),
//! `composite` (expressions over an earlier round's temporary that saved a computation),
//! `edges_split` (insertion blocks the pass had to add).

mod frg;
mod split;

use super::{Analyses, Stats};
use crate::helpers::HelperKind;
use crate::ir::{BinOp, Block, CmpOp, ConvOp, Expr, ExprData, Function, Local, Type, UnOp};
use cranelift_entity::{EntityRef, SecondaryMap};
use crate::hash::HashMap;
use smallvec::SmallVec;

/// How many rounds at most: round `k` sees composite expressions of depth `k`.
const MAX_ROUNDS: usize = 4;

/// Runs SSAPRE over `f` (strict SSA).
pub fn run(f: &mut Function) -> Stats {
    let mut stats = Stats::default();
    let made = split::split_edges(f);
    let mut temps = Temporaries {
        made: vec![],
        input_names: f.locals.values().filter(|d| d.name.starts_with(TEMP_PREFIX)).map(|d| d.name.clone()).collect(),
    };
    let mut originals = Originals::default();
    // The steps add statements and rewrite trees but never add, remove or redirect a
    // block (the edges that need it were split above), so the CFG analyses of the first
    // round hold for every round.
    let mut analyses = None;
    // The scan's lists and the steps' buffers of the function before, on this thread
    // ([`SPARE_BUFFERS`]): both are emptied where they are filled.
    let (kept, mut bufs) = SPARE_BUFFERS.with(|c| c.take()).unwrap_or_default();
    let mut kept = kept.emptied();
    for round in 0..MAX_ROUNDS {
        // A round without a candidate changes nothing (the last round, usually).
        let Some(init) = Initialization::scan(f, &mut analyses, &mut originals, &temps.made, round, &mut kept)
        else {
            break;
        };
        let an = analyses.as_ref().expect("computed by the scan");
        let mut changed = false;
        let mut blocks_changed = Changed { blocks: vec![false; f.blocks.len()], roots: vec![], hoisted: HashMap::default() };
        for k in 0..init.worklist.len() {
            // After the first round only expressions over the last round's temporaries
            // are new; the others were done.
            if round > 0 && !init.worklist[k].fresh {
                continue;
            }
            changed |= frg::run_expression(f, an, &init, k, round, &mut temps, &mut stats, &mut blocks_changed, &mut bufs);
        }
        kept.keep(init);
        if !changed {
            // Nothing for a next round: what the round kept is only room now.
            break;
        }
        blocks_changed.roots.sort_unstable();
        blocks_changed.roots.dedup();
        kept.changed = Some(blocks_changed);
    }
    if kept.bounded() && bufs.bounded() {
        SPARE_BUFFERS.with(|c| c.set(Some((kept, bufs))));
    }
    let kept = split::unsplit_unused(f, &made);
    stats.add("edges_split", kept as u64);
    stats
}

thread_local! {
    /// What the rounds kept ([`Kept`]: the scan's lists and maps) and the steps' buffers
    /// ([`frg::Buffers`]) of the last function this thread ran the pass on, for the next
    /// function ([`Kept::emptied`]): its first scan and first expressions otherwise grew
    /// every list from empty, a tenth of the pass. Kept only while every list has room
    /// for [`SPARE_ENTRIES`] or fewer.
    static SPARE_BUFFERS: std::cell::Cell<Option<(Kept, frg::Buffers)>> = const { std::cell::Cell::new(None) };
}

/// The most entries each list kept in [`SPARE_BUFFERS`] may have room for, so that what a
/// thread keeps stays bounded by the common functions, not by the largest one it met.
const SPARE_ENTRIES: usize = 1 << 14;

/// The prefix of the temporaries' names: `pre1`, `pre2`, ..., one per expression that
/// changed code, and `preN.k` when `preN` is taken.
const TEMP_PREFIX: &str = "pre";

/// The temporaries the rounds made, and the names of the input's locals they may collide
/// with.
pub struct Temporaries {
    /// Each temporary's original (`preN`) and the round that made it.
    pub made: Vec<(String, usize)>,
    /// The names of the input's locals that start with [`TEMP_PREFIX`]. A temporary is
    /// named after a new `preN`, and a name made earlier in the run (`preM` or `preM.k`,
    /// `M < N`) never starts with `preN`, so these are the only names of the function one
    /// can collide with: the namer of each expression knows them without a scan of every
    /// local.
    pub input_names: Vec<String>,
}

/// What CodeMotion changed in a round: the blocks whose trees or phis changed (by index),
/// and, in those blocks, the roots of the trees it rewrote in place (a save's statement,
/// a reload's), sorted once the round is over. A tree it added is a root the last scan
/// did not see, so the next scan walks it too; the other trees of a changed block are as
/// the last scan found them.
pub struct Changed {
    pub blocks: Vec<bool>,
    pub roots: Vec<Expr>,
    /// The saves hoisted out of their statements this round (see `frg::save`), each with
    /// the position its occurrence had in its block's evaluation order: saves hoisted
    /// out of one statement go before it in that order, whatever the order of their
    /// expressions on the worklist.
    pub hoisted: HashMap<Expr, u32>,
}

/// The original of every local, kept from round to round: the rounds only add locals
/// (the temporaries), so a round names the originals of the locals added since the last
/// one, in local order, and every local keeps the original the rounds before gave it
/// (as naming every local anew would, without hashing every name each round).
#[derive(Default)]
pub struct Originals {
    /// Each original's id by base name, then type: an original is a base name *and* a
    /// type, since a pass may name a new local after an unrelated one of another type
    /// (`memopt`'s `%mem` and `%mem.2`), and versions of one variable always share its
    /// type.
    ids: HashMap<String, SmallVec<[(Type, u32); 1]>>,
    /// How many originals there are (ids are given out from 0 up).
    count: u32,
    /// The original of every local named so far.
    orig: SecondaryMap<Local, u32>,
    /// How many locals are named.
    named: usize,
}

impl Originals {
    /// Names the originals of the locals added to `f` since the last call.
    fn update(&mut self, f: &Function) {
        // Sized once, rather than grown at each local.
        self.orig.resize(f.locals.len());
        for (l, d) in f.locals.iter().skip(self.named) {
            let base = original_name(&d.name);
            let next = self.count;
            let entry = match self.ids.get_mut(base) {
                Some(e) => e,
                None => self.ids.entry(base.to_string()).or_default(),
            };
            let id = match entry.iter().find(|(t, _)| *t == d.ty) {
                Some(&(_, id)) => id,
                None => {
                    entry.push((d.ty, next));
                    self.count += 1;
                    next
                }
            };
            self.orig[l] = id;
        }
        self.named = f.locals.len();
    }
}

/// The operator of a candidate expression.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum OpKind {
    Unary(UnOp),
    Binary(BinOp),
    Cmp(CmpOp),
    Convert(ConvOp),
    Select,
    Call(HelperKind),
}

impl OpKind {
    /// Whether evaluating the expression may trap.
    pub fn can_trap(self) -> bool {
        matches!(self, OpKind::Binary(op) if op.can_trap())
    }
}

/// An operand of an expression's lexical form: an original variable or a constant.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum KeyOperand {
    Orig(u32),
    Const(Type, i64),
}

/// The lexical form of an expression over original variables: the worklist key. Its
/// operands are held inline (a candidate has at most three, a call to a pure helper two).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Key {
    pub op: OpKind,
    pub operands: SmallVec<[KeyOperand; 3]>,
}

/// The value of an operand at an occurrence: an SSA version or a constant.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Val {
    Var(Local),
    Const(Type, i64),
}

/// The operand values of an occurrence, in operand order, held inline: every candidate
/// and Φ has a list of them, built per scan and per expression.
pub type Versions = SmallVec<[Val; 3]>;

/// Where a node hangs: under another node, as the root of a statement of a block, or as a
/// block's terminator expression.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Parent {
    Node(Expr),
    Stmt(Block),
    Term(Block),
}

/// A real occurrence of an expression.
#[derive(Clone, Debug)]
pub struct RealOcc {
    pub node: Expr,
    pub block: Block,
    /// Position in the block's evaluation order (see [`Initialization::kills`]).
    pub pos: u32,
    pub versions: Versions,
    pub parent: Parent,
}

/// One worklist entry: an expression and all its occurrences, in block layout order.
#[derive(Clone, Debug)]
pub struct Expression {
    pub key: Key,
    /// Held inline when there is one (most expressions: a list each was an allocation).
    pub occs: SmallVec<[RealOcc; 1]>,
    /// Whether an operand is a temporary of an earlier round (a composite expression).
    pub composite: bool,
    /// Whether an operand is a temporary of the previous round.
    pub fresh: bool,
}

/// The working area of `seeds/ssapre.txt`'s Initialization: the worklist and the per-block
/// facts every expression's steps read.
pub struct Initialization {
    pub worklist: Vec<Expression>,
    /// The original of every local.
    pub orig: SecondaryMap<Local, u32>,
    /// Positions of the effects of each block (stores, callframe writes, non-pure calls,
    /// checks, trapping operations), in evaluation order, with the node.
    pub kills: SecondaryMap<Block, Vec<(u32, Expr)>>,
    /// Whether the block returns (an exit after every position).
    pub exits: SecondaryMap<Block, bool>,
    /// The blocks that return, and the blocks with an effect (in dominator-tree pre-order,
    /// unreachable ones left out): the blocks where Rename may find a Φ not down-safe
    /// without an occurrence there.
    pub exit_blocks: Vec<Block>,
    pub kill_blocks: Vec<Block>,
    /// The current version of each asked original ([`Initialization::asked`]) at the
    /// entry of each merge block (two or more predecessors: where a Φ can be), after its
    /// phis, in the order of their places; empty for other blocks.
    pub current: SecondaryMap<Block, Vec<Option<Local>>>,
    /// The place in the lists of `current` of each original an expression the round runs
    /// has for an operand (the only originals Φ-Insertion asks about), [`NOT_ASKED`] for
    /// the others: a round after the first runs only the expressions over the last
    /// round's temporaries, and a list of every original per merge block was a twentieth
    /// of `ssapre`.
    asked: Vec<u32>,
    /// The block and index of the phi defining a local, if a phi does.
    pub phi_def: SecondaryMap<Local, Option<(Block, usize)>>,
    /// The blocks holding a phi of each original.
    pub phi_blocks: Vec<Vec<Block>>,
    /// The blocks defining a version of each original (phis, assignments, parameters).
    pub def_blocks: Vec<Vec<Block>>,
    /// The iterated dominance frontier of each original's `def_blocks`, computed when an
    /// expression over the original first asks ([`Initialization::def_frontier`]).
    def_frontier: Vec<std::cell::OnceCell<Vec<Block>>>,
    /// The iterated dominance frontier of each block, computed when an occurrence's block
    /// first asks ([`Initialization::frontier`]): the expressions of a block share it, and
    /// a walk of it per expression was a tenth of `ssapre`.
    block_frontier: Vec<std::cell::OnceCell<Vec<Block>>>,
    /// The parent of every node of the function.
    pub parent: SecondaryMap<Expr, Option<Parent>>,
}

/// An original no expression of the round reads ([`Initialization::asked`]).
const NOT_ASKED: u32 = u32::MAX;

/// The original variable name of a version: the name without its last `.N`.
fn original_name(name: &str) -> &str {
    match name.rsplit_once('.') {
        Some((base, n)) if !base.is_empty() && !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()) => base,
        _ => name,
    }
}

/// The operand of a candidate as a leaf: a local, a constant, or a value saved by a
/// previous round (`comma(%h = e, %h)`, whose value is `%h`).
pub fn leaf(f: &Function, e: Expr) -> Option<Val> {
    match &f.exprs[e] {
        ExprData::Local(l) => Some(Val::Var(*l)),
        ExprData::Const { ty, value } => Some(Val::Const(*ty, *value)),
        ExprData::Comma { first, second } => match (&f.exprs[*first], &f.exprs[*second]) {
            (ExprData::Assign { local, .. }, ExprData::Local(l)) if local == l => Some(Val::Var(*l)),
            _ => None,
        },
        _ => None,
    }
}

/// The operator of a node if it is a candidate kind.
pub(crate) fn op_kind(d: &ExprData) -> Option<OpKind> {
    Some(match d {
        ExprData::Unary { op, .. } => OpKind::Unary(*op),
        ExprData::Binary { op, .. } => OpKind::Binary(*op),
        ExprData::Cmp { op, .. } => OpKind::Cmp(*op),
        ExprData::Convert { op, .. } => OpKind::Convert(*op),
        ExprData::Select { .. } => OpKind::Select,
        ExprData::Call { helper, .. } if helper.effects().is_pure() && helper.signature().1.is_some() => {
            OpKind::Call(*helper)
        }
        _ => return None,
    })
}

/// Whether a node is an effect in the sense of the trap rule.
pub(crate) fn is_kill(d: &ExprData) -> bool {
    match d {
        ExprData::Store { .. } | ExprData::CfWrite { .. } | ExprData::TrapIf { .. } => true,
        ExprData::Call { helper, .. } => !helper.effects().is_pure(),
        ExprData::Binary { op, .. } => op.can_trap(),
        _ => false,
    }
}

impl Initialization {
    /// Scans `f`: every candidate occurrence, effect and exit, the versions current at
    /// each block entry, and the parent of every node. `originals` are the originals of
    /// the locals of the rounds before, which the scan extends to the locals added since;
    /// `temps` names the originals of earlier rounds' temporaries. `analyses` are the CFG
    /// analyses of `f`, computed here if they are not yet. `None` when no block holds a
    /// candidate of this round: then there is nothing to do, and the analyses and the
    /// rest of the scan are not computed.
    pub fn scan(
        f: &Function,
        analyses: &mut Option<Analyses>,
        originals: &mut Originals,
        temps: &[(String, usize)],
        round: usize,
        kept: &mut Kept,
    ) -> Option<Initialization> {
        originals.update(f);
        let orig = originals.orig.clone();
        let norig = originals.count as usize;
        // Per original, the round that made it if it is a temporary: the originals of each
        // temporary's name, looked up by it (the temporaries' names are distinct; a
        // search of them per original cost a scan the originals times the temporaries).
        let mut is_temp: Vec<Option<usize>> = vec![None; norig];
        for (t, r) in temps {
            for &(_, id) in originals.ids.get(t.as_str()).into_iter().flatten() {
                is_temp[id as usize] = Some(*r);
            }
        }
        // After the first round a candidate reads a temporary of the last round, so
        // without one (its expressions saved only in locals of their own) there is none:
        // known without a walk of every tree.
        if round > 0 && !is_temp.contains(&Some(round - 1)) {
            return None;
        }
        // The lists of the round before, emptied, for this round's (the rounds add no
        // block, and `emptied` sizes them for this round's originals).
        let Lists { phi_blocks, def_blocks, current } = std::mem::take(&mut kept.lists);
        let mut init = Initialization {
            worklist: std::mem::take(&mut kept.worklist),
            orig,
            kills: SecondaryMap::new(),
            exits: super::cfg::sized(f.blocks.len()),
            exit_blocks: vec![],
            kill_blocks: vec![],
            current: if current.is_empty() { super::cfg::sized(f.blocks.len()) } else { current },
            asked: vec![],
            phi_def: super::cfg::sized(f.locals.len()),
            phi_blocks: emptied(phi_blocks, norig),
            def_blocks: emptied(def_blocks, norig),
            def_frontier: vec![],
            block_frontier: vec![],
            parent: SecondaryMap::with_capacity(f.exprs.len()),
        };
        // The blocks to walk: every block in the first round, then the blocks the last
        // round changed; the others are as the last scan found them (see [`Kept`]).
        let last = kept.changed.take().map(|changed| {
            init.parent = std::mem::take(&mut kept.parent);
            init.kills = std::mem::take(&mut kept.kills);
            (changed, std::mem::take(&mut kept.scratch))
        });
        // The buffers of the scan before the last one, emptied (every block's ranges are
        // written again below).
        let mut scratch = std::mem::take(&mut kept.spare);
        if last.is_none() {
            // The first scan: the maps and the other lists of the function before, emptied
            // ([`Kept::emptied`]), for their room.
            init.parent = std::mem::take(&mut kept.parent);
            init.kills = std::mem::take(&mut kept.kills);
            kept.spare = std::mem::take(&mut kept.scratch);
        }
        scratch.candidates.clear();
        scratch.assigns.clear();
        scratch.reads.clear();
        scratch.trees.clear();
        scratch.assigned.resize(f.blocks.len());
        scratch.read_at.resize(f.blocks.len());
        scratch.trees_at.resize(f.blocks.len());
        scratch.tree_of.resize(f.exprs.len());
        // Sized once, rather than grown at each node of a higher index than any before.
        init.parent.resize(f.exprs.len());
        init.kills.resize(f.blocks.len());
        // Locals something reads: a computation assigned to a local nobody reads is dead
        // (dce removes it), and taking it for an occurrence would make PRE move the
        // expression to where it is evaluated for nothing. Known once every block is
        // scanned, so the candidates are kept until then.
        let mut read = super::util::LocalSet::new(f.locals.len());
        for &b in &f.layout {
            match &last {
                Some((changed, was)) if !changed.blocks[b.index()] => init.replay_block(f, b, &mut read, was, &mut scratch),
                Some((changed, was)) => init.scan_block(f, b, &mut read, &is_temp, round, &mut scratch, Some((was, &changed.roots))),
                None => init.scan_block(f, b, &mut read, &is_temp, round, &mut scratch, None),
            }
        }
        if let Some((_, was)) = last {
            kept.spare = was;
        }
        if scratch.candidates.is_empty() {
            // No round follows: the lists and maps go back for their room.
            kept.scratch = scratch;
            kept.keep(init);
            return None;
        }
        let an = &*analyses.get_or_insert_with(|| Analyses::compute(f));
        init.collect(f, &read, &is_temp, round, &mut scratch.candidates, &mut kept.index);
        // Rename merges the blocks with an effect into a trapping expression's sites in
        // dominator-tree pre-order; a block outside the tree is never walked.
        let dt = &an.domtree;
        init.kill_blocks.retain(|&b| dt.preorder_number(b) != 0);
        init.kill_blocks.sort_unstable_by_key(|&b| dt.preorder_number(b));
        init.ask(round, norig);
        init.current_versions(f, an, &scratch);
        init.def_frontier = vec![std::cell::OnceCell::new(); norig];
        init.block_frontier = vec![std::cell::OnceCell::new(); f.blocks.len()];
        kept.scratch = scratch;
        Some(init)
    }

    /// The iterated dominance frontier of original `o`'s definition blocks.
    pub fn def_frontier(&self, an: &Analyses, o: u32) -> &[Block] {
        self.def_frontier[o as usize].get_or_init(|| an.frontiers.iterated(&self.def_blocks[o as usize]))
    }

    /// The iterated dominance frontier of block `b`.
    pub fn frontier(&self, an: &Analyses, b: Block) -> &[Block] {
        self.block_frontier[b.index()].get_or_init(|| an.frontiers.iterated(&[b]))
    }

    /// Records one block: its phis' definitions, then in evaluation order the parents,
    /// assignments, reads, kills and candidate occurrences of its trees, and whether it
    /// exits. Each block is scanned once, so a block already recorded for an original is
    /// its last entry. After the first round only the expressions over the last round's
    /// temporaries are run (the others were done), so only their occurrences are kept.
    /// With `last` (the last scan's buffers and the roots of the trees the round rewrote,
    /// sorted), a tree the last scan walked and the round did not rewrite is taken from
    /// the last scan, as [`Initialization::replay_block`] takes a whole block: its nodes,
    /// their parents and what they assign and read are as they were, its kills move with
    /// the tree's place in the block, and it holds no candidate of this round (a
    /// candidate reads a temporary of the last round, which only the trees the round
    /// rewrote or added read). Walking every tree of each changed block was most of the
    /// later rounds' scans.
    #[allow(clippy::too_many_arguments)]
    fn scan_block(
        &mut self,
        f: &Function,
        b: Block,
        read: &mut super::util::LocalSet,
        is_temp: &[Option<usize>],
        round: usize,
        scratch: &mut Scratch,
        last: Option<(&Scratch, &[Expr])>,
    ) {
        self.scan_phis(f, b, read);
        let init = self;
        // The kills the last scan found in the block, for the trees taken from it.
        let was_kills = match last {
            Some(_) => std::mem::take(&mut init.kills[b]),
            None => {
                init.kills[b].clear();
                vec![]
            }
        };
        let mut pos = 0u32;
        let data = &f.blocks[b];
        let roots = data.stmts.iter().map(|&s| (s, Parent::Stmt(b))).chain(data.term.expr().map(|e| (e, Parent::Term(b))));
        let start = scratch.assigns.len() as u32;
        let reads_start = scratch.reads.len() as u32;
        let trees_start = scratch.trees.len() as u32;
        for (root, p) in roots {
            let (at, assigns_at, reads_at) = (pos, scratch.assigns.len() as u32, scratch.reads.len() as u32);
            if let Some(t) = last.and_then(|(was, rewritten)| was.tree(b, root).filter(|_| rewritten.binary_search(&root).is_err())) {
                let (was, _) = last.expect("a tree of the last scan");
                let kills = &was_kills[was_kills.partition_point(|k| k.0 <= t.at)..was_kills.partition_point(|k| k.0 <= t.at + t.nodes)];
                init.kills[b].extend(kills.iter().map(|&(q, n)| (q - t.at + at, n)));
                for &local in &was.assigns[t.assigns.0 as usize..t.assigns.1 as usize] {
                    let o = init.orig[local] as usize;
                    if init.def_blocks[o].last() != Some(&b) {
                        init.def_blocks[o].push(b);
                    }
                    scratch.assigns.push(local);
                }
                for &l in &was.reads[t.reads.0 as usize..t.reads.1 as usize] {
                    read.insert(l);
                    scratch.reads.push(l);
                }
                pos += t.nodes;
                scratch.push_tree(root, at, pos - at, assigns_at, reads_at);
                continue;
            }
            init.parent[root] = Some(p);
            // One walk: a node's operands are visited before it, and nothing reads a
            // parent until the whole function is scanned.
            f.visit_postorder(root, &mut |n| {
                pos += 1;
                let d = &f.exprs[n];
                // A leaf (about half the nodes) has no operand, is no effect and no
                // candidate: only a local's read is recorded.
                match d {
                    ExprData::Const { .. } | ExprData::CfRead(_) => return,
                    ExprData::Local(l) => {
                        read.insert(*l);
                        scratch.reads.push(*l);
                        return;
                    }
                    ExprData::Assign { local, .. } => {
                        let o = init.orig[*local] as usize;
                        if init.def_blocks[o].last() != Some(&b) {
                            init.def_blocks[o].push(b);
                        }
                        scratch.assigns.push(*local);
                    }
                    _ => {}
                }
                d.for_each_operand(|c| init.parent[c] = Some(Parent::Node(n)));
                if is_kill(d) {
                    init.kills[b].push((pos, n));
                }
                let Some(op) = op_kind(d) else { return };
                let mut versions = Versions::new();
                for &o in d.operands().iter() {
                    let Some(v) = leaf(f, o) else { return };
                    versions.push(v);
                }
                let last_round = |v: &Val| match *v {
                    Val::Var(l) => is_temp[init.orig[l] as usize] == Some(round.wrapping_sub(1)),
                    Val::Const(..) => false,
                };
                if round > 0 && !versions.iter().any(last_round) {
                    return;
                }
                scratch.candidates.push(Candidate { node: n, block: b, pos, op, versions });
            });
            scratch.push_tree(root, at, pos - at, assigns_at, reads_at);
        }
        scratch.assigned[b] = (start, scratch.assigns.len() as u32);
        scratch.read_at[b] = (reads_start, scratch.reads.len() as u32);
        scratch.trees_at[b] = (trees_start, scratch.trees.len() as u32);
        init.exits_and_kills(f, b);
    }

    /// Records block `b` as the last scan found it, when the round since did not change
    /// it: its phis as [`Initialization::scan_block`] does, then its assignments and
    /// reads from the last scan's lists `was`. Its kills and the parents of its nodes are
    /// the last scan's already, and it holds no candidate of this round, since only the
    /// blocks the last round changed read its temporaries.
    fn replay_block(&mut self, f: &Function, b: Block, read: &mut super::util::LocalSet, was: &Scratch, scratch: &mut Scratch) {
        self.scan_phis(f, b, read);
        let (start, end) = was.assigned[b];
        let at = scratch.assigns.len() as u32;
        for &local in &was.assigns[start as usize..end as usize] {
            let o = self.orig[local] as usize;
            if self.def_blocks[o].last() != Some(&b) {
                self.def_blocks[o].push(b);
            }
            scratch.assigns.push(local);
        }
        scratch.assigned[b] = (at, scratch.assigns.len() as u32);
        let (start, end) = was.read_at[b];
        let at = scratch.reads.len() as u32;
        for &l in &was.reads[start as usize..end as usize] {
            read.insert(l);
            scratch.reads.push(l);
        }
        scratch.read_at[b] = (at, scratch.reads.len() as u32);
        // Its trees' records, moved with the block's lists.
        let (assigns_by, reads_by) = (scratch.assigned[b].0.wrapping_sub(was.assigned[b].0), at.wrapping_sub(start));
        let (first, last) = was.trees_at[b];
        let trees_start = scratch.trees.len() as u32;
        for t in &was.trees[first as usize..last as usize] {
            let shifted = |(from, to): (u32, u32), by: u32| (from.wrapping_add(by), to.wrapping_add(by));
            scratch.record(Tree { assigns: shifted(t.assigns, assigns_by), reads: shifted(t.reads, reads_by), ..*t });
        }
        scratch.trees_at[b] = (trees_start, scratch.trees.len() as u32);
        self.exits_and_kills(f, b);
    }

    /// Whether block `b` exits, and the lists of exits and of blocks with an effect.
    fn exits_and_kills(&mut self, f: &Function, b: Block) {
        self.exits[b] = matches!(f.blocks[b].term, crate::ir::Terminator::Return(_));
        if self.exits[b] {
            self.exit_blocks.push(b);
        }
        if !self.kills[b].is_empty() {
            self.kill_blocks.push(b);
        }
    }

    /// The worklist: the candidates, in scan order, that are not dead, each added to the
    /// entry of its lexical form.
    fn collect(
        &mut self,
        f: &Function,
        read: &super::util::LocalSet,
        is_temp: &[Option<usize>],
        round: usize,
        candidates: &mut Vec<Candidate>,
        index: &mut HashMap<Key, usize>,
    ) {
        let init = self;
        index.clear();
        index.reserve(candidates.len());
        init.worklist.reserve(candidates.len());
        for Candidate { node: n, block: b, pos, op, versions } in candidates.drain(..) {
            if dead(f, &init.parent, n, read) {
                continue;
            }
            let operands: SmallVec<[KeyOperand; 3]> = versions
                .iter()
                .map(|v| match *v {
                    Val::Var(l) => KeyOperand::Orig(init.orig[l]),
                    Val::Const(t, c) => KeyOperand::Const(t, c),
                })
                .collect();
            let made = |o: &KeyOperand| match o {
                KeyOperand::Orig(i) => is_temp[*i as usize],
                KeyOperand::Const(..) => None,
            };
            let composite = operands.iter().any(|o| made(o).is_some());
            let fresh = operands.iter().any(|o| made(o) == Some(round.wrapping_sub(1)));
            let key = Key { op, operands };
            // One probe: the key is cloned only for a new expression, from the entry.
            let k = match index.entry(key) {
                std::collections::hash_map::Entry::Occupied(e) => *e.get(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let key = e.key().clone();
                    e.insert(init.worklist.len());
                    init.worklist.push(Expression { key, occs: SmallVec::new(), composite, fresh });
                    init.worklist.len() - 1
                }
            };
            let parent = init.parent[n].expect("every node has a parent");
            init.worklist[k].occs.push(RealOcc { node: n, block: b, pos, versions, parent });
        }
    }

    /// The phis of block `b`: each one's place, `b` as a phi block and a definition
    /// block of its original, and their arguments as read.
    fn scan_phis(&mut self, f: &Function, b: Block, read: &mut super::util::LocalSet) {
        for (i, phi) in f.blocks[b].phis.iter().enumerate() {
            for (_, a) in &phi.args {
                read.insert(*a);
            }
            self.phi_def[phi.dest] = Some((b, i));
            let o = self.orig[phi.dest] as usize;
            if self.phi_blocks[o].last() != Some(&b) {
                self.phi_blocks[o].push(b);
            }
            if self.def_blocks[o].last() != Some(&b) {
                self.def_blocks[o].push(b);
            }
        }
    }

    /// Gives each original an expression of the round has for an operand its place in
    /// the lists of `current` ([`Initialization::asked`]): every expression in the first
    /// round, the fresh ones after it (as `ssapre::run` runs them).
    fn ask(&mut self, round: usize, norig: usize) {
        self.asked.clear();
        self.asked.resize(norig, NOT_ASKED);
        let mut places = 0;
        for e in self.worklist.iter().filter(|e| round == 0 || e.fresh) {
            for op in &e.key.operands {
                if let KeyOperand::Orig(o) = *op {
                    if self.asked[o as usize] == NOT_ASKED {
                        self.asked[o as usize] = places;
                        places += 1;
                    }
                }
            }
        }
    }

    /// The versions current at each block entry: a walk of the dominator tree with one
    /// stack per asked original, as SSA renaming does (the versions of the others are
    /// never asked for). Also records the parameters as definitions in the entry block.
    fn current_versions(&mut self, f: &Function, an: &Analyses, scratch: &Scratch) {
        let init = self;
        let places = init.asked.iter().filter(|&&p| p != NOT_ASKED).count();
        let mut stacks: Vec<Vec<Local>> = vec![vec![]; places];
        for &p in &f.params {
            let o = init.orig[p] as usize;
            if init.asked[o] != NOT_ASKED {
                stacks[init.asked[o] as usize].push(p);
            }
            if !init.def_blocks[o].contains(&f.entry()) {
                init.def_blocks[o].push(f.entry());
            }
        }
        // The originals each block pushed a version of are one log for the whole walk:
        // a block enters at the log's height and leaves by popping back to it (a list per
        // block was an allocation each).
        type Walk<'s> = (&'s mut Initialization, Vec<Vec<Local>>, Vec<u32>);
        let enter = |(init, stacks, pushed): &mut Walk<'_>, b: Block| {
            let height = pushed.len();
            for phi in &f.blocks[b].phis {
                let at = init.asked[init.orig[phi.dest] as usize];
                if at != NOT_ASKED {
                    stacks[at as usize].push(phi.dest);
                    pushed.push(at);
                }
            }
            // Only a merge block can hold a Φ (Φ-Insertion keeps no other), so only
            // merge blocks are asked for their versions.
            if an.cfg.preds[b].len() >= 2 {
                let current = &mut init.current[b];
                current.clear();
                current.extend(stacks.iter().map(|s| s.last().copied()));
            }
            let (start, end) = scratch.assigned[b];
            for &local in &scratch.assigns[start as usize..end as usize] {
                let at = init.asked[init.orig[local] as usize];
                if at != NOT_ASKED {
                    stacks[at as usize].push(local);
                    pushed.push(at);
                }
            }
            height
        };
        let leave = |(_, stacks, pushed): &mut Walk<'_>, height: usize| {
            for at in pushed.drain(height..) {
                stacks[at as usize].pop();
            }
        };
        an.domtree.walk_scoped(&mut (init, stacks, vec![]), enter, leave);
    }

    /// The current version of original `o` at the entry of merge block `b`; `o` is an
    /// operand of an expression the round runs ([`Initialization::asked`]).
    pub fn current_at(&self, b: Block, o: u32) -> Option<Local> {
        let at = self.asked[o as usize];
        debug_assert!(at != NOT_ASKED, "the versions of an original no expression of the round reads");
        self.current[b].get(at as usize).copied().flatten()
    }

    /// The number of originals.
    pub fn originals(&self) -> usize {
        self.phi_blocks.len()
    }
}

/// A node of a candidate kind over leaves, found by the scan.
struct Candidate {
    node: Expr,
    block: Block,
    pos: u32,
    op: OpKind,
    versions: Versions,
}

/// Buffers of one scan: the candidates found, the locals each block assigns in
/// evaluation order (`assigns[assigned[b].0..assigned[b].1]`), which the walk for the
/// current versions reads instead of walking the trees again, and the locals each
/// block's trees read (`reads[read_at[b].0..read_at[b].1]`), which the next round's scan
/// takes for the blocks it does not walk.
#[derive(Default)]
struct Scratch {
    candidates: Vec<Candidate>,
    assigns: Vec<Local>,
    assigned: SecondaryMap<Block, (u32, u32)>,
    reads: Vec<Local>,
    read_at: SecondaryMap<Block, (u32, u32)>,
    /// Each tree of each block, in layout and block order (`trees[trees_at[b].0..
    /// trees_at[b].1]` for block `b`), and the place of each root's tree in the list
    /// (stale where that root is no longer one: [`Scratch::tree`] checks).
    trees: Vec<Tree>,
    trees_at: SecondaryMap<Block, (u32, u32)>,
    tree_of: SecondaryMap<Expr, u32>,
}

/// What a scan found of one tree: its root, the place in its block's evaluation order
/// before its first node and how many nodes it has, and the ranges of the scan's lists
/// of assignments and reads it wrote.
#[derive(Copy, Clone)]
struct Tree {
    root: Expr,
    at: u32,
    nodes: u32,
    assigns: (u32, u32),
    reads: (u32, u32),
}

impl Scratch {
    /// Records the tree at `root`, `nodes` nodes from place `at` on, whose assignments
    /// and reads start at `assigns` and `reads` in the lists and end at their ends now.
    fn push_tree(&mut self, root: Expr, at: u32, nodes: u32, assigns: u32, reads: u32) {
        let (a, r) = (self.assigns.len() as u32, self.reads.len() as u32);
        self.record(Tree { root, at, nodes, assigns: (assigns, a), reads: (reads, r) });
    }

    /// Records `t`, the next tree of the list.
    fn record(&mut self, t: Tree) {
        self.tree_of[t.root] = self.trees.len() as u32;
        self.trees.push(t);
    }

    /// The tree this scan found at `root` in block `b`, if it found one there.
    fn tree(&self, b: Block, root: Expr) -> Option<&Tree> {
        let i = *self.tree_of.get(root)?;
        let (first, last) = *self.trees_at.get(b)?;
        (first <= i && i < last && self.trees[i as usize].root == root).then(|| &self.trees[i as usize])
    }

    /// Whether every list has room for at most [`SPARE_ENTRIES`] (see [`SPARE_BUFFERS`]).
    fn bounded(&self) -> bool {
        self.candidates.capacity() <= SPARE_ENTRIES
            && self.assigns.capacity() <= SPARE_ENTRIES
            && self.reads.capacity() <= SPARE_ENTRIES
            && self.assigned.capacity() <= SPARE_ENTRIES
            && self.read_at.capacity() <= SPARE_ENTRIES
            && self.trees.capacity() <= SPARE_ENTRIES
            && self.trees_at.capacity() <= SPARE_ENTRIES
            && self.tree_of.capacity() <= SPARE_ENTRIES
    }
}

/// What a round leaves to the next round's scan, so that it walks again only the trees
/// CodeMotion rewrote or added (the scans of the rounds after the first, which walked
/// every tree, were a third of `ssapre`). A block no expression of the round changed
/// holds the trees the last scan walked: the same kills at the same positions, the same
/// parents, assignments and reads, and no candidate (a candidate of the next round reads
/// a temporary of this one, which only the changed trees read). Its phis are read again,
/// as the phis of every block are. In a changed block, so does every tree CodeMotion did
/// not rewrite ([`Changed`]), its kills moved with its place in the block.
#[derive(Default)]
pub struct Kept {
    /// The blocks (by index) the round changed; `None` before the first scan, and after a
    /// scan until its round is over.
    changed: Option<Changed>,
    /// The last scan's parents and kills ([`Initialization::parent`], [`Initialization::kills`]).
    parent: SecondaryMap<Expr, Option<Parent>>,
    kills: SecondaryMap<Block, Vec<(u32, Expr)>>,
    /// The last scan's assignments and reads of each block.
    scratch: Scratch,
    /// The buffers of the scan before the last, for the next scan to fill.
    spare: Scratch,
    /// The last round's lists of blocks per original and versions per merge block, for
    /// the next scan to fill ([`Initialization::phi_blocks`], [`Initialization::def_blocks`],
    /// [`Initialization::current`]).
    lists: Lists,
    /// The last scan's worklist and its index by lexical form, emptied, for their room.
    worklist: Vec<Expression>,
    index: HashMap<Key, usize>,
}

impl Kept {
    /// What the rounds of another function kept, for a function's first scan: no block
    /// changed, and the parents, the kills of every block and the versions of every merge
    /// block empty (as new ones are), each list keeping its room. The scan lists and the
    /// lists per original are emptied where they are filled.
    fn emptied(mut self) -> Kept {
        self.changed = None;
        self.parent.clear();
        self.kills.values_mut().for_each(Vec::clear);
        self.lists.current.values_mut().for_each(Vec::clear);
        self
    }

    /// Keeps the parents, kills and lists of the scan `init` for the next round's scan, and
    /// its worklist and index, emptied, for their room.
    fn keep(&mut self, init: Initialization) {
        self.parent = init.parent;
        self.kills = init.kills;
        self.lists = Lists { phi_blocks: init.phi_blocks, def_blocks: init.def_blocks, current: init.current };
        self.worklist = init.worklist;
        self.worklist.clear();
        self.index.clear();
    }

    /// Whether every list has room for at most [`SPARE_ENTRIES`] (see [`SPARE_BUFFERS`]).
    fn bounded(&self) -> bool {
        let n = SPARE_ENTRIES;
        let lists = |l: &Vec<Vec<Block>>| l.capacity() <= n && l.iter().all(|b| b.capacity() <= n);
        self.scratch.bounded()
            && self.spare.bounded()
            && self.parent.capacity() <= n
            && self.kills.capacity() <= n
            && self.kills.values().all(|k| k.capacity() <= n)
            && lists(&self.lists.phi_blocks)
            && lists(&self.lists.def_blocks)
            && self.lists.current.capacity() <= n
            && self.lists.current.values().all(|c| c.capacity() <= n)
            && self.worklist.capacity() <= n
            && self.index.capacity() <= n
    }
}

/// The lists of a round kept for the next one to fill (see [`Kept::lists`]).
#[derive(Default)]
struct Lists {
    phi_blocks: Vec<Vec<Block>>,
    def_blocks: Vec<Vec<Block>>,
    current: SecondaryMap<Block, Vec<Option<Local>>>,
}

/// `lists` emptied, `n` of them: the lists of a round for the next, whose allocations
/// they keep.
fn emptied(mut lists: Vec<Vec<Block>>, n: usize) -> Vec<Vec<Block>> {
    lists.truncate(n);
    for l in &mut lists {
        l.clear();
    }
    lists.resize(n, vec![]);
    lists
}

/// Whether the computation at `n` only feeds a statement `dce` removes: pure computations
/// up to the root assignment of a local nothing reads, in a tree without effects.
fn dead(f: &Function, parent: &SecondaryMap<Expr, Option<Parent>>, n: Expr, read: &super::util::LocalSet) -> bool {
    let mut c = n;
    loop {
        let Some(Parent::Node(p)) = parent[c] else { return false };
        match &f.exprs[p] {
            ExprData::Assign { local, value } => {
                return !read.contains(*local)
                    && matches!(parent[p], Some(Parent::Stmt(_)))
                    && !f.tree_has_side_effect(*value);
            }
            d if op_kind(d).is_some() => c = p,
            _ => return false,
        }
    }
}
