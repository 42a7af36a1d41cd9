//! Unified diffs of whole files, line by line (Myers' algorithm), for `fmt --diff`.

const CONTEXT: usize = 3;
/// Beyond this many differing lines the edit script is not minimised: one hunk replaces the
/// differing middle, which keeps time and memory bounded on wholesale rewrites.
const MAX_D: usize = 4000;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Keep,
    Del,
    Add,
}

pub fn unified_diff(path: &str, before: &str, after: &str) -> String {
    if before == after {
        return String::new();
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
    render(path, &a, &b, &ops)
}

fn myers(a: &[&str], b: &[&str]) -> Option<Vec<Op>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = (n + m) as usize;
    if max == 0 {
        return Some(Vec::new());
    }
    let off = max as isize;
    let mut v = vec![0isize; 2 * max + 2];
    let mut trace: Vec<Vec<isize>> = Vec::new();
    let mut found = None;
    'outer: for d in 0..=max.min(MAX_D) as isize {
        trace.push(v.clone());
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
        let v = &trace[d as usize];
        let k = x - y;
        let idx = (k + off) as usize;
        let prev_k = if k == -d || (k != d && v[idx - 1] < v[idx + 1]) {
            k + 1
        } else {
            k - 1
        };
        let prev_x = v[(prev_k + off) as usize];
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

fn render(path: &str, a: &[&str], b: &[&str], ops: &[Op]) -> String {
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    // Line indices in a and b at each op.
    let mut pos = Vec::with_capacity(ops.len());
    let (mut i, mut j) = (0usize, 0usize);
    for op in ops {
        pos.push((i, j));
        match op {
            Op::Keep => {
                i += 1;
                j += 1;
            }
            Op::Del => i += 1,
            Op::Add => j += 1,
        }
    }
    let changed: Vec<usize> = (0..ops.len()).filter(|&k| ops[k] != Op::Keep).collect();
    let mut h = 0;
    while h < changed.len() {
        let start = changed[h].saturating_sub(CONTEXT);
        let mut last = changed[h];
        while h + 1 < changed.len() && changed[h + 1] <= last + 2 * CONTEXT + 1 {
            h += 1;
            last = changed[h];
        }
        let end = (last + CONTEXT + 1).min(ops.len());
        let (a0, b0) = pos[start];
        let (mut ac, mut bc) = (0, 0);
        let mut body = String::new();
        for k in start..end {
            let (ai, bj) = pos[k];
            let (mark, line) = match ops[k] {
                Op::Keep => {
                    ac += 1;
                    bc += 1;
                    (' ', a[ai])
                }
                Op::Del => {
                    ac += 1;
                    ('-', a[ai])
                }
                Op::Add => {
                    bc += 1;
                    ('+', b[bj])
                }
            };
            body.push(mark);
            body.push_str(line);
            if !line.ends_with('\n') {
                body.push_str("\n\\ No newline at end of file\n");
            }
        }
        let a_start = if ac == 0 { a0 } else { a0 + 1 };
        let b_start = if bc == 0 { b0 } else { b0 + 1 };
        out.push_str(&format!("@@ -{a_start},{ac} +{b_start},{bc} @@\n"));
        out.push_str(&body);
        h += 1;
    }
    out
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
}
