//! Committing a worker's leftovers, the rename-aware change list, the reviewer diff and the
//! mechanical gates (the two that ask for attention in review_diff.rs).

mod common;

use std::collections::BTreeMap;

use breeze_git::{
    ChangeKind, ChangeTip, ChangeView, CommitOutcome, EntryMode, GATE_AGENT_CONFIG, GATE_FILE_SIZE,
    GATE_NESTED_REPO, GATE_OPAQUE_CONTENT, GATE_PLANS_MARKERS, GATE_SYMLINK_ESCAPE, GATE_WRITE_SET,
    GateConfig, GitError, Oid, Repo, WorkdirChanges::Unknown, Worktree,
};
use breeze_protocol::{GateResult, GateStatus};
use common::{TestRepo, git, prefixes, rev, worker_commit, write};

fn task(repo: &TestRepo, handle: &Repo, name: &str) -> Worktree {
    handle
        .create_worktree(&format!("task-{name}"), &format!("task/{name}"), repo.main_tip(), "r")
        .unwrap()
}

/// The lane is clean after a commit, as another breeze process finds it (the committing
/// handle's index is not there: the index file was left behind HEAD) and as git finds it
/// once that process wrote the index file.
fn clean_after_commit(repo: &TestRepo, wt: &Worktree) {
    let fresh = repo.open();
    assert!(!fresh.is_worktree_dirty(&wt.path).unwrap(), "the commit left nothing uncommitted");
    fresh.settle_lane_index(wt).unwrap();
    assert_eq!(git(&wt.path, &["status", "--porcelain"]), "");
}

#[test]
fn commit_worktree_stages_new_modified_deleted_but_not_ignored() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let wt = task(&repo, &handle, "c");
    write(&wt.path, "src/a.rs", "fn a() { changed() }\n");
    write(&wt.path, "src/new/deep.rs", "fn deep() {}\n");
    std::fs::remove_file(wt.path.join("docs/guide.md")).unwrap();
    write(&wt.path, "target/out.o", "build\n");
    write(&wt.path, "run.log", "log\n");
    write(&wt.path, ".env", "SECRET\n");
    std::os::unix::fs::symlink("a.rs", wt.path.join("src/alias.rs")).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(wt.path.join("src/b.rs"), std::fs::Permissions::from_mode(0o755))
        .unwrap();

    // The engine's commit: the index file is left behind HEAD (`clean_after_commit`).
    let outcome = handle.commit_worktree_changed(&wt, "task c: work", Unknown).unwrap();
    let CommitOutcome::Committed { head, paths } = outcome else { panic!("{outcome:?}") };
    assert_eq!(paths, 5);
    assert_eq!(rev(&wt.path, "task/c"), head);
    clean_after_commit(&repo, &wt);
    let files = git(&wt.path, &["show", "--name-status", "--format=", "HEAD"]);
    assert_eq!(
        files.lines().collect::<Vec<_>>(),
        vec![
            "D\tdocs/guide.md",
            "M\tsrc/a.rs",
            "A\tsrc/alias.rs",
            "M\tsrc/b.rs",
            "A\tsrc/new/deep.rs"
        ]
    );
    assert_eq!(
        git(&wt.path, &["ls-files", "-s", "src/alias.rs"]).split(' ').next(),
        Some("120000")
    );
    assert_eq!(git(&wt.path, &["ls-files", "-s", "src/b.rs"]).split(' ').next(), Some("100755"));
    assert_eq!(
        git(&wt.path, &["log", "-1", "--format=%s|%an <%ae>"]),
        "task c: work|Repo Owner <owner@example.com>"
    );

    // Nothing left: unchanged; the worker committing itself is kept as is.
    assert_eq!(handle.commit_worktree(&wt, "again").unwrap(), CommitOutcome::Unchanged { head });
    write(&wt.path, "src/b.rs", "fn b() { worker }\n");
    let own = worker_commit(&wt, "worker's own commit");
    assert_eq!(
        handle.commit_worktree(&wt, "again").unwrap(),
        CommitOutcome::Unchanged { head: own }
    );
    repo.fsck();
}

#[test]
fn commit_worktree_stages_a_file_replaced_by_a_directory_and_back() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let wt = task(&repo, &handle, "d");
    // A tracked file becomes a directory of the same name…
    std::fs::remove_file(wt.path.join("docs/guide.md")).unwrap();
    write(&wt.path, "docs/guide.md/index.md", "# guide\n");
    write(&wt.path, "docs/guide.md/part.md", "part\n");
    // …and a tracked directory becomes a file.
    std::fs::remove_dir_all(wt.path.join("src")).unwrap();
    write(&wt.path, "src", "now a file\n");
    let outcome = handle.commit_worktree_changed(&wt, "task d: work", Unknown).unwrap();
    let CommitOutcome::Committed { head, .. } = outcome else { panic!("{outcome:?}") };
    let files = git(&wt.path, &["ls-tree", "-r", "--name-only", &head.to_string()]);
    assert!(
        files.contains("docs/guide.md/index.md") && files.contains("docs/guide.md/part.md"),
        "{files}"
    );
    assert!(files.lines().any(|l| l == "src"), "{files}");
    assert!(!files.contains("src/a.rs"), "{files}");
    clean_after_commit(&repo, &wt);
    repo.fsck();
}

#[test]
fn commit_worktree_refuses_moved_head_and_rewritten_history() {
    let repo = TestRepo::standard();
    let handle = repo.open();
    let wt = task(&repo, &handle, "h");
    git(&wt.path, &["switch", "-q", "-c", "elsewhere"]);
    write(&wt.path, "src/a.rs", "x\n");
    let err = handle.commit_worktree(&wt, "m").unwrap_err();
    assert!(matches!(err, GitError::HeadMoved { .. }), "{err}");
    assert!(err.to_string().contains("switch task/h"), "{err}");
    git(&wt.path, &["switch", "-q", "task/h"]);

    git(&wt.path, &["checkout", "-q", "--detach"]);
    let err = handle.commit_worktree(&wt, "m").unwrap_err();
    assert!(err.to_string().contains("detached"), "{err}");
    git(&wt.path, &["switch", "-q", "task/h"]);

    // The worker reset its branch below the base (an orphan history).
    git(&wt.path, &["checkout", "-q", "--orphan", "tmp"]);
    git(&wt.path, &["commit", "-q", "-m", "orphan"]);
    git(&wt.path, &["branch", "-f", "task/h", "tmp"]);
    git(&wt.path, &["switch", "-q", "task/h"]);
    let err = handle.commit_worktree(&wt, "m").unwrap_err();
    assert!(matches!(err, GitError::NotFromBase { .. }), "{err}");
}

#[test]
fn changed_paths_are_rename_aware_and_count_modes_and_types() {
    let repo = TestRepo::with_files(&[
        ("src/long.rs", &"line of code that is long enough to be similar\n".repeat(20)),
        ("src/run.sh", "echo hi\n"),
        ("src/target.rs", "t\n"),
        ("old.txt", "bye\n"),
    ]);
    let handle = repo.open();
    let base = repo.main_tip();
    let wt = task(&repo, &handle, "p");
    std::fs::create_dir_all(wt.path.join("lib")).unwrap();
    git(&wt.path, &["mv", "src/long.rs", "lib/long.rs"]);
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(wt.path.join("src/run.sh"), std::fs::Permissions::from_mode(0o755))
        .unwrap();
    std::fs::remove_file(wt.path.join("src/target.rs")).unwrap();
    std::os::unix::fs::symlink("run.sh", wt.path.join("src/target.rs")).unwrap();
    std::fs::remove_file(wt.path.join("old.txt")).unwrap();
    write(&wt.path, "added.txt", "hi\n");
    let head = handle.commit_worktree(&wt, "p").unwrap().head();

    let changes = handle.changed_paths(base, head).unwrap();
    let summary: Vec<(ChangeKind, Option<&str>, Option<&str>)> =
        changes.iter().map(|c| (c.kind, c.old_path.as_deref(), c.new_path.as_deref())).collect();
    assert_eq!(
        summary,
        vec![
            (ChangeKind::Added, None, Some("added.txt")),
            (ChangeKind::Renamed, Some("src/long.rs"), Some("lib/long.rs")),
            (ChangeKind::Deleted, Some("old.txt"), None),
            (ChangeKind::Modified, Some("src/run.sh"), Some("src/run.sh")),
            (ChangeKind::TypeChanged, Some("src/target.rs"), Some("src/target.rs")),
        ]
    );
    let run = changes.iter().find(|c| c.path() == "src/run.sh").unwrap();
    assert_eq!((run.old_mode, run.new_mode), (EntryMode::File, EntryMode::Executable));
    let renamed = changes.iter().find(|c| c.kind == ChangeKind::Renamed).unwrap();
    assert_eq!(renamed.touched_paths(), vec!["src/long.rs", "lib/long.rs"]);
    // git agrees on the rename.
    let git_view =
        git(repo.path(), &["diff", "-M", "--name-status", &base.to_string(), &head.to_string()]);
    assert!(git_view.contains("src/long.rs\tlib/long.rs"), "{git_view}");

    let patch = handle.diff_patch(base, head).unwrap();
    assert!(patch.contains("rename from src/long.rs"), "{patch}");
    assert!(patch.contains("old mode 100644\nnew mode 100755"), "{patch}");
    assert!(patch.contains("+hi\n"), "{patch}");
    assert!(patch.contains("-bye\n"), "{patch}");

    // A review round's one diff gives what the calls alone give.
    let config = any_path_1024_bytes();
    let review = handle.change_for_review(base, head, &config).unwrap();
    assert_eq!(review.changes, changes);
    assert_eq!(review.patch, patch);
    assert_eq!(review.gates, handle.run_gates(base, head, &config).unwrap());
}

#[test]
fn a_lanes_change_shows_its_commits_and_what_is_not_committed_yet_as_git_sees_it() {
    let repo = TestRepo::with_files(&[
        ("keep.txt", "same\n"),
        ("edit.txt", "one\n"),
        ("gone.txt", "bye\n"),
        (".gitignore", "*.log\n"),
    ]);
    let handle = repo.open();
    let base = repo.main_tip();
    let wt = handle.create_worktree("task-show", "task/show", base, "r").unwrap();
    write(&wt.path, "edit.txt", "one\ncommitted\n");
    let head = worker_commit(&wt, "worker");
    // Not committed: an edit, a deletion, a new file in a new folder, an ignored file.
    write(&wt.path, "edit.txt", "one\ncommitted\nnot yet\n");
    std::fs::remove_file(wt.path.join("gone.txt")).unwrap();
    write(&wt.path, "new/file.txt", "fresh\n");
    write(&wt.path, "build.log", "noise\n");

    let patch = handle.show_change(base, ChangeTip::Checkout(&wt.path), ChangeView::Patch).unwrap();
    for line in ["+committed\n", "+not yet\n", "-bye\n", "+fresh\n", "+++ b/new/file.txt"] {
        assert!(patch.contains(line), "{line:?} in {patch}");
    }
    assert!(!patch.contains("noise") && !patch.contains("keep.txt"), "{patch}");
    // The branch alone: only what is committed.
    let committed = handle.show_change(base, ChangeTip::Commit(head), ChangeView::Patch).unwrap();
    assert!(committed.contains("+committed\n") && !committed.contains("not yet"), "{committed}");

    // The stats git prints for the same change (everything added to a scratch index).
    let stat = handle.show_change(base, ChangeTip::Checkout(&wt.path), ChangeView::Stat).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let index = scratch.path().join("index");
    let own = git(&wt.path, &["rev-parse", "--path-format=absolute", "--git-path", "index"]);
    std::fs::copy(own, &index).unwrap();
    let cli = |args: &[&str]| {
        let mut command = std::process::Command::new("git");
        breeze_test_support::hermetic(&mut command);
        let out = command.current_dir(&wt.path).env("GIT_INDEX_FILE", &index).args(args).output();
        String::from_utf8_lossy(&out.unwrap().stdout).trim().to_string()
    };
    cli(&["add", "-A"]);
    let shortstat = cli(&["diff", "--cached", "--shortstat", &base.to_string()]);
    assert_eq!(stat.lines().last().map(str::trim), Some(shortstat.as_str()), "{stat}");
    for name in ["edit.txt", "gone.txt", "new/file.txt"] {
        assert!(stat.contains(name), "{name} in {stat}");
    }
    assert_eq!(shortstat, "3 files changed, 3 insertions(+), 1 deletion(-)");
}

fn markers(text: &str) -> BTreeMap<String, String> {
    // Stand-in for the planner's plans_md::status_markers: `| id | ... | cc:xxx |` rows.
    text.lines()
        .filter_map(|line| {
            let cells: Vec<&str> =
                line.split('|').map(str::trim).filter(|c| !c.is_empty()).collect();
            let status = cells.last()?;
            status.starts_with("cc:").then(|| (cells[0].to_string(), status.to_string()))
        })
        .collect()
}

/// Gates for a task that may write anything, files up to 1024 bytes, without a Plans.md.
fn any_path_1024_bytes() -> GateConfig<'static> {
    fn any_path(_: &str) -> bool {
        true
    }
    GateConfig {
        in_write_set: &any_path,
        max_file_bytes: 1024,
        plans_file: None,
        status_markers: &markers,
    }
}

fn run_gates(
    handle: &Repo,
    base: Oid,
    head: Oid,
    writes: &'static [&'static str],
    max: u64,
) -> Vec<GateResult> {
    let in_write_set = prefixes(writes);
    let config = GateConfig {
        in_write_set: &in_write_set,
        max_file_bytes: max,
        plans_file: Some("Plans.md"),
        status_markers: &markers,
    };
    handle.run_gates(base, head, &config).unwrap()
}

fn gate<'a>(results: &'a [GateResult], id: &str) -> &'a GateResult {
    results.iter().find(|g| g.id == id).unwrap()
}

const PLANS: &str = "| Task | Content | DoD | Depends | Status |\n|---|---|---|---|---|\n| 1 | a | d | - | cc:todo |\n| 2 | b | d | - | cc:todo |\n";

#[test]
fn all_gates_pass_on_a_well_behaved_task() {
    let repo = TestRepo::with_files(&[("Plans.md", PLANS), ("src/a.rs", "a\n")]);
    let handle = repo.open();
    let base = repo.main_tip();
    let wt = task(&repo, &handle, "ok");
    write(&wt.path, "src/a.rs", "better a\n");
    std::os::unix::fs::symlink("a.rs", wt.path.join("src/link.rs")).unwrap();
    // Editing Plans.md text without touching a status marker is allowed.
    write(&wt.path, "Plans.md", &PLANS.replace("| a |", "| a, clarified |"));
    let head = handle.commit_worktree(&wt, "ok").unwrap().head();
    let results = run_gates(&handle, base, head, &["src", "Plans.md"], 1024);
    let ids: Vec<&str> = results.iter().map(|g| g.id.as_str()).collect();
    assert_eq!(
        ids,
        vec![
            GATE_WRITE_SET,
            GATE_SYMLINK_ESCAPE,
            GATE_NESTED_REPO,
            GATE_PLANS_MARKERS,
            GATE_FILE_SIZE,
            GATE_AGENT_CONFIG,
            GATE_OPAQUE_CONTENT
        ]
    );
    for result in &results {
        assert_eq!(result.status, GateStatus::Passed, "{result:?}");
        assert!(result.paths.is_empty());
    }
}

#[test]
fn each_gate_fails_with_the_offending_paths() {
    let repo = TestRepo::with_files(&[
        ("Plans.md", PLANS),
        ("src/a.rs", "a\n"),
        ("src/moved.rs", &"content that is long enough for rename detection\n".repeat(10)),
        ("other/keep.rs", "k\n"),
        ("other/gone.rs", "g\n"),
    ]);
    let handle = repo.open();
    let base = repo.main_tip();
    let wt = task(&repo, &handle, "bad");
    // write-set: a rename out of the write set, a deletion outside it, a mode change outside.
    std::fs::create_dir_all(wt.path.join("lib")).unwrap();
    git(&wt.path, &["mv", "src/moved.rs", "lib/moved.rs"]);
    std::fs::remove_file(wt.path.join("other/gone.rs")).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(wt.path.join("other/keep.rs"), std::fs::Permissions::from_mode(0o755))
        .unwrap();
    // symlink-escape: absolute, above the root, via another link, into .git; one fine link.
    std::os::unix::fs::symlink("/etc/passwd", wt.path.join("src/abs")).unwrap();
    std::os::unix::fs::symlink("../../outside", wt.path.join("src/up")).unwrap();
    std::os::unix::fs::symlink("..", wt.path.join("src/parent")).unwrap();
    std::os::unix::fs::symlink("parent/..", wt.path.join("src/chain")).unwrap();
    std::os::unix::fs::symlink("../.git/config", wt.path.join("src/gitcfg")).unwrap();
    std::os::unix::fs::symlink("parent/other/keep.rs", wt.path.join("src/fine")).unwrap();
    // nested-repo: a whole repository inside the task.
    let nested = wt.path.join("src/vendor");
    std::fs::create_dir_all(&nested).unwrap();
    git(&nested, &["init", "-q"]);
    write(&nested, "x.txt", "x\n");
    git(&nested, &["-c", "user.name=n", "-c", "user.email=n@e", "add", "x.txt"]);
    git(&nested, &["-c", "user.name=n", "-c", "user.email=n@e", "commit", "-q", "-m", "n"]);
    // plans-markers: the worker marks its own task done.
    write(&wt.path, "Plans.md", &PLANS.replacen("cc:todo", "cc:done", 1));
    // file-size: one file above the limit.
    write(&wt.path, "src/big.bin", &"x".repeat(2048));

    let head = handle.commit_worktree(&wt, "bad").unwrap().head();
    let results = run_gates(&handle, base, head, &["src"], 1024);

    let write_set = gate(&results, GATE_WRITE_SET);
    assert_eq!(write_set.status, GateStatus::Failed);
    assert_eq!(write_set.paths, vec!["Plans.md", "lib/moved.rs", "other/gone.rs", "other/keep.rs"]);
    assert!(write_set.detail.contains("add them to the task's writes"), "{}", write_set.detail);
    // The rename's old side is inside the write set; its new side is what fails.
    assert!(!write_set.paths.contains(&"src/moved.rs".to_string()));

    let links = gate(&results, GATE_SYMLINK_ESCAPE);
    assert_eq!(links.status, GateStatus::Failed);
    assert_eq!(links.paths, vec!["src/abs", "src/chain", "src/gitcfg", "src/up"]);
    assert!(
        links.detail.contains("`src/abs` -> `/etc/passwd` (absolute target)"),
        "{}",
        links.detail
    );

    let nested_gate = gate(&results, GATE_NESTED_REPO);
    assert_eq!(nested_gate.status, GateStatus::Failed);
    assert_eq!(nested_gate.paths, vec!["src/vendor"]);
    // The commit recorded it as a gitlink, as `git add` would.
    assert_eq!(
        git(repo.path(), &["ls-tree", &head.to_string(), "src/vendor"]).split(' ').next(),
        Some("160000")
    );

    let plans = gate(&results, GATE_PLANS_MARKERS);
    assert_eq!(plans.status, GateStatus::Failed);
    assert_eq!(plans.paths, vec!["Plans.md"]);
    assert!(plans.detail.contains("1: cc:todo -> cc:done"), "{}", plans.detail);

    let size = gate(&results, GATE_FILE_SIZE);
    assert_eq!(size.status, GateStatus::Failed);
    assert_eq!(size.paths, vec!["src/big.bin"]);
    assert!(size.detail.contains("2048 bytes"), "{}", size.detail);
}

#[test]
fn plans_gate_catches_deletion_and_passes_without_a_plans_file() {
    let repo = TestRepo::with_files(&[("Plans.md", PLANS), ("src/a.rs", "a\n")]);
    let handle = repo.open();
    let base = repo.main_tip();
    let wt = task(&repo, &handle, "del");
    std::fs::remove_file(wt.path.join("Plans.md")).unwrap();
    let head = handle.commit_worktree(&wt, "del").unwrap().head();
    let results = run_gates(&handle, base, head, &["Plans.md"], 1024);
    assert_eq!(gate(&results, GATE_PLANS_MARKERS).status, GateStatus::Failed);
    assert_eq!(gate(&results, GATE_WRITE_SET).status, GateStatus::Passed);

    let config = any_path_1024_bytes();
    let results = handle.run_gates(base, head, &config).unwrap();
    assert!(results.iter().all(|g| g.status == GateStatus::Passed), "{results:?}");
}

#[test]
fn turning_a_folder_into_a_file_needs_the_folders_files_in_the_write_set() {
    // Issue 23: replacing the folder `d/` by a file `d` deletes `d/one` and `d/two`; a write
    // set naming only `d` does not cover that.
    let repo = TestRepo::with_files(&[("d/one", "one\n"), ("d/two", "two\n"), ("keep", "k\n")]);
    let handle = repo.open();
    let base = repo.main_tip();
    let wt = task(&repo, &handle, "fold");
    std::fs::remove_dir_all(wt.path.join("d")).unwrap();
    write(&wt.path, "d", "a file now\n");
    let head = handle.commit_worktree(&wt, "d is a file").unwrap().head();
    let gate_with = |claimed: &'static [&'static str]| {
        let in_write_set = move |path: &str| claimed.contains(&path);
        let config = GateConfig {
            in_write_set: &in_write_set,
            max_file_bytes: 1024,
            plans_file: None,
            status_markers: &markers,
        };
        let results = handle.run_gates(base, head, &config).unwrap();
        let write_set = gate(&results, GATE_WRITE_SET);
        (write_set.status, write_set.paths.clone())
    };
    assert_eq!(gate_with(&["d"]), (GateStatus::Failed, vec!["d/one".into(), "d/two".into()]));
    assert_eq!(gate_with(&["d", "d/one", "d/two"]), (GateStatus::Passed, vec![]));
}
