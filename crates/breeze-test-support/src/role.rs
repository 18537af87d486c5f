//! Roles played by small shell scripts (`backend = "command"`), for behaviour the scripted
//! simulator does not have: real processes that hang, write, ignore signals.

use std::path::{Path, PathBuf};

/// Writes `body` as a shell script `name` in `dir` and returns its path (run as `sh PATH`).
pub fn shell_script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body)
        .unwrap_or_else(|err| panic!("cannot write {}: {err}", path.display()));
    path
}

/// A `breeze.toml` running the worker as `sh SCRIPT` (with `extra` worker keys) and the
/// other roles on the scripted simulator.
pub fn shell_worker_config(script: &Path, extra: &str) -> String {
    format!(
        "[roles.worker]\nbackend = \"command\"\ncommand = [\"sh\", \"{}\"]\n{extra}\n[roles.reviewer]\nbackend = \"scripted\"\n[roles.advisor]\nbackend = \"scripted\"\n",
        script.display()
    )
}
