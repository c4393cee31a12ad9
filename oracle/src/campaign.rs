//! Fuzzing campaigns over generated programs. Every run of every seed goes through
//! [`check_runs`]: the reference interpreter, the interpreter after every IR pass, and
//! the x86 code without and with the passes. Each failing case is written at once as a
//! case file (module, runs, the reference interpreter's outcome as the expectation, and
//! `;` lines naming the disagreeing stage), so that `tandem run FILE` replays the
//! disagreement and a campaign never loses a finding it reported.

use crate::check::{check_runs, CheckError, Problem};
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
    pub findings: Vec<Finding>,
    /// What each pass of the check pipeline did, summed over the cases (counted once per
    /// case, not per run).
    pub pass_stats: Vec<(String, Stats)>,
    pub elapsed: Duration,
}

impl Summary {
    fn add_pass_stats(&mut self, stats: &[(String, Stats)]) {
        for (pass, st) in stats {
            match self.pass_stats.iter_mut().find(|(p, _)| p == pass) {
                Some((_, total)) => total.merge(st),
                None => self.pass_stats.push((pass.clone(), st.clone())),
            }
        }
    }
}

/// Why a campaign stopped early.
#[derive(Debug)]
pub enum CampaignError {
    /// A run could not be checked (the emulator failed, or the generator made inputs
    /// that do not fit its own function).
    Check { seed: u64, error: CheckError },
    /// A finding could not be written.
    Write { path: PathBuf, error: std::io::Error },
}

impl std::fmt::Display for CampaignError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CampaignError::Check { seed, error } => write!(f, "seed {seed}: {error}"),
            CampaignError::Write { path, error } => write!(f, "cannot write {}: {error}", path.display()),
        }
    }
}

impl std::error::Error for CampaignError {}

/// Runs a campaign; `progress` is called after each seed with the summary so far.
pub fn run(c: &Campaign, emu: &mut Emulator, mut progress: impl FnMut(u64, &Summary)) -> Result<Summary, CampaignError> {
    let started = Instant::now();
    let mut s = Summary::default();
    let cfg = c.profile.config();
    for seed in c.start..c.start.saturating_add(c.count) {
        let g = gen::generate(seed, &cfg);
        s.cases += 1;
        let mut problems = vec![];
        let mut stats_taken = false;
        for f in &g.case.module.functions {
            let runs: Vec<_> = g.case.runs.iter().filter(|r| r.entry == f.name).collect();
            let mut inputs = vec![];
            for r in &runs {
                inputs.push(r.input(f).map_err(|m| CampaignError::Check {
                    seed,
                    error: CheckError::Input(crate::interp::InputError::Arguments(m)),
                })?);
            }
            let checked = check_runs(f, &inputs, emu).map_err(|error| CampaignError::Check { seed, error })?;
            for (r, c) in runs.iter().zip(checked) {
                s.runs += 1;
                if !stats_taken && !c.pass_stats.is_empty() {
                    s.add_pass_stats(&c.pass_stats);
                    stats_taken = true;
                }
                match &c.reference {
                    Err(_) => s.invalid += 1,
                    Ok(_) if c.problems.is_empty() => s.agreed += 1,
                    Ok(_) => problems.extend(c.problems.into_iter().map(|p| (r.line, p))),
                }
            }
        }
        if let Some((_, first)) = problems.first() {
            let path = write_finding(&c.out_dir, seed, c.profile, &problems)?;
            s.findings.push(Finding { seed, path, problem: first.clone() });
        }
        progress(seed, &s);
    }
    s.elapsed = started.elapsed();
    Ok(s)
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
    let mut problems = vec![];
    crate::emu::with_worker_emulator(|emu| -> Result<(), String> {
        for f in &case.module.functions {
            let runs: Vec<_> = case.runs.iter().filter(|r| r.entry == f.name).collect();
            let inputs = runs.iter().map(|r| r.input(f)).collect::<Result<Vec<_>, _>>()?;
            for (r, c) in runs.iter().zip(check_runs(f, &inputs, emu).map_err(|e| e.to_string())?) {
                for p in c.problems {
                    problems.push(format!("run at line {}: stage `{}`: {}", r.line, p.stage, p.lines.join("; ")));
                }
            }
        }
        Ok(())
    })
    .map_err(|e| e.to_string())??;
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
