//! The validator's answers in a campaign, in a size that does not grow with the campaign
//! (issue 23): per pass, the number of answers of each kind and a latency histogram with
//! logarithmic buckets ([`LatencyHistogram`]), from which the summary's p50/p90/p99 are
//! read. A campaign used to keep every answer to sort their times at the end, which at a
//! high `--verify-permille` is megabytes an hour in memory and in every state-file
//! snapshot.

pub use crate::measure::latency::LatencyHistogram;
pub use crate::smt::run::PassAnswers;
use serde::{Deserialize, Serialize};

/// Every pass's answers, one entry per pass in first-seen order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ValidatorAnswers {
    pub passes: Vec<PassAnswers>,
}

impl ValidatorAnswers {
    pub fn is_empty(&self) -> bool {
        self.passes.is_empty()
    }

    /// Counts one answer of kind `kind` for `pass` (an unknown one with its `reason`)
    /// that took `micros`.
    pub fn add(&mut self, pass: &str, kind: &str, reason: Option<&str>, micros: u64) {
        let i = match self.passes.iter().position(|p| p.pass == pass) {
            Some(i) => i,
            None => {
                self.passes.push(PassAnswers { pass: pass.to_string(), ..PassAnswers::default() });
                self.passes.len() - 1
            }
        };
        self.passes[i].add(kind, reason, micros);
    }

    /// One line per pass (in pipeline order; passes it does not name last, by name) and
    /// one for all passes.
    pub fn lines(&self) -> Vec<String> {
        let pipeline = tandem_core::passes::check_pipeline();
        let rank = |p: &str| pipeline.passes.iter().position(|q| q.name == p).unwrap_or(usize::MAX);
        let mut passes: Vec<&PassAnswers> = self.passes.iter().collect();
        passes.sort_by(|a, b| rank(&a.pass).cmp(&rank(&b.pass)).then_with(|| a.pass.cmp(&b.pass)));
        let mut all = PassAnswers { pass: "all passes".into(), ..PassAnswers::default() };
        let mut out = vec![];
        for p in passes {
            all.merge(p);
            out.push(p.line());
        }
        out.push(all.line());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A million answers take about as many buckets as ten thousand: the size does not grow
    /// with the number of answers.
    #[test]
    fn the_size_does_not_grow_with_the_answers() {
        let mut v = ValidatorAnswers::default();
        let mut small = 0;
        for i in 0..1_000_000u64 {
            let micros = 100 + (i * 7919) % 300_000;
            let kind = ["proved", "bounded", "unknown"][(i % 5 % 3) as usize];
            let reason = (kind == "unknown").then_some(["budget", "time limit"][(i % 2) as usize]);
            v.add(["ssa", "memopt", "cprop"][(i % 3) as usize], kind, reason, micros);
            if i == 9_999 {
                small = serde_json::to_string(&v).unwrap().len();
            }
        }
        let big = serde_json::to_string(&v).unwrap().len();
        assert!(big < small * 4, "{small} bytes after 10,000 answers, {big} after 1,000,000");
        assert_eq!(v.passes.iter().map(|p| p.latency.count()).sum::<u64>(), 1_000_000);
        let round: ValidatorAnswers = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
        assert_eq!(round, v);
    }

    #[test]
    fn lines_count_every_kind_in_pipeline_order() {
        let mut v = ValidatorAnswers::default();
        v.add("cprop", "proved", None, 1_000);
        v.add("ssa", "bounded", None, 2_000);
        v.add("ssa", "unknown", Some("time limit"), 300_000);
        v.add("cprop", "counterexample", None, 5_000);
        v.add("cprop", "vacuous", None, 1_000);
        v.add("cprop", "unknown", Some("budget"), 7_000);
        v.add("ssa", "unknown", Some("budget"), 6_000);
        let lines = v.lines();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("ssa: 0 proved, 1 bounded, 0 vacuous, 2 unknown (66.7%: 1 budget, 1 time limit), 0 counterexample(s)"), "{}", lines[0]);
        assert!(lines[1].starts_with("cprop: 1 proved, 0 bounded, 1 vacuous, 1 unknown (25.0%: 1 budget), 1 counterexample(s)"), "{}", lines[1]);
        assert!(lines[2].starts_with("all passes: 1 proved, 1 bounded, 1 vacuous, 3 unknown (42.9%: 2 budget, 1 time limit), 1 counterexample(s)"), "{}", lines[2]);
        assert!(lines[2].ends_with("p99 300.0 ms"), "{}", lines[2]);
    }

    /// Unknown answers counted before reasons were kept (a resumed old state file) are
    /// shown as unrecorded, never given a reason they did not have.
    #[test]
    fn unknowns_without_a_reason_are_unrecorded() {
        let old: PassAnswers = serde_json::from_str(r#"{"pass": "ssa", "kinds": {"unknown": 3}, "latency": {"buckets": {"5": 3}, "max_micros": 4}}"#).unwrap();
        let mut v = ValidatorAnswers { passes: vec![old] };
        v.add("ssa", "unknown", Some("budget"), 3);
        assert!(v.lines()[0].contains("4 unknown (100.0%: 1 budget, 3 unrecorded)"), "{}", v.lines()[0]);
    }
}
