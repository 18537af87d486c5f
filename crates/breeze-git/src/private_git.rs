//! A lane worker's private git directory, `.breeze/lanes/<lane>/git`: a small repository of
//! its own whose object store lists the shared one as a read-only alternate, with its own
//! HEAD, two refs (the task branch at the lane's HEAD commit, main at main's tip), the
//! lane's index (written from the lane handle's index in memory: the lane's own file may
//! be behind HEAD, `index_behind.rs`), the shared `info/exclude` and a config that
//! includes the shared one.
//!
//! While a worker runs, the lane's `.git` file names this directory instead of the lane's
//! admin folder, so every git the worker runs — its shell, claude's and codex's tools, a
//! test suite — reads the shared objects and writes only here. No environment variable
//! does it (`GIT_DIR`, `GIT_INDEX_FILE`, `GIT_OBJECT_DIRECTORY` would leak into the
//! repositories a project's tests create). The kernel confinement grants the worker this
//! directory and nothing under `.git`.
//!
//! Nothing in it is read back: breeze builds the task's commit from the lane's files
//! (`commit.rs`), so what the worker staged, stashed or committed here counts for nothing.
//! Before every worker breeze rewrites what it needs (HEAD, the refs, the index, the config,
//! the alternate) without following links; after it, [`Repo::check_lane_links`] points the
//! lane's `.git` back at the admin folder. The directory is reset when the lane moves to
//! another task and removed with the lane.

use std::path::{Path, PathBuf};

use crate::error::{Context as _, GitError};
use crate::index_behind;
use crate::index_file::{self, fresh_index};
use crate::names::{SEALED_MAIN, STATE_DIR, branch_ref};
use crate::repo::Repo;
use crate::untrusted::{
    SMALL_FILE_LIMIT, copy_file, ensure_dir, holds_exactly, read_prefix, read_small, remove_entry,
    replace_file,
};
use crate::worktree::Worktree;

/// Folder under `.breeze/` that holds one folder per lane: `<lane>/git` (the private git
/// directory, the worker's), `<lane>/branch` (breeze's note of the task it was made for),
/// `<lane>/baseline.json` (what breeze's own steps left in the lane, `baseline.rs`) and
/// the engine's record of the lane.
const LANES_DIR: &str = "lanes";

/// A value for a git config file: quoted, with `\` and `"` escaped. `None` when it cannot
/// be written (a line break).
fn config_value(path: &Path) -> Option<String> {
    let text = path.to_str()?;
    if text.contains(['\n', '\r']) {
        return None;
    }
    Some(format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\"")))
}

/// Writes `contents` at `path` in a folder a worker writes: whatever is there (a link, a
/// FIFO, a folder) is replaced, not written through; a regular file of one link that
/// already holds exactly `contents` is left as it is.
fn put(path: &Path, contents: &[u8]) -> Result<(), GitError> {
    if holds_exactly(path, contents) {
        return Ok(());
    }
    if std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir()) {
        remove_entry(path)?;
    }
    replace_file(path, contents)
}

/// [`put`] of a copy of the file `from` (a small one read whole; see [`copy_file`] for the
/// rest); nothing at `from` removes what is at `to`.
fn put_copy(from: &Path, to: &Path) -> Result<(), GitError> {
    if let Some(contents) = read_prefix(from, SMALL_FILE_LIMIT + 1)?
        && contents.len() as u64 <= SMALL_FILE_LIMIT
    {
        return put(to, &contents);
    }
    if std::fs::symlink_metadata(to).is_ok_and(|meta| meta.is_dir()) {
        remove_entry(to)?;
    }
    copy_file(from, to).map(|_| ())
}

/// Removes from the private git directory `private` all that [`Repo::write_private_git`]
/// does not write — what the worker of another task left: its objects, refs, logs, hooks,
/// any link — and keeps what it writes, `refs` (the branches' refs, under `refs/heads/`)
/// included, to be compared rather than made again.
fn prune_private_git(private: &Path, refs: &[&str]) -> Result<(), GitError> {
    let mut files: Vec<String> = [
        "HEAD",
        "config",
        "index",
        "shallow",
        "objects/info/alternates",
        "info/exclude",
        "info/attributes",
    ]
    .map(String::from)
    .to_vec();
    let mut folders: Vec<String> =
        ["objects", "objects/info", "refs", "refs/heads", "refs/tags", "info"]
            .map(String::from)
            .to_vec();
    for name in refs {
        let file = format!("refs/heads/{name}");
        let mut folder = Path::new(&file).parent();
        while let Some(above) = folder.filter(|above| above.as_os_str().len() > "refs".len()) {
            folders.push(above.to_string_lossy().into_owned());
            folder = above.parent();
        }
        files.push(file);
    }
    prune_folder(private, "", (&files, &folders))
}

/// [`prune_private_git`] of the folder `dir`, at `rel` in the private git directory.
fn prune_folder(
    dir: &Path,
    rel: &str,
    (files, folders): (&[String], &[String]),
) -> Result<(), GitError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(GitError::io("list", dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| GitError::io("list", dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let at = if rel.is_empty() { name } else { format!("{rel}/{name}") };
        // The entry's own kind: a link is a link, never what it points at.
        let kind = entry.file_type().map_err(|e| GitError::io("inspect", &entry.path(), e))?;
        if kind.is_dir() && folders.contains(&at) {
            prune_folder(&entry.path(), &at, (files, folders))?;
        } else if !(kind.is_file() && files.contains(&at)) {
            remove_entry(&entry.path())?;
        }
    }
    Ok(())
}

impl Repo {
    /// `.breeze/lanes/<lane>`: breeze's folder for the lane (not the worker's).
    pub(crate) fn lane_home(&self, name: &str) -> PathBuf {
        self.workdir.join(STATE_DIR).join(LANES_DIR).join(name)
    }

    /// The private git directory of lane `wt`'s worker: `.breeze/lanes/<lane>/git`.
    pub fn private_git_dir(&self, wt: &Worktree) -> PathBuf {
        self.private_git_dir_of(&wt.name)
    }

    /// The private git directory of lane `name`.
    pub(crate) fn private_git_dir_of(&self, name: &str) -> PathBuf {
        self.lane_home(name).join("git")
    }

    /// Prepares lane `wt` for its worker: brings its private git directory up to date
    /// (created, or reset when the lane was last sealed for another branch) and points the
    /// lane's `.git` file at it. Returns the directory (what the worker may write besides
    /// the lane). Undone by [`Repo::check_lane_links`].
    ///
    /// Written each time: `HEAD` (`ref: refs/heads/<task branch>`), that ref at the branch's
    /// tip and `refs/heads/<main>` at main's tip (so `git diff main`, `git log main..` work),
    /// `index` (the lane's as HEAD has it, written from the lane handle's index in memory;
    /// `git status` is right and fast), `config`
    /// (`[include]` of the shared config, so the user's settings apply, then the lane as the
    /// working tree), `objects/info/alternates` (the shared object store), `info/exclude`
    /// and, when the shared repository has them, `info/attributes` and `shallow`.
    pub fn seal_lane(&self, wt: &Worktree) -> Result<PathBuf, GitError> {
        let home = self.lane_home(&wt.name);
        let private = home.join("git");
        let state = self.workdir.join(STATE_DIR);
        std::fs::create_dir_all(&state).map_err(|e| GitError::io("create directory", &state, e))?;
        // breeze's own folders: real folders, never a link someone planted to elsewhere.
        ensure_dir(&state.join(LANES_DIR))?;
        ensure_dir(&home)?;
        // A `.git` that is no longer a file (a folder or link planted while the lane was at
        // rest) is moved aside first, as the lane check does.
        let mut problems = Vec::new();
        self.repair_gitfile(wt, &self.lane_admin_dir(wt), &mut problems)?;
        for problem in problems {
            tracing::warn!(lane = %wt.name, "{problem} (repaired)");
        }
        // A lane that moved to another task starts afresh: the old objects need not survive.
        // What breeze writes anyway stays, to be compared (the index patched in place).
        let note = home.join("branch");
        if read_small(&note).ok().flatten().as_deref() != Some(wt.branch.as_str()) {
            if std::fs::symlink_metadata(&private).is_ok_and(|meta| meta.is_dir()) {
                prune_private_git(&private, &[self.main_branch.as_str(), wt.branch.as_str()])?;
            } else {
                remove_entry(&private)?;
            }
        }
        let (tip, main) = {
            let repo = self.git()?;
            let tip = repo
                .refname_to_id(&branch_ref(&wt.branch))
                .ctx(|| format!("could not read the tip of `{}`", wt.branch))?;
            (tip, self.main_tip()?)
        };
        self.write_private_git(wt, &private, tip, main)?;
        put(&note, wt.branch.as_bytes())?;
        // main's tip as written into the private refs: breeze's, never the worker's work
        // (the guard leaves it out of the lane's tips). Beside the private directory, where
        // the worker cannot write.
        put(&home.join(SEALED_MAIN), main.to_string().as_bytes())?;
        self.point_gitfile(wt, &private)?;
        Ok(private)
    }

    /// Writes what the private git directory `private` of lane `wt` holds: its folders,
    /// the task branch's ref at `tip` and main's at `main`, `HEAD`, `config`, the
    /// alternate, copies of the shared `info/exclude`, `info/attributes` and `shallow`, and
    /// the lane's index ([`Repo::seal_lane`]).
    fn write_private_git(
        &self,
        wt: &Worktree,
        private: &Path,
        tip: git2::Oid,
        main: git2::Oid,
    ) -> Result<(), GitError> {
        let unwritable = |path: &Path| GitError::BadPath {
            path: path.display().to_string(),
            problem: "a path with a line break cannot be written into a git config; move the \
                      repository to a path without one"
                .to_string(),
        };
        let shared_config =
            config_value(&self.common_dir.join("config")).ok_or_else(|| unwritable(&wt.path))?;
        let lane = config_value(&wt.path).ok_or_else(|| unwritable(&wt.path))?;

        for dir in ["", "objects", "objects/info", "refs", "refs/heads", "refs/tags", "info"] {
            ensure_dir(&private.join(dir))?;
        }
        for (branch, commit) in [(self.main_branch.as_str(), main), (wt.branch.as_str(), tip)] {
            let file = private.join(branch_ref(branch));
            let mut dir = private.join("refs/heads");
            if let Some(parents) = Path::new(branch).parent() {
                for part in parents.components() {
                    dir.push(part);
                    ensure_dir(&dir)?;
                }
            }
            put(&file, format!("{commit}\n").as_bytes())?;
        }
        put(&private.join("HEAD"), format!("ref: {}\n", branch_ref(&wt.branch)).as_bytes())?;
        let config = format!(
            "# breeze: the private git directory of {lane_name} (docs/SECURITY.md); rewritten \
             before every worker.\n[include]\n\tpath = {shared_config}\n[core]\n\
             \trepositoryformatversion = 0\n\tbare = false\n\tworktree = {lane}\n",
            lane_name = wt.name
        );
        put(&private.join("config"), config.as_bytes())?;
        let alternate = format!("{}\n", self.common_dir.join("objects").display());
        put(&private.join("objects/info/alternates"), alternate.as_bytes())?;
        for (from, to) in [
            (self.common_dir.join("info/exclude"), "info/exclude"),
            (self.common_dir.join("info/attributes"), "info/attributes"),
            (self.common_dir.join("shallow"), "shallow"),
        ] {
            put_copy(&from, &private.join(to))?;
        }
        self.write_private_index(wt, &private.join("index"))
    }

    /// Writes the worker's copy of the index of lane `wt`, being parked, as the lane's own
    /// (a few entries patched where they lie), when a run sealed the lane. Best effort: the
    /// copy is written again before any worker reads it.
    pub(crate) fn park_private_index(&self, wt: &Worktree) {
        let to = self.private_git_dir_of(&wt.name).join("index");
        if !std::fs::symlink_metadata(&to).is_ok_and(|meta| meta.is_file()) {
            return;
        }
        if let Err(err) = self.write_private_index(wt, &to) {
            tracing::debug!(lane = %wt.name, "could not write the worker's index at parking: {err}");
        }
    }

    /// Writes the index the worker's git reads, `to`, as the lane's index must be for HEAD:
    /// from the lane handle's index in memory, whose own file a commit or a move may have
    /// left behind HEAD (`index_behind.rs`). An index only libgit2 writes is settled into
    /// the lane's file and copied.
    fn write_private_index(&self, wt: &Worktree, to: &Path) -> Result<(), GitError> {
        if std::fs::symlink_metadata(to).is_ok_and(|meta| meta.is_dir()) {
            remove_entry(to)?;
        }
        let handle = self.handle(&wt.path)?;
        // A file another git wrote since is read again, and the noted entries put right.
        let mut index = match index_behind::apply(&handle, &wt.path)? {
            Some(index) => index,
            None => fresh_index(&handle, &wt.path)?,
        };
        if index_file::write_copy(&handle, &mut index, &wt.path, to)? {
            return Ok(());
        }
        drop(index);
        drop(handle);
        self.settle_lane_index(wt)?;
        copy_file(&self.lane_admin_dir(wt).join("index"), to).map(|_| ())
    }

    /// Points the `.git` file of lane `wt` at `git_dir`, replacing what is there (a link is
    /// replaced, not followed; a folder is an error for [`Repo::check_lane_links`]).
    pub(crate) fn point_gitfile(&self, wt: &Worktree, git_dir: &Path) -> Result<(), GitError> {
        replace_file(&wt.path.join(".git"), format!("gitdir: {}\n", git_dir.display()).as_bytes())
    }

    /// Removes lane `name`'s folder under `.breeze/lanes/` (its private git directory);
    /// one already gone is fine. [`Repo::remove_worktree`] does it with the lane; `breeze
    /// clean` also for a folder whose lane is gone.
    pub fn remove_private_git(&self, name: &str) -> Result<(), GitError> {
        remove_entry(&self.lane_home(name))
    }

    /// The lanes' folders under `.breeze/lanes/` (each holding a private git directory), by
    /// lane name, sorted: what [`Repo::remove_private_git`] removes.
    pub fn private_git_homes(&self) -> Vec<(String, PathBuf)> {
        let dir = self.workdir.join(STATE_DIR).join(LANES_DIR);
        let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
        let mut homes: Vec<(String, PathBuf)> = entries
            .flatten()
            .filter_map(|entry| Some((entry.file_name().into_string().ok()?, entry.path())))
            .collect();
        homes.sort();
        homes
    }
}
