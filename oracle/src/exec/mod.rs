//! Running programs: everything that executes a function and says how it ended. The
//! observable outcome of a run ([`outcome`]), the one implementation of each runtime helper
//! ([`runtime`]), the reference interpreter ([`interp`]) and the Unicorn runner for compiled
//! x86-32 code ([`emu`]).
//!
//! May import: `tandem_core` only. Nothing here judges a run or knows a campaign.

pub mod emu;
pub mod interp;
pub mod outcome;
pub mod runtime;
