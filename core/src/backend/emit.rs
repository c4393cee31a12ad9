//! Emission: allocated machine instructions to IA-32 bytes, each instruction encoded by
//! `iced-x86`'s encoder and the branches sized by [`super::encode`].
//!
//! The frame follows [`crate::abi`]: cdecl entry (`push ebp; mov ebp, esp; sub esp,
//! frame`), callee-saved registers the function uses saved in frame slots, every HIR
//! local zeroed (the IR says locals start at 0), globally allocated parameters loaded
//! from their incoming slots. Callframe variables are absolute memory operands at
//! `CALLFRAME_BASE + 8 * index`; helpers are called by `call rel32` to their fixed
//! runtime addresses, with arguments in the outgoing area at `[esp]`. A failed `trapif`
//! executes `int 0x41` with the code in `eax`; 32-bit divisions rely on the CPU's own
//! #DE. A `select` is branch-free (`neg; sbb; xor; and; xor`), so no `cmov` is needed.

use std::fmt;

use cranelift_entity::SecondaryMap;
use iced_x86::{Code, Instruction, MemoryOperand, Register};

use super::encode::{Assembler, Cond, Label, Rm};

use super::lir::*;
use super::regalloc::{Allocation, Base, MInst, Mem, Operand};
use super::x86::Reg;
use crate::abi::{helper_address, CodeShape, MachineCode, CHECK_TRAP_VECTOR, CODE_BASE};
use crate::ir::{BinOp, Block, CmpOp, MemWidth, UnOp, CALLFRAME_BASE, CALLFRAME_SLOT};

/// What the emitter could not encode (a backend bug: an operand shape no instruction
/// takes).
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum EmitErrorKind {
    /// An operand that must be a register is not.
    NotARegister(Operand),
    /// A move from memory to memory.
    MemoryToMemory,
    /// A move whose destination is an immediate.
    MoveToImmediate,
    /// An immediate where a register or memory operand (r/m32) is needed.
    ImmediateAsRm,
    /// A shift count neither in `ecx` nor an immediate.
    ShiftCount(Operand),
    /// A double-precision shift (`shld`/`shrd`) count neither in `ecx` nor an immediate.
    DoubleShiftCount(Operand),
    /// A load whose address operand is not a memory operand.
    LoadWithoutAddress,
    /// An operator lowering should have contained or removed (`convert`, `addr`).
    NotEmittable,
    /// `iced-x86` refused an instruction; its message.
    Encoder(String),
}

impl fmt::Display for EmitErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmitErrorKind::NotARegister(o) => write!(f, "expected a register, got {o}"),
            EmitErrorKind::MemoryToMemory => f.write_str("memory to memory move"),
            EmitErrorKind::MoveToImmediate => f.write_str("move to an immediate"),
            EmitErrorKind::ImmediateAsRm => f.write_str("an immediate where r/m32 is needed"),
            EmitErrorKind::ShiftCount(o) => write!(f, "shift count in {o}"),
            EmitErrorKind::DoubleShiftCount(o) => write!(f, "double shift count in {o}"),
            EmitErrorKind::LoadWithoutAddress => f.write_str("load without an address"),
            EmitErrorKind::NotEmittable => f.write_str("the operator cannot be emitted"),
            EmitErrorKind::Encoder(m) => write!(f, "the encoder refused: {m}"),
        }
    }
}

impl From<iced_x86::IcedError> for EmitErrorKind {
    fn from(e: iced_x86::IcedError) -> Self {
        EmitErrorKind::Encoder(e.to_string())
    }
}

/// An encoding failure with where it happened: the block and the machine instruction
/// being emitted (`None` for the prologue and the final assembly).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct EmitError {
    pub block: Option<Block>,
    /// The LIR node the instruction implements (`None` for an allocator move or spill).
    pub node: Option<Node>,
    /// The machine instruction as the allocation listing prints it ([`MInst::text`]).
    pub inst: Option<String>,
    pub kind: EmitErrorKind,
}

impl EmitError {
    fn at(block: Option<Block>, node: Option<Node>, inst: Option<String>) -> impl FnOnce(EmitErrorKind) -> EmitError {
        move |kind| EmitError { block, node, inst, kind }
    }
}

impl fmt::Display for EmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.block, self.node) {
            (Some(b), Some(n)) => write!(f, "{b} {n}")?,
            (Some(b), None) => write!(f, "{b}")?,
            _ => f.write_str("the function")?,
        }
        if let Some(i) = &self.inst {
            write!(f, " ({i})")?;
        }
        write!(f, ": {}", self.kind)
    }
}

impl std::error::Error for EmitError {}

type R<T> = Result<T, EmitErrorKind>;

fn mem(m: &Mem) -> MemoryOperand {
    let base = match m.base {
        Some(Base::Reg(r)) => r.r32(),
        Some(Base::Ebp) => Register::EBP,
        Some(Base::Esp) => Register::ESP,
        None => Register::None,
    };
    let (index, scale) = m.index.map_or((Register::None, 1), |(r, s)| (r.r32(), s as u32));
    MemoryOperand::new(base, index, scale, m.disp as i64, disp_size(m), false, Register::None)
}

/// The bytes `m`'s displacement takes: 4 without a base, else 0 for zero, 1 where it fits
/// in `i8`, else 4.
fn disp_size(m: &Mem) -> u32 {
    match m.base {
        None => 4,
        Some(_) if m.disp == 0 => 0,
        Some(_) if i8::try_from(m.disp).is_ok() => 1,
        Some(_) => 4,
    }
}

/// The number of `r` in ModRM fields and in `opcode + r` forms.
fn num(r: Reg) -> u8 {
    (r.r32() as u32 - Register::EAX as u32) as u8
}

/// `m` as [`Assembler::modrm`] takes it, its displacement sized as for [`mem`] ([`disp_size`]).
fn rm_mem(m: &Mem) -> Rm {
    let base = match m.base {
        Some(Base::Reg(r)) => Some(num(r)),
        Some(Base::Ebp) => Some(5),
        Some(Base::Esp) => Some(4),
        None => None,
    };
    let index = m.index.map(|(r, s)| (num(r), s.trailing_zeros() as u8));
    Rm::Mem { base, index, disp: m.disp, disp_size: disp_size(m) as u8 }
}

fn reg(o: &Operand) -> R<Reg> {
    match o {
        Operand::Reg(r) => Ok(*r),
        o => Err(EmitErrorKind::NotARegister(*o)),
    }
}

struct Emitter<'a> {
    a: Assembler,
    f: &'a LirFunction,
    alloc: &'a Allocation,
    /// Each block's label (blocks not in the layout have none).
    labels: SecondaryMap<Block, Option<Label>>,
}

#[derive(Clone, Copy)]
enum Alu {
    Add,
    Adc,
    Sub,
    Sbb,
    And,
    Or,
    Xor,
    Cmp,
}

impl Alu {
    /// The opcode of `op r32, r/m32` and the ModRM `reg` field of `op r/m32, imm32`
    /// (opcode `0x81`).
    fn opcodes(self) -> (u8, u8) {
        match self {
            Alu::Add => (0x03, 0),
            Alu::Or => (0x0B, 1),
            Alu::Adc => (0x13, 2),
            Alu::Sbb => (0x1B, 3),
            Alu::And => (0x23, 4),
            Alu::Sub => (0x2B, 5),
            Alu::Xor => (0x33, 6),
            Alu::Cmp => (0x3B, 7),
        }
    }

    #[cfg(test)]
    fn codes(self) -> (Code, Code) {
        match self {
            Alu::Add => (Code::Add_r32_rm32, Code::Add_rm32_imm32),
            Alu::Adc => (Code::Adc_r32_rm32, Code::Adc_rm32_imm32),
            Alu::Sub => (Code::Sub_r32_rm32, Code::Sub_rm32_imm32),
            Alu::Sbb => (Code::Sbb_r32_rm32, Code::Sbb_rm32_imm32),
            Alu::And => (Code::And_r32_rm32, Code::And_rm32_imm32),
            Alu::Or => (Code::Or_r32_rm32, Code::Or_rm32_imm32),
            Alu::Xor => (Code::Xor_r32_rm32, Code::Xor_rm32_imm32),
            Alu::Cmp => (Code::Cmp_r32_rm32, Code::Cmp_rm32_imm32),
        }
    }
}

/// The `setcc` code of a compare.
fn setcc(op: CmpOp) -> Code {
    match op {
        CmpOp::Eq => Code::Sete_rm8,
        CmpOp::Ne => Code::Setne_rm8,
        CmpOp::Slt => Code::Setl_rm8,
        CmpOp::Sle => Code::Setle_rm8,
        CmpOp::Sgt => Code::Setg_rm8,
        CmpOp::Sge => Code::Setge_rm8,
        CmpOp::Ult => Code::Setb_rm8,
        CmpOp::Ule => Code::Setbe_rm8,
        CmpOp::Ugt => Code::Seta_rm8,
        CmpOp::Uge => Code::Setae_rm8,
    }
}

/// The `jcc` condition of a compare.
fn cond(op: CmpOp) -> Cond {
    match op {
        CmpOp::Eq => Cond::E,
        CmpOp::Ne => Cond::Ne,
        CmpOp::Slt => Cond::L,
        CmpOp::Sle => Cond::Le,
        CmpOp::Sgt => Cond::G,
        CmpOp::Sge => Cond::Ge,
        CmpOp::Ult => Cond::B,
        CmpOp::Ule => Cond::Be,
        CmpOp::Ugt => Cond::A,
        CmpOp::Uge => Cond::Ae,
    }
}

/// The compare that holds exactly when `op` does not.
fn negate(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Eq => CmpOp::Ne,
        CmpOp::Ne => CmpOp::Eq,
        CmpOp::Slt => CmpOp::Sge,
        CmpOp::Sge => CmpOp::Slt,
        CmpOp::Sle => CmpOp::Sgt,
        CmpOp::Sgt => CmpOp::Sle,
        CmpOp::Ult => CmpOp::Uge,
        CmpOp::Uge => CmpOp::Ult,
        CmpOp::Ule => CmpOp::Ugt,
        CmpOp::Ugt => CmpOp::Ule,
    }
}

impl Emitter<'_> {
    fn ins(&mut self, i: Result<Instruction, iced_x86::IcedError>) -> R<()> {
        self.a.add(i?)?;
        Ok(())
    }

    fn jcc(&mut self, op: CmpOp, l: Label) -> R<()> {
        self.a.jcc(cond(op), l);
        Ok(())
    }

    /// `mov dst, src` for a register destination.
    fn mov_to_reg(&mut self, dst: Reg, src: &Operand) -> R<()> {
        // `Mov_r32_rm32` and `Mov_r32_imm32`, written by the assembler.
        match src {
            Operand::Reg(s) if *s == dst => {}
            Operand::Reg(s) => self.a.modrm(0x8B, num(dst), Rm::Reg(num(*s)), None),
            Operand::Mem(m) => self.a.modrm(0x8B, num(dst), rm_mem(m), None),
            Operand::Imm(k) => self.a.reg_imm(0xB8, num(dst), *k),
        }
        Ok(())
    }

    /// `mov dst, src` for any destination of `width` (register sources of byte width
    /// must have a byte form).
    fn mov_to(&mut self, dst: &Operand, src: &Operand, width: MemWidth) -> R<()> {
        match dst {
            Operand::Reg(d) => self.mov_to_reg(*d, src),
            Operand::Mem(md) => {
                match (width, src) {
                    (MemWidth::W8, Operand::Reg(s)) => self.ins(Instruction::with2(Code::Mov_rm8_r8, mem(md), s.r8())),
                    (MemWidth::W8, Operand::Imm(k)) => self.ins(Instruction::with2(Code::Mov_rm8_imm8, mem(md), *k as u8 as u32)),
                    (MemWidth::W16, Operand::Reg(s)) => self.ins(Instruction::with2(Code::Mov_rm16_r16, mem(md), s.r16())),
                    (MemWidth::W16, Operand::Imm(k)) => self.ins(Instruction::with2(Code::Mov_rm16_imm16, mem(md), *k as u16 as u32)),
                    // `Mov_rm32_r32` and `Mov_rm32_imm32`, written by the assembler.
                    (_, Operand::Reg(s)) => Ok(self.a.modrm(0x89, num(*s), rm_mem(md), None)),
                    (_, Operand::Imm(k)) => Ok(self.a.modrm(0xC7, 0, rm_mem(md), Some(*k))),
                    (_, Operand::Mem(_)) => Err(EmitErrorKind::MemoryToMemory),
                }
            }
            Operand::Imm(_) => Err(EmitErrorKind::MoveToImmediate),
        }
    }

    /// `op dst, src`: the `op r32, r/m32` and `op r/m32, imm32` forms of [`Alu::codes`],
    /// written by the assembler.
    fn alu(&mut self, op: Alu, dst: Reg, src: &Operand) -> R<()> {
        let (rm, imm) = op.opcodes();
        match src {
            Operand::Reg(s) => self.a.modrm(rm, num(dst), Rm::Reg(num(*s)), None),
            Operand::Mem(m) => self.a.modrm(rm, num(dst), rm_mem(m), None),
            Operand::Imm(k) => self.a.modrm(0x81, imm, Rm::Reg(num(dst)), Some(*k)),
        }
        Ok(())
    }

    fn unary(&mut self, code: Code, src: &Operand) -> R<()> {
        match src {
            Operand::Reg(s) => self.ins(Instruction::with1(code, s.r32())),
            Operand::Mem(m) => self.ins(Instruction::with1(code, mem(m))),
            Operand::Imm(_) => Err(EmitErrorKind::ImmediateAsRm),
        }
    }

    fn shift(&mut self, op: BinOp, dst: Reg, count: &Operand) -> R<()> {
        let (cl, imm) = match op {
            BinOp::Shl => (Code::Shl_rm32_CL, Code::Shl_rm32_imm8),
            BinOp::Lshr => (Code::Shr_rm32_CL, Code::Shr_rm32_imm8),
            _ => (Code::Sar_rm32_CL, Code::Sar_rm32_imm8),
        };
        match count {
            Operand::Reg(Reg::Ecx) => self.ins(Instruction::with2(cl, dst.r32(), Register::CL)),
            Operand::Imm(k) => self.ins(Instruction::with2(imm, dst.r32(), (*k as u32) & 31)),
            o => Err(EmitErrorKind::ShiftCount(*o)),
        }
    }

    fn setcc(&mut self, op: CmpOp, r: Reg) -> R<()> {
        self.ins(Instruction::with1(setcc(op), r.r8()))?;
        self.ins(Instruction::with2(Code::Movzx_r32_rm8, r.r32(), r.r8()))
    }

    fn label(&self, b: Block) -> Label {
        self.labels[b].expect("a branch to a block in the layout")
    }

    fn jump(&mut self, b: Block, next: Option<Block>) -> R<()> {
        if Some(b) != next {
            let l = self.label(b);
            self.a.jmp(l);
        }
        Ok(())
    }

    fn epilogue(&mut self) -> R<()> {
        for &(r, slot) in &self.alloc.saved {
            self.mov_to_reg(r, &Operand::Mem(Mem::frame(slot)))?;
        }
        self.ins(Instruction::with2(Code::Mov_r32_rm32, Register::ESP, Register::EBP))?;
        self.ins(Instruction::with1(Code::Pop_r32, Register::EBP))?;
        self.ins(Ok(Instruction::with(Code::Retnd)))
    }

    fn prologue(&mut self) -> R<()> {
        self.ins(Instruction::with1(Code::Push_r32, Register::EBP))?;
        self.ins(Instruction::with2(Code::Mov_r32_rm32, Register::EBP, Register::ESP))?;
        self.ins(Instruction::with2(Code::Sub_rm32_imm32, Register::ESP, self.alloc.frame_bytes as i32))?;
        for &(r, slot) in &self.alloc.saved {
            self.mov_to(&Operand::Mem(Mem::frame(slot)), &Operand::Reg(r), MemWidth::W32)?;
        }
        for (v, d) in &self.f.vars {
            let home = self.alloc.home[v].expect("every variable has a home");
            match d.kind {
                VarKind::Local => self.mov_to(&home, &Operand::Imm(0), MemWidth::W32)?,
                VarKind::Param { offset } => {
                    if let Operand::Reg(r) = home {
                        self.mov_to_reg(r, &Operand::Mem(Mem::frame(8 + offset as i32)))?;
                    }
                }
                VarKind::Temp => {}
            }
        }
        Ok(())
    }

    fn node(&mut self, n: Node, ops: &[Operand], results: &[Option<Reg>], next: Option<Block>) -> R<()> {
        let f = self.f;
        let d = &f.nodes[n];
        let res = |i: usize| results.get(i).copied().flatten();
        // The destination of a two-address instruction is its first register operand.
        match &d.op {
            Op::Const(k) => {
                if let Some(r) = res(0) {
                    self.mov_to_reg(r, &Operand::Imm(*k as i32))?;
                }
            }
            Op::Read(v) => {
                if let Some(r) = res(0) {
                    let home = self.alloc.home[*v].unwrap();
                    self.mov_to_reg(r, &home)?;
                }
            }
            Op::Write(v) => {
                let home = self.alloc.home[*v].unwrap();
                self.mov_to(&home, &ops[0], MemWidth::W32)?;
            }
            Op::Unary(u) => {
                let code = if *u == UnOp::Neg { Code::Neg_rm32 } else { Code::Not_rm32 };
                self.unary(code, &ops[0])?;
            }
            Op::Binary(b) => self.binary(*b, ops)?,
            Op::AddLo => self.alu(Alu::Add, reg(&ops[0])?, &ops[1])?,
            Op::AddHi => self.alu(Alu::Adc, reg(&ops[0])?, &ops[1])?,
            Op::SubLo => self.alu(Alu::Sub, reg(&ops[0])?, &ops[1])?,
            Op::SubHi => self.alu(Alu::Sbb, reg(&ops[0])?, &ops[1])?,
            Op::Cmp { op, .. } => {
                let dst = reg(&ops[0])?;
                self.alu(Alu::Cmp, dst, &ops[1])?;
                self.setcc(*op, dst)?;
            }
            Op::CmpPair(op) => {
                let (lo, hi) = (reg(&ops[0])?, reg(&ops[1])?);
                self.alu(Alu::Cmp, lo, &ops[2])?;
                self.alu(Alu::Sbb, hi, &ops[3])?;
                self.setcc(*op, hi)?;
            }
            Op::Select => {
                let (c, t, fl) = (reg(&ops[0])?, reg(&ops[1])?, reg(&ops[2])?);
                // c = (c != 0) ? -1 : 0; f ^= (t ^ f) & c.
                self.ins(Instruction::with1(Code::Neg_rm32, c.r32()))?;
                self.alu(Alu::Sbb, c, &Operand::Reg(c))?;
                self.alu(Alu::Xor, t, &Operand::Reg(fl))?;
                self.alu(Alu::And, t, &Operand::Reg(c))?;
                self.alu(Alu::Xor, fl, &Operand::Reg(t))?;
            }
            Op::Shld | Op::Shrd => self.double_shift(matches!(d.op, Op::Shld), ops)?,
            Op::MulWide => self.unary(Code::Mul_rm32, &ops[1])?,
            Op::Load { width, signed } => self.load(*width, *signed, ops, res(0))?,
            Op::Store { width } => self.mov_to(&ops[0], &ops[1], *width)?,
            Op::CfRead { var, offset } => {
                if let Some(r) = res(0) {
                    self.mov_to_reg(r, &cf_operand(var.as_u32(), *offset))?;
                }
            }
            Op::CfWrite { var, offset } => self.mov_to(&cf_operand(var.as_u32(), *offset), &ops[0], MemWidth::W32)?,
            Op::Arg { offset } => {
                let m = Operand::Mem(Mem { base: Some(Base::Esp), index: None, disp: *offset as i32 });
                self.mov_to(&m, &ops[0], MemWidth::W32)?;
            }
            Op::Call(h) => self.a.call(helper_address(*h)),
            Op::TrapIf(code) => self.trap_if(n, *code, ops)?,
            Op::Jump(b) => self.jump(*b, next)?,
            Op::Branch { then_dest, else_dest } => self.branch(n, *then_dest, *else_dest, ops, next)?,
            Op::Return => self.epilogue()?,
            Op::Switch { default, cases } => self.switch(cases, *default, ops, next)?,
            Op::Convert(_) | Op::Addr { .. } => return Err(EmitErrorKind::NotEmittable),
        }
        Ok(())
    }

    /// A 32-bit binary operator, two-address: the destination is the first operand;
    /// division takes `edx:eax` (`cdq` or a zeroed `edx` first).
    fn binary(&mut self, b: BinOp, ops: &[Operand]) -> R<()> {
        let dst = reg(&ops[0])?;
        match b {
            BinOp::Add => self.alu(Alu::Add, dst, &ops[1])?,
            BinOp::Sub => self.alu(Alu::Sub, dst, &ops[1])?,
            BinOp::And => self.alu(Alu::And, dst, &ops[1])?,
            BinOp::Or => self.alu(Alu::Or, dst, &ops[1])?,
            BinOp::Xor => self.alu(Alu::Xor, dst, &ops[1])?,
            BinOp::Mul => match &ops[1] {
                Operand::Imm(k) => {
                    self.ins(Instruction::with3(Code::Imul_r32_rm32_imm32, dst.r32(), dst.r32(), *k))?
                }
                Operand::Reg(s) => self.ins(Instruction::with2(Code::Imul_r32_rm32, dst.r32(), s.r32()))?,
                Operand::Mem(m) => self.ins(Instruction::with2(Code::Imul_r32_rm32, dst.r32(), mem(m)))?,
            },
            BinOp::Shl | BinOp::Lshr | BinOp::Ashr => self.shift(b, dst, &ops[1])?,
            BinOp::Sdiv | BinOp::Srem => {
                self.ins(Ok(Instruction::with(Code::Cdq)))?;
                self.unary(Code::Idiv_rm32, &ops[1])?;
            }
            BinOp::Udiv | BinOp::Urem => {
                self.mov_to_reg(Reg::Edx, &Operand::Imm(0))?;
                self.unary(Code::Div_rm32, &ops[1])?;
            }
        }
        Ok(())
    }

    /// `shld` or `shrd` of the first operand with bits from the second, by `cl` or an
    /// immediate count.
    fn double_shift(&mut self, shld: bool, ops: &[Operand]) -> R<()> {
        let (dst, src) = (reg(&ops[0])?, reg(&ops[1])?);
        match &ops[2] {
            Operand::Reg(Reg::Ecx) => {
                let code = if shld { Code::Shld_rm32_r32_CL } else { Code::Shrd_rm32_r32_CL };
                self.ins(Instruction::with3(code, dst.r32(), src.r32(), Register::CL))?
            }
            Operand::Imm(k) => {
                let code = if shld { Code::Shld_rm32_r32_imm8 } else { Code::Shrd_rm32_r32_imm8 };
                self.ins(Instruction::with3(code, dst.r32(), src.r32(), (*k as u32) & 31))?
            }
            o => return Err(EmitErrorKind::DoubleShiftCount(*o)),
        }
        Ok(())
    }

    /// A load into `dst` (nothing when the result is unused), extended to 32 bits.
    fn load(&mut self, width: MemWidth, signed: bool, ops: &[Operand], dst: Option<Reg>) -> R<()> {
        let Some(r) = dst else { return Ok(()) };
        let Operand::Mem(m) = &ops[0] else { return Err(EmitErrorKind::LoadWithoutAddress) };
        let code = match (width, signed) {
            (MemWidth::W8, true) => Code::Movsx_r32_rm8,
            (MemWidth::W8, false) => Code::Movzx_r32_rm8,
            (MemWidth::W16, true) => Code::Movsx_r32_rm16,
            (MemWidth::W16, false) => Code::Movzx_r32_rm16,
            _ => Code::Mov_r32_rm32,
        };
        self.ins(Instruction::with2(code, r.r32(), mem(m)))?;
        Ok(())
    }

    /// `trapif`: skip unless the condition (a contained compare, or a register tested
    /// against zero) holds, else raise the trap with its code in `eax`.
    fn trap_if(&mut self, n: Node, code: u32, ops: &[Operand]) -> R<()> {
        let skip = self.a.create_label();
        match self.condition(n, ops)? {
            Some(op) => self.jcc(negate(op), skip)?,
            None => self.a.jcc(Cond::E, skip),
        }
        self.mov_to_reg(Reg::Eax, &Operand::Imm(code as i32))?;
        self.ins(Instruction::with1(Code::Int_imm8, CHECK_TRAP_VECTOR as u32))?;
        self.a.bind(skip);
        Ok(())
    }

    /// A two-way branch on a contained compare or a register tested against zero; the
    /// jump to `else_dest` is left out when it is the next block.
    fn branch(&mut self, n: Node, then_dest: Block, else_dest: Block, ops: &[Operand], next: Option<Block>) -> R<()> {
        let then_l = self.label(then_dest);
        match self.condition(n, ops)? {
            Some(op) => self.jcc(op, then_l)?,
            None => self.a.jcc(Cond::Ne, then_l),
        }
        self.jump(else_dest, next)?;
        Ok(())
    }

    /// Sets the flags for the condition of `trapif` or `branch` node `n`: a contained
    /// compare is emitted as `cmp`, and its operator returned (the flags hold it); a
    /// condition in a register is tested (`test r, r`; `None`: the flags say non-zero).
    fn condition(&mut self, n: Node, ops: &[Operand]) -> R<Option<CmpOp>> {
        let cond = self.f.nodes[n].args[0].node;
        if self.f.nodes[cond].contained {
            let Op::Cmp { op, .. } = self.f.nodes[cond].op else { unreachable!() };
            self.alu(Alu::Cmp, reg(&ops[0])?, &ops[1])?;
            Ok(Some(op))
        } else {
            let c = reg(&ops[0])?;
            self.ins(Instruction::with2(Code::Test_rm32_r32, c.r32(), c.r32()))?;
            Ok(None)
        }
    }

    /// A switch as a chain of compares, on one register or on an `i64` value's two
    /// halves.
    fn switch(&mut self, cases: &[(i64, Block)], default: Block, ops: &[Operand], next: Option<Block>) -> R<()> {
        if ops.len() == 1 {
            let r = reg(&ops[0])?;
            for (k, b) in cases {
                self.alu(Alu::Cmp, r, &Operand::Imm(*k as i32))?;
                let l = self.label(*b);
                self.a.jcc(Cond::E, l);
            }
        } else {
            let (lo, hi) = (reg(&ops[0])?, reg(&ops[1])?);
            for (k, b) in cases {
                let skip = self.a.create_label();
                self.alu(Alu::Cmp, lo, &Operand::Imm(*k as i32))?;
                self.a.jcc(Cond::Ne, skip);
                self.alu(Alu::Cmp, hi, &Operand::Imm((*k >> 32) as i32))?;
                let l = self.label(*b);
                self.a.jcc(Cond::E, l);
                self.a.bind(skip);
            }
        }
        self.jump(default, next)?;
        Ok(())
    }
}

fn cf_operand(var: u32, offset: u32) -> Operand {
    Operand::Mem(Mem { base: None, index: None, disp: (CALLFRAME_BASE + CALLFRAME_SLOT * var + offset) as i32 })
}

/// Encodes the allocated function; the entry is at offset 0.
pub fn emit(f: &LirFunction, alloc: &Allocation) -> Result<MachineCode, EmitError> {
    let whole = || EmitError::at(None, None, None);
    let a = Assembler::new().map_err(|x| whole()(x.into()))?;
    let mut e = Emitter { a, f, alloc, labels: SecondaryMap::new() };
    for &b in &f.layout {
        e.labels[b] = Some(e.a.create_label());
    }
    e.prologue().map_err(whole())?;
    let mut max_block_insns = 0;
    for (i, &b) in f.layout.iter().enumerate() {
        let before = e.a.instructions();
        e.block(b, f.layout.get(i + 1).copied())?;
        max_block_insns = max_block_insns.max(e.a.instructions() - before);
    }
    let insns = e.a.instructions();
    let code = e.a.finish(CODE_BASE);
    let blocks = f.layout.iter().map(|&b| (b, code.offset(e.labels[b].expect("a label per block")))).collect();
    let shape = CodeShape { insns, max_block_insns, frame_bytes: alloc.frame_bytes + 4 };
    Ok(MachineCode { bytes: code.bytes, index: None, entry: 0, shape, blocks })
}

impl Emitter<'_> {
    /// Emits block `b` (followed by `next` in the layout): its label, then each of its
    /// machine instructions. An error names the block and the instruction.
    fn block(&mut self, b: Block, next: Option<Block>) -> Result<(), EmitError> {
        self.a.bind(self.label(b));
        let alloc = self.alloc;
        for inst in &alloc.code[b] {
            let done = match inst {
                MInst::Move { dst, src } => self.mov_to_reg(*dst, src),
                MInst::Spill { slot, src } => {
                    self.mov_to(&Operand::Mem(Mem::frame(*slot)), &Operand::Reg(*src), MemWidth::W32)
                }
                MInst::Node { node, ops, results } => self.node(*node, ops.of(&alloc.operands), results.of(&alloc.results), next),
                MInst::Reuse { .. } | MInst::Alias { .. } => Ok(()),
            };
            done.map_err(|kind| {
                let node = match inst {
                    MInst::Node { node, .. } => Some(*node),
                    _ => None,
                };
                EmitError::at(Some(b), node, Some(inst.text(self.f, alloc)))(kind)
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Memory operands of every shape the emitter meets: each base (or none), with and
    /// without an index of each scale, displacements of each size.
    fn memories() -> Vec<Mem> {
        let mut bases = vec![None, Some(Base::Ebp), Some(Base::Esp)];
        bases.extend(Reg::ALL.map(|r| Some(Base::Reg(r))));
        let mut indexes = vec![None];
        for r in Reg::ALL {
            indexes.extend([1, 2, 4, 8].map(|s| Some((r, s))));
        }
        let mut out = vec![];
        for &base in &bases {
            for &index in &indexes {
                for disp in [0, 1, -4, 127, -128, 128, -129, 0x1234, -0x400, 0x7000_0010, i32::MIN] {
                    out.push(Mem { base, index, disp });
                }
            }
        }
        out
    }

    /// The bytes of one instruction written by `write`.
    fn bytes(write: impl FnOnce(&mut Assembler)) -> Vec<u8> {
        let mut a = Assembler::new().unwrap();
        write(&mut a);
        a.finish(0).bytes
    }

    fn iced(i: Instruction) -> Vec<u8> {
        bytes(|a| a.add(i).unwrap())
    }

    /// The forms [`Assembler::modrm`] and [`Assembler::reg_imm`] write for the emitter:
    /// the bytes of iced's encoder for the same instructions, operand by operand.
    #[test]
    fn the_assemblers_forms_are_iceds_bytes() {
        let mems = memories();
        let alus = [Alu::Add, Alu::Adc, Alu::Sub, Alu::Sbb, Alu::And, Alu::Or, Alu::Xor, Alu::Cmp];
        for d in Reg::ALL {
            for k in [0, 1, -1, 127, 128, i32::MIN, 0x7FFF_FFFF] {
                assert_eq!(bytes(|a| a.reg_imm(0xB8, num(d), k)), iced(Instruction::with2(Code::Mov_r32_imm32, d.r32(), k).unwrap()));
                for op in alus {
                    let want = iced(Instruction::with2(op.codes().1, d.r32(), k).unwrap());
                    assert_eq!(bytes(|a| a.modrm(0x81, op.opcodes().1, Rm::Reg(num(d)), Some(k))), want);
                }
            }
            for s in Reg::ALL {
                let want = iced(Instruction::with2(Code::Mov_r32_rm32, d.r32(), s.r32()).unwrap());
                assert_eq!(bytes(|a| a.modrm(0x8B, num(d), Rm::Reg(num(s)), None)), want);
                for op in alus {
                    let want = iced(Instruction::with2(op.codes().0, d.r32(), s.r32()).unwrap());
                    assert_eq!(bytes(|a| a.modrm(op.opcodes().0, num(d), Rm::Reg(num(s)), None)), want);
                }
            }
            for m in &mems {
                let want = iced(Instruction::with2(Code::Mov_r32_rm32, d.r32(), mem(m)).unwrap());
                assert_eq!(bytes(|a| a.modrm(0x8B, num(d), rm_mem(m), None)), want, "{m:?}");
                let want = iced(Instruction::with2(Code::Mov_rm32_r32, mem(m), d.r32()).unwrap());
                assert_eq!(bytes(|a| a.modrm(0x89, num(d), rm_mem(m), None)), want, "{m:?}");
                for op in alus {
                    let want = iced(Instruction::with2(op.codes().0, d.r32(), mem(m)).unwrap());
                    assert_eq!(bytes(|a| a.modrm(op.opcodes().0, num(d), rm_mem(m), None)), want, "{m:?}");
                }
            }
        }
        for m in &mems {
            for k in [0, -1, 0x1234_5678] {
                let want = iced(Instruction::with2(Code::Mov_rm32_imm32, mem(m), k).unwrap());
                assert_eq!(bytes(|a| a.modrm(0xC7, 0, rm_mem(m), Some(k))), want, "{m:?}");
            }
        }
    }
}
