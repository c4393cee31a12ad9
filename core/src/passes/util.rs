//! Small shared tools of the passes: a bit set over locals, the nodes of a tree in
//! evaluation order, removal of locals no statement mentions any more (passes that
//! delete definitions call it so printed IR lists only live names), and the namer of
//! the locals a pass adds.

use crate::ir::{Block, BlockData, ExprData, Expr, Function, Local, Terminator};
use cranelift_entity::{EntityRef, PrimaryMap, SecondaryMap};
use smallvec::SmallVec;

/// A fixed-size set of locals.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct LocalSet {
    words: Vec<u64>,
}

impl LocalSet {
    /// An empty set able to hold locals `0..n`.
    pub fn new(n: usize) -> LocalSet {
        LocalSet { words: vec![0; n.div_ceil(64)] }
    }

    pub fn contains(&self, l: Local) -> bool {
        let i = l.index();
        self.words.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// Inserts `l`; true if it was not there.
    pub fn insert(&mut self, l: Local) -> bool {
        let i = l.index();
        if i / 64 >= self.words.len() {
            self.words.resize(i / 64 + 1, 0);
        }
        let was = self.words[i / 64] >> (i % 64) & 1 == 1;
        self.words[i / 64] |= 1 << (i % 64);
        !was
    }

    pub fn remove(&mut self, l: Local) {
        let i = l.index();
        if let Some(w) = self.words.get_mut(i / 64) {
            *w &= !(1 << (i % 64));
        }
    }

    /// Empties the set, keeping its room.
    pub fn clear(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
    }

    /// Makes the set hold what `other` holds, in its own room.
    pub fn copy_from(&mut self, other: &LocalSet) {
        self.words.clone_from(&other.words);
    }

    /// Adds every member of `other`; true if the set grew.
    pub fn union_with(&mut self, other: &LocalSet) -> bool {
        if other.words.len() > self.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        let mut grew = false;
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            let n = *a | *b;
            grew |= n != *a;
            *a = n;
        }
        grew
    }

    /// Adds every member of `other` that `except` does not hold.
    pub fn union_with_difference(&mut self, other: &LocalSet, except: &LocalSet) {
        if other.words.len() > self.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (i, (a, b)) in self.words.iter_mut().zip(&other.words).enumerate() {
            *a |= b & !except.words.get(i).copied().unwrap_or(0);
        }
    }

    /// How many members the set has.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set has no member.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// The members in index order.
    pub fn iter(&self) -> impl Iterator<Item = Local> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            (0..64).filter(move |b| w >> b & 1 == 1).map(move |b| Local::new(wi * 64 + b))
        })
    }
}

/// The nodes of the tree at `e` in evaluation (post-) order.
pub fn postorder(f: &Function, e: Expr) -> Vec<Expr> {
    let mut out = vec![];
    postorder_into(f, e, &mut out);
    out
}

/// [`postorder`] into `out` (cleared first), for a caller that reuses one list from tree
/// to tree.
pub fn postorder_into(f: &Function, e: Expr, out: &mut Vec<Expr>) {
    out.clear();
    f.visit_postorder(e, &mut |n| out.push(n));
}

thread_local! {
    /// [`remove_unused_locals`]'s stack of nodes and list of the nodes naming a local,
    /// kept from call to call on a thread (four passes call it on every function, and
    /// the lists grew from empty each time).
    static UNUSED_LOCALS_LISTS: std::cell::Cell<(Vec<Expr>, Vec<Expr>)> = const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// The most entries a kept list of [`remove_unused_locals`] may have room for (4 bytes
/// each: 256 KiB), so that what a thread keeps stays bounded.
const SPARE_UNUSED_LOCALS: usize = 1 << 16;

/// Removes the locals that are neither parameters nor mentioned by any statement,
/// terminator or phi, renumbering the rest in their old order. Returns how many went.
pub fn remove_unused_locals(f: &mut Function) -> usize {
    let lists = UNUSED_LOCALS_LISTS.with(|s| s.take());
    let (removed, (work, mentions)) = remove_unused_locals_with(f, lists);
    if work.capacity() <= SPARE_UNUSED_LOCALS && mentions.capacity() <= SPARE_UNUSED_LOCALS {
        UNUSED_LOCALS_LISTS.with(|s| s.set((work, mentions)));
    }
    removed
}

/// The locals a function uses whatever its trees say: its parameters, and its phis'
/// locals and arguments (the start of the set of used locals).
fn params_and_phi_locals(f: &Function) -> LocalSet {
    let mut used = LocalSet::new(f.locals.len());
    for &p in &f.params {
        used.insert(p);
    }
    for &b in &f.layout {
        for phi in &f.blocks[b].phis {
            used.insert(phi.dest);
            for (_, a) in &phi.args {
                used.insert(*a);
            }
        }
    }
    used
}

/// [`remove_unused_locals`] with its two lists, given and handed back (by value, so
/// that they stay in registers while the walk pushes).
fn remove_unused_locals_with(f: &mut Function, (mut work, mut mentions): (Vec<Expr>, Vec<Expr>)) -> (usize, (Vec<Expr>, Vec<Expr>)) {
    let mut used = params_and_phi_locals(f);
    // The nodes that name a local, kept for the renumbering below (a second walk of
    // every tree otherwise). Neither the set nor the renumbering depends on the order of
    // the walk, so it is one stack of nodes over every tree, not a post-order walk per
    // tree. An operand that is a leaf (a local, a constant, a callframe read: about half
    // the nodes) is taken where it is found instead of going through the stack.
    work.clear();
    mentions.clear();
    for &b in &f.layout {
        let data = &f.blocks[b];
        work.extend(data.stmts.iter().copied().chain(data.term.expr()));
    }
    while let Some(n) = work.pop() {
        let d = &f.exprs[n];
        if let ExprData::Local(l) | ExprData::Assign { local: l, .. } = *d {
            used.insert(l);
            mentions.push(n);
        }
        for &c in d.operands().iter() {
            match f.exprs[c] {
                ExprData::Local(l) => {
                    used.insert(l);
                    mentions.push(c);
                }
                ExprData::Const { .. } | ExprData::CfRead(_) => {}
                _ => work.push(c),
            }
        }
    }
    let removed = renumber_used_locals(f, &used, &mentions);
    (removed, (work, mentions))
}

/// [`remove_unused_locals`] for a pass whose own walk listed `mentions`, every node of
/// every tree that names a local (a read or an assignment; a node listed that no longer
/// names one is skipped): the locals neither parameters, nor a phi's, nor named there go,
/// without a walk of every tree again. Returns how many went.
pub(crate) fn remove_unmentioned_locals(f: &mut Function, mentions: &[Expr]) -> usize {
    let mut used = params_and_phi_locals(f);
    for &m in mentions {
        if let ExprData::Local(l) | ExprData::Assign { local: l, .. } = f.exprs[m] {
            used.insert(l);
        }
    }
    renumber_used_locals(f, &used, mentions)
}

/// Removes the locals of `f` that are neither in `used` nor parameters, renumbering the
/// rest in their old order where `f` names them: parameters, phis and the nodes of
/// `mentions` (every node of every tree that names a local). Returns how many went. The
/// second half of [`remove_unused_locals`], for a pass that knows both already (SSA
/// renaming rewrites every such node itself).
pub(crate) fn renumber_used_locals(f: &mut Function, used: &LocalSet, mentions: &[Expr]) -> usize {
    let removed = f.locals.len() - used.len();
    if removed == 0 {
        return 0;
    }
    let mut map: SecondaryMap<Local, Option<Local>> = SecondaryMap::new();
    map.resize(f.locals.len());
    let mut locals = PrimaryMap::with_capacity(f.locals.len() - removed);
    for (l, d) in std::mem::take(&mut f.locals) {
        if used.contains(l) {
            map[l] = Some(locals.push(d));
        }
    }
    f.locals = locals;
    let m = |l: Local| map[l].expect("used local");
    for p in f.params.iter_mut() {
        *p = m(*p);
    }
    for &b in &f.layout {
        for phi in f.blocks[b].phis.iter_mut() {
            phi.dest = m(phi.dest);
            for (_, a) in phi.args.iter_mut() {
                *a = m(*a);
            }
        }
    }
    for &n in mentions.iter() {
        match &mut f.exprs[n] {
            ExprData::Local(l) | ExprData::Assign { local: l, .. } => *l = m(*l),
            _ => {}
        }
    }
    removed
}

/// Hands out local names the way `Function::new_local` does (`base`, else `base.1`,
/// `base.2`, ...) without rescanning every local for each name: passes that create
/// thousands of locals (SSA versions) use it.
pub struct Namer {
    taken: Taken,
    next: crate::hash::HashMap<String, u32>,
    /// The one base a namer made by [`Namer::for_base`] names after.
    only: Option<String>,
}

/// The names a [`Namer`] knows are taken.
enum Taken {
    /// The names of the function's locals it was made for and of the locals it added
    /// since, by the hash of the name: the locals themselves, whose names are compared
    /// when a hash matches. A copy of every name was an allocation a local, for every
    /// pass that adds one. Sound while the function's locals are only appended to, as
    /// they are while a pass names new ones (`remove_unused_locals` runs last).
    Locals(crate::hash::HashMap<u64, SmallVec<[Local; 1]>>),
    /// The names given ([`Namer::for_base`]) and the names handed out since.
    Names(crate::hash::HashSet<String>),
}

/// The hash a [`Taken::Locals`] keys a name by.
fn name_hash(name: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<crate::hash::FxHasher>::default().hash_one(name)
}

impl Namer {
    /// A namer that knows the names of `f`'s locals.
    pub fn new(f: &Function) -> Namer {
        let mut taken: crate::hash::HashMap<u64, SmallVec<[Local; 1]>> =
            crate::hash::HashMap::with_capacity_and_hasher(f.locals.len(), Default::default());
        for (l, d) in f.locals.iter() {
            taken.entry(name_hash(&d.name)).or_default().push(l);
        }
        Namer { taken: Taken::Locals(taken), next: Default::default(), only: None }
    }

    /// A namer for locals named after `base` alone, given `names` that include every
    /// name of the function's locals starting with `base`: it knows only those, the only
    /// ones `base` or `base.N` can be, so it names exactly as [`Namer::new`] would
    /// without copying every name.
    pub fn for_base<'a>(names: impl Iterator<Item = &'a str>, base: &str) -> Namer {
        let taken = names.filter(|n| n.starts_with(base)).map(str::to_string).collect();
        Namer { taken: Taken::Names(taken), next: Default::default(), only: Some(base.to_string()) }
    }

    /// Makes room for `n` more names (and `f`'s list for `n` more locals), so that a pass
    /// that knows how many it adds does not grow either step by step.
    pub fn reserve(&mut self, f: &mut Function, n: usize) {
        f.locals.reserve(n);
        match &mut self.taken {
            Taken::Locals(taken) => taken.reserve(n),
            Taken::Names(taken) => taken.reserve(n),
        }
    }

    /// Adds a local named after `base` to `f`.
    pub fn new_local(&mut self, f: &mut Function, base: &str, ty: crate::ir::Type) -> Local {
        let (name, hash) = self.fresh_name(f, base);
        self.push(f, name, hash, ty)
    }

    /// Adds a local of `x`'s type named after `x` to `f` (an SSA version of `x`).
    pub fn new_local_after(&mut self, f: &mut Function, x: Local) -> Local {
        let (name, hash) = self.fresh_name(f, &f.locals[x].name);
        let ty = f.locals[x].ty;
        self.push(f, name, hash, ty)
    }

    /// Adds the local named `name`, which [`Namer::fresh_name`] found free (`hash`: its
    /// [`Taken::hash`]), and takes the name.
    fn push(&mut self, f: &mut Function, name: String, hash: u64, ty: crate::ir::Type) -> Local {
        let l = f.locals.push(crate::ir::LocalData { name, ty });
        match &mut self.taken {
            Taken::Locals(taken) => taken.entry(hash).or_default().push(l),
            Taken::Names(taken) => {
                taken.insert(f.locals[l].name.clone());
            }
        }
        l
    }

    /// The next free name after `base`, and its [`Taken::hash`]; the caller adds the
    /// local ([`Namer::push`]).
    fn fresh_name(&mut self, f: &Function, base: &str) -> (String, u64) {
        assert!(self.only.as_deref().is_none_or(|b| b == base), "a namer for one base asked for another");
        let Namer { taken, next, .. } = self;
        // A base with a counter is taken (the counter is made when it is found taken, and
        // no name is ever given back), so the counter is looked up first, once: SSA
        // renaming names every version of a local after it.
        if let Some(n) = next.get_mut(base) {
            return taken.numbered(f, base, n);
        }
        let hash = taken.hash(base);
        if !taken.contains(f, base, hash) {
            return (base.to_string(), hash);
        }
        let n = next.entry(base.to_string()).or_insert(1);
        taken.numbered(f, base, n)
    }
}

impl Taken {
    /// The hash a [`Taken::Locals`] keys `name` by; 0 for [`Taken::Names`], which hashes
    /// its names itself. Computed once for a name asked about and then taken.
    fn hash(&self, name: &str) -> u64 {
        match self {
            Taken::Locals(_) => name_hash(name),
            Taken::Names(_) => 0,
        }
    }

    /// Whether `name` (of [`Taken::hash`] `hash`) is taken; `f` holds the locals a
    /// [`Taken::Locals`] names.
    fn contains(&self, f: &Function, name: &str, hash: u64) -> bool {
        match self {
            Taken::Locals(taken) => taken.get(&hash).is_some_and(|ls| ls.iter().any(|&l| f.locals[l].name == name)),
            Taken::Names(taken) => taken.contains(name),
        }
    }

    /// The first free `base.N` from `N = *next` on, and its hash, leaving `*next` past it.
    /// The number is written over the last one tried (a new `String` for each number tried
    /// was most of SSA renaming's naming).
    fn numbered(&self, f: &Function, base: &str, next: &mut u32) -> (String, u64) {
        let mut name = String::with_capacity(base.len() + 4);
        name.push_str(base);
        name.push('.');
        let stem = name.len();
        loop {
            name.truncate(stem);
            push_decimal(&mut name, (*next).into());
            *next += 1;
            let hash = self.hash(&name);
            if !self.contains(f, &name, hash) {
                return (name, hash);
            }
        }
    }
}

/// Appends the decimal digits of `n` to `s`, as `write!(s, "{n}")` would, without the
/// formatting machinery (SSA renaming names every version with one; memopt's address
/// keys write their numbers with it).
pub(crate) fn push_decimal(s: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // ASCII digits: one copy of the bytes, not a push per char.
    s.push_str(std::str::from_utf8(&digits[at..]).expect("ASCII digits"));
}

/// Makes an empty block on the edge `from -> to` and returns it: every successor of
/// `from` naming `to`, and the arguments of `to`'s phis coming from `from`, now name the
/// new block. The caller places it in the layout.
pub fn split_edge(f: &mut Function, from: Block, to: Block) -> Block {
    let n = f.blocks.push(BlockData { phis: vec![], stmts: vec![], term: Terminator::Jump(to) });
    for s in f.blocks[from].term.successors_mut() {
        if *s == to {
            *s = n;
        }
    }
    for phi in f.blocks[to].phis.iter_mut() {
        for (p, _) in phi.args.iter_mut() {
            if *p == from {
                *p = n;
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::push_decimal;

    /// The digits are what `Display` writes, for the ends of each length.
    #[test]
    fn push_decimal_writes_what_display_writes() {
        for n in [0, 1, 9, 10, 99, 100, 12345, 999_999_999, 1_000_000_000, u32::MAX.into(), u64::MAX] {
            let mut s = String::from("x.");
            push_decimal(&mut s, n);
            assert_eq!(s, format!("x.{n}"));
        }
    }
}
