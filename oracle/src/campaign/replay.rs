//! Replays case files: parses, verifies, runs every run in the reference interpreter and
//! compares with the expectation (or blesses it), then checks every later stage against
//! the reference with [`crate::judge::check::check_case`]: the interpreter after every pass of
//! the check pipeline (`ssa,memopt,ssapre,dce,ssa-destroy,cprop`), and the x86 code in the emulator without and with those
//! passes. This is what `tandem run` and the corpus tests call; the command-line layer
//! only turns [`FileReport`] into text and an exit code. Each function's passes are also
//! translation-validated with Z3 ([`crate::smt`]) at a small bound and resource budget
//! ([`replay_smt_options`], or none with [`ReplayOptions::verify`] `None`); a replayed
//! counterexample or an encoder disagreement fails the file. Cases written by the
//! generator (a `; tandem gen --seed N` line among their leading comments) are not
//! validated unless [`ReplayOptions::verify_generated`] asks: the validator costs up to
//! seconds per generated case (validating 1,000 generated cases had not finished after
//! 66 minutes, 555 of them done, on 2 busy cores), the differential check milliseconds, and campaigns and `tandem verify --generated` validate generated
//! programs already. Every report says how many files were validated ([`Validation`]).

use crate::cases::casefile::{CaseFile, Run};
use crate::judge::check::{check_case, Problem};
use std::path::{Path, PathBuf};
use tandem_core::passes::{check_form_located, Form};
use tandem_core::verify::{verify_module, Location};

/// A problem with the input itself: the file is broken, not the program under test.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct BadInput {
    pub path: PathBuf,
    pub line: u32,
    pub col: u32,
    pub message: String,
}

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Line 0: the problem is the file or folder as a whole (it cannot be read, or
        // holds nothing to test), not a place in it.
        if self.line == 0 {
            write!(f, "{}: {}", self.path.display(), self.message)
        } else {
            write!(f, "{}:{}:{}: {}", self.path.display(), self.line, self.col, self.message)
        }
    }
}

/// Reads a file as UTF-8 text; a byte that is not is located by line and column (the
/// column counts characters, as the parser's do).
fn read_text(path: &Path) -> Result<String, BadInput> {
    let bad = |line, col, message| BadInput { path: path.to_path_buf(), line, col, message };
    let bytes = std::fs::read(path).map_err(|e| bad(0, 0, format!("cannot read: {e}")))?;
    String::from_utf8(bytes).map_err(|e| {
        let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let text = std::str::from_utf8(good).expect("valid up to here");
        let line = text.matches('\n').count() as u32 + 1;
        let col = text.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u32 + 1;
        let byte = e.as_bytes()[good.len()];
        bad(line, col, format!("the file is not UTF-8 text: byte 0x{byte:02x} is not valid here"))
    })
}

/// The result of one run of a case file.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// Line of the `; run:` directive.
    pub line: u32,
    pub title: String,
    /// Differences between the reference interpreter and the expectation.
    pub mismatches: Vec<String>,
    /// Stages (IR passes, x86) whose outcome differs from the reference interpreter's.
    pub problems: Vec<Problem>,
    /// Stages that could not run because the program exceeds a limit of the harness:
    /// (stage, what limit).
    pub limits: Vec<(String, String)>,
    /// x86 stages whose run Unicorn and the CPU disagree on: (stage, the disagreement).
    /// An emulator infidelity, not a compiler finding.
    pub infidelities: Vec<(String, crate::exec::x86::Infidelity)>,
}

impl RunReport {
    /// Whether the run matched its expectation and every stage agreed.
    pub fn passed(&self) -> bool {
        self.mismatches.is_empty() && self.problems.is_empty()
    }
}

/// The result of replaying one file.
#[derive(Clone, Debug)]
pub struct FileReport {
    pub path: PathBuf,
    pub runs: Vec<RunReport>,
    /// Whether `--bless` rewrote the file.
    pub blessed: bool,
    /// The Z3 validator's answer for each (function, pass) of the check pipeline.
    pub smt: Vec<SmtReport>,
    /// Whether the validator ran on the file, and why not.
    pub validation: Validation,
}

/// Whether the validator ran on a replayed file.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Validation {
    /// Every function's passes were validated (`smt` holds the answers).
    Validated,
    /// Validation is off (`tandem run --no-verify`).
    Off,
    /// A case written by the generator, not validated by default
    /// (`--verify-generated` validates it).
    Generated,
}

/// The Z3 validator's answer for one function and pass.
#[derive(Clone, Debug)]
pub struct SmtReport {
    pub function: String,
    pub pass: String,
    pub answer: crate::smt::Answer,
}

impl SmtReport {
    /// Whether the answer is a finding (a counterexample or an encoder disagreement).
    pub fn failed(&self) -> bool {
        matches!(self.answer, crate::smt::Answer::Counterexample(_) | crate::smt::Answer::EncoderDisagreement(_))
    }

    /// Whether the answer is neither a proof nor a finding: unknown (the deterministic
    /// budget ran out) or vacuous (nothing compared within the bound). Its own status,
    /// never a pass: `tandem run` exits 3 on it when nothing failed.
    pub fn undecided(&self) -> bool {
        matches!(self.answer, crate::smt::Answer::Unknown(_) | crate::smt::Answer::Vacuous(_))
    }
}

impl FileReport {
    pub fn passed(&self) -> bool {
        self.runs.iter().all(RunReport::passed) && !self.smt.iter().any(SmtReport::failed)
    }
}

/// The validator's effort in corpus replay (`--verify-bound K` and `--verify-rlimit R`
/// change it): enough for every pair of the hand-written corpus to get a decided answer
/// (58 files, 947 pairs: 938 proved, 9 proved to bound 1, none unknown). Generated
/// cases are larger, and many use the whole budget (seconds each): they are validated only
/// when asked ([`ReplayOptions::verify_generated`]).
pub fn replay_smt_options() -> crate::smt::Options {
    crate::smt::Options { bound: 1, rlimit: 4_000_000, max_nodes: 20_000 }
}

/// How files are replayed.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// Rewrite the expectations of runs whose reference outcome differs from them.
    pub bless: bool,
    /// The validator's options, or `None` for no translation validation
    /// (`tandem run --no-verify`).
    pub verify: Option<crate::smt::Options>,
    /// Validate cases written by the generator too (`tandem run --verify-generated`);
    /// by default only the others are ([`generated`]).
    pub verify_generated: bool,
}

impl Default for ReplayOptions {
    fn default() -> ReplayOptions {
        ReplayOptions { bless: false, verify: Some(replay_smt_options()), verify_generated: false }
    }
}

/// Whether the case file `src` was written by the generator (`tandem gen`, a campaign's
/// finding file): a `; tandem gen --seed` line among the comments before its first line
/// of code. A file that records a validator finding (a `; stage `z3 ...` comment) is not
/// counted as generated, so that its replay validates it.
pub fn generated(src: &str) -> bool {
    let head = src.lines().map(str::trim).take_while(|l| l.is_empty() || l.starts_with(';'));
    let mut gen = false;
    for l in head {
        if l.starts_with("; stage `z3 ") {
            return false;
        }
        gen |= l.starts_with("; tandem gen --seed ");
    }
    gen
}

/// Validates the check pipeline's passes on every function of `case` (a function already
/// in SSA form skips the passes up to `ssa`).
fn validate_case(case: &CaseFile, opts: &crate::smt::Options) -> Vec<SmtReport> {
    let mut out = vec![];
    for f in &case.module.functions {
        // The pipeline the stage checks run, so that the validator sees the same passes.
        let Some(pipeline) = crate::judge::passcheck::replay_pipeline(f) else { continue };
        // A pass the verifier rejects, or one that panics, is reported by the stage checks
        // already.
        // In a child with hard memory and time limits (`smt::isolate`).
        let Ok(Ok(answers)) = crate::judge::check::caught(|| crate::smt::isolate::validate_pipeline_bounded(f, &pipeline, opts, &|| false)) else { continue };
        for (pass, answer, _) in answers {
            out.push(SmtReport { function: f.name.clone(), pass, answer });
        }
    }
    out
}

/// Parses and verifies a case file; every problem is a located [`BadInput`].
pub fn load(path: &Path) -> Result<CaseFile, BadInput> {
    load_text(path).map(|(case, _)| case)
}

/// [`load`], with the file's text.
fn load_text(path: &Path) -> Result<(CaseFile, String), BadInput> {
    let bad = |line, col, message| BadInput { path: path.to_path_buf(), line, col, message };
    let src = read_text(path)?;
    let case = CaseFile::parse(&src).map_err(|e| bad(e.line, e.col, e.message))?;
    if case.module.functions.is_empty() {
        let what = if src.trim().is_empty() { "the file is empty" } else { "the file defines no function" };
        return Err(bad(1, 1, format!("{what}: there is nothing to compile or run")));
    }
    if let Err(errs) = verify_module(&case.module) {
        let e = &errs[0];
        let (line, col) = case.source_map.position(&e.location);
        let more = if errs.len() > 1 { format!(" (and {} more error(s))", errs.len() - 1) } else { String::new() };
        return Err(bad(line, col, format!("{e}{more}")));
    }
    // A function written with phis is SSA input: it must be strict SSA (each local
    // defined once, every use dominated by its definition), or no pass can take it.
    for (fi, f) in case.module.functions.iter().enumerate() {
        if f.layout.iter().all(|&b| f.blocks[b].phis.is_empty()) {
            continue;
        }
        if let Some(e) = check_form_located(f, Form::Ssa).into_iter().next() {
            let loc = Location {
                helper: None,
                function: Some((fi, f.name.clone())),
                block: Some(e.block),
                stmt: e.node.map(|n| (n, String::new())),
            };
            let (line, col) = case.source_map.position(&loc);
            return Err(bad(line, col, format!("function %{} has phis but is not in SSA form: {e}", f.name)));
        }
    }
    for r in &case.runs {
        let Some(f) = case.module.function(&r.entry) else {
            return Err(bad(r.line, 1, format!("no function %{} in this file", r.entry)));
        };
        r.input(f).map_err(|m| bad(r.line, 1, m))?;
    }
    Ok((case, src))
}

/// Bad input unless the case file at `path` has a run: a green replay of a file that runs
/// nothing would be a gate that tested nothing, and a page explaining it would show
/// nothing (`tandem run`, `tandem explain`).
pub fn tests_something(path: &Path, case: &CaseFile) -> Result<(), BadInput> {
    if case.runs.is_empty() {
        return Err(BadInput {
            path: path.to_path_buf(),
            line: 1,
            col: 1,
            message: "no `; run:` line: the file tests nothing (`tandem compile` takes a module alone)".into(),
        });
    }
    Ok(())
}

/// Replays one file in `emu` with the default validation; with `bless`, rewrites the
/// expectations of runs whose reference outcome differs from them (stage disagreements
/// are never blessed away).
pub fn replay_file(path: &Path, bless: bool, emu: &mut dyn crate::exec::x86::X86Runner) -> Result<FileReport, BadInput> {
    replay_file_with(path, &ReplayOptions { bless, ..ReplayOptions::default() }, emu)
}

/// Replays one file in `emu` as `options` say.
pub fn replay_file_with(path: &Path, options: &ReplayOptions, emu: &mut dyn crate::exec::x86::X86Runner) -> Result<FileReport, BadInput> {
    let bless = options.bless;
    let (mut case, src) = load_text(path)?;
    tests_something(path, &case)?;
    // Each function's runs are checked together, so its passes and compilation run once.
    let checked = check_case(&case, emu).map_err(|e| BadInput {
        path: path.to_path_buf(),
        line: case.runs[e.run].line,
        col: 1,
        message: e.message,
    })?;
    let mut runs = vec![];
    let mut actuals = vec![];
    for (r, c) in case.runs.iter().zip(checked) {
        let f = case.module.function(&r.entry).expect("checked by load");
        let mismatches = r.check(f, &c.reference);
        actuals.push(Some(Run::expectation_of(f, &c.reference)));
        runs.push(RunReport {
            line: r.line,
            title: title(r),
            mismatches,
            problems: c.problems,
            limits: c.limits,
            infidelities: c.infidelities,
        });
    }
    let mut blessed = false;
    if bless && runs.iter().any(|r| !r.mismatches.is_empty()) {
        case.bless(&actuals);
        std::fs::write(path, case.print()).map_err(|e| BadInput {
            path: path.to_path_buf(),
            line: 0,
            col: 0,
            message: format!("cannot write: {e}"),
        })?;
        blessed = true;
    }
    let (validation, smt) = match &options.verify {
        None => (Validation::Off, vec![]),
        Some(_) if generated(&src) && !options.verify_generated => (Validation::Generated, vec![]),
        Some(o) => (Validation::Validated, validate_case(&case, o)),
    };
    Ok(FileReport { path: path.to_path_buf(), runs, blessed, smt, validation })
}

fn title(r: &Run) -> String {
    let args: Vec<String> = r.args.iter().map(|a| a.to_string()).collect();
    format!("%{}({})", r.entry, args.join(", "))
}

/// The `.tir` files named by `paths`: files as given, folders searched recursively, in
/// sorted order.
pub fn collect_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, BadInput> {
    let mut out = vec![];
    for p in paths {
        if p.is_dir() {
            let before = out.len();
            let mut stack = vec![p.clone()];
            while let Some(d) = stack.pop() {
                let rd = std::fs::read_dir(&d).map_err(|e| BadInput {
                    path: d.clone(),
                    line: 0,
                    col: 0,
                    message: format!("cannot read folder: {e}"),
                })?;
                for entry in rd.flatten() {
                    let q = entry.path();
                    if q.is_dir() {
                        stack.push(q);
                    } else if q.extension().is_some_and(|x| x == "tir") {
                        out.push(q);
                    }
                }
            }
            if out.len() == before {
                return Err(BadInput { path: p.clone(), line: 0, col: 0, message: "no `.tir` file in this folder".into() });
            }
        } else if p.exists() {
            out.push(p.clone());
        } else {
            return Err(BadInput { path: p.clone(), line: 0, col: 0, message: "no such file or folder".into() });
        }
    }
    out.sort();
    Ok(out)
}
