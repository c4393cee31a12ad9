//! `tandem compile`: prints a function after an IR pass (as text, or its CFG as Graphviz
//! dot), the LIR after each backend pass, or the disassembly. `compile` reads like its
//! steps: what to emit, the pipeline prefix to run, the passes, then the printer.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tandem_core::ir::Module;
use tandem_core::passes::{default_pipeline, Form, PassManager, Pipeline};
use tandem_oracle::campaign::replay;

#[derive(clap::Args)]
pub struct Args {
    /// The `.tir` file.
    pub file: PathBuf,
    /// What to print: `hir` (IR without phis), `ssa` (IR with phis), `dot` (the CFG of
    /// the IR, HIR or SSA, as Graphviz dot: `| dot -Tsvg`), `lir` (after each backend
    /// pass) or `asm` (disassembly).
    #[arg(long, default_value = "asm")]
    pub emit: String,
    /// For `hir`/`ssa`/`dot`: print the IR after this pass (default: after `ssa` for
    /// `--emit ssa`, else after the last pass).
    #[arg(long)]
    pub after: Option<String>,
    /// The IR passes to run, comma-separated (default: the default pipeline; `none`
    /// runs no IR pass, so the backend sees the input as written).
    #[arg(long)]
    pub pipeline: Option<String>,
    /// Print each pass's statistics to standard error.
    #[arg(long)]
    pub stats: bool,
}

/// What to print.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Emit {
    /// The IR text, which must be in this form.
    Ir(Form),
    /// The CFG of the IR in whatever form it is.
    Dot,
    /// The backend's output: the LIR after each pass (`false`) or the machine code (`true`).
    Backend { asm: bool },
}

pub fn main(a: Args) -> ExitCode {
    let Args { file, emit, after, pipeline, stats } = a;
    compile(&file, &emit, after.as_deref(), pipeline.as_deref(), stats)
}

fn fail(msg: String) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

fn compile(file: &std::path::Path, emit: &str, after: Option<&str>, pipeline: Option<&str>, stats: bool) -> ExitCode {
    let emit = match parse_emit(emit) {
        Ok(e) => e,
        Err(m) => return fail(m),
    };
    let prefix = match pipeline_prefix(emit, after, pipeline) {
        Ok(p) => p,
        Err(m) => return fail(m),
    };
    let mut module = match replay::load(file) {
        Ok(c) => c.module,
        Err(e) => return fail(e.to_string()),
    };
    if let Err(code) = run_passes(&mut module, &prefix, emit, stats) {
        return code;
    }
    // Output goes through a locked handle so that a closed pipe (`| head`) ends quietly.
    let mut out = std::io::stdout().lock();
    match emit {
        Emit::Ir(_) => {
            let _ = write!(out, "{module}");
            ExitCode::SUCCESS
        }
        Emit::Dot => {
            for f in &module.functions {
                let _ = write!(out, "{}", tandem_oracle::show::dot::function_dot(f));
            }
            ExitCode::SUCCESS
        }
        Emit::Backend { asm } => print_backend(&mut out, &module, asm, stats),
    }
}

fn parse_emit(emit: &str) -> Result<Emit, String> {
    Ok(match emit {
        "hir" => Emit::Ir(Form::Hir),
        "ssa" => Emit::Ir(Form::Ssa),
        "dot" => Emit::Dot,
        "lir" => Emit::Backend { asm: false },
        "asm" => Emit::Backend { asm: true },
        other => return Err(format!("--emit {other}: expected `hir`, `ssa`, `dot`, `lir` or `asm`")),
    })
}

/// The passes to run: the pipeline up to `--after` (checked against the form `emit`
/// needs).
fn pipeline_prefix(emit: Emit, after: Option<&str>, pipeline: Option<&str>) -> Result<Pipeline, String> {
    let pipeline = match pipeline {
        Some("none") => Pipeline { passes: vec![], start: Form::Hir },
        Some(p) => Pipeline::parse(p).map_err(|e| format!("--pipeline: {e}"))?,
        None => default_pipeline(),
    };
    let backend = matches!(emit, Emit::Backend { .. });
    if backend && after.is_some() {
        return Err("--after applies to --emit hir|ssa|dot; the backend always starts after the whole pipeline".into());
    }
    let given = after.is_some();
    let shown = if pipeline.passes.is_empty() { "none".to_string() } else { pipeline.to_string() };
    let after = after.or(if emit == Emit::Ir(Form::Ssa) { Some("ssa") } else { None });
    let n = match after {
        None => pipeline.passes.len(),
        Some(a) => match pipeline.passes.iter().position(|p| p.name == a) {
            Some(i) => i + 1,
            // `--emit ssa` alone prints the IR after `ssa`, which the user did not name.
            None if !given => return Err(format!("--emit ssa prints the IR after pass `ssa` (or after --after PASS), and the pipeline `{shown}` has no `ssa`")),
            None => return Err(format!("--after {a}: pass `{a}` is not in the pipeline `{shown}`")),
        },
    };
    let form = pipeline.form_after(n);
    let want = match emit {
        Emit::Ir(want) => want,
        Emit::Dot => form,
        Emit::Backend { .. } => Form::Hir,
    };
    if form != want {
        let at = if n == 0 { "the input".to_string() } else { format!("after `{}`", pipeline.passes[n - 1].name) };
        let hint = if backend { "the backend needs IR without phis".to_string() } else { format!("use --emit {}", emit_name(form)) };
        return Err(format!("the IR {at} is in {form} form, not {want}; {hint}"));
    }
    Ok(Pipeline { passes: pipeline.passes[..n].to_vec(), start: pipeline.start })
}

/// Runs `prefix` over every function (a function written in SSA form skips the
/// pipeline up to its `ssa`); the exit status when a pass fails or cannot apply.
fn run_passes(module: &mut Module, prefix: &Pipeline, emit: Emit, stats: bool) -> Result<(), ExitCode> {
    let pm = PassManager { verify: true };
    let backend = matches!(emit, Emit::Backend { .. });
    for f in &mut module.functions {
        let mut prefix = prefix.clone();
        if prefix.start == Form::Hir && f.layout.iter().any(|&b| !f.blocks[b].phis.is_empty()) {
            match prefix.passes.iter().position(|p| p.produces == Some(Form::Ssa)) {
                Some(i) => prefix = Pipeline { passes: prefix.passes[i + 1..].to_vec(), start: Form::Ssa },
                None if prefix.passes.is_empty() && !backend => {}
                None => {
                    return Err(fail(format!(
                        "function %{} is written in SSA form, but the pipeline `{prefix}` does not start with `ssa`",
                        f.name
                    )))
                }
            }
        }
        match pm.run(&prefix, f, &mut |_, _, _| {}) {
            Ok(s) if stats => s.iter().for_each(|(pass, st)| eprintln!("%{} {pass}: {st}", f.name)),
            Ok(_) => {}
            Err(e) => {
                eprintln!("error: {e}");
                return Err(ExitCode::from(1));
            }
        }
    }
    Ok(())
}

/// Compiles every function and prints its LIR after each backend pass, or its code.
fn print_backend(out: &mut impl Write, module: &Module, asm: bool, stats: bool) -> ExitCode {
    for f in &module.functions {
        let staged = match tandem_core::backend::compile_staged(f) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: %{}: {e}", f.name);
                return ExitCode::from(1);
            }
        };
        if !asm {
            for (pass, text) in &staged.lir {
                let _ = writeln!(out, "; %{} after {pass}", f.name);
                let _ = writeln!(out, "{text}");
            }
        } else {
            // Every function is loaded at the start of the code region to run.
            let _ = writeln!(out, "%{}:   ; {} bytes at {:#010x}", f.name, staged.code.bytes.len(), tandem_core::abi::CODE_BASE);
            let _ = write!(out, "{}", tandem_core::backend::disassemble(&staged.code));
        }
        if stats {
            for (pass, counters) in staged.stats.by_pass() {
                let counters: Vec<String> = counters.iter().map(|(k, v)| format!("{k}={v}")).collect();
                eprintln!("%{} {pass}: {}", f.name, counters.join(" "));
            }
        }
    }
    ExitCode::SUCCESS
}

fn emit_name(f: Form) -> &'static str {
    match f {
        Form::Hir => "hir",
        Form::Ssa => "ssa",
    }
}
