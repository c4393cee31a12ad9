//! `tandem gen --stats`: what the generator makes over many seeds — the share of runs
//! that are valid, that trap, that run out of fuel or out of bounds, cases that fail
//! [`super::check`], and a histogram of feature use (operators, helpers, node kinds,
//! terminators, swarm features); the compares and binary operators by the context they
//! sit in (branch, `trapif`, select condition, store value, call argument, address, ...),
//! since each context lowers differently; the (operator, type, left, right) combinations
//! of edge-constant operands ([`super::edges`]); and the share of statements `dce`
//! removes, the measure of generated work that reaches no observable; and the
//! distinguishing-value coverage ([`super::distinguish`]). Counters live in
//! `BTreeMap`s so the report's order is stable.

use super::config::{Config, Feature};
use super::{check, check_promises, generate};
use crate::exec::outcome::{End, Invalid};
use std::collections::BTreeMap;
use std::fmt;
use super::edges;
use tandem_core::ir::{Expr, ExprData, Function, Terminator, TrapKind};
use tandem_core::text::printer::load_name;

/// Figures over a range of seeds.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub cases: u64,
    /// Cases whose [`super::check`] failed, with the first message.
    pub broken: Vec<(u64, String)>,
    pub runs: u64,
    pub returned: u64,
    pub trap_divide: u64,
    pub trap_check: u64,
    pub fuel_exhausted: u64,
    pub out_of_bounds: u64,
    pub blocks: u64,
    pub statements: u64,
    pub nodes: u64,
    /// The most blocks in one case.
    pub max_case_blocks: u64,
    /// The largest fuel bound the generator computed for a case.
    pub max_fuel_bound: u64,
    /// The deepest expression tree seen (a leaf has depth 1).
    pub max_depth: u64,
    /// Uses of each operator, helper, node kind and terminator.
    pub uses: BTreeMap<String, u64>,
    /// Shapes and policy patterns generated.
    pub shapes: BTreeMap<String, u64>,
    /// Programs with each swarm feature on.
    pub features: BTreeMap<String, u64>,
    /// Compares and binary operators by operand type and by the context they sit in
    /// (`eq.i64 in trapif`), since each context lowers differently.
    pub contexts: BTreeMap<String, u64>,
    /// Binary operators by operand type and the edge classes of their operands
    /// ([`super::edges::CLASSES`], or `var` for an operand that is not constant).
    pub edge_pairs: BTreeMap<(String, &'static str, &'static str), u64>,
    /// Statements of the SSA form (the input of `dce`), and how many `dce` removed: the
    /// share of generated work that reaches no observable.
    pub dce_input_stmts: u64,
    pub dce_removed_stmts: u64,
    /// The same for expression nodes (phis not counted): the nodes of the SSA form's
    /// statements and terminators, and how many `dce` removed.
    pub dce_input_nodes: u64,
    pub dce_removed_nodes: u64,
    /// Per slip pair, the programs whose runs evaluated it and told it apart.
    pub distinguish: super::distinguish::Coverage,
}

impl Stats {
    fn bump(&mut self, key: String) {
        *self.uses.entry(key).or_default() += 1;
    }

    /// Runs that were valid (returned or trapped).
    pub fn valid(&self) -> u64 {
        self.returned + self.trap_divide + self.trap_check
    }

    pub fn traps(&self) -> u64 {
        self.trap_divide + self.trap_check
    }
}

/// Generates and checks the cases of `seeds`, and counts.
pub fn stats(seeds: std::ops::RangeInclusive<u64>, cfg: &Config) -> Stats {
    let mut s = Stats::default();
    for seed in seeds {
        let g = generate(seed, cfg);
        s.cases += 1;
        s.max_fuel_bound = s.max_fuel_bound.max(g.fuel_bound);
        for feat in Feature::ALL {
            if g.features.contains(feat) {
                *s.features.entry(format!("{feat:?}")).or_default() += 1;
            }
        }
        for shape in &g.shapes {
            *s.shapes.entry(shape.to_string()).or_default() += 1;
        }
        for f in &g.case.module.functions {
            count_blocks(f, &mut s);
            count_nodes(f, &mut s);
            let d = dce_share(f);
            s.dce_input_stmts += d.stmts_in;
            s.dce_removed_stmts += d.stmts_removed;
            s.dce_input_nodes += d.nodes_in;
            s.dce_removed_nodes += d.nodes_in - d.nodes_out;
        }
        s.distinguish.add_program(&super::distinguish::observe_case(&g.case));
        count_runs(seed, &g.case, &mut s);
    }
    s
}

/// Blocks, statements, terminators, and the compares and binary operators by context.
fn count_blocks(f: &Function, s: &mut Stats) {
    s.blocks += f.layout.len() as u64;
    s.max_case_blocks = s.max_case_blocks.max(f.layout.len() as u64);
    for &b in &f.layout {
        let data = &f.blocks[b];
        s.statements += data.stmts.len() as u64;
        let term = match &data.term {
            Terminator::Jump(_) => "term jump",
            Terminator::Branch { .. } => "term br",
            Terminator::Return(_) => "term ret",
            Terminator::Switch { .. } => "term switch",
        };
        s.bump(term.to_string());
        for &st in &data.stmts {
            count_contexts(f, st, "statement", s);
        }
        if let Some(e) = data.term.expr() {
            let ctx = match data.term {
                Terminator::Branch { .. } => "branch",
                Terminator::Switch { .. } => "switch",
                _ => "return",
            };
            count_contexts(f, e, ctx, s);
        }
    }
}

/// Every node of every tree by kind (operators with their type), and the deepest tree.
fn count_nodes(f: &Function, s: &mut Stats) {
    let roots: std::collections::BTreeSet<_> = f.roots().into_iter().collect();
    for &root in &roots {
        s.max_depth = s.max_depth.max(tree_depth(f, root));
        f.visit_postorder(root, &mut |e| {
            s.nodes += 1;
            let key = match &f.exprs[e] {
                ExprData::Const { ty, .. } => format!("node const.{ty}"),
                ExprData::Local(_) => "node local".into(),
                ExprData::Unary { op, .. } => format!("op {}", op.name()),
                ExprData::Binary { op, lhs, .. } => {
                    format!("op {}.{}", op.name(), f.expr_type(*lhs).map_or("?".into(), |t| t.to_string()))
                }
                ExprData::Cmp { op, .. } => format!("op {}", op.name()),
                ExprData::Convert { op, .. } => format!("op {}", op.name()),
                ExprData::Select { .. } => "node select".into(),
                ExprData::Load { ty, width, signed, .. } => format!("node {}", load_name(*ty, *width, *signed)),
                ExprData::Store { width, .. } => format!("node store.{}", width.bits()),
                ExprData::CfRead(_) => "node cfread".into(),
                ExprData::CfWrite { .. } => "node cfwrite".into(),
                ExprData::Assign { .. } if roots.contains(&e) => "node assign".into(),
                ExprData::Assign { .. } => "node assign (nested)".into(),
                ExprData::Call { helper, .. } => format!("helper {helper}"),
                ExprData::TrapIf { .. } => "node trapif".into(),
                ExprData::Comma { .. } => "node comma".into(),
            };
            s.bump(key);
        });
    }
}

/// Checks the case (promises, determinism, round trip) and counts how its runs ended.
fn count_runs(seed: u64, case: &crate::cases::casefile::CaseFile, s: &mut Stats) {
    match check_promises(case).and_then(|()| check(case)) {
        Err(e) => s.broken.push((seed, e.to_string())),
        Ok(results) => {
            for r in results {
                s.runs += 1;
                match r {
                    Ok(o) => match o.end {
                        End::Return(_) => s.returned += 1,
                        End::Trap(TrapKind::DivideError) => s.trap_divide += 1,
                        End::Trap(TrapKind::Check(_)) => s.trap_check += 1,
                    },
                    Err(Invalid::FuelExhausted) => s.fuel_exhausted += 1,
                    Err(Invalid::OutOfBounds { .. }) => s.out_of_bounds += 1,
                }
            }
        }
    }
}

/// What `dce` removed from one function: see [`dce_share`].
pub struct DceShare {
    pub stmts_in: u64,
    pub stmts_removed: u64,
    pub nodes_in: u64,
    pub nodes_out: u64,
}

/// Runs `ssa,dce` (or `dce` alone on a function already in SSA form) on a copy of `f`:
/// the statements and nodes `dce` saw, and what it removed.
pub fn dce_share(f: &Function) -> DceShare {
    use tandem_core::passes::{Form, PassManager, Pipeline};
    fn nodes(g: &Function) -> u64 {
        let mut n = 0;
        for root in g.roots() {
            g.visit_postorder(root, &mut |_| n += 1);
        }
        n
    }
    let ssa = f.layout.iter().any(|&b| !f.blocks[b].phis.is_empty());
    let p = if ssa { Pipeline::parse_from(Form::Ssa, "dce") } else { Pipeline::parse("ssa,dce") }.expect("a valid pipeline");
    let mut g = f.clone();
    let stmts = |g: &Function| g.layout.iter().map(|&b| g.blocks[b].stmts.len() as u64).sum::<u64>();
    let mut d = DceShare { stmts_in: 0, stmts_removed: 0, nodes_in: 0, nodes_out: 0 };
    if ssa {
        (d.stmts_in, d.nodes_in) = (stmts(f), nodes(f));
    }
    let mut hook = |name: &str, g: &Function, st: &tandem_core::passes::Stats| {
        if name == "ssa" {
            (d.stmts_in, d.nodes_in) = (stmts(g), nodes(g));
        } else if name == "dce" {
            d.stmts_removed = st.get("stmts");
            d.nodes_out = nodes(g);
        }
    };
    // A pass error is the pipeline's bug, found by the check; it counts nothing here.
    let failed = PassManager { verify: false }.run(&p, &mut g, &mut hook).is_err();
    if failed {
        d.nodes_out = d.nodes_in;
    }
    d
}

/// Counts the compares and binary operators of the tree at `e`, whose parent context is
/// `ctx`, by context and by edge classes of their operands.
fn count_contexts(f: &Function, e: Expr, ctx: &'static str, s: &mut Stats) {
    let data = &f.exprs[e];
    let operand_ty = |x: Expr| f.expr_type(x).map_or("?".to_string(), |t| t.to_string());
    let class = |x: Expr| match f.exprs[x] {
        ExprData::Const { ty, value } => edges::class_of(ty, value).map_or("const", |c| edges::CLASSES[c]),
        _ => "var",
    };
    match data {
        ExprData::Cmp { op, lhs, .. } => {
            *s.contexts.entry(format!("{}.{} in {ctx}", op.name(), operand_ty(*lhs))).or_default() += 1;
        }
        ExprData::Binary { op, lhs, rhs } => {
            let key = format!("{}.{}", op.name(), operand_ty(*lhs));
            *s.contexts.entry(format!("{key} in {ctx}")).or_default() += 1;
            *s.edge_pairs.entry((key, class(*lhs), class(*rhs))).or_default() += 1;
        }
        _ => {}
    }
    let children: Vec<(Expr, &'static str)> = match data {
        ExprData::TrapIf { cond, .. } => vec![(*cond, "trapif")],
        ExprData::Select { cond, if_true, if_false } => {
            vec![(*cond, "select condition"), (*if_true, "select value"), (*if_false, "select value")]
        }
        ExprData::Store { addr, value, .. } => vec![(*addr, "address"), (*value, "store value")],
        ExprData::Load { addr, .. } => vec![(*addr, "address")],
        ExprData::Call { args, .. } => args.iter().map(|&a| (a, "call argument")).collect(),
        ExprData::CfWrite { value, .. } => vec![(*value, "cfwrite value")],
        ExprData::Assign { value, .. } => vec![(*value, "assigned value")],
        ExprData::Comma { first, second } => vec![(*first, "statement"), (*second, ctx)],
        other => other.operands().into_iter().map(|o| (o, "operand")).collect(),
    };
    for (c, cx) in children {
        count_contexts(f, c, cx, s);
    }
}

/// How many of the (operator, type, left class, right class) combinations of the edge
/// set occur in `s`, out of how many: with constants on both sides, and with at least one
/// (the other side `var`).
pub fn edge_coverage(s: &Stats) -> [(usize, usize); 2] {
    use tandem_core::ir::BinOp;
    let (mut both, mut one) = ((0, 0), (0, 0));
    for op in BinOp::ALL {
        for ty in ["i32", "i64"] {
            let key = format!("{}.{ty}", op.name());
            let has = |l: &'static str, r: &'static str| s.edge_pairs.contains_key(&(key.clone(), l, r));
            for l in edges::CLASSES {
                one.1 += 2;
                one.0 += has(l, "var") as usize + has("var", l) as usize;
                for r in edges::CLASSES {
                    both.1 += 1;
                    both.0 += has(l, r) as usize;
                }
            }
        }
    }
    [both, one]
}

/// The depth of the tree at `e` (a leaf has depth 1).
pub fn tree_depth(f: &tandem_core::ir::Function, e: tandem_core::ir::Expr) -> u64 {
    1 + f.exprs[e].operands().into_iter().map(|o| tree_depth(f, o)).max().unwrap_or(0)
}

fn pct(n: u64, d: u64) -> f64 {
    if d == 0 {
        0.0
    } else {
        100.0 * n as f64 / d as f64
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.runs;
        writeln!(f, "cases: {} ({} failed the generator check)", self.cases, self.broken.len())?;
        for (seed, msg) in self.broken.iter().take(5) {
            writeln!(f, "  seed {seed}: {}", msg.lines().next().unwrap_or(""))?;
        }
        writeln!(f, "runs: {r}")?;
        writeln!(f, "  valid:          {:>8} ({:.2}%)", self.valid(), pct(self.valid(), r))?;
        writeln!(f, "  returned:       {:>8} ({:.2}%)", self.returned, pct(self.returned, r))?;
        writeln!(f, "  trapped:        {:>8} ({:.2}%)", self.traps(), pct(self.traps(), r))?;
        writeln!(f, "    divide_error: {:>8} ({:.2}%)", self.trap_divide, pct(self.trap_divide, r))?;
        writeln!(f, "    check:        {:>8} ({:.2}%)", self.trap_check, pct(self.trap_check, r))?;
        writeln!(f, "  fuel exhausted: {:>8} ({:.2}%)", self.fuel_exhausted, pct(self.fuel_exhausted, r))?;
        writeln!(f, "  out of bounds:  {:>8} ({:.2}%)", self.out_of_bounds, pct(self.out_of_bounds, r))?;
        let c = self.cases.max(1) as f64;
        writeln!(
            f,
            "per case: {:.1} blocks, {:.1} statements, {:.1} nodes; most blocks: {}; deepest tree: {}; largest fuel bound: {}",
            self.blocks as f64 / c,
            self.statements as f64 / c,
            self.nodes as f64 / c,
            self.max_case_blocks,
            self.max_depth,
            self.max_fuel_bound
        )?;
        writeln!(
            f,
            "dce removes {} of {} statements of the SSA form ({:.1}%) and {} of {} nodes ({:.1}%); the rest is live (reaches an observable, or may trap)",
            self.dce_removed_stmts,
            self.dce_input_stmts,
            pct(self.dce_removed_stmts, self.dce_input_stmts),
            self.dce_removed_nodes,
            self.dce_input_nodes,
            pct(self.dce_removed_nodes, self.dce_input_nodes)
        )?;
        writeln!(f, "feature use (occurrences):")?;
        for (k, v) in &self.uses {
            writeln!(f, "  {k:<24} {v}")?;
        }
        writeln!(f, "shapes and policy patterns (occurrences):")?;
        for (k, v) in &self.shapes {
            writeln!(f, "  {k:<40} {v}")?;
        }
        writeln!(f, "compares and binary operators by context (occurrences):")?;
        for (k, v) in &self.contexts {
            writeln!(f, "  {k:<40} {v}")?;
        }
        let [both, one] = edge_coverage(self);
        writeln!(
            f,
            "edge-constant operand pairs (operator, type, classes of {}): both constant {} of {}; constant and variable {} of {}",
            edges::CLASSES.len(),
            both.0,
            both.1,
            one.0,
            one.1
        )?;
        writeln!(f, "swarm features (programs with the feature on):")?;
        for (k, v) in &self.features {
            writeln!(f, "  {k:<24} {v}")?;
        }
        for line in self.distinguish.lines() {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}
