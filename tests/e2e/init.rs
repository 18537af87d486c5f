//! `breeze init` on real project layouts: the breeze.toml it writes names the project's
//! test command in `land.verify` and `[review] checks` and loads as breeze loads it; the
//! role definition copies land where breeze reads them and are used; nothing existing is
//! overwritten (but what `--force` replaces).

use std::path::Path;

use breeze_engine::Config;
use breeze_engine::roles::definition;
use breeze_protocol::Role;

use crate::support::{both, git, repo_with, run_in, stdout, toml_task};

const ROLES: [Role; 4] = [Role::Worker, Role::Reviewer, Role::Advisor, Role::Scaffolder];

/// `breeze init` in a fresh repository holding `files`; its stdout and the config it wrote.
fn init_with(files: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf, String, Config) {
    let (temp, root) = repo_with(files);
    let output = run_in(&root, &["init"]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let config = Config::load(&root).unwrap_or_else(|err| {
        panic!("{err}\n{}", std::fs::read_to_string(root.join("breeze.toml")).unwrap())
    });
    (temp, root, stdout(&output), config)
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| (*word).to_string()).collect()
}

fn read(root: &Path, name: &str) -> String {
    std::fs::read_to_string(root.join(name)).unwrap_or_else(|err| panic!("{name}: {err}"))
}

#[test]
fn a_cargo_project_gets_cargo_test_with_comments_the_plan_and_the_definitions() {
    let (_temp, root, out, config) =
        init_with(&[("Cargo.toml", "[package]\nname = \"demo\"\nversion = \"0.1.0\"\n")]);
    assert_eq!(config.verify, strings(&["cargo", "test", "--no-fail-fast"]));
    assert_eq!(config.review_checks, [strings(&["cargo", "test", "--no-fail-fast"])]);
    assert!(config.worktree_setup.is_empty());
    let text = read(&root, "breeze.toml");
    assert!(text.contains("verify = [\"cargo\", \"test\", \"--no-fail-fast\"]\n"), "{text}");
    assert!(text.contains("checks = [[\"cargo\", \"test\", \"--no-fail-fast\"]]\n"), "{text}");
    assert!(
        text.contains("#   Rust (cargo): Cargo.toml → cargo test --no-fail-fast\n"),
        "why it was chosen: {text}"
    );
    // The ecosystem's caches are enabled: confined setup, checks and verify download there.
    assert!(text.contains("\nwritable = [\"~/.cargo/registry\", \"~/.cargo/git\"]"), "{text}");
    assert_eq!(config.sandbox_writable, strings(&["~/.cargo/registry", "~/.cargo/git"]));
    assert!(text.contains("docs/BACKENDS.md"), "{text}");

    assert!(
        out.contains(
            "detected Rust (cargo): Cargo.toml → test command `cargo test --no-fail-fast`"
        ),
        "{out}"
    );
    assert!(out.contains("wrote breeze.toml\nwrote Plans.md\n"), "{out}");
    assert!(
        read(&root, "Plans.md").contains("| Task | Content | DoD | Writes | Depends | Status |")
    );
    for role in ROLES {
        let path = definition::override_path(&root, role);
        let name = path.strip_prefix(&root).unwrap().display().to_string();
        assert!(out.contains(&format!("wrote {name}\n")), "{out}");
        // breeze reads the copy, and it says what the built-in one says.
        let loaded = definition::load(&root, role).unwrap();
        assert_eq!(loaded.source, path.display().to_string());
        assert_eq!(loaded.body, definition::builtin(role).body);
        assert_eq!(loaded.tools, definition::builtin(role).tools);
    }
    // Only the files named: nothing else in the checkout, breeze's folders excluded.
    assert_eq!(
        git(&root, &["status", "--porcelain", "--untracked-files=all"]),
        "?? .claude/agents/breeze-advisor.md\n?? .claude/agents/breeze-reviewer.md\n?? .claude/agents/breeze-scaffolder.md\n?? .claude/agents/breeze-worker.md\n?? .gitignore\n?? Plans.md\n?? breeze.toml\n"
    );
    // What cargo writes in every lane is ignored; the plan speaks Rust.
    assert_eq!(read(&root, ".gitignore"), "target/\n");
    assert!(read(&root, "Plans.md").contains("`src/first.rs`, `tests/first.rs`"));
}

#[test]
fn a_cargo_workspace_tests_the_workspace() {
    let (_temp, _root, _out, config) =
        init_with(&[("Cargo.toml", "[workspace]\nmembers = [\"crates/a\"]\n")]);
    assert_eq!(config.verify, strings(&["cargo", "test", "--workspace", "--no-fail-fast"]));
    assert_eq!(
        config.review_checks,
        [strings(&["cargo", "test", "--workspace", "--no-fail-fast"])]
    );
}

#[test]
fn a_pnpm_project_installs_in_each_worktree_and_tests_with_pnpm() {
    let (_temp, _root, out, config) = init_with(&[
        ("package.json", r#"{"name":"web","scripts":{"test":"vitest run"}}"#),
        ("pnpm-lock.yaml", "lockfileVersion: '9.0'\n"),
    ]);
    assert_eq!(config.review_checks, [strings(&["pnpm", "test"])]);
    assert_eq!(config.worktree_setup, strings(&["pnpm", "install", "--frozen-lockfile"]));
    // The integration checkout gets no setup: verify installs first.
    assert_eq!(
        config.verify,
        strings(&["sh", "-c", "pnpm install --frozen-lockfile && pnpm test"])
    );
    assert!(out.contains("detected Node (pnpm): package.json and pnpm-lock.yaml"), "{out}");
    assert_eq!(config.sandbox_writable, strings(&["~/.local/share/pnpm", "~/.cache/pnpm"]));
}

#[test]
fn a_go_project_runs_go_test() {
    let (_temp, _root, _out, config) =
        init_with(&[("go.mod", "module example.com/x\n\ngo 1.22\n")]);
    assert_eq!(config.verify, strings(&["go", "test", "./..."]));
    assert_eq!(config.review_checks, [strings(&["go", "test", "./..."])]);
}

#[test]
fn a_uv_project_runs_pytest_through_uv() {
    let (_temp, _root, out, config) = init_with(&[
        ("pyproject.toml", "[project]\nname = \"x\"\nversion = \"0.1\"\n"),
        ("uv.lock", "version = 1\n"),
    ]);
    assert_eq!(config.verify, strings(&["uv", "run", "pytest"]));
    assert_eq!(config.review_checks, [strings(&["uv", "run", "pytest"])]);
    assert!(out.contains("detected Python (uv): uv.lock"), "{out}");
}

#[test]
fn a_makefile_test_target_wins_and_the_language_is_mentioned() {
    let makefile = ".PHONY: test\nbuild:\n\tgo build ./...\n\ntest: build\n\tgo test -race ./...\n";
    let (_temp, root, out, config) =
        init_with(&[("Makefile", makefile), ("go.mod", "module example.com/x\n")]);
    assert_eq!(config.verify, strings(&["make", "test"]));
    assert_eq!(config.review_checks, [strings(&["make", "test"])]);
    assert!(out.contains("detected Make: Makefile with a `test` target"), "{out}");
    assert!(out.contains("also found Go: go.mod → `go test ./...` (not used)"), "{out}");
    let text = read(&root, "breeze.toml");
    assert!(text.contains("# verify = [\"go\", \"test\", \"./...\"]"), "the other, ready: {text}");
}

#[test]
fn nothing_detected_leaves_verify_empty_with_a_hint() {
    let (_temp, root, out, config) = init_with(&[("README.md", "hello\n")]);
    assert!(config.verify.is_empty() && config.review_checks.is_empty());
    let text = read(&root, "breeze.toml");
    assert!(text.contains("verify = []"), "{text}");
    assert!(text.contains("e.g. [\"make\", \"test\"]"), "{text}");
    assert!(text.contains("`breeze init` found no project file it knows"), "{text}");
    assert!(out.contains("no test command found"), "{out}");
}

#[test]
fn existing_files_are_kept_byte_for_byte_and_force_replaces_only_config_and_plan() {
    let config = "# mine\n[run]\nmax_workers = 1\n";
    let plans = "# my plan\n";
    let worker = "---\nname: my-worker\n---\nMine.\n";
    let (_temp, root) = repo_with(&[
        ("Cargo.toml", "[package]\nname = \"x\"\n"),
        ("breeze.toml", config),
        ("Plans.md", plans),
        (".claude/agents/breeze-worker.md", worker),
    ]);
    let output = run_in(&root, &["init"]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let out = stdout(&output);
    assert!(out.contains("kept existing breeze.toml (--force replaces it)"), "{out}");
    assert!(out.contains("kept existing Plans.md (--force replaces it)"), "{out}");
    assert!(out.contains("kept existing .claude/agents/breeze-worker.md\n"), "{out}");
    assert!(out.contains("wrote .claude/agents/breeze-reviewer.md"), "{out}");
    assert_eq!(read(&root, "breeze.toml"), config);
    assert_eq!(read(&root, "Plans.md"), plans);
    assert_eq!(read(&root, ".claude/agents/breeze-worker.md"), worker);
    assert_eq!(git(&root, &["status", "--porcelain", "--", "breeze.toml", "Plans.md"]), "");

    // A second init writes nothing.
    let reviewer = read(&root, ".claude/agents/breeze-reviewer.md");
    let again = run_in(&root, &["init"]);
    assert_eq!(again.status.code(), Some(0), "{}", both(&again));
    assert!(!stdout(&again).contains("wrote "), "{}", stdout(&again));
    assert_eq!(read(&root, ".claude/agents/breeze-reviewer.md"), reviewer);

    // --force replaces breeze.toml and Plans.md, never a role definition.
    let forced = run_in(&root, &["init", "--force"]);
    assert_eq!(forced.status.code(), Some(0), "{}", both(&forced));
    let out = stdout(&forced);
    assert!(out.contains("wrote breeze.toml (replaced the existing one: --force)"), "{out}");
    assert_eq!(Config::load(&root).unwrap().verify, strings(&["cargo", "test", "--no-fail-fast"]));
    assert!(read(&root, "Plans.md").contains("| Task |"));
    assert_eq!(read(&root, ".claude/agents/breeze-worker.md"), worker);
    assert!(out.contains("kept existing .claude/agents/breeze-worker.md\n"), "{out}");
}

#[test]
fn the_written_files_work_with_doctor_plan_and_a_run_that_reads_the_copied_definition() {
    let (temp, root, _out, _config) = init_with(&[("README.md", "r\n")]);

    // What init wrote is what `breeze doctor` and `breeze plan` read: the configuration is
    // valid; the plan is still the template (and claude is not on this machine's PATH), so
    // doctor says a run would not start.
    let doctor = run_in(&root, &["doctor", "--no-setup"]);
    assert_eq!(doctor.status.code(), Some(2), "{}", both(&doctor));
    assert!(!stdout(&doctor).contains("breeze.toml:"), "config error: {}", stdout(&doctor));
    assert!(stdout(&doctor).contains("\n  ✓ breeze.toml is valid\n"), "{}", stdout(&doctor));
    assert!(
        stdout(&doctor).contains("\n  ✗ Plans.md is breeze init's template"),
        "{}",
        stdout(&doctor)
    );
    let plan = run_in(&root, &["plan"]);
    assert_eq!(plan.status.code(), Some(0), "{}", both(&plan));

    // The worker's definition, edited, reaches the worker's prompt; the reviewer's copy
    // is read too (an unreadable one would stop the run).
    let worker = root.join(".claude/agents/breeze-worker.md");
    let edited = read(&root, ".claude/agents/breeze-worker.md") + "\nSay INIT-COPY-7F3A.\n";
    std::fs::write(&worker, edited).unwrap();
    let script = temp.path().join("worker.sh");
    std::fs::write(
        &script,
        "cat > a.txt\nprintf '{\"schema_version\":\"worker-report.v1\",\"status\":\"completed\",\"summary\":\"ok\"}' > \"$BREEZE_OUTPUT\"\n",
    )
    .unwrap();
    std::fs::write(root.join("breeze.toml"), crate::support::shell_worker_config(&script, ""))
        .unwrap();
    std::fs::write(root.join("plan.toml"), toml_task("1", "Prompt", &["a.txt"], "")).unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "breeze init"]);
    let run = run_in(&root, &["run"]);
    assert_eq!(run.status.code(), Some(0), "{}", both(&run));
    let prompt = git(&root, &["show", "main:a.txt"]);
    assert!(prompt.contains("Say INIT-COPY-7F3A."), "{prompt}");
    assert!(prompt.contains("You are a **Worker** on a breeze team"), "{prompt}");
}

#[test]
fn a_node_project_without_a_test_script_says_so() {
    let (_temp, root, out, config) = init_with(&[
        ("package.json", r#"{"name":"web","scripts":{"build":"tsc"}}"#),
        ("yarn.lock", "# yarn lockfile v1\n"),
    ]);
    assert!(config.verify.is_empty() && config.review_checks.is_empty());
    assert!(
        out.contains("found Node (yarn): package.json and yarn.lock, no `test` script"),
        "{out}"
    );
    assert!(out.contains("no test command found"), "{out}");
    let text = read(&root, "breeze.toml");
    assert!(text.contains("None of it names a test command"), "{text}");
}

#[test]
fn npm_yarn_poetry_and_pip_projects_get_their_test_commands() {
    type Files<'a> = &'a [(&'a str, &'a str)];
    let cases: &[(Files<'_>, &[&str])] = &[
        (
            &[("package.json", r#"{"scripts":{"test":"jest"}}"#), ("package-lock.json", "{}")],
            &["sh", "-c", "npm ci && npm test"],
        ),
        (
            &[("package.json", r#"{"scripts":{"test":"jest"}}"#), ("yarn.lock", "")],
            &["sh", "-c", "yarn install && yarn test"],
        ),
        (
            &[("pyproject.toml", "[tool.poetry]\nname = \"x\"\n"), ("poetry.lock", "")],
            &["sh", "-c", "poetry install && poetry run pytest"],
        ),
        (&[("requirements.txt", "pytest\n")], &["python", "-m", "pytest"]),
    ];
    for (files, verify) in cases {
        let (_temp, _root, out, config) = init_with(files);
        assert_eq!(config.verify, strings(verify), "{files:?}\n{out}");
        assert_eq!(config.review_checks.len(), 1, "{files:?}");
    }
}

#[test]
fn the_detected_cargo_command_runs_in_the_fixture() {
    let (temp, root, _out, config) = init_with(&[
        ("Cargo.toml", "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
        ("src/lib.rs", "#[test]\nfn adds() {\n    assert_eq!(1 + 1, 2);\n}\n"),
    ]);
    let (program, args) = config.verify.split_first().unwrap();
    let output = std::process::Command::new(program)
        .args(args)
        .current_dir(&root)
        .env("CARGO_TARGET_DIR", temp.path().join("target"))
        .arg("--offline")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", both(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("test adds ... ok"),
        "{}",
        both(&output)
    );
}

#[test]
fn a_config_error_points_at_the_defaults_the_binary_prints() {
    let (_temp, root) = repo_with(&[
        ("breeze.toml", "[run]\nmax_worker = 2\n"),
        ("plan.toml", &toml_task("1", "A", &["a.txt"], "")),
    ]);
    let refused = run_in(&root, &["run"]);
    assert_eq!(refused.status.code(), Some(2), "{}", both(&refused));
    let said = crate::support::stderr(&refused);
    // The preflight names the key, its line and the likely intended one, and where every
    // key is described.
    assert!(said.contains("unknown key run.max_worker at line 2"), "{said}");
    assert!(said.contains("did you mean max_workers?"), "{said}");
    assert!(
        said.contains("every key with its default and what it does: `breeze init --print-config`"),
        "{said}"
    );
    assert!(!said.contains("breeze sources"), "users have the binary, not the sources: {said}");

    let printed = run_in(&root, &["init", "--print-config"]);
    assert_eq!(printed.status.code(), Some(0), "{}", both(&printed));
    let defaults = stdout(&printed);
    assert!(defaults.contains("max_workers = 3") && defaults.contains("[sandbox]"), "{defaults}");
    // What it prints is a breeze.toml breeze reads: every key at its default.
    assert_eq!(Config::parse(&defaults, "printed").unwrap(), Config::defaults());
    assert!(!root.join("Plans.md").exists(), "--print-config writes nothing");
    assert_eq!(read(&root, "breeze.toml"), "[run]\nmax_worker = 2\n");
}

#[test]
fn init_says_how_to_drive_breeze_from_claude_code_and_from_codex() {
    let (_temp, _root, out, _config) = init_with(&[]);
    assert!(out.contains("`claude plugin install breeze@breeze`"), "{out}");
    assert!(out.contains("`codex mcp add breeze -- breeze mcp`"), "{out}");
}
