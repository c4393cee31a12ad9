//! TASK 1 of `seeds/callframe-data-motion.md`, availability analysis, for callframe
//! variables and heap locations alike, and what it implies: LOAD-LOAD, STORE-LOAD (with
//! forwarding to narrower or differently extended loads) and LOAD-STORE.
//!
//! The state at a point maps each *slot* (a callframe variable, or a canonical heap
//! [`Loc`]) to the SSA value it is known to hold ([`Val`]): a local, a constant, the result
//! of a tree not yet bound to a local (bound on demand as `comma((%t = e), %t)`, which keeps
//! the evaluation order), or a *speculative phi* `Val::Phi(b, slot)` standing for the
//! phi the seed inserts in the header of `b` when the incoming values differ. A block
//! starts from the intersection of its predecessors' states; when every incoming value is
//! the same (or the block's own speculative phi, around a loop that leaves the slot
//! alone) that value flows on. Blocks are visited in reverse post-order (dominators before
//! the blocks they dominate) to convergence, optimistically: predecessors not yet visited
//! are left out of the intersection. The inverse map (which slots hold a value: the seed's
//! equivalence sets) is what LOAD-STORE asks about: a store is redundant when the slot
//! already holds the stored value.
//!
//! Transfer rules: a read binds its slot to its result; a write binds its own slot and
//! kills every heap slot it may alias (an address with no canonical form kills them all);
//! a helper kills what its summary says it writes (`cf_set`: every callframe variable;
//! `heap_rmw`: the whole heap). Only the speculative phis and bound trees that some
//! replacement uses are materialized, after convergence.

use super::events::{Ev, Loc};
use super::Ctx;
use crate::ir::{Block, ConvOp, BinOp, Expr, ExprData, Function, Local, MemWidth, Phi, Type};
use crate::passes::cfg::sized;
use crate::passes::Cfg;
use cranelift_entity::{EntityRef, SecondaryMap};
use crate::hash::HashMap;
use smallvec::SmallVec;

/// What a slot is.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Slot {
    Cf(crate::ir::CfVar),
    Heap(Loc),
}

/// The SSA value a slot holds.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Val {
    Local(Local),
    Const(Type, i64),
    /// The result of this tree (bound to a local when a replacement needs it).
    Node(Expr),
    /// The speculative phi of this block for slot number `.1`.
    Phi(Block, usize),
}

/// Where a known value came from, for the statistics.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Origin {
    Load,
    Store,
}

/// A known slot content: a value of type `ty` (for the heap: whose low `width` bits are
/// the bytes of the location).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Known {
    pub val: Val,
    pub ty: Type,
    pub origin: Origin,
}

/// The available values at a point.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Avail {
    pub cf: Vec<Option<Known>>,
    pub heap: Vec<(Loc, Known)>,
}

/// A change the rewrite makes.
#[derive(Clone, Debug)]
pub enum Action {
    /// Replace the read `node` by the value; for a heap load, convert it as the load does.
    Replace { node: Expr, known: Known, cf: bool },
    /// The store `node` writes what is already there.
    RemoveStore { node: Expr, cf: bool },
}

/// Rounds of [`Availability::compute`] before its speculative phis become sticky (and
/// as many again after that before it gives up).
const STICKY_AFTER: usize = 64;

/// The converged availability of a function.
pub struct Availability {
    pub ins: SecondaryMap<Block, Option<Avail>>,
    pub outs: SecondaryMap<Block, Option<Avail>>,
    pub slots: Vec<Slot>,
}

/// The value of the tree `e`: a read found redundant earlier in the same walk has the
/// value it will be replaced by (`subst`), not a value of its own.
fn val_of(f: &Function, e: Expr, subst: &HashMap<Expr, Val>) -> Val {
    if let Some(v) = subst.get(&e) {
        return v.clone();
    }
    match f.exprs[e] {
        ExprData::Local(l) => Val::Local(l),
        ExprData::Const { ty, value } => Val::Const(ty, value),
        _ => Val::Node(e),
    }
}

/// The number of slot `s` in `slots`, given it if it has none yet.
fn slot_id(slots: &mut Vec<Slot>, s: Slot) -> usize {
    match slots.iter().position(|x| *x == s) {
        Some(i) => i,
        None => {
            slots.push(s);
            slots.len() - 1
        }
    }
}

impl Availability {

    /// The state at the entry of `b`: the meet of its predecessors' (see the module docs).
    /// With `sticky`, a slot whose value at `b` was already `b`'s own speculative phi keeps
    /// it (the phi stays inserted) instead of collapsing to the one value the others
    /// agree on. The state is made in `out`, whatever it held (its buffers are reused).
    fn join(&mut self, f: &Function, cfg: &Cfg, b: Block, sticky: bool, out: &mut Avail) {
        // The predecessors' states are read in place (a copy of each was most of it), and
        // the lists of a join are on the stack: a block has few predecessors, and a list
        // per slot and block and round was most of the pass's allocations.
        let (outs, slots) = (&self.outs, &mut self.slots);
        let preds: SmallVec<[&Avail; 4]> = cfg.preds[b].iter().filter_map(|&p| outs[p].as_ref()).collect();
        let ncf = f.cfvars.len();
        out.cf.clear();
        out.cf.resize(ncf, None);
        out.heap.clear();
        if preds.is_empty() {
            return;
        }
        let before = if sticky { self.ins[b].as_ref() } else { None };
        let merge = |slots: &mut Vec<Slot>, slot: Slot, ks: SmallVec<[&Known; 4]>| -> Option<Known> {
            let ty = ks[0].ty;
            if ks.iter().any(|k| k.ty != ty) {
                return None;
            }
            let origin = if ks.iter().all(|k| k.origin == Origin::Load) { Origin::Load } else { Origin::Store };
            let was = before.and_then(|st| match &slot {
                Slot::Cf(v) => st.cf[v.index()].as_ref().map(|k| k.val.clone()),
                Slot::Heap(loc) => st.heap.iter().find(|(l, _)| l == loc).map(|(_, k)| k.val.clone()),
            });
            let id = slot_id(slots, slot);
            let me = Val::Phi(b, id);
            if was.as_ref() == Some(&me) {
                return Some(Known { val: me, ty, origin });
            }
            let mut vals: SmallVec<[&Val; 4]> = ks.iter().map(|k| &k.val).filter(|v| **v != me).collect();
            vals.dedup();
            let val = if !vals.is_empty() && vals.iter().all(|v| *v == vals[0]) { vals[0].clone() } else { me };
            Some(Known { val, ty, origin })
        };
        for v in 0..ncf {
            let ks: Option<SmallVec<[&Known; 4]>> = preds.iter().map(|p| p.cf[v].as_ref()).collect();
            if let Some(ks) = ks {
                out.cf[v] = merge(slots, Slot::Cf(crate::ir::CfVar::new(v)), ks);
            }
        }
        for (loc, _) in &preds[0].heap {
            let ks: Option<SmallVec<[&Known; 4]>> =
                preds.iter().map(|p| p.heap.iter().find(|(l, _)| l == loc).map(|(_, k)| k)).collect();
            if let Some(ks) = ks {
                if let Some(k) = merge(slots, Slot::Heap(loc.clone()), ks) {
                    out.heap.push((loc.clone(), k));
                }
            }
        }
    }

    /// Computes availability over `events` (one list per block) to convergence; `None`
    /// if it does not converge in a generous number of rounds (then nothing is changed).
    ///
    /// Speculative phis are not monotone: in nested loops, a header's phi can collapse to
    /// an inner header's phi that in turn collapses to the outer one's, and the two
    /// alternate forever (a three-deep nest whose outermost loop writes a slot known
    /// before it: period 2, found by the generator's nests in 2–3% of `memory`
    /// programs, where memopt then changed nothing). So when [`STICKY_AFTER`] rounds do
    /// not converge, the iteration goes on with a phi once inserted kept
    /// ([`Availability::join`]'s `sticky`), which is still the seed's rule ("if such a φ
    /// is found, its result is the new value") and only ever keeps a phi that may be
    /// trivial; a function that converged before is computed exactly as before.
    pub fn compute(f: &Function, cfg: &Cfg, events: &SecondaryMap<Block, Vec<Ev>>) -> Option<Availability> {
        let nb = f.blocks.len();
        let mut a = Availability { ins: sized(nb), outs: sized(nb), slots: vec![] };
        let mut subst = HashMap::default();
        // The state being computed; a block's state it replaces is the next one's buffers,
        // and a block's entry state is copied into the last round's.
        let mut st = Avail::default();
        // Whether a block's predecessors' states changed since its own was last made: a
        // block whose inputs did not is skipped, since its join, its events' steps (and
        // what they note in `subst`, for its own nodes alone) would give what they gave
        // (in sticky rounds too: a sticky join of the same inputs keeps the phis its last
        // join kept). The rounds, and what each ends with, are the same.
        let mut dirty: SecondaryMap<Block, bool> = sized(nb);
        for round in 0..2 * STICKY_AFTER {
            let mut changed = false;
            if round == 0 || round == STICKY_AFTER {
                cfg.rpo.iter().for_each(|&b| dirty[b] = true);
            }
            for &b in &cfg.rpo {
                if !std::mem::replace(&mut dirty[b], false) {
                    continue;
                }
                a.join(f, cfg, b, round >= STICKY_AFTER, &mut st);
                match &mut a.ins[b] {
                    Some(kept) => {
                        kept.cf.clone_from(&st.cf);
                        kept.heap.clone_from(&st.heap);
                    }
                    none => *none = Some(st.clone()),
                }
                for ev in &events[b] {
                    step(f, &mut st, ev, None, &[], &mut subst);
                }
                if a.outs[b].as_ref() != Some(&st) {
                    match &mut a.outs[b] {
                        Some(old) => std::mem::swap(old, &mut st),
                        none => *none = Some(std::mem::take(&mut st)),
                    }
                    cfg.succs[b].iter().for_each(|&s| dirty[s] = true);
                    changed = true;
                }
            }
            if !changed {
                return Some(a);
            }
        }
        None
    }

    /// The value of `slot` at the end of `b`.
    fn out_known(&self, b: Block, slot: usize) -> Option<&Known> {
        let st = self.outs[b].as_ref()?;
        match &self.slots[slot] {
            Slot::Cf(v) => st.cf[v.index()].as_ref(),
            Slot::Heap(loc) => st.heap.iter().find(|(l, _)| l == loc).map(|(_, k)| k),
        }
    }
}

/// The transfer function of one event; with `acts`, also records the rewrite. Stores in
/// `exempt` (the speculative stores of TASK 4) are never removed as LOAD-STORE. `subst`
/// collects the value of each redundant read, for the stores that write it.
pub fn step(
    f: &Function,
    st: &mut Avail,
    ev: &Ev,
    acts: Option<&mut Vec<Action>>,
    exempt: &[Expr],
    subst: &mut HashMap<Expr, Val>,
) {
    match ev {
        Ev::Def(l) => {
            let l = *l;
            st.heap.retain(|(loc, _)| !loc.mentions(l));
        }
        Ev::CfRead { node, var, bound } => match &st.cf[var.index()] {
            Some(k) => {
                subst.insert(*node, k.val.clone());
                if let Some(acts) = acts {
                    acts.push(Action::Replace { node: *node, known: k.clone(), cf: true });
                }
            }
            None => {
                // (An earlier round of the iteration may have found it redundant.)
                subst.remove(node);
                let val = bound.map_or(Val::Node(*node), Val::Local);
                st.cf[var.index()] = Some(Known { val, ty: f.cfvars[*var].ty, origin: Origin::Load });
            }
        },
        Ev::CfWrite { node, var, value } => {
            let val = val_of(f, *value, subst);
            let ty = f.cfvars[*var].ty;
            let same = st.cf[var.index()].as_ref().is_some_and(|k| k.val == val && k.ty == ty);
            if same && !exempt.contains(node) {
                if let Some(acts) = acts {
                    acts.push(Action::RemoveStore { node: *node, cf: true });
                }
            } else if !same {
                st.cf[var.index()] = Some(Known { val, ty, origin: Origin::Store });
            }
        }
        Ev::Load { node, loc: Some(loc), bound } => heap_load(f, st, *node, loc, *bound, acts, subst),
        Ev::Load { loc: None, .. } | Ev::Trap | Ev::Exit => {}
        Ev::Store { node, loc: Some(loc), value } => heap_store(f, st, *node, loc, *value, acts, exempt, subst),
        Ev::Store { loc: None, .. } => st.heap.clear(),
        Ev::Call(eff) => {
            if eff.writes_callframe {
                st.cf.iter_mut().for_each(|k| *k = None);
            }
            if eff.writes_heap {
                st.heap.clear();
            }
        }
    }
}

/// The step of a heap load `node` at the known location `loc` (`bound`: the local it is
/// assigned to, if any): LOAD-LOAD or STORE-LOAD when an available access covers it,
/// else it makes its own value available.
fn heap_load(
    f: &Function,
    st: &mut Avail,
    node: Expr,
    loc: &Loc,
    bound: Option<Local>,
    acts: Option<&mut Vec<Action>>,
    subst: &mut HashMap<Expr, Val>,
) {
    if let Some((_, k)) = st.heap.iter().find(|(l, _)| l.covers(loc)) {
        // Only an exact read has the known value itself; a narrower one converts it.
        let ty = f.expr_type(node).expect("a load yields a value");
        if k.ty == ty && loc.width.bits() == ty.bits() {
            subst.insert(node, k.val.clone());
        } else {
            subst.remove(&node);
        }
        if let Some(acts) = acts {
            acts.push(Action::Replace { node, known: k.clone(), cf: false });
        }
    } else {
        subst.remove(&node);
        let ty = f.expr_type(node).expect("a load yields a value");
        let val = bound.map_or(Val::Node(node), Val::Local);
        st.heap.push((loc.clone(), Known { val, ty, origin: Origin::Load }));
    }
}

/// The step of a heap store `node` of `value` at the known location `loc`: LOAD-STORE
/// (removed) when the location already holds that value and the store is not `exempt`,
/// else it replaces what it may alias.
fn heap_store(
    f: &Function,
    st: &mut Avail,
    node: Expr,
    loc: &Loc,
    value: Expr,
    acts: Option<&mut Vec<Action>>,
    exempt: &[Expr],
    subst: &mut HashMap<Expr, Val>,
) {
    let val = val_of(f, value, subst);
    let ty = f.expr_type(value).expect("a stored value");
    let same = st.heap.iter().any(|(l, k)| l.covers(loc) && k.val == val && k.ty == ty);
    if same && !exempt.contains(&node) {
        if let Some(acts) = acts {
            acts.push(Action::RemoveStore { node, cf: false });
        }
    } else if !same {
        st.heap.retain(|(l, _)| !l.may_alias(loc));
        st.heap.push((loc.clone(), Known { val, ty, origin: Origin::Store }));
    }
}

/// Binds values to locals on demand: trees (as `comma((%t = e), %t)`), speculative phis
/// (with their arguments, recursively) and constants used as phi arguments.
pub struct Materializer<'a> {
    pub avail: &'a Availability,
    pub cfg: &'a Cfg,
    /// Bound trees: the local and the node now holding the tree's own data.
    nodes: HashMap<Expr, (Local, Expr)>,
    phis: HashMap<(Block, usize), Local>,
    consts: HashMap<(Block, Type, i64), Local>,
    /// The blocks given a phi or a statement (repeats possible).
    pub touched: Vec<Block>,
}

impl<'a> Materializer<'a> {
    pub fn new(avail: &'a Availability, cfg: &'a Cfg) -> Self {
        Materializer {
            avail,
            cfg,
            nodes: HashMap::default(),
            phis: HashMap::default(),
            consts: HashMap::default(),
            touched: vec![],
        }
    }

    fn name(&self, f: &Function, slot: Option<usize>) -> String {
        match slot.map(|s| &self.avail.slots[s]) {
            Some(Slot::Cf(v)) => f.cfvars[*v].name.clone(),
            _ => "mem".to_string(),
        }
    }

    fn node_local(&mut self, f: &mut Function, cx: &mut Ctx, e: Expr) -> Local {
        if let Some(&(l, _)) = self.nodes.get(&e) {
            return l;
        }
        let ty = f.expr_type(e).expect("a bound tree yields a value");
        let base = match f.exprs[e] {
            ExprData::CfRead(v) => f.cfvars[v].name.clone(),
            ExprData::Load { .. } => "mem".to_string(),
            _ => "val".to_string(),
        };
        let t = cx.new_local(f, &base, ty);
        let moved = f.add_expr(f.exprs[e].clone());
        let asg = f.add_expr(ExprData::Assign { local: t, value: moved });
        let use_ = f.add_expr(ExprData::Local(t));
        f.exprs[e] = ExprData::Comma { first: asg, second: use_ };
        self.nodes.insert(e, (t, moved));
        t
    }

    /// Whether the tree of node `e` was bound to a local (it changed in place: `e` is the
    /// node of a read or the value of a write, so it is in the block of that event).
    pub fn bound(&self, e: Expr) -> bool {
        self.nodes.contains_key(&e)
    }

    /// Whether any tree was bound to a local.
    pub fn bound_any(&self) -> bool {
        !self.nodes.is_empty()
    }

    /// Where the data of node `e` lives now: `e` itself, or the node that took it when `e`
    /// was bound to a local (a replacement of `e` must go there, inside the binding).
    pub fn target(&self, e: Expr) -> Expr {
        self.nodes.get(&e).map_or(e, |&(_, moved)| moved)
    }

    fn phi_local(&mut self, f: &mut Function, cx: &mut Ctx, b: Block, slot: usize, ty: Type) -> Local {
        if let Some(&l) = self.phis.get(&(b, slot)) {
            return l;
        }
        let name = self.name(f, Some(slot));
        let dest = cx.new_local(f, &name, ty);
        self.phis.insert((b, slot), dest);
        let mut args = vec![];
        for &p in &self.cfg.preds[b] {
            let k = self.avail.out_known(p, slot).expect("a speculative phi has every incoming value").clone();
            args.push((p, self.arg_local(f, cx, p, &k.val, ty)));
        }
        f.blocks[b].phis.push(Phi { dest, args });
        self.touched.push(b);
        dest
    }

    fn arg_local(&mut self, f: &mut Function, cx: &mut Ctx, p: Block, v: &Val, ty: Type) -> Local {
        match v {
            Val::Local(l) => *l,
            Val::Node(e) => self.node_local(f, cx, *e),
            Val::Phi(b, s) => self.phi_local(f, cx, *b, *s, ty),
            Val::Const(t, c) => {
                if let Some(&l) = self.consts.get(&(p, *t, *c)) {
                    return l;
                }
                let l = cx.new_local(f, "k", *t);
                let k = f.add_expr(ExprData::Const { ty: *t, value: *c });
                let s = f.add_expr(ExprData::Assign { local: l, value: k });
                f.blocks[p].stmts.push(s);
                self.touched.push(p);
                self.consts.insert((p, *t, *c), l);
                l
            }
        }
    }

    /// A fresh tree yielding `k`'s value.
    pub fn value_expr(&mut self, f: &mut Function, cx: &mut Ctx, k: &Known) -> Expr {
        let data = match &k.val {
            Val::Const(t, c) => ExprData::Const { ty: *t, value: *c },
            Val::Local(l) => ExprData::Local(*l),
            Val::Node(e) => ExprData::Local(self.node_local(f, cx, *e)),
            Val::Phi(b, s) => ExprData::Local(self.phi_local(f, cx, *b, *s, k.ty)),
        };
        f.add_expr(data)
    }
}

/// The value a load of `width` bits, extended to `ty` (`signed`), reads from bytes whose
/// contents are the low bits of the constant `v`.
pub fn fold_load(v: i64, width: MemWidth, signed: bool, ty: Type) -> i64 {
    let w = width.bits();
    let raw = if w == 64 { v as u64 } else { (v as u64) & ((1u64 << w) - 1) };
    let r = if signed && w < 64 { ((raw << (64 - w)) as i64) >> (64 - w) } else { raw as i64 };
    ty.normalize(r)
}

/// Converts `x` (of type `from`, whose low `width` bits are the bytes of a location) to
/// what a load of `width` bits extended to `to` (`signed`) reads there: exact by
/// construction (truncate, then sign- or zero-extend).
pub fn convert_load(f: &mut Function, x: Expr, from: Type, width: MemWidth, signed: bool, to: Type) -> Expr {
    if let ExprData::Const { value, .. } = f.exprs[x] {
        return f.add_expr(ExprData::Const { ty: to, value: fold_load(value, width, signed, to) });
    }
    let mut x = x;
    let w = width.bits();
    match (from, to) {
        (Type::I64, Type::I32) => x = f.add_expr(ExprData::Convert { op: ConvOp::Trunc, arg: x }),
        (Type::I32, Type::I64) => {
            let op = if signed && w == 32 { ConvOp::Sext } else { ConvOp::Zext };
            x = f.add_expr(ExprData::Convert { op, arg: x });
            if w >= 32 {
                return x;
            }
        }
        _ => {}
    }
    if w == to.bits() {
        return x;
    }
    let k = (to.bits() - w) as i64;
    if signed {
        let c = f.add_expr(ExprData::Const { ty: to, value: k });
        let sh = f.add_expr(ExprData::Binary { op: BinOp::Shl, lhs: x, rhs: c });
        let c2 = f.add_expr(ExprData::Const { ty: to, value: k });
        f.add_expr(ExprData::Binary { op: BinOp::Ashr, lhs: sh, rhs: c2 })
    } else {
        let m = f.add_expr(ExprData::Const { ty: to, value: to.normalize(((1u64 << w) - 1) as i64) });
        f.add_expr(ExprData::Binary { op: BinOp::And, lhs: x, rhs: m })
    }
}

#[cfg(test)]
mod tests {
    use super::fold_load;
    use crate::ir::{MemWidth::*, Type};

    #[test]
    fn forwarded_constants_extend_as_the_load_does() {
        // 300 = 0x12c: the low byte 0x2c = 44.
        assert_eq!(fold_load(300, W8, false, Type::I32), 44);
        // 0x80 as a signed byte is -128; unsigned 128.
        assert_eq!(fold_load(0x80, W8, true, Type::I32), -128);
        assert_eq!(fold_load(0x80, W8, false, Type::I32), 128);
        // -1 as an unsigned half in an i64: 0xffff.
        assert_eq!(fold_load(-1, W16, false, Type::I64), 65535);
        // The low word of 0x1_0000_8000 is 0x8000, positive either way.
        assert_eq!(fold_load(0x1_0000_8000, W32, true, Type::I64), 32768);
        // The low word 0x8000_0000: signed -2^31 in an i64, and as an i32 (canonical form).
        assert_eq!(fold_load(0x8000_0000, W32, true, Type::I64), -2147483648);
        assert_eq!(fold_load(0x8000_0000, W32, false, Type::I64), 2147483648);
        assert_eq!(fold_load(0x8000_0000, W32, false, Type::I32), -2147483648);
        assert_eq!(fold_load(i64::MIN, W64, false, Type::I64), i64::MIN);
    }
}
