//! Helpers shared by the end-to-end tests.

use std::path::Path;
use std::process::{Command, Output};

/// The `breeze` binary under test.
pub fn breeze() -> Command {
    Command::new(env!("CARGO_BIN_EXE_breeze"))
}

/// Runs `breeze args...` in `dir`.
pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    breeze().current_dir(dir).args(args).output().expect("breeze binary runs")
}

/// stdout as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// stderr as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The top of the source tree.
pub fn project_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}
