//! The register allocation checker: a verifier of [`Allocation`] independent of the
//! allocator's own bookkeeping (in the spirit of regalloc2's `checker.rs`).
//!
//! It replays each block's machine instructions symbolically, tracking which SDSU value
//! every register and spill slot holds: an allocator move copies the value, a spill
//! stores it, an instruction kills what it clobbers (a call: `eax ecx edx`; a division or
//! wide multiply: `eax edx`), kills its operands (they are single-use) and defines its
//! results; an aliased read of a global variable puts its value in the variable's
//! register until a write of the variable. A write of a register to a memory variable leaves the register holding the
//! variable (the seed's freeable state); a reused read must find it there. At every instruction it checks that each register operand holds exactly the
//! value the LIR says it uses, that no instruction writes a register owned by the global
//! allocator, and that every callee-saved register written is saved in the prologue.

use std::collections::HashMap;

use super::lir::*;
use super::lower::{constraints, ResultReg};
use super::regalloc::{Allocation, Base, MInst, Operand};
use super::x86::{Reg, RegSet};

/// Checks `alloc` against lowered `f`; returns every violation found.
pub fn check_allocation(f: &LirFunction, alloc: &Allocation) -> Result<(), Vec<String>> {
    let mut errs = vec![];
    let globals: RegSet = alloc.globals.iter().fold(RegSet::NONE, |s, (_, r)| s.with(*r));
    let saved: RegSet = alloc.saved.iter().fold(RegSet::NONE, |s, (r, _)| s.with(*r));
    for &b in &f.layout {
        let mut regs: HashMap<Reg, Use> = HashMap::new();
        let mut holds_var: HashMap<Reg, Var> = HashMap::new();
        // Aliased reads: several reads of one global variable may share its register.
        let mut aliased: HashMap<Use, Reg> = HashMap::new();
        let mut slots: HashMap<i32, Use> = HashMap::new();
        let written = |r: Reg, what: &str, errs: &mut Vec<String>| {
            if globals.contains(r) {
                errs.push(format!("{b}: {what} writes {r}, which holds a global variable"));
            }
            if Reg::CALLEE_SAVED.contains(&r) && !saved.contains(r) {
                errs.push(format!("{b}: {what} writes callee-saved {r}, which the prologue does not save"));
            }
        };
        for inst in &alloc.code[b] {
            match inst {
                MInst::Alias { node, reg } => {
                    let ok = matches!(f.nodes[*node].op, Op::Read(v) if alloc.home[v] == Some(Operand::Reg(*reg)));
                    if !ok || !globals.contains(*reg) {
                        errs.push(format!("{b}: {} aliased to {reg}, which is not its global register", f.node_text(*node)));
                    }
                    aliased.insert(Use::of(*node), *reg);
                }
                MInst::Reuse { node, reg } => {
                    let Op::Read(v) = f.nodes[*node].op else {
                        errs.push(format!("{b}: reuse of {reg} for {}, which is no read", f.node_text(*node)));
                        continue;
                    };
                    if holds_var.get(reg) != Some(&v) {
                        errs.push(format!("{b}: read of {v} reuses {reg}, which does not hold it"));
                    }
                    regs.insert(*reg, Use::of(*node));
                    holds_var.remove(reg);
                }
                MInst::Move { dst, src } => {
                    written(*dst, "a move", &mut errs);
                    holds_var.remove(dst);
                    let v = match src {
                        Operand::Reg(s) => regs.get(s).copied(),
                        Operand::Mem(m) if m.base == Some(Base::Ebp) => slots.get(&m.disp).copied(),
                        _ => None,
                    };
                    match v {
                        Some(v) => {
                            regs.insert(*dst, v);
                        }
                        None => errs.push(format!("{b}: mov {dst}, {src} copies no live value")),
                    }
                }
                MInst::Spill { slot, src } => match regs.get(src) {
                    Some(v) => {
                        slots.insert(*slot, *v);
                    }
                    None => errs.push(format!("{b}: spill of {src}, which holds no live value")),
                },
                MInst::Node { node, ops, results } => {
                    let n = *node;
                    let text = f.node_text(n);
                    let mut expected = vec![];
                    inline_operands(f, n, ops, &mut 0, &mut expected);
                    for (u, r) in &expected {
                        if regs.get(r) != Some(u) && aliased.get(u) != Some(r) {
                            errs.push(format!(
                                "{b} {n} ({text}): operand {u} expected in {r}, which holds {}",
                                regs.get(r).map_or("nothing".to_string(), |v| v.to_string())
                            ));
                        }
                    }
                    let c = constraints(f, n);
                    let mut killed = c.clobbers;
                    for rr in &c.results {
                        if let ResultReg::Fixed(r) = rr {
                            killed = killed.with(*r);
                        }
                    }
                    for r in killed.iter() {
                        regs.remove(&r);
                        holds_var.remove(&r);
                    }
                    if let Op::Write(v) = f.nodes[n].op {
                        // A write of a global variable overwrites any alias of its old value.
                        if let Some(Operand::Reg(g)) = alloc.home[v] {
                            aliased.retain(|_, r| *r != g);
                        }
                        holds_var.retain(|_, w| *w != v);
                        if let (Some(Operand::Reg(r)), Some(Operand::Mem(_))) = (ops.first(), alloc.home[v]) {
                            if !globals.contains(*r) {
                                holds_var.insert(*r, v);
                            }
                        }
                    }
                    for (u, r) in &expected {
                        if aliased.remove(u).is_none() {
                            regs.remove(r);
                        }
                    }
                    for (i, r) in results.iter().enumerate() {
                        if let Some(r) = r {
                            written(*r, &text, &mut errs);
                            holds_var.remove(r);
                            regs.insert(*r, Use { node: n, result: i as u8 });
                        }
                    }
                }
            }
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

/// The `(value, register)` pairs of `n`'s in-line operands, walking its arguments the way
/// the allocator built `ops`.
fn inline_operands(f: &LirFunction, n: Node, ops: &[Operand], k: &mut usize, out: &mut Vec<(Use, Reg)>) {
    for &a in &f.nodes[n].args {
        let d = &f.nodes[a.node];
        if !d.contained {
            if let Some(Operand::Reg(r)) = ops.get(*k) {
                out.push((a, *r));
            }
            *k += 1;
            continue;
        }
        match d.op {
            Op::Addr { has_base, scale, .. } => {
                if let Some(Operand::Mem(m)) = ops.get(*k) {
                    let mut args = d.args.iter();
                    if has_base {
                        if let (Some(u), Some(Base::Reg(r))) = (args.next(), m.base) {
                            out.push((*u, r));
                        }
                    }
                    if scale != 0 {
                        if let (Some(u), Some((r, _))) = (args.next(), m.index) {
                            out.push((*u, r));
                        }
                    }
                }
                *k += 1;
            }
            Op::Cmp { .. } => inline_operands(f, a.node, ops, k, out),
            _ => *k += 1,
        }
    }
}
