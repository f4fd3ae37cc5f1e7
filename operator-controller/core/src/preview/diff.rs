//! A line-based unified diff (the format of `diff -u`), for the fields an update changes.
//!
//! Input: two texts and their labels. Output: the diff text, empty when the texts are equal.
//! Pure. The longest common subsequence of lines decides the hunks; three lines of context.

/// Lines of context around each change.
const CONTEXT: usize = 3;
/// Beyond this many line pairs the texts are shown as replaced whole (no LCS table).
const MAX_CELLS: usize = 16_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Keep,
    Remove,
    Add,
}

/// The edit script from `a` to `b`: each line of `a` kept or removed, each line of `b` kept or
/// added, in order.
fn script(a: &[&str], b: &[&str]) -> Vec<(Op, usize)> {
    let (n, m) = (a.len(), b.len());
    if n.saturating_mul(m) > MAX_CELLS {
        let mut ops: Vec<(Op, usize)> = (0..n).map(|i| (Op::Remove, i)).collect();
        ops.extend((0..m).map(|j| (Op::Add, j)));
        return ops;
    }
    // lcs[i][j]: length of the LCS of a[i..] and b[j..].
    let mut lcs = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[at(i, j)] = if a[i] == b[j] {
                lcs[at(i + 1, j + 1)] + 1
            } else {
                lcs[at(i + 1, j)].max(lcs[at(i, j + 1)])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut ops = Vec::with_capacity(n + m);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push((Op::Keep, i));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[at(i + 1, j)] >= lcs[at(i, j + 1)]) {
            ops.push((Op::Remove, i));
            i += 1;
        } else {
            ops.push((Op::Add, j));
            j += 1;
        }
    }
    ops
}

/// `diff -u` of `old` and `new` with the labels `old_label` and `new_label`; empty when equal.
pub fn unified(old: &str, new: &str, old_label: &str, new_label: &str) -> String {
    if old == new {
        return String::new();
    }
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = script(&a, &b);
    // Positions (in `ops`) of changes, grouped into hunks with context.
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, (op, _))| *op != Op::Keep)
        .map(|(k, _)| k)
        .collect();
    if changed.is_empty() {
        return String::new();
    }
    let mut hunks: Vec<(usize, usize)> = Vec::new();
    for &k in &changed {
        let start = k.saturating_sub(CONTEXT);
        let end = (k + CONTEXT + 1).min(ops.len());
        match hunks.last_mut() {
            Some(last) if start <= last.1 => last.1 = end,
            _ => hunks.push((start, end)),
        }
    }
    let mut out = format!("--- {old_label}\n+++ {new_label}\n");
    // Line numbers (0-based) in a and b at each position of `ops`.
    let mut positions = Vec::with_capacity(ops.len());
    let (mut ai, mut bi) = (0usize, 0usize);
    for (op, _) in &ops {
        positions.push((ai, bi));
        match op {
            Op::Keep => {
                ai += 1;
                bi += 1;
            }
            Op::Remove => ai += 1,
            Op::Add => bi += 1,
        }
    }
    for (start, end) in hunks {
        let slice = &ops[start..end];
        let old_len = slice.iter().filter(|(op, _)| *op != Op::Add).count();
        let new_len = slice.iter().filter(|(op, _)| *op != Op::Remove).count();
        let (a0, b0) = positions[start];
        let from = |first: usize, len: usize| if len == 0 { first } else { first + 1 };
        out.push_str(&format!(
            "@@ -{},{old_len} +{},{new_len} @@\n",
            from(a0, old_len),
            from(b0, new_len)
        ));
        for (op, index) in slice {
            match op {
                Op::Keep => out.push_str(&format!(" {}\n", a[*index])),
                Op::Remove => out.push_str(&format!("-{}\n", a[*index])),
                Op::Add => out.push_str(&format!("+{}\n", b[*index])),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_have_no_diff() {
        assert_eq!(unified("a\nb\n", "a\nb\n", "live", "new"), "");
    }

    #[test]
    fn a_changed_line_is_one_hunk_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        assert_eq!(
            unified(old, new, "live", "after"),
            "--- live\n+++ after\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
    }

    #[test]
    fn distant_changes_are_separate_hunks() {
        let old: String = (0..20).map(|i| format!("line {i}\n")).collect();
        let new = old
            .replace("line 2\n", "two\n")
            .replace("line 17\n", "seventeen\n");
        let d = unified(&old, &new, "a", "b");
        assert_eq!(d.matches("@@").count(), 4, "{d}");
        assert!(d.contains("-line 2\n+two\n"), "{d}");
        assert!(d.contains("-line 17\n+seventeen\n"), "{d}");
    }

    #[test]
    fn additions_to_an_empty_text_start_at_line_one() {
        assert_eq!(
            unified("", "x\n", "a", "b"),
            "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+x\n"
        );
    }
}
