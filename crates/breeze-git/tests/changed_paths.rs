//! Committing, checking and moving a lane by the paths its file-system watch reported
//! (breeze-supervise's `TreeWatch`), not by a pass over the whole worktree: the result must
//! be what the `git` CLI gives with a full pass.

mod common;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

use breeze_git::{CommitOutcome, GitError, Oid, Repo, WorkdirChanges, Worktree};
use breeze_supervise::{TreeChanges, TreeWatch};
use common::{TestRepo, git, rev, write};

fn fixture() -> TestRepo {
    TestRepo::with_files(&[
        ("README.md", "# demo\n"),
        ("src/a.rs", "fn a() {}\n"),
        ("src/b.rs", "fn b() {}\n"),
        ("src/old/one.rs", "one\n"),
        ("src/old/two.rs", "two\n"),
        ("docs/guide.md", "guide\n"),
        ("docs/rename-me.md", "a file that is renamed\n"),
        ("tools/run.sh", "#!/bin/sh\n"),
        ("untouched/deep/file.txt", "never looked at\n"),
        (".gitignore", ".env\ntarget/\n*.log\n"),
    ])
}

fn task(repo: &TestRepo, handle: &Repo, name: &str) -> Worktree {
    handle
        .create_worktree(&format!("task-{name}"), &format!("task/{name}"), repo.main_tip(), "r")
        .unwrap()
}

fn only(changes: &TreeChanges) -> WorkdirChanges<'_> {
    WorkdirChanges::Only(changes.paths().expect("the watch saw every change"))
}

/// The tree `git add -A` would commit in `wt`: staged into a copy of its index, so the
/// worktree's own index is left as it is.
fn cli_add_all_tree(wt: &Path) -> Oid {
    let index = git(wt, &["rev-parse", "--path-format=absolute", "--git-path", "index"]);
    let scratch = tempfile::tempdir().unwrap();
    let copy = scratch.path().join("index");
    std::fs::copy(&index, &copy).unwrap();
    let run = |args: &[&str]| {
        let mut command = Command::new("git");
        breeze_test_support::hermetic(&mut command);
        let out = command.current_dir(wt).env("GIT_INDEX_FILE", &copy).args(args).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    run(&["add", "-A"]);
    common::oid(&run(&["write-tree"]))
}

fn tree_of(dir: &Path, commit: Oid) -> Oid {
    rev(dir, &format!("{commit}^{{tree}}"))
}

/// Every kind of change a worker makes: modified, deleted, renamed (a file and a folder),
/// new folders, an executable bit, a symbolic link, a file that became a folder, ignored
/// files (not to be committed) and an empty folder (nothing to commit).
fn edit_like_a_worker(root: &Path) {
    write(root, "src/a.rs", "fn a() { changed() }\n");
    std::fs::remove_file(root.join("docs/guide.md")).unwrap();
    std::fs::rename(root.join("docs/rename-me.md"), root.join("docs/renamed.md")).unwrap();
    std::fs::rename(root.join("src/old"), root.join("src/new-name")).unwrap();
    write(root, "brand/new/deep/mod.rs", "pub mod deep;\n");
    write(root, "brand/new/top.rs", "top\n");
    std::fs::set_permissions(root.join("tools/run.sh"), std::fs::Permissions::from_mode(0o755))
        .unwrap();
    std::os::unix::fs::symlink("a.rs", root.join("src/alias.rs")).unwrap();
    std::fs::remove_file(root.join("src/b.rs")).unwrap();
    write(root, "src/b.rs/now-a-folder.rs", "folder\n");
    write(root, "target/debug/out.o", "build output\n");
    write(root, "brand/new/run.log", "ignored log\n");
    write(root, ".env", "SECRET=1\n");
    std::fs::create_dir_all(root.join("empty/folder")).unwrap();
}

#[test]
fn a_commit_of_the_watched_paths_is_what_git_add_all_commits() {
    let repo = fixture();
    let handle = repo.open();
    let wt = task(&repo, &handle, "w");
    let watch = TreeWatch::start(&wt.path);
    edit_like_a_worker(&wt.path);

    let expected = cli_add_all_tree(&wt.path);
    let changes = watch.changes();
    let paths = changes.paths().expect("known changes");
    assert!(
        !paths.iter().any(|p| p.starts_with("untouched") || p == Path::new("README.md")),
        "only what changed is looked at: {paths:?}"
    );
    let outcome = handle.commit_worktree_changed(&wt, "task w", only(&changes)).unwrap();
    watch.settle(&changes);
    let CommitOutcome::Committed { head, .. } = outcome else { panic!("{outcome:?}") };
    assert_eq!(tree_of(&wt.path, head), expected, "the same tree as `git add -A`");
    assert!(!handle.is_worktree_dirty(&wt.path).unwrap());
    handle.settle_lane_index(&wt).unwrap();
    assert_eq!(git(&wt.path, &["status", "--porcelain"]), "");
    let names = git(&wt.path, &["show", "--name-status", "-M", "--format=", "HEAD"]);
    assert!(names.contains("R100\tdocs/rename-me.md\tdocs/renamed.md"), "{names}");
    assert!(!names.contains(".env") && !names.contains("target/") && !names.contains(".log"));
    assert_eq!(
        git(&wt.path, &["ls-files", "-s", "tools/run.sh"]).split(' ').next(),
        Some("100755")
    );

    // A second round: settled changes are gone; new ones (including the worker's own `git
    // add` of a file and a `git rm --cached`, which only the index shows) are committed.
    write(&wt.path, "brand/new/top.rs", "top, again\n");
    write(&wt.path, "staged.txt", "staged by the worker\n");
    git(&wt.path, &["add", "staged.txt"]);
    git(&wt.path, &["rm", "-q", "--cached", "README.md"]);
    let expected = cli_add_all_tree(&wt.path);
    let changes = watch.changes();
    let outcome = handle.commit_worktree_changed(&wt, "task w, again", only(&changes)).unwrap();
    watch.settle(&changes);
    assert_eq!(tree_of(&wt.path, outcome.head()), expected);
    handle.settle_lane_index(&wt).unwrap();
    assert_eq!(git(&wt.path, &["status", "--porcelain"]), "");

    // Nothing changed since: nothing is looked at (but the skipped `target/`, which git
    // finds ignored at once) and nothing is committed.
    let changes = watch.changes();
    assert_eq!(changes.paths().unwrap(), [Path::new("target")]);
    let head = outcome.head();
    assert_eq!(
        handle.commit_worktree_changed(&wt, "noop", only(&changes)).unwrap(),
        CommitOutcome::Unchanged { head }
    );
    repo.fsck();
}

#[test]
fn lost_notifications_fall_back_to_one_full_pass() {
    let repo = fixture();
    let handle = repo.open();
    let wt = task(&repo, &handle, "o");
    let watch = TreeWatch::start(&wt.path);
    write(&wt.path, "src/a.rs", "seen\n");
    // The kernel's queue overflowed: what was written around it is not in any list.
    watch.simulate_overflow();
    edit_like_a_worker(&wt.path);
    let expected = cli_add_all_tree(&wt.path);
    let changes = watch.changes();
    assert!(changes.is_unknown(), "after an overflow the changes are unknown");
    let outcome = handle.commit_worktree_changed(&wt, "task o", WorkdirChanges::Unknown).unwrap();
    watch.settle(&changes);
    assert_eq!(tree_of(&wt.path, outcome.head()), expected, "the full pass missed nothing");
    handle.settle_lane_index(&wt).unwrap();
    assert_eq!(git(&wt.path, &["status", "--porcelain"]), "");
    // Settled by that pass, the watch is whole again and lists changes from then on.
    assert!(watch.is_complete());
    write(&wt.path, "brand/new/top.rs", "after the pass\n");
    assert_eq!(
        watch.changes().paths().unwrap(),
        [Path::new("brand/new/top.rs"), Path::new("target")]
    );

    // Without notifications at all (a worktree the watch cannot see), every answer is a
    // full pass too.
    let blind = TreeWatch::start(wt.path.join("no-such-folder"));
    assert!(blind.changes().is_unknown());
}

#[test]
fn moving_a_lane_to_its_next_task_leaves_exactly_the_new_base() {
    let repo = fixture();
    let handle = repo.open();
    let wt = task(&repo, &handle, "first");
    let watch = TreeWatch::start(&wt.path);
    write(&wt.path, "src/a.rs", "fn a() { first task }\n");
    write(&wt.path, "first/only.rs", "made by the first task\n");
    write(&wt.path, "target/cache.bin", "ignored build output stays\n");
    let changes = watch.changes();
    handle.commit_worktree_changed(&wt, "first", only(&changes)).unwrap();
    watch.settle(&changes);
    // The test plays a person's git in the lane below: the index file is written first.
    handle.settle_lane_index(&wt).unwrap();

    // Main moves on without the first task: modified, deleted, new folder, mode change.
    write(repo.path(), "docs/guide.md", "guide, on main\n");
    git(repo.path(), &["rm", "-q", "src/old/one.rs"]);
    write(repo.path(), "main/new/file.rs", "main only\n");
    std::fs::set_permissions(
        repo.path().join("tools/run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "main moves"]);
    let base = repo.main_tip();

    // Staged work the watch cannot see (the index) still blocks the move.
    write(&wt.path, "src/b.rs", "staged only\n");
    git(&wt.path, &["add", "src/b.rs"]);
    let err = handle
        .move_worktree_changed(&wt, "task/second", base, WorkdirChanges::Only(&[]))
        .unwrap_err();
    assert!(matches!(&err, GitError::Dirty { paths, .. } if paths == &["src/b.rs"]), "{err}");
    git(&wt.path, &["reset", "-q", "HEAD", "--", "src/b.rs"]);
    git(&wt.path, &["checkout", "-q", "--", "src/b.rs"]);
    // An unstaged change the watch saw blocks it as well.
    write(&wt.path, "first/only.rs", "left uncommitted\n");
    let changes = watch.changes();
    let err = handle.move_worktree_changed(&wt, "task/second", base, only(&changes)).unwrap_err();
    assert!(matches!(&err, GitError::Dirty { paths, .. } if paths == &["first/only.rs"]), "{err}");
    git(&wt.path, &["checkout", "-q", "--", "first/only.rs"]);

    let changes = watch.changes();
    let moved = handle.move_worktree_changed(&wt, "task/second", base, only(&changes)).unwrap();
    watch.settle(&changes);
    // The move left the index file behind HEAD: written before a person's git reads it.
    handle.settle_lane_index(&moved).unwrap();
    assert_eq!(moved.branch, "task/second");
    assert_eq!(rev(&wt.path, "HEAD"), base);
    assert_eq!(git(&wt.path, &["status", "--porcelain", "--untracked-files=all"]), "");
    assert_eq!(git(&wt.path, &["diff", "--stat", &base.to_string()]), "");
    assert!(!wt.path.join("first/only.rs").exists());
    assert!(!wt.path.join("src/old/one.rs").exists());
    assert_eq!(common::read(&wt.path, "main/new/file.rs"), "main only\n");
    let mode = std::fs::metadata(wt.path.join("tools/run.sh")).unwrap().permissions().mode();
    assert_eq!(mode & 0o111, 0o111, "the executable bit comes with the new base");
    assert_eq!(common::read(&wt.path, "target/cache.bin"), "ignored build output stays\n");
    // What the move wrote is seen by the watch, so the next commit looks at it: no change.
    let changes = watch.changes();
    assert_eq!(
        handle.commit_worktree_changed(&moved, "noop", only(&changes)).unwrap(),
        CommitOutcome::Unchanged { head: base }
    );
    repo.fsck();
}

#[test]
fn the_integration_worktree_is_reset_by_the_paths_its_watch_saw() {
    let repo = fixture();
    let handle = repo.open();
    let first = repo.main_tip();
    let path = handle.integration_worktree(first).unwrap();
    let watch = TreeWatch::start(&path);
    // What a verify command leaves: a tracked file changed, one deleted, untracked files in
    // a new folder, and ignored build output (which stays, so builds stay warm).
    write(&path, "src/a.rs", "changed by the verify\n");
    std::fs::remove_file(path.join("docs/guide.md")).unwrap();
    write(&path, "generated/out.rs", "untracked\n");
    write(&path, "target/debug/build.o", "ignored\n");
    let next = repo.commit_on_main(&[("src/b.rs", "fn b() { next }\n")], "next");

    let changes = watch.changes();
    let again = handle.integration_worktree_changed(next, only(&changes)).unwrap();
    watch.settle(&changes);
    assert_eq!(again, path);
    assert_eq!(rev(&path, "HEAD"), next);
    assert_eq!(git(&path, &["status", "--porcelain", "--untracked-files=all"]), "");
    assert_eq!(common::read(&path, "src/b.rs"), "fn b() { next }\n");
    assert_eq!(common::read(&path, "target/debug/build.o"), "ignored\n");
}
