//! `tandem fuzz`: a fuzzing campaign with a progress line and its summary, or `--resume` of one.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// How many consecutive seeds (of the whole campaign, before sharding). Default:
    /// 1000 when --seconds is not given either; with only --seconds, no end.
    #[arg(long)]
    pub count: Option<u64>,
    /// Stop taking new seeds after this many seconds.
    #[arg(long)]
    pub seconds: Option<u64>,
    /// The generator profile: small, default, loops, memory, ssa, or mix (a profile chosen
    /// from each seed).
    #[arg(long, default_value = "default", value_parser = parse_profile_choice)]
    pub profile: tandem_oracle::campaign::ProfileChoice,
    /// Test only shard I of N (the seeds whose offset from --seed is I modulo N).
    #[arg(long, value_parser = tandem_oracle::campaign::Shard::parse)]
    pub shard: Option<tandem_oracle::campaign::Shard>,
    /// Where finding files, the state file and the journal are written (a folder that
    /// holds no campaign yet; default: a new folder `findings/campaign-SECONDS`, named
    /// after the Unix time).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Continue the campaign in this folder (its configuration is read from its state
    /// file; other options but --jobs, --json and --quiet are ignored).
    #[arg(long)]
    pub resume: Option<PathBuf>,
    /// Do not reduce the first case of each signature.
    #[arg(long)]
    pub no_reduce: bool,
    /// The share of seeds, per mille, whose passes the Z3 validator also checks
    /// (bound 2, 300 ms per query); 0 turns it off.
    #[arg(long, default_value_t = tandem_oracle::campaign::VERIFY_PERMILLE, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub verify_permille: u32,
    /// Write a JSON summary here (format `tandem-fuzz-summary/1`, see the README).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
    /// Worker threads, each with its own emulator (default: one per core).
    #[arg(long, short)]
    pub jobs: Option<usize>,
}

pub fn main(a: Args) -> ExitCode {
    let Args { seed, count, seconds, profile, shard, out, resume, no_reduce, verify_permille, json, quiet, jobs } = a;
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
        verify_permille,
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
    use std::io::IsTerminal;
    use tandem_oracle::campaign;
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    if resume.is_none() {
        if let Err(e) = campaign::validate(&c) {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    }
    // A bar on a terminal; otherwise a line every ten seconds (and one per finding).
    let terminal = !quiet && std::io::stderr().is_terminal();
    // With a seed count and no time bound, a bar over the shard's seeds; else a spinner.
    let seeds = match (&resume, c.count, c.seconds) {
        (None, Some(n), None) => Some((n - c.shard.index).div_ceil(c.shard.count)),
        _ => None,
    };
    let (bar, template) = match seeds {
        _ if !terminal => (indicatif::ProgressBar::hidden(), "{msg}"),
        Some(n) => (indicatif::ProgressBar::new(n), "{elapsed_precise} [{bar:30}] {pos}/{len} seeds: {msg}"),
        None => (indicatif::ProgressBar::new_spinner(), "{spinner} {elapsed_precise} {msg}"),
    };
    bar.set_style(indicatif::ProgressStyle::with_template(template).expect("valid template").progress_chars("=> "));
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    let started = std::time::Instant::now();
    let mut last_line = started;
    let mut reported: std::collections::HashSet<(u64, String)> = std::collections::HashSet::new();
    let mut first = true;
    let progress = |s: &campaign::Summary| {
        // On resume, the findings of earlier sessions are not announced again.
        if first {
            first = false;
            if resume.is_some() {
                reported.extend(s.findings.iter().map(|f| (f.seed, f.profile.clone())));
            }
        }
        let secs = s.elapsed.as_secs_f64().max(1e-9);
        let line = format!(
            "{} cases ({:.0}/s), {} runs ({:.0}/s), {} findings, {} signatures",
            s.cases,
            s.cases as f64 / secs,
            s.runs,
            s.runs as f64 / secs,
            s.findings.len(),
            s.signatures().len()
        );
        for f in &s.findings {
            if reported.insert((f.seed, f.profile.clone())) {
                let reduced = f.reduced.as_ref().map_or(String::new(), |r| format!(" (reduced: {})", r.display()));
                let msg = format!("finding: seed {} [{}]: {} -> {}{reduced}", f.seed, f.signature, f.message, f.path.display());
                if terminal {
                    bar.println(msg);
                } else if !quiet {
                    eprintln!("{msg}");
                }
            }
        }
        if terminal {
            bar.set_position(s.cases);
            bar.set_message(line);
        } else if !quiet && last_line.elapsed() >= std::time::Duration::from_secs(10) {
            last_line = std::time::Instant::now();
            eprintln!("{:.0}s: {line}", s.elapsed.as_secs_f64());
        }
    };
    let (result, config) = match &resume {
        Some(dir) => (campaign::resume(dir, jobs, progress), dir.clone()),
        None => (campaign::run(&c, jobs, progress), c.out_dir.clone()),
    };
    bar.finish_and_clear();
    let s = match result {
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
        Ok(s) => s,
    };
    let state = campaign::state_config(&config).unwrap_or_else(|| c.config_record(jobs));
    let secs = s.elapsed.as_secs_f64().max(1e-9);
    let mut out = std::io::stdout().lock();
    let shard = if state.shard == "0/1" { String::new() } else { format!(", shard {}", state.shard) };
    let _ = writeln!(
        out,
        "{} seeds ({}{shard}, {jobs} jobs), {} runs: {} agreed at every stage, {} invalid (not compared), {} beyond a harness limit, {} findings; {:.1}s, {:.0} cases/s, {:.0} runs/s",
        s.cases,
        state.profile,
        s.runs,
        s.agreed,
        s.invalid,
        s.limited,
        s.findings.len(),
        secs,
        s.cases as f64 / secs,
        s.runs as f64 / secs,
    );
    // Each counter's total, and the share of programs in which it fired.
    for (pass, st) in &s.pass_stats {
        let counters: Vec<String> = st.iter().map(|(k, v)| format!("{k}={v} ({:.1}%)", s.fired_percent(pass, k))).collect();
        let _ = writeln!(out, "  {pass}: {}", counters.join(" "));
    }
    if !s.validator.is_empty() {
        let _ = writeln!(out, "Z3 validator ({}‰ of seeds, bound {}):", state.verify_permille, tandem_oracle::campaign::VALIDATOR_OPTIONS.bound);
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
        let reduced = g.reduced.as_ref().map_or(String::new(), |r| format!(", reduced: {}", r.display()));
        let _ = writeln!(out, "  [{}] {} finding(s), e.g. seed {}: {}{reduced}", g.signature, g.count, g.representative.seed, g.representative.path.display());
    }
    if let Some(path) = json {
        let report = tandem_oracle::campaign::report::FuzzReport::new(state, &s, true);
        let text = serde_json::to_string_pretty(&report).expect("a report serializes") + "\n";
        if let Err(code) = write_report(&path, &text) {
            return code;
        }
    }
    if s.findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

