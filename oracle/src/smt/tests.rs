//! Planted bugs: hand-written "after" functions that break a pass on purpose, each found
//! by the validator with a counterexample the interpreter replays; and the correct
//! "after" of the same input, which the validator proves. Expectations are worked out by
//! hand from the IR semantics.

use super::*;
use crate::exec::outcome::End;
use tandem_core::ir::{TrapKind, HEAP_BASE};
use tandem_core::text::parse_module;

fn func(src: &str) -> Function {
    let (m, _) = parse_module(src).unwrap_or_else(|e| panic!("{e:?}\n{src}"));
    tandem_core::verify::verify_module(&m).unwrap_or_else(|e| panic!("{e:?}\n{src}"));
    m.functions.into_iter().next().expect("one function")
}

fn opts() -> Options {
    Options { bound: 4, ..Options::default() }
}

/// The replayed counterexample of an answer, or a panic naming what came instead.
fn counterexample(a: Answer) -> Counterexample {
    match a {
        Answer::Counterexample(c) => *c,
        other => panic!("expected a counterexample, got {other}"),
    }
}

const LOG: &str = "helper @log(i32, i32) -> void effects(observable)\n";

/// The tree mover moves a load into its use across a store to the same address: the
/// logged value becomes the stored one. Any `a` different from the heap word shows it.
#[test]
fn a_tree_moved_across_a_store_is_found() {
    let before = func(&format!(
        "{LOG}function %f(i32 %a) -> i32 {{\n    local i32 %x\nb0:\n    %x = load.i32(1048576)\n    store.32(1048576, %a)\n    call @log(%x, 0)\n    ret 0\n}}\n"
    ));
    let bad = func(&format!(
        "{LOG}function %f(i32 %a) -> i32 {{\n    local i32 %x\nb0:\n    store.32(1048576, %a)\n    call @log(load.i32(1048576), 0)\n    ret 0\n}}\n"
    ));
    let c = counterexample(validate(&before, &bad, "cprop", &opts()));
    let (b, a) = (c.before.unwrap(), c.after.unwrap());
    // Before: the old heap word is logged; after: `a` is.
    let old = b.trace[0].args[0];
    assert_eq!(a.trace[0].args[0], c.input.args[0]);
    assert_ne!(old, c.input.args[0]);
    assert!(c.diff.iter().any(|d| d.starts_with("trace event 0")), "{:?}", c.diff);
    // Moving the load across a call that only logs is correct, and proved without a bound.
    let ok_before = func(&format!(
        "{LOG}function %f(i32 %a) -> i32 {{\n    local i32 %x\nb0:\n    %x = load.i32(1048576)\n    call @log(1, 2)\n    call @log(%x, %a)\n    ret 0\n}}\n"
    ));
    let ok_after = func(&format!(
        "{LOG}function %f(i32 %a) -> i32 {{\n    local i32 %x\nb0:\n    call @log(1, 2)\n    call @log(load.i32(1048576), %a)\n    ret 0\n}}\n"
    ));
    assert!(matches!(validate(&ok_before, &ok_after, "cprop", &opts()), Answer::Proved));
}

const SWAP_SSA: &str = "function %swap(i32 %a, i32 %b, i32 %n) -> i32 {
    local i32 %x
    local i32 %y
    local i32 %i
    local i32 %i0
    local i32 %i1
b0:
    %i0 = 0
    jump b1
b1:
    %x = phi(b0: %a, b2: %y)
    %y = phi(b0: %b, b2: %x)
    %i = phi(b0: %i0, b2: %i1)
    br slt(%i, %n), b2, b3
b2:
    %i1 = add(%i, 1)
    jump b1
b3:
    ret add(mul(%x, 10), %y)
}
";

/// `ssa-destroy` output for the swap problem, with the loop's parallel copy written
/// sequentially as `copies`.
fn swap_destroyed(copies: &str) -> Function {
    func(&format!(
        "function %swap(i32 %a, i32 %b, i32 %n) -> i32 {{
    local i32 %x
    local i32 %y
    local i32 %i
    local i32 %i0
    local i32 %i1
    local i32 %x.tmp
b0:
    %i0 = 0
    %x = %a
    %y = %b
    %i = %i0
    jump b1
b1:
    br slt(%i, %n), b2, b3
b2:
    %i1 = add(%i, 1)
    %i = %i1
{copies}    jump b1
b3:
    ret add(mul(%x, 10), %y)
}}
"
    ))
}

/// The swap problem: sequentializing the parallel copy `x, y = y, x` without its
/// temporary drops a copy. One trip through the loop with `a != b` shows it: the source
/// returns `10 * b + a`, the broken target `10 * b + b`.
#[test]
fn a_dropped_parallel_copy_is_found() {
    let before = func(SWAP_SSA);
    let bad = swap_destroyed("    %x = %y\n    %y = %x\n");
    let c = counterexample(validate(&before, &bad, "ssa-destroy", &opts()));
    let arg = |i: usize| c.input.args[i].as_i64() as i32;
    let (a, b, n) = (arg(0), arg(1), arg(2));
    // Replayed by hand: after an odd number of trips the source has swapped.
    assert!(n >= 1 && n <= 4, "n = {n}: within the bound");
    let trips = n;
    let (sx, sy) = if trips % 2 == 1 { (b, a) } else { (a, b) };
    assert_eq!(c.before.unwrap().end, End::Return(Value::I32(sx.wrapping_mul(10).wrapping_add(sy))));
    assert_eq!(c.after.unwrap().end, End::Return(Value::I32(b.wrapping_mul(10).wrapping_add(b))));
    // With the temporary it is right: proved for every run, whatever the trip count.
    let ok = swap_destroyed("    %x.tmp = %x\n    %x = %y\n    %y = %x.tmp\n");
    assert!(matches!(validate(&before, &ok, "ssa-destroy", &opts()), Answer::Proved));
}

/// Store sinking (`memopt`) moves a loop's store to the exit, past a check in the loop:
/// when the check traps, the source has stored the current `i` and the target nothing.
#[test]
fn a_store_sunk_past_a_trap_is_found() {
    let src = |body: &str, exit: &str| {
        func(&format!(
            "function %f(i32 %a) -> i32 {{
    local i32 %i
b0:
    jump b1
b1:
{body}    %i = add(%i, 1)
    br slt(%i, 3), b1, b2
b2:
{exit}    ret %i
}}
"
        ))
    };
    let before = src("    store.32(1048576, add(%i, 100))\n    trapif(eq(%i, %a), 7)\n", "");
    let bad = src("    trapif(eq(%i, %a), 7)\n", "    store.32(1048576, add(sub(%i, 1), 100))\n");
    let c = counterexample(validate(&before, &bad, "memopt", &opts()));
    let a = c.input.args[0].as_i64();
    assert!((0..3).contains(&a), "the check must trap inside the loop, a = {a}");
    let (b, t) = (c.before.unwrap(), c.after.unwrap());
    assert_eq!(b.end, End::Trap(TrapKind::Check(7)));
    assert_eq!(t.end, End::Trap(TrapKind::Check(7)));
    // The source stored 100 + a (little-endian) before trapping.
    assert_eq!(b.heap[0] as i64, 100 + a);
    assert!(c.diff.iter().any(|d| d.starts_with("heap 0x10000")), "{:?}", c.diff);
    // Without the check in the loop the sinking is right, and proved for every run: the
    // relation at the loop header is "the heaps agree except at the stored word" (the
    // source's heap is the target's plus the last store, except on the first entry), a
    // pending-store candidate (before them, `proved (bound 4)`).
    let ok_before = src("    store.32(1048576, add(%i, 100))\n", "");
    let ok_after = src("", "    store.32(1048576, add(sub(%i, 1), 100))\n");
    let a = validate(&ok_before, &ok_after, "memopt", &opts());
    assert!(matches!(a, Answer::Proved), "{a}");
}

/// SSAPRE hoists a division out of one arm of a branch into the block before it: on the
/// other arm the division now runs, and traps when `b` is 0.
#[test]
fn a_division_hoisted_onto_a_path_is_found() {
    let before = func(
        "function %f(i32 %a, i32 %b) -> i32 {
    local i32 %t
b0:
    br sgt(%a, 0), b1, b2
b1:
    %t = sdiv(%a, %b)
    ret %t
b2:
    ret 1
}
",
    );
    let bad = func(
        "function %f(i32 %a, i32 %b) -> i32 {
    local i32 %t
b0:
    %t = sdiv(%a, %b)
    br sgt(%a, 0), b1, b2
b1:
    ret %t
b2:
    ret 1
}
",
    );
    let c = counterexample(validate(&before, &bad, "ssapre", &opts()));
    let (a, b) = (c.input.args[0].as_i64() as i32, c.input.args[1].as_i64() as i32);
    assert!(a <= 0 && (b == 0 || (a == i32::MIN && b == -1)), "a = {a}, b = {b}");
    assert_eq!(c.before.unwrap().end, End::Return(Value::I32(1)));
    assert_eq!(c.after.unwrap().end, End::Trap(TrapKind::DivideError));
    // Hoisting an addition, which cannot trap, is right: proved for every run (the
    // relation at b1: `%t` holds `add(%a, %b)` on the target side).
    let ok_before = func("function %f(i32 %a, i32 %b) -> i32 {\n    local i32 %t\nb0:\n    br sgt(%a, 0), b1, b2\nb1:\n    %t = add(%a, %b)\n    ret %t\nb2:\n    ret 1\n}\n");
    let ok_after = func("function %f(i32 %a, i32 %b) -> i32 {\n    local i32 %t\nb0:\n    %t = add(%a, %b)\n    br sgt(%a, 0), b1, b2\nb1:\n    ret %t\nb2:\n    ret 1\n}\n");
    assert!(matches!(validate(&ok_before, &ok_after, "ssapre", &opts()), Answer::Proved));
}

const DIV_BY_MINUS_ONE: &str = "function %f(i32 %a) -> i32 {
    local i32 %x
b0:
    %x = load.i32(1048576)
    ret sdiv(%x, -1)
}
";

/// A fold of `x / -1` to `-x` drops the trap of `MIN / -1`: wrong only when the heap
/// word is exactly 0x80000000. The inputs an execution campaign tries (the runs of
/// 10,000 generated seeds, heap contents included) never show it; the validator does,
/// and the model's heap replays.
#[test]
fn an_edge_value_bug_execution_misses_is_found() {
    let before = func(DIV_BY_MINUS_ONE);
    let bad = func("function %f(i32 %a) -> i32 {\nb0:\n    ret neg(load.i32(1048576))\n}\n");
    let c = counterexample(validate(&before, &bad, "cprop", &opts()));
    assert_eq!(c.before.as_ref().unwrap().end, End::Trap(TrapKind::DivideError));
    assert_eq!(c.after.as_ref().unwrap().end, End::Return(Value::I32(i32::MIN)));
    let row = c.input.heap.iter().find(|(a, _)| *a == HEAP_BASE).expect("the model sets the first heap word");
    assert_eq!(&row.1[..4], &[0x00, 0x00, 0x00, 0x80]);
    // The execution campaign's inputs: every run of 10,000 generated seeds.
    let cfg = crate::gen::Profile::Default.config();
    let mut tried = 0;
    for seed in 0..10_000 {
        for r in &crate::gen::generate(seed, &cfg).case.runs {
            let input = RunInput { args: vec![Value::I32(0)], heap: r.heap.clone(), callframe: vec![], fuel: DEFAULT_FUEL };
            let b = interp::run(&before, &input).unwrap();
            assert_eq!(b, interp::run(&bad, &input).unwrap(), "seed {seed} shows the bug after all");
            tried += 1;
        }
    }
    assert!(tried >= 10_000);
}

/// A finding file of a counterexample replays under `tandem run`: the model's inputs, the
/// reference expectation, and the pass named in its comments.
#[test]
fn a_counterexample_is_written_as_a_replayable_case() {
    let before = func(DIV_BY_MINUS_ONE);
    let bad = func("function %f(i32 %a) -> i32 {\nb0:\n    ret neg(load.i32(1048576))\n}\n");
    let a = validate(&before, &bad, "cprop", &opts());
    let dir = std::env::temp_dir().join(format!("tandem-smt-finding-{}", std::process::id()));
    let path = write_finding(&dir, "planted", &before, "cprop", &a).unwrap().expect("a finding");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("; the Z3 validator finds that pass `cprop` changes the outcome"), "{text}");
    assert!(text.contains("; heap: 0x00100000: 00 00 00 80"), "{text}");
    assert!(text.contains("; expect: trap divide_error"), "{text}");
    let mut emu = crate::exec::emu::Emulator::new().unwrap();
    let report = crate::campaign::replay::replay_file(&path, false, &mut emu).unwrap();
    assert_eq!(report.runs.len(), 1);
    assert!(report.runs[0].mismatches.is_empty(), "{:?}", report.runs[0]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The encoder self-check on generated cases: the formula with fixed inputs gives the
/// interpreter's outcome for every run compared, on the function as generated and after
/// every pass.
#[test]
fn the_encoding_agrees_with_the_interpreter_on_generated_cases() {
    for (profile, seeds) in [(crate::gen::Profile::Small, 8), (crate::gen::Profile::Loops, 6)] {
        let s = selfcheck::self_check(0..=seeds - 1, profile, 4);
        assert!(s.differences.is_empty(), "{:?}", s.differences);
        assert!(s.compared >= 40, "{} compared, {} beyond the bound", s.compared, s.beyond_bound);
    }
}

/// The real passes on generated cases: no answer is a finding, at most one is unknown,
/// and nearly all are proved for every run. A bounded answer may be `vacuous` (no run of the loops lies
/// within the bound), which is honest and not a proof.
#[test]
fn the_check_pipeline_is_proved_on_generated_cases() {
    let cfg = crate::gen::Profile::Small.config();
    let pipeline = tandem_core::passes::check_pipeline();
    let o = Options { bound: 2, rlimit: 2_000_000, ..Options::default() };
    let (mut proved, mut all, mut unknown) = (0, 0, vec![]);
    for seed in 0..8 {
        let g = crate::gen::generate(seed, &cfg);
        let f = &g.case.module.functions[0];
        for (pass, a, _) in validate_pipeline(f, &pipeline, &o).unwrap() {
            if let Answer::Unknown(_) = a {
                unknown.push(format!("seed {seed} {pass}: {a}"));
            } else {
                assert!(a.is_proof() || matches!(a, Answer::Vacuous(_)), "seed {seed} {pass}: {a}");
            }
            proved += matches!(a, Answer::Proved) as usize;
            all += 1;
        }
    }
    // An unknown is honest (never a pass), but more than one here is a regression of
    // the check: small seed 7's ssapre pair uses up even 8M units since the generator's
    // reach work (issue 19) changed the small programs.
    assert!(unknown.len() <= 1, "{unknown:?}");
    // A regression floor, not the goal (issue 20 asks for 99%): the inferred relation
    // (classes of equal slots refined until inductive) proves 47 of these 48 for every
    // run (the Houdini candidate list proved 34); budgets are deterministic, the floor
    // leaves one for changes to the passes.
    assert!(proved + 2 >= all, "{proved} of {all} proved for every run; unknown: {unknown:?}");
}


/// A loop that always runs five times has no run within bound 2: an unsat query there
/// compared nothing, and is `vacuous`, never a proof. (Before issue 20 this was `proved
/// (bound 2)`.) At bound 5 the same pair is proved within the bound.
#[test]
fn a_bounded_check_without_a_run_in_the_bound_is_vacuous() {
    let f = func(&format!(
        "{LOG}function %f(i32 %a) -> i32 {{\n    local i32 %i\nb0:\n    jump b1\nb1:\n    call @log(%i, %a)\n    %i = add(%i, 1)\n    br slt(%i, 5), b1, b2\nb2:\n    ret %i\n}}\n"
    ));
    let o = |bound| Options { bound, ..opts() };
    assert!(matches!(check_bounded(&f, &f, &o(2), &mut Budget::new(&o(2))), Answer::Vacuous(2)));
    assert!(matches!(check_bounded(&f, &f, &o(5), &mut Budget::new(&o(5))), Answer::ProvedBounded(5)));
}

/// The bound counts iterations per loop: two loops in sequence that each run twice are
/// within bound 2 (summed over both loops they take two back edges, one each), so a bug
/// in the second loop's second iteration is found at bound 2.
#[test]
fn the_bound_counts_iterations_per_loop() {
    let src = |second: &str| {
        func(&format!(
            "{LOG}function %f(i32 %a) -> i32 {{\n    local i32 %i\n    local i32 %j\nb0:\n    jump b1\nb1:\n    %i = add(%i, 1)\n    br slt(%i, 2), b1, b2\nb2:\n    jump b3\nb3:\n    call @log({second}, 0)\n    %j = add(%j, 1)\n    br slt(%j, 2), b3, b4\nb4:\n    ret 0\n}}\n"
        ))
    };
    let before = src("%j");
    let bad = src("select(eq(%j, 1), 7, %j)");
    let o = Options { bound: 2, ..opts() };
    let c = counterexample(check_bounded(&before, &bad, &o, &mut Budget::new(&o)));
    // The first loop logs nothing; the second logs %j = 0, then 1 (7 after the bug).
    assert!(c.diff.iter().any(|d| d.starts_with("trace event 1")), "{:?}", c.diff);
}

/// A loop whose body is `call @log(%i, 0); %i = add(%i, 1)`, with the logged operand
/// replaced by `arg`.
fn logging_loop(arg: &str) -> Function {
    func(&format!(
        "{LOG}function %f(i32 %n) -> i32 {{\n    local i32 %i\nb0:\n    jump b1\nb1:\n    call @log({arg}, 0)\n    %i = add(%i, 1)\n    br slt(%i, %n), b1, b2\nb2:\n    ret %i\n}}\n"
    ))
}

/// A bug that shows only in the third iteration of a loop (it logs 9 instead of 2): not
/// proved, not found within one iteration per loop, and a replayed counterexample at
/// bound 2 (the third trip is two back edges after the first). Its correct twin (the
/// operand written another way) is proved for every run.
#[test]
fn a_bug_in_the_third_iteration_is_found_at_bound_2() {
    let before = logging_loop("%i");
    let bad = logging_loop("select(eq(%i, 2), 9, %i)");
    let o = |bound| Options { bound, ..opts() };
    let a = validate(&before, &bad, "cprop", &o(1));
    assert!(matches!(a, Answer::ProvedBounded(1)), "{a}");
    let c = counterexample(validate(&before, &bad, "cprop", &o(2)));
    assert!(c.input.args[0].as_i64() >= 3, "{:?}", c.input.args);
    assert!(c.diff.iter().any(|d| d.starts_with("trace event 2")), "{:?}", c.diff);
    let ok = logging_loop("add(%i, 0)");
    assert!(matches!(validate(&before, &ok, "cprop", &o(1)), Answer::Proved));
}

/// A wrong `cprop` that a liveness bug would hide: the assignment to `%x` at the end of
/// the loop body is dropped, as if `%x` were dead there (a liveness that misses the back
/// edge says so; the next trip logs it). The per-block proof used to compare only the
/// locals `tandem_core::Liveness` calls live; the simulation check infers its own
/// relation and trusts no analysis of `core`, so this is not proved, and the bounded
/// check replays the second trip. The correct twin is proved.
#[test]
fn a_cprop_bug_hidden_by_a_liveness_bug_is_not_proved() {
    let src = |assign: &str| {
        func(&format!(
            "{LOG}function %f(i32 %n) -> i32 {{\n    local i32 %i\n    local i32 %x\nb0:\n    jump b1\nb1:\n    call @log(%x, 0)\n{assign}    %i = add(%i, 1)\n    br slt(%i, %n), b1, b2\nb2:\n    ret 0\n}}\n"
        ))
    };
    let before = src("    %x = add(%i, 5)\n");
    let bad = src("");
    let o = Options { bound: 1, ..opts() };
    let c = counterexample(validate(&before, &bad, "cprop", &o));
    assert!(c.input.args[0].as_i64() >= 2, "{:?}", c.input.args);
    assert!(c.diff.iter().any(|d| d.starts_with("trace event 1")), "{:?}", c.diff);
    let ok = src("    %x = add(5, %i)\n");
    assert!(matches!(validate(&before, &ok, "cprop", &o), Answer::Proved));
}

/// A loop that logs `arg` each trip, after `write` (if any); the callframe variable `@c`
/// is read into `%t` before the loop, by a tree that is not a value (a comma), so that
/// only the code says what `%t` holds.
fn callframe_loop(arg: &str, write: &str) -> Function {
    func(&format!(
        "{LOG}function %f(i32 %n) -> i32 {{\n    callframe i32 @c\n    local i32 %i\n    local i32 %t\nb0:\n    %t = comma(call @log(1, 2), cfread(@c))\n    jump b1\nb1:\n    call @log({arg}, %i)\n{write}    %i = add(%i, 1)\n    br slt(%i, %n), b1, b2\nb2:\n    ret %t\n}}\n"
    ))
}

/// memopt's loop-invariant LOAD: the read of `@c` in the loop is replaced by `%t`, which
/// has held `@c` since the preheader. The relation "`%t` holds `@c`" at the loop's head
/// is read off the code (the source reads `@c` where the target reads `%t`) and proved
/// inductive: proved for every run. When the loop writes `@c` after the log, the same
/// replacement is wrong from the second trip on (it logs the stale value): not proved,
/// and the bounded check replays the second trip.
#[test]
fn a_callframe_variable_kept_in_a_local_across_a_loop_is_proved() {
    let o = Options { bound: 1, ..opts() };
    let before = callframe_loop("cfread(@c)", "");
    let after = callframe_loop("%t", "");
    let a = validate(&before, &after, "memopt", &o);
    assert!(matches!(a, Answer::Proved), "{a}");
    let write = "    cfwrite(@c, add(%i, 7))\n";
    let before = callframe_loop("cfread(@c)", write);
    let bad = callframe_loop("%t", write);
    let c = counterexample(validate(&before, &bad, "memopt", &o));
    assert!(c.input.args[0].as_i64() >= 2, "{:?}", c.input.args);
    assert!(c.diff.iter().any(|d| d.starts_with("trace event 2")), "{:?}", c.diff);
}

/// `tandem verify --why` on the pair above: nothing to say where the simulation check
/// proves it; where the loop writes `@c` (the stale `%t` logged from the second trip
/// on), a line per try, and the first says the log's argument (the trace) differs in the
/// loop's block.
#[test]
fn why_a_pair_is_not_proved_names_the_block_and_the_observable() {
    let o = Options { bound: 1, ..opts() };
    assert_eq!(super::simulate::explain(&callframe_loop("cfread(@c)", ""), &callframe_loop("%t", ""), &o), Vec::<String>::new());
    let write = "    cfwrite(@c, add(%i, 7))\n";
    let lines = super::simulate::explain(&callframe_loop("cfread(@c)", write), &callframe_loop("%t", write), &o);
    assert!(lines.first().is_some_and(|l| l.starts_with("try 1")), "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("b1: trace event differs")), "{lines:?}");
}

/// The `ssa` pass on FullRedundancy2 (the corpus seed): the versions of `%a` (negated on
/// one arm) and of `%v1` meet at the join in phis. The per-block first partition alone
/// left it at `proved (bound 4)`; the third try, from the whole-function relation,
/// proves it for every run. The same output with the arguments of `%a`'s phi swapped
/// (the join takes the other arm's `%a`) is a replayed counterexample.
#[test]
fn the_ssa_form_of_full_redundancy2_is_proved_for_every_run() {
    let (m, _) = parse_module(include_str!("../../../corpus/seeds/ssapre-full-redundancy2.tir")).expect("the corpus seed parses");
    let before = m.functions.iter().find(|f| f.name == "FullRedundancy2").expect("the source function").clone();
    let after = forms_after(before.clone(), "ssa").remove(0);
    let a = validate(&before, &after, "ssa", &opts());
    assert!(matches!(a, Answer::Proved), "{a}");
    let bad = with_phi_arguments_swapped(&after, "a");
    let c = counterexample(validate(&before, &bad, "ssa", &opts()));
    assert!(c.diff.iter().any(|d| d.starts_with("end")), "{:?}", c.diff);
}

/// `f` with the two arguments of the first join's phi whose local is named `prefix...`
/// swapped (each arm's value on the other arm).
fn with_phi_arguments_swapped(f: &Function, prefix: &str) -> Function {
    let mut bad = f.clone();
    let join = bad.layout.iter().copied().find(|&b| !bad.blocks[b].phis.is_empty()).expect("a join with phis");
    let phi = bad.blocks[join].phis.iter_mut().find(|p| bad.locals[p.dest].name.starts_with(prefix)).expect("a phi of the local");
    let (x, y) = (phi.args[0].1, phi.args[1].1);
    assert_ne!(x, y);
    (phi.args[0].1, phi.args[1].1) = (y, x);
    bad
}

/// SSAPRE on FullRedundancy2: `add(%a.2, %b)` at the join is fully redundant, and the
/// temporary `%pre1 = phi(b1: %v1.1, b2: %v1.2)` replaces it. The relation at the join,
/// "`%pre1` holds `add(%a.2, %b)`", is read off the code (the source computes the
/// expression where the target reads the temporary) and proved inductive: proved for
/// every run (before, `proved (bound 4)`). With the temporary's phi arguments swapped
/// (each arm's sum on the other arm) it is a replayed counterexample.
#[test]
fn the_pre_temporary_of_full_redundancy2_is_proved_for_every_run() {
    let (m, _) = parse_module(include_str!("../../../corpus/seeds/ssapre-full-redundancy2.tir")).expect("the corpus seed parses");
    let f = m.functions.iter().find(|f| f.name == "FullRedundancy2").expect("the source function").clone();
    let forms = forms_after(f, "ssa,ssapre");
    let (before, after) = (&forms[0], &forms[1]);
    let a = validate(before, after, "ssapre", &opts());
    assert!(matches!(a, Answer::Proved), "{a}");
    // By term identity, where "`%pre1` holds `add(%a.2, %b)`" is the class's value.
    assert!(simulate::proved_by_identity(before, after, &opts()));
    let bad = with_phi_arguments_swapped(after, "pre");
    assert!(!simulate::proved_by_identity(before, &bad, &opts()));
    let c = counterexample(validate(before, &bad, "ssapre", &opts()));
    assert!(c.diff.iter().any(|d| d.starts_with("end")), "{:?}", c.diff);
}

/// memopt's STORE-LOAD forwarding across a loop, at other widths: the word `%a` stored
/// at `HEAP_BASE` is read back in the loop as its sign-extended low byte and after it as
/// its low half, and memopt keeps it in `%val`, reading `ashr(shl(%val, 24), 24)` and
/// `and(%val, 65535)` instead. `store` is the loop body's store after the log (to the word
/// after it in the right twin). The relation at the loop header needs "the byte at
/// `HEAP_BASE` is the low byte of `%val`", which no local = local or local = load
/// candidate says.
fn forwarded_across_a_loop(store: &str) -> (Function, Function) {
    let body = |log_arg: &str, ret: &str, val: &str| {
        format!(
            "{LOG}function %f(i32 %a, i32 %n) -> i32 {{\n    local i32 %i\n    local i32 %i0\n    local i32 %i1\n{val}b0:\n    %i0 = 0\n    store.32(1048576, {})\n    jump b1\nb1:\n    %i = phi(b0: %i0, b2: %i1)\n    br slt(%i, %n), b2, b3\nb2:\n    call @log({log_arg}, %i)\n    {store}\n    %i1 = add(%i, 1)\n    jump b1\nb3:\n    ret {ret}\n}}\n",
            if val.is_empty() { "%a" } else { "comma((%val = %a), %val)" }
        )
    };
    let before = func(&body("load.i32.s8(1048576)", "load.i32.u16(1048576)", ""));
    let after = func(&body("ashr(shl(%val, 24), 24)", "and(%val, 65535)", "    local i32 %val\n"));
    (before, after)
}

/// The forwarded store is proved for every run (before this candidate, `proved (bound
/// 4)`); forwarded across a store to the same byte in the loop, the second iteration logs
/// the stale byte: a replayed counterexample.
#[test]
fn a_store_forwarded_at_another_width_across_a_loop_is_proved_for_every_run() {
    let (before, after) = forwarded_across_a_loop("store.8(1048580, %i)");
    let a = validate(&before, &after, "memopt", &opts());
    assert!(matches!(a, Answer::Proved), "{a}");
    let (before, bad) = forwarded_across_a_loop("store.8(1048576, %i)");
    let c = counterexample(validate(&before, &bad, "memopt", &opts()));
    // Only a run whose loop stores (`%n` at least 1) reads the overwritten byte; the
    // target reads the low byte of `%a` where the source reads the counter's.
    assert!(c.input.args[1].as_i64() as i32 >= 1, "{:?}", c.input.args);
    assert!(!c.diff.is_empty());
}

/// memopt's constant forwarding across a loop: `@c` is written 123 before the loop and
/// read in it and after it, and memopt reads the constant instead (`write`: the loop
/// body's write to `@c` after the log, if any). The relation at the loop's head needs
/// "`@c` holds 123", which no relation between slots says.
fn constant_across_a_loop(read: &str, write: &str) -> Function {
    func(&format!(
        "{LOG}function %f(i32 %n) -> i32 {{\n    callframe i32 @c\n    local i32 %i\nb0:\n    cfwrite(@c, 123)\n    jump b1\nb1:\n    call @log({read}, %i)\n{write}    %i = add(%i, 1)\n    br slt(%i, %n), b1, b2\nb2:\n    ret {read}\n}}\n"
    ))
}

/// The forwarded constant is proved for every run (before its candidate, `proved (bound
/// 4)`); with a write to `@c` in the loop, the second trip logs the stale constant: a
/// replayed counterexample (its second event, in the second trip).
#[test]
fn a_constant_forwarded_across_a_loop_is_proved_for_every_run() {
    let before = constant_across_a_loop("cfread(@c)", "");
    let after = constant_across_a_loop("123", "");
    let a = validate(&before, &after, "memopt", &opts());
    assert!(matches!(a, Answer::Proved), "{a}");
    let write = "    cfwrite(@c, add(%i, 7))\n";
    let before = constant_across_a_loop("cfread(@c)", write);
    let bad = constant_across_a_loop("123", write);
    let c = counterexample(validate(&before, &bad, "memopt", &opts()));
    assert!(c.input.args[0].as_i64() as i32 >= 2, "{:?}", c.input.args);
    assert!(c.diff.iter().any(|d| d.starts_with("trace event 1")), "{:?}", c.diff);
}

/// A pass that left the function as it was is proved without the solver: on a budget of
/// one resource unit, the function against itself is `proved`; so is the pass's right
/// change, by term identity ("`@c` holds 123" is the class's value at the loop's head);
/// against the wrong change (which the solver must be asked about) the budget runs out.
#[test]
fn a_function_left_as_it_was_is_proved_without_the_solver() {
    let o = Options { rlimit: 1, ..opts() };
    let f = constant_across_a_loop("cfread(@c)", "");
    let a = validate(&f, &f.clone(), "memopt", &o);
    assert!(matches!(a, Answer::Proved), "{a}");
    let a = validate(&f, &constant_across_a_loop("123", ""), "memopt", &o);
    assert!(matches!(a, Answer::Proved), "{a}");
    let write = "    cfwrite(@c, add(%i, 7))\n";
    let a = validate(&constant_across_a_loop("cfread(@c)", write), &constant_across_a_loop("123", write), "memopt", &o);
    assert!(matches!(a, Answer::Unknown(Unknown::Budget)), "{a}");
}

/// memopt's dead store across blocks, in a loop: each trip stores `%i` at `HEAP_BASE`,
/// then both arms of a branch store there again before the log reads it, so the first
/// store is dead and memopt removes it (`first`: the first store, or nothing; `other`:
/// the other arm's store, or nothing). Between the removed store and the arms' stores
/// the two heaps differ at those four bytes, which the relation must say.
fn dead_store_in_a_loop(first: &str, other: &str) -> Function {
    func(&format!(
        "{LOG}function %f(i32 %a, i32 %n) -> i32 {{\n    local i32 %i\nb0:\n    jump b1\nb1:\n{first}    br slt(%i, %a), b2, b3\nb2:\n    store.32(1048576, add(%i, 1))\n    jump b4\nb3:\n{other}    jump b4\nb4:\n    call @log(load.i32(1048576), %i)\n    %i = add(%i, 1)\n    br slt(%i, %n), b1, b5\nb5:\n    ret load.i32(1048576)\n}}\n"
    ))
}

/// The removed dead store is proved for every run (before its candidate, `proved (bound
/// 4)`); where one arm does not store again, the removed store was not dead and that
/// arm logs what the heap held before: a replayed counterexample.
#[test]
fn a_dead_store_removed_in_a_loop_is_proved_for_every_run() {
    let first = "    store.32(1048576, %i)\n";
    let other = "    store.32(1048576, 7)\n";
    let a = validate(&dead_store_in_a_loop(first, other), &dead_store_in_a_loop("", other), "memopt", &opts());
    assert!(matches!(a, Answer::Proved), "{a}");
    // By term identity too: where the heaps part, the target's is the source's with the
    // removed store's bytes its own (a symbol), until both arms overwrite them.
    assert!(simulate::proved_by_identity(&dead_store_in_a_loop(first, other), &dead_store_in_a_loop("", other), &opts()));
    assert!(!simulate::proved_by_identity(&dead_store_in_a_loop(first, ""), &dead_store_in_a_loop("", ""), &opts()));
    let c = counterexample(validate(&dead_store_in_a_loop(first, ""), &dead_store_in_a_loop("", ""), "memopt", &opts()));
    assert!(c.diff.iter().any(|d| d.starts_with("trace event")), "{:?}", c.diff);
}

/// A loop whose store memopt sinks: each trip stores `%i + 100` at `HEAP_BASE` and checks
/// `check` (if any) after it; the loop leaves from its head when `%i` reaches `%a` (to a
/// block that logs) and from its latch when `%i` reaches `%n`; the function returns the
/// stored word.
fn sinking_loop(check: &str) -> Function {
    func(&format!(
        "{LOG}function %f(i32 %a, i32 %n) -> i32 {{\n    local i32 %i\nb0:\n    jump b1\nb1:\n    store.32(1048576, add(%i, 100))\n{check}    %i = add(%i, 1)\n    br eq(%i, %a), b3, b2\nb2:\n    br slt(%i, %n), b1, b4\nb3:\n    call @log(1, %i)\n    jump b4\nb4:\n    ret load.i32(1048576)\n}}\n"
    ))
}

/// memopt's output for [`sinking_loop`] in SSA form, written out: the loop keeps the
/// stored value in `%val` and stores it on both exits (`b5` is the landing block of the
/// latch's exit edge), `head_exit` and `latch_exit` being the values stored there, and
/// `check` the loop's check after the (removed) store.
fn sunk_store(check: &str, head_exit: &str, latch_exit: &str) -> Function {
    func(&format!(
        "{LOG}function %f(i32 %a, i32 %n) -> i32 {{\n    local i32 %i.0\n    local i32 %i.1\n    local i32 %i.2\n    local i32 %val\nb0:\n    %i.0 = 0\n    jump b1\nb1:\n    %i.1 = phi(b0: %i.0, b2: %i.2)\n    comma((%val = add(%i.1, 100)), %val)\n{check}    %i.2 = add(%i.1, 1)\n    br eq(%i.2, %a), b3, b2\nb2:\n    br slt(%i.2, %n), b1, b5\nb3:\n    store.32(1048576, {head_exit})\n    call @log(1, %i.2)\n    jump b4\nb5:\n    store.32(1048576, {latch_exit})\n    jump b4\nb4:\n    ret %val\n}}\n"
    ))
}

/// The SSA form of [`sinking_loop`], with `check` after the store.
fn sinking_loop_ssa(check: &str) -> Function {
    func(&format!(
        "{LOG}function %f(i32 %a, i32 %n) -> i32 {{\n    local i32 %i.0\n    local i32 %i.1\n    local i32 %i.2\nb0:\n    %i.0 = 0\n    jump b1\nb1:\n    %i.1 = phi(b0: %i.0, b2: %i.2)\n    store.32(1048576, add(%i.1, 100))\n{check}    %i.2 = add(%i.1, 1)\n    br eq(%i.2, %a), b3, b2\nb2:\n    br slt(%i.2, %n), b1, b4\nb3:\n    call @log(1, %i.2)\n    jump b4\nb4:\n    ret load.i32(1048576)\n}}\n"
    ))
}

/// memopt's loop-invariant store, removed from the loop and done on both exits: the
/// relation in the loop is "the source's heap is the target's except at the stored
/// word" (at the head, before the source stores again) and "... with `%val` stored
/// there" on the exits, which classes of equal values cannot say; the pending-store
/// candidates ([`Slot::Pending`]) say it, and memopt's own output is proved for every run
/// (before them, `proved (bound 4)`). Wrong twins get replayed counterexamples: the
/// latch's exit storing the counter instead of `%val` (wrong on one exit only), and the
/// store sunk past a check in the loop (the source has stored when it traps).
#[test]
fn a_store_sunk_out_of_a_loop_is_proved_for_every_run() {
    let forms = forms_after(sinking_loop(""), "ssa,memopt");
    let (before, after) = (&forms[0], &forms[1]);
    // memopt did sink the store: the loop has none left, and the exits have one each.
    let text = printed(after);
    assert_eq!(text.matches("store.32").count(), 2, "{text}");
    let a = validate(before, after, "memopt", &opts());
    assert!(matches!(a, Answer::Proved), "{a}\n{text}");
    // By term identity too: the pending store's heap, the target's with `%val` stored,
    // is the source's at the head and on the exits.
    assert!(simulate::proved_by_identity(before, after, &opts()));
    // The same by hand, and its wrong twins (neither proved by identity).
    let before = sinking_loop_ssa("");
    let a = validate(&before, &sunk_store("", "%val", "%val"), "memopt", &opts());
    assert!(matches!(a, Answer::Proved), "{a}");
    assert!(simulate::proved_by_identity(&before, &sunk_store("", "%val", "%val"), &opts()));
    assert!(!simulate::proved_by_identity(&before, &sunk_store("", "%val", "%i.2"), &opts()));
    let check = "    trapif(eq(%i.1, 2), 7)\n";
    assert!(!simulate::proved_by_identity(&sinking_loop_ssa(check), &sunk_store(check, "%val", "%val"), &opts()));
    let c = counterexample(validate(&before, &sunk_store("", "%val", "%i.2"), "memopt", &opts()));
    // Only the latch's exit (`%i` reaches `%n` before `%a`) stores the wrong word.
    assert!(c.diff.iter().any(|d| d.starts_with("heap 0x10000")), "{:?}", c.diff);
    assert!(c.after.unwrap().trace.is_empty(), "the run leaves by the latch");
    let check = "    trapif(eq(%i.1, 2), 7)\n";
    let c = counterexample(validate(&sinking_loop_ssa(check), &sunk_store(check, "%val", "%val"), "memopt", &opts()));
    let (b, t) = (c.before.unwrap(), c.after.unwrap());
    assert_eq!(b.end, End::Trap(TrapKind::Check(7)));
    assert_eq!(t.end, End::Trap(TrapKind::Check(7)));
    // The source stored 2 + 100 before trapping, the target nothing yet.
    assert_eq!(b.heap[0], 102);
    assert!(c.diff.iter().any(|d| d.starts_with("heap 0x10000")), "{:?}", c.diff);
}


/// A loop that writes `@c` on each trip and checks `check` (if any) after the write,
/// logging the counter; the function returns 0, so only the callframe at the stop shows
/// the last value written.
fn cf_sinking_loop(check: &str) -> Function {
    func(&format!(
        "{LOG}function %f(i32 %n) -> i32 {{\n    callframe i32 @c\n    local i32 %i\nb0:\n    jump b1\nb1:\n    cfwrite(@c, add(mul(%i, 165), 791))\n{check}    call @log(%i, 0)\n    %i = add(%i, 1)\n    br slt(%i, %n), b1, b2\nb2:\n    ret 0\n}}\n"
    ))
}

/// memopt's output for [`cf_sinking_loop`], written out: the loop keeps the value in
/// `%val` (`comma((%val = x), %val)`) and `exit` is what the exit writes to `@c`.
fn cf_sunk(check: &str, exit: &str) -> Function {
    func(&format!(
        "{LOG}function %f(i32 %n) -> i32 {{\n    callframe i32 @c\n    local i32 %i.0\n    local i32 %i.1\n    local i32 %i.2\n    local i32 %val\nb0:\n    %i.0 = 0\n    jump b1\nb1:\n    %i.1 = phi(b0: %i.0, b1: %i.2)\n    comma((%val = add(mul(%i.1, 165), 791)), %val)\n{check}    call @log(%i.1, 0)\n    %i.2 = add(%i.1, 1)\n    br slt(%i.2, %n), b1, b2\nb2:\n    cfwrite(@c, {exit})\n    ret 0\n}}\n"
    ))
}

/// memopt's callframe write sunk out of a loop: the loop keeps the value it wrote in
/// `%val` and writes `@c` on the exit. The relation at the exit must say "the source's
/// `@c` is the target's `%val`", a candidate read off the loop's write aligned with the
/// target's `comma((%val = x), %val)` (before it, `proved (bound 4)`: no statement of the
/// target aligned with the write, and memory seed 8's memopt, whose function returns
/// without reading the variable, was `proved (bound 2)` alike). The wrong twins get
/// replayed counterexamples: the exit writing the counter, and the write sunk past a check
/// in the loop (the source has written when it traps).
#[test]
fn a_callframe_write_sunk_out_of_a_loop_is_proved_for_every_run() {
    let forms = forms_after(cf_sinking_loop(""), "ssa,memopt");
    let (before, after) = (&forms[0], &forms[1]);
    let text = printed(after);
    // memopt did sink the write: the loop keeps its value, and the exit writes it.
    assert!(text.contains("comma((%val = ") && text.contains("cfwrite(@c, %val)"), "{text}");
    let a = validate(before, after, "memopt", &opts());
    assert!(matches!(a, Answer::Proved), "{a}\n{text}");
    // The same by hand, and its wrong twins.
    assert!(matches!(validate(before, &cf_sunk("", "%val"), "memopt", &opts()), Answer::Proved));
    let c = counterexample(validate(before, &cf_sunk("", "%i.2"), "memopt", &opts()));
    assert!(c.diff.iter().any(|d| d.starts_with("callframe slot 0")), "{:?}", c.diff);
    let before = forms_after(cf_sinking_loop("    trapif(eq(%i, 2), 7)\n"), "ssa").remove(0);
    let c = counterexample(validate(&before, &cf_sunk("    trapif(eq(%i.1, 2), 7)\n", "%val"), "memopt", &opts()));
    let (b, t) = (c.before.unwrap(), c.after.unwrap());
    assert_eq!(b.end, End::Trap(TrapKind::Check(7)));
    assert_eq!(t.end, End::Trap(TrapKind::Check(7)));
    // The source wrote 2 * 165 + 791 before trapping, the target nothing yet.
    assert_eq!(b.callframe[0].as_i64(), 2 * 165 + 791);
    assert!(c.diff.iter().any(|d| d.starts_with("callframe slot 0")), "{:?}", c.diff);
}

/// memopt's write of a constant sunk out of a loop: no local keeps 409 (memopt writes the
/// constant itself on the exit), so the relation on the way out must say "the source's
/// `@c` holds 409", which only the constant's own tree can (before that candidate,
/// `proved (bound 4)`: memory seed 871's memopt failed every try on `@c2` at a later
/// trap). The twin that writes 408 on the exit gets a replayed counterexample.
#[test]
fn a_constant_callframe_write_sunk_out_of_a_loop_is_proved_for_every_run() {
    let constant = |exit: &str| {
        func(&format!(
            "{LOG}function %f(i32 %n) -> i32 {{\n    callframe i32 @c\n    local i32 %i.0\n    local i32 %i.1\n    local i32 %i.2\nb0:\n    %i.0 = 0\n    jump b1\nb1:\n    %i.1 = phi(b0: %i.0, b1: %i.2)\n{exit}    call @log(%i.1, 0)\n    %i.2 = add(%i.1, 1)\n    br slt(%i.2, %n), b1, b2\nb2:\n{}    ret 0\n}}\n",
            if exit.is_empty() { "    cfwrite(@c, 409)\n" } else { "" }
        ))
    };
    let hir = func(&format!(
        "{LOG}function %f(i32 %n) -> i32 {{\n    callframe i32 @c\n    local i32 %i\nb0:\n    jump b1\nb1:\n    cfwrite(@c, 409)\n    call @log(%i, 0)\n    %i = add(%i, 1)\n    br slt(%i, %n), b1, b2\nb2:\n    ret 0\n}}\n"
    ));
    let forms = forms_after(hir, "ssa,memopt");
    let (source, after) = (&forms[0], &forms[1]);
    let text = printed(&after);
    // memopt did sink the write: the loop writes nothing, the exit writes the constant.
    assert_eq!(text.matches("cfwrite(@c, 409)").count(), 1, "{text}");
    assert!(!text.contains("%val"), "{text}");
    let a = validate(source, after, "memopt", &opts());
    assert!(matches!(a, Answer::Proved), "{a}\n{text}");
    // The same by hand (`constant("")` writes on the exit), and the wrong twin.
    let source = constant("    cfwrite(@c, 409)\n");
    assert!(matches!(validate(&source, &constant(""), "memopt", &opts()), Answer::Proved));
    let wrong = func(&format!("{LOG}{}", printed(&constant("")).replace("cfwrite(@c, 409)", "cfwrite(@c, 408)")));
    let c = counterexample(validate(&source, &wrong, "memopt", &opts()));
    assert!(c.diff.iter().any(|d| d.starts_with("callframe slot 0")), "{:?}", c.diff);
}

/// A store of the bytes the heap already holds, removed: `store.8(A, %x)` in one arm after
/// `store.8(A, %x)` before the branch (ssa seed 880's memopt removed such a store). At the
/// arm's entry the relation must say "the source's heap with the store done is the same
/// heap", which a pending store done on the source's heap says (before it, the heaps
/// parted after the arm: `proved (bound 4)`). The twin that removes a store of another
/// value gets a replayed counterexample.
#[test]
fn a_store_of_the_bytes_already_there_removed_is_proved_for_every_run() {
    let f = |arm: &str| {
        func(&format!(
            "function %f(i32 %a, i32 %x) -> i32 {{\nb0:\n    store.8(1048576, %x)\n    br slt(%a, 0), b1, b2\nb1:\n{arm}    jump b3\nb2:\n    store.8(1048576, 7)\n    jump b3\nb3:\n    trapif(eq(%a, -5), 9)\n    ret load.i32(1048576)\n}}\n"
        ))
    };
    let a = validate(&f("    store.8(1048576, %x)\n"), &f(""), "memopt", &opts());
    assert!(matches!(a, Answer::Proved), "{a}");
    let c = counterexample(validate(&f("    store.8(1048576, add(%x, 1))\n"), &f(""), "memopt", &opts()));
    assert!(c.diff.iter().any(|d| d.starts_with("heap 0x10000") || d.starts_with("value")), "{:?}", c.diff);
}

/// Generated pairs that each needed one of the simulation check's candidates or slot
/// rules, proved for every run at bound 2 (each was `proved (bound 2)` without it):
/// - memory seed 801's memopt: seven stores removed, the fifth of which (its only
///   overwrites two blocks later) needs its pending store at the blocks between; with
///   every removed store's candidate joined at every block, their goals took the shares
///   of the queries (the pending stores' scopes, and up to 8 of them);
/// - memory seed 883's memopt: `cfwrite(@c0, %c2)` for `cfwrite(@c0, cfread(@c2))` in a
///   loop whose promoted `%c0.2` takes `%c2` on the back edge (a copy's variable and the
///   local it copies from);
/// - loops seed 822's SSAPRE: 1,750 slots of the states, past the slot cap, so no
///   temporary's definition was kept and no relation said `%pre19.10` holds its address
///   (the definitions of the target's new locals past the cap);
/// - default seed 848's memopt: `load.i32(A)` after `store.64(A, sext(%p1))`, held as
///   `trunc(%mem)` of a loop's phi and returned after the loop; before the loop's head the
///   relation must say the cell is `trunc(%val)`, the phi's argument (the converted
///   cells read through the phis);
/// - ssa seed 986's SSAPRE: `%mem.2 = load.i64(A)` kept in a comma on both sides, the
///   target's address a temporary (`load.i64(%pre9.2)`), which the walk of the aligned
///   trees stopped before (the source's comma against the target's load);
/// - memory seed 1168's memopt: `cfwrite(@c0, %t18.1)` in a loop body, promoted to the
///   phi `%c0.3 = phi(b24: %val.1, b29: %t18.1)` and written after the loop; from the
///   body's write to the latch the relation must say the source's `@c0` holds `%t18.1`
///   (the locals the source's callframe writes leave in their variables);
/// - ssa seed 1093's memopt: `store.64(A, ..)` in a loop body sunk to the exit as
///   `store.64(A, %mem)`, `%mem = phi(b5: %val, b9: %val.1)`; from the body's store to the
///   latch the source's heap is the target's with `store.64(A, %val.1)` done, and before
///   the loop with `store.64(A, %val)` (the sunk stores translated through the phis);
/// - memory seed 1039's memopt: `store.8(A, %t6.1)` of `%t6.1 = load.i32.u8(A)` removed,
///   with a store at `1051616 + and(x, 7) + 3` between (a narrow load stored back is no
///   store in the encoder's canonical heaps);
/// - loops seed 1131's SSAPRE: `xor(%c1.10, k)` in a loop computed before it as
///   `xor(%c1.5, k)`, where `%c1.10 = phi(b23: %c1.5, b26: %c1.9)` and `%c1.9 =
///   phi(b25: %c1.10, b28: %c1.9)` only copy `%c1.5` (the trivial phis' copies);
/// - ssa seed 1147's SSAPRE: `%pre9 = zext(comma((%t8.16 = trunc(6)), %t8.16))`, whose
///   phi `%pre9.2` the source computes as `zext(%t8.1)` after the loop (a definition that
///   keeps a local on the way reads it);
/// - loops seed 1324's memopt: `load.i64(A)` held in `%mem = phi(b0: %val, b3: %val.1)`
///   across a loop that stores `%val.1` at `A` (the phi's arguments' locals before it).
#[test]
fn generated_pairs_that_need_the_candidates_are_proved_for_every_run() {
    use crate::gen::Profile;
    let o = Options { bound: 2, ..Options::default() };
    for (profile, seed, pass) in [(Profile::Memory, 801, "memopt"), (Profile::Memory, 883, "memopt"), (Profile::Loops, 822, "ssapre"), (Profile::Default, 848, "memopt"), (Profile::Ssa, 986, "ssapre"), (Profile::Memory, 1168, "memopt"), (Profile::Ssa, 1093, "memopt"), (Profile::Memory, 1039, "memopt"), (Profile::Loops, 1131, "ssapre"), (Profile::Ssa, 1147, "ssapre"), (Profile::Loops, 1324, "memopt")] {
        let (_, before, after) = generated_pairs_of(profile, seed).into_iter().find(|(p, ..)| p == pass).expect("the pass runs");
        let a = validate(&before, &after, pass, &o);
        assert!(matches!(a, Answer::Proved), "{profile:?} seed {seed} {pass}: {a}");
    }
}

/// Generated pairs whose inference queries compared terms under 64-bit products
/// (`mix64` multiplies by a constant), proved for every run now that the queries read
/// products and quotients as uninterpreted functions (`simulate::abstracted`); before,
/// each was `unknown`, its budget used up on queries that ran out of their shares:
/// loops seed 1781's memopt (`proved` in 0.4 s) and memory seed 1471's memopt (1.4 s).
#[test]
fn generated_pairs_whose_products_bit_blast_slowly_are_proved_for_every_run() {
    use crate::gen::Profile;
    assert_memopt_proved_for_every_run(&[(Profile::Loops, 1781), (Profile::Memory, 1471)]);
}

/// Four generated pairs `proved (bound 2)` at stop 58: ssa seed 1776's memopt removed a
/// store of a word's low half back where it was read, which the heap's canonical form now
/// leaves out; memory seed 1319's memopt, whose inference parted both sides of a
/// parameter wherever a model of the abstracted query, read with the real operations, did
/// not say which goals differ (each goal's member left its class alone); and default seed
/// 1878's memopt, which sank a loop's `cfwrite(@c2, load.i32(A))` onto its exit as
/// `cfwrite(@c2, %mem)`, the load hoisted (no candidate said that `@c2` holds `%mem`); and
/// ssa seed 1535's memopt, which removed a dead store whose address reads a callframe
/// variable (no pending store's candidate for it).
#[test]
fn generated_memopt_pairs_with_stores_back_and_unsplit_models_are_proved_for_every_run() {
    use crate::gen::Profile;
    assert_memopt_proved_for_every_run(&[(Profile::Ssa, 1776), (Profile::Memory, 1319), (Profile::Default, 1878), (Profile::Ssa, 1535)]);
}

/// Four generated pairs not proved at stop 59, each for want of a candidate: ssa seed
/// 1582's memopt, a function whose states alone take 1,606 slots, where every load's
/// candidate was cut (now they may go past the cap as the new locals' definitions do);
/// loops seed 1451's memopt, which removed a dead store inside a tree and hoisted the load
/// in its value (`%mem.1 = load.i64.s32(A)`) out of the loop, a load the candidates' walk
/// never met since it stopped at the removed store; and ssa seed 1853's memopt, which
/// removed `store.16(A, %p1)` inside a tree, a store that had no pending store's candidate
/// (only a block's statements had); and memory seed 1637's memopt, whose fourteenth dead
/// store had none either (eight were proposed).
#[test]
fn generated_memopt_pairs_with_cut_and_nested_candidates_are_proved_for_every_run() {
    use crate::gen::Profile;
    assert_memopt_proved_for_every_run(&[(Profile::Ssa, 1582), (Profile::Loops, 1451), (Profile::Ssa, 1853), (Profile::Memory, 1637)]);
}

/// Two generated pairs whose memopt removed a store that a later store at its address
/// overwrites across a `heap_rmw` word (a store that may be at the same address), proved
/// for every run only in the heap's form that looks past such stores: memory seed 1812's,
/// whose first relation differs in the plain form and goes again at once, and ssa seed
/// 1658's, whose relations go again after the last try. Both were `proved (bound 2)` or
/// `unknown` before that form.
#[test]
fn generated_memopt_pairs_with_a_store_overwritten_across_a_word_are_proved_for_every_run() {
    use crate::gen::Profile;
    assert_memopt_proved_for_every_run(&[(Profile::Memory, 1812), (Profile::Ssa, 1658)]);
}

/// Asserts that each generated case's memopt is proved for every run (bound 2 for the
/// bounded check, the default budget).
fn assert_memopt_proved_for_every_run(cases: &[(crate::gen::Profile, u64)]) {
    let o = Options { bound: 2, ..Options::default() };
    for &(profile, seed) in cases {
        let (_, before, after) = generated_pairs_of(profile, seed).into_iter().find(|(p, ..)| p == "memopt").expect("the pass runs");
        let a = validate(&before, &after, "memopt", &o);
        assert!(matches!(a, Answer::Proved), "{profile:?} seed {seed} memopt: {a}");
    }
}

/// `f` as text.
fn printed(f: &Function) -> String {
    let mut text = String::new();
    tandem_core::text::printer::write_function(&mut text, f).expect("printing to a string");
    text
}

/// The function after each pass of `pipeline`, run on `f`.
fn forms_after(mut f: Function, pipeline: &str) -> Vec<Function> {
    let pipeline = tandem_core::passes::Pipeline::parse(pipeline).expect("a pipeline");
    let mut forms = vec![];
    tandem_core::passes::PassManager { verify: true }.run(&pipeline, &mut f, &mut |_, g, _| forms.push(g.clone())).expect("the passes run");
    forms
}

/// The `ssa` pass on two generated functions of 44 and 47 blocks (default seeds 13 and
/// 29).
fn generated_ssa(seed: u64) -> (Function, Function) {
    let cfg = crate::gen::Profile::Default.config();
    let before = crate::gen::generate(seed, &cfg).case.module.functions[0].clone();
    let after = forms_after(before.clone(), "ssa").remove(0);
    (before, after)
}

/// What the `ssa` pass needs is that each version holds its name where it is current: a
/// relation between locals alone. The first try, the states' slots without definitions,
/// proves these two for every run within a tenth of the budget (70 ms each). Before it,
/// the first try had every definition among its candidates: a definition in a class is an
/// assumption, which the concrete samples seldom satisfy, so every split went to the
/// solver, and the budget ran out (`proved (bound 2)`, 5 and 8 s). (A planted bug in
/// functions this large is out of the bounded check's budget; the small twin is
/// [`a_stale_version_in_a_loop_is_found`].)
#[test]
fn the_ssa_form_of_large_generated_functions_is_proved_for_every_run() {
    let o = Options { bound: 2, ..Options::default() };
    for seed in [13, 29] {
        let (before, after) = generated_ssa(seed);
        let a = validate(&before, &after, "ssa", &o);
        assert!(matches!(a, Answer::Proved), "seed {seed}: {a}");
    }
}

/// A loop that logs its running sum, and the `ssa` pass's output for it, proved for every
/// run (by the try over the states' slots alone: the versions of `%s` and `%i` hold their
/// names). With the arguments of `%s`'s phi swapped, the loop enters with the latch's
/// version (0, not assigned yet) and resets the sum each trip: the third trip logs 0 for
/// 1 (`%s` is 0 + 0, then 0 + 1): a replayed counterexample at bound 2, never a proof.
#[test]
fn a_stale_version_in_a_loop_is_found() {
    let before = func(&format!(
        "{LOG}function %f(i32 %n) -> i32 {{\n    local i32 %i\n    local i32 %s\nb0:\n    jump b1\nb1:\n    call @log(%s, %i)\n    %s = add(%s, %i)\n    %i = add(%i, 1)\n    br slt(%i, %n), b1, b2\nb2:\n    ret %s\n}}\n"
    ));
    let after = forms_after(before.clone(), "ssa").remove(0);
    let o = Options { bound: 2, ..opts() };
    let a = validate(&before, &after, "ssa", &o);
    assert!(matches!(a, Answer::Proved), "{a}");
    let bad = with_phi_arguments_swapped(&after, "s");
    let c = counterexample(validate(&before, &bad, "ssa", &o));
    assert!(c.input.args[0].as_i64() >= 3, "{:?}", c.input.args);
    assert!(c.diff.iter().any(|d| d.starts_with("trace event 2")), "{:?}", c.diff);
}

/// A pass's answer depends on its two functions and the options alone, not on what was
/// validated before it in the same process: memopt on default seed 36 answers the same
/// after the whole check pipeline's earlier passes were validated as validated alone
/// (before each validation had a Z3 context of its own, the names of its fresh symbols,
/// which order the concrete samples, and the ids of its terms followed from the earlier
/// passes' terms: `tandem verify --generated --seed 36 --count 1 --bound 2` answered
/// `proved (bound 2)` after them, `proved` with `--pass memopt`).
#[test]
fn a_pass_answers_alike_whatever_was_validated_before_it() {
    let cfg = crate::gen::Profile::Default.config();
    let f = crate::gen::generate(36, &cfg).case.module.functions[0].clone();
    let o = Options { bound: 2, ..Options::default() };
    let pipeline = tandem_core::passes::check_pipeline();
    let memopt = |only: Option<&str>| -> Vec<String> {
        let answers = validate_some_passes(&f, &pipeline, &o, only).expect("the pipeline runs");
        answers.into_iter().filter(|(p, ..)| p == "memopt").map(|(_, a, ..)| a.to_string()).collect()
    };
    let after_the_others = memopt(None);
    assert_eq!(after_the_others.len(), 1);
    assert_eq!(after_the_others, memopt(Some("memopt")));
}

/// Each pass of the check pipeline on default seed `seed`, from the form the generator
/// wrote it in (as `tandem verify` runs it): (pass, before, after).
fn generated_pairs(seed: u64) -> Vec<(String, Function, Function)> {
    generated_pairs_of(crate::gen::Profile::Default, seed)
}

/// [`generated_pairs`] of another profile.
fn generated_pairs_of(profile: crate::gen::Profile, seed: u64) -> Vec<(String, Function, Function)> {
    let cfg = profile.config();
    let mut f = crate::gen::generate(seed, &cfg).case.module.functions[0].clone();
    let mut before = f.clone();
    let mut out = vec![];
    let pipeline = super::run::pipeline_for(&f, &tandem_core::passes::check_pipeline()).expect("a pipeline from the function's form");
    tandem_core::passes::PassManager { verify: true }
        .run(&pipeline, &mut f, &mut |pass, after, _| {
            out.push((pass.to_string(), before.clone(), after.clone()));
            before = after.clone();
        })
        .expect("the pipeline runs");
    out
}

/// Default seed `seed`'s memopt: (before, after).
fn generated_memopt(seed: u64) -> (Function, Function) {
    let (_, before, after) = generated_pairs(seed).into_iter().find(|(p, ..)| p == "memopt").expect("memopt runs");
    (before, after)
}

/// The `ssa` pass where one local's name extends another's: default seed 10 has `%i2` and
/// `%i2.1`, two loop counters, whose versions are `%i2.3` and `%i2.1.2`. Read as versions
/// of one name, `%i2` stopped being current wherever `%i2.1` was assigned, so no relation
/// joined it to its versions in the second loop, which logs `%i2.3`: the answer was
/// `vacuous` at bound 2 after the whole budget (seeds 9 and 11 alike, `proved (bound 2)`).
/// The source's own names are the variables: proved for every run.
#[test]
fn the_ssa_form_of_locals_whose_names_extend_each_other_is_proved_for_every_run() {
    let (_, before, after) = generated_pairs(10).into_iter().find(|(p, _, _)| p == "ssa").expect("the ssa pass");
    assert!(before.locals.values().any(|d| d.name == "i2") && before.locals.values().any(|d| d.name == "i2.1"));
    let a = validate(&before, &after, "ssa", &Options { bound: 2, ..opts() });
    assert!(matches!(a, Answer::Proved), "{a}");
}

/// The simple passes of functions with many locals: default seed 11's SSA form has 886
/// locals, of which the states of `ssa-destroy` held over 1,500 between them, past the
/// slot cap, so every try lost the target's locals and the answer was `unknown (resource
/// budget used up)`; seed 28's `dce` and `ssa-destroy` lost them too. Most of those
/// locals are dead at every block entry (a version used in the block that defines it):
/// the checker's own liveness leaves them out of the relation, and `dce`, `ssa-destroy`
/// and `cprop` of both are proved for every run.
#[test]
fn the_simple_passes_of_functions_of_many_locals_are_proved_for_every_run() {
    let o = Options { bound: 2, ..Options::default() };
    for seed in [11, 28] {
        for (pass, before, after) in generated_pairs(seed) {
            if ["dce", "ssa-destroy", "cprop"].contains(&pass.as_str()) {
                let a = validate(&before, &after, &pass, &o);
                assert!(matches!(a, Answer::Proved), "seed {seed} {pass}: {a}");
            }
        }
    }
}

/// The small twin of the test above: `%dead` is assigned in the loop and never read, so
/// the relation leaves it out (the target drops its assignments, as `dce` does) and the
/// pair is proved; the target that drops the assignment of the live `%s` instead is a
/// replayed counterexample (the sum stays 0).
#[test]
fn a_dead_local_dropped_is_proved_and_a_live_one_is_found() {
    let src = |body_s: &str, body_dead: &str| {
        func(&format!(
            "function %f(i32 %n) -> i32 {{\n    local i32 %i\n    local i32 %s\n    local i32 %dead\nb0:\n    jump b1\nb1:\n{body_s}{body_dead}    %i = add(%i, 1)\n    br slt(%i, %n), b1, b2\nb2:\n    ret %s\n}}\n"
        ))
    };
    let before = src("    %s = add(%s, %i)\n", "    %dead = mul(%i, %s)\n");
    let o = Options { bound: 3, ..opts() };
    let a = validate(&before, &src("    %s = add(%s, %i)\n", ""), "dce", &o);
    assert!(matches!(a, Answer::Proved), "{a}");
    let c = counterexample(validate(&before, &src("", "    %dead = mul(%i, %s)\n"), "dce", &o));
    assert!(c.input.args[0].as_i64() >= 2, "{:?}", c.input.args);
}

/// A block entered only by a branch whose condition is false in every state
/// (`eq(mul(%n, 0), 1)`) is entered by no run: the simulation check neither relates it
/// nor compares what it does, so a target that returns something else there is proved for
/// every run (before, its observables were compared under a relation no edge
/// established, and the pair was proved to bound 3 only; loops seed 303's memopt, whose
/// dead block branches on a local it never related, likewise). Where the branch depends
/// on the argument, the same difference is a replayed counterexample.
#[test]
fn a_block_no_run_enters_is_not_compared_and_one_a_run_enters_is() {
    let src = |cond: &str, ret: i32| {
        func(&format!(
            "{LOG}function %f(i32 %n) -> i32 {{\nb0:\n    br eq({cond}, 1), b3, b1\nb1:\n    call @log(%n, 1)\n    br slt(%n, 64), b1, b2\nb2:\n    ret %n\nb3:\n    ret {ret}\n}}\n"
        ))
    };
    let o = Options { bound: 3, ..opts() };
    let a = validate(&src("mul(%n, 0)", 7), &src("mul(%n, 0)", 8), "dce", &o);
    assert!(matches!(a, Answer::Proved), "{a}");
    let c = counterexample(validate(&src("%n", 7), &src("%n", 8), "dce", &o));
    assert!(c.input.args[0].as_i64() < 64, "{:?}", c.input.args);
}

/// Default seed 17's memopt (a function of 46 blocks): proved for every run. Before, an
/// edge whose goals held a heap asked none of them by congruence, and one edge's rounds of
/// queries out of their share could spend the whole check's budget (`proved (bound 2)`);
/// now the goals that share their top operator are asked by congruence whatever the
/// others, and one edge's queries take at most four query shares in all. The same
/// output with every returned value off by one is a replayed counterexample.
#[test]
fn default_seed_17_memopt_is_proved_for_every_run_and_its_wrong_twin_is_found() {
    memopt_proved_and_wrong_twin_found(17);
}

/// Default seed 31's memopt (a function of 41 blocks): proved for every run. Before, a
/// block's observables were asked only whole, and one block's query took what the later
/// tries needed (`proved (bound 2)`); now they are asked by congruence first, only where
/// the two steps differ. Its wrong twin (a stray store in the first block, since the
/// seed's runs all trap) is a replayed counterexample.
#[test]
fn default_seed_31_memopt_is_proved_for_every_run_and_its_wrong_twin_is_found() {
    memopt_proved_and_stray_store_found(31);
}

/// Default seed `seed`'s memopt is proved for every run, and its output with the text
/// changed by `twin` (a wrong twin) is a replayed counterexample, which is returned.
fn memopt_proved_and_twin_found(seed: u64, twin: impl Fn(&Function, &str) -> String) -> Counterexample {
    let o = Options { bound: 2, ..Options::default() };
    let (before, after) = generated_memopt(seed);
    let a = validate(&before, &after, "memopt", &o);
    assert!(matches!(a, Answer::Proved), "seed {seed}: {a}");
    let mut m = crate::gen::generate(seed, &crate::gen::Profile::Default.config()).case.module;
    m.functions[0] = after.clone();
    let text = twin(&after, &m.to_string());
    assert_ne!(text, m.to_string());
    let bad = func(&text);
    // The bounded check of a function this large may need more than the default budget.
    counterexample(validate(&before, &bad, "memopt", &Options { rlimit: 5 * o.rlimit, ..o }))
}

/// Default seed 0's SSAPRE (a function of 47 blocks): proved for every run. Its
/// temporaries live in phis (`%pre2.4 = phi(b14: %pre2.3, b17: %pre2.2)` holding
/// `and(%v1.22, 1)` beside `%v1.22 = phi(b14: %v1.21, b17: %v1.24)`), and it reads memopt's
/// `%val`, assigned inside a callframe write, where the source recomputes its tree.
/// Before, the relation's definitions were a phi's arguments' trees as they stand
/// (`and(%v1.24, 1)`: stale on the loop's entry edge) and statements' own assignments
/// only, so a branch condition and a trap's were free (`proved (bound 2)`); now a phi's
/// trees are translated through its block's phis, and assignments inside a statement
/// count. Its wrong twin (a stray store in the first block) is not proved by the same
/// check (the bounded check's counterexample for it takes minutes on a function this
/// large; the smaller planted bugs above show that part).
#[test]
fn default_seed_0_ssapre_is_proved_for_every_run_and_its_wrong_twin_is_not() {
    let o = Options { bound: 2, ..Options::default() };
    let (_, before, after) = generated_pairs(0).into_iter().find(|(p, ..)| p == "ssapre").expect("ssapre runs");
    let a = validate(&before, &after, "ssapre", &o);
    assert!(matches!(a, Answer::Proved), "{a}");
    let mut m = crate::gen::generate(0, &crate::gen::Profile::Default.config()).case.module;
    m.functions[0] = after.clone();
    let bad = func(&stray_store(&after, &m.to_string()));
    let twin = in_context(|| simulate::check_simulation(&before, &bad, &o, &mut Budget::new(&o).simulation_share()));
    assert!(!matches!(twin, Ok(true)), "the wrong twin proved");
}

/// The wrong twin of default seed 17: every `ret X` returns `X + 1`.
fn memopt_proved_and_wrong_twin_found(seed: u64) {
    let c = memopt_proved_and_twin_found(seed, |after, text| {
        let one = if after.ret == tandem_core::ir::Type::I64 { "1:i64" } else { "1" };
        text.lines()
            .map(|l| match l.strip_prefix("    ret ") {
                Some(x) => format!("    ret add({x}, {one})\n"),
                None => format!("{l}\n"),
            })
            .collect()
    });
    match (c.before.map(|x| x.end), c.after.map(|x| x.end)) {
        (Ok(End::Return(x)), Ok(End::Return(y))) => assert_eq!(y.as_i64().wrapping_sub(x.as_i64()) & 0xffff_ffff, 1, "{x} {y}"),
        other => panic!("both runs return, one more after: {other:?}"),
    }
}

/// The wrong twin of a function whose runs may all trap: its first block starts with a
/// store of 7 to the heap's last byte (0x100fff), which the source does not do; the
/// counterexample's heaps differ there (its source run leaves another byte).
fn memopt_proved_and_stray_store_found(seed: u64) {
    let c = memopt_proved_and_twin_found(seed, stray_store);
    assert!(c.diff.iter().any(|d| d.starts_with("heap 0x100ff")), "{:?}", c.diff);
}

/// The text of a function whose first block starts with a store of 7 to the heap's last
/// byte (0x100fff).
fn stray_store(after: &Function, text: &str) -> String {
    let entry = format!("{}:", after.entry());
    text.lines().map(|l| if l == entry { format!("{l}\n    store.8(1052671, 7)\n") } else { format!("{l}\n") }).collect()
}

/// The inference answers alike on every run: the same pair twice in one process gives the
/// same notes, rounds, samples and units included. Each hash set has a seed of its own, so
/// two runs in one process differ as two processes do. The steps' symbols were held in
/// hash sets; dropping a step freed its fresh symbols in the set's order, Z3 reuses freed
/// ids for new terms, and the ids order its terms' arguments: default seed 26's memopt
/// answered `proved (bound 2)` on some runs and `unknown` on others (this test saw 271
/// rounds on one run and 274 on the other). Seed 26 is now proved without an inference
/// to note, and so is seed 9, which the test ran next on a fifth of the default budget
/// (blocks no run enters are no longer compared), and so, since stop 59, is seed 500,
/// which it ran next, and so, since stop 60, is seed 1898, which it ran next; it runs seed
/// 1973's, not proved for every run, on that fifth.
#[test]
fn the_inference_answers_alike_on_every_run() {
    let o = Options { bound: 2, rlimit: Options::default().rlimit / 5, ..Options::default() };
    let (before, after) = generated_memopt(1973);
    let first = super::simulate::explain(&before, &after, &o);
    assert!(first.iter().any(|n| n.contains("rounds")), "{first:?}");
    assert_eq!(first, super::simulate::explain(&before, &after, &o));
}

/// A goal the solver cannot decide within its share is given up once for the inference:
/// default seed 29's memopt compared the same target definitions at block after block,
/// each query out of its share, and spent 80% of its budget on undecided queries before
/// the budget ran out (`proved (bound 2)`). Given up once, they leave the relation early,
/// and what is left is proved for every run.
#[test]
fn a_goal_the_solver_cannot_decide_is_given_up_once() {
    let (before, after) = generated_memopt(29);
    let a = validate(&before, &after, "memopt", &Options { bound: 2, ..Options::default() });
    assert!(matches!(a, Answer::Proved), "{a}");
}

/// Default seed 20's memopt removes a store that two arms overwrite, after helper calls
/// that read and write the heap, and one another store overwritten in its own block: with
/// the stores at one address as one term ([`encode`]'s canonical heap) and the
/// dead store's candidate tried second, it is proved for every run (before: `unknown`,
/// the budget spent on tries whose heaps parted at the removed store). It took 13.6 s;
/// 2.6 s since the observables' ways to differ are asked in groups where the whole query
/// is undecided and an edge's values are evaluated once.
#[test]
fn a_dead_store_overwritten_in_other_blocks_is_proved_for_every_run() {
    let (before, after) = generated_memopt(20);
    let a = validate(&before, &after, "memopt", &Options { bound: 2, ..Options::default() });
    assert!(matches!(a, Answer::Proved), "{a}");
}

/// Default seed 11's memopt keeps `cfwrite(@c0, 10)` in a loop's body and gives the
/// promoted variable's phi the constant in the latch (`%c0.3 = phi(b36: %c0.1, b39: %k)`,
/// `%k = 10`). The relation at the latch's entry must say "`@c0` holds 10", which only the
/// constant's definition joined with the phi's local can say, and the function's 1,808
/// state slots left no room for definitions at all: with the try that joins such constants
/// and keeps them past the slot limit, it is proved for every run (before: `unknown`, the
/// tries failing at `b42: ends differ` until the budget ran out). Its inference also asked
/// a model of the relation 51 times, 47 of them undecided within their shares (5.0M of
/// the 10M units of the simulation check, and too little was left for the observables at
/// b25): a block whose model is undecided is not asked again ([`super::simulate`]'s
/// `relation_model`).
#[test]
fn a_constant_a_promoted_variable_holds_around_a_loop_is_proved_for_every_run() {
    let (before, after) = generated_memopt(11);
    assert!(after.locals.values().any(|d| d.name == "k") && after.cfvars.values().any(|d| d.name == "c0"));
    let a = validate(&before, &after, "memopt", &Options { bound: 2, ..Options::default() });
    assert!(matches!(a, Answer::Proved), "{a}");
}

/// Loops seed 18's memopt: aligned candidates that hold at few blocks, whose goals random
/// samples could not split (their assumptions equate loads with symbols) and queries did,
/// until the budget ran out. A model of each step's relation, found once per step, splits
/// them: it is proved for every run (before: `unknown`).
#[test]
fn a_model_of_the_relation_splits_what_samples_cannot() {
    let (_, before, after) = generated_pairs_of(crate::gen::Profile::Loops, 18).into_iter().find(|(p, ..)| p == "memopt").expect("memopt runs");
    let a = validate(&before, &after, "memopt", &Options { bound: 2, ..Options::default() });
    assert!(matches!(a, Answer::Proved), "{a}");
}

/// A copy between callframe variables that memopt sinks out of a loop: the source writes
/// `@c0` from `@c3` in every iteration, the target once on the exit, from the promoted
/// `%c3`, before a `cf_trace` that records both. Proved for every run: the relation on
/// the exit says the source's `@c0` already holds `@c3`'s value ([`simulate`]'s copy
/// candidates), where before no candidate joined the two, the trace event differed in
/// every try, and the answer was bounded (default seed 637's memopt). A target that
/// writes another value is a replayed counterexample.
#[test]
fn a_callframe_copy_sunk_out_of_a_loop_is_proved_for_every_run() {
    let head = "helper @cf_trace() -> void effects(reads_callframe, observable)\nfunction %f(i32 %n) -> i32 {\n    callframe i32 @c0\n    callframe i32 @c3\n    local i32 %i.0\n    local i32 %i.1\n    local i32 %i.2\n";
    let src = func(&format!(
        "{head}b0:\n    %i.0 = 0\n    jump b1\nb1:\n    %i.1 = phi(b0: %i.0, b1: %i.2)\n    cfwrite(@c0, cfread(@c3))\n    %i.2 = add(%i.1, 1)\n    br slt(%i.2, %n), b1, b2\nb2:\n    call @cf_trace()\n    ret %i.2\n}}\n"
    ));
    let tgt = |value: &str| {
        func(&format!(
            "{head}    local i32 %c3\nb0:\n    %i.0 = 0\n    %c3 = cfread(@c3)\n    jump b1\nb1:\n    %i.1 = phi(b0: %i.0, b1: %i.2)\n    %i.2 = add(%i.1, 1)\n    br slt(%i.2, %n), b1, b2\nb2:\n    cfwrite(@c0, {value})\n    call @cf_trace()\n    ret %i.2\n}}\n"
        ))
    };
    let o = Options { bound: 2, ..opts() };
    let a = validate(&src, &tgt("%c3"), "memopt", &o);
    assert!(matches!(a, Answer::Proved), "{a}");
    counterexample(validate(&src, &tgt("add(%c3, 1)"), "memopt", &o));
}

/// A dead store memopt removed on a path that also calls `heap_rmw` at a constant address
/// (`heap_rmw(360, d)` writes the word at `HEAP_BASE + 360`, the dead store's byte), the
/// block after the join storing elsewhere first and then overwriting the byte: the shape
/// of memory seed 705's memopt (which, in a function of several hundred statements,
/// still runs out of budget on the heaps). Proved for every run; a store the next block
/// reads before it overwrites it is no dead store, and removing it is a replayed
/// counterexample.
#[test]
fn a_dead_store_beside_a_helpers_word_is_proved_for_every_run() {
    let head = "helper @heap_rmw(i32, i32) -> i32 effects(reads_heap, writes_heap)\nfunction %f(i32 %a, i32 %d) -> i32 {\n";
    let case = |first: &str, dead: &str| {
        func(&format!(
            "{head}b0:\n    br slt(%a, 0), b1, b2\nb1:\n    call @heap_rmw(360, %d)\n{dead}    jump b2\nb2:\n    store.8(1048904, {first})\n    store.8(1048936, 7)\n    ret call @heap_rmw(%a, 0)\n}}\n"
        ))
    };
    let o = Options { bound: 2, ..opts() };
    let dead = "    store.8(1048936, %a)\n";
    let a = validate(&case("1", dead), &case("1", ""), "memopt", &o);
    assert!(matches!(a, Answer::Proved), "{a}");
    counterexample(validate(&case("load.i32.u8(1048936)", dead), &case("load.i32.u8(1048936)", ""), "memopt", &o));
}

/// Each Z3 context keeps its own numerals, simplified forms and fresh symbols
/// ([`in_context`]): an inner context gets terms of its own (a term of the outer context
/// in its solver would mix two contexts), numbers its fresh symbols from 0 again, and the
/// outer context finds its kept terms as they were when the inner one ends.
#[test]
fn each_context_keeps_its_own_terms() {
    in_context(|| {
        let five = numeral(5, 32);
        let x = fresh_bv(32);
        let folded = simplified(&five.bvadd(numeral(u64::MAX, 32)));
        assert_eq!(folded.as_u64(), Some(4), "5 + -1");
        let inner = in_context(|| {
            // Its own symbol 0 and its own numeral 5: only terms of this context in its
            // solver, and the equation is satisfiable.
            let y = fresh_bv(32);
            let s = Solver::new();
            s.assert(&y.eq(numeral(5, 32)));
            s.assert(&simplified(&y.bvadd(numeral(0, 32))).eq(numeral(5, 32)));
            (s.check(), y.to_string())
        });
        assert_eq!(inner.0, SatResult::Sat);
        assert_eq!(inner.1, x.to_string(), "each context numbers its fresh symbols from 0");
        // Back in the outer context: the same kept numeral, and the next fresh symbol is a
        // new one (were it `x` again, `x != y` would be unsatisfiable).
        assert!(numeral(5, 32).ast_eq(&five));
        let y = fresh_bv(32);
        let s = Solver::new();
        s.assert(&x.eq(&y).not());
        s.assert(&x.eq(&five));
        assert_eq!(s.check(), SatResult::Sat);
    });
}

/// A function of `%a` and `%b` with a callframe variable, the `log` helper and `body` as
/// its one block.
fn one_block(body: &str) -> Function {
    func(&format!("{LOG}function %f(i32 %a, i32 %b) -> i32 {{\n    callframe i32 @c\n    local i32 %x\nb0:\n{body}}}\n"))
}

/// The term-identity check ([`super::identity`]) proves what the simple passes leave,
/// without the solver: a constant folded, a dead assignment removed, a tree moved into
/// its use past a log that reads nothing it writes. Each planted bug beside them differs
/// in one effect the check must see in its terms; none is proved, and each gets a
/// counterexample the interpreter replays.
#[test]
fn term_identity_proves_the_simple_passes_and_no_planted_bug() {
    let before = one_block("    %x = add(2, 3)\n    call @log(%x, %a)\n    ret mul(%x, %b)\n");
    let folded = one_block("    %x = 5\n    call @log(5, %a)\n    ret mul(5, %b)\n");
    assert!(simulate::proved_by_identity(&before, &folded, &opts()));
    let dead = one_block("    %x = add(%a, 1)\n    call @log(%a, 0)\n    ret %b\n");
    assert!(simulate::proved_by_identity(&dead, &one_block("    call @log(%a, 0)\n    ret %b\n"), &opts()));
    let moved = one_block("    %x = load.i32(1048576)\n    call @log(1, 2)\n    ret %x\n");
    assert!(simulate::proved_by_identity(&moved, &one_block("    call @log(1, 2)\n    ret load.i32(1048576)\n"), &opts()));

    // (before, bad after, what the counterexample shows first)
    let planted = [
        // A constant folded to the wrong value.
        (before.clone(), one_block("    %x = 6\n    call @log(6, %a)\n    ret mul(6, %b)\n"), "trace event 0"),
        // A store, a callframe write and a log removed as if dead.
        (one_block("    store.32(1048576, %a)\n    ret 0\n"), one_block("    ret 0\n"), "heap"),
        (one_block("    cfwrite(@c, %a)\n    ret 0\n"), one_block("    ret 0\n"), "callframe"),
        (one_block("    call @log(%a, %b)\n    ret 0\n"), one_block("    ret 0\n"), "trace"),
        // Two logs swapped.
        (one_block("    call @log(%a, 1)\n    call @log(%b, 2)\n    ret 0\n"), one_block("    call @log(%b, 2)\n    call @log(%a, 1)\n    ret 0\n"), "trace event 0"),
        // A division that may trap removed as dead, and one moved before a check.
        (one_block("    %x = sdiv(100, %b)\n    ret %a\n"), one_block("    ret %a\n"), "end"),
        (one_block("    trapif(%a, 7)\n    %x = sdiv(100, %b)\n    ret %x\n"), one_block("    %x = sdiv(100, %b)\n    trapif(%a, 7)\n    ret %x\n"), "end"),
        // A check's code changed, a load moved across a store, a branch's arms swapped.
        (one_block("    trapif(%a, 7)\n    ret 0\n"), one_block("    trapif(%a, 8)\n    ret 0\n"), "end"),
        (one_block("    %x = load.i32(1048576)\n    store.32(1048576, %b)\n    ret %x\n"), one_block("    store.32(1048576, %b)\n    ret load.i32(1048576)\n"), "end"),
    ];
    for (before, bad, shows) in &planted {
        assert!(!simulate::proved_by_identity(before, bad, &opts()), "{}", printed(bad));
        let c = counterexample(validate(before, bad, "cprop", &opts()));
        assert!(c.diff.iter().any(|d| d.starts_with(shows)), "{}: {:?}", printed(bad), c.diff);
    }
    let arms = |then: &str, other: &str| func(&format!("function %f(i32 %a) -> i32 {{\nb0:\n    br slt(%a, 10), {then}, {other}\nb1:\n    ret 1\nb2:\n    ret 2\n}}\n"));
    let (before, bad) = (arms("b1", "b2"), arms("b2", "b1"));
    assert!(!simulate::proved_by_identity(&before, &bad, &opts()));
    counterexample(validate(&before, &bad, "cprop", &opts()));
}

/// Across a loop, the relation is refined by identity: a local whose two sides hold
/// different terms at the loop's head leaves its class there, and what is left must prove
/// the rest. `dce` removed `%d`'s assignment, which the loop never reads: proved. A sum
/// stepped by 2 instead of 1 leaves the branch alike but parts the sums at the head, and
/// the log of the second trip shows it: not proved (with the relation left unrefined, the
/// sums' class would stand and the logs be one term).
#[test]
fn term_identity_refines_the_relation_across_a_loop() {
    let lp = |dead: &str, step: u32| func(&format!("{LOG}function %f(i32 %n) -> i32 {{\n    local i32 %i\n    local i32 %s\n    local i32 %d\nb0:\n    jump b1\nb1:\n    call @log(%s, 0)\n    %s = add(%s, {step})\n{dead}    %i = add(%i, 1)\n    br slt(%i, %n), b1, b2\nb2:\n    ret %i\n}}\n"));
    let (before, after) = (lp("    %d = mul(%i, 3)\n", 1), lp("", 1));
    assert!(simulate::proved_by_identity(&before, &after, &opts()));
    assert!(matches!(validate(&before, &after, "dce", &opts()), Answer::Proved));
    let wrong = lp("", 2);
    assert!(!simulate::proved_by_identity(&before, &wrong, &opts()));
    let c = counterexample(validate(&before, &wrong, "dce", &opts()));
    assert!(c.diff.iter().any(|d| d.starts_with("trace event 1")), "{:?}", c.diff);
}

/// The term-identity check's heap: a load reads through stores at bytes apart from its
/// own, and a store of its own type and width at its address gives the stored value
/// back; a numeral's bytes are read as the interpreter reads them; a store overwritten
/// at the same place (past stores apart from it), or a store of the bytes just loaded
/// there, is no store. What memopt leaves so is proved without the solver; each planted
/// bug beside it (an overlapping or possibly aliasing address taken for the same or for
/// another, a store taken out that nothing overwrote) is a replayed counterexample.
#[test]
fn term_identity_reads_the_heap_as_the_interpreter_does() {
    let proved = [
        ("    store.32(1048576, %a)\n    store.32(1048580, %b)\n    ret load.i32(1048576)\n", "    store.32(1048576, %a)\n    store.32(1048580, %b)\n    ret %a\n"),
        ("    store.32(1048576, 258)\n    ret load.i32.u8(1048577)\n", "    store.32(1048576, 258)\n    ret 1\n"),
        ("    store.32(1048576, -2)\n    ret load.i32.s16(1048576)\n", "    store.32(1048576, -2)\n    ret -2\n"),
        ("    store.32(1048576, %a)\n    store.32(1048580, %b)\n    store.32(1048576, %b)\n    ret 0\n", "    store.32(1048580, %b)\n    store.32(1048576, %b)\n    ret 0\n"),
        ("    store.32(1048576, load.i32(1048576))\n    ret 0\n", "    ret 0\n"),
        // A narrower store within a wider one's bytes is overwritten.
        ("    store.8(1048576, %a)\n    store.16(1048576, %b)\n    ret 0\n", "    store.16(1048576, %b)\n    ret 0\n"),
        ("    store.8(1048579, %a)\n    store.32(1048580, %a)\n    store.32(1048576, %b)\n    ret 0\n", "    store.32(1048580, %a)\n    store.32(1048576, %b)\n    ret 0\n"),
        // The low bytes of a wider, sign-extending load stored back.
        ("    store.16(1048576, load.i32.s16(1048576))\n    ret 0\n", "    ret 0\n"),
        ("    store.32(1048576, %a)\n    store.32(1048576, load.i32(1048576))\n    ret 0\n", "    store.32(1048576, %a)\n    ret 0\n"),
    ];
    for (before, after) in proved {
        let (before, after) = (one_block(before), one_block(after));
        assert!(simulate::proved_by_identity(&before, &after, &opts()), "{}", printed(&after));
    }
    let planted = [
        // Overlapping, not the same: the bytes read are half %a's, half what was there.
        ("    store.32(1048576, %a)\n    ret load.i32(1048578)\n", "    store.32(1048576, %a)\n    ret %a\n"),
        // A numeral's byte read at the wrong offset.
        ("    store.32(1048576, 258)\n    ret load.i32.u8(1048577)\n", "    store.32(1048576, 258)\n    ret 2\n"),
        // A store at an argument's address may be the one read.
        ("    %x = load.i32(1048576)\n    store.32(%a, %b)\n    ret add(%x, load.i32(1048576))\n", "    %x = load.i32(1048576)\n    store.32(%a, %b)\n    ret add(%x, %x)\n"),
        // A store taken out that a later store at another address did not overwrite.
        ("    store.32(1048576, %a)\n    store.32(1048580, %b)\n    ret 0\n", "    store.32(1048576, %a)\n    ret 0\n"),
        // The bytes stored back were loaded from elsewhere.
        ("    store.32(1048576, load.i32(1048580))\n    ret 0\n", "    ret 0\n"),
        // A wider store below a narrower one keeps its other bytes.
        ("    store.16(1048576, %a)\n    store.8(1048576, %b)\n    ret 0\n", "    store.8(1048576, %b)\n    ret 0\n"),
        // A byte just past the overwriting store's.
        ("    store.8(1048578, %a)\n    store.16(1048576, %b)\n    ret 0\n", "    store.16(1048576, %b)\n    ret 0\n"),
        // A narrower load stored back wider: its upper bytes are the extension's.
        ("    store.16(1048576, load.i32.u8(1048576))\n    ret 0\n", "    ret 0\n"),
        // Stored back, but the bytes were loaded before another store there.
        ("    %x = load.i32(1048576)\n    store.32(1048576, %a)\n    store.32(1048576, %x)\n    ret 0\n", "    %x = load.i32(1048576)\n    store.32(1048576, %a)\n    ret 0\n"),
    ];
    for (before, bad) in planted {
        let (before, bad) = (one_block(before), one_block(bad));
        assert!(!simulate::proved_by_identity(&before, &bad, &opts()), "{}", printed(&bad));
        counterexample(validate(&before, &bad, "memopt", &opts()));
    }
}

/// One random change to `f` (a statement taken out or two swapped, a constant, operator,
/// operand order or branch changed), or `None` where the change is not in verified form.
fn mutant(f: &Function, rng: &mut rand_chacha::ChaCha8Rng) -> Option<Function> {
    use rand::Rng;
    use tandem_core::ir::{BinOp, CmpOp, Terminator};
    let mut g = f.clone();
    let b = g.layout[rng.gen_range(0..g.layout.len())];
    let n = g.blocks[b].stmts.len();
    match rng.gen_range(0..5) {
        0 if n > 0 => {
            g.blocks[b].stmts.remove(rng.gen_range(0..n));
        }
        1 if n > 1 => {
            let i = rng.gen_range(0..n - 1);
            g.blocks[b].stmts.swap(i, i + 1);
        }
        2 => {
            if let Terminator::Branch { then_dest, else_dest, .. } = &mut g.blocks[b].term {
                std::mem::swap(then_dest, else_dest);
            } else {
                return None;
            }
        }
        _ => {
            // A node of the block's trees.
            let mut nodes = vec![];
            for &s in &g.blocks[b].stmts {
                g.visit_postorder(s, &mut |e| nodes.push(e));
            }
            let e = *nodes.get(rng.gen_range(0..nodes.len().max(1)))?;
            match &mut g.exprs[e] {
                ExprData::Const { value, .. } => *value = value.wrapping_add(1),
                ExprData::Binary { op, lhs, rhs } => match op {
                    BinOp::Add => *op = BinOp::Sub,
                    BinOp::Sub | BinOp::Shl | BinOp::Sdiv | BinOp::Udiv => std::mem::swap(lhs, rhs),
                    BinOp::And => *op = BinOp::Or,
                    _ => *op = BinOp::Xor,
                },
                ExprData::Cmp { op, .. } => *op = if *op == CmpOp::Slt { CmpOp::Sle } else { CmpOp::Slt },
                _ => return None,
            }
        }
    }
    tandem_core::verify::verify_function(&g).ok()?;
    Some(g)
}

/// Term identity never proves a wrong pass: every pass's output on generated functions,
/// changed at random a few times over; where the check proves a mutant, the interpreter
/// runs it and the pass's input on the generator's inputs and they agree (a change that
/// does nothing, such as taking out a dead statement, may be proved). Most mutants are
/// told apart by the interpreter; none of those is proved.
#[test]
fn term_identity_never_proves_a_mutant_the_interpreter_tells_apart() {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let (mut proved, mut told_apart, mut made) = (0, 0, 0);
    for seed in 0..80 {
        let g = crate::gen::generate(seed, &crate::gen::Profile::Default.config());
        let f = &g.case.module.functions[0];
        let inputs: Vec<crate::exec::interp::RunInput> = g.case.runs.iter().filter_map(|r| r.input(f).ok()).collect();
        let outcomes = |h: &Function| inputs.iter().map(|i| crate::exec::interp::run(h, i).ok()).collect::<Vec<_>>();
        for (pass, before, after) in generated_pairs_of(crate::gen::Profile::Default, seed) {
            for _ in 0..4 {
                let Some(m) = mutant(&after, &mut rng) else { continue };
                made += 1;
                let differs = outcomes(&before) != outcomes(&m);
                told_apart += differs as usize;
                if simulate::proved_by_identity(&before, &m, &opts()) {
                    proved += 1;
                    assert!(!differs, "seed {seed} {pass}: a mutant the interpreter tells apart is proved:\n{}", printed(&m));
                }
            }
        }
    }
    assert!(told_apart > 100 && proved > 0, "{made} mutants: {told_apart} told apart, {proved} proved");
    eprintln!("{made} mutants: {told_apart} told apart, {proved} proved");
}


/// The term-identity check's rules for a load's value at other widths and types (a mask,
/// shifts up and down, a conversion, the low bytes of a store at its address) agree with
/// the interpreter: of every two of many forms of the bytes at one address, those the
/// check proves equal return the same value on every heap tried, and each form is proved
/// equal to some other one (so the rules fire). Among the forms, pairs that differ in one
/// detail (a signed load against an unsigned one, a zero- against a sign-extension, a
/// mask one bit short) are told apart by the interpreter.
#[test]
fn term_identity_reads_a_value_at_every_width_as_the_interpreter_does() {
    use crate::exec::interp::RunInput;
    use crate::exec::outcome::Value;
    use rand::{Rng, SeedableRng};
    let a = "1048576";
    let i32_forms = [
        "load.i32(A)", "load.i32.u8(A)", "load.i32.s8(A)", "load.i32.u16(A)", "load.i32.s16(A)",
        "and(load.i32(A), 255)", "and(load.i32(A), 127)", "and(load.i32(A), 65535)", "and(load.i32.s8(A), 255)",
        "and(load.i32.s16(A), 255)", "and(load.i32.u16(A), 65535)", "and(load.i32(A), 65791)", "and(load.i32.u8(A), 127)",
        "add(load.i32.u8(A), 1)", "and(add(load.i32.u8(A), 1), 255)", "and(add(shl(load.i32.u8(A), 2), 3), 1023)", "add(shl(load.i32.u8(A), 2), 3)", "ashr(shl(load.i32(A), 24), 24)",
        "ashr(shl(load.i32(A), 16), 16)", "ashr(shl(load.i32(A), 24), 16)", "lshr(shl(load.i32(A), 24), 24)",
        "ashr(shl(load.i32.u16(A), 24), 24)", "trunc(load.i64(A))", "trunc(load.i64.u8(A))", "trunc(load.i64.s8(A))",
        "trunc(load.i64.s32(A))", "trunc(load.i64.u16(A))", "trunc(zext(load.i32.s8(A)))", "comma(store.32(A, %a), load.i32.u8(A))",
        "comma(store.32(A, %a), and(%a, 255))", "comma(store.32(A, %a), ashr(shl(%a, 24), 24))", "comma(store.32(A, %a), load.i32.s8(A))",
        "comma(store.16(A, %a), load.i32.s8(A))", "comma(store.16(A, %a), load.i32.u16(A))", "comma(store.16(A, %a), and(%a, 65535))",
        "comma(store.32(A, %a), and(%a, 65535))", "comma(store.8(A, %a), load.i32.u16(A))", "comma(store.32(A, %a), load.i32.u8(1048577))",
    ];
    let i64_forms = [
        "load.i64(A)", "load.i64.u8(A)", "load.i64.s8(A)", "load.i64.u16(A)", "load.i64.s16(A)", "load.i64.u32(A)", "load.i64.s32(A)",
        "zext(load.i32(A))", "sext(load.i32(A))", "zext(load.i32.u8(A))", "sext(load.i32.u8(A))", "zext(load.i32.s8(A))",
        "sext(load.i32.s8(A))", "sext(load.i32.s16(A))", "zext(load.i32.u16(A))", "and(load.i64(A), 4294967295:i64)",
        "and(load.i64(A), 255:i64)", "and(load.i64(A), 2147483647:i64)", "ashr(shl(load.i64(A), 32:i64), 32:i64)", "ashr(shl(load.i64(A), 56:i64), 56:i64)",
        "ashr(shl(load.i64(A), 48:i64), 48:i64)", "zext(trunc(load.i64(A)))", "sext(trunc(load.i64(A)))",
        "comma(store.32(A, %a), load.i64.u32(A))", "comma(store.32(A, %a), load.i64.s32(A))", "comma(store.32(A, %a), zext(%a))",
        "comma(store.32(A, %a), sext(%a))", "comma(store.32(A, %a), load.i64.s8(A))", "comma(store.32(A, %a), and(zext(%a), 255:i64))",
        "comma(store.32(A, %a), ashr(shl(zext(%a), 56:i64), 56:i64))", "comma(store.64(A, zext(%a)), load.i64.u16(A))",
    ];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let inputs: Vec<RunInput> = (0..64)
        .map(|k| {
            // Bytes at the edges of every width (all ones, the sign bits alone, all but
            // them), then random ones, some with the top bit set at each width.
            let edges = [0xff, 0x80, 0x7f, 0x00];
            let bytes: Vec<u8> = (0..8).map(|j| match k {
                0..4 => edges[k],
                _ if k % 4 == 0 && j % 2 == 1 => 0x80 | rng.gen::<u8>(),
                _ => rng.gen(),
            }).collect();
            let arg = if k % 3 == 0 { -(rng.gen_range(1..1000)) } else { rng.gen() };
            RunInput { args: vec![Value::I32(arg), Value::I32(0)], heap: vec![(1048576, bytes)], callframe: vec![], fuel: 1000 }
        })
        .collect();
    let (mut proved, mut apart) = (0, 0);
    for (ty, forms) in [("i32", &i32_forms[..]), ("i64", &i64_forms[..])] {
        let (p, d, alone) = identity_against_interpreter(forms, ty, ('A', a), &inputs);
        (proved, apart) = (proved + p, apart + d);
        assert!(alone.len() <= 12, "forms proved equal to no other: {alone:?}");
    }
    assert!(proved >= 60 && apart > 800, "{proved} pairs proved, {apart} told apart");
    eprintln!("{proved} pairs proved, {apart} told apart");
}

/// Every pair of the functions returning `forms` (of type `ty`, the placeholder `at.0`
/// replaced by `at.1`) that the term-identity check proves equal, checked to agree in the
/// interpreter on `inputs` (a panic naming the pair where they do not): how many pairs are
/// proved, how many the interpreter tells apart, and the forms proved equal to no other.
fn identity_against_interpreter<'a>(forms: &[&'a str], ty: &str, at: (char, &str), inputs: &[crate::exec::interp::RunInput]) -> (usize, usize, Vec<&'a str>) {
    let fs: Vec<Function> = forms.iter().map(|e| func(&format!("function %f(i32 %a, i32 %b) -> {ty} {{\nb0:\n    ret {}\n}}\n", e.replace(at.0, at.1)))).collect();
    let values: Vec<Vec<_>> = fs.iter().map(|f| inputs.iter().map(|i| crate::exec::interp::run(f, i).expect("a valid input").ok()).collect()).collect();
    let (mut proved, mut apart) = (0, 0);
    let mut paired = vec![false; fs.len()];
    for i in 0..fs.len() {
        for j in i + 1..fs.len() {
            let same = values[i] == values[j];
            apart += !same as usize;
            if simulate::proved_by_identity(&fs[i], &fs[j], &opts()) {
                assert!(same, "`{}` and `{}` are proved equal, and the interpreter tells them apart", forms[i], forms[j]);
                proved += 1;
                paired[i] = true;
                paired[j] = true;
            }
        }
    }
    let alone = forms.iter().zip(&paired).filter(|(_, &p)| !p).map(|(f, _)| *f).collect();
    (proved, apart, alone)
}

/// A load memopt hoists above an effect (a log) has no fault to move when every address
/// it may take is inside the heap, which the term-identity check reads off the address's
/// masks, shifts and sums: proved so. Where some address may fall outside (a mask one
/// byte too wide for the access, a base one byte low, a shift that may wrap), the hoisted
/// fault comes before the log, and the check does not prove it. (A trap first, on both
/// sides, so that the source's load is not met on every run, which would make the check
/// assume it inside: [`term_identity_assumes_the_source_valid_where_every_run_that_is_not_faults`].)
#[test]
fn term_identity_hoists_a_load_only_where_every_address_is_inside() {
    let hoisted = |load: &str| {
        let before = one_block(&format!("    trapif(eq(%b, 7), 3)\n    call @log(1, 2)\n    ret {load}\n"));
        let after = one_block(&format!("    trapif(eq(%b, 7), 3)\n    %x = {load}\n    call @log(1, 2)\n    ret %x\n"));
        simulate::proved_by_identity(&before, &after, &opts())
    };
    for inside in [
        "load.i32.u16(add(1048576, and(%a, 4094)))",
        "load.i32.u8(add(and(%a, 4095), 1048576))",
        "load.i32(add(1048576, shl(and(%a, 1023), 2)))",
        "load.i32.s8(add(add(shl(and(%a, 31), 2), and(%b, 127)), 1049600))",
        "trunc(load.i64(add(1048576, shl(lshr(%a, 23), 3))))",
        "load.i32.u16(add(1048576, urem(%a, 4095)))",
    ] {
        assert!(hoisted(inside), "{inside}");
    }
    for outside in [
        "load.i32.u16(add(1048576, and(%a, 4095)))",
        "load.i32(add(1048576, and(%a, 4094)))",
        "load.i32.u8(add(1048575, and(%a, 15)))",
        "load.i32(add(1048576, shl(and(%a, 1023), 3)))",
        "load.i32(add(1048576, shl(%a, 30)))",
        "load.i32.u8(add(1048576, lshr(%a, 19)))",
        "load.i32.u16(add(1048576, urem(%a, 4096)))",
        "load.i32.u8(add(add(and(%a, 4095), and(%b, 1)), 1048576))",
    ] {
        assert!(!hoisted(outside), "{outside}");
    }
}


/// A division whose divisor's every value is above 0 (and not -1, for the signed ones)
/// cannot trap, which the term-identity check reads off the divisor's range: a pass that
/// drops one whose value is unused is proved so. Where the divisor may be 0 (a mask
/// alone) or -1 (a sum that may wrap, for a signed division), the trap is an effect and
/// dropping it is not proved; a counterexample shows it.
#[test]
fn term_identity_drops_a_division_only_where_it_cannot_trap() {
    let dropped = |div: &&str| (one_block(&format!("    %x = {div}\n    call @log(1, 2)\n    ret 0\n")), one_block("    call @log(1, 2)\n    ret 0\n"));
    // The generator's guarded divisors too: a select that rules out the values that trap.
    let safe = [
        "srem(%a, add(and(%b, 15), 1))",
        "udiv(%a, add(and(%b, 255), 3))",
        "sdiv(%a, add(lshr(%b, 1), 1))",
        "udiv(%a, add(and(%b, -2), 1))",
        "sdiv(%a, select(ult(add(%b, 1), 2), 7, %b))",
        "udiv(%a, select(eq(%b, 0), 3, %b))",
        "srem(%a, select(eq(0, lshr(%b, 1)), -3, lshr(%b, 1)))",
        // Unsigned by a value with a bit set; signed by -1 where the dividend is not the
        // minimum.
        "urem(%a, or(%b, 1))",
        "udiv(%a, or(4, %b))",
        "srem(-1, or(not(%b), 1))",
        "sdiv(and(%a, 255), or(%b, 1))",
    ];
    // The last may be -1 (`%b` = -2), which traps a signed division of `MIN`.
    let trapping = [
        "srem(%a, and(%b, 15))",
        "udiv(%a, sub(and(%b, 15), 1))",
        "sdiv(%a, add(%b, 1))",
        "sdiv(%a, add(and(%b, -2), 1))",
        // -1 is not ruled out; the guard's own divisor is 0; the guard tests another value.
        "sdiv(%a, select(eq(%b, 0), 3, %b))",
        "udiv(%a, select(ult(add(%b, 1), 2), 0, %b))",
        "udiv(%a, select(eq(%b, 1), 3, %b))",
        "sdiv(%a, select(ult(add(%b, 2), 2), 7, %b))",
        "udiv(%a, select(eq(%a, 0), 3, %b))",
        // `or(%b, 1)` is -1 for `%b` = -1, and the dividend may be the minimum.
        "srem(%a, or(%b, 1))",
        "sdiv(or(%a, -2147483648), or(%b, 1))",
        "srem(-2147483648, or(%b, 1))",
        "urem(%a, or(%b, 0))",
    ];
    identity_proves_only("dce", dropped, &safe, &trapping);
}

/// The pairs `pair` makes of `proved` and of `refuted`: the term-identity check proves
/// each of the first and none of the second, each of which the solver refutes (as pass
/// `pass`) with a counterexample the interpreter replays.
fn identity_proves_only<S: std::fmt::Debug>(pass: &str, pair: impl Fn(&S) -> (Function, Function), proved: &[S], refuted: &[S]) {
    for x in proved {
        let (before, after) = pair(x);
        assert!(simulate::proved_by_identity(&before, &after, &opts()), "{x:?}");
    }
    for x in refuted {
        let (before, after) = pair(x);
        assert!(!simulate::proved_by_identity(&before, &after, &opts()), "{x:?}");
        counterexample(validate(&before, &after, pass, &opts()));
    }
}

/// The term-identity check's folds ([`super::identity`]): an operation whose numeral
/// decides its value alone (`and(x, 0)`, `mul(x, 1)`, a shift by a count that masks to
/// 0), twice negated or complemented, both operands one term; a narrow store's value in
/// the form of its low bits alone (a numeral's low bits, a mask, shifts up and down, a
/// conversion); an address as a base plus the sum of its constants, so that a load reads
/// past a store at `(B + 1) + 4`. Every pair of forms the check proves equal agrees in
/// the interpreter on 64 inputs (edge values and random ones), and the folds fire: most
/// forms are proved equal to another.
#[test]
fn term_identity_folds_and_stores_as_the_interpreter_does() {
    use crate::exec::interp::RunInput;
    use crate::exec::outcome::Value;
    use rand::{Rng, SeedableRng};
    let b = "add(1048576, and(%b, 8))";
    let forms = [
        "%a", "add(%a, 0)", "or(0, %a)", "xor(%a, 0)", "sub(%a, 0)", "mul(%a, 1)", "mul(1, %a)", "and(%a, -1)", "and(%a, %a)",
        "or(%a, %a)", "shl(%a, 32)", "lshr(%a, 0)", "ashr(%a, 64)", "not(not(%a))", "neg(neg(%a))", "udiv(%a, 1)", "sdiv(%a, 1)",
        "shl(%a, 33)", "shl(%a, 1)", "lshr(%a, 32)", "neg(not(%a))", "not(neg(%a))", "sub(%a, 1)", "udiv(%a, 2)", "sub(0, %a)", "neg(%a)",
        // An operand of which only the low bits are read.
        "shl(%a, 24)", "shl(and(%a, 255), 24)", "shl(and(%a, 127), 24)", "and(%a, 255)", "and(and(%a, 65535), 255)",
        "and(and(%a, 65279), 255)", "and(and(%a, 32767), 65279)", "and(%a, 65279)", "ashr(shl(%a, 24), 24)", "ashr(shl(and(%a, 65535), 24), 24)", "ashr(shl(lshr(shl(%a, 8), 8), 24), 24)",
        "0", "and(%a, 0)", "mul(0, %a)", "xor(%a, %a)", "sub(%a, %a)", "-1", "or(%a, -1)", "or(-1, %b)", "and(%a, 1)", "or(%a, 1)",
        // A narrow store's bytes; a load past a store at another offset of one base.
        "comma(store.16(B, %a), load.i32(B))", "comma(store.16(B, and(%a, 65535)), load.i32(B))",
        "comma(store.16(B, ashr(shl(%a, 16), 16)), load.i32(B))", "comma(store.16(B, lshr(shl(%a, 8), 8)), load.i32(B))",
        "comma(store.16(B, trunc(zext(%a))), load.i32(B))", "comma(store.16(B, trunc(sext(%a))), load.i32(B))",
        "comma(store.16(B, and(%a, 255)), load.i32(B))", "comma(store.16(B, lshr(shl(%a, 17), 17)), load.i32(B))",
        "comma(store.16(B, ashr(shl(%a, 17), 17)), load.i32(B))",
        "comma(store.16(B, -950015470), load.i32(B))", "comma(store.16(B, 59922), load.i32(B))", "comma(store.16(B, 59921), load.i32(B))",
        "comma(store.8(B, 511), load.i32(B))", "comma(store.8(B, -1), load.i32(B))", "comma(store.8(B, 255), load.i32(B))",
        // The load after the store and before it: one where the store's byte is apart.
        "comma(store.8(add(add(B, 1), 4), %a), load.i32.u16(add(B, 3)))", "add(load.i32.u16(add(B, 3)), comma(store.8(add(add(B, 1), 4), %a), 0))",
        "comma(store.8(add(add(B, 1), 3), %a), load.i32.u16(add(B, 3)))", "add(load.i32.u16(add(B, 3)), comma(store.8(add(add(B, 1), 3), %a), 0))",
        "comma(store.8(add(2, add(B, 3)), %a), load.i32.u16(add(B, 3)))", "add(load.i32.u16(add(B, 3)), comma(store.8(add(2, add(B, 3)), %a), 0))",
        "comma(store.8(add(add(B, 1), 1), %a), load.i32.u16(add(B, 3)))", "add(load.i32.u16(add(B, 3)), comma(store.8(add(add(B, 1), 1), %a), 0))",
    ];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
    let edges = [0, 1, -1, i32::MIN, i32::MAX, 255, -256, 65535];
    let inputs: Vec<RunInput> = (0..64)
        .map(|k| {
            let a = if k < edges.len() { edges[k] } else { rng.gen() };
            let bytes: Vec<u8> = (0..24).map(|_| rng.gen()).collect();
            RunInput { args: vec![Value::I32(a), Value::I32(rng.gen())], heap: vec![(1048576, bytes)], callframe: vec![], fuel: 1000 }
        })
        .collect();
    let (proved, apart, alone) = identity_against_interpreter(&forms, "i32", ('B', b), &inputs);
    eprintln!("{proved} pairs proved, {apart} told apart; alone: {alone:?}");
    assert!(alone.len() <= 19 && proved >= 190 && apart > 2000, "{proved} pairs proved, {apart} told apart; alone: {alone:?}");
}

/// A heap access whose index a check above it bounds cannot fault on the path past the
/// check (`trapif(ugt(i, 15), 97)` then a load at the heap's last 16 bytes plus `i`, the
/// generator's checked index): the term-identity check proves a load added there (one a
/// pass would hoist or speculate). Where the check leaves one index too many, bounds
/// another value, or comes after the load, the added load may fault where the source
/// runs on (an invalid run of the target from a valid one of the source): the check does
/// not prove it, and the solver's answer replays a counterexample.
#[test]
fn term_identity_bounds_an_index_by_the_check_above_it() {
    let added = |body: &String| {
        let before = one_block(&format!("{}    call @log(1, 2)\n    ret 0\n", body.lines().filter(|l| !l.contains("%x =")).map(|l| format!("{l}\n")).collect::<String>()));
        (before, one_block(&format!("{body}    call @log(1, 2)\n    ret 0\n")))
    };
    let load = "    %x = load.i32.u8(add(1052656, and(%b, 31)))\n";
    let safe = [
        format!("    trapif(ugt(and(%b, 31), 15), 97)\n{load}"),
        format!("    trapif(uge(and(%b, 31), 16), 97)\n{load}"),
        format!("    trapif(ult(15, and(%b, 31)), 97)\n{load}"),
        format!("    trapif(ule(16, and(%b, 31)), 97)\n{load}"),
        format!("    trapif(uge(and(%b, 31), 16), 97)\n    trapif(eq(%a, 3), 5)\n{load}"),
        "    trapif(ugt(and(%b, 31), 14), 97)\n    %x = load.i32.u16(add(1052656, and(%b, 31)))\n".to_string(),
    ];
    let faulting = [
        format!("    trapif(ugt(and(%b, 31), 16), 97)\n{load}"),
        format!("    trapif(ugt(and(%a, 31), 15), 97)\n{load}"),
        format!("    trapif(ult(and(%b, 31), 16), 97)\n{load}"),
        format!("{load}    trapif(ugt(and(%b, 31), 15), 97)\n"),
        "    trapif(ugt(and(%b, 31), 15), 97)\n    %x = load.i32.u16(add(1052656, and(%b, 31)))\n".to_string(),
    ];
    identity_proves_only("dce", added, &safe, &faulting);
}

/// A store of the bytes a load read before other stores is no store when every store
/// between is at bytes apart from them (memopt removes it, the term-identity check
/// proves that); where a store between writes one of those bytes, the bytes stored back
/// are no longer the heap's, and the check neither proves it nor does the solver.
#[test]
fn term_identity_drops_a_store_of_bytes_loaded_before_stores_apart_from_them() {
    let removed = |between: &&str| {
        let before = one_block(&format!("    %x = load.i32(1050000)\n{between}    store.32(1050000, %x)\n    ret 0\n"));
        (before, one_block(&format!("    %x = load.i32(1050000)\n{between}    ret 0\n")))
    };
    let apart = ["    store.8(1048928, %a)\n", "    store.32(1050004, %a)\n    store.16(1049998, %b)\n", "    store.8(add(add(1050000, and(%b, 0)), 4), %a)\n"];
    let overlapping = ["    store.8(1050003, %a)\n", "    store.8(1048928, %a)\n    store.16(1049999, %b)\n", "    store.8(add(1050000, and(%b, 3)), %a)\n"];
    identity_proves_only("memopt", removed, &apart, &overlapping);
}

/// A load that may fault, removed (`dce`'s dead loads): the source is invalid where it
/// faults, so the target may do anything there, and the term-identity check assumes the
/// address inside the heap where the source makes the access before any exit (on both
/// sides: an access the target still makes there cannot fault either). Where the source
/// makes it after an exit, nothing is assumed: a target that loads before the source's
/// trap is invalid where the source traps, which the check must not prove and the solver
/// shows; so is a wider access at the address.
#[test]
fn term_identity_assumes_the_source_valid_where_every_run_that_is_not_faults() {
    let a = "add(1052656, and(%b, 31))";
    let pair = |(before, after): &(String, String)| (one_block(&format!("{before}    ret 0\n")), one_block(&format!("{after}    ret 0\n")));
    let removed = [
        (format!("    %x = load.i32({a})\n    call @log(1, 2)\n"), "    call @log(1, 2)\n".to_string()),
        (format!("    %x = load.i32.u8(%a)\n    %x = load.i32({a})\n    call @log(%a, 2)\n"), "    call @log(%a, 2)\n".to_string()),
        (format!("    %x = load.i32({a})\n    call @log(1, 2)\n    store.32({a}, %a)\n"), format!("    call @log(1, 2)\n    store.32({a}, %a)\n")),
    ];
    let faulting = [
        (format!("    trapif(eq(%a, 3), 5)\n    %x = load.i32({a})\n    call @log(%x, 2)\n"), format!("    %x = load.i32({a})\n    trapif(eq(%a, 3), 5)\n    call @log(%x, 2)\n")),
        (format!("    %x = load.i32.u8({a})\n    call @log(1, 2)\n"), format!("    %x = load.i32({a})\n    call @log(1, 2)\n")),
        (format!("    %x = load.i32({a})\n    call @log(1, 2)\n"), format!("    call @log(1, 2)\n    %x = load.i32(add({a}, 1))\n")),
    ];
    identity_proves_only("dce", pair, &removed, &faulting);
}

/// A class of definitions and loads alone (memopt's `trunc(%p0)` in the target, the
/// source's `load.i32(A)` after `store.64(A, %p0)` in another block) takes the value of
/// one of them in the term-identity check, so that a narrower load of those bytes (the
/// source's `load.i32.s8(A)`) and the target's shifts of the local (`ashr(shl(trunc(%p0),
/// 24), 24)`) read the same bytes: loops seed 20151's memopt is proved without Z3, and
/// memory seed 1767's, whose relation is proved only with the classes' own symbols, is
/// still proved (the check tries both). The solver proves both too. A twin that logs the
/// low half-word where the source logs the low byte is neither proved by identity nor by
/// the solver, which replays a counterexample.
#[test]
fn term_identity_gives_a_class_of_definitions_one_of_their_values() {
    use crate::gen::Profile;
    assert_memopt_proved_by_identity_and_in_z3(&[(Profile::Loops, 20151), (Profile::Memory, 1767)]);
    let (_, before, after) = generated_pairs_of(Profile::Loops, 20151).into_iter().find(|(p, ..)| p == "memopt").expect("memopt runs");
    let mut module = crate::gen::generate(20151, &Profile::Loops.config()).case.module;
    module.functions[0] = after;
    let mut text = String::new();
    tandem_core::text::printer::write_module(&mut text, &module).expect("printing to a string");
    let logged = "call @log(ule(sext(ashr(shl(trunc(%p0), 24), 24))";
    assert_eq!(text.matches(logged).count(), 1, "{text}");
    let wrong = func(&text.replace(logged, "call @log(ule(sext(ashr(shl(trunc(%p0), 16), 16))"));
    assert!(!simulate::proved_by_identity(&before, &wrong, &opts()));
    counterexample(validate(&before, &wrong, "memopt", &Options { bound: 2, ..Options::default() }));
}

/// Where the relation with each class's first definition is not proved by term identity,
/// each class's last one is tried: a class of memopt's `%val` and the source's load of
/// the stored bytes then takes the load's value. Default seed 1508's memopt and loops seed
/// 1073's are proved so (and by the solver's check alone).
#[test]
fn term_identity_tries_each_class_s_last_definition_too() {
    assert_memopt_proved_by_identity_and_in_z3(&[(crate::gen::Profile::Default, 1508), (crate::gen::Profile::Loops, 1073)]);
}

/// Each seed's memopt pair is proved by term identity, and by the solver's check alone.
fn assert_memopt_proved_by_identity_and_in_z3(cases: &[(crate::gen::Profile, u64)]) {
    for &(profile, seed) in cases {
        let (_, before, after) = generated_pairs_of(profile, seed).into_iter().find(|(p, ..)| p == "memopt").expect("memopt runs");
        assert!(simulate::proved_by_identity(&before, &after, &opts()), "{profile:?} seed {seed}");
        assert_eq!(proved_in_z3(&before, &after), Ok(true), "{profile:?} seed {seed}");
    }
}

/// The simulation check's answer in Z3 alone, without its tries by term identity, with
/// `tandem verify`'s budget at bound 2.
fn proved_in_z3(before: &Function, after: &Function) -> Result<bool, super::Unknown> {
    let o = Options { bound: 2, rlimit: 60_000_000, ..Options::default() };
    in_context(|| simulate::check_simulation_in_z3(before, after, &o, &mut Budget::new(&o)))
}
