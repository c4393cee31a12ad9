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

use crate::abi::{InsnIndex, MachineCode, CODE_BASE};
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
    let mut insns = DECODED.with(|d| d.take());
    let end = decode_into(&code.bytes, &mut insns);
    let result = check_decoded(code, &insns).map(|()| {
        let at = |i: &Instruction| (i.ip() - CODE_BASE as u64) as usize;
        InsnIndex::from_decoding(&code.bytes, insns.iter().map(at), end)
    });
    // A rare large program's list is not kept: what a thread keeps stays bounded, so a
    // long campaign's resident set does not ratchet up with the largest program it met.
    if insns.capacity() <= SPARE_DECODED {
        DECODED.with(|d| d.set(insns));
    }
    result
}

/// The most instructions a kept list may have room for (40 bytes each: 320 KiB), well
/// above a default program's.
const SPARE_DECODED: usize = 1 << 13;

thread_local! {
    /// The instruction list of this thread's last check, reused by the next. A program's
    /// list is tens of kilobytes (40 bytes an instruction), above the fixed mmap threshold
    /// of the long-running commands (`measure::memory::return_large_blocks` in the
    /// harness), so a fresh list per check was mapped, faulted in page by page, copied as
    /// it grew and unmapped again for every program compiled.
    static DECODED: std::cell::Cell<Vec<Instruction>> = const { std::cell::Cell::new(Vec::new()) };
}

/// [`check`] over the decoded instructions of `code`.
fn check_decoded(code: &MachineCode, insns: &[Instruction]) -> Result<(), Vec<UndefinedFlag>> {
    // The instructions are decoded in address order, so an address is found by binary
    // search. Each instruction's transfer is `(undefined & keep) | make`, computed once.
    let index = |ip: u64| insns.binary_search_by_key(&ip, |i| i.ip()).ok();
    let transfers: Vec<(u32, u32)> = insns.iter().map(transfer_masks).collect();
    let mut before: Vec<Option<u32>> = vec![None; insns.len()];
    let entry = CODE_BASE as u64 + code.entry as u64;
    // The least fixpoint of a monotone transfer with union at joins does not depend on
    // the order the worklist is taken in.
    let mut work: Vec<usize> = vec![];
    let mut queued = vec![false; insns.len()];
    if let Some(k) = index(entry) {
        before[k] = Some(STATUS);
        work.push(k);
        queued[k] = true;
    }
    while let Some(k) = work.pop() {
        queued[k] = false;
        let i = &insns[k];
        let (keep, make) = transfers[k];
        let after = (before[k].unwrap_or(0) & keep) | make;
        for next in successors(i, k, insns.len(), index).into_iter().flatten() {
            let merged = before[next].unwrap_or(0) | after;
            if before[next] != Some(merged) {
                before[next] = Some(merged);
                if !queued[next] {
                    queued[next] = true;
                    work.push(next);
                }
            }
        }
    }
    let mut errors = vec![];
    // Made only for a finding: a formatter costs more to make than the rest of a check.
    let mut fmt: Option<IntelFormatter> = None;
    for (k, i) in insns.iter().enumerate() {
        let Some(undefined) = before[k] else { continue };
        let bad = i.rflags_read() & undefined & STATUS;
        if bad != 0 {
            let mut text = String::new();
            fmt.get_or_insert_with(IntelFormatter::new).format(i, &mut text);
            errors.push(UndefinedFlag { address: i.ip(), instruction: text, flags: bad });
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Decodes `bytes` into `out` (emptied first), one instruction after another from the
/// first; returns the offset where decoding stopped.
fn decode_into(bytes: &[u8], out: &mut Vec<Instruction>) -> usize {
    let mut d = Decoder::with_ip(32, bytes, CODE_BASE as u64, DecoderOptions::NONE);
    out.clear();
    while d.can_decode() {
        out.push(d.decode());
    }
    d.position()
}

/// The undefined flags after `i` given those before it, as two masks: they are
/// `(undefined & keep) | make`.
fn transfer_masks(i: &Instruction) -> (u32, u32) {
    if i.flow_control() == FlowControl::Call {
        return (0, STATUS);
    }
    let written = i.rflags_written() | i.rflags_set() | i.rflags_cleared();
    let mut make = i.rflags_undefined();
    if count_may_be_zero(i) {
        make |= i.rflags_modified() & STATUS;
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

/// The instructions that may run after instruction `k`.
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
