//! Tests of the native runner (compiled code on this machine's CPU in 32-bit mode) on
//! hand-written machine code: every case runs on the CPU and on Unicorn, and the
//! expected result is worked out by hand; the two machines must also agree with each
//! other. Where this machine cannot run 32-bit code the tests say so and check that the
//! default falls back to Unicorn with a notice.

use iced_x86::code_asm::*;
use tandem_core::abi::{MachineCode, RuntimeHelper, CODE_BASE, STACK_BASE};
use tandem_core::helpers::HelperKind;
use tandem_core::ir::{Function, TrapKind, HEAP_BASE};
use tandem_oracle::exec::emu::{Emulator, FaultKind, Finding};
use tandem_oracle::exec::interp::RunInput;
use tandem_oracle::exec::native::{self, Native};
use tandem_oracle::exec::outcome::{End, Event, Outcome, Value};
use tandem_oracle::exec::x86::{machine_differences, X86Mode, X86};

mod machine;
use machine::{asm, func, input};

const RET_I32: &str = "function %f() -> i32 {\nb0:\n    ret 0\n}\n";
const TWO_ARGS: &str = "function %f(i32 %a, i32 %b) -> i32 {\nb0:\n    ret 0\n}\n";

/// Runs `code` on the CPU and on Unicorn; asserts they agree and returns the CPU's run.
fn both(code: &MachineCode, f: &Function, inp: &RunInput) -> Option<Result<Outcome, Finding>> {
    if let Err(why) = native::available() {
        eprintln!("skipping the CPU: {why}");
        return None;
    }
    let mut cpu = Native::new().expect("the native runner");
    let mut emu = Emulator::new().expect("the emulator");
    let n = cpu.run_with_budget(code, f, inp, 1_000_000).expect("the CPU runs");
    let u = emu.run_with_budget(code, f, inp, 1_000_000).expect("Unicorn runs");
    let d = machine_differences(&u, &n);
    assert!(d.is_empty(), "Unicorn and the CPU disagree: {d:?}\nunicorn {u:?}\ncpu {n:?}");
    Some(n)
}

fn end(r: Option<Result<Outcome, Finding>>) -> Option<End> {
    r.map(|r| r.unwrap_or_else(|f| panic!("expected an outcome, got {f}")).end)
}

#[test]
fn returns_and_adds_arguments() {
    let f = func(TWO_ARGS);
    let code = asm(|a| {
        a.mov(eax, dword_ptr(esp + 4))?;
        a.add(eax, dword_ptr(esp + 8))?;
        a.ret()
    });
    // 0x7fffffff + 1 wraps to i32::MIN.
    let got = end(both(&code, &f, &input(vec![Value::I32(i32::MAX), Value::I32(1)])));
    if let Some(e) = got {
        assert_eq!(e, End::Return(Value::I32(i32::MIN)));
    }
}

#[test]
fn divide_error_and_check_trap_are_the_ir_traps() {
    let f = func(TWO_ARGS);
    let div = asm(|a| {
        a.mov(eax, dword_ptr(esp + 4))?;
        a.cdq()?;
        a.idiv(dword_ptr(esp + 8))?;
        a.ret()
    });
    if let Some(e) = end(both(&div, &f, &input(vec![Value::I32(i32::MIN), Value::I32(-1)]))) {
        assert_eq!(e, End::Trap(TrapKind::DivideError));
    }
    if let Some(e) = end(both(&div, &f, &input(vec![Value::I32(-7), Value::I32(2)]))) {
        assert_eq!(e, End::Return(Value::I32(-3)));
    }
    let check = asm(|a| {
        a.mov(dword_ptr(HEAP_BASE), 5)?;
        a.mov(eax, 77)?;
        a.int(0x41)?;
        a.ret()
    });
    let r = both(&check, &func(RET_I32), &input(vec![]));
    if let Some(r) = r {
        let o = r.unwrap();
        assert_eq!(o.end, End::Trap(TrapKind::Check(77)));
        assert_eq!(o.heap[0], 5, "the store before the trap is visible");
    }
}

#[test]
fn helper_calls_run_the_one_implementation_and_poison_registers() {
    let f = func(RET_I32);
    let log = RuntimeHelper::Ir(HelperKind::Log).address() as u64;
    let code = asm(|a| {
        a.push(ebx)?;
        a.push(456)?;
        a.push(123)?;
        a.call(log)?;
        a.add(esp, 8)?;
        // ecx must be poison after the call: return it.
        a.mov(eax, ecx)?;
        a.pop(ebx)?;
        a.ret()
    });
    if let Some(r) = both(&code, &f, &input(vec![])) {
        let o = r.unwrap();
        assert_eq!(o.trace, vec![Event { helper: HelperKind::Log, args: vec![Value::I32(123), Value::I32(456)] }]);
        assert_eq!(o.end, End::Return(Value::I32(0xBAD0_ECCCu32 as i32)));
    }
}

#[test]
fn faults_are_named_like_unicorns() {
    let f = func(RET_I32);
    let write_code = asm(|a| {
        a.mov(dword_ptr(CODE_BASE), 1)?;
        a.ret()
    });
    match both(&write_code, &f, &input(vec![])) {
        Some(Err(Finding::Fault { kind, pc, address, .. })) => {
            assert_eq!((kind, pc, address), (FaultKind::WriteProtected, CODE_BASE, Some(CODE_BASE)));
        }
        None => {}
        other => panic!("expected a fault, got {other:?}"),
    }
    let read_nothing = asm(|a| {
        a.mov(eax, dword_ptr(0x0900_0000u32))?;
        a.ret()
    });
    match both(&read_nothing, &f, &input(vec![])) {
        Some(Err(Finding::Fault { kind, address, .. })) => {
            assert_eq!((kind, address), (FaultKind::ReadUnmapped, Some(0x0900_0000)));
        }
        None => {}
        other => panic!("expected a fault, got {other:?}"),
    }
    let jump_away = asm(|a| {
        a.mov(eax, 0x0900_0000)?;
        a.jmp(eax)
    });
    match both(&jump_away, &f, &input(vec![])) {
        Some(Err(Finding::Fault { kind, pc, .. })) => assert_eq!((kind, pc), (FaultKind::FetchUnmapped, 0x0900_0000)),
        None => {}
        other => panic!("expected a fault, got {other:?}"),
    }
    let clobber = asm(|a| {
        a.mov(ebx, 1)?;
        a.ret()
    });
    match both(&clobber, &f, &input(vec![])) {
        Some(Err(Finding::CalleeSavedClobbered { register, found, .. })) => assert_eq!((register, found), ("ebx", 1)),
        None => {}
        other => panic!("expected a clobber finding, got {other:?}"),
    }
}

#[test]
fn the_deep_stack_is_mapped_on_touch_and_poisoned_afresh() {
    let f = func(RET_I32);
    // Reads a deep stack word (poison), then overwrites it: the next run reads poison again.
    let code = asm(|a| {
        a.mov(eax, dword_ptr(STACK_BASE + 0x100))?;
        a.mov(dword_ptr(STACK_BASE + 0x100), 0x1234)?;
        a.ret()
    });
    for _ in 0..2 {
        if let Some(e) = end(both(&code, &f, &input(vec![]))) {
            assert_eq!(e, End::Return(Value::I32(0x5A5A_5A5A)));
        }
    }
}

#[test]
fn a_loop_that_never_ends_is_a_timeout() {
    if native::available().is_err() {
        return;
    }
    let f = func(RET_I32);
    let code = asm(|a| {
        let mut top = a.create_label();
        a.set_label(&mut top)?;
        a.jmp(top)
    });
    let mut cpu = Native::new().unwrap();
    let r = cpu.run_with_budget(&code, &f, &input(vec![]), 1000).unwrap();
    assert!(matches!(r, Err(Finding::CpuTimeout { .. })), "{r:?}");
    // The machine is usable afterwards.
    let ok = asm(|a| {
        a.mov(eax, 9)?;
        a.ret()
    });
    assert_eq!(cpu.run_with_budget(&ok, &f, &input(vec![]), 1000).unwrap().unwrap().end, End::Return(Value::I32(9)));
}

#[test]
fn the_default_is_both_where_the_cpu_runs_32_bit_code() {
    let x = X86::new(None).unwrap();
    match native::available() {
        Ok(()) => assert_eq!((x.mode(), x.notice()), (X86Mode::Both, None)),
        Err(_) => {
            assert_eq!(x.mode(), X86Mode::Unicorn);
            assert!(x.notice().unwrap().contains("Unicorn only"));
        }
    }
}
