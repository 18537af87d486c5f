//! A lane's baseline (what breeze's own steps left in it) and lanes that outlive a run:
//! parked at main's tip, reused, repaired — each result checked with the `git` CLI.

mod common;

use std::path::PathBuf;

use breeze_git::{CommitOutcome, RemoveOutcome, WorkdirChanges};
use common::{TestRepo, git, read, rev, write};

/// The paths a commit changed, as the git CLI lists them.
fn committed_paths(dir: &std::path::Path, commit: &str) -> Vec<String> {
    git(dir, &["show", "--name-only", "--format=", commit]).lines().map(str::to_string).collect()
}

fn status(dir: &std::path::Path) -> String {
    git(dir, &["status", "--porcelain", "--untracked-files=all"])
}

#[test]
fn what_setup_left_is_not_committed_nor_work_left_behind() {
    let repo = TestRepo::with_files(&[
        ("package.json", "{\"name\":\"x\"}\n"),
        ("lib/a.js", "a\n"),
        (".gitignore", "node_modules/\n"),
    ]);
    let handle = repo.open();
    let lane = handle.create_worktree("lane-1", "task/one", repo.main_tip(), "breeze").unwrap();
    // What an install does: a new lockfile, a rewritten manifest, ignored dependencies.
    write(&lane.path, "package-lock.json", "{\"lockfileVersion\":3}\n");
    write(&lane.path, "package.json", "{\n  \"name\": \"x\"\n}\n");
    write(&lane.path, "node_modules/is-number/index.js", "module.exports = 1\n");
    let recorded = handle.record_baseline(&lane, WorkdirChanges::Unknown).unwrap();
    assert_eq!(recorded, ["package-lock.json", "package.json"]);
    assert_eq!(handle.baseline_paths(&lane), recorded);
    // git itself sees them as changes; breeze does not count them as the task's.
    assert_eq!(status(&lane.path), " M package.json\n?? package-lock.json");
    assert!(!handle.is_worktree_dirty(&lane.path).unwrap());
    let outcome = handle.commit_worktree(&lane, "nothing of the worker's").unwrap();
    assert!(matches!(outcome, CommitOutcome::Unchanged { .. }), "{outcome:?}");

    // The worker's own file is its change, and nothing else is.
    write(&lane.path, "lib/sub.js", "sub\n");
    let head = handle.commit_worktree(&lane, "the task").unwrap().head();
    assert_eq!(committed_paths(repo.path(), &head.to_string()), ["lib/sub.js"]);
    assert_eq!(git(repo.path(), &["show", &format!("{head}:package.json")]), "{\"name\":\"x\"}");
    // The baseline stays in the lane, as setup left it.
    assert_eq!(read(&lane.path, "package-lock.json"), "{\"lockfileVersion\":3}\n");
    assert_eq!(status(&lane.path), " M package.json\n?? package-lock.json");
    // A lane holding only its baseline is clean for removal.
    match handle.remove_worktree(&lane.path, None, false).unwrap() {
        RemoveOutcome::Removed { .. } => {}
        other => panic!("kept: {other:?}"),
    }
    assert!(!lane.path.exists());
}

#[test]
fn a_baseline_file_the_worker_changes_is_its_change() {
    let repo = TestRepo::with_files(&[("Cargo.toml", "[package]\n"), ("src/lib.rs", "\n")]);
    let handle = repo.open();
    let lane = handle.create_worktree("lane-1", "task/one", repo.main_tip(), "breeze").unwrap();
    // A check (`cargo test`) created the lockfile after the worker's files were committed.
    write(&lane.path, "Cargo.lock", "version = 4\n");
    let only = [PathBuf::from("Cargo.lock")];
    assert_eq!(handle.record_baseline(&lane, WorkdirChanges::Only(&only)).unwrap(), ["Cargo.lock"]);
    // Rewritten with the same bytes by the next build: still the check's, not committed.
    std::fs::remove_file(lane.path.join("Cargo.lock")).unwrap();
    write(&lane.path, "Cargo.lock", "version = 4\n");
    write(&lane.path, "src/lib.rs", "pub fn f() {}\n");
    let head = handle.commit_worktree(&lane, "round 2").unwrap().head();
    assert_eq!(committed_paths(repo.path(), &head.to_string()), ["src/lib.rs"]);
    // The worker adds a dependency: the lockfile it changed is its work, committed (and
    // from now on gated like any other file).
    write(&lane.path, "Cargo.lock", "version = 4\n[[package]]\nname = \"dep\"\n");
    let only = [PathBuf::from("Cargo.lock")];
    let head = handle
        .commit_worktree_changed(&lane, "round 3", WorkdirChanges::Only(&only))
        .unwrap()
        .head();
    assert_eq!(committed_paths(repo.path(), &head.to_string()), ["Cargo.lock"]);
    assert!(handle.baseline_paths(&lane).is_empty(), "no longer breeze's");
    handle.settle_lane_index(&lane).unwrap();
    assert_eq!(status(&lane.path), "");
}

#[test]
fn a_baseline_file_main_starts_tracking_gives_way_when_the_lane_moves() {
    let repo = TestRepo::with_files(&[("package.json", "{}\n")]);
    let handle = repo.open();
    let lane = handle.create_worktree("lane-1", "task/one", repo.main_tip(), "breeze").unwrap();
    write(&lane.path, "package-lock.json", "setup's\n");
    handle.record_baseline(&lane, WorkdirChanges::Unknown).unwrap();
    // Another task landed the lockfile: the next base tracks it.
    let next = repo.commit_on_main(&[("package-lock.json", "landed\n")], "lockfile");
    let moved = handle.move_worktree_changed(&lane, "task/two", next, WorkdirChanges::Only(&[]));
    let moved = moved.unwrap();
    assert_eq!(moved.branch, "task/two");
    // The test's `git status` is a person's git: the index file is written first.
    handle.settle_lane_index(&moved).unwrap();
    assert_eq!(read(&lane.path, "package-lock.json"), "landed\n");
    assert_eq!(status(&lane.path), "");
    assert!(handle.baseline_paths(&lane).is_empty());
}

#[test]
fn a_parked_lane_waits_at_mains_tip_clean_with_its_build_outputs() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let lane = handle.create_worktree("lane-1", "task/one", repo.main_tip(), "breeze").unwrap();
    write(&lane.path, "src/a.rs", "fn a() { one() }\n");
    write(&lane.path, "target/debug/app", "warm\n");
    write(&lane.path, "gen.lock", "setup's\n");
    handle.record_baseline(&lane, WorkdirChanges::Only(&[PathBuf::from("gen.lock")])).unwrap();
    let head = handle.commit_worktree(&lane, "task one").unwrap().head();
    let tip = repo.commit_on_main(&[("src/b.rs", "fn b() { two() }\n")], "other landing");

    let parked = handle.park_worktree(&lane, tip, WorkdirChanges::Only(&[])).unwrap();
    assert_eq!((parked.branch.as_str(), parked.base), ("", tip));
    assert_eq!(rev(&lane.path, "HEAD"), tip);
    assert!(
        common::git_output(&lane.path, &["symbolic-ref", "-q", "HEAD"]).status.code() == Some(1)
    );
    assert_eq!(status(&lane.path), "?? gen.lock", "only the baseline, which breeze leaves");
    assert!(!handle.is_worktree_dirty(&lane.path).unwrap());
    assert_eq!(read(&lane.path, "src/a.rs"), "fn a() {}\n");
    assert_eq!(read(&lane.path, "src/b.rs"), "fn b() { two() }\n");
    assert_eq!(read(&lane.path, "target/debug/app"), "warm\n", "build outputs stay");
    // Its task branch is free to go; the lane is found again as a parked one.
    assert!(handle.delete_branch("task/one").unwrap());
    assert!(
        common::git_output(repo.path(), &["rev-parse", "--verify", "-q", &head.to_string()])
            .status
            .success()
    );
    let found = handle.find_worktree("lane-1").unwrap().unwrap();
    assert_eq!((found.branch.as_str(), found.base), ("", tip));
    // Parking again is a no-op; the next run moves it to its task by the paths that differ.
    assert_eq!(handle.park_worktree(&found, tip, WorkdirChanges::Only(&[])).unwrap(), parked);
    let next = handle.move_worktree_changed(&found, "task/three", tip, WorkdirChanges::Only(&[]));
    assert_eq!(next.unwrap().branch, "task/three");
    assert_eq!(git(&lane.path, &["symbolic-ref", "HEAD"]), "refs/heads/task/three");
    assert_eq!(status(&lane.path), "?? gen.lock");
    repo.fsck();
}

/// The lane's index file, and whether libgit2 keeps what was staged in memory when asked
/// to read it again unless changed: what a breeze before the index files of its own
/// checkouts lost their checksum does before committing a worker's files.
fn older_breeze_keeps_staged(lane: &std::path::Path) -> (Vec<u8>, bool) {
    let file = lane.join(git(lane, &["rev-parse", "--git-path", "index"]));
    let bytes = std::fs::read(file).unwrap();
    let repo = git2::Repository::open(lane).unwrap();
    let mut index = repo.index().unwrap();
    std::fs::write(lane.join("staged.txt"), "staged\n").unwrap();
    index.add_path(std::path::Path::new("staged.txt")).unwrap();
    index.read(false).unwrap();
    let kept = index.get_path(std::path::Path::new("staged.txt"), 0).is_some();
    std::fs::remove_file(lane.join("staged.txt")).unwrap();
    (bytes, kept)
}

#[test]
fn a_parked_lane_can_be_taken_by_an_older_breeze() {
    use sha1::Digest as _;
    let repo = TestRepo::standard();
    let handle = repo.open();
    let lane = handle.create_worktree("lane-1", "task/one", repo.main_tip(), "breeze").unwrap();
    write(&lane.path, "src/a.rs", "fn a() { one() }\n");
    handle.commit_worktree(&lane, "task one").unwrap();
    let tip = repo.commit_on_main(&[("src/b.rs", "fn b() { two() }\n")], "other landing");
    let lane = handle.move_worktree(&lane, "task/two", tip).unwrap();
    // In use, the file has no checksum (git's `index.skipHash`)...
    let (bytes, kept) = older_breeze_keeps_staged(&lane.path);
    assert_eq!(bytes[bytes.len() - 20..], [0; 20]);
    assert!(!kept, "an older breeze would lose what it staged in memory");

    handle.park_worktree(&lane, tip, WorkdirChanges::Only(&[])).unwrap();
    // ...parked, it has one again.
    let (bytes, kept) = older_breeze_keeps_staged(&lane.path);
    let (content, checksum) = bytes.split_at(bytes.len() - 20);
    assert_eq!(checksum, &sha1::Sha1::digest(content)[..]);
    assert!(kept);
    assert_eq!(status(&lane.path), "");
    // Parked again, the file has its checksum already and is left alone.
    let file = lane.path.join(git(&lane.path, &["rev-parse", "--git-path", "index"]));
    let inode =
        |file: &std::path::Path| std::os::unix::fs::MetadataExt::ino(&file.metadata().unwrap());
    let parked = inode(&file);
    handle.park_worktree(&lane, tip, WorkdirChanges::Only(&[])).unwrap();
    assert_eq!(inode(&file), parked, "rewritten");
    // This breeze takes it on as before.
    let next = handle.move_worktree_changed(&lane, "task/three", tip, WorkdirChanges::Only(&[]));
    assert_eq!(next.unwrap().branch, "task/three");
    assert_eq!(status(&lane.path), "");
    repo.fsck();
}

#[test]
fn a_parked_lane_changed_between_runs_is_saved_and_put_back() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let lane = handle.create_worktree("lane-1", "task/one", repo.main_tip(), "breeze").unwrap();
    write(&lane.path, "gen.lock", "setup's\n");
    handle.record_baseline(&lane, WorkdirChanges::Unknown).unwrap();
    let tip = repo.main_tip();
    let lane = handle.park_worktree(&lane, tip, WorkdirChanges::Only(&[])).unwrap();
    handle.delete_branch("task/one").unwrap();
    assert_eq!(handle.save_lane_leftovers(&lane, WorkdirChanges::Unknown).unwrap(), None);

    // Someone edits a tracked file and leaves a new one in the parked lane.
    write(&lane.path, "src/a.rs", "fn a() { edited() }\n");
    write(&lane.path, "notes/todo.md", "mine\n");
    let (branch, paths) =
        handle.save_lane_leftovers(&lane, WorkdirChanges::Unknown).unwrap().unwrap();
    assert_eq!(branch, "breeze/leftovers/lane-1");
    assert_eq!(paths, ["notes/todo.md", "src/a.rs"]);
    // Nothing is lost: the branch holds them on top of the lane's HEAD.
    assert_eq!(git(repo.path(), &["show", &format!("{branch}:notes/todo.md")]), "mine");
    assert_eq!(rev(repo.path(), &format!("{branch}^")), tip);
    let saved: Vec<String> = committed_paths(repo.path(), &branch);
    assert_eq!(saved, ["notes/todo.md", "src/a.rs"], "the baseline is not saved: {saved:?}");
    // The lane is as it was parked, its baseline still there.
    assert_eq!(status(&lane.path), "?? gen.lock");
    assert_eq!(read(&lane.path, "src/a.rs"), "fn a() {}\n");
    assert!(!lane.path.join("notes").exists());
    assert_eq!(rev(&lane.path, "HEAD"), tip);
    // A second time takes the next name.
    write(&lane.path, "src/b.rs", "fn b() { again() }\n");
    let (again, _) = handle.save_lane_leftovers(&lane, WorkdirChanges::Unknown).unwrap().unwrap();
    assert_eq!(again, "breeze/leftovers/lane-1-2");
    repo.fsck();
}

/// A later run reads a parked lane's index ahead of its first task, before it holds the
/// repository's lock; what someone staged in the lane after that read is still found,
/// saved and put back, not taken for the lane as read.
#[test]
fn a_parked_lane_read_ahead_still_sees_what_another_git_staged_since() {
    let repo = TestRepo::standard();
    let lane = {
        let earlier_run = repo.open();
        let tip = repo.main_tip();
        let lane = earlier_run.create_worktree("lane-1", "task/one", tip, "breeze").unwrap();
        let lane = earlier_run.park_worktree(&lane, tip, WorkdirChanges::Only(&[])).unwrap();
        earlier_run.delete_branch("task/one").unwrap();
        lane
    };
    let later_run = repo.open();
    // A lane that is not there is passed over.
    for lane in ["lane-1", "lane-2"] {
        later_run.preload_checkout(lane);
    }
    assert!(!later_run.worktree_root().unwrap().join("lane-2").exists());
    write(&lane.path, "src/a.rs", "fn a() { staged() }\n");
    git(&lane.path, &["add", "src/a.rs"]);
    write(&lane.path, "src/a.rs", "fn a() {}\n");
    assert_eq!(status(&lane.path), "MM src/a.rs");
    // Only the index tells: the file is as HEAD has it.
    let (_, paths) =
        later_run.save_lane_leftovers(&lane, WorkdirChanges::Unknown).unwrap().unwrap();
    assert_eq!(paths, ["src/a.rs"]);
    assert_eq!(status(&lane.path), "");
    repo.fsck();
}

#[test]
fn python_bytecode_caches_are_never_a_tasks_change() {
    // The project's .gitignore does not mention them.
    let repo = TestRepo::with_files(&[("app/main.py", "print(1)\n"), (".gitignore", ".env\n")]);
    let handle = repo.open();
    let lane = handle.create_worktree("lane-1", "task/one", repo.main_tip(), "breeze").unwrap();
    write(&lane.path, "app/__pycache__/main.cpython-312.pyc", "bytecode");
    write(&lane.path, "legacy.pyc", "bytecode");
    write(&lane.path, "app/util.py", "def f(): pass\n");
    assert!(status(&lane.path).contains("?? app/__pycache__/main.cpython-312.pyc"));
    let head = handle.commit_worktree(&lane, "the task").unwrap().head();
    assert_eq!(committed_paths(repo.path(), &head.to_string()), ["app/util.py"]);
    assert!(!handle.is_worktree_dirty(&lane.path).unwrap());
}

#[test]
fn the_locks_a_killed_commit_left_in_a_lane_are_removed_and_the_lane_commits_again() {
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let handle = repo.open();
    let lane = handle.create_worktree("lane-1", "task/one", repo.main_tip(), "breeze").unwrap();
    write(&lane.path, "b.txt", "b\n");
    // What an engine killed mid-commit leaves: the branch's ref lock and the index lock.
    let ref_lock = repo.path().join(".git/refs/heads/task/one.lock");
    let index_lock = repo.path().join(".git/worktrees/lane-1/index.lock");
    std::fs::write(&ref_lock, "").unwrap();
    std::fs::write(&index_lock, "").unwrap();
    assert!(handle.commit_worktree(&lane, "the task").is_err(), "the locks stop a commit");

    let removed = handle.remove_left_lane_locks(&lane).unwrap();
    assert_eq!(removed.len(), 2, "{removed:?}");
    assert!(!ref_lock.exists() && !index_lock.exists());
    let head = handle.commit_worktree(&lane, "the task").unwrap().head();
    assert_eq!(git(repo.path(), &["rev-parse", "task/one"]).trim(), head.to_string());
    assert_eq!(committed_paths(repo.path(), &head.to_string()), ["b.txt"]);
    assert!(handle.remove_left_lane_locks(&lane).unwrap().is_empty(), "none left");
}
