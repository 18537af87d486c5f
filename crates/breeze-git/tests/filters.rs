//! Repositories with external filters (git-lfs is the common case): libgit2 never runs
//! them, so checkouts and staging go through the git CLI. A `sed` pair stands in for
//! git-lfs: the blob holds `PTR:…` (the "pointer"), the working tree `REAL:…`.

mod common;

use breeze_git::{
    AdvanceOutcome, CheckoutObserver, CheckoutUpdate, MergeOutcome, Oid, OpenOptions, Repo,
    Worktree, landing_message,
};
use common::{TestRepo, git, read, rev, write};

fn lfs_like_repo() -> TestRepo {
    lfs_like_repo_from(TestRepo::with_files(&[("src/a.rs", "fn a() {}\n")]))
}

/// `repo` with main gaining an lfs-like filter and a filtered file.
fn lfs_like_repo_from(repo: TestRepo) -> TestRepo {
    write(repo.path(), ".gitattributes", "*.dat filter=lfs -text\n");
    repo.git(&["config", "filter.lfs.clean", "sed -e s/^REAL:/PTR:/"]);
    repo.git(&["config", "filter.lfs.smudge", "sed -e s/^PTR:/REAL:/"]);
    repo.git(&["config", "filter.lfs.required", "true"]);
    write(repo.path(), "big.dat", "REAL:v1\n");
    repo.git(&["add", ".gitattributes", "big.dat"]);
    repo.git(&["commit", "-q", "-m", "add big.dat"]);
    assert_eq!(repo.git(&["cat-file", "-p", "HEAD:big.dat"]), "PTR:v1");
    repo
}

/// A lane on `base` where `files` are written and committed by breeze: the lane and the
/// task's head.
fn lane_commit(handle: &Repo, base: Oid, files: &[(&str, &str)]) -> (Worktree, Oid) {
    let wt = handle.create_worktree("lane-1", "task/x", base, "r").unwrap();
    for (path, content) in files {
        write(&wt.path, path, content);
    }
    let head = handle.commit_worktree(&wt, "task x").unwrap().head();
    (wt, head)
}

#[test]
fn worktrees_commits_and_landings_run_the_filters() {
    let repo = lfs_like_repo();
    let handle = repo.open(); // even with libgit2 preferred, filters force the CLI
    assert!(
        handle.external_filters().unwrap().contains("`lfs`"),
        "{:?}",
        handle.external_filters()
    );

    let base = repo.main_tip();
    let wt = handle.create_worktree("lane-1", "task/one", base, "r").unwrap();
    assert_eq!(read(&wt.path, "big.dat"), "REAL:v1\n", "smudged on checkout");
    assert_eq!(git(&wt.path, &["status", "--porcelain"]), "");

    write(&wt.path, "big.dat", "REAL:v2\n");
    let head = handle.commit_worktree(&wt, "task one").unwrap().head();
    assert_eq!(
        git(repo.path(), &["cat-file", "-p", &format!("{head}:big.dat")]),
        "PTR:v2",
        "cleaned on commit"
    );

    let onto = handle.main_tip().unwrap();
    let MergeOutcome::Clean { tree } = handle.merge_task(base, head, onto).unwrap() else {
        panic!()
    };
    let commit = handle
        .write_landing_commit(tree, onto, head, &landing_message("one", None, "1", "r", 1))
        .unwrap();
    // The user is editing big.dat: deferred, their edit kept.
    write(repo.path(), "big.dat", "REAL:user edit\n");
    match handle.advance_main(onto, commit).unwrap() {
        AdvanceOutcome::Deferred { paths, .. } => assert_eq!(paths, vec!["big.dat"]),
        other => panic!("expected Deferred, got {other:?}"),
    }
    assert_eq!(read(repo.path(), "big.dat"), "REAL:user edit\n");
    assert_eq!(repo.main_tip(), onto);
    repo.git(&["checkout", "--", "big.dat"]);
    assert!(matches!(handle.advance_main(onto, commit).unwrap(), AdvanceOutcome::Advanced { .. }));
    assert_eq!(read(repo.path(), "big.dat"), "REAL:v2\n", "the user's checkout is smudged too");
    assert_eq!(repo.status(), "");

    // The lane moves to the new main with the filter applied.
    let next = repo.commit_on_main(&[("big.dat", "REAL:v3\n")], "user bumps big.dat");
    let moved = handle.move_worktree(&wt, "task/two", next).unwrap();
    assert_eq!(read(&moved.path, "big.dat"), "REAL:v3\n");
    assert_eq!(rev(&moved.path, "HEAD"), next);
    assert_eq!(git(&moved.path, &["status", "--porcelain"]), "");

    let integration = handle.integration_worktree(next).unwrap();
    assert_eq!(read(&integration, "big.dat"), "REAL:v3\n");
    repo.fsck();
}

#[test]
fn a_filter_that_main_gains_is_seen_by_the_next_open_in_the_same_process() {
    // The walk for `.gitattributes` is remembered by tree: a new tip is walked again.
    let repo = TestRepo::with_files(&[("src/a.rs", "fn a() {}\n")]);
    repo.git(&["config", "filter.lfs.clean", "cat"]);
    assert_eq!(Repo::open(repo.path()).unwrap().external_filters(), None);
    assert_eq!(Repo::open(repo.path()).unwrap().external_filters(), None);
    write(repo.path(), "deep/er/.gitattributes", "*.dat filter=lfs\n");
    repo.git(&["add", "."]);
    repo.git(&["commit", "-q", "-m", "lfs below"]);
    let filters = Repo::open(repo.path()).unwrap().external_filters().map(str::to_string);
    assert!(filters.is_some_and(|f| f.contains("`lfs`")), "the new tip's attributes are read");
}

#[test]
fn a_repository_opened_for_a_run_chooses_its_checkout_tool_when_first_needed() {
    // A run opens its repository without walking main's trees (it reads ahead meanwhile):
    // the choice is made from main as it is at the first checkout, and it is the same one.
    let repo = TestRepo::with_files(&[("src/a.rs", "fn a() {}\n")]);
    let later = OpenOptions { checkout_tool_later: true, ..repo.options(None) };
    let handle = Repo::open_with(repo.path(), &later).unwrap();
    let lfs = lfs_like_repo_from(repo);
    let wt = handle.create_worktree("lane-1", "task/one", lfs.main_tip(), "r").unwrap();
    assert_eq!(read(&wt.path, "big.dat"), "REAL:v1\n", "checked out by the CLI, smudged");
    assert!(handle.external_filters().is_some_and(|f| f.contains("`lfs`")));
    handle.choose_checkout_tool().unwrap();
    // Chosen once: a repository opened as usual chooses the same at opening.
    assert_eq!(lfs.open().external_filters(), handle.external_filters());
}

#[test]
fn a_driver_without_configured_commands_is_not_an_external_filter() {
    // Detection itself: a driver named in .gitattributes but not configured is no filter.
    let repo = TestRepo::with_files(&[("a.dat", "x\n"), (".gitattributes", "*.dat filter=lfs\n")]);
    assert_eq!(Repo::open(repo.path()).unwrap().external_filters(), None);
}

#[test]
fn dirty_checks_and_lane_switches_go_through_the_cli() {
    // libgit2's status would hash big.dat without the clean filter and call it changed.
    let repo = lfs_like_repo();
    let handle = repo.open();
    let base = repo.main_tip();
    let wt = handle.create_worktree("lane-1", "task/one", base, "r").unwrap();
    assert!(!handle.is_worktree_dirty(&wt.path).unwrap(), "a fresh smudged checkout is clean");

    write(&wt.path, "big.dat", "REAL:v2\n");
    assert!(handle.is_worktree_dirty(&wt.path).unwrap());
    let listed = handle.list_worktrees().unwrap();
    assert_eq!(listed.iter().find(|i| i.name == "lane-1").unwrap().dirty, Some(true));
    match handle.remove_worktree(&wt.path, None, false).unwrap() {
        breeze_git::RemoveOutcome::KeptDirty { paths } => assert_eq!(paths, vec!["big.dat"]),
        other => panic!("expected KeptDirty, got {other:?}"),
    }
    let head = handle.commit_worktree(&wt, "task one").unwrap().head();
    assert!(!handle.is_worktree_dirty(&wt.path).unwrap());

    // The lane moves on to another task, then back onto task/one: smudged both ways.
    let moved = handle.move_worktree(&wt, "task/two", base).unwrap();
    assert_eq!(read(&moved.path, "big.dat"), "REAL:v1\n");
    let back = handle.switch_worktree(&moved, "task/one").unwrap();
    assert_eq!(back.base, base);
    assert_eq!(rev(&back.path, "HEAD"), head);
    assert_eq!(read(&back.path, "big.dat"), "REAL:v2\n");
    assert_eq!(git(&back.path, &["status", "--porcelain"]), "");
    repo.fsck();
}

#[test]
fn a_conflicting_task_goes_back_with_its_filtered_files_smudged() {
    let repo = lfs_like_repo();
    let handle = repo.open();
    let base = repo.main_tip();
    let (wt, head) = lane_commit(
        &handle,
        base,
        &[("big.dat", "REAL:task\n"), ("src/a.rs", "fn a() { task }\n")],
    );
    let onto = repo.commit_on_main(&[("src/a.rs", "fn a() { main }\n")], "main edit");

    let rebased = handle.rebase_worktree_with_conflicts(&wt, base, head, onto).unwrap();
    assert_eq!(rebased.conflicts, vec!["src/a.rs"]);
    assert_eq!(read(&wt.path, "big.dat"), "REAL:task\n", "the clean part is smudged");
    let status = git(&wt.path, &["status", "--porcelain"]);
    assert_eq!(status.lines().collect::<Vec<_>>(), vec!["M  big.dat", "UU src/a.rs"]);

    write(&wt.path, "src/a.rs", "fn a() { main and task }\n");
    let new_head = handle.commit_worktree(&rebased.worktree, "resolve").unwrap().head();
    assert_eq!(
        git(repo.path(), &["cat-file", "-p", &format!("{new_head}:big.dat")]),
        "PTR:task",
        "cleaned on commit"
    );
    assert_eq!(git(&wt.path, &["status", "--porcelain"]), "");
    repo.fsck();
}

/// Dies (panics) after the first path is placed, as a kill would.
struct KilledAfterOne(Option<CheckoutUpdate>);

impl CheckoutObserver for KilledAfterOne {
    fn updating(&mut self, update: &CheckoutUpdate) -> std::io::Result<()> {
        self.0 = Some(update.clone());
        Ok(())
    }

    fn placed(&mut self, _done: usize, _total: usize) {
        panic!("killed");
    }
}

#[test]
fn a_killed_update_of_a_filtered_checkout_is_finished_with_the_filters() {
    let repo = lfs_like_repo();
    let handle = repo.open();
    let base = repo.main_tip();
    let (_wt, head) =
        lane_commit(&handle, base, &[("big.dat", "REAL:v2\n"), ("more.dat", "REAL:more\n")]);
    let MergeOutcome::Clean { tree } = handle.merge_task(base, head, base).unwrap() else {
        panic!()
    };
    let commit = handle
        .write_landing_commit(tree, base, head, &landing_message("one", None, "1", "r", 1))
        .unwrap();
    let mut killed = KilledAfterOne(None);
    let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = handle.advance_main_observed(base, commit, &mut killed);
    }));
    assert!(died.is_err());
    // big.dat (placed first) holds the new content, smudged; more.dat is not there yet.
    assert_eq!(read(repo.path(), "big.dat"), "REAL:v2\n");
    assert!(!repo.path().join("more.dat").exists());

    // main had not moved: resume puts big.dat back, through the filter.
    let recovery = handle.finish_checkout_update(&killed.0.unwrap()).unwrap();
    assert_eq!((recovery.target, recovery.rewritten), (base, 1));
    assert_eq!(read(repo.path(), "big.dat"), "REAL:v1\n");
    assert_eq!(repo.status(), "");
    let outcome = handle.advance_main(base, commit).unwrap();
    assert!(matches!(outcome, AdvanceOutcome::Advanced { .. }), "{outcome:?}");
    assert_eq!(read(repo.path(), "more.dat"), "REAL:more\n");
    assert_eq!(repo.status(), "");
    repo.fsck();
}
