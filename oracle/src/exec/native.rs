//! The native runner: executes compiled x86-32 code on this machine's own CPU, in 32-bit
//! compatibility mode inside the harness process, in the same environment as the Unicorn
//! runner ([`crate::exec::emu`]) and read back into the same [`Outcome`] and [`Finding`]
//! types, so that the two can be compared run for run (`emulator infidelity`,
//! [`crate::exec::x86`]). Unicorn's TCG has known x86 infidelities exactly where compiled
//! code lives (flags after shifts by `cl`, flags with memory hooks installed); the CPU has
//! none, so when the two disagree the CPU's result is the one compared with the
//! interpreter.
//!
//! Mechanism (ARCHITECTURE.md, "The native runner", says why this one):
//! * The ABI regions of `tandem_core::abi` are mapped `MAP_FIXED_NOREPLACE` at their own
//!   addresses below 4 GiB, with the rights Unicorn gives them; the process must have
//!   nothing else mapped below 4 GiB (checked once), so a wild access of the code under
//!   test faults as it does in Unicorn instead of touching the harness.
//! * A 64-bit trampoline page ([`TRAMPOLINE`]) enters the code with `iretq` into the
//!   32-bit user code segment (0x23), all eight registers, `eip` and the flags loaded from
//!   a control block that the `gs` base points at (the code under test cannot address
//!   it: it lives above 4 GiB). Each helper stub and the return sentinel is a far jump
//!   back to the 64-bit segment (0x33) that stores the registers through `gs` and returns
//!   to Rust, which performs the helper with [`perform_helper`] (the one implementation
//!   the emulator and the interpreter use) and enters again. The stub page is otherwise
//!   `hlt`, the sentinel page and the code's padding `int3`, as in Unicorn.
//! * Faults and traps arrive as signals while `cs` is 0x23; the handler stores the
//!   registers and the x86 vector, and redirects the context to the trampoline's exit,
//!   so Rust sees a run that stopped. #DE is the IR's division trap, `int 0x41` (#GP at
//!   the instruction) the check trap; page faults are named like Unicorn's memory hooks.
//!   Any signal that arrives while `cs` is not 0x23 goes to the handler that was there
//!   before.
//! * A run that never ends is stopped by a per-thread CPU-time timer (no hardware counter
//!   is assumed): it allows [`BASE_LIMIT_US`] plus [`NS_PER_INSN`] per instruction of the
//!   run's budget plus [`US_PER_HELPER`] per helper call made; a run past it runs again
//!   with ten times the time (a VM's CPU clock also runs while the host has descheduled
//!   it), and only a run past that too is a [`Finding::CpuTimeout`], judged exactly like
//!   Unicorn's [`Finding::Timeout`].
//! * The fixed addresses exist once per process, so the machine is a process-wide
//!   singleton behind a mutex: runs of several threads take turns.
//!
//! Limits of the mechanism, all confined to code that already misbehaved: the trampoline
//! page is readable and executable by the code under test (in Unicorn it is unmapped);
//! a jump into the middle of a helper stub executes the stub's far pointer; and a wild
//! `int 0x80` reaches the kernel. None of them can change the verdict on correct code.

use crate::exec::interp::{RunInput, State};
use crate::exec::machine::{
    callframe_spill, check_return, classify_pc, entry_frame, entry_registers, helper_frame_bytes, perform_helper, preflight,
    read_callframe, return_value, trace_beyond_reference, write_callframe_page, EmuError, FaultKind, Finding, FlatEnv,
    HelperReturn, Registers, CALLFRAME_SIZE, HELPER_FRAME_MAX, HLT, INT3, PAGE, STACK_POISON, STACK_WINDOW,
    STACK_WINDOW_BASE,
};
use crate::exec::outcome::{End, Event, Outcome};
use std::sync::{Mutex, OnceLock};
use tandem_core::abi::{
    MachineCode, RuntimeHelper, CHECK_TRAP_VECTOR, CODE_BASE, CODE_SIZE_MAX, HELPER_BASE, HELPER_STRIDE, RETURN_SENTINEL,
    STACK_BASE, STACK_SIZE,
};
use tandem_core::ir::{Function, TrapKind, Type, CALLFRAME_BASE, HEAP_BASE, HEAP_SIZE};

/// Where the 64-bit trampoline page is mapped: below 2 GiB, so that a far pointer and a
/// 32-bit absolute address both reach it, and far from every ABI region.
pub const TRAMPOLINE: u32 = 0x7FFE_0000;
/// CPU time every run may take, in microseconds.
pub const BASE_LIMIT_US: u64 = 20_000;
/// CPU time allowed per instruction of a run's budget, in nanoseconds. A real CPU
/// executes the code under test at several instructions per nanosecond.
pub const NS_PER_INSN: u64 = 2;
/// CPU time allowed per helper call, in microseconds (two mode switches and a Rust call
/// take about one).
pub const US_PER_HELPER: u64 = 50;
/// The period of the CPU-time timer once the first allowance is used up, in microseconds.
const TICK_US: u64 = 1_000;

/// The 32-bit user code segment of Linux x86-64, and the 64-bit one.
const USER32_CS: u64 = 0x23;
const USER64_CS: u8 = 0x33;
/// The flat data segment both modes use.
const USER_DS: u8 = 0x2b;
/// EFLAGS bits: the interrupt flag (always set in user mode), trap, direction, alignment.
const FLAG_IF: u32 = 0x200;
const FLAG_TF: i64 = 0x100;
const FLAG_DF: i64 = 0x400;
const FLAG_AC: i64 = 0x4_0000;

/// Offsets in the trampoline page.
const ENTER: u32 = 0;
const COMMON_EXIT: u32 = 0x80;
const EXITS: u32 = 0x200;
const EXIT_STRIDE: u32 = 32;
/// The exit slot (and reason code) of the return sentinel; helpers use their index.
const RETURN_SLOT: u32 = 63;
/// The reason code of a run stopped by a signal.
const REASON_SIGNAL: u32 = 0x100;

/// The control block the trampoline and the signal handler share with Rust, reached
/// from 64-bit code through the `gs` base. Offsets are part of the trampoline's code.
#[repr(C)]
struct Control {
    /// 0: the 64-bit `rsp` to return to Rust with.
    saved_rsp: u64,
    /// 8: eax ecx edx ebx esp ebp esi edi, in encoding order.
    regs: [u32; 8],
    /// 40, 44.
    eip: u32,
    eflags: u32,
    /// 48: why the code stopped: an exit slot, or [`REASON_SIGNAL`].
    reason: u32,
    /// The signal, x86 vector, page-fault error code and fault address of a stop by signal.
    signal: i32,
    trapno: u32,
    err: u32,
    addr: u32,
    /// Whether the deep stack is mapped (the handler maps it on first touch).
    deep_mapped: u32,
    /// Timer signals since the run started.
    ticks: u32,
    /// While stepping ([`Native::step`]): where the handler records the registers after
    /// each single-stepped instruction of the code, how many, and the room.
    steps: *mut Registers,
    steps_len: usize,
    steps_cap: usize,
}

const OFF_REGS: i32 = 8;
const OFF_EIP: i32 = 40;
const OFF_EFLAGS: i32 = 44;
const OFF_REASON: i32 = 48;

/// The one control block of the process (the machine is a singleton); null until set up.
static CONTROL: std::sync::atomic::AtomicPtr<Control> = std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

/// The process-wide machine: whether it could be set up, and its state between runs.
static MACHINE: OnceLock<Result<Mutex<Machine>, String>> = OnceLock::new();

/// The signals the runner handles, and the actions that were installed before.
const FAULT_SIGNALS: [i32; 5] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE, libc::SIGTRAP];
static PREVIOUS: OnceLock<Vec<(i32, libc::sigaction)>> = OnceLock::new();

/// The helper whose exit slot is `k` (its index in [`RuntimeHelper::all`], listed once
/// rather than at every call).
fn helper_of_slot(k: u32) -> RuntimeHelper {
    static HELPERS: OnceLock<Vec<RuntimeHelper>> = OnceLock::new();
    HELPERS.get_or_init(RuntimeHelper::all)[k as usize]
}

/// The real-time signal of the CPU-time timer.
fn timer_signal() -> i32 {
    libc::SIGRTMIN() + 4
}

/// The state of the mapped machine between runs.
struct Machine {
    /// The code bytes currently loaded, and the longest code loaded so far.
    loaded: Vec<u8>,
    code_high_water: u32,
    runs: u64,
}

/// A handle on the CPU runner for one thread. Creating one sets up the process-wide
/// machine (once) and this thread's signal stack, `gs` base and timer; runs of different
/// handles take turns on the one machine.
pub struct Native {
    timer: libc::timer_t,
    /// Not `Send`: the timer and the `gs` base belong to the creating thread.
    _thread: std::marker::PhantomData<*const ()>,
}

/// Whether this machine can run 32-bit code natively, and if not, why.
pub fn available() -> Result<(), String> {
    machine().map(|_| ())
}

fn machine() -> Result<&'static Mutex<Machine>, String> {
    MACHINE.get_or_init(|| setup_process().map(Mutex::new)).as_ref().map_err(|e| e.clone())
}

impl Native {
    /// Sets up the machine (once per process) and this thread.
    pub fn new() -> Result<Native, EmuError> {
        machine().map_err(EmuError::Native)?;
        setup_thread().map(|timer| Native { timer, _thread: std::marker::PhantomData }).map_err(EmuError::Native)
    }

    /// How many runs the process's machine has executed.
    pub fn runs(&self) -> u64 {
        machine().map(|m| lock(m).runs).unwrap_or(0)
    }

    /// Runs `code` as the compilation of `f` on `input`, allowed the CPU time of `budget`
    /// instructions. The same contract as [`crate::exec::emu::Emulator::run_with_budget`].
    pub fn run_with_budget(
        &mut self,
        code: &MachineCode,
        f: &Function,
        input: &RunInput,
        budget: u64,
    ) -> Result<Result<Outcome, Finding>, EmuError> {
        self.run_inner(code, f, input, budget, None, false, 1)
    }

    /// Like [`Native::run_with_budget`], stopping as soon as the trace is longer than
    /// `reference` when given: the same contract as
    /// [`crate::exec::emu::Emulator::run_against`].
    pub fn run_against(
        &mut self,
        code: &MachineCode,
        f: &Function,
        input: &RunInput,
        budget: u64,
        reference: Option<&[Event]>,
    ) -> Result<Result<Outcome, Finding>, EmuError> {
        self.run_inner(code, f, input, budget, reference, false, 1)
    }

    /// Runs like [`Native::run_with_budget`], single-stepping: returns the registers
    /// before each instruction of the code executed (up to `limit`), for the instruction
    /// trace of an emulator infidelity.
    pub fn step(
        &mut self,
        code: &MachineCode,
        f: &Function,
        input: &RunInput,
        budget: u64,
        limit: usize,
    ) -> Result<Vec<Registers>, EmuError> {
        let mut buf: Vec<Registers> = Vec::with_capacity(limit);
        let ctl = control();
        let m = machine().map_err(EmuError::Native)?;
        {
            let _guard = lock(m);
            // SAFETY: the lock is held; the buffer outlives the run and is only written
            // within its capacity.
            unsafe {
                (*ctl).steps = buf.as_mut_ptr();
                (*ctl).steps_len = 0;
                (*ctl).steps_cap = limit;
            }
        }
        let r = self.run_inner(code, f, input, budget, None, true, 1);
        let _guard = lock(m);
        // SAFETY: as above; `steps_len` entries were written.
        unsafe {
            buf.set_len((*ctl).steps_len);
            (*ctl).steps = std::ptr::null_mut();
            (*ctl).steps_cap = 0;
        }
        r.map(|_| buf)
    }

    fn run_inner(
        &mut self,
        code: &MachineCode,
        f: &Function,
        input: &RunInput,
        budget: u64,
        reference: Option<&[Event]>,
        stepping: bool,
        budget_scale: u64,
    ) -> Result<Result<Outcome, Finding>, EmuError> {
        let initial = preflight(code, f, input)?;
        let m = machine().map_err(EmuError::Native)?;
        let mut m = lock(m);
        m.runs += 1;
        m.load_code(&code.bytes)?;
        let entry_esp = load(&initial, input);
        let mut run = Run {
            code,
            f,
            budget,
            entry_esp,
            regs: Registers { eip: CODE_BASE + code.entry, eflags: entry_registers(entry_esp).eflags | FLAG_IF, ..entry_registers(entry_esp) },
            trace: vec![],
            reference,
            helper_calls: 0,
            armed_us: budget_scale * (BASE_LIMIT_US + budget.saturating_mul(NS_PER_INSN) / 1000),
            cf_types: f.cfvars.values().map(|v| v.ty).collect(),
            stepping,
            scale: budget_scale,
        };
        self.arm(run.armed_us, TICK_US)?;
        let end = run.execute();
        self.arm(0, 0)?;
        if let Err(Finding::CpuTimeout { .. }) = &end {
            // A run stopped by its count of helper calls would stop the same way again.
            if !stepping && budget_scale == 1 && run.helper_calls <= budget {
                // CPU time in a virtual machine also runs while the host has the vCPU
                // descheduled: a timeout is confirmed by a second run with ten times the
                // time before it is a verdict, so that a busy host never makes one.
                drop(m);
                return self.run_inner(code, f, input, budget, reference, stepping, 10);
            }
        }
        let end = match end {
            Ok(end) => end,
            Err(finding) => return Ok(Err(finding)),
        };
        Ok(read_outcome(end, f, run.trace))
    }

    /// Arms this thread's CPU-time timer to fire after `first_us`, then every `period_us`
    /// (both zero: disarms it).
    fn arm(&self, first_us: u64, period_us: u64) -> Result<(), EmuError> {
        let ts = |us: u64| libc::timespec { tv_sec: (us / 1_000_000) as i64, tv_nsec: ((us % 1_000_000) * 1000) as i64 };
        let spec = libc::itimerspec { it_interval: ts(period_us), it_value: ts(first_us) };
        // SAFETY: `timer` is this thread's live timer; `spec` is a valid itimerspec.
        let rc = unsafe { libc::timer_settime(self.timer, 0, &spec, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(EmuError::Native(format!("arming the CPU-time timer: {}", std::io::Error::last_os_error())));
        }
        if first_us != 0 {
            // SAFETY: the control block is set up (the machine exists) and only this
            // thread, holding the machine's lock, runs code that uses it.
            unsafe { (*control()).ticks = 0 };
        }
        Ok(())
    }
}

impl Drop for Native {
    fn drop(&mut self) {
        // SAFETY: `timer` was created by `setup_thread` and is deleted once.
        unsafe { libc::timer_delete(self.timer) };
    }
}

fn lock(m: &Mutex<Machine>) -> std::sync::MutexGuard<'_, Machine> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn control() -> *mut Control {
    CONTROL.load(std::sync::atomic::Ordering::Acquire)
}

/// A host view of `len` bytes of the mapped machine at `addr`.
///
/// # Safety
/// The range must be mapped readable and writable by the harness at the time of use, and
/// no other reference to it may be live.
unsafe fn mem<'a>(addr: u32, len: usize) -> &'a mut [u8] {
    std::slice::from_raw_parts_mut(addr as usize as *mut u8, len)
}

impl Machine {
    fn load_code(&mut self, bytes: &[u8]) -> Result<(), EmuError> {
        if self.loaded == bytes {
            return Ok(());
        }
        let len = bytes.len() as u32;
        let span = page_round(self.code_high_water.max(len));
        protect(CODE_BASE, span, libc::PROT_READ | libc::PROT_WRITE)?;
        // SAFETY: the code region is mapped and now writable; nothing runs in it.
        let region = unsafe { mem(CODE_BASE, span as usize) };
        region[..len as usize].copy_from_slice(bytes);
        region[len as usize..].fill(INT3);
        protect(CODE_BASE, span, libc::PROT_READ | libc::PROT_EXEC)?;
        self.code_high_water = len;
        self.loaded.clear();
        self.loaded.extend_from_slice(bytes);
        Ok(())
    }
}

/// Writes the heap, the callframe and the stack of a run; returns the entry `esp`.
fn load(initial: &State, input: &RunInput) -> u32 {
    let ctl = control();
    // SAFETY: the regions are mapped read-write (the deep stack after `protect`), and the
    // machine's lock is held.
    unsafe {
        mem(HEAP_BASE, HEAP_SIZE as usize).copy_from_slice(&initial.heap);
        write_callframe_page(initial, mem(CALLFRAME_BASE, CALLFRAME_SIZE as usize));
        if (*ctl).deep_mapped != 0 {
            libc::mprotect(STACK_BASE as usize as *mut _, (STACK_WINDOW_BASE - STACK_BASE) as usize, libc::PROT_NONE);
            (*ctl).deep_mapped = 0;
        }
        mem(STACK_WINDOW_BASE, STACK_WINDOW as usize).fill(STACK_POISON);
        let (esp, frame) = entry_frame(input);
        mem(esp, frame.len()).copy_from_slice(&frame);
        esp
    }
}

/// Reads the outcome of a run that ended with `end`.
fn read_outcome(end: End, f: &Function, trace: Vec<Event>) -> Result<Outcome, Finding> {
    // SAFETY: the regions are mapped; the caller holds the machine's lock.
    let (page, heap) = unsafe { (mem(CALLFRAME_BASE, CALLFRAME_SIZE as usize), mem(HEAP_BASE, HEAP_SIZE as usize)) };
    if let Some(offset) = callframe_spill(page, f) {
        return Err(Finding::CallframeOutOfBounds { offset });
    }
    Ok(Outcome { end, trace, heap: heap.to_vec(), callframe: read_callframe(page, f) })
}

/// One run in progress.
struct Run<'a> {
    code: &'a MachineCode,
    f: &'a Function,
    budget: u64,
    entry_esp: u32,
    /// The registers to enter with.
    regs: Registers,
    trace: Vec<Event>,
    /// The reference run's trace: the run stops as soon as its own is longer.
    reference: Option<&'a [Event]>,
    helper_calls: u64,
    /// The CPU time the timer has been set to allow so far.
    armed_us: u64,
    cf_types: Vec<Type>,
    /// Whether every instruction is single-stepped and recorded.
    stepping: bool,
    /// The factor on the time allowed (10 when confirming a timeout).
    scale: u64,
}

impl Run<'_> {
    /// Enters the code and serves its helper calls until it returns, traps or faults.
    fn execute(&mut self) -> Result<End, Finding> {
        loop {
            if let Some(timeout) = self.check_time() {
                return Err(timeout);
            }
            if self.stepping {
                record_step(&self.regs);
            }
            let stop = enter(&self.regs, self.stepping);
            self.regs = stop.regs;
            match stop.reason {
                RETURN_SLOT => {
                    self.regs.eip = RETURN_SENTINEL;
                    return match check_return(&self.regs, self.entry_esp) {
                        Some(finding) => Err(finding),
                        None => Ok(End::Return(return_value(self.f, self.regs.eax, self.regs.edx))),
                    };
                }
                REASON_SIGNAL => {
                    if stop.signal == timer_signal() {
                        // The code continues where the timer interrupted it, unless its
                        // time is up (checked at the top of the loop).
                        continue;
                    }
                    return self.signalled(&stop);
                }
                k => {
                    let helper = helper_of_slot(k);
                    self.regs.eip = helper.address();
                    if let Some(end) = self.call_helper(helper)? {
                        return Ok(end);
                    }
                }
            }
        }
    }

    /// A timeout finding when the run has used up its CPU time: the timer fired more
    /// often than the allowance (which grows with every helper call) explains, or the run
    /// made more helper calls than its budget has instructions. Every call is at least one
    /// instruction (Unicorn counts it), so such a run is past the budget on any machine;
    /// without this bound a loop that calls a helper on every iteration never times out
    /// (each call adds [`US_PER_HELPER`], far more than it takes) and its trace grows
    /// without end (a planted `dce` slip made one grow to 15.6 GB).
    fn check_time(&mut self) -> Option<Finding> {
        // SAFETY: the machine's lock is held; the handler only increments the counter.
        let ticks = unsafe { std::ptr::read_volatile(&(*control()).ticks) } as u64;
        let allowed_us =
            self.scale * (BASE_LIMIT_US + self.budget.saturating_mul(NS_PER_INSN) / 1000 + self.helper_calls * US_PER_HELPER);
        if self.helper_calls <= self.budget {
            if ticks == 0 {
                return None;
            }
            let used_us = self.armed_us + (ticks - 1) * TICK_US;
            if used_us < allowed_us {
                return None;
            }
        }
        let disassembly = crate::exec::machine::disassemble_around(&self.code.bytes, self.regs.eip, None);
        Some(Finding::CpuTimeout { budget: self.budget, limit_us: allowed_us, registers: self.regs, disassembly })
    }

    /// Performs a helper call at the stub of `helper`: `Ok(Some(end))` when it traps,
    /// `Ok(None)` to resume, a finding when its frame is unreadable.
    fn call_helper(&mut self, helper: RuntimeHelper) -> Result<Option<End>, Finding> {
        let esp = self.regs.esp;
        let len = helper_frame_bytes(helper) as u32;
        if !readable(esp, len) {
            // The return address or the arguments lie outside the stack.
            return Err(self.fault(FaultKind::ReadUnmapped, helper.address(), Some(esp)));
        }
        let mut bytes = [0u8; HELPER_FRAME_MAX];
        let frame = &mut bytes[..len as usize];
        // SAFETY: checked readable above; the lock is held.
        frame.copy_from_slice(unsafe { mem(esp, len as usize) });
        // SAFETY: the heap and callframe are mapped read-write; the lock is held.
        let (heap, callframe) = unsafe { (mem(HEAP_BASE, HEAP_SIZE as usize), mem(CALLFRAME_BASE, CALLFRAME_SIZE as usize)) };
        let mut env = FlatEnv { heap, callframe, cf_types: &self.cf_types, trace: &mut self.trace };
        match perform_helper(helper, frame, &self.regs, &mut env) {
            HelperReturn::Trap(kind) => Ok(Some(End::Trap(kind))),
            HelperReturn::Resume(r) => {
                self.helper_calls += 1;
                self.regs = r;
                match self.reference {
                    Some(reference) if self.trace.len() > reference.len() => Err(trace_beyond_reference(reference, &self.trace)),
                    _ => Ok(None),
                }
            }
        }
    }

    /// The end or finding of a run stopped by a fault signal.
    fn signalled(&self, stop: &Stopped) -> Result<End, Finding> {
        let eip = self.regs.eip;
        let len = self.code.bytes.len() as u32;
        let page_fault = |fetch: bool, write: bool, present: bool| match (fetch, write, present) {
            (true, _, false) => FaultKind::FetchUnmapped,
            (true, _, true) => FaultKind::FetchProtected,
            (false, true, false) => FaultKind::WriteUnmapped,
            (false, true, true) => FaultKind::WriteProtected,
            (false, false, false) => FaultKind::ReadUnmapped,
            (false, false, true) => FaultKind::ReadProtected,
        };
        match (stop.signal, stop.trapno) {
            (libc::SIGFPE, 0) => Ok(End::Trap(TrapKind::DivideError)),
            (libc::SIGTRAP, 3) => {
                // `int3` has executed, so `eip` is past it.
                let at = eip.wrapping_sub(1);
                Err(self.fault(classify_pc(at, len).unwrap_or(FaultKind::Interrupt(3)), at, None))
            }
            (libc::SIGILL, _) => Err(self.fault(FaultKind::InvalidOpcode, eip, None)),
            (libc::SIGSEGV, 14) => {
                let (fetch, write, present) = (stop.err & 0x10 != 0, stop.err & 2 != 0, stop.err & 1 != 0);
                let kind = page_fault(fetch, write, present);
                if fetch {
                    Err(self.fault(kind, stop.addr, None))
                } else {
                    Err(self.fault(kind, eip, Some(stop.addr)))
                }
            }
            (libc::SIGSEGV, 13) => self.general_protection(eip, len),
            (signal, vector) => Err(self.fault(FaultKind::Cpu { signal, vector }, eip, None)),
        }
    }

    /// A #GP at `eip`: the check trap (`int 0x41`, whose gate user code may not use),
    /// another `int n`, `hlt`, or something else.
    fn general_protection(&self, eip: u32, len: u32) -> Result<End, Finding> {
        let at = |a: u32| -> Option<u8> {
            let off = a.checked_sub(CODE_BASE)?;
            self.code.bytes.get(off as usize).copied()
        };
        match (at(eip), at(eip.wrapping_add(1))) {
            (Some(0xCD), Some(v)) if v == CHECK_TRAP_VECTOR => Ok(End::Trap(TrapKind::Check(self.regs.eax))),
            (Some(0xCD), Some(v)) => Err(self.fault(FaultKind::Interrupt(v as u32), eip, None)),
            (Some(HLT), _) => Err(self.fault(FaultKind::Halt, eip, None)),
            _ if (HELPER_BASE..HELPER_BASE + PAGE).contains(&eip) => Err(self.fault(FaultKind::IntoHelperStub, eip, None)),
            _ => Err(self.fault(classify_pc(eip, len).unwrap_or(FaultKind::Cpu { signal: libc::SIGSEGV, vector: 13 }), eip, None)),
        }
    }

    fn fault(&self, kind: FaultKind, pc: u32, address: Option<u32>) -> Finding {
        let registers = Registers { eip: pc, ..self.regs };
        let disassembly = crate::exec::machine::disassemble_around(&self.code.bytes, pc, None);
        Finding::Fault { kind, pc, address, registers, disassembly }
    }
}

/// Whether `len` bytes at `addr` are readable by a helper call, as Unicorn's reads are:
/// inside one mapped region (the deep stack only once it is mapped).
fn readable(addr: u32, len: u32) -> bool {
    // SAFETY: reading the flag; the lock is held.
    let deep = unsafe { (*control()).deep_mapped != 0 };
    let stack_low = if deep { STACK_BASE } else { STACK_WINDOW_BASE };
    let regions = [
        (HEAP_BASE, page_round(HEAP_SIZE)),
        (CALLFRAME_BASE, CALLFRAME_SIZE),
        (HELPER_BASE, PAGE),
        (CODE_BASE, CODE_SIZE_MAX),
        (RETURN_SENTINEL, PAGE),
        (stack_low, STACK_BASE + STACK_SIZE - stack_low),
    ];
    let end = addr as u64 + len as u64;
    regions.iter().any(|&(base, size)| base as u64 <= addr as u64 && end <= base as u64 + size as u64)
}

/// Records `regs` as a step (the registers before the instruction at `eip`) when `eip`
/// is in the code and there is room.
fn record_step(regs: &Registers) {
    // SAFETY: the machine's lock is held while stepping; the buffer has `steps_cap` room.
    unsafe {
        let c = &mut *control();
        if !c.steps.is_null() && c.steps_len < c.steps_cap && (CODE_BASE..CODE_BASE + CODE_SIZE_MAX).contains(&regs.eip) {
            c.steps.add(c.steps_len).write(*regs);
            c.steps_len += 1;
        }
    }
}

/// How the code stopped.
struct Stopped {
    reason: u32,
    regs: Registers,
    signal: i32,
    trapno: u32,
    err: u32,
    addr: u32,
}

/// Enters the 32-bit code with `regs` (and `eip`) and returns when it stops.
fn enter(regs: &Registers, single_step: bool) -> Stopped {
    let ctl = control();
    // SAFETY: the control block is live; the caller holds the machine's lock, and the
    // trampoline (set up by `setup_process`) saves and restores every callee-saved
    // register of the C ABI and returns normally (also after a signal, whose handler
    // redirects the 32-bit context to the trampoline's exit).
    unsafe {
        let c = &mut *ctl;
        c.regs = [regs.eax, regs.ecx, regs.edx, regs.ebx, regs.esp, regs.ebp, regs.esi, regs.edi];
        c.eip = regs.eip;
        c.eflags = regs.eflags | FLAG_IF | if single_step { FLAG_TF as u32 } else { 0 };
        c.reason = u32::MAX;
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
        let trampoline: extern "C" fn() = std::mem::transmute((TRAMPOLINE + ENTER) as usize);
        trampoline();
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
        let c = std::ptr::read_volatile(ctl);
        let r = c.regs;
        Stopped {
            reason: c.reason,
            regs: Registers {
                eax: r[0],
                ecx: r[1],
                edx: r[2],
                ebx: r[3],
                esp: r[4],
                ebp: r[5],
                esi: r[6],
                edi: r[7],
                eip: c.eip,
                eflags: c.eflags & !(FLAG_TF as u32),
            },
            signal: c.signal,
            trapno: c.trapno,
            err: c.err,
            addr: c.addr,
        }
    }
}

fn page_round(n: u32) -> u32 {
    n.div_ceil(PAGE) * PAGE
}

fn protect(addr: u32, len: u32, prot: i32) -> Result<(), EmuError> {
    // SAFETY: changes the rights of the machine's own mapping.
    let rc = unsafe { libc::mprotect(addr as usize as *mut _, len as usize, prot) };
    if rc != 0 {
        return Err(EmuError::Native(format!("mprotect {addr:#x}: {}", std::io::Error::last_os_error())));
    }
    Ok(())
}

/// Maps `len` bytes at `addr` exactly, failing if anything is already there.
fn map_fixed(addr: u32, len: u32, prot: i32, what: &str) -> Result<(), String> {
    // SAFETY: a fresh anonymous mapping at an address nothing else uses (NOREPLACE).
    let p = unsafe {
        libc::mmap(
            addr as usize as *mut _,
            len as usize,
            prot,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED || p as usize != addr as usize {
        return Err(format!("cannot map the {what} at {addr:#x}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Sets up the process-wide machine: checks that nothing else lives below 4 GiB, maps
/// the regions, writes the stubs and the trampoline, installs the signal handlers.
fn setup_process() -> Result<Machine, String> {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        return Err("the native runner needs Linux on x86-64".into());
    }
    let maps = std::fs::read_to_string("/proc/self/maps").map_err(|e| format!("reading /proc/self/maps: {e}"))?;
    for line in maps.lines() {
        let start = line.split('-').next().and_then(|s| u64::from_str_radix(s, 16).ok()).unwrap_or(u64::MAX);
        if start < 1 << 32 {
            return Err(format!("the process has a mapping below 4 GiB, which 32-bit code could touch: {line}"));
        }
    }
    let (rw, rx, none) = (libc::PROT_READ | libc::PROT_WRITE, libc::PROT_READ | libc::PROT_EXEC, libc::PROT_NONE);
    map_fixed(HEAP_BASE, page_round(HEAP_SIZE), rw, "heap")?;
    map_fixed(CALLFRAME_BASE, CALLFRAME_SIZE, rw, "callframe")?;
    map_fixed(HELPER_BASE, PAGE, rw, "helper stubs")?;
    map_fixed(CODE_BASE, CODE_SIZE_MAX, rw, "code region")?;
    map_fixed(RETURN_SENTINEL, PAGE, rw, "return sentinel")?;
    map_fixed(STACK_BASE, STACK_WINDOW_BASE - STACK_BASE, none, "deep stack")?;
    map_fixed(STACK_WINDOW_BASE, STACK_WINDOW, rw, "stack window")?;
    map_fixed(TRAMPOLINE, PAGE, rw, "trampoline")?;
    // SAFETY: the pages were just mapped read-write; nothing runs in them yet.
    unsafe {
        mem(CODE_BASE, CODE_SIZE_MAX as usize).fill(INT3);
        let stubs = mem(HELPER_BASE, PAGE as usize);
        stubs.fill(HLT);
        for (k, h) in RuntimeHelper::all().into_iter().enumerate() {
            let at = (h.address() - HELPER_BASE) as usize;
            stubs[at..at + 7].copy_from_slice(&far_jump(TRAMPOLINE + EXITS + EXIT_STRIDE * k as u32));
        }
        let sentinel = mem(RETURN_SENTINEL, PAGE as usize);
        sentinel.fill(INT3);
        sentinel[..7].copy_from_slice(&far_jump(TRAMPOLINE + EXITS + EXIT_STRIDE * RETURN_SLOT));
        let page = mem(TRAMPOLINE, PAGE as usize);
        page.fill(INT3);
        let enter = enter_code();
        page[ENTER as usize..ENTER as usize + enter.len()].copy_from_slice(&enter);
        let common = common_exit_code();
        page[COMMON_EXIT as usize..COMMON_EXIT as usize + common.len()].copy_from_slice(&common);
        for slot in (0..RuntimeHelper::all().len() as u32).chain([RETURN_SLOT]) {
            let at = EXITS + EXIT_STRIDE * slot;
            let code = exit_code(slot, at);
            page[at as usize..at as usize + code.len()].copy_from_slice(&code);
        }
    }
    assert!(RuntimeHelper::all().len() < RETURN_SLOT as usize && HELPER_STRIDE >= 7);
    for (addr, len) in [(HELPER_BASE, PAGE), (CODE_BASE, CODE_SIZE_MAX), (RETURN_SENTINEL, PAGE), (TRAMPOLINE, PAGE)] {
        protect(addr, len, rx).map_err(|e| e.to_string())?;
    }
    let ctl = Box::into_raw(Box::new(Control {
        saved_rsp: 0,
        regs: [0; 8],
        eip: 0,
        eflags: 0,
        reason: 0,
        signal: 0,
        trapno: 0,
        err: 0,
        addr: 0,
        deep_mapped: 0,
        ticks: 0,
        steps: std::ptr::null_mut(),
        steps_len: 0,
        steps_cap: 0,
    }));
    CONTROL.store(ctl, std::sync::atomic::Ordering::Release);
    install_handlers()?;
    Ok(Machine { loaded: vec![], code_high_water: CODE_SIZE_MAX, runs: 0 })
}

/// `jmp far 0x33:target` in 32-bit code.
fn far_jump(target: u32) -> [u8; 7] {
    let t = target.to_le_bytes();
    [0xEA, t[0], t[1], t[2], t[3], USER64_CS, 0]
}

/// `gs:[disp32]` as a ModRM/SIB/displacement for register `reg` (without the opcode).
fn gs_operand(reg: u8, disp: i32) -> Vec<u8> {
    let mut v = vec![(reg << 3) | 4, 0x25];
    v.extend_from_slice(&disp.to_le_bytes());
    v
}

/// `mov r32, gs:[disp]`.
fn load_gs(reg: u8, disp: i32) -> Vec<u8> {
    [vec![0x65, 0x8B], gs_operand(reg, disp)].concat()
}

/// `mov gs:[disp], r32`.
fn store_gs(reg: u8, disp: i32) -> Vec<u8> {
    [vec![0x65, 0x89], gs_operand(reg, disp)].concat()
}

const RAX: u8 = 0;
const RSP: u8 = 4;

/// The 64-bit entry (`extern "C" fn()`): saves the callee-saved registers and `rsp`,
/// loads the flat data segment, and `iretq`s into the 32-bit code with the control
/// block's registers.
fn enter_code() -> Vec<u8> {
    let mut c = vec![0x53, 0x55, 0x41, 0x54, 0x41, 0x55, 0x41, 0x56, 0x41, 0x57]; // push rbx rbp r12-r15
    c.extend([0x65, 0x48, 0x89]); // mov gs:[0], rsp
    c.extend(gs_operand(RSP, 0));
    c.extend([0xB8, USER_DS, 0, 0, 0, 0x8E, 0xD8, 0x8E, 0xC0]); // mov eax, ds; mov ds, eax; mov es, eax
    c.extend([0x6A, USER_DS]); // push ss
    c.extend(load_gs(RAX, OFF_REGS + 4 * RSP as i32));
    c.push(0x50); // push rsp
    c.extend(load_gs(RAX, OFF_EFLAGS));
    c.push(0x50); // push rflags
    c.extend([0x6A, USER32_CS as u8]); // push cs
    c.extend(load_gs(RAX, OFF_EIP));
    c.push(0x50); // push rip
    for r in [1u8, 2, 3, 5, 6, 7, 0] {
        c.extend(load_gs(r, OFF_REGS + 4 * r as i32));
    }
    c.extend([0x48, 0xCF]); // iretq
    assert!(c.len() <= COMMON_EXIT as usize);
    c
}

/// The exit of slot `slot` at trampoline offset `at`, reached in 64-bit mode by the far
/// jump of a stub: saves `eax`, puts the slot in `eax` and joins the common exit.
fn exit_code(slot: u32, at: u32) -> Vec<u8> {
    let mut c = store_gs(RAX, OFF_REGS);
    c.push(0xB8);
    c.extend(slot.to_le_bytes());
    let next = at + c.len() as u32 + 5;
    c.push(0xE9);
    c.extend((COMMON_EXIT.wrapping_sub(next) as i32).to_le_bytes());
    assert!(c.len() <= EXIT_STRIDE as usize);
    c
}

/// Offset of the common tail (restore `rsp` and the callee-saved registers, return),
/// which is also where the signal handler sends a stopped context.
fn tail_offset() -> u32 {
    COMMON_EXIT + common_exit_head().len() as u32
}

/// Stores the registers (eax is already stored), the reason and the flags.
fn common_exit_head() -> Vec<u8> {
    let mut c = vec![];
    for r in [1u8, 2, 3, 4, 5, 6, 7] {
        c.extend(store_gs(r, OFF_REGS + 4 * r as i32));
    }
    c.extend(store_gs(RAX, OFF_REASON));
    c.extend([0x65, 0x48, 0x8B]); // mov rsp, gs:[0]
    c.extend(gs_operand(RSP, 0));
    c.extend([0x9C, 0x58]); // pushfq; pop rax
    c.extend(store_gs(RAX, OFF_EFLAGS));
    c
}

fn common_exit_code() -> Vec<u8> {
    let mut c = common_exit_head();
    c.extend([0x65, 0x48, 0x8B]); // mov rsp, gs:[0]
    c.extend(gs_operand(RSP, 0));
    c.push(0xFC); // cld
    c.extend([0x41, 0x5F, 0x41, 0x5E, 0x41, 0x5D, 0x41, 0x5C, 0x5D, 0x5B, 0xC3]); // pop r15-r12 rbp rbx; ret
    assert!(COMMON_EXIT as usize + c.len() <= EXITS as usize);
    c
}

/// Sets up the calling thread: a signal stack (the code's own stack cannot take a
/// signal frame), the `gs` base, and a CPU-time timer that signals this thread.
fn setup_thread() -> Result<libc::timer_t, String> {
    // SAFETY: plain system calls on this thread's own state; the signal stack is leaked
    // on purpose (a thread's signal stack must outlive every signal it may take).
    unsafe {
        let mut old: libc::stack_t = std::mem::zeroed();
        libc::sigaltstack(std::ptr::null(), &mut old);
        if old.ss_flags & libc::SS_DISABLE != 0 || old.ss_size < 1 << 16 {
            let size = 1 << 16;
            let sp = Box::leak(vec![0u8; size].into_boxed_slice());
            let st = libc::stack_t { ss_sp: sp.as_mut_ptr().cast(), ss_flags: 0, ss_size: size };
            if libc::sigaltstack(&st, std::ptr::null_mut()) != 0 {
                return Err(format!("sigaltstack: {}", std::io::Error::last_os_error()));
            }
        }
        const ARCH_SET_GS: i64 = 0x1001;
        if libc::syscall(libc::SYS_arch_prctl, ARCH_SET_GS, control() as u64) != 0 {
            return Err(format!("arch_prctl(ARCH_SET_GS): {}", std::io::Error::last_os_error()));
        }
        let mut ev: libc::sigevent = std::mem::zeroed();
        ev.sigev_notify = libc::SIGEV_THREAD_ID;
        ev.sigev_signo = timer_signal();
        ev.sigev_notify_thread_id = libc::gettid();
        let mut timer: libc::timer_t = std::ptr::null_mut();
        if libc::timer_create(libc::CLOCK_THREAD_CPUTIME_ID, &mut ev, &mut timer) != 0 {
            return Err(format!("timer_create: {}", std::io::Error::last_os_error()));
        }
        Ok(timer)
    }
}

fn install_handlers() -> Result<(), String> {
    let mut previous = vec![];
    for sig in FAULT_SIGNALS.into_iter().chain([timer_signal()]) {
        // SAFETY: installs `on_signal` with a zeroed, then filled, sigaction.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, &sa, &mut old) != 0 {
                return Err(format!("sigaction({sig}): {}", std::io::Error::last_os_error()));
            }
            previous.push((sig, old));
        }
    }
    let _ = PREVIOUS.set(previous);
    Ok(())
}

/// The signal handler. In 32-bit code (`cs` 0x23), a signal stops the run: the deep
/// stack is mapped on its first touch and the access retried; anything else stores the
/// registers and the cause in the control block and sends the context to the
/// trampoline's exit in 64-bit mode. Elsewhere a timer signal is only counted and any
/// other signal goes to the handler installed before.
extern "C" fn on_signal(sig: i32, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let ctl = control();
    // SAFETY: the kernel passes a valid siginfo and ucontext; the control block, when
    // set, is live for the whole process.
    unsafe {
        let uc = &mut *(ctx as *mut libc::ucontext_t);
        let g = &mut uc.uc_mcontext.gregs;
        let cs = g[libc::REG_CSGSFS as usize] as u64 & 0xFFFF;
        let timer = sig == timer_signal();
        if timer && !ctl.is_null() {
            (*ctl).ticks = (*ctl).ticks.wrapping_add(1);
        }
        let single_step = sig == libc::SIGTRAP && g[libc::REG_TRAPNO as usize] == 1;
        if single_step && !ctl.is_null() && !(*ctl).steps.is_null() {
            if cs == USER32_CS {
                let r = |k: i32| g[k as usize] as u32;
                record_step(&Registers {
                    eax: r(libc::REG_RAX),
                    ecx: r(libc::REG_RCX),
                    edx: r(libc::REG_RDX),
                    ebx: r(libc::REG_RBX),
                    esp: r(libc::REG_RSP),
                    ebp: r(libc::REG_RBP),
                    esi: r(libc::REG_RSI),
                    edi: r(libc::REG_RDI),
                    eip: r(libc::REG_RIP),
                    eflags: r(libc::REG_EFL) & !(FLAG_TF as u32 | FLAG_IF),
                });
            } else {
                // The far jump back to 64-bit mode was stepped: stop stepping there.
                g[libc::REG_EFL as usize] &= !FLAG_TF;
            }
            return;
        }
        if cs != USER32_CS || ctl.is_null() {
            if !timer {
                chain(sig, info, ctx);
            }
            return;
        }
        let c = &mut *ctl;
        let trapno = g[libc::REG_TRAPNO as usize] as u32;
        let addr = (*info).si_addr() as usize as u32;
        let err = g[libc::REG_ERR as usize] as u32;
        let deep = (STACK_BASE..STACK_WINDOW_BASE).contains(&addr);
        if sig == libc::SIGSEGV && trapno == 14 && deep && err & 0x10 == 0 && c.deep_mapped == 0 {
            let len = (STACK_WINDOW_BASE - STACK_BASE) as usize;
            libc::mprotect(STACK_BASE as usize as *mut _, len, libc::PROT_READ | libc::PROT_WRITE);
            std::ptr::write_bytes(STACK_BASE as usize as *mut u8, STACK_POISON, len);
            c.deep_mapped = 1;
            return;
        }
        let r = |k: i32| g[k as usize] as u32;
        c.regs = [
            r(libc::REG_RAX),
            r(libc::REG_RCX),
            r(libc::REG_RDX),
            r(libc::REG_RBX),
            r(libc::REG_RSP),
            r(libc::REG_RBP),
            r(libc::REG_RSI),
            r(libc::REG_RDI),
        ];
        c.eip = r(libc::REG_RIP);
        c.eflags = r(libc::REG_EFL);
        c.reason = REASON_SIGNAL;
        c.signal = sig;
        c.trapno = trapno;
        c.err = err;
        c.addr = addr;
        g[libc::REG_RIP as usize] = (TRAMPOLINE + tail_offset()) as i64;
        g[libc::REG_CSGSFS as usize] = (g[libc::REG_CSGSFS as usize] & !0xFFFF) | USER64_CS as i64;
        g[libc::REG_EFL as usize] &= !(FLAG_TF | FLAG_DF | FLAG_AC);
    }
}

/// Passes a signal that is not the runner's to the action installed before.
///
/// # Safety
/// Called from the signal handler with the kernel's arguments.
unsafe fn chain(sig: i32, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let Some(old) = PREVIOUS.get().and_then(|p| p.iter().find(|(s, _)| *s == sig)).map(|(_, a)| *a) else {
        return;
    };
    match old.sa_sigaction {
        libc::SIG_DFL | libc::SIG_IGN => {
            // Restore the old action; the faulting instruction runs again and takes it.
            libc::sigaction(sig, &old, std::ptr::null_mut());
        }
        h if old.sa_flags & libc::SA_SIGINFO != 0 => {
            let f: extern "C" fn(i32, *mut libc::siginfo_t, *mut libc::c_void) = std::mem::transmute(h);
            f(sig, info, ctx);
        }
        h => {
            let f: extern "C" fn(i32) = std::mem::transmute(h);
            f(sig);
        }
    }
}

