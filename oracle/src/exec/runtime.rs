//! The one Rust implementation of each runtime helper (see `tandem_core::helpers` for
//! the table of what each does and its effect summary). The interpreter and the
//! emulator's hook both call [`call_helper`] through the [`HelperEnv`] view of their own
//! state, so the two oracles cannot disagree on what a helper does.

use crate::exec::outcome::{Event, Value};
use tandem_core::helpers::{self, HelperKind};
use tandem_core::ir::{HEAP_BASE, HEAP_SIZE};

/// The machine state a helper may touch.
pub trait HelperEnv {
    /// Reads the 32-bit little-endian word at an absolute address inside the heap.
    fn heap_read32(&mut self, addr: u32) -> u32;
    /// Writes the 32-bit little-endian word at an absolute address inside the heap.
    fn heap_write32(&mut self, addr: u32, value: u32);
    /// The number of callframe variables.
    fn cf_count(&self) -> usize;
    /// Reads callframe variable `i` (`i < cf_count()`).
    fn cf_get(&mut self, i: usize) -> Value;
    /// Writes callframe variable `i`; `value` is truncated to the variable's type.
    fn cf_set(&mut self, i: usize, value: i64);
    /// Appends an event to the trace.
    fn record(&mut self, event: Event);
}

/// The heap word `heap_rmw` touches for a given address argument: always in bounds.
pub fn heap_rmw_address(addr: i32) -> u32 {
    HEAP_BASE + ((addr as u32) & (HEAP_SIZE - 4))
}

/// Calls `helper` on `args` (already type-checked by the verifier) and returns its result.
pub fn call_helper(helper: HelperKind, args: &[Value], env: &mut dyn HelperEnv) -> Option<Value> {
    let a = |i: usize| args[i].as_i64();
    match helper {
        HelperKind::Log | HelperKind::Log64 => {
            env.record(Event { helper, args: args.to_vec() });
            None
        }
        HelperKind::CfTrace => {
            let vals = (0..env.cf_count()).map(|i| env.cf_get(i)).collect();
            env.record(Event { helper, args: vals });
            None
        }
        HelperKind::CfSet => {
            let n = env.cf_count();
            if n > 0 {
                let idx = (a(0) as u32 as usize) % n;
                env.cf_set(idx, a(1));
            }
            None
        }
        HelperKind::HeapRmw => {
            let addr = heap_rmw_address(a(0) as i32);
            let old = env.heap_read32(addr);
            env.heap_write32(addr, old.wrapping_add(a(1) as u32));
            Some(Value::I32(old as i32))
        }
        HelperKind::Mix => Some(Value::I32(helpers::mix(a(0) as i32, a(1) as i32))),
        HelperKind::Mix64 => Some(Value::I64(helpers::mix64(a(0), a(1)))),
    }
}
