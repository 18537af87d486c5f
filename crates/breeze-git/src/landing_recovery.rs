//! What a landing killed while it updated a checkout of main leaves, finished on resume:
//! every path the update touches is put to what the checkout's HEAD has now (the landing
//! when main moved, the old tip when it did not) if it holds the old or the new version —
//! breeze's — and kept as it is otherwise: that is the user's. Scratch files and an index
//! lock the kill left are removed.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use git2::{Index, ObjectType, Oid, Repository};

use crate::checkout_update::{
    CheckoutUpdate, Scratch, remove_leftovers, remove_near_copies, replace_paths,
    write_index_entries,
};
use crate::error::{Context as _, GitError};
use crate::index_file::fresh_index;
use crate::libgit2_checkout::{Version, Versions, tree_diff_versions};
use crate::objects::commit_tree;
use crate::paths::RepoPath;
use crate::repo::Repo;
use crate::state::stat_matches;

/// What [`Repo::finish_checkout_update`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckoutRecovery {
    /// The commit the checkout's paths now agree with: its HEAD.
    pub target: Oid,
    /// How many of breeze's paths were written (old or new version → HEAD's).
    pub rewritten: usize,
    /// Touched paths holding something else, kept as they are: the user's.
    pub kept: Vec<String>,
}

impl Repo {
    /// Finishes (or undoes) an update of a checkout of main that a kill cut short, as the
    /// journal recorded it before it started: each path the update touches whose file
    /// holds the old or the new version, with an index entry that is one of the two, is
    /// put (file and index entry) to the version of the checkout's HEAD — the landing if
    /// main moved before the kill, the old tip if not; any other file there is the user's
    /// and is kept (its index entry, if breeze's, follows HEAD, so `git status` shows the
    /// user's change as a change). Stray scratch files are removed, and so is a lock of
    /// main's ref the kill left inside the compare-and-swap. Nothing is done to a
    /// checkout that is gone, and little to one that already agrees with its HEAD.
    pub fn finish_checkout_update(
        &self,
        update: &CheckoutUpdate,
    ) -> Result<CheckoutRecovery, GitError> {
        let at = update.checkout.as_path();
        self.remove_killed_main_lock(update.to)?;
        let nothing = |target| CheckoutRecovery { target, rewritten: 0, kept: Vec::new() };
        if std::fs::symlink_metadata(at.join(".git")).is_err() {
            return Ok(nothing(update.to));
        }
        let mut crepo = self.handle(at)?;
        // The index changes: a failure half-way must not leave the handle in the pool.
        crepo.set_keep(false);
        let recovery = self.finish_update_in(&crepo, update)?;
        crepo.set_keep(true);
        Ok(recovery)
    }

    /// [`Repo::finish_checkout_update`] with a handle on the checkout.
    fn finish_update_in(
        &self,
        crepo: &Repository,
        update: &CheckoutUpdate,
    ) -> Result<CheckoutRecovery, GitError> {
        let at = update.checkout.as_path();
        remove_leftovers(crepo.path())?;
        let old_tree = commit_tree(crepo, update.from)?;
        let new_tree = commit_tree(crepo, update.to)?;
        let (touched, old, new) = tree_diff_versions(crepo, &old_tree, &new_tree)?;
        remove_near_copies(at, &touched)?;
        let head = crepo
            .head()
            .and_then(|head| head.peel_to_commit())
            .ctx(|| format!("could not read HEAD of {}", at.display()))?;
        let head_tree = head.tree().ctx(|| format!("could not read HEAD of {}", at.display()))?;
        let index = fresh_index(crepo, at)?;
        let head_versions = Versions::of(crepo, &head_tree, &touched)?;
        let unsettled: Vec<RepoPath> =
            touched.into_iter().filter(|path| !settled(at, &index, &head_versions, path)).collect();
        if unsettled.is_empty() {
            return Ok(CheckoutRecovery { target: head.id(), rewritten: 0, kept: Vec::new() });
        }
        let scratch = Scratch::fresh(crepo.path())?;
        let (old_dir, new_dir) = (scratch.dir("old"), scratch.dir("new"));
        self.checkout_tool()?.stage_versions(crepo, at, (&old_tree, &old), &unsettled, &old_dir)?;
        self.checkout_tool()?.stage_versions(crepo, at, (&new_tree, &new), &unsettled, &new_dir)?;
        let exec_bit = crepo.config().and_then(|c| c.get_bool("core.filemode")).unwrap_or(true);
        let sides = [(&old, old_dir.as_path()), (&new, new_dir.as_path())];
        let mut rewrite: Vec<RepoPath> = Vec::new();
        let mut kept: Vec<RepoPath> = Vec::new();
        for path in unsettled {
            let file = at.join(path.as_path());
            let on_disk = sides.iter().any(|(versions, dir)| {
                holds_version(&file, versions.get(&path), &dir.join(path.as_path()), exec_bit)
            });
            if on_disk && index_is_breezes(&index, &path, &old, &new) {
                rewrite.push(path);
            } else {
                kept.push(path);
            }
        }
        let target_dir = if head_tree.id() == new_tree.id() {
            new_dir
        } else if head_tree.id() == old_tree.id() {
            old_dir
        } else {
            // main moved elsewhere since (by hand): breeze's paths follow it too.
            let dir = scratch.dir("head");
            let head = (&head_tree, &head_versions);
            self.checkout_tool()?.stage_versions(crepo, at, head, &rewrite, &dir)?;
            dir
        };
        let in_the_way = replace_paths(at, &target_dir, &head_versions, &rewrite, &mut |_, _| {})?;
        rewrite.retain(|path| !in_the_way.contains(path));
        kept.extend(in_the_way);
        // The user's file stays; an index entry of breeze's follows HEAD.
        let follow: Vec<RepoPath> = kept
            .iter()
            .filter(|path| index_is_breezes(&index, path, &old, &new))
            .filter(|path| staged_id(&index, path) != head_versions.get(path).map(|v| v.0))
            .cloned()
            .collect();
        drop(index);
        let paths = (rewrite.as_slice(), follow.as_slice());
        write_index_entries(crepo, at, &head_versions, paths, None, &scratch, None)?;
        scratch.remove()?;
        let mut kept: Vec<String> = kept.iter().map(RepoPath::display).collect();
        kept.sort();
        Ok(CheckoutRecovery { target: head.id(), rewritten: rewrite.len(), kept })
    }

    /// Removes the lock of main's ref that a kill inside the compare-and-swap of the
    /// landing of `to` left: libgit2 creates `refs/heads/<main>.lock` empty and writes the
    /// landing's id into it only just before renaming it over the ref. Left there, it
    /// would defer every landing as "locked by another git process". A lock holding
    /// anything else is another git process's and stays. Main did not move: the update is
    /// then undone like any other that main did not follow.
    fn remove_killed_main_lock(&self, to: Oid) -> Result<(), GitError> {
        let lock = self.common_dir.join(format!("{}.lock", self.main_ref()));
        if !std::fs::symlink_metadata(&lock).is_ok_and(|meta| meta.is_file()) {
            return Ok(());
        }
        let held = crate::untrusted::read_small(&lock)?.unwrap_or_default();
        if held.trim().is_empty() || held.trim() == to.to_string() {
            tracing::info!(lock = %lock.display(), "removing the ref lock a killed landing left");
            std::fs::remove_file(&lock).map_err(|e| GitError::io("remove", &lock, e))?;
        }
        Ok(())
    }

    /// Removes what killed landings left in the git folders of the primary checkout and
    /// of every linked worktree of the user's (landings never write breeze's own
    /// worktrees): scratch folders, and an `index.lock` that is breeze's scratch copy of
    /// the index. Returns the git folders that held any.
    pub fn remove_landing_leftovers(&self) -> Result<Vec<PathBuf>, GitError> {
        let mut git_dirs = vec![self.common_dir.clone()];
        let ours: Vec<PathBuf> = [self.worktree_root().ok(), Some(self.worktrees_note_dir())]
            .into_iter()
            .flatten()
            .collect();
        if let Ok(entries) = std::fs::read_dir(self.common_dir.join("worktrees")) {
            git_dirs.extend(entries.flatten().map(|entry| entry.path()).filter(|admin| {
                // breeze's own worktrees, wherever they are, are not the user's.
                if admin.join(crate::names::CREATED_MARKER).is_file() {
                    return false;
                }
                // Read as a file a role could have planted (never a FIFO, never through a
                // link); an admin folder whose `gitdir` cannot be read is left alone.
                let gitdir = crate::untrusted::read_small(&admin.join("gitdir"));
                gitdir.ok().flatten().is_some_and(|gitdir| {
                    let gitdir = Path::new(gitdir.trim());
                    !gitdir.as_os_str().is_empty()
                        && !ours.iter().any(|root| gitdir.starts_with(root))
                })
            }));
        }
        let mut cleaned = Vec::new();
        for git_dir in git_dirs {
            if remove_leftovers(&git_dir)? {
                cleaned.push(git_dir);
            }
        }
        Ok(cleaned)
    }
}

/// The stage-0 id of `path` in `index`.
fn staged_id(index: &Index, path: &RepoPath) -> Option<Oid> {
    index.get_path(path.as_path(), 0).map(|entry| entry.id)
}

/// Whether the index entry of `path` is breeze's: unconflicted, and the old or the new
/// version (or absent where that version lacks the path).
fn index_is_breezes(index: &Index, path: &RepoPath, old: &Versions, new: &Versions) -> bool {
    let conflicted = (1..=3).any(|stage| index.get_path(path.as_path(), stage).is_some());
    let staged = staged_id(index, path);
    !conflicted && (staged == old.get(path).map(|v| v.0) || staged == new.get(path).map(|v| v.0))
}

/// Whether `path` already agrees with `head` in the index and on disk: its entry is
/// HEAD's version with the stat data of the file there, or neither HEAD nor the index has
/// it and no file stands there.
fn settled(at: &Path, index: &Index, head: &Versions, path: &RepoPath) -> bool {
    if (1..=3).any(|stage| index.get_path(path.as_path(), stage).is_some()) {
        return false;
    }
    let meta = std::fs::symlink_metadata(at.join(path.as_path())).ok();
    match (head.get(path), index.get_path(path.as_path(), 0), meta) {
        (None, None, meta) => meta.is_none_or(|meta| meta.is_dir()),
        (Some((id, mode, _)), Some(entry), Some(meta)) => {
            entry.id == id && entry.mode == mode as u32 && stat_matches(&entry, &meta)
        }
        _ => false,
    }
}

/// Whether the file at `file` is `version` (written at `staged` by a checkout): a version
/// that lacks the path matches nothing there (or a folder, which holds paths of its own);
/// a link matches a link to the same target; a file a regular file with the same bytes
/// (and the same executable bit, when `exec_bit` matters); a gitlink any folder.
fn holds_version(file: &Path, version: Option<Version>, staged: &Path, exec_bit: bool) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    let actual = std::fs::symlink_metadata(file).ok();
    let Some((_, _, kind)) = version else {
        return actual.is_none_or(|meta| meta.is_dir());
    };
    let Some(actual) = actual else { return false };
    if kind == ObjectType::Commit {
        return actual.is_dir();
    }
    let Ok(wanted) = std::fs::symlink_metadata(staged) else { return false };
    if wanted.file_type().is_symlink() {
        return actual.file_type().is_symlink()
            && std::fs::read_link(file).ok() == std::fs::read_link(staged).ok();
    }
    let executable = |meta: &std::fs::Metadata| meta.permissions().mode() & 0o100 != 0;
    actual.is_file()
        && actual.len() == wanted.len()
        && (!exec_bit || executable(&actual) == executable(&wanted))
        && same_bytes(file, staged)
}

/// Whether two files hold the same bytes (read in pieces, so a large file costs no memory).
fn same_bytes(a: &Path, b: &Path) -> bool {
    let (Ok(mut a), Ok(mut b)) = (std::fs::File::open(a), std::fs::File::open(b)) else {
        return false;
    };
    let (mut left, mut right) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let Ok(n) = read_full(&mut a, &mut left) else { return false };
        let Ok(m) = read_full(&mut b, &mut right) else { return false };
        if n != m || left[..n] != right[..m] {
            return false;
        }
        if n == 0 {
            return true;
        }
    }
}

/// Reads until `buffer` is full or the file ends; how many bytes were read.
fn read_full(file: &mut std::fs::File, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}
