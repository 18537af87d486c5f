//! Opening repositories: what is accepted, what is refused with a clear message, and the
//! repository-wide helpers.

mod common;

use breeze_git::{GitError, OpenOptions, Repo};
use common::{TestRepo, git, git_output, write};

#[test]
fn opens_from_root_subdirectory_and_linked_worktree() {
    let repo = TestRepo::standard();
    let canonical = std::fs::canonicalize(repo.path()).unwrap();
    let from_root = Repo::open(repo.path()).unwrap();
    assert_eq!(from_root.workdir(), canonical);
    assert_eq!(from_root.main_branch(), "main");
    assert_eq!(from_root.main_tip().unwrap(), repo.main_tip());

    let from_sub = Repo::open(&repo.path().join("src")).unwrap();
    assert_eq!(from_sub.workdir(), canonical);

    // A linked worktree made by the user: breeze works on the primary checkout.
    let linked = tempfile::tempdir().unwrap();
    let linked_path = linked.path().join("feature");
    repo.git(&["worktree", "add", "-q", "-b", "feature", linked_path.to_str().unwrap()]);
    let from_linked = Repo::open(&linked_path).unwrap();
    assert_eq!(from_linked.workdir(), canonical);
    assert_eq!(from_linked.main_branch(), "main");
}

#[test]
fn master_is_used_when_there_is_no_main_and_empty_main_explains() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "master"]);
    git(dir.path(), &["config", "user.name", "U"]);
    git(dir.path(), &["config", "user.email", "u@example.com"]);
    let unborn = Repo::open(dir.path()).unwrap();
    assert_eq!(unborn.main_branch(), "master");
    let err = unborn.main_tip().unwrap_err();
    assert!(matches!(err, GitError::NoCommits { .. }), "{err}");
    assert!(err.to_string().contains("make a first commit"), "{err}");

    write(dir.path(), "a.txt", "a\n");
    git(dir.path(), &["add", "a.txt"]);
    git(dir.path(), &["commit", "-q", "-m", "one"]);
    let repo = Repo::open(dir.path()).unwrap();
    assert_eq!(repo.main_branch(), "master");
    assert_eq!(repo.main_tip().unwrap(), common::rev(dir.path(), "master"));

    let configured = Repo::open_with(
        dir.path(),
        &OpenOptions { main_branch: Some("trunk".into()), ..OpenOptions::default() },
    )
    .unwrap();
    assert_eq!(configured.main_branch(), "trunk");
    // The repository has commits: a configured branch that is not there is missing, not
    // "without commits yet".
    let err = configured.main_tip().unwrap_err();
    assert!(matches!(err, GitError::MainMissing { .. }), "{err}");
    assert!(err.to_string().contains("`trunk` does not exist"), "{err}");
}

#[test]
fn refuses_what_libgit2_cannot_handle_with_what_to_do() {
    let not_repo = tempfile::tempdir().unwrap();
    let err = Repo::open(not_repo.path()).unwrap_err();
    assert!(matches!(err, GitError::NotARepository { .. }), "{err}");

    let bare = tempfile::tempdir().unwrap();
    git(bare.path(), &["init", "-q", "--bare"]);
    let err = Repo::open(bare.path()).unwrap_err();
    assert!(matches!(err, GitError::BareRepository { .. }), "{err}");
    assert!(err.to_string().contains("git clone"), "{err}");

    let sha256 = tempfile::tempdir().unwrap();
    git(sha256.path(), &["init", "-q", "--object-format=sha256"]);
    let err = Repo::open(sha256.path()).unwrap_err();
    assert!(err.to_string().contains("SHA-256"), "{err}");

    let reftable = tempfile::tempdir().unwrap();
    git(reftable.path(), &["init", "-q", "--ref-format=reftable"]);
    let err = Repo::open(reftable.path()).unwrap_err();
    assert!(err.to_string().contains("reftable"), "{err}");
    assert!(err.to_string().contains("git refs migrate"), "{err}");

    let sparse = TestRepo::standard();
    sparse.git(&["sparse-checkout", "set", "src"]);
    let err = Repo::open(sparse.path()).unwrap_err();
    assert!(err.to_string().contains("sparse checkout"), "{err}");
    assert!(err.to_string().contains("git sparse-checkout disable"), "{err}");
    sparse.git(&["sparse-checkout", "disable"]);
    Repo::open(sparse.path()).expect("usable again once sparse checkout is off");

    let split = TestRepo::standard();
    split.git(&["update-index", "--split-index"]);
    let err = Repo::open(split.path()).unwrap_err();
    assert!(err.to_string().contains("split index"), "{err}");
    split.git(&["update-index", "--no-split-index"]);
    Repo::open(split.path()).expect("usable again without the split index");
}

#[test]
fn an_index_found_readable_is_read_again_once_it_changed() {
    // Opening remembers the index file it found readable, as it was (a run opens its
    // repository twice): once it changed, it is looked at again.
    let repo = TestRepo::standard();
    Repo::open(repo.path()).unwrap();
    Repo::open(repo.path()).unwrap();
    repo.git(&["update-index", "--split-index"]);
    let err = Repo::open(repo.path()).unwrap_err();
    assert!(err.to_string().contains("split index"), "{err}");
}

#[test]
fn ensure_excluded_is_idempotent_and_hides_breeze_dirs_from_status() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    std::fs::create_dir_all(repo.path().join(".breeze/runs")).unwrap();
    std::fs::write(repo.path().join(".breeze/runs/x.json"), "{}").unwrap();
    std::fs::create_dir_all(repo.path().join(".harness-worktrees/junk")).unwrap();
    std::fs::write(repo.path().join(".harness-worktrees/junk/f"), "x").unwrap();
    assert!(repo.status().contains(".breeze/"));

    handle.ensure_excluded().unwrap();
    handle.ensure_excluded().unwrap();
    assert_eq!(repo.status(), "", "breeze dirs must not show in git status");
    let exclude = std::fs::read_to_string(repo.path().join(".git/info/exclude")).unwrap();
    assert_eq!(exclude.matches("/.breeze/").count(), 1);
    assert_eq!(exclude.matches("/.harness-worktrees/").count(), 1);
    // No tracked file was touched.
    assert_eq!(repo.git(&["diff", "HEAD", "--stat"]), "");
}

#[test]
fn mid_merge_and_mid_rebase_are_refused() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    handle.ensure_not_mid_operation().unwrap();

    repo.git(&["switch", "-q", "-c", "side"]);
    repo.commit_on_main(&[("src/a.rs", "side\n")], "side change");
    repo.git(&["switch", "-q", "main"]);
    repo.commit_on_main(&[("src/a.rs", "main\n")], "main change");
    let out = git_output(repo.path(), &["merge", "side"]);
    assert!(!out.status.success(), "the merge must conflict");
    let err = handle.ensure_not_mid_operation().unwrap_err();
    assert!(matches!(err, GitError::MidOperation { operation: "merge", .. }), "{err}");
    assert!(err.to_string().contains("git merge --abort"), "{err}");
    repo.git(&["merge", "--abort"]);

    let out = git_output(repo.path(), &["rebase", "side"]);
    assert!(!out.status.success(), "the rebase must stop on the conflict");
    let err = handle.ensure_not_mid_operation().unwrap_err();
    assert!(err.to_string().contains("rebase"), "{err}");
    assert!(err.to_string().contains("git rebase --abort"), "{err}");
}

#[test]
fn slug_is_reachable_from_repo() {
    assert_eq!(Repo::slug("2.1"), "2.1");
    assert!(Repo::slug("../../etc").starts_with("etc-"));
}

#[test]
fn repo_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Repo>();
    // Many rounds of concurrent adds, with libgit2 and with CLI checkouts: breeze registers
    // each worktree itself (libgit2's add misfired its "already checked out" check while
    // another worktree was half-created, and two `git worktree add`s read each other's
    // half-written admin folders), so they must all succeed side by side.
    for round in 0..30 {
        let repo = TestRepo::standard();
        let handle =
            std::sync::Arc::new(if round % 2 == 0 { repo.open() } else { repo.open_cli() });
        let base = repo.main_tip();
        let threads: Vec<_> = (0..3)
            .map(|i| {
                let handle = handle.clone();
                std::thread::spawn(move || {
                    handle.create_worktree(&format!("lane-{i}"), &format!("task/{i}"), base, "r")
                })
            })
            .collect();
        for t in threads {
            let wt = t.join().unwrap().unwrap_or_else(|err| panic!("round {round}: {err}"));
            assert_eq!(git(&wt.path, &["status", "--porcelain"]), "");
        }
        assert_eq!(common::worktree_list(repo.path()).len(), 4);
        repo.fsck();
    }
}
