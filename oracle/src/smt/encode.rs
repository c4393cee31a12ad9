//! The Z3 encoding of a function: symbolic execution of HIR or SSA over bit-vectors, a
//! fourth implementation of the semantics of `tandem_core::ir` (the interpreter in
//! `crate::exec::interp` is the reference; [`super::selfcheck`] holds this one to it).
//!
//! Values are bit-vectors of their type's width (`i32`: 32 bits, `i64`: 64). The heap is
//! an array from 32-bit absolute address to byte, the callframe one bit-vector per
//! variable, the trace a length plus arrays from event index to helper number and to each
//! argument (sign-extended to 64 bits; unused argument slots are 0). Every rule is the
//! interpreter's: wrapping arithmetic, masked shift counts, division traps, extending
//! loads, truncating stores, `select` evaluating all operands, left-to-right post-order,
//! helpers exactly as `crate::exec::runtime` does them (`mix`/`mix64` exactly, `heap_rmw` on
//! the symbolic heap, `cf_set` on the symbolic callframe, observable helpers appending an
//! event).
//!
//! Traps are precise without guarding every effect: each point where the run may stop
//! (a trap, an out-of-bounds access, a return) records the state at that point under the
//! path condition that reaches it (an *exit*), and execution continues under the negated
//! condition. States are immutable Z3 terms, so a recorded exit never sees later effects.
//!
//! [`encode_function`] unrolls the CFG for the bounded check, counting iterations per
//! loop: every target of a DFS back edge from the entry heads a loop (its body: the
//! blocks that reach one of its back edges without passing the header), and a copy of a
//! block is the block plus, per loop, the back-edge traversals since the run last entered
//! that loop. Leaving a loop resets its count; a back edge that would take a count past
//! the bound cuts the path: the run is beyond the bound and [`SymOutcome::in_bound`] is
//! false for it. So bound 2 covers every run in which each loop goes around at most twice
//! per entry, whatever the other loops do. The copies form a DAG, encoded in topological
//! order; at a copy, the states of the incoming edges (phis already applied, in parallel,
//! from the predecessor's locals) merge by `ite`. Since back edges come from a DFS, not
//! from dominance, irreducible CFGs unroll the same way. [`encode_step`] runs one block (and the
//! blocks a pass added after it) from a given entry state for the simulation check
//! (`super::simulate`).

use tandem_core::helpers::HelperKind;
use cranelift_entity::EntityRef;
use tandem_core::ir::*;
use z3::ast::{Array, Ast, Bool, BV};
use z3::Sort;
use super::numeral;

/// How a run (or a block, for the per-block check) ended, as the `kind` bit-vector.
pub const END_RETURN: u64 = 0;
pub const END_DIVIDE: u64 = 1;
pub const END_CHECK: u64 = 2;
pub const END_INVALID: u64 = 3;
/// The block was left through an edge to the block whose index is in `value` (per-block
/// check only).
pub const END_CONTINUE: u64 = 4;

/// Width of the `kind` bit-vector.
const KIND_BITS: u32 = 8;

/// Number of a helper in the trace's kind array.
fn helper_number(h: HelperKind) -> u64 {
    HelperKind::ALL.iter().position(|&k| k == h).expect("every helper is in ALL") as u64 + 1
}

/// The inputs both sides of a comparison share: arguments, initial heap, initial
/// callframe.
#[derive(Clone)]
pub struct Inputs {
    pub args: Vec<BV>,
    pub heap: Array,
    pub callframe: Vec<BV>,
}

impl Inputs {
    /// Fresh symbols for the inputs of `f`.
    pub fn fresh(f: &Function) -> Inputs {
        let args = f.params.iter().enumerate().map(|(i, &p)| BV::new_const(format!("arg{i}"), f.locals[p].ty.bits())).collect();
        let heap = Array::new_const("heap0", &Sort::bitvector(32), &Sort::bitvector(8));
        let callframe = f.cfvars.values().enumerate().map(|(i, d)| BV::new_const(format!("cf{i}"), d.ty.bits())).collect();
        Inputs { args, heap, callframe }
    }
}

/// The symbolic trace: how many events, and per index the helper number and arguments.
#[derive(Clone)]
pub struct Trace {
    pub len: BV,
    pub kind: Array,
    pub args: Vec<Array>,
}

impl Trace {
    /// The empty trace with `slots` argument slots.
    pub fn empty(slots: usize) -> Trace {
        let idx = Sort::bitvector(32);
        let kind = Array::const_array(&idx, &numeral(0, 8));
        let args = (0..slots).map(|_| Array::const_array(&idx, &numeral(0, 64))).collect();
        Trace { len: numeral(0, 32), kind, args }
    }

    fn push(&mut self, helper: HelperKind, args: &[BV]) {
        self.kind = self.kind.store(&self.len, &numeral(helper_number(helper), 8));
        for (i, slot) in self.args.iter_mut().enumerate() {
            let v = args.get(i).map_or_else(|| numeral(0, 64), to64);
            *slot = slot.store(&self.len, &v);
        }
        self.len = self.len.bvadd(numeral(1, 32));
    }

    fn merge(c: &Bool, a: &Trace, b: &Trace) -> Trace {
        Trace {
            len: ite_bv(c, &a.len, &b.len),
            kind: ite_array(c, &a.kind, &b.kind),
            args: a.args.iter().zip(&b.args).map(|(x, y)| ite_array(c, x, y)).collect(),
        }
    }
}

/// The machine state between two nodes.
#[derive(Clone)]
pub struct State {
    pub locals: Vec<BV>,
    pub heap: Array,
    pub callframe: Vec<BV>,
    pub trace: Trace,
}

impl State {
    /// The state of a run that stops here, as its outcome holds it: no locals, which no
    /// one reads after a run ([`SymOutcome`] compares the heap, the trace and the
    /// callframe). A copy of every local at each possible trap, and an `ite` per local
    /// per exit in the outcome, were a sixth of the simulation check's encoding.
    fn stopped(&self) -> State {
        State { locals: vec![], heap: self.heap.clone(), callframe: self.callframe.clone(), trace: self.trace.clone() }
    }

    fn merge(c: &Bool, a: &State, b: &State) -> State {
        State {
            locals: a.locals.iter().zip(&b.locals).map(|(x, y)| ite_bv(c, x, y)).collect(),
            heap: ite_array(c, &a.heap, &b.heap),
            callframe: a.callframe.iter().zip(&b.callframe).map(|(x, y)| ite_bv(c, x, y)).collect(),
            trace: Trace::merge(c, &a.trace, &b.trace),
        }
    }
}

/// How one exit ends.
#[derive(Clone)]
enum Ending {
    Return(BV),
    Divide,
    Check(u32),
    Invalid,
    Continue(Block),
}

/// The symbolic outcome of a run (or of a block).
#[derive(Clone)]
pub struct SymOutcome {
    /// One of the `END_*` numbers.
    pub kind: BV,
    /// The returned value sign-extended to 64 bits, or the next block's index.
    pub value: BV,
    /// The code of a `Check` trap.
    pub code: BV,
    /// The heap, trace and callframe where the run stops (no locals: [`State::stopped`]).
    pub state: State,
    /// The run finished within the bound (always true for a block).
    pub in_bound: Bool,
    /// For a step ([`encode_step`]): per block it may continue to, the state it enters
    /// that block with on that edge alone (not merged with the other exits), and the
    /// condition that it goes there. Empty for a whole run.
    pub continues: Vec<(Block, Bool, State)>,
    /// The nodes evaluated (and, for a whole run, the copies of blocks made) to build it:
    /// the encoding's work, which the validator charges to its budget.
    pub work: usize,
}

/// Why a function cannot be encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// The unrolled function would evaluate more than this many nodes.
    TooLarge(usize),
}

fn ite_bv(c: &Bool, a: &BV, b: &BV) -> BV {
    if a.ast_eq(b) {
        a.clone()
    } else {
        c.ite(a, b)
    }
}

fn ite_array(c: &Bool, a: &Array, b: &Array) -> Array {
    if a.ast_eq(b) {
        a.clone()
    } else {
        c.ite(a, b)
    }
}

/// Whether every argument of the term's top operator (and, for an `ite`, of its
/// condition's) is a numeral.
fn all_numerals(v: &BV) -> bool {
    use z3::ast::Ast;
    fn numeral(d: &z3::ast::Dynamic) -> bool {
        d.as_bv().is_some_and(|b| b.as_u64().is_some())
            || d.as_bool().is_some_and(|b| b.as_bool().is_some() || b.children().iter().all(numeral))
    }
    v.children().iter().all(numeral)
}

/// `a op b` where it keeps only the low bits of a value, extended, as the extension of
/// those bits: `ashr(shl(x, k), k)` is `sext(k, low(x))`, `lshr(shl(x, k), k)` is
/// `zext(k, low(x))`, and `and(x, 2^n - 1)` for `n` 8, 16 or 32 below the width is
/// `zext(low(x))`; the low bits of an extension are those of what it extends. These are
/// the terms a narrow load builds ([`Exec::load`]: the byte a store wrote, extended), so
/// that memopt's forwarded load (`ashr(shl(%val, 24), 24)` where the source loads
/// `load.i32.s8(A)` after `store.8(A, %val)`, ssa seed 614) is the source's very term,
/// not one the solver has to prove equal by bit-blasting what `%val` is. Equal in every
/// model: only the terms change. `None` for any other operation.
fn narrowed(op: BinOp, a: &BV, b: &BV, bits: u32) -> Option<BV> {
    let app = |v: &BV, kind: z3::DeclKind| v.kind() == z3::AstKind::App && v.decl().kind() == kind && v.num_children() == 2;
    let (x, keep, signed) = match (op, a.as_u64(), b.as_u64()) {
        (BinOp::Ashr | BinOp::Lshr, None, Some(k)) => {
            let k = k & (bits - 1) as u64;
            if k == 0 || !app(a, z3::DeclKind::Bshl) || a.nth_child(1)?.as_bv()?.as_u64()? != k {
                return None;
            }
            (a.nth_child(0)?.as_bv()?, bits - k as u32, op == BinOp::Ashr)
        }
        (BinOp::And, None, Some(m)) | (BinOp::And, Some(m), None) => {
            let x = if b.as_u64().is_some() { a.clone() } else { b.clone() };
            let n = [8u32, 16, 32].into_iter().find(|&n| n < bits && m == (1u64 << n) - 1)?;
            (x, n, false)
        }
        _ => return None,
    };
    let low = low_bits(&x, keep);
    Some(if signed { low.sign_ext(bits - keep) } else { low.zero_ext(bits - keep) })
}

/// The low `n` bits of `x`, through the extensions that put them there.
fn low_bits(x: &BV, n: u32) -> BV {
    if x.kind() == z3::AstKind::App && matches!(x.decl().kind(), z3::DeclKind::SignExt | z3::DeclKind::ZeroExt) {
        if let Some(y) = x.nth_child(0).and_then(|c| c.as_bv()) {
            let w = y.get_size();
            if n == w {
                return y;
            }
            if n < w {
                return low_bits(&y, n);
            }
        }
    }
    x.extract(n - 1, 0)
}

/// A bit-vector widened to 64 bits by sign extension (the canonical `i64` form).
pub fn to64(v: &BV) -> BV {
    let w = v.get_size();
    if w == 64 {
        v.clone()
    } else {
        v.sign_ext(64 - w)
    }
}

/// A value narrowed or sign-extended to `ty` (as `Value::new(ty, v)` on the canonical
/// form). A value that already has the width is returned as it is, so that the same value
/// is the same term on both sides of a comparison (Z3 does not fold `extract(sext(x))`
/// when it builds terms, and a pass that adds a copy must not change the term).
fn to_type(v: &BV, ty: Type) -> BV {
    let w = v.get_size();
    let t = ty.bits();
    if w == t {
        v.clone()
    } else if w > t {
        v.extract(t - 1, 0)
    } else {
        v.sign_ext(t - w)
    }
}

/// Whether `b` is false for every input, as far as a cheap look tells: only a condition
/// whose leaves (to a small depth) are all numerals is simplified. Simplifying any
/// condition costs the size of its whole term, which grows with the run (a local merged
/// at every join), and made encoding quadratic.
fn is_false(b: &Bool) -> bool {
    fn ground(d: &z3::ast::Dynamic, depth: u32) -> bool {
        if d.as_bv().is_some_and(|b| b.as_u64().is_some()) || d.as_bool().is_some_and(|b| b.as_bool().is_some()) {
            return true;
        }
        depth > 0 && d.num_children() > 0 && d.children().iter().all(|c| ground(c, depth - 1))
    }
    match b.as_bool() {
        Some(v) => !v,
        None => ground(&z3::ast::Dynamic::from_ast(b), 4) && super::simplified(b).as_bool() == Some(false),
    }
}

/// Symbolic execution of one function's blocks.
struct Exec<'a> {
    f: &'a Function,
    /// Borrowed until written: [`eval_value`] evaluates a tree that writes nothing in a
    /// state it was lent (a copy of every local per tree was a fifth of the simulation
    /// check's time).
    st: std::borrow::Cow<'a, State>,
    /// The path condition of the current point.
    alive: Bool,
    exits: Vec<(Bool, Ending, State)>,
    /// Nodes evaluated so far, against `limit`.
    work: usize,
    limit: usize,
}

impl Exec<'_> {
    /// Records a possible stop here under `cond` and continues under its negation.
    /// Conditions are simplified only to drop those that are constantly false; the terms
    /// kept are the ones built, because Z3's simplifier orders the arguments of `and`/`or`
    /// by term id, which depends on what was built before: simplified, the same guard can
    /// come out as different terms on the two sides, and the solver then has to prove
    /// them equal instead of seeing one term.
    fn stop_if(&mut self, cond: Bool, ending: Ending) {
        if is_false(&cond) {
            return;
        }
        let g = Bool::and(&[&self.alive, &cond]);
        self.exits.push((g, ending, self.st.stopped()));
        self.alive = Bool::and(&[&self.alive, &cond.not()]);
    }

    fn value(&mut self, e: Expr) -> Result<BV, EncodeError> {
        Ok(self.eval(e)?.expect("the verifier guarantees a value here"))
    }

    fn heap_bounds(addr: &BV, bytes: u32) -> Bool {
        let lo = numeral(HEAP_BASE as u64, 32);
        let hi = numeral((HEAP_BASE + HEAP_SIZE - bytes) as u64, 32);
        Bool::and(&[addr.bvuge(&lo), addr.bvule(&hi)])
    }

    fn load_bytes(heap: &Array, addr: &BV, n: u32) -> BV {
        let byte = |i: u32| load_byte(heap, &byte_index(addr, i));
        let mut v = byte(0);
        for i in 1..n {
            v = byte(i).concat(&v);
        }
        v
    }

    fn store_bytes(heap: &Array, addr: &BV, v: &BV, n: u32) -> Array {
        let mut h = heap.clone();
        for i in 0..n {
            h = store_byte(&h, &byte_index(addr, i), &byte_of(v, i));
        }
        h
    }

    /// Evaluates the tree at `e`: operands first, left to right, then the node. An
    /// operator whose operand values are all numerals yields a numeral (Z3 folds it), so
    /// that a pass that folds or propagates constants leaves the same term as the source
    /// computes.
    fn eval(&mut self, e: Expr) -> Result<Option<BV>, EncodeError> {
        let v = self.eval_node(e)?;
        let foldable = matches!(
            self.f.exprs[e],
            ExprData::Unary { .. } | ExprData::Binary { .. } | ExprData::Cmp { .. } | ExprData::Convert { .. } | ExprData::Select { .. }
        );
        Ok(match v {
            Some(v) if foldable && v.as_u64().is_none() && all_numerals(&v) => Some(super::simplified(&v)),
            v => v,
        })
    }

    fn eval_node(&mut self, e: Expr) -> Result<Option<BV>, EncodeError> {
        self.work += 1;
        if self.work > self.limit {
            return Err(EncodeError::TooLarge(self.limit));
        }
        let f = self.f;
        let ty = f.expr_type(e);
        Ok(match &f.exprs[e] {
            ExprData::Const { ty, value } => Some(numeral(*value as u64, ty.bits())),
            ExprData::Local(l) => Some(self.st.locals[l.index()].clone()),
            ExprData::Unary { op, arg } => {
                let a = self.value(*arg)?;
                Some(match op {
                    UnOp::Neg => a.bvneg(),
                    UnOp::Not => a.bvnot(),
                })
            }
            ExprData::Binary { op, lhs, rhs } => Some(self.binary(*op, *lhs, *rhs, ty.expect("binary yields a value"))?),
            ExprData::Cmp { op, lhs, rhs } => {
                let a = self.value(*lhs)?;
                let b = self.value(*rhs)?;
                let c = match op {
                    CmpOp::Eq => a.eq(&b),
                    CmpOp::Ne => a.eq(&b).not(),
                    CmpOp::Slt => a.bvslt(&b),
                    CmpOp::Sle => a.bvsle(&b),
                    CmpOp::Sgt => a.bvsgt(&b),
                    CmpOp::Sge => a.bvsge(&b),
                    CmpOp::Ult => a.bvult(&b),
                    CmpOp::Ule => a.bvule(&b),
                    CmpOp::Ugt => a.bvugt(&b),
                    CmpOp::Uge => a.bvuge(&b),
                };
                Some(c.ite(&numeral(1, 32), &numeral(0, 32)))
            }
            ExprData::Convert { op, arg } => {
                let a = self.value(*arg)?;
                Some(match op {
                    ConvOp::Sext => a.sign_ext(32),
                    ConvOp::Zext => a.zero_ext(32),
                    ConvOp::Trunc => a.extract(31, 0),
                })
            }
            ExprData::Select { cond, if_true, if_false } => {
                let c = self.value(*cond)?;
                let a = self.value(*if_true)?;
                let b = self.value(*if_false)?;
                let w = c.get_size();
                Some(c.eq(numeral(0, w)).ite(&b, &a))
            }
            ExprData::Load { ty, width, signed, addr } => Some(self.load(*ty, *width, *signed, *addr)?),
            ExprData::Store { width, addr, value } => {
                self.store(*width, *addr, *value)?;
                None
            }
            ExprData::CfRead(v) => Some(self.st.callframe[v.index()].clone()),
            ExprData::CfWrite { var, value } => {
                let v = self.value(*value)?;
                self.st.to_mut().callframe[var.index()] = to_type(&v, f.cfvars[*var].ty);
                None
            }
            ExprData::Assign { local, value } => {
                let v = self.value(*value)?;
                self.st.to_mut().locals[local.index()] = to_type(&v, f.locals[*local].ty);
                None
            }
            ExprData::Call { helper, args } => {
                let (params, _) = helper.signature();
                let mut vals = vec![];
                for (&a, &p) in args.iter().zip(params) {
                    let v = self.value(a)?;
                    vals.push(to_type(&v, p));
                }
                self.call(*helper, &vals)
            }
            ExprData::TrapIf { cond, code } => {
                let c = self.value(*cond)?;
                let w = c.get_size();
                self.stop_if(c.eq(numeral(0, w)).not(), Ending::Check(*code));
                None
            }
            ExprData::Comma { first, second } => {
                self.eval(*first)?;
                self.eval(*second)?
            }
        })
    }

    /// A binary operator: a division first records its trap (zero divisor, or `MIN / -1`
    /// for the signed ones), then the wrapping result with masked shift counts.
    fn binary(&mut self, op: BinOp, lhs: Expr, rhs: Expr, ty: Type) -> Result<BV, EncodeError> {
        let a = self.value(lhs)?;
        let b = self.value(rhs)?;
        let bits = ty.bits();
        let zero = numeral(0, bits);
        // The count modulo the width; a numeral where the count is one, so that a shift
        // by a constant of a numeral is a numeral ([`Exec::eval`] folds only operators
        // whose operands are numerals: `shl(%pre3, 2)` where `%pre3` holds 71 would stay
        // `bvshl(71, bvand(2, 31))` in the source while cprop's target has 284, memory
        // seed 614), and a shifted address has the bound [`upper_bound`] reads.
        let count = || match b.as_u64() {
            Some(n) => numeral(n & (bits - 1) as u64, bits),
            None => b.bvand(numeral((bits - 1) as u64, bits)),
        };
        let min = numeral(1u64 << (bits - 1), bits);
        let minus1 = numeral(u64::MAX, bits);
        if op.can_trap() {
            let mut cond = b.eq(&zero);
            if matches!(op, BinOp::Sdiv | BinOp::Srem) {
                cond = Bool::or(&[cond, Bool::and(&[a.eq(&min), b.eq(&minus1)])]);
            }
            self.stop_if(cond, Ending::Divide);
        }
        // A remainder of zero is zero whatever the divisor (zero too, in the encoding's
        // semantics), and so is a product with zero: folded here, so that the solver never
        // bit-blasts a 64-bit `srem` to find out (memory seed 6's memopt: two steps whose
        // `mul(srem(0, %a), %b)` differ only in `%a` took a query's whole share).
        let is_zero = |v: &BV| v.as_u64() == Some(0);
        if (matches!(op, BinOp::Srem | BinOp::Urem | BinOp::Mul) && is_zero(&a)) || (op == BinOp::Mul && is_zero(&b)) {
            return Ok(zero);
        }
        if let Some(v) = narrowed(op, &a, &b, bits) {
            return Ok(v);
        }
        Ok(match op {
            BinOp::Add => a.bvadd(&b),
            BinOp::Sub => a.bvsub(&b),
            BinOp::Mul => a.bvmul(&b),
            BinOp::And => a.bvand(&b),
            BinOp::Or => a.bvor(&b),
            BinOp::Xor => a.bvxor(&b),
            BinOp::Shl => a.bvshl(count()),
            BinOp::Lshr => a.bvlshr(count()),
            BinOp::Ashr => a.bvashr(count()),
            BinOp::Sdiv => a.bvsdiv(&b),
            BinOp::Srem => a.bvsrem(&b),
            BinOp::Udiv => a.bvudiv(&b),
            BinOp::Urem => a.bvurem(&b),
        })
    }

    /// A heap load: out of bounds ends the run as invalid; the bytes are little-endian,
    /// extended (signed or not) or truncated to the load's type.
    fn load(&mut self, ty: Type, width: MemWidth, signed: bool, addr: Expr) -> Result<BV, EncodeError> {
        let a = self.value(addr)?;
        let n = width.bytes();
        self.stop_if(Self::heap_bounds(&a, n).not(), Ending::Invalid);
        let raw = Self::load_bytes(&self.st.heap, &a, n);
        let bits = width.bits();
        let t = ty.bits();
        Ok(if bits == t {
            raw
        } else if bits > t {
            raw.extract(t - 1, 0)
        } else if signed {
            raw.sign_ext(t - bits)
        } else {
            raw.zero_ext(t - bits)
        })
    }

    /// A heap store: out of bounds ends the run as invalid; a store wider than its value
    /// stores the canonical (sign-extended) form.
    fn store(&mut self, width: MemWidth, addr: Expr, value: Expr) -> Result<(), EncodeError> {
        let a = self.value(addr)?;
        let v = self.value(value)?;
        self.stop_if(Self::heap_bounds(&a, width.bytes()).not(), Ending::Invalid);
        let heap = stored_heap(&self.st.heap, &a, &v, width);
        self.st.to_mut().heap = heap;
        Ok(())
    }

    /// A helper call, exactly as `crate::exec::runtime::call_helper` does it.
    fn call(&mut self, helper: HelperKind, a: &[BV]) -> Option<BV> {
        match helper {
            HelperKind::Log | HelperKind::Log64 => {
                self.st.to_mut().trace.push(helper, a);
                None
            }
            HelperKind::CfTrace => {
                let st = self.st.to_mut();
                st.trace.push(helper, &st.callframe.clone());
                None
            }
            HelperKind::CfSet => {
                let n = self.st.callframe.len() as u64;
                if n > 0 {
                    let idx = a[0].bvurem(numeral(n, 32));
                    for (i, d) in self.f.cfvars.values().enumerate() {
                        let new = to_type(&a[1], d.ty);
                        let hit = idx.eq(numeral(i as u64, 32));
                        let v = hit.ite(&new, &self.st.callframe[i]);
                        self.st.to_mut().callframe[i] = v;
                    }
                }
                None
            }
            HelperKind::HeapRmw => {
                let off = a[0].bvand(numeral((HEAP_SIZE - 4) as u64, 32));
                let addr = numeral(HEAP_BASE as u64, 32).bvadd(&off);
                let old = Self::load_bytes(&self.st.heap, &addr, 4);
                let heap = Self::store_bytes(&self.st.heap, &addr, &old.bvadd(&a[1]), 4);
                self.st.to_mut().heap = heap;
                Some(old)
            }
            HelperKind::Mix => {
                let m = a[0].bvmul(numeral(0x9E37_79B1, 32));
                Some(m.bvrotl(numeral(5, 32)).bvxor(&a[1]))
            }
            HelperKind::Mix64 => {
                let m = a[0].bvmul(numeral(0x9E37_79B9_7F4A_7C15, 64));
                Some(m.bvrotl(numeral(17, 64)).bvxor(&a[1]))
            }
        }
    }

    /// Runs the statements and the terminator of `b` from the current state. Returns the
    /// edges taken: (condition, target, state at the end of `b`).
    fn block(&mut self, b: Block) -> Result<Vec<(Bool, Block, State)>, EncodeError> {
        let data = &self.f.blocks[b];
        for &s in &data.stmts {
            self.eval(s)?;
        }
        let mut edges = vec![];
        match &data.term {
            Terminator::Jump(t) => edges.push((Bool::from_bool(true), *t)),
            Terminator::Branch { cond, then_dest, else_dest } => {
                let c = self.value(*cond)?;
                let w = c.get_size();
                let zero = c.eq(numeral(0, w));
                edges.push((zero.not(), *then_dest));
                edges.push((zero, *else_dest));
            }
            Terminator::Return(e) => {
                let v = self.value(*e)?;
                let v = to64(&to_type(&v, self.f.ret));
                self.stop_if(Bool::from_bool(true), Ending::Return(v));
            }
            Terminator::Switch { value, default, cases } => {
                let v = self.value(*value)?;
                let w = v.get_size();
                // The first case equal to the value wins, so a key's target is that of its
                // first case. One edge per distinct target, its guard a flat disjunction of
                // its keys (a chain of guards, one per case, grew quadratically and sent
                // every case as a state of its own into the same block).
                self.work += cases.len();
                if self.work > self.limit {
                    return Err(EncodeError::TooLarge(self.limit));
                }
                let mut seen = std::collections::HashSet::new();
                let mut by_target: Vec<(Block, Vec<Bool>)> = vec![];
                let mut misses = vec![];
                for (k, t) in cases {
                    if !seen.insert(*k) {
                        continue;
                    }
                    let hit = v.eq(numeral(*k as u64, w));
                    misses.push(hit.not());
                    match by_target.iter_mut().find(|(b, _)| b == t) {
                        Some((_, hits)) => hits.push(hit),
                        None => by_target.push((*t, vec![hit])),
                    }
                }
                for (t, hits) in by_target {
                    let refs: Vec<&Bool> = hits.iter().collect();
                    edges.push((Bool::or(&refs), t));
                }
                let all: Vec<&Bool> = misses.iter().collect();
                edges.push((Bool::and(&all), *default));
            }
        }
        // Only the edge's own condition is simplified: the path condition grows with the
        // run, and simplifying it at every edge made encoding quadratic.
        let edges: Vec<(Bool, Block)> = edges.into_iter().filter(|(c, _)| !is_false(c)).collect();
        let n = edges.len();
        // Every edge but the last takes a copy of the state, the last the state itself: a
        // copy of every local per edge was a third of a large function's step.
        Ok(edges
            .into_iter()
            .enumerate()
            .map(|(i, (c, t))| {
                let g = if c.as_bool() == Some(true) { self.alive.clone() } else { Bool::and(&[&self.alive, &c]) };
                let st = if i + 1 == n {
                    let rest = self.st.stopped();
                    std::mem::replace(self.st.to_mut(), rest)
                } else { self.st.as_ref().clone() };
                (g, t, st)
            })
            .collect())
    }
}

/// The state entering `target` from `pred`: `target`'s phis read `pred`'s locals in
/// parallel (a phi without an argument for `pred` reads 0, as the interpreter does).
fn enter(f: &Function, pred: Block, target: Block, mut st: State) -> State {
    let phis = &f.blocks[target].phis;
    if phis.is_empty() {
        return st;
    }
    let vals: Vec<(usize, BV)> = phis
        .iter()
        .map(|phi| {
            let w = f.locals[phi.dest].ty.bits();
            let src = phi.args.iter().find(|(pb, _)| *pb == pred).map(|(_, l)| *l);
            (phi.dest.index(), src.map_or_else(|| numeral(0, w), |l| st.locals[l.index()].clone()))
        })
        .collect();
    for (d, v) in vals {
        st.locals[d] = v;
    }
    st
}

/// Builds the outcome from the exits (their guards are mutually exclusive).
fn outcome_of(exits: Vec<(Bool, Ending, State)>, fallback: State, in_bound: Bool) -> SymOutcome {
    let mut kind = numeral(END_RETURN, KIND_BITS);
    let mut value = numeral(0, 64);
    let mut code = numeral(0, 32);
    let mut state = fallback.stopped();
    // The first exit ends the ite chain, so that the common one-exit case has no ite.
    for (i, (g, ending, mut st)) in exits.into_iter().rev().enumerate() {
        st.locals.clear();
        let (k, v, c) = match ending {
            Ending::Return(v) => (END_RETURN, v, numeral(0, 32)),
            Ending::Divide => (END_DIVIDE, numeral(0, 64), numeral(0, 32)),
            Ending::Check(c) => (END_CHECK, numeral(0, 64), numeral(c as u64, 32)),
            Ending::Invalid => (END_INVALID, numeral(0, 64), numeral(0, 32)),
            Ending::Continue(b) => (END_CONTINUE, numeral(b.index() as u64, 64), numeral(0, 32)),
        };
        let k = numeral(k, KIND_BITS);
        if i == 0 {
            kind = k;
            value = v;
            code = c;
            state = st;
        } else {
            kind = ite_bv(&g, &k, &kind);
            value = ite_bv(&g, &v, &value);
            code = ite_bv(&g, &c, &code);
            state = State::merge(&g, &st, &state);
        }
    }
    SymOutcome { kind, value, code, state, in_bound, continues: vec![], work: 0 }
}

/// Trace argument slots needed for `f`: two, or one per callframe variable for
/// `cf_trace` if that is more.
pub fn trace_slots(f: &Function) -> usize {
    f.cfvars.len().max(2)
}

/// The state a run of `f` starts in.
pub fn initial_state(f: &Function, inputs: &Inputs, slots: usize) -> State {
    let mut locals: Vec<BV> = f.locals.values().map(|d| numeral(0, d.ty.bits())).collect();
    for (&p, a) in f.params.iter().zip(&inputs.args) {
        locals[p.index()] = a.clone();
    }
    State { locals, heap: inputs.heap.clone(), callframe: inputs.callframe.clone(), trace: Trace::empty(slots) }
}

/// The DFS back edges from the entry (every cycle of the CFG holds one).
fn back_edges(f: &Function) -> Vec<(Block, Block)> {
    use std::collections::HashSet;
    let mut back = vec![];
    let mut on_stack = HashSet::new();
    let mut seen = HashSet::new();
    let mut stack: Vec<(Block, usize)> = vec![(f.entry(), 0)];
    seen.insert(f.entry());
    on_stack.insert(f.entry());
    while let Some((b, i)) = stack.pop() {
        let succs = f.blocks[b].term.successors();
        if i < succs.len() {
            stack.push((b, i + 1));
            let s = succs[i];
            if on_stack.contains(&s) {
                back.push((b, s));
            } else if seen.insert(s) {
                on_stack.insert(s);
                stack.push((s, 0));
            }
        } else {
            on_stack.remove(&b);
        }
    }
    back
}

/// The loops the unrolling counts: one per target of a DFS back edge (its header), with
/// its body, the blocks that reach one of its back edges' sources without passing the
/// header (and the header). Every block of a cycle through a back edge is in the body of
/// that edge's loop, so a counter is never reset along a cycle: the unrolling is finite.
struct Loops {
    headers: Vec<Block>,
    bodies: Vec<std::collections::HashSet<Block>>,
}

impl Loops {
    fn compute(f: &Function, back: &[(Block, Block)]) -> Loops {
        use std::collections::HashSet;
        let preds = f.predecessors();
        let mut headers: Vec<Block> = vec![];
        let mut bodies: Vec<HashSet<Block>> = vec![];
        for &(latch, h) in back {
            let i = match headers.iter().position(|&x| x == h) {
                Some(i) => i,
                None => {
                    headers.push(h);
                    bodies.push(HashSet::from([h]));
                    headers.len() - 1
                }
            };
            let mut work = vec![latch];
            while let Some(b) = work.pop() {
                if bodies[i].insert(b) {
                    work.extend(preds[b].iter().copied());
                }
            }
        }
        Loops { headers, bodies }
    }
}

/// One copy of a block in the unrolled function: the block and, per loop, how many times
/// the run has taken that loop's back edges since it last entered the loop.
type Copy = (Block, Vec<u32>);

/// The unrolled CFG: its copies in a topological order (the entry first), and per copy
/// where each successor block leads (`None`: past the bound, the run is cut there).
struct Unrolled {
    copies: Vec<Copy>,
    next: Vec<Vec<(Block, Option<usize>)>>,
}

/// Unrolls `f` so that every loop runs at most `bound` times around its back edges per
/// entry into the loop. Fails when the copies outnumber `limit`.
fn unroll(f: &Function, bound: u32, limit: usize) -> Result<Unrolled, EncodeError> {
    use std::collections::HashMap;
    let back = back_edges(f);
    let loops = Loops::compute(f, &back);
    let start: Copy = (f.entry(), vec![0; loops.headers.len()]);
    let mut index: HashMap<Copy, usize> = HashMap::from([(start.clone(), 0)]);
    let mut found = vec![start];
    let mut next: Vec<Vec<(Block, Option<usize>)>> = vec![];
    let mut i = 0;
    while i < found.len() {
        let (b, counts) = found[i].clone();
        let mut out = vec![];
        let mut succs = f.blocks[b].term.successors();
        succs.dedup();
        for t in succs {
            if out.iter().any(|(x, _)| *x == t) {
                continue;
            }
            let mut c = counts.clone();
            for (l, body) in loops.bodies.iter().enumerate() {
                if !body.contains(&t) {
                    c[l] = 0;
                }
            }
            let mut cut = false;
            if back.contains(&(b, t)) {
                let l = loops.headers.iter().position(|&h| h == t).expect("a back edge's target is a header");
                c[l] += 1;
                cut = c[l] > bound;
            }
            if cut {
                out.push((t, None));
                continue;
            }
            let key = (t, c);
            let n = match index.get(&key) {
                Some(&n) => n,
                None => {
                    if found.len() >= limit {
                        return Err(EncodeError::TooLarge(limit));
                    }
                    index.insert(key.clone(), found.len());
                    found.push(key);
                    found.len() - 1
                }
            };
            out.push((t, Some(n)));
        }
        next.push(out);
        i += 1;
    }
    let order = topological_order(&next);
    assert_eq!(order.len(), found.len(), "the unrolled CFG is acyclic");
    let mut position = vec![0; found.len()];
    for (p, &n) in order.iter().enumerate() {
        position[n] = p;
    }
    Ok(Unrolled {
        copies: order.iter().map(|&n| found[n].clone()).collect(),
        next: order.iter().map(|&n| next[n].iter().map(|(t, m)| (*t, m.map(|m| position[m]))).collect()).collect(),
    })
}

/// The copies of an unrolled CFG (`next`: per copy, the copies its successors lead to) in
/// a topological order: Kahn's algorithm, taking ready copies in the order they were
/// found.
fn topological_order(next: &[Vec<(Block, Option<usize>)>]) -> Vec<usize> {
    let mut indegree = vec![0usize; next.len()];
    for out in next {
        for (_, n) in out {
            if let Some(n) = n {
                indegree[*n] += 1;
            }
        }
    }
    let mut ready: std::collections::BTreeSet<usize> = (0..next.len()).filter(|&n| indegree[n] == 0).collect();
    let mut order = vec![];
    while let Some(n) = ready.pop_first() {
        order.push(n);
        for (_, m) in &next[n] {
            if let Some(m) = m {
                indegree[*m] -= 1;
                if indegree[*m] == 0 {
                    ready.insert(*m);
                }
            }
        }
    }
    order
}

/// Encodes a whole run of `f` on `inputs`, each loop unrolled to `bound` iterations per
/// entry (see [`unroll`]). `limit` bounds the number of nodes evaluated over all copies.
pub fn encode_function(f: &Function, inputs: &Inputs, slots: usize, bound: u32, limit: usize) -> Result<SymOutcome, EncodeError> {
    let u = unroll(f, bound, limit)?;
    let init = initial_state(f, inputs, slots);
    let mut incoming: Vec<Vec<(Bool, State)>> = vec![vec![]; u.copies.len()];
    incoming[0].push((Bool::from_bool(true), init.clone()));
    let mut exits = vec![];
    let mut cut = vec![];
    let mut work = u.copies.len();
    for (n, (b, _)) in u.copies.iter().enumerate() {
        let ins = std::mem::take(&mut incoming[n]);
        if ins.is_empty() {
            continue;
        }
        // One incoming edge passes its guard on as it is (not as a one-argument `or`),
        // so that a block inserted on an edge (a split critical edge) does not change
        // the terms after it.
        let guard = match &ins[..] {
            [(g, _)] => g.clone(),
            _ => Bool::or(&ins.iter().map(|(g, _)| g.clone()).collect::<Vec<_>>()),
        };
        let mut st = ins[0].1.clone();
        for (g, s) in &ins[1..] {
            st = State::merge(g, s, &st);
        }
        let mut ex = Exec { f, st: std::borrow::Cow::Owned(st), alive: guard, exits: vec![], work, limit };
        let edges = ex.block(*b)?;
        work = ex.work;
        exits.extend(ex.exits);
        for (g, t, s) in edges {
            let s = enter(f, *b, t, s);
            match u.next[n].iter().find(|(x, _)| *x == t).expect("every successor is unrolled").1 {
                Some(m) => incoming[m].push((g, s)),
                None => cut.push(g),
            }
        }
    }
    let in_bound = Bool::or(&cut).not();
    let mut out = outcome_of(exits, init, in_bound);
    out.work = work;
    Ok(out)
}

/// Encodes one step of the simulation check from block `b` of `f` and entry state `st`
/// (its phis already applied): runs `b`, and through every successor for which
/// `through` holds (blocks a pass added on an edge: they stutter), until the run stops or
/// enters a block for which it does not hold: that exit is `END_CONTINUE` with the
/// block's index in `value` and the state after that block's phis for the edge taken.
/// Fails when the blocks run through nest deeper than 16 (a cycle of added blocks).
pub fn encode_step(f: &Function, b: Block, st: State, through: &dyn Fn(Block) -> bool, limit: usize) -> Result<SymOutcome, EncodeError> {
    let mut exits = vec![];
    let mut work = 0;
    let fallback = st.stopped();
    let mut pending = vec![(b, Bool::from_bool(true), st, 0u32)];
    while let Some((blk, alive, s, depth)) = pending.pop() {
        let mut ex = Exec { f, st: std::borrow::Cow::Owned(s), alive, exits: vec![], work, limit };
        let edges = ex.block(blk)?;
        work = ex.work;
        exits.extend(ex.exits);
        for (g, t, s) in edges {
            let s = enter(f, blk, t, s);
            if through(t) {
                if depth >= 16 {
                    return Err(EncodeError::TooLarge(limit));
                }
                pending.push((t, g, s, depth + 1));
            } else {
                exits.push((g, Ending::Continue(t), s));
            }
        }
    }
    // Per next block, its exits merged (usually one).
    // The locals move out of the exits: the outcome keeps none.
    let mut continues: Vec<(Block, Bool, State)> = vec![];
    for (g, ending, s) in &mut exits {
        if let Ending::Continue(t) = ending {
            let s = State { locals: std::mem::take(&mut s.locals), ..s.stopped() };
            match continues.iter_mut().find(|(b, _, _)| b == t) {
                Some((_, h, st)) => {
                    *st = State::merge(g, &s, st);
                    *h = Bool::or(&[&*h, g]);
                }
                None => continues.push((*t, g.clone(), s)),
            }
        }
    }
    let mut out = outcome_of(exits, fallback, Bool::from_bool(true));
    out.continues = continues;
    out.work = work;
    Ok(out)
}

/// The bytes of `heap` at `addr` and on, `n` of them, little-endian (a load's raw value).
pub fn heap_bytes(heap: &Array, addr: &BV, n: u32) -> BV {
    Exec::load_bytes(heap, addr, n)
}

/// The index of byte `i` of an access at `addr`: a numeral where the address is one (so
/// that the bytes at constant addresses are numerals, which [`store_byte`] and the solver
/// compare at once), else `addr + i`.
fn byte_index(addr: &BV, i: u32) -> BV {
    match addr.as_u64() {
        Some(n) => numeral(n.wrapping_add(i as u64) & 0xFFFF_FFFF, 32),
        None => addr.bvadd(numeral(i as u64, 32)),
    }
}

/// Byte `i` of `v`: the operand itself where `v` concatenates bytes (as a load's value
/// does: [`Exec::load_bytes`]), so that storing back the bytes a load read is a store of
/// `select(heap, i)` that [`store_byte`] sees; through an extension or a truncation to a
/// byte of the operand the byte lies in (`store.32(A, load.i64.u32(A))`: byte 0 of
/// `zero_extend(concat(..))`, not an extract of it: ssa seed 1776's memopt, which removes
/// that store, gave up the heaps after it); else an extract.
fn byte_of(v: &BV, i: u32) -> BV {
    if v.get_size() == 8 && i == 0 {
        return v.clone();
    }
    if v.kind() == z3::AstKind::App {
        let child = |k: usize| v.nth_child(k).and_then(|x| x.as_bv());
        match v.decl().kind() {
            z3::DeclKind::Concat if v.num_children() == 2 => {
                if let (Some(hi), Some(lo)) = (child(0), child(1)) {
                    let low = lo.get_size();
                    if low % 8 == 0 {
                        return if 8 * i < low { byte_of(&lo, i) } else { byte_of(&hi, i - low / 8) };
                    }
                }
            }
            z3::DeclKind::ZeroExt | z3::DeclKind::SignExt => {
                if let Some(x) = child(0).filter(|x| 8 * i + 8 <= x.get_size()) {
                    return byte_of(&x, i);
                }
            }
            // The low bits of `x` (a truncation): the same term as `x`'s extract from 0.
            z3::DeclKind::Extract => {
                if let Some(x) = child(0).filter(|x| v.ast_eq(x.extract(v.get_size() - 1, 0))) {
                    return byte_of(&x, i);
                }
            }
            _ => {}
        }
    }
    v.extract(8 * i + 7, 8 * i)
}

/// How far [`store_byte`] and [`load_byte`] look down a heap's stores for one at the same
/// index. Where one side has more stores on top than the other (the source of a dead
/// store: its bytes, later overwritten), a walk that stops at this depth on one side and
/// not on the other builds two terms for one byte; default seed 646's memopt, whose loads
/// pass a dead store's 8 bytes and 20 bytes of `heap_rmw` words, was `unknown` at 16.
const STORE_WALK: usize = 64;

/// `heap` with byte `v` stored at `i`, in a canonical form. Down the heap's stores at
/// indices distinct from `i` by their terms (at most [`STORE_WALK`]): where `v` is what the
/// heap there holds at `i` (`select`), or what a store at `i` itself there wrote, the store
/// changes nothing and is left out; where another store at `i` lies there, it is shadowed
/// and taken out, the stores above it kept, and the new byte goes on top (or nowhere,
/// where it is what the heap below the shadowed store held). So a store overwritten by a
/// later one at the same address, with stores elsewhere between, leaves the term of those
/// stores and the later one alone: the source of memopt's dead store (`store.32(A, x)`,
/// then stores elsewhere, then `store.32(A, y)`, bytes interleaved at `A`, `A+1`, ...) and
/// the target without it compute one heap term, which no query then compares cell by cell
/// (default seeds 13 and 20's memopt gave the heaps up on such blocks). And the source's
/// heap with the target's bytes put back at a removed store (a dead store's candidate) is
/// the target's heap. After a shadowed store is taken out, the new byte is stored anew on
/// what is left (a store at `i` further down may hold it already). Stores at numerals
/// commute into one order, the larger numeral on top: a byte at a numeral goes under the
/// stores on top at larger numerals. So a dead store's source (a store at `1048904`, then
/// one at `1048936`, a `heap_rmw` word) and its target (`1048936` held the target's byte
/// below `1048904`, and was replaced) build one term (memory seed 705's memopt ran out of
/// budget comparing the two heaps). Equal arrays in every model: only the terms change.
fn store_byte(heap: &Array, i: &BV, v: &BV) -> Array {
    let past = PAST_MAY_ALIAS.with(std::cell::Cell::get);
    let index = Index::of(i);
    let at = index.numeral();
    // Where the new store goes when no store at `i` lies below: under the stores on top at
    // numerals greater than `i`'s (a numeral too): how many of them, and the heap below.
    let mut under: Option<(usize, Array)> = None;
    let mut above: Vec<(BV, BV)> = vec![];
    let mut cur = heap.clone();
    // Past a store that may be at `i` ([`past_may_alias`] only): what the heap below holds
    // at `i` is no longer what the whole heap holds there.
    let mut blocked = false;
    for _ in 0..STORE_WALK {
        if !blocked && (rereads(v, &cur, i) || past && reads_at(v, i) && rereads(v, &apart_from(&cur, &index), i)) {
            return heap.clone();
        }
        let Some((below, j, w)) = top_store(&cur) else { break };
        match same_index(&index, &j) {
            Some(true) if !blocked && w.ast_eq(v) => return heap.clone(),
            Some(true) => {
                let mut h = below;
                for (j, w) in above.iter().rev() {
                    h = h.store(j, w);
                }
                return store_byte(&h, i, v);
            }
            Some(false) => {
                let larger = at.is_some_and(|n| Index::of(&j).numeral().is_some_and(|m| m > n));
                if under.is_none() && !larger {
                    under = Some((above.len(), cur.clone()));
                }
                above.push((j, w));
                cur = below;
            }
            None if past => {
                if under.is_none() {
                    under = Some((above.len(), cur.clone()));
                }
                blocked = true;
                above.push((j, w));
                cur = below;
            }
            None => {
                STOPPED.with(|s| s.set(true));
                if !SHADOWABLE.with(std::cell::Cell::get) && at_index_below(&below, &index) {
                    SHADOWABLE.with(|s| s.set(true));
                }
                break;
            }
        }
    }
    let (k, base) = under.unwrap_or((above.len(), cur));
    let mut h = base.store(i, v);
    for (j, w) in above[..k].iter().rev() {
        h = h.store(j, w);
    }
    h
}

thread_local! {
    /// Whether the heap's canonical form looks past stores that may be at a byte's index
    /// ([`past_may_alias`]).
    static PAST_MAY_ALIAS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Whether a walk down a heap's stores stopped at one that may be at its index
    /// ([`stopped_at_may_alias`]).
    static STOPPED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Whether a store's walk stopped so above a store at its own index
    /// ([`shadows_past_may_alias`]).
    static SHADOWABLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Starts watching the plain canonical form's walks afresh ([`stopped_at_may_alias`],
/// [`shadows_past_may_alias`]).
pub(super) fn watch_walks() {
    STOPPED.with(|s| s.set(false));
    SHADOWABLE.with(|s| s.set(false));
}

/// Whether, since [`watch_walks`], a walk of the plain canonical form down a heap's stores
/// stopped at a store that may be at its byte's index: where it did not, the form of
/// [`past_may_alias`] builds the same terms.
pub(super) fn stopped_at_may_alias() -> bool {
    STOPPED.with(std::cell::Cell::get)
}

/// Whether, since [`watch_walks`], a store's walk of the plain canonical form stopped at a
/// store that may be at its byte's index, with a store at that very index below it: one
/// the form of [`past_may_alias`] takes out.
pub(super) fn shadows_past_may_alias() -> bool {
    SHADOWABLE.with(std::cell::Cell::get)
}

/// Whether one of `heap`'s top stores (at most [`STORE_WALK`]) is at `index` by its term.
fn at_index_below(heap: &Array, index: &Index) -> bool {
    let mut cur = heap.clone();
    for _ in 0..STORE_WALK {
        let Some((below, j, _)) = top_store(&cur) else { return false };
        if same_index(index, &j) == Some(true) {
            return true;
        }
        cur = below;
    }
    false
}

/// Runs `work` with a heap's canonical form that also takes a store out from under stores
/// whose index may be its own, where a later store at its index goes on top ([`store_byte`]:
/// `s(A, x); s(B, w); s(A, y)` is `s(B, w); s(A, y)` in every model, whether or not `B`
/// is `A`), and reads a byte through such a store from the heap below without the stores
/// at indices distinct from its own ([`load_byte`], [`apart_from`]). So memopt's source,
/// with a store a later one at its address overwrites across a `heap_rmw` word, and its
/// target without it build one heap term, and a load between them one byte term (the
/// source's heap below the word has lost the first store, the target's has not). Every
/// load through a word builds a new array term, which spends the budget of the pairs the
/// plain form proves (default seeds 1312, 1441 and 1758's memopt), so the simulation check
/// tries this form last, only where the plain one differed. Restored when `work` ends or
/// panics.
pub(super) fn past_may_alias<T>(work: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            PAST_MAY_ALIAS.with(|p| p.set(self.0));
        }
    }
    let _restore = Restore(PAST_MAY_ALIAS.with(|p| p.replace(true)));
    work()
}

/// `heap` without its stores at indices distinct from `index`'s by their terms (down at
/// most [`STORE_WALK`] stores): equal to `heap` at `index` in every model. What a byte is
/// read from below a store that may be at its index ([`past_may_alias`]).
fn apart_from(heap: &Array, index: &Index) -> Array {
    let mut kept: Vec<(BV, BV)> = vec![];
    let mut cur = heap.clone();
    let mut dropped = false;
    for _ in 0..STORE_WALK {
        let Some((below, j, w)) = top_store(&cur) else { break };
        if same_index(index, &j) == Some(false) {
            dropped = true;
        } else {
            kept.push((j, w));
        }
        cur = below;
    }
    if !dropped {
        return heap.clone();
    }
    for (j, w) in kept.iter().rev() {
        cur = cur.store(j, w);
    }
    cur
}

/// The byte `heap` holds at `i`, in a canonical form: down the heap's stores at indices
/// distinct from `i` by their terms (at most [`STORE_WALK`]), the byte of a store at `i`
/// itself, else a `select` of the heap below those stores. So a load of what a store just
/// wrote is the stored byte, as in the target where memopt forwards the value (default
/// seed 19's memopt: `store.8(A, comma(store.64(A, v), load.i64(A)))` against
/// `store.8(A, comma(store.64(A, v), v))`), and a load is the same term whatever stores
/// elsewhere lie above it. Equal in every model: only the terms change.
fn load_byte(heap: &Array, i: &BV) -> BV {
    let index = Index::of(i);
    let mut cur = heap.clone();
    for _ in 0..STORE_WALK {
        let Some((below, j, w)) = top_store(&cur) else { break };
        match same_index(&index, &j) {
            Some(true) => return w,
            Some(false) => cur = below,
            None => {
                if PAST_MAY_ALIAS.with(std::cell::Cell::get) {
                    cur = apart_from(&cur, &index);
                } else {
                    STOPPED.with(|s| s.set(true));
                }
                break;
            }
        }
    }
    cur.select(i).as_bv().expect("the heap holds bytes")
}

/// The heap below `h`'s top store, and that store's index and byte, if `h` is a store.
pub(super) fn top_store(h: &Array) -> Option<(Array, BV, BV)> {
    if h.kind() != z3::AstKind::App || h.decl().kind() != z3::DeclKind::Store || h.num_children() != 3 {
        return None;
    }
    Some((h.nth_child(0)?.as_array()?, h.nth_child(1)?.as_bv()?, h.nth_child(2)?.as_bv()?))
}

/// Whether `v` is the byte `heap` holds at `i` (`select(heap, i)`): storing it changes
/// nothing. The heap a dead store's candidate builds, the source's with the target's bytes
/// put back, is then the target's heap as a term.
fn rereads(v: &BV, heap: &Array, i: &BV) -> bool {
    let v = &extended_byte(v);
    v.kind() == z3::AstKind::App
        && v.decl().kind() == z3::DeclKind::Select
        && v.num_children() == 2
        && v.nth_child(0).is_some_and(|h| h.ast_eq(heap))
        && v.nth_child(1).is_some_and(|j| j.ast_eq(i))
}

/// Whether `v` is a byte some heap holds at `i` (`select(_, i)`), for [`store_byte`] to
/// ask [`rereads`] of a heap it builds only then. Not part of [`rereads`]: the terms that
/// [`extended_byte`] makes, made twice, changed Z3's ids of later terms and with them
/// answers of the plain form (memory seed 1963's memopt).
fn reads_at(v: &BV, i: &BV) -> bool {
    let v = &extended_byte(v);
    v.kind() == z3::AstKind::App && v.decl().kind() == z3::DeclKind::Select && v.num_children() == 2 && v.nth_child(1).is_some_and(|j| j.ast_eq(i))
}

/// The byte `v` is, where it is the low byte of an extended byte (`extract(7, 0,
/// zero_extend(b))`: a narrow load's value stored back at its width), else `v`: the
/// store of `load.i32.u8(A)` at `A` then rereads the byte the load read (memory seed
/// 1039's memopt: `%t6.1 = load.i32.u8(A)`, `call @log(..)`, `store.8(A, %t6.1)`, which
/// memopt removes, left the source's heap a store apart from the target's).
fn extended_byte(v: &BV) -> BV {
    let extended = |c: &BV| c.kind() == z3::AstKind::App && matches!(c.decl().kind(), z3::DeclKind::ZeroExt | z3::DeclKind::SignExt);
    if v.kind() != z3::AstKind::App || v.decl().kind() != z3::DeclKind::Extract || v.get_size() != 8 {
        return v.clone();
    }
    match v.nth_child(0).and_then(|c| c.as_bv()) {
        Some(c) if extended(&c) => match c.nth_child(0).and_then(|b| b.as_bv()) {
            Some(b) if b.get_size() == 8 && v.ast_eq(&c.extract(7, 0)) => b,
            _ => v.clone(),
        },
        _ => v.clone(),
    }
}

/// Whether two byte indices are equal (`Some(true)`), distinct (`Some(false)`) or either
/// (`None`), by their terms alone: numerals, the same term plus different constants (the
/// bytes of one access), or ranges that do not meet ([`index_range`]: the generator's
/// addresses are a region's base plus a masked offset, so default seed 26's stores at
/// `1048753` and at `1048832 + and(x, 248)` are distinct).
fn same_index(a: &Index, b: &BV) -> Option<bool> {
    let mask = |n: u64| n & 0xFFFF_FFFF;
    let pb = index_parts(b);
    match (&a.parts, &pb) {
        ((None, x), (None, y)) => return Some(mask(*x) == mask(*y)),
        ((Some(p), x), (Some(q), y)) if p.ast_eq(q) => return Some(mask(*x) == mask(*y)),
        _ => {}
    }
    let ((alo, ahi), (blo, bhi)) = (a.range()?, index_range(&pb)?);
    (ahi < blo || bhi < alo).then_some(false)
}

/// The index a walk down a heap's stores compares with each store's ([`same_index`]): its
/// parts worked out once for the walk, not at every store it passes, and its range when
/// first asked.
struct Index {
    parts: (Option<BV>, u64),
    range: std::cell::OnceCell<Option<(u64, u64)>>,
}

impl Index {
    fn of(i: &BV) -> Index {
        Index { parts: index_parts(i), range: std::cell::OnceCell::new() }
    }

    fn range(&self) -> Option<(u64, u64)> {
        *self.range.get_or_init(|| index_range(&self.parts))
    }

    /// The index's value where its parts are a numeral.
    fn numeral(&self) -> Option<u64> {
        self.parts.0.is_none().then_some(self.parts.1 & 0xFFFF_FFFF)
    }
}

/// The unsigned values an index of [`index_parts`] may take, where it cannot wrap: the
/// offset plus `0 ..= ` [`upper_bound`] of the base.
fn index_range((base, offset): &(Option<BV>, u64)) -> Option<(u64, u64)> {
    let lo = offset & 0xFFFF_FFFF;
    let hi = lo + base.as_ref().map_or(Some(0), upper_bound)?;
    let lo = lo + base.as_ref().map_or(0, lower_bound);
    (hi <= 0xFFFF_FFFF).then_some((lo, hi))
}

/// A lower bound of a term's unsigned value, by its operators: a numeral; a
/// concatenation (its parts' bounds, each at its place); `add` of terms whose upper
/// bounds do not overflow; an `ite`'s smaller branch. Else 0.
fn lower_bound(x: &BV) -> u64 {
    if let Some(n) = x.as_u64() {
        return n;
    }
    if x.kind() != z3::AstKind::App {
        return 0;
    }
    let arg = |k: usize| x.nth_child(k).and_then(|c| c.as_bv());
    match x.decl().kind() {
        z3::DeclKind::Concat if x.get_size() <= 32 => concat_bound(x, lower_bound).unwrap_or(0),
        // Without overflow at the term's own width (a part of a concatenation may be
        // narrower than 32 bits), the sum is at least the sum of the lower bounds.
        z3::DeclKind::Badd if upper_bound(x).is_some_and(|u| u >> x.get_size().min(63) == 0) => (0..x.num_children()).filter_map(arg).map(|a| lower_bound(&a)).sum(),
        z3::DeclKind::Ite => match (arg(1), arg(2)) {
            (Some(t), Some(e)) => lower_bound(&t).min(lower_bound(&e)),
            _ => 0,
        },
        _ => 0,
    }
}

/// A bound of a concatenation of at most 32 bits: each part's `bound`, shifted to its
/// place (the first part is the most significant).
fn concat_bound(x: &BV, bound: impl Fn(&BV) -> u64) -> Option<u64> {
    let mut total = 0u64;
    for k in 0..x.num_children() {
        let part = x.nth_child(k)?.as_bv()?;
        let width = part.get_size();
        total = (total << width) | bound(&part).min((1u64 << width) - 1);
    }
    Some(total)
}

/// An upper bound of a 32-bit term's unsigned value, by its operators: a numeral; `and`
/// with a bounded operand; `shl` by a numeral and `add` of bounded terms, without
/// overflow; `urem` by a numeral other than 0; a zero extension; a concatenation; an
/// `ite`'s larger branch; an extraction's width. `None`: unbounded.
fn upper_bound(x: &BV) -> Option<u64> {
    if let Some(n) = x.as_u64() {
        return Some(n);
    }
    if x.kind() != z3::AstKind::App {
        return None;
    }
    // The operands, read where needed (the walks of `store_byte` and `load_byte` ask at
    // every store they pass).
    let arg = |k: usize| x.nth_child(k).and_then(|c| c.as_bv());
    let mut args = (0..x.num_children()).filter_map(arg);
    let fits = |n: u64| (n <= 0xFFFF_FFFF).then_some(n);
    match x.decl().kind() {
        z3::DeclKind::Band => args.filter_map(|a| upper_bound(&a)).min(),
        z3::DeclKind::Badd => args.try_fold(0, |sum, a| fits(sum + upper_bound(&a)?)),
        z3::DeclKind::Bshl if x.num_children() == 2 => {
            let k = arg(1)?.as_u64().filter(|&k| k < 32)?;
            fits(upper_bound(&arg(0)?)? << k)
        }
        z3::DeclKind::Burem | z3::DeclKind::BuremI if x.num_children() == 2 => arg(1)?.as_u64().filter(|&m| m > 0).map(|m| m - 1),
        // Z3's simplifier writes `base + and(x, 7)` with an aligned base as a
        // concatenation (`concat(#x00100be, extract(2, 0, x))`).
        z3::DeclKind::Concat if x.get_size() <= 32 => concat_bound(x, |p| upper_bound(p).unwrap_or((1u64 << p.get_size()) - 1)),
        z3::DeclKind::Ite => Some(upper_bound(&arg(1)?)?.max(upper_bound(&arg(2)?)?)),
        z3::DeclKind::Extract if x.get_size() <= 32 => Some((1u64 << x.get_size()) - 1),
        // A zero extension of `w` bits (a narrow load, a masked value: [`narrowed`]).
        z3::DeclKind::ZeroExt => {
            let y = arg(0)?;
            let max = (1u64 << y.get_size().min(32)) - 1;
            Some(upper_bound(&y).map_or(max, |u| u.min(max)))
        }
        _ => None,
    }
}

/// An index as a base term (none for a numeral) and a constant offset: sums with numerals
/// are flattened, so `(x + 8) + 1` is `x` and 9, and an `and` of numerals is its value, so
/// that `heap_rmw`'s word at a constant address (`1048576 + and(360, 4092)`, which the
/// encoder leaves a term: it is the source's where the address is a local) is the numeral
/// 1048936 that a store there writes, and apart from other numerals (memory seeds 604 and
/// 646's memopt, whose stores and loads lay beside such words).
fn index_parts(x: &BV) -> (Option<BV>, u64) {
    if let Some(n) = x.as_u64() {
        return (None, n);
    }
    if x.kind() == z3::AstKind::App && x.decl().kind() == z3::DeclKind::Band {
        let numerals: Option<Vec<u64>> = (0..x.num_children()).map(|k| x.nth_child(k)?.as_bv()?.as_u64()).collect();
        if let Some(n) = numerals.and_then(|ns| ns.into_iter().reduce(|m, n| m & n)) {
            return (None, n);
        }
    }
    if x.kind() == z3::AstKind::App && x.decl().kind() == z3::DeclKind::Badd && x.num_children() == 2 {
        if let (Some(p), Some(q)) = (x.nth_child(0).and_then(|d| d.as_bv()), x.nth_child(1).and_then(|d| d.as_bv())) {
            let (c, rest) = match (p.as_u64(), q.as_u64()) {
                (_, Some(c)) => (c, p),
                (Some(c), None) => (c, q),
                (None, None) => return (Some(x.clone()), 0),
            };
            let (base, o) = index_parts(&rest);
            return (base, o.wrapping_add(c));
        }
    }
    (Some(x.clone()), 0)
}

/// `heap` after a store of `width` of `v` at `addr` (a store wider than its value writes
/// the canonical, sign-extended form); no bounds check. [`Exec::store`] writes with it.
pub fn stored_heap(heap: &Array, addr: &BV, v: &BV, width: MemWidth) -> Array {
    let n = width.bytes();
    let v = if 8 * n > v.get_size() { to64(v) } else { v.clone() };
    Exec::store_bytes(heap, addr, &v, n)
}

/// Whether the tree at `e` only computes a value: no store, callframe write, assignment,
/// check, comma or helper with an effect (divisions, loads and callframe reads are
/// values here; their traps are the statements' business).
pub fn is_value_tree(f: &Function, e: Expr) -> bool {
    let mut ok = true;
    f.visit_postorder(e, &mut |n| {
        ok &= match &f.exprs[n] {
            ExprData::Store { .. } | ExprData::CfWrite { .. } | ExprData::Assign { .. } | ExprData::TrapIf { .. } | ExprData::Comma { .. } => false,
            ExprData::Call { helper, .. } => helper.effects().is_pure(),
            _ => true,
        }
    });
    ok
}

/// The value of the tree at `e` (a value tree: [`is_value_tree`]) in state `st`, as the
/// target of an assignment would hold it: of type `ty`.
pub fn eval_value(f: &Function, e: Expr, st: &State, ty: Type, limit: usize) -> Result<BV, EncodeError> {
    let mut ex = Exec { f, st: std::borrow::Cow::Borrowed(st), alive: Bool::from_bool(true), exits: vec![], work: 0, limit };
    Ok(to_type(&ex.value(e)?, ty))
}

#[cfg(test)]
mod tests {
    use super::*;
    use z3::SatResult;

    fn heap() -> Array {
        Array::new_const("h", &Sort::bitvector(32), &Sort::bitvector(8))
    }

    /// Every byte stored with Z3's `store` at `addr + i`, in order: the heap without the
    /// canonical form.
    fn plain_stores(h: &Array, addr: &BV, v: &BV, n: u32) -> Array {
        let mut h = h.clone();
        for i in 0..n {
            h = h.store(&addr.bvadd(BV::from_u64(i as u64, 32)), &v.extract(8 * i + 7, 8 * i));
        }
        h
    }

    /// The address of `heap_rmw`'s word at the constant `n`, as the encoder builds it.
    fn rmw_word(n: u64) -> BV {
        BV::from_u64(HEAP_BASE as u64, 32).bvadd(BV::from_u64(n, 32).bvand(BV::from_u64((HEAP_SIZE - 4) as u64, 32)))
    }

    /// Sequences of stores of 1, 2, 4 and 8 bytes at `a + k`, `b + k` (two symbols that may
    /// or may not be equal, or overlap), `1048832 + and(c, 248) + k` (a range), numerals
    /// (some in that range, some below it) and `heap_rmw`'s words at constants (which
    /// overlap those numerals), with values that are symbols or loads
    /// of the heap so far: the canonical heap equals the plain one in every model (Z3
    /// proves it). A canonical form that merged stores at indices that may be equal, or
    /// dropped a store that is not a no-op, fails it. So too with the form that looks past
    /// stores that may alias ([`past_may_alias`]).
    #[test]
    fn canonical_stores_build_the_heap_plain_stores_build() {
        stores_build_the_plain_heap();
        past_may_alias(stores_build_the_plain_heap);
    }

    fn stores_build_the_plain_heap() {
        let (a, b) = (BV::new_const("a", 32), BV::new_const("b", 32));
        // `1048832 + and(c, 248)`: in [1048832, 1049080], which numerals below it never meet.
        let masked = BV::from_u64(1_048_832, 32).bvadd(BV::new_const("c", 32).bvand(BV::from_u64(248, 32)));
        let mut rng: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = |m: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % m
        };
        for round in 0..200 {
            let (mut canon, mut plain) = (heap(), heap());
            for k in 0..6 {
                let n = [1, 2, 4, 8][next(4) as usize];
                let addr = match next(6) {
                    0 => a.bvadd(BV::from_u64(next(6), 32)),
                    1 => b.bvadd(BV::from_u64(next(6), 32)),
                    2 => BV::from_u64(1_048_576 + next(6), 32),
                    3 => masked.bvadd(BV::from_u64(next(6), 32)),
                    4 => rmw_word(250 + next(12)).bvadd(BV::from_u64(next(4), 32)),
                    _ => BV::from_u64(1_048_826 + next(12), 32),
                };
                let v = match next(2) {
                    0 => BV::new_const(format!("v{round}_{k}"), 8 * n),
                    _ => Exec::load_bytes(&canon, &addr, n),
                };
                canon = Exec::store_bytes(&canon, &addr, &v, n);
                plain = plain_stores(&plain, &addr, &v, n);
            }
            let s = super::super::solver();
            s.assert(&canon.eq(&plain).not());
            assert_eq!(s.check(), SatResult::Unsat, "round {round}: {canon} and {plain}");
        }
    }

    /// The terms the canonical form is for: a store overwritten at the same address is the
    /// later store alone, across a store elsewhere on the same base (`a + 8`), but not
    /// across one at a numeral (it may write `a`); so too at a numeral address; storing
    /// back what a load read is no store; stores at two symbols stay apart (they may be
    /// one address); a numeral below a masked address's range is elsewhere, one in it is
    /// not; a load reads back what a store wrote. Across a store at a numeral too, in the
    /// form that looks past stores that may alias.
    #[test]
    fn an_overwritten_store_leaves_the_term_of_the_later_one() {
        let (a, b, x, y) = (BV::new_const("a", 32), BV::new_const("b", 32), BV::new_const("x", 32), BV::new_const("y", 32));
        let h = heap();
        let other = |h: &Array, at: &BV| Exec::store_bytes(h, at, &BV::from_u64(9, 16), 2);
        let beside = a.bvadd(BV::from_u64(8, 32));
        let twice = Exec::store_bytes(&other(&Exec::store_bytes(&h, &a, &x, 4), &beside), &a, &y, 4);
        let once = Exec::store_bytes(&other(&h, &beside), &a, &y, 4);
        assert!(twice.ast_eq(&once), "{twice}\n{once}");
        // A store at a numeral between them may write `a`: the first store stays.
        let numeral = BV::from_u64(1_048_600, 32);
        let across = Exec::store_bytes(&other(&Exec::store_bytes(&h, &a, &x, 4), &numeral), &a, &y, 4);
        assert!(!across.ast_eq(&Exec::store_bytes(&other(&h, &numeral), &a, &y, 4)));
        let numerals = Exec::store_bytes(&Exec::store_bytes(&h, &BV::from_u64(1_048_576, 32), &x, 4), &BV::from_u64(1_048_576, 32), &y, 4);
        assert!(numerals.ast_eq(&Exec::store_bytes(&h, &BV::from_u64(1_048_576, 32), &y, 4)));
        assert!(Exec::store_bytes(&h, &a, &Exec::load_bytes(&h, &a, 4), 4).ast_eq(&h));
        let apart = Exec::store_bytes(&Exec::store_bytes(&h, &a, &x, 4), &b, &y, 4);
        assert!(!apart.ast_eq(&Exec::store_bytes(&h, &b, &y, 4)));
        // A numeral outside a masked address's range is apart from it; one inside may not be.
        let masked = BV::from_u64(1_048_832, 32).bvadd(a.bvand(BV::from_u64(248, 32)));
        for (at, apart) in [(1_048_753, true), (1_048_900, false)] {
            let between = |h: &Array| other(h, &BV::from_u64(at, 32));
            let twice = Exec::store_bytes(&between(&Exec::store_bytes(&h, &masked, &x, 4)), &masked, &y, 4);
            assert_eq!(twice.ast_eq(&Exec::store_bytes(&between(&h), &masked, &y, 4)), apart, "{at}: {twice}");
        }
        // A load of what a store just wrote is the stored value's bytes, across a store elsewhere.
        let stored = other(&Exec::store_bytes(&h, &a, &x, 4), &beside);
        assert!(Exec::load_bytes(&stored, &a, 4).simplify().ast_eq(&x), "{}", Exec::load_bytes(&stored, &a, 4));
        // Past a store that may alias, only in that form: the first store at `a` is taken
        // out from under the store at the numeral, and a load at `beside` between the two
        // reads one term whether the first store is there or not.
        past_may_alias(|| {
            let across = Exec::store_bytes(&other(&Exec::store_bytes(&h, &a, &x, 4), &numeral), &a, &y, 4);
            assert!(across.ast_eq(&Exec::store_bytes(&other(&h, &numeral), &a, &y, 4)), "{across}");
            let with = Exec::load_bytes(&other(&Exec::store_bytes(&h, &a, &x, 4), &numeral), &beside, 4);
            let without = Exec::load_bytes(&other(&h, &numeral), &beside, 4);
            assert!(with.ast_eq(&without), "{with}\n{without}");
        });
    }

    /// A shift by a constant is a shift by a numeral: of a numeral, a numeral (the source's
    /// `shl(%pre3, 2)` with `%pre3` holding 71 is the 284 cprop's target has, memory seed
    /// 614), and of a bounded term, a term with a bound (an address `shl(and(%a, 1), 3)`
    /// is at most 8 above its base, which the walks down a heap's stores compare).
    #[test]
    fn a_shift_by_a_constant_folds_and_keeps_its_bound() {
        let src = "function %f(i32 %a) -> i32 {\nb0:\n    ret add(shl(%a, 2), shl(and(%a, 1), 3))\n}\n";
        let (m, _) = tandem_core::text::parse_module(src).expect("parses");
        let f = &m.functions[0];
        let shifts: Vec<Expr> = f.exprs.keys().filter(|&e| matches!(f.exprs[e], ExprData::Binary { op: BinOp::Shl, .. })).collect();
        assert_eq!(shifts.len(), 2);
        let state = |a: BV| State { locals: vec![a], heap: heap(), callframe: vec![], trace: Trace::empty(0) };
        let numeral = eval_value(f, shifts[0], &state(BV::from_u64(71, 32)), Type::I32, 100).expect("encodes");
        assert_eq!(numeral.as_u64(), Some(284), "{numeral}");
        let bounded = eval_value(f, shifts[1], &state(BV::new_const("a", 32)), Type::I32, 100).expect("encodes");
        assert_eq!(upper_bound(&bounded), Some(8), "{bounded}");
    }

    /// `heap_rmw`'s word at a constant address (`1048576 + and(360, 4092)`, as the encoder
    /// builds it, the same term as the source's where the address is a local) is at the
    /// numeral 1048936: a store there overwrites one at that numeral, and a load at 1048904
    /// passes it. A load reads what a store wrote below 20 bytes
    /// of stores elsewhere, and below 8 more (a dead store's, in the source), as one term
    /// (default seed 646's memopt).
    #[test]
    fn a_word_at_a_constant_address_is_at_its_numeral() {
        let (x, y) = (BV::new_const("x", 32), BV::new_const("y", 32));
        let at = |n: u64| BV::from_u64(n, 32);
        let h = heap();
        let twice = Exec::store_bytes(&Exec::store_bytes(&h, &at(1_048_936), &x, 4), &rmw_word(360), &y, 4);
        assert!(twice.ast_eq(&Exec::store_bytes(&h, &rmw_word(360), &y, 4)), "{twice}");
        let beside = Exec::store_bytes(&Exec::store_bytes(&h, &at(1_048_904), &x, 4), &rmw_word(360), &y, 4);
        assert!(Exec::load_bytes(&beside, &at(1_048_904), 4).simplify().ast_eq(&x));
        let mut tgt = Exec::store_bytes(&h, &at(1_049_000), &x, 4);
        for k in 0..5 {
            tgt = Exec::store_bytes(&tgt, &rmw_word(8 * k), &y, 4);
        }
        let src = Exec::store_bytes(&tgt, &at(1_048_800), &BV::new_const("z", 64), 8);
        let (read, twin) = (Exec::load_bytes(&tgt, &at(1_049_000), 4), Exec::load_bytes(&src, &at(1_049_000), 4));
        assert!(read.ast_eq(&twin), "{read}\n{twin}");
        assert!(read.simplify().ast_eq(&x));
    }

    /// A narrow load stored back where it was read is no store, across a store whose
    /// address lies apart by its bounds: a sum of a base, a masked offset and a constant
    /// (whose lower bound is the base's), or a concatenation under a numeral, as Z3's
    /// simplifier writes `base + and(x, 7)`. Memory seed 1039's memopt removed such a
    /// `store.8(A, %t6.1)` of `%t6.1 = load.i32.u8(A)`, and the source's heap stayed a
    /// store apart from the target's.
    #[test]
    fn a_narrow_load_stored_back_is_no_store() {
        let (x, y) = (BV::new_const("x", 32), BV::new_const("y", 32));
        let h = heap();
        let a = BV::from_u64(0x0010_053c, 32);
        let beside = BV::from_u64(0x0010_0be0, 32).bvadd(x.bvand(BV::from_u64(7, 32))).bvadd(BV::from_u64(3, 32));
        let stored = Exec::store_bytes(&h, &beside, &y, 1);
        let byte = Exec::load_bytes(&stored, &a, 1);
        assert!(byte.ast_eq(&h.select(&a).as_bv().expect("a byte")), "{byte}");
        let back = Exec::store_bytes(&stored, &a, &byte.zero_ext(24), 1);
        assert!(back.ast_eq(&stored), "{back}");
        let high = BV::from_u64(0x0010_0be0 >> 3, 29);
        let joined = high.concat(&x.extract(2, 0));
        assert_eq!(index_range(&index_parts(&joined)), Some((0x0010_0be0, 0x0010_0be7)));
    }

    /// A word's bytes stored back through a widening and a truncation are no store: ssa
    /// seed 1776's memopt removed `store.32(A, %t)` of `%t = load.i64.u32(A)` (the stored
    /// value `trunc(zext(concat(..)))`), and the heaps after it were given up. Storing
    /// the word's low half back changes nothing either, and a byte the extension only
    /// fills is still a store.
    #[test]
    fn a_word_stored_back_through_an_extension_is_no_store() {
        let h = heap();
        let a = BV::from_u64(0x0010_0a08, 32);
        let above = Exec::store_bytes(&h, &BV::from_u64(0x0010_0b2c, 32), &BV::new_const("y", 64), 8);
        let word = Exec::load_bytes(&above, &a, 4);
        let widened = word.zero_ext(32);
        for (v, n) in [(widened.extract(31, 0), 4), (widened.clone(), 4), (word.sign_ext(32), 4), (widened.extract(31, 0), 2)] {
            let back = Exec::store_bytes(&above, &a, &v, n);
            assert!(back.ast_eq(&above), "{v}: {back}");
        }
        let filled = Exec::store_bytes(&above, &a, &word.zero_ext(32).bvlshr(BV::from_u64(8, 64)), 4);
        assert!(!filled.ast_eq(&above));
        let past = Exec::store_bytes(&above, &a, &widened, 8);
        assert!(!past.ast_eq(&above), "the extension's zero bytes are stored");
    }

    /// Stores at numerals are one term whatever order they came in (stores at distinct
    /// addresses commute), the larger numeral on top; so too where a store replaces a byte
    /// held below another store: the target of a dead store memopt removed (`1048936` held
    /// the target's byte) stores at `1048904` and `1048936` as the source does.
    #[test]
    fn stores_at_numerals_are_one_term_in_any_order() {
        let (x, b, c) = (BV::new_const("x", 8), BV::new_const("b", 8), BV::new_const("c", 8));
        let at = |n: u64| BV::from_u64(n, 32);
        let h = heap();
        let src = store_byte(&store_byte(&h, &at(1_048_904), &x), &at(1_048_936), &c);
        let swapped = store_byte(&store_byte(&h, &at(1_048_936), &c), &at(1_048_904), &x);
        assert!(src.ast_eq(&swapped), "{src}\n{swapped}");
        let tgt = store_byte(&store_byte(&store_byte(&h, &at(1_048_936), &b), &at(1_048_904), &x), &at(1_048_936), &c);
        assert!(src.ast_eq(&tgt), "{src}\n{tgt}");
    }

    /// The narrowed forms are the operations they replace in every model (Z3 proves it, for
    /// every count and mask, 32 and 64 bits, of a symbol and of its extensions), and a
    /// forwarded narrow load is the load's very term: `ashr(shl(v, 24), 24)` is the
    /// sign-extended byte `store.8` wrote and `load.i32.s8` reads (ssa seed 614's memopt),
    /// `and(v, 255)` the zero-extended one; a masked address keeps its bound.
    #[test]
    fn narrowed_forms_are_the_operations_and_the_loads_terms() {
        for bits in [32u32, 64] {
            let y = BV::new_const(format!("y{bits}"), 16);
            for x in [BV::new_const(format!("x{bits}"), bits), y.sign_ext(bits - 16), y.zero_ext(bits - 16)] {
                let num = |n: u64| BV::from_u64(n, bits);
                let mut cases = vec![];
                for k in 1..bits as u64 {
                    let shl = x.bvshl(num(k));
                    cases.push((BinOp::Ashr, shl.clone(), num(k), shl.bvashr(num(k))));
                    cases.push((BinOp::Lshr, shl.clone(), num(k), shl.bvlshr(num(k))));
                }
                for n in [8u32, 16, 32].into_iter().filter(|&n| n < bits) {
                    let m = num((1u64 << n) - 1);
                    cases.push((BinOp::And, x.clone(), m.clone(), x.bvand(&m)));
                    cases.push((BinOp::And, m.clone(), x.clone(), m.bvand(&x)));
                }
                for (op, a, b, plain) in cases {
                    let v = narrowed(op, &a, &b, bits).unwrap_or_else(|| panic!("{op:?} {a} {b}"));
                    let s = super::super::solver();
                    s.assert(&v.eq(&plain).not());
                    assert_eq!(s.check(), SatResult::Unsat, "{op:?} {a} {b}: {v}");
                }
            }
        }
        let (h, v) = (heap(), BV::new_const("v", 32));
        let at = BV::from_u64(1_049_000, 32);
        let stored = Exec::store_bytes(&h, &at, &v, 1);
        let byte = Exec::load_bytes(&stored, &at, 1);
        let shl = v.bvshl(BV::from_u64(24, 32));
        let forwarded = narrowed(BinOp::Ashr, &shl, &BV::from_u64(24, 32), 32).expect("narrowed");
        assert!(forwarded.ast_eq(&byte.sign_ext(24)), "{forwarded}");
        let masked = narrowed(BinOp::And, &v, &BV::from_u64(255, 32), 32).expect("narrowed");
        assert!(masked.ast_eq(&byte.zero_ext(24)), "{masked}");
        assert_eq!(upper_bound(&masked), Some(255));
        assert!(narrowed(BinOp::And, &v, &BV::from_u64(127, 32), 32).is_none());
    }
}

