//! Findings and their signatures, shared by the campaign and the reducer: what one failing
//! case is ([`Finding`]), the name of its likely root cause ([`signature`]: the guilty
//! stage and the kind of difference), the groups of findings with one signature, and the
//! comment lines that describe a case's problems at the top of its file.

use crate::judge::check::Problem;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The signature of a problem: the name of its likely root cause, so that one bug gives
/// one signature however the programs that show it differ. It is the guilty component and
/// the kind of failure, e.g. `pass cprop: wrong outcome`, `x86: emulator fault`,
/// `pass ssa-destroy: verifier error`:
///
/// * the guilty component is the first stage that disagrees: the pass that changed the
///   outcome (`pass cprop` whether the pipeline or `cprop` alone on HIR showed it: one
///   pass, one bug), or `x86` for the backend (alone or on optimized IR: when the IR
///   passes all agree, the backend is guilty either way). The problem's stage keeps the
///   detail.
/// * the kind is how the run first went wrong: an outcome that differs (`wrong outcome`,
///   whichever of return value, trace, heap or callframe a program happens to expose first,
///   or the x86 code reading or writing unmapped memory next to the heap where the
///   reference stayed in bounds: an out-of-bounds end, see [`heap_neighbour_fault`]; or
///   the x86 code running past the most instructions the reference's run may take: it
///   does not end where the program ends, as a pass that makes the interpreter run out of
///   fuel does not, and one wrong value shows as either a wrong end or a loop that runs
///   on, depending on which loop it feeds),
///   or a failure of its own (`trap rule`: `ssapre` inserted a trapping computation the
///   input does not anticipate; `emulator fault`, `calling convention`,
///   `verifier error`, `pass failure`, `backend checker error`, `encoder disagreement`).
///   A validator counterexample is a replayed outcome difference of its pass:
///   `pass P: wrong outcome`, the same root cause the differential check names.
///
/// Older spellings (`pass cprop on HIR: heap`, `x86 after ...: end`, `x86: emulator timeout`, `z3 pass P:
/// validator counterexample`) are read by [`normalize_signature`].
pub fn signature(p: &Problem) -> String {
    normalize_signature(&raw_signature(p))
}

/// The stage and the first kind of difference as the problem states them.
fn raw_signature(p: &Problem) -> String {
    let text: Vec<&str> = p.lines.iter().flat_map(|l| l.lines()).map(str::trim_start).collect();
    let first = text.first().copied().unwrap_or("");
    let backticked = |l: &str| l.split('`').nth(1).map(str::to_string);
    let guilty = if p.stage.starts_with("IR pass") {
        let on_hir = if p.stage.ends_with("on HIR") { " on HIR" } else { "" };
        // "outcome changed after pass `P`", or the anticipability checker's "pass `P` broke
        // the trap rule".
        let named = text.iter().find(|l| l.contains("after pass `")).and_then(|l| backticked(l.split("after pass").nth(1)?));
        let named = named.or_else(|| text.iter().find(|l| l.starts_with("pass `")).and_then(|l| backticked(l)));
        match named {
            Some(pass) => format!("pass {pass}{on_hir}"),
            None => p.stage.clone(),
        }
    } else {
        p.stage.clone()
    };
    let kind = if first.starts_with("crash:") {
        // A panic no stage caught as its own (`campaign::driver`'s workers).
        "crash"
    } else if first.starts_with("hang:") {
        // A seed the campaign's watchdog stopped in a pass or the backend.
        "hang"
    } else if text.iter().any(|l| l.contains("fails verification")) {
        "verifier error"
    } else if text.iter().any(|l| l.contains("broke the trap rule")) {
        "trap rule"
    } else if text.iter().any(|l| l.contains("encoder disagreement")) {
        "encoder disagreement"
    } else if text.iter().any(|l| l.contains("counterexample")) {
        "validator counterexample"
    } else if first.starts_with("the backend failed") {
        "backend checker error"
    } else if first.starts_with("the IR passes failed") || first.starts_with("per-pass check") {
        "pass failure"
    } else if first.starts_with("fault") && !heap_neighbour_fault(first) {
        "emulator fault"
    } else if ["callee-saved", "esp wrong", "direction flag", "wrote callframe byte"].iter().any(|k| first.starts_with(k)) {
        "calling convention"
    } else {
        // An outcome that differs, a fault next to the heap, or a timeout (see above).
        "wrong outcome"
    };
    format!("{guilty}: {kind}")
}

/// How far from the heap an unmapped data access still counts as a heap access out of
/// bounds: nothing else is mapped within 64 KiB of it (the callframe is 1 MiB above).
const HEAP_NEIGHBOURHOOD: u32 = 0x1_0000;

/// Whether an emulator fault is a read or write of unmapped memory next to the heap:
/// the x86 form of the interpreter's `invalid out_of_bounds` end. The reference run of
/// the same input stayed within the heap (a run it finds invalid is never compared), so
/// the compiled code ended differently from the program: a wrong outcome, as a wrong
/// address inside the heap is (one slip of an address computation shows as either,
/// depending on where the address lands). Faults elsewhere (a wild jump, the stack's
/// guard pages, a write to the code) are the backend breaking the machine's rules, which
/// no program can do: `emulator fault`.
fn heap_neighbour_fault(first: &str) -> bool {
    use tandem_core::ir::{HEAP_BASE, HEAP_SIZE};
    let data = first.contains("read of unmapped memory") || first.contains("write to unmapped memory");
    let touched = first.split("touching ").nth(1).and_then(|t| t.split_whitespace().next()).and_then(|t| u32::from_str_radix(t.trim_start_matches("0x"), 16).ok());
    let near = |a: u32| (HEAP_BASE.saturating_sub(HEAP_NEIGHBOURHOOD)..HEAP_BASE + HEAP_SIZE + HEAP_NEIGHBOURHOOD).contains(&a);
    data && touched.is_some_and(near)
}

/// The kinds of outcome difference older signatures named one by one.
const OUTCOME_KINDS: [&str; 7] = ["end", "trace", "heap", "callframe", "other", "emulator timeout", "wrong outcome"];

/// The signature `s` names, in today's spelling: the one [`signature`] gives. Any
/// signature a report or a finding file has printed is accepted; text that is not a
/// signature comes back trimmed and unchanged.
pub fn normalize_signature(s: &str) -> String {
    let s = s.trim();
    let Some((stage, kind)) = s.rsplit_once(": ") else { return s.to_string() };
    let (stage, kind) = (stage.trim(), kind.trim());
    let mut guilty = stage.to_string();
    let mut kind = if OUTCOME_KINDS.contains(&kind) { "wrong outcome".to_string() } else { kind.to_string() };
    if let Some(pass) = stage.strip_prefix("z3 pass ") {
        if kind == "validator counterexample" {
            guilty = format!("pass {pass}");
            kind = "wrong outcome".into();
        }
    } else if let Some(pass) = stage.strip_prefix("pass ") {
        guilty = format!("pass {}", pass.strip_suffix(" on HIR").unwrap_or(pass));
    } else if stage == "x86" || stage.starts_with("x86 after ") {
        guilty = "x86".into();
    }
    format!("{guilty}: {kind}")
}

/// One failing case.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Finding {
    pub seed: u64,
    pub profile: String,
    /// The signature it is grouped under: the one its first problem showed
    /// ([`signature`]), unless the reduced case of the first finding of that signature
    /// showed another first (see `found_signature`).
    pub signature: String,
    /// The signature its first problem showed when it was found, when it was re-signed:
    /// the reduced case of the first finding with this signature failed first with
    /// `signature` (an earlier guilty stage, or another way the same slip shows), so
    /// every finding found with it is grouped there and counted once. `None`: not re-signed.
    #[serde(default)]
    pub found_signature: Option<String>,
    /// The stage of its first problem.
    pub stage: String,
    /// The first line of its first problem.
    pub message: String,
    /// The replayable case file written for it.
    pub path: PathBuf,
    /// The reduced case, for the first finding of a signature.
    pub reduced: Option<PathBuf>,
    /// Whether its reduction was abandoned because the campaign's time was up or it was
    /// interrupted: `tandem reduce` does it (the summary says so).
    #[serde(default)]
    pub reduce_left: bool,
}

/// The findings of one signature.
#[derive(Clone, Debug)]
pub struct SignatureGroup {
    pub signature: String,
    pub count: u64,
    /// The first finding (lowest seed) of the signature.
    pub representative: Finding,
    /// The reduced case of the signature, if one was made.
    pub reduced: Option<PathBuf>,
}

/// The `;` comment lines that describe `problems` above a case: every line of every
/// message (some span several lines) is commented, so the file parses as a case file.
pub fn problem_comments(problems: &[(u32, Problem)]) -> String {
    let mut text = String::new();
    for (_, p) in problems {
        text += &format!("; stage `{}` disagrees with the reference interpreter ({}):\n", p.stage, signature(p));
        for l in p.lines.iter().flat_map(|l| l.lines()) {
            text += &format!("; | {l}\n");
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(stage: &str, lines: &[&str]) -> Problem {
        Problem { stage: stage.into(), lines: lines.iter().map(|l| l.to_string()).collect(), side_by_side: None }
    }

    /// Signatures, worked out by hand from the messages each stage prints.
    #[test]
    fn signatures_name_the_guilty_stage_and_the_kind() {
        let cases = [
            (problem("IR passes", &["outcome changed after pass `cprop`", "  heap 0x100000..0x100001: expected 01, got 02"]), "pass cprop: wrong outcome"),
            (problem("IR passes", &["outcome changed after pass `dce`", "  end: expected return 1, got return 2"]), "pass dce: wrong outcome"),
            (problem("IR pass cprop on HIR", &["outcome changed after pass `cprop`", "  trace event 0: expected @log(1), got nothing"]), "pass cprop: wrong outcome"),
            (problem("IR passes", &["outcome changed after pass `ssa`", "  expected return 1, got invalid fuel_exhausted"]), "pass ssa: wrong outcome"),
            (problem("x86", &["callframe slot 1: expected 5, got 6"]), "x86: wrong outcome"),
            (
                problem("IR passes", &["pass `ssapre` broke the trap rule of insertions", "  inserted `%p = udiv(1, %d)` in b2: its operands are not values of the input function"]),
                "pass ssapre: trap rule",
            ),
            (problem("x86", &["fault: unmapped read at pc 0x00400010\n  registers: eax=0\n  0x00400010 mov eax,[eax]"]), "x86: emulator fault"),
            (problem("x86", &["fault: write to unmapped memory at pc 0x00400326 touching 0x000ff909\n  registers: eax=0"]), "x86: wrong outcome"),
            (problem("x86 after ssa,dce", &["fault: read of unmapped memory at pc 0x0040173f touching 0x00101004"]), "x86: wrong outcome"),
            (problem("x86", &["fault: read of unmapped memory at pc 0x0040173f touching 0x00000004"]), "x86: emulator fault"),
            (problem("x86", &["fault: write to unmapped memory at pc 0x0040173f touching 0x007ffffc"]), "x86: emulator fault"),
            (problem("x86", &["fault: execution of unmapped memory at pc 0x00100010"]), "x86: emulator fault"),
            (problem("x86", &["timeout: more than 100 instructions\n  registers: eax=0"]), "x86: wrong outcome"),
            (problem("x86 after ssa,dce", &["timeout: more than 2 us of CPU time, the most 9 instructions may take\n  registers: eax=0"]), "x86: wrong outcome"),
            (problem("x86", &["callee-saved ebx clobbered: expected 0x00000001, found 0x00000002"]), "x86: calling convention"),
            (
                problem("IR passes", &["per-pass check: after pass `ssa-destroy`, function %f fails verification:\n  b0: bad\n  b1: worse"]),
                "pass ssa-destroy: verifier error",
            ),
            (problem("x86 after ssa,dce,ssa-destroy,cprop", &["the backend failed: register allocation checker: v3 not live"]), "x86: backend checker error"),
            (problem("x86 after ssa,dce", &["the IR passes failed: function %f is not in HIR form"]), "x86: pass failure"),
            (problem("pass dce", &["hang: seed 3 (profile small) ran for 300 s in stage `pass dce`, past the watchdog's 300 s"]), "pass dce: hang"),
            (problem("harness (generator)", &["crash: the check panicked in stage `generator`: oops (a harness bug: ...)"]), "harness (generator): crash"),
        ];
        for (p, want) in cases {
            assert_eq!(signature(&p), want, "{p:?}");
        }
    }

    /// One root cause, one signature: the stage and the field a program happens to expose
    /// first do not split it, and every spelling a report or finding file printed before
    /// names the same signature.
    #[test]
    fn old_spellings_name_todays_signature() {
        let cases = [
            ("pass cprop on HIR: heap", "pass cprop: wrong outcome"),
            ("pass cprop: end", "pass cprop: wrong outcome"),
            ("  pass cprop: callframe ", "pass cprop: wrong outcome"),
            ("x86 after ssa,memopt,ssapre,dce,ssa-destroy,cprop: end", "x86: wrong outcome"),
            ("x86 after ssa,dce: emulator fault", "x86: emulator fault"),
            ("z3 pass ssapre: validator counterexample", "pass ssapre: wrong outcome"),
            ("z3 pass ssapre: encoder disagreement", "z3 pass ssapre: encoder disagreement"),
            ("pass ssa-destroy: verifier error", "pass ssa-destroy: verifier error"),
            ("x86: calling convention", "x86: calling convention"),
            ("x86 after ssa,dce: emulator timeout", "x86: wrong outcome"),
        ];
        for (old, want) in cases {
            assert_eq!(normalize_signature(old), want, "{old}");
        }
        let validator = problem("z3 pass cprop", &["validator counterexample on %f: counterexample: args (1)\n  end: expected return 1, got return 2"]);
        assert_eq!(signature(&validator), "pass cprop: wrong outcome");
    }

    /// Every line of a multi-line message (a verifier error, an emulator fault with its
    /// disassembly) is a comment, so the finding file still parses.
    #[test]
    fn problem_comments_comment_every_line() {
        let verifier = problem("IR passes", &["per-pass check: after pass `dce`, function %f fails verification:\n  b0: x\n  b1: y"]);
        let fault = problem("x86", &["fault: unmapped read at pc 0x00400010\n  registers: eax=0\n  => 00400010  mov eax,[eax]"]);
        let text = problem_comments(&[(1, verifier), (1, fault)]);
        assert_eq!(text.lines().count(), 2 + 3 + 3);
        assert!(text.lines().all(|l| l.starts_with("; ")), "{text}");
        assert!(text.contains("; |   b1: y\n"));
        let case = text + "function %f() -> i32 {\nb0:\n    ret 1\n}\n; run: %f()\n; expect: return 1\n";
        let parsed = crate::cases::casefile::CaseFile::parse(&case).unwrap();
        assert_eq!(parsed.runs.len(), 1);
    }
}
