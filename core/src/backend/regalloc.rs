//! Register allocation: a global allocator for variables and the local allocator of
//! `seeds/local-regalloc.txt` for the temps inside each block.
//!
//! **Global.** Variables (HIR locals, their `i64` halves and decomposition temps) are
//! weighted by their reads and writes, each counted `8^depth` times for its block's loop
//! depth; the heaviest ones get the callee-saved `ebx esi edi` for the whole function
//! (state *allocated* in the seed). Every other variable lives in a frame slot.
//!
//! **Local.** Within a block every SDSU temp lives from its def to its one use. The
//! allocator walks the lowered nodes in order keeping, for each register of its pool, the
//! seed's state: *free*; *freeable* (holds the value of a variable, as after a store of
//! the register to it, so a later read of that variable may reuse it); *moveable* (a live
//! temp that may be moved); *busy* (pinned for the current instruction); *allocated*
//! (owned by the global allocator). Its operations carry the seed's names:
//! [`LocalAllocator::get_register`], [`LocalAllocator::get_register_force`],
//! [`LocalAllocator::set_register_freeable`], [`LocalAllocator::set_register_free`],
//! [`LocalAllocator::will_clobber`], [`LocalAllocator::spill`] and
//! [`LocalAllocator::register_unspill`]. For each node it first clobbers what the
//! instruction clobbers (so a value in `edx` before a division moves or spills first, as
//! the seed's last example asks), then forces the fixed operands (`ecx` for a shift
//! count, `eax` for a dividend), then places the others, then defines the results in the
//! place lowering's [`constraints`](super::lower::constraints) say. Every instruction
//! the allocator inserts is a `mov`, which leaves the flags alone, so `add`/`adc` pairs
//! stay intact.
//!
//! The output is a list of machine instructions per block ([`MInst`]) and the frame
//! layout; [`Allocation::decisions`] records each step with the register states of
//! `eax ecx edx` after it, in the seed's table format, for tests.

use std::fmt;

use cranelift_entity::SecondaryMap;
use smallvec::{smallvec, SmallVec};

use super::lir::*;
use super::lower::{constraints_onto, NodeConstraints, ResultReg};
use super::x86::{Reg, RegSet};
use crate::ir::{Block, CALLFRAME_BASE, CALLFRAME_SLOT};

/// Where an operand of a machine instruction is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Operand {
    Reg(Reg),
    Imm(i32),
    Mem(Mem),
}

/// The base of a memory operand.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Base {
    Reg(Reg),
    /// The frame pointer: frame slots and incoming arguments.
    Ebp,
    /// The stack pointer: the outgoing argument area.
    Esp,
}

/// A memory operand `[base + index * scale + disp]`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Mem {
    pub base: Option<Base>,
    pub index: Option<(Reg, u8)>,
    pub disp: i32,
}

impl Mem {
    pub fn frame(disp: i32) -> Mem {
        Mem { base: Some(Base::Ebp), index: None, disp }
    }
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Reg(r) => write!(f, "{r}"),
            Operand::Imm(v) => write!(f, "{v}"),
            Operand::Mem(m) => {
                let mut parts = vec![];
                match m.base {
                    Some(Base::Reg(r)) => parts.push(r.to_string()),
                    Some(Base::Ebp) => parts.push("ebp".into()),
                    Some(Base::Esp) => parts.push("esp".into()),
                    None => {}
                }
                if let Some((r, s)) = m.index {
                    parts.push(format!("{r}*{s}"));
                }
                if m.disp != 0 || parts.is_empty() {
                    parts.push(format!("{:#x}", m.disp));
                }
                write!(f, "[{}]", parts.join("+"))
            }
        }
    }
}

/// A machine instruction after register allocation.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum MInst {
    /// `mov dst, src`, inserted by the allocator: a move between registers or an unspill.
    Move { dst: Reg, src: Operand },
    /// `mov [ebp + slot], src`: a spill inserted by the allocator.
    Spill { slot: i32, src: Reg },
    /// A read of a variable satisfied by a register that already holds its value (the
    /// seed's freeable state): no code, but the register now holds the read's value.
    Reuse { node: Node, reg: Reg },
    /// A read of a variable the global allocator keeps in `reg`, used only by an
    /// instruction that does not overwrite it: no copy, the operand is `reg` itself.
    Alias { node: Node, reg: Reg },
    /// A lowered node with its operands (one per argument; a fused compare contributes
    /// its two) and the registers of its results (`None`: unused), each a span of the
    /// function's list ([`Allocation::operands`], [`Allocation::results`]): the allocator
    /// makes one per node, so an instruction is small and holds no list of its own.
    Node { node: Node, ops: Span, results: Span },
}

/// A run of items of one of the function's lists, for [`MInst::Node`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    /// The span's items of `list`.
    pub fn of<T>(self, list: &[T]) -> &[T] {
        &list[self.start as usize..self.end as usize]
    }
}

/// The state of a register (`seeds/local-regalloc.txt`, "Possible state information").
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RegState {
    Free,
    Freeable(Var),
    Moveable(Use),
    Busy(Use),
    Allocated(Var),
}

impl RegState {
    /// The seed's short name (`mov` for moveable).
    pub fn short(self) -> &'static str {
        match self {
            RegState::Free => "free",
            RegState::Freeable(_) => "freeable",
            RegState::Moveable(_) => "mov",
            RegState::Busy(_) => "busy",
            RegState::Allocated(_) => "alloc",
        }
    }
}

/// Options of the allocator.
#[derive(Clone, Copy, Debug)]
pub struct RegallocOptions {
    /// Run the global allocator (otherwise every variable lives in the frame).
    pub global: bool,
    /// Registers the local allocator may use besides those the global one leaves.
    pub local_pool: RegSet,
    /// Record [`Allocation::decisions`], the seed-style trace (for tests); off, the
    /// allocator formats no text.
    pub trace: bool,
}

impl Default for RegallocOptions {
    fn default() -> Self {
        RegallocOptions { global: true, local_pool: RegSet::ALL, trace: false }
    }
}

/// What the allocators did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegallocStats {
    /// Variables kept in callee-saved registers.
    pub globals: usize,
    pub spills: usize,
    pub unspills: usize,
    /// Register-to-register moves inserted.
    pub moves: usize,
    /// Variable reads satisfied by a freeable register without a load.
    pub reused: usize,
    /// Reads of global variables used in place, without a copy.
    pub aliased: usize,
    /// Spill slots in the frame.
    pub spill_slots: usize,
}

/// The result of register allocation.
#[derive(Clone, Debug)]
pub struct Allocation {
    pub code: SecondaryMap<Block, Vec<MInst>>,
    /// The operands of every [`MInst::Node`], one after another (each node's a [`Span`]).
    pub operands: Vec<Operand>,
    /// The result registers of every [`MInst::Node`], one after another.
    pub results: Vec<Option<Reg>>,
    /// Where each variable lives.
    pub home: SecondaryMap<Var, Option<Operand>>,
    /// Variables in callee-saved registers.
    pub globals: Vec<(Var, Reg)>,
    /// Callee-saved registers the function uses, with their save slots.
    pub saved: Vec<(Reg, i32)>,
    /// Bytes below `ebp` (frame slots, save slots, spill slots, outgoing arguments).
    pub frame_bytes: u32,
    /// The seed-style trace: each step and the states of `eax ecx edx` after it.
    pub decisions: Vec<(String, [&'static str; 3])>,
    pub stats: RegallocStats,
}

/// Why the allocator failed on a node (a backend bug: lowering's constraints ask for
/// more than the registers can give).
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum RegallocErrorKind {
    /// No register of the operand's mask was free for this operand.
    NoRegisterForOperand(Use),
    /// No register of the operand's mask was free to reload this spilled operand.
    NoRegisterToUnspill(Use),
    /// The operand is neither in a register nor spilled: its value was lost.
    NoLocation(Use),
    /// No register of the result's mask was free for this result.
    NoRegisterForResult(Use),
    /// The register still holds a temp at the end of the block (temps die in their block).
    TempLiveAtBlockEnd(Reg),
}

impl fmt::Display for RegallocErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegallocErrorKind::NoRegisterForOperand(u) => write!(f, "no register for operand {u}"),
            RegallocErrorKind::NoRegisterToUnspill(u) => write!(f, "no register to unspill operand {u}"),
            RegallocErrorKind::NoLocation(u) => write!(f, "operand {u} has no location"),
            RegallocErrorKind::NoRegisterForResult(u) => write!(f, "no register for result {u}"),
            RegallocErrorKind::TempLiveAtBlockEnd(r) => write!(f, "{r} still holds a temp at the end of the block"),
        }
    }
}

/// A failure of the allocator, with the block, the LIR node and its printed text.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RegallocError {
    pub block: Block,
    pub node: Node,
    /// The node as the LIR printer prints it.
    pub text: String,
    pub kind: RegallocErrorKind,
}

impl fmt::Display for RegallocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ({}): {}", self.block, self.node, self.text, self.kind)
    }
}

impl std::error::Error for RegallocError {}

/// The bytes of the outgoing argument area.
pub const OUT_ARG_BYTES: u32 = 16;

/// Allocates registers for lowered `f`.
pub fn regalloc(f: &LirFunction, opts: RegallocOptions) -> Result<Allocation, RegallocError> {
    let mut stats = RegallocStats::default();
    // One walk over the nodes finds the values used and, for the global allocator, the
    // variables' weights.
    let walk = NodeWalk::of(f, opts.global);
    let globals = if opts.global { heaviest(&walk.weight) } else { vec![] };
    stats.globals = globals.len();
    // Every variable gets a home: the map is sized once.
    let mut home: SecondaryMap<Var, Option<Operand>> = SecondaryMap::with_capacity(f.vars.len());
    home.resize(f.vars.len());
    let mut nslots = 0i32;
    for (v, d) in &f.vars {
        if let Some((_, r)) = globals.iter().find(|(g, _)| *g == v) {
            home[v] = Some(Operand::Reg(*r));
        } else if let VarKind::Param { offset } = d.kind {
            home[v] = Some(Operand::Mem(Mem::frame(8 + offset as i32)));
        } else {
            nslots += 1;
            home[v] = Some(Operand::Mem(Mem::frame(-4 * nslots)));
        }
    }
    let save_base = nslots;
    let spill_base = nslots + 3;
    let mut pool = opts.local_pool;
    for (_, r) in &globals {
        pool = pool.without(*r);
    }
    // About one operand and one result a linear node.
    let linear = walk.placed.len();
    let (operands, results) = (Vec::with_capacity(linear + linear / 2), Vec::with_capacity(linear));
    let mut shared = Shared { spill_base, next_slot: 0, free_slots: vec![], used: RegSet::NONE, decisions: vec![], stats, trace: opts.trace, operands, results };
    let mut code = SecondaryMap::new();
    let mut maps = BlockMaps::sized(f.nodes.len());
    // The position of the block's first node in the walk's flat lists.
    let mut first = 0;
    for &b in &f.layout {
        maps.next_block();
        let mut la = LocalAllocator::new(f, &home, &globals, pool, &walk.used, maps, &mut shared);
        // About one instruction per node: the block's list rarely grows.
        la.out.reserve(f.blocks[b].nodes.len() + 4);
        let nodes = &f.blocks[b].nodes;
        let placed = first..first + nodes.len();
        first = placed.end;
        la.find_aliases(b, &walk, placed.clone());
        let error = |node: Node, kind| RegallocError { block: b, node, text: f.node_text(node), kind };
        for (&n, k) in nodes.iter().zip(placed) {
            la.node(n, walk.operands(k), walk.results(k), walk.placed[k].constraints).map_err(|kind| error(n, kind))?;
        }
        // Every temp dies within its block: a register still holding one is a leak.
        if let Some(r) = Reg::ALL.into_iter().find(|r| matches!(la.regs[r.index()], RegState::Moveable(_) | RegState::Busy(_))) {
            let node = *f.blocks[b].nodes.last().expect("a block ends in a terminator");
            return Err(error(node, RegallocErrorKind::TempLiveAtBlockEnd(r)));
        }
        code[b] = std::mem::take(&mut la.out);
        maps = std::mem::take(&mut la.maps);
    }
    let mut used = shared.used;
    for (_, r) in &globals {
        used = used.with(*r);
    }
    let saved: Vec<(Reg, i32)> = Reg::CALLEE_SAVED
        .iter()
        .enumerate()
        .filter(|(_, r)| used.contains(**r))
        .map(|(i, r)| (*r, -4 * (save_base + 1 + i as i32)))
        .collect();
    shared.stats.spill_slots = shared.next_slot as usize;
    let frame_bytes = 4 * (spill_base + shared.next_slot) as u32 + OUT_ARG_BYTES;
    let (operands, results) = (shared.operands, shared.results);
    Ok(Allocation { code, operands, results, home, globals, saved, frame_bytes, decisions: shared.decisions, stats: shared.stats })
}

/// What one walk over the nodes of the lowered function gathers for the allocators: each
/// linear node's constraints, in layout order, in flat lists (the operands and results of
/// all nodes one after the other, each node's a range of them), the values used and, for
/// the global allocator, the variables' weights. The walk looks at the nodes in the
/// linear order and every node contained in one, each once (the nodes of
/// `LirFunction::all_nodes`, without making the list; nodes dropped by earlier passes
/// stay in the arena but are not looked at).
struct NodeWalk {
    /// One entry per linear node, in layout order.
    placed: Vec<Placed>,
    /// The register operands of every linear node, with their masks, one after another.
    operands: Vec<(Use, RegSet)>,
    /// Where the results of every linear node go, one after another.
    results: Vec<ResultReg>,
    used: UsedValues,
    /// Each variable's reads and writes, each counted `8^depth` times for its block's
    /// loop depth; empty unless the walk weighs (only the global allocator needs it).
    weight: SecondaryMap<Var, u64>,
}

/// A linear node's constraints: its ranges in [`NodeWalk::operands`] and
/// [`NodeWalk::results`], and the rest.
#[derive(Clone, Copy)]
struct Placed {
    operands: (u32, u32),
    results: (u32, u32),
    constraints: NodeConstraints,
}

impl NodeWalk {
    fn of(f: &LirFunction, weigh: bool) -> NodeWalk {
        let mut used = SecondaryMap::with_capacity(f.nodes.len());
        used.resize(f.nodes.len());
        let mut weight = SecondaryMap::new();
        let depth = if weigh {
            weight.resize(f.vars.len());
            loop_depths(f)
        } else {
            SecondaryMap::new()
        };
        let linear = f.linear_len();
        let mut placed = Vec::with_capacity(linear);
        // Rarely more than two operands and one result a node.
        let mut operands = Vec::with_capacity(2 * linear);
        let mut results = Vec::with_capacity(linear + 4);
        for &b in &f.layout {
            let w = 8u64.pow(depth[b].min(6));
            let mut weigh_node = |m: Node| {
                if let (true, Op::Read(v) | Op::Write(v)) = (weigh, &f.nodes[m].op) {
                    weight[*v] += w;
                }
            };
            for &n in &f.blocks[b].nodes {
                weigh_node(n);
                let (start, results_start) = (operands.len(), results.len());
                let constraints = constraints_onto(f, n, &mut operands, &mut results, &mut weigh_node);
                for (u, _) in &operands[start..] {
                    used[u.node] |= 1u8 << u.result;
                }
                let operands = (start as u32, operands.len() as u32);
                placed.push(Placed { operands, results: (results_start as u32, results.len() as u32), constraints });
            }
        }
        NodeWalk { placed, operands, results, used: UsedValues(used), weight }
    }

    /// The register operands of the `k`-th linear node, with their masks.
    fn operands(&self, k: usize) -> &[(Use, RegSet)] {
        let (start, end) = self.placed[k].operands;
        &self.operands[start as usize..end as usize]
    }

    /// Where the results of the `k`-th linear node go.
    fn results(&self, k: usize) -> &[ResultReg] {
        let (start, end) = self.placed[k].results;
        &self.results[start as usize..end as usize]
    }
}

/// The values some node of the lowered function uses, as a bit per result of each node.
/// Marked from the register operands: the allocator asks only of linear nodes' results,
/// and every use of one is a register operand (an argument of a linear node, or of an
/// address mode or compare contained in one).
struct UsedValues(SecondaryMap<Node, u8>);

impl UsedValues {
    fn contains(&self, u: &Use) -> bool {
        self.0[u.node] & (1u8 << u.result) != 0
    }
}

/// Loop depth of each block: blocks of the natural loop of every DFS back edge.
pub fn loop_depths(f: &LirFunction) -> SecondaryMap<Block, u32> {
    let succs = |b: Block| -> SmallVec<[Block; 2]> {
        let last = *f.blocks[b].nodes.last().expect("a block ends in a terminator");
        match &f.nodes[last].op {
            Op::Jump(t) => smallvec![*t],
            Op::Branch { then_dest, else_dest } => smallvec![*then_dest, *else_dest],
            Op::Switch { default, cases } => std::iter::once(*default).chain(cases.iter().map(|c| c.1)).collect(),
            _ => SmallVec::new(),
        }
    };
    // Maps over blocks, not hash maps: the allocator runs on every function compiled.
    // Each is sized once for the blocks there are, rather than grown block by block.
    let blocks = f.blocks.values().len();
    let mut preds: SecondaryMap<Block, SmallVec<[Block; 2]>> = SecondaryMap::new();
    preds.resize(blocks);
    for &b in &f.layout {
        for s in succs(b) {
            preds[s].push(b);
        }
    }
    // Iterative DFS finding back edges (edges to a block on the stack). The state of a
    // block: 0 not seen, 1 on the stack, 2 done.
    let mut back = vec![];
    let mut state: SecondaryMap<Block, u8> = SecondaryMap::new();
    state.resize(blocks);
    let mut stack = vec![(f.layout[0], 0usize)];
    state[f.layout[0]] = 1;
    while let Some((b, i)) = stack.pop() {
        let s = succs(b);
        if i < s.len() {
            stack.push((b, i + 1));
            let t = s[i];
            match state[t] {
                0 => {
                    state[t] = 1;
                    stack.push((t, 0));
                }
                1 => back.push((b, t)),
                _ => {}
            }
        } else {
            state[b] = 2;
        }
    }
    // The body of the `k`-th back edge's loop is the blocks marked `k + 1`.
    let mut depth: SecondaryMap<Block, u32> = SecondaryMap::new();
    depth.resize(blocks);
    let mut body: SecondaryMap<Block, u32> = SecondaryMap::new();
    body.resize(blocks);
    let mut work = vec![];
    for (k, (latch, header)) in back.into_iter().enumerate() {
        let mark = k as u32 + 1;
        body[header] = mark;
        depth[header] += 1;
        work.push(latch);
        while let Some(x) = work.pop() {
            if body[x] != mark {
                body[x] = mark;
                depth[x] += 1;
                work.extend(preds[x].iter().copied());
            }
        }
    }
    depth
}

/// Picks the variables to keep in `ebx esi edi`: the heaviest by weighted accesses.
pub fn global_allocation(f: &LirFunction) -> Vec<(Var, Reg)> {
    heaviest(&NodeWalk::of(f, true).weight)
}

/// The variables of the heaviest `weight`s, in `ebx esi edi`.
fn heaviest(weight: &SecondaryMap<Var, u64>) -> Vec<(Var, Reg)> {
    // Every variable read or written weighs at least 1.
    let mut vars: Vec<(Var, u64)> = weight.iter().filter(|&(_, &w)| w > 0).map(|(v, &w)| (v, w)).collect();
    // The heaviest first, ties by variable: the key orders every pair, so taking the
    // first registers' worth before sorting them picks what a sort of all would.
    let key = |&(v, w): &(Var, u64)| (std::cmp::Reverse(w), v);
    let k = Reg::CALLEE_SAVED.len();
    if vars.len() > k {
        vars.select_nth_unstable_by_key(k - 1, key);
        vars.truncate(k);
    }
    vars.sort_unstable_by_key(key);
    vars.into_iter().zip(Reg::CALLEE_SAVED).map(|((v, _), r)| (v, r)).collect()
}

struct Shared {
    spill_base: i32,
    next_slot: i32,
    free_slots: Vec<i32>,
    used: RegSet,
    decisions: Vec<(String, [&'static str; 3])>,
    stats: RegallocStats,
    /// Whether `decisions` is recorded ([`RegallocOptions::trace`]).
    trace: bool,
    /// [`Allocation::operands`] and [`Allocation::results`] as they are made.
    operands: Vec<Operand>,
    results: Vec<Option<Reg>>,
}

/// Where a live temp is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ValLoc {
    Reg(Reg),
    Spilled(i32),
}

/// The local allocator's maps over the function's nodes, reused from block to block
/// ([`BlockNodeMap`]: a new block starts with them empty).
#[derive(Default)]
struct BlockMaps {
    /// Where each live temp is, by node and result.
    locs: BlockNodeMap<[Option<ValLoc>; 2]>,
    /// Reads of global variables whose one user only reads them: they are not copied.
    aliases: BlockNodeSet,
    /// Each node's first position in the block ([`BlockMaps::place_nodes`]).
    positions: BlockNodeMap<u32>,
}

impl BlockMaps {
    /// Maps with an entry for each of `nodes` nodes already (none grows one by one).
    fn sized(nodes: usize) -> BlockMaps {
        BlockMaps { locs: BlockNodeMap::with_nodes(nodes), aliases: BlockNodeMap::with_nodes(nodes), positions: BlockNodeMap::with_nodes(nodes) }
    }

    /// Empties the maps for the next block.
    fn next_block(&mut self) {
        self.locs.next_block();
        self.aliases.next_block();
        self.positions.next_block();
    }

    fn loc(&self, u: Use) -> Option<ValLoc> {
        self.locs.get(u.node).and_then(|at| at[u.result as usize])
    }

    fn set_loc(&mut self, u: Use, l: ValLoc) {
        self.locs.get_or_insert_with(u.node, || [None; 2])[u.result as usize] = Some(l);
    }

    fn remove_loc(&mut self, u: Use) {
        if let Some(at) = self.locs.get_mut(u.node) {
            at[u.result as usize] = None;
        }
    }

    /// Records the first position of each node of `list`, the current block's.
    fn place_nodes(&mut self, list: &[Node]) {
        for (k, &m) in list.iter().enumerate() {
            if !self.positions.contains(m) {
                self.positions.insert(m, k as u32);
            }
        }
    }

    /// A node's first position in the current block, once [`BlockMaps::place_nodes`] ran.
    fn position(&self, n: Node) -> Option<usize> {
        self.positions.get(n).map(|&at| at as usize)
    }
}

/// The local allocator of one block.
pub struct LocalAllocator<'a> {
    f: &'a LirFunction,
    home: &'a SecondaryMap<Var, Option<Operand>>,
    regs: [RegState; 6],
    pool: RegSet,
    maps: BlockMaps,
    used: &'a UsedValues,
    out: Vec<MInst>,
    shared: &'a mut Shared,
}

impl<'a> LocalAllocator<'a> {
    fn new(
        f: &'a LirFunction,
        home: &'a SecondaryMap<Var, Option<Operand>>,
        globals: &[(Var, Reg)],
        pool: RegSet,
        used: &'a UsedValues,
        maps: BlockMaps,
        shared: &'a mut Shared,
    ) -> Self {
        // At the start of the basic block, the registers are set to the free state.
        let mut regs = [RegState::Free; 6];
        for (v, r) in globals {
            regs[r.index()] = RegState::Allocated(*v);
        }
        LocalAllocator { f, home, regs, pool, maps, used, out: vec![], shared }
    }

    /// Finds the reads of globally allocated variables that need no copy: the one user
    /// reads the operand without overwriting it, accepts the register, and no write of
    /// the variable lies between the read and the user. `placed` is the range of the
    /// block's nodes in `walk`'s lists.
    fn find_aliases(&mut self, b: Block, walk: &NodeWalk, placed: std::ops::Range<usize>) {
        let f = self.f;
        let list = &f.blocks[b].nodes;
        // Each node's first position in the block, made when first needed (a search of
        // the list per read made long blocks quadratic).
        let mut positioned = false;
        let first = placed.start;
        for k in placed {
            let (upos, c) = (k - first, &walk.placed[k].constraints);
            for (i, (u, mask)) in walk.operands(k).iter().enumerate() {
                let Op::Read(v) = f.nodes[u.node].op else { continue };
                let Some(Operand::Reg(g)) = self.home[v] else { continue };
                if !c.read_only(i) || !mask.contains(g) {
                    continue;
                }
                if !positioned {
                    self.maps.place_nodes(list);
                    positioned = true;
                }
                let Some(rpos) = self.maps.position(u.node) else { continue };
                if !list[rpos + 1..upos].iter().any(|&m| matches!(f.nodes[m].op, Op::Write(w) if w == v)) {
                    self.maps.aliases.add(u.node);
                }
            }
        }
    }

    /// Records a step of the trace; the text is only made when tracing.
    fn log(&mut self, what: impl FnOnce() -> String) {
        if !self.shared.trace {
            return;
        }
        let s = [self.regs[0].short(), self.regs[1].short(), self.regs[2].short()];
        let what = what();
        self.shared.decisions.push((what, s));
    }

    fn new_slot(&mut self) -> i32 {
        let k = self.shared.free_slots.pop().unwrap_or_else(|| {
            self.shared.next_slot += 1;
            self.shared.next_slot - 1
        });
        -4 * (self.shared.spill_base + 1 + k)
    }

    fn release_slot(&mut self, slot: i32) {
        self.shared.free_slots.push(-slot / 4 - self.shared.spill_base - 1);
    }

    fn take(&mut self, r: Reg, st: RegState) {
        self.shared.used = self.shared.used.with(r);
        self.regs[r.index()] = st;
    }

    /// `get_register`: a free register of `mask`, else a freeable one, else one whose
    /// moveable value is spilled. The caller sets its new state.
    pub fn get_register(&mut self, mask: RegSet) -> Option<Reg> {
        let mask = mask.and(self.pool);
        let pick = |regs: &[RegState; 6], pred: &dyn Fn(RegState) -> bool| mask.iter().find(|r| pred(regs[r.index()]));
        if let Some(r) = pick(&self.regs, &|s| s == RegState::Free) {
            return Some(r);
        }
        if let Some(r) = pick(&self.regs, &|s| matches!(s, RegState::Freeable(_))) {
            return Some(r);
        }
        let r = pick(&self.regs, &|s| matches!(s, RegState::Moveable(_)))?;
        self.spill(r);
        Some(r)
    }

    /// A free or freeable register of `mask`, without spilling anything.
    fn free_register(&self, mask: RegSet) -> Option<Reg> {
        let mask = mask.and(self.pool);
        mask.iter()
            .find(|r| self.regs[r.index()] == RegState::Free)
            .or_else(|| mask.iter().find(|r| matches!(self.regs[r.index()], RegState::Freeable(_))))
    }

    /// `get_register_force`: makes `r` available. A moveable value in it moves to another
    /// free or freeable register of `mask` (preferred, as the seed says), else is spilled.
    /// Sets `r` busy with `value`'s placeholder; the caller puts the value in.
    pub fn get_register_force(&mut self, r: Reg, mask: RegSet) {
        match self.regs[r.index()] {
            RegState::Moveable(u) => match self.free_register(mask.without(r)) {
                Some(to) => self.move_value(u, r, to),
                None => self.spill(r),
            },
            RegState::Freeable(_) | RegState::Free => {}
            s => panic!("get_register_force({r}) on a {s:?} register"),
        }
        self.regs[r.index()] = RegState::Free;
    }

    /// `set_register_freeable`: `r` holds the value of `v`.
    pub fn set_register_freeable(&mut self, r: Reg, v: Var) {
        for s in self.regs.iter_mut() {
            if *s == RegState::Freeable(v) {
                *s = RegState::Free;
            }
        }
        self.regs[r.index()] = RegState::Freeable(v);
    }

    /// `set_register_free`.
    pub fn set_register_free(&mut self, r: Reg) {
        self.regs[r.index()] = RegState::Free;
    }

    /// `will_clobber`: the instruction is about to destroy `r`. A moveable value moves to
    /// a free register outside `avoid` if there is one, else is spilled; afterwards the
    /// register is free.
    pub fn will_clobber(&mut self, r: Reg, avoid: RegSet) {
        if let RegState::Moveable(u) = self.regs[r.index()] {
            match self.free_register(RegSet::ALL.minus(avoid)) {
                Some(to) => self.move_value(u, r, to),
                None => self.spill(r),
            }
        }
        if !matches!(self.regs[r.index()], RegState::Allocated(_)) {
            self.regs[r.index()] = RegState::Free;
        }
    }

    /// `spill`: stores the moveable value of `r` to a fresh slot; `r` becomes free.
    pub fn spill(&mut self, r: Reg) {
        let RegState::Moveable(u) = self.regs[r.index()] else { panic!("spill of a non-moveable {r}") };
        let slot = self.new_slot();
        self.out.push(MInst::Spill { slot, src: r });
        self.maps.set_loc(u, ValLoc::Spilled(slot));
        self.regs[r.index()] = RegState::Free;
        self.shared.stats.spills += 1;
        self.log(|| format!("spill {r}"));
    }

    /// `register_unspill`: reloads spilled `u` into `r`; `r` becomes moveable.
    pub fn register_unspill(&mut self, u: Use, r: Reg) {
        let Some(ValLoc::Spilled(slot)) = self.maps.loc(u) else { panic!("unspill of a value not spilled") };
        self.out.push(MInst::Move { dst: r, src: Operand::Mem(Mem::frame(slot)) });
        self.release_slot(slot);
        self.maps.set_loc(u, ValLoc::Reg(r));
        self.take(r, RegState::Moveable(u));
        self.shared.stats.unspills += 1;
        self.log(|| format!("un-spill {r}"));
    }

    fn move_value(&mut self, u: Use, from: Reg, to: Reg) {
        self.out.push(MInst::Move { dst: to, src: Operand::Reg(from) });
        self.maps.set_loc(u, ValLoc::Reg(to));
        self.regs[from.index()] = RegState::Free;
        self.take(to, RegState::Moveable(u));
        self.shared.stats.moves += 1;
        self.log(|| format!("mov %{from} -> %{to}"));
    }

    /// Places operand `u` in a register of `mask` and marks it busy.
    fn place(&mut self, u: Use, mask: RegSet) -> Result<Reg, RegallocErrorKind> {
        match self.maps.loc(u) {
            // An aliased global variable stays where it is, allocated.
            Some(ValLoc::Reg(r)) if matches!(self.regs[r.index()], RegState::Allocated(_)) => Ok(r),
            Some(ValLoc::Reg(r)) if mask.contains(r) => {
                self.regs[r.index()] = RegState::Busy(u);
                Ok(r)
            }
            Some(ValLoc::Reg(s)) => {
                let r = self.get_register(mask).ok_or(RegallocErrorKind::NoRegisterForOperand(u))?;
                self.move_value(u, s, r);
                self.regs[r.index()] = RegState::Busy(u);
                Ok(r)
            }
            Some(ValLoc::Spilled(_)) => {
                let r = self.get_register(mask).ok_or(RegallocErrorKind::NoRegisterToUnspill(u))?;
                self.register_unspill(u, r);
                self.regs[r.index()] = RegState::Busy(u);
                Ok(r)
            }
            None => Err(RegallocErrorKind::NoLocation(u)),
        }
    }

    /// Allocates node `n`, in the seed's order: an aliased or reused read needs no
    /// instruction; otherwise 1. clobbered registers are emptied, 2. fixed operands are
    /// forced into their registers, 3. the other operands are placed, 4. the instruction
    /// is emitted, 5. its results get registers, and a write or a call updates what the
    /// registers hold.
    fn node(&mut self, n: Node, operands: &[(Use, RegSet)], result_regs: &[ResultReg], c: NodeConstraints) -> Result<(), RegallocErrorKind> {
        if self.alias_or_reuse(n) {
            return Ok(());
        }
        let mut clobbers = c.clobbers;
        for r in result_regs {
            if let ResultReg::Fixed(r) = r {
                clobbers = clobbers.with(*r);
            }
        }
        self.empty_clobbered(operands, clobbers);
        // An array in place when the operands fit in it (always, for what lowering
        // makes: at most four), else a list.
        let (mut in_line, mut listed) = ([None; 4], vec![]);
        let regs_of: &mut [Option<Reg>] = if operands.len() <= in_line.len() {
            &mut in_line[..operands.len()]
        } else {
            listed.resize(operands.len(), None);
            &mut listed
        };
        self.force_fixed_operands(operands, clobbers, regs_of)?;
        self.place_other_operands(operands, regs_of)?;
        // A division also needs `edx` set (by `cdq` or zeroing) before it runs.
        if let Op::Binary(b) = self.f.nodes[n].op {
            if b.can_trap() {
                self.take(Reg::Edx, RegState::Busy(Use::of(n)));
                self.log(|| "set edx".into());
            }
        }
        // 4. The instruction itself, its operands added to the function's list.
        let list = &mut self.shared.operands;
        let start = list.len();
        Homes { f: self.f, home: self.home }.operands_of(n, &mut regs_of.iter().map(|r| r.unwrap()), list);
        let (ops, first) = (Span { start: start as u32, end: list.len() as u32 }, list.get(start).copied());
        for &(u, _) in operands {
            self.maps.remove_loc(u);
        }
        for r in regs_of.iter().flatten() {
            if !matches!(self.regs[r.index()], RegState::Allocated(_)) {
                self.regs[r.index()] = RegState::Free;
            }
        }
        for r in clobbers.and(self.pool).iter() {
            self.regs[r.index()] = RegState::Free;
        }
        let results = self.results(n, result_regs, regs_of)?;
        self.after_effects(n, first);
        let f = self.f;
        // The results' text, made only when tracing (the closure cannot read the list).
        let res_text: Vec<String> = match self.shared.trace {
            true => results.of(&self.shared.results).iter().flatten().map(|r| r.to_string()).collect(),
            false => vec![],
        };
        self.log(|| {
            let lhs = if res_text.is_empty() { String::new() } else { format!("{} = ", res_text.join(", ")) };
            format!("{lhs}{}", f.node_text(n))
        });
        self.out.push(MInst::Node { node: n, ops, results });
        Ok(())
    }

    /// A read of a global variable aliased to its register, or of a memory variable
    /// whose value a register still holds (reused), needs no instruction: true when `n`
    /// is one.
    fn alias_or_reuse(&mut self, n: Node) -> bool {
        let f = self.f;
        // Only reads are aliased or reused: any other node is looked up nowhere.
        let Op::Read(v) = f.nodes[n].op else { return false };
        if self.maps.aliases.contains(n) {
            let Some(Operand::Reg(g)) = self.home[v] else { unreachable!("aliased reads are of globals") };
            self.maps.set_loc(Use::of(n), ValLoc::Reg(g));
            self.out.push(MInst::Alias { node: n, reg: g });
            self.shared.stats.aliased += 1;
            self.log(|| format!("{g} = {} (global)", f.node_text(n)));
            return true;
        }
        let Some(r) = Reg::ALL.into_iter().find(|r| self.regs[r.index()] == RegState::Freeable(v)) else {
            return false;
        };
        if self.used.contains(&Use::of(n)) {
            self.regs[r.index()] = RegState::Moveable(Use::of(n));
            self.maps.set_loc(Use::of(n), ValLoc::Reg(r));
            self.out.push(MInst::Reuse { node: n, reg: r });
            self.shared.stats.reused += 1;
            self.log(|| format!("{r} = {} (reused)", f.node_text(n)));
        }
        true
    }

    /// Step 1: clobbered registers are emptied first (the seed's last example), except
    /// those holding an operand of the node.
    fn empty_clobbered(&mut self, operands: &[(Use, RegSet)], clobbers: RegSet) {
        for r in clobbers.and(self.pool).iter() {
            let is_operand = matches!(self.regs[r.index()], RegState::Moveable(u) if operands.iter().any(|(o, _)| *o == u));
            if !is_operand && !matches!(self.regs[r.index()], RegState::Free) {
                self.will_clobber(r, clobbers);
                self.log(|| format!("will_clobber {r}"));
            }
        }
    }

    /// Step 2: operands whose mask is one register are forced into it; `regs_of` gets the
    /// register of each.
    fn force_fixed_operands(&mut self, operands: &[(Use, RegSet)], clobbers: RegSet, regs_of: &mut [Option<Reg>]) -> Result<(), RegallocErrorKind> {
        for (i, (u, mask)) in operands.iter().enumerate() {
            if mask.len() != 1 {
                continue;
            }
            let r = mask.iter().next().unwrap();
            if self.maps.loc(*u) == Some(ValLoc::Reg(r)) {
                self.regs[r.index()] = RegState::Busy(*u);
            } else {
                if let RegState::Moveable(other) = self.regs[r.index()] {
                    // Another operand may sit here: keep it within its own mask.
                    let m = operands.iter().find(|(o, _)| *o == other).map_or(RegSet::ALL.minus(clobbers), |(_, m)| *m);
                    self.get_register_force(r, m);
                } else {
                    self.get_register_force(r, RegSet::ALL);
                }
                match self.maps.loc(*u) {
                    Some(ValLoc::Reg(s)) => self.move_value(*u, s, r),
                    Some(ValLoc::Spilled(_)) => self.register_unspill(*u, r),
                    None => return Err(RegallocErrorKind::NoLocation(*u)),
                }
                self.regs[r.index()] = RegState::Busy(*u);
                self.log(|| format!("force {r}"));
            }
            regs_of[i] = Some(r);
        }
        Ok(())
    }

    /// Step 3: the other operands, narrowest masks first.
    fn place_other_operands(&mut self, operands: &[(Use, RegSet)], regs_of: &mut [Option<Reg>]) -> Result<(), RegallocErrorKind> {
        // Most nodes have none or one left to place: those need no list.
        let mut left = regs_of.iter().enumerate().filter(|(_, r)| r.is_none()).map(|(i, _)| i);
        let Some(first) = left.next() else { return Ok(()) };
        // Placing an operand makes no busy register anything else (it takes registers
        // of the mask only, which leaves the busy ones out), so the busy set only grows by
        // the register each operand gets.
        let mut busy = self.busy_set();
        let Some(second) = left.next() else {
            regs_of[first] = Some(self.place(operands[first].0, operands[first].1.minus(busy))?);
            return Ok(());
        };
        // The operands left, in an array in place when they fit (as the registers do).
        let (mut in_line, mut listed) = ([first, second, 0, 0], vec![]);
        let order: &mut [usize] = if regs_of.len() <= in_line.len() {
            let mut k = 2;
            for i in left {
                in_line[k] = i;
                k += 1;
            }
            &mut in_line[..k]
        } else {
            listed.extend([first, second].into_iter().chain(left));
            &mut listed
        };
        order.sort_by_key(|&i| operands[i].1.and(self.pool).len());
        for &mut i in order {
            let (u, mask) = operands[i];
            let r = self.place(u, mask.minus(busy))?;
            if matches!(self.regs[r.index()], RegState::Busy(_)) {
                busy = busy.with(r);
            }
            regs_of[i] = Some(r);
        }
        Ok(())
    }

    /// Step 5: a register for each result of `n` something uses (`result_regs`: where
    /// its constraints put them).
    fn results(&mut self, n: Node, result_regs: &[ResultReg], regs_of: &[Option<Reg>]) -> Result<Span, RegallocErrorKind> {
        let start = self.shared.results.len() as u32;
        for (i, rr) in result_regs.iter().enumerate() {
            let val = Use { node: n, result: i as u8 };
            let r = match *rr {
                ResultReg::Fixed(r) => r,
                ResultReg::Tied(k) => regs_of[k].expect("a tied operand is a register"),
                ResultReg::Any(m) => self.get_register(m).ok_or(RegallocErrorKind::NoRegisterForResult(val))?,
            };
            if self.used.contains(&val) {
                self.take(r, RegState::Moveable(val));
                self.maps.set_loc(val, ValLoc::Reg(r));
                self.shared.results.push(Some(r));
            } else {
                self.shared.used = self.shared.used.with(r);
                self.shared.results.push(None);
            }
        }
        Ok(Span { start, end: self.shared.results.len() as u32 })
    }

    /// What the registers hold after `n` (whose first operand is `first`): a write leaves
    /// the register holding the variable's value (freeable); a call forgets what
    /// caller-saved registers held.
    fn after_effects(&mut self, n: Node, first: Option<Operand>) {
        let op = &self.f.nodes[n].op;
        if let Op::Write(v) = *op {
            for s in self.regs.iter_mut() {
                if *s == RegState::Freeable(v) {
                    *s = RegState::Free;
                }
            }
            if let (Some(Operand::Reg(r)), Some(Operand::Mem(_))) = (first, self.home[v]) {
                // Not when the value came from a global variable's own register.
                if !matches!(self.regs[r.index()], RegState::Allocated(_)) {
                    self.set_register_freeable(r, v);
                }
            }
        }
        if matches!(op, Op::Call(_)) {
            for r in RegSet::CALLER_SAVED.iter() {
                if matches!(self.regs[r.index()], RegState::Freeable(_)) {
                    self.set_register_free(r);
                }
            }
        }
    }

    fn busy_set(&self) -> RegSet {
        let mut s = RegSet::NONE;
        for r in Reg::ALL {
            if matches!(self.regs[r.index()], RegState::Busy(_)) {
                s = s.with(r);
            }
        }
        s
    }
}

/// What the emitter's operands of a node are made from: the function and the variables'
/// homes. Apart from the [`LocalAllocator`], so that the operands are appended to the
/// allocator's own list in place (no taking the list out and putting it back per node).
#[derive(Clone, Copy)]
struct Homes<'a> {
    f: &'a LirFunction,
    home: &'a SecondaryMap<Var, Option<Operand>>,
}

impl Homes<'_> {
    /// Appends the operands of `n` for the emitter to `ops`, consuming the registers of
    /// its register operands in [`register_operands`] order. Not itself recursive, so
    /// that it is made part of [`LocalAllocator::node`]; a fused compare's operands come
    /// from [`Homes::contained_operands_of`].
    #[inline]
    fn operands_of(self, n: Node, regs: &mut impl Iterator<Item = Reg>, ops: &mut Vec<Operand>) {
        self.operands_of_args(n, regs, ops, |h, m, regs, ops| h.contained_operands_of(m, regs, ops));
    }

    /// [`Homes::operands_of`] of a contained compare (recursive).
    fn contained_operands_of(self, n: Node, regs: &mut impl Iterator<Item = Reg>, ops: &mut Vec<Operand>) {
        self.operands_of_args(n, regs, ops, |h, m, regs, ops| h.contained_operands_of(m, regs, ops));
    }

    /// The loop of [`Homes::operands_of`]; `fused` appends a contained compare's
    /// operands.
    #[inline]
    fn operands_of_args<I: Iterator<Item = Reg>>(
        self,
        n: Node,
        regs: &mut I,
        ops: &mut Vec<Operand>,
        fused: impl Fn(Self, Node, &mut I, &mut Vec<Operand>),
    ) {
        let f = self.f;
        for &a in &f.nodes[n].args {
            let d = &f.nodes[a.node];
            if !d.contained {
                ops.push(Operand::Reg(regs.next().expect("a register per register operand")));
                continue;
            }
            match d.op {
                Op::Const(k) => ops.push(Operand::Imm(k as i32)),
                Op::Read(v) => ops.push(self.home[v].expect("every variable has a home")),
                Op::CfRead { var, offset } => {
                    let disp = CALLFRAME_BASE + CALLFRAME_SLOT * var.as_u32() + offset;
                    ops.push(Operand::Mem(Mem { base: None, index: None, disp: disp as i32 }));
                }
                Op::Addr { has_base, scale, disp } => {
                    let base = has_base.then(|| Base::Reg(regs.next().unwrap()));
                    let index = (scale != 0).then(|| (regs.next().unwrap(), scale));
                    ops.push(Operand::Mem(Mem { base, index, disp }));
                }
                Op::Cmp { .. } => fused(self, a.node, regs, ops),
                ref o => panic!("contained {o:?}"),
            }
        }
    }
}

impl MInst {
    /// The instruction of `alloc` as the allocation listing prints it (one line).
    pub fn text(&self, f: &LirFunction, alloc: &Allocation) -> String {
        match self {
            MInst::Move { dst, src } => format!("mov {dst}, {src}"),
            MInst::Spill { slot, src } => format!("spill {}, {src}", Operand::Mem(Mem::frame(*slot))),
            MInst::Reuse { node, reg } => format!("{reg} = {} (reused)   ; {node}", f.node_text(*node)),
            MInst::Alias { node, reg } => format!("{reg} = {} (global, not copied)   ; {node}", f.node_text(*node)),
            MInst::Node { node, ops, results } => {
                let res: Vec<String> = results.of(&alloc.results).iter().map(|r| r.map_or("_".into(), |r| r.to_string())).collect();
                let lhs = if res.is_empty() { String::new() } else { format!("{} = ", res.join(", ")) };
                let ops: Vec<String> = ops.of(&alloc.operands).iter().map(|o| o.to_string()).collect();
                format!("{lhs}{} {}   ; {node}", op_name(&f.nodes[*node].op), ops.join(", "))
            }
        }
    }
}

impl Allocation {
    /// The allocated code as text, one instruction per line.
    pub fn print(&self, f: &LirFunction) -> String {
        let mut s = f.header();
        for (v, r) in &self.globals {
            s += &format!("    ; {v} %{} in {r}\n", f.var_name(*v));
        }
        let saves: Vec<String> = self.saved.iter().map(|(r, _)| r.to_string()).collect();
        let saves = if saves.is_empty() { "nothing".to_string() } else { saves.join(" ") };
        s += &format!("    ; frame {} bytes, saves {saves}\n", self.frame_bytes);
        for &b in &f.layout {
            s += &format!("{b}:\n");
            for i in &self.code[b] {
                s += &format!("    {}\n", i.text(f, self));
            }
        }
        s += "}\n";
        s
    }
}
