//! Findings and their signatures, shared by the campaign and the reducer: what one failing
//! case is ([`Finding`]), the name of its likely root cause ([`signature`]: the guilty
//! stage and the kind of difference), the groups of findings with one signature, and the
//! comment lines that describe a case's problems at the top of its file.

use crate::judge::check::Problem;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The signature of a problem: the guilty stage (naming the pass when the IR passes are
/// guilty) and the kind of difference, e.g. `pass cprop: heap`, `x86: end`,
/// `x86 after ssa,dce,ssa-destroy,cprop: emulator fault`. Findings with the same
/// signature are most likely the same bug.
pub fn signature(p: &Problem) -> String {
    let text: Vec<&str> = p.lines.iter().flat_map(|l| l.lines()).map(str::trim_start).collect();
    let first = text.first().copied().unwrap_or("");
    let backticked = |l: &str| l.split('`').nth(1).map(str::to_string);
    let guilty = if p.stage.starts_with("IR pass") {
        let on_hir = if p.stage.ends_with("on HIR") { " on HIR" } else { "" };
        match text.iter().find(|l| l.contains("after pass `")).and_then(|l| backticked(l.split("after pass").nth(1)?)) {
            Some(pass) => format!("pass {pass}{on_hir}"),
            None => p.stage.clone(),
        }
    } else {
        p.stage.clone()
    };
    let kind = if text.iter().any(|l| l.contains("fails verification")) {
        "verifier error"
    } else if text.iter().any(|l| l.contains("encoder disagreement")) {
        "encoder disagreement"
    } else if text.iter().any(|l| l.contains("counterexample")) {
        "validator counterexample"
    } else if first.starts_with("the backend failed") {
        "backend checker error"
    } else if first.starts_with("the IR passes failed") || first.starts_with("per-pass check") {
        "pass failure"
    } else if first.starts_with("timeout") {
        "emulator timeout"
    } else if first.starts_with("fault") {
        "emulator fault"
    } else if ["callee-saved", "esp wrong", "direction flag", "wrote callframe byte"].iter().any(|k| first.starts_with(k)) {
        "calling convention"
    } else {
        // A difference of outcomes: the first line names the first part that differs.
        let diff = text.iter().find(|l| !l.starts_with("outcome changed")).copied().unwrap_or("");
        if diff.starts_with("end") || diff.starts_with("expected") {
            "end"
        } else if diff.starts_with("trace") {
            "trace"
        } else if diff.starts_with("heap") {
            "heap"
        } else if diff.starts_with("callframe") {
            "callframe"
        } else {
            "other"
        }
    };
    format!("{guilty}: {kind}")
}

/// One failing case.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Finding {
    pub seed: u64,
    pub profile: String,
    /// The signature of its first problem.
    pub signature: String,
    /// The stage of its first problem.
    pub stage: String,
    /// The first line of its first problem.
    pub message: String,
    /// The replayable case file written for it.
    pub path: PathBuf,
    /// The reduced case, for the first finding of a signature.
    pub reduced: Option<PathBuf>,
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
            (problem("IR passes", &["outcome changed after pass `cprop`", "  heap 0x100000..0x100001: expected 01, got 02"]), "pass cprop: heap"),
            (problem("IR passes", &["outcome changed after pass `dce`", "  end: expected return 1, got return 2"]), "pass dce: end"),
            (problem("IR pass cprop on HIR", &["outcome changed after pass `cprop`", "  trace event 0: expected @log(1), got nothing"]), "pass cprop on HIR: trace"),
            (problem("IR passes", &["outcome changed after pass `ssa`", "  expected return 1, got invalid fuel_exhausted"]), "pass ssa: end"),
            (problem("x86", &["callframe slot 1: expected 5, got 6"]), "x86: callframe"),
            (problem("x86", &["fault: unmapped read at pc 0x00400010\n  registers: eax=0\n  0x00400010 mov eax,[eax]"]), "x86: emulator fault"),
            (problem("x86", &["timeout: more than 100 instructions\n  registers: eax=0"]), "x86: emulator timeout"),
            (problem("x86", &["callee-saved ebx clobbered: expected 0x00000001, found 0x00000002"]), "x86: calling convention"),
            (
                problem("IR passes", &["per-pass check: after pass `ssa-destroy`, function %f fails verification:\n  b0: bad\n  b1: worse"]),
                "pass ssa-destroy: verifier error",
            ),
            (problem("x86 after ssa,dce,ssa-destroy,cprop", &["the backend failed: register allocation checker: v3 not live"]), "x86 after ssa,dce,ssa-destroy,cprop: backend checker error"),
            (problem("x86 after ssa,dce", &["the IR passes failed: function %f is not in HIR form"]), "x86 after ssa,dce: pass failure"),
        ];
        for (p, want) in cases {
            assert_eq!(signature(&p), want, "{p:?}");
        }
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
