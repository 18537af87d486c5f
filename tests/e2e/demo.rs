//! `breeze demo`: the README's first command.

use crate::support::{both, git, run_in, status_json, stdout};

#[test]
fn demo_lands_all_nine_tasks_with_trailers_and_leaves_a_clean_repository() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("demo");
    let output = run_in(temp.path(), &["demo", "--dir", dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let text = stdout(&output);
    assert!(text.contains("9 of 9 tasks landed"), "{text}");
    assert!(
        text.contains("task 9 had no write set; proposed src/version.rs"),
        "the demo shows the scaffolder filling a write set: {text}"
    );
    assert!(text.contains("Advisor: PLAN"), "the demo shows an Advisor consult: {text}");
    assert!(text.contains("REQUEST_CHANGES"), "the demo shows a review round: {text}");
    assert!(
        text.contains(
            "↺ [3] the write-set gate failed: notes/scratch.md is outside the task's writes"
        ) && text.contains("— back to the worker"),
        "the demo shows a gate sending work back, with why: {text}"
    );
    assert!(text.contains(&dir.display().to_string()), "it says where the repository is");

    // Each landing's subject has its task's type: docs and tests by the paths they changed.
    let subjects = git(&dir, &["log", "--format=%s", "main"]);
    let typed = ["feat: ", "docs: ", "test: "];
    let landings: Vec<&str> =
        subjects.lines().filter(|s| typed.iter().any(|t| s.starts_with(t))).collect();
    assert_eq!(landings.len(), 9, "{subjects}");
    for subject in [
        "feat: Add the tokenizer",
        "docs: Document the calculator",
        "test: Write integration tests",
        "docs: Update the changelog",
    ] {
        assert!(landings.contains(&subject), "{subject}: {subjects}");
    }
    let trailers = git(&dir, &["log", "--format=%(trailers:key=Breeze-Task,valueonly)", "main"]);
    let mut tasks: Vec<&str> = trailers.lines().filter(|l| !l.is_empty()).collect();
    tasks.sort();
    assert_eq!(tasks, ["1", "2", "3", "4", "5", "6", "7", "8", "9"]);
    assert!(
        git(&dir, &["log", "-1", "--format=%B", "main"]).contains("Breeze-Review: APPROVE (round")
    );
    // Task 2 needed a second round; task 3's stray file never reached main.
    let task2 = git(&dir, &["log", "--format=%B", "--grep=Breeze-Task: 2$", "main"]);
    assert!(task2.contains("Breeze-Review: APPROVE (round 2)"), "{task2}");
    assert!(!dir.join("notes/scratch.md").exists());
    assert!(
        git(&dir, &["ls-tree", "-r", "--name-only", "main"])
            .lines()
            .all(|p| !p.starts_with("notes/"))
    );

    git(&dir, &["fsck", "--strict"]);
    assert_eq!(git(&dir, &["status", "--porcelain"]), "", "the user's checkout stays clean");
    // The lanes stay for the next run, each parked (detached) at main's tip, and so do the
    // reviewer's and the Advisor's checkouts.
    let worktrees = git(&dir, &["worktree", "list", "--porcelain"]);
    let main_tip = git(&dir, &["rev-parse", "main"]);
    let lanes: Vec<&str> =
        worktrees.split("\n\n").skip(1).filter(|w| !w.trim().is_empty()).collect();
    assert!(!lanes.is_empty(), "{worktrees}");
    for lane in lanes {
        assert!(lane.contains("detached"), "a lane is parked detached: {worktrees}");
        assert!(lane.contains(&format!("HEAD {}", main_tip.trim())), "at main's tip: {worktrees}");
    }
    let branches = git(&dir, &["branch", "--list", "task/*"]);
    assert_eq!(branches.trim(), "", "landed task branches are deleted");

    let status = status_json(&dir);
    assert_eq!(status["schema_version"], "breeze-status.v1");
    assert_eq!(status["state"], "succeeded");
    assert!(status["tasks"].as_array().unwrap().iter().all(|t| t["state"] == "landed"), "{status}");
}

#[test]
fn demo_refuses_a_non_empty_directory() {
    let temp = tempfile::tempdir().unwrap();
    std::fs::write(temp.path().join("keep.txt"), "mine").unwrap();
    let output = run_in(temp.path(), &["demo", "--dir", temp.path().to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", both(&output));
    assert!(crate::support::stderr(&output).contains("is not empty"));
    assert_eq!(std::fs::read_to_string(temp.path().join("keep.txt")).unwrap(), "mine");
}
