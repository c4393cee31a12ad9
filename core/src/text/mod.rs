//! The text format of the HIR: one printer and one parser that round-trip
//! (`print(parse(print(m))) == print(m)`). See [`printer`] for the layout and
//! [`parser`] for name resolution. Comments start with `;`.

pub mod lexer;
pub mod parser;
pub mod printer;

use crate::ir::{Block, Expr};
use std::collections::HashMap;
use std::fmt;

pub use parser::parse_module;

/// A parse error with its 1-based line and column.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ParseError {
    pub line: u32,
    pub col: u32,
    pub message: String,
}

impl ParseError {
    pub fn new(line: u32, col: u32, message: String) -> ParseError {
        ParseError { line, col, message }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Where parsed entities came from, keyed by (function index, entity), so that verifier
/// errors on parsed input can name a line and column.
#[derive(Clone, Default, Debug)]
pub struct SourceMap {
    pub exprs: HashMap<(usize, Expr), (u32, u32)>,
    pub blocks: HashMap<(usize, Block), (u32, u32)>,
    /// Where each function's `function` keyword is.
    pub functions: Vec<(u32, u32)>,
    /// Where each helper declaration is.
    pub helpers: Vec<(u32, u32)>,
}

impl SourceMap {
    /// The best source position for a verifier error's location.
    pub fn position(&self, loc: &crate::verify::Location) -> (u32, u32) {
        if let Some(h) = loc.helper {
            return self.helpers.get(h).copied().unwrap_or((1, 1));
        }
        let Some((fi, _)) = &loc.function else { return (1, 1) };
        if let Some((e, _)) = &loc.stmt {
            if let Some(p) = self.exprs.get(&(*fi, *e)) {
                return *p;
            }
        }
        if let Some(b) = loc.block {
            if let Some(p) = self.blocks.get(&(*fi, b)) {
                return *p;
            }
        }
        self.functions.get(*fi).copied().unwrap_or((1, 1))
    }
}
