//! `worktree.include`: ignored files copied into worktrees, never overwriting.

mod common;

use common::{TestRepo, git, read, write};

fn fixture() -> TestRepo {
    let repo = TestRepo::with_files(&[
        ("src/a.rs", "fn a() {}\n"),
        ("app/settings.json", "{}\n"),
        (".gitignore", ".env\n.env.*\nconfig/*.local\nsecrets/\nnode_modules/\ntarget/\n"),
    ]);
    write(repo.path(), ".env", "TOKEN=primary\n");
    write(repo.path(), "app/.env", "APP=1\n");
    write(repo.path(), ".env.test", "TEST=1\n");
    write(repo.path(), "config/dev.local", "dev\n");
    write(repo.path(), "secrets/key.pem", "KEY\n");
    write(repo.path(), "secrets/nested/more.pem", "MORE\n");
    write(repo.path(), "node_modules/pkg/.env", "deep\n");
    write(repo.path(), "notes.txt", "untracked, not ignored\n");
    std::os::unix::fs::symlink("key.pem", repo.path().join("secrets/current.pem")).unwrap();
    repo
}

#[test]
fn copies_ignored_matches_and_reports_the_rest() {
    let repo = fixture();
    let handle = repo.open();
    let wt = handle.create_worktree("task-p", "task/p", repo.main_tip(), "r").unwrap();
    let include: Vec<String> =
        [".env", ".env.*", "/config/*.local", "secrets/", "notes.txt", "missing.cfg"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let report = handle.provision(&wt, &include).unwrap();
    assert_eq!(
        report.copied,
        vec![
            ".env",
            ".env.test",
            "app/.env",
            "config/dev.local",
            "secrets/current.pem",
            "secrets/key.pem",
            "secrets/nested/more.pem",
        ]
    );
    assert_eq!(report.not_ignored, vec!["notes.txt"]);
    assert_eq!(report.unmatched, vec!["missing.cfg"]);
    assert!(report.kept_existing.is_empty());

    assert_eq!(read(&wt.path, ".env"), "TOKEN=primary\n");
    assert_eq!(read(&wt.path, "secrets/nested/more.pem"), "MORE\n");
    assert_eq!(
        std::fs::read_link(wt.path.join("secrets/current.pem")).unwrap().to_str(),
        Some("key.pem")
    );
    // Unanchored patterns do not crawl ignored directories.
    assert!(!wt.path.join("node_modules").exists());
    assert!(!wt.path.join("notes.txt").exists());
    // Copied files are ignored in the worktree too: nothing for the worker's commit.
    assert_eq!(git(&wt.path, &["status", "--porcelain", "--untracked-files=all"]), "");
}

#[test]
fn never_overwrites_and_is_repeatable() {
    let repo = fixture();
    let handle = repo.open();
    let wt = handle.create_worktree("task-q", "task/q", repo.main_tip(), "r").unwrap();
    write(&wt.path, ".env", "TOKEN=worker-edited\n");
    let report =
        handle.provision(&wt, &[".env".to_string(), "/config/*.local".to_string()]).unwrap();
    assert_eq!(report.kept_existing, vec![".env"]);
    assert_eq!(report.copied, vec!["app/.env", "config/dev.local"]);
    assert_eq!(read(&wt.path, ".env"), "TOKEN=worker-edited\n");

    let second =
        handle.provision(&wt, &[".env".to_string(), "/config/*.local".to_string()]).unwrap();
    assert!(second.copied.is_empty());
    assert_eq!(second.kept_existing, vec![".env", "app/.env", "config/dev.local"]);
}

#[test]
fn anchored_patterns_reach_into_ignored_directories_but_not_breeze_dirs() {
    let repo = fixture();
    let handle = repo.open();
    let wt = handle.create_worktree("task-r", "task/r", repo.main_tip(), "r").unwrap();
    // Another worktree holds an `.env` too: never a source.
    write(&handle.worktree_root().unwrap().join("task-r"), "extra/.env", "from a worktree\n");
    let other = handle.create_worktree("task-s", "task/s", repo.main_tip(), "r").unwrap();
    let report = handle
        .provision(&other, &["/node_modules/pkg/.env".to_string(), ".env".to_string()])
        .unwrap();
    assert_eq!(report.copied, vec![".env", "app/.env", "node_modules/pkg/.env"]);
    assert!(!other.path.join("extra").exists());
    assert!(report.unmatched.is_empty());
    let _ = wt;
}

#[test]
fn bad_patterns_are_refused_with_the_pattern_named() {
    let repo = fixture();
    let handle = repo.open();
    let wt = handle.create_worktree("task-b", "task/b", repo.main_tip(), "r").unwrap();
    for bad in ["../outside", "!negated", "", "a/../../b"] {
        let err = handle.provision(&wt, &[bad.to_string()]).unwrap_err();
        assert!(err.to_string().contains("worktree.include"), "{bad:?}: {err}");
    }
    assert!(handle.provision(&wt, &[]).unwrap().copied.is_empty());
}
