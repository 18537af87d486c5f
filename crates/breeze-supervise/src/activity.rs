//! Progress that is not output: a role that edits files without printing is not stalled.

use std::ffi::OsString;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Something outside the process that counts as progress, typically the worktree changing.
///
/// Two kinds exist:
/// - a *walking* probe (the default, e.g. [`DirActivity`]) computes its fingerprint by
///   looking at the tree: the supervisor takes a baseline when the role starts and polls it
///   on a blocking thread at [`Supervisor::probe_interval`](crate::Supervisor::probe_interval);
/// - a *notified* probe (e.g. [`TreeWatch`](crate::TreeWatch)) keeps its fingerprint up to
///   date from file-system notifications: reading it costs nothing, so it is read at every
///   watchdog tick and a role start costs no walk. When it has lost notifications
///   ([`needs_walk`](Self::needs_walk)), the supervisor backs it up with
///   [`walk_fingerprint`](Self::walk_fingerprint) — only when the role has shown no
///   activity for nearly the stall timeout, never at every poll.
pub trait ActivityProbe: Send + Sync {
    /// A value that changes whenever the watched thing changes.
    fn fingerprint(&self) -> u64;

    /// Whether [`fingerprint`](Self::fingerprint) is kept up to date by notifications (cheap,
    /// no walk). Default: `false`.
    fn is_notified(&self) -> bool {
        false
    }

    /// For a notified probe: whether notifications were lost (queue overflow, watch limit,
    /// no inotify), so that a quiet fingerprint proves nothing. Default: `false`.
    fn needs_walk(&self) -> bool {
        false
    }

    /// A fingerprint found by walking the tree, the fallback of a notified probe that lost
    /// notifications. Default: [`fingerprint`](Self::fingerprint).
    fn walk_fingerprint(&self) -> u64 {
        self.fingerprint()
    }
}

/// Directory names [`DirActivity`] does not descend into by default: version-control data
/// and build or dependency caches, which are large and change for reasons of their own.
pub const DEFAULT_SKIPPED_DIRS: &[&str] = &[".git", "target", "node_modules"];

/// An [`ActivityProbe`] over a directory tree (a task's worktree).
///
/// The fingerprint hashes the number of entries, the newest modification time (of files
/// *and* directories, so renames and deletions count) and the total file size. Symbolic
/// links are not followed. Directories named in the skip list are not entered, and the walk
/// stops after `max_entries` entries so that a huge tree cannot make a poll expensive.
#[derive(Debug, Clone)]
pub struct DirActivity {
    root: PathBuf,
    skip: Vec<OsString>,
    max_entries: usize,
}

impl DirActivity {
    /// Watches `root`, skipping [`DEFAULT_SKIPPED_DIRS`], visiting at most 100 000 entries.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            skip: DEFAULT_SKIPPED_DIRS.iter().map(OsString::from).collect(),
            max_entries: 100_000,
        }
    }

    /// Replaces the names of directories not to descend into (matched at any depth).
    pub fn skip_dirs<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.skip = names.into_iter().map(Into::into).collect();
        self
    }

    /// Limits how many entries one poll visits.
    pub fn max_entries(mut self, max_entries: usize) -> Self {
        self.max_entries = max_entries;
        self
    }
}

impl ActivityProbe for DirActivity {
    fn fingerprint(&self) -> u64 {
        walk_fingerprint(&self.root, &self.skip, self.max_entries)
    }
}

/// The fingerprint of the tree at `root` (see [`DirActivity`]): entry count, newest mtime of
/// files and directories, total file size; links not followed, `skip` not entered, at most
/// `max_entries` entries visited.
pub(crate) fn walk_fingerprint(root: &Path, skip: &[OsString], max_entries: usize) -> u64 {
    let mut entries: u64 = 0;
    let mut newest: u128 = 0;
    let mut total_size: u64 = 0;
    let mut pending = vec![root.to_path_buf()];
    'walk: while let Some(dir) = pending.pop() {
        let Ok(listing) = std::fs::read_dir(&dir) else { continue };
        for entry in listing.flatten() {
            if entries as usize >= max_entries {
                break 'walk;
            }
            // DirEntry::metadata does not follow symbolic links.
            let Ok(meta) = entry.metadata() else { continue };
            entries += 1;
            if let Some(nanos) = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| d.as_nanos())
            {
                newest = newest.max(nanos);
            }
            if meta.is_dir() {
                if !skip.iter().any(|name| *name == entry.file_name()) {
                    pending.push(entry.path());
                }
            } else {
                total_size = total_size.wrapping_add(meta.len());
            }
        }
    }
    let mut hasher = DefaultHasher::new();
    (entries, newest, total_size).hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn fingerprint_changes_with_the_tree_but_not_inside_skipped_dirs() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("src")).unwrap();
        fs::create_dir_all(dir.path().join(".git/objects")).unwrap();
        fs::create_dir_all(dir.path().join("target/debug")).unwrap();
        fs::write(dir.path().join("src/lib.rs"), "fn a() {}").unwrap();
        let probe = DirActivity::new(dir.path());
        let base = probe.fingerprint();
        assert_eq!(probe.fingerprint(), base, "no change, same fingerprint");

        // Changes inside skipped directories do not count.
        fs::write(dir.path().join(".git/objects/pack"), "x").unwrap();
        fs::write(dir.path().join("target/debug/out"), "x").unwrap();
        assert_eq!(probe.fingerprint(), base);

        // Editing a file to a different size counts.
        fs::write(dir.path().join("src/lib.rs"), "fn a() { b() }").unwrap();
        let edited = probe.fingerprint();
        assert_ne!(edited, base);

        // A new file counts; so does removing it again (entry count and directory mtime).
        fs::write(dir.path().join("src/new.rs"), "").unwrap();
        let added = probe.fingerprint();
        assert_ne!(added, edited);
        fs::remove_file(dir.path().join("src/new.rs")).unwrap();
        assert_ne!(probe.fingerprint(), added);
    }

    #[test]
    fn a_missing_root_has_a_stable_fingerprint() {
        let probe = DirActivity::new("/nonexistent/breeze/worktree");
        assert_eq!(probe.fingerprint(), probe.fingerprint());
    }

    #[test]
    fn the_walk_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..10 {
            fs::write(dir.path().join(format!("f{i}")), "x").unwrap();
        }
        let probe = DirActivity::new(dir.path()).max_entries(3);
        let base = probe.fingerprint();
        // Entries beyond the bound are not visited; the fingerprint is still deterministic.
        assert_eq!(probe.fingerprint(), base);
        let unbounded = DirActivity::new(dir.path()).skip_dirs(Vec::<OsString>::new());
        assert_ne!(unbounded.fingerprint(), base);
    }
}
