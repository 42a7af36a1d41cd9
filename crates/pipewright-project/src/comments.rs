//! Where the comments of a TOML file are.

use std::ops::Range;

/// The byte ranges of a TOML file's comments: a `#` outside every key and string value the
/// parser found starts one. A file that does not parse has none (its parse error is reported
/// by its dialect). `check` finds suppression comments of TOML dialects with it; it lives here,
/// beside the project's other TOML parsing.
pub fn toml_comments(text: &str) -> Vec<Range<usize>> {
    use toml_edit::visit::{self, Visit};
    struct Spans(Vec<Range<usize>>);
    impl<'d> Visit<'d> for Spans {
        fn visit_table_like(&mut self, node: &'d dyn toml_edit::TableLike) {
            for (k, _) in node.iter() {
                if let Some(r) = node.key(k).and_then(toml_edit::Key::span) {
                    self.0.push(r);
                }
            }
            visit::visit_table_like(self, node);
        }
        fn visit_string(&mut self, node: &'d toml_edit::Formatted<String>) {
            if let Some(r) = node.span() {
                self.0.push(r);
            }
        }
    }
    let Ok(doc) = toml_edit::Document::parse(text) else {
        return Vec::new();
    };
    let mut spans = Spans(Vec::new());
    spans.visit_table(doc.as_table());
    let inside = |p: usize| spans.0.iter().any(|r| r.contains(&p));
    let mut out = Vec::new();
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        if let Some(i) = line
            .match_indices('#')
            .map(|(i, _)| i)
            .find(|&i| !inside(line_start + i))
        {
            let end = line_start + line.trim_end().len();
            out.push(line_start + i..end);
        }
        line_start += line.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_in_keys_and_strings_are_not_comments() {
        let text = "# top\n[\"a#b\"]\n\"k#\" = \"v # no\" # yes\nm = \"\"\"\n# no\n\"\"\"\n";
        let found: Vec<&str> = toml_comments(text).into_iter().map(|r| &text[r]).collect();
        assert_eq!(found, ["# top", "# yes"]);
        assert!(toml_comments("a = # broken\n").is_empty());
    }
}
