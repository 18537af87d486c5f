//! What breeze checks that roles did not change: lane links, the shared `.git`, a checkout's
//! uncommitted state, and main moved onto a commit made in a lane — checked with the git CLI.

mod common;

use common::{TestRepo, git, write};

#[test]
fn a_lane_whose_git_links_were_rewritten_is_repaired_and_reported() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let wt = handle.create_worktree("lane-1", "task/1", repo.main_tip(), "test").unwrap();
    let fresh = handle.check_lane_links(&wt).unwrap();
    assert!(fresh.is_empty(), "a fresh lane is in order: {fresh:?}");

    // A worker points its worktree at the user's repository and plants a config.
    std::fs::write(
        wt.path.join(".git"),
        format!("gitdir: {}\n", repo.path().join(".git").display()),
    )
    .unwrap();
    let admin = handle.lane_admin_dir(&wt);
    std::fs::write(admin.join("commondir"), "/tmp\n").unwrap();
    std::fs::write(admin.join("config.worktree"), "[core]\n\tfsmonitor = /tmp/evil\n").unwrap();
    let problems = handle.check_lane_links(&wt).unwrap();
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems.iter().any(|p| p.contains("config.worktree")), "{problems:?}");
    assert!(handle.check_lane_links(&wt).unwrap().is_empty(), "repaired: {problems:?}");
    // git agrees that the lane is a working lane of the repository again.
    assert_eq!(git(&wt.path, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "task/1");
    assert_eq!(git(&wt.path, &["status", "--porcelain"]), "");

    // A `.git` directory planted in place of the link is moved aside.
    std::fs::remove_file(wt.path.join(".git")).unwrap();
    std::fs::create_dir(wt.path.join(".git")).unwrap();
    let problems = handle.check_lane_links(&wt).unwrap();
    assert!(problems[0].contains("quarantined-1"), "{problems:?}");
    assert_eq!(git(&wt.path, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "task/1");
}

#[test]
fn the_shared_git_print_sees_config_hooks_info_and_foreign_refs_but_not_breezes_own() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let before = handle.shared_git_print().unwrap();
    // breeze's own moves: a task branch and main.
    git(repo.path(), &["branch", "task/7"]);
    repo.commit_on_main(&[("b.txt", "b\n")], "user work");
    assert!(handle.shared_git_print().unwrap().changes_since(&before).is_empty());

    git(repo.path(), &["config", "core.fsmonitor", "/tmp/evil"]);
    std::fs::write(repo.path().join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::write(repo.path().join(".git/info/attributes"), "* filter=evil\n").unwrap();
    git(repo.path(), &["branch", "feature"]);
    let changes = handle.shared_git_print().unwrap().changes_since(&before);
    assert_eq!(
        changes,
        [".git/config", ".git/hooks/pre-commit", ".git/info/attributes", "refs/heads/feature"]
    );
}

#[test]
fn the_checkout_print_changes_when_a_file_is_changed_added_or_staged() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    write(repo.path(), "notes.txt", "mine\n"); // already dirty before the role
    let before = handle.checkout_print(repo.path()).unwrap();
    assert_eq!(handle.checkout_print(repo.path()).unwrap(), before, "stable");
    write(repo.path(), "README.md", "changed by a role\n");
    write(repo.path(), "notes.txt", "mine, edited by a role\n");
    write(repo.path(), "new.txt", "x\n");
    let changes = handle.checkout_print(repo.path()).unwrap().changes_since(&before);
    assert_eq!(changes, ["README.md", "new.txt", "notes.txt"]);
}

#[test]
fn main_moved_onto_a_lane_commit_is_found_and_a_user_commit_is_not() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let start = repo.main_tip();
    let wt = handle.create_worktree("lane-1", "task/1", start, "test").unwrap();
    assert_eq!(handle.lane_commit_on_main(start).unwrap(), None);

    // The user commits on main: fine.
    let user = repo.commit_on_main(&[("u.txt", "u\n")], "user");
    assert_eq!(handle.lane_commit_on_main(start).unwrap(), None);

    // A worker commits in its lane and moves main onto it.
    write(&wt.path, "unreviewed.txt", "x\n");
    let lane_commit = common::worker_commit(&wt, "unreviewed");
    git(&wt.path, &["update-ref", "refs/heads/main", &lane_commit.to_string()]);
    let found = handle.lane_commit_on_main(user).unwrap().expect("the lane commit is found");
    assert_eq!(found.commit, lane_commit);
    assert_eq!(found.source, "task/1");
}
