//! `tandem fuzz`: a fuzzing campaign with a progress line and its summary, or `--resume` of one.
//! Both show the process's resident memory (current and peak), so a user sees a leak
//! before the kernel does.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use super::*;
use tandem_oracle::measure::memory::{self, Resident, ResidentText};

#[derive(clap::Args)]
pub struct Args {
    /// The first seed.
    #[arg(long, conflicts_with = "resume", default_value_t = 0)]
    pub seed: u64,
    /// How many consecutive seeds (of the whole campaign, before sharding). Default:
    /// 1000 when --seconds is not given either; with only --seconds, no end.
    #[arg(long, conflicts_with = "resume")]
    pub count: Option<u64>,
    /// Stop taking new seeds after this many seconds.
    #[arg(long, conflicts_with = "resume")]
    pub seconds: Option<u64>,
    /// The generator profile: small, default, loops, memory, ssa, or mix (a profile chosen
    /// from each seed).
    #[arg(long, conflicts_with = "resume", default_value = "default", value_parser = parse_profile_choice)]
    pub profile: tandem_oracle::campaign::ProfileChoice,
    /// Test only shard I of N (the seeds whose offset from --seed is I modulo N).
    #[arg(long, conflicts_with = "resume", value_parser = tandem_oracle::campaign::Shard::parse)]
    pub shard: Option<tandem_oracle::campaign::Shard>,
    /// Where finding files, the state file and the journal are written (a folder that
    /// holds no campaign yet; default: a new folder `findings/campaign-SECONDS`, named
    /// after the Unix time).
    #[arg(long, conflicts_with = "resume")]
    pub out: Option<PathBuf>,
    /// Continue the campaign in this folder (its configuration is read from its state
    /// file; only --jobs, --json and --quiet may be given with it: a campaign's seeds,
    /// profile and bounds are its state's, and another value is refused, exit 2).
    #[arg(long)]
    pub resume: Option<PathBuf>,
    /// Do not reduce the first case of each signature.
    #[arg(long, conflicts_with = "resume")]
    pub no_reduce: bool,
    /// The share of seeds, per mille, whose passes the Z3 validator also checks
    /// (bound 2, 20,000,000 Z3 resource units per function and pass, a third of `tandem verify`'s);
    /// 0 turns it off. Default: the largest share that keeps validation within the time of
    /// execution on the profile (small 80, default 89, loops 42, memory 29, ssa 84, mix 57).
    #[arg(long, conflicts_with = "resume", value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub verify_permille: Option<u32>,
    /// The most memory one validator child may hold, in MB (10^6 bytes): past it the
    /// child is killed and that pass's answer is `unknown (memory limit)`, never a pass.
    /// Default 250, which keeps the largest process of the tree under 300 MB.
    #[arg(long, value_name = "MB", default_value_t = tandem_oracle::smt::isolate::LIMITS.memory / 1_000_000, value_parser = clap::value_parser!(u64).range(50..))]
    pub validator_memory: u64,
    /// Write a JSON summary here (format `tandem-fuzz-summary/2`, see the README).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
    /// Worker threads, each with its own emulator (default: one per core; at least 1).
    #[arg(long, short, value_parser = parse_jobs)]
    pub jobs: Option<usize>,
    /// The x86 machines: unicorn, native (this CPU in 32-bit mode) or both (default
    /// where the CPU runs 32-bit code; Unicorn and the CPU disagreeing is an emulator
    /// infidelity, written as `infidelity-*.tir`, never a finding).
    #[arg(long, value_parser = parse_x86)]
    pub x86: Option<tandem_oracle::exec::x86::X86Mode>,
}

/// `--jobs`: a count of worker threads, at least one (`--jobs 0` ran one worker, as if
/// asked for one).
fn parse_jobs(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("a campaign needs at least one worker".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

pub fn main(a: Args) -> ExitCode {
    let Args { seed, count, seconds, profile, shard, out, resume, no_reduce, verify_permille, json, quiet, jobs, x86, validator_memory: _ } = a;
    if x86.is_none() {
        if let Err(why) = tandem_oracle::exec::native::available() {
            eprintln!("notice: x86 runs on Unicorn only: this machine cannot run 32-bit code natively ({why})");
        }
    }
    let c = tandem_oracle::campaign::Campaign {
        start: seed,
        count: if count.is_none() && seconds.is_none() { Some(1000) } else { count },
        seconds,
        profile,
        shard: shard.unwrap_or(tandem_oracle::campaign::Shard::ALL),
        out_dir: out.unwrap_or_else(|| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            PathBuf::from(format!("findings/campaign-{now}"))
        }),
        reduce: !no_reduce,
        journal_limit: tandem_oracle::campaign::JOURNAL_LIMIT,
        verify_permille: verify_permille.unwrap_or_else(|| tandem_oracle::campaign::default_verify_permille(&profile)),
        x86,
    };
    fuzz(c, resume, json, quiet, jobs)
}

fn fuzz(
    c: tandem_oracle::campaign::Campaign,
    resume: Option<PathBuf>,
    json: Option<PathBuf>,
    quiet: bool,
    jobs: Option<usize>,
) -> ExitCode {
    use tandem_oracle::campaign;
    // SIGINT and SIGTERM finish the seeds under way, then the summary and reports below.
    campaign::interrupt::install();
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    if resume.is_none() {
        if let Err(e) = campaign::validate(&c) {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    }
    let mut progress = Progress::new(&c, resume.is_some(), quiet);
    let (result, config) = match &resume {
        Some(dir) => (campaign::resume(dir, jobs, |s| progress.update(s)), dir.clone()),
        None => (campaign::run(&c, jobs, |s| progress.update(s)), c.out_dir.clone()),
    };
    progress.bar.finish_and_clear();
    let s = match result {
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
        Ok(s) => s,
    };
    let state = campaign::state_config(&config).unwrap_or_else(|| c.config_record(jobs));
    let mut out = std::io::stdout().lock();
    print_summary(&mut out, &s, &state, jobs);
    // The campaign's page and a page per signature (`tandem_oracle::show::index`).
    match emulator().map(|mut emu| tandem_oracle::show::index::write_campaign_pages(&config, &s, &state, &mut emu)) {
        Ok(Ok(page)) => {
            let _ = writeln!(out, "campaign page: {}", page.display());
        }
        Ok(Err(e)) => eprintln!("warning: cannot write the campaign page: {e}"),
        Err(_) => {}
    }
    if let Some(path) = json {
        let complete = s.interrupted.is_none() && s.stopped.is_empty() && s.abandoned.is_empty();
        let report = campaign::report::FuzzReport::new(state, &s, complete);
        let text = serde_json::to_string_pretty(&report).expect("a report serializes") + "\n";
        if let Err(code) = write_report(&path, &text) {
            return code;
        }
    }
    if let Some(signal) = s.interrupted {
        let _ = writeln!(
            out,
            "interrupted by {}: the seeds under way were finished (or abandoned after {} s) and the state written; `tandem fuzz --resume {}` continues",
            campaign::interrupt::name(signal),
            campaign::INTERRUPT_GRACE.as_secs(),
            config.display()
        );
        ExitCode::from(campaign::interrupt::exit_status(signal))
    } else if !s.stopped.is_empty() && s.findings.is_empty() {
        // A seed stuck in the harness: no verdict on it, never a pass.
        let _ = writeln!(out, "the campaign stopped before its bounds; `tandem fuzz --resume {}` continues", config.display());
        ExitCode::from(2)
    } else if s.findings.is_empty() && s.infidelities.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// What the campaign shows while it runs: a bar on a terminal; otherwise a line every
/// ten seconds and one per finding; nothing with `--quiet`.
struct Progress {
    bar: indicatif::ProgressBar,
    terminal: bool,
    quiet: bool,
    /// Whether findings already in the summary when it is first seen are of earlier
    /// sessions (on resume), not to be announced again.
    resumed: bool,
    first: bool,
    last_line: std::time::Instant,
    reported: std::collections::HashSet<(u64, String)>,
    /// The resident memory, read at most once a second (a campaign completes hundreds of
    /// seeds a second, and reading `/proc` for each would cost more than it tells).
    resident: Option<(std::time::Instant, Option<Resident>)>,
}

impl Progress {
    fn new(c: &tandem_oracle::campaign::Campaign, resumed: bool, quiet: bool) -> Progress {
        use std::io::IsTerminal;
        let terminal = !quiet && std::io::stderr().is_terminal();
        // With a seed count and no time bound, a bar over the shard's seeds; else a spinner.
        let seeds = match (resumed, c.count, c.seconds) {
            (false, Some(n), None) => Some((n - c.shard.index).div_ceil(c.shard.count)),
            _ => None,
        };
        let (bar, template) = match seeds {
            _ if !terminal => (indicatif::ProgressBar::hidden(), "{msg}"),
            Some(n) => (indicatif::ProgressBar::new(n), "{elapsed_precise} [{bar:30}] {pos}/{len} seeds: {msg}"),
            None => (indicatif::ProgressBar::new_spinner(), "{spinner} {elapsed_precise} {msg}"),
        };
        bar.set_style(indicatif::ProgressStyle::with_template(template).expect("valid template").progress_chars("=> "));
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        Progress {
            bar,
            terminal,
            quiet,
            resumed,
            first: true,
            last_line: std::time::Instant::now(),
            reported: std::collections::HashSet::new(),
            resident: None,
        }
    }

    /// Called after every completed seed with the summary so far.
    fn update(&mut self, s: &tandem_oracle::campaign::Summary) {
        if std::mem::take(&mut self.first) && self.resumed {
            self.reported.extend(s.findings.iter().map(|f| (f.seed, f.profile.clone())));
        }
        self.announce_findings(s);
        if self.terminal {
            let line = self.line(s);
            self.bar.set_position(s.cases);
            self.bar.set_message(line);
        } else if !self.quiet && self.last_line.elapsed() >= std::time::Duration::from_secs(10) {
            self.last_line = std::time::Instant::now();
            eprintln!("{:.0}s: {}", s.elapsed.as_secs_f64(), self.line(s));
        }
    }

    /// One line per finding not announced yet.
    fn announce_findings(&mut self, s: &tandem_oracle::campaign::Summary) {
        for f in &s.findings {
            if self.reported.insert((f.seed, f.profile.clone())) {
                let reduced = f.reduced.as_ref().map_or(String::new(), |r| format!(" (reduced: {})", r.display()));
                let msg = format!("finding: seed {} [{}]: {} -> {}{reduced}", f.seed, f.signature, f.message, f.path.display());
                if self.terminal {
                    self.bar.println(msg);
                } else if !self.quiet {
                    eprintln!("{msg}");
                }
            }
        }
    }

    /// `N cases (R/s), N runs (R/s), N findings, N signatures, RSS M MB (peak M MB)`.
    fn line(&mut self, s: &tandem_oracle::campaign::Summary) -> String {
        let secs = s.elapsed.as_secs_f64().max(1e-9);
        let resident = match self.resident {
            Some((at, r)) if at.elapsed() < std::time::Duration::from_secs(1) => r,
            _ => {
                let r = memory::resident();
                self.resident = Some((std::time::Instant::now(), r));
                r
            }
        };
        format!(
            "{} cases ({:.0}/s), {} runs ({:.0}/s), {} findings, {} signatures, {}",
            s.cases,
            s.cases as f64 / secs,
            s.runs,
            s.runs as f64 / secs,
            s.findings.len(),
            s.signatures().len(),
            ResidentText(resident, memory::children_peak())
        )
    }
}

/// The summary on standard output: the counts and throughput, the resident memory, every
/// pass counter, the validator's answers and the signatures.
fn print_summary(out: &mut impl Write, s: &tandem_oracle::campaign::Summary, state: &tandem_oracle::campaign::ConfigRecord, jobs: usize) {
    let secs = s.elapsed.as_secs_f64().max(1e-9);
    let shard = if state.shard == "0/1" { String::new() } else { format!(", shard {}", state.shard) };
    let _ = writeln!(
        out,
        "{} seeds ({}{shard}, {jobs} jobs), {} runs: {} agreed at every stage, {} invalid (not compared), {} beyond a harness limit, {} findings, {} emulator infidelit(ies); {:.1}s, {:.0} cases/s, {:.0} runs/s",
        s.cases,
        state.profile,
        s.runs,
        s.agreed,
        s.invalid,
        s.limited,
        s.findings.len(),
        s.infidelities.len(),
        secs,
        s.cases as f64 / secs,
        s.runs as f64 / secs,
    );
    let _ = writeln!(out, "memory: {}", ResidentText(memory::resident(), memory::children_peak()));
    // Each counter's total, and the share of programs in which it fired.
    for (pass, st) in &s.pass_stats {
        let counters: Vec<String> = st.iter().map(|(k, v)| format!("{k}={v} ({:.1}%)", s.fired_percent(pass, k))).collect();
        let _ = writeln!(out, "  {pass}: {}", counters.join(" "));
    }
    if !s.validator.is_empty() {
        let _ = writeln!(
            out,
            "Z3 validator ({}‰ of seeds, bound {}; the encoder self-check on 1 in {} of them):",
            state.verify_permille,
            tandem_oracle::campaign::VALIDATOR_OPTIONS.bound,
            tandem_oracle::campaign::SELF_CHECK_ONE_IN
        );
        for l in s.validator_lines() {
            let _ = writeln!(out, "  {l}");
        }
    }
    for l in s.distinguish.lines() {
        let _ = writeln!(out, "{l}");
    }
    let groups = s.signatures();
    if !groups.is_empty() {
        let _ = writeln!(out, "{} signature(s):", groups.len());
    }
    for g in &groups {
        let left = s.findings.iter().any(|f| f.signature == g.signature && f.reduce_left);
        let reduced = match &g.reduced {
            Some(r) => format!(", reduced: {}", r.display()),
            None if left => format!(", not reduced: no time left (run `tandem reduce {}`)", g.representative.path.display()),
            None => String::new(),
        };
        let _ = writeln!(out, "  [{}] {} finding(s), e.g. seed {}: {}{reduced}", g.signature, g.count, g.representative.seed, g.representative.path.display());
        // Findings found with another signature and re-signed by a reduced case.
        let mut found: std::collections::BTreeMap<&str, usize> = Default::default();
        for f in s.findings.iter().filter(|f| f.signature == g.signature) {
            if let Some(was) = f.found_signature.as_deref() {
                *found.entry(was).or_default() += 1;
            }
        }
        for (f, n) in found {
            let _ = writeln!(out, "      {n} of them found as [{f}] and re-signed: the reduced case fails first with [{}]", g.signature);
        }
    }
    for p in &s.infidelities {
        let _ = writeln!(out, "  emulator infidelity (Unicorn and the CPU disagree; not a compiler finding): {}", p.display());
    }
    for l in &s.stopped {
        let _ = writeln!(out, "stopped by the watchdog: {l}");
    }
    for l in &s.abandoned {
        let _ = writeln!(out, "{l} (not completed: `--resume` tests it again)");
    }
}
