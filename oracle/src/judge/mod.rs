//! Judging runs: the differential checks that compare every stage with the reference
//! interpreter. The interpreter vs the x86 code ([`diff`]), the interpreter after every IR
//! pass ([`passcheck`]), the anticipability checker of `ssapre`'s trap rule ([`anticip`]),
//! and the full check of one run through every stage ([`check`]).
//!
//! May import: [`crate::exec`], [`crate::cases`], [`crate::gen`] (the fuzz test case type),
//! `tandem_core`. Never the drivers above it (`campaign`, the command line).

pub mod anticip;
pub mod check;
pub mod diff;
pub mod passcheck;
