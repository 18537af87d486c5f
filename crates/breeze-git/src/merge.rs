//! The three-way merges breeze makes with libgit2 — a landing onto main, a conflicted task
//! moved onto main for its worker — alike: renames followed, the result held against what
//! each side changed (`merge_check.rs`) and given git's executable bits where libgit2
//! merged them wrong, and the paths of every conflict of an index.

use git2::{Index, MergeOptions, Repository, Tree};

use crate::error::{Context as _, GitError};
use crate::merge_check::{MergeCheck, MergeTrees, Unsound, set_exec_bits};
use crate::paths::path_string;

/// Merge options of every merge breeze makes: renames are followed.
pub(crate) fn merge_options() -> MergeOptions {
    let mut options = MergeOptions::new();
    options.find_renames(true);
    options
}

/// The paths of every conflict in `index` (all sides), sorted.
pub(crate) fn conflict_paths(index: &Index) -> Result<Vec<String>, GitError> {
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

/// libgit2's merge of `trees` (renames followed), checked ([`MergeCheck`]): its index; its
/// tree when libgit2 saw no conflict, with git's executable bits where libgit2 merged them
/// wrong (then judged again); and what the check found wrong. For a landing and for moving
/// a conflicted task onto main alike.
pub(crate) struct CheckedMerge<'r> {
    pub index: Index,
    pub tree: Option<Tree<'r>>,
    pub unsound: Unsound,
}

pub(crate) fn checked_merge<'r>(
    repo: &'r Repository,
    trees: &MergeTrees<'_, 'r>,
) -> Result<CheckedMerge<'r>, GitError> {
    let mut index = repo
        .merge_trees(trees.base, trees.onto, trees.head, Some(&merge_options()))
        .ctx(|| format!("could not merge {} onto {}", trees.head.id(), trees.onto.id()))?;
    let check = MergeCheck::new(repo, trees)?;
    if index.has_conflicts() {
        let unsound = check.judge(None)?;
        return Ok(CheckedMerge { index, tree: None, unsound });
    }
    let write = |index: &mut Index| -> Result<Tree<'r>, GitError> {
        let tree =
            index.write_tree_to(repo).ctx(|| "could not write the merged tree".to_string())?;
        repo.find_tree(tree).ctx(|| "could not read the merged tree".to_string())
    };
    let mut tree = write(&mut index)?;
    let mut unsound = check.judge(Some(&tree))?;
    if unsound.is_empty() && !unsound.exec_bits.is_empty() {
        // libgit2 merged an executable bit wrong: set git's, and judge the result again.
        set_exec_bits(&mut index, &unsound.exec_bits)?;
        tree = write(&mut index)?;
        unsound = check.judge(Some(&tree))?;
        unsound.paths.extend(unsound.exec_bits.drain(..).map(|(path, _)| path));
    }
    Ok(CheckedMerge { index, tree: Some(tree), unsound })
}
