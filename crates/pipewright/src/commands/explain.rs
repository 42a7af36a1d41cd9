//! `pipewright explain CODE` and `pipewright explain --list`.

use crate::cli::ExplainArgs;

pub fn run(args: &ExplainArgs) -> u8 {
    let codes = crate::output::all_codes();
    if args.list {
        for c in &codes {
            println!("{}  {}", c.code, c.title);
        }
        return 0;
    }
    let asked = args.code.as_deref().unwrap_or("");
    let code = asked.trim().to_ascii_uppercase();
    match codes.into_iter().find(|c| c.code == code) {
        Some(c) => {
            print!("{}", c.explanation);
            if !c.explanation.ends_with('\n') {
                println!();
            }
            0
        }
        None => {
            eprintln!("error: unknown diagnostic code `{asked}`");
            eprintln!("help: codes look like PW0253; `pipewright explain --list` shows them all");
            2
        }
    }
}
