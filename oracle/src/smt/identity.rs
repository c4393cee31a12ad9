//! The simulation check ([`super::simulate`]) by term identity alone, without Z3: the two
//! functions' blocks run symbolically over terms of our own, hash-consed, so that equal
//! terms are one term; a block pair is proved where the two steps end alike (the same
//! exits, each under the same condition, with the same return value, trap code, trace,
//! and, where the run stops, heap and callframe) and the relation holds at every
//! successor, each class's members one term there. Each try's first partition is checked
//! so before any runs in Z3. It proves what the simple passes leave (`cprop`, `dce`,
//! `ssa`, `ssa-destroy`: their relations hold by identity, where the try in Z3 asked the
//! solver nothing and still took 6-20 ms to encode a pair) and most of SSAPRE's pairs
//! ("the temporary holds `a + b`": the class's value is the source's tree, which the
//! source's block builds again), and some of memopt's (a callframe variable kept in a
//! local, a forwarded constant).
//!
//! A term's meaning is the operation it names on its operands, so two equal terms have
//! the same value under every assignment of the entry symbols, whatever the operation
//! computes; the check needs no semantics but where it folds: an operation on numerals
//! becomes its numeral, computed by the interpreter's own functions, and a condition
//! that folds to false drops its exit or edge (or is the negation of a condition the
//! path already excludes: a second access at the same address cannot fault). Every
//! effect of a statement is in a term (its traps as exits, under their conditions, in
//! the order the interpreter meets them; the heap as a chain of stores; the trace as a
//! chain of events). The heap's terms follow the bytes (see [`Terms::load`] and
//! [`Terms::store`]): a load reads through stores at bytes apart from its own (both
//! addresses numerals, or one base plus constants), takes the value back from a store
//! of its type and width at its address, and reads a numeral's bytes as the interpreter
//! does; a store over all the bytes of one below it takes that one out, and a store of
//! the bytes just loaded there is none: what memopt forwards and removes is then the
//! same term on both sides. A value forwarded at another width is the load at that
//! width (a mask, shifts up and down, a conversion of a load or of a stored value name
//! the same bytes one way: [`Terms::bin`], [`Terms::conv`], [`Terms::low_bits`]; a
//! narrow store's value is its low bits alone, [`Terms::low`]), and an access whose
//! address's every value lies inside the heap ([`Terms::range`], on the path: a check
//! above it may bound the index, [`Run::learn`]) cannot fault, so a load memopt hoists
//! moves no fault. An operation whose numeral decides its value is folded
//! ([`Terms::neutral`]). A run the source makes invalid is not compared (the target may
//! do anything there), so an access the source's block makes before any exit is assumed
//! inside the heap on both sides ([`Validity`]): a load the target removed is no exit.
//! A pending store's slot (memopt's sunk and removed stores, [`super::simulate`]'s
//! `Slot::Pending`) is its side's heap with the store done, with its own value or the
//! other side's bytes there (at a block's entry, a symbol's). So a difference in what
//! the two sides do is a difference in their terms, and the check fails: then the check
//! in Z3 runs as before (no Z3 term is made here, so its answers are those it gave
//! without this check). It is a proof or nothing; it never answers otherwise.
//!
//! A block's entry relation gives each class one value: the value of the definition the
//! class takes its value from, in the entry states, or else a symbol of its own; a part
//! of a state that no class joins to another is a symbol of its own. The class's other
//! definitions and loads are assumed to hold that value: a term built in the block's
//! steps that is one of them is that value (the Z3 check rewrites them alike). A class
//! whose members hold different terms entering a block splits there (a weaker relation,
//! which the block then runs under again), until every edge keeps the relation. The
//! entry block starts from the initial states (the arguments, heap and callframe shared,
//! every other local 0). Blocks the target added on an edge are run through
//! (stuttering), as in [`super::encode`].

use super::simulate::Chosen;
use crate::exec::interp::{self, mask};
use cranelift_entity::EntityRef;
use tandem_core::hash::HashMap;
use tandem_core::helpers::HelperKind;
use tandem_core::ir::{BinOp, Block, CfVar, CmpOp, ConvOp, Expr, ExprData, Function, Local, MemWidth, Terminator, Type, UnOp};

/// Where each part of a side's state is among the relation's slots (`None`: no slot, a
/// symbol of its own at every block): per side (source, then target), each local, each
/// callframe variable, the heap.
pub(super) struct Places {
    pub locals: [Vec<Option<usize>>; 2],
    pub cfs: [Vec<Option<usize>>; 2],
    pub heap: [Option<usize>; 2],
    /// Per slot, the tree a definition's or a load's slot stands for (its side, the
    /// type its value takes, the tree): its value in that side's state.
    pub trees: Vec<Option<(usize, Type, Expr)>>,
    /// Per slot, the store a pending store's slot stands for (its side, the store, and
    /// whether with its own value or with the bytes the other side's heap holds there):
    /// that side's heap with the store done ([`Terms::pending`]).
    pub pending: Vec<Option<(usize, Expr, bool)>>,
}

/// Whether the relation `classes` (per block in the source's layout, each slot's class
/// by its first slot) holds by identity (see the module docs); `false` where it does not,
/// where the blocks do not correspond, or past `limit` nodes evaluated per step.
///
/// `choose` gives, for a block's classes, the slot whose definition each class (by its
/// first slot) takes its value from, with the classes that definition reads, chosen so
/// that no class's value depends on itself; the other definitions and loads of a class
/// are assumed to hold that value: a term built that is one of them, in the entry state,
/// is that value.
pub(super) fn proves(src: &Function, tgt: &Function, places: &Places, classes: &[Vec<usize>], choose: &dyn Fn(&[usize]) -> Vec<Chosen>, limit: usize) -> bool {
    // The blocks correspond (as the caller checked; again here, since a proof rests on
    // it), and the return types are one.
    if !super::simulate::corresponds(src, tgt) || src.ret != tgt.ret || classes.len() != src.layout.len() {
        return false;
    }
    let entry = src.entry();
    let position = |b: Block| src.layout.iter().position(|&x| x == b);
    let added = |b: Block| position(b).is_none();
    let mut classes = classes.to_vec();
    let parts = places.parts();
    // Per block, the slots of its classes of two or more (`None`: to be found again).
    let mut joined: Vec<Option<Vec<usize>>> = vec![None; classes.len()];
    let mut terms = Terms::default();
    let mut entered = vec![false; src.layout.len()];
    let Some(first) = position(entry) else { return false };
    entered[first] = true;
    // The blocks to run again: entered, and their relation refined since their last run.
    let mut work = std::collections::BTreeSet::from([first]);
    while let Some(k) = work.pop_first() {
        let b = src.layout[k];
        terms.rewrite.clear();
        let (s_in, t_in) = if b == entry {
            (terms.initial(src), terms.initial(tgt))
        } else {
            let members = joined[k].get_or_insert_with(|| joined_slots(&classes[k]));
            let Some(states) = terms.entry(src, tgt, places, &parts, &classes[k], members, &choose(&classes[k]), limit) else { return false };
            states
        };
        let Ok((mut xs, assumed)) = step(&mut terms, src, b, s_in, &|_| false, Validity::Assumed, limit) else { return false };
        let Ok((mut ys, _)) = step(&mut terms, tgt, b, t_in, &added, Validity::Given(&assumed), limit) else { return false };
        if xs.len() != ys.len() {
            return false;
        }
        // The exits' conditions exclude one another: compared as sets.
        xs.sort_by_key(Exit::key);
        ys.sort_by_key(Exit::key);
        for (x, y) in xs.iter().zip(&ys) {
            if x.guard != y.guard || x.end != y.end || x.st.trace != y.st.trace {
                return false;
            }
            match x.end {
                End::Continue(t) => {
                    let Some(j) = position(t) else { return false };
                    // The relation at `t` keeps of each class the members that hold one
                    // term here: a weaker relation, assumed at `t` from then on, so `t`
                    // runs again.
                    let members = joined[j].get_or_insert_with(|| joined_slots(&classes[j]));
                    let Some(refined) = refine(&mut terms, [src, tgt], places, &parts, &classes[j], members, [&x.st, &y.st], limit) else { return false };
                    if let Some(refined) = refined {
                        classes[j] = refined;
                        joined[j] = None;
                        work.insert(j);
                    }
                    if !entered[j] {
                        entered[j] = true;
                        work.insert(j);
                    }
                }
                _ => {
                    if x.st.heap != y.st.heap || x.st.cfs != y.st.cfs {
                        return false;
                    }
                }
            }
        }
    }
    true
}

/// The slots of `classes` (each slot's class by its first slot) whose class has two or
/// more: those [`refine`] may split.
fn joined_slots(classes: &[usize]) -> Vec<usize> {
    let size = super::simulate::sizes(classes);
    (0..classes.len()).filter(|&i| size[classes[i]] > 1).collect()
}

/// `classes` with each class split by the terms its members hold in the two states
/// entering its block (a class whose members hold one term stays whole; a definition's or
/// a load's term is its tree's in its side's state); each class named by its first slot.
/// Only the slots of classes of two or more (`joined`, [`joined_slots`]) are looked at.
/// `Some(None)` where no class splits; `None` past the limit.
#[allow(clippy::too_many_arguments)]
fn refine(terms: &mut Terms, fs: [&Function; 2], places: &Places, parts: &[Option<(usize, Part)>], classes: &[usize], joined: &[usize], states: [&St; 2], limit: usize) -> Option<Option<Vec<usize>>> {
    let mut scratch = [None, None];
    // Each slot's term (`NONE`: a slot that is neither a part nor derived), in `joined`'s
    // order; whether some member's differs from its class's first slot's.
    let mut held = Vec::with_capacity(joined.len());
    let mut first_held = vec![NONE; classes.len()];
    let mut splits = false;
    for &i in joined {
        let h = match (parts[i], places.derived(i)) {
            (Some((side, part)), _) => states[side].part(part),
            (None, Some(d)) => {
                let bytes = Bytes::Of(states[1 - d.side].heap);
                let st = scratch[d.side].get_or_insert_with(|| states[d.side].clone());
                terms.derived(fs[d.side], &d, st, bytes, limit)?
            }
            (None, None) => NONE,
        };
        // The class's first slot comes first in `joined`.
        if classes[i] == i {
            first_held[i] = h;
        } else {
            splits |= first_held[classes[i]] != h;
        }
        held.push(h);
    }
    if !splits {
        return Some(None);
    }
    let mut refined = classes.to_vec();
    let mut first: HashMap<(usize, T), usize> = HashMap::with_capacity_and_hasher(joined.len(), Default::default());
    for (&i, h) in joined.iter().zip(held) {
        refined[i] = *first.entry((classes[i], h)).or_insert(i);
    }
    Some(Some(refined))
}

/// A term: an index into [`Terms::nodes`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
struct T(u32);

/// No operand.
const NONE: T = T(u32::MAX);

/// What a term's node does with its (up to three) operands.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Op {
    /// A canonical value of the type, as the interpreter holds it.
    Num(Type, i64),
    Bool(bool),
    Sym(Sym),
    Un(UnOp, Type),
    Bin(BinOp, Type),
    Cmp(CmpOp, Type),
    Conv(ConvOp),
    Select,
    /// `[heap, address]`.
    Load(MemWidth, bool, Type),
    /// `[heap, address, value]`, the value of the type.
    Store(MemWidth, Type),
    /// Whether an access of that many bytes at the address is inside the heap.
    InBounds(u32),
    /// Whether the division traps on `[lhs, rhs]`.
    DivTraps(BinOp, Type),
    NonZero,
    /// Whether the value is this switch key.
    Key(i64),
    Not,
    And,
    Or,
    /// A helper's value on its arguments (`heap_rmw`: `[heap, a, b]`, the word it read).
    Call(HelperKind),
    /// `heap_rmw`'s heap after it: `[heap, a, b]`.
    RmwHeap,
    /// `cf_set(a, b)`'s callframe variable `i` of `n`: `[a, b as the variable's type, old]`.
    CfSet(u32, u32),
    /// A trace with one more event: `[trace, a, b]`.
    Push(HelperKind),
    /// The empty trace, and the empty list of values.
    Empty,
    /// A list of values with one more: `[list, value]` (`cf_trace`'s callframe).
    Cons,
}

/// An entry state's symbol: a class's value, or a part of one side's state that no class
/// joins to another; the initial states' arguments, heap and callframe.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Sym {
    Class(usize),
    /// The bytes at a pending store's address in the heap its class's value stands for
    /// (the class by its first slot): the other side's, which that value defines.
    Bytes(usize),
    Local(usize, Local),
    Cf(usize, CfVar),
    Heap(usize),
    Arg(usize),
    Heap0,
    Cf0(CfVar),
}

/// Which bytes a pending store stores where they are not its own value
/// ([`Terms::pending`]).
#[derive(Clone, Copy)]
enum Bytes {
    /// Those a heap holds at the store's address.
    Of(T),
    /// A symbol's, of the class the store's slot gives its value to.
    Sym(usize),
}

const TRUE: T = T(0);
const FALSE: T = T(1);

/// The terms built so far, each once.
struct Terms {
    nodes: Vec<(Op, [T; 3])>,
    index: HashMap<(Op, [T; 3]), T>,
    /// The block's assumptions: a term that is one of them is its class's value.
    rewrite: HashMap<T, T>,
    /// Per side, each local's own symbol ([`Terms::states`]).
    own_locals: [Vec<T>; 2],
    /// Each class's symbol, where made ([`Terms::class_sym`]; [`NONE`] where not yet).
    class_syms: Vec<T>,
}

impl Default for Terms {
    fn default() -> Terms {
        let mut t = Terms { nodes: Vec::with_capacity(1 << 10), index: HashMap::with_capacity_and_hasher(1 << 10, Default::default()), rewrite: HashMap::default(), own_locals: [vec![], vec![]], class_syms: vec![] };
        assert_eq!(t.make(Op::Bool(true), []), TRUE);
        assert_eq!(t.make(Op::Bool(false), []), FALSE);
        t
    }
}

impl Terms {
    fn make<const N: usize>(&mut self, op: Op, args: [T; N]) -> T {
        let mut key = [NONE; 3];
        key[..N].copy_from_slice(&args);
        let t = match self.index.get(&(op, key)) {
            Some(&t) => t,
            None => {
                let t = T(self.nodes.len() as u32);
                self.nodes.push((op, key));
                self.index.insert((op, key), t);
                t
            }
        };
        if self.rewrite.is_empty() {
            return t;
        }
        self.rewrite.get(&t).copied().unwrap_or(t)
    }

    /// The heap of state `st` of `f` with the store at `e` done (its address evaluated in
    /// `st`, which it leaves as it was): with its own value, or the bytes `bytes` says:
    /// those another heap holds at the address, or a symbol's. `None` past the limit, or
    /// where `e` is not a store.
    fn pending(&mut self, f: &Function, e: Expr, st: &mut St, bytes: Option<Bytes>, limit: usize) -> Option<T> {
        let ExprData::Store { width, addr, value } = f.exprs[e] else { return None };
        let vty = f.expr_type(value)?;
        let a = self.value_of(f, addr, st, Type::I32, limit)?;
        let v = match bytes {
            None => self.value_of(f, value, st, vty, limit)?,
            Some(Bytes::Of(heap)) => self.load(width, false, vty, heap, a),
            Some(Bytes::Sym(r)) => self.sym(Sym::Bytes(r)),
        };
        Some(self.store(width, vty, st.heap, a, v))
    }

    /// The value of derived slot `d` of `f` in state `st` (which it leaves as it was): its
    /// tree's value, or its pending store's heap, with `bytes` where the store's are the
    /// other side's (that side's heap at a successor; a symbol's at a block's entry, where
    /// that heap is what the slot's class defines). `None` past the limit.
    fn derived(&mut self, f: &Function, d: &Derived, st: &mut St, bytes: Bytes, limit: usize) -> Option<T> {
        match d.ty {
            Some(ty) => self.value_of(f, d.e, st, ty, limit),
            None => self.pending(f, d.e, st, d.other_bytes.then_some(bytes), limit),
        }
    }

    /// The value of the value tree at `e` of `f` in state `st` (which it leaves as it
    /// was), of type `ty`; `None` past the limit.
    fn value_of(&mut self, f: &Function, e: Expr, st: &mut St, ty: Type, limit: usize) -> Option<T> {
        let mut run = Run { f, terms: &mut *self, st: std::mem::replace(st, St::none()), alive: TRUE, facts: Default::default(), known: Default::default(), exits: vec![], assumed: None, work: 0, limit };
        let v = run.value(e);
        *st = std::mem::replace(&mut run.st, St::none());
        let v = v.ok()?;
        Some(self.typed(ty, v))
    }

    fn num(&mut self, ty: Type, v: i64) -> T {
        self.make(Op::Num(ty, v), [])
    }

    fn value(&self, t: T) -> Option<i64> {
        match self.nodes[t.0 as usize].0 {
            Op::Num(_, v) => Some(v),
            _ => None,
        }
    }

    fn bool(&mut self, b: bool) -> T {
        if b {
            TRUE
        } else {
            FALSE
        }
    }

    fn un(&mut self, op: UnOp, ty: Type, a: T) -> T {
        match (self.value(a), self.nodes[a.0 as usize]) {
            (Some(x), _) => self.num(ty, interp::unary(op, ty, x)),
            // Negated or complemented twice (the generator's `not(not(x))`).
            (None, (Op::Un(inner, ity), [x, ..])) if inner == op && ity == ty => x,
            (None, _) => self.make(Op::Un(op, ty), [a]),
        }
    }

    /// `op(a, b)` where an operand is a numeral that decides the value alone (`and(x,
    /// 0)`, `mul(x, 1)`, a shift by a count of 0 after masking) or both operands are one
    /// term (`xor(x, x)`); `None` otherwise. Each as the interpreter computes it for every
    /// `x` (wrapping, the count masked to the width).
    fn neutral(&mut self, op: BinOp, ty: Type, a: T, b: T) -> Option<T> {
        let ones = mask(ty.bits());
        let is = |terms: &Terms, t: T, v: u64| terms.value(t).is_some_and(|x| x as u64 & ones == v);
        let count_zero = |terms: &Terms, t: T| terms.value(t).is_some_and(|c| (c as u32) & (ty.bits() - 1) == 0);
        use BinOp::*;
        Some(match op {
            Add | Or | Xor if is(self, b, 0) => a,
            Add | Or | Xor if is(self, a, 0) => b,
            Sub if is(self, b, 0) => a,
            Sub | Xor if a == b => self.num(ty, 0),
            And | Or if a == b => a,
            Mul if is(self, b, 1) => a,
            Mul if is(self, a, 1) => b,
            Mul | And if is(self, a, 0) || is(self, b, 0) => self.num(ty, 0),
            And if is(self, b, ones) => a,
            And if is(self, a, ones) => b,
            Or if is(self, a, ones) || is(self, b, ones) => self.num(ty, ty.normalize(ones as i64)),
            Shl | Lshr | Ashr if count_zero(self, b) => a,
            Udiv | Sdiv if is(self, b, 1) => a,
            _ => return None,
        })
    }

    fn bin(&mut self, op: BinOp, ty: Type, a: T, b: T) -> T {
        if let (Some(x), Some(y)) = (self.value(a), self.value(b)) {
            if let Ok(v) = interp::binary(op, ty, x, y) {
                return self.num(ty, ty.normalize(v));
            }
        }
        if let Some(t) = self.neutral(op, ty, a, b) {
            return t;
        }
        // An operand of which the operation reads only the low bits, in their one form
        // ([`Terms::low`]): a shift up by a numeral, a mask of the low bits.
        // The bits a mask keeps, where they are the low ones alone.
        let low_mask = |m: i64| {
            let m = m as u64 & mask(ty.bits());
            (m.trailing_ones() == m.count_ones()).then_some(m.trailing_ones())
        };
        let (a, b) = match (op, self.value(a), self.value(b)) {
            (BinOp::Shl, None, Some(k)) => (self.low(ty.bits() - (k as u32 & (ty.bits() - 1)), ty, a), b),
            (BinOp::And, None, Some(m)) => (low_mask(m).map_or(a, |j| self.low(j, ty, a)), b),
            (BinOp::And, Some(m), None) => (a, low_mask(m).map_or(b, |j| self.low(j, ty, b))),
            _ => (a, b),
        };
        // A mask that keeps every bit the other operand may have set keeps that operand
        // (`and(load.i32.u8(a), 255)`, how memopt narrows a wider value it forwards); one
        // that keeps a wider load's low bytes is the narrower load (`and(load.i32(a),
        // 255)` is `load.i32.u8(a)`, little end first).
        if op == BinOp::And {
            for (x, m) in [(a, b), (b, a)] {
                if let Some(m) = self.value(m) {
                    let m = m as u64 & mask(ty.bits());
                    let kept = m.trailing_ones();
                    if kept >= 64 || self.range(x, 8).1 < 1u64 << kept {
                        return x;
                    }
                    if let (Some(w), (Op::Load(lw, _, lty), [h, at, _])) = (MemWidth::from_bits(kept), self.nodes[x.0 as usize]) {
                        if m == mask(kept) && lty == ty && kept <= lw.bits() {
                            return self.load(w, false, ty, h, at);
                        }
                    }
                }
            }
        }
        match (op, self.shifted_up(ty, a, b)) {
            // Shifted up and back down by a numeral, the low bytes of a wider load
            // sign-extended: the narrower signed load.
            (BinOp::Ashr, Some((x, c))) => {
                if let (Some(w), (Op::Load(lw, _, lty), [h, at, _])) = (MemWidth::from_bits(ty.bits() - c), self.nodes[x.0 as usize]) {
                    if lty == ty && w.bits() <= lw.bits() {
                        return self.load(w, true, ty, h, at);
                    }
                }
            }
            // Shifted up and back down unsigned: the low bits kept by a mask.
            (BinOp::Lshr, Some((x, c))) if c > 0 => {
                let m = self.num(ty, ty.normalize(mask(ty.bits() - c) as i64));
                return self.bin(BinOp::And, ty, x, m);
            }
            _ => {}
        }
        self.make(Op::Bin(op, ty), [a, b])
    }

    /// Where `a` is `shl(x, k)` of type `ty` and `k` and `b` are the same numeral count
    /// (masked to the width, as the shifts take it): `x` and the count.
    fn shifted_up(&self, ty: Type, a: T, b: T) -> Option<(T, u32)> {
        let count = |t: T| self.value(t).map(|c| c as u32 & (ty.bits() - 1));
        let (Op::Bin(BinOp::Shl, sty), [x, k, _]) = self.nodes[a.0 as usize] else { return None };
        let c = count(b)?;
        (sty == ty && count(k) == Some(c)).then_some((x, c))
    }

    /// The least and the greatest value `t` may take, read unsigned at its type's width,
    /// in every state: from its numerals, narrow unsigned loads, masks, remainders and
    /// shifts by numerals, and sums and shifts that cannot wrap; the whole width
    /// otherwise, and past `depth` operators. Only widens past what it knows, so every
    /// value `t` takes is in it.
    fn range(&self, t: T, depth: u32) -> (u64, u64) {
        self.range_under(t, depth, &HashMap::default())
    }

    /// [`Terms::range`] on a path that knows an unsigned upper bound of some terms
    /// (`known`: a check that stopped the run above them, [`Run::learn`]). Only for
    /// whether an access may fault on that path, never to build a term: a term is one
    /// value on every path.
    fn range_under(&self, t: T, depth: u32, known: &HashMap<T, u64>) -> (u64, u64) {
        let (lo, hi) = self.range_of(t, depth, known);
        match known.get(&t) {
            Some(&k) => (lo.min(k), hi.min(k)),
            None => (lo, hi),
        }
    }

    fn range_of(&self, t: T, depth: u32, known: &HashMap<T, u64>) -> (u64, u64) {
        let (op, [x, y, z]) = self.nodes[t.0 as usize];
        let whole = |ty: Type| (0, mask(ty.bits()));
        if let Op::Num(ty, v) = op {
            return (v as u64 & mask(ty.bits()), v as u64 & mask(ty.bits()));
        }
        if depth == 0 {
            return (0, u64::MAX);
        }
        // An operand's range within its type's width (a symbol's is every value).
        let ty_of = match op {
            Op::Bin(_, ty) | Op::Un(_, ty) => ty,
            Op::Conv(c) => c.types().0,
            // No narrower width known (a select's arms may be of either type).
            _ => Type::I64,
        };
        let below = |t: T| {
            let (lo, hi) = self.range_under(t, depth - 1, known);
            (lo.min(mask(ty_of.bits())), hi.min(mask(ty_of.bits())))
        };
        match op {
            Op::Load(w, false, ty) if w.bits() < ty.bits() => (0, mask(w.bits())),
            Op::Load(_, _, ty) => whole(ty),
            Op::Bin(BinOp::And, _) => (0, below(x).1.min(below(y).1)),
            Op::Bin(BinOp::Urem, ty) => match self.value(y) {
                Some(d) if d as u64 & mask(ty.bits()) != 0 => (0, below(x).1.min((d as u64 & mask(ty.bits())) - 1)),
                _ => whole(ty),
            },
            Op::Bin(BinOp::Lshr, ty) => match self.value(y) {
                Some(c) => {
                    let c = c as u32 & (ty.bits() - 1);
                    let (lo, hi) = below(x);
                    (lo >> c, hi >> c)
                }
                None => whole(ty),
            },
            Op::Bin(BinOp::Shl, ty) => match self.value(y) {
                Some(c) => {
                    let c = c as u32 & (ty.bits() - 1);
                    let (lo, hi) = below(x);
                    if hi <= mask(ty.bits()) >> c {
                        (lo << c, hi << c)
                    } else {
                        whole(ty)
                    }
                }
                None => whole(ty),
            },
            Op::Bin(BinOp::Add, ty) => {
                let ((a, b), (c, d)) = (below(x), below(y));
                match b.checked_add(d) {
                    Some(hi) if hi <= mask(ty.bits()) => (a + c, hi),
                    _ => whole(ty),
                }
            }
            Op::Bin(_, ty) | Op::Un(_, ty) => whole(ty),
            Op::Conv(ConvOp::Zext) => below(x),
            Op::Conv(ConvOp::Trunc) => match below(x) {
                (lo, hi) if hi <= mask(32) => (lo, hi),
                _ => whole(Type::I32),
            },
            Op::Conv(ConvOp::Sext) => whole(Type::I64),
            Op::Cmp(..) => (0, 1),
            Op::Select => {
                let ((a, b), (c, d)) = (below(y), below(z));
                (a.min(c), b.max(d))
            }
            _ => (0, u64::MAX),
        }
    }

    fn cmp(&mut self, op: CmpOp, ty: Type, a: T, b: T) -> T {
        match (self.value(a), self.value(b)) {
            (Some(x), Some(y)) => self.num(Type::I32, op.eval(ty, x, y) as i64),
            _ => self.make(Op::Cmp(op, ty), [a, b]),
        }
    }

    fn conv(&mut self, op: ConvOp, a: T) -> T {
        match (self.value(a), op, self.nodes[a.0 as usize]) {
            (Some(x), ..) => self.num(op.types().1, interp::convert(op, x)),
            // The low half of a value extended from 32 bits is that value.
            (None, ConvOp::Trunc, (Op::Conv(ConvOp::Sext | ConvOp::Zext), [x, ..])) => x,
            // A load's value converted is the load at the other type: its low half the
            // same bytes (at most 32 bits of them); a 32-bit load's bytes extended as the
            // conversion extends them; a narrower one's as the load does, where the load
            // zero-extends (a value below 2^31 is the same sign-extended) or the conversion
            // sign-extends (a sign-extended value sign-extended again).
            (None, ConvOp::Trunc, (Op::Load(w, signed, _), [h, at, _])) => {
                let narrow = w.bits() < 32;
                self.load(if narrow { w } else { MemWidth::W32 }, signed && narrow, Type::I32, h, at)
            }
            (None, ConvOp::Sext, (Op::Load(w, signed, _), [h, at, _])) => self.load(w, signed || w.bits() == 32, Type::I64, h, at),
            (None, ConvOp::Zext, (Op::Load(w, false, _) | Op::Load(w @ MemWidth::W32, true, _), [h, at, _])) => self.load(w, false, Type::I64, h, at),
            _ => self.make(Op::Conv(op), [a]),
        }
    }

    fn select(&mut self, c: T, a: T, b: T) -> T {
        match self.value(c) {
            Some(v) => {
                if v != 0 {
                    a
                } else {
                    b
                }
            }
            None if a == b => a,
            None => self.make(Op::Select, [c, a, b]),
        }
    }

    /// `a` as a place of type `ty` holds it: the verifier gives every value the type of
    /// where it goes (a local, callframe variable, argument or return value), and every
    /// value the interpreter computes is canonical for its type, so only a numeral is
    /// normalized.
    fn typed(&mut self, ty: Type, a: T) -> T {
        match self.nodes[a.0 as usize].0 {
            Op::Num(_, v) => self.num(ty, ty.normalize(v)),
            _ => a,
        }
    }

    fn in_bounds(&mut self, bytes: u32, addr: T, known: &HashMap<T, u64>) -> T {
        match self.value(addr) {
            Some(a) => self.bool(interp::State::check_bounds(a, bytes).is_ok()),
            None => {
                // Every address the term may take is inside (a masked index into a table:
                // a load memopt hoisted then has no trap to tell apart from none), on the
                // path, which may bound the index (a check above the access).
                let (lo, hi) = self.range_under(addr, 8, known);
                let inside = |a: u64| a <= u32::MAX as u64 && interp::State::check_bounds(a as i64, bytes).is_ok();
                if inside(lo) && inside(hi) {
                    TRUE
                } else {
                    self.make(Op::InBounds(bytes), [addr])
                }
            }
        }
    }

    fn div_traps(&mut self, op: BinOp, ty: Type, a: T, b: T) -> T {
        // A signed division traps on -1 only where the dividend is the type's minimum.
        let minus_one_traps = || {
            let min = 1u64 << (ty.bits() - 1);
            let (lo, hi) = self.range(a, 8);
            matches!(op, BinOp::Sdiv | BinOp::Srem) && lo <= min && min <= hi
        };
        match (self.value(a), self.value(b)) {
            (Some(x), Some(y)) => self.bool(interp::binary(op, ty, x, y).is_err()),
            _ if self.never_traps(minus_one_traps(), ty, b, 2) => FALSE,
            _ => self.make(Op::DivTraps(op, ty), [a, b]),
        }
    }

    /// Whether a divisor `b` of type `ty` is never 0 (nor -1, where `signed`: a signed
    /// division whose dividend may be the minimum) in any state: a numeral that is not; a
    /// term none of whose values is (above 0 and below all ones, [`Terms::range`]:
    /// `add(and(x, 15), 1)`); where -1 does not matter, an `or` with a numeral other than
    /// 0 (`or(x, 1)`); or a select that takes such a
    /// divisor where its condition holds and otherwise a value the condition has ruled
    /// those out of (`select(ult(add(d, 1), 2), 7, d)`: `d` is neither 0 nor -1 where it
    /// is taken; `select(eq(d, 0), 3, d)`: not 0, and not -1 where its range says so), the
    /// generator's guarded divisors, which SSAPRE moves.
    fn never_traps(&self, signed: bool, ty: Type, b: T, depth: u32) -> bool {
        let all_ones = mask(ty.bits());
        if let Some(y) = self.value(b) {
            return y != 0 && !(signed && y as u64 & all_ones == all_ones);
        }
        let (lo, hi) = self.range(b, 8);
        if lo >= 1 && (!signed || hi < all_ones) {
            return true;
        }
        if let (Op::Bin(BinOp::Or, _), [x, y, _]) = self.nodes[b.0 as usize] {
            let nonzero = |t: T| self.value(t).is_some_and(|v| v as u64 & all_ones != 0);
            if !signed && (nonzero(x) || nonzero(y)) {
                return true;
            }
        }
        let (Op::Select, [c, k, d]) = self.nodes[b.0 as usize] else { return false };
        if depth == 0 || !self.never_traps(signed, ty, k, depth - 1) {
            return false;
        }
        let is = |t: T, v: u64| self.value(t).is_some_and(|x| x as u64 & all_ones == v);
        match self.nodes[c.0 as usize] {
            // `d + 1 < 2` unsigned: `d` is 0 or -1.
            (Op::Cmp(CmpOp::Ult, cty), [s, two, _]) if cty == ty && is(two, 2) => {
                matches!(self.nodes[s.0 as usize], (Op::Bin(BinOp::Add, aty), [x, one, _]) | (Op::Bin(BinOp::Add, aty), [one, x, _]) if aty == ty && x == d && is(one, 1))
            }
            // `d == 0`: not -1 only by its range.
            (Op::Cmp(CmpOp::Eq, cty), [x, zero, _]) | (Op::Cmp(CmpOp::Eq, cty), [zero, x, _]) if cty == ty && x == d && is(zero, 0) => !signed || self.range(d, 8).1 < all_ones,
            _ => false,
        }
    }

    fn nonzero(&mut self, a: T) -> T {
        match self.value(a) {
            Some(v) => self.bool(v != 0),
            None => self.make(Op::NonZero, [a]),
        }
    }

    fn key(&mut self, k: i64, a: T) -> T {
        match self.value(a) {
            Some(v) => self.bool(v == k),
            None => self.make(Op::Key(k), [a]),
        }
    }

    fn not(&mut self, a: T) -> T {
        match a {
            TRUE => FALSE,
            FALSE => TRUE,
            _ => match self.nodes[a.0 as usize] {
                (Op::Not, [x, ..]) => x,
                _ => self.make(Op::Not, [a]),
            },
        }
    }

    /// An access's address as a base term (`None` for a numeral) and a constant offset.
    fn address(&self, a: T) -> (Option<T>, i64) {
        match self.nodes[a.0 as usize] {
            (Op::Num(_, v), _) => (None, v as u32 as i64),
            // A constant added to a base plus a constant: the base, the constants summed
            // (modulo 2^32, as the addresses wrap).
            (Op::Bin(BinOp::Add, Type::I32), [x, y, _]) => {
                let (rest, c) = match (self.value(x), self.value(y)) {
                    (_, Some(c)) => (x, c),
                    (Some(c), _) => (y, c),
                    _ => return (Some(a), 0),
                };
                let (base, d) = self.address(rest);
                (base, (c + d) as u32 as i64)
            }
            _ => (Some(a), 0),
        }
    }

    /// Whether the bytes of an access of `n` at `a` and one of `m` at `b` are apart in
    /// every state (both addresses numerals, or one base plus constants: their distance is
    /// the constants', modulo 2^32).
    fn apart(&self, a: T, n: u32, b: T, m: u32) -> bool {
        let ((x, i), (y, j)) = (self.address(a), self.address(b));
        if x != y {
            return false;
        }
        // Offsets modulo 2^32: the second range starts `d` bytes after the first.
        let d = (j - i).rem_euclid(1 << 32);
        d >= n as i64 && (1i64 << 32) - d >= m as i64
    }

    /// A load of `width` at `a` from `heap`: past the stores at bytes apart from its own;
    /// a store of the load's very type and width at the same address gives its value
    /// back (the bytes it wrote, read as they were written).
    fn load(&mut self, width: MemWidth, signed: bool, ty: Type, heap: T, a: T) -> T {
        // A load of the type's whole width extends nothing.
        let signed = signed && width.bits() < ty.bits();
        let mut h = heap;
        for _ in 0..64 {
            match self.nodes[h.0 as usize] {
                (Op::Store(w, vty), [_, b, v]) if b == a && w == width && vty == ty && width.bits() == ty.bits() => return v,
                // The low bytes of a store at the same address, of a value not a numeral
                // (those are read below): the value's low bits, extended as the load
                // extends them.
                (Op::Store(w, vty), [_, b, v]) if b == a && width.bits() <= w.bits() && self.value(v).is_none() => return self.low_bits(v, vty, width.bits(), signed, ty),
                (Op::Store(w, _), [below, b, v]) => {
                    if self.apart(a, width.bytes(), b, w.bytes()) {
                        h = below;
                        continue;
                    }
                    // Bytes a numeral stored, all of them: read as the interpreter reads.
                    if let (Some(at), Some(x)) = (self.within(a, width.bytes(), b, w.bytes()), self.value(v)) {
                        let bits = width.bits();
                        let raw = ((x as u64) >> (8 * at)) & mask(bits);
                        let ext = if signed && bits < 64 { ((raw << (64 - bits)) as i64) >> (64 - bits) } else { raw as i64 };
                        return self.num(ty, ty.normalize(ext));
                    }
                    break;
                }
                _ => break,
            }
        }
        self.make(Op::Load(width, signed, ty), [h, a])
    }

    /// What a load of `bits` bits (`signed`: sign-extending) into type `ty` reads from the
    /// bytes of `v` (of type `vty`, at least `bits` wide) stored at its address, little
    /// end first: the low `bits` bits of `v`, extended to `ty`. `v` is first made `ty`'s
    /// width (truncated, or extended where a 32-bit load extends it), then its bits above
    /// `bits` cleared or made copies of the sign bit.
    fn low_bits(&mut self, v: T, vty: Type, bits: u32, signed: bool, ty: Type) -> T {
        let x = match (vty, ty) {
            (Type::I64, Type::I32) => self.conv(ConvOp::Trunc, v),
            (Type::I32, Type::I64) if bits == 32 => return self.conv(if signed { ConvOp::Sext } else { ConvOp::Zext }, v),
            (Type::I32, Type::I64) => self.conv(ConvOp::Zext, v),
            _ => v,
        };
        if bits == ty.bits() {
            return x;
        }
        let k = self.num(ty, (ty.bits() - bits) as i64);
        if signed {
            let up = self.bin(BinOp::Shl, ty, x, k);
            self.bin(BinOp::Ashr, ty, up, k)
        } else {
            let m = self.num(ty, ty.normalize(mask(bits) as i64));
            self.bin(BinOp::And, ty, x, m)
        }
    }

    /// Where the `n` bytes at `a` lie in the `m` bytes at `b`, in every state: the offset
    /// of the first, or `None` where they may not all lie there.
    fn within(&self, a: T, n: u32, b: T, m: u32) -> Option<u32> {
        let ((x, i), (y, j)) = (self.address(a), self.address(b));
        let d = (i - j).rem_euclid(1 << 32);
        (x == y && d + n as i64 <= m as i64).then_some(d as u32)
    }

    /// A store of `width` of `v` (of type `vty`) at `a` on `heap`: a store below whose
    /// bytes all lie in this one's is overwritten, and taken out; a value just loaded from
    /// the same place, at least as wide, stored back is no store (its low bytes are the
    /// bytes there, however the load extended them).
    fn store(&mut self, width: MemWidth, vty: Type, heap: T, a: T, v: T) -> T {
        let v = self.low(width.bits(), vty, v);
        let loaded = |terms: &Terms, from: T| matches!(terms.nodes[v.0 as usize], (Op::Load(w, _, _), [h, b, _]) if h == from && b == a && w.bits() >= width.bits());
        // The bytes loaded here stored back, from this heap or one below it past stores
        // apart from them (which left those bytes as they were): no store (memopt's
        // removed store of a byte loaded before other stores, ssa seed 1357).
        let mut below = heap;
        for _ in 0..64 {
            if loaded(self, below) {
                return heap;
            }
            match self.nodes[below.0 as usize] {
                (Op::Store(w, _), [under, b, _]) if self.apart(a, width.bytes(), b, w.bytes()) => below = under,
                _ => break,
            }
        }
        // Down the stores below, those whose bytes all lie in this one's taken out
        // (overwritten: whatever the stores between wrote there, this one writes over),
        // the others kept, in order: a stored value is a term of its own, which taking a
        // store out from under it does not change. Not past a `heap_rmw`, whose word
        // written depends on the bytes below it.
        let mut above = vec![];
        let mut h = heap;
        let mut overwritten = false;
        for _ in 0..64 {
            match self.nodes[h.0 as usize] {
                (Op::Store(w, _), [below, b, _]) if self.within(b, w.bytes(), a, width.bytes()).is_some() => {
                    overwritten = true;
                    h = below;
                }
                (Op::Store(w, t), [below, b, x]) => {
                    above.push((w, t, b, x));
                    h = below;
                }
                _ => break,
            }
        }
        // Unchanged where none was overwritten (the stores kept stay in order).
        let h = if overwritten {
            for &(w, t, b, x) in above.iter().rev() {
                h = self.make(Op::Store(w, t), [h, b, x]);
            }
            h
        } else {
            heap
        };
        // The bytes loaded from the heap with the overwritten stores taken out, stored
        // back: that heap (a store undone).
        if overwritten && loaded(self, h) {
            return h;
        }
        self.make(Op::Store(width, vty), [h, a, v])
    }

    /// `v` (of type `ty`) in one form of its low `bits` bits, for an operation that reads
    /// only those (a store of that width, a shift up, a mask of the low bits, a
    /// truncation): a numeral keeps only them (zero above), and a mask that keeps all of
    /// them and shifts up and back down by no more than the bits above them are taken
    /// off. So memopt's store of the same bytes in another form is the same store (a wide
    /// numeral stored narrow and read back, a loaded byte stored back through `and(x,
    /// 255)`), and a value read back through a narrower load is the same term as memopt's
    /// forwarded form of it (`ashr(shl(and(x, 65535), 24), 24)` is `ashr(shl(x, 24),
    /// 24)`). Never a conversion: the form keeps the type (a store's value read back by a
    /// load at the other type is extended as the load extends, [`Terms::low_bits`]).
    fn low(&mut self, bits: u32, ty: Type, v: T) -> T {
        if bits >= ty.bits() || bits == 0 {
            return v;
        }
        if let Some(x) = self.value(v) {
            return self.num(ty, ty.normalize((x as u64 & mask(bits)) as i64));
        }
        let keeps_low = |terms: &Terms, m: T| terms.value(m).is_some_and(|m| m as u64 & mask(bits) == mask(bits));
        let shift_within = |terms: &Terms, k: T| terms.value(k).is_some_and(|k| k >= 0 && k <= (ty.bits() - bits) as i64);
        match self.nodes[v.0 as usize] {
            (Op::Bin(BinOp::And, _), [x, m, _]) if keeps_low(self, m) => self.low(bits, ty, x),
            (Op::Bin(BinOp::And, _), [m, x, _]) if keeps_low(self, m) => self.low(bits, ty, x),
            (Op::Bin(BinOp::Ashr | BinOp::Lshr, _), [up, k, _]) => match self.nodes[up.0 as usize] {
                (Op::Bin(BinOp::Shl, _), [x, k2, _]) if k2 == k && shift_within(self, k) => self.low(bits, ty, x),
                _ => v,
            },
            _ => v,
        }
    }

    fn and(&mut self, a: T, b: T) -> T {
        match (a, b) {
            (FALSE, _) | (_, FALSE) => FALSE,
            (TRUE, x) | (x, TRUE) => x,
            (x, y) if x == y => x,
            _ => self.make(Op::And, [a, b]),
        }
    }

    fn or(&mut self, a: T, b: T) -> T {
        match (a, b) {
            (TRUE, _) | (_, TRUE) => TRUE,
            (FALSE, x) | (x, FALSE) => x,
            (x, y) if x == y => x,
            _ => self.make(Op::Or, [a, b]),
        }
    }

    fn sym(&mut self, s: Sym) -> T {
        self.make(Op::Sym(s), [])
    }

    /// Class `r`'s symbol, made once (every class's at every block's entry, each looked
    /// up in the index, was a sixth of the check's work).
    fn class_sym(&mut self, r: usize) -> T {
        if self.class_syms.len() <= r {
            self.class_syms.resize(r + 1, NONE);
        }
        if self.class_syms[r] == NONE {
            self.class_syms[r] = self.sym(Sym::Class(r));
        }
        self.class_syms[r]
    }

    fn empty(&mut self) -> T {
        self.make(Op::Empty, [])
    }

    /// The initial state of a run of `f`: the arguments, heap and callframe shared by
    /// both sides, every other local 0.
    fn initial(&mut self, f: &Function) -> St {
        let locals = f
            .locals
            .iter()
            .map(|(l, d)| match f.params.iter().position(|&q| q == l) {
                Some(i) => self.sym(Sym::Arg(i)),
                None => self.num(d.ty, 0),
            })
            .collect();
        let cfs = f.cfvars.keys().map(|v| self.sym(Sym::Cf0(v))).collect();
        St { locals, cfs, heap: self.sym(Sym::Heap0), trace: self.empty() }
    }

    /// The two states whose parts hold their classes' values in `val` (a part whose class
    /// has none yet, or that has no slot, a symbol of its own), each trace empty.
    fn states(&mut self, fs: [&Function; 2], places: &Places, classes: &[usize], val: &[Option<T>]) -> [St; 2] {
        [0, 1].map(|side| {
            let f = fs[side];
            // Each local's own symbol, made once (a state of every local at every run of a
            // block, each looked up in the index, was a tenth of the check's time).
            if self.own_locals[side].len() != f.locals.len() {
                self.own_locals[side] = f.locals.keys().map(|l| self.sym(Sym::Local(side, l))).collect();
            }
            let own_locals = std::mem::take(&mut self.own_locals[side]);
            let locals = f.locals.keys().map(|l| places.locals[side][l.index()].and_then(|i| val[classes[i]]).unwrap_or(own_locals[l.index()])).collect();
            self.own_locals[side] = own_locals;
            let mut part = |slot: Option<usize>, own: Sym| match slot.and_then(|i| val[classes[i]]) {
                Some(v) => v,
                None => self.sym(own),
            };
            St {
                locals,
                cfs: f.cfvars.keys().map(|v| part(places.cfs[side][v.index()], Sym::Cf(side, v))).collect(),
                heap: part(places.heap[side], Sym::Heap(side)),
                trace: self.empty(),
            }
        })
    }

    /// The two entry states of a block whose relation is `classes` (each class by its
    /// first slot): each part of a state its class's value, or a symbol of its own; a
    /// class's value is the value of its `chosen` definition in the states (once the
    /// classes it reads have theirs), else a symbol. The class's other definitions and
    /// loads are assumed equal to it ([`Terms::rewrite`]: their terms in these states,
    /// where not numerals); `joined` is the slots of the classes of two or more
    /// ([`joined_slots`]). `None` past the limit.
    #[allow(clippy::too_many_arguments)]
    fn entry(&mut self, src: &Function, tgt: &Function, places: &Places, parts: &[Option<(usize, Part)>], classes: &[usize], joined: &[usize], chosen: &[Chosen], limit: usize) -> Option<(St, St)> {
        let fs = [src, tgt];
        let mut val: Vec<Option<T>> = (0..classes.len()).map(|r| (classes[r] == r && chosen[r].is_none()).then(|| self.class_sym(r))).collect();
        let mut states = self.states(fs, places, classes, &val);
        // The classes with a definition, a round at a time: those whose definitions read
        // only classes with values (the choice is acyclic, so each round resolves some),
        // evaluated in the states of the rounds before, whose parts of those classes then
        // take their values. A pending store's class reads its side's heap too, and its
        // value takes fresh bytes where the store's are the other side's (that side's heap
        // is what the class defines).
        let mut unresolved: Vec<(usize, &[usize], Derived)> = chosen.iter().enumerate().filter_map(|(r, c)| c.as_ref().map(|(i, reads)| Some((r, &reads[..], places.derived(*i)?)))).collect::<Option<_>>()?;
        // The parts of the classes with a definition (each of two or more), by class.
        let mut members: Vec<(usize, usize, Part)> = joined.iter().filter(|&&i| chosen[classes[i]].is_some()).filter_map(|&i| parts[i].map(|(side, part)| (classes[i], side, part))).collect();
        members.sort_unstable_by_key(|m| m.0);
        while !unresolved.is_empty() {
            let (ready, rest): (Vec<_>, Vec<_>) = unresolved.into_iter().partition(|(_, reads, _)| reads.iter().all(|&c| val[c].is_some()));
            if ready.is_empty() {
                return None;
            }
            let mut done = Vec::with_capacity(ready.len());
            for (r, _, d) in ready {
                let v = self.derived(fs[d.side], &d, &mut states[d.side], Bytes::Sym(r), limit)?;
                val[r] = Some(v);
                done.push((r, v));
            }
            for (r, v) in done {
                let from = members.partition_point(|m| m.0 < r);
                for &(_, side, part) in members[from..].iter().take_while(|m| m.0 == r) {
                    states[side].set(part, v);
                }
            }
            unresolved = rest;
        }
        // The assumptions: every other definition or load of a class of two or more.
        let mut assumed = vec![];
        for &m in joined {
            let (r, Some((side, ty, e))) = (classes[m], places.trees[m]) else { continue };
            if chosen[r].as_ref().is_some_and(|(i, _)| *i == m) {
                continue;
            }
            let v = val[r].expect("every class has a value");
            let k = self.value_of(fs[side], e, &mut states[side], ty, limit)?;
            if k != v && !matches!(self.nodes[k.0 as usize].0, Op::Num(..)) {
                assumed.push((k, v));
            }
        }
        self.rewrite.extend(assumed);
        let [s, t] = states;
        Some((s, t))
    }
}

/// What a derived slot stands for ([`Places::derived`]): a tree of side `side` of type
/// `ty`, or (no type) a pending store, with its own value or with the bytes the other
/// side's heap holds at its address.
struct Derived {
    side: usize,
    ty: Option<Type>,
    e: Expr,
    other_bytes: bool,
}

/// A part of a side's state.
#[derive(Clone, Copy)]
enum Part {
    Local(usize),
    Cf(usize),
    Heap,
}

impl Places {
    /// Per slot, the side and part of a state it is, where it is one.
    fn parts(&self) -> Vec<Option<(usize, Part)>> {
        let mut parts = vec![None; self.trees.len()];
        for side in 0..2 {
            let locals = self.locals[side].iter().enumerate().map(|(k, &i)| (i, Part::Local(k)));
            let cfs = self.cfs[side].iter().enumerate().map(|(k, &i)| (i, Part::Cf(k)));
            for (i, part) in locals.chain(cfs).chain([(self.heap[side], Part::Heap)]) {
                if let Some(i) = i {
                    parts[i] = Some((side, part));
                }
            }
        }
        parts
    }

    /// What slot `i` stands for, where it is derived (a definition, a load or a pending
    /// store) and not a part of a state.
    fn derived(&self, i: usize) -> Option<Derived> {
        match (self.trees[i], self.pending[i]) {
            (Some((side, ty, e)), _) => Some(Derived { side, ty: Some(ty), e, other_bytes: false }),
            (_, Some((side, e, exact))) => Some(Derived { side, ty: None, e, other_bytes: !exact }),
            _ => None,
        }
    }
}

/// A side's state: its locals, callframe variables, heap, and the trace of the step so far.
#[derive(Clone)]
struct St {
    locals: Vec<T>,
    cfs: Vec<T>,
    heap: T,
    trace: T,
}

impl St {
    fn part(&self, part: Part) -> T {
        match part {
            Part::Local(k) => self.locals[k],
            Part::Cf(k) => self.cfs[k],
            Part::Heap => self.heap,
        }
    }

    fn set(&mut self, part: Part, v: T) {
        match part {
            Part::Local(k) => self.locals[k] = v,
            Part::Cf(k) => self.cfs[k] = v,
            Part::Heap => self.heap = v,
        }
    }

    /// No state: what a run's state is left as once moved out.
    fn none() -> St {
        St { locals: vec![], cfs: vec![], heap: NONE, trace: NONE }
    }
}

/// How an exit of a step ends.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum End {
    Return(T),
    Divide,
    Check(u32),
    Invalid,
    Continue(Block),
}

/// One way a step ends, under its condition, with the state there (no locals where the
/// run stops).
struct Exit {
    guard: T,
    end: End,
    st: St,
}

impl Exit {
    fn key(&self) -> (T, End) {
        (self.guard, self.end)
    }
}

/// Past the limit of nodes evaluated.
struct TooLarge;

/// One block's run from a state (the interpreter's order: operands left to right, then
/// the node; a trap is an exit under the condition that it happens there).
struct Run<'a> {
    f: &'a Function,
    terms: &'a mut Terms,
    st: St,
    alive: T,
    /// The conditions `alive` is the conjunction of, and those the step assumes
    /// ([`Validity`]).
    facts: tandem_core::hash::HashSet<T>,
    /// Unsigned upper bounds those conditions give terms ([`Run::learn`]).
    known: HashMap<T, u64>,
    exits: Vec<Exit>,
    /// On the source's run of its block, the accesses' conditions of being inside the
    /// heap that it assumes rather than exits on ([`Run::invalid_if`]); `None` elsewhere.
    assumed: Option<Vec<T>>,
    work: usize,
    limit: usize,
}

/// What a step takes as given about its entry state: the source assumes it stays valid
/// where it is invalid on every entry state that breaks the assumption (the access it
/// makes before any exit: [`Run::invalid_if`]), and the target is given what the source
/// assumed. A run where the source is invalid may do anything on the target's side (it
/// refines the source's), so the target needs to agree only on the entry states where
/// the assumptions hold: a load the target removed (`dce`'s dead loads, default seed
/// 20018 of the loops profile) is then no exit on either side, and one the target still
/// makes at the same address is in bounds by the assumption, as on the source's side.
#[derive(Clone, Copy)]
enum Validity<'a> {
    Assumed,
    Given(&'a [T]),
}

impl Run<'_> {
    /// Where an access's address is outside the heap (`outside`), the run is invalid: an
    /// exit, or, on a run that assumes validity ([`Run::assumed`]) and has met no exit yet
    /// (so that every entry state that breaks the condition reaches it, and is invalid),
    /// the condition that it is inside, assumed from then on.
    fn invalid_if(&mut self, outside: T) {
        let inside = self.terms.not(outside);
        if let (true, Some(assumed)) = (self.alive == TRUE && inside != TRUE && !self.facts.contains(&inside), &mut self.assumed) {
            assumed.push(inside);
            self.facts.insert(inside);
            return;
        }
        self.stop_if(outside, End::Invalid);
    }

    /// The condition that the run gets here and `c` holds: false where the path
    /// already excludes `c` (a second access at the same address cannot fault).
    fn guard(&mut self, c: T) -> T {
        let not = self.terms.not(c);
        if self.facts.contains(&not) {
            FALSE
        } else {
            self.terms.and(self.alive, c)
        }
    }

    fn stop_if(&mut self, cond: T, end: End) {
        let guard = self.guard(cond);
        if guard == FALSE {
            return;
        }
        let st = St { locals: vec![], ..self.st.clone() };
        self.exits.push(Exit { guard, end, st });
        let not = self.terms.not(cond);
        self.alive = self.terms.and(self.alive, not);
        self.facts.insert(not);
        self.learn(not);
    }

    /// The unsigned upper bound a condition the path holds gives a term compared with a
    /// numeral (`not(ugt(i, 15))`: `i` is at most 15; the generator's check of an index
    /// before the access), kept in [`Run::known`].
    fn learn(&mut self, fact: T) {
        let (holds, c) = match self.terms.nodes[fact.0 as usize] {
            (Op::Not, [n, ..]) => (false, n),
            _ => (true, fact),
        };
        let (Op::NonZero, [c, ..]) = self.terms.nodes[c.0 as usize] else { return };
        let (Op::Cmp(op, ty), [a, b, _]) = self.terms.nodes[c.0 as usize] else { return };
        let num = |t: T| self.terms.value(t).map(|v| v as u64 & mask(ty.bits()));
        // As `x < k` or `x <= k` on the path, `x` the term that is not a numeral.
        let (x, k, strict) = match (holds, op, num(a), num(b)) {
            (true, CmpOp::Ult, None, Some(k)) | (false, CmpOp::Uge, None, Some(k)) => (a, k, true),
            (true, CmpOp::Ule, None, Some(k)) | (false, CmpOp::Ugt, None, Some(k)) => (a, k, false),
            (true, CmpOp::Ugt, Some(k), None) | (false, CmpOp::Ule, Some(k), None) => (b, k, true),
            (true, CmpOp::Uge, Some(k), None) | (false, CmpOp::Ult, Some(k), None) => (b, k, false),
            _ => return,
        };
        let Some(bound) = (if strict { k.checked_sub(1) } else { Some(k) }) else { return };
        let entry = self.known.entry(x).or_insert(bound);
        *entry = (*entry).min(bound);
    }

    fn value(&mut self, e: Expr) -> Result<T, TooLarge> {
        Ok(self.eval(e)?.expect("the verifier guarantees a value here"))
    }

    fn ty(&self, e: Expr) -> Type {
        self.f.expr_type(e).expect("the verifier guarantees a value here")
    }

    fn eval(&mut self, e: Expr) -> Result<Option<T>, TooLarge> {
        self.work += 1;
        if self.work > self.limit {
            return Err(TooLarge);
        }
        let f = self.f;
        Ok(match &f.exprs[e] {
            ExprData::Const { ty, value } => Some(self.terms.num(*ty, *value)),
            ExprData::Local(l) => Some(self.st.locals[l.index()]),
            ExprData::Unary { op, arg } => {
                let a = self.value(*arg)?;
                Some(self.terms.un(*op, self.ty(*arg), a))
            }
            ExprData::Binary { op, lhs, rhs } => {
                let ty = self.ty(*lhs);
                let a = self.value(*lhs)?;
                let b = self.value(*rhs)?;
                if op.can_trap() {
                    let traps = self.terms.div_traps(*op, ty, a, b);
                    self.stop_if(traps, End::Divide);
                }
                Some(self.terms.bin(*op, ty, a, b))
            }
            ExprData::Cmp { op, lhs, rhs } => {
                let ty = self.ty(*lhs);
                let a = self.value(*lhs)?;
                let b = self.value(*rhs)?;
                Some(self.terms.cmp(*op, ty, a, b))
            }
            ExprData::Convert { op, arg } => {
                let a = self.value(*arg)?;
                Some(self.terms.conv(*op, a))
            }
            ExprData::Select { cond, if_true, if_false } => {
                let c = self.value(*cond)?;
                let a = self.value(*if_true)?;
                let b = self.value(*if_false)?;
                Some(self.terms.select(c, a, b))
            }
            ExprData::Load { ty, width, signed, addr } => {
                let a = self.value(*addr)?;
                let inside = self.terms.in_bounds(width.bytes(), a, &self.known);
                let outside = self.terms.not(inside);
                self.invalid_if(outside);
                Some(self.terms.load(*width, *signed, *ty, self.st.heap, a))
            }
            ExprData::Store { width, addr, value } => {
                let a = self.value(*addr)?;
                let v = self.value(*value)?;
                let inside = self.terms.in_bounds(width.bytes(), a, &self.known);
                let outside = self.terms.not(inside);
                self.invalid_if(outside);
                let vty = self.ty(*value);
                self.st.heap = self.terms.store(*width, vty, self.st.heap, a, v);
                None
            }
            ExprData::CfRead(v) => Some(self.st.cfs[v.index()]),
            ExprData::CfWrite { var, value } => {
                let v = self.value(*value)?;
                self.st.cfs[var.index()] = self.terms.typed(f.cfvars[*var].ty, v);
                None
            }
            ExprData::Assign { local, value } => {
                // Of the local's type (the verifier's rule), kept as it is.
                self.st.locals[local.index()] = self.value(*value)?;
                None
            }
            ExprData::Call { helper, args } => {
                let (params, _) = helper.signature();
                let mut vals = [NONE; 2];
                for (i, (&a, &p)) in args.iter().zip(params).enumerate() {
                    let v = self.value(a)?;
                    vals[i] = self.terms.typed(p, v);
                }
                self.call(*helper, vals)
            }
            ExprData::TrapIf { cond, code } => {
                let c = self.value(*cond)?;
                let hit = self.terms.nonzero(c);
                self.stop_if(hit, End::Check(*code));
                None
            }
            ExprData::Comma { first, second } => {
                self.eval(*first)?;
                self.eval(*second)?
            }
        })
    }

    /// A helper call on its arguments (already of its parameters' types); every helper by
    /// name, so that a new one is a decision here.
    fn call(&mut self, helper: HelperKind, [a, b]: [T; 2]) -> Option<T> {
        match helper {
            HelperKind::Log | HelperKind::Log64 => {
                self.st.trace = self.terms.make(Op::Push(helper), [self.st.trace, a, b]);
                None
            }
            HelperKind::CfTrace => {
                let mut list = self.terms.empty();
                for i in 0..self.st.cfs.len() {
                    list = self.terms.make(Op::Cons, [list, self.st.cfs[i]]);
                }
                self.st.trace = self.terms.make(Op::Push(helper), [self.st.trace, list, NONE]);
                None
            }
            HelperKind::CfSet => {
                let n = self.st.cfs.len() as u32;
                for (i, d) in self.f.cfvars.values().enumerate() {
                    let new = self.terms.typed(d.ty, b);
                    self.st.cfs[i] = self.terms.make(Op::CfSet(n, i as u32), [a, new, self.st.cfs[i]]);
                }
                None
            }
            HelperKind::HeapRmw => {
                let old = self.terms.make(Op::Call(helper), [self.st.heap, a, b]);
                self.st.heap = self.terms.make(Op::RmwHeap, [self.st.heap, a, b]);
                Some(old)
            }
            HelperKind::Mix | HelperKind::Mix64 => Some(self.terms.make(Op::Call(helper), [a, b])),
        }
    }

    /// Runs `b`'s statements and terminator: the edges it may take, each with its
    /// condition and the state at the end of `b` (an edge whose condition is false, none).
    fn block(&mut self, b: Block) -> Result<Vec<(T, Block, St)>, TooLarge> {
        let data = &self.f.blocks[b];
        for &s in &data.stmts {
            self.eval(s)?;
        }
        let mut edges: Vec<(T, Block)> = vec![];
        match &data.term {
            Terminator::Jump(t) => edges.push((TRUE, *t)),
            Terminator::Branch { cond, then_dest, else_dest } => {
                let c = self.value(*cond)?;
                let taken = self.terms.nonzero(c);
                let not = self.terms.not(taken);
                edges.push((taken, *then_dest));
                edges.push((not, *else_dest));
            }
            Terminator::Return(e) => {
                let v = self.value(*e)?;
                let v = self.terms.typed(self.f.ret, v);
                self.stop_if(TRUE, End::Return(v));
            }
            Terminator::Switch { value, default, cases } => {
                let v = self.value(*value)?;
                // The first case equal to the value wins.
                let mut seen = tandem_core::hash::HashSet::default();
                let mut by_target: Vec<(Block, T)> = vec![];
                let mut misses = TRUE;
                for &(k, t) in cases {
                    if !seen.insert(k) {
                        continue;
                    }
                    let hit = self.terms.key(k, v);
                    let miss = self.terms.not(hit);
                    misses = self.terms.and(misses, miss);
                    match by_target.iter_mut().find(|(u, _)| *u == t) {
                        Some((_, h)) => *h = self.terms.or(*h, hit),
                        None => by_target.push((t, hit)),
                    }
                }
                edges.extend(by_target.into_iter().map(|(t, h)| (h, t)));
                edges.push((misses, *default));
            }
        }
        let edges: Vec<(T, Block)> = edges.into_iter().map(|(c, t)| (self.guard(c), t)).filter(|&(g, _)| g != FALSE).collect();
        let n = edges.len();
        Ok(edges
            .into_iter()
            .enumerate()
            .map(|(i, (g, t))| (g, t, if i + 1 == n { std::mem::replace(&mut self.st, St::none()) } else { self.st.clone() }))
            .collect())
    }
}

/// The state entering `target` from `pred`: `target`'s phis read `pred`'s locals in
/// parallel (a phi without an argument for `pred` reads 0, as the interpreter does).
fn enter(terms: &mut Terms, f: &Function, pred: Block, target: Block, mut st: St) -> St {
    let vals: Vec<(usize, T)> = f.blocks[target]
        .phis
        .iter()
        .map(|phi| {
            let arg = phi.args.iter().find(|(p, _)| *p == pred).map(|(_, l)| *l);
            (phi.dest.index(), arg.map_or_else(|| terms.num(f.locals[phi.dest].ty, 0), |l| st.locals[l.index()]))
        })
        .collect();
    for (d, v) in vals {
        st.locals[d] = v;
    }
    st
}

/// One step of `f` from block `b` in state `st`: runs `b`, and through every successor
/// for which `through` holds (blocks a pass added on an edge), until the run stops or
/// enters a block for which it does not hold. Its exits, and the conditions it assumed
/// (`validity`); fails past 16 blocks run through in a row or past `limit` nodes.
fn step(terms: &mut Terms, f: &Function, b: Block, st: St, through: &dyn Fn(Block) -> bool, validity: Validity, limit: usize) -> Result<(Vec<Exit>, Vec<T>), TooLarge> {
    let mut exits = vec![];
    let mut assumed = vec![];
    let mut work = 0;
    let mut pending = vec![(b, TRUE, st, 0u32)];
    while let Some((blk, alive, st, depth)) = pending.pop() {
        let (facts, assuming) = match validity {
            // Only the step's first block: a later one is not reached on every entry state.
            Validity::Assumed => (Default::default(), (depth == 0).then(Vec::new)),
            Validity::Given(given) => (given.iter().copied().collect(), None),
        };
        // The given conditions are accesses' bounds, from which [`Run::learn`] learns no
        // index's bound: facts only.
        let mut run = Run { f, terms: &mut *terms, st, alive, facts, known: Default::default(), exits: vec![], assumed: assuming, work, limit };
        let edges = run.block(blk)?;
        work = run.work;
        exits.extend(run.exits);
        assumed.extend(run.assumed.unwrap_or_default());
        for (g, t, st) in edges {
            let st = enter(terms, f, blk, t, st);
            if through(t) {
                if depth >= 16 {
                    return Err(TooLarge);
                }
                pending.push((t, g, st, depth + 1));
            } else {
                exits.push(Exit { guard: g, end: End::Continue(t), st });
            }
        }
    }
    Ok((exits, assumed))
}

