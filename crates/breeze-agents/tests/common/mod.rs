//! Paths of the shared fixtures and fake executables, and small helpers.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use breeze_agents::WriteSetCheck;

/// The workspace root (fixtures and fake executables live under its `tests/`).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A recorded stream: `tests/fixtures/agents/<cli>/<name>.jsonl`.
pub fn fixture(cli: &str, name: &str) -> PathBuf {
    workspace_root().join("tests/fixtures/agents").join(cli).join(format!("{name}.jsonl"))
}

/// The lines of a fixture with `@CWD@` replaced by `cwd`, as the fake executables print it.
pub fn fixture_lines(cli: &str, name: &str, cwd: &str) -> Vec<String> {
    let path = fixture(cli, name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    text.replace("@CWD@", cwd).lines().map(str::to_owned).collect()
}

/// The directory holding the fake `claude` and `codex`.
pub fn fake_bin() -> PathBuf {
    workspace_root().join("tests/fake-bin")
}

/// The write set used throughout: everything under `src/`.
pub fn src_only() -> WriteSetCheck {
    Arc::new(|path: &str| path.starts_with("src/"))
}
