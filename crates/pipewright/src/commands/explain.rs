//! `pipewright explain CODE` and `pipewright explain --list`.

use crate::cli::ExplainArgs;
use crate::exit::ExitStatus;

pub(crate) fn run(args: &ExplainArgs) -> ExitStatus {
    let mut codes = crate::output::all_codes();
    codes.sort_by_key(|c| c.code);
    if args.list {
        for c in &codes {
            outln!("{}  {}", c.code, c.title);
        }
        return ExitStatus::OK;
    }
    let Some(asked) = args.code.as_deref() else {
        errln!("error: give a diagnostic code, such as `pipewright explain PW0253`");
        errln!("help: `pipewright explain --list` lists every code with its title");
        return ExitStatus::COULD_NOT_START;
    };
    let code = asked.trim().to_ascii_uppercase();
    match codes.into_iter().find(|c| c.code == code) {
        Some(c) => {
            out!("{}", c.explanation);
            if !c.explanation.ends_with('\n') {
                outln!();
            }
            ExitStatus::OK
        }
        None => {
            errln!("error: unknown diagnostic code `{asked}`");
            errln!("help: codes look like PW0253; `pipewright explain --list` shows them all");
            ExitStatus::COULD_NOT_START
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    /// `explain`, SARIF rules and the language server look a code up by its name in all the
    /// tables at once, and each table checks only itself when it compiles.
    #[test]
    fn every_code_is_declared_once_across_the_workspace_and_headed_by_itself() {
        let mut seen = BTreeSet::new();
        for c in crate::output::all_codes() {
            assert!(seen.insert(c.code), "{} is declared twice", c.code);
            assert!(
                c.explanation.starts_with(&format!("# {}: ", c.code)),
                "{}: the explanation must open with `# {}: `",
                c.code,
                c.code
            );
        }
    }

    /// An explanation that no table declares is never shown: its code was renamed or dropped.
    #[test]
    fn every_explanation_file_belongs_to_a_declared_code() {
        let declared: BTreeSet<String> = crate::output::all_codes()
            .iter()
            .map(|c| c.code.to_string())
            .collect();
        let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = BTreeSet::new();
        for krate in std::fs::read_dir(&crates).into_iter().flatten().flatten() {
            let explain = krate.path().join("explain");
            for file in std::fs::read_dir(&explain).into_iter().flatten().flatten() {
                let path = file.path();
                if path.extension().is_some_and(|x| x == "md") {
                    if let Some(stem) = path.file_stem() {
                        files.insert(stem.to_string_lossy().into_owned());
                    }
                }
            }
        }
        let orphans: Vec<&String> = files.difference(&declared).collect();
        assert!(orphans.is_empty(), "explanations of no code: {orphans:?}");
        assert_eq!(files.len(), declared.len());
    }
}
