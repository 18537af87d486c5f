//! What every operation reads and writes of objects alike: the tree of a commit, and the
//! identity breeze commits as (the repository's, else `breeze <breeze@localhost>`).

use git2::{Oid, Repository, Signature, Tree};

use crate::error::{Context as _, GitError};

/// Committer (and author of engine-made commits) when the repository has no identity.
pub const FALLBACK_NAME: &str = "breeze";
/// E-mail of the fallback identity.
pub const FALLBACK_EMAIL: &str = "breeze@localhost";

/// The tree of commit `oid`.
pub(crate) fn commit_tree<'r>(repo: &'r Repository, oid: Oid) -> Result<Tree<'r>, GitError> {
    repo.find_commit(oid)
        .map_err(|_| GitError::MissingObject { what: "commit", oid })?
        .tree()
        .ctx(|| format!("could not read the tree of {oid}"))
}

/// The repository's `user.name`/`user.email`, or `breeze <breeze@localhost>`.
pub(crate) fn identity(repo: &Repository) -> Result<Signature<'static>, GitError> {
    match repo.signature() {
        Ok(sig) => Ok(sig),
        Err(_) => Signature::now(FALLBACK_NAME, FALLBACK_EMAIL)
            .ctx(|| "could not build the fallback committer identity".to_string()),
    }
}
