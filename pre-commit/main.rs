//! `pipewright-pre-commit`: the `pipewright` CLI under the name the root package installs for
//! pre-commit's `language: rust` (see the root Cargo.toml for why it is not `pipewright`).

fn main() -> std::process::ExitCode {
    pipewright::main()
}
