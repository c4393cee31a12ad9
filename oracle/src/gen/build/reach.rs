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
//!   redefined ([`Gen::store_then_redefine`]), which a dead-store pass must not delete.
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
pub(super) const I64_COMPARE_PERMILLE: u32 = 350;
/// Per-mille of stores built by [`Gen::neighbour_store`].
pub(super) const NEIGHBOUR_PERMILLE: u32 = 350;
/// Per-mille of neighbour stores over a variable base preceded by
/// [`Gen::store_then_redefine`].
const REDEFINED_BASE_PERMILLE: u32 = 300;

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
        let x = if zext {
            let y = self.expr(Type::I32, depth.min(2));
            self.add(ExprData::Convert { op: ConvOp::Zext, arg: y })
        } else {
            self.expr(ty, depth.min(2))
        };
        let k = self.konst(ty, k);
        (op, x, k)
    }

    /// `store.w1(A + o1, op(comma(store.w3(A + o3, v), load.w2(A + o2)), y))`: three
    /// accesses of mixed widths at constant offsets of one base `A`.
    pub(super) fn neighbour_store(&mut self, depth: u32) -> Expr {
        const OFFSETS: [i64; 8] = [0, 0, 1, 2, 3, 4, 6, 8];
        let ty = self.ty();
        let widths: Vec<MemWidth> = MemWidth::ALL.into_iter().filter(|w| w.bits() <= ty.bits()).collect();
        let (base, base_local) = self.neighbour_base();
        // The first address uses `base` itself, the others clones of it.
        let at = |g: &mut Self, off: i64, clone: bool| {
            let b = if clone { g.f.clone_tree(base) } else { base };
            let o = g.konst(Type::I32, off);
            g.bin(BinOp::Add, b, o)
        };
        let (w1, w2, w3) = (self.pick(&widths), self.pick(&widths), self.pick(&widths));
        let (o1, o2, o3) = (self.pick(&OFFSETS), self.pick(&OFFSETS), self.pick(&OFFSETS));
        let a3 = at(self, o3, true);
        let a2 = at(self, o2, true);
        let a1 = at(self, o1, false);
        let v = self.expr(ty, depth.min(2));
        let inner = self.add(ExprData::Store { width: w3, addr: a3, value: v });
        // The load's type is drawn on its own: an i32 stored and read back as an i64 (or
        // the reverse) is what store-to-load forwarding converts.
        let lty = self.ty();
        let w2 = if w2.bits() > lty.bits() { MemWidth::W32 } else { w2 };
        let signed = w2.bits() < lty.bits() && self.chance(500);
        let load = self.add(ExprData::Load { ty: lty, width: w2, signed, addr: a2 });
        let load = self.convert_to(load, ty);
        let value = self.add(ExprData::Comma { first: inner, second: load });
        let value = if self.chance(500) {
            let y = self.expr(ty, depth.min(1));
            let op = self.pick(&[BinOp::Add, BinOp::Xor, BinOp::Or]);
            self.bin(op, value, y)
        } else {
            value
        };
        self.note("neighbour accesses of mixed widths");
        if let Some(l) = base_local {
            if self.cur.is_some() && self.chance(REDEFINED_BASE_PERMILLE) {
                self.store_then_redefine(base, l, w1, o1, ty);
            }
        }
        self.add(ExprData::Store { width: w1, addr: a1, value })
    }

    /// Before the statement under construction: `store.w(A + o, v)` and `%l = x`, where
    /// `A` reads `%l`, so that the statement's store to `A + o` (the same printed address)
    /// is at another place. Dead-store elimination must see the redefinition.
    fn store_then_redefine(&mut self, base: Expr, l: Local, width: MemWidth, off: i64, ty: Type) {
        self.note("store, its base local redefined, the same address stored again");
        let b = self.f.clone_tree(base);
        let o = self.konst(Type::I32, off);
        let addr = self.bin(BinOp::Add, b, o);
        let value = self.expr(ty, 1);
        let s = self.add(ExprData::Store { width, addr, value });
        self.push(s);
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
