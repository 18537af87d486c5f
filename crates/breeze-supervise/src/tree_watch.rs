//! A worktree watched through inotify: activity for the stall clock without walking the
//! tree, and the paths that changed since the engine last knew the tree clean, so that
//! committing, checking and moving a lane touch those paths and not the repository.
//!
//! One [`TreeWatch`] lives as long as its lane: the directories are listed once when it
//! starts (to add one watch per directory — no `stat` of any file), then a thread reads the
//! notifications as they come. Everything it cannot see is said, never guessed: a queue
//! overflow, a watch limit, a missing inotify or a moved root make [`TreeWatch::changes`]
//! answer "unknown" (the caller makes one full pass) until a pass settles it.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::eventfd::{EfdFlags, EventFd};

use crate::activity::walk_fingerprint;
use crate::{ActivityProbe, DEFAULT_SKIPPED_DIRS};

/// At most this many changed paths are remembered; beyond, the changes are "unknown" (one
/// full pass) rather than an ever larger set.
pub const MAX_CHANGED_PATHS: usize = 20_000;

/// The entries the fallback walk visits at most (as [`crate::DirActivity`]).
const MAX_WALK_ENTRIES: usize = 100_000;

/// Bytes read from the inotify descriptor at once.
const READ_BUFFER: usize = 64 * 1024;

/// What a directory watch reports: changes of its entries, not reads.
fn dir_mask() -> WatchMask {
    WatchMask::CREATE
        | WatchMask::DELETE
        | WatchMask::MODIFY
        | WatchMask::CLOSE_WRITE
        | WatchMask::ATTRIB
        | WatchMask::MOVED_FROM
        | WatchMask::MOVED_TO
        | WatchMask::DELETE_SELF
        | WatchMask::MOVE_SELF
        | WatchMask::ONLYDIR
        | WatchMask::DONT_FOLLOW
        | WatchMask::EXCL_UNLINK
}

/// The changes a [`TreeWatch`] saw since it was last settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeChanges {
    mark: u64,
    paths: Option<Vec<PathBuf>>,
}

impl TreeChanges {
    /// The paths, relative to the root, that may differ from what the tree held when it was
    /// last settled — files, and directories standing for everything beneath them (a
    /// directory created, moved or deleted; a directory on the skip list). `None`: unknown,
    /// look at the whole tree.
    pub fn paths(&self) -> Option<&[PathBuf]> {
        self.paths.as_deref()
    }

    /// Whether the changes are unknown (look at the whole tree).
    pub fn is_unknown(&self) -> bool {
        self.paths.is_none()
    }

    /// Changes that are unknown; settling them settles nothing.
    pub fn unknown() -> TreeChanges {
        TreeChanges { mark: 0, paths: None }
    }
}

/// Activity and changed paths of a directory tree (a lane worktree), from inotify.
///
/// - [`ActivityProbe`]: its fingerprint is a counter of change notifications (reads do not
///   count), so the supervisor reads it at every watchdog tick for free; after lost
///   notifications it asks for a walk, at the stall decision only.
/// - [`changes`](Self::changes) / [`settle`](Self::settle): the paths that changed since
///   the last settle. The caller settles after it has made the tree and git agree again
///   (committed what a worker left, checked it clean, moved it), passing what `changes`
///   returned before: changes seen after that stay.
///
/// `.git` entries and the skipped directories (default [`DEFAULT_SKIPPED_DIRS`]) are not
/// watched inside; a skipped directory is always reported as a changed path, so git still
/// looks into it when it is not ignored. Symbolic links are not followed.
pub struct TreeWatch {
    shared: Arc<Shared>,
    wake: Option<Arc<EventFd>>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    root: PathBuf,
    skip: Vec<OsString>,
    /// Change notifications seen (the activity fingerprint).
    events: AtomicU64,
    /// Notifications were lost: the stall decision needs a walk.
    degraded: AtomicBool,
    /// Walks made: the fallback fingerprints and the directory listings.
    walks: AtomicU64,
    /// Rung at each batch of notifications read, for [`TreeWatch::changed`].
    bell: tokio::sync::Notify,
    state: Mutex<State>,
}

struct State {
    inotify: Option<Inotify>,
    /// Watched directories by descriptor, relative to the root (`""` is the root).
    dirs: HashMap<WatchDescriptor, PathBuf>,
    /// Changed paths, with the sequence number of their last change.
    changed: HashMap<PathBuf, u64>,
    /// Directories on the skip list found in the tree (not `.git`).
    skipped: BTreeSet<PathBuf>,
    seq: u64,
    /// Notifications were lost at this sequence number (queue overflow, too many paths).
    lost_at: Option<u64>,
    /// Why some directories are not watched (watch limit, no inotify, root gone), until a
    /// listing watches them all again.
    incomplete: Option<Unwatched>,
    buffer: Vec<u8>,
}

/// Why some directories of the tree are not watched: the watch then answers "unknown" and
/// its users make full passes.
#[derive(Debug, Clone, thiserror::Error)]
enum Unwatched {
    /// The kernel gives no inotify (why, when it said).
    #[error(
        "inotify is not available{}",
        .0.as_ref().map(|err| format!(": {err}")).unwrap_or_default()
    )]
    NoInotify(Option<Arc<std::io::Error>>),
    /// The person's watch limit is used up.
    #[error("the inotify watch limit is reached (fs.inotify.max_user_watches)")]
    WatchLimit,
    /// The watched folder itself is gone.
    #[error("the worktree's folder is gone")]
    RootGone,
    /// The watched folder itself moved.
    #[error("the worktree's folder moved")]
    RootMoved,
    /// A directory cannot be watched.
    #[error("cannot watch {}: {error}", path.display())]
    CannotWatch {
        /// The directory.
        path: PathBuf,
        /// Why.
        error: Arc<std::io::Error>,
    },
}

impl TreeWatch {
    /// Watches `root`, skipping [`DEFAULT_SKIPPED_DIRS`]. Never fails: without inotify the
    /// watch says so and every answer is "unknown".
    pub fn start(root: impl Into<PathBuf>) -> TreeWatch {
        TreeWatch::with_skipped(root, DEFAULT_SKIPPED_DIRS.iter().map(OsString::from))
    }

    /// Watches `root`, not entering directories with these names (`.git` is never entered).
    pub fn with_skipped<I, S>(root: impl Into<PathBuf>, skip: I) -> TreeWatch
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let mut skip: Vec<OsString> = skip.into_iter().map(Into::into).collect();
        if !skip.iter().any(|name| name == ".git") {
            skip.push(".git".into());
        }
        let (inotify, incomplete) = match Inotify::init() {
            Ok(inotify) => (Some(inotify), None),
            Err(err) => (None, Some(Unwatched::NoInotify(Some(Arc::new(err))))),
        };
        let shared = Arc::new(Shared {
            root: root.into(),
            skip,
            events: AtomicU64::new(0),
            degraded: AtomicBool::new(incomplete.is_some()),
            walks: AtomicU64::new(0),
            bell: tokio::sync::Notify::new(),
            state: Mutex::new(State {
                inotify,
                dirs: HashMap::new(),
                changed: HashMap::new(),
                skipped: BTreeSet::new(),
                seq: 0,
                lost_at: None,
                incomplete,
                buffer: vec![0; READ_BUFFER],
            }),
        });
        let mut watch = TreeWatch { shared, wake: None, thread: None };
        let reader = {
            let mut state = watch.shared.lock();
            if state.inotify.is_some() {
                watch.shared.list_and_watch(&mut state);
            }
            state.inotify.as_ref().and_then(|inotify| inotify.as_fd().try_clone_to_owned().ok())
        };
        if let Some(fd) = reader {
            watch.spawn_reader(fd);
        }
        if let Some(why) = watch.shared.lock().incomplete.clone() {
            tracing::info!(root = %watch.shared.root.display(), "file-system notifications incomplete: {why}; full passes instead");
        }
        watch
    }

    /// The thread that reads notifications as they come, so the kernel's queue rarely
    /// overflows and new directories are watched at once.
    fn spawn_reader(&mut self, fd: OwnedFd) {
        let Ok(wake) = EventFd::from_flags(EfdFlags::EFD_CLOEXEC) else {
            // Without the thread the queue is still read on every call.
            return;
        };
        let wake = Arc::new(wake);
        let shared = self.shared.clone();
        let stop = wake.clone();
        let spawned = std::thread::Builder::new().name("breeze-watch".into()).spawn(move || {
            loop {
                let mut fds = [
                    PollFd::new(fd.as_fd(), PollFlags::POLLIN),
                    PollFd::new(stop.as_fd(), PollFlags::POLLIN),
                ];
                match poll(&mut fds, PollTimeout::NONE) {
                    Ok(_) => {}
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(_) => return,
                }
                let woken = fds[1].revents().is_some_and(|r| !r.is_empty());
                let readable = fds[0].revents().is_some_and(|r| !r.is_empty());
                if woken {
                    return;
                }
                if readable {
                    let mut state = shared.lock();
                    shared.drain(&mut state);
                }
            }
        });
        if let Ok(handle) = spawned {
            self.wake = Some(wake);
            self.thread = Some(handle);
        }
    }

    /// Returns once a change is seen in the tree: one made since the last call returned
    /// counts, even if nobody was waiting then (a dispatcher that looks at the tree, then
    /// waits, misses nothing written in between). Without inotify it never returns: wait
    /// with a timeout.
    pub async fn changed(&self) {
        self.shared.bell.notified().await;
    }

    /// The root of the watched tree.
    pub fn root(&self) -> &Path {
        &self.shared.root
    }

    /// The paths changed since the last [`settle`](Self::settle) (every notification queued
    /// before the call is counted), or unknown when notifications were lost — then the
    /// directories are listed again so that the watch is whole for what comes next.
    pub fn changes(&self) -> TreeChanges {
        let mut state = self.shared.lock();
        self.shared.drain(&mut state);
        if state.lost_at.is_some() || state.incomplete.is_some() {
            if state.inotify.is_some() {
                self.shared.list_and_watch(&mut state);
            }
            return TreeChanges { mark: state.seq, paths: None };
        }
        let mut paths: Vec<PathBuf> = state.changed.keys().cloned().collect();
        paths.extend(state.skipped.iter().cloned());
        paths.sort();
        paths.dedup();
        TreeChanges { mark: state.seq, paths: Some(paths) }
    }

    /// Forgets the changes in `changes` (what [`changes`](Self::changes) returned before the
    /// caller made the tree and git agree); changes seen after it stay. Lost notifications
    /// are forgotten too once the caller's full pass came after them.
    pub fn settle(&self, changes: &TreeChanges) {
        if changes.mark == 0 && changes.paths.is_none() {
            return;
        }
        let mut state = self.shared.lock();
        let mark = changes.mark;
        state.changed.retain(|_, seq| *seq > mark);
        if state.lost_at.is_some_and(|at| at <= mark) {
            state.lost_at = None;
        }
        let degraded = state.lost_at.is_some() || state.incomplete.is_some();
        self.shared.degraded.store(degraded, Ordering::Relaxed);
    }

    /// Whether every change is being seen (no notifications lost since the last settle, every
    /// directory watched).
    pub fn is_complete(&self) -> bool {
        !self.shared.degraded.load(Ordering::Relaxed)
    }

    /// How many walks of the tree this watch made: its directory listings (when it starts,
    /// and after lost notifications) and fallback fingerprints.
    pub fn walks(&self) -> u64 {
        self.shared.walks.load(Ordering::Relaxed)
    }

    /// Says that the tree did not agree with git when the watch started (a worktree adopted
    /// from an interrupted run): changes are unknown until a full pass settles them.
    pub fn assume_unknown(&self) {
        let mut state = self.shared.lock();
        self.shared.lose(&mut state);
    }

    /// Behaves as if the kernel's queue had overflowed (for tests of the fallback).
    #[doc(hidden)]
    pub fn simulate_overflow(&self) {
        let mut state = self.shared.lock();
        self.shared.drain(&mut state);
        self.shared.lose(&mut state);
    }
}

impl Drop for TreeWatch {
    fn drop(&mut self) {
        if let Some(wake) = &self.wake {
            let _ = wake.write(1);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for TreeWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeWatch")
            .field("root", &self.shared.root)
            .field("complete", &self.is_complete())
            .finish_non_exhaustive()
    }
}

impl ActivityProbe for TreeWatch {
    fn fingerprint(&self) -> u64 {
        self.shared.events.load(Ordering::Relaxed)
    }

    fn is_notified(&self) -> bool {
        true
    }

    fn needs_walk(&self) -> bool {
        !self.is_complete()
    }

    fn walk_fingerprint(&self) -> u64 {
        self.shared.walks.fetch_add(1, Ordering::Relaxed);
        walk_fingerprint(&self.shared.root, &self.shared.skip, MAX_WALK_ENTRIES)
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn is_skipped(&self, name: &std::ffi::OsStr) -> bool {
        self.skip.iter().any(|skipped| skipped == name)
    }

    /// Notifications were lost: the changes are unknown until a full pass settles them.
    fn lose(&self, state: &mut State) {
        state.seq += 1;
        // The latest loss counts: a settle before it does not make the watch whole.
        state.lost_at = Some(state.seq);
        state.changed.clear();
        self.events.fetch_add(1, Ordering::Relaxed);
        self.degraded.store(true, Ordering::Relaxed);
    }

    fn record(&self, state: &mut State, path: PathBuf) {
        state.seq += 1;
        // Recorded even while the changes are unknown: a full pass made before this change
        // settles only what came before it.
        if state.changed.len() >= MAX_CHANGED_PATHS && !state.changed.contains_key(&path) {
            self.lose(state);
            return;
        }
        let seq = state.seq;
        state.changed.insert(path, seq);
    }

    /// Lists every directory of the tree (no `stat` of files: the entry types come with the
    /// listing) and watches each, replacing the watch table. Directories that can no longer
    /// be watched make the watch incomplete.
    fn list_and_watch(&self, state: &mut State) {
        self.walks.fetch_add(1, Ordering::Relaxed);
        let old: Vec<WatchDescriptor> = state.dirs.keys().cloned().collect();
        state.dirs.clear();
        state.skipped.clear();
        state.incomplete = None;
        if let Err(why) = self.watch_subtree(state, PathBuf::new()) {
            state.incomplete = Some(why);
        }
        // Directories that left the tree keep no watch.
        if let Some(inotify) = state.inotify.as_ref() {
            let kept: std::collections::HashSet<&WatchDescriptor> = state.dirs.keys().collect();
            let mut watches = inotify.watches();
            for wd in old.into_iter().filter(|wd| !kept.contains(wd)) {
                let _ = watches.remove(wd);
            }
        }
        let degraded = state.lost_at.is_some() || state.incomplete.is_some();
        self.degraded.store(degraded, Ordering::Relaxed);
    }

    /// Watches the directory `rel` (relative to the root) and every directory below it that
    /// is not skipped. Err: why some could not be watched.
    fn watch_subtree(&self, state: &mut State, rel: PathBuf) -> Result<(), Unwatched> {
        let Some(inotify) = state.inotify.as_ref() else {
            return Err(Unwatched::NoInotify(None));
        };
        let mut watches = inotify.watches();
        let mut problem = None;
        let mut pending = vec![rel];
        while let Some(dir) = pending.pop() {
            let full = self.root.join(&dir);
            match watches.add(&full, dir_mask()) {
                Ok(wd) => {
                    state.dirs.insert(wd, dir.clone());
                }
                // Gone again before it could be watched: its parent reports that. The root
                // itself missing is not something to skip.
                Err(err)
                    if !dir.as_os_str().is_empty()
                        && (err.kind() == std::io::ErrorKind::NotFound
                            || err.raw_os_error() == Some(libc::ENOTDIR)) =>
                {
                    continue;
                }
                Err(err) => {
                    let why = if err.raw_os_error() == Some(libc::ENOSPC) {
                        Unwatched::WatchLimit
                    } else {
                        Unwatched::CannotWatch { path: full.clone(), error: Arc::new(err) }
                    };
                    problem.get_or_insert(why);
                    continue;
                }
            }
            let Ok(listing) = std::fs::read_dir(&full) else { continue };
            for entry in listing.flatten() {
                // The type comes with the listing (no stat); links are not followed.
                let Ok(kind) = entry.file_type() else { continue };
                if !kind.is_dir() {
                    continue;
                }
                let name = entry.file_name();
                let child = dir.join(&name);
                if self.is_skipped(&name) {
                    if name != ".git" {
                        state.skipped.insert(child);
                    }
                } else {
                    pending.push(child);
                }
            }
        }
        match problem {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    /// Reads every queued notification (non-blocking) and records what changed.
    fn drain(&self, state: &mut State) {
        loop {
            let Some(inotify) = state.inotify.as_mut() else { return };
            let mut buffer = std::mem::take(&mut state.buffer);
            let read: Vec<(WatchDescriptor, EventMask, Option<OsString>)> = match inotify
                .read_events(&mut buffer)
            {
                Ok(events) => events.map(|e| (e.wd, e.mask, e.name.map(OsString::from))).collect(),
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => Vec::new(),
                Err(err) => {
                    tracing::warn!(root = %self.root.display(), %err, "reading file-system notifications failed");
                    self.lose(state);
                    Vec::new()
                }
            };
            state.buffer = buffer;
            if read.is_empty() {
                return;
            }
            for (wd, mask, name) in read {
                self.handle(state, wd, mask, name);
            }
            self.bell.notify_one();
        }
    }

    fn handle(
        &self,
        state: &mut State,
        wd: WatchDescriptor,
        mask: EventMask,
        name: Option<OsString>,
    ) {
        if mask.contains(EventMask::Q_OVERFLOW) {
            self.lose(state);
            return;
        }
        let Some(dir) = state.dirs.get(&wd).cloned() else { return };
        if mask.contains(EventMask::IGNORED) {
            state.dirs.remove(&wd);
            if dir.as_os_str().is_empty() {
                state.incomplete.get_or_insert(Unwatched::RootGone);
                self.degraded.store(true, Ordering::Relaxed);
            }
            return;
        }
        let Some(name) = name else {
            // The watched directory itself moved or went: its parent reports it, except for
            // the root.
            if dir.as_os_str().is_empty()
                && mask.intersects(EventMask::MOVE_SELF | EventMask::DELETE_SELF)
            {
                state.incomplete.get_or_insert(Unwatched::RootMoved);
                self.degraded.store(true, Ordering::Relaxed);
                self.events.fetch_add(1, Ordering::Relaxed);
            }
            return;
        };
        let path = dir.join(&name);
        let is_dir = mask.contains(EventMask::ISDIR);
        if name == ".git" {
            // A nested repository: git sees it as its folder. The root's own `.git` (the
            // lane's link to the repository) is checked by the engine, not committed.
            if !dir.as_os_str().is_empty() {
                self.record(state, dir);
                self.events.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        self.events.fetch_add(1, Ordering::Relaxed);
        if is_dir && self.is_skipped(&name) {
            state.skipped.insert(path.clone());
            self.record(state, path);
            return;
        }
        if is_dir && mask.contains(EventMask::MOVED_FROM) {
            // The folder left this place: its watches (and those below) go with it.
            let below: Vec<WatchDescriptor> = state
                .dirs
                .iter()
                .filter(|(_, p)| p.starts_with(&path))
                .map(|(wd, _)| wd.clone())
                .collect();
            if let Some(inotify) = state.inotify.as_ref() {
                let mut watches = inotify.watches();
                for wd in below {
                    state.dirs.remove(&wd);
                    let _ = watches.remove(wd);
                }
            }
            state.skipped.retain(|p| !p.starts_with(&path));
        }
        if is_dir && mask.intersects(EventMask::CREATE | EventMask::MOVED_TO) {
            // A new folder: watched from now on. Files made in it before the watch are
            // covered by the folder itself being a changed path.
            if let Err(why) = self.watch_subtree(state, path.clone()) {
                state.incomplete.get_or_insert(why);
                self.degraded.store(true, Ordering::Relaxed);
            }
        }
        self.record(state, path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::time::{Duration, Instant};

    fn paths(watch: &TreeWatch) -> Vec<String> {
        watch
            .changes()
            .paths()
            .expect("known changes")
            .iter()
            .map(|p| p.display().to_string())
            .collect()
    }

    /// Waits until the reader thread has counted at least `n` notifications.
    fn wait_for_events(watch: &TreeWatch, n: u64) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while watch.fingerprint() < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn changes_are_the_paths_written_created_deleted_and_moved() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("src/deep")).unwrap();
        fs::create_dir_all(root.join("target/debug")).unwrap();
        fs::write(root.join("src/lib.rs"), "a").unwrap();
        fs::write(root.join("src/deep/old.rs"), "a").unwrap();
        fs::write(root.join(".git"), "gitdir: x").unwrap();
        let watch = TreeWatch::start(root);
        assert_eq!(watch.walks(), 1, "one listing of the directories when it starts");
        assert!(watch.is_complete());
        // The skipped folder is always reported, so git still looks at it.
        assert_eq!(paths(&watch), ["target"]);
        assert_eq!(watch.fingerprint(), 0);

        fs::write(root.join("src/lib.rs"), "b").unwrap();
        fs::remove_file(root.join("src/deep/old.rs")).unwrap();
        fs::create_dir_all(root.join("new/inner")).unwrap();
        fs::write(root.join("new/inner/file.rs"), "c").unwrap();
        fs::rename(root.join("src/deep"), root.join("moved")).unwrap();
        fs::write(root.join("target/debug/out"), "ignored").unwrap();
        fs::write(root.join(".git"), "gitdir: y").unwrap();
        let changes = watch.changes();
        let got: Vec<String> =
            changes.paths().unwrap().iter().map(|p| p.display().to_string()).collect();
        for expected in ["src/lib.rs", "src/deep/old.rs", "new", "src/deep", "moved", "target"] {
            assert!(got.contains(&expected.to_string()), "{expected} missing from {got:?}");
        }
        assert!(!got.iter().any(|p| p.starts_with("target/") || p == ".git"), "{got:?}");
        assert!(watch.fingerprint() > 0, "changes are activity");

        // Settled, they are forgotten; what comes after is seen, also in the new folders.
        watch.settle(&changes);
        assert_eq!(paths(&watch), ["target"]);
        fs::write(root.join("new/inner/file.rs"), "d").unwrap();
        fs::write(root.join("moved/again.rs"), "e").unwrap();
        assert_eq!(paths(&watch), ["moved/again.rs", "new/inner/file.rs", "target"]);
        assert_eq!(watch.walks(), 1, "no walk after the start");
    }

    #[tokio::test]
    async fn a_waiter_hears_a_file_written_while_it_waits_and_one_written_before() {
        let dir = tempfile::tempdir().unwrap();
        let watch = Arc::new(TreeWatch::with_skipped(dir.path(), Vec::<OsString>::new()));
        let waiter = tokio::spawn({
            let watch = watch.clone();
            async move { watch.changed().await }
        });
        fs::write(dir.path().join("approve.json"), "{}").unwrap();
        // A bound against hanging, not a measure: the change is heard without it.
        let heard = tokio::time::timeout(Duration::from_secs(30), waiter).await;
        assert!(heard.is_ok_and(|joined| joined.is_ok()), "the waiter never heard the file");
        assert!(paths(&watch).contains(&"approve.json".to_string()));

        fs::write(dir.path().join("reject.json"), "{}").unwrap();
        wait_for_events(&watch, watch.fingerprint() + 1);
        let heard = tokio::time::timeout(Duration::from_secs(30), watch.changed()).await;
        assert!(heard.is_ok(), "a change made before the wait is not lost");
    }

    #[test]
    fn changes_after_the_snapshot_survive_a_settle() {
        let dir = tempfile::tempdir().unwrap();
        let watch = TreeWatch::with_skipped(dir.path(), Vec::<OsString>::new());
        fs::write(dir.path().join("a"), "1").unwrap();
        let first = watch.changes();
        fs::write(dir.path().join("b"), "1").unwrap();
        watch.settle(&first);
        assert_eq!(paths(&watch), ["b"]);
    }

    #[test]
    fn a_lost_queue_is_unknown_until_a_full_pass_settles_it() {
        let dir = tempfile::tempdir().unwrap();
        let watch = TreeWatch::with_skipped(dir.path(), Vec::<OsString>::new());
        fs::write(dir.path().join("a"), "1").unwrap();
        watch.simulate_overflow();
        assert!(!watch.is_complete());
        assert!(watch.needs_walk(), "the stall decision needs a walk now");
        let lost = watch.changes();
        assert!(lost.is_unknown());
        assert_eq!(watch.walks(), 2, "the directories are listed again");
        watch.settle(&lost);
        assert!(watch.is_complete());
        assert_eq!(paths(&watch), Vec::<String>::new());
        fs::write(dir.path().join("b"), "1").unwrap();
        assert_eq!(paths(&watch), ["b"]);
    }

    #[test]
    fn a_change_after_the_unknown_snapshot_survives_the_settle_of_the_full_pass() {
        let dir = tempfile::tempdir().unwrap();
        let watch = TreeWatch::with_skipped(dir.path(), Vec::<OsString>::new());
        watch.simulate_overflow();
        let lost = watch.changes();
        assert!(lost.is_unknown());
        // Written after the caller took the snapshot (its full pass may have missed it).
        fs::write(dir.path().join("late"), "1").unwrap();
        let _ = watch.changes(); // drains the queue while still unknown
        watch.settle(&lost);
        assert_eq!(paths(&watch), ["late"]);
        // An overflow after the snapshot keeps the changes unknown past its settle.
        let before = watch.changes();
        watch.simulate_overflow();
        watch.settle(&before);
        assert!(watch.changes().is_unknown());
    }

    #[test]
    fn folders_made_while_notifications_were_lost_are_watched_after_the_listing() {
        let dir = tempfile::tempdir().unwrap();
        let watch = TreeWatch::with_skipped(dir.path(), Vec::<OsString>::new());
        watch.simulate_overflow();
        {
            // As if its notification had been lost: no watch on it yet.
            let mut state = watch.shared.lock();
            watch.shared.drain(&mut state);
        }
        let lost = watch.changes();
        fs::create_dir(dir.path().join("later")).unwrap();
        let lost2 = watch.changes();
        assert!(lost.is_unknown() && lost2.is_unknown());
        watch.settle(&lost2);
        fs::write(dir.path().join("later/x"), "1").unwrap();
        assert_eq!(paths(&watch), ["later/x"]);
    }

    #[test]
    fn too_many_paths_are_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let watch = TreeWatch::with_skipped(dir.path(), Vec::<OsString>::new());
        for i in 0..MAX_CHANGED_PATHS + 1 {
            fs::write(dir.path().join(format!("f{i}")), "").unwrap();
        }
        assert!(watch.changes().is_unknown());
    }

    #[test]
    fn the_reader_thread_counts_activity_without_being_asked() {
        let dir = tempfile::tempdir().unwrap();
        let watch = TreeWatch::start(dir.path());
        fs::write(dir.path().join("a"), "1").unwrap();
        wait_for_events(&watch, 1);
        assert!(watch.fingerprint() >= 1);
        assert_eq!(watch.walks(), 1);
    }

    #[test]
    fn a_missing_root_is_unknown() {
        let watch = TreeWatch::start("/nonexistent/breeze/worktree");
        assert!(watch.changes().is_unknown());
        assert!(watch.needs_walk());
    }
}
