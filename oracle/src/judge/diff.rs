//! The differential check between the reference interpreter and the compiled x86 code
//! run in the emulator: the verdict every later stage (the campaign, the reducer, the
//! per-pass checks) builds on.
//!
//! Rules (`DESIGN.md`, "Differential check"):
//! * A run the interpreter finds invalid is not compared: [`Verdict::Skipped`].
//! * Otherwise the x86 run must end the same way (the same return value, or a trap of
//!   the same kind and code) with the same trace, heap and callframe; every difference is
//!   a line of [`Outcome::diff`] in [`Verdict::Disagree`].
//! * A [`Finding`] of the emulator (a fault, a clobbered callee-saved register, a bad
//!   stack, the instruction budget used up while the interpreter terminated) is a bug on
//!   its own: [`Verdict::Finding`]. The budget is proportional to the fuel the
//!   interpreter actually used, so a compiled loop that never ends is found quickly.
//!
//! * When both x86 machines ran and disagree ([`crate::exec::x86`]), the verdict is
//!   [`Verdict::Infidelity`]: the emulator infidelity, never a compiler finding, wrapped
//!   around the verdict on the CPU's run, which is the one compared with the interpreter.
//!
//! [`side_by_side`] prints two outcomes in two columns for reports.

use crate::exec::emu::{budget_for, EmuError, Finding, HarnessLimit};
use crate::exec::x86::{Infidelity, X86Runner};
use crate::exec::interp::{self, InputError, RunInput};
use crate::exec::outcome::{Invalid, Outcome};
use std::fmt;
use tandem_core::abi::MachineCode;
use tandem_core::ir::Function;

/// The result of comparing the interpreter with the x86 code on one input.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Verdict {
    /// Both ran and their outcomes are equal.
    Agree(Outcome),
    /// The interpreter found the run invalid; nothing was compared.
    Skipped(Invalid),
    /// Both ran to an outcome, and the outcomes differ; `diff` lists every difference
    /// (interpreter expected, x86 got).
    Disagree { interp: Outcome, x86: Outcome, diff: Vec<String> },
    /// The x86 code broke a rule of its own (see [`Finding`]).
    Finding { interp: Outcome, finding: Finding },
    /// The program does not fit the emulated machine: nothing was compared, and it is
    /// neither a pass nor a compiler bug.
    Limit(HarnessLimit),
    /// Unicorn and the CPU disagree on the run (an emulator infidelity, not a compiler
    /// bug); `cpu` is the verdict on the CPU's run against the interpreter.
    Infidelity { infidelity: Infidelity, cpu: Box<Verdict> },
}

impl Verdict {
    /// Whether the verdict reports a compiler bug (an infidelity alone does not).
    pub fn is_failure(&self) -> bool {
        match self {
            Verdict::Disagree { .. } | Verdict::Finding { .. } => true,
            Verdict::Infidelity { cpu, .. } => cpu.is_failure(),
            _ => false,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Agree(o) => write!(f, "agree:\n{o}"),
            Verdict::Skipped(i) => write!(f, "skipped: the interpreter found the run {i}"),
            Verdict::Disagree { interp, x86, diff } => {
                writeln!(f, "DISAGREE:")?;
                for d in diff {
                    writeln!(f, "  {d}")?;
                }
                f.write_str(&side_by_side("interpreter", interp, "x86", x86))
            }
            Verdict::Finding { interp, finding } => {
                writeln!(f, "FINDING: {finding}")?;
                write!(f, "interpreter outcome:\n{interp}")
            }
            Verdict::Limit(l) => write!(f, "harness limit: {l}"),
            Verdict::Infidelity { infidelity, cpu } => write!(f, "{infidelity}the CPU's run: {cpu}"),
        }
    }
}

/// Why no verdict could be reached.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum CheckError {
    /// The inputs do not fit the function.
    Input(InputError),
    /// The emulator failed (not the code under test).
    Emulator(EmuError),
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::Input(e) => write!(f, "bad run input: {e}"),
            CheckError::Emulator(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CheckError {}

/// Runs `f` on `input` in the interpreter and `code` (its compilation) in `emu`, and
/// compares. The x86 run gets [`budget_for`] the fuel the interpreter used; using it up
/// is a finding, since the interpreter terminated. A run the interpreter finds invalid
/// is not executed on x86 at all.
pub fn check(f: &Function, input: &RunInput, code: &MachineCode, emu: &mut dyn X86Runner) -> Result<Verdict, CheckError> {
    match interp::run_measured(f, input).map_err(CheckError::Input)? {
        (Ok(expected), used) => check_against(expected, used, f, input, code, emu).map_err(CheckError::Emulator),
        (Err(invalid), _) => Ok(Verdict::Skipped(invalid)),
    }
}

/// Like [`check`] with the interpreter's outcome and the fuel it used already known
/// (from [`interp::run_measured`]), for comparing several compilations of one function
/// on the same input.
pub fn check_against(
    expected: Outcome,
    fuel_used: u64,
    f: &Function,
    input: &RunInput,
    code: &MachineCode,
    emu: &mut dyn X86Runner,
) -> Result<Verdict, EmuError> {
    match emu.run_x86(code, f, input, budget_for(fuel_used, &code.shape), Some(&expected.trace)) {
        Err(EmuError::Limit(l)) => Ok(Verdict::Limit(l)),
        Err(e) => Err(e),
        Ok(run) => {
            let cpu = verdict(expected, run.result);
            Ok(match run.infidelity {
                Some(infidelity) => Verdict::Infidelity { infidelity, cpu: Box::new(cpu) },
                None => cpu,
            })
        }
    }
}

/// The verdict on an x86 run against the interpreter's outcome of the same input.
pub fn verdict(interp: Outcome, x86: Result<Outcome, Finding>) -> Verdict {
    match x86 {
        Err(finding) => Verdict::Finding { interp, finding },
        Ok(x86) => {
            let diff = interp.diff(&x86);
            if diff.is_empty() {
                Verdict::Agree(interp)
            } else {
                Verdict::Disagree { interp, x86, diff }
            }
        }
    }
}

/// One row of a side-by-side listing: the two cells.
type Row = (String, String);

/// Two outcomes in two columns, row by row: the end, the trace event by event, the
/// non-zero heap rows aligned by address, the callframe. Rows that differ are marked with
/// `*` between the columns.
pub fn side_by_side(left_title: &str, left: &Outcome, right_title: &str, right: &Outcome) -> String {
    let mut rows: Vec<Row> = vec![(left_title.to_string(), right_title.to_string())];
    rows.push((left.end.to_string(), right.end.to_string()));
    let n = left.trace.len().max(right.trace.len());
    for i in 0..n {
        let cell = |o: &Outcome| o.trace.get(i).map_or(String::new(), |e| format!("trace {e}"));
        rows.push((cell(left), cell(right)));
    }
    for a in left.heap_rows_of_either(right) {
        let cell = |o: &Outcome| {
            let hex: Vec<String> = o.heap_row(a).iter().map(|b| format!("{b:02x}")).collect();
            format!("heap {a:#010x}: {}", hex.join(" "))
        };
        rows.push((cell(left), cell(right)));
    }
    let cf = |o: &Outcome| {
        let v: Vec<String> = o.callframe.iter().map(|v| v.to_string()).collect();
        format!("callframe [{}]", v.join(", "))
    };
    rows.push((cf(left), cf(right)));
    let width = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (k, (l, r)) in rows.iter().enumerate() {
        let mark = if k > 0 && l != r { '*' } else { '|' };
        out.push_str(format!("{l:<width$} {mark} {r}").trim_end());
        out.push('\n');
    }
    out
}

