//! The steps SSAPRE runs for one expression of the worklist, over its Factored
//! Redundancy Graph (FRG): Φ-Insertion, Rename, DownSafety, WillBeAvail (CanBeAvail,
//! Later), Finalize (Finalize1 and Finalize2, with unneeded-Φ elimination) and
//! CodeMotion, with the paper's names for the flags (`down_safe`, `can_be_avail`,
//! `later`, `will_be_avail`, `has_real_use`, `save`, `reload`).
//!
//! Each block holds at most one Φ of the expression and one Φ operand per successor Φ,
//! occurring at the block's end (`seeds/ssapre.txt`). Classes are the "redundancy
//! classes" of Rename; a class is defined by a Φ or by the first real occurrence that
//! starts it.

use super::{Initialization, Parent, Val};
use crate::ir::{Block, Expr, ExprData, Function, Local};
use crate::passes::util::Namer;
use crate::passes::{Analyses, Stats};
use cranelift_entity::SecondaryMap;
use std::collections::HashMap;

/// What defines a Φ operand or a reload: nothing (⊥), a real occurrence, a Φ, or an
/// insertion made by Finalize.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
enum Def {
    Bottom,
    Real(usize),
    Phi(usize),
    Inserted(usize),
}

#[derive(Clone, Debug)]
struct PhiOpnd {
    pred: Block,
    def: Def,
    has_real_use: bool,
}

/// A Φ occurrence of the expression at the entry of `block`.
#[derive(Clone, Debug)]
struct PhiOcc {
    block: Block,
    /// The operand versions current at the block's entry; `None` when an original has
    /// no version there (the expression cannot be formed, so the Φ is never available).
    versions: Option<Vec<Val>>,
    class: u32,
    down_safe: bool,
    can_be_avail: bool,
    later: bool,
    operands: Vec<PhiOpnd>,
}

impl PhiOcc {
    fn will_be_avail(&self) -> bool {
        self.can_be_avail && !self.later
    }
}

/// Rename's state of a real occurrence and what Finalize decided for it.
#[derive(Clone, Debug, Default)]
struct RealState {
    class: u32,
    reload: bool,
    /// For a reload: the available definition it reads.
    def: Option<Def>,
    save: bool,
}

/// An insertion decided by Finalize: the expression with `versions` at the end of `block`.
#[derive(Clone, Debug)]
struct Insertion {
    block: Block,
    versions: Vec<Val>,
}

/// Runs the SSAPRE steps for worklist entry `k`. Returns whether the function changed.
pub fn run_expression(
    f: &mut Function,
    an: &Analyses,
    init: &Initialization,
    k: usize,
    round: usize,
    temps: &mut Vec<(String, usize)>,
    stats: &mut Stats,
) -> bool {
    let e = &init.worklist[k];
    stats.bump("exprs");
    let trapping = e.key.op.can_trap();
    let occs = &e.occs;

    // Φ-Insertion: the iterated dominance frontier of the occurrences' blocks and of the
    // blocks defining the operands' originals, plus the blocks of the operands' phis.
    let mut seeds: Vec<Block> = occs.iter().map(|o| o.block).collect();
    let mut operand_phis: Vec<Block> = vec![];
    for op in &e.key.operands {
        if let super::KeyOperand::Orig(o) = op {
            operand_phis.extend(init.phi_blocks[*o as usize].iter().copied());
            seeds.extend(init.def_blocks[*o as usize].iter().copied());
        }
    }
    seeds.sort();
    seeds.dedup();
    let mut phi_at: Vec<Block> = an.frontiers.iterated(&seeds);
    phi_at.extend(operand_phis);
    phi_at.sort();
    phi_at.dedup();
    // A Φ only makes sense at a merge; a phi in a one-predecessor block needs none.
    phi_at.retain(|&b| an.cfg.preds[b].len() >= 2);
    if occs.len() < 2 && phi_at.is_empty() {
        return false;
    }
    let mut phi_of: SecondaryMap<Block, Option<usize>> = SecondaryMap::new();
    let mut phis: Vec<PhiOcc> = vec![];
    for &b in &phi_at {
        let versions = e
            .key
            .operands
            .iter()
            .map(|op| match *op {
                super::KeyOperand::Const(t, c) => Some(Val::Const(t, c)),
                super::KeyOperand::Orig(o) => init.current_at(b, o).map(Val::Var),
            })
            .collect::<Option<Vec<Val>>>();
        phi_of[b] = Some(phis.len());
        let operands =
            an.cfg.preds[b].iter().map(|&p| PhiOpnd { pred: p, def: Def::Bottom, has_real_use: false }).collect();
        let can_be_avail = versions.is_some();
        phis.push(PhiOcc { block: b, versions, class: 0, down_safe: true, can_be_avail, later: false, operands });
    }
    let mut occs_in: SecondaryMap<Block, Vec<usize>> = SecondaryMap::new();
    for (i, o) in occs.iter().enumerate() {
        occs_in[o.block].push(i);
    }

    // Rename: a pre-order walk of the dominator tree with a stack of occurrences.
    let mut real: Vec<RealState> = vec![RealState::default(); occs.len()];
    let mut classes = 0u32;
    let mut new_class = || {
        classes += 1;
        classes
    };
    #[derive(Copy, Clone)]
    enum Top {
        Real(usize),
        Phi(usize),
    }
    let mut stack: Vec<Top> = vec![];
    enum Work {
        Enter(Block),
        Exit(usize),
    }
    let mut work = vec![Work::Enter(f.entry())];
    while let Some(w) = work.pop() {
        let b = match w {
            Work::Exit(h) => {
                stack.truncate(h);
                continue;
            }
            Work::Enter(b) => b,
        };
        let height = stack.len();
        if let Some(j) = phi_of[b] {
            phis[j].class = new_class();
            stack.push(Top::Phi(j));
        }
        // The block's occurrences and (for a trapping expression) effects, in order.
        let mut events: Vec<(u32, Option<usize>)> = occs_in[b].iter().map(|&i| (occs[i].pos, Some(i))).collect();
        if trapping {
            let own: Vec<Expr> = occs_in[b].iter().map(|&i| occs[i].node).collect();
            events.extend(init.kills[b].iter().filter(|(_, n)| !own.contains(n)).map(|&(p, _)| (p, None)));
        }
        events.sort_by_key(|&(p, i)| (p, i.is_none()));
        for (_, ev) in events {
            match (ev, stack.last().copied()) {
                (None, Some(Top::Phi(j))) => phis[j].down_safe = false,
                (None, _) => {}
                (Some(i), Some(Top::Real(y))) if occs[y].versions == occs[i].versions => {
                    real[i].class = real[y].class;
                    stack.push(Top::Real(i));
                }
                (Some(i), Some(Top::Phi(j))) if phis[j].versions.as_ref() == Some(&occs[i].versions) => {
                    real[i].class = phis[j].class;
                    stack.push(Top::Real(i));
                }
                (Some(i), top) => {
                    if let Some(Top::Phi(j)) = top {
                        // The expression was altered on the path from the Φ to here
                        // before being evaluated.
                        phis[j].down_safe = false;
                    }
                    real[i].class = new_class();
                    stack.push(Top::Real(i));
                }
            }
        }
        if init.exits[b] {
            if let Some(Top::Phi(j)) = stack.last() {
                phis[*j].down_safe = false;
            }
        }
        // Φ operands of the successors' Φs occur at the end of this block.
        for &s in &an.cfg.succs[b] {
            let Some(g) = phi_of[s] else { continue };
            let Some(t) = translate(f, init, &phis[g], b) else {
                // The successor's Φ cannot form the expression (an operand has no version
                // there): on this path the expression is altered before being evaluated
                // again, so a Φ whose value flows here is not down-safe (ssa profile seed
                // 1025: a division inserted before an inner loop that may not run).
                if let Some(Top::Phi(j)) = stack.last().copied() {
                    phis[j].down_safe = false;
                }
                continue;
            };
            let oi = phis[g].operands.iter().position(|o| o.pred == b).expect("pred");
            let (def, real_use) = match stack.last().copied() {
                Some(Top::Real(y)) if occs[y].versions == t => (Def::Real(y), true),
                Some(Top::Phi(j)) if phis[j].versions.as_ref() == Some(&t) => (Def::Phi(j), false),
                Some(Top::Phi(j)) => {
                    phis[j].down_safe = false;
                    (Def::Bottom, false)
                }
                _ => (Def::Bottom, false),
            };
            phis[g].operands[oi].def = def;
            phis[g].operands[oi].has_real_use = real_use;
        }
        work.push(Work::Exit(height));
        for &c in an.domtree.children[b].iter().rev() {
            work.push(Work::Enter(c));
        }
    }

    // DownSafety: a Φ that is not down-safe makes the Φs feeding it without a real use
    // not down-safe either. An insertion of a trapping composite expression is never
    // made (see the module docs of `ssapre`), so its Φs are not down-safe at all.
    if trapping && e.composite {
        phis.iter_mut().for_each(|p| p.down_safe = false);
    }
    for j in 0..phis.len() {
        if !phis[j].down_safe {
            reset_down_safe(&mut phis, j);
        }
    }

    // WillBeAvail: CanBeAvail, then Later.
    let users = phi_users(&phis);
    for j in 0..phis.len() {
        if !phis[j].down_safe && phis[j].can_be_avail && phis[j].operands.iter().any(|o| o.def == Def::Bottom) {
            reset_can_be_avail(&mut phis, &users, j);
        }
        if !phis[j].can_be_avail {
            reset_can_be_avail(&mut phis, &users, j);
        }
    }
    compute_later(&mut phis, &users);
    {
        // Insertions only at operands of down-safe Φs: for a trapping expression that is
        // the trap rule (anticipated before any effect); for any expression it keeps PRE
        // from adding a computation to a path (a Φ that is not down-safe but can be
        // available through an operand of a Φ that is `later` would otherwise insert
        // there). A Φ that would need an insertion without being down-safe is not made
        // available.
        loop {
            let bad = (0..phis.len()).find(|&j| {
                phis[j].will_be_avail() && !phis[j].down_safe && phis[j].operands.iter().any(|o| needs_insertion(&phis, o))
            });
            let Some(j) = bad else { break };
            reset_can_be_avail(&mut phis, &users, j);
            compute_later(&mut phis, &users);
        }
    }

    // Finalize1: a pre-order walk deciding reloads, and insertions at Φ operands.
    let mut avail_def: HashMap<u32, Def> = HashMap::new();
    let mut insertions: Vec<Insertion> = vec![];
    let def_site = |d: Def, phis: &Vec<PhiOcc>| -> (Block, u32) {
        match d {
            Def::Real(i) => (occs[i].block, occs[i].pos),
            Def::Phi(j) => (phis[j].block, 0),
            Def::Bottom | Def::Inserted(_) => unreachable!("no site"),
        }
    };
    for b in an.domtree.preorder() {
        if let Some(j) = phi_of[b] {
            if phis[j].will_be_avail() {
                avail_def.insert(phis[j].class, Def::Phi(j));
            }
        }
        for &i in &occs_in[b] {
            let c = real[i].class;
            let dominating = avail_def.get(&c).copied().filter(|&d| {
                let (db, dp) = def_site(d, &phis);
                if db == b {
                    dp < occs[i].pos
                } else {
                    an.domtree.dominates(db, b)
                }
            });
            match dominating {
                Some(d) => {
                    real[i].reload = true;
                    real[i].def = Some(d);
                }
                None => {
                    avail_def.insert(c, Def::Real(i));
                }
            }
        }
        for &s in &an.cfg.succs[b] {
            let Some(g) = phi_of[s] else { continue };
            if !phis[g].will_be_avail() {
                continue;
            }
            let oi = phis[g].operands.iter().position(|o| o.pred == b).expect("pred");
            let op = phis[g].operands[oi].clone();
            let def = if needs_insertion(&phis, &op) {
                let versions = translate(f, init, &phis[g], b).expect("an available Φ has versions");
                insertions.push(Insertion { block: b, versions });
                Def::Inserted(insertions.len() - 1)
            } else {
                match op.def {
                    Def::Real(y) if real[y].reload => real[y].def.expect("a reload has a def"),
                    d => d,
                }
            };
            phis[g].operands[oi].def = def;
        }
    }

    // Finalize2: the Φs some reload needs (and the Φs those need), the saves, and the
    // insertions that feed a needed Φ. Will-be-available Φs no reload needs are the
    // unneeded Φs: they produce no phi, and their insertions are dropped.
    let mut needed = vec![false; phis.len()];
    let mut save = vec![false; occs.len()];
    let mut used_insertion = vec![false; insertions.len()];
    let mut todo: Vec<usize> = vec![];
    for r in real.iter().take(occs.len()) {
        match r.def {
            Some(Def::Real(y)) => save[y] = true,
            Some(Def::Phi(j)) if !needed[j] => {
                needed[j] = true;
                todo.push(j);
            }
            _ => {}
        }
    }
    while let Some(j) = todo.pop() {
        for o in &phis[j].operands {
            match o.def {
                Def::Real(y) => save[y] = true,
                Def::Phi(h) if !needed[h] => {
                    needed[h] = true;
                    todo.push(h);
                }
                Def::Inserted(n) => used_insertion[n] = true,
                _ => {}
            }
        }
    }
    let reloads = real.iter().filter(|r| r.reload).count();
    if reloads == 0 {
        let unneeded = phis.iter().filter(|p| p.will_be_avail()).count();
        stats.add("phis_unneeded", unneeded as u64);
        return false;
    }
    for (i, r) in real.iter_mut().enumerate() {
        r.save = save[i];
    }

    // Which Φs are fed by an insertion (directly or through another Φ): their reloads
    // are partial redundancies.
    let mut partial = vec![false; phis.len()];
    loop {
        let mut grew = false;
        for j in 0..phis.len() {
            if needed[j] && !partial[j] {
                let p = phis[j].operands.iter().any(|o| match o.def {
                    Def::Inserted(_) => true,
                    Def::Phi(h) => partial[h],
                    _ => false,
                });
                if p {
                    partial[j] = true;
                    grew = true;
                }
            }
        }
        if !grew {
            break;
        }
    }

    // CodeMotion: temporaries for saves, Φs and insertions, then the rewrite.
    // Temporaries are named `pre1`, `pre2`, ... per expression that changed code.
    let base = format!("pre{}", temps.len() + 1);
    temps.push((base.clone(), round));
    let ty = f.expr_type(occs[0].node).expect("a candidate yields a value");
    let mut namer = Namer::new(f);
    let mut temp: HashMap<Def, Local> = HashMap::new();
    for i in 0..occs.len() {
        if !real[i].save {
            continue;
        }
        let reuse = match occs[i].parent {
            Parent::Node(p) => match f.exprs[p] {
                ExprData::Assign { local, .. } => Some(local),
                _ => None,
            },
            _ => None,
        };
        let h = match reuse {
            Some(l) => l,
            None => {
                let h = namer.new_local(f, &base, ty);
                let inner = occs[i].node;
                let def = f.add_expr(ExprData::Assign { local: h, value: inner });
                let read = f.add_expr(ExprData::Local(h));
                // The save is a statement of its own before the occurrence's statement
                // when that cannot change anything: a pure computation that cannot trap,
                // reading nothing its statement assigns first. Otherwise it stays in place
                // as comma(%h = e, %h).
                let (b, root) = root_of(f, init, inner);
                let hoist = !trapping && hoistable(f, root, inner);
                let in_term = f.blocks[b].term.expr() == Some(root);
                let with = if hoist { read } else { f.add_expr(ExprData::Comma { first: def, second: read }) };
                match occs[i].parent {
                    Parent::Node(p) => {
                        for o in f.exprs[p].operands_mut() {
                            if *o == inner {
                                *o = with;
                            }
                        }
                    }
                    Parent::Stmt(_) if hoist => {}
                    Parent::Stmt(b) => {
                        let at = f.blocks[b].stmts.iter().position(|&r| r == inner).expect("a statement root");
                        f.blocks[b].stmts[at] = with;
                    }
                    Parent::Term(b) => *f.blocks[b].term.expr_mut().expect("a terminator expression") = with,
                }
                if hoist {
                    match occs[i].parent {
                        // A statement that was the occurrence alone becomes the save.
                        Parent::Stmt(_) => {
                            let at = f.blocks[b].stmts.iter().position(|&r| r == inner).expect("a statement root");
                            f.blocks[b].stmts[at] = def;
                        }
                        _ => {
                            let at = if in_term {
                                f.blocks[b].stmts.len()
                            } else {
                                f.blocks[b].stmts.iter().position(|&r| r == root).expect("a statement root")
                            };
                            f.blocks[b].stmts.insert(at, def);
                        }
                    }
                }
                h
            }
        };
        temp.insert(Def::Real(i), h);
        stats.bump("saves");
    }
    for (n, ins) in insertions.iter().enumerate() {
        if !used_insertion[n] {
            continue;
        }
        let h = namer.new_local(f, &base, ty);
        let value = build(f, init, k, &ins.versions);
        let stmt = f.add_expr(ExprData::Assign { local: h, value });
        f.blocks[ins.block].stmts.push(stmt);
        temp.insert(Def::Inserted(n), h);
        stats.bump("insertions");
    }
    // A needed Φ whose operands are all one value (or the Φ itself, around a loop) is
    // that value: it produces no phi, its readers read the value.
    #[derive(Copy, Clone, PartialEq, Eq)]
    enum Sym {
        Value(Local),
        Phi(usize),
    }
    let mut alias: HashMap<usize, Sym> = HashMap::new();
    let resolve = |d: Def, alias: &HashMap<usize, Sym>, temp: &HashMap<Def, Local>| -> Sym {
        let mut s = match d {
            Def::Phi(h) => Sym::Phi(h),
            d => Sym::Value(temp[&d]),
        };
        while let Sym::Phi(h) = s {
            match alias.get(&h) {
                Some(&t) => s = t,
                None => break,
            }
        }
        s
    };
    loop {
        let mut changed = false;
        for j in 0..phis.len() {
            if !needed[j] || alias.contains_key(&j) {
                continue;
            }
            let mut values: Vec<Sym> = vec![];
            for o in &phis[j].operands {
                let v = resolve(o.def, &alias, &temp);
                if v != Sym::Phi(j) && !values.contains(&v) {
                    values.push(v);
                }
            }
            if let [v] = values[..] {
                alias.insert(j, v);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for j in 0..phis.len() {
        if needed[j] && !alias.contains_key(&j) {
            let h = namer.new_local(f, &base, ty);
            temp.insert(Def::Phi(j), h);
            stats.bump("phis_created");
        } else if needed[j] {
            stats.bump("phis_trivial");
        } else if phis[j].will_be_avail() {
            stats.bump("phis_unneeded");
        }
    }
    for j in 0..phis.len() {
        if alias.contains_key(&j) {
            // Follow the chain: a Φ aliased to a Φ that was aliased later.
            let l = match resolve(Def::Phi(j), &alias, &temp) {
                Sym::Value(l) => l,
                Sym::Phi(h) => temp[&Def::Phi(h)],
            };
            temp.insert(Def::Phi(j), l);
        }
    }
    for j in 0..phis.len() {
        if !needed[j] || alias.contains_key(&j) {
            continue;
        }
        let args = phis[j].operands.iter().map(|o| (o.pred, temp[&o.def])).collect();
        let b = phis[j].block;
        f.blocks[b].phis.push(crate::ir::Phi { dest: temp[&Def::Phi(j)], args });
    }
    for i in 0..occs.len() {
        if !real[i].reload {
            continue;
        }
        let d = real[i].def.expect("a reload has a def");
        let read = ExprData::Local(temp[&d]);
        // Operands saved by an earlier round keep their definitions.
        let node = occs[i].node;
        let mut kept: Vec<Expr> = vec![];
        for o in f.exprs[node].operands() {
            if let ExprData::Comma { first, .. } = f.exprs[o] {
                kept.push(first);
            }
        }
        let mut data = read;
        for &first in kept.iter().rev() {
            let second = f.add_expr(data);
            data = ExprData::Comma { first, second };
        }
        f.exprs[node] = data;
        match d {
            Def::Phi(j) if partial[j] => stats.bump("reloads_partial"),
            _ => stats.bump("reloads_full"),
        }
    }
    // Loop-invariant motion: an insertion on the entry edge of a loop whose header Φ is
    // reloaded inside the loop.
    for (j, p) in phis.iter().enumerate() {
        if !needed[j] {
            continue;
        }
        let Some(l) = an.loops.innermost[p.block].filter(|&l| an.loops.loops[l].header == p.block) else { continue };
        let body = &an.loops.loops[l].blocks;
        let reloaded_inside =
            (0..occs.len()).any(|i| real[i].def == Some(Def::Phi(j)) && body.contains(&occs[i].block));
        if reloaded_inside {
            let moved = p
                .operands
                .iter()
                .filter(|o| matches!(o.def, Def::Inserted(_)) && !body.contains(&o.pred))
                .count();
            stats.add("loop_invariant", moved as u64);
        }
    }
    if e.composite {
        stats.bump("composite");
    }
    true
}

/// The Φ's versions as seen at the end of predecessor `p`: a version defined by a phi of
/// the Φ's block becomes that phi's argument for `p`.
fn translate(f: &Function, init: &Initialization, phi: &PhiOcc, p: Block) -> Option<Vec<Val>> {
    let versions = phi.versions.as_ref()?;
    Some(
        versions
            .iter()
            .map(|v| match *v {
                Val::Var(l) => match init.phi_def[l] {
                    Some((b, i)) if b == phi.block => {
                        let arg = f.blocks[b].phis[i].args.iter().find(|(q, _)| *q == p).expect("phi argument");
                        Val::Var(arg.1)
                    }
                    _ => Val::Var(l),
                },
                c => c,
            })
            .collect(),
    )
}

/// Whether Finalize must insert at this operand of an available Φ.
fn needs_insertion(phis: &[PhiOcc], o: &PhiOpnd) -> bool {
    match o.def {
        Def::Bottom => true,
        Def::Phi(h) => !o.has_real_use && !phis[h].will_be_avail(),
        _ => false,
    }
}

fn reset_down_safe(phis: &mut [PhiOcc], j: usize) {
    let feeders: Vec<usize> = phis[j]
        .operands
        .iter()
        .filter_map(|o| match o.def {
            Def::Phi(h) if !o.has_real_use => Some(h),
            _ => None,
        })
        .collect();
    for h in feeders {
        if phis[h].down_safe {
            phis[h].down_safe = false;
            reset_down_safe(phis, h);
        }
    }
}

/// For each Φ, the operands (Φ, operand index) defined by it, in Φ then operand order:
/// the resets below visit the users of a Φ instead of scanning every Φ, so WillBeAvail
/// costs O(Φs + operands) per expression, not O(Φs²) (3,000 diamonds took minutes).
/// Operands only ever change from a Φ to ⊥, so the index stays a superset of the truth
/// and each visit checks the operand again.
fn phi_users(phis: &[PhiOcc]) -> Vec<Vec<(usize, usize)>> {
    let mut users = vec![vec![]; phis.len()];
    for (j, p) in phis.iter().enumerate() {
        for (oi, o) in p.operands.iter().enumerate() {
            if let Def::Phi(g) = o.def {
                users[g].push((j, oi));
            }
        }
    }
    users
}

/// CanBeAvail's reset: `g` cannot be available, so operands it defines without a real
/// use become ⊥, and a Φ that is not down-safe with such an operand cannot be either.
fn reset_can_be_avail(phis: &mut [PhiOcc], users: &[Vec<(usize, usize)>], g: usize) {
    phis[g].can_be_avail = false;
    let mut work = vec![g];
    while let Some(g) = work.pop() {
        for &(j, oi) in &users[g] {
            let o = &phis[j].operands[oi];
            if o.def == Def::Phi(g) && !o.has_real_use {
                phis[j].operands[oi].def = Def::Bottom;
                if !phis[j].down_safe && phis[j].can_be_avail {
                    phis[j].can_be_avail = false;
                    work.push(j);
                }
            }
        }
    }
}

fn compute_later(phis: &mut [PhiOcc], users: &[Vec<(usize, usize)>]) {
    for p in phis.iter_mut() {
        p.later = p.can_be_avail;
    }
    for j in 0..phis.len() {
        if phis[j].later && phis[j].operands.iter().any(|o| o.def != Def::Bottom && o.has_real_use) {
            reset_later(phis, users, j);
        }
    }
}

/// Later's reset: a Φ fed by `g` is not later either.
fn reset_later(phis: &mut [PhiOcc], users: &[Vec<(usize, usize)>], g: usize) {
    phis[g].later = false;
    let mut work = vec![g];
    while let Some(g) = work.pop() {
        for &(j, _) in &users[g] {
            if phis[j].later && phis[j].operands.iter().any(|o| o.def == Def::Phi(g)) {
                phis[j].later = false;
                work.push(j);
            }
        }
    }
}

/// A new tree computing expression `k` of the worklist on `versions`.
fn build(f: &mut Function, init: &Initialization, k: usize, versions: &[Val]) -> Expr {
    let leaves: Vec<Expr> = versions
        .iter()
        .map(|v| match *v {
            Val::Var(l) => f.add_expr(ExprData::Local(l)),
            Val::Const(ty, value) => f.add_expr(ExprData::Const { ty, value }),
        })
        .collect();
    let data = match init.worklist[k].key.op {
        super::OpKind::Unary(op) => ExprData::Unary { op, arg: leaves[0] },
        super::OpKind::Binary(op) => ExprData::Binary { op, lhs: leaves[0], rhs: leaves[1] },
        super::OpKind::Cmp(op) => ExprData::Cmp { op, lhs: leaves[0], rhs: leaves[1] },
        super::OpKind::Convert(op) => ExprData::Convert { op, arg: leaves[0] },
        super::OpKind::Select => ExprData::Select { cond: leaves[0], if_true: leaves[1], if_false: leaves[2] },
        super::OpKind::Call(helper) => ExprData::Call { helper, args: leaves },
    };
    f.add_expr(data)
}

/// The block and the root of the statement (or terminator expression) holding `n`.
/// The parents are those of the round's start; an expression done earlier in the round
/// may since have hoisted a save holding `n` (its tree, with `n` inside) into a statement
/// of its own before the one the parents name, so the root is checked against the tree.
fn root_of(f: &Function, init: &Initialization, n: Expr) -> (Block, Expr) {
    let mut m = n;
    let b = loop {
        match init.parent[m].expect("every node has a parent") {
            Parent::Node(p) => m = p,
            Parent::Stmt(b) | Parent::Term(b) => break b,
        }
    };
    let roots: Vec<Expr> = f.blocks[b].stmts.iter().copied().chain(f.blocks[b].term.expr()).collect();
    let holds = |r: Expr| crate::passes::util::postorder(f, r).contains(&n);
    if roots.contains(&m) && holds(m) {
        return (b, m);
    }
    let r = roots.into_iter().find(|&r| holds(r)).expect("the node is in a statement of its block");
    (b, r)
}

/// Whether the computation at `x` may be evaluated just before its statement `root`: its
/// tree holds only computations that cannot trap (no effect, no memory or callframe read,
/// no call but pure ones), and no assignment of the statement comes before it.
fn hoistable(f: &Function, root: Expr, x: Expr) -> bool {
    // Only computations, locals, constants and the saves of earlier rounds may move: an
    // operand `comma(%t = e, %t)` may hold a load, a callframe read or a call, which are
    // ordered against the effects the statement evaluates first.
    let inner = crate::passes::util::postorder(f, x);
    let movable = |d: &ExprData| match d {
        ExprData::Local(_) | ExprData::Const { .. } | ExprData::Comma { .. } | ExprData::Assign { .. } => true,
        d => super::op_kind(d).is_some() && !super::is_kill(d),
    };
    if !inner.iter().all(|&n| movable(&f.exprs[n])) {
        return false;
    }
    let all = crate::passes::util::postorder(f, root);
    let at = all.iter().position(|&n| n == x).expect("x is in its statement");
    !all[..at + 1 - inner.len()].iter().any(|&n| matches!(f.exprs[n], ExprData::Assign { .. }))
}
