//! The finding pages and the campaign page, on a real finding of each kind: bugs planted
//! in a pass or the backend's input ([`check::plant_bug`]), one finding file each (written
//! as the campaign writes them), `tandem explain`'s page checked for what it must show;
//! a small campaign with the validator on every seed for a validator counterexample and
//! `index.html`. An encoder disagreement cannot be planted (it is a bug of the encoder,
//! which no hook reaches), so its page is rendered from the validator's answer built
//! with real interpreter outcomes. One test, in phases, because a planted bug holds for
//! the whole process.
//!
//! With `TANDEM_PAGES_OUT=DIR` the pages are kept in DIR, where `ci/pages` renders them in
//! headless Chromium; otherwise they go to a temporary folder that is removed.

mod common;
use common::dce_flips_returns;
use std::path::{Path, PathBuf};
use tandem_core::ir::{BinOp, CmpOp, ExprData, Function, MemWidth, Phi, Terminator, Type};
use tandem_oracle::campaign::{self, problem_comments, Campaign, ProfileChoice, Shard};
use tandem_oracle::cases::casefile::CaseFile;
use tandem_oracle::exec::emu::Emulator;
use tandem_oracle::exec::interp;
use tandem_oracle::gen::Profile;
use tandem_oracle::judge::check::{self, PlantedBug};
use tandem_oracle::show::{explain, index};
use tandem_oracle::smt;

/// `ssa-destroy` leaves a phi behind: the verifier rejects its output.
fn ssa_destroy_leaves_a_phi(stage: &str, f: &mut Function) {
    if stage == "ssa-destroy" {
        let b = *f.layout.last().unwrap();
        let dest = f.params[0];
        f.blocks[b].phis.push(Phi { dest, args: vec![] });
    }
}

/// `dce` flips the low bit of the returned value when the first parameter is 0x5eed1234:
/// no generated run passes that value, the validator finds it (a finding of its own).
fn dce_flips_returns_on_one_input(stage: &str, f: &mut Function) {
    let Some(&p) = f.params.first() else { return };
    if stage != "dce" || f.ret != Type::I32 || f.locals[p].ty != Type::I32 {
        return;
    }
    for b in f.layout.clone() {
        if let Terminator::Return(e) = f.blocks[b].term.clone() {
            let x = f.add_expr(ExprData::Local(p));
            let k = f.add_expr(ExprData::Const { ty: Type::I32, value: 0x5eed1234 });
            let on = f.add_expr(ExprData::Cmp { op: CmpOp::Eq, lhs: x, rhs: k });
            let flipped = f.add_expr(ExprData::Binary { op: BinOp::Xor, lhs: e, rhs: on });
            f.blocks[b].term = Terminator::Return(flipped);
        }
    }
}

/// `dce` panics.
fn dce_panics(stage: &str, _f: &mut Function) {
    if stage == "dce" {
        panic!("planted panic in dce");
    }
}

/// The backend's input stores to address 0 first: the x86 code faults.
fn backend_stores_to_null(stage: &str, f: &mut Function) {
    if stage == "x86" {
        let addr = f.add_expr(ExprData::Const { ty: Type::I32, value: 0 });
        let value = f.add_expr(ExprData::Const { ty: Type::I32, value: 0 });
        let store = f.add_expr(ExprData::Store { width: MemWidth::W32, addr, value });
        let entry = f.entry();
        f.blocks[entry].stmts.insert(0, store);
    }
}

/// The backend's input keeps a phi: the backend refuses it.
fn backend_gets_a_phi(stage: &str, f: &mut Function) {
    if stage == "x86" {
        let b = f.entry();
        let dest = f.params[0];
        f.blocks[b].phis.push(Phi { dest, args: vec![] });
    }
}

/// A function whose every run goes through every pass: `ret add(%a, 1)`.
const CASE: &str = "function %f(i32 %a) -> i32 {\nb0:\n    ret add(%a, 1)\n}\n; run: %f(2)\n; expect: return 3\n";

fn out_dir() -> (PathBuf, bool) {
    match std::env::var_os("TANDEM_PAGES_OUT") {
        Some(d) => (PathBuf::from(d), true),
        None => (std::env::temp_dir().join(format!("tandem-test-pages-{}", std::process::id())), false),
    }
}

/// Writes `CASE` with the problems the check finds now as its comments (as the campaign
/// writes a finding), under `name`.
fn write_finding(dir: &Path, name: &str, emu: &mut Emulator) -> PathBuf {
    let case = CaseFile::parse(CASE).unwrap();
    let checks = check::check_case(&case, emu).unwrap();
    let problems: Vec<(u32, check::Problem)> = checks[0].problems.iter().map(|p| (case.runs[0].line, p.clone())).collect();
    assert!(!problems.is_empty(), "{name}: the planted bug is not found");
    let path = dir.join(format!("{name}.tir"));
    std::fs::write(&path, problem_comments(&problems) + CASE).unwrap();
    path
}

/// The page of the finding `name` with bug `bug` planted; written beside it.
fn page_of(dir: &Path, name: &str, bug: PlantedBug, emu: &mut Emulator) -> String {
    check::plant_bug(Some(bug));
    let path = write_finding(dir, name, emu);
    let html = explain::explain(&path, emu).unwrap_or_else(|e| panic!("{name}: {e}"));
    std::fs::write(path.with_extension("html"), &html).unwrap();
    html
}

/// Whether Graphviz is here: the pages say so instead of drawing when it is not.
fn has_dot() -> bool {
    std::process::Command::new("dot").arg("-V").output().is_ok()
}

fn assert_has(html: &str, what: &str, name: &str) {
    assert!(html.contains(what), "{name}: the page lacks {what:?}:\n{html}");
}

#[test]
fn each_kind_of_finding_has_a_page_that_shows_it() {
    let (dir, keep) = out_dir();
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut emu = Emulator::new().unwrap();
    let picture = if has_dot() { "<svg" } else { "Graphviz `dot` is not installed" };

    // A difference: `dce` turns `return 3` into `return 2` (3 xor 1).
    let html = page_of(&dir, "difference", dce_flips_returns, &mut emu);
    assert_has(&html, "<title>Finding: pass dce: wrong outcome</title>", "difference");
    assert_has(&html, "Reproduces", "difference");
    assert_has(&html, "<tr class=\"diff\"><td class=\"mono\">end</td>", "difference");
    assert_has(&html, "<span class=\"line\">return 3</span></td><td class=\"mono\"><span class=\"line\">return 2</span>", "difference");
    assert_has(&html, "<span class=\"line ins\">+     ret xor(", "difference");
    assert_has(&html, "<td class=\"mono\">%a</td><td class=\"mono\">2</td>", "difference");
    assert_has(&html, picture, "difference");
    assert_has(&html, "tandem reduce", "difference");
    assert_has(&html, "--signature &#39;pass dce: wrong outcome&#39;", "difference");

    // A verifier error: the phi `ssa-destroy` left is shown, with the verifier's words.
    let html = page_of(&dir, "verifier", ssa_destroy_leaves_a_phi, &mut emu);
    assert_has(&html, "<title>Finding: pass ssa-destroy: verifier error</title>", "verifier");
    assert_has(&html, "The verifier rejects the IR after the step", "verifier");
    assert_has(&html, "<span class=\"line ins\">+     %a = phi()</span>", "verifier");

    // A pass failure: no IR after `dce`, and the page says why.
    let html = page_of(&dir, "panic", dce_panics, &mut emu);
    assert_has(&html, "pass failure</title>", "panic");
    assert_has(&html, "the pass panicked: planted panic in dce", "panic");

    // An emulator fault: the store to address 0, marked in the listing.
    let html = page_of(&dir, "fault", backend_stores_to_null, &mut emu);
    assert_has(&html, "<title>Finding: x86: emulator fault</title>", "fault");
    assert_has(&html, "The emulator stopped at", "fault");
    assert_has(&html, "<span class=\"line hit\">=&gt; ", "fault");
    assert_has(&html, "<span class=\"line ins\">+     store.32(0, 0)</span>", "fault");

    // A backend error: the backend refuses its input; no listing.
    let html = page_of(&dir, "backend", backend_gets_a_phi, &mut emu);
    assert_has(&html, "<title>Finding: x86: backend checker error</title>", "backend");
    assert_has(&html, "the backend failed: b0 has phis", "backend");

    // A finding that no longer reproduces says so.
    check::plant_bug(None);
    let html = explain::explain(&dir.join("difference.tir"), &mut emu).unwrap();
    assert_has(&html, "Does not reproduce", "fixed");
    assert_has(&html, "stage `IR passes` disagrees with the reference interpreter (pass dce: wrong outcome)", "fixed");

    // A file without a run tests nothing: bad input at its first line, not a page that
    // says it does not reproduce (as `tandem run` refuses it).
    let module_only = dir.join("module-only.tir");
    std::fs::write(&module_only, "function %f() -> i32 {\nb0:\n    ret 1\n}\n").unwrap();
    match explain::explain(&module_only, &mut emu) {
        Err(explain::ExplainError::BadInput(b)) => assert!(b.to_string().contains("module-only.tir:1:1: no `; run:` line"), "{b}"),
        other => panic!("a file without a run: {:?}", other.map(|_| "a page")),
    }

    // An encoder disagreement, from the validator's answer on real outcomes: the model
    // says the pass changes %f(7), the interpreter finds 8 on both sides.
    let case = CaseFile::parse(CASE).unwrap();
    let f = case.module.functions[0].clone();
    let input = case.runs[0].input(&f).map(|mut i| {
        i.args[0] = tandem_oracle::exec::outcome::Value::new(Type::I32, 7);
        i
    }).unwrap();
    let outcome = interp::run(&f, &input).unwrap();
    let answer = smt::Answer::EncoderDisagreement(Box::new(smt::Disagreement {
        input,
        before: outcome.clone(),
        after: outcome,
        why: "the model's outcomes differ, the interpreter's do not".into(),
    }));
    let path = smt::write_finding(&dir, "disagreement", &f, "cprop", &answer).unwrap().unwrap();
    let z3 = explain::Z3 { function: f, pass: "cprop".into(), answer };
    let ir = explain::ir_change(None, Some(&z3));
    let (outcomes, x86) = explain::outcomes(None, Some(&z3), ir.as_ref(), &mut emu).unwrap();
    let e = explain::Evidence {
        shown: path.clone(),
        text: std::fs::read_to_string(&path).unwrap(),
        claim: vec![],
        path: path.clone(),
        located: None,
        z3: Some(z3),
        ir,
        outcomes,
        x86,
    };
    let html = explain::render(&e);
    std::fs::write(path.with_extension("html"), &html).unwrap();
    assert_has(&html, "<title>Finding: z3 pass cprop: validator encoder disagreement</title>", "disagreement");
    assert_has(&html, "<td class=\"mono\">%a</td><td class=\"mono\">7</td>", "disagreement");
    assert_has(&html, "<span class=\"line\">return 8</span></td><td class=\"mono\"><span class=\"line\">return 8</span>", "disagreement");

    // A campaign with the validator on every seed: a `dce` slip on one input that no
    // generated run passes is the validator's finding; the index links each signature
    // to its page.
    check::plant_bug(Some(dce_flips_returns_on_one_input));
    let c = Campaign {
        start: 0,
        count: Some(4),
        seconds: None,
        profile: ProfileChoice::One(Profile::Small),
        shard: Shard::ALL,
        out_dir: dir.join("campaign"),
        reduce: true,
        journal_limit: campaign::JOURNAL_LIMIT,
        verify_permille: 1000,
        x86: None,
    };
    let s = campaign::run(&c, 1, |_| {}).unwrap();
    let groups = s.signatures();
    // The validator's finding is signed like a stage check's would be.
    let z3 = s.findings.iter().find(|f| f.stage.starts_with("z3 pass")).expect("a validator finding");
    assert_eq!(z3.signature, "pass dce: wrong outcome");
    let index_path = index::write_campaign_pages(&c.out_dir, &s, &c.config_record(1), &mut emu).unwrap();
    let html = std::fs::read_to_string(&index_path).unwrap();
    for g in &groups {
        assert_has(&html, &tandem_oracle::show::html::esc(&g.signature), "index");
        let page = g.representative.path.with_extension("html");
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        assert_has(&html, &format!("<a href=\"{name}\">explained</a>"), "index");
        assert!(page.is_file(), "no page {}", page.display());
    }
    assert_has(&html, "polyline", "index");
    assert_has(&html, "tree moves refused: the local is used before being defined", "index");
    assert_has(&html, "<th>counterexample</th>", "index");
    let page = explain::explain(&z3.path, &mut emu).unwrap();
    assert_has(&page, "The Z3 validator on pass <code>dce</code>", "validator");
    assert_has(&page, "counterexample: args", "validator");
    check::plant_bug(None);
    if !keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
