//! The SSA profile (issue 13, item 1): functions written in SSA form whose phis' arguments
//! cross — swaps, rotations, lost copies, copies of copies, phis of phis — so that the
//! parallel copies `ssa-destroy` places on an edge form chains and cycles.
//!
//! A function is built as HIR by the ordinary generator (with the loop copies of
//! [`super::build`] that become swaps, rotations and lost copies), put into SSA form by
//! the pipeline's `ssa` pass, and then rewritten by this module's own copy propagation:
//! every copy statement `%a = %b` is removed (or, a share of the time, kept) and every use
//! of `%a` — phi arguments included — reads `%b` (through chains of copies) instead. In
//! the SSA of a front end every phi argument is a version of the phi's own variable; after
//! copy propagation an argument may be another variable's version or another phi, which
//! is what makes the copy sequentializer's ordering matter (Briggs et al., "Practical
//! improvements to the construction and destruction of static single assignment form",
//! 1998). The result is checked from SSA (`dce,ssa-destroy,cprop`), like the SSA corpus
//! cases.
//!
//! Invariant: the result is strict SSA (each local defined once, every use dominated by
//! its definition): a copy's source is defined before the copy, which dominates every use
//! of its destination, so replacing the destination by the source keeps every use
//! dominated. The function computes the same outcome as the HIR it came from, so the
//! generator's fuel bound and heap bounds still hold; only the entry's zero versions
//! (`%x.0 = 0`, two nodes each) are added, and the caller adds them to the bound.
//!
//! The SSA construction is the pipeline's, but a wrong construction cannot hide a bug:
//! the generated SSA function is itself the program every stage is compared against.

use cranelift_entity::{EntitySet, PrimaryMap};
use tandem_core::hash::HashMap;
use tandem_core::ir::{Expr, ExprData, Function, Local};
use tandem_core::passes::{PassManager, Pipeline};

/// What the rewrite did, for the statistics.
#[derive(Clone, Copy, Debug, Default)]
pub struct SsaRewrite {
    /// Copies removed by propagation.
    pub copies_propagated: u32,
    /// Copies kept (their destination is still read, making copies of copies).
    pub copies_kept: u32,
    /// Phi arguments that no longer name a version of the phi's own variable.
    pub crossing_phi_args: u32,
    /// Phi arguments that are another phi of the same block (a swap or rotation).
    pub phi_args_from_sibling_phis: u32,
    /// Phi arguments that are a phi of another block (phis of phis).
    pub phi_args_from_other_phis: u32,
    /// Nodes added to the entry block (zero versions).
    pub entry_nodes_added: u64,
}

/// Puts the HIR function `f` into SSA form with crossing phi arguments. `keep(i)` says
/// whether the `i`-th copy found is kept rather than removed.
pub fn to_crossing_ssa(f: &mut Function, keep: &mut dyn FnMut(u32) -> bool) -> Result<SsaRewrite, String> {
    let entry_before = f.blocks[f.entry()].stmts.len();
    let p = Pipeline::parse("ssa").expect("a valid pipeline");
    PassManager { verify: true }.run(&p, f, &mut |_, _, _| {}).map_err(|e| e.to_string())?;
    let mut r = SsaRewrite {
        entry_nodes_added: 2 * (f.blocks[f.entry()].stmts.len().saturating_sub(entry_before)) as u64,
        ..SsaRewrite::default()
    };
    // Copies `%a = %b` (statement roots), by destination.
    let mut copy_of: HashMap<Local, Local> = HashMap::default();
    // The removed copies, marked by statement (a set: a search of a list per statement
    // was quadratic in the copies).
    let mut removed = EntitySet::<Expr>::new();
    let mut i = 0;
    for &b in &f.layout {
        for &s in &f.blocks[b].stmts {
            if let ExprData::Assign { local, value } = f.exprs[s] {
                if let ExprData::Local(src) = f.exprs[value] {
                    if keep(i) {
                        r.copies_kept += 1;
                    } else {
                        r.copies_propagated += 1;
                        removed.insert(s);
                    }
                    copy_of.insert(local, src);
                    i += 1;
                }
            }
        }
    }
    let resolve = |mut l: Local| {
        while let Some(&s) = copy_of.get(&l) {
            l = s;
        }
        l
    };
    for &b in &f.layout.clone() {
        let data = &mut f.blocks[b];
        data.stmts.retain(|s| !removed.contains(*s));
        for phi in &mut data.phis {
            for (_, a) in &mut phi.args {
                *a = resolve(*a);
            }
        }
    }
    for data in f.exprs.values_mut() {
        if let ExprData::Local(l) = data {
            *l = resolve(*l);
        }
    }
    let phi_dests: Vec<(tandem_core::ir::Block, Local)> =
        f.layout.iter().flat_map(|&b| f.blocks[b].phis.iter().map(move |p| (b, p.dest))).collect();
    for &b in &f.layout {
        let phis = &f.blocks[b].phis;
        for phi in phis {
            let base = |l: Local| f.locals[l].name.split('.').next().unwrap_or("");
            for (_, a) in &phi.args {
                if base(*a) != base(phi.dest) {
                    r.crossing_phi_args += 1;
                }
                match phi_dests.iter().find(|(_, d)| d == a) {
                    Some((pb, _)) if *pb == b => r.phi_args_from_sibling_phis += 1,
                    Some(_) => r.phi_args_from_other_phis += 1,
                    None => {}
                }
            }
        }
    }
    Ok(r)
}

/// Rebuilds the expression arena of `f` from the trees placed in its blocks, dropping
/// every node no tree holds.
pub fn compact(f: &mut Function) {
    fn copy(src: &Function, dst: &mut PrimaryMap<Expr, ExprData>, e: Expr) -> Expr {
        let mut d = src.exprs[e].clone();
        for op in d.operands_mut() {
            *op = copy(src, dst, *op);
        }
        dst.push(d)
    }
    let mut exprs = PrimaryMap::with_capacity(f.exprs.len());
    let mut blocks = f.blocks.clone();
    for &b in &f.layout {
        let data = &mut blocks[b];
        for s in &mut data.stmts {
            *s = copy(f, &mut exprs, *s);
        }
        if let Some(e) = data.term.expr_mut() {
            *e = copy(f, &mut exprs, *e);
        }
    }
    f.exprs = exprs;
    f.blocks = blocks;
}
