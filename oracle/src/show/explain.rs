//! One page per finding (`tandem explain`): what a person needs to see the bug at a
//! glance. The finding file is re-checked ([`check::check_case`]) rather than its `;`
//! comments parsed, so the page shows what the harness finds *now*; the comments are
//! shown as the finding's claim, and a page whose finding no longer reproduces says so.
//!
//! Steps, each a function: [`gather`] loads the case (the `.reduced.tir` beside it when
//! there is one), [`locate`] finds the first problem of any run, [`ir_change`] replays the
//! guilty pass through the checks' own driver (so a bug a harness test planted is seen
//! too) and keeps the IR before and after it, [`outcomes`] runs the input on both sides
//! (the interpreter, or the x86 code in the emulator with the instruction that faulted),
//! [`validator`] asks Z3 again for a finding of the validator, and [`render`] writes the
//! self-contained page: the case, the claim, the input, both outcomes with the
//! differences marked, the IR before and after side by side with changed lines marked,
//! the CFGs as SVG pictures, the x86 listing, and the commands that replay, reduce and
//! compile it.

use super::dot;
use super::html::{esc, page, pre, table};
use super::linediff::{self, Change};
use crate::campaign::replay::{self, BadInput};
use crate::cases::casefile::CaseFile;
use crate::exec::emu::{self, EmuError, Emulator};
use crate::exec::interp::{self, RunInput};
use crate::exec::outcome::{Invalid, Outcome};
use crate::judge::check::{self, Problem};
use crate::judge::passcheck;
use crate::smt;
use std::path::{Path, PathBuf};
use tandem_core::ir::Function;
use tandem_core::passes::{PassError, PassManager, Pipeline};

/// Everything a page shows, gathered before anything is written.
pub struct Evidence {
    /// The finding file as given.
    pub path: PathBuf,
    /// The file whose case is shown and checked: the reduced case beside the finding when
    /// there is one, else the finding itself.
    pub shown: PathBuf,
    /// The shown file's text.
    pub text: String,
    /// The `;` lines at the top of the finding file: what the harness said when it wrote it.
    pub claim: Vec<String>,
    /// The first problem the check finds now, if any.
    pub located: Option<Located>,
    /// The validator's counterexample or encoder disagreement, for a validator finding.
    pub z3: Option<Z3>,
    /// The IR before and after the guilty pass (or the function as written and the
    /// backend's input, for a backend finding).
    pub ir: Option<IrChange>,
    /// The input's outcome on both sides.
    pub outcomes: Option<Outcomes>,
    /// The x86 code of a backend finding.
    pub x86: Option<X86>,
}

/// A problem of one run.
pub struct Located {
    /// Index of the run in the case.
    pub run: usize,
    pub function: Function,
    pub input: RunInput,
    pub problem: Problem,
    pub signature: String,
}

/// The validator's answer that makes a finding.
pub struct Z3 {
    pub function: Function,
    pub pass: String,
    pub answer: smt::Answer,
}

/// The IR on both sides of the guilty step.
pub struct IrChange {
    /// What the step is: `pass cprop`, or `the backend's input`.
    pub step: String,
    pub before_title: String,
    pub before: Function,
    pub after_title: String,
    /// The IR after the step, or why there is none (a pass that panicked).
    pub after: Result<Function, String>,
    /// The verifier's errors on the IR after the step.
    pub errors: Vec<String>,
}

/// One input's outcome on both sides.
pub struct Outcomes {
    pub left_title: String,
    pub left: Result<Outcome, Invalid>,
    pub right_title: String,
    /// The other side's outcome, or what happened instead (an emulator finding, a pass
    /// that did not produce IR).
    pub right: Result<Result<Outcome, Invalid>, String>,
    /// The callframe variables' names, in slot order.
    pub cf_names: Vec<String>,
}

/// The x86 code of a backend stage.
pub struct X86 {
    pub stage: String,
    /// The listing (`tandem compile --emit asm`), or why there is none.
    pub listing: Result<String, String>,
    /// Where the emulator stopped on a fault or a timeout.
    pub pc: Option<u32>,
    /// The emulator's finding, as the harness prints it.
    pub finding: Option<String>,
}

/// Why no page could be made.
#[derive(Debug)]
pub enum ExplainError {
    /// The finding file does not load (its location inside).
    BadInput(BadInput),
    /// Its runs cannot be checked (inputs that do not fit, an emulator that fails).
    Check(String),
}

impl std::fmt::Display for ExplainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExplainError::BadInput(b) => b.fmt(f),
            ExplainError::Check(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ExplainError {}

/// Loads the finding at `path` and gathers the evidence of its first problem.
pub fn gather(path: &Path, emu: &mut Emulator) -> Result<Evidence, ExplainError> {
    let original = std::fs::read_to_string(path).map_err(|e| {
        ExplainError::BadInput(BadInput { path: path.to_path_buf(), line: 0, col: 0, message: format!("cannot read: {e}") })
    })?;
    let claim: Vec<String> = original.lines().take_while(|l| l.starts_with(';') && !is_directive(l)).map(str::to_string).collect();
    let reduced = path.with_extension("reduced.tir");
    let is_reduced = path.to_string_lossy().ends_with(".reduced.tir");
    // A reduced case that does not load is not shown; the finding itself is.
    let (shown, case) = match (!is_reduced && reduced.is_file()).then(|| replay::load(&reduced)) {
        Some(Ok(c)) => (reduced, c),
        _ => (path.to_path_buf(), replay::load(path).map_err(ExplainError::BadInput)?),
    };
    replay::tests_something(&shown, &case).map_err(ExplainError::BadInput)?;
    let text = std::fs::read_to_string(&shown).unwrap_or_default();
    let located = locate(&case, emu)?;
    let mentions_validator = claim.iter().any(|l| l.contains("validator") || l.contains("z3 pass"));
    let z3 = if mentions_validator || located.as_ref().is_some_and(|l| l.problem.stage.starts_with("z3")) { validator(&case) } else { None };
    let ir = ir_change(located.as_ref(), z3.as_ref());
    let (outcomes, x86) = outcomes(located.as_ref(), z3.as_ref(), ir.as_ref(), emu)?;
    Ok(Evidence { path: path.to_path_buf(), shown, text, claim, located, z3, ir, outcomes, x86 })
}

/// Whether a `;` line is a directive of the case format rather than a comment.
fn is_directive(line: &str) -> bool {
    let l = line.trim_start_matches(';').trim_start();
    ["run:", "expect:", "cf:", "cf-out:", "heap:", "heap-out:", "trace:", "fuel:"].iter().any(|d| l.starts_with(d))
}

/// The first problem of the first run that has one.
pub fn locate(case: &CaseFile, emu: &mut Emulator) -> Result<Option<Located>, ExplainError> {
    let checks = check::check_case(case, emu).map_err(|e| ExplainError::Check(e.to_string()))?;
    for (k, c) in checks.into_iter().enumerate() {
        let Some(problem) = c.problems.into_iter().next() else { continue };
        let run = &case.runs[k];
        let function = case.module.function(&run.entry).expect("checked by load").clone();
        let input = run.input(&function).map_err(ExplainError::Check)?;
        let signature = crate::campaign::signature(&problem);
        return Ok(Some(Located { run: k, function, input, problem, signature }));
    }
    Ok(None)
}

/// Validates every pass of every function again (the campaign's bound and budget) and
/// returns the first counterexample or encoder disagreement.
pub fn validator(case: &CaseFile) -> Option<Z3> {
    for f in &case.module.functions {
        let Some(pipeline) = passcheck::replay_pipeline(f) else { continue };
        let opts = crate::campaign::VALIDATOR_OPTIONS;
        let Ok(Ok(answers)) = check::caught(|| smt::validate_pipeline(f, &pipeline, &opts)) else { continue };
        for (pass, answer, _) in answers {
            if matches!(answer, smt::Answer::Counterexample(_) | smt::Answer::EncoderDisagreement(_)) {
                return Some(Z3 { function: f.clone(), pass, answer });
            }
        }
    }
    None
}

/// The pass a problem names (`after pass `X``), if any.
fn named_pass(p: &Problem) -> Option<String> {
    let text = p.lines.join("\n");
    let rest = text.split("after pass `").nth(1)?;
    Some(rest.split('`').next()?.to_string())
}

/// The function after each pass of `pipeline` (through the checks' driver), stopping at
/// the first pass that fails: then also its name, the IR it left (for a verifier error)
/// or why there is none (a panic), and the error.
fn replay_passes(f: &Function, pipeline: &Pipeline) -> (Vec<(String, Function)>, Option<(String, Result<Function, String>, Vec<String>)>) {
    let mut g = f.clone();
    let mut done: Vec<(String, Function)> = vec![];
    let result = check::caught(|| {
        check::drive(&PassManager { verify: true }, pipeline, &mut g, &mut |pass, after, _| done.push((pass.to_string(), after.clone())))
    });
    let failed = pipeline.passes.get(done.len()).map_or_else(|| "?".to_string(), |p| p.name.to_string());
    let failure = match result {
        Ok(Ok(_)) => None,
        Ok(Err(PassError::Verify { pass, errors, .. })) => Some((pass.to_string(), Ok(g), errors)),
        Ok(Err(e)) => Some((failed, Err(e.to_string()), vec![])),
        Err(msg) => Some((failed, Err(format!("the pass panicked: {msg}")), vec![])),
    };
    (done, failure)
}

/// The IR on both sides of the guilty step of the located problem (or of the validator's
/// pass when the check itself finds nothing).
pub fn ir_change(located: Option<&Located>, z3: Option<&Z3>) -> Option<IrChange> {
    let (f, stage, pass) = match (located, z3) {
        (Some(l), _) => (&l.function, l.problem.stage.as_str(), named_pass(&l.problem)),
        (None, Some(z)) => (&z.function, "IR passes", Some(z.pass.clone())),
        (None, None) => return None,
    };
    if stage.starts_with("x86") {
        let g = if stage == "x86" {
            check::unoptimized_input(f).map(check::BackendInput::into_function)
        } else {
            let pipeline = passcheck::replay_pipeline(f)?;
            match replay_passes(f, &pipeline) {
                (done, None) => done.last().map_or_else(|| Ok(f.clone()), |(_, g)| Ok(g.clone())),
                (_, Some((pass, _, _))) => Err(format!("pass `{pass}` failed")),
            }
        };
        return Some(IrChange {
            step: "the backend's input".into(),
            before_title: "as written".into(),
            before: f.clone(),
            after_title: format!("what `{stage}` compiles"),
            after: g,
            errors: vec![],
        });
    }
    let pipeline = if stage.ends_with("on HIR") { Pipeline::parse("cprop").ok()? } else { passcheck::replay_pipeline(f)? };
    let (done, failure) = replay_passes(f, &pipeline);
    let at = |name: &str| done.iter().position(|(p, _)| p == name);
    let before_of = |k: usize| if k == 0 { (f.clone(), "as written".to_string()) } else { (done[k - 1].1.clone(), format!("after `{}`", done[k - 1].0)) };
    let (k, after, errors, name) = match (pass.as_deref().and_then(at), failure) {
        (Some(k), _) => (k, Ok(done[k].1.clone()), vec![], done[k].0.clone()),
        (None, Some((name, after, errors))) => (done.len(), after, errors, name),
        (None, None) => return None,
    };
    let (before, before_title) = before_of(k);
    Some(IrChange { step: format!("pass {name}"), before_title: format!("before `{name}` ({before_title})"), before, after_title: format!("after `{name}`"), after, errors })
}

/// The input's outcome on both sides; for a backend stage, also its x86 code.
pub fn outcomes(located: Option<&Located>, z3: Option<&Z3>, ir: Option<&IrChange>, emu: &mut Emulator) -> Result<(Option<Outcomes>, Option<X86>), ExplainError> {
    let Some(l) = located else {
        // A validator finding the check does not see: the model's input, the interpreter
        // before and after the pass.
        let Some(z) = z3 else { return Ok((None, None)) };
        let (input, before, after) = match &z.answer {
            smt::Answer::Counterexample(c) => (&c.input, &c.before, &c.after),
            smt::Answer::EncoderDisagreement(d) => (&d.input, &d.before, &d.after),
            _ => return Ok((None, None)),
        };
        let _ = input;
        return Ok((
            Some(Outcomes {
                left_title: format!("before `{}`", z.pass),
                left: before.clone(),
                right_title: format!("after `{}`", z.pass),
                right: Ok(after.clone()),
                cf_names: cf_names(&z.function),
            }),
            None,
        ));
    };
    let f = &l.function;
    let (reference, fuel) = interp::run_measured(f, &l.input).map_err(|e| ExplainError::Check(e.to_string()))?;
    let stage = l.problem.stage.as_str();
    let left_title = "reference interpreter".to_string();
    let cf_names = cf_names(f);
    if !stage.starts_with("x86") {
        let right = match ir.map(|c| (&c.after, c.errors.is_empty())) {
            Some((Ok(g), true)) => interp::run(g, &l.input).map_err(|e| e.to_string()),
            Some((Ok(_), false)) => Err("the IR after the pass does not verify, so it is not run".into()),
            Some((Err(why), _)) => Err(why.clone()),
            None => Err("no IR after the pass".into()),
        };
        let right_title = ir.map_or("after the passes".into(), |c| format!("interpreter {}", c.after_title));
        return Ok((Some(Outcomes { left_title, left: reference, right_title, right, cf_names }), None));
    }
    let Some(Ok(g)) = ir.map(|c| &c.after) else {
        let x86 = X86 { stage: stage.into(), listing: Err("the passes before the backend failed".into()), pc: None, finding: None };
        return Ok((None, Some(x86)));
    };
    let code = match check::caught(|| tandem_core::backend::compile_validated(g)) {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            let x86 = X86 { stage: stage.into(), listing: Err(format!("the backend failed: {e}")), pc: None, finding: None };
            let right = Err(format!("no code: the backend failed: {e}"));
            return Ok((Some(Outcomes { left_title, left: reference, right_title: stage.into(), right, cf_names }), Some(x86)));
        }
        Err(msg) => {
            let x86 = X86 { stage: stage.into(), listing: Err(format!("the backend panicked: {msg}")), pc: None, finding: None };
            return Ok((None, Some(x86)));
        }
    };
    let listing = Ok(tandem_core::backend::disassemble(&code));
    let run = emu.run_with_budget(&code, g, &l.input, emu::budget_for(fuel, &code.shape));
    let (right, pc, finding) = match run {
        Ok(Ok(o)) => (Ok(Ok(o)), None, None),
        Ok(Err(found)) => {
            let pc = match &found {
                emu::Finding::Fault { pc, .. } => Some(*pc),
                emu::Finding::Timeout { registers, .. } => Some(registers.eip),
                _ => None,
            };
            (Err(first_line(&found.to_string())), pc, Some(found.to_string()))
        }
        Err(EmuError::Limit(limit)) => (Err(format!("harness limit, not compared: {limit}")), None, None),
        Err(e) => return Err(ExplainError::Check(e.to_string())),
    };
    let x86 = X86 { stage: stage.into(), listing, pc, finding };
    Ok((Some(Outcomes { left_title, left: reference, right_title: format!("{stage} (emulator)"), right, cf_names }), Some(x86)))
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

fn cf_names(f: &Function) -> Vec<String> {
    f.cfvars.values().map(|v| format!("@{}", v.name)).collect()
}

/// The page of `e`.
pub fn render(e: &Evidence) -> String {
    let title = match (&e.located, &e.z3) {
        (Some(l), _) if !validator_first(e) => format!("Finding: {}", l.signature),
        (_, Some(z)) => format!("Finding: z3 pass {}: validator {}", z.pass, kind_word(&z.answer)),
        (Some(l), None) => format!("Finding: {}", l.signature),
        (None, None) => format!("Finding {} (does not reproduce)", file_name(&e.path)),
    };
    let mut body = String::new();
    body += &format!("<p class=\"small\">Finding file <code>{}</code>", esc(&e.path.display().to_string()));
    if e.shown != e.path {
        body += &format!("; shown and checked: its reduced case <code>{}</code>", esc(&e.shown.display().to_string()));
    }
    body += "</p>\n";
    body += &status(e);
    if !e.claim.is_empty() {
        body += "<h2>What the harness wrote when it found it</h2>\n";
        body += &pre(&e.claim.join("\n"));
    }
    if let Some(l) = &e.located {
        body += &format!("<h2>What the check finds now (run {}, stage <code>{}</code>)</h2>\n", l.run + 1, esc(&l.problem.stage));
        body += &pre(&l.problem.lines.join("\n"));
    }
    if let Some(z) = &e.z3 {
        body += &format!("<h2>The Z3 validator on pass <code>{}</code> of <code>%{}</code></h2>\n", esc(&z.pass), esc(&z.function.name));
        body += &pre(&z.answer.to_string());
    }
    body += &input_section(e);
    if let Some(o) = &e.outcomes {
        body += &outcome_section(o);
    }
    if let Some(c) = &e.ir {
        body += &ir_section(c);
        body += &cfg_section(c);
    }
    if let Some(x) = &e.x86 {
        body += &x86_section(x);
    }
    body += "<h2>The case</h2>\n";
    body += &pre(&e.text);
    body += &commands_section(e);
    page(&title, &body)
}

/// Whether the finding's own first problem is the validator's (a campaign lists it
/// first), so that the page is titled by it even when the stage checks see the bug too.
fn validator_first(e: &Evidence) -> bool {
    e.z3.is_some() && e.claim.first().is_some_and(|l| l.contains("stage `z3 pass") || l.contains("Z3 validator"))
}

fn kind_word(a: &smt::Answer) -> &'static str {
    match a {
        smt::Answer::Counterexample(_) => "counterexample",
        smt::Answer::EncoderDisagreement(_) => "encoder disagreement",
        _ => "answer",
    }
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// One line that says whether the finding reproduces.
fn status(e: &Evidence) -> String {
    match (&e.located, &e.z3) {
        (Some(l), Some(z)) if validator_first(e) => format!(
            "<p class=\"bad\">Reproduces: Z3 finds a {} for pass {}, and stage {} disagrees with the reference interpreter on run {} ({}); the input and outcomes below are that run's.</p>\n",
            kind_word(&z.answer),
            esc(&z.pass),
            esc(&l.problem.stage),
            l.run + 1,
            esc(&l.signature)
        ),
        (Some(l), _) => format!("<p class=\"bad\">Reproduces: stage {} disagrees with the reference interpreter on run {} ({}).</p>\n", esc(&l.problem.stage), l.run + 1, esc(&l.signature)),
        (None, Some(z)) => format!(
            "<p class=\"bad\">Reproduces in the validator only: Z3 finds a {} for pass {}; every stage agrees on the file's runs.</p>\n",
            kind_word(&z.answer),
            esc(&z.pass)
        ),
        (None, None) => "<p class=\"good\">Does not reproduce: every stage agrees with the reference interpreter on every run of this file (and, for a finding of the validator, Z3 finds no counterexample now): the bug may be fixed, or the finding needs a bug planted by a test.</p>\n".into(),
    }
}

/// The run's input: arguments by parameter name, heap rows, callframe.
fn input_section(e: &Evidence) -> String {
    let (f, input) = match (&e.located, &e.z3) {
        (Some(l), _) => (&l.function, &l.input),
        (None, Some(z)) => match &z.answer {
            smt::Answer::Counterexample(c) => (&z.function, &c.input),
            smt::Answer::EncoderDisagreement(d) => (&z.function, &d.input),
            _ => return String::new(),
        },
        (None, None) => return String::new(),
    };
    let mut out = format!("<h2>The input (function <code>%{}</code>)</h2>\n", esc(&f.name));
    let rows: Vec<Vec<String>> = f
        .params
        .iter()
        .zip(&input.args)
        .map(|(&p, v)| vec![format!("%{}", esc(&f.locals[p].name)), esc(&v.to_string())])
        .collect();
    if rows.is_empty() {
        out += "<p>No arguments.</p>\n";
    } else {
        out += &table(&["argument", "value"], &rows, &[]);
    }
    if !input.heap.is_empty() {
        let rows: Vec<Vec<String>> = input.heap.iter().map(|(a, b)| vec![format!("{a:#010x}"), esc(&hex(b))]).collect();
        out += &table(&["heap address", "bytes"], &rows, &[]);
    }
    if !input.callframe.is_empty() {
        let rows: Vec<Vec<String>> = input.callframe.iter().map(|(v, x)| vec![format!("@{}", esc(&f.cfvars[*v].name)), esc(&x.to_string())]).collect();
        out += &table(&["callframe variable", "value"], &rows, &[]);
    }
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" ")
}

/// The rows of two outcomes: the end, the trace event by event, the heap rows that are
/// non-zero on either side, each callframe variable.
fn outcome_rows(a: &Outcome, b: &Outcome, cf_names: &[String]) -> Vec<(String, String, String)> {
    let mut rows = vec![("end".to_string(), a.end.to_string(), b.end.to_string())];
    for i in 0..a.trace.len().max(b.trace.len()) {
        let cell = |o: &Outcome| o.trace.get(i).map_or("(none)".to_string(), |e| e.to_string());
        rows.push((format!("trace {i}"), cell(a), cell(b)));
    }
    for x in a.heap_rows_of_either(b) {
        let cell = |o: &Outcome| hex(o.heap_row(x));
        rows.push((format!("heap {x:#010x}"), cell(a), cell(b)));
    }
    for k in 0..a.callframe.len().max(b.callframe.len()) {
        let cell = |o: &Outcome| o.callframe.get(k).map_or("(none)".to_string(), |v| v.to_string());
        let name = cf_names.get(k).cloned().unwrap_or_else(|| format!("slot {k}"));
        rows.push((name, cell(a), cell(b)));
    }
    rows
}

fn outcome_text(r: &Result<Outcome, Invalid>) -> Result<&Outcome, String> {
    r.as_ref().map_err(|i| format!("invalid run: {i}"))
}

/// Both outcomes in one table, the differing rows marked (Alive2's counterexample
/// printout: the input, then source and target values).
fn outcome_section(o: &Outcomes) -> String {
    let mut out = "<h2>Both outcomes (differences marked)</h2>\n".to_string();
    let head = ["", "≠", o.left_title.as_str(), o.right_title.as_str()];
    let left = outcome_text(&o.left);
    let right = match &o.right {
        Ok(r) => outcome_text(r),
        Err(why) => Err(why.clone()),
    };
    let rows: Vec<(String, String, String)> = match (left, right) {
        (Ok(a), Ok(b)) => outcome_rows(a, b, &o.cf_names),
        (a, b) => {
            let cell = |r: Result<&Outcome, String>| r.map_or_else(|w| w, |o| o.to_string());
            vec![("outcome".into(), cell(a), cell(b))]
        }
    };
    let marked: Vec<bool> = rows.iter().map(|(_, a, b)| a != b).collect();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .zip(&marked)
        .map(|((k, a, b), m)| vec![esc(k), if *m { "<span class=\"mark\">≠</span>".into() } else { String::new() }, pre_cell(a), pre_cell(b)])
        .collect();
    out += &table(&head, &cells, &marked);
    let n = marked.iter().filter(|m| **m).count();
    out += &format!("<p class=\"small\">{n} of {} rows differ.</p>\n", rows.len());
    out
}

fn pre_cell(s: &str) -> String {
    format!("<span class=\"line\">{}</span>", esc(s))
}

/// The IR before and after, side by side, lines only in one side marked.
fn ir_section(c: &IrChange) -> String {
    let mut out = format!("<h2>The IR around {} (changed lines marked)</h2>\n", esc(&c.step));
    let before = c.before.to_string();
    let after = match &c.after {
        Ok(g) => g.to_string(),
        Err(why) => {
            out += &format!("<p class=\"bad\">No IR after the step: {}</p>\n", esc(why));
            String::new()
        }
    };
    let (a_lines, b_lines): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
    let (a, b) = linediff::diff(&a_lines, &b_lines);
    let column = |title: &str, lines: &[(&str, Change)]| {
        let mut s = format!("<div><h3>{}</h3><pre>", esc(title));
        for (l, ch) in lines {
            let class = match ch {
                Change::Same => "line",
                Change::Deleted => "line del",
                Change::Inserted => "line ins",
            };
            let sign = match ch {
                Change::Same => ' ',
                Change::Deleted => '-',
                Change::Inserted => '+',
            };
            s += &format!("<span class=\"{class}\">{sign} {}</span>", esc(l));
        }
        s + "</pre></div>"
    };
    out += "<div class=\"cols\">";
    out += &column(&c.before_title, &a);
    if c.after.is_ok() {
        out += &column(&c.after_title, &b);
    }
    out += "</div>\n";
    if !c.errors.is_empty() {
        out += "<p class=\"bad\">The verifier rejects the IR after the step:</p>\n";
        out += &pre(&c.errors.join("\n"));
    }
    out
}

/// The CFGs before and after as pictures.
fn cfg_section(c: &IrChange) -> String {
    let mut out = "<h2>Control-flow graphs</h2>\n<div class=\"cols\">".to_string();
    let mut picture = |title: &str, f: &Function| {
        let svg = match dot::to_svg(&dot::function_dot(f)) {
            Ok(svg) => svg,
            Err(e) => format!("<p class=\"note\">{}</p>", esc(&e.to_string())),
        };
        out += &format!("<div class=\"pic\"><h3>{}</h3>{svg}</div>", esc(title));
    };
    picture(&c.before_title, &c.before);
    if let Ok(g) = &c.after {
        picture(&c.after_title, g);
    }
    out + "</div>\n"
}

/// The x86 listing with the instruction where the emulator stopped marked.
fn x86_section(x: &X86) -> String {
    let mut out = format!("<h2>The x86 code of stage <code>{}</code></h2>\n", esc(&x.stage));
    if let Some(f) = &x.finding {
        out += "<p class=\"bad\">The emulator's finding:</p>\n";
        out += &pre(f);
    }
    match &x.listing {
        Err(why) => out += &format!("<p class=\"bad\">{}</p>\n", esc(why)),
        Ok(listing) => {
            let hit = x.pc.and_then(|pc| marked_line(listing, pc));
            match (x.pc, hit) {
                (Some(pc), Some(_)) => out += &format!("<p>The emulator stopped at <code>{pc:#010x}</code> (marked).</p>\n"),
                (Some(pc), None) => out += &format!("<p>The emulator stopped at <code>{pc:#010x}</code>, outside the listing.</p>\n"),
                (None, _) => out += "<p class=\"note\">The code ran to its end; the outcomes above show where it went wrong.</p>\n",
            }
            out += "<pre>";
            for (k, l) in listing.lines().enumerate() {
                let class = if Some(k) == hit { "line hit" } else { "line" };
                let mark = if Some(k) == hit { "=&gt; " } else { "   " };
                out += &format!("<span class=\"{class}\">{mark}{}</span>", esc(l));
            }
            out += "</pre>\n";
        }
    }
    out
}

/// The listing line of the instruction that contains `pc`: the last line whose address
/// is at most `pc`, when `pc` is before the next one.
fn marked_line(listing: &str, pc: u32) -> Option<usize> {
    let addrs: Vec<(usize, u32)> = listing
        .lines()
        .enumerate()
        .filter_map(|(k, l)| Some((k, u32::from_str_radix(l.split_whitespace().next()?, 16).ok()?)))
        .collect();
    let i = addrs.iter().rposition(|&(_, a)| a <= pc)?;
    // Past the last instruction, only its own bytes (at most 15) count.
    let within = addrs.get(i + 1).map_or(pc < addrs[i].1.saturating_add(15), |&(_, next)| pc < next);
    within.then_some(addrs[i].0)
}

/// The exact commands to replay, reduce, compile and explain the finding.
fn commands_section(e: &Evidence) -> String {
    let q = |p: &Path| shell_quote(&p.display().to_string());
    let shown = q(&e.shown);
    let mut lines = vec![format!("tandem run {shown}")];
    match &e.located {
        Some(l) => lines.push(format!("tandem reduce {} --signature {} -o reduced.tir", q(&e.path), shell_quote(&l.signature))),
        None => lines.push(format!("tandem reduce {} -o reduced.tir", q(&e.path))),
    }
    if let Some(c) = &e.ir {
        if let Some(pass) = c.step.strip_prefix("pass ") {
            // The passes the check ran (`cprop` alone for the stage on HIR), in the form
            // the IR has after the guilty pass.
            let on_hir = e.located.as_ref().is_some_and(|l| l.problem.stage.ends_with("on HIR"));
            let pipeline = if on_hir { "cprop".to_string() } else { tandem_core::passes::check_pipeline().to_string() };
            let form = match &c.after {
                Ok(g) if g.layout.iter().any(|&b| !g.blocks[b].phis.is_empty()) => "ssa",
                _ => "hir",
            };
            lines.push(format!("tandem compile {shown} --pipeline {pipeline} --emit {form} --after {pass}"));
            lines.push(format!("tandem compile {shown} --pipeline {pipeline} --emit dot --after {pass} | dot -Tsvg > cfg.svg"));
        }
    }
    lines.push(format!("tandem compile {shown} --emit asm"));
    if let Some(z) = &e.z3 {
        lines.push(format!("tandem verify {shown}   # the validator on every pass; it found: {} on `{}`", kind_word(&z.answer), z.pass));
    }
    lines.push(format!("tandem explain {} -o report.html", q(&e.path)));
    format!("<h2>Commands</h2>\n{}", pre(&lines.join("\n")))
}

/// `s` quoted for a POSIX shell when it holds anything but safe characters.
fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=,:@%+".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Gathers and renders the page of the finding at `path`.
pub fn explain(path: &Path, emu: &mut Emulator) -> Result<String, ExplainError> {
    Ok(render(&gather(path, emu)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_line_holding_pc_is_found() {
        let listing = "b0:\n00400000  55                   push ebp\n00400001  8b ec                mov ebp,esp\nb1:\n00400003  c3                   ret\n";
        assert_eq!(marked_line(listing, 0x0040_0000), Some(1));
        assert_eq!(marked_line(listing, 0x0040_0002), Some(2));
        assert_eq!(marked_line(listing, 0x0040_0003), Some(4));
        assert_eq!(marked_line(listing, 0x003f_ffff), None);
    }

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_quote("a/b-c.tir"), "a/b-c.tir");
        assert_eq!(shell_quote("pass dce: end"), "'pass dce: end'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }

    #[test]
    fn comment_lines_are_told_from_directives() {
        assert!(is_directive("; run: %f(1)"));
        assert!(is_directive("; expect: return 1"));
        assert!(!is_directive("; stage `x86` disagrees"));
    }
}
