//! The Z3 translation validator (issue 9; `DESIGN.md`, "The harness", Validator): asks
//! Z3 for an input on which a function before and after an IR pass has different
//! observable outcomes (how the run ended, the trace, the final heap, the final
//! callframe), and replays every answer in the reference interpreter before reporting it.
//!
//! Two checks, the unbounded one first:
//!
//! * **Simulation, unbounded** ([`simulate::check_simulation`]), for every pass: blocks
//!   correspond by identity (blocks a pass adds on edges stutter), a relation between the
//!   two states at each block entry (classes of equal locals, callframe variables, heaps
//!   and definitions) is inferred by refining classes until they are inductive, and each
//!   block must agree on its observable effects under it. It computes everything it needs
//!   itself and trusts no analysis of `core`. All blocks proved: [`Answer::Proved`], for
//!   every run whatever the iteration counts.
//! * **Bounded, whole function** ([`check_bounded`]) when the simulation check fails (a
//!   block's entry state may be unreachable, and only a whole run can be replayed): both
//!   sides unrolled to `bound` iterations per loop (see [`encode`]); a run that goes
//!   beyond the bound on either side is not compared, so the best answer is
//!   [`Answer::ProvedBounded`], and only when some valid run lies within the bound on
//!   both sides (else [`Answer::Vacuous`], which compared nothing and is never a proof).
//!
//! The source run being valid (no out-of-bounds access) is the precondition; an invalid
//! target run where the source was valid is a difference. The final heaps are compared
//! through a fresh symbolic address and the traces through a fresh symbolic index, so the
//! query has no quantifier. Budgets are deterministic, never wall-clock: each validation
//! of a (function, pass) has [`Options::rlimit`] Z3 resource units ([`Budget`]; the
//! simulation check may use half, the bounded check gets the rest; both checks also
//! charge their encoding work to it, [`simulate::NODE_COST`] units per unit of work, and
//! every solver check costs [`CHECK_COST`] units on top of Z3's count, which includes what
//! Z3 counted outside any check since the one before: simplification, substitution) and a cap on the
//! size of the encoding ([`Options::max_nodes`]), so the same query gets the same answer
//! on every machine, and the CPU time of an answer follows its budget (measured: at most
//! about 0.8 µs per unit; the time a validation spends in the solver is in Z3's count,
//! what it spends outside is charged); an unknown is reported as such and never as a
//! pass.
//!
//! A model becomes a concrete [`RunInput`] (arguments, heap bytes, callframe values) and
//! is run by the interpreter on both functions: only a replayed difference is an
//! [`Answer::Counterexample`]; a model that does not replay is an
//! [`Answer::EncoderDisagreement`], a bug in the encoding. [`write_finding`] writes
//! either as a case file `tandem run` replays.

pub mod encode;
mod identity;
pub mod isolate;
pub mod run;
pub mod selfcheck;
pub mod simulate;
#[cfg(test)]
mod tests;

use crate::cases::casefile::{CaseFile, Run};
use crate::exec::interp::{self, RunInput, DEFAULT_FUEL};
use crate::exec::outcome::{Invalid, Outcome, Value};
use encode::{encode_function, EncodeError, Inputs, SymOutcome, Trace};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tandem_core::helpers::HelperKind;
use tandem_core::ir::{ExprData, Function, Module, HEAP_BASE, HEAP_SIZE};
use tandem_core::passes::{PassError, PassManager, Pipeline};
use z3::ast::{Array, Bool, BV};
use z3::{SatResult, Solver, Sort};

/// How hard to try. Every limit is deterministic: the same query gets the same answer on
/// every machine and under any load.
#[derive(Clone, Debug)]
pub struct Options {
    /// Iterations per loop (back-edge traversals per entry into the loop) the bounded
    /// check unrolls.
    pub bound: u32,
    /// Z3 resource units (`rlimit`) for the whole validation of one (function, pass): every
    /// query draws from it, and the last one gets what is left.
    pub rlimit: u32,
    /// Most expression nodes one side may evaluate after unrolling (and most copies of
    /// blocks the unrolling makes).
    pub max_nodes: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { bound: 4, rlimit: 20_000_000, max_nodes: 200_000 }
    }
}

/// Why there is no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unknown {
    /// The solver used up the resource budget (or gave up).
    Budget,
    /// The unrolled function is larger than [`Options::max_nodes`].
    TooLarge,
    /// The two functions do not have the same parameters or callframe variables, so they
    /// are not two versions of one function.
    Mismatch,
    /// The validation in a child process went past its memory cap and was killed
    /// ([`isolate::Limits::memory`]): a harness limit, never a pass.
    MemoryLimit,
    /// The validation in a child process went past its wall-clock limit and was killed
    /// ([`isolate::Limits::time`]): a harness limit, never a pass.
    TimeLimit,
}

impl Unknown {
    /// A short name of the reason, as reports count unknown answers by it: `budget`,
    /// `too large`, `mismatch`, `memory limit`, `time limit`.
    pub fn reason(self) -> &'static str {
        match self {
            Unknown::Budget => "budget",
            Unknown::TooLarge => "too large",
            Unknown::Mismatch => "mismatch",
            Unknown::MemoryLimit => "memory limit",
            Unknown::TimeLimit => "time limit",
        }
    }
}

/// The resource budget of one validation: what is left of [`Options::rlimit`]. Z3 counts
/// its work in the context's resource counter; each query is given what is left and
/// charged what the counter went up by since the last check: the query's work, and the
/// work Z3 counted between the checks (simplifying goals, the concrete samples'
/// substitutions, model evaluation), which Z3 counts alike but no check's limit bounds.
pub struct Budget {
    left: u64,
    /// The context's resource counter as last charged, shared with the budget's shares.
    seen: std::rc::Rc<std::cell::Cell<u64>>,
}

impl Budget {
    pub fn new(opts: &Options) -> Budget {
        Self::here(opts.rlimit as u64)
    }

    /// A budget of `left` units on the current context's counter (a context nested in the
    /// one of the budget it is drawn from: the caller charges that one what it spent).
    pub fn here(left: u64) -> Budget {
        // Any solver of the context reads its counter; Z3's default solver builds its SMT
        // core to give its statistics (a sixth of a small validation's time).
        let seen = Self::count(&z3::Tactic::new("skip").solver());
        Budget { left, seen: std::rc::Rc::new(std::cell::Cell::new(seen)) }
    }

    /// A budget of `left` units drawn from this one's (the caller charges this one what
    /// the share spent), which charges the context's counter from where this one stands.
    pub fn share(&self, left: u64) -> Budget {
        Budget { left, seen: self.seen.clone() }
    }

    /// The share of a (function, pass)'s budget the simulation check may use: half, so
    /// that the bounded check always has the other half ([`validate`], and `tandem
    /// verify --why`, which runs the simulation check again as `validate` did).
    pub fn simulation_share(&self) -> Budget {
        self.share(self.left / 2)
    }

    /// What is left.
    pub fn left(&self) -> u64 {
        self.left
    }

    /// The context's resource counter so far.
    fn count(s: &Solver) -> u64 {
        match s.get_statistics().value("rlimit count") {
            Some(z3::StatisticsValue::UInt(n)) => n as u64,
            Some(z3::StatisticsValue::Double(d)) => d as u64,
            None => 0,
        }
    }

    /// Charges `units` of work done outside the solver (building terms); false when the
    /// budget is used up.
    pub fn charge(&mut self, units: u64) -> bool {
        self.left = self.left.saturating_sub(units);
        self.left > 0
    }

    /// Checks `s` within what is left of the budget, and charges what the check used. An
    /// empty budget answers unknown without asking.
    pub fn check(&mut self, s: &Solver) -> SatResult {
        self.check_within(s, u64::MAX)
    }

    /// [`Budget::check`], giving the query at most `cap` of what is left.
    pub fn check_within(&mut self, s: &Solver, cap: u64) -> SatResult {
        // Z3 reads an rlimit of 0 as no limit at all.
        let limit = self.left.min(cap).min(u32::MAX as u64);
        if limit == 0 {
            return SatResult::Unknown;
        }
        // What Z3 counted since the last check (outside any check's limit) first.
        let before = Self::count(s);
        self.left = self.left.saturating_sub(before.saturating_sub(self.seen.get()));
        self.seen.set(before);
        let limit = limit.min(self.left);
        if limit == 0 {
            return SatResult::Unknown;
        }
        let mut p = z3::Params::new();
        p.set_u32("rlimit", limit as u32);
        s.set_params(&p);
        let r = s.check();
        let after = Self::count(s);
        self.seen.set(after);
        self.left = self.left.saturating_sub(after.saturating_sub(before) + CHECK_COST);
        r
    }
}

/// Resource units charged per solver check on top of what Z3 counts: a check's fixed
/// cost (setting up the tactic, internalizing the assertions) is about half a
/// millisecond, which Z3 counts as a few hundred units, so that a validation of many small
/// queries took up to 100 times longer per unit than one large query (measured:
/// queries under 1,000 units took 0.8 ms of CPU on average, 2 µs per unit; queries
/// over a million units 0.4 µs per unit).
pub const CHECK_COST: u64 = 1_000;

/// A replayed difference.
#[derive(Clone, Debug)]
pub struct Counterexample {
    pub input: RunInput,
    /// The interpreter's result on the function before the pass.
    pub before: Result<Outcome, Invalid>,
    /// ... and after it.
    pub after: Result<Outcome, Invalid>,
    /// The differences, one per line.
    pub diff: Vec<String>,
}

/// A model the interpreter does not confirm: the encoding and the interpreter disagree.
#[derive(Clone, Debug)]
pub struct Disagreement {
    pub input: RunInput,
    pub before: Result<Outcome, Invalid>,
    pub after: Result<Outcome, Invalid>,
    /// What was wrong with the model.
    pub why: String,
}

/// The answer for one (function, pass).
#[derive(Clone, Debug)]
pub enum Answer {
    /// Equivalent on every run (the simulation check).
    Proved,
    /// Equivalent on every run in which each loop iterates at most this many times per
    /// entry on both sides, and some valid run lies within that bound.
    ProvedBounded(u32),
    /// No valid run lies within the bound: the bounded check compared nothing. Never a
    /// proof.
    Vacuous(u32),
    Counterexample(Box<Counterexample>),
    EncoderDisagreement(Box<Disagreement>),
    Unknown(Unknown),
}

impl Answer {
    /// The answer's kind in one word, as summaries count it.
    pub fn kind(&self) -> &'static str {
        match self {
            Answer::Proved => "proved",
            Answer::ProvedBounded(_) => "bounded",
            Answer::Vacuous(_) => "vacuous",
            Answer::Counterexample(_) => "counterexample",
            Answer::EncoderDisagreement(_) => "disagreement",
            Answer::Unknown(_) => "unknown",
        }
    }

    /// Why there is no answer, for an unknown (see [`Unknown::reason`]).
    pub fn unknown_reason(&self) -> Option<&'static str> {
        match self {
            Answer::Unknown(u) => Some(u.reason()),
            _ => None,
        }
    }

    /// Whether the answer is a proof (bounded or not).
    pub fn is_proof(&self) -> bool {
        matches!(self, Answer::Proved | Answer::ProvedBounded(_))
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Proved => f.write_str("proved"),
            Answer::ProvedBounded(k) => write!(f, "proved (bound {k})"),
            Answer::Vacuous(k) => write!(f, "vacuous (no valid run within bound {k})"),
            Answer::Counterexample(c) => {
                write!(f, "counterexample: {}", input_text(&c.input))?;
                for d in &c.diff {
                    write!(f, "\n  {d}")?;
                }
                Ok(())
            }
            Answer::EncoderDisagreement(d) => write!(f, "encoder disagreement: {} ({})", input_text(&d.input), d.why),
            Answer::Unknown(Unknown::Budget) => f.write_str("unknown (resource budget used up)"),
            Answer::Unknown(Unknown::TooLarge) => f.write_str("unknown (too large)"),
            Answer::Unknown(Unknown::Mismatch) => f.write_str("unknown (not two versions of one function)"),
            Answer::Unknown(Unknown::MemoryLimit) => f.write_str("unknown (memory limit)"),
            Answer::Unknown(Unknown::TimeLimit) => f.write_str("unknown (time limit)"),
        }
    }
}

fn input_text(i: &RunInput) -> String {
    let args: Vec<String> = i.args.iter().map(|a| a.to_string()).collect();
    let mut s = format!("args ({})", args.join(", "));
    if !i.heap.is_empty() {
        s += &format!(", {} heap row(s)", i.heap.len());
    }
    if !i.callframe.is_empty() {
        let cf: Vec<String> = i.callframe.iter().map(|(v, x)| format!("{v}={x}")).collect();
        s += &format!(", callframe {}", cf.join(" "));
    }
    s
}

/// The largest function the validator takes: beyond it the answer is `unknown (too
/// large)` at once, a harness limit (listed as undecided, never a pass). Generated
/// programs stay far below (at most about 64 blocks and a few hundred statements); the
/// simulation check's inference and the bounded check's unrolling grow faster than
/// linearly with the number of blocks (a 500-block chain took minutes, a 5,000-block one
/// gigabytes), and a function of 100,000 blocks or statements must still get its verdict.
pub const MAX_BLOCKS: usize = 256;
/// See [`MAX_BLOCKS`].
pub const MAX_STATEMENTS: usize = 10_000;

/// Whether `f` is past the validator's size limits ([`MAX_BLOCKS`], [`MAX_STATEMENTS`]).
fn too_large(f: &Function) -> bool {
    f.layout.len() > MAX_BLOCKS || f.layout.iter().map(|&b| f.blocks[b].stmts.len()).sum::<usize>() > MAX_STATEMENTS
}

/// Validates one pass: `before` and `after` are the function as the pass found and left
/// it. `pass` only names it in messages.
///
/// In a Z3 context of its own ([`in_context`]), so that the answer depends on the two
/// functions and the options alone, never on what was validated before in the same
/// process: in a shared context, the names of fresh symbols (`v!1234`, which the concrete
/// samples order by name) and the ids of terms (by which Z3's simplifier orders operands)
/// depended on the terms earlier passes had built, and default seed 36's memopt answered
/// `proved (bound 2)` after the earlier passes' validations and `proved` alone.
pub fn validate(before: &Function, after: &Function, pass: &str, opts: &Options) -> Answer {
    // A pass that left the function as it was preserved its semantics: the IR's semantics
    // are a function of the function alone. No solver needed (a quarter of the pairs of
    // small functions, where each context's set-up was most of the answer's time).
    if before == after {
        return Answer::Proved;
    }
    // Most pairs are proved by term identity, which makes no Z3 term; outside a Z3
    // context, whose making was most of such a pair's time. The Z3 check after it then
    // skips the identity tries, and answers as it did with them first.
    if !too_large(before) && !too_large(after) && simulate::proved_by_identity(before, after, opts) {
        return Answer::Proved;
    }
    in_context(|| validate_here(before, after, pass, opts))
}

/// [`validate`] in the current Z3 context.
fn validate_here(before: &Function, after: &Function, pass: &str, opts: &Options) -> Answer {
    let _ = pass;
    if too_large(before) || too_large(after) {
        return Answer::Unknown(Unknown::TooLarge);
    }
    let mut budget = Budget::new(opts);
    // When a block differs on some entry state, or the solver gives up on it, the bounded
    // check looks for a whole run that shows it.
    let mut half = budget.simulation_share();
    let start = half.left;
    let proved = simulate::check_simulation_in_z3(before, after, opts, &mut half) == Ok(true);
    budget.left -= start - half.left;
    if proved {
        return Answer::Proved;
    }
    check_bounded(before, after, opts, &mut budget)
}

/// Runs `pipeline` over a copy of `f` and validates every pass on its before/after pair.
/// Returns (pass, answer, time) per pass, or the pass manager's error.
///
/// Every call runs in a Z3 context of its own, dropped at the end (issue 23): the `z3`
/// crate's implicit thread-local context keeps every term ever built in it for the life
/// of the thread, so a campaign worker or `tandem verify` that validated through it grew
/// by megabytes a minute for as long as it ran. This is the one place the validator's
/// callers enter (the campaign, `tandem run`, `tandem verify`); the rest of this room
/// builds its terms in whatever context is current. A panic inside (a pass that panics
/// is its stage's finding, see `judge::check::caught`) is carried out of the context
/// and resumed, so the thread's default context is restored either way.
pub fn validate_pipeline(f: &Function, pipeline: &Pipeline, opts: &Options) -> Result<Vec<(String, Answer, Duration)>, PassError> {
    Ok(validate_passes(f, pipeline, opts)?.into_iter().map(|(p, a, t, _)| (p, a, t)).collect())
}

/// [`validate_pipeline`], with whether each pass changed the function; in a fresh Z3
/// context (see [`validate_pipeline`]).
pub fn validate_passes(f: &Function, pipeline: &Pipeline, opts: &Options) -> Result<Vec<(String, Answer, Duration, bool)>, PassError> {
    validate_some_passes(f, pipeline, opts, None)
}

/// [`validate_passes`], validating only the pass named `only` when given (the pipeline
/// still runs every pass up to it; the other passes get no entry).
pub fn validate_some_passes(f: &Function, pipeline: &Pipeline, opts: &Options, only: Option<&str>) -> Result<Vec<(String, Answer, Duration, bool)>, PassError> {
    in_fresh_context(|| validate_passes_in_context(f, pipeline, opts, only))
}

/// Runs `work` in a Z3 context of its own, dropped at the end with its memory given back
/// to the system (see [`validate_pipeline`]). A panic inside is carried out of the context
/// and resumed, so the thread's default context is restored either way.
pub fn in_fresh_context<T: Send + Sync>(work: impl Fn() -> T + Send + Sync) -> T {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| in_context(&work)));
    // A big function's queries take a hundred megabytes for a moment; glibc keeps freed
    // memory in its heaps, so without this a long campaign's resident set would climb to
    // the largest query it ever ran and stay there (issue 23).
    crate::measure::memory::release_free();
    match result {
        Ok(answer) => answer,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Runs `work` in a new Z3 context, dropped at the end; the thread's context before it is
/// restored, also when `work` panics (the panic is resumed after).
pub fn in_context<T: Send + Sync>(work: impl Fn() -> T + Send + Sync) -> T {
    let run = || {
        // The context's own kept terms, dropped before it is (its fresh symbols numbered
        // from 0, as Z3 numbers its own per context).
        let outer = KEPT.with(|k| k.take());
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&work)).map_err(std::sync::Mutex::new);
        drop(KEPT.with(|k| k.replace(outer)));
        answer
    };
    match z3::with_z3_config(&z3::Config::new(), run) {
        Ok(answer) => answer,
        Err(panic) => std::panic::resume_unwind(panic.into_inner().unwrap_or_else(|e| e.into_inner())),
    }
}

/// What the thread's current Z3 context keeps for reuse: the number of its next fresh
/// symbol, its numerals, and the simplified form of each term simplified. Terms belong to
/// one context, so [`in_context`] gives each context its own, and drops it with it.
#[derive(Default)]
struct Kept {
    fresh: u32,
    numerals: tandem_core::hash::HashMap<(u64, u32), BV>,
    simplified: tandem_core::hash::HashMap<z3::ast::Dynamic, z3::ast::Dynamic>,
    uninterpreted: tandem_core::hash::HashMap<(&'static str, u32), z3::FuncDecl>,
}

thread_local! {
    static KEPT: std::cell::RefCell<Kept> = std::cell::RefCell::new(Kept::default());
}

/// A symbol no other term of the current context has, named by a number. Not Z3's
/// `Z3_mk_fresh_const`: that one names each symbol by a new string (`v!123`) that Z3 interns
/// in a table shared by every context of the process and never frees. A number needs no
/// string, and no name a string symbol has is a number.
fn fresh_symbol() -> z3::Symbol {
    z3::Symbol::Int(KEPT.with(|k| {
        let mut k = k.borrow_mut();
        k.fresh += 1;
        k.fresh - 1
    }))
}

/// A fresh bit-vector symbol of `width` bits (see [`fresh_symbol`]).
pub(super) fn fresh_bv(width: u32) -> BV {
    BV::new_const(fresh_symbol(), width)
}

/// A fresh heap: an array from 32-bit addresses to bytes (see [`fresh_symbol`]).
pub(super) fn fresh_heap() -> Array {
    Array::new_const(fresh_symbol(), &Sort::bitvector(32), &Sort::bitvector(8))
}

/// The numeral `value` (its low `width` bits) of `width` bits, made once per context: the
/// encoder asks for the same few numerals at every node (a binary operator's zero and
/// `MIN`, each byte's offset), and Z3 takes thousands of instructions to make one.
pub(super) fn numeral(value: u64, width: u32) -> BV {
    let value = if width >= 64 { value } else { value & ((1u64 << width) - 1) };
    KEPT.with(|k| k.borrow_mut().numerals.entry((value, width)).or_insert_with(|| BV::from_u64(value, width)).clone())
}

/// The uninterpreted function `name` from two bit-vectors of `a`'s width to one, applied
/// to `a` and `b`; the function made once per context (`simulate`'s abstracted products
/// and quotients).
pub(super) fn uninterpreted(name: &'static str, a: &BV, b: &BV) -> BV {
    let bits = a.get_size();
    KEPT.with(|k| {
        let mut k = k.borrow_mut();
        let f = k.uninterpreted.entry((name, bits)).or_insert_with(|| {
            let s = Sort::bitvector(bits);
            z3::FuncDecl::new(name, &[&s, &s], &s)
        });
        f.apply(&[a, b]).as_bv().expect("a bit-vector function")
    })
}

/// `t` simplified by Z3, once per term and context: each call of Z3's simplifier sets up
/// its rewriter anew (tens of thousands of instructions), and the simulation check
/// simplifies the same terms at each encoding and on each edge.
pub(super) fn simplified<T: z3::ast::Ast + TryFrom<z3::ast::Dynamic>>(t: &T) -> T {
    let d = z3::ast::Dynamic::from_ast(t);
    let kept = KEPT.with(|k| k.borrow().simplified.get(&d).cloned());
    let s = kept.unwrap_or_else(|| {
        let s = z3::ast::Ast::simplify(&d);
        KEPT.with(|k| k.borrow_mut().simplified.insert(d, s.clone()));
        s
    });
    T::try_from(s).unwrap_or_else(|_| unreachable!("simplifying keeps the sort"))
}

/// [`validate_passes`] in the current Z3 context.
fn validate_passes_in_context(f: &Function, pipeline: &Pipeline, opts: &Options, only: Option<&str>) -> Result<Vec<(String, Answer, Duration, bool)>, PassError> {
    let mut g = f.clone();
    let mut before = f.clone();
    let mut out = vec![];
    // Through the checks' driver, so that a bug a harness test planted is validated too.
    crate::judge::check::drive(&PassManager { verify: true }, pipeline, &mut g, &mut |pass, after, _| {
        if only.is_some_and(|p| p != pass) {
            before = after.clone();
            return;
        }
        let t = Instant::now();
        let a = validate(&before, after, pass, opts);
        out.push((pass.to_string(), a, t.elapsed(), before != *after));
        before = after.clone();
    })?;
    Ok(out)
}

/// A fresh solver: Z3's simplifier, then its SMT core, as a tactic. Z3's default solver
/// costs about 13 ms per query before it starts (it picks a strategy for the goal), which
/// would dominate the latency of small functions; the solver for the logic QF_ABV starts
/// in about 1 ms but gives up ("incomplete") on the constant arrays of the trace and heap
/// comparisons. This one starts in about 0.4 ms and is complete. Its limit is set per
/// check by [`Budget::check`].
pub fn solver() -> Solver {
    z3::Tactic::new("simplify").and_then(&z3::Tactic::new("smt")).solver()
}

/// The simulation check's solver, and the bounded check's second one, for a comparison
/// [`solver`] gave up on: the simplifier, then Gaussian elimination of the equalities (`solve-eqs`: the unrolled
/// functions' many `x = term` definitions), then bit-blasting where the goal is pure
/// bit-vectors (`qfbv`; the heap's and the trace's arrays make it fail, and then the SMT
/// core takes the goal). On the comparisons the first gives up on, it often answers in a
/// tenth of the time (default seed 1's `memopt`: 0.2 s for `proved (bound 2)`, where the
/// first gives up after 4 s); as the bounded check's only solver it lost as many answers
/// as it won.
/// In the simulation check every query is of this form (entry assumptions `v = term`, then
/// a disjunction of differences), and with this solver it proved more pairs for less CPU
/// time than with [`solver`]: memopt on loops, memory and default seeds 300-359 (122
/// changed pairs), 96 -> 103 proved for every run, 201 -> 197 s of user time; its fixed
/// start (a few tactics) costs the smallest queries more, so the median pair took longer
/// (default seeds 400-419, every pass: p50 102 -> 117 ms).
pub(super) fn bitblast_solver() -> Solver {
    use z3::Tactic as T;
    T::new("simplify").and_then(&T::new("solve-eqs")).and_then(&T::new("qfbv").or_else(&T::new("smt"))).solver()
}

/// A [`bitblast_solver`] with `assertions` asserted, in order (the simulation check's
/// queries). A term a query builds for itself is built after the solver and asserted
/// then: making the solver may build terms too, and Z3's ids, by which it orders its terms'
/// arguments, follow the order terms are built in (a disjunction built before the solver
/// made ssa seed 1305's memopt answer `unknown` instead of `proved (bound 2)`).
pub(super) fn bitblast_solver_with<'a>(assertions: impl IntoIterator<Item = &'a Bool>) -> Solver {
    let s = bitblast_solver();
    for a in assertions {
        s.assert(a);
    }
    s
}

/// `a` and `b` (source and target) differ observably, for a source that is valid. Uses
/// fresh symbols for the heap address and trace index compared.
fn differ(a: &SymOutcome, b: &SymOutcome) -> Bool {
    outcomes_differ(a, b, false)
}

/// Whether two outcomes differ observably: how they end, the value returned, the check's
/// code, a heap byte (at a fresh address), a trace event (at a fresh index), a callframe
/// variable. For one simulation `step` (`simulate.rs`), a step that continues also
/// differs by its next block, and the heap and the callframe count only where the run
/// stops.
pub(super) fn outcomes_differ(a: &SymOutcome, b: &SymOutcome, step: bool) -> Bool {
    Bool::or(&outcome_differences(a, b, step))
}

/// The ways [`outcomes_differ`] counts, one condition each (its disjuncts).
pub(super) fn outcome_differences(a: &SymOutcome, b: &SymOutcome, step: bool) -> Vec<Bool> {
    let kind = |k: u64| BV::from_u64(k, 8);
    let addr = fresh_bv(32);
    let in_heap = Bool::and(&[
        addr.bvuge(BV::from_u64(HEAP_BASE as u64, 32)),
        addr.bvult(BV::from_u64((HEAP_BASE + HEAP_SIZE) as u64, 32)),
    ]);
    let sel = |h: &Array| h.select(&addr).as_bv().expect("bytes");
    let stops = step.then(|| a.kind.eq(kind(encode::END_CONTINUE)).not());
    let heap = sel(&a.state.heap).eq(sel(&b.state.heap)).not();
    let mut d = vec![a.kind.eq(&b.kind).not(), Bool::and(&[a.kind.eq(kind(encode::END_RETURN)), a.value.eq(&b.value).not()])];
    if step {
        d.push(Bool::and(&[a.kind.eq(kind(encode::END_CONTINUE)), a.value.eq(&b.value).not()]));
    }
    d.push(Bool::and(&[a.kind.eq(kind(encode::END_CHECK)), a.code.eq(&b.code).not()]));
    d.push(match &stops {
        Some(stops) => Bool::and(&[stops, &in_heap, &heap]),
        None => Bool::and(&[in_heap, heap]),
    });
    d.push(trace_differs(&a.state.trace, &b.state.trace));
    for (x, y) in a.state.callframe.iter().zip(&b.state.callframe) {
        d.push(match &stops {
            Some(stops) => Bool::and(&[stops, &x.eq(y).not()]),
            None => x.eq(y).not(),
        });
    }
    d
}

fn trace_differs(a: &Trace, b: &Trace) -> Bool {
    let i = fresh_bv(32);
    let at = |arr: &Array| arr.select(&i).as_bv().expect("trace entries are bit-vectors");
    let mut entry = vec![at(&a.kind).eq(at(&b.kind)).not()];
    for (x, y) in a.args.iter().zip(&b.args) {
        entry.push(at(x).eq(at(y)).not());
    }
    Bool::or(&[a.len.eq(&b.len).not(), Bool::and(&[i.bvult(&a.len), Bool::or(&entry)])])
}

/// The bounded whole-function check, with every model replayed. Unsat alone is not a
/// proof: a second query asks for some valid run within the bound on both sides, and
/// without one the answer is [`Answer::Vacuous`].
pub fn check_bounded(before: &Function, after: &Function, opts: &Options, budget: &mut Budget) -> Answer {
    if before.params.len() != after.params.len()
        || before.params.iter().zip(&after.params).any(|(&p, &q)| before.locals[p].ty != after.locals[q].ty)
        || before.cfvars != after.cfvars
    {
        return Answer::Unknown(Unknown::Mismatch);
    }
    let inputs = Inputs::fresh(before);
    let slots = encode::trace_slots(before);
    let (x, y) = match (
        encode_function(before, &inputs, slots, opts.bound, opts.max_nodes),
        encode_function(after, &inputs, slots, opts.bound, opts.max_nodes),
    ) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(EncodeError::TooLarge(_)), _) | (_, Err(EncodeError::TooLarge(_))) => return Answer::Unknown(Unknown::TooLarge),
    };
    // The unrolling's work counts against the budget too, as the simulation check's does.
    if !budget.charge((x.work + y.work) as u64 * simulate::NODE_COST) {
        return Answer::Unknown(Unknown::Budget);
    }
    // The comparison: first by [`solver`] (simplify, smt), on half of what is left, then,
    // if that one gives up, by [`bitblast_solver`] on the rest.
    let prepared = |s: Solver| {
        s.assert(&x.in_bound);
        s.assert(&y.in_bound);
        s.assert(x.kind.eq(BV::from_u64(encode::END_INVALID, 8)).not());
        s.push();
        s.assert(differ(&x, &y));
        s
    };
    let mut s = prepared(solver());
    let mut r = budget.check_within(&s, budget.left() / 2);
    if r == SatResult::Unknown {
        s = prepared(bitblast_solver());
        r = budget.check(&s);
    }
    match r {
        SatResult::Unsat => {}
        SatResult::Unknown => return Answer::Unknown(Unknown::Budget),
        SatResult::Sat => {
            let model = s.get_model().expect("a model after sat");
            return replay(before, after, model_input(before, &inputs, &model));
        }
    }
    s.pop(1);
    // A valid run within the bound: first the all-zero input (a ground query, decided by
    // propagation), then any input.
    s.push();
    for a in &inputs.args {
        s.assert(a.eq(BV::from_u64(0, a.get_size())));
    }
    for c in &inputs.callframe {
        s.assert(c.eq(BV::from_u64(0, c.get_size())));
    }
    s.assert(inputs.heap.eq(Array::const_array(&Sort::bitvector(32), &BV::from_u64(0, 8))));
    if budget.check(&s) == SatResult::Sat {
        return Answer::ProvedBounded(opts.bound);
    }
    s.pop(1);
    match budget.check(&s) {
        SatResult::Sat => Answer::ProvedBounded(opts.bound),
        SatResult::Unsat => Answer::Vacuous(opts.bound),
        SatResult::Unknown => Answer::Unknown(Unknown::Budget),
    }
}

/// The concrete inputs a model gives.
pub fn model_input(f: &Function, inputs: &Inputs, model: &z3::Model) -> RunInput {
    let num = |v: &BV| model.eval(v, true).and_then(|x| x.as_u64()).expect("a numeral under model completion");
    let args = f.params.iter().zip(&inputs.args).map(|(&p, a)| Value::new(f.locals[p].ty, num(a) as i64)).collect();
    let callframe = f
        .cfvars
        .iter()
        .zip(&inputs.callframe)
        .map(|((v, d), x)| (v, Value::new(d.ty, num(x) as i64)))
        .collect();
    let mut bytes = vec![0u8; HEAP_SIZE as usize];
    for (off, byte) in bytes.iter_mut().enumerate() {
        let a = BV::from_u64(HEAP_BASE as u64 + off as u64, 32);
        *byte = num(&inputs.heap.select(&a).as_bv().expect("bytes")) as u8;
    }
    RunInput { args, heap: heap_rows(&bytes), callframe, fuel: DEFAULT_FUEL }
}

/// The non-zero 16-byte rows of a heap image, as initial heap ranges.
fn heap_rows(bytes: &[u8]) -> Vec<(u32, Vec<u8>)> {
    bytes
        .chunks(16)
        .enumerate()
        .filter(|(_, c)| c.iter().any(|&b| b != 0))
        .map(|(i, c)| (HEAP_BASE + 16 * i as u32, c.to_vec()))
        .collect()
}

/// Runs both functions on `input`: a difference is a counterexample, anything else an
/// encoder disagreement.
pub fn replay(before: &Function, after: &Function, input: RunInput) -> Answer {
    let run = |f: &Function| interp::run(f, &input).expect("the model's inputs fit the function");
    let (b, a) = (run(before), run(after));
    let disagree = |why: String| Answer::EncoderDisagreement(Box::new(Disagreement { input: input.clone(), before: b.clone(), after: a.clone(), why }));
    match (&b, &a) {
        (Err(i), _) => disagree(format!("the model's source run is {i}")),
        (Ok(x), Ok(y)) => {
            let diff = x.diff(y);
            if diff.is_empty() {
                disagree("both runs have the same outcome".into())
            } else {
                Answer::Counterexample(Box::new(Counterexample { input: input.clone(), before: b.clone(), after: a.clone(), diff }))
            }
        }
        (Ok(_), Err(i)) => {
            let diff = vec![format!("the run after the pass is {i}")];
            Answer::Counterexample(Box::new(Counterexample { input: input.clone(), before: b.clone(), after: a.clone(), diff }))
        }
    }
}

/// The module holding `f` and the helper declarations it needs.
pub fn module_of(f: &Function) -> Module {
    let mut used: Vec<HelperKind> = vec![];
    for e in f.exprs.values() {
        if let ExprData::Call { helper, .. } = e {
            if !used.contains(helper) {
                used.push(*helper);
            }
        }
    }
    used.sort();
    Module { helpers: used.into_iter().map(tandem_core::ir::HelperDecl::of).collect(), functions: vec![f.clone()] }
}

/// Writes a counterexample or an encoder disagreement as a case file in `dir`: the
/// function `f` (the pipeline's input, so that `tandem run` replays every pass on it),
/// one run with the model's inputs and the reference interpreter's outcome as its
/// expectation, and `;` lines naming the pass and the difference. Returns the path, or
/// `None` for an answer that is not a finding.
pub fn write_finding(dir: &Path, stem: &str, f: &Function, pass: &str, answer: &Answer) -> std::io::Result<Option<PathBuf>> {
    let (input, head, lines): (&RunInput, String, Vec<String>) = match answer {
        Answer::Counterexample(c) => (&c.input, format!("; the Z3 validator finds that pass `{pass}` changes the outcome (replayed in the interpreter):"), c.diff.clone()),
        Answer::EncoderDisagreement(d) => {
            (&d.input, format!("; the Z3 validator has an encoder disagreement on pass `{pass}` (the model does not replay):"), vec![d.why.clone()])
        }
        _ => return Ok(None),
    };
    let reference = interp::run(f, input).map_err(|e| std::io::Error::other(e.to_string()))?;
    let run = Run {
        line: 0,
        entry: f.name.clone(),
        args: input.args.clone(),
        heap: input.heap.clone(),
        callframe: input.callframe.iter().map(|(v, x)| (f.cfvars[*v].name.clone(), *x)).collect(),
        fuel: None,
        expect: Some(Run::expectation_of(f, &reference)),
    };
    let mut text = head + "\n";
    for l in lines {
        text += &format!(";   {l}\n");
    }
    text += &CaseFile::new(module_of(f), vec![run]).print();
    let path = dir.join(format!("{stem}-smt-{pass}.tir"));
    std::fs::create_dir_all(dir)?;
    std::fs::write(&path, text)?;
    Ok(Some(path))
}
