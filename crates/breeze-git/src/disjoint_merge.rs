//! The landing merge when main and the task changed no path in common — the common case,
//! since the Lead gives concurrent tasks write sets that do not overlap. It is decided
//! tree by tree, as git's merge does before it looks at any file: an entry one side left
//! as the base had is the other side's; a folder both sides changed is merged entry by
//! entry. Folders neither side changed are never opened, so the cost follows what changed,
//! not the repository's size (libgit2's `merge_trees` walks and rewrites every entry: about
//! 35 ms a landing at 20,000 files).
//!
//! Anything else — an entry both sides changed (even alike: both removing a file is git's
//! rename/rename or rename/delete conflict when each side put it somewhere), a file where
//! the other side has a folder — is not decided here: the full merge
//! ([`crate::Repo::merge_task`]) with its rename detection and checks takes it. So a
//! rename never changes the result here: following one matters only when the other side
//! touched a path of it, which sends the merge to the full one.

use git2::{FileMode, Oid, Repository, Tree};

use crate::error::{Context as _, GitError};

/// One side of a tree entry: its object and mode.
type Entry = (Oid, i32);

/// The merged tree of `ours` and `theirs` from `base` when no entry was changed on both
/// sides (even alike), written to the object database; `None` when one was, or a merged
/// folder could not be built: the full merge decides (only trees of this merge were
/// written meanwhile).
pub(crate) fn merge_disjoint(
    repo: &Repository,
    base: &Tree<'_>,
    ours: &Tree<'_>,
    theirs: &Tree<'_>,
) -> Result<Option<Oid>, GitError> {
    Ok(match merge_level(repo, Some(base), ours, theirs)? {
        None => None,
        Some(Level::Ours) => Some(ours.id()),
        Some(Level::Written(id)) => Some(id),
        Some(Level::Empty) => write_tree(repo, &[])?,
    })
}

/// What one folder of a disjoint merge came to.
enum Level {
    /// `ours` as it is: nothing written.
    Ours,
    /// A tree written for it.
    Written(Oid),
    /// Nothing: both sides removed its entries between them (git keeps no empty folder).
    Empty,
}

/// One folder; `None` when the merge is not disjoint there.
fn merge_level(
    repo: &Repository,
    base: Option<&Tree<'_>>,
    ours: &Tree<'_>,
    theirs: &Tree<'_>,
) -> Result<Option<Level>, GitError> {
    let mut names: std::collections::BTreeMap<Vec<u8>, [Option<Entry>; 3]> =
        std::collections::BTreeMap::new();
    for (side, tree) in [base, Some(ours), Some(theirs)].into_iter().enumerate() {
        for entry in tree.into_iter().flat_map(Tree::iter) {
            names.entry(entry.name_bytes().to_vec()).or_default()[side] =
                Some((entry.id(), entry.filemode()));
        }
    }
    let folder =
        |entry: Option<Entry>| entry.is_some_and(|(_, mode)| mode == i32::from(FileMode::Tree));
    let tree = |oid: Oid| repo.find_tree(oid).ctx(|| format!("could not read tree {oid}"));
    let mut merged: Vec<(Vec<u8>, Entry)> = Vec::with_capacity(names.len());
    let mut as_ours = true;
    for (name, [b, o, t]) in names {
        let take = if b == t {
            o
        } else if b == o {
            as_ours = false;
            t
        } else if o == t {
            // Both sides made the same change: a removal both made can be paired with a
            // different new path on each side (git's rename/rename and rename/delete).
            return Ok(None);
        } else if let (Some((o_id, _)), Some((t_id, _)), true) =
            (o, t, folder(o) && folder(t) && (b.is_none() || folder(b)))
        {
            let sub_base = b.map(|(id, _)| tree(id)).transpose()?;
            match merge_level(repo, sub_base.as_ref(), &tree(o_id)?, &tree(t_id)?)? {
                None => return Ok(None),
                Some(Level::Ours) => o,
                Some(Level::Written(id)) => {
                    as_ours = false;
                    Some((id, i32::from(FileMode::Tree)))
                }
                Some(Level::Empty) => {
                    as_ours = false;
                    None
                }
            }
        } else {
            return Ok(None);
        };
        if let Some(entry) = take {
            merged.push((name, entry));
        }
    }
    if as_ours {
        return Ok(Some(Level::Ours));
    }
    if merged.is_empty() {
        return Ok(Some(Level::Empty));
    }
    Ok(write_tree(repo, &merged)?.map(Level::Written))
}

/// Writes a tree of `entries`; `None` when libgit2 refuses an entry's name (say `.git`
/// in a hostile history): the full merge, with its own errors, takes the case.
fn write_tree(repo: &Repository, entries: &[(Vec<u8>, Entry)]) -> Result<Option<Oid>, GitError> {
    let mut builder = repo.treebuilder(None).ctx(|| "could not build a merged tree".to_string())?;
    for (name, (oid, mode)) in entries {
        if builder.insert(name.clone(), *oid, *mode).is_err() {
            return Ok(None);
        }
    }
    builder.write().map(Some).ctx(|| "could not write a merged tree".to_string())
}

#[cfg(test)]
mod tests {
    use git2::{FileMode, Oid, Repository, build::TreeUpdateBuilder};

    use super::merge_disjoint;

    /// A repository with `base` (path → content) and a tree per side made from it by
    /// `(path, Some(content) | None)` edits.
    struct Sides {
        _dir: tempfile::TempDir,
        repo: Repository,
        base: Oid,
    }

    impl Sides {
        fn new(base: &[(&str, &str)]) -> Sides {
            let dir = tempfile::tempdir().unwrap();
            let repo = Repository::init(dir.path()).unwrap();
            let empty = repo.treebuilder(None).unwrap().write().unwrap();
            let mut sides = Sides { _dir: dir, repo, base: empty };
            let edits: Vec<(&str, Option<&str>)> =
                base.iter().map(|(p, c)| (*p, Some(*c))).collect();
            sides.base = sides.edit(empty, &edits);
            sides
        }

        fn edit(&self, from: Oid, edits: &[(&str, Option<&str>)]) -> Oid {
            let mut update = TreeUpdateBuilder::new();
            for (path, content) in edits {
                match content {
                    Some(text) => update.upsert(
                        *path,
                        self.repo.blob(text.as_bytes()).unwrap(),
                        FileMode::Blob,
                    ),
                    None => update.remove(*path),
                };
            }
            update.create_updated(&self.repo, &self.repo.find_tree(from).unwrap()).unwrap()
        }

        fn merge(&self, ours: Oid, theirs: Oid) -> Option<Oid> {
            let tree = |id| self.repo.find_tree(id).unwrap();
            merge_disjoint(&self.repo, &tree(self.base), &tree(ours), &tree(theirs)).unwrap()
        }

        /// `git merge-tree --write-tree` of the two sides over the base, as commits.
        fn git_merge(&self, ours: Oid, theirs: Oid) -> Oid {
            let sig = git2::Signature::now("t", "t@example.com").unwrap();
            let commit = |tree, parents: &[&git2::Commit<'_>]| {
                let tree = self.repo.find_tree(tree).unwrap();
                self.repo.commit(None, &sig, &sig, "c", &tree, parents).unwrap()
            };
            let base = self.repo.find_commit(commit(self.base, &[])).unwrap();
            let (o, t) = (commit(ours, &[&base]), commit(theirs, &[&base]));
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(self.repo.workdir().unwrap())
                .args(["merge-tree", "--write-tree"])
                .args([o.to_string(), t.to_string()])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
            Oid::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap()
        }
    }

    #[test]
    fn changes_in_different_folders_merge_as_git_merges_them() {
        let sides = Sides::new(&[
            ("a/b/one.txt", "1\n"),
            ("a/b/two.txt", "2\n"),
            ("a/c/three.txt", "3\n"),
            ("d/four.txt", "4\n"),
            ("gone/only.txt", "x\n"),
            ("top.txt", "t\n"),
        ]);
        let ours =
            sides.edit(sides.base, &[("a/b/one.txt", Some("1 ours\n")), ("gone/only.txt", None)]);
        let theirs = sides.edit(
            sides.base,
            &[
                ("a/b/two.txt", None),
                ("a/new/five.txt", Some("5\n")),
                ("top.txt", Some("t theirs\n")),
            ],
        );
        let merged = sides.merge(ours, theirs).expect("a disjoint merge");
        assert_eq!(merged, sides.git_merge(ours, theirs));
        // Untouched folders are the base's, shared, not rewritten.
        let tree = sides.repo.find_tree(merged).unwrap();
        let base = sides.repo.find_tree(sides.base).unwrap();
        assert_eq!(
            tree.get_path("d".as_ref()).unwrap().id(),
            base.get_path("d".as_ref()).unwrap().id()
        );
    }

    #[test]
    fn a_folder_emptied_by_both_sides_together_is_gone_as_in_git() {
        let sides = Sides::new(&[("f/x", "x\n"), ("f/y", "y\n"), ("keep", "k\n")]);
        let ours = sides.edit(sides.base, &[("f/x", None)]);
        let theirs = sides.edit(sides.base, &[("f/y", None)]);
        let merged = sides.merge(ours, theirs).expect("a disjoint merge");
        assert!(sides.repo.find_tree(merged).unwrap().get_path("f".as_ref()).is_err());
        assert_eq!(merged, sides.git_merge(ours, theirs));
    }

    #[test]
    fn a_path_both_sides_changed_goes_to_the_full_merge() {
        let sides = Sides::new(&[("a/x", "x\n"), ("b/y", "y\n")]);
        // Both changed one file (a content merge), both removed one (renames may pair), and
        // a file where the other side made a folder.
        let both_edit = (
            sides.edit(sides.base, &[("a/x", Some("1\n"))]),
            sides.edit(sides.base, &[("a/x", Some("2\n"))]),
        );
        let both_remove = (
            sides.edit(sides.base, &[("a/x", None), ("c/x", Some("x\n"))]),
            sides.edit(sides.base, &[("a/x", None), ("d/x", Some("x\n"))]),
        );
        let kinds = (
            sides.edit(sides.base, &[("n", Some("file\n"))]),
            sides.edit(sides.base, &[("n/inner", Some("f\n"))]),
        );
        for (ours, theirs) in [both_edit, both_remove, kinds] {
            assert_eq!(sides.merge(ours, theirs), None);
        }
    }
}
