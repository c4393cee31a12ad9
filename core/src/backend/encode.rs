//! The assembler under [`super::emit`]: instructions encoded one by one with `iced-x86`'s
//! [`Encoder`], and branches to labels sized here.
//!
//! Why not `iced-x86`'s `CodeAssembler` and its block encoder: they box every instruction
//! and size each one with a trial encoding, which cost most of the emitter's time. Here an
//! instruction without a label operand is encoded once, at once; only the three kinds of
//! relative transfer are kept apart (`jcc label`, `jmp label`, `call address`) and written
//! by hand when the addresses are known.
//!
//! Invariant: the bytes are exactly those of the block encoder (options
//! `RETURN_NEW_INSTRUCTION_OFFSETS`, 32-bit, one block). [`Assembler::finish`] sizes the
//! branches by the block encoder's own rules: every branch starts near (`jcc rel32`, 6
//! bytes; `jmp rel32`, 5), then at most five passes over the code in order, each shrinking
//! to the short form (2 bytes) a branch whose displacement fits in `rel8` (a forward
//! target's address is last pass's, less what this pass has gained so far), a short branch
//! never growing again, and a near branch whose displacement is beyond 15 × 128 bytes
//! left near for good. The count of instructions includes the zero-byte pseudo-instruction
//! that carries each label, as the block encoder's did, because the emulator's budget is
//! derived from it ([`crate::abi::CodeShape`]).
//!
//! Each thread keeps its encoder (and the encoder's buffer) from one function to the next
//! ([`Assembler::new`]): making an `iced-x86` encoder costs more than encoding a small
//! function's worth of instructions.
//!
//! The commonest forms (an opcode and a ModRM operand, register or memory, with an
//! optional 32-bit immediate: the moves and ALU operations of the emitter) are written
//! here by [`Assembler::modrm`], with the bytes iced's encoder writes for them in 32-bit
//! mode (its `add_mem_op` rules for the ModRM, SIB and displacement), because iced's
//! general encoder spent hundreds of instructions on each. Every other instruction goes
//! through iced.

use iced_x86::{Encoder, IcedError, Instruction};

/// A place in the code that branches name; bound to a position by [`Assembler::bind`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Label(u32);

/// The x86 condition codes of the `jcc` forms this backend emits (the low nibble of
/// `0x70+cc` and `0x0F 0x80+cc`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Cond {
    B = 0x2,
    Ae = 0x3,
    E = 0x4,
    Ne = 0x5,
    Be = 0x6,
    A = 0x7,
    L = 0xC,
    Ge = 0xD,
    Le = 0xE,
    G = 0xF,
}

/// One piece of the code, in order.
#[derive(Clone, Copy, Debug)]
enum Piece {
    /// `len` bytes of already-encoded instructions, next in [`Assembler::bytes`].
    Bytes { len: u32 },
    /// Where a label is bound (no bytes).
    Label,
    /// `jcc label`.
    Jcc { cond: Cond, target: Label },
    /// `jmp label`.
    Jmp { target: Label },
    /// `call rel32` to an absolute address.
    Call { address: u32 },
}

/// How a branch is encoded: near until shown short; `done` once it can change no more.
#[derive(Clone, Copy, Default)]
struct Sizing {
    short: bool,
    done: bool,
}

const SHORT_BRANCH: u32 = 2;
const NEAR_JCC: u32 = 6;
const NEAR_JMP: u32 = 5;
const CALL: u32 = 5;
/// The block encoder's `IcedConstants::MAX_INSTRUCTION_LENGTH`.
const MAX_INSTRUCTION_LENGTH: i64 = 15;
/// The block encoder's number of sizing passes.
const SIZING_PASSES: usize = 5;

/// The largest encoder buffer a thread keeps (a default function's code is a few KiB).
const SPARE_BUFFER: usize = 1 << 16;

thread_local! {
    /// This thread's encoder, between two functions assembled.
    static ENCODER: std::cell::Cell<Option<Encoder>> = const { std::cell::Cell::new(None) };
}

/// The r/m operand of a ModRM byte: a register's number, or a memory operand.
#[derive(Clone, Copy, Debug)]
pub enum Rm {
    Reg(u8),
    /// `[base + index * 2^scale + disp]`; `disp_size` as iced's `MemoryOperand` takes it
    /// (0, 1 or 4 bytes: 0 only with a zero displacement, 1 only when it fits in `i8`).
    Mem { base: Option<u8>, index: Option<(u8, u8)>, disp: i32, disp_size: u8 },
}

/// The number of `esp` and `ebp` in ModRM and SIB fields.
const ESP: u8 = 4;
const EBP: u8 = 5;

/// The code of one function being assembled at a fixed base address.
pub struct Assembler {
    /// The thread's encoder (its buffer lent to it for each instruction it encodes);
    /// `None` only once given back to the thread.
    encoder: Option<Encoder>,
    /// The bytes of every [`Piece::Bytes`], one after another.
    bytes: Vec<u8>,
    pieces: Vec<Piece>,
    /// The piece at which each label is bound (`u32::MAX` until bound).
    labels: Vec<u32>,
    /// Instructions so far, zero-byte label carriers included.
    insns: u32,
}

/// The assembled code: its bytes and each label's offset from the base.
pub struct Assembled {
    pub bytes: Vec<u8>,
    label_offsets: Vec<u32>,
}

impl Assembled {
    /// The offset from the base address at which `l` was bound.
    pub fn offset(&self, l: Label) -> u32 {
        self.label_offsets[l.0 as usize]
    }
}

impl Assembler {
    /// An assembler with this thread's encoder, or a new one for a thread's first function.
    pub fn new() -> Result<Assembler, IcedError> {
        let mut encoder = match ENCODER.with(|e| e.take()) {
            Some(e) => e,
            None => Encoder::try_new(32)?,
        };
        let bytes = encoder.take_buffer();
        Ok(Assembler { encoder: Some(encoder), bytes, pieces: Vec::new(), labels: Vec::new(), insns: 0 })
    }

    /// Instructions emitted so far (each bound label counts one, as the zero-byte
    /// instruction that carried it in the block encoder).
    pub fn instructions(&self) -> u32 {
        self.insns
    }

    pub fn create_label(&mut self) -> Label {
        self.labels.push(u32::MAX);
        Label(self.labels.len() as u32 - 1)
    }

    /// Binds `l` here.
    pub fn bind(&mut self, l: Label) {
        self.labels[l.0 as usize] = self.pieces.len() as u32;
        self.pieces.push(Piece::Label);
        self.insns += 1;
    }

    /// Encodes an instruction that names no label (nor any address relative to itself).
    pub fn add(&mut self, i: Instruction) -> Result<(), IcedError> {
        // The address does not matter for these instructions; the block encoder's own
        // is used for the bytes to be the same in every case. The encoder appends to the
        // assembler's bytes, lent to it.
        let bytes = std::mem::take(&mut self.bytes);
        let e = self.encoder.as_mut().expect("an assembler holds its encoder until dropped");
        e.set_buffer(bytes);
        let encoded = e.encode(&i, 0);
        self.bytes = e.take_buffer();
        self.added(encoded? as u32);
        Ok(())
    }

    /// Counts an instruction of `len` bytes just appended to [`Assembler::bytes`].
    fn added(&mut self, len: u32) {
        match self.pieces.last_mut() {
            Some(Piece::Bytes { len: run }) => *run += len,
            _ => self.pieces.push(Piece::Bytes { len }),
        }
        self.insns += 1;
    }

    /// Encodes `opcode /reg` with the r/m operand `rm` and, when given, a 32-bit
    /// immediate: the bytes iced's encoder writes for the same instruction in 32-bit mode
    /// (no prefix; the ModRM, then a SIB when `esp` is the base, there is an index or no
    /// register at all but an index; then the displacement, then the immediate).
    pub fn modrm(&mut self, opcode: u8, reg: u8, rm: Rm, imm: Option<i32>) {
        let start = self.bytes.len();
        let b = &mut self.bytes;
        b.push(opcode);
        match rm {
            Rm::Reg(r) => b.push(0xC0 | reg << 3 | r),
            Rm::Mem { base: None, index: None, disp, .. } => {
                b.push(reg << 3 | EBP);
                b.extend_from_slice(&disp.to_le_bytes());
            }
            Rm::Mem { base, index, disp, disp_size } => {
                // A zero displacement off `ebp` takes a byte (mod 00 with `ebp` means
                // no base).
                let disp_size = if disp_size == 0 && base == Some(EBP) { 1 } else { disp_size };
                let (mode, disp_bytes) = match (base, disp_size) {
                    (None, _) => (0x00, 4),
                    (Some(_), 0) => (0x00, 0),
                    (Some(_), 1) => (0x40, 1),
                    (Some(_), _) => (0x80, 4),
                };
                match (base, index) {
                    (Some(r), None) if r != ESP => b.push(mode | reg << 3 | r),
                    _ => {
                        b.push(mode | reg << 3 | ESP);
                        let (index, scale) = index.unwrap_or((ESP, 0));
                        b.push(scale << 6 | index << 3 | base.unwrap_or(EBP));
                    }
                }
                match disp_bytes {
                    0 => {}
                    1 => b.push(disp as i8 as u8),
                    _ => b.extend_from_slice(&disp.to_le_bytes()),
                }
            }
        }
        if let Some(k) = imm {
            b.extend_from_slice(&k.to_le_bytes());
        }
        let len = (self.bytes.len() - start) as u32;
        self.added(len);
    }

    /// Encodes `opcode + reg` and a 32-bit immediate (`mov r32, imm32`).
    pub fn reg_imm(&mut self, opcode: u8, reg: u8, imm: i32) {
        self.bytes.push(opcode + reg);
        self.bytes.extend_from_slice(&imm.to_le_bytes());
        self.added(5);
    }

    pub fn jcc(&mut self, cond: Cond, target: Label) {
        self.pieces.push(Piece::Jcc { cond, target });
        self.insns += 1;
    }

    pub fn jmp(&mut self, target: Label) {
        self.pieces.push(Piece::Jmp { target });
        self.insns += 1;
    }

    /// `call rel32` to the absolute `address`.
    pub fn call(&mut self, address: u32) {
        self.pieces.push(Piece::Call { address });
        self.insns += 1;
    }

    /// Each piece's size under `sizing`.
    fn size(p: &Piece, s: Sizing) -> u32 {
        match *p {
            Piece::Bytes { len } => len,
            Piece::Label => 0,
            Piece::Jcc { .. } if s.short => SHORT_BRANCH,
            Piece::Jcc { .. } => NEAR_JCC,
            Piece::Jmp { .. } if s.short => SHORT_BRANCH,
            Piece::Jmp { .. } => NEAR_JMP,
            Piece::Call { .. } => CALL,
        }
    }

    /// Sizes the branches (the block encoder's passes, see the module docs) and returns
    /// each piece's offset.
    fn size_branches(&self) -> (Vec<Sizing>, Vec<i64>) {
        let mut sizing = vec![Sizing::default(); self.pieces.len()];
        let mut at = Vec::with_capacity(self.pieces.len());
        let mut ip = 0i64;
        for p in &self.pieces {
            at.push(ip);
            ip += Self::size(p, Sizing::default()) as i64;
        }
        for _ in 0..SIZING_PASSES {
            let mut updated = false;
            let mut gained = 0i64;
            let mut ip = 0i64;
            for (k, p) in self.pieces.iter().enumerate() {
                at[k] = ip;
                if let Piece::Jcc { target, .. } | Piece::Jmp { target } = *p {
                    let s = &mut sizing[k];
                    if !s.done {
                        let old = Self::size(p, *s);
                        let target_at = at[self.labels[target.0 as usize] as usize];
                        let mut diff = target_at - (ip + SHORT_BRANCH as i64);
                        if diff >= 0 {
                            diff -= gained;
                        }
                        let diff = diff as i32 as i64;
                        if i8::MIN as i64 <= diff && diff <= i8::MAX as i64 {
                            s.short = true;
                            s.done = true;
                            gained += (old - SHORT_BRANCH) as i64;
                            updated = true;
                        } else if diff < MAX_INSTRUCTION_LENGTH * i8::MIN as i64 || diff > MAX_INSTRUCTION_LENGTH * i8::MAX as i64 {
                            s.done = true;
                        }
                    }
                }
                ip += Self::size(p, sizing[k]) as i64;
            }
            if !updated {
                break;
            }
        }
        (sizing, at)
    }

    /// The code at `base`: every label bound, every branch written.
    pub fn finish(mut self, base: u32) -> Assembled {
        for l in &self.labels {
            assert!(*l != u32::MAX, "a label used but never bound");
        }
        let (sizing, at) = self.size_branches();
        let encoded = std::mem::take(&mut self.bytes);
        let mut bytes = Vec::with_capacity(encoded.len() + 6 * self.pieces.len());
        let mut from = 0usize;
        for (k, p) in self.pieces.iter().enumerate() {
            let next = at[k] + Self::size(p, sizing[k]) as i64;
            match *p {
                Piece::Bytes { len } => {
                    bytes.extend_from_slice(&encoded[from..from + len as usize]);
                    from += len as usize;
                }
                Piece::Label => {}
                Piece::Jcc { cond, target } => {
                    let rel = at[self.labels[target.0 as usize] as usize] - next;
                    if sizing[k].short {
                        bytes.extend_from_slice(&[0x70 | cond as u8, rel as i8 as u8]);
                    } else {
                        bytes.extend_from_slice(&[0x0F, 0x80 | cond as u8]);
                        bytes.extend_from_slice(&(rel as i32).to_le_bytes());
                    }
                }
                Piece::Jmp { target } => {
                    let rel = at[self.labels[target.0 as usize] as usize] - next;
                    if sizing[k].short {
                        bytes.extend_from_slice(&[0xEB, rel as i8 as u8]);
                    } else {
                        bytes.push(0xE9);
                        bytes.extend_from_slice(&(rel as i32).to_le_bytes());
                    }
                }
                Piece::Call { address } => {
                    let rel = (address as i64).wrapping_sub(base as i64 + next);
                    bytes.push(0xE8);
                    bytes.extend_from_slice(&(rel as i32).to_le_bytes());
                }
            }
        }
        let label_offsets = self.labels.iter().map(|&p| at[p as usize] as u32).collect();
        // The buffer serves the thread's next function.
        self.bytes = encoded;
        Assembled { bytes, label_offsets }
    }
}

impl Drop for Assembler {
    /// Gives the encoder back to the thread (its buffer emptied).
    fn drop(&mut self) {
        if let Some(mut e) = self.encoder.take() {
            let mut buffer = std::mem::take(&mut self.bytes);
            buffer.clear();
            // A rare large function's buffer is not kept, so neither is its memory.
            if buffer.capacity() <= SPARE_BUFFER {
                e.set_buffer(buffer);
            }
            ENCODER.with(|slot| slot.set(Some(e)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iced_x86::code_asm::{CodeAssembler, CodeLabel};
    use iced_x86::{BlockEncoderOptions, Code, MemoryOperand, Register};

    use crate::backend::TestRng as Rng;

    /// Instructions of 1, 2, 5, 6 and 10 bytes.
    fn simple(k: u64) -> Instruction {
        match k {
            0 => Instruction::with(Code::Cdq),
            1 => Instruction::with2(Code::Mov_r32_rm32, Register::EAX, Register::ECX).unwrap(),
            2 => Instruction::with2(Code::Mov_r32_imm32, Register::EDX, 7).unwrap(),
            3 => Instruction::with2(Code::Add_rm32_imm32, Register::ESP, 0x1234).unwrap(),
            _ => {
                let m = MemoryOperand::new(Register::EBP, Register::None, 1, -0x400, 4, false, Register::None);
                Instruction::with2(Code::Mov_rm32_imm32, m, 5).unwrap()
            }
        }
    }

    /// Instructions assembled twice in one thread, by the encoder it keeps: each time the
    /// bytes a fresh encoder gives them.
    #[test]
    fn a_kept_encoder_gives_a_fresh_encoders_bytes() {
        let n = 3000;
        let instructions: Vec<Instruction> = (0..n)
            .map(|k| match k % 3 {
                0 => Instruction::with2(Code::Mov_r32_imm32, Register::EAX, k).unwrap(),
                1 => {
                    let m = MemoryOperand::new(Register::EBP, Register::None, 1, -(k as i64), 4, false, Register::None);
                    Instruction::with2(Code::Mov_rm32_r32, m, Register::EDX).unwrap()
                }
                _ => Instruction::with2(Code::Add_rm32_imm32, Register::ECX, k / 3).unwrap(),
            })
            .collect();
        let mut fresh = Encoder::try_new(32).unwrap();
        for i in &instructions {
            fresh.encode(i, 0).unwrap();
        }
        let want = fresh.take_buffer();
        for _ in 0..2 {
            let mut a = Assembler::new().unwrap();
            for i in &instructions {
                a.add(*i).unwrap();
            }
            assert_eq!(a.finish(0).bytes, want);
        }
    }

    /// Random code (labels, simple instructions, conditional and unconditional branches
    /// forward and back, calls) assembled here and by the block encoder: the same bytes
    /// and the same label offsets, with short, near and far branches all present.
    #[test]
    fn the_same_bytes_as_the_block_encoder() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let (mut short, mut near) = (0, 0);
        for case in 0..300 {
            let pieces = 1 + rng.below(if case % 10 == 0 { 3000 } else { 200 });
            let nlabels = 1 + rng.below(pieces / 4 + 1);
            let mut ours = Assembler::new().unwrap();
            let mut theirs = CodeAssembler::new(32).unwrap();
            let labels: Vec<Label> = (0..nlabels).map(|_| ours.create_label()).collect();
            let mut their_labels: Vec<CodeLabel> = (0..nlabels).map(|_| theirs.create_label()).collect();
            let mut bound = vec![false; nlabels as usize];
            for _ in 0..pieces {
                let which = rng.below(10);
                let l = rng.below(nlabels) as usize;
                match which {
                    0 | 1 if !bound[l] => {
                        bound[l] = true;
                        ours.bind(labels[l]);
                        theirs.set_label(&mut their_labels[l]).unwrap();
                        theirs.zero_bytes().unwrap();
                    }
                    2 => {
                        ours.jcc(Cond::L, labels[l]);
                        theirs.jl(their_labels[l]).unwrap();
                    }
                    3 => {
                        ours.jmp(labels[l]);
                        theirs.jmp(their_labels[l]).unwrap();
                    }
                    4 => {
                        ours.call(0x7000_0010);
                        theirs.call(0x7000_0010).unwrap();
                    }
                    _ => {
                        let i = simple(rng.below(if case % 3 == 0 { 5 } else { 3 }));
                        ours.add(i).unwrap();
                        theirs.add_instruction(i).unwrap();
                    }
                }
            }
            for (l, done) in bound.iter().enumerate() {
                if !done {
                    ours.bind(labels[l]);
                    theirs.set_label(&mut their_labels[l]).unwrap();
                    theirs.zero_bytes().unwrap();
                }
            }
            assert_eq!(ours.instructions() as usize, theirs.instructions().len());
            let base = 0x0040_0000;
            let got = ours.finish(base);
            let want = theirs.assemble_options(base as u64, BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS).unwrap();
            assert_eq!(got.bytes, want.inner.code_buffer, "case {case}");
            for (l, tl) in labels.iter().zip(&their_labels) {
                assert_eq!(got.offset(*l) as u64, want.label_ip(tl).unwrap() - base as u64, "case {case}");
            }
            for i in iced_x86::Decoder::new(32, &got.bytes, iced_x86::DecoderOptions::NONE) {
                match i.code() {
                    Code::Jl_rel8_32 | Code::Jmp_rel8_32 => short += 1,
                    Code::Jl_rel32_32 | Code::Jmp_rel32_32 => near += 1,
                    _ => {}
                }
            }
        }
        assert!(short > 0 && near > 0);
    }
}
