//! Reading the files a command works on. A file that cannot be read becomes a diagnostic on that
//! file instead of ending the command: CI uploads what `check` prints, and one unreadable file
//! must not hide the results of every other file.

use crate::discover::{self, Input};
use pipewright_syntax::{Diagnostic, FileId, SourceMap, Span};
use std::io::{ErrorKind, Read};
use std::path::Path;
use std::sync::Arc;

pipewright_syntax::codes! {
    pub const CODES;

    pub const UNREADABLE = "PW0009": "a file or directory that cannot be read";
    pub const TOO_LARGE = "PW0011": "an input larger than pipewright reads";
}

/// The name a file is shown under: as given, with forward slashes; standard input is `<stdin>`.
pub(crate) fn display_name(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        discover::display(path)
    }
}

/// Reads one input into `sources`. On failure the file is still added (empty, or with the
/// invalid bytes replaced) so that the diagnostic has a place to point at.
/// A failure is boxed: a `Diagnostic` is large, and the text is the common case.
pub(crate) fn input(
    input: &Input,
    sources: &mut SourceMap,
) -> Result<(FileId, Arc<str>), Box<Diagnostic>> {
    let name = display_name(&input.path);
    if let Some(problem) = &input.problem {
        return Err(Box::new(failed(&name, problem, sources)));
    }
    let bytes = match bytes(&input.path) {
        Ok(b) => b,
        Err(e) if e.kind() == ErrorKind::FileTooLarge => {
            return Err(Box::new(too_large(&name, sources)))
        }
        Err(e) => return Err(Box::new(failed(&name, &e.to_string(), sources))),
    };
    decode(name, bytes, sources)
}

/// Adds the bytes read for `name` to `sources` as text, or reports where they stop being UTF-8.
pub(crate) fn decode(
    name: String,
    bytes: Vec<u8>,
    sources: &mut SourceMap,
) -> Result<(FileId, Arc<str>), Box<Diagnostic>> {
    match String::from_utf8(bytes) {
        Ok(text) => {
            // One copy of the text, shared with the source map: a large file is not held twice.
            let text: Arc<str> = Arc::from(text);
            let id = sources.add(name, Arc::clone(&text));
            Ok((id, text))
        }
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let bad = e.as_bytes().get(at).copied().unwrap_or_default();
            let lossy = String::from_utf8_lossy(e.as_bytes()).into_owned();
            let id = sources.add(name, lossy.as_str());
            // Up to the first bad byte the lossy text is the file itself, and the bad byte
            // became one U+FFFD (3 bytes), so the span marks the exact place.
            let end = (at + '\u{FFFD}'.len_utf8()).min(lossy.len());
            let d = Diagnostic::error(
                UNREADABLE,
                Span::new(id, at..end),
                "this file is not UTF-8 text",
            )
            .with_label(format!("byte 0x{bad:02X} is not valid UTF-8 here"))
            .with_note("workflow files are read as UTF-8; nothing else in this file was checked")
            .with_help("re-encode the file as UTF-8 (e.g. `iconv -f LATIN1 -t UTF-8`)");
            Err(Box::new(d))
        }
    }
}

/// The most any verb reads from one file or from standard input. Workflow files are kilobytes;
/// the limit only stops `check /dev/zero` or an endless pipe from taking all memory.
pub(crate) const MAX_INPUT_BYTES: u64 = 256 * 1024 * 1024;

/// The raw bytes of a path; `-` is standard input. More than [`MAX_INPUT_BYTES`] is an error of
/// kind `FileTooLarge`, found without reading a large regular file at all.
pub(crate) fn bytes(path: &Path) -> std::io::Result<Vec<u8>> {
    let too_large = || {
        std::io::Error::new(
            ErrorKind::FileTooLarge,
            format!("larger than the {} MiB input limit", MAX_INPUT_BYTES >> 20),
        )
    };
    let reader: Box<dyn Read> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let file = std::fs::File::open(path)?;
        if file.metadata()?.len() > MAX_INPUT_BYTES {
            return Err(too_large());
        }
        Box::new(file)
    };
    let mut b = Vec::new();
    reader.take(MAX_INPUT_BYTES + 1).read_to_end(&mut b)?;
    if b.len() as u64 > MAX_INPUT_BYTES {
        return Err(too_large());
    }
    Ok(b)
}

/// The text of a path (`-` is standard input), for the verbs that take exactly one file.
pub(crate) fn text(path: &Path) -> Result<String, String> {
    let bytes = bytes(path).map_err(|e| format!("cannot read `{}`: {e}", display_name(path)))?;
    String::from_utf8(bytes).map_err(|_| {
        format!(
            "cannot read `{}`: the file is not UTF-8 text",
            display_name(path)
        )
    })
}

fn too_large(name: &str, sources: &mut SourceMap) -> Diagnostic {
    let file = sources.add(name.to_string(), "");
    Diagnostic::error(
        TOO_LARGE,
        Span::new(file, 0..0),
        format!(
            "`{name}` is larger than the {} MiB input limit",
            MAX_INPUT_BYTES >> 20
        ),
    )
    .with_label("not read")
    .with_note("pipewright stops reading one input at this size, so that a device or an endless pipe cannot take all memory")
    .with_help("split the workflow into several files")
}

/// The diagnostic for a path that could not be read; the path is added to `sources` (empty) so
/// that the diagnostic has a file to name.
pub(crate) fn failed(name: &str, why: &str, sources: &mut SourceMap) -> Diagnostic {
    let file = sources.add(name.to_string(), "");
    Diagnostic::error(
        UNREADABLE,
        Span::new(file, 0..0),
        format!("cannot read `{name}`: {why}"),
    )
    .with_label("not read")
    .with_note("nothing in this path was checked; the other paths were")
}
