//! Case files (`.tir`): a self-contained test case in the style of Cranelift's filetests.
//!
//! A case file is a module in the text format plus runs written as `;` directive lines:
//!
//! ```text
//! ; run: %f(1, 2:i64)                 entry function and arguments
//! ; heap: 0x00100000: 01 02 03        initial heap bytes (any number of lines)
//! ; cf: @x = 5, @y = -1:i64           initial callframe values (others start at 0)
//! ; fuel: 1000                        optional; default 1000000
//! ; expect: return 3                  or `trap divide_error`, `trap check(7)`,
//! ;                                   `invalid fuel_exhausted`, `invalid out_of_bounds ADDR BYTES`
//! ; trace: @log(1, 2)                 one line per trace event, in order
//! ; heap-out: 0x00100000: 01 ...      every non-zero 16-byte row of the final heap
//! ; cf-out: @x = 5, @y = -1:i64       the final callframe
//! ```
//!
//! The lines after `; expect:` state the whole outcome: a heap row not listed must be
//! zero. Other comment lines and blank lines are kept where they stand, so a canonical
//! file (module in the printer's layout) prints back byte for byte; see [`CaseFile::print`].

use crate::exec::interp::{RunInput, DEFAULT_FUEL};
use crate::exec::outcome::{End, Event, Invalid, Outcome, Value, HEAP_ROW};
use std::fmt::Write;
use tandem_core::helpers::HelperKind;
use tandem_core::ir::{Function, Module, TrapKind, Type, HEAP_BASE, HEAP_SIZE};
use tandem_core::text::lexer::{lex, Token, TokenKind};
use tandem_core::text::{parse_module, ParseError, SourceMap};

/// A parsed case file.
#[derive(Clone, Debug)]
pub struct CaseFile {
    pub module: Module,
    pub source_map: SourceMap,
    pub runs: Vec<Run>,
    /// Lines that are not module code, each placed before a module line by index
    /// ([`AFTER_MODULE`]: after the last one).
    trivia: Vec<(usize, Trivia)>,
    /// Trailing comments (with the whitespace before them) of module lines.
    trailing: Vec<(usize, String)>,
}

/// The place of trivia that follows the whole module, however many lines it prints.
const AFTER_MODULE: usize = usize::MAX;

#[derive(Clone, Debug)]
enum Trivia {
    Line(String),
    Run(usize),
}

/// One run of a case file.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Run {
    /// Line of the `; run:` directive.
    pub line: u32,
    pub entry: String,
    pub args: Vec<Value>,
    pub heap: Vec<(u32, Vec<u8>)>,
    pub callframe: Vec<(String, Value)>,
    pub fuel: Option<u64>,
    pub expect: Option<Expected>,
}

/// The expectation of a run.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Expected {
    Outcome(ExpectedOutcome),
    Invalid(Invalid),
}

/// An expected outcome as written: callframe values by name.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ExpectedOutcome {
    pub end: End,
    pub trace: Vec<Event>,
    pub heap: Vec<u8>,
    pub callframe: Vec<(String, Value)>,
}

/// What a run actually did: the shape of an expectation.
pub type Actual = Result<Outcome, Invalid>;

impl Run {
    /// The interpreter inputs of this run against function `f`. Also checks that the
    /// callframe lines of the run (`; cf:` and `; cf-out:`) name each variable at most
    /// once and only variables `f` has, so that an expectation cannot pass while it states
    /// something false about a variable that does not exist.
    pub fn input(&self, f: &Function) -> Result<RunInput, String> {
        if self.args.len() != f.params.len() {
            return Err(format!("%{} takes {} argument(s), given {}", f.name, f.params.len(), self.args.len()));
        }
        for (i, (&p, a)) in f.params.iter().zip(&self.args).enumerate() {
            if f.locals[p].ty != a.ty() {
                return Err(format!("argument {} of %{} is {}, given {a}", i + 1, f.name, f.locals[p].ty));
            }
        }
        if let Some(Expected::Outcome(o)) = &self.expect {
            for (i, (n, v)) in o.callframe.iter().enumerate() {
                let Some(d) = f.cfvars.values().find(|d| &d.name == n) else {
                    return Err(format!("`; cf-out:` names @{n}, but %{} has no callframe variable @{n}", f.name));
                };
                if d.ty != v.ty() {
                    return Err(format!("`; cf-out:` gives @{n} the value {v}, but @{n} is {}", d.ty));
                }
                if o.callframe[..i].iter().any(|(m, _)| m == n) {
                    return Err(format!("`; cf-out:` names @{n} twice"));
                }
            }
        }
        for (i, (n, _)) in self.callframe.iter().enumerate() {
            if self.callframe[..i].iter().any(|(m, _)| m == n) {
                return Err(format!("`; cf:` names @{n} twice"));
            }
        }
        let mut cf = vec![];
        for (n, v) in &self.callframe {
            let var = f
                .cfvars
                .iter()
                .find(|(_, d)| &d.name == n)
                .map(|(v, _)| v)
                .ok_or_else(|| format!("%{} has no callframe variable @{n}", f.name))?;
            if f.cfvars[var].ty != v.ty() {
                return Err(format!("@{n} is {}, given {v}", f.cfvars[var].ty));
            }
            cf.push((var, *v));
        }
        Ok(RunInput {
            args: self.args.clone(),
            heap: self.heap.clone(),
            callframe: cf,
            fuel: self.fuel.unwrap_or(DEFAULT_FUEL),
        })
    }

    /// The expectation that `actual` satisfies exactly, for blessing.
    pub fn expectation_of(f: &Function, actual: &Actual) -> Expected {
        match actual {
            Err(i) => Expected::Invalid(*i),
            Ok(o) => Expected::Outcome(ExpectedOutcome {
                end: o.end,
                trace: o.trace.clone(),
                heap: o.heap.clone(),
                callframe: f.cfvars.values().map(|d| d.name.clone()).zip(o.callframe.iter().copied()).collect(),
            }),
        }
    }

    /// The differences between the expectation and `actual`; empty when they agree.
    pub fn check(&self, f: &Function, actual: &Actual) -> Vec<String> {
        let Some(expect) = &self.expect else {
            return vec!["the run has no `; expect:` line (bless it with --bless)".to_string()];
        };
        match (expect, actual) {
            (Expected::Invalid(a), Err(b)) if a == b => vec![],
            (Expected::Invalid(a), Err(b)) => vec![format!("expected {a}, got {b}")],
            (Expected::Invalid(a), Ok(o)) => vec![format!("expected {a}, got {}", o.end)],
            (Expected::Outcome(e), Err(b)) => vec![format!("expected {}, got {b}", e.end)],
            (Expected::Outcome(e), Ok(o)) => {
                let mut cf = vec![];
                let mut errs = vec![];
                for d in f.cfvars.values() {
                    match e.callframe.iter().find(|(n, _)| *n == d.name) {
                        Some((_, v)) => cf.push(*v),
                        None => errs.push(format!("the expectation lacks callframe variable @{}", d.name)),
                    }
                }
                if !errs.is_empty() {
                    return errs;
                }
                let want = Outcome { end: e.end, trace: e.trace.clone(), heap: e.heap.clone(), callframe: cf };
                want.diff(o)
            }
        }
    }
}

/// An error in a case file, with its 1-based line and column.
pub type CaseError = ParseError;

const RUN_KEYS: [&str; 8] = ["run", "heap", "cf", "fuel", "expect", "trace", "heap-out", "cf-out"];

/// Splits `; key: value` into (key, value, column of value) when key is a run directive.
fn directive(line: &str) -> Option<(&str, &str, u32)> {
    let t = line.trim_start();
    let rest = t.strip_prefix(';')?.strip_prefix(' ')?;
    let colon = rest.find(':')?;
    let key = &rest[..colon];
    if !RUN_KEYS.contains(&key) {
        return None;
    }
    let value = rest[colon + 1..].strip_prefix(' ').unwrap_or(&rest[colon + 1..]);
    let col = (line.len() - value.len()) as u32 + 1;
    Some((key, value, col))
}

/// A line that looks like a directive (`; ` then a lower-case word and `:`) but names
/// none: a misspelt directive must not pass as a comment.
fn unknown_directive(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("; ")?;
    let word = &rest[..rest.find(':')?];
    let looks_like = word.starts_with(|c: char| c.is_ascii_lowercase())
        && word.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    (looks_like && !RUN_KEYS.contains(&word)).then_some(word)
}

/// Adds the directive `; key: value` (at line `ln`, column `col`; not `run`) to the run it
/// follows: an input (`heap`, `cf`, `fuel`) before the run's `; expect:` line
/// (`expecting`: it was seen), the expectation, or a part of the expected outcome.
fn add_to_run(run: &mut Run, key: &str, value: &str, ln: u32, col: u32, expecting: &mut bool) -> Result<(), ParseError> {
    let at = |c: u32, m: String| ParseError::new(ln, c, m);
    fn outcome<'r>(run: &'r mut Run, key: &str, ln: u32, col: u32) -> Result<&'r mut ExpectedOutcome, ParseError> {
        match &mut run.expect {
            Some(Expected::Outcome(o)) => Ok(o),
            _ => Err(ParseError::new(ln, col, format!("`; {key}:` must follow a `; expect:` line that returns or traps"))),
        }
    }
    match key {
        "heap" | "cf" | "fuel" if *expecting => {
            return Err(at(col, format!("`; {key}:` is an input and must come before `; expect:`")));
        }
        "heap" => run.heap.push(parse_heap_row(value, ln, col)?),
        "cf" => run.callframe.extend(parse_cf(value, ln, col)?),
        "fuel" => {
            run.fuel = Some(value.trim().parse().map_err(|_| at(col, format!("expected a fuel amount, found `{value}`")))?)
        }
        "expect" => {
            if run.expect.is_some() {
                return Err(at(col, "a run has one `; expect:` line".into()));
            }
            run.expect = Some(parse_expect(value, ln, col)?);
            *expecting = true;
        }
        "trace" => {
            let (name, args) = parse_call(value, ln, col)?;
            let helper = HelperKind::from_name(&name)
                .ok_or_else(|| at(col, format!("expected a helper name, found `@{name}`")))?;
            outcome(run, key, ln, col)?.trace.push(Event { helper, args });
        }
        "heap-out" => {
            let (addr, bytes) = parse_heap_row(value, ln, col)?;
            let o = outcome(run, key, ln, col)?;
            let off = (addr - HEAP_BASE) as usize;
            o.heap[off..off + bytes.len()].copy_from_slice(&bytes);
        }
        _ => {
            let cf = parse_cf(value, ln, col)?;
            outcome(run, key, ln, col)?.callframe.extend(cf);
        }
    }
    Ok(())
}

/// The error for a line that looks like a directive but names none.
fn unknown_directive_error(line: &str, word: &str, ln: u32) -> ParseError {
    let col = (line.len() - line.trim_start().len()) as u32 + 3;
    ParseError::new(
        ln,
        col,
        format!(
            "unknown directive `; {word}:` (the directives are {}); a comment must not start with a lower-case word and a colon",
            RUN_KEYS.map(|k| format!("`; {k}:`")).join(", ")
        ),
    )
}

impl CaseFile {
    /// Parses a case file.
    pub fn parse(src: &str) -> Result<CaseFile, CaseError> {
        let (module, source_map) = parse_module(src)?;
        let mut runs: Vec<Run> = vec![];
        let mut trivia = vec![];
        let mut trailing = vec![];
        let mut sig = 0usize;
        let mut in_run = false;
        let mut expecting = false;
        for (i, line) in src.lines().enumerate() {
            let ln = i as u32 + 1;
            let t = line.trim();
            if let Some((key, value, col)) = directive(line) {
                let at = |c: u32, m: String| ParseError::new(ln, c, m);
                if key == "run" {
                    let (entry, args) = parse_call(value, ln, col)?;
                    runs.push(Run { line: ln, entry, args, heap: vec![], callframe: vec![], fuel: None, expect: None });
                    trivia.push((sig, Trivia::Run(runs.len() - 1)));
                    in_run = true;
                    expecting = false;
                    continue;
                }
                if !in_run {
                    return Err(at(col, format!("`; {key}:` must follow a `; run:` line")));
                }
                add_to_run(runs.last_mut().unwrap(), key, value, ln, col, &mut expecting)?;
                continue;
            }
            if let Some(word) = unknown_directive(line) {
                return Err(unknown_directive_error(line, word, ln));
            }
            in_run = false;
            expecting = false;
            if t.is_empty() || t.starts_with(';') {
                trivia.push((sig, Trivia::Line(line.to_string())));
                continue;
            }
            if let Some(c) = line.find(';') {
                let start = line[..c].trim_end().len();
                trailing.push((sig, line[start..].to_string()));
            }
            sig += 1;
        }
        Ok(CaseFile { module, source_map, runs, trivia, trailing })
    }

    /// Prints the case file: the module in canonical layout with the comments, blank lines
    /// and runs of the source in their places.
    pub fn print(&self) -> String {
        let code = self.module.to_string();
        let lines: Vec<&str> = code.lines().filter(|l| !l.trim().is_empty()).collect();
        let mut out = String::new();
        let mut ti = 0;
        for i in 0..=lines.len() {
            while ti < self.trivia.len() && (self.trivia[ti].0 <= i || i == lines.len()) {
                match &self.trivia[ti].1 {
                    Trivia::Line(l) => {
                        out.push_str(l);
                        out.push('\n');
                    }
                    Trivia::Run(r) => self.print_run(&mut out, &self.runs[*r]),
                }
                ti += 1;
            }
            if let Some(l) = lines.get(i) {
                out.push_str(l);
                if let Some((_, c)) = self.trailing.iter().find(|(k, _)| *k == i) {
                    out.push_str(c);
                }
                out.push('\n');
            }
        }
        out
    }

    fn print_run(&self, out: &mut String, run: &Run) {
        let args: Vec<String> = run.args.iter().map(|a| a.to_string()).collect();
        let _ = writeln!(out, "; run: %{}({})", run.entry, args.join(", "));
        for (addr, bytes) in &run.heap {
            let _ = writeln!(out, "; heap: {}", heap_row(*addr, bytes));
        }
        if !run.callframe.is_empty() {
            let _ = writeln!(out, "; cf: {}", cf_list(&run.callframe));
        }
        if let Some(fuel) = run.fuel {
            let _ = writeln!(out, "; fuel: {fuel}");
        }
        match &run.expect {
            None => {}
            Some(Expected::Invalid(i)) => {
                let _ = writeln!(out, "; expect: {i}");
            }
            Some(Expected::Outcome(o)) => {
                let _ = writeln!(out, "; expect: {}", o.end);
                for e in &o.trace {
                    let _ = writeln!(out, "; trace: {e}");
                }
                for (i, row) in o.heap.chunks(HEAP_ROW).enumerate() {
                    if row.iter().any(|&b| b != 0) {
                        let _ = writeln!(out, "; heap-out: {}", heap_row(HEAP_BASE + (i * HEAP_ROW) as u32, row));
                    }
                }
                if !o.callframe.is_empty() {
                    let _ = writeln!(out, "; cf-out: {}", cf_list(&o.callframe));
                }
            }
        }
    }
}

fn heap_row(addr: u32, bytes: &[u8]) -> String {
    let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{addr:#010x}: {}", hex.join(" "))
}

fn cf_list(cf: &[(String, Value)]) -> String {
    cf.iter().map(|(n, v)| format!("@{n} = {v}")).collect::<Vec<_>>().join(", ")
}

/// Lexes a directive value, shifting token positions to the file's line and column.
fn lex_at(value: &str, line: u32, col: u32) -> Result<Vec<Token>, ParseError> {
    let shift = |mut e: ParseError| {
        e.col += col - 1;
        e.line = line;
        e
    };
    let mut toks = lex(value).map_err(shift)?;
    for t in &mut toks {
        t.col += col - 1;
        t.line = line;
    }
    Ok(toks)
}

struct Toks {
    toks: Vec<Token>,
    pos: usize,
}

impl Toks {
    fn peek(&self) -> &Token {
        &self.toks[self.pos]
    }
    fn next(&mut self) -> Token {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }
    fn expected(&self, what: &str) -> ParseError {
        let t = self.peek();
        ParseError::new(t.line, t.col, format!("expected {what}, found {}", t.kind.describe()))
    }
    fn punct(&mut self, p: &str) -> Result<(), ParseError> {
        match &self.peek().kind {
            TokenKind::Punct(q) if *q == p => {
                self.next();
                Ok(())
            }
            _ => Err(self.expected(&format!("`{p}`"))),
        }
    }
    fn is_punct(&self, p: &str) -> bool {
        matches!(&self.peek().kind, TokenKind::Punct(q) if *q == p)
    }
    fn end(&self) -> Result<(), ParseError> {
        match self.peek().kind {
            TokenKind::Eof => Ok(()),
            _ => Err(self.expected("the end of the line")),
        }
    }
    /// A value: an integer with an optional `:i32`/`:i64` suffix.
    fn value(&mut self) -> Result<Value, ParseError> {
        let t = self.next();
        let TokenKind::Int(v) = t.kind else {
            self.pos -= 1;
            return Err(self.expected("a value like `5` or `-1:i64`"));
        };
        let ty = if self.is_punct(":") {
            self.next();
            match &self.next().kind {
                TokenKind::Ident(w) if w == "i32" => Type::I32,
                TokenKind::Ident(w) if w == "i64" => Type::I64,
                _ => {
                    self.pos -= 1;
                    return Err(self.expected("`i32` or `i64`"));
                }
            }
        } else {
            Type::I32
        };
        let (lo, hi) = match ty {
            Type::I32 => (i32::MIN as i128, u32::MAX as i128),
            Type::I64 => (i64::MIN as i128, u64::MAX as i128),
        };
        if v < lo || v > hi {
            return Err(ParseError::new(t.line, t.col, format!("{v} does not fit in {ty}")));
        }
        Ok(Value::new(ty, v as i64))
    }
}

/// `%f(1, 2:i64)` or `@log(1, 2)`: a name and a list of values.
fn parse_call(value: &str, line: u32, col: u32) -> Result<(String, Vec<Value>), ParseError> {
    let mut t = Toks { toks: lex_at(value, line, col)?, pos: 0 };
    let name = match &t.peek().kind {
        TokenKind::LocalName(n) | TokenKind::GlobalName(n) => n.clone(),
        _ => return Err(t.expected("a name like `%f` or `@log`")),
    };
    t.next();
    t.punct("(")?;
    let mut args = vec![];
    if !t.is_punct(")") {
        loop {
            args.push(t.value()?);
            if t.is_punct(",") {
                t.next();
            } else {
                break;
            }
        }
    }
    t.punct(")")?;
    t.end()?;
    Ok((name, args))
}

/// `@x = 5, @y = -1:i64`.
fn parse_cf(value: &str, line: u32, col: u32) -> Result<Vec<(String, Value)>, ParseError> {
    let mut t = Toks { toks: lex_at(value, line, col)?, pos: 0 };
    let mut v = vec![];
    loop {
        let name = match &t.peek().kind {
            TokenKind::GlobalName(n) => n.clone(),
            _ => return Err(t.expected("a callframe variable like `@x`")),
        };
        t.next();
        t.punct("=")?;
        v.push((name, t.value()?));
        if t.is_punct(",") {
            t.next();
        } else {
            break;
        }
    }
    t.end()?;
    Ok(v)
}

/// `0x00100000: 01 02 ff`: an address inside the heap and hex bytes that fit.
fn parse_heap_row(value: &str, line: u32, col: u32) -> Result<(u32, Vec<u8>), ParseError> {
    let at = |c: usize, m: String| ParseError::new(line, col + c as u32, m);
    let colon = value.find(':').ok_or_else(|| at(0, "expected `ADDRESS: BYTES`".into()))?;
    let a = value[..colon].trim();
    let addr = a
        .strip_prefix("0x")
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or_else(|| at(0, format!("expected a hex address like 0x00100000, found `{a}`")))?;
    let mut bytes = vec![];
    let mut pos = colon + 1;
    for w in value[colon + 1..].split_whitespace() {
        let off = value[pos..].find(w).unwrap() + pos;
        pos = off + w.len();
        let b = (w.len() == 2).then(|| u8::from_str_radix(w, 16).ok()).flatten();
        bytes.push(b.ok_or_else(|| at(off, format!("expected a hex byte like `0f`, found `{w}`")))?);
    }
    if bytes.is_empty() {
        return Err(at(colon + 1, "expected at least one hex byte".into()));
    }
    if addr < HEAP_BASE || (addr - HEAP_BASE) as u64 + bytes.len() as u64 > HEAP_SIZE as u64 {
        return Err(at(0, format!("{} byte(s) at {addr:#x} lie outside the heap {HEAP_BASE:#x}..{:#x}", bytes.len(), HEAP_BASE + HEAP_SIZE)));
    }
    Ok((addr, bytes))
}

/// `return 3`, `trap divide_error`, `trap check(7)`, `invalid fuel_exhausted`,
/// `invalid out_of_bounds 0x100ffe 4`.
fn parse_expect(value: &str, line: u32, col: u32) -> Result<Expected, ParseError> {
    let mut t = Toks { toks: lex_at(value, line, col)?, pos: 0 };
    let word = match &t.peek().kind {
        TokenKind::Ident(w) => w.clone(),
        _ => return Err(t.expected("`return`, `trap` or `invalid`")),
    };
    t.next();
    let outcome = |end| {
        Expected::Outcome(ExpectedOutcome { end, trace: vec![], heap: vec![0; HEAP_SIZE as usize], callframe: vec![] })
    };
    let e = match word.as_str() {
        "return" => outcome(End::Return(t.value()?)),
        "trap" => match &t.next().kind {
            TokenKind::Ident(w) if w == "divide_error" => outcome(End::Trap(TrapKind::DivideError)),
            TokenKind::Ident(w) if w == "check" => {
                t.punct("(")?;
                let v = t.value()?;
                t.punct(")")?;
                outcome(End::Trap(TrapKind::Check(v.as_i64() as u32)))
            }
            _ => {
                t.pos -= 1;
                return Err(t.expected("`divide_error` or `check(CODE)`"));
            }
        },
        "invalid" => match &t.next().kind {
            TokenKind::Ident(w) if w == "fuel_exhausted" => Expected::Invalid(Invalid::FuelExhausted),
            TokenKind::Ident(w) if w == "out_of_bounds" => {
                let a = t.value()?;
                let n = t.value()?;
                Expected::Invalid(Invalid::OutOfBounds { addr: a.as_i64() as u32, bytes: n.as_i64() as u32 })
            }
            _ => {
                t.pos -= 1;
                return Err(t.expected("`fuel_exhausted` or `out_of_bounds ADDRESS BYTES`"));
            }
        },
        _ => {
            t.pos -= 1;
            return Err(t.expected("`return`, `trap` or `invalid`"));
        }
    };
    t.end()?;
    Ok(e)
}

impl CaseFile {
    /// Replaces every run's expectation with what `actual` says (the `--bless` action).
    pub fn bless(&mut self, actual: &[Option<Expected>]) {
        for (r, a) in self.runs.iter_mut().zip(actual) {
            if let Some(a) = a {
                r.expect = Some(a.clone());
            }
        }
    }

    /// Builds a case file from a module and runs, laid out canonically (runs at the end).
    pub fn new(module: Module, runs: Vec<Run>) -> CaseFile {
        // The runs follow the module: placed there without printing it (the generator makes
        // a case file for every seed, and printing each module only to count its lines was
        // a hundredth of a campaign).
        let trivia = (0..runs.len()).map(|i| (AFTER_MODULE, Trivia::Run(i))).collect();
        CaseFile { module, source_map: SourceMap::default(), runs, trivia, trailing: vec![] }
    }
}
