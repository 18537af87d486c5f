//! Landing on main: in-memory merge, landing commit, compare-and-swap with a safe
//! fast-forward of the user's checkout, conflicts sent back to the worktree, resume lookup.

mod common;

use breeze_git::{AdvanceOutcome, GitError, MergeOutcome, Oid, Repo, Worktree, landing_message};
use common::{TestRepo, git, git_output, read, rev, write};

fn task(repo: &TestRepo, handle: &Repo, name: &str) -> Worktree {
    handle
        .create_worktree(&format!("task-{name}"), &format!("task/{name}"), repo.main_tip(), "r")
        .unwrap()
}

/// The worker commits as itself.
fn worker_commits(wt: &Worktree, files: &[(&str, &str)]) -> Oid {
    for (path, content) in files {
        write(&wt.path, path, content);
        git(&wt.path, &["add", "-f", "--", path]); // -f: a task may add a file the user ignores
    }
    git(
        &wt.path,
        &[
            "-c",
            "user.name=Worker Bee",
            "-c",
            "user.email=worker@example.com",
            "commit",
            "-q",
            "-m",
            "work",
        ],
    );
    rev(&wt.path, "HEAD")
}

/// merge → landing commit → advance, as the engine does; returns the landing commit.
fn land(handle: &Repo, wt: &Worktree, head: Oid, task_id: &str) -> (Oid, AdvanceOutcome) {
    let onto = handle.main_tip().unwrap();
    let MergeOutcome::Clean { tree } = handle.merge_task(wt.base, head, onto).unwrap() else {
        panic!("expected a clean merge")
    };
    let message = landing_message("add the thing", Some("Details."), task_id, "run-1", 2);
    let commit = handle.write_landing_commit(tree, onto, head, &message).unwrap();
    (commit, handle.advance_main(onto, commit).unwrap())
}

#[test]
fn clean_landing_fast_forwards_the_users_checkout_and_keeps_their_state() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let wt = task(&repo, &handle, "t1");
    let head = worker_commits(&wt, &[("src/a.rs", "fn a() { task }\n"), ("src/new.rs", "new\n")]);
    // Main moves on meanwhile (another landing, or the user).
    let onto = repo.commit_on_main(&[("src/b.rs", "fn b() { main }\n")], "user commit");

    // The user's own state: an untracked file, an unstaged edit and a staged edit,
    // none on the paths the landing touches.
    write(repo.path(), "scratch.txt", "mine\n");
    write(repo.path(), "docs/guide.md", "guide, edited\n");
    write(repo.path(), "README.md", "# demo, staged\n");
    repo.git(&["add", "README.md"]);
    let status_before = repo.status();

    let (commit, outcome) = land(&handle, &wt, head, "1.1");
    let canonical = std::fs::canonicalize(repo.path()).unwrap();
    assert_eq!(outcome, AdvanceOutcome::Advanced { updated_checkouts: vec![canonical] });
    assert_eq!(repo.main_tip(), commit);
    assert_eq!(rev(repo.path(), "HEAD~1"), onto);
    assert_eq!(repo.status(), status_before, "git status must stay as the user left it");
    assert_eq!(read(repo.path(), "src/a.rs"), "fn a() { task }\n");
    assert_eq!(read(repo.path(), "src/new.rs"), "new\n");
    assert_eq!(read(repo.path(), "src/b.rs"), "fn b() { main }\n");
    assert_eq!(read(repo.path(), "scratch.txt"), "mine\n");
    assert_eq!(read(repo.path(), "docs/guide.md"), "guide, edited\n");

    let log = repo.git(&["log", "-1", "--format=%an <%ae>|%cn <%ce>|%s"]);
    assert_eq!(
        log,
        "Worker Bee <worker@example.com>|Repo Owner <owner@example.com>|feat: add the thing"
    );
    let trailers = repo.git(&["log", "-1", "--format=%(trailers:only,unfold)"]);
    assert_eq!(trailers, "Breeze-Task: 1.1\nBreeze-Run: run-1\nBreeze-Review: APPROVE (round 2)");
    let changed = repo.git(&["diff", "--name-only", "HEAD~1", "HEAD"]);
    assert_eq!(changed, "src/a.rs\nsrc/new.rs", "the landing carries only the task's change");
    let reflog = repo.git(&["reflog", "-1", "--format=%gs", "refs/heads/main"]);
    assert!(reflog.starts_with("breeze: land"), "{reflog}");
    repo.fsck();
}

#[test]
fn conflicts_are_reported_as_paths_and_nothing_moves() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let wt = task(&repo, &handle, "c");
    let head = worker_commits(
        &wt,
        &[("src/a.rs", "fn a() { task }\n"), ("src/b.rs", "fn b() { task }\n")],
    );
    let onto = repo.commit_on_main(&[("src/a.rs", "fn a() { main }\n")], "main edits a");
    let outcome = handle.merge_task(wt.base, head, onto).unwrap();
    assert_eq!(outcome, MergeOutcome::Conflicts { paths: vec!["src/a.rs".into()] });
    assert_eq!(repo.main_tip(), onto);
    assert_eq!(repo.status(), "");
}

#[test]
fn dirty_touched_paths_defer_the_landing_without_touching_anything() {
    type MakeDirty = fn(&TestRepo);
    let cases: [(&str, MakeDirty); 4] = [
        ("unstaged edit", |r| write(r.path(), "src/a.rs", "user edit\n")),
        ("staged edit", |r| {
            write(r.path(), "src/a.rs", "user staged\n");
            r.git(&["add", "src/a.rs"]);
        }),
        ("untracked file in the way", |r| write(r.path(), "src/new.rs", "user's own new.rs\n")),
        ("ignored file in the way", |r| {
            write(r.path(), "src/new.rs.log", "ignored but precious\n");
        }),
    ];
    for (label, make_dirty) in cases {
        let repo = TestRepo::standard();
        let handle = repo.open();
        let wt = task(&repo, &handle, "d");
        let blocked_path = if label.starts_with("ignored") {
            "src/new.rs.log"
        } else if label.starts_with("untracked") {
            "src/new.rs"
        } else {
            "src/a.rs"
        };
        let head = worker_commits(
            &wt,
            &[("src/a.rs", "fn a() { task }\n"), (blocked_path, "from the task\n")],
        );
        make_dirty(&repo);
        let before_status = repo.status();
        let before_content = std::fs::read(repo.path().join(blocked_path)).unwrap();
        let tip = repo.main_tip();

        let onto = handle.main_tip().unwrap();
        let MergeOutcome::Clean { tree } = handle.merge_task(wt.base, head, onto).unwrap() else {
            panic!()
        };
        let commit = handle
            .write_landing_commit(tree, onto, head, &landing_message("t", None, "d", "r", 1))
            .unwrap();
        let outcome = handle.advance_main(onto, commit).unwrap();
        match outcome {
            AdvanceOutcome::Deferred { checkout, paths } => {
                assert_eq!(checkout, std::fs::canonicalize(repo.path()).unwrap(), "{label}");
                assert_eq!(paths, vec![blocked_path.to_string()], "{label}");
            }
            other => panic!("{label}: expected Deferred, got {other:?}"),
        }
        assert_eq!(repo.main_tip(), tip, "{label}: main must not move");
        assert_eq!(repo.status(), before_status, "{label}");
        assert_eq!(
            std::fs::read(repo.path().join(blocked_path)).unwrap(),
            before_content,
            "{label}"
        );

        // Once the user commits or stashes, the same landing goes through.
        if label.starts_with("ignored") || label.starts_with("untracked") {
            std::fs::remove_file(repo.path().join(blocked_path)).unwrap();
        } else {
            repo.git(&["stash", "-q"]);
        }
        assert!(
            matches!(handle.advance_main(onto, commit).unwrap(), AdvanceOutcome::Advanced { .. }),
            "{label}"
        );
        assert_eq!(repo.status(), "", "{label}");
    }
}

#[test]
fn a_concurrent_move_of_main_is_detected_never_overwritten() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let wt = task(&repo, &handle, "race");
    let head = worker_commits(&wt, &[("src/a.rs", "fn a() { task }\n")]);
    let onto = handle.main_tip().unwrap();
    let MergeOutcome::Clean { tree } = handle.merge_task(wt.base, head, onto).unwrap() else {
        panic!()
    };
    let commit = handle
        .write_landing_commit(tree, onto, head, &landing_message("t", None, "race", "r", 1))
        .unwrap();

    let moved = repo.commit_on_main(&[("docs/guide.md", "user moved main\n")], "concurrent");
    assert_eq!(handle.advance_main(onto, commit).unwrap(), AdvanceOutcome::Raced { actual: moved });
    assert_eq!(repo.main_tip(), moved);
    assert_eq!(repo.status(), "");

    // The engine re-merges onto the new tip and retries.
    let MergeOutcome::Clean { tree } = handle.merge_task(wt.base, head, moved).unwrap() else {
        panic!()
    };
    let commit = handle
        .write_landing_commit(tree, moved, head, &landing_message("t", None, "race", "r", 1))
        .unwrap();
    assert!(matches!(handle.advance_main(moved, commit).unwrap(), AdvanceOutcome::Advanced { .. }));
    assert_eq!(read(repo.path(), "docs/guide.md"), "user moved main\n");
    assert_eq!(read(repo.path(), "src/a.rs"), "fn a() { task }\n");

    // Not a descendant: refused.
    let err = handle.advance_main(commit, onto).unwrap_err();
    assert!(matches!(err, GitError::NotFastForward { .. }), "{err}");
}

#[test]
fn a_locked_main_ref_puts_the_checkout_back() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let wt = task(&repo, &handle, "lock");
    let head = worker_commits(&wt, &[("src/a.rs", "fn a() { task }\n")]);
    let onto = handle.main_tip().unwrap();
    let MergeOutcome::Clean { tree } = handle.merge_task(wt.base, head, onto).unwrap() else {
        panic!()
    };
    let commit = handle
        .write_landing_commit(tree, onto, head, &landing_message("t", None, "lock", "r", 1))
        .unwrap();
    let lock = repo.path().join(".git/refs/heads/main.lock");
    std::fs::write(&lock, "").unwrap();
    let err = handle.advance_main(onto, commit).unwrap_err();
    assert!(matches!(err, GitError::Locked { .. }), "{err}");
    assert_eq!(repo.main_tip(), onto);
    assert_eq!(read(repo.path(), "src/a.rs"), "fn a() {}\n", "checkout restored");
    assert_eq!(repo.status(), "");
    std::fs::remove_file(&lock).unwrap();
    assert!(matches!(handle.advance_main(onto, commit).unwrap(), AdvanceOutcome::Advanced { .. }));
}

#[test]
fn main_not_checked_out_or_checked_out_in_a_linked_worktree() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    repo.git(&["switch", "-q", "-c", "user-branch"]);
    let wt = task(&repo, &handle, "n");
    let head = worker_commits(&wt, &[("src/a.rs", "fn a() { task }\n")]);
    let (commit, outcome) = land(&handle, &wt, head, "n");
    assert_eq!(outcome, AdvanceOutcome::Advanced { updated_checkouts: vec![] });
    assert_eq!(repo.main_tip(), commit);
    assert_eq!(read(repo.path(), "src/a.rs"), "fn a() {}\n", "the user's branch is not touched");
    assert_eq!(repo.status(), "");

    // main checked out in the user's linked worktree: that one is fast-forwarded.
    let elsewhere = tempfile::tempdir().unwrap();
    let linked = elsewhere.path().join("main-wt");
    repo.git(&["worktree", "add", "-q", linked.to_str().unwrap(), "main"]);
    let wt2 = handle.create_worktree("task-m", "task/m", commit, "r").unwrap();
    let head2 = worker_commits(&wt2, &[("src/b.rs", "fn b() { task two }\n")]);
    let (commit2, outcome) = land(&handle, &wt2, head2, "m");
    assert_eq!(
        outcome,
        AdvanceOutcome::Advanced {
            updated_checkouts: vec![std::fs::canonicalize(&linked).unwrap()]
        }
    );
    assert_eq!(rev(&linked, "HEAD"), commit2);
    assert_eq!(read(&linked, "src/b.rs"), "fn b() { task two }\n");
    assert_eq!(git(&linked, &["status", "--porcelain"]), "");
}

#[test]
fn a_checkout_mid_merge_is_refused() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let wt = task(&repo, &handle, "mm");
    let head = worker_commits(&wt, &[("src/b.rs", "fn b() { task }\n")]);
    repo.git(&["switch", "-q", "-c", "side"]);
    repo.commit_on_main(&[("src/a.rs", "side\n")], "side");
    repo.git(&["switch", "-q", "main"]);
    let onto = repo.commit_on_main(&[("src/a.rs", "main\n")], "main");
    assert!(!git_output(repo.path(), &["merge", "side"]).status.success());

    let MergeOutcome::Clean { tree } = handle.merge_task(wt.base, head, onto).unwrap() else {
        panic!()
    };
    let commit = handle
        .write_landing_commit(tree, onto, head, &landing_message("t", None, "mm", "r", 1))
        .unwrap();
    let err = handle.advance_main(onto, commit).unwrap_err();
    assert!(matches!(err, GitError::MidOperation { operation: "merge", .. }), "{err}");
    assert_eq!(repo.main_tip(), onto);
    assert!(repo.path().join(".git/MERGE_HEAD").exists(), "the user's merge state is untouched");
}

#[test]
fn plans_md_row_is_flipped_in_the_landing_commit() {
    let plans = "| Task | Content | DoD | Depends | Status |\n|---|---|---|---|---|\n| 1 | a | d | - | cc:wip |\n";
    let repo = TestRepo::with_files(&[("Plans.md", plans), ("src/a.rs", "a\n")]);
    let handle = repo.open();
    let wt = task(&repo, &handle, "p");
    let head = worker_commits(&wt, &[("src/a.rs", "task a\n")]);
    let onto = handle.main_tip().unwrap();
    let MergeOutcome::Clean { tree } = handle.merge_task(wt.base, head, onto).unwrap() else {
        panic!()
    };
    let text = String::from_utf8(handle.read_blob_at(tree, "Plans.md").unwrap().unwrap()).unwrap();
    let flipped = handle
        .replace_in_tree(tree, "Plans.md", text.replace("cc:wip", "cc:done").as_bytes())
        .unwrap();
    assert_eq!(handle.read_blob_at(flipped, "missing.md").unwrap(), None);
    assert!(matches!(handle.read_blob_at(flipped, "src"), Err(GitError::BadPath { .. })));
    assert!(matches!(handle.replace_in_tree(flipped, "src", b"x"), Err(GitError::BadPath { .. })));
    assert!(matches!(handle.replace_in_tree(flipped, "../x", b"x"), Err(GitError::BadPath { .. })));
    let commit = handle
        .write_landing_commit(flipped, onto, head, &landing_message("p", None, "1", "r", 1))
        .unwrap();
    assert!(matches!(handle.advance_main(onto, commit).unwrap(), AdvanceOutcome::Advanced { .. }));
    assert!(repo.git(&["show", "HEAD:Plans.md"]).contains("| 1 | a | d | - | cc:done |"));
    assert_eq!(repo.git(&["diff", "--name-only", "HEAD~1", "HEAD"]), "Plans.md\nsrc/a.rs");
    assert_eq!(repo.status(), "");
}

#[test]
fn conflicted_task_goes_back_to_its_worktree_with_markers() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let wt = task(&repo, &handle, "x");
    let head = worker_commits(
        &wt,
        &[
            ("src/a.rs", "fn a() { task }\n"),
            ("src/b.rs", "fn b() { task }\n"),
            ("src/c.rs", "c\n"),
        ],
    );
    let onto = repo.commit_on_main(
        &[("src/a.rs", "fn a() { main }\n"), ("docs/guide.md", "main guide\n")],
        "main",
    );
    assert!(matches!(
        handle.merge_task(wt.base, head, onto).unwrap(),
        MergeOutcome::Conflicts { .. }
    ));

    let rebased = handle.rebase_worktree_with_conflicts(&wt, wt.base, head, onto).unwrap();
    assert_eq!(rebased.conflicts, vec!["src/a.rs"]);
    assert_eq!(rebased.worktree.base, onto);
    assert_eq!(rev(&wt.path, "HEAD"), onto);
    assert_eq!(git(&wt.path, &["symbolic-ref", "HEAD"]), "refs/heads/task/x");
    let status = git(&wt.path, &["status", "--porcelain"]);
    assert_eq!(
        status.lines().collect::<Vec<_>>(),
        vec!["UU src/a.rs", "M  src/b.rs", "A  src/c.rs"]
    );
    let text = read(&wt.path, "src/a.rs");
    assert!(
        text.contains("<<<<<<< main\nfn a() { main }\n=======\nfn a() { task }\n>>>>>>> task/x\n"),
        "{text}"
    );
    assert_eq!(read(&wt.path, "docs/guide.md"), "main guide\n");

    // Not resolved yet: committing refuses and names the file.
    let err = handle.commit_worktree(&rebased.worktree, "resolve").unwrap_err();
    assert!(matches!(err, GitError::UnresolvedConflicts { .. }), "{err}");
    assert!(err.to_string().contains("src/a.rs"), "{err}");

    // The worker resolves (without `git add`); the engine commits on the new base.
    write(&wt.path, "src/a.rs", "fn a() { main and task }\n");
    let new_head = handle.commit_worktree(&rebased.worktree, "resolve").unwrap().head();
    assert_eq!(rev(&wt.path, "HEAD~1"), onto);
    let (commit, outcome) = land(&handle, &rebased.worktree, new_head, "x");
    assert!(matches!(outcome, AdvanceOutcome::Advanced { .. }));
    assert_eq!(repo.main_tip(), commit);
    assert_eq!(read(repo.path(), "src/a.rs"), "fn a() { main and task }\n");
    assert_eq!(read(repo.path(), "src/c.rs"), "c\n");
    assert_eq!(repo.status(), "");
    repo.fsck();
}

#[test]
fn find_landing_recognizes_a_landed_task_by_its_trailers() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let start = repo.main_tip();
    let wt = task(&repo, &handle, "f");
    let head = worker_commits(&wt, &[("src/a.rs", "fn a() { f }\n")]);
    let (commit, _) = land(&handle, &wt, head, "4.2");
    repo.commit_on_main(&[("docs/guide.md", "later\n")], "later user commit\n\nBreeze-Task: 4.2");

    assert_eq!(handle.find_landing("run-1", "4.2", Some(start)).unwrap(), Some(commit));
    assert_eq!(handle.find_landing("run-1", "4.2", None).unwrap(), Some(commit));
    assert_eq!(handle.find_landing("run-2", "4.2", None).unwrap(), None);
    assert_eq!(handle.find_landing("run-1", "4.20", None).unwrap(), None);
    assert_eq!(
        handle.find_landing("run-1", "4.2", Some(commit)).unwrap(),
        None,
        "stops before stop_at"
    );
}

#[test]
fn a_batch_of_landings_chained_in_memory_moves_main_once_and_keeps_each_commit() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let start = repo.main_tip();
    let one = task(&repo, &handle, "one");
    let one_head = worker_commits(&one, &[("src/a.rs", "fn a() { one }\n")]);
    let two = task(&repo, &handle, "two");
    let two_head = worker_commits(&two, &[("src/b.rs", "fn b() { two }\n")]);

    // Each task merged onto the previous landing commit, none of them on main yet.
    let mut parent = start;
    for (wt, head, id) in [(&one, one_head, "1"), (&two, two_head, "2")] {
        let MergeOutcome::Clean { tree } = handle.merge_task(wt.base, head, parent).unwrap() else {
            panic!("expected a clean merge")
        };
        let message = landing_message("batched", None, id, "run-1", 1);
        parent = handle.write_landing_commit(tree, parent, head, &message).unwrap();
        assert_eq!(handle.tree_of(parent).unwrap(), tree);
        assert_eq!(
            handle.tree_of(parent).unwrap(),
            rev(repo.path(), &format!("{parent}^{{tree}}"))
        );
        assert_eq!(repo.main_tip(), start, "nothing moves while the batch is built");
    }
    let canonical = std::fs::canonicalize(repo.path()).unwrap();
    assert_eq!(
        handle.advance_main(start, parent).unwrap(),
        AdvanceOutcome::Advanced { updated_checkouts: vec![canonical] }
    );
    let tasks = repo.git(&[
        "log",
        "--format=%(trailers:key=Breeze-Task,valueonly)",
        &format!("{start}..main"),
    ]);
    assert_eq!(tasks.split_whitespace().collect::<Vec<_>>(), ["2", "1"], "one commit per task");
    assert_eq!(read(repo.path(), "src/a.rs"), "fn a() { one }\n");
    assert_eq!(read(repo.path(), "src/b.rs"), "fn b() { two }\n");
    assert_eq!(repo.status(), "");
    repo.fsck();
}

#[test]
fn landing_message_keeps_trailers_parseable() {
    let message =
        landing_message("multi\nline  title", Some("\nbody\n"), "id\nwith newline", "run", 3);
    assert_eq!(
        message,
        "feat: multi line title\n\nbody\n\nBreeze-Task: id with newline\nBreeze-Run: run\nBreeze-Review: APPROVE (round 3)\n"
    );
}

#[test]
fn unresolved_conflicts_in_the_users_checkout_defer_the_landing() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let wt = task(&repo, &handle, "u");
    let head = worker_commits(&wt, &[("src/a.rs", "fn a() { task }\n")]);
    // The user's `git stash pop` conflicts on a file the landing does not touch.
    write(repo.path(), "docs/guide.md", "stashed edit\n");
    repo.git(&["stash", "-q"]);
    let onto = repo.commit_on_main(&[("docs/guide.md", "committed edit\n")], "user");
    assert!(!git_output(repo.path(), &["stash", "pop"]).status.success());
    assert!(repo.status().contains("UU docs/guide.md"));
    let status_before = repo.status();

    let MergeOutcome::Clean { tree } = handle.merge_task(wt.base, head, onto).unwrap() else {
        panic!()
    };
    let commit = handle
        .write_landing_commit(tree, onto, head, &landing_message("t", None, "u", "r", 1))
        .unwrap();
    match handle.advance_main(onto, commit).unwrap() {
        AdvanceOutcome::Deferred { paths, .. } => assert_eq!(paths, vec!["docs/guide.md"]),
        other => panic!("expected Deferred, got {other:?}"),
    }
    assert_eq!(repo.main_tip(), onto);
    assert_eq!(repo.status(), status_before);
}

#[test]
fn a_rename_conflict_goes_back_with_a_consistent_index() {
    let body = "line one\nline two\nline three\nline four\nline five\n";
    let repo = TestRepo::with_files(&[("src/old.rs", body), ("README.md", "r\n")]);
    let handle = repo.open();
    let wt = task(&repo, &handle, "ren");
    std::fs::create_dir_all(wt.path.join("lib")).unwrap();
    git(&wt.path, &["mv", "src/old.rs", "lib/new.rs"]);
    write(&wt.path, "lib/new.rs", &body.replace("line two", "line two (task)"));
    git(&wt.path, &["add", "-A"]);
    git(&wt.path, &["commit", "-q", "-m", "rename and edit"]);
    let head = rev(&wt.path, "HEAD");
    let onto = repo.commit_on_main(
        &[("src/old.rs", &body.replace("line two", "line two (main)"))],
        "main edit",
    );

    let rebased = handle.rebase_worktree_with_conflicts(&wt, wt.base, head, onto).unwrap();
    assert!(!rebased.conflicts.is_empty());
    // git can read the index and sees unmerged entries, and nothing else is broken.
    let unmerged = git(&wt.path, &["ls-files", "-u"]);
    assert!(!unmerged.is_empty(), "conflict stages recorded");
    for line in git(&wt.path, &["ls-files", "-s"]).lines() {
        let path = line.split('\t').nth(1).unwrap();
        let listing = git(&wt.path, &["ls-files", "-s", "--", path]);
        let stages: Vec<&str> =
            listing.lines().map(|l| l.split_whitespace().nth(2).unwrap()).collect();
        assert!(
            !(stages.contains(&"0") && stages.len() > 1),
            "{path} has stage 0 next to conflict stages: {stages:?}"
        );
    }
    // The worker resolves by keeping the rename with both edits.
    let _ = std::fs::remove_file(wt.path.join("src/old.rs"));
    write(&wt.path, "lib/new.rs", &body.replace("line two", "line two (main, task)"));
    let new_head = handle
        .commit_worktree_changed(&rebased.worktree, "resolved", breeze_git::WorkdirChanges::Unknown)
        .unwrap()
        .head();
    assert_eq!(rev(&wt.path, "HEAD~1"), onto);
    let files = git(repo.path(), &["ls-tree", "-r", "--name-only", &new_head.to_string()]);
    assert_eq!(files, "README.md\nlib/new.rs");
    // The index file still has the conflict the commit resolved (left behind HEAD): another
    // process's breeze puts it right, and git agrees once it is written.
    let fresh = repo.open();
    assert!(!fresh.is_worktree_dirty(&wt.path).unwrap());
    fresh.settle_lane_index(&rebased.worktree).unwrap();
    assert_eq!(git(&wt.path, &["status", "--porcelain"]), "");
    repo.fsck();
}

#[test]
fn is_tracked_on_main_looks_at_the_main_tip() {
    let repo = TestRepo::with_files(&[("Plans.md", "plan\n"), ("docs/x.md", "x\n")]);
    let handle = repo.open();
    assert!(handle.is_tracked_on_main("Plans.md").unwrap());
    assert!(handle.is_tracked_on_main("docs/x.md").unwrap());
    assert!(!handle.is_tracked_on_main("docs").unwrap(), "a directory is not a tracked file");
    assert!(!handle.is_tracked_on_main("missing.md").unwrap());
    write(repo.path(), "new.md", "untracked\n");
    assert!(!handle.is_tracked_on_main("new.md").unwrap());
}

#[test]
fn a_half_done_fast_forward_of_a_killed_landing_is_finished_by_the_next_one() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let wt = task(&repo, &handle, "t1");
    let files: Vec<(String, String)> =
        (0..20).map(|i| (format!("src/gen{i}.rs"), format!("// {i}\n"))).collect();
    let mut all: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
    all.push(("src/a.rs", "fn a() { task }\n"));
    let head = worker_commits(&wt, &all);
    let onto = handle.main_tip().unwrap();
    let MergeOutcome::Clean { tree } = handle.merge_task(wt.base, head, onto).unwrap() else {
        panic!("expected a clean merge")
    };
    // The engine was killed half-way through writing the checkout: some files are there
    // (one even staged, as after libgit2's index write), the rest not, main not moved.
    for (path, content) in &files[..7] {
        write(repo.path(), path, content);
    }
    write(repo.path(), "src/a.rs", "fn a() { task }\n");
    git(repo.path(), &["add", "src/gen0.rs"]);
    // A user's own edit elsewhere stays as it is.
    write(repo.path(), "docs/guide.md", "guide, edited\n");

    // The resumed run writes its landing commit again (a new commit, the same tree).
    let message = landing_message("add the thing", None, "t1", "run-1", 1);
    let commit = handle.write_landing_commit(tree, onto, head, &message).unwrap();
    let outcome = handle.advance_main(onto, commit).unwrap();
    assert!(matches!(outcome, AdvanceOutcome::Advanced { .. }), "{outcome:?}");
    assert_eq!(repo.main_tip(), commit);
    assert_eq!(repo.status(), " M docs/guide.md", "only the user's own edit is left");
    assert_eq!(read(repo.path(), "src/gen19.rs"), "// 19\n");
    repo.fsck();
}

#[test]
fn the_files_at_a_trees_root_are_listed_without_its_folders_and_links() {
    let repo = TestRepo::with_files(&[
        ("CHANGES.rst", "Version 1.0\n-----------\n"),
        ("docs/CHANGELOG.md", "# Changelog\n"),
        ("run.sh", "#!/bin/sh\n"),
    ]);
    std::os::unix::fs::symlink("CHANGES.rst", repo.path().join("NEWS")).unwrap();
    repo.git(&["update-index", "--chmod=+x", "run.sh"]);
    repo.git(&["add", "NEWS"]);
    repo.git(&["commit", "-q", "-m", "link"]);
    let handle = repo.open();
    let names = handle.root_file_names(handle.main_tip().unwrap()).unwrap();
    assert!(names.contains(&"CHANGES.rst".to_string()), "{names:?}");
    assert!(names.contains(&"run.sh".to_string()), "an executable file is a file: {names:?}");
    assert!(!names.contains(&"docs".to_string()), "a folder is not listed: {names:?}");
    assert!(!names.contains(&"NEWS".to_string()), "a link is not listed: {names:?}");
}
