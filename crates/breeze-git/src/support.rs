//! What libgit2 cannot handle, found when a repository is opened and refused with what to
//! do: SHA-256 and reftable repositories, repository extensions it lacks (partial clones),
//! sparse checkouts, and sparse or split indexes.

use std::path::Path;

use git2::{ErrorCode, Repository};

use crate::error::{Context as _, GitError};

/// Maps libgit2's open failures to messages that say what to do.
pub(crate) fn open_error(path: &Path, e: git2::Error) -> GitError {
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
pub(crate) fn check_supported(repo: &Repository, workdir: &Path) -> Result<(), GitError> {
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
