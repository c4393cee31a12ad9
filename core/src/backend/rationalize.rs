//! Rationalization: HIR statements and comma nodes to linear LIR
//! (`seeds/removing-embedded-statements.md`, "2. Stop generating embedded statements in
//! the rationalizer", option 2: the rationalizer linearizes commas as it goes).
//!
//! Each statement tree is visited in HIR evaluation order (left to right, post-order) and
//! its nodes are appended to the block's one linear sequence, so statement boundaries
//! vanish. A `comma(a, b)` contributes `a`'s nodes, whose value (if any) stays unused, and
//! then `b`'s; the comma itself produces no node. Every remaining edge is therefore a
//! single-def single-use temp, because every HIR node has exactly one parent. HIR locals
//! become [`Var`]s one to one (same index). Phis are refused: the pipeline destroys SSA
//! before the backend.

use cranelift_entity::EntityRef;
use smallvec::smallvec;
use std::sync::Arc;

use super::lir::*;
use super::CompileError;
use crate::abi::RuntimeHelper;
use crate::ir::*;

/// What rationalization did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RationalizeStats {
    /// HIR statements whose boundaries were removed.
    pub statements: usize,
    /// Comma nodes linearized away.
    pub commas: usize,
    /// LIR nodes produced.
    pub nodes: usize,
}

/// Builds the LIR of `f`.
pub fn rationalize(f: &Function) -> Result<(LirFunction, RationalizeStats), CompileError> {
    rationalize_with(f, true)
}

/// Builds the LIR of `f`; `names` keeps the names of its locals for printing. Without
/// them ([`LirFunction::local_names`] empty) the LIR and every later stage of it must
/// not be printed with [`LirFunction::header`], which is what a compile that prints
/// nothing saves: a copy of every local's name for every function compiled.
pub fn rationalize_with(f: &Function, names: bool) -> Result<(LirFunction, RationalizeStats), CompileError> {
    let mut stats = RationalizeStats::default();
    let mut lir = LirFunction {
        name: f.name.clone(),
        ret: f.ret,
        arg_bytes: 0,
        vars: Default::default(),
        local_names: if names { f.locals.values().map(|d| d.name.clone()).collect() } else { Arc::from([]) },
        cfvars: f.cfvars.values().map(|c| c.ty).collect(),
        nodes: node_arena(),
        blocks: Default::default(),
        layout: f.layout.clone(),
        decomposed: false,
    };
    let mut offset = 0;
    for (l, d) in &f.locals {
        let kind = if f.params.contains(&l) { VarKind::Param { offset: 0 } } else { VarKind::Local };
        let v = lir.add_var(VarName::Local(l.as_u32()), d.ty, kind);
        debug_assert_eq!(v.index(), l.index());
    }
    for &p in &f.params {
        lir.vars[Var::new(p.index())].kind = VarKind::Param { offset };
        offset += f.locals[p].ty.bits() / 8;
    }
    lir.arg_bytes = offset;
    // One list the blocks are linearized into in turn; each block keeps a copy of just
    // its length (a list per block grew by doubling, a reallocation each time).
    let mut out = vec![];
    for &b in &f.layout {
        let data = &f.blocks[b];
        if !data.phis.is_empty() {
            return Err(CompileError::Phi { block: b });
        }
        out.clear();
        let mut r = Linearizer { f, lir: &mut lir, out: &mut out, stats: &mut stats };
        for &s in &data.stmts {
            r.stats.statements += 1;
            r.expr(s);
        }
        let (op, args) = match &data.term {
            Terminator::Jump(t) => (Op::Jump(*t), smallvec![]),
            Terminator::Branch { cond, then_dest, else_dest } => {
                (Op::Branch { then_dest: *then_dest, else_dest: *else_dest }, smallvec![r.value(*cond)])
            }
            Terminator::Return(e) => (Op::Return, smallvec![r.value(*e)]),
            Terminator::Switch { value, default, cases } => {
                (Op::Switch { default: *default, cases: cases.as_slice().into() }, smallvec![r.value(*value)])
            }
        };
        r.push(op, Type::I32, 0, args);
        lir.blocks[b].nodes = out.as_slice().to_vec();
    }
    stats.nodes = lir.nodes.len();
    Ok((lir, stats))
}

struct Linearizer<'a> {
    f: &'a Function,
    lir: &'a mut LirFunction,
    out: &'a mut Vec<Node>,
    stats: &'a mut RationalizeStats,
}

impl Linearizer<'_> {
    fn push(&mut self, op: Op, ty: Type, results: u8, args: Args) -> Node {
        let n = self.lir.add_node(op, ty, results, args);
        self.out.push(n);
        n
    }

    fn value(&mut self, e: Expr) -> Use {
        self.expr(e).expect("the verifier guarantees a value here")
    }

    /// Appends the nodes of the tree at `e` in evaluation order; returns its value.
    fn expr(&mut self, e: Expr) -> Option<Use> {
        let f = self.f;
        let (op, args): (Op, Args) = match &f.exprs[e] {
            ExprData::Comma { first, second } => {
                self.stats.commas += 1;
                self.expr(*first);
                return self.expr(*second);
            }
            ExprData::Const { value, .. } => (Op::Const(*value), smallvec![]),
            ExprData::Local(l) => (Op::Read(Var::new(l.index())), smallvec![]),
            ExprData::Unary { op, arg } => (Op::Unary(*op), smallvec![self.value(*arg)]),
            ExprData::Binary { op, lhs, rhs } => {
                let a = self.value(*lhs);
                (Op::Binary(*op), smallvec![a, self.value(*rhs)])
            }
            ExprData::Cmp { op, lhs, rhs } => {
                // The operand type is that of the operand's node, as for the result of
                // a unary or binary node below.
                let a = self.value(*lhs);
                let t = self.lir.nodes[a.node].ty;
                (Op::Cmp { op: *op, ty: t }, smallvec![a, self.value(*rhs)])
            }
            ExprData::Convert { op, arg } => (Op::Convert(*op), smallvec![self.value(*arg)]),
            ExprData::Select { cond, if_true, if_false } => {
                let c = self.value(*cond);
                let t = self.value(*if_true);
                (Op::Select, smallvec![c, t, self.value(*if_false)])
            }
            ExprData::Load { width, signed, addr, .. } => {
                (Op::Load { width: *width, signed: *signed }, smallvec![self.value(*addr)])
            }
            ExprData::Store { width, addr, value } => {
                let a = self.value(*addr);
                (Op::Store { width: *width }, smallvec![a, self.value(*value)])
            }
            ExprData::CfRead(v) => (Op::CfRead { var: *v, offset: 0 }, smallvec![]),
            ExprData::CfWrite { var, value } => (Op::CfWrite { var: *var, offset: 0 }, smallvec![self.value(*value)]),
            ExprData::Assign { local, value } => (Op::Write(Var::new(local.index())), smallvec![self.value(*value)]),
            ExprData::Call { helper, args } => {
                let vals = args.iter().map(|&a| self.value(a)).collect();
                (Op::Call(RuntimeHelper::Ir(*helper)), vals)
            }
            ExprData::TrapIf { cond, code } => (Op::TrapIf(*code), smallvec![self.value(*cond)]),
        };
        // The type comes from the operands already linearized where it follows them
        // (`Function::expr_type` would walk down the tree again at every node: quadratic
        // in the depth of the deep trees the tree mover builds).
        let ty = match &f.exprs[e] {
            ExprData::Unary { .. } | ExprData::Binary { .. } => Some(self.lir.nodes[args[0].node].ty),
            ExprData::Select { .. } => Some(self.lir.nodes[args[1].node].ty),
            _ => f.expr_type(e),
        };
        let yields = u8::from(ty.is_some());
        let n = self.push(op, ty.unwrap_or(Type::I32), yields, args);
        (yields == 1).then(|| Use::of(n))
    }
}
