//! `tandem-core`: the pipeline under test.
//!
//! It owns the HIR ([`ir`]), its text format ([`text`]), the helper set's effect
//! summaries ([`helpers`]) and the verifier ([`verify`]). It knows nothing of the
//! harness: the harness observes it only through its public types and the pass
//! manager's hooks.

pub mod abi;
pub mod backend;
pub mod helpers;
pub mod ir;
pub mod text;
pub mod verify;
