//! Whether a task's change reached a branch that others merge into (a remote's main, after
//! a pull request was merged by a person or a merge queue): the commit itself (a merge or
//! a fast-forward), a commit whose trailers name the task and the run (a rebase merge keeps
//! the message; a squash merge often does), or a commit with the same change — the same
//! patch id over the task's own files (a squash or rebase merge writes new commits).
//!
//! The patch id leaves out the files breeze edits while landing (`Plans.md`, the
//! changelog): their lines change with every other task merged before, the task's own
//! lines do not. It is computed without context lines, so a change whose neighbourhood
//! moved still matches.

use git2::{DiffOptions, Oid, Repository, Sort};

use crate::error::{Context as _, GitError};
use crate::landing_message::{LANDED_SCAN_LIMIT, TRAILER_TASK, trailers_name};
use crate::libgit2_checkout::tree_diff_paths;
use crate::objects::commit_tree;
use crate::paths::RepoPath;
use crate::repo::Repo;

/// What identifies one task's change wherever it was merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskChange {
    /// The run that made it (`Breeze-Run`).
    pub run_id: String,
    /// The task (`Breeze-Task`).
    pub task_id: String,
    /// The commit breeze pushed.
    pub commit: Oid,
    /// The patch id of the task's own files in it ([`Repo::change_identity`]); `None`
    /// when it changes none (then only the commit and the trailers tell).
    pub patch_id: Option<Oid>,
    /// The task's own files the patch id covers.
    pub paths: Vec<String>,
}

/// How a task's change was found on a branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoundBy {
    /// The pushed commit itself is on the branch (a merge commit, a fast-forward).
    Commit,
    /// A commit with the task's and the run's trailers.
    Trailers,
    /// A commit with the same change to the task's files.
    PatchId,
}

impl FoundBy {
    /// How the journal says it: `commit`, `trailers`, `patch-id`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Commit => "commit",
            Self::Trailers => "trailers",
            Self::PatchId => "patch-id",
        }
    }
}

/// The patch id of `paths` between `parent` and `commit`, without context lines; `None`
/// when `commit` leaves them all as they were.
fn patch_id_of(
    repo: &Repository,
    parent: Option<Oid>,
    commit: Oid,
    paths: &[String],
) -> Result<Option<Oid>, GitError> {
    if paths.is_empty() {
        return Ok(None);
    }
    let new = commit_tree(repo, commit)?;
    let old = parent.map(|parent| commit_tree(repo, parent)).transpose()?;
    let mut options = DiffOptions::new();
    options.context_lines(0).disable_pathspec_match(true);
    for path in paths {
        options.pathspec(path);
    }
    let diff = repo
        .diff_tree_to_tree(old.as_ref(), Some(&new), Some(&mut options))
        .ctx(|| format!("could not diff {commit}"))?;
    if diff.deltas().len() == 0 {
        return Ok(None);
    }
    diff.patchid(None).map(Some).ctx(|| format!("could not compute the patch id of {commit}"))
}

impl Repo {
    /// The identity of the change `commit` makes against its first parent: the patch id
    /// and the paths of the files it changes, leaving out `breeze_files` (the files breeze
    /// edits while landing).
    pub fn change_identity(
        &self,
        commit: Oid,
        breeze_files: &[&str],
    ) -> Result<(Option<Oid>, Vec<String>), GitError> {
        let repo = self.objects()?;
        let found = repo
            .find_commit(commit)
            .map_err(|_| GitError::MissingObject { what: "commit", oid: commit })?;
        let parent = found.parent_ids().next();
        let new = commit_tree(&repo, commit)?;
        // The paths that differ, without opening a folder both sides share (sorted).
        let old = match parent {
            Some(parent) => commit_tree(&repo, parent)?,
            None => repo
                .treebuilder(None)
                .and_then(|builder| builder.write())
                .and_then(|id| repo.find_tree(id))
                .ctx(|| "could not write the empty tree".to_string())?,
        };
        let paths: Vec<String> = tree_diff_paths(&repo, &old, &new)?
            .iter()
            .map(RepoPath::display)
            .filter(|path| !breeze_files.contains(&path.as_str()))
            .collect();
        let patch_id = patch_id_of(&repo, parent, commit, &paths)?;
        Ok((patch_id, paths))
    }

    /// Where `change` is among the commits reachable from `tip` and not from any of
    /// `since` (the branch's tip when the change was pushed): the newest commit that is
    /// the pushed commit, names the task and the run in its trailers, or makes the same
    /// change to the task's files. Reads at most [`LANDED_SCAN_LIMIT`] commits.
    pub fn find_change(
        &self,
        tip: Oid,
        since: &[Oid],
        change: &TaskChange,
    ) -> Result<Option<(Oid, FoundBy)>, GitError> {
        // Objects only: a patch id per commit walked needs no index (for attributes).
        let repo = self.objects()?;
        let context = || format!("could not walk the history of {tip}");
        let mut walk = repo.revwalk().ctx(context)?;
        walk.set_sorting(Sort::TOPOLOGICAL).ctx(context)?;
        walk.push(tip).ctx(context)?;
        for hidden in since {
            // A commit this repository does not have cannot hide anything.
            if repo.find_commit(*hidden).is_ok() {
                walk.hide(*hidden).ctx(context)?;
            }
        }
        for oid in walk.take(LANDED_SCAN_LIMIT) {
            let oid = oid.ctx(context)?;
            if oid == change.commit {
                return Ok(Some((oid, FoundBy::Commit)));
            }
            let commit = repo.find_commit(oid).ctx(|| format!("could not read commit {oid}"))?;
            let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
            if message.contains(TRAILER_TASK)
                && trailers_name(&message, &change.task_id, &change.run_id)
            {
                return Ok(Some((oid, FoundBy::Trailers)));
            }
            if let Some(wanted) = change.patch_id {
                let parent = commit.parent_ids().next();
                if patch_id_of(&repo, parent, oid, &change.paths)? == Some(wanted) {
                    return Ok(Some((oid, FoundBy::PatchId)));
                }
            }
        }
        Ok(None)
    }
}
