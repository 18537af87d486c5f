//! Helpers shared by the end-to-end tests.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
/// Runs `breeze <args>` in `root` with the engine told to kill itself at `point`
/// (`BREEZE_TEST_KILL_AT`, e.g. `landing:main-moved`), and checks that it died there.
pub fn killed_at(root: &Path, args: &[&str], point: &str) {
    use std::os::unix::process::ExitStatusExt as _;
    let killed =
        breeze().current_dir(root).args(args).env("BREEZE_TEST_KILL_AT", point).output().unwrap();
    assert_eq!(killed.status.signal(), Some(9), "killed at {point}: {}", both(&killed));
}

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

/// A command's output collected as it comes.
pub struct Collected {
    pub child: Child,
    output: Arc<Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// `breeze ARG` on a pseudo-terminal (`script`), its output collected as it comes.
pub struct Terminal;

impl Terminal {
    pub fn start(root: &Path, arg: &str) -> Collected {
        Self::on_terminal(root, &format!("{} {arg}", env!("CARGO_BIN_EXE_breeze")), &[])
    }

    /// `breeze ARGS` alone on the terminal (the shell `script` starts is replaced by it,
    /// so a Ctrl-C reaches breeze only, and its exit code is the terminal's), with more
    /// environment variables.
    pub fn start_with(root: &Path, args: &str, env: &[(&str, &str)]) -> Collected {
        Self::on_terminal(root, &format!("exec {} {args}", env!("CARGO_BIN_EXE_breeze")), env)
    }

    fn on_terminal(root: &Path, line: &str, env: &[(&str, &str)]) -> Collected {
        let mut command = Command::new("script");
        breeze_test_support::hermetic(&mut command);
        command.envs(env.iter().copied());
        command.current_dir(root).args(["-qfec", line, "/dev/null"]);
        Collected::start(&mut command)
    }
}

impl Collected {
    pub fn start(command: &mut Command) -> Collected {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the command runs");
        let output = Arc::new(Mutex::new(Vec::new()));
        let mut stdout = child.stdout.take().unwrap();
        let sink = output.clone();
        let reader = std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n @ 1..) = stdout.read(&mut buffer) {
                sink.lock().unwrap().extend_from_slice(&buffer[..n]);
            }
        });
        Collected { child, output, reader: Some(reader) }
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned()
    }

    /// Waits until the output holds `what`; the output so far.
    pub fn wait_for(&self, what: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let text = self.text();
            if text.contains(what) {
                return text;
            }
            assert!(Instant::now() < deadline, "no {what:?} on the terminal:\n{text}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until a full-screen program drew `words` — compared without the terminal's
    /// control sequences and without spaces, since such a program moves the cursor between
    /// the words it draws; the output so far.
    pub fn wait_for_drawn(&self, words: &str, limit: Duration) -> String {
        let squeeze = |text: &str| -> String {
            strip_controls(text).chars().filter(|c| !c.is_whitespace()).collect()
        };
        let wanted = squeeze(words);
        let deadline = Instant::now() + limit;
        loop {
            let text = self.text();
            if squeeze(&text).contains(&wanted) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "{words:?} was never drawn:\n{}",
                strip_controls(&text)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn type_key(&mut self, key: u8) {
        self.type_text(&[key]);
    }

    /// Types `text` at the terminal.
    pub fn type_text(&mut self, text: &[u8]) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(text).unwrap();
        stdin.flush().unwrap();
    }

    /// Waits for the command's end; its exit code and everything it showed.
    pub fn finish(mut self) -> (Option<i32>, String) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "still running:\n{}", self.text());
            std::thread::sleep(Duration::from_millis(50));
        };
        drop(self.child.stdin.take());
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        (status.code(), self.text())
    }
}

impl Drop for Collected {
    /// A test that failed half-way leaves no terminal program running.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `text` without terminal control sequences (CSI, OSC and two-byte escapes).
pub fn strip_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.next() {
            // CSI: parameters, then one final byte in @..~.
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            // OSC: up to BEL or ESC \.
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The journal (`events.jsonl`) of the last run of the repository at `root`.
pub fn run_events(root: &Path) -> String {
    let status = status_json(root);
    let run = root.join(".breeze/runs").join(status["run_id"].as_str().unwrap());
    std::fs::read_to_string(run.join("events.jsonl")).unwrap()
}

/// A breeze.toml with shell roles read from the `roles/` folder of the repository at `root`
/// (`<task id>.sh` for workers, by its absolute path; `reviewer.sh`, which the run keeps a
/// copy of), the scripted advisor, `lanes` lanes and `sandbox.mode`.
pub fn shell_roles_config(root: &Path, mode: &str, lanes: u32) -> String {
    format!(
        r#"
[run]
max_workers = {lanes}
[roles.worker]
backend = "command"
command = ["sh", "-c", "exec sh {worker}"]
[roles.reviewer]
backend = "command"
command = ["sh", "roles/reviewer.sh"]
[roles.advisor]
backend = "scripted"
[sandbox]
mode = "{mode}"
"#,
        worker = task_script(root),
    )
}

/// What a shell role's `sh -c` runs for the task it is given: `<root>/roles/<task id>.sh`
/// by its absolute path (lanes are outside the checkout, so no relative path reaches it).
pub fn task_script(root: &Path) -> String {
    format!("{}/roles/$BREEZE_TASK_ID.sh", root.display())
}

/// The folder breeze's worktrees of the repository at `root` are in: as breeze recorded it
/// once it made one, else where a run of [`breeze`] (whose `HOME` is the tests') makes them.
pub fn worktree_folder(root: &Path) -> PathBuf {
    if root.join(".breeze/worktree-root").is_file() {
        return breeze_test_support::worktree_folder(root);
    }
    worktree_folder_with_home(root, breeze_test_support::git::empty_home())
}

/// The folder breeze's worktrees of the repository at `root` go in when breeze runs with
/// `home` as `HOME` (and no `XDG_DATA_HOME`, no `[worktree] root`): asked of the repository.
pub fn worktree_folder_with_home(root: &Path, home: &Path) -> PathBuf {
    let data = breeze_git::default_worktrees_folder(|var| (var == "HOME").then(|| home.into()));
    let options = breeze_git::OpenOptions {
        worktree_root: breeze_git::WorktreeRoot::Under(data.expect("a HOME")),
        ..Default::default()
    };
    let repo = breeze_git::Repo::open_with(root, &options).expect("the test's repository");
    repo.worktree_root().expect("a worktree folder")
}

/// Where breeze's worktree `name` (`lane-1`, `integration`) of the repository at `root` is
/// (see [`worktree_folder`]).
pub fn lane(root: &Path, name: &str) -> PathBuf {
    worktree_folder(root).join(name)
}
