//! The HIR verifier: checks a module and collects every error, each with its location
//! (function, block, statement) and the printed statement. It runs after parsing and,
//! in tests and debug builds, after every pass.
//!
//! Rules checked:
//! * helper declarations match the runtime's helper set exactly (name, signature,
//!   effects), and every helper called is declared;
//! * entities are in range, local and callframe names are unique, parameters are locals;
//! * the layout lists each block once; branch targets are in the layout;
//! * the entry block is not a branch target, every block is reachable from the entry
//!   (the unreachable-block policy: passes must delete what they make unreachable);
//! * trees are trees: every node has one parent; nodes that yield nothing (stores,
//!   callframe writes, assignments, void calls, checks) appear only as a statement root or
//!   as the first operand of a comma;
//! * types: operands agree, conditions and addresses are `i32`, stores are no wider than
//!   their value, assignments and callframe writes match the destination, calls match the
//!   helper's signature, returns match the function;
//! * phis: one argument per predecessor, argument and destination types agree.
//!
//! Asked to ([`Verified::check_noting`]), the walk of the trees also notes every node
//! that names a local, in evaluation order ([`TreeLocals`]): the pass manager's SSA form
//! check reads them instead of walking every tree again.

use crate::helpers::HelperKind;
use crate::ir::*;
use crate::text::printer::stmt_to_string;
use cranelift_entity::{EntityRef, SecondaryMap};
use crate::passes::cfg::sized;
use crate::hash::HashSet;
use std::fmt;

/// Where a verifier error is.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Location {
    /// Index of the helper declaration, for errors about one.
    pub helper: Option<usize>,
    /// Index of the function in the module, and its name; `None` for module-level errors.
    pub function: Option<(usize, String)>,
    pub block: Option<Block>,
    /// The statement (or terminator expression) root, and its text.
    pub stmt: Option<(Expr, String)>,
}

/// One verifier error.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct VerifyError {
    pub location: Location,
    pub message: String,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((_, name)) = &self.location.function {
            write!(f, "function %{name}")?;
            if let Some(b) = self.location.block {
                write!(f, ", {b}")?;
            }
            if let Some((_, s)) = &self.location.stmt {
                write!(f, ", `{s}`")?;
            }
            write!(f, ": ")?;
        }
        f.write_str(&self.message)
    }
}

/// Verifies a whole module.
pub fn verify_module(m: &Module) -> Result<(), Vec<VerifyError>> {
    let mut errs = vec![];
    let module_err = |errs: &mut Vec<VerifyError>, helper: Option<usize>, message: String| {
        errs.push(VerifyError {
            location: Location { helper, function: None, block: None, stmt: None },
            message,
        })
    };
    let mut seen = HashSet::default();
    for (hi, h) in m.helpers.iter().enumerate() {
        let module_err = |errs: &mut Vec<VerifyError>, message: String| module_err(errs, Some(hi), message);
        if !seen.insert(h.name.clone()) {
            module_err(&mut errs, format!("helper @{} is declared twice", h.name));
        }
        match HelperKind::from_name(&h.name) {
            None => module_err(&mut errs, format!("helper @{} is not in the runtime's helper set", h.name)),
            Some(k) => {
                let want = HelperDecl::of(k);
                if *h != want {
                    let mut s = String::new();
                    let _ = crate::text::printer::write_helper_decl(&mut s, &want);
                    module_err(&mut errs, format!("declaration of @{} does not match the runtime: it is `{s}`", h.name));
                }
            }
        }
    }
    let mut names = HashSet::default();
    for (i, f) in m.functions.iter().enumerate() {
        if !names.insert(f.name.clone()) {
            module_err(&mut errs, None, format!("function %{} is defined twice", f.name));
        }
        let declared: Vec<HelperKind> =
            m.helpers.iter().filter_map(|h| HelperKind::from_name(&h.name)).collect();
        verify_function_into(f, i, Some(&declared), &mut errs);
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

/// A function [`verify_function`] accepted, exactly as it was then: the only way to make
/// one is [`Verified::check`], which verifies the function it takes, and a `Verified`
/// hands out no mutable access, so the fact cannot outlive a change. It lets the pass
/// manager's verification after the last pass travel to the backend, which then verifies
/// only what nothing verified.
#[derive(Clone, Debug)]
pub struct Verified(Function);

impl Verified {
    /// Verifies `f`: the verified function, or `f` back with every error.
    pub fn check(f: Function) -> Result<Verified, (Function, Vec<VerifyError>)> {
        match verify_function(&f) {
            Ok(()) => Ok(Verified(f)),
            Err(errs) => Err((f, errs)),
        }
    }

    /// [`Verified::check`], noting in `seen` (cleared first) the locals its walk of the
    /// trees meets ([`TreeLocals`]), complete when the function is verified.
    pub fn check_noting(f: Function, seen: &mut TreeLocals) -> Result<Verified, (Function, Vec<VerifyError>)> {
        seen.clear();
        let mut errs = vec![];
        verify_function_noting(&f, 0, None, &mut errs, Some(seen));
        if errs.is_empty() {
            Ok(Verified(f))
        } else {
            Err((f, errs))
        }
    }

    /// The function, to change it (after which it is unverified again).
    pub fn into_function(self) -> Function {
        self.0
    }
}

impl std::ops::Deref for Verified {
    type Target = Function;

    fn deref(&self) -> &Function {
        &self.0
    }
}

/// A node of a tree that names a local: an assignment (`def`) or a read.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Mention {
    pub local: Local,
    pub def: bool,
    /// The tree's place in its block: statement `i` at `i + 1`, the terminator's
    /// expression after every statement.
    pub stmt: usize,
    /// The node's place in its tree's post-order (evaluation order).
    pub k: usize,
    pub node: Expr,
}

/// The nodes naming a local in every tree of a function, in layout and evaluation order:
/// what the SSA form check reads (`passes::check_form_located`). The verifier notes them
/// in its own walk of the trees ([`Verified::check_noting`]), so that the check after a
/// pass does not walk every tree again; the list is complete when the function verifies,
/// since then the verifier met every node of every tree once, operands before their node.
#[derive(Clone, Default, Debug)]
pub struct TreeLocals {
    pub mentions: Vec<Mention>,
    /// For each position of the layout, the range of `mentions` its block holds.
    pub at: Vec<std::ops::Range<usize>>,
}

impl TreeLocals {
    /// Empties both lists, keeping their room.
    pub fn clear(&mut self) {
        self.mentions.clear();
        self.at.clear();
    }
}

/// Verifies one function on its own (helper declarations are not checked).
pub fn verify_function(f: &Function) -> Result<(), Vec<VerifyError>> {
    let mut errs = vec![];
    verify_function_into(f, 0, None, &mut errs);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

struct Ctx<'a> {
    f: &'a Function,
    index: usize,
    errs: &'a mut Vec<VerifyError>,
    block: Option<Block>,
    stmt: Option<Expr>,
    declared: Option<&'a [HelperKind]>,
    /// Whether each node was met as an operand or root already (bit `e % 64` of word
    /// `e / 64`): a second time is a second parent. Sized for every node at the start, so
    /// a visit is one read and one write; a bit per node, since the arena holds every node
    /// a pass ever made and the list is zeroed for each verification.
    has_parent: Vec<u64>,
    /// The nodes above the one [`Ctx::check`] is at, in the current statement's tree.
    depth: usize,
    /// Set when the current statement's tree is deeper than [`MAX_EXPR_DEPTH`]: its
    /// check stops there, so that it never recurses deeper.
    too_deep: bool,
    /// Whether [`Ctx::check_tree`] is checking a tree.
    in_tree: bool,
    /// Where the walk notes the locals it meets, if asked ([`TreeLocals`]), the current
    /// tree's place in its block, and how many nodes of the tree the walk has finished.
    seen: Option<&'a mut TreeLocals>,
    tree_at: usize,
    k: usize,
}

impl Ctx<'_> {
    #[cold]
    #[inline(never)]
    fn err(&mut self, message: String) {
        // Inside a tree, the statement's text is written once its check is over
        // ([`Ctx::check_tree`]), and only if the tree is not too deep to print.
        let text = |s| if self.in_tree { String::new() } else { stmt_to_string(self.f, s) };
        let stmt = self.stmt.map(|s| (s, text(s)));
        self.errs.push(VerifyError {
            location: Location {
                helper: None,
                function: Some((self.index, self.f.name.clone())),
                block: self.block,
                stmt,
            },
            message,
        });
    }

    /// [`Ctx::err`] with the message `message` makes: the checks of the trees, under
    /// every node, leave the formatting of their messages to this cold call (formatted
    /// where they failed, it took room and registers in the walk's frame).
    #[cold]
    #[inline(never)]
    fn err_with(&mut self, message: impl FnOnce() -> String) {
        self.err(message());
    }

    /// Checks the tree at `e` and returns its type (`None`: yields nothing). `valueless_ok`
    /// says whether this position may hold a node that yields nothing. A node that exists
    /// and has no other parent, at a depth past [`MAX_EXPR_DEPTH`], sets `too_deep` and
    /// ends the check of the tree (the caller reports it), which therefore recurses at
    /// most that deep.
    #[inline(always)]
    fn check(&mut self, e: Expr, valueless_ok: bool) -> Option<Option<Type>> {
        if self.too_deep {
            return None;
        }
        let f = self.f;
        if !f.exprs.is_valid(e) {
            self.err_with(|| format!("expression {e} does not exist"));
            return None;
        }
        let (word, bit) = (&mut self.has_parent[e.index() / 64], 1u64 << (e.index() % 64));
        let again = *word & bit != 0;
        *word |= bit;
        if again {
            self.err_with(|| format!("expression {e} has more than one parent (trees may not share nodes)"));
            return None;
        }
        if self.depth == MAX_EXPR_DEPTH {
            self.too_deep = true;
            return None;
        }
        self.depth += 1;
        let ty = if is_leaf(&f.exprs[e]) { self.leaf(e, valueless_ok) } else { self.node(e, valueless_ok) };
        self.depth -= 1;
        // Its operands were walked (and it was noted, [`Ctx::note`]): the next node's
        // place in evaluation order.
        self.k += 1;
        ty
    }

    /// Notes node `e`, which names `local` (assigns it: `def`), if the walk is asked to
    /// ([`TreeLocals`]); called once its operands are walked, so that `k` is its place.
    #[inline]
    fn note(&mut self, e: Expr, local: Local, def: bool) {
        if let Some(seen) = &mut self.seen {
            seen.mentions.push(Mention { local, def, stmt: self.tree_at, k: self.k, node: e });
        }
    }

    /// [`Ctx::check`] of the leaf `e` itself (a constant, a local or a callframe read:
    /// [`is_leaf`]), which exists and has one parent. Leaves are about half the nodes, so
    /// their check is made where [`Ctx::node`] meets them as operands, not by a call.
    #[inline(always)]
    fn leaf(&mut self, e: Expr, valueless_ok: bool) -> Option<Option<Type>> {
        let f = self.f;
        let ty = match &f.exprs[e] {
            ExprData::Const { ty, value } => {
                if ty.normalize(*value) != *value {
                    self.err_with(|| format!("constant {value} is not in canonical {ty} form"));
                }
                Some(*ty)
            }
            ExprData::Local(l) => {
                if !f.locals.is_valid(*l) {
                    self.err_with(|| format!("local {l} does not exist"));
                    return None;
                }
                self.note(e, *l, false);
                Some(f.locals[*l].ty)
            }
            ExprData::CfRead(v) => {
                if !f.cfvars.is_valid(*v) {
                    self.err_with(|| format!("callframe variable {v} does not exist"));
                    return None;
                }
                Some(f.cfvars[*v].ty)
            }
            _ => return self.node(e, valueless_ok),
        };
        Some(ty)
    }

    /// [`Ctx::check`] of the node `e` itself, which exists and has one parent: its
    /// operands' trees, then the node.
    #[inline(never)]
    fn node(&mut self, e: Expr, valueless_ok: bool) -> Option<Option<Type>> {
        let f = self.f;
        let ty = match &f.exprs[e] {
            ExprData::Const { .. } | ExprData::Local(_) | ExprData::CfRead(_) => return self.leaf(e, valueless_ok),
            ExprData::Unary { arg, .. } => {
                let t = self.value(*arg)?;
                Some(t)
            }
            ExprData::Binary { op, lhs, rhs } => Some(self.operands(|| op.name(), *lhs, *rhs)?),
            ExprData::Cmp { op, lhs, rhs } => {
                self.operands(|| op.name(), *lhs, *rhs)?;
                Some(Type::I32)
            }
            ExprData::Convert { op, arg } => {
                let t = self.value(*arg)?;
                let (from, to) = op.types();
                if t != from {
                    self.err_with(|| format!("`{}` takes an {from} operand, found {t}", op.name()));
                }
                Some(to)
            }
            ExprData::Select { cond, if_true, if_false } => {
                let c = self.value(*cond);
                let a = self.value(*if_true);
                let b = self.value(*if_false);
                if c.is_some_and(|c| c != Type::I32) {
                    self.err_with(|| "the condition of `select` must be i32".into());
                }
                let (a, b) = (a?, b?);
                if a != b {
                    self.err_with(|| format!("the arms of `select` have different types: {a} and {b}"));
                }
                Some(a)
            }
            ExprData::Load { ty, width, addr, .. } => {
                if self.value(*addr).is_some_and(|t| t != Type::I32) {
                    self.err_with(|| "a load address must be i32".into());
                }
                if width.bits() > ty.bits() {
                    self.err_with(|| format!("a {}-bit load cannot yield {ty}", width.bits()));
                }
                Some(*ty)
            }
            ExprData::Store { width, addr, value } => {
                if self.value(*addr).is_some_and(|t| t != Type::I32) {
                    self.err_with(|| "a store address must be i32".into());
                }
                if let Some(t) = self.value(*value) {
                    if width.bits() > t.bits() {
                        self.err_with(|| format!("a {}-bit store of an {t} value", width.bits()));
                    }
                }
                None
            }
            ExprData::CfWrite { var, value } => {
                let t = self.value(*value);
                if !f.cfvars.is_valid(*var) {
                    self.err_with(|| format!("callframe variable {var} does not exist"));
                } else if let Some(t) = t {
                    let vt = f.cfvars[*var].ty;
                    if t != vt {
                        self.err_with(|| format!("cfwrite of an {t} value to @{} of type {vt}", f.cfvars[*var].name));
                    }
                }
                None
            }
            ExprData::Assign { local, value } => {
                let t = self.value(*value);
                self.note(e, *local, true);
                if !f.locals.is_valid(*local) {
                    self.err_with(|| format!("local {local} does not exist"));
                } else if let Some(t) = t {
                    let lt = f.locals[*local].ty;
                    if t != lt {
                        self.err_with(|| format!("assignment of an {t} value to %{} of type {lt}", f.locals[*local].name));
                    }
                }
                None
            }
            ExprData::Call { helper, args } => {
                if let Some(d) = self.declared {
                    if !d.contains(helper) {
                        self.err_with(|| format!("call to {helper}, which the module does not declare"));
                    }
                }
                let (params, ret) = helper.signature();
                if args.len() != params.len() {
                    self.err_with(|| format!("{helper} takes {} argument(s), found {}", params.len(), args.len()));
                }
                for (i, &a) in args.iter().enumerate() {
                    if let Some(t) = self.value(a) {
                        if let Some(&p) = params.get(i) {
                            if p != t {
                                self.err_with(|| format!("argument {} of {helper} must be {p}, found {t}", i + 1));
                            }
                        }
                    }
                }
                ret
            }
            ExprData::TrapIf { cond, .. } => {
                if self.value(*cond).is_some_and(|t| t != Type::I32) {
                    self.err_with(|| "the condition of `trapif` must be i32".into());
                }
                None
            }
            ExprData::Comma { first, second } => {
                self.check(*first, true);
                self.check(*second, valueless_ok)?
            }
        };
        if ty.is_none() && !valueless_ok {
            self.err_with(|| format!("expression {e} yields nothing but is used as a value"));
            return None;
        }
        Some(ty)
    }

    /// Checks the two operands of the binary operator or compare named `op()` (asked only
    /// for an error's message), which must have one type; returns the first's type,
    /// `None` if either is broken.
    #[inline(always)]
    fn operands(&mut self, op: impl Fn() -> &'static str, lhs: Expr, rhs: Expr) -> Option<Type> {
        let a = self.value(lhs);
        let b = self.value(rhs);
        let (a, b) = (a?, b?);
        if a != b {
            self.err_with(|| format!("operands of `{}` have different types: {a} and {b}", op()));
        }
        Some(a)
    }

    /// Checks an operand that must yield a value; `None` if it is broken.
    #[inline(always)]
    fn value(&mut self, e: Expr) -> Option<Type> {
        self.check(e, false).flatten()
    }
}

fn verify_function_into(
    f: &Function,
    index: usize,
    declared: Option<&[HelperKind]>,
    errs: &mut Vec<VerifyError>,
) {
    verify_function_noting(f, index, declared, errs, None)
}

/// [`verify_function_into`], noting the locals of the trees in `seen` if given.
fn verify_function_noting(
    f: &Function,
    index: usize,
    declared: Option<&[HelperKind]>,
    errs: &mut Vec<VerifyError>,
    seen: Option<&mut TreeLocals>,
) {
    let has_parent = vec![0u64; f.exprs.len().div_ceil(64)];
    let mut cx = Ctx {
        f,
        index,
        errs,
        block: None,
        stmt: None,
        declared,
        has_parent,
        depth: 0,
        too_deep: false,
        in_tree: false,
        seen,
        tree_at: 0,
        k: 0,
    };
    cx.names();
    let Some(in_layout) = cx.layout() else { return };
    cx.branch_targets(&in_layout);
    if cx.errs.iter().any(|e| e.location.function.as_ref().is_some_and(|(i, _)| *i == index)) {
        return;
    }
    cx.reachability();
    let preds = PhiPreds::of(f);
    for &b in &f.layout {
        cx.block = Some(b);
        cx.phis(b, preds.of_block(b));
        let start = cx.seen.as_ref().map_or(0, |s| s.mentions.len());
        cx.body(b);
        if let Some(seen) = &mut cx.seen {
            let end = seen.mentions.len();
            seen.at.push(start..end);
        }
        cx.stmt = None;
    }
}

/// The predecessors of the blocks that hold phis, the only ones the verifier reads
/// (a function in HIR form has none): one list of (block, predecessor) pairs sorted and
/// without duplicates, not a list per block of the whole function (which
/// `Function::predecessors` makes, for every verification of an SSA function).
struct PhiPreds {
    pairs: Vec<(Block, Block)>,
}

impl PhiPreds {
    fn of(f: &Function) -> PhiPreds {
        let mut pairs = vec![];
        for &b in &f.layout {
            for s in f.blocks[b].term.successors() {
                if f.blocks.get(s).is_some_and(|d| !d.phis.is_empty()) {
                    pairs.push((s, b));
                }
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        PhiPreds { pairs }
    }

    /// The predecessors of `b` (which holds phis), sorted.
    fn of_block(&self, b: Block) -> &[(Block, Block)] {
        let start = self.pairs.partition_point(|&(s, _)| s < b);
        let end = start + self.pairs[start..].partition_point(|&(s, _)| s == b);
        &self.pairs[start..end]
    }
}

impl Ctx<'_> {
    /// Local and callframe names are unique; parameters are locals.
    fn names(&mut self) {
        let f = self.f;
        // Names whose hashes all differ are all different: the check of the locals' names
        // (a few hundred after SSA renaming, after every pass) is a table of numbers
        // first, and a set of the names, which finds the names declared twice in the
        // order of the locals, only when two hashes are equal.
        if !hashes_apart(f.locals.values().map(|l| l.name.as_str())) {
            let mut names: HashSet<&str> = HashSet::with_capacity_and_hasher(f.locals.len(), Default::default());
            for (_, l) in f.locals.iter() {
                if !names.insert(l.name.as_str()) {
                    self.err(format!("local %{} is declared twice", l.name));
                }
            }
        }
        let mut cfnames: HashSet<&str> = HashSet::default();
        for (_, v) in f.cfvars.iter() {
            if !cfnames.insert(v.name.as_str()) {
                self.err(format!("callframe variable @{} is declared twice", v.name));
            }
        }
        for &p in &f.params {
            if !f.locals.is_valid(p) {
                self.err(format!("parameter {p} is not a local"));
            }
        }
    }

    /// The layout is not empty and lists existing blocks, each once. Returns the set of
    /// blocks in it, or `None` when the rest of the function cannot be checked.
    fn layout(&mut self) -> Option<SecondaryMap<Block, bool>> {
        let f = self.f;
        if f.layout.is_empty() {
            self.err("the function has no blocks".into());
            return None;
        }
        // Sized for every block, so that a write is not a resize (as `reached` below).
        let mut in_layout: SecondaryMap<Block, bool> = sized(f.blocks.len());
        for &b in &f.layout {
            if !f.blocks.is_valid(b) {
                self.err(format!("block {b} in the layout does not exist"));
                return None;
            }
            if std::mem::replace(&mut in_layout[b], true) {
                self.err(format!("block {b} appears twice in the layout"));
            }
        }
        Some(in_layout)
    }

    /// Every branch target is in the layout and none is the entry block.
    fn branch_targets(&mut self, in_layout: &SecondaryMap<Block, bool>) {
        let f = self.f;
        let entry = f.entry();
        for &b in &f.layout {
            self.block = Some(b);
            for s in f.blocks[b].term.successors() {
                if !in_layout[s] {
                    self.err(format!("branch to {s}, which is not in the layout"));
                } else if s == entry {
                    self.err(format!("branch to the entry block {entry}"));
                }
            }
        }
        self.block = None;
    }

    /// Every block is reachable from the entry.
    fn reachability(&mut self) {
        let f = self.f;
        let entry = f.entry();
        // Every branch target is in the layout (checked before), so the map has room.
        let mut reached: SecondaryMap<Block, bool> = sized(f.blocks.len());
        reached[entry] = true;
        let mut work = vec![entry];
        while let Some(b) = work.pop() {
            for s in f.blocks[b].term.successors() {
                if !std::mem::replace(&mut reached[s], true) {
                    work.push(s);
                }
            }
        }
        for &b in &f.layout {
            if !reached[b] {
                self.block = Some(b);
                self.err(format!("block {b} is unreachable from the entry"));
            }
        }
    }

    /// The phis of `b`: one argument per predecessor (`preds`: the pairs of `b` and each
    /// predecessor, sorted), locals that exist, argument and destination types agree.
    fn phis(&mut self, b: Block, preds: &[(Block, Block)]) {
        let f = self.f;
        if f.blocks[b].phis.is_empty() {
            return;
        }
        let want: smallvec::SmallVec<[Block; 4]> = preds.iter().map(|&(_, p)| p).collect();
        for phi in &f.blocks[b].phis {
            self.stmt = None;
            if !f.locals.is_valid(phi.dest) {
                self.err(format!("phi destination {} does not exist", phi.dest));
                continue;
            }
            let dt = f.locals[phi.dest].ty;
            let dn = &f.locals[phi.dest].name;
            let mut args: smallvec::SmallVec<[Block; 4]> = phi.args.iter().map(|(p, _)| *p).collect();
            args.sort();
            if args[..] != want[..] {
                self.err(format!("phi for %{dn} has arguments for {args:?} but the predecessors are {want:?}"));
            }
            for (_, a) in &phi.args {
                if !f.locals.is_valid(*a) {
                    self.err(format!("phi argument {a} does not exist"));
                } else if f.locals[*a].ty != dt {
                    self.err(format!("phi for %{dn} of type {dt} has an argument %{} of type {}", f.locals[*a].name, f.locals[*a].ty));
                }
            }
        }
    }

    /// Checks the tree of the statement (or terminator expression) `root`, as
    /// [`Ctx::check`]: `None` when it is deeper than [`MAX_EXPR_DEPTH`], with the errors its
    /// check found before it stopped taken back, and the location left without the
    /// statement, for the caller's one error about it.
    fn check_tree(&mut self, root: Expr, valueless_ok: bool) -> Option<Option<Option<Type>>> {
        let found = self.errs.len();
        self.in_tree = true;
        let t = self.check(root, valueless_ok);
        self.in_tree = false;
        if std::mem::take(&mut self.too_deep) {
            self.errs.truncate(found);
            self.stmt = None;
            return None;
        }
        if self.errs.len() > found {
            let text = stmt_to_string(self.f, root);
            for e in &mut self.errs[found..] {
                if let Some((_, t)) = &mut e.location.stmt {
                    t.clone_from(&text);
                }
            }
        }
        Some(t)
    }

    /// The statements of `b` and its terminator's expression: trees no deeper than
    /// `MAX_EXPR_DEPTH`, well typed, and the terminator's value of the type it needs. A tree
    /// too deep is reported as that alone, without what its check found before it stopped.
    fn body(&mut self, b: Block) {
        let f = self.f;
        let data = &f.blocks[b];
        for (i, &s) in data.stmts.iter().enumerate() {
            self.stmt = Some(s);
            (self.tree_at, self.k) = (i + 1, 0);
            if self.check_tree(s, true).is_none() {
                self.err(format!("statement {s} is a tree deeper than {MAX_EXPR_DEPTH} levels"));
            }
        }
        let Some(e) = data.term.expr() else { return };
        self.stmt = Some(e);
        (self.tree_at, self.k) = (data.stmts.len() + 1, 0);
        let Some(t) = self.check_tree(e, false) else {
            self.err(format!("the terminator's expression {e} is deeper than {MAX_EXPR_DEPTH} levels"));
            return;
        };
        let t = t.flatten();
        match (&data.term, t) {
            (Terminator::Branch { .. }, Some(t)) if t != Type::I32 => {
                self.err(format!("a branch condition must be i32, found {t}"));
            }
            (Terminator::Return(_), Some(t)) if t != f.ret => {
                self.err(format!("returns {t} from a function returning {}", f.ret));
            }
            (Terminator::Switch { cases, .. }, Some(t)) => {
                for (k, _) in cases {
                    if t.normalize(*k) != *k {
                        self.err(format!("case value {k} does not fit the {t} switch value"));
                    }
                }
            }
            _ => {}
        }
    }
}

thread_local! {
    /// The table [`hashes_apart`] fills, kept from call to call on a thread.
    static NAME_HASHES: std::cell::Cell<Vec<u64>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The most entries a kept [`NAME_HASHES`] table may have room for (8 bytes each:
/// 256 KiB), so that what a thread keeps stays bounded.
const SPARE_NAME_HASHES: usize = 1 << 15;

/// Whether the Fx hashes of `names` are pairwise different (then so are the names; equal
/// hashes say nothing). An open-addressing table of the hashes (made odd, so that zero
/// marks an empty slot), at most half full.
fn hashes_apart<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> bool {
    use std::hash::BuildHasher;
    let n = names.len();
    if n < 2 {
        return true;
    }
    let bits = (2 * n).next_power_of_two().trailing_zeros();
    let mask = (1usize << bits) - 1;
    let mut table = NAME_HASHES.with(|t| t.take());
    table.clear();
    table.resize(1 << bits, 0);
    let hasher = std::hash::BuildHasherDefault::<crate::hash::FxHasher>::default();
    let mut apart = true;
    'names: for name in names {
        let h = hasher.hash_one(name) | 1;
        // The top bits, which the multiply of the Fx hash mixes best.
        let mut i = (h >> (64 - bits)) as usize;
        loop {
            match table[i] {
                0 => {
                    table[i] = h;
                    break;
                }
                x if x == h => {
                    apart = false;
                    break 'names;
                }
                _ => i = (i + 1) & mask,
            }
        }
    }
    if table.capacity() <= SPARE_NAME_HASHES {
        NAME_HASHES.with(|t| t.set(table));
    }
    apart
}

/// Whether `d` is a leaf: a node without operands.
#[inline(always)]
fn is_leaf(d: &ExprData) -> bool {
    matches!(d, ExprData::Const { .. } | ExprData::Local(_) | ExprData::CfRead(_))
}

/// Formats a list of errors one per line.
pub fn format_errors(errs: &[VerifyError]) -> String {
    errs.iter().map(|e| format!("{e}\n")).collect()
}

