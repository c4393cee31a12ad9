//! `tandem-oracle`: everything that judges the pipeline, in rooms by role. Imports run one
//! way, from the command line (`src/main.rs` and `src/cli/`, the binary) down to the IR:
//!
//! ```text
//! cli -> show -> campaign -> smt, measure -> judge, gen -> cases -> exec -> tandem_core
//! ```
//!
//! * [`exec`] — running programs: outcomes, the runtime helpers, the reference
//!   interpreter, the Unicorn runner;
//! * [`cases`] — `.tir` case files: module + runs + expectations, parse and print;
//! * [`gen`] — the program generator (`tandem gen`) and the fuzz test case type;
//! * [`judge`] — the differential checks: interpreter vs x86, the interpreter after every
//!   IR pass, the anticipability checker, the full check of one run;
//! * [`smt`] — the Z3 translation validator of every IR pass (`tandem verify`);
//! * [`measure`] — throughput and scaling measurements (`tandem bench`);
//! * [`campaign`] — the drivers: fuzzing campaigns (`tandem fuzz`), replay of case files
//!   (`tandem run`), findings and signatures, the reducer, JSON and JUnit reports;
//! * [`show`] — seeing the bug: a page per finding (`tandem explain`), the campaign's
//!   `index.html`, control-flow graphs as Graphviz dot and SVG.

pub mod campaign;
pub mod cases;
pub mod exec;
pub mod gen;
pub mod judge;
pub mod measure;
pub mod show;
pub mod smt;
