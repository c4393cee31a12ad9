//! `tandem-core`: the pipeline under test.
//!
//! It owns the value types ([`types`]), the HIR ([`ir`]), its text format ([`text`]), the helper set's effect
//! summaries ([`helpers`]), the verifier ([`verify`]), the IR-level passes with their
//! analyses and pass manager ([`passes`]) and the x86-32 backend ([`backend`]) that
//! compiles a function for the environment of [`abi`]. It knows nothing of the harness:
//! the harness observes it only through its public types and the pass manager's hooks.

pub mod abi;
pub mod backend;
pub mod hash;
pub mod helpers;
pub mod passes;
pub mod ir;
pub mod text;
pub mod types;
pub mod verify;
