//! The per-pass differential check (`DESIGN.md`, "Differential check"): the reference
//! interpreter runs the original function, then the pass manager runs a pipeline and,
//! through its hook, the interpreter runs the IR after every pass on the same input. The
//! first pass after which the outcome differs from the reference is named in the verdict,
//! with the diff and the IR it produced. A reference run that is invalid (out of fuel, a
//! heap access out of bounds) is not compared. After-pass runs get more fuel than the
//! reference (passes such as `ssa-destroy` add copies), so running out is a finding.
//!
//! This is the API the generator's campaigns call for every seed: [`check_function`]
//! takes a function and a [`RunInput`] and returns a [`PassCheck`].

use crate::exec::interp::{self, InputError, RunInput};
use crate::exec::outcome::{Invalid, Outcome};
use tandem_core::ir::Function;
use tandem_core::passes::{check_pipeline, Form, PassError, PassManager, Pipeline, Stats};
use tandem_core::verify::Verified;

/// The verdict of one per-pass check.
#[derive(Clone, Debug)]
pub enum Verdict {
    /// The reference run is invalid, so nothing was compared.
    ReferenceInvalid(Invalid),
    /// The outcome after every pass equals the reference outcome.
    Agree,
    /// The outcome changed after `pass` (the `index`-th pass, from 0), the first to do so.
    Mismatch {
        pass: String,
        index: usize,
        expected: Outcome,
        actual: Result<Outcome, Invalid>,
        /// The differences, one per line.
        diff: Vec<String>,
        /// The function as that pass left it, in the text format.
        ir: String,
    },
    /// A pass produced IR the verifier rejects (a bug in that pass).
    PassFailed(PassError),
    /// `ssapre` inserted a trapping computation the input does not anticipate
    /// ([`crate::judge::anticip`]); found whatever the input, so no run needs to show it.
    Unanticipated { pass: String, violations: Vec<String>, ir: String },
}

impl Verdict {
    /// Whether the check found nothing wrong.
    pub fn is_ok(&self) -> bool {
        matches!(self, Verdict::Agree | Verdict::ReferenceInvalid(_))
    }

    /// A short description, one line per problem; empty when the check passed.
    pub fn problems(&self) -> Vec<String> {
        match self {
            Verdict::Agree | Verdict::ReferenceInvalid(_) => vec![],
            Verdict::Mismatch { pass, diff, .. } => {
                let mut v = vec![format!("outcome changed after pass `{pass}`")];
                v.extend(diff.iter().map(|d| format!("  {d}")));
                v
            }
            Verdict::PassFailed(e) => vec![e.to_string()],
            Verdict::Unanticipated { pass, violations, .. } => {
                let mut v = vec![format!("pass `{pass}` broke the trap rule of insertions")];
                v.extend(violations.iter().map(|d| format!("  {d}")));
                v
            }
        }
    }
}

/// The result of a per-pass check: the verdict and every pass's statistics.
#[derive(Clone, Debug)]
pub struct PassCheck {
    pub verdict: Verdict,
    pub stats: Vec<(&'static str, Stats)>,
}

/// Errors that are the caller's, not the pipeline's.
#[derive(Clone, Debug)]
pub enum PassCheckError {
    /// The input does not fit the function.
    Input(InputError),
    /// The pipeline cannot start from this function (e.g. it is in the wrong form).
    Pipeline(PassError),
}

impl std::fmt::Display for PassCheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PassCheckError::Input(e) => write!(f, "{e}"),
            PassCheckError::Pipeline(e) => write!(f, "{e}"),
        }
    }
}

/// How much more fuel an after-pass run gets than the reference.
pub const FUEL_FACTOR: u64 = 4;

/// Runs `pipeline` over a copy of `f`, interpreting the IR after every pass on `input`
/// and comparing with the reference outcome.
pub fn check_function(f: &Function, input: &RunInput, pipeline: &Pipeline) -> Result<PassCheck, PassCheckError> {
    check_function_inputs(f, std::slice::from_ref(input), pipeline).map(|mut v| v.remove(0))
}

/// [`check_function`] for several inputs at once: the pipeline runs once and the IR after
/// every pass is interpreted on each input. One [`PassCheck`] per input, in order.
pub fn check_function_inputs(
    f: &Function,
    inputs: &[RunInput],
    pipeline: &Pipeline,
) -> Result<Vec<PassCheck>, PassCheckError> {
    let pm = PassManager { verify: true };
    let references =
        inputs.iter().map(|input| interp::run(f, input)).collect::<Result<Vec<_>, _>>().map_err(PassCheckError::Input)?;
    let c = check_against(f, inputs, &references, Some(pipeline), |g, hook| pm.run_verified(pipeline, g, hook))?;
    Ok(per_input(c))
}

/// The signature of the per-pass hook.
pub type Hook<'a> = dyn FnMut(&str, &Function, &Stats) + 'a;

/// [`check_function`] with any driver in place of the pass manager: `drive` transforms the
/// function and calls the hook after each step. Tests use it to check that a broken
/// step is caught and named.
pub fn check_with(
    f: &Function,
    input: &RunInput,
    drive: impl FnOnce(&mut Function, &mut Hook<'_>) -> Result<Vec<(&'static str, Stats)>, PassError>,
) -> Result<PassCheck, PassCheckError> {
    check_with_inputs(f, std::slice::from_ref(input), drive).map(|mut v| v.remove(0))
}

/// [`check_with`] for several inputs: `drive` runs once, and after each step the IR is
/// interpreted on every input whose reference run is valid and which has not yet
/// disagreed.
pub fn check_with_inputs(
    f: &Function,
    inputs: &[RunInput],
    drive: impl FnOnce(&mut Function, &mut Hook<'_>) -> Result<Vec<(&'static str, Stats)>, PassError>,
) -> Result<Vec<PassCheck>, PassCheckError> {
    let references =
        inputs.iter().map(|input| interp::run(f, input)).collect::<Result<Vec<_>, _>>().map_err(PassCheckError::Input)?;
    let c = check_against(f, inputs, &references, None, |mut g, hook| drive(&mut g, hook).map(|stats| (stats, ())))?;
    Ok(per_input(c))
}

/// One [`PassCheck`] per input of a pipeline's check.
fn per_input<R>(c: PipelineCheck<R>) -> Vec<PassCheck> {
    let stats = c.stats;
    c.verdicts.into_iter().map(|verdict| PassCheck { verdict, stats: stats.clone() }).collect()
}

/// What [`check_against`] found: one verdict per input, what each pass did, and what the
/// driver returned with its statistics (for the pass manager, the IR the last pass left,
/// [`Verified`]), or the verifier error of the pass that broke it.
#[derive(Clone, Debug)]
pub struct PipelineCheck<R = Verified> {
    pub verdicts: Vec<Verdict>,
    pub stats: Vec<(&'static str, Stats)>,
    pub result: Result<R, PassError>,
}

/// The per-pass check against reference outcomes the caller already has
/// (`references[k]` is the reference run of `inputs[k]`), so that the reference
/// interpreter and the pipeline each run once however many stages use them.
/// `pipeline` names the passes `drive` runs, when known: the IR is then kept only before
/// an `ssapre` (for its anticipability check), not after every pass. `drive` takes a copy
/// of `f` and returns the statistics of its steps with what the caller keeps of the
/// result (the pass manager: the function, verified after its last pass).
pub fn check_against<R>(
    f: &Function,
    inputs: &[RunInput],
    references: &[Result<Outcome, Invalid>],
    pipeline: Option<&Pipeline>,
    drive: impl FnOnce(Function, &mut Hook<'_>) -> Result<(Vec<(&'static str, Stats)>, R), PassError>,
) -> Result<PipelineCheck<R>, PassCheckError> {
    // Per input: the after-pass input (more fuel) and the first mismatch found so far.
    let mut state: Vec<(RunInput, Option<Verdict>)> = inputs
        .iter()
        .map(|input| {
            let mut after_input = input.clone();
            after_input.fuel = input.fuel.saturating_mul(FUEL_FACTOR);
            (after_input, None)
        })
        .collect();
    let mut index = 0;
    // The IR before the current pass, for the anticipability check of `ssapre` (`None`:
    // `f` itself, before the first pass). A snapshot is taken after pass `i` only when
    // pass `i + 1` may be `ssapre`.
    let mut prev: Option<Function> = None;
    let ssapre_at = |i: usize| pipeline.map_or(true, |p| p.passes.get(i).is_some_and(|p| p.name == "ssapre"));
    let result = drive(f.clone(), &mut |pass: &str, ir: &Function, _: &Stats| {
        if pass == "ssapre" {
            let violations = crate::judge::anticip::check(prev.as_ref().unwrap_or(f), ir);
            if !violations.is_empty() {
                for ((_, first), reference) in state.iter_mut().zip(references) {
                    if reference.is_ok() && first.is_none() {
                        *first = Some(Verdict::Unanticipated {
                            pass: pass.to_string(),
                            violations: violations.iter().map(|v| v.to_string()).collect(),
                            ir: ir.to_string(),
                        });
                    }
                }
            }
        }
        if ssapre_at(index + 1) {
            prev = Some(ir.clone());
        }
        for ((after_input, first), reference) in state.iter_mut().zip(references) {
            let (Ok(reference), None) = (reference, &*first) else { continue };
            let actual = interp::run(ir, after_input).expect("passes keep the signature");
            let diff = match &actual {
                Ok(o) => reference.diff(o),
                Err(i) => vec![format!("expected {}, got {i}", reference.end)],
            };
            if !diff.is_empty() {
                *first = Some(Verdict::Mismatch {
                    pass: pass.to_string(),
                    index,
                    expected: reference.clone(),
                    actual,
                    diff,
                    ir: ir.to_string(),
                });
            }
        }
        index += 1;
    });
    let (stats, result) = match result {
        Ok((stats, kept)) => (stats, Ok(kept)),
        Err(e @ PassError::Verify { .. }) => (vec![], Err(e)),
        Err(e) => return Err(PassCheckError::Pipeline(e)),
    };
    let verdicts = state
        .into_iter()
        .zip(references)
        .map(|((_, first), reference)| match (reference, first, &result) {
            (Err(i), _, _) => Verdict::ReferenceInvalid(*i),
            (Ok(_), Some(v), _) => v,
            (Ok(_), None, Err(e)) => Verdict::PassFailed(e.clone()),
            (Ok(_), None, Ok(_)) => Verdict::Agree,
        })
        .collect();
    Ok(PipelineCheck { verdicts, stats, result })
}

/// The pipeline a corpus case is checked after: the check pipeline for HIR, or for a
/// function already in strict SSA form `memopt,ssapre,dce,ssa-destroy,cprop`. A function with
/// phis that is not strict SSA (a phi plus a local read before any definition, which the
/// IR allows: it reads 0) is neither of the pipeline's input forms, so it has none.
pub fn replay_pipeline(f: &Function) -> Option<Pipeline> {
    if f.layout.iter().any(|&b| !f.blocks[b].phis.is_empty()) {
        if !tandem_core::passes::check_form(f, Form::Ssa).is_empty() {
            return None;
        }
        Some(Pipeline::parse_from(Form::Ssa, "memopt,ssapre,dce,ssa-destroy,cprop").expect("valid"))
    } else {
        Some(check_pipeline())
    }
}
