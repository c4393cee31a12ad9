//! Valid input of any size gets a verdict, never a signal: a 200,000-statement chain of
//! single-use locals (which once overflowed the stack in the tree mover) and a
//! 100,000-block chain go through `tandem run`, every stage included. Each ends with a
//! summary and exit 0 or 3: the validator declines functions past its size limits
//! (`smt::MAX_BLOCKS`, `smt::MAX_STATEMENTS`: `unknown (too large)`, listed as
//! undecided), and code that does not fit the emulated machine is a harness limit.

use std::process::Command;

/// `%v0 = %a + 1; %v1 = %v0 + 1; ...; ret %v(n-1)`, expecting `a + n`.
fn local_chain(n: usize) -> String {
    let mut t = String::from("function %f(i32 %a) -> i32 {\n");
    for i in 0..n {
        t += &format!("    local i32 %v{i}\n");
    }
    t += "b0:\n    %v0 = add(%a, 1)\n";
    for i in 1..n {
        t += &format!("    %v{i} = add(%v{}, 1)\n", i - 1);
    }
    t += &format!("    ret %v{}\n}}\n; run: %f(5)\n; expect: return {}\n", n - 1, 5 + n);
    t
}

/// `b0` jumps to `b1`, ... each block adds one to `%x`, `bn` returns it.
fn block_chain(n: usize) -> String {
    let mut t = String::from("function %f(i32 %a) -> i32 {\n    local i32 %x\nb0:\n    %x = %a\n    jump b1\n");
    for i in 1..n {
        t += &format!("b{i}:\n    %x = add(%x, 1)\n    jump b{}\n", i + 1);
    }
    t += &format!("b{n}:\n    ret %x\n}}\n; run: %f(5)\n; expect: return {}\n", 5 + n - 1);
    t
}

fn run(name: &str, text: String) {
    let dir = std::env::temp_dir().join(format!("tandem-deep-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tandem")).arg("run").arg(&path).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let _ = std::fs::remove_file(&path);
    assert!(out.status.code().is_some(), "{name}: ended by a signal: {:?}\n{stdout}", out.status);
    assert!(matches!(out.status.code(), Some(0 | 3)), "{name}: exit {:?}\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("1 file(s): ") && stdout.contains(" 0 failed"), "{name}: {stdout}");
}

#[test]
fn a_200000_statement_chain_gets_a_verdict() {
    run("chain.tir", local_chain(200_000));
}

#[test]
fn a_100000_block_chain_gets_a_verdict() {
    run("blocks.tir", block_chain(100_000));
}
