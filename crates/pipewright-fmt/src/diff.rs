//! Unified diffs of whole files, line by line (Myers' algorithm), for `fmt --diff`.

const CONTEXT: usize = 3;
/// Beyond this many differing lines the edit script is not minimised: one hunk replaces the
/// differing middle, which keeps time and memory bounded on wholesale rewrites (the trace holds
/// about `MAX_D²` positions: 36 MB at most).
const MAX_D: usize = 3000;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Keep,
    Del,
    Add,
}

pub fn unified_diff(path: &str, before: &str, after: &str) -> String {
    let mut out = Vec::new();
    // Writing to a vector does not fail.
    let _ = write_unified_diff(&mut out, path, before, after);
    // The diff is made of `before`'s and `after`'s lines, so it is UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// [`unified_diff`] written to `w` as it is made: `fmt --diff` of a file rewritten through
/// does not hold a second copy of both texts in memory.
pub fn write_unified_diff(
    w: &mut impl std::io::Write,
    path: &str,
    before: &str,
    after: &str,
) -> std::io::Result<()> {
    if before == after {
        return Ok(());
    }
    let a: Vec<&str> = before.split_inclusive('\n').collect();
    let b: Vec<&str> = after.split_inclusive('\n').collect();
    let pre = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..]
        .iter()
        .rev()
        .zip(b[pre..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    let mut ops = vec![Op::Keep; pre];
    ops.extend(myers(am, bm).unwrap_or_else(|| {
        let mut v = vec![Op::Del; am.len()];
        v.extend(std::iter::repeat_n(Op::Add, bm.len()));
        v
    }));
    ops.extend(std::iter::repeat_n(Op::Keep, suf));
    render(w, path, &a, &b, &ops)
}

fn myers(a: &[&str], b: &[&str]) -> Option<Vec<Op>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = (n + m) as usize;
    if max == 0 {
        return Some(Vec::new());
    }
    let off = max as isize;
    let mut v = vec![0isize; 2 * max + 2];
    // Before step `d` only the diagonals `-d..=d` hold positions, and the walk back reads no
    // others: each step keeps that window of `v`, not all of it (a whole `v` per step was
    // 2 × (lines before + after) words each, and `fmt --diff` of a 10 MiB file took 23 GB).
    let last = v.len() - 1;
    let window = |d: isize| {
        let lo = (off - d - 1).max(0) as usize;
        let hi = ((off + d + 1) as usize).min(last);
        (lo, hi)
    };
    let mut trace: Vec<(usize, Vec<u32>)> = Vec::new();
    let mut found = None;
    'outer: for d in 0..=max.min(MAX_D) as isize {
        let (lo, hi) = window(d);
        trace.push((lo, v[lo..=hi].iter().map(|&x| x as u32).collect()));
        let mut k = -d;
        while k <= d {
            let idx = (k + off) as usize;
            let mut x = if k == -d || (k != d && v[idx - 1] < v[idx + 1]) {
                v[idx + 1]
            } else {
                v[idx - 1] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[idx] = x;
            if x >= n && y >= m {
                found = Some(d);
                break 'outer;
            }
            k += 2;
        }
    }
    let d_end = found?;
    let mut ops = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (0..=d_end).rev() {
        let (lo, kept) = &trace[d as usize];
        let at = |k: isize| kept[(k + off) as usize - lo] as isize;
        let k = x - y;
        let prev_k = if k == -d || (k != d && at(k - 1) < at(k + 1)) {
            k + 1
        } else {
            k - 1
        };
        let prev_x = at(prev_k);
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            ops.push(Op::Keep);
            x -= 1;
            y -= 1;
        }
        if d > 0 {
            ops.push(if x == prev_x { Op::Add } else { Op::Del });
        }
        x = prev_x;
        y = prev_y;
    }
    ops.reverse();
    Some(ops)
}

fn render(
    w: &mut impl std::io::Write,
    path: &str,
    a: &[&str],
    b: &[&str],
    ops: &[Op],
) -> std::io::Result<()> {
    write!(w, "--- a/{path}\n+++ b/{path}\n")?;
    let next_change = |from: usize| (from..ops.len()).find(|&k| ops[k] != Op::Keep);
    // The op the line indices are known at, and those indices in `a` and `b`: hunks come in
    // order, so they only move forward (no table of them per op).
    let (mut at, mut i, mut j) = (0usize, 0usize, 0usize);
    let mut change = next_change(0);
    while let Some(first) = change {
        let start = first.saturating_sub(CONTEXT);
        let mut last = first;
        change = loop {
            match next_change(last + 1) {
                Some(c) if c <= last + 2 * CONTEXT + 1 => last = c,
                other => break other,
            }
        };
        let end = (last + CONTEXT + 1).min(ops.len());
        for op in &ops[at..start] {
            match op {
                Op::Keep => (i, j) = (i + 1, j + 1),
                Op::Del => i += 1,
                Op::Add => j += 1,
            }
        }
        let hunk = &ops[start..end];
        let ac = hunk.iter().filter(|&&o| o != Op::Add).count();
        let bc = hunk.iter().filter(|&&o| o != Op::Del).count();
        let a_start = if ac == 0 { i } else { i + 1 };
        let b_start = if bc == 0 { j } else { j + 1 };
        writeln!(w, "@@ -{a_start},{ac} +{b_start},{bc} @@")?;
        for op in hunk {
            let (mark, line) = match op {
                Op::Keep => {
                    (i, j) = (i + 1, j + 1);
                    (' ', a[i - 1])
                }
                Op::Del => {
                    i += 1;
                    ('-', a[i - 1])
                }
                Op::Add => {
                    j += 1;
                    ('+', b[j - 1])
                }
            };
            write!(w, "{mark}{line}")?;
            if !line.ends_with('\n') {
                w.write_all(b"\n\\ No newline at end of file\n")?;
            }
        }
        at = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_diff() {
        let d = unified_diff("f.yaml", "a\nb\nc\n", "a\nB\nc\n");
        assert_eq!(
            d,
            "--- a/f.yaml\n+++ b/f.yaml\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
        );
        assert_eq!(unified_diff("f", "x\n", "x\n"), "");
        let d = unified_diff("f", "", "new\n");
        assert_eq!(d, "--- a/f\n+++ b/f\n@@ -0,0 +1,1 @@\n+new\n");
    }

    /// Applies a unified diff of this module's making to `before`.
    fn apply(before: &str, diff: &str) -> String {
        let a: Vec<&str> = before.split_inclusive('\n').collect();
        let mut out = String::new();
        let mut next = 0usize;
        let mut lines = diff.split_inclusive('\n').skip(2).peekable();
        while let Some(h) = lines.next() {
            let (start, count) = {
                let spec = h
                    .trim_start_matches("@@ -")
                    .split(' ')
                    .next()
                    .unwrap_or("0,0");
                let mut p = spec.split(',');
                let s: usize = p.next().and_then(|x| x.parse().ok()).unwrap_or(0);
                let c: usize = p.next().and_then(|x| x.parse().ok()).unwrap_or(0);
                (s, c)
            };
            let from = if count == 0 { start } else { start - 1 };
            for l in &a[next..from] {
                out.push_str(l);
            }
            next = from;
            while let Some(l) = lines.next_if(|l| !l.starts_with("@@")) {
                let (tag, text) = l.split_at(1);
                let no_nl = lines.next_if(|l| l.starts_with("\\ No newline"));
                let text = if no_nl.is_some() {
                    text.trim_end_matches('\n')
                } else {
                    text
                };
                match tag {
                    " " => {
                        out.push_str(text);
                        next += 1;
                    }
                    "-" => next += 1,
                    "+" => out.push_str(text),
                    _ => panic!("bad diff line {l:?}"),
                }
            }
        }
        for l in &a[next..] {
            out.push_str(l);
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn the_diff_turns_before_into_after(
            a in proptest::collection::vec("[abc]{0,2}\n", 0..40),
            b in proptest::collection::vec("[abc]{0,2}\n", 0..40),
            trail in proptest::bool::ANY,
        ) {
            let before: String = a.concat();
            let mut after: String = b.concat();
            if trail && after.ends_with('\n') {
                after.pop();
            }
            let d = unified_diff("f", &before, &after);
            proptest::prop_assert_eq!(apply(&before, &d), after);
        }
    }

    #[test]
    fn a_large_rewrite_past_the_limit_is_one_hunk_and_still_right() {
        // Every other line of 20,000 differs: more than MAX_D differences, so the middle is
        // replaced as a whole. Each step's trace kept all of `v` (80,000 words) before: this
        // took gigabytes.
        let before: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        let after: String = (0..20_000)
            .map(|i| {
                if i % 2 == 0 {
                    format!("line {i}\n")
                } else {
                    format!("LINE {i}\n")
                }
            })
            .collect();
        let d = unified_diff("f", &before, &after);
        assert_eq!(apply(&before, &d), after);
        // Under the limit the script is minimal: only the changed lines are `-`/`+`.
        let near: String = before.replacen("line 7\n", "LINE 7\n", 1);
        let d = unified_diff("f", &before, &near);
        assert_eq!(
            d.lines()
                .filter(|l| l.starts_with('-') || l.starts_with('+'))
                .count(),
            4
        );
        assert_eq!(apply(&before, &d), near);
    }
}
