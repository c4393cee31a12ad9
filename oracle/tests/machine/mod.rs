//! What the tests on hand-written machine code and small IR functions share (each test
//! file is its own crate and includes this module, using the part it needs): a listing
//! assembled at the code address, a parsed and verified function, a run input.

#![allow(dead_code)]

use iced_x86::code_asm::{CodeAssembler, IcedError};
use tandem_core::abi::{MachineCode, CODE_BASE};
use tandem_core::ir::Function;
use tandem_core::text::parse_module;
use tandem_oracle::exec::interp::{RunInput, DEFAULT_FUEL};
use tandem_oracle::exec::outcome::Value;

/// The machine code `build` assembles, placed at `CODE_BASE`.
pub fn asm(build: impl FnOnce(&mut CodeAssembler) -> Result<(), IcedError>) -> MachineCode {
    let mut a = CodeAssembler::new(32).unwrap();
    build(&mut a).unwrap();
    MachineCode::from_bytes(a.assemble(CODE_BASE as u64).unwrap())
}

/// The first function of the module `src`, which must parse and verify.
pub fn func(src: &str) -> Function {
    let (m, _) = parse_module(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    tandem_core::verify::verify_module(&m).unwrap_or_else(|e| panic!("{e:?}\n{src}"));
    m.functions.into_iter().next().unwrap()
}

/// A run with these arguments, an empty heap and callframe, and the default fuel.
pub fn input(args: Vec<Value>) -> RunInput {
    RunInput { args, heap: vec![], callframe: vec![], fuel: DEFAULT_FUEL }
}
