//! A pass that panics is a finding of its stage, not the end of the harness (a file of its
//! own: a planted bug holds for the whole process).

use tandem_core::ir::Function;
use tandem_oracle::cases::casefile::CaseFile;
use tandem_oracle::judge::check;
use tandem_oracle::exec::emu::Emulator;

fn dce_panics(stage: &str, _f: &mut Function) {
    if stage == "dce" {
        panic!("planted panic in dce");
    }
}

#[test]
fn a_pass_that_panics_is_a_finding_of_its_stage() {
    check::plant_bug(Some(dce_panics));
    let case = CaseFile::parse(
        "function %f(i32 %a) -> i32 {\nb0:\n    ret add(%a, 1)\n}\n; run: %f(2)\n; expect: return 3\n",
    )
    .expect("a case file");
    let mut emu = Emulator::new().expect("an emulator");
    let checks = check::check_case(&case, &mut emu).expect("the runs fit the function");
    let lines: Vec<String> = checks[0].problems.iter().flat_map(|p| p.lines.iter().map(|l| format!("{}: {l}", p.stage))).collect();
    assert!(
        lines.iter().any(|l| l.starts_with("IR passes: ") && l.contains("a pass panicked: planted panic in dce")),
        "{lines:?}"
    );
    // The x86 code without IR passes still runs and agrees.
    assert!(!lines.iter().any(|l| l.starts_with("x86: ")), "{lines:?}");
}
