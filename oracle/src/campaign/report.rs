//! Reports for people and CI systems: the JSON summary of a campaign (`tandem fuzz
//! --json`), and the console text and the JSON and JUnit XML reports of a replay (`tandem
//! run`, `--json`, `--junit`). Field names are stable (documented in the README); each JSON
//! report names its format and version in `format`, which changes when a field does.
//!
//! The reports of a replay never disagree with the console: one function ([`RunCounts::of`])
//! counts runs by status and validator answers by verdict, and the console's last lines,
//! the JSON counts, the JUnit totals and the exit status all come from it. Runs are
//! counted, not stages (a run that fails at three stages is one failed run), and a
//! validator finding is counted on its own, beside the runs. Validator answers are taken
//! by kind ([`verdict`]: proof, finding, or not proved), so a new kind of answer is
//! reported without a change here, and is never a pass unless it is a proof.

use crate::campaign::{signature, ConfigRecord, Finding, Summary};
use crate::campaign::replay::{BadInput, FileReport, RunReport, SmtReport, Validation};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// `tandem fuzz --json`.
#[derive(Clone, Debug, Serialize)]
pub struct FuzzReport {
    /// `tandem-fuzz-summary/2` (2: `findings[].found_signature`).
    pub format: &'static str,
    pub config: ConfigRecord,
    /// Whether the campaign reached its end (seed count or time bound); false when it
    /// stopped on an error or was interrupted.
    pub complete: bool,
    /// The signal that interrupted it (`SIGINT`, `SIGTERM`), if one did.
    pub interrupted: Option<String>,
    /// What stopped it besides a signal: a seed past the watchdog (a `hang` finding when
    /// it was stuck in the compiler, a harness bug otherwise).
    pub stopped: Vec<String>,
    /// The seeds under way it gave up on when it stopped (not completed; `--resume`
    /// tests them).
    pub abandoned: Vec<String>,
    pub counts: FuzzCounts,
    /// Testing time over every session of a resumed campaign.
    pub elapsed_seconds: f64,
    pub cases_per_second: f64,
    pub runs_per_second: f64,
    /// Per pass (pipeline order) and counter (by name): the total and the share of cases
    /// in which it fired.
    pub passes: Vec<PassReport>,
    /// One entry per signature, most frequent first.
    pub signatures: Vec<SignatureReport>,
    /// Every finding, in seed order.
    pub findings: Vec<Finding>,
    /// The case files of the seeds on which Unicorn and the CPU disagree (emulator
    /// infidelities, not findings).
    pub infidelities: Vec<std::path::PathBuf>,
    /// The process's resident set when the report was made, in bytes (`VmRSS`); `null`
    /// where the process cannot read it (no `/proc`).
    pub rss_bytes: Option<u64>,
    /// The largest resident set of the process so far, in bytes (`VmHWM`); `null` where
    /// unknown.
    pub peak_rss_bytes: Option<u64>,
    /// The largest resident set of any validator child so far, in bytes
    /// (`measure::memory::children_peak`); `null` before any child has ended or where
    /// unknown. Each child is capped at `smt::isolate::LIMITS.memory`.
    pub children_peak_rss_bytes: Option<u64>,
    /// Distinguishing-value coverage: per slip pair (`gen::distinguish::universe`, in its
    /// order), the share of cases whose runs told it apart and that evaluated it.
    pub distinguishing: Vec<PairReport>,
    /// The Z3 validator's answers per pass (pipeline order of first appearance): how many
    /// of each kind. `unknown` and `vacuous` are their own statuses, never passes.
    pub validator: Vec<ValidatorCounts>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PairReport {
    pub pair: String,
    pub distinguished_percent: f64,
    pub evaluated_percent: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ValidatorCounts {
    pub pass: String,
    pub proved: u64,
    pub bounded: u64,
    pub vacuous: u64,
    pub unknown: u64,
    /// The unknown answers by reason (`budget`, `too large`, `memory limit`, `time
    /// limit`, ...; `unrecorded` for those a resumed older campaign counted without one).
    pub unknown_reasons: std::collections::BTreeMap<String, u64>,
    pub counterexample: u64,
    pub disagreement: u64,
}

impl ValidatorCounts {
    fn of(s: &Summary) -> Vec<ValidatorCounts> {
        s.validator
            .passes
            .iter()
            .map(|p| {
                let n = |k: &str| p.kinds.get(k).copied().unwrap_or(0);
                let known = ["proved", "bounded", "vacuous", "counterexample", "disagreement"];
                let other: u64 = p.kinds.iter().filter(|(k, _)| !known.contains(&k.as_str())).map(|(_, v)| *v).sum();
                let mut unknown_reasons = p.unknown_reasons.clone();
                let unrecorded = other.saturating_sub(unknown_reasons.values().sum());
                if unrecorded > 0 {
                    unknown_reasons.insert("unrecorded".to_string(), unrecorded);
                }
                ValidatorCounts {
                    pass: p.pass.clone(),
                    proved: n("proved"),
                    bounded: n("bounded"),
                    vacuous: n("vacuous"),
                    unknown: other,
                    unknown_reasons,
                    counterexample: n("counterexample"),
                    disagreement: n("disagreement"),
                }
            })
            .collect()
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct FuzzCounts {
    pub cases: u64,
    pub runs: u64,
    pub agreed: u64,
    pub invalid: u64,
    pub findings: u64,
    pub signatures: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct PassReport {
    pub pass: String,
    pub counters: Vec<CounterReport>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CounterReport {
    pub name: String,
    /// Summed over the cases.
    pub total: u64,
    /// Cases in which the counter was non-zero.
    pub fired_cases: u64,
    /// `100 * fired_cases / cases`.
    pub fired_percent: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SignatureReport {
    pub signature: String,
    pub count: u64,
    /// The first finding of the signature (lowest seed).
    pub seed: u64,
    pub representative: PathBuf,
    /// Its reduced case, when reduction succeeded.
    pub reduced: Option<PathBuf>,
    /// Whether the reduction was abandoned for lack of time (`tandem reduce` does it).
    pub reduce_left: bool,
}

impl FuzzReport {
    pub fn new(config: ConfigRecord, s: &Summary, complete: bool) -> FuzzReport {
        let interrupted = s.interrupted.map(|sig| crate::campaign::interrupt::name(sig).to_string());
        let secs = s.elapsed.as_secs_f64().max(1e-9);
        let resident = crate::measure::memory::resident();
        let passes = s
            .pass_stats
            .iter()
            .map(|(pass, counters)| PassReport {
                pass: pass.clone(),
                counters: counters
                    .iter()
                    .map(|(name, total)| {
                        let fired_cases =
                            s.fired.iter().find(|(p, _)| p == pass).and_then(|(_, c)| c.get(name)).copied().unwrap_or(0);
                        CounterReport { name: name.clone(), total: *total, fired_cases, fired_percent: s.fired_percent(pass, name) }
                    })
                    .collect(),
            })
            .collect();
        let signatures: Vec<SignatureReport> = s
            .signatures()
            .into_iter()
            .map(|g| SignatureReport {
                reduce_left: g.reduced.is_none() && s.findings.iter().any(|f| f.signature == g.signature && f.reduce_left),
                signature: g.signature,
                count: g.count,
                seed: g.representative.seed,
                representative: g.representative.path,
                reduced: g.reduced,
            })
            .collect();
        FuzzReport {
            format: "tandem-fuzz-summary/2",
            config,
            complete,
            interrupted,
            stopped: s.stopped.clone(),
            abandoned: s.abandoned.clone(),
            counts: FuzzCounts {
                cases: s.cases,
                runs: s.runs,
                agreed: s.agreed,
                invalid: s.invalid,
                findings: s.findings.len() as u64,
                signatures: signatures.len() as u64,
            },
            elapsed_seconds: s.elapsed.as_secs_f64(),
            cases_per_second: s.cases as f64 / secs,
            runs_per_second: s.runs as f64 / secs,
            passes,
            signatures,
            findings: s.findings.clone(),
            infidelities: s.infidelities.clone(),
            rss_bytes: resident.map(|r| r.current),
            peak_rss_bytes: resident.map(|r| r.peak),
            children_peak_rss_bytes: crate::measure::memory::children_peak(),
            distinguishing: crate::gen::distinguish::universe()
                .into_iter()
                .map(|pair| PairReport {
                    distinguished_percent: s.distinguish.percent(&pair),
                    evaluated_percent: s.distinguish.evaluated_percent(&pair),
                    pair,
                })
                .collect(),
            validator: ValidatorCounts::of(s),
        }
    }
}

/// One replayed file, or a file that could not be read as a case file.
#[derive(Clone, Debug)]
pub enum Replayed {
    File { report: FileReport, elapsed: Duration },
    Bad(BadInput),
}

/// What became of one run, as every report of a replay counts it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RunStatus {
    Passed,
    /// A stage disagreed, or (without `--bless`) the reference differs from the expectation.
    Failed,
    /// Nothing failed, but Unicorn and the CPU disagree on an x86 stage (`--x86 both`):
    /// an emulator infidelity, not a compiler finding.
    Infidelity,
    /// Nothing failed, but some stage could not run because of a harness limit.
    Limit,
}

impl RunStatus {
    /// The word the JSON report and the console use.
    pub fn word(self) -> &'static str {
        match self {
            RunStatus::Passed => "passed",
            RunStatus::Failed => "failed",
            RunStatus::Infidelity => "infidelity",
            RunStatus::Limit => "limit",
        }
    }
}

/// The status of `run`; with `bless`, expectation mismatches were rewritten and do not fail.
pub fn run_status(run: &RunReport, bless: bool) -> RunStatus {
    if !run.problems.is_empty() || (!bless && !run.mismatches.is_empty()) {
        RunStatus::Failed
    } else if !run.infidelities.is_empty() {
        RunStatus::Infidelity
    } else if !run.limits.is_empty() {
        RunStatus::Limit
    } else {
        RunStatus::Passed
    }
}

/// What a validator answer means for a report, whatever its kind: a proof passes, a
/// counterexample or an encoder disagreement fails, and every other answer (unknown, and
/// any kind the validator adds that is neither) is *not proved*: listed and counted,
/// never a pass.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Verdict {
    Proof,
    Finding,
    NotProved,
}

/// The verdict of a replayed answer.
pub fn verdict(answer: &SmtReport) -> Verdict {
    answer_verdict(&answer.answer)
}

/// The verdict of any validator answer: a finding is a counterexample or an encoder
/// disagreement (both replayed in the interpreter), a proof is what
/// [`crate::smt::Answer::is_proof`] says, anything else is not proved.
pub fn answer_verdict(a: &crate::smt::Answer) -> Verdict {
    use crate::smt::Answer;
    if matches!(a, Answer::Counterexample(_) | Answer::EncoderDisagreement(_)) {
        Verdict::Finding
    } else if a.is_proof() {
        Verdict::Proof
    } else {
        Verdict::NotProved
    }
}

/// The counts of a replay, which the console's last lines, the JSON report and the JUnit
/// report all print: one function computes them, so the three cannot disagree.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RunCounts {
    pub files: u64,
    pub passed: u64,
    pub failed: u64,
    /// Runs not checked at every stage because of a harness limit.
    pub limited: u64,
    /// Runs on which Unicorn and the CPU disagree and no stage failed.
    pub infidelities: u64,
    pub bad_input: u64,
    /// Files whose passes the validator checked.
    pub validated_files: u64,
    /// Files written by the generator that were not validated (the default; `tandem run
    /// --verify-generated` validates them).
    pub generated_not_validated: u64,
    /// Validator answers, (function, pass) pairs.
    pub validated: u64,
    /// Answers by kind ([`crate::smt::Answer::kind`]), in order of first appearance.
    pub validator: Vec<(String, u64)>,
    /// Counterexamples and encoder disagreements: each fails the replay.
    pub validator_failed: u64,
    /// Answers that are neither a proof nor a finding (e.g. unknown).
    pub validator_not_proved: u64,
}

impl RunCounts {
    pub fn of(replayed: &[Replayed], bless: bool) -> RunCounts {
        let mut c = RunCounts::default();
        for r in replayed {
            c.add(r, bless);
        }
        c
    }

    /// Counts one more replayed file: `tandem run` counts each file as it is done and
    /// keeps the file itself only when a report lists every run (`--json`, `--junit`), so
    /// that its memory does not grow with the number of files.
    pub fn add(&mut self, r: &Replayed, bless: bool) {
        self.files += 1;
        let Replayed::File { report, .. } = r else {
            self.bad_input += 1;
            return;
        };
        for run in &report.runs {
            match run_status(run, bless) {
                RunStatus::Passed => self.passed += 1,
                RunStatus::Failed => self.failed += 1,
                RunStatus::Infidelity => self.infidelities += 1,
                RunStatus::Limit => self.limited += 1,
            }
        }
        match report.validation {
            Validation::Validated => self.validated_files += 1,
            Validation::Generated => self.generated_not_validated += 1,
            Validation::Off => {}
        }
        for a in &report.smt {
            self.add_answer(a);
        }
    }

    fn add_answer(&mut self, a: &SmtReport) {
        self.validated += 1;
        let kind = a.answer.kind();
        match self.validator.iter_mut().find(|(k, _)| k == kind) {
            Some((_, n)) => *n += 1,
            None => self.validator.push((kind.to_string(), 1)),
        }
        match verdict(a) {
            Verdict::Proof => {}
            Verdict::Finding => self.validator_failed += 1,
            Verdict::NotProved => self.validator_not_proved += 1,
        }
    }

    /// Answers of `kind`.
    pub fn answers(&self, kind: &str) -> u64 {
        self.validator.iter().find(|(k, _)| k == kind).map_or(0, |(_, n)| *n)
    }

    /// The exit status of `tandem run`: 2 bad input, 1 a failed run, an emulator
    /// infidelity or a validator finding, 3 nothing failed but a run met a harness limit, else 0. An answer that is
    /// not a proof is listed and counted (never a pass) and gives 3 when nothing failed:
    /// whether the solver finishes in time depends on the machine.
    pub fn exit_status(&self) -> u8 {
        if self.bad_input > 0 {
            2
        } else if self.failed + self.infidelities + self.validator_failed > 0 {
            1
        } else if self.limited + self.validator_not_proved > 0 {
            // Not a pass: a stage could not run, or the validator left a (function, pass)
            // undecided within its deterministic budget (unknown, or vacuous at its bound).
            3
        } else {
            0
        }
    }

    /// The verdict in one word, as the exit status says it.
    pub fn verdict(&self) -> &'static str {
        match self.exit_status() {
            2 => "bad input",
            1 => "failed",
            3 if self.limited > 0 => "limit",
            3 => "undecided",
            _ => "passed",
        }
    }

    /// The console's last lines: runs and files, then the validator's answers.
    pub fn console(&self, bound: Option<u32>) -> String {
        let mut limits = if self.limited > 0 { format!(", {} beyond a harness limit", self.limited) } else { String::new() };
        if self.infidelities > 0 {
            limits += &format!(", {} emulator infidelit(ies)", self.infidelities);
        }
        let mut t = format!(
            "{} file(s): {} run(s) passed, {} failed{limits}, {} file(s) with bad input\n",
            self.files, self.passed, self.failed, self.bad_input
        );
        match bound {
            None => t += "z3: not run (--no-verify)\n",
            Some(b) => {
                let skipped = match self.generated_not_validated {
                    0 => String::new(),
                    n => format!(" ({n} generated case(s) not validated: --verify-generated validates them)"),
                };
                t += &format!(
                    "z3: {} of {} file(s) validated{skipped}, {} (function, pass) pair(s): {}\n",
                    self.validated_files,
                    self.files - self.bad_input,
                    self.validated,
                    self.answer_counts(b)
                )
            }
        }
        if self.validator_failed > 0 {
            t += &format!("{} validator finding(s) (listed as FAIL above)\n", self.validator_failed);
        }
        t
    }

    /// `618 proved, 196 proved to bound 1, 1 unknown, 0 counterexample(s), 0 encoder
    /// disagreement(s)`, then any other kind the validator answered, by its name.
    fn answer_counts(&self, bound: u32) -> String {
        let known = [
            ("proved", "proved".to_string()),
            ("bounded", format!("proved to bound {bound}")),
            ("unknown", "unknown".to_string()),
            ("counterexample", "counterexample(s)".to_string()),
            ("disagreement", "encoder disagreement(s)".to_string()),
        ];
        let mut parts: Vec<String> = known.iter().map(|(k, label)| format!("{} {label}", self.answers(k))).collect();
        for (k, n) in &self.validator {
            if !known.iter().any(|(q, _)| q == k) {
                parts.push(format!("{n} {k}"));
            }
        }
        parts.join(", ")
    }
}

/// The console text of one replayed file: `FAIL` (with the differences), `LIMIT`, and
/// with `verbose` `ok` lines per run; `FAIL` for a validator finding and `UNKNOWN` for
/// an answer that is not a proof; `error:` for bad input (the command prints that one to
/// standard error).
pub fn console_file(r: &Replayed, bless: bool, verbose: bool) -> String {
    let report = match r {
        Replayed::Bad(b) => return format!("error: {b}\n"),
        Replayed::File { report, .. } => report,
    };
    let path = report.path.display();
    let mut text = String::new();
    for run in &report.runs {
        match run_status(run, bless) {
            RunStatus::Passed if verbose => text += &format!("ok   {path}:{}: {}\n", run.line, run.title),
            RunStatus::Passed => {}
            RunStatus::Limit => {
                text += &format!("LIMIT {path}:{}: {}\n", run.line, run.title);
                for (stage, l) in &run.limits {
                    text += &format!("       stage `{stage}` not run: {l}\n");
                }
            }
            RunStatus::Infidelity => {
                // Its own verdict: the two x86 machines differ; the CPU's run, judged
                // against the interpreter, found nothing wrong.
                text += &format!("INFIDELITY {path}:{}: {}\n", run.line, run.title);
                for (stage, i) in &run.infidelities {
                    text += &format!("       stage `{stage}`: Unicorn and the CPU disagree (not a compiler finding):\n");
                    for l in i.to_string().lines().skip(1) {
                        text += &format!("         {l}\n");
                    }
                }
            }
            RunStatus::Failed => text += &failed_run_text(&format!("{path}"), run, bless),
        }
    }
    for a in &report.smt {
        let word = match verdict(a) {
            Verdict::Proof if verbose => "ok  ",
            Verdict::Proof => continue,
            Verdict::Finding => "FAIL",
            Verdict::NotProved => "UNDECIDED",
        };
        text += &format!("{word} {path}: %{} pass `{}`: z3 {}\n", a.function, a.pass, a.answer);
    }
    if report.blessed {
        text += &format!("blessed {path}\n");
    }
    text
}

/// The console lines of a failed run: the expectation mismatches and each disagreeing stage.
fn failed_run_text(path: &str, run: &RunReport, bless: bool) -> String {
    let mut text = format!("FAIL {path}:{}: {}\n", run.line, run.title);
    if !bless && !run.mismatches.is_empty() {
        text += "       the reference interpreter does not match the expectation:\n";
        for m in &run.mismatches {
            text += &format!("         {m}\n");
        }
    }
    for p in &run.problems {
        text += &format!("       stage `{}` disagrees with the reference interpreter ({}):\n", p.stage, signature(p));
        for l in &p.lines {
            text += &format!("         {l}\n");
        }
        if let Some(sbs) = &p.side_by_side {
            for l in sbs.lines() {
                text += &format!("         {l}\n");
            }
        }
    }
    text
}

/// `tandem run --json`.
#[derive(Clone, Debug, Serialize)]
pub struct RunReportJson {
    /// `tandem-run-report/3` (3: one list of validator answers, `answers[]` with every
    /// answer, where 2 had the answers that are not proofs there and every answer again in
    /// `z3[]`; `validated_files` and `generated_not_validated`).
    pub format: &'static str,
    /// `passed`, `failed`, `limit`, `undecided` (a validator answer that is not a proof and
    /// nothing failed) or `bad input`: what the exit status says (0, 1, 3, 3, 2).
    pub verdict: &'static str,
    pub exit_status: u8,
    pub files: u64,
    /// Runs, by status.
    pub passed: u64,
    pub failed: u64,
    /// Runs not checked at every stage because of a harness limit (exit 3 alone).
    pub limited: u64,
    /// Runs on which Unicorn and the CPU disagree (`--x86 both`) and no stage failed:
    /// emulator infidelities, not compiler findings (exit 1 all the same).
    pub infidelities: u64,
    pub bad_input: u64,
    /// The validator: files validated, generated files not validated (by default),
    /// (function, pass) pairs, answers by kind, findings (each fails the replay) and
    /// answers that are not proofs.
    pub validated_files: u64,
    pub generated_not_validated: u64,
    pub validated: u64,
    pub validator: std::collections::BTreeMap<String, u64>,
    pub validator_failed: u64,
    pub validator_not_proved: u64,
    /// One entry per run, in file and line order.
    pub runs: Vec<RunJson>,
    /// Every validator answer, one per (file, function, pass), in file order.
    pub answers: Vec<AnswerJson>,
    /// Files that are not valid case files: `file:line:col: message`.
    pub bad_inputs: Vec<BadInputJson>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunJson {
    pub file: PathBuf,
    pub line: u32,
    /// The run as written: `%f(args)`.
    pub name: String,
    /// `passed`, `failed`, `infidelity` (nothing failed, but Unicorn and the CPU
    /// disagree; see `infidelities`), or `limit` (nothing failed, but some stage could not run
    /// because the program exceeds a limit of the harness; see `limits`).
    pub status: &'static str,
    /// How the reference interpreter differs from the written expectation.
    pub mismatches: Vec<String>,
    /// Stages that disagree with the reference interpreter.
    pub problems: Vec<ProblemJson>,
    /// Stages not run because of a harness limit: `stage: limit`.
    pub limits: Vec<String>,
    /// x86 stages whose run Unicorn and the CPU disagree on: `stage: difference; ...`.
    pub infidelities: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ProblemJson {
    pub stage: String,
    pub signature: String,
    pub lines: Vec<String>,
}

/// One answer of the validator in a replay.
#[derive(Clone, Debug, Serialize)]
pub struct AnswerJson {
    pub file: PathBuf,
    pub function: String,
    pub pass: String,
    /// [`crate::smt::Answer::kind`]: `proved`, `bounded`, `vacuous`, `unknown`,
    /// `counterexample`, `disagreement`, ...
    pub kind: String,
    /// Its verdict ([`verdict`]): `proved` (a proof, `proved` or `bounded`), `failed` (a
    /// finding) or `not proved` (anything else: never a pass).
    pub status: &'static str,
    /// The signature of a finding (`pass P: wrong outcome`, `z3 pass P: encoder
    /// disagreement`), empty otherwise.
    pub signature: String,
    /// The answer as the console prints it.
    pub text: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct BadInputJson {
    pub file: PathBuf,
    pub line: u32,
    pub col: u32,
    pub message: String,
}

/// The signature of a validator finding, as [`signature`] names the campaign's.
pub fn answer_signature(a: &SmtReport) -> String {
    let what = if a.answer.kind() == "counterexample" { "validator counterexample" } else { "encoder disagreement" };
    crate::campaign::findings::normalize_signature(&format!("z3 pass {}: {what}", a.pass))
}

/// The JSON report of a replay. With `bless`, expectation mismatches were rewritten and
/// do not fail a run (as `tandem run --bless` counts them).
pub fn run_json(replayed: &[Replayed], bless: bool) -> RunReportJson {
    let c = RunCounts::of(replayed, bless);
    let mut out = RunReportJson {
        format: "tandem-run-report/3",
        verdict: c.verdict(),
        exit_status: c.exit_status(),
        files: c.files,
        passed: c.passed,
        failed: c.failed,
        limited: c.limited,
        infidelities: c.infidelities,
        bad_input: c.bad_input,
        validated_files: c.validated_files,
        generated_not_validated: c.generated_not_validated,
        validated: c.validated,
        validator: c.validator.iter().cloned().collect(),
        validator_failed: c.validator_failed,
        validator_not_proved: c.validator_not_proved,
        runs: vec![],
        answers: vec![],
        bad_inputs: vec![],
    };
    for r in replayed {
        match r {
            Replayed::Bad(b) => out.bad_inputs.push(BadInputJson { file: b.path.clone(), line: b.line, col: b.col, message: b.message.clone() }),
            Replayed::File { report, .. } => {
                out.runs.extend(report.runs.iter().map(|run| run_entry(&report.path, run, bless)));
                out.answers.extend(report.smt.iter().map(|a| answer_entry(&report.path, a)));
            }
        }
    }
    out
}

fn run_entry(file: &std::path::Path, run: &RunReport, bless: bool) -> RunJson {
    RunJson {
        file: file.to_path_buf(),
        line: run.line,
        name: run.title.clone(),
        status: run_status(run, bless).word(),
        limits: run.limits.iter().map(|(stage, l)| format!("{stage}: {l}")).collect(),
        infidelities: run.infidelities.iter().map(|(stage, i)| format!("{stage}: {}", i.differences.join("; "))).collect(),
        mismatches: if bless { vec![] } else { run.mismatches.clone() },
        problems: run.problems.iter().map(|p| ProblemJson { stage: p.stage.clone(), signature: signature(p), lines: p.lines.clone() }).collect(),
    }
}

fn answer_entry(file: &std::path::Path, a: &SmtReport) -> AnswerJson {
    let (status, signature) = match verdict(a) {
        Verdict::Proof => ("proved", String::new()),
        Verdict::Finding => ("failed", answer_signature(a)),
        Verdict::NotProved => ("not proved", String::new()),
    };
    AnswerJson {
        file: file.to_path_buf(),
        function: a.function.clone(),
        pass: a.pass.clone(),
        kind: a.answer.kind().to_string(),
        status,
        signature,
        text: a.answer.to_string(),
    }
}

/// Escapes text for XML attribute values and character data.
pub fn xml(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\n' | '\t' => o.push(c),
            // Characters XML 1.0 does not allow.
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => o.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => o.push(c),
        }
    }
    o
}

/// One JUnit `<testcase>`: passed (no body), `failure`, `skipped` or `error`.
pub enum JunitCase {
    Passed,
    Failure { message: String, kind: String, text: String },
    Skipped { message: String },
    Error { message: String, kind: String, text: String },
}

/// Writes one `<testcase>` element.
pub fn junit_case(classname: &str, name: &str, time: f64, case: &JunitCase) -> String {
    let head = format!("    <testcase classname=\"{}\" name=\"{}\" time=\"{time:.3}\"", xml(classname), xml(name));
    match case {
        JunitCase::Passed => head + "/>\n",
        JunitCase::Skipped { message } => format!("{head}>\n      <skipped message=\"{}\"/>\n    </testcase>\n", xml(message)),
        JunitCase::Failure { message, kind, text } => {
            format!("{head}>\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>\n", xml(message), xml(kind), xml(text))
        }
        JunitCase::Error { message, kind, text } => {
            format!("{head}>\n      <error message=\"{}\" type=\"{}\">{}</error>\n    </testcase>\n", xml(message), xml(kind), xml(text))
        }
    }
}

/// The JUnit XML report of a replay: one `<testsuite>` per file, one `<testcase>` per
/// run (`name` is `line N: %f(args)`) and per validator answer (`z3 %f pass P`), a
/// `<failure>` for a run that failed or a validator finding, `<skipped>` for a run beyond
/// a harness limit, an answer that is not a proof or a generated file that was not
/// validated (`z3 not validated`), an `<error>` test case for a file that is not a valid
/// case file. The totals are [`RunCounts`]'.
pub fn run_junit(replayed: &[Replayed], bless: bool) -> String {
    let c = RunCounts::of(replayed, bless);
    let total_time: f64 = replayed
        .iter()
        .map(|r| match r {
            Replayed::File { elapsed, .. } => elapsed.as_secs_f64(),
            Replayed::Bad(_) => 0.0,
        })
        .sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x += &format!(
        "<testsuites name=\"tandem run\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{total_time:.3}\">\n",
        c.passed + c.failed + c.infidelities + c.limited + c.validated + c.generated_not_validated + c.bad_input,
        c.failed + c.infidelities + c.validator_failed,
        c.bad_input,
        c.limited + c.validator_not_proved + c.generated_not_validated,
    );
    for r in replayed {
        let (name, cases, time) = match r {
            Replayed::Bad(b) => {
                let text = b.to_string();
                let case = JunitCase::Error { message: b.message.clone(), kind: "bad input".into(), text };
                (b.path.display().to_string(), vec![("bad input".to_string(), case)], 0.0)
            }
            Replayed::File { report, elapsed } => (report.path.display().to_string(), file_cases(report, bless), elapsed.as_secs_f64()),
        };
        let count = |f: fn(&JunitCase) -> bool| cases.iter().filter(|(_, k)| f(k)).count();
        let failures = count(|k| matches!(k, JunitCase::Failure { .. }));
        let errors = count(|k| matches!(k, JunitCase::Error { .. }));
        let skipped = count(|k| matches!(k, JunitCase::Skipped { .. }));
        x += &format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{time:.3}\">\n",
            xml(&name),
            cases.len()
        );
        let per = time / cases.len().max(1) as f64;
        for (case_name, case) in &cases {
            x += &junit_case(&name, case_name, per, case);
        }
        x += "  </testsuite>\n";
    }
    x += "</testsuites>\n";
    x
}

/// The test cases of one replayed file: its runs, then its validator answers.
fn file_cases(report: &FileReport, bless: bool) -> Vec<(String, JunitCase)> {
    let mut out = vec![];
    for run in &report.runs {
        let name = format!("line {}: {}", run.line, run.title);
        let case = match run_status(run, bless) {
            RunStatus::Passed => JunitCase::Passed,
            // Neither a pass nor a failure: the run was not checked everywhere.
            RunStatus::Limit => {
                let limits: Vec<String> = run.limits.iter().map(|(stage, l)| format!("{stage}: {l}")).collect();
                JunitCase::Skipped { message: format!("harness limit: {}", limits.join("; ")) }
            }
            // Not a compiler finding, and not a pass: the two x86 machines differ.
            RunStatus::Infidelity => {
                let found: Vec<String> = run.infidelities.iter().map(|(stage, i)| format!("{stage}: {}", i.differences.join("; "))).collect();
                JunitCase::Failure { message: format!("emulator infidelity: {}", found.join(" | ")), kind: "emulator infidelity".into(), text: found.join("\n") }
            }
            RunStatus::Failed => {
                let text = failed_run_text(&report.path.display().to_string(), run, bless);
                let (message, kind) = match run.problems.first() {
                    Some(p) => (format!("stage `{}` disagrees: {}", p.stage, p.lines.first().map_or("", |l| l.lines().next().unwrap_or(""))), signature(p)),
                    None => (format!("expectation: {}", run.mismatches.first().map_or("", |m| m.as_str())), "expectation".to_string()),
                };
                JunitCase::Failure { message, kind, text }
            }
        };
        out.push((name, case));
    }
    for a in &report.smt {
        let name = format!("z3 %{} pass {}", a.function, a.pass);
        let case = match verdict(a) {
            Verdict::Proof => JunitCase::Passed,
            Verdict::Finding => {
                let text = a.answer.to_string();
                JunitCase::Failure { message: text.lines().next().unwrap_or("").to_string(), kind: answer_signature(a), text }
            }
            Verdict::NotProved => JunitCase::Skipped { message: format!("z3 {} (not proved)", a.answer) },
        };
        out.push((name, case));
    }
    // The console's "N generated case(s) not validated": a skipped test case per file, so
    // that a dashboard counts what the console counts.
    if report.validation == Validation::Generated {
        let message = "z3: not validated (a generated case; --verify-generated validates it)".to_string();
        out.push(("z3 not validated".to_string(), JunitCase::Skipped { message }));
    }
    out
}

/// `tandem verify --json` (format `tandem-verify-report/1`).
#[derive(Clone, Debug, Serialize)]
pub struct VerifyReportJson {
    pub format: &'static str,
    /// `passed` (every answer a proof), `failed` (a finding) or `not proved`: what the
    /// exit status says (0, 1, 3).
    pub verdict: &'static str,
    pub exit_status: u8,
    /// (function, pass) queries.
    pub queries: u64,
    /// Answers by kind.
    pub answers: std::collections::BTreeMap<String, u64>,
    /// The unknown answers by reason (`budget`, `too large`, `memory limit`, ...).
    pub unknown_reasons: std::collections::BTreeMap<String, u64>,
    pub failed: u64,
    pub not_proved: u64,
    /// Every query: where the function comes from, the pass, the kind, the verdict
    /// (`proved`, `failed`, `not proved`), the answer as printed, the time and the finding
    /// file written for it.
    pub entries: Vec<VerifyEntryJson>,
}

#[derive(Clone, Debug, Serialize)]
pub struct VerifyEntryJson {
    pub origin: String,
    pub pass: String,
    pub kind: String,
    pub status: &'static str,
    pub text: String,
    pub milliseconds: f64,
    pub finding: Option<PathBuf>,
}

fn verify_status(v: Verdict) -> &'static str {
    match v {
        Verdict::Proof => "proved",
        Verdict::Finding => "failed",
        Verdict::NotProved => "not proved",
    }
}

impl VerifyReportJson {
    /// The counts from the tally's per-pass counts (every answer), the entries from those
    /// it kept ([`crate::smt::run::Tally::keeping_entries`]; none otherwise).
    pub fn new(tally: &crate::smt::run::Tally) -> VerifyReportJson {
        let all = tally.all();
        let mut r = VerifyReportJson {
            format: "tandem-verify-report/1",
            verdict: "passed",
            exit_status: 0,
            queries: all.queries(),
            answers: all.answers.kinds.clone(),
            unknown_reasons: all.answers.unknown_reasons.clone(),
            failed: 0,
            not_proved: 0,
            entries: vec![],
        };
        for (kind, n) in &all.answers.kinds {
            // The verdict of a kind, as [`answer_verdict`] gives it for each answer.
            match kind.as_str() {
                "counterexample" | "disagreement" => r.failed += n,
                "proved" | "bounded" => {}
                _ => r.not_proved += n,
            }
        }
        for e in &tally.entries {
            r.entries.push(VerifyEntryJson {
                origin: e.origin.clone(),
                pass: e.pass.clone(),
                kind: e.answer.kind().to_string(),
                status: verify_status(answer_verdict(&e.answer)),
                text: e.answer.to_string(),
                milliseconds: e.time.as_secs_f64() * 1e3,
                finding: e.finding.clone(),
            });
        }
        (r.verdict, r.exit_status) = if r.failed > 0 {
            ("failed", 1)
        } else if r.not_proved > 0 {
            ("not proved", 3)
        } else {
            ("passed", 0)
        };
        debug_assert_eq!(r.exit_status, tally.status());
        r
    }
}

/// `tandem verify --junit`: one test case per (function, pass) query, grouped in one
/// `<testsuite>` per origin file or seed; a finding is a `<failure>` (its type the
/// signature), an answer that is not a proof `<skipped>`.
pub fn verify_junit(tally: &crate::smt::run::Tally) -> String {
    let j = VerifyReportJson::new(tally);
    let total: f64 = j.entries.iter().map(|e| e.milliseconds / 1e3).sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x += &format!(
        "<testsuites name=\"tandem verify\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{total:.3}\">\n",
        j.queries, j.failed, j.not_proved
    );
    let mut suites: Vec<(&str, Vec<(&VerifyEntryJson, &crate::smt::run::Entry)>)> = vec![];
    for (e, raw) in j.entries.iter().zip(&tally.entries) {
        let suite = e.origin.rsplit_once(" %").map_or(e.origin.as_str(), |(file, _)| file);
        match suites.iter_mut().find(|(s, _)| *s == suite) {
            Some((_, v)) => v.push((e, raw)),
            None => suites.push((suite, vec![(e, raw)])),
        }
    }
    for (suite, entries) in suites {
        let failures = entries.iter().filter(|(e, _)| e.status == "failed").count();
        let skipped = entries.iter().filter(|(e, _)| e.status == "not proved").count();
        let time: f64 = entries.iter().map(|(e, _)| e.milliseconds / 1e3).sum();
        x += &format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{time:.3}\">\n",
            xml(suite),
            entries.len()
        );
        for (e, raw) in entries {
            let case = match e.status {
                "proved" => JunitCase::Passed,
                "failed" => {
                    let kind = if e.kind == "counterexample" { "validator counterexample" } else { "encoder disagreement" };
                    let sig = crate::campaign::findings::normalize_signature(&format!("z3 pass {}: {kind}", raw.pass));
                    let mut text = e.text.clone();
                    if let Some(f) = &e.finding {
                        text += &format!("\nfinding: {}", f.display());
                    }
                    JunitCase::Failure { message: e.text.lines().next().unwrap_or("").to_string(), kind: sig, text }
                }
                _ => JunitCase::Skipped { message: format!("z3 {} (not proved)", e.text) },
            };
            x += &junit_case(&e.origin, &format!("pass {}", e.pass), e.milliseconds / 1e3, &case);
        }
        x += "  </testsuite>\n";
    }
    x += "</testsuites>\n";
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::check::Problem;
    use crate::campaign::replay::RunReport;

    #[test]
    fn junit_escapes_and_counts() {
        let failing = RunReport {
            line: 3,
            title: "%f(1)".into(),
            mismatches: vec![],
            problems: vec![Problem { stage: "x86".into(), lines: vec!["end: expected return 1, got return <2> & \"3\"".into()], side_by_side: None }],
            limits: vec![],
            infidelities: vec![],
        };
        let passing = RunReport { line: 9, title: "%f(2)".into(), mismatches: vec![], problems: vec![], limits: vec![], infidelities: vec![] };
        let limited = RunReport {
            line: 12,
            title: "%f(3)".into(),
            mismatches: vec![],
            problems: vec![],
            limits: vec![("x86".into(), "a frame of 300000 bytes does not fit".into())],
            infidelities: vec![],
        };
        let replayed = vec![
            Replayed::File {
                report: FileReport { path: "a.tir".into(), runs: vec![failing, passing, limited], blessed: false, smt: vec![], validation: Validation::Off },
                elapsed: Duration::from_millis(10),
            },
            Replayed::Bad(BadInput { path: "b.tir".into(), line: 2, col: 5, message: "expected `}`".into() }),
        ];
        let x = run_junit(&replayed, false);
        assert!(x.contains("<testsuites name=\"tandem run\" tests=\"4\" failures=\"1\" errors=\"1\" skipped=\"1\""), "{x}");
        assert!(x.contains("<testcase classname=\"a.tir\" name=\"line 9: %f(2)\" time=\"0.003\"/>"), "{x}");
        assert!(x.contains("got return &lt;2&gt; &amp; &quot;3&quot;"), "{x}");
        assert!(x.contains("type=\"x86: wrong outcome\""), "{x}");
        assert!(x.contains("<error message=\"expected `}`\" type=\"bad input\">b.tir:2:5: expected `}`</error>"), "{x}");
        assert!(x.contains("<skipped message=\"harness limit: x86: a frame of 300000 bytes does not fit\"/>"), "{x}");
        let j = run_json(&replayed, false);
        assert_eq!((j.passed, j.failed, j.limited, j.bad_input), (1, 1, 1, 1));
        assert_eq!(j.runs[2].status, "limit");
        assert_eq!(j.runs[0].problems[0].signature, "x86: wrong outcome");
    }
}
