//! Tests of the emulator runner and the differential check on hand-written machine code
//! (assembled with iced-x86's `CodeAssembler`), before any backend exists. Where a test
//! has an IR counterpart, the expectation comes from the reference interpreter (a
//! different component from the one under test) or from arithmetic done by hand.

use iced_x86::code_asm::*;
use tandem_core::abi::{MachineCode, RuntimeHelper, CODE_BASE, HELPER_BASE, STACK_BASE, STACK_SIZE};
use tandem_core::helpers::HelperKind;
use tandem_core::ir::{CfVar, Function, TrapKind, CALLFRAME_BASE, HEAP_BASE};
use tandem_core::text::parse_module;
use tandem_oracle::judge::diff::{check, side_by_side, Verdict};
use tandem_oracle::exec::emu::{self, Emulator, FaultKind, Finding};
use tandem_oracle::exec::interp::RunInput;
use tandem_oracle::exec::outcome::{End, Event, Value};

mod machine;
use machine::{asm, func, input};

fn helper(h: HelperKind) -> u64 {
    RuntimeHelper::Ir(h).address() as u64
}

/// The function `RET0`, a fresh emulator and a run without arguments: what the tests of
/// hand-written code that ignores its function start from.
fn ret0() -> (Function, Emulator, RunInput) {
    (func(RET0), Emulator::new().unwrap(), input(vec![]))
}

/// `call @log(arg, 7)` then `call @log(1, 2)`, cdecl: arguments pushed right to left,
/// popped by the caller.
fn log_twice(a: &mut CodeAssembler, arg: AsmRegister32) -> Result<(), IcedError> {
    a.push(7)?;
    a.push(arg)?;
    a.call(helper(HelperKind::Log))?;
    a.add(esp, 8)?;
    a.push(2)?;
    a.push(1)?;
    a.call(helper(HelperKind::Log))?;
    a.add(esp, 8)
}

fn run(
    emu: &mut Emulator,
    code: &MachineCode,
    f: &Function,
    inp: &RunInput,
) -> Result<tandem_oracle::exec::outcome::Outcome, Finding> {
    emu.run(code, f, inp).expect("the emulator works")
}

fn fault(r: Result<tandem_oracle::exec::outcome::Outcome, Finding>) -> (FaultKind, u32, Option<u32>, String) {
    match r {
        Err(Finding::Fault { kind, pc, address, disassembly, .. }) => (kind, pc, address, disassembly),
        other => panic!("expected a fault, got {other:?}"),
    }
}

const RET0: &str = "function %f() -> i32 {\nb0:\n    ret 0\n}\n";

#[test]
fn returns_a_constant_and_a_wrong_one_disagrees() {
    let f = func("function %f() -> i32 {\nb0:\n    ret 42\n}\n");
    let mut emu = Emulator::new().unwrap();
    let good = asm(|a| {
        a.mov(eax, 42)?;
        a.ret()
    });
    let v = check(&f, &input(vec![]), &good, &mut emu).unwrap();
    let Verdict::Agree(o) = v else { panic!("{v}") };
    assert_eq!(o.end, End::Return(Value::I32(42)));

    let bad = asm(|a| {
        a.mov(eax, 41)?;
        a.ret()
    });
    match check(&f, &input(vec![]), &bad, &mut emu).unwrap() {
        Verdict::Disagree { diff, .. } => assert_eq!(diff, vec!["end: expected return 42, got return 41".to_string()]),
        v => panic!("expected a disagreement, got {v}"),
    }
}

#[test]
fn adds_arguments_with_wrapping() {
    let f = func("function %f(i32 %a, i32 %b) -> i32 {\nb0:\n    ret add(%a, %b)\n}\n");
    let code = asm(|a| {
        a.mov(eax, dword_ptr(esp + 4))?;
        a.add(eax, dword_ptr(esp + 8))?;
        a.ret()
    });
    let mut emu = Emulator::new().unwrap();
    for (x, y, sum) in [(1, 2, 3), (i32::MAX, 1, i32::MIN), (-5, 3, -2)] {
        let inp = input(vec![Value::I32(x), Value::I32(y)]);
        assert_eq!(run(&mut emu, &code, &f, &inp).unwrap().end, End::Return(Value::I32(sum)));
        assert!(matches!(check(&f, &inp, &code, &mut emu).unwrap(), Verdict::Agree(_)));
    }
    // Subtracting instead of adding is caught.
    let sub = asm(|a| {
        a.mov(eax, dword_ptr(esp + 4))?;
        a.sub(eax, dword_ptr(esp + 8))?;
        a.ret()
    });
    let inp = input(vec![Value::I32(1), Value::I32(2)]);
    assert!(check(&f, &inp, &sub, &mut emu).unwrap().is_failure());
}

#[test]
fn i64_arguments_and_result_in_edx_eax() {
    let f = func("function %f(i32 %x, i64 %a) -> i64 {\nb0:\n    ret add(%a, 1:i64)\n}\n");
    // The i64 argument is the second and third dword: [esp+8] low, [esp+12] high.
    let code = asm(|a| {
        a.mov(eax, dword_ptr(esp + 8))?;
        a.mov(edx, dword_ptr(esp + 12))?;
        a.add(eax, 1)?;
        a.adc(edx, 0)?;
        a.ret()
    });
    let mut emu = Emulator::new().unwrap();
    for (x, want) in [(0xFFFF_FFFFi64, 0x1_0000_0000i64), (-1, 0), (i64::MAX, i64::MIN)] {
        let inp = input(vec![Value::I32(7), Value::I64(x)]);
        assert_eq!(run(&mut emu, &code, &f, &inp).unwrap().end, End::Return(Value::I64(want)));
        assert!(matches!(check(&f, &inp, &code, &mut emu).unwrap(), Verdict::Agree(_)));
    }
}

#[test]
fn helper_calls_log_and_poison_caller_saved_registers() {
    let f = func(
        "helper @log(i32, i32) -> void effects(observable)\n\
         function %f(i32 %a) -> i32 {\nb0:\n    call @log(%a, 7)\n    call @log(1, 2)\n    ret %a\n}\n",
    );
    let code = asm(|a| {
        a.push(esi)?;
        a.mov(esi, dword_ptr(esp + 8))?;
        log_twice(a, esi)?;
        a.mov(eax, esi)?;
        a.pop(esi)?;
        a.ret()
    });
    let mut emu = Emulator::new().unwrap();
    let inp = input(vec![Value::I32(-3)]);
    let o = run(&mut emu, &code, &f, &inp).unwrap();
    let log = |a, b| Event { helper: HelperKind::Log, args: vec![Value::I32(a), Value::I32(b)] };
    assert_eq!(o.trace, vec![log(-3, 7), log(1, 2)]);
    assert_eq!(o.end, End::Return(Value::I32(-3)));
    assert!(matches!(check(&f, &inp, &code, &mut emu).unwrap(), Verdict::Agree(_)));

    // Keeping the argument in caller-saved ecx across the call returns the poison.
    let in_ecx = asm(|a| {
        a.mov(ecx, dword_ptr(esp + 4))?;
        log_twice(a, ecx)?;
        a.mov(eax, ecx)?;
        a.ret()
    });
    let o = run(&mut emu, &in_ecx, &f, &inp).unwrap();
    assert_eq!(o.end, End::Return(Value::I32(emu::POISON_ECX as i32)));
    assert!(check(&f, &inp, &in_ecx, &mut emu).unwrap().is_failure());
}

#[test]
fn helper_calls_flip_the_flags() {
    let f = func(
        "helper @mix(i32, i32) -> i32 pure\n\
         function %f() -> i32 {\nb0:\n    ret 1\n}\n",
    );
    // `cmp eax, eax` sets ZF; a helper call in between flips it, so `setz` reads 0.
    let code = asm(|a| {
        a.push(0)?;
        a.push(0)?;
        a.xor(eax, eax)?;
        a.cmp(eax, eax)?;
        a.call(helper(HelperKind::Mix))?;
        a.setz(al)?;
        a.movzx(eax, al)?;
        a.add(esp, 8)?;
        a.ret()
    });
    let mut emu = Emulator::new().unwrap();
    let o = run(&mut emu, &code, &f, &input(vec![])).unwrap();
    assert_eq!(o.end, End::Return(Value::I32(0)));
}

#[test]
fn helper_results_i32_and_i64_and_heap_rmw() {
    let f = func(
        "helper @mix64(i64, i64) -> i64 pure\n\
         function %f(i64 %a, i64 %b) -> i64 {\nb0:\n    ret call @mix64(%a, %b)\n}\n",
    );
    // Push b then a (each high dword first), so that a is lowest.
    let code = asm(|a| {
        a.push(dword_ptr(esp + 16))?;
        a.push(dword_ptr(esp + 16))?;
        a.push(dword_ptr(esp + 16))?;
        a.push(dword_ptr(esp + 16))?;
        a.call(helper(HelperKind::Mix64))?;
        a.add(esp, 16)?;
        a.ret()
    });
    let mut emu = Emulator::new().unwrap();
    let (x, y) = (0x1234_5678_9abc_def0i64, -77i64);
    let inp = input(vec![Value::I64(x), Value::I64(y)]);
    let want = tandem_core::helpers::mix64(x, y);
    assert_eq!(run(&mut emu, &code, &f, &inp).unwrap().end, End::Return(Value::I64(want)));
    assert!(matches!(check(&f, &inp, &code, &mut emu).unwrap(), Verdict::Agree(_)));

    let f = func(
        "helper @heap_rmw(i32, i32) -> i32 effects(reads_heap, writes_heap)\n\
         function %f(i32 %d) -> i32 {\nb0:\n    ret call @heap_rmw(16, %d)\n}\n",
    );
    let code = asm(|a| {
        a.push(dword_ptr(esp + 4))?;
        a.push(16)?;
        a.call(helper(HelperKind::HeapRmw))?;
        a.add(esp, 8)?;
        a.ret()
    });
    let mut inp = input(vec![Value::I32(5)]);
    inp.heap = vec![(HEAP_BASE + 16, vec![0x10, 0, 0, 0])];
    let o = run(&mut emu, &code, &f, &inp).unwrap();
    assert_eq!(o.end, End::Return(Value::I32(0x10)));
    assert_eq!(&o.heap[16..20], &[0x15, 0, 0, 0]);
    assert!(matches!(check(&f, &inp, &code, &mut emu).unwrap(), Verdict::Agree(_)));
}

#[test]
fn callframe_helpers_see_and_change_the_slots() {
    let f = func(
        "helper @cf_trace() -> void effects(reads_callframe, observable)\n\
         helper @cf_set(i32, i32) -> void effects(writes_callframe)\n\
         function %f() -> i64 {\n    callframe i32 @x\n    callframe i64 @y\nb0:\n    cfwrite(@x, 5)\n    \
         call @cf_trace()\n    call @cf_set(1, -2)\n    ret cfread(@y)\n}\n",
    );
    let x = CALLFRAME_BASE;
    let y = CALLFRAME_BASE + 8;
    let code = asm(|a| {
        a.mov(dword_ptr(x), 5)?;
        a.call(helper(HelperKind::CfTrace))?;
        a.push(-2)?;
        a.push(1)?;
        a.call(helper(HelperKind::CfSet))?;
        a.add(esp, 8)?;
        a.mov(eax, dword_ptr(y))?;
        a.mov(edx, dword_ptr(y + 4))?;
        a.ret()
    });
    let mut emu = Emulator::new().unwrap();
    let mut inp = input(vec![]);
    inp.callframe = vec![(CfVar::from_u32(1), Value::I64(1 << 40))];
    let o = run(&mut emu, &code, &f, &inp).unwrap();
    assert_eq!(o.trace, vec![Event { helper: HelperKind::CfTrace, args: vec![Value::I32(5), Value::I64(1 << 40)] }]);
    assert_eq!(o.callframe, vec![Value::I32(5), Value::I64(-2)]);
    assert_eq!(o.end, End::Return(Value::I64(-2)));
    assert!(matches!(check(&f, &inp, &code, &mut emu).unwrap(), Verdict::Agree(_)));

    // Forgetting the callframe store before the read trace is a disagreement.
    let lazy = asm(|a| {
        a.call(helper(HelperKind::CfTrace))?;
        a.mov(dword_ptr(x), 5)?;
        a.push(-2)?;
        a.push(1)?;
        a.call(helper(HelperKind::CfSet))?;
        a.add(esp, 8)?;
        a.mov(eax, dword_ptr(y))?;
        a.mov(edx, dword_ptr(y + 4))?;
        a.ret()
    });
    match check(&f, &inp, &lazy, &mut emu).unwrap() {
        Verdict::Disagree { diff, .. } => assert!(diff[0].starts_with("trace event 0"), "{diff:?}"),
        v => panic!("{v}"),
    }

    // Writing past the last variable's slot is a finding.
    let spill = asm(|a| {
        a.mov(dword_ptr(y + 8), 1)?;
        a.xor(eax, eax)?;
        a.xor(edx, edx)?;
        a.ret()
    });
    assert_eq!(run(&mut emu, &spill, &f, &inp), Err(Finding::CallframeOutOfBounds { offset: 16 }));
}

#[test]
fn idiv_by_zero_and_min_by_minus_one_are_divide_errors() {
    let f = func("function %f(i32 %a, i32 %b) -> i32 {\nb0:\n    ret sdiv(%a, %b)\n}\n");
    let code = asm(|a| {
        a.mov(eax, dword_ptr(esp + 4))?;
        a.cdq()?;
        a.idiv(dword_ptr(esp + 8))?;
        a.ret()
    });
    let mut emu = Emulator::new().unwrap();
    // Every case runs twice on one instance (`run`, then inside `check`): a second #DE
    // after a first must still be a #DE, not a double fault.
    let cases = [
        (7, 2, End::Return(Value::I32(3))),
        (-7, 2, End::Return(Value::I32(-3))),
        (7, 0, End::Trap(TrapKind::DivideError)),
        (i32::MIN, -1, End::Trap(TrapKind::DivideError)),
    ];
    for (x, y, want) in cases {
        let inp = input(vec![Value::I32(x), Value::I32(y)]);
        assert_eq!(run(&mut emu, &code, &f, &inp).unwrap().end, want, "{x} / {y}");
        let v = check(&f, &inp, &code, &mut emu).unwrap();
        assert!(matches!(v, Verdict::Agree(_)), "{x} / {y}: {v}");
    }
}

#[test]
fn division_helpers_apply_the_ir_trap_rules() {
    let f = func("function %f(i64 %a, i64 %b) -> i64 {\nb0:\n    ret srem(%a, %b)\n}\n");
    let code = asm(|a| {
        for _ in 0..4 {
            a.push(dword_ptr(esp + 16))?;
        }
        a.call(RuntimeHelper::Srem64.address() as u64)?;
        a.add(esp, 16)?;
        a.ret()
    });
    let mut emu = Emulator::new().unwrap();
    let cases = [
        (-7i64 << 33, 5i64, End::Return(Value::I64((-7i64 << 33) % 5))),
        (9, 0, End::Trap(TrapKind::DivideError)),
        (i64::MIN, -1, End::Trap(TrapKind::DivideError)),
    ];
    for (x, y, want) in cases {
        let inp = input(vec![Value::I64(x), Value::I64(y)]);
        assert_eq!(run(&mut emu, &code, &f, &inp).unwrap().end, want, "{x} % {y}");
        assert!(matches!(check(&f, &inp, &code, &mut emu).unwrap(), Verdict::Agree(_)));
    }
}

#[test]
fn check_trap_with_code_in_eax_after_a_visible_store() {
    let f = func(&format!(
        "function %f(i32 %a) -> i32 {{\nb0:\n    store.32({h}, %a)\n    trapif(%a, 9)\n    store.32({h2}, 1)\n    ret 1\n}}\n",
        h = HEAP_BASE + 4,
        h2 = HEAP_BASE + 8
    ));
    let code = asm(|a| {
        let mut ok = a.create_label();
        a.mov(eax, dword_ptr(esp + 4))?;
        a.mov(dword_ptr(HEAP_BASE + 4), eax)?;
        a.test(eax, eax)?;
        a.jz(ok)?;
        a.mov(eax, 9)?;
        a.int(0x41)?;
        a.set_label(&mut ok)?;
        a.mov(dword_ptr(HEAP_BASE + 8), 1)?;
        a.mov(eax, 1)?;
        a.ret()
    });
    let mut emu = Emulator::new().unwrap();
    let inp = input(vec![Value::I32(0x0102_0304)]);
    let o = run(&mut emu, &code, &f, &inp).unwrap();
    assert_eq!(o.end, End::Trap(TrapKind::Check(9)));
    assert_eq!(&o.heap[4..12], &[4, 3, 2, 1, 0, 0, 0, 0]);
    assert!(matches!(check(&f, &inp, &code, &mut emu).unwrap(), Verdict::Agree(_)));
    let inp = input(vec![Value::I32(0)]);
    let o = run(&mut emu, &code, &f, &inp).unwrap();
    assert_eq!(o.end, End::Return(Value::I32(1)));
    assert_eq!(&o.heap[4..12], &[0, 0, 0, 0, 1, 0, 0, 0]);
    assert!(matches!(check(&f, &inp, &code, &mut emu).unwrap(), Verdict::Agree(_)));
}

#[test]
fn infinite_loops_time_out() {
    let f = func(RET0);
    let mut emu = Emulator::new().unwrap();
    let spin = asm(|a| {
        let mut top = a.create_label();
        a.set_label(&mut top)?;
        a.jmp(top)
    });
    let r = emu.run_with_budget(&spin, &f, &input(vec![]), 10_000).unwrap();
    assert!(matches!(r, Err(Finding::Timeout { budget: 10_000, .. })), "{r:?}");

    // A loop through a helper call times out too (the count survives the hook's jumps).
    let f = func("helper @mix(i32, i32) -> i32 pure\nfunction %f() -> i32 {\nb0:\n    ret 0\n}\n");
    let spin_call = asm(|a| {
        let mut top = a.create_label();
        a.set_label(&mut top)?;
        a.push(1)?;
        a.push(2)?;
        a.call(helper(HelperKind::Mix))?;
        a.add(esp, 8)?;
        a.jmp(top)
    });
    // The budget follows the fuel the interpreter used, not the fuel it was given: one
    // unit for entering b0 and one for the constant `ret 0` evaluates.
    match check(&f, &input(vec![]), &spin_call, &mut emu).unwrap() {
        Verdict::Finding { finding: Finding::Timeout { budget, .. }, .. } => {
            assert_eq!(budget, 2 * emu::INSNS_PER_FUEL + emu::BUDGET_SLACK)
        }
        v => panic!("{v}"),
    }

    // When the interpreter itself runs out of fuel the run is skipped, not compared.
    let f = func("function %f() -> i32 {\nb0:\n    jump b1\nb1:\n    jump b1\n}\n");
    let mut inp = input(vec![]);
    inp.fuel = 50;
    assert!(matches!(check(&f, &inp, &spin, &mut emu).unwrap(), Verdict::Skipped(_)));
}

/// The budget is Unicorn's exact instruction count, even though runs count it by
/// translated blocks (`emu::BlockBudget`): at the boundary, where the count by blocks
/// passes the budget and the run is done again with the exact count, a run of exactly the
/// budget returns and one instruction more is a timeout stopped before that instruction.
#[test]
fn the_budget_is_exact_at_its_boundary() {
    let f = func(RET0);
    let mut emu = Emulator::new().unwrap();
    // Straight line: `xor`, 40 `inc`, `ret` (the return to the sentinel ends the run):
    // 42 instructions, in one translated block.
    let k = 40;
    let line = asm(|a| {
        a.xor(eax, eax)?;
        for _ in 0..k {
            a.inc(eax)?;
        }
        a.ret()
    });
    // A loop: `xor`, `mov`, 25 times `inc; dec; jnz`, `ret`: 78 instructions in blocks
    // entered again and again.
    let n = 25;
    let looping = asm(|a| {
        let mut top = a.create_label();
        a.xor(eax, eax)?;
        a.mov(ecx, n)?;
        a.set_label(&mut top)?;
        a.inc(eax)?;
        a.dec(ecx)?;
        a.jnz(top)?;
        a.ret()
    });
    for (code, total, result) in [(&line, k as u64 + 2, k), (&looping, 3 * n as u64 + 3, n)] {
        for budget in [total, total + 1, total + 20, total + 1000] {
            let r = emu.run_with_budget(code, &f, &input(vec![]), budget).unwrap();
            assert_eq!(r.map(|o| o.end), Ok(End::Return(Value::I32(result))), "budget {budget} of {total}");
        }
        for budget in [total - 1, total - 2, total - 10] {
            match emu.run_with_budget(code, &f, &input(vec![]), budget).unwrap() {
                Err(Finding::Timeout { budget: b, .. }) => assert_eq!(b, budget),
                r => panic!("budget {budget} of {total}: {r:?}"),
            }
        }
    }
    // Where a timeout stops: after exactly `budget` instructions of the straight line,
    // the `xor` and `budget - 1` increments.
    match emu.run_with_budget(&line, &f, &input(vec![]), 30).unwrap() {
        Err(Finding::Timeout { registers, .. }) => assert_eq!(registers.eax, 29),
        r => panic!("{r:?}"),
    }
    // And a run after the exact count counts by blocks again, with the same results.
    let r = emu.run_with_budget(&looping, &f, &input(vec![]), 10_000).unwrap();
    assert_eq!(r.map(|o| o.end), Ok(End::Return(Value::I32(n))));
}

#[test]
fn wild_jumps_and_bad_accesses_are_faults_with_disassembly() {
    let (f, mut emu, inp) = ret0();

    let jump = asm(|a| {
        a.mov(eax, 0x1234_5678)?;
        a.jmp(eax)
    });
    let (kind, pc, _, dis) = fault(run(&mut emu, &jump, &f, &inp));
    assert_eq!((kind, pc), (FaultKind::FetchUnmapped, 0x1234_5678));
    // The listing points at the instruction that left the code.
    let left: Vec<&str> = dis.lines().filter(|l| l.trim_start().starts_with("->")).collect();
    assert_eq!(left.len(), 1, "{dis}");
    assert!(left[0].contains("jmp eax"), "{dis}");

    // A return through a clobbered return address is traced back to the `ret`.
    let bad_ret = asm(|a| {
        a.mov(dword_ptr(esp), 0x0000_1000)?;
        a.xor(eax, eax)?;
        a.ret()
    });
    let (kind, pc, _, dis) = fault(run(&mut emu, &bad_ret, &f, &inp));
    assert_eq!((kind, pc), (FaultKind::FetchUnmapped, 0x1000));
    assert!(dis.lines().any(|l| l.trim_start().starts_with("->") && l.ends_with("ret")), "{dis}");

    // A read from the guard page just below the heap; the disassembly marks it.
    let below_heap = asm(|a| {
        a.nop()?;
        a.mov(eax, dword_ptr(HEAP_BASE - 4))?;
        a.ret()
    });
    let (kind, pc, address, dis) = fault(run(&mut emu, &below_heap, &f, &inp));
    assert_eq!((kind, pc, address), (FaultKind::ReadUnmapped, CODE_BASE + 1, Some(HEAP_BASE - 4)));
    let marked: Vec<&str> = dis.lines().filter(|l| l.trim_start().starts_with("=>")).collect();
    assert_eq!(marked.len(), 1, "{dis}");
    assert!(marked[0].contains("mov eax,[0FFFFCh]"), "{dis}");

    // A write past the top of the stack (into the guard page above it).
    let above_stack = asm(|a| {
        a.mov(dword_ptr(esp + 8), 1)?;
        a.ret()
    });
    let (kind, _, address, _) = fault(run(&mut emu, &above_stack, &f, &inp));
    assert_eq!((kind, address), (FaultKind::WriteUnmapped, Some(STACK_BASE + STACK_SIZE + 4)));

    let write_code = asm(|a| {
        a.mov(dword_ptr(CODE_BASE), 0)?;
        a.ret()
    });
    assert_eq!(fault(run(&mut emu, &write_code, &f, &inp)).0, FaultKind::WriteProtected);

    // A jump into each region a program reads and writes, at its start and inside it:
    // a protection fault at the jump's target, traced back to the jump. The regions'
    // pages are written first, so that a store before the jump has made them known.
    for target in [HEAP_BASE, HEAP_BASE + 0x10, CALLFRAME_BASE + 8, STACK_BASE + STACK_SIZE - 0x100, STACK_BASE + STACK_SIZE - 0x3ff0] {
        let into_data = asm(|a| {
            a.mov(dword_ptr(HEAP_BASE + 4), 7)?;
            a.mov(dword_ptr(esp - 4), 7)?;
            a.mov(eax, target)?;
            a.jmp(eax)
        });
        let (kind, pc, address, dis) = fault(run(&mut emu, &into_data, &f, &inp));
        assert_eq!((kind, pc, address), (FaultKind::FetchProtected, target, None), "{target:#x}");
        assert!(dis.lines().any(|l| l.trim_start().starts_with("->") && l.contains("jmp eax")), "{dis}");
    }

    let ud2 = asm(|a| a.ud2());
    assert_eq!(fault(run(&mut emu, &ud2, &f, &inp)).0, FaultKind::InvalidOpcode);

    let past_end = asm(|a| {
        a.mov(eax, CODE_BASE + 0x100)?;
        a.jmp(eax)
    });
    let (kind, pc, _, dis) = fault(run(&mut emu, &past_end, &f, &inp));
    assert_eq!((kind, pc), (FaultKind::OutsideCode, CODE_BASE + 0x100));
    assert!(dis.contains("outside"), "{dis}");

    let mid_stub = asm(|a| a.call((HELPER_BASE + 3) as u64));
    assert_eq!(fault(run(&mut emu, &mid_stub, &f, &inp)).0, FaultKind::IntoHelperStub);

    let int5 = asm(|a| a.int(5));
    assert_eq!(fault(run(&mut emu, &int5, &f, &inp)).0, FaultKind::Interrupt(5));

    let halt = asm(|a| {
        a.nop()?;
        a.hlt()?;
        a.ret()
    });
    let (kind, pc, _, _) = fault(run(&mut emu, &halt, &f, &inp));
    assert_eq!((kind, pc), (FaultKind::Halt, CODE_BASE + 1));
}

#[test]
fn cdecl_violations_at_return_are_findings() {
    let (f, mut emu, inp) = ret0();
    let clobber_ebx = asm(|a| {
        a.mov(ebx, 1)?;
        a.xor(eax, eax)?;
        a.ret()
    });
    assert_eq!(
        run(&mut emu, &clobber_ebx, &f, &inp),
        Err(Finding::CalleeSavedClobbered { register: "ebx", expected: emu::ENTRY_EBX, found: 1 })
    );
    let push_ebp = asm(|a| {
        a.push(ebp)?;
        a.mov(ebp, esp)?;
        a.xor(eax, eax)?;
        a.ret()
    });
    assert!(matches!(run(&mut emu, &push_ebp, &f, &inp), Err(Finding::Fault { .. })), "returns to the saved ebp");
    // Returning with one extra dword on the stack: the return address is pushed twice.
    let stack = asm(|a| {
        a.pop(ecx)?;
        a.push(ecx)?;
        a.push(ecx)?;
        a.xor(eax, eax)?;
        a.ret()
    });
    let entry_esp = STACK_BASE + STACK_SIZE - 4;
    assert_eq!(run(&mut emu, &stack, &f, &inp), Err(Finding::BadStack { expected: entry_esp + 4, found: entry_esp }));
    let df = asm(|a| {
        a.std()?;
        a.xor(eax, eax)?;
        a.ret()
    });
    assert_eq!(run(&mut emu, &df, &f, &inp), Err(Finding::DirectionFlagSet));
    // Saving and restoring the callee-saved registers is fine.
    let good = asm(|a| {
        a.push(ebx)?;
        a.push(ebp)?;
        a.mov(ebx, 5)?;
        a.mov(ebp, 6)?;
        a.pop(ebp)?;
        a.pop(ebx)?;
        a.xor(eax, eax)?;
        a.ret()
    });
    assert!(matches!(check(&f, &inp, &good, &mut emu).unwrap(), Verdict::Agree(_)));
}

#[test]
fn reused_instance_runs_each_program_afresh() {
    let (f, mut emu, inp) = ret0();
    // A long program that leaves garbage on the stack and the heap.
    let long = asm(|a| {
        a.mov(dword_ptr(esp - 64), 0x1111_1111)?;
        a.mov(dword_ptr(HEAP_BASE), 0x2222_2222)?;
        for _ in 0..40 {
            a.nop()?;
        }
        a.mov(eax, 7)?;
        a.ret()
    });
    // Short programs at the same address: one returns 8, one reads the stack slot and the
    // heap word the long one wrote, one jumps where the long one had code.
    let short = asm(|a| {
        a.mov(eax, 8)?;
        a.ret()
    });
    let read_stack = asm(|a| {
        a.mov(eax, dword_ptr(esp - 64))?;
        a.ret()
    });
    let read_heap = asm(|a| {
        a.mov(eax, dword_ptr(HEAP_BASE))?;
        a.ret()
    });
    let old_code = asm(|a| {
        a.mov(eax, CODE_BASE + 30)?;
        a.jmp(eax)
    });
    let poison = u32::from_le_bytes([emu::STACK_POISON; 4]) as i32;
    for _ in 0..3 {
        assert_eq!(run(&mut emu, &long, &f, &inp).unwrap().end, End::Return(Value::I32(7)));
        assert_eq!(run(&mut emu, &short, &f, &inp).unwrap().end, End::Return(Value::I32(8)));
        assert_eq!(run(&mut emu, &long, &f, &inp).unwrap().end, End::Return(Value::I32(7)));
        assert_eq!(run(&mut emu, &read_stack, &f, &inp).unwrap().end, End::Return(Value::I32(poison)));
        assert_eq!(run(&mut emu, &long, &f, &inp).unwrap().end, End::Return(Value::I32(7)));
        assert_eq!(run(&mut emu, &read_heap, &f, &inp).unwrap().end, End::Return(Value::I32(0)));
        assert_eq!(run(&mut emu, &long, &f, &inp).unwrap().end, End::Return(Value::I32(7)));
        assert_eq!(fault(run(&mut emu, &old_code, &f, &inp)).0, FaultKind::OutsideCode);
    }
}

#[test]
fn side_by_side_marks_the_differing_rows() {
    let f = func(&format!(
        "function %f(i32 %a) -> i32 {{\nb0:\n    store.32({h}, %a)\n    ret %a\n}}\n",
        h = HEAP_BASE + 32
    ));
    let code = asm(|a| {
        a.mov(eax, dword_ptr(esp + 4))?;
        a.mov(dword_ptr(HEAP_BASE + 36), eax)?;
        a.ret()
    });
    let mut emu = Emulator::new().unwrap();
    let inp = input(vec![Value::I32(3)]);
    let Verdict::Disagree { interp, x86, diff } = check(&f, &inp, &code, &mut emu).unwrap() else { panic!() };
    assert_eq!(
        diff,
        vec!["heap 0x100020..0x100021: expected 03, got 00", "heap 0x100024..0x100025: expected 00, got 03"]
    );
    let text = side_by_side("interpreter", &interp, "x86", &x86);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].starts_with("interpreter") && lines[0].ends_with("| x86"), "{text}");
    assert!(lines[1].contains(" | "), "equal ends: {text}");
    assert!(lines[2].contains(" * "), "heap rows differ: {text}");
    assert!(lines[3].contains(" | "), "equal callframes: {text}");
}

#[test]
fn bad_inputs_are_errors_not_findings() {
    let f = func("function %f(i32 %a) -> i32 {\nb0:\n    ret %a\n}\n");
    let code = asm(|a| a.ret());
    let mut emu = Emulator::new().unwrap();
    assert!(emu.run(&code, &f, &input(vec![])).is_err());
    assert!(emu.run(&code, &f, &input(vec![Value::I64(1)])).is_err());
    let empty = MachineCode::from_bytes(vec![]);
    assert!(emu.run(&empty, &f, &input(vec![Value::I32(1)])).is_err());
}

#[test]
fn bench_fixed_program_agrees_with_its_ir() {
    use tandem_oracle::measure::bench::{fixed_function, fixed_program, FIXED_N};
    let f = fixed_function();
    tandem_core::verify::verify_module(&parse_module(tandem_oracle::measure::bench::FIXED_PROGRAM).unwrap().0).unwrap();
    let code = fixed_program();
    let mut emu = Emulator::new().unwrap();
    for n in [FIXED_N, 1, 0, -4, 3] {
        let v = check(&f, &input(vec![Value::I32(n)]), &code, &mut emu).unwrap();
        let Verdict::Agree(o) = v else { panic!("n = {n}: {v}") };
        // The loop runs max(n, 1) times and logs (s, i) once at the end.
        assert_eq!(o.trace.len(), 1);
        assert_eq!(o.trace[0].args[1], Value::I32(n.max(1)));
    }
}

#[test]
fn bench_runs_and_reports_every_measurement() {
    let m = tandem_oracle::measure::bench::emulator_bench(20).unwrap();
    // Seven Unicorn measurements, and three of the native runner where the CPU runs
    // 32-bit code.
    let native = tandem_oracle::exec::native::available().is_ok();
    assert_eq!(m.len(), if native { 10 } else { 7 });
    assert!(m.iter().all(|x| x.runs > 0 && x.seconds > 0.0));
}

#[test]
fn deep_stack_frames_work_and_are_poisoned_afresh() {
    let (f, mut emu, inp) = ret0();
    // A 64 KiB frame, below the per-run poisoned window: read its lowest slot (poison),
    // write it, read it back. The stack's bottom and the guard page below it too.
    let deep = |store: bool| {
        asm(move |a| {
            a.sub(esp, 0x10000)?;
            if store {
                a.mov(dword_ptr(esp), 0x7777_7777)?;
            }
            a.mov(eax, dword_ptr(esp))?;
            a.add(esp, 0x10000)?;
            a.ret()
        })
    };
    let poison = u32::from_le_bytes([emu::STACK_POISON; 4]) as i32;
    for _ in 0..2 {
        assert_eq!(run(&mut emu, &deep(true), &f, &inp).unwrap().end, End::Return(Value::I32(0x7777_7777)));
        assert_eq!(run(&mut emu, &deep(false), &f, &inp).unwrap().end, End::Return(Value::I32(poison)));
        assert_eq!(run(&mut emu, &deep(false), &f, &inp).unwrap().end, End::Return(Value::I32(poison)));
    }
    let bottom = asm(|a| {
        a.mov(eax, dword_ptr(STACK_BASE))?;
        a.mov(ecx, dword_ptr(STACK_BASE - 4))?;
        a.ret()
    });
    let (kind, _, address, _) = fault(run(&mut emu, &bottom, &f, &inp));
    assert_eq!((kind, address), (FaultKind::ReadUnmapped, Some(STACK_BASE - 4)));
}

#[test]
fn trap_kind_and_code_must_match() {
    let f = func("function %f(i32 %a) -> i32 {\nb0:\n    trapif(%a, 9)\n    ret 0\n}\n");
    let inp = input(vec![Value::I32(1)]);
    let (expected, used) = tandem_oracle::exec::interp::run_measured(&f, &inp).unwrap();
    let expected = expected.unwrap();
    let mut emu = Emulator::new().unwrap();
    let trap = |code: u32| {
        asm(move |a| {
            a.mov(eax, code)?;
            a.int(0x41)
        })
    };
    let v = tandem_oracle::judge::diff::check_against(expected.clone(), used, &f, &inp, &trap(9), &mut emu).unwrap();
    assert!(matches!(v, Verdict::Agree(_)), "{v}");
    match tandem_oracle::judge::diff::check_against(expected.clone(), used, &f, &inp, &trap(8), &mut emu).unwrap() {
        Verdict::Disagree { diff, .. } => assert_eq!(diff, vec!["end: expected trap check(9), got trap check(8)"]),
        v => panic!("{v}"),
    }
    let divide = asm(|a| {
        a.xor(ecx, ecx)?;
        a.cdq()?;
        a.idiv(ecx)
    });
    match tandem_oracle::judge::diff::check_against(expected, used, &f, &inp, &divide, &mut emu).unwrap() {
        Verdict::Disagree { diff, .. } => assert_eq!(diff, vec!["end: expected trap check(9), got trap divide_error"]),
        v => panic!("{v}"),
    }
}

#[test]
fn translation_buffer_flushes_keep_runs_right() {
    // A 1 MiB buffer fills after a few hundred fresh programs and is flushed; every run
    // must still agree with the interpreter.
    use tandem_oracle::measure::bench::{fixed_function, fixed_program};
    let f = fixed_function();
    let mut emu = Emulator::with_translation_buffer(1 << 20).unwrap();
    let inp = input(vec![Value::I32(3)]);
    for i in 0..600 {
        let mut code = fixed_program();
        // Different padding after the `ret` makes every program new to the emulator.
        code.bytes.extend(std::iter::repeat_n(0x90, i));
        let v = check(&f, &inp, &code, &mut emu).unwrap();
        assert!(matches!(v, Verdict::Agree(_)), "program {i}: {v}");
    }
}

/// A translated block is reused by the next program only while its bytes are the same
/// (`Emulator::load_code` drops the blocks over the bytes that may have changed, and
/// flushes the whole cache every `emu::FLUSH_EVERY_PROGRAMS` programs): programs that
/// differ from the previous one in a single byte inside a block that ran, in the block
/// after a helper call's return (the stub's block is kept), or in the padding byte a
/// block of the previous program ended on, each run as their own bytes say, across
/// several whole flushes.
#[test]
fn a_translated_block_is_reused_only_while_its_bytes_are_the_same() {
    let f = func(
        "helper @log(i32, i32) -> void effects(observable)\n\
         function %f() -> i32 {\nb0:\n    call @log(1, 2)\n    ret 0\n}\n",
    );
    let mut emu = Emulator::new().unwrap();
    let inp = input(vec![]);
    // One block: the immediate differs, nothing else.
    let constant = |k: u32| {
        asm(move |a| {
            a.mov(eax, k)?;
            for _ in 0..8 {
                a.nop()?;
            }
            a.ret()
        })
    };
    // A helper call, then a block whose immediate differs.
    let after_call = |k: u32| {
        asm(move |a| {
            a.push(2)?;
            a.push(1)?;
            a.call(helper(HelperKind::Log))?;
            a.add(esp, 8)?;
            a.mov(eax, k)?;
            a.ret()
        })
    };
    // A jump to the first byte past its own code: the padding's `int3`, a fault.
    let into_padding = asm(|a| {
        a.mov(eax, CODE_BASE + 16)?;
        a.jmp(eax)?;
        for _ in 0..9 {
            a.nop()?;
        }
        Ok(())
    });
    assert_eq!(into_padding.bytes.len(), 16);
    // The same bytes, then code where the padding was.
    let mut bytes = into_padding.bytes.clone();
    bytes.extend([0xB8, 9, 0, 0, 0, 0xC3]); // mov eax, 9; ret
    let into_code = MachineCode::from_bytes(bytes);
    let end = |r: Result<tandem_oracle::exec::outcome::Outcome, Finding>| r.unwrap().end;
    let loads = 3 * emu::FLUSH_EVERY_PROGRAMS;
    for i in 0..loads {
        assert_eq!(end(run(&mut emu, &constant(i), &f, &inp)), End::Return(Value::I32(i as i32)), "load {i}");
        assert_eq!(end(run(&mut emu, &constant(i + 1), &f, &inp)), End::Return(Value::I32(i as i32 + 1)), "load {i}");
        let o = run(&mut emu, &after_call(i), &f, &inp).unwrap();
        assert_eq!((o.end, o.trace.len()), (End::Return(Value::I32(i as i32)), 1), "load {i}");
        let o = run(&mut emu, &after_call(i + 1), &f, &inp).unwrap();
        assert_eq!((o.end, o.trace.len()), (End::Return(Value::I32(i as i32 + 1)), 1), "load {i}");
        assert_eq!(fault(run(&mut emu, &into_padding, &f, &inp)).1, CODE_BASE + 16, "load {i}");
        assert_eq!(end(run(&mut emu, &into_code, &f, &inp)), End::Return(Value::I32(9)), "load {i}");
    }
    assert_eq!(emu.runs(), 6 * loads as u64);
}

#[test]
fn after_a_large_program_a_fresh_instance_runs_the_next_ones_afresh() {
    let (f, mut emu, inp) = ret0();
    // A program longer than the bound (padded after its `ret`) that leaves garbage on
    // the stack and the heap.
    let mut large = asm(|a| {
        a.mov(dword_ptr(esp - 64), 0x1111_1111)?;
        a.mov(dword_ptr(HEAP_BASE), 0x2222_2222)?;
        a.mov(eax, 7)?;
        a.ret()
    });
    large.bytes.resize(emu::RENEW_AFTER_CODE_BYTES as usize + 1, 0x90);
    let read_heap = asm(|a| {
        a.mov(eax, dword_ptr(HEAP_BASE))?;
        a.ret()
    });
    let read_stack = asm(|a| {
        a.mov(eax, dword_ptr(esp - 64))?;
        a.ret()
    });
    // Where the large program had its padding.
    let old_code = asm(|a| {
        a.mov(eax, CODE_BASE + 40_000)?;
        a.jmp(eax)
    });
    let poison = u32::from_le_bytes([emu::STACK_POISON; 4]) as i32;
    for round in 0..2 {
        assert_eq!(run(&mut emu, &large, &f, &inp).unwrap().end, End::Return(Value::I32(7)));
        // The same program again is not new: the instance is kept.
        assert_eq!(run(&mut emu, &large, &f, &inp).unwrap().end, End::Return(Value::I32(7)));
        assert_eq!(emu.renewals(), round);
        assert_eq!(run(&mut emu, &read_heap, &f, &inp).unwrap().end, End::Return(Value::I32(0)));
        assert_eq!(emu.renewals(), round + 1);
        assert_eq!(run(&mut emu, &read_stack, &f, &inp).unwrap().end, End::Return(Value::I32(poison)));
        assert_eq!(fault(run(&mut emu, &old_code, &f, &inp)).0, FaultKind::OutsideCode);
        assert_eq!(emu.renewals(), round + 1);
    }
    assert_eq!(emu.runs(), 10);
    // A stepping instance is replaced by a stepping one.
    let mut stepping = Emulator::stepping().unwrap();
    run(&mut stepping, &large, &f, &inp).unwrap();
    assert_eq!(run(&mut stepping, &read_heap, &f, &inp).unwrap().end, End::Return(Value::I32(0)));
    assert_eq!(stepping.renewals(), 1);
    assert_eq!(stepping.take_steps().len(), 2);
}

#[test]
fn the_worker_emulator_is_created_once_per_thread() {
    let f = func(RET0);
    let code = asm(|a| {
        a.xor(eax, eax)?;
        a.ret()
    });
    let first = emu::with_worker_emulator(|e| run(e, &code, &f, &input(vec![])).unwrap().end).unwrap();
    assert_eq!(first, End::Return(Value::I32(0)));
    // The same instance: its run counter keeps counting.
    let runs = emu::with_worker_emulator(|e| {
        run(e, &code, &f, &input(vec![])).unwrap();
        e.runs()
    })
    .unwrap();
    assert_eq!(runs, 2);
    let nested = emu::with_worker_emulator(|_| emu::with_worker_emulator(|_| ()).map(|_| ())).unwrap();
    assert_eq!(nested, Err(emu::EmuError::WorkerBusy));
    // Another thread gets its own instance.
    let other = std::thread::spawn(|| emu::with_worker_emulator(|e| e.runs()).unwrap()).join().unwrap();
    assert_eq!(other, 0);
}

/// The translation buffer's place (`emu::map_near_code`): above 4 GiB, where the native
/// runner allows a mapping, and near enough to this executable's code (Unicorn's helpers
/// are linked into it) that every call from the buffer to the code is a 32-bit
/// displacement; writable and executable, as Unicorn's buffer must be.
#[test]
fn translation_buffer_is_mapped_within_reach_of_the_code() {
    let len = emu::TCG_BUFFER_SIZE as usize;
    let p = emu::map_near_code(len).expect("room below the executable's code") as usize;
    let code = Emulator::new as *const () as usize;
    assert!(p >= 1 << 32, "{p:#x} is below 4 GiB");
    // The farthest pair: the buffer's first byte and the code's, or its last byte and
    // the code's; the executable's code is far smaller than the margin left.
    let farthest = code.abs_diff(p).max(code.abs_diff(p + len));
    assert!(farthest < (1 << 31) - (64 << 20), "buffer {p:#x} is {farthest:#x} bytes from the code at {code:#x}");
    // Read-write-execute: a `ret` written there returns when called.
    // SAFETY: the mapping is `len` bytes, readable, writable and executable, and used by
    // nothing else; the function it holds is one `ret`.
    unsafe {
        *(p as *mut u8) = 0xC3;
        let f: extern "C" fn() = std::mem::transmute(p);
        f();
        assert_eq!(libc::munmap(p as *mut libc::c_void, len), 0);
    }
}

/// Any other request is made as asked (`emu::mmap_for_unicorn`): a read-write mapping
/// with no address is read-write, where the kernel put it, not below the code.
#[test]
fn other_mappings_are_made_as_asked() {
    let len = 1 << 20;
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    // SAFETY: a new anonymous mapping, unmapped below.
    let p = unsafe { emu::mmap_for_unicorn(std::ptr::null_mut(), len, rw, flags, -1, 0) };
    assert_ne!(p, libc::MAP_FAILED);
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let line = maps
        .lines()
        .find(|l| {
            let (range, _) = l.split_once(' ').unwrap();
            let (a, b) = range.split_once('-').unwrap();
            let (a, b) = (usize::from_str_radix(a, 16).unwrap(), usize::from_str_radix(b, 16).unwrap());
            (a..b).contains(&(p as usize))
        })
        .expect("the mapping is listed");
    assert!(line.split_whitespace().nth(1).unwrap().starts_with("rw-"), "{line}");
    let code = Emulator::new as *const () as usize;
    let below = (code & !((2 << 20) - 1)).saturating_sub(1 << 30)..code;
    assert!(!below.contains(&(p as usize)), "{p:?} was placed below the code at {code:#x}: {line}");
    // SAFETY: the mapping made above.
    unsafe {
        *(p as *mut u8) = 1;
        assert_eq!(libc::munmap(p, len), 0);
    }
}

/// The CPU's segments are flat (`emu::load_flat_stack_segment`): the stack is 32-bit
/// (a push below 64 KiB of the stack's top would fault with a 16-bit one), the same
/// bytes are seen through `ss`, `ds` and `es`, `ss` reads as the flat descriptor's
/// selector, and the page that held the descriptor table is unmapped again.
#[test]
fn segments_are_flat_and_the_descriptor_table_is_gone() {
    let f = func("function %f() -> i32 {\nb0:\n    ret 0\n}\n");
    let mut emu = Emulator::new().unwrap();
    let inp = input(vec![]);
    let through_segments = asm(|a| {
        a.push(0x1234_5678)?;
        a.mov(eax, dword_ptr(esp).ss())?;
        a.add(eax, dword_ptr(esp).ds())?;
        a.add(eax, dword_ptr(esp).es())?;
        a.pop(ecx)?;
        a.add(eax, ecx)?;
        a.ret()
    });
    let o = run(&mut emu, &through_segments, &f, &inp).unwrap();
    assert_eq!(o.end, End::Return(Value::I32(0x1234_5678u32.wrapping_mul(4) as i32)));
    let selector = asm(|a| {
        a.xor(eax, eax)?;
        a.mov(ax, ss)?;
        a.ret()
    });
    assert_eq!(run(&mut emu, &selector, &f, &inp).unwrap().end, End::Return(Value::I32(8)));
    let null_page = asm(|a| {
        a.mov(eax, dword_ptr(0))?;
        a.ret()
    });
    let (kind, _, address, _) = fault(run(&mut emu, &null_page, &f, &inp));
    assert_eq!((kind, address), (FaultKind::ReadUnmapped, Some(0)));
}
