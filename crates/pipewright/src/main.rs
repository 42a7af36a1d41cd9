fn main() -> std::process::ExitCode {
    pipewright::main()
}
