//! `pipewright explain CODE`.

use crate::cli::ExplainArgs;

pub fn run(args: &ExplainArgs) -> u8 {
    let code = args.code.trim().to_ascii_uppercase();
    match crate::output::all_codes()
        .into_iter()
        .find(|c| c.code == code)
    {
        Some(c) => {
            print!("{}", c.explanation);
            if !c.explanation.ends_with('\n') {
                println!();
            }
            0
        }
        None => {
            eprintln!("error: unknown diagnostic code `{}`", args.code);
            eprintln!("help: codes look like PW0253; `pipewright check` prints them in brackets, e.g. `error[PW0253]`");
            2
        }
    }
}
