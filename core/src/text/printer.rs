//! Prints HIR (and SSA, which is HIR with phis) in the text format that
//! [`super::parser`] reads back. The output is canonical: one declaration, label,
//! phi, statement or terminator per line, four-space indentation, blocks in layout
//! order named `b<index>`. `parse(print(m))` prints the same text again.

use crate::ir::*;
use std::fmt::{self, Write};

/// Writes a whole module.
pub fn write_module(out: &mut impl Write, m: &Module) -> fmt::Result {
    for h in &m.helpers {
        write_helper_decl(out, h)?;
        writeln!(out)?;
    }
    for (i, f) in m.functions.iter().enumerate() {
        if i > 0 || !m.helpers.is_empty() {
            writeln!(out)?;
        }
        write_function(out, f)?;
    }
    Ok(())
}

/// Writes `helper @name(types) -> ret effects`.
pub fn write_helper_decl(out: &mut impl Write, h: &HelperDecl) -> fmt::Result {
    let params: Vec<String> = h.params.iter().map(|t| t.to_string()).collect();
    let ret = h.ret.map_or("void".to_string(), |t| t.to_string());
    write!(out, "helper @{}({}) -> {} {}", h.name, params.join(", "), ret, h.effects)
}

/// Writes one function.
pub fn write_function(out: &mut impl Write, f: &Function) -> fmt::Result {
    let params: Vec<String> =
        f.params.iter().map(|&p| format!("{} %{}", f.locals[p].ty, f.locals[p].name)).collect();
    writeln!(out, "function %{}({}) -> {} {{", f.name, params.join(", "), f.ret)?;
    for (_, v) in f.cfvars.iter() {
        writeln!(out, "    callframe {} @{}", v.ty, v.name)?;
    }
    for (l, d) in f.locals.iter() {
        if !f.params.contains(&l) {
            writeln!(out, "    local {} %{}", d.ty, d.name)?;
        }
    }
    for &b in &f.layout {
        writeln!(out, "{b}:")?;
        let data = &f.blocks[b];
        for phi in &data.phis {
            write!(out, "    ")?;
            write_phi(out, f, phi)?;
            writeln!(out)?;
        }
        for &s in &data.stmts {
            write!(out, "    ")?;
            write_stmt(out, f, s)?;
            writeln!(out)?;
        }
        write!(out, "    ")?;
        write_terminator(out, f, &data.term)?;
        writeln!(out)?;
    }
    writeln!(out, "}}")
}

/// Writes `%dest = phi(bP: %arg, ...)`.
pub fn write_phi(out: &mut impl Write, f: &Function, phi: &Phi) -> fmt::Result {
    let args: Vec<String> =
        phi.args.iter().map(|(b, l)| format!("{b}: %{}", f.locals[*l].name)).collect();
    write!(out, "%{} = phi({})", f.locals[phi.dest].name, args.join(", "))
}

/// Writes a statement: a top-level assignment prints as `%x = e`, anything else as the
/// expression.
pub fn write_stmt(out: &mut impl Write, f: &Function, e: Expr) -> fmt::Result {
    if let ExprData::Assign { local, value } = &f.exprs[e] {
        write!(out, "%{} = ", f.locals[*local].name)?;
        write_expr(out, f, *value)
    } else {
        write_expr(out, f, e)
    }
}

/// Writes a terminator.
pub fn write_terminator(out: &mut impl Write, f: &Function, t: &Terminator) -> fmt::Result {
    match t {
        Terminator::Jump(b) => write!(out, "jump {b}"),
        Terminator::Branch { cond, then_dest, else_dest } => {
            write!(out, "br ")?;
            write_expr(out, f, *cond)?;
            write!(out, ", {then_dest}, {else_dest}")
        }
        Terminator::Return(e) => {
            write!(out, "ret ")?;
            write_expr(out, f, *e)
        }
        Terminator::Switch { value, default, cases } => {
            write!(out, "switch ")?;
            write_expr(out, f, *value)?;
            let cases: Vec<String> = cases.iter().map(|(k, b)| format!("{k}: {b}")).collect();
            write!(out, ", default {default}, [{}]", cases.join(", "))
        }
    }
}

/// The text-format name of a load: `load.<ty>` for a full-width load, else
/// `load.<ty>.<s|u><bits>`.
pub fn load_name(ty: Type, width: MemWidth, signed: bool) -> String {
    if width.bits() == ty.bits() {
        format!("load.{ty}")
    } else {
        format!("load.{ty}.{}{}", if signed { "s" } else { "u" }, width.bits())
    }
}

/// Writes an expression tree.
pub fn write_expr(out: &mut impl Write, f: &Function, e: Expr) -> fmt::Result {
    let args = |out: &mut dyn Write, ops: &[Expr]| -> fmt::Result {
        for (i, &o) in ops.iter().enumerate() {
            if i > 0 {
                out.write_str(", ")?;
            }
            write_expr_dyn(out, f, o)?;
        }
        Ok(())
    };
    // `name(operands)`.
    let call = |out: &mut dyn Write, name: &str, ops: &[Expr]| -> fmt::Result {
        write!(out, "{name}(")?;
        args(out, ops)?;
        out.write_str(")")
    };
    match &f.exprs[e] {
        ExprData::Const { ty: Type::I32, value } => write!(out, "{value}"),
        ExprData::Const { ty: Type::I64, value } => write!(out, "{value}:i64"),
        ExprData::Local(l) => write!(out, "%{}", f.locals[*l].name),
        ExprData::Unary { op, arg } => call(out, op.name(), &[*arg]),
        ExprData::Binary { op, lhs, rhs } => call(out, op.name(), &[*lhs, *rhs]),
        ExprData::Cmp { op, lhs, rhs } => call(out, op.name(), &[*lhs, *rhs]),
        ExprData::Convert { op, arg } => call(out, op.name(), &[*arg]),
        ExprData::Select { cond, if_true, if_false } => call(out, "select", &[*cond, *if_true, *if_false]),
        ExprData::Load { ty, width, signed, addr } => call(out, &load_name(*ty, *width, *signed), &[*addr]),
        ExprData::Store { width, addr, value } => call(out, &format!("store.{}", width.bits()), &[*addr, *value]),
        ExprData::CfRead(v) => write!(out, "cfread(@{})", f.cfvars[*v].name),
        ExprData::CfWrite { var, value } => {
            write!(out, "cfwrite(@{}, ", f.cfvars[*var].name)?;
            args(out, &[*value])?;
            out.write_str(")")
        }
        ExprData::Assign { local, value } => {
            write!(out, "(%{} = ", f.locals[*local].name)?;
            args(out, &[*value])?;
            out.write_str(")")
        }
        ExprData::Call { helper, args: a } => call(out, &format!("call {helper}"), a),
        ExprData::TrapIf { cond, code } => {
            out.write_str("trapif(")?;
            args(out, &[*cond])?;
            write!(out, ", {code})")
        }
        ExprData::Comma { first, second } => call(out, "comma", &[*first, *second]),
    }
}

fn write_expr_dyn(out: &mut dyn Write, f: &Function, e: Expr) -> fmt::Result {
    struct W<'a>(&'a mut dyn Write);
    impl Write for W<'_> {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0.write_str(s)
        }
    }
    write_expr(&mut W(out), f, e)
}

/// A displayable statement, for error messages.
pub fn stmt_to_string(f: &Function, e: Expr) -> String {
    let mut s = String::new();
    let _ = write_stmt(&mut s, f, e);
    s
}

impl fmt::Display for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_module(f, self)
    }
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_function(f, self)
    }
}
