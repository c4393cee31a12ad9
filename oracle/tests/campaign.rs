//! Campaign options through the library and the `tandem` command: shards, bounds, the
//! state of the output folder, summaries.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use tandem_oracle::campaign::{self, Campaign, ProfileChoice, Shard};
use tandem_oracle::gen::Profile;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tandem-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn journal_seeds(dir: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(dir.join(campaign::JOURNAL_FILE)).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["seed"].as_u64().unwrap())
        .collect()
}

fn tandem() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tandem"))
}

#[test]
fn the_shards_together_test_exactly_the_seeds_of_the_unsharded_run() {
    let c = |shard, name: &str| Campaign {
        start: 100,
        count: Some(9),
        seconds: None,
        profile: ProfileChoice::Mix,
        shard,
        out_dir: temp_dir(name),
        reduce: false,
        journal_limit: campaign::JOURNAL_LIMIT,
        verify_permille: 0,
        x86: None,
    };
    let all = c(Shard::ALL, "shard-all");
    let whole = campaign::run(&all, 2, |_| {}).unwrap();
    let mut union = vec![];
    let (mut cases, mut runs, mut agreed) = (0, 0, 0);
    for i in 0..2 {
        let part = c(Shard { index: i, count: 2 }, &format!("shard-{i}"));
        let s = campaign::run(&part, 1, |_| {}).unwrap();
        let seeds = journal_seeds(&part.out_dir);
        assert!(seeds.iter().all(|s| (s - 100) % 2 == i), "shard {i}: {seeds:?}");
        union.extend(seeds);
        cases += s.cases;
        runs += s.runs;
        agreed += s.agreed;
    }
    let mut whole_seeds = journal_seeds(&all.out_dir);
    whole_seeds.sort();
    union.sort();
    assert_eq!(whole_seeds, (100..109).collect::<Vec<_>>());
    assert_eq!(union, whole_seeds);
    assert_eq!((cases, runs, agreed), (whole.cases, whole.runs, whole.agreed));
}

#[test]
fn an_empty_seed_range_is_refused() {
    for args in [&["--seed", "18446744073709551615", "--count", "5"][..], &["--count", "0"], &["--count", "3", "--shard", "3/4"]] {
        let dir = temp_dir("empty-range");
        let out = tandem().arg("fuzz").args(args).arg("--out").arg(&dir).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("empty") || err.contains("runs past"), "{args:?}: {err}");
        assert!(!dir.join(campaign::STATE_FILE).exists());
    }
    // No worker is no campaign either (it ran one, as if asked for one).
    let out = tandem().args(["fuzz", "--count", "1", "--jobs", "0", "--out"]).arg(temp_dir("no-jobs")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least one worker"), "{}", String::from_utf8_lossy(&out.stderr));
    // The last seed alone is a range of one.
    let dir = temp_dir("last-seed");
    let out = tandem().args(["fuzz", "--seed", "18446744073709551615", "--count", "1", "-q", "--profile", "small", "--out"]).arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(journal_seeds(&dir), vec![u64::MAX]);
}

#[test]
fn a_time_bound_alone_ends_the_campaign_and_the_json_summary_has_its_fields() {
    let dir = temp_dir("seconds");
    let json = dir.with_extension("json");
    let started = std::time::Instant::now();
    let out = tandem()
        .args(["fuzz", "--seconds", "2", "--profile", "small", "--jobs", "1", "--out"])
        .arg(&dir)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(started.elapsed().as_secs() < 60);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["format"], "tandem-fuzz-summary/2");
    assert_eq!(v["config"]["seconds"], 2);
    assert!(v["config"]["count"].is_null());
    let cases = v["counts"]["cases"].as_u64().unwrap();
    assert!(cases > 0);
    assert_eq!(journal_seeds(&dir).into_iter().collect::<BTreeSet<_>>(), (0..cases).collect());
    assert!(v["elapsed_seconds"].as_f64().unwrap() >= 2.0);
    let ssa = v["passes"].as_array().unwrap().iter().find(|p| p["pass"] == "ssa").unwrap();
    let versions = ssa["counters"].as_array().unwrap().iter().find(|c| c["name"] == "versions").unwrap();
    assert!(versions["fired_cases"].as_u64().unwrap() <= cases);
    assert_eq!(v["signatures"].as_array().unwrap().len(), 0);
    // The campaign's page, with its throughput chart (a 2 s campaign has samples).
    let index = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(index.contains("<polyline"), "{index}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("campaign page: "));
    // The resident memory, where the process can read it (Linux: always).
    if cfg!(target_os = "linux") {
        let (rss, peak) = (v["rss_bytes"].as_u64().unwrap(), v["peak_rss_bytes"].as_u64().unwrap());
        assert!(rss > 1 << 20 && peak >= rss, "rss {rss}, peak {peak}");
        let summary = String::from_utf8_lossy(&out.stdout);
        assert!(summary.lines().any(|l| l.starts_with("memory: RSS ") && l.contains(" MB (peak ")), "{summary}");
    } else {
        assert!(v["rss_bytes"].is_null() && v["peak_rss_bytes"].is_null());
    }
    // A second campaign in the same folder is refused; resuming the finished one tests
    // nothing more.
    let again = tandem().args(["fuzz", "--count", "3", "-q", "--out"]).arg(&dir).output().unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--resume"));
    let resumed = tandem().args(["fuzz", "-q", "--resume"]).arg(&dir).output().unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", String::from_utf8_lossy(&resumed.stderr));
    assert_eq!(journal_seeds(&dir).len() as u64, cases);
}

#[test]
fn mix_uses_every_profile_across_seeds() {
    let profiles: BTreeSet<&str> = (0..40).map(|s| ProfileChoice::Mix.for_seed(s).name()).collect();
    assert_eq!(profiles, Profile::ALL.iter().map(|p| p.name()).collect());
}
