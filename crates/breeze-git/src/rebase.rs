//! Sending a conflicting task back to its worker: its worktree and branch move onto the
//! new main tip, the task's change is re-applied with the cleanly merged part staged, and
//! the conflicting files get conflict markers and conflict stages in the index.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use git2::{
    ErrorCode, Index, IndexConflict, IndexEntry, MergeFileInput, MergeFileOptions, ObjectType, Oid,
    Repository, Tree,
};

use crate::error::{Context as _, GitError};
use crate::index_file::fresh_index;
use crate::libgit2_checkout::{self, IndexFile, Mode};
use crate::merge::{CheckedMerge, checked_merge};
use crate::merge_check::{MergeTrees, Side, Unsound, set_exec_bits};
use crate::names::branch_ref;
use crate::objects::commit_tree;
use crate::paths::{bytes_path, path_string};
use crate::repo::Repo;
use crate::state::{ensure_clean_state, unstatted_entry};
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
        // The lane's check (`ensure_no_work`) puts a commit's entries right first.
        self.check_at_head(wrepo, wt, head)?;
        let base_tree = commit_tree(wrepo, base)?;
        let head_tree = commit_tree(wrepo, head)?;
        let onto_tree = commit_tree(wrepo, onto)?;
        // The conflicts libgit2 does not see, as the landing finds them.
        let trees = MergeTrees { base: &base_tree, onto: &onto_tree, head: &head_tree };
        let CheckedMerge { index: mut merged, unsound, .. } = checked_merge(wrepo, &trees)?;
        let mut conflicts = Vec::new();
        for conflict in merged.conflicts().ctx(|| "could not read merge conflicts".to_string())? {
            conflicts.push(conflict.ctx(|| "could not read merge conflicts".to_string())?);
        }
        // The clean part takes git's executable bits where libgit2 merged them wrong.
        set_exec_bits(&mut merged, &unsound.exec_bits)?;
        let labels = Labels { main: &self.main_branch, task: &wt.branch };
        let plan = ConflictPlan::new(&trees, conflicts, &unsound, &labels)?;

        // 1. Move the worktree to `onto`, touching only differing paths.
        libgit2_checkout::move_paths(
            wrepo,
            &wt.path,
            &head_tree,
            &onto_tree,
            (Mode::Safe, IndexFile::Written),
        )?;
        wrepo
            .reference(
                &branch_ref(&wt.branch),
                onto,
                true,
                &format!("breeze: move {} onto {onto} to resolve conflicts", wt.branch),
            )
            .ctx(|| format!("could not move `{}` to {onto}", wt.branch))?;

        // 2. The cleanly merged part: a tree with the merge result where it is clean, main's
        //    version where it conflicts (the folder side's where a file is in the way of a
        //    folder, the file set aside), checked out (filters apply) and staged.
        let clean_tree = plan.clean_part(wrepo, &merged, &onto_tree)?;
        self.checkout_tool()?.apply_tree(wrepo, &wt.path, &onto_tree, &clean_tree)?;

        // 3. Conflicting files: markers in the working tree, stages 1–3 in the index; files
        //    set aside staged as one side's addition.
        let paths = self.write_conflicts(wrepo, wt, &plan, &clean_tree)?;
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
    /// index of `wt`. Returns the conflicting paths (with the check's colliding paths and
    /// where files were set aside), sorted.
    fn write_conflicts(
        &self,
        wrepo: &Repository,
        wt: &Worktree,
        plan: &ConflictPlan,
        clean_tree: &Tree<'_>,
    ) -> Result<Vec<String>, GitError> {
        let mut index = fresh_index(wrepo, &wt.path)?;
        let mut paths: Vec<String> = plan.reported.iter().map(|p| path_string(p)).collect();
        for conflict in &plan.conflicts {
            let Some(any) =
                conflict.our.as_ref().or(conflict.their.as_ref()).or(conflict.ancestor.as_ref())
            else {
                continue;
            };
            let rel = path_string(&any.path);
            if fits(clean_tree, &any.path)? {
                self.write_conflict_file(wrepo, &wt.path, &wt.branch, conflict)?;
            } else if let Some(theirs) = &conflict.their {
                // A file cannot go where the clean part has a folder (or below a file): the
                // task's version is kept beside it, as a file in the way of a folder is.
                let taken = |p: &[u8]| Ok(wt.path.join(bytes_path(p)).symlink_metadata().is_ok());
                let aside = aside_path(&theirs.path, &wt.branch, taken)?;
                let bytes = wrepo
                    .find_blob(theirs.id)
                    .map_err(|_| GitError::MissingObject { what: "blob", oid: theirs.id })?;
                let dest = wt.path.join(bytes_path(&aside));
                match theirs.mode {
                    LINK_MODE => replace_with_link(&dest, bytes.content())?,
                    mode => replace_file(&dest, bytes.content(), mode == 0o100755)?,
                }
                paths.push(path_string(&aside));
            }
            stage_conflict(&mut index, conflict, &rel)?;
            paths.push(rel);
        }
        for aside in &plan.set_aside {
            let rel = path_string(&aside.path);
            stage_conflict(&mut index, &aside_conflict(aside), &rel)?;
            paths.push(rel);
        }
        crate::index_file::write(wrepo, &mut index, &wt.path, &[])?;
        crate::index_behind::written(wrepo)?;
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
        let is_link =
            |entry: &Option<IndexEntry>| entry.as_ref().is_some_and(|e| e.mode == LINK_MODE);
        if is_link(&conflict.our) || is_link(&conflict.their) {
            // No markers in a link: main's side stays (the worker sees both in the index).
            let Some(kept) = conflict.our.as_ref().or(conflict.their.as_ref()) else {
                return Ok(());
            };
            let dest = at.join(bytes_path(&kept.path));
            let bytes = content_of(kept)?;
            return if kept.mode == LINK_MODE {
                replace_with_link(&dest, &bytes)
            } else {
                replace_file(&dest, &bytes, kept.mode == 0o100755)
            };
        }
        let (bytes, entry) = match (&conflict.our, &conflict.their) {
            (Some(ours), Some(theirs)) => {
                let ancestor = match &conflict.ancestor {
                    Some(entry) => content_of(entry)?,
                    None => Vec::new(),
                };
                let rel = path_string(&theirs.path);
                let sides = [ancestor, content_of(ours)?, content_of(theirs)?];
                (self.merge_with_markers(&rel, &sides, branch)?, theirs)
            }
            (Some(only), None) | (None, Some(only)) => (content_of(only)?, only),
            (None, None) => return Ok(()),
        };
        replace_file(&at.join(bytes_path(&entry.path)), &bytes, entry.mode == 0o100755)
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

/// The branch names conflict markers and set-aside files are labelled with.
struct Labels<'a> {
    main: &'a str,
    task: &'a str,
}

/// A file or link one side wrote where the other side wrote inside a folder of that name,
/// kept at `<path>~<branch>` (as git does) so neither side's work is lost.
struct SetAside {
    /// Where it is kept.
    path: Vec<u8>,
    /// The entry, with `path`.
    entry: IndexEntry,
    /// The side that wrote it.
    side: Side,
}

/// What a conflicted rebase writes: every conflict (libgit2's and the check's, the three
/// sides of each), the files set aside, and every path to tell the worker.
struct ConflictPlan {
    conflicts: Vec<IndexConflict>,
    set_aside: Vec<SetAside>,
    /// The paths of the files set aside, where they were.
    in_the_way: HashSet<Vec<u8>>,
    /// The task's entries under a file of main's that was in their way: the folder side
    /// keeps its place in the clean part, so these are the task's, not main's.
    task_wins: Vec<IndexEntry>,
    /// Every path the check named.
    reported: BTreeSet<Vec<u8>>,
}

impl ConflictPlan {
    fn new(
        trees: &MergeTrees<'_, '_>,
        conflicts: Vec<IndexConflict>,
        unsound: &Unsound,
        labels: &Labels<'_>,
    ) -> Result<ConflictPlan, GitError> {
        // A file in the way of a folder is set aside below rather than staged where the
        // folder is (libgit2 may call it a conflict of its own, e.g. modify/delete).
        let in_the_way: HashSet<&[u8]> =
            unsound.files_in_the_way.iter().map(|(file, _)| file.as_slice()).collect();
        let conflicts: Vec<IndexConflict> = conflicts
            .into_iter()
            .filter(|c| {
                ![&c.ancestor, &c.our, &c.their]
                    .into_iter()
                    .flatten()
                    .any(|e| in_the_way.contains(e.path.as_slice()))
            })
            .collect();
        let mut plan = ConflictPlan {
            conflicts,
            set_aside: Vec::new(),
            in_the_way: HashSet::new(),
            task_wins: Vec::new(),
            reported: unsound.paths.clone(),
        };
        // Paths already accounted for: libgit2's conflicts, files in the way of a folder and
        // the folder side's paths under them.
        let mut handled: HashSet<Vec<u8>> = plan.conflicted_paths();
        let taken = |path: &[u8]| -> Result<bool, GitError> {
            Ok(tree_entry(trees.onto, path)?.is_some() || tree_entry(trees.head, path)?.is_some())
        };
        for (file, side) in &unsound.files_in_the_way {
            let (tree, label) = match side {
                Side::Main => (trees.onto, labels.main),
                Side::Task => (trees.head, labels.task),
            };
            if let Some(mut entry) = tree_entry(tree, file)? {
                let path = aside_path(file, label, taken)?;
                entry.path = path.clone();
                plan.set_aside.push(SetAside { path, entry, side: *side });
            }
            plan.in_the_way.insert(file.clone());
            handled.insert(file.clone());
            let mut inside = file.clone();
            inside.push(b'/');
            for path in unsound.paths.iter().filter(|p| p.starts_with(&inside)) {
                handled.insert(path.clone());
                if *side == Side::Main
                    && let Some(entry) = tree_entry(trees.head, path)?
                {
                    plan.task_wins.push(entry);
                }
            }
        }
        for path in &unsound.paths {
            if handled.contains(path) {
                continue;
            }
            let conflict = IndexConflict {
                ancestor: tree_entry(trees.base, path)?,
                our: tree_entry(trees.onto, path)?,
                their: tree_entry(trees.head, path)?,
            };
            if conflict.our.is_some() || conflict.their.is_some() {
                plan.conflicts.push(conflict);
            }
        }
        Ok(plan)
    }

    /// Every path of a conflict (all sides).
    fn conflicted_paths(&self) -> HashSet<Vec<u8>> {
        self.conflicts
            .iter()
            .flat_map(|c| [&c.ancestor, &c.our, &c.their].into_iter().flatten())
            .map(|e| e.path.clone())
            .collect()
    }

    /// The tree of the cleanly merged part: `merged`'s result where it is clean, main's
    /// version of every path in conflict (the task's under a file of main's in its way),
    /// and the files set aside.
    fn clean_part<'r>(
        &self,
        wrepo: &'r Repository,
        merged: &Index,
        onto_tree: &Tree<'_>,
    ) -> Result<Tree<'r>, GitError> {
        let mut conflicted = self.conflicted_paths();
        conflicted.extend(self.reported.iter().cloned());
        let mut clean = Index::new().ctx(|| "could not create an index".to_string())?;
        for entry in merged.iter() {
            let stage = (entry.flags >> 12) & 0x3;
            if stage == 0 && !conflicted.contains(&entry.path) {
                clean.add(&entry).ctx(|| "could not build the merged tree".to_string())?;
            }
        }
        let task_wins: HashSet<&[u8]> = self.task_wins.iter().map(|e| e.path.as_slice()).collect();
        for path in &conflicted {
            if self.in_the_way.contains(path) || task_wins.contains(path.as_slice()) {
                continue;
            }
            if let Some(entry) = tree_entry(onto_tree, path)? {
                clean.add(&entry).ctx(|| "could not build the merged tree".to_string())?;
            }
        }
        for entry in self.task_wins.iter().chain(self.set_aside.iter().map(|a| &a.entry)) {
            clean.add(entry).ctx(|| "could not build the merged tree".to_string())?;
        }
        let clean_tree =
            clean.write_tree_to(wrepo).ctx(|| "could not write the merged tree".to_string())?;
        wrepo.find_tree(clean_tree).ctx(|| "could not read the merged tree".to_string())
    }
}

/// The file, link or submodule at `path` of `tree` as an index entry; `None` when there is
/// none (or a folder).
fn tree_entry(tree: &Tree<'_>, path: &[u8]) -> Result<Option<IndexEntry>, GitError> {
    let entry = match tree.get_path(bytes_path(path)) {
        Ok(entry) => entry,
        Err(e) if e.code() == ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(e).ctx(|| format!("could not look up `{}`", path_string(path))),
    };
    if entry.kind() == Some(ObjectType::Tree) {
        return Ok(None);
    }
    Ok(Some(unstatted_entry(&entry, path)))
}

/// Where a file in the way of a folder is kept: `<path>~<label>` (`/` in the label as `_`,
/// as git names them), with `_2`, `_3`… when that is taken.
fn aside_path(
    file: &[u8],
    label: &str,
    taken: impl Fn(&[u8]) -> Result<bool, GitError>,
) -> Result<Vec<u8>, GitError> {
    let mut path = file.to_vec();
    path.push(b'~');
    path.extend(label.replace('/', "_").bytes());
    let mut candidate = path.clone();
    let mut n = 1;
    while taken(&candidate)? {
        n += 1;
        candidate = path.clone();
        candidate.extend(format!("_{n}").bytes());
    }
    Ok(candidate)
}

/// A file set aside as a conflict of its own: added by its side only.
fn aside_conflict(aside: &SetAside) -> IndexConflict {
    let entry = Some(copy_entry(&aside.entry));
    match aside.side {
        Side::Main => IndexConflict { ancestor: None, our: entry, their: None },
        Side::Task => IndexConflict { ancestor: None, our: None, their: entry },
    }
}

/// A copy of `entry` (git2's index entries are not `Clone`).
fn copy_entry(entry: &IndexEntry) -> IndexEntry {
    IndexEntry { path: entry.path.clone(), ..*entry }
}

/// Whether a file can be written at `path` of the clean part: no folder there, no file
/// above it.
fn fits(tree: &Tree<'_>, path: &[u8]) -> Result<bool, GitError> {
    if let Ok(entry) = tree.get_path(bytes_path(path))
        && entry.kind() == Some(ObjectType::Tree)
    {
        return Ok(false);
    }
    let mut at = path;
    while let Some(end) = at.iter().rposition(|&b| b == b'/') {
        at = &at[..end];
        if let Ok(entry) = tree.get_path(bytes_path(at))
            && entry.kind() != Some(ObjectType::Tree)
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Records `conflict` (at `rel`) in `index`: stage 0 of every side's path goes (a rename
/// conflict has several paths), stages 1–3 come in.
fn stage_conflict(index: &mut Index, conflict: &IndexConflict, rel: &str) -> Result<(), GitError> {
    // Conflict stages: the index makes no tree now.
    crate::index_tree::forget(index);
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

/// Mode of a symbolic link in git.
const LINK_MODE: u32 = 0o120000;

/// Clears the way for a new file at `dest`: whatever file or directory is there goes, and
/// missing parent directories are created.
fn clear_for(dest: &Path) -> Result<(), GitError> {
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
    Ok(())
}

/// Makes `dest` a symbolic link to `target`, replacing what is there.
fn replace_with_link(dest: &Path, target: &[u8]) -> Result<(), GitError> {
    clear_for(dest)?;
    std::os::unix::fs::symlink(bytes_path(target), dest)
        .map_err(|e| GitError::io("create the link", dest, e))
}

/// Writes `bytes` to `dest`, replacing whatever file or directory is there and creating
/// missing parent directories; `executable` sets mode 755.
fn replace_file(dest: &Path, bytes: &[u8], executable: bool) -> Result<(), GitError> {
    clear_for(dest)?;
    std::fs::write(dest, bytes).map_err(|e| GitError::io("write", dest, e))?;
    if executable {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(dest, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| GitError::io("set permissions of", dest, e))?;
    }
    Ok(())
}
