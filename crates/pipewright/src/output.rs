//! Printing diagnostics in the format the user asked for.

use crate::cli::Format;
use pipewright_syntax::{render, CodeInfo, Diagnostic, SourceMap};
use std::io::IsTerminal;

/// Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org).
pub fn use_color() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

/// The same rule for output written to stderr.
pub fn use_color_stderr() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
}

pub fn print(format: Format, diags: &[Diagnostic], sources: &SourceMap, files: usize) {
    let text = match format {
        Format::Human => {
            let mut s = render::human(diags, sources, use_color());
            if !s.is_empty() && !s.ends_with('\n') {
                s.push('\n');
            }
            s.push_str(&render::summary(diags, files));
            s
        }
        Format::Json => render::json(diags, sources),
        Format::Sarif => render::sarif(diags, sources, env!("CARGO_PKG_VERSION"), &all_codes()),
        Format::Github => render::github(diags, sources),
    };
    if text.ends_with('\n') {
        print!("{text}");
    } else {
        println!("{text}");
    }
}

/// Every documented code, from every crate that emits diagnostics.
pub fn all_codes() -> Vec<CodeInfo> {
    let tables: &[&[CodeInfo]] = &[
        pipewright_syntax::codes::GENERAL,
        crate::commands::check::CLI_CODES,
        pipewright_r1::CODES,
        pipewright_pipeline::codes::CODES,
        pipewright_recipe::CODES,
        pipewright_run::codes::CODES,
        pipewright_fmt::CODES,
    ];
    tables.iter().flat_map(|t| t.iter().copied()).collect()
}
