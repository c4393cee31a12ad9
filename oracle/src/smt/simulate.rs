//! The unbounded check (issue 20): a per-block simulation proof that the function after a
//! pass behaves like the one before it on every run, whatever the iteration counts — the
//! Namjoshi–Zuck witness idea, with the witness *inferred* rather than given, so that it
//! needs nothing from `core` and trusts none of its analyses (no liveness, no dominance).
//!
//! **Block map.** Passes keep block identities and only add blocks on edges (split
//! edges, preheaders, landing blocks). A block of the source corresponds to the target's
//! block of the same index; a target block that the source's layout does not have is
//! *new* and stutters: the target runs through it within the step of the block before
//! it. A source block the target lost, or an entry block that something jumps to, and
//! the check gives up (the bounded check then answers).
//!
//! **Relation.** At the entry of each pair of corresponding blocks (phis applied), a
//! partition of *slots* into classes of equal values ([`Slot`]): every local, callframe
//! variable and heap of both sides, and *definitions*, the value on one side of an
//! expression that assigns a local there, as a statement or inside one (SSAPRE's
//! temporaries, hoisted loads, constants, memopt's `comma((%val = x), %val)`; a phi's
//! destination with its arguments' expressions translated through the block's phis:
//! [`definitions`]), and, where a target's local has a source's local of the same name
//! with the same tree, only the statements' own. The first partition joins the
//! slots a pass is likely to keep equal: locals of related names (`%i` and its SSA
//! versions `%i.3`), the two heaps, each callframe variable on both sides, a callframe
//! variable and the locals the target added (memopt's promoted variables), a callframe
//! variable and the one the source copies into it (`cfwrite(@a, cfread(@b))`, a copy
//! memopt sinks out of loops: [`cf_copies`]), a local and its definitions. It is chosen
//! per block by two forward data flows of the checker's own ([`current_versions`],
//! [`available_definitions`]): a version joins its name only where it may hold the
//! name's current value, a definition its local only where it may be available; every
//! candidate the first partition drops is one split the solver need not find. When that
//! relation fails, a second try adds candidates read off the code ([`aligned_reads`]):
//! the statements of each block aligned, a local the target reads where the source reads
//! a callframe variable or a load ([`Slot::Read`]: a heap cell),
//! or keeps on the way (`comma((%val = x), %val)`, the value a callframe write stores),
//! joins that variable or load (memopt's promoted variables, hoisted and forwarded loads,
//! locals it reuses), and a load or a callframe variable where the target computes the
//! value from its locals and constants alone (`load.i32.s8(A)` where the target has
//! `ashr(shl(%v, 24), 24)`: memopt's forwarded stores and loads of another width;
//! `cfread(@c3)` where it has `123`: a constant it forwarded, [`converted_cell`]) joins
//! the target's tree, so the relation can say "the byte at `A` is the low byte of `%v`"
//! or "`@c3` holds 123" across blocks; and a store the target does where the source does
//! none (memopt's stores sunk out of a loop onto its exits) joins the source's heap as a
//! pending store ([`Slot::Pending`], [`pending_stores`]): the target's heap with that
//! store done, or with the source's bytes at its address, so the relation can say "the
//! source's heap is the target's with `%val` stored at `A`" on the exits and "the heaps
//! differ only at `A`" in the loop; a store of the source that the target removed
//! (memopt's dead stores, overwritten later on every path) joins the target's heap the
//! same way, the source's heap with the target's bytes at its address. When that fails too, a third try starts from the whole-function
//! relation: every pair of versions and every definition joined at every block (the
//! data flows can drop a candidate at a block where the proof needs it, and an arbitrary
//! split can part what a later edge needs together; the two starts fail on different
//! functions). This is signal correspondence (van Eijk), Houdini over partitions:
//! the entry state of a block gives every class one fresh symbol (a definition in a
//! class is assumed equal to it), so the two sides of a block compute the *same terms*
//! wherever the pass left the computation alone, and most of the relation at a successor
//! holds by term identity, without the solver. What remains is one query per edge, asked
//! first by congruence ([`congruent`]: where the two values are the same operators down to
//! a few differing subterms, only those are compared, so that a pass that changed one
//! operand deep inside a 64-bit division does not make the solver bit-blast the
//! division, and two loads from heaps that differ as heaps are the two loads; each goal
//! on its own, so a heap goal or one whose operators differ at the top leaves the others
//! to it), the rest whole, one edge's queries within
//! [`EDGE_CAPS`] query shares over all its rounds, and a goal out of its share given up
//! for the rest of the inference ([`GivenUp`]: the member leaves its class wherever the
//! two slots meet again, rather than take another share on the next block); a model that breaks it splits the successor's classes by the model's values, and the
//! successor is encoded again from its weaker relation. Splitting only weakens the
//! relation, so the other edges into that block need no new look; when no edge breaks
//! its successor's relation, it is inductive. The entry block starts from the real
//! initial state (arguments shared, locals 0), so the relation holds on every run.
//!
//! **Samples.** Before an edge's query, concrete entry states try to split its classes
//! for no solver call ([`sample_split`]): numerals for the symbols its goals and their
//! assumptions mention, a symbol that an assumption equates with a numeral or with a
//! term (a class's symbol and a definition's value, `v = load(A)`) taking that value so
//! that the assumption holds, and last a state where every symbol the assumptions mention
//! is zero (generated code computes zero from zeros); then one model of the step's
//! relation ([`relation_model`]).
//! A state that satisfies the assumptions and tells two members apart splits them as a
//! query's model would; heaps are told apart by their bytes at the addresses their
//! chains of stores write ([`fingerprints`]). Where no sample splits an edge's classes together, classes that
//! depend on different assumptions are sampled apart ([`sample_classes`]). Numerals are no symbols ([`is_symbol`]): a sample keeps them, and
//! two assumptions that share only a numeral are not relevant to each other
//! ([`relevant`]).
//!
//! **Liveness.** In the try over the states' slots alone, a local that is dead at a
//! block's entry (no path from there reads it before assigning it: [`live_locals`], a
//! backward data flow of the checker's own) stays out of every class at that block, and a
//! local dead at every block's entry is no slot at all: its entry value is a fresh symbol,
//! which no relation constrains. That is what `dce` needs ("dead locals are
//! unconstrained"), and it keeps the SSA form's versions that live within one block out
//! of the relation (default seed 11's `ssa-destroy`: 1,022 slots, where all its locals
//! were over the 1,500 of [`MAX_SLOTS`]). The tries with definitions keep a local in its
//! classes at every block (a definition's class can need a local of the other side where
//! it is dead), but a local dead at every block's entry is no slot there either unless a
//! definition or load kept reads it (which the definition's value then needs): SSA form
//! has many versions that live within one block, and counted as slots they left no room
//! under [`MAX_SLOTS`] for the definitions (default seed 14's SSAPRE: 1,589 locals, none of
//! its temporaries' definitions; 969 slots of the states now). It trusts no liveness of
//! `core`: a local wrongly found dead only weakens the relation, so the check can fail,
//! never pass wrongly.
//!
//! **Observables.** With that relation assumed, every block must agree on how it ends
//! (return value, trap kind and code, invalid where the source is valid, or the same next
//! block), on the trace events it appends, and, where the run stops, on the heap and the
//! callframe. A block whose relation no state satisfies (its assumptions contradict each
//! other, [`contradictory`]) is entered related by no run, and agrees; so is a block that
//! no edge a step may take leads to from the entry ([`entered`]: an edge whose condition
//! simplifies to false, such as a branch on a constant, is never taken), whose edges the
//! inference leaves alone and whose observables are not compared. All blocks agree:
//! [`Answer::Proved`](super::Answer::Proved) for every run.
//! A block that does not is no counterexample (its entry state may be unreachable): the
//! caller falls back to the bounded check.
//!
//! **Budget.** The solver's queries draw on the validation's [`Budget`] (each also pays
//! [`super::CHECK_COST`] for its fixed cost, and what Z3 counted since the check before
//! it: simplifying goals, substituting the concrete samples), and so does the encoding: every expression
//! node the steps evaluate costs [`NODE_COST`] resource units, so that the time an answer
//! takes follows its budget whether it goes to Z3 or to building terms. Each try draws on
//! what the ones before it left.

use super::encode::{self, encode_step, eval_value, is_value_tree, State, SymOutcome, Trace};
use super::{fresh_bv, fresh_heap, simplified, Budget, Options, Unknown};
use cranelift_entity::EntityRef;
use std::collections::BTreeSet;
use tandem_core::hash::{HashMap, HashSet};
use tandem_core::ir::{Block, CfVar, Expr, ExprData, Function, Local, Phi, Type};
use z3::ast::{Array, Ast, Bool, Dynamic, BV};
use z3::{SatResult, Sort};

/// Which function a slot belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Side {
    Src,
    Tgt,
}

/// One value of the two states at a block entry that the relation may equate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Slot {
    Local(Side, Local),
    Cf(Side, CfVar),
    Heap(Side),
    /// The value of a value tree of that side's function (of the local's type) in that
    /// side's state: not part of the state, assumed equal to its class at an entry.
    Def(Side, Local, Expr),
    /// The value of a load or another value tree of that side's function (of the given
    /// type) in that side's state: a heap cell, which a pass may now keep in a local
    /// (memopt's LOAD-LOAD, STORE-LOAD and hoisted loads), or an expression a pass now
    /// keeps in a temporary (SSAPRE).
    Read(Side, Type, Expr),
    /// A side's heap with one of that side's stores applied, the address evaluated in
    /// that side's state, for the other side's heap to equal. The target's store (one it
    /// has where the source has none: memopt's sunk stores on a loop's exits): with the
    /// store's value also evaluated there (`true`: "the source's heap is the target's with
    /// the pending store done"), or with the bytes the source's heap holds there
    /// (`false`: "the two heaps agree except at the store's bytes", which holds at a loop
    /// block before the source's store overwrites them). The source's store (one the
    /// target removed: memopt's dead stores, overwritten on every path from there), with
    /// the bytes the target's heap holds there (`false`: the heaps agree except at the
    /// store's bytes until the source overwrites them), or done (`true`: at the store's
    /// block, where the heap may hold its bytes already). Not part of a state; a heap class
    /// may take its value ([`pending_stores`]).
    Pending(Side, Expr, bool),
}

/// What can be equal: bit-vectors of one width, or heaps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Bits(u32),
    Heap,
}

/// A slot's value in a state.
#[derive(Clone)]
enum Val {
    Bv(BV),
    Heap(Array),
}

impl Val {
    fn same_term(&self, o: &Val) -> bool {
        match (self, o) {
            (Val::Bv(a), Val::Bv(b)) => a.ast_eq(b),
            (Val::Heap(a), Val::Heap(b)) => a.ast_eq(b),
            _ => false,
        }
    }

    fn simplify(&self) -> Val {
        match self {
            Val::Bv(a) => Val::Bv(simplified(a)),
            Val::Heap(a) => Val::Heap(simplified(a)),
        }
    }

    fn eq(&self, o: &Val) -> Bool {
        match (self, o) {
            (Val::Bv(a), Val::Bv(b)) => a.eq(b),
            (Val::Heap(a), Val::Heap(b)) => a.eq(b),
            _ => unreachable!("classes hold one kind"),
        }
    }

    fn dynamic(&self) -> Dynamic {
        match self {
            Val::Bv(a) => Dynamic::from_ast(a),
            Val::Heap(a) => Dynamic::from_ast(a),
        }
    }
}

/// Resource units charged per unit of encoding work (a statement of either side, an
/// assumption, four slots of the relation: about what Z3 spends in the same time), so that
/// encoding counts against the budget. It was 20 until the encoding's own work got cheaper
/// (`26b509c`: default seed 902's memopt, the same units of work, 10.2G -> 3.1G
/// instructions, about a third), and at 20 a large function's inference spent most of its
/// budget on its own work (memory seed 951's memopt: 8.2M of its first try's 10M units,
/// its queries 1.8M). At 5, seeds 900-999 and 800-899 of four profiles, every pass: 2,079 ->
/// 2,084 and 2,093 -> 2,097 pairs proved for every run (one lost, default 835's SSAPRE).
pub const NODE_COST: u64 = 5;

/// Work charged for simplifying or evaluating a term under concrete values.
const SIMPLIFY_WORK: usize = 1;

/// An inference query may use `1 / QUERY_SHARE` of the check's budget.
const QUERY_SHARE: u64 = 20;

/// Most slots: beyond this the relation's derived slots (definitions, loads, pending
/// stores, and the locals dead everywhere that they read) are cut (the check may then
/// fail, never pass wrongly). 2,000 proved default seeds 14 and 28 of SSAPRE but lost 11,
/// 14 and 28 of memopt, whose checks ran out of budget with the more candidates. The
/// slots of the states (the live locals, callframe variables and heaps) are never cut:
/// without them no relation between the two states can be said at all (default seed
/// 28's `dce`, with 1,500 live locals, got none of the target's).
const MAX_SLOTS: usize = 1500;

/// Slots past [`MAX_SLOTS`], or past the states' slots where those are more, that the
/// definitions of the target's new locals may take:
/// SSAPRE's temporaries, each what says "`%pre3` holds `zext(%t25)`", where the states'
/// slots alone passed the limit (loops seed 822's SSAPRE: 1,750 slots of the states, and
/// no definition kept, so no temporary was related to its expression). So may the loads
/// and pending stores of [`aligned_reads`] and [`pending_stores`], after them: what says
/// "`and(trunc(%p2), 255)` is the byte at `A`" (ssa seed 1582's memopt: 1,606 slots of the
/// states, every such candidate cut, and a forwarded load's block differed).
const MAX_NEW_PAST: usize = 300;

/// Most definitions per local.
const MAX_DEFS: usize = 4;

/// The names a pair's locals are versions of: the source's own local names when it has no
/// phis (a function as written, whose locals are distinct variables even where one's name
/// extends another's: the generator's `%i2` and `%i2.1`, whose versions after `ssa` are
/// `%i2.3` and `%i2.1.2`), else none (a function in SSA form, whose names mix the
/// variables and their versions).
struct Roots(Option<HashSet<String>>);

impl Roots {
    fn of(src: &Function) -> Roots {
        let hir = src.layout.iter().all(|&b| src.blocks[b].phis.is_empty());
        Roots(hir.then(|| src.locals.values().map(|d| d.name.clone()).collect()))
    }

    /// The name of a local without its version suffix (`%i.3` → `i`): the longest root
    /// that is the name or that the name extends by `.N` suffixes, else (no root fits, or
    /// no roots) everything before the first dot. Default seed 10's `ssa` read `%i2.1.2`
    /// as a version of `%i2`, so `%i2` stopped being current where `%i2.1` was assigned.
    fn base<'a>(&self, name: &'a str) -> &'a str {
        if let Some(roots) = &self.0 {
            let mut at = name;
            loop {
                if roots.contains(at) {
                    return at;
                }
                match at.rsplit_once('.') {
                    Some((head, tail)) if !tail.is_empty() && tail.bytes().all(|c| c.is_ascii_digit()) => at = head,
                    _ => break,
                }
            }
        }
        name.split('.').next().unwrap_or(name)
    }
}

/// Per local, the value trees assigned to it in `f` (by a statement or inside one), at
/// most [`MAX_DEFS`] each. A phi's destination gets its arguments' trees *translated
/// through the phis* of its block (a local the tree reads that is the argument of another
/// phi of the block on the same edge is read as that phi's destination), which adds those
/// trees to `f`'s arena (no statement reads them; they are only evaluated as the
/// relation's definitions). SSAPRE's
/// `%pre25.2 = phi(b20: %pre25, b21: %pre25.1)`, where `%pre25 = add(%pre5, 1)` and
/// `%pre5.2 = phi(b20: %pre5, b21: %pre5.1)`, holds `add(%pre5.2, 1)` at the block's
/// entry on both edges, where `add(%pre5, 1)` is stale when the run came through b21;
/// a loop's `%pre2.4 = phi(b14: %pre2.3, b17: %pre2.2)` with `%pre2.2 = and(%v1.24, 1)`
/// holds `and(%v1.22, 1)` for the `%v1.22 = phi(b14: %v1.21, b17: %v1.24)` beside it
/// (default seeds 10 and 0's `ssapre`: without it, the relation could not say what the
/// temporary holds, and a divisor or a branch condition was free).
fn definitions(f: &mut Function) -> Vec<Vec<Expr>> {
    let mut defs: Vec<Vec<Expr>> = vec![vec![]; f.locals.len()];
    // Values that keep a local on the way (`zext(comma((%t8.16 = trunc(6)), %t8.16))`).
    let mut keeping: Vec<(Local, Expr)> = vec![];
    for &b in &f.layout {
        let data = &f.blocks[b];
        for r in data.stmts.iter().copied().chain(data.term.expr()) {
            // Assignments inside a tree too (memopt's `cfwrite(@c1, comma((%val = x), %val))`).
            f.visit_postorder(r, &mut |s| {
                if let ExprData::Assign { local, value } = &f.exprs[s] {
                    let d = &mut defs[local.index()];
                    if !is_value_tree(f, *value) {
                        keeping.push((*local, *value));
                    } else if d.len() < MAX_DEFS && !d.iter().any(|&x| same_tree(f, x, *value)) {
                        d.push(*value);
                    }
                }
            });
        }
    }
    // Such a value is, once assigned, the tree that reads the kept locals instead
    // ([`read_kept`]), while they hold what they were given: SSAPRE's `%pre9 =
    // zext(comma((%t8.16 = trunc(6)), %t8.16))`, whose phi `%pre9.2` the source reads as
    // `zext(%t8.1)` after the loop (ssa seed 1147's SSAPRE: the relation could not say what
    // `%pre9` held, and the return differed).
    for (local, value) in keeping {
        let read = read_kept(f, value);
        let d = &mut defs[local.index()];
        if read != value && d.len() < MAX_DEFS && is_value_tree(f, read) && !d.iter().any(|&x| same_tree(f, x, read)) {
            d.push(read);
        }
    }
    // A phi of a phi in a later block (or an earlier one, around a loop) needs the other's
    // trees first: a few rounds, in layout order.
    // Per block with phis, its phis and, per incoming edge, each argument's destination.
    type Renames = HashMap<Block, HashMap<Local, Local>>;
    let joins: Vec<(Vec<Phi>, Renames)> = f
        .layout
        .iter()
        .filter(|&&b| !f.blocks[b].phis.is_empty())
        .map(|&b| {
            let phis = f.blocks[b].phis.clone();
            let mut renames = Renames::default();
            for q in &phis {
                for &(pred, a) in &q.args {
                    renames.entry(pred).or_default().insert(a, q.dest);
                }
            }
            (phis, renames)
        })
        .collect();
    for _ in 0..3 {
        let mut added = false;
        for (phis, renames) in &joins {
            for phi in phis {
                for (pred, a) in &phi.args {
                    let map = &renames[pred];
                    for e in defs[a.index()].clone() {
                        if defs[phi.dest.index()].len() >= MAX_DEFS {
                            break;
                        }
                        let t = translated(f, e, map);
                        if !defs[phi.dest.index()].iter().any(|&x| same_tree(f, x, t)) {
                            defs[phi.dest.index()].push(t);
                            added = true;
                        }
                    }
                }
            }
        }
        if !added {
            break;
        }
    }
    defs
}

/// The tree `e` of `f` with each `comma((%m = x), %m)` in it read as `%m` ([`rewritten`]).
fn read_kept(f: &mut Function, e: Expr) -> Expr {
    rewritten(f, e, &|f, n| kept_on_the_way(f, n).map(|(m, _)| ExprData::Local(m)))
}

/// Whether `d`, a definition's tree, is `v` with each `comma((%m = x), %m)` of `v` read as
/// `%m` ([`read_kept`]): the value an assignment of `v` gives its local.
fn reads_kept_of(f: &Function, d: Expr, v: Expr) -> bool {
    if let Some((m, _)) = kept_on_the_way(f, v) {
        return matches!(f.exprs[d], ExprData::Local(l) if l == m);
    }
    let (a, b) = (&f.exprs[d], &f.exprs[v]);
    if std::mem::discriminant(a) != std::mem::discriminant(b) {
        return false;
    }
    let (xs, ys) = (a.operands(), b.operands());
    if xs.len() != ys.len() {
        return false;
    }
    // The same node but for its operands: `v`'s node with `d`'s operands.
    let mut same = b.clone();
    for (o, &x) in same.operands_mut().into_iter().zip(xs.iter()) {
        *o = x;
    }
    same == *a && xs.iter().zip(ys.iter()).all(|(&x, &y)| reads_kept_of(f, x, y))
}

/// The tree `e` of `f` with each node that `replace` gives a node for replaced by that
/// node: `e` itself where there is none, else a copy added to `f`'s arena (its unchanged
/// subtrees shared with `e`'s).
fn rewritten(f: &mut Function, e: Expr, replace: &impl Fn(&Function, Expr) -> Option<ExprData>) -> Expr {
    if let Some(data) = replace(f, e) {
        return f.exprs.push(data);
    }
    let mut data = f.exprs[e].clone();
    let ops: Vec<Expr> = data.operands().iter().copied().collect();
    let new: Vec<Expr> = ops.iter().map(|&o| rewritten(f, o, replace)).collect();
    if new == ops {
        return e;
    }
    for (o, n) in data.operands_mut().into_iter().zip(new) {
        *o = n;
    }
    f.exprs.push(data)
}

/// The tree `e` of `f` with each local that `map` names read as its image ([`rewritten`]).
fn translated(f: &mut Function, e: Expr, map: &HashMap<Local, Local>) -> Expr {
    rewritten(f, e, &|f, n| match f.exprs[n] {
        ExprData::Local(l) => map.get(&l).map(|&d| ExprData::Local(d)),
        _ => None,
    })
}

/// Structural equality of a tree of `f` and one of `g`, locals compared by name.
fn same_tree_across(f: &Function, a: Expr, g: &Function, b: Expr) -> bool {
    trees_match(f, a, g, b, false)
}

/// [`same_tree_across`]; with `held`, whether the target's tree `b` may compute the
/// source's tree `a`: the same structure, except that a target local may stand where the
/// source computes anything (the pass keeps the value in a local: memopt's promoted
/// variables, SSAPRE's temporaries). Only a matching of statements, not a claim the check
/// relies on.
fn trees_match(f: &Function, a: Expr, g: &Function, b: Expr, held: bool) -> bool {
    let (x, y) = (&f.exprs[a], &g.exprs[b]);
    match (x, y) {
        (ExprData::Local(l), ExprData::Local(m)) => return f.locals[*l].name == g.locals[*m].name,
        (_, ExprData::Local(_)) if held => return true,
        _ if std::mem::discriminant(x) != std::mem::discriminant(y) => return false,
        _ => {}
    }
    let (xo, yo) = (x.operands(), y.operands());
    let mut shallow_x = x.clone();
    let mut shallow_y = y.clone();
    for o in shallow_x.operands_mut() {
        *o = Expr::new(0);
    }
    for o in shallow_y.operands_mut() {
        *o = Expr::new(0);
    }
    shallow_x == shallow_y && xo.len() == yo.len() && xo.iter().zip(yo.iter()).all(|(&p, &q)| trees_match(f, p, g, q, held))
}

/// Structural equality of two trees of `f`.
fn same_tree(f: &Function, a: Expr, b: Expr) -> bool {
    same_tree_across(f, a, f, b)
}

/// Each side's [`definitions`].
struct Defs {
    src: Vec<Vec<Expr>>,
    tgt: Vec<Vec<Expr>>,
}

/// The two functions and the slots of their states.
struct Pair<'a> {
    src: &'a Function,
    tgt: &'a Function,
    slots: Vec<Slot>,
    /// Each slot's index in `slots`.
    index: HashMap<Slot, usize>,
    /// The symbols of the entry states, made once per role ([`Pair::symbol`]).
    symbols: std::cell::RefCell<Vec<Option<Val>>>,
    /// Per side (source first), where each part of its state is in `slots`.
    places: [Places; 2],
    /// Per slot, what [`Pair::slot_reads`] found, once found: every block's choice of
    /// definitions asks it of every derived slot, and walking each tree again was a
    /// tenth of the check by term identity.
    reads_of: Vec<std::cell::OnceCell<Option<Vec<usize>>>>,
}

/// Where the slot of each part of one side's state is in [`Pair::slots`], if it has one:
/// [`Pair::state`] asks for every local at every encoding of a block, and looking each
/// up in [`Pair::index`] was a tenth of a small function's validation.
struct Places {
    locals: Vec<Option<usize>>,
    cfs: Vec<Option<usize>>,
    heap: Option<usize>,
}

impl Places {
    fn of(f: &Function, side: Side, index: &HashMap<Slot, usize>) -> Places {
        Places {
            locals: f.locals.keys().map(|l| index.get(&Slot::Local(side, l)).copied()).collect(),
            cfs: f.cfvars.keys().map(|v| index.get(&Slot::Cf(side, v)).copied()).collect(),
            heap: index.get(&Slot::Heap(side)).copied(),
        }
    }
}

/// What a symbol of an entry state stands for ([`Pair::symbol`]).
#[derive(Clone, Copy)]
enum Role {
    /// The value of the class whose first slot is this one.
    Class(usize),
    /// A local of a side's state that no class gives a value.
    Local(Side, Local),
    /// A callframe variable of a side's state that no class gives a value.
    Cf(Side, CfVar),
    /// A side's heap that no class gives a value.
    Heap(Side),
}

impl<'a> Pair<'a> {
    fn new(src: &'a Function, tgt: &'a Function, slots: Vec<Slot>) -> Pair<'a> {
        let index = slots.iter().enumerate().map(|(i, &s)| (s, i)).collect();
        // One per class (by its first slot), per local and callframe variable of each side,
        // and the two heaps: the order [`Pair::symbol`] numbers them in.
        let roles = slots.len() + src.locals.len() + tgt.locals.len() + src.cfvars.len() + tgt.cfvars.len() + 2;
        let places = [Places::of(src, Side::Src, &index), Places::of(tgt, Side::Tgt, &index)];
        let reads_of = vec![std::cell::OnceCell::new(); slots.len()];
        Pair { src, tgt, slots, index, symbols: std::cell::RefCell::new(vec![None; roles]), places, reads_of }
    }

    fn side(&self, s: Side) -> &Function {
        side_of(self.src, self.tgt, s)
    }

    /// The symbol of `role` in every entry state: made the first time it is asked for, the
    /// same after. Each query is about one step, whose entry state has one symbol per
    /// role, so that a role's symbol need not differ between steps; one fresh symbol per
    /// local, callframe variable and class at every encoding of a block was up to 250,000
    /// new Z3 terms per validation, a third of a small validation's time.
    fn symbol(&self, role: Role) -> Val {
        let (n, locals, cfs) = (self.slots.len(), self.src.locals.len() + self.tgt.locals.len(), self.src.cfvars.len() + self.tgt.cfvars.len());
        let base = |side: Side, own: usize| if side == Side::Src { 0 } else { own };
        let (i, kind) = match role {
            Role::Class(r) => (r, self.kind(self.slots[r])),
            Role::Local(side, l) => (n + base(side, self.src.locals.len()) + l.index(), Kind::Bits(self.side(side).locals[l].ty.bits())),
            Role::Cf(side, v) => (n + locals + base(side, self.src.cfvars.len()) + v.index(), Kind::Bits(self.side(side).cfvars[v].ty.bits())),
            Role::Heap(side) => (n + locals + cfs + base(side, 1), Kind::Heap),
        };
        self.symbols.borrow_mut()[i]
            .get_or_insert_with(|| match kind {
                Kind::Bits(w) => Val::Bv(fresh_bv(w)),
                Kind::Heap => Val::Heap(fresh_heap()),
            })
            .clone()
    }

    fn kind(&self, slot: Slot) -> Kind {
        match slot {
            Slot::Local(s, l) | Slot::Def(s, l, _) => Kind::Bits(self.side(s).locals[l].ty.bits()),
            Slot::Read(_, ty, _) => Kind::Bits(ty.bits()),
            Slot::Cf(s, v) => Kind::Bits(self.side(s).cfvars[v].ty.bits()),
            Slot::Heap(_) | Slot::Pending(..) => Kind::Heap,
        }
    }

    /// Whether the slot is derived from the states (a tree or a pending store), not a
    /// part of one.
    fn derived(&self, slot: Slot) -> bool {
        self.tree(slot).is_some() || matches!(slot, Slot::Pending(..))
    }

    /// The slots the value of derived slot `i` reads (for a pending store whose bytes come
    /// from the source's heap, only those of the address and the target's heap: its entry
    /// value takes fresh bytes, [`Pair::entry_value`]); `None` when one is not a slot.
    fn slot_reads(&self, i: usize) -> Option<&[usize]> {
        self.reads_of[i].get_or_init(|| self.reads_of_slot(self.slots[i])).as_deref()
    }

    fn reads_of_slot(&self, slot: Slot) -> Option<Vec<usize>> {
        if let Some((side, _, e)) = self.tree(slot) {
            return self.reads(side, e);
        }
        let Slot::Pending(side, e, exact) = slot else { return None };
        let ExprData::Store { addr, value, .. } = self.side(side).exprs[e] else { return None };
        let mut out = self.reads(side, addr)?;
        if exact {
            out.extend(self.reads(side, value)?);
        }
        out.push(*self.index.get(&Slot::Heap(side))?);
        Some(out)
    }

    /// A pending store's heap (see [`Slot::Pending`]); with `bytes`, those bytes at the
    /// address instead of the store's value or the other side's.
    #[allow(clippy::too_many_arguments)]
    fn pending_heap(&self, side: Side, e: Expr, exact: bool, s: &State, t: &State, bytes: Option<BV>, limit: usize) -> Option<Val> {
        let f = self.side(side);
        let (own, other) = if side == Side::Tgt { (t, s) } else { (s, t) };
        let ExprData::Store { width, addr, value } = f.exprs[e] else { return None };
        let a = eval_value(f, addr, own, Type::I32, limit).ok()?;
        let v = match bytes {
            Some(b) => b,
            None if exact => eval_value(f, value, own, f.expr_type(value)?, limit).ok()?,
            None => encode::heap_bytes(&other.heap, &a, width.bytes()),
        };
        Some(Val::Heap(encode::stored_heap(&own.heap, &a, &v, width)))
    }

    /// The value a class takes from its chosen derived slot at a block's entry: the slot's
    /// value, except that a pending store with the other side's bytes takes fresh bytes
    /// (the other side's heap is what the class defines).
    fn entry_value(&self, slot: Slot, s: &State, t: &State, limit: usize) -> Option<Val> {
        match slot {
            Slot::Pending(side, e, false) => {
                let ExprData::Store { width, .. } = self.side(side).exprs[e] else { return None };
                self.pending_heap(side, e, false, s, t, Some(fresh_bv(8 * width.bytes())), limit)
            }
            _ => self.value(slot, s, t, limit),
        }
    }

    /// A slot that is the value of a tree (a definition or a load): its side, type and
    /// tree; `None` for a slot of the state.
    fn tree(&self, slot: Slot) -> Option<(Side, Type, Expr)> {
        match slot {
            Slot::Def(side, l, e) => Some((side, self.side(side).locals[l].ty, e)),
            Slot::Read(side, ty, e) => Some((side, ty, e)),
            Slot::Local(..) | Slot::Cf(..) | Slot::Heap(_) | Slot::Pending(..) => None,
        }
    }

    /// The slots a value tree of `side` reads (locals, callframe variables, the heap);
    /// `None` when one of them is not a slot.
    fn reads(&self, side: Side, e: Expr) -> Option<Vec<usize>> {
        let f = self.side(side);
        let mut out = vec![];
        let mut ok = true;
        f.visit_postorder(e, &mut |n| {
            let slot = match f.exprs[n] {
                ExprData::Local(l) => Slot::Local(side, l),
                ExprData::CfRead(v) => Slot::Cf(side, v),
                ExprData::Load { .. } => Slot::Heap(side),
                _ => return,
            };
            match self.index.get(&slot) {
                Some(&k) => out.push(k),
                None => ok = false,
            }
        });
        ok.then_some(out)
    }

    /// The entry state of `side` from the classes' values (a slot whose class has no
    /// value yet, or that is no slot, gets a fresh symbol).
    fn state(&self, side: Side, class: &[usize], val: &[Option<Val>], trace: usize) -> State {
        let f = self.side(side);
        let places = &self.places[side as usize];
        let get = |slot: Option<usize>, role: Role| slot.and_then(|i| val[class[i]].clone()).unwrap_or_else(|| self.symbol(role));
        let bv = |v: Val| match v {
            Val::Bv(b) => b,
            Val::Heap(_) => unreachable!("a local or callframe variable's class holds bits"),
        };
        let locals = f.locals.keys().map(|l| bv(get(places.locals[l.index()], Role::Local(side, l)))).collect();
        let callframe = f.cfvars.keys().map(|v| bv(get(places.cfs[v.index()], Role::Cf(side, v)))).collect();
        let heap = match get(places.heap, Role::Heap(side)) {
            Val::Heap(h) => h,
            Val::Bv(_) => unreachable!("a heap's class holds a heap"),
        };
        State { locals, heap, callframe, trace: Trace::empty(trace) }
    }

    /// The slot's value in the state of its side; `None` for a definition too large to
    /// evaluate.
    fn value(&self, slot: Slot, s: &State, t: &State, limit: usize) -> Option<Val> {
        let st = |side| if side == Side::Src { s } else { t };
        Some(match slot {
            Slot::Local(side, l) => Val::Bv(st(side).locals[l.index()].clone()),
            Slot::Cf(side, v) => Val::Bv(st(side).callframe[v.index()].clone()),
            Slot::Heap(side) => Val::Heap(st(side).heap.clone()),
            Slot::Def(..) | Slot::Read(..) => {
                let (side, ty, e) = self.tree(slot).expect("a tree slot");
                Val::Bv(eval_value(self.side(side), e, st(side), ty, limit).ok()?)
            }
            Slot::Pending(side, e, exact) => self.pending_heap(side, e, exact, s, t, None, limit)?,
        })
    }
}

/// Which first partition: chosen per block by the checker's data flows, or the same at
/// every block (the whole-function relation), or per block over the states' slots alone
/// (no definitions: a relation between locals, callframe variables and heaps).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    PerBlock,
    /// [`Scope::PerBlock`], and each constant a promoted variable's phi takes joins the
    /// phi's local at the edge ([`phi_constants`]). A try of its own, before the one
    /// without candidates: default seed 11's memopt is proved so, not with the candidates
    /// read off the code too, and not after the try without candidates (which spends half
    /// the budget failing); where no such phi takes a constant, it is that try.
    PhiConstants,
    Whole,
    StateOnly,
}

/// What the first partition of every try reads and no try changes, computed once per
/// pair: the base names of its locals ([`Roots`]), the checker's own data flows over the
/// two functions (live locals, current versions, the locals the source's promoted
/// callframe variables hold), the [`named_pairs`] and the target's phis of promoted
/// variables.
struct Flows {
    roots: Roots,
    live_src: Vec<Vec<bool>>,
    live_tgt: Vec<Vec<bool>>,
    cur_src: Vec<Vec<bool>>,
    cur_tgt: Vec<Vec<bool>>,
    /// The pairs that hold everywhere, and the pairs of versions.
    named: Vec<(Slot, Slot)>,
    versions: Vec<(Slot, Slot)>,
    /// The target's phis of promoted variables ([`promoted_phis`]).
    promoted: Vec<Phi>,
    /// Per block of the source, the locals its promoted callframe variables may hold at
    /// the entry ([`written_locals`]).
    written: Vec<BTreeSet<(CfVar, Local)>>,
    /// The block each sunk store translated through phis stands for ([`sunk_before_phis`]).
    homes: HashMap<Expr, Block>,
    /// Each side's locals of trivial phis with the local each copies ([`phi_copies`]).
    copies: Vec<(Slot, Slot)>,
}

impl Flows {
    fn of(src: &Function, tgt: &Function, homes: HashMap<Expr, Block>) -> Flows {
        let roots = Roots::of(src);
        let (named, versions) = named_pairs(src, tgt, &roots);
        // The callframe variables the target keeps versions of (memopt's promoted ones).
        let kept: Vec<CfVar> = versions.iter().filter_map(|&(a, _)| if let Slot::Cf(Side::Src, v) = a { Some(v) } else { None }).collect();
        Flows {
            written: written_locals(src, &kept),
            homes,
            copies: phi_copies(src, Side::Src).into_iter().chain(phi_copies(tgt, Side::Tgt)).collect(),
            live_src: live_locals(src),
            live_tgt: live_locals(tgt),
            cur_src: current_versions(src, &roots),
            cur_tgt: current_versions(tgt, &roots),
            named,
            versions,
            promoted: promoted_phis(src, tgt, &roots),
            roots,
        }
    }
}

/// The slots of the two states, and the first partition of each block of the source's
/// layout: the class of each slot, as the index of the first slot of its class. Joined
/// are the [`named_pairs`] (a pair of versions only at the blocks where both hold their
/// name's current value: [`current_versions`]), each definition with its local where it
/// may be available ([`available_definitions`]), the candidates `aligned` read off the
/// code ([`aligned_reads`]), and each promoted callframe variable of the source with the
/// local it was last written from ([`written_locals`]). With [`Scope::Whole`], every
/// pair of versions and every definition is joined at every block (a superset: more
/// candidates, more splits).
fn first_partition(src: &Function, tgt: &Function, defs: &Defs, flows: &Flows, aligned: &[(Slot, Slot)], scope: Scope) -> (Vec<Slot>, Vec<Vec<usize>>) {
    // Only the try over the states' slots leaves dead locals out: with definitions, a
    // definition's class can need a dead local of the other side too (the ssa form of
    // FullRedundancy2 and default seed 36's memopt went from proved to bounded so).
    let live = Live { src: &flows.live_src, tgt: &flows.live_tgt, all: scope != Scope::StateOnly };
    let slots = partition_slots(src, tgt, defs, aligned, scope != Scope::StateOnly, &live, &flows.promoted);
    let mut at: HashMap<Slot, usize> = HashMap::default();
    for (i, &y) in slots.iter().enumerate() {
        at.entry(y).or_insert(i);
    }
    let index = |x: Slot| match x {
        // A load is the slot of the first load of the same tree.
        Slot::Read(..) => slots.iter().position(|&y| same_read(src, tgt, x, y)),
        _ => at.get(&x).copied(),
    };
    let pending = |(a, b): &(Slot, Slot)| matches!(a, Slot::Pending(..)) || matches!(b, Slot::Pending(..));
    let everywhere: Vec<(usize, usize)> = flows.named.iter().chain(&flows.copies).chain(aligned.iter().filter(|x| !pending(x))).filter_map(|&(a, b)| index(a).zip(index(b))).collect();
    // A pending store's candidate only where the two heaps may differ by it
    // ([`pending_scope`]); with [`Scope::Whole`], everywhere.
    let scoped: Vec<(usize, usize, Option<Vec<bool>>)> = aligned
        .iter()
        .filter(|x| pending(x))
        .filter_map(|&(a, b)| {
            let (i, j) = index(a).zip(index(b))?;
            let (side, e, exact) = [a, b].into_iter().find_map(|x| match x {
                Slot::Pending(side, e, exact) => Some((side, e, exact)),
                _ => None,
            })?;
            Some((i, j, (scope != Scope::Whole).then(|| pending_scope(src, tgt, side, e, exact, flows.homes.get(&e).copied()))))
        })
        .collect();
    let versions: Vec<(Slot, Slot, usize, usize)> = flows.versions.iter().filter_map(|&(a, b)| Some((a, b, index(a)?, index(b)?))).collect();
    let holds = |slot: Slot, b: Block| match slot {
        Slot::Local(Side::Src, l) => flows.cur_src[b.index()][l.index()],
        Slot::Local(Side::Tgt, l) => flows.cur_tgt[b.index()][l.index()],
        _ => true,
    };
    // A definition is its local's where it may be available.
    let (avail_src, avail_tgt) = (available_definitions(&slots, Side::Src, src), available_definitions(&slots, Side::Tgt, tgt));
    let defs: Vec<(usize, usize, Side)> = slots
        .iter()
        .enumerate()
        .filter_map(|(i, &slot)| match slot {
            Slot::Def(side, l, _) => Some((i, *at.get(&Slot::Local(side, l))?, side)),
            _ => None,
        })
        .collect();
    let constants = if scope == Scope::PhiConstants { phi_constants(tgt, &slots, &at, &flows.promoted) } else { vec![] };
    let classes = src
        .layout
        .iter()
        .map(|&b| {
            let whole = scope == Scope::Whole;
            let here = versions.iter().filter(|(x, y, _, _)| whole || (holds(*x, b) && holds(*y, b))).map(|&(_, _, i, j)| (i, j));
            let avail = |i: usize, side: Side| whole || if side == Side::Src { avail_src[b.index()][i] } else { avail_tgt[b.index()][i] };
            let defined = defs.iter().filter(|&&(i, _, side)| avail(i, side)).map(|&(i, l, _)| (i, l));
            let constant = constants.iter().filter(|&&(at, _, _)| at == b).map(|&(_, i, d)| (i, d));
            let pending_here = scoped.iter().filter(|(_, _, at)| at.as_ref().is_none_or(|at| at[b.index()])).map(|&(i, j, _)| (i, j));
            let written = flows.written[b.index()].iter().filter_map(|&(v, l)| index(Slot::Cf(Side::Src, v)).zip(index(Slot::Local(Side::Src, l))));
            let joined = union_classes(slots.len(), everywhere.iter().copied().chain(here).chain(defined).chain(constant).chain(pending_here).chain(written));
            // A local dead at this block's entry leaves its class there (after the joins:
            // it may have joined two live members, which stay together).
            let mut first: Vec<Option<usize>> = vec![None; slots.len()];
            (0..slots.len())
                .map(|i| if live.at(slots[i], b) { *first[joined[i]].get_or_insert(i) } else { i })
                .collect()
        })
        .collect();
    (slots, classes)
}

/// Each constant a promoted variable's phi ([`promoted_phis`]) takes on an edge, as (the
/// edge's predecessor, the constant's definition slot, the phi's local's slot): the first
/// partition joins the two at the predecessor's entry. A pass that keeps a value it knows
/// in a local rematerializes the constant where the phi needs it (memopt's `%k = 10` in a
/// loop's latch, for the phi `%c0.3 = phi(b36: %c0.1, b39: %k)` of the promoted `@c0`,
/// after `cfwrite(@c0, 10)` in the body: default seed 11). The relation at the latch's
/// entry must then say "`@c0` holds 10", which only a class with a slot that is 10 can say,
/// and the definition is that slot; its local is assigned in the latch, so it is not
/// available at its entry, and nothing else joins it with the variable. The phi's local is
/// (the promoted variable's version, joined with it); where it no longer holds the variable
/// there, a model parts them and the constant stays with the variable. Only a candidate.
fn phi_constants(tgt: &Function, slots: &[Slot], at: &HashMap<Slot, usize>, promoted: &[Phi]) -> Vec<(Block, usize, usize)> {
    let mut constants: HashMap<Local, Vec<usize>> = HashMap::default();
    for (i, &slot) in slots.iter().enumerate() {
        if let Slot::Def(Side::Tgt, l, e) = slot {
            if is_constant_tree(tgt, e) {
                constants.entry(l).or_default().push(i);
            }
        }
    }
    let mut out = vec![];
    for phi in promoted {
        let Some(&d) = at.get(&Slot::Local(Side::Tgt, phi.dest)) else { continue };
        for (pred, a) in &phi.args {
            out.extend(constants.get(a).into_iter().flatten().map(|&i| (*pred, i, d)));
        }
    }
    out
}

/// The function of `side`.
fn side_of<'a>(src: &'a Function, tgt: &'a Function, side: Side) -> &'a Function {
    match side {
        Side::Src => src,
        Side::Tgt => tgt,
    }
}

/// Whether the tree at `e` is made of constants and operators alone.
fn is_constant_tree(f: &Function, e: Expr) -> bool {
    let mut constant = true;
    f.visit_postorder(e, &mut |n| {
        constant &= matches!(f.exprs[n], ExprData::Const { .. } | ExprData::Unary { .. } | ExprData::Binary { .. } | ExprData::Cmp { .. } | ExprData::Convert { .. })
    });
    constant
}

/// The phis of the target whose local is a version of a callframe variable that the
/// source has no local of that name for (a variable memopt promoted: `%c0.3` of `@c0`).
fn promoted_phis(src: &Function, tgt: &Function, roots: &Roots) -> Vec<Phi> {
    let src_names: HashSet<&str> = src.locals.values().map(|d| d.name.as_str()).collect();
    let cfvars: HashSet<&str> = src.cfvars.values().map(|d| d.name.as_str()).collect();
    let promoted = |q: &&Phi| {
        let name = tgt.locals[q.dest].name.as_str();
        !src_names.contains(name) && cfvars.contains(roots.base(name))
    };
    tgt.layout.iter().flat_map(|&b| tgt.blocks[b].phis.iter()).filter(promoted).cloned().collect()
}

/// The classes of `n` slots that `pairs` join: each slot's class as the index of its
/// class's first slot.
fn union_classes(n: usize, pairs: impl Iterator<Item = (usize, usize)>) -> Vec<usize> {
    let mut uf: Vec<usize> = (0..n).collect();
    fn find(uf: &mut [usize], mut i: usize) -> usize {
        while uf[i] != i {
            uf[i] = uf[uf[i]];
            i = uf[i];
        }
        i
    }
    for (a, b) in pairs {
        let (x, y) = (find(&mut uf, a), find(&mut uf, b));
        uf[x.max(y)] = x.min(y);
    }
    (0..n).map(|i| find(&mut uf, i)).collect()
}

/// Per block of `f` (by index) and slot of `slots`, whether the slot is a definition of
/// `side` that may be available at the block's entry (its phis applied): on some path
/// there, its local was last assigned that tree (or the phi's argument was), and nothing
/// the tree reads (a local, a callframe variable, the heap) was written since. A forward
/// data flow computed here; it only chooses candidates.
fn available_definitions(slots: &[Slot], side: Side, f: &Function) -> Vec<Vec<bool>> {
    let n = slots.len();
    // Per definition slot: its local, the locals it reads, whether it reads the callframe
    // or the heap.
    struct Def {
        slot: usize,
        local: Local,
        tree: Expr,
        reads: Vec<Local>,
        cf: bool,
        heap: bool,
    }
    let mut defs = vec![];
    for (i, &slot) in slots.iter().enumerate() {
        if let Slot::Def(s, local, tree) = slot {
            if s != side {
                continue;
            }
            let mut d = Def { slot: i, local, tree, reads: vec![], cf: false, heap: false };
            f.visit_postorder(tree, &mut |e| match &f.exprs[e] {
                ExprData::Local(l) => d.reads.push(*l),
                ExprData::CfRead(_) => d.cf = true,
                ExprData::Load { .. } => d.heap = true,
                ExprData::Call { helper, .. } => d.heap |= helper.effects().reads_heap,
                _ => {}
            });
            defs.push(d);
        }
    }
    // Per local, the definitions an assignment to it ends (those of the local and those
    // that read it), and those it may start: indexed once, since every assignment of the
    // flow asks (a walk over every definition per assignment was a twentieth of a small
    // function's validation).
    let mut ended: Vec<Vec<usize>> = vec![vec![]; f.locals.len()];
    for (k, d) in defs.iter().enumerate() {
        ended[d.local.index()].push(k);
        for l in &d.reads {
            if ended[l.index()].last() != Some(&k) {
                ended[l.index()].push(k);
            }
        }
    }
    let assign = |set: &mut Vec<bool>, l: Local, value: Option<Expr>| {
        for &k in &ended[l.index()] {
            set[defs[k].slot] = false;
        }
        if let Some(v) = value {
            // A tree that reads its own local is not its value after the assignment.
            for d in ended[l.index()].iter().map(|&k| &defs[k]).filter(|d| d.local == l && !d.reads.contains(&l) && (same_tree(f, d.tree, v) || reads_kept_of(f, d.tree, v))) {
                set[d.slot] = true;
            }
        }
    };
    forward_flow(
        f,
        |_| vec![false; n],
        |set, other| union_flags(set, other),
        |phi, set| {
            assign(set, phi.dest, None);
            for d in ended[phi.dest.index()].iter().map(|&k| &defs[k]).filter(|d| d.local == phi.dest && !d.reads.contains(&phi.dest)) {
                set[d.slot] = true;
            }
        },
        |e, set| match &f.exprs[e] {
            ExprData::Assign { local, value } => assign(set, *local, Some(*value)),
            ExprData::CfWrite { .. } => defs.iter().filter(|d| d.cf).for_each(|d| set[d.slot] = false),
            ExprData::Store { .. } => defs.iter().filter(|d| d.heap).for_each(|d| set[d.slot] = false),
            ExprData::Call { helper, .. } => {
                let fx = helper.effects();
                defs.iter().filter(|d| (d.cf && fx.writes_callframe) || (d.heap && fx.writes_heap)).for_each(|d| set[d.slot] = false);
            }
            _ => {}
        },
    )
}

/// A forward "may" data flow over `f`, computed here to a fixpoint (trusting no analysis
/// of `core`): a block's state at its entry is `start(b)` joined (`join`) with the exit
/// state of each predecessor so far, then each phi's `enter`; its exit state is that
/// after `node` on every node of its statements and terminator, in post-order. Returns
/// the entry states by block index (`start(b)` for a block outside the layout).
fn forward_flow<S: Clone + PartialEq>(f: &Function, start: impl Fn(Block) -> S, join: impl Fn(&mut S, &S), enter: impl Fn(&Phi, &mut S), node: impl Fn(Expr, &mut S)) -> Vec<S> {
    let mut entry: Vec<S> = f.blocks.keys().map(&start).collect();
    let mut exit: Vec<Option<S>> = vec![None; f.blocks.len()];
    let preds = f.predecessors();
    let mut changed = true;
    while changed {
        changed = false;
        for &b in &f.layout {
            let mut set = start(b);
            for p in &preds[b] {
                if let Some(o) = &exit[p.index()] {
                    join(&mut set, o);
                }
            }
            for phi in &f.blocks[b].phis {
                enter(phi, &mut set);
            }
            entry[b.index()] = set.clone();
            let data = &f.blocks[b];
            for r in data.stmts.iter().copied().chain(data.term.expr()) {
                f.visit_postorder(r, &mut |e| node(e, &mut set));
            }
            if exit[b.index()].as_ref() != Some(&set) {
                exit[b.index()] = Some(set);
                changed = true;
            }
        }
    }
    entry
}

/// The union of two sets of flags, into `set`.
fn union_flags(set: &mut [bool], other: &[bool]) {
    for (x, &y) in set.iter_mut().zip(other) {
        *x |= y;
    }
}

/// Per block of `f` (by index) and local, whether the local may hold the current value of
/// its base name (`%i.3` of `i`) at the block's entry, its phis applied: on some path
/// there, it was the last of its name's versions assigned, or none was (every local starts
/// at 0). A forward data flow over the CFG, computed here, trusting no analysis of `core`;
/// it only chooses candidates, which the inference keeps only where inductive.
fn current_versions(f: &Function, roots: &Roots) -> Vec<Vec<bool>> {
    let n = f.locals.len();
    let mut names: HashMap<&str, usize> = HashMap::default();
    let group: Vec<usize> = f.locals.values().map(|d| { let k = names.len(); *names.entry(roots.base(&d.name)).or_insert(k) }).collect();
    let mut members: Vec<Vec<usize>> = vec![vec![]; names.len()];
    for (l, &g) in group.iter().enumerate() {
        members[g].push(l);
    }
    let assign = |set: &mut Vec<bool>, l: usize| {
        for &m in &members[group[l]] {
            set[m] = false;
        }
        set[l] = true;
    };
    forward_flow(
        f,
        |b| vec![b == f.entry(); n],
        |set, other| union_flags(set, other),
        |phi, set| assign(set, phi.dest.index()),
        |e, set| {
            if let ExprData::Assign { local, .. } = f.exprs[e] {
                assign(set, local.index());
            }
        },
    )
}

/// The locals of `f`'s trivial phis, each with the local it copies: a phi whose
/// arguments, other than its own local and the locals of phis found to copy the same
/// local, are one local (`%c1.9 = phi(b25: %c1.10, b28: %c1.9)` and `%c1.10 = phi(b23:
/// %c1.5, b26: %c1.9)` both copy `%c1.5`: a variable a loop does not change). Wherever
/// the phi's local is assigned, it holds that local's value; SSAPRE computes a loop's
/// `xor(%c1.10, k)` before the loop as `xor(%c1.5, k)` (loops seed 1131's SSAPRE: every
/// try failed on the check of that value in the loop). Only candidates, joined at every
/// block: before the phi's first assignment the two differ, and the inference splits them.
fn phi_copies(f: &Function, side: Side) -> Vec<(Slot, Slot)> {
    let phis: Vec<&Phi> = f.layout.iter().flat_map(|&b| f.blocks[b].phis.iter()).collect();
    let mut copy: HashMap<Local, Local> = HashMap::default();
    let root = |copy: &HashMap<Local, Local>, mut l: Local| {
        while let Some(&m) = copy.get(&l) {
            l = m;
        }
        l
    };
    let mut changed = true;
    while changed {
        changed = false;
        for q in &phis {
            if copy.contains_key(&q.dest) {
                continue;
            }
            let me = root(&copy, q.dest);
            let mut others = q.args.iter().map(|&(_, a)| root(&copy, a)).filter(|&a| a != me);
            if let Some(v) = others.next() {
                if others.all(|a| a == v) {
                    copy.insert(q.dest, v);
                    changed = true;
                }
            }
        }
    }
    copy.keys().map(|&d| (Slot::Local(side, d), Slot::Local(side, root(&copy, d)))).collect()
}

/// Per block of `f` (by index), the pairs (a callframe variable of `vars`, a local) such
/// that on some path to the block's entry (its phis applied) the variable's last write
/// was `cfwrite(@v, %x)` and `%x` was not assigned since. A forward data flow computed
/// here; it only chooses candidates, which the inference keeps only where inductive.
///
/// The first partition joins each pair: where memopt promotes a variable written in a
/// loop, the target keeps the value in the local the source wrote (the argument of the
/// promoted variable's phi on the back edge), and the relation between the source's
/// write and the latch must say that the source's `@c0` holds `%t18.1` while the
/// target's version `%c0.3` still holds the value from before (memory seed 1168's
/// memopt: `cfwrite(@c0, %t18.1)` in a loop body, every try failed on the trap after the
/// loop, the source's `@c0` in a class of its own from the body on).
fn written_locals(f: &Function, vars: &[CfVar]) -> Vec<BTreeSet<(CfVar, Local)>> {
    if vars.is_empty() {
        return vec![BTreeSet::new(); f.blocks.len()];
    }
    let kill_local = |set: &mut BTreeSet<(CfVar, Local)>, l: Local| set.retain(|&(_, x)| x != l);
    forward_flow(
        f,
        |_| BTreeSet::new(),
        |set, other| set.extend(other.iter().copied()),
        |phi, set| kill_local(set, phi.dest),
        |e, set| match f.exprs[e] {
            ExprData::Assign { local, .. } => kill_local(set, local),
            ExprData::CfWrite { var, value } => {
                set.retain(|&(w, _)| w != var);
                if let ExprData::Local(x) = f.exprs[value] {
                    if vars.contains(&var) {
                        set.insert((var, x));
                    }
                }
            }
            ExprData::Call { helper, .. } if helper.effects().writes_callframe => set.clear(),
            _ => {}
        },
    )
}

/// Which locals of the two functions are live at each block's entry ([`live_locals`]).
struct Live<'a> {
    src: &'a [Vec<bool>],
    tgt: &'a [Vec<bool>],
    /// Every local counts as live (the tries with definitions).
    all: bool,
}

impl Live<'_> {
    /// Whether `slot` may be read after the entry of block `b` on its own side's code: a
    /// local only where it is live, every other slot everywhere.
    fn read_at(&self, slot: Slot, b: Block) -> bool {
        match slot {
            Slot::Local(Side::Src, l) => self.src[b.index()][l.index()],
            Slot::Local(Side::Tgt, l) => self.tgt[b.index()][l.index()],
            _ => true,
        }
    }

    /// Whether `slot` stays in its class at the entry of block `b`: everywhere in the tries
    /// with definitions, else where it may be read ([`Live::read_at`]).
    fn at(&self, slot: Slot, b: Block) -> bool {
        self.all || self.read_at(slot, b)
    }
}

/// Per block of `f` (by index) and local, whether the local is live at the block's entry,
/// its phis applied: on some path from there it may be read (by a statement, a
/// terminator, or a phi on the way out) before a statement assigns it. A backward data
/// flow computed here, trusting no analysis of `core` (a wrong `tandem_core::Liveness`
/// must not make a proof). It only chooses what the relation leaves out: a local dead at
/// an entry gets a fresh symbol there, an assumption weaker than any class, so a
/// mistake here can make the check fail, never pass wrongly. Over-approximate: an
/// assignment inside a tree (`comma((%m = x), %m)`) kills nothing.
fn live_locals(f: &Function) -> Vec<Vec<bool>> {
    let n = f.locals.len();
    let blocks = f.blocks.len();
    // Sets of locals as bits, 64 to a word.
    let words = n.div_ceil(64);
    let bit = |l: usize| (l / 64, 1u64 << (l % 64));
    // Per block: the locals read before a statement of the block assigns them, and the
    // locals its statements assign.
    let mut used = vec![vec![0u64; words]; blocks];
    let mut killed = vec![vec![0u64; words]; blocks];
    let mut phi_dest = vec![vec![0u64; words]; blocks];
    for &b in &f.layout {
        let data = &f.blocks[b];
        let (u, k) = (&mut used[b.index()], &mut killed[b.index()]);
        for r in data.stmts.iter().copied().chain(data.term.expr()) {
            f.visit_postorder(r, &mut |e| {
                if let ExprData::Local(l) = f.exprs[e] {
                    let (w, m) = bit(l.index());
                    u[w] |= m & !k[w];
                }
            });
            if let ExprData::Assign { local, .. } = f.exprs[r] {
                let (w, m) = bit(local.index());
                k[w] |= m;
            }
        }
        for phi in &data.phis {
            let (w, m) = bit(phi.dest.index());
            phi_dest[b.index()][w] |= m;
        }
    }
    let mut live = vec![vec![0u64; words]; blocks];
    let mut out = vec![0u64; words];
    let mut changed = true;
    while changed {
        changed = false;
        for &b in f.layout.iter().rev() {
            out.fill(0);
            for c in f.blocks[b].term.successors() {
                for (w, x) in out.iter_mut().enumerate() {
                    *x |= live[c.index()][w] & !phi_dest[c.index()][w];
                }
                for phi in &f.blocks[c].phis {
                    for (_, a) in phi.args.iter().filter(|(from, _)| *from == b) {
                        let (w, m) = bit(a.index());
                        out[w] |= m;
                    }
                }
            }
            let (u, k) = (&used[b.index()], &killed[b.index()]);
            for w in 0..words {
                let set = u[w] | (out[w] & !k[w]);
                if set != live[b.index()][w] {
                    live[b.index()][w] = set;
                    changed = true;
                }
            }
        }
    }
    live.iter().map(|set| (0..n).map(|l| set[l / 64] >> (l % 64) & 1 == 1).collect()).collect()
}

/// The slots of the two states (heaps, callframe variables, locals), with `with_defs` the
/// definitions of the target's locals (a pass's temporaries, promoted variables,
/// versions, and locals it now assigns earlier) and of the source's locals the target
/// removed (by name), and the loads of `aligned` (one per tree), cut at [`MAX_SLOTS`]:
/// where they are too many, the candidates a pass is likeliest to need stay, in this order
/// ([`Priority`]): definitions of the target's new locals (SSAPRE's temporaries, memopt's
/// promoted variables), of the source's locals the target removed, the loads and pending
/// stores of `aligned`, the target's trees that the source's local of the same name lacks,
/// and last the statements' own trees that it has too, of which a function has as many
/// as statements. (In the order of the locals, the temporaries a pass adds come last and
/// were the ones cut: default seed 17's SSAPRE, of 1,500 slots.) A local dead at every
/// block's entry but the first is a slot only where a derived slot kept reads it, and
/// counts then.
fn partition_slots(src: &Function, tgt: &Function, defs: &Defs, aligned: &[(Slot, Slot)], with_defs: bool, live: &Live, promoted: &[Phi]) -> Vec<Slot> {
    let mut slots = vec![Slot::Heap(Side::Src), Slot::Heap(Side::Tgt)];
    slots.extend(src.cfvars.keys().map(|v| Slot::Cf(Side::Src, v)));
    slots.extend(tgt.cfvars.keys().map(|v| Slot::Cf(Side::Tgt, v)));
    // A local dead at the entry of every block but the first is no slot: its value there is
    // never read, so no relation needs it (it gets a fresh symbol); unless a derived slot
    // kept below reads it (added then): a definition's value at an entry is its tree over
    // the entry state, so a local it reads carries the value even where the code reads it
    // no more (SSAPRE's `%t` holding `add(%a, %b)` where the target reads only `%t`).
    let kept = |side: Side, l: Local| src.layout.iter().any(|&b| b != src.entry() && live.read_at(Slot::Local(side, l), b));
    slots.extend(src.locals.keys().filter(|&l| kept(Side::Src, l)).map(|l| Slot::Local(Side::Src, l)));
    slots.extend(tgt.locals.keys().filter(|&l| kept(Side::Tgt, l)).map(|l| Slot::Local(Side::Tgt, l)));
    let tgt_names: HashSet<&str> = tgt.locals.values().map(|d| d.name.as_str()).collect();
    let stated: HashSet<Expr> = tgt.layout.iter().flat_map(|&b| tgt.blocks[b].stmts.iter()).filter_map(|&x| match tgt.exprs[x] {
        ExprData::Assign { value, .. } => Some(value),
        _ => None,
    }).collect();
    let src_local: HashMap<&str, Local> = src.locals.iter().map(|(l, d)| (d.name.as_str(), l)).collect();
    let mut derived: Vec<(Priority, Slot)> = vec![];
    let phi_args: HashSet<Local> = promoted.iter().flat_map(|q| q.args.iter().map(|&(_, a)| a)).collect();
    for (side, f, own, other) in [(Side::Src, src, &defs.src, Some(&tgt_names)), (Side::Tgt, tgt, &defs.tgt, None)].into_iter().filter(|_| with_defs) {
        for (l, trees) in own.iter().enumerate() {
            let name = f.locals[Local::new(l)].name.as_str();
            if other.is_some_and(|o| o.contains(name)) {
                continue;
            }
            // A tree assigned inside a statement, or translated through phis, that the
            // source's local of the same name has too: a candidate the pass did not
            // make, of which a function has many (each a goal on every edge: default
            // seed 12's memopt spent its budget on them). A statement's own tree stays,
            // since a phi of a local the pass added may need it (`%pre5.6 = phi(.., b34:
            // %v0.18)`, where `%v0.18 = sext(6)`).
            let theirs = if side == Side::Tgt { src_local.get(name).map(|&m| &defs.src[m.index()][..]) } else { None };
            let priority = match (side, theirs) {
                (Side::Tgt, None) => Priority::New,
                (Side::Src, _) => Priority::Removed,
                (Side::Tgt, Some(_)) => Priority::Shared,
            };
            let phi_arg = side == Side::Tgt && phi_args.contains(&Local::new(l));
            for &e in trees {
                let theirs_too = theirs.is_some_and(|t| t.iter().any(|&x| same_tree_across(src, x, tgt, e)));
                if !stated.contains(&e) && theirs_too {
                    continue;
                }
                let priority = match () {
                    _ if (phi_arg || priority == Priority::New) && is_constant_tree(f, e) => Priority::Constant,
                    _ if theirs_too => Priority::Unchanged,
                    _ => priority,
                };
                derived.push((priority, Slot::Def(side, Local::new(l), e)));
            }
        }
    }
    for &(a, b) in aligned {
        for x in [a, b] {
            let new = match x {
                Slot::Read(..) => !slots.iter().chain(derived.iter().map(|(_, y)| y)).any(|&y| same_read(src, tgt, x, y)),
                Slot::Pending(..) => !derived.iter().any(|&(_, y)| y == x),
                _ => false,
            };
            if new {
                derived.push((Priority::Aligned, x));
            }
        }
    }
    // Within [`MAX_SLOTS`], each derived slot with the locals its tree reads that are no
    // slot yet, in the order of [`Priority`]; the constant definitions are kept past the
    // limit: few, and what a promoted variable of a large function needs to say it holds
    // a constant ([`phi_constants`]), or a temporary that it holds a constant address. The
    // slots kept stay in their own order, which the
    // classes' first members follow.
    let mut order: Vec<usize> = (0..derived.len()).collect();
    order.sort_by_key(|&i| derived[i].0);
    let states = slots.len();
    let mut present: HashSet<Slot> = slots.iter().copied().collect();
    let (mut carried, mut kept_derived) = (vec![], vec![false; derived.len()]);
    let mut count = 0;
    for i in order {
        let (priority, x) = derived[i];
        let (side, e) = match x {
            Slot::Def(side, _, e) | Slot::Read(side, _, e) | Slot::Pending(side, e, _) => (side, e),
            _ => unreachable!("derived slots are trees"),
        };
        let f = if side == Side::Src { src } else { tgt };
        let mut reads = vec![];
        f.visit_postorder(e, &mut |n| {
            if let ExprData::Local(l) = f.exprs[n] {
                let y = Slot::Local(side, l);
                if !present.contains(&y) && !reads.contains(&y) {
                    reads.push(y);
                }
            }
        });
        let cap = match priority {
            Priority::Constant => usize::MAX,
            Priority::New | Priority::Aligned => MAX_SLOTS.max(states) + MAX_NEW_PAST,
            _ => MAX_SLOTS,
        };
        if slots.len() + carried.len() + count + 1 + reads.len() > cap {
            continue;
        }
        present.extend(reads.iter().copied());
        carried.extend(reads);
        kept_derived[i] = true;
        count += 1;
    }
    slots.extend(carried);
    slots.extend(derived.into_iter().zip(kept_derived).filter(|&(_, k)| k).map(|((_, x), _)| x));
    slots
}

/// Which derived slots [`partition_slots`] keeps first when they are too many.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Priority {
    /// A definition whose tree is a constant, of a local a promoted variable's phi takes
    /// ([`phi_constants`]) or of a target local the source has no local of that name for
    /// (SSAPRE's temporaries of constant addresses, `%pre19.1 = add(1050896, 0)`: in loops
    /// seed 822's function of 1,750 slots, where every other derived slot was cut, the
    /// relation could not say the store's address `%pre19.10` was 1050896).
    Constant,
    /// A definition of a target local the source has no local of that name for.
    New,
    /// A definition of a source local the target removed.
    Removed,
    /// A load or pending store of [`aligned_reads`] and [`pending_stores`].
    Aligned,
    /// A definition of a target local the source has too, by a tree the source's has not
    /// (SSAPRE's statement that now reads a temporary).
    Shared,
    /// A statement's own tree that the source's local of the same name has too.
    Unchanged,
}

/// Whether `x` and `y` are [`Slot::Read`]s of the same side, type and tree (one slot).
fn same_read(src: &Function, tgt: &Function, x: Slot, y: Slot) -> bool {
    match (x, y) {
        (Slot::Read(side, ty, e), Slot::Read(side2, ty2, e2)) if side == side2 && ty == ty2 => {
            same_tree(if side == Side::Src { src } else { tgt }, e, e2)
        }
        _ => false,
    }
}

/// The pairs of slots a pass is likely to keep equal, by name: the two heaps, each
/// callframe variable on both sides, a local of both sides and its namesake, a local the
/// target added (or renamed) and the source's locals of the same base name (`%i` and
/// `%i.3`), and one the target added and the callframe variable it is named after
/// (memopt promotes them into locals named after the variable).
///
/// Returns the pairs that hold everywhere (namesakes) and the pairs of versions, which
/// the first partition joins only where both hold their name's current value.
fn named_pairs(src: &Function, tgt: &Function, roots: &Roots) -> (Vec<(Slot, Slot)>, Vec<(Slot, Slot)>) {
    let mut out = vec![(Slot::Heap(Side::Src), Slot::Heap(Side::Tgt))];
    let mut versions = vec![];
    out.extend(src.cfvars.keys().map(|v| (Slot::Cf(Side::Src, v), Slot::Cf(Side::Tgt, v))));
    let names = |f: &Function| -> HashSet<String> { f.locals.values().map(|d| d.name.clone()).collect() };
    let (src_names, tgt_names) = (names(src), names(tgt));
    for (t, td) in tgt.locals.iter() {
        let same = src.locals.iter().find(|(_, sd)| sd.name == td.name && sd.ty == td.ty).map(|(s, _)| s);
        let base = roots.base(&td.name);
        for (s, sd) in src.locals.iter() {
            let related = match same {
                Some(x) => x == s,
                None => sd.ty == td.ty && roots.base(&sd.name) == base && !tgt_names.contains(&sd.name),
            };
            if related {
                let pair = (Slot::Local(Side::Src, s), Slot::Local(Side::Tgt, t));
                if same.is_some() { out.push(pair) } else { versions.push(pair) }
            }
        }
        if !src_names.contains(&td.name) {
            for (v, vd) in src.cfvars.iter() {
                if vd.ty == td.ty && base == vd.name {
                    versions.push((Slot::Cf(Side::Src, v), Slot::Local(Side::Tgt, t)));
                }
            }
        }
    }
    versions.extend(cf_copies(src, tgt));
    (out, versions)
}

/// A source's callframe variable and the one it copies (`cfwrite(@a, cfread(@b))`) in a
/// block where the target writes no `@a`, each pair once: a candidate. Where memopt sinks
/// the copy out of a loop, it writes the promoted value of `@b` (`cfwrite(@c0, %c3)` on
/// the exit), and the relation on the way must say that the source's `@a` already holds
/// `@b`'s value (the class of `@b`, its target's twin and `%c3`) while the target's `@a`
/// does not yet: default seed 637's memopt failed every try on the trace event its
/// `cf_trace` records after the sunk copy. Where the two differ (before the first copy),
/// the inference splits them. A copy the target still does in its block needs no
/// candidate: a candidate the relation does not need costs the inference its splits.
fn cf_copies(src: &Function, tgt: &Function) -> Vec<(Slot, Slot)> {
    let mut pairs = vec![];
    for &b in src.layout.iter() {
        // The target has every block of the source ([`corresponds`]).
        let kept: Vec<CfVar> = cf_writes(tgt, b).into_iter().map(|(v, _)| v).collect();
        for (var, value) in cf_writes(src, b) {
            if let ExprData::CfRead(from) = src.exprs[value] {
                let pair = (Slot::Cf(Side::Src, var), Slot::Cf(Side::Src, from));
                if from != var && src.cfvars[from].ty == src.cfvars[var].ty && !kept.contains(&var) && !pairs.contains(&pair) {
                    pairs.push(pair);
                }
            }
        }
    }
    pairs
}

/// The callframe writes of block `b`'s statements, each its variable and value, in order.
fn cf_writes(f: &Function, b: Block) -> Vec<(CfVar, Expr)> {
    let mut out = vec![];
    for &st in &f.blocks[b].stmts {
        f.visit_postorder(st, &mut |n| {
            if let ExprData::CfWrite { var, value } = &f.exprs[n] {
                out.push((*var, *value));
            }
        });
    }
    out
}

/// A source's callframe variable and the constant it writes (`cfwrite(@c2, 409)`) in a
/// block where the target writes no `@c2` but writes it elsewhere, each pair once: a
/// candidate. Where memopt sinks a constant's write out of a loop onto its exits, the
/// relation in the loop after the write must say that the source's `@c2` already holds
/// 409 while the target's does not yet, and no slot but the constant's own tree holds
/// 409 there (memory seed 871's memopt: every try failed on `@c2` at a later trap).
fn sunk_constants(src: &Function, tgt: &Function) -> Vec<(Slot, Slot)> {
    let written: HashSet<CfVar> = tgt.layout.iter().flat_map(|&b| cf_writes(tgt, b)).map(|(v, _)| v).collect();
    let mut pairs = vec![];
    for &b in &src.layout {
        let kept: Vec<CfVar> = cf_writes(tgt, b).into_iter().map(|(v, _)| v).collect();
        for (var, value) in cf_writes(src, b) {
            let Some(ty) = src.expr_type(value) else { continue };
            if kept.contains(&var) || !written.contains(&var) || !is_constant_tree(src, value) {
                continue;
            }
            let pair = (Slot::Cf(Side::Src, var), Slot::Read(Side::Src, ty, value));
            if !pairs.iter().any(|&(v, x)| v == pair.0 && same_read(src, tgt, x, pair.1)) {
                pairs.push(pair);
            }
        }
    }
    pairs
}

/// A target's local that a callframe write of the target stores (`cfwrite(@c2, %mem)`)
/// where the source does not write that variable but writes it elsewhere, with the
/// source's variable, each pair once: a candidate. Where memopt sinks a loop's write of a
/// loop-invariant value onto its exit, the value hoisted into a local before the loop
/// (`%mem = load.i32(A)` in the preheader), the relation in the loop after the source's
/// write must say that the source's `@c2` holds what `%mem` holds (default seed 1878's
/// memopt: without it, `@c2` parted at the loop and every try failed at a later loop's
/// `cf_trace`).
fn sunk_writes(src: &Function, tgt: &Function) -> Vec<(Slot, Slot)> {
    let written: HashSet<CfVar> = src.layout.iter().flat_map(|&b| cf_writes(src, b)).map(|(v, _)| v).collect();
    let in_src: HashSet<Block> = src.layout.iter().copied().collect();
    let mut pairs = vec![];
    for &b in &tgt.layout {
        let theirs: Vec<CfVar> = if in_src.contains(&b) { cf_writes(src, b).into_iter().map(|(v, _)| v).collect() } else { vec![] };
        for (var, value) in cf_writes(tgt, b) {
            let ExprData::Local(l) = tgt.exprs[value] else { continue };
            let pair = (Slot::Cf(Side::Src, var), Slot::Local(Side::Tgt, l));
            if written.contains(&var) && !theirs.contains(&var) && !pairs.contains(&pair) {
                pairs.push(pair);
            }
        }
    }
    pairs
}

/// Most source statements looked ahead for the one a target statement corresponds to.
const ALIGN_AHEAD: usize = 8;

/// Candidates read off the code: the two functions' statements of each block aligned
/// (in order, a target statement with the next source statement of the same shape), and
/// their trees walked side by side. Where the source reads memory (a callframe variable, a
/// load) or computes a value (`add(%a.2, %b)`) and the target reads a local instead, or
/// keeps the value in a local on the way (`comma((%val = x), %val)`, and the value a
/// callframe write stores), that local may hold it across blocks too: each pair is a
/// source slot (a callframe variable, or a [`Slot::Read`] load or value tree) and the
/// target's local (memopt's promoted variables and forwarded loads, SSAPRE's temporaries
/// where their expression is available). A source's callframe write aligns with the
/// target's `comma((%val = x), %val)` where the target no longer writes (memopt's write
/// sunk out of a loop), its `%val` a candidate for the variable. (Candidates between
/// locals of other names cost more splits than they prove.) And the constants of
/// callframe writes the target does later ([`sunk_constants`]), and the locals the
/// target's sunk writes store ([`sunk_writes`]). Only candidates: the
/// inference keeps those that are inductive.
fn aligned_reads(src: &Function, tgt: &Function) -> Vec<(Slot, Slot)> {
    let mut out = vec![];
    for &b in &src.layout {
        let (ss, ts) = (&src.blocks[b].stmts, &tgt.blocks[b].stmts);
        let mut i = 0;
        for &t in ts {
            let ahead = ss.len().min(i + ALIGN_AHEAD);
            if let Some(k) = (i..ahead).find(|&k| same_root(src, ss[k], tgt, t)) {
                walk_aligned(src, ss[k], tgt, t, &mut out);
                i = k + 1;
            }
        }
        let roots = |f: &Function| match &f.blocks[b].term {
            tandem_core::ir::Terminator::Branch { cond, .. } => Some(*cond),
            tandem_core::ir::Terminator::Return(e) => Some(*e),
            tandem_core::ir::Terminator::Switch { value, .. } => Some(*value),
            tandem_core::ir::Terminator::Jump(_) => None,
        };
        if let (Some(x), Some(y)) = (roots(src), roots(tgt)) {
            walk_aligned(src, x, tgt, y, &mut out);
        }
    }
    out.extend(sunk_constants(src, tgt));
    out.extend(sunk_writes(src, tgt));
    out
}

/// Most target stores [`pending_stores`] proposes.
const MAX_PENDING: usize = 8;

/// Most removed source stores [`pending_stores`] proposes: each is a candidate only where
/// the heaps may differ by it ([`pending_scope`]), and memopt removes more dead stores
/// than it sinks (memory seed 1637's memopt removed `store.16(1051577, call
/// @heap_rmw(..))`, its fourteenth, and with eight no candidate said the heaps differ only
/// there until the next store to it).
const MAX_REMOVED: usize = 16;

/// Candidates for stores one side does where the other does not.
///
/// The stores of each block are paired, the target's with the source's of the block of the
/// same index that write the same width at an address the target's may compute
/// ([`trees_match`] with `held`: the address may now read a local where the source read a
/// callframe variable); what is left over on either side was added or removed.
///
/// The target's stores done later than the source's (memopt's loop-invariant stores,
/// removed from the loop and done on its exits): each target store left over (in a block
/// the source does not have, every one: a landing block on an exit), whose address reads
/// only locals, callframe variables and constants and whose value is a value tree; at most [`MAX_PENDING`] of
/// different trees. Each gives two candidates for the source's heap ([`Slot::Pending`]):
/// the target's heap with the store done, and the target's heap with the source's bytes at
/// the store's address (the heaps differ only there).
///
/// The source's stores the target removed (memopt's dead stores, which every path from
/// there overwrites before anything reads them, across blocks too, and inside a statement's
/// tree too: ssa seed 1853's `comma(store.16(A, %p1), ..)`, whose heaps parted at the
/// removal and differed at a later trap): each source store left
/// over whose address reads only locals, callframe variables and constants (ssa seed
/// 1535's memopt removed `store.32(add(.., and(cfread(@c1), 2046)), ..)`, which the next
/// block overwrites, and had no candidate: the heaps parted there and differed at a later
/// trap); at most [`MAX_REMOVED`]. Each gives one candidate for the target's heap: the
/// source's heap with the target's bytes at the store's address (the heaps differ only
/// there, until the source's later store makes them agree). Only candidates: the
/// inference keeps them where inductive.
fn pending_stores(src: &Function, tgt: &Function) -> Vec<(Slot, Slot)> {
    // A callframe variable the address reads is evaluated in the state where the slot is
    // (where it changed since the store, the candidate is not inductive, and goes).
    let plain = |f: &Function, e: Expr| match f.exprs[e] {
        ExprData::Store { addr, .. } => is_value_tree(f, addr) && !reads_memory(f, addr),
        _ => false,
    };
    let in_src: HashSet<Block> = src.layout.iter().copied().collect();
    let (mut found, mut removed): (Vec<Expr>, Vec<Expr>) = (vec![], vec![]);
    for &b in &tgt.layout {
        let theirs = if in_src.contains(&b) { block_stores(src, b) } else { vec![] };
        // Each target store pairs with the first unpaired source store of the block that
        // writes the same place; what is left over on either side was added or removed.
        // Counting the stores saw nothing where a block gains a sunk store and loses a
        // dead one (default seed 13's memopt: b40).
        let mut paired = vec![false; theirs.len()];
        // A statement's store pairs with a statement's, a store inside a tree with one inside
        // a tree: the target keeps `store.16(A, comma(store.16(A, x), ..))`'s outer store
        // where it removed the inner one, and the inner one, running first, took the pair.
        for (e, top) in block_stores(tgt, b) {
            if let Some(k) = (0..theirs.len()).find(|&k| !paired[k] && theirs[k].1 == top && same_place(src, theirs[k].0, tgt, e, true)) {
                paired[k] = true;
                continue;
            }
            let ExprData::Store { value, .. } = tgt.exprs[e] else { continue };
            if top && plain(tgt, e) && is_value_tree(tgt, value) && found.len() < MAX_PENDING && !found.iter().any(|&x| same_tree(tgt, x, e)) {
                found.push(e);
            }
        }
        for (k, &(e, _)) in theirs.iter().enumerate().filter(|&(k, _)| !paired[k]) {
            // A store the block itself overwrites needs no candidate: where the stores
            // between write elsewhere by their terms, the heap after both is the term of
            // the later one alone ([`encode::stored_heap`]).
            let overwritten = theirs[k + 1..].iter().any(|&(l, _)| covered(src, e, l));
            if !overwritten && plain(src, e) && removed.len() < MAX_REMOVED && !removed.iter().any(|&x| same_tree(src, x, e)) {
                removed.push(e);
            }
        }
    }
    let sunk = found.into_iter().flat_map(|e| [true, false].map(|exact| (Slot::Heap(Side::Src), Slot::Pending(Side::Tgt, e, exact))));
    // A removed store whose value the heap already holds at its block's entry (memopt's
    // store of the bytes a dominating store wrote: ssa seed 880's `store.8(A, @c0)` in
    // both arms after `store.8(A, @c0)`, removed in one) has a second candidate there:
    // the source's heap with the store done is both heaps ([`pending_scope`]).
    let again = removed.iter().filter(|&&e| matches!(src.exprs[e], ExprData::Store { value, .. } if is_value_tree(src, value))).map(|&e| (Slot::Heap(Side::Tgt), Slot::Pending(Side::Src, e, true))).collect::<Vec<_>>();
    sunk.chain(removed.into_iter().map(|e| (Slot::Heap(Side::Tgt), Slot::Pending(Side::Src, e, false)))).chain(again).collect()
}

/// The blocks where the two heaps may differ by a pending store ([`pending_stores`]), by
/// block index: a candidate joined elsewhere only adds goals to every edge, and its
/// queries took the shares of those that matter (memory seed 801's memopt: at block after
/// block, the goals of seven removed stores, where one mattered, ran out of their shares
/// together).
/// - A source store the target removed, in block `B`: the blocks reachable from `B`'s
///   successors up to the blocks that store to the same place again (the stores that
///   overwrite it, which every path meets before a read: those blocks included, not
///   what follows them).
/// - A target store the source does not have, in block `B'` (a loop's exit): the blocks
///   that reach `B'` in the target back to the source's blocks that store to the same
///   place (the loop's store: those blocks included, not what precedes them).
/// - A source store the target removed, done on the source's heap (`exact`): its own
///   block, at whose entry the heap may hold its bytes already.
fn pending_scope(src: &Function, tgt: &Function, side: Side, e: Expr, exact: bool, home: Option<Block>) -> Vec<bool> {
    let (f, g) = match side {
        Side::Src => (src, src),
        Side::Tgt => (tgt, src),
    };
    let Some(home) = home.or_else(|| f.layout.iter().copied().find(|&b| f.blocks[b].stmts.iter().any(|&s| f.tree_holds(s, e)))) else {
        return vec![true; src.blocks.len().max(tgt.blocks.len())];
    };
    if side == Side::Src && exact {
        return (0..src.blocks.len()).map(|i| i == home.index()).collect();
    }
    // The blocks of `g` (the source) with another store to the same place.
    let mut stops = vec![false; f.blocks.len().max(g.blocks.len())];
    for &c in &g.layout {
        stops[c.index()] = g.blocks[c].stmts.iter().any(|&l| l != e && matches!(g.exprs[l], ExprData::Store { .. }) && same_place(g, l, f, e, side == Side::Tgt));
    }
    match side {
        Side::Src => reachable(src, src.blocks[home].term.successors().into_iter(), true, &stops),
        Side::Tgt => reachable(tgt, std::iter::once(home), false, &stops),
    }
}

/// Every store of block `b`, those inside a statement's tree too (memopt removes a dead
/// store inside a tree as well: `comma(store.16(A, %p1), ..)`), in the order they run,
/// each with whether it is a statement.
fn block_stores(f: &Function, b: Block) -> Vec<(Expr, bool)> {
    let mut out = vec![];
    for &s in &f.blocks[b].stmts {
        f.visit_postorder(s, &mut |n| {
            if matches!(f.exprs[n], ExprData::Store { .. }) {
                out.push((n, n == s));
            }
        });
    }
    out
}

/// The target's sunk stores among `pending` ([`pending_stores`]) whose value reads a phi's local,
/// translated through the phis into each predecessor's arguments, as candidates of their
/// own (the source's heap is the target's with the translated store done), each with the
/// predecessor it stands for, whence [`pending_scope`] reaches back. memopt sinks a loop's
/// `store.64(A, v)` to the exit as `store.64(A, %mem)`, `%mem = phi(b5: %val, b9:
/// %val.1)`: between the body's store and the latch the source's heap holds `%val.1` at
/// `A` while `%mem` still holds the value from before (ssa seed 1093's memopt: every try
/// parted the heaps from the body on), and before the loop it holds `%val`.
fn sunk_before_phis(pending: &[(Slot, Slot)], tgt: &mut Function) -> (Vec<(Slot, Slot)>, HashMap<Expr, Block>) {
    let sunk: Vec<Expr> = pending
        .iter()
        .filter_map(|&(_, p)| match p {
            Slot::Pending(Side::Tgt, e, true) => Some(e),
            _ => None,
        })
        .collect();
    let (mut out, mut homes) = (vec![], HashMap::default());
    for e in sunk {
        let ExprData::Store { value, .. } = tgt.exprs[e] else { continue };
        let mut reads = vec![];
        tgt.visit_postorder(value, &mut |n| {
            if let ExprData::Local(l) = tgt.exprs[n] {
                reads.push(l);
            }
        });
        let joins: Vec<Vec<Phi>> = tgt.layout.iter().map(|&b| tgt.blocks[b].phis.clone()).filter(|phis| phis.iter().any(|q| reads.contains(&q.dest))).collect();
        for phis in joins {
            for (pred, map) in edge_arguments(&phis) {
                if out.len() == MAX_PENDING {
                    return (out, homes);
                }
                let translated = translated(tgt, e, &map);
                if translated != e {
                    out.push((Slot::Heap(Side::Src), Slot::Pending(Side::Tgt, translated, true)));
                    homes.insert(translated, pred);
                }
            }
        }
    }
    (out, homes)
}

/// Per incoming edge of a block with `phis` (in the first phi's order), its predecessor
/// and each phi's local with its argument on that edge.
fn edge_arguments(phis: &[Phi]) -> Vec<(Block, HashMap<Local, Local>)> {
    phis[0]
        .args
        .iter()
        .map(|&(pred, _)| (pred, phis.iter().filter_map(|q| q.args.iter().find(|&&(p, _)| p == pred).map(|&(_, arg)| (q.dest, arg))).collect()))
        .collect()
}

/// Whether stores `s` of `f` and `t` of `g` write the same width at the same address
/// (`held`: `t`'s address may read a local where `s`'s computes a tree, [`trees_match`]).
fn same_place(f: &Function, s: Expr, g: &Function, t: Expr, held: bool) -> bool {
    match (&f.exprs[s], &g.exprs[t]) {
        (ExprData::Store { width: a, addr: x, .. }, ExprData::Store { width: b, addr: y, .. }) => a == b && trees_match(f, *x, g, *y, held),
        _ => false,
    }
}

/// Whether every byte store `e` writes is one that store `l` writes too, by their address
/// trees: the same tree plus constant offsets (`add(B, 2)` of one byte within `add(B, 0)`
/// of four), or the same place. A store inside a wider one's value that writes among its
/// bytes (default seed 1477's memopt removed `store.8(add(B, 2), ..)` inside `store.32(add(B,
/// 0), ..)`) is overwritten in its own statement, and the heap's canonical form leaves it
/// out.
fn covered(f: &Function, e: Expr, l: Expr) -> bool {
    // An address as a tree and a constant offset from it (`None`: a constant address).
    let split = |a: Expr| -> (Option<Expr>, i64) {
        match f.exprs[a] {
            ExprData::Const { value, .. } => (None, value),
            ExprData::Binary { op: tandem_core::ir::BinOp::Add, lhs, rhs } => match (&f.exprs[lhs], &f.exprs[rhs]) {
                (ExprData::Const { value: x, .. }, ExprData::Const { value: y, .. }) => (None, x.wrapping_add(*y)),
                (_, ExprData::Const { value, .. }) => (Some(lhs), *value),
                _ => (Some(a), 0),
            },
            _ => (Some(a), 0),
        }
    };
    match (&f.exprs[e], &f.exprs[l]) {
        (ExprData::Store { width: we, addr: ae, .. }, ExprData::Store { width: wl, addr: al, .. }) => {
            let ((be, oe), (bl, ol)) = (split(*ae), split(*al));
            let same_base = match (be, bl) {
                (None, None) => true,
                (Some(x), Some(y)) => same_tree(f, x, y),
                _ => false,
            };
            same_base && ol <= oe && oe + i64::from(we.bytes()) <= ol + i64::from(wl.bytes())
        }
        _ => false,
    }
}

/// The blocks of `f` reachable from `starts` (themselves included), by block index:
/// along the edges with `forward`, against them without; a block marked in `stops` is
/// reached but not left.
fn reachable(f: &Function, starts: impl Iterator<Item = Block>, forward: bool, stops: &[bool]) -> Vec<bool> {
    let preds = if forward { Default::default() } else { f.predecessors() };
    let mut seen = vec![false; stops.len().max(f.blocks.len())];
    let mut stack: Vec<Block> = starts.collect();
    while let Some(b) = stack.pop() {
        if std::mem::replace(&mut seen[b.index()], true) || stops.get(b.index()) == Some(&true) {
            continue;
        }
        if forward {
            stack.extend(f.blocks[b].term.successors());
        } else {
            stack.extend(preds[b].iter().copied());
        }
    }
    seen
}

/// Whether two statements may correspond: the same operator, and the same local,
/// callframe variable or width where they have one.
fn same_root(src: &Function, s: Expr, tgt: &Function, t: Expr) -> bool {
    match (&src.exprs[s], &tgt.exprs[t]) {
        (ExprData::Assign { local: a, .. }, ExprData::Assign { local: b, .. }) => src.locals[*a].name == tgt.locals[*b].name,
        (ExprData::CfWrite { var: a, .. }, ExprData::CfWrite { var: b, .. }) => a == b,
        (ExprData::CfWrite { .. }, ExprData::Comma { .. }) => kept_on_the_way(tgt, t).is_some(),
        (ExprData::Store { width: a, .. }, ExprData::Store { width: b, .. }) => a == b,
        (x, y) => std::mem::discriminant(x) == std::mem::discriminant(y),
    }
}

/// Walks the trees `s` (source) and `t` (target) side by side (see [`aligned_reads`]),
/// adding the candidates found to `out`.
fn walk_aligned(src: &Function, s: Expr, tgt: &Function, t: Expr, out: &mut Vec<(Slot, Slot)>) {
    // The source's slot a target local that holds the value of source node `s` may equal.
    let held = |s: Expr, m: Local| -> Option<Slot> {
        match src.exprs[s] {
            ExprData::CfRead(v) => Some(Slot::Cf(Side::Src, v)),
            ExprData::Load { ty, .. } => Some(Slot::Read(Side::Src, ty, s)),
            // A value the source computes where the target reads a local: a temporary of
            // SSAPRE holding an expression where it is available.
            ExprData::Const { .. } | ExprData::Local(_) => None,
            _ if is_value_tree(src, s) => src.expr_type(s).map(|ty| Slot::Read(Side::Src, ty, s)),
            _ => None,
        }
        .filter(|_| src.expr_type(s) == Some(tgt.locals[m].ty))
    };
    // Each pair with the callframe variable the source node's value is written to.
    let mut stack = vec![(s, t, None::<CfVar>)];
    while let Some((mut s, mut t, mut written)) = stack.pop() {
        // A callframe write the target no longer does here, whose value it keeps in a
        // local (memopt's write sunk out of a loop onto its exits: `cfwrite(@c2, x)` where
        // the target has `comma((%val = x), %val)`, and `cfwrite(@c2, %val)` on the exit).
        if let (ExprData::CfWrite { var, value }, Some(_)) = (&src.exprs[s], kept_on_the_way(tgt, t)) {
            (s, written) = (*value, Some(*var));
        }
        // `comma((%m = x), %m)`: the target keeps the value in `%m` on the way.
        while let Some((m, value)) = kept_on_the_way(tgt, t) {
            // The source keeps it in its local of the same name too (the same statement on
            // both sides): both sides go on to the value. Before, the walk stopped there,
            // at a source comma against a target load (ssa seed 986's SSAPRE: `%mem.2 =
            // load.i64(add(1049248, and(%c1.4, 8)))` in both, the target's address a
            // temporary, `load.i64(%pre9.2)`, which the source's tree never met).
            if let Some((_, inner)) = kept_on_the_way(src, s).filter(|&(k, _)| src.locals[k].name == tgt.locals[m].name) {
                (s, t) = (inner, value);
                continue;
            }
            if let Some(v) = written.filter(|&v| src.cfvars[v].ty == tgt.locals[m].ty) {
                out.push((Slot::Cf(Side::Src, v), Slot::Local(Side::Tgt, m)));
            }
            out.extend(held(s, m).map(|a| (a, Slot::Local(Side::Tgt, m))));
            t = value;
        }
        if let ExprData::Local(m) = tgt.exprs[t] {
            // A copy of one callframe variable to another that the target does from the
            // local holding the first: the variable written holds the local's value after
            // the write too (memory seed 883's memopt: `cfwrite(@c0, %c2)` for
            // `cfwrite(@c0, cfread(@c2))`, and the promoted `%c0.2 = phi(.., b35: %c2)`
            // on the loop's back edge, where it is the source's `@c0` and `%c2` that must
            // be one class after the write).
            let copied = |v: CfVar| matches!(src.exprs[s], ExprData::CfRead(u) if u != v) && src.cfvars[v].ty == tgt.locals[m].ty;
            if let Some(v) = written.filter(|&v| copied(v)) {
                out.push((Slot::Cf(Side::Src, v), Slot::Local(Side::Tgt, m)));
            }
            out.extend(held(s, m).map(|a| (a, Slot::Local(Side::Tgt, m))));
            continue;
        }
        // A store the target removed inside a tree, its value kept for what it computes
        // (memopt's dead store: `comma(store.32(A, x), ..)` where the target has
        // `comma(comma((%val = x), %val), ..)` or `comma(x, ..)`): the walk goes on into the
        // value. Before, it stopped at the store, and the loads inside `x` that the target
        // now reads from a local had no candidate (loops seed 1451's memopt: `%mem.1 =
        // load.i64.s32(A)` hoisted out of a loop whose store it feeds).
        if let ExprData::Store { value, .. } = src.exprs[s] {
            if !matches!(tgt.exprs[t], ExprData::Store { .. }) {
                stack.push((value, t, written));
                continue;
            }
        }
        let (x, y) = (&src.exprs[s], &tgt.exprs[t]);
        let (xo, yo) = (x.operands(), y.operands());
        if std::mem::discriminant(x) != std::mem::discriminant(y) || xo.len() != yo.len() {
            out.extend(converted_cell(src, s, tgt, t));
            continue;
        }
        let w = match x {
            ExprData::CfWrite { var, .. } => Some(*var),
            _ => None,
        };
        stack.extend(xo.iter().zip(yo.iter()).map(|(&a, &b)| (a, b, w)));
    }
}

/// The local `%m` and the tree `x` of `comma((%m = x), %m)` at `e`: a value the target
/// keeps in a local on the way.
fn kept_on_the_way(f: &Function, e: Expr) -> Option<(Local, Expr)> {
    let ExprData::Comma { first, second } = f.exprs[e] else { return None };
    match (&f.exprs[first], &f.exprs[second]) {
        (ExprData::Assign { local, value }, ExprData::Local(m)) if local == m => Some((*m, *value)),
        _ => None,
    }
}

/// A load or a callframe read of the source where the target computes the value from its
/// locals and constants alone (`load.i32.s8(A)` where the target has
/// `ashr(shl(%v, 24), 24)`, `load.i64.u32(A)` where it has `and(%val, 4294967295)`:
/// memopt's forwarded stores and loads of another width, whose local holds the heap cell
/// across blocks only under that conversion; `cfread(@c3)` where it has `123`: a constant
/// memopt forwarded from `cfwrite(@c3, 123)` in an earlier block). The candidate equates
/// the two trees' values (each in its side's state), so the relation can say "the low
/// byte of `%v` is the byte at `A`" or "`@c3` holds 123" where a local = load candidate
/// could not. `None` when the target tree reads anything but locals and constants (a
/// load, a callframe variable, a call) or the types differ.
fn converted_cell(src: &Function, s: Expr, tgt: &Function, t: Expr) -> Option<(Slot, Slot)> {
    let (cell, ty) = match src.exprs[s] {
        ExprData::Load { ty, .. } => (Slot::Read(Side::Src, ty, s), ty),
        ExprData::CfRead(v) => (Slot::Cf(Side::Src, v), src.cfvars[v].ty),
        _ => return None,
    };
    if tgt.expr_type(t) != Some(ty) || !is_value_tree(tgt, t) || reads_state(tgt, t) {
        return None;
    }
    Some((cell, Slot::Read(Side::Tgt, ty, t)))
}

/// For each candidate of [`converted_cell`] whose target tree reads a phi's local, the
/// same source read with the tree read through the phis of that block from each
/// predecessor (`trunc(%mem)` where `%mem = phi(b2: %val, b5: %val.1)`: `trunc(%val)` and
/// `trunc(%val.1)`), the trees added to `tgt`'s arena: the relation before the phi's
/// block must say the cell is the argument's value converted, since the phi's local is
/// assigned only at its block (default seed 848's memopt: `load.i32(A)` after
/// `store.64(A, comma((%val = sext(%p1)), %val))`, held as `trunc(%mem)` in a loop and
/// returned after it, was `proved (bound 2)`); then, for a load aligned with a phi's
/// local itself, the arguments' locals. At most [`MAX_BEFORE_PHIS`].
fn converted_before_phis(tgt: &mut Function, aligned: &[(Slot, Slot)]) -> Vec<(Slot, Slot)> {
    // Per block with phis: its phis' locals, and per predecessor each local's argument.
    type Args = Vec<HashMap<Local, Local>>;
    let joins: Vec<(Vec<Local>, Args)> = tgt
        .layout
        .iter()
        .filter(|&&b| !tgt.blocks[b].phis.is_empty())
        .map(|&b| {
            let phis = &tgt.blocks[b].phis;
            let dests = phis.iter().map(|q| q.dest).collect();
            let args = edge_arguments(phis).into_iter().map(|(_, map)| map).collect();
            (dests, args)
        })
        .collect();
    let mut out: Vec<(Slot, Slot)> = vec![];
    for &(a, b) in aligned {
        let (Slot::Read(Side::Src, ty, _), Slot::Read(Side::Tgt, _, t)) = (a, b) else { continue };
        let mut reads = vec![];
        tgt.visit_postorder(t, &mut |n| {
            if let ExprData::Local(l) = tgt.exprs[n] {
                reads.push(l);
            }
        });
        for (_, args) in joins.iter().filter(|(dests, _)| dests.iter().any(|d| reads.contains(d))) {
            for map in args {
                if out.len() == MAX_BEFORE_PHIS {
                    return out;
                }
                let t2 = translated(tgt, t, map);
                if t2 != t && !out.iter().any(|&(x, y)| x == a && matches!(y, Slot::Read(_, _, e) if same_tree(tgt, e, t2))) {
                    out.push((a, Slot::Read(Side::Tgt, ty, t2)));
                }
            }
        }
    }
    // A load the target holds in a phi's local itself (`load.i64(A)` and `%mem`): the
    // argument's local from each predecessor (`%val.1`, the value a loop's body stored).
    // Loops seed 1324's memopt: the 64-bit cell held in `%mem = phi(b0: %val, b3:
    // %val.1)` had no candidate at the latch, where its narrower reads had theirs through
    // the phis, and the pair was vacuous.
    for &(a, b) in aligned {
        let (Slot::Read(Side::Src, ..), Slot::Local(Side::Tgt, l)) = (a, b) else { continue };
        for (_, args) in joins.iter().filter(|(dests, _)| dests.contains(&l)) {
            for &m in args.iter().filter_map(|map| map.get(&l)) {
                if out.len() == MAX_BEFORE_PHIS {
                    return out;
                }
                let c = (a, Slot::Local(Side::Tgt, m));
                if m != l && !aligned.contains(&c) && !out.contains(&c) {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// Most candidates [`converted_before_phis`] adds.
const MAX_BEFORE_PHIS: usize = 16;

/// Whether the tree at `e` reads anything but locals and constants: the heap, a callframe
/// variable, or a helper's result.
fn reads_state(f: &Function, e: Expr) -> bool {
    reads_any(f, e, |d| matches!(d, ExprData::Load { .. } | ExprData::CfRead(_) | ExprData::Call { .. }))
}

/// Whether the tree at `e` reads the heap or a helper's result.
fn reads_memory(f: &Function, e: Expr) -> bool {
    reads_any(f, e, |d| matches!(d, ExprData::Load { .. } | ExprData::Call { .. }))
}

/// Whether some node of the tree at `e` is one that `read` picks.
fn reads_any(f: &Function, e: Expr, read: impl Fn(&ExprData) -> bool) -> bool {
    let mut reads = false;
    f.visit_postorder(e, &mut |n| reads |= read(&f.exprs[n]));
    reads
}

/// A block's encoded step: the entry states built from its partition, the assumptions
/// the partition adds (definitions equal to their class), and each side's step.
struct Step {
    block: Block,
    entry: bool,
    assumed: Vec<Bool>,
    /// The symbols each assumption mentions, in the order [`symbols`] meets them. Not a
    /// hash set: dropping a step can free its entry symbols, in the order they are held,
    /// and Z3 gives the ids of freed terms to new ones, ids by which it orders its terms'
    /// arguments. A hash set's order, seeded per process, made the answers differ from
    /// run to run (default seed 26's memopt: `proved (bound 2)` or `unknown`).
    assumed_symbols: Vec<Vec<Dynamic>>,
    /// The assumptions as rewrites, each definition's entry value to its class's value
    /// (see [`Step::rewritten`]).
    rewrites: Vec<(Dynamic, Dynamic)>,
    /// A model of the assumptions alone, once asked ([`relation_model`]).
    model: std::cell::OnceCell<Option<z3::Model>>,
    x: SymOutcome,
    y: SymOutcome,
    /// The source's successors, each with the states both sides enter it with, if both
    /// may go there (if one never does, the relation there is not in question: the
    /// observables differ, or the edge is never taken).
    succs: Vec<(Block, Option<(State, State)>)>,
}

impl Step {
    /// `t` with each definition's entry value in it replaced by its class's value (the
    /// equalities the step's relation assumes, [`Step::rewrites`]).
    fn rewritten(&self, t: &Dynamic) -> Dynamic {
        if self.rewrites.is_empty() {
            return t.clone();
        }
        let pairs: Vec<(&Dynamic, &Dynamic)> = self.rewrites.iter().map(|(x, y)| (x, y)).collect();
        t.substitute(&pairs)
    }
}

/// The entry states of block `b` under `class` (or, for the entry block, the initial
/// state of a run, arguments shared), with the assumptions about definitions.
///
/// Each class gets one value. A class with a state slot and a definition whose operands
/// are in other classes takes the definition's value in the entry state (so that a local
/// holding `add(%a, %b)` is that very term); the others get a fresh symbol. The other
/// definitions are assumed equal to their class.
fn entry_states(p: &Pair, class: Option<&[usize]>, trace: usize, limit: usize) -> (State, State, Vec<Bool>) {
    let Some(class) = class else {
        return initial_states(p, trace);
    };
    let mut chosen = choose_definitions(p, class, false);
    let (s, t, val) = class_values(p, class, &mut chosen, trace, limit);
    let size = sizes(class);
    let mut assumed = vec![];
    for (i, &slot) in p.slots.iter().enumerate() {
        let r = class[i];
        if !p.derived(slot) || size[r] < 2 || chosen[r].as_ref().map(|c| c.0) == Some(i) {
            continue;
        }
        let o = val[r].clone().expect("every class has a value");
        if let Some(v) = p.value(slot, &s, &t, limit) {
            if !v.same_term(&o) {
                assumed.push(v.eq(&o));
            }
        }
    }
    (s, t, assumed)
}

/// The initial states of a run: arguments, heap and callframe shared, locals 0.
fn initial_states(p: &Pair, trace: usize) -> (State, State, Vec<Bool>) {
    let src = p.src;
    let args: Vec<BV> = src.params.iter().map(|&q| fresh_bv(src.locals[q].ty.bits())).collect();
    let heap = fresh_heap();
    let cf: Vec<BV> = src.cfvars.values().map(|d| fresh_bv(d.ty.bits())).collect();
    let init = |f: &Function| {
        let locals = f
            .locals
            .iter()
            .map(|(l, d)| match f.params.iter().position(|&q| q == l) {
                Some(i) => args[i].clone(),
                None => BV::from_u64(0, d.ty.bits()),
            })
            .collect();
        State { locals, heap: heap.clone(), callframe: cf.clone(), trace: Trace::empty(trace) }
    };
    (init(p.src), init(p.tgt), vec![])
}

/// Per class (by its first slot), the slot of the definition whose value it takes, with
/// the classes that definition reads ([`choose_definitions`]).
pub(super) type Chosen = Option<(usize, Vec<usize>)>;

/// Per class (by its first slot), the definition whose value it takes, with the classes
/// that definition reads; chosen so that no class's value depends on itself. A class
/// whose first slot is derived (definitions and loads alone) takes none, and so a symbol
/// of its own, unless `derived_classes` ([`proved_by_terms`]).
fn choose_definitions(p: &Pair, class: &[usize], derived_classes: bool) -> Vec<Chosen> {
    choose_definitions_in(p, class, derived_classes, false)
}

/// [`choose_definitions`], each class taking its first definition in the slots' order
/// that keeps the choice acyclic, or its last (`reverse`).
fn choose_definitions_in(p: &Pair, class: &[usize], derived_classes: bool, reverse: bool) -> Vec<Chosen> {
    let n = p.slots.len();
    let size = sizes(class);
    let mut chosen: Vec<Chosen> = vec![None; n];
    for k in 0..n {
        let i = if reverse { n - 1 - k } else { k };
        let slot = p.slots[i];
        if !p.derived(slot) {
            continue;
        }
        let r = class[i];
        if size[r] < 2 || (!derived_classes && p.derived(p.slots[r])) || chosen[r].is_some() {
            continue;
        }
        let Some(reads) = p.slot_reads(i) else { continue };
        let reads: Vec<usize> = reads.iter().map(|&k| class[k]).collect();
        // A path from a read class back to `r` through the chosen definitions is a cycle.
        let mut stack = reads.clone();
        let mut seen = HashSet::default();
        let mut cycle = false;
        while let Some(c) = stack.pop() {
            if c == r {
                cycle = true;
                break;
            }
            if seen.insert(c) {
                stack.extend(chosen[c].iter().flat_map(|(_, d)| d.iter().copied()));
            }
        }
        if !cycle {
            chosen[r] = Some((i, reads));
        }
    }
    chosen
}

/// The value of every class and the two entry states holding them: fresh symbols for the
/// classes without a chosen definition, then the definitions in dependency order (a
/// definition too large to evaluate is dropped from `chosen` and its class gets a symbol).
fn class_values(p: &Pair, class: &[usize], chosen: &mut [Chosen], trace: usize, limit: usize) -> (State, State, Vec<Option<Val>>) {
    let n = p.slots.len();
    let fresh = |r: usize| p.symbol(Role::Class(r));
    let mut val: Vec<Option<Val>> = vec![None; n];
    for r in 0..n {
        if class[r] == r && chosen[r].is_none() {
            val[r] = Some(fresh(r));
        }
    }
    // The states so far (a class without its value yet reads as a placeholder, which the
    // acyclic choice never lets a definition read); each resolved class is written in.
    let (mut s, mut t) = (p.state(Side::Src, class, &val, trace), p.state(Side::Tgt, class, &val, trace));
    let mut pending: Vec<usize> = (0..n).filter(|&r| chosen[r].is_some()).collect();
    // The members of the classes with a definition only (none in a try over the states'
    // slots alone, where a list per class was a tenth of each entry state's making).
    let mut members: HashMap<usize, Vec<usize>> = pending.iter().map(|&r| (r, vec![])).collect();
    for (i, &r) in class.iter().enumerate() {
        if let Some(m) = members.get_mut(&r) {
            m.push(i);
        }
    }
    while !pending.is_empty() {
        let before = pending.len();
        let mut rest = vec![];
        for r in pending {
            let (i, deps) = chosen[r].clone().expect("pending classes have a definition");
            if !deps.iter().all(|&c| val[c].is_some()) {
                rest.push(r);
                continue;
            }
            let v = p.entry_value(p.slots[i], &s, &t, limit).unwrap_or_else(|| {
                chosen[r] = None;
                fresh(r)
            });
            for &m in &members[&r] {
                write_slot(p.slots[m], &v, &mut s, &mut t);
            }
            val[r] = Some(v);
        }
        pending = rest;
        assert!(pending.len() < before, "the chosen definitions are acyclic");
    }
    (s, t, val)
}

/// Writes `v` into the state slot `slot` of its side's state (a tree slot holds nothing).
fn write_slot(slot: Slot, v: &Val, s: &mut State, t: &mut State) {
    let side = match slot {
        Slot::Local(x, _) | Slot::Cf(x, _) | Slot::Heap(x) | Slot::Def(x, _, _) | Slot::Read(x, _, _) => x,
        Slot::Pending(..) => return,
    };
    let st = if side == Side::Src { s } else { t };
    match (slot, v) {
        (Slot::Local(_, l), Val::Bv(b)) => st.locals[l.index()] = b.clone(),
        (Slot::Cf(_, c), Val::Bv(b)) => st.callframe[c.index()] = b.clone(),
        (Slot::Heap(_), Val::Heap(h)) => st.heap = h.clone(),
        _ => {}
    }
}

/// Encodes block `b`'s step under `class`; adds the nodes evaluated to `work`.
fn encode_block(p: &Pair, b: Block, class: Option<&[usize]>, trace: usize, limit: usize, work: &mut usize) -> Result<Step, Unknown> {
    let src_blocks: HashSet<Block> = p.src.layout.iter().copied().collect();
    let fresh = |x: Block| !src_blocks.contains(&x);
    let (s_in, t_in, assumed) = entry_states(p, class, trace, limit);
    // The encoding cap bounds each step's encoding; the work of the whole inference is the
    // budget's to bound (charged at `NODE_COST`). Before, the cap also bounded the sum of
    // every encoding and round of the inference, which ended tries as "too large" at a
    // fifth of their budget (loops seed 964's SSAPRE, default seed 929's memopt).
    let mut x = encode_step(p.src, b, s_in, &|_| false, limit).map_err(|_| Unknown::TooLarge)?;
    let mut y = encode_step(p.tgt, b, t_in, &fresh, limit).map_err(|_| Unknown::TooLarge)?;
    *work += p.src.blocks[b].stmts.len() + p.tgt.blocks[b].stmts.len() + 1 + assumed.len() + p.slots.len() / 4;
    // Per successor, the two states entering it (on the edges to it alone).
    let mut succs: Vec<(Block, Option<(State, State)>)> = vec![];
    for t in p.src.blocks[b].term.successors() {
        if succs.iter().any(|(u, _)| *u == t) {
            continue;
        }
        // An edge whose condition is false in every state the relation allows (a branch on
        // a constant) is never taken.
        let at = |o: &SymOutcome| o.continues.iter().position(|(u, g, _)| *u == t && simplified(g).as_bool() != Some(false));
        let states = match (at(&x), at(&y)) {
            (Some(i), Some(j)) => Some((moved_out(&mut x.continues[i].2), moved_out(&mut y.continues[j].2))),
            _ => None,
        };
        succs.push((t, states));
    }
    let assumed_symbols = assumed.iter().map(|a| symbols(&[Dynamic::from_ast(a)])).collect();
    let rewrites = assumed.iter().map(|a| Dynamic::from_ast(a)).filter_map(|a| Some((a.nth_child(0)?, a.nth_child(1)?))).collect();
    Ok(Step { block: b, entry: class.is_none(), assumed, assumed_symbols, rewrites, model: Default::default(), x, y, succs })
}

/// The state of a step's exit to a next block, for [`Step::succs`], its locals moved out
/// (no one reads them from the outcome after; a copy of every local per edge was a
/// twelfth of a small function's validation). The step keeps the rest, so that every term
/// lives as long as before: Z3 gives a freed term's id to the next one built.
fn moved_out(st: &mut State) -> State {
    State { locals: std::mem::take(&mut st.locals), heap: st.heap.clone(), callframe: st.callframe.clone(), trace: st.trace.clone() }
}

/// Whether the blocks of the two functions correspond (see the module docs): the same
/// entry, every source block kept, the same parameter types and callframe variables, and
/// no jump to the entry.
pub(super) fn corresponds(src: &Function, tgt: &Function) -> bool {
    let entry = src.entry();
    tgt.entry() == entry
        && src.layout.iter().all(|b| tgt.layout.contains(b))
        && src.params.len() == tgt.params.len()
        && src.params.iter().zip(&tgt.params).all(|(&p, &q)| src.locals[p].ty == tgt.locals[q].ty)
        && src.cfvars == tgt.cfvars
        && ![src, tgt].iter().any(|f| f.layout.iter().any(|&b| f.blocks[b].term.successors().contains(&entry)))
}

/// The simulation check: `Ok(true)` when every block pair is proved under the inferred
/// relation (every run agrees), `Ok(false)` when the blocks do not correspond or some
/// block is not proved, `Err` when the budget ran out or a block is too large.
///
/// The relation is inferred from the first partition by name and definitions; if that
/// fails and the code shows locals that may hold memory ([`aligned_reads`]), once more
/// with those candidates joined too; if that fails, once more from the whole-function
/// relation ([`Scope::Whole`]: every pair of versions and every definition joined at every
/// block, as before the first partition was chosen per block), which proves some
/// functions that the per-block choice loses (a definition the data flow drops at a block
/// where the target still needs it). More candidates can cost more splits than they prove
/// (a split by an arbitrary model may part what a later edge needed together), so they are
/// the later tries, each on what is left of the budget. Where the target has stores the
/// source's blocks lack ([`pending_stores`]), the tries with those candidates come first
/// (per block, then whole), then the three others: on the default profile's first 40
/// seeds memopt proves 25 of 37 changed pairs so, and 24 with them joined to the aligned
/// candidates' tries (seed 9's heap classes then split so that another block fails); as
/// the last tries, seeds 12 and 20 spend the budget before reaching them. The aligned
/// candidates first instead of last proves one pair more and loses two (24). A try whose
/// first partition equals an earlier one's is skipped.
///
/// Right before the try without candidates comes the one that also joins the constants a
/// promoted variable's phi takes ([`Scope::PhiConstants`]; the same partition, and so
/// skipped, where there are none).
///
/// Before all of them, where every local of the target is named after one of the source
/// ([`no_new_names`]), comes a try over the states' slots alone ([`Scope::StateOnly`]: the
/// named pairs, versions where current, no definition), within [`STATE_ONLY_SHARE`] of
/// the budget; running out there is no answer, only the end of that try. (A local of a
/// new name, SSAPRE's temporary or memopt's promoted variable, holds something only a
/// definition or a load can say, so there the try would only spend its share; where the
/// target has none, the pass's check is the one it was before this try.) It is what the
/// simple passes need (`ssa`: a version holds its name where it is current; `dce`: dead
/// locals split off; `ssa-destroy`: a phi's local is its copy; `cprop`: mostly nothing),
/// and it is cheap where it holds: with no definition in a class there is no
/// assumption, so the concrete samples split every class that a model would, and the
/// solver is seldom asked. With the definitions from the start, the samples seldom
/// satisfy the assumptions and each split went to the solver: on the default profile's
/// first 40 seeds this try proves 5 more pairs of `ssa`, `ssa-destroy` and `cprop`
/// (seeds 13 and 29, 5-8 s to `proved (bound 2)` before, now 50-75 ms), on the ssa
/// profile's 5 more of `ssa-destroy`, `cprop` and memopt, and the median answer over all
/// passes went from 364 to 43 ms and from 565 to 33 ms. (The answers of memopt and
/// SSAPRE moved too, both ways, in a whole pipeline's validation: a pass's answer depends
/// on the terms the passes before it built in the same Z3 context; validated alone, with
/// `--pass`, default seeds 0, 35 and 36 of memopt and 13 of SSAPRE answer as before.)
pub fn check_simulation(src: &Function, tgt: &Function, opts: &Options, budget: &mut Budget) -> Result<bool, Unknown> {
    check_noting(src, tgt, opts, budget, &mut Notes::default(), Tries::Both)
}

/// [`check_simulation`] by the solver alone, for a pair [`proved_by_identity`] has already
/// not proved: the same tries in Z3, in the same order, without running them by identity
/// again.
pub fn check_simulation_in_z3(src: &Function, tgt: &Function, opts: &Options, budget: &mut Budget) -> Result<bool, Unknown> {
    check_noting(src, tgt, opts, budget, &mut Notes::default(), Tries::Solver)
}

/// Which of [`check_noting`]'s two checks of each try run: by term identity, in Z3, or
/// first the one then the other.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tries {
    Identity,
    Solver,
    Both,
}

/// Whether the simulation check proves the pair by term identity ([`super::identity`])
/// alone: its tries without Z3, so without a Z3 context either (no Z3 term is made).
pub fn proved_by_identity(src: &Function, tgt: &Function, opts: &Options) -> bool {
    check_noting(src, tgt, opts, &mut Budget::new(opts), &mut Notes::default(), Tries::Identity) == Ok(true)
}

/// Why the simulation check does not prove a pair, one line per try (`tandem verify
/// --why`): the same check as [`check_simulation`] within the same half of the budget
/// that [`super::validate`] gives it, with what ended each try noted: the budget (during
/// the encoding, the inference or the observables), or the first block whose observables
/// differ under the inferred relation and how (its next block: a branch condition the
/// relation does not fix; its return value, trap, trace, or the heap or a callframe
/// variable where the run stops). Empty when the pair is proved.
pub fn explain(src: &Function, tgt: &Function, opts: &Options) -> Vec<String> {
    super::in_context(|| {
        let mut half = Budget::new(opts).simulation_share();
        let mut notes = Notes::default();
        match check_noting(src, tgt, opts, &mut half, &mut notes, Tries::Both) {
            Ok(true) => vec![],
            Ok(false) if notes.lines.is_empty() => vec!["the blocks do not correspond".to_string()],
            Ok(false) => notes.lines,
            Err(e) => {
                notes.lines.push(format!("ended: {}", e.reason()));
                notes.lines
            }
        }
    })
}

/// What ended each try ([`explain`]). Always kept, though only `--why` prints them: a
/// note on a block that differs evaluates the model, which builds terms, and Z3's answers
/// depend on the terms a context holds, so a check that noted only when asked answered
/// otherwise than the one `--why` ran again (memory seed 1051's memopt: `proved (bound
/// 2)`, its budget used up, in the validation; proved with 1.5M units to spare in
/// `--why`, which then said nothing).
#[derive(Default)]
struct Notes {
    lines: Vec<String>,
    /// The try under way.
    label: String,
}

impl Notes {
    fn note(&mut self, what: impl FnOnce() -> String) {
        let line = format!("{}: {}", self.label, what());
        self.lines.push(line);
    }
}

/// [`check_simulation`], noting what ended each try in `notes`; the checks `tries` says.
fn check_noting(src: &Function, tgt: &Function, opts: &Options, budget: &mut Budget, notes: &mut Notes, tries_by: Tries) -> Result<bool, Unknown> {
    if !corresponds(src, tgt) {
        return Ok(false);
    }
    // Copies, since [`definitions`] adds the trees it translates through phis.
    let (mut src, mut tgt) = (src.clone(), tgt.clone());
    let defs = Defs { src: definitions(&mut src), tgt: definitions(&mut tgt) };
    let mut aligned = aligned_reads(&src, &tgt);
    let before_phis = converted_before_phis(&mut tgt, &aligned);
    aligned.extend(before_phis);
    let mut pending = pending_stores(&src, &tgt);
    let (sunk, homes) = sunk_before_phis(&pending, &mut tgt);
    pending.extend(sunk);
    let (src, tgt) = (&src, &tgt);
    encode::watch_walks();
    let with_pending: Vec<(Slot, Slot)> = aligned.iter().chain(&pending).copied().collect();
    let mut tried: Vec<(Vec<Slot>, Vec<Vec<usize>>)> = vec![];
    let mut tries = vec![(&[][..], Scope::PerBlock), (&aligned[..], Scope::PerBlock), (&aligned[..], Scope::Whole), (&with_pending[..], Scope::PerBlock), (&with_pending[..], Scope::Whole)];
    // Stores sunk out of a loop need the pending stores from the start. A dead store the
    // target removed is tried second, after the try without candidates: only a store
    // overwritten in another block has a candidate (one its own block overwrites leaves
    // the same heap term), and the tries without it spent the budget failing where the
    // heaps part (default seed 20's memopt). Before that filter, the dead stores' tries
    // came last: default seed 24's memopt, proved without them, spent its budget with
    // them first.
    if pending.iter().any(|&(_, p)| matches!(p, Slot::Pending(Side::Tgt, ..))) {
        tries.rotate_right(2);
    } else if !pending.is_empty() {
        tries.swap(1, 3);
    }
    let flows = Flows::of(src, tgt, homes);
    // Right before the try without candidates (the same partition, and so skipped, where
    // no phi takes a constant).
    let plain = tries.iter().position(|&(c, scope)| c.is_empty() && scope == Scope::PerBlock).unwrap_or(0);
    tries.insert(plain, (&[][..], Scope::PhiConstants));
    if no_new_names(src, tgt, &flows.roots) {
        tries.insert(0, (&[][..], Scope::StateOnly));
    }
    // Each try's first partition, those equal to an earlier try's skipped.
    let distinct = tries
        .into_iter()
        .filter_map(|(candidates, scope)| {
            let first = first_partition(src, tgt, &defs, &flows, candidates, scope);
            if tried.contains(&first) {
                return None;
            }
            tried.push(first.clone());
            Some((candidates, scope, first))
        });
    // First each try by term identity, without the solver, in order (each in about what
    // its first partition takes to make): what the simple passes and most of SSAPRE's
    // pairs leave; Z3 only where no try is proved so.
    let mut made = vec![];
    for (candidates, scope, first) in distinct {
        if tries_by != Tries::Solver && proved_by_terms(src, tgt, &first, opts.max_nodes) {
            notes.note(|| "proved by term identity".into());
            return Ok(true);
        }
        made.push((candidates, scope, first));
    }
    if tries_by == Tries::Identity {
        return Ok(false);
    }
    let mut distinct = made.into_iter().peekable();
    let mut number = 0;
    let mut differed: Vec<(Vec<Slot>, Vec<Vec<usize>>)> = vec![];
    let mut too_large = false;
    // The try that went again at once with the form that looks past stores that may alias.
    let mut at_once = None;
    while let Some((candidates, scope, first)) = distinct.next() {
        number += 1;
        // The last try may spend what is left on its observables (the try over the
        // states' slots has a share of its own, and is never the last).
        let last = scope != Scope::StateOnly && distinct.peek().is_none();
        let kind = match scope {
            Scope::StateOnly => "states' slots",
            Scope::PerBlock => "per block",
            Scope::PhiConstants => "per block, phis' constants",
            Scope::Whole => "whole function",
        };
        notes.label = format!("try {number} ({kind}, {} candidates, {} slots)", candidates.len(), first.0.len());
        if scope != Scope::StateOnly {
            // A first partition that refines one whose relation made a block differ (the
            // same slots, fewer joined) would infer a relation no stronger: skipped, so
            // that what it would spend goes to the tries with other candidates (default
            // seed 39's memopt: the try without the phis' constants failed where the one
            // with them did, and the try with the aligned candidates then ran out).
            if differed.iter().any(|(slots, classes)| *slots == first.0 && refines(&first.1, classes)) {
                notes.note(|| "skipped: it refines a relation that differed".into());
                continue;
            }
            // A try too large for the encoding cap ends only itself: a later try has other
            // slots and may fit (loops seed 11's memopt: its first try's inference met the
            // cap with the 1,664 slots of the states).
            match prove_from(src, tgt, first.clone(), opts, last, budget, notes) {
                Ok(Tried::Proved) => return Ok(true),
                // Where a store's walk stopped above one at its own index, the first try
                // with candidates whose relation parted the heaps at a block whose steps
                // differ other than in where they go goes again at once with the form that
                // takes such a store out (memory seed 1812's memopt: proved so; its next
                // try in the plain form spends the rest of the budget). Not a try without
                // candidates, nor one whose steps go to different blocks: those differ for
                // want of candidates, and going again spent the budget of the try that
                // proves (memory seed 1370's memopt).
                Ok(Tried::Differs { heaps_parted: true }) if at_once.is_none() && !candidates.is_empty() && encode::shadows_past_may_alias() => {
                    differed.push(first.clone());
                    at_once = Some(first.clone());
                    number += 1;
                    notes.label = format!("try {number} (try {} again, past stores that may alias, {} slots)", number - 1, first.0.len());
                    match prove_past_may_alias(src, tgt, first, opts, last, budget, notes) {
                        Ok(Tried::Proved) => return Ok(true),
                        Ok(_) => {}
                        Err(Unknown::TooLarge) => too_large = true,
                        Err(e) => return Err(e),
                    }
                }
                Ok(Tried::Differs { .. }) => differed.push(first),
                Ok(Tried::Undecided) => {}
                Err(Unknown::TooLarge) => too_large = true,
                Err(e) => return Err(e),
            }
            continue;
        }
        let mut share = budget.share(budget.left() / STATE_ONLY_SHARE);
        let start = share.left();
        let proved = prove_from(src, tgt, first, opts, false, &mut share, notes);
        budget.charge(start - share.left());
        match proved {
            Ok(Tried::Proved) => return Ok(true),
            // Its share used up: the next tries, on what is left.
            Ok(_) | Err(Unknown::Budget) => {}
            Err(Unknown::TooLarge) => too_large = true,
            Err(e) => return Err(e),
        }
    }
    // The tries whose relation made a block differ, once more with the heap's form that
    // looks past stores that may be at a byte's index (a store overwritten across a
    // `heap_rmw` word: ssa seed 1658's memopt), last since it costs the pairs the plain
    // form proves their budget ([`encode::past_may_alias`]); where a walk down a heap
    // stopped at such a store.
    if encode::stopped_at_may_alias() {
        differed.retain(|d| at_once.as_ref() != Some(d));
        let retries = differed.len();
        for (k, first) in differed.into_iter().enumerate() {
            number += 1;
            notes.label = format!("try {number} (a relation that differed, again past stores that may alias, {} slots)", first.0.len());
            match prove_past_may_alias(src, tgt, first, opts, k + 1 == retries, budget, notes) {
                Ok(Tried::Proved) => return Ok(true),
                Ok(_) => {}
                Err(Unknown::TooLarge) => too_large = true,
                Err(e) => return Err(e),
            }
        }
    }
    if too_large {
        return Err(Unknown::TooLarge);
    }
    Ok(false)
}

/// [`prove_from`] with the heap's form that looks past stores that may alias
/// ([`encode::past_may_alias`]), in a Z3 context of its own, charged to `budget`: Z3 gives
/// a context's terms ids in the order they are made and reuses those of released ones,
/// and its answers depend on them, so the terms this try made in the check's context
/// changed the answers of the tries after it and of the bounded check (default seed
/// 1321's memopt, proved by its fourth try, ran out of budget there after a retry of
/// 0.4M units).
fn prove_past_may_alias(src: &Function, tgt: &Function, first: (Vec<Slot>, Vec<Vec<usize>>), opts: &Options, last: bool, budget: &mut Budget, notes: &mut Notes) -> Result<Tried, Unknown> {
    let (left, label) = (budget.left(), notes.label.clone());
    let (tried, lines, spent) = super::in_context(|| {
        let mut own = Budget::here(left);
        let mut notes = Notes { lines: vec![], label: label.clone() };
        let tried = encode::past_may_alias(|| prove_from(src, tgt, first.clone(), opts, last, &mut own, &mut notes));
        (tried, notes.lines, left - own.left())
    });
    budget.charge(spent);
    notes.lines.extend(lines);
    tried
}

/// The check of a first partition by term identity ([`super::identity`]), without Z3:
/// the relation read as [`prove_from`] reads it (each part of a state in the slot
/// [`Pair::new`] indexes, each class's value the definition [`choose_definitions`]
/// chooses). A class of definitions and loads alone takes one of their values too
/// rather than a symbol of its own (the solver's check gives it a symbol): a load's
/// value then reads on as its bytes (memopt's `trunc(%p0)` for the source's
/// `load.i32(A)`, whose low byte the source loads as `load.i32.s8(A)` and the target
/// takes as `ashr(shl(trunc(%p0), 24), 24)`: loops seed 20151). Where that relation is
/// not proved, the one with the symbols is tried too (memory seed 1767's memopt, whose
/// target builds a member's tree on another value than the one chosen), and last each
/// class's last definition in the slots' order rather than its first (a class of a
/// target's definition and the source's load it stands for, memopt's `%val` for a
/// stored value, then takes the load's value, its bytes, rather than the definition's
/// tree: default seeds 1210, 1508 and 1559, loops 1073, memory 1246, ssa 1037; 22 more
/// pairs of seeds 1000-1999 of the four profiles proved, for 2-6% more time).
fn proved_by_terms(src: &Function, tgt: &Function, (slots, first): &(Vec<Slot>, Vec<Vec<usize>>), limit: usize) -> bool {
    let p = Pair::new(src, tgt, slots.clone());
    let [s, t] = &p.places;
    let places = super::identity::Places {
        locals: [s.locals.clone(), t.locals.clone()],
        cfs: [s.cfs.clone(), t.cfs.clone()],
        heap: [s.heap, t.heap],
        trees: slots.iter().map(|&x| p.tree(x).map(|(side, ty, e)| (side as usize, ty, e))).collect(),
        pending: slots.iter().map(|&x| if let Slot::Pending(side, e, exact) = x { Some((side as usize, e, exact)) } else { None }).collect(),
    };
    let proves = |choose: &dyn Fn(&[usize]) -> Vec<Chosen>| super::identity::proves(src, tgt, &places, first, choose, limit);
    // Whether a class of definitions alone took a value: else the two relations are one.
    let valued = std::cell::Cell::new(false);
    let with_values = |class: &[usize]| {
        let chosen = choose_definitions(&p, class, true);
        valued.set(valued.get() || chosen.iter().enumerate().any(|(r, c)| c.is_some() && p.derived(p.slots[r])));
        chosen
    };
    proves(&with_values) || (valued.get() && proves(&|class| choose_definitions(&p, class, false))) || proves(&|class| choose_definitions_in(&p, class, true, true))
}

/// Whether every local of `tgt` has the base name of a local of `src` (`%i.3` of `%i`):
/// the target holds nothing under a name of its own (the simple passes' outputs; not
/// SSAPRE's temporaries or memopt's promoted variables).
fn no_new_names(src: &Function, tgt: &Function, roots: &Roots) -> bool {
    let names: HashSet<&str> = src.locals.values().map(|d| roots.base(&d.name)).collect();
    tgt.locals.values().all(|d| names.contains(roots.base(&d.name)))
}

/// The try over the states' slots alone may use `1 / STATE_ONLY_SHARE` of the budget: on
/// the default profile's pairs measured, what it proves it proved within 180,000 units.
const STATE_ONLY_SHARE: u64 = 10;

/// Encoding work done and charged to the budget so far.
#[derive(Default)]
struct Meter {
    work: usize,
    charged: usize,
    /// What the inference did, for [`explain`]: blocks encoded again, edge rounds, splits
    /// by concrete samples, solver queries and the units they took.
    encodes: usize,
    rounds: usize,
    sampled: usize,
    modeled: usize,
    queries: usize,
    query_units: u64,
}

impl Meter {
    /// Charges the work done since the last charge, [`NODE_COST`] units each.
    fn charge(&mut self, budget: &mut Budget) -> Result<(), Unknown> {
        let ok = budget.charge((self.work - self.charged) as u64 * NODE_COST);
        self.charged = self.work;
        if ok {
            Ok(())
        } else {
            Err(Unknown::Budget)
        }
    }
}

/// The check from one first partition: encode every block, refine the relation until it
/// is inductive ([`infer`]), then prove each block's observables under it (`last`: the
/// last try, whose observables may take all that is left).
#[allow(clippy::too_many_arguments)]
fn prove_from(src: &Function, tgt: &Function, (slots, first): (Vec<Slot>, Vec<Vec<usize>>), opts: &Options, last: bool, budget: &mut Budget, notes: &mut Notes) -> Result<Tried, Unknown> {
    let trace = encode::trace_slots(src).max(encode::trace_slots(tgt));
    let p = Pair::new(src, tgt, slots);
    let limit = opts.max_nodes;
    // Past the encoding cap the check is too large, and the bounded check answers.
    if src.layout.len().saturating_mul(p.slots.len().max(1)) > limit {
        notes.note(|| "too large".into());
        return Err(Unknown::TooLarge);
    }
    let mut class: Vec<Vec<usize>> = first;
    let mut meter = Meter::default();
    let mut steps: Vec<Step> = vec![];
    let start = budget.left();
    for (i, &b) in src.layout.iter().enumerate() {
        let c = if b == src.entry() { None } else { Some(&class[i][..]) };
        let step = encode_block(&p, b, c, trace, limit, &mut meter.work).and_then(|s| meter.charge(budget).map(|_| s));
        match step {
            Ok(s) => steps.push(s),
            Err(e) => {
                notes.note(|| format!("{} during the encoding", e.reason()));
                return Err(e);
            }
        }
    }
    let inferred = infer(&p, &mut steps, &mut class, trace, limit, &mut meter, budget);
    let m = &meter;
    let what = || format!("{} encodes, {} rounds, {} sample splits, {} model splits, {} queries of {} units, {} units in all", m.encodes, m.rounds, m.sampled, m.modeled, m.queries, m.query_units, start - budget.left());
    if let Err(e) = inferred {
        notes.note(|| format!("{} during the inference ({})", e.reason(), what()));
        return Err(e);
    }
    notes.note(|| format!("inferred ({})", what()));
    observables_agree(&p, &steps, &class, last, budget, notes)
}

/// Refines the classes of every block until the relation is inductive: a worklist of
/// blocks (in layout order) whose relation at some successor is unchecked; a block whose
/// classes split goes back on the list, to be encoded again when it comes off it and its
/// own edges looked at anew.
fn infer(p: &Pair, steps: &mut [Step], class: &mut [Vec<usize>], trace: usize, limit: usize, meter: &mut Meter, budget: &mut Budget) -> Result<(), Unknown> {
    let position = |b: Block| p.src.layout.iter().position(|&x| x == b).expect("a source block");
    let mut rng: u64 = 0x9E37_79B9_7F4A_7C15;
    // One inference query may take this share of the budget; past it, its goals are
    // given up rather than the whole check.
    let query_cap = (budget.left() / QUERY_SHARE).max(1);
    let mut work_list: BTreeSet<usize> = (0..steps.len()).collect();
    let given_up = std::cell::RefCell::new(HashSet::default());
    let undecided_models = std::cell::RefCell::new(HashSet::default());
    // A block whose classes split is encoded again when it next comes off the work list
    // (it goes back on it), not at once: only its own edges read its step, and a block
    // that several predecessors split before it comes up is encoded once, not once per
    // split.
    let mut stale = vec![false; steps.len()];
    // The blocks no run enters, set aside until an edge to them is taken (a split can
    // make a branch's condition depend on the state again). Which blocks are entered
    // changes only when a step is encoded again.
    let mut parked: BTreeSet<usize> = BTreeSet::new();
    let mut reached = entered(p, steps);
    loop {
        let Some(i) = work_list.pop_first() else {
            let back: Vec<usize> = parked.iter().copied().filter(|&i| reached[i]).collect();
            if back.is_empty() {
                break;
            }
            for i in back {
                parked.remove(&i);
                work_list.insert(i);
            }
            continue;
        };
        if !reached[i] {
            parked.insert(i);
            continue;
        }
        if std::mem::take(&mut stale[i]) {
            meter.encodes += 1;
            steps[i] = encode_block(p, steps[i].block, Some(&class[i][..]), trace, limit, &mut meter.work)?;
            meter.charge(budget)?;
            reached = entered(p, steps);
        }
        let mut changed: Vec<usize> = vec![];
        for k in 0..steps[i].succs.len() {
            let (t, states) = steps[i].succs[k].clone();
            let Some((sx, sy)) = states else { continue };
            let j = position(t);
            let forms = std::cell::RefCell::new(vec![Forms::default(); p.slots.len()]);
            let edge = Edge { step: &steps[i], sx: &sx, sy: &sy, query_cap, given_up: &given_up, undecided_models: &undecided_models, forms: &forms };
            if refine_edge(p, &edge, &mut class[j], limit, &mut rng, meter, budget)? {
                changed.push(j);
            }
        }
        changed.sort();
        changed.dedup();
        for j in changed {
            if steps[j].entry {
                continue;
            }
            stale[j] = true;
            work_list.insert(j);
        }
    }
    Ok(())
}

/// Which blocks (by layout position) a run may enter related: the entry, and the
/// successors of such blocks on the edges their steps may take. A block entered by no
/// edge a step may take, or only from blocks no run enters (code after a branch on a
/// constant), needs no relation: its edges constrain no successor, and its observables
/// are never seen.
fn entered(p: &Pair, steps: &[Step]) -> Vec<bool> {
    let position = |b: Block| p.src.layout.iter().position(|&x| x == b).expect("a source block");
    let mut seen = vec![false; steps.len()];
    let mut stack: Vec<usize> = (0..steps.len()).filter(|&i| steps[i].entry).collect();
    for &i in &stack {
        seen[i] = true;
    }
    while let Some(i) = stack.pop() {
        for (t, states) in &steps[i].succs {
            let j = position(*t);
            if states.is_some() && !seen[j] {
                seen[j] = true;
                stack.push(j);
            }
        }
    }
    seen
}

/// One edge of the inference: the step it leaves, the states both sides enter the
/// successor with, the share of the budget one query may take, and the goals given up so
/// far on the inference's edges.
struct Edge<'a> {
    step: &'a Step,
    sx: &'a State,
    sy: &'a State,
    query_cap: u64,
    given_up: &'a std::cell::RefCell<HashSet<GivenUp>>,
    /// The blocks whose [`relation_model`] the solver did not find within its share.
    undecided_models: &'a std::cell::RefCell<HashSet<Block>>,
    /// Each slot's value after the step and the forms [`edge_goals`] compares it by,
    /// each made once ([`Forms`]).
    forms: &'a std::cell::RefCell<Vec<Forms>>,
}

/// A slot's value after an edge's step, and the forms of it [`edge_goals`] compares, each
/// made when first asked for and kept for the edge's refinement: neither the step nor the
/// states entering the successor change while its classes split. Each round of
/// [`refine_edge`] (the goals, the samples, a model's split) evaluated a definition's or a
/// load's tree again, and each comparison simplified the class's first value again, once
/// per member: on loops and default seeds 0-19's memopt, the values were 23% of the
/// simulation check's CPU time and the simplified forms 7%.
#[derive(Clone, Default)]
struct Forms {
    /// The value (`None` inside: too large to evaluate).
    value: Option<Option<Val>>,
    /// The value simplified by Z3 (constants folded, `and(x, 0)` is 0).
    simplified: Option<Val>,
    /// The value with each definition's entry value in it its class's ([`Step::rewritten`]),
    /// and that simplified.
    rewritten: Option<Dynamic>,
    rewritten_simplified: Option<Dynamic>,
}

impl Edge<'_> {
    /// The form `field` of slot `n`'s [`Forms`]: the one kept, else `make`'s, kept.
    fn form<T: Clone>(&self, n: usize, field: fn(&mut Forms) -> &mut Option<T>, make: impl FnOnce() -> T) -> T {
        if let Some(x) = field(&mut self.forms.borrow_mut()[n]) {
            return x.clone();
        }
        let x = make();
        *field(&mut self.forms.borrow_mut()[n]) = Some(x.clone());
        x
    }

    /// The value of slot `n` after the step (`None` when too large to evaluate).
    fn value(&self, p: &Pair, n: usize, limit: usize) -> Option<Val> {
        self.form(n, |f| &mut f.value, || p.value(p.slots[n], self.sx, self.sy, limit))
    }

    /// Whether the values of slots `f` and `m` (both evaluated) are equal on every state
    /// the step's relation allows by their terms alone, so that no solver need say so:
    /// the same term; the same once Z3 has simplified them; or the same once each
    /// definition's entry value in them is its class's value ([`Step::rewritten`]), since
    /// the relation assumes those equalities. A block that leaves a definition's operands
    /// alone (no store, where a load is a definition) meets the same value after it as the
    /// definition at its entry: memory seed 0's memopt keeps `load.i64.s16(1048952)` as
    /// `ashr(shl(%p2, 48), 48)`, a goal at every block whose query, with the block's other
    /// goals, could run out of its share, the pair then given up everywhere. Each form is
    /// made once per slot, and charged to `work` then.
    fn agree(&self, f: usize, m: usize, work: &mut usize) -> bool {
        let value = |n: usize| self.form(n, |x| &mut x.value, || unreachable!("evaluated")).expect("evaluated");
        let (a, b) = (value(f), value(m));
        if a.same_term(&b) {
            return true;
        }
        let mut simplified = |n: usize, v: &Val| {
            self.form(n, |x| &mut x.simplified, || {
                *work += SIMPLIFY_WORK;
                v.simplify()
            })
        };
        if simplified(f, &a).same_term(&simplified(m, &b)) {
            return true;
        }
        let st = self.step;
        if st.rewrites.is_empty() {
            return false;
        }
        let mut rewritten = |n: usize, v: &Val| {
            self.form(n, |x| &mut x.rewritten, || {
                *work += SIMPLIFY_WORK * (1 + st.rewrites.len() / 16);
                st.rewritten(&v.dynamic())
            })
        };
        let (x, y) = (rewritten(f, &a), rewritten(m, &b));
        if x.ast_eq(&y) {
            return true;
        }
        let rewritten_simplified = |n: usize, r: &Dynamic| self.form(n, |x| &mut x.rewritten_simplified, || super::simplified(r));
        rewritten_simplified(f, &x).ast_eq(&rewritten_simplified(m, &y))
    }
}

/// A goal the solver could not decide within its share on some edge: (the class's first
/// member, the member), two slots. Wherever the two meet again in a class, on any edge,
/// the member leaves it at once rather than take another share: the same definitions meet
/// at block after block with the same trees, as hard to decide on each. Default seed 29's
/// memopt asked one list of such goals six times, each out of its share, and spent 80% of
/// its budget on undecided queries (`proved (bound 2)`); with the goals given up once, it
/// is proved for every run. Giving a goal up only weakens the relation, never makes a
/// proof wrong.
type GivenUp = (usize, usize);

/// Splits the successor's classes `class` until the relation holds on `edge`: by terms,
/// by concrete samples, by the solver's models. Returns whether any class split.
fn refine_edge(p: &Pair, edge: &Edge, class: &mut [usize], limit: usize, rng: &mut u64, meter: &mut Meter, budget: &mut Budget) -> Result<bool, Unknown> {
    let mut changed = false;
    // The pairs of values the solver showed equal on this edge: the step's entry relation
    // does not change while its successor's classes split, so they stay shown.
    let mut shown: Vec<(Val, Val)> = vec![];
    // What the edge's queries may still take, over all its rounds.
    let mut edge_left = edge.query_cap * EDGE_CAPS;
    loop {
        let (mut goals, mut dropped) = edge_goals(p, class, edge, limit, &mut meter.work);
        goals.retain(|(_, _, a, b)| !shown.iter().any(|(x, y)| x.same_term(a) && y.same_term(b)));
        dropped.extend(goals.iter().filter(|g| edge.given_up.borrow().contains(&(g.0, g.1))).map(|g| g.1));
        meter.charge(budget)?;
        if !dropped.is_empty() {
            split(class, &dropped);
            changed = true;
            continue;
        }
        if goals.is_empty() {
            return Ok(changed);
        }
        // Concrete entry states first: one that satisfies the relation and tells two
        // members of a class apart splits it as a model would, for no solver call.
        let sampled = sample_split(p, class, &goals, edge, limit, rng, &mut meter.work);
        meter.charge(budget)?;
        meter.rounds += 1;
        if let Some(moved) = sampled {
            meter.sampled += 1;
            for ns in moved {
                regroup(class, &ns);
            }
            changed = true;
            continue;
        }
        // Then one state the step's relation allows, found once per step: where the
        // goals' members differ in it, it splits them as a query's model would.
        let moved = relation_model(edge, budget).map(|m| model_groups(p, class, &goals, edge, limit, m)).unwrap_or_default();
        meter.charge(budget)?;
        if !moved.is_empty() {
            meter.modeled += 1;
            for ns in moved {
                regroup(class, &ns);
            }
            changed = true;
            continue;
        }
        let before = budget.left();
        let split = query_split(p, class, &goals, edge, limit, &mut shown, &mut edge_left, budget);
        meter.queries += 1;
        meter.query_units += before - budget.left();
        if !split? {
            return Ok(changed);
        }
        changed = true;
    }
}

/// A member of a successor's class whose value after the step is not, as a term, its
/// class's first member's: (the class, the member, the first's value, the member's).
type Goal = (usize, usize, Val, Val);

/// The goals of an edge, and the members whose value is too large to evaluate (they
/// leave their classes).
fn edge_goals(p: &Pair, class: &[usize], edge: &Edge, limit: usize, work: &mut usize) -> (Vec<Goal>, Vec<usize>) {
    let mut goals: Vec<Goal> = vec![];
    let mut dropped = vec![];
    // Each class's first member that has a value.
    let mut first: Vec<Option<usize>> = vec![None; p.slots.len()];
    let size = sizes(class);
    for m in 0..p.slots.len() {
        let r = class[m];
        if size[r] < 2 {
            continue;
        }
        let Some(v) = edge.value(p, m, limit) else {
            dropped.push(m);
            continue;
        };
        match first[r] {
            None => first[r] = Some(m),
            Some(f) if edge.agree(f, m, work) => {}
            Some(f) => goals.push((r, m, edge.value(p, f, limit).expect("evaluated"), v)),
        }
    }
    (goals, dropped)
}

/// Asks the solver whether the goals hold after the step under the relation; returns
/// whether a class split (false: they hold). Once the edge's queries have taken
/// `edge_left` (all its rounds together), the goals left are not asked: their members
/// leave their classes.
///
/// Only the relation is assumed, not that the edge is taken or the source valid: a model
/// may then split a class that the edge's condition would keep, which only weakens the
/// relation (it never makes a proof wrong), and the query stays as small as the values
/// it compares.
#[allow(clippy::too_many_arguments)]
fn query_split(p: &Pair, class: &mut [usize], goals: &[Goal], edge: &Edge, limit: usize, shown: &mut Vec<(Val, Val)>, edge_left: &mut u64, budget: &mut Budget) -> Result<bool, Unknown> {
    if *edge_left == 0 {
        split_goals(class, goals);
        return Ok(true);
    }
    let start = budget.left();
    // The goals shown by congruence hold; only the others go to the solver whole.
    let held = congruent(edge, goals, budget);
    let rest: Vec<Goal> = goals.iter().enumerate().filter(|(k, _)| !held.contains(k)).map(|(_, g)| g.clone()).collect();
    shown.extend(held.iter().map(|&k| (goals[k].2.clone(), goals[k].3.clone())));
    // The states' goals first, on the query's share; then the derived slots' (the
    // definitions, loads and pending stores: candidates, of which a function has many and
    // a proof needs few), on a smaller one: a definition of a 64-bit division that the
    // solver can neither show nor break took whole shares (default seed 10's memopt).
    let (derived, state): (Vec<Goal>, Vec<Goal>) = rest.into_iter().partition(|g| p.derived(p.slots[g.1]));
    let small = Edge { query_cap: (edge.query_cap / DERIVED_SHARE).max(1), ..*edge };
    // Each kind's goals are asked by the assumptions they depend on, the groups that
    // depend on fewer first: a goal that needs no assumption is not asked together with
    // one whose assumptions are hard (default seed 11's memopt: at block after block, 20
    // goals out of their share, where the two of them that needed no assumption were split
    // in 1,700 units, and the others shown in 5,000).
    let mut split = Ok(false);
    for (goals, edge) in [(&state, edge), (&derived, &small)] {
        let mut spare = edge.query_cap * RETRY_CAPS;
        for (k, part) in goal_groups(edge.step, goals).iter().enumerate() {
            if !matches!(split, Ok(false)) {
                break;
            }
            split = query_parts(p, class, part, edge, limit, k > 0, &mut spare, shown, budget);
        }
    }
    *edge_left = edge_left.saturating_sub(start - budget.left());
    split
}

/// A query over derived slots' goals alone may take `1 / DERIVED_SHARE` of a query's share.
const DERIVED_SHARE: u64 = 4;

/// The queries of one edge may take this many query shares in all, over every round of
/// its refinement: before, each round (a model's split, or a query out of its share whose
/// goals then left their classes) started anew with [`RETRY_CAPS`] more, and default seed
/// 28's memopt spent the whole check's budget on one edge of 18 goals in 6 rounds of
/// three queries, each out of its share.
const EDGE_CAPS: u64 = 4;

/// Retries of a query whose share ran out may take this many query shares in all.
const RETRY_CAPS: u64 = 2;

/// One query over `goals` within `cap` ([`query_goals`]); when the share runs out on
/// more than one goal, each half is asked the same way, within `spare` for all the
/// retries, so that one hard goal (a 64-bit division, a heap) does not take the others
/// out of their classes with it: before, a capped query of seven goals split every
/// member off, the two heaps among them, and every later heap goal of the function
/// failed (default seeds 14 and 28). Goals shown equal go to `shown`. Returns whether a
/// class split; after a model's split, the other half is left to the caller's next
/// round (its classes moved).
#[allow(clippy::too_many_arguments)]
fn query_parts(
    p: &Pair,
    class: &mut [usize],
    goals: &[Goal],
    edge: &Edge,
    limit: usize,
    retry: bool,
    spare: &mut u64,
    shown: &mut Vec<(Val, Val)>,
    budget: &mut Budget,
) -> Result<bool, Unknown> {
    let start = budget.left();
    let cap = if retry { edge.query_cap.min(*spare) } else { edge.query_cap };
    let answer = query_goals(p, class, goals, edge, limit, cap, budget)?;
    if retry {
        *spare = spare.saturating_sub(start - budget.left());
    }
    match answer {
        Some(false) => {
            shown.extend(goals.iter().map(|(_, _, a, b)| (a.clone(), b.clone())));
            Ok(false)
        }
        Some(true) => Ok(true),
        None if goals.len() > 1 && *spare > 0 => {
            let (a, b) = goals.split_at(goals.len() / 2);
            for half in [a, b] {
                if query_parts(p, class, half, edge, limit, true, spare, shown, budget)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        // The query's share ran out: its goals are not shown, so their members leave
        // their classes (a weaker relation, never a wrong proof).
        None => {
            edge.given_up.borrow_mut().extend(goals.iter().map(|g| (g.0, g.1)));
            split_goals(class, goals);
            Ok(true)
        }
    }
}

/// `goals` grouped by the assumptions each depends on ([`relevant_indices`]), the groups
/// that depend on fewer first (in the goals' order where as many).
fn goal_groups(st: &Step, goals: &[Goal]) -> Vec<Vec<Goal>> {
    let mut groups = grouped_by_assumptions(goals.iter().cloned(), |g| relevant_indices(&st.assumed_symbols, &[g.2.eq(&g.3).not()]));
    groups.sort_by_key(|(on, _)| on.len());
    groups.into_iter().map(|(_, gs)| gs).collect()
}

/// `items` grouped by the assumptions each depends on, `on(item)` (their indices): each
/// group with those indices, in the order the groups first appear, each group's items in
/// their order. The inference's goals ([`goal_groups`]), the congruence queries' pairs
/// ([`pairs_equal`]) and the sampled classes ([`sample_classes`]) are grouped so.
fn grouped_by_assumptions<T>(items: impl IntoIterator<Item = T>, on: impl Fn(&T) -> Vec<usize>) -> Vec<(Vec<usize>, Vec<T>)> {
    let mut groups: Vec<(Vec<usize>, Vec<T>)> = vec![];
    for item in items {
        let own = on(&item);
        match groups.iter_mut().find(|(a, _)| *a == own) {
            Some((_, g)) => g.push(item),
            None => groups.push((own, vec![item])),
        }
    }
    groups
}

/// The goals' members in groups, one per class and value term, to leave their classes
/// (a weaker relation, never a wrong proof): members whose values are one term stay
/// together. Before, each member left alone where a model did not say which goals
/// differ, both sides of a parameter no pass changes too (memory seed 1319's memopt, at
/// 116 queries, `proved (bound 2)` so at stop 58).
fn term_groups(goals: &[Goal]) -> Vec<Vec<usize>> {
    let mut groups: Vec<(usize, Val, Vec<usize>)> = vec![];
    for (r, n, _, v) in goals {
        match groups.iter_mut().find(|(q, w, _)| q == r && w.same_term(v)) {
            Some((_, _, ns)) => ns.push(*n),
            None => groups.push((*r, v.clone(), vec![*n])),
        }
    }
    groups.into_iter().map(|(_, _, ns)| ns).collect()
}

/// Each goal's member leaves its class (a weaker relation, never a wrong proof).
fn split_goals(class: &mut [usize], goals: &[Goal]) {
    let all: Vec<usize> = goals.iter().map(|g| g.1).collect();
    split(class, &all);
}

/// The congruence query may take `1 / CONGRUENT_SHARE` of an inference query's share: it
/// is meant to be small, and when it is not, the full query decides.
const CONGRUENT_SHARE: u64 = 16;

/// Most pairs of differing subterms [`congruent`] compares.
const MAX_CONGRUENT_PAIRS: usize = 16;

/// The goals that hold by congruence (their indices): the two values of each are the same
/// operator applied to operands that are the same terms except at a few places, and the
/// solver shows the differing subterms equal under the relation (sufficient: equal
/// operands give equal results). Where a pass changed one operand deep inside a large
/// computation (memopt's `and(%val, 4294967295)` for a load, under 64-bit divisions and
/// multiplications; a stored value it now takes from a local, deep in a heap's chain of
/// stores), this asks about that operand alone, not about the whole computation the
/// solver would otherwise bit-blast, or the two heaps it would compare cell by cell.
/// Every goal whose two values share their top operator is a candidate, heaps too, up to
/// [`MAX_CONGRUENT_PAIRS`] pairs in all; the candidates are shown together or not at all
/// (the full query then decides them). Before, one goal that was no candidate (a heap,
/// or operators that differ at the top) sent every goal of the edge to the full query.
fn congruent(edge: &Edge, goals: &[Goal], budget: &mut Budget) -> Vec<usize> {
    let mut pairs: Vec<(Dynamic, Dynamic)> = vec![];
    let mut held = vec![];
    for (k, (_, _, a, b)) in goals.iter().enumerate() {
        let a = a.dynamic();
        let mut own = vec![];
        // A goal whose operators differ at the top is no smaller as a pair: the full
        // query asks it.
        if !differing_subterms(&a, &b.dynamic(), &mut own) || own.first().is_some_and(|(x, _)| x.ast_eq(&a)) {
            continue;
        }
        if pairs.len() + own.len() > MAX_CONGRUENT_PAIRS {
            continue;
        }
        pairs.extend(own);
        held.push(k);
    }
    if pairs.is_empty() {
        // No candidate, or candidates equal as terms below the top.
        return held;
    }
    if pairs_equal(edge.step, &pairs, budget, edge.query_cap / CONGRUENT_SHARE) {
        held
    } else {
        vec![]
    }
}

/// Adds to `out` the pairs of subterms where `a` and `b` differ below the operators they
/// share (an operator is shared when `b`'s declaration applied to `a`'s operands is `a`
/// itself: the same operator and indices, since Z3 shares equal terms); false past
/// [`MAX_CONGRUENT_PAIRS`].
///
/// Two loads whose heaps differ as heaps (a store one has and the other has not, or in
/// another place) are one pair, the two loads: their bytes can be equal where the heaps
/// are not (default seed 110's `cprop`: a load the tree mover took from before a store of
/// another address, where the pair of heaps could never be shown equal and sent every
/// heap goal of its block to the full query). Where the heaps differ only in bit-vectors
/// (a stored value, an address), those are the pairs, as before.
fn differing_subterms(a: &Dynamic, b: &Dynamic, out: &mut Vec<(Dynamic, Dynamic)>) -> bool {
    differing_below(a, b, out, &mut HashMap::default(), 0)
}

/// Most loads within loads [`differing_below`] looks into (beyond, a load's pair is the
/// two loads).
const MAX_LOAD_DEPTH: usize = 32;

/// The pairs of bit-vector subterms where two heaps differ, or `None` where they differ
/// as heaps or in more than [`MAX_CONGRUENT_PAIRS`] places, by pair of heaps: each pair
/// of heaps is looked into once, however many loads read it.
type HeapPairs = HashMap<(Dynamic, Dynamic), Option<Vec<(Dynamic, Dynamic)>>>;

/// [`differing_subterms`] at `depth` loads within loads, with the heaps looked into so far.
fn differing_below(a: &Dynamic, b: &Dynamic, out: &mut Vec<(Dynamic, Dynamic)>, heaps: &mut HeapPairs, depth: usize) -> bool {
    let mut stack = vec![(a.clone(), b.clone())];
    // A pair of subterms shared by several parents is looked at once.
    let mut seen: HashSet<(Dynamic, Dynamic)> = HashSet::default();
    while let Some((x, y)) = stack.pop() {
        if x.ast_eq(&y) || !seen.insert((x.clone(), y.clone())) {
            continue;
        }
        let n = x.num_children();
        let shared = x.kind() == z3::AstKind::App
            && y.kind() == z3::AstKind::App
            && n > 0
            && n == y.num_children()
            && x.get_sort() == y.get_sort()
            && {
                let (xs, ys) = (x.children(), y.children());
                xs.iter().zip(&ys).all(|(c, d)| c.get_sort() == d.get_sort()) && {
                    let args: Vec<&dyn Ast> = xs.iter().map(|c| c as &dyn Ast).collect();
                    y.decl().apply(&args).ast_eq(&x)
                }
            };
        let (xs, ys) = if shared { (x.children(), y.children()) } else { (vec![], vec![]) };
        if shared && n == 2 && x.decl().kind() == z3::DeclKind::Select && !xs[0].ast_eq(&ys[0]) {
            let key = (xs[0].clone(), ys[0].clone());
            let inner = match heaps.get(&key) {
                Some(known) => known.clone(),
                None => {
                    let mut inner = vec![];
                    let bits = depth < MAX_LOAD_DEPTH
                        && differing_below(&xs[0], &ys[0], &mut inner, heaps, depth + 1)
                        && inner.iter().all(|(p, _)| p.as_array().is_none());
                    let known = bits.then_some(inner);
                    heaps.insert(key, known.clone());
                    known
                }
            };
            match inner {
                Some(pairs) => {
                    stack.extend(pairs);
                    stack.push((xs[1].clone(), ys[1].clone()));
                }
                None => {
                    out.push((x, y));
                    if out.len() > MAX_CONGRUENT_PAIRS {
                        return false;
                    }
                }
            }
        } else if shared {
            stack.extend(xs.into_iter().zip(ys));
        } else {
            out.push((x, y));
            if out.len() > MAX_CONGRUENT_PAIRS {
                return false;
            }
        }
    }
    true
}

/// `t` with every product, quotient and remainder whose operands are not all numerals
/// replaced by an uninterpreted function of its operands (themselves so replaced), one
/// per operation and width: what the inference's queries ask ([`query_goals`]).
///
/// A query that is unsatisfiable (its goals hold) for every interpretation of those
/// functions is so for the real operations, so a proof stays a proof. What the
/// abstraction can add is a model the real operations do not allow, which splits a class
/// the real ones would keep ([`query_goals`] asks the real query then): that only weakens
/// the relation, and no pass needs the arithmetic of these operations (they fold constant
/// ones, which stay numerals here, and move or reuse the others whole, where the same
/// operands give the same application). Bit-blasted, a 64-bit product or quotient is
/// thousands of clauses, and the queries that compared terms under them ran out of their
/// shares by the dozen: `mix64` multiplies by a constant, and default seed 1321's memopt
/// spent its budget on such queries (`unknown`; proved for every run in 5 s with the
/// abstraction), as did most of the 23 of the 61 memopt pairs not proved on seeds
/// 1300-1999 that the abstraction proves. Samples and the observables' queries keep the
/// real operations: a sample's numerals must give them their values.
fn abstracted(t: &Dynamic, memo: &mut HashMap<Dynamic, Dynamic>) -> Dynamic {
    use z3::DeclKind as K;
    // Each node twice: first to push its operands (kept with it), then, once they are
    // rewritten, to rewrite it.
    let mut stack: Vec<(Dynamic, Option<Vec<Dynamic>>)> = vec![(t.clone(), None)];
    while let Some((d, expanded)) = stack.pop() {
        let Some(children) = expanded else {
            if memo.contains_key(&d) {
                continue;
            }
            if d.kind() != z3::AstKind::App || d.num_children() == 0 {
                memo.insert(d.clone(), d);
                continue;
            }
            let children = d.children();
            let operands: Vec<(Dynamic, Option<Vec<Dynamic>>)> = children.iter().filter(|c| !memo.contains_key(c)).map(|c| (c.clone(), None)).collect();
            stack.push((d, Some(children)));
            stack.extend(operands);
            continue;
        };
        if memo.contains_key(&d) {
            continue;
        }
        let new: Vec<Dynamic> = children.iter().map(|c| memo[c].clone()).collect();
        let name = match d.decl().kind() {
            K::Bmul => Some("mul"),
            K::Bsdiv | K::BsdivI => Some("sdiv"),
            K::Budiv | K::BudivI => Some("udiv"),
            K::Bsrem | K::BsremI => Some("srem"),
            K::Burem | K::BuremI => Some("urem"),
            K::Bsmod | K::BsmodI => Some("smod"),
            _ => None,
        };
        let numerals = new.iter().all(|c| c.as_bv().is_some_and(|b| b.as_u64().is_some()));
        let out = match name {
            Some(n) if !numerals && new.len() >= 2 => {
                let bvs: Vec<BV> = new.iter().map(|c| c.as_bv().expect("bit-vector operands")).collect();
                let mut acc = bvs[0].clone();
                for b in &bvs[1..] {
                    acc = super::uninterpreted(n, &acc, b);
                }
                Dynamic::from_ast(&acc)
            }
            _ if new.iter().zip(&children).all(|(a, b)| a == b) => d.clone(),
            _ => {
                let refs: Vec<&dyn Ast> = new.iter().map(|c| c as &dyn Ast).collect();
                d.decl().apply(&refs)
            }
        };
        memo.insert(d, out);
    }
    memo[t].clone()
}

/// The real query after a model of the abstraction alone may take `1 / REAL_SHARE` of
/// what is left of the query's share ([`query_goals`]).
const REAL_SHARE: u64 = 4;

/// One query over `goals` within `cap`: `Some(false)` when they hold, `Some(true)` when a
/// model split their classes, `None` when the query's share ran out. The query reads
/// products, quotients and remainders as uninterpreted functions ([`abstracted`]).
fn query_goals(p: &Pair, class: &mut [usize], goals: &[Goal], edge: &Edge, limit: usize, cap: u64, budget: &mut Budget) -> Result<Option<bool>, Unknown> {
    let refs: Vec<Bool> = goals.iter().map(|(_, _, a, b)| a.eq(b).not()).collect();
    let mut query: Vec<Bool> = relevant(edge.step, &refs).into_iter().cloned().collect();
    query.push(Bool::or(&refs));
    let mut memo = HashMap::default();
    let opaque: Vec<Bool> = query.iter().map(|b| abstracted(&Dynamic::from_ast(b), &mut memo).as_bool().expect("abstracting keeps the sort")).collect();
    let ask = |assertions: &[Bool], budget: &mut Budget, cap: u64| {
        let s = super::bitblast_solver_with(assertions);
        let r = budget.check_within(&s, cap);
        (r, if r == SatResult::Sat { s.get_model() } else { None })
    };
    let start = budget.left();
    let (mut r, mut model) = ask(&opaque, budget, cap);
    // A model of the abstraction that the real operations do not allow (its values break
    // an assumption or leave the goals equal) may split a class the relation can keep:
    // the real query decides where it can within a share of what is left of the query's;
    // where it cannot, the abstraction's model splits. Given all that was left, the real
    // query kept memory seeds 1319 and 1412's memopt proved for every run (`proved (bound
    // 2)` with the share), but made as many other pairs run out of budget again (loops
    // seeds 1768 and 1781's memopt, proved with the share).
    let abstract_only = |m: &z3::Model| !query.iter().all(|a| m.eval(a, true).and_then(|v| v.as_bool()) == Some(true));
    if model.as_ref().is_some_and(|m| opaque.iter().zip(&query).any(|(o, q)| !o.ast_eq(q)) && abstract_only(m)) {
        let left = cap.saturating_sub(start - budget.left());
        let (real, real_model) = ask(&query, budget, left / REAL_SHARE);
        if real != SatResult::Unknown || budget.left() == 0 {
            (r, model) = (real, real_model);
        }
    }
    match r {
        SatResult::Unsat => Ok(Some(false)),
        SatResult::Unknown if budget.left() == 0 => Err(Unknown::Budget),
        // The query's share ran out: its goals are not shown.
        SatResult::Unknown => Ok(None),
        SatResult::Sat => {
            let m = model.expect("a model after sat");
            let mut moved = model_groups(p, class, goals, edge, limit, &m);
            if moved.is_empty() {
                // The model does not say which (an abstraction's, in which the real
                // operations leave the goals equal): the goals leave their classes.
                moved = term_groups(goals);
            }
            for ns in moved {
                regroup(class, &ns);
            }
            Ok(Some(true))
        }
    }
}

/// A model of the step's assumptions alone, within `1 / MODEL_SHARE` of a query's share,
/// asked once per step (its relation does not change while its successors' classes
/// split): entry states the relation allows, in which the goals of every edge from the
/// step are evaluated. Random samples seldom satisfy an assumption about a load or a
/// division (`load.i64.s16(A)` is the class of `%t`), and every goal they could not split
/// went to the solver, in queries that could run out of their shares: loops seed 18's
/// memopt ran out of budget so, and is proved for every run with the model.
///
/// A block whose model the solver did not find within its share is not asked again in
/// the inference, when its step is encoded anew from a weaker relation: the assumptions
/// that made it hard (a 64-bit division's definition, loads under it) are mostly still
/// there. Default seed 11's memopt asked 51 such models, 47 of them undecided: 5.0M of the
/// 10M units of its simulation check, and its observables had too little left.
fn relation_model<'a>(edge: &Edge<'a>, budget: &mut Budget) -> Option<&'a z3::Model> {
    edge.step
        .model
        .get_or_init(|| {
            let block = edge.step.block;
            if edge.step.assumed.is_empty() || edge.undecided_models.borrow().contains(&block) {
                return None;
            }
            let s = super::bitblast_solver_with(&edge.step.assumed);
            match budget.check_within(&s, (edge.query_cap / MODEL_SHARE).max(1)) {
                SatResult::Sat => s.get_model(),
                SatResult::Unsat => None,
                SatResult::Unknown => {
                    edge.undecided_models.borrow_mut().insert(block);
                    None
                }
            }
        })
        .as_ref()
}

/// A step's [`relation_model`] may take `1 / MODEL_SHARE` of a query's share.
const MODEL_SHARE: u64 = 4;

/// Every class with a goal, split by the model's values: members equal to the first stay,
/// the others form groups by value; returns the groups that leave.
fn model_groups(p: &Pair, class: &[usize], goals: &[Goal], edge: &Edge, limit: usize, m: &z3::Model) -> Vec<Vec<usize>> {
    let mut moved = vec![];
    let mut by_class: Vec<usize> = goals.iter().map(|g| g.0).collect();
    by_class.dedup();
    for r in by_class {
        let mut groups: Vec<(Val, Vec<usize>)> = vec![];
        for n in (0..p.slots.len()).filter(|&n| class[n] == r) {
            let v = edge.value(p, n, limit).expect("evaluated above");
            let g = groups
                .iter_mut()
                .find(|(w, _)| w.same_term(&v) || m.eval(&w.eq(&v), true).and_then(|b| b.as_bool()).unwrap_or(false));
            match g {
                Some((_, ns)) => ns.push(n),
                None => groups.push((v, vec![n])),
            }
        }
        moved.extend(groups.into_iter().skip(1).map(|(_, ns)| ns));
    }
    moved
}

/// The observables, under the inferred relation: every block's two steps must agree
/// wherever the source is valid. Each block is asked first by congruence
/// ([`observables_congruent`]: only the subterms where the two steps differ, within a
/// small share), then whole, within [`OBSERVABLES_SHARE`] of what is left of the budget
/// (all of it in the `last` try), and where that is undecided, within as much again, by
/// each way they can differ (how they end, the value, the trap's code, the heap, the
/// trace, each callframe variable) in groups by the assumptions each depends on.
/// Asked whole, one hard way to differ takes every assumption any way needs into one query
/// (default seed 20's memopt: proved in 2.6 s with the groups, in 13.6 s without).
fn observables_agree(p: &Pair, steps: &[Step], class: &[Vec<usize>], last: bool, budget: &mut Budget, notes: &mut Notes) -> Result<Tried, Unknown> {
    let valid = |st: &Step| st.x.kind.eq(BV::from_u64(encode::END_INVALID, 8)).not();
    let share = (budget.left() / QUERY_SHARE).max(1);
    let entered = entered(p, steps);
    for ((st, _), class) in steps.iter().zip(&entered).zip(class).filter(|((_, &e), _)| e) {
        if observables_congruent(st, budget, share / CONGRUENT_SHARE) {
            continue;
        }
        let valid = valid(st);
        let differences = super::outcome_differences(&st.x, &st.y, true);
        let asked = relevant(st, &[valid.clone(), Bool::or(&differences)]);
        // With every assumption in the query, a contradiction among them answers it.
        if asked.len() < st.assumed.len() && contradictory(&st.assumed, budget, share / CONGRUENT_SHARE) {
            continue;
        }
        // Whole first, within the block's cap; where that is undecided, the ways the
        // steps can differ in groups by the assumptions each depends on, fewer first,
        // within another cap (as [`goal_groups`] asks the inference's goals).
        let cap = if last { budget.left() } else { (budget.left() / OBSERVABLES_SHARE).max(1) };
        let start = budget.left();
        let mut queries: Vec<(Vec<&Bool>, Vec<Bool>)> = vec![(asked, differences.clone())];
        let mut k = 0;
        while let Some((assumed, ds)) = queries.get(k) {
            let s = super::bitblast_solver_with(assumed.iter().copied().chain([&valid]));
            s.assert(&Bool::or(ds));
            let left = (2 * cap).saturating_sub(start - budget.left());
            let within = if k == 0 { left.min(cap) } else { left };
            match budget.check_within(&s, within) {
                // The whole query answers for every group.
                SatResult::Unsat if k == 0 => break,
                SatResult::Unsat => {}
                SatResult::Sat => {
                    let (how, control) = step_difference(p, st, &s.get_model().expect("a model after sat"));
                    notes.note(|| format!("{}: {how}{}", st.block, unjoined(p, st, class)));
                    return Ok(Tried::Differs { heaps_parted: !control && !st.entry && !heaps_joined(p, class) });
                }
                SatResult::Unknown if budget.left() == 0 => {
                    notes.note(|| format!("budget during the observables of {}", st.block));
                    return Err(Unknown::Budget);
                }
                SatResult::Unknown => {
                    let groups = if k == 0 { difference_groups(st, &valid, &differences) } else { vec![] };
                    // Its share ran out, and no groups are left to ask: this try fails,
                    // and the next has what is left.
                    if groups.len() < 2 {
                        notes.note(|| format!("{}: undecided within its share of the observables", st.block));
                        return Ok(Tried::Undecided);
                    }
                    queries.extend(groups);
                }
            }
            k += 1;
        }
    }
    Ok(Tried::Proved)
}

/// The ways `differences` two steps of `st` can differ (each on top of `valid`), in groups
/// by the assumptions each depends on, fewer first: each group with its assumptions.
fn difference_groups<'a>(st: &'a Step, valid: &Bool, differences: &[Bool]) -> Vec<(Vec<&'a Bool>, Vec<Bool>)> {
    let mut groups = grouped_by_assumptions(differences.iter().cloned(), |d| relevant_indices(&st.assumed_symbols, &[valid.clone(), d.clone()]));
    groups.sort_by_key(|(on, _)| on.len());
    groups.into_iter().map(|(on, ds)| (on.iter().map(|&k| &st.assumed[k]).collect(), ds)).collect()
}

/// Whether a step's relation cannot hold: its assumptions together are unsatisfiable
/// (within `cap`), so no pair of states enters the block related, and its observables
/// agree on every one that does. The observables' query asks only the assumptions that
/// share a symbol with its goals ([`relevant`]), which leaves out a contradiction among
/// the others; where it asks them all, the observables' query finds the contradiction
/// itself, and this one is not asked.
fn contradictory(assumed: &[Bool], budget: &mut Budget, cap: u64) -> bool {
    if assumed.is_empty() {
        return false;
    }
    let s = super::bitblast_solver_with(assumed);
    budget.check_within(&s, cap.max(1)) == SatResult::Unsat
}

/// Whether the two heaps are in one class of `class`.
fn heaps_joined(p: &Pair, class: &[usize]) -> bool {
    matches!((p.index.get(&Slot::Heap(Side::Src)), p.index.get(&Slot::Heap(Side::Tgt))), (Some(&x), Some(&y)) if class[x] == class[y])
}

/// How a try of the check ended, short of running out of the budget.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tried {
    Proved,
    /// Under the relation it inferred, a block's observables differ in a model; whether
    /// they differ where the run stops or goes on to the same block (not in where it goes)
    /// with the two heaps parted by the relation at that block's entry.
    Differs { heaps_parted: bool },
    /// A block's observables were not decided within their share.
    Undecided,
}

/// Whether the partitions `finer` refine `coarser` at every block: two slots of a class
/// of `finer` are in one class of `coarser` (each class is named by its first slot).
fn refines(finer: &[Vec<usize>], coarser: &[Vec<usize>]) -> bool {
    finer.iter().zip(coarser).all(|(f, c)| f.iter().enumerate().all(|(i, &r)| c[i] == c[r]))
}

/// A block's observables may take `1 / OBSERVABLES_SHARE` of what is left of the budget
/// (but in the last try): beyond it, the try fails and the next one starts on the rest.
/// Default seed 0's memopt spent half its budget on the first try's relation, whose
/// observables at b13 (a difference the solver could not find in the other half) then
/// took the rest, where the second try, from another first partition, proves it in an
/// eighth.
const OBSERVABLES_SHARE: u64 = 4;

/// Whether the two steps of `st` agree by congruence: where their observables (how they
/// end, the value, the code, the heap, the trace, the callframe) differ as terms, they
/// are the same operators down to at most [`MAX_CONGRUENT_PAIRS`] pairs of differing
/// subterms, and the solver shows each pair equal under the relation, within `cap`
/// (sufficient: equal operands give equal results, whatever the source's validity); true
/// with no query when they are the same terms. A pass that changed one operand deep
/// inside a computation, or a stored value deep in a heap's chain of stores, is asked
/// about that operand alone.
fn observables_congruent(st: &Step, budget: &mut Budget, cap: u64) -> bool {
    let (xs, ys) = (observable_terms(&st.x), observable_terms(&st.y));
    if xs.len() != ys.len() {
        return false;
    }
    // Each definition's entry value as its class's value, as the relation assumes.
    let (xs, ys): (Vec<Dynamic>, Vec<Dynamic>) = (xs.iter().map(|t| st.rewritten(t)).collect(), ys.iter().map(|t| st.rewritten(t)).collect());
    let mut pairs: Vec<(Dynamic, Dynamic)> = vec![];
    for (x, y) in xs.into_iter().zip(ys) {
        if !differing_subterms(&x, &y, &mut pairs) {
            return false;
        }
    }
    if pairs.is_empty() {
        return true;
    }
    pairs_equal(st, &pairs, budget, cap)
}

/// Whether the solver shows each pair of subterms equal under the relation assumed at
/// `st`'s entry, within `cap` (the congruence queries of [`congruent`] and
/// [`observables_congruent`]).
///
/// The pairs are asked in groups by the assumptions they depend on, fewer first, all
/// groups within `cap`: a pair that needs no assumption is not asked with one whose
/// assumptions are hard (as [`goal_groups`] does for the inference's goals).
fn pairs_equal(st: &Step, pairs: &[(Dynamic, Dynamic)], budget: &mut Budget, cap: u64) -> bool {
    let mut groups = grouped_by_assumptions(pairs.iter().map(|(x, y)| x.eq(y).not()), |r| relevant_indices(&st.assumed_symbols, std::slice::from_ref(r)));
    groups.sort_by_key(|(on, _)| on.len());
    let start = budget.left();
    groups.iter().all(|(on, refs)| {
        let left = cap.saturating_sub(start - budget.left());
        if left == 0 {
            return false;
        }
        let s = super::bitblast_solver_with(on.iter().map(|&k| &st.assumed[k]));
        s.assert(Bool::or(refs));
        budget.check_within(&s, left) == SatResult::Unsat
    })
}

/// The terms of a step whose differences [`super::outcome_differences`] lists, in one order.
fn observable_terms(o: &SymOutcome) -> Vec<Dynamic> {
    let mut out = vec![Dynamic::from_ast(&o.kind), Dynamic::from_ast(&o.value), Dynamic::from_ast(&o.code), Dynamic::from_ast(&o.state.heap)];
    out.push(Dynamic::from_ast(&o.state.trace.len));
    out.push(Dynamic::from_ast(&o.state.trace.kind));
    out.extend(o.state.trace.args.iter().map(|a| Dynamic::from_ast(a)));
    out.extend(o.state.callframe.iter().map(|c| Dynamic::from_ast(c)));
    out
}

/// For [`explain`], at a block whose steps differ: the source's locals that the
/// relation does not join at its entry to the target's local of the same name (where
/// the source's local is live there and the target has one), then the callframe
/// variables and the heap not joined to the target's (a heap may be related through a
/// pending store instead), the first 12.
fn unjoined(p: &Pair, st: &Step, class: &[usize]) -> String {
    if st.entry {
        return String::new();
    }
    let tgt: HashMap<&str, Local> = p.tgt.locals.iter().map(|(l, d)| (d.name.as_str(), l)).collect();
    let live = live_locals(p.src);
    let mut out: Vec<String> = vec![];
    for l in p.src.locals.keys().filter(|l| live[st.block.index()][l.index()]) {
        let name = &p.src.locals[l].name;
        let Some(t) = tgt.get(name.as_str()) else { continue };
        match (p.index.get(&Slot::Local(Side::Src, l)), p.index.get(&Slot::Local(Side::Tgt, *t))) {
            (Some(&x), Some(&y)) if class[x] == class[y] => {}
            (Some(_), Some(_)) => out.push(format!("%{name}")),
            _ => out.push(format!("%{name} (no slot)")),
        }
    }
    let joined = |x: Option<&usize>, y: Option<&usize>| matches!((x, y), (Some(&x), Some(&y)) if class[x] == class[y]);
    for (v, d) in p.src.cfvars.iter() {
        let t = p.tgt.cfvars.iter().find(|(_, e)| e.name == d.name).map(|(w, _)| w);
        if t.is_some_and(|w| !joined(p.index.get(&Slot::Cf(Side::Src, v)), p.index.get(&Slot::Cf(Side::Tgt, w)))) {
            out.push(format!("@{}", d.name));
        }
    }
    if !heaps_joined(p, class) {
        out.push("the heap".into());
    }
    let n = out.len();
    out.truncate(12);
    if n == 0 {
        return "; every live local, callframe variable and the heap joined to its namesake at entry".into();
    }
    format!("; not joined to their namesakes at entry: {}{}", out.join(" "), if n > 12 { format!(" and {} more", n - 12) } else { String::new() })
}

/// How the two steps of `st` differ in model `m` (for [`explain`]): the first of their
/// ending, next block, return value, trap code, trace, callframe variables and heap (the
/// last two where the run stops) that differs; and whether that is where they go (their
/// endings or next blocks).
fn step_difference(p: &Pair, st: &Step, m: &z3::Model) -> (String, bool) {
    let num = |v: &BV| m.eval(v, true).and_then(|x| x.as_u64()).unwrap_or(u64::MAX);
    let (kx, ky) = (num(&st.x.kind), num(&st.y.kind));
    let (vx, vy) = (num(&st.x.value), num(&st.y.value));
    let (cx, cy) = (num(&st.x.code), num(&st.y.code));
    let end = |k: u64, v: u64, c: u64| match k {
        encode::END_RETURN => "return".to_string(),
        encode::END_DIVIDE => "divide trap".to_string(),
        encode::END_CHECK => format!("check trap {c}"),
        encode::END_INVALID => "invalid".to_string(),
        encode::END_CONTINUE => format!("to b{v}"),
        _ => format!("kind {k}"),
    };
    let term = match &p.src.blocks[st.block].term {
        tandem_core::ir::Terminator::Branch { .. } => "br",
        tandem_core::ir::Terminator::Jump(_) => "jump",
        tandem_core::ir::Terminator::Return(_) => "ret",
        tandem_core::ir::Terminator::Switch { .. } => "switch",
    };
    if kx != ky {
        return (format!("ends differ (source {}, target {}; {term})", end(kx, vx, cx), end(ky, vy, cy)), true);
    }
    if vx != vy {
        let next = kx == encode::END_CONTINUE;
        return (format!("{} differs (source {}, target {}; {term})", if next { "next block" } else { "value" }, end(kx, vx, cx), end(ky, vy, cy)), next);
    }
    let how = |text: String| (text, false);
    if cx != cy {
        return how("check code differs".into());
    }
    let (tx, ty) = (&st.x.state.trace, &st.y.state.trace);
    if num(&tx.len) != num(&ty.len) {
        return how(format!("trace length differs ({})", end(kx, vx, cx)));
    }
    for ((v, d), (x, y)) in p.src.cfvars.iter().zip(st.x.state.callframe.iter().zip(&st.y.state.callframe)) {
        if kx != encode::END_CONTINUE && num(x) != num(y) {
            return how(format!("callframe @{} differs at the stop ({}; {v})", d.name, end(kx, vx, cx)));
        }
    }
    let heap_same = m.eval(&st.x.state.heap.eq(&st.y.state.heap), true).and_then(|b| b.as_bool());
    if kx != encode::END_CONTINUE && heap_same != Some(true) {
        return how(format!("heap differs at the stop ({})", end(kx, vx, cx)));
    }
    how(format!("trace event differs ({})", end(kx, vx, cx)))
}

/// The uninterpreted constants (the entry state's symbols) that `terms` mention, each once,
/// in the order a walk of `terms` meets them: an order fixed by the terms alone, unlike a
/// hash set's (whose seed differs per process), so that the samples drawn for them and every
/// answer that follows are the same on every run.
fn symbols(terms: &[Dynamic]) -> Vec<Dynamic> {
    let mut seen: HashSet<Dynamic> = HashSet::default();
    let mut out = vec![];
    let mut stack: Vec<Dynamic> = terms.to_vec();
    while let Some(d) = stack.pop() {
        if !seen.insert(d.clone()) {
            continue;
        }
        if d.kind() != z3::AstKind::App {
            continue;
        }
        if d.num_children() == 0 {
            if is_symbol(&d) {
                out.push(d);
            }
        } else {
            stack.extend(d.children());
        }
    }
    out
}

/// Whether `d`, an application without arguments, is an uninterpreted constant: not a
/// Boolean or a numeral. (Not by its declaration's kind: the `z3` crate numbers the kinds
/// as a newer Z3 does than the system's 4.8, and `Uninterpreted` differs between them.)
/// Before, [`symbols`] counted numerals too: [`relevant`] joined every two assumptions
/// that mention the same numeral, and [`sample_split`] gave numerals random values.
fn is_symbol(d: &Dynamic) -> bool {
    d.kind() == z3::AstKind::App && d.num_children() == 0 && d.as_bool().is_none() && !is_numeral(d)
}

/// Whether `d` is a bit-vector numeral.
fn is_numeral(d: &Dynamic) -> bool {
    d.as_bv().is_some_and(|b| b.as_u64().is_some())
}

/// The two sides of `a` when it is an equation `x = y`.
fn equation_sides(a: &Bool) -> Option<(Dynamic, Dynamic)> {
    let a = Dynamic::from_ast(a);
    if a.kind() != z3::AstKind::App || a.decl().kind() != z3::DeclKind::Eq || a.num_children() != 2 {
        return None;
    }
    Some((a.nth_child(0)?, a.nth_child(1)?))
}

/// The assumptions of `st` that `goals` depend on: those that share a symbol with them,
/// or with an assumption that does, and so on. The others constrain symbols the goals do
/// not mention, so leaving them out changes no answer and spares the solver their terms.
fn relevant<'a>(st: &'a Step, goals: &[Bool]) -> Vec<&'a Bool> {
    let taken = relevant_indices(&st.assumed_symbols, goals);
    taken.into_iter().map(|k| &st.assumed[k]).collect()
}

/// [`relevant`]'s assumptions by their indices, in order, given each assumption's
/// symbols.
fn relevant_indices(assumed_symbols: &[Vec<Dynamic>], goals: &[Bool]) -> Vec<usize> {
    let mut syms: HashSet<Dynamic> = symbols(&goals.iter().map(|g| Dynamic::from_ast(g)).collect::<Vec<_>>()).into_iter().collect();
    let mut taken = vec![false; assumed_symbols.len()];
    let mut grew = true;
    while grew {
        grew = false;
        for (k, a) in assumed_symbols.iter().enumerate() {
            if !taken[k] && a.iter().any(|d| syms.contains(d)) {
                taken[k] = true;
                syms.extend(a.iter().cloned());
                grew = true;
            }
        }
    }
    (0..taken.len()).filter(|&k| taken[k]).collect()
}

/// Random concrete entry states tried per edge before the solver is asked (and one more,
/// [`sample_group`]'s state of zeros).
const SAMPLES: usize = 6;

/// Tries [`SAMPLES`] concrete entry states for an edge whose relation the terms alone do
/// not show: numerals for the symbols that the classes with goals (and the assumptions
/// they depend on) mention, chosen by the deterministic generator `rng`; the terms and
/// symbols handled are added to `work`. A state that satisfies those assumptions and
/// gives two members of a class different values is a model of the edge's query for that
/// class: returns the groups that leave their classes, as [`query_split`] does with a
/// model ([`sample_classes`]). Heaps are compared by their fingerprints ([`fingerprints`]).
fn sample_split(p: &Pair, class: &[usize], goals: &[Goal], edge: &Edge, limit: usize, rng: &mut u64, work: &mut usize) -> Option<Vec<Vec<usize>>> {
    let members = sampled_members(p, class, goals, edge, limit);
    let moved = sample_classes(&edge.step.assumed, &edge.step.assumed_symbols, &members, rng, work);
    (!moved.is_empty()).then_some(moved)
}

/// [`sample_split`] for the classes `members` (each its members and their values) under
/// the assumptions `assumed` (with their symbols, `assumed_symbols`): all classes
/// together first, against all the assumptions they depend on ([`sample_group`]); where
/// no sample splits any, the classes by the assumptions each depends on, each such group
/// sampled apart. Returns the groups that leave their classes.
fn sample_classes(assumed: &[Bool], assumed_symbols: &[Vec<Dynamic>], members: &[Vec<(usize, BV)>], rng: &mut u64, work: &mut usize) -> Vec<Vec<usize>> {
    if members.is_empty() {
        return vec![];
    }
    // The assumptions the classes `of` depend on, by their indices.
    let on = |of: &[&[(usize, BV)]]| {
        let bools: Vec<Bool> = of.iter().flat_map(|ms| ms.iter().map(|(_, b)| b.eq(b))).collect();
        relevant_indices(assumed_symbols, &bools)
    };
    let all: Vec<&[(usize, BV)]> = members.iter().map(|ms| &ms[..]).collect();
    let joint: Vec<&Bool> = on(&all).into_iter().map(|k| &assumed[k]).collect();
    let moved = sample_group(&joint, &all, rng, work);
    if !moved.is_empty() {
        return moved;
    }
    let groups = grouped_by_assumptions(all.iter().copied(), |&ms| on(&[ms]));
    if groups.len() < 2 {
        return vec![];
    }
    let mut moved = vec![];
    for (own, classes) in &groups {
        let assumed: Vec<&Bool> = own.iter().map(|&k| &assumed[k]).collect();
        moved.extend(sample_group(&assumed, classes, rng, work));
    }
    moved
}

/// One sampling for classes `classes` (each its members and their values) under the
/// assumptions `assumed`, those the classes depend on: the groups that leave their
/// classes in the first sample that satisfies the assumptions and tells two members of
/// some class apart ([`sample_classes`]).
///
/// Sampling classes that share no assumption apart is sound: the assumptions a group
/// does not depend on share no symbol with it, so a state of the whole relation exists
/// with the sample's values for the group's symbols whenever the relation has one (and
/// where it has none, a split only weakens it). Before, only all classes together were
/// sampled, and one class whose assumptions a random state seldom satisfies (a load's, a
/// pending store's) failed every sample for all of them: loops seed 0's memopt asked the
/// solver 248 queries (8.4M of its 10M units), most of them to split a free local from a
/// constant's definition, one query per split; with the groups sampled apart it is
/// proved for every run.
fn sample_group(assumed: &[&Bool], classes: &[&[(usize, BV)]], rng: &mut u64, work: &mut usize) -> Vec<Vec<usize>> {
    let mut terms: Vec<Dynamic> = classes.iter().flat_map(|ms| ms.iter().map(|(_, b)| Dynamic::from_ast(b))).collect();
    terms.extend(assumed.iter().map(|a| Dynamic::from_ast(*a)));
    let mut syms: Vec<Dynamic> = symbols(&terms);
    syms.sort_by_cached_key(|d| d.decl().name());
    // A symbol an assumption equates with a numeral (a class with a constant's
    // definition) takes that numeral in every sample: random values would seldom satisfy
    // the assumption, and every split would go to the solver.
    let fixed: Vec<Option<Dynamic>> = syms.iter().map(|d| assumed.iter().find_map(|a| equated_numeral(a, d))).collect();
    // A symbol an assumption equates with a term without it (a class's symbol and a
    // definition's value, `v = load(A)`) takes the term's value in the sample, so that the
    // assumption holds: random values would seldom satisfy it, and the loads of memopt's
    // definitions went to the solver, one query per split (loops seed 15's memopt).
    let defined: Vec<(usize, Dynamic)> = assumed
        .iter()
        .filter_map(|a| {
            let (d, t) = equated_term(a)?;
            let k = syms.iter().position(|s| *s == d)?;
            fixed[k].is_none().then_some((k, t))
        })
        .collect();
    // The symbols the assumptions mention: in a last sample, after the random ones, each
    // is zero (a heap all zero bytes), the others random. Generated code computes zero
    // from zeros more often than anything from random values (`mul(urem(x, ..), ..) = 0`,
    // `ashr(shl(y, 48), 48)` equal to a load of zero bytes), so that sample satisfies
    // assumptions no random one does, and the goals' own symbols still tell members apart
    // (memory seed 0's memopt asked the solver for each such split, and most queries ran
    // out of their share).
    let assumed_terms: Vec<Dynamic> = assumed.iter().map(|a| Dynamic::from_ast(*a)).collect();
    let quiet = symbols(&assumed_terms);
    for round in 0..=SAMPLES {
        *work += SIMPLIFY_WORK * terms.len() / 16;
        let mut values: Vec<Dynamic> = syms
            .iter()
            .zip(&fixed)
            .map(|(d, n)| match n {
                Some(n) => n.clone(),
                None if round == SAMPLES && quiet.contains(d) => zero_value(d),
                None => sample_value(d, round, rng),
            })
            .collect();
        // Each pass gives every defined symbol its term's value under the values so far: a
        // chain of definitions as deep as the passes settles.
        for _ in 0..DEFINING_PASSES.min(defined.len()) {
            *work += SIMPLIFY_WORK * defined.len();
            for (k, t) in &defined {
                let pairs: Vec<(&Dynamic, &Dynamic)> = syms.iter().zip(&values).collect();
                let v = t.substitute(&pairs).simplify();
                if symbols(std::slice::from_ref(&v)).is_empty() {
                    values[*k] = v;
                }
            }
        }
        let pairs: Vec<(&Dynamic, &Dynamic)> = syms.iter().zip(&values).collect();
        if !evaluated(&assumed_terms, &pairs).iter().all(|a| a.as_bool().and_then(|b| b.as_bool()) == Some(true)) {
            continue;
        }
        let members: Vec<Dynamic> = classes.iter().flat_map(|ms| ms.iter().map(|(_, b)| Dynamic::from_ast(b))).collect();
        let values = evaluated(&members, &pairs);
        let mut at = 0;
        let mut moved: Vec<Vec<usize>> = vec![];
        for ms in classes {
            moved.extend(grouped_values(ms, &values[at..at + ms.len()]));
            at += ms.len();
        }
        if !moved.is_empty() {
            return moved;
        }
    }
    vec![]
}

/// Passes of [`sample_group`] over the symbols the assumptions define.
const DEFINING_PASSES: usize = 3;

/// The symbol `a` equates with a term that does not mention it, and that term, where `a`
/// is `d = t` or `t = d` (the left side first).
fn equated_term(a: &Bool) -> Option<(Dynamic, Dynamic)> {
    let (x, y) = equation_sides(a)?;
    let (d, t) = if is_symbol(&x) { (x, y) } else if is_symbol(&y) { (y, x) } else { return None };
    (!symbols(std::slice::from_ref(&t)).contains(&d)).then_some((d, t))
}

/// The numeral `a` equates `d` with, where `a` is `d = n` or `n = d`.
fn equated_numeral(a: &Bool, d: &Dynamic) -> Option<Dynamic> {
    let (x, y) = equation_sides(a)?;
    match () {
        _ if &x == d && is_numeral(&y) => Some(y),
        _ if &y == d && is_numeral(&x) => Some(x),
        _ => None,
    }
}

/// Per class with a goal, its members and their values after the step, when there are
/// two or more: bit-vectors as they are, heaps by their fingerprints ([`fingerprints`]).
fn sampled_members(p: &Pair, class: &[usize], goals: &[Goal], edge: &Edge, limit: usize) -> Vec<Vec<(usize, BV)>> {
    let mut classes: Vec<usize> = goals.iter().map(|g| g.0).collect();
    classes.sort();
    classes.dedup();
    let mut members = vec![];
    for &r in &classes {
        let mut bits = vec![];
        let mut heaps = vec![];
        for n in (0..p.slots.len()).filter(|&n| class[n] == r) {
            match edge.value(p, n, limit) {
                Some(Val::Bv(b)) => bits.push((n, b)),
                Some(Val::Heap(h)) => heaps.push((n, h)),
                None => {
                    bits.clear();
                    heaps.clear();
                    break;
                }
            }
        }
        let ms = if heaps.is_empty() { bits } else { fingerprints(&heaps) };
        if ms.len() > 1 {
            members.push(ms);
        }
    }
    members
}

/// Most addresses a heap's fingerprint reads.
const MAX_PROBES: usize = 256;

/// Each heap's fingerprint: a 64-bit sum of its bytes at the addresses the heaps' chains
/// of stores write below the stores all of them share at their tops (up to
/// [`MAX_PROBES`]), each byte weighed by its own odd factor, so that heaps are sampled as
/// bit-vectors are. Equal heaps have equal fingerprints, so where a sample gives two
/// members different fingerprints, the two heaps differ in that state and the split is a
/// model's; two heaps that differ may share a fingerprint (a byte outside the probes, sums
/// that cancel), and then the solver decides, as it did for every heap before: default
/// seed 0's memopt gave 990,000 of its 1.5M units to two queries of a heap whose chains
/// differ in one stored address, which a sample tells apart. The stores shared at the
/// top write the same bytes in every heap, and the differences lie below them (default
/// seed 20's memopt: a read-modify-write at the bottom of chains of 70 stores).
fn fingerprints(heaps: &[(usize, Array)]) -> Vec<(usize, BV)> {
    let chains: Vec<Vec<(BV, BV)>> = heaps
        .iter()
        .map(|(_, h)| {
            let mut chain = vec![];
            let mut cur = h.clone();
            while let Some((below, a, byte)) = encode::top_store(&cur) {
                chain.push((a, byte));
                cur = below;
            }
            chain
        })
        .collect();
    let shared = (0..chains.iter().map(|c| c.len()).min().unwrap_or(0))
        .take_while(|&i| chains.iter().all(|c| c[i].0.ast_eq(&chains[0][i].0) && c[i].1.ast_eq(&chains[0][i].1)))
        .count();
    let mut probes: Vec<BV> = vec![];
    for (a, _) in chains.iter().flat_map(|c| &c[shared..]) {
        if probes.len() == MAX_PROBES {
            break;
        }
        if !probes.iter().any(|q| q.ast_eq(a)) {
            probes.push(a.clone());
        }
    }
    let weight = |i: usize| BV::from_u64((2 * i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15), 64);
    heaps
        .iter()
        .map(|(n, h)| {
            let sum = probes.iter().enumerate().fold(BV::from_u64(0, 64), |acc, (i, a)| {
                let byte = h.select(a).as_bv().expect("a heap holds bytes").zero_ext(56);
                acc.bvadd(&byte.bvmul(&weight(i)))
            });
            (*n, sum)
        })
        .collect()
}

/// Zero for symbol `d`: a bit-vector's, or a heap of zero bytes.
fn zero_value(d: &Dynamic) -> Dynamic {
    match d.as_bv() {
        Some(b) => Dynamic::from_ast(&BV::from_u64(0, b.get_size())),
        None => Dynamic::from_ast(&Array::const_array(&Sort::bitvector(32), &BV::from_u64(0, 8))),
    }
}

/// A numeral for symbol `d` in sample `round`: in the first round small values, in odd
/// rounds any value, in the other rounds small values, edge values (all ones, the sign
/// bit) and any value mixed, so that equalities, ranges and signs are hit; a heap symbol
/// gets a constant array.
///
/// The rounds of any values alone are for the terms generated code computes with `and`
/// and products: where every round mixed small and edge values, some symbol of such a
/// term was small or an edge value in nearly every round, and `and(x, mul(y, z))` was
/// zero in every sample (loops seed 303's memopt: goals of a 64-bit `and` of two products
/// went to the solver, which could not show them nonzero within their shares; its first
/// try's queries took 1.3M units, 0.43M with these rounds).
fn sample_value(d: &Dynamic, round: usize, rng: &mut u64) -> Dynamic {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    let r = *rng;
    let v = match (round, r % 4) {
        (0, _) => r % 5,
        _ if round % 2 == 1 => r,
        (_, 0) => r % 5,
        (_, 1) => [u64::MAX, 1 << 31, 1 << 63, (1 << 31) - 1][(r >> 8) as usize % 4],
        _ => r >> 1,
    };
    match d.as_bv() {
        Some(b) => Dynamic::from_ast(&BV::from_u64(v, b.get_size())),
        None => Dynamic::from_ast(&Array::const_array(&Sort::bitvector(32), &BV::from_u64(v & 0xff, 8))),
    }
}

/// `terms` with `pairs` substituted and simplified, as one term: the terms of a sample
/// share most of their subterms (the same state), which one substitution and one
/// simplification rewrite once, where a substitution per term rewrote them again for each
/// (and set up Z3's rewriter each time): per member, they were a quarter of the
/// simulation check's time.
fn evaluated(terms: &[Dynamic], pairs: &[(&Dynamic, &Dynamic)]) -> Vec<Dynamic> {
    if terms.len() < 2 {
        return terms.iter().map(|t| t.substitute(pairs).simplify()).collect();
    }
    // The terms as the arguments of an uninterpreted function, which the simplifier
    // leaves as it is.
    let sorts: Vec<Sort> = terms.iter().map(|t| t.get_sort()).collect();
    let domain: Vec<&Sort> = sorts.iter().collect();
    let args: Vec<&dyn Ast> = terms.iter().map(|t| t as &dyn Ast).collect();
    let all = z3::FuncDecl::new("terms", &domain, &Sort::bool()).apply(&args);
    all.substitute(pairs).simplify().children()
}

/// The members `ms` grouped by their `values` (numerals), without the first group;
/// nothing when some value is not a numeral.
fn grouped_values(ms: &[(usize, BV)], values: &[Dynamic]) -> Vec<Vec<usize>> {
    let mut groups: Vec<(u64, Vec<usize>)> = vec![];
    for ((n, _), v) in ms.iter().zip(values) {
        let Some(v) = v.as_bv().and_then(|b| b.as_u64()) else {
            return vec![];
        };
        match groups.iter_mut().find(|(w, _)| *w == v) {
            Some((_, ns)) => ns.push(*n),
            None => groups.push((v, vec![*n])),
        }
    }
    groups.into_iter().skip(1).map(|(_, ns)| ns).collect()
}

/// The number of members of each class, by its first slot.
pub(super) fn sizes(class: &[usize]) -> Vec<usize> {
    let mut n = vec![0; class.len()];
    for &r in class {
        n[r] += 1;
    }
    n
}

/// Makes each of `members` a class of its own.
fn split(class: &mut [usize], members: &[usize]) {
    for &n in members {
        let r = class[n];
        let rest: Vec<usize> = (0..class.len()).filter(|&k| k != n && class[k] == r).collect();
        class[n] = n;
        if r == n {
            if let Some(&new) = rest.first() {
                for k in rest {
                    class[k] = new;
                }
            }
        }
    }
}

/// Moves `members` (all of one class, not its first) into a class of their own.
fn regroup(class: &mut [usize], members: &[usize]) {
    let r = members[0];
    for &n in members {
        class[n] = r;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Heaps sampled by their fingerprints: two chains of stores over one heap that write
    /// the same bytes in another order (at distinct addresses) agree in every sample; a
    /// chain that differs from them in one byte written under a shared top (the store of
    /// 9 at `A`, then the shared stores at `B` and `C`) is told apart by a sample that
    /// gives the heap and `A` values, and no state ties two heaps that differ.
    #[test]
    fn heaps_are_sampled_by_the_bytes_their_stores_write() {
        let h = Array::new_const("h", &Sort::bitvector(32), &Sort::bitvector(8));
        let a = BV::new_const("a", 32);
        let byte = |v: u64| BV::from_u64(v, 8);
        let (b, c) = (BV::from_u64(0x100010, 32), BV::from_u64(0x100020, 32));
        let top = |x: Array| x.store(&b, &byte(1)).store(&c, &byte(2));
        let one = top(h.store(&a, &byte(7)));
        let swapped = h.store(&a, &byte(7)).store(&c, &byte(2)).store(&b, &byte(1));
        let other = top(h.store(&a, &byte(9)));
        let prints = fingerprints(&[(0, one), (1, swapped), (2, other)]);
        let mut rng = 7u64;
        let (mut split, mut tied) = (0, 0);
        for round in 0..SAMPLES {
            let syms = symbols(&prints.iter().map(|(_, p)| Dynamic::from_ast(p)).collect::<Vec<_>>());
            assert_eq!(syms.len(), 2, "the heap and the address");
            let values: Vec<Dynamic> = syms.iter().map(|d| sample_value(d, round, &mut rng)).collect();
            let pairs: Vec<(&Dynamic, &Dynamic)> = syms.iter().zip(&values).collect();
            let terms: Vec<Dynamic> = prints.iter().map(|(_, p)| Dynamic::from_ast(p)).collect();
            let moved = grouped_values(&prints, &evaluated(&terms, &pairs));
            assert!(moved.iter().all(|g| g == &vec![2]), "only the third heap differs: {moved:?}");
            if moved.is_empty() {
                tied += 1;
            } else {
                split += 1;
            }
        }
        assert!(split > 0, "some sample tells the third heap apart ({tied} did not)");
    }

    /// `%x.1` and `%x` are versions of `x`; `%y` is defined from `%x.1` in b0, and b1
    /// assigns `%x.1` again (so `%y`'s definition is stale after it), then `%x`.
    fn versions() -> Function {
        let src = "function %f(i32 %a) -> i32 {\n    local i32 %x\n    local i32 %x.1\n    local i32 %y\nb0:\n    %x.1 = add(%a, 1)\n    %y = mul(%x.1, 2)\n    br slt(%a, 0), b1, b2\nb1:\n    %x.1 = 7\n    %x = 5\n    jump b3\nb2:\n    ret %y\nb3:\n    ret %x\n}\n";
        let (m, _) = tandem_core::text::parse_module(src).unwrap();
        tandem_core::verify::verify_module(&m).unwrap();
        m.functions.into_iter().next().unwrap()
    }

    /// The current version of a name at each block entry: both at the start (every local
    /// is 0), the one assigned last on the way elsewhere. Breaking the kill of the other
    /// versions, or the order of assignments, fails it.
    #[test]
    fn the_current_version_of_a_name_is_the_last_assigned() {
        let f = versions();
        let cur = current_versions(&f, &Roots(None));
        let (x, x1) = (Local::new(1), Local::new(2));
        let at = |b: u32, l: Local| cur[b as usize][l.index()];
        assert!(at(0, x) && at(0, x1));
        assert!(!at(1, x) && at(1, x1));
        assert!(!at(2, x) && at(2, x1));
        assert!(at(3, x) && !at(3, x1));
    }

    /// A definition is available where its local was last assigned that tree and nothing
    /// it reads was assigned since: after b0, not at the entry, and not after b1 wrote
    /// `%x.1`, which the tree reads.
    #[test]
    fn a_definition_is_available_until_what_it_reads_is_written() {
        let f = versions();
        let y = Local::new(3);
        let e = definitions(&mut f.clone())[y.index()][0];
        let slots = [Slot::Heap(Side::Src), Slot::Def(Side::Src, y, e)];
        let avail = available_definitions(&slots, Side::Src, &f);
        let at = |b: usize| avail[b][1];
        assert!(!at(0) && at(1) && at(2) && !at(3));
        assert!(avail.iter().all(|b| !b[0]), "only definitions are available");
        assert!(available_definitions(&slots, Side::Tgt, &f).iter().all(|b| !b[1]), "only its own side's");
    }

    /// The bytes of a store covered by a later one: one byte at `add(B, 2)` within four at
    /// `add(B, 0)` (`B` the same tree), a constant address within another's range, and the
    /// same place; not a byte past the end, not another base, not a wider store within a
    /// narrower one.
    #[test]
    fn a_store_within_a_later_ones_bytes_is_covered() {
        let src = "function %f(i32 %p) -> i32 {\nb0:\n    store.32(add(add(1048576, and(%p, 4080)), 0), comma(store.8(add(add(1048576, and(%p, 4080)), 2), 1), 7))\n    store.8(add(add(1048576, and(%p, 4080)), 4), 1)\n    store.8(add(add(1048576, and(%p, 2032)), 0), 1)\n    store.16(add(1049832, 2), 5)\n    store.32(1049832, 6)\n    store.16(1049832, 7)\n    ret 0\n}\n";
        let (m, _) = tandem_core::text::parse_module(src).unwrap();
        let f = &m.functions[0];
        let stores: Vec<Expr> = block_stores(f, f.entry()).into_iter().map(|(e, _)| e).collect();
        let [inner, outer, past, other, short, long, narrow] = stores[..] else { panic!("seven stores: {stores:?}") };
        assert!(covered(f, inner, outer), "a byte within a word");
        assert!(!covered(f, past, outer), "a byte past its end");
        assert!(!covered(f, other, outer), "another base");
        assert!(covered(f, short, long), "a constant address within another's range");
        assert!(!covered(f, long, narrow), "a wider store within a narrower one");
        assert!(covered(f, narrow, narrow), "the same place");
    }

    /// A loop whose header reads `%s` and `%i` and whose latch reads only `%i`: `%s` is
    /// live at the latch's entry only through the back edge, which a single backward pass
    /// in layout order misses (the liveness bug of issue 20); `%t` and `%n` are never
    /// read, so they are live nowhere.
    #[test]
    fn a_local_read_after_a_back_edge_is_live_at_the_latch() {
        let src = "function %f(i32 %n) -> i32 {\n    local i32 %i\n    local i32 %s\n    local i32 %t\nb0:\n    %t = 5\n    jump b1\nb1:\n    %s = add(%s, %i)\n    br slt(%s, 100), b2, b3\nb2:\n    %i = add(%i, 1)\n    jump b1\nb3:\n    ret %s\n}\n";
        let (m, _) = tandem_core::text::parse_module(src).unwrap();
        let f = &m.functions[0];
        let live = live_locals(f);
        let (n, i, s, t) = (Local::new(0), Local::new(1), Local::new(2), Local::new(3));
        let at = |b: usize, l: Local| live[b][l.index()];
        for b in 0..3 {
            assert!(at(b, i) && at(b, s), "b{b}");
        }
        assert!(at(3, s) && !at(3, i));
        assert!((0..4).all(|b| !at(b, n) && !at(b, t)));
    }

    /// A phi's argument is live at the end of its own predecessor only, and the phi's
    /// destination is defined at its block's entry (phis applied): `%a` is live into b1
    /// (its edge to b3), `%b` into b2, neither into the other, and `%x` (the phi's
    /// destination, read in b3) not at b1 or b2.
    #[test]
    fn a_phi_argument_is_live_on_its_own_edge() {
        let src = "function %f(i32 %c) -> i32 {\n    local i32 %a\n    local i32 %b\n    local i32 %x\nb0:\n    %a = add(%c, 1)\n    %b = add(%c, 2)\n    br %c, b1, b2\nb1:\n    jump b3\nb2:\n    jump b3\nb3:\n    %x = phi(b1: %a, b2: %b)\n    ret %x\n}\n";
        let (m, _) = tandem_core::text::parse_module(src).unwrap();
        let f = &m.functions[0];
        let live = live_locals(f);
        let (a, b, x) = (Local::new(1), Local::new(2), Local::new(3));
        let at = |blk: usize, l: Local| live[blk][l.index()];
        assert!(at(1, a) && !at(1, b) && !at(1, x));
        assert!(at(2, b) && !at(2, a) && !at(2, x));
        assert!(at(3, x) && !at(3, a) && !at(3, b));
        assert!(!at(0, a) && !at(0, b));
    }

    /// In a try with definitions, a local dead at every block's entry but the first is no
    /// slot unless a definition kept reads it: `%t` (read only in b0, after b0 assigns
    /// it) is carried by the target's definition of `%y` (`mul(%t, 2)`), and so is the
    /// argument `%a` by `%t`'s (`add(%a, 1)`); the source keeps no definition of a local the
    /// target has (by name), so its `%t` and `%a` are no slots; `%u` (never read) is no
    /// slot on either side, though its definition (`5`, which reads no local) is; `%y`
    /// (live into b1) is a slot on both.
    #[test]
    fn a_local_dead_everywhere_is_a_slot_only_where_a_definition_reads_it() {
        let text = "function %f(i32 %a) -> i32 {\n    local i32 %t\n    local i32 %y\n    local i32 %u\nb0:\n    %t = add(%a, 1)\n    %y = mul(%t, 2)\n    %u = 5\n    jump b1\nb1:\n    ret %y\n}\n";
        let (m, _) = tandem_core::text::parse_module(text).unwrap();
        let (mut src, mut tgt) = (m.functions[0].clone(), m.functions[0].clone());
        let defs = Defs { src: definitions(&mut src), tgt: definitions(&mut tgt) };
        let (live_src, live_tgt) = (live_locals(&src), live_locals(&tgt));
        let live = Live { src: &live_src, tgt: &live_tgt, all: true };
        let slots = partition_slots(&src, &tgt, &defs, &[], true, &live, &[]);
        let (a, t, y, u) = (Local::new(0), Local::new(1), Local::new(2), Local::new(3));
        let has = |x: Slot| slots.contains(&x);
        assert!(has(Slot::Local(Side::Tgt, t)) && has(Slot::Local(Side::Tgt, a)), "carried by the target's definitions");
        assert!(!has(Slot::Local(Side::Src, t)) && !has(Slot::Local(Side::Src, a)), "no source definition reads them");
        assert!(!has(Slot::Local(Side::Src, u)) && !has(Slot::Local(Side::Tgt, u)));
        assert!(has(Slot::Local(Side::Src, y)) && has(Slot::Local(Side::Tgt, y)));
        assert!(slots.iter().any(|&x| matches!(x, Slot::Def(Side::Tgt, l, _) if l == u)), "the definition of %u stays");
        // Without definitions the same locals are live nowhere, and nothing carries them.
        let live = Live { src: &live_src, tgt: &live_tgt, all: false };
        let slots = partition_slots(&src, &tgt, &defs, &[], false, &live, &[]);
        assert!(!slots.contains(&Slot::Local(Side::Tgt, t)) && slots.contains(&Slot::Local(Side::Tgt, y)));
    }

    /// A partition refines another when each of its classes lies within one of the
    /// other's: a finer one refines a coarser, not the other way, and each refines itself;
    /// at every block.
    #[test]
    fn a_finer_partition_refines_a_coarser_one() {
        // Slots 0..4; classes named by their first slot.
        let coarse = vec![vec![0, 0, 0, 3], vec![0, 1, 1, 3]];
        let fine = vec![vec![0, 0, 2, 3], vec![0, 1, 2, 3]];
        assert!(refines(&fine, &coarse) && refines(&coarse, &coarse));
        assert!(!refines(&coarse, &fine));
        // Finer at one block, coarser at the other: no.
        let mixed = vec![vec![0, 0, 2, 3], vec![0, 0, 0, 3]];
        assert!(!refines(&mixed, &coarse));
    }

    /// Congruence descends only through the same operator with the same indices: the low
    /// and the high byte of one word are different operators on the same operand (two
    /// pairs would wrongly be none), and a sum that differs in one operand is that
    /// operand alone.
    #[test]
    fn congruence_compares_only_the_operands_that_differ() {
        let v = BV::new_const("v", 32);
        let (a, b, c) = (BV::new_const("a", 32), BV::new_const("b", 32), BV::new_const("c", 32));
        let pairs = |x: &BV, y: &BV| {
            let mut out = vec![];
            assert!(differing_subterms(&Dynamic::from_ast(x), &Dynamic::from_ast(y), &mut out));
            out
        };
        let bytes = pairs(&v.extract(7, 0), &v.extract(15, 8));
        assert_eq!(bytes.len(), 1);
        assert!(bytes[0].0.ast_eq(&Dynamic::from_ast(&v.extract(7, 0))));
        let sums = pairs(&a.bvadd(&b).bvmul(&v), &a.bvadd(&c).bvmul(&v));
        assert_eq!(sums.len(), 1);
        assert!(sums[0].0.ast_eq(&Dynamic::from_ast(&b)) && sums[0].1.ast_eq(&Dynamic::from_ast(&c)));
        assert!(pairs(&a.bvudiv(&b), &a.bvudiv(&b)).is_empty());
        // Different operators on the same operands are one pair, the whole terms.
        assert_eq!(pairs(&a.bvudiv(&b), &a.bvsdiv(&b)).len(), 1);
    }

    /// A load from heaps that differ as heaps (one has a store the other has not) is one
    /// pair, the two loads, which can be equal where the heaps are not; from heaps that
    /// differ in a stored value, the pair is the two values.
    #[test]
    fn congruence_compares_loads_from_heaps_that_differ_as_loads() {
        let h = Array::new_const("h", &Sort::bitvector(32), &Sort::bitvector(8));
        let (p, q) = (BV::new_const("p", 32), BV::new_const("q", 32));
        let (v, w) = (BV::new_const("v", 8), BV::new_const("w", 8));
        let pairs = |x: &dyn Ast, y: &dyn Ast| {
            let mut out = vec![];
            assert!(differing_subterms(&Dynamic::from_ast(x), &Dynamic::from_ast(y), &mut out));
            out
        };
        let load = |a: &Array| a.select(&q).as_bv().unwrap().bvadd(&v);
        let stored = load(&h.store(&p, &BV::from_u64(5, 8)));
        let loads = pairs(&stored, &load(&h));
        assert_eq!(loads.len(), 1);
        assert!(loads[0].0.as_bv().is_some(), "the loads, not the heaps: {:?}", loads[0]);
        assert!(loads[0].0.ast_eq(&Dynamic::from_ast(&h.store(&p, &BV::from_u64(5, 8)).select(&q))));
        let values = pairs(&load(&h.store(&p, &v)), &load(&h.store(&p, &w)));
        assert_eq!(values.len(), 1);
        assert!(values[0].0.ast_eq(&Dynamic::from_ast(&v)) && values[0].1.ast_eq(&Dynamic::from_ast(&w)));
        // Heaps compared as heaps keep their pair.
        let heaps = pairs(&h.store(&p, &v), &h);
        assert_eq!(heaps.len(), 1);
        assert!(heaps[0].0.as_array().is_some());
    }

    /// The symbols of a term are its uninterpreted constants, never its numerals: with the
    /// numerals among them, every two assumptions that mention 0 were relevant to each
    /// other, and samples gave 0 a random value.
    #[test]
    fn numerals_are_no_symbols() {
        let (x, y) = (BV::new_const("x", 32), BV::new_const("y", 64));
        let t = x.bvadd(BV::from_u64(5, 32)).zero_ext(32).bvmul(&y).bvand(BV::from_u64(0, 64));
        let syms = symbols(&[Dynamic::from_ast(&t)]);
        assert_eq!(syms.len(), 2);
        assert!(syms.iter().any(|d| d.ast_eq(&Dynamic::from_ast(&x))) && syms.iter().any(|d| d.ast_eq(&Dynamic::from_ast(&y))));
        assert!(symbols(&[Dynamic::from_ast(&BV::from_u64(7, 32))]).is_empty());
    }

    /// An assumption `d = t` defines the symbol `d` when `t` does not mention it (either
    /// side first), and nothing when both sides are terms or `t` reads `d`.
    #[test]
    fn an_equation_with_a_symbol_defines_it() {
        let (d, a) = (BV::new_const("d", 32), BV::new_const("a", 32));
        let t = a.bvadd(BV::from_u64(1, 32));
        let (sym, term) = equated_term(&t.eq(&d)).expect("t = d defines d");
        assert!(sym.ast_eq(&Dynamic::from_ast(&d)) && term.ast_eq(&Dynamic::from_ast(&t)));
        assert!(equated_term(&d.eq(d.bvadd(BV::from_u64(1, 32)))).is_none());
        assert!(equated_term(&t.eq(a.bvmul(&a))).is_none());
        assert!(equated_term(&d.eq(BV::from_u64(3, 32))).is_some_and(|(s, _)| s.ast_eq(&Dynamic::from_ast(&d))));
    }

    /// Classes that depend on different assumptions are sampled apart: one whose
    /// assumption no sample satisfies does not keep another, which depends on none, from
    /// being split by a sample (before, both went to the solver).
    #[test]
    fn classes_that_share_no_assumption_are_sampled_apart() {
        let (a, v) = (BV::new_const("a", 32), BV::new_const("v", 32));
        // An assumption about `a` that no random value satisfies.
        let hard = a.bvmul(&a).eq(BV::from_u64(0x1234_5679, 32));
        let syms = vec![symbols(&[Dynamic::from_ast(&hard)])];
        let zero = BV::from_u64(0, 32);
        // The class of slots 0 and 1 depends on it; the class of 2 and 3 on nothing.
        let members = vec![vec![(0, a.clone()), (1, zero.clone())], vec![(2, v.clone()), (3, zero.clone())]];
        let (mut rng, mut work) = (0x9E37_79B9_7F4A_7C15u64, 0);
        assert_eq!(sample_classes(&[hard.clone()], &syms, &members, &mut rng, &mut work), vec![vec![3]]);
        // Alone, the first class is never split by a sample.
        assert!(sample_classes(&[hard], &syms, &members[..1], &mut rng, &mut work).is_empty());
    }

    /// The state of zeros satisfies an assumption that random states do not (generated
    /// code computes zero from zeros), and splits a class that depends on it: before,
    /// every such split went to the solver.
    #[test]
    fn a_state_of_zeros_satisfies_what_random_states_do_not() {
        let (a, b, c) = (BV::new_const("a", 32), BV::new_const("b", 32), BV::new_const("c", 32));
        let hard = a.bvmul(BV::from_u64(0x9e37_79b1, 32)).bvxor(&b).eq(c.bvmul(BV::from_u64(3, 32)));
        let syms = vec![symbols(&[Dynamic::from_ast(&hard)])];
        let members = vec![vec![(0, a.bvadd(BV::from_u64(1, 32))), (1, a.clone())]];
        let (mut rng, mut work) = (0x9E37_79B9_7F4A_7C15u64, 0);
        assert_eq!(sample_classes(&[hard.clone()], &syms, &members, &mut rng, &mut work), vec![vec![1]]);
        // Where zeros break it too, no sample splits the class.
        let harder = Bool::and(&[hard, a.bvor(&b).eq(BV::from_u64(0x8000_0001, 32))]);
        let syms = vec![symbols(&[Dynamic::from_ast(&harder)])];
        assert!(sample_classes(&[harder], &syms, &members, &mut rng, &mut work).is_empty());
    }

    /// The inference's queries read products, quotients and remainders as uninterpreted
    /// functions ([`abstracted`]): of numerals they keep their operation; equal
    /// operands give one application, so that a query that the products differ is
    /// unsatisfiable; an identity of the real arithmetic no longer holds (`x * y` and
    /// `y * x` may differ), which only weakens a relation.
    #[test]
    fn queries_read_products_and_quotients_as_uninterpreted_functions() {
        let (x, y, z) = (BV::new_const("qx", 64), BV::new_const("qy", 64), BV::new_const("qz", 64));
        let mut memo = HashMap::default();
        let mut abs = |b: &Bool| abstracted(&Dynamic::from_ast(b), &mut memo).as_bool().expect("a Boolean");
        let check = |assumed: &[Bool]| {
            let s = z3::Solver::new();
            for a in assumed {
                s.assert(a);
            }
            s.check()
        };
        let folded = BV::from_u64(3, 64).bvmul(BV::from_u64(5, 64)).eq(BV::from_u64(15, 64));
        assert!(abs(&folded).ast_eq(&folded), "numerals keep their operation");
        let product = x.bvmul(&y).eq(&z);
        let opaque = abs(&product);
        assert!(!opaque.ast_eq(&product), "a product of symbols is an application");
        assert_eq!(check(&[abs(&y.eq(&z)), abs(&x.bvmul(&y).eq(x.bvmul(&z)).not())]), SatResult::Unsat, "equal operands, equal products");
        assert_eq!(check(&[abs(&y.eq(&z)), abs(&x.bvudiv(&y).eq(x.bvudiv(&z)).not())]), SatResult::Unsat, "equal operands, equal quotients");
        let commuted = x.bvmul(&y).eq(y.bvmul(&x)).not();
        assert_eq!(check(std::slice::from_ref(&commuted)), SatResult::Unsat);
        assert_eq!(check(&[abs(&commuted)]), SatResult::Sat, "the abstraction knows no arithmetic");
    }

    /// A relation whose assumptions contradict each other holds at no entry (a block so
    /// related agrees on every state that enters it related: none); one that some state
    /// satisfies, or none at all, is no contradiction. SSA seed 10's SSAPRE was proved
    /// only while numerals still joined every assumption into its blocks' queries.
    #[test]
    fn contradictory_assumptions_relate_no_state() {
        let (x, y) = (BV::new_const("x", 32), BV::new_const("y", 32));
        let mut budget = Budget::new(&Options::default());
        let one = x.eq(BV::from_u64(1, 32));
        assert!(contradictory(&[one.clone(), x.bvadd(&y).eq(&y).not(), x.eq(BV::from_u64(2, 32))], &mut budget, 100_000));
        assert!(!contradictory(&[one.clone(), x.bvadd(&y).eq(&y).not()], &mut budget, 100_000));
        assert!(!contradictory(&[], &mut budget, 100_000));
    }
}
