//! TASK 2 of `seeds/callframe-data-motion.md`, the liveness of memory values, run
//! retrograde (post-order, successors before the blocks that reach them) to convergence,
//! and what it implies: dead STORE and STORE-STORE.
//!
//! The state is the set of slots whose current value is certainly *overwritten before it
//! can be observed* on every path onward (the complement of the seed's "needed" set).
//! Under our semantics the final callframe and heap are part of the outcome at a return
//! and at a trap, so at a return and at every node that may trap (division, `trapif`) the
//! set is emptied: every value is needed there. A helper whose summary reads the
//! callframe (`cf_trace`) or the heap (`heap_rmw`) empties that part; a helper that only
//! writes (`cf_set`) may leave a variable alone, so it overwrites nothing. A `cfread`
//! needs its variable, a heap load every location it may alias (all of them for an
//! address with no canonical form). A write whose slot is in the set is dead and is
//! removed (its operands' effects are kept); then the slot joins the set. A heap location
//! named by a local is dropped from the set where that local is defined (going backward
//! past a definition, the address it names changes).
//!
//! As the seed says ("initially, the required set at each block is empty"), the iteration
//! starts optimistic: a block not yet computed counts as needing nothing, so every slot a
//! store may write is dead there (the only slots that can be found dead; a finite top).
//! The sets only shrink from there, to the greatest fixpoint. Each claim then holds on
//! every finite path, by induction from its end (a return or a trap needs every slot); a
//! path that never ends observes nothing, and a run that does not end is not compared (its
//! fuel runs out). Starting from "nothing is dead" instead (the least fixpoint) misses a
//! store overwritten after an inner loop that does not touch it: that loop's back edge
//! keeps its own "nothing is dead" forever.

use super::events::{Ev, Loc};
use crate::ir::{Block, Expr};
use crate::passes::Cfg;
use cranelift_entity::{EntityRef, SecondaryMap};

/// The slots overwritten before they are observed; `local` marks those overwritten later
/// in the block being walked (STORE-STORE rather than dead STORE).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
struct Dead {
    cf: Vec<bool>,
    cf_local: Vec<bool>,
    heap: Vec<(Loc, bool)>,
}

/// A store the analysis found dead, and whether the store that overwrites it is later in
/// the same block.
#[derive(Clone, Debug)]
pub struct DeadStore {
    pub node: Expr,
    pub block: Block,
    pub local: bool,
    pub cf: bool,
}

fn intersect(a: &Dead, b: &Dead) -> Dead {
    Dead {
        cf: a.cf.iter().zip(&b.cf).map(|(x, y)| *x && *y).collect(),
        cf_local: vec![false; a.cf.len()],
        heap: a.heap.iter().filter(|(l, _)| b.heap.iter().any(|(m, _)| m == l)).map(|(l, _)| (l.clone(), false)).collect(),
    }
}

fn walk(st: &mut Dead, b: Block, events: &[Ev], out: &mut Option<&mut Vec<DeadStore>>) {
    for ev in events.iter().rev() {
        match ev {
            Ev::Exit | Ev::Trap => {
                st.cf.iter_mut().for_each(|x| *x = false);
                st.heap.clear();
            }
            Ev::Call(eff) => {
                if eff.reads_callframe {
                    st.cf.iter_mut().for_each(|x| *x = false);
                }
                if eff.reads_heap {
                    st.heap.clear();
                }
            }
            Ev::CfRead { var, .. } => st.cf[var.index()] = false,
            Ev::CfWrite { node, var, .. } => {
                let v = var.index();
                if st.cf[v] {
                    if let Some(o) = out.as_mut() {
                        o.push(DeadStore { node: *node, block: b, local: st.cf_local[v], cf: true });
                    }
                }
                st.cf[v] = true;
                st.cf_local[v] = true;
            }
            Ev::Load { loc: Some(loc), .. } => st.heap.retain(|(l, _)| !l.may_alias(loc)),
            Ev::Load { loc: None, .. } => st.heap.clear(),
            Ev::Store { node, loc: Some(loc), .. } => {
                if let Some((_, local)) = st.heap.iter().find(|(l, _)| l.covers(loc)) {
                    if let Some(o) = out.as_mut() {
                        o.push(DeadStore { node: *node, block: b, local: *local, cf: false });
                    }
                }
                st.heap.retain(|(l, _)| l != loc);
                st.heap.push((loc.clone(), true));
            }
            Ev::Store { loc: None, .. } => {}
            Ev::Def(l) => st.heap.retain(|(loc, _)| !loc.mentions(*l)),
        }
    }
}

/// Finds the dead stores of a function; `None` if the analysis does not converge.
pub fn dead_stores(ncf: usize, cfg: &Cfg, events: &SecondaryMap<Block, Vec<Ev>>) -> Option<Vec<DeadStore>> {
    let empty = Dead { cf: vec![false; ncf], cf_local: vec![false; ncf], heap: vec![] };
    // What a block not yet computed stands for: every slot a store writes is dead.
    let mut stored: Vec<(Loc, bool)> = vec![];
    for &b in &cfg.rpo {
        for ev in &events[b] {
            if let Ev::Store { loc: Some(loc), .. } = ev {
                if !stored.iter().any(|(l, _)| l == loc) {
                    stored.push((loc.clone(), false));
                }
            }
        }
    }
    let top = Dead { cf: vec![true; ncf], cf_local: vec![false; ncf], heap: stored };
    let mut ins: SecondaryMap<Block, Option<Dead>> = SecondaryMap::new();
    let at_end = |ins: &SecondaryMap<Block, Option<Dead>>, b: Block| -> Dead {
        let mut acc: Option<Dead> = None;
        for &s in &cfg.succs[b] {
            // Read in place: a copy of each successor's state was most of the join.
            let d = ins[s].as_ref().unwrap_or(&top);
            acc = Some(match acc {
                None => Dead {
                    cf_local: vec![false; ncf],
                    heap: d.heap.iter().map(|(l, _)| (l.clone(), false)).collect(),
                    cf: d.cf.clone(),
                },
                Some(a) => intersect(&a, d),
            });
        }
        acc.unwrap_or_else(|| empty.clone())
    };
    // Whether a successor's state changed since the block's own was made (first, every
    // block's): a block whose successors' did not would be made the same, and is skipped.
    let mut dirty: SecondaryMap<Block, bool> = SecondaryMap::new();
    cfg.rpo.iter().for_each(|&b| dirty[b] = true);
    for _round in 0..64 {
        let mut changed = false;
        for &b in cfg.rpo.iter().rev() {
            if !std::mem::replace(&mut dirty[b], false) {
                continue;
            }
            let mut st = at_end(&ins, b);
            walk(&mut st, b, &events[b], &mut None);
            st.cf_local.iter_mut().for_each(|x| *x = false);
            st.heap.iter_mut().for_each(|(_, x)| *x = false);
            if ins[b].as_ref() != Some(&st) {
                ins[b] = Some(st);
                cfg.preds[b].iter().for_each(|&p| dirty[p] = true);
                changed = true;
            }
        }
        if !changed {
            let mut out = vec![];
            for &b in &cfg.rpo {
                let mut st = at_end(&ins, b);
                walk(&mut st, b, &events[b], &mut Some(&mut out));
            }
            return Some(out);
        }
    }
    None
}
