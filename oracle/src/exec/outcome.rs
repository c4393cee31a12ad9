//! The observable outcome of a run (`DESIGN.md`): how it ended, the trace, the final heap
//! and the final callframe. Two runs agree when all four are equal; [`Outcome::diff`]
//! names every difference precisely. A run the interpreter finds invalid (fuel exhausted,
//! heap access out of bounds) has no outcome and is never compared.

use std::fmt;
use tandem_core::helpers::HelperKind;
use tandem_core::ir::{TrapKind, Type, HEAP_BASE};

/// A typed value. Printed as an IR constant: `5`, `-1:i64`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Value {
    I32(i32),
    I64(i64),
}

impl Value {
    /// The value of type `ty` whose canonical (sign-extended) form is `v`.
    pub fn new(ty: Type, v: i64) -> Value {
        match ty {
            Type::I32 => Value::I32(v as i32),
            Type::I64 => Value::I64(v),
        }
    }

    /// Zero of a type.
    pub fn zero(ty: Type) -> Value {
        Value::new(ty, 0)
    }

    pub fn ty(self) -> Type {
        match self {
            Value::I32(_) => Type::I32,
            Value::I64(_) => Type::I64,
        }
    }

    /// The canonical `i64` form (an `i32` sign-extended).
    pub fn as_i64(self) -> i64 {
        match self {
            Value::I32(v) => v as i64,
            Value::I64(v) => v,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::I32(v) => write!(f, "{v}"),
            Value::I64(v) => write!(f, "{v}:i64"),
        }
    }
}

/// One trace event: an observable helper and its arguments (for `cf_trace`, the
/// callframe values it read).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Event {
    pub helper: HelperKind,
    pub args: Vec<Value>,
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let args: Vec<String> = self.args.iter().map(|a| a.to_string()).collect();
        write!(f, "{}({})", self.helper, args.join(", "))
    }
}

/// How a run ended.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum End {
    Return(Value),
    Trap(TrapKind),
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            End::Return(v) => write!(f, "return {v}"),
            End::Trap(k) => write!(f, "trap {k}"),
        }
    }
}

/// Why a run has no outcome.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Invalid {
    /// The run used up its fuel (it may not terminate).
    FuelExhausted,
    /// A heap access touched bytes outside the heap.
    OutOfBounds { addr: u32, bytes: u32 },
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Invalid::FuelExhausted => f.write_str("invalid fuel_exhausted"),
            Invalid::OutOfBounds { addr, bytes } => {
                write!(f, "invalid out_of_bounds {addr:#x} {bytes}")
            }
        }
    }
}

/// The observable outcome of a run.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Outcome {
    pub end: End,
    pub trace: Vec<Event>,
    /// The whole heap, `HEAP_SIZE` bytes starting at `HEAP_BASE`.
    pub heap: Vec<u8>,
    /// The callframe variables in declaration order.
    pub callframe: Vec<Value>,
}

/// Bytes shown per heap row.
pub const HEAP_ROW: usize = 16;

impl Outcome {
    /// The heap rows that hold a non-zero byte: (absolute address, 16 bytes).
    pub fn heap_rows(&self) -> Vec<(u32, &[u8])> {
        self.heap
            .chunks(HEAP_ROW)
            .enumerate()
            .filter(|(_, c)| c.iter().any(|&b| b != 0))
            .map(|(i, c)| (HEAP_BASE + (i * HEAP_ROW) as u32, c))
            .collect()
    }

    /// The heap row at absolute address `addr` (a row's start); empty outside the heap.
    pub fn heap_row(&self, addr: u32) -> &[u8] {
        let start = addr.wrapping_sub(HEAP_BASE) as usize;
        self.heap.get(start..start + HEAP_ROW).unwrap_or(&[])
    }

    /// The addresses of the heap rows that hold a non-zero byte in `self` or in `other`,
    /// ascending, each once: the rows a side-by-side view of the two shows.
    pub fn heap_rows_of_either(&self, other: &Outcome) -> Vec<u32> {
        let mut addrs: Vec<u32> = self.heap_rows().into_iter().chain(other.heap_rows()).map(|(a, _)| a).collect();
        addrs.sort_unstable();
        addrs.dedup();
        addrs
    }

    /// Every difference between `self` (expected) and `other` (actual), one per line;
    /// empty when the outcomes agree.
    pub fn diff(&self, other: &Outcome) -> Vec<String> {
        let mut d = vec![];
        if self.end != other.end {
            d.push(format!("end: expected {}, got {}", self.end, other.end));
        }
        d.extend(first_trace_difference(&self.trace, &other.trace));
        if self.trace.len() != other.trace.len() {
            d.push(format!("trace length: expected {}, got {}", self.trace.len(), other.trace.len()));
        }
        // Heaps are compared as a whole first (one `memcmp`), byte by byte only to name
        // the ranges that differ: almost every comparison is of equal heaps.
        let mut i = if self.heap == other.heap { self.heap.len() } else { 0 };
        while i < self.heap.len().min(other.heap.len()) {
            if self.heap[i] != other.heap[i] {
                let start = i;
                while i < self.heap.len() && self.heap[i] != other.heap[i] {
                    i += 1;
                }
                let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" ");
                d.push(format!(
                    "heap {:#x}..{:#x}: expected {}, got {}",
                    HEAP_BASE + start as u32,
                    HEAP_BASE + i as u32,
                    hex(&self.heap[start..i]),
                    hex(&other.heap[start..i])
                ));
            } else {
                i += 1;
            }
        }
        for (k, (a, b)) in self.callframe.iter().zip(&other.callframe).enumerate() {
            if a != b {
                d.push(format!("callframe slot {k}: expected {a}, got {b}"));
            }
        }
        if self.callframe.len() != other.callframe.len() {
            d.push("callframe sizes differ".to_string());
        }
        d
    }
}

/// The first event where trace `got` differs from trace `expected` (a missing event
/// shown as `nothing`), as [`Outcome::diff`] prints it; `None` when one is a prefix of the
/// other and as long.
pub fn first_trace_difference(expected: &[Event], got: &[Event]) -> Option<String> {
    let show = |e: Option<&Event>| e.map_or("nothing".to_string(), |e| e.to_string());
    (0..expected.len().max(got.len()))
        .find(|&i| expected.get(i) != got.get(i))
        .map(|i| format!("trace event {i}: expected {}, got {}", show(expected.get(i)), show(got.get(i))))
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.end)?;
        for e in &self.trace {
            writeln!(f, "trace {e}")?;
        }
        for (addr, row) in self.heap_rows() {
            let hex: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
            writeln!(f, "heap {addr:#010x}: {}", hex.join(" "))?;
        }
        let cf: Vec<String> = self.callframe.iter().map(|v| v.to_string()).collect();
        writeln!(f, "callframe [{}]", cf.join(", "))
    }
}
