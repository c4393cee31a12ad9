//! The CFG analyses on hand-drawn graphs (dominators, frontiers, loops, liveness), and
//! the pass manager's pipeline validation, form checks and hook.

use tandem_core::ir::{Block, Function};
use tandem_core::passes::{
    check_form, default_pipeline, verify_after, Analyses, Form, Liveness, PassError, PassManager, Pipeline,
};
use cranelift_entity::EntityRef;

fn parse(src: &str) -> Function {
    tandem_core::text::parse_module(src).unwrap().0.functions.remove(0)
}

fn b(i: usize) -> Block {
    Block::new(i)
}

/// b0 -> b1; b1 -> b2 | b5; b2 -> b3 | b4; b3 -> b2 (inner loop b2-b3) ... b4 -> b1
/// (outer loop b1..b4); b5 returns.
const NESTED: &str = "
function %f(i32 %n) -> i32 {
    local i32 %i
    local i32 %j
    local i32 %s
b0:
    jump b1
b1:
    br slt(%i, %n), b2, b5
b2:
    br slt(%j, %i), b3, b4
b3:
    %s = add(%s, %j)
    %j = add(%j, 1)
    jump b2
b4:
    %i = add(%i, 1)
    %j = 0
    jump b1
b5:
    ret %s
}
";

#[test]
fn dominators_frontiers_loops() {
    let f = parse(NESTED);
    let a = Analyses::compute(&f);
    let idom: Vec<Option<Block>> = (0..6).map(|i| a.domtree.idom[b(i)]).collect();
    assert_eq!(idom, vec![None, Some(b(0)), Some(b(1)), Some(b(2)), Some(b(2)), Some(b(1))]);
    assert!(a.domtree.dominates(b(1), b(4)));
    assert!(!a.domtree.dominates(b(3), b(4)));
    assert_eq!(a.domtree.preorder(), vec![b(0), b(1), b(2), b(3), b(4), b(5)]);
    // DF(b3) = {b2}; DF(b4) = {b1}; DF(b2) = {b1, b2}; DF(b1) = {b1}.
    let df = |x: usize| {
        let mut v = a.frontiers.frontier[b(x)].clone();
        v.sort();
        v
    };
    assert_eq!(df(3), vec![b(2)]);
    assert_eq!(df(4), vec![b(1)]);
    assert_eq!(df(2), vec![b(1), b(2)]);
    assert_eq!(df(1), vec![b(1)]);
    assert_eq!(df(5), vec![]);
    assert_eq!(a.frontiers.iterated(&[b(3)]), vec![b(1), b(2)]);
    let depth: Vec<u32> = (0..6).map(|i| a.loops.depth(b(i))).collect();
    assert_eq!(depth, vec![0, 1, 2, 2, 1, 0]);
    assert_eq!(a.loops.loops.len(), 2);
}

#[test]
fn liveness_at_block_boundaries() {
    let f = parse(NESTED);
    let a = Analyses::compute(&f);
    let lv = Liveness::compute(&f, &a.cfg);
    let names = |set: &tandem_core::passes::util::LocalSet| -> Vec<String> {
        set.iter().map(|l| f.locals[l].name.clone()).collect()
    };
    assert_eq!(names(&lv.live_in[b(0)]), vec!["n", "i", "j", "s"]);
    assert_eq!(names(&lv.live_in[b(5)]), vec!["s"]);
    assert_eq!(names(&lv.live_out[b(4)]), vec!["n", "i", "j", "s"]);
    assert_eq!(names(&lv.live_in[b(4)]), vec!["n", "i", "s"]);
}

#[test]
fn liveness_puts_phi_arguments_on_the_edge() {
    let f = parse(
        "
function %f(i32 %a, i32 %b) -> i32 {
    local i32 %x
b0:
    br %a, b1, b2
b1:
    jump b2
b2:
    %x = phi(b0: %a, b1: %b)
    ret %x
}
",
    );
    let a = Analyses::compute(&f);
    let lv = Liveness::compute(&f, &a.cfg);
    let names = |set: &tandem_core::passes::util::LocalSet| -> Vec<String> {
        set.iter().map(|l| f.locals[l].name.clone()).collect()
    };
    assert_eq!(names(&lv.live_out[b(0)]), vec!["a", "b"]);
    assert_eq!(names(&lv.live_out[b(1)]), vec!["b"]);
    assert_eq!(names(&lv.live_in[b(2)]), Vec::<String>::new());
}

#[test]
fn pipelines_are_validated() {
    assert_eq!(default_pipeline().to_string(), "ssa,memopt,ssapre,dce,ssa-destroy,cprop");
    assert!(Pipeline::parse("ssa,dce,ssa-destroy,cprop").is_ok());
    assert!(Pipeline::parse("cprop,dce,ssa,dce").is_ok());
    assert!(matches!(Pipeline::parse("ssa-destroy"), Err(PassError::WrongForm { pass: "ssa-destroy", .. })));
    assert!(matches!(Pipeline::parse("ssa,cprop"), Err(PassError::WrongForm { pass: "cprop", .. })));
    assert!(matches!(Pipeline::parse("ssa,ssa"), Err(PassError::WrongForm { pass: "ssa", .. })));
    assert!(matches!(Pipeline::parse("ssa,gvn"), Err(PassError::UnknownPass(n)) if n == "gvn"));
    assert!(matches!(Pipeline::parse("ssa,,dce"), Err(PassError::EmptyName)));
    let p = Pipeline::parse("ssa,dce,ssa-destroy").unwrap();
    assert_eq!((p.form_after(0), p.form_after(1), p.form_after(3)), (Form::Hir, Form::Ssa, Form::Hir));
}

#[test]
fn the_hook_sees_every_pass_and_ssa_is_checked() {
    let mut f = parse(NESTED);
    let mut seen = vec![];
    let stats = PassManager { verify: true }
        .run(&default_pipeline(), &mut f, &mut |pass, ir, _| {
            let form = if ["ssa", "memopt", "ssapre", "dce"].contains(&pass) { Form::Ssa } else { Form::Hir };
            assert!(check_form(ir, form).is_empty(), "{pass}\n{ir}");
            seen.push(pass.to_string());
        })
        .unwrap();
    assert_eq!(seen, vec!["ssa", "memopt", "ssapre", "dce", "ssa-destroy", "cprop"]);
    // NESTED needs phis for i, j and s at the loop headers, and zero versions.
    let ssa = &stats[0].1;
    assert_eq!((ssa.get("phis"), ssa.get("zero_inits")), (5, 3));
    // A function with a local assigned twice is not SSA; one with phis is not HIR.
    let g = parse(NESTED);
    assert!(!check_form(&g, Form::Ssa).is_empty());
    let mut h = parse(NESTED);
    PassManager { verify: true }.run(&Pipeline::parse("ssa").unwrap(), &mut h, &mut |_, _, _| {}).unwrap();
    assert!(!check_form(&h, Form::Hir).is_empty());
    let err = PassManager { verify: true }.run(&default_pipeline(), &mut h, &mut |_, _, _| {}).unwrap_err();
    assert!(matches!(err, PassError::InputForm { .. }));
}

#[test]
fn strict_ssa_is_checked() {
    // One definition, but the use in b2 is not dominated by it.
    let f = parse(
        "
function %f(i32 %a) -> i32 {
    local i32 %x
b0:
    br %a, b1, b2
b1:
    %x = 1
    jump b2
b2:
    ret %x
}
",
    );
    let errs = check_form(&f, Form::Ssa);
    assert_eq!(errs, vec!["SSA: use of %x in b2 is not dominated by its definition".to_string()]);
    // A use after the definition in the same statement is fine; before it, not.
    let g = parse(
        "
helper @log(i32, i32) -> void effects(observable)
function %g(i32 %a) -> i32 {
    local i32 %x
    local i32 %y
b0:
    call @log(comma((%x = %a), %x), 0)
    call @log(%y, comma((%y = 1), 0))
    ret 0
}
",
    );
    let errs = check_form(&g, Form::Ssa);
    assert_eq!(errs, vec!["SSA: use of %y in b0 is not dominated by its definition".to_string()]);
    // The check after a pass reads the locals the verifier's walk notes, not a walk of
    // its own: it finds the same, and a second definition too.
    let h = parse(
        "
function %h(i32 %a) -> i32 {
    local i32 %x
b0:
    %x = %a
    %x = 2
    ret %x
}
",
    );
    let twice = vec!["SSA: local %x is defined more than once".to_string()];
    assert_eq!(check_form(&h, Form::Ssa), twice);
    for (mut fun, want) in [
        (f, vec!["SSA: use of %x in b2 is not dominated by its definition".to_string()]),
        (g, vec!["SSA: use of %y in b0 is not dominated by its definition".to_string()]),
        (h, twice),
    ] {
        match verify_after("test", &mut fun, Form::Ssa) {
            Err(PassError::Verify { errors, .. }) => assert_eq!(errors, want),
            other => panic!("{other:?}"),
        }
    }
}
