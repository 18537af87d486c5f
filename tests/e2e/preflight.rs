//! The preflight through the real binary: `breeze run` on a fresh project stops with exit 2
//! and one line per problem before anything exists; `breeze doctor` makes the same checks,
//! exits non-zero on a problem, and prints `breeze-doctor.v1` with `--json`; `breeze init`
//! writes a template plan in the project's own paths, which `run` refuses until edited.

use std::path::Path;
use std::process::Output;

use breeze_protocol::MessageKind;

use crate::support::{SCRIPTED_CONFIG, both, breeze, git, repo_with, run_in, stderr, stdout};

/// The test process's PATH without any folder holding a `claude` (so the test means the
/// same on a machine that has it).
fn path_without_claude() -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    let kept: Vec<&str> =
        path.split(':').filter(|dir| !Path::new(dir).join("claude").exists()).collect();
    kept.join(":")
}

/// `breeze args...` in `dir` with no `claude` on PATH.
fn without_claude(dir: &Path, args: &[&str]) -> Output {
    breeze()
        .current_dir(dir)
        .args(args)
        .env("PATH", path_without_claude())
        .output()
        .expect("breeze runs")
}

/// Nothing of a run exists: no run folder, lane, task branch, worktree or lock.
fn nothing_created(root: &Path) {
    let runs = root.join(".breeze/runs");
    assert!(!runs.exists() || std::fs::read_dir(&runs).unwrap().next().is_none(), "a run folder");
    assert!(!root.join(".harness-worktrees").exists(), "a lane");
    assert!(!root.join(".breeze/run.lock").exists(), "the lock file");
    assert_eq!(git(root, &["branch", "--format=%(refname:short)"]), "main\n");
    assert_eq!(git(root, &["worktree", "list"]).lines().count(), 1, "a worktree is left");
}

const NPM_PACKAGE: &str = "{\n  \"name\": \"demo\",\n  \"version\": \"1.0.0\",\n  \"scripts\": { \"test\": \"node --test\" }\n}\n";

#[test]
fn a_fresh_npm_project_without_claude_stops_before_anything_exists() {
    let (_temp, root) = repo_with(&[("package.json", NPM_PACKAGE)]);
    let init = run_in(&root, &["init"]);
    assert_eq!(init.status.code(), Some(0), "{}", both(&init));
    let run = without_claude(&root, &["run", "--skip-setup-check"]);
    assert_eq!(run.status.code(), Some(2), "{}", both(&run));
    let err = stderr(&run);
    assert!(err.starts_with("error: breeze cannot start: 2 problems to fix first\n"), "{err}");
    assert!(
        err.contains("\n  ✗ Plans.md is breeze init's template (its placeholder tasks would be run): describe your tasks (or run `breeze draft \"GOAL\"`), then remove line 3 of Plans.md (<!-- breeze:template … -->)\n"),
        "{err}"
    );
    assert!(
        err.contains("\n  ✗ claude not found on PATH (the backend of roles.worker, roles.reviewer and roles.advisor): install claude: npm i -g @anthropic-ai/claude-code, or set another backend in [roles.worker], [roles.reviewer], [roles.advisor] of breeze.toml\n"),
        "{err}"
    );
    assert!(err.contains("hint: nothing was created;"), "{err}");
    assert!(!err.contains("PATH="), "the PATH is never printed: {err}");
    assert_eq!(err.lines().count(), 4, "one line per problem: {err}");
    nothing_created(&root);
}

#[test]
fn doctor_exits_non_zero_on_problems_and_prints_its_report_as_json() {
    let (_temp, root) = repo_with(&[("package.json", NPM_PACKAGE)]);
    assert_eq!(run_in(&root, &["init"]).status.code(), Some(0));
    let doctor = without_claude(&root, &["doctor", "--no-setup"]);
    assert_eq!(doctor.status.code(), Some(2), "{}", both(&doctor));
    let out = stdout(&doctor);
    assert!(out.starts_with("confinement: "), "the machine first: {out}");
    assert!(out.contains("\n  ✗ claude not found on PATH (the backend of"), "{out}");
    assert!(out.contains("\n      searched: "), "doctor names the folders: {out}");
    assert!(out.contains("\n  ✓ breeze.toml is valid\n"), "{out}");
    assert!(out.contains("\n  - worktree.setup was not tried (--no-setup)\n"), "{out}");
    assert!(
        out.ends_with("2 problems: `breeze run` would stop before creating anything\n"),
        "{out}"
    );

    let json = without_claude(&root, &["doctor", "--json", "--no-setup"]);
    assert_eq!(json.status.code(), Some(2), "{}", both(&json));
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON on stdout");
    let problems = breeze_protocol::validate::validate(MessageKind::BreezeDoctor, &report);
    assert!(problems.is_empty(), "{problems:?}\n{report:#}");
    assert_eq!(report["schema_version"], "breeze-doctor.v1");
    assert_eq!(report["ok"], false);
    let outcomes: Vec<(String, String)> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["check"].as_str().unwrap().into(), c["outcome"].as_str().unwrap().into()))
        .collect();
    for expected in
        [("plan", "problem"), ("backend", "problem"), ("program", "ok"), ("setup", "skipped")]
    {
        assert!(
            outcomes.contains(&(expected.0.to_string(), expected.1.to_string())),
            "{expected:?} in {outcomes:?}"
        );
    }

    // Fixed — roles on the simulator, the plan the user's — doctor passes.
    std::fs::write(root.join("breeze.toml"), SCRIPTED_CONFIG).unwrap();
    let plan = std::fs::read_to_string(root.join("Plans.md")).unwrap();
    let edited: String = plan
        .lines()
        .filter(|line| !line.contains("breeze:template"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(root.join("Plans.md"), edited).unwrap();
    let fixed = without_claude(&root, &["doctor", "--json", "--no-setup"]);
    assert_eq!(fixed.status.code(), Some(0), "{}", both(&fixed));
    let report: serde_json::Value = serde_json::from_slice(&fixed.stdout).unwrap();
    assert_eq!(report["ok"], true, "{report:#}");
}

#[test]
fn an_unknown_key_and_a_missing_check_program_are_one_line_each() {
    let config = format!(
        "{SCRIPTED_CONFIG}[review]\nchecks = [[\"breeze-e2e-no-such-linter\"]]\nmax_round = 2\n"
    );
    let (_temp, root) =
        repo_with(&[("breeze.toml", &config), ("plan.toml", &crate::support::one_task_plan())]);
    let run = run_in(&root, &["run"]);
    assert_eq!(run.status.code(), Some(2), "{}", both(&run));
    assert!(
        stderr(&run).contains("\n  ✗ breeze.toml: unknown key review.max_round at line 15 (did you mean max_rounds?): fix its name (every key with its default and what it does: `breeze init --print-config`)\n"),
        "{}",
        both(&run)
    );
    nothing_created(&root);
    std::fs::write(root.join("breeze.toml"), config.replace("max_round = 2\n", "")).unwrap();
    let run = run_in(&root, &["run"]);
    assert_eq!(run.status.code(), Some(2), "{}", both(&run));
    assert!(
        stderr(&run).contains("\n  ✗ breeze-e2e-no-such-linter not found on PATH for review.checks: install breeze-e2e-no-such-linter, or change review.checks in breeze.toml\n"),
        "{}",
        both(&run)
    );
    nothing_created(&root);
}

/// `breeze init` in a fresh repository of `files` whose roles are already on the simulator.
fn init_plan(files: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let mut all = files.to_vec();
    all.push(("breeze.toml", SCRIPTED_CONFIG));
    let (temp, root) = repo_with(&all);
    let init = run_in(&root, &["init"]);
    assert_eq!(init.status.code(), Some(0), "{}", both(&init));
    let plan = std::fs::read_to_string(root.join("Plans.md")).unwrap();
    (temp, root, plan)
}

#[test]
fn init_writes_the_project_s_own_paths_and_run_refuses_the_untouched_template() {
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
    let cases: &[Case<'_>] = &[
        (&[("package.json", NPM_PACKAGE)], "lib/first.js", "test/first.test.js"),
        (
            &[
                ("pyproject.toml", "[project]\nname = \"my-tool\"\nversion = \"0.1\"\n"),
                ("src/my_tool/__init__.py", ""),
            ],
            "src/my_tool/first.py",
            "tests/test_first.py",
        ),
        (
            &[("go.mod", "module example.com/x\n\ngo 1.22\n"), ("main.go", "package main\n")],
            "first.go",
            "first_test.go",
        ),
        (
            &[
                ("Cargo.toml", "[package]\nname = \"demo\"\nversion = \"0.1.0\"\n"),
                ("src/main.rs", "fn main() {}\n"),
            ],
            "src/first.rs",
            "tests/first.rs",
        ),
    ];
    for (files, first, test) in cases {
        let (_temp, root, plan) = init_plan(files);
        assert!(plan.contains(&format!("| `{first}` | - | cc:todo |")), "{first}: {plan}");
        assert!(plan.contains(&format!("`{first}`, `{test}` | 1 |")), "{test}: {plan}");
        assert!(!plan.contains("{{"), "{plan}");
        if !first.ends_with(".rs") {
            assert!(!plan.contains(".rs`"), "no Rust paths outside a Rust project: {plan}");
        }

        let analysed = run_in(&root, &["plan"]);
        assert_eq!(analysed.status.code(), Some(0), "{}", both(&analysed));
        assert!(
            stderr(&analysed).starts_with("warning: Plans.md is breeze init's template"),
            "{}",
            both(&analysed)
        );

        let run = run_in(&root, &["run"]);
        assert_eq!(run.status.code(), Some(2), "{}", both(&run));
        assert!(
            stderr(&run).contains("remove line 3 of Plans.md (<!-- breeze:template … -->)"),
            "{}",
            both(&run)
        );
        nothing_created(&root);
    }
}

#[test]
fn init_writes_a_gitignore_only_where_there_is_none() {
    let (_temp, root, _plan) = init_plan(&[("package.json", NPM_PACKAGE)]);
    assert_eq!(std::fs::read_to_string(root.join(".gitignore")).unwrap(), "node_modules/\n");

    let (_temp, root) = repo_with(&[("package.json", NPM_PACKAGE), (".gitignore", "dist/\n")]);
    let init = run_in(&root, &["init"]);
    assert!(
        stdout(&init).contains("suggestion: add node_modules/ to .gitignore (kept as it is)"),
        "{}",
        both(&init)
    );
    assert_eq!(std::fs::read_to_string(root.join(".gitignore")).unwrap(), "dist/\n");
}

#[test]
fn without_a_home_a_run_is_refused_naming_worktree_root_and_runs_once_it_is_set() {
    let plan = crate::support::one_task_plan();
    let (temp, root) = repo_with(&[("breeze.toml", SCRIPTED_CONFIG), ("plan.toml", &plan)]);
    let homeless = |args: &[&str]| {
        breeze().current_dir(&root).args(args).env_remove("HOME").output().expect("breeze runs")
    };
    let refused = homeless(&["run"]);
    assert_eq!(refused.status.code(), Some(2), "{}", both(&refused));
    let err = stderr(&refused);
    assert!(err.contains("neither XDG_DATA_HOME nor HOME is set"), "{err}");
    assert!(err.contains("`[worktree] root`"), "the key is named: {err}");
    nothing_created(&root);

    // Named: the run goes on, its lanes in that folder, outside the checkout.
    let folder = temp.path().join("worktrees");
    let config =
        format!("{SCRIPTED_CONFIG}\n[worktree]\nroot = {:?}\n", folder.display().to_string());
    crate::support::write(&root, "breeze.toml", &config);
    git(&root, &["commit", "-qam", "a worktree folder"]);
    let ran = homeless(&["run"]);
    assert_eq!(ran.status.code(), Some(0), "{}", both(&ran));
    let lanes = crate::support::worktree_folder(&root);
    assert_eq!(lanes.parent(), Some(std::fs::canonicalize(&folder).unwrap().as_path()));
    assert!(lanes.join("lane-1").is_dir(), "the lane is kept there");
}
