//! What breeze reads of a worktree a worker wrote: sizes before bytes (a file above the
//! limit is refused from its `lstat` size, never hashed), no FIFO, socket or device ever
//! opened (removed instead), diffs that do not load big blobs, and long `git` children
//! ended when breeze stops.

mod common;

use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use breeze_git::{CommitOutcome, DEFAULT_MAX_FILE_BYTES, GitError, Repo, SpecialNode, Worktree};
use breeze_test_support::process::{HeldCheckouts, alive, bytes_read_by_this_process};
use common::{TestRepo, git, write};

fn lane(repo: &TestRepo, handle: &Repo) -> Worktree {
    handle.create_worktree("lane-1", "task/one", repo.main_tip(), "r").unwrap()
}

/// Runs `work` on its own thread: a call that blocks (reading a FIFO) fails the test
/// instead of hanging it.
fn without_hanging<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || sender.send(work()));
    receiver.recv_timeout(Duration::from_secs(120)).expect("the call blocked")
}

/// A sparse file of `size` bytes (no disk used), like `truncate -s`.
fn sparse(path: &Path, size: u64) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::File::create(path).unwrap().set_len(size).unwrap();
}

#[test]
fn files_above_the_limit_are_refused_from_their_size_without_being_read() {
    const SIZE: u64 = 64 << 30;
    let repo = TestRepo::standard();
    // A tracked empty file: libgit2's status hashes a file whose recorded size was 0.
    write(repo.path(), "src/empty.py", "");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "empty"]);
    let handle = repo.open();
    let wt = lane(&repo, &handle);
    write(&wt.path, "src/a.rs", "fn a() { changed() }\n");
    sparse(&wt.path.join("big.bin"), SIZE);
    sparse(&wt.path.join("src/empty.py"), 4 << 30);
    // Ignored: never staged, so it may be as big as it likes.
    sparse(&wt.path.join("target/cache.bin"), SIZE);

    let before = bytes_read_by_this_process();
    let err = handle.commit_worktree(&wt, "task one").unwrap_err();
    let read = bytes_read_by_this_process() - before;
    eprintln!("read {read} bytes committing a worktree with {SIZE}- and 4 GiB sparse files");
    assert!(read < 64 << 20, "{read} bytes read: a big file was");
    let GitError::FilesRefused { too_big, max_file_bytes, nodes, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*max_file_bytes, DEFAULT_MAX_FILE_BYTES);
    assert_eq!(too_big, &[("big.bin".to_string(), SIZE), ("src/empty.py".to_string(), 4 << 30)]);
    assert!(nodes.is_empty());
    let message = err.to_string();
    assert!(
        message.starts_with("gate `file-size` failed: files above the 10485760-byte limit: `big.bin` (68719476736 bytes), `src/empty.py` (4294967296 bytes). Remove them"),
        "{message}"
    );
    // Nothing was staged or committed.
    assert_eq!(git(&wt.path, &["diff", "--cached", "--name-only"]), "");
    assert_eq!(git(&wt.path, &["rev-parse", "HEAD"]), repo.main_tip().to_string());

    // Without them (and with the ignored one still there), the rest commits.
    std::fs::remove_file(wt.path.join("big.bin")).unwrap();
    std::fs::write(wt.path.join("src/empty.py"), "").unwrap();
    let outcome = handle.commit_worktree(&wt, "task one").unwrap();
    assert!(matches!(outcome, CommitOutcome::Committed { paths: 1, .. }), "{outcome:?}");
    assert_eq!(git(&wt.path, &["show", "--name-only", "--format=", "HEAD"]), "src/a.rs");
}

#[test]
fn the_limit_is_the_repositorys_and_a_changed_folder_is_looked_into() {
    let repo = TestRepo::standard();
    let handle = repo.open().with_max_file_bytes(1000);
    let wt = lane(&repo, &handle);
    write(&wt.path, "src/new/deep/data.txt", &"x".repeat(1001));
    write(&wt.path, "src/new/small.txt", "small\n");
    let changed = [std::path::PathBuf::from("src/new")];
    let err = handle
        .commit_worktree_changed(&wt, "task one", breeze_git::WorkdirChanges::Only(&changed))
        .unwrap_err();
    let GitError::FilesRefused { too_big, .. } = &err else { panic!("{err:?}") };
    assert_eq!(too_big, &[("src/new/deep/data.txt".to_string(), 1001)]);
}

#[test]
fn fifos_sockets_where_files_were_are_removed_never_opened() {
    let repo = TestRepo::standard();
    let handle = std::sync::Arc::new(repo.open());
    let wt = lane(&repo, &handle);
    // A FIFO where a tracked file was: libgit2 would open it to hash it, and wait forever
    // for a writer.
    std::fs::remove_file(wt.path.join("src/a.rs")).unwrap();
    mkfifo(&wt.path.join("src/a.rs"));
    let _socket = std::os::unix::net::UnixListener::bind(wt.path.join("docs/agent.sock")).unwrap();
    write(&wt.path, "src/b.rs", "fn b() { changed() }\n");

    let err = {
        let (handle, wt) = (handle.clone(), wt.clone());
        without_hanging(move || handle.commit_worktree(&wt, "task one")).unwrap_err()
    };
    let GitError::FilesRefused { too_big, nodes, .. } = &err else { panic!("{err:?}") };
    assert!(too_big.is_empty());
    assert_eq!(
        nodes,
        &[
            SpecialNode { path: "docs/agent.sock".into(), kind: "a socket", removed: true },
            SpecialNode { path: "src/a.rs".into(), kind: "a FIFO", removed: true },
        ]
    );
    let message = err.to_string();
    assert!(
        message.contains("`src/a.rs` is a FIFO; only files, symlinks and folders can be committed (breeze removed it from the worktree)"),
        "{message}"
    );
    assert!(std::fs::symlink_metadata(wt.path.join("src/a.rs")).is_err(), "removed");
    assert!(std::fs::symlink_metadata(wt.path.join("docs/agent.sock")).is_err(), "removed");

    // The next commit takes what is left: the change and the deletion.
    let outcome = handle.commit_worktree(&wt, "task one").unwrap();
    assert!(matches!(outcome, CommitOutcome::Committed { paths: 2, .. }), "{outcome:?}");
    let files = git(&wt.path, &["show", "--name-status", "--format=", "HEAD"]);
    assert_eq!(files, "D\tsrc/a.rs\nM\tsrc/b.rs");
}

#[test]
fn a_big_file_the_repository_tracks_counts_only_once_it_changes() {
    let repo = TestRepo::standard();
    let handle = repo.open().with_max_file_bytes(1000);
    let base = repo.commit_on_main(&[("assets/logo.svg", &"<svg/>\n".repeat(500))], "logo");
    let wt = handle.create_worktree("lane-1", "task/one", base, "r").unwrap();
    assert!(!handle.is_worktree_dirty(&wt.path).unwrap(), "untouched: not in the way");
    write(&wt.path, "src/b.rs", "fn b() { changed() }\n");
    let outcome = handle.commit_worktree(&wt, "task one").unwrap();
    assert!(matches!(outcome, CommitOutcome::Committed { paths: 1, .. }), "{outcome:?}");
    write(&wt.path, "assets/logo.svg", &"<svg />\n".repeat(500));
    assert!(handle.is_worktree_dirty(&wt.path).unwrap());
    let err = handle.commit_worktree(&wt, "task one").unwrap_err();
    let GitError::FilesRefused { too_big, .. } = &err else { panic!("{err:?}") };
    assert_eq!(too_big, &[("assets/logo.svg".to_string(), 4000)]);
}

#[test]
fn a_fifo_in_an_ignored_folder_is_left_alone() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let wt = lane(&repo, &handle);
    std::fs::create_dir_all(wt.path.join("target")).unwrap();
    mkfifo(&wt.path.join("target/build.pipe"));
    write(&wt.path, "src/b.rs", "fn b() { changed() }\n");
    let outcome = handle.commit_worktree(&wt, "task one").unwrap();
    assert!(matches!(outcome, CommitOutcome::Committed { paths: 1, .. }), "{outcome:?}");
    assert!(wt.path.join("target/build.pipe").exists(), "not breeze's to remove");
}

#[test]
fn the_reviewer_diff_shows_a_blob_above_the_limit_by_its_size_unread() {
    let repo = TestRepo::standard();
    let handle = repo.open().with_max_file_bytes(1000);
    let base = repo.main_tip();
    let big = "line\n".repeat(300);
    let head = repo.commit_on_main(&[("notes.txt", &big), ("small.txt", "small\n")], "two");
    let patch = handle.diff_patch(base, head).unwrap();
    assert!(
        patch.contains("File b/notes.txt: 1500 bytes, above the size limit (1000 bytes); not read"),
        "{patch}"
    );
    assert!(patch.contains("+small"), "{patch}");
    assert!(!patch.contains("+line"), "{patch}");
    // Under the default limit it is text.
    assert!(repo.open().diff_patch(base, head).unwrap().contains("+line"));
}

#[test]
fn a_stop_ends_a_slow_cli_checkout_and_its_filter_and_rolls_the_lane_back() {
    let repo =
        TestRepo::with_files(&[("a.dat", "REAL:1\n"), (".gitattributes", "*.dat filter=slow\n")]);
    let outside = tempfile::tempdir().unwrap();
    let held = HeldCheckouts::configure(repo.path(), outside.path());
    let handle = std::sync::Arc::new(repo.open());
    assert!(handle.external_filters().is_some());

    let base = repo.main_tip();
    let adding = {
        let handle = handle.clone();
        std::thread::spawn(move || handle.create_worktree("lane-1", "task/one", base, "r"))
    };
    let filter = held.wait_until_held();
    let asked = Instant::now();
    handle.stop_long_steps();
    let result = adding.join().unwrap();
    eprintln!("the checkout stopped {:?} after the stop was asked for", asked.elapsed());
    assert!(matches!(result, Err(GitError::Cancelled { .. })), "{result:?}");
    assert!(!alive(filter), "the filter process was ended with git");
    // Rolled back: no worktree, no branch; a repository opened afresh does it in full.
    assert!(!repo.worktree("lane-1").exists());
    assert!(!git(repo.path(), &["worktree", "list"]).contains("lane-1"));
    held.release();
    let wt = repo.open().create_worktree("lane-1", "task/one", base, "r").unwrap();
    assert_eq!(std::fs::read_to_string(wt.path.join("a.dat")).unwrap(), "REAL:1\n");
    repo.fsck();
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}
