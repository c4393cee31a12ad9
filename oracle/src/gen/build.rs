//! Builds one random function: structured control flow (if/else, counted loops, switch,
//! early exits, a little irreducible flow) lowered straight to a CFG of HIR blocks, with
//! statements and expression trees that use every IR feature, and (in [`policies`]) the
//! policy clusters that target the passes.
//!
//! Invariants kept by construction (checked by the tests and by the fuzz target's check,
//! never repaired afterwards):
//! * the module verifies: trees are well typed, nodes that yield nothing sit only at a
//!   statement root or in the first operand of a comma; every node built is placed in a
//!   tree, and the module declares exactly the helpers it calls;
//! * the entry block is never a branch target (targets are always fresh blocks) and every
//!   block is reachable: an arm may end in an exit only when the other way to the join
//!   stays open, and a default or fall-through path always reaches the join;
//! * every run terminates within the fuel bound the generator computes, which stays near
//!   [`Config::fuel_budget`] and far below the interpreter's default fuel: loops count
//!   with a counter local that nothing else assigns, trip counts are bounded by a
//!   constant or a masked value, and the generator adds up the block entries and nodes
//!   each statement evaluates times the trip counts around it, and stops adding code
//!   once the budget is reached;
//! * heap accesses stay in bounds: every address is a constant inside the heap or
//!   `HEAP_BASE + region + (e & mask)` with `mask + width <= region size`, or one of the
//!   address-mode shapes of [`operands`], whose masked parts add up to at most
//!   `region size - width`, or an address behind a bounds check in the same tree that
//!   traps before any access that would leave the heap;
//! * a division is guarded (its divisor can be neither 0 nor, if signed, -1 with a `MIN`
//!   dividend) except for a configured share.
//!
//! The policies follow the seeds: redundant expressions on several paths and loop
//! invariants (`ssapre.txt`), single-use temporaries defined by trees next to copies and
//! constants, followed by a redefinition (`tree-mover.txt`, "Base logic"), and the
//! LOAD-LOAD, STORE-LOAD, LOAD-STORE, dead STORE, STORE-STORE and loop-invariant LOAD and
//! STORE shapes of `callframe-data-motion.md` ("Types of optimization to be considered"),
//! for callframe variables and the heap, with helper calls and aliasing accesses in
//! between.

mod operands;
mod policies;
mod reach;

use super::config::{Config, Feature, FeatureSet, Weights};
use super::source::Source;
use cranelift_entity::SecondaryMap;
use tandem_core::helpers::HelperKind;
use tandem_core::ir::*;

/// Region items, in the order of [`Weights::items`].
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Item {
    Stmts,
    If,
    IfElse,
    Loop,
    Switch,
    Irreducible,
    Redundancy,
    TreeMover,
    CfMotion,
    HeapMotion,
    RegPressure,
    IfChain,
}

const ITEMS: [Item; 12] = [
    Item::Stmts,
    Item::If,
    Item::IfElse,
    Item::Loop,
    Item::Switch,
    Item::Irreducible,
    Item::Redundancy,
    Item::TreeMover,
    Item::CfMotion,
    Item::HeapMotion,
    Item::RegPressure,
    Item::IfChain,
];

/// Expression kinds, in the order of [`Weights::exprs`]; the first is the leaf, so an
/// exhausted byte source picks leaves.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum ExprKind {
    Leaf,
    Unary,
    Binary,
    Cmp,
    Convert,
    Select,
    Load,
    CfRead,
    Call,
    Comma,
    NestedAssign,
    Template,
}

const EXPR_KINDS: [ExprKind; 12] = [
    ExprKind::Leaf,
    ExprKind::Unary,
    ExprKind::Binary,
    ExprKind::Cmp,
    ExprKind::Convert,
    ExprKind::Select,
    ExprKind::Load,
    ExprKind::CfRead,
    ExprKind::Call,
    ExprKind::Comma,
    ExprKind::NestedAssign,
    ExprKind::Template,
];

/// Statement kinds, in the order of [`Weights::stmts`].
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum StmtKind {
    Assign,
    Store,
    CfWrite,
    Log,
    Log64,
    CfTrace,
    CfSet,
    HeapRmw,
    TrapIf,
    ValueStmt,
}

const STMT_KINDS: [StmtKind; 10] = [
    StmtKind::Assign,
    StmtKind::Store,
    StmtKind::CfWrite,
    StmtKind::Log,
    StmtKind::Log64,
    StmtKind::CfTrace,
    StmtKind::CfSet,
    StmtKind::HeapRmw,
    StmtKind::TrapIf,
    StmtKind::ValueStmt,
];

/// Interesting constants: the edges of both widths and of the shift and byte ranges.
const INTERESTING: [i64; 22] = [
    0,
    1,
    -1,
    2,
    3,
    7,
    8,
    31,
    32,
    33,
    63,
    64,
    0x7f,
    0x80,
    0xff,
    0x100,
    0xffff,
    0x7fff_ffff,
    -0x8000_0000,
    0xffff_ffff,
    i64::MAX,
    i64::MIN,
];

/// The operator `op'` with `a op b == b op' a`.
fn mirror(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Slt => CmpOp::Sgt,
        CmpOp::Sle => CmpOp::Sge,
        CmpOp::Sgt => CmpOp::Slt,
        CmpOp::Sge => CmpOp::Sle,
        CmpOp::Ult => CmpOp::Ugt,
        CmpOp::Ule => CmpOp::Uge,
        CmpOp::Ugt => CmpOp::Ult,
        CmpOp::Uge => CmpOp::Ule,
        CmpOp::Eq | CmpOp::Ne => op,
    }
}

/// A loop the code being generated is inside of: where `continue` and `break` go.
struct LoopCtx {
    latch: Block,
    exit: Block,
}

/// A heap region accesses are masked into: `HEAP_BASE + base .. + size`.
#[derive(Copy, Clone)]
struct Region {
    base: u32,
    size: u32,
}

/// The state of one function under construction.
pub(super) struct Gen<'a, S: Source> {
    src: &'a mut S,
    cfg: &'a Config,
    pub feats: FeatureSet,
    w: Weights,
    pub f: Function,
    /// The block statements go to; `None` after an exit closed it.
    cur: Option<Block>,
    /// Locals random statements may assign (not parameters, not loop counters).
    vars: Vec<Local>,
    /// Every local expressions may read. Changed only through [`Gen::make_readable`] and
    /// [`Gen::make_unreadable`], which keep `readable_of` in step.
    readable: Vec<Local>,
    /// `readable` split by type (`[i32, i64]`), each in `readable`'s order: the
    /// candidates of a leaf outside invariant mode, without a pass over every local.
    readable_of: [Vec<Local>; 2],
    /// Locals that must not be assigned now (loop invariants of an enclosing loop).
    frozen: Vec<Local>,
    /// Locals that must not be assigned now but are not invariant: those a swap at the
    /// end of an enclosing loop's body exchanges ([`Gen::plan_cycle`]).
    held: Vec<Local>,
    /// Callframe variables that must not be written now.
    frozen_cf: Vec<CfVar>,
    /// Callframe variables that must not be read now (loop-invariant STORE).
    noread_cf: Vec<CfVar>,
    /// While set, leaves are restricted to loop invariants.
    invariant_mode: bool,
    /// While set, expressions have no side effect other than a possible division trap.
    pure_mode: bool,
    /// Pure trees already placed, cloned elsewhere to make redundancy.
    templates: Vec<Expr>,
    /// Locals assigned since they were last read (in generation order): leaves prefer
    /// them and the return value reads them, so that values reach an observable
    /// (liveness-driven generation) instead of being deleted by `dce`.
    unread: Vec<Local>,
    /// Whether each local is in `unread`, so that a leaf tells without a search.
    is_unread: SecondaryMap<Local, bool>,
    /// [`Gen::leaf`]'s buffers: the readable locals of the type wanted, and those of
    /// them that are unread.
    leaf_candidates: (Vec<Local>, Vec<Local>),
    loops: Vec<LoopCtx>,
    regions: Vec<Region>,
    hot_offsets: Vec<u32>,
    /// Upper bound of how often the current block runs.
    mult: u64,
    /// Upper bound of the fuel spent so far.
    cost: u64,
    /// The size of each tree counted so far ([`node_count`]).
    sizes: SecondaryMap<Expr, u32>,
    /// Fuel kept for code the current region is followed by and that is not checked
    /// against the budget itself (the return value's first leaf, after the top region).
    reserve: u64,
    nesting: u32,
    temps: u32,
    pub helpers_used: Vec<HelperKind>,
    /// The shapes and policy patterns generated, by name, for the statistics.
    pub shapes: Vec<&'static str>,
}

/// Fuel the top region leaves for the return value's first leaf (an expression two
/// deep) and the trace call after it.
const RETURN_RESERVE: u64 = 64;

/// Nodes a loop's body leaves for the copies at its end and the latch (its entry, the
/// counter's increment and, bottom-tested, the test), each run once per round.
const LOOP_TAIL_NODES: u64 = 32;

/// The share of an SSA-form function's loops that exchange held variables at the end of
/// their body ([`Gen::plan_cycle`]).
const HELD_CYCLE_PERMILLE: u32 = 500;

/// The most nodes a local read converted to the return type takes (`trunc(x ^ (x >> 32))`,
/// see [`Gen::convert_to`]).
const LEAF_NODES: u64 = 6;

/// The nodes of the tree under `e`, remembered per node in `sizes` (0: not yet known), so
/// that a statement's count does not walk again the subtrees counted before. A node's
/// operands never change once it is built (the one rewrite in place, of a loop bound,
/// puts a constant where a constant was), so a remembered size stays true. `sizes` is
/// sized for every node first, so the walk never grows it a node at a time.
fn node_count(f: &Function, sizes: &mut SecondaryMap<Expr, u32>, e: Expr) -> u64 {
    fn count(f: &Function, sizes: &mut SecondaryMap<Expr, u32>, e: Expr) -> u32 {
        if sizes[e] == 0 {
            let mut n = 1;
            for op in f.exprs[e].operands() {
                n += count(f, sizes, op);
            }
            sizes[e] = n;
        }
        sizes[e]
    }
    if sizes.values().len() < f.exprs.len() {
        sizes.resize(f.exprs.len());
    }
    count(f, sizes, e) as u64
}

/// The index of `ty` in [`Gen`]'s `readable_of`.
fn type_slot(ty: Type) -> usize {
    match ty {
        Type::I32 => 0,
        Type::I64 => 1,
    }
}

/// The swarm features of one program: each dropped at the configured rate (and every
/// policy at once now and then), then made consistent with the profile and each other.
fn swarm_features<S: Source>(src: &mut S, cfg: &Config) -> FeatureSet {
    let mut feats = FeatureSet::all();
    if cfg.swarm {
        for f in Feature::ALL {
            if src.below(1000) < 1000 - cfg.feature_permille.min(1000) {
                feats.remove(f);
            }
        }
        if src.below(1000) >= 1000 - cfg.policies_off_permille.min(1000) {
            for f in Feature::POLICIES {
                feats.remove(f);
            }
        }
    }
    if cfg.ssa_form {
        for f in [Feature::If, Feature::Loop, Feature::NestedLoop, Feature::SsaStress] {
            feats.insert(f);
        }
    }
    if !feats.contains(Feature::I64) {
        feats.remove(Feature::Log64);
        feats.remove(Feature::Mix64);
    }
    if !feats.contains(Feature::Loop) {
        feats.remove(Feature::NestedLoop);
        feats.remove(Feature::LoopExit);
        feats.remove(Feature::LoopInvariant);
    }
    feats
}

/// The weights of the program's items, expressions, statements and operators: each
/// feature that is on gets a random weight, the profile's biases on top.
fn draw_weights<S: Source>(src: &mut S, cfg: &Config, feats: &FeatureSet) -> Weights {
    let on = |f: Feature| feats.contains(f);
    let weight = |cond: bool, src: &mut S| if cond { 1 + src.below(8) } else { 0 };
    let items = [
        weight(true, src) + 4,
        weight(on(Feature::If), src),
        weight(on(Feature::If), src),
        weight(on(Feature::Loop), src),
        weight(on(Feature::Switch), src),
        weight(on(Feature::Irreducible), src) / 3,
        weight(on(Feature::Redundancy), src),
        weight(on(Feature::TreeMover), src),
        weight(on(Feature::CfMotion) && on(Feature::CfVars), src),
        weight(on(Feature::HeapMotion) && (on(Feature::Load) || on(Feature::Store)), src),
        weight(on(Feature::RegPressure), src) / 2,
        weight(on(Feature::If) && on(Feature::SsaStress), src) / 2,
    ];
    let exprs = [
        weight(true, src) + 6,
        weight(true, src),
        weight(true, src) + 6,
        weight(on(Feature::Cmp), src),
        weight(on(Feature::Convert) && on(Feature::I64), src),
        weight(on(Feature::Select), src),
        weight(on(Feature::Load), src),
        weight(on(Feature::CfVars), src),
        weight(on(Feature::Mix) || on(Feature::Mix64) || on(Feature::HeapRmw), src),
        weight(on(Feature::Comma), src),
        weight(on(Feature::NestedAssign), src),
        weight(on(Feature::Redundancy), src),
    ];
    let stmts = [
        weight(true, src) + 8,
        weight(on(Feature::Store), src),
        weight(on(Feature::CfVars), src),
        weight(on(Feature::Log), src),
        weight(on(Feature::Log64), src),
        weight(on(Feature::CfTrace), src),
        weight(on(Feature::CfSet) && on(Feature::CfVars), src),
        weight(on(Feature::HeapRmw), src),
        weight(on(Feature::TrapIf), src),
        weight(on(Feature::Comma), src),
    ];
    let binops = BinOp::ALL.map(|op| {
        let f = match op {
            BinOp::Add | BinOp::Sub => None,
            BinOp::Mul => Some(Feature::Mul),
            BinOp::And | BinOp::Or | BinOp::Xor => Some(Feature::Bitwise),
            BinOp::Shl | BinOp::Lshr | BinOp::Ashr => Some(Feature::Shift),
            _ => Some(Feature::Div),
        };
        weight(f.is_none_or(on), src)
    });
    let (mut items, mut exprs, mut stmts) = (items, exprs, stmts);
    let bias = |w: &mut u32, b: u32| {
        if *w > 0 {
            *w += b;
        }
    };
    bias(&mut items[3], cfg.loop_bias);
    for i in [8, 9] {
        bias(&mut items[i], cfg.memory_bias);
    }
    for i in [6, 7] {
        bias(&mut exprs[i], cfg.memory_bias);
    }
    for i in [1, 2, 7] {
        bias(&mut stmts[i], cfg.memory_bias);
    }
    // Checks are where a signed test for an unsigned one shows (`build/reach.rs`): more
    // of them where they are on at all.
    bias(&mut stmts[8], 4);
    // At least a quarter where i64 is on at all: each i64 operator's decomposition has
    // its own slips (`build/reach.rs`), seen only where such operators are evaluated.
    let i64_permille = if on(Feature::I64) { 250 + src.below(450) } else { 0 };
    let exit_permille = 100 + src.below(300);
    Weights { items, exprs, stmts, binops, i64_permille, exit_permille }
}

impl<'a, S: Source> Gen<'a, S> {
    /// Draws the program's features and weights and sets up an empty function.
    pub(super) fn new(src: &'a mut S, cfg: &'a Config) -> Gen<'a, S> {
        let feats = swarm_features(src, cfg);
        let w = draw_weights(src, cfg, &feats);
        let f = Function {
            name: "f".to_string(),
            params: vec![],
            ret: Type::I32,
            locals: Default::default(),
            cfvars: Default::default(),
            exprs: Default::default(),
            blocks: Default::default(),
            layout: vec![],
        };
        Gen {
            src,
            cfg,
            feats,
            w,
            f,
            cur: None,
            vars: vec![],
            readable: vec![],
            readable_of: [vec![], vec![]],
            frozen: vec![],
            held: vec![],
            frozen_cf: vec![],
            noread_cf: vec![],
            invariant_mode: false,
            pure_mode: false,
            templates: vec![],
            unread: vec![],
            is_unread: SecondaryMap::new(),
            leaf_candidates: (vec![], vec![]),
            loops: vec![],
            regions: vec![],
            hot_offsets: vec![],
            mult: 1,
            cost: 0,
            sizes: SecondaryMap::new(),
            reserve: 0,
            nesting: 0,
            temps: 0,
            helpers_used: vec![],
            shapes: vec![],
        }
    }

    // ----- choices -----

    fn below(&mut self, n: u32) -> u32 {
        self.src.below(n.max(1))
    }

    /// True with the given chance; false when the byte source is exhausted.
    fn chance(&mut self, permille: u32) -> bool {
        self.src.below(1000) >= 1000 - permille.min(1000)
    }

    /// The upper bound of the fuel a run uses, as counted so far.
    pub(super) fn fuel_bound(&self) -> u64 {
        self.cost
    }

    fn note(&mut self, shape: &'static str) {
        self.shapes.push(shape);
    }

    fn on(&self, f: Feature) -> bool {
        self.feats.contains(f)
    }

    /// Picks an index by weight; `None` when every weight is zero.
    fn weighted(&mut self, w: &[u32]) -> Option<usize> {
        let total: u32 = w.iter().sum();
        if total == 0 {
            return None;
        }
        let mut r = self.below(total);
        for (i, &x) in w.iter().enumerate() {
            if r < x {
                return Some(i);
            }
            r -= x;
        }
        None
    }

    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u32) as usize]
    }

    fn ty(&mut self) -> Type {
        if self.chance(self.w.i64_permille) {
            Type::I64
        } else {
            Type::I32
        }
    }

    /// The operand type of a compare: i64 more often than elsewhere when the program
    /// has i64 at all, since an i64 compare's decomposition has the most cases.
    fn cmp_ty(&mut self) -> Type {
        if self.w.i64_permille > 0 && self.chance(reach::I64_COMPARE_PERMILLE) {
            Type::I64
        } else {
            self.ty()
        }
    }

    // ----- building blocks -----

    fn add(&mut self, data: ExprData) -> Expr {
        self.f.add_expr(data)
    }

    fn konst(&mut self, ty: Type, v: i64) -> Expr {
        self.add(ExprData::Const { ty, value: ty.normalize(v) })
    }

    fn local(&mut self, l: Local) -> Expr {
        if self.is_unread[l] {
            self.is_unread[l] = false;
            self.unread.retain(|&u| u != l);
        }
        self.add(ExprData::Local(l))
    }

    fn bin(&mut self, op: BinOp, lhs: Expr, rhs: Expr) -> Expr {
        self.add(ExprData::Binary { op, lhs, rhs })
    }

    fn cmp(&mut self, op: CmpOp, lhs: Expr, rhs: Expr) -> Expr {
        self.add(ExprData::Cmp { op, lhs, rhs })
    }

    fn assign(&mut self, local: Local, value: Expr) -> Expr {
        if !self.is_unread[local] {
            self.is_unread[local] = true;
            self.unread.push(local);
        }
        self.add(ExprData::Assign { local, value })
    }

    fn call(&mut self, helper: HelperKind, args: Vec<Expr>) -> Expr {
        if !self.helpers_used.contains(&helper) {
            self.helpers_used.push(helper);
        }
        self.add(ExprData::Call { helper, args })
    }

    fn ty_of(&self, e: Expr) -> Type {
        self.f.expr_type(e).expect("a value")
    }

    /// Creates a block outside the layout; [`Gen::enter`] places it.
    fn create_block(&mut self) -> Block {
        let placeholder = Terminator::Jump(Block::from_u32(0));
        // Room for a typical block's statements, so that pushing them seldom reallocates.
        self.f.blocks.push(BlockData { phis: vec![], stmts: Vec::with_capacity(8), term: placeholder })
    }

    /// Places `b` at the end of the layout and makes it current.
    fn enter(&mut self, b: Block) {
        self.f.layout.push(b);
        self.cur = Some(b);
        self.cost += self.mult;
    }

    /// Ends the current block with `term`.
    fn seal(&mut self, term: Terminator) {
        let b = self.cur.take().expect("an open block");
        if let Some(e) = term.expr() {
            self.cost += self.mult * node_count(&self.f, &mut self.sizes, e);
        }
        self.f.blocks[b].term = term;
    }

    fn push(&mut self, stmt: Expr) {
        let b = self.cur.expect("an open block");
        self.cost += self.mult * node_count(&self.f, &mut self.sizes, stmt);
        self.f.blocks[b].stmts.push(stmt);
    }

    fn new_temp(&mut self, ty: Type) -> Local {
        self.temps += 1;
        // `t<n>` is unique without `Function::new_local`'s search of every name: only
        // temporaries are named `t...`, and `temps` only grows.
        let l = self.f.locals.push(LocalData { name: format!("t{}", self.temps), ty });
        self.make_readable(l);
        l
    }

    /// Lets expressions read `l` from now on.
    fn make_readable(&mut self, l: Local) {
        self.readable.push(l);
        self.readable_of[type_slot(self.f.locals[l].ty)].push(l);
    }

    /// Keeps expressions from reading `l`.
    fn make_unreadable(&mut self, l: Local) {
        self.readable.retain(|&r| r != l);
        self.readable_of[type_slot(self.f.locals[l].ty)].retain(|&r| r != l);
    }

    /// Whether adding about `nodes` more evaluated nodes in the current block stays
    /// within the fuel budget, with the reserve and the zero versions still to come.
    fn fits(&self, nodes: u64) -> bool {
        self.cost + self.reserve + self.zero_versions() + self.mult * nodes <= self.cfg.fuel_budget
    }

    /// An upper bound of the fuel the zero versions `%x.0 = 0` take that the SSA
    /// construction of an `ssa_form` function adds to its entry block (two nodes each, at
    /// most one per local; see [`super::ssa`]), which the caller adds to the bound.
    fn zero_versions(&self) -> u64 {
        if self.cfg.ssa_form {
            2 * self.f.locals.len() as u64
        } else {
            0
        }
    }

    fn blocks_left(&self, n: u32) -> bool {
        self.f.blocks.len() as u32 + n <= self.cfg.max_blocks
    }

    // ----- the function -----

    /// Generates the whole function.
    pub(super) fn function(&mut self) {
        // At least one parameter (when allowed), so that the runs of a case differ.
        let nparams = (1 + self.below(self.cfg.max_params)).min(self.cfg.max_params);
        for i in 0..nparams {
            let ty = self.ty();
            let p = self.f.new_local(&format!("p{i}"), ty);
            self.f.params.push(p);
            self.make_readable(p);
        }
        let nvars = 1 + self.below(self.cfg.max_vars);
        for i in 0..nvars {
            let ty = self.ty();
            let v = self.f.new_local(&format!("v{i}"), ty);
            self.vars.push(v);
            self.make_readable(v);
        }
        if self.on(Feature::CfVars) {
            let n = self.below(self.cfg.max_cfvars + 1);
            for i in 0..n {
                let ty = self.ty();
                self.f.cfvars.push(CfVarData { name: format!("c{i}"), ty });
            }
        }
        self.f.ret = self.ty();
        // Heap regions accesses are masked into, and hot constant addresses, so that
        // accesses alias often.
        for _ in 0..1 + self.below(3) {
            let size = self.pick(&[16u32, 32, 64, 256, 4096]);
            let base = self.below(HEAP_SIZE / size) * size;
            self.regions.push(Region { base, size });
        }
        for _ in 0..1 + self.below(4) {
            let o = self.below(HEAP_SIZE / 8) * 8 + self.pick(&[0u32, 0, 0, 1, 2, 4]);
            self.hot_offsets.push(o.min(HEAP_SIZE - 8));
        }
        let entry = self.create_block();
        self.enter(entry);
        // Give the variables values from the parameters and constants.
        let vars = self.vars.clone();
        for v in vars {
            if self.chance(600) {
                let ty = self.f.locals[v].ty;
                let e = self.expr(ty, 2);
                let s = self.assign(v, e);
                self.push(s);
            }
        }
        if self.chance(reach::WORD_EDGES_PERMILLE) {
            self.word_edges();
        }
        self.reserve = RETURN_RESERVE;
        self.region(0, false);
        self.reserve = 0;
        // The return value folds many locals together so that their values are observed:
        // first those assigned and not read since (most of them, under anchoring), then
        // others at random, as many as the budget leaves room for. `nodes` counts the
        // return tree's nodes and the trace call that may follow.
        let ret = self.f.ret;
        let first = if self.fits(RETURN_RESERVE) { self.expr(ret, 2) } else { self.leaf(ret) };
        let mut nodes = node_count(&self.f, &mut self.sizes, first) + 1;
        let mut leaves = vec![first];
        let unread: Vec<Local> = self.unread.iter().copied().filter(|l| self.readable.contains(l)).collect();
        for l in unread {
            if leaves.len() < 40 && self.chance(self.cfg.anchor_permille) && self.fits(nodes + LEAF_NODES + 1) {
                let x = self.local(l);
                let leaf = self.convert_to(x, ret);
                nodes += node_count(&self.f, &mut self.sizes, leaf) + 1;
                leaves.push(leaf);
            }
        }
        let readable = self.readable.clone();
        for l in readable {
            if leaves.len() < 32 && self.chance(500) && self.fits(nodes + LEAF_NODES + 1) {
                let x = self.local(l);
                let leaf = self.convert_to(x, ret);
                nodes += node_count(&self.f, &mut self.sizes, leaf) + 1;
                leaves.push(leaf);
            }
        }
        let acc = self.combine(leaves, &[BinOp::Xor, BinOp::Add, BinOp::Sub]);
        if self.on(Feature::CfTrace) && !self.f.cfvars.is_empty() && self.chance(300) {
            let c = self.call(HelperKind::CfTrace, vec![]);
            self.push(c);
        }
        self.seal(Terminator::Return(acc));
    }

    /// A sequence of items; when `exit_ok`, it may end in an exit (return, break,
    /// continue), which closes the region.
    fn region(&mut self, depth: u32, exit_ok: bool) {
        let n = 1 + self.below(self.cfg.max_region_items);
        for _ in 0..n {
            if !self.fits(40) || self.cur.is_none() {
                break;
            }
            self.item(depth);
        }
        if exit_ok && self.cur.is_some() && self.chance(self.w.exit_permille) {
            self.exit();
        }
    }

    fn exit(&mut self) {
        let mut choices = vec![];
        if self.on(Feature::EarlyReturn) {
            choices.push(0);
        }
        if self.on(Feature::LoopExit) && !self.loops.is_empty() {
            choices.push(1);
            choices.push(2);
        }
        if choices.is_empty() {
            return;
        }
        match self.pick(&choices) {
            0 => {
                self.note("exit return");
                let ret = self.f.ret;
                let e = self.expr(ret, 2);
                self.seal(Terminator::Return(e));
            }
            1 => {
                self.note("exit break");
                let t = self.loops.last().unwrap().exit;
                self.seal(Terminator::Jump(t));
            }
            _ => {
                self.note("exit continue");
                let t = self.loops.last().unwrap().latch;
                self.seal(Terminator::Jump(t));
            }
        }
    }

    fn item(&mut self, depth: u32) {
        let mut w = self.w.items;
        let structures_ok = depth < self.cfg.max_nesting && self.blocks_left(6) && self.fits(400);
        if !structures_ok {
            for (i, it) in ITEMS.iter().enumerate() {
                if matches!(it, Item::If | Item::IfElse | Item::Loop | Item::Switch | Item::Irreducible | Item::IfChain) {
                    w[i] = 0;
                }
            }
        }
        if self.loops.len() as u32 >= self.cfg.max_loop_depth
            || (!self.loops.is_empty() && !self.on(Feature::NestedLoop))
        {
            w[3] = 0;
            w[5] = 0;
        }
        if !self.blocks_left(4) || !self.fits(300) {
            for x in &mut w[6..] {
                *x = 0;
            }
        }
        let Some(i) = self.weighted(&w) else { return };
        self.nesting = depth;
        match ITEMS[i] {
            Item::Stmts => {
                let n = 1 + self.below(4);
                for _ in 0..n {
                    if !self.fits(60) {
                        break;
                    }
                    let depth = 1 + self.below(self.cfg.max_expr_depth);
                    let s = self.stmt(depth);
                    self.push(s);
                }
            }
            Item::If => self.gen_if(depth, false),
            Item::IfElse => self.gen_if(depth, true),
            Item::Loop => self.gen_loop(depth),
            Item::Switch => self.gen_switch(depth),
            Item::Irreducible => self.gen_irreducible(depth),
            Item::Redundancy => self.redundancy(),
            Item::TreeMover => self.tree_mover(),
            Item::CfMotion => self.cf_motion(),
            Item::HeapMotion => self.heap_motion(),
            Item::RegPressure => self.reg_pressure(),
            Item::IfChain => self.gen_if_chain(depth),
        }
    }

    /// A branch condition.
    fn cond(&mut self, depth: u32) -> Expr {
        let ty = self.cmp_ty();
        match self.below(8) {
            0 => self.expr(Type::I32, depth),
            1 => {
                let a = self.expr(Type::I32, depth);
                let one = self.konst(Type::I32, 1);
                self.bin(BinOp::And, a, one)
            }
            _ => {
                let op = self.pick(&CmpOp::ALL);
                let a = self.expr(ty, depth);
                let b = if self.chance(reach::SIGN_EDGE_PERMILLE) {
                    // Against a sign edge, an equality tells nothing signedness decides.
                    let op = self.ordering(op);
                    let b = self.sign_edge(ty);
                    return self.cmp(op, a, b);
                } else if self.chance(500) {
                    let v = self.pick(&INTERESTING[..12]);
                    self.konst(ty, v)
                } else {
                    self.expr(ty, depth)
                };
                self.cmp(op, a, b)
            }
        }
    }

    fn gen_if(&mut self, depth: u32, with_else: bool) {
        let c = self.cond(2);
        // A rare duplicate edge: both ways lead to the join (SSA construction stress).
        if self.on(Feature::SsaStress) && self.chance(30) {
            self.note("if with a duplicate edge");
            let join = self.create_block();
            self.seal(Terminator::Branch { cond: c, then_dest: join, else_dest: join });
            self.enter(join);
            return;
        }
        self.note(if with_else { "if-else" } else { "if" });
        let then_b = self.create_block();
        let else_b = with_else.then(|| self.create_block());
        let join = self.create_block();
        self.seal(Terminator::Branch { cond: c, then_dest: then_b, else_dest: else_b.unwrap_or(join) });
        self.enter(then_b);
        self.region(depth + 1, true);
        let then_open = self.cur.is_some();
        if then_open {
            self.seal(Terminator::Jump(join));
        }
        if let Some(e) = else_b {
            self.enter(e);
            self.region(depth + 1, then_open);
            if self.cur.is_some() {
                self.seal(Terminator::Jump(join));
            }
        }
        self.enter(join);
    }

    /// `if c1 {..} else if c2 {..} ... else {..}` with every arm jumping straight to one
    /// join: a block with many predecessors, where variables assigned in several arms
    /// meet (SSA construction stress).
    fn gen_if_chain(&mut self, depth: u32) {
        let room = (self.cfg.max_blocks.saturating_sub(self.f.blocks.len() as u32) / 2).saturating_sub(1);
        let k = (2 + self.below(4)).min(room.max(1));
        self.note("if-else chain to one join");
        // All blocks first, so that the structures nested in the arms see the count.
        let join = self.create_block();
        let blocks: Vec<(Block, Block)> = (0..k).map(|_| (self.create_block(), self.create_block())).collect();
        for (arm, next) in blocks {
            let c = self.cond(1);
            self.seal(Terminator::Branch { cond: c, then_dest: arm, else_dest: next });
            self.enter(arm);
            self.region(depth + 1, true);
            if self.cur.is_some() {
                self.seal(Terminator::Jump(join));
            }
            self.enter(next);
        }
        // The last else falls through, so the join stays reachable.
        self.region(depth + 1, false);
        if self.cur.is_some() {
            self.seal(Terminator::Jump(join));
        }
        self.enter(join);
    }

    /// A counted loop, top- or bottom-tested, with a fresh counter local.
    fn gen_loop(&mut self, depth: u32) {
        let mut trips = 1 + self.below(self.cfg.max_trip_count);
        while trips > 1 && !self.fits(60 * (trips as u64 + 1)) {
            trips /= 2;
        }
        let (counter, cty, bound) = self.loop_counter(trips);
        let trips = trips as u64;
        let bottom = self.chance(400);
        self.note(if bottom { "loop bottom-tested" } else { "loop top-tested" });
        if !self.loops.is_empty() {
            self.note("loop nested");
        }
        let header = (!bottom).then(|| self.create_block());
        let body = self.create_block();
        let latch = self.create_block();
        let exit = self.create_block();
        let outer_mult = self.mult;
        // In an SSA-form function, many loops exchange held variables at the end of their
        // body (a cycle of phis on the back edge), set apart here before the loop.
        let held_before = self.held.len();
        let cycle = if self.cfg.ssa_form && self.on(Feature::SsaStress) && self.chance(HELD_CYCLE_PERMILLE) && self.fits(10) {
            self.plan_cycle()
        } else {
            None
        };
        // Loop invariants: freeze a few variables and maybe a callframe variable.
        let frozen_before = (self.frozen.len(), self.frozen_cf.len(), self.noread_cf.len());
        let invariants = self.on(Feature::LoopInvariant) && self.chance(600);
        if invariants {
            self.freeze_invariants();
        }
        let lt = |g: &mut Self, bound: Expr| g.loop_test(counter, bound, cty);
        if let Some(header) = header {
            self.seal(Terminator::Jump(header));
            self.mult = outer_mult * (trips + 1);
            self.enter(header);
            let c = lt(self, bound);
            self.seal(Terminator::Branch { cond: c, then_dest: body, else_dest: exit });
        } else {
            self.seal(Terminator::Jump(body));
        }
        self.mult = outer_mult * trips.max(1);
        self.loops.push(LoopCtx { latch, exit });
        self.enter(body);
        if invariants {
            self.invariant_stmts();
        }
        // The body itself falls through (exits sit inside its branches), so the latch
        // stays reachable. It leaves room for the copies after it and the latch.
        let reserve = self.reserve;
        self.reserve += LOOP_TAIL_NODES * self.mult;
        self.region(depth + 1, false);
        self.reserve = reserve;
        if self.cur.is_some() {
            let copies = if self.cfg.ssa_form { 900 } else { 500 };
            if let Some(chosen) = &cycle {
                self.rotate(chosen);
            } else if self.on(Feature::SsaStress) && self.chance(copies) {
                self.loop_copies();
            }
            self.seal(Terminator::Jump(latch));
        }
        self.loops.pop();
        self.enter(latch);
        self.loop_latch(counter, cty, bound, header, body, exit);
        self.frozen.truncate(frozen_before.0);
        self.held.truncate(held_before);
        self.frozen_cf.truncate(frozen_before.1);
        self.noread_cf.truncate(frozen_before.2);
        self.mult = outer_mult;
        self.make_readable(counter);
        self.enter(exit);
    }

    /// The counter of a new loop of `trips` rounds, set to its start here, its type and
    /// the bound its test compares it with.
    fn loop_counter(&mut self, trips: u32) -> (Local, Type, Expr) {
        let cty = if self.chance(250) { self.cmp_ty() } else { Type::I32 };
        let counter = self.f.new_local(&format!("i{}", self.loops.len()), cty);
        // Half of the loops count from -k to n - k: the same rounds, but the counter
        // crosses the sign boundary, so that the test tells signed from unsigned.
        let k = if self.chance(500) { self.pick(&[1i64, 2, 3, 8]) } else { 0 };
        if k > 0 {
            self.note("loop counter from below zero");
        }
        let start = self.konst(cty, -k);
        let init = self.assign(counter, start);
        self.push(init);
        let bound = self.loop_bound(trips, cty);
        let bound = self.shift_bound(bound, k, cty);
        (counter, cty, bound)
    }

    /// The latch of a loop (the current block): the counter's increment, then the test
    /// back to `body` of a bottom-tested loop or the jump to its `header`.
    fn loop_latch(&mut self, counter: Local, cty: Type, bound: Expr, header: Option<Block>, body: Block, exit: Block) {
        let c = self.local(counter);
        let one = self.konst(cty, 1);
        let inc = self.bin(BinOp::Add, c, one);
        let s = self.assign(counter, inc);
        self.push(s);
        match header {
            None => {
                let c = self.loop_test(counter, bound, cty);
                self.seal(Terminator::Branch { cond: c, then_dest: body, else_dest: exit });
            }
            Some(h) => self.seal(Terminator::Jump(h)),
        }
    }

    /// `bound - k` (folded when the bound is a constant).
    fn shift_bound(&mut self, bound: Expr, k: i64, cty: Type) -> Expr {
        if k == 0 {
            return bound;
        }
        if let ExprData::Const { value, .. } = self.f.exprs[bound] {
            self.f.exprs[bound] = ExprData::Const { ty: cty, value: value - k };
            return bound;
        }
        let kk = self.konst(cty, k);
        self.bin(BinOp::Sub, bound, kk)
    }

    /// `counter < bound` written with any of the four signed orderings (`slt(c, b)`,
    /// `sle(c, b - 1)`, `sgt(b, c)`, `sge(b - 1, c)`): each is the signed member of one
    /// signed/unsigned pair.
    fn loop_test(&mut self, counter: Local, bound: Expr, cty: Type) -> Expr {
        let c = self.local(counter);
        let minus_one = |g: &mut Self, b: Expr| {
            let one = g.konst(cty, 1);
            g.bin(BinOp::Sub, b, one)
        };
        match self.below(4) {
            0 => self.cmp(CmpOp::Slt, c, bound),
            1 => {
                let b = minus_one(self, bound);
                self.cmp(CmpOp::Sle, c, b)
            }
            2 => self.cmp(CmpOp::Sgt, bound, c),
            _ => {
                let b = minus_one(self, bound);
                self.cmp(CmpOp::Sge, b, c)
            }
        }
    }

    /// The bound of a loop of at most `trips` trips: a constant, or a value masked to
    /// stay at most the trip count.
    fn loop_bound(&mut self, trips: u32, cty: Type) -> Expr {
        if self.chance(300) {
            self.note("loop with a masked bound");
            let mask = (trips + 1).next_power_of_two() / 2;
            let mask = mask.max(1) - 1;
            let e = self.expr(Type::I32, 1);
            let m = self.konst(Type::I32, mask as i64);
            let b = self.bin(BinOp::And, e, m);
            self.convert_to(b, cty)
        } else {
            self.konst(cty, trips as i64)
        }
    }

    /// Loop invariants: freezes a few variables and maybe a callframe variable (read
    /// only, or written only) for the loop about to be built.
    fn freeze_invariants(&mut self) {
        let vars = self.vars.clone();
        for v in vars {
            if self.chance(500) && !self.held.contains(&v) {
                self.frozen.push(v);
            }
        }
        let cfs: Vec<CfVar> = self.f.cfvars.keys().collect();
        if !cfs.is_empty() {
            let c = self.pick(&cfs);
            if self.chance(500) {
                if !self.noread_cf.contains(&c) {
                    self.note("loop-invariant cfread");
                    self.frozen_cf.push(c);
                }
            } else if !self.frozen_cf.contains(&c) {
                self.note("loop-invariant cfwrite");
                self.noread_cf.push(c);
            }
        }
    }

    /// Statements at the top of a loop body whose values do not change in the loop.
    fn invariant_stmts(&mut self) {
        self.note("loop-invariant expressions");
        let n = 1 + self.below(3);
        for _ in 0..n {
            // Each round of the body runs them: checked at the body's mult, with the
            // loop's tail still to come (the budget check the loop made before its first
            // round only covered a few nodes a round).
            if !self.fits(60 + LOOP_TAIL_NODES) {
                return;
            }
            let ty = self.ty();
            self.invariant_mode = true;
            let e = self.expr(ty, 3);
            self.invariant_mode = false;
            let t = self.new_temp(ty);
            let s = self.assign(t, e);
            self.push(s);
        }
        // A loop-invariant STORE: write a callframe variable nothing in the loop reads.
        if let Some(&c) = self.noread_cf.last() {
            if !self.frozen_cf.contains(&c) && self.fits(40 + LOOP_TAIL_NODES) {
                let ty = self.f.cfvars[c].ty;
                let e = self.expr(ty, 2);
                let s = self.add(ExprData::CfWrite { var: c, value: e });
                self.push(s);
            }
        }
        // A loop-invariant heap STORE to a hot address (maybe neighbour accesses).
        if self.on(Feature::Store) && self.fits(200 + LOOP_TAIL_NODES) && self.chance(300) {
            self.note("loop-invariant store");
            let s = self.store(2);
            self.push(s);
        }
    }

    fn gen_switch(&mut self, depth: u32) {
        let ty = self.ty();
        let raw = self.expr(ty, 2);
        let span = self.pick(&[3i64, 7, 15]);
        // An `i64` switch whose keys differ only in their high words (`k` and
        // `k + 2^32`): the backend compares the two halves separately.
        let high_words = ty == Type::I64 && self.chance(400);
        let value = if high_words {
            self.note("switch i64 on keys that differ in the high word");
            let m = self.konst(ty, span);
            let low = self.bin(BinOp::And, raw, m);
            let x = self.expr(ty, 1);
            let one = self.konst(ty, 1);
            let bit = self.bin(BinOp::And, x, one);
            let k32 = self.konst(ty, 32);
            let high = self.bin(BinOp::Shl, bit, k32);
            self.bin(BinOp::Add, low, high)
        } else if self.chance(700) {
            let m = self.konst(ty, span);
            self.bin(BinOp::And, raw, m)
        } else {
            raw
        };
        self.note("switch");
        // Cases, the join and a default block must fit in the block limit.
        let room = self.cfg.max_blocks.saturating_sub(self.f.blocks.len() as u32 + 2);
        let ncases = (1 + self.below(5)).min(room.max(1));
        let join = self.create_block();
        let mut targets: Vec<Block> = vec![];
        let mut cases = vec![];
        let mut used = vec![];
        for _ in 0..ncases {
            let mut k = self.below(span as u32 + 3) as i64 - 1;
            if high_words && self.chance(500) {
                k += 1 << 32;
            }
            if used.contains(&k) {
                continue;
            }
            used.push(k);
            // Shared case targets make duplicate edges and many-predecessor blocks.
            let t = if !targets.is_empty() && self.on(Feature::SsaStress) && self.chance(250) {
                self.note("switch with a shared target");
                self.pick(&targets)
            } else if self.on(Feature::SsaStress) && self.chance(100) {
                self.note("switch case to the join");
                join
            } else {
                let b = self.create_block();
                targets.push(b);
                b
            };
            cases.push((ty.normalize(k), t));
        }
        let default = if self.chance(500) {
            join
        } else {
            let b = self.create_block();
            targets.push(b);
            b
        };
        let default_has_block = default != join;
        self.seal(Terminator::Switch { value, default, cases });
        let n = targets.len();
        for (i, t) in targets.into_iter().enumerate() {
            self.enter(t);
            // The default's block always falls through, so the join stays reachable.
            let is_default = default_has_block && i == n - 1;
            self.region(depth + 1, !is_default);
            if self.cur.is_some() {
                self.seal(Terminator::Jump(join));
            }
        }
        self.enter(join);
    }

    /// Two blocks that jump to each other, both entered from outside: an irreducible
    /// loop, bounded by a shared counter.
    fn gen_irreducible(&mut self, depth: u32) {
        self.note("irreducible loop");
        let trips = (1 + self.below(self.cfg.max_trip_count)) as u64;
        let k = self.new_temp(Type::I32);
        self.make_unreadable(k);
        let zero = self.konst(Type::I32, 0);
        let s = self.assign(k, zero);
        self.push(s);
        let c = self.cond(1);
        let a = self.create_block();
        let b = self.create_block();
        let exit = self.create_block();
        self.seal(Terminator::Branch { cond: c, then_dest: a, else_dest: b });
        let outer = self.mult;
        self.mult = outer * (trips + 1);
        for (this, other) in [(a, b), (b, a)] {
            self.enter(this);
            self.region(depth + 1, false);
            let l = self.local(k);
            let one = self.konst(Type::I32, 1);
            let inc = self.bin(BinOp::Add, l, one);
            let s = self.assign(k, inc);
            self.push(s);
            let l = self.local(k);
            let n = self.konst(Type::I32, trips as i64);
            let c = self.cmp(CmpOp::Slt, l, n);
            self.seal(Terminator::Branch { cond: c, then_dest: other, else_dest: exit });
        }
        self.mult = outer;
        self.make_readable(k);
        self.enter(exit);
    }

    /// Combines same-typed values into one balanced tree of binary operators (its depth
    /// grows with the logarithm of the number of values, far from the parser's limit).
    fn combine(&mut self, mut leaves: Vec<Expr>, ops: &[BinOp]) -> Expr {
        while leaves.len() > 1 {
            let mut next = vec![];
            for pair in leaves.chunks(2) {
                if pair.len() == 2 {
                    let op = self.pick(ops);
                    next.push(self.bin(op, pair[0], pair[1]));
                } else {
                    next.push(pair[0]);
                }
            }
            leaves = next;
        }
        leaves[0]
    }

    // ----- statements -----

    /// One statement (a tree whose root may yield nothing).
    fn stmt(&mut self, depth: u32) -> Expr {
        let mut w = self.w.stmts;
        if self.f.cfvars.is_empty() {
            w[2] = 0;
            w[5] /= 2;
            w[6] = 0;
        }
        if !self.noread_cf.is_empty() {
            w[5] = 0;
        }
        if !self.frozen_cf.is_empty() {
            w[6] = 0;
        }
        let kind = self.weighted(&w).map_or(StmtKind::Assign, |i| STMT_KINDS[i]);
        self.effect_of(kind, depth)
    }

    /// A node that yields nothing, for a comma's first operand.
    fn effect(&mut self, depth: u32) -> Expr {
        let mut w = self.w.stmts;
        w[9] = 0;
        if self.f.cfvars.is_empty() || !self.noread_cf.is_empty() {
            w[5] = 0;
        }
        if self.f.cfvars.is_empty() || !self.frozen_cf.is_empty() {
            w[2] = 0;
            w[6] = 0;
        }
        let kind = self.weighted(&w).map_or(StmtKind::Assign, |i| STMT_KINDS[i]);
        self.effect_of(kind, depth)
    }

    fn assignable(&self, ty: Option<Type>) -> Vec<Local> {
        self.vars
            .iter()
            .copied()
            .filter(|v| !self.frozen.contains(v) && !self.held.contains(v) && ty.is_none_or(|t| self.f.locals[*v].ty == t))
            .collect()
    }

    fn effect_of(&mut self, kind: StmtKind, depth: u32) -> Expr {
        match kind {
            StmtKind::Store => self.store(depth),
            StmtKind::CfWrite => {
                let cfs: Vec<CfVar> = self.f.cfvars.keys().filter(|c| !self.frozen_cf.contains(c)).collect();
                if cfs.is_empty() {
                    return self.effect_of(StmtKind::Assign, depth);
                }
                let v = self.pick(&cfs);
                let ty = self.f.cfvars[v].ty;
                let e = self.expr(ty, depth);
                self.add(ExprData::CfWrite { var: v, value: e })
            }
            StmtKind::Log => {
                let a = self.expr(Type::I32, depth);
                let b = self.expr(Type::I32, depth);
                self.call(HelperKind::Log, vec![a, b])
            }
            StmtKind::Log64 => {
                let a = self.expr(Type::I64, depth);
                self.call(HelperKind::Log64, vec![a])
            }
            StmtKind::CfTrace => self.call(HelperKind::CfTrace, vec![]),
            StmtKind::CfSet => {
                let i = self.expr(Type::I32, 1);
                let v = self.expr(Type::I32, depth);
                self.call(HelperKind::CfSet, vec![i, v])
            }
            StmtKind::HeapRmw => {
                let a = self.addr_value(depth.min(2));
                let d = self.expr(Type::I32, depth);
                let c = self.call(HelperKind::HeapRmw, vec![a, d]);
                match self.assignable(Some(Type::I32)).as_slice() {
                    [] => self.comma_discard(c),
                    v => {
                        let t = v[self.below(v.len() as u32) as usize];
                        self.assign(t, c)
                    }
                }
            }
            StmtKind::TrapIf => self.trapif(depth),
            StmtKind::ValueStmt => {
                // A statement that yields a value nobody uses: comma(effect, value).
                let first = self.effect(depth.saturating_sub(1));
                let ty = self.ty();
                let second = self.expr(ty, depth.saturating_sub(1));
                self.add(ExprData::Comma { first, second })
            }
            StmtKind::Assign => {
                let vars = self.assignable(None);
                if vars.is_empty() {
                    let e = self.expr(Type::I32, depth);
                    let t = self.new_temp(Type::I32);
                    self.vars.push(t);
                    return self.assign(t, e);
                }
                let v = self.pick(&vars);
                let ty = self.f.locals[v].ty;
                let e = self.expr(ty, depth);
                self.assign(v, e)
            }
        }
    }

    /// `comma(call, 0)`-free way to drop a value: assign it to a fresh temporary.
    fn comma_discard(&mut self, value: Expr) -> Expr {
        let ty = self.ty_of(value);
        let t = self.new_temp(ty);
        self.assign(t, value)
    }

    /// `trapif(c, code)`: mostly a check that rarely fails. The condition is a compare
    /// with any of the ten operators (the backend fuses it into the check with its own
    /// condition-code table), its constant on either side.
    fn trapif(&mut self, depth: u32) -> Expr {
        let ty = self.cmp_ty();
        let op = self.pick(&CmpOp::ALL);
        let bits = ty.bits() as i64;
        if self.chance(reach::BOUNDARY_CHECK_PERMILLE) {
            self.note("trapif range check across the sign boundary");
            let (op, a, b) = self.boundary_check(ty, depth);
            let cond = if self.chance(500) { self.cmp(mirror(op), b, a) } else { self.cmp(op, a, b) };
            let code = self.below(100);
            return self.add(ExprData::TrapIf { cond, code });
        }
        let (a, b) = if self.chance(self.cfg.trap_check_permille) && op != CmpOp::Ne {
            self.note("trapif that fires now and then");
            // Fires now and then: the low four bits against a constant that splits 0..16.
            let x = self.expr(ty, depth.min(2));
            let m = self.konst(ty, 15);
            let low = self.bin(BinOp::And, x, m);
            // True for one of the sixteen values.
            let k = match op {
                CmpOp::Eq => self.below(16) as i64,
                CmpOp::Ult | CmpOp::Slt => 1,
                CmpOp::Ule | CmpOp::Sle => 0,
                CmpOp::Ugt | CmpOp::Sgt => 14,
                _ => 15,
            };
            (low, self.konst(ty, k))
        } else {
            // A range check that only a wild value fails: the top three bits of `x ^ r`
            // must be 000 or 111 (unsigned 0 or 7) for the unsigned operators and 100 or
            // 011 (signed -4 or 3) for the signed ones, where `r`'s top bits are none of
            // these, so that small positive and negative values (top bits 000 or 111, so
            // the field is `r`'s top bits or their complement) pass.
            let t = self.pick(&[1i64, 2, 5, 6]);
            let low_mask = (1i64 << (bits - 3)).wrapping_sub(1);
            let r = (t << (bits - 3)) | (self.src.bits64() as i64 & low_mask);
            let signed = matches!(op, CmpOp::Slt | CmpOp::Sle | CmpOp::Sgt | CmpOp::Sge);
            let shift_op = if signed { BinOp::Ashr } else { BinOp::Lshr };
            let field = |g: &mut Self, x: Expr| {
                let rk = g.konst(ty, r);
                let y = g.bin(BinOp::Xor, x, rk);
                let sh = g.konst(ty, bits - 3);
                g.bin(shift_op, y, sh)
            };
            if op == CmpOp::Ne {
                // The same pure field twice: never differs unless the code is wrong.
                self.note("trapif ne of one value twice");
                let pure = std::mem::replace(&mut self.pure_mode, true);
                let x = self.expr(ty, depth.min(2));
                self.pure_mode = pure;
                let x2 = self.f.clone_tree(x);
                let v = field(self, x);
                let v2 = field(self, x2);
                (v, v2)
            } else {
                let k = match op {
                    CmpOp::Eq => self.pick(&[0i64, 7]),
                    CmpOp::Ult => 1,
                    CmpOp::Ule => 0,
                    CmpOp::Ugt => 6,
                    CmpOp::Uge => 7,
                    CmpOp::Slt => -3,
                    CmpOp::Sle => -4,
                    CmpOp::Sgt => 2,
                    _ => 3,
                };
                let x = self.expr(ty, depth.min(2));
                let v = field(self, x);
                (v, self.konst(ty, k))
            }
        };
        // Half of the time the constant goes first, with the mirrored operator.
        let cond = if self.chance(500) {
            self.note("trapif operands swapped");
            self.cmp(mirror(op), b, a)
        } else {
            self.cmp(op, a, b)
        };
        let code = self.below(100);
        self.add(ExprData::TrapIf { cond, code })
    }

    fn store(&mut self, depth: u32) -> Expr {
        if self.chance(reach::NEIGHBOUR_PERMILLE) {
            return self.neighbour_store(depth);
        }
        let ty = self.ty();
        let widths: Vec<MemWidth> = MemWidth::ALL.into_iter().filter(|w| w.bits() <= ty.bits()).collect();
        let width = self.pick(&widths);
        let addr = self.addr(width, depth.min(2));
        let value = self.expr(ty, depth);
        self.add(ExprData::Store { width, addr, value })
    }

    /// An `i32` value used as `heap_rmw`'s address argument (the helper masks it).
    fn addr_value(&mut self, depth: u32) -> Expr {
        if self.chance(500) {
            let o = self.pick(&self.hot_offsets.clone());
            self.konst(Type::I32, o as i64)
        } else {
            self.expr(Type::I32, depth)
        }
    }

    /// An in-bounds address for an access of `width`.
    fn addr(&mut self, width: MemWidth, depth: u32) -> Expr {
        let w = width.bytes();
        if self.chance(350) {
            let o = self.pick(&self.hot_offsets.clone()).min(HEAP_SIZE - w);
            return self.konst(Type::I32, (HEAP_BASE + o) as i64);
        }
        if self.chance(operands::GUARDED_PERMILLE) {
            return self.guarded_addr(w);
        }
        let r = self.pick(&self.regions.clone());
        if self.chance(operands::ADDR_MODE_PERMILLE) {
            return self.addr_mode(r, w, depth);
        }
        let mask = if self.chance(600) { r.size - w } else { r.size / 2 - 1 };
        let e = if self.chance(500) && !self.pure_mode {
            self.expr(Type::I32, depth)
        } else {
            self.leaf(Type::I32)
        };
        let m = self.konst(Type::I32, mask as i64);
        let off = self.bin(BinOp::And, e, m);
        let base = self.konst(Type::I32, (HEAP_BASE + r.base) as i64);
        self.bin(BinOp::Add, base, off)
    }

    // ----- expressions -----

    /// Converts `e` to type `to`.
    fn convert_to(&mut self, e: Expr, to: Type) -> Expr {
        let from = self.ty_of(e);
        match (from, to) {
            (Type::I32, Type::I64) => {
                let op = if self.chance(500) { ConvOp::Sext } else { ConvOp::Zext };
                self.add(ExprData::Convert { op, arg: e })
            }
            // An i64 local read as an i32 (the return value's leaves, above all) shows
            // both words most of the time: `trunc(x ^ (x >> 32))`.
            (Type::I64, Type::I32) if matches!(self.f.exprs[e], ExprData::Local(_)) && self.chance(700) => {
                let x2 = self.f.clone_tree(e);
                let k = self.konst(Type::I64, 32);
                let high = self.bin(BinOp::Lshr, x2, k);
                let both = self.bin(BinOp::Xor, e, high);
                self.add(ExprData::Convert { op: ConvOp::Trunc, arg: both })
            }
            (Type::I64, Type::I32) => self.add(ExprData::Convert { op: ConvOp::Trunc, arg: e }),
            _ => e,
        }
    }

    fn constant(&mut self, ty: Type) -> Expr {
        let v = match self.below(5) {
            0 | 1 => self.below(17) as i64 - 8,
            2 => self.pick(&INTERESTING),
            3 => self.below(1000) as i64,
            _ => self.src.bits64() as i64,
        };
        self.konst(ty, v)
    }

    /// A leaf of type `ty`: a local, a callframe read or a constant.
    fn leaf(&mut self, ty: Type) -> Expr {
        // The candidates of the kind drawn are those of `readable`, in its order, and the
        // chosen one is taken by its index, as `pick` takes it from a list: the same
        // draws, no list allocated. Outside invariant mode they are `readable_of`'s list;
        // in it, they are gathered in one pass over `readable` into buffers kept across
        // leaves.
        let cf = |g: &Self, c: CfVar| {
            g.f.cfvars[c].ty == ty && !g.noread_cf.contains(&c) && (!g.invariant_mode || g.frozen_cf.contains(&c))
        };
        match self.below(10) {
            0..=5 if !self.invariant_mode => {
                // The candidates are `readable_of`'s list of the type; the unread ones are
                // counted, and the chosen one found by its rank among them.
                let slot = type_slot(ty);
                let unread = self.readable_of[slot].iter().filter(|&&l| self.is_unread[l]).count();
                let readable = self.readable_of[slot].len();
                let chosen = if unread > 0 && self.chance(self.cfg.anchor_permille) {
                    let k = self.below(unread as u32) as usize;
                    self.readable_of[slot].iter().copied().filter(|&l| self.is_unread[l]).nth(k)
                } else if readable > 0 {
                    let k = self.below(readable as u32) as usize;
                    Some(self.readable_of[slot][k])
                } else {
                    None
                };
                if let Some(l) = chosen {
                    return self.local(l);
                }
            }
            0..=5 => {
                let (mut readable, mut unread) = std::mem::take(&mut self.leaf_candidates);
                readable.clear();
                unread.clear();
                for &l in &self.readable {
                    let ok = self.f.locals[l].ty == ty
                        && (!self.invariant_mode || self.f.params.contains(&l) || self.frozen.contains(&l));
                    if ok {
                        readable.push(l);
                        if self.is_unread[l] {
                            unread.push(l);
                        }
                    }
                }
                let chosen = if !unread.is_empty() && self.chance(self.cfg.anchor_permille) {
                    Some(unread[self.below(unread.len() as u32) as usize])
                } else if !readable.is_empty() {
                    Some(readable[self.below(readable.len() as u32) as usize])
                } else {
                    None
                };
                self.leaf_candidates = (readable, unread);
                if let Some(l) = chosen {
                    return self.local(l);
                }
            }
            6 => {
                let n = self.f.cfvars.keys().filter(|&c| cf(self, c)).count();
                if n > 0 {
                    let k = self.below(n as u32) as usize;
                    let c = self.f.cfvars.keys().filter(|&c| cf(self, c)).nth(k).expect("k below the count");
                    return self.add(ExprData::CfRead(c));
                }
            }
            _ => {}
        }
        self.constant(ty)
    }

    /// An expression of type `ty` at most `depth` deep.
    fn expr(&mut self, ty: Type, depth: u32) -> Expr {
        if depth == 0 {
            return self.leaf(ty);
        }
        let w = self.expr_weights(ty);
        let d = depth - 1;
        let kind = self.weighted(&w).map_or(ExprKind::Leaf, |i| EXPR_KINDS[i]);
        match kind {
            ExprKind::Leaf => self.leaf(ty),
            ExprKind::Unary => {
                let op = if self.on(Feature::Bitwise) && self.chance(500) { UnOp::Not } else { UnOp::Neg };
                let arg = self.expr(ty, d);
                self.add(ExprData::Unary { op, arg })
            }
            ExprKind::Binary => self.binary(ty, d),
            ExprKind::Cmp => {
                let t = self.cmp_ty();
                let op = self.pick(&CmpOp::ALL);
                let a = self.expr(t, d);
                if self.chance(reach::SIGN_EDGE_PERMILLE) {
                    let op = self.ordering(op);
                    let b = self.sign_edge(t);
                    return self.cmp(op, a, b);
                }
                let b = self.expr(t, d);
                self.cmp(op, a, b)
            }
            ExprKind::Convert => {
                let from = if ty == Type::I64 { Type::I32 } else { Type::I64 };
                let arg = self.expr(from, d);
                self.convert_to(arg, ty)
            }
            ExprKind::Select => {
                let cond = self.cond(d.min(1));
                let a = self.expr(ty, d);
                let b = self.expr(ty, d);
                self.add(ExprData::Select { cond, if_true: a, if_false: b })
            }
            ExprKind::Load => self.load_expr(ty, d),
            ExprKind::CfRead => self.cfread_expr(ty),
            ExprKind::Call => self.call_expr(ty, d),
            ExprKind::Comma => {
                let first = self.effect(d.min(2));
                let second = self.expr(ty, d);
                self.add(ExprData::Comma { first, second })
            }
            ExprKind::NestedAssign => self.nested_assign(ty, d),
            ExprKind::Template => {
                let ts: Vec<Expr> = self.templates.iter().copied().filter(|&t| self.ty_of(t) == ty).collect();
                if ts.is_empty() {
                    return self.leaf(ty);
                }
                let t = self.pick(&ts);
                self.f.clone_tree(t)
            }
        }
    }

    /// The expression kinds' weights where a value of `ty` is wanted: no compare for an
    /// i64; nothing with an effect in pure or loop-invariant trees, nor a load in the
    /// latter.
    fn expr_weights(&self, ty: Type) -> [u32; 12] {
        let mut w = self.w.exprs;
        if ty == Type::I64 {
            w[3] = 0;
        }
        if self.pure_mode || self.invariant_mode {
            w[8] = 0;
            w[9] = 0;
            w[10] = 0;
            w[11] = 0;
        }
        if self.invariant_mode {
            w[6] = 0;
        }
        w
    }

    fn load_expr(&mut self, ty: Type, d: u32) -> Expr {
        let widths: Vec<MemWidth> = MemWidth::ALL.into_iter().filter(|w| w.bits() <= ty.bits()).collect();
        let width = self.pick(&widths);
        let signed = width.bits() < ty.bits() && self.chance(500);
        let addr = self.addr(width, d.min(2));
        self.add(ExprData::Load { ty, width, signed, addr })
    }

    fn cfread_expr(&mut self, ty: Type) -> Expr {
        let cfs: Vec<CfVar> = self
            .f
            .cfvars
            .iter()
            .filter(|(c, d)| d.ty == ty && !self.noread_cf.contains(c))
            .map(|(c, _)| c)
            .collect();
        if cfs.is_empty() || self.invariant_mode {
            return self.leaf(ty);
        }
        let c = self.pick(&cfs);
        self.add(ExprData::CfRead(c))
    }

    /// A helper call yielding `ty` (`mix64`, `heap_rmw`, `mix`), or a leaf when none is on.
    fn call_expr(&mut self, ty: Type, d: u32) -> Expr {
        match ty {
            Type::I64 if self.on(Feature::Mix64) => {
                let a = self.expr(Type::I64, d);
                let b = self.expr(Type::I64, d);
                self.call(HelperKind::Mix64, vec![a, b])
            }
            Type::I32 if self.on(Feature::HeapRmw) && (!self.on(Feature::Mix) || self.chance(300)) => {
                let a = self.addr_value(d.min(1));
                let b = self.expr(Type::I32, d);
                self.call(HelperKind::HeapRmw, vec![a, b])
            }
            Type::I32 if self.on(Feature::Mix) => {
                let a = self.expr(Type::I32, d);
                let b = self.expr(Type::I32, d);
                self.call(HelperKind::Mix, vec![a, b])
            }
            _ => self.leaf(ty),
        }
    }

    /// `comma((%v = e), %v or another tree)`.
    fn nested_assign(&mut self, ty: Type, d: u32) -> Expr {
        let vars = self.assignable(Some(ty));
        if vars.is_empty() {
            return self.leaf(ty);
        }
        let v = self.pick(&vars);
        let value = self.expr(ty, d);
        let first = self.assign(v, value);
        let second = if self.chance(500) { self.local(v) } else { self.expr(ty, d) };
        self.add(ExprData::Comma { first, second })
    }

    fn binary(&mut self, ty: Type, d: u32) -> Expr {
        let binops = self.w.binops;
        let Some(i) = self.weighted(&binops) else {
            let a = self.expr(ty, d);
            let b = self.expr(ty, d);
            return self.bin(BinOp::Add, a, b);
        };
        let op = BinOp::ALL[i];
        if self.chance(operands::EDGE_PERMILLE) {
            return self.edge_binary(op, ty, d);
        }
        let a = self.expr(ty, d);
        match op {
            BinOp::Shl | BinOp::Lshr | BinOp::Ashr => {
                let b = if self.on(Feature::VarShift) && self.chance(500) {
                    self.expr(ty, d)
                } else {
                    // Half of the counts lie just past the width (masked, a small count).
                    let n = if self.chance(500) { ty.bits() + self.below(8) } else { self.below(ty.bits()) };
                    self.konst(ty, n as i64)
                };
                self.bin(op, a, b)
            }
            BinOp::Sdiv | BinOp::Udiv | BinOp::Srem | BinOp::Urem => {
                if self.chance(self.cfg.unguarded_div_permille) {
                    self.note("division unguarded");
                    if matches!(op, BinOp::Sdiv | BinOp::Srem) && self.chance(250) {
                        // `MIN / -1` overflows: x86 `idiv` raises #DE for it too.
                        self.note("division by -1 unguarded");
                        let m1 = self.konst(ty, -1);
                        return self.bin(op, a, m1);
                    }
                    let b = self.expr(ty, d);
                    return self.bin(op, a, b);
                }
                self.note("division guarded");
                let b = self.expr(ty, d);
                self.guarded_div(op, ty, a, b)
            }
            _ => {
                let b = self.expr(ty, d);
                self.bin(op, a, b)
            }
        }
    }

    /// `a op b` where the divisor (and, if needed, the dividend) is rewritten so that
    /// the division cannot trap.
    fn guarded_div(&mut self, op: BinOp, ty: Type, a: Expr, b: Expr) -> Expr {
        let signed = matches!(op, BinOp::Sdiv | BinOp::Srem);
        let pure_b = !self.f.tree_has_side_effect(b);
        match self.below(3) {
            // select(b in {0, -1}, K, b): keeps the full range of other divisors.
            0 if pure_b => {
                self.note("division guard select");
                let b2 = self.f.clone_tree(b);
                let k = self.pick(&[3i64, 7, 10, -3, 1000]);
                let k = self.konst(ty, k);
                let cond = if signed {
                    let one = self.konst(ty, 1);
                    let p = self.bin(BinOp::Add, b2, one);
                    let two = self.konst(ty, 2);
                    self.cmp(CmpOp::Ult, p, two)
                } else {
                    let zero = self.konst(ty, 0);
                    self.cmp(CmpOp::Eq, b2, zero)
                };
                let d = self.add(ExprData::Select { cond, if_true: k, if_false: b });
                self.bin(op, a, d)
            }
            // (b | 1), and for signed division (a | 1) so the dividend is never MIN.
            1 => {
                let one = self.konst(ty, 1);
                let d = self.bin(BinOp::Or, b, one);
                let a = if signed {
                    let one = self.konst(ty, 1);
                    self.bin(BinOp::Or, a, one)
                } else {
                    a
                };
                self.bin(op, a, d)
            }
            // (b & 15) + 1: a small positive divisor.
            _ => {
                let m = self.konst(ty, 15);
                let low = self.bin(BinOp::And, b, m);
                let one = self.konst(ty, 1);
                let d = self.bin(BinOp::Add, low, one);
                self.bin(op, a, d)
            }
        }
    }
}
