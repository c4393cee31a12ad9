//! Parses the text format into a [`Module`], reporting the first error with its line and
//! column. Names are resolved here: an undefined local, callframe variable, block or
//! helper is a parse error at the place it is used. Type rules and the CFG policies are
//! left to the verifier, which also checks IR that passes build.
//!
//! Block labels: a label `bN` becomes block entity `N` (gaps become unused blocks outside
//! the layout), so a printed function parses back to the same block numbers; any other
//! label gets the next free entity in order of definition.

use super::lexer::{lex, Token, TokenKind};
use super::{ParseError, SourceMap};
use crate::helpers::{Effects, HelperKind};
use crate::ir::*;
use cranelift_entity::EntityRef;
use std::collections::HashMap;

/// Parses a module.
pub fn parse_module(src: &str) -> Result<(Module, SourceMap), ParseError> {
    let toks = lex(src)?;
    let mut p = Parser { toks, pos: 0, depth: 0, map: SourceMap::default(), index: 0 };
    let mut module = Module::default();
    loop {
        let t = p.peek().clone();
        match &t.kind {
            TokenKind::Eof => break,
            TokenKind::Ident(w) if w == "helper" => {
                p.map.helpers.push((t.line, t.col));
                let decl = p.helper_decl()?;
                if module.helpers.iter().any(|h| h.name == decl.name) {
                    return Err(p.err_at(&t, format!("helper @{} is declared twice", decl.name)));
                }
                module.helpers.push(decl);
            }
            TokenKind::Ident(w) if w == "function" => {
                p.index = module.functions.len();
                p.map.functions.push((t.line, t.col));
                let f = p.function(&module)?;
                if module.functions.iter().any(|g| g.name == f.name) {
                    return Err(p.err_at(&t, format!("function %{} is defined twice", f.name)));
                }
                module.functions.push(f);
            }
            _ => return Err(p.expected("`helper` or `function`")),
        }
    }
    Ok((module, p.map))
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    /// Current expression nesting, bounded by [`MAX_DEPTH`] so that hostile input cannot
    /// overflow the stack of the parser or of the recursive passes after it.
    depth: usize,
    /// Where parsed entities came from.
    map: SourceMap,
    /// Index of the function being parsed, the key of its entities in `map`.
    index: usize,
}

/// The deepest expression nesting the parser accepts.
pub const MAX_DEPTH: usize = 256;

/// Name tables of the function being parsed.
struct Scope {
    locals: HashMap<String, Local>,
    cfvars: HashMap<String, CfVar>,
    blocks: HashMap<String, Block>,
    /// Block references to check once all labels are known.
    block_refs: Vec<(String, u32, u32)>,
    helpers: HashMap<String, HelperKind>,
}

impl Parser {
    fn peek(&self) -> &Token {
        &self.toks[self.pos]
    }

    fn peek_at(&self, n: usize) -> &TokenKind {
        &self.toks[(self.pos + n).min(self.toks.len() - 1)].kind
    }

    fn next(&mut self) -> Token {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn err_at(&self, t: &Token, msg: String) -> ParseError {
        ParseError::new(t.line, t.col, msg)
    }

    fn expected(&self, what: &str) -> ParseError {
        let t = self.peek();
        ParseError::new(t.line, t.col, format!("expected {what}, found {}", t.kind.describe()))
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(&self.peek().kind, TokenKind::Punct(q) if *q == p)
    }

    fn is_ident(&self, w: &str) -> bool {
        matches!(&self.peek().kind, TokenKind::Ident(x) if x == w)
    }

    fn punct(&mut self, p: &str) -> Result<(), ParseError> {
        if self.is_punct(p) {
            self.next();
            Ok(())
        } else {
            Err(self.expected(&format!("`{p}`")))
        }
    }

    fn keyword(&mut self, w: &str) -> Result<(), ParseError> {
        if self.is_ident(w) {
            self.next();
            Ok(())
        } else {
            Err(self.expected(&format!("`{w}`")))
        }
    }

    /// Takes the next token if `word` finds its text (an identifier or a name), else
    /// expects `what`.
    fn word(&mut self, what: &str, word: impl Fn(&TokenKind) -> Option<&String>) -> Result<(String, Token), ParseError> {
        match word(&self.peek().kind) {
            Some(w) => {
                let w = w.clone();
                Ok((w, self.next()))
            }
            None => Err(self.expected(what)),
        }
    }

    fn ident(&mut self, what: &str) -> Result<(String, Token), ParseError> {
        self.word(what, |k| if let TokenKind::Ident(w) = k { Some(w) } else { None })
    }

    fn local_name(&mut self, what: &str) -> Result<(String, Token), ParseError> {
        self.word(what, |k| if let TokenKind::LocalName(w) = k { Some(w) } else { None })
    }

    fn global_name(&mut self, what: &str) -> Result<(String, Token), ParseError> {
        self.word(what, |k| if let TokenKind::GlobalName(w) = k { Some(w) } else { None })
    }

    fn int(&mut self, what: &str) -> Result<(i128, Token), ParseError> {
        match &self.peek().kind {
            TokenKind::Int(v) => {
                let v = *v;
                Ok((v, self.next()))
            }
            _ => Err(self.expected(what)),
        }
    }

    fn ty(&mut self) -> Result<Type, ParseError> {
        match &self.peek().kind {
            TokenKind::Ident(w) if w == "i32" => {
                self.next();
                Ok(Type::I32)
            }
            TokenKind::Ident(w) if w == "i64" => {
                self.next();
                Ok(Type::I64)
            }
            _ => Err(self.expected("a type (`i32` or `i64`)")),
        }
    }

    /// Comma-separated items until `close`.
    fn list<T>(
        &mut self,
        close: &str,
        mut item: impl FnMut(&mut Self) -> Result<T, ParseError>,
    ) -> Result<Vec<T>, ParseError> {
        let mut v = vec![];
        if self.is_punct(close) {
            self.next();
            return Ok(v);
        }
        loop {
            v.push(item(self)?);
            if self.is_punct(",") {
                self.next();
            } else if self.is_punct(close) {
                self.next();
                return Ok(v);
            } else {
                return Err(self.expected(&format!("`,` or `{close}`")));
            }
        }
    }

    fn helper_decl(&mut self) -> Result<HelperDecl, ParseError> {
        self.keyword("helper")?;
        let (name, _) = self.global_name("a helper name like `@log`")?;
        self.punct("(")?;
        let params = self.list(")", |p| p.ty())?;
        self.punct("->")?;
        let ret = if self.is_ident("void") {
            self.next();
            None
        } else {
            Some(self.ty()?)
        };
        let mut effects = Effects::default();
        if self.is_ident("pure") {
            self.next();
        } else if self.is_ident("effects") {
            self.next();
            self.punct("(")?;
            let names = self.list(")", |p| p.ident("an effect name"))?;
            for (n, t) in names {
                if !effects.set(&n) {
                    return Err(self.err_at(
                        &t,
                        format!("expected an effect ({}), found `{n}`", Effects::NAMES.join(", ")),
                    ));
                }
            }
        } else {
            return Err(self.expected("`pure` or `effects(...)`"));
        }
        Ok(HelperDecl { name, params, ret, effects })
    }

    /// Finds the block labels defined in the function body starting at the current
    /// position: an identifier followed by `:` outside any bracket.
    fn prescan_labels(&self) -> Vec<(String, Token)> {
        let mut depth = 0i32;
        let mut labels = vec![];
        let mut i = self.pos;
        while i + 1 < self.toks.len() {
            match &self.toks[i].kind {
                TokenKind::Punct("(") | TokenKind::Punct("[") => depth += 1,
                TokenKind::Punct(")") | TokenKind::Punct("]") => depth -= 1,
                TokenKind::Punct("}") if depth == 0 => break,
                TokenKind::Ident(w) if depth == 0 && self.toks[i + 1].kind == TokenKind::Punct(":") => {
                    labels.push((w.clone(), self.toks[i].clone()));
                }
                _ => {}
            }
            i += 1;
        }
        labels
    }

    fn function(
        &mut self,
        module: &Module,
    ) -> Result<Function, ParseError> {
        self.keyword("function")?;
        let (name, _) = self.local_name("a function name like `%f`")?;
        let mut f = Function::new(&name, Type::I32);
        f.blocks.clear();
        f.exprs.clear();
        f.layout.clear();
        let mut scope = Scope {
            locals: HashMap::new(),
            cfvars: HashMap::new(),
            blocks: HashMap::new(),
            block_refs: vec![],
            helpers: HashMap::new(),
        };
        for h in &module.helpers {
            if let Some(k) = HelperKind::from_name(&h.name) {
                scope.helpers.insert(h.name.clone(), k);
            }
        }
        self.punct("(")?;
        let params = self.list(")", |p| {
            let ty = p.ty()?;
            let (n, t) = p.local_name("a parameter name like `%a`")?;
            Ok((ty, n, t))
        })?;
        for (ty, n, t) in params {
            let l = self.declare_local(&mut f, &mut scope, &n, ty, &t)?;
            f.params.push(l);
        }
        self.punct("->")?;
        f.ret = self.ty()?;
        self.punct("{")?;
        self.declarations(&mut f, &mut scope)?;
        self.block_entities(&mut f, &mut scope)?;
        while !self.is_punct("}") {
            self.block(&mut f, &mut scope)?;
        }
        self.punct("}")?;
        Ok(f)
    }

    /// The callframe variables and locals declared before the first block.
    fn declarations(
        &mut self,
        f: &mut Function,
        scope: &mut Scope,
    ) -> Result<(), ParseError> {
        loop {
            if self.is_ident("callframe") {
                self.next();
                let ty = self.ty()?;
                let (n, t) = self.global_name("a callframe variable name like `@x`")?;
                if scope.cfvars.contains_key(&n) {
                    return Err(self.err_at(&t, format!("callframe variable @{n} is declared twice")));
                }
                let v = f.cfvars.push(CfVarData { name: n.clone(), ty });
                scope.cfvars.insert(n, v);
            } else if self.is_ident("local") {
                self.next();
                let ty = self.ty()?;
                let (n, t) = self.local_name("a local name like `%t`")?;
                self.declare_local(f, scope, &n, ty, &t)?;
            } else {
                break;
            }
        }
        Ok(())
    }

    /// Creates the block entities of every label in the body: `bN` labels keep their
    /// number, other labels come after the highest of them.
    fn block_entities(
        &mut self,
        f: &mut Function,
        scope: &mut Scope,
    ) -> Result<(), ParseError> {
        let labels = self.prescan_labels();
        if labels.is_empty() {
            return Err(self.expected("a block label like `b0:`"));
        }
        let numbered = |n: &str| n.strip_prefix('b').and_then(|d| d.parse::<u32>().ok()).filter(|_| n.len() < 8);
        let max_numbered = labels.iter().filter_map(|(n, _)| numbered(n)).max();
        let placeholder = |f: &mut Function| {
            let zero = f.exprs.push(ExprData::Const { ty: Type::I32, value: 0 });
            BlockData { phis: vec![], stmts: vec![], term: Terminator::Return(zero) }
        };
        if let Some(m) = max_numbered {
            for _ in 0..=m {
                let d = placeholder(f);
                f.blocks.push(d);
            }
        }
        for (n, t) in &labels {
            if scope.blocks.contains_key(n) {
                return Err(self.err_at(t, format!("block {n} is defined twice")));
            }
            let b = match numbered(n) {
                Some(k) => Block::new(k as usize),
                None => {
                    let d = placeholder(f);
                    f.blocks.push(d)
                }
            };
            scope.blocks.insert(n.clone(), b);
        }
        Ok(())
    }

    /// One block: its label, phis, statements and terminator.
    fn block(&mut self, f: &mut Function, scope: &mut Scope) -> Result<(), ParseError> {
        let (label, lt) = self.ident("a block label like `b0:`")?;
        self.punct(":")?;
        let b = scope.blocks[&label];
        self.map.blocks.insert((self.index, b), (lt.line, lt.col));
        f.layout.push(b);
        let mut phis = vec![];
        let mut stmts = vec![];
        let term = loop {
            let t = self.peek().clone();
            match &t.kind {
                TokenKind::Ident(w) if ["jump", "br", "ret", "switch"].contains(&w.as_str()) => {
                    break self.terminator(f, scope)?;
                }
                TokenKind::LocalName(n)
                    if self.peek_at(1) == &TokenKind::Punct("=")
                        && self.peek_at(2) == &TokenKind::Ident("phi".into()) =>
                {
                    if !stmts.is_empty() {
                        return Err(self.err_at(&t, "a phi must come before the block's statements".into()));
                    }
                    let n = n.clone();
                    self.next();
                    self.next();
                    self.next();
                    let dest = self.resolve_local(&scope, &n, &t)?;
                    self.punct("(")?;
                    let args = self.list(")", |p| {
                        let (bn, bt) = p.ident("a block label")?;
                        p.punct(":")?;
                        let (ln, lt) = p.local_name("a local")?;
                        let b = p.resolve_block(scope, &bn, &bt)?;
                        let l = p.resolve_local(&scope, &ln, &lt)?;
                        Ok((b, l))
                    })?;
                    phis.push(Phi { dest, args });
                }
                TokenKind::LocalName(n) if self.peek_at(1) == &TokenKind::Punct("=") => {
                    let n = n.clone();
                    self.next();
                    self.next();
                    let local = self.resolve_local(&scope, &n, &t)?;
                    let value = self.expr(f, scope)?;
                    let e = f.exprs.push(ExprData::Assign { local, value });
                    self.map.exprs.insert((self.index, e), (t.line, t.col));
                    stmts.push(e);
                }
                TokenKind::Punct("}") | TokenKind::Eof => {
                    return Err(self.expected("a statement or a terminator (`jump`, `br`, `ret`, `switch`)"));
                }
                TokenKind::Ident(_) if self.peek_at(1) == &TokenKind::Punct(":") => {
                    return Err(self.expected("a terminator (`jump`, `br`, `ret`, `switch`) before the next block"));
                }
                _ => {
                    let e = self.expr(f, scope)?;
                    stmts.push(e);
                }
            }
        };
        f.blocks[b] = BlockData { phis, stmts, term };
        Ok(())
    }

    fn declare_local(
        &self,
        f: &mut Function,
        scope: &mut Scope,
        n: &str,
        ty: Type,
        t: &Token,
    ) -> Result<Local, ParseError> {
        if scope.locals.contains_key(n) {
            return Err(self.err_at(t, format!("local %{n} is declared twice")));
        }
        let l = f.locals.push(LocalData { name: n.to_string(), ty });
        scope.locals.insert(n.to_string(), l);
        Ok(l)
    }

    fn resolve_local(&self, scope: &Scope, n: &str, t: &Token) -> Result<Local, ParseError> {
        scope
            .locals
            .get(n)
            .copied()
            .ok_or_else(|| self.err_at(t, format!("undefined local %{n} (declare it with `local i32 %{n}`)")))
    }

    fn resolve_block(&self, scope: &mut Scope, n: &str, t: &Token) -> Result<Block, ParseError> {
        scope.block_refs.push((n.to_string(), t.line, t.col));
        scope.blocks.get(n).copied().ok_or_else(|| self.err_at(t, format!("undefined block {n}")))
    }

    fn block_ref(&mut self, scope: &mut Scope) -> Result<Block, ParseError> {
        let (n, t) = self.ident("a block label")?;
        self.resolve_block(scope, &n, &t)
    }

    fn terminator(
        &mut self,
        f: &mut Function,
        scope: &mut Scope,
    ) -> Result<Terminator, ParseError> {
        let (w, _) = self.ident("a terminator")?;
        Ok(match w.as_str() {
            "jump" => Terminator::Jump(self.block_ref(scope)?),
            "br" => {
                let cond = self.expr(f, scope)?;
                self.punct(",")?;
                let then_dest = self.block_ref(scope)?;
                self.punct(",")?;
                let else_dest = self.block_ref(scope)?;
                Terminator::Branch { cond, then_dest, else_dest }
            }
            "ret" => Terminator::Return(self.expr(f, scope)?),
            _ => {
                let value = self.expr(f, scope)?;
                self.punct(",")?;
                self.keyword("default")?;
                let default = self.block_ref(scope)?;
                self.punct(",")?;
                self.punct("[")?;
                let cases = self.list("]", |p| {
                    let (k, kt) = p.int("a case value")?;
                    if k < i64::MIN as i128 || k > u64::MAX as i128 {
                        return Err(p.err_at(&kt, "case value out of range".into()));
                    }
                    p.punct(":")?;
                    let b = p.block_ref(scope)?;
                    Ok((k as i64, b))
                })?;
                Terminator::Switch { value, default, cases }
            }
        })
    }

    fn args(
        &mut self,
        f: &mut Function,
        scope: &mut Scope,
        name: &str,
        n: usize,
        at: &Token,
    ) -> Result<Vec<Expr>, ParseError> {
        self.punct("(")?;
        let v = self.list(")", |p| p.expr(f, scope))?;
        if v.len() != n {
            return Err(self.err_at(at, format!("`{name}` takes {n} operand(s), found {}", v.len())));
        }
        Ok(v)
    }

    fn expr(
        &mut self,
        f: &mut Function,
        scope: &mut Scope,
    ) -> Result<Expr, ParseError> {
        let t = self.peek().clone();
        if self.depth >= MAX_DEPTH {
            return Err(self.err_at(&t, format!("expressions nest deeper than {MAX_DEPTH} levels")));
        }
        self.depth += 1;
        let r = self.expr_inner(f, scope, &t);
        self.depth -= 1;
        r
    }

    fn expr_inner(
        &mut self,
        f: &mut Function,
        scope: &mut Scope,
        t: &Token,
    ) -> Result<Expr, ParseError> {
        let t = t.clone();
        let data = match &t.kind {
            TokenKind::Int(v) => {
                let v = *v;
                self.next();
                let ty = if self.is_punct(":") {
                    self.next();
                    self.ty()?
                } else {
                    Type::I32
                };
                let (lo, hi) = match ty {
                    Type::I32 => (i32::MIN as i128, u32::MAX as i128),
                    Type::I64 => (i64::MIN as i128, u64::MAX as i128),
                };
                if v < lo || v > hi {
                    return Err(self.err_at(&t, format!("constant {v} does not fit in {ty}")));
                }
                ExprData::Const { ty, value: ty.normalize(v as i64) }
            }
            TokenKind::LocalName(n) => {
                let n = n.clone();
                self.next();
                ExprData::Local(self.resolve_local(scope, &n, &t)?)
            }
            TokenKind::Punct("(") => {
                self.next();
                let (n, lt) = self.local_name("an assignment like `(%t = ...)`")?;
                let local = self.resolve_local(scope, &n, &lt)?;
                self.punct("=")?;
                let value = self.expr(f, scope)?;
                self.punct(")")?;
                ExprData::Assign { local, value }
            }
            TokenKind::Ident(w) => {
                let w = w.clone();
                self.next();
                self.operator(&w, &t, f, scope)?
            }
            _ => return Err(self.expected("an expression")),
        };
        let e = f.exprs.push(data);
        self.map.exprs.insert((self.index, e), (t.line, t.col));
        Ok(e)
    }

    fn operator(
        &mut self,
        w: &str,
        t: &Token,
        f: &mut Function,
        scope: &mut Scope,
    ) -> Result<ExprData, ParseError> {
        if let Some(op) = BinOp::ALL.into_iter().find(|o| o.name() == w) {
            let a = self.args(f, scope, w, 2, t)?;
            return Ok(ExprData::Binary { op, lhs: a[0], rhs: a[1] });
        }
        if let Some(op) = CmpOp::ALL.into_iter().find(|o| o.name() == w) {
            let a = self.args(f, scope, w, 2, t)?;
            return Ok(ExprData::Cmp { op, lhs: a[0], rhs: a[1] });
        }
        if let Some(op) = UnOp::ALL.into_iter().find(|o| o.name() == w) {
            let a = self.args(f, scope, w, 1, t)?;
            return Ok(ExprData::Unary { op, arg: a[0] });
        }
        if let Some(op) = ConvOp::ALL.into_iter().find(|o| o.name() == w) {
            let a = self.args(f, scope, w, 1, t)?;
            return Ok(ExprData::Convert { op, arg: a[0] });
        }
        if let Some(rest) = w.strip_prefix("load.") {
            let (ty, width, signed) = self.load_kind(w, rest, t)?;
            let a = self.args(f, scope, w, 1, t)?;
            return Ok(ExprData::Load { ty, width, signed, addr: a[0] });
        }
        if let Some(bits) = w.strip_prefix("store.") {
            let width = bits.parse::<u32>().ok().and_then(MemWidth::from_bits).ok_or_else(|| {
                self.err_at(t, format!("expected `store.8`, `store.16`, `store.32` or `store.64`, found `{w}`"))
            })?;
            let a = self.args(f, scope, w, 2, t)?;
            return Ok(ExprData::Store { width, addr: a[0], value: a[1] });
        }
        match w {
            "select" => {
                let a = self.args(f, scope, w, 3, t)?;
                Ok(ExprData::Select { cond: a[0], if_true: a[1], if_false: a[2] })
            }
            "comma" => {
                let a = self.args(f, scope, w, 2, t)?;
                Ok(ExprData::Comma { first: a[0], second: a[1] })
            }
            "cfread" | "cfwrite" => self.callframe_access(w, f, scope),
            "trapif" => {
                self.punct("(")?;
                let cond = self.expr(f, scope)?;
                self.punct(",")?;
                let (code, ct) = self.int("a trap code")?;
                if !(0..=u32::MAX as i128).contains(&code) {
                    return Err(self.err_at(&ct, "trap code out of range (0 to 4294967295)".into()));
                }
                self.punct(")")?;
                Ok(ExprData::TrapIf { cond, code: code as u32 })
            }
            "call" => {
                let (n, nt) = self.global_name("a helper like `@log`")?;
                let helper = *scope.helpers.get(&n).ok_or_else(|| {
                    self.err_at(&nt, format!("helper @{n} is not declared (or not in the runtime's helper set)"))
                })?;
                self.punct("(")?;
                let args = self.list(")", |p| p.expr(f, scope))?;
                Ok(ExprData::Call { helper, args })
            }
            _ => Err(self.err_at(t, format!("expected an expression, found unknown operator `{w}`"))),
        }
    }

    /// The type, width and signedness a load's name `w` spells after `load.` (`rest`):
    /// `load.i32`, `load.i64`, or a narrower width like `load.i64.s8`, `load.i32.u16`.
    fn load_kind(&self, w: &str, rest: &str, t: &Token) -> Result<(Type, MemWidth, bool), ParseError> {
        let mut parts = rest.split('.');
        let ty = match parts.next() {
            Some("i32") => Type::I32,
            Some("i64") => Type::I64,
            _ => return Err(self.err_at(t, format!("expected a load like `load.i32` or `load.i64.s8`, found `{w}`"))),
        };
        let (width, signed) = match parts.next() {
            None => (if ty == Type::I32 { MemWidth::W32 } else { MemWidth::W64 }, false),
            Some(spec) => {
                let signed = spec.starts_with('s');
                let width = spec
                    .strip_prefix(['s', 'u'])
                    .and_then(|b| b.parse::<u32>().ok())
                    .and_then(MemWidth::from_bits)
                    .filter(|w| w.bits() < ty.bits());
                match (width, parts.next()) {
                    (Some(width), None) => (width, signed),
                    _ => return Err(self.err_at(t, format!("expected a narrower load like `load.{ty}.s8` or `load.{ty}.u16`, found `{w}`"))),
                }
            }
        };
        Ok((ty, width, signed))
    }

    /// The arguments of `cfread(@x)` or `cfwrite(@x, value)` (`w` names which).
    fn callframe_access(&mut self, w: &str, f: &mut Function, scope: &mut Scope) -> Result<ExprData, ParseError> {
        self.punct("(")?;
        let (n, nt) = self.global_name("a callframe variable like `@x`")?;
        let var = *scope
            .cfvars
            .get(&n)
            .ok_or_else(|| self.err_at(&nt, format!("undefined callframe variable @{n}")))?;
        if w == "cfread" {
            self.punct(")")?;
            Ok(ExprData::CfRead(var))
        } else {
            self.punct(",")?;
            let value = self.expr(f, scope)?;
            self.punct(")")?;
            Ok(ExprData::CfWrite { var, value })
        }
    }
}
