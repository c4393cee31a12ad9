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
        v.extend([RuntimeHelper::Sdiv64, RuntimeHelper::Udiv64, RuntimeHelper::Srem64, RuntimeHelper::Urem64]);
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

/// The address of a runtime helper.
pub fn helper_address(h: RuntimeHelper) -> u32 {
    let index = RuntimeHelper::all().iter().position(|x| *x == h).expect("every helper is listed") as u32;
    HELPER_BASE + HELPER_STRIDE * index
}

/// A compiled function: bytes to load at [`CODE_BASE`] (calls to helpers are relative to it).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MachineCode {
    pub bytes: Vec<u8>,
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
        MachineCode { bytes, entry: 0, shape: CodeShape::default(), blocks: vec![] }
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
