//! The user's checkout of main: fast-forwarded when clean, never overwritten when dirty.

use crate::support::{
    SCRIPTED_CONFIG, both, breeze, git, repo_with, status_json, stdout, task_state, write,
};

const PLAN: &str = r#"
[[task]]
id = "1"
title = "Touch a"
dod = "a.txt has a new line"
writes = ["src/a.txt"]

[[task]]
id = "2"
title = "Touch b"
dod = "b.txt has a new line"
writes = ["src/b.txt"]
"#;

fn files() -> Vec<(&'static str, &'static str)> {
    vec![
        ("breeze.toml", SCRIPTED_CONFIG),
        ("plan.toml", PLAN),
        ("src/a.txt", "a\n"),
        ("src/b.txt", "b\n"),
    ]
}

#[test]
fn a_clean_checkout_of_main_is_fast_forwarded_and_stays_clean() {
    let (_temp, root) = repo_with(&files());
    write(&root, "scratch/untracked.txt", "mine");
    let output = breeze().current_dir(&root).args(["run"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert_eq!(
        git(&root, &["status", "--porcelain"]),
        "?? scratch/\n",
        "only the user's untracked file"
    );
    assert_eq!(std::fs::read_to_string(root.join("scratch/untracked.txt")).unwrap(), "mine");
    let a = std::fs::read_to_string(root.join("src/a.txt")).unwrap();
    assert!(
        a.starts_with("a\n") && a.contains("task 1"),
        "the working tree has the landed change: {a}"
    );
    assert_eq!(git(&root, &["diff", "HEAD", "--stat"]), "");
}

#[test]
fn a_dirty_touched_path_defers_the_landing_and_resume_finishes_after_a_stash() {
    let (_temp, root) = repo_with(&files());
    write(&root, "src/a.txt", "a\nmy uncommitted edit\n");
    let output = breeze().current_dir(&root).args(["run"]).output().unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", both(&output));
    let text = stdout(&output);
    assert!(text.contains("src/a.txt"), "names the file: {text}");
    assert!(
        text.contains("commit or stash") && text.contains("breeze resume"),
        "says what to do: {text}"
    );
    // Never overwritten; the other task went on and landed.
    assert_eq!(
        std::fs::read_to_string(root.join("src/a.txt")).unwrap(),
        "a\nmy uncommitted edit\n"
    );
    // It waits for a clean checkout: a person's to give.
    let status = status_json(&root);
    assert_eq!(status["state"], "waiting", "{status}");
    assert_eq!(status["waiting"][0]["waiting_for"], "checkout", "{status}");
    assert_eq!(task_state(&status, "1"), "deferred");
    assert_eq!(task_state(&status, "2"), "landed");

    git(&root, &["stash"]);
    let resumed = breeze().current_dir(&root).args(["resume"]).output().unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    let status = status_json(&root);
    assert_eq!(status["state"], "succeeded");
    assert_eq!(task_state(&status, "1"), "landed");
    let landed = git(&root, &["log", "--format=%(trailers:key=Breeze-Task,valueonly)", "main"]);
    assert_eq!(landed.lines().filter(|l| *l == "1").count(), 1, "landed exactly once: {landed}");
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
    git(&root, &["fsck", "--strict"]);
}

#[test]
fn a_repository_mid_merge_is_refused() {
    let (_temp, root) = repo_with(&files());
    git(&root, &["checkout", "-q", "-b", "side"]);
    write(&root, "src/a.txt", "side\n");
    git(&root, &["commit", "-qam", "side"]);
    git(&root, &["checkout", "-q", "main"]);
    write(&root, "src/a.txt", "main\n");
    git(&root, &["commit", "-qam", "main"]);
    let merge = breeze_test_support::git_output(&root, &["merge", "side"]);
    assert!(!merge.status.success(), "the merge conflicts");
    let output = breeze().current_dir(&root).args(["run"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", both(&output));
    assert!(crate::support::stderr(&output).to_lowercase().contains("merge"), "{}", both(&output));
}

#[test]
fn an_uncommitted_tracked_plans_md_is_refused_up_front() {
    let plans = "| Task | Content | DoD | Writes | Depends | Status |\n|---|---|---|---|---|---|\n| 1 | Touch a | a | `src/a.txt` | - | cc:todo |\n";
    let (_temp, root) =
        repo_with(&[("breeze.toml", SCRIPTED_CONFIG), ("Plans.md", plans), ("src/a.txt", "a\n")]);
    write(&root, "Plans.md", &format!("{plans}| 2 | Touch b | b | `src/b.txt` | - | cc:todo |\n"));
    let output = breeze().current_dir(&root).args(["run", "Plans.md"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", both(&output));
    let err = crate::support::stderr(&output);
    assert!(
        err.contains("Plans.md has uncommitted changes") && err.contains("git commit Plans.md"),
        "{err}"
    );
    git(&root, &["commit", "-qam", "plan two tasks"]);
    let output = breeze().current_dir(&root).args(["run", "Plans.md"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let plan = git(&root, &["show", "main:Plans.md"]);
    assert_eq!(plan.matches("cc:done").count(), 2, "{plan}");
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
}
