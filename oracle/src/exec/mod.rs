//! Running programs: everything that executes a function and says how it ended. The
//! observable outcome of a run ([`outcome`]), the one implementation of each runtime helper
//! ([`runtime`]), the reference interpreter ([`interp`]), and the two runners for compiled
//! x86-32 code, Unicorn ([`emu`]) and the real CPU ([`native`]), with what they share
//! ([`machine`]) and the two side by side ([`x86`]).
//!
//! May import: `tandem_core` only. Nothing here judges a run or knows a campaign.

pub mod emu;
pub mod interp;
pub mod machine;
pub mod native;
pub mod outcome;
pub mod runtime;
pub mod x86;
