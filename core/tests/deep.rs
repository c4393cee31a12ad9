//! No stage recurses as deep as its input is long (issue 17, "the house"): a chain of
//! 200,000 single-use locals in one block (which the tree mover would fold into one tree
//! 200,000 deep, were its trees not bounded by `ir::MAX_EXPR_DEPTH`) and a chain of
//! 100,000 blocks (each jumping to the next, which every walk of the CFG and of the
//! dominator tree follows to the end) go through parse, verify, the whole pipeline with
//! the verifier after every pass, the backend and the printer, on the test thread's own
//! small stack. `DEEP_N` sets the length of both chains (to measure growth).
//!
//! At opt-level 1 the block chain takes about 5 s and the local chain about 10 s on two
//! shared cores (they took 32 s and 20 s while `ssa` and `ssapre` tested membership in
//! each local's definition blocks, and the iterated dominance frontier in its output,
//! with a linear scan).

use std::fmt::Write;
use std::time::Instant;
use tandem_core::passes::{default_pipeline, PassManager};

/// Parse, verify, the pipeline, compile and print; panics (or overflows) on a failure.
fn through_every_stage(src: &str) {
    let start = Instant::now();
    let (module, _) = tandem_core::text::parse_module(src).expect("parses");
    tandem_core::verify::verify_module(&module).expect("verifies");
    let mut f = module.functions[0].clone();
    let parsed = start.elapsed();
    let mut last = Instant::now();
    PassManager { verify: true }
        .run(&default_pipeline(), &mut f, &mut |name, _, _| {
            eprintln!("  {name}: {:?}", last.elapsed());
            last = Instant::now();
        })
        .expect("the pipeline runs");
    let passes = start.elapsed();
    let code = tandem_core::backend::compile(&f).expect("compiles");
    assert!(!code.bytes.is_empty());
    let compiled = start.elapsed();
    let mut text = String::new();
    tandem_core::text::printer::write_function(&mut text, &f).expect("prints");
    assert!(text.len() > 100);
    eprintln!("parse+verify {parsed:?}, passes {passes:?}, backend {compiled:?}, print {:?}", start.elapsed());
}

#[test]
fn a_chain_of_200000_single_use_locals() {
    let n: usize = std::env::var("DEEP_N").map_or(200_000, |v| v.parse().unwrap());
    let mut s = String::from("function %f(i32 %v0) -> i32 {\n");
    for i in 1..=n {
        let _ = writeln!(s, "    local i32 %v{i}");
    }
    s += "b0:\n";
    for i in 1..=n {
        let _ = writeln!(s, "    %v{i} = add(%v{}, 1)", i - 1);
    }
    let _ = writeln!(s, "    ret %v{n}\n}}");
    through_every_stage(&s);
}

#[test]
fn a_chain_of_100000_blocks() {
    let n: usize = std::env::var("DEEP_N").map_or(100_000, |v| v.parse().unwrap());
    let mut s = String::from("function %f(i32 %a) -> i32 {\n    local i32 %x\nb0:\n    %x = %a\n    jump b1\n");
    for i in 1..n {
        let _ = writeln!(s, "b{i}:\n    %x = add(%x, {i})\n    jump b{}", i + 1);
    }
    let _ = writeln!(s, "b{n}:\n    ret %x\n}}");
    through_every_stage(&s);
}

/// A function whose one statement `%x = add(c, not(not(... 0)))` is a tree `depth` nodes
/// deep, where `c` is an `i32` constant out of its range when `bad` (an error found before
/// the deep operand is checked).
fn nested(depth: usize, bad: bool) -> tandem_core::ir::Function {
    use tandem_core::ir::{BinOp, ExprData, Function, Type, UnOp};
    let mut f = Function::new("f", Type::I32);
    let x = f.new_local("x", Type::I32);
    let mut e = f.exprs.push(ExprData::Const { ty: Type::I32, value: 0 });
    for _ in 0..depth - 3 {
        e = f.exprs.push(ExprData::Unary { op: UnOp::Not, arg: e });
    }
    let c = f.exprs.push(ExprData::Const { ty: Type::I32, value: if bad { 1 << 40 } else { 0 } });
    let sum = f.exprs.push(ExprData::Binary { op: BinOp::Add, lhs: c, rhs: e });
    let s = f.exprs.push(ExprData::Assign { local: x, value: sum });
    let entry = f.entry();
    f.blocks[entry].stmts.push(s);
    f
}

#[test]
fn the_verifier_checks_a_tree_at_the_depth_bound_and_reports_one_past_it_alone() {
    use tandem_core::ir::MAX_EXPR_DEPTH;
    use tandem_core::verify::verify_function;
    let messages = |depth, bad| match verify_function(&nested(depth, bad)) {
        Ok(()) => vec![],
        Err(es) => es.into_iter().map(|e| e.to_string()).collect::<Vec<_>>(),
    };
    assert_eq!(messages(MAX_EXPR_DEPTH, false), Vec::<String>::new());
    let wrong = messages(MAX_EXPR_DEPTH, true);
    assert_eq!(wrong.len(), 1, "{wrong:?}");
    assert!(wrong[0].contains("is not in canonical i32 form"), "{wrong:?}");
    // One level more: the depth alone, not what the check found in the tree; and a tree
    // far deeper is reported the same way, without recursing down it.
    for depth in [MAX_EXPR_DEPTH + 1, 200_000] {
        for bad in [false, true] {
            let deep = messages(depth, bad);
            assert_eq!(deep.len(), 1, "{deep:?}");
            assert!(deep[0].ends_with(&format!("is a tree deeper than {MAX_EXPR_DEPTH} levels")), "{deep:?}");
        }
    }
}
