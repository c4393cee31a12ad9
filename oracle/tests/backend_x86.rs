//! End-to-end tests of the x86 backend: every corpus case, and hand-written programs that
//! exercise every operator at both widths (with register and immediate operands, in
//! value and branch context), loads and stores of every width, callframe variables,
//! helpers, checks, switches, loops and register pressure, and programs of the project's
//! generator (`tandem_oracle::gen`), are compiled, run in the emulator and compared with
//! the reference interpreter (a different component, so the expectations are independent
//! of the backend).

use std::path::PathBuf;
use tandem_core::backend::compile;
use tandem_core::ir::{Function, Type, HEAP_BASE};
use tandem_oracle::judge::diff::{check, Verdict};
use tandem_oracle::exec::emu::Emulator;
use tandem_oracle::gen::{self, Config, Profile};
use tandem_oracle::exec::interp::{RunInput, DEFAULT_FUEL};
use tandem_oracle::exec::outcome::Value;
use tandem_oracle::campaign::replay;

mod machine;
use machine::{func, input};

/// Compiles `src` and checks every input; returns how many runs were compared.
fn agree(emu: &mut Emulator, src: &str, inputs: &[RunInput]) -> usize {
    let f = func(src);
    agree_function(emu, &f, inputs, |inp| {
        // A replayable case file: the source and the failing run.
        let args: Vec<String> = inp.args.iter().map(|a| a.to_string()).collect();
        let mut case = format!("{src}; run: %f({})\n", args.join(", "));
        for (base, bytes) in &inp.heap {
            for (i, row) in bytes.chunks(16).enumerate() {
                let hex: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
                case += &format!("; heap: {:#010x}: {}\n", base + 16 * i as u32, hex.join(" "));
            }
        }
        case
    })
}

/// Compiles `f` and checks every input; returns how many runs were compared. On a
/// disagreement, `case` gives the text of a replayable case file for the failing input,
/// which is written to the temporary directory before the test fails.
fn agree_function(emu: &mut Emulator, f: &Function, inputs: &[RunInput], case: impl Fn(&RunInput) -> String) -> usize {
    let code = compile(f).unwrap_or_else(|e| panic!("{e}\n{f}"));
    let mut compared = 0;
    for inp in inputs {
        let v = check(f, inp, &code, emu).unwrap();
        if v.is_failure() {
            let out = std::env::temp_dir().join("tandem-backend-failure.tir");
            let _ = std::fs::write(&out, case(inp));
            eprintln!("replayable case written to {}", out.display());
            let staged = tandem_core::backend::compile_staged(f).unwrap();
            let lir = &staged.lir.last().unwrap().1;
            panic!("{f}\ninput {:?}\n{v}\n{lir}\n{}", inp.args, tandem_core::backend::disassemble(&code));
        }
        if !matches!(v, Verdict::Skipped(_)) {
            compared += 1;
        }
    }
    compared
}

const EDGE32: [i64; 12] = [0, 1, -1, 2, 7, 31, 32, 33, -5, i32::MIN as i64, i32::MAX as i64, 0x1234_5678];
const EDGE64: [i64; 14] = [
    0,
    1,
    -1,
    3,
    31,
    32,
    33,
    63,
    64,
    -7,
    i64::MIN,
    i64::MAX,
    0x1_0000_0000,
    0x7654_3210_FEDC_BA98,
];

fn edges(ty: Type) -> Vec<i64> {
    match ty {
        Type::I32 => EDGE32.to_vec(),
        Type::I64 => EDGE64.to_vec(),
    }
}

fn lit(ty: Type, v: i64) -> String {
    match ty {
        Type::I32 => format!("{v}"),
        Type::I64 => format!("{v}:i64"),
    }
}

#[test]
fn corpus_agrees_with_the_interpreter() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let files = replay::collect_files(&[root]).unwrap();
    assert!(!files.is_empty());
    let mut emu = Emulator::new().unwrap();
    let mut compared = 0;
    for path in files {
        let case = replay::load(&path).unwrap_or_else(|e| panic!("{e}"));
        for run in &case.runs {
            let f = case.module.function(&run.entry).unwrap();
            // A function written in SSA form reaches the backend through `ssa-destroy`.
            let g = tandem_oracle::judge::check::backend_input(f).unwrap().into_function();
            let code = compile(&g).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let inp = run.input(f).unwrap();
            let v = check(&g, &inp, &code, &mut emu).unwrap();
            assert!(!v.is_failure(), "{}:{}: {v}\n{}", path.display(), run.line, tandem_core::backend::disassemble(&code));
            compared += 1;
        }
    }
    assert!(compared > 0);
}

#[test]
fn every_binary_operator_at_both_widths() {
    let mut emu = Emulator::new().unwrap();
    let mut compared = 0;
    for ty in [Type::I32, Type::I64] {
        let vals = edges(ty);
        for op in tandem_core::ir::BinOp::ALL {
            let name = op.name();
            // Both operands in registers.
            let src = format!("function %f({ty} %a, {ty} %b) -> {ty} {{\nb0:\n    ret {name}(%a, %b)\n}}\n");
            let mut inputs = vec![];
            for &a in &vals {
                for &b in &vals {
                    inputs.push(input(vec![Value::new(ty, a), Value::new(ty, b)]));
                }
            }
            compared += agree(&mut emu, &src, &inputs);
            // A constant right operand (immediates, constant shift counts) and a
            // constant left one.
            for &k in &vals {
                let ins: Vec<RunInput> = vals.iter().map(|&a| input(vec![Value::new(ty, a)])).collect();
                let src = format!("function %f({ty} %a) -> {ty} {{\nb0:\n    ret {name}(%a, {})\n}}\n", lit(ty, k));
                compared += agree(&mut emu, &src, &ins);
                let src = format!("function %f({ty} %a) -> {ty} {{\nb0:\n    ret {name}({}, %a)\n}}\n", lit(ty, k));
                compared += agree(&mut emu, &src, &ins);
            }
        }
    }
    // Divisions by zero and MIN / -1 trap; the rest return.
    assert!(compared > 5000, "{compared}");
}

#[test]
fn compares_unary_conversions_and_select() {
    let mut emu = Emulator::new().unwrap();
    for ty in [Type::I32, Type::I64] {
        let vals = edges(ty);
        let pairs: Vec<RunInput> = vals
            .iter()
            .flat_map(|&a| vals.iter().map(move |&b| input(vec![Value::new(ty, a), Value::new(ty, b)])))
            .collect();
        for op in tandem_core::ir::CmpOp::ALL {
            let n = op.name();
            let value = format!("function %f({ty} %a, {ty} %b) -> i32 {{\nb0:\n    ret {n}(%a, %b)\n}}\n");
            agree(&mut emu, &value, &pairs);
            let branch = format!(
                "function %f({ty} %a, {ty} %b) -> i32 {{\nb0:\n    br {n}(%a, %b), b1, b2\nb1:\n    ret 10\nb2:\n    ret 20\n}}\n"
            );
            agree(&mut emu, &branch, &pairs);
            let imm = format!("function %f({ty} %a) -> i32 {{\nb0:\n    ret {n}(%a, {})\n}}\n", lit(ty, 7));
            let singles: Vec<RunInput> = vals.iter().map(|&a| input(vec![Value::new(ty, a)])).collect();
            agree(&mut emu, &imm, &singles);
        }
        let singles: Vec<RunInput> = vals.iter().map(|&a| input(vec![Value::new(ty, a)])).collect();
        for u in ["neg", "not"] {
            agree(&mut emu, &format!("function %f({ty} %a) -> {ty} {{\nb0:\n    ret {u}(%a)\n}}\n"), &singles);
        }
        let sel = format!("function %f(i32 %c, {ty} %a, {ty} %b) -> {ty} {{\nb0:\n    ret select(%c, %a, %b)\n}}\n");
        let mut ins = vec![];
        for c in [0, 1, -1, 2] {
            for &a in &vals[..6] {
                ins.push(input(vec![Value::I32(c), Value::new(ty, a), Value::new(ty, !a)]));
            }
        }
        agree(&mut emu, &sel, &ins);
    }
    let i32s: Vec<RunInput> = EDGE32.iter().map(|&a| input(vec![Value::I32(a as i32)])).collect();
    let i64s: Vec<RunInput> = EDGE64.iter().map(|&a| input(vec![Value::I64(a)])).collect();
    agree(&mut emu, "function %f(i32 %a) -> i64 {\nb0:\n    ret sext(%a)\n}\n", &i32s);
    agree(&mut emu, "function %f(i32 %a) -> i64 {\nb0:\n    ret zext(%a)\n}\n", &i32s);
    agree(&mut emu, "function %f(i64 %a) -> i32 {\nb0:\n    ret trunc(%a)\n}\n", &i64s);
    agree(&mut emu, "function %f(i64 %a) -> i64 {\nb0:\n    ret sext(trunc(lshr(%a, 7:i64)))\n}\n", &i64s);
}

#[test]
fn loads_and_stores_of_every_width() {
    let mut emu = Emulator::new().unwrap();
    let heap: Vec<u8> = (0..64u32).map(|i| (i * 37 + 0x85) as u8).collect();
    let mut ins = vec![];
    for off in [0i32, 3, 8, 17] {
        for i in [0i32, 1, 5] {
            ins.push(RunInput {
                args: vec![Value::I32(HEAP_BASE as i32 + off), Value::I32(i)],
                heap: vec![(HEAP_BASE, heap.clone())],
                callframe: vec![],
                fuel: DEFAULT_FUEL,
            });
        }
    }
    for ty in [Type::I32, Type::I64] {
        for w in [8, 16, 32, 64] {
            if w > ty.bits() {
                continue;
            }
            for s in ["s", "u"] {
                let load = if w == ty.bits() { format!("load.{ty}") } else { format!("load.{ty}.{s}{w}") };
                // Address modes: base, base + disp, base + index * scale + disp.
                let src = format!(
                    "function %f(i32 %p, i32 %i) -> {ty} {{\n    local {ty} %x\nb0:\n    %x = {load}(%p)\n    \
                     store.{w}(add(%p, 40), %x)\n    store.{w}(add(add(%p, shl(%i, 2)), 20), {load}(add(%p, 1)))\n    \
                     ret add(%x, {load}(add(%p, shl(%i, 3))))\n}}\n"
                );
                agree(&mut emu, &src, &ins);
            }
        }
    }
    // Constant addresses and constant stored values.
    let src = "function %f() -> i64 {\nb0:\n    store.32(1048580, 305419896)\n    store.8(1048577, -1)\n    \
               store.16(1048590, 4660)\n    store.64(1048600, -2:i64)\n    ret add(load.i64(1048576), load.i64.s16(1048590))\n}\n";
    agree(&mut emu, src, &[input(vec![])]);
}

#[test]
fn callframe_helpers_checks_and_switches() {
    let mut emu = Emulator::new().unwrap();
    let helpers = "helper @log(i32, i32) -> void effects(observable)\n\
                   helper @log64(i64) -> void effects(observable)\n\
                   helper @cf_trace() -> void effects(reads_callframe, observable)\n\
                   helper @cf_set(i32, i32) -> void effects(writes_callframe)\n\
                   helper @heap_rmw(i32, i32) -> i32 effects(reads_heap, writes_heap)\n\
                   helper @mix(i32, i32) -> i32 pure\n\
                   helper @mix64(i64, i64) -> i64 pure\n";
    let src = format!(
        "{helpers}function %f(i32 %a, i64 %b) -> i64 {{\n    callframe i32 @x\n    callframe i64 @y\nb0:\n    \
         cfwrite(@x, add(cfread(@x), %a))\n    cfwrite(@y, mul(cfread(@y), %b))\n    call @cf_trace()\n    \
         call @cf_set(%a, 77)\n    call @log(call @mix(%a, cfread(@x)), call @heap_rmw(%a, 5))\n    \
         call @log64(call @mix64(%b, cfread(@y)))\n    call @cf_trace()\n    ret add(cfread(@y), sext(cfread(@x)))\n}}\n"
    );
    let ins: Vec<RunInput> = [(0, 0i64), (1, -1), (-7, 1 << 40), (12345, 99)]
        .into_iter()
        .map(|(a, b)| RunInput {
            args: vec![Value::I32(a), Value::I64(b)],
            heap: vec![],
            callframe: vec![(tandem_core::ir::CfVar::from_u32(1), Value::I64(3))],
            fuel: DEFAULT_FUEL,
        })
        .collect();
    agree(&mut emu, &src, &ins);
    // A store before a failing check has happened (precise traps), both check forms.
    let src = "function %f(i32 %a) -> i32 {\nb0:\n    store.32(1048576, %a)\n    trapif(slt(%a, 0), 7)\n    \
               store.32(1048580, %a)\n    trapif(and(%a, 1), 9)\n    store.32(1048584, sdiv(100, %a))\n    ret %a\n}\n";
    let ins: Vec<RunInput> = [0, 1, 2, -3, 4].into_iter().map(|a| input(vec![Value::I32(a)])).collect();
    agree(&mut emu, src, &ins);
    for ty in [Type::I32, Type::I64] {
        let src = format!(
            "function %f({ty} %v) -> i32 {{\nb0:\n    switch %v, default b3, [0: b1, 5: b2, {}: b1, -1: b2]\n\
             b1:\n    ret 1\nb2:\n    ret 2\nb3:\n    ret 3\n}}\n",
            if ty == Type::I64 { 1i64 << 32 } else { 77 }
        );
        let ins: Vec<RunInput> = [0i64, 5, 77, 1 << 32, -1, 6, (1 << 32) + 5]
            .into_iter()
            .map(|v| input(vec![Value::new(ty, v)]))
            .collect();
        agree(&mut emu, &src, &ins);
    }
}

#[test]
fn loops_commas_and_register_pressure() {
    let mut emu = Emulator::new().unwrap();
    let helpers = "helper @mix(i32, i32) -> i32 pure\nhelper @mix64(i64, i64) -> i64 pure\n";
    // A loop whose locals the global allocator keeps in callee-saved registers.
    let src = "function %f(i32 %n) -> i64 {\n    local i32 %i\n    local i64 %s\nb0:\n    jump b1\nb1:\n    \
               br slt(%i, %n), b2, b3\nb2:\n    %s = add(mul(%s, 3:i64), sext(%i))\n    %i = add(%i, 1)\n    jump b1\n\
               b3:\n    ret %s\n}\n";
    let ins: Vec<RunInput> = [0, 1, 5, 40].into_iter().map(|n| input(vec![Value::I32(n)])).collect();
    agree(&mut emu, src, &ins);
    // Embedded assignments: comma nodes whose effects happen mid-tree.
    let src = "function %f(i32 %x) -> i32 {\n    local i32 %y\nb0:\n    \
               ret add(%x, comma((%x = mul(%x, 3)), sub(%x, comma((%y = %x), add(%y, %x)))))\n}\n";
    let ins: Vec<RunInput> = [0, 1, -9, 1000].into_iter().map(|n| input(vec![Value::I32(n)])).collect();
    agree(&mut emu, src, &ins);
    // Many values live across helper calls, in both widths.
    let src = format!(
        "{helpers}function %f(i32 %a, i32 %b, i32 %c, i32 %d, i32 %e) -> i32 {{\nb0:\n    \
         ret add(mul(%a, %b), sub(xor(%c, shl(%d, %e)), add(call @mix(or(%a, %c), udiv(%b, or(%d, 1))), \
         srem(ashr(%e, %a), select(%b, %b, 1)))))\n}}\n"
    );
    let ins: Vec<RunInput> = [[1, 2, 3, 4, 5], [-1, 7, -8, 9, 33], [i32::MIN, -1, 0, 31, 2]]
        .into_iter()
        .map(|v| input(v.iter().map(|&x| Value::I32(x)).collect()))
        .collect();
    agree(&mut emu, &src, &ins);
    let src = format!(
        "{helpers}function %f(i64 %a, i64 %b, i64 %c) -> i64 {{\nb0:\n    \
         ret add(mul(%a, %b), sub(xor(%c, shl(%a, %b)), add(call @mix64(or(%a, %c), lshr(%b, %c)), \
         srem(ashr(%c, %a), select(slt(%b, %c), %b, 1:i64)))))\n}}\n"
    );
    let ins: Vec<RunInput> = [[1i64, 2, 3], [-1, 70, -8], [i64::MIN, -1, 40], [0x1234_5678_9abc, 33, 63]]
        .into_iter()
        .map(|v| input(v.iter().map(|&x| Value::I64(x)).collect()))
        .collect();
    agree(&mut emu, &src, &ins);
}

/// The generator configuration of the random programs: small functions (few blocks, so
/// that 300 of them check in about a second), with the default profile's number of
/// parameters and variables and deeper expression trees, so that registers run short
/// and values spill.
fn config() -> Config {
    Config { max_params: 4, max_vars: 6, max_expr_depth: 4, max_region_items: 4, ..Profile::Small.config() }
}

/// The generated case of `seed` under [`config`]: its function and the inputs of its runs.
fn generated(seed: u64) -> (Function, Vec<RunInput>) {
    let g = gen::generate(seed, &config());
    let f = g.case.module.functions[0].clone();
    let inputs = g.case.runs.iter().map(|r| r.input(&f).unwrap_or_else(|e| panic!("seed {seed}: {e}"))).collect();
    (f, inputs)
}

#[test]
fn random_programs_agree_with_the_interpreter() {
    let mut emu = Emulator::new().unwrap();
    let mut compared = 0;
    let mut totals = [0usize; 7];
    // `TANDEM_RANDOM_PROGRAMS=N` runs more programs than the default.
    let n: u64 = std::env::var("TANDEM_RANDOM_PROGRAMS").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    for seed in 0..n {
        let (f, ins) = generated(seed);
        compared += agree_function(&mut emu, &f, &ins, |_| {
            gen::render_with(seed, &config(), &format!("backend_x86 random_programs_agree_with_the_interpreter, seed {seed}"))
        });
        let st = tandem_core::backend::compile_staged(&f).unwrap().stats;
        totals[0] += st.rationalize.commas;
        totals[1] += st.decompose.decomposed;
        totals[2] += st.decompose.helper_calls;
        totals[3] += st.lower.address_modes + st.lower.memory_operands + st.lower.fused_compares;
        totals[4] += st.regalloc.spills;
        totals[5] += st.regalloc.globals;
        totals[6] += st.regalloc.reused;
    }
    println!("{compared} runs compared; commas, decomposed, helper calls, contained operands, spills, globals, reused: {totals:?}");
    assert!(compared > 600, "{compared}");
    // The programs exercise every pass: commas, 64-bit pairs and helpers, contained
    // operands, spills, global registers and freeable-register reuse all occur.
    assert!(totals.iter().all(|&t| t > 0), "{totals:?}");
}

/// Debugging aid: `TANDEM_CASE=file.tir cargo test -p tandem-oracle --test backend_x86
/// case_file -- --ignored --nocapture` checks every run of one case file against the x86
/// code and prints the verdicts.
#[test]
#[ignore]
fn case_file() {
    let path = PathBuf::from(std::env::var("TANDEM_CASE").expect("TANDEM_CASE names a case file"));
    let case = replay::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut emu = Emulator::new().unwrap();
    for run in &case.runs {
        let f = case.module.function(&run.entry).unwrap();
        let code = compile(f).unwrap();
        let v = check(f, &run.input(f).unwrap(), &code, &mut emu).unwrap();
        println!("{}: {v}", run.line);
    }
}

/// Throughput of the backend and the emulator on the generated programs (debug-profile
/// figures; run with `cargo test --release -p tandem-oracle --test backend_x86 throughput
/// -- --ignored --nocapture` for release figures).
#[test]
#[ignore]
fn throughput() {
    use std::time::Instant;
    let cases: Vec<(Function, Vec<RunInput>)> = (0..500).map(generated).collect();
    let funcs: Vec<&Function> = cases.iter().map(|(f, _)| f).collect();
    let t = Instant::now();
    let codes: Vec<_> = funcs.iter().map(|f| compile(f).unwrap()).collect();
    let compile_s = t.elapsed().as_secs_f64();
    let mut emu = Emulator::new().unwrap();
    let t = Instant::now();
    for ((f, ins), c) in cases.iter().zip(&codes) {
        let _ = emu.run(c, f, &ins[0]).unwrap();
    }
    let emu_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for (f, ins) in &cases {
        let c = compile(f).unwrap();
        let _ = check(f, &ins[0], &c, &mut emu).unwrap();
    }
    let e2e_s = t.elapsed().as_secs_f64();
    let n = funcs.len() as f64;
    let bytes: usize = codes.iter().map(|c| c.bytes.len()).sum();
    println!(
        "{} programs, {:.0} code bytes each: compile {:.0}/s, emulate {:.0}/s, compile+interpret+emulate+compare {:.0}/s",
        funcs.len(),
        bytes as f64 / n,
        n / compile_s,
        n / emu_s,
        n / e2e_s
    );
}
