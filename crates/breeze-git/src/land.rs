//! Landing, up to moving main: the in-memory three-way merge onto main, reading and
//! replacing files in trees (the Plans.md flip), writing the landing commit, and finding
//! landings again on resume by their trailers (`landing_message.rs`). Moving main is in
//! `advance.rs`; sending a conflicting task back to its worker in `rebase.rs`.

use std::path::Path;

use git2::{ErrorCode, FileMode, Oid, Sort, build::TreeUpdateBuilder};

use crate::disjoint_merge::merge_disjoint;
use crate::error::{Context as _, GitError};
use crate::landing_message::{
    LANDED_SCAN_LIMIT, TRAILER_TASK, flat, tasks_landed_by, trailers_name,
};
use crate::merge::{checked_merge, conflict_paths};
use crate::merge_check::MergeTrees;
use crate::names::symbolic_target;
use crate::objects::{commit_tree, identity};
use crate::repo::Repo;

/// What [`Repo::run_landings_since`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunLandings {
    /// Each task a commit read names with its commit, newest first.
    pub landings: Vec<(String, Oid)>,
    /// The walk met the tip read before: what is below it was read then. `false` when it
    /// ended at `stop_at`, the limit or the root — main was rewritten when a known tip was
    /// given.
    pub reached_known: bool,
}

/// Result of [`Repo::merge_task`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    /// The task's change applies cleanly; `tree` is the merged tree (already written).
    Clean {
        /// The merged tree.
        tree: Oid,
    },
    /// The change conflicts with main; nothing was written.
    Conflicts {
        /// Conflicting paths, sorted.
        paths: Vec<String>,
    },
}

impl Repo {
    /// Three-way merge of the task's change `base..head` onto `onto` (the current main tip),
    /// in memory: no working tree, index or ref is touched. Renames are followed. When the
    /// two sides changed no path in common the merge is decided folder by folder
    /// (`disjoint_merge`); otherwise libgit2 merges and `merge_check` checks its result.
    pub fn merge_task(&self, base: Oid, head: Oid, onto: Oid) -> Result<MergeOutcome, GitError> {
        let repo = self.objects()?;
        let head_tree = commit_tree(&repo, head)?;
        if onto == base {
            return Ok(MergeOutcome::Clean { tree: head_tree.id() });
        }
        let base_tree = commit_tree(&repo, base)?;
        let onto_tree = commit_tree(&repo, onto)?;
        if let Some(tree) = merge_disjoint(&repo, &base_tree, &onto_tree, &head_tree)? {
            return Ok(MergeOutcome::Clean { tree });
        }
        let trees = MergeTrees { base: &base_tree, onto: &onto_tree, head: &head_tree };
        let merged = checked_merge(&repo, &trees)?;
        match &merged.tree {
            Some(tree) if merged.unsound.is_empty() => Ok(MergeOutcome::Clean { tree: tree.id() }),
            clean => {
                if clean.is_some() {
                    tracing::info!(%base, %head, %onto, paths = ?merged.unsound.path_strings(), "libgit2 merged cleanly, the check found a conflict");
                }
                let mut paths = conflict_paths(&merged.index)?;
                paths.extend(merged.unsound.path_strings());
                paths.sort();
                paths.dedup();
                Ok(MergeOutcome::Conflicts { paths })
            }
        }
    }

    /// Whether `path` (repository-relative) is a file tracked on the main branch's tip,
    /// e.g. whether the plan is a tracked Plans.md. `false` when main has no commit.
    pub fn is_tracked_on_main(&self, path: &str) -> Result<bool, GitError> {
        let repo = self.git()?;
        let Ok(tip) = repo.refname_to_id(&self.main_ref()) else { return Ok(false) };
        let tree = commit_tree(&repo, tip)?;
        match tree.get_path(Path::new(path)) {
            Ok(entry) => Ok(entry.kind() == Some(git2::ObjectType::Blob)),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(false),
            Err(e) => Err(e).ctx(|| format!("could not look up `{path}` on {}", self.main_branch)),
        }
    }

    /// Whether the primary checkout has main checked out with uncommitted changes (staged
    /// or not) to `path`. Such a file cannot be updated by a landing without touching the
    /// user's work, so a caller may refuse to start instead of deferring every landing.
    pub fn main_checkout_has_changes(&self, path: &str) -> Result<bool, GitError> {
        let repo = self.git()?;
        let on_main = std::fs::read_to_string(self.common_dir.join("HEAD"))
            .map(|head| symbolic_target(&head) == Some(self.main_ref().as_str()))
            .unwrap_or(false);
        if !on_main {
            return Ok(false);
        }
        match repo.status_file(Path::new(path)) {
            Ok(status) => Ok(!(status.is_empty() || status == git2::Status::IGNORED)),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(false),
            Err(e) => Err(e).ctx(|| format!("could not read the status of `{path}`")),
        }
    }

    /// The content of the file at `path` in `tree` (a tree, or a commit: its tree); `None`
    /// when there is no such path.
    pub fn read_blob_at(&self, tree: Oid, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        let repo = self.git()?;
        let tree = repo
            .find_object(tree, None)
            .and_then(|object| object.peel_to_tree())
            .map_err(|_| GitError::MissingObject { what: "tree", oid: tree })?;
        let entry = match tree.get_path(Path::new(path)) {
            Ok(entry) => entry,
            Err(e) if e.code() == ErrorCode::NotFound => return Ok(None),
            Err(e) => {
                return Err(e).ctx(|| format!("could not look up `{path}` in tree {}", tree.id()));
            }
        };
        let blob =
            entry.to_object(&repo).ok().and_then(|o| o.into_blob().ok()).ok_or_else(|| {
                GitError::BadPath {
                    path: path.to_string(),
                    problem: format!("is not a file in tree {}", tree.id()),
                }
            })?;
        Ok(Some(blob.content().to_vec()))
    }

    /// The names of the files at the root of `tree` (a tree, or a commit: its tree), in
    /// the tree's order; folders, links and submodules left out. How the project's own
    /// files (its changelog) are found.
    pub fn root_file_names(&self, tree: Oid) -> Result<Vec<String>, GitError> {
        let repo = self.git()?;
        let tree = repo
            .find_object(tree, None)
            .and_then(|object| object.peel_to_tree())
            .map_err(|_| GitError::MissingObject { what: "tree", oid: tree })?;
        let files = tree.iter().filter(|entry| {
            let mode = entry.filemode();
            mode == i32::from(FileMode::Blob) || mode == i32::from(FileMode::BlobExecutable)
        });
        Ok(files.filter_map(|entry| entry.name().ok().map(str::to_string)).collect())
    }

    /// A copy of tree `tree` with the file at `path` replaced by (or created with)
    /// `content`, keeping an existing file's executable bit. Used for the Plans.md flip.
    pub fn replace_in_tree(&self, tree: Oid, path: &str, content: &[u8]) -> Result<Oid, GitError> {
        let repo = self.git()?;
        let base = repo
            .find_tree(tree)
            .map_err(|_| GitError::MissingObject { what: "tree", oid: tree })?;
        if path.is_empty()
            || path.starts_with('/')
            || path.split('/').any(|p| p.is_empty() || p == "." || p == "..")
        {
            return Err(GitError::BadPath {
                path: path.to_string(),
                problem: "must be a relative path without empty, `.` or `..` parts".to_string(),
            });
        }
        let mode = match base.get_path(Path::new(path)) {
            Ok(entry) if entry.filemode() == i32::from(FileMode::BlobExecutable) => {
                FileMode::BlobExecutable
            }
            Ok(entry)
                if entry.kind() != Some(git2::ObjectType::Blob)
                    || entry.filemode() == i32::from(FileMode::Link) =>
            {
                return Err(GitError::BadPath {
                    path: path.to_string(),
                    problem: format!(
                        "is a directory, symlink or submodule in tree {tree}, not a file"
                    ),
                });
            }
            _ => FileMode::Blob,
        };
        let blob =
            repo.blob(content).ctx(|| format!("could not store the new content of `{path}`"))?;
        let mut update = TreeUpdateBuilder::new();
        update.upsert(path, blob, mode);
        update
            .create_updated(&repo, &base)
            .ctx(|| format!("could not write a tree with the new `{path}`"))
    }

    /// Writes the landing commit without moving any ref: `tree` with parent `parent`,
    /// authored by the author of commit `author_of` (the worker's last commit, date kept),
    /// committed by the repository identity (`breeze <breeze@localhost>` when none).
    /// Build `message` with [`landing_message`](crate::landing_message::landing_message).
    pub fn write_landing_commit(
        &self,
        tree: Oid,
        parent: Oid,
        author_of: Oid,
        message: &str,
    ) -> Result<Oid, GitError> {
        let repo = self.git()?;
        let tree = repo
            .find_tree(tree)
            .map_err(|_| GitError::MissingObject { what: "tree", oid: tree })?;
        let parent = repo
            .find_commit(parent)
            .map_err(|_| GitError::MissingObject { what: "commit", oid: parent })?;
        let source = repo
            .find_commit(author_of)
            .map_err(|_| GitError::MissingObject { what: "commit", oid: author_of })?;
        let author = source.author().to_owned();
        let committer = identity(&repo)?;
        repo.commit(None, &author, &committer, message, &tree, &[&parent])
            .ctx(|| format!("could not write the landing commit on {}", parent.id()))
    }

    /// The commit on main (first parents, newest first, stopping before `stop_at`) whose
    /// trailers say `Breeze-Task: <task_id>` and `Breeze-Run: <run_id>`; how resume knows a
    /// task already landed.
    pub fn find_landing(
        &self,
        run_id: &str,
        task_id: &str,
        stop_at: Option<Oid>,
    ) -> Result<Option<Oid>, GitError> {
        let repo = self.git()?;
        let tip = match repo.refname_to_id(&self.main_ref()) {
            Ok(oid) => oid,
            Err(e) if e.code() == ErrorCode::NotFound => return Ok(None),
            Err(e) => return Err(e).ctx(|| format!("could not read {}", self.main_ref())),
        };
        drop(repo);
        self.find_landing_from(tip, run_id, task_id, &stop_at.into_iter().collect::<Vec<_>>())
    }

    /// [`Repo::find_landing`] on the first-parent history of `tip` (a remote branch's, as
    /// last fetched), stopping before any commit of `stop_at`, reading at most
    /// [`LANDED_SCAN_LIMIT`] commits.
    pub fn find_landing_from(
        &self,
        tip: Oid,
        run_id: &str,
        task_id: &str,
        stop_at: &[Oid],
    ) -> Result<Option<Oid>, GitError> {
        let repo = self.git()?;
        let context = || "could not walk the history of main".to_string();
        let mut walk = repo.revwalk().ctx(context)?;
        walk.set_sorting(Sort::NONE).ctx(context)?;
        walk.simplify_first_parent().ctx(context)?;
        walk.push(tip).ctx(context)?;
        for oid in walk.take(LANDED_SCAN_LIMIT) {
            let oid = oid.ctx(context)?;
            if stop_at.contains(&oid) {
                break;
            }
            let commit = repo.find_commit(oid).ctx(|| format!("could not read commit {oid}"))?;
            let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
            if trailers_name(&message, task_id, run_id) {
                return Ok(Some(oid));
            }
        }
        Ok(None)
    }

    /// The landings of run `run_id` on the first-parent history of `tip`, newest first:
    /// the commits read down to `known` (a tip read before: what is below it was read
    /// then) or a commit of `stop_at`, at most [`LANDED_SCAN_LIMIT`]. Read tip after tip,
    /// each commit is read once — what [`Repo::find_landing_from`] costs per task.
    pub fn run_landings_since(
        &self,
        tip: Oid,
        run_id: &str,
        known: Option<Oid>,
        stop_at: &[Oid],
    ) -> Result<RunLandings, GitError> {
        let repo = self.git()?;
        let context = || "could not walk the history of main".to_string();
        let mut walk = repo.revwalk().ctx(context)?;
        walk.set_sorting(Sort::NONE).ctx(context)?;
        walk.simplify_first_parent().ctx(context)?;
        walk.push(tip).ctx(context)?;
        let mut read = RunLandings { landings: Vec::new(), reached_known: false };
        for oid in walk.take(LANDED_SCAN_LIMIT) {
            let oid = oid.ctx(context)?;
            if Some(oid) == known {
                read.reached_known = true;
                break;
            }
            if stop_at.contains(&oid) {
                break;
            }
            let commit = repo.find_commit(oid).ctx(|| format!("could not read commit {oid}"))?;
            let message = String::from_utf8_lossy(commit.message_bytes());
            for task in tasks_landed_by(&message, run_id) {
                read.landings.push((task, oid));
            }
        }
        Ok(read)
    }

    /// Tasks of any run already landed on main: for each `(id, subjects)`, the newest
    /// landing commit whose `Breeze-Task` trailer is `id` and whose subject is one of
    /// `subjects` (the subjects its landing may have had: the title in them keeps two plans
    /// that reuse an id apart). Reads at most [`LANDED_SCAN_LIMIT`] commits of main's
    /// first-parent history.
    pub fn find_landed_tasks(
        &self,
        tasks: &[(&str, Vec<String>)],
    ) -> Result<std::collections::BTreeMap<String, Oid>, GitError> {
        let tip = match self.git()?.refname_to_id(&self.main_ref()) {
            Ok(oid) => oid,
            Err(e) if e.code() == ErrorCode::NotFound => return Ok(Default::default()),
            Err(e) => return Err(e).ctx(|| format!("could not read {}", self.main_ref())),
        };
        self.find_landed_tasks_from(tip, tasks)
    }

    /// [`Repo::find_landed_tasks`] on the first-parent history of `tip` (a remote
    /// branch's, as last fetched).
    pub fn find_landed_tasks_from(
        &self,
        tip: Oid,
        tasks: &[(&str, Vec<String>)],
    ) -> Result<std::collections::BTreeMap<String, Oid>, GitError> {
        let mut found = std::collections::BTreeMap::new();
        if tasks.is_empty() {
            return Ok(found);
        }
        let repo = self.git()?;
        let wanted: std::collections::BTreeMap<String, Vec<String>> = (tasks.iter())
            .map(|(id, subjects)| (flat(id), subjects.iter().map(|s| flat(s)).collect()))
            .collect();
        let context = || "could not walk the history of main".to_string();
        let mut walk = repo.revwalk().ctx(context)?;
        walk.simplify_first_parent().ctx(context)?;
        walk.push(tip).ctx(context)?;
        for oid in walk.take(LANDED_SCAN_LIMIT) {
            let oid = oid.ctx(context)?;
            let commit = repo.find_commit(oid).ctx(|| format!("could not read commit {oid}"))?;
            let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
            if !message.contains(TRAILER_TASK) {
                continue;
            }
            let Ok(trailers) = git2::message_trailers_strs(&message) else { continue };
            let subject = message.lines().next().unwrap_or("").trim();
            for (key, value) in trailers.iter() {
                if key.eq_ignore_ascii_case(TRAILER_TASK)
                    && let Some(subjects) = wanted.get(value.trim())
                    && subjects.iter().any(|wanted| wanted == subject)
                {
                    found.entry(value.trim().to_string()).or_insert(oid);
                }
            }
            if found.len() == wanted.len() {
                break;
            }
        }
        Ok(found)
    }
}
