//! Inline suppressions (`# pipewright: ignore[PW0528]`) and the `[check]` rule configuration,
//! applied to the final diagnostics of a check run, whatever dialect produced them.
//!
//! [`apply`] is a pure function of the diagnostics, the checked files' texts and the settings,
//! so a language server can run the same pass over its own diagnostics.

use pipewright_project::{CheckRules, Level};
use pipewright_syntax::{Diagnostic, FileId, Severity, Span};
use std::collections::HashMap;
use std::ops::Range;

/// How comments are written in a checked file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Yaml,
    Toml,
    /// JSON: no comments, so only `--ignore` and the config apply.
    NoComments,
}

impl Syntax {
    /// How comments are written in a checked file: by its extension, else (standard input) by
    /// its dialect.
    pub fn of(path: &std::path::Path, d: &dyn crate::Dialect) -> Syntax {
        match path.extension().and_then(|e| e.to_str()) {
            Some("toml") => Syntax::Toml,
            Some("json") => Syntax::NoComments,
            Some(_) => Syntax::Yaml,
            None => match d.name() {
                "meow" => Syntax::Toml,
                "state-machine" => Syntax::NoComments,
                _ => Syntax::Yaml,
            },
        }
    }
}

/// One checked file.
pub struct FileInput<'a> {
    pub file: FileId,
    pub text: &'a str,
    pub syntax: Syntax,
    /// The path relative to the config file's directory, `/`-separated, for `[[check.per-path]]`.
    pub rel: Option<String>,
}

pub struct Settings<'a> {
    pub rules: &'a CheckRules,
    /// `check --ignore CODE`, already validated.
    pub cli_ignore: &'a [String],
    /// Whether a code exists (a suppression naming another one is reported).
    pub known: &'a dyn Fn(&str) -> bool,
}

pub const UNUSED: &str = "PW0012";
pub const INVALID: &str = "PW0013";

/// Removes the diagnostics suppressed inline, reports suppressions that suppress nothing or
/// name no known code, then applies `--ignore` and the configured per-code levels (to those
/// reports too).
pub fn apply(diags: Vec<Diagnostic>, files: &[FileInput], settings: &Settings) -> Vec<Diagnostic> {
    let mut reports = Vec::new();
    let mut by_file: HashMap<FileId, FileSuppressions> = HashMap::new();
    for f in files {
        let list = suppressions(f, &mut reports);
        if !list.is_empty() {
            let lines = line_starts(f.text);
            by_file.insert(f.file, FileSuppressions { lines, list });
        }
    }
    let mut kept: Vec<Diagnostic> = diags
        .into_iter()
        .filter(|d| !suppressed(d, &mut by_file))
        .collect();
    let mut found: Vec<Suppression> = by_file.into_values().flat_map(|f| f.list).collect();
    found.sort_by_key(|s| s.file);
    for s in &found {
        for c in &s.codes {
            if c.used {
                continue;
            }
            let span = Span::new(s.file, c.span.clone());
            reports.push(if !(settings.known)(&c.code) {
                Diagnostic::warning(
                    INVALID,
                    span,
                    format!("`{}` is not a pipewright diagnostic code", c.code),
                )
                .with_label("unknown code")
                .with_help("`pipewright explain --list` lists every code")
            } else {
                let whole = s.codes.iter().all(|c| !c.used);
                let where_ = if s.whole_file { "in this file" } else { "here" };
                Diagnostic::warning(
                    UNUSED,
                    span,
                    format!("unused suppression: no {} diagnostic {where_}", c.code),
                )
                .with_label("suppresses nothing")
                .with_help(if whole {
                    "remove the comment".to_string()
                } else {
                    format!("remove `{}` from the list", c.code)
                })
            });
        }
    }
    kept.extend(reports);
    let rel: HashMap<FileId, &str> = files
        .iter()
        .filter_map(|f| Some((f.file, f.rel.as_deref()?)))
        .collect();
    kept.into_iter()
        .filter_map(|d| configured(d, &rel, settings))
        .collect()
}

/// The suppressions of one file, with its line index.
struct FileSuppressions {
    lines: Vec<usize>,
    list: Vec<Suppression>,
}

/// `--ignore` and `[check]`: the diagnostic as configured, or `None` when ignored.
fn configured(
    mut d: Diagnostic,
    rel: &HashMap<FileId, &str>,
    settings: &Settings,
) -> Option<Diagnostic> {
    if settings.cli_ignore.iter().any(|c| c == d.code) {
        return None;
    }
    let rel = rel.get(&d.primary.span.file).copied();
    let (severity, list) = match settings.rules.level(d.code, rel) {
        None => return Some(d),
        Some(Level::Ignore) => return None,
        Some(Level::Warn) => (Severity::Warning, "warn"),
        Some(Level::Error) => (Severity::Error, "error"),
    };
    if d.severity != severity {
        d.severity = severity;
        d.notes.push(format!(
            "reported as {} by `{list}` in the project config (pipewright.toml)",
            if severity == Severity::Error {
                "an error"
            } else {
                "a warning"
            }
        ));
    }
    Some(d)
}

/// Whether an inline suppression covers `d`; marks the code used.
fn suppressed(d: &Diagnostic, by_file: &mut HashMap<FileId, FileSuppressions>) -> bool {
    let span = d.primary.span;
    let Some(f) = by_file.get_mut(&span.file) else {
        return false;
    };
    let line = line_at(&f.lines, span.start as usize);
    let mut hit = false;
    for s in f.list.iter_mut() {
        if !s.whole_file && s.line != line {
            continue;
        }
        for c in s.codes.iter_mut().filter(|c| c.code == d.code) {
            c.used = true;
            hit = true;
        }
    }
    hit
}

#[derive(Debug)]
struct CodeRef {
    code: String,
    /// Where the code is written in the comment.
    span: Range<usize>,
    used: bool,
}

#[derive(Debug)]
struct Suppression {
    file: FileId,
    whole_file: bool,
    /// The 0-based line whose diagnostics it covers (unless `whole_file`).
    line: usize,
    codes: Vec<CodeRef>,
}

/// The suppressions of one file; malformed ones are reported into `reports`.
fn suppressions(f: &FileInput, reports: &mut Vec<Diagnostic>) -> Vec<Suppression> {
    // Finding comments parses the file again: only worth it when a directive may be there.
    if f.syntax == Syntax::NoComments || !f.text.contains("pipewright:") {
        return Vec::new();
    }
    let comments = match f.syntax {
        Syntax::Yaml => yaml_comments(f.file, f.text),
        Syntax::Toml => pipewright_project::toml_comments(f.text),
        Syntax::NoComments => Vec::new(),
    };
    let lines = line_starts(f.text);
    // Lines holding nothing but a comment, which a comment standing alone skips over.
    let comment_only: Vec<usize> = comments
        .iter()
        .filter(|c| !follows_content(f.text, c.start))
        .map(|c| line_at(&lines, c.start))
        .collect();
    let mut out = Vec::new();
    for c in &comments {
        match directive(f.text, c.clone()) {
            None => {}
            Some(Err((range, why))) => reports.push(
                Diagnostic::warning(INVALID, Span::new(f.file, range), why)
                    .with_label("not a valid suppression")
                    .with_help(
                        "write `# pipewright: ignore[PW0000, …]` (this line or the next) or \
                         `# pipewright: ignore-file[PW0000, …]`",
                    ),
            ),
            Some(Ok((whole_file, codes))) => out.push(Suppression {
                file: f.file,
                whole_file,
                line: target_line(f.text, c.start, &lines, &comment_only),
                codes,
            }),
        }
    }
    out
}

/// The line a comment starting at `at` covers: its own line when code precedes it there, else
/// the next line that is not itself only a comment (so suppressions can be stacked).
fn target_line(text: &str, at: usize, lines: &[usize], comment_only: &[usize]) -> usize {
    let line = line_at(lines, at);
    if follows_content(text, at) {
        return line;
    }
    let mut next = line + 1;
    // `comment_only` is in source order.
    while comment_only.binary_search(&next).is_ok() {
        next += 1;
    }
    next
}

/// Whether something other than blanks precedes position `at` on its line.
fn follows_content(text: &str, at: usize) -> bool {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    !text[line_start..at].trim().is_empty()
}

/// The byte offset each line starts at.
fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .collect()
}

/// The 0-based line of a byte offset.
fn line_at(lines: &[usize], offset: usize) -> usize {
    lines.partition_point(|&s| s <= offset).saturating_sub(1)
}

type Directive = Result<(bool, Vec<CodeRef>), (Range<usize>, String)>;

/// Reads the comment at `range` (starting with `#`): `None` when it is no pipewright directive.
fn directive(text: &str, range: Range<usize>) -> Option<Directive> {
    let comment = &text[range.clone()];
    let body = comment.trim_start_matches('#');
    let lead = comment.len() - body.len() + (body.len() - body.trim_start().len());
    let rest = body.trim_start().strip_prefix("pipewright:")?;
    let after_tag = range.start + lead + "pipewright:".len();
    let word_at = after_tag + (rest.len() - rest.trim_start().len());
    let rest = rest.trim_start();
    let word_len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .unwrap_or(rest.len());
    let word = &rest[..word_len];
    let whole_file = match word {
        "ignore" => false,
        "ignore-file" => true,
        _ => {
            return Some(Err((
                range,
                format!(
                    "unknown pipewright directive `{word}` (expected `ignore` or `ignore-file`)"
                ),
            )))
        }
    };
    let list = &rest[word_len..];
    let Some(inner) = list.strip_prefix('[') else {
        // A blanket suppression would hide problems nobody looked at, and could never be
        // reported as unused: every suppression names its codes.
        return Some(Err((
            range,
            format!("`{word}` needs the codes it suppresses, in brackets: `{word}[PW0000]`"),
        )));
    };
    let Some(close) = inner.find(']') else {
        return Some(Err((range, format!("`{word}[` is not closed with `]`"))));
    };
    let list_at = word_at + word_len + 1;
    let mut codes = Vec::new();
    let mut offset = 0;
    for part in inner[..close].split(',') {
        let start = list_at + offset + (part.len() - part.trim_start().len());
        offset += part.len() + 1;
        let code = part.trim();
        if code.is_empty() {
            continue;
        }
        codes.push(CodeRef {
            code: code.to_ascii_uppercase(),
            span: start..start + code.len(),
            used: false,
        });
    }
    if codes.is_empty() {
        return Some(Err((range, format!("`{word}[]` names no code"))));
    }
    Some(Ok((whole_file, codes)))
}

/// The byte ranges of a YAML file's comments (each from its `#` to the end of its text), found
/// by the formatter's comment scanner over the loaded tree, so a `#` inside a scalar is not one.
fn yaml_comments(file: FileId, text: &str) -> Vec<Range<usize>> {
    let (bom, body) = match text.strip_prefix('\u{feff}') {
        Some(rest) => ('\u{feff}'.len_utf8(), rest),
        None => (0, text),
    };
    let (docs, _) = pipewright_yaml::load(file, body, pipewright_yaml::Limits::default());
    let base = body.as_ptr() as usize;
    let mut out: Vec<Range<usize>> = pipewright_fmt::trivia::comment_slices(body, &docs)
        .into_iter()
        // The slices borrow from `body`: their address gives their offset.
        .map(|s| {
            let at = s.as_ptr() as usize - base + bom;
            at..at + s.len()
        })
        .collect();
    out.sort_by_key(|r| r.start);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipewright_project::ProjectConfig;

    const F: FileId = FileId(0);

    fn diag_at(text: &str, needle: &str, code: &'static str) -> Diagnostic {
        let at = text
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} not in text"));
        Diagnostic::error(code, Span::new(F, at..at + needle.len()), "x")
    }

    fn run(text: &str, syntax: Syntax, diags: Vec<Diagnostic>, config: &str) -> Vec<Diagnostic> {
        let cfg = ProjectConfig::parse(config).unwrap_or_else(|e| panic!("{e}"));
        let files = [FileInput {
            file: F,
            text,
            syntax,
            rel: Some("legacy/a.yaml".into()),
        }];
        let known = |c: &str| c != "PW9999";
        apply(
            diags,
            &files,
            &Settings {
                rules: &cfg.check,
                cli_ignore: &["PW0777".to_string()],
                known: &known,
            },
        )
    }

    fn codes(d: &[Diagnostic]) -> Vec<&str> {
        d.iter().map(|d| d.code).collect()
    }

    #[test]
    fn same_line_and_line_before_suppress() {
        let text =
            "a: 1 # pipewright: ignore[PW0100]\n# pipewright: ignore[PW0200, pw0300]\nb: 2\nc: 3\n";
        let out = run(
            text,
            Syntax::Yaml,
            vec![
                diag_at(text, "a: 1", "PW0100"),
                diag_at(text, "b: 2", "PW0200"),
                diag_at(text, "b: 2", "PW0300"),
                diag_at(text, "c: 3", "PW0200"),
            ],
            "",
        );
        assert_eq!(codes(&out), ["PW0200"]);
        assert_eq!(out[0].span().start as usize, text.find("c: 3").unwrap_or(0));
    }

    #[test]
    fn a_trailing_comment_does_not_cover_the_next_line() {
        let text = "a: 1 # pipewright: ignore[PW0100]\nb: 2\n";
        let out = run(
            text,
            Syntax::Yaml,
            vec![diag_at(text, "b: 2", "PW0100")],
            "",
        );
        // The diagnostic stays and the comment is unused.
        assert_eq!(codes(&out), ["PW0100", UNUSED]);
    }

    #[test]
    fn stacked_comments_cover_the_first_line_of_content() {
        let text = "# pipewright: ignore[PW0100]\n# pipewright: ignore[PW0200]\nb: 2\n";
        let out = run(
            text,
            Syntax::Yaml,
            vec![
                diag_at(text, "b: 2", "PW0100"),
                diag_at(text, "b: 2", "PW0200"),
            ],
            "",
        );
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn a_hash_inside_a_scalar_is_not_a_comment() {
        let text = "a: \"x # pipewright: ignore[PW0100]\"\nb: |\n  # pipewright: ignore[PW0100]\n";
        let out = run(text, Syntax::Yaml, vec![diag_at(text, "a: ", "PW0100")], "");
        assert_eq!(codes(&out), ["PW0100"]);
        let text =
            "a = \"x # pipewright: ignore[PW0100]\"\nb = '''\n# pipewright: ignore[PW0100]\n'''\n";
        let out = run(
            text,
            Syntax::Toml,
            vec![diag_at(text, "a = ", "PW0100")],
            "",
        );
        assert_eq!(codes(&out), ["PW0100"]);
    }

    #[test]
    fn toml_comments_and_ignore_file() {
        let text =
            "# pipewright: ignore-file[PW0400]\n[main]\nx = 1 # pipewright: ignore[PW0100]\n";
        let out = run(
            text,
            Syntax::Toml,
            vec![
                diag_at(text, "x = 1", "PW0100"),
                diag_at(text, "[main]", "PW0400"),
                diag_at(text, "x = 1", "PW0400"),
            ],
            "",
        );
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn unused_and_unknown_codes_are_reported_at_the_code() {
        let text = "a: 1 # pipewright: ignore[PW0100, PW0200, PW9999]\n";
        let out = run(
            text,
            Syntax::Yaml,
            vec![diag_at(text, "a: 1", "PW0100")],
            "",
        );
        assert_eq!(codes(&out), [UNUSED, INVALID]);
        assert_eq!(out[0].span().range(), {
            let at = text.find("PW0200").unwrap_or(0);
            at..at + 6
        });
        assert_eq!(
            out[0].help.as_deref(),
            Some("remove `PW0200` from the list")
        );
        assert_eq!(out[0].severity, Severity::Warning);
        let text = "# pipewright: ignore-file[PW0100]\na: 1\n";
        let out = run(text, Syntax::Yaml, vec![], "");
        assert_eq!(codes(&out), [UNUSED]);
        assert_eq!(out[0].help.as_deref(), Some("remove the comment"));
        assert!(out[0].message.contains("in this file"));
    }

    #[test]
    fn malformed_directives_are_reported() {
        for (text, why) in [
            ("a: 1 # pipewright: ignore\n", "needs the codes"),
            ("a: 1 # pipewright: ignore[PW0100\n", "not closed"),
            ("a: 1 # pipewright: ignore[]\n", "names no code"),
            (
                "a: 1 # pipewright: ignroe[PW0100]\n",
                "unknown pipewright directive `ignroe`",
            ),
        ] {
            let out = run(
                text,
                Syntax::Yaml,
                vec![diag_at(text, "a: 1", "PW0100")],
                "",
            );
            assert_eq!(codes(&out), ["PW0100", INVALID], "{text}");
            assert!(out[1].message.contains(why), "{}", out[1].message);
        }
        // Mentioning pipewright later in a comment is no directive.
        let text = "a: 1 # see pipewright: ignore docs\n";
        assert_eq!(
            codes(&run(text, Syntax::Yaml, vec![], "")),
            Vec::<&str>::new()
        );
    }

    #[test]
    fn json_files_have_no_comments() {
        let text = "{\"a\": \"# pipewright: ignore[PW0100]\"}";
        let out = run(
            text,
            Syntax::NoComments,
            vec![diag_at(text, "\"a\"", "PW0100")],
            "",
        );
        assert_eq!(codes(&out), ["PW0100"]);
    }

    #[test]
    fn config_levels_and_cli_ignore() {
        let text = "a: 1\n";
        let d = |code| diag_at(text, "a: 1", code);
        let config = "[check]\nignore = [\"PW0100\"]\nwarn = [\"PW0200\"]\n\
                      [[check.per-path]]\npaths = [\"legacy\"]\nerror = [\"PW0300\"]\n";
        let mut w = d("PW0300");
        w.severity = Severity::Warning;
        let out = run(
            text,
            Syntax::Yaml,
            vec![d("PW0100"), d("PW0200"), w, d("PW0777")],
            config,
        );
        assert_eq!(codes(&out), ["PW0200", "PW0300"]);
        assert_eq!(out[0].severity, Severity::Warning);
        assert!(out[0].notes[0].contains("`warn`"));
        assert_eq!(out[1].severity, Severity::Error);
    }

    #[test]
    fn config_applies_to_the_suppression_reports() {
        let text = "a: 1 # pipewright: ignore[PW0100]\n";
        let out = run(
            text,
            Syntax::Yaml,
            vec![],
            "[check]\nerror = [\"PW0012\"]\n",
        );
        assert_eq!(codes(&out), [UNUSED]);
        assert_eq!(out[0].severity, Severity::Error);
        let out = run(
            text,
            Syntax::Yaml,
            vec![],
            "[check]\nignore = [\"PW0012\"]\n",
        );
        assert!(out.is_empty());
    }

    #[test]
    fn crlf_and_bom() {
        let text = "\u{feff}a: 1\r\n# pipewright: ignore[PW0100]\r\nb: 2\r\n";
        let out = run(
            text,
            Syntax::Yaml,
            vec![diag_at(text, "b: 2", "PW0100")],
            "",
        );
        assert!(out.is_empty(), "{out:?}");
    }
}
