//! The steps SSAPRE runs for one expression of the worklist, over its Factored
//! Redundancy Graph (FRG): Φ-Insertion, Rename, DownSafety, WillBeAvail (CanBeAvail,
//! Later), Finalize (Finalize1 and Finalize2, with unneeded-Φ elimination) and
//! CodeMotion, with the paper's names for the flags (`down_safe`, `can_be_avail`,
//! `later`, `will_be_avail`, `has_real_use`, `save`, `reload`).
//!
//! Each block holds at most one Φ of the expression and one Φ operand per successor Φ,
//! occurring at the block's end (`seeds/ssapre.txt`). Classes are the "redundancy
//! classes" of Rename; a class is defined by a Φ or by the first real occurrence that
//! starts it.

use super::{Changed, Expression, Initialization, Parent, Temporaries, Val, Versions, TEMP_PREFIX};
use crate::ir::{Block, Expr, ExprData, Function, Local, Type};
use crate::passes::util::Namer;
use cranelift_bitset::CompoundBitSet;
use crate::passes::{Analyses, Stats};
use crate::hash::HashMap;
use cranelift_entity::EntityRef;
use smallvec::SmallVec;

/// No Φ in this block ([`Frg::phi_index`]).
const NO_PHI: u32 = u32::MAX;

/// What defines a Φ operand or a reload: nothing (⊥), a real occurrence, a Φ, or an
/// insertion made by Finalize.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
enum Def {
    Bottom,
    Real(usize),
    Phi(usize),
    Inserted(usize),
}

#[derive(Clone, Debug)]
struct PhiOpnd {
    pred: Block,
    def: Def,
    has_real_use: bool,
}

/// A Φ occurrence of the expression at the entry of `block`.
#[derive(Clone, Debug)]
struct PhiOcc {
    block: Block,
    /// The operand versions current at the block's entry; `None` when an original has
    /// no version there (the expression cannot be formed, so the Φ is never available).
    versions: Option<Versions>,
    class: u32,
    down_safe: bool,
    can_be_avail: bool,
    later: bool,
    operands: Vec<PhiOpnd>,
}

impl PhiOcc {
    fn will_be_avail(&self) -> bool {
        self.can_be_avail && !self.later
    }
}

/// Rename's state of a real occurrence and what Finalize decided for it.
#[derive(Clone, Debug, Default)]
struct RealState {
    class: u32,
    reload: bool,
    /// For a reload: the available definition it reads.
    def: Option<Def>,
    save: bool,
}

/// An insertion decided by Finalize: the expression with `versions` at the end of `block`.
#[derive(Clone, Debug)]
struct Insertion {
    block: Block,
    versions: Versions,
}

/// The entry on top of Rename's stack: a real occurrence or a Φ.
#[derive(Copy, Clone)]
enum Top {
    Real(usize),
    Phi(usize),
}

/// What CodeMotion resolves a needed Φ to: a temporary, or (while resolving) a Φ.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Sym {
    Value(Local),
    Phi(usize),
}

/// The working state of one expression: its FRG (Φs with their operands, the real
/// occurrences with their classes), and what Finalize decided. The steps below are its
/// methods, in the order [`run_expression`] calls them.
struct Frg<'a> {
    an: &'a Analyses,
    init: &'a Initialization,
    /// The expression's index in the worklist.
    k: usize,
    e: &'a Expression,
    /// Whether the expression may trap (the trap rule of the `ssapre` module docs).
    trapping: bool,
    /// The Φs, in block order.
    phis: Vec<PhiOcc>,
    /// The Φ of each block that has one, by block index, [`NO_PHI`] for the others (see
    /// [`Frg::phi_of`]): a direct lookup, since a function of many merges gives an
    /// expression as many Φs (a binary search at each lookup cost more than the walk of
    /// the whole tree it replaced, and a hash map a probe each). Kept from expression to
    /// expression: [`Frg::give_back`] resets only the entries of its Φs.
    phi_index: Vec<u32>,
    /// The real occurrences of each block that has some: a run of the worklist entry's
    /// occurrences (they are in block layout order) as its block, start and end, sorted
    /// by block (see [`Frg::occs_in`]; most expressions have one run, and a hash map
    /// cost each an allocation).
    occ_runs: Vec<(Block, usize, usize)>,
    /// The blocks where Rename and Finalize1 have something to do, in dominator-tree
    /// pre-order: those with a Φ or a real occurrence, the predecessors of Φ blocks
    /// (where Φ operands occur), the exits and, for a trapping expression, the blocks
    /// with an effect. The other blocks change nothing, so the walks skip them: a walk
    /// of the whole tree per expression cost every expression the size of the function.
    /// The flag is false for a block that is only an effect's (it can only make the Φ
    /// on top not down-safe).
    sites: Vec<(Block, bool)>,
    /// Rename's and Finalize's state of each real occurrence.
    real: Vec<RealState>,
    /// The last redundancy class given out.
    classes: u32,
    /// For each Φ, the Φ operands it defines (see [`phi_users`]); the lists past the
    /// last Φ are spare, left by an expression of more Φs.
    users: Vec<Vec<(usize, usize)>>,
    insertions: Vec<Insertion>,
    /// Finalize2: the Φs some reload needs.
    needed: Vec<bool>,
    /// Finalize2: the insertions that feed a needed Φ.
    used_insertion: Vec<bool>,
    /// Finalize1: the available definition of each class, by class (classes are
    /// numbered from 1 up to [`Frg::classes`]).
    avail_def: Vec<Option<Def>>,
    /// Rename's stack of occurrences and its scopes (see [`Frg::rename`]), the events
    /// of a block ([`Frg::rename_occurrences`]), and the worklist of the data flow
    /// resets.
    stack: Vec<Top>,
    scopes: Vec<(Block, usize)>,
    events: Vec<(u32, Option<usize>)>,
    work: Vec<usize>,
}

/// The buffers of one expression's steps, kept by `ssapre::run` from expression to
/// expression and round to round: each expression's [`Frg`] takes them empty and gives
/// them back cleared, so an expression allocates only what outgrows the ones before (a
/// dozen lists per expression, and one per Φ, were a fifth of its time).
#[derive(Default)]
pub struct Buffers {
    phis: Vec<PhiOcc>,
    /// The operand lists of the Φs given back, empty.
    operands: Vec<Vec<PhiOpnd>>,
    phi_index: Vec<u32>,
    occ_runs: Vec<(Block, usize, usize)>,
    sites: Vec<(Block, bool)>,
    real: Vec<RealState>,
    /// The user lists, empty; as many as the most Φs an expression had.
    users: Vec<Vec<(usize, usize)>>,
    insertions: Vec<Insertion>,
    needed: Vec<bool>,
    used_insertion: Vec<bool>,
    avail_def: Vec<Option<Def>>,
    /// Rename's stack and scopes, empty: lists kept from expression to expression cost
    /// less per push and look than inline ones (a sixth of Rename was their checks of
    /// where their items are).
    stack: Vec<Top>,
    scopes: Vec<(Block, usize)>,
    events: Vec<(u32, Option<usize>)>,
    work: Vec<usize>,
    /// The worklist of [`inert`], and what it found of whether each block is a Φ block.
    inert: Vec<Block>,
    phi_block_memo: Vec<std::cell::Cell<u8>>,
    /// Φ-Insertion's own lists: the Φ blocks, the sites in pre-order, and the two bit sets.
    phi_at: Vec<Block>,
    preorder: Vec<Block>,
    union: CompoundBitSet,
    numbers: CompoundBitSet,
}

impl Buffers {
    /// Whether every list has room for at most `super::SPARE_ENTRIES` entries (the
    /// buffers are kept from one function to the next only then).
    pub fn bounded(&self) -> bool {
        let n = super::SPARE_ENTRIES;
        self.phis.capacity() <= n
            && self.operands.capacity() <= n
            && self.operands.iter().all(|o| o.capacity() <= n)
            && self.phi_index.capacity() <= n
            && self.occ_runs.capacity() <= n
            && self.sites.capacity() <= n
            && self.real.capacity() <= n
            && self.users.capacity() <= n
            && self.users.iter().all(|u| u.capacity() <= n)
            && self.insertions.capacity() <= n
            && self.needed.capacity() <= n
            && self.used_insertion.capacity() <= n
            && self.avail_def.capacity() <= n
            && self.stack.capacity() <= n
            && self.scopes.capacity() <= n
            && self.events.capacity() <= n
            && self.work.capacity() <= n
            && self.inert.capacity() <= n
            && self.phi_block_memo.capacity() <= n
            && self.phi_at.capacity() <= n
            && self.preorder.capacity() <= n
            && self.union.capacity() <= n
            && self.numbers.capacity() <= n
    }
}

/// The temporaries of CodeMotion: named `pre1`, `pre2`, ... per expression that changed
/// code, and the temporary holding each definition of the FRG.
struct Temps<'a> {
    /// Made at the first fresh local: until then the function's locals are the ones it
    /// had when CodeMotion started (every local CodeMotion adds is a fresh one), and a
    /// motion that only saves in locals of the function and reloads needs no namer.
    namer: Option<Namer>,
    /// The names of the function's locals the namer must know ([`Temporaries::input_names`]).
    input_names: &'a [String],
    base: String,
    ty: Type,
    of: HashMap<Def, Local>,
}

impl Temps<'_> {
    /// A fresh local for the expression's value.
    fn fresh(&mut self, f: &mut Function) -> Local {
        let (base, names) = (&self.base, self.input_names);
        let namer = self.namer.get_or_insert_with(|| Namer::for_base(names.iter().map(String::as_str), base));
        namer.new_local(f, &self.base, self.ty)
    }
}

/// Runs the SSAPRE steps for worklist entry `k` (`seeds/ssapre.txt`, "for each entry in
/// the worklist, these operations are performed"). Returns whether the function changed.
pub fn run_expression(
    f: &mut Function,
    an: &Analyses,
    init: &Initialization,
    k: usize,
    round: usize,
    temps: &mut Temporaries,
    stats: &mut Stats,
    changed: &mut Changed,
    bufs: &mut Buffers,
) -> bool {
    stats.bump("exprs");
    let e = &init.worklist[k];
    if let [_] = &e.occs[..] {
        // Φ-Insertion places no Φ for it: the steps would not start, and there is no
        // Φ for `inert`'s walks to find (most expressions of one occurrence, asked
        // first since it costs a look at a few lists).
        if !has_phi(an, init, e) {
            return false;
        }
        if inert(f, an, init, e, &mut bufs.inert, &mut bufs.phi_block_memo) {
            // What the steps below would count for it: nothing moved, no Φ unneeded.
            stats.add("phis_unneeded", 0);
            return false;
        }
    }
    let Some(mut frg) = Frg::phi_insertion(an, init, k, bufs) else { return false };
    let moved = frg.steps(f, round, temps, stats, changed);
    frg.give_back(bufs);
    moved
}

/// How many blocks [`inert`] walks before it leaves the question to the steps.
const INERT_WALK: usize = 32;

/// How many blocks [`Useless`] walks, for all the Φs of one expression, before it leaves
/// the question to the steps.
const USELESS_WALK: usize = 64;

/// Whether the steps would find nothing to do for an expression of one occurrence, known
/// without its FRG. A reload needs a will-be-available Φ (there is no second occurrence to
/// reuse), which needs a Φ that is not later, which needs a Φ operand with a real use: at
/// the end of a block where the occurrence is the top of Rename's stack (the occurrence's
/// block and the blocks it dominates without a Φ on the way), an operand of a successor's
/// Φ whose versions, as seen there, are the occurrence's. The walk down the dominator tree
/// from the occurrence stops at Φ blocks and looks for one; without one the steps change
/// nothing and every Φ that can be available is later. A function of many merges gives an
/// expression over a variable assigned in each as many Φs, all of them of no use: the
/// steps cost each such expression the size of the function, and 10,000 diamonds took
/// minutes. Not inert when the walk would pass [`INERT_WALK`] blocks: the steps decide.
///
/// A real use found by the walk need not matter either. It makes its Φ not later, and
/// the Φs that Φ feeds, only when the Φ can be available: Later starts every Φ that can be
/// available as later, and only such a Φ with an operand of a real use (an operand no
/// reset turns to ⊥) makes Φs not later. A Φ cannot be available when it is not
/// down-safe and has a ⊥ operand after Rename, or an operand defined by a Φ that cannot
/// be available (CanBeAvail and its reset). So the expression is still inert when
/// [`Useless`] proves, for the Φ of every real use, that it is not down-safe and cannot be
/// available: then no Φ will be available, Finalize reloads nothing, and the steps would
/// count `phis_unneeded` 0, as [`run_expression`] does. Most expressions of one
/// occurrence in a branch are such: they feed the Φ at the merge from one side and
/// nothing (or a Φ of nothing) from the other, and no occurrence follows (of 5,697
/// expressions that reached the steps on `bench --seeds 60`, 3,883 were, each for
/// nothing).
fn inert(
    f: &Function,
    an: &Analyses,
    init: &Initialization,
    e: &Expression,
    work: &mut Vec<Block>,
    memo: &mut Vec<std::cell::Cell<u8>>,
) -> bool {
    let [occ] = &e.occs[..] else { return false };
    let dt = &an.domtree;
    if dt.preorder_number(occ.block) == 0 {
        return false;
    }
    let frontier = init.frontier(an, occ.block);
    // Φ-Insertion's blocks (see there): a merge in the occurrence's iterated frontier, with
    // a phi of an operand's original (then the version current there is that phi's), or in
    // the iterated frontier of its definitions.
    let phi_block = |b: Block| {
        an.cfg.preds[b].len() >= 2
            && (frontier.binary_search(&b).is_ok()
                || e.key.operands.iter().any(|op| match *op {
                    super::KeyOperand::Orig(o) => {
                        init.current_at(b, o).is_some_and(|l| matches!(init.phi_def[l], Some((d, _)) if d == b))
                            || init.def_frontier(an, o).binary_search(&b).is_ok()
                    }
                    super::KeyOperand::Const(..) => false,
                }))
    };
    // The walks below ask about the same blocks again and again (the dominator-tree chain
    // up from each predecessor, the successors of each block of a region): each block's
    // answer is worked out once per expression (`UNKNOWN`, else one plus the answer).
    memo.clear();
    memo.resize(f.blocks.len(), std::cell::Cell::new(UNKNOWN));
    let memo = &*memo;
    let is_phi_block = |b: Block| match memo.get(b.index()).map(std::cell::Cell::get) {
        Some(known) if known != UNKNOWN => known == 2,
        _ => {
            let answer = phi_block(b);
            if let Some(m) = memo.get(b.index()) {
                m.set(1 + u8::from(answer));
            }
            answer
        }
    };
    let is_phi_block = &is_phi_block;
    let mut useless = Useless {
        f,
        an,
        init,
        e,
        occ,
        is_phi_block,
        budget: USELESS_WALK,
        visiting: SmallVec::new(),
        not_down_safe: SmallVec::new(),
        cannot_be_avail: SmallVec::new(),
    };
    work.clear();
    work.push(occ.block);
    let mut walked = 0;
    while let Some(p) = work.pop() {
        walked += 1;
        if walked > INERT_WALK {
            return false;
        }
        for &s in &an.cfg.succs[p] {
            if !is_phi_block(s) {
                continue;
            }
            let real_use = versions_seen_as(f, init, e, s, p, &occ.versions);
            if real_use && !(useless.not_down_safe(s) && useless.cannot_be_avail(s)) {
                return false;
            }
        }
        work.extend(dt.children[p].iter().copied().filter(|&c| !is_phi_block(c)));
    }
    true
}

/// A block [`inert`] has not asked about yet, in its list of what each block's Φ is.
const UNKNOWN: u8 = 0;

/// The top of Rename's stack at the end of a block, for an expression of one occurrence
/// ([`Useless::top_at_end`]).
enum StackTop {
    Empty,
    Occurrence,
    Phi(Block),
}

/// Proofs, for [`inert`], that the Φ of a block cannot be available, by what Rename would
/// find without running it. For an expression of one occurrence the sites that push on
/// Rename's stack are the Φ blocks (a Φ) and the occurrence's block (the occurrence, after
/// its block's Φ), so the top at the end of a block is the push of the nearest such block
/// up the dominator tree, and a Φ is the top in the blocks it dominates without another
/// such block on the way (its region). Each proof is one Rename, DownSafety or CanBeAvail
/// would make; what is not proven within [`USELESS_WALK`] blocks is left to the steps.
struct Useless<'a, P: Fn(Block) -> bool> {
    f: &'a Function,
    an: &'a Analyses,
    init: &'a Initialization,
    e: &'a Expression,
    occ: &'a super::RealOcc,
    is_phi_block: &'a P,
    /// How many more blocks the proofs may walk.
    budget: usize,
    /// The Φ blocks a proof is under way for (a loop of Φs proves nothing).
    visiting: SmallVec<[Block; 8]>,
    /// The Φ blocks proven not down-safe, and proven unable to be available: a Φ is
    /// asked again from each of its real uses and from the Φs around it.
    not_down_safe: SmallVec<[Block; 8]>,
    cannot_be_avail: SmallVec<[Block; 8]>,
}

impl<P: Fn(Block) -> bool> Useless<'_, P> {
    /// The versions of the Φ at block `b` ([`versions_at`]).
    fn versions(&self, b: Block) -> Option<Versions> {
        versions_at(self.init, self.e, b)
    }

    /// Whether the Φ at `s`, of versions `own`, as seen at the end of its predecessor `p`,
    /// has `versions` ([`seen_as`]).
    fn seen_as(&self, s: Block, own: &[Val], p: Block, versions: &[Val]) -> bool {
        seen_as(self.f, self.init, s, own, p, versions)
    }

    /// The top of Rename's stack at the end of reachable block `b`; `None` past the budget.
    fn top_at_end(&mut self, b: Block) -> Option<StackTop> {
        let mut x = Some(b);
        while let Some(y) = x {
            self.budget = self.budget.checked_sub(1)?;
            if y == self.occ.block {
                return Some(StackTop::Occurrence);
            }
            if (self.is_phi_block)(y) {
                return Some(StackTop::Phi(y));
            }
            x = self.an.domtree.idom[y];
        }
        Some(StackTop::Empty)
    }

    /// Whether the Φ at `s`, not down-safe, cannot be available after CanBeAvail: an
    /// operand is ⊥ after Rename (its predecessor is unreachable and never walked, or the
    /// top of the stack there is nothing, or the occurrence or a Φ whose versions are not
    /// the Φ's as seen there), or is defined by a Φ that cannot be available either (the
    /// reset turns the operand to ⊥). Such a Φ is not down-safe, since the operand it
    /// defines has no real use (DownSafety's reset), so the same holds of it.
    fn cannot_be_avail(&mut self, s: Block) -> bool {
        if self.cannot_be_avail.contains(&s) {
            return true;
        }
        if self.visiting.contains(&s) {
            return false;
        }
        let Some(own) = self.versions(s) else { return true };
        self.visiting.push(s);
        let dt = &self.an.domtree;
        let mut proven = false;
        for &q in &self.an.cfg.preds[s] {
            if dt.preorder_number(q) == 0 {
                proven = true;
                break;
            }
            proven = match self.top_at_end(q) {
                None => break,
                Some(StackTop::Empty) => true,
                Some(StackTop::Occurrence) => !self.seen_as(s, &own, q, &self.occ.versions),
                Some(StackTop::Phi(x)) => match self.versions(x) {
                    None => true,
                    Some(v) => !self.seen_as(s, &own, q, &v) || self.cannot_be_avail(x),
                },
            };
            if proven {
                break;
            }
        }
        self.visiting.pop();
        if proven {
            self.cannot_be_avail.push(s);
        }
        proven
    }

    /// Whether the Φ at `c` is not down-safe after DownSafety, by its region: Rename finds
    /// it on top at an exit or (for a trapping expression) an effect, or at the end of a
    /// predecessor of a Φ that has no versions, or whose versions as seen there are not
    /// the Φ's, or that is itself not down-safe (DownSafety's reset: the operand it
    /// defines has no real use).
    fn not_down_safe(&mut self, c: Block) -> bool {
        if self.not_down_safe.contains(&c) {
            return true;
        }
        if c == self.occ.block || self.visiting.contains(&c) {
            return false;
        }
        let Some(own) = self.versions(c) else { return false };
        self.visiting.push(c);
        let mut region: SmallVec<[Block; 8]> = SmallVec::new();
        region.push(c);
        let mut proven = false;
        'walk: while let Some(x) = region.pop() {
            let Some(left) = self.budget.checked_sub(1) else { break };
            self.budget = left;
            if self.init.exits[x] || (self.e.key.op.can_trap() && !self.init.kills[x].is_empty()) {
                proven = true;
                break;
            }
            for &d in &self.an.cfg.succs[x] {
                if !(self.is_phi_block)(d) {
                    continue;
                }
                let feeds = versions_seen_as(self.f, self.init, self.e, d, x, &own);
                if !feeds || (d != c && self.not_down_safe(d)) {
                    proven = true;
                    break 'walk;
                }
            }
            let occ_block = self.occ.block;
            let is_phi_block = self.is_phi_block;
            region.extend(self.an.domtree.children[x].iter().copied().filter(|&y| y != occ_block && !is_phi_block(y)));
        }
        self.visiting.pop();
        if proven {
            self.not_down_safe.push(c);
        }
        proven
    }
}

/// Whether Φ-Insertion places a Φ for the expression of one occurrence (it returns none
/// only when it has no block for one).
fn has_phi(an: &Analyses, init: &Initialization, e: &Expression) -> bool {
    let merge = |b: &Block| an.cfg.preds[*b].len() >= 2;
    e.occs.iter().any(|o| init.frontier(an, o.block).iter().any(merge))
        || e.key.operands.iter().any(|op| match *op {
            super::KeyOperand::Orig(o) => {
                init.phi_blocks[o as usize].iter().any(merge) || init.def_frontier(an, o).iter().any(merge)
            }
            super::KeyOperand::Const(..) => false,
        })
}

impl<'a> Frg<'a> {
    /// Φ-Insertion (`seeds/ssapre.txt`, "PHI placement: find where the PHI nodes of the
    /// FRG must be placed"): the iterated dominance frontier of the occurrences' blocks
    /// and of the blocks defining the operands' originals, plus the blocks of the
    /// operands' phis, kept where the CFG merges. `None` when the expression has one
    /// occurrence and no Φ: there is nothing to do.
    fn phi_insertion(an: &'a Analyses, init: &'a Initialization, k: usize, bufs: &mut Buffers) -> Option<Frg<'a>> {
        let e = &init.worklist[k];
        let occs = &e.occs;
        // The iterated frontier of a union is the union of the iterated frontiers, so
        // the originals' part is computed once per original by Initialization (per
        // expression it cost every expression the size of the function: a chain of
        // 100,000 blocks took minutes), and the occurrences' part once per block.
        let mut seeds: SmallVec<[Block; 8]> = occs.iter().map(|o| o.block).collect();
        seeds.dedup();
        // The union of the lists in block order, by a bit set: an operand with a phi in
        // every merge gives each expression over it as many Φ blocks as the function has
        // merges, and a sort of them per expression was a tenth of a function of
        // thousands of diamonds.
        let union = &mut bufs.union;
        union.clear();
        for &b in seeds.iter().flat_map(|&s| init.frontier(an, s)) {
            union.insert(b.index());
        }
        for op in &e.key.operands {
            if let super::KeyOperand::Orig(o) = op {
                for &b in init.phi_blocks[*o as usize].iter().chain(init.def_frontier(an, *o)) {
                    union.insert(b.index());
                }
            }
        }
        // A Φ only makes sense at a merge; a phi in a one-predecessor block needs none.
        let phi_at = &mut bufs.phi_at;
        phi_at.clear();
        phi_at.extend(union.iter().map(Block::new).filter(|&b| an.cfg.preds[b].len() >= 2));
        if occs.len() < 2 && phi_at.is_empty() {
            return None;
        }
        let mut phis = std::mem::take(&mut bufs.phis);
        for &b in phi_at.iter() {
            let versions = versions_at(init, e, b);
            let mut operands = bufs.operands.pop().unwrap_or_default();
            let opnd = |&p: &Block| PhiOpnd { pred: p, def: Def::Bottom, has_real_use: false };
            operands.extend(an.cfg.preds[b].iter().map(opnd));
            let can_be_avail = versions.is_some();
            phis.push(PhiOcc { block: b, versions, class: 0, down_safe: true, can_be_avail, later: false, operands });
        }
        let mut occ_runs = std::mem::take(&mut bufs.occ_runs);
        for (i, o) in occs.iter().enumerate() {
            match occ_runs.last_mut() {
                Some(run) if run.0 == o.block => run.2 = i + 1,
                _ => occ_runs.push((o.block, i, i + 1)),
            }
        }
        occ_runs.sort_unstable_by_key(|r| r.0);
        debug_assert!(occ_runs.windows(2).all(|w| w[0].0 != w[1].0), "one run of occurrences per block");
        let trapping = e.key.op.can_trap();
        let mut phi_index = std::mem::take(&mut bufs.phi_index);
        for (j, p) in phis.iter().enumerate() {
            let i = p.block.index();
            if phi_index.len() <= i {
                phi_index.resize(i + 1, NO_PHI);
            }
            phi_index[i] = j as u32;
        }
        // The sites in dominator-tree pre-order, by a bit set over pre-order numbers (as
        // above: a sort per expression of every merge and its predecessors was a tenth).
        let dt = &an.domtree;
        let numbers = &mut bufs.numbers;
        numbers.clear();
        let blocks = phis.iter().flat_map(|p| std::iter::once(&p.block).chain(&an.cfg.preds[p.block]));
        for &b in blocks.chain(occ_runs.iter().map(|r| &r.0)).chain(&init.exit_blocks) {
            // A block outside the dominator tree (unreachable, numbered 0) is never walked.
            match dt.preorder_number(b) {
                0 => {}
                n => {
                    numbers.insert(n as usize);
                }
            }
        }
        let preorder = &mut bufs.preorder;
        preorder.clear();
        preorder.extend(numbers.iter().map(|n| dt.at_preorder(n as u32)));
        let mut sites = std::mem::take(&mut bufs.sites);
        if trapping {
            merge_sites(dt, preorder, &init.kill_blocks, &mut sites);
        } else {
            sites.extend(preorder.iter().map(|&b| (b, true)));
        }
        let mut real = std::mem::take(&mut bufs.real);
        real.resize(occs.len(), RealState::default());
        Some(Frg {
            an,
            init,
            k,
            e,
            trapping,
            phis,
            phi_index,
            occ_runs,
            sites,
            real,
            classes: 0,
            users: std::mem::take(&mut bufs.users),
            insertions: std::mem::take(&mut bufs.insertions),
            needed: std::mem::take(&mut bufs.needed),
            used_insertion: std::mem::take(&mut bufs.used_insertion),
            avail_def: std::mem::take(&mut bufs.avail_def),
            stack: std::mem::take(&mut bufs.stack),
            scopes: std::mem::take(&mut bufs.scopes),
            events: std::mem::take(&mut bufs.events),
            work: std::mem::take(&mut bufs.work),
        })
    }

    /// The steps after Φ-Insertion, in order; whether CodeMotion changed the function.
    fn steps(
        &mut self,
        f: &mut Function,
        round: usize,
        temps: &mut Temporaries,
        stats: &mut Stats,
        changed: &mut Changed,
    ) -> bool {
        self.rename(f);
        self.down_safety();
        self.will_be_avail();
        if self.finds_nothing() {
            // What Finalize would find: no reload, and no Φ available to be unneeded.
            stats.add("phis_unneeded", 0);
            return false;
        }
        self.finalize(f);
        if !self.real.iter().any(|r| r.reload) {
            let unneeded = self.phis.iter().filter(|p| p.will_be_avail()).count();
            stats.add("phis_unneeded", unneeded as u64);
            return false;
        }
        self.code_motion(f, round, temps, stats, changed);
        true
    }

    /// Gives the expression's lists back to `bufs`, cleared, for the next expression.
    fn give_back(self, bufs: &mut Buffers) {
        let Frg {
            mut phis,
            mut phi_index,
            mut occ_runs,
            mut sites,
            mut real,
            mut users,
            mut insertions,
            mut needed,
            mut used_insertion,
            mut avail_def,
            mut stack,
            mut scopes,
            mut events,
            mut work,
            ..
        } = self;
        for p in phis.drain(..) {
            phi_index[p.block.index()] = NO_PHI;
            let mut operands = p.operands;
            operands.clear();
            bufs.operands.push(operands);
        }
        users.iter_mut().for_each(Vec::clear);
        occ_runs.clear();
        sites.clear();
        real.clear();
        insertions.clear();
        needed.clear();
        used_insertion.clear();
        avail_def.clear();
        stack.clear();
        scopes.clear();
        events.clear();
        work.clear();
        *bufs = Buffers {
            phis,
            phi_index,
            occ_runs,
            sites,
            real,
            users,
            insertions,
            needed,
            used_insertion,
            avail_def,
            stack,
            scopes,
            events,
            work,
            ..std::mem::take(bufs)
        };
    }

    /// The Φ at the entry of block `b`, if there is one.
    fn phi_of(&self, b: Block) -> Option<usize> {
        self.phi_index.get(b.index()).copied().filter(|&j| j != NO_PHI).map(|j| j as usize)
    }

    /// The real occurrences in block `b`, in order.
    fn occs_in(&self, b: Block) -> std::ops::Range<usize> {
        match self.occ_runs.binary_search_by_key(&b, |r| r.0) {
            Ok(at) => self.occ_runs[at].1..self.occ_runs[at].2,
            Err(_) => 0..0,
        }
    }

    /// A new redundancy class.
    fn new_class(&mut self) -> u32 {
        self.classes += 1;
        self.classes
    }

    /// Rename (`seeds/ssapre.txt`, "Renaming: assign appropriate redundancy classes to
    /// all occurrences"): a pre-order walk of the dominator tree with a stack of
    /// occurrences, visiting only the expression's [`sites`](Frg::sites). Entering a
    /// site first leaves the sites above it that do not dominate it, cutting the stack
    /// back to its height when each was entered: the stack a walk of the whole tree
    /// would have there, since the blocks skipped push nothing.
    fn rename(&mut self, f: &Function) {
        let an = self.an;
        // The stacks are the lists of the expressions before, kept in [`Buffers`] (a few
        // allocations per expression were a fifth of its time).
        let mut stack = std::mem::take(&mut self.stack);
        let mut scopes = std::mem::take(&mut self.scopes);
        for si in 0..self.sites.len() {
            let (b, own) = self.sites[si];
            while let Some(&(d, height)) = scopes.last() {
                if an.domtree.dominates(d, b) {
                    break;
                }
                stack.truncate(height);
                scopes.pop();
            }
            scopes.push((b, stack.len()));
            if !own {
                // Only effects here, none an occurrence: the Φ on top is not down-safe.
                if let Some(Top::Phi(j)) = stack.last().copied() {
                    self.phis[j].down_safe = false;
                }
                continue;
            }
            if let Some(j) = self.phi_of(b) {
                self.phis[j].class = self.new_class();
                stack.push(Top::Phi(j));
            }
            self.rename_occurrences(b, &mut stack);
            if self.init.exits[b] {
                if let Some(Top::Phi(j)) = stack.last() {
                    self.phis[*j].down_safe = false;
                }
            }
            self.rename_phi_operands(f, b, &stack);
        }
        self.stack = stack;
        self.scopes = scopes;
    }

    /// Rename within block `b`: the block's occurrences and (for a trapping expression)
    /// effects, in order. An occurrence with the versions of the stack's top joins its
    /// class; an effect under a Φ makes the Φ not down-safe.
    fn rename_occurrences(&mut self, b: Block, stack: &mut Vec<Top>) {
        let occs = &self.e.occs;
        let here = self.occs_in(b);
        if here.is_empty() {
            // Most blocks hold no occurrence of a given expression: their effects (none
            // of which is an occurrence here) only make a Φ on top not down-safe, which
            // one effect does as well as several.
            if self.trapping && !self.init.kills[b].is_empty() {
                if let Some(Top::Phi(j)) = stack.last().copied() {
                    self.phis[j].down_safe = false;
                }
            }
            return;
        }
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        events.extend(here.clone().map(|i| (occs[i].pos, Some(i))));
        if self.trapping {
            let own = |n: &Expr| here.clone().any(|i| occs[i].node == *n);
            events.extend(self.init.kills[b].iter().filter(|(_, n)| !own(n)).map(|&(p, _)| (p, None)));
        }
        events.sort_by_key(|&(p, i)| (p, i.is_none()));
        for &(_, ev) in &events {
            match (ev, stack.last().copied()) {
                (None, Some(Top::Phi(j))) => self.phis[j].down_safe = false,
                (None, _) => {}
                (Some(i), Some(Top::Real(y))) if occs[y].versions == occs[i].versions => {
                    self.real[i].class = self.real[y].class;
                    stack.push(Top::Real(i));
                }
                (Some(i), Some(Top::Phi(j))) if self.phis[j].versions.as_ref() == Some(&occs[i].versions) => {
                    self.real[i].class = self.phis[j].class;
                    stack.push(Top::Real(i));
                }
                (Some(i), top) => {
                    if let Some(Top::Phi(j)) = top {
                        // The expression was altered on the path from the Φ to here
                        // before being evaluated.
                        self.phis[j].down_safe = false;
                    }
                    self.real[i].class = self.new_class();
                    stack.push(Top::Real(i));
                }
            }
        }
        self.events = events;
    }

    /// Rename at the end of block `b`: the Φ operands of the successors' Φs occur there
    /// and take the definition on top of the stack when its versions match.
    fn rename_phi_operands(&mut self, f: &Function, b: Block, stack: &[Top]) {
        let occs = &self.e.occs;
        for &s in &self.an.cfg.succs[b] {
            let Some(g) = self.phi_of(s) else { continue };
            if self.phis[g].versions.is_none() {
                // The successor's Φ cannot form the expression (an operand has no version
                // there): on this path the expression is altered before being evaluated
                // again, so a Φ whose value flows here is not down-safe (ssa profile seed
                // 1025: a division inserted before an inner loop that may not run).
                if let Some(Top::Phi(j)) = stack.last().copied() {
                    self.phis[j].down_safe = false;
                }
                continue;
            }
            let oi = self.phis[g].operands.iter().position(|o| o.pred == b).expect("pred");
            // The versions as seen here are compared without being built: a function of
            // many merges gives every expression as many Φs with two operands each.
            let seen_as = |versions: &[Val]| translates_to(f, self.init, &self.phis[g], b, versions);
            let (def, real_use) = match stack.last().copied() {
                Some(Top::Real(y)) if seen_as(&occs[y].versions) => (Def::Real(y), true),
                Some(Top::Phi(j)) if self.phis[j].versions.as_deref().is_some_and(seen_as) => (Def::Phi(j), false),
                Some(Top::Phi(j)) => {
                    self.phis[j].down_safe = false;
                    (Def::Bottom, false)
                }
                _ => (Def::Bottom, false),
            };
            self.phis[g].operands[oi].def = def;
            self.phis[g].operands[oi].has_real_use = real_use;
        }
    }

    /// DownSafety (`seeds/ssapre.txt`, "Analyze", the first data flow pass): a Φ that is
    /// not down-safe makes the Φs feeding it without a real use not down-safe either. An
    /// insertion of a trapping composite expression is never made (see the module docs of
    /// `ssapre`), so its Φs are not down-safe at all.
    fn down_safety(&mut self) {
        if self.trapping && self.e.composite {
            self.phis.iter_mut().for_each(|p| p.down_safe = false);
        }
        for j in 0..self.phis.len() {
            if !self.phis[j].down_safe {
                reset_down_safe(&mut self.phis, j, &mut self.work);
            }
        }
    }

    /// WillBeAvail (`seeds/ssapre.txt`, "Analyze", the second data flow pass): CanBeAvail,
    /// then Later; a Φ will be available when it can be and is not later. Insertions are
    /// made only at operands of down-safe Φs: for a trapping expression that is the trap
    /// rule (anticipated before any effect); for any expression it keeps PRE from adding
    /// a computation to a path (a Φ that is not down-safe but can be available through an
    /// operand of a Φ that is `later` would otherwise insert there). A Φ that would need
    /// an insertion without being down-safe is not made available.
    fn will_be_avail(&mut self) {
        phi_users(&self.phis, &mut self.users);
        self.can_be_avail();
        self.later();
        loop {
            let phis = &self.phis;
            let bad = (0..phis.len()).find(|&j| {
                phis[j].will_be_avail() && !phis[j].down_safe && phis[j].operands.iter().any(|o| needs_insertion(phis, o))
            });
            let Some(j) = bad else { break };
            reset_can_be_avail(&mut self.phis, &self.users, j, &mut self.work);
            self.later();
        }
    }

    /// CanBeAvail: a Φ that is not down-safe with a ⊥ operand cannot be available, nor
    /// can the Φs that depend on one that cannot.
    fn can_be_avail(&mut self) {
        let (phis, users, work) = (&mut self.phis, &self.users, &mut self.work);
        for j in 0..phis.len() {
            if !phis[j].down_safe && phis[j].can_be_avail && phis[j].operands.iter().any(|o| o.def == Def::Bottom) {
                reset_can_be_avail(phis, users, j, work);
            }
            if !phis[j].can_be_avail {
                reset_can_be_avail(phis, users, j, work);
            }
        }
    }

    /// Later: a Φ that can be available is later unless an operand with a real use, or a
    /// Φ that is not later, feeds it (`compute_later`).
    fn later(&mut self) {
        compute_later(&mut self.phis, &self.users, &mut self.work);
    }

    /// Whether Finalize would decide no reload, known after WillBeAvail without its walk:
    /// a reload reads an available definition of its class that dominates it, which is a
    /// will-be-available Φ or an earlier occurrence of the class, so there is none when no
    /// Φ will be available and no occurrence joined another's class. Most expressions of
    /// one occurrence with Φs end here (a Φ fed by the occurrence on one side of a merge
    /// and by nothing on the other is neither down-safe nor can be available).
    fn finds_nothing(&self) -> bool {
        if self.phis.iter().any(PhiOcc::will_be_avail) {
            return false;
        }
        match &self.real[..] {
            [_] => true,
            real => {
                let mut classes: SmallVec<[u32; 8]> = real.iter().map(|r| r.class).collect();
                classes.sort_unstable();
                classes.windows(2).all(|w| w[0] != w[1])
            }
        }
    }

    /// Finalize (`seeds/ssapre.txt`, "Finalize: make so that the FRG is exactly like the
    /// use-def graph for the temporary"), in its two steps.
    fn finalize(&mut self, f: &Function) {
        self.finalize1(f);
        self.finalize2();
    }

    /// Where a definition of the FRG is: its block and position (0 for a Φ).
    fn def_site(&self, d: Def) -> (Block, u32) {
        match d {
            Def::Real(i) => (self.e.occs[i].block, self.e.occs[i].pos),
            Def::Phi(j) => (self.phis[j].block, 0),
            Def::Bottom | Def::Inserted(_) => unreachable!("no site"),
        }
    }

    /// Finalize1: a pre-order walk of the dominator tree (over the expression's
    /// [`sites`](Frg::sites)) deciding reloads (an occurrence whose class has an
    /// available definition dominating it), and insertions at the operands of
    /// will-be-available Φs that need one.
    fn finalize1(&mut self, f: &Function) {
        let occs = &self.e.occs;
        let mut avail_def = std::mem::take(&mut self.avail_def);
        avail_def.resize(self.classes as usize + 1, None);
        for si in 0..self.sites.len() {
            let (b, own) = self.sites[si];
            if !own {
                continue;
            }
            if let Some(j) = self.phi_of(b) {
                if self.phis[j].will_be_avail() {
                    avail_def[self.phis[j].class as usize] = Some(Def::Phi(j));
                }
            }
            for i in self.occs_in(b) {
                let c = self.real[i].class;
                let dominating = avail_def[c as usize].filter(|&d| {
                    let (db, dp) = self.def_site(d);
                    if db == b {
                        dp < occs[i].pos
                    } else {
                        self.an.domtree.dominates(db, b)
                    }
                });
                match dominating {
                    Some(d) => {
                        self.real[i].reload = true;
                        self.real[i].def = Some(d);
                    }
                    None => {
                        avail_def[c as usize] = Some(Def::Real(i));
                    }
                }
            }
            for &s in &self.an.cfg.succs[b] {
                let Some(g) = self.phi_of(s) else { continue };
                if !self.phis[g].will_be_avail() {
                    continue;
                }
                let oi = self.phis[g].operands.iter().position(|o| o.pred == b).expect("pred");
                let op = self.phis[g].operands[oi].clone();
                let def = if needs_insertion(&self.phis, &op) {
                    let versions = translate(f, self.init, &self.phis[g], b).expect("an available Φ has versions");
                    self.insertions.push(Insertion { block: b, versions });
                    Def::Inserted(self.insertions.len() - 1)
                } else {
                    match op.def {
                        Def::Real(y) if self.real[y].reload => self.real[y].def.expect("a reload has a def"),
                        d => d,
                    }
                };
                self.phis[g].operands[oi].def = def;
            }
        }
        self.avail_def = avail_def;
    }

    /// Finalize2: the Φs some reload needs (and the Φs those need), the saves, and the
    /// insertions that feed a needed Φ. Will-be-available Φs no reload needs are the
    /// unneeded Φs: they produce no phi, and their insertions are dropped.
    fn finalize2(&mut self) {
        let mut needed = std::mem::take(&mut self.needed);
        needed.resize(self.phis.len(), false);
        let mut used_insertion = std::mem::take(&mut self.used_insertion);
        used_insertion.resize(self.insertions.len(), false);
        let mut todo: SmallVec<[usize; 8]> = SmallVec::new();
        // Rename left every occurrence unsaved; a save is only ever set here.
        let real = &mut self.real;
        for i in 0..real.len() {
            match real[i].def {
                Some(Def::Real(y)) => real[y].save = true,
                Some(Def::Phi(j)) if !needed[j] => {
                    needed[j] = true;
                    todo.push(j);
                }
                _ => {}
            }
        }
        while let Some(j) = todo.pop() {
            for o in &self.phis[j].operands {
                match o.def {
                    Def::Real(y) => real[y].save = true,
                    Def::Phi(h) if !needed[h] => {
                        needed[h] = true;
                        todo.push(h);
                    }
                    Def::Inserted(n) => used_insertion[n] = true,
                    _ => {}
                }
            }
        }
        self.needed = needed;
        self.used_insertion = used_insertion;
    }

    /// Which needed Φs are fed by an insertion (directly or through another Φ): their
    /// reloads are partial redundancies (the `reloads_partial` statistic).
    fn partial(&self) -> Vec<bool> {
        let phis = &self.phis;
        let mut partial = vec![false; phis.len()];
        loop {
            let mut grew = false;
            for j in 0..phis.len() {
                if self.needed[j] && !partial[j] {
                    let p = phis[j].operands.iter().any(|o| match o.def {
                        Def::Inserted(_) => true,
                        Def::Phi(h) => partial[h],
                        _ => false,
                    });
                    if p {
                        partial[j] = true;
                        grew = true;
                    }
                }
            }
            if !grew {
                break;
            }
        }
        partial
    }

    /// CodeMotion (`seeds/ssapre.txt`, "Code motion: actually update the code using the
    /// FRG"): temporaries for saves, insertions and Φs, then the phis and the reloads.
    /// Every block it changes is marked in `changed` (by block index): the next round's
    /// scan walks only these again ([`super::Kept`]).
    fn code_motion(
        &mut self,
        f: &mut Function,
        round: usize,
        temps: &mut Temporaries,
        stats: &mut Stats,
        changed: &mut Changed,
    ) {
        let partial = self.partial();
        let base = format!("{TEMP_PREFIX}{}", temps.made.len() + 1);
        temps.made.push((base.clone(), round));
        let ty = f.expr_type(self.e.occs[0].node).expect("a candidate yields a value");
        let mut t = Temps { namer: None, input_names: &temps.input_names, base, ty, of: HashMap::default() };
        for i in 0..self.e.occs.len() {
            if self.real[i].save {
                let h = self.save(f, i, &mut t, changed);
                t.of.insert(Def::Real(i), h);
                stats.bump("saves");
            }
        }
        for (n, ins) in self.insertions.iter().enumerate() {
            if !self.used_insertion[n] {
                continue;
            }
            let h = t.fresh(f);
            let value = build(f, self.init, self.k, &ins.versions);
            let stmt = f.add_expr(ExprData::Assign { local: h, value });
            f.blocks[ins.block].stmts.push(stmt);
            changed.blocks[ins.block.index()] = true;
            t.of.insert(Def::Inserted(n), h);
            stats.bump("insertions");
        }
        let trivial = self.phi_temporaries(f, &mut t, stats);
        self.place_phis(f, &t, &trivial, changed);
        self.reload(f, &t, &partial, stats, changed);
        self.count_loop_invariant(stats);
        if self.e.composite {
            stats.bump("composite");
        }
    }

    /// CodeMotion's save of occurrence `i`: the local it is assigned to, or a new
    /// temporary assigned where the occurrence is. The save is a statement of its own
    /// before the occurrence's statement when that cannot change anything: a pure
    /// computation that cannot trap, reading nothing its statement assigns first.
    /// Otherwise it stays in place as `comma(%h = e, %h)`.
    fn save(&self, f: &mut Function, i: usize, t: &mut Temps<'_>, changed: &mut Changed) -> Local {
        let occ = &self.e.occs[i];
        if let Parent::Node(p) = occ.parent {
            if let ExprData::Assign { local, .. } = f.exprs[p] {
                return local;
            }
        }
        let h = t.fresh(f);
        let inner = occ.node;
        let def = f.add_expr(ExprData::Assign { local: h, value: inner });
        let read = f.add_expr(ExprData::Local(h));
        let (b, root) = root_of(f, self.init, inner);
        changed.blocks[b.index()] = true;
        changed.roots.push(root);
        let hoist = !self.trapping && hoistable(f, root, inner);
        let in_term = f.blocks[b].term.expr() == Some(root);
        let with = if hoist { read } else { f.add_expr(ExprData::Comma { first: def, second: read }) };
        match occ.parent {
            Parent::Node(p) => {
                for o in f.exprs[p].operands_mut() {
                    if *o == inner {
                        *o = with;
                    }
                }
            }
            Parent::Stmt(_) if hoist => {}
            Parent::Stmt(b) => {
                let at = f.blocks[b].stmts.iter().position(|&r| r == inner).expect("a statement root");
                f.blocks[b].stmts[at] = with;
            }
            Parent::Term(b) => *f.blocks[b].term.expr_mut().expect("a terminator expression") = with,
        }
        if hoist {
            match occ.parent {
                // A statement that was the occurrence alone becomes the save.
                Parent::Stmt(_) => {
                    let at = f.blocks[b].stmts.iter().position(|&r| r == inner).expect("a statement root");
                    f.blocks[b].stmts[at] = def;
                }
                _ => {
                    let mut at = if in_term {
                        f.blocks[b].stmts.len()
                    } else {
                        f.blocks[b].stmts.iter().position(|&r| r == root).expect("a statement root")
                    };
                    // Before the saves already hoisted out of this statement whose
                    // occurrences it evaluated later: a save of an expression the worklist
                    // holds later is otherwise placed after a save that reads it, when
                    // that save's tree held its later occurrence (loops seed 34562:
                    // `xor(neg(%p2), neg(comma((%v0 = neg(%p2)), %v0)))`).
                    while at > 0 && changed.hoisted.get(&f.blocks[b].stmts[at - 1]).is_some_and(|&pos| pos > occ.pos) {
                        at -= 1;
                    }
                    f.blocks[b].stmts.insert(at, def);
                    changed.hoisted.insert(def, occ.pos);
                }
            }
        }
        h
    }

    /// The value a definition of the FRG resolves to, following trivial Φs in `alias`.
    fn resolve(d: Def, alias: &HashMap<usize, Sym>, t: &Temps<'_>) -> Sym {
        let mut s = match d {
            Def::Phi(h) => Sym::Phi(h),
            d => Sym::Value(t.of[&d]),
        };
        while let Sym::Phi(h) = s {
            match alias.get(&h) {
                Some(&next) => s = next,
                None => break,
            }
        }
        s
    }

    /// CodeMotion's Φ temporaries. A needed Φ whose operands are all one value (or the Φ
    /// itself, around a loop) is that value: it produces no phi, its readers read the
    /// value. The other needed Φs get a temporary each. Returns which Φs are trivial.
    fn phi_temporaries(&self, f: &mut Function, t: &mut Temps<'_>, stats: &mut Stats) -> Vec<bool> {
        let phis = &self.phis;
        let mut alias: HashMap<usize, Sym> = HashMap::default();
        loop {
            let mut changed = false;
            for j in 0..phis.len() {
                if !self.needed[j] || alias.contains_key(&j) {
                    continue;
                }
                let mut values: Vec<Sym> = vec![];
                for o in &phis[j].operands {
                    let v = Self::resolve(o.def, &alias, t);
                    if v != Sym::Phi(j) && !values.contains(&v) {
                        values.push(v);
                    }
                }
                if let [v] = values[..] {
                    alias.insert(j, v);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        for j in 0..phis.len() {
            if self.needed[j] && !alias.contains_key(&j) {
                let h = t.fresh(f);
                t.of.insert(Def::Phi(j), h);
                stats.bump("phis_created");
            } else if self.needed[j] {
                stats.bump("phis_trivial");
            } else if phis[j].will_be_avail() {
                stats.bump("phis_unneeded");
            }
        }
        for j in 0..phis.len() {
            if alias.contains_key(&j) {
                // Follow the chain: a Φ aliased to a Φ that was aliased later.
                let l = match Self::resolve(Def::Phi(j), &alias, t) {
                    Sym::Value(l) => l,
                    Sym::Phi(h) => t.of[&Def::Phi(h)],
                };
                t.of.insert(Def::Phi(j), l);
            }
        }
        (0..phis.len()).map(|j| alias.contains_key(&j)).collect()
    }

    /// CodeMotion's phis: one for each needed Φ that is not trivial.
    fn place_phis(&self, f: &mut Function, t: &Temps<'_>, trivial: &[bool], changed: &mut Changed) {
        for (j, p) in self.phis.iter().enumerate() {
            if !self.needed[j] || trivial[j] {
                continue;
            }
            let args = p.operands.iter().map(|o| (o.pred, t.of[&o.def])).collect();
            f.blocks[p.block].phis.push(crate::ir::Phi { dest: t.of[&Def::Phi(j)], args });
            changed.blocks[p.block.index()] = true;
        }
    }

    /// CodeMotion's reloads: each reloaded occurrence reads its definition's temporary.
    fn reload(&self, f: &mut Function, t: &Temps<'_>, partial: &[bool], stats: &mut Stats, changed: &mut Changed) {
        for (i, occ) in self.e.occs.iter().enumerate() {
            if !self.real[i].reload {
                continue;
            }
            let d = self.real[i].def.expect("a reload has a def");
            let read = ExprData::Local(t.of[&d]);
            // Operands saved by an earlier round keep their definitions.
            let node = occ.node;
            let mut kept: Vec<Expr> = vec![];
            for o in f.exprs[node].operands() {
                if let ExprData::Comma { first, .. } = f.exprs[o] {
                    kept.push(first);
                }
            }
            let mut data = read;
            for &first in kept.iter().rev() {
                let second = f.add_expr(data);
                data = ExprData::Comma { first, second };
            }
            f.exprs[node] = data;
            changed.blocks[occ.block.index()] = true;
            changed.roots.push(scanned_root(self.init, node));
            match d {
                Def::Phi(j) if partial[j] => stats.bump("reloads_partial"),
                _ => stats.bump("reloads_full"),
            }
        }
    }

    /// The `loop_invariant` statistic: insertions on the entry edge of a loop whose
    /// header Φ is reloaded inside the loop.
    fn count_loop_invariant(&self, stats: &mut Stats) {
        let loops = &self.an.loops;
        for (j, p) in self.phis.iter().enumerate() {
            if !self.needed[j] {
                continue;
            }
            let Some(l) = loops.innermost[p.block].filter(|&l| loops.loops[l].header == p.block) else { continue };
            let body = &loops.loops[l].blocks;
            let occs = &self.e.occs;
            let reloaded_inside =
                (0..occs.len()).any(|i| self.real[i].def == Some(Def::Phi(j)) && body.contains(&occs[i].block));
            if reloaded_inside {
                let moved = p
                    .operands
                    .iter()
                    .filter(|o| matches!(o.def, Def::Inserted(_)) && !body.contains(&o.pred))
                    .count();
                stats.add("loop_invariant", moved as u64);
            }
        }
    }
}

/// The Φ's versions as seen at the end of predecessor `p`: a version defined by a phi of
/// the Φ's block becomes that phi's argument for `p`.
fn translate(f: &Function, init: &Initialization, phi: &PhiOcc, p: Block) -> Option<Versions> {
    let versions = phi.versions.as_ref()?;
    Some(versions.iter().map(|&v| translate_one(f, init, phi.block, p, v)).collect())
}

/// Whether [`translate`] gives `versions`.
fn translates_to(f: &Function, init: &Initialization, phi: &PhiOcc, p: Block, versions: &[Val]) -> bool {
    phi.versions.as_ref().is_some_and(|own| seen_as(f, init, phi.block, own, p, versions))
}

/// Whether a Φ at block `at` of versions `own`, as seen at the end of its predecessor
/// `p`, has `versions`.
fn seen_as(f: &Function, init: &Initialization, at: Block, own: &[Val], p: Block, versions: &[Val]) -> bool {
    own.len() == versions.len() && own.iter().zip(versions).all(|(&v, &w)| translate_one(f, init, at, p, v) == w)
}

/// Whether the versions of expression `e`'s Φ at block `at` ([`versions_at`]), as seen
/// at the end of its predecessor `p`, are `versions` ([`seen_as`]): `false` when an
/// operand has no version there. Compared operand by operand, without building the
/// list: `inert`'s walks ask it of every Φ block they meet.
fn versions_seen_as(f: &Function, init: &Initialization, e: &Expression, at: Block, p: Block, versions: &[Val]) -> bool {
    e.key.operands.len() == versions.len()
        && e.key.operands.iter().zip(versions).all(|(op, &w)| operand_version(init, op, at).is_some_and(|v| translate_one(f, init, at, p, v) == w))
}

/// The versions of expression `e`'s Φ at block `b`, as Φ-Insertion forms them: each
/// operand's current version there (a constant is itself); `None` when an operand has
/// none.
fn versions_at(init: &Initialization, e: &Expression, b: Block) -> Option<Versions> {
    // A plain loop: collecting `Option`s into the list went through an adapter per
    // operand, and `inert` asks this of every Φ block its walks meet.
    let mut versions = Versions::new();
    for op in &e.key.operands {
        versions.push(operand_version(init, op, b)?);
    }
    Some(versions)
}

/// The current version of one operand of an expression at block `b` (a constant is
/// itself); `None` when it has none there.
fn operand_version(init: &Initialization, op: &super::KeyOperand, b: Block) -> Option<Val> {
    match *op {
        super::KeyOperand::Const(t, c) => Some(Val::Const(t, c)),
        super::KeyOperand::Orig(o) => init.current_at(b, o).map(Val::Var),
    }
}

/// One version of a Φ at block `at` as seen at the end of its predecessor `p`.
fn translate_one(f: &Function, init: &Initialization, at: Block, p: Block, v: Val) -> Val {
    match v {
        Val::Var(l) => match init.phi_def[l] {
            Some((b, i)) if b == at => {
                let arg = f.blocks[b].phis[i].args.iter().find(|(q, _)| *q == p).expect("phi argument");
                Val::Var(arg.1)
            }
            _ => Val::Var(l),
        },
        c => c,
    }
}

/// The sites of a trapping expression: its own `sites` and the blocks with an effect
/// (`kills`), both in dominator-tree pre-order, merged in one pass (a sort per trapping
/// expression of every block with an effect made a function of many such blocks
/// quadratic with a logarithm on top). Own sites are flagged true.
fn merge_sites(dt: &crate::passes::domtree::DomTree, sites: &[Block], kills: &[Block], out: &mut Vec<(Block, bool)>) {
    let pre = |b: Block| dt.preorder_number(b);
    out.reserve(sites.len() + kills.len());
    let (mut i, mut k) = (0, 0);
    while i < sites.len() || k < kills.len() {
        if k == kills.len() || (i < sites.len() && pre(sites[i]) <= pre(kills[k])) {
            if k < kills.len() && kills[k] == sites[i] {
                k += 1;
            }
            out.push((sites[i], true));
            i += 1;
        } else {
            out.push((kills[k], false));
            k += 1;
        }
    }
}

/// Whether Finalize must insert at this operand of an available Φ.
fn needs_insertion(phis: &[PhiOcc], o: &PhiOpnd) -> bool {
    match o.def {
        Def::Bottom => true,
        Def::Phi(h) => !o.has_real_use && !phis[h].will_be_avail(),
        _ => false,
    }
}

/// DownSafety's reset: the Φs feeding `j` without a real use are not down-safe, nor
/// the Φs feeding those (a worklist: a chain of Φs is as long as the function).
fn reset_down_safe(phis: &mut [PhiOcc], j: usize, work: &mut Vec<usize>) {
    work.clear();
    work.push(j);
    while let Some(j) = work.pop() {
        for oi in 0..phis[j].operands.len() {
            let o = &phis[j].operands[oi];
            match o.def {
                Def::Phi(h) if !o.has_real_use && phis[h].down_safe => {
                    phis[h].down_safe = false;
                    work.push(h);
                }
                _ => {}
            }
        }
    }
}

/// For each Φ, the operands (Φ, operand index) defined by it, in Φ then operand order:
/// the resets below visit the users of a Φ instead of scanning every Φ, so WillBeAvail
/// costs O(Φs + operands) per expression, not O(Φs²) (3,000 diamonds took minutes).
/// Operands only ever change from a Φ to ⊥, so the index stays a superset of the truth
/// and each visit checks the operand again.
/// The lists are an earlier expression's, given back empty: there are at least as many.
fn phi_users(phis: &[PhiOcc], users: &mut Vec<Vec<(usize, usize)>>) {
    if users.len() < phis.len() {
        users.resize_with(phis.len(), Vec::new);
    }
    debug_assert!(users.iter().all(Vec::is_empty), "the lists come back empty");
    for (j, p) in phis.iter().enumerate() {
        for (oi, o) in p.operands.iter().enumerate() {
            if let Def::Phi(g) = o.def {
                users[g].push((j, oi));
            }
        }
    }
}

/// CanBeAvail's reset: `g` cannot be available, so operands it defines without a real
/// use become ⊥, and a Φ that is not down-safe with such an operand cannot be either.
fn reset_can_be_avail(phis: &mut [PhiOcc], users: &[Vec<(usize, usize)>], g: usize, work: &mut Vec<usize>) {
    phis[g].can_be_avail = false;
    work.clear();
    work.push(g);
    while let Some(g) = work.pop() {
        for &(j, oi) in &users[g] {
            let o = &phis[j].operands[oi];
            if o.def == Def::Phi(g) && !o.has_real_use {
                phis[j].operands[oi].def = Def::Bottom;
                if !phis[j].down_safe && phis[j].can_be_avail {
                    phis[j].can_be_avail = false;
                    work.push(j);
                }
            }
        }
    }
}

/// Later: every Φ that can be available starts later; a Φ with an operand that has a
/// real use is not, nor any Φ it feeds.
fn compute_later(phis: &mut [PhiOcc], users: &[Vec<(usize, usize)>], work: &mut Vec<usize>) {
    for p in phis.iter_mut() {
        p.later = p.can_be_avail;
    }
    for j in 0..phis.len() {
        if phis[j].later && phis[j].operands.iter().any(|o| o.def != Def::Bottom && o.has_real_use) {
            reset_later(phis, users, j, work);
        }
    }
}

/// Later's reset: a Φ fed by `g` is not later either.
fn reset_later(phis: &mut [PhiOcc], users: &[Vec<(usize, usize)>], g: usize, work: &mut Vec<usize>) {
    phis[g].later = false;
    work.clear();
    work.push(g);
    while let Some(g) = work.pop() {
        for &(j, _) in &users[g] {
            if phis[j].later && phis[j].operands.iter().any(|o| o.def == Def::Phi(g)) {
                phis[j].later = false;
                work.push(j);
            }
        }
    }
}

/// A new tree computing expression `k` of the worklist on `versions`.
fn build(f: &mut Function, init: &Initialization, k: usize, versions: &[Val]) -> Expr {
    let leaves: Vec<Expr> = versions
        .iter()
        .map(|v| match *v {
            Val::Var(l) => f.add_expr(ExprData::Local(l)),
            Val::Const(ty, value) => f.add_expr(ExprData::Const { ty, value }),
        })
        .collect();
    let data = match init.worklist[k].key.op {
        super::OpKind::Unary(op) => ExprData::Unary { op, arg: leaves[0] },
        super::OpKind::Binary(op) => ExprData::Binary { op, lhs: leaves[0], rhs: leaves[1] },
        super::OpKind::Cmp(op) => ExprData::Cmp { op, lhs: leaves[0], rhs: leaves[1] },
        super::OpKind::Convert(op) => ExprData::Convert { op, arg: leaves[0] },
        super::OpKind::Select => ExprData::Select { cond: leaves[0], if_true: leaves[1], if_false: leaves[2] },
        super::OpKind::Call(helper) => ExprData::Call { helper, args: leaves },
    };
    f.add_expr(data)
}

/// The block and the root of the statement (or terminator expression) holding `n`.
/// The parents are those of the round's start; an expression done earlier in the round
/// may since have hoisted a save holding `n` (its tree, with `n` inside) into a statement
/// of its own before the one the parents name, so the root is checked against the tree.
fn root_of(f: &Function, init: &Initialization, n: Expr) -> (Block, Expr) {
    let mut m = n;
    let b = loop {
        match init.parent[m].expect("every node has a parent") {
            Parent::Node(p) => m = p,
            Parent::Stmt(b) | Parent::Term(b) => break b,
        }
    };
    let mut roots = f.blocks[b].stmts.iter().copied().chain(f.blocks[b].term.expr());
    let holds = |r: Expr| f.tree_holds(r, n);
    if roots.clone().any(|r| r == m) && holds(m) {
        return (b, m);
    }
    let r = roots.find(|&r| holds(r)).expect("the node is in a statement of its block");
    (b, r)
}

/// The root of the tree that held node `n` when the round's scan walked it, up the
/// scan's parents: a reload rewrites its occurrence in place, in that tree still (the
/// occurrences of a round are apart, none inside another's tree, so no save of the round
/// moved it).
fn scanned_root(init: &Initialization, n: Expr) -> Expr {
    let mut m = n;
    while let Some(Parent::Node(p)) = init.parent[m] {
        m = p;
    }
    m
}

/// Whether the computation at `x` may be evaluated just before its statement `root`: its
/// tree holds only computations that cannot trap (no effect, no memory or callframe read,
/// no call but pure ones), and no assignment of the statement comes before it.
fn hoistable(f: &Function, root: Expr, x: Expr) -> bool {
    // Only computations, locals, constants and the saves of earlier rounds may move: an
    // operand `comma(%t = e, %t)` may hold a load, a callframe read or a call, which are
    // ordered against the effects the statement evaluates first.
    let movable = |d: &ExprData| match d {
        ExprData::Local(_) | ExprData::Const { .. } | ExprData::Comma { .. } | ExprData::Assign { .. } => true,
        d => super::op_kind(d).is_some() && !super::is_kill(d),
    };
    let (mut inner, mut all_movable) = (0, true);
    f.visit_postorder(x, &mut |n| {
        inner += 1;
        all_movable &= movable(&f.exprs[n]);
    });
    if !all_movable {
        return false;
    }
    // In evaluation order `x`'s tree is the `inner` nodes ending at `x`: an assignment
    // comes before it when the statement's first assignment does (counted by the walk,
    // not listed: two lists per save were most of it).
    let (mut k, mut at, mut first_assign) = (0, None, None);
    f.visit_postorder(root, &mut |n| {
        if n == x && at.is_none() {
            at = Some(k);
        }
        if first_assign.is_none() && matches!(f.exprs[n], ExprData::Assign { .. }) {
            first_assign = Some(k);
        }
        k += 1;
    });
    let at = at.expect("x is in its statement");
    first_assign.is_none_or(|a| a >= at + 1 - inner)
}
