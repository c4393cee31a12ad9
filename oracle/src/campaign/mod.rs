//! Driving many programs through the judges: fuzzing campaigns over generated seeds
//! ([`driver`], `tandem fuzz`), replay of case files and folders ([`replay`], `tandem run`),
//! the findings and their signatures that both share ([`findings`]), SIGINT and SIGTERM
//! as a request to stop ([`interrupt`]), the reducer that
//! shrinks a finding while its signature holds ([`reduce`], `tandem reduce`), and the
//! machine-readable reports ([`report`]: JSON and JUnit). A campaign's validator answers
//! are counted in fixed-size histograms ([`answers`]).
//!
//! May import: [`crate::judge`], [`crate::smt`], [`crate::measure`], [`crate::gen`], [`crate::cases`],
//! [`crate::exec`], `tandem_core`. Only the command line imports this room.

pub mod answers;
pub mod driver;
pub mod findings;
pub mod interrupt;
pub mod reduce;
pub mod replay;
pub mod report;

pub use driver::*;
pub use findings::{normalize_signature, problem_comments, signature, Finding, SignatureGroup};
