//! `pipewright explain CODE` and `pipewright explain --list`.

use crate::cli::ExplainArgs;

pub fn run(args: &ExplainArgs) -> u8 {
    let mut codes = crate::output::all_codes();
    codes.sort_by_key(|c| c.code);
    if args.list {
        for c in &codes {
            outln!("{}  {}", c.code, c.title);
        }
        return 0;
    }
    let Some(asked) = args.code.as_deref() else {
        errln!("error: give a diagnostic code, such as `pipewright explain PW0253`");
        errln!("help: `pipewright explain --list` lists every code with its title");
        return 2;
    };
    let code = asked.trim().to_ascii_uppercase();
    match codes.into_iter().find(|c| c.code == code) {
        Some(c) => {
            out!("{}", c.explanation);
            if !c.explanation.ends_with('\n') {
                outln!();
            }
            0
        }
        None => {
            errln!("error: unknown diagnostic code `{asked}`");
            errln!("help: codes look like PW0253; `pipewright explain --list` shows them all");
            2
        }
    }
}
