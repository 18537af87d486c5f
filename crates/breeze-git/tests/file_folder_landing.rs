//! Issue 23's plan landed at library level, as the engine lands it: task A turns the folder
//! `d/` into a file `d`, task B adds `d/three`, both from the same base. Whichever lands
//! second conflicts; main keeps the first landing whole and nothing of the second; the
//! second goes back to its worktree with both sides' work in it, and lands once resolved.
//! Everything is checked with the git CLI.

mod common;

use std::path::Path;

use breeze_git::{AdvanceOutcome, MergeOutcome, Oid, Repo, Worktree, landing_message};
use common::{TestRepo, git, read, rev, worker_commit, write};

fn repo_with_folder_d() -> TestRepo {
    TestRepo::with_files(&[("d/one", "one\n"), ("d/two", "two\n"), ("keep", "keep\n")])
}

fn lane(repo: &TestRepo, handle: &Repo, name: &str) -> Worktree {
    handle
        .create_worktree(&format!("task-{name}"), &format!("task/{name}"), repo.main_tip(), "r")
        .unwrap()
}

/// Task A's work: the folder `d/` becomes the file (or link) `d`.
fn turn_d_into_a_file(wt: &Worktree, link: bool) -> Oid {
    std::fs::remove_dir_all(wt.path.join("d")).unwrap();
    if link {
        std::os::unix::fs::symlink("keep", wt.path.join("d")).unwrap();
    } else {
        write(&wt.path, "d", "d is a file now\n");
    }
    worker_commit(wt, "A: d is a file")
}

/// Task B's work: a new file in `d/`.
fn add_d_three(wt: &Worktree) -> Oid {
    write(&wt.path, "d/three", "three\n");
    worker_commit(wt, "B: d/three")
}

/// Merge, landing commit and compare-and-swap, as the engine lands; `None` on a conflict.
fn land(handle: &Repo, base: Oid, head: Oid, id: &str) -> Result<Oid, Vec<String>> {
    let onto = handle.main_tip().unwrap();
    match handle.merge_task(base, head, onto).unwrap() {
        MergeOutcome::Clean { tree } => {
            let message = landing_message(id, None, id, "run-1", 1);
            let commit = handle.write_landing_commit(tree, onto, head, &message).unwrap();
            let outcome = handle.advance_main(onto, commit).unwrap();
            assert!(matches!(outcome, AdvanceOutcome::Advanced { .. }), "{outcome:?}");
            Ok(commit)
        }
        MergeOutcome::Conflicts { paths } => Err(paths),
    }
}

/// `git ls-tree -r --format='%(objectmode) %(path)' main`, one line per entry.
fn main_entries(path: &Path) -> Vec<String> {
    git(path, &["ls-tree", "-r", "--format=%(objectmode) %(path)", "main"])
        .lines()
        .map(str::to_string)
        .collect()
}

/// The repository opened with libgit2 checkouts, or with the `git` CLI ones (large trees,
/// filters).
fn open(repo: &TestRepo, cli: bool) -> Repo {
    if cli { repo.open_cli() } else { repo.open() }
}

#[test]
fn a_file_landing_after_a_new_file_in_its_folder_goes_back_with_both_kept() {
    for cli in [false, true] {
        let repo = repo_with_folder_d();
        let handle = open(&repo, cli);
        file_after_new_file_in_its_folder(&repo, &handle);
    }
}

fn file_after_new_file_in_its_folder(repo: &TestRepo, handle: &Repo) {
    let (a, b) = (lane(repo, handle, "a"), lane(repo, handle, "b"));
    let head_a = turn_d_into_a_file(&a, false);
    let head_b = add_d_three(&b);

    land(handle, b.base, head_b, "B").unwrap();
    let after_b = repo.main_tip();
    let paths = land(handle, a.base, head_a, "A").unwrap_err();
    assert_eq!(paths, ["d", "d/three"]);
    // main holds B whole and nothing of A.
    assert_eq!(repo.main_tip(), after_b);
    assert_eq!(
        main_entries(repo.path()),
        ["100644 d/one", "100644 d/three", "100644 d/two", "100644 keep"]
    );
    assert_eq!(repo.status(), "");

    // A goes back: main's `d/three` in place, A's deletions applied, A's file kept beside
    // it as `d~task_a`; the worker is told every path.
    let rebased = handle.rebase_worktree_with_conflicts(&a, a.base, head_a, after_b).unwrap();
    assert_eq!(rebased.conflicts, ["d", "d/three", "d~task_a"]);
    assert_eq!(rev(&a.path, "HEAD"), after_b);
    assert_eq!(read(&a.path, "d/three"), "three\n");
    assert_eq!(read(&a.path, "d~task_a"), "d is a file now\n");
    assert!(!a.path.join("d/one").exists() && !a.path.join("d/two").exists());
    let status = git(&a.path, &["status", "--porcelain", "--untracked-files=all"]);
    assert_eq!(status.lines().collect::<Vec<_>>(), ["D  d/one", "D  d/two", "UA d~task_a"]);

    // The worker folds B's file into its own and commits; A lands.
    std::fs::remove_dir_all(a.path.join("d")).unwrap();
    std::fs::rename(a.path.join("d~task_a"), a.path.join("d")).unwrap();
    write(&a.path, "d", "d is a file now\nthree\n");
    let resolved = handle.commit_worktree(&rebased.worktree, "resolve").unwrap().head();
    land(handle, rebased.worktree.base, resolved, "A").unwrap();
    assert_eq!(main_entries(repo.path()), ["100644 d", "100644 keep"]);
    assert_eq!(git(repo.path(), &["show", "main:d"]), "d is a file now\nthree");
    repo.fsck();
}

#[test]
fn a_new_file_landing_after_its_folder_became_a_link_goes_back_with_both_kept() {
    for cli in [false, true] {
        let repo = repo_with_folder_d();
        let handle = open(&repo, cli);
        new_file_after_its_folder_became_a_link(&repo, &handle);
    }
}

fn new_file_after_its_folder_became_a_link(repo: &TestRepo, handle: &Repo) {
    let (a, b) = (lane(repo, handle, "a"), lane(repo, handle, "b"));
    let head_a = turn_d_into_a_file(&a, true);
    let head_b = add_d_three(&b);

    land(handle, a.base, head_a, "A").unwrap();
    let after_a = repo.main_tip();
    let paths = land(handle, b.base, head_b, "B").unwrap_err();
    assert_eq!(paths, ["d", "d/three"]);
    assert_eq!(repo.main_tip(), after_a);
    assert_eq!(main_entries(repo.path()), ["120000 d", "100644 keep"]);

    // B goes back: its `d/three` keeps its place, main's link `d` is kept as `d~main`.
    let rebased = handle.rebase_worktree_with_conflicts(&b, b.base, head_b, after_a).unwrap();
    assert_eq!(rebased.conflicts, ["d", "d/three", "d~main"]);
    assert_eq!(read(&b.path, "d/three"), "three\n");
    assert_eq!(std::fs::read_link(b.path.join("d~main")).unwrap(), Path::new("keep"));
    let status = git(&b.path, &["status", "--porcelain", "--untracked-files=all"]);
    assert_eq!(status.lines().collect::<Vec<_>>(), ["D  d", "A  d/three", "AU d~main"]);

    // The worker keeps main's link and moves its file next to it; B lands.
    std::fs::rename(b.path.join("d/three"), b.path.join("three")).unwrap();
    std::fs::remove_dir(b.path.join("d")).unwrap();
    std::fs::rename(b.path.join("d~main"), b.path.join("d")).unwrap();
    let resolved = handle.commit_worktree(&rebased.worktree, "resolve").unwrap().head();
    land(handle, rebased.worktree.base, resolved, "B").unwrap();
    assert_eq!(main_entries(repo.path()), ["120000 d", "100644 keep", "100644 three"]);
    assert_eq!(git(repo.path(), &["show", "main:three"]), "three");
    repo.fsck();
}

#[test]
fn a_file_main_edited_and_the_task_made_a_folder_goes_back_with_both_kept() {
    // libgit2 reports this one itself (main edited `d`, the task deleted it) and the check
    // adds the folder: the task's `d/three` keeps its place, main's edited `d` is kept
    // beside it.
    for cli in [false, true] {
        let repo = TestRepo::with_files(&[("d", "d\n"), ("keep", "keep\n")]);
        let handle = open(&repo, cli);
        let task = lane(&repo, &handle, "t");
        std::fs::remove_file(task.path.join("d")).unwrap();
        let head = add_d_three(&task);
        let onto = repo.commit_on_main(&[("d", "d, edited on main\n")], "main edits d");
        assert_eq!(land(&handle, task.base, head, "T").unwrap_err(), ["d", "d/three"]);
        assert_eq!(repo.main_tip(), onto);

        let rebased = handle.rebase_worktree_with_conflicts(&task, task.base, head, onto).unwrap();
        assert_eq!(rebased.conflicts, ["d", "d/three", "d~main"]);
        assert_eq!(read(&task.path, "d/three"), "three\n");
        assert_eq!(read(&task.path, "d~main"), "d, edited on main\n");
        let status = git(&task.path, &["status", "--porcelain", "--untracked-files=all"]);
        assert_eq!(status.lines().collect::<Vec<_>>(), ["D  d", "A  d/three", "AU d~main"]);

        // The worker keeps main's text inside its folder; the task lands.
        std::fs::rename(task.path.join("d~main"), task.path.join("d/main-text")).unwrap();
        let resolved = handle.commit_worktree(&rebased.worktree, "resolve").unwrap().head();
        land(&handle, rebased.worktree.base, resolved, "T").unwrap();
        assert_eq!(
            main_entries(repo.path()),
            ["100644 d/main-text", "100644 d/three", "100644 keep"]
        );
        assert_eq!(git(repo.path(), &["show", "main:d/main-text"]), "d, edited on main");
        repo.fsck();
    }
}
