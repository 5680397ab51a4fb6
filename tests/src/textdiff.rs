//! A line diff for test failures: what a reader needs to see where two documents part.

/// The lines of `left` and `right` as a unified-style listing: ` ` common, `-` only in
/// `left`, `+` only in `right`. Common runs longer than `2 * context` are folded, so a long
/// document shows just the differing regions.
pub fn line_diff(left: &str, right: &str, context: usize) -> String {
    let a: Vec<&str> = left.lines().collect();
    let b: Vec<&str> = right.lines().collect();
    // longest common subsequence table; the documents are a few hundred lines at most
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    let changed: Vec<bool> = ops.iter().map(|(tag, _)| *tag != ' ').collect();
    let near_change = |k: usize| {
        let lo = k.saturating_sub(context);
        let hi = (k + context + 1).min(changed.len());
        changed[lo..hi].iter().any(|c| *c)
    };
    let mut out = String::new();
    let mut folded = false;
    for (k, (tag, line)) in ops.iter().enumerate() {
        if near_change(k) {
            out.push_str(&format!("{tag} {line}\n"));
            folded = false;
        } else if !folded {
            out.push_str("  ...\n");
            folded = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::line_diff;

    #[test]
    fn marks_removed_and_added_lines_and_folds_far_context() {
        let left = "a\nb\nc\nd\ne\nf\ng\n";
        let right = "a\nb\nc\nd\ne\nX\ng\n";
        let diff = line_diff(left, right, 1);
        assert_eq!(diff, "  ...\n  e\n- f\n+ X\n  g\n");
    }

    #[test]
    fn identical_documents_have_no_change_lines() {
        let diff = line_diff("a\nb\n", "a\nb\n", 3);
        assert!(!diff.contains("\n-") && !diff.contains("\n+") && !diff.starts_with('-'));
    }
}
