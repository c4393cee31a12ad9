//! The value types, shared by the IR ([`crate::ir`]) and the helper set
//! ([`crate::helpers`]). They live in a module of their own, below both, so that imports
//! run one way: `ir` depends on `helpers` (a call names its helper, a module declares its
//! helpers' effects), `helpers` depends only on this module (a helper's signature).

use std::fmt;

/// A value type.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Type {
    I32,
    I64,
}

impl Type {
    /// Width in bits.
    pub fn bits(self) -> u32 {
        match self {
            Type::I32 => 32,
            Type::I64 => 64,
        }
    }

    /// The name it prints as (`i32`, `i64`).
    pub fn name(self) -> &'static str {
        match self {
            Type::I32 => "i32",
            Type::I64 => "i64",
        }
    }

    /// Normalizes a raw integer to this type's canonical `i64` form (sign-extended).
    pub fn normalize(self, v: i64) -> i64 {
        match self {
            Type::I32 => v as i32 as i64,
            Type::I64 => v,
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

