//! The fixed x86-32 execution environment that compiled code and the emulator runner
//! share: where code, stack and runtime helpers live, how compiled functions and helpers
//! are called, and how traps are raised. The heap and callframe addresses are in
//! [`crate::ir`] because the IR semantics already fix them.
//!
//! * Compiled code is loaded at [`CODE_BASE`]; [`MachineCode::entry`] is the offset of the
//!   function's first instruction.
//! * Entry is cdecl: arguments on the stack, first argument at `[esp+4]` on entry, an
//!   `i64` argument as two dwords (low first); the result in `eax` (`i32`) or `edx:eax`
//!   (`i64`); `ebx esi edi ebp` and `esp` preserved; the return address is
//!   [`RETURN_SENTINEL`].
//! * Runtime helpers are called with cdecl at [`helper_address`]; they preserve
//!   `ebx esi edi ebp`, clobber `eax ecx edx` and the flags (the emulator poisons every
//!   caller-saved register the helper does not return in), and return like the entry.
//! * Division traps: 32-bit `div`/`idiv` raise #DE (vector 0) by themselves. The 64-bit
//!   division helpers ([`RuntimeHelper::Sdiv64`] ...) check the same conditions as the
//!   IR and end the run with `DivideError` when one holds.
//! * Check traps: `trapif(c, code)` executes `int 0x41` ([`CHECK_TRAP_VECTOR`]) with the
//!   code in `eax`.

use crate::helpers::HelperKind;

/// Where compiled code is loaded.
pub const CODE_BASE: u32 = 0x0040_0000;
/// The largest code image the runner maps.
pub const CODE_SIZE_MAX: u32 = 0x0010_0000;
/// Address of the first runtime helper stub.
pub const HELPER_BASE: u32 = 0x0030_0000;
/// Distance between helper addresses.
pub const HELPER_STRIDE: u32 = 16;
/// The lowest address of the stack region.
pub const STACK_BASE: u32 = 0x0080_0000;
/// Size of the stack region; `esp` starts near its top.
pub const STACK_SIZE: u32 = 0x0004_0000;
/// The return address the entry function is called with; reaching it ends the run.
pub const RETURN_SENTINEL: u32 = 0x0050_0000;
/// The interrupt vector of a failed `trapif` check (`int 0x41`, code in `eax`).
pub const CHECK_TRAP_VECTOR: u8 = 0x41;

/// Every routine compiled code may call: the IR's helpers and the backend's own
/// 64-bit division routines.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum RuntimeHelper {
    /// An IR helper (`call @name(...)`).
    Ir(HelperKind),
    /// `(i64 a, i64 b) -> i64`: signed 64-bit division, trapping as `sdiv` does.
    Sdiv64,
    /// Unsigned 64-bit division.
    Udiv64,
    /// Signed 64-bit remainder.
    Srem64,
    /// Unsigned 64-bit remainder.
    Urem64,
}

impl RuntimeHelper {
    /// Every runtime helper, in address order.
    pub fn all() -> Vec<RuntimeHelper> {
        let mut v: Vec<RuntimeHelper> = HelperKind::ALL.into_iter().map(RuntimeHelper::Ir).collect();
        v.extend(DIV64);
        v
    }

    /// The address compiled code calls.
    pub fn address(self) -> u32 {
        helper_address(self)
    }

    /// The helper at an address, if any.
    pub fn at(addr: u32) -> Option<RuntimeHelper> {
        RuntimeHelper::all().into_iter().find(|h| h.address() == addr)
    }
}

impl std::fmt::Display for RuntimeHelper {
    /// The name a listing shows: `@log` for an IR helper, `@__sdiv64` and the like for the
    /// backend's own routines.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuntimeHelper::Ir(h) => write!(f, "@{}", h.name()),
            RuntimeHelper::Sdiv64 => f.write_str("@__sdiv64"),
            RuntimeHelper::Udiv64 => f.write_str("@__udiv64"),
            RuntimeHelper::Srem64 => f.write_str("@__srem64"),
            RuntimeHelper::Urem64 => f.write_str("@__urem64"),
        }
    }
}

/// The backend's own helpers, after the IR's in address order ([`RuntimeHelper::all`]).
const DIV64: [RuntimeHelper; 4] = [RuntimeHelper::Sdiv64, RuntimeHelper::Udiv64, RuntimeHelper::Srem64, RuntimeHelper::Urem64];

/// The address of a runtime helper (its place in [`RuntimeHelper::all`], found without
/// making the list: the emitter asks at every call it emits).
pub fn helper_address(h: RuntimeHelper) -> u32 {
    let index = match h {
        RuntimeHelper::Ir(k) => HelperKind::ALL.iter().position(|x| *x == k),
        h => DIV64.iter().position(|x| *x == h).map(|i| HelperKind::ALL.len() + i),
    };
    HELPER_BASE + HELPER_STRIDE * index.expect("every helper is listed") as u32
}

/// A compiled function: bytes to load at [`CODE_BASE`] (calls to helpers are relative to it).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MachineCode {
    pub bytes: Vec<u8>,
    /// The index of the instructions of `bytes` that the undefined-flags check leaves, so
    /// that the emulator does not decode them again; `None` when no check ran.
    pub index: Option<InsnIndex>,
    /// Offset of the entry point within `bytes`.
    pub entry: u32,
    /// What the code's size says about how long and how deep a correct run can go.
    pub shape: CodeShape,
    /// Where each block's code starts (offsets into `bytes`), in layout order, for
    /// listings; empty for hand-written code.
    pub blocks: Vec<(crate::ir::Block, u32)>,
}

impl MachineCode {
    /// Hand-written code entered at its first byte, with no shape or block facts.
    pub fn from_bytes(bytes: Vec<u8>) -> MachineCode {
        MachineCode { bytes, index: None, entry: 0, shape: CodeShape::default(), blocks: vec![] }
    }
}

/// The linear decoding of a code's bytes, by which the emulator's instruction budget
/// counts the instructions of a block: for each offset, the number of the instruction
/// starting there when the bytes are decoded one instruction after another from the first
/// (`u32::MAX` where none starts), and one more entry for the end, set only when decoding
/// stopped exactly there. The undefined-flags check decodes the code anyway and leaves
/// the index in [`MachineCode::index`]. An index keeps a copy of the bytes it describes
/// and answers only for those ([`InsnIndex::for_bytes`]), so code changed after the check
/// is decoded anew, never counted by a stale index.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct InsnIndex {
    bytes: Vec<u8>,
    starts: Vec<u32>,
}

impl InsnIndex {
    /// The index of `bytes` from their linear decoding at [`CODE_BASE`], whose starts
    /// [`fill_index`] has written already.
    pub(crate) fn with_starts(bytes: &[u8], starts: Vec<u32>) -> InsnIndex {
        debug_assert_eq!(starts.len(), bytes.len() + 1);
        InsnIndex { bytes: bytes.to_vec(), starts }
    }

    /// The index, if it describes exactly `bytes`.
    pub fn for_bytes(&self, bytes: &[u8]) -> Option<&[u32]> {
        (self.bytes == bytes).then_some(&self.starts[..])
    }

    /// Decodes `bytes` linearly at [`CODE_BASE`] and writes their index into `starts`
    /// (emptied first; kept by a caller that indexes code after code).
    pub fn decode_into(bytes: &[u8], starts: &mut Vec<u32>) {
        let mut decoder = iced_x86::Decoder::with_ip(32, bytes, CODE_BASE as u64, iced_x86::DecoderOptions::NONE);
        let mut ins = iced_x86::Instruction::default();
        let end = std::cell::Cell::new(0);
        let positions = std::iter::from_fn(|| {
            if !decoder.can_decode() {
                end.set(decoder.position());
                return None;
            }
            let at = decoder.position();
            decoder.decode_out(&mut ins);
            Some(at)
        });
        fill_index(bytes.len(), starts, positions, || end.get());
    }
}

/// Writes into `starts` the index of code of `len` bytes whose linear decoding has
/// instructions at `positions`, in order, and stopped at `end()` (asked once they are all
/// seen): at each offset where an instruction starts, its number; `u32::MAX` elsewhere;
/// at `len`, the number of instructions when decoding stopped exactly there.
pub(crate) fn fill_index(len: usize, starts: &mut Vec<u32>, positions: impl Iterator<Item = usize>, end: impl FnOnce() -> usize) {
    starts.clear();
    starts.resize(len + 1, u32::MAX);
    let mut k = 0u32;
    for at in positions {
        starts[at] = k;
        k += 1;
    }
    // The last instruction may run past the end; the end is an instruction boundary only
    // when decoding stopped exactly there.
    if end() == len {
        starts[len] = k;
    }
}

/// The facts about a compiled function that bound what a correct run of it executes
/// (the emulator's instruction budget) and how much stack it needs. Hand-written code
/// leaves them at zero.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct CodeShape {
    /// Instructions in the whole function.
    pub insns: u32,
    /// The most instructions emitted for one block of the IR (its statements, the copies
    /// placed in it, its terminator, a switch's chain of compares). Each block's code has
    /// no loop of its own, so one entry into a block executes at most this many.
    pub max_block_insns: u32,
    /// Bytes of stack the frame takes below the return address (saved registers, homes,
    /// spill slots, outgoing arguments).
    pub frame_bytes: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each helper's address is its place in the list of every helper, and the list
    /// names each helper once.
    #[test]
    fn helper_addresses_follow_the_list() {
        let all = RuntimeHelper::all();
        for (k, &h) in all.iter().enumerate() {
            assert_eq!(helper_address(h), HELPER_BASE + HELPER_STRIDE * k as u32, "{h:?}");
            assert_eq!(RuntimeHelper::at(h.address()), Some(h));
        }
        assert_eq!(all.len(), HelperKind::ALL.len() + 4);
    }
}
