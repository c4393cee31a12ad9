//! Lowering: the LIR to the shapes x86 instructions take
//! (`seeds/removing-embedded-statements.md`, "3.ii. Lowering" and "6. Remove contained
//! nodes from the LIR's execution order").
//!
//! The pass walks each block in execution order and
//! * turns the address of every load and store into an x86 address mode
//!   `[base + index * scale + disp]` (a contained [`Op::Addr`] node);
//! * contains constants as immediates, and variable and callframe reads as memory (or
//!   global register) operands where the instruction accepts them and no write of the
//!   variable (for the callframe: no write of it and no helper call) lies between the
//!   read and its user;
//! * fuses a compare into the branch or `trapif` that uses it;
//! * moves helper-call arguments into [`Op::Arg`] stores placed right before the call,
//!   once every argument has been evaluated (nested calls use the same area);
//! * drops constants and reads whose value is unused.
//!
//! Contained nodes leave the linear order and hang under their one user. The fixed
//! registers (`cl` for shift counts, `edx:eax` for `div`/`idiv` and the wide multiply,
//! `eax`/`edx:eax` for call and return values), the two-address form (a result tied to
//! the register of the operand the instruction overwrites) and the clobbers (`eax ecx
//! edx` for calls) are the [`constraints`] of each lowered node, which the register
//! allocator obeys.

use smallvec::{smallvec, SmallVec};

use super::lir::*;
use super::x86::{Reg, RegSet};
use crate::ir::{BinOp, MemWidth};

/// What lowering did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LowerStats {
    /// Loads and stores given an address mode with more than a bare base register.
    pub address_modes: usize,
    /// Constants contained as immediates.
    pub immediates: usize,
    /// Variable reads contained as memory operands.
    pub memory_operands: usize,
    /// Compares fused into a branch or check.
    pub fused_compares: usize,
    /// Helper-call arguments turned into outgoing-argument stores.
    pub call_args: usize,
    /// Unused constants and reads dropped.
    pub dead: usize,
}

/// Lowers `f` in place.
pub fn lower(f: &mut LirFunction) -> LowerStats {
    let mut stats = LowerStats::default();
    // Per block: the nodes an address mode absorbed, the nodes some node uses, and each
    // live node's position in the block's live list.
    let (mut dropped, mut used) = (BlockNodeSet::with_nodes(f.nodes.len()), BlockNodeSet::with_nodes(f.nodes.len()));
    let mut positions: BlockNodeMap<u32> = BlockNodeMap::with_nodes(f.nodes.len());
    let layout = f.layout.clone();
    for b in layout {
        let mut list = std::mem::take(&mut f.blocks[b].nodes);
        // Helper-call arguments become outgoing stores right before the call.
        if list.iter().any(|&n| matches!(f.nodes[n].op, Op::Call(_))) {
            let mut with_args = Vec::with_capacity(list.len() + 4);
            for &n in &list {
                if matches!(f.nodes[n].op, Op::Call(_)) {
                    let args = std::mem::take(&mut f.nodes[n].args);
                    for (i, a) in args.into_iter().enumerate() {
                        stats.call_args += 1;
                        let s = f.add_node(Op::Arg { offset: 4 * i as u32 }, crate::ir::Type::I32, 0, smallvec![a]);
                        with_args.push(s);
                    }
                }
                with_args.push(n);
            }
            list = with_args;
        }
        dropped.next_block();
        // Address modes.
        for &n in &list {
            if matches!(f.nodes[n].op, Op::Load { .. } | Op::Store { .. }) {
                let a = f.nodes[n].args[0];
                let addr = address_mode(f, a, &mut dropped, &mut stats);
                f.nodes[n].args[0] = Use::of(addr);
            }
        }
        // Compare fusion.
        for &n in &list {
            if matches!(f.nodes[n].op, Op::Branch { .. } | Op::TrapIf(_)) {
                let c = f.nodes[n].args[0].node;
                if matches!(f.nodes[c].op, Op::Cmp { .. }) && !dropped.contains(c) {
                    f.nodes[c].contained = true;
                    stats.fused_compares += 1;
                }
            }
        }
        // Immediates and memory operands (the block's list becomes its live nodes, in
        // place).
        let mut live = list;
        live.retain(|&n| !dropped.contains(n) && !f.nodes[n].contained);
        positions.next_block();
        for (pos, &n) in live.iter().enumerate().rev() {
            // The first position of each node (a node is in the list once).
            positions.insert(n, pos as u32);
        }
        for (pos, &n) in live.iter().enumerate() {
            contain_operands(f, &live, &positions, pos, n, &mut stats);
        }
        // Unused constants and reads.
        used.next_block();
        for &n in &live {
            collect_uses(f, n, &mut used);
        }
        live.retain(|&n| {
            if f.nodes[n].contained {
                return false;
            }
            let dead = matches!(f.nodes[n].op, Op::Const(_) | Op::Read(_)) && !used.contains(n);
            stats.dead += usize::from(dead);
            !dead
        });
        f.blocks[b].nodes = live;
    }
    stats
}

/// Adds the nodes `n` uses to `used`, and those its contained arguments use. Not itself
/// recursive, so that it is made part of [`lower`] (it runs for every live node); a
/// contained argument's uses come from [`collect_contained_uses`].
#[inline]
fn collect_uses(f: &LirFunction, n: Node, used: &mut BlockNodeSet) {
    for a in &f.nodes[n].args {
        used.add(a.node);
        if f.nodes[a.node].contained {
            collect_contained_uses(f, a.node, used);
        }
    }
}

/// [`collect_uses`] of a contained node, out of line (recursive through it: a compare's
/// contained operands).
#[inline(never)]
fn collect_contained_uses(f: &LirFunction, n: Node, used: &mut BlockNodeSet) {
    collect_uses(f, n, used);
}

fn const_of(f: &LirFunction, u: Use) -> Option<i64> {
    match f.nodes[u.node].op {
        Op::Const(v) if !f.nodes[u.node].contained => Some(v),
        _ => None,
    }
}

/// Builds the contained address-mode node for address value `a`: a constant is a bare
/// displacement; `add(x, k)` adds `k` to the displacement of `x`'s mode; `add(x, y)` is
/// `base + index`, with `shl(i, s)` (`s` in 0..=3) on either side as a scaled index.
fn address_mode(f: &mut LirFunction, a: Use, dropped: &mut BlockNodeSet, stats: &mut LowerStats) -> Node {
    let mut base: Option<Use> = None;
    let mut index: Option<(Use, u8)> = None;
    let mut disp: i64 = 0;
    let mut cur = a;
    let is_add = |f: &LirFunction, u: Use| matches!(f.nodes[u.node].op, Op::Binary(BinOp::Add)) && !f.nodes[u.node].contained;
    if let Some(k) = const_of(f, cur) {
        dropped.add(cur.node);
        disp = k;
    } else {
        if is_add(f, cur) {
            if let Some(k) = const_of(f, f.nodes[cur.node].args[1]) {
                dropped.add(cur.node);
                dropped.add(f.nodes[cur.node].args[1].node);
                disp = k;
                cur = f.nodes[cur.node].args[0];
            }
        }
        if is_add(f, cur) {
            dropped.add(cur.node);
            let (x, y) = (f.nodes[cur.node].args[0], f.nodes[cur.node].args[1]);
            let scaled = |f: &LirFunction, u: Use| -> Option<(Use, u8)> {
                if !matches!(f.nodes[u.node].op, Op::Binary(BinOp::Shl)) {
                    return None;
                }
                let s = const_of(f, f.nodes[u.node].args[1])?;
                (0..=3).contains(&s).then(|| (f.nodes[u.node].args[0], 1u8 << s))
            };
            if let Some(k) = const_of(f, y) {
                dropped.add(y.node);
                base = Some(x);
                disp = disp.wrapping_add(k);
            } else if let Some((i, s)) = scaled(f, y) {
                dropped.add(y.node);
                dropped.add(f.nodes[y.node].args[1].node);
                base = Some(x);
                index = Some((i, s));
            } else if let Some((i, s)) = scaled(f, x) {
                dropped.add(x.node);
                dropped.add(f.nodes[x.node].args[1].node);
                base = Some(y);
                index = Some((i, s));
            } else {
                base = Some(x);
                index = Some((y, 1));
            }
        } else {
            base = Some(cur);
        }
    }
    if disp != 0 || index.is_some() || base.is_none() {
        stats.address_modes += 1;
    }
    let mut args = Args::new();
    args.extend(base);
    args.extend(index.map(|(i, _)| i));
    let op = Op::Addr { has_base: base.is_some(), scale: index.map_or(0, |(_, s)| s), disp: disp as i32 };
    let n = f.add_node(op, crate::ir::Type::I32, 1, args);
    f.nodes[n].contained = true;
    n
}

/// What an argument position accepts besides a register.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Accepts {
    Reg,
    Imm,
    Rm,
    ImmRm,
}

/// The containment each argument position of a lowered node accepts.
fn accepts(op: &Op, i: usize) -> Accepts {
    use Accepts::*;
    match (op, i) {
        (Op::Binary(BinOp::Add | BinOp::Sub | BinOp::And | BinOp::Or | BinOp::Xor | BinOp::Mul), 1) => ImmRm,
        (Op::Binary(BinOp::Shl | BinOp::Lshr | BinOp::Ashr), 1) => Imm,
        (Op::Binary(_), 1) => Rm,
        (Op::AddLo | Op::AddHi | Op::SubLo | Op::SubHi, 1) => ImmRm,
        (Op::Cmp { .. }, 1) => ImmRm,
        (Op::Shld | Op::Shrd, 2) => Imm,
        (Op::MulWide, 1) => Rm,
        (Op::CmpPair(_), 2 | 3) => ImmRm,
        (Op::Store { .. }, 1) => Imm,
        (Op::Write(_) | Op::CfWrite { .. } | Op::Arg { .. }, 0) => Imm,
        _ => Reg,
    }
}

/// Contains the arguments of `n`, at position `pos` of the block's `live` nodes, that
/// its instruction accepts as immediates or memory operands (`positions`: each live
/// node's position). Not itself recursive, so that it is made part of [`lower`] (it runs
/// for every live node); a fused compare's operands are contained by
/// [`contain_fused_operands`].
#[inline(always)]
fn contain_operands(f: &mut LirFunction, live: &[Node], positions: &BlockNodeMap<u32>, pos: usize, n: Node, stats: &mut LowerStats) {
    let position = |m: Node| positions.get(m).map(|&at| at as usize);
    // The arguments are read by index, not copied: containing marks other nodes, never
    // changes the arguments of `n`.
    for i in 0..f.nodes[n].args.len() {
        let a = f.nodes[n].args[i];
        let d = &f.nodes[a.node];
        if d.contained {
            if matches!(d.op, Op::Cmp { .. }) {
                contain_fused_operands(f, live, positions, pos, a.node, stats);
            }
            continue;
        }
        let acc = accepts(&f.nodes[n].op, i);
        match d.op {
            Op::Const(_) if matches!(acc, Accepts::Imm | Accepts::ImmRm) => {
                f.nodes[a.node].contained = true;
                stats.immediates += 1;
            }
            Op::Read(v) if matches!(acc, Accepts::Rm | Accepts::ImmRm) => {
                let Some(def_pos) = position(a.node) else { continue };
                let written = live[def_pos + 1..pos].iter().any(|&m| matches!(f.nodes[m].op, Op::Write(w) if w == v));
                if !written {
                    f.nodes[a.node].contained = true;
                    stats.memory_operands += 1;
                }
            }
            // A callframe read becomes an absolute memory operand when no callframe
            // write of it and no helper call (which may write the callframe) intervenes.
            Op::CfRead { var, offset } if matches!(acc, Accepts::Rm | Accepts::ImmRm) => {
                let Some(def_pos) = position(a.node) else { continue };
                let written = live[def_pos + 1..pos].iter().any(|&m| {
                    matches!(f.nodes[m].op, Op::Call(_)) || matches!(f.nodes[m].op, Op::CfWrite { var: w, offset: o } if w == var && o == offset)
                });
                if !written {
                    f.nodes[a.node].contained = true;
                    stats.memory_operands += 1;
                }
            }
            _ => {}
        }
    }
}

/// [`contain_operands`] of a compare fused into `n`, out of line (recursive through it).
#[inline(never)]
fn contain_fused_operands(f: &mut LirFunction, live: &[Node], positions: &BlockNodeMap<u32>, pos: usize, n: Node, stats: &mut LowerStats) {
    contain_operands(f, live, positions, pos, n, stats);
}

/// Where a result must be placed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ResultReg {
    /// In this register.
    Fixed(Reg),
    /// In the register of register operand `i` (two-address form).
    Tied(usize),
    /// In any register of the set.
    Any(RegSet),
}

/// The register constraints of a lowered node: its in-line (register) operands in the
/// order the allocator sees them, each with the registers it may occupy; the registers
/// the instruction clobbers; and where each result goes. Both lists are kept in line
/// (no allocation for the few operands and results an instruction has), since the
/// allocator and its checker make them for every node.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Constraints {
    pub operands: SmallVec<[(Use, RegSet); 4]>,
    /// Which operands the instruction only reads (see [`Constraints::read_only`]).
    read_only: ReadOnly,
    pub clobbers: RegSet,
    pub results: SmallVec<[ResultReg; 2]>,
}

impl Constraints {
    /// Whether the instruction only reads its register operand `i` (it may then sit in a
    /// register the global allocator owns, since nothing overwrites it).
    pub fn read_only(&self, i: usize) -> bool {
        self.read_only.contains(i)
    }
}

/// The register operands an instruction only reads: all, one, or none (the shapes
/// [`read_only`] gives), kept without a list per node.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
enum ReadOnly {
    All,
    One(u8),
    #[default]
    None,
}

impl ReadOnly {
    /// The shape of [`read_only`] for `op`, from its first two operands (it decides every
    /// later one as it decides the second, unless all are read-only).
    fn of(op: &Op) -> ReadOnly {
        match (read_only(op, 0), read_only(op, 1)) {
            (true, true) => ReadOnly::All,
            (true, false) => ReadOnly::One(0),
            (false, true) => ReadOnly::One(1),
            (false, false) => ReadOnly::None,
        }
    }

    fn contains(self, i: usize) -> bool {
        match self {
            ReadOnly::All => true,
            ReadOnly::One(k) => i == k as usize,
            ReadOnly::None => false,
        }
    }
}

/// The register operands of `n`: its in-line arguments, and those of its contained
/// arguments, in argument order.
pub fn register_operands(f: &LirFunction, n: Node) -> Vec<Use> {
    let mut v = vec![];
    each_register_operand(f, n, &mut |u| v.push(u));
    v
}

/// Calls `visit` on each register operand of `n`, in the order of [`register_operands`].
/// Not itself recursive, so that it is made part of its callers (it runs for every node
/// the allocator places); a contained argument's operands come from
/// [`each_contained_register_operand`].
#[inline]
fn each_register_operand(f: &LirFunction, n: Node, visit: &mut impl FnMut(Use)) {
    for &a in &f.nodes[n].args {
        if f.nodes[a.node].contained {
            each_contained_register_operand(f, a.node, visit);
        } else {
            visit(a);
        }
    }
}

/// [`each_register_operand`] of a contained node (recursive: an address mode or a
/// compare inside it).
fn each_contained_register_operand(f: &LirFunction, n: Node, visit: &mut impl FnMut(Use)) {
    for &a in &f.nodes[n].args {
        if f.nodes[a.node].contained {
            each_contained_register_operand(f, a.node, visit);
        } else {
            visit(a);
        }
    }
}

/// The constraints of lowered node `n` (see [`Constraints`]).
pub fn constraints(f: &LirFunction, n: Node) -> Constraints {
    let mut c = Constraints::default();
    constraints_into(f, n, &mut c);
    c
}

/// The constraints of lowered node `n`, written over `c`: the allocator makes them for
/// every node, in places it keeps from block to block, with no copy of the lists.
pub fn constraints_into(f: &LirFunction, n: Node, c: &mut Constraints) {
    let d = &f.nodes[n];
    c.operands.clear();
    each_register_operand(f, n, &mut |u| c.operands.push((u, RegSet::ALL)));
    c.results.clear();
    c.clobbers = fixed_registers(f, n, &mut c.operands, &mut c.results);
    c.read_only = ReadOnly::of(&d.op);
    debug_assert!((0..c.operands.len()).all(|i| self::read_only(&d.op, i) == c.read_only.contains(i)));
}

/// The constraints of a node whose operand and result lists are kept apart, in the
/// register allocator's flat lists of a whole function ([`constraints_onto`]): the
/// registers the instruction clobbers and which operands it only reads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct NodeConstraints {
    pub clobbers: RegSet,
    read_only: ReadOnly,
}

impl NodeConstraints {
    /// As [`Constraints::read_only`].
    pub fn read_only(&self, i: usize) -> bool {
        self.read_only.contains(i)
    }
}

/// The constraints of lowered node `n` appended to flat lists: its register operands with
/// their masks to `operands` and where its results go to `results`, exactly as
/// [`constraints_into`] makes them; `contained` is called on each contained node met in
/// the walk over its operands (the allocator weighs their variable reads there, so the
/// function's nodes are walked once).
#[inline]
pub fn constraints_onto(
    f: &LirFunction,
    n: Node,
    operands: &mut Vec<(Use, RegSet)>,
    results: &mut Vec<ResultReg>,
    contained: &mut impl FnMut(Node),
) -> NodeConstraints {
    let start = operands.len();
    each_contained_operand(f, n, operands, contained);
    let clobbers = fixed_registers(f, n, &mut operands[start..], results);
    let read_only = ReadOnly::of(&f.nodes[n].op);
    debug_assert!((0..operands.len() - start).all(|i| self::read_only(&f.nodes[n].op, i) == read_only.contains(i)));
    NodeConstraints { clobbers, read_only }
}

/// The register operands of node `n` for [`constraints_onto`], those of its contained
/// operands in place. Not itself recursive, so that it is made part of its caller (the
/// allocator's walk runs it for every linear node); a contained argument's operands come
/// from [`each_operand_of_contained`].
#[inline]
fn each_contained_operand(f: &LirFunction, n: Node, operands: &mut Vec<(Use, RegSet)>, contained: &mut impl FnMut(Node)) {
    for &a in &f.nodes[n].args {
        if f.nodes[a.node].contained {
            contained(a.node);
            each_operand_of_contained(f, a.node, operands, contained);
        } else {
            operands.push((a, RegSet::ALL));
        }
    }
}

/// [`each_contained_operand`] of a contained node, out of line (recursive: an address
/// mode or a compare inside it).
#[inline(never)]
fn each_operand_of_contained(f: &LirFunction, n: Node, operands: &mut Vec<(Use, RegSet)>, contained: &mut impl FnMut(Node)) {
    each_contained_operand(f, n, operands, contained);
}

/// What the instruction of lowered node `n` overwrites whatever the allocator chose: the
/// registers it clobbers and those its results are fixed to, as in its [`constraints`]
/// but without the operand list and the other results, which the allocation checker
/// takes from the instruction itself (it replays the operands the allocator chose).
pub fn kills(f: &LirFunction, n: Node) -> RegSet {
    let mut fixed = FixedResults(RegSet::NONE);
    let clobbers = fixed_registers(f, n, &mut [], &mut fixed);
    clobbers.union(fixed.0)
}

/// Where [`fixed_registers`] puts the placement of each result.
trait ResultSink {
    fn push(&mut self, r: ResultReg);
}

impl ResultSink for SmallVec<[ResultReg; 2]> {
    fn push(&mut self, r: ResultReg) {
        SmallVec::push(self, r);
    }
}

impl ResultSink for Vec<ResultReg> {
    fn push(&mut self, r: ResultReg) {
        Vec::push(self, r);
    }
}

/// The registers results are fixed to ([`kills`]), with no list.
struct FixedResults(RegSet);

impl ResultSink for FixedResults {
    fn push(&mut self, r: ResultReg) {
        if let ResultReg::Fixed(r) = r {
            self.0 = self.0.with(r);
        }
    }
}

/// What the instruction of `n` fixes: the masks of its first register operands (in
/// argument order, set in `operands`; the rest take any register), the registers it
/// clobbers (returned), and where its results are (pushed on `results`).
fn fixed_registers(f: &LirFunction, n: Node, operands: &mut [(Use, RegSet)], results: &mut impl ResultSink) -> RegSet {
    let d = &f.nodes[n];
    let any = RegSet::ALL;
    let eax = RegSet::of(Reg::Eax);
    let edx = RegSet::of(Reg::Edx);
    let ecx = RegSet::of(Reg::Ecx);
    let edx_eax = eax.with(Reg::Edx);
    // Masks for the in-line arguments by argument index (contained arguments expand to
    // their own register operands, which take `any`), given to the first operands in
    // turn; a mask without an operand is dropped.
    let mut masks = FirstMasks { operands, given: 0 };
    let mut clobbers = RegSet::NONE;
    let inline = |i: usize| !f.nodes[d.args[i].node].contained;
    match &d.op {
        Op::Binary(BinOp::Shl | BinOp::Lshr | BinOp::Ashr) => {
            masks.push(any.without(Reg::Ecx));
            if inline(1) {
                masks.push(ecx);
            }
            results.push(ResultReg::Tied(0));
        }
        Op::Binary(b) if b.can_trap() => {
            masks.push(eax);
            if inline(1) {
                masks.push(any.minus(edx_eax));
            }
            clobbers = edx_eax;
            results.push(ResultReg::Fixed(if matches!(b, BinOp::Sdiv | BinOp::Udiv) { Reg::Eax } else { Reg::Edx }));
        }
        Op::Shld | Op::Shrd => {
            masks.push(any.without(Reg::Ecx));
            masks.push(any.without(Reg::Ecx));
            if inline(2) {
                masks.push(ecx);
            }
            results.push(ResultReg::Tied(0));
        }
        Op::MulWide => {
            masks.push(eax);
            if inline(1) {
                masks.push(any.minus(edx_eax));
            }
            clobbers = edx_eax;
            results.push(ResultReg::Fixed(Reg::Eax));
            results.push(ResultReg::Fixed(Reg::Edx));
        }
        Op::Cmp { .. } => {
            masks.push(RegSet::BYTE);
            results.push(ResultReg::Tied(0));
        }
        Op::CmpPair(_) => {
            masks.push(any);
            masks.push(RegSet::BYTE);
            results.push(ResultReg::Tied(1));
        }
        Op::Select => {
            results.push(ResultReg::Tied(2));
        }
        Op::Store { width: MemWidth::W8 } => {
            // The address mode's registers come first, then the value.
            let mut naddr = 0;
            each_register_operand(f, d.args[0].node, &mut |_| naddr += 1);
            for _ in 0..naddr {
                masks.push(any);
            }
            masks.push(RegSet::BYTE);
        }
        Op::Call(_) => {
            clobbers = RegSet::CALLER_SAVED;
            let n = d.results;
            if n >= 1 {
                results.push(ResultReg::Fixed(Reg::Eax));
            }
            if n >= 2 {
                results.push(ResultReg::Fixed(Reg::Edx));
            }
        }
        Op::Return => {
            masks.push(eax);
            masks.push(edx);
        }
        Op::Unary(_) | Op::Binary(_) | Op::AddLo | Op::AddHi | Op::SubLo | Op::SubHi => {
            results.push(ResultReg::Tied(0));
        }
        _ => {
            for _ in 0..d.results {
                results.push(ResultReg::Any(any));
            }
        }
    }
    clobbers
}

/// The masks [`fixed_registers`] gives, written to the first operands in turn.
struct FirstMasks<'a> {
    operands: &'a mut [(Use, RegSet)],
    given: usize,
}

impl FirstMasks<'_> {
    fn push(&mut self, mask: RegSet) {
        if let Some(o) = self.operands.get_mut(self.given) {
            o.1 = mask;
        }
        self.given += 1;
    }
}

/// Whether the instruction `op` only reads its register operand `i` (see
/// [`Constraints::read_only`]).
fn read_only(op: &Op, i: usize) -> bool {
    match op {
        Op::Store { .. }
        | Op::Load { .. }
        | Op::Arg { .. }
        | Op::Write(_)
        | Op::CfWrite { .. }
        | Op::Branch { .. }
        | Op::TrapIf(_)
        | Op::Switch { .. } => true,
        Op::CmpPair(_) => i == 0,
        Op::Shld | Op::Shrd | Op::MulWide => i == 1,
        Op::Binary(b) => b.can_trap() && i == 1,
        _ => false,
    }
}
