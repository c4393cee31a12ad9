//! The scaling check (`tandem bench --scaling`, issue 8 "Blow-ups"): how the time of every
//! stage grows with the size of the function. Each shape is written as text at sizes
//! 100, 1,000 and 10,000 and goes through every stage one at a time — parse, verify, each
//! IR pass of the default pipeline, each backend pass, the reference interpreter and the
//! emulator — and each stage's time is reported with its growth exponent between the two
//! largest sizes (`log10(t(10,000) / t(1,000))`: 1 is linear, 2 quadratic). When a stage
//! already takes more than [`SLOW_SECONDS`] at one size, the larger sizes are skipped and
//! the growth is that between the two sizes measured.
//!
//! The shapes stress what a pass walks: one block with many locals in a chain of
//! single-use trees (the tree mover's indirect moves), many locals live at once (register
//! pressure and spills), many blocks in diamonds (dominators, frontiers, phis), and a loop
//! whose locals rotate every round (many phis and parallel copies).

use crate::exec::emu::{EmuError, Emulator};
use crate::exec::interp::{self, RunInput, DEFAULT_FUEL};
use crate::exec::outcome::Value;
use std::fmt::Write;
use std::time::{Duration, Instant};
use tandem_core::backend::{decompose, emit, lower, rationalize, regalloc, RegallocOptions};
use tandem_core::passes::{default_pipeline, PassManager};

/// A shape of function, written at a size `n`.
pub struct Shape {
    pub name: &'static str,
    pub text: fn(usize) -> String,
}

/// The shapes the scaling check measures.
pub const SHAPES: &[Shape] = &[
    Shape { name: "chain of n single-use trees in one block", text: chain },
    Shape { name: "n locals live at once in one block", text: wide },
    Shape { name: "n diamonds (3n blocks)", text: diamonds },
    Shape { name: "loop rotating n locals (n phis)", text: rotation },
];

/// The sizes every shape is measured at.
pub const SIZES: &[usize] = &[100, 1_000, 10_000];

/// A size at which some stage takes longer than this is the last one measured.
pub const SLOW_SECONDS: f64 = 5.0;

fn locals(n: usize, out: &mut String) {
    for i in 0..n {
        let _ = writeln!(out, "    local i32 %x{i}");
    }
}

fn chain(n: usize) -> String {
    let mut s = String::from("function %f(i32 %a) -> i32 {\n");
    locals(n, &mut s);
    s += "b0:\n    %x0 = add(%a, 1)\n";
    for i in 1..n {
        let _ = writeln!(s, "    %x{i} = add(%x{}, {i})", i - 1);
    }
    let _ = writeln!(s, "    ret %x{}\n}}", n - 1);
    s
}

fn wide(n: usize) -> String {
    let mut s = String::from("function %f(i32 %a) -> i32 {\n    local i32 %s\n");
    locals(n, &mut s);
    s += "b0:\n";
    for i in 0..n {
        let _ = writeln!(s, "    %x{i} = mul(%a, {})", i + 3);
    }
    for i in 0..n {
        let _ = writeln!(s, "    %s = xor(%s, %x{i})");
    }
    s += "    ret %s\n}\n";
    s
}

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

fn rotation(n: usize) -> String {
    let mut s = String::from("function %f(i32 %a) -> i32 {\n    local i32 %i\n    local i32 %t\n");
    locals(n, &mut s);
    s += "b0:\n";
    for i in 0..n {
        let _ = writeln!(s, "    %x{i} = add(%a, {i})");
    }
    s += "    jump b1\nb1:\n    %t = %x0\n";
    for i in 0..n - 1 {
        let _ = writeln!(s, "    %x{i} = %x{}", i + 1);
    }
    let _ = writeln!(s, "    %x{} = %t\n    %i = add(%i, 1)\n    br slt(%i, 3), b1, b2\nb2:", n - 1);
    let _ = writeln!(s, "    ret add(%x0, %x{})\n}}", n - 1);
    s
}

/// The time of each stage on one function, in stage order.
pub fn measure(text: &str, emu: &mut Emulator) -> Result<Vec<(String, Duration)>, String> {
    let mut times = vec![];
    let mut timed = |name: &str, start: Instant| times.push((name.to_string(), start.elapsed()));
    let t = Instant::now();
    let (module, _) = tandem_core::text::parse_module(text).map_err(|e| e.to_string())?;
    timed("parse", t);
    let t = Instant::now();
    tandem_core::verify::verify_module(&module).map_err(|e| format!("{e:?}"))?;
    timed("verify", t);
    let f0 = module.functions[0].clone();
    let mut f = f0.clone();
    let mut last = Instant::now();
    let mut pass_times = vec![];
    PassManager { verify: false }
        .run(&default_pipeline(), &mut f, &mut |pass, _, _| {
            pass_times.push((format!("pass {pass}"), last.elapsed()));
            last = Instant::now();
        })
        .map_err(|e| e.to_string())?;
    times.extend(pass_times);
    let t = Instant::now();
    let (l, _) = rationalize::rationalize(&f).map_err(|e| e.to_string())?;
    times.push(("rationalize".into(), t.elapsed()));
    let t = Instant::now();
    let (mut l, _) = decompose::decompose(&l);
    times.push(("decompose".into(), t.elapsed()));
    let t = Instant::now();
    lower::lower(&mut l);
    times.push(("lower".into(), t.elapsed()));
    let t = Instant::now();
    let alloc = regalloc::regalloc(&l, RegallocOptions::default()).map_err(|e| e.to_string())?;
    times.push(("regalloc".into(), t.elapsed()));
    let t = Instant::now();
    let code = emit::emit(&l, &alloc).map_err(|e| e.to_string())?;
    times.push(("emit".into(), t.elapsed()));
    let input = RunInput { args: vec![Value::I32(7)], heap: vec![], callframe: vec![], fuel: DEFAULT_FUEL };
    let t = Instant::now();
    let (reference, fuel) = interp::run_measured(&f0, &input).map_err(|e| e.to_string())?;
    times.push(("interpreter".into(), t.elapsed()));
    let t = Instant::now();
    let run = emu.run_with_budget(&code, &f, &input, crate::exec::emu::budget_for(fuel, &code.shape)).map_err(|e: EmuError| e.to_string())?;
    times.push(("emulator".into(), t.elapsed()));
    match (reference, run) {
        (Ok(expected), Ok(got)) if expected == got => Ok(times),
        (r, g) => Err(format!("the x86 run does not agree with the interpreter: {r:?} vs {g:?}")),
    }
}

/// Measures every shape at every size and writes a table per shape as soon as it is
/// measured: one row per stage, the time at each size and the growth exponent between
/// the two largest.
pub fn report(emu: &mut Emulator, w: &mut dyn std::io::Write) -> Result<(), String> {
    for shape in SHAPES {
        let mut out = String::new();
        let mut columns = vec![];
        for &n in SIZES {
            let text = (shape.text)(n);
            let times = measure(&text, emu).map_err(|e| format!("{} at n = {n}: {e}", shape.name))?;
            // A stage that already takes seconds would take hours ten times larger: the
            // growth is then measured between the sizes that were run.
            let slow = times.iter().any(|(_, t)| t.as_secs_f64() > SLOW_SECONDS);
            columns.push(times);
            if slow {
                break;
            }
        }
        let _ = writeln!(out, "{}:", shape.name);
        let heads: Vec<String> = SIZES.iter().map(|n| format!("n={n}")).collect();
        let _ = writeln!(out, "  {:<18} {:>12} {:>12} {:>12}  growth", "stage", heads[0], heads[1], heads[2]);
        for (k, (stage, _)) in columns[0].iter().enumerate() {
            let t: Vec<f64> = columns.iter().map(|c| c[k].1.as_secs_f64()).collect();
            let m = t.len();
            let growth = if m < 2 {
                "(not measured)".to_string()
            } else if t[m - 2] > 50e-6 {
                format!("n^{:.2}", (t[m - 1] / t[m - 2]).log10())
            } else {
                "(too fast)".into()
            };
            let cells: Vec<String> = (0..SIZES.len())
                .map(|i| t.get(i).map_or("skipped".to_string(), |x| format!("{:.3}ms", x * 1e3)))
                .collect();
            let _ = writeln!(out, "  {stage:<18} {:>12} {:>12} {:>12}  {growth}", cells[0], cells[1], cells[2]);
        }
        w.write_all(out.as_bytes()).and_then(|_| w.flush()).map_err(|e| e.to_string())?;
    }
    Ok(())
}
