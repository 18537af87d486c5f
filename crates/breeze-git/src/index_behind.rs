//! A lane's index file left behind its HEAD, on purpose.
//!
//! Committing a worker's files stages them in the lane handle's index in memory and writes
//! the commit's tree from there; the run's move of the lane to its next task sets the
//! entries of the paths it checks out in memory too (`IndexFile::LeftBehind`). The index
//! *file* is not written then: written, it is the whole index (8.9 MB at 100,000 files,
//! `index_file.rs`), and only breeze reads it while the run holds the lane.
//! Until it is written the file still holds, for the paths committed or moved, the entries
//! from before. A marker in the lane's admin folder (`breeze-index-behind`: the paths,
//! NUL-separated; written before HEAD moves) names them, and every handle that takes the
//! index from the file puts those entries back to HEAD's ([`apply`]) before it looks at
//! anything. A kill before the next write so loses nothing: the files are HEAD's, and the
//! entries are set again from HEAD.
//!
//! Only breeze reads a lane's index file while a run uses the lane: the worker's git reads
//! a private copy written from the handle's index in memory (`private_git.rs`), any other
//! git (`worktree.setup`, `[review] checks`, `breeze attach`, stepping in) reads the file
//! after [`settle`], and a parked lane is settled before the run lets it go (`lane.rs`). A
//! person who runs `git status` in a lane of a killed run before `breeze resume` sees those
//! paths as staged back to their old versions.

use std::path::{Path, PathBuf};

use git2::{Index, Repository};

use crate::error::{Context as _, GitError};
use crate::index_file::fresh_index;
use crate::state::set_entries_to;
use crate::untrusted::{read_prefix, remove_entry, replace_file};

/// The marker's name in a lane's admin folder.
const MARKER: &str = "breeze-index-behind";

/// Largest marker read (a commit of more paths writes the index instead).
const MARKER_LIMIT: u64 = 4 << 20;

fn marker(repo: &Repository) -> PathBuf {
    repo.path().join(MARKER)
}

/// The paths the marker of `repo` names; `None` when there is no marker.
fn noted(repo: &Repository) -> Result<Option<Vec<Vec<u8>>>, GitError> {
    let Some(bytes) = read_prefix(&marker(repo), MARKER_LIMIT)? else { return Ok(None) };
    let paths = bytes.split(|b| *b == 0).filter(|path| !path.is_empty());
    Ok(Some(paths.map(<[u8]>::to_vec).collect()))
}

/// Notes that the index file of the lane `repo` will stay behind HEAD at `paths` (with the
/// paths noted already): called before a commit or a move moves HEAD. `false` when the
/// paths are too many to note: the caller writes the index instead.
pub(crate) fn note(repo: &Repository, paths: &[Vec<u8>]) -> Result<bool, GitError> {
    let mut all = noted(repo)?.unwrap_or_default();
    all.extend(paths.iter().cloned());
    all.sort();
    all.dedup();
    let bytes = all.join(&0u8);
    if bytes.len() as u64 > MARKER_LIMIT {
        return Ok(false);
    }
    replace_file(&marker(repo), &bytes)?;
    Ok(true)
}

/// Puts the entries of the noted paths in the index of `repo` (the checkout at `at`) to
/// HEAD's, in memory ([`set_entries_to`]: an entry that has HEAD's version already keeps
/// its stat data). The index when a marker was there. Cheap: the noted paths only.
pub(crate) fn apply(repo: &Repository, at: &Path) -> Result<Option<Index>, GitError> {
    let Some(paths) = noted(repo)? else { return Ok(None) };
    let context = || format!("could not put the index of {} back to HEAD", at.display());
    let head = repo.head().and_then(|head| head.peel_to_tree()).ctx(context)?;
    let mut index = fresh_index(repo, at)?;
    for path in &paths {
        set_entries_to(repo, &mut index, &head, path).ctx(context)?;
    }
    Ok(Some(index))
}

/// [`apply`], then the index written and the marker gone: the file agrees with HEAD again.
pub(crate) fn settle(repo: &Repository, at: &Path) -> Result<(), GitError> {
    if let Some(mut index) = apply(repo, at)? {
        crate::index_file::write(repo, &mut index, at, &[])?;
        written(repo)?;
    }
    Ok(())
}

/// After the index of `repo`, [`apply`]-ed, was written whole: the marker goes.
pub(crate) fn written(repo: &Repository) -> Result<(), GitError> {
    remove_entry(&marker(repo))
}
