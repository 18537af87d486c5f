//! Helpers shared by the end-to-end tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub use breeze_test_support::plan::toml_task;
pub use breeze_test_support::role::shell_worker_config;
pub use breeze_test_support::write;

/// The `breeze` binary under test, hermetic: no user or system git configuration, an empty
/// `HOME`, a fixed identity — tests do not depend on the machine they run on.
pub fn breeze() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_breeze"));
    breeze_test_support::hermetic(&mut command);
    command
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

/// stdout and stderr, for assertion messages.
pub fn both(output: &Output) -> String {
    format!("--- stdout\n{}--- stderr\n{}", stdout(output), stderr(output))
}

/// The top of the source tree.
pub fn project_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// Runs the `git` CLI (hermetic) in `dir` and returns stdout; panics with stderr on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    breeze_test_support::git(dir, args)
}

/// A fresh repository on `main` with one commit holding `files`.
pub fn repo_with(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    breeze_test_support::TestRepo::with_files(files).into_parts()
}

/// A breeze.toml running every role on the scripted simulator.
pub const SCRIPTED_CONFIG: &str = r#"
[run]
max_workers = 3
[roles.worker]
backend = "scripted"
stall_timeout = "3s"
[roles.advisor]
backend = "scripted"
[roles.reviewer]
backend = "scripted"
[roles.scaffolder]
backend = "scripted"
"#;

/// `breeze status --json` of the repository, parsed.
pub fn status_json(root: &Path) -> serde_json::Value {
    let output = run_in(root, &["status", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    serde_json::from_slice(&output.stdout).expect("status --json prints JSON")
}

/// The state of task `id` in a status document.
pub fn task_state(status: &serde_json::Value, id: &str) -> String {
    status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|task| task["id"] == id)
        .map(|task| task["state"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no task {id} in {status}"))
}

/// A plan of one task, `1`, that may write `a.txt`.
pub fn one_task_plan() -> String {
    toml_task("1", "T", &["a.txt"], "")
}

/// Whether this machine confines role processes with Landlock (`breeze doctor` says so).
/// Without it the test is skipped, loudly — unless `BREEZE_REQUIRE_LANDLOCK` is set (CI),
/// where a machine without it is a failure.
pub fn landlock_or_skip() -> bool {
    let doctor = run_in(project_root(), &["doctor"]);
    let text = stdout(&doctor);
    let available = text.lines().next().is_some_and(|line| line.contains("Landlock ABI"));
    if !available {
        assert!(
            std::env::var_os("BREEZE_REQUIRE_LANDLOCK").is_none(),
            "BREEZE_REQUIRE_LANDLOCK is set but this machine has no Landlock: {text}"
        );
        eprintln!("skipped: no Landlock on this machine ({})", text.lines().next().unwrap_or(""));
    }
    available
}

/// A breeze.toml with shell roles read from the repository's `roles/` folder (`<task id>.sh`
/// for workers, `reviewer.sh`), the scripted advisor, `lanes` lanes and `sandbox.mode`.
pub fn shell_roles_config(mode: &str, lanes: u32) -> String {
    format!(
        r#"
[run]
max_workers = {lanes}
[roles.worker]
backend = "command"
command = ["sh", "-c", "exec sh ../../roles/$BREEZE_TASK_ID.sh"]
[roles.reviewer]
backend = "command"
command = ["sh", "../../roles/reviewer.sh"]
[roles.advisor]
backend = "scripted"
[sandbox]
mode = "{mode}"
"#
    )
}
