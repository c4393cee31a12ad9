//! `tandem gen --stats`: what the generator makes over many seeds — the share of runs
//! that are valid, that trap, that run out of fuel or out of bounds, cases that fail
//! [`super::check`], and a histogram of feature use (operators, helpers, node kinds,
//! terminators, swarm features). Counters live in `BTreeMap`s so the report's order is
//! stable.

use super::config::{Config, Feature};
use super::{check, check_promises, generate};
use crate::outcome::{End, Invalid};
use std::collections::BTreeMap;
use std::fmt;
use tandem_core::ir::{ExprData, Terminator, TrapKind};
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

/// Generates and checks `count` cases from seed `first` on, and counts.
pub fn stats(first: u64, count: u64, cfg: &Config) -> Stats {
    let mut s = Stats::default();
    for seed in first..first + count {
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
            s.blocks += f.layout.len() as u64;
            s.max_case_blocks = s.max_case_blocks.max(f.layout.len() as u64);
            for &b in &f.layout {
                let data = &f.blocks[b];
                s.statements += data.stmts.len() as u64;
                s.bump(
                    match &data.term {
                        Terminator::Jump(_) => "term jump",
                        Terminator::Branch { .. } => "term br",
                        Terminator::Return(_) => "term ret",
                        Terminator::Switch { .. } => "term switch",
                    }
                    .to_string(),
                );
            }
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
                        ExprData::Assign { .. } => {
                            if roots.contains(&e) {
                                "node assign".into()
                            } else {
                                "node assign (nested)".into()
                            }
                        }
                        ExprData::Call { helper, .. } => format!("helper {helper}"),
                        ExprData::TrapIf { .. } => "node trapif".into(),
                        ExprData::Comma { .. } => "node comma".into(),
                    };
                    s.bump(key);
                });
            }
        }
        match check_promises(&g.case).and_then(|()| check(&g.case)) {
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
    s
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
        writeln!(f, "feature use (occurrences):")?;
        for (k, v) in &self.uses {
            writeln!(f, "  {k:<24} {v}")?;
        }
        writeln!(f, "shapes and policy patterns (occurrences):")?;
        for (k, v) in &self.shapes {
            writeln!(f, "  {k:<40} {v}")?;
        }
        writeln!(f, "swarm features (programs with the feature on):")?;
        for (k, v) in &self.features {
            writeln!(f, "  {k:<24} {v}")?;
        }
        Ok(())
    }
}
