//! Task and lane worktrees: creation (both checkout paths), idempotency, rollback, moving,
//! listing, removal and the integration worktree, checked with the git CLI.

mod common;

use std::os::unix::fs::MetadataExt as _;

use breeze_git::WorkdirChanges;
use breeze_git::WorkdirChanges::Unknown;
use breeze_git::{GitError, Oid, RemoveOutcome, Repo, Worktree, slug};
use common::{TestRepo, block_for, git, git_output, read, rev, worker_commit, write};

fn create_and_check(repo: &TestRepo, handle: &Repo) {
    let base = repo.main_tip();
    let s = slug("1.2");
    let wt = handle
        .create_worktree(&format!("task-{s}"), &format!("task/{s}"), base, "breeze run r1 task 1.2")
        .unwrap();
    assert_eq!(wt.path, repo.worktree("task-1.2"));
    assert!(!wt.path.starts_with(repo.path()), "outside the checkout: {}", wt.path.display());
    assert_eq!(wt.branch, "task/1.2");
    assert_eq!(wt.base, base);

    let block = block_for(repo.path(), &wt.path).expect("git worktree list shows it");
    assert!(block.contains(&format!("HEAD {base}")), "{block:?}");
    assert!(block.contains(&"branch refs/heads/task/1.2".to_string()), "{block:?}");
    assert!(block.contains(&"locked breeze run r1 task 1.2".to_string()), "{block:?}");
    assert_eq!(git(&wt.path, &["status", "--porcelain"]), "");
    assert_eq!(read(&wt.path, "src/a.rs"), "fn a() {}\n");
    // The user's checkout does not see the worktree root.
    assert_eq!(repo.status(), "");

    // Idempotent: same call, same worktree, nothing new.
    let again =
        handle.create_worktree("task-1.2", "task/1.2", base, "breeze run r1 task 1.2").unwrap();
    assert_eq!(again, wt);
    assert_eq!(common::worktree_list(repo.path()).len(), 2);
    repo.fsck();
}

#[test]
fn create_worktree_with_libgit2_checkout() {
    let repo = TestRepo::standard();
    create_and_check(&repo, &repo.open());
}

#[test]
fn create_worktree_with_git_cli_checkout() {
    let repo = TestRepo::standard();
    create_and_check(&repo, &repo.open_cli());
}

#[test]
fn same_name_on_another_branch_or_existing_branch_elsewhere_is_refused() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let base = repo.main_tip();
    handle.create_worktree("task-a", "task/a", base, "r").unwrap();

    let err = handle.create_worktree("task-a", "task/b", base, "r").unwrap_err();
    assert!(matches!(err, GitError::WorktreeConflict { .. }), "{err}");

    // The branch exists at another commit: refused, not reset.
    let other = repo.commit_on_main(&[("src/a.rs", "moved\n")], "main moves");
    repo.git(&["branch", "task/c", &base.to_string()]);
    let err = handle.create_worktree("task-c", "task/c", other, "r").unwrap_err();
    assert!(matches!(err, GitError::BranchExists { .. }), "{err}");
    assert!(err.to_string().contains("git branch -D task/c"), "{err}");
    assert_eq!(rev(repo.path(), "task/c"), base, "existing branch untouched");
    assert!(!repo.worktree("task-c").exists());

    // A directory that is not a worktree is never deleted.
    write(&repo.worktree_root(), "task-d/notes.txt", "mine\n");
    let err = handle.create_worktree("task-d", "task/d", base, "r").unwrap_err();
    assert!(err.to_string().contains("not a git worktree"), "{err}");
    assert_eq!(read(&repo.worktree_root(), "task-d/notes.txt"), "mine\n");
    assert!(git_output(repo.path(), &["rev-parse", "--verify", "-q", "task/d"]).stdout.is_empty());
}

/// A base whose tree holds a file name too long for the file system: the checkout fails
/// half-way, after libgit2 (or git) has created the admin data.
fn unwritable_base(repo: &TestRepo) -> Oid {
    let long_name = "x".repeat(300);
    let git2_repo = breeze_git_test_repo(repo);
    let head = git2_repo.head().unwrap().peel_to_commit().unwrap();
    let blob = git2_repo.blob(b"too long\n").unwrap();
    let mut update = git2::build::TreeUpdateBuilder::new();
    update.upsert(format!("deep/{long_name}"), blob, git2::FileMode::Blob);
    let tree = update.create_updated(&git2_repo, &head.tree().unwrap()).unwrap();
    let tree = git2_repo.find_tree(tree).unwrap();
    let sig = git2::Signature::now("T", "t@example.com").unwrap();
    git2_repo.commit(None, &sig, &sig, "unwritable", &tree, &[&head]).unwrap()
}

fn breeze_git_test_repo(repo: &TestRepo) -> git2::Repository {
    git2::Repository::open(repo.path()).unwrap()
}

fn assert_failed_add_left_nothing(repo: &TestRepo, handle: &Repo) {
    let base = unwritable_base(repo);
    let err = handle.create_worktree("task-bad", "task/bad", base, "r").unwrap_err();
    assert!(!err.to_string().is_empty());
    assert!(!repo.path().join(".git/worktrees/task-bad").exists(), "admin dir left behind");
    assert!(!repo.worktree("task-bad").exists(), "directory left behind");
    let branch = git_output(repo.path(), &["rev-parse", "--verify", "-q", "refs/heads/task/bad"]);
    assert!(branch.stdout.is_empty(), "branch left behind");
    assert_eq!(common::worktree_list(repo.path()).len(), 1, "only the primary checkout");
    // And the same name works right after, on a good base.
    let good = repo.main_tip();
    handle.create_worktree("task-bad", "task/bad", good, "r").unwrap();
}

#[test]
fn failed_add_leaves_nothing_behind_libgit2() {
    let repo = TestRepo::standard();
    assert_failed_add_left_nothing(&repo, &repo.open());
}

#[test]
fn failed_add_leaves_nothing_behind_git_cli() {
    let repo = TestRepo::standard();
    assert_failed_add_left_nothing(&repo, &repo.open_cli());
}

#[test]
fn hostile_task_ids_stay_inside_the_worktree_root() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let base = repo.main_tip();
    let root = handle.worktree_root().unwrap();
    for id in ["../../x", "a b", "タスク 1", "refs/heads/main", "..", "x.lock"] {
        let s = slug(id);
        let wt =
            handle.create_worktree(&format!("task-{s}"), &format!("task/{s}"), base, "r").unwrap();
        assert!(wt.path.starts_with(&root), "{id:?} escaped to {}", wt.path.display());
        assert_eq!(wt.path.parent().unwrap(), root);
        assert!(block_for(repo.path(), &wt.path).is_some());
    }
    // Names that are not slugs are refused before anything happens.
    for bad in ["../x", "a/b", "", ".hidden", "x..y"] {
        let err = handle.create_worktree(bad, "task/ok", base, "r").unwrap_err();
        assert!(matches!(err, GitError::InvalidName { .. }), "{bad:?}: {err}");
    }
    let err = handle.create_worktree("task-ok", "bad..branch", base, "r").unwrap_err();
    assert!(matches!(err, GitError::InvalidName { what: "branch name", .. }), "{err}");
    assert!(!repo.path().parent().unwrap().join("x").exists());
}

#[test]
fn interrupted_add_and_stale_registration_are_recovered() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let base = repo.main_tip();
    let wt = handle.create_worktree("task-s", "task/s", base, "r").unwrap();

    // The user deleted the directory by hand: the registration is stale.
    std::fs::remove_dir_all(&wt.path).unwrap();
    let again = handle.create_worktree("task-s", "task/s", base, "r").unwrap();
    assert_eq!(git(&again.path, &["status", "--porcelain"]), "");
    assert!(block_for(repo.path(), &again.path).unwrap().iter().any(|l| l.starts_with("locked")));

    // A crash between `git worktree add` and breeze's marker: git registered it (made by
    // the CLI here, with no checkout at all) but breeze never finished; it is replaced.
    repo.git(&["branch", "task/i", &base.to_string()]);
    let path = handle.worktree_root().unwrap().join("task-i");
    repo.git(&["worktree", "add", "-q", "--no-checkout", path.to_str().unwrap(), "task/i"]);
    write(&path, "src/a.rs", "fn a() {}\n"); // part of the checkout was written
    let wt = handle.create_worktree("task-i", "task/i", base, "r").unwrap();
    assert_eq!(git(&wt.path, &["status", "--porcelain"]), "");
    assert_eq!(read(&wt.path, "README.md"), "# demo\n");

    // A worktree someone else made there with work in it is not replaced.
    repo.git(&["branch", "task/u", &base.to_string()]);
    let path = handle.worktree_root().unwrap().join("task-u");
    repo.git(&["worktree", "add", "-q", path.to_str().unwrap(), "task/u"]);
    write(&path, "mine.txt", "user work\n");
    let err = handle.create_worktree("task-u", "task/u", base, "r").unwrap_err();
    assert!(matches!(err, GitError::WorktreeConflict { .. }), "{err}");
    assert_eq!(read(&path, "mine.txt"), "user work\n");
    // Likewise an unfinished checkout where a file differs from what git would write.
    repo.git(&["branch", "task/v", &base.to_string()]);
    let path = handle.worktree_root().unwrap().join("task-v");
    repo.git(&["worktree", "add", "-q", "--no-checkout", path.to_str().unwrap(), "task/v"]);
    write(&path, "src/a.rs", "edited by someone\n");
    assert!(handle.create_worktree("task-v", "task/v", base, "r").is_err());
    assert_eq!(read(&path, "src/a.rs"), "edited by someone\n");
    repo.fsck();
}

#[test]
fn move_worktree_touches_only_differing_paths() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let base1 = repo.main_tip();
    let lane = handle.create_worktree("lane-1", "task/one", base1, "breeze run r lane 1").unwrap();

    // Task one: the worker edits src/a.rs and leaves an ignored build output.
    write(&lane.path, "src/a.rs", "fn a() { one() }\n");
    write(&lane.path, "target/cache.bin", "warm cache\n");
    let head1 = handle.commit_worktree(&lane, "task one").unwrap().head();

    // Main moves on (another landing) before the lane takes its next task.
    let base2 = repo
        .commit_on_main(&[("src/b.rs", "fn b() { main() }\n"), ("new/file.txt", "n\n")], "other");
    let untouched = lane.path.join("docs/guide.md");
    let (ino_before, mtime_before) = {
        let meta = std::fs::metadata(&untouched).unwrap();
        (meta.ino(), meta.mtime_nsec())
    };

    let moved = handle.move_worktree(&lane, "task/two", base2).unwrap();
    assert_eq!(moved.path, lane.path);
    assert_eq!(moved.name, "lane-1");
    assert_eq!(moved.branch, "task/two");
    assert_eq!(moved.base, base2);
    assert_eq!(git(&lane.path, &["symbolic-ref", "HEAD"]), "refs/heads/task/two");
    assert_eq!(rev(&lane.path, "HEAD"), base2);
    assert_eq!(git(&lane.path, &["status", "--porcelain", "--untracked-files=all"]), "");
    assert_eq!(read(&lane.path, "src/a.rs"), "fn a() {}\n", "task one's edit is gone");
    assert_eq!(read(&lane.path, "src/b.rs"), "fn b() { main() }\n");
    assert_eq!(read(&lane.path, "new/file.txt"), "n\n");
    assert_eq!(read(&lane.path, "target/cache.bin"), "warm cache\n", "ignored files stay");
    let meta = std::fs::metadata(&untouched).unwrap();
    assert_eq!(
        (meta.ino(), meta.mtime_nsec()),
        (ino_before, mtime_before),
        "untouched file rewritten"
    );
    // Task one's branch is still there for landing; the lock is still there.
    assert_eq!(rev(repo.path(), "task/one"), head1);
    assert!(
        block_for(repo.path(), &lane.path)
            .unwrap()
            .contains(&"locked breeze run r lane 1".to_string())
    );

    // Repeating the move is a no-op.
    assert_eq!(handle.move_worktree(&lane, "task/two", base2).unwrap(), moved);
    // The old branch can go now.
    assert!(handle.delete_branch("task/one").unwrap());
    assert!(!handle.delete_branch("task/one").unwrap());
    let err = handle.delete_branch("task/two").unwrap_err();
    assert!(matches!(err, GitError::BranchCheckedOut { .. }), "{err}");
    repo.fsck();
}

#[test]
fn move_worktree_refuses_a_dirty_worktree_and_changes_nothing() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let base = repo.main_tip();
    let lane = handle.create_worktree("lane-1", "task/one", base, "r").unwrap();
    write(&lane.path, "src/a.rs", "uncommitted\n");
    write(&lane.path, "stray.txt", "untracked\n");
    let next = repo.commit_on_main(&[("src/a.rs", "main edit\n")], "main");

    let err = handle.move_worktree(&lane, "task/two", next).unwrap_err();
    match &err {
        GitError::Dirty { paths, .. } => {
            assert_eq!(paths, &vec!["src/a.rs".to_string(), "stray.txt".to_string()]);
        }
        other => panic!("expected Dirty, got {other}"),
    }
    assert_eq!(git(&lane.path, &["symbolic-ref", "HEAD"]), "refs/heads/task/one");
    assert_eq!(read(&lane.path, "src/a.rs"), "uncommitted\n");
    assert!(
        git_output(repo.path(), &["rev-parse", "--verify", "-q", "task/two"]).stdout.is_empty(),
        "no branch left"
    );
}

#[test]
fn remove_worktree_keeps_dirty_work_unless_forced() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let base = repo.main_tip();
    let wt = handle.create_worktree("task-r", "task/r", base, "r").unwrap();
    write(&wt.path, "src/a.rs", "not committed\n");

    let kept = handle.remove_worktree(&wt.path, Some("task/r"), false).unwrap();
    assert_eq!(kept, RemoveOutcome::KeptDirty { paths: vec!["src/a.rs".into()] });
    assert_eq!(read(&wt.path, "src/a.rs"), "not committed\n");
    assert!(block_for(repo.path(), &wt.path).is_some());

    // A symlink to a directory outside must not be followed when removing.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("precious.txt"), "keep\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), wt.path.join("link-out")).unwrap();

    let removed = handle.remove_worktree(&wt.path, Some("task/r"), true).unwrap();
    assert_eq!(removed, RemoveOutcome::Removed { branch_deleted: true });
    assert!(!wt.path.exists());
    assert!(block_for(repo.path(), &wt.path).is_none());
    assert!(!repo.path().join(".git/worktrees/task-r").exists());
    assert!(git_output(repo.path(), &["rev-parse", "--verify", "-q", "task/r"]).stdout.is_empty());
    assert_eq!(std::fs::read_to_string(outside.path().join("precious.txt")).unwrap(), "keep\n");

    // Again: already gone.
    assert_eq!(
        handle.remove_worktree(&wt.path, Some("task/r"), false).unwrap(),
        RemoveOutcome::NotFound { branch_deleted: false }
    );
    repo.fsck();
}

#[test]
fn remove_worktree_clean_with_ignored_outputs_and_refuses_foreign_paths() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let base = repo.main_tip();
    let wt = handle.create_worktree("task-c", "task/c", base, "r").unwrap();
    write(&wt.path, "target/debug/out", "build output\n");
    write(&wt.path, ".env", "SECRET=1\n");
    assert_eq!(
        handle.remove_worktree(&wt.path, None, false).unwrap(),
        RemoveOutcome::Removed { branch_deleted: false }
    );
    assert_eq!(rev(repo.path(), "task/c"), base, "branch kept when not asked to delete");

    // The user's own linked worktree outside the root is never removed.
    let elsewhere = tempfile::tempdir().unwrap();
    let theirs = elsewhere.path().join("mine");
    repo.git(&["worktree", "add", "-q", "-b", "mine", theirs.to_str().unwrap()]);
    let err = handle.remove_worktree(&theirs, Some("mine"), true).unwrap_err();
    assert!(matches!(err, GitError::NotManaged { .. }), "{err}");
    let sneaky = handle.worktree_root().unwrap().join("../../escape");
    assert!(matches!(
        handle.remove_worktree(&sneaky, None, true),
        Err(GitError::NotManaged { .. })
    ));
    assert!(matches!(
        handle.remove_worktree(&handle.worktree_root().unwrap(), None, true),
        Err(GitError::NotManaged { .. })
    ));
    assert!(theirs.exists());

    // A plain directory under the root is not a worktree: left alone.
    write(&repo.worktree_root(), "plain/file", "x\n");
    let err = handle.remove_worktree(&repo.worktree("plain"), None, true).unwrap_err();
    assert!(matches!(err, GitError::NotManaged { .. }), "{err}");
    assert!(repo.worktree("plain/file").exists());
}

#[test]
fn list_worktrees_reports_branch_head_lock_and_dirt() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let base = repo.main_tip();
    let a = handle.create_worktree("task-a", "task/a", base, "breeze run r9 task a").unwrap();
    let b = handle.create_worktree("task-b", "task/b", base, "breeze run r9 task b").unwrap();
    write(&b.path, "new.txt", "x\n");
    let elsewhere = tempfile::tempdir().unwrap();
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "mine",
        elsewhere.path().join("m").to_str().unwrap(),
    ]);

    let list = handle.list_worktrees().unwrap();
    assert_eq!(list.len(), 3);
    let find = |name: &str| list.iter().find(|w| w.name == name).unwrap();
    let la = find("task-a");
    assert_eq!(la.path, a.path);
    assert_eq!(la.branch.as_deref(), Some("task/a"));
    assert_eq!(la.head, Some(base));
    assert_eq!(la.locked.as_deref(), Some("breeze run r9 task a"));
    assert_eq!(la.dirty, Some(false));
    assert!(la.under_breeze_root && la.created_by_breeze);
    assert_eq!(find("task-b").dirty, Some(true));
    let mine = find("m");
    assert!(!mine.under_breeze_root && !mine.created_by_breeze);
    assert_eq!(mine.locked, None);
}

#[test]
fn integration_worktree_is_detached_and_reset_between_landings() {
    for handle_kind in ["libgit2", "cli"] {
        let repo = TestRepo::standard();
        let handle = if handle_kind == "cli" { repo.open_cli() } else { repo.open() };
        let first = repo.main_tip();
        let path = handle.integration_worktree(first).unwrap();
        assert_eq!(git(&path, &["rev-parse", "HEAD"]), first.to_string());
        assert!(git_output(&path, &["symbolic-ref", "-q", "HEAD"]).stdout.is_empty(), "detached");
        let block = block_for(repo.path(), &path).unwrap();
        assert!(block.contains(&"detached".to_string()), "{block:?}");
        assert!(block.iter().any(|l| l.starts_with("locked")), "{block:?}");

        // A verify run leaves modifications, untracked files and build outputs.
        write(&path, "src/a.rs", "formatted by verify\n");
        write(&path, "generated.txt", "junk\n");
        write(&path, "target/build.o", "cache\n");
        let second = repo.commit_on_main(&[("src/b.rs", "second\n")], "second");
        let again = handle.integration_worktree(second).unwrap();
        assert_eq!(again, path);
        assert_eq!(git(&path, &["rev-parse", "HEAD"]), second.to_string(), "{handle_kind}");
        assert_eq!(
            git(&path, &["status", "--porcelain", "--untracked-files=all"]),
            "",
            "{handle_kind}"
        );
        assert_eq!(read(&path, "src/a.rs"), "fn a() {}\n");
        assert_eq!(read(&path, "src/b.rs"), "second\n");
        assert_eq!(read(&path, "target/build.o"), "cache\n", "ignored build outputs stay warm");
        // No temporary branch is left.
        assert_eq!(repo.git(&["branch", "--list", "breeze/*"]), "");
        repo.fsck();
    }
}

#[test]
fn worktree_from_plain_struct_for_resume() {
    // The engine rebuilds `Worktree` from its journal; the fields are public.
    let repo = TestRepo::standard();
    let handle = repo.open();
    let base = repo.main_tip();
    let created = handle.create_worktree("task-j", "task/j", base, "r").unwrap();
    let rebuilt = Worktree {
        name: "task-j".into(),
        path: created.path.clone(),
        branch: "task/j".into(),
        base,
    };
    write(&rebuilt.path, "src/a.rs", "resumed\n");
    let head = handle.commit_worktree(&rebuilt, "after resume").unwrap().head();
    assert_eq!(rev(&created.path, "HEAD"), head);
    let _ = worker_commit;
}

#[test]
fn pooled_handles_follow_changes_made_by_other_git_processes() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let base = repo.main_tip();
    let wt = handle.create_worktree("task-h", "task/h", base, "r").unwrap();
    write(&wt.path, "src/a.rs", "one\n");
    handle.commit_worktree(&wt, "one").unwrap();

    // The worker stages with the git CLI (the index file changes under breeze's handle).
    write(&wt.path, "staged.txt", "staged by the worker\n");
    git(&wt.path, &["add", "staged.txt"]);
    let head = handle.commit_worktree(&wt, "two").unwrap().head();
    assert_eq!(
        git(repo.path(), &["show", "--name-only", "--format=", &head.to_string()]),
        "staged.txt"
    );
    assert_eq!(git(&wt.path, &["status", "--porcelain"]), "");

    // Staged but uncommitted work blocks a move, like unstaged work.
    write(&wt.path, "src/b.rs", "staged only\n");
    git(&wt.path, &["add", "src/b.rs"]);
    let err = handle.move_worktree(&wt, "task/h2", base).unwrap_err();
    assert!(
        matches!(&err, GitError::Dirty { paths, .. } if paths == &vec!["src/b.rs".to_string()]),
        "{err}"
    );
    git(&wt.path, &["reset", "-q", "--hard"]);
    assert!(matches!(
        handle.commit_worktree(&wt, "noop").unwrap(),
        breeze_git::CommitOutcome::Unchanged { .. }
    ));

    // The worktree is removed and re-created by hand under the same path, with another
    // admin directory: breeze must act on the new one.
    repo.git(&["worktree", "remove", "-f", "-f", wt.path.to_str().unwrap()]);
    let elsewhere = tempfile::tempdir().unwrap();
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "decoy",
        elsewhere.path().join("task-h").to_str().unwrap(),
    ]);
    repo.git(&["worktree", "add", "-q", wt.path.to_str().unwrap(), "task/h"]);
    assert!(repo.path().join(".git/worktrees/task-h1").exists());
    write(&wt.path, "src/a.rs", "three\n");
    let third = handle.commit_worktree(&wt, "three").unwrap().head();
    assert_eq!(rev(repo.path(), "task/h"), third);
    assert_eq!(git(&wt.path, &["status", "--porcelain"]), "");
    repo.fsck();
}

#[test]
fn a_name_taken_by_the_users_own_worktree_is_refused_and_left_alone() {
    for cli in [false, true] {
        let repo = TestRepo::standard();
        let handle = if cli { repo.open_cli() } else { repo.open() };
        let elsewhere = tempfile::tempdir().unwrap();
        let theirs = elsewhere.path().join("task-k");
        repo.git(&["worktree", "add", "-q", "-b", "their-branch", theirs.to_str().unwrap()]);
        write(&theirs, "work.txt", "theirs\n");

        let err = handle.create_worktree("task-k", "task/k", repo.main_tip(), "r").unwrap_err();
        assert!(matches!(err, GitError::WorktreeConflict { .. }), "{err}");
        assert!(err.to_string().contains("registered at"), "{err}");
        assert_eq!(read(&theirs, "work.txt"), "theirs\n");
        assert!(block_for(repo.path(), &theirs).is_some());
        assert!(!repo.worktree("task-k").exists());
        assert!(
            git_output(repo.path(), &["rev-parse", "--verify", "-q", "task/k"]).stdout.is_empty()
        );
    }
}

#[test]
fn existing_task_branches_are_reattached_switched_and_found() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let base = repo.main_tip();

    // Task a works on lane-1, then the lane moves to task b.
    let lane = handle.create_worktree("lane-1", "task/a", base, "r").unwrap();
    write(&lane.path, "src/a.rs", "fn a() { a }\n");
    let a_head = handle.commit_worktree(&lane, "a").unwrap().head();
    let main2 = repo.commit_on_main(&[("docs/guide.md", "moved on\n")], "main moves");
    let lane = handle.move_worktree(&lane, "task/b", main2).unwrap();
    write(&lane.path, "src/b.rs", "fn b() { b }\n");
    handle.commit_worktree(&lane, "b").unwrap();

    // Task a gets another round: the lane switches back to its branch, at its tip.
    let back = handle.switch_worktree(&lane, "task/a").unwrap();
    assert_eq!(back.branch, "task/a");
    assert_eq!(back.base, base, "base = where task/a left main");
    assert_eq!(git(&lane.path, &["symbolic-ref", "HEAD"]), "refs/heads/task/a");
    assert_eq!(rev(&lane.path, "HEAD"), a_head);
    assert_eq!(read(&lane.path, "src/a.rs"), "fn a() { a }\n");
    assert_eq!(read(&lane.path, "src/b.rs"), "fn b() {}\n");
    assert_eq!(read(&lane.path, "docs/guide.md"), "guide\n");
    assert_eq!(git(&lane.path, &["status", "--porcelain", "--untracked-files=all"]), "");
    assert_eq!(handle.switch_worktree(&back, "task/a").unwrap(), back, "no-op when already there");
    assert!(matches!(
        handle.switch_worktree(&back, "task/none"),
        Err(GitError::NoSuchBranch { .. })
    ));
    write(&lane.path, "src/a.rs", "uncommitted\n");
    assert!(handle.is_worktree_dirty(&lane.path).unwrap());
    assert!(matches!(handle.switch_worktree(&back, "task/b"), Err(GitError::Dirty { .. })));
    git(&lane.path, &["checkout", "--", "src/a.rs"]);
    assert!(!handle.is_worktree_dirty(&lane.path).unwrap());

    // Resume: find the lane again; a lost lane is re-created on the existing branch.
    let found = handle.find_worktree("lane-1").unwrap().unwrap();
    assert_eq!(found, back);
    assert_eq!(handle.find_worktree("lane-9").unwrap(), None);
    assert!(handle.branch_exists("task/b").unwrap());
    assert!(!handle.branch_exists("task/zzz").unwrap());

    let err = handle.create_worktree_on_branch("lane-2", "task/a", "r").unwrap_err();
    assert!(matches!(err, GitError::BranchCheckedOut { .. }), "{err}");
    let second = handle.create_worktree_on_branch("lane-2", "task/b", "r2").unwrap();
    assert_eq!(second.base, main2);
    assert_eq!(read(&second.path, "src/b.rs"), "fn b() { b }\n");
    assert!(block_for(repo.path(), &second.path).unwrap().contains(&"locked r2".to_string()));
    assert_eq!(handle.create_worktree_on_branch("lane-2", "task/b", "r2").unwrap(), second);
    assert!(matches!(
        handle.create_worktree_on_branch("lane-3", "task/missing", "r"),
        Err(GitError::NoSuchBranch { .. })
    ));
    assert!(!repo.worktree("lane-3").exists());

    // A user's worktree that happens to be called lane-4 is not adopted.
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "user",
        handle.worktree_root().unwrap().join("lane-4").to_str().unwrap(),
    ]);
    assert_eq!(handle.find_worktree("lane-4").unwrap(), None);
    repo.fsck();
}

#[test]
fn a_branch_is_on_main_only_when_main_contains_its_tip() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    repo.git(&["branch", "task/empty"]);
    assert!(
        handle.branch_is_on_main("task/empty").unwrap(),
        "a branch at main's tip holds nothing new"
    );
    let wt = handle.create_worktree("task-w", "task/w", repo.main_tip(), "test").unwrap();
    write(&wt.path, "src/new.rs", "fn new() {}\n");
    worker_commit(&wt, "work");
    assert!(!handle.branch_is_on_main("task/w").unwrap(), "unlanded work is not on main");
    repo.commit_on_main(&[("later.txt", "x\n")], "main moves on");
    assert!(handle.branch_is_on_main("task/empty").unwrap(), "an ancestor of main is on main");
    assert!(handle.branch_is_on_main("nope").is_err());
}

#[test]
fn a_branch_ref_lock_a_killed_engine_left_does_not_stop_the_branch_being_made_again() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let base = repo.main_tip();
    // What a SIGKILL between the lock and the rename leaves: the lock, from before this
    // process opened any repository.
    let lock = repo.path().join(".git/refs/heads/task/7.lock");
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    std::fs::write(&lock, format!("{base}\n")).unwrap();
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(&lock).unwrap().set_modified(hour_ago).unwrap();
    let wt = handle.create_worktree("task-7", "task/7", base, "breeze run r1 task 7").unwrap();
    assert_eq!(wt.branch, "task/7");
    assert!(!lock.exists(), "the stale lock is gone");
    assert_eq!(git(repo.path(), &["rev-parse", "task/7"]).trim(), base.to_string());
    // A lock made since (a writer of this process, or another one right now) is left alone
    // and reported.
    let fresh = repo.path().join(".git/refs/heads/task/8.lock");
    std::fs::write(&fresh, format!("{base}\n")).unwrap();
    let err = handle.create_worktree("task-8", "task/8", base, "breeze run r1 task 8").unwrap_err();
    assert!(err.to_string().contains("could not create branch `task/8`"), "{err}");
    assert!(fresh.exists());
}

/// What `git status --porcelain` (untracked files listed one by one) says in `at`.
fn git_status(at: &std::path::Path) -> String {
    git(at, &["status", "--porcelain", "--untracked-files=all"])
}

/// The index file's identity and times: whether anything wrote it.
fn index_stamp(handle: &Repo, wt: &Worktree) -> (u64, i64, i64, u64) {
    let meta = std::fs::metadata(handle.lane_admin_dir(wt).join("index")).unwrap();
    (meta.ino(), meta.mtime(), meta.mtime_nsec(), meta.size())
}

#[test]
fn a_commit_leaves_the_lane_index_to_its_next_move_and_a_kill_between_loses_nothing() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let base = repo.main_tip();
    let wt = handle.create_worktree("lane-k", "task/k1", base, "r").unwrap();
    // A change of each kind: modified, new in a new folder, deleted, a file that becomes a
    // folder, a folder that becomes a file.
    write(&wt.path, "src/a.rs", "fn a() { task }\n");
    write(&wt.path, "new/deep/file.rs", "new\n");
    std::fs::remove_file(wt.path.join("README.md")).unwrap();
    std::fs::remove_file(wt.path.join("docs/guide.md")).unwrap();
    write(&wt.path, "docs/guide.md/part.md", "a folder now\n");
    std::fs::remove_file(wt.path.join("src/b.rs")).unwrap();
    std::fs::remove_dir_all(wt.path.join("src")).unwrap();
    write(&wt.path, "src", "a file now\n");

    let before = index_stamp(&handle, &wt);
    let head = handle.commit_worktree_changed(&wt, "task k1", Unknown).unwrap().head();
    assert_eq!(index_stamp(&handle, &wt), before, "the commit does not write the index file");

    // Killed here: another process finds the lane clean and moves it to its next task.
    drop(handle);
    let resumed = repo.open();
    assert!(!resumed.is_worktree_dirty(&wt.path).unwrap(), "the commit is no uncommitted work");
    let next = repo.commit_on_main(&[("other.txt", "landed meanwhile\n")], "another task");
    let committed = Worktree { branch: "task/k1".into(), base, ..wt.clone() };
    let moved = resumed.move_worktree(&committed, "task/k2", next).unwrap();
    assert_eq!(rev(&wt.path, "HEAD"), next);
    assert_eq!(git_status(&wt.path), "", "git agrees: the move wrote the index file");
    // `git write-tree` takes the cache-tree breeze wrote as it is: it must be HEAD's tree.
    assert_eq!(
        git(&wt.path, &["write-tree"]).trim(),
        git(&wt.path, &["rev-parse", "HEAD^{tree}"]).trim()
    );
    assert!(!resumed.lane_admin_dir(&wt).join("breeze-index-behind").exists());
    assert_eq!(git(&wt.path, &["diff", "--stat", &next.to_string()]), "");

    // The next commit, then a revision round: the worker's git (a copy of the index) sees
    // the lane clean although no move wrote the index in between.
    write(&moved.path, "other.txt", "revised\n");
    let second = resumed.commit_worktree_changed(&moved, "task k2", Unknown).unwrap().head();
    resumed.seal_lane(&moved).unwrap();
    let entry = git(&wt.path, &["ls-files", "--debug", "other.txt"]);
    assert!(
        !entry.contains("mtime: 0:0"),
        "the committing handle's entry kept its stat data: {entry}"
    );
    assert_eq!(git_status(&wt.path), "", "the worker's git, on its private copy");
    assert!(resumed.check_lane_links(&moved).unwrap().is_empty());

    // Parked where its own commit is (main took it as it is): nothing to check out, and
    // the parked lane's index file agrees with HEAD for a person's git.
    write(&moved.path, "other.txt", "revised again\n");
    let third =
        resumed.commit_worktree_changed(&moved, "task k2, round 2", Unknown).unwrap().head();
    assert_ne!(third, second);
    resumed.park_worktree(&moved, third, Unknown).unwrap();
    assert_eq!(git_status(&wt.path), "");
    assert_eq!(
        git(&wt.path, &["write-tree"]).trim(),
        git(&wt.path, &["rev-parse", "HEAD^{tree}"]).trim()
    );
    assert_eq!(rev(&wt.path, "HEAD"), third);
    let _ = head;
    repo.fsck();
}

/// The run's move of a lane to its next task writes the files, not the index file: the
/// moved paths are noted behind HEAD. A handle opened afresh (after a kill) finds the lane
/// clean; the worker's git reads a private index written from memory that agrees with
/// HEAD, cache-tree included; once settled, the lane's own file agrees too.
#[test]
fn a_runs_move_leaves_the_lane_index_behind_and_the_workers_copy_agrees() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let base = repo.main_tip();
    let wt = handle.create_worktree("lane-m", "task/m1", base, "r").unwrap();
    write(&wt.path, "src/a.rs", "fn a() { m1 }\n");
    handle.commit_worktree(&wt, "task m1").unwrap();
    let next = repo.commit_on_main(&[("other.txt", "landed meanwhile\n")], "another task");
    let committed = Worktree { branch: "task/m1".into(), base, ..wt.clone() };
    let before = index_stamp(&handle, &wt);
    let only = WorkdirChanges::Only(&[]);
    let moved = handle.move_worktree_changed(&committed, "task/m2", next, only).unwrap();
    assert_eq!(rev(&wt.path, "HEAD"), next);
    assert_eq!(read(&wt.path, "src/a.rs"), "fn a() {}\n");
    assert_eq!(index_stamp(&handle, &wt), before, "the move does not write the index file");
    let admin = handle.lane_admin_dir(&wt);
    let marker = std::fs::read(admin.join("breeze-index-behind")).unwrap();
    let noted: Vec<&[u8]> = marker.split(|b| *b == 0).filter(|p| !p.is_empty()).collect();
    assert_eq!(noted, [&b"other.txt"[..], b"src/a.rs"]);

    // Killed here: a fresh handle puts the noted entries right and finds nothing to commit.
    drop(handle);
    let resumed = repo.open();
    assert!(!resumed.is_worktree_dirty(&wt.path).unwrap());
    let own =
        [format!("--git-dir={}", admin.display()), format!("--work-tree={}", wt.path.display())];
    // Another git writes the file as it is (behind): the copy is still HEAD's.
    git(&wt.path, &[&own[0], &own[1], "update-index", "--force-write-index"]);
    // The worker's git, on its private copy (the lane's `.git` points there now).
    resumed.seal_lane(&moved).unwrap();
    assert_eq!(git_status(&wt.path), "");
    assert_eq!(
        git(&wt.path, &["write-tree"]).trim(),
        git(&wt.path, &["rev-parse", "HEAD^{tree}"]).trim(),
        "the copy's cache-tree is HEAD's tree"
    );
    // A person's git on the lane's own index, once breeze settled it.
    resumed.settle_lane_index(&moved).unwrap();
    assert!(!admin.join("breeze-index-behind").exists());
    let status = [&own[0], &own[1], "status", "--porcelain", "--untracked-files=all"];
    assert_eq!(git(&wt.path, &status), "");
    repo.fsck();
}

/// The tree git makes of the lane's files (`git add -A` into a scratch index from HEAD's
/// parent's tree): what a task's commit must hold.
fn tree_git_makes(repo: &TestRepo, handle: &Repo, wt: &Worktree, parent: Oid) -> Oid {
    let scratch = tempfile::NamedTempFile::new().unwrap();
    let admin = handle.lane_admin_dir(wt);
    let run = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .current_dir(repo.path())
            .env("GIT_INDEX_FILE", scratch.path())
            .arg(format!("--git-dir={}", admin.display()))
            .arg(format!("--work-tree={}", wt.path.display()))
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    run(&["read-tree", &parent.to_string()]);
    run(&["add", "-A", "--", ".", ":!.git"]);
    common::oid(run(&["write-tree"]).trim())
}

/// A lane's tasks one after another: each commit holds what the lane's files hold (the
/// tree git makes of them), through a file replaced by a folder, a folder replaced by a
/// file, a folder removed whole, a link and an executable bit, and through the moves
/// between the tasks, whose trees breeze follows without making them (`index_tree.rs`;
/// debug builds also check every tree it follows against libgit2's).
#[test]
fn each_task_of_a_lane_commits_what_its_files_hold() {
    let repo = TestRepo::with_files(&[
        ("src/a.rs", "fn a() {}\n"),
        ("src/b/c.rs", "fn c() {}\n"),
        ("docs/x.md", "x\n"),
        ("docs/y/z.md", "z\n"),
        ("tool.sh", "echo\n"),
        ("README.md", "# demo\n"),
    ]);
    let handle = repo.open();
    let base = repo.main_tip();
    let mut wt = handle.create_worktree("lane-t", "task/t1", base, "r").unwrap();
    let tasks: [&dyn Fn(&Worktree); 3] = [
        &|wt| {
            write(&wt.path, "src/a.rs", "fn a() { 1 }\n");
            write(&wt.path, "new/deep/file.txt", "new\n");
            std::fs::remove_file(wt.path.join("README.md")).unwrap();
            let executable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
            std::fs::set_permissions(wt.path.join("tool.sh"), executable).unwrap();
            std::os::unix::fs::symlink("src/a.rs", wt.path.join("link")).unwrap();
        },
        &|wt| {
            // A file where a folder was, a folder where a file was.
            std::fs::remove_dir_all(wt.path.join("src/b")).unwrap();
            write(&wt.path, "src/b", "now a file\n");
            std::fs::remove_file(wt.path.join("docs/x.md")).unwrap();
            write(&wt.path, "docs/x.md/inside.md", "now a folder\n");
        },
        &|wt| {
            std::fs::remove_dir_all(wt.path.join("docs")).unwrap();
            write(&wt.path, "src/a.rs", "fn a() { 3 }\n");
        },
    ];
    for (n, task) in tasks.iter().enumerate() {
        let parent = rev(&wt.path, "HEAD");
        task(&wt);
        // As the engine commits: only the paths the lane's watch saw.
        // (A git that does not write the lane's index: breeze would read it again.)
        let status = ["--no-optional-locks", "status", "--porcelain", "-uall"];
        let seen: Vec<std::path::PathBuf> =
            git(&wt.path, &status).lines().map(|line| line[3..].trim_matches('"').into()).collect();
        let changes = WorkdirChanges::Only(&seen);
        handle.commit_worktree_changed(&wt, &format!("task {n}"), changes).unwrap();
        let committed = rev(&wt.path, "HEAD^{tree}");
        assert_eq!(committed, tree_git_makes(&repo, &handle, &wt, parent), "task {n}");
        // The next task: main moved on meanwhile, the lane moves to it.
        let main = repo.commit_on_main(&[(&format!("landed-{n}.txt"), "elsewhere\n")], "other");
        let from = Worktree { base: wt.base, ..wt.clone() };
        let next = format!("task/t{}", n + 2);
        wt = handle.move_worktree_changed(&from, &next, main, WorkdirChanges::Only(&[])).unwrap();
        assert_eq!(rev(&wt.path, "HEAD"), main);
    }
    repo.fsck();
}

#[test]
fn a_lane_kept_for_its_uncommitted_work_shows_git_only_that_work() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let wt = handle.create_worktree("lane-d", "task/d", repo.main_tip(), "r").unwrap();
    write(&wt.path, "src/a.rs", "fn a() { committed }\n");
    handle.commit_worktree_changed(&wt, "task d", Unknown).unwrap();
    write(&wt.path, "notes.txt", "left after the commit\n");
    match handle.remove_worktree(&wt.path, None, false).unwrap() {
        RemoveOutcome::KeptDirty { paths } => assert_eq!(paths, ["notes.txt"]),
        other => panic!("{other:?}"),
    }
    assert_eq!(git_status(&wt.path), "?? notes.txt", "the committed file is no change to git");
}

#[test]
fn a_persons_git_status_in_a_lane_between_commit_and_move_does_not_make_the_commit_work_left() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let base = repo.main_tip();
    let wt = handle.create_worktree("lane-p", "task/p1", base, "r").unwrap();
    write(&wt.path, "src/a.rs", "fn a() { task }\n");
    handle.commit_worktree_changed(&wt, "task p1", Unknown).unwrap();
    // A person looks at the lane mid-run: git refreshes the index file it read (the entries
    // from before the commit) and writes it back; breeze's handle reads it again.
    std::thread::sleep(std::time::Duration::from_millis(20));
    git(&wt.path, &["update-index", "-q", "--refresh"]);
    assert!(!handle.is_worktree_dirty(&wt.path).unwrap(), "the commit is no work left");
    let committed = Worktree { branch: "task/p1".into(), base, ..wt.clone() };
    handle.move_worktree(&committed, "task/p2", repo.main_tip()).unwrap();
    assert_eq!(git_status(&wt.path), "");
}
