//! The pass manager and the IR-level passes of `DESIGN.md` ("The pipeline").
//!
//! A pass is a function over `&mut Function` that computes the CFG analyses it reads
//! itself ([`Analyses`], or the ones it needs of them), returning [`Stats`]: named counters
//! of what it did. Each pass is described by a [`PassInfo`]: its name, and the IR form it
//! needs and the form it leaves ([`Form`]: HIR without phis, or SSA). A
//! [`Pipeline`] is a validated list of passes (`ssa,dce,ssa-destroy,cprop`): validation
//! follows the form through the list, so `ssa-destroy` needs SSA and `cprop` needs HIR.
//! [`PassManager::run`] verifies the IR after every pass when asked (always in tests and
//! debug builds: the default), including the SSA rules (one definition per local, every
//! use dominated by its definition) while the IR is in SSA form, and calls a hook with
//! the IR after every pass so that the harness can interpret it. [`PassManager::run_verified`]
//! returns the function as [`Verified`] by the verification after the last pass, so that
//! the backend does not verify it again.
//!
//! [`default_pipeline`] reads like the pass list of `DESIGN.md`; the passes of later
//! issues (`memopt`, `ssapre`, the backend) join it as they land.

pub mod cfg;
pub mod cprop;
pub mod dce;
pub mod domtree;
pub mod fold;
pub mod liveness;
pub mod loops;
pub mod memopt;
pub mod ssa;
pub mod ssa_destroy;
pub mod ssapre;
pub mod tree_mover;
pub mod util;

use crate::ir::{Block, Expr, ExprData, Function, Module};
use crate::verify::{Mention, TreeLocals, Verified, VerifyError};
use std::fmt;

pub use cfg::Cfg;
pub use domtree::{DomTree, DominanceFrontiers};
pub use liveness::Liveness;
pub use loops::LoopNest;

/// Named counters of what a pass did, in the order they were first touched.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Stats {
    pub counters: Vec<(&'static str, u64)>,
}

impl Stats {
    /// Adds `n` to the counter `name` (creating it at 0).
    pub fn add(&mut self, name: &'static str, n: u64) {
        // A pass names a counter by one literal, so the same pointer is the same name
        // most of the time: the bytes are compared only when the pointers differ (the
        // passes bump a counter per event, and a string compare per counter was a
        // hundredth of `ssapre`).
        let same = |k: &str| std::ptr::eq(k, name) || k == name;
        match self.counters.iter_mut().find(|(k, _)| same(k)) {
            Some((_, v)) => *v += n,
            None => self.counters.push((name, n)),
        }
    }

    /// Adds one to the counter `name`.
    pub fn bump(&mut self, name: &'static str) {
        self.add(name, 1);
    }

    /// The value of a counter (0 if it never fired).
    pub fn get(&self, name: &str) -> u64 {
        self.counters.iter().find(|(k, _)| *k == name).map_or(0, |(_, v)| *v)
    }

    /// Adds every counter of `other`.
    pub fn merge(&mut self, other: &Stats) {
        for (k, v) in &other.counters {
            self.add(k, *v);
        }
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.counters.iter().map(|(k, v)| format!("{k}={v}")).collect();
        f.write_str(&parts.join(" "))
    }
}

/// The form of the IR between passes.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Form {
    /// HIR: no phis, a local may be assigned many times.
    Hir,
    /// SSA: phis allowed, every local defined once (parameters by the call).
    Ssa,
}

impl fmt::Display for Form {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Form::Hir => "HIR",
            Form::Ssa => "SSA",
        })
    }
}

/// The CFG analyses a pass may read. They describe the IR as it was when the pass began.
#[derive(Clone, Debug)]
pub struct Analyses {
    pub cfg: Cfg,
    pub domtree: DomTree,
    pub frontiers: DominanceFrontiers,
    pub loops: LoopNest,
}

impl Analyses {
    /// Computes every CFG analysis of `f`.
    pub fn compute(f: &Function) -> Analyses {
        let cfg = Cfg::compute(f);
        let domtree = DomTree::compute(f, &cfg);
        let frontiers = DominanceFrontiers::compute(&cfg, &domtree);
        let loops = LoopNest::compute(&cfg, &domtree);
        Analyses { cfg, domtree, frontiers, loops }
    }
}

/// Errors of the pass manager.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum PassError {
    /// A pipeline names a pass that does not exist.
    UnknownPass(String),
    /// A pipeline is empty or has an empty name in it.
    EmptyName,
    /// A pass is placed where the IR is in the wrong form (e.g. `ssa-destroy` before `ssa`).
    WrongForm { pass: &'static str, needs: Form, found: Form },
    /// The input function's form does not match what the pipeline starts from.
    InputForm { function: String, expected: Form },
    /// The verifier rejected the IR a pass produced: a bug in that pass.
    Verify { pass: &'static str, function: String, errors: Vec<String> },
}

impl fmt::Display for PassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PassError::UnknownPass(n) => {
                let names: Vec<&str> = PASSES.iter().map(|p| p.name).collect();
                write!(f, "unknown pass `{n}` (known passes: {})", names.join(", "))
            }
            PassError::EmptyName => f.write_str("empty pass name in pipeline"),
            PassError::WrongForm { pass, needs, found } => {
                write!(f, "pass `{pass}` needs {needs} but the IR is in {found} form at that point")
            }
            PassError::InputForm { function, expected } => {
                write!(f, "function %{function} is not in {expected} form, which the pipeline starts from")
            }
            PassError::Verify { pass, function, errors } => {
                write!(f, "after pass `{pass}`, function %{function} fails verification:")?;
                for e in errors {
                    write!(f, "\n  {e}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for PassError {}

/// A pass and what the manager must know about it.
pub struct PassInfo {
    pub name: &'static str,
    /// The form the pass needs; `None`: either.
    pub needs: Option<Form>,
    /// The form the pass leaves; `None`: unchanged.
    pub produces: Option<Form>,
    /// The pass; it computes whatever analyses of `f` it reads itself.
    pub run: fn(&mut Function) -> Stats,
}

/// Every IR-level pass.
pub static PASSES: &[PassInfo] = &[
    PassInfo {
        name: "ssa",
        needs: Some(Form::Hir),
        produces: Some(Form::Ssa),
        run: ssa::run,
    },
    PassInfo { name: "memopt", needs: Some(Form::Ssa), produces: None, run: memopt::run },
    PassInfo { name: "ssapre", needs: Some(Form::Ssa), produces: None, run: ssapre::run },
    PassInfo { name: "dce", needs: None, produces: None, run: dce::run },
    PassInfo {
        name: "ssa-destroy",
        needs: Some(Form::Ssa),
        produces: Some(Form::Hir),
        run: ssa_destroy::run,
    },
    PassInfo { name: "cprop", needs: Some(Form::Hir), produces: None, run: cprop::run },
];

/// Finds a pass by name.
pub fn pass_by_name(name: &str) -> Option<&'static PassInfo> {
    PASSES.iter().find(|p| p.name == name)
}

/// A validated list of passes.
#[derive(Clone)]
pub struct Pipeline {
    pub passes: Vec<&'static PassInfo>,
    /// The form of the IR the pipeline starts from.
    pub start: Form,
}

impl fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pipeline({})", self)
    }
}

impl fmt::Display for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.passes.iter().map(|p| p.name).collect();
        f.write_str(&names.join(","))
    }
}

impl Pipeline {
    /// Builds a pipeline from pass names, checking that each pass finds the form it needs
    /// when the input is HIR.
    pub fn new(names: &[&str]) -> Result<Pipeline, PassError> {
        Pipeline::new_from(Form::Hir, names)
    }

    /// Builds a pipeline whose input is in form `start`.
    pub fn new_from(start: Form, names: &[&str]) -> Result<Pipeline, PassError> {
        let mut passes = vec![];
        let mut form = start;
        for &n in names {
            if n.is_empty() {
                return Err(PassError::EmptyName);
            }
            let p = pass_by_name(n).ok_or_else(|| PassError::UnknownPass(n.to_string()))?;
            if let Some(needs) = p.needs {
                if needs != form {
                    return Err(PassError::WrongForm { pass: p.name, needs, found: form });
                }
            }
            form = p.produces.unwrap_or(form);
            passes.push(p);
        }
        Ok(Pipeline { passes, start })
    }

    /// Parses a comma-separated list such as `ssa,dce,ssa-destroy,cprop` (input in HIR).
    pub fn parse(list: &str) -> Result<Pipeline, PassError> {
        Pipeline::parse_from(Form::Hir, list)
    }

    /// Parses a comma-separated list whose input is in form `start`.
    pub fn parse_from(start: Form, list: &str) -> Result<Pipeline, PassError> {
        let names: Vec<&str> = list.split(',').map(str::trim).collect();
        Pipeline::new_from(start, &names)
    }

    /// The form of the IR after the first `n` passes.
    pub fn form_after(&self, n: usize) -> Form {
        self.passes[..n].iter().fold(self.start, |f, p| p.produces.unwrap_or(f))
    }
}

/// The default IR-level pipeline, in the order of `DESIGN.md`.
pub fn default_pipeline() -> Pipeline {
    Pipeline::new(&[
        // 1. Dominators, dominance frontiers, phi placement, renaming.
        "ssa",
        // 2. Store/load elimination for the callframe and the heap.
        "memopt",
        // 3. Partial redundancy elimination (SSAPRE).
        "ssapre",
        // 4. Dead code, then out of SSA with parallel copies.
        "dce",
        "ssa-destroy",
        // 5. Local copy/constant propagation with the tree mover.
        "cprop",
    ])
    .expect("the default pipeline is valid")
}

/// The pipeline every corpus case and generated program is checked after, pass by pass.
pub fn check_pipeline() -> Pipeline {
    Pipeline::parse("ssa,memopt,ssapre,dce,ssa-destroy,cprop").expect("valid")
}

/// Runs pipelines over functions.
#[derive(Copy, Clone, Debug)]
pub struct PassManager {
    /// Verify the IR after every pass (the default in tests and debug builds).
    pub verify: bool,
}

impl Default for PassManager {
    fn default() -> Self {
        PassManager { verify: cfg!(debug_assertions) }
    }
}

/// Verifies the function `pass` left in `f` and checks it against the rules of `form`,
/// moving it out as [`Verified`]. On failure `f` keeps it, and the error lists what the
/// verifier found, then what breaks the rules of `form` (the pass manager's check after
/// a pass, and the harness's after a pass and a planted bug).
pub fn verify_after(pass: &'static str, f: &mut Function, form: Form) -> Result<Verified, PassError> {
    verify_after_with(pass, f, form, &mut StrictCfg::default())
}

/// [`verify_after`], the SSA check taking the CFG and dominator tree from `memo` when the
/// function's CFG is the one they were computed for (the pass manager's checks after
/// consecutive passes that leave the CFG as it is).
fn verify_after_with(pass: &'static str, f: &mut Function, form: Form, memo: &mut StrictCfg) -> Result<Verified, PassError> {
    // The SSA rules read the locals of every tree, which the verifier's walk notes: once
    // it accepts the function, they are complete, and the trees are not walked again.
    // The list is the memo's, kept from check to check (it grew from empty each time).
    let mut seen = std::mem::take(&mut memo.seen);
    let result = verify_noting(pass, f, form, memo, &mut seen);
    memo.seen = seen;
    result
}

/// [`verify_after_with`] given the list the verifier notes the locals of the trees in.
fn verify_noting(
    pass: &'static str,
    f: &mut Function,
    form: Form,
    memo: &mut StrictCfg,
    seen: &mut TreeLocals,
) -> Result<Verified, PassError> {
    let checked = match form {
        Form::Ssa => Verified::check_noting(f.take(), seen),
        Form::Hir => Verified::check(f.take()),
    };
    let (g, errors) = match checked {
        Ok(v) => {
            let errors = check_form_seen(&v, form, seen, memo).into_iter().map(|e| e.message).collect::<Vec<_>>();
            if errors.is_empty() {
                return Ok(v);
            }
            (v.into_function(), errors)
        }
        Err((g, es)) => {
            let mut errors: Vec<String> = es.iter().map(VerifyError::to_string).collect();
            errors.extend(check_form(&g, form));
            (g, errors)
        }
    };
    *f = g;
    Err(PassError::Verify { pass, function: f.name.clone(), errors })
}

impl PassManager {
    /// Runs `pipeline` over `f`, calling `hook(pass, f, stats)` after each pass. Returns
    /// the statistics of each pass in order.
    pub fn run(
        &self,
        pipeline: &Pipeline,
        f: &mut Function,
        hook: &mut dyn FnMut(&str, &Function, &Stats),
    ) -> Result<Vec<(&'static str, Stats)>, PassError> {
        self.run_keeping(pipeline, f, hook, None)
    }

    /// [`run`](Self::run) over a function it owns, which it returns as [`Verified`]: the
    /// verification after the last pass (made whether or not `verify` is set) is what the
    /// backend then trusts, so that it does not verify the same function again. An empty
    /// pipeline is [`PassError::EmptyName`].
    pub fn run_verified(
        &self,
        pipeline: &Pipeline,
        mut f: Function,
        hook: &mut dyn FnMut(&str, &Function, &Stats),
    ) -> Result<(Vec<(&'static str, Stats)>, Verified), PassError> {
        let mut last = None;
        let stats = self.run_keeping(pipeline, &mut f, hook, Some(&mut last))?;
        last.map(|v| (stats, v)).ok_or(PassError::EmptyName)
    }

    /// [`run`](Self::run); with `last`, the function after the last pass is verified
    /// whatever `verify` says, by [`Verified::check`], and moved there (leaving `f` empty).
    fn run_keeping(
        &self,
        pipeline: &Pipeline,
        f: &mut Function,
        hook: &mut dyn FnMut(&str, &Function, &Stats),
        mut last: Option<&mut Option<Verified>>,
    ) -> Result<Vec<(&'static str, Stats)>, PassError> {
        if !check_form(f, pipeline.start).is_empty() {
            return Err(PassError::InputForm { function: f.name.clone(), expected: pipeline.start });
        }
        let mut out = vec![];
        let mut form = pipeline.start;
        // The SSA check's CFG and dominator tree, kept from one check to the next.
        // Its list of the locals of the trees is the one the last run on this thread left
        // ([`SPARE_TREE_LOCALS`]), for its room.
        let mut strict = StrictCfg { last: None, seen: SPARE_TREE_LOCALS.with(|s| s.take()) };
        for (i, p) in pipeline.passes.iter().enumerate() {
            let stats = (p.run)(f);
            form = p.produces.unwrap_or(form);
            let keep = if i + 1 == pipeline.passes.len() { last.take() } else { None };
            if keep.is_some() || self.verify {
                let verified = verify_after_with(p.name, f, form, &mut strict)?;
                if let Some(keep) = keep {
                    hook(p.name, &verified, &stats);
                    *keep = Some(verified);
                    out.push((p.name, stats));
                    break;
                }
                *f = verified.into_function();
            }
            hook(p.name, f, &stats);
            out.push((p.name, stats));
        }
        if strict.seen.mentions.capacity() <= SPARE_MENTIONS && strict.seen.at.capacity() <= SPARE_MENTIONS {
            SPARE_TREE_LOCALS.with(|s| s.set(strict.seen));
        }
        Ok(out)
    }

    /// Runs `pipeline` over every function of a module.
    pub fn run_module(
        &self,
        pipeline: &Pipeline,
        m: &mut Module,
        hook: &mut dyn FnMut(&str, &Function, &Stats),
    ) -> Result<Stats, PassError> {
        let mut total = Stats::default();
        for f in &mut m.functions {
            for (name, s) in self.run(pipeline, f, hook)? {
                for (k, v) in &s.counters {
                    let _ = name;
                    total.add(k, *v);
                }
            }
        }
        Ok(total)
    }
}

/// A broken rule of an IR form, with where it is: the block, and the node (a phi's
/// destination has none).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FormError {
    pub block: Block,
    pub node: Option<Expr>,
    pub message: String,
}

impl fmt::Display for FormError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The form-specific rules: HIR has no phis; SSA defines each local at most once and never
/// assigns a parameter.
pub fn check_form(f: &Function, form: Form) -> Vec<String> {
    check_form_located(f, form).into_iter().map(|e| e.message).collect()
}

/// [`check_form`], each error with its place, so that a file's reader can point at it.
pub fn check_form_located(f: &Function, form: Form) -> Vec<FormError> {
    let seen = match form {
        Form::Hir => TreeLocals::default(),
        Form::Ssa => tree_locals(f),
    };
    check_form_seen(f, form, &seen, &mut StrictCfg::default())
}

/// [`check_form_located`] given the locals of every tree of `f` (`seen`, read only for
/// SSA), from a walk of its own ([`tree_locals`]) or the verifier's, and the CFG of an
/// earlier check (`memo`, used when it is still `f`'s).
fn check_form_seen(f: &Function, form: Form, seen: &TreeLocals, memo: &mut StrictCfg) -> Vec<FormError> {
    let mut errs = vec![];
    let err = |block, node, message| FormError { block, node, message };
    match form {
        Form::Hir => {
            for &b in &f.layout {
                if !f.blocks[b].phis.is_empty() {
                    errs.push(err(b, None, format!("{b} has phis but the IR should be in HIR form")));
                }
            }
        }
        Form::Ssa => {
            let site = definition_sites(f, seen, &mut errs);
            if errs.is_empty() {
                errs.extend(check_strict(f, &site, seen, memo));
            }
        }
    }
    errs
}

/// The nodes naming a local in every tree of `f`, in layout and evaluation order (what
/// the verifier notes in its walk, [`Verified::check_noting`]).
fn tree_locals(f: &Function) -> TreeLocals {
    let mut seen = TreeLocals { mentions: vec![], at: Vec::with_capacity(f.layout.len()) };
    for &b in &f.layout {
        let start = seen.mentions.len();
        for (i, s) in f.blocks[b].stmts.iter().copied().chain(f.blocks[b].term.expr()).enumerate() {
            let mut k = 0;
            f.visit_postorder(s, &mut |n| {
                let (local, def) = match f.exprs[n] {
                    ExprData::Assign { local, .. } => (local, true),
                    ExprData::Local(l) => (l, false),
                    _ => {
                        k += 1;
                        return;
                    }
                };
                seen.mentions.push(Mention { local, def, stmt: i + 1, k, node: n });
                k += 1;
            });
        }
        seen.at.push(start..seen.mentions.len());
    }
    seen
}

/// Where each local is defined: (block, statement position, node position). Phis are at
/// (0, 0), statement `i` at `i + 1` with its nodes in evaluation order (as in `seen`,
/// the locals of every tree), and parameters before everything in the entry. A second
/// definition of a local (a parameter is defined already) is an error, in `errs`.
fn definition_sites(f: &Function, seen: &TreeLocals, errs: &mut Vec<FormError>) -> DefinitionSites {
    let mut site: DefinitionSites = cfg::sized(f.locals.len());
    for &p in &f.params {
        site[p] = Some((f.entry(), 0, 0));
    }
    let mut def = |l: crate::ir::Local, at: (Block, usize, usize), node: Option<Expr>, errs: &mut Vec<FormError>| {
        if site[l].is_some() {
            let message = format!("SSA: local %{} is defined more than once", f.locals[l].name);
            errs.push(FormError { block: at.0, node, message });
        } else {
            site[l] = Some(at);
        }
    };
    for (&b, range) in f.layout.iter().zip(&seen.at) {
        for phi in &f.blocks[b].phis {
            def(phi.dest, (b, 0, 0), None, errs);
        }
        for m in &seen.mentions[range.clone()] {
            if m.def {
                def(m.local, (b, m.stmt, m.k), Some(m.node), errs);
            }
        }
    }
    site
}

thread_local! {
    /// The list of the locals of the trees ([`StrictCfg::seen`]) of the last pipeline run
    /// on this thread, emptied by the next check that fills it ([`Verified::check_noting`]):
    /// each run grew it from empty, by doubling, for every function.
    static SPARE_TREE_LOCALS: std::cell::Cell<TreeLocals> = const {
        std::cell::Cell::new(TreeLocals { mentions: Vec::new(), at: Vec::new() })
    };
}

/// The most entries a kept [`SPARE_TREE_LOCALS`] list may have room for (32 bytes each:
/// 1 MiB), so that what a thread keeps stays bounded.
const SPARE_MENTIONS: usize = 1 << 15;

/// The CFG and dominator tree the strict SSA check computed last, with what they were
/// computed from: the number of blocks and the layout (the successors of each block are
/// in the CFG). Both are what [`Cfg::compute`] and [`DomTree::compute`] would give again
/// for a function with the same three, so a check after a pass that left the CFG alone
/// takes them instead of computing them again; whether it did is compared, not assumed.
#[derive(Default)]
struct StrictCfg {
    last: Option<(usize, Vec<Block>, Cfg, DomTree)>,
    /// The locals of the trees the last check's verifier noted, emptied by the next
    /// ([`Verified::check_noting`]): its room is kept from check to check.
    seen: TreeLocals,
}

impl StrictCfg {
    /// The dominator tree of `f`: the one kept if `f`'s CFG is the one it was computed
    /// for, else a new one (kept for the next check).
    fn domtree(&mut self, f: &Function) -> &DomTree {
        let same = self.last.as_ref().is_some_and(|(n, layout, cfg, _)| {
            *n == f.blocks.len()
                && *layout == f.layout
                && f.layout.iter().all(|&b| cfg::successors(f, b)[..] == cfg.succs[b][..])
        });
        if !same {
            let cfg = Cfg::compute(f);
            let dt = DomTree::compute(f, &cfg);
            self.last = Some((f.blocks.len(), f.layout.clone(), cfg, dt));
        }
        &self.last.as_ref().expect("computed").3
    }
}

/// The definition site of each local (see [`definition_sites`]).
type DefinitionSites = cranelift_entity::SecondaryMap<crate::ir::Local, Option<(Block, usize, usize)>>;

/// Strict SSA: every use of a local (the reads in `seen`) is dominated by its
/// definition (a phi argument by the end of its predecessor). A local that is never
/// defined anywhere is the constant 0 (every local starts at 0), as if defined before the
/// entry, so its uses are strict too.
fn check_strict(f: &Function, site: &DefinitionSites, seen: &TreeLocals, memo: &mut StrictCfg) -> Vec<FormError> {
    use crate::ir::Local;
    let dt = memo.domtree(f);
    let mut errs = vec![];
    let mut check = |l: Local, b: Block, at: (usize, usize), node: Option<Expr>, what: &str| match site[l] {
        None => {}
        Some((db, dpos, dk)) => {
            let ok = if db == b { (dpos, dk) < at } else { dt.dominates(db, b) };
            if !ok {
                let message = format!("SSA: {what} of %{} in {b} is not dominated by its definition", f.locals[l].name);
                errs.push(FormError { block: b, node, message });
            }
        }
    };
    for (&b, range) in f.layout.iter().zip(&seen.at) {
        for phi in &f.blocks[b].phis {
            for (p, a) in &phi.args {
                check(*a, *p, (usize::MAX, usize::MAX), None, "phi argument");
            }
        }
        for m in &seen.mentions[range.clone()] {
            if !m.def {
                check(m.local, b, (m.stmt, m.k), Some(m.node), "use");
            }
        }
    }
    errs
}
