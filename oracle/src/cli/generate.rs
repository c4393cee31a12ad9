//! `tandem gen`: prints or writes generated case files, or measures the generator (`--stats`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tandem_oracle::gen;
use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The profile: small, default, loops, memory or ssa.
    #[arg(long, default_value = "default", value_parser = parse_profile)]
    pub profile: gen::Profile,
    /// How many consecutive seeds.
    #[arg(long, default_value_t = 1)]
    pub count: u64,
    /// Print statistics over the seeds instead of the cases.
    #[arg(long)]
    pub stats: bool,
    /// Write each case to its own file in this folder (`PROFILE-seed-N.tir`, each
    /// replayable with `tandem run`) instead of printing them.
    #[arg(long, conflicts_with = "stats")]
    pub out: Option<PathBuf>,
}

pub fn main(a: Args) -> ExitCode {
    let Args { seed, profile, count, stats, out } = a;
    generate(seed, profile, count, stats, out)
}

fn generate(seed: u64, p: gen::Profile, count: u64, stats: bool, dir: Option<PathBuf>) -> ExitCode {
    let seeds = match tandem_oracle::campaign::seed_range(seed, count, "--count") {
        Ok(seeds) => seeds,
        Err(why) => {
            eprintln!("error: {why}: there is nothing to generate");
            return ExitCode::from(2);
        }
    };
    if let Some(dir) = dir {
        if let Err(e) = std::fs::create_dir_all(&dir) {
            eprintln!("error: cannot create {}: {e}", dir.display());
            return ExitCode::from(2);
        }
        for s in seeds {
            let path = dir.join(format!("{}-seed-{s}.tir", p.name()));
            if let Err(e) = std::fs::write(&path, gen::render(s, p)) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
        println!("{count} case file(s) in {}", dir.display());
        return ExitCode::SUCCESS;
    }
    // Output goes through a locked handle and a closed pipe (`| head`) ends quietly.
    let mut out = std::io::stdout().lock();
    if stats {
        let s = gen::stats(seeds, &p.config());
        let _ = write!(out, "{s}");
        return if s.broken.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) };
    }
    for (i, s) in seeds.enumerate() {
        let sep = if i > 0 { "\n" } else { "" };
        if write!(out, "{sep}{}", gen::render(s, p)).is_err() {
            break;
        }
    }
    ExitCode::SUCCESS
}

