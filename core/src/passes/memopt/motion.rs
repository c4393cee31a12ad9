//! TASK 3 (anticipability and loop-invariant loads) and TASK 4 (loop-invariant stores) of
//! `seeds/callframe-data-motion.md`, done the seed's way: by *inserting* accesses that the
//! other two analyses then make the old ones redundant against.
//!
//! * Loop-invariant LOAD: a read of a slot that nothing in the loop may write gets a copy
//!   `%h = cfread(@x)` / `%h = load(a)` at the end of the loop's preheader; availability
//!   (TASK 1) then finds the read in the loop redundant (LOAD-LOAD against `%h`, through
//!   the header's speculative phi). A callframe read never faults and may be speculated.
//!   A heap load may fault, so it is hoisted only when it is *anticipated*: certain to
//!   execute, at the same address, whenever the loop is entered — its block dominates
//!   every block that leaves the loop, the loop has no return, and nothing before it on a
//!   path from the header may trap.
//! * Loop-invariant STORE: for a slot the loop writes but never reads, in a loop with no
//!   possible trap, no return and no helper that reads that memory, a speculative store
//!   of the slot's own current value goes on every loop exit (an exit edge whose target
//!   has other predecessors is split): `cfwrite(@x, cfread(@x))`, `store(a, load(a))`.
//!   Availability rewrites its read to the value the loop left there (the speculative phi
//!   of the header); then liveness (TASK 2) finds the store in the loop overwritten before
//!   it can be observed and removes it. For the callframe a read of the slot also goes to
//!   the preheader, so that the value is known on the path that skips the loop body. A
//!   speculative heap store reads and writes its address, so it is inserted only where
//!   that address is certainly accessed on the way to every exit: the loop's store
//!   dominates every exiting block, or an access covering it is available on entry.
//!
//! Loops are handled innermost first; the analyses are recomputed after each loop whose
//! blocks changed (a new preheader or a split exit edge), and the memory events of the
//! blocks that received an access (the preheader and the exits).

use super::avail::{Availability, Slot};
use super::events::{Ev, Loc};
use super::{Ctx, Snapshot};
use crate::ir::{Block, BlockData, ExprData, Function, Local, MemWidth, Phi, Terminator, Type};
use crate::passes::Analyses;
use cranelift_entity::SecondaryMap;
use crate::hash::HashSet;

/// Inserts the hoisted reads and speculative stores of every loop. Returns whether the
/// CFG changed.
/// The analyses and events are taken from `snap` and left there while the function does
/// not change (a loop with nothing to insert changes nothing).
pub(super) fn run(f: &mut Function, cx: &mut Ctx, snap: &mut Option<Snapshot>) -> bool {
    let mut done: HashSet<Block> = HashSet::default();
    let mut cfg_changed = false;
    loop {
        let s = Snapshot::take(snap, f);
        let an = &s.an;
        let mut loops: Vec<_> = an.loops.loops.keys().filter(|&l| !done.contains(&an.loops.loops[l].header)).collect();
        loops.sort_by_key(|&l| (std::cmp::Reverse(an.loops.loops[l].depth), an.loops.loops[l].header));
        let Some(&l) = loops.first() else {
            *snap = Some(s);
            break;
        };
        let header = an.loops.loops[l].header;
        done.insert(header);
        let body: Vec<Block> = an.loops.loops[l].blocks.clone();
        let plan = plan(f, an, &s.events, &body, header);
        if plan.is_empty() {
            *snap = Some(s);
            continue;
        }
        let (changed, blocks) = apply(f, cx, an, &body, header, plan);
        cfg_changed |= changed;
        Snapshot::changed(snap, s, f, changed, Some(blocks));
    }
    cfg_changed
}

/// A heap access to repeat: its canonical location, its address tree and its load type.
#[derive(Clone)]
struct HeapAccess {
    loc: Loc,
    addr: crate::ir::Expr,
    ty: Type,
    signed: bool,
}

#[derive(Default)]
struct Plan {
    cf_hoist: Vec<crate::ir::CfVar>,
    cf_sink: Vec<crate::ir::CfVar>,
    heap_hoist: Vec<HeapAccess>,
    heap_sink: Vec<HeapAccess>,
}

impl Plan {
    fn is_empty(&self) -> bool {
        self.cf_hoist.is_empty() && self.cf_sink.is_empty() && self.heap_hoist.is_empty() && self.heap_sink.is_empty()
    }
}

/// Plans what to insert for one loop (`body`, entered at `header`): the callframe slots
/// and heap accesses to hoist into the preheader and to store speculatively on exit.
fn plan(f: &Function, an: &Analyses, events: &SecondaryMap<Block, Vec<Ev>>, body: &[Block], header: Block) -> Plan {
    let facts = LoopFacts::new(f, an, events, body, header);
    let mut p = Plan::default();
    facts.plan_callframe(&mut p);
    facts.plan_heap(&mut p);
    p
}

/// What planning needs to know about one loop: its events in order, where each local is
/// defined, the blocks it is left from, and whether it may return, trap, or call a helper
/// that reads or writes memory.
struct LoopFacts<'a> {
    f: &'a Function,
    an: &'a Analyses,
    events: &'a SecondaryMap<Block, Vec<Ev>>,
    body: &'a [Block],
    header: Block,
    /// Where each local is defined (parameters: before the entry).
    def_block: SecondaryMap<Local, Option<Block>>,
    exiting: Vec<Block>,
    has_return: bool,
    has_trap: bool,
    /// Every event of the loop's blocks: its block, its index there, the event.
    evs: Vec<(Block, usize, &'a Ev)>,
    /// A helper called in the loop may write / read the callframe, the heap.
    cf_w: bool,
    cf_r: bool,
    heap_w: bool,
    heap_r: bool,
}

impl<'a> LoopFacts<'a> {
    fn new(f: &'a Function, an: &'a Analyses, events: &'a SecondaryMap<Block, Vec<Ev>>, body: &'a [Block], header: Block) -> Self {
        let in_loop = |b: Block| body.contains(&b);
        let mut def_block: SecondaryMap<Local, Option<Block>> = SecondaryMap::new();
        for &b in &an.cfg.rpo {
            for ev in &events[b] {
                if let Ev::Def(l) = ev {
                    def_block[*l] = Some(b);
                }
            }
        }
        let exiting: Vec<Block> =
            body.iter().copied().filter(|&b| an.cfg.succs[b].iter().any(|&s| !in_loop(s))).collect();
        let has_return = body.iter().any(|&b| matches!(f.blocks[b].term, Terminator::Return(_)));
        let evs: Vec<(Block, usize, &Ev)> =
            body.iter().flat_map(|&b| events[b].iter().enumerate().map(move |(i, e)| (b, i, e))).collect();
        let has_trap = evs.iter().any(|(_, _, e)| matches!(e, Ev::Trap));
        let call = |pred: &dyn Fn(&crate::helpers::Effects) -> bool| {
            evs.iter().any(|(_, _, e)| matches!(e, Ev::Call(eff) if pred(eff)))
        };
        let (cf_w, cf_r) = (call(&|e| e.writes_callframe), call(&|e| e.reads_callframe));
        let (heap_w, heap_r) = (call(&|e| e.writes_heap), call(&|e| e.reads_heap));
        LoopFacts { f, an, events, body, header, def_block, exiting, has_return, has_trap, evs, cf_w, cf_r, heap_w, heap_r }
    }

    fn in_loop(&self, b: Block) -> bool {
        self.body.contains(&b)
    }

    /// No local of the location is defined in the loop.
    fn invariant(&self, loc: &Loc) -> bool {
        loc.locals().iter().all(|&l| self.def_block[l].is_none_or(|b| !self.in_loop(b)))
    }

    /// Blocks from which the loop is left must all be dominated by `b`.
    fn must_run(&self, b: Block) -> bool {
        !self.has_return && self.exiting.iter().all(|&x| self.an.domtree.dominates(b, x))
    }

    /// No trap on a path from the header to event `i` of block `b`.
    fn trap_free_before(&self, b: Block, i: usize) -> bool {
        let events = self.events;
        events[b][..i].iter().all(|e| !matches!(e, Ev::Trap))
            && self
                .body
                .iter()
                .filter(|&&o| o != b && !self.an.domtree.dominates(b, o))
                .all(|&o| events[o].iter().all(|e| !matches!(e, Ev::Trap)))
    }

    /// The heap access of a load or store event at a known location.
    fn access(&self, e: &Ev) -> Option<HeapAccess> {
        let (node, loc) = match e {
            Ev::Load { node, loc: Some(loc), .. } | Ev::Store { node, loc: Some(loc), .. } => (*node, loc),
            _ => return None,
        };
        match self.f.exprs[node] {
            ExprData::Load { ty, signed, addr, .. } => Some(HeapAccess { loc: loc.clone(), addr, ty, signed }),
            ExprData::Store { addr, width, .. } => {
                let ty = if width == MemWidth::W64 { Type::I64 } else { Type::I32 };
                Some(HeapAccess { loc: loc.clone(), addr, ty, signed: false })
            }
            _ => None,
        }
    }

    /// Callframe slots: a slot read in the loop and never written there is hoisted; a slot
    /// written and never read, in a loop that cannot trap or return, is stored on exit.
    fn plan_callframe(&self, p: &mut Plan) {
        let evs = &self.evs;
        let cf_written = |v| evs.iter().any(|(_, _, e)| matches!(e, Ev::CfWrite { var, .. } if *var == v));
        let cf_read = |v| evs.iter().any(|(_, _, e)| matches!(e, Ev::CfRead { var, .. } if *var == v));
        for (_, _, e) in evs {
            if let Ev::CfRead { var, .. } = e {
                if !self.cf_w && !cf_written(*var) && !p.cf_hoist.contains(var) {
                    p.cf_hoist.push(*var);
                }
            }
            if let Ev::CfWrite { var, .. } = e {
                if !self.cf_w
                    && !self.cf_r
                    && !self.has_trap
                    && !self.has_return
                    && !cf_read(*var)
                    && !p.cf_sink.contains(var)
                {
                    p.cf_sink.push(*var);
                }
            }
        }
    }

    /// Heap accesses at loop-invariant addresses: an anticipated load that no store may
    /// alias is hoisted; the only store to its location, never aliased by a load, is
    /// stored on exit where its address is certainly accessed.
    fn plan_heap(&self, p: &mut Plan) {
        let stores: Vec<Option<&Loc>> = self
            .evs
            .iter()
            .filter_map(|(_, _, e)| if let Ev::Store { loc, .. } = e { Some(loc.as_ref()) } else { None })
            .collect();
        let loads: Vec<Option<&Loc>> = self
            .evs
            .iter()
            .filter_map(|(_, _, e)| if let Ev::Load { loc, .. } = e { Some(loc.as_ref()) } else { None })
            .collect();
        let mut entry_avail: Option<Option<Availability>> = None;
        for &(b, i, e) in &self.evs {
            let Some(acc) = self.access(e) else { continue };
            if !self.invariant(&acc.loc) {
                continue;
            }
            let aliased_store = stores.iter().any(|s| s.is_none_or(|s| s.may_alias(&acc.loc)));
            let aliased_load = loads.iter().any(|s| s.is_none_or(|s| s.may_alias(&acc.loc)));
            match e {
                Ev::Load { .. }
                    if !self.heap_w
                        && !aliased_store
                        && self.must_run(b)
                        && self.trap_free_before(b, i)
                        && !p.heap_hoist.iter().any(|h| h.loc == acc.loc) =>
                {
                    p.heap_hoist.push(acc);
                }
                Ev::Store { .. } => {
                    let only_this = stores.iter().all(|s| s.is_some_and(|s| !s.may_alias(&acc.loc) || *s == acc.loc));
                    if self.heap_w
                        || self.heap_r
                        || self.has_trap
                        || self.has_return
                        || aliased_load
                        || !only_this
                        || self.exiting.is_empty()
                    {
                        continue;
                    }
                    if p.heap_sink.iter().any(|h| h.loc == acc.loc) {
                        continue;
                    }
                    if self.must_run(b) || self.covered_on_entry(&acc.loc, &mut entry_avail) {
                        p.heap_sink.push(acc);
                    }
                }
                _ => {}
            }
        }
    }

    /// An access covering `loc` is available at the end of every predecessor of the header
    /// outside the loop (`entry_avail`: the availability, computed once when first asked).
    fn covered_on_entry(&self, loc: &Loc, entry_avail: &mut Option<Option<Availability>>) -> bool {
        let an = self.an;
        let av = entry_avail.get_or_insert_with(|| {
            let mut ev2: SecondaryMap<Block, Vec<Ev>> = SecondaryMap::new();
            for &x in &an.cfg.rpo {
                ev2[x] = self.events[x].clone();
            }
            Availability::compute(self.f, &an.cfg, &ev2)
        });
        av.as_ref().is_some_and(|av| {
            an.cfg.preds[self.header].iter().filter(|&&o| !self.in_loop(o)).all(|&o| {
                av.outs[o].as_ref().is_some_and(|st| st.heap.iter().any(|(l, _)| l.covers(loc)))
            })
        })
    }
}

/// The block at the end of which code runs exactly when the loop is entered: the
/// header's single outside predecessor if it only jumps there, else a new block.
fn preheader(f: &mut Function, cx: &mut Ctx, an: &Analyses, body: &[Block], header: Block) -> (Block, bool) {
    let outside: Vec<Block> = an.cfg.preds[header].iter().copied().filter(|b| !body.contains(b)).collect();
    if outside.len() == 1 && f.blocks[outside[0]].term == Terminator::Jump(header) {
        return (outside[0], false);
    }
    let ph = f.blocks.push(BlockData { phis: vec![], stmts: vec![], term: Terminator::Jump(header) });
    for &o in &outside {
        for s in f.blocks[o].term.successors_mut() {
            if *s == header {
                *s = ph;
            }
        }
    }
    let phis = std::mem::take(&mut f.blocks[header].phis);
    let mut new_phis = vec![];
    for mut phi in phis {
        let (out_args, mut in_args): (Vec<_>, Vec<_>) = phi.args.iter().copied().partition(|(b, _)| outside.contains(b));
        let first = out_args[0].1;
        let v = if out_args.iter().all(|(_, a)| *a == first) {
            first
        } else {
            let name = f.locals[phi.dest].name.clone();
            let ty = f.locals[phi.dest].ty;
            let d = cx.new_local(f, &name, ty);
            f.blocks[ph].phis.push(Phi { dest: d, args: out_args });
            d
        };
        in_args.insert(0, (ph, v));
        phi.args = in_args;
        new_phis.push(phi);
    }
    f.blocks[header].phis = new_phis;
    let pos = f.layout.iter().position(|&b| b == header).expect("header in layout");
    f.layout.insert(pos, ph);
    (ph, true)
}

/// The blocks at whose start code runs exactly when the loop is left (exit edges whose
/// target has predecessors outside the loop are split).
fn exit_blocks(f: &mut Function, an: &Analyses, body: &[Block]) -> (Vec<Block>, bool) {
    let mut out = vec![];
    let mut changed = false;
    for &b in body {
        for &s in &an.cfg.succs[b] {
            if body.contains(&s) {
                continue;
            }
            if an.cfg.preds[s].iter().all(|p| body.contains(p)) {
                if !out.contains(&s) {
                    out.push(s);
                }
                continue;
            }
            let n = crate::passes::util::split_edge(f, b, s);
            let pos = f.layout.iter().position(|&x| x == s).expect("exit in layout");
            f.layout.insert(pos, n);
            out.push(n);
            changed = true;
        }
    }
    (out, changed)
}

/// Inserts what `plan` says for one loop. Returns whether the CFG changed, and the
/// blocks whose phis or statements changed (or that are new): the preheader and the
/// exits. (The header's phis keep their destinations, and the blocks whose branches now
/// reach a new block keep their trees: their events stay.)
fn apply(f: &mut Function, cx: &mut Ctx, an: &Analyses, body: &[Block], header: Block, plan: Plan) -> (bool, Vec<Block>) {
    let (ph, mut changed) = preheader(f, cx, an, body, header);
    let mut touched = vec![ph];
    let hoist_cf = |f: &mut Function, cx: &mut Ctx, v: crate::ir::CfVar| -> Local {
        let ty = f.cfvars[v].ty;
        let name = f.cfvars[v].name.clone();
        let h = cx.new_local(f, &name, ty);
        let r = f.add_expr(ExprData::CfRead(v));
        let s = f.add_expr(ExprData::Assign { local: h, value: r });
        cx.inserted.insert(r);
        cx.inserted.insert(s);
        f.blocks[ph].stmts.push(s);
        h
    };
    for &v in &plan.cf_hoist {
        let h = hoist_cf(f, cx, v);
        cx.hoisted.insert(h);
    }
    for &v in &plan.cf_sink {
        hoist_cf(f, cx, v);
    }
    for acc in &plan.heap_hoist {
        let h = cx.new_local(f, "mem", acc.ty);
        let addr = f.clone_tree(acc.addr);
        let l = f.add_expr(ExprData::Load { ty: acc.ty, width: acc.loc.width, signed: acc.signed, addr });
        let s = f.add_expr(ExprData::Assign { local: h, value: l });
        cx.inserted.insert(l);
        cx.inserted.insert(s);
        cx.hoisted.insert(h);
        f.blocks[ph].stmts.push(s);
    }
    if !plan.cf_sink.is_empty() || !plan.heap_sink.is_empty() {
        let (exits, c) = exit_blocks(f, an, body);
        changed |= c;
        for x in exits {
            let mut stmts = vec![];
            for &v in &plan.cf_sink {
                let r = f.add_expr(ExprData::CfRead(v));
                let w = f.add_expr(ExprData::CfWrite { var: v, value: r });
                cx.inserted.insert(r);
                cx.inserted.insert(w);
                cx.speculative.push(w);
                stmts.push(w);
            }
            for acc in &plan.heap_sink {
                let a1 = f.clone_tree(acc.addr);
                let a2 = f.clone_tree(acc.addr);
                let l = f.add_expr(ExprData::Load { ty: acc.ty, width: acc.loc.width, signed: false, addr: a1 });
                let w = f.add_expr(ExprData::Store { width: acc.loc.width, addr: a2, value: l });
                cx.inserted.insert(l);
                cx.inserted.insert(w);
                cx.spec_values.insert(l);
                cx.speculative.push(w);
                stmts.push(w);
            }
            f.blocks[x].stmts.splice(0..0, stmts);
            touched.push(x);
        }
        for &v in &plan.cf_sink {
            cx.sunk.push((body.to_vec(), Slot::Cf(v)));
        }
        for acc in &plan.heap_sink {
            cx.sunk.push((body.to_vec(), Slot::Heap(acc.loc.clone())));
        }
    }
    (changed, touched)
}
