//! Constant folding with exactly the semantics of `crate::ir` (the contract every oracle
//! shares): wrapping arithmetic, shift counts masked to the width, canonical `i32` values
//! sign-extended, and divisions that fold only when they do not trap — a division that
//! would trap is left in place so that the trap still happens where it did.

use crate::ir::{BinOp, CmpOp, ConvOp, ExprData, Function, Expr, Type, UnOp};

/// `a op b` on canonical operands of type `ty`, normalized; `None` when it traps.
pub fn binary(op: BinOp, ty: Type, a: i64, b: i64) -> Option<i64> {
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
    let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let v = match op {
        BinOp::Add => a.wrapping_add(b),
        BinOp::Sub => a.wrapping_sub(b),
        BinOp::Mul => a.wrapping_mul(b),
        BinOp::And => a & b,
        BinOp::Or => a | b,
        BinOp::Xor => a ^ b,
        BinOp::Shl => ((ua << count) & mask) as i64,
        BinOp::Lshr => (ua >> count) as i64,
        BinOp::Ashr => a >> count,
        BinOp::Sdiv | BinOp::Srem => {
            if b == 0 || (a == min && b == -1) {
                return None;
            }
            if op == BinOp::Sdiv {
                a / b
            } else {
                a % b
            }
        }
        BinOp::Udiv | BinOp::Urem => {
            if ub == 0 {
                return None;
            }
            (if op == BinOp::Udiv { ua / ub } else { ua % ub }) as i64
        }
    };
    Some(ty.normalize(v))
}

/// `op a` on a canonical operand of type `ty`, normalized.
pub fn unary(op: UnOp, ty: Type, a: i64) -> i64 {
    ty.normalize(match op {
        UnOp::Neg => a.wrapping_neg(),
        UnOp::Not => !a,
    })
}

/// A width conversion of a canonical operand.
pub fn convert(op: ConvOp, a: i64) -> i64 {
    match op {
        ConvOp::Sext => a as i32 as i64,
        ConvOp::Zext => a as u32 as i64,
        ConvOp::Trunc => a as i32 as i64,
    }
}

fn constant(f: &Function, e: Expr) -> Option<(Type, i64)> {
    match f.exprs[e] {
        ExprData::Const { ty, value } => Some((ty, value)),
        _ => None,
    }
}

/// The constant the node `e` folds to when all its operands are constants, or `None`
/// (not foldable, or a division that would trap).
pub fn fold_node(f: &Function, e: Expr) -> Option<(Type, i64)> {
    match f.exprs[e] {
        ExprData::Unary { op, arg } => {
            let (ty, a) = constant(f, arg)?;
            Some((ty, unary(op, ty, a)))
        }
        ExprData::Binary { op, lhs, rhs } => {
            let (ty, a) = constant(f, lhs)?;
            let (_, b) = constant(f, rhs)?;
            Some((ty, binary(op, ty, a, b)?))
        }
        ExprData::Cmp { op, lhs, rhs } => {
            let (ty, a) = constant(f, lhs)?;
            let (_, b) = constant(f, rhs)?;
            Some((Type::I32, CmpOp::eval(op, ty, a, b) as i64))
        }
        ExprData::Convert { op, arg } => {
            let (_, a) = constant(f, arg)?;
            Some((op.types().1, convert(op, a)))
        }
        ExprData::Select { cond, if_true, if_false } => {
            let (_, c) = constant(f, cond)?;
            let (ty, a) = constant(f, if_true)?;
            let (_, b) = constant(f, if_false)?;
            Some((ty, if c != 0 { a } else { b }))
        }
        _ => None,
    }
}
