//! `tandem-oracle`: everything that judges the pipeline.
//!
//! * [`outcome`] — the observable outcome of a run and precise diffs between outcomes;
//! * [`runtime`] — the one implementation of each runtime helper;
//! * [`interp`] — the reference interpreter (HIR and SSA, with fuel);
//! * [`passcheck`] — the interpreter after every IR pass, against the reference;
//! * [`anticip`] — the anticipability checker of `ssapre`'s trap rule (Tristan–Leroy);
//! * [`casefile`] — `.tir` case files: module + runs + expectations, print/parse;
//! * [`replay`] — runs case files and folders of them (`tandem run`);
//! * [`gen`] — the program generator (`tandem gen`) and the fuzz target's check.
//! * [`emu`] — the Unicorn runner for compiled x86-32 code;
//! * [`diff`] — the differential check, interpreter vs x86;
//! * [`check`] — the full check of one run: reference, every IR pass, x86 without and with
//!   the passes;
//! * [`campaign`] — fuzzing campaigns over generated seeds (`tandem fuzz`), findings as
//!   case files;
//! * [`bench`] — throughput measurements (`tandem bench`);
//! * [`scaling`] — how each stage's time grows with function size (`tandem bench --scaling`).

pub mod anticip;
pub mod bench;
pub mod campaign;
pub mod casefile;
pub mod check;
pub mod gen;
pub mod diff;
pub mod emu;
pub mod interp;
pub mod outcome;
pub mod passcheck;
pub mod replay;
pub mod runtime;
pub mod scaling;
