//! Real repositories in temp dirs, driven and checked with the `git` CLI.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use breeze_git::{Oid, OpenOptions, Repo, Worktree, WorktreeRoot};

/// Runs git in `dir`, asserting success; returns trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_output(dir, args);
    assert!(
        out.status.success(),
        "git {args:?} in {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

/// Runs git (hermetic: no user or system configuration) in `dir` and returns the raw
/// output, successful or not.
pub fn git_output(dir: &Path, args: &[&str]) -> std::process::Output {
    breeze_test_support::git_output(dir, args)
}

/// Writes a file (creating parent directories).
pub fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

pub fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap()
}

pub fn oid(s: &str) -> Oid {
    Oid::from_str(s.trim()).unwrap()
}

/// `git rev-parse <rev>`.
pub fn rev(dir: &Path, rev: &str) -> Oid {
    oid(&git(dir, &["rev-parse", rev]))
}

/// A temporary repository with `main` checked out and one commit, and a temporary folder
/// its worktrees go in (outside the repository, as breeze's always are; removed with it).
pub struct TestRepo {
    pub dir: tempfile::TempDir,
    pub worktrees: tempfile::TempDir,
}

impl TestRepo {
    /// A repository whose first commit has the given files.
    pub fn with_files(files: &[(&str, &str)]) -> TestRepo {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q", "-b", "main"]);
        git(dir.path(), &["config", "user.name", "Repo Owner"]);
        git(dir.path(), &["config", "user.email", "owner@example.com"]);
        for (path, content) in files {
            write(dir.path(), path, content);
        }
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["commit", "-q", "-m", "initial"]);
        TestRepo { dir, worktrees: tempfile::tempdir().unwrap() }
    }

    /// The usual fixture: a few source files, a .gitignore for `.env` and `target/`.
    pub fn standard() -> TestRepo {
        TestRepo::with_files(&[
            ("README.md", "# demo\n"),
            ("src/a.rs", "fn a() {}\n"),
            ("src/b.rs", "fn b() {}\n"),
            ("docs/guide.md", "guide\n"),
            (".gitignore", ".env\ntarget/\n*.log\n"),
        ])
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Opens with libgit2 checkouts only (the CLI fallback is tested separately).
    pub fn open(&self) -> Repo {
        Repo::open_with(self.path(), &self.options(Some(usize::MAX))).unwrap()
    }

    /// Opens with every full checkout of a new worktree going through the `git` CLI.
    pub fn open_cli(&self) -> Repo {
        Repo::open_with(self.path(), &self.options(Some(0))).unwrap()
    }

    /// Opens as breeze opens by default (checkouts chosen by size), worktrees in the
    /// test's folder.
    pub fn open_default(&self) -> Repo {
        Repo::open_with(self.path(), &self.options(None)).unwrap()
    }

    /// Options with this repository's worktree folder.
    pub fn options(&self, cli_checkout_min_files: Option<usize>) -> OpenOptions {
        OpenOptions {
            cli_checkout_min_files,
            worktree_root: WorktreeRoot::Under(self.worktrees.path().to_path_buf()),
            ..OpenOptions::default()
        }
    }

    /// The folder this repository's worktrees are in (asked of the repository).
    pub fn worktree_root(&self) -> PathBuf {
        self.open().worktree_root().unwrap()
    }

    /// Where worktree `name` is (or would be).
    pub fn worktree(&self, name: &str) -> PathBuf {
        self.worktree_root().join(name)
    }

    pub fn git(&self, args: &[&str]) -> String {
        git(self.path(), args)
    }

    pub fn main_tip(&self) -> Oid {
        rev(self.path(), "refs/heads/main")
    }

    /// Commits the given files on main in the primary checkout; returns the new tip.
    pub fn commit_on_main(&self, files: &[(&str, &str)], message: &str) -> Oid {
        for (path, content) in files {
            write(self.path(), path, content);
        }
        let paths: Vec<&str> = files.iter().map(|(p, _)| *p).collect();
        let mut args = vec!["add", "--"];
        args.extend(paths);
        self.git(&args);
        self.git(&["commit", "-q", "-m", message]);
        self.main_tip()
    }

    /// `git status --porcelain` of the primary checkout (untracked files listed).
    pub fn status(&self) -> String {
        self.git(&["status", "--porcelain", "--untracked-files=all"])
    }

    /// `git fsck --strict` must be clean.
    pub fn fsck(&self) {
        let out = git_output(self.path(), &["fsck", "--strict", "--no-progress"]);
        assert!(
            out.status.success(),
            "git fsck failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Commits everything in a worktree with the git CLI (as a worker would).
pub fn worker_commit(wt: &Worktree, message: &str) -> Oid {
    git(&wt.path, &["add", "-A"]);
    git(&wt.path, &["commit", "-q", "-m", message]);
    rev(&wt.path, "HEAD")
}

/// `git worktree list --porcelain` parsed into blocks of lines.
pub fn worktree_list(dir: &Path) -> Vec<Vec<String>> {
    git(dir, &["worktree", "list", "--porcelain"])
        .split("\n\n")
        .map(|block| block.lines().map(str::to_string).collect())
        .collect()
}

pub fn block_for(dir: &Path, path: &Path) -> Option<Vec<String>> {
    let canonical: PathBuf = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    worktree_list(dir).into_iter().find(|block| {
        block.first().map(|l| l == &format!("worktree {}", canonical.display())).unwrap_or(false)
    })
}

/// A write set that accepts paths under any of the prefixes.
pub fn prefixes(list: &'static [&'static str]) -> impl Fn(&str) -> bool {
    move |path: &str| list.iter().any(|p| path == *p || path.starts_with(&format!("{p}/")))
}
