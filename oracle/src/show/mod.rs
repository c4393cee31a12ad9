//! Seeing the bug: HTML pages and pictures. [`explain`] writes one self-contained page per
//! finding (`tandem explain`), [`index`] the campaign's page (`index.html`, written by
//! `tandem fuzz` when a campaign ends), [`dot`] draws control-flow graphs
//! (`tandem compile --emit dot`, and the pages' SVG pictures through Graphviz), and
//! [`linediff`], [`html`] and [`legend`] are their parts: the line diff of a pass's input
//! and output, the page shell, and the readable names of the pass counters.
//!
//! May import: [`crate::campaign`], [`crate::judge`], [`crate::smt`], [`crate::cases`],
//! [`crate::exec`], [`crate::gen`] (tests), `tandem_core`. Only the command line imports
//! this room; the campaign never does (the command line writes the pages after it).

pub mod dot;
pub mod explain;
pub mod html;
pub mod index;
pub mod legend;
pub mod linediff;
