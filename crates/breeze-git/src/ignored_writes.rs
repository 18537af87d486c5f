//! What a worker wrote in its lane that git ignores, taken out again after its attempt.
//!
//! Committing a lane takes what git sees; an ignored file is not seen, so it is never a
//! task's change — and nobody reviews it. A worker could leave instructions or settings for
//! the tools that run after it there (a `CLAUDE.md`, `.claude/settings.json` behind a
//! `.claude/.gitignore` of `*`, a `conftest.py` the project ignores that makes every test
//! pass), for its lane's checks and for the next task on the lane. So once an attempt is
//! committed, what it wrote that git ignores is removed, except the build outputs the lane
//! already had: a path inside an ignored folder that was there before the attempt (one the
//! attempt did not create or move: its watch does not name the folder itself), or inside a
//! folder the lane's watch never enters (`node_modules`, `target`: a package manager's and
//! a compiler's outputs, which every build rewrites). Whatever `always` names (agent
//! configuration) goes wherever it is, outside those two folders.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use git2::Repository;

use crate::error::GitError;
use crate::libgit2_checkout::ignored_repo_paths_in;
use crate::paths::{RepoPath, WorkdirChanges, remove_with_emptied_parents};
use crate::repo::Repo;
use crate::worktree::Worktree;

/// Folders the lane's watch does not enter, whose ignored content is the project's build
/// output (kept: see the module docs).
const BUILD_OUTPUT_FOLDERS: [&str; 2] = ["node_modules", "target"];

impl Repo {
    /// Removes from lane `wt` what git ignores among `changes` (the paths the lane's watch
    /// saw written since the lane last agreed with git — a worker's attempt) that is not a
    /// build output the lane already had, and whatever `always` says must go (agent
    /// configuration). With [`WorkdirChanges::Unknown`] (notifications were lost) only
    /// what `always` names goes: what the attempt created cannot be told apart. Returns the
    /// repository-relative paths removed, sorted (a folder stands for what was in it).
    pub fn remove_ignored_writes(
        &self,
        wt: &Worktree,
        changes: WorkdirChanges<'_>,
        always: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<String>, GitError> {
        let wrepo = self.handle(&wt.path)?;
        let mut found = ignored_repo_paths_in(&wrepo, &wt.path, changes)?;
        let written: Option<BTreeSet<PathBuf>> = match changes {
            WorkdirChanges::Only(paths) => Some(paths.iter().cloned().collect()),
            WorkdirChanges::Unknown => None,
        };
        // git names an ignored folder once, whatever was written inside it: the agent
        // configuration the watch saw written in one is looked at by itself.
        for path in written.iter().flatten() {
            let Some(rel) = path.to_str() else { continue };
            if always(rel)
                && std::fs::symlink_metadata(wt.path.join(path)).is_ok()
                && wrepo.is_path_ignored(path).unwrap_or(false)
            {
                found.push(RepoPath(rel.as_bytes().to_vec()));
            }
        }
        found.sort();
        found.dedup();
        let mut removed = Vec::new();
        for entry in found {
            let rel = entry.display();
            if in_build_output(entry.as_path()) {
                continue;
            }
            let goes = always(&rel)
                || written.as_ref().is_some_and(|written| {
                    !in_older_ignored_folder(&wrepo, &wt.path, entry.as_path(), written)
                });
            if goes {
                remove_with_emptied_parents(&wt.path, &entry)?;
                removed.push(rel);
            }
        }
        if !removed.is_empty() {
            tracing::info!(worktree = %wt.name, paths = ?removed, "removed what the attempt wrote that git ignores");
        }
        Ok(removed)
    }
}

/// Whether `path` is, or lies in, a build-output folder the lane's watch does not enter.
fn in_build_output(path: &Path) -> bool {
    path.components().any(|part| BUILD_OUTPUT_FOLDERS.iter().any(|name| part.as_os_str() == *name))
}

/// Whether `path` (an ignored entry of the checkout at `root`) is, or lies inside, an
/// ignored folder that the attempt did not create or move: the nearest-to-the-root ignored
/// folder on its way, and every folder above it, are not among the paths the watch saw
/// written (a folder created or moved is named there itself).
fn in_older_ignored_folder(
    repo: &Repository,
    root: &Path,
    path: &Path,
    written: &BTreeSet<PathBuf>,
) -> bool {
    let mut prefix = PathBuf::new();
    let parts: Vec<_> = path.components().collect();
    for (n, part) in parts.iter().enumerate() {
        prefix.push(part);
        if written.contains(&prefix) {
            // Made (or moved) by the attempt, with everything in it.
            return false;
        }
        // The entry itself counts when it is a folder (git names an ignored folder once).
        let last = n + 1 == parts.len();
        if last && !root.join(&prefix).is_dir() {
            return false;
        }
        if repo.is_path_ignored(&prefix).unwrap_or(false) {
            return true;
        }
    }
    false
}
