//! Compile time stays near-linear in the size of a function (issue 8, "Blow-ups"):
//! `cprop`'s tree mover once kept, for every tree, the list of every local it read
//! through the moves it carried, each with its chain of moves — memory cubic in the
//! number of locals of a block (600 locals: 1.3 GB). The whole pipeline and the backend
//! now compile 2,000 locals in one block in a fraction of a second; the growth of every
//! stage up to 10,000 is measured by `tandem bench --scaling`. SSAPRE once gave every
//! expression over a variable assigned in each of 3,000 diamonds a Φ at every join.

use std::fmt::Write;
use std::time::{Duration, Instant};
use tandem_core::passes::{default_pipeline, PassManager};

/// One block: `%x0 = add(%a, 1)`, `%xi = add(%x(i-1), i)`: every tree is used once by the
/// next, so the tree mover builds one chain of n indirect moves; then every local is
/// read again, so that all are live at once for the register allocator.
fn chain_block(n: usize) -> String {
    let mut s = String::from("function %f(i32 %a) -> i32 {\n    local i32 %s\n");
    for i in 0..n {
        let _ = writeln!(s, "    local i32 %x{i}");
    }
    s += "b0:\n    %x0 = add(%a, 1)\n";
    for i in 1..n {
        let _ = writeln!(s, "    %x{i} = add(%x{}, {i})", i - 1);
    }
    for i in (0..n).step_by(2) {
        let _ = writeln!(s, "    %s = xor(%s, %x{i})");
    }
    s += "    ret %s\n}\n";
    s
}

/// The time to run the whole pipeline and the backend over the function of `text`.
fn compile_time(text: &str) -> Duration {
    let (module, _) = tandem_core::text::parse_module(text).expect("parses");
    let mut f = module.functions[0].clone();
    let start = Instant::now();
    PassManager { verify: true }.run(&default_pipeline(), &mut f, &mut |_, _, _| {}).expect("the pipeline runs");
    let code = tandem_core::backend::compile(&f).expect("compiles");
    let took = start.elapsed();
    assert!(!code.bytes.is_empty());
    took
}

#[test]
fn two_thousand_locals_in_a_block_compile_in_well_under_a_second() {
    let took = compile_time(&chain_block(2000));
    assert!(took < Duration::from_millis(500), "2,000 locals took {took:?}");
}

/// `n` diamonds in a row, each assigning `%s` on both sides: `%s` has a phi at every join,
/// so SSAPRE's Φ-Insertion gives every expression over `%s` a Φ at each of them.
fn diamonds(n: usize) -> String {
    let mut s = String::from("function %f(i32 %a) -> i32 {\n    local i32 %s\nb0:\n    %s = %a\n    jump b1\n");
    for i in 0..n {
        let (head, then, els, next) = (3 * i + 1, 3 * i + 2, 3 * i + 3, 3 * i + 4);
        let _ = writeln!(s, "b{head}:\n    br slt(%s, {i}), b{then}, b{els}");
        let _ = writeln!(s, "b{then}:\n    %s = add(%s, {i})\n    jump b{next}");
        let _ = writeln!(s, "b{els}:\n    %s = sub(%s, 1)\n    jump b{next}");
    }
    let _ = writeln!(s, "b{}:\n    ret %s\n}}", 3 * n + 1);
    s
}

/// The expressions of one occurrence (`slt(%s, i)`, `add(%s, i)`: 6,000 of them) each had
/// 3,000 Φs, and SSAPRE took seconds (10,000 diamonds: two minutes); an expression no Φ
/// operand can take as a real use is now known inert by a walk below its occurrence.
#[test]
fn three_thousand_diamonds_compile_in_under_a_second() {
    let took = compile_time(&diamonds(3000));
    assert!(took < Duration::from_millis(1000), "3,000 diamonds took {took:?}");
}
