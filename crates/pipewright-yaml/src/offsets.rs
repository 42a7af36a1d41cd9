//! Maps a byte range inside a scalar's *value* back to the source text, so a diagnostic about
//! an embedded expression can point at the exact characters even when YAML quoting, escapes or
//! block-scalar indentation make the value differ from the source.

use crate::scalar::ScalarStyle;
use pipewright_syntax::Span;

/// `source` is the whole file text, `node` the scalar's span in it, `value` its unescaped text,
/// `rel` a byte range inside `value`. Falls back to the whole scalar when alignment fails.
pub fn map_scalar_range(
    source: &str,
    node: Span,
    style: ScalarStyle,
    value: &str,
    rel: std::ops::Range<usize>,
) -> Span {
    let Some(raw) = source.get(node.range()) else {
        return node;
    };
    let body_start = match style {
        ScalarStyle::Plain => 0,
        ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => 1,
        // The node span may start at the `|`/`>` header; content starts on the next line.
        ScalarStyle::Literal | ScalarStyle::Folded if raw.starts_with(['|', '>']) => {
            raw.find('\n').map_or(raw.len(), |i| i + 1)
        }
        ScalarStyle::Literal | ScalarStyle::Folded => 0,
    };
    // A span that does not start where the style says (a loader bug) must not panic here.
    let Some(body) = raw.get(body_start..) else {
        return node;
    };
    // Fast path: the value is written verbatim.
    if body.starts_with(value) {
        return node.sub(body_start + rel.start..body_start + rel.end.min(value.len()));
    }
    // Align value characters to source characters greedily; source characters without a
    // counterpart (indentation, escapes' backslashes, doubled quotes, folded newlines) are skipped.
    let mut map: Vec<usize> = Vec::with_capacity(value.len() + 1);
    let src: Vec<(usize, char)> = body.char_indices().collect();
    let mut j = 0usize;
    for (vi, vc) in value.char_indices() {
        let mut k = j;
        let mut found = None;
        while k < src.len() && k < j + 12 {
            let sc = src[k].1;
            if sc == vc || (vc == ' ' && sc == '\n') || (vc == '\n' && sc == '\\') {
                found = Some(k);
                break;
            }
            k += 1;
        }
        let pos = match found {
            Some(k) => {
                j = k + 1;
                if vc == '\n' && src[k].1 == '\\' {
                    j += 1;
                }
                src[k].0
            }
            None => src.get(j).map_or(body.len(), |c| c.0),
        };
        for _ in 0..vc.len_utf8() {
            map.push(pos);
        }
        let _ = vi;
    }
    map.push(src.get(j).map_or(body.len(), |c| c.0));
    let a = map.get(rel.start).copied().unwrap_or(body.len());
    let b = if rel.end > rel.start {
        // The end is past the whole source character the last value byte maps to, which
        // may be several bytes long.
        map.get(rel.end - 1).map_or(body.len(), |&p| {
            p + body[p..].chars().next().map_or(0, char::len_utf8)
        })
    } else {
        a
    };
    node.sub(body_start + a..body_start + b.max(a))
}
