//! Measurements, not checks: throughput of the emulator and of the full check
//! ([`bench`], `tandem bench`) and how each stage's time grows with the size of a function
//! ([`scaling`], `tandem bench --scaling`), and the process's own resident memory
//! ([`memory`], in a campaign's progress line and summary), and latency histograms of a
//! fixed size ([`latency`]).
//!
//! May import: [`crate::judge`], [`crate::gen`], [`crate::exec`], `tandem_core`.

pub mod bench;
pub mod latency;
pub mod memory;
pub mod scaling;
