//! The update of the user's checkout during a landing: every path replaced atomically,
//! the index entries written with the files' stat data, the update announced before its
//! first path, and an update a kill cut short finished or undone on resume.
//!
//! A kill is simulated by a panic in the observer at the wanted moment: everything after
//! it is skipped, exactly as if the process had died there (the scratch files stay).

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use breeze_git::{
    AdvanceOutcome, CheckoutObserver, CheckoutUpdate, MergeOutcome, Oid, Repo, Worktree,
    landing_message,
};
use common::{TestRepo, git, read, write};

/// What an observer heard, in order.
#[derive(Default)]
struct Heard {
    events: Vec<String>,
    update: Option<CheckoutUpdate>,
    /// Panic (the simulated kill) once this many paths are placed.
    die_after: Option<usize>,
    /// Checked when the update is announced: nothing of it may be written yet.
    before_first_path: Option<Box<dyn Fn()>>,
    /// Panic (the simulated kill) once the update is complete, before main moves.
    die_when_updated: bool,
}

impl CheckoutObserver for Heard {
    fn updating(&mut self, update: &CheckoutUpdate) -> std::io::Result<()> {
        if let Some(check) = &self.before_first_path {
            check();
        }
        self.events.push(format!("updating {}", update.paths));
        self.update = Some(update.clone());
        Ok(())
    }

    fn placed(&mut self, done: usize, total: usize) {
        self.events.push(format!("placed {done}/{total}"));
        if self.die_after == Some(done) {
            panic!("killed after {done} of {total} paths");
        }
    }

    fn updated(&mut self, update: &CheckoutUpdate) {
        self.events.push(format!("updated {}", update.paths));
        if self.die_when_updated {
            panic!("killed with every path written");
        }
    }
}

/// A task worktree off main, where the test plays the worker with the git CLI.
fn task(repo: &TestRepo, handle: &Repo, name: &str) -> Worktree {
    handle
        .create_worktree(&format!("task-{name}"), &format!("task/{name}"), repo.main_tip(), "r")
        .unwrap()
}

/// Runs `script` in the worktree with `sh`, then commits everything as the worker.
fn worker_does(wt: &Worktree, script: &str) -> Oid {
    let status = std::process::Command::new("sh")
        .args(["-c", script])
        .current_dir(&wt.path)
        .status()
        .unwrap();
    assert!(status.success(), "{script}");
    git(&wt.path, &["add", "-A"]);
    git(&wt.path, &["-c", "user.name=W", "-c", "user.email=w@x", "commit", "-q", "-m", "work"]);
    common::rev(&wt.path, "HEAD")
}

/// The landing commit of `head` onto main's tip.
fn landing_commit(handle: &Repo, wt: &Worktree, head: Oid) -> (Oid, Oid) {
    let onto = handle.main_tip().unwrap();
    let MergeOutcome::Clean { tree } = handle.merge_task(wt.base, head, onto).unwrap() else {
        panic!("expected a clean merge")
    };
    let message = landing_message("the task", None, "1", "run-1", 1);
    (onto, handle.write_landing_commit(tree, onto, head, &message).unwrap())
}

/// Paths whose stat data in the index does not match the file (`git diff-files` does not
/// refresh the index, so a file git would have to re-hash shows up here).
fn stat_dirty(repo: &TestRepo) -> String {
    repo.git(&["diff-files", "--name-only"])
}

fn scratch_left(repo: &TestRepo) -> bool {
    repo.path().join(".git/breeze-landing").exists()
}

/// The standard repository and the landing commit (with main's tip under it) of a task
/// that adds twenty files and changes `src/a.rs`: 21 paths.
fn twenty_file_landing() -> (TestRepo, Repo, Oid, Oid) {
    landing_in(
        TestRepo::standard(),
        "for i in $(seq 0 19); do echo \"// $i\" > src/gen$i.rs; done; echo 'fn a() { task }' > src/a.rs",
    )
}

/// The landing commit (with main's tip under it) of a task whose worker runs `script` in
/// a lane of `repo`.
fn landing_in(repo: TestRepo, script: &str) -> (TestRepo, Repo, Oid, Oid) {
    let handle = repo.open();
    let wt = task(&repo, &handle, "t");
    let head = worker_does(&wt, script);
    let (onto, commit) = landing_commit(&handle, &wt, head);
    (repo, handle, onto, commit)
}

#[test]
fn every_kind_of_path_is_replaced_and_git_has_nothing_to_rehash() {
    let repo = TestRepo::with_files(&[
        ("README.md", "# demo\n"),
        ("src/a.rs", "fn a() {}\n"),
        ("d/one", "one\n"),
        ("d/two", "two\n"),
        ("f", "a file that becomes a folder\n"),
        ("run.sh", "echo run\n"),
        ("gone.txt", "deleted by the task\n"),
        ("docs/guide.md", "guide\n"),
    ]);
    let (repo, handle, onto, commit) = landing_in(
        repo,
        "rm -r d && echo 'a folder became this file' > d \
         && rm f && mkdir f && echo inner > f/inner \
         && chmod +x run.sh && rm gone.txt && ln -s README.md link \
         && echo 'fn a() { task }' > src/a.rs \
         && mkdir -p new/deep && echo new > new/deep/file.txt",
    );
    // The user's own state elsewhere.
    write(repo.path(), "docs/guide.md", "guide, edited\n");
    write(repo.path(), "scratch.txt", "mine\n");

    let root = repo.path().to_path_buf();
    let mut heard = Heard {
        before_first_path: Some(Box::new(move || {
            assert!(root.join("d").is_dir() && !root.join("new").exists(), "nothing written yet");
        })),
        ..Heard::default()
    };
    let outcome = handle.advance_main_observed(onto, commit, &mut heard).unwrap();
    assert!(matches!(outcome, AdvanceOutcome::Advanced { .. }), "{outcome:?}");
    let update = heard.update.clone().unwrap();
    assert_eq!((update.from, update.to, update.paths), (onto, commit, 10));
    assert_eq!(update.checkout, std::fs::canonicalize(repo.path()).unwrap());
    let mut expected = vec!["updating 10".to_string()];
    expected.extend((1..=10).map(|n| format!("placed {n}/10")));
    expected.push("updated 10".into());
    assert_eq!(heard.events, expected);

    assert_eq!(repo.main_tip(), commit);
    assert_eq!(repo.status(), " M docs/guide.md\n?? scratch.txt");
    assert_eq!(stat_dirty(&repo), "docs/guide.md", "every landed path has its stat data");
    assert_eq!(repo.git(&["diff", "main", "--name-only"]), "docs/guide.md");
    assert_eq!(read(repo.path(), "d"), "a folder became this file\n");
    assert_eq!(read(repo.path(), "f/inner"), "inner\n");
    assert_eq!(std::fs::read_link(repo.path().join("link")).unwrap().to_str(), Some("README.md"));
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(repo.path().join("run.sh")).unwrap().permissions().mode();
    assert_ne!(mode & 0o100, 0, "run.sh is executable");
    assert!(!repo.path().join("gone.txt").exists());
    assert!(!scratch_left(&repo), "the scratch folder is removed");
    repo.fsck();
}

#[test]
fn an_observer_that_cannot_record_the_update_stops_the_landing_before_any_file() {
    let (repo, handle, onto, commit) = twenty_file_landing();
    struct Full;
    impl CheckoutObserver for Full {
        fn updating(&mut self, _: &CheckoutUpdate) -> std::io::Result<()> {
            Err(std::io::Error::other("disk full"))
        }
    }
    let err = handle.advance_main_observed(onto, commit, &mut Full).unwrap_err();
    assert!(err.to_string().contains("disk full"), "{err}");
    assert_eq!(repo.main_tip(), onto);
    assert_eq!(repo.status(), "");
    assert!(!repo.path().join("src/gen0.rs").exists());
}

#[test]
fn a_file_the_user_stages_while_a_landing_is_under_way_stays_staged() {
    // The landing reads the user's index once, from a copy, before it writes anything;
    // `git add` by the user after that copy must not be lost when the index is replaced.
    let (repo, handle, onto, commit) = twenty_file_landing();
    write(repo.path(), "notes.txt", "the user's own\n");
    let at = repo.path().to_path_buf();
    let mut heard = Heard {
        before_first_path: Some(Box::new(move || {
            git(&at, &["add", "notes.txt"]);
        })),
        ..Heard::default()
    };
    let outcome = handle.advance_main_observed(onto, commit, &mut heard).unwrap();
    assert!(matches!(outcome, AdvanceOutcome::Advanced { .. }), "{outcome:?}");
    assert_eq!(repo.main_tip(), commit);
    assert_eq!(repo.status(), "A  notes.txt", "the user's staged file, and nothing else");
    assert_eq!(stat_dirty(&repo), "");
    assert!(!scratch_left(&repo));
    repo.fsck();
}

/// Lands the twenty files, killed after `die_after` paths; the update the observer heard.
fn killed_landing(handle: &Repo, onto: Oid, commit: Oid, die_after: usize) -> CheckoutUpdate {
    let mut heard = Heard { die_after: Some(die_after), ..Heard::default() };
    let result = catch_unwind(AssertUnwindSafe(|| {
        let _ = handle.advance_main_observed(onto, commit, &mut heard);
    }));
    assert!(result.is_err(), "the simulated kill happened");
    heard.update.unwrap()
}

#[test]
fn an_update_killed_half_way_is_undone_on_resume_and_the_users_file_kept() {
    let (repo, handle, onto, commit) = twenty_file_landing();
    let update = killed_landing(&handle, onto, commit, 11);
    assert_eq!(repo.main_tip(), onto, "main did not move");
    // Each path is old or new, never half-written: src/a.rs and gen0, gen1, gen10…gen17
    // are placed (in byte order), the rest not.
    assert_eq!(read(repo.path(), "src/a.rs"), "fn a() { task }\n");
    for i in 0..20 {
        let path = repo.path().join(format!("src/gen{i}.rs"));
        let placed = i < 2 || (10..=17).contains(&i);
        assert_eq!(path.exists(), placed, "gen{i}");
        if placed {
            assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("// {i}\n"));
        }
    }
    assert!(scratch_left(&repo), "the kill left its scratch files");

    // While breeze is dead, the user writes one of the landing's files and one of theirs.
    write(repo.path(), "src/gen0.rs", "mine\n");
    write(repo.path(), "docs/guide.md", "guide, edited\n");

    let recovery = handle.finish_checkout_update(&update).unwrap();
    assert_eq!(recovery.target, onto, "main had not moved: the old version comes back");
    assert_eq!(recovery.kept, ["src/gen0.rs"]);
    assert_eq!(recovery.rewritten, 10);
    assert_eq!(repo.status(), " M docs/guide.md\n?? src/gen0.rs");
    assert_eq!(stat_dirty(&repo), "docs/guide.md");
    assert_eq!(read(repo.path(), "src/a.rs"), "fn a() {}\n");
    assert_eq!(read(repo.path(), "src/gen0.rs"), "mine\n");
    assert!(!scratch_left(&repo));

    // The landing tried again waits for the user's file, and names only it.
    match handle.advance_main(onto, commit).unwrap() {
        AdvanceOutcome::Deferred { paths, .. } => assert_eq!(paths, ["src/gen0.rs"]),
        other => panic!("expected a deferral, got {other:?}"),
    }
    std::fs::remove_file(repo.path().join("src/gen0.rs")).unwrap();
    let outcome = handle.advance_main(onto, commit).unwrap();
    assert!(matches!(outcome, AdvanceOutcome::Advanced { .. }), "{outcome:?}");
    assert_eq!(repo.status(), " M docs/guide.md");
    assert_eq!(stat_dirty(&repo), "docs/guide.md");
    repo.fsck();
}

#[test]
fn an_update_whose_main_already_moved_is_completed_on_resume() {
    let (repo, handle, onto, commit) = twenty_file_landing();
    let update = killed_landing(&handle, onto, commit, 5);
    // main points at the landing (moved by hand here: in a real run only the compare-and-
    // swap moves it, after the whole update).
    repo.git(&["update-ref", "refs/heads/main", &commit.to_string(), &onto.to_string()]);
    write(repo.path(), "src/gen19.rs", "mine\n");

    let recovery = handle.finish_checkout_update(&update).unwrap();
    assert_eq!(recovery.target, commit);
    assert_eq!(recovery.kept, ["src/gen19.rs"]);
    assert_eq!(repo.status(), " M src/gen19.rs", "only the user's file differs from main");
    assert_eq!(read(repo.path(), "src/gen19.rs"), "mine\n");
    assert_eq!(read(repo.path(), "src/gen9.rs"), "// 9\n");
    assert_eq!(repo.git(&["diff", "main", "--name-only"]), "src/gen19.rs");
    assert!(!scratch_left(&repo));

    // Once finished, finishing again changes nothing.
    let again = handle.finish_checkout_update(&update).unwrap();
    assert_eq!(
        (again.rewritten, again.kept.as_slice()),
        (0, ["src/gen19.rs".to_string()].as_slice())
    );
    repo.fsck();
}

#[test]
fn an_update_killed_after_main_moved_needs_nothing_more() {
    let (repo, handle, onto, commit) = twenty_file_landing();
    let mut heard = Heard::default();
    let outcome = handle.advance_main_observed(onto, commit, &mut heard).unwrap();
    assert!(matches!(outcome, AdvanceOutcome::Advanced { .. }));
    let recovery = handle.finish_checkout_update(&heard.update.unwrap()).unwrap();
    assert_eq!((recovery.target, recovery.rewritten, recovery.kept.len()), (commit, 0, 0));
    assert_eq!(repo.status(), "");
}

#[test]
fn a_main_lock_left_by_a_kill_inside_the_compare_and_swap_is_removed_on_resume() {
    let (repo, handle, onto, commit) = twenty_file_landing();
    let mut heard = Heard { die_when_updated: true, ..Heard::default() };
    let killed = catch_unwind(AssertUnwindSafe(|| {
        let _ = handle.advance_main_observed(onto, commit, &mut heard);
    }));
    assert!(killed.is_err(), "the simulated kill happened");
    let update = heard.update.clone().unwrap();
    // What libgit2 leaves when killed holding main's ref: its lock, still empty.
    let lock = repo.path().join(".git/refs/heads/main.lock");
    std::fs::write(&lock, "").unwrap();

    let recovery = handle.finish_checkout_update(&update).unwrap();
    assert!(!lock.exists(), "the lock the kill left is removed");
    assert_eq!((recovery.target, recovery.rewritten), (onto, 21), "main had not moved");
    assert_eq!(repo.status(), "");
    let outcome = handle.advance_main(onto, commit).unwrap();
    assert!(matches!(outcome, AdvanceOutcome::Advanced { .. }), "{outcome:?}");
    assert_eq!(repo.main_tip(), commit);

    // A lock naming another commit is another git process's: it stays.
    std::fs::write(&lock, format!("{onto}\n")).unwrap();
    handle.finish_checkout_update(&update).unwrap();
    assert!(lock.exists(), "another process's lock is kept");
    std::fs::remove_file(&lock).unwrap();
    repo.fsck();
}

#[test]
fn leftovers_of_a_kill_are_removed_and_a_foreign_index_lock_is_kept() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let git_dir = repo.path().join(".git");
    // Killed between taking index.lock (a hard link of the scratch index) and renaming it.
    std::fs::create_dir_all(git_dir.join("breeze-landing/new/src")).unwrap();
    std::fs::write(git_dir.join("breeze-landing/new/src/x.rs"), "x").unwrap();
    std::fs::copy(git_dir.join("index"), git_dir.join("breeze-landing/index")).unwrap();
    std::fs::hard_link(git_dir.join("breeze-landing/index"), git_dir.join("index.lock")).unwrap();
    let cleaned = handle.remove_landing_leftovers().unwrap();
    assert_eq!(cleaned.len(), 1);
    assert!(!git_dir.join("breeze-landing").exists());
    assert!(!git_dir.join("index.lock").exists());
    assert_eq!(repo.status(), "");

    // Another git process's lock is not breeze's to remove.
    std::fs::create_dir_all(git_dir.join("breeze-landing")).unwrap();
    std::fs::write(git_dir.join("index.lock"), "held by git").unwrap();
    handle.remove_landing_leftovers().unwrap();
    assert!(git_dir.join("index.lock").exists());
}

#[test]
fn line_endings_are_written_as_a_checkout_writes_them() {
    let repo = TestRepo::with_files(&[
        (".gitattributes", "*.txt text eol=crlf\n"),
        ("notes.txt", "one\r\n"),
        ("d/inner.txt", "a folder that becomes a file\r\n"),
    ]);
    let (repo, handle, onto, commit) = landing_in(
        repo,
        "printf 'one\\r\\ntwo\\r\\n' > notes.txt && rm -r d && printf 'now a file\\r\\n' > d",
    );
    let outcome = handle.advance_main(onto, commit).unwrap();
    assert!(matches!(outcome, AdvanceOutcome::Advanced { .. }), "{outcome:?}");
    assert_eq!(read(repo.path(), "notes.txt"), "one\r\ntwo\r\n", "smudged to CRLF");
    assert_eq!(repo.git(&["show", "main:notes.txt"]), "one\ntwo", "stored with LF");
    assert_eq!(repo.status(), "");
    assert_eq!(read(repo.path(), "d"), "now a file\r\n", "a folder that became a file too");
    repo.fsck();
}

/// Lands a task whose worker runs `script` in a new task worktree `name` off main's tip;
/// the landing commit.
fn land(repo: &TestRepo, handle: &Repo, name: &str, script: &str) -> Oid {
    let wt = task(repo, handle, name);
    let head = worker_does(&wt, script);
    let (onto, commit) = landing_commit(handle, &wt, head);
    let outcome = handle.advance_main(onto, commit).unwrap();
    assert!(matches!(outcome, AdvanceOutcome::Advanced { .. }), "{outcome:?}");
    commit
}

/// The index of the user's checkout as git lists it, and HEAD's tree in the same form.
fn index_and_head(repo: &TestRepo) -> (String, String) {
    let index = repo.git(&["ls-files", "--stage"]);
    let head: Vec<String> = repo
        .git(&["ls-tree", "-r", "HEAD"])
        .lines()
        .map(|line| {
            // `<mode> blob <id>\t<path>` → `<mode> <id> 0\t<path>`, as `ls-files --stage`.
            let (meta, path) = line.split_once('\t').unwrap();
            let fields: Vec<&str> = meta.split(' ').collect();
            format!("{} {} 0\t{path}", fields[0], fields[2])
        })
        .collect();
    (index, head.join("\n"))
}

#[test]
fn landings_one_after_another_leave_an_index_git_agrees_with() {
    // The second and third landings take the index the one before wrote, unread.
    let repo = TestRepo::standard();
    let handle = repo.open();
    land(&repo, &handle, "one", "echo one > one.txt && echo 'fn a() { one }' > src/a.rs");
    land(&repo, &handle, "two", "echo two > two.txt && rm src/b.rs");
    let third = land(&repo, &handle, "three", "mkdir -p deep/er && echo 3 > deep/er/three.txt");
    assert_eq!(repo.main_tip(), third);
    assert_eq!(repo.status(), "");
    assert_eq!(stat_dirty(&repo), "", "git has nothing to re-hash");
    let (index, head) = index_and_head(&repo);
    assert_eq!(index, head);
    // git takes the cache-tree the landings wrote as the index's tree.
    assert_eq!(repo.git(&["write-tree"]), repo.git(&["rev-parse", "HEAD^{tree}"]));
    repo.fsck();
}

#[test]
fn a_file_the_user_stages_between_two_landings_stays_staged() {
    // The index another git process wrote since the last landing is read again, not
    // replaced by the one that landing kept.
    let repo = TestRepo::standard();
    let handle = repo.open();
    land(&repo, &handle, "one", "echo one > one.txt");
    write(repo.path(), "notes.txt", "the user's own\n");
    repo.git(&["add", "notes.txt"]);
    land(&repo, &handle, "two", "echo two > two.txt");
    assert_eq!(repo.status(), "A  notes.txt", "the user's staged file, and nothing else");
    assert_eq!(stat_dirty(&repo), "");
    repo.fsck();
}

#[test]
fn a_second_landing_killed_half_way_is_undone_on_resume() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let first = land(&repo, &handle, "one", "echo one > one.txt");
    let wt = task(&repo, &handle, "two");
    let head = worker_does(&wt, "for i in $(seq 0 9); do echo $i > gen$i.txt; done");
    let (onto, commit) = landing_commit(&handle, &wt, head);
    assert_eq!(onto, first);
    let update = killed_landing(&handle, onto, commit, 4);
    let recovery = handle.finish_checkout_update(&update).unwrap();
    assert_eq!(recovery.target, first, "main had not moved: the old version comes back");
    assert_eq!(repo.status(), "");
    assert_eq!(stat_dirty(&repo), "");
    // The landing tried again reads the index the recovery wrote.
    let outcome = handle.advance_main(onto, commit).unwrap();
    assert!(matches!(outcome, AdvanceOutcome::Advanced { .. }), "{outcome:?}");
    assert_eq!(repo.status(), "");
    let (index, head) = index_and_head(&repo);
    assert_eq!(index, head);
    repo.fsck();
}

#[test]
fn the_users_staged_changes_in_folders_survive_landings_and_their_commit() {
    // breeze writes the user's index: folders of their staged changes are marked for git
    // to make again (their trees exist nowhere yet), and none is written into their
    // repository. The second landing takes the index the first kept, trees and all.
    let repo = TestRepo::standard();
    let handle = repo.open();
    land(&repo, &handle, "one", "echo one > one.txt");
    write(repo.path(), "notes/deep/todo.txt", "the user's own\n");
    write(repo.path(), "src/a.rs", "fn a() { mine }\n");
    repo.git(&["add", "notes", "src/a.rs"]);
    let wt = task(&repo, &handle, "two");
    let head = worker_does(&wt, "echo two > two.txt && mkdir -p notes && echo 2 > notes/two.txt");
    let (onto, commit) = landing_commit(&handle, &wt, head);
    let objects = repo.git(&["count-objects"]);
    let outcome = handle.advance_main(onto, commit).unwrap();
    assert!(matches!(outcome, AdvanceOutcome::Advanced { .. }), "{outcome:?}");
    assert_eq!(repo.git(&["count-objects"]), objects, "no object made in the user's repository");
    land(&repo, &handle, "three", "echo 'fn c() {}' > src/c.rs");
    assert_eq!(repo.status(), "A  notes/deep/todo.txt\nM  src/a.rs");
    assert_eq!(stat_dirty(&repo), "");
    repo.fsck();
    repo.git(&["-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm", "the user's"]);
    let committed = repo.git(&["diff", "--name-only", "HEAD~1", "HEAD"]);
    assert_eq!(committed, "notes/deep/todo.txt\nsrc/a.rs");
    assert_eq!(repo.git(&["show", "HEAD:notes/two.txt"]), "2");
    assert_eq!(repo.git(&["show", "HEAD:src/c.rs"]), "fn c() {}");
    assert_eq!(repo.status(), "");
    repo.fsck();
}

#[test]
fn landings_that_edit_files_leave_an_index_git_verifies() {
    // Each landing edits one file: its write of the user's index patches the last one's
    // bytes and hashes again only from the entry that changed (4,000 entries: the file
    // spans more than one of the SHA-1 states kept), early, late and in the middle of the
    // file. Nothing but the landings writes the index until the end (`git status` would).
    use sha1::Digest as _;
    let files: Vec<(String, String)> = (0..4000)
        .map(|n| (format!("d{:02}/f{n:04}.txt", n / 100), format!("file {n}\n")))
        .collect();
    let named: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
    let repo = TestRepo::with_files(&named);
    let handle = repo.open();
    let edits =
        [("early", "d00/f0001.txt"), ("late", "d39/f3999.txt"), ("middle", "d20/f2050.txt")];
    for (name, path) in edits {
        land(&repo, &handle, name, &format!("echo {name} >> {path}"));
        let bytes = std::fs::read(repo.path().join(".git/index")).unwrap();
        let (content, checksum) = bytes.split_at(bytes.len() - 20);
        assert_eq!(checksum, &sha1::Sha1::digest(content)[..], "the checksum after {path}");
        assert_eq!(stat_dirty(&repo), "", "git has nothing to re-hash after {path}");
        let (index, head) = index_and_head(&repo);
        assert!(index == head, "the index is HEAD after {path}");
        repo.fsck();
    }
    assert_eq!(repo.status(), "");
}

#[test]
fn the_users_index_read_ahead_is_taken_only_while_it_is_as_read() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    handle.preload_landing_indexes();
    assert!(!repo.path().join(".git/breeze-landing").exists(), "no copy is left behind");
    land(&repo, &handle, "one", "echo one > one.txt");
    assert_eq!(repo.status(), "");
    let (index, head) = index_and_head(&repo);
    assert_eq!(index, head, "the landing wrote the index it read ahead, with its path");

    // A later run reads ahead, then the user stages a file: its landing reads the index
    // again.
    let later = repo.open();
    later.preload_landing_indexes();
    write(repo.path(), "notes.txt", "the user's own\n");
    repo.git(&["add", "notes.txt"]);
    land(&repo, &later, "two", "echo two > two.txt");
    assert_eq!(repo.status(), "A  notes.txt", "the user's staged file, and nothing else");
    assert_eq!(stat_dirty(&repo), "");
    repo.fsck();
}
