//! `tandem compile`: prints a function after an IR pass, the LIR after each backend pass, or the disassembly.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tandem_oracle::campaign::replay;

#[derive(clap::Args)]
pub struct Args {
    /// The `.tir` file.
    pub file: PathBuf,
    /// What to print: `hir` (IR without phis), `ssa` (IR with phis), `lir` (after each
    /// backend pass) or `asm` (disassembly).
    #[arg(long, default_value = "asm")]
    pub emit: String,
    /// For `hir`/`ssa`: print the IR after this pass (default: after `ssa` for
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

pub fn main(a: Args) -> ExitCode {
    let Args { file, emit, after, pipeline, stats } = a;
    compile(&file, &emit, after.as_deref(), pipeline.as_deref(), stats)

}

fn compile(file: &std::path::Path, emit: &str, after: Option<&str>, pipeline: Option<&str>, stats: bool) -> ExitCode {
    use tandem_core::passes::{default_pipeline, Form, PassManager, Pipeline};
    let fail = |msg: String| {
        eprintln!("error: {msg}");
        ExitCode::from(2)
    };
    let (want, backend) = match emit {
        "hir" => (Form::Hir, None),
        "ssa" => (Form::Ssa, None),
        "lir" => (Form::Hir, Some(false)),
        "asm" => (Form::Hir, Some(true)),
        other => return fail(format!("--emit {other}: expected `hir`, `ssa`, `lir` or `asm`")),
    };
    let pipeline = match pipeline {
        Some("none") => Pipeline { passes: vec![], start: Form::Hir },
        Some(p) => match Pipeline::parse(p) {
            Ok(p) => p,
            Err(e) => return fail(format!("--pipeline: {e}")),
        },
        None => default_pipeline(),
    };
    if backend.is_some() && after.is_some() {
        return fail("--after applies to --emit hir|ssa; the backend always starts after the whole pipeline".into());
    }
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
        let hint = if backend.is_some() { "the backend needs IR without phis".to_string() } else { format!("use --emit {}", emit_name(form)) };
        return fail(format!("the IR {at} is in {form} form, not {want}; {hint}"));
    }
    let prefix = Pipeline { passes: pipeline.passes[..n].to_vec(), start: pipeline.start };
    let case = match replay::load(file) {
        Ok(c) => c,
        Err(e) => return fail(e.to_string()),
    };
    let mut module = case.module;
    // Output goes through a locked handle so that a closed pipe (`| head`) ends quietly.
    let mut out = std::io::stdout().lock();
    let pm = PassManager { verify: true };
    for f in &mut module.functions {
        // A function written in SSA form (with phis) skips the pipeline up to its `ssa`.
        let mut prefix = prefix.clone();
        if prefix.start == Form::Hir && f.layout.iter().any(|&b| !f.blocks[b].phis.is_empty()) {
            match prefix.passes.iter().position(|p| p.produces == Some(Form::Ssa)) {
                Some(i) => prefix = Pipeline { passes: prefix.passes[i + 1..].to_vec(), start: Form::Ssa },
                None if prefix.passes.is_empty() && backend.is_none() => {}
                None => {
                    return fail(format!(
                        "function %{} is written in SSA form, but the pipeline `{prefix}` does not start with `ssa`",
                        f.name
                    ))
                }
            }
        }
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
    let Some(asm) = backend else {
        let _ = write!(out, "{module}");
        return ExitCode::SUCCESS;
    };
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

fn emit_name(f: tandem_core::passes::Form) -> &'static str {
    match f {
        tandem_core::passes::Form::Hir => "hir",
        tandem_core::passes::Form::Ssa => "ssa",
    }
}

