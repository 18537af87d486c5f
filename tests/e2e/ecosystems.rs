//! A fresh project of each common ecosystem, as a new user would start: `breeze init`, a
//! two-task plan, `breeze run` with the scripted roles — a REQUEST_CHANGES round, a
//! `reject` and approvals in between — and both tasks land with nothing but their files on
//! main: what the ecosystem's own tools leave in the lanes (`package-lock.json` from
//! `npm install`, `Cargo.lock` from `cargo test`, `__pycache__/` from Python's tests) is
//! breeze's own, never a task's change.
//!
//! The tools run for real (npm installs a tiny package from its registry) with their caches
//! in one folder kept between runs of this test binary (`CARGO_TARGET_TMPDIR`), as `HOME`;
//! a tool that is not installed skips its test, saying so.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{both, git, repo_with, stdout, toml_task};

/// `HOME` for these tests: the tools' caches (`~/.npm`, `~/.cargo/registry`, …), kept
/// between runs so that only the first one downloads.
pub(crate) fn tools_home() -> PathBuf {
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ecosystem-home");
    std::fs::create_dir_all(&home).unwrap();
    home
}

/// The real home's rustup folder: `cargo` is rustup's proxy, which needs its toolchains.
pub(crate) fn rustup_home() -> Option<PathBuf> {
    std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".rustup")))
        .filter(|path| path.is_dir())
}

/// `breeze args…` in `dir`, hermetic but with the tools' home — and breeze's worktrees in
/// a data folder beside the repository: under the tools' home (in this project's target
/// folder) a lane's cargo would take this project's workspace for its own.
pub(crate) fn breeze_in(dir: &Path, args: &[&str]) -> Output {
    let mut command = crate::support::breeze();
    command.env("HOME", tools_home());
    command.env("XDG_DATA_HOME", dir.parent().expect("the repository's folder").join("data"));
    // The outer build's target folder must not become the project's (nor be written
    // from a confined check).
    command.env_remove("CARGO_TARGET_DIR").env_remove("CARGO_BUILD_TARGET_DIR");
    // Python writes its bytecode caches next to the code, as on most machines.
    command.env_remove("PYTHONDONTWRITEBYTECODE");
    if let Some(rustup) = rustup_home() {
        command.env("RUSTUP_HOME", rustup);
    }
    command.current_dir(dir).args(args).output().expect("breeze runs")
}

/// Whether `program` runs here; if not, the test is skipped, loudly.
pub(crate) fn have(program: &str, ecosystem: &str) -> bool {
    let found =
        Command::new(program).arg("--version").output().is_ok_and(|out| out.status.success());
    if !found {
        eprintln!("skipped: `{program}` is not installed, so the {ecosystem} project cannot run");
    }
    found
}

/// One ecosystem's project and the two tasks' files.
struct Project<'a> {
    files: &'a [(&'a str, &'a str)],
    /// What task 1 writes (it gets one REQUEST_CHANGES round) and what task 2 writes (it is
    /// rejected once).
    writes: [&'a str; 2],
    /// Lines of `breeze.toml` to replace after `breeze init`, `(from, to)`.
    config_edits: &'a [(&'a str, &'a str)],
    /// What the ecosystem's tools leave in a lane (shown by `git status` there), which must
    /// not reach main.
    left_in_lane: &'a str,
}

/// init → plan → run → reject → approve → resume → both landed, only their files on main.
fn init_plan_run_land(project: &Project<'_>) {
    let (_temp, root) = repo_with(project.files);
    let init = breeze_in(&root, &["init"]);
    assert_eq!(init.status.code(), Some(0), "{}", both(&init));
    let mut config = std::fs::read_to_string(root.join("breeze.toml")).unwrap();
    config = config.replace("backend = \"claude\"", "backend = \"scripted\"");
    config = config.replace("require_approval = false", "require_approval = true");
    for (from, to) in project.config_edits {
        assert!(config.contains(from), "`{from}` not in the starter breeze.toml:\n{config}");
        config = config.replace(from, to);
    }
    std::fs::write(root.join("breeze.toml"), config).unwrap();
    std::fs::remove_file(root.join("Plans.md")).unwrap();
    let [first, second] = project.writes;
    let plan = toml_task("1", "First change", &[first], "[task.sim]\nrequest_changes = 1")
        + &toml_task("2", "Second change", &[second], "");
    std::fs::write(root.join("plan.toml"), plan).unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "breeze init and a plan"]);
    let start = git(&root, &["rev-parse", "main"]).trim().to_string();
    let files_at_start = git(&root, &["ls-tree", "-r", "--name-only", "main"]);

    let ran = breeze_in(&root, &["run", "plan.toml"]);
    assert_eq!(ran.status.code(), Some(3), "both wait for approval: {}", both(&ran));
    let text = stdout(&ran);
    assert!(text.contains("[1] round 1: REQUEST_CHANGES (1 blocking gap)"), "{text}");
    assert!(!text.contains("from the gates"), "no gate failed: {text}");
    let rejected = breeze_in(&root, &["reject", "2", "--note", "say what changed"]);
    assert_eq!(rejected.status.code(), Some(0), "{}", both(&rejected));
    assert_eq!(breeze_in(&root, &["approve", "1"]).status.code(), Some(0));
    let resumed = breeze_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(3), "task 2 waits again: {}", both(&resumed));
    assert_eq!(breeze_in(&root, &["approve", "2"]).status.code(), Some(0));
    let resumed = breeze_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    assert!(!stdout(&resumed).contains("from the gates"), "{}", both(&resumed));

    // Nothing but the tasks' files on main.
    let changed = git(&root, &["diff", "--name-only", &format!("{start}..main")]);
    let mut expected = vec![first, second];
    expected.sort();
    assert_eq!(changed.lines().collect::<Vec<_>>(), expected, "{changed}");
    let mut files: Vec<String> = files_at_start.lines().map(str::to_string).collect();
    files.extend(expected.iter().map(|path| path.to_string()));
    files.sort();
    let on_main = git(&root, &["ls-tree", "-r", "--name-only", "main"]);
    assert_eq!(on_main.lines().collect::<Vec<_>>(), files);
    // What the tools left is still in the lanes (kept for the next run), not on main.
    let lanes = crate::support::worktree_folder(&root);
    let left: String = std::fs::read_dir(&lanes)
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("lane-"))
        .map(|entry| git(&entry.path(), &["status", "--porcelain", "--untracked-files=all"]))
        .collect();
    assert!(left.contains(project.left_in_lane), "the tools ran in the lanes: {left}");
    assert_eq!(git(&root, &["status", "--porcelain"]), "", "the user's checkout is clean");
}

#[test]
fn an_npm_project_lands_only_its_tasks_files() {
    if !have("npm", "npm") || !have("node", "npm") {
        return;
    }
    let package = r#"{
  "name": "calc",
  "version": "1.0.0",
  "scripts": { "test": "node --test" },
  "dependencies": { "is-number": "^7.0.0" }
}
"#;
    init_plan_run_land(&Project {
        files: &[("package.json", package), ("lib/add.js", "module.exports = (a, b) => a + b;\n")],
        writes: ["lib/sub.js", "lib/mul.js"],
        config_edits: &[],
        left_in_lane: "?? package-lock.json",
    });
}

#[test]
fn a_cargo_project_lands_only_its_tasks_files() {
    if !have("cargo", "Cargo") || rustup_home().is_none() && !have("rustc", "Cargo") {
        return;
    }
    // The layout `cargo new` gives: no Cargo.lock until something builds.
    init_plan_run_land(&Project {
        files: &[
            ("Cargo.toml", "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
            ("src/lib.rs", "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"),
            (".gitignore", "/target\n"),
        ],
        writes: ["src/sub.rs", "src/mul.rs"],
        config_edits: &[],
        left_in_lane: "?? Cargo.lock",
    });
}

#[test]
fn a_python_project_lands_only_its_tasks_files() {
    if !have("python3", "Python") {
        return;
    }
    // Its .gitignore does not mention __pycache__; pytest is not assumed: the standard
    // library's unittest is the test command.
    init_plan_run_land(&Project {
        files: &[
            ("pyproject.toml", "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n"),
            ("calc/__init__.py", "def add(a, b):\n    return a + b\n"),
            ("tests/__init__.py", ""),
            (
                "tests/test_add.py",
                "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n",
            ),
            (".gitignore", ".venv/\n"),
        ],
        writes: ["calc/sub.py", "calc/mul.py"],
        config_edits: &[
            (
                "checks = [[\"python\", \"-m\", \"pytest\"]]",
                "checks = [[\"python3\", \"-m\", \"unittest\"]]",
            ),
            (
                "verify = [\"python\", \"-m\", \"pytest\"]",
                "verify = [\"python3\", \"-m\", \"unittest\"]",
            ),
        ],
        left_in_lane: "__pycache__/",
    });
}

#[test]
fn a_go_project_lands_only_its_tasks_files() {
    if !have("go", "Go") {
        return;
    }
    init_plan_run_land(&Project {
        files: &[
            ("go.mod", "module example.com/calc\n\ngo 1.21\n"),
            ("calc.go", "package calc\n\nfunc Add(a, b int) int { return a + b }\n"),
            (
                "calc_test.go",
                "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n",
            ),
        ],
        // Comments only (what the scripted worker writes) would not compile as Go.
        writes: ["docs/sub.md", "docs/mul.md"],
        config_edits: &[],
        left_in_lane: "",
    });
}
