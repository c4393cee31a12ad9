//! The policy clusters of the generator: short statement sequences (and small diamonds)
//! shaped to make one optimization fire, each a method of [`Gen`] called as a region
//! item. They follow the seeds:
//! * [`Gen::redundancy`]: full and partial redundancy of `ssapre.txt` ("FullRedundancy1",
//!   "FullRedundancy2", "PartialRedundancy"), and a variant killed on one path;
//! * [`Gen::tree_mover`]: a single-use local defined by a tree, a copy and a constant
//!   next to it, then a redefinition that makes the move "safe" (`tree-mover.txt`,
//!   "Base logic" and the ACT states);
//! * [`Gen::cf_motion`] and [`Gen::heap_motion`]: LOAD-LOAD, STORE-LOAD, LOAD-STORE,
//!   STORE-STORE (dead STORE) of `callframe-data-motion.md` ("Types of optimization to
//!   be considered") with a helper call, an aliasing access or nothing in between
//!   ([`Gen::between`]); the loop-invariant LOAD and STORE shapes are made by the loop
//!   generator, which freezes what the loop must not touch;
//! * [`Gen::reg_pressure`]: many values live at once, across a call.
//!
//! The invariants of the parent module hold here too: every tree placed is well typed,
//! heap addresses come from [`Gen::addr`], and locals frozen by an enclosing loop are
//! never assigned (fresh temporaries are used instead).

use super::*;

/// The test of a top-tested loop made by a policy: given the counter and the trip count.
type LoopTest<'a, G> = &'a mut dyn FnMut(&mut G, Local, i64) -> Expr;

/// How an access reads a place: the type it produces, its width, whether it sign-extends.
type Read = (Type, MemWidth, bool);

/// Nodes [`Gen::nest_writing_outside`] evaluates at most, counted at the mult of the block
/// it starts in: three loops of up to 3 rounds, the inner ones' tails (entry, increment,
/// test) run up to 9 and 27 times, which each loop's own fit test does not see.
const NEST_NODES: u64 = 800;

impl<S: Source> Gen<'_, S> {

    /// `slt(c, n)`: a small loop's test of its counter `c` against its round count.
    fn counter_below(&mut self, c: Local, n: i64) -> Expr {
        let c = self.local(c);
        let n = self.konst(Type::I32, n);
        self.cmp(CmpOp::Slt, c, n)
    }

    /// The same pure expression on several paths: full and partial redundancy.
    pub(super) fn redundancy(&mut self) {
        let ty = self.ty();
        self.pure_mode = true;
        let e = self.expr(ty, 3);
        self.pure_mode = false;
        let t1 = self.new_temp(ty);
        let mode = self.below(4);
        match mode {
            // Straight-line: the same expression twice.
            0 => {
                self.note("redundancy straight-line");
                let s = self.assign(t1, e);
                self.push(s);
                if self.chance(300) {
                    let s = self.stmt(2);
                    self.push(s);
                }
                let e2 = self.f.clone_tree(e);
                let t2 = self.new_temp(ty);
                let s = self.assign(t2, e2);
                self.push(s);
            }
            // A diamond with the expression in one or both arms and after the join.
            _ => {
                self.note(["", "redundancy full (both arms)", "redundancy partial (one arm)", "redundancy killed on one arm"][mode as usize]);
                let c = self.cond(1);
                let then_b = self.create_block();
                let else_b = self.create_block();
                let join = self.create_block();
                self.seal(Terminator::Branch { cond: c, then_dest: then_b, else_dest: else_b });
                self.enter(then_b);
                let s = self.assign(t1, e);
                self.push(s);
                self.seal(Terminator::Jump(join));
                self.enter(else_b);
                if mode == 1 {
                    let e2 = self.f.clone_tree(e);
                    let s = self.assign(t1, e2);
                    self.push(s);
                } else if mode == 3 {
                    // Kill an operand on this path: not redundant here.
                    let s = self.stmt(2);
                    self.push(s);
                }
                self.seal(Terminator::Jump(join));
                self.enter(join);
                let e3 = self.f.clone_tree(e);
                let t2 = self.new_temp(ty);
                let s = self.assign(t2, e3);
                self.push(s);
            }
        }
        self.templates.push(e);
        self.vars.push(t1);
    }

    /// `%t = tree; %c = %t; %k = const; %u = op(%c, %k); ...; %t = tree2`, or (a share
    /// of the time) the linked pattern of [`Gen::tree_mover_linked`].
    pub(super) fn tree_mover(&mut self) {
        if self.chance(350) {
            self.tree_mover_linked();
            return;
        }
        let ty = self.ty();
        // Half of the trees are movable for sure; the others may hold a division, a call
        // or a comma that keeps them in place. The tree is built before `%t` exists, so
        // it does not read `%t`.
        let e = if self.chance(500) { self.movable(ty, 3) } else { self.expr(ty, 3) };
        let t = self.new_temp(ty);
        let s = self.assign(t, e);
        self.push(s);
        let mut used = t;
        self.note("tree-mover single-use tree");
        let mut copy = None;
        if self.chance(600) {
            self.note("tree-mover copy");
            let c = self.new_temp(ty);
            let l = self.local(t);
            let s = self.assign(c, l);
            self.push(s);
            used = c;
            copy = Some(c);
            if self.chance(500) {
                // Nothing else reads the copy, so no block reads it before assigning it
                // (the tree mover's [X] flag stays clear) and forwarding can succeed.
                self.make_unreadable(c);
            }
        }
        let k = self.new_temp(ty);
        let v = self.pick(&INTERESTING[..14]);
        let kc = self.konst(ty, v);
        let s = self.assign(k, kc);
        self.push(s);
        if self.chance(300) {
            // Something in between that may block the move (an effect, or a
            // redefinition of an operand of the tree).
            let s = self.stmt(2);
            self.push(s);
        }
        let u = self.new_temp(ty);
        let a = self.local(used);
        let b = self.local(k);
        let op = self.pick(&[BinOp::Add, BinOp::Sub, BinOp::Xor, BinOp::Mul, BinOp::And]);
        let x = self.bin(op, a, b);
        let s = self.assign(u, x);
        self.push(s);
        if self.chance(700) {
            self.note("tree-mover redefinition");
            let e2 = self.expr(ty, 2);
            let s = self.assign(t, e2);
            self.push(s);
            if let Some(c) = copy.filter(|_| self.chance(300)) {
                // The copy read again once it no longer stands for `%t`: tree forwarding
                // through it must be refused.
                self.note("tree-mover copy read after the redefinition");
                let w = self.new_temp(ty);
                let l = self.local(c);
                let k = self.constant(ty);
                let x = self.bin(BinOp::Add, l, k);
                let s = self.assign(w, x);
                self.push(s);
            }
        }
        self.vars.push(u);
        if self.chance(500) {
            self.vars.push(t);
        }
    }

    /// A tree that moves into another tree that moves too, where an operand of the first
    /// is redefined while the second waits for its use (`tree-mover.txt`, "indirect tree
    /// moves" and linked moves):
    ///
    /// ```text
    /// %a = e0; %t = op(%a, e1); %u = op(%t, e2); %a = e3; %w = op(%u, %a); %t = e4; %u = e5
    /// ```
    ///
    /// `%a` moves into `%t`'s tree (indirect once `%t` moves too); the redefinition of `%a`
    /// links `%t`'s move with `%u`'s (moving both would carry the old `%a` past its
    /// redefinition), so one of them is rejected; the redefinitions of `%t` and `%u` make
    /// their moves safe. The trees are pure and cannot trap, so that they are movable;
    /// every expression is built before the temporaries exist, so none reads them.
    pub(super) fn tree_mover_linked(&mut self) {
        self.note("tree-mover linked");
        let ty = self.ty();
        let e0 = self.movable(ty, 2);
        let [e1, e2, e3] = [(); 3].map(|_| self.movable(ty, 1));
        let [e4, e5] = [(); 2].map(|_| self.expr(ty, 1));
        const OPS: [BinOp; 4] = [BinOp::Add, BinOp::Sub, BinOp::Xor, BinOp::Mul];
        let a = self.define(e0);
        let (la, op) = (self.local(a), self.pick(&OPS));
        let x = self.bin(op, la, e1);
        let t = self.define(x);
        let (lt, op) = (self.local(t), self.pick(&OPS));
        let x = self.bin(op, lt, e2);
        let u = self.define(x);
        self.set(a, e3);
        let (lu, la) = (self.local(u), self.local(a));
        let x = self.bin(BinOp::Add, lu, la);
        let w = self.define(x);
        self.set(t, e4);
        self.set(u, e5);
        self.vars.push(w);
        if self.chance(500) {
            self.vars.push(u);
        }
    }

    /// The statement `l = value`.
    fn set(&mut self, l: Local, value: Expr) {
        let s = self.assign(l, value);
        self.push(s);
    }

    /// A fresh temporary defined by the statement `t = value`.
    fn define(&mut self, value: Expr) -> Local {
        let t = self.new_temp(self.ty_of(value));
        self.set(t, value);
        t
    }

    /// A tree the tree mover may move: no side effect and no possible trap (no
    /// division, call, comma or assignment), over locals, callframe reads and constants.
    /// With `depth` above 0 the root is an operator, so the tree is a proper tree (not a
    /// copy or a constant).
    fn movable(&mut self, ty: Type, depth: u32) -> Expr {
        if depth == 0 {
            return self.leaf(ty);
        }
        let sub = |g: &mut Self| if g.chance(300) { g.leaf(ty) } else { g.movable(ty, depth - 1) };
        let a = sub(self);
        match self.below(5) {
            0 => {
                let op = if self.on(Feature::Bitwise) && self.chance(500) { UnOp::Not } else { UnOp::Neg };
                self.add(ExprData::Unary { op, arg: a })
            }
            1 if self.on(Feature::Shift) => {
                let op = self.pick(&[BinOp::Shl, BinOp::Lshr, BinOp::Ashr]);
                let n = self.below(ty.bits()) as i64;
                let n = self.konst(ty, n);
                self.bin(op, a, n)
            }
            _ => {
                let b = sub(self);
                let op = self.pick(&[BinOp::Add, BinOp::Sub, BinOp::Xor, BinOp::Mul, BinOp::And, BinOp::Or]);
                self.bin(op, a, b)
            }
        }
    }

    /// At the end of a loop body: copies between loop-carried variables that, once SSA
    /// copy propagation has removed them, leave phis that read each other (the swap
    /// problem of SSA destruction) or a phi's old value live past its new one (the lost
    /// copy problem): `%t = %x; %x = %y; %y = %t` (a swap), the same over three
    /// variables (a rotation), or `%x = %v; %v = op(%v, k)` (a lost copy when `%x` is
    /// read after the loop).
    pub(super) fn loop_copies(&mut self) {
        // The type drawn as usual, unless only the other type has two variables to swap.
        let mut ty = self.ty();
        let other = if ty == Type::I32 { Type::I64 } else { Type::I32 };
        if self.assignable(Some(ty)).len() < 2 && self.assignable(Some(other)).len() >= 2 {
            ty = other;
        }
        let vars = self.assignable(Some(ty));
        match self.below(3) {
            0 | 1 if vars.len() >= 2 => {
                let rotate = vars.len() >= 3 && self.below(2) == 1;
                self.note(if rotate { "loop rotation" } else { "loop swap" });
                let n = if rotate { 3 } else { 2 };
                // Distinct variables, in a random order.
                let chosen = self.distinct(vars, n);
                self.rotate(&chosen);
            }
            _ if !vars.is_empty() => {
                self.note("loop lost copy");
                let v = self.pick(&vars);
                let l = self.local(v);
                let x = self.define(l);
                self.vars.push(x);
                let l = self.local(v);
                let k = self.pick(&[1i64, 3, -1, 7]);
                let k = self.konst(ty, k);
                let op = self.pick(&[BinOp::Add, BinOp::Sub, BinOp::Xor]);
                let e = self.bin(op, l, k);
                self.set(v, e);
            }
            _ => {}
        }
    }

    /// `n` distinct locals of `pool`, in a random order.
    fn distinct(&mut self, mut pool: Vec<Local>, n: usize) -> Vec<Local> {
        let mut chosen = vec![];
        for _ in 0..n {
            let i = self.below(pool.len() as u32) as usize;
            chosen.push(pool.swap_remove(i));
        }
        chosen
    }

    /// `%t = %a; %a = %b; %b = %t` over the chosen locals (a swap of two, a rotation of
    /// three).
    pub(super) fn rotate(&mut self, chosen: &[Local]) {
        let n = chosen.len();
        let l = self.local(chosen[0]);
        let t = self.define(l);
        for i in 0..n - 1 {
            let l = self.local(chosen[i + 1]);
            self.set(chosen[i], l);
        }
        let l = self.local(t);
        self.set(chosen[n - 1], l);
    }

    /// Before a loop of an SSA-form function: the two or three variables a swap or a
    /// rotation at the end of its body will exchange ([`Gen::rotate`]), set apart here
    /// (`%b = %a + 1`, `%c = %a - 1`) so that their values differ whatever they were, and
    /// held for the body, so that no other assignment comes between their phis and the
    /// back edge. After copy propagation each phi's argument on the back edge is then
    /// another of these phis: a cycle in the edge's parallel copy, which only a
    /// temporary orders right (the swap problem), and whose every value is observed.
    /// `loop_copies` swaps variables the body may have assigned, which mostly leaves
    /// chains, not cycles.
    pub(super) fn plan_cycle(&mut self) -> Option<Vec<Local>> {
        let mut ty = self.ty();
        let other = if ty == Type::I32 { Type::I64 } else { Type::I32 };
        if self.assignable(Some(ty)).len() < 2 && self.assignable(Some(other)).len() >= 2 {
            ty = other;
        }
        let vars = self.assignable(Some(ty));
        if vars.len() < 2 {
            return None;
        }
        let n = if vars.len() >= 3 && self.chance(400) { 3 } else { 2 };
        self.note(if n == 3 { "loop rotation of held variables" } else { "loop swap of held variables" });
        let chosen = self.distinct(vars, n);
        for (i, k) in [(1, 1i64), (2, -1)] {
            if i < n {
                let a = self.local(chosen[0]);
                let k = self.konst(ty, k);
                let e = self.bin(BinOp::Add, a, k);
                self.set(chosen[i], e);
            }
        }
        self.held.extend(&chosen);
        Some(chosen)
    }

    /// Something between two accesses of the same place: a helper call, an aliasing
    /// access, or nothing.
    pub(super) fn between(&mut self) {
        let k = self.below(8);
        const NAMES: [&str; 8] = [
            "between cf_trace",
            "between cf_set",
            "between heap_rmw",
            "between log",
            "between store",
            "between store",
            "between statement",
            "between nothing",
        ];
        let s = match k {
            0 if self.on(Feature::CfTrace) && self.noread_cf.is_empty() => self.call(HelperKind::CfTrace, vec![]),
            1 if self.on(Feature::CfSet) && self.frozen_cf.is_empty() && !self.f.cfvars.is_empty() => {
                let i = self.expr(Type::I32, 1);
                let v = self.expr(Type::I32, 1);
                self.call(HelperKind::CfSet, vec![i, v])
            }
            2 if self.on(Feature::HeapRmw) => {
                let a = self.addr_value(1);
                let d = self.expr(Type::I32, 1);
                self.call(HelperKind::HeapRmw, vec![a, d])
            }
            3 if self.on(Feature::Log) => {
                let a = self.expr(Type::I32, 1);
                let b = self.expr(Type::I32, 1);
                self.call(HelperKind::Log, vec![a, b])
            }
            4 | 5 if self.on(Feature::Store) => self.store(1),
            6 => self.stmt(2),
            _ => {
                self.note("between nothing");
                return;
            }
        };
        self.note(NAMES[k as usize]);
        self.push(s);
    }

    pub(super) fn cf_motion(&mut self) {
        let cfs: Vec<CfVar> = self
            .f
            .cfvars
            .keys()
            .filter(|c| !self.frozen_cf.contains(c) && !self.noread_cf.contains(c))
            .collect();
        if cfs.is_empty() {
            return;
        }
        let v = self.pick(&cfs);
        let ty = self.f.cfvars[v].ty;
        if self.loop_allowed() && self.chance(300) {
            self.cf_loop_motion(v);
            return;
        }
        match self.below(5) {
            // LOAD-LOAD
            0 => {
                self.note("cf LOAD-LOAD");
                self.cf_read_stmt(v);
                self.between();
                self.cf_read_stmt(v);
            }
            // STORE-LOAD
            1 => {
                self.note("cf STORE-LOAD");
                let e = self.expr(ty, 2);
                self.cf_write_stmt(v, e);
                self.between();
                self.cf_read_stmt(v);
            }
            // LOAD-STORE
            2 => {
                self.note("cf LOAD-STORE");
                let t = self.cf_read_stmt(v);
                self.between();
                let l = self.local(t);
                self.cf_write_stmt(v, l);
            }
            // STORE-STORE (the first is dead unless something in between reads it)
            3 => {
                self.note("cf STORE-STORE");
                let e = self.expr(ty, 2);
                self.cf_write_stmt(v, e);
                self.between();
                let e = self.expr(ty, 2);
                self.cf_write_stmt(v, e);
            }
            // Stores on both arms, a load after the join.
            _ => self.cf_stores_on_both_arms(v, ty),
        }
    }

    /// `%t = cfread(@v)` as a statement; the new temporary.
    fn cf_read_stmt(&mut self, v: CfVar) -> Local {
        let t = self.new_temp(self.f.cfvars[v].ty);
        let r = self.add(ExprData::CfRead(v));
        let s = self.assign(t, r);
        self.push(s);
        t
    }

    /// `cfwrite(@v, value)` as a statement.
    fn cf_write_stmt(&mut self, v: CfVar, value: Expr) {
        let s = self.add(ExprData::CfWrite { var: v, value });
        self.push(s);
    }

    /// Stores to `@v` on both arms of a branch, a load after the join.
    fn cf_stores_on_both_arms(&mut self, v: CfVar, ty: Type) {
        self.note("cf stores on both arms, load after");
        if !self.blocks_left(3) {
            return;
        }
        let c = self.cond(1);
        let a = self.create_block();
        let b = self.create_block();
        let join = self.create_block();
        self.seal(Terminator::Branch { cond: c, then_dest: a, else_dest: b });
        for blk in [a, b] {
            self.enter(blk);
            let e = self.expr(ty, 2);
            self.cf_write_stmt(v, e);
            if self.chance(300) {
                self.between();
            }
            self.seal(Terminator::Jump(join));
        }
        self.enter(join);
        self.cf_read_stmt(v);
    }

    pub(super) fn heap_motion(&mut self) {
        if self.loop_allowed() && self.chance(350) {
            self.heap_loop_motion();
            return;
        }
        let (ty, width, addr, converted, first_read, second_read) = self.heap_pair_place();
        let mut first = true;
        let mut take = move |g: &mut Self| if std::mem::take(&mut first) { addr } else { g.f.clone_tree(addr) };
        let load = |g: &mut Self, a: Expr, (ty, width, signed): Read| {
            let t = g.new_temp(ty);
            let l = g.add(ExprData::Load { ty, width, signed, addr: a });
            let s = g.assign(t, l);
            g.push(s);
            t
        };
        let store = |g: &mut Self, a: Expr, value: Expr| {
            let s = g.add(ExprData::Store { width, addr: a, value });
            g.push(s);
        };
        let can_load = self.on(Feature::Load);
        let can_store = self.on(Feature::Store);
        // Only a LOAD-LOAD or a STORE-LOAD converts (a store after a load forwards
        // nothing); LOAD-STORE keeps its share, where the tree mover must not move the
        // load past a store between.
        match self.below(4) {
            0 if can_load => {
                self.note("heap LOAD-LOAD");
                if converted {
                    self.note("heap LOAD-LOAD converted");
                }
                let a = take(self);
                load(self, a, first_read);
                self.between();
                let a = take(self);
                load(self, a, second_read);
            }
            1 if can_load && can_store => {
                self.note("heap STORE-LOAD");
                let e = self.expr(ty, 2);
                let e = if converted {
                    // The sign bit set: a conversion that extends the wrong way shows.
                    self.note("heap STORE-LOAD converted");
                    let min = if ty == Type::I32 { i32::MIN as i64 } else { i64::MIN };
                    let k = self.konst(ty, min);
                    self.bin(BinOp::Or, e, k)
                } else {
                    e
                };
                let a = take(self);
                store(self, a, e);
                self.between();
                let a = take(self);
                load(self, a, second_read);
            }
            2 if can_load && can_store => {
                self.note("heap LOAD-STORE");
                let a = take(self);
                let t = load(self, a, first_read);
                self.between();
                let l = self.local(t);
                let a = take(self);
                store(self, a, l);
            }
            _ if can_store => {
                self.note("heap STORE-STORE");
                let e = self.expr(ty, 2);
                let a = take(self);
                store(self, a, e);
                self.between();
                let e = self.expr(ty, 2);
                let a = take(self);
                store(self, a, e);
            }
            _ => {
                let a = take(self);
                load(self, a, first_read);
            }
        }
    }

    /// The place a pair of [`Gen::heap_motion`] accesses: the type and width, the address
    /// (a pure tree, cloned for the second access), whether the second read converts, and
    /// how the first and the second access read it.
    fn heap_pair_place(&mut self) -> (Type, MemWidth, Expr, bool, Read, Read) {
        let ty = self.ty();
        let widths: Vec<MemWidth> = MemWidth::ALL.into_iter().filter(|w| w.bits() <= ty.bits()).collect();
        // Most of the time the second access of a LOAD-LOAD or STORE-LOAD reads what the
        // first one left as another type, width or extension: forwarding must convert.
        let converted = self.chance(700);
        let width = if converted && self.chance(700) {
            MemWidth::from_bits(ty.bits()).expect("a full width")
        } else {
            self.pick(&widths)
        };
        let addr = self.addr(width, 1);
        let signed = width.bits() < ty.bits() && self.chance(500);
        let first_read = (ty, width, signed);
        let second_read = if converted { self.converted_read(ty, width) } else { first_read };
        (ty, width, addr, converted, first_read, second_read)
    }

    /// How a second access reads a place that an access of `ty` and `width` wrote or
    /// read, so that `memopt`'s forwarding must convert (`avail.rs`, `convert_load`):
    /// the other type most of the time (truncated, or sign- or zero-extended from 32
    /// bits), as wide or narrower, with either extension.
    fn converted_read(&mut self, ty: Type, width: MemWidth) -> Read {
        let lty = if self.chance(600) {
            if ty == Type::I32 { Type::I64 } else { Type::I32 }
        } else {
            ty
        };
        let fitting: Vec<MemWidth> =
            MemWidth::ALL.into_iter().filter(|w| w.bits() <= width.bits() && w.bits() <= lty.bits()).collect();
        let w = if self.chance(500) { *fitting.last().expect("8 bits fit") } else { self.pick(&fitting) };
        let signed = w.bits() < lty.bits() && self.chance(500);
        (lty, w, signed)
    }

    /// Whether one more loop may nest here (the rule the loop item follows).
    fn loop_allowed(&self) -> bool {
        (self.loops.len() as u32) < self.cfg.max_loop_depth && (self.loops.is_empty() || self.on(Feature::NestedLoop))
    }

    /// A small counted loop (1 to 3 rounds) of the current block's making: `body` fills the
    /// loop body given the counter; top-tested loops test `cond(counter)` in the header,
    /// bottom-tested ones `slt(counter, trips)` at the end of the body. False (and nothing
    /// generated) when it does not fit the block or fuel budget.
    fn small_loop(
        &mut self,
        top_cond: Option<LoopTest<'_, Self>>,
        body: &mut dyn FnMut(&mut Self, Local),
    ) -> bool {
        let trips = 1 + self.below(3) as u64;
        if !self.blocks_left(4) || !self.fits(40 * (trips + 1)) {
            return false;
        }
        let counter = self.new_temp(Type::I32);
        let zero = self.konst(Type::I32, 0);
        let s = self.assign(counter, zero);
        self.push(s);
        let outer = self.mult;
        let body_b = self.create_block();
        let exit = self.create_block();
        let bump = |g: &mut Self| {
            let c = g.local(counter);
            let one = g.konst(Type::I32, 1);
            let inc = g.bin(BinOp::Add, c, one);
            let s = g.assign(counter, inc);
            g.push(s);
        };
        match top_cond {
            Some(cond) => {
                let header = self.create_block();
                self.seal(Terminator::Jump(header));
                self.mult = outer * (trips + 1);
                self.enter(header);
                let c = cond(self, counter, trips as i64);
                self.seal(Terminator::Branch { cond: c, then_dest: body_b, else_dest: exit });
                self.enter(body_b);
                body(self, counter);
                bump(self);
                self.seal(Terminator::Jump(header));
            }
            None => {
                self.seal(Terminator::Jump(body_b));
                self.mult = outer * trips;
                self.enter(body_b);
                body(self, counter);
                bump(self);
                let c = self.local(counter);
                let n = self.konst(Type::I32, trips as i64);
                let lt = self.cmp(CmpOp::Slt, c, n);
                self.seal(Terminator::Branch { cond: lt, then_dest: body_b, else_dest: exit });
            }
        }
        self.mult = outer;
        self.enter(exit);
        true
    }

    /// A value of type `ty` computed from the loop counter without anything that may trap
    /// or touch memory.
    fn counter_value(&mut self, counter: Local, ty: Type) -> Expr {
        let c = self.local(counter);
        let k = self.below(1000) as i64 + 1;
        let m = self.konst(Type::I32, k);
        let e = self.bin(BinOp::Mul, c, m);
        let e = if ty == Type::I64 { self.add(ExprData::Convert { op: ConvOp::Sext, arg: e }) } else { e };
        let b = self.constant(ty);
        self.bin(BinOp::Add, e, b)
    }

    /// `callframe-data-motion.md`, loop-invariant LOAD and STORE: a small loop that only
    /// reads @v (accumulating it) or only writes it (with a value of the counter, maybe
    /// next to a `log`, which touches no memory), with nothing in it that may trap.
    fn cf_loop_motion(&mut self, v: CfVar) {
        let ty = self.f.cfvars[v].ty;
        if self.chance(500) {
            self.note("cf loop-invariant LOAD loop");
            let acc = self.new_temp(ty);
            let zero = self.konst(ty, 0);
            let s = self.assign(acc, zero);
            self.push(s);
            self.small_loop(None, &mut |g: &mut Self, _| {
                let a = g.local(acc);
                let r = g.add(ExprData::CfRead(v));
                let sum = g.bin(BinOp::Add, a, r);
                let s = g.assign(acc, sum);
                g.push(s);
            });
        } else {
            self.note("cf loop-invariant STORE loop");
            let log = self.on(Feature::Log) && self.chance(500);
            let mut cond = |g: &mut Self, c: Local, n: i64| g.counter_below(c, n);
            let top = self.chance(500);
            self.small_loop(top.then_some(&mut cond as LoopTest<'_, Self>), &mut |g: &mut Self, c| {
                let e = g.counter_value(c, ty);
                let s = g.add(ExprData::CfWrite { var: v, value: e });
                g.push(s);
                if log {
                    let a = g.local(c);
                    let b = g.konst(Type::I32, 0);
                    let s = g.call(HelperKind::Log, vec![a, b]);
                    g.push(s);
                }
            });
        }
    }

    /// Heap loop-invariant LOAD and STORE and dead STORE: a small loop whose load of an
    /// invariant address runs whenever the loop is entered (bottom-tested, or in the
    /// header's test), a loop that stores to an invariant address (bottom-tested, or
    /// top-tested after a store to the same place), or a store overwritten on both arms.
    fn heap_loop_motion(&mut self) {
        let width = self.pick(&[MemWidth::W8, MemWidth::W16, MemWidth::W32, MemWidth::W32]);
        let signed = width != MemWidth::W32 && self.chance(500);
        let ty = Type::I32;
        // One invariant address, made at its first use and copied for the others (so that
        // no node is left out of every tree when a shape does not fit).
        let mut place: Option<Expr> = None;
        let (can_load, can_store) = (self.on(Feature::Load), self.on(Feature::Store));
        match self.below(9) {
            0 if can_load => self.invariant_load_loop(width, signed, &mut place),
            1 if can_load => {
                self.note("heap loop-invariant LOAD in the loop test");
                let mut cond = |g: &mut Self, c: Local, _n: i64| {
                    let c = g.local(c);
                    let addr = g.same_addr(&mut place, width);
                    let l = g.add(ExprData::Load { ty, width, signed, addr });
                    let three = g.konst(Type::I32, 3);
                    let m = g.bin(BinOp::And, l, three);
                    g.cmp(CmpOp::Slt, c, m)
                };
                self.small_loop(Some(&mut cond), &mut |g: &mut Self, c| {
                    if g.on(Feature::Log) {
                        let a = g.local(c);
                        let b = g.konst(Type::I32, 1);
                        let s = g.call(HelperKind::Log, vec![a, b]);
                        g.push(s);
                    }
                });
            }
            2 if can_store => {
                self.note("heap loop-invariant STORE loop (bottom-tested)");
                self.small_loop(None, &mut |g: &mut Self, c| {
                    let value = g.counter_value(c, ty);
                    let addr = g.same_addr(&mut place, width);
                    let s = g.add(ExprData::Store { width, addr, value });
                    g.push(s);
                });
            }
            3 if can_store && self.blocks_left(4) && self.fits(200) => self.store_loop_after_store(width, &mut place),
            4 | 5 if can_store && self.blocks_left(4) && self.fits(200) => self.fill_loop_then_store(width),
            7 | 8 if can_store && self.blocks_left(6) && self.fits(200) => self.bounded_store_loop(width),
            _ if can_store && self.blocks_left(3) => self.dead_store_both_arms(width, &mut place),
            _ => {}
        }
    }

    /// A bottom-tested loop whose body loads from one invariant address (sometimes first
    /// in a block of its own, sometimes behind a bounds check) into an accumulator.
    fn invariant_load_loop(&mut self, width: MemWidth, signed: bool, place: &mut Option<Expr>) {
        let ty = Type::I32;
        self.note("heap loop-invariant LOAD loop (bottom-tested)");
        let mut first_made: Option<Expr> = None;
        let acc = self.new_temp(ty);
        let zero = self.konst(ty, 0);
        let s = self.assign(acc, zero);
        self.push(s);
        self.small_loop(None, &mut |g: &mut Self, _| {
            if g.blocks_left(1) && g.chance(500) {
                // The load first in a block of its own, which has no phis and
                // runs on every round: what precedes it there is all that
                // memopt's "no trap before it" test sees; half of the time
                // behind a bounds check that fires with an address outside
                // the heap (a hoisted load would fault).
                g.note("heap loop-invariant LOAD first in a block of the body");
                let nb = g.create_block();
                g.seal(Terminator::Jump(nb));
                g.enter(nb);
                if place.is_none() && g.chance(500) {
                    let a = g.guarded_addr(width.bytes());
                    *place = Some(a);
                    first_made = Some(a);
                }
            }
            let a = g.local(acc);
            let addr = match first_made.take() {
                Some(addr) => addr,
                None => g.same_addr(place, width),
            };
            let l = g.add(ExprData::Load { ty, width, signed, addr });
            let x = g.bin(BinOp::Xor, a, l);
            let s = g.assign(acc, x);
            g.push(s);
        });
    }

    /// A store to one address, then a loop that stores to it again on every round.
    fn store_loop_after_store(&mut self, width: MemWidth, place: &mut Option<Expr>) {
        let ty = Type::I32;
        self.note("heap loop-invariant STORE loop after a store");
        let value = self.constant(ty);
        let addr = self.same_addr(place, width);
        let s = self.add(ExprData::Store { width, addr, value });
        self.push(s);
        let mut cond = |g: &mut Self, c: Local, n: i64| g.counter_below(c, n);
        self.small_loop(Some(&mut cond), &mut |g: &mut Self, c| {
            let value = g.counter_value(c, ty);
            let addr = g.same_addr(place, width);
            let s = g.add(ExprData::Store { width, addr, value });
            g.push(s);
        });
    }

    /// A top-tested loop that stores to an address of its counter on every round, then
    /// the same address after the loop: `while c < n { store(A(c), ..); c += 1 }
    /// store(A(c), ..)`. In SSA both addresses read the header's phi of `c`, so they
    /// print the same; the stores in the loop are overwritten only if dead-store
    /// elimination forgets that the phi redefines `c` between two rounds.
    fn fill_loop_then_store(&mut self, width: MemWidth) {
        let ty = Type::I32;
        self.note("heap fill loop, the same counter address stored after it");
        let r = self.pick(&self.regions.clone());
        let wb = width.bytes() as i64;
        let mut place: Option<Expr> = None;
        let mut cond = |g: &mut Self, c: Local, n: i64| g.counter_below(c, n);
        let made = self.small_loop(Some(&mut cond), &mut |g: &mut Self, c| {
            let x = g.local(c);
            let k = g.konst(Type::I32, wb);
            let off = g.bin(BinOp::Mul, x, k);
            let m = g.konst(Type::I32, r.size as i64 - wb);
            let off = g.bin(BinOp::And, off, m);
            let b = g.konst(Type::I32, (HEAP_BASE + r.base) as i64);
            let addr = g.bin(BinOp::Add, b, off);
            place = Some(addr);
            let value = g.counter_value(c, ty);
            let s = g.add(ExprData::Store { width, addr, value });
            g.push(s);
        });
        if made {
            let addr = self.f.clone_tree(place.expect("the loop body ran"));
            let value = self.constant(ty);
            let s = self.add(ExprData::Store { width, addr, value });
            self.push(s);
        }
    }

    /// A loop that stores to one invariant address only where a bounds check passes:
    /// `A = HEAP_BASE + HEAP_SIZE - S + v`, `v = x & (2S - 1)` (`x` a local the loop does not
    /// assign), outside the heap exactly when `v > S - w`. The check is half of the time
    /// in a top-tested loop's test (`c < n && v <= S - w`: out of bounds, no round runs),
    /// else a branch around the store in the body. A run with `A` outside the heap never
    /// stores, and nothing accesses `A` before the loop, so the store may not be sunk to
    /// the loop's exits (memopt's loop-invariant STORE needs an access covering `A` on
    /// entry when the store does not run on every way out): a speculated `store(A,
    /// load(A))` there would leave the heap where the source did not. The loop has no trap,
    /// call or other access that would stop memopt from considering it.
    fn bounded_store_loop(&mut self, width: MemWidth) {
        let ty = Type::I32;
        let locals: Vec<Local> = self.readable.iter().copied().filter(|&l| self.f.locals[l].ty == ty).collect();
        let params: Vec<Local> = locals.iter().copied().filter(|l| self.f.params.contains(l)).collect();
        let Some(x) = (if !params.is_empty() && self.chance(700) {
            Some(self.pick(&params))
        } else if !locals.is_empty() {
            Some(self.pick(&locals))
        } else {
            None
        }) else {
            return;
        };
        let s = self.pick(&[16u32, 64, 256]);
        let w = width.bytes();
        // `v`, and the test that `A` is inside the heap.
        let offset = |g: &mut Self| {
            let x = g.local(x);
            let m = g.konst(Type::I32, (2 * s - 1) as i64);
            g.bin(BinOp::And, x, m)
        };
        let inside = |g: &mut Self| {
            let v = offset(g);
            if g.chance(500) {
                let limit = g.konst(Type::I32, (s - w) as i64);
                g.cmp(CmpOp::Ule, v, limit)
            } else {
                let limit = g.konst(Type::I32, (s - w + 1) as i64);
                g.cmp(CmpOp::Ugt, limit, v)
            }
        };
        let store = |g: &mut Self, c: Local| {
            let v = offset(g);
            let base = g.konst(Type::I32, (HEAP_BASE + HEAP_SIZE - s) as i64);
            let addr = g.bin(BinOp::Add, base, v);
            let value = g.counter_value(c, ty);
            let st = g.add(ExprData::Store { width, addr, value });
            g.push(st);
        };
        if self.chance(500) {
            self.note("heap loop-invariant STORE in a loop whose test checks its bounds");
            let mut cond = |g: &mut Self, c: Local, n: i64| {
                let more = g.counter_below(c, n);
                let ok = inside(g);
                g.bin(BinOp::And, more, ok)
            };
            self.small_loop(Some(&mut cond), &mut |g: &mut Self, c| store(g, c));
        } else {
            self.note("heap loop-invariant STORE behind a bounds check in the body");
            let mut test = |g: &mut Self, c: Local, n: i64| g.counter_below(c, n);
            let top = self.chance(500);
            self.small_loop(top.then_some(&mut test as LoopTest<'_, Self>), &mut |g: &mut Self, c| {
                let ok = inside(g);
                let (then_b, join) = (g.create_block(), g.create_block());
                g.seal(Terminator::Branch { cond: ok, then_dest: then_b, else_dest: join });
                g.enter(then_b);
                store(g, c);
                g.seal(Terminator::Jump(join));
                g.enter(join);
            });
        }
        if self.on(Feature::NestedLoop) && self.loops.len() as u32 + 3 <= self.cfg.max_loop_depth
            && self.fits(NEST_NODES)
        {
            self.nest_writing_outside();
        }
    }

    /// A slot known before a three-deep loop nest whose outermost loop writes it and whose
    /// inner loops leave it alone: `t = cfread(@v)` (or a load of a hot address), then a
    /// bottom-tested loop holding a loop that holds a loop, then `cfwrite(@v, ..)` (or the
    /// store) at the end of the outer body. Memopt's availability gives the slot a
    /// speculative phi at each header on the way in; real code has such nests (a counter
    /// kept in memory, updated once per outer round). It is also where a speculative store
    /// the analyses cannot show redundant stays in the output ([`Gen::bounded_store_loop`]
    /// before it).
    fn nest_writing_outside(&mut self) {
        let cfs: Vec<CfVar> = self
            .f
            .cfvars
            .keys()
            .filter(|c| !self.frozen_cf.contains(c) && !self.noread_cf.contains(c))
            .collect();
        let cf = if !cfs.is_empty() && self.on(Feature::CfVars) && self.chance(600) { Some(self.pick(&cfs)) } else { None };
        if cf.is_none() && !(self.on(Feature::Load) && self.on(Feature::Store)) {
            return;
        }
        let (ty, place) = match cf {
            Some(v) => (self.f.cfvars[v].ty, None),
            None => {
                let o = self.pick(&self.hot_offsets.clone()).min(HEAP_SIZE - 4) & !3;
                (Type::I32, Some((HEAP_BASE + o) as i64))
            }
        };
        let t = self.new_temp(ty);
        let read = match (cf, place) {
            (Some(v), _) => self.add(ExprData::CfRead(v)),
            (None, Some(a)) => {
                let addr = self.konst(Type::I32, a);
                self.add(ExprData::Load { ty, width: MemWidth::W32, signed: false, addr })
            }
            _ => unreachable!("a callframe variable or a heap address"),
        };
        let s = self.assign(t, read);
        self.push(s);
        self.note("slot written by the outer loop of a three-deep nest");
        self.small_loop(None, &mut |g: &mut Self, outer| {
            g.small_loop(None, &mut |g: &mut Self, _| {
                g.small_loop(None, &mut |_: &mut Self, _| {});
            });
            let value = g.counter_value(outer, ty);
            let w = match (cf, place) {
                (Some(v), _) => g.add(ExprData::CfWrite { var: v, value }),
                (None, Some(a)) => {
                    let addr = g.konst(Type::I32, a);
                    g.add(ExprData::Store { width: MemWidth::W32, addr, value })
                }
                _ => unreachable!("a callframe variable or a heap address"),
            };
            g.push(w);
        });
    }

    /// A store overwritten on both arms of a branch: dead.
    fn dead_store_both_arms(&mut self, width: MemWidth, place: &mut Option<Expr>) {
        let ty = Type::I32;
        self.note("heap dead STORE (overwritten on both arms)");
        let mut store = |g: &mut Self| {
            let value = g.expr(ty, 1);
            let addr = g.same_addr(place, width);
            let s = g.add(ExprData::Store { width, addr, value });
            g.push(s);
        };
        store(self);
        let a = self.leaf(ty);
        let b = self.leaf(ty);
        let c = self.cmp(CmpOp::Slt, a, b);
        let (t, f, join) = (self.create_block(), self.create_block(), self.create_block());
        self.seal(Terminator::Branch { cond: c, then_dest: t, else_dest: f });
        for blk in [t, f] {
            self.enter(blk);
            store(self);
            self.seal(Terminator::Jump(join));
        }
        self.enter(join);
    }

    /// The address in `place`, copied; the first call makes it: a pure heap address (no
    /// load, call or division in it), so that it names one location in a loop.
    fn same_addr(&mut self, place: &mut Option<Expr>, width: MemWidth) -> Expr {
        match *place {
            Some(a) => self.f.clone_tree(a),
            None => {
                self.pure_mode = true;
                let a = self.addr(width, 1);
                self.pure_mode = false;
                *place = Some(a);
                a
            }
        }
    }

    /// Many values live at once, then combined (and a call in the middle that clobbers
    /// the caller-saved registers).
    pub(super) fn reg_pressure(&mut self) {
        self.note("register pressure");
        let n = 6 + self.below(9);
        let mut temps = vec![];
        for i in 0..n {
            let ty = self.ty();
            let t = self.new_temp(ty);
            let e = self.expr(ty, 2);
            let s = self.assign(t, e);
            self.push(s);
            temps.push(t);
            if i == n / 2 && self.on(Feature::Log) && self.chance(500) {
                let a = self.expr(Type::I32, 1);
                let b = self.expr(Type::I32, 1);
                let c = self.call(HelperKind::Log, vec![a, b]);
                self.push(c);
            }
        }
        let ty = self.ty();
        let mut leaves: Vec<Expr> = vec![];
        for t in temps {
            let l = self.local(t);
            leaves.push(self.convert_to(l, ty));
        }
        // A balanced tree over the leaves keeps many of them live at once.
        let all = self.combine(leaves, &[BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Xor, BinOp::Or, BinOp::And]);
        let dst = self.new_temp(ty);
        let s = self.assign(dst, all);
        self.push(s);
        self.vars.push(dst);
    }
}
