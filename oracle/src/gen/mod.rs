//! The program generator: random, valid, terminating test cases that make every pass of
//! the pipeline fire (issue "Program generator"; `DESIGN.md`, "The harness", Generator).
//!
//! One generator ([`build`]) is driven by a [`Source`] of choices: a seeded ChaCha RNG
//! ([`generate`], the same seed gives the same case on every machine and build) or
//! libFuzzer's bytes ([`TestCase`]'s `Arbitrary` impl). A generated case is a whole case
//! file: a module with one function `%f`, the helper declarations it needs, and runs with
//! arguments, an initial heap and initial callframe values. Expectations are left empty;
//! the command-line layer fills them from the interpreter when it prints for a user.
//!
//! [`check`] is the fuzz target's body (STYLE.md item 7): the case verifies, prints and
//! parses back to the same text, and the interpreter gives the same outcome twice and on
//! the re-parsed module. [`stats()`] measures what the generator makes.

pub mod build;
pub mod config;
pub mod distinguish;
pub mod edges;
pub mod source;
pub mod ssa;
pub mod stats;

pub use config::{Config, Feature, FeatureSet, Profile};
pub use source::{SeededSource, Source};
pub use stats::{stats, Stats};

use crate::cases::casefile::{CaseFile, Run};
use crate::exec::interp::{self, DEFAULT_FUEL};
use crate::exec::outcome::{Invalid, Outcome, Value};
use arbitrary::{Arbitrary, Unstructured};
use std::fmt;
use tandem_core::helpers::HelperKind;
use tandem_core::ir::{ExprData, Module, Type, HEAP_BASE, HEAP_SIZE};
use tandem_core::verify::{format_errors, verify_module};

/// A generated case and the features it was built with.
#[derive(Clone, Debug)]
pub struct Generated {
    pub case: CaseFile,
    pub features: FeatureSet,
    /// The shapes and policy patterns the generator made, by name (with repeats).
    pub shapes: Vec<&'static str>,
    /// The generator's upper bound of the fuel any run of the case uses (block entries
    /// plus evaluated nodes, times the trip-count bounds of the enclosing loops).
    pub fuel_bound: u64,
}

/// Generates the case of `seed` under `cfg`.
pub fn generate(seed: u64, cfg: &Config) -> Generated {
    generate_from(&mut SeededSource::new(seed), cfg)
}

/// Generates a case from any source of choices.
pub fn generate_from<S: Source>(src: &mut S, cfg: &Config) -> Generated {
    // A share of programs in SSA form (drawn only where the profile has such a share, so
    // that the other profiles' programs stay as they were; an exhausted byte source
    // draws 0, which means HIR).
    let in_ssa;
    let cfg = if !cfg.ssa_form && cfg.ssa_form_permille > 0 && src.below(1000) >= 1000 - cfg.ssa_form_permille.min(1000) {
        // As in the ssa profile, loops (where the copies cross) weigh more.
        in_ssa = Config { ssa_form: true, loop_bias: cfg.loop_bias.max(4), ..cfg.clone() };
        &in_ssa
    } else {
        cfg
    };
    let mut g = build::Gen::new(src, cfg);
    g.function();
    let features = g.feats;
    let shapes = std::mem::take(&mut g.shapes);
    let mut fuel_bound = g.fuel_bound();
    let mut used: Vec<HelperKind> = g.helpers_used.clone();
    used.sort();
    let mut f = std::mem::replace(&mut g.f, tandem_core::ir::Function::new("f", Type::I32));
    drop(g);
    let mut shapes = shapes;
    let helpers: Vec<_> = used.into_iter().map(tandem_core::ir::HelperDecl::of).collect();
    if cfg.ssa_form {
        match ssa::to_crossing_ssa(&mut f, &mut |_| src.below(1000) < 250) {
            Ok(r) => {
                fuel_bound += r.entry_nodes_added;
                for (n, shape) in [
                    (r.copies_propagated, "ssa copy propagated"),
                    (r.copies_kept, "ssa copy kept"),
                    (r.crossing_phi_args, "ssa phi argument of another variable"),
                    (r.phi_args_from_sibling_phis, "ssa phi argument a phi of the same block"),
                    (r.phi_args_from_other_phis, "ssa phi argument a phi of another block"),
                ] {
                    shapes.extend(std::iter::repeat_n(shape, n as usize));
                }
                // Copy propagation and SSA construction leave nodes in no tree.
                ssa::compact(&mut f);
            }
            // A failing SSA construction is the `ssa` pass's bug; the HIR function
            // still goes through it in the check, which reports it.
            Err(_) => shapes.push("ssa construction failed, HIR kept"),
        }
    }
    let targets = heap_targets(&f);
    let runs = (0..cfg.runs_per_case.max(1)).map(|_| make_run(src, &f, &targets)).collect();
    let module = Module { helpers, functions: vec![f] };
    Generated { case: CaseFile::new(module, runs), features, shapes, fuel_bound }
}

/// A random value of type `ty`, biased to the edges.
fn value<S: Source>(src: &mut S, ty: Type) -> Value {
    const EDGES: [i64; 10] = [0, 1, -1, 2, 7, 255, 0x7fff_ffff, -0x8000_0000, i64::MAX, i64::MIN];
    let v = match src.below(4) {
        0 => EDGES[src.below(EDGES.len() as u32) as usize],
        1 => src.below(64) as i64 - 16,
        2 => src.below(100_000) as i64,
        _ => src.bits64() as i64,
    };
    Value::new(ty, ty.normalize(v))
}

/// The inputs of one run: arguments, a few initial heap rows, some callframe values.
/// Most heap rows lie where the function's constant heap addresses point (its hot
/// addresses and region bases), so that loads read random bytes, half of them with the
/// top bit set, and a load's extension or width shows in its value.
/// `targets` are `f`'s constant heap offsets ([`heap_targets`]).
fn make_run<S: Source>(src: &mut S, f: &tandem_core::ir::Function, targets: &[u32]) -> Run {
    let args = f.params.iter().map(|&p| value(src, f.locals[p].ty)).collect();
    let mut heap = vec![];
    for _ in 0..src.below(7) {
        let len = 1 + src.below(16);
        let off = if !targets.is_empty() && src.below(3) > 0 {
            targets[src.below(targets.len() as u32) as usize].min(HEAP_SIZE - len)
        } else {
            src.below(HEAP_SIZE - len + 1)
        };
        let bytes = (0..len).map(|_| src.below(256) as u8).collect();
        heap.push((HEAP_BASE + off, bytes));
    }
    let mut callframe = vec![];
    for d in f.cfvars.values() {
        if src.below(2) == 1 {
            callframe.push((d.name.clone(), value(src, d.ty)));
        }
    }
    Run { line: 0, entry: f.name.clone(), args, heap, callframe, fuel: None, expect: None }
}

/// The heap offsets of `f`'s constants that are heap addresses, in node order: where most
/// initial heap rows of [`make_run`] lie. Found once per function, for all its runs.
fn heap_targets(f: &tandem_core::ir::Function) -> Vec<u32> {
    f.exprs
        .values()
        .filter_map(|d| match d {
            ExprData::Const { value, .. } if (HEAP_BASE as i64..(HEAP_BASE + HEAP_SIZE) as i64).contains(value) => {
                Some(*value as u32 - HEAP_BASE)
            }
            _ => None,
        })
        .collect()
}

/// A test case built from libFuzzer's bytes.
#[derive(Clone, Debug)]
pub struct TestCase {
    pub case: CaseFile,
}

impl<'a> Arbitrary<'a> for TestCase {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<TestCase> {
        let profile = Profile::ALL[u.choose_index(Profile::ALL.len())?];
        let cfg = profile.config();
        Ok(TestCase { case: generate_from(u, &cfg).case })
    }
}

/// What a run of a generated case did.
pub type RunResult = Result<Outcome, Invalid>;

/// Why a generated case is broken: each is a bug in the generator, the printer/parser or
/// the interpreter.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum CheckError {
    /// The module does not verify; the verifier's messages.
    Verify(String),
    /// The printed case does not parse back; the parser's message.
    Parse(String),
    /// The re-parsed case prints differently.
    RoundTrip { first: String, second: String },
    /// A run's inputs do not fit the function.
    Input(String),
    /// The interpreter gave two different results for the same run.
    Nondeterministic { run: usize, first: String, second: String },
    /// The re-parsed module behaves differently from the generated one.
    ParsedDiffers { run: usize, first: String, second: String },
    /// A run is invalid although the generator promises valid runs.
    InvalidRun { run: usize, why: Invalid },
    /// This many expression nodes were built but placed in no tree.
    Unplaced(usize),
    /// The declared helpers are not exactly the called ones (both in table order).
    HelperDecls { declared: Vec<String>, called: Vec<String> },
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::Verify(s) => write!(f, "the generated module does not verify:\n{s}"),
            CheckError::Parse(s) => write!(f, "the printed case does not parse: {s}"),
            CheckError::RoundTrip { first, second } => {
                write!(f, "print/parse/print changed the text:\n--- first\n{first}--- second\n{second}")
            }
            CheckError::Input(s) => write!(f, "bad run inputs: {s}"),
            CheckError::Nondeterministic { run, first, second } => {
                write!(f, "run {run} gave two results:\n{first}\n{second}")
            }
            CheckError::ParsedDiffers { run, first, second } => {
                write!(f, "run {run} differs after print/parse:\n{first}\n{second}")
            }
            CheckError::InvalidRun { run, why } => write!(f, "run {run} is {why}"),
            CheckError::Unplaced(n) => write!(f, "{n} expression node(s) are in no tree"),
            CheckError::HelperDecls { declared, called } => {
                write!(f, "declares helpers {declared:?} but calls {called:?}")
            }
        }
    }
}

fn show(r: &RunResult) -> String {
    match r {
        Ok(o) => o.to_string(),
        Err(i) => i.to_string(),
    }
}

fn run_all(case: &CaseFile) -> Result<Vec<RunResult>, CheckError> {
    let mut out = vec![];
    for r in &case.runs {
        let f = case.module.function(&r.entry).ok_or_else(|| CheckError::Input(format!("no %{}", r.entry)))?;
        let mut input = r.input(f).map_err(CheckError::Input)?;
        input.fuel = r.fuel.unwrap_or(DEFAULT_FUEL);
        out.push(interp::run(f, &input).map_err(|e| CheckError::Input(e.to_string()))?);
    }
    Ok(out)
}

/// Checks a generated case: it verifies, round-trips through print and parse, and every
/// run gives the same result twice and on the re-parsed module. Returns the runs'
/// results.
pub fn check(case: &CaseFile) -> Result<Vec<RunResult>, CheckError> {
    verify_module(&case.module).map_err(|e| CheckError::Verify(format_errors(&e)))?;
    let first = case.print();
    let parsed = CaseFile::parse(&first).map_err(|e| CheckError::Parse(e.to_string()))?;
    let second = parsed.print();
    if first != second {
        return Err(CheckError::RoundTrip { first, second });
    }
    verify_module(&parsed.module).map_err(|e| CheckError::Verify(format_errors(&e)))?;
    let a = run_all(case)?;
    let b = run_all(case)?;
    let c = run_all(&parsed)?;
    for (i, ((x, y), z)) in a.iter().zip(&b).zip(&c).enumerate() {
        if x != y {
            return Err(CheckError::Nondeterministic { run: i, first: show(x), second: show(y) });
        }
        if x != z {
            return Err(CheckError::ParsedDiffers { run: i, first: show(x), second: show(z) });
        }
    }
    Ok(a)
}

/// The generator's promises about the shape of a case: every node built is placed in a
/// tree, and the module declares exactly the helpers it calls.
pub fn check_promises(case: &CaseFile) -> Result<(), CheckError> {
    let mut called = vec![];
    for f in &case.module.functions {
        let mut placed = 0;
        for r in f.roots() {
            f.visit_postorder(r, &mut |e| {
                placed += 1;
                if let tandem_core::ir::ExprData::Call { helper, .. } = &f.exprs[e] {
                    if !called.contains(helper) {
                        called.push(*helper);
                    }
                }
            });
        }
        if placed != f.exprs.len() {
            return Err(CheckError::Unplaced(f.exprs.len() - placed));
        }
    }
    called.sort();
    let declared: Vec<String> = case.module.helpers.iter().map(|h| h.name.clone()).collect();
    let want: Vec<String> = called.iter().map(|h| h.name().to_string()).collect();
    if declared != want {
        return Err(CheckError::HelperDecls { declared, called: want });
    }
    Ok(())
}

/// The fuzz target's check on a libFuzzer test case: [`check`], [`check_promises`], and
/// every run is valid, as the generator promises by construction (no fuel exhaustion, no
/// heap access out of bounds).
pub fn check_test_case(t: &TestCase) -> Result<Vec<RunResult>, CheckError> {
    check_promises(&t.case)?;
    let results = check(&t.case)?;
    for (run, r) in results.iter().enumerate() {
        if let Err(why) = r {
            return Err(CheckError::InvalidRun { run, why: *why });
        }
    }
    Ok(results)
}

/// The case of `seed` with every run's expectation filled in from the interpreter, as
/// `tandem gen` prints it, preceded by a comment naming the seed and profile.
pub fn render(seed: u64, profile: Profile) -> String {
    render_with(seed, &profile.config(), &format!("tandem gen --seed {seed} --profile {}", profile.name()))
}

/// [`render`] for any configuration; `origin` (the first comment line) says where the
/// case comes from.
pub fn render_with(seed: u64, cfg: &Config, origin: &str) -> String {
    let mut g = generate(seed, cfg);
    let actual: Vec<_> = g
        .case
        .runs
        .iter()
        .map(|r| {
            let f = g.case.module.function(&r.entry)?;
            let input = r.input(f).ok()?;
            let res = interp::run(f, &input).ok()?;
            Some(Run::expectation_of(f, &res))
        })
        .collect();
    g.case.bless(&actual);
    format!("; {origin}\n; swarm features {}\n{}", g.features, g.case.print())
}

#[cfg(test)]
mod tests;
