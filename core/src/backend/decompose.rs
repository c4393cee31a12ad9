//! Decomposition: every 64-bit operation into operations on 32-bit pairs
//! (`seeds/removing-embedded-statements.md`, "3.i. Decomposition").
//!
//! The pass walks each block's linear order once and replaces every `i64` node by a
//! contiguous sequence of `i32` nodes inserted at its place, mapping the old value to a
//! `(lo, hi)` pair of new values. `i64` variables (and parameters and callframe
//! variables) are split into two dwords. Where the expansion needs a half more than once
//! (multiply, variable shifts, sign extension, 64-bit loads and stores), the half is
//! written to a fresh temporary [`Var`] and read back, so every edge stays single-use.
//!
//! Invariants of the output: every value is `i32`; `AddLo`/`SubLo` are immediately
//! followed by their `AddHi`/`SubHi` (they communicate through the carry flag); the
//! right-hand halves of a `CmpPair` are variables or constants so lowering can contain
//! them; 64-bit division and remainder are calls of the runtime helpers
//! `Sdiv64`/`Udiv64`/`Srem64`/`Urem64`, which trap as the IR does.

use cranelift_entity::{PrimaryMap, SecondaryMap};
use smallvec::smallvec;

use super::lir::*;
use crate::abi::RuntimeHelper;
use crate::ir::*;

/// What decomposition did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecomposeStats {
    /// `i64` nodes replaced by 32-bit sequences.
    pub decomposed: usize,
    /// `i64` variables split into two halves.
    pub split_vars: usize,
    /// Temporaries introduced for halves used more than once.
    pub temps: usize,
    /// 64-bit divisions and remainders turned into helper calls.
    pub helper_calls: usize,
}

#[derive(Clone, Copy, Debug)]
enum Val {
    W(Use),
    P(Use, Use),
}

/// Rewrites `f` so that every value is 32 bits wide.
pub fn decompose(f: &LirFunction) -> (LirFunction, DecomposeStats) {
    let mut stats = DecomposeStats::default();
    let mut out = LirFunction {
        name: f.name.clone(),
        ret: f.ret,
        arg_bytes: f.arg_bytes,
        vars: Default::default(),
        local_names: f.local_names.clone(),
        cfvars: f.cfvars.clone(),
        nodes: node_arena(),
        blocks: SecondaryMap::new(),
        layout: f.layout.clone(),
        decomposed: true,
    };
    // Each old variable's halves, by old variable (the map's keys are the old ones, in
    // the same order).
    let mut var_map: PrimaryMap<Var, (Var, Option<Var>)> = PrimaryMap::with_capacity(f.vars.len());
    for (v, d) in &f.vars {
        let hi_kind = match d.kind {
            VarKind::Param { offset } => VarKind::Param { offset: offset + 4 },
            k => k,
        };
        if d.ty == Type::I64 {
            stats.split_vars += 1;
            let VarName::Local(k) = d.name else { panic!("{v}, an i64 variable, is not a HIR local") };
            let lo = out.add_var(VarName::Lo(k), Type::I32, d.kind);
            let hi = out.add_var(VarName::Hi(k), Type::I32, hi_kind);
            let k = var_map.push((lo, Some(hi)));
            debug_assert_eq!(k, v);
        } else {
            let k = var_map.push((out.add_var(d.name, Type::I32, d.kind), None));
            debug_assert_eq!(k, v);
        }
    }
    let mut vals = Vals(BlockNodeMap::with_nodes(f.nodes.len()));
    for &b in &f.layout {
        vals.0.next_block();
        let list = Vec::with_capacity(f.blocks[b].nodes.len());
        let mut d = Decomposer { src: f, out: &mut out, list, vals: &mut vals, var_map: &var_map, stats: &mut stats };
        for &n in &f.blocks[b].nodes {
            d.node(n);
        }
        let list = std::mem::take(&mut d.list);
        out.blocks[b].nodes = list;
    }
    (out, stats)
}

struct Decomposer<'a> {
    src: &'a LirFunction,
    out: &'a mut LirFunction,
    list: Vec<Node>,
    vals: &'a mut Vals,
    var_map: &'a PrimaryMap<Var, (Var, Option<Var>)>,
    stats: &'a mut DecomposeStats,
}

/// What each old node of the block being decomposed became.
struct Vals(BlockNodeMap<Val>);

impl Vals {
    /// The value of `u`, a result of a node decomposed earlier in the block.
    fn get(&self, u: Use) -> Val {
        match self.0.get(u.node) {
            Some(&v) if u.result == 0 => v,
            _ => panic!("{u} has no value in its block"),
        }
    }

    fn insert(&mut self, n: Node, v: Val) {
        self.0.insert(n, v);
    }
}

const I: Type = Type::I32;

impl Decomposer<'_> {
    fn emit(&mut self, op: Op, results: u8, args: Args) -> Use {
        let n = self.out.add_node(op, I, results, args);
        self.list.push(n);
        Use::of(n)
    }

    fn konst(&mut self, v: i64) -> Use {
        self.emit(Op::Const(v as i32 as i64), 1, smallvec![])
    }

    fn bin(&mut self, op: BinOp, a: Use, b: Use) -> Use {
        self.emit(Op::Binary(op), 1, smallvec![a, b])
    }

    fn read(&mut self, v: Var) -> Use {
        self.emit(Op::Read(v), 1, smallvec![])
    }

    /// Writes `u` to a fresh temporary so that it can be read several times.
    fn temp(&mut self, u: Use) -> Var {
        self.stats.temps += 1;
        let v = self.out.add_var(VarName::Temp, I, VarKind::Temp);
        self.emit(Op::Write(v), 0, smallvec![u]);
        v
    }

    fn word(&self, u: Use) -> Use {
        match self.vals.get(u) {
            Val::W(w) => w,
            Val::P(..) => panic!("an i64 value where an i32 is expected"),
        }
    }

    fn pair(&self, u: Use) -> (Use, Use) {
        match self.vals.get(u) {
            Val::P(lo, hi) => (lo, hi),
            Val::W(_) => panic!("an i32 value where an i64 is expected"),
        }
    }

    /// The constant value of an old argument, if it is a constant node.
    fn old_const(&self, u: Use) -> Option<i64> {
        match self.src.nodes[u.node].op {
            Op::Const(v) => Some(v),
            _ => None,
        }
    }

    /// A word argument (or the low word of a pair: a shift count).
    fn low(&self, u: Use) -> Use {
        match self.vals.get(u) {
            Val::W(w) => w,
            Val::P(lo, _) => lo,
        }
    }

    /// Splits the arguments of old node `n` into words, expanding pairs in place.
    fn flat_args(&self, n: Node) -> Args {
        let mut v = Args::new();
        for &a in &self.src.nodes[n].args {
            match self.vals.get(a) {
                Val::W(w) => v.push(w),
                Val::P(lo, hi) => {
                    v.push(lo);
                    v.push(hi);
                }
            }
        }
        v
    }

    fn node(&mut self, n: Node) {
        // The old node is read in place (the source function outlives the decomposer),
        // never copied: only the new node's operation is made.
        let src = self.src;
        let data = &src.nodes[n];
        let wide = data.results > 0 && data.ty == Type::I64;
        let op = &data.op;
        // Operand type of a compare.
        let cmp64 = matches!(op, Op::Cmp { ty: Type::I64, .. });
        let val: Option<Val> = if !wide && !cmp64 && !self.touches_pairs(n) {
            let results = data.results;
            let new_args = self.flat_args(n);
            // Variables are renumbered: an `i64` variable before this one took two slots.
            let op = match *op {
                Op::Read(v) => Op::Read(self.var_map[v].0),
                Op::Write(v) => Op::Write(self.var_map[v].0),
                ref o => o.clone(),
            };
            let r = self.emit(op, results, new_args);
            match results {
                0 => None,
                1 => Some(Val::W(r)),
                _ => Some(Val::P(r, Use { node: r.node, result: 1 })),
            }
        } else {
            self.stats.decomposed += 1;
            self.wide(n, op, &data.args)
        };
        if let Some(v) = val {
            self.vals.insert(n, v);
        }
    }

    /// Whether a non-`i64` node still needs a special expansion because of `i64` operands.
    fn touches_pairs(&self, n: Node) -> bool {
        let d = &self.src.nodes[n];
        match &d.op {
            Op::Convert(ConvOp::Trunc) => true,
            Op::Write(v) => self.src.vars[*v].ty == Type::I64,
            Op::Store { .. } | Op::CfWrite { .. } | Op::Switch { .. } | Op::Return | Op::Call(_) => {
                d.args.iter().any(|a| matches!(self.vals.get(*a), Val::P(..)))
            }
            Op::Binary(BinOp::Shl | BinOp::Lshr | BinOp::Ashr) => false,
            _ => false,
        }
    }

    fn wide(&mut self, n: Node, op: &Op, args: &[Use]) -> Option<Val> {
        Some(match *op {
            Op::Const(v) => {
                let lo = self.konst(v);
                Val::P(lo, self.konst(v >> 32))
            }
            Op::Read(v) => {
                let (lo, hi) = self.var_map[v];
                let a = self.read(lo);
                Val::P(a, self.read(hi.expect("an i64 variable has two halves")))
            }
            Op::Write(v) => {
                let (lo, hi) = self.var_map[v];
                let (a, b) = self.pair(args[0]);
                self.emit(Op::Write(lo), 0, smallvec![a]);
                self.emit(Op::Write(hi.expect("an i64 variable has two halves")), 0, smallvec![b]);
                return None;
            }
            Op::Unary(UnOp::Not) => {
                let (a, b) = self.pair(args[0]);
                let lo = self.emit(Op::Unary(UnOp::Not), 1, smallvec![a]);
                Val::P(lo, self.emit(Op::Unary(UnOp::Not), 1, smallvec![b]))
            }
            Op::Unary(UnOp::Neg) => {
                let (a, b) = self.pair(args[0]);
                let z1 = self.konst(0);
                let z2 = self.konst(0);
                let lo = self.emit(Op::SubLo, 1, smallvec![z1, a]);
                Val::P(lo, self.emit(Op::SubHi, 1, smallvec![z2, b]))
            }
            Op::Binary(b) => self.binary(b, args[0], args[1]),
            Op::Cmp { op, .. } => Val::W(self.compare(op, args[0], args[1])),
            Op::Convert(ConvOp::Sext) => {
                let a = self.word(args[0]);
                self.sign_extend(a)
            }
            Op::Convert(ConvOp::Zext) => {
                let a = self.word(args[0]);
                Val::P(a, self.konst(0))
            }
            Op::Convert(ConvOp::Trunc) => Val::W(self.pair(args[0]).0),
            Op::Select => {
                let c = self.word(args[0]);
                let (tl, th) = self.pair(args[1]);
                let (fl, fh) = self.pair(args[2]);
                let tc = self.temp(c);
                let c1 = self.read(tc);
                let lo = self.emit(Op::Select, 1, smallvec![c1, tl, fl]);
                let c2 = self.read(tc);
                Val::P(lo, self.emit(Op::Select, 1, smallvec![c2, th, fh]))
            }
            Op::Load { width, signed } => self.load(width, signed, args[0]),
            Op::Store { width } => {
                self.store(width, args[0], args[1]);
                return None;
            }
            Op::CfRead { var, .. } => {
                let lo = self.emit(Op::CfRead { var, offset: 0 }, 1, smallvec![]);
                Val::P(lo, self.emit(Op::CfRead { var, offset: 4 }, 1, smallvec![]))
            }
            Op::CfWrite { var, .. } => {
                let (lo, hi) = self.pair(args[0]);
                self.emit(Op::CfWrite { var, offset: 0 }, 0, smallvec![lo]);
                self.emit(Op::CfWrite { var, offset: 4 }, 0, smallvec![hi]);
                return None;
            }
            Op::Call(h) => return self.call(n, h),
            Op::Return | Op::Switch { .. } => {
                let flat = self.flat_args(n);
                self.emit(op.clone(), 0, flat);
                return None;
            }
            ref other => panic!("decompose: unexpected {:?} before decomposition", other),
        })
    }

    /// An `i32` word `a` sign-extended to a pair: the word, and its sign bit copied
    /// through the high half (`sar 31`).
    fn sign_extend(&mut self, a: Use) -> Val {
        let t = self.temp(a);
        let lo = self.read(t);
        let r = self.read(t);
        let k = self.konst(31);
        Val::P(lo, self.bin(BinOp::Ashr, r, k))
    }

    /// A load yielding `i64`: a 64-bit load is two 32-bit loads at `addr` and `addr + 4`;
    /// a narrower one loads the low half and extends it into the high half.
    fn load(&mut self, width: MemWidth, signed: bool, addr: Use) -> Val {
        let addr = self.word(addr);
        if width == MemWidth::W64 {
            let ta = self.temp(addr);
            let a1 = self.read(ta);
            let lo = self.emit(Op::Load { width: MemWidth::W32, signed: false }, 1, smallvec![a1]);
            let a2 = self.read(ta);
            let four = self.konst(4);
            let a2 = self.bin(BinOp::Add, a2, four);
            Val::P(lo, self.emit(Op::Load { width: MemWidth::W32, signed: false }, 1, smallvec![a2]))
        } else {
            let lo = self.emit(Op::Load { width, signed }, 1, smallvec![addr]);
            if signed {
                self.sign_extend(lo)
            } else {
                Val::P(lo, self.konst(0))
            }
        }
    }

    /// A store of an `i64` value: a 64-bit store is two 32-bit stores at `addr` and
    /// `addr + 4`; a narrower one stores from the low half.
    fn store(&mut self, width: MemWidth, addr: Use, value: Use) {
        let addr = self.word(addr);
        let (lo, hi) = self.pair(value);
        if width == MemWidth::W64 {
            let ta = self.temp(addr);
            let a1 = self.read(ta);
            self.emit(Op::Store { width: MemWidth::W32 }, 0, smallvec![a1, lo]);
            let a2 = self.read(ta);
            let four = self.konst(4);
            let a2 = self.bin(BinOp::Add, a2, four);
            self.emit(Op::Store { width: MemWidth::W32 }, 0, smallvec![a2, hi]);
        } else {
            self.emit(Op::Store { width }, 0, smallvec![addr, lo]);
        }
    }

    /// A call with `i64` arguments or result: arguments flattened to words, an `i64`
    /// result as the call's two results. `None` when the call yields nothing.
    fn call(&mut self, n: Node, h: RuntimeHelper) -> Option<Val> {
        let (results, ty) = (self.src.nodes[n].results, self.src.nodes[n].ty);
        let flat = self.flat_args(n);
        let r = self.emit(Op::Call(h), results * if ty == Type::I64 { 2 } else { 1 }, flat);
        if results == 0 {
            return None;
        }
        Some(if ty == Type::I64 { Val::P(r, Use { node: r.node, result: 1 }) } else { Val::W(r) })
    }

    fn binary(&mut self, op: BinOp, a: Use, b: Use) -> Val {
        match op {
            BinOp::Add | BinOp::Sub => {
                let (al, ah) = self.pair(a);
                let (bl, bh) = self.pair(b);
                let (lo_op, hi_op) = if op == BinOp::Add { (Op::AddLo, Op::AddHi) } else { (Op::SubLo, Op::SubHi) };
                let lo = self.emit(lo_op, 1, smallvec![al, bl]);
                Val::P(lo, self.emit(hi_op, 1, smallvec![ah, bh]))
            }
            BinOp::And | BinOp::Or | BinOp::Xor => {
                let (al, ah) = self.pair(a);
                let (bl, bh) = self.pair(b);
                let lo = self.bin(op, al, bl);
                Val::P(lo, self.bin(op, ah, bh))
            }
            BinOp::Mul => {
                let (al, ah) = self.pair(a);
                let (bl, bh) = self.pair(b);
                let tal = self.temp(al);
                let tah = self.temp(ah);
                let tbl = self.temp(bl);
                let tbh = self.temp(bh);
                let (x, y) = (self.read(tal), self.read(tbl));
                let w = self.emit(Op::MulWide, 2, smallvec![x, y]);
                let (x, y) = (self.read(tah), self.read(tbl));
                let c1 = self.bin(BinOp::Mul, x, y);
                let (x, y) = (self.read(tal), self.read(tbh));
                let c2 = self.bin(BinOp::Mul, x, y);
                let hi = self.bin(BinOp::Add, Use { node: w.node, result: 1 }, c1);
                let hi = self.bin(BinOp::Add, hi, c2);
                Val::P(w, hi)
            }
            BinOp::Shl | BinOp::Lshr | BinOp::Ashr => self.shift(op, a, b),
            BinOp::Sdiv | BinOp::Udiv | BinOp::Srem | BinOp::Urem => {
                self.stats.helper_calls += 1;
                let h = match op {
                    BinOp::Sdiv => RuntimeHelper::Sdiv64,
                    BinOp::Udiv => RuntimeHelper::Udiv64,
                    BinOp::Srem => RuntimeHelper::Srem64,
                    _ => RuntimeHelper::Urem64,
                };
                let (al, ah) = self.pair(a);
                let (bl, bh) = self.pair(b);
                let r = self.emit(Op::Call(h), 2, smallvec![al, ah, bl, bh]);
                Val::P(r, Use { node: r.node, result: 1 })
            }
        }
    }

    /// A 64-bit shift of `a` by `b`: by a constant count or by a variable one.
    fn shift(&mut self, op: BinOp, a: Use, b: Use) -> Val {
        let (al, ah) = self.pair(a);
        match self.old_const(b) {
            Some(k) => self.shift_by_constant(op, al, ah, k & 63),
            None => self.shift_by_variable(op, al, ah, b),
        }
    }

    /// The pair `al:ah` shifted by the constant `k` (0..63): `shld`/`shrd` below 32, a
    /// move across the halves from 32 on.
    fn shift_by_constant(&mut self, op: BinOp, al: Use, ah: Use, k: i64) -> Val {
        if k == 0 {
            return Val::P(al, ah);
        }
        match (op, k < 32) {
            (BinOp::Shl, true) => {
                let t = self.temp(al);
                let (x, c) = (self.read(t), self.konst(k));
                let hi = self.emit(Op::Shld, 1, smallvec![ah, x, c]);
                let (x, c) = (self.read(t), self.konst(k));
                Val::P(self.bin(BinOp::Shl, x, c), hi)
            }
            // A count of exactly 32 moves a half across without shifting it.
            (BinOp::Shl, false) if k == 32 => Val::P(self.konst(0), al),
            (BinOp::Lshr, false) if k == 32 => Val::P(ah, self.konst(0)),
            (BinOp::Shl, false) => {
                let c = self.konst(k - 32);
                let hi = self.bin(BinOp::Shl, al, c);
                Val::P(self.konst(0), hi)
            }
            (_, true) => {
                let t = self.temp(ah);
                let (x, c) = (self.read(t), self.konst(k));
                let lo = self.emit(Op::Shrd, 1, smallvec![al, x, c]);
                let (x, c) = (self.read(t), self.konst(k));
                Val::P(lo, self.bin(op, x, c))
            }
            (BinOp::Lshr, false) => {
                let c = self.konst(k - 32);
                let lo = self.bin(BinOp::Lshr, ah, c);
                Val::P(lo, self.konst(0))
            }
            (_, false) => {
                let t = self.temp(ah);
                let (x, c) = (self.read(t), self.konst(k - 32));
                let lo = self.bin(BinOp::Ashr, x, c);
                let (x, c) = (self.read(t), self.konst(31));
                Val::P(lo, self.bin(BinOp::Ashr, x, c))
            }
        }
    }

    /// The pair `al:ah` shifted by the variable count `b`: x86 masks counts to 5 bits, so
    /// shift by `count & 31` with `shld`/`shrd` and the plain shift, then fix the result
    /// up when `count & 32`.
    fn shift_by_variable(&mut self, op: BinOp, al: Use, ah: Use, b: Use) -> Val {
        let count = self.low(b);
        let tc = self.temp(count);
        let tl = self.temp(al);
        let th = self.temp(ah);
        let big = |d: &mut Self| {
            let (c, k) = (d.read(tc), d.konst(32));
            d.bin(BinOp::And, c, k)
        };
        match op {
            BinOp::Shl => {
                let (h, l, c) = (self.read(th), self.read(tl), self.read(tc));
                let s_hi = self.emit(Op::Shld, 1, smallvec![h, l, c]);
                let (l, c) = (self.read(tl), self.read(tc));
                let s_lo = self.bin(BinOp::Shl, l, c);
                let ts = self.temp(s_lo);
                let g = big(self);
                let x = self.read(ts);
                let hi = self.emit(Op::Select, 1, smallvec![g, x, s_hi]);
                let g = big(self);
                let (z, x) = (self.konst(0), self.read(ts));
                let lo = self.emit(Op::Select, 1, smallvec![g, z, x]);
                Val::P(lo, hi)
            }
            _ => {
                let (l, h, c) = (self.read(tl), self.read(th), self.read(tc));
                let s_lo = self.emit(Op::Shrd, 1, smallvec![l, h, c]);
                let (h, c) = (self.read(th), self.read(tc));
                let s_hi = self.bin(op, h, c);
                let ts = self.temp(s_hi);
                let g = big(self);
                let x = self.read(ts);
                let lo = self.emit(Op::Select, 1, smallvec![g, x, s_lo]);
                let g = big(self);
                let fill = if op == BinOp::Lshr {
                    self.konst(0)
                } else {
                    let (h, k) = (self.read(th), self.konst(31));
                    self.bin(BinOp::Ashr, h, k)
                };
                let x = self.read(ts);
                let hi = self.emit(Op::Select, 1, smallvec![g, fill, x]);
                Val::P(lo, hi)
            }
        }
    }

    /// A 64-bit compare yielding an `i32` truth value.
    fn compare(&mut self, op: CmpOp, a: Use, b: Use) -> Use {
        let (al, ah) = self.pair(a);
        let (bl, bh) = self.pair(b);
        let cmp32 = |op| Op::Cmp { op, ty: I };
        match op {
            CmpOp::Eq | CmpOp::Ne => {
                let x = self.bin(BinOp::Xor, al, bl);
                let y = self.bin(BinOp::Xor, ah, bh);
                let o = self.bin(BinOp::Or, x, y);
                let z = self.konst(0);
                self.emit(cmp32(op), 1, smallvec![o, z])
            }
            _ => {
                // `cmp xlo, ylo; sbb xhi, yhi` computes the flags of `x - y` over 64
                // bits; `a > b` is `b < a` and `a <= b` is `b >= a`.
                let (pair_op, swap) = match op {
                    CmpOp::Slt => (CmpOp::Slt, false),
                    CmpOp::Sge => (CmpOp::Sge, false),
                    CmpOp::Sgt => (CmpOp::Slt, true),
                    CmpOp::Sle => (CmpOp::Sge, true),
                    CmpOp::Ult => (CmpOp::Ult, false),
                    CmpOp::Uge => (CmpOp::Uge, false),
                    CmpOp::Ugt => (CmpOp::Ult, true),
                    _ => (CmpOp::Uge, true),
                };
                let ((xl, xh), (yl, yh)) = if swap { ((bl, bh), (al, ah)) } else { ((al, ah), (bl, bh)) };
                // The right-hand halves go through temporaries unless they are
                // constants, so that lowering can contain them as memory operands.
                let yl = self.containable(yl);
                let yh = self.containable(yh);
                self.emit(Op::CmpPair(pair_op), 1, smallvec![xl, xh, yl, yh])
            }
        }
    }

    /// `u` itself if it is a constant, else the read of a temporary written right here
    /// (so that no write of the variable can come between the read and its use).
    fn containable(&mut self, u: Use) -> Use {
        match self.out.nodes[u.node].op {
            Op::Const(_) => u,
            _ => {
                let t = self.temp(u);
                self.read(t)
            }
        }
    }
}
