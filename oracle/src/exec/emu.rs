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
//! | helper stubs | `HELPER_BASE`, one page | rx | `ret`; a code hook intercepts every stub before it returns |
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
//!   When new code is loaded, every translated block of the code region is dropped
//!   (those overlapping the bytes that may have changed, and, since replacing the block
//!   hook drops every block it instrumented, the rest of the region's too; the helper
//!   stubs' blocks, outside the hook's range, are reused), and every [`FLUSH_EVERY_PROGRAMS`]th new program the whole
//!   translation cache is flushed, so the translation buffer holds at most that many
//!   programs' blocks and its resident pages do not grow with the number of programs
//!   (issue 23); it is also bounded ([`TCG_BUFFER_SIZE`]).
//!   The hook on the code's blocks is replaced at the same time, since Unicorn keeps a
//!   record of every block a hook instrumented that no flush forgets (`add_block_hook`).
//! * In the `tandem` command, the translation buffer lies just below the executable's
//!   code ([`mmap_for_unicorn`]), so translated code calls Unicorn's helpers directly
//!   rather than through each block's constant pool, whose upkeep grows with the square
//!   of the calls in a block.
//! * The CPU runs in flat 32-bit protected mode, every segment's base zero, and its state
//!   says so: the stack segment is loaded from a flat descriptor at creation
//!   ([`load_flat_stack_segment`]), so Unicorn's translations do not add a segment base
//!   to every address.
//! * A helper call runs the one Rust implementation ([`crate::exec::runtime::call_helper`])
//!   over Unicorn memory, then returns like a cdecl callee that trashes everything it may:
//!   `eax ecx edx` that carry no result hold [`POISON_EAX`], [`POISON_ECX`],
//!   [`POISON_EDX`], and every arithmetic flag is flipped, so code that relies on a
//!   value surviving a call is caught. The stub's own `ret` then returns to the caller,
//!   so the hook writes neither `eip` nor `esp`: a hook that writes `eip` makes Unicorn
//!   leave its execution loop and enter it again, about 60 times a run.
//! * The run ends at the first of: reaching `RETURN_SENTINEL` (checked against cdecl),
//!   #DE or `int 0x41` (the IR's traps), a 64-bit division helper that traps, any other
//!   fault (a [`Finding::Fault`] with disassembly), the instruction budget
//!   ([`Finding::Timeout`]), or, in a run compared with a reference
//!   ([`Emulator::run_against`]), a helper call that makes the trace longer than the
//!   reference's ([`Finding::TraceBeyondReference`]). A run that returns must also leave the callframe page
//!   outside the variables' slots untouched.
//! * Every guest store is a plain host store once the page's translation is known, as
//!   loads always were. Unicorn sends a store down its slow path (a look-up of the
//!   memory region, twice) while the page's translation may execute code or a memory
//!   hook covers the page, and on x86 without paging every translation may execute. So
//!   the translations are this runner's ([`tlb_fill`]: the data regions read and write
//!   only, everything else as before), and the fault hooks cover every address except
//!   the data regions that are always mapped (heap, callframe, stack window), where no
//!   access can be unmapped and none but a fetch can break a protection; a fetch there
//!   is the same `FetchProtected` at the same address (the first byte of the block, the
//!   program counter) without the hook ([`install_hooks`]).
//! * A block hook remembers the last block of the code that ran, so a fault outside the
//!   code names the instruction that left it. The same hook counts the instruction
//!   budget by translated blocks (an upper bound of Unicorn's count at every point),
//!   since Unicorn's own count hooks every instruction and made translation most of a
//!   run's cost; a run whose count by blocks would pass the budget is run again from its
//!   start with Unicorn's exact count, so every verdict, and where a timeout stops, is
//!   the exact count's ([`BlockBudget`]).
//!
//! This implements the "Emulator runner" of `DESIGN.md` ("The harness") and issue 4.

use crate::exec::interp::{RunInput, State};
use crate::exec::machine::{
    check_return, classify_pc, entry_frame, entry_registers, helper_frame_bytes, perform_helper, preflight, read_slot,
    return_value, trace_beyond_reference, write_callframe_page, HelperReturn, Stop, HELPER_FRAME_MAX, INT3,
    TRACE_UNBOUNDED,
};
pub use crate::exec::machine::{
    budget_for, disassemble, disassemble_around, EmuError, FaultKind, Finding, HarnessLimit, Registers, BUDGET_SLACK,
    CALLFRAME_POISON, CALLFRAME_SIZE, ENTRY_EBP, ENTRY_EBX, ENTRY_EDI, ENTRY_ESI, INSNS_PER_FUEL, PAGE, POISON_EAX,
    POISON_ECX, POISON_EDX, STACK_POISON, STACK_WINDOW, STACK_WINDOW_BASE,
};
use crate::exec::outcome::{End, Event, Outcome, Value};
use crate::exec::runtime::HelperEnv;
use iced_x86::Mnemonic;
use tandem_core::abi::{
    InsnIndex, MachineCode, RuntimeHelper, CHECK_TRAP_VECTOR, CODE_BASE, CODE_SIZE_MAX, HELPER_BASE, RETURN_SENTINEL, STACK_BASE, STACK_SIZE,
};
use tandem_core::ir::{Function, TrapKind, Type, CALLFRAME_BASE, CALLFRAME_SLOT, HEAP_BASE, HEAP_SIZE};
use unicorn_engine::unicorn_const::{uc_ctl, uc_error, Arch, ControlType, HookType, MemType, Mode, Prot, TlbEntry, TlbType};
use unicorn_engine::{Context, RegisterX86, UcHookId, Unicorn};

/// The size of Unicorn's translated-code buffer: a full buffer is flushed and refilled,
/// so this bounds the memory a worker's instance grows to.
pub const TCG_BUFFER_SIZE: u32 = 32 << 20;

/// How far below this executable's code [`mmap_for_unicorn`] looks for room for a
/// translation buffer: well inside the ±2 GiB a 32-bit displacement reaches, with the
/// executable's own size to spare.
const NEAR_CODE_REACH: usize = 1 << 30;

/// Unicorn's `mmap64` calls, which the `tandem` command's link sends here
/// (`oracle/build.rs` links it with `--wrap=mmap64`; its `__wrap_mmap64` calls this):
/// the translation buffer goes just below this executable's code, every other mapping
/// is made as asked.
///
/// Why: translated code calls Unicorn's helpers (the memory accesses' slow paths, the
/// flags, the block hook), which are linked into this executable. A helper within ±2 GiB
/// of the call site is a direct call; any other is an indirect call through a constant
/// of the block's constant pool, and Unicorn keeps that pool as a list sorted by
/// insertion, so a block with n such calls costs about n² comparisons
/// (`new_pool_insert`'s `memcmp`, about 6% of a campaign's time). Unicorn asks for its
/// buffer with `mmap64(NULL, ...)`, and the kernel puts that among the shared libraries,
/// far from the executable. What runs is the same code either way: only how the
/// translated code reaches the helpers changes.
///
/// The request is recognized by its shape (no address, read-write-execute, private and
/// anonymous), which nothing else in this process asks for. When no place below the
/// code is free, or the kernel does not know `MAP_FIXED_NOREPLACE` (before Linux 4.17),
/// the buffer is mapped as Unicorn asked.
///
/// # Safety
/// As `mmap` with the same arguments.
pub unsafe fn mmap_for_unicorn(
    addr: *mut libc::c_void,
    len: usize,
    prot: libc::c_int,
    flags: libc::c_int,
    fd: libc::c_int,
    offset: libc::off_t,
) -> *mut libc::c_void {
    let rwx = libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC;
    if addr.is_null() && prot == rwx && flags == libc::MAP_PRIVATE | libc::MAP_ANONYMOUS && fd == -1 {
        if let Some(p) = map_near_code(len) {
            return p;
        }
    }
    // SAFETY: the caller's own request (`mmap`, not `mmap64`: the linker sends `mmap64`
    // here; on 64-bit Linux they are one function).
    unsafe { libc::mmap(addr, len, prot, flags, fd, offset) }
}

/// Maps `len` bytes read-write-execute in the first free place below this executable's
/// code, 2 MiB-aligned, within [`NEAR_CODE_REACH`] of it and above 4 GiB (the native
/// runner needs nothing mapped below, `exec::native`); `None` when there is none.
pub fn map_near_code(len: usize) -> Option<*mut libc::c_void> {
    const ALIGN: usize = 2 << 20;
    // Any function of this executable marks its code; Unicorn is linked into it.
    let code = map_near_code as *const () as usize;
    let step = len.div_ceil(ALIGN) * ALIGN;
    let mut at = code & !(ALIGN - 1);
    loop {
        at = at.checked_sub(step)?;
        if at < 1 << 32 || code - at > NEAR_CODE_REACH {
            return None;
        }
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE;
        let rwx = libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC;
        // SAFETY: a new anonymous mapping that replaces nothing (`MAP_FIXED_NOREPLACE`).
        let p = unsafe { libc::mmap(at as *mut libc::c_void, len, rwx, flags, -1, 0) };
        if p == at as *mut libc::c_void {
            return Some(p);
        }
        if p != libc::MAP_FAILED {
            // A kernel without the flag took the address as a hint and mapped elsewhere.
            // SAFETY: `p` is the mapping just made, of `len` bytes, which nothing uses.
            unsafe { libc::munmap(p, len) };
            return None;
        }
        // Taken (`EEXIST`): the next place down.
    }
}

fn uc_err(what: &str) -> impl Fn(uc_error) -> EmuError + '_ {
    move |e| EmuError::Unicorn(format!("{what}: {e:?}"))
}


/// The per-run state the hooks see (Unicorn's user data).
struct Hooked {
    stop: Option<Stop>,
    trace: Vec<Event>,
    /// The run stops once its trace holds more events than this (the reference's
    /// length, [`Emulator::run_against`]), else [`TRACE_UNBOUNDED`].
    trace_limit: usize,
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
    /// On a stepping instance ([`Emulator::stepping`]): the registers before each
    /// instruction of the code executed, up to [`STEP_LIMIT`].
    steps: Vec<Registers>,
    /// The budget counted by blocks (see [`BlockBudget`]).
    budget: BlockBudget,
    /// The host memory behind the stack window (`Emulator::stack`, which outlives the
    /// hooks), `STACK_WINDOW` bytes from `STACK_WINDOW_BASE`.
    stack_window: *const u8,
}

impl Hooked {
    /// Copies the guest bytes at `addr` into `buf` from the stack window's host memory;
    /// false, copying nothing, unless they all lie in the window.
    fn read_stack_window(&self, addr: u32, buf: &mut [u8]) -> bool {
        let Some(at) = stack_window_range(addr, buf.len()) else { return false };
        // SAFETY: `stack_window` points to `STACK_WINDOW` live bytes (see the field), of
        // which `at` is a part, and no guest code executes meanwhile ([`HostMemory`]).
        buf.copy_from_slice(unsafe { std::slice::from_raw_parts(self.stack_window.add(at.start), buf.len()) });
        true
    }
}

/// Where the `len` guest bytes at `addr` lie in the stack window's host memory, if they
/// all lie in it.
fn stack_window_range(addr: u32, len: usize) -> Option<std::ops::Range<usize>> {
    let at = addr.checked_sub(STACK_WINDOW_BASE)? as usize;
    (at + len <= STACK_WINDOW as usize).then_some(at..at + len)
}

/// The instruction budget counted by the block hook, so that a run does not pay for
/// Unicorn's own instruction count: that count is a code hook on every instruction,
/// which makes TCG sync the flags and the program counter and call out before every
/// instruction, and made translating a program's blocks most of the cost of a run.
///
/// The block hook adds, on entry to each translated block of the code, the number of
/// instructions the block holds (an upper bound of what the entry executes: a block
/// cut short by a trap counts whole); helper calls add [`HELPER_CALL_INSNS`] each. The
/// count is an upper bound of Unicorn's count of the same run at every point, so while
/// it stays within the budget (with [`BUDGET_MARGIN`] to spare), Unicorn's count would
/// not have stopped the run either and the run is exactly the run with Unicorn's count.
/// When it would pass the budget, the hook stops the run before the block executes and
/// the run is done again from its start with Unicorn's exact count
/// ([`Emulator::run_with_budget`]), so a timeout stops where it always stopped.
#[derive(Default)]
struct BlockBudget {
    /// Whether the run counts by blocks (false: Unicorn's exact count is on).
    on: bool,
    /// The instructions the run may execute.
    limit: u64,
    /// The upper bound of the instructions executed so far.
    counted: u64,
    /// Set when the count would pass `limit`: the run was stopped and is not a result.
    exceeded: bool,
    /// For each offset of the loaded code: the number of the instruction starting there
    /// in its linear decoding, or `u32::MAX` if no instruction starts there; one more
    /// entry for the end.
    index: Vec<u32>,
}

/// What one helper call may count in Unicorn's instruction count (the stub's `ret`,
/// with room to spare).
const HELPER_CALL_INSNS: u64 = 2;
/// Instructions a run may execute outside the code without ending otherwise than by a
/// fault (the sentinel's `int3`), with room to spare.
const BUDGET_MARGIN: u64 = 16;

impl BlockBudget {
    /// Indexes the instructions of `code` (just loaded): the index its undefined-flags
    /// check left when that describes these bytes, else one decoded here.
    fn index(&mut self, code: &MachineCode) {
        match code.index.as_ref().and_then(|x| x.for_bytes(&code.bytes)) {
            Some(starts) => {
                self.index.clear();
                self.index.extend_from_slice(starts);
            }
            None => InsnIndex::decode_into(&code.bytes, &mut self.index),
        }
    }

    /// An upper bound of the instructions of the block at `addr` of `size` bytes: their
    /// number when both ends are instruction boundaries of the linear decoding, else the
    /// bytes (no instruction is shorter than one); a block of no bytes as one.
    fn block_insns(&self, addr: u32, size: u32) -> u64 {
        let start = addr.wrapping_sub(CODE_BASE) as usize;
        let end = start + size as usize;
        match (self.index.get(start), self.index.get(end)) {
            (Some(&a), Some(&b)) if a != u32::MAX && b != u32::MAX && b >= a && size > 0 => (b - a) as u64,
            _ => (size as u64).max(1),
        }
    }
}

/// The most instructions a stepping run records.
pub const STEP_LIMIT: usize = 100_000;

type Uc<'a> = Unicorn<'a, Hooked>;

/// One reused Unicorn instance with the environment of `tandem_core::abi` mapped.
pub struct Emulator {
    /// Declared first so that it is dropped (closed) before `code` and `stack`, whose
    /// memory it maps.
    uc: Uc<'static>,
    /// The host memory behind the code region.
    code: HostMemory,
    /// The host memory behind the stack window: poisoned and given the arguments
    /// directly before a run, and read by the helper hook for a call's frame.
    stack: HostMemory,
    /// The code bytes currently loaded: also the part of the code region that must be
    /// refilled with `int3` when shorter code is loaded.
    loaded: Vec<u8>,
    /// A callframe page: written before a run, read back after it (one buffer for
    /// every run).
    page: Vec<u8>,
    /// The CPU state right after creation, restored before every run. Registers alone
    /// are not enough: after a #DE the CPU remembers the exception in flight, and the
    /// next #DE would become a double fault.
    pristine: Context,
    /// The block hook ([`add_block_hook`]), replaced whenever new code is loaded.
    block_hook: UcHookId,
    runs: u64,
    /// The size of the translated-code buffer it was created with.
    tcg_bytes: u32,
    /// Whether it records the registers before every instruction ([`Emulator::stepping`]).
    stepping: bool,
    /// How many times the Unicorn instance was replaced ([`RENEW_AFTER_CODE_BYTES`]).
    renewals: u64,
    /// New programs loaded since the translation cache was last flushed whole
    /// ([`FLUSH_EVERY_PROGRAMS`]).
    loads_since_flush: u32,
}

/// Every this many new programs, loading one flushes the whole translation cache
/// rather than the code's blocks alone ([`Emulator::load_code`]): the translation
/// buffer then holds the translations of at most this many programs, so its resident
/// pages stay bounded (issue 23), while the helper stubs' blocks are translated once
/// per this many programs rather than once per program.
pub const FLUSH_EVERY_PROGRAMS: u32 = 8;

/// Code longer than this (about one program in 500 of the `mix` profile) is run, and
/// the instance is then replaced by a fresh one before the next program is loaded.
/// What an instance keeps between programs grows with the largest program it has run
/// and is never given back: Unicorn's own tables (translation-block hash table, TLB,
/// page descriptors), the translation buffer's resident pages, the runner's code copy
/// and budget index. A long campaign kept meeting larger rare programs, so a worker's
/// resident set crept up for the whole hour (issue 23); a fresh instance after each of
/// them holds only what the common programs need, which the first minute already
/// reaches. A fresh instance costs about as much as a few runs.
pub const RENEW_AFTER_CODE_BYTES: u32 = 1 << 16;

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
        let mut code = HostMemory::new(CODE_SIZE_MAX as usize);
        code.bytes_mut().fill(INT3);
        let stack = HostMemory::new(STACK_WINDOW as usize);
        let mut uc: Uc<'static> = Unicorn::new_with_data(
            Arch::X86,
            Mode::MODE_32,
            Hooked {
                stop: None,
                trace: vec![],
                trace_limit: TRACE_UNBOUNDED,
                cf_types: vec![],
                helper_calls: 0,
                code_len: 0,
                deep_stack_mapped: false,
                last_block: None,
                helpers: RuntimeHelper::all().into_iter().map(|h| (h.address(), h)).collect(),
                steps: vec![],
                budget: BlockBudget::default(),
                stack_window: stack.ptr,
            },
        )
        .map_err(uc_err("creating the x86-32 engine"))?;
        set_tcg_buffer_size(&mut uc, bytes)?;
        uc.ctl_set_tlb_type(TlbType::VIRTUAL).map_err(uc_err("choosing the runner's address translation"))?;
        uc.add_tlb_hook(1, 0, tlb_fill).map_err(uc_err("hooking address translation"))?;
        load_flat_stack_segment(&mut uc)?;
        map_regions(&mut uc, &code, &stack)?;
        let block_hook = install_hooks(&mut uc)?;
        let pristine = uc.context_init().map_err(uc_err("saving the initial CPU state"))?;
        Ok(Emulator {
            uc,
            code,
            loaded: vec![],
            stack,
            page: vec![0; CALLFRAME_SIZE as usize],
            pristine,
            block_hook,
            runs: 0,
            tcg_bytes: bytes,
            stepping: false,
            renewals: 0,
            loads_since_flush: 0,
        })
    }

    /// An instance that also records the registers before every instruction of the code
    /// (slow: for the instruction trace of an emulator infidelity, never for campaigns).
    pub fn stepping() -> Result<Emulator, EmuError> {
        let mut emu = Emulator::new()?;
        emu.add_step_hook()?;
        Ok(emu)
    }

    fn add_step_hook(&mut self) -> Result<(), EmuError> {
        self.stepping = true;
        self.uc
            .add_code_hook(CODE_BASE as u64, (CODE_BASE + CODE_SIZE_MAX - 1) as u64, |uc: &mut Uc<'_>, addr: u64, _size: u32| {
                if uc.get_data().steps.len() < STEP_LIMIT {
                    let r = Registers { eip: addr as u32, ..registers_of(uc) };
                    uc.get_data_mut().steps.push(r);
                }
            })
            .map_err(uc_err("hooking every instruction"))?;
        Ok(())
    }

    /// Replaces the instance by a fresh one of the same kind ([`RENEW_AFTER_CODE_BYTES`]).
    fn renew(&mut self) -> Result<(), EmuError> {
        let mut fresh = Emulator::with_translation_buffer(self.tcg_bytes)?;
        if self.stepping {
            fresh.add_step_hook()?;
        }
        fresh.runs = self.runs;
        fresh.renewals = self.renewals + 1;
        *self = fresh;
        Ok(())
    }

    /// The registers recorded before each instruction of the last run of a stepping
    /// instance.
    pub fn take_steps(&mut self) -> Vec<Registers> {
        std::mem::take(&mut self.uc.get_data_mut().steps)
    }

    /// How many runs this instance has executed.
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// How many times its Unicorn instance was replaced by a fresh one after a large
    /// program ([`RENEW_AFTER_CODE_BYTES`]).
    pub fn renewals(&self) -> u64 {
        self.renewals
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
        self.run_against(code, f, input, budget, None)
    }

    /// Like [`Emulator::run_with_budget`], and when `reference` is the trace of the
    /// reference run of the same input, the run stops as soon as its own trace is longer
    /// ([`Finding::TraceBeyondReference`]): its outcome already differs, and its trace
    /// stays as short as the reference's.
    pub fn run_against(
        &mut self,
        code: &MachineCode,
        f: &Function,
        input: &RunInput,
        budget: u64,
        reference: Option<&[Event]>,
    ) -> Result<Result<Outcome, Finding>, EmuError> {
        self.uc.get_data_mut().trace_limit = reference.map_or(TRACE_UNBOUNDED, <[Event]>::len);
        let initial = preflight(code, f, input)?;
        let mut entry_esp = self.load(code, f, input, &initial)?;
        self.runs += 1;
        let start = (CODE_BASE + code.entry) as u64;
        // First counted by blocks, without Unicorn's count (a count of 0 means "no
        // limit" to it); if that count would pass the budget, the run again from its
        // start with Unicorn's exact count ([`BlockBudget`]).
        self.set_block_budget(Some(budget));
        let mut result = self.uc.emu_start(start, RETURN_SENTINEL as u64, 0, 0);
        if self.uc.get_data().budget.exceeded {
            entry_esp = self.load(code, f, input, &initial)?;
            self.set_block_budget(None);
            // Blocks translated without Unicorn's count would not count: translate anew
            // with it. (Turning it off again, the next run, flushes too.)
            self.uc.ctl_flush_tb().map_err(uc_err("dropping translated code"))?;
            let count = budget.clamp(1, usize::MAX as u64) as usize;
            result = self.uc.emu_start(start, RETURN_SENTINEL as u64, 0, count);
        }
        let end = match self.how_it_ended(result, code, budget, entry_esp, f, reference.unwrap_or(&[])) {
            Ok(end) => end,
            Err(finding) => return Ok(Err(finding)),
        };
        self.read_outcome(end, f)
    }

    /// Counts the next run by blocks within `limit`, or (None) leaves it to Unicorn's
    /// exact count.
    fn set_block_budget(&mut self, limit: Option<u64>) {
        let b = &mut self.uc.get_data_mut().budget;
        b.on = limit.is_some();
        b.limit = limit.unwrap_or(u64::MAX);
        b.counted = 0;
        b.exceeded = false;
    }

    /// Loads the code, the memory, the stack and the registers of a run and resets the
    /// hooks' state; returns the entry `esp`.
    fn load(&mut self, code: &MachineCode, f: &Function, input: &RunInput, initial: &State) -> Result<u32, EmuError> {
        self.load_code(code)?;
        self.uc.mem_write(HEAP_BASE as u64, &initial.heap).map_err(uc_err("writing the heap"))?;
        write_callframe_page(initial, &mut self.page);
        self.uc.mem_write(CALLFRAME_BASE as u64, &self.page).map_err(uc_err("writing the callframe"))?;
        let entry_esp = self.load_stack(input)?;
        self.load_registers(entry_esp)?;
        let data = self.uc.get_data_mut();
        data.stop = None;
        data.trace.clear();
        data.cf_types = f.cfvars.values().map(|v| v.ty).collect();
        data.helper_calls = 0;
        data.code_len = code.bytes.len() as u32;
        data.last_block = None;
        data.steps.clear();
        Ok(entry_esp)
    }

    /// How the run ended, from what the hooks recorded and why Unicorn stopped: a return
    /// (checked against cdecl) or a trap, or a finding.
    fn how_it_ended(
        &mut self,
        result: Result<(), uc_error>,
        code: &MachineCode,
        budget: u64,
        entry_esp: u32,
        f: &Function,
        reference: &[Event],
    ) -> Result<End, Finding> {
        let pc = reg(&self.uc, RegisterX86::EIP);
        match self.uc.get_data_mut().stop.take() {
            Some(Stop::Trap(kind)) => Ok(End::Trap(kind)),
            Some(Stop::TraceBeyondReference) => Err(trace_beyond_reference(reference, &self.uc.get_data().trace)),
            Some(Stop::Fault { kind, pc, address }) => Err(self.fault(kind, pc, address, code)),
            None => match result {
                // Unicorn stopped without a hook naming the cause.
                Err(e) => Err(self.fault(unicorn_fault(e), pc, None, code)),
                Ok(()) if pc == RETURN_SENTINEL => {
                    let registers = self.registers();
                    match check_return(&registers, entry_esp) {
                        Some(finding) => Err(finding),
                        None => Ok(End::Return(return_value(f, registers.eax, registers.edx))),
                    }
                }
                Ok(()) => {
                    // Unicorn also stops without an error after `hlt`.
                    let insns = crate::exec::machine::decode(&code.bytes);
                    if let Some(h) = insns.iter().find(|i| i.next_ip() as u32 == pc && i.mnemonic() == Mnemonic::Hlt) {
                        return Err(self.fault(FaultKind::Halt, h.ip() as u32, None, code));
                    }
                    let registers = self.registers();
                    let disassembly = disassemble_around(&code.bytes, pc, None);
                    Err(Finding::Timeout { budget, registers, disassembly })
                }
            },
        }
    }

    /// The outcome of a run that ended with `end`: the callframe page checked for writes
    /// outside the variables, then the heap, callframe and trace.
    fn read_outcome(&mut self, end: End, f: &Function) -> Result<Result<Outcome, Finding>, EmuError> {
        self.uc.mem_read(CALLFRAME_BASE as u64, &mut self.page).map_err(uc_err("reading the callframe"))?;
        if let Some(offset) = crate::exec::machine::callframe_spill(&self.page, f) {
            return Ok(Err(Finding::CallframeOutOfBounds { offset }));
        }
        let heap = self.uc.mem_read_as_vec(HEAP_BASE as u64, HEAP_SIZE as usize).map_err(uc_err("reading the heap"))?;
        let callframe = crate::exec::machine::read_callframe(&self.page, f);
        let trace = std::mem::take(&mut self.uc.get_data_mut().trace);
        Ok(Ok(Outcome { end, trace, heap, callframe }))
    }

    fn load_code(&mut self, code: &MachineCode) -> Result<(), EmuError> {
        let bytes = &code.bytes[..];
        if self.loaded == bytes {
            // The same program again (another input): its translated blocks stay valid,
            // since the code region is read-only to the program.
            return Ok(());
        }
        if self.loaded.len() > RENEW_AFTER_CODE_BYTES as usize {
            self.renew()?;
        }
        let len = bytes.len();
        // The code region is read-only to the program, so it is written through its host
        // memory (`uc.mem_write` would flip its protection twice, which costs more than
        // the rest of a run).
        let mem = self.code.bytes_mut();
        mem[..len].copy_from_slice(bytes);
        if self.loaded.len() > len {
            mem[len..self.loaded.len()].fill(INT3);
        }
        // Translated blocks of the previous program must not survive the new bytes: every
        // block overlapping the bytes that may have changed (the longer of the two
        // programs; past it both are `int3`) is dropped, and Unicorn unlinks every jump
        // into them. The blocks of the helper stubs stay, since their bytes did not change,
        // and are not translated again for the next program; the padding's blocks do not:
        // replacing the block hook below drops every block the hook instrumented, which is
        // every block of the code region translated since the last load (callgrind of
        // `bench --profile-stages --seeds 60`: 3,493 `uc_invalidate_tb` for 136 hook
        // removals, 1.3M instructions of the emulation stage's 997M; this removal of the
        // changed range is then redundant, 1.0M, kept because it does not rest on how
        // Unicorn implements removing a hook).
        // Dropping blocks does not give back their space in the translation buffer, so
        // every [`FLUSH_EVERY_PROGRAMS`]th program the whole cache is flushed instead,
        // which starts the buffer over (issue 23: without it the buffer grew with every
        // program, tens of megabytes per worker over the first minutes of a campaign).
        let changed = len.max(self.loaded.len()) as u64;
        if self.loads_since_flush + 1 >= FLUSH_EVERY_PROGRAMS {
            self.uc.ctl_flush_tb().map_err(uc_err("dropping translated code"))?;
            self.loads_since_flush = 0;
        } else {
            if changed > 0 {
                self.uc
                    .ctl_remove_cache(CODE_BASE as u64, CODE_BASE as u64 + changed)
                    .map_err(uc_err("dropping translated code"))?;
            }
            self.loads_since_flush += 1;
        }
        // The block hook's record of the blocks it instrumented outlives the flush: a
        // fresh hook starts it over (see [`add_block_hook`]).
        self.uc.remove_hook(self.block_hook).map_err(uc_err("removing the block hook"))?;
        self.block_hook = add_block_hook(&mut self.uc)?;
        self.uc.get_data_mut().budget.index(code);
        self.loaded.clear();
        self.loaded.extend_from_slice(bytes);
        Ok(())
    }

    /// Poisons the stack, stores the arguments and the return address at its top, and
    /// returns the entry `esp`.
    fn load_stack(&mut self, input: &RunInput) -> Result<u32, EmuError> {
        if self.uc.get_data().deep_stack_mapped {
            self.uc
                .mem_unmap(STACK_BASE as u64, (STACK_WINDOW_BASE - STACK_BASE) as u64)
                .map_err(uc_err("unmapping the deep stack"))?;
            self.uc.get_data_mut().deep_stack_mapped = false;
        }
        // The window is written through its host memory, as the code is (no emulation
        // runs, and the window never holds translated code: it is not executable).
        let window = self.stack.bytes_mut();
        window.fill(STACK_POISON);
        let (esp, frame) = entry_frame(input);
        match stack_window_range(esp, frame.len()) {
            Some(at) => window[at].copy_from_slice(&frame),
            None => self.uc.mem_write(esp as u64, &frame).map_err(uc_err("writing the arguments"))?,
        }
        Ok(esp)
    }

    fn load_registers(&mut self, esp: u32) -> Result<(), EmuError> {
        self.uc.context_restore(&self.pristine).map_err(uc_err("restoring the CPU state"))?;
        set_registers(&mut self.uc, &entry_registers(esp));
        Ok(())
    }

    fn registers(&self) -> Registers {
        registers_of(&self.uc)
    }

    fn fault(&self, kind: FaultKind, pc: u32, address: Option<u32>, code: &MachineCode) -> Finding {
        let mut registers = self.registers();
        registers.eip = pc;
        let came_from = self.uc.get_data().last_block;
        Finding::Fault { kind, pc, address, registers, disassembly: disassemble_around(&code.bytes, pc, came_from) }
    }
}

/// The eight general registers, `eip` and the flags.
fn registers_of(uc: &Uc<'_>) -> Registers {
    let r = |x| reg(uc, x);
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

/// The fault kind of an error Unicorn stopped with when no hook named the cause.
fn unicorn_fault(e: uc_error) -> FaultKind {
    match e {
        uc_error::INSN_INVALID => FaultKind::InvalidOpcode,
        uc_error::READ_UNMAPPED => FaultKind::ReadUnmapped,
        uc_error::WRITE_UNMAPPED => FaultKind::WriteUnmapped,
        uc_error::FETCH_UNMAPPED => FaultKind::FetchUnmapped,
        uc_error::WRITE_PROT => FaultKind::WriteProtected,
        uc_error::READ_PROT => FaultKind::ReadProtected,
        uc_error::FETCH_PROT => FaultKind::FetchProtected,
        other => FaultKind::Emulator(format!("{other:?}")),
    }
}

/// Writes the eight general registers, `eip` excepted, and the flags.
fn set_registers(uc: &mut Uc<'_>, r: &Registers) {
    let regs = [
        (RegisterX86::EAX, r.eax),
        (RegisterX86::ECX, r.ecx),
        (RegisterX86::EDX, r.edx),
        (RegisterX86::EBX, r.ebx),
        (RegisterX86::ESI, r.esi),
        (RegisterX86::EDI, r.edi),
        (RegisterX86::EBP, r.ebp),
        (RegisterX86::ESP, r.esp),
        (RegisterX86::EFLAGS, r.eflags),
    ];
    for (x, v) in regs {
        set_reg(uc, x, v);
    }
}

/// The byte filling the helper stub page (`ret`): the return [`helper_hook`] leaves to
/// the stub.
const RET: u8 = 0xC3;

/// Maps the regions of the memory map and fills the helper stubs and the sentinel.
fn map_regions(uc: &mut Uc<'static>, code: &HostMemory, stack: &HostMemory) -> Result<(), EmuError> {
    let rw = Prot::READ | Prot::WRITE;
    let rx = Prot::READ | Prot::EXEC;
    uc.mem_map(HEAP_BASE as u64, page_round(HEAP_SIZE) as u64, rw).map_err(uc_err("mapping the heap"))?;
    uc.mem_map(CALLFRAME_BASE as u64, CALLFRAME_SIZE as u64, rw).map_err(uc_err("mapping the callframe"))?;
    uc.mem_map(HELPER_BASE as u64, PAGE as u64, rx).map_err(uc_err("mapping the helper stubs"))?;
    // SAFETY: `code` is CODE_SIZE_MAX bytes and outlives `uc` (see `Emulator`).
    unsafe { uc.mem_map_ptr(CODE_BASE as u64, CODE_SIZE_MAX as u64, rx, code.ptr.cast()) }
        .map_err(uc_err("mapping the code"))?;
    uc.mem_map(RETURN_SENTINEL as u64, PAGE as u64, rx).map_err(uc_err("mapping the return sentinel"))?;
    // SAFETY: `stack` is STACK_WINDOW bytes and outlives `uc` (see `Emulator`).
    unsafe { uc.mem_map_ptr(STACK_WINDOW_BASE as u64, STACK_WINDOW as u64, rw, stack.ptr.cast()) }
        .map_err(uc_err("mapping the stack"))?;
    uc.mem_write(HELPER_BASE as u64, &vec![RET; PAGE as usize]).map_err(uc_err("filling the helper stubs"))?;
    uc.mem_write(RETURN_SENTINEL as u64, &vec![INT3; PAGE as usize]).map_err(uc_err("filling the sentinel"))
}

/// Where [`load_flat_stack_segment`] puts its descriptor table for the moment it takes
/// to load it: a page of the map that is otherwise unmapped (the null page).
const DESCRIPTOR_TABLE: u64 = 0;

/// The descriptor of a flat 32-bit data segment: base 0, limit 4 GiB (0xfffff pages),
/// present, privilege level 0, read-write and accessed, 32-bit (`D/B`), page-granular.
const FLAT_DATA_DESCRIPTOR: u64 = 0x00CF_9300_0000_FFFF;

/// Loads the stack segment from a flat 32-bit data descriptor (base 0, 4 GiB), as a
/// 32-bit Linux process has it, so that the CPU state says what the runner's map already
/// is: every data segment's base is zero.
///
/// Why: Unicorn starts its 32-bit mode from QEMU's real-mode reset and turns protected
/// mode on without recomputing QEMU's `ADDSEG` flag, which says a segment base may be
/// non-zero. With it on, the translator adds the segment's base to every memory
/// address the code forms (an addition and a load of the base after every helper call
/// TCG makes, and Unicorn makes one after every memory access): about 8% of the cost
/// of translating a program's code. QEMU recomputes the flag whenever a segment is
/// loaded, from the bases of `ds`, `es` and `ss` (all zero here) and the stack
/// segment's `D/B` bit (the 32-bit stack that Unicorn's flags already claim), so one
/// load of `ss` with this descriptor clears it and changes nothing else a program can
/// observe but the selector `ss` reads as (8 instead of 0). The descriptor table is
/// mapped only while the segment is loaded, and the table register is reset after.
fn load_flat_stack_segment(uc: &mut Uc<'static>) -> Result<(), EmuError> {
    let err = uc_err("loading a flat stack segment");
    // The null descriptor, then the flat one: selector 8 (index 1, table GDT, RPL 0).
    let mut table = [0u8; 16];
    table[8..].copy_from_slice(&FLAT_DATA_DESCRIPTOR.to_le_bytes());
    // Unicorn's `uc_x86_mmr`: selector (u16, padded), base (u64), limit (u32), flags (u32).
    let table_register = |base: u64, limit: u32| {
        let mut mmr = [0u8; 24];
        mmr[8..16].copy_from_slice(&base.to_le_bytes());
        mmr[16..20].copy_from_slice(&limit.to_le_bytes());
        mmr
    };
    uc.mem_map(DESCRIPTOR_TABLE, PAGE as u64, Prot::READ | Prot::WRITE).map_err(&err)?;
    uc.mem_write(DESCRIPTOR_TABLE, &table).map_err(&err)?;
    uc.reg_write_long(RegisterX86::GDTR, &table_register(DESCRIPTOR_TABLE, table.len() as u32 - 1)).map_err(&err)?;
    uc.reg_write(RegisterX86::SS, 8).map_err(&err)?;
    uc.reg_write_long(RegisterX86::GDTR, &table_register(0, 0)).map_err(&err)?;
    uc.mem_unmap(DESCRIPTOR_TABLE, PAGE as u64).map_err(&err)
}

/// The regions a program reads and writes, always mapped: the heap, the callframe and
/// the stack window, as `[start, end)` in address order. The stack below the window
/// (mapped on first touch) is not one of them.
const DATA_REGIONS: [(u64, u64); 3] = [
    (HEAP_BASE as u64, HEAP_BASE as u64 + (HEAP_SIZE.div_ceil(PAGE) * PAGE) as u64),
    (CALLFRAME_BASE as u64, CALLFRAME_BASE as u64 + CALLFRAME_SIZE as u64),
    (STACK_WINDOW_BASE as u64, STACK_BASE as u64 + STACK_SIZE as u64),
];

/// Installs the hooks: helper stubs, interrupts, bad memory, and the block hook
/// ([`add_block_hook`]), whose id is returned.
///
/// The bad-memory hook covers every address but the [`DATA_REGIONS`]: Unicorn sends
/// every store to a page a memory hook covers down its slow path. Inside them no access
/// is unmapped and none breaks a protection but a fetch, which Unicorn reports without
/// the hook as the same `FetchProtected`, at the program counter: a block cannot start
/// outside them and reach into them (each lies between unmapped pages or the stack below
/// the window), so a fetch there is the first byte of a block, the address the hook
/// would have named.
fn install_hooks(uc: &mut Uc<'static>) -> Result<UcHookId, EmuError> {
    uc.add_code_hook(HELPER_BASE as u64, (HELPER_BASE + PAGE - 1) as u64, helper_hook)
        .map_err(uc_err("hooking the helper stubs"))?;
    let block_hook = add_block_hook(uc)?;
    uc.add_intr_hook(interrupt_hook).map_err(uc_err("hooking interrupts"))?;
    let bad_mem = HookType::MEM_READ_UNMAPPED
        | HookType::MEM_WRITE_UNMAPPED
        | HookType::MEM_FETCH_UNMAPPED
        | HookType::MEM_READ_PROT
        | HookType::MEM_WRITE_PROT
        | HookType::MEM_FETCH_PROT;
    let mut from = 0u64;
    for (start, end) in DATA_REGIONS.into_iter().chain([(u64::MAX, u64::MAX)]) {
        uc.add_mem_hook(bad_mem, from, start - 1, bad_memory_hook).map_err(uc_err("hooking memory faults"))?;
        from = end;
    }
    Ok(block_hook)
}

/// The address translation of a page (Unicorn's TLB fill, the runner's since
/// [`TlbType::VIRTUAL`]): every address to itself, as the CPU without paging does. A
/// data access to a [`DATA_REGIONS`] page may read and write; anything else may also
/// execute, as every translation the CPU makes without paging may. Protections and
/// unmapped pages are checked by Unicorn from the regions, whatever the translation
/// allows: the translation only decides whether a store to the page may skip Unicorn's
/// slow path, which it may once the page is translated without execution and no memory
/// hook covers it.
fn tlb_fill(_uc: &mut Uc<'_>, page: u64, access: MemType) -> Option<TlbEntry> {
    let data = DATA_REGIONS.iter().any(|&(start, end)| (start..end).contains(&page));
    let perms = if data && access != MemType::FETCH { Prot::READ | Prot::WRITE } else { Prot::ALL };
    Some(TlbEntry { paddr: page, perms })
}

/// Adds the hook on every block of the code: it remembers the last block entered, to
/// show where a wild jump came from, and counts the budget by blocks ([`BlockBudget`]).
///
/// Unicorn keeps, per code or block hook, the address and size of every block it has
/// translated inside the hook's range (its `hooked_regions`, so that deleting the hook
/// can invalidate them), and a flush of the translation cache does not forget them: a
/// hook over the code range gains an entry for every block of every new program, about
/// 1.2 kB of heap per seed of a campaign (issue 23). [`Emulator::load_code`] replaces
/// this hook with a fresh one whenever it loads new code.
fn add_block_hook(uc: &mut Uc<'static>) -> Result<UcHookId, EmuError> {
    uc.add_block_hook(CODE_BASE as u64, (CODE_BASE + CODE_SIZE_MAX - 1) as u64, |uc: &mut Uc<'_>, addr: u64, size: u32| {
        let data = uc.get_data_mut();
        data.last_block = Some((addr as u32, size));
        let b = &mut data.budget;
        if b.on {
            b.counted += b.block_insns(addr as u32, size);
            if b.counted + data.helper_calls * HELPER_CALL_INSNS + BUDGET_MARGIN > b.limit {
                b.exceeded = true;
                let _ = uc.emu_stop();
            }
        }
    })
    .map_err(uc_err("hooking code blocks"))
}

/// The interrupt hook: #DE and `int 0x41` are the IR's traps, `int3` is the code's
/// padding or the sentinel page, anything else a fault.
fn interrupt_hook(uc: &mut Uc<'_>, vector: u32) {
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
}

/// The hook on accesses to unmapped or protected memory: maps the deep stack on first
/// touch, and otherwise records the fault and stops.
fn bad_memory_hook(uc: &mut Uc<'_>, ty: MemType, addr: u64, _size: usize, _value: i64) -> bool {
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
}

/// Host memory handed to Unicorn with `mem_map_ptr`: a leaked boxed slice, freed on
/// drop. It is reached only through short-lived slices while no guest code executes:
/// between runs, or in a hook (which Unicorn calls on this thread with the guest
/// stopped and every earlier store done).
struct HostMemory {
    ptr: *mut u8,
    len: usize,
}

impl HostMemory {
    fn new(len: usize) -> HostMemory {
        let ptr = Box::into_raw(vec![0u8; len].into_boxed_slice()).cast::<u8>();
        HostMemory { ptr, len }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` is a live allocation of `len` bytes owned by `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for HostMemory {
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


/// The code hook on the helper stub page: performs the helper the stub stands for and
/// leaves the registers as a cdecl callee that clobbers all it may; the stub's `ret`,
/// which runs next unless the hook stopped the run, returns to the caller (the
/// `esp` and `eip` of [`perform_helper`]'s result: the return address the hook read at
/// `esp`, popped).
fn helper_hook(uc: &mut Uc<'_>, addr: u64, _size: u32) {
    let pc = addr as u32;
    let Some(helper) = uc.get_data().helpers.iter().find(|(a, _)| *a == pc).map(|(_, h)| *h) else {
        stop_with(uc, Stop::Fault { kind: FaultKind::IntoHelperStub, pc, address: None });
        return;
    };
    let esp = reg(uc, RegisterX86::ESP);
    let mut bytes = [0u8; HELPER_FRAME_MAX];
    let frame = &mut bytes[..helper_frame_bytes(helper)];
    // A frame in the stack window (every call's but in deep recursion) is read from the
    // window's host memory: the same bytes, without Unicorn's look-ups.
    if !uc.get_data().read_stack_window(esp, frame) && uc.mem_read(esp as u64, frame).is_err() {
        // The return address or the arguments lie outside the stack.
        let address = Some(esp);
        stop_with(uc, Stop::Fault { kind: FaultKind::ReadUnmapped, pc, address });
        return;
    }
    let regs = Registers { esp, eflags: reg(uc, RegisterX86::EFLAGS), ..Registers::default() };
    match perform_helper(helper, frame, &regs, &mut UcEnv { uc }) {
        HelperReturn::Trap(kind) => stop_with(uc, Stop::Trap(kind)),
        HelperReturn::Resume(r) => {
            uc.get_data_mut().helper_calls += 1;
            set_reg(uc, RegisterX86::EAX, r.eax);
            set_reg(uc, RegisterX86::ECX, r.ecx);
            set_reg(uc, RegisterX86::EDX, r.edx);
            set_reg(uc, RegisterX86::EFLAGS, r.eflags);
            debug_assert_eq!((r.esp, r.eip), (esp.wrapping_add(4), u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])));
            let data = uc.get_data();
            if data.trace.len() > data.trace_limit {
                stop_with(uc, Stop::TraceBeyondReference);
            }
        }
    }
}

