//! The `breeze` binary: everything lives in the `breeze_cli` library.

fn main() -> std::process::ExitCode {
    breeze_cli::main()
}
