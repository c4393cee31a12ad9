//! The test-case reducer (`tandem reduce`): shrinks a failing case file while it keeps
//! failing the same way, in the spirit of C-Reduce and llvm-reduce but on the IR itself.
//!
//! A *candidate* is a smaller case made by one transformation. It is kept when it is
//! **valid** (it prints and parses back, verifies, every run's inputs fit its function and
//! every run's reference outcome is valid: in bounds, within fuel) and **interesting**:
//! some run's first problem has the same [`signature`] as the original's (with an
//! explicit `--signature`, any problem of a run: every signature a report prints names
//! one, in any spelling [`normalize_signature`] reads). The
//! transformations, tried in rounds until a whole round changes nothing:
//!
//! 1. runs: keep a single run; functions no run calls; helper declarations;
//! 2. control flow: a terminator becomes `ret 0`, a branch or switch a jump to one of its
//!    targets; blocks that become unreachable are removed (and their phi arguments); a
//!    block reached only by a jump from its only predecessor joins it;
//! 3. statements and phis: removed in chunks (halves, quarters, ... single ones, as in
//!    delta debugging);
//! 4. subtrees: a node replaced by one of its operands of the same type or by the
//!    constant 0 or 1; constants shrunk toward 0 (0, 1, half);
//! 5. declarations: parameters (and their arguments), locals and callframe variables
//!    nothing uses;
//! 6. inputs: arguments and callframe inputs toward 0 and 1, heap rows dropped.
//!
//! Every step is deterministic (no clock, no randomness), so the same case reduces to the
//! same result on every machine; a campaign may give it a deadline ([`reduce_until`]: the
//! time left, or an interrupt), and a reduction that does not finish by then is abandoned,
//! never cut short into another result. The reduced case's expectations are the reference
//! interpreter's outcome, so `tandem run` replays it and reports the disagreement.

use super::findings::{normalize_signature, problem_comments, signature};
use crate::cases::casefile::{CaseFile, Run};
use crate::judge::check::{check_case, Problem};
use crate::exec::x86::X86Runner;
use crate::exec::outcome::Value;
use std::collections::HashSet;
use std::time::{Duration, Instant};
use tandem_core::ir::{Block, ExprData, Function, Module, Terminator};
use tandem_core::verify::verify_module;

/// The result of a reduction.
#[derive(Clone, Debug)]
pub struct Reduced {
    pub case: CaseFile,
    /// The reduced case file: the problems as comments, then the case with blessed
    /// expectations.
    pub text: String,
    pub signature: String,
    /// The signature of the reduced case's own first problem (the first problem of its
    /// first failing run). With an explicit target any problem may show it, so this may
    /// name an earlier guilty stage: a campaign re-signs the finding with it.
    pub first_signature: String,
    /// Statements (statement roots and phis) before and after.
    pub statements_before: usize,
    pub statements: usize,
    /// Candidates checked and kept.
    pub candidates: u64,
    pub accepted: u64,
    pub elapsed: Duration,
}

/// Why a case cannot be reduced.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ReduceError {
    /// No run of the case fails (or none with the requested signature).
    NotFailing(String),
    /// The original case cannot be checked at all.
    Check(String),
    /// The deadline passed before the reduction finished (`tandem reduce` has none).
    OutOfTime,
}

impl std::fmt::Display for ReduceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReduceError::NotFailing(m) | ReduceError::Check(m) => f.write_str(m),
            ReduceError::OutOfTime => f.write_str("the time left was not enough to reduce the case"),
        }
    }
}

impl std::error::Error for ReduceError {}

/// The number of statements of a module: statement roots and phis of its blocks.
pub fn statement_count(m: &Module) -> usize {
    m.functions
        .iter()
        .map(|f| f.layout.iter().map(|&b| f.blocks[b].stmts.len() + f.blocks[b].phis.len()).sum::<usize>())
        .sum()
}

/// A candidate under test: the module and the runs (without expectations).
#[derive(Clone)]
struct Cand {
    module: Module,
    runs: Vec<Run>,
}

struct Reducer<'a> {
    target: String,
    emu: &'a mut dyn X86Runner,
    best: Cand,
    /// The problems of the best candidate's first failing run.
    problems: Vec<Problem>,
    candidates: u64,
    accepted: u64,
    /// Whether any problem of a run may show the target (an explicit signature), not
    /// only its first.
    any_problem: bool,
    /// Whether to give up (asked before each candidate); once it says so, every
    /// candidate is rejected and `out_of_time` set.
    give_up: &'a dyn Fn() -> bool,
    out_of_time: bool,
}

impl Reducer<'_> {
    /// Normalizes `c` (print and parse back, which also drops unused expression nodes)
    /// and returns it with its first failing run's problems when it is valid and shows
    /// the target signature.
    fn test(&mut self, c: &Cand) -> Option<(Cand, Vec<Problem>)> {
        if self.out_of_time || (self.give_up)() {
            self.out_of_time = true;
            return None;
        }
        self.candidates += 1;
        let text = CaseFile::new(c.module.clone(), c.runs.clone()).print();
        let case = CaseFile::parse(&text).ok()?;
        verify_module(&case.module).ok()?;
        for r in &case.runs {
            r.input(case.module.function(&r.entry)?).ok()?;
        }
        let checked = check_case(&case, self.emu).ok()?;
        if checked.iter().any(|c| c.reference.is_err()) {
            return None;
        }
        let shows = |p: &Problem| signature(p) == self.target;
        let hit = checked.into_iter().find(|c| if self.any_problem { c.problems.iter().any(shows) } else { c.problems.first().is_some_and(shows) })?;
        Some((Cand { module: case.module, runs: case.runs }, hit.problems))
    }

    /// Keeps `c` if it is valid and interesting.
    fn try_keep(&mut self, c: Cand) -> bool {
        match self.test(&c) {
            Some((c, problems)) => {
                self.best = c;
                self.problems = problems;
                self.accepted += 1;
                true
            }
            None => false,
        }
    }

    fn round(&mut self) -> bool {
        let mut changed = false;
        changed |= self.runs_and_functions();
        changed |= self.control_flow();
        changed |= self.statements();
        changed |= self.subtrees();
        changed |= self.declarations();
        changed |= self.inputs();
        changed
    }

    fn runs_and_functions(&mut self) -> bool {
        let mut changed = false;
        if self.best.runs.len() > 1 {
            for k in 0..self.best.runs.len() {
                let mut c = self.best.clone();
                c.runs = vec![c.runs[k].clone()];
                if self.try_keep(c) {
                    changed = true;
                    break;
                }
            }
        }
        let called: HashSet<String> = self.best.runs.iter().map(|r| r.entry.clone()).collect();
        if self.best.module.functions.iter().any(|f| !called.contains(&f.name)) {
            let mut c = self.best.clone();
            c.module.functions.retain(|f| called.contains(&f.name));
            changed |= self.try_keep(c);
        }
        let mut k = 0;
        while k < self.best.module.helpers.len() {
            let mut c = self.best.clone();
            c.module.helpers.remove(k);
            if self.try_keep(c) {
                changed = true;
            } else {
                k += 1;
            }
        }
        changed
    }

    /// The blocks of function `fi` in layout order.
    fn blocks(&self, fi: usize) -> Vec<Block> {
        self.best.module.functions[fi].layout.clone()
    }

    fn control_flow(&mut self) -> bool {
        let mut changed = false;
        for fi in 0..self.best.module.functions.len() {
            let mut i = 0;
            while i < self.blocks(fi).len() {
                let b = self.blocks(fi)[i];
                let f = &self.best.module.functions[fi];
                let mut options = vec![];
                if !matches!(&f.blocks[b].term, Terminator::Return(e) if matches!(f.exprs[*e], ExprData::Const { value: 0, .. })) {
                    options.push(None);
                }
                match &f.blocks[b].term {
                    Terminator::Branch { then_dest, else_dest, .. } => {
                        options.push(Some(*then_dest));
                        options.push(Some(*else_dest));
                    }
                    Terminator::Switch { default, cases, .. } => {
                        options.push(Some(*default));
                        options.extend(cases.iter().map(|(_, t)| Some(*t)));
                    }
                    _ => {}
                }
                for target in options {
                    let mut c = self.best.clone();
                    let g = &mut c.module.functions[fi];
                    g.blocks[b].term = match target {
                        Some(t) => Terminator::Jump(t),
                        None => {
                            let ret = g.ret;
                            Terminator::Return(g.add_expr(ExprData::Const { ty: ret, value: 0 }))
                        }
                    };
                    remove_unreachable(g);
                    if self.try_keep(c) {
                        changed = true;
                        break;
                    }
                }
                i += 1;
            }
            // Jump chains: a block that is the only successor of its only predecessor
            // joins it.
            let mut i = 1;
            while i < self.blocks(fi).len() {
                let b = self.blocks(fi)[i];
                let f = &self.best.module.functions[fi];
                let preds = f.predecessors();
                let [a] = preds[b][..] else {
                    i += 1;
                    continue;
                };
                if f.blocks[a].term != Terminator::Jump(b) || !f.blocks[b].phis.is_empty() {
                    i += 1;
                    continue;
                }
                let mut c = self.best.clone();
                let g = &mut c.module.functions[fi];
                let moved = std::mem::take(&mut g.blocks[b].stmts);
                g.blocks[a].stmts.extend(moved);
                g.blocks[a].term = g.blocks[b].term.clone();
                for s in g.blocks[b].term.successors() {
                    for phi in &mut g.blocks[s].phis {
                        for (p, _) in &mut phi.args {
                            if *p == b {
                                *p = a;
                            }
                        }
                    }
                }
                g.layout.retain(|&x| x != b);
                if self.try_keep(c) {
                    changed = true;
                } else {
                    i += 1;
                }
            }
        }
        changed
    }

    /// Removes statements and phis in chunks, halving the chunk size down to one.
    fn statements(&mut self) -> bool {
        let mut changed = false;
        for fi in 0..self.best.module.functions.len() {
            let items = |m: &Module| -> Vec<(Block, bool, usize)> {
                let f = &m.functions[fi];
                let mut v = vec![];
                for &b in &f.layout {
                    v.extend((0..f.blocks[b].phis.len()).map(|k| (b, true, k)));
                    v.extend((0..f.blocks[b].stmts.len()).map(|k| (b, false, k)));
                }
                v
            };
            let mut chunk = items(&self.best.module).len().max(1);
            loop {
                let mut start = 0;
                while start < items(&self.best.module).len() {
                    let all = items(&self.best.module);
                    let drop: HashSet<(Block, bool, usize)> = all[start..(start + chunk).min(all.len())].iter().copied().collect();
                    let mut c = self.best.clone();
                    let g = &mut c.module.functions[fi];
                    for &b in &g.layout.clone() {
                        let data = &mut g.blocks[b];
                        let mut k = 0;
                        data.phis.retain(|_| {
                            k += 1;
                            !drop.contains(&(b, true, k - 1))
                        });
                        let mut k = 0;
                        data.stmts.retain(|_| {
                            k += 1;
                            !drop.contains(&(b, false, k - 1))
                        });
                    }
                    if self.try_keep(c) {
                        changed = true;
                    } else {
                        start += chunk;
                    }
                }
                if chunk == 1 {
                    break;
                }
                chunk = chunk.div_ceil(2);
            }
        }
        changed
    }

    /// Replaces nodes by an operand of the same type or by 0 or 1; shrinks constants.
    fn subtrees(&mut self) -> bool {
        let mut changed = false;
        for fi in 0..self.best.module.functions.len() {
            let mut i = 0;
            loop {
                // The live nodes, parents before their operands.
                let f = &self.best.module.functions[fi];
                let mut nodes = vec![];
                for root in f.roots() {
                    let mut post = vec![];
                    f.visit_postorder(root, &mut |e| post.push(e));
                    nodes.extend(post.into_iter().rev());
                }
                let Some(&e) = nodes.get(i) else { break };
                let Some(ty) = f.expr_type(e) else {
                    i += 1;
                    continue;
                };
                let mut options: Vec<ExprData> = vec![];
                match f.exprs[e] {
                    ExprData::Const { value, .. } => {
                        for v in [0, 1, value / 2] {
                            if v.abs() < value.abs() || (v == 1 && value != 1 && value != 0) {
                                options.push(ExprData::Const { ty, value: v });
                            }
                        }
                    }
                    _ => {
                        for op in f.exprs[e].operands() {
                            if f.expr_type(op) == Some(ty) {
                                options.push(f.exprs[op].clone());
                            }
                        }
                        options.push(ExprData::Const { ty, value: 0 });
                        options.push(ExprData::Const { ty, value: 1 });
                    }
                }
                let mut kept = false;
                for data in options {
                    let mut c = self.best.clone();
                    c.module.functions[fi].exprs[e] = data;
                    if self.try_keep(c) {
                        changed = true;
                        kept = true;
                        break;
                    }
                }
                // A kept replacement renumbers the nodes; the same index is the next node.
                if !kept {
                    i += 1;
                }
            }
        }
        changed
    }

    /// Drops parameters (with their arguments in the runs), and locals and callframe
    /// variables that nothing uses.
    fn declarations(&mut self) -> bool {
        let mut changed = false;
        for fi in 0..self.best.module.functions.len() {
            let mut k = 0;
            while k < self.best.module.functions[fi].params.len() {
                let mut c = self.best.clone();
                let name = c.module.functions[fi].name.clone();
                c.module.functions[fi].params.remove(k);
                for r in c.runs.iter_mut().filter(|r| r.entry == name) {
                    r.args.remove(k);
                }
                if self.try_keep(c) {
                    changed = true;
                } else {
                    k += 1;
                }
            }
        }
        for fi in 0..self.best.module.functions.len() {
            let f = &self.best.module.functions[fi];
            if let Some(g) = drop_unused(f) {
                let mut c = self.best.clone();
                let kept: HashSet<&str> = g.cfvars.values().map(|d| d.name.as_str()).collect();
                for r in c.runs.iter_mut().filter(|r| r.entry == g.name) {
                    r.callframe.retain(|(n, _)| kept.contains(n.as_str()));
                }
                c.module.functions[fi] = g;
                changed |= self.try_keep(c);
            }
        }
        changed
    }

    /// Shrinks the runs' inputs: arguments and callframe values toward 0 and 1, heap rows
    /// dropped.
    fn inputs(&mut self) -> bool {
        let mut changed = false;
        for ri in 0..self.best.runs.len() {
            for ai in 0..self.best.runs[ri].args.len() {
                changed |= self.shrink_value(|c| &mut c.runs[ri].args[ai]);
            }
            for ci in 0..self.best.runs[ri].callframe.len() {
                changed |= self.shrink_value(|c| &mut c.runs[ri].callframe[ci].1);
            }
            if !self.best.runs[ri].heap.is_empty() {
                let mut c = self.best.clone();
                c.runs[ri].heap.clear();
                if self.try_keep(c) {
                    changed = true;
                    continue;
                }
            }
            let mut k = 0;
            while k < self.best.runs[ri].heap.len() {
                let mut c = self.best.clone();
                c.runs[ri].heap.remove(k);
                if self.try_keep(c) {
                    changed = true;
                } else {
                    k += 1;
                }
            }
        }
        changed
    }

    fn shrink_value(&mut self, at: impl Fn(&mut Cand) -> &mut Value) -> bool {
        let v = *at(&mut self.best.clone());
        let x = v.as_i64();
        for y in [0, 1, x / 2] {
            if y.unsigned_abs() < x.unsigned_abs() || (y == 1 && x != 1 && x != 0) {
                let mut c = self.best.clone();
                *at(&mut c) = Value::new(v.ty(), y);
                if self.try_keep(c) {
                    return true;
                }
            }
        }
        false
    }
}

/// Removes the blocks no longer reachable from the entry, and the phi arguments of edges
/// that no longer exist.
fn remove_unreachable(f: &mut Function) {
    let mut seen = HashSet::new();
    let mut stack = vec![f.entry()];
    while let Some(b) = stack.pop() {
        if seen.insert(b) {
            stack.extend(f.blocks[b].term.successors());
        }
    }
    f.layout.retain(|b| seen.contains(b));
    let preds = f.predecessors();
    for b in f.layout.clone() {
        for phi in &mut f.blocks[b].phis {
            phi.args.retain(|(p, _)| preds[b].contains(p));
        }
    }
}

/// `f` without the locals (other than parameters) and callframe variables no live node
/// or phi uses, renumbered; `None` when every one is used.
fn drop_unused(f: &Function) -> Option<Function> {
    use cranelift_entity::{EntityRef, PrimaryMap};
    use tandem_core::ir::{CfVar, Local};
    let mut locals: HashSet<Local> = f.params.iter().copied().collect();
    let mut cfvars: HashSet<CfVar> = HashSet::new();
    for &b in &f.layout {
        for phi in &f.blocks[b].phis {
            locals.insert(phi.dest);
            locals.extend(phi.args.iter().map(|(_, l)| *l));
        }
    }
    for root in f.roots() {
        f.visit_postorder(root, &mut |e| match &f.exprs[e] {
            ExprData::Local(l) | ExprData::Assign { local: l, .. } => {
                locals.insert(*l);
            }
            ExprData::CfRead(v) | ExprData::CfWrite { var: v, .. } => {
                cfvars.insert(*v);
            }
            _ => {}
        });
    }
    if locals.len() == f.locals.len() && cfvars.len() == f.cfvars.len() {
        return None;
    }
    let mut g = f.clone();
    let mut local_map = vec![None; f.locals.len()];
    g.locals = PrimaryMap::new();
    for (l, d) in f.locals.iter() {
        if locals.contains(&l) {
            local_map[l.index()] = Some(g.locals.push(d.clone()));
        }
    }
    let mut cf_map = vec![None; f.cfvars.len()];
    g.cfvars = PrimaryMap::new();
    for (v, d) in f.cfvars.iter() {
        if cfvars.contains(&v) {
            cf_map[v.index()] = Some(g.cfvars.push(d.clone()));
        }
    }
    let ml = |l: Local| local_map[l.index()].expect("a used local");
    let mv = |v: CfVar| cf_map[v.index()].expect("a used callframe variable");
    g.params = f.params.iter().map(|&p| ml(p)).collect();
    // Every node of a parsed function is live, so every node maps.
    for e in f.roots() {
        f.visit_postorder(e, &mut |n| match &mut g.exprs[n] {
            ExprData::Local(l) | ExprData::Assign { local: l, .. } => *l = ml(*l),
            ExprData::CfRead(v) | ExprData::CfWrite { var: v, .. } => *v = mv(*v),
            _ => {}
        });
    }
    for &b in &f.layout {
        for phi in &mut g.blocks[b].phis {
            phi.dest = ml(phi.dest);
            for (_, l) in &mut phi.args {
                *l = ml(*l);
            }
        }
    }
    Some(g)
}

/// Reduces `case` while it keeps failing with signature `target` (default: the
/// signature of the first problem of its first failing run). `progress` receives one
/// line per round.
pub fn reduce(
    case: &CaseFile,
    target: Option<&str>,
    emu: &mut dyn X86Runner,
    progress: &mut dyn FnMut(&str),
) -> Result<Reduced, ReduceError> {
    reduce_until(case, target, &|| false, emu, progress)
}

/// [`reduce`], abandoned with [`ReduceError::OutOfTime`] as soon as `give_up` says so (a
/// campaign's time is up, or it was interrupted).
pub fn reduce_until(
    case: &CaseFile,
    target: Option<&str>,
    give_up: &dyn Fn() -> bool,
    emu: &mut dyn X86Runner,
    progress: &mut dyn FnMut(&str),
) -> Result<Reduced, ReduceError> {
    let started = Instant::now();
    let checked = check_case(case, emu).map_err(|e| ReduceError::Check(e.to_string()))?;
    let target = pick_target(&checked, target)?;
    let any_problem = target.1;
    let target = target.0;
    let runs: Vec<Run> = case.runs.iter().map(|r| Run { expect: None, ..r.clone() }).collect();
    let start = Cand { module: case.module.clone(), runs };
    let statements_before = statement_count(&start.module);
    let mut r = Reducer {
        target: target.clone(),
        emu,
        best: start.clone(),
        problems: vec![],
        candidates: 0,
        accepted: 0,
        any_problem,
        give_up,
        out_of_time: false,
    };
    // The original itself, normalized: the runs that are invalid are dropped first.
    if r.test(&start).is_none() {
        let mut c = start.clone();
        let valid: Vec<bool> = checked.iter().map(|c| c.reference.is_ok()).collect();
        c.runs = c.runs.into_iter().zip(valid).filter(|(_, v)| *v).map(|(r, _)| r).collect();
        if !r.try_keep(c) {
            if r.out_of_time {
                return Err(ReduceError::OutOfTime);
            }
            return Err(ReduceError::NotFailing(format!("the case does not fail with `{target}` once printed back")));
        }
    } else {
        r.try_keep(start);
    }
    let mut round = 1;
    loop {
        let changed = r.round();
        progress(&format!(
            "round {round}: {} statement(s), {} candidate(s) checked, {} kept, {:.1}s",
            statement_count(&r.best.module),
            r.candidates,
            r.accepted,
            started.elapsed().as_secs_f64()
        ));
        if r.out_of_time {
            return Err(ReduceError::OutOfTime);
        }
        if !changed {
            break;
        }
        round += 1;
    }
    finish(r, target, statements_before, started)
}

/// The reduced case file: the best candidate with the reference interpreter's outcome of
/// each run as its expectation, under its problems as comments.
fn finish(r: Reducer<'_>, target: String, statements_before: usize, started: Instant) -> Result<Reduced, ReduceError> {
    let mut case = CaseFile::new(r.best.module.clone(), r.best.runs.clone());
    let checked = check_case(&case, r.emu).map_err(|e| ReduceError::Check(e.to_string()))?;
    let actual: Vec<_> = case
        .runs
        .iter()
        .zip(&checked)
        .map(|(run, c)| case.module.function(&run.entry).map(|f| Run::expectation_of(f, &c.reference)))
        .collect();
    case.bless(&actual);
    let first_signature = checked.iter().find_map(|c| c.problems.first().map(signature)).unwrap_or_else(|| target.clone());
    let problems: Vec<(u32, Problem)> = r.problems.iter().map(|p| (0, p.clone())).collect();
    let statements = statement_count(&case.module);
    let text = format!(
        "{}; reduced by `tandem reduce` from {statements_before} to {statements} statement(s)\n{}",
        problem_comments(&problems),
        case.print()
    );
    Ok(Reduced {
        case,
        text,
        signature: target,
        first_signature,
        statements_before,
        statements,
        candidates: r.candidates,
        accepted: r.accepted,
        elapsed: started.elapsed(),
    })
}

/// The signature to keep and whether any problem of a run may show it: the first problem's
/// signature by default; a requested one (in any spelling a report printed) when some
/// problem of some run has it.
fn pick_target(checked: &[crate::judge::check::RunCheck], target: Option<&str>) -> Result<(String, bool), ReduceError> {
    let Some(t) = target else {
        let first = checked.iter().find_map(|c| c.problems.first().map(signature));
        // `tandem run` also fails a run whose `; expect:` lines the reference interpreter
        // does not meet; that is the case's own mistake, not a stage's, and nothing to keep.
        let why = "no run of the case fails at a stage (reduce keeps a stage's disagreement with the reference interpreter; an `; expect:` line the interpreter does not meet is not one: `tandem run --bless` rewrites it)";
        return first.map(|s| (s, false)).ok_or_else(|| ReduceError::NotFailing(why.into()));
    };
    let want = normalize_signature(t);
    if checked.iter().any(|c| c.problems.iter().any(|p| signature(p) == want)) {
        return Ok((want, true));
    }
    let mut shown: Vec<String> = checked.iter().flat_map(|c| c.problems.iter().map(signature)).collect();
    shown.dedup();
    let what = if want.starts_with("z3 pass ") {
        " (the validator's findings are replayed by `tandem verify` on the `-smt-PASS.tir` file it wrote)".to_string()
    } else if shown.is_empty() {
        " (no run of it fails)".to_string()
    } else {
        format!(" (its runs fail with: {})", shown.join("; "))
    };
    Err(ReduceError::NotFailing(format!("no run of the case fails with signature `{want}`{what}")))
}
