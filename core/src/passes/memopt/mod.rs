//! `memopt` (`DESIGN.md` pass 2): store/load elimination for callframe variables and the
//! heap, the design of `seeds/callframe-data-motion.md` over the SSA form. The front end
//! emits every `cfread`/`cfwrite` and heap access; this pass removes what it can prove
//! redundant, in the seed's four tasks:
//!
//! 1. [`motion`] (TASKs 3 and 4) inserts accesses: a copy of each loop-invariant read in
//!    the loop's preheader (a heap load only where it is anticipated: it cannot fault
//!    earlier than it would have), and a speculative store of the current value at every
//!    exit of a loop that writes a slot it never reads.
//! 2. [`avail`] (TASK 1, anterograde) replaces reads whose value is available (LOAD-LOAD,
//!    STORE-LOAD, and loop-invariant LOAD against the hoisted copy), with speculative phis
//!    at joins, and removes stores of the value already there (LOAD-STORE).
//! 3. [`live`] (TASK 2, retrograde) removes stores overwritten before they can be
//!    observed: later in the same block (STORE-STORE), on every path onward (dead STORE),
//!    or by the speculative stores at the exits of their loop (loop-invariant STORE).
//! 4. Availability again, which drops speculative stores that stayed no-ops, then dead
//!    LOADs (a read whose value nobody uses; `dce` would also remove them).
//!
//! Heap aliasing is in [`events`]: must/may/cannot alias by SSA address tree, base plus
//! constant offset, and width. Each step is correct on its own input, so their sequence
//! is: every insertion is a no-op (a read, or a store of the value already there), and
//! each removal is justified by an analysis of the IR as it is at that point.
//!
//! Precise traps: the callframe and the heap are observed at a return and at a trap, so
//! liveness treats every division and `trapif` like a return; nothing is stored later or
//! earlier than before across one. A helper acts only through its effect summary
//! (`cf_set` kills every available callframe value, `heap_rmw` every heap value and needs
//! the heap in sync, `cf_trace` needs the callframe in sync, `log` blocks nothing).
//!
//! *Dead STORE for the callframe*: every callframe variable is part of the outcome at
//! exit, so a callframe store is dead only when it is overwritten on every path before
//! anything can observe it; the seed's private (never aliased) variables do not exist in
//! our IR.
//!
//! Statistics, per memory (`cf_` or `heap_`): `load_load`, `store_load`, `load_store`,
//! `dead_store`, `store_store`, `loop_load`, `loop_store`, `dead_load`. Accesses the pass
//! inserted itself are never counted.

pub mod avail;
pub mod events;
pub mod live;
pub mod motion;

use super::util::{remove_unmentioned_locals, LocalSet, Namer};
use super::{Analyses, Stats};
use crate::ir::{Block, ConvOp, Expr, ExprData, Function, Local, Type};
use avail::{Action, Availability, Materializer, Origin, Slot, Val};
use cranelift_entity::SecondaryMap;
use events::{block_events, canon_addr, Ev};
use crate::hash::{HashMap, HashSet};

/// The counters, in the order they print.
pub const COUNTERS: [&str; 16] = [
    "cf_load_load",
    "cf_store_load",
    "cf_load_store",
    "cf_dead_store",
    "cf_store_store",
    "cf_loop_load",
    "cf_loop_store",
    "cf_dead_load",
    "heap_load_load",
    "heap_store_load",
    "heap_load_store",
    "heap_dead_store",
    "heap_store_store",
    "heap_loop_load",
    "heap_loop_store",
    "heap_dead_load",
];

/// What the steps of the pass share.
pub struct Ctx {
    /// Made when the pass first adds a local ([`Ctx::new_local`]): until then the
    /// function's locals are the ones it came with, and most functions get none.
    namer: Option<Namer>,
    /// Nodes the pass inserted (never counted).
    pub inserted: HashSet<Expr>,
    /// Locals holding a read hoisted out of a loop.
    pub hoisted: HashSet<Local>,
    /// The speculative stores at loop exits.
    pub speculative: Vec<Expr>,
    /// The reads inside speculative heap stores (replaced without conversion: the store
    /// truncates anyway).
    pub spec_values: HashSet<Expr>,
    /// Loops (their blocks) and the slots whose stores were sunk to their exits.
    pub sunk: Vec<(Vec<Block>, Slot)>,
}

impl Ctx {
    /// Adds a local named after `base` to `f` (as `Function::new_local` names).
    pub fn new_local(&mut self, f: &mut Function, base: &str, ty: Type) -> Local {
        self.namer.get_or_insert_with(|| Namer::new(f)).new_local(f, base, ty)
    }
}

/// Runs `memopt` on `f` (SSA form).
pub fn run(f: &mut Function) -> Stats {
    let mut stats = Stats::default();
    for c in COUNTERS {
        stats.add(c, 0);
    }
    let mut cx = Ctx {
        namer: None,
        inserted: HashSet::default(),
        hoisted: HashSet::default(),
        speculative: vec![],
        spec_values: HashSet::default(),
        sunk: vec![],
    };
    let mut snap = None;
    motion::run(f, &mut cx, &mut snap);
    let exempt = cx.speculative.clone();
    forward(f, &mut cx, &mut stats, &exempt, &mut snap);
    backward(f, &mut cx, &mut stats, &mut snap);
    forward(f, &mut cx, &mut stats, &[], &mut snap);
    dead_loads(f, &cx, &mut stats);
    stats
}

/// The analyses and the memory events of every block of the function as it is: a step
/// hands them to the next step, which would otherwise compute the same again. A step
/// that changed the function says what it changed ([`Snapshot::changed`]): the analyses
/// are computed again only when the CFG changed (a loop motion's new preheader or split
/// exit edge; availability and liveness only rewrite trees and add phis and statements),
/// and the events only of the blocks whose phis or trees changed, once the next step
/// takes the snapshot. `None` when there is none yet.
struct Snapshot {
    an: Analyses,
    events: SecondaryMap<Block, Vec<Ev>>,
    /// The blocks whose events no longer describe them.
    stale: Stale,
}

/// Which blocks' events a step left out of date.
enum Stale {
    None,
    Blocks(Vec<Block>),
    All,
}

impl Snapshot {
    /// The snapshot of `f` as it is: the one left by the last step, with the events of the
    /// blocks it changed computed again, or a new one.
    fn take(snap: &mut Option<Snapshot>, f: &Function) -> Snapshot {
        let Some(mut s) = snap.take() else {
            let an = Analyses::compute(f);
            let mut events = SecondaryMap::new();
            for &b in &an.cfg.rpo {
                events[b] = block_events(f, b);
            }
            return Snapshot { an, events, stale: Stale::None };
        };
        match std::mem::replace(&mut s.stale, Stale::None) {
            Stale::None => {}
            Stale::Blocks(blocks) => {
                for b in blocks {
                    s.events[b] = block_events(f, b);
                }
            }
            Stale::All => {
                for &b in &s.an.cfg.rpo {
                    s.events[b] = block_events(f, b);
                }
            }
        }
        debug_assert!(
            s.an.cfg.rpo.iter().all(|&b| s.events[b] == block_events(f, b)),
            "memopt's snapshot holds the events of the function as it is"
        );
        s
    }

    /// Leaves `s` for the next step after this one changed `f`: the CFG when `cfg_changed`
    /// (then the analyses are computed again here), and the phis or trees of `blocks`
    /// (`None`: of any block). Every block the step added is among `blocks`.
    fn changed(snap: &mut Option<Snapshot>, mut s: Snapshot, f: &Function, cfg_changed: bool, blocks: Option<Vec<Block>>) {
        if cfg_changed {
            s.an = Analyses::compute(f);
        }
        s.stale = match (s.stale, blocks) {
            (Stale::All, _) | (_, None) => Stale::All,
            (Stale::None, Some(b)) => Stale::Blocks(b),
            (Stale::Blocks(mut a), Some(b)) => {
                a.extend(b);
                Stale::Blocks(a)
            }
        };
        *snap = Some(s);
    }
}

fn counter(cf: bool, kind: &str) -> &'static str {
    let i = COUNTERS[..8].iter().position(|c| &c[3..] == kind).expect("a counter kind");
    COUNTERS[if cf { i } else { i + 8 }]
}

/// Replaces a store by the effects of its operands (nothing if they have none); roots
/// that become nothing are recorded in `gone` for removal from their block.
fn neutralize(f: &mut Function, node: Expr, gone: &mut HashSet<Expr>) {
    let ops = match f.exprs[node] {
        ExprData::CfWrite { value, .. } => vec![value],
        ExprData::Store { addr, value, .. } => vec![addr, value],
        _ => return,
    };
    let keep: Vec<Expr> = ops.into_iter().filter(|&e| f.tree_has_side_effect(e)).collect();
    let dummy = ExprData::Const { ty: Type::I32, value: 0 };
    match keep[..] {
        [] => {
            f.exprs[node] = dummy;
            gone.insert(node);
        }
        [k] => {
            f.exprs[node] = std::mem::replace(&mut f.exprs[k], dummy);
        }
        [a, b] => f.exprs[node] = ExprData::Comma { first: a, second: b },
        _ => unreachable!("a store has at most two operands"),
    }
}

fn sweep(f: &mut Function, gone: &HashSet<Expr>) {
    for b in f.layout.clone() {
        f.blocks[b].stmts.retain(|s| !gone.contains(s));
    }
}

/// TASK 1: availability, then its rewrite.
fn forward(f: &mut Function, cx: &mut Ctx, stats: &mut Stats, exempt: &[Expr], snap: &mut Option<Snapshot>) {
    let s = Snapshot::take(snap, f);
    let (an, events) = (&s.an, &s.events);
    let Some(av) = Availability::compute(f, &an.cfg, events) else {
        *snap = Some(s);
        return;
    };
    let mut acts = vec![];
    let mut subst = HashMap::default();
    // The blocks whose reads are replaced or whose stores are removed.
    let mut blocks = vec![];
    for &b in &an.cfg.rpo {
        let mut st = av.ins[b].clone().expect("converged");
        let before = acts.len();
        for ev in &events[b] {
            avail::step(f, &mut st, ev, Some(&mut acts), exempt, &mut subst);
        }
        if acts.len() > before {
            blocks.push(b);
        }
    }
    if acts.is_empty() {
        // Nothing to replace or remove: the function stays as it is.
        drop(av);
        *snap = Some(s);
        return;
    }
    let mut m = Materializer::new(&av, &an.cfg);
    let mut gone = HashSet::default();
    // Removals last: a removed store's operand may be a tree some replacement binds to a
    // local, and `neutralize` keeps it only once it holds that assignment.
    acts.sort_by_key(|a| matches!(a, Action::RemoveStore { .. }));
    for act in acts {
        match act {
            Action::Replace { node, known, cf } => {
                if !cx.inserted.contains(&node) {
                    let kind = match (&known.val, known.origin) {
                        (Val::Local(h), _) if cx.hoisted.contains(h) => "loop_load",
                        (_, Origin::Load) => "load_load",
                        (_, Origin::Store) => "store_load",
                    };
                    stats.bump(counter(cf, kind));
                }
                let mut x = m.value_expr(f, cx, &known);
                let target = m.target(node);
                if let ExprData::Load { ty, width, signed, .. } = f.exprs[target] {
                    // Convert from the type the value really has: a speculative phi's
                    // local takes the type of the first value it was made for, and a
                    // slot may hold an i64 stored value where an i32 was known before
                    // (default seed 12012: `zext` of an i64). Only the low `width`
                    // bits matter, and both types hold them.
                    let from = f.expr_type(x).unwrap_or(known.ty);
                    if !cx.spec_values.contains(&node) {
                        x = avail::convert_load(f, x, from, width, signed, ty);
                    } else if from != ty {
                        // The value of a store sunk onto a loop's exits: only its low
                        // `width` bits are stored, so no extension is needed, but the
                        // type must stay the load's. Availability recorded the stored
                        // slot with that type, and a phi over the slot after the exit
                        // takes it (loops seed 434496: `store.16` of an i64 in a loop,
                        // then a loop reading it as `load.i32.s16`: a phi of type i32
                        // got the i64 value as an argument).
                        let op = if from == Type::I64 { ConvOp::Trunc } else { ConvOp::Zext };
                        x = f.add_expr(ExprData::Convert { op, arg: x });
                    }
                }
                f.exprs[target] = std::mem::replace(&mut f.exprs[x], ExprData::Const { ty: Type::I32, value: 0 });
            }
            Action::RemoveStore { node, cf } => {
                if !cx.inserted.contains(&node) {
                    stats.bump(counter(cf, "load_store"));
                }
                neutralize(f, node, &mut gone);
            }
        }
    }
    sweep(f, &gone);
    // No block or edge changed: the trees of the blocks above did, and the materializer's
    // (its phis, constants and bound trees).
    blocks.extend_from_slice(&m.touched);
    if m.bound_any() {
        bound_blocks(events, &an.cfg.rpo, &m, &mut blocks);
    }
    blocks.sort_unstable();
    blocks.dedup();
    drop(m);
    Snapshot::changed(snap, s, f, false, Some(blocks));
}

/// Adds to `out` the blocks holding a tree that `m` bound to a local: a `Val::Node` is
/// the node of a read or the value of a write, so its block is the one of that event.
fn bound_blocks(events: &SecondaryMap<Block, Vec<Ev>>, rpo: &[Block], m: &Materializer, out: &mut Vec<Block>) {
    for &b in rpo {
        let holds = events[b].iter().any(|ev| match ev {
            Ev::CfRead { node, .. } | Ev::Load { node, .. } => m.bound(*node),
            Ev::CfWrite { value, .. } | Ev::Store { value, .. } => m.bound(*value),
            _ => false,
        });
        if holds {
            out.push(b);
        }
    }
}

/// TASK 2: liveness of memory values, then dead STORE, STORE-STORE and loop-invariant
/// STORE removal.
fn backward(f: &mut Function, cx: &mut Ctx, stats: &mut Stats, snap: &mut Option<Snapshot>) {
    let s = Snapshot::take(snap, f);
    let dead = live::dead_stores(f.cfvars.len(), &s.an.cfg, &s.events);
    let Some(dead) = dead.filter(|d| !d.is_empty()) else {
        // No dead store: the function stays as it is.
        *snap = Some(s);
        return;
    };
    // Only the blocks of the dead stores change, and not the CFG.
    let blocks = dead.iter().map(|d| d.block).collect();
    let mut gone = HashSet::default();
    for d in dead {
        if !cx.inserted.contains(&d.node) {
            let slot = match f.exprs[d.node] {
                ExprData::CfWrite { var, .. } => Some(Slot::Cf(var)),
                ExprData::Store { width, addr, .. } => canon_addr(f, addr, width).map(Slot::Heap),
                _ => None,
            };
            let sunk = cx.sunk.iter().any(|(body, s)| body.contains(&d.block) && Some(s) == slot.as_ref());
            let kind = if d.local {
                "store_store"
            } else if sunk {
                "loop_store"
            } else {
                "dead_store"
            };
            stats.bump(counter(d.cf, kind));
        }
        neutralize(f, d.node, &mut gone);
    }
    sweep(f, &gone);
    Snapshot::changed(snap, s, f, false, Some(blocks));
}

/// Dead LOAD: a read whose value nobody uses (the pass's own hoisted reads and copies
/// that ended up unused go too, uncounted). Then the locals nothing mentions any more
/// go, as `remove_unused_locals` removes them, from the nodes naming a local that the
/// walk for the reads found in the statements kept (a walk of every tree again was a
/// tenth of the pass).
fn dead_loads(f: &mut Function, cx: &Ctx, stats: &mut Stats) {
    // The locals something reads: a bit each (a hash map probe per read was most of the
    // walk).
    let mut used = LocalSet::new(f.locals.len());
    for &b in &f.layout {
        for phi in &f.blocks[b].phis {
            for (_, a) in &phi.args {
                used.insert(*a);
            }
        }
    }
    // The nodes that name a local (reads and assignments), statement by statement in
    // layout order (`mentions[ends[i - 1]..ends[i]]` for the `i`th), then the
    // terminators'.
    let (mut mentions, mut ends, mut term_mentions) = (vec![], vec![], vec![]);
    // The tree at `root`'s reads into `used`, and its nodes naming a local into `out`.
    let walk = |root: Expr, used: &mut LocalSet, out: &mut Vec<Expr>| {
        f.visit_postorder(root, &mut |n| match f.exprs[n] {
            ExprData::Local(l) => {
                used.insert(l);
                out.push(n);
            }
            ExprData::Assign { .. } => out.push(n),
            _ => {}
        })
    };
    for &b in &f.layout {
        let data = &f.blocks[b];
        for &s in &data.stmts {
            walk(s, &mut used, &mut mentions);
            ends.push(mentions.len());
        }
        if let Some(t) = data.term.expr() {
            walk(t, &mut used, &mut term_mentions);
        }
    }
    let mut ends = ends.into_iter();
    let (mut from, mut to) = (0, 0);
    for i in 0..f.layout.len() {
        let b = f.layout[i];
        let stmts = std::mem::take(&mut f.blocks[b].stmts);
        let mut kept = Vec::with_capacity(stmts.len());
        for s in stmts {
            let end = ends.next().expect("one per statement");
            let (read, unused) = match f.exprs[s] {
                ExprData::Assign { local, value } => (value, !used.contains(local)),
                _ => (s, true),
            };
            // A statement whose value something uses stays: the questions below (a walk
            // of its tree, two probes) are asked only of the others.
            let removed = unused && {
                let is_read = matches!(f.exprs[read], ExprData::CfRead(_) | ExprData::Load { .. })
                    && !f.tree_has_side_effect(read);
                let ours = || cx.inserted.contains(&s) || cx.inserted.contains(&read);
                if is_read && !ours() {
                    let cf = matches!(f.exprs[read], ExprData::CfRead(_));
                    stats.bump(counter(cf, "dead_load"));
                }
                // A read nobody uses, or a hoisted read that became a copy nobody uses.
                is_read || (s != read && ours() && !f.tree_has_side_effect(read))
            };
            if !removed {
                kept.push(s);
                mentions.copy_within(from..end, to);
                to += end - from;
            }
            from = end;
        }
        f.blocks[b].stmts = kept;
    }
    mentions.truncate(to);
    mentions.extend_from_slice(&term_mentions);
    remove_unmentioned_locals(f, &mentions);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Availability converges on a three-deep loop nest whose outermost loop writes a
    /// heap word known before it while the inner loops leave it alone. Its speculative
    /// phis used to alternate with period 2 (the middle header's phi collapsing to the
    /// inner one's and back), so `compute` gave up and memopt changed nothing in the
    /// function (found by the generator's nests, issue 19).
    #[test]
    fn availability_converges_on_a_three_deep_nest() {
        let src = "function %k(i32 %p) -> i32 {
    local i32 %s
    local i32 %i
    local i32 %j
    local i32 %k
b0:
    %s = load.i32(1048576)
    jump b1
b1:
    jump b4
b4:
    jump b7
b7:
    %k = add(%k, 1)
    br slt(%k, 2), b7, b5
b5:
    %j = add(%j, 1)
    br slt(%j, 2), b4, b2
b2:
    store.32(1048576, add(%i, 5))
    %i = add(%i, 1)
    br slt(%i, 2), b1, b3
b3:
    ret add(%i, %s)
}
";
        let mut f = crate::text::parse_module(src).expect("parses").0.functions.remove(0);
        crate::passes::ssa::run(&mut f);
        let s = Snapshot::take(&mut None, &f);
        let av = Availability::compute(&f, &s.an.cfg, &s.events).expect("availability converges");
        // The word is known in every block: from the load in b0, then the phis of the
        // headers once b2 has stored to it.
        for &b in &s.an.cfg.rpo {
            assert!(av.ins[b].as_ref().is_some_and(|st| st.heap.len() == 1 || b == s.an.cfg.rpo[0]), "{b}");
        }
    }
}
