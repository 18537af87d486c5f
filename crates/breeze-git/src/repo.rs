//! Opening the user's repository, refusing what libgit2 cannot handle, and the small
//! repository-wide helpers (main branch, `info/exclude`, mid-operation check).

use std::collections::HashMap;
use std::io::Write as _;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use git2::{ErrorCode, Oid, Repository, RepositoryState};

use crate::cli;
use crate::error::{Context as _, GitError};

/// Directory (under the primary checkout) that holds every worktree breeze creates.
pub const WORKTREE_ROOT: &str = ".harness-worktrees";

/// Directory (under the primary checkout) that holds breeze's run state.
pub const STATE_DIR: &str = ".breeze";

/// Below this many tracked files a fresh worktree is checked out by libgit2; from here on by
/// `git worktree add`, which checks out about twice as fast (measured: 20k files 0.27 s vs
/// 0.55–0.88 s on tmpfs; see the crate README).
pub const DEFAULT_CLI_CHECKOUT_MIN_FILES: usize = 1000;

/// How to open a repository.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// The branch breeze lands on. Default: `main`, else `master`, else the branch HEAD names.
    pub main_branch: Option<String>,
    /// Tracked-file count from which fresh worktrees are checked out with the `git` CLI when
    /// it is available. Default [`DEFAULT_CLI_CHECKOUT_MIN_FILES`]; `Some(usize::MAX)` keeps
    /// every checkout in libgit2, `Some(0)` sends every full checkout to the CLI.
    pub cli_checkout_min_files: Option<usize>,
}

/// The user's repository, seen from its primary checkout.
///
/// `Repo` holds paths and settings only; every operation opens a fresh `git2::Repository`
/// (cheap), so a `Repo` is `Send + Sync` and can be used from `spawn_blocking` or several
/// threads at once.
pub struct Repo {
    pub(crate) workdir: PathBuf,
    pub(crate) common_dir: PathBuf,
    pub(crate) main_branch: String,
    pub(crate) external_filters: Option<String>,
    pub(crate) cli_checkout_min_files: usize,
    git_cli: OnceLock<Result<String, String>>,
    exclude_lock: Mutex<()>,
    /// Serializes libgit2 worktree adds: `git_branch_is_checked_out` (libgit2 1.9) reports
    /// any branch as checked out while another worktree is half-created (an operator
    /// precedence slip in `git_repository_foreach_worktree` turns the failed lookup into a
    /// "found"). The git CLI path does not need it.
    pub(crate) worktree_add_lock: Mutex<()>,
    handles: Mutex<HashMap<PathBuf, Repository>>,
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo")
            .field("workdir", &self.workdir)
            .field("main_branch", &self.main_branch)
            .field("external_filters", &self.external_filters)
            .finish_non_exhaustive()
    }
}

/// At most this many idle libgit2 handles are kept (primary checkout, lanes, integration).
const MAX_IDLE_HANDLES: usize = 16;

/// A libgit2 handle on one checkout, lent out of the [`Repo`]'s pool for one operation.
///
/// Reusing handles matters on large repositories: opening a fresh one re-reads and
/// re-hashes the whole index (about 80 ms for 100k files), while a kept handle re-reads it
/// only when it changed on disk (libgit2 checks its stamp). An operation that changes the
/// in-memory index calls [`Handle::set_keep`]`(false)` first and `(true)` once the index is
/// written, so a failure half-way never leaves a half-staged index in the pool.
pub(crate) struct Handle<'r> {
    repo: Option<Repository>,
    key: PathBuf,
    pool: &'r Mutex<HashMap<PathBuf, Repository>>,
    keep: bool,
}

impl Handle<'_> {
    /// Whether the handle goes back to the pool when dropped.
    pub(crate) fn set_keep(&mut self, keep: bool) {
        self.keep = keep;
    }
}

impl Deref for Handle<'_> {
    type Target = Repository;
    fn deref(&self) -> &Repository {
        // Invariant: `repo` is `Some` from construction until `drop`.
        self.repo.as_ref().expect("handle used after drop")
    }
}

impl Drop for Handle<'_> {
    fn drop(&mut self) {
        if !self.keep || std::thread::panicking() {
            return;
        }
        if let Some(repo) = self.repo.take() {
            let mut pool = self.pool.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if pool.len() < MAX_IDLE_HANDLES || pool.contains_key(&self.key) {
                pool.insert(std::mem::take(&mut self.key), repo);
            }
        }
    }
}

/// Whether `path`'s `.git` (directory, or gitfile of a linked worktree) still leads to the
/// git directory this handle was opened on; a worktree removed and re-created under the
/// same path may have a new admin directory.
fn still_points_at(repo: &Repository, path: &Path) -> bool {
    let dotgit = path.join(".git");
    let target = match std::fs::symlink_metadata(&dotgit) {
        Ok(meta) if meta.is_dir() => dotgit,
        Ok(meta) if meta.is_file() => {
            let Ok(text) = std::fs::read_to_string(&dotgit) else { return false };
            match text.trim().strip_prefix("gitdir:") {
                Some(gitdir) => path.join(gitdir.trim()),
                None => return false,
            }
        }
        _ => return false,
    };
    match (std::fs::canonicalize(target), std::fs::canonicalize(repo.path())) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The repository's index, re-read from disk if another process changed it since this
/// handle last read or wrote it (`Repository::index` alone returns the cached one).
pub(crate) fn fresh_index(repo: &Repository, at: &Path) -> Result<git2::Index, GitError> {
    let mut index = repo.index().ctx(|| format!("could not read the index of {}", at.display()))?;
    index.read(false).ctx(|| format!("could not read the index of {}", at.display()))?;
    Ok(index)
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
        if !path.exists() {
            return Err(GitError::io(
                "open",
                path,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or directory"),
            ));
        }
        configure_libgit2();
        let found = Repository::discover(path).map_err(|e| open_error(path, e))?;
        if found.is_bare() {
            return Err(GitError::BareRepository { path: found.path().to_path_buf() });
        }
        // A linked worktree's common dir is the primary repository's git dir.
        let repo = if found.is_worktree() {
            let common = found.commondir().to_path_buf();
            let primary = Repository::open(&common).map_err(|e| open_error(&common, e))?;
            if primary.is_bare() {
                return Err(GitError::BareRepository { path: common });
            }
            primary
        } else {
            found
        };
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
                crate::worktree::validate_branch_name(name)?;
                name.clone()
            }
            None => default_main_branch(&repo),
        };
        let main_tip = repo.refname_to_id(&format!("refs/heads/{main_branch}")).ok();
        let external_filters = detect_external_filters(&repo, &common_dir, main_tip);
        let repo_handle = Repo {
            workdir,
            common_dir,
            main_branch,
            external_filters,
            cli_checkout_min_files: options
                .cli_checkout_min_files
                .unwrap_or(DEFAULT_CLI_CHECKOUT_MIN_FILES),
            git_cli: OnceLock::new(),
            exclude_lock: Mutex::new(()),
            worktree_add_lock: Mutex::new(()),
            handles: Mutex::new(HashMap::new()),
        };
        if let Some(filters) = &repo_handle.external_filters {
            if let Err(detail) = repo_handle.git_cli() {
                return Err(GitError::Unsupported {
                    path: repo_handle.workdir.clone(),
                    feature: format!("{filters} without a working `git` command ({detail})"),
                    todo: "libgit2 cannot run external filters, so breeze checks such \
                           repositories out with the git CLI: install git (and git-lfs) and \
                           make sure `git` is on PATH"
                        .to_string(),
                });
            }
            tracing::warn!(
                repo = %repo_handle.workdir.display(),
                "{filters}: worktrees are checked out and staged with the git CLI so the filter runs"
            );
        }
        Ok(repo_handle)
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

    /// `refs/heads/<main>`.
    pub fn main_ref(&self) -> String {
        format!("refs/heads/{}", self.main_branch)
    }

    /// Where breeze's worktrees live: `<workdir>/.harness-worktrees`.
    pub fn worktree_root(&self) -> PathBuf {
        self.workdir.join(WORKTREE_ROOT)
    }

    /// When set, the reason checkouts and staging go through the `git` CLI (external
    /// filters such as git-lfs were found); the engine should show it once.
    pub fn external_filters(&self) -> Option<&str> {
        self.external_filters.as_deref()
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

    /// Adds `/.breeze/` and `/.harness-worktrees/` to `$GIT_COMMON_DIR/info/exclude` so they
    /// never show in `git status`; never edits a tracked file. Idempotent.
    pub fn ensure_excluded(&self) -> Result<(), GitError> {
        let _guard = self.exclude_lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let info = self.common_dir.join("info");
        let exclude = info.join("exclude");
        let existing = match std::fs::read_to_string(&exclude) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(GitError::io("read", &exclude, e)),
        };
        let wanted = [format!("/{STATE_DIR}/"), format!("/{WORKTREE_ROOT}/")];
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
        addition.push_str("# added by breeze: run state and task worktrees\n");
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

    /// A libgit2 handle on the checkout (primary or linked worktree) at `path`: a pooled one
    /// if idle, else a fresh one.
    pub(crate) fn handle(&self, path: &Path) -> Result<Handle<'_>, GitError> {
        let pooled = self
            .handles
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(path)
            .filter(|repo| still_points_at(repo, path));
        let repo = match pooled {
            Some(repo) => repo,
            None => Repository::open(path)
                .ctx(|| format!("could not open the repository at {}", path.display()))?,
        };
        Ok(Handle { repo: Some(repo), key: path.to_path_buf(), pool: &self.handles, keep: true })
    }

    /// Drops the pooled handle of a checkout that is removed or replaced.
    pub(crate) fn forget(&self, path: &Path) {
        self.handles.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(path);
    }

    /// `Ok(version)` when a `git` executable runs, else why not. Probed once.
    pub(crate) fn git_cli(&self) -> Result<&str, &str> {
        match self.git_cli.get_or_init(cli::probe) {
            Ok(version) => Ok(version),
            Err(detail) => Err(detail),
        }
    }
}

/// Process-wide libgit2 settings, applied once: libgit2 re-hashes every object it reads
/// from the object database by default, which git itself never does on ordinary reads
/// (only `git fsck` verifies); it made status and tree walks on large repositories about
/// 15% slower. Turned off to match git.
fn configure_libgit2() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| git2::opts::strict_hash_verification(false));
}

/// Refuses a checkout that is mid-merge/rebase/...; `path` names it in the message.
pub(crate) fn ensure_clean_state(repo: &Repository, path: &Path) -> Result<(), GitError> {
    let (operation, abort) = match repo.state() {
        RepositoryState::Clean => return Ok(()),
        RepositoryState::Merge => ("merge", "git merge --abort"),
        RepositoryState::Revert | RepositoryState::RevertSequence => {
            ("revert", "git revert --abort")
        }
        RepositoryState::CherryPick | RepositoryState::CherryPickSequence => {
            ("cherry-pick", "git cherry-pick --abort")
        }
        RepositoryState::Bisect => ("bisect", "git bisect reset"),
        RepositoryState::Rebase
        | RepositoryState::RebaseInteractive
        | RepositoryState::RebaseMerge => ("rebase", "git rebase --abort"),
        RepositoryState::ApplyMailbox | RepositoryState::ApplyMailboxOrRebase => {
            ("`git am` session", "git am --abort")
        }
    };
    Err(GitError::MidOperation { path: path.to_path_buf(), operation, abort })
}

/// Maps libgit2's open failures to messages that say what to do.
fn open_error(path: &Path, e: git2::Error) -> GitError {
    let message = e.message();
    if message.contains("unknown object format") {
        return GitError::Unsupported {
            path: path.to_path_buf(),
            feature: "a SHA-256 repository (extensions.objectformat = sha256)".to_string(),
            todo: "libgit2 reads only SHA-1 repositories, so breeze cannot work in this one; \
                   run breeze in a SHA-1 repository"
                .to_string(),
        };
    }
    if message.contains("extensions.refstorage") {
        return GitError::Unsupported {
            path: path.to_path_buf(),
            feature: "a reftable repository (extensions.refstorage = reftable)".to_string(),
            todo: "libgit2 reads only loose/packed refs: convert them with \
                   `git refs migrate --ref-format=files` and run again"
                .to_string(),
        };
    }
    if let Some(rest) = message.split("unsupported extension name ").nth(1) {
        let extension = rest.trim();
        let todo = if extension.eq_ignore_ascii_case("extensions.partialclone") {
            "libgit2 cannot fetch the objects a partial clone leaves out: make a full clone \
             (or run `git fetch --refetch`) and run breeze there"
                .to_string()
        } else {
            format!("libgit2 does not know `{extension}`; run breeze in a repository without it")
        };
        return GitError::Unsupported {
            path: path.to_path_buf(),
            feature: format!("the repository extension `{extension}`"),
            todo,
        };
    }
    if e.code() == ErrorCode::NotFound {
        return GitError::NotARepository { path: path.to_path_buf() };
    }
    GitError::Git {
        context: format!("could not open the repository at {}", path.display()),
        cause: e,
    }
}

fn config_bool(config: &git2::Config, key: &str) -> bool {
    config.get_bool(key).unwrap_or(false)
}

/// Refuses sparse checkouts and sparse/split indexes, which libgit2 cannot honour or read.
fn check_supported(repo: &Repository, workdir: &Path) -> Result<(), GitError> {
    let config =
        repo.config().ctx(|| format!("could not read the git config of {}", workdir.display()))?;
    let unsupported = |feature: &str, todo: &str| GitError::Unsupported {
        path: workdir.to_path_buf(),
        feature: feature.to_string(),
        todo: todo.to_string(),
    };
    if config_bool(&config, "core.sparseCheckout") {
        return Err(unsupported(
            "a sparse checkout (core.sparseCheckout = true)",
            "libgit2 has no sparse checkout, so task worktrees would hold every file and \
             landings could disturb your checkout; disable it with `git sparse-checkout disable` \
             or run breeze in a full clone",
        ));
    }
    if config_bool(&config, "index.sparse") {
        return Err(unsupported(
            "a sparse index (index.sparse = true)",
            "libgit2 cannot read sparse indexes; run `git sparse-checkout disable` and \
             `git config index.sparse false`, or run breeze in a full clone",
        ));
    }
    if config_bool(&config, "core.splitIndex") {
        return Err(unsupported(
            "a split index (core.splitIndex = true)",
            "libgit2 cannot read split indexes; run `git config core.splitIndex false && \
             git update-index --no-split-index` and run again",
        ));
    }
    match repo.index() {
        Ok(_) => Ok(()),
        Err(e) if e.message().contains("unsupported mandatory extension") => Err(unsupported(
            "an index with an extension libgit2 cannot read (a sparse or split index)",
            "run `git update-index --no-split-index` (split index) or \
             `git sparse-checkout disable` (sparse index) and run again",
        )),
        Err(e) => Err(e).ctx(|| format!("could not read the index of {}", workdir.display())),
    }
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

/// Finds `filter=<driver>` attributes whose driver has a configured smudge, clean or process
/// command (git-lfs is the common case). libgit2 never runs those, so such repositories need
/// the git CLI for checkouts. Looks at `info/attributes`, `core.attributesFile` and every
/// `.gitattributes` in the main tip.
fn detect_external_filters(
    repo: &Repository,
    common_dir: &Path,
    tip: Option<Oid>,
) -> Option<String> {
    let mut texts: Vec<String> = Vec::new();
    if let Ok(text) = std::fs::read_to_string(common_dir.join("info").join("attributes")) {
        texts.push(text);
    }
    let config = repo.config().ok()?;
    if let Ok(path) = config.get_path("core.attributesFile")
        && let Ok(text) = std::fs::read_to_string(path)
    {
        texts.push(text);
    }
    if let Some(tree) = tip.and_then(|oid| repo.find_commit(oid).ok()).and_then(|c| c.tree().ok()) {
        let mut blobs = Vec::new();
        let _ = tree.walk(git2::TreeWalkMode::PreOrder, |_, entry| {
            if entry.name_bytes() == b".gitattributes"
                && entry.kind() == Some(git2::ObjectType::Blob)
            {
                blobs.push(entry.id());
            }
            git2::TreeWalkResult::Ok
        });
        for oid in blobs {
            if let Ok(blob) = repo.find_blob(oid) {
                texts.push(String::from_utf8_lossy(blob.content()).into_owned());
            }
        }
    }
    let mut drivers: Vec<String> = Vec::new();
    for text in &texts {
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('#') {
                continue;
            }
            for token in line.split_whitespace().skip(1) {
                if let Some(driver) = token.strip_prefix("filter=")
                    && !drivers.iter().any(|d| d == driver)
                {
                    drivers.push(driver.to_string());
                }
            }
        }
    }
    let configured: Vec<String> = drivers
        .into_iter()
        .filter(|driver| {
            ["smudge", "clean", "process"]
                .iter()
                .any(|key| config.get_string(&format!("filter.{driver}.{key}")).is_ok())
        })
        .collect();
    if configured.is_empty() {
        return None;
    }
    let names = configured.iter().map(|d| format!("`{d}`")).collect::<Vec<_>>().join(", ");
    Some(format!("external filter {names} in .gitattributes"))
}
