//! Readable names for the passes' statistics counters, for the campaign page's legend and
//! bar labels. Each meaning was written from the pass that bumps the counter
//! (`core/src/passes/`); a counter missing here is shown by its raw name and marked
//! "(no description)", so a new counter is never silently dropped.

/// (pass, counter, meaning). A pass of `None` matches the counter in any pass.
const LEGEND: &[(Option<&str>, &str, &str)] = &[
    // ssa
    (Some("ssa"), "phis", "phis placed at the dominance frontiers"),
    (Some("ssa"), "versions", "SSA versions (renamed definitions) created"),
    (Some("ssa"), "zero_inits", "locals read before any definition, given an explicit zero"),
    // memopt: callframe variables (cf_) and the heap (heap_)
    (Some("memopt"), "cf_load_load", "callframe read replaced by an earlier read of the same variable"),
    (Some("memopt"), "cf_store_load", "callframe read replaced by the value an earlier write stored"),
    (Some("memopt"), "cf_load_store", "callframe write removed: it stores the value just read back"),
    (Some("memopt"), "cf_dead_store", "callframe write removed: never read before being overwritten or the end"),
    (Some("memopt"), "cf_store_store", "callframe write removed: overwritten by a later write first"),
    (Some("memopt"), "cf_loop_load", "callframe read hoisted out of a loop"),
    (Some("memopt"), "cf_loop_store", "callframe write sunk to a loop's exits (speculative store)"),
    (Some("memopt"), "cf_dead_load", "callframe read removed: its value was never used"),
    (Some("memopt"), "heap_load_load", "heap load replaced by an earlier load of the same address"),
    (Some("memopt"), "heap_store_load", "heap load replaced by the value an earlier store wrote"),
    (Some("memopt"), "heap_load_store", "heap store removed: it stores the value just loaded back"),
    (Some("memopt"), "heap_dead_store", "heap store removed: never read before being overwritten"),
    (Some("memopt"), "heap_store_store", "heap store removed: overwritten by a later store first"),
    (Some("memopt"), "heap_loop_load", "heap load hoisted out of a loop"),
    (Some("memopt"), "heap_loop_store", "heap store sunk to a loop's exits (speculative store)"),
    (Some("memopt"), "heap_dead_load", "heap load removed: its value was never used"),
    // ssapre
    (Some("ssapre"), "exprs", "expressions (lexically equal classes) SSAPRE worked on"),
    (Some("ssapre"), "saves", "computations whose value was saved in a temporary for reuse"),
    (Some("ssapre"), "insertions", "computations inserted on an edge to make an expression fully available"),
    (Some("ssapre"), "reloads_full", "redundant computations replaced by a temporary (fully redundant)"),
    (Some("ssapre"), "reloads_partial", "computations replaced through an inserted phi (partially redundant)"),
    (Some("ssapre"), "phis_created", "phis of temporaries created (Φ that will be available)"),
    (Some("ssapre"), "phis_trivial", "needed Φs whose operands are all one temporary (no phi made)"),
    (Some("ssapre"), "phis_unneeded", "Φs that would be available but no reload uses them"),
    (Some("ssapre"), "loop_invariant", "insertions placed outside the loop they serve (loop-invariant motion)"),
    (Some("ssapre"), "composite", "expressions whose operands were themselves PRE'd expressions"),
    (Some("ssapre"), "edges_split", "critical edges split to hold insertions (and kept)"),
    // dce
    (Some("dce"), "stmts", "dead statements removed"),
    (Some("dce"), "phis", "dead phis removed"),
    // ssa-destroy
    (Some("ssa-destroy"), "phis", "phis replaced by copies on the incoming edges"),
    (Some("ssa-destroy"), "cycle_temps", "temporaries that break a cycle of parallel copies"),
    // cprop and its tree mover (the counters of `cprop on HIR` are the same)
    (None, "consts", "uses of a local replaced by its known constant"),
    (None, "copies", "uses of a local replaced by the local it copies"),
    (None, "folded", "operations folded to a constant"),
    (None, "self_copies", "copies of a local to itself removed"),
    (None, "tm_safe", "tree moves done: definition used once later in its block, no redefinition in between"),
    (None, "tm_unsafe_accepted", "tree moves done whose local is live out of the block but never used before its definition ([X] clear)"),
    (None, "tm_unsafe_rejected_x", "tree moves refused: the local is used before being defined in some block ([X] set)"),
    (None, "tm_indirect", "tree moves into a tree that itself moved"),
    (None, "tm_linked_rejected", "tree moves refused: a linked (mutually exclusive) move happened"),
    (None, "tm_forwarded", "tree moves done through a forwarding copy"),
    (None, "tm_forward_rejected", "tree moves refused: the forwarding copy's target was still live"),
    (None, "tm_killed", "pending tree moves killed: an operand was redefined, or memory written under a tree that reads it"),
    (None, "tm_cancelled", "pending tree moves cancelled by a second use"),
];

/// Every known counter: (pass, counter, meaning); the tree mover's and `cprop`'s
/// counters are listed under `cprop` (they count the same in `cprop on HIR`).
pub fn entries() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    LEGEND.iter().map(|(p, n, m)| (p.unwrap_or("cprop"), *n, *m))
}

/// The meaning of counter `name` of `pass` (`cprop on HIR` counts as `cprop`), if known.
pub fn meaning(pass: &str, name: &str) -> Option<&'static str> {
    let pass = pass.strip_suffix(" on HIR").unwrap_or(pass);
    LEGEND
        .iter()
        .find(|(p, n, _)| *n == name && p.is_none_or(|p| p == pass))
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
    }
}
