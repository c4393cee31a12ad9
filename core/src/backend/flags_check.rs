//! The undefined-flags check: no emitted instruction may read an arithmetic flag that the
//! Intel manual leaves undefined at that point (SF ZF AF PF after `imul`, OF after a
//! shift by more than one, all of them after `bsf`...), or one whose value depends on a
//! shift count the code does not know (`shl r, cl` leaves every flag unchanged when the
//! count is 0), or one the caller or a runtime helper left (flags are not preserved
//! across calls, and hold garbage at entry). Such code is not wrong on one machine: it
//! is right or wrong depending on the machine, so the emulator and the CPU may disagree
//! on it, and the disagreement would be the compiler's fault, not an emulator's.
//!
//! It works on the machine code itself, decoded with `iced-x86`, so it sees exactly what
//! runs: a forward may-be-undefined dataflow over the code's control-flow graph (blocks
//! split at branch targets and after branches), with iced's per-instruction facts of
//! which flags each instruction reads, writes, sets, clears and leaves undefined.
//! `compile_validated` runs it after emission, as the harness's checks do.

use crate::abi::{fill_index, InsnIndex, MachineCode, CODE_BASE};
use iced_x86::{Decoder, DecoderOptions, FlowControl, Formatter, Instruction, IntelFormatter, Mnemonic, OpKind, RflagsBits};

/// The arithmetic flags the check follows.
const STATUS: u32 = RflagsBits::OF | RflagsBits::SF | RflagsBits::ZF | RflagsBits::AF | RflagsBits::CF | RflagsBits::PF;

/// An instruction that reads a flag that may be undefined when it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UndefinedFlag {
    /// The instruction's address.
    pub address: u64,
    /// The instruction as the listing prints it (Intel syntax).
    pub instruction: String,
    /// The flags it reads that may be undefined (`RflagsBits`).
    pub flags: u32,
}

impl std::fmt::Display for UndefinedFlag {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{:#010x} `{}` reads {} while undefined", self.address, self.instruction, flag_names(self.flags))
    }
}

/// Checks `code`; one error per instruction that reads a possibly undefined flag. When
/// none does, the index of its instructions (for the emulator's budget), from the same
/// decoding.
pub fn check(code: &MachineCode) -> Result<InsnIndex, Vec<UndefinedFlag>> {
    let mut scratch = SCRATCH.with(|d| d.take());
    let end = decode_into(&code.bytes, &mut scratch.insns);
    // The index serves the dataflow first (an address to its instruction), then the
    // emulator.
    let mut starts = vec![];
    fill_index(code.bytes.len(), &mut starts, scratch.insns.iter().map(|i| i.at as usize), || end);
    let result = check_decoded(code, &starts, &mut scratch).map(|()| InsnIndex::with_starts(&code.bytes, starts));
    // A rare large program's lists are not kept: what a thread keeps stays bounded, so a
    // long campaign's resident set does not ratchet up with the largest program it met.
    if scratch.insns.capacity() <= SPARE_DECODED {
        SCRATCH.with(|d| d.set(scratch));
    }
    result
}

/// The most instructions a kept list may have room for (24 bytes each: 192 KiB, and 16
/// bytes each of block numbers and blocks), well above a default program's.
const SPARE_DECODED: usize = 1 << 13;

thread_local! {
    /// The lists of this thread's last check, reused by the next. A program's instruction
    /// list is kilobytes, above the fixed mmap threshold of the long-running commands
    /// (`measure::memory::return_large_blocks` in the harness), so a fresh list per check
    /// was mapped, faulted in page by page, copied as it grew and unmapped again for every
    /// program compiled.
    static SCRATCH: std::cell::Cell<Scratch> = const { std::cell::Cell::new(Scratch::new()) };
}

/// What one check works in: the decoded instructions as the dataflow needs them, and the
/// basic blocks of the dataflow.
#[derive(Default)]
struct Scratch {
    insns: Vec<Insn>,
    /// The block that starts at each instruction (`NO_BLOCK` where none starts).
    block_at: Vec<u32>,
    blocks: Vec<BasicBlock>,
    work: Vec<u32>,
}

impl Scratch {
    const fn new() -> Scratch {
        Scratch { insns: Vec::new(), block_at: Vec::new(), blocks: Vec::new(), work: Vec::new() }
    }
}

const NO_BLOCK: u32 = u32::MAX;

/// One instruction's part in the dataflow, asked of iced once: the undefined flags after
/// it are `(undefined & keep) | make`, and it reads `reads`.
#[derive(Clone, Copy)]
struct Facts {
    keep: u32,
    make: u32,
    reads: u32,
}

/// Where control may go after an instruction (from iced's flow control).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// On to the next instruction only (calls included: they return).
    Next,
    /// To the branch target only.
    Jump,
    /// To the branch target or the next instruction.
    Branch,
    /// Nowhere in the code: a return, an interrupt, an exception or an indirect branch.
    Stop,
}

/// One decoded instruction as the check needs it, asked of iced once while decoding (the
/// instruction itself is decoded again only to print a finding).
#[derive(Clone, Copy)]
struct Insn {
    /// Its offset in the code.
    at: u32,
    /// For a `Jump` or `Branch`: the instruction at the target, once resolved
    /// ([`NO_INSN`] when none starts there); before, the target's address.
    target: u32,
    facts: Facts,
    flow: Flow,
}

const NO_INSN: u32 = u32::MAX;

impl Insn {
    fn of(i: &Instruction) -> Insn {
        let flow_control = i.flow_control();
        let (keep, make) = transfer_masks(i, flow_control);
        let flow = match flow_control {
            FlowControl::UnconditionalBranch => Flow::Jump,
            FlowControl::ConditionalBranch => Flow::Branch,
            FlowControl::Return | FlowControl::Interrupt | FlowControl::Exception | FlowControl::IndirectBranch => Flow::Stop,
            _ => Flow::Next,
        };
        // Addresses of 32-bit code fit in 32 bits; one that does not names no instruction.
        let target = match flow {
            Flow::Jump | Flow::Branch => u32::try_from(i.near_branch_target()).unwrap_or(NO_INSN),
            _ => NO_INSN,
        };
        let at = (i.ip() - CODE_BASE as u64) as u32;
        Insn { at, target, facts: Facts { keep, make, reads: i.rflags_read() & STATUS }, flow }
    }

    /// The instructions that may run after this one, the `k`-th of `len`.
    fn successors(&self, k: usize, len: usize) -> [Option<usize>; 2] {
        let target = (self.target != NO_INSN).then_some(self.target as usize);
        let next = (k + 1 < len).then_some(k + 1);
        match self.flow {
            Flow::Jump => [target, None],
            Flow::Branch => [target, next],
            Flow::Stop => [None, None],
            Flow::Next => [next, None],
        }
    }
}

/// A run of instructions entered only at its first and left only after its last (split
/// at the entry, at branch targets and after branches). Its transfer is its
/// instructions' transfers composed, `(undefined & keep) | make`; one of its instructions
/// reads a flag that may be undefined exactly when `(entry & reads_kept) | reads_made`
/// is not empty, where `entry` is what may be undefined on entry.
#[derive(Clone, Copy)]
struct BasicBlock {
    first: u32,
    /// One past its last instruction.
    end: u32,
    keep: u32,
    make: u32,
    reads_kept: u32,
    reads_made: u32,
    /// The flags that may be undefined on entry; `None` while it is not known to be
    /// reached.
    entry: Option<u32>,
    queued: bool,
}

/// [`check`] over the decoded instructions of `code` (`scratch.insns`), whose index
/// `starts` ([`fill_index`]) finds the instruction at an offset.
fn check_decoded(code: &MachineCode, starts: &[u32], scratch: &mut Scratch) -> Result<(), Vec<UndefinedFlag>> {
    let Scratch { insns, block_at, blocks, work } = scratch;
    let len = insns.len();
    // The instruction starting at `address` (the index's entry past the last instruction
    // is the count, no instruction).
    let index = |address: u64| {
        let at = usize::try_from(address.checked_sub(CODE_BASE as u64)?).ok()?;
        starts.get(at).map(|&k| k as usize).filter(|&k| k < len)
    };
    let Some(entry) = index(CODE_BASE as u64 + code.entry as u64) else { return Ok(()) };
    // Branch targets resolved to instructions; blocks start at the entry, at every branch
    // target and after every instruction that does not go on to the next.
    block_at.clear();
    block_at.resize(len, NO_BLOCK);
    block_at[entry] = 0;
    for k in 0..len {
        let i = &mut insns[k];
        if i.flow == Flow::Next {
            continue;
        }
        if i.target != NO_INSN {
            i.target = index(i.target as u64).map_or(NO_INSN, |t| t as u32);
        }
        for next in i.successors(k, len).into_iter().flatten() {
            block_at[next] = 0;
        }
        if let Some(next) = block_at.get_mut(k + 1) {
            *next = 0;
        }
    }
    let insns = &insns[..];
    // The blocks in address order, each with its instructions' transfers composed.
    blocks.clear();
    for (k, i) in insns.iter().enumerate() {
        if k == 0 || block_at[k] != NO_BLOCK {
            block_at[k] = blocks.len() as u32;
            blocks.push(BasicBlock {
                first: k as u32,
                end: k as u32,
                keep: STATUS,
                make: 0,
                reads_kept: 0,
                reads_made: 0,
                entry: None,
                queued: false,
            });
        }
        let b = blocks.last_mut().expect("instruction 0 starts a block");
        let f = i.facts;
        b.reads_kept |= f.reads & b.keep;
        b.reads_made |= f.reads & b.make;
        b.keep &= f.keep;
        b.make = (b.make & f.keep) | f.make;
        b.end = k as u32 + 1;
    }
    // The least fixpoint over the blocks; that of a monotone transfer with union at joins
    // does not depend on the order the worklist is taken in. Inside a block each
    // instruction has one predecessor, the one before it, so the blocks' fixpoint is the
    // instructions'.
    work.clear();
    let first = block_at[entry] as usize;
    blocks[first].entry = Some(STATUS);
    blocks[first].queued = true;
    work.push(first as u32);
    while let Some(b) = work.pop() {
        let b = &mut blocks[b as usize];
        b.queued = false;
        let (after, last) = ((b.entry.unwrap_or(0) & b.keep) | b.make, b.end as usize - 1);
        for next in insns[last].successors(last, len).into_iter().flatten() {
            let s = block_at[next] as usize;
            let merged = blocks[s].entry.unwrap_or(0) | after;
            if blocks[s].entry != Some(merged) {
                blocks[s].entry = Some(merged);
                if !std::mem::replace(&mut blocks[s].queued, true) {
                    work.push(s as u32);
                }
            }
        }
    }
    let mut errors = vec![];
    // Made only for a finding: a formatter costs more to make than the rest of a check,
    // and the decoder gives the instruction found again.
    let mut fmt: Option<(IntelFormatter, Decoder)> = None;
    for b in blocks.iter() {
        let Some(mut undefined) = b.entry else { continue };
        if (undefined & b.reads_kept) | b.reads_made == 0 {
            continue;
        }
        for i in &insns[b.first as usize..b.end as usize] {
            let f = i.facts;
            let bad = f.reads & undefined;
            if bad != 0 {
                let (fmt, d) = fmt.get_or_insert_with(|| (IntelFormatter::new(), decoder(&code.bytes)));
                let address = CODE_BASE as u64 + i.at as u64;
                d.set_position(i.at as usize).expect("an instruction decoded from these bytes");
                d.set_ip(address);
                let mut text = String::new();
                fmt.format(&d.decode(), &mut text);
                errors.push(UndefinedFlag { address, instruction: text, flags: bad });
            }
            undefined = (undefined & f.keep) | f.make;
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The decoder of the check: 32-bit code at [`CODE_BASE`].
fn decoder(bytes: &[u8]) -> Decoder<'_> {
    Decoder::with_ip(32, bytes, CODE_BASE as u64, DecoderOptions::NONE)
}

/// Decodes `bytes` into `out` (emptied first), one instruction after another from the
/// first; returns the offset where decoding stopped.
fn decode_into(bytes: &[u8], out: &mut Vec<Insn>) -> usize {
    let mut d = decoder(bytes);
    let mut i = Instruction::default();
    out.clear();
    while d.can_decode() {
        d.decode_out(&mut i);
        out.push(Insn::of(&i));
    }
    d.position()
}

/// The undefined flags after `i` (whose flow control is `flow`) given those before it, as
/// two masks: they are `(undefined & keep) | make`.
fn transfer_masks(i: &Instruction, flow: FlowControl) -> (u32, u32) {
    if flow == FlowControl::Call {
        return (0, STATUS);
    }
    // Most instructions (the moves) modify no flag: one question to iced answers for
    // them what the four below would (modified flags are the union of those four).
    let modified = i.rflags_modified();
    if modified == 0 {
        return (STATUS, 0);
    }
    let written = i.rflags_written() | i.rflags_set() | i.rflags_cleared();
    let mut make = i.rflags_undefined();
    if count_may_be_zero(i) {
        make |= modified & STATUS;
    }
    (!written & STATUS, make & STATUS)
}

fn count_may_be_zero(i: &Instruction) -> bool {
    use Mnemonic::*;
    if !matches!(i.mnemonic(), Shl | Sal | Shr | Sar | Rol | Ror | Rcl | Rcr | Shld | Shrd) {
        return false;
    }
    let last = i.op_count() - 1;
    match i.op_kind(last) {
        OpKind::Register => true,
        OpKind::Immediate8 => i.immediate8() & 31 == 0,
        _ => false,
    }
}

fn flag_names(bits: u32) -> String {
    let names = [
        (RflagsBits::OF, "OF"),
        (RflagsBits::SF, "SF"),
        (RflagsBits::ZF, "ZF"),
        (RflagsBits::AF, "AF"),
        (RflagsBits::PF, "PF"),
        (RflagsBits::CF, "CF"),
    ];
    names.iter().filter(|(b, _)| bits & b != 0).map(|(_, n)| *n).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use iced_x86::code_asm::*;

    fn code(build: impl FnOnce(&mut CodeAssembler) -> Result<(), IcedError>) -> MachineCode {
        let mut a = CodeAssembler::new(32).unwrap();
        build(&mut a).unwrap();
        MachineCode::from_bytes(a.assemble(CODE_BASE as u64).unwrap())
    }

    #[test]
    fn defined_flags_pass() {
        let c = code(|a| {
            a.cmp(eax, ecx)?;
            a.setl(al)?;
            a.add(eax, ecx)?;
            a.adc(edx, 0)?;
            a.ret()
        });
        assert!(check(&c).is_ok());
    }

    #[test]
    fn zf_after_imul_is_undefined() {
        let c = code(|a| {
            a.imul_2(eax, ecx)?;
            a.sete(al)?;
            a.ret()
        });
        let e = check(&c).unwrap_err();
        assert_eq!(e.len(), 1);
        assert!(e[0].instruction.contains("sete") && e[0].flags == RflagsBits::ZF, "{e:?}");
    }

    #[test]
    fn flags_after_a_shift_by_cl_depend_on_the_count() {
        let c = code(|a| {
            a.test(eax, eax)?;
            a.shl(edx, cl)?;
            a.setne(al)?;
            a.ret()
        });
        assert!(check(&c).unwrap_err()[0].flags & RflagsBits::ZF != 0);
        // A shift by 1 defines ZF (and OF).
        let ok = code(|a| {
            a.shl(edx, 1)?;
            a.setne(al)?;
            a.seto(al)?;
            a.ret()
        });
        assert!(check(&ok).is_ok());
    }

    #[test]
    fn flags_at_entry_and_after_calls_are_garbage() {
        let entry = code(|a| {
            a.setb(al)?;
            a.ret()
        });
        assert!(check(&entry).is_err());
        let after_call = code(|a| {
            a.cmp(eax, 1)?;
            a.call(0x0030_0000u64)?;
            a.sete(al)?;
            a.ret()
        });
        assert!(check(&after_call).is_err());
    }

    #[test]
    fn undefined_on_one_path_is_undefined_at_the_join() {
        // b0: test; je b2 ; b1: imul ; b2: sete  -> ZF may come from imul.
        let c = code(|a| {
            let mut join = a.create_label();
            a.test(eax, eax)?;
            a.je(join)?;
            a.imul_2(eax, ecx)?;
            a.set_label(&mut join)?;
            a.sete(al)?;
            a.ret()
        });
        assert!(check(&c).is_err());
    }

    use crate::backend::TestRng as Rng;

    /// The instructions that may run after instruction `k`, found by `index` (the
    /// reference dataflow's own reading of iced's flow control).
    fn successors(i: &Instruction, k: usize, len: usize, index: impl Fn(u64) -> Option<usize>) -> [Option<usize>; 2] {
        let target = || index(i.near_branch_target());
        let next = (k + 1 < len).then_some(k + 1);
        match i.flow_control() {
            FlowControl::UnconditionalBranch => [target(), None],
            FlowControl::ConditionalBranch => [target(), next],
            FlowControl::Return | FlowControl::Interrupt | FlowControl::Exception | FlowControl::IndirectBranch => [None, None],
            _ => [next, None],
        }
    }

    /// The findings (address and flags) of the dataflow taken instruction by instruction,
    /// each instruction's successors found by a search of the whole list, swept in address
    /// order until nothing changes.
    fn instruction_by_instruction(code: &MachineCode) -> Vec<(u64, u32)> {
        let insns: Vec<Instruction> = Decoder::with_ip(32, &code.bytes, CODE_BASE as u64, DecoderOptions::NONE).into_iter().collect();
        let index = |ip: u64| insns.iter().position(|i| i.ip() == ip);
        let mut before: Vec<Option<u32>> = vec![None; insns.len()];
        if let Some(k) = index(CODE_BASE as u64 + code.entry as u64) {
            before[k] = Some(STATUS);
        }
        let mut changed = true;
        while changed {
            changed = false;
            for (k, i) in insns.iter().enumerate() {
                let Some(undefined) = before[k] else { continue };
                let (keep, make) = transfer_masks(i, i.flow_control());
                let after = (undefined & keep) | make;
                for next in successors(i, k, insns.len(), index).into_iter().flatten() {
                    let merged = Some(before[next].unwrap_or(0) | after);
                    changed |= before[next] != merged;
                    before[next] = merged;
                }
            }
        }
        let read = |(i, b): (&Instruction, &Option<u32>)| Some((i.ip(), i.rflags_read() & (*b)? & STATUS)).filter(|f| f.1 != 0);
        insns.iter().zip(&before).filter_map(read).collect()
    }

    /// Random code (flag writers, readers and destroyers, shifts, calls, returns, branches
    /// forward and back, entered at a random instruction): the check's findings, made
    /// over basic blocks, are those of the dataflow over single instructions.
    #[test]
    fn the_findings_of_the_dataflow_over_single_instructions() {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        let (mut clean, mut found) = (0, 0);
        for case in 0..400 {
            let pieces = 1 + rng.below(if case % 10 == 0 { 400 } else { 40 });
            let nlabels = 1 + rng.below(pieces / 3 + 1);
            let mut a = CodeAssembler::new(32).unwrap();
            let mut labels: Vec<CodeLabel> = (0..nlabels).map(|_| a.create_label()).collect();
            let mut bound = vec![false; nlabels as usize];
            for _ in 0..pieces {
                let l = rng.below(nlabels) as usize;
                match rng.below(18) {
                    0 | 1 if !bound[l] => {
                        bound[l] = true;
                        a.set_label(&mut labels[l]).unwrap();
                        a.zero_bytes().unwrap();
                    }
                    2 => a.je(labels[l]).unwrap(),
                    3 => a.jb(labels[l]).unwrap(),
                    4 => a.jmp(labels[l]).unwrap(),
                    5 => a.ret().unwrap(),
                    6 => a.call(0x0030_0000u64).unwrap(),
                    7 => a.cmp(eax, ecx).unwrap(),
                    8 => a.test(eax, eax).unwrap(),
                    9 => a.imul_2(eax, ecx).unwrap(),
                    10 => a.shl(edx, cl).unwrap(),
                    11 => a.shl(edx, 1).unwrap(),
                    12 => a.bsf(eax, ecx).unwrap(),
                    13 => a.inc(eax).unwrap(),
                    14 => a.sete(al).unwrap(),
                    15 => a.setb(al).unwrap(),
                    16 => a.adc(edx, 0).unwrap(),
                    _ => a.mov(eax, ecx).unwrap(),
                }
            }
            for (l, done) in bound.iter().enumerate() {
                if !done {
                    a.set_label(&mut labels[l]).unwrap();
                    a.zero_bytes().unwrap();
                }
            }
            a.ret().unwrap();
            let mut c = MachineCode::from_bytes(a.assemble(CODE_BASE as u64).unwrap());
            let starts: Vec<u64> = Decoder::with_ip(32, &c.bytes, 0, DecoderOptions::NONE).into_iter().map(|i| i.ip()).collect();
            c.entry = starts[rng.below(starts.len() as u64) as usize] as u32;
            let want = instruction_by_instruction(&c);
            let got: Vec<(u64, u32)> = match check(&c) {
                Ok(_) => vec![],
                Err(e) => e.iter().map(|f| (f.address, f.flags)).collect(),
            };
            assert_eq!(got, want, "case {case}");
            if want.is_empty() {
                clean += 1;
            } else {
                found += 1;
            }
        }
        assert!(clean > 20 && found > 20, "{clean} clean, {found} with findings");
    }

    #[test]
    fn the_index_left_is_the_decoding_of_the_bytes_checked() {
        let c = code(|a| {
            let mut out = a.create_label();
            a.mov(eax, 0x1234_5678)?;
            a.test(eax, eax)?;
            a.je(out)?;
            a.add(eax, dword_ptr(ecx + 8))?;
            a.set_label(&mut out)?;
            a.ret()
        });
        let index = check(&c).unwrap();
        let mut decoded = vec![];
        InsnIndex::decode_into(&c.bytes, &mut decoded);
        let starts = index.for_bytes(&c.bytes).unwrap();
        assert_eq!(starts, &decoded[..]);
        // `mov eax, imm32` is 5 bytes, `test eax, eax` 2: instructions 0, 1 and 2 start at
        // offsets 0, 5 and 7, and nothing starts inside the first.
        assert_eq!((starts[0], starts[5], starts[7]), (0, 1, 2));
        assert!(starts[1..5].iter().all(|&k| k == u32::MAX));
        assert_eq!(starts[c.bytes.len()], 5);
        // Other bytes get no answer from it, even of the same length.
        let mut changed = c.bytes.clone();
        changed[1] ^= 1;
        assert!(index.for_bytes(&changed).is_none());
    }
}
