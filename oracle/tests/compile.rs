//! `tandem compile`: prints the IR after a chosen pass, and turns bad options into a
//! clear message with exit code 2.

use std::process::Command;

const SRC: &str = "helper @log(i32, i32) -> void effects(observable)
function %f(i32 %n) -> i32 {
    local i32 %s
b0:
    br %n, b1, b2
b1:
    %s = add(%n, 1)
    call @log(%s, %n)
    jump b2
b2:
    ret %s
}
; run: %f(1)
; expect: return 2
";

fn compile(args: &[&str]) -> (i32, String, String) {
    // One file per call: the tests run in parallel.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("tandem-compile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("f{}.tir", N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)));
    std::fs::write(&p, SRC).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tandem")).arg("compile").arg(&p).args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn emit_ssa_prints_phis() {
    let (code, out, _) = compile(&["--emit", "ssa"]);
    assert_eq!(code, 0);
    assert!(out.contains("%s.2 = phi(b0: %s.0, b1: %s.1)"), "{out}");
    assert!(out.contains("%s.0 = 0"), "{out}");
}

#[test]
fn emit_hir_after_the_pipeline_has_no_phis() {
    let (code, out, err) = compile(&["--emit", "hir", "--pipeline", "ssa,ssa-destroy", "--stats"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("phi"), "{out}");
    assert!(out.contains("%s.2 = %s.1"), "{out}");
    assert!(err.contains("ssa-destroy: phis=1"), "{err}");
}

/// The CFG of the SSA form as dot: a box per block (the phi in the join), the branch's
/// two arrows labelled, the jump's unlabelled; worked out from `SRC` by hand.
#[test]
fn emit_dot_draws_the_cfg_of_any_stage() {
    let (code, out, err) = compile(&["--emit", "dot", "--after", "ssa"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("digraph \"%f\" {"), "{out}");
    assert!(out.contains("b0 -> b1 [label=\"then\"];\n  b0 -> b2 [label=\"else\"];\n  b1 -> b2;\n}"), "{out}");
    assert!(out.contains("  %s.2 = phi(b0: %s.0, b1: %s.1)\\l"), "{out}");
    // After the whole pipeline the IR is HIR again: no phi in any box.
    let (code, out, err) = compile(&["--emit", "dot"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("phi(") && out.contains("b0 [label=\"b0:"), "{out}");
}

#[test]
fn bad_options_are_explained() {
    let (code, _, err) = compile(&["--emit", "hir", "--after", "ssa"]);
    assert_eq!(code, 2);
    assert!(err.contains("the IR after `ssa` is in SSA form, not HIR; use --emit ssa"), "{err}");
    let (code, _, err) = compile(&["--pipeline", "ssa,frob"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown pass `frob`"), "{err}");
    let (code, _, err) = compile(&["--emit", "hir", "--after", "cprop", "--pipeline", "ssa,dce"]);
    assert_eq!(code, 2);
    assert!(err.contains("pass `cprop` is not in the pipeline `ssa,dce`"), "{err}");
    // `--emit ssa` alone means after `ssa`: a pipeline without it says so, not "--after
    // ssa", which the user did not give; the empty pipeline is named `none`, as given.
    let (code, _, err) = compile(&["--emit", "ssa", "--pipeline", "none"]);
    assert_eq!(code, 2);
    assert!(err.contains("--emit ssa prints the IR after pass `ssa` (or after --after PASS), and the pipeline `none` has no `ssa`"), "{err}");
    let (code, _, err) = compile(&["--emit", "llvm"]);
    assert_eq!(code, 2);
    assert!(err.contains("--emit llvm: expected `hir`, `ssa`, `dot`, `lir` or `asm`"), "{err}");
    let (code, _, err) = compile(&["--emit", "asm", "--after", "ssa"]);
    assert_eq!(code, 2);
    assert!(err.contains("--after applies to --emit hir|ssa"), "{err}");
    let (code, _, err) = compile(&["--emit", "asm", "--pipeline", "ssa"]);
    assert_eq!(code, 2);
    assert!(err.contains("the backend needs IR without phis"), "{err}");
}

#[test]
fn emit_lir_and_asm_show_the_backend() {
    let (code, out, err) = compile(&["--emit", "lir"]);
    assert_eq!(code, 0, "{err}");
    for pass in ["rationalize", "decompose", "lower", "regalloc"] {
        assert!(out.contains(&format!("; %f after {pass}")), "{pass} missing:\n{out}");
    }
    // Every stage, register allocation included, starts with the same header.
    assert_eq!(out.matches("lir %f -> i32 {").count(), 4, "{out}");
    // Helper calls by name, never Rust `Debug` output.
    assert!(out.contains("call @log"), "{out}");
    assert!(!out.contains("Ir(") && !out.contains("Stats {"), "{out}");
    let (code, out, err) = compile(&["--emit", "asm", "--pipeline", "none", "--stats"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("%f:   ; "), "{out}");
    assert!(out.contains("ret"), "{out}");
    // Blocks by label, jumps to labels, calls to helpers by name.
    for label in ["\nb0:\n", "\nb1:\n", "\nb2:\n"] {
        assert!(out.contains(label), "{label} missing:\n{out}");
    }
    assert!(out.contains("call @log"), "{out}");
    assert!(out.lines().any(|l| l.ends_with(" b2") || l.ends_with(" b1")), "no jump by label:\n{out}");
    assert!(err.contains("%f regalloc: globals="), "{err}");
    assert!(!err.contains("Stats {"), "{err}");
}
