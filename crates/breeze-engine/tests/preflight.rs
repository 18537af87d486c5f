//! The preflight on real repositories: each problem stops `breeze_engine::run` (and
//! `resume`) with one line saying what to do, before anything exists — no run folder, no
//! lane worktree, no task branch, no lock — checked on disk and with the `git` CLI. The
//! setup trial runs the real `worktree.setup` in a throwaway checkout and reports what it
//! creates.

use std::path::{Path, PathBuf};

use breeze_engine::preflight::{self, PreflightOptions, Stage};
use breeze_engine::{BackendKind, Config, EngineError, RunOptions};
use breeze_protocol::{CheckOutcome, RunState};
use breeze_test_support::plan::toml_task;
use breeze_test_support::{TestRepo, git};
use tokio_util::sync::CancellationToken;

fn repo(files: &[(&str, &str)]) -> TestRepo {
    let mut all = files.to_vec();
    let plan = toml_task("1", "Add a", &["a.txt"], "");
    all.push(("plan.toml", &plan));
    all.push(("README.md", "readme\n"));
    TestRepo::with_files(&all)
}

/// `breeze.toml` lines running every role on the simulator.
const SCRIPTED_ROLES: &str = "[roles.worker]\nbackend = \"scripted\"\n[roles.reviewer]\nbackend = \"scripted\"\n[roles.advisor]\nbackend = \"scripted\"\n[roles.scaffolder]\nbackend = \"scripted\"\n";

fn scripted() -> Config {
    let mut config = Config::defaults();
    config.set_all_backends(BackendKind::Scripted);
    config
}

fn options(root: &Path, mut config: Config) -> RunOptions {
    let mut options = RunOptions::new(root);
    options.plan = Some(root.join("plan.toml"));
    config.worktree_root.get_or_insert_with(|| worktrees_beside(root));
    options.config = Some(config);
    options
}

/// How many folders `dir` holds (none when it is missing).
fn folders_in(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().filter(|entry| entry.path().is_dir()).count())
        .unwrap_or(0)
}

/// The folder beside the test's repository its runs' worktrees go in (removed with it).
fn worktrees_beside(root: &Path) -> PathBuf {
    root.parent().unwrap().join("worktrees")
}

/// The problem lines `run` stopped with.
async fn refused(options: RunOptions) -> Vec<String> {
    match breeze_engine::run(options, CancellationToken::new()).await {
        Err(EngineError::Preflight(lines)) => lines,
        Err(other) => panic!("stopped, but not by the preflight: {other}"),
        Ok(outcome) => panic!("the run started: {outcome:?}"),
    }
}

/// Nothing of a run exists: no run folder, lane, task branch, worktree or lock.
fn nothing_created(root: &Path) {
    let runs = root.join(".breeze/runs");
    assert!(
        !runs.exists() || std::fs::read_dir(&runs).unwrap().next().is_none(),
        "a run folder was created"
    );
    assert_eq!(folders_in(&root.join(".harness-worktrees")), 0, "a lane was made in the checkout");
    let made: usize = std::fs::read_dir(worktrees_beside(root))
        .map(|folders| folders.flatten().map(|folder| folders_in(&folder.path())).sum())
        .unwrap_or(0);
    assert_eq!(made, 0, "a worktree is left in the worktree folder");
    assert!(!root.join(".breeze/run.lock").exists(), "the lock file was created");
    assert_eq!(
        git(root, &["branch", "--format=%(refname:short)"]),
        "main\n",
        "a branch was created"
    );
    assert_eq!(git(root, &["worktree", "list"]).lines().count(), 1, "a worktree is left");
}

fn check_options(root: &Path, config: Option<Config>, path: &str) -> PreflightOptions {
    let mut options = PreflightOptions::new(root, Stage::NewRun);
    options.plan = Some(root.join("plan.toml"));
    options.config = config;
    options.env = vec![
        ("PATH".into(), path.into()),
        ("HOME".into(), root.join("home").display().to_string()),
    ];
    options
}

fn problem_lines(found: &preflight::Preflight) -> Vec<String> {
    found.problems().map(preflight::line).collect()
}

#[tokio::test]
async fn claude_missing_from_path_is_one_line_naming_the_roles_and_the_install() {
    let repo = repo(&[]);
    // The defaults: every role on claude; a PATH without it.
    let empty_bin = repo.root.join("bin");
    std::fs::create_dir(&empty_bin).unwrap();
    let found = preflight::check(
        &check_options(&repo.root, Some(Config::defaults()), &empty_bin.display().to_string()),
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(
        problem_lines(&found),
        [
            "claude not found on PATH (the backend of roles.worker, roles.reviewer and roles.advisor): install claude: npm i -g @anthropic-ai/claude-code, or set another backend in [roles.worker], [roles.reviewer], [roles.advisor] of breeze.toml"
        ]
    );
    let problem = found.problems().next().unwrap();
    assert_eq!(problem.searched, [empty_bin.display().to_string()], "doctor names the folders");
    nothing_created(&repo.root);
    assert!(!repo.root.join(".breeze").exists());
}

#[tokio::test]
async fn an_installed_claude_without_a_login_is_a_problem_and_a_key_passed_is_one() {
    use std::os::unix::fs::PermissionsExt;
    let repo = repo(&[]);
    let bin = repo.root.join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::fs::write(bin.join("claude"), "#!/bin/sh\necho 2.0\n").unwrap();
    std::fs::set_permissions(bin.join("claude"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut config = Config::defaults();
    config.advisor_enabled = false;
    let options = check_options(&repo.root, Some(config.clone()), &bin.display().to_string());
    let found = preflight::check(&options, &CancellationToken::new()).await;
    let lines = problem_lines(&found);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("claude is not logged in for roles.worker and roles.reviewer ("),
        "{lines:?}"
    );
    assert!(lines[0].contains("run `claude` once and log in"), "{lines:?}");

    // The worker gets ANTHROPIC_API_KEY passed through; the reviewer still has no login.
    config.worker.pass_credentials = true;
    let mut options = check_options(&repo.root, Some(config), &bin.display().to_string());
    options.env.push(("ANTHROPIC_API_KEY".into(), "sk-test".into()));
    let found = preflight::check(&options, &CancellationToken::new()).await;
    let lines = problem_lines(&found);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("claude is not logged in for roles.reviewer ("), "{lines:?}");
    let worker_login =
        found.checks.iter().find(|c| c.check == "login" && c.subject == "roles.worker");
    assert_eq!(worker_login.unwrap().outcome, CheckOutcome::Ok);
}

#[tokio::test]
async fn missing_setup_check_and_verify_programs_stop_the_run_before_anything_exists() {
    let repo = repo(&[]);
    let mut config = scripted();
    config.worktree_setup = vec!["breeze-test-no-such-setup".into(), "install".into()];
    config.review_checks = vec![vec![
        "sh".into(),
        "-c".into(),
        "breeze-test-no-such-linter . && breeze-test-no-such-verify".into(),
    ]];
    config.verify = vec!["breeze-test-no-such-verify".into()];
    let lines = refused(options(&repo.root, config)).await;
    assert_eq!(
        lines,
        [
            "breeze-test-no-such-setup not found on PATH for worktree.setup: install breeze-test-no-such-setup, or change worktree.setup in breeze.toml",
            "breeze-test-no-such-linter not found on PATH for review.checks: install breeze-test-no-such-linter, or change review.checks in breeze.toml",
            "breeze-test-no-such-verify not found on PATH for review.checks and land.verify: install breeze-test-no-such-verify, or change review.checks and land.verify in breeze.toml",
        ]
    );
    for line in &lines {
        assert!(!line.contains("PATH="), "the PATH is never printed: {line}");
    }
    nothing_created(&repo.root);
}

#[tokio::test]
async fn python_dash_m_of_a_module_python_lacks_stops_the_run_before_anything_exists() {
    // `python -m pytest` where pytest is not installed fails every check on main as in any
    // lane: a fresh Python project's first run escalated every task for it.
    let path = [("PATH".to_string(), std::env::var("PATH").unwrap_or_default())];
    if breeze_supervise::resolve_program("python3", Path::new("/"), &path).is_err() {
        eprintln!("no python3 here: skipped");
        return;
    }
    let repo = repo(&[]);
    let mut config = scripted();
    config.review_checks =
        vec![vec!["python3".into(), "-m".into(), "breeze_no_such_module".into()]];
    let lines = refused(options(&repo.root, config)).await;
    assert_eq!(
        lines,
        [
            "`python3 -m breeze_no_such_module` for review.checks: python3 has no module breeze_no_such_module: install it (`python3 -m pip install breeze_no_such_module`, or in the project's virtual environment and name that python), or change review.checks in breeze.toml"
        ]
    );
    nothing_created(&repo.root);
    // Run by checks and verify alike: asked of python once, said once.
    let mut config = scripted();
    let argv: Vec<String> = ["python3", "-m", "breeze_no_such_module"].map(String::from).to_vec();
    config.review_checks = vec![argv.clone()];
    config.verify = argv;
    let lines = refused(options(&repo.root, config)).await;
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("for review.checks and land.verify:"), "{lines:?}");
}

#[tokio::test]
async fn a_command_role_whose_program_is_missing_stops_the_run() {
    let repo = repo(&[]);
    let mut config = scripted();
    config.worker.backend = BackendKind::Command;
    config.worker.command = vec!["./scripts/worker.sh".into()];
    let lines = refused(options(&repo.root, config)).await;
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("./scripts/worker.sh not found at ")
            && lines[0].ends_with("for roles.worker.command: install ./scripts/worker.sh, or change roles.worker.command in breeze.toml"),
        "{lines:?}"
    );
    nothing_created(&repo.root);
}

#[tokio::test]
async fn an_unknown_key_in_breeze_toml_is_named_with_the_key_meant() {
    let toml = format!("[run]\nmax_worker = 2\n{SCRIPTED_ROLES}");
    let repo = repo(&[("breeze.toml", &toml)]);
    let mut run = options(&repo.root, scripted());
    run.config = None;
    let lines = refused(run).await;
    assert_eq!(
        lines,
        [
            "breeze.toml: unknown key run.max_worker at line 2 (did you mean max_workers?): fix its name (every key with its default and what it does: `breeze init --print-config`)"
        ]
    );
    nothing_created(&repo.root);
}

#[tokio::test]
async fn init_s_untouched_template_is_refused_naming_the_line_to_remove() {
    let template = "# Plans\n\n<!-- breeze:template — remove this line -->\n\n| Task | Content | DoD | Writes | Depends | Status |\n|------|---------|-----|--------|---------|--------|\n| 1 | Describe the first task | x | `lib/first.js` | - | cc:todo |\n";
    let repo = repo(&[("Plans.md", template)]);
    let mut run = options(&repo.root, scripted());
    run.plan = Some(repo.root.join("Plans.md"));
    let lines = refused(run).await;
    assert_eq!(
        lines,
        [
            "Plans.md is breeze init's template (its placeholder tasks would be run): describe your tasks (or run `breeze draft \"GOAL\"`), then remove line 3 of Plans.md (<!-- breeze:template … -->)"
        ]
    );
    nothing_created(&repo.root);
}

#[tokio::test]
async fn a_failing_setup_is_a_problem_with_its_last_lines_and_leaves_nothing() {
    let repo = repo(&[]);
    let mut config = scripted();
    config.worktree_setup = vec![
        "sh".into(),
        "-c".into(),
        "echo resolving >&2; echo 'npm ERR! 404 no-such-package' >&2; exit 3".into(),
    ];
    let lines = refused(options(&repo.root, config)).await;
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("worktree.setup (`sh -c echo resolving >&2; echo 'npm ERR! 404 no-such-package' >&2; exit 3`) exited with code 3 in a fresh checkout of main: npm ERR! 404 no-such-package: fix it so it works in a fresh checkout (its output: "),
        "{lines:?}"
    );
    nothing_created(&repo.root);
    // The throwaway checkout is gone; a failure is not cached.
    let left: Vec<_> = std::fs::read_dir(repo.root.join(".breeze/preflight"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(left.iter().all(|name| name.starts_with("setup.std")), "{left:?}");
}

#[tokio::test]
async fn the_setup_trial_reports_what_setup_creates_and_is_cached_by_its_inputs() {
    let repo = repo(&[(".gitignore", "deps/\n"), ("package.json", "{}\n")]);
    let mut config = scripted();
    config.worktree_setup = vec![
        "sh".into(),
        "-c".into(),
        "mkdir -p deps/a deps/b && touch deps/a/1 deps/b/2 gen.lock && echo more >> README.md"
            .into(),
    ];
    config.worktree_root = Some(worktrees_beside(&repo.root));
    let mut options = PreflightOptions::new(&repo.root, Stage::NewRun);
    options.plan = Some(repo.root.join("plan.toml"));
    options.config = Some(config.clone());
    let found = preflight::check(&options, &CancellationToken::new()).await;
    assert!(found.is_ok(), "{:?}", problem_lines(&found));
    let trial = found.setup.clone().expect("the setup was tried");
    assert!(trial.succeeded && !trial.cached, "{trial:?}");
    let created: Vec<(&str, u64, bool)> =
        trial.created.iter().map(|p| (p.path.as_str(), p.files, p.ignored)).collect();
    assert_eq!(created, [("deps/", 2, true), ("gen.lock", 1, false)]);
    assert_eq!(trial.changed, ["README.md"]);
    assert!(
        trial.summary.starts_with(
            "`sh -c mkdir -p deps/a deps/b && touch deps/a/1 deps/b/2 gen.lock && echo more >> README.md` creates deps/ (2 files) and gen.lock; changes README.md in "
        ) && trial.summary.contains(" (not ignored by git: gen.lock;"),
        "{}",
        trial.summary
    );
    let inputs: Vec<&str> = trial.inputs.iter().map(|input| input.path.as_str()).collect();
    assert_eq!(inputs, ["package.json"]);
    nothing_created(&repo.root);
    // Main's checkout is untouched: the setup ran elsewhere.
    assert!(!repo.root.join("gen.lock").exists() && !repo.root.join("deps").exists());

    // Again: cached, not run.
    let again = preflight::check(&options, &CancellationToken::new()).await;
    let cached = again.setup.expect("cached");
    assert!(cached.cached && cached.ran_at == trial.ran_at, "{cached:?}");
    // A changed input runs it again.
    std::fs::write(repo.root.join("package.json"), "{\"name\":\"x\"}\n").unwrap();
    git(&repo.root, &["commit", "-qam", "manifest"]);
    let third = preflight::check(&options, &CancellationToken::new()).await;
    assert!(!third.setup.expect("tried").cached);
}

#[tokio::test]
async fn resume_preflights_too_and_starts_no_role() {
    let plan = toml_task("1", "Change shared", &["shared.txt"], "");
    let repo = TestRepo::with_files(&[("plan.toml", &plan), ("shared.txt", "base\n")]);
    // The user edits the file the task touches: the landing waits, the run stops waiting.
    std::fs::write(repo.root.join("shared.txt"), "my edit\n").unwrap();
    let first = breeze_engine::run(options(&repo.root, scripted()), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(first.state, RunState::Waiting, "{first:?}");
    let events = std::fs::read_to_string(first.run_dir.join("events.jsonl")).unwrap();
    let logs = std::fs::read_dir(first.run_dir.join("logs")).unwrap().count();

    let mut config = scripted();
    config.verify = vec!["breeze-test-no-such-verify".into()];
    let err = breeze_engine::resume(options(&repo.root, config), CancellationToken::new())
        .await
        .unwrap_err();
    let EngineError::Preflight(lines) = &err else { panic!("{err}") };
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("breeze-test-no-such-verify not found on PATH for land.verify"));
    assert_eq!(err.exit_code(), breeze_protocol::ExitCode::Usage);
    // Nothing happened: not one event, not one role process.
    assert_eq!(std::fs::read_to_string(first.run_dir.join("events.jsonl")).unwrap(), events);
    assert_eq!(std::fs::read_dir(first.run_dir.join("logs")).unwrap().count(), logs);
    assert!(!breeze_engine::run::engine_alive(&repo.root));
    let _: PathBuf = first.run_dir;
}

#[tokio::test]
async fn a_model_of_the_users_own_in_budget_prices_is_no_unknown_key() {
    let text = "[roles.worker]\nbackend = \"scripted\"\n[roles.reviewer]\nbackend = \"scripted\"\n[roles.advisor]\nbackend = \"scripted\"\n[budget.prices.\"my-model\"]\ninput = 1.0\ncached_input = 0.1\noutput = 4.0\n";
    let repo = repo(&[("breeze.toml", text)]);
    let found = preflight::check(
        &check_options(&repo.root, None, "/usr/bin:/bin"),
        &CancellationToken::new(),
    )
    .await;
    assert!(found.is_ok(), "{:?}", problem_lines(&found));
    let config: Vec<&str> = found
        .checks
        .iter()
        .filter(|check| check.check == "config")
        .map(|check| check.message.as_str())
        .collect();
    assert_eq!(config, ["breeze.toml is valid"]);
    let parsed = Config::parse(text, "breeze.toml").unwrap();
    assert_eq!(parsed.budget.prices["my-model"].output, 4.0);
    // A key of the table around it is still checked.
    std::fs::write(repo.root.join("breeze.toml"), format!("{text}[budget]\nrun_usdd = 2\n"))
        .unwrap();
    let found = preflight::check(
        &check_options(&repo.root, None, "/usr/bin:/bin"),
        &CancellationToken::new(),
    )
    .await;
    let lines = problem_lines(&found);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with(
            "breeze.toml: unknown key budget.run_usdd at line 12 (did you mean run_usd?)"
        ),
        "{lines:?}"
    );
}

#[tokio::test]
async fn require_stops_a_resume_too_and_a_raised_cap_is_preflighted_with_the_run_s_plan() {
    let repo = repo(&[]);
    // Interrupted at once: a resumable run with one task to do.
    let cancel = CancellationToken::new();
    cancel.cancel();
    let first = breeze_engine::run(options(&repo.root, scripted()), cancel).await.unwrap();
    assert_eq!(first.state, RunState::Interrupted, "{first:?}");
    let events = std::fs::read_to_string(first.run_dir.join("events.jsonl")).unwrap();

    // The simulator reports no cost for task 1 (its [task.sim] sets none): said only once a
    // USD cap holds the run — here the one `breeze resume --budget-usd` would set.
    let mut check = check_options(&repo.root, Some(scripted()), "/usr/bin:/bin");
    check.stage = Stage::Resume;
    let budget_warnings = |found: &preflight::Preflight| -> Vec<String> {
        found.checks.iter().filter(|c| c.check == "budget").map(preflight::line).collect()
    };
    let found = preflight::check(&check, &CancellationToken::new()).await;
    assert!(found.is_ok() && budget_warnings(&found).is_empty(), "{:?}", found.checks);
    check.budget_raise = breeze_engine::budget::BudgetRaise { usd: Some(5.0), tokens: None };
    let found = preflight::check(&check, &CancellationToken::new()).await;
    let warnings = budget_warnings(&found);
    assert_eq!(warnings.len(), 3, "worker, reviewer and Advisor: {warnings:?}");
    assert_eq!(
        warnings[0],
        "the worker's backend `scripted` reports no cost or tokens for task(s) 1 (their [task.sim] sets no cost_usd / tokens): run_usd cannot cap it: give those tasks cost_usd and input_tokens / output_tokens in [task.sim]"
    );
    assert!(found.checks.iter().all(|c| c.outcome != CheckOutcome::Problem));

    // A reviewer on the worker's own command, under "require": the resume stops first.
    let mut config = scripted();
    for role in [&mut config.worker, &mut config.reviewer] {
        role.backend = BackendKind::Command;
        role.command = vec!["sh".into(), "agent.sh".into()];
    }
    config.independent = breeze_engine::config::Independence::Require;
    let err = breeze_engine::resume(options(&repo.root, config), CancellationToken::new())
        .await
        .unwrap_err();
    let EngineError::Preflight(lines) = &err else { panic!("{err}") };
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("[review] independent = \"require\", but the reviewer runs on the worker's own backend and model: worker command `sh agent.sh` → reviewer command `sh agent.sh`: NOT independent (the same command)"),
        "{lines:?}"
    );
    assert_eq!(std::fs::read_to_string(first.run_dir.join("events.jsonl")).unwrap(), events);
    let status = breeze_engine::run::load_run(&repo.root, None).unwrap().status();
    assert_eq!(status.state, RunState::Interrupted, "the run waits as it was");
}

#[tokio::test]
async fn a_repository_without_a_commit_is_told_to_commit_first_not_to_change_its_setup() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("plan.toml"), toml_task("1", "Add a", &["a.txt"], "")).unwrap();
    let mut config = scripted();
    config.worktree_setup = vec!["true".into()];
    let lines = refused(options(&root, config)).await;
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("the repository has no commit yet"), "{lines:?}");
    assert!(lines[0].contains("git add -A && git commit"), "{lines:?}");
    assert!(!lines[0].contains("worktree.setup"), "the setup is not what is wrong: {lines:?}");
    assert!(!root.join(".breeze/runs").exists(), "nothing was created");
}

#[tokio::test]
async fn every_bad_value_in_breeze_toml_is_named_and_the_other_checks_go_on() {
    let toml = format!(
        "[run]\nmax_workers = \"three\"\nmax_worker = 2\n[land]\nverify = \"cargo test\"\nremote_timeout = \"soon\"\n{SCRIPTED_ROLES}"
    );
    let repo = repo(&[("breeze.toml", &toml)]);
    let found = preflight::check(
        &check_options(&repo.root, None, "/usr/bin:/bin"),
        &CancellationToken::new(),
    )
    .await;
    let problems = problem_lines(&found);
    assert_eq!(problems.len(), 4, "{problems:#?}");
    for named in [
        "run.max_workers (line 2)",
        "unknown key run.max_worker at line 3",
        "land.verify (line 5)",
        "`land.remote_timeout`: invalid duration \"soon\"",
    ] {
        assert!(problems.iter().any(|line| line.contains(named)), "{named}: {problems:#?}");
    }
    // The checks after the configuration ran with what parsed.
    assert!(
        found
            .checks
            .iter()
            .any(|check| check.outcome == CheckOutcome::Ok && check.message.contains("plan.toml")),
        "{:#?}",
        found.checks
    );
}
