//! MEOW (TOML) names, read from the text line by line: step ids (`needs`) and template
//! references (`.name`, `#name`, `path#workflow`).

use std::ops::Range;
use std::path::{Path, PathBuf};

/// The workflow a table header belongs to: `[main]`, `[main.variables]`, `[[main.steps]]` all
/// give `main`.
fn header_workflow(line: &str) -> Option<&str> {
    let t = line.trim();
    let inner = t
        .strip_prefix("[[")
        .and_then(|s| s.strip_suffix("]]"))
        .or_else(|| t.strip_prefix('[').and_then(|s| s.strip_suffix(']')))?;
    inner.split('.').next().map(str::trim)
}

/// Each line's start offset with the line.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    text.split_inclusive('\n').map(move |l| {
        let start = at;
        at += l.len();
        (start, l.trim_end_matches(['\n', '\r']))
    })
}

/// The key path of the key under `offset` (the table header's keys, then the key), when the
/// offset is on a key (before the `=` of a `key = value` line).
pub(super) fn key_path(text: &str, offset: usize) -> Option<Vec<String>> {
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..];
    let line = &line[..line.find('\n').unwrap_or(line.len())];
    let (key, _) = line.split_once('=')?;
    if offset - line_start > key.len() || key.trim_start().starts_with('#') {
        return None;
    }
    let header = lines(text)
        .take_while(|(start, _)| *start < line_start)
        .filter(|(_, l)| header_workflow(l).is_some())
        .last()?
        .1
        .trim()
        .trim_matches(['[', ']']);
    let mut path: Vec<String> = header.split('.').map(|s| s.trim().to_string()).collect();
    path.push(key.trim().trim_matches('"').to_string());
    Some(path)
}

/// The workflow whose tables hold `offset`.
pub(super) fn workflow_at(text: &str, offset: usize) -> Option<String> {
    lines(text)
        .take_while(|(start, _)| *start <= offset)
        .filter_map(|(_, l)| header_workflow(l))
        .last()
        .map(str::to_string)
}

/// `id = "NAME"` values of the steps of `workflow` (the part before a `.` for `needs =
/// ["step.child"]`, which names a step an expansion made).
pub(super) fn step_ids(text: &str, workflow: &str, name: &str) -> Vec<Range<usize>> {
    let name = name.split('.').next().unwrap_or(name);
    let mut current: Option<&str> = None;
    let mut out = Vec::new();
    for (start, line) in lines(text) {
        if let Some(w) = header_workflow(line) {
            current = Some(w);
            continue;
        }
        if current != Some(workflow) {
            continue;
        }
        let t = line.trim_start();
        let Some(rest) = t.strip_prefix("id") else {
            continue;
        };
        let rest = rest.trim_start();
        let Some(value) = rest.strip_prefix('=') else {
            continue;
        };
        let v = value.trim().trim_matches('"');
        if v == name {
            if let Some(i) = line.find(&format!("\"{name}\"")) {
                out.push(start + i + 1..start + i + 1 + name.len());
            }
        }
    }
    out
}

/// The declaration `name = …` in `[workflow.variables]`: the name's range and the value text.
pub(super) fn variable<'a>(
    text: &'a str,
    workflow: &str,
    name: &str,
) -> Option<(Range<usize>, &'a str)> {
    let header = format!("[{workflow}.variables]");
    let mut inside = false;
    for (start, line) in lines(text) {
        let t = line.trim();
        if t.starts_with('[') {
            inside = t == header;
            continue;
        }
        if !inside {
            continue;
        }
        let Some((key, value)) = t.split_once('=') else {
            continue;
        };
        if key.trim().trim_matches('"') == name {
            let at = start + line.find(key.trim()).unwrap_or(0);
            return Some((at..at + key.trim().len(), value.trim()));
        }
    }
    None
}

/// The header line of workflow `name` (`[name]`).
pub(super) fn workflow_header(text: &str, name: &str) -> Vec<Range<usize>> {
    lines(text)
        .filter(|(_, l)| l.trim() == format!("[{name}]"))
        .map(|(start, l)| {
            let i = l.find('[').unwrap_or(0);
            start + i + 1..start + i + 1 + name.len()
        })
        .collect()
}

/// Where a template reference leads: this file's workflow, or another file's.
pub(super) enum Reference {
    Local(String),
    File {
        candidates: Vec<PathBuf>,
        workflow: String,
    },
}

pub(super) fn reference(reference: &str, dir: &Path) -> Option<Reference> {
    if reference.contains("{{") {
        return None;
    }
    let (path, wf) = match reference.split_once('#') {
        Some((p, w)) => (p, Some(w)),
        None => (reference, None),
    };
    if path.is_empty() {
        return Some(Reference::Local(wf.unwrap_or("main").to_string()));
    }
    if path.starts_with('.') && !path.contains('/') && wf.is_none() && !path.ends_with(".toml") {
        return Some(Reference::Local(path[1..].to_string()));
    }
    let mut bases = vec![dir.to_path_buf()];
    // MEOW's project root: the nearest directory holding `.meow`.
    if let Some(root) = dir.ancestors().find(|d| d.join(".meow").is_dir()) {
        bases.push(root.to_path_buf());
        bases.push(root.join(".meow").join("workflows"));
    }
    let candidates = bases
        .iter()
        .flat_map(|b| {
            let given = b.join(path);
            let mut suffixed = given.clone().into_os_string();
            suffixed.push(".meow.toml");
            [given, PathBuf::from(suffixed)]
        })
        .collect();
    Some(Reference::File {
        candidates,
        workflow: wf.unwrap_or("main").to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_found_in_the_cursors_workflow_only() {
        let text = "[main]\n[[main.steps]]\nid = \"a\"\n[other]\n[[other.steps]]\nid = \"a\"\n";
        let second = text.rfind("id").unwrap_or(0);
        assert_eq!(workflow_at(text, second).as_deref(), Some("other"));
        let found = step_ids(text, "other", "a.child");
        assert_eq!(found, vec![second + 6..second + 7]);
        assert_eq!(
            workflow_header(text, "other"),
            vec![text.find("other").unwrap_or(0)..text.find("other").unwrap_or(0) + 5]
        );
        assert!(matches!(reference(".x", Path::new(".")), Some(Reference::Local(n)) if n == "x"));
        assert!(matches!(reference("#y", Path::new(".")), Some(Reference::Local(n)) if n == "y"));
        assert!(reference("{{t}}", Path::new(".")).is_none());
    }
}
