//! The anticipability checker of `ssapre`'s trap rule, in the manner of Tristan and
//! Leroy's validation of lazy code motion (PLDI 2009): it does not trust the pass's own
//! down-safety, it proves on the *input* function that every trapping computation the
//! pass inserted was already going to happen there.
//!
//! The rule (issue 10, `core/src/passes/ssapre` docs): a division or remainder may be
//! inserted only at a point from which, on every path, the input program evaluates the
//! same operator on the same operand values before any effect — a store, a `cfwrite`, a
//! call of a helper that is not pure, a `trapif`, another trapping operation — or a
//! return. Otherwise a trap would happen earlier, or on a path where it did not.
//!
//! [`check`] compares the function before and after the pass:
//!
//! * **Which computations are inserted.** A trapping node of the output is original when
//!   its node id was a trapping node of the same operator in the same block of the input
//!   (the pass rewrites in place and adds nodes at fresh ids); every other trapping node
//!   is inserted. An inserted node must sit in a new statement (an assignment of a local
//!   the input does not have, with a fresh root) and read only input locals and
//!   constants; anything else is reported as a violation, not guessed at.
//! * **Where it is, in the input.** A new statement in an input block stands before the
//!   `k`-th original statement, where `k` counts the statements before it that are not
//!   new (the pass never deletes or reorders statements). In a block the pass added (a
//!   split edge: one predecessor `p`, a `jump` to `s`) it stands on the input edge `p -> s`.
//! * **The proof.** A search over the input's paths from that point, carrying for each
//!   operand the set of locals known to hold its value (it grows through copies and
//!   through the phis of a block entered along the edge, and loses the dests of the
//!   phis it crosses otherwise). A path is fine when it reaches a node with the same
//!   operator whose operands are in those sets (or equal constants); it breaks at an
//!   effect or a return first. A state seen twice on a path (a cycle with no evaluation
//!   and no effect) never ends, so it cannot trap earlier than the input would: the
//!   search treats it as fine, like the greatest fixpoint of the dataflow equations. The
//!   search is exhaustive, with no loop bound; past [`MAX_STATES`] states it reports that
//!   it could not prove the point rather than pass it.

use cranelift_entity::EntityRef;
use tandem_core::hash::{HashMap, HashSet};
use tandem_core::ir::{BinOp, Block, Expr, ExprData, Function, Local, Terminator};
use tandem_core::text::printer::stmt_to_string;

/// How many search states one inserted computation may cost before the checker gives up
/// (and reports a violation: it never passes what it did not prove).
pub const MAX_STATES: usize = 200_000;

/// An inserted trapping computation the input does not anticipate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The output block holding the inserted computation.
    pub block: Block,
    /// The inserted statement, as printed.
    pub stmt: String,
    /// Why the rule does not hold.
    pub reason: String,
    /// The input path that breaks the rule, from the insertion point (empty when the
    /// violation is not about a path).
    pub path: Vec<Block>,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "inserted `{}` in {}: {}", self.stmt, self.block, self.reason)?;
        if !self.path.is_empty() {
            let p: Vec<String> = self.path.iter().map(|b| b.to_string()).collect();
            write!(f, " (input path {})", p.join(" -> "))?;
        }
        Ok(())
    }
}

/// An operand of the inserted computation: a constant, or the locals holding its value.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum Operand {
    Const(i64),
    Locals(Vec<Local>),
}

/// Checks every trapping computation `after` has and `before` did not at that place.
pub fn check(before: &Function, after: &Function) -> Vec<Violation> {
    // The walks below look only at trapping nodes, which a walk of each tree lists in
    // one list reused from tree to tree.
    let mut trapping: Vec<Trapping> = vec![];
    let mut original: HashMap<Expr, (Block, BinOp)> = HashMap::default();
    for &b in &before.layout {
        for r in roots(before, b) {
            trapping_nodes(before, r, &mut trapping);
            for t in &trapping {
                original.insert(t.node, (b, t.op));
            }
        }
    }
    let input_roots: HashSet<Expr> = before.roots().into_iter().collect();
    let is_new_stmt = |r: Expr| -> bool {
        !input_roots.contains(&r)
            && matches!(after.exprs[r], ExprData::Assign { local, .. } if local.index() >= before.locals.len())
    };
    let mut out = vec![];
    for &b in &after.layout {
        let rs = roots(after, b);
        for (i, &r) in rs.iter().enumerate() {
            trapping_nodes(after, r, &mut trapping);
            for &Trapping { node: n, op, lhs, rhs } in &trapping {
                if original.get(&n) == Some(&(b, op)) {
                    continue;
                }
                let stmt = stmt_to_string(after, r);
                let violation = |reason: String, path: Vec<Block>| Violation { block: b, stmt: stmt.clone(), reason, path };
                if !is_new_stmt(r) {
                    out.push(violation("a trapping computation inserted into an existing statement".into(), vec![]));
                    continue;
                }
                let operand = |e: Expr| -> Option<Operand> {
                    match after.exprs[e] {
                        ExprData::Const { value, .. } => Some(Operand::Const(value)),
                        ExprData::Local(l) if l.index() < before.locals.len() => Some(Operand::Locals(vec![l])),
                        _ => None,
                    }
                };
                let (Some(a), Some(c)) = (operand(lhs), operand(rhs)) else {
                    out.push(violation("its operands are not values of the input function".into(), vec![]));
                    continue;
                };
                let start = if before.layout.contains(&b) {
                    let k = rs[..i].iter().filter(|&&s| !is_new_stmt(s)).count();
                    Some((b, k, vec![a, c]))
                } else {
                    split_edge(before, after, b).map(|(p, s)| (s, 0, vec![enter(before, p, s, &a), enter(before, p, s, &c)]))
                };
                let Some((sb, k, ops)) = start else {
                    out.push(violation("it is in a block the input has no place for".into(), vec![]));
                    continue;
                };
                if let Err((reason, path)) = anticipated(before, op, sb, k, ops) {
                    out.push(violation(reason, path));
                }
            }
        }
    }
    out
}

/// A block the pass added on an input edge: its one predecessor and its target.
fn split_edge(before: &Function, after: &Function, b: Block) -> Option<(Block, Block)> {
    let Terminator::Jump(s) = after.blocks[b].term else { return None };
    let preds: Vec<Block> =
        after.layout.iter().copied().filter(|&p| after.blocks[p].term.successors().contains(&b)).collect();
    let [p] = preds[..] else { return None };
    (before.layout.contains(&p) && before.blocks[p].term.successors().contains(&s)).then_some((p, s))
}

/// The locals holding an operand's value once `s` is entered from `p`: the phi dests of
/// `s` are redefined (kept only when their argument for `p` holds the value).
fn enter(f: &Function, p: Block, s: Block, o: &Operand) -> Operand {
    let Operand::Locals(ls) = o else { return o.clone() };
    let mut out: Vec<Local> = ls.iter().copied().filter(|l| !f.blocks[s].phis.iter().any(|ph| ph.dest == *l)).collect();
    for ph in &f.blocks[s].phis {
        if ph.args.iter().any(|(q, a)| *q == p && ls.contains(a)) && !out.contains(&ph.dest) {
            out.push(ph.dest);
        }
    }
    out.sort();
    Operand::Locals(out)
}

fn holds(f: &Function, e: Expr, o: &Operand) -> bool {
    match (&f.exprs[e], o) {
        (ExprData::Const { value, .. }, Operand::Const(c)) => value == c,
        (ExprData::Local(l), Operand::Locals(ls)) => ls.contains(l),
        _ => false,
    }
}

/// Whether a node is an effect of the trap rule (stores, callframe writes, non-pure
/// calls, checks, trapping operations).
fn is_effect(d: &ExprData) -> bool {
    match d {
        ExprData::Store { .. } | ExprData::CfWrite { .. } | ExprData::TrapIf { .. } => true,
        ExprData::Call { helper, .. } => !helper.effects().is_pure(),
        ExprData::Binary { op, .. } => op.can_trap(),
        _ => false,
    }
}

/// Proves that from statement `k` of block `b` every path evaluates `op` on `ops` before
/// any effect or return; otherwise the reason and the breaking path.
fn anticipated(f: &Function, op: BinOp, b: Block, k: usize, ops: Vec<Operand>) -> Result<(), (String, Vec<Block>)> {
    type State = (Block, usize, Vec<Operand>);
    let mut seen: HashSet<State> = HashSet::default();
    // Each work item carries the path that led to it.
    let mut work: Vec<(State, Vec<Block>)> = vec![((b, k, ops), vec![b])];
    while let Some(((b, k, mut ops), path)) = work.pop() {
        if !seen.insert((b, k, ops.clone())) {
            continue;
        }
        if seen.len() > MAX_STATES {
            return Err((format!("not proved within {MAX_STATES} search states"), path));
        }
        let mut evaluated = false;
        'roots: for r in roots(f, b).into_iter().skip(k) {
            for n in postorder(f, r) {
                let d = &f.exprs[n];
                if let ExprData::Binary { op: o, lhs, rhs } = d {
                    if *o == op && holds(f, *lhs, &ops[0]) && holds(f, *rhs, &ops[1]) {
                        evaluated = true;
                        break 'roots;
                    }
                }
                if is_effect(d) {
                    let what = tandem_core::text::printer::stmt_to_string(f, r);
                    return Err((format!("the input reaches `{what}` before evaluating it"), path));
                }
                if let ExprData::Assign { local, value } = d {
                    if let ExprData::Local(src) = f.exprs[*value] {
                        for o in ops.iter_mut() {
                            if let Operand::Locals(ls) = o {
                                if ls.contains(&src) && !ls.contains(local) {
                                    ls.push(*local);
                                    ls.sort();
                                }
                            }
                        }
                    }
                }
            }
        }
        if evaluated {
            continue;
        }
        if matches!(f.blocks[b].term, Terminator::Return(_)) {
            return Err(("the input returns before evaluating it".into(), path));
        }
        let mut succs = f.blocks[b].term.successors();
        succs.sort();
        succs.dedup();
        for s in succs {
            let next: Vec<Operand> = ops.iter().map(|o| enter(f, b, s, o)).collect();
            let mut p = path.clone();
            p.push(s);
            work.push(((s, 0, next), p));
        }
    }
    Ok(())
}

/// A trapping node of a tree: a division or remainder, with its operands.
struct Trapping {
    node: Expr,
    op: BinOp,
    lhs: Expr,
    rhs: Expr,
}

/// The trapping nodes of the tree at `r` in evaluation order, in `out` (cleared first).
fn trapping_nodes(f: &Function, r: Expr, out: &mut Vec<Trapping>) {
    out.clear();
    f.visit_postorder(r, &mut |node| match f.exprs[node] {
        ExprData::Binary { op, lhs, rhs } if op.can_trap() => out.push(Trapping { node, op, lhs, rhs }),
        _ => {}
    });
}

fn roots(f: &Function, b: Block) -> Vec<Expr> {
    f.blocks[b].stmts.iter().copied().chain(f.blocks[b].term.expr()).collect()
}

fn postorder(f: &Function, e: Expr) -> Vec<Expr> {
    let mut out = vec![];
    f.visit_postorder(e, &mut |n| out.push(n));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_core::passes::{PassManager, Pipeline};
    use tandem_core::text::parse_module;

    fn ssa(src: &str) -> Function {
        let (m, _) = parse_module(src).expect("parses");
        let mut f = m.functions[0].clone();
        PassManager { verify: true }.run(&Pipeline::parse("ssa").unwrap(), &mut f, &mut |_, _, _| {}).unwrap();
        f
    }

    fn with_pre(f: &Function) -> Function {
        let mut g = f.clone();
        let p = Pipeline::parse_from(tandem_core::passes::Form::Ssa, "ssapre").unwrap();
        PassManager { verify: true }.run(&p, &mut g, &mut |_, _, _| {}).unwrap();
        g
    }

    /// Appends `%name = op(a, b)` (a fresh local) at the end of block `b`.
    fn plant(f: &mut Function, b: Block, op: BinOp, a: &str, c: &str) {
        let l = f.new_local("planted", tandem_core::ir::Type::I32);
        let x = f.add_expr(ExprData::Local(f.local_by_name(a).unwrap()));
        let y = f.add_expr(ExprData::Local(f.local_by_name(c).unwrap()));
        let d = f.add_expr(ExprData::Binary { op, lhs: x, rhs: y });
        let s = f.add_expr(ExprData::Assign { local: l, value: d });
        f.blocks[b].stmts.push(s);
    }

    const DIV_AFTER_LOG: &str = "
helper @log(i32, i32) -> void effects(observable)
function %f(i32 %a, i32 %b) -> i32 {
    local i32 %v1
    local i32 %v2
b0:
    br sge(%a, 0), b1, b2
b1:
    %v1 = sdiv(%a, %b)
    jump b3
b2:
    %v1 = 0
    jump b3
b3:
    call @log(%v1, %a)
    %v2 = sdiv(%a, %b)
    ret add(%v1, %v2)
}
";

    const DIV_ANTICIPATED: &str = "
function %f(i32 %a, i32 %b) -> i32 {
    local i32 %v1
    local i32 %v2
b0:
    br sge(%a, 0), b1, b2
b1:
    %v1 = sdiv(%a, %b)
    jump b3
b2:
    %v1 = 0
    jump b3
b3:
    %v2 = sdiv(%a, %b)
    ret add(%v1, %v2)
}
";

    #[test]
    fn a_planted_division_before_an_effect_is_reported_with_its_path() {
        let f = ssa(DIV_AFTER_LOG);
        let mut g = f.clone();
        // PRE would insert into b2 if it ignored the log in b3: plant just that.
        plant(&mut g, Block::from_u32(2), BinOp::Sdiv, "a", "b");
        let v = check(&f, &g);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].block, Block::from_u32(2));
        assert_eq!(v[0].path, vec![Block::from_u32(2), Block::from_u32(3)]);
        assert!(v[0].reason.contains("@log"), "{}", v[0]);
    }

    #[test]
    fn a_planted_division_on_other_operands_is_reported() {
        let f = ssa(DIV_ANTICIPATED);
        let mut g = f.clone();
        // b3 divides a by b, not b by a: another trapping operation comes first.
        plant(&mut g, Block::from_u32(2), BinOp::Sdiv, "b", "a");
        let v = check(&f, &g);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].reason.contains("sdiv(%a, %b)"), "{}", v[0]);
        // And in the entry, before the branch: b1 divides, b2 does not (it reaches b3,
        // which does), so a / b is anticipated there too; a % b is not.
        let mut h = f.clone();
        plant(&mut h, Block::from_u32(0), BinOp::Srem, "a", "b");
        assert_eq!(check(&f, &h).len(), 1);
    }

    #[test]
    fn a_division_anticipated_with_nothing_in_between_passes() {
        let f = ssa(DIV_ANTICIPATED);
        let mut g = f.clone();
        plant(&mut g, Block::from_u32(2), BinOp::Sdiv, "a", "b");
        assert_eq!(check(&f, &g), vec![]);
        // What the pass itself does here: the insertion into b2, proved.
        let p = with_pre(&f);
        assert!(p.to_string().contains("= sdiv(%a, %b)\n    jump b3"), "{p}");
        assert_eq!(check(&f, &p), vec![]);
    }

    #[test]
    fn the_per_pass_check_reports_a_planted_violation_of_ssapre() {
        use crate::exec::interp::{RunInput, DEFAULT_FUEL};
        use crate::exec::outcome::Value;
        use crate::judge::passcheck::{check_with, Verdict};
        let (m, _) = parse_module(DIV_AFTER_LOG).unwrap();
        let f = m.functions[0].clone();
        // A run on which the planted division never traps: the outcome does not change,
        // only the checker can see the broken rule.
        let input = RunInput { args: vec![Value::I32(7), Value::I32(2)], heap: vec![], callframe: vec![], fuel: DEFAULT_FUEL };
        let c = check_with(&f, &input, |g, hook| {
            let pm = PassManager { verify: true };
            let mut stats = pm.run(&Pipeline::parse("ssa").unwrap(), g, hook)?;
            plant(g, Block::from_u32(2), BinOp::Sdiv, "a", "b");
            let s = Default::default();
            hook("ssapre", g, &s);
            stats.push(("ssapre", s));
            Ok(stats)
        })
        .unwrap();
        match &c.verdict {
            Verdict::Unanticipated { pass, violations, .. } => {
                assert_eq!(pass, "ssapre");
                assert_eq!(violations.len(), 1);
                assert!(violations[0].contains("input path b2 -> b3"), "{}", violations[0]);
            }
            v => panic!("expected the anticipability checker to fire, got {v:?}"),
        }
        // The same driver without the planted division passes.
        let c = check_with(&f, &input, |g, hook| {
            PassManager { verify: true }.run(&Pipeline::parse("ssa,ssapre").unwrap(), g, hook)
        })
        .unwrap();
        assert!(c.verdict.is_ok(), "{:?}", c.verdict);
    }

    #[test]
    fn the_pass_leaves_the_division_after_the_log_alone() {
        let f = ssa(DIV_AFTER_LOG);
        let p = with_pre(&f);
        assert_eq!(p.to_string(), f.to_string());
        assert_eq!(check(&f, &p), vec![]);
    }
}
