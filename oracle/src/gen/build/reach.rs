//! Shapes that make runs *tell apart* what a slip would confuse (issue 19; measured by
//! [`crate::gen::distinguish`]), where the generic builder makes the right shape with
//! values that cannot show the difference:
//! * [`Gen::sign_edge`]: compare operands across the sign boundary of either width
//!   (`-1`, `MIN`, `MAX`, `0x8000_0000` as an i64, ...), so that a signed test emitted for
//!   an unsigned one, or an i64 compare decomposed with a signed low-word test, gives
//!   another answer;
//! * [`Gen::boundary_check`]: a `trapif` range check against an edge constant that
//!   passes most of the time *because of* its signedness: `ugt(x, -1)` never fires, but
//!   `sgt(x, -1)` fires for every non-negative `x`; `ult(zext(x), 0x8000_0000)` passes for
//!   negative `x` where the signed low-word test fails;
//! * [`Gen::neighbour_store`]: accesses of mixed widths at constant offsets of one base
//!   (a constant address or a masked variable one, the same pure tree cloned): a store,
//!   a load that partially overlaps it, is adjacent to it or starts at the same address
//!   with another width, and an outer store over the same bytes. Alias analysis, store
//!   forwarding and dead-store elimination have their range boundaries there; the
//!   load's type is drawn on its own (an i32 stored, read back zero-extended as an i64);
//!   and now and then a store to the same printed address before the base's variable is
//!   redefined ([`Gen::store_then_redefine`]), which a dead-store pass must not delete,
//!   or a store and a check that fires now and then ([`Gen::store_then_check`]): a trap
//!   observes the heap. [`Gen::neighbour_layout`] places the load at the store's first
//!   byte, inside or around it past the narrower width (where swapping the two widths in
//!   an overlap test says "disjoint"), just before or after it, or anywhere, and the
//!   outer store over the inner one half of the time;
//! * [`Gen::word_edges`]: in most programs, a block of statements at the top of the
//!   entry block, which every run evaluates: compares of a value whose sign differs
//!   between runs (a parameter, negated or with a sign bit flipped) against sign edges,
//!   in every context the program's features allow (a `trapif` that never fires while
//!   its sign twin fires for one sign, an `if`, a `select`, a value), guarded divisions
//!   of such a value, shifts by counts past the width and (i64) in `32..63`, and
//!   extending i64 loads inside a 64-bit store of such a value. The other shapes sit
//!   wherever the builder puts them, often in code a run does not reach; without this
//!   block an i64 compare of a given sign pair in a given context ran, with operands of
//!   both signs, in under 10% of default-profile programs;
//! * [`Gen::ordering`]: a compare against a sign edge orders its operands (an equality
//!   reads the same signed or unsigned). Loop counters that cross zero are the loop
//!   builder's (`gen_loop`, `loop_test`), converted heap pairs and the fill loop the
//!   policies' (`policies.rs`).
//!
//! Every address stays in its region (the variable part is masked to leave room for
//! the largest offset plus the widest access); a check fires only on the values the
//! table says, so the share of trapping runs stays small.

use super::*;

/// Per-mille of `trapif` statements built by [`Gen::boundary_check`].
pub(super) const BOUNDARY_CHECK_PERMILLE: u32 = 650;
/// Per-mille of compares (branch, select, value) whose right operand is a sign edge.
pub(super) const SIGN_EDGE_PERMILLE: u32 = 450;
/// Per-mille of compares given i64 operands in programs that have i64 at all (on top
/// of the program's own share).
pub(super) const I64_COMPARE_PERMILLE: u32 = 450;
/// Per-mille of programs whose entry block holds [`Gen::word_edges`].
pub(super) const WORD_EDGES_PERMILLE: u32 = 600;
/// Per-mille of stores built by [`Gen::neighbour_store`].
pub(super) const NEIGHBOUR_PERMILLE: u32 = 350;
/// Per-mille of neighbour stores over a variable base preceded by
/// [`Gen::store_then_redefine`].
const REDEFINED_BASE_PERMILLE: u32 = 300;
/// Per-mille of the other neighbour stores preceded by [`Gen::store_then_check`].
const CHECK_BETWEEN_PERMILLE: u32 = 150;

/// Constants either side of the sign boundary of i32 and of i64, and the i64 values
/// whose high word is 0 and low word's sign bit is set.
const SIGN_EDGES: [i64; 12] = [
    -1,
    -2,
    -8,
    -0x80,
    0x7fff_ffff,
    -0x8000_0000,
    -0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0x1_0000_0000,
    i64::MAX,
    i64::MIN,
];

impl<S: Source> Gen<'_, S> {
    /// A constant across the sign boundary of `ty` (or of the low word of an i64).
    pub(super) fn sign_edge(&mut self, ty: Type) -> Expr {
        let v = self.pick(&SIGN_EDGES);
        self.konst(ty, v)
    }

    /// `op` itself if it orders its operands, else one of the eight operators that do
    /// (an equality compares the same way signed or unsigned).
    pub(super) fn ordering(&mut self, op: CmpOp) -> CmpOp {
        match op {
            CmpOp::Eq | CmpOp::Ne => self.pick(&CmpOp::ALL[2..]),
            _ => op,
        }
    }

    /// The condition of a range check that passes most of the time and whose signed and
    /// unsigned readings differ on common values: `(op, x, k)`, where `x op k` fires
    /// only on the value the comment of each row gives.
    pub(super) fn boundary_check(&mut self, ty: Type, depth: u32) -> (CmpOp, Expr, Expr) {
        let (min, max) = match ty {
            Type::I32 => (i32::MIN as i64, i32::MAX as i64),
            Type::I64 => (i64::MIN, i64::MAX),
        };
        // (operator, constant, whether x is an i32 zero-extended to i64)
        let rows: &[(CmpOp, i64, bool)] = &[
            (CmpOp::Sgt, max, false),  // never; ugt fires for negative x
            (CmpOp::Sge, max, false),  // x == MAX
            (CmpOp::Slt, min, false),  // never; ult fires for non-negative x
            (CmpOp::Sle, min, false),  // x == MIN
            (CmpOp::Ugt, -1, false),   // never; sgt fires for non-negative x
            (CmpOp::Uge, -1, false),   // x == -1
            (CmpOp::Ult, 0, false),    // never; slt fires for negative x
            (CmpOp::Ule, 0, false),    // x == 0
            (CmpOp::Ugt, 0xffff_ffff, true), // never; a signed low-word test fires for x >= 0
            (CmpOp::Sgt, 0xffff_ffff, true), // never; a signed low-word test fires for x >= 0
            (CmpOp::Slt, 0, true),           // never; a signed low-word test fires for x < 0
            (CmpOp::Ule, 0, true),           // x == 0; a signed low-word test fires for x < 0
        ];
        let usable: Vec<usize> = (0..rows.len()).filter(|&i| !rows[i].2 || ty == Type::I64).collect();
        let (op, k, zext) = rows[self.pick(&usable)];
        // Half of the time a parameter: its runs' values are drawn apart, often on both
        // sides of the sign boundary.
        let params: Vec<Local> = self.f.params.iter().copied().filter(|&l| self.f.locals[l].ty == ty).collect();
        let x = if zext {
            let y = self.expr(Type::I32, depth.min(2));
            self.add(ExprData::Convert { op: ConvOp::Zext, arg: y })
        } else if !params.is_empty() && self.chance(500) {
            let p = self.pick(&params);
            self.local(p)
        } else {
            self.expr(ty, depth.min(2))
        };
        let k = self.konst(ty, k);
        (op, x, k)
    }

    /// `store.w1(A + o1, op(comma(store.w3(A + o3, v), load.w2(A + o2)), y))`: three
    /// accesses of mixed widths at constant offsets of one base `A`, placed by
    /// [`Gen::neighbour_layout`].
    pub(super) fn neighbour_store(&mut self, depth: u32) -> Expr {
        let ty = self.ty();
        let widths: Vec<MemWidth> = MemWidth::ALL.into_iter().filter(|w| w.bits() <= ty.bits()).collect();
        // The load's type is drawn on its own: an i32 stored and read back as an i64 (or
        // the reverse) is what store-to-load forwarding converts.
        let lty = self.ty();
        let load_widths: Vec<MemWidth> = MemWidth::ALL.into_iter().filter(|w| w.bits() <= lty.bits()).collect();
        let [(o3, w3), (o2, w2), (o1, w1)] = self.neighbour_layout(&widths, &load_widths);
        let (base, base_local) = self.neighbour_base();
        // The first address uses `base` itself, the others clones of it.
        let at = |g: &mut Self, off: i64, clone: bool| {
            let b = if clone { g.f.clone_tree(base) } else { base };
            let o = g.konst(Type::I32, off);
            g.bin(BinOp::Add, b, o)
        };
        let a3 = at(self, o3, true);
        let a2 = at(self, o2, true);
        let a1 = at(self, o1, false);
        let v = self.expr(ty, depth.min(2));
        let inner = self.add(ExprData::Store { width: w3, addr: a3, value: v });
        let signed = w2.bits() < lty.bits() && self.chance(500);
        let load = self.add(ExprData::Load { ty: lty, width: w2, signed, addr: a2 });
        // An i64 load read as an i32 keeps its high word in sight most of the time: a
        // forwarded value extended the wrong way differs only there.
        let load = if lty == Type::I64 && ty == Type::I32 && self.chance(700) {
            self.narrow_keeping_high(load)
        } else {
            self.convert_to(load, ty)
        };
        let value = self.add(ExprData::Comma { first: inner, second: load });
        let value = if self.chance(500) {
            let y = self.expr(ty, depth.min(1));
            let op = self.pick(&[BinOp::Add, BinOp::Xor, BinOp::Or]);
            self.bin(op, value, y)
        } else {
            value
        };
        self.note("neighbour accesses of mixed widths");
        let redefine = base_local.filter(|_| self.cur.is_some() && self.chance(REDEFINED_BASE_PERMILLE));
        if let Some(l) = redefine {
            self.store_then_redefine(base, l, w1, o1, ty);
        } else if self.cur.is_some() && self.chance(CHECK_BETWEEN_PERMILLE) {
            self.store_then_check(base, w1, o1, ty);
        }
        self.add(ExprData::Store { width: w1, addr: a1, value })
    }

    /// Where the accesses of [`Gen::neighbour_store`] go: `[(o3, w3), (o2, w2), (o1, w1)]`
    /// for the inner store, the load and the outer store, offsets in `0..16` with the
    /// access inside. The load lies at the inner store's first byte (forwarding, with
    /// a conversion when the widths or types differ), inside it or around it at a byte
    /// offset of at least the narrower width (the ranges overlap although the narrower
    /// one would end before the other starts if their widths were swapped), just after
    /// or just before it, or anywhere; the outer store half of the time covers the
    /// inner one (a dead store unless the load reads it).
    fn neighbour_layout(&mut self, widths: &[MemWidth], load_widths: &[MemWidth]) -> [(i64, MemWidth); 3] {
        const OFFSETS: [i64; 8] = [0, 0, 1, 2, 3, 4, 6, 8];
        let w3 = self.pick(widths);
        let o3 = self.pick(&OFFSETS);
        let b = |w: MemWidth| w.bytes() as i64;
        let fits = |o: i64, w: MemWidth| o >= 0 && o + b(w) <= 16;
        let (o2, w2, w3, o3) = match self.below(8) {
            0 | 1 => {
                self.note("neighbour load at the store's first byte");
                // Half of the time as wide as the store: forwarded whole, converted
                // only when the types differ.
                let w2 = if self.chance(500) && load_widths.contains(&w3) { w3 } else { self.pick(load_widths) };
                (o3, w2, w3, o3)
            }
            2 | 3 => {
                // The wider access at 0, 4 or 8; the narrower starts `d` bytes in, with
                // narrower width <= d < wider width (both inside the 16 bytes).
                let store_wide = self.chance(500);
                let (wide_set, narrow_set) = if store_wide { (widths, load_widths) } else { (load_widths, widths) };
                let wides: Vec<MemWidth> = wide_set.iter().copied().filter(|w| w.bytes() >= 2).collect();
                if wides.is_empty() {
                    (self.pick(&OFFSETS), self.pick(load_widths), w3, o3)
                } else {
                    self.note("neighbour accesses overlapping inside the wider one");
                    let wide = self.pick(&wides);
                    let narrows: Vec<MemWidth> = narrow_set.iter().copied().filter(|w| w.bytes() < wide.bytes()).collect();
                    let narrow = self.pick(&narrows);
                    let d = b(narrow) + self.below((b(wide) - b(narrow)) as u32) as i64;
                    let ows: Vec<i64> = [0i64, 4, 8].into_iter().filter(|&o| fits(o, wide) && fits(o + d, narrow)).collect();
                    let ow = self.pick(&ows);
                    if store_wide {
                        (ow + d, narrow, wide, ow)
                    } else {
                        (ow, wide, narrow, ow + d)
                    }
                }
            }
            4 | 5 => {
                self.note("neighbour load adjacent to the store");
                let w2 = self.pick(load_widths);
                let after = o3 + b(w3);
                if self.chance(500) && fits(after, w2) {
                    (after, w2, w3, o3)
                } else if o3 >= b(w2) {
                    (o3 - b(w2), w2, w3, o3)
                } else {
                    (0, w2, w3, b(w2))
                }
            }
            _ => (self.pick(&OFFSETS), self.pick(load_widths), w3, o3),
        };
        let (o1, w1) = if self.chance(500) {
            self.note("neighbour store overwritten by the outer store");
            let wider: Vec<MemWidth> = widths.iter().copied().filter(|w| w.bytes() >= w3.bytes() && fits(o3, *w)).collect();
            let w1 = if self.chance(500) { w3 } else { self.pick(&wider) };
            (o3, w1)
        } else {
            (self.pick(&OFFSETS), self.pick(widths))
        };
        debug_assert!(fits(o1, w1) && fits(o2, w2) && fits(o3, w3), "{o1} {o2} {o3}");
        [(o3, w3), (o2, w2), (o1, w1)]
    }

    /// `trunc(lshr(x, 16))`: an i64 read as an i32 with bits 16..48 in sight, so that
    /// both words show.
    pub(super) fn narrow_keeping_high(&mut self, x: Expr) -> Expr {
        self.note("i64 narrowed keeping its high word");
        let k = self.konst(Type::I64, 16);
        let sh = self.bin(BinOp::Lshr, x, k);
        self.add(ExprData::Convert { op: ConvOp::Trunc, arg: sh })
    }

    /// Before the statement under construction: `store.w(A + o, v)` and a check that
    /// fires now and then (one value in eight of a leaf's low bits), so that the
    /// statement's store to the same address overwrites it only when the check passes.
    /// Dead-store elimination must keep the first store: a trap observes the heap.
    fn store_then_check(&mut self, base: Expr, width: MemWidth, off: i64, ty: Type) {
        self.note("store, a check that fires now and then, the same address stored again");
        self.push_store_at(base, width, off, ty);
        let params: Vec<Local> = self.f.params.iter().copied().filter(|&l| self.f.locals[l].ty == Type::I32).collect();
        let x = if !params.is_empty() && self.chance(700) {
            let p = self.pick(&params);
            self.local(p)
        } else {
            self.leaf(Type::I32)
        };
        let m = self.konst(Type::I32, 7);
        let low = self.bin(BinOp::And, x, m);
        let k = self.below(8) as i64;
        let k = self.konst(Type::I32, k);
        let cond = self.cmp(CmpOp::Eq, low, k);
        let code = self.below(100);
        let t = self.add(ExprData::TrapIf { cond, code });
        self.push(t);
    }

    /// Pushes `store.w(A + o, v)` before the statement under construction, `A` a copy of
    /// `base` and `v` a fresh expression of type `ty`.
    fn push_store_at(&mut self, base: Expr, width: MemWidth, off: i64, ty: Type) {
        let b = self.f.clone_tree(base);
        let o = self.konst(Type::I32, off);
        let addr = self.bin(BinOp::Add, b, o);
        let value = self.expr(ty, 1);
        let s = self.add(ExprData::Store { width, addr, value });
        self.push(s);
    }

    /// Before the statement under construction: `store.w(A + o, v)` and `%l = x`, where
    /// `A` reads `%l`, so that the statement's store to `A + o` (the same printed address)
    /// is at another place. Dead-store elimination must see the redefinition.
    fn store_then_redefine(&mut self, base: Expr, l: Local, width: MemWidth, off: i64, ty: Type) {
        self.note("store, its base local redefined, the same address stored again");
        self.push_store_at(base, width, off, ty);
        let x = self.expr(Type::I32, 1);
        let a = self.assign(l, x);
        self.push(a);
    }

    /// The base of [`Gen::neighbour_store`]: a hot constant address or a region's base
    /// plus a masked pure variable part, leaving 16 bytes of room at the end; and the
    /// variable the base reads, when it is one that may be assigned.
    fn neighbour_base(&mut self) -> (Expr, Option<Local>) {
        if self.chance(500) {
            let o = self.pick(&self.hot_offsets.clone()).min(HEAP_SIZE - 16);
            return (self.konst(Type::I32, (HEAP_BASE + o) as i64), None);
        }
        let r = self.pick(&self.regions.clone());
        let mask = (r.size - 16) as i64;
        let vars: Vec<Local> =
            self.assignable(Some(Type::I32)).into_iter().filter(|l| self.readable.contains(l)).collect();
        let (x, var) = if !vars.is_empty() && self.chance(600) {
            let l = self.pick(&vars);
            (self.local(l), Some(l))
        } else {
            let pure = std::mem::replace(&mut self.pure_mode, true);
            let x = self.leaf(Type::I32);
            self.pure_mode = pure;
            (x, None)
        };
        let m = self.konst(Type::I32, mask);
        let off = self.bin(BinOp::And, x, m);
        let b = self.konst(Type::I32, (HEAP_BASE + r.base) as i64);
        (self.bin(BinOp::Add, b, off), var)
    }
}

/// The never-firing range checks of [`Gen::word_edge_check`]: `(op, k, adjust)` where
/// `x op k` is false for every `x` once `x` is adjusted (`1`: `x | 1`, `-2`: `x & -2`,
/// `0`: `x` itself), while the other member of the operator's sign pair fires for every
/// `x` of one sign.
const NEVER_ROWS: [(CmpOp, i64, i64); 8] = [
    (CmpOp::Slt, i64::MIN, 0), // ult fires for x >= 0
    (CmpOp::Ult, 0, 0),        // slt fires for x < 0
    (CmpOp::Sgt, i64::MAX, 0), // ugt fires for x < 0
    (CmpOp::Ugt, -1, 0),       // sgt fires for x >= 0
    (CmpOp::Sle, i64::MIN, 1), // x | 1 is never MIN; ule fires for x >= 0
    (CmpOp::Ule, 0, 1),        // x | 1 is never 0; sle fires for x < 0
    (CmpOp::Sge, i64::MAX, -2), // x & -2 is never MAX; uge fires for x < 0
    (CmpOp::Uge, -1, -2),      // x & -2 is never -1; sge fires for x >= 0
];

impl<S: Source> Gen<'_, S> {
    /// The word-edge block at the top of the function (the entry block, so that every
    /// run evaluates it): compares of a value of either sign against sign edges in each
    /// context the program's features allow (a `trapif` that never fires, an `if`, a
    /// `select` condition, a compare as a value), shifts by counts `32..63` and past the
    /// width, and extending loads of bytes a store of such a value just wrote. Its type
    /// is i64 where the program has i64 (the decomposition's cases: high words of mixed
    /// sign, low words across the sign bit, counts that swap the words), else i32.
    pub(super) fn word_edges(&mut self) {
        let ty = if self.on(Feature::I64) { Type::I64 } else { Type::I32 };
        self.note("word-edge block at the entry");
        if self.on(Feature::TrapIf) {
            for _ in 0..1 + self.below(3) {
                let t = self.word_edge_check(ty);
                self.push(t);
            }
        }
        if self.on(Feature::Load) && ty == Type::I64 {
            self.word_edge_store();
        }
        // The values go into one or two new locals (the return value reads them), not
        // one each: a local per value would stay live through the whole function.
        let mut flags = vec![];
        let mut vals = vec![];
        if self.on(Feature::Cmp) {
            for _ in 0..1 + self.below(2) {
                flags.push(self.word_edge_compare(ty));
            }
        }
        if self.on(Feature::Select) && self.chance(700) {
            let cond = self.word_edge_compare(ty);
            let a = self.expr(ty, 1);
            let b = self.expr(ty, 1);
            vals.push(self.add(ExprData::Select { cond, if_true: a, if_false: b }));
        }
        if self.on(Feature::Shift) {
            for op in [BinOp::Shl, BinOp::Lshr, BinOp::Ashr] {
                if self.chance(800) {
                    vals.push(self.word_edge_shift(op, ty));
                }
            }
        }
        if self.on(Feature::Div) && self.chance(700) {
            // A guarded division of a value of either sign: signed and unsigned differ.
            let op = self.pick(&[BinOp::Sdiv, BinOp::Udiv, BinOp::Srem, BinOp::Urem]);
            let a = self.signed_operand(ty);
            let b = self.expr(ty, 1);
            vals.push(self.guarded_div(op, ty, a, b));
        }
        if self.on(Feature::Load) && ty == Type::I64 {
            vals.extend(self.word_edge_loads());
        }
        if ty == Type::I32 {
            vals.append(&mut flags);
        }
        for v in [flags, vals] {
            if !v.is_empty() {
                let e = self.combine(v, &[BinOp::Xor, BinOp::Add, BinOp::Sub]);
                let t = self.new_temp(self.ty_of(e));
                let s = self.assign(t, e);
                self.push(s);
            }
        }
        if self.on(Feature::If) && self.blocks_left(8) {
            for _ in 0..1 + self.below(2) {
                self.word_edge_if(ty);
            }
        }
    }

    /// A value of `ty` whose sign differs between runs: a parameter (an i32 one
    /// extended, for an i64), negated or with a sign bit flipped half of the time, so
    /// that small non-negative arguments give negative values too.
    fn signed_operand(&mut self, ty: Type) -> Expr {
        let same: Vec<Local> = self.f.params.iter().copied().filter(|&l| self.f.locals[l].ty == ty).collect();
        let narrow: Vec<Local> = self.f.params.iter().copied().filter(|&l| self.f.locals[l].ty == Type::I32).collect();
        let x = if !same.is_empty() && self.chance(700) {
            let p = self.pick(&same);
            self.local(p)
        } else if ty == Type::I64 && !narrow.is_empty() && self.chance(600) {
            let p = self.pick(&narrow);
            let x = self.local(p);
            let op = if self.chance(500) { ConvOp::Sext } else { ConvOp::Zext };
            self.add(ExprData::Convert { op, arg: x })
        } else {
            self.expr(ty, 2)
        };
        match self.below(4) {
            0 => self.add(ExprData::Unary { op: UnOp::Neg, arg: x }),
            1 => {
                // The sign of the whole value, or of the low word of an i64 (an add
                // carries into the high word).
                let k = self.pick(&[i64::MIN, 0x8000_0000, -0x1_0000_0000]);
                let k = self.konst(ty, if ty == Type::I32 { i32::MIN as i64 } else { k });
                let op = if self.on(Feature::Bitwise) && self.chance(500) { BinOp::Xor } else { BinOp::Add };
                self.bin(op, x, k)
            }
            _ => x,
        }
    }

    /// `x op edge` (or the mirrored form) with an ordering operator, `x` of either sign.
    fn word_edge_compare(&mut self, ty: Type) -> Expr {
        let op = self.pick(&CmpOp::ALL[2..]);
        let x = self.signed_operand(ty);
        let k = self.sign_edge(ty);
        if self.chance(500) {
            self.cmp(mirror(op), k, x)
        } else {
            self.cmp(op, x, k)
        }
    }

    /// `trapif` of a row of [`NEVER_ROWS`] (either way round): never fires, but its
    /// sign-pair twin fires for every value of one sign.
    fn word_edge_check(&mut self, ty: Type) -> Expr {
        self.note("trapif that never fires, its sign twin for one sign");
        // The adjusting `or` and `and` only where the program has bitwise operators.
        let rows = if self.on(Feature::Bitwise) { &NEVER_ROWS[..] } else { &NEVER_ROWS[..4] };
        let (op, k, adjust) = self.pick(rows);
        let x = self.signed_operand(ty);
        let x = match adjust {
            0 => x,
            a => {
                let op = if a == 1 { BinOp::Or } else { BinOp::And };
                let a = self.konst(ty, a);
                self.bin(op, x, a)
            }
        };
        let k = match (ty, k) {
            (Type::I32, i64::MIN) => i32::MIN as i64,
            (Type::I32, i64::MAX) => i32::MAX as i64,
            _ => k,
        };
        let k = self.konst(ty, k);
        let cond = if self.chance(500) { self.cmp(mirror(op), k, x) } else { self.cmp(op, x, k) };
        let code = self.below(100);
        self.add(ExprData::TrapIf { cond, code })
    }

    /// `x op n` with a count just past the width (masked to a small one) or, for
    /// an i64, in `32..63` (the words swap); a variable count when the program has
    /// them.
    fn word_edge_shift(&mut self, op: BinOp, ty: Type) -> Expr {
        let bits = ty.bits() as i64;
        let x = self.signed_operand(ty);
        let past = ty == Type::I32 || self.chance(600);
        let n = if self.on(Feature::VarShift) && self.chance(400) {
            self.note("shift by a variable count past the width or across the words");
            let y = self.expr(ty, 1);
            let m = self.konst(ty, if past { 7 } else { 31 });
            let low = self.bin(BinOp::And, y, m);
            let base = self.konst(ty, if past { bits } else { 32 });
            self.bin(BinOp::Add, low, base)
        } else {
            let n = if past { bits + self.below(8) as i64 } else { 32 + self.below(32) as i64 };
            self.konst(ty, n)
        };
        self.bin(op, x, n)
    }

    /// `store.64(A, x)` at the first hot address, when the program stores: the bytes
    /// [`Gen::word_edge_loads`] read, with their top bits set in some runs.
    fn word_edge_store(&mut self) {
        if !self.on(Feature::Store) {
            return;
        }
        let o = self.hot_offsets[0].min(HEAP_SIZE - 8);
        let x = self.signed_operand(Type::I64);
        let a = self.konst(Type::I32, (HEAP_BASE + o) as i64);
        let s = self.add(ExprData::Store { width: MemWidth::W64, addr: a, value: x });
        self.push(s);
    }

    /// Extending i64 loads of 8, 16 and 32 bits inside the 8 bytes at the first hot
    /// address (where [`Gen::word_edge_store`] wrote, or the run's heap rows lie).
    fn word_edge_loads(&mut self) -> Vec<Expr> {
        let o = self.hot_offsets[0].min(HEAP_SIZE - 8);
        let mut out = vec![];
        for width in [MemWidth::W8, MemWidth::W16, MemWidth::W32] {
            if !self.chance(700) {
                continue;
            }
            let d = self.below(9 - width.bytes()) as i64;
            let a = self.konst(Type::I32, (HEAP_BASE + o) as i64 + d);
            let signed = self.chance(500);
            out.push(self.add(ExprData::Load { ty: Type::I64, width, signed, addr: a }));
        }
        out
    }

    /// `if (x op edge) { a statement }`: a branch on a compare of a value of either sign
    /// against a sign edge.
    fn word_edge_if(&mut self, ty: Type) {
        self.note("if on a compare across the sign edge");
        let c = self.word_edge_compare(ty);
        let then_b = self.create_block();
        let join = self.create_block();
        self.seal(Terminator::Branch { cond: c, then_dest: then_b, else_dest: join });
        self.enter(then_b);
        let s = self.stmt(2);
        self.push(s);
        self.seal(Terminator::Jump(join));
        self.enter(join);
    }
}
