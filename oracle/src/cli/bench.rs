//! `tandem bench`: throughput and scaling measurements.

use std::io::Write;
use std::process::ExitCode;
use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// Runs per fixed-program measurement.
    #[arg(long, default_value_t = 20_000)]
    pub runs: u64,
    /// The first generated seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// How many generated seeds.
    #[arg(long, default_value_t = 500)]
    pub seeds: u64,
    /// Instead: the scaling check, the time of every stage on functions of 100,
    /// 1,000 and 10,000 statements, locals and blocks, with each stage's growth.
    #[arg(long)]
    pub scaling: bool,
    /// Instead: the time of every stage of the full check (generation, interpreters,
    /// each IR pass, checkers, each backend stage, emulation) on the generated seeds,
    /// per program and as a share of the whole.
    #[arg(long)]
    pub profile_stages: bool,
}

pub fn main(a: Args) -> ExitCode {
    let Args { runs, seed, seeds, scaling, profile_stages } = a;
    // A measurement of nothing is no figure (it printed `inf us each` and exit 0): the
    // seeds and runs it measures must be some. The scaling check takes neither.
    let refuse = |why: String| {
        eprintln!("error: {why}");
        ExitCode::from(2)
    };
    if scaling {
        return scaling_check();
    }
    let seeds = match tandem_oracle::campaign::seed_range(seed, seeds, "--seeds") {
        Ok(r) => r,
        Err(why) => return refuse(format!("{why}: there is nothing to measure")),
    };
    if profile_stages {
        return stages(seeds);
    }
    if runs == 0 {
        return refuse("--runs 0: the fixed-program measurements would run nothing".into());
    }
    bench(runs, seeds)
}

fn stages(seeds: std::ops::RangeInclusive<u64>) -> ExitCode {
    let mut emu = match emulator() {
        Ok(e) => e,
        Err(code) => return code,
    };
    let (first, last) = (*seeds.start(), *seeds.end());
    match tandem_oracle::measure::bench::stage_profile(seeds, &mut emu) {
        Ok(profile) => {
            println!("full check by stage: seeds {first}..={last} (default profile)");
            println!("{profile}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn scaling_check() -> ExitCode {
    let mut emu = match emulator() {
        Ok(e) => e,
        Err(code) => return code,
    };
    match tandem_oracle::measure::scaling::report(&mut emu, &mut std::io::stdout()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn bench(runs: u64, seeds: std::ops::RangeInclusive<u64>) -> ExitCode {
    let mut emu = match emulator() {
        Ok(e) => e,
        Err(code) => return code,
    };
    let (first, last) = (*seeds.start(), *seeds.end());
    let fixed = tandem_oracle::measure::bench::emulator_bench(runs);
    let generated = fixed.and_then(|mut m| {
        m.extend(tandem_oracle::measure::bench::generated_bench(seeds, &mut emu)?);
        Ok(m)
    });
    match generated {
        Ok(measurements) => {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "fixed program: {runs} runs; generated programs: seeds {first}..={last} (default profile)");
            for m in &measurements {
                let _ = writeln!(out, "{m}");
            }
            if let Some(line) = tandem_oracle::measure::bench::full_check_ratio(&measurements) {
                let _ = writeln!(out, "{line}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

