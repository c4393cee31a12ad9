//! The emulator runner: executes compiled x86-32 code in one reused Unicorn instance in
//! the environment `tandem_core::abi` fixes, and reads the run back as an [`Outcome`] or
//! reports a [`Finding`] when the code broke a rule the IR semantics or cdecl impose.
//!
//! Memory map (every other page is unmapped, so a stray access faults):
//!
//! | region | addresses | rights | contents at the start of a run |
//! |---|---|---|---|
//! | heap | `HEAP_BASE`, one page | rw | the run's initial heap (guard pages on both sides) |
//! | callframe | `CALLFRAME_BASE`, one page | rw | the slots of the function's callframe variables, the rest [`CALLFRAME_POISON`] |
//! | helper stubs | `HELPER_BASE`, one page | rx | `hlt`; a code hook intercepts every stub |
//! | code | `CODE_BASE` .. `+CODE_SIZE_MAX` | rx | the machine code, then `int3` |
//! | return sentinel | `RETURN_SENTINEL`, one page | rx | `int3`; reaching it ends the run |
//! | stack | `STACK_BASE` .. `+STACK_SIZE` | rw | [`STACK_POISON`], the arguments at the very top (guard pages on both sides); see [`STACK_WINDOW`] |
//!
//! Invariants the runner keeps:
//! * The Unicorn instance is created once per [`Emulator`] and reused (an `Emulator` is
//!   not `Send`: each worker thread creates its own). Every run restores the CPU state
//!   saved at creation and rewrites all of the state a program can observe (registers,
//!   flags, stack, heap, callframe, and the code unless it is the same bytes again), so
//!   a run's result depends only on its code and input, never on earlier runs.
//!   The whole translation cache is flushed whenever new code is loaded, so the
//!   translation buffer holds one program's blocks and its resident pages do not grow
//!   with the number of programs (issue 23); it is also bounded ([`TCG_BUFFER_SIZE`]).
//! * A helper call runs the one Rust implementation ([`crate::exec::runtime::call_helper`])
//!   over Unicorn memory, then returns like a cdecl callee that trashes everything it may:
//!   `eax ecx edx` that carry no result hold [`POISON_EAX`], [`POISON_ECX`],
//!   [`POISON_EDX`], and every arithmetic flag is flipped, so code that relies on a
//!   value surviving a call is caught.
//! * The run ends at the first of: reaching `RETURN_SENTINEL` (checked against cdecl),
//!   #DE or `int 0x41` (the IR's traps), a 64-bit division helper that traps, any other
//!   fault (a [`Finding::Fault`] with disassembly), or the instruction budget
//!   ([`Finding::Timeout`]). A run that returns must also leave the callframe page
//!   outside the variables' slots untouched.
//! * A block hook remembers the last block of the code that ran, so a fault outside the
//!   code names the instruction that left it.
//!
//! This implements the "Emulator runner" of `DESIGN.md` ("The harness") and issue 4.

use crate::exec::interp::{InputError, RunInput, State};
use crate::exec::outcome::{End, Event, Outcome, Value};
use crate::exec::runtime::{call_helper, HelperEnv};
use iced_x86::{Decoder, DecoderOptions, Formatter, Instruction, IntelFormatter, Mnemonic};
use std::fmt;
use tandem_core::abi::{
    MachineCode, RuntimeHelper, CHECK_TRAP_VECTOR, CODE_BASE, CODE_SIZE_MAX, HELPER_BASE, RETURN_SENTINEL, STACK_BASE,
    STACK_SIZE,
};
use tandem_core::ir::{BinOp, Function, TrapKind, Type, CALLFRAME_BASE, CALLFRAME_SLOT, HEAP_BASE, HEAP_SIZE};
use unicorn_engine::unicorn_const::{uc_ctl, uc_error, Arch, ControlType, HookType, MemType, Mode, Prot};
use unicorn_engine::{Context, RegisterX86, Unicorn};

/// The page size of the memory map.
pub const PAGE: u32 = 0x1000;
/// Size of the callframe region: one page, room for 512 slots.
pub const CALLFRAME_SIZE: u32 = PAGE;
/// The byte that fills the callframe page outside the function's slots; a run that
/// changes one of them wrote outside every callframe variable.
pub const CALLFRAME_POISON: u8 = 0xCF;
/// The byte that fills the stack at the start of a run.
pub const STACK_POISON: u8 = 0x5A;
/// What `eax` holds after a helper that returns nothing (and at entry).
pub const POISON_EAX: u32 = 0xBAD0_EAAA;
/// What `ecx` holds after every helper (and at entry).
pub const POISON_ECX: u32 = 0xBAD0_ECCC;
/// What `edx` holds after a helper that returns no `i64` (and at entry).
pub const POISON_EDX: u32 = 0xBAD0_EDDD;
/// The values the callee-saved registers hold at entry; they must hold them at return.
pub const ENTRY_EBX: u32 = 0xCA11_EBB0;
pub const ENTRY_ESI: u32 = 0xCA11_E510;
pub const ENTRY_EDI: u32 = 0xCA11_ED10;
pub const ENTRY_EBP: u32 = 0xCA11_EB90;
/// The top part of the stack that is mapped and poisoned at the start of every run.
/// The rest of the stack (down to `STACK_BASE`) is mapped, poisoned, only when a run
/// touches it, and unmapped again before the next run: every run sees a fully poisoned
/// stack without paying for rewriting all of it.
pub const STACK_WINDOW: u32 = 0x4000;
/// The lowest address of the stack window.
pub const STACK_WINDOW_BASE: u32 = STACK_BASE + STACK_SIZE - STACK_WINDOW;
/// The size of Unicorn's translated-code buffer: a full buffer is flushed and refilled,
/// so this bounds the memory a worker's instance grows to.
pub const TCG_BUFFER_SIZE: u32 = 32 << 20;
/// Instructions a run may execute per unit of interpreter fuel on top of the code's own
/// per-block bound: one fuel unit is one IR node or block entry, and a helper's stub
/// executes a handful of instructions.
pub const INSNS_PER_FUEL: u64 = 32;
/// Instructions every run may execute on top of its per-fuel budget.
pub const BUDGET_SLACK: u64 = 100_000;

/// The instruction budget of a run of `code` whose interpreter run uses (or may use)
/// `fuel`. It is sound, derived from what correct code can execute rather than from a
/// guess per node: the code of one IR block has no loop of its own (a switch is a chain
/// of compares, the copies on an edge are straight-line), and every entry into a block
/// costs the interpreter at least one unit of fuel, so a correct run executes at most
/// `max_block_insns` instructions per block entry, twice that when a pass split the
/// edge into a block of its own, plus the prologue (at most the whole code once). A run
/// that exceeds it did not do what the IR does: it is a finding, never a harness limit.
pub fn budget_for(fuel: u64, shape: &tandem_core::abi::CodeShape) -> u64 {
    let per_fuel = INSNS_PER_FUEL + 2 * shape.max_block_insns as u64;
    fuel.saturating_mul(per_fuel).saturating_add(shape.insns as u64).saturating_add(BUDGET_SLACK)
}

/// The byte filling the unused part of the code region and the sentinel page (`int3`).
const INT3: u8 = 0xCC;
/// The byte filling the helper stub page (`hlt`).
const HLT: u8 = 0xF4;
/// The x86 EFLAGS bits a helper flips: CF PF AF ZF SF OF.
const ARITH_FLAGS: u32 = 0x8D5;
/// The direction flag, which cdecl requires clear at calls and returns.
const FLAG_DF: u32 = 0x400;
/// Bit 1 of EFLAGS always reads as one.
const FLAGS_RESERVED: u32 = 0x2;

/// A failure of the emulator itself or of the inputs: nothing is known about the code.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum EmuError {
    /// Unicorn refused an operation (creating the instance, mapping, starting).
    Unicorn(String),
    /// The run's inputs do not fit the function (argument count or types, heap ranges,
    /// callframe values).
    Input(InputError),
    /// The program does not fit the emulated machine: a limit of the harness, not a bug
    /// of the code under test.
    Limit(HarnessLimit),
    /// [`with_worker_emulator`] was called from inside its own closure.
    WorkerBusy,
}

impl fmt::Display for EmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmuError::Unicorn(s) => write!(f, "unicorn: {s}"),
            EmuError::Input(e) => write!(f, "bad run input: {e}"),
            EmuError::Limit(l) => write!(f, "harness limit: {l}"),
            EmuError::WorkerBusy => f.write_str("the thread's emulator is already in use"),
        }
    }
}

impl std::error::Error for EmuError {}

/// A resource of the emulated machine that a program exceeds. Any program the parser
/// accepts can exceed one (there is no bound on locals, callframe variables or code
/// size), so each gets a verdict of its own: neither a pass nor a compiler bug. The
/// limits: code up to `CODE_SIZE_MAX` (1 MiB), a frame up to `STACK_SIZE` (256 KiB) less
/// the arguments, and [`CALLFRAME_SIZE`]` / 8` (512) callframe variables.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum HarnessLimit {
    /// The machine code is larger than the code region (or its entry lies outside it).
    CodeSize { len: usize, entry: u32 },
    /// The function's frame and arguments need more stack than the emulated stack has.
    StackFrame { bytes: u64 },
    /// The function has more callframe variables than the callframe page holds.
    CallframeVars(usize),
}

impl fmt::Display for HarnessLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HarnessLimit::CodeSize { len, entry } => write!(
                f,
                "machine code of {len} bytes (entry at {entry:#x}) does not fit the {} byte code region",
                CODE_SIZE_MAX
            ),
            HarnessLimit::StackFrame { bytes } => {
                write!(f, "a frame of {bytes} bytes does not fit the {} byte emulated stack", STACK_SIZE)
            }
            HarnessLimit::CallframeVars(n) => {
                write!(f, "{n} callframe variables do not fit the {} slots of the callframe page", CALLFRAME_SIZE / CALLFRAME_SLOT)
            }
        }
    }
}

fn uc_err(what: &str) -> impl Fn(uc_error) -> EmuError + '_ {
    move |e| EmuError::Unicorn(format!("{what}: {e:?}"))
}

/// What went wrong in a fault that is not one of the IR's traps.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum FaultKind {
    /// A read of an unmapped address (a guard page or nothing at all).
    ReadUnmapped,
    /// A write to an unmapped address.
    WriteUnmapped,
    /// Execution reached an unmapped address (a wild jump, call or return).
    FetchUnmapped,
    /// A write to a read-only region (the code, the helper stubs, the sentinel page).
    WriteProtected,
    /// A read the region does not allow.
    ReadProtected,
    /// Execution reached mapped memory that is not code (stack, heap, callframe).
    FetchProtected,
    /// An instruction the CPU does not know.
    InvalidOpcode,
    /// A `hlt` instruction.
    Halt,
    /// An interrupt other than #DE and the check trap; `int3` is what fills the code
    /// region past the code and the sentinel page, so a jump there lands here.
    Interrupt(u32),
    /// Execution reached the helper stub page at an address that is not a helper's.
    IntoHelperStub,
    /// Execution left the code region for mapped executable memory that is not a helper
    /// or the return sentinel (for example the padding after the code).
    OutsideCode,
    /// Unicorn stopped with another error.
    Emulator(String),
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultKind::ReadUnmapped => f.write_str("read of unmapped memory"),
            FaultKind::WriteUnmapped => f.write_str("write to unmapped memory"),
            FaultKind::FetchUnmapped => f.write_str("execution of unmapped memory"),
            FaultKind::WriteProtected => f.write_str("write to read-only memory"),
            FaultKind::ReadProtected => f.write_str("read of unreadable memory"),
            FaultKind::FetchProtected => f.write_str("execution of non-code memory"),
            FaultKind::InvalidOpcode => f.write_str("invalid opcode"),
            FaultKind::Halt => f.write_str("hlt executed"),
            FaultKind::Interrupt(v) => write!(f, "unexpected interrupt {v:#x}"),
            FaultKind::IntoHelperStub => f.write_str("jump into the helper stubs at no helper's address"),
            FaultKind::OutsideCode => f.write_str("execution outside the code"),
            FaultKind::Emulator(s) => write!(f, "emulator error {s}"),
        }
    }
}

/// The eight general registers in encoding order, for reports.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct Registers {
    pub eax: u32,
    pub ecx: u32,
    pub edx: u32,
    pub ebx: u32,
    pub esp: u32,
    pub ebp: u32,
    pub esi: u32,
    pub edi: u32,
    pub eip: u32,
    pub eflags: u32,
}

impl fmt::Display for Registers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "eax={:08x} ecx={:08x} edx={:08x} ebx={:08x} esp={:08x} ebp={:08x} esi={:08x} edi={:08x} eip={:08x} eflags={:08x}",
            self.eax, self.ecx, self.edx, self.ebx, self.esp, self.ebp, self.esi, self.edi, self.eip, self.eflags
        )
    }
}

/// Something the x86 code did that no correct compilation of any program does. Each is
/// a bug in the backend (or the runner), whatever the interpreter says.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Finding {
    /// The run executed more than `budget` instructions without returning or trapping.
    /// It is a bug only when the interpreter's run of the same input terminated; the
    /// differential check ([`crate::judge::diff`]) decides that.
    Timeout { budget: u64, registers: Registers, disassembly: String },
    /// A fault that is not one of the IR's traps: `pc` is the instruction that faulted
    /// (or the address execution reached), `address` the data address it touched when
    /// the fault is a memory access, `disassembly` the code around `pc`.
    Fault { kind: FaultKind, pc: u32, address: Option<u32>, registers: Registers, disassembly: String },
    /// A callee-saved register does not hold its entry value at return.
    CalleeSavedClobbered { register: &'static str, expected: u32, found: u32 },
    /// `esp` after the return is not the caller's `esp` before the call (entry `esp + 4`).
    BadStack { expected: u32, found: u32 },
    /// The direction flag is set at return (cdecl requires it clear).
    DirectionFlagSet,
    /// Bytes of the callframe page outside every callframe variable's slot changed.
    CallframeOutOfBounds { offset: u32 },
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::Timeout { budget, registers, disassembly } => {
                write!(f, "timeout: more than {budget} instructions\n  registers: {registers}\n{disassembly}")
            }
            Finding::Fault { kind, pc, address, registers, disassembly } => {
                write!(f, "fault: {kind} at pc {pc:#010x}")?;
                if let Some(a) = address {
                    write!(f, " touching {a:#010x}")?;
                }
                write!(f, "\n  registers: {registers}\n{disassembly}")
            }
            Finding::CalleeSavedClobbered { register, expected, found } => {
                write!(f, "callee-saved {register} clobbered: expected {expected:#010x}, found {found:#010x}")
            }
            Finding::BadStack { expected, found } => {
                write!(f, "esp wrong after return: expected {expected:#010x}, found {found:#010x}")
            }
            Finding::DirectionFlagSet => f.write_str("direction flag set at return"),
            Finding::CallframeOutOfBounds { offset } => {
                write!(f, "wrote callframe byte {:#010x}, outside every variable", CALLFRAME_BASE + offset)
            }
        }
    }
}

/// Why the hooks stopped a run.
#[derive(Clone, Debug)]
enum Stop {
    Trap(TrapKind),
    Fault { kind: FaultKind, pc: u32, address: Option<u32> },
}

/// The per-run state the hooks see (Unicorn's user data).
#[derive(Default)]
struct Hooked {
    stop: Option<Stop>,
    trace: Vec<Event>,
    /// The types of the running function's callframe variables.
    cf_types: Vec<Type>,
    /// How many helper calls the run made.
    helper_calls: u64,
    /// The length of the running code.
    code_len: u32,
    /// Whether the run touched the stack below the window, which mapped it.
    deep_stack_mapped: bool,
    /// The last block of the code that started executing: (address, size in bytes).
    last_block: Option<(u32, u32)>,
    /// Every runtime helper with its address (fixed; looked up on every call).
    helpers: Vec<(u32, RuntimeHelper)>,
}

type Uc<'a> = Unicorn<'a, Hooked>;

/// One reused Unicorn instance with the environment of `tandem_core::abi` mapped.
pub struct Emulator {
    /// Declared first so that it is dropped (closed) before `code`, whose memory it maps.
    uc: Uc<'static>,
    /// The host memory behind the code region.
    code: CodeBuffer,
    /// The largest code length loaded so far: the part of the code region that must be
    /// refilled with `int3` when shorter code is loaded.
    code_high_water: u32,
    /// The code bytes currently loaded.
    loaded: Vec<u8>,
    /// The stack window's contents at the start of every run: all poison.
    stack_poison: Vec<u8>,
    /// The CPU state right after creation, restored before every run. Registers alone
    /// are not enough: after a #DE the CPU remembers the exception in flight, and the
    /// next #DE would become a double fault.
    pristine: Context,
    runs: u64,
}

fn page_round(n: u32) -> u32 {
    n.div_ceil(PAGE) * PAGE
}

impl Emulator {
    /// Creates the Unicorn instance, maps the regions and installs the hooks.
    pub fn new() -> Result<Emulator, EmuError> {
        Emulator::with_translation_buffer(TCG_BUFFER_SIZE)
    }

    /// Like [`Emulator::new`] with a translated-code buffer of `bytes` (at least 1 MiB;
    /// Unicorn rounds smaller sizes up). Tests use a small one to force flushes.
    pub fn with_translation_buffer(bytes: u32) -> Result<Emulator, EmuError> {
        // Declared before `uc`, so that an early return drops `uc` first.
        let mut code = CodeBuffer::new(CODE_SIZE_MAX as usize);
        code.bytes_mut().fill(INT3);
        let mut uc: Uc<'static> = Unicorn::new_with_data(
            Arch::X86,
            Mode::MODE_32,
            Hooked {
                helpers: RuntimeHelper::all().into_iter().map(|h| (h.address(), h)).collect(),
                ..Hooked::default()
            },
        )
        .map_err(uc_err("creating the x86-32 engine"))?;
        set_tcg_buffer_size(&mut uc, bytes)?;
        let rw = Prot::READ | Prot::WRITE;
        let rx = Prot::READ | Prot::EXEC;
        uc.mem_map(HEAP_BASE as u64, page_round(HEAP_SIZE) as u64, rw).map_err(uc_err("mapping the heap"))?;
        uc.mem_map(CALLFRAME_BASE as u64, CALLFRAME_SIZE as u64, rw).map_err(uc_err("mapping the callframe"))?;
        uc.mem_map(HELPER_BASE as u64, PAGE as u64, rx).map_err(uc_err("mapping the helper stubs"))?;
        // SAFETY: `code` is CODE_SIZE_MAX bytes and outlives `uc` (see `Emulator`).
        unsafe { uc.mem_map_ptr(CODE_BASE as u64, CODE_SIZE_MAX as u64, rx, code.ptr.cast()) }
            .map_err(uc_err("mapping the code"))?;
        uc.mem_map(RETURN_SENTINEL as u64, PAGE as u64, rx).map_err(uc_err("mapping the return sentinel"))?;
        uc.mem_map(STACK_WINDOW_BASE as u64, STACK_WINDOW as u64, rw).map_err(uc_err("mapping the stack"))?;
        uc.mem_write(HELPER_BASE as u64, &vec![HLT; PAGE as usize]).map_err(uc_err("filling the helper stubs"))?;
        uc.mem_write(RETURN_SENTINEL as u64, &vec![INT3; PAGE as usize]).map_err(uc_err("filling the sentinel"))?;

        uc.add_code_hook(HELPER_BASE as u64, (HELPER_BASE + PAGE - 1) as u64, helper_hook)
            .map_err(uc_err("hooking the helper stubs"))?;
        // Remember the last block entered in the code, to show where a wild jump came from.
        uc.add_block_hook(
            CODE_BASE as u64,
            (CODE_BASE + CODE_SIZE_MAX - 1) as u64,
            |uc: &mut Uc<'_>, addr: u64, size: u32| {
                uc.get_data_mut().last_block = Some((addr as u32, size));
            },
        )
        .map_err(uc_err("hooking code blocks"))?;
        uc.add_intr_hook(|uc: &mut Uc<'_>, vector: u32| {
            let pc = reg(uc, RegisterX86::EIP);
            let stop = if vector == 0 {
                Stop::Trap(TrapKind::DivideError)
            } else if vector == CHECK_TRAP_VECTOR as u32 {
                Stop::Trap(TrapKind::Check(reg(uc, RegisterX86::EAX)))
            } else if vector == 3 {
                // `int3` has executed, so `eip` is past it.
                let at = pc.wrapping_sub(1);
                let kind = classify_pc(at, uc.get_data().code_len).unwrap_or(FaultKind::Interrupt(3));
                Stop::Fault { kind, pc: at, address: None }
            } else {
                Stop::Fault { kind: FaultKind::Interrupt(vector), pc, address: None }
            };
            stop_with(uc, stop);
        })
        .map_err(uc_err("hooking interrupts"))?;
        let bad_mem = HookType::MEM_READ_UNMAPPED
            | HookType::MEM_WRITE_UNMAPPED
            | HookType::MEM_FETCH_UNMAPPED
            | HookType::MEM_READ_PROT
            | HookType::MEM_WRITE_PROT
            | HookType::MEM_FETCH_PROT;
        uc.add_mem_hook(bad_mem, 1, 0, |uc: &mut Uc<'_>, ty: MemType, addr: u64, _size: usize, _value: i64| {
            let data_access = matches!(ty, MemType::READ_UNMAPPED | MemType::WRITE_UNMAPPED);
            if data_access && (STACK_BASE as u64..STACK_WINDOW_BASE as u64).contains(&addr) && map_deep_stack(uc) {
                // The access is retried on the newly mapped deep stack.
                return true;
            }
            let kind = match ty {
                MemType::READ_UNMAPPED => FaultKind::ReadUnmapped,
                MemType::WRITE_UNMAPPED => FaultKind::WriteUnmapped,
                MemType::FETCH_UNMAPPED => FaultKind::FetchUnmapped,
                MemType::WRITE_PROT => FaultKind::WriteProtected,
                MemType::READ_PROT => FaultKind::ReadProtected,
                MemType::FETCH_PROT => FaultKind::FetchProtected,
                other => FaultKind::Emulator(format!("memory hook {other:?}")),
            };
            let fetch = matches!(kind, FaultKind::FetchUnmapped | FaultKind::FetchProtected);
            let pc = if fetch { addr as u32 } else { reg(uc, RegisterX86::EIP) };
            let address = if fetch { None } else { Some(addr as u32) };
            if uc.get_data().stop.is_none() {
                uc.get_data_mut().stop = Some(Stop::Fault { kind, pc, address });
            }
            false
        })
        .map_err(uc_err("hooking memory faults"))?;
        let pristine = uc.context_init().map_err(uc_err("saving the initial CPU state"))?;
        Ok(Emulator {
            uc,
            code,
            code_high_water: 0,
            loaded: vec![],
            stack_poison: vec![STACK_POISON; STACK_WINDOW as usize],
            pristine,
            runs: 0,
        })
    }

    /// How many runs this instance has executed.
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// Runs `code` as the compilation of `f` on `input`, with a budget of
    /// [`budget_for`]`(input.fuel)` instructions.
    pub fn run(
        &mut self,
        code: &MachineCode,
        f: &Function,
        input: &RunInput,
    ) -> Result<Result<Outcome, Finding>, EmuError> {
        self.run_with_budget(code, f, input, budget_for(input.fuel, &code.shape))
    }

    /// Runs `code` as the compilation of `f` on `input`, executing at most `budget`
    /// instructions. `Ok(Ok(outcome))` when the code returned or trapped as the IR
    /// allows; `Ok(Err(finding))` when it broke a rule.
    pub fn run_with_budget(
        &mut self,
        code: &MachineCode,
        f: &Function,
        input: &RunInput,
        budget: u64,
    ) -> Result<Result<Outcome, Finding>, EmuError> {
        let len = code.bytes.len();
        if len > CODE_SIZE_MAX as usize || code.entry as usize >= len {
            return Err(EmuError::Limit(HarnessLimit::CodeSize { len, entry: code.entry }));
        }
        if f.cfvars.len() * CALLFRAME_SLOT as usize > CALLFRAME_SIZE as usize {
            return Err(EmuError::Limit(HarnessLimit::CallframeVars(f.cfvars.len())));
        }
        // The arguments and the return address sit at the top of the stack, the frame
        // below them; a page of headroom is kept for helper calls.
        let arg_bytes: u64 = f.params.iter().map(|&p| f.locals[p].ty.bits() as u64 / 8).sum();
        let stack_bytes = code.shape.frame_bytes as u64 + arg_bytes + 4 + PAGE as u64;
        if stack_bytes > STACK_SIZE as u64 {
            return Err(EmuError::Limit(HarnessLimit::StackFrame { bytes: stack_bytes }));
        }
        let initial = self.initial_state(f, input)?;
        self.load_code(&code.bytes)?;
        self.load_memory(f, &initial)?;
        let entry_esp = self.load_stack(f, input)?;
        self.load_registers(entry_esp)?;
        {
            let data = self.uc.get_data_mut();
            data.stop = None;
            data.trace.clear();
            data.cf_types = f.cfvars.values().map(|v| v.ty).collect();
            data.helper_calls = 0;
            data.code_len = len as u32;
            data.last_block = None;
        }
        self.runs += 1;

        let start = (CODE_BASE + code.entry) as u64;
        // A count of 0 would mean "no limit" to Unicorn.
        let count = budget.clamp(1, usize::MAX as u64) as usize;
        let result = self.uc.emu_start(start, RETURN_SENTINEL as u64, 0, count);
        let pc = reg(&self.uc, RegisterX86::EIP);
        let stop = self.uc.get_data_mut().stop.take();
        let end = match stop {
            Some(Stop::Trap(kind)) => End::Trap(kind),
            Some(Stop::Fault { kind, pc, address }) => return Ok(Err(self.fault(kind, pc, address, code))),
            None => match result {
                Err(e) => {
                    // Unicorn stopped without a hook naming the cause.
                    let kind = match e {
                        uc_error::INSN_INVALID => FaultKind::InvalidOpcode,
                        uc_error::READ_UNMAPPED => FaultKind::ReadUnmapped,
                        uc_error::WRITE_UNMAPPED => FaultKind::WriteUnmapped,
                        uc_error::FETCH_UNMAPPED => FaultKind::FetchUnmapped,
                        uc_error::WRITE_PROT => FaultKind::WriteProtected,
                        uc_error::READ_PROT => FaultKind::ReadProtected,
                        uc_error::FETCH_PROT => FaultKind::FetchProtected,
                        other => FaultKind::Emulator(format!("{other:?}")),
                    };
                    return Ok(Err(self.fault(kind, pc, None, code)));
                }
                Ok(()) if pc == RETURN_SENTINEL => {
                    if let Some(finding) = self.check_return(entry_esp) {
                        return Ok(Err(finding));
                    }
                    let eax = reg(&self.uc, RegisterX86::EAX);
                    let edx = reg(&self.uc, RegisterX86::EDX);
                    End::Return(match f.ret {
                        Type::I32 => Value::I32(eax as i32),
                        Type::I64 => Value::I64(((edx as u64) << 32 | eax as u64) as i64),
                    })
                }
                Ok(()) => {
                    // Unicorn also stops without an error after `hlt`.
                    let insns = decode(&code.bytes);
                    if let Some(h) = insns.iter().find(|i| i.next_ip() as u32 == pc && i.mnemonic() == Mnemonic::Hlt) {
                        return Ok(Err(self.fault(FaultKind::Halt, h.ip() as u32, None, code)));
                    }
                    let registers = self.registers();
                    let disassembly = disassemble_around(&code.bytes, pc, None);
                    return Ok(Err(Finding::Timeout { budget, registers, disassembly }));
                }
            },
        };
        if let Some(offset) = self.callframe_spill(f)? {
            return Ok(Err(Finding::CallframeOutOfBounds { offset }));
        }
        let heap = self.uc.mem_read_as_vec(HEAP_BASE as u64, HEAP_SIZE as usize).map_err(uc_err("reading the heap"))?;
        let callframe = self.read_callframe(f)?;
        let trace = std::mem::take(&mut self.uc.get_data_mut().trace);
        Ok(Ok(Outcome { end, trace, heap, callframe }))
    }

    /// Checks the inputs the way the interpreter does and builds the initial heap and
    /// callframe from them.
    fn initial_state(&self, f: &Function, input: &RunInput) -> Result<State, EmuError> {
        if input.args.len() != f.params.len() {
            return Err(EmuError::Input(InputError::Arguments(format!(
                "%{} takes {} argument(s), given {}",
                f.name,
                f.params.len(),
                input.args.len()
            ))));
        }
        for (i, (&p, a)) in f.params.iter().zip(&input.args).enumerate() {
            if f.locals[p].ty != a.ty() {
                return Err(EmuError::Input(InputError::Arguments(format!(
                    "argument {} of %{} is {}, given {a}",
                    i + 1,
                    f.name,
                    f.locals[p].ty
                ))));
            }
        }
        State::initial(f, input).map_err(EmuError::Input)
    }

    fn load_code(&mut self, bytes: &[u8]) -> Result<(), EmuError> {
        if self.loaded == bytes {
            // The same program again (another input): its translated blocks stay valid,
            // since the code region is read-only to the program.
            return Ok(());
        }
        let len = bytes.len() as u32;
        // The code region is read-only to the program, so it is written through its host
        // memory (`uc.mem_write` would flip its protection twice, which costs more than
        // the rest of a run).
        let mem = self.code.bytes_mut();
        mem[..len as usize].copy_from_slice(bytes);
        if self.code_high_water > len {
            mem[len as usize..self.code_high_water as usize].fill(INT3);
        }
        // Translated blocks of the previous program must not survive the new bytes. The
        // whole translation cache is flushed, not only the code range: dropping a range
        // frees its blocks but not their space in the translation buffer, which then
        // grows with every program until it is full (issue 23: tens of megabytes per
        // worker over the first minutes of a campaign); a flush starts the buffer over,
        // so it holds one program's translations and its resident pages stop growing.
        self.uc.ctl_flush_tb().map_err(uc_err("dropping translated code"))?;
        self.code_high_water = len;
        self.loaded.clear();
        self.loaded.extend_from_slice(bytes);
        Ok(())
    }

    fn load_memory(&mut self, f: &Function, initial: &State) -> Result<(), EmuError> {
        self.uc.mem_write(HEAP_BASE as u64, &initial.heap).map_err(uc_err("writing the heap"))?;
        let mut cf = vec![CALLFRAME_POISON; CALLFRAME_SIZE as usize];
        for (i, v) in initial.callframe.iter().enumerate() {
            let slot = &mut cf[i * CALLFRAME_SLOT as usize..(i + 1) * CALLFRAME_SLOT as usize];
            slot.copy_from_slice(&(v.as_i64() as u64).to_le_bytes());
            if v.ty() == Type::I32 {
                // The upper half of an `i32` slot is not part of the variable.
                slot[4..].fill(0);
            }
        }
        debug_assert_eq!(initial.callframe.len(), f.cfvars.len());
        self.uc.mem_write(CALLFRAME_BASE as u64, &cf).map_err(uc_err("writing the callframe"))
    }

    /// Poisons the stack, stores the arguments and the return address at its top, and
    /// returns the entry `esp`.
    fn load_stack(&mut self, f: &Function, input: &RunInput) -> Result<u32, EmuError> {
        if self.uc.get_data().deep_stack_mapped {
            self.uc
                .mem_unmap(STACK_BASE as u64, (STACK_WINDOW_BASE - STACK_BASE) as u64)
                .map_err(uc_err("unmapping the deep stack"))?;
            self.uc.get_data_mut().deep_stack_mapped = false;
        }
        self.uc.mem_write(STACK_WINDOW_BASE as u64, &self.stack_poison).map_err(uc_err("poisoning the stack"))?;
        let mut frame = RETURN_SENTINEL.to_le_bytes().to_vec();
        for a in &input.args {
            match a {
                Value::I32(v) => frame.extend_from_slice(&v.to_le_bytes()),
                Value::I64(v) => frame.extend_from_slice(&v.to_le_bytes()),
            }
        }
        debug_assert_eq!(input.args.len(), f.params.len());
        let esp = STACK_BASE + STACK_SIZE - frame.len() as u32;
        self.uc.mem_write(esp as u64, &frame).map_err(uc_err("writing the arguments"))?;
        Ok(esp)
    }

    fn load_registers(&mut self, esp: u32) -> Result<(), EmuError> {
        self.uc.context_restore(&self.pristine).map_err(uc_err("restoring the CPU state"))?;
        let regs = [
            (RegisterX86::EAX, POISON_EAX),
            (RegisterX86::ECX, POISON_ECX),
            (RegisterX86::EDX, POISON_EDX),
            (RegisterX86::EBX, ENTRY_EBX),
            (RegisterX86::ESI, ENTRY_ESI),
            (RegisterX86::EDI, ENTRY_EDI),
            (RegisterX86::EBP, ENTRY_EBP),
            (RegisterX86::ESP, esp),
            (RegisterX86::EFLAGS, FLAGS_RESERVED),
        ];
        for (r, v) in regs {
            self.uc.reg_write(r, v as u64).map_err(uc_err("setting registers"))?;
        }
        Ok(())
    }

    /// The cdecl checks at return: callee-saved registers, `esp`, the direction flag.
    fn check_return(&self, entry_esp: u32) -> Option<Finding> {
        let saved = [
            ("ebx", RegisterX86::EBX, ENTRY_EBX),
            ("esi", RegisterX86::ESI, ENTRY_ESI),
            ("edi", RegisterX86::EDI, ENTRY_EDI),
            ("ebp", RegisterX86::EBP, ENTRY_EBP),
        ];
        for (register, r, expected) in saved {
            let found = reg(&self.uc, r);
            if found != expected {
                return Some(Finding::CalleeSavedClobbered { register, expected, found });
            }
        }
        let esp = reg(&self.uc, RegisterX86::ESP);
        if esp != entry_esp + 4 {
            return Some(Finding::BadStack { expected: entry_esp + 4, found: esp });
        }
        if reg(&self.uc, RegisterX86::EFLAGS) & FLAG_DF != 0 {
            return Some(Finding::DirectionFlagSet);
        }
        None
    }

    /// The offset of the first changed callframe byte outside every variable's slot.
    fn callframe_spill(&self, f: &Function) -> Result<Option<u32>, EmuError> {
        let used = f.cfvars.len() * CALLFRAME_SLOT as usize;
        let rest = self
            .uc
            .mem_read_as_vec((CALLFRAME_BASE as usize + used) as u64, CALLFRAME_SIZE as usize - used)
            .map_err(uc_err("reading the callframe"))?;
        if rest.iter().all(|&b| b == CALLFRAME_POISON) {
            return Ok(None);
        }
        Ok(rest.iter().position(|&b| b != CALLFRAME_POISON).map(|i| (used + i) as u32))
    }

    fn read_callframe(&self, f: &Function) -> Result<Vec<Value>, EmuError> {
        let n = f.cfvars.len();
        let raw = self
            .uc
            .mem_read_as_vec(CALLFRAME_BASE as u64, n * CALLFRAME_SLOT as usize)
            .map_err(uc_err("reading the callframe"))?;
        Ok(f.cfvars.values().zip(raw.chunks(CALLFRAME_SLOT as usize)).map(|(v, slot)| read_slot(v.ty, slot)).collect())
    }

    fn registers(&self) -> Registers {
        let r = |x| reg(&self.uc, x);
        Registers {
            eax: r(RegisterX86::EAX),
            ecx: r(RegisterX86::ECX),
            edx: r(RegisterX86::EDX),
            ebx: r(RegisterX86::EBX),
            esp: r(RegisterX86::ESP),
            ebp: r(RegisterX86::EBP),
            esi: r(RegisterX86::ESI),
            edi: r(RegisterX86::EDI),
            eip: r(RegisterX86::EIP),
            eflags: r(RegisterX86::EFLAGS),
        }
    }

    fn fault(&self, kind: FaultKind, pc: u32, address: Option<u32>, code: &MachineCode) -> Finding {
        let mut registers = self.registers();
        registers.eip = pc;
        let came_from = self.uc.get_data().last_block;
        Finding::Fault { kind, pc, address, registers, disassembly: disassemble_around(&code.bytes, pc, came_from) }
    }
}

/// Host memory handed to Unicorn with `mem_map_ptr`: a leaked boxed slice, freed on
/// drop. It is reached only through short-lived slices while no emulation runs.
struct CodeBuffer {
    ptr: *mut u8,
    len: usize,
}

impl CodeBuffer {
    fn new(len: usize) -> CodeBuffer {
        let ptr = Box::into_raw(vec![0u8; len].into_boxed_slice()).cast::<u8>();
        CodeBuffer { ptr, len }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` is a live allocation of `len` bytes owned by `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for CodeBuffer {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `Box::into_raw` of a boxed slice of `len` bytes.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, self.len)) });
    }
}

thread_local! {
    static WORKER: std::cell::RefCell<Option<Emulator>> = const { std::cell::RefCell::new(None) };
}

/// Runs `body` with this thread's emulator, created on first use and reused by every
/// later call on the same thread (the "one instance per worker" of the design, for
/// callers such as fuzz targets that have no place to keep one).
pub fn with_worker_emulator<R>(body: impl FnOnce(&mut Emulator) -> R) -> Result<R, EmuError> {
    WORKER.with(|cell| {
        let mut slot = cell.try_borrow_mut().map_err(|_| EmuError::WorkerBusy)?;
        if slot.is_none() {
            *slot = Some(Emulator::new()?);
        }
        Ok(body(slot.as_mut().expect("created above")))
    })
}

/// The value of a callframe slot of a variable of type `ty`.
fn read_slot(ty: Type, slot: &[u8]) -> Value {
    match ty {
        Type::I32 => Value::I32(i32::from_le_bytes(slot[..4].try_into().expect("4 bytes"))),
        Type::I64 => Value::I64(i64::from_le_bytes(slot[..8].try_into().expect("8 bytes"))),
    }
}

fn reg(uc: &Uc<'_>, r: RegisterX86) -> u32 {
    // Reading a general register of the engine's own architecture cannot fail.
    uc.reg_read(r).unwrap_or(0) as u32
}

fn set_reg(uc: &mut Uc<'_>, r: RegisterX86, v: u32) {
    // Writing a general register of the engine's own architecture cannot fail.
    let _ = uc.reg_write(r, v as u64);
}

/// Sets the size of Unicorn's buffer of translated code. It must happen before the
/// instance is first used (before any mapping). The default is 1 GiB, which a campaign
/// of fresh programs fills (every program adds its translations; none are freed until
/// the buffer is full and flushed), so each worker would grow to a gigabyte.
fn set_tcg_buffer_size(uc: &mut Uc<'_>, size: u32) -> Result<(), EmuError> {
    // UC_CTL_WRITE(UC_CTL_TCG_BUFFER_SIZE, 1): one argument, a write.
    let control = ControlType(ControlType::TCG_BUFFER_SIZE.0 | (1 << 26) | ControlType::IO_WRITE.0);
    // SAFETY: the handle is live, and this control takes exactly one `uint32_t`.
    let err = unsafe { uc_ctl(uc.get_handle(), control, size) };
    if err == uc_error::OK {
        Ok(())
    } else {
        Err(EmuError::Unicorn(format!("setting the translation buffer size: {err:?}")))
    }
}

/// Maps the stack below the window, filled with poison, the first time a run touches it.
/// False if mapping failed (the access then faults).
fn map_deep_stack(uc: &mut Uc<'_>) -> bool {
    if uc.get_data().deep_stack_mapped {
        return false;
    }
    let size = STACK_WINDOW_BASE - STACK_BASE;
    if uc.mem_map(STACK_BASE as u64, size as u64, Prot::READ | Prot::WRITE).is_err()
        || uc.mem_write(STACK_BASE as u64, &vec![STACK_POISON; size as usize]).is_err()
    {
        return false;
    }
    uc.get_data_mut().deep_stack_mapped = true;
    true
}

/// Records why the run stops (the first cause wins) and stops the emulation.
fn stop_with(uc: &mut Uc<'_>, stop: Stop) {
    if uc.get_data().stop.is_none() {
        uc.get_data_mut().stop = Some(stop);
    }
    let _ = uc.emu_stop();
}

/// Names the region of an address execution should never reach, if it is one; `None`
/// for an address inside the code (of `code_len` bytes).
fn classify_pc(pc: u32, code_len: u32) -> Option<FaultKind> {
    if (HELPER_BASE..HELPER_BASE + PAGE).contains(&pc) {
        Some(FaultKind::IntoHelperStub)
    } else if (CODE_BASE + code_len..CODE_BASE + CODE_SIZE_MAX).contains(&pc)
        || (RETURN_SENTINEL..RETURN_SENTINEL + PAGE).contains(&pc)
    {
        // Past the code, the region is filled with `int3`, as is the sentinel page.
        Some(FaultKind::OutsideCode)
    } else {
        None
    }
}

/// The helper calls' view of Unicorn memory.
struct UcEnv<'a, 'b> {
    uc: &'a mut Uc<'b>,
}

impl HelperEnv for UcEnv<'_, '_> {
    fn heap_read32(&mut self, addr: u32) -> u32 {
        let mut b = [0u8; 4];
        // `call_helper` only passes addresses inside the heap, which is always mapped.
        let _ = self.uc.mem_read(addr as u64, &mut b);
        u32::from_le_bytes(b)
    }
    fn heap_write32(&mut self, addr: u32, value: u32) {
        let _ = self.uc.mem_write(addr as u64, &value.to_le_bytes());
    }
    fn cf_count(&self) -> usize {
        self.uc.get_data().cf_types.len()
    }
    fn cf_get(&mut self, i: usize) -> Value {
        let ty = self.uc.get_data().cf_types[i];
        let mut slot = [0u8; 8];
        let _ = self.uc.mem_read((CALLFRAME_BASE + CALLFRAME_SLOT * i as u32) as u64, &mut slot);
        read_slot(ty, &slot)
    }
    fn cf_set(&mut self, i: usize, value: i64) {
        let ty = self.uc.get_data().cf_types[i];
        let addr = (CALLFRAME_BASE + CALLFRAME_SLOT * i as u32) as u64;
        let bytes = value.to_le_bytes();
        let n = if ty == Type::I32 { 4 } else { 8 };
        let _ = self.uc.mem_write(addr, &bytes[..n]);
    }
    fn record(&mut self, event: Event) {
        self.uc.get_data_mut().trace.push(event);
    }
}

/// The parameter and result types of a runtime helper.
fn runtime_signature(h: RuntimeHelper) -> (&'static [Type], Option<Type>) {
    match h {
        RuntimeHelper::Ir(k) => k.signature(),
        RuntimeHelper::Sdiv64 | RuntimeHelper::Udiv64 | RuntimeHelper::Srem64 | RuntimeHelper::Urem64 => {
            (&[Type::I64, Type::I64], Some(Type::I64))
        }
    }
}

/// The code hook on the helper stub page: performs the helper the stub stands for and
/// returns to the caller like a cdecl callee that clobbers all it may.
fn helper_hook(uc: &mut Uc<'_>, addr: u64, _size: u32) {
    let pc = addr as u32;
    let Some(helper) = uc.get_data().helpers.iter().find(|(a, _)| *a == pc).map(|(_, h)| *h) else {
        stop_with(uc, Stop::Fault { kind: FaultKind::IntoHelperStub, pc, address: None });
        return;
    };
    let esp = reg(uc, RegisterX86::ESP);
    let (params, ret) = runtime_signature(helper);
    let words: u32 = params.iter().map(|t| t.bits() / 32).sum();
    let mut frame = vec![0u8; 4 * (1 + words as usize)];
    if uc.mem_read(esp as u64, &mut frame).is_err() {
        // The return address or the arguments lie outside the stack.
        let address = Some(esp);
        stop_with(uc, Stop::Fault { kind: FaultKind::ReadUnmapped, pc, address });
        return;
    }
    let word = |i: usize| u32::from_le_bytes(frame[4 * i..4 * i + 4].try_into().expect("4 bytes"));
    let ret_addr = word(0);
    let mut args = vec![];
    let mut w = 1;
    for &t in params {
        args.push(match t {
            Type::I32 => Value::I32(word(w) as i32),
            Type::I64 => Value::I64(((word(w + 1) as u64) << 32 | word(w) as u64) as i64),
        });
        w += (t.bits() / 32) as usize;
    }
    let result = match helper {
        RuntimeHelper::Ir(kind) => call_helper(kind, &args, &mut UcEnv { uc }),
        RuntimeHelper::Sdiv64 | RuntimeHelper::Udiv64 | RuntimeHelper::Srem64 | RuntimeHelper::Urem64 => {
            let op = match helper {
                RuntimeHelper::Sdiv64 => BinOp::Sdiv,
                RuntimeHelper::Udiv64 => BinOp::Udiv,
                RuntimeHelper::Srem64 => BinOp::Srem,
                _ => BinOp::Urem,
            };
            match crate::exec::interp::binary(op, Type::I64, args[0].as_i64(), args[1].as_i64()) {
                Ok(v) => Some(Value::I64(v)),
                Err(kind) => {
                    stop_with(uc, Stop::Trap(kind));
                    return;
                }
            }
        }
    };
    debug_assert_eq!(result.map(|v| v.ty()), ret);
    uc.get_data_mut().helper_calls += 1;
    let (eax, edx) = match result {
        Some(Value::I32(v)) => (v as u32, POISON_EDX),
        Some(Value::I64(v)) => (v as u64 as u32, (v as u64 >> 32) as u32),
        None => (POISON_EAX, POISON_EDX),
    };
    set_reg(uc, RegisterX86::EAX, eax);
    set_reg(uc, RegisterX86::ECX, POISON_ECX);
    set_reg(uc, RegisterX86::EDX, edx);
    // Flip every arithmetic flag, so that no flag the caller set survives the call.
    let flags = reg(uc, RegisterX86::EFLAGS);
    set_reg(uc, RegisterX86::EFLAGS, flags ^ ARITH_FLAGS);
    set_reg(uc, RegisterX86::ESP, esp + 4);
    set_reg(uc, RegisterX86::EIP, ret_addr);
}

/// Instructions shown before and after the one at the fault.
const CONTEXT_BEFORE: usize = 6;
const CONTEXT_AFTER: usize = 3;

/// The code decoded from its start (x86 cannot be decoded backwards).
fn decode(bytes: &[u8]) -> Vec<Instruction> {
    let mut decoder = Decoder::with_ip(32, bytes, CODE_BASE as u64, DecoderOptions::NONE);
    let mut insns = vec![];
    let mut ins = Instruction::default();
    while decoder.can_decode() {
        decoder.decode_out(&mut ins);
        insns.push(ins);
    }
    insns
}

/// One listing line: marker, address, bytes, Intel syntax.
fn listing_line(bytes: &[u8], i: &Instruction, mark: &str, formatter: &mut IntelFormatter) -> String {
    let mut text = String::new();
    formatter.format(i, &mut text);
    let start = (i.ip() as u32 - CODE_BASE) as usize;
    let raw: Vec<String> = bytes[start..start + i.len()].iter().map(|b| format!("{b:02x}")).collect();
    format!("  {mark} {:08x}  {:<24} {text}\n", i.ip(), raw.join(" "))
}

/// The code around `pc`, one instruction a line with its address and bytes, the
/// instruction at `pc` marked with `=>`. A `pc` in the middle of an instruction shows
/// the instruction that contains it. For a `pc` outside the code, `came_from` (the last
/// block of the code that ran: address and size) names the instruction that left the
/// code, marked `->`, and the listing is around it.
pub fn disassemble_around(bytes: &[u8], pc: u32, came_from: Option<(u32, u32)>) -> String {
    let insns = decode(bytes);
    let mut formatter = IntelFormatter::new();
    let inside = |i: &Instruction, a: u32| (i.ip() as u32..i.next_ip() as u32).contains(&a);
    let mut out = String::new();
    let (center, mark) = match insns.iter().position(|i| inside(i, pc)) {
        Some(k) => (k, "=>"),
        None => {
            out.push_str(&format!("  (pc {pc:#010x} is outside the {} bytes of code", bytes.len()));
            let exit = came_from.and_then(|(a, size)| insns.iter().position(|i| i.next_ip() as u32 == a + size));
            match exit {
                Some(k) => {
                    out.push_str(&format!("; it left the code at {:#010x})\n", insns[k].ip()));
                    (k, "->")
                }
                None => {
                    out.push_str("; the code ends with:)\n");
                    (insns.len().saturating_sub(1), "  ")
                }
            }
        }
    };
    let window = center.saturating_sub(CONTEXT_BEFORE)..(center + 1 + CONTEXT_AFTER).min(insns.len());
    for k in window {
        let m = if k == center { mark } else { "  " };
        out.push_str(&listing_line(bytes, &insns[k], m, &mut formatter));
    }
    out
}

/// The whole code, disassembled with addresses (for `tandem compile --emit asm` and
/// reports).
pub fn disassemble(bytes: &[u8]) -> String {
    let mut formatter = IntelFormatter::new();
    decode(bytes).iter().map(|i| listing_line(bytes, i, "", &mut formatter)).collect()
}
