//! Planted bugs shared by the campaign tests (each test file is its own crate and
//! includes this module).

use tandem_core::ir::{BinOp, ExprData, Function, Terminator};

/// `dce` flips the low bit of every returned value (a finding in most seeds).
pub fn dce_flips_returns(stage: &str, f: &mut Function) {
    if stage != "dce" {
        return;
    }
    for b in f.layout.clone() {
        if let Terminator::Return(e) = f.blocks[b].term.clone() {
            let one = f.add_expr(ExprData::Const { ty: f.ret, value: 1 });
            let x = f.add_expr(ExprData::Binary { op: BinOp::Xor, lhs: e, rhs: one });
            f.blocks[b].term = Terminator::Return(x);
        }
    }
}
