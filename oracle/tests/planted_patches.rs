//! The planted bugs of `ci/planted/` (issue 19's reach figure) still apply to today's
//! `core/`: a refactor that moves a patched line makes `ci/planted-bugs` refuse to
//! measure, so the drift is caught here, where it happens.

use std::path::Path;
use std::process::Command;

#[test]
fn every_planted_bug_applies_to_the_tree() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root");
    let mut patches: Vec<_> = std::fs::read_dir(root.join("ci/planted"))
        .expect("ci/planted exists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "patch"))
        .collect();
    patches.sort();
    assert!(patches.len() >= 20, "issue 19 asks for at least 20 planted bugs; found {}", patches.len());
    let stale: Vec<String> = patches
        .iter()
        .filter(|p| {
            let out = Command::new("git").arg("apply").arg("--check").arg(p).current_dir(root).output().expect("git runs");
            !out.status.success()
        })
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(stale.is_empty(), "planted bugs that no longer apply (regenerate them against today's files): {stale:?}");
}
