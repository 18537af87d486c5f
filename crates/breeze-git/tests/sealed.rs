//! Sealed lanes: a worker's git works on the lane's private git directory (the shared
//! repository is untouched, byte for byte), breeze never goes through a lane's `.git` file,
//! and what a role could have planted in a lane's admin folder — links, FIFOs, hard links, a
//! moved HEAD — is found, repaired and named. Checked with the git CLI.

mod common;

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use common::{TestRepo, git, git_output, read, rev, write};

/// Every file under `dir` with its bytes (links as their target), keyed by relative path.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            let key = path.strip_prefix(dir).unwrap().to_path_buf();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_symlink() {
                files.insert(key, std::fs::read_link(&path).unwrap().into_os_string().into_vec());
            } else {
                files.insert(key, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// The shared `.git` without the lanes' admin folders (which breeze writes).
fn shared_git(repo: &TestRepo) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = snapshot(&repo.path().join(".git"));
    files.retain(|path, _| !path.starts_with("worktrees"));
    files
}

/// Runs `f` on another thread; fails instead of hanging when it does not return.
fn without_hanging<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(f());
    });
    receiver
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what} hung (it opened a file a worker planted)"))
}

#[test]
fn a_sealed_lane_gives_the_workers_git_a_private_directory_and_leaves_the_shared_one_alone() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let wt = handle.create_worktree("lane-1", "task/1", repo.main_tip(), "test").unwrap();
    write(&wt.path, "src/a.rs", "fn a() { edited }\n");
    let before = shared_git(&repo);

    let private = handle.seal_lane(&wt).unwrap();
    assert_eq!(private, repo.path().join(".breeze/lanes/lane-1/git"));
    assert_eq!(handle.lane_git_writable(&wt), std::slice::from_ref(&private));
    assert_eq!(
        read(&wt.path, ".git").trim(),
        format!("gitdir: {}", private.display()),
        "the lane's .git names the private git directory"
    );
    // The worker's git, from the lane, as it would run it.
    assert_eq!(git(&wt.path, &["rev-parse", "--git-dir"]), private.display().to_string());
    assert_eq!(git(&wt.path, &["status", "--porcelain"]), " M src/a.rs", "the index copy");
    assert_eq!(git(&wt.path, &["log", "--format=%s", "main..HEAD"]), "");
    assert!(git(&wt.path, &["diff", "main", "--stat"]).contains("src/a.rs"));
    git(&wt.path, &["add", "-A"]);
    git(&wt.path, &["stash"]);
    assert_eq!(read(&wt.path, "src/a.rs"), "fn a() {}\n");
    git(&wt.path, &["stash", "pop"]);
    write(&wt.path, "new.txt", "new\n");
    git(&wt.path, &["add", "-A"]);
    git(&wt.path, &["commit", "-qm", "the worker's own commit"]);
    let own = git(&wt.path, &["rev-parse", "HEAD"]);
    assert!(!git_output(repo.path(), &["cat-file", "-e", &own]).status.success(), "private");
    // A repository the worker's tests create is its own (no variable leaks into it).
    let nested = wt.path.join("target/nested");
    std::fs::create_dir_all(&nested).unwrap();
    git(&nested, &["init", "-q"]);
    git(&nested, &["commit", "-q", "--allow-empty", "-m", "nested"]);
    assert_eq!(git(&nested, &["rev-list", "--count", "HEAD"]), "1");

    assert_eq!(shared_git(&repo), before, "no byte of the shared .git changed");
    assert!(handle.check_lane_links(&wt).unwrap().is_empty(), "a worker's seal is in order");
    assert_eq!(
        read(&wt.path, ".git").trim(),
        format!("gitdir: {}", handle.lane_admin_dir(&wt).display()),
        "at rest the lane's .git names its admin folder again"
    );
    // breeze commits the lane's files; the worker's commit counts for nothing.
    let head = handle.commit_worktree(&wt, "breeze").unwrap().head();
    assert_eq!(rev(repo.path(), "task/1"), head);
    assert_eq!(git(repo.path(), &["show", "task/1:new.txt"]), "new");
    assert_eq!(git(repo.path(), &["show", "task/1:src/a.rs"]), "fn a() { edited }");
    assert!(!git(repo.path(), &["log", "--all", "--format=%s"]).contains("own commit"));
    assert_eq!(git(&wt.path, &["status", "--porcelain"]), "", "target/ is ignored");
    repo.fsck();

    // The same task sealed again keeps the worker's objects; another task starts afresh.
    handle.seal_lane(&wt).unwrap();
    assert!(git_output(&wt.path, &["cat-file", "-e", &own]).status.success());
    handle.check_lane_links(&wt).unwrap();
    std::fs::remove_dir_all(wt.path.join("target")).unwrap();
    let moved = handle.move_worktree(&wt, "task/2", repo.main_tip()).unwrap();
    handle.seal_lane(&moved).unwrap();
    assert!(!git_output(&moved.path, &["cat-file", "-e", &own]).status.success());
    assert_eq!(git(&moved.path, &["rev-parse", "--abbrev-ref", "HEAD"]), "task/2");
    handle.check_lane_links(&moved).unwrap();

    // The private git directory goes with its lane.
    handle.remove_worktree(&moved.path, None, true).unwrap();
    assert!(!repo.path().join(".breeze/lanes/lane-1").exists());
}

#[test]
fn breeze_never_reads_what_a_worker_planted_in_its_private_git_directory() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let one = handle.create_worktree("lane-1", "task/1", repo.main_tip(), "test").unwrap();
    let two = handle.create_worktree("lane-2", "task/2", repo.main_tip(), "test").unwrap();
    let private = handle.seal_lane(&one).unwrap();
    let config = std::fs::read(repo.path().join(".git/config")).unwrap();
    // While lane 1's worker runs it owns its private git directory: a FIFO as its config
    // blocks any reader, a link as its index points at the user's checkout.
    std::fs::remove_file(private.join("config")).unwrap();
    let fifo = private.join("config");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    std::fs::remove_file(private.join("index")).unwrap();
    std::os::unix::fs::symlink(repo.path().join("README.md"), private.join("index")).unwrap();
    write(&one.path, "src/a.rs", "one\n");

    // Meanwhile breeze works on the other lane and on lane 1 itself: creating a worktree,
    // switching a lane's branch and deleting a branch make libgit2 open every worktree
    // through its `.git` file — breeze does none of that.
    let handle = std::sync::Arc::new(handle);
    let (shared, root, lane) = (handle.clone(), repo.path().to_path_buf(), one.clone());
    let head = without_hanging("breeze's git on the lanes", move || {
        let main = rev(&root, "main");
        shared.create_worktree("lane-3", "task/3", main, "test").unwrap();
        write(&two.path, "src/b.rs", "two\n");
        shared.commit_worktree(&two, "two").unwrap();
        shared.move_worktree(&two, "task/4", main).unwrap();
        assert!(shared.delete_branch("task/2").unwrap());
        shared.commit_worktree(&lane, "one").unwrap().head()
    });
    assert_eq!(git(repo.path(), &["show", &format!("{head}:src/a.rs")]), "one");
    assert_eq!(git(repo.path(), &["worktree", "list"]).lines().count(), 4);
    assert_eq!(std::fs::read(repo.path().join(".git/config")).unwrap(), config);
    assert_eq!(read(repo.path(), "README.md"), "# demo\n");

    // The next seal replaces the plants, never writing through them.
    handle.check_lane_links(&one).unwrap();
    handle.seal_lane(&one).unwrap();
    assert!(std::fs::symlink_metadata(private.join("index")).unwrap().is_file());
    assert_eq!(read(repo.path(), "README.md"), "# demo\n");
    assert_eq!(git(&one.path, &["status", "--porcelain"]), "");
    handle.check_lane_links(&one).unwrap();
    repo.fsck();
}

#[test]
fn links_fifos_and_hard_links_planted_in_a_lanes_admin_folder_are_removed_and_named() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let wt = handle.create_worktree("lane-1", "task/1", repo.main_tip(), "test").unwrap();
    let admin = handle.lane_admin_dir(&wt);
    let config = repo.path().join(".git/config");
    let config_bytes = std::fs::read(&config).unwrap();
    // What a role without kernel confinement could plant for breeze's own git to write
    // through: the HEAD reflog as a link to .git/config, the index as a link into the
    // user's checkout, a FIFO, a hard link to .git/config, and HEAD moved onto main.
    std::fs::create_dir_all(admin.join("logs")).unwrap();
    std::os::unix::fs::symlink(&config, admin.join("logs/HEAD")).unwrap();
    std::fs::remove_file(admin.join("index")).unwrap();
    std::os::unix::fs::symlink(repo.path().join("README.md"), admin.join("index")).unwrap();
    assert!(
        std::process::Command::new("mkfifo")
            .arg(admin.join("FETCH_HEAD"))
            .status()
            .unwrap()
            .success()
    );
    std::fs::hard_link(&config, admin.join("ORIG_HEAD")).unwrap();
    std::fs::write(admin.join("HEAD"), "ref: refs/heads/main\n").unwrap();

    let problems = handle.check_lane_links(&wt).unwrap();
    let text = problems.join("\n");
    for named in [
        "`logs/HEAD` in the admin folder of lane-1",
        &format!("was a symbolic link to `{}`", config.display()),
        "`index` in the admin folder of lane-1",
        "`FETCH_HEAD` in the admin folder of lane-1 (",
        "was a FIFO; removed",
        "`ORIG_HEAD` in the admin folder of lane-1",
        "was a hard link to another file (2 links); removed",
        "HEAD was changed to `ref: refs/heads/main`",
    ] {
        assert!(text.contains(named), "`{named}` is named: {text}");
    }
    assert!(handle.check_lane_links(&wt).unwrap().is_empty(), "repaired");

    // breeze's own git now commits in the lane (appending to logs/HEAD) without writing
    // .git/config or the user's README; the index was rebuilt from HEAD.
    write(&wt.path, "src/a.rs", "changed\n");
    let head = handle.commit_worktree(&wt, "after the repair").unwrap().head();
    assert_eq!(rev(repo.path(), "task/1"), head);
    assert_eq!(rev(repo.path(), "main"), repo.main_tip());
    assert_eq!(std::fs::read(&config).unwrap(), config_bytes, ".git/config byte for byte");
    assert_eq!(read(repo.path(), "README.md"), "# demo\n");
    assert!(std::fs::symlink_metadata(admin.join("logs/HEAD")).unwrap().is_file());
    assert_eq!(git(&wt.path, &["status", "--porcelain"]), "");
    repo.fsck();

    // Another lane's admin folder, checked without its HEAD (its worker may be running).
    std::os::unix::fs::symlink(&config, admin.join("ORIG_HEAD")).unwrap();
    let problems = handle.check_admin_folder("lane-1").unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(!admin.join("ORIG_HEAD").exists());
}

#[test]
fn an_overwritten_or_deleted_object_is_found_and_breezes_own_writes_and_gc_are_not() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let before = handle.shared_objects_print().unwrap();
    // breeze's own work (new objects) and git rewriting objects that exist are not damage.
    let wt = handle.create_worktree("lane-1", "task/1", repo.main_tip(), "test").unwrap();
    write(&wt.path, "src/a.rs", "new\n");
    handle.commit_worktree(&wt, "work").unwrap();
    git(repo.path(), &["hash-object", "-w", "README.md"]);
    assert!(handle.damaged_objects_since(&before).unwrap().is_empty());
    git(repo.path(), &["gc", "-q", "--prune=now"]);
    assert!(handle.damaged_objects_since(&before).unwrap().is_empty(), "packed, not lost");

    // An object written loose after the gc, then overwritten with another's bytes.
    write(repo.path(), "x.txt", "to be overwritten\n");
    let victim = git(repo.path(), &["hash-object", "-w", "x.txt"]);
    write(repo.path(), "y.txt", "evil\n");
    let evil = git(repo.path(), &["hash-object", "-w", "y.txt"]);
    let before = handle.shared_objects_print().unwrap();
    let file = |oid: &str| repo.path().join(".git/objects").join(&oid[..2]).join(&oid[2..]);
    let original = std::fs::read(file(&victim)).unwrap();
    std::fs::write(file(&victim), std::fs::read(file(&evil)).unwrap()).unwrap();
    let shown = format!(".git/objects/{}/{}", &victim[..2], &victim[2..]);
    assert_eq!(handle.damaged_objects_since(&before).unwrap(), [shown]);
    std::fs::write(file(&victim), &original).unwrap();
    std::fs::remove_file(file(&evil)).unwrap();
    let damaged = handle.damaged_objects_since(&before).unwrap();
    assert_eq!(damaged, [format!(".git/objects/{}/{}", &evil[..2], &evil[2..])], "deleted");
}

#[test]
fn sealing_replaces_links_planted_for_the_lanes_folders_instead_of_following_them() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let wt = handle.create_worktree("lane-1", "task/1", repo.main_tip(), "test").unwrap();
    // Without confinement a role could make breeze's folder for the lane a link to the
    // user's files (a mismatched branch note makes breeze reset what it finds there), and
    // the lane's `.git` a folder.
    let elsewhere = tempfile::tempdir().unwrap();
    write(elsewhere.path(), "git/keep.txt", "mine\n");
    std::fs::create_dir_all(repo.path().join(".breeze/lanes")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), repo.path().join(".breeze/lanes/lane-1")).unwrap();
    std::fs::remove_file(wt.path.join(".git")).unwrap();
    std::fs::create_dir(wt.path.join(".git")).unwrap();

    let private = handle.seal_lane(&wt).unwrap();
    assert_eq!(read(elsewhere.path(), "git/keep.txt"), "mine\n", "not followed");
    let home = std::fs::symlink_metadata(repo.path().join(".breeze/lanes/lane-1")).unwrap();
    assert!(home.is_dir(), "a real folder now");
    assert!(wt.path.join(".git.quarantined-1").is_dir(), "the planted .git moved aside");
    assert_eq!(git(&wt.path, &["rev-parse", "--git-dir"]), private.display().to_string());
    assert!(handle.check_lane_links(&wt).unwrap().is_empty());
    assert_eq!(git(&wt.path, &["rev-parse", "--abbrev-ref", "HEAD"]), "task/1");
}

#[test]
fn mains_tip_as_a_seal_wrote_it_is_not_taken_for_the_workers_commit() {
    // main moves (a landing of breeze's) before the guard's known tip follows, and a lane is
    // sealed in between: its private refs name main's new tip, which is not lane work.
    let repo = TestRepo::standard();
    let handle = repo.open();
    let before = repo.main_tip();
    let wt = handle.create_worktree("lane-1", "task/1", before, "test").unwrap();
    let landed = repo.commit_on_main(&[("landed.txt", "breeze's landing\n")], "landing");
    handle.seal_lane(&wt).unwrap();
    assert_eq!(rev(&wt.path, "main"), landed, "the private refs name main's new tip");
    assert!(handle.lane_commit_on_main_beyond(before, &[]).unwrap().is_none());

    // A commit the worker makes on top of it in its private directory, put on main, is found.
    write(&wt.path, "mine.txt", "mine\n");
    let own = common::worker_commit(&wt, "the worker's own commit");
    let private = handle.private_git_dir(&wt).display().to_string();
    git(repo.path(), &["fetch", "-q", &private, "refs/heads/task/1:refs/heads/fetched"]);
    git(repo.path(), &["update-ref", "refs/heads/main", &own.to_string()]);
    let found = handle.lane_commit_on_main_beyond(landed, &[]).unwrap();
    let found = found.expect("a commit made in the private git directory");
    assert_eq!(found.commit, own);
    assert!(found.source.contains("private git directory of lane-1"), "{}", found.source);
}

#[test]
fn a_lane_moved_to_another_task_keeps_only_what_breeze_writes_in_its_private_directory() {
    use std::os::unix::fs::MetadataExt;
    let repo = TestRepo::standard();
    let handle = repo.open();
    let wt = handle.create_worktree("lane-1", "task/1", repo.main_tip(), "test").unwrap();
    let private = handle.seal_lane(&wt).unwrap();
    let written = snapshot(&private);
    // The worker of task 1 leaves its own git's traces, a hook, links and a hard link to a
    // file of its lane in place of breeze's files.
    write(&wt.path, "src/a.rs", "fn a() { one }\n");
    git(&wt.path, &["add", "-A"]);
    git(&wt.path, &["commit", "-qm", "the worker's own"]);
    git(&wt.path, &["tag", "mine"]);
    write(&private, "hooks/post-checkout", "#!/bin/sh\necho planted\n");
    std::fs::remove_file(private.join("refs/heads/main")).unwrap();
    std::os::unix::fs::symlink(repo.path().join(".git/config"), private.join("refs/heads/main"))
        .unwrap();
    std::fs::remove_file(private.join("info/exclude")).unwrap();
    write(&wt.path, "notes.txt", "the lane's file\n");
    std::fs::hard_link(wt.path.join("notes.txt"), private.join("info/exclude")).unwrap();
    handle.check_lane_links(&wt).unwrap();
    std::fs::remove_file(wt.path.join("notes.txt")).unwrap();
    let head = handle.commit_worktree(&wt, "one").unwrap().head();

    let moved = handle.move_worktree(&wt, "task/2", head).unwrap();
    handle.seal_lane(&moved).unwrap();
    let now = snapshot(&private);
    let names = |files: &BTreeMap<PathBuf, Vec<u8>>| -> Vec<PathBuf> {
        files
            .keys()
            .map(|path| {
                PathBuf::from(
                    path.to_string_lossy().replace("task/1", "task/N").replace("task/2", "task/N"),
                )
            })
            .collect()
    };
    assert_eq!(names(&now), names(&written), "only what breeze writes is there");
    assert!(std::fs::symlink_metadata(private.join("refs/heads/main")).unwrap().is_file());
    assert_eq!(std::fs::metadata(private.join("info/exclude")).unwrap().nlink(), 1);
    assert_eq!(git(&moved.path, &["rev-parse", "--abbrev-ref", "HEAD"]), "task/2");
    assert_eq!(git(&moved.path, &["status", "--porcelain"]), "");
    assert_eq!(git(&moved.path, &["tag"]), "", "the worker's tag is gone");
    handle.check_lane_links(&moved).unwrap();

    // Moved on with a change, nothing reading the lane between two seals: the private
    // index breeze wrote is patched where it lies (the same file), and the worker's git
    // sees the new HEAD's contents as clean.
    let index = private.join("index");
    write(&moved.path, "src/b.rs", "fn b() { two }\n");
    let two = handle.commit_worktree(&moved, "two").unwrap().head();
    let third = handle.move_worktree(&moved, "task/3", two).unwrap();
    handle.seal_lane(&third).unwrap();
    handle.check_lane_links(&third).unwrap();
    let before = std::fs::metadata(&index).unwrap().ino();
    write(&third.path, "src/b.rs", "fn b() { three }\n");
    let three = handle.commit_worktree(&third, "three").unwrap().head();
    let fourth = handle.move_worktree(&third, "task/4", three).unwrap();
    handle.seal_lane(&fourth).unwrap();
    assert_eq!(std::fs::metadata(&index).unwrap().ino(), before, "patched in place");
    assert_eq!(git(&fourth.path, &["status", "--porcelain"]), "");
    assert_eq!(git(&fourth.path, &["diff", "--cached", "--stat", "HEAD"]), "");
    // A worker's git that wrote the index (a new file) has it replaced whole next time.
    write(&fourth.path, "src/a.rs", "fn a() { four }\n");
    git(&fourth.path, &["add", "src/a.rs"]);
    handle.check_lane_links(&fourth).unwrap();
    let four = handle.commit_worktree(&fourth, "four").unwrap().head();
    let fifth = handle.move_worktree(&fourth, "task/5", four).unwrap();
    handle.seal_lane(&fifth).unwrap();
    assert_eq!(git(&fifth.path, &["status", "--porcelain"]), "");
    assert_eq!(git(&fifth.path, &["diff", "--cached", "--stat", "HEAD"]), "");
    handle.check_lane_links(&fifth).unwrap();
    repo.fsck();
}

/// A later run reads a parked lane ahead: the lane's index and the worker's copy of it
/// (written alike when the lane was parked) are taken as breeze's own writes, so sealing the
/// lane for its first task patches the copy where it lies instead of writing it whole —
/// and the worker's git reads the new task's HEAD as clean.
#[test]
fn a_parked_lane_read_ahead_has_its_workers_index_patched_in_place_when_sealed_again() {
    use breeze_git::WorkdirChanges;
    use std::os::unix::fs::MetadataExt as _;
    let repo = TestRepo::standard();
    let index = {
        let earlier_run = repo.open();
        let tip = repo.main_tip();
        let wt = earlier_run.create_worktree("lane-1", "task/1", tip, "test").unwrap();
        earlier_run.seal_lane(&wt).unwrap();
        write(&wt.path, "src/b.rs", "fn b() { one }\n");
        earlier_run.commit_worktree(&wt, "one").unwrap();
        let landed = repo.commit_on_main(&[("src/b.rs", "fn b() { one }\n")], "landing of one");
        let parked = earlier_run.park_worktree(&wt, landed, WorkdirChanges::Unknown).unwrap();
        earlier_run.delete_branch("task/1").unwrap();
        earlier_run.private_git_dir(&parked).join("index")
    };
    let before = std::fs::metadata(&index).unwrap().ino();
    let later_run = repo.open();
    later_run.preload_checkout("lane-1");
    let lane = later_run.find_worktree("lane-1").unwrap().unwrap();
    let tip = repo.main_tip();
    let moved = later_run.move_worktree(&lane, "task/2", tip).unwrap();
    later_run.seal_lane(&moved).unwrap();
    assert_eq!(std::fs::metadata(&index).unwrap().ino(), before, "patched in place");
    assert_eq!(git(&moved.path, &["rev-parse", "--abbrev-ref", "HEAD"]), "task/2");
    assert_eq!(git(&moved.path, &["status", "--porcelain"]), "");
    assert_eq!(git(&moved.path, &["diff", "--cached", "--stat", "HEAD"]), "");
    assert_eq!(read(&moved.path, "src/b.rs"), "fn b() { one }\n");
    repo.fsck();
}
