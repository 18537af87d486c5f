//! The temporary file of a write an agent CLI never finished, taken out of a lane before
//! its attempt is committed.
//!
//! Claude Code writes a file by writing `<file>.tmp.<pid>.<12 hex digits>` (or
//! `<file>.tmp.<8 hex digits>`) and renaming it over `<file>`. A CLI stopped between the
//! two — by a budget cap it enforces itself, a timeout, a kill — leaves the temporary file,
//! and committing the lane would make it the task's change: a file nobody meant, outside
//! the task's write set, which fails the write-set gate on every later attempt. Only new
//! files git does not ignore or track, named exactly that way (the shape Claude Code itself
//! recognises as its temporary files), go.

use std::path::{Path, PathBuf};

use git2::{Repository, Status, StatusOptions};

use crate::error::{Context as _, GitError};
use crate::paths::WorkdirChanges;
use crate::repo::Repo;
use crate::worktree::Worktree;

/// Whether `name` (a file name, or a path ending in one) is the temporary file of an
/// agent CLI's unfinished write: `<file>.tmp.<8 hex>` or `<file>.tmp.<pid>.<12 hex>`.
pub fn is_unfinished_agent_write(name: &str) -> bool {
    let name = name.rsplit('/').next().unwrap_or(name);
    let Some((stem, tail)) = name.rsplit_once(".tmp.") else { return false };
    let hex = |text: &str, len: usize| {
        text.len() == len && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let shaped = match tail.split_once('.') {
        None => hex(tail, 8),
        Some((pid, random)) => {
            !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) && hex(random, 12)
        }
    };
    shaped && !stem.is_empty()
}

impl Repo {
    /// Removes from lane `wt` the temporary files of unfinished agent writes among
    /// `changes` (every new file of the worktree with [`WorkdirChanges::Unknown`]).
    /// Returns the repository-relative paths removed, sorted.
    pub fn remove_unfinished_writes(
        &self,
        wt: &Worktree,
        changes: WorkdirChanges<'_>,
    ) -> Result<Vec<String>, GitError> {
        let wrepo = self.handle(&wt.path)?;
        let mut found = match changes {
            WorkdirChanges::Only(paths) => named_in(&wrepo, &wt.path, paths),
            WorkdirChanges::Unknown => new_files(&wrepo)?,
        };
        found.sort();
        found.dedup();
        for path in &found {
            match std::fs::remove_file(wt.path.join(path)) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => return Err(GitError::io("remove", &wt.path.join(path), err)),
            }
        }
        if !found.is_empty() {
            tracing::info!(worktree = %wt.name, paths = ?found, "removed the temporary files of unfinished agent writes");
        }
        Ok(found)
    }
}

/// The unfinished writes among `paths` (a folder stands for what is in it) that git
/// neither tracks nor ignores.
fn named_in(repo: &Repository, root: &Path, paths: &[PathBuf]) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending: Vec<PathBuf> = paths.to_vec();
    while let Some(path) = pending.pop() {
        let full = root.join(&path);
        let Ok(meta) = std::fs::symlink_metadata(&full) else { continue };
        if meta.is_dir() {
            if path.as_os_str() == ".git" {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&full) else { continue };
            pending.extend(entries.flatten().map(|entry| path.join(entry.file_name())));
            continue;
        }
        let Some(rel) = path.to_str() else { continue };
        if meta.is_file()
            && is_unfinished_agent_write(rel)
            && repo.status_file(&path).is_ok_and(|status| status == Status::WT_NEW)
        {
            found.push(rel.to_string());
        }
    }
    found
}

/// Every new file of the worktree that is an unfinished write.
fn new_files(repo: &Repository) -> Result<Vec<String>, GitError> {
    let mut options = StatusOptions::new();
    options.include_untracked(true).recurse_untracked_dirs(true).include_ignored(false);
    let statuses = repo
        .statuses(Some(&mut options))
        .ctx(|| "could not list the new files of the worktree".to_string())?;
    let mut found = Vec::new();
    for entry in statuses.iter() {
        if entry.status() != Status::WT_NEW {
            continue;
        }
        if let Some(path) = entry.path().ok().filter(|path| is_unfinished_agent_write(path)) {
            found.push(path.to_string());
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::is_unfinished_agent_write;

    #[test]
    fn only_the_shapes_of_an_agents_temporary_file_are_unfinished_writes() {
        for name in
            ["src/one.txt.tmp.2.a42bc55d974b", "one.txt.tmp.1234.0123456789ab", "a.tmp.deadbeef"]
        {
            assert!(is_unfinished_agent_write(name), "{name}");
        }
        for name in [
            "notes.tmp",
            "x.tmp.txt",
            ".tmp.2.a42bc55d974b",
            "a.tmp.2.a42bc55d974",
            "a.tmp.2.A42BC55D974B",
            "a.tmp.x2.a42bc55d974b",
            "a.tmp.deadbee",
            "src/a.tmp.2.a42bc55d974b/inner.rs",
        ] {
            assert!(!is_unfinished_agent_write(name), "{name}");
        }
    }
}
