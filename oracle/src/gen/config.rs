//! The generator's knobs: size and ratio limits in one [`Config`] with defaults and
//! named [`Profile`]s, and the swarm-testing feature set ([`Feature`], [`FeatureSet`]).
//!
//! Invariants: every limit is a hard bound the generator never exceeds (`max_blocks`,
//! `max_expr_depth`, ...), and `fuel_budget` stays well under the interpreter's default
//! fuel, so that a generated run can never run out of fuel (the generator counts an upper
//! bound of the nodes every statement evaluates, multiplied by the enclosing trip counts).
//! Swarm testing (Groce et al., "Swarm testing", ISSTA 2012): each program turns on a
//! random subset of [`Feature::ALL`], so that features that crowd each other out in one
//! big program get programs of their own.

use std::fmt;

/// One thing a program may contain. Swarm testing turns each on or off per program.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Feature {
    /// 64-bit values: `i64` locals, parameters, callframe variables, conversions.
    I64,
    /// `mul`.
    Mul,
    /// `and`, `or`, `xor`, `not`.
    Bitwise,
    /// Shifts by constant amounts (including amounts at or beyond the width).
    Shift,
    /// Shifts by amounts computed at run time (the `cl` constraint of x86).
    VarShift,
    /// The four divisions, guarded most of the time.
    Div,
    /// Comparisons as values (not only as branch conditions).
    Cmp,
    Select,
    Convert,
    /// Heap loads.
    Load,
    /// Heap stores.
    Store,
    /// Callframe variables, `cfread` and `cfwrite`.
    CfVars,
    /// The helper `log`.
    Log,
    Log64,
    CfTrace,
    CfSet,
    HeapRmw,
    Mix,
    Mix64,
    /// `trapif` checks.
    TrapIf,
    /// Comma nodes inside expressions.
    Comma,
    /// Assignments nested inside expressions (in the first operand of a comma).
    NestedAssign,
    If,
    Loop,
    /// Loops inside loops.
    NestedLoop,
    Switch,
    /// `ret` from inside a branch.
    EarlyReturn,
    /// Break- and continue-like exits from loops.
    LoopExit,
    /// Loops with two entries (irreducible flow).
    Irreducible,
    /// Shapes that stress SSA construction: many joins, duplicate edges.
    SsaStress,
    /// Policy: the same expression on several paths (`ssapre.txt`).
    Redundancy,
    /// Policy: loop-invariant expressions, loads and stores.
    LoopInvariant,
    /// Policy: single-use temporaries next to copies and constants (`tree-mover.txt`).
    TreeMover,
    /// Policy: repeated callframe accesses (`callframe-data-motion.md`).
    CfMotion,
    /// Policy: repeated heap accesses with aliasing accesses in between.
    HeapMotion,
    /// Policy: many values live at once.
    RegPressure,
}

impl Feature {
    pub const ALL: [Feature; 36] = [
        Feature::I64,
        Feature::Mul,
        Feature::Bitwise,
        Feature::Shift,
        Feature::VarShift,
        Feature::Div,
        Feature::Cmp,
        Feature::Select,
        Feature::Convert,
        Feature::Load,
        Feature::Store,
        Feature::CfVars,
        Feature::Log,
        Feature::Log64,
        Feature::CfTrace,
        Feature::CfSet,
        Feature::HeapRmw,
        Feature::Mix,
        Feature::Mix64,
        Feature::TrapIf,
        Feature::Comma,
        Feature::NestedAssign,
        Feature::If,
        Feature::Loop,
        Feature::NestedLoop,
        Feature::Switch,
        Feature::EarlyReturn,
        Feature::LoopExit,
        Feature::Irreducible,
        Feature::SsaStress,
        Feature::Redundancy,
        Feature::LoopInvariant,
        Feature::TreeMover,
        Feature::CfMotion,
        Feature::HeapMotion,
        Feature::RegPressure,
    ];

    /// The features that are optimization policies (turned off together in a share of
    /// programs).
    pub const POLICIES: [Feature; 6] = [
        Feature::Redundancy,
        Feature::LoopInvariant,
        Feature::TreeMover,
        Feature::CfMotion,
        Feature::HeapMotion,
        Feature::RegPressure,
    ];

    fn bit(self) -> u64 {
        1 << (self as u64)
    }
}

/// A set of features, as a bit set (iteration follows [`Feature::ALL`], so it is stable).
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct FeatureSet(u64);

impl FeatureSet {
    /// Every feature.
    pub fn all() -> FeatureSet {
        let mut s = FeatureSet::default();
        for f in Feature::ALL {
            s.insert(f);
        }
        s
    }

    pub fn contains(self, f: Feature) -> bool {
        self.0 & f.bit() != 0
    }

    pub fn insert(&mut self, f: Feature) {
        self.0 |= f.bit();
    }

    pub fn remove(&mut self, f: Feature) {
        self.0 &= !f.bit();
    }
}

impl fmt::Display for FeatureSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> =
            Feature::ALL.iter().filter(|x| self.contains(**x)).map(|x| format!("{x:?}")).collect();
        f.write_str(&names.join(" "))
    }
}

/// Size and ratio limits of the generator. Ratios are in per-mille.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Config {
    /// Parameters of the generated function: `0..=max_params`.
    pub max_params: u32,
    /// Ordinary assignable locals besides parameters: `1..=max_vars`.
    pub max_vars: u32,
    /// Callframe variables: `0..=max_cfvars` (when [`Feature::CfVars`] is on).
    pub max_cfvars: u32,
    /// No structure is started once the function has this many blocks.
    pub max_blocks: u32,
    /// Items (statements, structures, policy clusters) per region: `1..=max_region_items`.
    pub max_region_items: u32,
    /// Nesting of structures (if, loop, switch) inside each other.
    pub max_nesting: u32,
    /// Nesting of loops.
    pub max_loop_depth: u32,
    /// Upper bound of a loop's trip count.
    pub max_trip_count: u32,
    /// Depth of generated expression trees.
    pub max_expr_depth: u32,
    /// An upper bound of the interpreter fuel one run may use; kept far below the default
    /// fuel so that generated programs always terminate in time.
    pub fuel_budget: u64,
    /// Runs (argument/heap/callframe sets) per case.
    pub runs_per_case: u32,
    /// Whether each program draws a random subset of features.
    pub swarm: bool,
    /// Under swarm testing, the chance that a feature is on.
    pub feature_permille: u32,
    /// The share of programs with every policy turned off.
    pub policies_off_permille: u32,
    /// The share of divisions left unguarded (they may trap).
    pub unguarded_div_permille: u32,
    /// The chance that a `trapif` check is meant to fire sometimes (otherwise it is a
    /// range check on a value that rarely fails it).
    pub trap_check_permille: u32,
    /// Added to the weight of loops (when they are on).
    pub loop_bias: u32,
    /// Added to the weights of heap and callframe accesses and of the memory policies
    /// (when they are on).
    pub memory_bias: u32,
    /// Whether the function is written in SSA form with crossing phi arguments
    /// ([`super::ssa`]); loops, branches and the SSA-stress shapes are then always on.
    pub ssa_form: bool,
    /// Otherwise, the share of programs written in that SSA form all the same: the only
    /// programs whose phis form the chains and cycles (swaps, rotations) that
    /// `ssa-destroy`'s copy sequentializer must order, which no pass makes from HIR.
    pub ssa_form_permille: u32,
    /// The chance that a local leaf reads a local assigned and not read since, and that
    /// the return value reads each such local (liveness-driven generation).
    pub anchor_permille: u32,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            max_params: 4,
            max_vars: 6,
            max_cfvars: 4,
            max_blocks: 48,
            max_region_items: 6,
            max_nesting: 4,
            max_loop_depth: 3,
            max_trip_count: 8,
            max_expr_depth: 4,
            fuel_budget: 200_000,
            runs_per_case: 3,
            swarm: true,
            feature_permille: 700,
            policies_off_permille: 150,
            unguarded_div_permille: 15,
            trap_check_permille: 100,
            loop_bias: 0,
            memory_bias: 0,
            ssa_form: false,
            ssa_form_permille: 0,
            anchor_permille: 800,
        }
    }
}

/// Named configurations.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Profile {
    /// Small functions, for reduction-friendly findings and quick property tests.
    Small,
    /// The default mix.
    Default,
    /// Deeper loop nests, more loop policies.
    Loops,
    /// Many callframe and heap accesses.
    Memory,
    /// Functions in SSA form whose phis' arguments cross (swaps, rotations, lost copies,
    /// copies of copies, phis of phis), checked from SSA.
    Ssa,
}

impl Profile {
    pub const ALL: [Profile; 5] = [Profile::Small, Profile::Default, Profile::Loops, Profile::Memory, Profile::Ssa];

    pub fn name(self) -> &'static str {
        match self {
            Profile::Small => "small",
            Profile::Default => "default",
            Profile::Loops => "loops",
            Profile::Memory => "memory",
            Profile::Ssa => "ssa",
        }
    }

    pub fn from_name(name: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The configuration of this profile.
    pub fn config(self) -> Config {
        let d = Config::default();
        match self {
            // A fifth of the default mix in SSA form: campaigns on the default profile
            // then reach ssa-destroy's copy cycles.
            Profile::Default => Config { ssa_form_permille: 200, ..d },
            Profile::Small => Config {
                max_params: 2,
                max_vars: 3,
                max_cfvars: 2,
                max_blocks: 12,
                max_region_items: 3,
                max_nesting: 2,
                max_loop_depth: 1,
                max_trip_count: 4,
                max_expr_depth: 3,
                fuel_budget: 20_000,
                ..d
            },
            Profile::Loops => Config {
                max_blocks: 64,
                max_nesting: 5,
                max_loop_depth: 4,
                max_trip_count: 10,
                loop_bias: 8,
                ..d
            },
            Profile::Memory => Config { max_cfvars: 6, max_vars: 4, memory_bias: 8, ..d },
            Profile::Ssa => Config { max_vars: 8, loop_bias: 4, ssa_form: true, ..d },
        }
    }
}

/// Per-program weights of what the generator picks (YARPGen's parameter shuffling):
/// drawn afresh for every program so that programs differ in their mix, not only in
/// their details. A weight of 0 means the feature is off. The lists are arrays, so the
/// generator's per-choice copy (with some weights zeroed) allocates nothing.
#[derive(Clone, Debug)]
pub struct Weights {
    /// Region items, indexed by `Item`.
    pub items: [u32; 12],
    /// Expression kinds, indexed by `ExprKind`.
    pub exprs: [u32; 12],
    /// Statement kinds, indexed by `StmtKind`.
    pub stmts: [u32; 10],
    /// Binary operators in [`tandem_core::ir::BinOp::ALL`] order.
    pub binops: [u32; tandem_core::ir::BinOp::ALL.len()],
    /// Share of `i64` among newly chosen types.
    pub i64_permille: u32,
    /// Share of region items that end an arm with an exit.
    pub exit_permille: u32,
}
