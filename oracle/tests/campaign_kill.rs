//! Crash safety: a campaign killed with SIGKILL at random moments (until 20 kills have
//! hit it while running) and resumed each time ends with exactly the findings, reduced cases and seeds of an
//! uninterrupted campaign: no partial file, no lost finding, no seed completed twice or
//! skipped. The campaign under the kills runs in a child process (this test binary
//! re-run with the ignored test `child_campaign`), with a bug planted so that there are
//! findings to lose.

mod common;
use common::dce_flips_returns;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use tandem_oracle::campaign::{self, Campaign, ProfileChoice, Shard};
use tandem_oracle::judge::check;
use tandem_oracle::gen::Profile;

// Enough seeds that the kills land while the campaign runs on a fast machine too (500
// seeds finished within a few kills once the machine was quiet).
const COUNT: u64 = 2000;

/// Two workers, in the reference campaign and in every killed and resumed one. The test
/// compares the finding files byte for byte: the lowest seed of each signature is the one
/// reduced, so the order in which the workers complete their seeds (which differs
/// between runs under load) does not change them.
const JOBS: usize = 2;

fn config(out_dir: PathBuf, journal_limit: u64) -> Campaign {
    Campaign {
        start: 1000,
        count: Some(COUNT),
        seconds: None,
        profile: ProfileChoice::One(Profile::Small),
        shard: Shard::ALL,
        out_dir,
        reduce: true,
        journal_limit,
        verify_permille: 0,
        // Both machines, as `tandem fuzz` by default: the CPU runner's one machine per
        // process (workers take turns) changes the order in which seeds complete from run
        // to run, which no file may follow.
        x86: None,
    }
}

/// The body of the child process: starts or resumes the campaign in `TANDEM_KILL_DIR`.
#[test]
#[ignore = "run by killed_campaigns_resume_without_losing_or_repeating_a_seed"]
fn child_campaign() {
    let dir = PathBuf::from(std::env::var("TANDEM_KILL_DIR").expect("run by the kill test"));
    check::plant_bug(Some(dce_flips_returns));
    if dir.join(campaign::STATE_FILE).exists() {
        campaign::resume(&dir, JOBS, |_| {}).unwrap();
    } else {
        let limit = std::env::var("TANDEM_KILL_JOURNAL_LIMIT").unwrap().parse().unwrap();
        campaign::run(&config(dir, limit), JOBS, |_| {}).unwrap();
    }
}

/// Every file a reader may see: complete case files and a state file that parses.
fn check_no_partial_file(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".tir") && !name.starts_with('.') {
            tandem_oracle::campaign::replay::load(&e.path()).unwrap_or_else(|err| panic!("partial finding file: {err}"));
        }
    }
    let state = std::fs::read_to_string(dir.join(campaign::STATE_FILE)).unwrap();
    serde_json::from_str::<serde_json::Value>(&state).expect("a whole state file");
}

/// The finding and reduced files of a folder, by name, with their text.
fn files(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tir") && !n.starts_with('.'))
        .map(|n| (n.clone(), std::fs::read_to_string(dir.join(&n)).unwrap()))
        .collect()
}

#[test]
fn killed_campaigns_resume_without_losing_or_repeating_a_seed() {
    kill_and_resume("whole", campaign::JOURNAL_LIMIT, 20);
}

/// With a journal emptied every few dozen seeds, kills also hit the moments around the
/// snapshot that covers it.
#[test]
fn killed_campaigns_resume_with_an_emptied_journal() {
    kill_and_resume("emptied", 12_000, 10);
}

/// Starts the campaign in a child process, kills it at random moments until `hits` kills
/// have interrupted it, resumes it to the end, and compares with an uninterrupted run.
fn kill_and_resume(name: &str, journal_limit: u64, hits: u32) {
    let base = std::env::temp_dir().join(format!("tandem-test-kill-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    // The uninterrupted campaign.
    check::plant_bug(Some(dce_flips_returns));
    let reference = campaign::run(&config(base.join("reference"), journal_limit), JOBS, |_| {}).unwrap();
    assert!(reference.findings.len() >= 5, "the planted bug should make findings");
    eprintln!("uninterrupted: {} seeds, {} findings in {:.1?}", reference.cases, reference.findings.len(), reference.elapsed);
    let dir = base.join("killed");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x6b11);
    let mut kills = 0;
    let mut interrupted = 0;
    // Until 20 kills have hit a running campaign (a kill after the end hits nothing).
    while interrupted < hits && kills < 100 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_campaign", "--ignored", "--test-threads", "1"])
            .env("TANDEM_KILL_DIR", &dir)
            .env("TANDEM_KILL_JOURNAL_LIMIT", journal_limit.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Up to 120 ms: each kill lets the campaign run at most that long (less the
        // child's start), so it takes dozens of kills to finish and the hits needed come
        // before it does. With up to 250 ms, a fresh clone's run once finished the
        // 2,000 seeds after 19 hits of the 20 asked for.
        std::thread::sleep(Duration::from_millis(rng.gen_range(20..120)));
        if child.try_wait().unwrap().is_none() {
            interrupted += 1;
        }
        child.kill().unwrap();
        child.wait().unwrap();
        kills += 1;
        if dir.join(campaign::STATE_FILE).exists() {
            check_no_partial_file(&dir);
        }
    }
    eprintln!("{kills} kills, {interrupted} of them interrupted the campaign");
    assert!(interrupted >= hits, "only {interrupted} kills hit a running campaign");
    // The last resume runs to the end.
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_campaign", "--ignored", "--test-threads", "1"])
        .env("TANDEM_KILL_DIR", &dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    check_no_partial_file(&dir);
    // Every seed completed exactly once (when the journal was never emptied, it shows
    // them all; otherwise the summary's counts below show any seed tested twice).
    if journal_limit == campaign::JOURNAL_LIMIT {
        let journal = std::fs::read_to_string(dir.join(campaign::JOURNAL_FILE)).unwrap();
        let mut seeds: Vec<u64> =
            journal.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["seed"].as_u64().unwrap()).collect();
        seeds.sort();
        assert_eq!(seeds, (1000..1000 + COUNT).collect::<Vec<_>>());
    } else {
        assert!(std::fs::metadata(dir.join(campaign::JOURNAL_FILE)).unwrap().len() <= journal_limit + 2000);
    }
    // The same findings, reduced cases and summary as the uninterrupted campaign.
    assert_eq!(files(&dir), files(&base.join("reference")));
    let resumed = campaign::resume(&dir, 1, |_| {}).unwrap();
    assert_eq!(resumed.cases, COUNT);
    assert_eq!((resumed.cases, resumed.runs, resumed.agreed, resumed.invalid), (reference.cases, reference.runs, reference.agreed, reference.invalid));
    let key = |s: &campaign::Summary| {
        s.findings.iter().map(|f| (f.seed, f.signature.clone(), f.path.file_name().unwrap().to_owned())).collect::<Vec<_>>()
    };
    assert_eq!(key(&resumed), key(&reference));
    assert_eq!(resumed.pass_stats, reference.pass_stats);
    assert_eq!(resumed.fired, reference.fired);
}
