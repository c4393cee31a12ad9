//! Readable names for the passes' statistics counters, for the campaign page's legend and
//! bar labels. Each meaning was written from the pass that bumps the counter
//! (`core/src/passes/`); a counter missing here is shown by its raw name and marked
//! "(no description)", so a new counter is never silently dropped.

/// (pass, counter, meaning). `cprop on HIR` reads the entries of `cprop`.
const LEGEND: &[(&str, &str, &str)] = &[
    // ssa
    ("ssa", "phis", "phis placed at the dominance frontiers"),
    ("ssa", "versions", "SSA versions (renamed definitions) created"),
    ("ssa", "zero_inits", "locals read before any definition, given an explicit zero"),
    // memopt: callframe variables (cf_) and the heap (heap_)
    ("memopt", "cf_load_load", "callframe read replaced by an earlier read of the same variable"),
    ("memopt", "cf_store_load", "callframe read replaced by the value an earlier write stored"),
    ("memopt", "cf_load_store", "callframe write removed: it stores the value just read back"),
    ("memopt", "cf_dead_store", "callframe write removed: never read before being overwritten or the end"),
    ("memopt", "cf_store_store", "callframe write removed: overwritten by a later write first"),
    ("memopt", "cf_loop_load", "callframe read hoisted out of a loop"),
    ("memopt", "cf_loop_store", "callframe write sunk to a loop's exits (speculative store)"),
    ("memopt", "cf_dead_load", "callframe read removed: its value was never used"),
    ("memopt", "heap_load_load", "heap load replaced by an earlier load of the same address"),
    ("memopt", "heap_store_load", "heap load replaced by the value an earlier store wrote"),
    ("memopt", "heap_load_store", "heap store removed: it stores the value just loaded back"),
    ("memopt", "heap_dead_store", "heap store removed: never read before being overwritten"),
    ("memopt", "heap_store_store", "heap store removed: overwritten by a later store first"),
    ("memopt", "heap_loop_load", "heap load hoisted out of a loop"),
    ("memopt", "heap_loop_store", "heap store sunk to a loop's exits (speculative store)"),
    ("memopt", "heap_dead_load", "heap load removed: its value was never used"),
    // ssapre
    ("ssapre", "exprs", "expressions (lexically equal classes) SSAPRE worked on"),
    ("ssapre", "saves", "computations whose value was saved in a temporary for reuse"),
    ("ssapre", "insertions", "computations inserted on an edge to make an expression fully available"),
    ("ssapre", "reloads_full", "redundant computations replaced by a temporary (fully redundant)"),
    ("ssapre", "reloads_partial", "computations replaced through an inserted phi (partially redundant)"),
    ("ssapre", "phis_created", "phis of temporaries created (Φ that will be available)"),
    ("ssapre", "phis_trivial", "needed Φs whose operands are all one temporary (no phi made)"),
    ("ssapre", "phis_unneeded", "Φs that would be available but no reload uses them"),
    ("ssapre", "loop_invariant", "insertions placed outside the loop they serve (loop-invariant motion)"),
    ("ssapre", "composite", "expressions whose operands were themselves PRE'd expressions"),
    ("ssapre", "edges_split", "critical edges split to hold insertions (and kept)"),
    // dce
    ("dce", "stmts", "dead statements removed"),
    ("dce", "phis", "dead phis removed"),
    // ssa-destroy
    ("ssa-destroy", "phis", "phis replaced by copies on the incoming edges"),
    ("ssa-destroy", "cycle_temps", "temporaries that break a cycle of parallel copies"),
    ("ssa-destroy", "copies", "copies emitted in place of phis"),
    ("ssa-destroy", "edges_split", "edges split to hold copies (the predecessor ends in a branch)"),
    // cprop and its tree mover (the counters of `cprop on HIR` are the same)
    ("cprop", "consts", "uses of a local replaced by its known constant"),
    ("cprop", "copies", "uses of a local replaced by the local it copies"),
    ("cprop", "folded", "operations folded to a constant"),
    ("cprop", "self_copies", "copies of a local to itself removed"),
    ("cprop", "tm_safe", "tree moves done: definition used once later in its block, no redefinition in between"),
    ("cprop", "tm_unsafe_accepted", "tree moves done whose local is live out of the block but never used before its definition ([X] clear)"),
    ("cprop", "tm_unsafe_rejected_x", "tree moves refused: the local is used before being defined in some block ([X] set)"),
    ("cprop", "tm_indirect", "tree moves into a tree that itself moved"),
    ("cprop", "tm_linked_rejected", "tree moves refused: a linked (mutually exclusive) move happened"),
    ("cprop", "tm_forwarded", "tree moves done through a forwarding copy"),
    ("cprop", "tm_forward_rejected", "tree moves refused: the forwarding copy's target was still live"),
    ("cprop", "tm_killed", "pending tree moves killed: an operand was redefined, or memory written under a tree that reads it"),
    ("cprop", "tm_cancelled", "pending tree moves cancelled by a second use"),
];

/// Every known counter: (pass, counter, meaning); the tree mover's and `cprop`'s
/// counters are listed under `cprop` (they count the same in `cprop on HIR`).
pub fn entries() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    LEGEND.iter().copied()
}

/// The meaning of counter `name` of `pass` (`cprop on HIR` counts as `cprop`), if known.
pub fn meaning(pass: &str, name: &str) -> Option<&'static str> {
    let pass = pass.strip_suffix(" on HIR").unwrap_or(pass);
    LEGEND
        .iter()
        .find(|(p, n, _)| *n == name && *p == pass)
        .map(|(_, _, m)| *m)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every counter a pass can bump has a meaning here: the counters of a real pipeline
    /// run on a case that exercises every pass, plus memopt's fixed list.
    #[test]
    fn every_counter_of_the_pipeline_has_a_meaning() {
        let mut missing = vec![];
        for c in tandem_core::passes::memopt::COUNTERS {
            if meaning("memopt", c).is_none() {
                missing.push(format!("memopt {c}"));
            }
        }
        for seed in 0..40 {
            let g = crate::gen::generate(seed, &crate::gen::Profile::Default.config());
            for f in &g.case.module.functions {
                let mut f = f.clone();
                let pipeline = tandem_core::passes::check_pipeline();
                let Ok(stats) = tandem_core::passes::PassManager { verify: true }.run(&pipeline, &mut f, &mut |_, _, _| {}) else { continue };
                for (pass, st) in stats {
                    for (name, _) in &st.counters {
                        if meaning(pass, name).is_none() {
                            missing.push(format!("{pass} {name}"));
                        }
                    }
                }
            }
        }
        missing.sort();
        missing.dedup();
        assert!(missing.is_empty(), "counters without a meaning: {missing:?}");
    }

    #[test]
    fn cprop_on_hir_reads_as_cprop_and_unknown_names_are_none() {
        assert_eq!(meaning("cprop on HIR", "folded"), meaning("cprop", "folded"));
        assert!(meaning("dce", "no_such_counter").is_none());
        assert_ne!(meaning("dce", "phis"), meaning("ssa", "phis"));
        assert_ne!(meaning("ssa-destroy", "copies"), meaning("cprop", "copies"));
    }
}
