//! Fuzzing campaigns over generated programs (`tandem fuzz`). Every run of every seed goes
//! through [`check_case`]: the reference interpreter, the interpreter after every IR pass,
//! and the x86 code without and with the passes.
//!
//! * **The seed space.** A campaign covers the seeds `start, start+1, ...` (`count` of them,
//!   or without end when only a time bound is given). [`Shard`] `I/N` takes the seeds whose
//!   offset from `start` is `I` modulo `N`, so `N` machines never test the same seed and
//!   the shards together test exactly the seeds of the unsharded campaign. A seed's
//!   *position* is its rank within the shard; workers take positions in increasing order.
//! * **Findings.** A failing case is written at once as a case file (the problems as `;`
//!   comment lines, then the generated module and runs with the reference interpreter's
//!   outcome as the expectation), so that `tandem run FILE` replays it; it is written to a
//!   temporary file and renamed, so a kill leaves no partial file. Each finding has a
//!   [`signature`] (the guilty stage or pass and the kind of difference); the first case of
//!   each signature is reduced ([`crate::campaign::reduce`]) and the reduced case written beside it.
//! * **Crash safety.** The output folder holds `journal.jsonl`, one line per completed
//!   seed (its counts, pass counters and finding), appended after the seed's finding files
//!   exist, and `state.json`: the configuration and a snapshot of the progress (the
//!   completed positions as a prefix up to a watermark plus the positions completed above
//!   it, since workers finish out of order; the summary so far; and how many bytes of the
//!   journal the snapshot covers), rewritten atomically about once a second (less often
//!   when the snapshot is big). [`resume`]
//!   starts from the snapshot and applies the journal lines after it, then tests exactly
//!   the positions not completed, so after `kill -9` no seed is tested twice or skipped.
//!   When the journal outgrows [`Campaign::journal_limit`] it is emptied right after a
//!   snapshot that covers it, so a long campaign's folder stays small.

use crate::judge::check::{check_case, CaseCheckError, CheckError, Problem};
use super::answers::ValidatorAnswers;
use super::findings::{problem_comments, signature, Finding, SignatureGroup};
use crate::exec::x86::{Infidelity, X86Mode, X86};
use crate::gen::{self, Profile};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tandem_core::passes::Stats;

/// Which generator profile a seed uses: one for all, or one chosen from the seed.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum ProfileChoice {
    One(Profile),
    /// Each seed's profile is a fixed function of the seed ([`ProfileChoice::for_seed`]).
    Mix,
}

impl ProfileChoice {
    pub fn from_name(name: &str) -> Option<ProfileChoice> {
        if name == "mix" {
            return Some(ProfileChoice::Mix);
        }
        Profile::from_name(name).map(ProfileChoice::One)
    }

    pub fn name(self) -> &'static str {
        match self {
            ProfileChoice::One(p) => p.name(),
            ProfileChoice::Mix => "mix",
        }
    }

    /// The profile of `seed`: for `mix`, picked by a SplitMix64 hash of the seed, so that
    /// neighbouring seeds spread over the profiles and every machine picks the same one.
    pub fn for_seed(self, seed: u64) -> Profile {
        match self {
            ProfileChoice::One(p) => p,
            ProfileChoice::Mix => Profile::ALL[(splitmix(seed) % Profile::ALL.len() as u64) as usize],
        }
    }
}

/// Shard `index` of `count`: the seeds whose offset from the first seed is `index`
/// modulo `count`.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Reads `I/N` with `I < N`.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let bad = || format!("`{s}`: expected I/N with 0 <= I < N, e.g. 0/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (i.trim().parse::<u64>().map_err(|_| bad())?, n.trim().parse::<u64>().map_err(|_| bad())?);
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What a campaign covers.
#[derive(Clone, Debug)]
pub struct Campaign {
    /// The first seed.
    pub start: u64,
    /// How many consecutive seeds the whole (unsharded) campaign covers; `None`: no end
    /// (then `seconds` bounds it).
    pub count: Option<u64>,
    /// Stop taking new seeds after this many seconds (seeds under way are finished).
    pub seconds: Option<u64>,
    pub profile: ProfileChoice,
    pub shard: Shard,
    /// Where finding files, the state file and the journal go (created when needed).
    pub out_dir: PathBuf,
    /// Reduce the first case of each new signature.
    pub reduce: bool,
    /// The journal is emptied (after a snapshot that covers it) when it grows past this
    /// many bytes ([`JOURNAL_LIMIT`] by default).
    pub journal_limit: u64,
    /// The share of seeds (per mille, chosen by a hash of the seed) whose passes are also
    /// translation-validated with Z3 ([`VALIDATOR_OPTIONS`]); 0 turns it off.
    pub verify_permille: u32,
    /// The x86 machines (`None`: both where the CPU runs 32-bit code, else Unicorn).
    pub x86: Option<X86Mode>,
}

/// The default [`Campaign::verify_permille`] of a campaign on `profile`: the largest share
/// that keeps the validator's time within the time of execution, which differs more than
/// twofold between profiles. Measured at `e4f8429` with the campaign itself, one job, two
/// profiles at a time, per seed: execution, the wall time of `tandem fuzz --seed 20000
/// --count 2000 --jobs 1 --verify-permille 0` over 2,000; validation, that of the same
/// campaign's first 1,000 seeds with `--verify-permille 1000` (every pass of every seed
/// at [`VALIDATOR_OPTIONS`] in the validator's child, the self-check on one seed in
/// [`SELF_CHECK_ONE_IN`]) over 1,000, less the execution:
///
/// | profile | execution | validation | share |
/// |---|---|---|---|
/// | small | 1.2 ms | 15 ms | 80‰ |
/// | default | 4.9 ms | 54 ms | 89‰ |
/// | loops | 6.2 ms | 144 ms | 42‰ |
/// | memory | 4.0 ms | 135 ms | 29‰ |
/// | ssa | 6.0 ms | 71 ms | 84‰ |
/// | mix | 4.2 ms | 74 ms | 57‰ |
///
/// Each rounded down. Most of a validated seed's time is the few pairs the check by term
/// identity does not prove (0.7-1.2% of changed pairs), which go to Z3. The same
/// measurement at `9f24b25` gave 79, 83, 41, 29, 78 and 61‰. At `966278c` (validation
/// then the CPU time of `tandem verify` per seed, before most of the identity check's
/// rules) a validated seed cost 128-273 ms and the shares were 9-23‰ (small 89‰).
pub fn default_verify_permille(profile: &ProfileChoice) -> u32 {
    match profile {
        ProfileChoice::One(Profile::Small) => 80,
        ProfileChoice::One(Profile::Default) => 89,
        ProfileChoice::One(Profile::Loops) => 42,
        ProfileChoice::One(Profile::Memory) => 29,
        ProfileChoice::One(Profile::Ssa) => 84,
        ProfileChoice::Mix => 57,
    }
}

/// The validator's bound and resource budget in campaigns: the encoding cap of `tandem
/// verify` and a third of its resource budget (60,000,000 units), at bound 2. With a
/// tenth of this budget and a quarter of the cap (2,000,000 units, 50,000 nodes), the
/// simulation check ran out on most functions of any size and the bounded check then
/// took the rest: on 80 validated seeds, 376 of 503 answers of the default profile were
/// proofs for every run (82 bounded, 17 vacuous, 28 unknown) and 285 of 516 of the loops
/// profile; with these budgets 497 and 507, for 30% and 4% more CPU time.
pub const VALIDATOR_OPTIONS: crate::smt::Options = crate::smt::Options { bound: 2, rlimit: 20_000_000, max_nodes: 200_000 };

/// Whether seed `seed` is one of the `permille` whose passes the validator checks.
pub fn verified_seed(seed: u64, permille: u32) -> bool {
    // Another stream than the profile mix's, so that the choice does not follow it.
    splitmix(seed ^ 0x5a5a_5a5a_5a5a_5a5a) % 1000 < permille as u64
}

/// The encoder's self-check runs on one validated seed in this many
/// ([`self_checked_seed`]). It compares the encoding of the function as generated and
/// after every pass with the interpreter on each of the seed's runs, one solver query
/// per run and form, and took 46.5 s of the 52.4 s the validator added to a 2,000-seed
/// default campaign that validated every seed at 50‰ (seeds 20000-21999, 91 validated;
/// one seed's self-check alone took 30 s), where the validation itself took 5.9 s: on
/// every validated seed it, not the validation, kept the validated share small. It
/// checks the encoder, not the passes, and one seed in 16 still self-checks dozens of
/// seeds in a long campaign (`tandem verify --self-check` checks any number).
pub const SELF_CHECK_ONE_IN: u64 = 16;

/// Whether a validated seed also runs the encoder's self-check ([`SELF_CHECK_ONE_IN`]).
pub fn self_checked_seed(seed: u64) -> bool {
    // A third stream, so that the choice does not follow the validated share's.
    splitmix(seed ^ 0x3c3c_3c3c_3c3c_3c3c) % SELF_CHECK_ONE_IN == 0
}

/// SplitMix64's finalizer: a fixed function of the seed that sends neighbouring seeds far
/// apart (the profile of a mix campaign, the validated share).
fn splitmix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One answer of the validator in a campaign: the pass, the answer's kind
/// (`smt::Answer::kind`), why it is unknown if it is (`smt::Unknown::reason`) and how long
/// the query took.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ValidatorAnswer {
    pub pass: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub micros: u64,
}

/// The default [`Campaign::journal_limit`]: 16 MiB (about 40,000 seeds).
pub const JOURNAL_LIMIT: u64 = 16 << 20;

/// The seeds `--seed start --count n` name (`tandem fuzz`, `tandem verify --generated`,
/// `tandem gen`; `tandem bench` calls its count `--seeds`, given as `count_flag`), or why
/// there are none: an empty range, or one past the last seed (the last seed alone is a
/// range of one).
pub fn seed_range(start: u64, n: u64, count_flag: &str) -> Result<std::ops::RangeInclusive<u64>, String> {
    if n == 0 {
        return Err(format!("{count_flag} 0: the seed range is empty"));
    }
    match start.checked_add(n - 1) {
        Some(last) => Ok(start..=last),
        None => Err(format!(
            "--seed {start} {count_flag} {n}: the seed range runs past the last seed {} (at most {} seeds from there)",
            u64::MAX,
            u64::MAX - start + 1
        )),
    }
}

/// Why a campaign's configuration is refused.
pub fn validate(c: &Campaign) -> Result<(), String> {
    if let Some(n) = c.count {
        seed_range(c.start, n, "--count")?;
        if c.shard.index >= n {
            return Err(format!("shard {} of {n} seed(s) is empty", c.shard));
        }
    }
    if c.seconds == Some(0) {
        return Err("--seconds 0: the campaign would test nothing".into());
    }
    Ok(())
}

impl Campaign {
    /// The seed at `pos` within this campaign's shard, or `None` past its end.
    pub fn seed_at(&self, pos: u64) -> Option<u64> {
        let offset = pos.checked_mul(self.shard.count)?.checked_add(self.shard.index)?;
        if self.count.is_some_and(|n| offset >= n) {
            return None;
        }
        self.start.checked_add(offset)
    }

    /// The configuration as reports record it.
    pub fn config_record(&self, jobs: usize) -> ConfigRecord {
        ConfigRecord {
            seed: self.start,
            count: self.count,
            seconds: self.seconds,
            profile: self.profile.name().to_string(),
            shard: self.shard.to_string(),
            jobs,
            out: self.out_dir.display().to_string(),
            reduce: self.reduce,
            journal_limit: self.journal_limit,
            verify_permille: self.verify_permille,
            x86: self.x86.map(|m| m.to_string()),
        }
    }
}

/// The configuration as the state file and the JSON summary record it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConfigRecord {
    pub seed: u64,
    pub count: Option<u64>,
    pub seconds: Option<u64>,
    pub profile: String,
    pub shard: String,
    pub jobs: usize,
    pub out: String,
    pub reduce: bool,
    #[serde(default = "default_journal_limit")]
    pub journal_limit: u64,
    #[serde(default)]
    pub verify_permille: u32,
    /// `unicorn`, `native` or `both`; absent: the default.
    #[serde(default)]
    pub x86: Option<String>,
}

fn default_journal_limit() -> u64 {
    JOURNAL_LIMIT
}

impl ConfigRecord {
    fn campaign(&self) -> Result<Campaign, String> {
        Ok(Campaign {
            start: self.seed,
            count: self.count,
            seconds: self.seconds,
            profile: ProfileChoice::from_name(&self.profile).ok_or_else(|| format!("unknown profile `{}`", self.profile))?,
            shard: Shard::parse(&self.shard)?,
            out_dir: PathBuf::from(&self.out),
            reduce: self.reduce,
            journal_limit: self.journal_limit,
            verify_permille: self.verify_permille,
            x86: self.x86.as_deref().map(X86Mode::parse).transpose()?,
        })
    }
}

/// Counters per pass: counter name to value.
pub type PassCounters = Vec<(String, BTreeMap<String, u64>)>;

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
    /// In seed order.
    pub findings: Vec<Finding>,
    /// The case files of seeds on which Unicorn and the CPU disagree (emulator
    /// infidelities, not findings), in the order they completed.
    pub infidelities: Vec<PathBuf>,
    /// What each pass of the check pipeline did, summed over the cases (counted once per
    /// case, not per run), in a fixed order: passes in pipeline order (`cprop on HIR`
    /// last), counters by name.
    pub pass_stats: PassCounters,
    /// For each pass and counter, the number of cases in which the counter fired (was
    /// non-zero), in the order of `pass_stats`.
    pub fired: PassCounters,
    /// Time spent testing, over every session of a resumed campaign.
    pub elapsed: Duration,
    /// The validator's answers on the verified share of seeds: counts and latency
    /// histograms per pass, whose size does not grow with the campaign.
    pub validator: ValidatorAnswers,
    /// Throughput over time: (seconds of testing, cases completed by then), a sample at
    /// least a second and at least 0.5% of the elapsed time after the one before, so that
    /// a day-long campaign keeps about 1,500 of them (`index.html` draws them).
    pub samples: Vec<(f64, u64)>,
    /// The signal that interrupted this session ([`super::interrupt`]), if one did: the
    /// campaign is not complete and `--resume` continues it.
    pub interrupted: Option<i32>,
    /// Distinguishing-value coverage of the cases (`gen::distinguish`).
    pub distinguish: gen::distinguish::Coverage,
    /// Why this session stopped before its bounds besides a signal: a seed whose check ran
    /// past the watchdog ([`seed_watchdog`]), whose thread cannot be stopped. Empty when none did.
    pub stopped: Vec<String>,
    /// The seeds under way that this session gave up on when it stopped (after a signal's
    /// grace, [`INTERRUPT_GRACE`], or the watchdog): not completed, so `--resume` tests
    /// them again; one line each, with the stage they were in.
    pub abandoned: Vec<String>,
}

impl Summary {
    /// One line per pass the validator checked (in pipeline order) and one for all: the
    /// answers by kind and the latency quantiles.
    pub fn validator_lines(&self) -> Vec<String> {
        self.validator.lines()
    }

    fn add(&mut self, r: &SeedRecord) {
        self.cases += 1;
        self.runs += r.runs;
        self.invalid += r.invalid;
        self.agreed += r.agreed;
        self.limited += r.limited;
        for (pass, counters) in &r.stats {
            let fired: BTreeMap<String, u64> = counters.iter().filter(|(_, v)| **v > 0).map(|(k, _)| (k.clone(), 1)).collect();
            merge_counters(&mut self.pass_stats, pass, counters);
            merge_counters(&mut self.fired, pass, &fired);
        }
        if let Some(f) = &r.finding {
            let at = self.findings.partition_point(|g| g.seed < f.seed);
            self.findings.insert(at, f.clone());
        }
        for a in &r.validator {
            self.validator.add(&a.pass, &a.kind, a.reason.as_deref(), a.micros);
        }
        if self.samples.last().is_none_or(|&(t, _)| r.t - t >= (t / 200.0).max(1.0)) {
            self.samples.push((r.t, self.cases));
        }
        self.infidelities.extend(r.infidelity.iter().cloned());
        self.distinguish.add_program_names(&r.evaluated, &r.distinguished);
    }

    /// Puts the statistics in their fixed order, whatever order the workers delivered
    /// the cases in, so that two identical campaigns print the same text.
    fn sort_stats(&mut self) {
        let pipeline = tandem_core::passes::check_pipeline();
        let rank = |pass: &str| pipeline.passes.iter().position(|p| p.name == pass).unwrap_or(usize::MAX);
        for list in [&mut self.pass_stats, &mut self.fired] {
            list.sort_by(|(a, _), (b, _)| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
        }
    }

    /// The share of cases in which counter `name` of `pass` fired, in percent.
    pub fn fired_percent(&self, pass: &str, name: &str) -> f64 {
        let n = self.fired.iter().find(|(p, _)| p == pass).and_then(|(_, st)| st.get(name)).copied().unwrap_or(0);
        100.0 * n as f64 / self.cases.max(1) as f64
    }

    /// The signature a finding whose first problem shows `found` is grouped under, when
    /// the campaign has seen `found` before: where the first finding found with it went
    /// (re-signed by its reduced case or not), or the group of that name another
    /// finding was re-signed into (merged with it, not reduced again). `None`: new.
    ///
    /// Only findings of seeds below `below` count: a campaign triages its findings in seed
    /// order ([`Session::triage`]), so the decision never depends on which worker finished first.
    pub fn known_signature(&self, found: &str, below: u64) -> Option<String> {
        let earlier = || self.findings.iter().take_while(|f| f.seed < below);
        let first = earlier().find(|f| f.found_signature.as_deref().unwrap_or(&f.signature) == found);
        let into = || earlier().find(|f| f.signature == found);
        first.or_else(into).map(|f| f.signature.clone())
    }

    /// The findings grouped by signature, most frequent first (then by first seed).
    pub fn signatures(&self) -> Vec<SignatureGroup> {
        let mut groups: Vec<SignatureGroup> = vec![];
        for f in &self.findings {
            match groups.iter_mut().find(|g| g.signature == f.signature) {
                Some(g) => {
                    g.count += 1;
                    if g.reduced.is_none() {
                        g.reduced = f.reduced.clone();
                    }
                }
                None => groups.push(SignatureGroup {
                    signature: f.signature.clone(),
                    count: 1,
                    representative: f.clone(),
                    reduced: f.reduced.clone(),
                }),
            }
        }
        groups.sort_by(|a, b| b.count.cmp(&a.count).then(a.representative.seed.cmp(&b.representative.seed)));
        groups
    }
}

/// Adds `counters` to the entry of `pass` in `list` (creating it).
fn merge_counters(list: &mut PassCounters, pass: &str, counters: &BTreeMap<String, u64>) {
    let i = match list.iter().position(|(p, _)| p == pass) {
        Some(i) => i,
        None => {
            list.push((pass.to_string(), BTreeMap::new()));
            list.len() - 1
        }
    };
    for (k, v) in counters {
        *list[i].1.entry(k.clone()).or_insert(0) += v;
    }
}

/// Why a campaign stopped early or could not start.
#[derive(Debug)]
pub enum CampaignError {
    /// A run could not be checked (the emulator failed, or the generator made inputs
    /// that do not fit its own function).
    Check { seed: u64, error: CheckError },
    /// A case's runs could not be checked (its inputs do not fit its function).
    Case { seed: u64, error: CaseCheckError },
    /// A file of the output folder could not be written.
    Write { path: PathBuf, error: std::io::Error },
    /// The configuration or the output folder is not usable (a state file that does not
    /// parse, a folder that already holds another campaign, an empty seed range).
    Setup(String),
}

impl std::fmt::Display for CampaignError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CampaignError::Check { seed, error } => write!(f, "seed {seed}: {error}"),
            CampaignError::Case { seed, error } => write!(f, "seed {seed}: {error}"),
            CampaignError::Write { path, error } => write!(f, "cannot write {}: {error}", path.display()),
            CampaignError::Setup(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CampaignError {}

/// The journal line of one completed seed.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct SeedRecord {
    /// Position within the shard.
    pos: u64,
    seed: u64,
    runs: u64,
    invalid: u64,
    agreed: u64,
    #[serde(default)]
    limited: u64,
    /// Per pass, the counters of this case.
    stats: Vec<(String, BTreeMap<String, u64>)>,
    #[serde(default)]
    validator: Vec<ValidatorAnswer>,
    /// The slip pairs the runs evaluated and told apart (`gen::distinguish`).
    #[serde(default)]
    evaluated: Vec<String>,
    #[serde(default)]
    distinguished: Vec<String>,
    finding: Option<Finding>,
    /// The case file of this seed's emulator infidelities, if it has any.
    #[serde(default)]
    infidelity: Option<PathBuf>,
    /// Seconds of testing (over all sessions) when the seed completed.
    t: f64,
}

/// The state file.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct StateFile {
    /// The format of this file; 1.
    version: u32,
    config: ConfigRecord,
    /// Whether the campaign reached its end (seed count or time bound).
    finished: bool,
    /// Every position below it is completed.
    watermark: u64,
    /// The completed positions above the watermark.
    done_above: Vec<u64>,
    /// The bytes of the journal this snapshot covers; the lines after them are newer.
    journal_offset: u64,
    /// The summary of the completed positions.
    cases: u64,
    runs: u64,
    invalid: u64,
    agreed: u64,
    #[serde(default)]
    limited: u64,
    elapsed_seconds: f64,
    pass_stats: PassCounters,
    fired: PassCounters,
    findings: Vec<Finding>,
    /// Every answer, as state files before issue 23 kept them (read, never written: a
    /// resumed campaign folds them into `validator_answers`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    validator: Vec<ValidatorAnswer>,
    #[serde(default)]
    samples: Vec<(f64, u64)>,
    /// The case files of the emulator infidelities so far.
    #[serde(default)]
    infidelities: Vec<PathBuf>,
    /// The validator's answers, counted (see [`ValidatorAnswers`]).
    #[serde(default)]
    validator_answers: ValidatorAnswers,
    /// Absent from state files written before the coverage existed.
    #[serde(default)]
    distinguish: gen::distinguish::Coverage,
    /// Every finding at a position below it is triaged (signature decided, the first of
    /// its signature reduced); absent from older state files, whose findings were triaged
    /// when they completed (then the watermark).
    #[serde(default)]
    triaged: Option<u64>,
}

pub const STATE_FILE: &str = "state.json";
pub const JOURNAL_FILE: &str = "journal.jsonl";

/// Completed positions: a prefix up to `watermark` and the set above it.
#[derive(Clone, Debug, Default)]
struct Completed {
    watermark: u64,
    above: BTreeSet<u64>,
}

impl Completed {
    fn contains(&self, pos: u64) -> bool {
        pos < self.watermark || self.above.contains(&pos)
    }

    fn insert(&mut self, pos: u64) {
        if pos >= self.watermark {
            self.above.insert(pos);
        }
        while self.above.remove(&self.watermark) {
            self.watermark += 1;
        }
    }
}

/// Hands out the positions still to test, in increasing order: first the holes below
/// the highest completed position, then the positions after it.
struct Dispatch {
    holes: VecDeque<u64>,
    next: u64,
    stopped: bool,
}

impl Dispatch {
    fn new(done: &Completed) -> Dispatch {
        let top = done.above.iter().next_back().map_or(done.watermark, |&m| m + 1);
        let holes = (done.watermark..top).filter(|p| !done.contains(*p)).collect();
        Dispatch { holes, next: top, stopped: false }
    }

    fn take(&mut self) -> u64 {
        self.holes.pop_front().unwrap_or_else(|| {
            self.next += 1;
            self.next - 1
        })
    }
}

/// Writes `text` to `path` through a temporary file in the same folder and a rename, so
/// that the file either does not exist or is complete.
pub fn write_atomic(path: &Path, text: &[u8]) -> Result<(), CampaignError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.tmp"));
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|error| CampaignError::Write { path: path.to_path_buf(), error })
}

/// Starts a new campaign in `c.out_dir` (which must not hold one already) on `jobs`
/// threads. `progress` is called after each completed seed with the summary so far.
pub fn run(c: &Campaign, jobs: usize, progress: impl FnMut(&Summary)) -> Result<Summary, CampaignError> {
    validate(c).map_err(CampaignError::Setup)?;
    let state = c.out_dir.join(STATE_FILE);
    if state.exists() {
        return Err(CampaignError::Setup(format!(
            "{} holds a campaign already: continue it with --resume {}, or choose another --out",
            c.out_dir.display(),
            c.out_dir.display()
        )));
    }
    let journal = c.out_dir.join(JOURNAL_FILE);
    std::fs::create_dir_all(&c.out_dir).map_err(|error| CampaignError::Write { path: c.out_dir.clone(), error })?;
    std::fs::write(&journal, "").map_err(|error| CampaignError::Write { path: journal.clone(), error })?;
    let mut session = Session::new(c.clone(), jobs, Summary::default(), Completed::default(), 0);
    session.save_state(false)?;
    session.run(progress)
}

/// Continues the campaign whose state file and journal are in `dir`: tests exactly the
/// seeds the journal does not record as completed. `jobs` may differ from the first run.
pub fn resume(dir: &Path, jobs: usize, progress: impl FnMut(&Summary)) -> Result<Summary, CampaignError> {
    let state_path = dir.join(STATE_FILE);
    let text = std::fs::read_to_string(&state_path)
        .map_err(|e| CampaignError::Setup(format!("{}: cannot read the campaign state: {e}", state_path.display())))?;
    let state: StateFile = serde_json::from_str(&text)
        .map_err(|e| CampaignError::Setup(format!("{}: not a campaign state file: {e}", state_path.display())))?;
    let mut c = state.config.campaign().map_err(|e| CampaignError::Setup(format!("{}: {e}", state_path.display())))?;
    c.out_dir = dir.to_path_buf();
    // Temporary files of writes a kill interrupted.
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') && name.ends_with(".tmp") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let journal = dir.join(JOURNAL_FILE);
    let bytes = std::fs::read(&journal).unwrap_or_default();
    // A line without its newline was cut by a kill: its seed is not completed.
    let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    if whole != bytes.len() {
        let cut = std::fs::OpenOptions::new().write(true).open(&journal).and_then(|f| f.set_len(whole as u64));
        cut.map_err(|error| CampaignError::Write { path: journal.clone(), error })?;
    }
    let mut summary = Summary {
        cases: state.cases,
        runs: state.runs,
        invalid: state.invalid,
        agreed: state.agreed,
        limited: state.limited,
        findings: state.findings,
        pass_stats: state.pass_stats,
        fired: state.fired,
        elapsed: Duration::from_secs_f64(state.elapsed_seconds),
        validator: state.validator_answers,
        samples: state.samples,
        infidelities: state.infidelities,
        interrupted: None,
        distinguish: state.distinguish,
        stopped: vec![],
        abandoned: vec![],
    };
    let triaged = state.triaged.unwrap_or(state.watermark);
    for a in &state.validator {
        summary.validator.add(&a.pass, &a.kind, a.reason.as_deref(), a.micros);
    }
    let mut done = Completed { watermark: state.watermark, above: state.done_above.into_iter().collect() };
    let mut elapsed = state.elapsed_seconds;
    // The lines after the snapshot (none when the journal was emptied after it).
    let after = bytes.get(state.journal_offset as usize..whole).unwrap_or(&[]);
    for (i, line) in String::from_utf8_lossy(after).lines().enumerate() {
        let r: SeedRecord = serde_json::from_str(line).map_err(|e| {
            CampaignError::Setup(format!("{}: record {} after the snapshot is not a journal record: {e}", journal.display(), i + 1))
        })?;
        if done.contains(r.pos) {
            continue;
        }
        done.insert(r.pos);
        elapsed = elapsed.max(r.t);
        summary.add(&r);
    }
    summary.elapsed = Duration::from_secs_f64(elapsed);
    let mut session = Session::new(c, jobs, summary, done, whole as u64);
    session.triaged = triaged;
    // A snapshot that covers the whole journal before anything is appended to it.
    session.save_state(false)?;
    session.run(progress)
}

/// The configuration recorded in the state file of the campaign in `dir`.
pub fn state_config(dir: &Path) -> Option<ConfigRecord> {
    let text = std::fs::read_to_string(dir.join(STATE_FILE)).ok()?;
    serde_json::from_str::<StateFile>(&text).ok().map(|s| s.config)
}

/// One process's share of a campaign.
struct Session {
    c: Campaign,
    jobs: usize,
    summary: Summary,
    done: Completed,
    /// Testing time of earlier sessions.
    before: Duration,
    last_state: Instant,
    /// How long the last snapshot took to write: snapshots are at least a second and at
    /// least twenty times that apart, so a big summary (many findings) costs little.
    state_cost: Duration,
    /// The length of the journal.
    journal_len: u64,
    /// Every finding at a position below it is triaged ([`Session::triage`]).
    triaged: u64,
}

impl Session {
    fn new(c: Campaign, jobs: usize, summary: Summary, done: Completed, journal_len: u64) -> Session {
        let before = summary.elapsed;
        Session {
            c,
            jobs: jobs.max(1),
            summary,
            done,
            before,
            last_state: Instant::now(),
            state_cost: Duration::ZERO,
            journal_len,
            triaged: 0,
        }
    }

    fn save_state(&mut self, finished: bool) -> Result<(), CampaignError> {
        let s = &self.summary;
        let state = StateFile {
            version: 1,
            config: self.c.config_record(self.jobs),
            finished,
            watermark: self.done.watermark,
            done_above: self.done.above.iter().copied().collect(),
            journal_offset: self.journal_len,
            cases: s.cases,
            runs: s.runs,
            invalid: s.invalid,
            agreed: s.agreed,
            limited: s.limited,
            elapsed_seconds: s.elapsed.as_secs_f64(),
            pass_stats: s.pass_stats.clone(),
            fired: s.fired.clone(),
            findings: s.findings.clone(),
            validator: vec![],
            validator_answers: s.validator.clone(),
            samples: s.samples.clone(),
            infidelities: s.infidelities.clone(),
            distinguish: s.distinguish.clone(),
            triaged: Some(self.triaged),
        };
        let started = Instant::now();
        let text = serde_json::to_string_pretty(&state).expect("a state serializes");
        write_atomic(&self.c.out_dir.join(STATE_FILE), text.as_bytes())?;
        self.last_state = Instant::now();
        self.state_cost = started.elapsed();
        Ok(())
    }

    /// Tests the positions not completed until the seed range or the time is used up.
    ///
    /// The workers are threads of their own, not joined: a seed whose check never ends
    /// (a pass that loops, a stage without a bound) cannot hold the campaign. The
    /// watchdog ([`seed_watchdog`]) stops the campaign when a seed stays in one stage past it: a seed
    /// stuck in a pass or the backend is a finding (`hang`, a compiler bug), one stuck in
    /// the harness is abandoned and named (a harness bug, never a finding). After a signal
    /// the seeds under way have [`INTERRUPT_GRACE`] to finish, then they are abandoned:
    /// not completed, so `--resume` tests them. The summary, state and reports are written
    /// either way; the process's exit ends a stuck thread.
    fn run(mut self, mut progress: impl FnMut(&Summary)) -> Result<Summary, CampaignError> {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{mpsc, Arc};
        let started = Instant::now();
        let remaining = self.c.seconds.map(|s| Duration::from_secs(s).saturating_sub(self.before));
        let deadline = remaining.map(|r| started + r);
        let dispatch = Arc::new(Mutex::new(Dispatch::new(&self.done)));
        let stop = Arc::new(AtomicBool::new(false));
        let journal_path = self.c.out_dir.join(JOURNAL_FILE);
        let mut journal = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&journal_path)
            .map_err(|error| CampaignError::Write { path: journal_path.clone(), error })?;
        install_panic_hook();
        let (tx, rx) = mpsc::channel::<Result<SeedOutcome, CampaignError>>();
        let campaign = Arc::new(self.c.clone());
        let slots: Vec<WorkerSlot> = (0..self.jobs).map(|_| Arc::new(Mutex::new(None))).collect();
        for slot in &slots {
            let (tx, dispatch, stop, c, slot) = (tx.clone(), dispatch.clone(), stop.clone(), campaign.clone(), slot.clone());
            std::thread::spawn(move || worker(&c, &dispatch, &stop, deadline, &slot, &tx));
        }
        drop(tx);
        // When the campaign began to stop (a signal, the time bound, the watchdog), and how
        // long the seeds under way may still take.
        let mut stopping: Option<(Instant, Duration)> = None;
        let mut trimmed = Instant::now();
        loop {
            if trimmed.elapsed() >= Duration::from_secs(1) {
                // The workers' freed memory goes back to the system (see `release_free`).
                crate::measure::memory::release_free();
                trimmed = Instant::now();
            }
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(outcome) => {
                    // A seed the watchdog already recorded (its thread finished after all).
                    if outcome.as_ref().is_ok_and(|o| self.done.contains(o.pos)) {
                        continue;
                    }
                    let recorded = outcome.and_then(|o| self.record(o, started, deadline, &mut journal));
                    if let Err(e) = recorded {
                        stop.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                    progress(&self.summary);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if stopping.is_none() {
                if super::interrupt::requested().is_some() {
                    stopping = Some((Instant::now(), INTERRUPT_GRACE));
                } else if time_is_up(deadline) {
                    stopping = Some((Instant::now(), seed_watchdog()));
                }
            }
            if let Some(hung) = self.watch(&slots, started, &mut journal)? {
                stop.store(true, Ordering::Relaxed);
                self.summary.stopped.push(hung);
                progress(&self.summary);
                // The other seeds under way get the grace a signal gives them.
                stopping = Some((Instant::now(), INTERRUPT_GRACE));
            }
            if let Some((since, grace)) = stopping {
                if since.elapsed() >= grace {
                    // A thread the watchdog gave up on never ends its channel: the session
                    // ends here, whatever is still under way abandoned.
                    stop.store(true, Ordering::Relaxed);
                    self.summary.abandoned = self.abandon(&slots);
                    break;
                }
            }
        }
        self.finish(started)
    }

    /// The end of a session that began at `started`: the summary's last throughput point
    /// and sorted statistics, and the state file (finished or not).
    fn finish(mut self, started: Instant) -> Result<Summary, CampaignError> {
        self.summary.elapsed = self.before + started.elapsed();
        // The last point of the throughput chart: the end of the session.
        let end = (self.summary.elapsed.as_secs_f64(), self.summary.cases);
        if self.summary.samples.last() != Some(&end) {
            self.summary.samples.push(end);
        }
        self.summary.sort_stats();
        // An interrupted campaign is not finished: `--resume` continues it; nor is one
        // that stopped on a hung seed or abandoned seeds under way.
        self.summary.interrupted = super::interrupt::requested();
        let finished = self.summary.interrupted.is_none() && self.summary.stopped.is_empty() && self.summary.abandoned.is_empty();
        self.save_state(finished)?;
        Ok(self.summary)
    }

    /// The watchdog: a seed in one stage for longer than [`seed_watchdog`] stops the
    /// campaign. Stuck in a pass or the backend (the compiler under test never finishing is
    /// its bug), the seed is completed as a `hang` finding; stuck in the harness, it is left
    /// to [`Session::abandon`]. Returns what stopped the campaign, if anything did.
    fn watch(&mut self, slots: &[WorkerSlot], started: Instant, journal: &mut std::fs::File) -> Result<Option<String>, CampaignError> {
        let limit = seed_watchdog();
        for slot in slots {
            let Some(w) = lock(slot).clone() else { continue };
            // Time in the current stage: every stage is bounded on its own (fuel, the
            // instruction budget, the validator child's limits per pass), so a seed that
            // goes through many of them is slow, not stuck.
            let (stage, ran) = {
                let s = lock(&w.stage);
                (s.name.clone(), s.since.elapsed())
            };
            if ran < limit || self.done.contains(w.pos) {
                continue;
            }
            let what = format!("seed {} (profile {}) ran for {:.0} s in stage `{stage}`", w.seed, w.profile.name(), ran.as_secs_f64());
            if !crate::judge::check::is_compiler_stage(&stage) {
                return Ok(Some(format!("{what}: a harness stage without a bound (a harness bug, not a finding); the campaign stopped")));
            }
            let line = format!("hang: {what}, past the watchdog's {} s (the compiler under test did not finish)", limit.as_secs());
            let problem = Problem { stage: compiler_stage_name(&stage), lines: vec![line], side_by_side: None };
            let o = SeedOutcome::failed(w.pos, w.seed, w.profile, problem);
            self.record(o, started, None, journal)?;
            *lock(slot) = None;
            return Ok(Some(format!("{what}: recorded as a finding; its thread cannot be stopped, so the campaign stopped")));
        }
        Ok(None)
    }

    /// The seeds still under way, given up: one line each (seed, profile, stage, time).
    fn abandon(&self, slots: &[WorkerSlot]) -> Vec<String> {
        let mut out = vec![];
        for slot in slots {
            let Some(w) = lock(slot).clone() else { continue };
            if self.done.contains(w.pos) {
                continue;
            }
            let stage = lock(&w.stage).name.clone();
            out.push(format!(
                "seed {} (profile {}): abandoned after {:.1} s in stage `{stage}`",
                w.seed,
                w.profile.name(),
                w.started.elapsed().as_secs_f64()
            ));
        }
        out
    }

    /// Writes a seed's finding files, then its journal line, then adds it to the summary.
    fn record(&mut self, mut o: SeedOutcome, started: Instant, deadline: Option<Instant>, journal: &mut std::fs::File) -> Result<(), CampaignError> {
        // The validator's findings first: each is a case file of its own with the model's
        // inputs as its run, which `tandem run` replays; the seed's finding names it.
        for (f, pass, answer) in &o.validator_findings {
            let stem = format!("{}-seed-{}", o.profile.name(), o.seed);
            let written = crate::smt::write_finding(&self.c.out_dir, &stem, f, pass, answer)
                .map_err(|error| CampaignError::Write { path: self.c.out_dir.clone(), error })?;
            let stage = format!("z3 pass {pass}");
            if let (Some(path), Some((_, p))) = (written, o.problems.iter_mut().find(|(_, p)| p.stage == stage)) {
                p.lines.push(format!("the validator's input as a case file: {}", path.display()));
            }
        }
        let mut finding = None;
        if let Some((_, first)) = o.problems.first() {
            let path = write_finding(&self.c.out_dir, o.seed, o.profile, &o.problems)?;
            // Grouped and reduced by [`Session::triage`], in seed order, once every lower
            // position is completed.
            finding = Some(Finding {
                seed: o.seed,
                profile: o.profile.name().to_string(),
                found_signature: None,
                signature: signature(first),
                stage: first.stage.clone(),
                message: first.lines.first().and_then(|l| l.lines().next()).unwrap_or("").trim().to_string(),
                path,
                reduced: None,
                reduce_left: false,
            });
        }
        let infidelity = match o.infidelities.is_empty() {
            true => None,
            false => Some(write_infidelity(&self.c.out_dir, o.seed, o.profile, &o.infidelities)?),
        };
        let t = (self.before + started.elapsed()).as_secs_f64();
        let stats = o
            .pass_stats
            .iter()
            .map(|(p, st)| (p.clone(), st.counters.iter().filter(|(_, v)| *v > 0).map(|(k, v)| (k.to_string(), *v)).collect()))
            .collect();
        let r = SeedRecord {
            pos: o.pos,
            seed: o.seed,
            runs: o.runs,
            invalid: o.invalid,
            agreed: o.agreed,
            limited: o.limited,
            stats,
            validator: o.validator,
            evaluated: o.pairs.evaluated.names(),
            distinguished: o.pairs.distinguished.names(),
            finding,
            infidelity,
            t,
        };
        let mut line = serde_json::to_string(&r).expect("a record serializes");
        line.push('\n');
        // One write per line: a kill leaves a whole line or a cut last line, never a mix.
        journal
            .write_all(line.as_bytes())
            .map_err(|error| CampaignError::Write { path: self.c.out_dir.join(JOURNAL_FILE), error })?;
        self.journal_len += line.len() as u64;
        self.done.insert(o.pos);
        self.summary.add(&r);
        self.triage(deadline)?;
        self.summary.elapsed = self.before + started.elapsed();
        if self.journal_len > self.c.journal_limit {
            // A snapshot that covers the whole journal, then the journal emptied: a kill
            // in between leaves a snapshot whose offset is past the journal's end, which
            // [`resume`] reads as "no newer lines".
            self.save_state(false)?;
            journal.set_len(0).map_err(|error| CampaignError::Write { path: self.c.out_dir.join(JOURNAL_FILE), error })?;
            self.journal_len = 0;
            self.save_state(false)?;
        } else if self.last_state.elapsed() >= Duration::from_secs(1).max(self.state_cost * 20) {
            self.save_state(false)?;
        }
        Ok(())
    }
}

impl Session {
    /// The position of `seed` within this campaign's shard.
    fn position(&self, seed: u64) -> u64 {
        (seed - self.c.start) / self.c.shard.count
    }

    /// Groups the findings whose every lower position is completed, in seed order: a
    /// finding whose signature a lower seed already showed joins that seed's group (where
    /// its reduction re-signed it); the lowest seed of a new signature is reduced, and
    /// re-signed when its reduced case fails first with another signature. So which seed
    /// is reduced, and how findings are grouped, depend on the seeds alone: not on which
    /// worker finished first, nor on where a campaign was killed and resumed. A `hang` or
    /// `crash` is not reduced (each candidate could hang or crash again).
    fn triage(&mut self, deadline: Option<Instant>) -> Result<(), CampaignError> {
        let settled = self.done.watermark;
        if self.triaged >= settled {
            return Ok(());
        }
        let todo: Vec<usize> = (0..self.summary.findings.len())
            .filter(|&i| (self.triaged..settled).contains(&self.position(self.summary.findings[i].seed)))
            .collect();
        for i in todo {
            let (seed, found, path) = {
                let f = &self.summary.findings[i];
                (f.seed, f.found_signature.clone().unwrap_or_else(|| f.signature.clone()), f.path.clone())
            };
            let seen = self.summary.known_signature(&found, seed);
            let (mut sig, mut reduced, mut reduce_left) = (seen.clone().unwrap_or_else(|| found.clone()), None, false);
            let reducible = !found.ends_with(": hang") && !found.ends_with(": crash");
            if seen.is_none() && self.c.reduce && reducible {
                let (r, left, reduced_sig) = reduce_finding(&path, &found, self.c.x86, deadline)?;
                (reduced, reduce_left) = (r, left);
                sig = reduced_sig.unwrap_or(sig);
            }
            let f = &mut self.summary.findings[i];
            f.found_signature = (sig != found).then_some(found);
            f.signature = sig;
            f.reduced = reduced;
            f.reduce_left = reduce_left;
        }
        self.triaged = settled;
        Ok(())
    }
}

/// How long one seed's check may stay in one stage before the watchdog stops the
/// campaign ([`set_seed_watchdog`]; 300 s by default, far above what any bounded stage
/// takes: the validator's child is stopped at 30 s per pass).
pub fn seed_watchdog() -> Duration {
    Duration::from_millis(WATCHDOG_MS.load(std::sync::atomic::Ordering::Relaxed))
}

static WATCHDOG_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(300_000);

/// Sets [`seed_watchdog`] for every later campaign of this process (tests use seconds).
pub fn set_seed_watchdog(limit: Duration) {
    WATCHDOG_MS.store(limit.as_millis().max(1) as u64, std::sync::atomic::Ordering::Relaxed);
}

/// How long the seeds under way may still take after SIGINT or SIGTERM before they are
/// abandoned (not completed: `--resume` tests them).
pub const INTERRUPT_GRACE: Duration = Duration::from_secs(3);

/// A worker's seed under way, for the watchdog.
#[derive(Clone)]
struct InFlight {
    pos: u64,
    seed: u64,
    profile: Profile,
    started: Instant,
    /// The stage its check is in (`judge::check::enter_stage`).
    stage: crate::judge::check::StageSlot,
}

type WorkerSlot = std::sync::Arc<Mutex<Option<InFlight>>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One worker thread: takes positions in increasing order and checks their seeds until
/// the range or the time is used up or the campaign stops. A panic while checking a seed
/// is that seed's `crash` finding ([`crash_problem`]); the worker goes on with a fresh
/// emulator.
fn worker(
    c: &Campaign,
    dispatch: &Mutex<Dispatch>,
    stop: &std::sync::atomic::AtomicBool,
    deadline: Option<Instant>,
    slot: &WorkerSlot,
    tx: &std::sync::mpsc::Sender<Result<SeedOutcome, CampaignError>>,
) {
    use std::sync::atomic::Ordering;
    let new_emulator = || X86::new(c.x86).map_err(|e| CampaignError::Check { seed: c.start, error: CheckError::Emulator(e) });
    let mut emu = match new_emulator() {
        Ok(e) => e,
        Err(e) => {
            let _ = tx.send(Err(e));
            return;
        }
    };
    let stage: crate::judge::check::StageSlot = std::sync::Arc::new(Mutex::new(crate::judge::check::Stage::new("")));
    crate::judge::check::watch_stages(Some(stage.clone()));
    loop {
        if stop.load(Ordering::Relaxed) || time_is_up(deadline) {
            break;
        }
        let (pos, seed) = {
            let mut d = lock(dispatch);
            if d.stopped {
                break;
            }
            let pos = d.take();
            match c.seed_at(pos) {
                Some(seed) => (pos, seed),
                None => {
                    d.stopped = true;
                    break;
                }
            }
        };
        let profile = c.profile.for_seed(seed);
        let verify = verified_seed(seed, c.verify_permille);
        *lock(&stage) = crate::judge::check::Stage::new("generator");
        *lock(slot) = Some(InFlight { pos, seed, profile, started: Instant::now(), stage: stage.clone() });
        let outcome = match catch_panic(|| check_seed(pos, seed, profile, verify.then_some(deadline), &mut emu)) {
            Ok(o) => o,
            Err((message, at)) => {
                let problem = crash_problem(&lock(&stage).name, &message, at.as_deref());
                // The machines may be mid-run: a fresh set for the next seed.
                match new_emulator() {
                    Ok(e) => emu = e,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
                Ok(SeedOutcome::failed(pos, seed, profile, problem))
            }
        };
        *lock(slot) = None;
        if tx.send(outcome).is_err() {
            break;
        }
    }
}

thread_local! {
    /// Where this thread's last panic happened (`file:line`), noted by [`install_panic_hook`].
    static PANIC_AT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Chains a panic hook (once per process) that notes each panic's location for
/// [`catch_panic`], then reports it as before.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let at = info.location().map(|l| format!("{}:{}", l.file(), l.line()));
            PANIC_AT.with(|p| *p.borrow_mut() = at);
            before(info);
        }));
    });
}

/// Runs `f`, turning a panic into its message and location.
fn catch_panic<T>(f: impl FnOnce() -> T) -> Result<T, (String, Option<String>)> {
    PANIC_AT.with(|p| *p.borrow_mut() = None);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        (message, PANIC_AT.with(|p| p.borrow_mut().take()))
    })
}

/// Whether a panic at `at` (`file:line`) is in the compiler under test (`tandem-core`).
fn in_core(at: &str) -> bool {
    at.starts_with("core/") || at.contains("/core/src/")
}

/// The problem of a seed whose check panicked outside the stages that catch their own
/// panics: a `crash` of the compiler when the panic is in `core` (its stage named as a
/// pass or `x86`), else a `crash` of the harness stage it happened in (a harness bug).
fn crash_problem(stage: &str, message: &str, at: Option<&str>) -> Problem {
    let compiler = at.map_or_else(|| crate::judge::check::is_compiler_stage(stage), in_core);
    let place = at.map_or_else(String::new, |a| format!(" at {a}"));
    let whose = if compiler {
        "a compiler bug: the panic is in the compiler under test"
    } else {
        "a harness bug: the panic is in the harness, not the compiler under test"
    };
    let line = format!("crash: the check panicked in stage `{stage}`{place}: {message} ({whose})");
    let stage = if compiler {
        compiler_stage_name(stage)
    } else {
        format!("harness ({})", stage.strip_prefix("harness: ").unwrap_or(stage))
    };
    Problem { stage, lines: vec![line], side_by_side: None }
}

/// The guilty component a compiler stage names: `pass NAME`, or `x86` for the backend.
fn compiler_stage_name(stage: &str) -> String {
    match stage.strip_prefix("pass ") {
        Some(rest) => format!("pass {}", rest.split(' ').next().unwrap_or(rest)),
        None => "x86".into(),
    }
}

/// Whether the time bound has passed or an interrupt asks the campaign to stop.
fn time_is_up(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d) || super::interrupt::requested().is_some()
}

/// Reduces the finding at `path` (of signature `sig`) and writes the reduced case beside
/// it as `NAME.reduced.tir`: the path, or `None` when the reducer could not reproduce the
/// signature; whether the reduction was abandoned because the time bound passed or
/// the campaign was interrupted (it is left for `tandem reduce`); and the signature of
/// the reduced case's first problem (`Reduced::first_signature`), which the finding is
/// re-signed with.
fn reduce_finding(path: &Path, sig: &str, x86: Option<X86Mode>, deadline: Option<Instant>) -> Result<(Option<PathBuf>, bool, Option<String>), CampaignError> {
    use crate::campaign::reduce::{reduce_until, ReduceError};
    let case = match crate::campaign::replay::load(path) {
        Ok(c) => c,
        Err(_) => return Ok((None, false, None)),
    };
    if time_is_up(deadline) {
        return Ok((None, true, None));
    }
    let mut emu = X86::new(x86).map_err(|e| CampaignError::Check { seed: 0, error: CheckError::Emulator(e) })?;
    match reduce_until(&case, Some(sig), &|| time_is_up(deadline), &mut emu, &mut |_| {}) {
        Ok(r) => {
            let out = path.with_extension("reduced.tir");
            write_atomic(&out, r.text.as_bytes())?;
            Ok((Some(out), false, Some(r.first_signature)))
        }
        Err(ReduceError::OutOfTime) => Ok((None, true, None)),
        Err(_) => Ok((None, false, None)),
    }
}

/// The validator's options for a query that must start before `deadline` (its budget is
/// deterministic, [`VALIDATOR_OPTIONS`]'s resource limit, so it is not cut by the clock); `None` when no time is
/// left (the seed's passes are then not validated, which the summary's counts show).
fn validator_options_until(deadline: Option<Instant>) -> Option<crate::smt::Options> {
    if super::interrupt::requested().is_some() {
        return None;
    }
    if deadline.is_some_and(|d| d <= Instant::now()) {
        return None;
    }
    Some(VALIDATOR_OPTIONS)
}

/// What checking one seed found.
struct SeedOutcome {
    pos: u64,
    seed: u64,
    profile: Profile,
    runs: u64,
    invalid: u64,
    agreed: u64,
    limited: u64,
    problems: Vec<(u32, Problem)>,
    pass_stats: Vec<(String, Stats)>,
    validator: Vec<ValidatorAnswer>,
    /// The validator's counterexamples and encoder disagreements: the function, the pass
    /// and the answer, written out as their own case files by [`Session::record`].
    validator_findings: Vec<(tandem_core::ir::Function, String, crate::smt::Answer)>,
    /// Runs Unicorn and the CPU disagree on: (line of the run, stage, disagreement).
    infidelities: Vec<(u32, String, Infidelity)>,
    pairs: gen::distinguish::ProgramPairs,
}

impl SeedOutcome {
    /// A seed whose check did not complete (it panicked, or the watchdog stopped it):
    /// `problem` is its only result.
    fn failed(pos: u64, seed: u64, profile: Profile, problem: Problem) -> SeedOutcome {
        SeedOutcome { problems: vec![(0, problem)], ..SeedOutcome::empty(pos, seed, profile) }
    }

    /// The outcome of `seed` before anything is known of it.
    fn empty(pos: u64, seed: u64, profile: Profile) -> SeedOutcome {
        SeedOutcome {
            pos,
            seed,
            profile,
            runs: 0,
            invalid: 0,
            agreed: 0,
            limited: 0,
            problems: vec![],
            pass_stats: vec![],
            validator: vec![],
            validator_findings: vec![],
            infidelities: vec![],
            pairs: gen::distinguish::ProgramPairs::default(),
        }
    }
}

/// Generates the case of `seed` and checks every run through every stage; with `verify`
/// (the campaign's deadline, if any), the validator also checks every pass of the check
/// pipeline on each function, each query bounded by the time left. The validator's
/// problems come after the runs' (the differential check names the first guilty stage).
fn check_seed(pos: u64, seed: u64, profile: Profile, verify: Option<Option<Instant>>, emu: &mut X86) -> Result<SeedOutcome, CampaignError> {
    let g = gen::generate(seed, &profile.config());
    let checked = check_case(&g.case, emu).map_err(|e| CampaignError::Case { seed, error: e })?;
    let mut o = SeedOutcome { pairs: gen::distinguish::observe_case(&g.case), ..SeedOutcome::empty(pos, seed, profile) };
    for (r, c) in g.case.runs.iter().zip(checked) {
        o.runs += 1;
        o.infidelities.extend(c.infidelities.into_iter().map(|(stage, i)| (r.line, stage, i)));
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
    if let Some(deadline) = verify {
        for f in &g.case.module.functions {
            let Some(pipeline) = crate::judge::passcheck::replay_pipeline(f) else { continue };
            let Some(opts) = validator_options_until(deadline) else { break };
            crate::judge::check::enter_stage(|| format!("z3 validator on %{}", f.name));
            // A pipeline that fails is the per-pass check's finding, not the validator's.
            // A pass that panics is the stage checks' finding too.
            // In a child with hard memory and time limits (`smt::isolate`), stopped at the deadline.
            let stop = || validator_options_until(deadline).is_none();
            let Ok(Ok(answers)) = crate::judge::check::caught(|| crate::smt::isolate::validate_pipeline_bounded(f, &pipeline, &opts, &stop)) else { continue };
            for (pass, answer, time) in answers {
                o.validator.push(ValidatorAnswer {
                    pass: pass.clone(),
                    kind: answer.kind().to_string(),
                    reason: answer.unknown_reason().map(str::to_string),
                    micros: time.as_micros() as u64,
                });
                if matches!(answer, crate::smt::Answer::Counterexample(_) | crate::smt::Answer::EncoderDisagreement(_)) {
                    let what = if answer.kind() == "counterexample" { "counterexample" } else { "encoder disagreement" };
                    o.problems.push((
                        0,
                        Problem {
                            stage: format!("z3 pass {pass}"),
                            lines: vec![format!("validator {what} on %{}: {answer}", f.name)],
                            side_by_side: None,
                        },
                    ));
                    o.validator_findings.push((f.clone(), pass, answer));
                }
            }
        }
        // The encoder's self-check on the seed's own inputs, on one validated seed in
        // [`SELF_CHECK_ONE_IN`], unless the time is up.
        if self_checked_seed(seed) && validator_options_until(deadline).is_some() {
            crate::judge::check::enter_stage(|| ENCODER_SELF_CHECK.to_string());
            let clean = o.problems.is_empty();
            o.problems.extend(encoder_self_check(seed, profile, clean));
        }
    }
    Ok(o)
}

/// The encoder's self-check (`smt::selfcheck`) on a validated seed: the encoding of the
/// function as generated and after each pass, on the seed's own inputs, against the
/// interpreter. A difference is a bug of the encoder, not of the compiler: its own stage
/// and so its own signature.
///
/// The self-check runs the passes itself: a pass that panics there is the stage checks'
/// finding (already made), so a panic is the self-check's own only when the seed has no
/// other problem (`clean`).
fn encoder_self_check(seed: u64, profile: Profile, clean: bool) -> Vec<(u32, Problem)> {
    // In a child with hard limits too (`smt::isolate`); a child killed at a limit compared nothing.
    let stop = || validator_options_until(None).is_none();
    let s = match crate::judge::check::caught(|| crate::smt::isolate::self_check_bounded(seed, profile, VALIDATOR_OPTIONS.bound, &stop)) {
        Ok(s) => s,
        Err(why) if clean => {
            let lines = vec![format!("the encoder self-check panicked: {why}")];
            return vec![(0, Problem { stage: ENCODER_SELF_CHECK.into(), lines, side_by_side: None })];
        }
        Err(_) => return vec![],
    };
    s.differences
        .into_iter()
        .map(|(_, form, run, why)| {
            let lines = vec![format!("encoder disagreement on run {} ({form}): {why}", run + 1)];
            (0, Problem { stage: ENCODER_SELF_CHECK.into(), lines, side_by_side: None })
        })
        .collect()
}

/// The stage of an encoder self-check disagreement.
pub const ENCODER_SELF_CHECK: &str = "z3 encoder self-check";

/// Writes the case of `seed` with its problems as leading comments (atomically);
/// returns the path.
fn write_finding(dir: &Path, seed: u64, profile: Profile, problems: &[(u32, Problem)]) -> Result<PathBuf, CampaignError> {
    let path = dir.join(format!("{}-seed-{seed}.tir", profile.name()));
    // A seed whose generator panicked cannot be rendered: the file says how to make it.
    let case = crate::judge::check::caught(|| gen::render(seed, profile)).unwrap_or_else(|why| {
        format!("; the case cannot be rendered (the generator panicked: {why}); `tandem generate --seed {seed} --profile {}` makes it\n", profile.name())
    });
    let text = problem_comments(problems) + &case;
    write_atomic(&path, text.as_bytes())?;
    Ok(path)
}

/// Writes the case of `seed` as `infidelity-PROFILE-seed-N.tir`, each disagreement of
/// Unicorn and the CPU (with its instruction trace) as leading comments; returns the path.
fn write_infidelity(dir: &Path, seed: u64, profile: Profile, found: &[(u32, String, Infidelity)]) -> Result<PathBuf, CampaignError> {
    let path = dir.join(format!("infidelity-{}-seed-{seed}.tir", profile.name()));
    let mut text = String::new();
    for (line, stage, i) in found {
        text += &format!("; emulator infidelity (not a compiler finding): run at line {line}, stage `{stage}`\n");
        for l in i.to_string().lines().skip(1) {
            text += &format!(";   {l}\n");
        }
    }
    text += &gen::render(seed, profile);
    write_atomic(&path, text.as_bytes())?;
    Ok(path)
}

/// The check of the `differential` fuzz target: a test case made from libFuzzer's bytes
/// goes through the generator's own check ([`gen::check_test_case`]) and then every run
/// through every stage, in this thread's emulator. `Err` names each disagreeing stage.
pub fn check_test_case_stages(t: &gen::TestCase) -> Result<(), String> {
    gen::check_test_case(t).map_err(|e| e.to_string())?;
    let case = &t.case;
    let checked = crate::exec::emu::with_worker_emulator(|emu| check_case(case, emu)).map_err(|e| e.to_string())?;
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

    /// The validated share and the self-checked share of it are what their constants say,
    /// and the self-checked seeds are spread over the validated ones, not a fixed subset
    /// of their hash.
    #[test]
    fn one_validated_seed_in_sixteen_is_self_checked() {
        let validated: Vec<u64> = (0..200_000).filter(|&s| verified_seed(s, 50)).collect();
        let share = validated.len() as f64 / 200_000.0;
        assert!((0.045..0.055).contains(&share), "{share}");
        let checked = validated.iter().filter(|&&s| self_checked_seed(s)).count() as f64 / validated.len() as f64;
        assert!((0.75 / 16.0..1.25 / 16.0).contains(&checked), "{checked}");
        // Every validated share gets some: the choice is not correlated with it.
        let low: Vec<u64> = (0..200_000).filter(|&s| verified_seed(s, 5)).collect();
        let checked_low = low.iter().filter(|&&s| self_checked_seed(s)).count() as f64 / low.len() as f64;
        assert!((0.5 / 16.0..1.5 / 16.0).contains(&checked_low), "{checked_low}");
    }

    #[test]
    fn shards_split_the_seed_space() {
        let c = |shard, count| Campaign {
            start: 10,
            count,
            seconds: None,
            profile: ProfileChoice::Mix,
            shard,
            out_dir: PathBuf::new(),
            reduce: false,
            journal_limit: JOURNAL_LIMIT,
            verify_permille: 0,
            x86: None,
        };
        let seeds = |c: &Campaign| (0..).map_while(|p| c.seed_at(p)).collect::<Vec<_>>();
        assert_eq!(seeds(&c(Shard::ALL, Some(5))), vec![10, 11, 12, 13, 14]);
        assert_eq!(seeds(&c(Shard { index: 0, count: 2 }, Some(5))), vec![10, 12, 14]);
        assert_eq!(seeds(&c(Shard { index: 1, count: 2 }, Some(5))), vec![11, 13]);
        assert_eq!(seeds(&c(Shard { index: 2, count: 3 }, Some(5))), vec![12]);
        let unbounded = c(Shard { index: 3, count: 4 }, None);
        assert_eq!((0..3).map(|p| unbounded.seed_at(p).unwrap()).collect::<Vec<_>>(), vec![13, 17, 21]);
        assert!(Shard::parse("2/2").is_err() && Shard::parse("1/0").is_err() && Shard::parse("x").is_err());
        assert_eq!(Shard::parse("1/3"), Ok(Shard { index: 1, count: 3 }));
        assert!(validate(&c(Shard::ALL, Some(0))).is_err());
        let mut last = c(Shard::ALL, Some(5));
        last.start = u64::MAX;
        assert!(validate(&last).is_err());
        last.count = Some(1);
        assert!(validate(&last).is_ok());
        assert!(validate(&c(Shard { index: 5, count: 6 }, Some(5))).is_err());
    }

    #[test]
    fn mix_picks_every_profile_by_seed() {
        let picked: Vec<Profile> = (0..64).map(|s| ProfileChoice::Mix.for_seed(s)).collect();
        for p in Profile::ALL {
            assert!(picked.contains(&p), "{p:?} never picked");
        }
        assert_eq!(picked, (0..64).map(|s| ProfileChoice::Mix.for_seed(s)).collect::<Vec<_>>());
    }

    /// A state file written before issue 23 lists every validator answer; resuming it
    /// counts them, and the snapshot it writes keeps the counts, not the list.
    #[test]
    fn a_state_file_with_every_answer_resumes_as_counts() {
        let dir = std::env::temp_dir().join(format!("tandem-old-state-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let state = r#"{"version": 1,
            "config": {"seed": 0, "count": 2, "seconds": null, "profile": "small", "shard": "0/1", "jobs": 1,
                       "out": "x", "reduce": false, "verify_permille": 1000},
            "finished": false, "watermark": 2, "done_above": [], "journal_offset": 0,
            "cases": 2, "runs": 6, "invalid": 0, "agreed": 6, "elapsed_seconds": 1.5,
            "pass_stats": [], "fired": [], "findings": [],
            "validator": [{"pass": "ssa", "kind": "bounded", "micros": 2000},
                          {"pass": "cprop", "kind": "proved", "micros": 1000},
                          {"pass": "ssa", "kind": "unknown", "micros": 300000}]}"#;
        std::fs::write(dir.join(STATE_FILE), state).unwrap();
        std::fs::write(dir.join(JOURNAL_FILE), "").unwrap();
        let s = resume(&dir, 1, |_| {}).expect("resumes");
        assert_eq!(s.cases, 2);
        let lines = s.validator_lines();
        assert!(lines[0].starts_with("ssa: 0 proved, 1 bounded, 0 vacuous, 1 unknown (50.0%: 1 unrecorded)"), "{lines:?}");
        assert!(lines[1].starts_with("cprop: 1 proved, 0 bounded, 0 vacuous, 0 unknown"), "{lines:?}");
        let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join(STATE_FILE)).unwrap()).unwrap();
        assert!(written.get("validator").is_none(), "the list is not written back");
        assert_eq!(written["validator_answers"]["passes"].as_array().unwrap().len(), 2);
        let again = resume(&dir, 1, |_| {}).expect("resumes again");
        assert_eq!(again.validator_lines(), lines);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A finding re-signed by its reduced case takes every later finding of the signature
    /// it was found with along, and a finding of the signature it was re-signed with
    /// joins it: one group, counted once.
    #[test]
    fn re_signed_findings_merge() {
        let finding = |seed, sig: &str, found: Option<&str>| Finding {
            seed,
            profile: "small".into(),
            signature: sig.into(),
            found_signature: found.map(str::to_string),
            stage: "x86".into(),
            message: String::new(),
            path: PathBuf::from(format!("small-seed-{seed}.tir")),
            reduced: None,
            reduce_left: false,
        };
        let mut s = Summary::default();
        assert_eq!(s.known_signature("x86: emulator fault", u64::MAX), None);
        s.findings.push(finding(3, "x86: wrong outcome", Some("x86: emulator fault")));
        assert_eq!(s.known_signature("x86: emulator fault", u64::MAX).as_deref(), Some("x86: wrong outcome"));
        assert_eq!(s.known_signature("x86: wrong outcome", u64::MAX).as_deref(), Some("x86: wrong outcome"));
        assert_eq!(s.known_signature("pass dce: wrong outcome", u64::MAX), None);
        s.findings.push(finding(5, "x86: wrong outcome", None));
        s.findings.push(finding(7, "x86: wrong outcome", Some("x86: emulator fault")));
        s.findings.push(finding(9, "pass dce: wrong outcome", None));
        let groups = s.signatures();
        assert_eq!(groups.iter().map(|g| (g.signature.as_str(), g.count)).collect::<Vec<_>>(), vec![("x86: wrong outcome", 3), ("pass dce: wrong outcome", 1)]);
        assert_eq!(groups[0].representative.seed, 3);
    }

    /// A panic in `core` is the compiler's crash, named by its pass (or `x86` for the
    /// backend); a panic elsewhere is the harness's, named by the stage it happened in.
    #[test]
    fn a_crash_says_whose_bug_it_is() {
        let core = crash_problem("pass dce", "index out of bounds", Some("core/src/passes/dce.rs:12"));
        assert_eq!(signature(&core), "pass dce: crash");
        assert!(core.lines[0].contains("a compiler bug") && core.lines[0].contains("core/src/passes/dce.rs:12"), "{core:?}");
        let backend = crash_problem("backend compiling for x86", "oops", Some("core/src/backend/emit.rs:3"));
        assert_eq!(signature(&backend), "x86: crash");
        let harness = crash_problem("x86 machine running x86", "oops", Some("oracle/src/exec/emu.rs:40"));
        assert_eq!(signature(&harness), "harness (x86 machine running x86): crash");
        assert!(harness.lines[0].contains("a harness bug"), "{harness:?}");
        let generator = crash_problem("generator", "oops", None);
        assert_eq!(signature(&generator), "harness (generator): crash");
    }

    #[test]
    fn the_completed_set_keeps_a_watermark() {
        let mut d = Completed::default();
        for p in [2, 0, 5, 1] {
            d.insert(p);
        }
        assert_eq!(d.watermark, 3);
        assert_eq!(d.above.iter().copied().collect::<Vec<_>>(), vec![5]);
        let mut q = Dispatch::new(&d);
        assert_eq!((0..4).map(|_| q.take()).collect::<Vec<_>>(), vec![3, 4, 6, 7]);
    }
}
