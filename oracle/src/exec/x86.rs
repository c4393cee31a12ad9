//! The x86 oracles together: every x86 run goes through Unicorn ([`crate::exec::emu`]),
//! the real CPU ([`crate::exec::native`]) or both (`--x86 unicorn|native|both`). With
//! both, the two runs must agree exactly (the same outcome, or the same finding at the
//! same place); when they do not, the run carries an [`Infidelity`]: one of the two
//! machines is not the x86 the manual describes (an emulator bug, or code that depends
//! on a flag the manual leaves undefined), which is never a compiler finding. The CPU's
//! result is the one the interpreter is compared with.
//!
//! The default is both where this machine runs 32-bit code natively, else Unicorn alone,
//! with a one-line [`X86::notice`] saying why.

use crate::exec::emu::Emulator;
use crate::exec::interp::RunInput;
use crate::exec::machine::{EmuError, Finding};
use crate::exec::native::{self, Native};
use crate::exec::outcome::{Event, Outcome};
use std::fmt;
use tandem_core::abi::MachineCode;
use tandem_core::ir::Function;

/// Which machines run x86 code.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum X86Mode {
    Unicorn,
    Native,
    Both,
}

impl X86Mode {
    /// Parses `unicorn`, `native` or `both`.
    pub fn parse(s: &str) -> Result<X86Mode, String> {
        match s {
            "unicorn" => Ok(X86Mode::Unicorn),
            "native" => Ok(X86Mode::Native),
            "both" => Ok(X86Mode::Both),
            other => Err(format!("unknown x86 runner `{other}` (expected unicorn, native or both)")),
        }
    }
}

impl fmt::Display for X86Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            X86Mode::Unicorn => "unicorn",
            X86Mode::Native => "native",
            X86Mode::Both => "both",
        })
    }
}

/// The result of one run of a program on a machine.
pub type MachineRun = Result<Outcome, Finding>;

/// Unicorn and the CPU disagreeing on one run.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Infidelity {
    pub unicorn: MachineRun,
    pub native: MachineRun,
    /// Every difference, one a line (Unicorn first, the CPU second).
    pub differences: Vec<String>,
    /// The instructions around the first step where the two machines' registers differ
    /// ([`divergence_trace`]).
    pub trace: String,
}

impl fmt::Display for Infidelity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "emulator infidelity: Unicorn and the CPU disagree")?;
        for d in &self.differences {
            writeln!(f, "  {d}")?;
        }
        f.write_str(&self.trace)
    }
}

/// One x86 run: the result to judge (the CPU's when it ran), and the disagreement
/// between the two machines when both ran and they differ.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct X86Run {
    pub result: MachineRun,
    pub infidelity: Option<Infidelity>,
}

/// A change planted in Unicorn's results, for the harness's own tests of the
/// `emulator infidelity` verdict; nothing else sets it.
pub type PlantedInfidelity = fn(&mut MachineRun);

static PLANTED: std::sync::RwLock<Option<PlantedInfidelity>> = std::sync::RwLock::new(None);

/// Plants `change` in every later Unicorn run of this process run through [`X86`]
/// (`None` removes it). For tests only.
pub fn plant_infidelity(change: Option<PlantedInfidelity>) {
    *PLANTED.write().unwrap_or_else(|e| e.into_inner()) = change;
}

/// The x86 machines of one worker.
pub struct X86 {
    mode: X86Mode,
    unicorn: Option<Emulator>,
    native: Option<Native>,
    notice: Option<String>,
}

impl X86 {
    /// The machines `requested`, or by default both where the CPU runs 32-bit code and
    /// Unicorn alone (with a [`X86::notice`]) where it does not. Asking for the CPU where
    /// it cannot run is an error.
    pub fn new(requested: Option<X86Mode>) -> Result<X86, EmuError> {
        let (mode, notice) = match (requested, native::available()) {
            (Some(m), _) => (m, None),
            (None, Ok(())) => (X86Mode::Both, None),
            (None, Err(why)) => (X86Mode::Unicorn, Some(format!("x86 runs on Unicorn only: this machine cannot run 32-bit code natively ({why})"))),
        };
        let unicorn = match mode {
            X86Mode::Unicorn | X86Mode::Both => Some(Emulator::new()?),
            X86Mode::Native => None,
        };
        let native = match mode {
            X86Mode::Native | X86Mode::Both => Some(Native::new()?),
            X86Mode::Unicorn => None,
        };
        Ok(X86 { mode, unicorn, native, notice })
    }

    /// Unicorn alone (tools and tests that are about the emulator).
    pub fn unicorn() -> Result<X86, EmuError> {
        X86::new(Some(X86Mode::Unicorn))
    }

    pub fn mode(&self) -> X86Mode {
        self.mode
    }

    /// Why the default fell back to Unicorn alone, if it did.
    pub fn notice(&self) -> Option<&str> {
        self.notice.as_deref()
    }

    /// The Unicorn runner, when this worker has one.
    pub fn emulator(&mut self) -> Option<&mut Emulator> {
        self.unicorn.as_mut()
    }

    /// Runs `code` as the compilation of `f` on `input` on every machine of this worker,
    /// each allowed `budget` instructions (the CPU: their time).
    pub fn run_with_budget(
        &mut self,
        code: &MachineCode,
        f: &Function,
        input: &RunInput,
        budget: u64,
    ) -> Result<X86Run, EmuError> {
        self.run_against(code, f, input, budget, None)
    }

    /// Like [`X86::run_with_budget`], and when `reference` is the trace of the reference
    /// run of the same input, each machine stops as soon as its trace is longer
    /// ([`Finding::TraceBeyondReference`]), so a run's trace is never longer than the
    /// reference's by more than one event.
    pub fn run_against(
        &mut self,
        code: &MachineCode,
        f: &Function,
        input: &RunInput,
        budget: u64,
        reference: Option<&[Event]>,
    ) -> Result<X86Run, EmuError> {
        let unicorn = match &mut self.unicorn {
            Some(emu) => {
                let mut r = emu.run_against(code, f, input, budget, reference)?;
                if let Some(change) = *PLANTED.read().unwrap_or_else(|e| e.into_inner()) {
                    change(&mut r);
                }
                Some(r)
            }
            None => None,
        };
        let native = match &mut self.native {
            Some(cpu) => Some(cpu.run_against(code, f, input, budget, reference)?),
            None => None,
        };
        Ok(match (unicorn, native) {
            (Some(u), Some(n)) => {
                let differences = machine_differences(&u, &n);
                let infidelity = if differences.is_empty() {
                    None
                } else {
                    let native = self.native.as_mut().expect("both machines");
                    let trace = divergence_trace(native, code, f, input, budget);
                    Some(Infidelity { unicorn: u, native: n.clone(), differences, trace })
                };
                X86Run { result: n, infidelity }
            }
            (Some(r), None) | (None, Some(r)) => X86Run { result: r, infidelity: None },
            (None, None) => unreachable!("an X86 has at least one machine"),
        })
    }
}

/// What identifies a finding across the two machines: its kind and place, not the
/// registers or the listing (the flags the manual leaves undefined, and `IF`, differ
/// between a CPU and an emulator without either being wrong about the program).
fn finding_key(f: &Finding) -> String {
    match f {
        Finding::Timeout { .. } | Finding::CpuTimeout { .. } => "timeout".to_string(),
        Finding::Fault { kind, pc, address, .. } => {
            let at = address.map_or(String::new(), |a| format!(" touching {a:#010x}"));
            format!("fault: {kind} at pc {pc:#010x}{at}")
        }
        other => other.to_string(),
    }
}

/// Every difference between Unicorn's run and the CPU's; empty when they agree.
pub fn machine_differences(unicorn: &MachineRun, native: &MachineRun) -> Vec<String> {
    match (unicorn, native) {
        (Ok(u), Ok(n)) => u.diff(n).into_iter().map(|d| d.replace("expected", "Unicorn").replacen("got", "the CPU", 1)).collect(),
        (Err(u), Err(n)) if finding_key(u) == finding_key(n) => vec![],
        (u, n) => {
            let show = |r: &MachineRun| match r {
                Ok(o) => format!("outcome {}", o.end),
                Err(f) => finding_key(f),
            };
            vec![format!("Unicorn: {}; the CPU: {}", show(u), show(n))]
        }
    }
}


/// Anything that runs compiled x86 code for the differential check: Unicorn alone (an
/// [`Emulator`], which never reports an infidelity), or an [`X86`]. `reference` is the
/// trace of the reference run of the same input, if known: a run whose trace becomes
/// longer stops there ([`Finding::TraceBeyondReference`]).
pub trait X86Runner {
    fn run_x86(
        &mut self,
        code: &MachineCode,
        f: &Function,
        input: &RunInput,
        budget: u64,
        reference: Option<&[Event]>,
    ) -> Result<X86Run, EmuError>;
}

impl X86Runner for Emulator {
    fn run_x86(
        &mut self,
        code: &MachineCode,
        f: &Function,
        input: &RunInput,
        budget: u64,
        reference: Option<&[Event]>,
    ) -> Result<X86Run, EmuError> {
        Ok(X86Run { result: self.run_against(code, f, input, budget, reference)?, infidelity: None })
    }
}

impl X86Runner for X86 {
    fn run_x86(
        &mut self,
        code: &MachineCode,
        f: &Function,
        input: &RunInput,
        budget: u64,
        reference: Option<&[Event]>,
    ) -> Result<X86Run, EmuError> {
        self.run_against(code, f, input, budget, reference)
    }
}

/// The flags compared and shown in traces: the arithmetic ones and DF (`IF` is always set
/// on a real CPU in user mode, and never in Unicorn).
const TRACE_FLAGS: u32 = 0xCD5;
/// Steps shown before and after the first divergence.
const TRACE_BEFORE: usize = 8;
const TRACE_AFTER: usize = 3;

/// Runs the program again on a stepping Unicorn and single-stepped on the CPU, and shows
/// the instructions around the first one before which the two machines' registers
/// differ (flags that differ earlier are marked too: a flag the manual leaves undefined
/// may differ without either machine being wrong, until code reads it).
pub fn divergence_trace(native: &mut Native, code: &MachineCode, f: &Function, input: &RunInput, budget: u64) -> String {
    use crate::exec::emu::STEP_LIMIT;
    let unicorn = Emulator::stepping().and_then(|mut e| {
        let _run = e.run_with_budget(code, f, input, budget)?;
        Ok(e.take_steps())
    });
    let cpu = native.step(code, f, input, budget, STEP_LIMIT);
    let (u, n) = match (unicorn, cpu) {
        (Ok(u), Ok(n)) => (u, n),
        (Err(e), _) | (_, Err(e)) => return format!("(no instruction trace: {e})\n"),
    };
    let key = |r: &crate::exec::emu::Registers| {
        (r.eip, r.eax, r.ecx, r.edx, r.ebx, r.esp, r.ebp, r.esi, r.edi)
    };
    let regs_at = (0..u.len().min(n.len())).find(|&i| key(&u[i]) != key(&n[i]));
    let flags_at = (0..u.len().min(n.len())).find(|&i| u[i].eflags & TRACE_FLAGS != n[i].eflags & TRACE_FLAGS);
    let at = match regs_at.or(if u.len() != n.len() { Some(u.len().min(n.len())) } else { None }) {
        Some(i) => i,
        None => {
            return format!(
                "instruction trace: {} steps on Unicorn, {} on the CPU, registers equal at every step{}\n",
                u.len(),
                n.len(),
                flags_at.map_or(String::new(), |i| format!(" (flags first differ before step {i})"))
            )
        }
    };
    let mut out = format!("instruction trace: registers first differ before step {at} of {} (Unicorn) / {} (CPU)", u.len(), n.len());
    if let Some(i) = flags_at.filter(|&i| i < at) {
        out.push_str(&format!("; flags first differ before step {i}"));
    }
    out.push('\n');
    let insns = crate::exec::machine::decode(&code.bytes);
    let text = |eip: u32| {
        use iced_x86::Formatter;
        let mut s = String::new();
        if let Some(i) = insns.iter().find(|i| i.ip() as u32 == eip) {
            iced_x86::IntelFormatter::new().format(i, &mut s);
        }
        s
    };
    let show = |r: &crate::exec::emu::Registers| {
        format!(
            "eax={:08x} ecx={:08x} edx={:08x} ebx={:08x} esp={:08x} ebp={:08x} esi={:08x} edi={:08x} flags={:03x}",
            r.eax,
            r.ecx,
            r.edx,
            r.ebx,
            r.esp,
            r.ebp,
            r.esi,
            r.edi,
            r.eflags & TRACE_FLAGS
        )
    };
    for i in at.saturating_sub(TRACE_BEFORE)..(at + TRACE_AFTER + 1).min(u.len().max(n.len())) {
        let mark = if i == at { "=>" } else { "  " };
        let eip = u.get(i).or(n.get(i)).map_or(0, |r| r.eip);
        out.push_str(&format!("  {mark} step {i:>5}  {eip:08x}  {}\n", text(eip)));
        let line = |who: &str, r: Option<&crate::exec::emu::Registers>| match r {
            Some(r) => format!("       {who:<8} before: eip={:08x} {}\n", r.eip, show(r)),
            None => format!("       {who:<8} (no such step)\n"),
        };
        out.push_str(&line("unicorn", u.get(i)));
        out.push_str(&line("cpu", n.get(i)));
    }
    out
}
