//! Driving the validator over many functions (`tandem verify`): every function of case
//! files, or generated cases, through a pipeline, with every (function, pass) answer and
//! its time collected into a [`Tally`] that counts answers and prints the latency
//! histogram (p50, p90, p99) per pass. Counterexamples and encoder disagreements are
//! written as findings with [`super::write_finding`].

use super::{write_finding, Answer, Options};
use crate::gen::{self, Profile};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tandem_core::ir::Function;
use tandem_core::passes::{PassError, Pipeline};

/// One (function, pass) answer.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Where the function comes from (a file and function name, or a seed).
    pub origin: String,
    pub pass: String,
    pub answer: Answer,
    pub time: Duration,
    /// The finding file written for a counterexample or disagreement.
    pub finding: Option<PathBuf>,
    /// Whether the pass changed the function.
    pub changed: bool,
}

/// What to validate on each function: the pipeline, only one of its passes if given, the
/// validator's options, and where findings go.
#[derive(Clone, Debug)]
pub struct Plan<'a> {
    pub pipeline: &'a Pipeline,
    pub only: Option<&'a str>,
    pub opts: &'a Options,
    pub out: &'a Path,
}

/// Answers and latencies of many queries.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    pub entries: Vec<Entry>,
}

impl Tally {
    /// Validates the passes of the plan's pipeline on `f`, adding one entry per pass and
    /// writing findings into the plan's folder as `{stem}-smt-{pass}.tir`.
    pub fn add_function(&mut self, f: &Function, origin: &str, stem: &str, plan: &Plan) -> Result<(), PassError> {
        let Plan { pipeline, only, opts, out } = *plan;
        // In a child under hard limits where the process allows it (`tandem` does): a
        // long `tandem verify` keeps no query's memory (issue 23).
        for (pass, answer, time, changed) in super::isolate::validate_some_passes_bounded(f, pipeline, opts, only, &|| false)? {
            let finding = write_finding(out, stem, f, &pass, &answer).unwrap_or_else(|e| {
                eprintln!("warning: cannot write a finding into {}: {e}", out.display());
                None
            });
            self.entries.push(Entry { origin: origin.to_string(), pass, answer, time, finding, changed });
        }
        Ok(())
    }

    /// Validates generated cases `seed..seed+count` of `profile` (functions the `ssa`
    /// profile writes in SSA form are validated from SSA: see [`pipeline_for`]).
    pub fn add_generated(&mut self, seed: u64, count: u64, profile: Profile, plan: &Plan) -> Result<(), PassError> {
        let cfg = profile.config();
        for s in seed..seed.saturating_add(count) {
            let g = gen::generate(s, &cfg);
            for f in &g.case.module.functions {
                let stem = format!("{}-seed-{s}", profile.name());
                let p = pipeline_for(f, plan.pipeline)?;
                self.add_function(f, &format!("seed {s} %{}", f.name), &stem, &Plan { pipeline: &p, ..*plan })?;
            }
        }
        Ok(())
    }

    /// Number of entries whose answer has kind `kind` (see [`Answer::kind`]).
    pub fn count(&self, kind: &str) -> usize {
        self.entries.iter().filter(|e| e.answer.kind() == kind).count()
    }

    /// The exit status `tandem verify` gives: 1 on a counterexample or encoder
    /// disagreement, else 3 on an unknown, else 0.
    pub fn status(&self) -> u8 {
        if self.count("counterexample") + self.count("disagreement") > 0 {
            1
        } else if self.count("unknown") > 0 {
            3
        } else {
            0
        }
    }

    /// Pass names in first-seen order.
    fn passes(&self) -> Vec<&str> {
        let mut v: Vec<&str> = vec![];
        for e in &self.entries {
            if !v.contains(&e.pass.as_str()) {
                v.push(&e.pass);
            }
        }
        v
    }
}

/// The pipeline to validate `f` with: `pipeline` itself, or, for a function already in
/// SSA form (it has phis) and a pipeline that starts from HIR, the passes after `ssa`
/// starting from SSA form.
pub fn pipeline_for(f: &Function, pipeline: &Pipeline) -> Result<Pipeline, PassError> {
    use tandem_core::passes::Form;
    let has_phis = f.layout.iter().any(|&b| !f.blocks[b].phis.is_empty());
    if !has_phis || pipeline.start != Form::Hir {
        return Ok(pipeline.clone());
    }
    let rest: Vec<&str> = pipeline.passes.iter().skip_while(|q| q.name != "ssa").skip(1).map(|q| q.name).collect();
    Pipeline::new_from(Form::Ssa, &rest)
}

/// The `q`-quantile (nearest rank) of sorted durations.
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Histogram bucket upper bounds in milliseconds.
const BUCKETS: [f64; 8] = [1.0, 5.0, 20.0, 50.0, 100.0, 250.0, 1000.0, f64::INFINITY];

impl fmt::Display for Tally {
    /// Per pass and in total: answer counts, p50/p90/p99 and a histogram.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut groups: Vec<(String, Vec<&Entry>)> =
            self.passes().into_iter().map(|p| (p.to_string(), self.entries.iter().filter(|e| e.pass == p).collect())).collect();
        groups.push(("all".to_string(), self.entries.iter().collect()));
        for (name, es) in groups {
            let mut times: Vec<Duration> = es.iter().map(|e| e.time).collect();
            times.sort();
            let c = |k: &str| es.iter().filter(|e| e.answer.kind() == k).count();
            let unknown = c("unknown");
            let mut reasons: Vec<(&str, usize)> = vec![];
            for r in es.iter().filter_map(|e| e.answer.unknown_reason()) {
                match reasons.iter_mut().find(|(q, _)| *q == r) {
                    Some((_, n)) => *n += 1,
                    None => reasons.push((r, 1)),
                }
            }
            reasons.sort();
            let reasons: String = reasons.iter().map(|(r, n)| format!(", {n} {r}")).collect::<String>().replacen(", ", ": ", 1);
            let changed: Vec<&&Entry> = es.iter().filter(|e| e.changed).collect();
            let changed_proved = changed.iter().filter(|e| e.answer.kind() == "proved").count();
            writeln!(
                f,
                "{name}: {} queries: {} proved, {} bounded, {} vacuous, {} unknown ({:.1}%{reasons}), {} counterexample(s), {} encoder disagreement(s); changed pairs proved for every run: {changed_proved} of {} ({:.1}%); p50 {}, p90 {}, p99 {}, max {}",
                es.len(),
                c("proved"),
                c("bounded"),
                c("vacuous"),
                unknown,
                100.0 * unknown as f64 / es.len().max(1) as f64,
                c("counterexample"),
                c("disagreement"),
                changed.len(),
                100.0 * changed_proved as f64 / changed.len().max(1) as f64,
                ms(quantile(&times, 0.5)),
                ms(quantile(&times, 0.9)),
                ms(quantile(&times, 0.99)),
                ms(times.last().copied().unwrap_or_default()),
            )?;
            let mut lo = 0.0;
            let mut parts = vec![];
            for hi in BUCKETS {
                let n = times.iter().filter(|t| {
                    let m = t.as_secs_f64() * 1e3;
                    m >= lo && m < hi
                }).count();
                let label = if hi.is_infinite() { format!(">={lo}ms") } else { format!("<{hi}ms") };
                parts.push(format!("{label}:{n}"));
                lo = hi;
            }
            writeln!(f, "  histogram {}", parts.join(" "))?;
        }
        Ok(())
    }
}
