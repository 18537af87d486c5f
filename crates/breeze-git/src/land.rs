//! Landing: the in-memory three-way merge onto main, the landing commit and its trailers,
//! the compare-and-swap of main with a safe fast-forward of the user's checkout, sending a
//! conflicted task back to its worktree, and finding a landing again on resume.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use git2::{
    ErrorCode, FileMode, Index, IndexEntry, MergeFileInput, MergeFileOptions, MergeOptions, Oid,
    Repository, Sort, Status, StatusOptions, Tree, build::TreeUpdateBuilder,
};

use crate::checkout::{self, Mode, RepoPath, path_string};
use crate::cli;
use crate::commit::identity;
use crate::error::{Context as _, GitError};
use crate::repo::{Handle, Repo, ensure_clean_state, fresh_index};
use crate::worktree::Worktree;

/// Trailer naming the task of a landing commit.
pub const TRAILER_TASK: &str = "Breeze-Task";
/// Trailer naming the run of a landing commit.
pub const TRAILER_RUN: &str = "Breeze-Run";
/// Trailer with the review verdict of a landing commit.
pub const TRAILER_REVIEW: &str = "Breeze-Review";

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

/// Result of [`Repo::advance_main`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdvanceOutcome {
    /// Main now points at the new commit; these checkouts of main were fast-forwarded.
    Advanced {
        /// Checkouts (the user's, usually) whose files and index were updated.
        updated_checkouts: Vec<PathBuf>,
    },
    /// Main has the branch checked out with uncommitted changes on paths the landing
    /// touches: nothing moved. The engine defers this landing and asks the user to commit
    /// or stash those files.
    Deferred {
        /// The checkout with the blocking changes.
        checkout: PathBuf,
        /// The blocking paths.
        paths: Vec<String>,
    },
    /// Main no longer points at `expected` (someone else moved it): nothing moved. The
    /// engine re-merges onto `actual` and tries again.
    Raced {
        /// Where main points now.
        actual: Oid,
    },
}

/// Result of [`Repo::rebase_worktree_with_conflicts`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictedRebase {
    /// The worktree, now based on the new main tip (`base` updated).
    pub worktree: Worktree,
    /// Files left with conflict markers (and conflict stages in the index), sorted.
    pub conflicts: Vec<String>,
}

/// What the `Breeze-Review` trailer of a landing says: the approving round and, when
/// breeze normalized the reviewer's verdict (a REQUEST_CHANGES with minor gaps only), what
/// the reviewer said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewTrailer {
    /// The round whose verdict approved the landed head.
    pub round: u32,
    /// The reviewer's own verdict when it differed (`REQUEST_CHANGES`).
    pub reviewer_said: Option<String>,
}

impl From<u32> for ReviewTrailer {
    fn from(round: u32) -> ReviewTrailer {
        ReviewTrailer { round, reviewer_said: None }
    }
}

impl std::fmt::Display for ReviewTrailer {
    /// `APPROVE (round 2)`, or `APPROVE (round 1; reviewer said REQUEST_CHANGES, minor gaps
    /// only; normalized by breeze)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.reviewer_said {
            None => write!(f, "APPROVE (round {})", self.round),
            Some(said) => write!(
                f,
                "APPROVE (round {}; reviewer said {said}, minor gaps only; normalized by breeze)",
                self.round
            ),
        }
    }
}

/// The landing commit message: `feat: <title>`, an optional body, and the trailers
/// `Breeze-Task`, `Breeze-Run` and `Breeze-Review` ([`ReviewTrailer`]). Line breaks in the
/// title and ids are flattened so the trailers stay parseable.
pub fn landing_message(
    title: &str,
    body: Option<&str>,
    task_id: &str,
    run_id: &str,
    review: impl Into<ReviewTrailer>,
) -> String {
    let review = review.into();
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut message = format!("feat: {}\n\n", flat(title));
    if let Some(body) = body.map(str::trim).filter(|b| !b.is_empty()) {
        message.push_str(body);
        message.push_str("\n\n");
    }
    message.push_str(&format!(
        "{TRAILER_TASK}: {}\n{TRAILER_RUN}: {}\n{TRAILER_REVIEW}: {review}\n",
        flat(task_id),
        flat(run_id)
    ));
    message
}

fn commit_tree<'r>(repo: &'r Repository, oid: Oid) -> Result<Tree<'r>, GitError> {
    repo.find_commit(oid)
        .map_err(|_| GitError::MissingObject { what: "commit", oid })?
        .tree()
        .ctx(|| format!("could not read the tree of {oid}"))
}

fn merge_options() -> MergeOptions {
    let mut options = MergeOptions::new();
    options.find_renames(true);
    options
}

fn conflict_paths(index: &Index) -> Result<Vec<String>, GitError> {
    let mut paths = Vec::new();
    for conflict in index.conflicts().ctx(|| "could not read merge conflicts".to_string())? {
        let conflict = conflict.ctx(|| "could not read merge conflicts".to_string())?;
        for entry in [&conflict.our, &conflict.their, &conflict.ancestor].into_iter().flatten() {
            paths.push(path_string(&entry.path));
        }
    }
    paths.sort();
    paths.dedup();
    Ok(paths)
}

impl Repo {
    /// Three-way merge of the task's change `base..head` onto `onto` (the current main tip),
    /// in memory: no working tree, index or ref is touched. Renames are followed.
    pub fn merge_task(&self, base: Oid, head: Oid, onto: Oid) -> Result<MergeOutcome, GitError> {
        let repo = self.git()?;
        let head_tree = commit_tree(&repo, head)?;
        if onto == base {
            return Ok(MergeOutcome::Clean { tree: head_tree.id() });
        }
        let base_tree = commit_tree(&repo, base)?;
        let onto_tree = commit_tree(&repo, onto)?;
        let mut index = repo
            .merge_trees(&base_tree, &onto_tree, &head_tree, Some(&merge_options()))
            .ctx(|| format!("could not merge {base}..{head} onto {onto}"))?;
        if index.has_conflicts() {
            return Ok(MergeOutcome::Conflicts { paths: conflict_paths(&index)? });
        }
        let tree =
            index.write_tree_to(&repo).ctx(|| "could not write the merged tree".to_string())?;
        Ok(MergeOutcome::Clean { tree })
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
            .map(|head| {
                head.trim().strip_prefix("ref:").map(str::trim) == Some(self.main_ref().as_str())
            })
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

    /// The content of the file at `path` in tree `tree`; `None` when there is no such path.
    pub fn read_blob_at(&self, tree: Oid, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        let repo = self.git()?;
        let tree = repo
            .find_tree(tree)
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
    /// Build `message` with [`landing_message`].
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

    /// Compare-and-swap of the main branch from `expected` to `new` (a descendant of it).
    ///
    /// Where main is checked out (the user's checkout, usually), the paths the landing
    /// touches are fast-forwarded first, safely: a touched path with uncommitted changes
    /// (or an untracked or ignored file in the way) gives [`AdvanceOutcome::Deferred`] and
    /// nothing moves; untouched paths, staged or not, and untracked files stay exactly as
    /// the user left them. If main moved meanwhile, [`AdvanceOutcome::Raced`] (and the
    /// checkout is put back). A checkout mid-merge/rebase is refused with an error.
    pub fn advance_main(&self, expected: Oid, new: Oid) -> Result<AdvanceOutcome, GitError> {
        let mut primary = self.git()?;
        let refname = self.main_ref();
        let actual = match primary.refname_to_id(&refname) {
            Ok(oid) => oid,
            Err(e) if e.code() == ErrorCode::NotFound => {
                return Err(self.main_not_found(&primary));
            }
            Err(e) => return Err(e).ctx(|| format!("could not read {refname}")),
        };
        if actual != expected {
            return Ok(AdvanceOutcome::Raced { actual });
        }
        if new == expected {
            return Ok(AdvanceOutcome::Advanced { updated_checkouts: Vec::new() });
        }
        primary
            .find_commit(new)
            .map_err(|_| GitError::MissingObject { what: "commit", oid: new })?;
        if !primary.graph_descendant_of(new, expected).unwrap_or(false) {
            return Err(GitError::NotFastForward {
                branch: self.main_branch.clone(),
                from: expected,
                to: new,
            });
        }

        // Where main is checked out; the primary checkout reuses the primary handle.
        let mut in_primary = false;
        let mut others: Vec<(PathBuf, Handle<'_>)> = Vec::new();
        for path in self.checkouts_of_branch(&primary, &refname) {
            if !path.join(".git").exists() {
                continue; // a registered worktree whose directory is gone: no files to update
            }
            if path == self.workdir {
                in_primary = true;
            } else {
                let handle = self.handle(&path)?;
                others.push((path, handle));
            }
        }
        primary.set_keep(false);
        for (_, handle) in &mut others {
            handle.set_keep(false);
        }
        let mut checkouts: Vec<(&Path, &Repository)> = Vec::new();
        if in_primary {
            checkouts.push((&self.workdir, &*primary));
        }
        checkouts.extend(others.iter().map(|(path, handle)| (path.as_path(), &**handle)));
        let outcome = self.advance_in(&primary, &checkouts, &refname, expected, new)?;
        drop(checkouts);
        primary.set_keep(true);
        for (_, handle) in &mut others {
            handle.set_keep(true);
        }
        Ok(outcome)
    }

    /// The three phases of [`Repo::advance_main`] once the checkouts of main are known.
    fn advance_in(
        &self,
        repo: &Repository,
        checkouts: &[(&Path, &Repository)],
        refname: &str,
        expected: Oid,
        new: Oid,
    ) -> Result<AdvanceOutcome, GitError> {
        let old_tree = commit_tree(repo, expected)?;
        let new_tree = commit_tree(repo, new)?;
        let touched = checkout::tree_diff_paths(repo, &old_tree, &new_tree)?;

        // Phase 1: every checkout of main must be able to take the change. Paths that already
        // hold exactly the new content (a landing killed half-way through phase 2 wrote them)
        // do not block; they are rewritten in place.
        let mut at_target: Vec<Vec<RepoPath>> = Vec::new();
        for &(path, crepo) in checkouts {
            ensure_clean_state(crepo, path)?;
            // Unresolved conflicts (say, from `git stash pop`) block any checkout: the user
            // has to resolve them first, wherever they are.
            let index = fresh_index(crepo, path)?;
            if index.has_conflicts() {
                return Ok(AdvanceOutcome::Deferred {
                    checkout: path.to_path_buf(),
                    paths: conflict_paths(&index)?,
                });
            }
            drop(index);
            let blocking = if self.external_filters.is_some() {
                let touched_set: std::collections::HashSet<&[u8]> =
                    touched.iter().map(|p| p.0.as_slice()).collect();
                let mut paths: Vec<String> = cli::status(path, true)?
                    .into_iter()
                    .map(|(_, p)| p)
                    .filter(|p| touched_set.contains(p.as_bytes()))
                    .collect();
                paths.sort();
                paths.dedup();
                paths
            } else {
                let (blocking, done) = blocking_paths(crepo, path, &touched, &old_tree, &new_tree)?;
                at_target.push(done);
                blocking
            };
            if !blocking.is_empty() {
                return Ok(AdvanceOutcome::Deferred {
                    checkout: path.to_path_buf(),
                    paths: blocking,
                });
            }
        }

        // Phase 2: fast-forward their touched paths while HEAD still names the old tip. A
        // checkout whose index another git process holds is waited for first; if the index
        // still cannot be written, its files are put back and nothing moves.
        let mut updated: Vec<usize> = Vec::new();
        for (i, &(path, crepo)) in checkouts.iter().enumerate() {
            if let Err(busy) = wait_for_index(crepo, path) {
                self.put_back(checkouts, &updated, &old_tree, &touched, expected);
                return Err(busy);
            }
            let result = if self.external_filters.is_some() {
                let (old, new_sha) = (expected.to_string(), new.to_string());
                match cli::run(
                    path,
                    ["read-tree", "-m", "-u", old.as_str(), new_sha.as_str()],
                    "update your checkout",
                ) {
                    Ok(_) => Ok(()),
                    Err(GitError::Cli { stderr, .. }) => Err(vec![stderr]),
                    Err(e) => return Err(e),
                }
            } else {
                let done = at_target.get(i).map(Vec::as_slice).unwrap_or(&[]);
                let rest: Vec<RepoPath> =
                    touched.iter().filter(|p| !done.contains(p)).cloned().collect();
                let written = checkout::checkout_paths(crepo, &new_tree, &rest, Mode::Safe, path)
                    .and_then(|result| match result {
                        // Identical content: forcing it over loses nothing.
                        Ok(()) => {
                            checkout::checkout_paths(crepo, &new_tree, done, Mode::Force, path)
                        }
                        conflicts => Ok(conflicts),
                    });
                match written {
                    Ok(result) => result,
                    Err(err) => {
                        // Files may be written but the index not (a lock taken meanwhile):
                        // the files go back; the index on disk was never changed.
                        if let Err(undo) = checkout::checkout_paths_with(
                            crepo,
                            &old_tree,
                            &touched,
                            Mode::Force,
                            checkout::IndexWrite::FilesOnly,
                            path,
                        ) {
                            tracing::error!(checkout = %path.display(), error = %undo, "could not put the checkout back after a failed landing");
                        }
                        self.put_back(checkouts, &updated, &old_tree, &touched, expected);
                        return Err(err);
                    }
                }
            };
            if let Err(paths) = result {
                self.put_back(checkouts, &updated, &old_tree, &touched, expected);
                return Ok(AdvanceOutcome::Deferred { checkout: path.to_path_buf(), paths });
            }
            updated.push(i);
        }

        // Phase 3: the compare-and-swap.
        let message = format!("breeze: land {new}");
        match repo.reference_matching(refname, new, true, expected, &message) {
            Ok(_) => {
                tracing::info!(branch = %self.main_branch, from = %expected, to = %new, "main advanced");
                Ok(AdvanceOutcome::Advanced {
                    updated_checkouts: updated
                        .iter()
                        .map(|&i| checkouts[i].0.to_path_buf())
                        .collect(),
                })
            }
            Err(e) if e.code() == ErrorCode::Modified || e.code() == ErrorCode::Locked => {
                self.put_back(checkouts, &updated, &old_tree, &touched, expected);
                let actual =
                    repo.refname_to_id(refname).ctx(|| format!("could not read {refname}"))?;
                if actual == expected {
                    // Locked by a concurrent writer that has not moved it (yet).
                    return Err(GitError::Locked {
                        path: self.common_dir.clone(),
                        detail: e.message().to_string(),
                    });
                }
                Ok(AdvanceOutcome::Raced { actual })
            }
            Err(e) => {
                self.put_back(checkouts, &updated, &old_tree, &touched, expected);
                Err(e).ctx(|| format!("could not move {refname} to {new}"))
            }
        }
    }

    /// Undoes phase 2 of [`Repo::advance_main`] after a failure: the updated checkouts get
    /// the old content of the touched paths back.
    fn put_back(
        &self,
        checkouts: &[(&Path, &Repository)],
        updated: &[usize],
        old_tree: &Tree<'_>,
        touched: &[RepoPath],
        expected: Oid,
    ) {
        for &i in updated {
            let (path, crepo) = checkouts[i];
            let result = if self.external_filters.is_some() {
                cli::run(
                    path,
                    ["read-tree", "--reset", "-u", &expected.to_string()],
                    "restore your checkout",
                )
                .map(|_| ())
            } else {
                checkout::checkout_paths(crepo, old_tree, touched, Mode::Force, path).map(|_| ())
            };
            if let Err(e) = result {
                tracing::error!(checkout = %path.display(), error = %e, "could not restore the checkout after a failed landing");
            }
        }
    }

    /// Sends a conflicting task back to its worker: moves `wt` to `onto` (its branch now
    /// starts there), applies the task's change `base..head` on top with the conflicting
    /// files holding conflict markers (labelled `main` and the task branch) and conflict
    /// stages in the index, and the cleanly merged files staged. The worker resolves the
    /// files; [`Repo::commit_worktree`] then commits the result on the new base.
    ///
    /// `wt` must be clean, on its branch, at `head`.
    pub fn rebase_worktree_with_conflicts(
        &self,
        wt: &Worktree,
        base: Oid,
        head: Oid,
        onto: Oid,
    ) -> Result<ConflictedRebase, GitError> {
        let mut handle = self.handle(&wt.path)?;
        handle.set_keep(false);
        let rebased = self.rebase_in(&handle, wt, base, head, onto)?;
        handle.set_keep(true);
        Ok(rebased)
    }

    fn rebase_in(
        &self,
        wrepo: &Repository,
        wt: &Worktree,
        base: Oid,
        head: Oid,
        onto: Oid,
    ) -> Result<ConflictedRebase, GitError> {
        ensure_clean_state(wrepo, &wt.path)?;
        let refname = format!("refs/heads/{}", wt.branch);
        let head_ref = wrepo
            .find_reference("HEAD")
            .ctx(|| format!("could not read HEAD of {}", wt.path.display()))?;
        let symbolic = head_ref.symbolic_target().ok().flatten();
        if symbolic != Some(refname.as_str()) {
            return Err(GitError::HeadMoved {
                path: wt.path.clone(),
                expected: wt.branch.clone(),
                found: symbolic.unwrap_or("a detached HEAD").to_string(),
            });
        }
        let tip =
            wrepo.refname_to_id(&refname).ctx(|| format!("could not read `{}`", wt.branch))?;
        if tip != head {
            return Err(GitError::BranchExists {
                branch: wt.branch.clone(),
                actual: tip,
                expected: head,
            });
        }
        let dirty = checkout::dirty_paths(wrepo, &wt.path, self.external_filters.is_some())?;
        if !dirty.is_empty() {
            return Err(GitError::Dirty { path: wt.path.clone(), paths: dirty });
        }
        let base_tree = commit_tree(wrepo, base)?;
        let head_tree = commit_tree(wrepo, head)?;
        let onto_tree = commit_tree(wrepo, onto)?;
        let merged = wrepo
            .merge_trees(&base_tree, &onto_tree, &head_tree, Some(&merge_options()))
            .ctx(|| format!("could not merge {base}..{head} onto {onto}"))?;

        // 1. Move the worktree to `onto`, touching only differing paths.
        let touched = checkout::tree_diff_paths(wrepo, &head_tree, &onto_tree)?;
        if let Err(paths) =
            checkout::checkout_paths(wrepo, &onto_tree, &touched, Mode::Safe, &wt.path)?
        {
            return Err(GitError::Dirty { path: wt.path.clone(), paths });
        }
        wrepo
            .reference(
                &refname,
                onto,
                true,
                &format!("breeze: move {} onto {onto} to resolve conflicts", wt.branch),
            )
            .ctx(|| format!("could not move `{}` to {onto}", wt.branch))?;

        // 2. The cleanly merged part: a tree with the merge result where it is clean and
        //    main's version where it conflicts, checked out (filters apply) and staged.
        let mut clean = Index::new().ctx(|| "could not create an index".to_string())?;
        let mut onto_entries: HashMap<Vec<u8>, IndexEntry> = HashMap::new();
        {
            let mut onto_index = Index::new().ctx(|| "could not create an index".to_string())?;
            onto_index
                .read_tree(&onto_tree)
                .ctx(|| format!("could not read tree {}", onto_tree.id()))?;
            for entry in onto_index.iter() {
                onto_entries.insert(entry.path.clone(), entry);
            }
        }
        let mut conflicts = Vec::new();
        for conflict in merged.conflicts().ctx(|| "could not read merge conflicts".to_string())? {
            conflicts.push(conflict.ctx(|| "could not read merge conflicts".to_string())?);
        }
        let conflicted: std::collections::HashSet<Vec<u8>> = conflicts
            .iter()
            .flat_map(|c| {
                [&c.ancestor, &c.our, &c.their].into_iter().flatten().map(|e| e.path.clone())
            })
            .collect();
        for entry in merged.iter() {
            let stage = (entry.flags >> 12) & 0x3;
            if stage == 0 {
                clean.add(&entry).ctx(|| "could not build the merged tree".to_string())?;
            }
        }
        for path in &conflicted {
            if let Some(entry) = onto_entries.get(path) {
                clean.add(entry).ctx(|| "could not build the merged tree".to_string())?;
            }
        }
        let clean_tree =
            clean.write_tree_to(wrepo).ctx(|| "could not write the merged tree".to_string())?;
        let clean_tree =
            wrepo.find_tree(clean_tree).ctx(|| "could not read the merged tree".to_string())?;
        if self.external_filters.is_some() {
            let (from, to) = (onto_tree.id().to_string(), clean_tree.id().to_string());
            cli::run(
                &wt.path,
                ["read-tree", "-m", "-u", from.as_str(), to.as_str()],
                "apply the task's change",
            )?;
        } else {
            let changed = checkout::tree_diff_paths(wrepo, &onto_tree, &clean_tree)?;
            if let Err(paths) =
                checkout::checkout_paths(wrepo, &clean_tree, &changed, Mode::Force, &wt.path)?
            {
                return Err(GitError::Dirty { path: wt.path.clone(), paths });
            }
        }

        // 3. Conflicting files: markers in the working tree, stages 1–3 in the index.
        let mut index = fresh_index(wrepo, &wt.path)?;
        let mut paths = Vec::new();
        for conflict in &conflicts {
            let Some(any) =
                conflict.our.as_ref().or(conflict.their.as_ref()).or(conflict.ancestor.as_ref())
            else {
                continue;
            };
            let rel = path_string(&any.path);
            self.write_conflict_file(wrepo, &wt.path, &wt.branch, conflict)?;
            let sides = [(1u16, &conflict.ancestor), (2, &conflict.our), (3, &conflict.their)];
            // Stage 0 of every side's path goes (a rename conflict has several paths).
            for entry in sides.iter().filter_map(|(_, entry)| entry.as_ref()) {
                let side_path = path_string(&entry.path);
                if index.get_path(Path::new(&side_path), 0).is_some() {
                    index
                        .remove(Path::new(&side_path), 0)
                        .ctx(|| format!("could not unstage `{side_path}`"))?;
                }
            }
            for (stage, entry) in sides {
                if let Some(entry) = entry {
                    let staged = IndexEntry {
                        ctime: entry.ctime,
                        mtime: entry.mtime,
                        dev: 0,
                        ino: 0,
                        mode: entry.mode,
                        uid: 0,
                        gid: 0,
                        file_size: entry.file_size,
                        id: entry.id,
                        flags: (entry.flags & !0x3000) | (stage << 12),
                        flags_extended: entry.flags_extended,
                        path: entry.path.clone(),
                    };
                    index
                        .add(&staged)
                        .ctx(|| format!("could not record the conflict on `{rel}`"))?;
                }
            }
            paths.push(rel);
        }
        index.write().ctx(|| format!("could not write the index of {}", wt.path.display()))?;
        paths.sort();
        paths.dedup();
        tracing::info!(worktree = %wt.name, %onto, conflicts = paths.len(), "task moved onto main with conflicts");
        Ok(ConflictedRebase { worktree: Worktree { base: onto, ..wt.clone() }, conflicts: paths })
    }

    /// Writes the file of one conflict: a textual merge with markers when both sides have
    /// it, else the surviving side (modify/delete) for the worker to decide.
    fn write_conflict_file(
        &self,
        wrepo: &Repository,
        at: &Path,
        branch: &str,
        conflict: &git2::IndexConflict,
    ) -> Result<(), GitError> {
        let content_of = |entry: &IndexEntry| -> Result<Vec<u8>, GitError> {
            let blob = wrepo
                .find_blob(entry.id)
                .map_err(|_| GitError::MissingObject { what: "blob", oid: entry.id })?;
            Ok(blob.content().to_vec())
        };
        let (bytes, mode, rel) = match (&conflict.our, &conflict.their) {
            (Some(ours), Some(theirs)) => {
                let ancestor = match &conflict.ancestor {
                    Some(entry) => content_of(entry)?,
                    None => Vec::new(),
                };
                let (our_bytes, their_bytes) = (content_of(ours)?, content_of(theirs)?);
                let rel = path_string(&theirs.path);
                let mut base_input = MergeFileInput::new();
                base_input.content(&ancestor).path(Path::new(&rel));
                let mut our_input = MergeFileInput::new();
                our_input.content(&our_bytes).path(Path::new(&rel));
                let mut their_input = MergeFileInput::new();
                their_input.content(&their_bytes).path(Path::new(&rel));
                let mut options = MergeFileOptions::new();
                options
                    .our_label(self.main_branch.as_str())
                    .their_label(branch)
                    .ancestor_label("base");
                let result =
                    git2::merge_file(&base_input, &our_input, &their_input, Some(&mut options))
                        .ctx(|| format!("could not merge the two versions of `{rel}`"))?;
                (result.content().to_vec(), theirs.mode, rel)
            }
            (Some(only), None) | (None, Some(only)) => {
                (content_of(only)?, only.mode, path_string(&only.path))
            }
            (None, None) => return Ok(()),
        };
        let dest = at.join(&rel);
        if let Ok(meta) = dest.symlink_metadata() {
            if meta.is_dir() {
                std::fs::remove_dir_all(&dest).map_err(|e| GitError::io("remove", &dest, e))?;
            } else {
                std::fs::remove_file(&dest).map_err(|e| GitError::io("remove", &dest, e))?;
            }
        }
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| GitError::io("create directory", parent, e))?;
        }
        std::fs::write(&dest, &bytes).map_err(|e| GitError::io("write", &dest, e))?;
        if mode == 0o100755 {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| GitError::io("set permissions of", &dest, e))?;
        }
        Ok(())
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
        let mut walk = repo.revwalk().ctx(|| "could not walk the history of main".to_string())?;
        walk.set_sorting(Sort::NONE).ctx(|| "could not walk the history of main".to_string())?;
        walk.simplify_first_parent().ctx(|| "could not walk the history of main".to_string())?;
        walk.push(tip).ctx(|| "could not walk the history of main".to_string())?;
        for oid in walk {
            let oid = oid.ctx(|| "could not walk the history of main".to_string())?;
            if Some(oid) == stop_at {
                break;
            }
            let commit = repo.find_commit(oid).ctx(|| format!("could not read commit {oid}"))?;
            let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
            let Ok(trailers) = git2::message_trailers_strs(&message) else { continue };
            let (mut task_ok, mut run_ok) = (false, false);
            for (key, value) in trailers.iter() {
                if key.eq_ignore_ascii_case(TRAILER_TASK) && value.trim() == task_id.trim() {
                    task_ok = true;
                }
                if key.eq_ignore_ascii_case(TRAILER_RUN) && value.trim() == run_id.trim() {
                    run_ok = true;
                }
            }
            if task_ok && run_ok {
                return Ok(Some(oid));
            }
        }
        Ok(None)
    }
}

/// How many commits of main's first-parent history [`Repo::find_landed_tasks`] reads.
pub const LANDED_SCAN_LIMIT: usize = 20_000;

/// How long a landing waits for another git process to release a checkout's index.
const INDEX_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Waits (up to [`INDEX_WAIT`]) until no other git process holds the checkout's
/// `index.lock`; `Err(Locked)` when it is still held.
fn wait_for_index(repo: &Repository, at: &Path) -> Result<(), GitError> {
    let lock = repo.path().join("index.lock");
    let deadline = std::time::Instant::now() + INDEX_WAIT;
    while lock.exists() {
        if std::time::Instant::now() >= deadline {
            return Err(GitError::Locked {
                path: at.to_path_buf(),
                detail: format!("{} exists", lock.display()),
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Ok(())
}

impl Repo {
    /// Tasks of any run already landed on main: for each `(id, title)`, the newest landing
    /// commit whose `Breeze-Task` trailer is `id` and whose subject is `feat: <title>` (the
    /// title keeps two plans that reuse an id apart). Reads at most
    /// [`LANDED_SCAN_LIMIT`] commits of main's first-parent history.
    pub fn find_landed_tasks(
        &self,
        tasks: &[(&str, &str)],
    ) -> Result<std::collections::BTreeMap<String, Oid>, GitError> {
        let mut found = std::collections::BTreeMap::new();
        if tasks.is_empty() {
            return Ok(found);
        }
        let repo = self.git()?;
        let tip = match repo.refname_to_id(&self.main_ref()) {
            Ok(oid) => oid,
            Err(e) if e.code() == ErrorCode::NotFound => return Ok(found),
            Err(e) => return Err(e).ctx(|| format!("could not read {}", self.main_ref())),
        };
        let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let wanted: std::collections::BTreeMap<String, String> =
            tasks.iter().map(|(id, title)| (flat(id), format!("feat: {}", flat(title)))).collect();
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
                    && let Some(title) = wanted.get(value.trim())
                    && subject == title
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

/// Paths among `touched` that the checkout has changed (staged or not) or that an
/// untracked or ignored file occupies: fast-forwarding would overwrite them. Returned
/// apart: the changed paths that already hold exactly what `new_tree` has, with an index
/// entry that is HEAD's, the new one, or none — breeze's own half-done fast-forward.
fn blocking_paths(
    repo: &Repository,
    at: &Path,
    touched: &[RepoPath],
    old_tree: &Tree<'_>,
    new_tree: &Tree<'_>,
) -> Result<(Vec<String>, Vec<RepoPath>), GitError> {
    if touched.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut options = StatusOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(true)
        .recurse_ignored_dirs(true)
        .disable_pathspec_match(true)
        .renames_head_to_index(false)
        .renames_index_to_workdir(false);
    for path in touched {
        options.pathspec(path.as_path());
    }
    let statuses =
        repo.statuses(Some(&mut options)).map_err(|e| match checkout::map_lock_error(e, at) {
            Ok(cause) => GitError::Git {
                context: format!("could not read the status of {}", at.display()),
                cause,
            },
            Err(mapped) => mapped,
        })?;
    let index = fresh_index(repo, at)?;
    let mut blocking = Vec::new();
    let mut done = Vec::new();
    for entry in statuses.iter().filter(|e| e.status() != Status::CURRENT) {
        let path = RepoPath(entry.path_bytes().to_vec());
        if holds_target(at, &path, &index, old_tree, new_tree) {
            done.push(path);
        } else {
            blocking.push(path.display());
        }
    }
    blocking.sort();
    blocking.dedup();
    done.sort();
    done.dedup();
    Ok((blocking, done))
}

/// Whether `path` in the checkout at `at` already is what `new_tree` says (content, kind,
/// executable bit, or absent) and its index entry holds nothing of the user's own.
fn holds_target(
    at: &Path,
    path: &RepoPath,
    index: &Index,
    old_tree: &Tree<'_>,
    new_tree: &Tree<'_>,
) -> bool {
    let blob_at =
        |tree: &Tree<'_>| tree.get_path(path.as_path()).ok().map(|e| (e.id(), e.filemode()));
    let target = blob_at(new_tree);
    let staged = index.get_path(path.as_path(), 0).map(|e| e.id);
    let old = blob_at(old_tree).map(|(id, _)| id);
    if staged.is_some() && staged != old && staged != target.map(|(id, _)| id) {
        return false;
    }
    let file = at.join(path.as_path());
    let meta = std::fs::symlink_metadata(&file).ok();
    match (target, meta) {
        (None, None) => true,
        (None, Some(_)) | (Some(_), None) => false,
        (Some((id, mode)), Some(meta)) => {
            use std::os::unix::fs::PermissionsExt;
            let actual = if meta.file_type().is_symlink() {
                if mode != i32::from(git2::FileMode::Link) {
                    return false;
                }
                let Ok(target) = std::fs::read_link(&file) else { return false };
                use std::os::unix::ffi::OsStrExt;
                Oid::hash_object(git2::ObjectType::Blob, target.as_os_str().as_bytes())
            } else if meta.is_file() {
                let executable = meta.permissions().mode() & 0o111 != 0;
                let wanted = mode == i32::from(git2::FileMode::BlobExecutable);
                if executable != wanted || !(wanted || mode == i32::from(git2::FileMode::Blob)) {
                    return false;
                }
                Oid::hash_file(git2::ObjectType::Blob, &file)
            } else {
                return false;
            };
            actual.is_ok_and(|actual| actual == id)
        }
    }
}
