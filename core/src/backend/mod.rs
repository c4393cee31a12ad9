//! The x86-32 backend: HIR to IA-32 machine code for the environment of [`crate::abi`].
//!
//! The pipeline reads like the pass list of `DESIGN.md` ("The pipeline", steps 6–10):
//! [`rationalize`](rationalize::rationalize) (HIR statements and commas to linear LIR),
//! [`decompose`](decompose::decompose) (64-bit values to 32-bit pairs),
//! [`lower`](lower::lower) (address modes, contained operands, fixed registers),
//! [`regalloc`](regalloc::regalloc) (global + the seed's local allocator) and
//! [`emit`](emit::emit) (bytes through `iced-x86`'s encoder, branches sized by [`encode`]). The LIR validator
//! ([`lir::validate`]) runs after every LIR pass in debug builds and tests, so a pass
//! that breaks the seed's four properties fails at once with the printed node; the
//! register allocation checker ([`regalloc_check`]) verifies the allocation likewise, and
//! the undefined-flags check ([`flags_check`]) the emitted code.
//!
//! The backend takes HIR without phis (the pipeline destroys SSA first) and no IR
//! optimization runs here.

pub mod decompose;
pub mod emit;
pub mod encode;
pub mod lir;
pub mod lower;
pub mod rationalize;
pub mod regalloc;
pub mod regalloc_check;
pub mod flags_check;
pub mod x86;

use std::fmt;

use crate::abi::{MachineCode, CODE_BASE};
use crate::ir::{Block, Function};
use crate::verify::Verified;
pub use regalloc::RegallocOptions;

/// Why a function could not be compiled.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum CompileError {
    /// The function has phis; the backend takes HIR after SSA destruction.
    Phi { block: Block },
    /// The function fails the HIR verifier: every error, with its location.
    Unverified(Vec<crate::verify::VerifyError>),
    /// A backend pass produced LIR that breaks the validator (a backend bug): each error
    /// with the printed node it is about.
    InvalidLir { pass: &'static str, errors: Vec<(lir::LirError, Option<String>)> },
    /// An instruction needed more registers than the allocator could give (a backend bug).
    Regalloc(regalloc::RegallocError),
    /// The register allocation checker found a value in the wrong place (a backend bug).
    InvalidAllocation(Vec<regalloc_check::AllocError>),
    /// The encoder refused an instruction (a backend bug).
    Encode(emit::EmitError),
    /// Emitted code reads a flag the manual leaves undefined there (a backend bug).
    UndefinedFlags(Vec<flags_check::UndefinedFlag>),
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::Phi { block } => {
                write!(f, "{block} has phis; the backend needs the function out of SSA form")
            }
            CompileError::Unverified(errs) => {
                write!(f, "the function does not verify:\n{}", crate::verify::format_errors(errs))
            }
            CompileError::InvalidLir { pass, errors } => {
                write!(f, "invalid LIR after {pass}:")?;
                for (e, text) in errors {
                    write!(f, "\n  {e}   ({})", text.as_deref().unwrap_or(""))?;
                }
                Ok(())
            }
            CompileError::Regalloc(e) => write!(f, "register allocation failed: {e}"),
            CompileError::InvalidAllocation(errs) => write_list(f, "the register allocation checker failed:", errs),
            CompileError::Encode(e) => write!(f, "encoding failed: {e}"),
            CompileError::UndefinedFlags(errs) => write_list(f, "undefined flags read:", errs),
        }
    }
}

/// `header`, then each item on its own indented line.
fn write_list<T: fmt::Display>(f: &mut fmt::Formatter<'_>, header: &str, items: &[T]) -> fmt::Result {
    write!(f, "{header}")?;
    for e in items {
        write!(f, "\n  {e}")?;
    }
    Ok(())
}

impl std::error::Error for CompileError {}

/// Statistics of every backend pass, proving each one fired.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackendStats {
    pub rationalize: rationalize::RationalizeStats,
    pub decompose: decompose::DecomposeStats,
    pub lower: lower::LowerStats,
    pub regalloc: regalloc::RegallocStats,
    /// Bytes of machine code.
    pub code_bytes: usize,
}

impl BackendStats {
    /// The counters of each backend pass, by pass, in pipeline order (the same
    /// `name=value` form as the IR passes' statistics).
    pub fn by_pass(&self) -> Vec<(&'static str, Vec<(&'static str, usize)>)> {
        let (r, d, l, a) = (&self.rationalize, &self.decompose, &self.lower, &self.regalloc);
        vec![
            ("rationalize", vec![("statements", r.statements), ("commas", r.commas), ("nodes", r.nodes)]),
            (
                "decompose",
                vec![("decomposed", d.decomposed), ("split_vars", d.split_vars), ("temps", d.temps), ("helper_calls", d.helper_calls)],
            ),
            (
                "lower",
                vec![
                    ("address_modes", l.address_modes),
                    ("immediates", l.immediates),
                    ("memory_operands", l.memory_operands),
                    ("fused_compares", l.fused_compares),
                    ("call_args", l.call_args),
                    ("dead", l.dead),
                ],
            ),
            (
                "regalloc",
                vec![
                    ("globals", a.globals),
                    ("spills", a.spills),
                    ("unspills", a.unspills),
                    ("moves", a.moves),
                    ("reused", a.reused),
                    ("aliased", a.aliased),
                    ("spill_slots", a.spill_slots),
                ],
            ),
            ("emit", vec![("code_bytes", self.code_bytes)]),
        ]
    }
}

/// Everything the backend produced: the LIR text after each pass, the allocation, the
/// code and the statistics (`tandem compile --emit lir|asm`).
#[derive(Clone, Debug)]
pub struct Staged {
    /// `(pass name, LIR printed after it)`, in pass order; the last is the allocated code.
    pub lir: Vec<(&'static str, String)>,
    pub code: MachineCode,
    pub stats: BackendStats,
}

/// Compiles `f` to machine code with the default options.
pub fn compile(f: &Function) -> Result<MachineCode, CompileError> {
    Ok(compile_with(f, RegallocOptions::default(), false)?.code)
}

/// Compiles `f` with the LIR validator after every pass and the register allocation
/// checker after allocation, in every build (the harness's checks run them in release
/// campaigns too).
pub fn compile_validated(f: &Function) -> Result<MachineCode, CompileError> {
    verify(f, &mut |_| {})?;
    Ok(build(f, RegallocOptions::default(), false, true, &mut |_| {})?.code)
}

/// [`compile_validated`] for a function verified already (by the pass manager after the
/// pass that made it), which is therefore not verified again.
pub fn compile_verified(f: &Verified) -> Result<MachineCode, CompileError> {
    Ok(build(f, RegallocOptions::default(), false, true, &mut |_| {})?.code)
}

/// Compiles `f`, returning the LIR after each backend pass as well.
pub fn compile_staged(f: &Function) -> Result<Staged, CompileError> {
    compile_with(f, RegallocOptions::default(), true)
}

fn check(pass: &'static str, f: &lir::LirFunction) -> Result<(), CompileError> {
    lir::validate(f).map_err(|errs| CompileError::InvalidLir {
        pass,
        errors: errs.into_iter().map(|e| {
            let text = e.node.map(|n| f.node_text(n));
            (e, text)
        }).collect(),
    })
}

/// Compiles `f` with explicit allocator options; `print` keeps the LIR text of every
/// stage. The validator runs after every pass in debug builds and when printing.
pub fn compile_with(f: &Function, opts: RegallocOptions, print: bool) -> Result<Staged, CompileError> {
    verify(f, &mut |_| {})?;
    build(f, opts, print, cfg!(debug_assertions) || print, &mut |_| {})
}

/// [`compile_validated`] of a function verified already (`Ok`, as
/// [`compile_verified`]) or not (`Err`), timing each step by `clock` (seconds, e.g. the
/// thread's CPU time): `(step, seconds)` in order, for the HIR verifier when it runs,
/// every backend pass, each run of the LIR validator, the allocation checker, emission
/// and the undefined-flags check (`tandem bench --profile-stages`).
pub fn compile_validated_timed(
    f: Result<&Verified, &Function>,
    clock: &dyn Fn() -> f64,
) -> Result<(MachineCode, Vec<(&'static str, f64)>), CompileError> {
    let mut times = vec![];
    let mut last = clock();
    let mut done = |step| {
        let now = clock();
        times.push((step, now - last));
        last = now;
    };
    let f = match f {
        Ok(v) => &**v,
        Err(f) => {
            verify(f, &mut done)?;
            f
        }
    };
    let code = build(f, RegallocOptions::default(), false, true, &mut done)?.code;
    Ok((code, times))
}

/// The HIR verifier on the backend's input, for a function nothing verified.
fn verify(f: &Function, done: &mut dyn FnMut(&'static str)) -> Result<(), CompileError> {
    crate::verify::verify_function(f).map_err(CompileError::Unverified)?;
    done("verify");
    Ok(())
}

/// The backend, for a verified function: `validate` runs the LIR validator after every
/// pass and the allocation checker after register allocation; `done(step)` is called as
/// each step ends.
fn build(
    f: &Function,
    opts: RegallocOptions,
    print: bool,
    validate: bool,
    done: &mut dyn FnMut(&'static str),
) -> Result<Staged, CompileError> {
    let mut stages = vec![];
    let mut stats = BackendStats::default();
    let (l, s) = rationalize::rationalize_with(f, print)?;
    stats.rationalize = s;
    done("rationalize");
    if validate {
        check("rationalize", &l)?;
        done("LIR validator");
    }
    if print {
        stages.push(("rationalize", l.to_string()));
    }
    let (decomposed, s) = decompose::decompose(&l);
    // The rationalized function's node arena serves the next function compiled.
    l.recycle();
    let mut l = decomposed;
    stats.decompose = s;
    done("decompose");
    if validate {
        check("decompose", &l)?;
        done("LIR validator");
    }
    if print {
        stages.push(("decompose", l.to_string()));
    }
    stats.lower = lower::lower(&mut l);
    done("lower");
    if validate {
        check("lower", &l)?;
        done("LIR validator");
    }
    if print {
        stages.push(("lower", l.to_string()));
    }
    let alloc = regalloc::regalloc(&l, opts).map_err(CompileError::Regalloc)?;
    stats.regalloc = alloc.stats;
    done("regalloc");
    if print {
        stages.push(("regalloc", alloc.print(&l)));
    }
    if validate {
        regalloc_check::check_allocation(&l, &alloc).map_err(CompileError::InvalidAllocation)?;
        done("allocation checker");
    }
    let mut code = emit::emit(&l, &alloc).map_err(CompileError::Encode)?;
    done("emit");
    if validate {
        code.index = Some(flags_check::check(&code).map_err(CompileError::UndefinedFlags)?);
        done("undefined-flags check");
    }
    stats.code_bytes = code.bytes.len();
    l.recycle();
    Ok(Staged { lir: stages, code, stats })
}

/// Names for the addresses a listing shows: block starts by their label (`b3`) and
/// runtime helpers by name (`@log`).
struct Labels(std::collections::HashMap<u64, String>);

impl iced_x86::SymbolResolver for Labels {
    fn symbol(
        &mut self,
        _instruction: &iced_x86::Instruction,
        _operand: u32,
        _instruction_operand: Option<u32>,
        address: u64,
        _address_size: u32,
    ) -> Option<iced_x86::SymbolResult<'_>> {
        self.0.get(&address).map(|name| iced_x86::SymbolResult::with_str(address, name))
    }
}

/// A deterministic xorshift for the backend's randomized tests (the encoder's layouts,
/// the flags check's programs), so their cases are the same on every run.
#[cfg(test)]
pub(crate) struct TestRng(pub u64);

#[cfg(test)]
impl TestRng {
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Disassembles machine code loaded at [`CODE_BASE`], one instruction per line with its
/// address and bytes, in Intel syntax: each block starts with its label, jumps name their
/// target block and calls the helper they call.
pub fn disassemble(code: &MachineCode) -> String {
    use iced_x86::{Decoder, DecoderOptions, Formatter, IntelFormatter};
    let mut names: std::collections::HashMap<u64, String> =
        crate::abi::RuntimeHelper::all().into_iter().map(|h| (h.address() as u64, h.to_string())).collect();
    let mut starts: std::collections::HashMap<u64, Vec<String>> = std::collections::HashMap::new();
    for (b, offset) in &code.blocks {
        let address = (CODE_BASE + offset) as u64;
        names.entry(address).or_insert_with(|| b.to_string());
        starts.entry(address).or_default().push(b.to_string());
    }
    let mut decoder = Decoder::with_ip(32, &code.bytes, CODE_BASE as u64, DecoderOptions::NONE);
    let mut fmt = IntelFormatter::with_options(Some(Box::new(Labels(names))), None);
    let mut out = String::new();
    let mut text = String::new();
    for ins in &mut decoder {
        text.clear();
        fmt.format(&ins, &mut text);
        for label in starts.remove(&ins.ip()).unwrap_or_default() {
            out += &format!("{label}:\n");
        }
        let start = (ins.ip() - CODE_BASE as u64) as usize;
        let bytes: String = code.bytes[start..start + ins.len()].iter().map(|b| format!("{b:02x}")).collect();
        out += &format!("{:08x}  {bytes:<20} {text}\n", ins.ip());
    }
    out
}
