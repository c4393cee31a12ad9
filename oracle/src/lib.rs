//! `tandem-oracle`: everything that judges the pipeline.
//!
//! * [`outcome`] — the observable outcome of a run and precise diffs between outcomes;
//! * [`runtime`] — the one implementation of each runtime helper;
//! * [`interp`] — the reference interpreter (HIR and SSA, with fuel);
//! * [`casefile`] — `.tir` case files: module + runs + expectations, print/parse;
//! * [`replay`] — runs case files and folders of them (`tandem run`);
//! * [`emu`] — the Unicorn runner for compiled x86-32 code;
//! * [`diff`] — the differential check, interpreter vs x86;
//! * [`bench`] — throughput measurements (`tandem bench`).

pub mod bench;
pub mod casefile;
pub mod diff;
pub mod emu;
pub mod interp;
pub mod outcome;
pub mod replay;
pub mod runtime;
