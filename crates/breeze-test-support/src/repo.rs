//! Real repositories in temporary folders.

use std::path::{Path, PathBuf};

use crate::git::{git, git_line};

/// A repository on `main` with one commit, in a temporary folder that goes with it. The
/// repository is `root`, one level below the temporary folder, so tests can keep files
/// next to it (scripts, handshakes) that are not in it.
pub struct TestRepo {
    temp: tempfile::TempDir,
    /// The repository's root.
    pub root: PathBuf,
}

impl TestRepo {
    /// A repository whose first commit holds `files` (path, text).
    pub fn with_files(files: &[(&str, &str)]) -> TestRepo {
        let temp = tempfile::tempdir().expect("a temporary folder");
        let root = temp.path().join("repo");
        std::fs::create_dir_all(&root).expect("the repository folder");
        git(&root, &["init", "-q", "-b", "main"]);
        // The repository's own identity: what breeze's commits are made with.
        git(&root, &["config", "user.name", "Repo Owner"]);
        git(&root, &["config", "user.email", "owner@example.com"]);
        for (path, text) in files {
            write(&root, path, text);
        }
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-q", "--allow-empty", "-m", "initial"]);
        TestRepo { temp, root }
    }

    /// The temporary folder (removed when dropped) and the repository's root.
    pub fn into_parts(self) -> (tempfile::TempDir, PathBuf) {
        (self.temp, self.root)
    }

    /// The temporary folder holding the repository (for files outside it).
    pub fn outside(&self) -> &Path {
        self.temp.path()
    }

    /// A folder for breeze's worktrees (`[worktree] root`) beside the repository, removed
    /// with it: what a test names so that its runs' lanes go with it.
    pub fn worktrees(&self) -> PathBuf {
        self.temp.path().join("worktrees")
    }

    /// `git rev-parse REV` in the repository.
    pub fn rev(&self, rev: &str) -> String {
        git_line(&self.root, &["rev-parse", rev])
    }

    /// Runs `git args…` in the repository.
    pub fn git(&self, args: &[&str]) -> String {
        git(&self.root, args)
    }
}

/// Writes a file under `root`, creating its folders.
pub fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("the file's folder");
    }
    std::fs::write(&path, text)
        .unwrap_or_else(|err| panic!("cannot write {}: {err}", path.display()));
}

/// Reads a file under `root`.
pub fn read(root: &Path, path: &str) -> String {
    let path = root.join(path);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}
