//! Case files: the `.tir` format (a module, its runs and their expectations), parsed with
//! located errors and printed in canonical layout ([`casefile`]). A finding, a corpus case
//! and a generated program are all case files.
//!
//! May import: [`crate::exec`] (inputs and outcomes), `tandem_core`.

pub mod casefile;
