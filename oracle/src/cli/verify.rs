//! `tandem verify`: Z3 translation validation of every pass of files or generated cases, and the encoder self-check.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tandem_oracle::campaign::replay;
use tandem_oracle::gen;
use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// Case files or folders.
    pub paths: Vec<PathBuf>,
    /// Validate only this pass (the pipeline still runs up to it).
    #[arg(long)]
    pub pass: Option<String>,
    /// The IR passes, comma-separated (default: the check pipeline).
    #[arg(long)]
    pub pipeline: Option<String>,
    /// Iterations per loop (per entry into the loop) the bounded check unrolls.
    #[arg(long, default_value_t = 4)]
    pub bound: u32,
    /// Z3 resource units (rlimit) per (function, pass): a deterministic budget, the same
    /// answer on every machine.
    #[arg(long, default_value_t = tandem_oracle::smt::Options::default().rlimit)]
    pub rlimit: u32,
    /// Validate generated cases instead of files.
    #[arg(long)]
    pub generated: bool,
    /// Check the encoder against the interpreter on generated cases.
    #[arg(long)]
    pub self_check: bool,
    /// The first generated seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// How many generated seeds.
    #[arg(long, default_value_t = 100)]
    pub count: u64,
    /// The generator profile: small, default, loops, memory or ssa (validated from SSA).
    #[arg(long, default_value = "default", value_parser = parse_profile)]
    pub profile: gen::Profile,
    /// Where finding files are written.
    #[arg(long, default_value = "findings")]
    pub out: PathBuf,
    /// Print every answer, not only those that are not proofs.
    #[arg(long, short)]
    pub verbose: bool,
}

pub fn main(a: Args) -> ExitCode {
    let Args { paths, pass, pipeline, bound, rlimit, generated, self_check, seed, count, profile, out, verbose } = a;
    let opts = tandem_oracle::smt::Options { bound, rlimit, ..Default::default() };
    if self_check {
        verify_self_check(seed, count, profile, bound)
    } else {
        let w = VerifyWhat { paths: &paths, generated, seed, count, profile };
        verify(&w, pass.as_deref(), pipeline.as_deref(), &opts, &out, verbose)
    }

}

struct VerifyWhat<'a> {
    paths: &'a [PathBuf],
    generated: bool,
    seed: u64,
    count: u64,
    profile: gen::Profile,
}

fn verify(
    what: &VerifyWhat,
    pass: Option<&str>,
    pipeline: Option<&str>,
    opts: &tandem_oracle::smt::Options,
    out_dir: &std::path::Path,
    verbose: bool,
) -> ExitCode {
    use tandem_core::passes::{check_pipeline, Pipeline};
    use tandem_oracle::smt::run::Tally;
    let fail = |msg: String| {
        eprintln!("error: {msg}");
        ExitCode::from(2)
    };
    let pipeline = match pipeline {
        Some(p) => match Pipeline::parse(p) {
            Ok(p) => p,
            Err(e) => return fail(format!("--pipeline: {e}")),
        },
        None => check_pipeline(),
    };
    if let Some(p) = pass {
        if !pipeline.passes.iter().any(|q| q.name == p) {
            return fail(format!("--pass {p}: pass `{p}` is not in the pipeline `{pipeline}`"));
        }
    }
    if !what.generated && what.paths.is_empty() {
        return fail("give case files or folders, or --generated".into());
    }
    let plan = tandem_oracle::smt::run::Plan { pipeline: &pipeline, only: pass, opts, out: out_dir };
    let mut tally = Tally::default();
    let mut out = std::io::stdout().lock();
    let mut shown = 0;
    let mut show = |tally: &Tally, out: &mut std::io::StdoutLock| {
        for e in &tally.entries[shown..] {
            if verbose || !e.answer.is_proof() {
                let _ = writeln!(out, "{} {}: {} ({:.1} ms)", e.origin, e.pass, e.answer, e.time.as_secs_f64() * 1e3);
                if let Some(p) = &e.finding {
                    let _ = writeln!(out, "  finding: {}", p.display());
                }
            }
        }
        shown = tally.entries.len();
    };
    if what.generated {
        // Seed by seed, so that answers appear as they come.
        for s in what.seed..what.seed.saturating_add(what.count) {
            if let Err(e) = tally.add_generated(s, 1, what.profile, &plan) {
                return fail(e.to_string());
            }
            show(&tally, &mut out);
        }
    } else {
        let files = match replay::collect_files(what.paths) {
            Ok(f) => f,
            Err(e) => return fail(e.to_string()),
        };
        for path in &files {
            let case = match replay::load(path) {
                Ok(c) => c,
                Err(e) => return fail(e.to_string()),
            };
            let stem = path.file_stem().map_or("case".to_string(), |s| s.to_string_lossy().into_owned());
            for f in &case.module.functions {
                // A function already in SSA form skips the passes up to `ssa`.
                let p = match tandem_oracle::smt::run::pipeline_for(f, &pipeline) {
                    Ok(p) => p,
                    Err(e) => return fail(format!("{}: %{}: {e}", path.display(), f.name)),
                };
                let origin = format!("{} %{}", path.display(), f.name);
                let plan = tandem_oracle::smt::run::Plan { pipeline: &p, ..plan };
                if let Err(e) = tally.add_function(f, &origin, &format!("{stem}-{}", f.name), &plan) {
                    return fail(format!("{origin}: {e}"));
                }
                show(&tally, &mut out);
            }
        }
    }
    let _ = write!(out, "{tally}");
    ExitCode::from(tally.status())
}

fn verify_self_check(seed: u64, count: u64, profile: gen::Profile, bound: u32) -> ExitCode {
    let s = tandem_oracle::smt::selfcheck::self_check(seed, count, profile, bound);
    let mut out = std::io::stdout().lock();
    for (sd, form, run, why) in &s.differences {
        let _ = writeln!(out, "seed {sd} ({form}), run {run}: {why}");
    }
    let _ = writeln!(
        out,
        "self-check, seeds {seed}..{} ({}), bound {bound}: {} runs agreed with the interpreter, {} differed, {} beyond the bound, {} out of fuel (not compared)",
        seed + count,
        profile.name(),
        s.compared,
        s.differences.len(),
        s.beyond_bound,
        s.fuel_exhausted
    );
    if s.differences.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

