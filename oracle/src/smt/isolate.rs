//! Validation in a child process with a hard memory cap and a hard wall-clock limit
//! (issue 23). One validation of a (function, pass) inside Z3 can take gigabytes and
//! minutes whatever its resource budget (`rlimit` counts the solver's work, not its memory
//! or the time spent outside it: default seed 419 took 45 s and 3.3 GB in one
//! `Z3_solver_check`), and a process gives little of that memory back. So a campaign and
//! `tandem run` validate each function in a child: the same `tandem` binary, run as
//! `tandem validate-child` (a hidden subcommand), reads a [`Request`] as JSON on stdin and
//! writes one answer per pass as a JSON line on stdout, as soon as it has it. The parent
//! watches the child's resident set (`VmRSS` in `/proc/PID/status`) and the time since
//! its last answer, and kills it at [`Limits::memory`] or [`Limits::time`]: that pass's
//! answer is [`Unknown::MemoryLimit`] or [`Unknown::TimeLimit`] (an unknown, never a pass
//! and never a finding), and a new child validates the passes after it. All the child's
//! memory goes back to the system when it exits, so the campaign's own resident set does
//! not depend on what the validator did. A child that answered a whole request is kept by
//! the thread that started it for that thread's next request ([`Warm`]): it gives its free
//! memory back between requests when it holds more than [`KEEP_RESIDENT`], and is replaced
//! when it holds more than half its memory cap.
//!
//! Invariants:
//! * One semantics, one validator: the child calls [`super::validate`] as the in-process
//!   path does; the two paths differ only in the limits.
//! * The parent trusts nothing of the child but its verdict words: it runs the pipeline
//!   itself (on the function parsed back from the text it sends, so both sides drive the
//!   same function), and a counterexample or encoder disagreement is the parent's own
//!   replay in the interpreter of the model's inputs the child found ([`super::replay`]),
//!   so a finding is reported only when the parent's interpreter shows it.
//! * A child that panics is a panic of the validation in the parent too (a pass or a
//!   validator bug, as in-process, which the callers' `caught` handles); a child killed by
//!   something other than its limits is a panic with the reason, never an answer.
//! * The child runs in its own process group (a terminal's Ctrl-C reaches only the
//!   parent, which stops the child through `stop`) and dies with the parent thread that
//!   started it (`PR_SET_PDEATHSIG`).
//!
//! Which path runs: [`validate_passes_bounded`] uses a child when the process has named
//! the program to run ([`use_child_program`]: `tandem`'s `main` does, with its own path)
//! and no harness test planted a bug (a planted bug is a function pointer in this
//! process, which a child cannot see); otherwise it validates in-process. Library users
//! and unit tests are in-process unless they ask.

use super::{Answer, Options, Unknown};
use crate::exec::interp::RunInput;
use crate::exec::outcome::Value;
use cranelift_entity::EntityRef;
use serde_json::{json, Value as Json};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};
use tandem_core::ir::{CfVar, Function};
use tandem_core::passes::{Form, PassError, PassManager, Pipeline};
use tandem_core::types::Type;

/// The hidden subcommand a child runs.
pub const CHILD_COMMAND: &str = "validate-child";

/// The hard limits of one validation in a child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most resident bytes the child may hold (`VmRSS`, sampled every [`POLL`]).
    pub memory: u64,
    /// Most wall-clock time one (function, pass) may take, encoding included.
    pub time: Duration,
}

/// The limits campaigns and `tandem run` use (`--validator-memory` sets another memory
/// cap). Generous against what the validator usually needs (most answers take
/// milliseconds and tens of megabytes), tight against what it can take, so that a
/// campaign's largest process stays under 300 MB (issue 23). Measured on seeds 0–59 of
/// the `mix` profile at 1000‰ (353 answers): children's peaks had a median of about
/// 50 MB and a few up to 483 MB, all of them queries of many seconds; with the cap at
/// 250 MB instead of 1 GB the same seeds gave the same 235 proofs, 2 of 79 bounded
/// answers became `unknown (memory limit)`, and 4 budget unknowns ended sooner as memory
/// unknowns.
pub const LIMITS: Limits = Limits { memory: 250_000_000, time: Duration::from_secs(30) };

/// The limits of `tandem verify`, whose answers must not depend on the machine's speed or
/// load: its budget is the deterministic `rlimit`, so the wall-clock limit is only a last
/// resort against a query that escapes it, and the memory cap is wider (one query at a
/// time, not one per worker).
pub const VERIFY_LIMITS: Limits = Limits { memory: 4_000_000_000, time: Duration::from_secs(3600) };

/// How often the parent samples the child's resident set and clock.
pub const POLL: Duration = Duration::from_millis(10);

static CHILD_PROGRAM: OnceLock<(PathBuf, Limits)> = OnceLock::new();

/// Makes [`validate_passes_bounded`] validate in a child running `program` (the `tandem`
/// binary, which has the [`CHILD_COMMAND`] subcommand) under `limits`, for the rest of the
/// process. Only the first call counts.
pub fn use_child_program(program: PathBuf, limits: Limits) {
    let _ = CHILD_PROGRAM.set((program, limits));
}

/// The program and limits [`use_child_program`] set, if any.
pub fn child_program() -> Option<&'static (PathBuf, Limits)> {
    CHILD_PROGRAM.get()
}

/// The program and limits of a child to validate in, where one validates: a program is
/// named ([`child_program`]) and no harness test planted a bug, which a child cannot see
/// (see the module docs, "Which path runs").
fn validating_child() -> Option<&'static (PathBuf, Limits)> {
    child_program().filter(|_| !crate::judge::check::bug_planted())
}

/// [`super::validate_passes`] with hard limits where the process allows it (see the
/// module docs): in a child under [`child_program`]'s limits, else in-process. `stop` is
/// asked between samples; when it says so the child is killed and the answers so far are
/// returned (the pass under way and those after it are not validated: no answer, which
/// is not a pass either).
pub fn validate_passes_bounded(
    f: &Function,
    pipeline: &Pipeline,
    opts: &Options,
    stop: &dyn Fn() -> bool,
) -> Result<Vec<(String, Answer, Duration, bool)>, PassError> {
    validate_some_passes_bounded(f, pipeline, opts, None, stop)
}

/// [`validate_passes_bounded`], validating only the pass named `only` when given (as
/// [`super::validate_some_passes`]: the passes before it run, unvalidated, and get no
/// entry; a name not in the pipeline gets none either).
pub fn validate_some_passes_bounded(
    f: &Function,
    pipeline: &Pipeline,
    opts: &Options,
    only: Option<&str>,
    stop: &dyn Fn() -> bool,
) -> Result<Vec<(String, Answer, Duration, bool)>, PassError> {
    match validating_child() {
        Some((program, limits)) => {
            let (pipeline, from) = match only {
                None => (pipeline.clone(), 0),
                Some(p) => match pipeline.passes.iter().position(|q| q.name == p) {
                    // The passes after it are not validated: the child need not run them.
                    Some(k) => (Pipeline { passes: pipeline.passes[..=k].to_vec(), start: pipeline.start }, k),
                    None => return Ok(vec![]),
                },
            };
            validate_in_child(program, *limits, f, &pipeline, opts, from, stop)
        }
        _ => super::validate_some_passes(f, pipeline, opts, only),
    }
}

/// [`validate_passes_bounded`] without whether each pass changed the function, as
/// [`super::validate_pipeline`] returns it.
pub fn validate_pipeline_bounded(
    f: &Function,
    pipeline: &Pipeline,
    opts: &Options,
    stop: &dyn Fn() -> bool,
) -> Result<Vec<(String, Answer, Duration)>, PassError> {
    Ok(validate_passes_bounded(f, pipeline, opts, stop)?.into_iter().map(|(p, a, t, _)| (p, a, t)).collect())
}

/// What the parent sends: the function as text, the pipeline, the first pass to validate
/// (the passes before it are run but not validated) and the options.
pub struct Request {
    pub text: String,
    pub start: Form,
    pub passes: Vec<String>,
    pub from: usize,
    pub opts: Options,
}

impl Request {
    fn to_json(&self) -> String {
        let start = match self.start {
            Form::Hir => "hir",
            Form::Ssa => "ssa",
        };
        json!({
            "text": self.text,
            "start": start,
            "passes": self.passes,
            "from": self.from,
            "bound": self.opts.bound,
            "rlimit": self.opts.rlimit,
            "max_nodes": self.opts.max_nodes,
        })
        .to_string()
    }

    fn from_json(s: &str) -> Result<Request, String> {
        let v: Json = serde_json::from_str(s).map_err(|e| format!("the request is not JSON: {e}"))?;
        let str_of = |k: &str| v[k].as_str().ok_or_else(|| format!("the request lacks `{k}`"));
        let num_of = |k: &str| v[k].as_u64().ok_or_else(|| format!("the request lacks `{k}`"));
        let start = match str_of("start")? {
            "hir" => Form::Hir,
            "ssa" => Form::Ssa,
            other => return Err(format!("unknown form `{other}`")),
        };
        let passes = v["passes"]
            .as_array()
            .ok_or("the request lacks `passes`")?
            .iter()
            .map(|p| p.as_str().map(str::to_string).ok_or_else(|| "a pass name is not a string".to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Request {
            text: str_of("text")?.to_string(),
            start,
            passes,
            from: num_of("from")? as usize,
            opts: Options { bound: num_of("bound")? as u32, rlimit: num_of("rlimit")? as u32, max_nodes: num_of("max_nodes")? as usize },
        })
    }
}

/// The function as [`validate_passes_bounded`] validates it: where a child validates,
/// printed and parsed back ([`round_trip`]), else `f` itself. Anything that runs the
/// validator again on the same function (`tandem verify --why`) starts from this, so that
/// it builds the same terms in the same order: Z3's answers depend on the order its terms
/// were made in, and `--why` run on the generator's arenas proved pairs that the child,
/// on the parsed ones, had answered `proved (bound 2)`, and said nothing about them
/// (default seeds 41 and 43's memopt).
pub fn as_validated(f: &Function) -> Function {
    match validating_child() {
        Some(_) => round_trip(f).1,
        None => f.clone(),
    }
}

/// The function as both sides drive it: `f` printed and parsed back, so that the child
/// and the parent run the passes on the same arenas.
fn round_trip(f: &Function) -> (String, Function) {
    let mut text = String::new();
    tandem_core::text::printer::write_module(&mut text, &super::module_of(f)).expect("printing to a string");
    let (m, _) = tandem_core::text::parse_module(&text).expect("a printed module parses back");
    let g = m.functions.into_iter().next().expect("one function");
    (text, g)
}

/// Each pass's name and the function before and after it, as the checks' driver runs it.
pub fn pass_pairs(f: &Function, pipeline: &Pipeline) -> Result<Vec<(String, Function, Function)>, PassError> {
    let mut g = f.clone();
    let mut before = f.clone();
    let mut out = vec![];
    crate::judge::check::drive(&PassManager { verify: true }, pipeline, &mut g, &mut |pass, after, _| {
        out.push((pass.to_string(), before.clone(), after.clone()));
        before = after.clone();
    })?;
    Ok(out)
}

/// The encoder's self-check of one generated seed ([`super::selfcheck::self_check`]) under
/// the same limits as a validation: in a child where [`child_program`] is set (and no
/// bug is planted), else in-process. A child killed at a limit, or stopped, compared
/// nothing: the summary is empty (no difference found, and nothing counted as compared).
pub fn self_check_bounded(seed: u64, profile: crate::gen::Profile, bound: u32, stop: &dyn Fn() -> bool) -> super::selfcheck::Summary {
    let Some((program, limits)) = validating_child() else {
        return super::selfcheck::self_check(seed..=seed, profile, bound);
    };
    let request = json!({ "self_check": { "seed": seed, "profile": profile.name(), "bound": bound } }).to_string();
    let mut summary = None;
    let ended = run_child(program, *limits, &request, stop, &mut |line, _| {
        let v: Json = serde_json::from_str(line).map_err(|e| format!("the self-check child wrote `{line}`: {e}"))?;
        summary = Some(summary_of_json(&v).ok_or_else(|| format!("the self-check child wrote `{line}`"))?);
        Ok(())
    });
    match (ended, summary) {
        (Ended::Done, Some(s)) => s,
        (Ended::Done, None) => panic!("the self-check child ended without its summary"),
        _ => super::selfcheck::Summary::default(),
    }
}

fn summary_json(s: &super::selfcheck::Summary) -> Json {
    json!({
        "compared": s.compared,
        "beyond_bound": s.beyond_bound,
        "fuel_exhausted": s.fuel_exhausted,
        "differences": s.differences.iter().map(|(seed, form, run, why)| json!([seed, form, run, why])).collect::<Vec<_>>(),
    })
}

fn summary_of_json(v: &Json) -> Option<super::selfcheck::Summary> {
    let differences = v["differences"]
        .as_array()?
        .iter()
        .map(|d| Some((d[0].as_u64()?, d[1].as_str()?.to_string(), d[2].as_u64()? as usize, d[3].as_str()?.to_string())))
        .collect::<Option<Vec<_>>>()?;
    Some(super::selfcheck::Summary {
        compared: v["compared"].as_u64()?,
        beyond_bound: v["beyond_bound"].as_u64()?,
        fuel_exhausted: v["fuel_exhausted"].as_u64()?,
        differences,
    })
}

/// How much memory a child keeps between requests without giving its free memory back
/// (`malloc_trim`): each Z3 context the next request makes takes its pages from there.
/// Trimmed after every request, the median `cprop` answer of default seeds 1300–1329
/// took 14 ms instead of 7 ms (a third of the child's time in `Z3_mk_context_rc`, most of
/// it page faults).
pub const KEEP_RESIDENT: u64 = 64_000_000;

/// The child side: serves each request of `requests` (one JSON line each) as [`serve`]
/// does, gives the request's freed memory back where it holds more than
/// [`KEEP_RESIDENT`], then writes [`DONE`], until the parent closes the pipe.
pub fn serve_each(requests: impl BufRead, out: &mut impl Write) -> Result<(), String> {
    for request in requests.lines() {
        let request = request.map_err(|e| format!("cannot read a request: {e}"))?;
        if request.trim().is_empty() {
            continue;
        }
        serve(&request, out)?;
        // Before the done line: the parent reads the resident set then, to keep or retire.
        if crate::measure::memory::resident().is_some_and(|r| r.current > KEEP_RESIDENT) {
            crate::measure::memory::release_free();
        }
        writeln!(out, "{DONE}").and_then(|_| out.flush()).map_err(|e| format!("cannot write an answer: {e}"))?;
    }
    Ok(())
}

/// Answers `request` pass by pass, one JSON line each on `out`, flushed at once so that
/// the parent has every answer before a limit kills the child; or, for a self-check
/// request, its summary as one line.
pub fn serve(request: &str, out: &mut impl Write) -> Result<(), String> {
    if let Ok(v) = serde_json::from_str::<Json>(request) {
        let c = &v["self_check"];
        if c.is_object() {
            let seed = c["seed"].as_u64().ok_or("the self-check lacks `seed`")?;
            let profile = c["profile"].as_str().and_then(crate::gen::Profile::from_name).ok_or("the self-check lacks `profile`")?;
            let bound = c["bound"].as_u64().ok_or("the self-check lacks `bound`")? as u32;
            let s = super::selfcheck::self_check(seed..=seed, profile, bound);
            return writeln!(out, "{}", summary_json(&s)).and_then(|_| out.flush()).map_err(|e| format!("cannot write the summary: {e}"));
        }
    }
    let r = Request::from_json(request)?;
    let (m, _) = tandem_core::text::parse_module(&r.text).map_err(|e| format!("{}:{}: {}", e.line, e.col, e.message))?;
    let f = m.functions.into_iter().next().ok_or("the request holds no function")?;
    let names: Vec<&str> = r.passes.iter().map(String::as_str).collect();
    let pipeline = Pipeline::new_from(r.start, &names).map_err(|e| e.to_string())?;
    let mut g = f.clone();
    let mut before = f;
    let mut index = 0;
    let mut written = Ok(());
    let driven = crate::judge::check::drive(&PassManager { verify: true }, &pipeline, &mut g, &mut |pass, after, _| {
        if index >= r.from && written.is_ok() {
            let t = Instant::now();
            let a = super::validate(&before, after, pass, &r.opts);
            let line = answer_json(index, &a, t.elapsed());
            written = writeln!(out, "{line}").and_then(|_| out.flush());
        }
        index += 1;
        before = after.clone();
    });
    written.map_err(|e| format!("cannot write an answer: {e}"))?;
    driven.map_err(|e| e.to_string())?;
    Ok(())
}

/// One answer as a JSON line: its kind and what the parent needs to rebuild it.
fn answer_json(index: usize, a: &Answer, time: Duration) -> Json {
    let mut v = json!({ "index": index, "kind": a.kind(), "micros": time.as_micros() as u64 });
    match a {
        Answer::ProvedBounded(k) | Answer::Vacuous(k) => v["bound"] = json!(k),
        Answer::Counterexample(c) => v["input"] = input_json(&c.input),
        Answer::EncoderDisagreement(d) => v["input"] = input_json(&d.input),
        Answer::Unknown(u) => v["why"] = json!(unknown_word(*u)),
        Answer::Proved => {}
    }
    v
}

fn unknown_word(u: Unknown) -> &'static str {
    match u {
        Unknown::Budget => "budget",
        Unknown::TooLarge => "too-large",
        Unknown::Mismatch => "mismatch",
        Unknown::MemoryLimit => "memory-limit",
        Unknown::TimeLimit => "time-limit",
    }
}

fn unknown_of_word(w: &str) -> Option<Unknown> {
    [Unknown::Budget, Unknown::TooLarge, Unknown::Mismatch, Unknown::MemoryLimit, Unknown::TimeLimit]
        .into_iter()
        .find(|&u| unknown_word(u) == w)
}

fn value_json(v: Value) -> Json {
    match v {
        Value::I32(x) => json!(["i32", x]),
        Value::I64(x) => json!(["i64", x]),
    }
}

fn value_of_json(v: &Json) -> Option<Value> {
    let x = v[1].as_i64()?;
    match v[0].as_str()? {
        "i32" => Some(Value::new(Type::I32, x)),
        "i64" => Some(Value::new(Type::I64, x)),
        _ => None,
    }
}

fn input_json(i: &RunInput) -> Json {
    json!({
        "args": i.args.iter().map(|&a| value_json(a)).collect::<Vec<_>>(),
        "heap": i.heap.iter().map(|(a, b)| json!([a, b])).collect::<Vec<_>>(),
        "callframe": i.callframe.iter().map(|&(v, x)| json!([v.index(), value_json(x)])).collect::<Vec<_>>(),
        "fuel": i.fuel,
    })
}

fn input_of_json(v: &Json) -> Option<RunInput> {
    let args = v["args"].as_array()?.iter().map(value_of_json).collect::<Option<Vec<_>>>()?;
    let heap = v["heap"]
        .as_array()?
        .iter()
        .map(|row| {
            let bytes = row[1].as_array()?.iter().map(|b| b.as_u64().map(|b| b as u8)).collect::<Option<Vec<_>>>()?;
            Some((row[0].as_u64()? as u32, bytes))
        })
        .collect::<Option<Vec<_>>>()?;
    let callframe = v["callframe"]
        .as_array()?
        .iter()
        .map(|c| Some((CfVar::new(c[0].as_u64()? as usize), value_of_json(&c[1])?)))
        .collect::<Option<Vec<_>>>()?;
    Some(RunInput { args, heap, callframe, fuel: v["fuel"].as_u64()? })
}

/// The parent's answer from a child's line, for the pass from `before` to `after`; a
/// finding is the parent's own replay of the child's inputs. `None` for a line that does
/// not say an answer.
fn answer_of_json(v: &Json, before: &Function, after: &Function) -> Option<Answer> {
    let bound = || v["bound"].as_u64().map(|k| k as u32);
    Some(match v["kind"].as_str()? {
        "proved" => Answer::Proved,
        "bounded" => Answer::ProvedBounded(bound()?),
        "vacuous" => Answer::Vacuous(bound()?),
        "unknown" => Answer::Unknown(unknown_of_word(v["why"].as_str()?)?),
        "counterexample" | "disagreement" => super::replay(before, after, input_of_json(&v["input"])?),
        _ => return None,
    })
}

/// How a child ended, seen from the parent.
enum Ended {
    /// It answered every pass it was asked.
    Done,
    /// The parent killed it at a limit, after this long on the pass under way.
    Limit(Unknown, Duration),
    /// The parent killed it because `stop` said so.
    Stopped,
}

/// The parent side: children validate the passes of `f` from the first one not yet
/// answered, until every pass has an answer (or `stop` says to stop).
fn validate_in_child(
    program: &std::path::Path,
    limits: Limits,
    f: &Function,
    pipeline: &Pipeline,
    opts: &Options,
    from: usize,
    stop: &dyn Fn() -> bool,
) -> Result<Vec<(String, Answer, Duration, bool)>, PassError> {
    let (text, g) = round_trip(f);
    let pairs = pass_pairs(&g, pipeline)?;
    let passes: Vec<String> = pipeline.passes.iter().map(|p| p.name.to_string()).collect();
    let mut out: Vec<(String, Answer, Duration, bool)> = vec![];
    // The index of the next pass to answer.
    let next = |out: &Vec<_>| from + out.len();
    while next(&out) < pairs.len() && !stop() {
        let request = Request { text: text.clone(), start: pipeline.start, passes: passes.clone(), from: next(&out), opts: opts.clone() };
        let first = next(&out);
        let ended = run_child(program, limits, &request.to_json(), stop, &mut |line, time| {
            let v: Json = serde_json::from_str(line).map_err(|e| format!("the validator child wrote `{line}`: {e}"))?;
            let i = v["index"].as_u64().map(|i| i as usize);
            if i != Some(next(&out)) || next(&out) >= pairs.len() {
                return Err(format!("the validator child answered out of turn: `{line}`"));
            }
            let (pass, before, after) = &pairs[next(&out)];
            let a = answer_of_json(&v, before, after).ok_or_else(|| format!("the validator child wrote `{line}`"))?;
            let micros = v["micros"].as_u64().map_or(time, Duration::from_micros);
            out.push((pass.clone(), a, micros, before != after));
            Ok(())
        });
        match ended {
            Ended::Done if next(&out) == pairs.len() => {}
            Ended::Done => panic!("the validator child ended after {} of {} answers", next(&out) - first, pairs.len() - first),
            Ended::Limit(why, spent) => {
                let (pass, before, after) = &pairs[next(&out)];
                out.push((pass.clone(), Answer::Unknown(why), spent, before != after));
            }
            Ended::Stopped => break,
        }
    }
    Ok(out)
}

/// The line a child writes when it has answered a request; it then reads the next one.
const DONE: &str = "{\"done\":true}";

/// A child between two requests, kept by the thread that started it (the child dies with
/// that thread, `PR_SET_PDEATHSIG`) for the thread's next request. A new child costs
/// about 20 ms before its first answer: the process, and the first Z3 contexts a process
/// makes (15 ms and 6 ms where later ones take 0.6 ms: Z3 sets up its global tables, and
/// the pages of its code are touched for the first time); on default seeds 1300–1319 that
/// was most of the median answer's time. Each request still gets a Z3 context of its own
/// per pass ([`super::validate`]), so an answer does not depend on what the child
/// validated before, and the child gives its freed memory back after each request.
struct Warm {
    program: PathBuf,
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: mpsc::Receiver<String>,
    reader: Option<std::thread::JoinHandle<()>>,
    errors: Option<std::thread::JoinHandle<String>>,
}

thread_local! {
    static WARM: std::cell::RefCell<Option<Warm>> = const { std::cell::RefCell::new(None) };
}

impl Warm {
    /// Starts `program` as a validator child, with threads that read its output (so that
    /// neither pipe can fill up while the parent watches the limits).
    fn start(program: &std::path::Path) -> Warm {
        let mut child = spawn_child(program);
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().expect("piped");
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut stderr = child.stderr.take().expect("piped");
        let errors = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        let stdin = child.stdin.take();
        Warm { program: program.to_path_buf(), child, stdin, lines, reader: Some(reader), errors: Some(errors) }
    }

    /// The thread's warm child for `program` if it is still running, else a new one; and
    /// whether it was kept.
    fn take(program: &std::path::Path) -> (Warm, bool) {
        if let Some(mut w) = WARM.with(|w| w.borrow_mut().take()) {
            if w.program == program && w.stdin.is_some() && matches!(w.child.try_wait(), Ok(None)) {
                return (w, true);
            }
        }
        (Warm::start(program), false)
    }

    /// Kills the child's whole process group: anything it started holds its pipes too.
    fn kill(&mut self) {
        #[cfg(unix)]
        // SAFETY: `kill` on the child's own process group, which it leads.
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        let _ = self.child.kill();
    }

    /// Ends the child (killed first with `kill`), waits for it and its readers: how it
    /// exited and what it said on stderr.
    fn end(mut self, kill: bool) -> (std::process::ExitStatus, String) {
        drop(self.stdin.take());
        if kill {
            self.kill();
        }
        let status = self.child.wait().expect("waiting for the validator child");
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        (status, self.errors.take().and_then(|e| e.join().ok()).unwrap_or_default())
    }
}

impl Drop for Warm {
    /// A child dropped between requests (its thread ends, or it was retired) is stopped at
    /// once, not left for its thread's death.
    fn drop(&mut self) {
        if self.stdin.take().is_some() {
            self.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs `request` in the thread's warm child (or a new one), handing each line it writes
/// to `answer` (with the time since the previous one), and kills it at a limit or when
/// `stop` says so. A child that fails or dies otherwise is a panic here, with its reason.
/// A child that answered the whole request is kept for the next one, unless it holds more
/// than half its memory cap.
fn run_child(
    program: &std::path::Path,
    limits: Limits,
    request: &str,
    stop: &dyn Fn() -> bool,
    answer: &mut dyn FnMut(&str, Duration) -> Result<(), String>,
) -> Ended {
    let (mut warm, reused) = Warm::take(program);
    let pid = warm.child.id();
    // Written by a thread of its own, so that a child that does not read cannot block
    // this one; the pipe comes back with the thread.
    let mut stdin = warm.stdin.take().expect("a warm child has its stdin");
    let line = format!("{request}\n");
    let writer = std::thread::spawn(move || {
        let written = stdin.write_all(line.as_bytes()).and_then(|_| stdin.flush());
        (stdin, written)
    });
    let mut said = false;
    let (ended, bad_line, done) = watch_child(pid, limits, &warm.lines, stop, &mut |line, time| {
        said = true;
        answer(line, time)
    });
    if done && ended.is_none() && bad_line.is_none() && writer.is_finished() {
        let (stdin, written) = writer.join().expect("the request's writer");
        if written.is_ok() && resident_of(pid).is_some_and(|r| r <= limits.memory / 2) {
            warm.stdin = Some(stdin);
            WARM.with(|w| *w.borrow_mut() = Some(warm));
        } else {
            drop(stdin);
            warm.end(true);
        }
        return Ended::Done;
    }
    let (status, stderr) = warm.end(ended.is_some() || bad_line.is_some() || done);
    let _ = writer.join();
    if reused && !said && ended.is_none() && bad_line.is_none() && !done {
        // A kept child that ended before it said anything (killed from outside while it
        // waited): the request goes to a new child, as it would have without keeping.
        return run_child(program, limits, request, stop, answer);
    }
    if let Some(e) = bad_line {
        panic!("{e}");
    }
    if let Some(e) = ended {
        return e;
    }
    if !done && !status.success() {
        let why = stderr.trim();
        panic!("the validator child failed ({status}){}{why}", if why.is_empty() { "" } else { ": " });
    }
    Ended::Done
}

/// Starts `program` as a validator child in a process group of its own, with its three
/// pipes, killed when the thread that started it dies.
fn spawn_child(program: &std::path::Path) -> std::process::Child {
    let mut cmd = Command::new(program);
    cmd.arg(CHILD_COMMAND).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
        #[cfg(target_os = "linux")]
        // SAFETY: `prctl` is async-signal-safe; between fork and exec the child only asks
        // to be killed when the thread that started it dies.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
    }
    cmd.spawn().unwrap_or_else(|e| panic!("cannot start the validator child {}: {e}", program.display()))
}

/// Passes the child's answer lines to `answer` until the child says it is done ([`DONE`])
/// or ends them, `stop` asks, or a limit is past (time since the last answer, resident
/// set): what ended the child early, if anything, a line `answer` refused, and whether
/// the child said it was done.
fn watch_child(
    pid: u32,
    limits: Limits,
    rx: &mpsc::Receiver<String>,
    stop: &dyn Fn() -> bool,
    answer: &mut dyn FnMut(&str, Duration) -> Result<(), String>,
) -> (Option<Ended>, Option<String>, bool) {
    let mut last = Instant::now();
    let mut ended = None;
    let mut bad_line = None;
    let mut done = false;
    loop {
        match rx.recv_timeout(POLL) {
            Ok(line) if line == DONE => {
                done = true;
                break;
            }
            Ok(line) => {
                if let Err(e) = answer(&line, last.elapsed()) {
                    bad_line = Some(e);
                    break;
                }
                last = Instant::now();
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if stop() {
            ended = Some(Ended::Stopped);
            break;
        }
        if last.elapsed() > limits.time {
            ended = Some(Ended::Limit(Unknown::TimeLimit, last.elapsed()));
            break;
        }
        let resident = resident_of(pid);
        if let Some(r) = resident {
            crate::measure::memory::note_child_resident(r);
        }
        if resident.is_some_and(|r| r > limits.memory) {
            ended = Some(Ended::Limit(Unknown::MemoryLimit, last.elapsed()));
            break;
        }
    }
    (ended, bad_line, done)
}

/// The resident bytes of process `pid` (`VmRSS`, in kB in `/proc/PID/status`), or `None`
/// when it has gone.
fn resident_of(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line["VmRSS:".len()..].split_whitespace().next()?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_core::ir::HEAP_BASE;

    fn function(src: &str) -> Function {
        tandem_core::text::parse_module(src).expect("parses").0.functions.remove(0)
    }

    const BEFORE: &str = "function %f(i32 %a, i64 %b) -> i32 {
    callframe i32 @x
b0:
    cfwrite(@x, add(cfread(@x), load.i32(1048576)))
    ret add(%a, 1)
}
";

    /// A counterexample crosses the pipe as its model's inputs (both value types, heap
    /// rows, callframe values) and comes back as the parent's own replay of them.
    #[test]
    fn a_finding_crosses_the_pipe_as_its_inputs_and_is_replayed() {
        let before = function(BEFORE);
        let after = function(&BEFORE.replace("add(%a, 1)", "add(%a, 2)"));
        let input = RunInput {
            args: vec![Value::I32(-5), Value::I64(i64::MIN)],
            heap: vec![(HEAP_BASE, vec![1, 2, 3, 255])],
            callframe: vec![(CfVar::new(0), Value::I32(7))],
            fuel: 1000,
        };
        let found = super::super::replay(&before, &after, input);
        assert_eq!(found.kind(), "counterexample");
        let line = answer_json(3, &found, Duration::from_micros(42)).to_string();
        let v: Json = serde_json::from_str(&line).unwrap();
        assert_eq!(v["index"], 3);
        assert_eq!(v["micros"], 42);
        let back = answer_of_json(&v, &before, &after).expect("an answer");
        assert_eq!(back.to_string(), found.to_string());
        // The same inputs on a pass that changed nothing replay as no difference: the
        // parent does not take the child's word for a finding.
        let same = answer_of_json(&v, &before, &before).expect("an answer");
        assert_eq!(same.kind(), "disagreement");
    }

    #[test]
    fn every_other_answer_crosses_the_pipe() {
        let f = function(BEFORE);
        let answers = [
            Answer::Proved,
            Answer::ProvedBounded(2),
            Answer::Vacuous(1),
            Answer::Unknown(Unknown::Budget),
            Answer::Unknown(Unknown::TooLarge),
            Answer::Unknown(Unknown::Mismatch),
            Answer::Unknown(Unknown::MemoryLimit),
            Answer::Unknown(Unknown::TimeLimit),
        ];
        for a in answers {
            let v = answer_json(0, &a, Duration::ZERO);
            assert_eq!(answer_of_json(&v, &f, &f).map(|b| b.to_string()), Some(a.to_string()));
        }
        assert!(answer_of_json(&json!({ "index": 0, "kind": "proved-ish" }), &f, &f).is_none());
    }

    #[test]
    fn a_self_check_summary_crosses_the_pipe() {
        let s = super::super::selfcheck::Summary { compared: 5, beyond_bound: 2, fuel_exhausted: 1, differences: vec![(7, "after dce".into(), 1, "end kind".into())] };
        let back = summary_of_json(&summary_json(&s)).unwrap();
        assert_eq!(format!("{back:?}"), format!("{s:?}"));
    }

    #[test]
    fn a_request_reads_back() {
        let opts = Options { bound: 3, rlimit: 1234, max_nodes: 99 };
        let r = Request { text: BEFORE.into(), start: Form::Ssa, passes: vec!["memopt".into(), "dce".into()], from: 1, opts };
        let back = Request::from_json(&r.to_json()).unwrap();
        assert_eq!((back.text.as_str(), back.start, back.passes.clone(), back.from), (BEFORE, Form::Ssa, r.passes.clone(), 1));
        assert_eq!((back.opts.bound, back.opts.rlimit, back.opts.max_nodes), (3, 1234, 99));
        assert!(Request::from_json("{\"start\": \"lir\"}").is_err());
    }

    /// A stand-in child: a shell script that ignores its request and does `body`.
    fn fake_child(name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("tandem-isolate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn pipeline() -> Pipeline {
        Pipeline::parse_from(Form::Hir, "ssa,dce").unwrap()
    }

    /// A child that never answers is killed at the time limit, pass after pass: every
    /// answer is `unknown (time limit)`, none a pass.
    #[test]
    fn a_child_past_its_time_is_killed_and_the_pass_is_unknown() {
        let child = fake_child("sleeps", "sleep 20");
        let limits = Limits { memory: 1 << 40, time: Duration::from_millis(150) };
        let t = Instant::now();
        let out = validate_in_child(&child, limits, &function(BEFORE), &pipeline(), &Options::default(), 0, &|| false).unwrap();
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        let got: Vec<(String, String)> = out.iter().map(|(p, a, _, _)| (p.clone(), a.to_string())).collect();
        let want = ["ssa", "dce"].map(|p| (p.to_string(), "unknown (time limit)".to_string()));
        assert_eq!(got, want);
        assert!(out.iter().all(|(_, _, t, _)| *t >= limits.time));
    }

    /// Validating from a later pass (`tandem verify --pass P`): the passes before it get no
    /// answer, and the one the child leaves is that pass's, not the first's.
    #[test]
    fn validating_from_a_later_pass_answers_only_from_there() {
        let child = fake_child("sleeps-from", "sleep 20");
        let limits = Limits { memory: 1 << 40, time: Duration::from_millis(150) };
        let out = validate_in_child(&child, limits, &function(BEFORE), &pipeline(), &Options::default(), 1, &|| false).unwrap();
        let got: Vec<(String, String)> = out.iter().map(|(p, a, _, _)| (p.clone(), a.to_string())).collect();
        assert_eq!(got, [("dce".to_string(), "unknown (time limit)".to_string())]);
    }

    /// A child whose resident set passes the cap is killed at once: `unknown (memory
    /// limit)`. (`tail` keeps the endless line of /dev/zero in memory.)
    #[test]
    fn a_child_past_its_memory_is_killed_and_the_pass_is_unknown() {
        let child = fake_child("grows", "exec tail /dev/zero");
        let limits = Limits { memory: 64 << 20, time: Duration::from_secs(60) };
        let t = Instant::now();
        let out = validate_in_child(&child, limits, &function(BEFORE), &pipeline(), &Options::default(), 0, &|| false).unwrap();
        assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
        let got: Vec<String> = out.iter().map(|(_, a, _, _)| a.to_string()).collect();
        assert_eq!(got, ["unknown (memory limit)", "unknown (memory limit)"]);
    }

    /// Stopping kills the child and leaves the pass under way without an answer.
    #[test]
    fn stopping_leaves_the_rest_unanswered() {
        let child = fake_child("sleeps-too", "sleep 20");
        let limits = Limits { memory: 1 << 40, time: Duration::from_secs(60) };
        let t = Instant::now();
        let out = validate_in_child(&child, limits, &function(BEFORE), &pipeline(), &Options::default(), 0, &|| t.elapsed() > Duration::from_millis(100)).unwrap();
        assert!(out.is_empty());
        assert!(t.elapsed() < Duration::from_secs(10));
    }

    /// A child that answered a whole request answers the thread's next one (the same
    /// process: a shell that answers each request line with its own pid as the time); one
    /// that has ended by then is replaced, and one that ends on a request without a word
    /// has the request sent again to a new child.
    #[test]
    fn a_child_is_kept_for_the_next_request() {
        let answers = r#"echo "{\"index\": 0, \"kind\": \"proved\", \"micros\": $$}"; echo "{\"index\": 1, \"kind\": \"proved\", \"micros\": $$}"; echo '{"done":true}'"#;
        let pids = |child: &PathBuf| {
            let limits = Limits { memory: 1 << 40, time: Duration::from_secs(60) };
            let out = validate_in_child(child, limits, &function(BEFORE), &pipeline(), &Options::default(), 0, &|| false).unwrap();
            assert_eq!(out.iter().map(|(_, a, _, _)| a.to_string()).collect::<Vec<_>>(), ["proved", "proved"]);
            out[0].2
        };
        std::thread::spawn(move || {
            let kept = fake_child("keeps", &format!("while read -r line; do {answers}; done"));
            let first = pids(&kept);
            assert_eq!(pids(&kept), first);
            assert_eq!(pids(&kept), first);
            // One request per child: the next request finds it ended (or ending).
            let once = fake_child("once", &format!("read -r line; {answers}; exec sleep 0.2"));
            let a = pids(&once);
            std::thread::sleep(Duration::from_millis(400));
            assert_ne!(pids(&once), a);
            // Ends silently on its second request: the request goes to a new child.
            let dies = fake_child("dies", &format!("read -r line; {answers}; read -r line; exit 0"));
            let a = pids(&dies);
            let b = pids(&dies);
            assert_ne!(a, b);
        })
        .join()
        .unwrap();
    }

    /// A child that fails is a panic of the validation, with what it said, never an
    /// answer; so is one that writes something other than an answer.
    #[test]
    fn a_failing_child_is_a_panic_with_its_reason() {
        for (name, body, says) in [
            ("fails", "echo 'it broke' >&2; exit 3", "it broke"),
            ("babbles", "echo hello", "hello"),
            ("out-of-turn", "echo '{\"index\": 1, \"kind\": \"proved\"}'", "out of turn"),
        ] {
            let child = fake_child(name, body);
            let limits = Limits { memory: 1 << 40, time: Duration::from_secs(60) };
            let r = std::panic::catch_unwind(|| validate_in_child(&child, limits, &function(BEFORE), &pipeline(), &Options::default(), 0, &|| false));
            let why = r.expect_err("a panic");
            let why = why.downcast_ref::<String>().cloned().unwrap_or_default();
            assert!(why.contains(says), "{name}: {why}");
        }
    }
}
