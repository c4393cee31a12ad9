//! SIGINT and SIGTERM during `tandem fuzz`: the campaign stops taking seeds, finishes the
//! ones under way, writes its state (not finished, so `--resume` continues it), prints its
//! summary, writes `--json` (`complete: false`, `interrupted`), and exits with 128 + the
//! signal. A campaign with a time bound ends close to it. `--resume` refuses new bounds.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn tandem() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tandem"))
}

/// Waits until the campaign in `dir` has completed a seed (its journal is not empty).
fn wait_for_progress(dir: &Path, child: &mut std::process::Child) {
    let started = Instant::now();
    while std::fs::metadata(dir.join("journal.jsonl")).map_or(0, |m| m.len()) == 0 {
        assert!(child.try_wait().unwrap().is_none(), "the campaign ended before the signal");
        assert!(started.elapsed() < Duration::from_secs(120), "no seed completed in two minutes");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn interrupted_with(signal: i32, name: &str) {
    let dir = std::env::temp_dir().join(format!("tandem-test-interrupt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let json = dir.with_extension("json");
    let _ = std::fs::remove_file(&json);
    let mut child = tandem()
        .args(["fuzz", "--seconds", "600", "--jobs", "1", "--profile", "small", "--verify-permille", "0", "--quiet", "--out"])
        .arg(&dir)
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_progress(&dir, &mut child);
    // SAFETY: a plain kill(2) of our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let sent = Instant::now();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(sent.elapsed() < Duration::from_secs(60), "the campaign took {:?} to stop", sent.elapsed());
    assert_eq!(out.status.code(), Some(128 + signal), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&format!("interrupted by {name}")), "{stdout}");
    assert!(stdout.contains(" seeds ("), "no summary: {stdout}");
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).expect("the --json report")).unwrap();
    assert_eq!(report["complete"], false);
    assert_eq!(report["interrupted"], name);
    let cases = report["counts"]["cases"].as_u64().unwrap();
    assert!(cases > 0, "{report}");
    let state: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("state.json")).unwrap()).unwrap();
    assert_eq!(state["finished"], false, "an interrupted campaign is resumable");
    assert_eq!(state["cases"].as_u64(), Some(cases), "the state holds every seed the summary counts");
    // `--resume` takes no new bounds: refused, not ignored.
    let refused = tandem().args(["fuzz", "--count", "5", "--resume"]).arg(&dir).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&json);
}

#[test]
fn sigint_writes_the_summary_state_and_report_and_exits_130() {
    interrupted_with(libc::SIGINT, "SIGINT");
}

#[test]
fn sigterm_writes_the_summary_state_and_report_and_exits_143() {
    interrupted_with(libc::SIGTERM, "SIGTERM");
}

/// A two-second campaign with the validator on every seed (each query bounded by the
/// time left) ends within a few seconds of its bound, and says it is complete.
#[test]
fn a_time_bound_is_kept_when_every_seed_is_validated() {
    let dir = std::env::temp_dir().join(format!("tandem-test-time-bound-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let json = dir.with_extension("json");
    let started = Instant::now();
    let out = tandem()
        .args(["fuzz", "--seconds", "2", "--jobs", "1", "--profile", "loops", "--verify-permille", "1000", "--quiet", "--out"])
        .arg(&dir)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    // The bound, plus the seed under way (its runs; its validator queries end with the
    // time left) and the start of the emulator.
    assert!(took < Duration::from_secs(8), "a 2 s campaign took {took:?}");
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["complete"], true);
    // Every seed went to a validator child, so the children's peak is known, beside the
    // process's own, in the report and the summary (issue 23: the process tree's memory).
    if cfg!(target_os = "linux") {
        let children = report["children_peak_rss_bytes"].as_u64().expect("a validator child ended");
        assert!(children > 1 << 20, "{children}");
        let summary = String::from_utf8_lossy(&out.stdout);
        assert!(summary.lines().any(|l| l.starts_with("memory: RSS ") && l.contains(", validator children peak ")), "{summary}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&json);
}
