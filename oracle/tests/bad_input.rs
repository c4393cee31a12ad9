//! Bad input gets a located error and exit code 2, never a panic: a table of broken case
//! files with the line, column and message each must produce, checked both through the
//! library and through the `tandem` binary; plus quickcheck properties that random and
//! mutated text never makes the parser, verifier or interpreter panic.

use quickcheck::{Arbitrary, Gen, QuickCheck, TestResult};
use std::path::PathBuf;
use std::process::Command;
use tandem_oracle::cases::casefile::CaseFile;
use tandem_oracle::exec::interp;
use tandem_oracle::campaign::replay;

/// (file text, expected "line:col: message prefix")
const BROKEN: &[(&str, &str)] = &[
    ("function %f() -> i32 {\nb0:\n    ret %x\n}\n", "3:9: undefined local %x"),
    ("function %f() -> i32 {\nb0:\n    jump b7\n}\n", "3:10: undefined block b7"),
    ("function %f() -> i32 {\nb0:\n    ret add(1, 2:i64)\n}\n", "3:9: function %f, b0, `add(1, 2:i64)`: operands of `add` have different types"),
    ("function %f() -> i32 {\nb0:\n    ret 1\nb1:\n    ret 2\n}\n", "4:1: function %f, b1: block b1 is unreachable"),
    ("function %f() -> i32 {\nb0:\n    ret frob(1)\n}\n", "3:9: expected an expression, found unknown operator `frob`"),
    ("function %f() -> i32 {\nb0:\n    ret 1\n", "4:1: expected a block label"),
    ("helper @log(i32) -> void pure\nfunction %f() -> i32 {\nb0:\n    ret 1\n}\n", "1:1: declaration of @log does not match the runtime"),
    ("function %f() -> i32 {\nb0:\n    %t = 1\n    ret 1\n}\n", "3:5: undefined local %t"),
    ("function %f(i32 %a) -> i32 {\nb0:\n    ret %a\n}\n; run: %f(1, 2)\n", "5:1: %f takes 1 argument(s), given 2"),
    ("function %f() -> i32 {\nb0:\n    ret 1\n}\n; run: %f()\n; heap: 0x00000010: 01\n", "6:9: 1 byte(s) at 0x10 lie outside the heap"),
    ("function %f() -> i32 {\nb0:\n    ret 1\n}\n; run: %f()\n; expect: return one\n", "6:18: expected a value"),
    ("function %f() -> i32 {\nb0:\n    ret 1\n}\n; trace: @log(1, 2)\n", "5:10: `; trace:` must follow a `; run:` line"),
    ("function %f() -> i32 {\nb0:\n    ret 99999999999\n}\n", "3:9: constant 99999999999 does not fit in i32"),
    ("function %f() -> i32 {\nb0:\n    ret 1 $\n}\n", "3:11: unexpected character `$`"),
    // An expectation about a callframe variable the function lacks, or about one variable
    // twice, used to pass silently.
    ("function %f() -> i32 {\nb0:\n    ret 0\n}\n; run: %f()\n; expect: return 0\n; cf-out: @zz = 5\n", "5:1: `; cf-out:` names @zz, but %f has no callframe variable @zz"),
    ("function %f() -> i32 {\n    callframe i32 @a\nb0:\n    ret 0\n}\n; run: %f()\n; expect: return 0\n; cf-out: @a = 0, @a = 7\n", "6:1: `; cf-out:` names @a twice"),
    ("function %f() -> i32 {\n    callframe i32 @a\nb0:\n    ret 0\n}\n; run: %f()\n; expect: return 0\n; cf-out: @a = 0:i64\n", "6:1: `; cf-out:` gives @a the value 0:i64, but @a is i32"),
    ("function %f() -> i32 {\n    callframe i32 @a\nb0:\n    ret 0\n}\n; run: %f()\n; cf: @a = 1, @a = 2\n; expect: return 0\n; cf-out: @a = 2\n", "6:1: `; cf:` names @a twice"),
    // Issue 8: a file with phis that is not SSA is bad input at the offending place, not
    // a compiler finding (a local assigned twice; a use before its definition).
    ("function %f(i32 %a) -> i32 {\n    local i32 %x\n    local i32 %y\nb0:\n    jump b1\nb1:\n    %x = phi(b0: %a)\n    %y = 1\n    %y = 2\n    ret add(%x, %y)\n}\n", "9:5: function %f has phis but is not in SSA form: SSA: local %y is defined more than once"),
    ("function %f(i32 %a) -> i32 {\n    local i32 %x\n    local i32 %y\nb0:\n    br %a, b1, b2\nb1:\n    %x = phi(b0: %a, b2: %y)\n    %y = add(%x, 1)\n    ret %y\nb2:\n    %y = 5\n    jump b1\n}\n", "11:5: function %f has phis but is not in SSA form: SSA: local %y is defined more than once"),
    ("function %f(i32 %a) -> i32 {\n    local i32 %x\n    local i32 %y\nb0:\n    jump b1\nb1:\n    %x = phi(b0: %a)\n    %x = add(%y, 1)\n    ret %x\n}\n", "8:5: function %f has phis but is not in SSA form: SSA: local %x is defined more than once"),
    ("function %f(i32 %a) -> i32 {\n    local i32 %x\n    local i32 %y\nb0:\n    jump b1\nb1:\n    %x = phi(b0: %a)\n    ret add(%x, (%y = 1))\n}\n", "8:9: "),
    ("function %f(i32 %a) -> i32 {\n    local i32 %x\n    local i32 %y\nb0:\n    jump b1\nb1:\n    %x = phi(b0: %a)\n    %x = %x\n    ret %x\n}\n", "8:5: function %f has phis but is not in SSA form"),
    ("function %f(i32 %a) -> i32 {\n    local i32 %x\n    local i32 %y\nb0:\n    jump b1\nb1:\n    %x = phi(b0: %a)\n    %a = %y\n    %y = add(%x, 1)\n    ret %y\n}\n", "8:5: function %f has phis but is not in SSA form"),
    ("function %f(i32 %a) -> i32 {\n    local i32 %x\n    local i32 %y\nb0:\n    jump b1\nb1:\n    %x = phi(b0: %a)\n    ret add(%x, %y)\n    %y = 1\n}\n", "9:5: "),
    ("function %f(i32 %a) -> i32 {\n    local i32 %x\n    local i32 %y\nb0:\n    jump b1\nb1:\n    %x = phi(b0: %a)\n    %x = %y\n    %y = 1\n    ret %x\n}\n", "8:5: function %f has phis but is not in SSA form"),
    ("function %f(i32 %a) -> i32 {\n    local i32 %x\n    local i32 %y\n    local i32 %z\nb0:\n    jump b1\nb1:\n    %x = phi(b0: %a)\n    %z = %y\n    %y = 1\n    ret %z\n}\n", "9:10: function %f has phis but is not in SSA form: SSA: use of %y in b1 is not dominated by its definition"),
    // A misspelt directive is an error at its own line, not a comment.
    ("function %f() -> i32 {\nb0:\n    ret 1\n}\n; run: %f()\n; expekt: return 1\n", "6:3: unknown directive `; expekt:`"),
    ("function %f() -> i32 {\nb0:\n    ret 1\n}\n; run: %f()\n; expect: return 1\n; trcae: @log(1, 2)\n", "7:3: unknown directive `; trcae:`"),
    // Files that test nothing.
    ("", "1:1: the file is empty: there is nothing to compile or run"),
    ("; only a comment\n", "1:1: the file defines no function"),
    // Unreadable bytes are located and named, never printed raw.
    ("function %f() -> i32 {\nb0:\n    ret 1 \u{0}\n}\n", "3:11: unexpected character U+0000"),
    ("\u{FEFF}function %f() -> i32 {\nb0:\n    ret 1\n}\n", "1:1: unexpected character U+FEFF"),
];

/// A file that is not UTF-8 is located at its first bad byte.
#[test]
fn bytes_that_are_not_utf8_are_located() {
    let dir = std::env::temp_dir().join(format!("tandem-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("latin1.tir");
    std::fs::write(&p, b"function %f() -> i32 {\nb0:\n    ret 1 ; caf\xe9\n}\n").unwrap();
    let err = replay::load(&p).unwrap_err();
    assert_eq!((err.line, err.col), (3, 16), "{err}");
    assert!(err.message.contains("byte 0xe9"), "{err}");
}

/// A module without a run, an empty folder and an empty seed range test nothing: each is
/// an error (exit 2), never a green `0 run(s) passed`.
#[test]
fn inputs_that_test_nothing_exit_2() {
    let module_only = write_temp("module-only.tir", "function %f() -> i32 {\nb0:\n    ret 1\n}\n");
    let empty_dir = std::env::temp_dir().join(format!("tandem-empty-dir-{}", std::process::id()));
    std::fs::create_dir_all(&empty_dir).unwrap();
    let tandem = |args: &[&std::ffi::OsStr]| Command::new(env!("CARGO_BIN_EXE_tandem")).args(args).output().unwrap();
    let out = tandem(&["run".as_ref(), module_only.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("1:1: no `; run:` line"), "{}", String::from_utf8_lossy(&out.stderr));
    // `tandem compile` takes a module alone.
    let out = tandem(&["compile".as_ref(), module_only.as_os_str(), "--emit".as_ref(), "hir".as_ref()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out = tandem(&["run".as_ref(), empty_dir.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no `.tir` file in this folder"));
    for (seed, count) in [("18446744073709551615", "5"), ("0", "0")] {
        let out = tandem(&["gen".as_ref(), "--seed".as_ref(), seed.as_ref(), "--count".as_ref(), count.as_ref()]);
        assert_eq!(out.status.code(), Some(2), "gen --seed {seed} --count {count}");
    }
    // A measurement of nothing is no figure: `tandem bench` printed `inf us each` and
    // exit 0 for these.
    for args in [&["--seeds", "0"][..], &["--runs", "0"], &["--profile-stages", "--seeds", "0"], &["--seed", "18446744073709551615", "--seeds", "2"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_tandem")).arg("bench").args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "bench {args:?}: {err}");
        assert!(err.contains("nothing") || err.contains("runs past"), "bench {args:?}: {err}");
    }
    // The last seed alone is a range of one: printed, and counted by `--stats` (both
    // iterated to a saturating end before, and printed or counted nothing).
    let last = "18446744073709551615";
    let out = tandem(&["gen".as_ref(), "--seed".as_ref(), last.as_ref(), "--count".as_ref(), "1".as_ref(), "--profile".as_ref(), "small".as_ref()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("; tandem gen --seed {last} --profile small")), "{}", String::from_utf8_lossy(&out.stdout));
    let out = tandem(&["gen".as_ref(), "--seed".as_ref(), last.as_ref(), "--count".as_ref(), "1".as_ref(), "--profile".as_ref(), "small".as_ref(), "--stats".as_ref()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("cases: 1 "), "{}", String::from_utf8_lossy(&out.stdout));
}

/// `tandem gen --out DIR` writes one case file per seed, each of which replays; and the
/// command knows its version.
#[test]
fn generated_files_replay_one_per_seed() {
    let dir = std::env::temp_dir().join(format!("tandem-gen-out-{}", std::process::id()));
    let tandem = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_tandem")).args(args).output().unwrap();
    let d = dir.to_str().unwrap();
    let out = tandem(&["gen", "--seed", "40", "--count", "3", "--profile", "small", "--out", d]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    for s in 40..43 {
        assert!(dir.join(format!("small-seed-{s}.tir")).exists());
    }
    let out = tandem(&["run", d]);
    // Every run passes; exit 3 only when the validator left some (function, pass)
    // undecided within its deterministic budget (listed as UNDECIDED, never a pass).
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.code() == Some(0) || (out.status.code() == Some(3) && text.contains("UNDECIDED")), "{text}");
    assert!(text.contains(", 0 failed,"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("3 file(s): ")), "{text}");
    let out = tandem(&["--version"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("tandem {}", env!("CARGO_PKG_VERSION")));
}

/// A case written in SSA form that is not SSA is bad input for `tandem compile` too.
#[test]
fn compile_rejects_non_ssa_input_with_exit_2() {
    let p = write_temp("non-ssa.tir", BROKEN.iter().find(|(_, w)| w.starts_with("9:5: function %f has phis")).unwrap().0);
    let out = Command::new(env!("CARGO_BIN_EXE_tandem")).args(["compile".as_ref(), p.as_os_str()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(":9:5: function %f has phis but is not in SSA form"));
}

fn write_temp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tandem-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn broken_files_get_located_errors() {
    for (i, (text, want)) in BROKEN.iter().enumerate() {
        let path = write_temp(&format!("case{i}.tir"), text);
        let err = replay::load(&path).expect_err(want);
        let got = format!("{}:{}: {}", err.line, err.col, err.message);
        assert!(got.starts_with(want), "case {i}: expected `{want}`, got `{got}`");
    }
}

#[test]
fn the_binary_exits_2_with_file_line_col() {
    let path = write_temp("cli.tir", BROKEN[0].0);
    let out = Command::new(env!("CARGO_BIN_EXE_tandem")).arg("run").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("{}:3:9: undefined local %x", path.display())), "{stderr}");
}

#[test]
fn the_binary_exits_1_on_a_mismatch_and_0_on_a_pass() {
    let body = "function %f(i32 %a) -> i32 {\nb0:\n    ret add(%a, 1)\n}\n; run: %f(41)\n";
    let fail = write_temp("mismatch.tir", &format!("{body}; expect: return 41\n"));
    let pass = write_temp("pass.tir", &format!("{body}; expect: return 42\n"));
    let run = |p: &PathBuf| Command::new(env!("CARGO_BIN_EXE_tandem")).arg("run").arg(p).output().unwrap();
    let out = run(&fail);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("end: expected return 41, got return 42"));
    assert_eq!(run(&pass).status.code(), Some(0));
    // `tandem reduce` keeps a stage's disagreement, and a wrong expectation is none: it
    // says so and names `--bless`, where it said "no run of the case fails" of a case
    // `tandem run` had just failed.
    let out = Command::new(env!("CARGO_BIN_EXE_tandem")).arg("reduce").arg(&fail).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no run of the case fails at a stage") && err.contains("tandem run --bless"), "{err}");
}

/// Parses, verifies and (when valid) runs text; must never panic.
fn exercise(text: &str) {
    if let Ok(case) = CaseFile::parse(text) {
        let _ = case.print();
        if tandem_core::verify::verify_module(&case.module).is_ok() {
            for r in &case.runs {
                if let Some(f) = case.module.function(&r.entry) {
                    if let Ok(mut input) = r.input(f) {
                        input.fuel = input.fuel.min(10_000);
                        if let Ok(actual) = interp::run(f, &input) {
                            let _ = r.check(f, &actual);
                        }
                    }
                }
            }
        }
    }
}

fn corpus_texts() -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    replay::collect_files(&[root]).unwrap().iter().map(|p| std::fs::read_to_string(p).unwrap()).collect()
}

/// A random edit of a corpus file: delete, duplicate or replace a span, or insert a token.
#[derive(Clone, Debug)]
struct Mutation {
    file: usize,
    edits: Vec<(u8, usize, usize, u8)>,
}

impl Arbitrary for Mutation {
    fn arbitrary(g: &mut Gen) -> Self {
        let n = 1 + usize::arbitrary(g) % 4;
        Mutation {
            file: usize::arbitrary(g),
            edits: (0..n).map(|_| (u8::arbitrary(g), usize::arbitrary(g), usize::arbitrary(g) % 12, u8::arbitrary(g))).collect(),
        }
    }
}

const TOKENS: &[&str] = &[
    "(", ")", ",", ":", "=", "[", "]", "{", "}", "->", "%a", "%t", "@x", "@log", "b0", "b1", "0", "-1", "i64",
    "i32", "add", "sdiv", "load.i64.s8", "store.64", "comma", "phi", "ret", "br", "jump", "switch", "call",
    "; run: %f(", "; expect: ", "trapif", "cfwrite", "\n", "9223372036854775808", "0xffffffff", "; heap-out: ",
];

fn mutate(text: &str, m: &Mutation) -> String {
    let mut s: Vec<char> = text.chars().collect();
    for &(kind, at, len, tok) in &m.edits {
        if s.is_empty() {
            break;
        }
        let at = at % s.len();
        let end = (at + len).min(s.len());
        match kind % 4 {
            0 => {
                s.drain(at..end);
            }
            1 => {
                let dup: Vec<char> = s[at..end].to_vec();
                s.splice(at..at, dup);
            }
            2 => {
                let t: Vec<char> = TOKENS[tok as usize % TOKENS.len()].chars().collect();
                s.splice(at..end, t);
            }
            _ => {
                let t: Vec<char> = TOKENS[tok as usize % TOKENS.len()].chars().collect();
                s.splice(at..at, t);
            }
        }
    }
    s.into_iter().collect()
}

#[test]
fn mutated_corpus_text_never_panics() {
    static TEXTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    fn prop(m: Mutation) -> TestResult {
        let texts = TEXTS.get_or_init(corpus_texts);
        let text = mutate(&texts[m.file % texts.len()], &m);
        exercise(&text);
        TestResult::passed()
    }
    QuickCheck::new().tests(3000).quickcheck(prop as fn(Mutation) -> TestResult);
}

#[test]
fn random_text_never_panics() {
    fn prop(s: String, toks: Vec<u8>) -> bool {
        exercise(&s);
        let joined: String = toks.iter().map(|t| TOKENS[*t as usize % TOKENS.len()]).collect::<Vec<_>>().join(" ");
        exercise(&joined);
        true
    }
    QuickCheck::new().tests(3000).quickcheck(prop as fn(String, Vec<u8>) -> bool);
}
