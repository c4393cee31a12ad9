//! Operand shapes the generic expression builder rarely or never makes, each aimed at a
//! special case of the folder or the backend:
//! * [`Gen::edge_binary`]: constant operands from the edge set ([`crate::gen::edges`]) on
//!   the left, the right or both sides of every operator at both widths — the folder's
//!   cases (`srem(MIN, -1)` must stay a trap, shifts by 32 or 64, `mul` by `MIN`) and
//!   the backend's immediate operands.
//! * [`Gen::addr_mode`]: heap addresses in the shapes the backend folds into an x86
//!   address mode `[base + index * scale + disp]` (`lower.rs`, `address_mode`): a
//!   constant displacement on the right, an index shifted by 0 to 3, both at once, and a
//!   variable base with a scaled variable index.
//! * [`Gen::guarded_addr`]: an address that can leave the heap, behind a bounds check (a
//!   `trapif` statement just before, or `comma(trapif(...), address)`), so that the check
//!   traps exactly where the access would fault: a pass that speculates the access across
//!   the check (hoisting a loop-invariant load, sinking a promoted store, moving the tree)
//!   faults or reads out of bounds where the reference traps.
//!
//! The parent module's invariants hold: every address stays inside its region (each
//! masked part is at most its share of `size - width`); divisions by a constant that surely traps (0, or
//! `-1` under a constant `MIN`) are made only at a small rate, so that the share of
//! trapping runs stays reasonable; a divisor that is not constant is guarded.

use super::*;
use crate::gen::edges;

/// Per-mille of binary operators built with edge constant operands.
pub(super) const EDGE_PERMILLE: u32 = 220;
/// Per-mille of non-constant heap addresses built by [`Gen::addr_mode`].
pub(super) const ADDR_MODE_PERMILLE: u32 = 450;
/// Per-mille of non-constant heap addresses built by [`Gen::guarded_addr`].
pub(super) const GUARDED_PERMILLE: u32 = 40;
/// Per-mille of surely trapping constant divisions that are kept.
const SURE_TRAP_PERMILLE: u32 = 300;

impl<S: Source> Gen<'_, S> {
    /// A value of the edge set of `ty` (no node yet: a value redrawn leaves nothing
    /// unplaced).
    fn edge_value(&mut self, ty: Type) -> i64 {
        // A third of the draws from the first seven classes (0, ±1, MIN, MAX and their
        // neighbours), where most of the folder's and the backend's special cases lie.
        let n = if self.chance(333) { 7 } else { edges::CLASSES.len() as u32 };
        let class = self.below(n) as usize;
        let k = self.below(64);
        edges::value(ty, class, k)
    }

    /// `op` over edge constants: on the left, on the right, or on both sides.
    pub(super) fn edge_binary(&mut self, op: BinOp, ty: Type, d: u32) -> Expr {
        let min = if ty == Type::I32 { i32::MIN as i64 } else { i64::MIN };
        let signed = matches!(op, BinOp::Sdiv | BinOp::Srem);
        match self.below(3) {
            0 => {
                self.note("edge constant on the left");
                let av = self.edge_value(ty);
                let a = self.konst(ty, av);
                let b = self.expr(ty, d);
                if !op.can_trap() {
                    return self.bin(op, a, b);
                }
                // `(b & 15) + 1` keeps the constant dividend and never traps.
                let m = self.konst(ty, 15);
                let low = self.bin(BinOp::And, b, m);
                let one = self.konst(ty, 1);
                let dv = self.bin(BinOp::Add, low, one);
                self.bin(op, a, dv)
            }
            1 => {
                self.note("edge constant on the right");
                let a = self.expr(ty, d);
                let mut bv = self.edge_value(ty);
                if op.can_trap() {
                    // A variable dividend under -1 traps only on MIN: kept half of the
                    // time; a zero divisor always traps: kept rarely.
                    // At most a few draws (an exhausted byte source draws 0 forever),
                    // then the divisor 1, which never traps.
                    let mut tries = 0;
                    while bv == 0 && !self.chance(SURE_TRAP_PERMILLE) || signed && bv == -1 && !self.chance(500) {
                        tries += 1;
                        bv = if tries < 4 { self.edge_value(ty) } else { 1 };
                    }
                    if bv == 0 {
                        self.note("division by constant zero");
                    }
                }
                let b = self.konst(ty, bv);
                self.bin(op, a, b)
            }
            _ => {
                self.note("edge constants on both sides");
                let av = self.edge_value(ty);
                let mut bv = self.edge_value(ty);
                if op.can_trap() {
                    let mut tries = 0;
                    while (bv == 0 || signed && bv == -1 && av == min) && !self.chance(SURE_TRAP_PERMILLE) {
                        tries += 1;
                        bv = if tries < 4 { self.edge_value(ty) } else { 1 };
                    }
                    if bv == 0 || signed && bv == -1 && av == min {
                        self.note("constant division that traps");
                    }
                }
                let (a, b) = (self.konst(ty, av), self.konst(ty, bv));
                self.bin(op, a, b)
            }
        }
    }

    /// A value masked to at most `m`: `e & m`.
    fn masked(&mut self, m: u32, depth: u32) -> Expr {
        let e = if self.chance(500) && !self.pure_mode { self.expr(Type::I32, depth) } else { self.leaf(Type::I32) };
        let k = self.konst(Type::I32, m as i64);
        self.bin(BinOp::And, e, k)
    }

    /// An in-bounds address of region `r` for an access of `w` bytes, in one of the
    /// shapes of an x86 address mode.
    pub(super) fn addr_mode(&mut self, r: Region, w: u32, depth: u32) -> Expr {
        let room = r.size - w;
        let base = (HEAP_BASE + r.base) as i64;
        let s = self.below(4);
        match self.below(4) {
            // `add(e & m, R)`: a register plus a displacement.
            0 => {
                self.note("address base + disp");
                let x = self.masked(room, depth);
                let k = self.konst(Type::I32, base);
                self.bin(BinOp::Add, x, k)
            }
            // `add(R, shl(e & m, s))`: a scaled index (the base constant in a register).
            1 => {
                self.note("address base + index*scale");
                let x = self.masked(room >> s, depth);
                let sh = self.konst(Type::I32, s as i64);
                let idx = self.bin(BinOp::Shl, x, sh);
                let k = self.konst(Type::I32, base);
                self.bin(BinOp::Add, k, idx)
            }
            // `add(add(R, shl(e & m, s)), d)`: base, scaled index and displacement.
            2 => {
                self.note("address base + index*scale + disp");
                let d = 1 + self.below(room.min(8));
                let x = self.masked((room - d) >> s, depth);
                let sh = self.konst(Type::I32, s as i64);
                let idx = self.bin(BinOp::Shl, x, sh);
                let k = self.konst(Type::I32, base);
                let sum = self.bin(BinOp::Add, k, idx);
                let dk = self.konst(Type::I32, d as i64);
                self.bin(BinOp::Add, sum, dk)
            }
            // `add(add(e1 & m1, shl(e2 & m2, s)), R)`: variable base and scaled index,
            // the region's start as displacement; the scaled index on either side.
            _ => {
                self.note("address variable base + index*scale + disp");
                let half = room / 2;
                let b = self.masked(half, depth.min(1));
                let x = self.masked(half >> s, depth.min(1));
                let sh = self.konst(Type::I32, s as i64);
                let idx = self.bin(BinOp::Shl, x, sh);
                let sum = if self.chance(500) { self.bin(BinOp::Add, b, idx) } else { self.bin(BinOp::Add, idx, b) };
                let k = self.konst(Type::I32, base);
                self.bin(BinOp::Add, sum, k)
            }
        }
    }

    /// An access of `w` bytes at the end of the heap whose offset may run past it, behind
    /// a bounds check: `trapif(ugt(v, S - w))` before `HEAP_BASE + HEAP_SIZE - S + v`, with
    /// `v = x & (2S - 1)`. The access runs only in bounds; when the check fires, the
    /// address is outside the heap. The check is either a statement of its own just before
    /// the access's (`x` a parameter, which nothing assigns, so that the address is also
    /// loop-invariant and memopt may consider hoisting it), or in the address itself
    /// (`comma(check, address)`, `x` any leaf read twice).
    pub(super) fn guarded_addr(&mut self, w: u32) -> Expr {
        let s = self.pick(&[16u32, 64, 256]);
        let mask = (2 * s - 1) as i64;
        let params: Vec<Local> = self.f.params.iter().copied().filter(|&l| self.f.locals[l].ty == Type::I32).collect();
        // A tree built in pure mode may be copied to places the check does not dominate.
        let separate = !self.pure_mode && !params.is_empty() && self.cur.is_some() && self.chance(600);
        let x = if separate {
            let p = self.pick(&params);
            self.local(p)
        } else {
            self.leaf(Type::I32)
        };
        let x2 = self.f.clone_tree(x);
        let m = self.konst(Type::I32, mask);
        let v = self.bin(BinOp::And, x, m);
        let limit = self.konst(Type::I32, (s - w) as i64);
        let cond = self.cmp(CmpOp::Ugt, v, limit);
        let code = self.below(100);
        let check = self.add(ExprData::TrapIf { cond, code });
        let m2 = self.konst(Type::I32, mask);
        let v2 = self.bin(BinOp::And, x2, m2);
        let base = self.konst(Type::I32, (HEAP_BASE + HEAP_SIZE - s) as i64);
        let addr = self.bin(BinOp::Add, base, v2);
        if separate {
            self.note("address behind a bounds check before it");
            self.push(check);
            addr
        } else {
            self.note("address behind a bounds check in it");
            self.add(ExprData::Comma { first: check, second: addr })
        }
    }
}
