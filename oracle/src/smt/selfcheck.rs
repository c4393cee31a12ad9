//! The encoder's self-check: the encoding is a fourth implementation of the semantics,
//! so it is held to the reference interpreter like the others. For a function and a
//! concrete input, the inputs are fixed in the formula (ground terms), and the outcome the
//! formula then determines must be exactly the interpreter's: how the run ended, every
//! trace event, every callframe variable, and the whole final heap (compared by one
//! solver query through a symbolic address, so no byte is skipped). A run that goes
//! beyond the unrolling bound is counted and not compared.
//!
//! [`self_check`] does this for generated cases (`crate::gen`): every run of every seed,
//! on the function as generated and as each pass of the check pipeline leaves it (so
//! phis and the passes' shapes are covered too). `tandem verify --self-check` and a test
//! call it.

use super::encode::{self, encode_function, Inputs, SymOutcome};
use crate::gen::{self, Profile};
use crate::exec::interp::{self, RunInput};
use crate::exec::outcome::{End, Invalid, Outcome};
use tandem_core::helpers::HelperKind;
use tandem_core::ir::{Function, TrapKind, HEAP_BASE, HEAP_SIZE};
use tandem_core::passes::{check_pipeline, PassManager};
use z3::ast::{Array, Bool, BV};
use z3::{SatResult, Sort};

/// What one comparison found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The formula gives the interpreter's outcome.
    Agree,
    /// The run takes more back edges than the bound: not compared.
    BeyondBound,
    /// The interpreter ran out of fuel: not compared.
    FuelExhausted,
    /// The formula and the interpreter differ: a bug in one of them.
    Differ(String),
}

/// Inputs fixed to the concrete values of `input`, as ground terms.
fn concrete_inputs(f: &Function, input: &RunInput) -> Inputs {
    let args = input.args.iter().map(|a| BV::from_i64(a.as_i64(), a.ty().bits())).collect();
    let mut heap = Array::const_array(&Sort::bitvector(32), &BV::from_u64(0, 8));
    for (addr, bytes) in &input.heap {
        for (i, b) in bytes.iter().enumerate() {
            heap = heap.store(&BV::from_u64(*addr as u64 + i as u64, 32), &BV::from_u64(*b as u64, 8));
        }
    }
    let mut callframe: Vec<BV> = f.cfvars.values().map(|d| BV::from_u64(0, d.ty.bits())).collect();
    for (v, x) in &input.callframe {
        callframe[cranelift_entity::EntityRef::index(*v)] = BV::from_i64(x.as_i64(), x.ty().bits());
    }
    Inputs { args, heap, callframe }
}

/// Compares the encoding of `f` on `input` (unrolled to `bound`) with the interpreter.
pub fn compare(f: &Function, input: &RunInput, bound: u32) -> Verdict {
    let reference = interp::run(f, input).expect("the input fits the function");
    if reference == Err(Invalid::FuelExhausted) {
        return Verdict::FuelExhausted;
    }
    let inputs = concrete_inputs(f, input);
    let o = match encode_function(f, &inputs, encode::trace_slots(f), bound, usize::MAX) {
        Ok(o) => o,
        Err(e) => return Verdict::Differ(format!("cannot encode: {e:?}")),
    };
    let s = super::solver();
    if s.check() != SatResult::Sat {
        return Verdict::Differ("the empty query is not satisfiable".into());
    }
    let m = s.get_model().expect("a model");
    let b = |x: &Bool| m.eval(x, true).and_then(|v| v.as_bool()).expect("a ground truth value");
    let n = |x: &BV| m.eval(x, true).and_then(|v| v.as_u64()).expect("a ground numeral");
    if !b(&o.in_bound) {
        return Verdict::BeyondBound;
    }
    let kind = n(&o.kind);
    let out = match &reference {
        Err(Invalid::OutOfBounds { .. }) => {
            return if kind == encode::END_INVALID {
                Verdict::Agree
            } else {
                Verdict::Differ(format!("the interpreter finds the run invalid, the formula's end kind is {kind}"))
            };
        }
        Err(Invalid::FuelExhausted) => unreachable!("handled above"),
        Ok(out) => out,
    };
    let mut errs = vec![];
    let (want_kind, want_value, want_code) = match out.end {
        End::Return(v) => (encode::END_RETURN, v.as_i64() as u64, 0),
        End::Trap(TrapKind::DivideError) => (encode::END_DIVIDE, 0, 0),
        End::Trap(TrapKind::Check(c)) => (encode::END_CHECK, 0, c as u64),
    };
    if kind != want_kind {
        errs.push(format!("end kind: interpreter {want_kind} ({}), formula {kind}", out.end));
    } else if n(&o.value) != want_value || n(&o.code) != want_code {
        errs.push(format!("end: interpreter {}, formula value {:#x} code {}", out.end, n(&o.value), n(&o.code)));
    }
    errs.extend(trace_errors(out, &o, &n));
    for (i, (v, x)) in out.callframe.iter().zip(&o.state.callframe).enumerate() {
        let got = n(&encode::to64(x)) as i64;
        if got != v.as_i64() {
            errs.push(format!("callframe slot {i}: interpreter {v}, formula {got}"));
        }
    }
    if let Some(e) = heap_error(out, &o) {
        errs.push(e);
    }
    if errs.is_empty() {
        Verdict::Agree
    } else {
        Verdict::Differ(errs.join("; "))
    }
}

fn trace_errors(out: &Outcome, o: &SymOutcome, n: &dyn Fn(&BV) -> u64) -> Vec<String> {
    let t = &o.state.trace;
    let len = n(&t.len) as usize;
    if len != out.trace.len() {
        return vec![format!("trace length: interpreter {}, formula {len}", out.trace.len())];
    }
    let mut errs = vec![];
    for (i, ev) in out.trace.iter().enumerate() {
        let idx = BV::from_u64(i as u64, 32);
        let at = |a: &Array| n(&a.select(&idx).as_bv().expect("bit-vectors"));
        let want_kind = HelperKind::ALL.iter().position(|&h| h == ev.helper).unwrap() as u64 + 1;
        let mut ok = at(&t.kind) == want_kind;
        for (j, slot) in t.args.iter().enumerate() {
            let want = ev.args.get(j).map_or(0, |v| v.as_i64() as u64);
            ok &= at(slot) == want;
        }
        if !ok {
            errs.push(format!("trace event {i}: interpreter {ev}, formula differs"));
            break;
        }
    }
    errs
}

/// One query: is there a heap address where the formula's final heap and the
/// interpreter's differ?
fn heap_error(out: &Outcome, o: &SymOutcome) -> Option<String> {
    let mut want = Array::const_array(&Sort::bitvector(32), &BV::from_u64(0, 8));
    for (i, &byte) in out.heap.iter().enumerate() {
        if byte != 0 {
            want = want.store(&BV::from_u64(HEAP_BASE as u64 + i as u64, 32), &BV::from_u64(byte as u64, 8));
        }
    }
    let j = super::fresh_bv(32);
    let s = super::solver();
    s.assert(j.bvuge(BV::from_u64(HEAP_BASE as u64, 32)));
    s.assert(j.bvult(BV::from_u64((HEAP_BASE + HEAP_SIZE) as u64, 32)));
    s.assert(o.state.heap.select(&j).as_bv().unwrap().eq(want.select(&j).as_bv().unwrap()).not());
    match s.check() {
        SatResult::Unsat => None,
        SatResult::Sat => {
            let m = s.get_model().unwrap();
            let a = m.eval(&j, true).and_then(|v| v.as_u64()).unwrap_or(0);
            let off = (a as u32).wrapping_sub(HEAP_BASE) as usize;
            let got = m.eval(&o.state.heap.select(&j).as_bv().unwrap(), true).and_then(|v| v.as_u64()).unwrap_or(0);
            Some(format!("heap byte {a:#x}: interpreter {:02x}, formula {got:02x}", out.heap.get(off).copied().unwrap_or(0)))
        }
        SatResult::Unknown => Some("heap comparison: the solver gave up".into()),
    }
}

/// Totals of a self-check.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub compared: u64,
    pub beyond_bound: u64,
    pub fuel_exhausted: u64,
    /// (seed, form, run index, what differed).
    pub differences: Vec<(u64, String, usize, String)>,
}

/// Self-checks the encoder on `count` generated cases from `seed`: every run, on the
/// function as generated and after each pass of the check pipeline. Each case is checked
/// in a Z3 context of its own (issue 23: in the thread's implicit context, every term a
/// campaign's self-checks built stayed alive for the life of the worker).
pub fn self_check(seeds: std::ops::RangeInclusive<u64>, profile: Profile, bound: u32) -> Summary {
    let mut s = Summary::default();
    for sd in seeds {
        let one = super::in_fresh_context(|| self_check_seed(sd, profile, bound));
        s.compared += one.compared;
        s.beyond_bound += one.beyond_bound;
        s.fuel_exhausted += one.fuel_exhausted;
        s.differences.extend(one.differences);
    }
    s
}

/// [`self_check`] of one seed, in the current Z3 context.
fn self_check_seed(sd: u64, profile: Profile, bound: u32) -> Summary {
    let cfg = profile.config();
    let mut s = Summary::default();
    let g = gen::generate(sd, &cfg);
    let Some(f) = g.case.module.functions.first() else { return s };
    let mut forms = vec![("input".to_string(), f.clone())];
    let mut h = f.clone();
    let _ = PassManager { verify: true }.run(&check_pipeline(), &mut h, &mut |pass, after, _| {
        forms.push((format!("after {pass}"), after.clone()));
    });
    let inputs: Vec<RunInput> = g.case.runs.iter().filter_map(|r| r.input(f).ok()).collect();
    for (ri, input) in inputs.iter().enumerate() {
        for (form, func) in &forms {
            match compare(func, input, bound) {
                Verdict::Agree => s.compared += 1,
                Verdict::BeyondBound => s.beyond_bound += 1,
                Verdict::FuelExhausted => s.fuel_exhausted += 1,
                Verdict::Differ(why) => s.differences.push((sd, form.clone(), ri, why)),
            }
        }
    }
    s
}
