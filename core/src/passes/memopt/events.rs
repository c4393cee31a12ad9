//! What the memory analyses of `memopt` see of a block: its *memory events* in evaluation
//! order ([`Ev`]), and heap addresses in the canonical form the alias analysis compares
//! ([`Loc`]).
//!
//! A heap address is an SSA expression. [`canon_addr`] splits it into a *base* (a pure,
//! loop-free tree over SSA locals, compared by its printed structure; or none for an
//! absolute address) and a constant byte offset, peeling `add(x, c)`, `add(c, x)` and
//! `sub(x, c)`. In SSA form a pure tree over the same locals has the same value wherever
//! both copies are evaluated while those locals keep their definitions, so two accesses
//! with one base *must* alias when their offsets and widths agree, *cannot* alias when
//! their byte ranges are disjoint, and otherwise *may* alias; distinct bases may always
//! alias. An address that is not pure (it reads memory, calls, may trap, assigns) has no
//! `Loc` and may alias every access. Since a base names locals, an analysis that carries a
//! `Loc` across a new definition of one of them (a phi at a loop header, a statement in a
//! loop body met again) must drop it: [`Loc::mentions`].

use crate::helpers::Effects;
use crate::ir::{BinOp, Block, CfVar, Expr, ExprData, Function, Local, MemWidth, Terminator};
use crate::passes::util::push_decimal;
use std::rc::Rc;

/// A canonical heap access: `base + offset`, `width` bytes.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Loc {
    /// The base tree (`None`: an absolute address), shared: the analyses copy a location
    /// into every state that holds it, and a copy of its text was two allocations each.
    pub base: Option<Rc<Base>>,
    pub offset: u32,
    pub width: MemWidth,
}

/// The base of a canonical heap address: a pure tree over SSA locals.
#[derive(PartialEq, Eq, Hash, Debug)]
pub struct Base {
    /// The printed structure of the tree: two bases are the same tree when it is.
    pub key: String,
    /// The locals the tree reads.
    pub locals: Vec<Local>,
}

impl Loc {
    /// Whether the two accesses may touch a common byte.
    pub fn may_alias(&self, other: &Loc) -> bool {
        if self.base != other.base {
            return true;
        }
        // Same base: the ranges differ by a known constant (addresses wrap at 2^32).
        let d = other.offset.wrapping_sub(self.offset);
        let back = self.offset.wrapping_sub(other.offset);
        !(d >= self.width.bytes() && back >= other.width.bytes())
    }

    /// Whether `self` starts at the same byte as `other` and is at least as wide: the
    /// low `other.width` bits of what `self` holds are exactly what `other` reads.
    pub fn covers(&self, other: &Loc) -> bool {
        self.base == other.base && self.offset == other.offset && self.width.bytes() >= other.width.bytes()
    }

    /// Whether the base reads local `l`.
    pub fn mentions(&self, l: Local) -> bool {
        self.locals().contains(&l)
    }

    /// The locals the base reads.
    pub fn locals(&self) -> &[Local] {
        self.base.as_ref().map_or(&[], |b| &b.locals)
    }
}

/// Whether the tree at `e` is pure and cannot trap: constants, locals, arithmetic without
/// division, comparisons, conversions, selects and pure helper calls.
pub fn pure_tree(f: &Function, e: Expr) -> bool {
    let mut ok = true;
    f.visit_postorder(e, &mut |n| {
        ok &= match &f.exprs[n] {
            ExprData::Const { .. }
            | ExprData::Local(_)
            | ExprData::Unary { .. }
            | ExprData::Cmp { .. }
            | ExprData::Convert { .. }
            | ExprData::Select { .. } => true,
            ExprData::Binary { op, .. } => !op.can_trap(),
            ExprData::Call { helper, .. } => helper.effects().is_pure(),
            _ => false,
        }
    });
    ok
}

/// Writes the printed structure of the tree at `e` to `out` (constants as `value:type`,
/// locals as they print), and the locals it reads to `locals`. The numbers are written
/// by [`push_decimal`], not through `write!` (every heap access's address is keyed so,
/// each time its block's events are found).
fn key(f: &Function, e: Expr, out: &mut String, locals: &mut Vec<Local>) {
    use std::fmt::Write;
    match &f.exprs[e] {
        ExprData::Const { ty, value } => {
            if *value < 0 {
                out.push('-');
            }
            push_decimal(out, value.unsigned_abs());
            out.push(':');
            out.push_str(ty.name());
        }
        ExprData::Local(l) => {
            out.push_str("%l");
            push_decimal(out, l.as_u32() as u64);
            if !locals.contains(l) {
                locals.push(*l);
            }
        }
        d => {
            out.push('(');
            // The operator's name, written in place (a `String` per node was most of it).
            match d {
                ExprData::Unary { op, .. } => out.push_str(op.name()),
                ExprData::Binary { op, .. } => out.push_str(op.name()),
                ExprData::Cmp { op, .. } => out.push_str(op.name()),
                ExprData::Convert { op, .. } => out.push_str(op.name()),
                ExprData::Select { .. } => out.push_str("select"),
                ExprData::Call { helper, .. } => {
                    let _ = write!(out, "{helper:?}");
                }
                _ => out.push('?'),
            }
            for o in d.operands() {
                out.push(' ');
                key(f, o, out, locals);
            }
            out.push(')');
        }
    }
}

/// The canonical form of the address tree `e` for an access of `width`, if it is pure.
pub fn canon_addr(f: &Function, e: Expr, width: MemWidth) -> Option<Loc> {
    fn split(f: &Function, e: Expr) -> Option<(Option<Expr>, u32)> {
        let konst = |x: Expr| match f.exprs[x] {
            ExprData::Const { value, .. } => Some(value as u32),
            _ => None,
        };
        match f.exprs[e] {
            ExprData::Const { value, .. } => Some((None, value as u32)),
            ExprData::Binary { op: BinOp::Add, lhs, rhs } if konst(rhs).is_some() => {
                let (b, o) = split(f, lhs)?;
                Some((b, o.wrapping_add(konst(rhs)?)))
            }
            ExprData::Binary { op: BinOp::Add, lhs, rhs } if konst(lhs).is_some() => {
                let (b, o) = split(f, rhs)?;
                Some((b, o.wrapping_add(konst(lhs)?)))
            }
            ExprData::Binary { op: BinOp::Sub, lhs, rhs } if konst(rhs).is_some() => {
                let (b, o) = split(f, lhs)?;
                Some((b, o.wrapping_sub(konst(rhs)?)))
            }
            _ if pure_tree(f, e) => Some((Some(e), 0)),
            _ => None,
        }
    }
    let (base, offset) = split(f, e)?;
    let base = base.map(|b| {
        // Room for a short key at once (`(add %l12 8:i32)`), not grown by doubling.
        let (mut key_text, mut locals) = (String::with_capacity(32), vec![]);
        key(f, b, &mut key_text, &mut locals);
        Rc::new(Base { key: key_text, locals })
    });
    Some(Loc { base, offset, width })
}

/// One memory-relevant step of a block, in evaluation order.
#[derive(Clone, PartialEq, Debug)]
pub enum Ev {
    /// A local gets a new value (a phi of the block, or an assignment).
    Def(Local),
    /// `cfread(@var)`; `bound` is the local when the statement is `%l = cfread(@var)`.
    CfRead { node: Expr, var: CfVar, bound: Option<Local> },
    /// `cfwrite(@var, value)`.
    CfWrite { node: Expr, var: CfVar, value: Expr },
    /// A heap load; `loc` is `None` for an address that is not canonical.
    Load { node: Expr, loc: Option<Loc>, bound: Option<Local> },
    /// A heap store.
    Store { node: Expr, loc: Option<Loc>, value: Expr },
    /// A helper call with side effects, through its summary.
    Call(Effects),
    /// A node that may trap: a division or a `trapif`.
    Trap,
    /// The function returns: the callframe and the heap are observed.
    Exit,
}

/// The events of one tree rooted at `root` (a statement or a terminator expression).
pub fn tree_events(f: &Function, root: Expr, out: &mut Vec<Ev>) {
    let bound_of = |n: Expr| match f.exprs[root] {
        ExprData::Assign { local, value } if value == n => Some(local),
        _ => None,
    };
    f.visit_postorder(root, &mut |n| match &f.exprs[n] {
        ExprData::Assign { local, .. } => out.push(Ev::Def(*local)),
        ExprData::CfRead(var) => out.push(Ev::CfRead { node: n, var: *var, bound: bound_of(n) }),
        ExprData::CfWrite { var, value } => out.push(Ev::CfWrite { node: n, var: *var, value: *value }),
        ExprData::Load { width, addr, .. } => {
            out.push(Ev::Load { node: n, loc: canon_addr(f, *addr, *width), bound: bound_of(n) })
        }
        ExprData::Store { width, addr, value } => {
            out.push(Ev::Store { node: n, loc: canon_addr(f, *addr, *width), value: *value })
        }
        ExprData::Call { helper, .. } if !helper.effects().is_pure() => out.push(Ev::Call(helper.effects())),
        ExprData::TrapIf { .. } => out.push(Ev::Trap),
        ExprData::Binary { op, .. } if op.can_trap() => out.push(Ev::Trap),
        _ => {}
    });
}

/// The events of block `b`: its phis, its statements, its terminator, then `Exit` if it
/// returns.
pub fn block_events(f: &Function, b: Block) -> Vec<Ev> {
    let data = &f.blocks[b];
    // Room for the phis and about one event per statement, grown from there.
    let mut out: Vec<Ev> = Vec::with_capacity(data.phis.len() + data.stmts.len() + 2);
    out.extend(data.phis.iter().map(|p| Ev::Def(p.dest)));
    for &s in &data.stmts {
        tree_events(f, s, &mut out);
    }
    if let Some(t) = data.term.expr() {
        tree_events(f, t, &mut out);
    }
    if matches!(data.term, Terminator::Return(_)) {
        out.push(Ev::Exit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{MemWidth::*, Type};

    /// The key of a constant and of a local is what `write!` wrote for them.
    #[test]
    fn key_writes_what_display_writes() {
        let mut f = Function::new("t", Type::I32);
        let l = f.new_local("a", Type::I64);
        let x = f.add_expr(ExprData::Local(l));
        for (ty, value) in [(Type::I32, 0), (Type::I32, -1), (Type::I64, i64::MIN), (Type::I64, i64::MAX), (Type::I32, 4096)] {
            let c = f.add_expr(ExprData::Const { ty, value });
            let e = f.add_expr(ExprData::Binary { op: BinOp::Mul, lhs: x, rhs: c });
            let (mut text, mut locals) = (String::new(), vec![]);
            key(&f, e, &mut text, &mut locals);
            assert_eq!(text, format!("(mul {l} {value}:{ty})"));
            assert_eq!(locals, vec![l]);
        }
    }

    /// A function with parameters %a and %b, and a builder of address trees over them.
    struct T {
        f: Function,
        a: Local,
        b: Local,
    }

    impl T {
        fn new() -> T {
            let mut f = Function::new("t", Type::I32);
            let a = f.new_local("a", Type::I32);
            let b = f.new_local("b", Type::I32);
            f.params = vec![a, b];
            T { f, a, b }
        }
        fn c(&mut self, v: i64) -> Expr {
            self.f.add_expr(ExprData::Const { ty: Type::I32, value: v })
        }
        fn l(&mut self, l: Local) -> Expr {
            self.f.add_expr(ExprData::Local(l))
        }
        fn bin(&mut self, op: BinOp, lhs: Expr, rhs: Expr) -> Expr {
            self.f.add_expr(ExprData::Binary { op, lhs, rhs })
        }
        /// `add(%a, k)`
        fn a_plus(&mut self, k: i64) -> Expr {
            let (x, y) = (self.l(self.a), self.c(k));
            self.bin(BinOp::Add, x, y)
        }
        fn loc(&self, e: Expr, w: MemWidth) -> Loc {
            canon_addr(&self.f, e, w).expect("canonical")
        }
    }

    #[test]
    fn same_base_and_offset_must_alias() {
        let mut t = T::new();
        let e1 = t.a_plus(8);
        let (k, x) = (t.c(8), t.l(t.a));
        let e2 = t.bin(BinOp::Add, k, x);
        let (l1, l2) = (t.loc(e1, W32), t.loc(e2, W32));
        assert_eq!(l1, l2);
        assert!(l1.covers(&l2) && l1.may_alias(&l2));
        // A word covers the byte at its first address, not the other way round.
        let b = t.loc(e1, W8);
        assert!(l1.covers(&b) && !b.covers(&l1));
    }

    #[test]
    fn disjoint_ranges_of_one_base_cannot_alias() {
        let mut t = T::new();
        let (e8, e12, e11) = (t.a_plus(8), t.a_plus(12), t.a_plus(11));
        let w8 = t.loc(e8, W32);
        // Bytes 8..12 and 12..16: disjoint; byte 11 is inside 8..12.
        assert!(!w8.may_alias(&t.loc(e12, W32)));
        assert!(!t.loc(e12, W32).may_alias(&w8));
        assert!(w8.may_alias(&t.loc(e11, W8)));
        // sub(%a, 4) covers bytes -4..0 of %a: disjoint from the word at %a.
        let (x, k) = (t.l(t.a), t.c(4));
        let s = t.bin(BinOp::Sub, x, k);
        let at_a = t.l(t.a);
        assert!(!t.loc(s, W32).may_alias(&t.loc(at_a, W32)));
        // Offsets wrap at 2^32: bytes -2..2 overlap 0..4.
        let m2 = t.a_plus(-2);
        assert!(t.loc(m2, W32).may_alias(&t.loc(at_a, W32)));
    }

    #[test]
    fn different_bases_may_alias_and_constants_compare_by_value() {
        let mut t = T::new();
        let (pa, pb) = (t.l(t.a), t.l(t.b));
        assert!(t.loc(pa, W8).may_alias(&t.loc(pb, W8)));
        let (c0, c4) = (t.c(0x0010_0000), t.c(0x0010_0004));
        assert!(!t.loc(c0, W32).may_alias(&t.loc(c4, W32)));
        assert!(t.loc(c0, W64).may_alias(&t.loc(c4, W32)));
        // A constant address and a local one may alias.
        assert!(t.loc(c0, W8).may_alias(&t.loc(pa, W8)));
    }

    #[test]
    fn an_address_that_reads_memory_or_traps_has_no_canonical_form() {
        let mut t = T::new();
        let x = t.l(t.a);
        let ld = t.f.add_expr(ExprData::Load { ty: Type::I32, width: W32, signed: false, addr: x });
        assert!(canon_addr(&t.f, ld, W32).is_none());
        let (x, y) = (t.l(t.a), t.l(t.b));
        let d = t.bin(BinOp::Udiv, x, y);
        assert!(canon_addr(&t.f, d, W32).is_none());
        let e = t.a_plus(4);
        let loc = t.loc(e, W32);
        assert!(loc.mentions(t.a) && !loc.mentions(t.b));
    }
}
