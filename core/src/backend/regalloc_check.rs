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
//! allocator, that every callee-saved register written is saved in the prologue, and that
//! every spill and reload uses a spill slot of the frame, no variable's home or save slot.

use std::fmt;

use super::lir::*;
use super::lower::kills;
use super::regalloc::{Allocation, Base, MInst, Mem, Operand, OUT_ARG_BYTES};
use super::x86::{Reg, RegSet};
use crate::ir::Block;

/// What the checker found wrong at one machine instruction.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum AllocErrorKind {
    /// The instruction writes a register the global allocator gave to a variable.
    WritesGlobal(Reg),
    /// The instruction writes a callee-saved register the prologue does not save.
    WritesUnsavedCalleeSaved(Reg),
    /// A read is aliased to a register that is not its variable's global register.
    NotItsGlobalRegister(Reg),
    /// A reuse of a register for a node that is not a read.
    ReuseOfNonRead(Reg),
    /// A read of `var` reuses `reg`, which does not hold the variable.
    ReuseWithoutValue { var: Var, reg: Reg },
    /// An allocator move whose source holds no live value.
    MoveOfNoValue,
    /// A spill of a register that holds no live value.
    SpillOfNoValue,
    /// An operand is not in the register the instruction reads it from.
    OperandNotInRegister { operand: Use, reg: Reg, holds: Option<Use> },
    /// A spill or reload uses a frame word that is no spill slot: a variable's home, a
    /// callee-saved register's save slot, a word outside the frame's locals (above `ebp`,
    /// or in the outgoing argument area), or an address that is not word-aligned.
    NotASpillSlot { slot: i32, is: &'static str },
}

impl fmt::Display for AllocErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocErrorKind::WritesGlobal(r) => write!(f, "writes {r}, which holds a global variable"),
            AllocErrorKind::WritesUnsavedCalleeSaved(r) => {
                write!(f, "writes callee-saved {r}, which the prologue does not save")
            }
            AllocErrorKind::NotItsGlobalRegister(r) => write!(f, "aliased to {r}, which is not its global register"),
            AllocErrorKind::ReuseOfNonRead(r) => write!(f, "reuse of {r} for a node that is no read"),
            AllocErrorKind::ReuseWithoutValue { var, reg } => write!(f, "read of {var} reuses {reg}, which does not hold it"),
            AllocErrorKind::MoveOfNoValue => f.write_str("copies no live value"),
            AllocErrorKind::SpillOfNoValue => f.write_str("spills a register that holds no live value"),
            AllocErrorKind::OperandNotInRegister { operand, reg, holds } => {
                let holds = holds.map_or("nothing".to_string(), |v| v.to_string());
                write!(f, "operand {operand} expected in {reg}, which holds {holds}")
            }
            AllocErrorKind::NotASpillSlot { slot, is } => write!(f, "spill slot [ebp{slot:+}] is {is}"),
        }
    }
}

/// One violation: the block, the machine instruction (and the LIR node it implements,
/// if any) and what is wrong.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct AllocError {
    pub block: Block,
    pub node: Option<Node>,
    /// The instruction as the allocation listing prints it.
    pub inst: String,
    pub kind: AllocErrorKind,
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.node {
            Some(n) => write!(f, "{} {n} ({}): {}", self.block, self.inst, self.kind),
            None => write!(f, "{} ({}): {}", self.block, self.inst, self.kind),
        }
    }
}

/// Checks `alloc` against lowered `f`; returns every violation found.
pub fn check_allocation(f: &LirFunction, alloc: &Allocation) -> Result<(), Vec<AllocError>> {
    let mut errs = vec![];
    let globals: RegSet = alloc.globals.iter().fold(RegSet::NONE, |s, (_, r)| s.with(*r));
    let saved: RegSet = alloc.saved.iter().fold(RegSet::NONE, |s, (r, _)| s.with(*r));
    let frame = Frame::of(alloc);
    // One replay state for the function, emptied at each block's start (its maps and
    // buffers keep their room from block to block).
    let mut st = Replay { globals, saved, ..Replay::default_for(f, alloc, &frame) };
    for &b in &f.layout {
        st.next_block();
        for inst in &alloc.code[b] {
            st.inst(inst);
            if st.found.is_empty() {
                continue;
            }
            let node = match inst {
                MInst::Alias { node, .. } | MInst::Reuse { node, .. } | MInst::Node { node, .. } => Some(*node),
                MInst::Move { .. } | MInst::Spill { .. } => None,
            };
            for kind in st.found.drain(..) {
                errs.push(AllocError { block: b, node, inst: inst.text(f, alloc), kind });
            }
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

/// The symbolic state of one block's replay: which SDSU value each register and spill
/// slot holds.
struct Replay<'a> {
    f: &'a LirFunction,
    alloc: &'a Allocation,
    frame: &'a Frame,
    globals: RegSet,
    saved: RegSet,
    /// The value each register holds, by [`Reg::index`] (an array, not a hash map: the
    /// checker replays every instruction compiled).
    regs: [Option<Use>; 6],
    holds_var: [Option<Var>; 6],
    /// Aliased reads: several reads of one global variable may share its register. An
    /// entry is the register of a read node (of its only result), valid while that
    /// register's generation is the one it was made in: a write of the variable moves
    /// its register to the next generation, which forgets every alias of the old value
    /// at once. A map over the nodes, not a hash map: the checker replays every
    /// instruction compiled, and looks up each operand's alias.
    aliased: BlockNodeMap<(Reg, u32)>,
    generation: [u32; 6],
    /// The value each spill slot holds, by [`Frame::index`], counted only while its mark
    /// is the current block's (`block`): a block starts knowing nothing.
    slots: Vec<(u32, Use)>,
    block: u32,
    /// The violations found at the current instruction.
    found: Vec<AllocErrorKind>,
    /// The operands the current node expects in registers (a buffer reused from node
    /// to node).
    expected: Vec<(Use, Reg)>,
}

impl<'a> Replay<'a> {
    fn default_for(f: &'a LirFunction, alloc: &'a Allocation, frame: &'a Frame) -> Replay<'a> {
        Replay {
            f,
            alloc,
            frame,
            globals: RegSet::NONE,
            saved: RegSet::NONE,
            regs: [None; 6],
            holds_var: [None; 6],
            aliased: BlockNodeMap::with_nodes(f.nodes.len()),
            generation: [0; 6],
            slots: vec![(0, Use::of(Node::from_u32(0))); frame.reserved.len()],
            block: 0,
            found: vec![],
            expected: vec![],
        }
    }

    /// Forgets what the registers and spill slots hold: a block starts knowing nothing.
    fn next_block(&mut self) {
        self.regs = [None; 6];
        self.holds_var = [None; 6];
        self.aliased.next_block();
        self.block += 1;
    }

    /// The register operand `u` is aliased to, if it is.
    fn alias(&self, u: Use) -> Option<Reg> {
        let &(r, made) = self.aliased.get(u.node).filter(|_| u.result == 0)?;
        (self.generation[r.index()] == made).then_some(r)
    }

    /// An instruction writes `r`: it must not be a global's register, nor a callee-saved
    /// register the prologue does not save.
    fn written(&mut self, r: Reg) {
        if self.globals.contains(r) {
            self.found.push(AllocErrorKind::WritesGlobal(r));
        }
        if Reg::CALLEE_SAVED.contains(&r) && !self.saved.contains(r) {
            self.found.push(AllocErrorKind::WritesUnsavedCalleeSaved(r));
        }
    }

    /// Replays one machine instruction.
    fn inst(&mut self, inst: &MInst) {
        let (f, alloc) = (self.f, self.alloc);
        match inst {
            MInst::Alias { node, reg } => {
                let ok = matches!(f.nodes[*node].op, Op::Read(v) if alloc.home[v] == Some(Operand::Reg(*reg)));
                if !ok || !self.globals.contains(*reg) {
                    self.found.push(AllocErrorKind::NotItsGlobalRegister(*reg));
                }
                self.aliased.insert(*node, (*reg, self.generation[reg.index()]));
            }
            MInst::Reuse { node, reg } => {
                let Op::Read(v) = f.nodes[*node].op else {
                    self.found.push(AllocErrorKind::ReuseOfNonRead(*reg));
                    return;
                };
                if self.holds_var[reg.index()] != Some(v) {
                    self.found.push(AllocErrorKind::ReuseWithoutValue { var: v, reg: *reg });
                }
                self.regs[reg.index()] = Some(Use::of(*node));
                self.holds_var[reg.index()] = None;
            }
            MInst::Move { dst, src } => {
                self.written(*dst);
                self.holds_var[dst.index()] = None;
                let v = match src {
                    Operand::Reg(s) => self.regs[s.index()],
                    Operand::Mem(m) if m.base == Some(Base::Ebp) => {
                        if let Some(is) = self.frame.word(m.disp) {
                            self.found.push(AllocErrorKind::NotASpillSlot { slot: m.disp, is });
                            return;
                        }
                        let (mark, v) = self.slots[self.frame.index(m.disp).expect("a spill slot is a word of the locals")];
                        (mark == self.block).then_some(v)
                    }
                    _ => None,
                };
                match v {
                    Some(v) => {
                        self.regs[dst.index()] = Some(v);
                    }
                    None => self.found.push(AllocErrorKind::MoveOfNoValue),
                }
            }
            MInst::Spill { slot, src } => {
                if let Some(is) = self.frame.word(*slot) {
                    self.found.push(AllocErrorKind::NotASpillSlot { slot: *slot, is });
                    return;
                }
                match self.regs[src.index()] {
                    Some(v) => {
                        self.slots[self.frame.index(*slot).expect("a spill slot is a word of the locals")] = (self.block, v);
                    }
                    None => self.found.push(AllocErrorKind::SpillOfNoValue),
                }
            }
            MInst::Node { node, ops, results } => self.node(*node, ops.of(&alloc.operands), results.of(&alloc.results)),
        }
    }

    /// Replays the instruction of LIR node `n`: its operands must be where it reads them;
    /// it kills what it clobbers and its operands, and defines its results.
    fn node(&mut self, n: Node, ops: &[Operand], results: &[Option<Reg>]) {
        let (f, alloc) = (self.f, self.alloc);
        let mut expected = std::mem::take(&mut self.expected);
        expected.clear();
        inline_operands(f, n, ops, &mut 0, &mut expected);
        for (u, r) in &expected {
            if self.regs[r.index()] != Some(*u) && self.alias(*u) != Some(*r) {
                let holds = self.regs[r.index()];
                self.found.push(AllocErrorKind::OperandNotInRegister { operand: *u, reg: *r, holds });
            }
        }
        for r in kills(f, n).iter() {
            self.regs[r.index()] = None;
            self.holds_var[r.index()] = None;
        }
        if let Op::Write(v) = f.nodes[n].op {
            // A write of a global variable overwrites any alias of its old value.
            if let Some(Operand::Reg(g)) = alloc.home[v] {
                self.generation[g.index()] += 1;
            }
            for w in &mut self.holds_var {
                if *w == Some(v) {
                    *w = None;
                }
            }
            if let (Some(Operand::Reg(r)), Some(Operand::Mem(_))) = (ops.first(), alloc.home[v]) {
                if !self.globals.contains(*r) {
                    self.holds_var[r.index()] = Some(v);
                }
            }
        }
        for (u, r) in &expected {
            let aliased = self.alias(*u).is_some();
            if aliased {
                self.aliased.remove(u.node);
            } else {
                self.regs[r.index()] = None;
            }
        }
        for (i, r) in results.iter().enumerate() {
            if let Some(r) = r {
                self.written(*r);
                self.holds_var[r.index()] = None;
                self.regs[r.index()] = Some(Use { node: n, result: i as u8 });
            }
        }
        self.expected = expected;
    }
}

/// The frame as the allocation describes it (not the allocator's slot numbering): the
/// words between `ebp` and the outgoing argument area hold the variables' homes, the save
/// slots of the callee-saved registers the prologue saves, and spill slots. Built once per
/// function.
struct Frame {
    /// The displacements from `ebp` of the locals' words.
    locals: std::ops::Range<i32>,
    /// What each word of the locals that is no spill slot is, by [`Frame::index`].
    reserved: Vec<Option<&'static str>>,
}

impl Frame {
    fn of(alloc: &Allocation) -> Frame {
        let locals = -(alloc.frame_bytes as i32 - OUT_ARG_BYTES as i32)..0;
        let mut frame = Frame { reserved: vec![None; locals.len().div_ceil(4)], locals };
        let mut reserve = |disp: i32, is| {
            if let Some(k) = frame.index(disp) {
                frame.reserved[k] = Some(is);
            }
        };
        for h in alloc.home.values() {
            if let Some(Operand::Mem(m)) = *h {
                if m == Mem::frame(m.disp) {
                    reserve(m.disp, "a variable's home");
                }
            }
        }
        for &(_, s) in &alloc.saved {
            reserve(s, "a callee-saved register's save slot");
        }
        frame
    }

    /// The number of the locals' word at `ebp + disp` (counted down from `ebp`), if it is
    /// one.
    fn index(&self, disp: i32) -> Option<usize> {
        (disp % 4 == 0 && self.locals.contains(&disp)).then(|| (-disp / 4 - 1) as usize)
    }

    /// What the frame word at `ebp + disp` is when it is not a spill slot.
    fn word(&self, disp: i32) -> Option<&'static str> {
        if disp % 4 != 0 {
            Some("not word-aligned")
        } else if !self.locals.contains(&disp) {
            Some("outside the frame's locals")
        } else {
            self.reserved[self.index(disp).expect("a word of the locals")]
        }
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
