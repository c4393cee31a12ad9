//! Machine-readable reports for CI systems: the JSON summary of a campaign
//! (`tandem fuzz --json`), and the JSON and JUnit XML reports of a replay (`tandem run
//! --json`, `--junit`). Field names are stable (documented in the README); each JSON
//! report names its format and version in `format`, which changes when a field does.

use crate::campaign::{signature, ConfigRecord, Finding, Summary};
use crate::campaign::replay::{BadInput, FileReport};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// `tandem fuzz --json`.
#[derive(Clone, Debug, Serialize)]
pub struct FuzzReport {
    /// `tandem-fuzz-summary/1`.
    pub format: &'static str,
    pub config: ConfigRecord,
    /// Whether the campaign reached its end (seed count or time bound); false when it
    /// stopped on an error.
    pub complete: bool,
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
    /// The Z3 validator's answers per pass (pipeline order of first appearance): how many
    /// of each kind. `unknown` and `vacuous` are their own statuses, never passes.
    pub validator: Vec<ValidatorCounts>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ValidatorCounts {
    pub pass: String,
    pub proved: u64,
    pub bounded: u64,
    pub vacuous: u64,
    pub unknown: u64,
    pub counterexample: u64,
    pub disagreement: u64,
}

impl ValidatorCounts {
    fn of(s: &Summary) -> Vec<ValidatorCounts> {
        let mut out: Vec<ValidatorCounts> = vec![];
        for a in &s.validator {
            let i = match out.iter().position(|c| c.pass == a.pass) {
                Some(i) => i,
                None => {
                    out.push(ValidatorCounts { pass: a.pass.clone(), proved: 0, bounded: 0, vacuous: 0, unknown: 0, counterexample: 0, disagreement: 0 });
                    out.len() - 1
                }
            };
            let c = &mut out[i];
            match a.kind.as_str() {
                "proved" => c.proved += 1,
                "bounded" => c.bounded += 1,
                "vacuous" => c.vacuous += 1,
                "counterexample" => c.counterexample += 1,
                "disagreement" => c.disagreement += 1,
                _ => c.unknown += 1,
            }
        }
        out
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
}

impl FuzzReport {
    pub fn new(config: ConfigRecord, s: &Summary, complete: bool) -> FuzzReport {
        let secs = s.elapsed.as_secs_f64().max(1e-9);
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
                signature: g.signature,
                count: g.count,
                seed: g.representative.seed,
                representative: g.representative.path,
                reduced: g.reduced,
            })
            .collect();
        FuzzReport {
            format: "tandem-fuzz-summary/1",
            config,
            complete,
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

/// `tandem run --json`.
#[derive(Clone, Debug, Serialize)]
pub struct RunReportJson {
    /// `tandem-run-report/1`.
    pub format: &'static str,
    pub files: u64,
    pub passed: u64,
    pub failed: u64,
    /// Runs not checked at every stage because of a harness limit (exit 3 alone).
    pub limited: u64,
    pub bad_input: u64,
    /// One entry per run, in file and line order.
    pub runs: Vec<RunJson>,
    /// Files that are not valid case files: `file:line:col: message`.
    pub bad_inputs: Vec<BadInputJson>,
    /// The Z3 validator's answers, one per (file, function, pass).
    pub z3: Vec<Z3Json>,
}

/// One answer of the Z3 validator in a replay.
#[derive(Clone, Debug, Serialize)]
pub struct Z3Json {
    pub file: PathBuf,
    pub function: String,
    pub pass: String,
    /// `proved`, `bounded`, `vacuous`, `unknown` (neither of these two is a pass) or
    /// `failed` (a counterexample or an encoder disagreement).
    pub status: &'static str,
    /// The answer as the console prints it.
    pub answer: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunJson {
    pub file: PathBuf,
    pub line: u32,
    /// The run as written: `%f(args)`.
    pub name: String,
    /// `passed`, `failed`, or `limit` (nothing failed, but some stage could not run
    /// because the program exceeds a limit of the harness; see `limits`).
    pub status: &'static str,
    /// How the reference interpreter differs from the written expectation.
    pub mismatches: Vec<String>,
    /// Stages that disagree with the reference interpreter.
    pub problems: Vec<ProblemJson>,
    /// Stages not run because of a harness limit: `stage: limit`.
    pub limits: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ProblemJson {
    pub stage: String,
    pub signature: String,
    pub lines: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BadInputJson {
    pub file: PathBuf,
    pub line: u32,
    pub col: u32,
    pub message: String,
}

/// The JSON report of a replay. With `bless`, expectation mismatches were rewritten and
/// do not fail a run (as `tandem run --bless` counts them).
pub fn run_json(replayed: &[Replayed], bless: bool) -> RunReportJson {
    let mut out = RunReportJson { format: "tandem-run-report/1", files: replayed.len() as u64, passed: 0, failed: 0, limited: 0, bad_input: 0, runs: vec![], bad_inputs: vec![], z3: vec![] };
    for r in replayed {
        match r {
            Replayed::Bad(b) => {
                out.bad_input += 1;
                out.bad_inputs.push(BadInputJson { file: b.path.clone(), line: b.line, col: b.col, message: b.message.clone() });
            }
            Replayed::File { report, .. } => {
                for r in &report.smt {
                    out.z3.push(Z3Json { file: report.path.clone(), function: r.function.clone(), pass: r.pass.clone(), status: r.status(), answer: r.answer.to_string() });
                }
                for run in &report.runs {
                    let failed = !run.problems.is_empty() || (!bless && !run.mismatches.is_empty());
                    let limited = !failed && !run.limits.is_empty();
                    if failed {
                        out.failed += 1;
                    } else if limited {
                        out.limited += 1;
                    } else {
                        out.passed += 1;
                    }
                    out.runs.push(RunJson {
                        file: report.path.clone(),
                        line: run.line,
                        name: run.title.clone(),
                        status: if failed {
                            "failed"
                        } else if limited {
                            "limit"
                        } else {
                            "passed"
                        },
                        limits: run.limits.iter().map(|(stage, l)| format!("{stage}: {l}")).collect(),
                        mismatches: if bless { vec![] } else { run.mismatches.clone() },
                        problems: run
                            .problems
                            .iter()
                            .map(|p| ProblemJson { stage: p.stage.clone(), signature: signature(p), lines: p.lines.clone() })
                            .collect(),
                    });
                }
            }
        }
    }
    out
}

/// Escapes text for XML attribute values and character data.
fn xml(s: &str) -> String {
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

/// The JUnit XML report of a replay: one `<testsuite>` per file, one `<testcase>` per
/// run (`name` is `line N: %f(args)`), a `<failure>` with the difference text for a run
/// that failed, an `<error>` test case for a file that is not a valid case file.
pub fn run_junit(replayed: &[Replayed], bless: bool) -> String {
    let summary = run_json(replayed, bless);
    let total_time: f64 = replayed
        .iter()
        .map(|r| match r {
            Replayed::File { elapsed, .. } => elapsed.as_secs_f64(),
            Replayed::Bad(_) => 0.0,
        })
        .sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x += &format!(
        "<testsuites name=\"tandem run\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{total_time:.3}\">\n",
        summary.passed + summary.failed + summary.limited + summary.bad_input + summary.z3.len() as u64,
        summary.failed + summary.z3.iter().filter(|z| z.status == "failed").count() as u64,
        summary.bad_input
    );
    for r in replayed {
        match r {
            Replayed::Bad(b) => {
                let file = xml(&b.path.display().to_string());
                x += &format!("  <testsuite name=\"{file}\" tests=\"1\" failures=\"0\" errors=\"1\" time=\"0.000\">\n");
                x += &format!("    <testcase classname=\"{file}\" name=\"bad input\" time=\"0.000\">\n");
                x += &format!("      <error message=\"{}\" type=\"bad input\">{}</error>\n", xml(&b.message), xml(&b.to_string()));
                x += "    </testcase>\n  </testsuite>\n";
            }
            Replayed::File { report, elapsed } => {
                let file = xml(&report.path.display().to_string());
                let runs: Vec<&RunJson> = summary.runs.iter().filter(|j| j.file == report.path).collect();
                let failures = runs.iter().filter(|j| j.status == "failed").count();
                let per = elapsed.as_secs_f64() / runs.len().max(1) as f64;
                x += &format!(
                    "  <testsuite name=\"{file}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"{:.3}\">\n",
                    runs.len(),
                    elapsed.as_secs_f64()
                );
                for j in runs {
                    let name = xml(&format!("line {}: {}", j.line, j.name));
                    x += &format!("    <testcase classname=\"{file}\" name=\"{name}\" time=\"{per:.3}\"");
                    if j.status == "passed" {
                        x += "/>\n";
                        continue;
                    }
                    if j.status == "limit" {
                        // Neither a pass nor a failure: the run was not checked everywhere.
                        let message = xml(&format!("harness limit: {}", j.limits.join("; ")));
                        x += &format!(">\n      <skipped message=\"{message}\"/>\n    </testcase>\n");
                        continue;
                    }
                    let mut text = String::new();
                    if !j.mismatches.is_empty() {
                        text += "the reference interpreter does not match the expectation:\n";
                        for m in &j.mismatches {
                            text += &format!("  {m}\n");
                        }
                    }
                    for p in &j.problems {
                        text += &format!("stage `{}` disagrees with the reference interpreter ({}):\n", p.stage, p.signature);
                        for l in p.lines.iter().flat_map(|l| l.lines()) {
                            text += &format!("  {l}\n");
                        }
                    }
                    let (message, kind) = match j.problems.first() {
                        Some(p) => (format!("stage `{}` disagrees: {}", p.stage, p.lines.first().map_or("", |l| l.lines().next().unwrap_or(""))), p.signature.clone()),
                        None => (format!("expectation: {}", j.mismatches.first().map_or("", |m| m.as_str())), "expectation".to_string()),
                    };
                    x += &format!(">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>\n", xml(&message), xml(&kind), xml(&text));
                }
                x += "  </testsuite>\n";
            }
        }
    }
    // The validator's answers: a finding is a failure, an unknown or vacuous answer is
    // skipped with its reason (never a pass).
    if !summary.z3.is_empty() {
        let failures = summary.z3.iter().filter(|z| z.status == "failed").count();
        x += &format!("  <testsuite name=\"z3\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"0.000\">\n", summary.z3.len());
        for z in &summary.z3 {
            let name = xml(&format!("%{} pass {}", z.function, z.pass));
            x += &format!("    <testcase classname=\"z3 {}\" name=\"{name}\" time=\"0.000\"", xml(&z.file.display().to_string()));
            match z.status {
                "failed" => x += &format!(">\n      <failure message=\"{}\" type=\"z3\"/>\n    </testcase>\n", xml(&z.answer)),
                "unknown" | "vacuous" => x += &format!(">\n      <skipped message=\"z3 {}\"/>\n    </testcase>\n", xml(&z.answer)),
                _ => x += "/>\n",
            }
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
        };
        let passing = RunReport { line: 9, title: "%f(2)".into(), mismatches: vec![], problems: vec![], limits: vec![] };
        let limited = RunReport {
            line: 12,
            title: "%f(3)".into(),
            mismatches: vec![],
            problems: vec![],
            limits: vec![("x86".into(), "a frame of 300000 bytes does not fit".into())],
        };
        let replayed = vec![
            Replayed::File {
                report: FileReport { path: "a.tir".into(), runs: vec![failing, passing, limited], blessed: false, smt: vec![] },
                elapsed: Duration::from_millis(10),
            },
            Replayed::Bad(BadInput { path: "b.tir".into(), line: 2, col: 5, message: "expected `}`".into() }),
        ];
        let x = run_junit(&replayed, false);
        assert!(x.contains("<testsuites name=\"tandem run\" tests=\"4\" failures=\"1\" errors=\"1\""), "{x}");
        assert!(x.contains("<testcase classname=\"a.tir\" name=\"line 9: %f(2)\" time=\"0.003\"/>"), "{x}");
        assert!(x.contains("got return &lt;2&gt; &amp; &quot;3&quot;"), "{x}");
        assert!(x.contains("type=\"x86: end\""), "{x}");
        assert!(x.contains("<error message=\"expected `}`\" type=\"bad input\">b.tir:2:5: expected `}`</error>"), "{x}");
        assert!(x.contains("<skipped message=\"harness limit: x86: a frame of 300000 bytes does not fit\"/>"), "{x}");
        let j = run_json(&replayed, false);
        assert_eq!((j.passed, j.failed, j.limited, j.bad_input), (1, 1, 1, 1));
        assert_eq!(j.runs[2].status, "limit");
        assert_eq!(j.runs[0].problems[0].signature, "x86: end");
    }
}
