//! The `tandem` command: the command-line layer over `tandem-oracle`. It turns reports
//! into text and exit codes: 0 when everything passed, 1 on a mismatch, 2 on bad input.

use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tandem_oracle::{gen, replay};

#[derive(Parser)]
#[command(name = "tandem", about = "Differential testing harness for the Tandem x86-32 compiler")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs every run of the given case files (folders are searched for `.tir` files) and
    /// checks each against its expectation.
    Run {
        /// Case files or folders.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Rewrite the expectations of failing runs to what they did.
        #[arg(long)]
        bless: bool,
        /// Print passing runs too.
        #[arg(long, short)]
        verbose: bool,
    },
    /// Compiles a file (a module or a case file) and prints the IR at a chosen point.
    Compile {
        /// The `.tir` file.
        file: PathBuf,
        /// What to print: `hir` (IR without phis) or `ssa` (IR with phis).
        #[arg(long, default_value = "hir")]
        emit: String,
        /// Print the IR after this pass (default: after `ssa` for `--emit ssa`, else after
        /// the last pass).
        #[arg(long)]
        after: Option<String>,
        /// The passes to run, comma-separated (default: the default pipeline).
        #[arg(long)]
        pipeline: Option<String>,
        /// Print each pass's statistics to standard error.
        #[arg(long)]
        stats: bool,
    },
    /// Generates random case files (with expectations from the reference interpreter),
    /// or with --stats measures what the generator makes.
    Gen {
        /// The first seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// The profile: small, default, loops or memory.
        #[arg(long, default_value = "default")]
        profile: String,
        /// How many consecutive seeds.
        #[arg(long, default_value_t = 1)]
        count: u64,
        /// Print statistics over the seeds instead of the cases.
        #[arg(long)]
        stats: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run { paths, bless, verbose } => run(&paths, bless, verbose),
        Command::Compile { file, emit, after, pipeline, stats } => {
            compile(&file, &emit, after.as_deref(), pipeline.as_deref(), stats)
        }
        Command::Gen { seed, profile, count, stats } => generate(seed, &profile, count, stats),
    }
}

fn compile(file: &std::path::Path, emit: &str, after: Option<&str>, pipeline: Option<&str>, stats: bool) -> ExitCode {
    use tandem_core::passes::{default_pipeline, Form, PassManager, Pipeline};
    let fail = |msg: String| {
        eprintln!("error: {msg}");
        ExitCode::from(2)
    };
    let want = match emit {
        "hir" => Form::Hir,
        "ssa" => Form::Ssa,
        other => return fail(format!("--emit {other}: expected `hir` or `ssa`")),
    };
    let pipeline = match pipeline.map(Pipeline::parse).unwrap_or_else(|| Ok(default_pipeline())) {
        Ok(p) => p,
        Err(e) => return fail(format!("--pipeline: {e}")),
    };
    let after = after.or(if want == Form::Ssa { Some("ssa") } else { None });
    let n = match after {
        None => pipeline.passes.len(),
        Some(a) => match pipeline.passes.iter().position(|p| p.name == a) {
            Some(i) => i + 1,
            None => return fail(format!("--after {a}: pass `{a}` is not in the pipeline `{pipeline}`")),
        },
    };
    let form = pipeline.form_after(n);
    if form != want {
        let at = if n == 0 { "the input".to_string() } else { format!("after `{}`", pipeline.passes[n - 1].name) };
        return fail(format!("the IR {at} is in {form} form, not {want}; use --emit {}", emit_name(form)));
    }
    let prefix = Pipeline { passes: pipeline.passes[..n].to_vec(), start: pipeline.start };
    let case = match replay::load(file) {
        Ok(c) => c,
        Err(e) => return fail(e.to_string()),
    };
    let mut module = case.module;
    let pm = PassManager { verify: true };
    for f in &mut module.functions {
        match pm.run(&prefix, f, &mut |_, _, _| {}) {
            Ok(s) => {
                if stats {
                    for (pass, st) in s {
                        eprintln!("%{} {pass}: {st}", f.name);
                    }
                }
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(1);
            }
        }
    }
    print!("{module}");
    ExitCode::SUCCESS
}

fn emit_name(f: tandem_core::passes::Form) -> &'static str {
    match f {
        tandem_core::passes::Form::Hir => "hir",
        tandem_core::passes::Form::Ssa => "ssa",
    }
}

fn generate(seed: u64, profile: &str, count: u64, stats: bool) -> ExitCode {
    let Some(p) = gen::Profile::from_name(profile) else {
        let names: Vec<&str> = gen::Profile::ALL.iter().map(|p| p.name()).collect();
        eprintln!("error: unknown profile `{profile}` (expected one of: {})", names.join(", "));
        return ExitCode::from(2);
    };
    // Output goes through a locked handle and a closed pipe (`| head`) ends quietly.
    let mut out = std::io::stdout().lock();
    if stats {
        let s = gen::stats(seed, count, &p.config());
        let _ = write!(out, "{s}");
        return if s.broken.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) };
    }
    for (i, s) in (seed..seed.saturating_add(count)).enumerate() {
        let sep = if i > 0 { "\n" } else { "" };
        if write!(out, "{sep}{}", gen::render(s, p)).is_err() {
            break;
        }
    }
    ExitCode::SUCCESS
}

fn run(paths: &[PathBuf], bless: bool, verbose: bool) -> ExitCode {
    let files = match replay::collect_files(paths) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let (mut passed, mut failed, mut bad) = (0, 0, 0);
    for path in &files {
        match replay::replay_file(path, bless) {
            Err(e) => {
                eprintln!("error: {e}");
                bad += 1;
            }
            Ok(report) => {
                for r in &report.runs {
                    if r.mismatches.is_empty() {
                        passed += 1;
                        if verbose {
                            println!("ok   {}:{}: {}", path.display(), r.line, r.title);
                        }
                    } else {
                        failed += 1;
                        println!("FAIL {}:{}: {}", path.display(), r.line, r.title);
                        for m in &r.mismatches {
                            println!("       {m}");
                        }
                    }
                }
                if report.blessed {
                    println!("blessed {}", path.display());
                }
            }
        }
    }
    println!("{} file(s): {passed} run(s) passed, {failed} failed, {bad} file(s) with bad input", files.len());
    if bad > 0 {
        ExitCode::from(2)
    } else if failed > 0 && !bless {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
