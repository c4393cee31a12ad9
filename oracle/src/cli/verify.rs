//! `tandem verify`: Z3 translation validation of every pass of files or generated cases
//! (console, `--json` and `--junit` reports, counted alike by
//! [`tandem_oracle::campaign::report`]), and the encoder self-check.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tandem_oracle::campaign::seed_range;
use tandem_oracle::campaign::replay;
use tandem_core::passes::{check_pipeline, Form, Pipeline};
use tandem_oracle::gen;
use tandem_oracle::smt::run::{Plan, Tally};
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
    #[arg(long, default_value_t = VERIFY_RLIMIT)]
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
    /// Write a JSON report here (format `tandem-verify-report/1`, see the README).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write a JUnit XML report here (one test case per function and pass).
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// For each changed pair not proved for every run, print why the simulation check
    /// did not prove it: what ended each of its tries (the check again, in this process).
    #[arg(long)]
    pub why: bool,
}

/// `tandem verify`'s budget per (function, pass): three times the validator's default
/// ([`tandem_oracle::smt::Options`], which campaigns use; corpus replay gives 4,000,000).
/// Most of the changed pairs a pass leaves unproved at 20,000,000 units run out
/// of budget in the inference, not out of candidates: with every pass on the default,
/// loops, memory and ssa profiles, 100 seeds each, seeds 1000-1099 went from 2,080 to
/// 2,083 of 2,089 changed pairs proved for every run (memopt 98.6% to 99.1%, SSAPRE
/// 98.9% to 99.2%) and seeds 1100-1199 from 2,078 to 2,083 (memopt 98.0% to 99.1%,
/// SSAPRE 98.9% to 99.2%), for 42-55% more CPU time; the median answer is the same.
pub const VERIFY_RLIMIT: u32 = 60_000_000;

pub fn main(a: Args) -> ExitCode {
    let Args { paths, pass, pipeline, bound, rlimit, generated, self_check, seed, count, profile, out, verbose, json, junit, why } = a;
    let opts = tandem_oracle::smt::Options { bound, rlimit, ..Default::default() };
    // The seeds, refused as `tandem fuzz` refuses them: an empty range validates nothing,
    // which is no verdict.
    let seeds = match (self_check || generated).then(|| seed_range(seed, count, "--count")).transpose() {
        Ok(seeds) => seeds,
        Err(msg) => return fail(msg),
    };
    if self_check {
        return verify_self_check(seeds.expect("--self-check names seeds"), profile, bound);
    }
    let w = VerifyWhat { paths: &paths, seeds, profile };
    let pipeline = match plan_pipeline(pipeline.as_deref(), pass.as_deref()) {
        Ok(p) => p,
        Err(msg) => return fail(msg),
    };
    if w.seeds.is_none() && w.paths.is_empty() {
        return fail("give case files or folders, or --generated".into());
    }
    let plan = tandem_oracle::smt::run::Plan { pipeline: &pipeline, only: pass.as_deref(), opts: &opts, out: &out };
    // The reports list every query; without them, only the counts are kept.
    let keep = json.is_some() || junit.is_some();
    let tally = match verify(&w, &plan, Show { verbose, why }, keep) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let _ = write!(std::io::stdout().lock(), "{tally}");
    let report = tandem_oracle::campaign::report::VerifyReportJson::new(&tally);
    if let Some(path) = junit {
        if let Err(code) = write_report(&path, &tandem_oracle::campaign::report::verify_junit(&tally)) {
            return code;
        }
    }
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&report).expect("a report serializes") + "\n";
        if let Err(code) = write_report(&path, &text) {
            return code;
        }
    }
    ExitCode::from(report.exit_status)
}

/// Bad input: the message, exit status 2.
fn fail(msg: String) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

struct VerifyWhat<'a> {
    paths: &'a [PathBuf],
    /// The generated seeds (`--generated`), else none: the case files of `paths`.
    seeds: Option<std::ops::RangeInclusive<u64>>,
    profile: gen::Profile,
}

/// The pipeline to validate (`--pipeline`, or the check pipeline), which must hold `--pass`.
fn plan_pipeline(pipeline: Option<&str>, pass: Option<&str>) -> Result<Pipeline, String> {
    let pipeline = match pipeline {
        Some(p) => Pipeline::parse(p).map_err(|e| format!("--pipeline: {e}"))?,
        None => check_pipeline(),
    };
    if let Some(p) = pass {
        if !pipeline.passes.iter().any(|q| q.name == p) {
            return Err(format!("--pass {p}: pass `{p}` is not in the pipeline `{pipeline}`"));
        }
    }
    Ok(pipeline)
}

/// The pipeline for `f`: a function already in SSA form (phis, as the `ssa` profile and
/// SSA case files write) skips the passes up to `ssa`.
fn pipeline_for(f: &tandem_core::ir::Function, pipeline: &Pipeline) -> Result<Pipeline, String> {
    let has_phis = f.layout.iter().any(|&b| !f.blocks[b].phis.is_empty());
    if !has_phis || pipeline.start != Form::Hir {
        return Ok(pipeline.clone());
    }
    let rest: Vec<&str> = pipeline.passes.iter().skip_while(|q| q.name != "ssa").skip(1).map(|q| q.name).collect();
    Pipeline::new_from(Form::Ssa, &rest).map_err(|e| e.to_string())
}

/// What `verify` prints besides the counts: every answer (`verbose`, else those that are
/// not proofs), and why changed pairs are not proved for every run (`why`).
#[derive(Clone, Copy)]
struct Show {
    verbose: bool,
    why: bool,
}

/// Validates every function of the files or generated seeds, printing the answers that
/// are not proofs (every answer with `verbose`) as they come.
fn verify(what: &VerifyWhat, plan: &Plan, show_what: Show, keep: bool) -> Result<Tally, ExitCode> {
    let Show { verbose, why } = show_what;
    let mut tally = if keep { Tally::keeping_entries() } else { Tally::default() };
    let mut out = std::io::stdout().lock();
    let mut show = |entries: &[tandem_oracle::smt::run::Entry]| {
        for e in entries {
            if verbose || !e.answer.is_proof() {
                let _ = writeln!(out, "{} {}: {} ({:.1} ms)", e.origin, e.pass, e.answer, e.time.as_secs_f64() * 1e3);
                if let Some(p) = &e.finding {
                    let _ = writeln!(out, "  finding: {}", p.display());
                }
            }
        }
    };
    // Generated seeds are made one at a time (ten thousand modules at once would hold
    // hundreds of megabytes); files are all loaded first, so bad input stops the run
    // before anything is validated.
    let files = if what.seeds.is_some() { vec![] } else { load_files(what.paths)? };
    let cfg = what.profile.config();
    let seeds = what.seeds.clone().into_iter().flatten();
    let generated = seeds.map(|s| (gen::generate(s, &cfg).case.module, format!("seed {s}"), format!("{}-seed-{s}", what.profile.name())));
    for (module, origin, stem) in files.into_iter().chain(generated) {
        for f in &module.functions {
            let p = pipeline_for(f, plan.pipeline).map_err(|e| fail(format!("{origin}: %{}: {e}", f.name)))?;
            let origin = format!("{origin} %{}", f.name);
            let plan = Plan { pipeline: &p, ..*plan };
            // Finding files: `FILE-FUNCTION-smt-PASS.tir`, or `PROFILE-seed-N-smt-PASS.tir`
            // as a campaign names them.
            let stem = if what.seeds.is_some() { stem.clone() } else { format!("{stem}-{}", f.name) };
            let added = tally.add_function(f, &origin, &stem, &plan).map_err(|e| fail(format!("{origin}: {e}")))?;
            show(&added);
            let short: Vec<String> = added.iter().filter(|e| why && e.changed && e.answer.kind() != "proved").map(|e| e.pass.clone()).collect();
            if !short.is_empty() {
                for (pass, lines) in Tally::explain(f, &plan, &short).map_err(|e| fail(format!("{origin}: {e}")))? {
                    for l in lines {
                        let _ = writeln!(std::io::stdout().lock(), "  why {origin} {pass}: {l}");
                    }
                }
            }
        }
        tandem_oracle::measure::memory::release_free();
    }
    Ok(tally)
}

/// The modules of the case files, each with its origin (the file) and the stem of its
/// finding files (bad input: exit 2).
fn load_files(paths: &[PathBuf]) -> Result<Vec<(tandem_core::ir::Module, String, String)>, ExitCode> {
    let files = replay::collect_files(paths).map_err(|e| fail(e.to_string()))?;
    let mut out = vec![];
    for path in &files {
        let case = replay::load(path).map_err(|e| fail(e.to_string()))?;
        let stem = path.file_stem().map_or("case".to_string(), |s| s.to_string_lossy().into_owned());
        out.push((case.module, path.display().to_string(), stem));
    }
    Ok(out)
}

fn verify_self_check(seeds: std::ops::RangeInclusive<u64>, profile: gen::Profile, bound: u32) -> ExitCode {
    let (first, last) = (*seeds.start(), *seeds.end());
    let s = tandem_oracle::smt::selfcheck::self_check(seeds, profile, bound);
    let mut out = std::io::stdout().lock();
    for (sd, form, run, why) in &s.differences {
        let _ = writeln!(out, "seed {sd} ({form}), run {run}: {why}");
    }
    let _ = writeln!(
        out,
        "self-check, seeds {first}..={last} ({}), bound {bound}: {} runs agreed with the interpreter, {} differed, {} beyond the bound, {} out of fuel (not compared)",
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

