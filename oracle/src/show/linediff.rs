//! A line diff for showing a pass's input and output side by side (the way Compiler
//! Explorer's diff view marks changed lines): the longest common subsequence of the two
//! line lists, by the classic dynamic programme, then every line is kept, deleted or
//! inserted. Functions on the pages are small (a reduced case), and the table is bounded
//! anyway: past [`MAX_CELLS`] the diff falls back to "everything changed" rather than
//! use quadratic memory on a huge function.

/// What happened to one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// In both (the same text).
    Same,
    /// Only in the old text.
    Deleted,
    /// Only in the new text.
    Inserted,
}

/// Above this many table cells (old lines × new lines) no LCS is computed.
pub const MAX_CELLS: usize = 4_000_000;

/// The old lines and the new lines, each with its change, in order.
pub fn diff<'a>(old: &[&'a str], new: &[&'a str]) -> (Vec<(&'a str, Change)>, Vec<(&'a str, Change)>) {
    let (n, m) = (old.len(), new.len());
    if n.saturating_mul(m) > MAX_CELLS {
        return (old.iter().map(|l| (*l, Change::Deleted)).collect(), new.iter().map(|l| (*l, Change::Inserted)).collect());
    }
    // lcs[i][j]: the length of the LCS of old[i..] and new[j..].
    let w = m + 1;
    let mut lcs = vec![0u32; (n + 1) * w];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i * w + j] = if old[i] == new[j] { lcs[(i + 1) * w + j + 1] + 1 } else { lcs[(i + 1) * w + j].max(lcs[i * w + j + 1]) };
        }
    }
    let (mut a, mut b) = (vec![], vec![]);
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if old[i] == new[j] {
            a.push((old[i], Change::Same));
            b.push((new[j], Change::Same));
            i += 1;
            j += 1;
        } else if lcs[(i + 1) * w + j] >= lcs[i * w + j + 1] {
            a.push((old[i], Change::Deleted));
            i += 1;
        } else {
            b.push((new[j], Change::Inserted));
            j += 1;
        }
    }
    a.extend(old[i..].iter().map(|l| (*l, Change::Deleted)));
    b.extend(new[j..].iter().map(|l| (*l, Change::Inserted)));
    (a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Change::*;

    /// Worked out by hand: one line changed in the middle, one added at the end.
    #[test]
    fn a_changed_line_is_deleted_and_inserted() {
        let (a, b) = diff(&["b0:", "  x = 1", "  ret x"], &["b0:", "  x = 2", "  ret x", "}"]);
        assert_eq!(a, vec![("b0:", Same), ("  x = 1", Deleted), ("  ret x", Same)]);
        assert_eq!(b, vec![("b0:", Same), ("  x = 2", Inserted), ("  ret x", Same), ("}", Inserted)]);
    }

    #[test]
    fn equal_texts_have_no_change_and_empty_ones_all_change() {
        let (a, b) = diff(&["p", "q"], &["p", "q"]);
        assert!(a.iter().chain(&b).all(|(_, c)| *c == Same));
        let (a, b) = diff(&[], &["p"]);
        assert!(a.is_empty());
        assert_eq!(b, vec![("p", Inserted)]);
    }

    /// The LCS, not a greedy match: the common `c d` survives a moved `a`.
    #[test]
    fn the_longest_common_part_is_kept() {
        let (a, b) = diff(&["a", "c", "d"], &["c", "d", "a"]);
        assert_eq!(a, vec![("a", Deleted), ("c", Same), ("d", Same)]);
        assert_eq!(b, vec![("c", Same), ("d", Same), ("a", Inserted)]);
    }
}
