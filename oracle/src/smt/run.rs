//! Driving the validator over many functions (`tandem verify`): every function of case
//! files, or generated cases, through a pipeline, with every (function, pass) answer and
//! its time collected into a [`Tally`] that counts answers and prints the latency
//! histogram (p50, p90, p99) per pass. Counterexamples and encoder disagreements are
//! written as findings with [`super::write_finding`].

use super::{write_finding, Answer, Options};
use crate::measure::latency::LatencyHistogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
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

/// Answers and latencies of many queries: per pass, counts and a latency histogram of a
/// fixed size, so a run of any length holds the same memory (issue 23); every entry only
/// when asked ([`Tally::keeping_entries`]: the JSON and JUnit reports list them all).
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Every answer, when kept; else empty.
    pub entries: Vec<Entry>,
    keep: bool,
    /// Per pass, in first-seen order.
    pub passes: Vec<PassTally>,
}

/// The counts of one pass's answers (or of all passes'): the answers themselves, and
/// what `tandem verify` adds: which pairs the pass changed and a coarse histogram.
#[derive(Clone, Debug, Default)]
pub struct PassTally {
    pub answers: PassAnswers,
    /// Queries whose pass changed the function, and those of them proved for every run.
    pub changed: u64,
    pub changed_proved: u64,
    /// The unknown answers among the changed pairs, and the changed pairs' latencies: the
    /// issue 20 figures are over the pairs a pass changed, and a pair the pass left as it
    /// was is proved without a query in well under a millisecond, which pulled the
    /// median of all queries down (a quarter of a small function's pairs).
    pub changed_unknown: u64,
    pub changed_latency: LatencyHistogram,
    /// Queries per [`BUCKETS`] range.
    pub buckets: [u64; BUCKETS.len()],
}

impl PassTally {
    fn add(&mut self, e: &Entry) {
        self.answers.add(e.answer.kind(), e.answer.unknown_reason(), e.time.as_micros() as u64);
        if e.changed {
            self.changed += 1;
            self.changed_proved += u64::from(e.answer.kind() == "proved");
            self.changed_unknown += u64::from(e.answer.kind() == "unknown");
            self.changed_latency.add(e.time.as_micros() as u64);
        }
        let m = e.time.as_secs_f64() * 1e3;
        let i = BUCKETS.iter().position(|&hi| m < hi).unwrap_or(BUCKETS.len() - 1);
        self.buckets[i] += 1;
    }

    fn merge(&mut self, o: &PassTally) {
        self.answers.merge(&o.answers);
        self.changed += o.changed;
        self.changed_proved += o.changed_proved;
        self.changed_unknown += o.changed_unknown;
        self.changed_latency.merge(&o.changed_latency);
        for (b, n) in self.buckets.iter_mut().zip(o.buckets) {
            *b += n;
        }
    }

    /// How many queries.
    pub fn queries(&self) -> u64 {
        self.answers.latency.count()
    }

    /// Answers of kind `kind`.
    pub fn kind(&self, kind: &str) -> u64 {
        self.answers.kind(kind)
    }
}

/// One pass's answers: how many of each kind ([`Answer::kind`]), the unknown ones by
/// reason ([`super::Unknown::reason`]), and their latencies, in a size that does not grow
/// with the answers. Campaigns keep (and snapshot) these; `tandem verify` too.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PassAnswers {
    pub pass: String,
    pub kinds: BTreeMap<String, u64>,
    /// The unknown answers by reason (`budget`, `time limit`, ...). Answers counted before
    /// the reasons were kept (an older state file) are in `kinds` only.
    #[serde(default)]
    pub unknown_reasons: BTreeMap<String, u64>,
    pub latency: LatencyHistogram,
}

impl PassAnswers {
    /// Counts one answer of kind `kind` (an unknown one with its `reason`) that took
    /// `micros`.
    pub fn add(&mut self, kind: &str, reason: Option<&str>, micros: u64) {
        *self.kinds.entry(kind.to_string()).or_insert(0) += 1;
        if let Some(r) = reason {
            *self.unknown_reasons.entry(r.to_string()).or_insert(0) += 1;
        }
        self.latency.add(micros);
    }

    pub fn merge(&mut self, other: &PassAnswers) {
        for (k, n) in &other.kinds {
            *self.kinds.entry(k.clone()).or_insert(0) += n;
        }
        for (k, n) in &other.unknown_reasons {
            *self.unknown_reasons.entry(k.clone()).or_insert(0) += n;
        }
        self.latency.merge(&other.latency);
    }

    /// Answers of kind `k`.
    pub fn kind(&self, k: &str) -> u64 {
        self.kinds.get(k).copied().unwrap_or(0)
    }

    /// `N budget, N time limit`: the unknown answers by reason, and those whose reason was
    /// not kept as `N unrecorded`.
    pub fn reasons(&self) -> String {
        let mut parts: Vec<String> = self.unknown_reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
        let unrecorded = self.kind("unknown").saturating_sub(self.unknown_reasons.values().sum());
        if unrecorded > 0 {
            parts.push(format!("{unrecorded} unrecorded"));
        }
        parts.join(", ")
    }

    /// `N proved, N bounded, N vacuous, N unknown (P%: N budget, ...), N
    /// counterexample(s), N encoder disagreement(s)`.
    pub fn counts(&self) -> String {
        let reasons = self.reasons();
        format!(
            "{} proved, {} bounded, {} vacuous, {} unknown ({:.1}%{}), {} counterexample(s), {} encoder disagreement(s)",
            self.kind("proved"),
            self.kind("bounded"),
            self.kind("vacuous"),
            self.kind("unknown"),
            100.0 * self.kind("unknown") as f64 / self.latency.count().max(1) as f64,
            if reasons.is_empty() { String::new() } else { format!(": {reasons}") },
            self.kind("counterexample"),
            self.kind("disagreement"),
        )
    }

    /// `PASS: [counts]; p50 T, p90 T, p99 T`, as a campaign's summary prints it.
    pub fn line(&self) -> String {
        let ms = |q: f64| self.latency.quantile(q).as_secs_f64() * 1e3;
        format!("{}: {}; p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms", self.pass, self.counts(), ms(0.5), ms(0.9), ms(0.99))
    }
}

impl Tally {
    /// A tally that also keeps every entry (for the reports that list them).
    pub fn keeping_entries() -> Tally {
        Tally { keep: true, ..Tally::default() }
    }

    /// Validates the passes of the plan's pipeline on `f`, counting one answer per pass,
    /// writing findings into the plan's folder as `{stem}-smt-{pass}.tir`, and returns the
    /// new entries.
    pub fn add_function(&mut self, f: &Function, origin: &str, stem: &str, plan: &Plan) -> Result<Vec<Entry>, PassError> {
        let Plan { pipeline, only, opts, out } = *plan;
        let mut added = vec![];
        // In a child under hard limits where the process allows it (`tandem` does): a
        // long `tandem verify` keeps no query's memory (issue 23).
        for (pass, answer, time, changed) in super::isolate::validate_some_passes_bounded(f, pipeline, opts, only, &|| false)? {
            let finding = write_finding(out, stem, f, &pass, &answer).unwrap_or_else(|e| {
                eprintln!("warning: cannot write a finding into {}: {e}", out.display());
                None
            });
            let e = Entry { origin: origin.to_string(), pass, answer, time, finding, changed };
            self.add(&e);
            added.push(e);
        }
        Ok(added)
    }

    /// Why the simulation check proves none of `passes` on `f` for every run, one line
    /// per try ([`super::simulate::explain`]): per pass of the pipeline named in
    /// `passes`, its lines (`tandem verify --why`, for the changed pairs not proved).
    pub fn explain(f: &Function, plan: &Plan, passes: &[String]) -> Result<Vec<(String, Vec<String>)>, PassError> {
        // The function the answers came from (see [`super::isolate::as_validated`]).
        let f = &super::isolate::as_validated(f);
        let mut before = f.clone();
        let mut g = f.clone();
        let mut out = vec![];
        crate::judge::check::drive(&tandem_core::passes::PassManager { verify: true }, plan.pipeline, &mut g, &mut |pass, after, _| {
            if passes.iter().any(|p| p == pass) {
                out.push((pass.to_string(), super::simulate::explain(&before, after, plan.opts)));
            }
            before = after.clone();
        })?;
        Ok(out)
    }

    /// Counts one answer (and keeps it, if entries are kept).
    pub fn add(&mut self, e: &Entry) {
        let i = match self.passes.iter().position(|p| p.answers.pass == e.pass) {
            Some(i) => i,
            None => {
                let answers = PassAnswers { pass: e.pass.clone(), ..PassAnswers::default() };
                self.passes.push(PassTally { answers, ..PassTally::default() });
                self.passes.len() - 1
            }
        };
        self.passes[i].add(e);
        if self.keep {
            self.entries.push(e.clone());
        }
    }

    /// Every pass's counts together.
    pub fn all(&self) -> PassTally {
        let mut all = PassTally { answers: PassAnswers { pass: "all".to_string(), ..PassAnswers::default() }, ..PassTally::default() };
        for p in &self.passes {
            all.merge(p);
        }
        all
    }

    /// Number of answers of kind `kind` (see [`Answer::kind`]).
    pub fn count(&self, kind: &str) -> u64 {
        self.passes.iter().map(|p| p.kind(kind)).sum()
    }

    /// The exit status `tandem verify` gives: 1 on a counterexample or encoder
    /// disagreement, else 3 on any answer that is not a proof (unknown, vacuous), else 0.
    pub fn status(&self) -> u8 {
        let all = self.all();
        if all.kind("counterexample") + all.kind("disagreement") > 0 {
            1
        } else if all.kind("proved") + all.kind("bounded") < all.queries() {
            3
        } else {
            0
        }
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

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Histogram bucket upper bounds in milliseconds.
pub const BUCKETS: [f64; 8] = [1.0, 5.0, 20.0, 50.0, 100.0, 250.0, 1000.0, f64::INFINITY];

impl fmt::Display for Tally {
    /// Per pass and in total: answer counts (unknown ones by reason), the share of changed
    /// pairs proved for every run, p50/p90/p99 (to within 1%) and max, and a histogram.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in self.passes.iter().cloned().chain([self.all()]) {
            let a = &p.answers;
            writeln!(
                f,
                "{}: {} queries: {}; changed pairs proved for every run: {} of {} ({:.1}%); p50 {}, p90 {}, p99 {}, max {}",
                a.pass,
                p.queries(),
                a.counts(),
                p.changed_proved,
                p.changed,
                100.0 * p.changed_proved as f64 / p.changed.max(1) as f64,
                ms(a.latency.quantile(0.5)),
                ms(a.latency.quantile(0.9)),
                ms(a.latency.quantile(0.99)),
                ms(Duration::from_micros(a.latency.max_micros)),
            )?;
            let mut lo = 0.0;
            let mut parts = vec![];
            for (hi, n) in BUCKETS.iter().zip(p.buckets) {
                let label = if hi.is_infinite() { format!(">={lo}ms") } else { format!("<{hi}ms") };
                parts.push(format!("{label}:{n}"));
                lo = *hi;
            }
            writeln!(f, "  histogram {}", parts.join(" "))?;
            if p.changed == 0 {
                writeln!(f, "  changed pairs: none")?;
                continue;
            }
            let c = &p.changed_latency;
            writeln!(
                f,
                "  changed pairs: {}, {} unknown ({:.1}%); p50 {}, p90 {}, p99 {}, max {}",
                p.changed,
                p.changed_unknown,
                100.0 * p.changed_unknown as f64 / p.changed as f64,
                ms(c.quantile(0.5)),
                ms(c.quantile(0.9)),
                ms(c.quantile(0.99)),
                ms(Duration::from_micros(c.max_micros)),
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smt::Unknown;

    fn entry(pass: &str, answer: Answer, micros: u64, changed: bool) -> Entry {
        Entry { origin: "seed 1 %f".into(), pass: pass.into(), answer, time: Duration::from_micros(micros), finding: None, changed }
    }

    /// A tally that keeps no entries prints what one that keeps them prints, and its
    /// counts are those of the entries (one unknown by each reason, a vacuous answer that
    /// is not a proof, the changed pairs proved).
    #[test]
    fn the_counts_are_the_entries_counts_without_the_entries() {
        let answers = [
            entry("ssa", Answer::Proved, 800, true),
            entry("ssa", Answer::ProvedBounded(2), 3_000, true),
            entry("memopt", Answer::Unknown(Unknown::Budget), 400_000, true),
            entry("memopt", Answer::Unknown(Unknown::TimeLimit), 30_000_000, false),
            entry("memopt", Answer::Vacuous(2), 60_000, true),
            entry("ssa", Answer::Proved, 10, false),
        ];
        let mut kept = Tally::keeping_entries();
        let mut counted = Tally::default();
        for e in &answers {
            kept.add(e);
            counted.add(e);
        }
        assert_eq!(kept.entries.len(), 6);
        assert!(counted.entries.is_empty());
        assert_eq!(kept.to_string(), counted.to_string());
        let text = counted.to_string();
        assert!(text.contains("memopt: 3 queries: 0 proved, 0 bounded, 1 vacuous, 2 unknown (66.7%: 1 budget, 1 time limit)"), "{text}");
        assert!(text.contains("ssa: 3 queries: 2 proved, 1 bounded, 0 vacuous, 0 unknown (0.0%)"), "{text}");
        assert!(text.contains("changed pairs proved for every run: 1 of 4 (25.0%)"), "{text}");
        assert!(text.contains("max 30000.0 ms"), "{text}");
        assert!(text.contains("histogram <1ms:2 <5ms:1 <20ms:0 <50ms:0 <100ms:1 <250ms:0 <1000ms:1 >=1000ms:1"), "{text}");
        // Over the changed pairs alone (quantiles within 1%): memopt's budget unknown and
        // vacuous answer (its time-limit unknown left the function as it was), ssa's two.
        assert!(text.contains("memopt: 3 queries") && text.contains("  changed pairs: 2, 1 unknown (50.0%); p50 60."), "{text}");
        assert!(text.contains("  changed pairs: 4, 1 unknown (25.0%); p50 3.0 ms, p90 400.0 ms, p99 400.0 ms, max 400.0 ms"), "{text}");
        let mut unchanged = Tally::default();
        unchanged.add(&answers[5]);
        assert!(unchanged.to_string().contains("\n  changed pairs: none\n"), "{unchanged}");
        assert_eq!(counted.status(), 3);
        assert_eq!(counted.count("unknown"), 2);
    }
}
