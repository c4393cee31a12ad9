//! The HIR: functions of basic blocks whose statements are expression trees.
//!
//! This module owns the data structures every other part of the pipeline and the harness
//! share. Entities (`Block`, `Local`, `CfVar`, `Expr`) are `u32` indices into arenas of the
//! owning [`Function`]; the order of blocks lives apart from the arena in
//! [`Function::layout`], so a pass can add or remove blocks without renumbering.
//!
//! # Semantics
//!
//! The rules below are the contract of `DESIGN.md` ("The IR and its semantics"); the
//! interpreter, the x86 backend, the Z3 encoding and the generator all follow them.
//!
//! * Types are `i32` and `i64`; truth values are `i32` 0/1; addresses are `i32`.
//! * Arithmetic wraps. Shift counts are masked to the width (`& 31`, `& 63`); `shl` is
//!   logical left, `lshr` logical right, `ashr` arithmetic right.
//! * `sdiv`/`srem` trap with `DivideError` on a zero divisor and on `MIN / -1`,
//!   `MIN % -1` (as x86 `idiv` does); `udiv`/`urem` trap on a zero divisor. Signed
//!   division truncates toward zero and the remainder takes the dividend's sign.
//! * Every local starts at 0; parameters start at their argument.
//! * A statement is one expression tree evaluated left to right in post-order: the
//!   operands of a node are evaluated first, in the order they are written, then the node.
//!   `select` evaluates all three operands (it does not short-circuit).
//!   `comma(a, b)` evaluates `a` for its effects and yields `b`.
//!   An assignment `(%x = e)` evaluates `e`, writes `%x` and yields nothing.
//! * Heap accesses use absolute addresses; the heap is the byte range
//!   [`HEAP_BASE`]`..HEAP_BASE+`[`HEAP_SIZE`], little-endian. An access any byte of which
//!   falls outside is *invalid* (the run is dropped, not compared). Loads of 8/16/32 bits
//!   sign- or zero-extend to the result type; stores truncate the value to the width.
//! * Callframe variables live in memory at [`CALLFRAME_BASE`]` + 8 * index` (one 8-byte
//!   slot each, little-endian; an `i32` variable uses the low 4 bytes). They are read and
//!   written only by `cfread`/`cfwrite` and by helpers whose effect summary says so.
//! * Helper calls evaluate their arguments left to right, then call the helper; see
//!   [`crate::helpers`] for the set and its effect summaries.
//! * `trapif(c, code)` traps with `Check(code)` when `c` is non-zero. Traps are precise:
//!   everything before the trapping node has happened, nothing after it.
//! * A block's phis read the values at the end of the predecessor the block was entered
//!   from, all in parallel, before the first statement runs.
//! * `switch v, default bD, [k: bK, ...]` jumps to the first case equal to `v`, else to
//!   the default.
//! * The entry block is the first block of the layout; it is never a branch target, and
//!   every block must be reachable from it (the verifier's unreachable-block policy).
//! * An expression tree is at most [`MAX_EXPR_DEPTH`] nodes deep (a root alone is 1
//!   deep), so that every walk of a tree may recurse: its depth is bounded by a constant,
//!   never by the length of the input. The parser refuses text nesting deeper than
//!   [`crate::text::parser::MAX_DEPTH`] (256) levels, the verifier checks the limit
//!   (without recursing), and the passes keep it: the tree mover, the one pass that
//!   joins trees of several statements into one, refuses a move that would make a tree
//!   deeper than half the limit; the others deepen a tree by a few levels at most per
//!   run (`ssapre` wraps an occurrence as `comma(%h = e, %h)`, `memopt` a load likewise),
//!   which the other half leaves room for. Walks over blocks and the dominator tree use
//!   worklists: a function may have any number of blocks.

use cranelift_entity::{entity_impl, PrimaryMap};
use std::fmt;
use smallvec::{smallvec, SmallVec};

use crate::helpers::{Effects, HelperKind};
/// `Type` lives in [`crate::types`], below both this module and [`crate::helpers`]; it is
/// re-exported here because every user of the IR names it.
pub use crate::types::Type;

/// Absolute address of the first heap byte, the same number in every oracle.
pub const HEAP_BASE: u32 = 0x0010_0000;
/// Size of the heap in bytes.
pub const HEAP_SIZE: u32 = 0x1000;
/// Absolute address of callframe slot 0; slot `i` is at `CALLFRAME_BASE + 8 * i`.
pub const CALLFRAME_BASE: u32 = 0x0020_0000;
/// Bytes per callframe slot.
pub const CALLFRAME_SLOT: u32 = 8;
/// The deepest an expression tree may be (see the semantics above): recursion over a
/// tree is bounded by this constant.
pub const MAX_EXPR_DEPTH: usize = 512;

/// A basic block.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Block(u32);
entity_impl!(Block, "b");

/// A typed local variable (parameter, temporary, or SSA version).
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Local(u32);
entity_impl!(Local, "%l");

/// A callframe variable of a function.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CfVar(u32);
entity_impl!(CfVar, "@cf");

/// A node of an expression tree. A statement is identified by its root node.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Expr(u32);
entity_impl!(Expr, "e");

/// Unary operators; the result has the operand's type.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum UnOp {
    /// Two's complement negation (wraps).
    Neg,
    /// Bitwise complement.
    Not,
}

/// Binary operators; both operands and the result share one type.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    And,
    Or,
    Xor,
    Shl,
    Lshr,
    Ashr,
    /// Traps on a zero divisor and on `MIN / -1`.
    Sdiv,
    /// Traps on a zero divisor.
    Udiv,
    /// Traps on a zero divisor and on `MIN % -1`.
    Srem,
    /// Traps on a zero divisor.
    Urem,
}

impl BinOp {
    pub const ALL: [BinOp; 13] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::And,
        BinOp::Or,
        BinOp::Xor,
        BinOp::Shl,
        BinOp::Lshr,
        BinOp::Ashr,
        BinOp::Sdiv,
        BinOp::Udiv,
        BinOp::Srem,
        BinOp::Urem,
    ];

    /// The name in the text format.
    pub fn name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Xor => "xor",
            BinOp::Shl => "shl",
            BinOp::Lshr => "lshr",
            BinOp::Ashr => "ashr",
            BinOp::Sdiv => "sdiv",
            BinOp::Udiv => "udiv",
            BinOp::Srem => "srem",
            BinOp::Urem => "urem",
        }
    }

    /// Whether the operator can trap (the four divisions).
    pub fn can_trap(self) -> bool {
        matches!(self, BinOp::Sdiv | BinOp::Udiv | BinOp::Srem | BinOp::Urem)
    }

    /// Whether `a op b == b op a`.
    pub fn is_commutative(self) -> bool {
        matches!(self, BinOp::Add | BinOp::Mul | BinOp::And | BinOp::Or | BinOp::Xor)
    }
}

impl UnOp {
    pub const ALL: [UnOp; 2] = [UnOp::Neg, UnOp::Not];

    /// The name in the text format.
    pub fn name(self) -> &'static str {
        match self {
            UnOp::Neg => "neg",
            UnOp::Not => "not",
        }
    }
}

/// Integer comparisons; the result is an `i32` 0 or 1.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum CmpOp {
    Eq,
    Ne,
    Slt,
    Sle,
    Sgt,
    Sge,
    Ult,
    Ule,
    Ugt,
    Uge,
}

impl CmpOp {
    pub const ALL: [CmpOp; 10] = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Slt,
        CmpOp::Sle,
        CmpOp::Sgt,
        CmpOp::Sge,
        CmpOp::Ult,
        CmpOp::Ule,
        CmpOp::Ugt,
        CmpOp::Uge,
    ];

    /// The name in the text format.
    pub fn name(self) -> &'static str {
        match self {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Slt => "slt",
            CmpOp::Sle => "sle",
            CmpOp::Sgt => "sgt",
            CmpOp::Sge => "sge",
            CmpOp::Ult => "ult",
            CmpOp::Ule => "ule",
            CmpOp::Ugt => "ugt",
            CmpOp::Uge => "uge",
        }
    }

    /// Evaluates the comparison on two values of type `ty` given in canonical form.
    pub fn eval(self, ty: Type, a: i64, b: i64) -> bool {
        let (ua, ub) = match ty {
            Type::I32 => (a as u32 as u64, b as u32 as u64),
            Type::I64 => (a as u64, b as u64),
        };
        match self {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Slt => a < b,
            CmpOp::Sle => a <= b,
            CmpOp::Sgt => a > b,
            CmpOp::Sge => a >= b,
            CmpOp::Ult => ua < ub,
            CmpOp::Ule => ua <= ub,
            CmpOp::Ugt => ua > ub,
            CmpOp::Uge => ua >= ub,
        }
    }
}

/// Width conversions between `i32` and `i64`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum ConvOp {
    /// `i32` to `i64`, sign-extending.
    Sext,
    /// `i32` to `i64`, zero-extending.
    Zext,
    /// `i64` to `i32`, keeping the low half.
    Trunc,
}

impl ConvOp {
    pub const ALL: [ConvOp; 3] = [ConvOp::Sext, ConvOp::Zext, ConvOp::Trunc];

    /// The name in the text format.
    pub fn name(self) -> &'static str {
        match self {
            ConvOp::Sext => "sext",
            ConvOp::Zext => "zext",
            ConvOp::Trunc => "trunc",
        }
    }

    /// The operand type and the result type.
    pub fn types(self) -> (Type, Type) {
        match self {
            ConvOp::Sext | ConvOp::Zext => (Type::I32, Type::I64),
            ConvOp::Trunc => (Type::I64, Type::I32),
        }
    }
}

/// Width of a heap access.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum MemWidth {
    W8,
    W16,
    W32,
    W64,
}

impl MemWidth {
    pub const ALL: [MemWidth; 4] = [MemWidth::W8, MemWidth::W16, MemWidth::W32, MemWidth::W64];

    pub fn bytes(self) -> u32 {
        match self {
            MemWidth::W8 => 1,
            MemWidth::W16 => 2,
            MemWidth::W32 => 4,
            MemWidth::W64 => 8,
        }
    }

    pub fn bits(self) -> u32 {
        self.bytes() * 8
    }

    pub fn from_bits(bits: u32) -> Option<MemWidth> {
        match bits {
            8 => Some(MemWidth::W8),
            16 => Some(MemWidth::W16),
            32 => Some(MemWidth::W32),
            64 => Some(MemWidth::W64),
            _ => None,
        }
    }
}

/// Kinds of precise trap.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum TrapKind {
    /// A division or remainder by zero, or signed `MIN / -1`, `MIN % -1`.
    DivideError,
    /// An explicit `trapif` check with its code.
    Check(u32),
}

impl fmt::Display for TrapKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrapKind::DivideError => f.write_str("divide_error"),
            TrapKind::Check(c) => write!(f, "check({c})"),
        }
    }
}

/// One node of an expression tree. Every node has exactly one parent (or is a root).
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ExprData {
    /// A constant, stored in canonical form (`i32` constants sign-extended).
    Const { ty: Type, value: i64 },
    /// Reads a local.
    Local(Local),
    Unary { op: UnOp, arg: Expr },
    Binary { op: BinOp, lhs: Expr, rhs: Expr },
    Cmp { op: CmpOp, lhs: Expr, rhs: Expr },
    Convert { op: ConvOp, arg: Expr },
    /// `cond != 0 ? if_true : if_false`; all three operands are evaluated.
    Select { cond: Expr, if_true: Expr, if_false: Expr },
    /// A heap load of `width` bits, extended to `ty` (sign-extended if `signed`).
    Load { ty: Type, width: MemWidth, signed: bool, addr: Expr },
    /// A heap store of the low `width` bits of `value`. Yields nothing.
    Store { width: MemWidth, addr: Expr, value: Expr },
    /// `moveFromCallFrame`: reads a callframe variable.
    CfRead(CfVar),
    /// `moveToCallFrame`: writes a callframe variable. Yields nothing.
    CfWrite { var: CfVar, value: Expr },
    /// Writes a local. Yields nothing.
    Assign { local: Local, value: Expr },
    /// Calls a runtime helper; yields its result if it has one.
    Call { helper: HelperKind, args: Vec<Expr> },
    /// Traps with `Check(code)` if `cond` is non-zero. Yields nothing.
    TrapIf { cond: Expr, code: u32 },
    /// Evaluates `first` for its effects, then yields `second`.
    Comma { first: Expr, second: Expr },
}

/// The operands of a node ([`ExprData::operands`]): a slice, and an iterator of
/// `Expr`s by value. Asking for them is on every walk over a tree, so it allocates
/// nothing (issue 22: a `Vec` per call was a twentieth of a campaign).
#[derive(Clone, Copy, Debug)]
pub enum Operands<'a> {
    /// Up to three operands, held inline; the count is the second field.
    Fixed([Expr; 3], u8),
    /// A call's arguments.
    Args(&'a [Expr]),
}

impl std::ops::Deref for Operands<'_> {
    type Target = [Expr];
    #[inline]
    fn deref(&self) -> &[Expr] {
        match self {
            Operands::Fixed(a, n) => &a[..*n as usize],
            Operands::Args(s) => s,
        }
    }
}

impl<'a> IntoIterator for Operands<'a> {
    type Item = Expr;
    type IntoIter = OperandsIter<'a>;
    #[inline]
    fn into_iter(self) -> OperandsIter<'a> {
        let back = self.len();
        OperandsIter { ops: self, front: 0, back }
    }
}

/// The iterator of [`Operands`], front to back or back to front.
#[derive(Clone, Debug)]
pub struct OperandsIter<'a> {
    ops: Operands<'a>,
    front: usize,
    back: usize,
}

impl Iterator for OperandsIter<'_> {
    type Item = Expr;
    #[inline]
    fn next(&mut self) -> Option<Expr> {
        (self.front < self.back).then(|| {
            self.front += 1;
            self.ops[self.front - 1]
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.back - self.front, Some(self.back - self.front))
    }
}

impl DoubleEndedIterator for OperandsIter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Expr> {
        (self.front < self.back).then(|| {
            self.back -= 1;
            self.ops[self.back]
        })
    }
}

impl ExactSizeIterator for OperandsIter<'_> {}

impl ExprData {
    /// Calls `g` on each operand in evaluation order: what [`ExprData::operands`] lists,
    /// without building the list (a walk's visitor that only looks at each operand once,
    /// under every node of the function, pays for the list it does not keep).
    #[inline(always)]
    pub fn for_each_operand(&self, mut g: impl FnMut(Expr)) {
        match self {
            ExprData::Const { .. } | ExprData::Local(_) | ExprData::CfRead(_) => {}
            ExprData::Unary { arg, .. }
            | ExprData::Convert { arg, .. }
            | ExprData::Load { addr: arg, .. }
            | ExprData::CfWrite { value: arg, .. }
            | ExprData::Assign { value: arg, .. }
            | ExprData::TrapIf { cond: arg, .. } => g(*arg),
            ExprData::Binary { lhs, rhs, .. }
            | ExprData::Cmp { lhs, rhs, .. }
            | ExprData::Store { addr: lhs, value: rhs, .. }
            | ExprData::Comma { first: lhs, second: rhs } => {
                g(*lhs);
                g(*rhs);
            }
            ExprData::Select { cond, if_true, if_false } => {
                g(*cond);
                g(*if_true);
                g(*if_false);
            }
            ExprData::Call { args, .. } => args.iter().for_each(|&a| g(a)),
        }
    }

    /// The operands in evaluation order, without allocating: up to three inline, a
    /// call's arguments borrowed.
    #[inline]
    pub fn operands(&self) -> Operands<'_> {
        let fixed = |ops: &[Expr]| {
            let mut a = [Expr(0); 3];
            a[..ops.len()].copy_from_slice(ops);
            Operands::Fixed(a, ops.len() as u8)
        };
        match self {
            ExprData::Const { .. } | ExprData::Local(_) | ExprData::CfRead(_) => fixed(&[]),
            ExprData::Unary { arg, .. } | ExprData::Convert { arg, .. } => fixed(&[*arg]),
            ExprData::Binary { lhs, rhs, .. } | ExprData::Cmp { lhs, rhs, .. } => fixed(&[*lhs, *rhs]),
            ExprData::Select { cond, if_true, if_false } => fixed(&[*cond, *if_true, *if_false]),
            ExprData::Load { addr, .. } => fixed(&[*addr]),
            ExprData::Store { addr, value, .. } => fixed(&[*addr, *value]),
            ExprData::CfWrite { value, .. } | ExprData::Assign { value, .. } => fixed(&[*value]),
            ExprData::Call { args, .. } => Operands::Args(args),
            ExprData::TrapIf { cond, .. } => fixed(&[*cond]),
            ExprData::Comma { first, second } => fixed(&[*first, *second]),
        }
    }

    /// Mutable references to the operands in evaluation order.
    pub fn operands_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            ExprData::Const { .. } | ExprData::Local(_) | ExprData::CfRead(_) => vec![],
            ExprData::Unary { arg, .. } | ExprData::Convert { arg, .. } => vec![arg],
            ExprData::Binary { lhs, rhs, .. } | ExprData::Cmp { lhs, rhs, .. } => vec![lhs, rhs],
            ExprData::Select { cond, if_true, if_false } => vec![cond, if_true, if_false],
            ExprData::Load { addr, .. } => vec![addr],
            ExprData::Store { addr, value, .. } => vec![addr, value],
            ExprData::CfWrite { value, .. } | ExprData::Assign { value, .. } => vec![value],
            ExprData::Call { args, .. } => args.iter_mut().collect(),
            ExprData::TrapIf { cond, .. } => vec![cond],
            ExprData::Comma { first, second } => vec![first, second],
        }
    }

    /// Whether this node itself (not counting operands) has an effect or may trap:
    /// stores, callframe writes, assignments, non-pure calls, checks and divisions.
    /// Callframe reads and heap loads are not effects but are ordered against them.
    pub fn has_side_effect(&self) -> bool {
        match self {
            ExprData::Store { .. }
            | ExprData::CfWrite { .. }
            | ExprData::Assign { .. }
            | ExprData::TrapIf { .. } => true,
            ExprData::Call { helper, .. } => !helper.effects().is_pure(),
            ExprData::Binary { op, .. } => op.can_trap(),
            _ => false,
        }
    }
}

/// A phi: at entry to its block, `dest` takes the value of the argument of the
/// predecessor the block was entered from.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Phi {
    pub dest: Local,
    pub args: Vec<(Block, Local)>,
}

/// How a block ends.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Terminator {
    Jump(Block),
    /// Goes to `then_dest` if `cond` (an `i32`) is non-zero, else to `else_dest`.
    Branch { cond: Expr, then_dest: Block, else_dest: Block },
    Return(Expr),
    /// Goes to the first case whose value equals `value`, else to `default`.
    Switch { value: Expr, default: Block, cases: Vec<(i64, Block)> },
}

impl Terminator {
    /// Successor blocks in order (duplicates kept); two are held inline, since every CFG
    /// walk asks for them (a `Vec` per call was one allocation per block and walk).
    #[inline]
    pub fn successors(&self) -> SmallVec<[Block; 2]> {
        match self {
            Terminator::Jump(b) => smallvec![*b],
            Terminator::Branch { then_dest, else_dest, .. } => smallvec![*then_dest, *else_dest],
            Terminator::Return(_) => SmallVec::new(),
            Terminator::Switch { default, cases, .. } => {
                let mut v = smallvec![*default];
                v.extend(cases.iter().map(|(_, b)| *b));
                v
            }
        }
    }

    /// Mutable references to the successor blocks.
    pub fn successors_mut(&mut self) -> Vec<&mut Block> {
        match self {
            Terminator::Jump(b) => vec![b],
            Terminator::Branch { then_dest, else_dest, .. } => vec![then_dest, else_dest],
            Terminator::Return(_) => vec![],
            Terminator::Switch { default, cases, .. } => {
                let mut v = vec![default];
                v.extend(cases.iter_mut().map(|(_, b)| b));
                v
            }
        }
    }

    /// The expression the terminator evaluates, if any.
    #[inline]
    pub fn expr(&self) -> Option<Expr> {
        match self {
            Terminator::Jump(_) => None,
            Terminator::Branch { cond, .. } => Some(*cond),
            Terminator::Return(e) => Some(*e),
            Terminator::Switch { value, .. } => Some(*value),
        }
    }

    /// Mutable access to the terminator's expression, if any.
    pub fn expr_mut(&mut self) -> Option<&mut Expr> {
        match self {
            Terminator::Jump(_) => None,
            Terminator::Branch { cond, .. } => Some(cond),
            Terminator::Return(e) => Some(e),
            Terminator::Switch { value, .. } => Some(value),
        }
    }
}

/// A basic block: phis, statements (each the root of a tree), a terminator.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct BlockData {
    pub phis: Vec<Phi>,
    pub stmts: Vec<Expr>,
    pub term: Terminator,
}

/// A typed local variable with its name (unique within the function, printed `%name`).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LocalData {
    pub name: String,
    pub ty: Type,
}

/// A callframe variable with its name (printed `@name`). Its slot is its index.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct CfVarData {
    pub name: String,
    pub ty: Type,
}

/// A function.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Function {
    pub name: String,
    pub params: Vec<Local>,
    pub ret: Type,
    pub locals: PrimaryMap<Local, LocalData>,
    pub cfvars: PrimaryMap<CfVar, CfVarData>,
    pub exprs: PrimaryMap<Expr, ExprData>,
    pub blocks: PrimaryMap<Block, BlockData>,
    /// The order of blocks; the first is the entry.
    pub layout: Vec<Block>,
}

/// A helper declaration as written in a module: what the text claims about a helper.
/// The verifier checks it against the built-in set in [`crate::helpers`].
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct HelperDecl {
    pub name: String,
    pub params: Vec<Type>,
    pub ret: Option<Type>,
    pub effects: Effects,
}

impl HelperDecl {
    /// The declaration a module must carry to call `helper`.
    pub fn of(helper: HelperKind) -> HelperDecl {
        let (params, ret) = helper.signature();
        HelperDecl { name: helper.name().to_string(), params: params.to_vec(), ret, effects: helper.effects() }
    }
}

/// A module: helper declarations and functions.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Module {
    pub helpers: Vec<HelperDecl>,
    pub functions: Vec<Function>,
}

impl Module {
    /// Finds a function by name.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }
}

thread_local! {
    /// The work stack of [`Function::visit_postorder_iterative`], kept between walks.
    static POSTORDER_STACK: std::cell::Cell<Vec<(Expr, bool)>> = const { std::cell::Cell::new(Vec::new()) };
    /// The stack of the last walk started by another walk's visitor (a nested walk, which
    /// finds [`POSTORDER_STACK`] taken), kept so that the next nested walk does not grow
    /// a new one.
    static NESTED_POSTORDER_STACK: std::cell::Cell<Vec<(Expr, bool)>> = const { std::cell::Cell::new(Vec::new()) };
}

/// How many levels of a tree [`Function::visit_postorder`] walks by recursion before it
/// takes an explicit stack ([`Function::visit_postorder_iterative`]): generated trees are
/// rarely deeper, and the recursion stays a few KiB of the thread's stack.
const RECURSIVE_DEPTH: usize = 64;

/// The most entries a kept [`Function::visit_postorder_iterative`] stack may have room
/// for (8 bytes each: 128 KiB), far above a generated tree's depth: what a thread keeps
/// stays bounded, so a long campaign's resident set does not ratchet up with the deepest
/// tree it met.
const SPARE_POSTORDER: usize = 1 << 14;

impl Function {
    /// An empty function with one block that returns zero.
    pub fn new(name: &str, ret: Type) -> Function {
        let mut f = Function {
            name: name.to_string(),
            params: vec![],
            ret,
            locals: PrimaryMap::new(),
            cfvars: PrimaryMap::new(),
            exprs: PrimaryMap::new(),
            blocks: PrimaryMap::new(),
            layout: vec![],
        };
        let zero = f.exprs.push(ExprData::Const { ty: ret, value: 0 });
        let b = f.blocks.push(BlockData { phis: vec![], stmts: vec![], term: Terminator::Return(zero) });
        f.layout.push(b);
        f
    }

    /// Moves the function out, leaving in its place one with nothing in it (not even a
    /// block: not a valid function), which costs no allocation.
    pub fn take(&mut self) -> Function {
        let empty = Function {
            name: String::new(),
            params: vec![],
            ret: self.ret,
            locals: PrimaryMap::new(),
            cfvars: PrimaryMap::new(),
            exprs: PrimaryMap::new(),
            blocks: PrimaryMap::new(),
            layout: vec![],
        };
        std::mem::replace(self, empty)
    }

    /// The entry block.
    pub fn entry(&self) -> Block {
        self.layout[0]
    }

    /// Adds an expression node.
    pub fn add_expr(&mut self, data: ExprData) -> Expr {
        self.exprs.push(data)
    }

    /// Adds a local named `base` (made unique with a numeric suffix when taken).
    pub fn new_local(&mut self, base: &str, ty: Type) -> Local {
        let mut name = base.to_string();
        let mut n = 1;
        while self.locals.values().any(|l| l.name == name) {
            name = format!("{base}.{n}");
            n += 1;
        }
        self.locals.push(LocalData { name, ty })
    }

    /// Looks a local up by name.
    pub fn local_by_name(&self, name: &str) -> Option<Local> {
        self.locals.iter().find(|(_, d)| d.name == name).map(|(l, _)| l)
    }

    /// The type an expression yields, or `None` for nodes that yield nothing. Assumes the
    /// tree is well typed (see the verifier).
    pub fn expr_type(&self, e: Expr) -> Option<Type> {
        match &self.exprs[e] {
            ExprData::Const { ty, .. } => Some(*ty),
            ExprData::Local(l) => Some(self.locals[*l].ty),
            ExprData::Unary { arg, .. } => self.expr_type(*arg),
            ExprData::Binary { lhs, .. } => self.expr_type(*lhs),
            ExprData::Cmp { .. } => Some(Type::I32),
            ExprData::Convert { op, .. } => Some(op.types().1),
            ExprData::Select { if_true, .. } => self.expr_type(*if_true),
            ExprData::Load { ty, .. } => Some(*ty),
            ExprData::Store { .. }
            | ExprData::CfWrite { .. }
            | ExprData::Assign { .. }
            | ExprData::TrapIf { .. } => None,
            ExprData::CfRead(v) => Some(self.cfvars[*v].ty),
            ExprData::Call { helper, .. } => helper.signature().1,
            ExprData::Comma { second, .. } => self.expr_type(*second),
        }
    }

    /// Whether node `e` is in the tree rooted at `root` (`root` itself included).
    pub fn tree_holds(&self, root: Expr, e: Expr) -> bool {
        let mut found = false;
        self.visit_postorder(root, &mut |n| found |= n == e);
        found
    }

    /// Visits the nodes of the tree rooted at `e` in evaluation (post-) order: the walk
    /// under every pass and the verifier's checks. The top [`RECURSIVE_DEPTH`] levels of
    /// the tree are walked by recursion, whose returns the processor predicts (the explicit
    /// stack's pops, a mispredicted branch for each of a node's visits, made the walk half
    /// again as slow); a subtree below them, of a tree deeper than generated trees are, by
    /// [`Function::visit_postorder_iterative`]'s explicit stack, so that the recursion
    /// never goes deeper than that bound, whatever the input.
    pub fn visit_postorder(&self, e: Expr, f: &mut impl FnMut(Expr)) {
        self.visit_below(e, f, 0);
    }

    /// [`Function::visit_postorder`] of the tree at `e`, which is `depth` levels below the
    /// root of the walk.
    fn visit_below<F: FnMut(Expr)>(&self, e: Expr, f: &mut F, depth: usize) {
        // A leaf operand (about half the nodes) is visited where its parent meets it,
        // without a call.
        #[inline(always)]
        fn operand<F: FnMut(Expr)>(g: &Function, c: Expr, f: &mut F, depth: usize) {
            match g.exprs[c] {
                ExprData::Const { .. } | ExprData::Local(_) | ExprData::CfRead(_) => f(c),
                _ => g.visit_below(c, f, depth),
            }
        }
        if depth == RECURSIVE_DEPTH {
            return self.visit_postorder_iterative(e, f);
        }
        self.exprs[e].for_each_operand(|c| operand(self, c, f, depth + 1));
        f(e);
    }

    /// [`Function::visit_postorder`] by an explicit stack, for the subtrees below
    /// [`RECURSIVE_DEPTH`] levels.
    fn visit_postorder_iterative(&self, e: Expr, f: &mut impl FnMut(Expr)) {
        // Each entry is a node and whether its operands were pushed already. The stack is
        // this thread's, reused from walk to walk (a walk started by `f` takes the nested
        // walks' one), since the passes and the verifier walk every statement many times.
        let mut work = POSTORDER_STACK.with(|s| s.take());
        if work.capacity() == 0 {
            work = NESTED_POSTORDER_STACK.with(|s| s.take());
        }
        work.clear();
        work.push((e, false));
        // A leaf operand has nothing to expand: it goes on the stack ready to visit. The
        // operands are matched here rather than asked for as [`Operands`] (the walk is
        // under every pass and the verifier's checks), and a first operand that is a
        // leaf is visited at once: it would be the next entry popped.
        let leaf = |c: Expr| matches!(self.exprs[c], ExprData::Const { .. } | ExprData::Local(_) | ExprData::CfRead(_));
        while let Some((n, expanded)) = work.pop() {
            if expanded {
                f(n);
                continue;
            }
            let first = match &self.exprs[n] {
                ExprData::Const { .. } | ExprData::Local(_) | ExprData::CfRead(_) => {
                    f(n);
                    continue;
                }
                ExprData::Unary { arg, .. }
                | ExprData::Convert { arg, .. }
                | ExprData::Load { addr: arg, .. }
                | ExprData::CfWrite { value: arg, .. }
                | ExprData::Assign { value: arg, .. }
                | ExprData::TrapIf { cond: arg, .. } => {
                    work.push((n, true));
                    *arg
                }
                ExprData::Binary { lhs, rhs, .. }
                | ExprData::Cmp { lhs, rhs, .. }
                | ExprData::Store { addr: lhs, value: rhs, .. }
                | ExprData::Comma { first: lhs, second: rhs } => {
                    work.push((n, true));
                    work.push((*rhs, leaf(*rhs)));
                    *lhs
                }
                ExprData::Select { cond, if_true, if_false } => {
                    work.push((n, true));
                    work.push((*if_false, leaf(*if_false)));
                    work.push((*if_true, leaf(*if_true)));
                    *cond
                }
                ExprData::Call { args, .. } => {
                    let Some((&a, rest)) = args.split_first() else {
                        f(n);
                        continue;
                    };
                    work.push((n, true));
                    work.extend(rest.iter().rev().map(|&c| (c, leaf(c))));
                    a
                }
            };
            if leaf(first) {
                f(first);
            } else {
                work.push((first, false));
            }
        }
        // A rare deep tree's stack is not kept (see [`SPARE_POSTORDER`]).
        // The outermost walk ends last: the stack a nested walk left in its place is the
        // nested walks' again.
        if work.capacity() <= SPARE_POSTORDER {
            let nested = POSTORDER_STACK.with(|s| s.replace(work));
            if nested.capacity() != 0 {
                NESTED_POSTORDER_STACK.with(|s| s.set(nested));
            }
        }
    }

    /// Whether any node of the tree rooted at `e` has a side effect or may trap.
    pub fn tree_has_side_effect(&self, e: Expr) -> bool {
        let mut any = false;
        self.visit_postorder(e, &mut |n| any |= self.exprs[n].has_side_effect());
        any
    }

    /// Copies the tree rooted at `e` into fresh nodes and returns the new root.
    pub fn clone_tree(&mut self, e: Expr) -> Expr {
        let mut data = self.exprs[e].clone();
        for op in data.operands_mut() {
            *op = self.clone_tree(*op);
        }
        self.exprs.push(data)
    }

    /// Predecessors of each block, in layout order of the predecessor (duplicates removed).
    pub fn predecessors(&self) -> cranelift_entity::SecondaryMap<Block, Vec<Block>> {
        let mut preds: cranelift_entity::SecondaryMap<Block, Vec<Block>> =
            cranelift_entity::SecondaryMap::new();
        for &b in &self.layout {
            for s in self.blocks[b].term.successors() {
                if !preds[s].contains(&b) {
                    preds[s].push(b);
                }
            }
        }
        preds
    }

    /// Every expression that is the root of a statement or a terminator, in block layout
    /// and evaluation order.
    pub fn roots(&self) -> Vec<Expr> {
        let mut v = vec![];
        for &b in &self.layout {
            v.extend(self.blocks[b].stmts.iter().copied());
            v.extend(self.blocks[b].term.expr());
        }
        v
    }
}
