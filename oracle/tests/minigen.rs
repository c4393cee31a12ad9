//! A small seeded program generator for the pass tests: structured control flow (if/else,
//! counted loops, switches), locals of both widths, callframe variables, heap accesses,
//! helper calls, divisions and checks, with the patterns the passes look for (single-use
//! temporaries, copies, redefinitions, nested assignments). It prints text and parses it,
//! so every program goes through the verifier. The project's generator (another issue)
//! replaces it for campaigns; this one only keeps `cargo test` honest.

use tandem_core::helpers::HelperKind;
use tandem_core::ir::Module;

/// A xorshift64* random source: deterministic for a seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a>(&mut self, v: &'a [&'a str]) -> &'a str {
        v[self.below(v.len() as u64) as usize]
    }
}

const I32_LOCALS: &[&str] = &["%x0", "%x1", "%x2", "%x3", "%x4"];
const I32_READS: &[&str] = &["%x0", "%x1", "%x2", "%x3", "%x4", "%a", "%b"];
const I64_LOCALS: &[&str] = &["%y0", "%y1"];
const I64_READS: &[&str] = &["%y0", "%y1", "%c"];
const BINOPS: &[&str] = &["add", "sub", "mul", "and", "or", "xor", "shl", "lshr", "ashr"];
const DIVOPS: &[&str] = &["sdiv", "udiv", "srem", "urem"];
const CMPS: &[&str] = &["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"];

struct Gen {
    rng: Rng,
    blocks: Vec<String>,
    label: usize,
    lines: Vec<String>,
    next_label: usize,
    counters: usize,
    budget: i32,
}

impl Gen {
    fn new_label(&mut self) -> usize {
        self.next_label += 1;
        self.next_label
    }

    /// Ends the current block with `term` and continues in block `next`.
    fn finish(&mut self, term: String, next: usize) {
        let mut s = format!("b{}:\n", self.label);
        for l in &self.lines {
            s += &format!("    {l}\n");
        }
        s += &format!("    {term}\n");
        self.blocks.push(s);
        self.lines.clear();
        self.label = next;
    }

    fn addr(&mut self) -> String {
        if self.rng.chance(50) {
            format!("{}", 0x0010_0000 + 4 * self.rng.below(16))
        } else {
            let e = self.expr32(1);
            format!("add(1048576, and({e}, 60))")
        }
    }

    fn expr32(&mut self, depth: u32) -> String {
        let r = &mut self.rng;
        if depth == 0 || r.chance(25) {
            return match r.below(10) {
                0..=5 => r.pick(I32_READS).to_string(),
                6 | 7 => format!("{}", r.below(9) as i64 - 3),
                8 => "cfread(@v0)".to_string(),
                _ => {
                    let a = format!("{}", 0x0010_0000 + 4 * r.below(16));
                    format!("load.i32({a})")
                }
            };
        }
        match self.rng.below(12) {
            0..=4 => {
                let op = self.rng.pick(BINOPS);
                format!("{op}({}, {})", self.expr32(depth - 1), self.expr32(depth - 1))
            }
            5 => {
                let op = self.rng.pick(DIVOPS);
                let d = if self.rng.chance(70) { format!("or({}, 1)", self.expr32(depth - 1)) } else { self.expr32(depth - 1) };
                format!("{op}({}, {d})", self.expr32(depth - 1))
            }
            6 => {
                let op = self.rng.pick(CMPS);
                if self.rng.chance(30) {
                    format!("{op}({}, {})", self.expr64(depth - 1), self.expr64(depth - 1))
                } else {
                    format!("{op}({}, {})", self.expr32(depth - 1), self.expr32(depth - 1))
                }
            }
            7 => format!("select({}, {}, {})", self.expr32(depth - 1), self.expr32(depth - 1), self.expr32(depth - 1)),
            8 => format!("{}({})", if self.rng.chance(50) { "neg" } else { "not" }, self.expr32(depth - 1)),
            9 => format!("trunc({})", self.expr64(depth - 1)),
            10 => format!("call @mix({}, {})", self.expr32(depth - 1), self.expr32(depth - 1)),
            _ => {
                let a = self.addr();
                format!("load.i32.{}8({a})", if self.rng.chance(50) { "s" } else { "u" })
            }
        }
    }

    fn expr64(&mut self, depth: u32) -> String {
        let r = &mut self.rng;
        if depth == 0 || r.chance(30) {
            return match r.below(6) {
                0..=3 => r.pick(I64_READS).to_string(),
                4 => format!("{}:i64", r.below(7) as i64 - 2),
                _ => "cfread(@v1)".to_string(),
            };
        }
        match self.rng.below(5) {
            0..=2 => {
                let op = self.rng.pick(BINOPS);
                format!("{op}({}, {})", self.expr64(depth - 1), self.expr64(depth - 1))
            }
            3 => format!("sext({})", self.expr32(depth - 1)),
            _ => format!("zext({})", self.expr32(depth - 1)),
        }
    }

    fn stmt(&mut self) {
        let x = self.rng.pick(I32_LOCALS).to_string();
        let line = match self.rng.below(22) {
            0..=6 => format!("{x} = {}", self.expr32(3)),
            7 | 8 => format!("{x} = {}", self.rng.pick(I32_READS)),
            9 => format!("{x} = {}", self.rng.below(5)),
            10 => {
                let y = self.rng.pick(I64_LOCALS);
                format!("{y} = {}", self.expr64(2))
            }
            11 => format!("call @log({}, {})", self.expr32(2), self.expr32(2)),
            12 => {
                let a = self.addr();
                format!("store.{}({a}, {})", if self.rng.chance(50) { 32 } else { 8 }, self.expr32(2))
            }
            13 => format!("cfwrite(@v0, {})", self.expr32(2)),
            14 => format!("trapif(eq({}, {}), {})", self.expr32(2), self.rng.below(4), self.rng.below(9)),
            15 => format!("call @log(comma(({x} = {}), {x}), {})", self.expr32(2), self.expr32(1)),
            16 => format!("{x} = call @heap_rmw({}, {})", self.expr32(1), self.expr32(1)),
            17 => format!("call @cf_set({}, {})", self.rng.below(3), self.expr32(1)),
            18 | 19 => {
                // The tree mover's cases: a single-use temporary, used through a copy,
                // followed by a redefinition, or carried into a second tree whose use
                // comes after a redefinition of one of the first tree's locals.
                let y = self.rng.pick(I32_LOCALS).to_string();
                let t = format!("{x} = {}", self.expr32(2));
                self.lines.push(t);
                match self.rng.below(5) {
                    0 => {
                        self.lines.push(format!("{y} = {x}"));
                        format!("call @log({y}, {})", self.expr32(1))
                    }
                    1 => {
                        let e = self.expr32(1);
                        self.lines.push(format!("call @log({x}, {})", e));
                        format!("{x} = {}", self.expr32(2))
                    }
                    2 => {
                        // x = u + e; y = x * e; maybe u = e; use y; then x and y redefined.
                        let k = I32_LOCALS.iter().position(|l| *l == x).unwrap();
                        let y = I32_LOCALS[(k + 1) % I32_LOCALS.len()];
                        let u = I32_LOCALS[(k + 2) % I32_LOCALS.len()];
                        self.lines.pop();
                        let e = self.expr32(1);
                        self.lines.push(format!("{x} = add({u}, {e})"));
                        let e = self.expr32(1);
                        self.lines.push(format!("{y} = mul({x}, {e})"));
                        if self.rng.chance(50) {
                            let e = self.expr32(1);
                            self.lines.push(format!("{u} = {e}"));
                        }
                        self.lines.push(format!("call @log({y}, {u})"));
                        let e = self.expr32(1);
                        self.lines.push(format!("{x} = {e}"));
                        let e = self.expr32(1);
                        format!("{y} = {e}")
                    }
                    3 => {
                        // A tree reading memory, then a write to memory, then the use.
                        self.lines.pop();
                        let e = self.expr32(1);
                        let a = self.addr();
                        self.lines.push(format!("{x} = add(load.i32({a}), cfread(@v0))"));
                        let w = match self.rng.below(3) {
                            0 => format!("store.32({a}, {e})"),
                            1 => format!("cfwrite(@v0, {e})"),
                            _ => format!("{y} = call @heap_rmw({a}, {e})"),
                        };
                        self.lines.push(w);
                        format!("call @log({x}, {y})")
                    }
                    _ => format!("call @log({x}, {})", self.expr32(1)),
                }
            }
            20 => {
                // A swap through a temporary (in a loop, SSA copy propagation turns it
                // into phis that read each other).
                let k = I32_LOCALS.iter().position(|l| *l == x).unwrap();
                let y = I32_LOCALS[(k + 1) % I32_LOCALS.len()];
                let t = I32_LOCALS[(k + 3) % I32_LOCALS.len()];
                self.lines.push(format!("{t} = {x}"));
                self.lines.push(format!("{x} = {y}"));
                format!("{y} = {t}")
            }
            _ => "call @cf_trace()".to_string(),
        };
        self.lines.push(line);
    }

    fn seq(&mut self, depth: u32) {
        let n = 1 + self.rng.below(4);
        for _ in 0..n {
            self.budget -= 1;
            if depth > 0 && self.budget > 0 && self.rng.chance(35) {
                match self.rng.below(3) {
                    0 => self.if_else(depth),
                    1 => self.counted_loop(depth),
                    _ => self.switch(depth),
                }
            } else {
                self.stmt();
            }
        }
    }

    fn if_else(&mut self, depth: u32) {
        let (t, e, j) = (self.new_label(), self.new_label(), self.new_label());
        let c = self.expr32(2);
        self.finish(format!("br {c}, b{t}, b{e}"), t);
        self.seq(depth - 1);
        self.finish(format!("jump b{j}"), e);
        if self.rng.chance(70) {
            self.seq(depth - 1);
        }
        self.finish(format!("jump b{j}"), j);
    }

    fn counted_loop(&mut self, depth: u32) {
        let i = format!("%i{}", self.counters);
        self.counters += 1;
        let (h, body, exit) = (self.new_label(), self.new_label(), self.new_label());
        self.lines.push(format!("{i} = 0"));
        self.finish(format!("jump b{h}"), h);
        let n = 1 + self.rng.below(4);
        self.finish(format!("br slt({i}, {n}), b{body}, b{exit}"), body);
        self.seq(depth - 1);
        self.lines.push(format!("{i} = add({i}, 1)"));
        self.finish(format!("jump b{h}"), exit);
    }

    fn switch(&mut self, depth: u32) {
        let (c1, c2, j) = (self.new_label(), self.new_label(), self.new_label());
        let v = self.expr32(1);
        self.finish(format!("switch and({v}, 3), default b{j}, [1: b{c1}, 2: b{c2}]"), c1);
        self.seq(depth - 1);
        self.finish(format!("jump b{j}"), c2);
        self.seq(depth - 1);
        self.finish(format!("jump b{j}"), j);
    }
}

/// Generates the program of `seed`: a function `%f(i32 %a, i32 %b, i64 %c) -> i32`.
pub fn generate(seed: u64) -> Module {
    let mut g = Gen { rng: Rng::new(seed), blocks: vec![], label: 0, lines: vec![], next_label: 0, counters: 0, budget: 10 };
    g.seq(3);
    let r = g.expr32(2);
    g.finish(format!("ret {r}"), 0);
    let mut s = String::new();
    for h in [HelperKind::Log, HelperKind::CfTrace, HelperKind::CfSet, HelperKind::HeapRmw, HelperKind::Mix] {
        tandem_core::text::printer::write_helper_decl(&mut s, &h.decl()).unwrap();
        s.push('\n');
    }
    s += "function %f(i32 %a, i32 %b, i64 %c) -> i32 {\n    callframe i32 @v0\n    callframe i64 @v1\n";
    for l in I32_LOCALS {
        s += &format!("    local i32 {l}\n");
    }
    for l in I64_LOCALS {
        s += &format!("    local i64 {l}\n");
    }
    for i in 0..g.counters {
        s += &format!("    local i32 %i{i}\n");
    }
    for b in &g.blocks {
        s += b;
    }
    s += "}\n";
    let (m, _) = tandem_core::text::parse_module(&s).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{s}"));
    if let Err(e) = tandem_core::verify::verify_module(&m) {
        panic!("seed {seed}: {}\n{s}", e[0]);
    }
    m
}
