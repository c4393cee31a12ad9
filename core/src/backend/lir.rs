//! The backend IR (LIR): per block, one linear sequence of nodes with no statements and
//! no embedded statements (`seeds/removing-embedded-statements.md`, "Approach").
//!
//! Nodes live in an arena ([`LirFunction::nodes`]); the execution order of a block is the
//! separate list [`LirBlock::nodes`], so a pass inserts or removes nodes without
//! renumbering. An edge from a node to one of its arguments is a [`Use`] of a
//! single-def single-use (SDSU) temporary; it carries dataflow only, never ordering.
//! Values that are read more than once are written to a [`Var`] and read back.
//!
//! After lowering, a node may be *contained* (seed section 6): it is then absent from the
//! linear order and is referenced only by the one node that contains it (an immediate,
//! a memory operand, an address mode or a compare fused into a branch).
//!
//! [`validate`] checks the four properties of the seed's "Add utilities for working with
//! LIR" section after every backend pass: the linear threading is loop-free, every SDSU
//! temp is singly used, every def occurs before its use, and every used def is present
//! (in the linear order or as a contained node of its one user).

use cranelift_entity::packed_option::PackedOption;
use cranelift_entity::{entity_impl, EntityRef, PrimaryMap, SecondaryMap};
use crate::hash::HashMap;
use smallvec::SmallVec;
use std::fmt;
use std::sync::Arc;

use crate::abi::RuntimeHelper;
use crate::ir::{BinOp, Block, CfVar, CmpOp, ConvOp, MemWidth, Type, UnOp};

/// A LIR node.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node(u32);
entity_impl!(Node, "n");

/// A map over a function's nodes that holds the entries of one block at a time: an entry
/// counts only while its mark is the current block's, so [`BlockNodeMap::next_block`]
/// empties the map without touching it. The backend's passes keep their per-block data
/// in these instead of a hash map made per block (they run on every function compiled).
pub struct BlockNodeMap<V: Clone> {
    mark: u32,
    of: SecondaryMap<Node, (u32, Option<V>)>,
}

/// A set of nodes of one block at a time (see [`BlockNodeMap`]).
pub type BlockNodeSet = BlockNodeMap<()>;

impl BlockNodeSet {
    pub fn add(&mut self, n: Node) {
        self.insert(n, ());
    }
}

impl<V: Clone> Default for BlockNodeMap<V> {
    fn default() -> Self {
        Self::with_nodes(0)
    }
}

impl<V: Clone> BlockNodeMap<V> {
    /// An empty map with room for `nodes` nodes (none grows one by one); call
    /// [`BlockNodeMap::next_block`] before each block.
    pub fn with_nodes(nodes: usize) -> Self {
        let mut of = SecondaryMap::new();
        of.resize(nodes);
        // Mark 0 is what every untouched entry holds: no block has it.
        BlockNodeMap { mark: 0, of }
    }

    /// Empties the map for the next block.
    pub fn next_block(&mut self) {
        self.mark += 1;
    }

    pub fn get(&self, n: Node) -> Option<&V> {
        let (mark, v) = &self.of[n];
        if *mark == self.mark {
            v.as_ref()
        } else {
            None
        }
    }

    pub fn get_mut(&mut self, n: Node) -> Option<&mut V> {
        let (mark, v) = &mut self.of[n];
        if *mark == self.mark {
            v.as_mut()
        } else {
            None
        }
    }

    pub fn contains(&self, n: Node) -> bool {
        self.get(n).is_some()
    }

    pub fn insert(&mut self, n: Node, v: V) {
        self.of[n] = (self.mark, Some(v));
    }

    /// Takes the entry of `n` out of the map.
    pub fn remove(&mut self, n: Node) -> Option<V> {
        let (mark, v) = &mut self.of[n];
        if *mark == self.mark {
            v.take()
        } else {
            None
        }
    }

    /// The entry of `n`, made with `make` if the block has none.
    pub fn get_or_insert_with(&mut self, n: Node, make: impl FnOnce() -> V) -> &mut V {
        let mark = self.mark;
        let entry = &mut self.of[n];
        if entry.0 != mark || entry.1.is_none() {
            *entry = (mark, Some(make()));
        }
        entry.1.as_mut().expect("just set")
    }
}

/// A LIR variable: a HIR local (or one half of an `i64` local) or a backend temporary.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Var(u32);
entity_impl!(Var, "v");

/// One result of a node used as an argument: `n5` or `n5.1` for a second result.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Use {
    pub node: Node,
    pub result: u8,
}

impl Use {
    /// The first (usually only) result of `node`.
    pub fn of(node: Node) -> Use {
        Use { node, result: 0 }
    }
}

impl fmt::Display for Use {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.result == 0 {
            write!(f, "{}", self.node)
        } else {
            write!(f, "{}.{}", self.node, self.result)
        }
    }
}

/// Where a variable's value lives before register allocation decides otherwise.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum VarKind {
    /// A parameter: its home is the incoming argument at `[ebp + 8 + offset]`.
    Param { offset: u32 },
    /// A HIR local other than a parameter; it starts at zero.
    Local,
    /// A backend temporary, always written before it is read within one block.
    Temp,
}

/// What a variable is called in the printed LIR. The text is made only when printed
/// ([`LirFunction::var_name`]), so a compile that prints nothing builds no names.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum VarName {
    /// The HIR local of this index (its name in [`LirFunction::local_names`]).
    Local(u32),
    /// The low half of an `i64` local (`x.lo`).
    Lo(u32),
    /// The high half of an `i64` local (`x.hi`).
    Hi(u32),
    /// A backend temporary, called after its own index (`t7` for `v7`).
    Temp,
}

/// A variable's declaration.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct VarData {
    pub name: VarName,
    pub ty: Type,
    pub kind: VarKind,
}

/// The operation of a node. Which operations may appear depends on the stage: the
/// `i64` forms only before decomposition, the pair forms only after it, `Addr` and
/// `Arg` only after lowering.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Op {
    /// A constant of the node's type.
    Const(i64),
    /// Reads a variable.
    Read(Var),
    /// Writes its one argument to a variable.
    Write(Var),
    Unary(UnOp),
    Binary(BinOp),
    /// Compares two arguments of the operand type `ty`; yields `i32` 0/1.
    Cmp { op: CmpOp, ty: Type },
    /// A width conversion (before decomposition only).
    Convert(ConvOp),
    /// `(cond, if_true, if_false)`.
    Select,
    /// Loads from the address argument.
    Load { width: MemWidth, signed: bool },
    /// Stores `(address, value)`.
    Store { width: MemWidth },
    /// Reads the callframe variable's dword at byte `offset` (0, or 4 for an `i64` high half).
    CfRead { var: CfVar, offset: u32 },
    /// Writes its argument to the callframe variable's dword at byte `offset`.
    CfWrite { var: CfVar, offset: u32 },
    /// Calls a runtime helper; yields 0, 1 or 2 (`lo`, `hi`) results.
    Call(RuntimeHelper),
    /// Traps with `Check(code)` if the argument is non-zero.
    TrapIf(u32),
    /// `add` of low halves that produces the carry for the [`Op::AddHi`] right after it.
    AddLo,
    /// `adc` of high halves.
    AddHi,
    /// `sub` of low halves that produces the borrow for the [`Op::SubHi`] right after it.
    SubLo,
    /// `sbb` of high halves.
    SubHi,
    /// `shld hi, lo, count`: `(hi, lo, count)` yields the new high half.
    Shld,
    /// `shrd lo, hi, count`: `(lo, hi, count)` yields the new low half.
    Shrd,
    /// Unsigned 32x32 to 64 multiply: `(a, b)` yields `(lo, hi)`.
    MulWide,
    /// A 64-bit compare of `(alo, ahi, blo, bhi)` by `cmp`/`sbb`; `op` is one of
    /// `slt sge ult uge`.
    CmpPair(CmpOp),
    /// An address mode `[base + index * scale + disp]` (contained, after lowering):
    /// the arguments are the base if `has_base`, then the index if `scale != 0`.
    Addr { has_base: bool, scale: u8, disp: i32 },
    /// Stores its argument to the outgoing argument area at `[esp + offset]`.
    Arg { offset: u32 },
    Jump(Block),
    /// Goes to `then_dest` if the argument is non-zero.
    Branch { then_dest: Block, else_dest: Block },
    /// Returns its argument(s): one, or `(lo, hi)` after decomposition of an `i64`.
    Return,
    /// Goes to the first case equal to the argument(s), else to `default`. The cases
    /// are a boxed slice, not a `Vec`: a `Vec`'s capacity would hold the operation's
    /// tag (its spare values are the other operations), which made every match on an
    /// operation decode it; with a box the tag is a field of its own.
    Switch { default: Block, cases: Box<[(i64, Block)]> },
}

impl Op {
    /// Whether the node ends a block.
    pub fn is_terminator(&self) -> bool {
        matches!(self, Op::Jump(_) | Op::Branch { .. } | Op::Return | Op::Switch { .. })
    }

    /// Whether the node has an effect or may trap, so it can never be dropped or moved.
    pub fn has_side_effect(&self) -> bool {
        match self {
            Op::Write(_)
            | Op::Store { .. }
            | Op::CfWrite { .. }
            | Op::Call(_)
            | Op::TrapIf(_)
            | Op::Arg { .. }
            | Op::AddLo
            | Op::SubLo => true,
            Op::Binary(b) => b.can_trap(),
            o => o.is_terminator(),
        }
    }
}

/// A node's argument edges, in line: no node has more than four and few more than two,
/// so building, cloning and dropping a function's nodes allocates nothing per node.
pub type Args = SmallVec<[Use; 3]>;

/// A node: operation, result type, number of results and argument edges.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct NodeData {
    pub op: Op,
    /// The type of the results (meaningless when `results == 0`).
    pub ty: Type,
    /// How many values the node defines (0, 1 or 2).
    pub results: u8,
    pub args: Args,
    /// Absent from the linear order, part of its one user (after lowering).
    pub contained: bool,
}

/// A block: its nodes in execution order; the last one is the terminator.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct LirBlock {
    pub nodes: Vec<Node>,
}

/// A function in LIR.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LirFunction {
    pub name: String,
    /// The HIR result type (an `i64` is returned as two dwords after decomposition).
    pub ret: Type,
    /// Bytes of incoming arguments.
    pub arg_bytes: u32,
    pub vars: PrimaryMap<Var, VarData>,
    /// The names of the HIR locals by index, shared by every stage of one function;
    /// empty when the function is compiled without printing
    /// ([`super::rationalize::rationalize_with`]).
    pub local_names: Arc<[String]>,
    /// Types of the callframe variables by index.
    pub cfvars: Vec<Type>,
    pub nodes: PrimaryMap<Node, NodeData>,
    pub blocks: SecondaryMap<Block, LirBlock>,
    pub layout: Vec<Block>,
    /// Set once decomposition has run: every value is then 32 bits wide.
    pub decomposed: bool,
}

thread_local! {
    /// Node arenas of this thread's finished functions, emptied, for the next function's
    /// passes ([`node_arena`], [`LirFunction::recycle`]). A default program's arena is
    /// often above the fixed mmap threshold of the long-running commands
    /// (`measure::memory::return_large_blocks` in the harness), so a fresh arena per
    /// pass was mapped, faulted in page by page, copied as it grew and unmapped again for
    /// every function compiled. At most [`SPARE_ARENAS`] are kept, none that held more than
    /// [`SPARE_ARENA_NODES`] nodes, so what a thread keeps is bounded whatever it compiles.
    static SPARE: std::cell::RefCell<Vec<PrimaryMap<Node, NodeData>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Arenas a thread keeps for reuse: rationalization's and decomposition's.
const SPARE_ARENAS: usize = 2;
/// The most nodes an arena kept for reuse held (64 bytes a node: 512 KiB; about one
/// function in 200 of the `mix` profile has more). A kept arena's resident pages are
/// those its largest function wrote, so this bound is also what a thread's arenas
/// grow to, and they reach it within a campaign's first minute: with a bound as rare as
/// the largest functions, they crept up for the whole hour as larger ones came (issue 23).
const SPARE_ARENA_NODES: usize = 1 << 13;

/// An empty node arena: one this thread recycled when there is one, else a new one.
pub fn node_arena() -> PrimaryMap<Node, NodeData> {
    SPARE.with(|s| s.borrow_mut().pop()).unwrap_or_default()
}

impl LirFunction {
    /// Gives the function's node arena, emptied, to this thread's next [`node_arena`].
    pub fn recycle(self) {
        let mut nodes = self.nodes;
        // An arena grows by doubling from at most its length, so one kept only while
        // its length is at most the bound holds at most twice the bound.
        if nodes.len() > SPARE_ARENA_NODES {
            return;
        }
        nodes.clear();
        SPARE.with(|s| {
            let mut spare = s.borrow_mut();
            if spare.len() < SPARE_ARENAS {
                spare.push(nodes);
            }
        });
    }

    /// Adds a node to the arena (not to any block).
    pub fn add_node(&mut self, op: Op, ty: Type, results: u8, args: Args) -> Node {
        self.nodes.push(NodeData { op, ty, results, args, contained: false })
    }

    /// Adds a variable.
    pub fn add_var(&mut self, name: VarName, ty: Type, kind: VarKind) -> Var {
        self.vars.push(VarData { name, ty, kind })
    }

    /// The name of `v` as the LIR text prints it (after a `%`).
    pub fn var_name(&self, v: Var) -> String {
        // Without the names (rationalized for no printing), a local is named by its index.
        let local = |k: u32| self.local_names.get(k as usize).cloned().unwrap_or_else(|| format!("local{k}"));
        match self.vars[v].name {
            VarName::Local(k) => local(k),
            VarName::Lo(k) => format!("{}.lo", local(k)),
            VarName::Hi(k) => format!("{}.hi", local(k)),
            VarName::Temp => format!("t{}", v.index()),
        }
    }

    /// Every node of the function in layout order, contained nodes included (each right
    /// before its user, children first).
    pub fn all_nodes(&self) -> Vec<Node> {
        let mut v = vec![];
        for &b in &self.layout {
            for &n in &self.blocks[b].nodes {
                self.push_contained(n, &mut v);
                v.push(n);
            }
        }
        v
    }

    fn push_contained(&self, n: Node, out: &mut Vec<Node>) {
        for a in &self.nodes[n].args {
            if self.nodes[a.node].contained {
                self.push_contained(a.node, out);
                out.push(a.node);
            }
        }
    }

    /// Number of nodes in linear order over all blocks.
    pub fn linear_len(&self) -> usize {
        self.layout.iter().map(|&b| self.blocks[b].nodes.len()).sum()
    }
}

/// A property of the seed the LIR breaks.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LirError {
    pub block: Block,
    pub node: Option<Node>,
    pub message: String,
}

impl fmt::Display for LirError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.node {
            Some(n) => write!(f, "{} {}: {}", self.block, n, self.message),
            None => write!(f, "{}: {}", self.block, self.message),
        }
    }
}

/// Checks the seed's four properties, plus the shape rules the backend relies on:
/// each block ends in exactly one terminator, flag producers (`AddLo`, `SubLo`) are
/// immediately followed by their consumer, and after decomposition every value is `i32`.
/// Returns every violation found.
pub fn validate(f: &LirFunction) -> Result<(), Vec<LirError>> {
    let mut v = Validator::new(f);
    // The decomposition rules' findings of the block, reported after its other ones
    // (each node is checked once, in the same walk).
    let mut wide = vec![];
    for (ordinal, &b) in f.layout.iter().enumerate() {
        let nodes = &f.blocks[b].nodes;
        let mark = ordinal as u32 + 1;
        for (i, &n) in nodes.iter().enumerate() {
            let data = &f.nodes[n];
            v.placement(b, nodes, i, n, data);
            v.arguments(b, nodes, n, data, mark);
            v.marks[n.index()].defined_in = mark;
            if f.decomposed {
                decomposed(b, n, data, &mut wide);
            }
        }
        if nodes.is_empty() {
            v.err(b, None, || "empty block".into());
        }
        v.errs.append(&mut wide);
    }
    if v.errs.is_empty() {
        Ok(())
    } else {
        Err(v.errs)
    }
}

/// The state of one [`validate`] call: what it knows of each node in one vector indexed
/// by node (the validator runs after every backend pass; one entry a node, so a node's
/// facts share a cache line), and the users of results past the second in a map.
struct Validator<'f> {
    f: &'f LirFunction,
    errs: Vec<LirError>,
    marks: Vec<NodeMarks>,
    other_users: HashMap<Use, Node>,
    stack: Vec<Node>,
}

/// What [`validate`] knows of one node.
#[derive(Clone, Copy)]
struct NodeMarks {
    /// The user of each of results 0 and 1.
    users: [PackedOption<Node>; 2],
    /// The block it is defined in, if it was met in the linear order: the block's ordinal
    /// plus one.
    defined_in: u32,
    /// Whether it was seen in any block, in the linear order or contained.
    seen_anywhere: bool,
}

impl<'f> Validator<'f> {
    fn new(f: &'f LirFunction) -> Validator<'f> {
        let count = f.nodes.len();
        Validator {
            f,
            errs: vec![],
            marks: vec![NodeMarks { users: [PackedOption::default(); 2], defined_in: 0, seen_anywhere: false }; count],
            other_users: HashMap::default(),
            stack: vec![],
        }
    }

    /// Records a finding at `node` of `block`, with the message `message` makes: a cold
    /// call, so that the checks under every argument leave the formatting out of their
    /// loop (formatted where they failed, it took room and registers there).
    #[cold]
    #[inline(never)]
    fn err(&mut self, block: Block, node: Option<Node>, message: impl FnOnce() -> String) {
        self.errs.push(LirError { block, node, message: message() });
    }

    /// Property 1 (the linear threading is loop-free: no node appears twice, in this
    /// block or in any other) and the shape rules for the `i`-th node of block `b`: not
    /// contained, a terminator exactly at the end, a flag producer right before its
    /// consumer.
    fn placement(&mut self, b: Block, nodes: &[Node], i: usize, n: Node, data: &NodeData) {
        let f = self.f;
        if std::mem::replace(&mut self.marks[n.index()].seen_anywhere, true) {
            self.err(b, Some(n), || "appears twice in the linear order (the threading has a loop)".into());
        }
        if data.contained {
            self.err(b, Some(n), || "is contained but present in the linear order".into());
        }
        let is_last = i + 1 == nodes.len();
        if data.op.is_terminator() != is_last {
            let m = if is_last { "the block does not end in a terminator" } else { "terminator before the end of the block" };
            self.err(b, Some(n), || m.into());
        }
        if matches!(data.op, Op::AddLo | Op::SubLo) {
            let next = nodes.get(i + 1).map(|&m| &f.nodes[m].op);
            let want = if data.op == Op::AddLo { Op::AddHi } else { Op::SubHi };
            if next != Some(&want) {
                self.err(b, Some(n), || format!("{:?} is not immediately followed by its {:?}", data.op, want));
            }
        }
    }

    /// Properties 2-4 on every argument of `n` (whose data is `data`), looking through
    /// contained nodes: the result exists, each temp is used once, and a non-contained
    /// argument is defined earlier in this block (`mark`).
    fn arguments(&mut self, b: Block, nodes: &[Node], n: Node, data: &NodeData, mark: u32) {
        let f = self.f;
        // The arguments of `n`, then those of each contained node met (kept on the
        // stack, which is empty between calls).
        let (mut user, mut args) = (n, &data.args[..]);
        loop {
            for &u in args {
                let arg = &f.nodes[u.node];
                if u.result >= arg.results {
                    self.err(b, Some(user), || format!("uses {u}, which has no such result"));
                }
                // The argument's marks, read and set at once; the findings follow.
                let marks = &mut self.marks[u.node.index()];
                let prev = match marks.users.get_mut(u.result as usize) {
                    Some(slot) => std::mem::replace(slot, user.into()).expand(),
                    None => self.other_users.insert(u, user),
                };
                let seen_before = arg.contained && std::mem::replace(&mut marks.seen_anywhere, true);
                let defined_here = marks.defined_in == mark;
                if let Some(prev) = prev {
                    self.err(b, Some(user), || format!("uses {u}, already used by {prev} (temps must be singly used)"));
                }
                if arg.contained {
                    if seen_before {
                        self.err(b, Some(user), || format!("contains {}, which is also elsewhere", u.node));
                    }
                    self.stack.push(u.node);
                } else if !defined_here {
                    if nodes.contains(&u.node) {
                        self.err(b, Some(user), || format!("uses {u} before its def"));
                    } else {
                        self.err(b, Some(user), || format!("uses {u}, whose def is not in this block's linear order"));
                    }
                }
            }
            match self.stack.pop() {
                Some(next) => (user, args) = (next, &f.nodes[next].args[..]),
                None => break,
            }
        }
    }

}

/// After decomposition every value is `i32` and no 64-bit operation is left: the
/// findings at node `n` (its data `d`) of block `b` go to `errs`.
fn decomposed(b: Block, n: Node, d: &NodeData, errs: &mut Vec<LirError>) {
    if d.results > 0 && d.ty != Type::I32 {
        errs.push(LirError { block: b, node: Some(n), message: "an i64 value after decomposition".into() });
    }
    if matches!(d.op, Op::Convert(_) | Op::Cmp { ty: Type::I64, .. }) {
        errs.push(LirError { block: b, node: Some(n), message: "a 64-bit operation after decomposition".into() });
    }
}

impl fmt::Display for LirFunction {
    /// The linear dump: one node per line, contained nodes printed inside their user.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.header())?;
        for &b in &self.layout {
            writeln!(f, "{b}:")?;
            for &n in &self.blocks[b].nodes {
                let d = &self.nodes[n];
                let lhs = match d.results {
                    0 => String::new(),
                    1 => format!("{n}:{} = ", d.ty),
                    _ => format!("{n}, {n}.1:{} = ", d.ty),
                };
                writeln!(f, "    {lhs}{}", self.node_text(n))?;
            }
        }
        writeln!(f, "}}")
    }
}

impl LirFunction {
    /// The first lines of every printed stage: the signature and the variables.
    pub fn header(&self) -> String {
        let mut s = format!("lir %{} -> {} {{\n", self.name, self.ret);
        for (v, d) in &self.vars {
            let kind = match d.kind {
                VarKind::Param { offset } => format!("param +{offset}"),
                VarKind::Local => "local".into(),
                VarKind::Temp => "temp".into(),
            };
            s += &format!("    {v}: {} %{} ({kind})\n", d.ty, self.var_name(v));
        }
        s
    }

    /// The text of a node's operation and arguments (contained arguments inline).
    pub fn node_text(&self, n: Node) -> String {
        let d = &self.nodes[n];
        let name = op_name(&d.op);
        let args: Vec<String> = d
            .args
            .iter()
            .map(|u| if self.nodes[u.node].contained { format!("[{}]", self.node_text(u.node)) } else { u.to_string() })
            .collect();
        if args.is_empty() {
            name
        } else {
            format!("{name} {}", args.join(", "))
        }
    }
}

/// The mnemonic of an operation with its immediate fields.
pub fn op_name(op: &Op) -> String {
    match op {
        Op::Const(v) => format!("const {v}"),
        Op::Read(v) => format!("read {v}"),
        Op::Write(v) => format!("write {v}"),
        Op::Unary(u) => u.name().into(),
        Op::Binary(b) => b.name().into(),
        Op::Cmp { op, ty } => format!("cmp.{}.{ty}", op.name()),
        Op::Convert(c) => c.name().into(),
        Op::Select => "select".into(),
        Op::Load { width, signed } => format!("load{}{}", width.bits(), if *signed { "s" } else { "u" }),
        Op::Store { width } => format!("store{}", width.bits()),
        Op::CfRead { var, offset } => format!("cfread {var}+{offset}"),
        Op::CfWrite { var, offset } => format!("cfwrite {var}+{offset}"),
        Op::Call(h) => format!("call {h}"),
        Op::TrapIf(c) => format!("trapif {c}"),
        Op::AddLo => "add.lo".into(),
        Op::AddHi => "add.hi".into(),
        Op::SubLo => "sub.lo".into(),
        Op::SubHi => "sub.hi".into(),
        Op::Shld => "shld".into(),
        Op::Shrd => "shrd".into(),
        Op::MulWide => "mulwide".into(),
        Op::CmpPair(c) => format!("cmppair.{}", c.name()),
        Op::Addr { has_base, scale, disp } => {
            format!("addr base={} scale={scale} disp={disp}", if *has_base { "yes" } else { "no" })
        }
        Op::Arg { offset } => format!("arg +{offset}"),
        Op::Jump(b) => format!("jump {b}"),
        Op::Branch { then_dest, else_dest } => format!("branch {then_dest}, {else_dest}"),
        Op::Return => "ret".into(),
        Op::Switch { default, cases } => {
            let cs: Vec<String> = cases.iter().map(|(k, b)| format!("{k}: {b}")).collect();
            format!("switch default {default}, [{}]", cs.join(", "))
        }
    }
}
