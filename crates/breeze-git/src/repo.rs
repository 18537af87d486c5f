//! The user's repository as breeze holds it: opening it (refusing what libgit2 cannot
//! handle and choosing how checkouts are done), its settings (main branch, size limit,
//! worktree folder), its pool of libgit2 handles, and the small repository-wide helpers
//! (`info/exclude`, mid-operation check). It imports none of the files that add
//! operations to [`Repo`]: they build on it.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use git2::{ErrorCode, Oid, Repository};

use crate::bounds::{Bounds, DEFAULT_MAX_FILE_BYTES, StopFlag};
use crate::checkout_tool::{CheckoutTool, DEFAULT_CLI_CHECKOUT_MIN_FILES};
use crate::checkout_update::KeptIndexes;
use crate::error::{Context as _, GitError, WorktreeRootProblem};
use crate::handles::{Handle, HandlePool};
use crate::names::{
    CREATED_MARKER, STATE_DIR, WORKTREES_NOTE_DIR, validate_branch_name, validate_worktree_name,
};
use crate::paths::{normalize, same_path};
use crate::state::ensure_clean_state;
use crate::support::{check_supported, open_error};
use crate::untrusted::read_small;
use crate::worktree_root::{WorktreeRoot, resolve};

/// How to open a repository.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// The branch breeze lands on. Default: `main`, else `master`, else the branch HEAD names.
    pub main_branch: Option<String>,
    /// Tracked-file count from which fresh worktrees are checked out with the `git` CLI when
    /// it is available. Default [`DEFAULT_CLI_CHECKOUT_MIN_FILES`]; `Some(usize::MAX)` keeps
    /// every checkout in libgit2, `Some(0)` sends every full checkout to the CLI.
    pub cli_checkout_min_files: Option<usize>,
    /// Where breeze's worktrees of this repository are, outside the checkout. Default:
    /// where they were last made, else `$XDG_DATA_HOME/breeze/worktrees/<repo-key>`.
    pub worktree_root: WorktreeRoot,
    /// Leaves the choice of the checkout tool — where a filter command is configured, a
    /// walk of every tree of main for its `.gitattributes`, about 60 ms at 100,000 files —
    /// to [`Repo::choose_checkout_tool`] or the first operation that checks out: a run opens
    /// its repository so, to start reading ahead at once.
    pub checkout_tool_later: bool,
}

/// When this process first opened a repository: ref locks older than that were left by
/// another process (a task branch's, removed when breeze makes the branch again).
pub(crate) static FIRST_OPENED: OnceLock<std::time::SystemTime> = OnceLock::new();

/// The user's repository, seen from its primary checkout.
///
/// `Repo` holds paths and settings only; every operation borrows a `git2::Repository`
/// from its pool or opens a fresh one (cheap), so a `Repo` is `Send + Sync` and can be
/// used from `spawn_blocking` or several threads at once.
pub struct Repo {
    pub(crate) workdir: PathBuf,
    pub(crate) common_dir: PathBuf,
    pub(crate) main_branch: String,
    /// How checkouts are written, staged and read (libgit2 or the `git` CLI), once chosen
    /// ([`Repo::checkout_tool`]).
    checkout_tool: OnceLock<CheckoutTool>,
    /// See [`OpenOptions::cli_checkout_min_files`].
    cli_checkout_min_files: usize,
    /// The folder of breeze's worktrees, or why there is none (`worktree_root.rs`).
    pub(crate) worktree_root: Result<PathBuf, WorktreeRootProblem>,
    /// The largest worktree file breeze reads, and the stop signal of long steps.
    pub(crate) bounds: Bounds,
    exclude_lock: Mutex<()>,
    handles: HandlePool,
    /// The index each checkout of main had after the last landing, parsed.
    pub(crate) landed_indexes: KeptIndexes,
    /// Held by a landing's update of the checkouts of main and by the read of their
    /// indexes ahead of it (`preload.rs`): both use the checkouts' scratch folders.
    pub(crate) landing: Mutex<()>,
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo")
            .field("workdir", &self.workdir)
            .field("main_branch", &self.main_branch)
            .field("worktree_root", &self.worktree_root)
            .field(
                "external_filters",
                &self.checkout_tool.get().map(|tool| tool.external_filters()),
            )
            .finish_non_exhaustive()
    }
}

impl Repo {
    /// Opens the repository containing `path` with default options. See [`Repo::open_with`].
    pub fn open(path: &Path) -> Result<Repo, GitError> {
        Repo::open_with(path, &OpenOptions::default())
    }

    /// Opens the repository containing `path`.
    ///
    /// From inside a linked worktree this opens the primary checkout. Refuses, with what to
    /// do, bare repositories, SHA-256 and reftable repositories, other repository extensions
    /// libgit2 lacks (partial clones), sparse checkouts, and sparse or split indexes. In a
    /// repository whose `.gitattributes` name an external filter (git-lfs), checkouts and
    /// staging go through the `git` CLI so the filter runs; that needs `git` on PATH.
    pub fn open_with(path: &Path, options: &OpenOptions) -> Result<Repo, GitError> {
        FIRST_OPENED.get_or_init(std::time::SystemTime::now);
        if !path.exists() {
            return Err(GitError::io(
                "open",
                path,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or directory"),
            ));
        }
        configure_libgit2();
        let repo = open_primary(path)?;
        let workdir = repo
            .workdir()
            .ok_or_else(|| GitError::BareRepository { path: repo.path().to_path_buf() })?;
        let workdir = std::fs::canonicalize(workdir)
            .map_err(|e| GitError::io("resolve the path of", workdir, e))?;
        let common_dir = std::fs::canonicalize(repo.commondir())
            .map_err(|e| GitError::io("resolve the path of", repo.commondir(), e))?;

        check_supported(&repo, &workdir)?;

        let main_branch = match &options.main_branch {
            Some(name) => {
                validate_branch_name(name)?;
                name.clone()
            }
            None => default_main_branch(&repo),
        };
        let worktree_root =
            resolve(&options.worktree_root, &workdir, &common_dir, |name| std::env::var_os(name));
        let opened = Repo {
            workdir,
            common_dir,
            main_branch,
            checkout_tool: OnceLock::new(),
            cli_checkout_min_files: options
                .cli_checkout_min_files
                .unwrap_or(DEFAULT_CLI_CHECKOUT_MIN_FILES),
            worktree_root,
            bounds: Bounds { max_file_bytes: DEFAULT_MAX_FILE_BYTES, stop: StopFlag::default() },
            exclude_lock: Mutex::new(()),
            handles: HandlePool::default(),
            landed_indexes: KeptIndexes::default(),
            landing: Mutex::new(()),
        };
        if !options.checkout_tool_later {
            opened.choose_with(&repo)?;
        }
        Ok(opened)
    }

    /// How checkouts are written, staged and read: chosen when the repository was opened,
    /// else now (see [`OpenOptions::checkout_tool_later`]).
    pub(crate) fn checkout_tool(&self) -> Result<&CheckoutTool, GitError> {
        match self.checkout_tool.get() {
            Some(tool) => Ok(tool),
            None => self.choose_with(&*self.objects()?),
        }
    }

    /// Chooses how checkouts are done, when opening left it for later
    /// ([`OpenOptions::checkout_tool_later`]): refuses, as opening would have, a repository
    /// whose external filters need a `git` command that cannot run.
    pub fn choose_checkout_tool(&self) -> Result<(), GitError> {
        self.checkout_tool().map(drop)
    }

    /// [`CheckoutTool::choose`] with `repo`, for main's tip now; two threads choosing at
    /// once choose alike (the second walk is the memo's), and the first choice is kept.
    fn choose_with(&self, repo: &Repository) -> Result<&CheckoutTool, GitError> {
        let main_tip = repo.refname_to_id(&format!("refs/heads/{}", self.main_branch)).ok();
        let tool = CheckoutTool::choose(
            repo,
            &self.workdir,
            &self.common_dir,
            main_tip,
            self.cli_checkout_min_files,
        )?;
        Ok(self.checkout_tool.get_or_init(|| tool))
    }

    /// This repository with `bytes` as the largest worktree file breeze stages or reads
    /// ([`DEFAULT_MAX_FILE_BYTES`] unless set): committing a worktree refuses larger files
    /// from their `lstat` size, before anything is hashed, and diffs show larger blobs as
    /// binary without loading them. The `file-size` gate's limit, so that no step reads
    /// more than the gate would let land.
    pub fn with_max_file_bytes(mut self, bytes: u64) -> Repo {
        self.bounds.max_file_bytes = bytes;
        self
    }

    /// Ends this repository's long steps early from now on, for good: `git` children of
    /// checkouts, staging and status are ended (their process group, SIGTERM then
    /// SIGKILL), walks and staging loops over a worktree's files stop between files, and
    /// each fails with [`GitError::Cancelled`]. Steps that must finish once begun — moving
    /// a lane, updating the user's checkout — are not cut short. Called when breeze stops.
    pub fn stop_long_steps(&self) {
        self.bounds.stop.raise();
    }

    /// The primary checkout's root directory.
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// The shared git directory (`.git` of the primary checkout).
    pub fn common_dir(&self) -> &Path {
        &self.common_dir
    }

    /// The branch breeze lands on (`main`, or `master` when there is no `main`).
    pub fn main_branch(&self) -> &str {
        &self.main_branch
    }

    /// Where the person's checkout is: the branch its HEAD names (it may have no commit
    /// yet), or the commit it is detached at — what a run reads its plan from.
    pub fn checked_out(&self) -> Result<CheckedOut, GitError> {
        let repo = self.git()?;
        let head = repo.find_reference("HEAD").ctx(|| "could not read HEAD".to_string())?;
        if let Some(target) = head.symbolic_target().ok().flatten() {
            let branch = target.strip_prefix("refs/heads/").unwrap_or(target);
            return Ok(CheckedOut::Branch(branch.to_string()));
        }
        Ok(CheckedOut::Detached(head.target()))
    }

    /// The folder breeze's worktrees of this repository live in (outside the checkout, see
    /// [`WorktreeRoot`]), or [`GitError::NoWorktreeRoot`] saying why there is none.
    pub fn worktree_root(&self) -> Result<PathBuf, GitError> {
        self.worktree_root.clone().map_err(|problem| GitError::NoWorktreeRoot { problem })
    }

    /// This repository with its worktrees in the folder `choice` names (see
    /// [`WorktreeRoot`]); [`Repo::worktree_root`] says when there is none.
    pub fn with_worktree_root(mut self, choice: &WorktreeRoot) -> Repo {
        self.worktree_root =
            resolve(choice, &self.workdir, &self.common_dir, |name| std::env::var_os(name));
        self
    }

    /// `<checkout>/.harness-worktrees`: where an earlier breeze kept its worktrees, and
    /// where the note naming the worktree folder is now.
    pub fn worktrees_note_dir(&self) -> PathBuf {
        self.workdir.join(WORKTREES_NOTE_DIR)
    }

    /// `refs/heads/<main>`.
    pub fn main_ref(&self) -> String {
        format!("refs/heads/{}", self.main_branch)
    }

    /// The admin directory of linked worktree `name` (`.git/worktrees/<name>`).
    pub(crate) fn admin_dir(&self, name: &str) -> PathBuf {
        self.common_dir.join("worktrees").join(name)
    }

    /// Whether breeze finished creating linked worktree `name` (its marker is there).
    pub(crate) fn has_marker(&self, name: &str) -> bool {
        self.admin_dir(name).join(CREATED_MARKER).is_file()
    }

    /// When set, the reason checkouts and staging go through the `git` CLI (external
    /// filters such as git-lfs were found); the engine should show it once.
    pub fn external_filters(&self) -> Option<&str> {
        self.checkout_tool().ok()?.external_filters()
    }

    /// The current tip of the main branch.
    pub fn main_tip(&self) -> Result<Oid, GitError> {
        let repo = self.git()?;
        match repo.refname_to_id(&self.main_ref()) {
            Ok(oid) => Ok(oid),
            Err(e) if e.code() == ErrorCode::NotFound => Err(self.main_not_found(&repo)),
            Err(e) => Err(e).ctx(|| format!("could not read {}", self.main_ref())),
        }
    }

    /// Why main cannot be read: the repository has no commits at all, or it has some and
    /// main is gone.
    pub(crate) fn main_not_found(&self, repo: &Repository) -> GitError {
        let has_commits = repo
            .references()
            .map(|mut refs| refs.any(|r| r.is_ok_and(|r| r.peel_to_commit().is_ok())))
            .unwrap_or(false);
        if has_commits {
            GitError::MainMissing { branch: self.main_branch.clone() }
        } else {
            GitError::NoCommits { branch: self.main_branch.clone() }
        }
    }

    /// Adds `/.breeze/` and `/.harness-worktrees/` (the note naming the worktree folder, and
    /// what an earlier breeze kept there) to `$GIT_COMMON_DIR/info/exclude` so they never
    /// show in `git status`; never edits a tracked file. Idempotent.
    pub fn ensure_excluded(&self) -> Result<(), GitError> {
        let _guard = self.exclude_lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let info = self.common_dir.join("info");
        let exclude = info.join("exclude");
        let existing = match std::fs::read_to_string(&exclude) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(GitError::io("read", &exclude, e)),
        };
        let wanted = [format!("/{STATE_DIR}/"), format!("/{WORKTREES_NOTE_DIR}/")];
        let missing: Vec<&String> =
            wanted.iter().filter(|line| !existing.lines().any(|l| l.trim() == *line)).collect();
        if missing.is_empty() {
            return Ok(());
        }
        std::fs::create_dir_all(&info).map_err(|e| GitError::io("create directory", &info, e))?;
        let mut addition = String::new();
        if !existing.is_empty() && !existing.ends_with('\n') {
            addition.push('\n');
        }
        addition.push_str(
            "# added by breeze: its run state, and the note naming its worktree folder\n",
        );
        for line in missing {
            addition.push_str(line);
            addition.push('\n');
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&exclude)
            .map_err(|e| GitError::io("open", &exclude, e))?;
        file.write_all(addition.as_bytes()).map_err(|e| GitError::io("write", &exclude, e))
    }

    /// Refuses when the primary checkout is in the middle of a merge, rebase, cherry-pick,
    /// revert, bisect or `git am`.
    pub fn ensure_not_mid_operation(&self) -> Result<(), GitError> {
        ensure_clean_state(&*self.git()?, &self.workdir)
    }

    /// A libgit2 handle on the primary checkout.
    pub(crate) fn git(&self) -> Result<Handle<'_>, GitError> {
        self.handle(&self.workdir)
    }

    /// A libgit2 handle for work on objects alone — diffs, gates and merges of commits —
    /// never for anything of the index: on the primary checkout, with an empty index in
    /// memory in place of the checkout's. libgit2 reads the repository's index for the
    /// attributes a diff's drivers ask for, again whenever the file changed on disk, which
    /// is every landing (about 11 ms at 20,000 files); git takes the attributes of a diff
    /// of two commits from the working tree's `.gitattributes` files, without the index,
    /// and so does this handle.
    pub(crate) fn objects(&self) -> Result<Handle<'_>, GitError> {
        let key = self.common_dir.join("breeze-objects-handle");
        self.handles.take_with(
            &key,
            |_| true,
            || {
                let context =
                    || format!("could not open the repository at {}", self.workdir.display());
                let repo = Repository::open(&self.workdir).ctx(context)?;
                let mut index = git2::Index::new().ctx(context)?;
                repo.set_index(&mut index).ctx(context)?;
                Ok(repo)
            },
        )
    }

    /// A libgit2 handle on the checkout (primary or linked worktree) at `path`: a pooled one
    /// if idle, else a fresh one. A worktree of breeze's (`<worktree folder>/<name>`) is
    /// opened on its admin folder `.git/worktrees/<name>`, never through its `.git` file:
    /// that file is in the reach of the lane's worker, and names the worker's private git
    /// directory while it runs (see `private_git.rs`).
    pub(crate) fn handle(&self, path: &Path) -> Result<Handle<'_>, GitError> {
        let Some(admin) = self.lane_admin_of(path) else { return self.handles.take(path) };
        self.handles.take_with(
            path,
            |repo| same_path(repo.path(), &admin) && admin.is_dir(),
            || self.open_lane(&admin, path),
        )
    }

    /// [`Repo::handle`] on one of breeze's checkouts, to read ahead (`preload.rs`): a step
    /// that asks for the checkout's handle meanwhile waits for this one to come back.
    pub(crate) fn handle_ahead(&self, path: &Path, admin: &Path) -> Result<Handle<'_>, GitError> {
        self.handles.take_ahead(
            path,
            |repo| same_path(repo.path(), admin) && admin.is_dir(),
            || self.open_lane(admin, path),
        )
    }

    /// The admin folder of `path` when it is one of breeze's worktrees: under the worktree
    /// folder or `.harness-worktrees/` (where an earlier breeze made them), the one whose
    /// `gitdir` names `<path>/.git` — `.git/worktrees/<name>` for every worktree breeze
    /// creates, another for one re-created by hand while that name was taken — else
    /// `.git/worktrees/<name>` (which then fails to open as that worktree); elsewhere (a
    /// worktree folder configured before), `.git/worktrees/<name>` when it names `path` and
    /// holds breeze's marker.
    pub(crate) fn lane_admin_of(&self, path: &Path) -> Option<PathBuf> {
        let path = normalize(path);
        let name = path.file_name()?.to_str()?;
        let parent = path.parent()?;
        if validate_worktree_name(name).is_err() {
            return None;
        }
        let in_root = self.worktree_root.as_deref().is_ok_and(|root| parent == root);
        let ours = in_root || parent == self.worktrees_note_dir();
        let dotgit = path.join(".git");
        let names_path = |admin: &Path| {
            read_small(&admin.join("gitdir"))
                .ok()
                .flatten()
                .is_some_and(|gitdir| same_path(Path::new(gitdir.trim()), &dotgit))
        };
        let admin = self.admin_dir(name);
        if names_path(&admin) {
            return (ours || self.has_marker(name)).then_some(admin);
        }
        if !ours {
            return None;
        }
        let found = std::fs::read_dir(self.common_dir.join("worktrees"))
            .ok()?
            .flatten()
            .map(|entry| entry.path())
            .find(|other| names_path(other));
        Some(found.unwrap_or(admin))
    }

    /// The git directory a person's tools should use for breeze's worktree at `path` (a
    /// lane): its admin folder, whose configuration is the repository's — never what the
    /// worktree's `.git` file names, which is the worker's private git directory while the
    /// worker runs (a worker writes that one's `config`: an `fsmonitor` there would run as
    /// whoever runs `git status`). `None` when `path` is not breeze's.
    pub fn git_dir_for_person(&self, path: &Path) -> Option<PathBuf> {
        self.lane_admin_of(path).filter(|admin| admin.is_dir())
    }

    /// Opens the worktree at `path` on its admin folder `admin`. libgit2 takes the working
    /// tree from the folder's `gitdir` file and the repository from its `commondir`: both
    /// are checked against what breeze expects, so a rewritten one (possible only without
    /// kernel confinement) cannot point breeze's writes at another tree.
    fn open_lane(&self, admin: &Path, path: &Path) -> Result<Repository, GitError> {
        let repo = Repository::open(admin).ctx(|| {
            format!(
                "could not open worktree {} on its admin folder {}",
                path.display(),
                admin.display()
            )
        })?;
        // Interpreter caches are never a task's change (see `LANE_IGNORES`).
        repo.add_ignore_rule(crate::names::LANE_IGNORES)
            .ctx(|| format!("could not set the ignore rules of {}", path.display()))?;
        let workdir_ok = repo.workdir().is_some_and(|workdir| same_path(workdir, path));
        if !workdir_ok || !same_path(repo.commondir(), &self.common_dir) {
            return Err(GitError::NotManaged {
                path: path.to_path_buf(),
                problem: format!(
                    "its admin folder {} names another working tree ({}) or repository ({}); \
                     breeze repairs it after the lane's next worker — or remove the lane \
                     with `breeze clean --force`",
                    admin.display(),
                    repo.workdir().map(|w| w.display().to_string()).unwrap_or_default(),
                    repo.commondir().display()
                ),
            });
        }
        // A commit left the index file behind HEAD: its entries are put right in memory.
        crate::index_behind::apply(&repo, path)?;
        Ok(repo)
    }

    /// Drops the pooled handle of a checkout that is removed or replaced.
    pub(crate) fn forget(&self, path: &Path) {
        self.handles.forget(path);
    }
}

/// The primary repository of the checkout containing `path`: from inside a linked
/// worktree, the repository whose git directory is the worktree's common dir. Bare
/// repositories are refused.
fn open_primary(path: &Path) -> Result<Repository, GitError> {
    let found = Repository::discover(path).map_err(|e| open_error(path, e))?;
    if found.is_bare() {
        return Err(GitError::BareRepository { path: found.path().to_path_buf() });
    }
    if !found.is_worktree() {
        return Ok(found);
    }
    // A linked worktree's common dir is the primary repository's git dir.
    let common = found.commondir().to_path_buf();
    let primary = Repository::open(&common).map_err(|e| open_error(&common, e))?;
    if primary.is_bare() {
        return Err(GitError::BareRepository { path: common });
    }
    Ok(primary)
}

/// Process-wide libgit2 settings, applied once: libgit2 re-hashes every object it reads
/// from the object database by default, which git itself never does on ordinary reads
/// (only `git fsck` verifies); it made status and tree walks on large repositories about
/// 15% slower. Turned off to match git.
fn configure_libgit2() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| git2::opts::strict_hash_verification(false));
}

/// Where a checkout's HEAD is ([`Repo::checked_out`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckedOut {
    /// On this branch (`main`, `feature/x`).
    Branch(String),
    /// Detached, at this commit.
    Detached(Option<Oid>),
}

/// `main` if it exists, else `master`, else the (possibly unborn) branch HEAD names.
fn default_main_branch(repo: &Repository) -> String {
    for name in ["main", "master"] {
        if repo.find_reference(&format!("refs/heads/{name}")).is_ok() {
            return name.to_string();
        }
    }
    repo.find_reference("HEAD")
        .ok()
        .and_then(|head| head.symbolic_target().ok().flatten().map(str::to_string))
        .and_then(|target| target.strip_prefix("refs/heads/").map(str::to_string))
        .unwrap_or_else(|| "main".to_string())
}
