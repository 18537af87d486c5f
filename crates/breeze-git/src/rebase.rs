//! Sending a conflicting task back to its worker: its worktree and branch move onto the
//! new main tip, the task's change is re-applied with the cleanly merged part staged, and
//! the conflicting files get conflict markers and conflict stages in the index.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use git2::{
    Index, IndexConflict, IndexEntry, MergeFileInput, MergeFileOptions, Oid, Repository, Tree,
};

use crate::checkout::{self, Mode};
use crate::error::{Context as _, GitError};
use crate::land::{commit_tree, merge_options};
use crate::names::branch_ref;
use crate::paths::path_string;
use crate::repo::Repo;
use crate::state::{ensure_clean_state, fresh_index};
use crate::worktree::Worktree;

/// Result of [`Repo::rebase_worktree_with_conflicts`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictedRebase {
    /// The worktree, now based on the new main tip (`base` updated).
    pub worktree: Worktree,
    /// Files left with conflict markers (and conflict stages in the index), sorted.
    pub conflicts: Vec<String>,
}

impl Repo {
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
        self.check_at_head(wrepo, wt, head)?;
        let base_tree = commit_tree(wrepo, base)?;
        let head_tree = commit_tree(wrepo, head)?;
        let onto_tree = commit_tree(wrepo, onto)?;
        let merged = wrepo
            .merge_trees(&base_tree, &onto_tree, &head_tree, Some(&merge_options()))
            .ctx(|| format!("could not merge {base}..{head} onto {onto}"))?;

        // 1. Move the worktree to `onto`, touching only differing paths.
        checkout::move_paths(wrepo, &wt.path, &head_tree, &onto_tree, Mode::Safe)?;
        wrepo
            .reference(
                &branch_ref(&wt.branch),
                onto,
                true,
                &format!("breeze: move {} onto {onto} to resolve conflicts", wt.branch),
            )
            .ctx(|| format!("could not move `{}` to {onto}", wt.branch))?;

        // 2. The cleanly merged part: a tree with the merge result where it is clean and
        //    main's version where it conflicts, checked out (filters apply) and staged.
        let mut conflicts = Vec::new();
        for conflict in merged.conflicts().ctx(|| "could not read merge conflicts".to_string())? {
            conflicts.push(conflict.ctx(|| "could not read merge conflicts".to_string())?);
        }
        let clean_tree = clean_part(wrepo, &merged, &conflicts, &onto_tree)?;
        self.checkouts.apply_tree(wrepo, &wt.path, &onto_tree, &clean_tree)?;

        // 3. Conflicting files: markers in the working tree, stages 1–3 in the index.
        let paths = self.write_conflicts(wrepo, wt, &conflicts)?;
        tracing::info!(worktree = %wt.name, %onto, conflicts = paths.len(), "task moved onto main with conflicts");
        Ok(ConflictedRebase { worktree: Worktree { base: onto, ..wt.clone() }, conflicts: paths })
    }

    /// Refuses unless `wt` is on its branch, the branch's tip is `head`, and nothing is
    /// uncommitted.
    fn check_at_head(&self, wrepo: &Repository, wt: &Worktree, head: Oid) -> Result<(), GitError> {
        let refname = branch_ref(&wt.branch);
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
        self.ensure_no_work(wrepo, wt, crate::paths::WorkdirChanges::Unknown)
    }

    /// Writes every conflicting file with markers and records its conflict stages in the
    /// index of `wt`. Returns the conflicting paths, sorted.
    fn write_conflicts(
        &self,
        wrepo: &Repository,
        wt: &Worktree,
        conflicts: &[IndexConflict],
    ) -> Result<Vec<String>, GitError> {
        let mut index = fresh_index(wrepo, &wt.path)?;
        let mut paths = Vec::new();
        for conflict in conflicts {
            let Some(any) =
                conflict.our.as_ref().or(conflict.their.as_ref()).or(conflict.ancestor.as_ref())
            else {
                continue;
            };
            let rel = path_string(&any.path);
            self.write_conflict_file(wrepo, &wt.path, &wt.branch, conflict)?;
            stage_conflict(&mut index, conflict, &rel)?;
            paths.push(rel);
        }
        index.write().ctx(|| format!("could not write the index of {}", wt.path.display()))?;
        paths.sort();
        paths.dedup();
        Ok(paths)
    }

    /// Writes the file of one conflict into the checkout at `at`: a textual merge with
    /// markers (labelled main and `branch`) when both sides have it, else the surviving
    /// side (modify/delete) for the worker to decide.
    fn write_conflict_file(
        &self,
        wrepo: &Repository,
        at: &Path,
        branch: &str,
        conflict: &IndexConflict,
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
                let rel = path_string(&theirs.path);
                let sides = [ancestor, content_of(ours)?, content_of(theirs)?];
                (self.merge_with_markers(&rel, &sides, branch)?, theirs.mode, rel)
            }
            (Some(only), None) | (None, Some(only)) => {
                (content_of(only)?, only.mode, path_string(&only.path))
            }
            (None, None) => return Ok(()),
        };
        replace_file(&at.join(&rel), &bytes, mode == 0o100755)
    }

    /// The textual merge of `[ancestor, ours, theirs]` at `rel`, with conflict markers
    /// labelled main, `branch` and `base`.
    fn merge_with_markers(
        &self,
        rel: &str,
        [ancestor, ours, theirs]: &[Vec<u8>; 3],
        branch: &str,
    ) -> Result<Vec<u8>, GitError> {
        let mut base_input = MergeFileInput::new();
        base_input.content(ancestor).path(Path::new(rel));
        let mut our_input = MergeFileInput::new();
        our_input.content(ours).path(Path::new(rel));
        let mut their_input = MergeFileInput::new();
        their_input.content(theirs).path(Path::new(rel));
        let mut options = MergeFileOptions::new();
        options.our_label(self.main_branch.as_str()).their_label(branch).ancestor_label("base");
        let result = git2::merge_file(&base_input, &our_input, &their_input, Some(&mut options))
            .ctx(|| format!("could not merge the two versions of `{rel}`"))?;
        Ok(result.content().to_vec())
    }
}

/// The tree of the cleanly merged part of a conflicted merge: `merged`'s result where it
/// is clean, and `onto_tree`'s version (main's) of every path in `conflicts`.
fn clean_part<'r>(
    wrepo: &'r Repository,
    merged: &Index,
    conflicts: &[IndexConflict],
    onto_tree: &Tree<'_>,
) -> Result<Tree<'r>, GitError> {
    let mut clean = Index::new().ctx(|| "could not create an index".to_string())?;
    let mut onto_entries: HashMap<Vec<u8>, IndexEntry> = HashMap::new();
    {
        let mut onto_index = Index::new().ctx(|| "could not create an index".to_string())?;
        onto_index
            .read_tree(onto_tree)
            .ctx(|| format!("could not read tree {}", onto_tree.id()))?;
        for entry in onto_index.iter() {
            onto_entries.insert(entry.path.clone(), entry);
        }
    }
    let conflicted: HashSet<Vec<u8>> = conflicts
        .iter()
        .flat_map(|c| [&c.ancestor, &c.our, &c.their].into_iter().flatten().map(|e| e.path.clone()))
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
    wrepo.find_tree(clean_tree).ctx(|| "could not read the merged tree".to_string())
}

/// Records `conflict` (at `rel`) in `index`: stage 0 of every side's path goes (a rename
/// conflict has several paths), stages 1–3 come in.
fn stage_conflict(index: &mut Index, conflict: &IndexConflict, rel: &str) -> Result<(), GitError> {
    let sides = [(1u16, &conflict.ancestor), (2, &conflict.our), (3, &conflict.their)];
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
            index.add(&staged).ctx(|| format!("could not record the conflict on `{rel}`"))?;
        }
    }
    Ok(())
}

/// Writes `bytes` to `dest`, replacing whatever file or directory is there and creating
/// missing parent directories; `executable` sets mode 755.
fn replace_file(dest: &Path, bytes: &[u8], executable: bool) -> Result<(), GitError> {
    if let Ok(meta) = dest.symlink_metadata() {
        if meta.is_dir() {
            std::fs::remove_dir_all(dest).map_err(|e| GitError::io("remove", dest, e))?;
        } else {
            std::fs::remove_file(dest).map_err(|e| GitError::io("remove", dest, e))?;
        }
    }
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(|e| GitError::io("create directory", parent, e))?;
    }
    std::fs::write(dest, bytes).map_err(|e| GitError::io("write", dest, e))?;
    if executable {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(dest, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| GitError::io("set permissions of", dest, e))?;
    }
    Ok(())
}
