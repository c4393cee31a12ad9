//! The reference interpreter: runs a HIR or SSA function on given inputs with fuel.
//!
//! It is the reference every other oracle is judged against, so it is written to be
//! obviously correct rather than fast: it walks the trees recursively in evaluation
//! order, keeps every value in canonical `i64` form (an `i32` sign-extended) and spells
//! out each rule of the semantics in `tandem_core::ir`. One unit of fuel is spent per
//! block entered and per node evaluated.
//!
//! An optional [`Observer`] sees the operands of every operator and memory access as it
//! is evaluated (the generator's distinguishing-value coverage, `gen::distinguish`). The
//! machine is generic over it, and the plain [`run`] uses `()`, whose empty hook compiles
//! away: observing costs nothing when it is off.

use crate::exec::outcome::{End, Event, Invalid, Outcome, Value};
use crate::exec::runtime::{call_helper, HelperEnv};
use cranelift_entity::SecondaryMap;
use tandem_core::ir::*;

/// Inputs of one run.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RunInput {
    pub args: Vec<Value>,
    /// Initial heap contents: (absolute address, bytes); the rest is zero.
    pub heap: Vec<(u32, Vec<u8>)>,
    /// Initial callframe values by variable index; missing ones are zero.
    pub callframe: Vec<(CfVar, Value)>,
    pub fuel: u64,
}

/// The default fuel of a run.
pub const DEFAULT_FUEL: u64 = 1_000_000;

/// Why a run stopped early inside the evaluator.
enum Stop {
    Trap(TrapKind),
    Invalid(Invalid),
}

/// The evaluator's error: the run stopped, and [`Machine::stop`] says why. Kept apart
/// from the reason so that a node's result fits in two registers (the reason would make
/// every return go through memory, and the tree walk returns once per node).
struct Halt;

/// Errors in the inputs themselves (not in the program).
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum InputError {
    /// The argument list does not match the parameters.
    Arguments(String),
    /// An initial heap range lies outside the heap.
    HeapRange(u32, usize),
    /// An initial callframe value has the wrong type.
    Callframe(String),
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::Arguments(s) | InputError::Callframe(s) => f.write_str(s),
            InputError::HeapRange(a, n) => write!(f, "{n} initial heap bytes at {a:#x} lie outside the heap"),
        }
    }
}

/// The machine state a run reads and writes.
pub struct State {
    pub heap: Vec<u8>,
    pub callframe: Vec<Value>,
    pub trace: Vec<Event>,
}

impl State {
    /// The state a run starts in, after checking the inputs against `f`.
    pub fn initial(f: &Function, input: &RunInput) -> Result<State, InputError> {
        let mut heap = vec![0u8; HEAP_SIZE as usize];
        for (addr, bytes) in &input.heap {
            let off = addr.wrapping_sub(HEAP_BASE) as usize;
            if *addr < HEAP_BASE || off + bytes.len() > heap.len() {
                return Err(InputError::HeapRange(*addr, bytes.len()));
            }
            heap[off..off + bytes.len()].copy_from_slice(bytes);
        }
        let mut callframe: Vec<Value> = f.cfvars.values().map(|v| Value::zero(v.ty)).collect();
        for (var, v) in &input.callframe {
            let Some(d) = f.cfvars.get(*var) else {
                return Err(InputError::Callframe(format!("no callframe variable {var}")));
            };
            if d.ty != v.ty() {
                return Err(InputError::Callframe(format!("@{} is {}, given {v}", d.name, d.ty)));
            }
            callframe[var.index()] = *v;
        }
        Ok(State { heap, callframe, trace: vec![] })
    }

    /// The heap offset of an access of `bytes` at `addr`, or why it is invalid.
    pub(crate) fn check_bounds(addr: i64, bytes: u32) -> Result<usize, Invalid> {
        let a = addr as u32;
        let end = a as u64 + bytes as u64;
        if a < HEAP_BASE || end > (HEAP_BASE + HEAP_SIZE) as u64 {
            return Err(Invalid::OutOfBounds { addr: a, bytes });
        }
        Ok((a - HEAP_BASE) as usize)
    }
}

use cranelift_entity::EntityRef;

impl HelperEnv for State {
    fn heap_read32(&mut self, addr: u32) -> u32 {
        let o = (addr - HEAP_BASE) as usize;
        u32::from_le_bytes(self.heap[o..o + 4].try_into().unwrap())
    }
    fn heap_write32(&mut self, addr: u32, value: u32) {
        let o = (addr - HEAP_BASE) as usize;
        self.heap[o..o + 4].copy_from_slice(&value.to_le_bytes());
    }
    fn cf_count(&self) -> usize {
        self.callframe.len()
    }
    fn cf_get(&mut self, i: usize) -> Value {
        self.callframe[i]
    }
    fn cf_set(&mut self, i: usize, value: i64) {
        let ty = self.callframe[i].ty();
        self.callframe[i] = Value::new(ty, value);
    }
    fn record(&mut self, event: Event) {
        self.trace.push(event);
    }
}

/// Sees the operators and accesses of a run as the interpreter evaluates them.
pub trait Observer {
    /// Node `e` of `f`, a binary operator, compare, conversion, load or store, with its
    /// operands' canonical values (`[lhs, rhs]`; `[arg, 0]` for a conversion; `[address,
    /// 0]` for a load; `[address, value]` for a store) and the heap as the node finds it
    /// (for a store: before it writes). Called only when the operands were evaluated
    /// without a trap, before the node itself may trap or go out of bounds.
    fn node(&mut self, f: &Function, e: Expr, operands: [i64; 2], heap: &[u8]);
}

/// No observer: the hook is empty and inlined away.
impl Observer for () {
    #[inline(always)]
    fn node(&mut self, _: &Function, _: Expr, _: [i64; 2], _: &[u8]) {}
}

/// Runs `f` on `input`. `Err(InputError)` when the inputs do not fit the function;
/// `Ok(Err(Invalid))` when the run is invalid; otherwise the outcome.
pub fn run(f: &Function, input: &RunInput) -> Result<Result<Outcome, Invalid>, InputError> {
    run_measured(f, input).map(|(r, _)| r)
}

/// Like [`run`], also returning the fuel the run used (all of it when it ran out).
pub fn run_measured(f: &Function, input: &RunInput) -> Result<(Result<Outcome, Invalid>, u64), InputError> {
    run_observed(f, input, &mut ())
}

/// Like [`run_measured`], showing every operator and access to `obs`.
pub fn run_observed<O: Observer>(
    f: &Function,
    input: &RunInput,
    obs: &mut O,
) -> Result<(Result<Outcome, Invalid>, u64), InputError> {
    if input.args.len() != f.params.len() {
        return Err(InputError::Arguments(format!(
            "%{} takes {} argument(s), given {}",
            f.name,
            f.params.len(),
            input.args.len()
        )));
    }
    // Sized for every local at the start (each starts at 0), so no assignment grows it.
    let mut locals: SecondaryMap<Local, i64> = SecondaryMap::with_capacity(f.locals.len());
    locals.resize(f.locals.len());
    for (i, (&p, a)) in f.params.iter().zip(&input.args).enumerate() {
        if f.locals[p].ty != a.ty() {
            return Err(InputError::Arguments(format!(
                "argument {} of %{} is {}, given {a}",
                i + 1,
                f.name,
                f.locals[p].ty
            )));
        }
        locals[p] = a.as_i64();
    }
    let state = State::initial(f, input)?;
    let mut m = Machine { f, locals, state, fuel: input.fuel, obs, phi_values: vec![], stop: None };
    let end = m.run_blocks();
    let used = input.fuel - m.fuel;
    let end = match end.map_err(|Halt| m.stop.take().expect("a halt records its reason")) {
        Ok(v) => End::Return(v),
        Err(Stop::Trap(k)) => End::Trap(k),
        Err(Stop::Invalid(i)) => return Ok((Err(i), used)),
    };
    let State { heap, callframe, trace } = m.state;
    Ok((Ok(Outcome { end, trace, heap, callframe }), used))
}

struct Machine<'a, O: Observer> {
    f: &'a Function,
    locals: SecondaryMap<Local, i64>,
    state: State,
    fuel: u64,
    obs: &'a mut O,
    /// The values the phis of the block being entered read, one list for the whole run.
    phi_values: Vec<(Local, i64)>,
    /// Why the run stopped, once an evaluation returned [`Halt`].
    stop: Option<Stop>,
}

impl<O: Observer> Machine<'_, O> {
    #[inline(always)]
    fn burn(&mut self) -> Result<(), Halt> {
        if self.fuel == 0 {
            return self.halt(Stop::Invalid(Invalid::FuelExhausted));
        }
        self.fuel -= 1;
        Ok(())
    }

    /// Stops the run for `reason`.
    #[cold]
    fn halt<T>(&mut self, reason: Stop) -> Result<T, Halt> {
        self.stop = Some(reason);
        Err(Halt)
    }

    fn run_blocks(&mut self) -> Result<Value, Halt> {
        let f = self.f;
        let mut prev: Option<Block> = None;
        let mut b = f.entry();
        loop {
            self.burn()?;
            let data = &f.blocks[b];
            // Phis read the values at the end of the predecessor, all in parallel.
            if let Some(p) = prev {
                let mut vals = std::mem::take(&mut self.phi_values);
                vals.extend(data.phis.iter().map(|phi| {
                    let src = phi.args.iter().find(|(pb, _)| *pb == p).map(|(_, l)| *l);
                    (phi.dest, src.map_or(0, |l| self.locals[l]))
                }));
                for &(d, v) in &vals {
                    self.locals[d] = v;
                }
                vals.clear();
                self.phi_values = vals;
            }
            for &s in &data.stmts {
                self.eval(s)?;
            }
            prev = Some(b);
            b = match &data.term {
                Terminator::Jump(t) => *t,
                Terminator::Branch { cond, then_dest, else_dest } => {
                    if self.value(*cond)? != 0 {
                        *then_dest
                    } else {
                        *else_dest
                    }
                }
                Terminator::Return(e) => {
                    let v = self.value(*e)?;
                    return Ok(Value::new(f.ret, v));
                }
                Terminator::Switch { value, default, cases } => {
                    let v = self.value(*value)?;
                    cases.iter().find(|(k, _)| *k == v).map_or(*default, |(_, t)| *t)
                }
            };
        }
    }

    /// Evaluates a node that yields a value.
    #[inline(always)]
    fn value(&mut self, e: Expr) -> Result<i64, Halt> {
        Ok(self.typed_value(e)?.0)
    }

    /// Evaluates a node that yields a value: the value and its type. A leaf (a constant,
    /// a local, a callframe read) is evaluated here, as [`Machine::eval`] would, without
    /// a call: about half the nodes of a tree are leaves.
    #[inline(always)]
    fn typed_value(&mut self, e: Expr) -> Result<(i64, Type), Halt> {
        let f = self.f;
        match &f.exprs[e] {
            ExprData::Const { value, ty } => {
                self.burn()?;
                Ok((*value, *ty))
            }
            ExprData::Local(l) => {
                self.burn()?;
                Ok((self.locals[*l], f.locals[*l].ty))
            }
            _ => Ok(self.eval(e)?.expect("the verifier guarantees a value here")),
        }
    }

    /// Evaluates the tree at `e`: operands first, left to right, then the node; its value
    /// and type, if it yields one. The type comes up with the operands' values (that of
    /// `Function::expr_type`), so no node walks down its tree again for it.
    fn eval(&mut self, e: Expr) -> Result<Option<(i64, Type)>, Halt> {
        self.burn()?;
        let f = self.f;
        Ok(match &f.exprs[e] {
            ExprData::Const { value, ty } => Some((*value, *ty)),
            ExprData::Local(l) => Some((self.locals[*l], f.locals[*l].ty)),
            ExprData::Unary { op, arg } => {
                let (a, t) = self.typed_value(*arg)?;
                Some((unary(*op, t, a), t))
            }
            ExprData::Binary { op, lhs, rhs } => {
                let (a, t) = self.typed_value(*lhs)?;
                let b = self.value(*rhs)?;
                self.obs.node(f, e, [a, b], &self.state.heap);
                match binary(*op, t, a, b) {
                    Ok(v) => Some((t.normalize(v), t)),
                    Err(k) => return self.halt(Stop::Trap(k)),
                }
            }
            ExprData::Cmp { op, lhs, rhs } => {
                let (a, t) = self.typed_value(*lhs)?;
                let b = self.value(*rhs)?;
                self.obs.node(f, e, [a, b], &self.state.heap);
                Some((op.eval(t, a, b) as i64, Type::I32))
            }
            ExprData::Convert { op, arg } => {
                let a = self.value(*arg)?;
                self.obs.node(f, e, [a, 0], &self.state.heap);
                Some((convert(*op, a), op.types().1))
            }
            ExprData::Select { cond, if_true, if_false } => {
                let c = self.value(*cond)?;
                let (a, t) = self.typed_value(*if_true)?;
                let b = self.value(*if_false)?;
                Some((if c != 0 { a } else { b }, t))
            }
            ExprData::Load { ty, width, signed, addr } => {
                let a = self.value(*addr)?;
                self.obs.node(f, e, [a, 0], &self.state.heap);
                let n = width.bytes();
                let off = match State::check_bounds(a, n) {
                    Ok(off) => off,
                    Err(i) => return self.halt(Stop::Invalid(i)),
                };
                let mut raw = [0u8; 8];
                raw[..n as usize].copy_from_slice(&self.state.heap[off..off + n as usize]);
                let v = u64::from_le_bytes(raw);
                let bits = width.bits();
                let ext = if *signed && bits < 64 {
                    ((v << (64 - bits)) as i64) >> (64 - bits)
                } else {
                    v as i64
                };
                Some((ty.normalize(ext), *ty))
            }
            ExprData::Store { width, addr, value } => {
                let a = self.value(*addr)?;
                let v = self.value(*value)?;
                self.obs.node(f, e, [a, v], &self.state.heap);
                let n = width.bytes() as usize;
                let off = match State::check_bounds(a, width.bytes()) {
                    Ok(off) => off,
                    Err(i) => return self.halt(Stop::Invalid(i)),
                };
                self.state.heap[off..off + n].copy_from_slice(&v.to_le_bytes()[..n]);
                None
            }
            ExprData::CfRead(v) => Some((self.state.callframe[v.index()].as_i64(), f.cfvars[*v].ty)),
            ExprData::CfWrite { var, value } => {
                let v = self.value(*value)?;
                self.state.cf_set(var.index(), v);
                None
            }
            ExprData::Assign { local, value } => {
                let v = self.value(*value)?;
                self.locals[*local] = v;
                None
            }
            ExprData::Call { helper, args } => {
                let (params, _) = helper.signature();
                // No helper takes more than two arguments: they stay on the stack.
                let mut vals = [Value::zero(Type::I32); 2];
                for (i, (&a, &p)) in args.iter().zip(params).enumerate() {
                    vals[i] = Value::new(p, self.value(a)?);
                }
                let n = args.len().min(params.len());
                call_helper(*helper, &vals[..n], &mut self.state).map(|v| (v.as_i64(), v.ty()))
            }
            ExprData::TrapIf { cond, code } => {
                if self.value(*cond)? != 0 {
                    return self.halt(Stop::Trap(TrapKind::Check(*code)));
                }
                None
            }
            ExprData::Comma { first, second } => {
                self.eval(*first)?;
                self.eval(*second)?
            }
        })
    }
}

/// The semantics of a unary operator on a canonical operand of type `ty`, normalized.
pub fn unary(op: UnOp, ty: Type, a: i64) -> i64 {
    ty.normalize(match op {
        UnOp::Neg => a.wrapping_neg(),
        UnOp::Not => !a,
    })
}

/// The semantics of a width conversion of a canonical operand (canonical for its result
/// type).
pub fn convert(op: ConvOp, a: i64) -> i64 {
    match op {
        ConvOp::Sext => a as i32 as i64,
        ConvOp::Zext => a as u32 as i64,
        ConvOp::Trunc => a as i32 as i64,
    }
}

/// The semantics of a binary operator on canonical operands of type `ty`; the result is
/// not yet normalized. Divisions report their trap.
#[inline]
pub fn binary(op: BinOp, ty: Type, a: i64, b: i64) -> Result<i64, TrapKind> {
    let bits = ty.bits();
    let (ua, ub) = match ty {
        Type::I32 => (a as u32 as u64, b as u32 as u64),
        Type::I64 => (a as u64, b as u64),
    };
    let min = match ty {
        Type::I32 => i32::MIN as i64,
        Type::I64 => i64::MIN,
    };
    let count = (b as u32) & (bits - 1);
    Ok(match op {
        BinOp::Add => a.wrapping_add(b),
        BinOp::Sub => a.wrapping_sub(b),
        BinOp::Mul => a.wrapping_mul(b),
        BinOp::And => a & b,
        BinOp::Or => a | b,
        BinOp::Xor => a ^ b,
        BinOp::Shl => ((ua << count) & mask(bits)) as i64,
        BinOp::Lshr => (ua >> count) as i64,
        BinOp::Ashr => a >> count,
        BinOp::Sdiv | BinOp::Srem => {
            if b == 0 || (a == min && b == -1) {
                return Err(TrapKind::DivideError);
            }
            if op == BinOp::Sdiv {
                a / b
            } else {
                a % b
            }
        }
        BinOp::Udiv | BinOp::Urem => {
            if ub == 0 {
                return Err(TrapKind::DivideError);
            }
            (if op == BinOp::Udiv { ua / ub } else { ua % ub }) as i64
        }
    })
}

/// The low `bits` bits set (`bits` at most 64).
pub(crate) fn mask(bits: u32) -> u64 {
    if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}
