//! Fuzzing campaigns over generated programs. Every run of every seed goes through
//! [`check_case`]: the reference interpreter, the interpreter after every IR pass, and
//! the x86 code without and with the passes. Each failing case is written at once as a
//! case file (module, runs, the reference interpreter's outcome as the expectation, and
//! `;` lines naming the disagreeing stage), so that `tandem run FILE` replays the
//! disagreement and a campaign never loses a finding it reported.

use crate::check::{check_case, CaseCheckError, CheckError, Problem};
use crate::emu::Emulator;
use crate::gen::{self, Profile};
use tandem_core::passes::Stats;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What a campaign covers.
#[derive(Clone, Debug)]
pub struct Campaign {
    /// The first seed.
    pub start: u64,
    /// How many consecutive seeds.
    pub count: u64,
    pub profile: Profile,
    /// Where finding files go (created when needed).
    pub out_dir: PathBuf,
}

/// One failing case.
#[derive(Clone, Debug)]
pub struct Finding {
    pub seed: u64,
    /// The replayable case file written for it.
    pub path: PathBuf,
    /// The first problem, for the summary.
    pub problem: Problem,
}

/// What a campaign saw.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub cases: u64,
    pub runs: u64,
    /// Runs the reference interpreter found invalid (not compared).
    pub invalid: u64,
    /// Runs on which every stage agreed.
    pub agreed: u64,
    /// Runs without a problem on which some stage could not run because the program
    /// exceeds a limit of the harness (not compared there, not a finding).
    pub limited: u64,
    pub findings: Vec<Finding>,
    /// What each pass of the check pipeline did, summed over the cases (counted once per
    /// case, not per run), in a fixed order: passes in pipeline order (`cprop on HIR`
    /// last), counters by name.
    pub pass_stats: Vec<(String, Stats)>,
    /// For each pass and counter, the number of cases in which the counter fired (was
    /// non-zero), in the order of `pass_stats`.
    pub fired: Vec<(String, Stats)>,
    pub elapsed: Duration,
}

impl Summary {
    fn add_pass_stats(&mut self, stats: &[(String, Stats)]) {
        for (pass, st) in stats {
            let fired = Stats { counters: st.counters.iter().filter(|(_, v)| *v > 0).map(|(k, _)| (*k, 1)).collect() };
            merge_stats(&mut self.pass_stats, pass, st);
            merge_stats(&mut self.fired, pass, &fired);
        }
    }

    /// Puts the statistics in their fixed order, whatever order the workers delivered
    /// the cases in, so that two identical campaigns print the same text.
    fn sort_stats(&mut self) {
        let pipeline = tandem_core::passes::check_pipeline();
        let rank = |pass: &str| pipeline.passes.iter().position(|p| p.name == pass).unwrap_or(usize::MAX);
        for list in [&mut self.pass_stats, &mut self.fired] {
            list.sort_by(|(a, _), (b, _)| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
            for (_, st) in list.iter_mut() {
                st.counters.sort_by_key(|(k, _)| *k);
            }
        }
    }

    /// The share of cases in which counter `name` of `pass` fired, in percent.
    pub fn fired_percent(&self, pass: &str, name: &str) -> f64 {
        let n = self.fired.iter().find(|(p, _)| p == pass).map_or(0, |(_, st)| st.get(name));
        100.0 * n as f64 / self.cases.max(1) as f64
    }
}

/// Adds `st` to the entry of `pass` in `list` (creating it).
fn merge_stats(list: &mut Vec<(String, Stats)>, pass: &str, st: &Stats) {
    match list.iter_mut().find(|(p, _)| p == pass) {
        Some((_, total)) => total.merge(st),
        None => list.push((pass.to_string(), st.clone())),
    }
}

/// Why a campaign stopped early.
#[derive(Debug)]
pub enum CampaignError {
    /// A run could not be checked (the emulator failed, or the generator made inputs
    /// that do not fit its own function).
    Check { seed: u64, error: CheckError },
    /// A case's runs could not be checked (its inputs do not fit its function).
    Case { seed: u64, error: CaseCheckError },
    /// A finding could not be written.
    Write { path: PathBuf, error: std::io::Error },
}

impl std::fmt::Display for CampaignError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CampaignError::Check { seed, error } => write!(f, "seed {seed}: {error}"),
            CampaignError::Case { seed, error } => write!(f, "seed {seed}: {error}"),
            CampaignError::Write { path, error } => write!(f, "cannot write {}: {error}", path.display()),
        }
    }
}

impl std::error::Error for CampaignError {}

/// Runs a campaign on `jobs` threads, each with its own emulator, taking seeds in turn.
/// Findings are written by the calling thread as each seed's result arrives, before
/// `progress` (called after each seed with the summary so far) can report them; the
/// summary lists them in seed order.
pub fn run(
    c: &Campaign,
    jobs: usize,
    mut progress: impl FnMut(u64, &Summary),
) -> Result<Summary, CampaignError> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::mpsc;
    let started = Instant::now();
    let cfg = c.profile.config();
    let end = c.start.saturating_add(c.count);
    let next = AtomicU64::new(c.start);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(u64, Result<SeedOutcome, CampaignError>)>();
    let mut s = Summary::default();
    let result = std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            let tx = tx.clone();
            let (next, stop, cfg) = (&next, &stop, &cfg);
            scope.spawn(move || {
                let mut emu = match Emulator::new() {
                    Ok(e) => e,
                    Err(e) => {
                        let error = CheckError::Emulator(e);
                        let _ = tx.send((c.start, Err(CampaignError::Check { seed: c.start, error })));
                        return;
                    }
                };
                while !stop.load(Ordering::Relaxed) {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= end {
                        break;
                    }
                    if tx.send((seed, check_seed(seed, cfg, &mut emu))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (seed, outcome) in rx {
            let recorded = outcome.and_then(|o| record(c, &mut s, o));
            if let Err(e) = recorded {
                stop.store(true, Ordering::Relaxed);
                return Err(e);
            }
            progress(seed, &s);
        }
        Ok(())
    });
    result?;
    s.findings.sort_by_key(|f| f.seed);
    s.sort_stats();
    s.elapsed = started.elapsed();
    Ok(s)
}

/// What checking one seed found.
struct SeedOutcome {
    seed: u64,
    runs: u64,
    invalid: u64,
    agreed: u64,
    limited: u64,
    problems: Vec<(u32, Problem)>,
    pass_stats: Vec<(String, Stats)>,
}

/// Generates the case of `seed` and checks every run through every stage.
fn check_seed(seed: u64, cfg: &gen::Config, emu: &mut Emulator) -> Result<SeedOutcome, CampaignError> {
    let g = gen::generate(seed, cfg);
    let checked = check_case(&g.case, emu).map_err(|e| CampaignError::Case { seed, error: e })?;
    let mut o = SeedOutcome { seed, runs: 0, invalid: 0, agreed: 0, limited: 0, problems: vec![], pass_stats: vec![] };
    for (r, c) in g.case.runs.iter().zip(checked) {
        o.runs += 1;
        if o.pass_stats.is_empty() {
            o.pass_stats = c.pass_stats;
        }
        match &c.reference {
            Err(_) => o.invalid += 1,
            Ok(_) if c.problems.is_empty() && !c.limits.is_empty() => o.limited += 1,
            Ok(_) if c.problems.is_empty() => o.agreed += 1,
            Ok(_) => o.problems.extend(c.problems.into_iter().map(|p| (r.line, p))),
        }
    }
    Ok(o)
}

/// Adds one seed's outcome to the summary, writing its finding file first if it has one.
fn record(c: &Campaign, s: &mut Summary, o: SeedOutcome) -> Result<(), CampaignError> {
    s.cases += 1;
    s.runs += o.runs;
    s.invalid += o.invalid;
    s.agreed += o.agreed;
    s.limited += o.limited;
    s.add_pass_stats(&o.pass_stats);
    if let Some((_, first)) = o.problems.first() {
        let path = write_finding(&c.out_dir, o.seed, c.profile, &o.problems)?;
        s.findings.push(Finding { seed: o.seed, path, problem: first.clone() });
    }
    Ok(())
}

/// Writes the case of `seed` with its problems as leading comments; returns the path.
fn write_finding(dir: &Path, seed: u64, profile: Profile, problems: &[(u32, Problem)]) -> Result<PathBuf, CampaignError> {
    let path = dir.join(format!("{}-seed-{seed}.tir", profile.name()));
    let mut text = String::new();
    for (_, p) in problems {
        text += &format!("; stage `{}` disagrees with the reference interpreter:\n", p.stage);
        for l in &p.lines {
            text += &format!(";   {l}\n");
        }
    }
    text += &gen::render(seed, profile);
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(&path, &text)
    };
    write().map_err(|error| CampaignError::Write { path: path.clone(), error })?;
    Ok(path)
}

/// The check of the `differential` fuzz target: a test case made from libFuzzer's bytes
/// goes through the generator's own check ([`gen::check_test_case`]) and then every run
/// through every stage, in this thread's emulator. `Err` names each disagreeing stage.
pub fn check_test_case_stages(t: &gen::TestCase) -> Result<(), String> {
    gen::check_test_case(t).map_err(|e| e.to_string())?;
    let case = &t.case;
    let checked = crate::emu::with_worker_emulator(|emu| check_case(case, emu)).map_err(|e| e.to_string())?;
    let problems: Vec<String> = case
        .runs
        .iter()
        .zip(checked.map_err(|e| e.to_string())?)
        .flat_map(|(r, c)| {
            c.problems.into_iter().map(move |p| format!("run at line {}: stage `{}`: {}", r.line, p.stage, p.lines.join("; ")))
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The differential fuzz target's check, for about a second on random bytes (STYLE.md:
    /// `cargo test` exercises every fuzz target).
    #[test]
    fn the_differential_fuzz_check_runs_on_random_bytes() {
        use arbitrary::{Arbitrary, Unstructured};
        use rand::{RngCore, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x7a4d);
        let start = Instant::now();
        let mut n = 0;
        while start.elapsed() < Duration::from_secs(1) || n < 10 {
            let mut bytes = vec![0u8; (rng.next_u32() % 4096) as usize];
            rng.fill_bytes(&mut bytes);
            let t = gen::TestCase::arbitrary(&mut Unstructured::new(&bytes)).expect("a test case from any bytes");
            if let Err(e) = check_test_case_stages(&t) {
                panic!("{e}\n{}", t.case.print());
            }
            n += 1;
        }
    }

    /// A finding file is a case file `tandem run` replays as it is: it parses, verifies,
    /// its expectations are the reference interpreter's, and the problem lines written
    /// above it are comments that do not disturb it.
    #[test]
    fn a_finding_file_replays() {
        let dir = std::env::temp_dir().join(format!("tandem-finding-{}", std::process::id()));
        let problem = Problem {
            stage: "x86".into(),
            lines: vec!["end: expected return 1, got return 2".into(), "trace event 0: expected nothing".into()],
            side_by_side: None,
        };
        let path = write_finding(&dir, 7, Profile::Small, &[(1, problem)]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("; stage `x86` disagrees with the reference interpreter:\n;   end: expected return 1"));
        let mut emu = Emulator::new().unwrap();
        let report = crate::replay::replay_file(&path, false, &mut emu).unwrap();
        assert!(!report.runs.is_empty());
        assert!(report.runs.iter().all(|r| r.mismatches.is_empty()), "{:?}", report.runs);
    }
}
