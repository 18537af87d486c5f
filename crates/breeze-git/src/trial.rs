//! A throwaway checkout: a detached worktree of one commit, `setup-check-<pid>` in the
//! worktree folder (outside the checkout, where the project's tools do not look), where
//! the preflight runs `worktree.setup` once to see what it does before any lane exists. It
//! is no lane: no branch is created, nothing is locked, and it is removed (directory and
//! git's record of it) when dropped.
//!
//! Made with `git worktree add --detach` (hooks off, like every git CLI call of breeze):
//! one command that leaves no branch, where libgit2 needs a reference to add a worktree.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository};

use crate::error::{Context as _, GitError};
use crate::git_cli;
use crate::names::TRIAL_CHECKOUT_PREFIX;
use crate::objects::commit_tree;
use crate::repo::Repo;
use crate::untrusted::remove_entry;

/// A detached checkout of a commit, removed when dropped.
#[derive(Debug)]
pub struct TrialCheckout {
    path: PathBuf,
    /// The repository's main checkout, where `git worktree remove` runs.
    workdir: PathBuf,
}

impl TrialCheckout {
    /// The checkout's folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Which of `paths` (relative to the checkout) git ignores there.
    pub fn ignored(&self, paths: &[String]) -> Result<Vec<bool>, GitError> {
        let repo = Repository::open(&self.path)
            .ctx(|| format!("could not open the checkout {}", self.path.display()))?;
        paths
            .iter()
            .map(|path| {
                repo.is_path_ignored(path.trim_end_matches('/'))
                    .ctx(|| format!("could not tell whether {path} is ignored"))
            })
            .collect()
    }
}

impl Drop for TrialCheckout {
    fn drop(&mut self) {
        let path = self.path.display().to_string();
        let removed = git_cli::run(
            &self.workdir,
            ["worktree", "remove", "--force", "--force", path.as_str()],
            "remove a throwaway checkout",
        );
        if let Err(err) = removed {
            tracing::warn!("could not remove the throwaway checkout {path}: {err}");
            let _ = std::fs::remove_dir_all(&self.path);
            let _ = git_cli::run(&self.workdir, ["worktree", "prune"], "forget a removed checkout");
        }
    }
}

impl Repo {
    /// A detached checkout of `commit` at `<worktree folder>/setup-check-<pid>` (what an
    /// earlier one of this process left there is removed first).
    pub fn trial_checkout(&self, commit: Oid) -> Result<TrialCheckout, GitError> {
        self.git()?
            .find_commit(commit)
            .map_err(|_| GitError::MissingObject { what: "commit", oid: commit })?;
        let root = self.worktree_root()?;
        self.ensure_dirs(&root)?;
        let path = root.join(format!("{TRIAL_CHECKOUT_PREFIX}{}", std::process::id()));
        if std::fs::symlink_metadata(&path).is_ok() {
            let shown = path.display().to_string();
            let _ = git_cli::run(
                &self.workdir,
                ["worktree", "remove", "--force", "--force", shown.as_str()],
                "remove a throwaway checkout",
            );
            remove_entry(&path)?;
            let _ = git_cli::run(&self.workdir, ["worktree", "prune"], "forget a removed checkout");
        }
        let shown = path.display().to_string();
        let oid = commit.to_string();
        git_cli::run(
            self.workdir(),
            ["worktree", "add", "--detach", "--quiet", shown.as_str(), oid.as_str()],
            "make a throwaway checkout",
        )?;
        Ok(TrialCheckout { path, workdir: self.workdir().to_path_buf() })
    }

    /// The blob id of the file at `path` in `commit`, if there is one.
    pub fn blob_id_at(&self, commit: Oid, path: &str) -> Result<Option<Oid>, GitError> {
        let repo = self.git()?;
        let tree = commit_tree(&repo, commit)?;
        Ok(tree
            .get_path(Path::new(path))
            .ok()
            .filter(|entry| entry.kind() == Some(ObjectType::Blob))
            .map(|entry| entry.id()))
    }

    /// The files at the root of `commit`'s tree whose names `wanted` accepts, with their
    /// blob ids (content ids: equal ids, equal contents), by name.
    pub fn root_files(
        &self,
        commit: Oid,
        wanted: impl Fn(&str) -> bool,
    ) -> Result<BTreeMap<String, Oid>, GitError> {
        let repo = self.git()?;
        let tree = commit_tree(&repo, commit)?;
        Ok(tree
            .iter()
            .filter(|entry| entry.kind() == Some(ObjectType::Blob))
            .filter_map(|entry| Some((entry.name().ok()?.to_string(), entry.id())))
            .filter(|(name, _)| wanted(name))
            .collect())
    }
}
