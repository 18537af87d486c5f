//! Snapshot tests of what `breeze` prints for people: status tables, `breeze plan`, the
//! progress lines of a run, errors with their hints, `--help`, `breeze report` and
//! `breeze doctor`.
//!
//! Every input is built here (no clock, no temporary path, no terminal), so a snapshot
//! changes only when the output does. Review changes with `cargo insta review`, or
//! `INSTA_UPDATE=always cargo test -p breeze-cli --test snapshots` and `git diff`.

use std::path::{Path, PathBuf};

use breeze_cli::args::Cli;
use breeze_cli::commands;
use breeze_cli::error::{CliError, render_error};
use breeze_cli::render;
use breeze_engine::snapshot::{ObjectId, RunSnapshot, TaskPhase, TaskRecord};
use breeze_engine::{EngineError, ProgressEvent, RunOutcome};
use breeze_protocol::{
    AttemptOutcome, BreezeStatus, BreezeStatusV1, Cause, CauseKind, ContainmentStatus, Decision,
    ProcessEnding, RunState, TaskState, TaskStatus, Usage, Verdict,
};
use clap::{CommandFactory, Parser};

const RUN_ID: &str = "0197a5c2-7e41-7c3a-9f0e-3b2d5a1c9e77";

/// Text as the terminal gets it from `output::print` (control characters escaped).
fn shown(text: &str) -> String {
    breeze_cli::output::shown(text).into_owned()
}

fn oid(hex: &str) -> ObjectId {
    ObjectId(breeze_git::Oid::from_str(hex).expect("a valid object id"))
}

fn task(id: &str, title: &str, state: TaskState) -> TaskStatus {
    TaskStatus {
        id: id.into(),
        title: title.into(),
        state,
        attempts: 0,
        rounds: 0,
        gate_failures: 0,
        advisor_consults: 0,
        commit: None,
        reason: None,
        cause: None,
        group: Some(1),
        usage: Usage::default(),
        review: None,
        granted_writes: Vec::new(),
        pull_request: None,
        branch: None,
        earlier_branches: Vec::new(),
    }
}

/// The write-set gate refusing a lockfile, as the engine words it.
fn lockfile_gate() -> Cause {
    Cause {
        name: Some("write-set".into()),
        paths: vec!["package-lock.json".into()],
        hint: Some("add it to the task's writes if the task needs it, or revert it".into()),
        ..Cause::new(CauseKind::Gate, "package-lock.json is outside the task's writes")
    }
}

/// `npm test` failing on the merged tree, as the engine words it.
fn failed_verify() -> Cause {
    Cause {
        command: vec!["npm".into(), "test".into()],
        exit_code: Some(1),
        log_tail: Some(
            "> calc@1.0.0 test\n> node --test\n\nnot ok 2 - subtracts\n  error: 'Expected 1 to equal 2'\n"
                .into(),
        ),
        ..Cause::new(CauseKind::Verify, "exited 1")
    }
}

/// A task status carrying `cause` (its reason the cause's line).
fn with_cause(status: TaskStatus, cause: Cause) -> TaskStatus {
    TaskStatus { reason: Some(cause.line()), cause: Some(cause), ..status }
}

fn usage(cost_usd: Option<f64>, input_tokens: u64, output_tokens: u64) -> Usage {
    // A call whose backend reported no cost is one of unknown cost.
    let unpriced_calls = u32::from(cost_usd.is_none());
    Usage { cost_usd, input_tokens, output_tokens, cached_input_tokens: 0, unpriced_calls }
}

fn run_status(state: RunState, workers: u32, tasks: Vec<TaskStatus>) -> BreezeStatus {
    let mut total = Usage::default();
    for task in &tasks {
        total.add(&task.usage);
    }
    BreezeStatus {
        schema_version: BreezeStatusV1,
        run_id: RUN_ID.into(),
        state,
        workers,
        plan: Some("plan.toml".into()),
        lands_on: Some("main".into()),
        started_at: Some("2025-06-01T09:00:00Z".into()),
        updated_at: Some("2025-06-01T09:42:17Z".into()),
        tasks,
        usage: total,
        budget: None,
        containment: None,
        waiting: Vec::new(),
        windows: Vec::new(),
    }
}

/// One task in every state a status table shows, with costs from a backend that reports
/// them and one that does not.
fn interrupted_run() -> BreezeStatus {
    let landed = TaskStatus {
        attempts: 1,
        rounds: 1,
        commit: Some("3f2a9c1e5b7d4f60a8c2e1d9b3a5f7c0e2d4b6a8".into()),
        review: Some("APPROVE (round 1)".into()),
        usage: usage(Some(0.4213), 182_340, 9_115),
        ..task("1", "Add the tokenizer", TaskState::Landed)
    };
    let normalized = TaskStatus {
        attempts: 2,
        rounds: 2,
        advisor_consults: 1,
        commit: Some("9b1c0d2e3f405162738495a6b7c8d9e0f1a2b3c4".into()),
        review: Some(
            "APPROVE (round 2; reviewer said REQUEST_CHANGES, minor gaps only; normalized by breeze)"
                .into(),
        ),
        usage: usage(Some(0.003), 1_200, 300),
        ..task("2", "Add the expression parser", TaskState::Landed)
    };
    let escalated = TaskStatus {
        attempts: 3,
        rounds: 3,
        advisor_consults: 1,
        reason: Some(
            "Advisor: STOP — the API has no \x1b[1muser model\x1b[0m to authenticate against\nthe rest of its answer"
                .into(),
        ),
        usage: usage(None, 40_000, 2_000),
        group: Some(2),
        ..task("3", "Add authentication for the HTTP API", TaskState::Escalated)
    };
    let deferred = TaskStatus {
        attempts: 1,
        rounds: 1,
        reason: Some("landing touches `src/config.rs` with uncommitted changes in your checkout; commit or stash them, then run `breeze resume`".into()),
        usage: usage(Some(0.12), 20_000, 1_000),
        group: Some(3),
        ..task("4", "Load settings from calc.toml", TaskState::Deferred)
    };
    let running = with_cause(
        TaskStatus {
            attempts: 2,
            rounds: 1,
            usage: usage(Some(0.05), 8_000, 500),
            ..task("5", "Pretty-print errors", TaskState::Running)
        },
        failed_verify(),
    );
    let lockfile = with_cause(
        TaskStatus {
            attempts: 3,
            gate_failures: 3,
            usage: usage(Some(0.09), 9_000, 700),
            group: Some(4),
            ..task("8", "Add the subtraction helper", TaskState::Escalated)
        },
        lockfile_gate().times(3),
    );
    let pending = task("6", "Add a REPL", TaskState::Pending);
    let blocked = TaskStatus {
        reason: Some("dependency 3 did not land".into()),
        group: Some(2),
        ..task("7", "Rate-limit the HTTP API", TaskState::Blocked)
    };
    let failed = TaskStatus {
        attempts: 1,
        reason: Some("cannot create the worktree /home/me/.local/share/breeze/worktrees/app-3f2a9c41d0/lane-2: disk full".into()),
        group: Some(3),
        ..task("10", "Write the changelog", TaskState::Failed)
    };
    let mut status = run_status(
        RunState::Interrupted,
        3,
        vec![landed, normalized, escalated, deferred, running, pending, blocked, lockfile, failed],
    );
    status.containment = Some(ContainmentStatus {
        kernel: true,
        summary: "roles confined by the kernel (Landlock ABI 6: file-system writes confined, signals scoped to the role); a worker writes only its lane, its scratch folder and its CLI's state".into(),
    });
    status.budget = Some(breeze_protocol::BudgetCaps {
        run_usd: Some(1.0),
        task_usd: Some(0.5),
        run_tokens: Some(500_000),
    });
    status
}

#[test]
fn status_table_of_an_interrupted_run() {
    let table = render::status_table(
        &interrupted_run(),
        Some("interrupted; `breeze resume` continues the run"),
    );
    insta::assert_snapshot!(shown(&table));
}

#[test]
fn status_table_when_no_backend_reports_a_cost() {
    // codex reports tokens only: the cost column says so rather than showing $0.00.
    let tasks = vec![
        TaskStatus {
            attempts: 1,
            rounds: 1,
            commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
            usage: usage(None, 12_000, 800),
            ..task("a", "Tokens only", TaskState::Landed)
        },
        TaskStatus {
            attempts: 1,
            rounds: 1,
            commit: Some("89abcdef0123456789abcdef0123456789abcdef".into()),
            usage: usage(None, 3_000, 200),
            ..task("b", "Also tokens only", TaskState::Landed)
        },
    ];
    let table = render::status_table(&run_status(RunState::Succeeded, 1, tasks), None);
    insta::assert_snapshot!(shown(&table));
}

#[test]
fn status_table_aligns_wide_and_long_titles_by_display_width() {
    // The scripted backend reports no usage: no cost or token columns.
    let tasks = vec![
        TaskStatus {
            attempts: 1,
            rounds: 1,
            commit: Some("5d41402abc4b2a76b9719d911017c592a1b2c3d4".into()),
            ..task("1", "認証を追加する", TaskState::Landed)
        },
        TaskStatus {
            attempts: 2,
            rounds: 1,
            ..task(
                "2",
                "Split the configuration loader into a parser, a validator and a merger of defaults",
                TaskState::Reviewing,
            )
        },
        TaskStatus {
            attempts: 1,
            ..task(
                "認3",
                "ログイン画面のデザインを全面的に作り直して、アクセシビリティを改善する",
                TaskState::Landing,
            )
        },
        task("4", "Plain ASCII", TaskState::Pending),
    ];
    let table = render::status_table(&run_status(RunState::Running, 2, tasks), None);
    insta::assert_snapshot!(shown(&table));
}

#[test]
fn run_summary_after_an_interrupted_run() {
    // What `breeze run` prints after its last progress line.
    let status = interrupted_run();
    let outcome = RunOutcome {
        run_id: RUN_ID.into(),
        state: status.state,
        status,
        stop_reason: Some("interrupted".into()),
        run_dir: PathBuf::from(".breeze/runs").join(RUN_ID),
    };
    insta::assert_snapshot!(shown(&commands::run::summary(&outcome)));
}

#[test]
fn run_summary_after_a_successful_run() {
    let tasks = vec![TaskStatus {
        attempts: 1,
        rounds: 1,
        commit: Some("3f2a9c1e5b7d4f60a8c2e1d9b3a5f7c0e2d4b6a8".into()),
        ..task("1", "Add the tokenizer", TaskState::Landed)
    }];
    let status = run_status(RunState::Succeeded, 1, tasks);
    let outcome = RunOutcome {
        run_id: RUN_ID.into(),
        state: status.state,
        status,
        stop_reason: None,
        run_dir: PathBuf::from(".breeze/runs").join(RUN_ID),
    };
    insta::assert_snapshot!(shown(&commands::run::summary(&outcome)));
}

/// A small plan: two tasks sharing a file (a conflict with a witness path), a task without
/// a write set (runs alone), dependencies and a risk flag.
const PLAN: &str = r#"
[[task]]
id = "1"
title = "Add the tokenizer"
dod = "src/lexer/ turns `1 + 2 * 3` into tokens"
writes = ["src/lexer/"]

[[task]]
id = "2"
title = "Add the expression parser"
dod = "src/parser.rs builds an AST"
writes = ["src/parser.rs", "src/lexer/token.rs"]
depends_on = ["1"]

[[task]]
id = "3"
title = "認証を追加する"
dod = "requests without a valid token are rejected with 401"
writes = ["src/auth/**"]
risk = ["security-sensitive"]

[[task]]
id = "4"
title = "Tidy up whatever needs it"
dod = "cargo clippy is clean"

[[task]]
id = "5"
title = "Document the grammar and every operator the calculator understands"
dod = "docs/ explains the grammar"
writes = ["docs/**/*.md", "CHANGELOG.md"]
depends_on = ["2", "3"]
"#;

fn plan_and_analysis() -> (breeze_plan::Plan, breeze_plan::Analysis) {
    let plan = breeze_plan::parse_plan_toml(PLAN, Path::new("plan.toml")).expect("a valid plan");
    let analysis = breeze_plan::analyze(&plan, 3).expect("an acyclic plan");
    (plan, analysis)
}

#[test]
fn plan_table() {
    let (plan, analysis) = plan_and_analysis();
    insta::assert_snapshot!(shown(&breeze_plan::render::table(&plan, &analysis)));
}

#[test]
fn plan_table_without_conflicts() {
    let text = r#"
[[task]]
id = "1"
title = "Lexer"
writes = ["src/lexer/"]

[[task]]
id = "2"
title = "Docs"
writes = ["docs/"]
"#;
    let plan = breeze_plan::parse_plan_toml(text, Path::new("plan.toml")).expect("a valid plan");
    let analysis = breeze_plan::analyze(&plan, 1).expect("an acyclic plan");
    insta::assert_snapshot!(shown(&breeze_plan::render::table(&plan, &analysis)));
}

#[test]
fn plan_dot() {
    let (plan, analysis) = plan_and_analysis();
    insta::assert_snapshot!(shown(&breeze_plan::render::dot(&plan, &analysis)));
}

#[test]
fn progress_lines() {
    let commit = Some("3f2a9c1e5b7d4f60a8c2e1d9b3a5f7c0e2d4b6a8".to_string());
    let events = vec![
        ProgressEvent::RunStarted {
            run_id: RUN_ID.into(),
            workers: 2,
            tasks: 8,
            groups: 3,
            resumed: false,
            lands_on: "main".into(),
        },
        ProgressEvent::RunStarted {
            run_id: RUN_ID.into(),
            workers: 1,
            tasks: 1,
            groups: 1,
            resumed: true,
            lands_on: "feature/login".into(),
        },
        ProgressEvent::Containment {
            enforced: true,
            summary: "roles confined by the kernel (Landlock ABI 6); a worker writes only its lane, its scratch folder and its CLI's state".into(),
        },
        ProgressEvent::Containment {
            enforced: false,
            summary: "NO kernel confinement (sandbox.mode = \"detect\"): breeze checks after every role what it changed outside its lane and stops the run if it finds anything".into(),
        },
        ProgressEvent::Pairing {
            line: "worker claude (sonnet) → reviewer codex (gpt-5): independent (another backend)"
                .into(),
            independent: true,
        },
        ProgressEvent::Pairing {
            line: "worker codex (its default model) → advisor codex (its default model): NOT independent (the same backend and its default model) — give roles.advisor another backend (e.g. backend = \"claude\") or another model (model = \"...\") ([review] independent = \"warn\")".into(),
            independent: false,
        },
        ProgressEvent::Budget { summary: "budget: run_usd = 5.00 ($1.20 spent) · task_usd = 2.00 per task".into() },
        ProgressEvent::Notice {
            message: "the worker's backend `command` reports no cost: run_usd and task_usd cannot cap it".into(),
        },
        ProgressEvent::Notice {
            message: "plan.toml is not committed: the run reads it as it is now".into(),
        },
        ProgressEvent::TaskStarted { id: "1".into(), title: "Add the tokenizer".into(), lane: 1 },
        ProgressEvent::TaskStarted { id: "3".into(), title: "認証を追加する".into(), lane: 2 },
        ProgressEvent::AttemptFailed {
            id: "1".into(),
            attempt: 1,
            reason: "the worker exited with status 1\nerror[E0425]: cannot find value `tokens`"
                .into(),
        },
        ProgressEvent::Advised {
            id: "1".into(),
            decision: Decision::Correction,
            summary: "the lexer test expects spans; add them to Token\n(more detail)".into(),
        },
        ProgressEvent::Advised {
            id: "3".into(),
            decision: Decision::Stop,
            summary: "the API has no user model to authenticate against".into(),
        },
        ProgressEvent::Reviewed {
            id: "1".into(),
            round: 1,
            verdict: Verdict::RequestChanges,
            blocking_gaps: 2,
        },
        ProgressEvent::SentBack { id: "8".into(), cause: lockfile_gate() },
        ProgressEvent::SentBack {
            id: "1".into(),
            cause: Cause {
                command: vec!["cargo".into(), "test".into()],
                exit_code: Some(101),
                log_tail: Some("test lexer::spans ... FAILED\nerror: test failed, to rerun pass `--lib`".into()),
                ..Cause::new(CauseKind::Check, "exited 101")
            },
        },
        ProgressEvent::Reviewed {
            id: "1".into(),
            round: 2,
            verdict: Verdict::Approve,
            blocking_gaps: 0,
        },
        ProgressEvent::SentBack { id: "5".into(), cause: failed_verify() },
        ProgressEvent::SentBack {
            id: "2".into(),
            cause: Cause {
                paths: vec!["src/lib.rs".into(), "src/parse.rs".into()],
                ..Cause::new(CauseKind::Conflict, "conflict with main")
            },
        },
        ProgressEvent::SentBack {
            id: "6".into(),
            cause: Cause::new(
                CauseKind::Person,
                "rejected by a person before landing: use a constant, not a literal",
            ),
        },
        ProgressEvent::AwaitingApproval {
            id: "6".into(),
            reason: "the reviewer approved round 1; its diff is .breeze/runs/r/reviews/6.round-1.diff — `breeze approve 6` lands it".into(),
        },
        ProgressEvent::Scope {
            id: "2".into(),
            paths: vec!["src/lib.rs".into()],
            granted: false,
            reason: Some("waits for task 1 to land".into()),
        },
        ProgressEvent::Scope {
            id: "2".into(),
            paths: vec!["src/lib.rs".into()],
            granted: true,
            reason: None,
        },
        ProgressEvent::Scope {
            id: "5".into(),
            paths: vec![".git/config".into()],
            granted: false,
            reason: Some("`.git/config` is inside git's or breeze's own folders, which no task may write".into()),
        },
        ProgressEvent::Deferred {
            id: "4".into(),
            reason: "landing touches `src/config.rs` with uncommitted changes in your checkout; commit or stash them, then run `breeze resume`".into(),
        },
        ProgressEvent::TaskFinished {
            id: "1".into(),
            state: TaskState::Landed,
            commit: commit.clone(),
            reason: None,
        },
        ProgressEvent::TaskFinished {
            id: "3".into(),
            state: TaskState::Escalated,
            commit: None,
            reason: Some("Advisor: STOP — the API has no user model\nsecond line".into()),
        },
        ProgressEvent::TaskFinished {
            id: "8".into(),
            state: TaskState::Escalated,
            commit: None,
            reason: Some(lockfile_gate().times(3).line()),
        },
        ProgressEvent::TaskFinished {
            id: "7".into(),
            state: TaskState::Blocked,
            commit: None,
            reason: Some("dependency 3 did not land".into()),
        },
        ProgressEvent::TaskFinished {
            id: "10".into(),
            state: TaskState::Failed,
            commit: None,
            reason: Some("cannot create the worktree /home/me/.local/share/breeze/worktrees/app-3f2a9c41d0/lane-2: disk full".into()),
        },
        ProgressEvent::Kept {
            what: "branch task/1".into(),
            reason: "it moved on to 9b1c0d2e3f40 after task 1 landed; see `git log 9b1c0d2e3f40..task/1`".into(),
        },
        ProgressEvent::Kept {
            what: "lane /home/me/.local/share/breeze/worktrees/app-3f2a9c41d0/lane-2".into(),
            reason: "it has uncommitted changes in 1 file(s) (notes.md); `breeze clean --force` discards them".into(),
        },
        // Text a role controls reaches the terminal escaped: no cleared screen, no fake
        // green line, no renamed window, no reordered text.
        ProgressEvent::TaskStarted {
            id: "9".into(),
            title: "\x1b[2J\x1b[32m● [9] landed\x1b[0m".into(),
            lane: 1,
        },
        ProgressEvent::AttemptFailed {
            id: "9".into(),
            attempt: 1,
            reason: "over\rwrite \x1b]0;pwned\x07 abc\u{202e}fed \u{9b}31m".into(),
        },
    ];
    let lines: Vec<String> =
        events.iter().map(|event| shown(&render::progress_line(event))).collect();
    insta::assert_snapshot!(lines.join("\n"));
}

/// An error as `breeze` prints it on stderr, with the exit code it ends with.
fn printed(what: &str, err: &CliError) -> String {
    format!("$ {what}  (exit {})\n{}", err.exit_code().code(), render_error(err))
}

/// Runs a command line through the real dispatch, for commands that fail before they
/// touch the file system.
fn dispatch_error(args: &[&str]) -> CliError {
    let cli = Cli::try_parse_from(args).expect("the arguments parse");
    breeze_cli::run(cli).expect_err("the command fails")
}

#[test]
fn usage_errors() {
    let errors = [
        ("breeze schema review", dispatch_error(&["breeze", "schema", "review"])),
        (
            "breeze validate --as nonsense result.json",
            dispatch_error(&["breeze", "validate", "--as", "nonsense", "result.json"]),
        ),
        (
            "an error quoting role output",
            CliError::usage("the reviewer wrote \x1b[31mFAIL\x1b[0m\r where JSON was expected")
                .hint("see `breeze logs 3` (\x1b]0;title\x07)"),
        ),
    ];
    let text: Vec<String> = errors.iter().map(|(what, err)| printed(what, err)).collect();
    insta::assert_snapshot!(text.join("\n"));
}

/// A plan.toml with a problem on several lines, and one that is not TOML.
fn plan_errors() -> Vec<breeze_plan::PlanError> {
    let broken = r#"
[[task]]
id = "1"
title = "Lexer"
writes = ["/etc/passwd"]

[[task]]
id = "1"
title = "Parser"
writes = ["src/parser.rs"]
depends_on = ["9"]
"#;
    let not_toml = "[[task]]\nid = \"1\"\ntitle = \"Lexer\nwrites = []\n";
    let cycle = r#"
[[task]]
id = "1"
title = "A"
writes = ["a.rs"]
depends_on = ["2"]

[[task]]
id = "2"
title = "B"
writes = ["b.rs"]
depends_on = ["1"]
"#;
    let mut errors = Vec::new();
    for text in [broken, not_toml] {
        errors.push(
            breeze_plan::parse_plan_toml(text, Path::new("plan.toml"))
                .expect_err("the plan is refused"),
        );
    }
    let plan = breeze_plan::parse_plan_toml(cycle, Path::new("plan.toml")).expect("it parses");
    errors.push(breeze_plan::analyze(&plan, 2).expect_err("the cycle is refused"));
    errors
}

#[test]
fn plan_errors_from_breeze_plan_and_breeze_run() {
    let mut text = Vec::new();
    for err in plan_errors() {
        text.push(printed("breeze plan", &commands::plan::plan_error(err.clone())));
        text.push(printed("breeze run", &CliError::from(EngineError::Plan(err))));
    }
    insta::assert_snapshot!(text.join("\n"));
}

#[test]
fn engine_errors() {
    use breeze_engine::lock::LockError;
    use breeze_engine::snapshot::SnapshotError;
    let errors = [
        ("breeze run  (Ctrl-C)", EngineError::Cancelled),
        (
            "breeze run  (disk full)",
            EngineError::io(
                "cannot save .breeze/runs/0197a5c2/run.json",
                std::io::Error::from_raw_os_error(28),
            ),
        ),
        (
            "breeze run  (no permission)",
            EngineError::io(
                "cannot save .breeze/runs/0197a5c2/run.json",
                std::io::Error::from_raw_os_error(13),
            ),
        ),
        (
            "breeze clean",
            EngineError::usage(
                format!("run {RUN_ID} can still be resumed; cleaning would take its worktrees"),
                "finish it with `breeze resume`, give it up with `breeze abort`, or pass --force",
            ),
        ),
        ("breeze run  (another run)", EngineError::Locked(LockError::Held { pid: "4242".into() })),
        (
            "breeze run  (a misspelt key)",
            EngineError::Config(breeze_engine::config::ConfigError {
                file: "breeze.toml".into(),
                message: "TOML parse error at line 2, column 1\n  |\n2 | max_worker = 2\n  | ^^^^^^^^^^\nunknown field `max_worker`, expected `max_workers` or `main_branch`".into(),
            }),
        ),
        (
            "breeze status",
            EngineError::Snapshot(SnapshotError {
                path: ".breeze/runs/0197a5c2/run.json".into(),
                message: "format_version 1 is not supported by this breeze (expects 2); finish the run with the breeze that started it, or give it up with `breeze abort`".into(),
            }),
        ),
        (
            "breeze run  (outside a repository)",
            EngineError::Git(breeze_git::GitError::NotARepository {
                path: PathBuf::from("/home/ada/notes"),
            }),
        ),
        (
            "breeze run  (a defect)",
            EngineError::internal("saving run.json")("key must be a string"),
        ),
    ];
    let text: Vec<String> =
        errors.into_iter().map(|(what, err)| printed(what, &CliError::from(err))).collect();
    insta::assert_snapshot!(text.join("\n"));
}

#[test]
fn argument_errors_from_clap() {
    // What clap prints for a mistyped command line (exit 2), without colours.
    let mut text = Vec::new();
    for args in [
        &["breeze", "stauts"][..],
        &["breeze", "run", "--max-workers", "many"],
        &["breeze", "validate"],
        &["breeze", "plan", "--json", "--dot"],
        &["breeze", "status", "--jsn"],
    ] {
        let err = Cli::command().term_width(100).try_get_matches_from(args).expect_err("refused");
        assert!(err.use_stderr(), "{args:?} is a usage error");
        text.push(format!("$ {}\n{}", args.join(" "), err.render()));
    }
    insta::assert_snapshot!(text.join("\n"));
}

/// `breeze [SUBCOMMAND] --help` as printed, at a fixed width and without colours.
fn help(args: &[&str]) -> String {
    let err = Cli::command().term_width(100).try_get_matches_from(args).expect_err("help exits");
    assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp, "{args:?}");
    err.render().to_string()
}

#[test]
fn help_of_breeze() {
    insta::assert_snapshot!(help(&["breeze", "--help"]));
}

#[test]
fn help_of_every_subcommand() {
    let names: Vec<String> =
        Cli::command().get_subcommands().map(|sub| sub.get_name().to_string()).collect();
    assert!(names.len() >= 13, "{names:?}");
    for name in names {
        let text = help(&["breeze", &name, "--help"]);
        insta::assert_snapshot!(format!("help_{name}"), text);
    }
}

#[test]
fn report_markdown() {
    let mut landed = TaskRecord::new("1", "Add the tokenizer", Some(1));
    landed.phase = TaskPhase::Landed;
    landed.attempts = 1;
    landed.rounds = 1;
    landed.approved_round = Some(1);
    landed.commit = Some(oid("3f2a9c1e5b7d4f60a8c2e1d9b3a5f7c0e2d4b6a8"));
    landed.usage = usage(Some(0.42), 182_340, 9_115);
    let mut escalated = TaskRecord::new("2", "Parse `a | b` pipes", Some(1));
    escalated.phase = TaskPhase::Escalated;
    escalated.attempts = 3;
    escalated.rounds = 3;
    escalated.advisor_consults = 1;
    escalated.branch = Some("breeze/task-2".into());
    escalated.reason = Some("3 review rounds requested changes".into());
    escalated.usage = usage(None, 40_000, 2_000);
    let mut blocked = TaskRecord::new("3", "認証を追加する", Some(2));
    blocked.phase = TaskPhase::Blocked;
    blocked.reason = Some("dependency 2 did not land".into());
    let mut lockfile = TaskRecord::new("4", "Add the subtraction helper", Some(3));
    lockfile.phase = TaskPhase::Escalated;
    (lockfile.attempts, lockfile.gate_failures) = (3, 3);
    lockfile.branch = Some("task/4-2".into());
    lockfile.earlier_branches = vec!["task/4".into()];
    lockfile.set_cause(Some(lockfile_gate().times(3)));
    let mut snapshot =
        failed_run(vec![landed, escalated, blocked, lockfile], "2025-06-01T09:42:17Z");
    snapshot.universal_violations = vec!["Every public function needs a doc comment".into()];
    snapshot.budget.caps.run_usd = Some(2.0);
    snapshot.containment = Some(ContainmentStatus {
        kernel: false,
        summary: "NO kernel confinement (sandbox.mode = \"detect\"): breeze checks after every role what it changed outside its lane and stops the run if it finds anything".into(),
    });
    let status = snapshot.status();
    let sent_back = |task: &str, cause: Cause| breeze_protocol::EventKind::SentBack {
        task: task.into(),
        reason: cause.line(),
        cause,
    };
    let events = [
        event(1, "09:10:00", sent_back("1", failed_verify())),
        event(2, "09:20:00", sent_back("4", lockfile_gate())),
        event(3, "09:25:00", sent_back("4", lockfile_gate())),
    ];
    insta::assert_snapshot!(shown(&commands::status::report_markdown(&snapshot, &status, &events)));
}

#[test]
fn doctor_report() {
    use breeze_engine::doctor::{DoctorReport, ToolCheck};
    use breeze_supervise::KernelSupport;
    let confined = DoctorReport {
        kernel: KernelSupport::Landlock { abi: 6 },
        user_namespaces: Some(true),
        network_namespaces: Ok(()),
        dev_shm: breeze_supervise::DevShmSupport::Private,
        isolation: breeze_supervise::IsolationSupport::PidNamespace {
            proc_limit: None,
            pts_limit: None,
            lock_limit: None,
        },
        role_commands: vec![(
            "reviewer",
            vec!["sh".into(), "/home/me/project/tools/review.sh".into()],
        )],
        containment: Some(Err("breeze.toml: sandbox.mode: unknown value `strict`".into())),
        tools: vec![
            ToolCheck {
                name: "claude",
                path: Some(PathBuf::from("/usr/local/bin/claude")),
                version: Ok("2.1.0 (Claude Code)".into()),
            },
            ToolCheck {
                name: "codex",
                path: Some(PathBuf::from("/usr/local/bin/codex")),
                version: Err("`--version` exited with exit status: 1".into()),
            },
            ToolCheck { name: "git", path: None, version: Err("not found on PATH".into()) },
        ],
    };
    let unconfined = DoctorReport {
        kernel: KernelSupport::Unavailable {
            reason: "Landlock is not enabled in this kernel (boot with lsm=landlock,...)".into(),
        },
        user_namespaces: None,
        network_namespaces: Err("network namespaces are a Linux feature and this is macos".into()),
        dev_shm: breeze_supervise::DevShmSupport::NotWritable {
            reason: "namespaces are a Linux feature and this is macos".into(),
        },
        isolation: breeze_supervise::IsolationSupport::SessionOnly {
            reason: "namespaces are a Linux feature and this is macos".into(),
        },
        role_commands: Vec::new(),
        containment: None,
        tools: Vec::new(),
    };
    insta::assert_snapshot!(shown(&format!("{}\n{}", confined.render(), unconfined.render())));
}

#[test]
fn doctor_preflight_and_the_error_run_stops_with() {
    use breeze_engine::preflight::Preflight;
    use breeze_protocol::{CheckOutcome, DoctorCheck};
    let check =
        |check: &str, subject: &str, outcome, message: &str, hint: Option<&str>| DoctorCheck {
            check: check.into(),
            subject: subject.into(),
            outcome,
            message: message.into(),
            hint: hint.map(Into::into),
            searched: Vec::new(),
        };
    let mut missing_claude = check(
        "backend",
        "roles.worker, roles.reviewer, roles.advisor",
        CheckOutcome::Problem,
        "claude not found on PATH (the backend of roles.worker, roles.reviewer and roles.advisor)",
        Some(
            "install claude: npm i -g @anthropic-ai/claude-code, or set another backend in [roles.worker], [roles.reviewer], [roles.advisor] of breeze.toml",
        ),
    );
    missing_claude.searched = vec!["/usr/local/bin".into(), "/usr/bin".into(), "/bin".into()];
    let preflight = Preflight {
        root: Some(PathBuf::from("/work/app")),
        checks: vec![
            check(
                "config",
                "breeze.toml",
                CheckOutcome::Problem,
                "breeze.toml: unknown key run.max_worker at line 10 (did you mean max_workers?)",
                Some("fix its name"),
            ),
            check(
                "plan",
                "Plans.md",
                CheckOutcome::Problem,
                "Plans.md is breeze init's template (its placeholder tasks would be run)",
                Some(
                    "describe your tasks (or run `breeze draft \"GOAL\"`), then remove line 3 of Plans.md (<!-- breeze:template … -->)",
                ),
            ),
            missing_claude,
            check(
                "login",
                "roles.reviewer",
                CheckOutcome::NotChecked,
                "codex's login for roles.reviewer is not checked: it uses a model provider of its own configuration",
                None,
            ),
            check(
                "program",
                "worktree.setup, review.checks, land.verify",
                CheckOutcome::Ok,
                "npm (/usr/bin/npm), for worktree.setup, review.checks and land.verify",
                None,
            ),
            // A reviewer on another CLI, an Advisor on the worker's own model.
            check(
                "review",
                "roles.reviewer",
                CheckOutcome::Ok,
                "worker claude (sonnet) → reviewer codex (gpt-5): independent (another backend)",
                None,
            ),
            check(
                "review",
                "roles.advisor",
                CheckOutcome::Problem,
                "[review] independent = \"require\", but the advisor runs on the worker's own backend and model: worker claude (sonnet) → advisor claude (claude-sonnet-4-5): NOT independent (the same backend and model)",
                Some(
                    "give roles.advisor another backend (e.g. backend = \"codex\") or another model (model = \"...\"); or set [review] independent = \"warn\" in breeze.toml to run anyway",
                ),
            ),
            check(
                "budget",
                "roles.reviewer",
                CheckOutcome::Warning,
                "the reviewer's backend `codex` reports tokens but no cost, and its model `gpt-5-nano` has no price in [budget.prices]: run_usd cannot cap it (its tokens still count)",
                None,
            ),
            check(
                "setup",
                "worktree.setup",
                CheckOutcome::Ok,
                "worktree.setup: `npm install` creates node_modules/ (2,345 files) and package-lock.json in 41 s (not ignored by git: package-lock.json)",
                None,
            ),
            check(
                "plan",
                "plan",
                CheckOutcome::Warning,
                "no plan: neither plan.toml nor Plans.md is at the repository root",
                Some("write one with `breeze init` or `breeze draft \"GOAL\"`"),
            ),
            check(
                "setup",
                "worktree.setup",
                CheckOutcome::Skipped,
                "worktree.setup was not tried (--no-setup)",
                None,
            ),
        ],
        setup: None,
    };
    let doctor = breeze_engine::doctor::render_preflight(&preflight);
    let error = printed("breeze run", &CliError::from(preflight.into_error().unwrap_err()));
    insta::assert_snapshot!(shown(&format!("{doctor}\n{error}")));
}

/// A journal line at `hh:mm:ss` on the fixture's day.
fn event(seq: u64, at: &str, event: breeze_protocol::EventKind) -> breeze_protocol::BreezeEvent {
    breeze_protocol::BreezeEvent {
        schema_version: breeze_protocol::BreezeEventV1,
        seq,
        at: format!("2025-06-01T{at}Z"),
        event,
    }
}

#[test]
fn report_html() {
    use breeze_protocol::{EventKind, Role};
    let record = |id: &str, title: &str, phase: TaskPhase| {
        let mut record = TaskRecord::new(id, title, Some(1));
        record.phase = phase;
        record
    };
    let mut landed = record("1", "Add the tokenizer", TaskPhase::Landed);
    (landed.attempts, landed.rounds, landed.approved_round) = (2, 2, Some(2));
    landed.commit = Some(oid("3f2a9c1e5b7d4f60a8c2e1d9b3a5f7c0e2d4b6a8"));
    landed.usage = usage(Some(0.42), 182_340, 9_115);
    let mut escalated = record("2", "Parse <script>alert(1)</script>", TaskPhase::Escalated);
    (escalated.attempts, escalated.gate_failures) = (4, 3);
    escalated.set_cause(Some(lockfile_gate().times(3)));
    let mut awaiting = record("3", "認証を追加する", TaskPhase::AwaitingApproval);
    (awaiting.attempts, awaiting.rounds, awaiting.advisor_consults) = (1, 1, 1);
    let deferred = record("4", "Tidy up whatever needs it", TaskPhase::Deferred);
    let mut blocked = record("5", "Document the grammar", TaskPhase::Blocked);
    blocked.reason = Some("dependency 2 did not land".into());
    let snapshot =
        failed_run(vec![landed, escalated, awaiting, deferred, blocked], "2025-06-01T09:21:00Z");
    let status = snapshot.status();
    let started = |task: &str, lane| EventKind::TaskStarted {
        task: task.into(),
        title: format!("task {task}"),
        lane,
    };
    let state = |task: &str, state| EventKind::TaskState {
        task: task.into(),
        state,
        reason: None,
        cause: None,
    };
    let sent_back = |task: &str, cause: Cause| EventKind::SentBack {
        task: task.into(),
        reason: cause.line(),
        cause,
    };
    let escalated_by = |task: &str, cause: Cause| EventKind::TaskState {
        task: task.into(),
        state: TaskState::Escalated,
        reason: Some(cause.line()),
        cause: Some(cause),
    };
    let process = |task: &str, role, pid| EventKind::ProcessStarted {
        task: task.into(),
        role,
        pid,
        start_ticks: None,
        log: "x.log".into(),
    };
    let ended = |task: &str, role, pid| EventKind::ProcessEnded {
        task: task.into(),
        role,
        pid,
        exit_code: Some(0),
        outcome: ProcessEnding::Exited,
        usage: Usage::default(),
    };
    // Task 1's verify fails on the merged tree: a red tick, then its second attempt.
    // Task 2's first worker attempt fails (a red edge under its bar); the next three
    // complete, but the write-set gate sends the first two back (a red tick each) and the
    // third failure in a row escalates: four attempt bars, no reviewer round.
    let attempt = |task: &str, attempt, outcome: &str| EventKind::Attempt {
        task: task.into(),
        attempt,
        round: 1,
        outcome: *AttemptOutcome::ALL.iter().find(|known| known.as_str() == outcome).unwrap(),
        head: None,
        error: (outcome == "failed").then(|| "the worker exited 1: out of memory".to_string()),
    };
    let running_because = |task: &str, cause: Cause| EventKind::TaskState {
        task: task.into(),
        state: TaskState::Running,
        reason: Some(cause.line()),
        cause: Some(cause),
    };
    let journal = [
        (
            "09:00:00",
            EventKind::RunStarted {
                plan: "plan.toml".into(),
                workers: 2,
                main_tip: "0".repeat(40),
                resumed: false,
            },
        ),
        ("09:00:00.500", started("1", 1)),
        ("09:00:00.500", started("3", 2)),
        ("09:00:01", state("1", TaskState::Running)),
        ("09:00:01", state("3", TaskState::Running)),
        ("09:00:01", process("1", Role::Worker, 10)),
        ("09:03:00", ended("1", Role::Worker, 10)),
        ("09:03:00", attempt("1", 1, "completed")),
        ("09:03:00", state("1", TaskState::Reviewing)),
        ("09:03:30", process("1", Role::Reviewer, 11)),
        (
            "09:04:00",
            EventKind::AdvisorConsulted {
                task: "3".into(),
                trigger_hash: "3:needs-advice:x".into(),
                decision: Decision::Plan,
                response_path: "advisor/3.needs-advice.1.advisor-response.json".into(),
            },
        ),
        ("09:05:00", ended("1", Role::Reviewer, 11)),
        ("09:05:00", state("1", TaskState::Landing)),
        ("09:05:10", sent_back("1", failed_verify())),
        ("09:05:10", running_because("1", failed_verify())),
        ("09:05:20", attempt("1", 2, "completed")),
        ("09:05:20", state("1", TaskState::Reviewing)),
        ("09:05:25", state("1", TaskState::Landing)),
        ("09:05:30", state("1", TaskState::Landed)),
        ("09:05:31", started("2", 1)),
        ("09:05:32", state("2", TaskState::Running)),
        ("09:06:00", state("3", TaskState::Reviewing)),
        ("09:07:00", attempt("2", 1, "failed")),
        ("09:08:00", state("3", TaskState::AwaitingApproval)),
        ("09:08:01", started("4", 2)),
        ("09:08:02", state("4", TaskState::Running)),
        ("09:09:30", attempt("2", 2, "completed")),
        ("09:09:30", state("2", TaskState::Reviewing)),
        ("09:10:00", sent_back("2", lockfile_gate())),
        ("09:10:00", running_because("2", lockfile_gate())),
        ("09:12:00", state("4", TaskState::Reviewing)),
        ("09:14:00", state("4", TaskState::Landing)),
        ("09:15:00", state("4", TaskState::Deferred)),
        ("09:15:30", attempt("2", 3, "completed")),
        ("09:15:30", state("2", TaskState::Reviewing)),
        ("09:16:00", sent_back("2", lockfile_gate())),
        ("09:16:00", running_because("2", lockfile_gate())),
        ("09:19:30", attempt("2", 4, "completed")),
        ("09:19:30", state("2", TaskState::Reviewing)),
        ("09:20:00", escalated_by("2", lockfile_gate().times(3))),
        ("09:20:00", state("5", TaskState::Blocked)),
        ("09:21:00", EventKind::RunFinished { state: RunState::Failed }),
    ];
    let events: Vec<_> =
        journal.into_iter().zip(1..).map(|((at, kind), seq)| event(seq, at, kind)).collect();
    let report = breeze_cli::report_html::Report::from_parts(
        &snapshot,
        &status,
        &events,
        Ok(plan_and_analysis()),
        "2025-06-01T09:30:00Z",
        // Shown in the reader's local time: here Central European Summer Time (+02:00).
        breeze_cli::report_html::Zone::posix("CET-1CEST,M3.5.0,M10.5.0/3").unwrap(),
    );
    let html = report.render();
    assert!(!html.contains("<script"), "titles are escaped");
    insta::assert_snapshot!(html);
}

/// The live view of `breeze run` / `breeze watch` while task 3 works on lane 2 (from the
/// journal of a real run), and once the run ended.
#[test]
fn live_view_frames() {
    use breeze_cli::live::{frame, model::LiveModel};
    let events: Vec<breeze_protocol::BreezeEvent> =
        include_str!("fixtures/three-tasks.events.jsonl")
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
    let at = |time: &str| humantime::parse_rfc3339(time).unwrap();
    let mut tasks = vec![
        task("1", "Write the first note", TaskState::Pending),
        task("2", "Write the second note", TaskState::Pending),
        task("3", "Write the third note", TaskState::Pending),
        task("4", "Document the notes", TaskState::Pending),
    ];
    tasks[3].usage = usage(Some(0.42), 12_000, 3_400);
    let mut status = run_status(RunState::Running, 2, tasks);
    status.budget = Some(breeze_protocol::BudgetCaps {
        run_usd: Some(1.0),
        task_usd: Some(0.5),
        run_tokens: Some(500_000),
    });
    let mut model = LiveModel::default();
    model.seed(&status, breeze_cli::live::model::Replay::FromNow);
    for event in &events[..30] {
        model.apply(event);
    }
    model.refresh_output(|log| {
        log.ends_with("3.worker.1.log").then(|| "step 2 of 3: working on 3".to_string())
    });
    let running = |width| {
        frame::render(
            &model,
            at("2026-12-01T04:38:34.500Z"),
            width,
            Some("q: leave (the run goes on)"),
        )
        .join("\n")
    };
    // In narrower panes the title gives way first; phase, time and try stay whole.
    let narrow: Vec<String> = [80, 60, 40]
        .into_iter()
        .map(|width| format!("{width} columns:\n{}", running(width)))
        .collect();
    let running = running(100);
    for event in &events[30..] {
        model.apply(event);
    }
    let ended = frame::render(&model, at("2026-12-01T04:38:36Z"), 100, None);
    insta::assert_snapshot!(format!(
        "{running}\n---\n{}\n---\n{}\n",
        ended.join("\n"),
        narrow.join("\n---\n")
    ));
}

/// A failed run on two lanes that started at 09:00 on the fixture's day.
fn failed_run(tasks: Vec<TaskRecord>, updated_at: &str) -> RunSnapshot {
    RunSnapshot {
        format_version: breeze_engine::snapshot::FORMAT_VERSION,
        run_id: RUN_ID.into(),
        plan: "plan.toml".into(),
        state: RunState::Failed,
        workers: 2,
        main_branch: "main".into(),
        main_tip_at_start: oid("0000000000000000000000000000000000000001"),
        started_at: "2025-06-01T09:00:00Z".into(),
        updated_at: updated_at.into(),
        stop_reason: None,
        tasks,
        consulted: Default::default(),
        universal_violations: Vec::new(),
        containment: None,
        budget: Default::default(),
        generation: 0,
        waiting: Vec::new(),
        windows: Vec::new(),
    }
}
