//! A new repository with a first commit — what `breeze demo` starts from.

use std::path::Path;

use git2::{Repository, RepositoryInitOptions, Signature};

use crate::error::{Context, GitError};

/// Creates a repository in `dir` on branch `branch` with one commit of the files already
/// written there (`paths`, relative), made by `author` (name, email) with `message`.
pub fn init_with_commit(
    dir: &Path,
    branch: &str,
    paths: &[&str],
    author: (&str, &str),
    message: &str,
) -> Result<(), GitError> {
    let at = |what: &str| format!("{what} in {}", dir.display());
    let mut options = RepositoryInitOptions::new();
    options.initial_head(branch);
    let repo = Repository::init_opts(dir, &options).ctx(|| at("creating a repository"))?;
    commit_paths(&repo, dir, paths, author, message, &[])
}

/// Commits the files `paths` (relative, already written) on the checked-out branch of the
/// repository in `dir`, on top of its tip, as `author` — for a repository breeze just made
/// (`breeze demo`), not for a user's checkout.
pub fn commit_on_head(
    dir: &Path,
    paths: &[&str],
    author: (&str, &str),
    message: &str,
) -> Result<(), GitError> {
    let at = |what: &str| format!("{what} in {}", dir.display());
    let repo = Repository::open(dir).ctx(|| at("opening the repository"))?;
    let parent = repo.head().and_then(|head| head.peel_to_commit()).ctx(|| at("reading HEAD"))?;
    commit_paths(&repo, dir, paths, author, message, &[&parent])
}

/// Stages `paths` and commits the index on HEAD with `parents`.
fn commit_paths(
    repo: &Repository,
    dir: &Path,
    paths: &[&str],
    author: (&str, &str),
    message: &str,
    parents: &[&git2::Commit<'_>],
) -> Result<(), GitError> {
    let at = |what: &str| format!("{what} in {}", dir.display());
    let mut index = repo.index().ctx(|| at("reading the index"))?;
    for path in paths {
        index.add_path(Path::new(path)).ctx(|| at(&format!("staging {path}")))?;
    }
    index.write().ctx(|| at("writing the index"))?;
    let tree_id = index.write_tree().ctx(|| at("writing the tree"))?;
    let tree = repo.find_tree(tree_id).ctx(|| at("reading the tree"))?;
    let signature = Signature::now(author.0, author.1).ctx(|| at("making the signature"))?;
    repo.commit(Some("HEAD"), &signature, &signature, message, &tree, parents)
        .ctx(|| at("committing"))?;
    Ok(())
}
