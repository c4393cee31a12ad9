//! What the two x86 runners share: the Unicorn emulator ([`crate::exec::emu`]) and the
//! real CPU ([`crate::exec::native`]) execute the same `MachineCode` in the same
//! environment, so everything that defines that environment and reads a run back lives
//! here once. The values a run starts with (poisoned registers and memory, callee-saved
//! sentinels), the instruction budget, the harness limits, the kinds of fault and the
//! findings, the decoding of a helper call's cdecl frame and the clobbering that follows
//! it, the cdecl checks at return and the reading of the callframe page. A difference
//! between the two runners can then only come from the machines themselves, which is
//! what the `emulator infidelity` verdict ([`crate::exec::x86`]) is about.

use crate::exec::interp::{InputError, RunInput, State};
use crate::exec::outcome::{first_trace_difference, Event, Value};
use crate::exec::runtime::{call_helper, HelperEnv};
use iced_x86::{Decoder, DecoderOptions, Formatter, Instruction, IntelFormatter};
use std::fmt;
use tandem_core::abi::{MachineCode, RuntimeHelper, CODE_BASE, CODE_SIZE_MAX, HELPER_BASE, RETURN_SENTINEL, STACK_BASE, STACK_SIZE};
use tandem_core::ir::{BinOp, Function, TrapKind, Type, CALLFRAME_BASE, CALLFRAME_SLOT};

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
pub(crate) const INT3: u8 = 0xCC;
/// The byte filling the helper stub page (`hlt`).
pub(crate) const HLT: u8 = 0xF4;
/// The x86 EFLAGS bits a helper flips: CF PF AF ZF SF OF.
pub(crate) const ARITH_FLAGS: u32 = 0x8D5;
/// The direction flag, which cdecl requires clear at calls and returns.
pub(crate) const FLAG_DF: u32 = 0x400;
/// Bit 1 of EFLAGS always reads as one.
pub(crate) const FLAGS_RESERVED: u32 = 0x2;

/// A failure of the emulator itself or of the inputs: nothing is known about the code.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum EmuError {
    /// Unicorn refused an operation (creating the instance, mapping, starting).
    Unicorn(String),
    /// The native runner could not set up or run the CPU (mapping, signals, timers).
    Native(String),
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
            EmuError::Native(s) => write!(f, "native runner: {s}"),
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
    /// The CPU raised an exception no other kind names (signal and x86 vector).
    Cpu { signal: i32, vector: u32 },
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
            FaultKind::Cpu { signal, vector } => write!(f, "CPU exception {vector} (signal {signal})"),
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
    /// The native run used more CPU time than `budget` instructions can take
    /// (`limit_us` microseconds, see [`crate::exec::native`]): the CPU's timeout, which
    /// the differential check treats exactly like [`Finding::Timeout`].
    CpuTimeout { budget: u64, limit_us: u64, registers: Registers, disassembly: String },
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
    /// The run's trace grew longer than the reference run's of the same input
    /// (`reference_len` events), so the run was stopped there: its outcome already
    /// differs, whatever it would have done next. `first_difference` is the line the
    /// outcomes' comparison prints for the trace ([`first_trace_difference`]), the
    /// first event where the two traces part; this keeps a run that loops calling a
    /// helper from holding a trace as long as its instruction budget (1.2 GB for one
    /// planted `dce` slip).
    TraceBeyondReference { first_difference: String, reference_len: usize },
}

/// Where a run must stop because its trace has become longer than the reference's:
/// [`TRACE_UNBOUNDED`] when there is no reference.
pub const TRACE_UNBOUNDED: usize = usize::MAX;

/// The finding of a run stopped because its trace became longer than `reference`.
pub fn trace_beyond_reference(reference: &[Event], trace: &[Event]) -> Finding {
    let first_difference = first_trace_difference(reference, trace).expect("a longer trace differs");
    Finding::TraceBeyondReference { first_difference, reference_len: reference.len() }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::CpuTimeout { budget, limit_us, registers, disassembly } => write!(
                f,
                "timeout: more than {limit_us} us of CPU time, the most {budget} instructions may take\n  registers: {registers}\n{disassembly}"
            ),
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
            Finding::TraceBeyondReference { first_difference, reference_len } => write!(
                f,
                "{first_difference}\ntrace length: expected {reference_len}, got more (the run was stopped at its event {reference_len})"
            ),
        }
    }
}

/// The value of a callframe slot of a variable of type `ty`.
pub(crate) fn read_slot(ty: Type, slot: &[u8]) -> Value {
    match ty {
        Type::I32 => Value::I32(i32::from_le_bytes(slot[..4].try_into().expect("4 bytes"))),
        Type::I64 => Value::I64(i64::from_le_bytes(slot[..8].try_into().expect("8 bytes"))),
    }
}

/// Names the region of an address execution should never reach, if it is one; `None`
/// for an address inside the code (of `code_len` bytes).
pub(crate) fn classify_pc(pc: u32, code_len: u32) -> Option<FaultKind> {
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

/// The parameter and result types of a runtime helper.
pub(crate) fn runtime_signature(h: RuntimeHelper) -> (&'static [Type], Option<Type>) {
    match h {
        RuntimeHelper::Ir(k) => k.signature(),
        RuntimeHelper::Sdiv64 | RuntimeHelper::Udiv64 | RuntimeHelper::Srem64 | RuntimeHelper::Urem64 => {
            (&[Type::I64, Type::I64], Some(Type::I64))
        }
    }
}

/// Instructions shown before and after the one at the fault.
const CONTEXT_BEFORE: usize = 6;
const CONTEXT_AFTER: usize = 3;

/// The code decoded from its start (x86 cannot be decoded backwards).
pub(crate) fn decode(bytes: &[u8]) -> Vec<Instruction> {
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

/// Why a runner stopped a run before it returned.
#[derive(Clone, Debug)]
pub enum Stop {
    Trap(TrapKind),
    Fault { kind: FaultKind, pc: u32, address: Option<u32> },
    /// The trace became longer than the reference's ([`Finding::TraceBeyondReference`]).
    TraceBeyondReference,
}

/// The program and its inputs as both runners check them before a run: the harness
/// limits, the argument count and types (as the interpreter checks them), and the
/// initial heap and callframe built from the input.
pub fn preflight(code: &MachineCode, f: &Function, input: &RunInput) -> Result<State, EmuError> {
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

/// Writes the callframe page at the start of a run into `cf` ([`CALLFRAME_SIZE`]
/// bytes): each variable's slot holds its initial value (an `i32` slot's upper half
/// zero), every other byte [`CALLFRAME_POISON`].
pub fn write_callframe_page(initial: &State, cf: &mut [u8]) {
    cf.fill(CALLFRAME_POISON);
    for (i, v) in initial.callframe.iter().enumerate() {
        let slot = &mut cf[i * CALLFRAME_SLOT as usize..(i + 1) * CALLFRAME_SLOT as usize];
        slot.copy_from_slice(&(v.as_i64() as u64).to_le_bytes());
        if v.ty() == Type::I32 {
            // The upper half of an `i32` slot is not part of the variable.
            slot[4..].fill(0);
        }
    }
}

/// The top of the stack at entry: the return address ([`RETURN_SENTINEL`]) and the
/// arguments, and the entry `esp` they start at.
pub fn entry_frame(input: &RunInput) -> (u32, Vec<u8>) {
    let mut frame = RETURN_SENTINEL.to_le_bytes().to_vec();
    for a in &input.args {
        match a {
            Value::I32(v) => frame.extend_from_slice(&v.to_le_bytes()),
            Value::I64(v) => frame.extend_from_slice(&v.to_le_bytes()),
        }
    }
    (STACK_BASE + STACK_SIZE - frame.len() as u32, frame)
}

/// The registers at entry: caller-saved ones poisoned, callee-saved ones holding the
/// values they must hold at return, flags clear.
pub fn entry_registers(esp: u32) -> Registers {
    Registers {
        eax: POISON_EAX,
        ecx: POISON_ECX,
        edx: POISON_EDX,
        ebx: ENTRY_EBX,
        esp,
        ebp: ENTRY_EBP,
        esi: ENTRY_ESI,
        edi: ENTRY_EDI,
        eip: 0,
        eflags: FLAGS_RESERVED,
    }
}

/// The cdecl checks at return: callee-saved registers, `esp`, the direction flag.
pub fn check_return(r: &Registers, entry_esp: u32) -> Option<Finding> {
    let saved = [("ebx", r.ebx, ENTRY_EBX), ("esi", r.esi, ENTRY_ESI), ("edi", r.edi, ENTRY_EDI), ("ebp", r.ebp, ENTRY_EBP)];
    for (register, found, expected) in saved {
        if found != expected {
            return Some(Finding::CalleeSavedClobbered { register, expected, found });
        }
    }
    if r.esp != entry_esp.wrapping_add(4) {
        return Some(Finding::BadStack { expected: entry_esp + 4, found: r.esp });
    }
    if r.eflags & FLAG_DF != 0 {
        return Some(Finding::DirectionFlagSet);
    }
    None
}

/// The value a function of type `f.ret` returns in `eax` (and `edx`).
pub fn return_value(f: &Function, eax: u32, edx: u32) -> Value {
    match f.ret {
        Type::I32 => Value::I32(eax as i32),
        Type::I64 => Value::I64(((edx as u64) << 32 | eax as u64) as i64),
    }
}

/// The offset of the first changed byte of the callframe `page` outside every
/// variable's slot.
pub fn callframe_spill(page: &[u8], f: &Function) -> Option<u32> {
    let used = f.cfvars.len() * CALLFRAME_SLOT as usize;
    let rest = &page[used..];
    // Eight bytes at a time to the first word that is not all poison (almost every page
    // has none), then the byte in it, or in the bytes after the last whole word.
    let poison = u64::from_ne_bytes([CALLFRAME_POISON; 8]);
    let words = rest.chunks_exact(8);
    let tail = rest.len() - words.remainder().len();
    let from = words.into_iter().position(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes")) != poison).map_or(tail, |k| 8 * k);
    rest[from..].iter().position(|&b| b != CALLFRAME_POISON).map(|i| (used + from + i) as u32)
}

/// The callframe variables' values read from the callframe `page`.
pub fn read_callframe(page: &[u8], f: &Function) -> Vec<Value> {
    f.cfvars.values().zip(page.chunks(CALLFRAME_SLOT as usize)).map(|(v, slot)| read_slot(v.ty, slot)).collect()
}

/// The address of callframe slot `i`.
pub fn callframe_slot_address(i: usize) -> u32 {
    CALLFRAME_BASE + CALLFRAME_SLOT * i as u32
}

/// The most parameters a runtime helper takes (a test holds every helper to it): the
/// runners read a call's frame and arguments into arrays of this size, not a `Vec` per
/// call.
pub const HELPER_PARAMS_MAX: usize = 4;
/// The most bytes [`helper_frame_bytes`] gives: the return address and
/// [`HELPER_PARAMS_MAX`] 64-bit arguments.
pub const HELPER_FRAME_MAX: usize = 4 * (1 + 2 * HELPER_PARAMS_MAX);

/// Bytes of the stack a call to `helper` reads at `esp`: the return address and the
/// arguments.
pub fn helper_frame_bytes(helper: RuntimeHelper) -> usize {
    let words: u32 = runtime_signature(helper).0.iter().map(|t| t.bits() / 32).sum();
    4 * (1 + words as usize)
}

/// How a helper call ended: it returned (the registers to resume with), or it trapped.
pub enum HelperReturn {
    /// Resume at `eip` with these registers (`esp` popped past the return address,
    /// `eax ecx edx` the result or poison, every arithmetic flag flipped).
    Resume(Registers),
    /// A 64-bit division helper found a division by zero or an overflow.
    Trap(TrapKind),
}

/// Performs the call of `helper` whose cdecl `frame` ([`helper_frame_bytes`] at `esp`)
/// the caller read, over `env`, with the caller's registers `regs`; returns how to
/// resume. The one definition of what a helper call does to the machine, for both
/// runners: the helper itself is [`call_helper`] (the interpreter's too).
pub fn perform_helper(helper: RuntimeHelper, frame: &[u8], regs: &Registers, env: &mut dyn HelperEnv) -> HelperReturn {
    let (params, ret) = runtime_signature(helper);
    let word = |i: usize| u32::from_le_bytes(frame[4 * i..4 * i + 4].try_into().expect("4 bytes"));
    let ret_addr = word(0);
    let mut array = [Value::I32(0); HELPER_PARAMS_MAX];
    let args = &mut array[..params.len()];
    let mut w = 1;
    for (arg, &t) in args.iter_mut().zip(params) {
        *arg = match t {
            Type::I32 => Value::I32(word(w) as i32),
            Type::I64 => Value::I64(((word(w + 1) as u64) << 32 | word(w) as u64) as i64),
        };
        w += (t.bits() / 32) as usize;
    }
    let args = &*args;
    let result = match helper {
        RuntimeHelper::Ir(kind) => call_helper(kind, args, env),
        RuntimeHelper::Sdiv64 | RuntimeHelper::Udiv64 | RuntimeHelper::Srem64 | RuntimeHelper::Urem64 => {
            let op = match helper {
                RuntimeHelper::Sdiv64 => BinOp::Sdiv,
                RuntimeHelper::Udiv64 => BinOp::Udiv,
                RuntimeHelper::Srem64 => BinOp::Srem,
                _ => BinOp::Urem,
            };
            match crate::exec::interp::binary(op, Type::I64, args[0].as_i64(), args[1].as_i64()) {
                Ok(v) => Some(Value::I64(v)),
                Err(kind) => return HelperReturn::Trap(kind),
            }
        }
    };
    debug_assert_eq!(result.map(|v| v.ty()), ret);
    let (eax, edx) = match result {
        Some(Value::I32(v)) => (v as u32, POISON_EDX),
        Some(Value::I64(v)) => (v as u64 as u32, (v as u64 >> 32) as u32),
        None => (POISON_EAX, POISON_EDX),
    };
    HelperReturn::Resume(Registers {
        eax,
        ecx: POISON_ECX,
        edx,
        esp: regs.esp.wrapping_add(4),
        eip: ret_addr,
        // Flip every arithmetic flag, so that no flag the caller set survives the call.
        eflags: regs.eflags ^ ARITH_FLAGS,
        ..*regs
    })
}

/// A helper's view of a flat little-endian memory image of the heap and callframe, for
/// a runner that can read and write them directly.
pub struct FlatEnv<'a> {
    pub heap: &'a mut [u8],
    pub callframe: &'a mut [u8],
    pub cf_types: &'a [Type],
    pub trace: &'a mut Vec<Event>,
}

impl HelperEnv for FlatEnv<'_> {
    fn heap_read32(&mut self, addr: u32) -> u32 {
        let o = (addr - tandem_core::ir::HEAP_BASE) as usize;
        u32::from_le_bytes(self.heap[o..o + 4].try_into().expect("4 bytes"))
    }
    fn heap_write32(&mut self, addr: u32, value: u32) {
        let o = (addr - tandem_core::ir::HEAP_BASE) as usize;
        self.heap[o..o + 4].copy_from_slice(&value.to_le_bytes());
    }
    fn cf_count(&self) -> usize {
        self.cf_types.len()
    }
    fn cf_get(&mut self, i: usize) -> Value {
        let o = i * CALLFRAME_SLOT as usize;
        read_slot(self.cf_types[i], &self.callframe[o..o + 8])
    }
    fn cf_set(&mut self, i: usize, value: i64) {
        let o = i * CALLFRAME_SLOT as usize;
        let n = if self.cf_types[i] == Type::I32 { 4 } else { 8 };
        self.callframe[o..o + n].copy_from_slice(&value.to_le_bytes()[..n]);
    }
    fn record(&mut self, event: Event) {
        self.trace.push(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first byte that is not poison past the variables' slots, wherever it lies in
    /// a word, in the bytes after the last whole word, or nowhere.
    #[test]
    fn a_spill_is_the_first_changed_byte_past_the_slots() {
        let mut f = Function::new("f", Type::I32);
        f.cfvars.push(tandem_core::ir::CfVarData { name: "c0".into(), ty: Type::I32 });
        let used = CALLFRAME_SLOT as usize;
        let mut page = vec![CALLFRAME_POISON; 4 * 8 + 3 + used];
        assert_eq!(callframe_spill(&page, &f), None);
        page[0] = 0;
        assert_eq!(callframe_spill(&page, &f), None, "a variable's slot is not a spill");
        for at in [used, used + 5, used + 8, used + 31, used + 32, used + 34] {
            let mut p = page.clone();
            p[at] = 0;
            p[page.len() - 1] = 1;
            assert_eq!(callframe_spill(&p, &f), Some(at as u32));
        }
    }

    /// The runners read every helper call's arguments into arrays of
    /// [`HELPER_PARAMS_MAX`] values and its frame into [`HELPER_FRAME_MAX`] bytes.
    #[test]
    fn every_helper_fits_the_arrays_of_a_call() {
        for h in RuntimeHelper::all() {
            assert!(runtime_signature(h).0.len() <= HELPER_PARAMS_MAX, "{h:?} takes more than {HELPER_PARAMS_MAX} parameters");
            assert!(helper_frame_bytes(h) <= HELPER_FRAME_MAX, "{h:?}");
        }
    }
}
