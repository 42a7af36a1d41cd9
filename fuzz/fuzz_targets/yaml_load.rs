//! The YAML loader on arbitrary text: no panic, hang or stack overflow; wherever the fast path
//! accepts the input its documents and diagnostics equal the saphyr reference path's exactly
//! (tests/it/differential.rs holds the same on chosen inputs); every span lies inside the text
//! on character boundaries; `map_scalar_range` stays inside its scalar.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipewright_syntax::{SourceMap, Span};
use pipewright_yaml::paths::{load_fast, load_reference};
use pipewright_yaml::{load, map_scalar_range, Limits, NodeKind};

fn in_text(text: &str, span: Span) -> bool {
    text.get(span.range()).is_some()
}

/// Char-boundary cut points of `s`: its start, end and one near the middle.
fn cuts(s: &str) -> [usize; 3] {
    let mut mid = s.len() / 2;
    while !s.is_char_boundary(mid) {
        mid -= 1;
    }
    [0, mid, s.len()]
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut sources = SourceMap::new();
    let id = sources.add("fuzz.yaml", text);
    // The default limits, and tight ones so the depth and alias-budget paths run on small inputs.
    let tight = Limits {
        max_depth: 4,
        max_alias_nodes: 16,
    };
    for (pass, limits) in [Limits::default(), tight].into_iter().enumerate() {
        let reference = load_reference(id, text, limits);
        if let Some(fast) = load_fast(id, text, limits) {
            assert!(
                fast == reference,
                "fast path differs from the reference on {text:?} with {limits:?}\nfast: {fast:#?}\nreference: {reference:#?}"
            );
        }
        let (docs, diags) = load(id, text, limits);
        assert!(
            (&docs, &diags) == (&reference.0, &reference.1),
            "load differs from the reference path on {text:?}"
        );
        for doc in &docs {
            assert!(in_text(text, doc.span), "document span {:?}", doc.span);
            let Some(root) = &doc.root else { continue };
            root.walk(|n| {
                assert!(in_text(text, n.span), "node span {:?} in {text:?}", n.span);
                let NodeKind::Scalar(s) = &n.kind else { return };
                let [a, m, b] = cuts(&s.text);
                for rel in [a..b, a..m, m..b, m..m] {
                    let got = map_scalar_range(text, n.span, s.style, &s.text, rel.clone());
                    assert!(
                        in_text(text, got) && got.start >= n.span.start && got.end <= n.span.end,
                        "map_scalar_range({:?}, {:?}, {rel:?}) = {:?} outside the scalar at {:?} in {text:?}",
                        s.style,
                        s.text,
                        got.range(),
                        n.span.range()
                    );
                }
            });
        }
        if pass == 0 {
            pipewright_fuzz::render_all(&diags, &sources);
        }
    }
});
