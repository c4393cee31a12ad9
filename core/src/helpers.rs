//! The fixed set of runtime helpers: names, signatures and effect summaries.
//!
//! The optimizer reasons about a call only through its [`Effects`]; the one Rust
//! implementation of each helper lives in the harness (`tandem_oracle::runtime`) and is
//! called by both the interpreter and the emulator's hook. A module declares the helpers
//! it calls (`helper @log(i32, i32) -> void effects(observable)`); the verifier checks
//! that each declaration matches this table exactly.
//!
//! What each helper does (the implementation must agree):
//!
//! | helper | signature | effect |
//! |---|---|---|
//! | `log` | `(i32, i32) -> void` | appends the event `@log(a, b)` to the trace |
//! | `log64` | `(i64) -> void` | appends `@log64(a)` |
//! | `cf_trace` | `() -> void` | the "read trace": appends `@cf_trace(v0, v1, ...)` with the value of every callframe variable |
//! | `cf_set` | `(i32, i32) -> void` | writes variable number `idx mod n` (unsigned) with `value` sign-extended to its type; nothing if the function has no callframe variables |
//! | `heap_rmw` | `(i32, i32) -> i32` | at `HEAP_BASE + (addr & (HEAP_SIZE - 4))` (4-aligned), adds `delta` to the 32-bit word and returns the old value |
//! | `mix` | `(i32, i32) -> i32` | pure: `rotl(a * 0x9E3779B1, 5) ^ b` |
//! | `mix64` | `(i64, i64) -> i64` | pure: `rotl(a * 0x9E3779B97F4A7C15, 17) ^ b` |

use crate::types::Type;
use std::fmt;

/// What a helper may do, as far as the optimizer is concerned.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Effects {
    /// May read any callframe variable.
    pub reads_callframe: bool,
    /// May write any callframe variable.
    pub writes_callframe: bool,
    /// May read the heap.
    pub reads_heap: bool,
    /// May write the heap.
    pub writes_heap: bool,
    /// Appends an event to the trace.
    pub observable: bool,
}

impl Effects {
    /// The flag names in text-format order.
    pub const NAMES: [&'static str; 5] =
        ["reads_callframe", "writes_callframe", "reads_heap", "writes_heap", "observable"];

    /// A pure helper has no effect and no event: it may be removed, duplicated or moved.
    pub fn is_pure(&self) -> bool {
        *self == Effects::default()
    }

    /// The flags in [`Effects::NAMES`] order.
    pub fn flags(&self) -> [bool; 5] {
        [
            self.reads_callframe,
            self.writes_callframe,
            self.reads_heap,
            self.writes_heap,
            self.observable,
        ]
    }

    /// Sets the flag called `name`; false if there is no such flag.
    pub fn set(&mut self, name: &str) -> bool {
        match name {
            "reads_callframe" => self.reads_callframe = true,
            "writes_callframe" => self.writes_callframe = true,
            "reads_heap" => self.reads_heap = true,
            "writes_heap" => self.writes_heap = true,
            "observable" => self.observable = true,
            _ => return false,
        }
        true
    }
}

impl fmt::Display for Effects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_pure() {
            return f.write_str("pure");
        }
        let names: Vec<&str> = Effects::NAMES
            .iter()
            .zip(self.flags())
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect();
        write!(f, "effects({})", names.join(", "))
    }
}

/// The helpers of the runtime.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum HelperKind {
    Log,
    Log64,
    CfTrace,
    CfSet,
    HeapRmw,
    Mix,
    Mix64,
}

impl HelperKind {
    pub const ALL: [HelperKind; 7] = [
        HelperKind::Log,
        HelperKind::Log64,
        HelperKind::CfTrace,
        HelperKind::CfSet,
        HelperKind::HeapRmw,
        HelperKind::Mix,
        HelperKind::Mix64,
    ];

    /// The name in the text format (without `@`).
    pub fn name(self) -> &'static str {
        match self {
            HelperKind::Log => "log",
            HelperKind::Log64 => "log64",
            HelperKind::CfTrace => "cf_trace",
            HelperKind::CfSet => "cf_set",
            HelperKind::HeapRmw => "heap_rmw",
            HelperKind::Mix => "mix",
            HelperKind::Mix64 => "mix64",
        }
    }

    /// Looks a helper up by name.
    pub fn from_name(name: &str) -> Option<HelperKind> {
        HelperKind::ALL.into_iter().find(|h| h.name() == name)
    }

    /// Parameter types and result type (`None`: no result).
    pub fn signature(self) -> (&'static [Type], Option<Type>) {
        use Type::*;
        match self {
            HelperKind::Log => (&[I32, I32], None),
            HelperKind::Log64 => (&[I64], None),
            HelperKind::CfTrace => (&[], None),
            HelperKind::CfSet => (&[I32, I32], None),
            HelperKind::HeapRmw => (&[I32, I32], Some(I32)),
            HelperKind::Mix => (&[I32, I32], Some(I32)),
            HelperKind::Mix64 => (&[I64, I64], Some(I64)),
        }
    }

    /// The effect summary the optimizer may rely on.
    pub fn effects(self) -> Effects {
        let none = Effects::default();
        match self {
            HelperKind::Log | HelperKind::Log64 => Effects { observable: true, ..none },
            HelperKind::CfTrace => Effects { reads_callframe: true, observable: true, ..none },
            HelperKind::CfSet => Effects { writes_callframe: true, ..none },
            HelperKind::HeapRmw => Effects { reads_heap: true, writes_heap: true, ..none },
            HelperKind::Mix | HelperKind::Mix64 => none,
        }
    }
}

/// The pure function `mix` computes; shared so that constant folding and the runtime agree.
pub fn mix(a: i32, b: i32) -> i32 {
    (a.wrapping_mul(0x9E37_79B1_u32 as i32)).rotate_left(5) ^ b
}

/// The pure function `mix64` computes.
pub fn mix64(a: i64, b: i64) -> i64 {
    (a.wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as i64)).rotate_left(17) ^ b
}

impl fmt::Display for HelperKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{}", self.name())
    }
}
