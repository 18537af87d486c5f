//! Where breeze's worktrees live: in the folder the repository was opened with, outside
//! the person's checkout (which keeps only a note naming it), and what becomes of the
//! worktrees an earlier breeze made inside the checkout — checked with the `git` CLI.

mod common;

use std::path::Path;

use breeze_git::{GitError, OpenOptions, RemoveOutcome, Repo, WorktreeRoot};
use common::{TestRepo, git, read, rev, write};

/// What an earlier breeze left: worktree `name` registered at
/// `<checkout>/.harness-worktrees/<name>` (on a new `branch`, or detached at main when
/// `None`), locked, with breeze's marker in its admin folder.
fn legacy_worktree(repo: &TestRepo, name: &str, branch: Option<&str>) -> std::path::PathBuf {
    let path = repo.path().join(".harness-worktrees").join(name);
    let shown = path.to_str().unwrap();
    match branch {
        Some(branch) => repo.git(&["worktree", "add", "-q", "-b", branch, shown]),
        None => repo.git(&["worktree", "add", "-q", "--detach", shown]),
    };
    repo.git(&["worktree", "lock", "--reason", "breeze run old (lane 1)", shown]);
    std::fs::write(
        repo.path().join(".git/worktrees").join(name).join("breeze-created"),
        "created by breeze\n",
    )
    .unwrap();
    path
}

/// The entries of `dir`, by name.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn worktrees_are_made_in_the_folder_the_repository_was_opened_with_never_in_the_checkout() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let root = handle.worktree_root().unwrap();
    let key = breeze_git::repo_key(handle.workdir(), handle.common_dir());
    assert_eq!(root, std::fs::canonicalize(repo.worktrees.path()).unwrap().join(&key));

    let lane = handle.create_worktree("lane-1", "task/one", repo.main_tip(), "r").unwrap();
    let integration = handle.integration_worktree(repo.main_tip()).unwrap();
    assert_eq!(lane.path, root.join("lane-1"));
    assert_eq!(integration, root.join("integration"));
    assert_eq!(entries(&root), ["integration", "lane-1"]);
    assert_eq!(git(&lane.path, &["rev-parse", "--abbrev-ref", "HEAD"]), "task/one");

    // The checkout holds no folder of breeze's worktrees and no link to one: only the
    // note naming the folder, and breeze's record of it.
    let note_dir = repo.path().join(".harness-worktrees");
    assert_eq!(entries(&note_dir), ["README"]);
    assert!(std::fs::symlink_metadata(note_dir.join("README")).unwrap().is_file());
    assert!(read(&note_dir, "README").contains(&root.display().to_string()));
    assert_eq!(read(repo.path(), ".breeze/worktree-root"), format!("{}\n", root.display()));
    assert_eq!(repo.status(), "", "git status of the checkout stays clean");

    // breeze finds its lane there: the person's git uses its admin folder.
    let admin = handle.git_dir_for_person(&lane.path).unwrap();
    assert!(admin.ends_with(".git/worktrees/lane-1"), "{}", admin.display());
    // A command that only looks at lanes opens the repository as recorded, wherever its
    // environment would put a new folder.
    let looking = Repo::open(repo.path()).unwrap();
    assert_eq!(looking.worktree_root().unwrap(), root);
    assert_eq!(looking.find_worktree("lane-1").unwrap().unwrap(), lane);
    repo.fsck();
}

#[test]
fn the_default_folder_is_the_data_folders_and_stable_per_clone() {
    let one = TestRepo::standard();
    let two = TestRepo::standard();
    let open = |repo: &TestRepo| {
        let options =
            OpenOptions { worktree_root: WorktreeRoot::Default, ..OpenOptions::default() };
        Repo::open_with(repo.path(), &options).unwrap()
    };
    let (first, again, other) = (open(&one), open(&one), open(&two));
    match breeze_git::default_worktrees_folder(|name| std::env::var_os(name)) {
        Some(folder) => {
            let root = first.worktree_root().unwrap();
            assert!(root.ends_with(breeze_git::repo_key(first.workdir(), first.common_dir())));
            assert_eq!(root.parent().unwrap(), std::fs::canonicalize(&folder).unwrap_or(folder));
            assert_eq!(again.worktree_root().unwrap(), root, "the same on every open");
            assert_ne!(other.worktree_root().unwrap(), root, "another clone, another folder");
        }
        None => assert!(matches!(first.worktree_root(), Err(GitError::NoWorktreeRoot { .. }))),
    }
}

#[test]
fn a_clean_worktree_an_earlier_breeze_made_in_the_checkout_is_removed_and_its_branch_kept() {
    let repo = TestRepo::standard();
    let lane = legacy_worktree(&repo, "lane-1", Some("task/a"));
    write(&lane, "src/a.rs", "fn a() { done }\n");
    git(&lane, &["commit", "-q", "-am", "task a"]);
    let tip = rev(&lane, "HEAD");
    let integration = legacy_worktree(&repo, "integration", None);
    write(&integration, "target/scratch.o", "build output\n");
    write(&integration, "left-by-verify.txt", "not anyone's\n");
    let handle = repo.open();

    let elsewhere = handle.worktrees_elsewhere().unwrap();
    let found: Vec<(&str, &Path, &str)> = elsewhere
        .iter()
        .map(|wt| (wt.name.as_str(), wt.path.as_path(), wt.branch.as_str()))
        .collect();
    assert_eq!(
        found,
        [("integration", integration.as_path(), ""), ("lane-1", lane.as_path(), "task/a")]
    );
    for wt in &elsewhere {
        let outcome = handle.retire_worktree(wt).unwrap();
        assert!(matches!(outcome, RemoveOutcome::Removed { .. }), "{}: {outcome:?}", wt.name);
    }
    assert!(!lane.exists() && !integration.exists());
    assert_eq!(rev(repo.path(), "task/a"), tip, "its branch stays, with its work");
    assert_eq!(common::worktree_list(repo.path()).len(), 1, "git forgot them");
    assert!(handle.worktrees_elsewhere().unwrap().is_empty());

    // The names are free again, in the worktree folder.
    assert!(handle.worktree_name_free("lane-1").unwrap());
    let new = handle.create_worktree_on_branch("lane-1", "task/a", "r").unwrap();
    assert_eq!(new.path, repo.worktree("lane-1"));
    assert_eq!(read(&new.path, "src/a.rs"), "fn a() { done }\n");
    repo.fsck();
}

#[test]
fn one_an_earlier_breeze_made_that_holds_uncommitted_work_is_kept_and_said() {
    let repo = TestRepo::standard();
    let lane = legacy_worktree(&repo, "lane-1", Some("task/a"));
    write(&lane, "src/a.rs", "half done\n");
    write(&lane, "notes.txt", "mine\n");
    let handle = repo.open();

    let [wt] = handle.worktrees_elsewhere().unwrap().try_into().unwrap();
    match handle.retire_worktree(&wt).unwrap() {
        RemoveOutcome::KeptDirty { paths } => assert_eq!(paths, ["notes.txt", "src/a.rs"]),
        other => panic!("not kept: {other:?}"),
    }
    assert_eq!(read(&lane, "src/a.rs"), "half done\n");
    assert_eq!(read(&lane, "notes.txt"), "mine\n");
    // Its name stays taken: a new worktree of that name is refused with where the work is.
    assert!(!handle.worktree_name_free("lane-1").unwrap());
    let err = handle.create_worktree("lane-1", "task/b", repo.main_tip(), "r").unwrap_err();
    assert!(matches!(err, GitError::WorktreeConflict { .. }), "{err}");
    assert!(err.to_string().contains("uncommitted work"), "{err}");
    assert_eq!(read(&lane, "notes.txt"), "mine\n");
    // Another name is free, and `breeze clean --force` may still remove it.
    assert!(handle.worktree_name_free("lane-2").unwrap());
    let removed = handle.remove_worktree(&lane, None, true).unwrap();
    assert!(matches!(removed, RemoveOutcome::Removed { .. }), "{removed:?}");
    assert!(!lane.exists());
}

#[test]
fn a_new_worktree_retires_a_clean_one_of_its_name_made_elsewhere() {
    let repo = TestRepo::standard();
    let old = legacy_worktree(&repo, "review", None);
    let handle = repo.open();
    let review = handle
        .review_checkout(breeze_git::REVIEW_CHECKOUT, repo.main_tip(), Default::default())
        .unwrap();
    assert_eq!(review, repo.worktree("review"));
    assert!(!old.exists());
    assert_eq!(common::worktree_list(repo.path()).len(), 2);
    repo.fsck();
}

#[test]
fn worktrees_of_a_folder_configured_before_are_elsewhere_once_another_is_named() {
    let repo = TestRepo::standard();
    let before = repo.open();
    let lane = before.create_worktree("lane-1", "task/one", repo.main_tip(), "r").unwrap();
    let later = tempfile::tempdir().unwrap();
    let options = OpenOptions {
        worktree_root: WorktreeRoot::Under(later.path().to_path_buf()),
        ..OpenOptions::default()
    };
    let handle = Repo::open_with(repo.path(), &options).unwrap();
    assert_ne!(handle.worktree_root().unwrap(), before.worktree_root().unwrap());
    let elsewhere = handle.worktrees_elsewhere().unwrap();
    assert_eq!(elsewhere, std::slice::from_ref(&lane));
    assert!(matches!(handle.retire_worktree(&lane).unwrap(), RemoveOutcome::Removed { .. }));
    assert!(!lane.path.exists());
    assert!(handle.branch_exists("task/one").unwrap());
    // A user's worktree is never elsewhere, wherever it is.
    let theirs = tempfile::tempdir().unwrap();
    let path = theirs.path().join("lane-2");
    repo.git(&["worktree", "add", "-q", "-b", "mine", path.to_str().unwrap()]);
    assert!(handle.worktrees_elsewhere().unwrap().is_empty());
    assert!(matches!(handle.remove_worktree(&path, None, true), Err(GitError::NotManaged { .. })));
    assert!(path.exists());
}
