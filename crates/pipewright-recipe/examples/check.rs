//! `cargo run --example check -p pipewright-recipe -- FILE…`: prints diagnostics as
//! `file:line:col: severity[code]: message` and exits 1 when any file has an error.

use pipewright_syntax::SourceMap;

fn main() {
    let mut failed = false;
    for arg in std::env::args().skip(1) {
        let text = match std::fs::read_to_string(&arg) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{arg}: cannot read: {e}");
                failed = true;
                continue;
            }
        };
        let mut sources = SourceMap::new();
        let diags = pipewright_recipe::check_file(&mut sources, std::path::Path::new(&arg), &text);
        for d in &diags {
            let (name, lc) = sources.get(d.span().file).map_or((arg.clone(), None), |f| {
                (f.name.clone(), Some(f.line_col(d.span().start as usize)))
            });
            let (line, col) = lc.map_or((0, 0), |l| (l.line, l.col));
            println!(
                "{name}:{line}:{col}: {}[{}]: {}",
                d.severity.as_str(),
                d.code,
                d.message
            );
            failed |= d.is_error();
        }
    }
    std::process::exit(i32::from(failed));
}
