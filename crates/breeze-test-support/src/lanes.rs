//! Where a repository's lanes are, as breeze recorded it: its worktrees live outside the
//! checkout (in the data folder of whoever ran breeze, or the folder `[worktree] root`
//! names), and `.breeze/worktree-root` names that folder once breeze made a worktree. Tests
//! ask for a lane's path here rather than spelling one out.

use std::path::{Path, PathBuf};

/// The folder the worktrees of the repository at `root` are in, as breeze recorded it
/// (`.breeze/worktree-root`); panics, saying so, before breeze made any.
pub fn worktree_folder(root: &Path) -> PathBuf {
    let record = root.join(".breeze/worktree-root");
    let text = std::fs::read_to_string(&record).unwrap_or_else(|err| {
        panic!(
            "{} cannot be read ({err}): breeze made no worktree of this repository yet",
            record.display()
        )
    });
    let folder = PathBuf::from(text.trim_end_matches('\n'));
    assert!(
        folder.is_absolute(),
        "{} names {}, not an absolute folder",
        record.display(),
        folder.display()
    );
    assert!(
        !folder.starts_with(root),
        "the worktree folder {} is inside the checkout",
        folder.display()
    );
    folder
}

/// The path of breeze's worktree `name` (`lane-1`, `integration`) of the repository at
/// `root` (see [`worktree_folder`]).
pub fn lane(root: &Path, name: &str) -> PathBuf {
    worktree_folder(root).join(name)
}
