//! `tandem verify`: answers per function and pass with exit status 0 when all are proofs,
//! 2 on bad input; and the encoder self-check command.

use std::process::Command;

const SRC: &str = "helper @log(i32, i32) -> void effects(observable)
function %f(i32 %n) -> i32 {
    local i32 %s
    local i32 %i
b0:
    jump b1
b1:
    br slt(%i, %n), b2, b3
b2:
    %s = add(%s, mul(%i, %i))
    call @log(%i, %s)
    %i = add(%i, 1)
    jump b1
b3:
    ret %s
}
; run: %f(3)
; expect: return 5
; trace: @log(0, 0)
; trace: @log(1, 1)
; trace: @log(2, 5)
";

fn tandem(args: &[&str], src: Option<&str>) -> (i32, String, String) {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("tandem-verify-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tandem"));
    cmd.arg("verify").args(args).arg("--out").arg(dir.join("findings"));
    if let Some(src) = src {
        let p = dir.join(format!("f{}.tir", N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)));
        std::fs::write(&p, src).unwrap();
        cmd.arg(&p);
    }
    let out = cmd.output().unwrap();
    (out.status.code().unwrap(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn every_pass_of_a_loop_is_proved_and_listed_with_its_time() {
    let (code, out, err) = tandem(&["-v", "--bound", "3"], Some(SRC));
    assert_eq!(code, 0, "{out}{err}");
    // Every pass of the loop is proved for every run by the simulation check (issue 20;
    // before it, only `cprop`, and the others to the bound).
    for pass in ["ssa", "memopt", "ssapre", "dce", "ssa-destroy", "cprop"] {
        assert!(out.contains(&format!("%f {pass}: proved (")), "{pass}:\n{out}");
    }
    // Six passes: ssa, memopt, ssapre, dce, ssa-destroy and cprop.
    assert!(out.contains("all: 6 queries: 6 proved, 0 bounded, 0 vacuous, 0 unknown"), "{out}");
    assert!(out.contains("p50 ") && out.contains("histogram "), "{out}");
}

#[test]
fn one_pass_can_be_chosen() {
    let (code, out, _) = tandem(&["-v", "--pass", "ssa-destroy"], Some(SRC));
    assert_eq!(code, 0);
    assert!(out.contains("%f ssa-destroy: proved ("), "{out}");
    assert!(!out.contains("%f cprop:"), "{out}");
}

#[test]
fn bad_input_is_exit_2_with_a_location() {
    let (code, _, err) = tandem(&[], Some("function %f() -> i32 {\nb0:\n    ret nope\n}\n"));
    assert_eq!(code, 2);
    assert!(err.contains(".tir:3:"), "{err}");
    let (code, _, err) = tandem(&["--pass", "memo"], Some(SRC));
    assert_eq!(code, 2);
    assert!(err.contains("--pass memo"), "{err}");
}

#[test]
fn the_self_check_command_compares_runs() {
    let (code, out, err) = tandem(&["--self-check", "--count", "3", "--profile", "small"], None);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("runs agreed with the interpreter, 0 differed"), "{out}");
}

/// Generated seeds are named as `tandem fuzz` names them: an empty range or one past the
/// last seed is bad input (a run that validates nothing is no verdict), and the last seed
/// alone is a range of one. Before, `--count 0` answered with zero queries and exit 0, and
/// `--seed 18446744073709551615 --count 1` validated nothing at all.
#[test]
fn a_seed_range_that_names_no_seed_is_refused() {
    for args in [&["--generated", "--count", "0"][..], &["--self-check", "--count", "0"], &["--generated", "--seed", "18446744073709551615", "--count", "2"]] {
        let (code, out, err) = tandem(args, None);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains("empty") || err.contains("runs past the last seed"), "{args:?}: {err}");
    }
    let (code, out, err) = tandem(&["--generated", "--profile", "small", "--seed", "18446744073709551615", "--count", "1", "-v", "--pass", "cprop"], None);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("seed 18446744073709551615 %") && out.contains("cprop: 1 queries"), "{out}");
}
