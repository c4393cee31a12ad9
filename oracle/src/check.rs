//! The full differential check of one run, every stage against the reference
//! interpreter (`DESIGN.md`, "Differential check"):
//!
//! 1. the reference interpreter on the function as written;
//! 2. the interpreter after every IR pass of the check pipeline ([`crate::passcheck`]),
//!    naming the first pass that changed the outcome; and, for a function without phis,
//!    after `cprop` alone, which is where the tree mover sees HIR as a front end writes it
//!    (redefinitions after uses, so every kind of tree move can fire);
//! 3. the x86 code of the function without IR optimization (a function already in SSA
//!    form only goes through `ssa-destroy`, since the backend takes IR without phis), run
//!    in the emulator ([`crate::diff`]);
//! 4. the x86 code of the function after the whole check pipeline.
//!
//! A run the reference finds invalid is not compared. The first disagreeing stage names
//! the guilty part: a pass, the backend alone, or the backend on optimized IR.

use crate::diff::{self, side_by_side};
use crate::emu::{EmuError, Emulator};
use crate::interp::{self, InputError, RunInput};
use crate::outcome::{Invalid, Outcome};
use crate::passcheck;
use tandem_core::backend;
use tandem_core::ir::Function;
use tandem_core::passes::{Form, PassManager, Pipeline, Stats};

/// What one stage found wrong.
#[derive(Clone, Debug)]
pub struct Problem {
    /// The stage: `pass <name>`, `x86`, or `x86 after <pipeline>`.
    pub stage: String,
    /// One line per difference.
    pub lines: Vec<String>,
    /// The two outcomes in two columns, when both exist.
    pub side_by_side: Option<String>,
}

/// The result of checking one run.
#[derive(Clone, Debug)]
pub struct RunCheck {
    /// The reference interpreter's result.
    pub reference: Result<Outcome, Invalid>,
    /// Every stage that disagreed, in stage order; empty when all agree (or the run is
    /// invalid).
    pub problems: Vec<Problem>,
    /// What each pass did, by stage label (`ssa`, ..., `cprop`, and `cprop on HIR` for
    /// the pass alone); empty when no pipeline ran.
    pub pass_stats: Vec<(String, Stats)>,
}

/// Why a run could not be checked at all.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum CheckError {
    /// The inputs do not fit the function.
    Input(InputError),
    /// The emulator itself failed (not the code under test).
    Emulator(EmuError),
}

impl std::fmt::Display for CheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckError::Input(e) => write!(f, "bad run input: {e}"),
            CheckError::Emulator(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CheckError {}

/// The function the backend compiles when no IR optimization runs: `f` itself, or for a
/// function with phis, `f` after `ssa-destroy`.
pub fn backend_input(f: &Function) -> Result<Function, String> {
    let mut g = f.clone();
    if f.layout.iter().any(|&b| !f.blocks[b].phis.is_empty()) {
        let p = Pipeline::parse_from(Form::Ssa, "ssa-destroy").expect("valid pipeline");
        PassManager { verify: true }.run(&p, &mut g, &mut |_, _, _| {}).map_err(|e| e.to_string())?;
    }
    Ok(g)
}

/// `f` after the whole check pipeline (see [`passcheck::replay_pipeline`]); `None` when
/// `f` is in neither of the pipeline's input forms.
/// The statistics of each pass come along.
pub fn optimized(f: &Function) -> Option<Result<(Pipeline, Function, Vec<(&'static str, Stats)>), String>> {
    let p = passcheck::replay_pipeline(f)?;
    let mut g = f.clone();
    Some(match (PassManager { verify: true }).run(&p, &mut g, &mut |_, _, _| {}) {
        Ok(stats) => Ok((p, g, stats)),
        Err(e) => Err(e.to_string()),
    })
}

/// Checks one run through every stage.
pub fn check_run(f: &Function, input: &RunInput, emu: &mut Emulator) -> Result<RunCheck, CheckError> {
    let (reference, fuel_used) = interp::run_measured(f, input).map_err(CheckError::Input)?;
    let Ok(expected) = &reference else {
        return Ok(RunCheck { reference, problems: vec![], pass_stats: vec![] });
    };
    let mut problems = vec![];
    let problem = |stage: String, lines: Vec<String>| Problem { stage, lines, side_by_side: None };
    // 2. The interpreter after every IR pass.
    let pass_problems = passcheck::replay_problems(f, input);
    if !pass_problems.is_empty() {
        problems.push(problem("IR passes".into(), pass_problems));
    }
    let mut pass_stats = vec![];
    if f.layout.iter().all(|&b| f.blocks[b].phis.is_empty()) {
        let alone = Pipeline::parse("cprop").expect("valid pipeline");
        match passcheck::check_function(f, input, &alone) {
            Ok(c) => {
                if !c.verdict.is_ok() {
                    problems.push(problem("IR pass cprop on HIR".into(), c.verdict.problems()));
                }
                pass_stats.extend(c.stats.into_iter().map(|(_, st)| ("cprop on HIR".to_string(), st)));
            }
            Err(e) => problems.push(problem("IR pass cprop on HIR".into(), vec![e.to_string()])),
        }
    }
    // 3. and 4. The x86 code, without and with IR optimization.
    let mut x86_stages = vec![("x86".to_string(), backend_input(f))];
    if let Some(o) = optimized(f) {
        x86_stages.push(match o {
            Ok((p, g, stats)) => {
                pass_stats.extend(stats.into_iter().map(|(n, st)| (n.to_string(), st)));
                (format!("x86 after {p}"), Ok(g))
            }
            Err(e) => ("x86 after the check pipeline".to_string(), Err(e)),
        });
    }
    for (stage, g) in x86_stages {
        let g = match g {
            Ok(g) => g,
            Err(e) => {
                problems.push(problem(stage, vec![format!("the IR passes failed: {e}")]));
                continue;
            }
        };
        let code = match backend::compile(&g) {
            Ok(c) => c,
            Err(e) => {
                problems.push(problem(stage, vec![format!("the backend failed: {e}")]));
                continue;
            }
        };
        // The instruction budget follows the fuel the reference used (see `diff::budget_for`).
        let v = diff::check_against(expected.clone(), fuel_used, &g, input, &code, emu).map_err(CheckError::Emulator)?;
        match v {
            diff::Verdict::Agree(_) | diff::Verdict::Skipped(_) => {}
            diff::Verdict::Disagree { interp, x86, diff } => problems.push(Problem {
                side_by_side: Some(side_by_side("interpreter", &interp, &stage, &x86)),
                stage,
                lines: diff,
            }),
            diff::Verdict::Finding { finding, .. } => {
                problems.push(problem(stage, finding.to_string().lines().map(str::to_string).collect()))
            }
        }
    }
    Ok(RunCheck { reference, problems, pass_stats })
}
