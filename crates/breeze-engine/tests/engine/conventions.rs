//! The project's own conventions: its changelog file and format (`land.changelog`), the
//! landing commit's type and message (`land.message`), and `retry --fresh`.

use breeze_engine::changelog::Changelog;
use breeze_engine::decision::EarlierCounts;
use breeze_engine::landing_message::MessageTemplate;
use breeze_protocol::{RunState, TaskState};
use tokio_util::sync::CancellationToken;

use super::{Fixture, resume_with, retry, reviewer_until_approved, script, shell_worker, task};
use breeze_test_support::git;
use breeze_test_support::plan::{one_task, toml_task};

/// The top of itsdangerous's `CHANGES.rst`.
const PALLETS_CHANGES: &str = "Version 2.3.0\n-------------\n\nUnreleased\n\n-   Drop support for Python 3.8.\n\n\nVersion 2.2.0\n-------------\n\nReleased 2024-04-16\n\n-   Drop support for Python 3.7.\n";

fn changelog_task() -> String {
    toml_task(
        "1",
        "Sign with SHA-256",
        &["src/one.txt"],
        "[task.sim]\nchangelog = \"Sign with SHA-256 by default.\"",
    )
}

#[tokio::test]
async fn the_line_lands_in_the_projects_own_changes_rst_in_its_format_and_no_changelog_md_is_made()
{
    let fixture = Fixture::new(&changelog_task(), &[("CHANGES.rst", PALLETS_CHANGES)]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(
        git(&fixture.root, &["show", "main:CHANGES.rst"]),
        PALLETS_CHANGES.replace(
            "\n-   Drop support for Python 3.8.",
            "\n-   Sign with SHA-256 by default.\n-   Drop support for Python 3.8."
        ),
        "under Unreleased, with the file's own list marker, everything else kept"
    );
    let tree = git(&fixture.root, &["ls-tree", "--name-only", "main"]);
    assert!(!tree.lines().any(|name| name == "CHANGELOG.md"), "no second changelog: {tree}");
    // The reviewer saw exactly that change, on that file.
    let diff = std::fs::read_to_string(outcome.run_dir.join("reviews/1.round-1.diff")).unwrap();
    assert!(diff.contains("+++ b/CHANGES.rst\n"), "{diff}");
    assert!(diff.contains("\n+-   Sign with SHA-256 by default.\n"), "{diff}");
    // The worker's contract names it among the files only the Lead writes.
    let contract =
        std::fs::read_to_string(outcome.run_dir.join("contracts/1.sprint-contract.json")).unwrap();
    assert!(contract.contains("Do not edit Plans.md, CHANGES.rst, spec.md"), "{contract}");
}

#[tokio::test]
async fn with_the_changelog_off_no_line_lands_and_the_reviewer_is_shown_none() {
    let before = "# Changelog\n\n## Unreleased\n";
    let fixture = Fixture::new(&changelog_task(), &[("CHANGELOG.md", before)]);
    let mut options = fixture.options();
    options.config.as_mut().unwrap().land.changelog = Changelog::Off;
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(git(&fixture.root, &["show", "main:CHANGELOG.md"]), before);
    let diff = std::fs::read_to_string(outcome.run_dir.join("reviews/1.round-1.diff")).unwrap();
    assert!(!diff.contains("Added by breeze"), "{diff}");
    let input = reviewer_input(&outcome.run_dir);
    assert!(!input.contains("\"changelog\""), "{input}");
    // The worker's line is kept in the run's record.
    let run = std::fs::read_to_string(outcome.run_dir.join("run.json")).unwrap();
    assert!(run.contains("Sign with SHA-256 by default."), "{run}");
}

/// The reviewer's first `review-input.v1`, as the run kept it (`io/`).
fn reviewer_input(run_dir: &std::path::Path) -> String {
    let mut inputs: Vec<_> = std::fs::read_dir(run_dir.join("io"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("1.reviewer.") && name.ends_with(".input.json")
        })
        .collect();
    inputs.sort();
    std::fs::read_to_string(inputs.first().expect("a reviewer input")).unwrap()
}

#[tokio::test]
async fn a_named_changelog_file_is_the_one_written() {
    let fixture = Fixture::new(&changelog_task(), &[("CHANGES.rst", PALLETS_CHANGES)]);
    let mut options = fixture.options();
    options.config.as_mut().unwrap().land.changelog = Changelog::File("NEWS".into());
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(
        git(&fixture.root, &["show", "main:NEWS"]),
        "Unreleased\n\n- Sign with SHA-256 by default.\n"
    );
    assert_eq!(git(&fixture.root, &["show", "main:CHANGES.rst"]), PALLETS_CHANGES);
}

/// The subject of the newest commit touching `path` on main.
fn subject_of_landing(fixture: &Fixture, path: &str) -> String {
    git(&fixture.root, &["log", "-1", "--format=%s", "main", "--", path]).trim().to_string()
}

#[tokio::test]
async fn each_landing_commit_has_the_type_of_its_task() {
    let plan = [
        toml_task("1", "Write the guide", &["docs/guide.md"], ""),
        toml_task("2", "Cover the parser", &["tests/parser_test.rs"], ""),
        toml_task("3", "Fix the crash on empty input", &["src/parse.rs"], ""),
        toml_task("4", "Add the lexer", &["src/lex.rs"], ""),
        toml_task("5", "Split the parser", &["src/split.rs"], "type = \"refactor\""),
    ]
    .concat();
    let fixture = Fixture::new(&plan, &[]);
    let outcome = fixture.run().await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(subject_of_landing(&fixture, "docs/guide.md"), "docs: Write the guide");
    assert_eq!(subject_of_landing(&fixture, "tests/parser_test.rs"), "test: Cover the parser");
    assert_eq!(subject_of_landing(&fixture, "src/parse.rs"), "fix: Fix the crash on empty input");
    assert_eq!(subject_of_landing(&fixture, "src/lex.rs"), "feat: Add the lexer");
    assert_eq!(subject_of_landing(&fixture, "src/split.rs"), "refactor: Split the parser");
    // The trailers are as they were.
    let message = git(&fixture.root, &["log", "-1", "--format=%B", "main", "--", "docs/guide.md"]);
    assert!(message.contains("\n\nBreeze-Task: 1\nBreeze-Run: "), "{message}");
}

#[tokio::test]
async fn the_subject_follows_land_message_and_a_later_run_still_finds_the_landing() {
    let plan = toml_task("7", "Write the guide", &["docs/guide.md"], "");
    let fixture = Fixture::new(&plan, &[]);
    let options = || {
        let mut options = fixture.options();
        options.config.as_mut().unwrap().land.message =
            MessageTemplate::parse("{title} ({type}, task {id})").unwrap();
        options
    };
    let outcome = breeze_engine::run(options(), CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(subject_of_landing(&fixture, "docs/guide.md"), "Write the guide (docs, task 7)");
    // A new run of the same plan recognizes the task on main by its trailer and its
    // subject, whatever type it landed with, and does not run it again.
    let again = breeze_engine::run(options(), CancellationToken::new()).await.unwrap();
    assert_eq!(again.state, RunState::Succeeded, "{again:?}");
    let record = again.status.tasks.iter().find(|t| t.id == "7").unwrap();
    assert_eq!(record.reason.as_deref(), Some("already on main before this run"), "{again:?}");
    let landings = git(&fixture.root, &["log", "--format=%s", "main", "--", "docs/guide.md"]);
    assert_eq!(landings.lines().count(), 1, "{landings}");
}

#[tokio::test]
async fn retry_fresh_starts_the_task_at_attempt_1_round_1_and_the_journal_keeps_the_old_counts() {
    let fixture = Fixture::new(&one_task(""), &[]);
    let mut options = fixture.options();
    let approve = reviewer_until_approved(&fixture, &mut options);
    // The worker writes its file and says which attempt and round it was told.
    let told = fixture.repo.outside().join("told");
    std::fs::create_dir_all(&told).unwrap();
    options.config.as_mut().unwrap().sandbox_writable.push(told.display().to_string());
    let worker = script(
        &fixture,
        "counting-worker.sh",
        &format!(
            r#"cat > /dev/null
echo "attempt $BREEZE_ATTEMPT round $BREEZE_ROUND" >> {told}/calls
mkdir -p src && echo "work $BREEZE_ATTEMPT" > src/one.txt
printf '{{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}}' > "$BREEZE_OUTPUT"
"#,
            told = told.display()
        ),
    );
    shell_worker(&mut options, &worker);
    let outcome = breeze_engine::run(options.clone(), CancellationToken::new()).await.unwrap();
    let escalated = task(&outcome, "1");
    assert_eq!(escalated.state, TaskState::Escalated, "{outcome:?}");
    assert_eq!((escalated.attempts, escalated.rounds), (3, 3), "{outcome:?}");

    let report = retry(&fixture, &["1"], true).unwrap();
    assert_eq!(report.tasks[0].earlier, Some(EarlierCounts { attempts: 3, rounds: 3 }));
    std::fs::write(&approve, "").unwrap();
    let outcome = resume_with(options).await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    let landed = task(&outcome, "1");
    assert_eq!((landed.attempts, landed.rounds), (1, 1), "{outcome:?}");
    assert_eq!(landed.review.as_deref(), Some("APPROVE (round 1)"), "{outcome:?}");
    let calls = std::fs::read_to_string(told.join("calls")).unwrap();
    assert_eq!(
        calls.lines().last(),
        Some("attempt 1 round 1"),
        "the new worker is told so: {calls}"
    );
    let message = git(&fixture.root, &["log", "-1", "--format=%B", "main"]);
    assert!(message.contains("Breeze-Review: APPROVE (round 1)"), "{message}");
    // The journal says what the task had done before; its earlier round files are kept.
    let journal = std::fs::read_to_string(outcome.run_dir.join("events.jsonl")).unwrap();
    assert!(
        journal.contains("attempt 1, round 1 again (after 3 attempts and 3 rounds)"),
        "{journal}"
    );
    let reviews = outcome.run_dir.join("reviews");
    assert!(reviews.join("1.earlier-1.round-3.review-result.json").exists());
    assert!(reviews.join("1.round-1.review-result.json").exists());
}
