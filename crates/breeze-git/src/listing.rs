//! What main holds: its tracked files, for a bounded view of the repository (the
//! Scaffolder reads it to propose write sets).

use git2::{TreeWalkMode, TreeWalkResult};

use crate::error::GitError;
use crate::objects::commit_tree;
use crate::repo::Repo;

/// Tracked files at main's tip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileListing {
    /// Paths (`/`-separated, UTF-8 ones only), in tree order, at most the limit asked for.
    pub files: Vec<String>,
    /// How many files main tracks in all.
    pub total: u64,
}

impl Repo {
    /// The files main tracks, the first `limit` of them by path (symlinks and submodules
    /// included, as paths).
    pub fn files_on_main(&self, limit: usize) -> Result<FileListing, GitError> {
        let repo = self.git()?;
        let tip = self.main_tip()?;
        let tree = commit_tree(&repo, tip)?;
        let mut listing = FileListing { files: Vec::new(), total: 0 };
        let walked = tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(git2::ObjectType::Tree) {
                return TreeWalkResult::Ok;
            }
            listing.total += 1;
            if listing.files.len() < limit
                && let Ok(name) = entry.name()
            {
                listing.files.push(format!("{dir}{name}"));
            }
            TreeWalkResult::Ok
        });
        walked.map_err(|cause| GitError::Git {
            context: format!("could not list the files of {}", self.main_branch()),
            cause,
        })?;
        Ok(listing)
    }
}
