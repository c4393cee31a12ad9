//! Planted bugs shared by the campaign tests (each test file is its own crate and
//! includes this module).

use tandem_core::ir::{BinOp, ExprData, Function, Terminator};
use tandem_oracle::campaign::{self, Campaign, ProfileChoice, Shard};
use tandem_oracle::gen::Profile;

/// `dce` flips the low bit of every returned value (a finding in most seeds).
#[allow(dead_code)]
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

/// A campaign over `count` small-profile seeds from `start`, reducing, without the
/// validator, in a fresh folder of the temporary directory named after `name`.
#[allow(dead_code)]
pub fn small_campaign(name: &str, start: u64, count: u64) -> Campaign {
    let out_dir = std::env::temp_dir().join(format!("tandem-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    Campaign {
        start,
        count: Some(count),
        seconds: None,
        profile: ProfileChoice::One(Profile::Small),
        shard: Shard::ALL,
        out_dir,
        reduce: true,
        journal_limit: campaign::JOURNAL_LIMIT,
        verify_permille: 0,
        x86: None,
    }
}
