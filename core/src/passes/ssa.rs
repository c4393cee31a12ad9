//! SSA construction (`DESIGN.md` pass 1; the form `seeds/ssapre.txt` works on): phis
//! placed on the iterated dominance frontier of each local's definition blocks, pruned by
//! liveness (a phi only where the local is live on entry), then renaming in a pre-order
//! walk of the dominator tree with one stack of versions per original local.
//!
//! Versions are new locals named after the original (`%x.1`, `%x.2`, ..., unique as
//! `Function::new_local` makes them). The IR gives every local the value 0 on entry, so
//! a use that no definition reaches reads a zero version `%x.0`, defined by `%x.0 = 0`
//! at the top of the entry block (only for locals that need one). Parameters are their own first version:
//! they keep their incoming value. Callframe variables and the heap stay in memory.
//! Originals that no longer appear are removed from the function.
//!
//! Statistics: `phis` placed, `versions` created, `zero_inits` inserted.

use super::liveness::Liveness;
use super::util::{remove_unused_locals, renumber_used_locals, LocalSet, Namer};
use super::{Cfg, DomTree, DominanceFrontiers, Stats};
use crate::ir::{Block, Expr, ExprData, Function, Local, Phi};
use cranelift_entity::{EntityRef, SecondaryMap};

/// Puts `f` (HIR without phis) into SSA form, computing the three analyses it reads (not
/// the loop nest of [`super::Analyses`]).
pub fn run(f: &mut Function) -> Stats {
    let cfg = Cfg::compute(f);
    let domtree = DomTree::compute(f, &cfg);
    let frontiers = DominanceFrontiers::compute(&cfg, &domtree);
    run_on(f, &Cfgs { cfg: &cfg, domtree: &domtree, frontiers: &frontiers })
}

/// The analyses SSA construction reads, of `f` as it is.
struct Cfgs<'a> {
    cfg: &'a Cfg,
    domtree: &'a DomTree,
    frontiers: &'a DominanceFrontiers,
}

/// [`run`] given the analyses it reads.
fn run_on(f: &mut Function, an: &Cfgs) -> Stats {
    let mut stats = Stats::default();
    // The blocks assigning each local, noted by liveness's walk. Each block is visited
    // once, so a block already recorded for a local is its last entry (a `contains`
    // would make a long chain quadratic). The same walk lists the nodes naming a local,
    // block by block in evaluation order, which renaming rewrites (see [`Named`]).
    let mut def_blocks: Vec<Vec<Block>> = vec![vec![]; f.locals.len()];
    let mut named = Named { nodes: vec![], at: super::cfg::sized(f.blocks.len()), defs: 0 };
    let live = Liveness::compute_noting(f, &an.cfg, |b, n, local, def| {
        if def && def_blocks[local.index()].last() != Some(&b) {
            def_blocks[local.index()].push(b);
        }
        named.defs += usize::from(def);
        let len = named.nodes.len() as u32;
        let at = &mut named.at[b];
        if at.1 == 0 {
            // The block's first node: its range starts here (blocks come once each).
            at.0 = len;
        }
        named.nodes.push(n);
        at.1 = len + 1;
    });
    let phi_orig = place_phis(f, an, &live, &def_blocks, &mut stats);
    let originals = f.locals.len();
    let renamed = rename(f, an, &phi_orig, &named, &mut stats);
    let mut mentions = renamed.mentions;
    define_zero_versions(f, &renamed.zero, &mut stats, &mut mentions);
    if renamed.entered == f.layout.len() {
        // Renaming rewrote every node naming a local, in every block (all of them are
        // reachable): the locals named now are the versions it made (every one names a
        // phi's destination, an assignment or a zero version) and the parameters, and it
        // listed the nodes, so the originals go without a walk of every tree.
        let mut used = LocalSet::new(f.locals.len());
        for &p in &f.params {
            used.insert(p);
        }
        for l in originals..f.locals.len() {
            used.insert(Local::new(l));
        }
        renumber_used_locals(f, &used, &mentions);
    } else {
        remove_unused_locals(f);
    }
    stats
}

/// Phi placement: a phi for each local on the iterated dominance frontier of its
/// definitions, where the local is live. Returns the original local of each phi of each
/// block.
fn place_phis(
    f: &mut Function,
    an: &Cfgs,
    live: &Liveness,
    def_blocks: &[Vec<Block>],
    stats: &mut Stats,
) -> SecondaryMap<Block, Vec<Local>> {
    let originals: Vec<Local> = f.locals.keys().collect();
    let mut phi_orig: SecondaryMap<Block, Vec<Local>> = SecondaryMap::new();
    for &x in &originals {
        if def_blocks[x.index()].is_empty() {
            continue;
        }
        for b in an.frontiers.iterated(&def_blocks[x.index()]) {
            if live.live_in[b].contains(x) {
                let args = an.cfg.preds[b].iter().map(|&p| (p, x)).collect();
                f.blocks[b].phis.push(Phi { dest: x, args });
                phi_orig[b].push(x);
                stats.bump("phis");
            }
        }
    }
    phi_orig
}

/// The nodes naming a local (reads and assignments) of every reachable block, in
/// evaluation order: `nodes[at[b].0..at[b].1]` for block `b` (empty for a block without
/// one). Phi placement changes no tree, so they are the nodes renaming rewrites, listed
/// by liveness's walk rather than by a walk of every tree again.
struct Named {
    nodes: Vec<Expr>,
    at: SecondaryMap<Block, (u32, u32)>,
    /// How many of them are assignments.
    defs: usize,
}

/// What renaming did besides renaming ([`rename`]).
struct Renamed {
    /// The zero version of each original read before any definition, if one was needed.
    zero: Vec<Option<Local>>,
    /// The nodes naming a local that it rewrote, in every block it entered.
    mentions: Vec<Expr>,
    /// How many blocks it entered (the reachable ones).
    entered: usize,
}

/// Renaming: a walk of the dominator tree with a stack of versions per original.
fn rename(
    f: &mut Function,
    an: &Cfgs,
    phi_orig: &SecondaryMap<Block, Vec<Local>>,
    named: &Named,
    stats: &mut Stats,
) -> Renamed {
    let nlocals = f.locals.len();
    // A version per phi and per assignment (and the zero versions, a few), made room for
    // at once.
    let versions = named.defs + phi_orig.values().map(Vec::len).sum::<usize>();
    let mut namer = Namer::new(f);
    namer.reserve(f, versions);
    let mut r = Renamer {
        top: vec![None; nlocals],
        zero: vec![None; nlocals],
        namer,
        pushed: Vec::with_capacity(versions),
        mentions: Vec::with_capacity(named.nodes.len()),
        entered: 0,
        stats,
    };
    for &p in &f.params {
        r.top[p.index()] = Some(p);
    }
    let enter = |(f, r): &mut (&mut Function, Renamer), b: Block| {
        let height = r.pushed.len();
        r.entered += 1;
        for i in 0..f.blocks[b].phis.len() {
            let x = phi_orig[b][i];
            let v = r.new_version(f, x);
            f.blocks[b].phis[i].dest = v;
        }
        // The nodes of the statements (then the terminator's tree) that name a local, in
        // evaluation order, as liveness listed them: renaming rewrites nodes, not lists.
        debug_assert!(an.cfg.rpo_index[b] != u32::MAX, "a block of the dominator tree is reachable");
        let (start, end) = named.at[b];
        for &n in &named.nodes[start as usize..end as usize] {
            match f.exprs[n] {
                ExprData::Local(x) => {
                    let v = r.current(f, x);
                    f.exprs[n] = ExprData::Local(v);
                    r.mentions.push(n);
                }
                ExprData::Assign { local: x, value } => {
                    let v = r.new_version(f, x);
                    f.exprs[n] = ExprData::Assign { local: v, value };
                    r.mentions.push(n);
                }
                _ => unreachable!("liveness lists the nodes naming a local"),
            }
        }
        for &s in &an.cfg.succs[b] {
            for i in 0..f.blocks[s].phis.len() {
                let x = phi_orig[s][i];
                let v = r.current(f, x);
                for (p, a) in f.blocks[s].phis[i].args.iter_mut() {
                    if *p == b {
                        *a = v;
                    }
                }
            }
        }
        height
    };
    let leave = |(_, r): &mut (&mut Function, Renamer), height: usize| {
        // Undone in reverse, so that a block's second version of an original gives
        // back its first, and the first the one before the block.
        for (x, before) in r.pushed.drain(height..).rev() {
            r.top[x.index()] = before;
        }
    };
    let mut state = (f, r);
    an.domtree.walk_scoped(&mut state, enter, leave);
    let r = state.1;
    Renamed { zero: r.zero, mentions: r.mentions, entered: r.entered }
}

/// Zero versions are defined at the top of the entry block (their assignments added to
/// `mentions`).
fn define_zero_versions(f: &mut Function, zero: &[Option<Local>], stats: &mut Stats, mentions: &mut Vec<Expr>) {
    let mut inits = vec![];
    for (i, z) in zero.iter().enumerate() {
        if let Some(z) = *z {
            let ty = f.locals[Local::new(i)].ty;
            let c = f.add_expr(ExprData::Const { ty, value: 0 });
            inits.push(f.add_expr(ExprData::Assign { local: z, value: c }));
            mentions.push(*inits.last().expect("pushed"));
        }
    }
    stats.add("zero_inits", inits.len() as u64);
    let entry = f.entry();
    f.blocks[entry].stmts.splice(0..0, inits);
}

struct Renamer<'a> {
    /// The version on top of each original's stack of versions: the stacks themselves
    /// are one undo log, [`Renamer::pushed`] (a list per original was an allocation each,
    /// and its growth).
    top: Vec<Option<Local>>,
    /// The zero version of each original, created on first need.
    zero: Vec<Option<Local>>,
    namer: Namer,
    /// The originals each block of the walk pushed a version of, each with the version
    /// on top before, one log for the whole walk: a block enters at its height and
    /// leaves by undoing back to it (a list per block was an allocation each, and its
    /// growth).
    pushed: Vec<(Local, Option<Local>)>,
    /// The nodes naming a local, rewritten ([`Renamed::mentions`]).
    mentions: Vec<Expr>,
    /// How many blocks the walk entered.
    entered: usize,
    stats: &'a mut Stats,
}

impl Renamer<'_> {
    fn new_version(&mut self, f: &mut Function, x: Local) -> Local {
        let v = self.namer.new_local_after(f, x);
        let before = std::mem::replace(&mut self.top[x.index()], Some(v));
        self.pushed.push((x, before));
        self.stats.bump("versions");
        v
    }

    fn current(&mut self, f: &mut Function, x: Local) -> Local {
        if let Some(v) = self.top[x.index()] {
            return v;
        }
        if let Some(z) = self.zero[x.index()] {
            return z;
        }
        let name = format!("{}.0", f.locals[x].name);
        let z = self.namer.new_local(f, &name, f.locals[x].ty);
        self.zero[x.index()] = Some(z);
        z
    }
}
