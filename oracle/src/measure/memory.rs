//! The process's own resident memory, as the kernel counts it (issue 23): the current
//! resident set (`VmRSS`) and its peak so far (`VmHWM`) from `/proc/self/status`, so that
//! a long campaign shows a leak in its progress line and summary before the kernel's
//! out-of-memory killer does. Where there is no `/proc` (not Linux) the answer is
//! `None`, printed as "unknown", never a made-up zero.

use std::fmt;

/// Resident memory in bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Resident {
    /// `VmRSS`: resident now.
    pub current: u64,
    /// `VmHWM`: the largest resident set so far.
    pub peak: u64,
}

/// This process's resident memory, or `None` when `/proc/self/status` cannot be read or
/// lacks the two lines.
pub fn resident() -> Option<Resident> {
    parse_status(&std::fs::read_to_string("/proc/self/status").ok()?)
}

/// Reads `VmRSS:` and `VmHWM:` (in kB) from the text of a `/proc/PID/status` file.
pub fn parse_status(text: &str) -> Option<Resident> {
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let mut words = line[name.len()..].split_whitespace();
        let n: u64 = words.next()?.parse().ok()?;
        match words.next() {
            Some("kB") => Some(n * 1024),
            _ => None,
        }
    };
    Some(Resident { current: field("VmRSS:")?, peak: field("VmHWM:")? })
}

/// The largest resident set of any child process this process has waited for, in bytes
/// (`getrusage(RUSAGE_CHILDREN)`'s `ru_maxrss`): the validator's children
/// (`smt::isolate`), which hold a query's memory and give it all back when they exit.
/// This is the figure `/usr/bin/time -v` reports for the tree when a child outgrows the
/// process itself. `None` before any child has ended, or where the system does not count it.
/// A child still running (a validator child kept warm between requests) counts by the
/// largest resident set the parent sampled of it ([`note_child_resident`]).
pub fn children_peak() -> Option<u64> {
    let sampled = Some(SAMPLED_CHILD_PEAK.load(std::sync::atomic::Ordering::Relaxed)).filter(|&b| b > 0);
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `getrusage` only writes the struct it is given.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 || usage.ru_maxrss <= 0 {
            return sampled;
        }
        // Linux counts `ru_maxrss` in kilobytes.
        Some((usage.ru_maxrss as u64 * 1024).max(sampled.unwrap_or(0)))
    }
    #[cfg(not(target_os = "linux"))]
    sampled
}

/// The largest resident set sampled of a running child (see [`children_peak`]).
static SAMPLED_CHILD_PEAK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts `bytes`, a resident set sampled of a running child, in [`children_peak`].
pub fn note_child_resident(bytes: u64) {
    SAMPLED_CHILD_PEAK.fetch_max(bytes, std::sync::atomic::Ordering::Relaxed);
}

/// Hands the allocator's free memory back to the system (glibc's `malloc_trim`), so that
/// the resident set follows the memory in use. Measured in a `mix` campaign at 1000‰
/// (issue 23): the bytes in use stayed at 6–8 MB while glibc's arenas kept the freed
/// space of each seed's largest moment and grew from 10 to 15 MB in three minutes, the
/// resident set with them. Long-running loops (a campaign's main thread once a second,
/// `tandem run` after each file, `tandem verify` after each seed) call this; it costs
/// microseconds against their milliseconds. Elsewhere (not glibc) it does nothing.
pub fn release_free() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only returns free pages of the allocator's own arenas; it
    // takes each arena's lock, so other threads may allocate meanwhile.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Makes every allocation of 128 KiB or more a mapping of its own, unmapped when freed
/// (glibc's `M_MMAP_THRESHOLD`, fixed). By default glibc raises that threshold to the
/// size of each large block freed, up to 32 MB, and then serves large blocks from the
/// arenas, whose footprint keeps the largest moment of the largest program seen so far:
/// a campaign's resident set then creeps up for minutes as rarer, larger programs come
/// (issue 23). Fixed, the creep goes, at about 3% of a campaign's CPU time (the system
/// calls and page faults of the large blocks), measured with `farm-bench` on
/// `tandem fuzz --count 400 --jobs 1 --verify-permille 0`. Elsewhere (not glibc) it does
/// nothing.
pub fn return_large_blocks() {
    fix_mmap_threshold(128 * 1024);
}

/// Serves every allocation under 32 MB from the arenas, reusing the pages of what was
/// freed (glibc's `M_MMAP_THRESHOLD` fixed at its largest dynamic value), and keeps up to
/// `keep` bytes free at the top of the heap (`M_TRIM_THRESHOLD`), for the validator's
/// child (`smt::isolate`): each pass's Z3 context allocates and frees the same large
/// blocks again, and by default the first ones of a process are mappings of their own,
/// unmapped when freed and faulted in anew by the next context; and fixing the mapping
/// threshold leaves the trim threshold at 128 kB, so that freeing a context gave its
/// heap's top back and the next one faulted it in again. The child gives its free memory
/// back between functions itself, past `keep`, and its cap watches what it holds either
/// way. Measured with `farm-bench` on `tandem verify --generated --profile small --count
/// 15 --bound 2` (the mapping threshold alone, set as a glibc tunable): CPU time 0.87 of
/// the default's, system time 0.58. Elsewhere (not glibc) it does nothing.
pub fn reuse_large_blocks(keep: u64) {
    fix_mmap_threshold(32 * 1024 * 1024);
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets the allocator's parameter; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, keep.min(i32::MAX as u64) as i32);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = keep;
}

/// Fixes glibc's `M_MMAP_THRESHOLD` at `bytes` (which also stops its dynamic
/// adjustment); elsewhere (not glibc) does nothing. Called before any thread starts.
fn fix_mmap_threshold(bytes: i32) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets the allocator's parameter; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, bytes);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = bytes;
}

/// Bytes in megabytes (10^6), as the progress line and the summary print them.
pub fn megabytes(bytes: u64) -> String {
    format!("{:.0} MB", bytes as f64 / 1e6)
}

/// `RSS 123 MB (peak 130 MB)`, or `RSS unknown` where the process cannot read it; with
/// `, validator children peak 412 MB` after it when a child has ended (the second field,
/// [`children_peak`]).
pub struct ResidentText(pub Option<Resident>, pub Option<u64>);

impl fmt::Display for ResidentText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(r) => write!(f, "RSS {} (peak {})", megabytes(r.current), megabytes(r.peak))?,
            None => f.write_str("RSS unknown")?,
        }
        match self.1 {
            Some(c) => write!(f, ", validator children peak {}", megabytes(c)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_status_file() {
        let text = "Name:\ttandem\nVmPeak:\t  900000 kB\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t3\n";
        assert_eq!(parse_status(text), Some(Resident { current: 104_857_600, peak: 209_715_200 }));
        assert_eq!(parse_status("Name:\ttandem\nVmRSS:\t 12 kB\n"), None);
        assert_eq!(parse_status("VmRSS:\t 12 MB\nVmHWM:\t 12 kB\n"), None);
        assert_eq!(ResidentText(None, None).to_string(), "RSS unknown");
        assert_eq!(ResidentText(parse_status(text), None).to_string(), "RSS 105 MB (peak 210 MB)");
        assert_eq!(
            ResidentText(parse_status(text), Some(412_000_000)).to_string(),
            "RSS 105 MB (peak 210 MB), validator children peak 412 MB"
        );
    }

    /// A child that ended counts: `dd` with a 64 MB block holds that buffer resident
    /// while it copies it, so the children's peak is at least that afterwards.
    #[test]
    fn a_waited_child_counts_in_the_children_peak() {
        if cfg!(target_os = "linux") {
            let status = std::process::Command::new("dd")
                .args(["if=/dev/zero", "of=/dev/null", "bs=64M", "count=1"])
                .stderr(std::process::Stdio::null())
                .status()
                .expect("dd runs");
            assert!(status.success());
            let peak = children_peak().expect("a child has ended");
            assert!(peak >= 64 << 20, "{peak}");
        }
    }

    /// On Linux the process reads its own figures, and a peak is never below the present.
    #[test]
    fn reads_its_own_resident_set_on_linux() {
        if cfg!(target_os = "linux") {
            let r = resident().expect("/proc/self/status on Linux");
            assert!(r.current > 0 && r.peak >= r.current, "{r:?}");
        }
    }
}
