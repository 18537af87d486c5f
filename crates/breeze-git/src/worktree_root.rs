//! Where breeze's worktrees live: outside the person's checkout, in a folder of breeze's —
//! `$XDG_DATA_HOME/breeze/worktrees/<repo-key>/`, else
//! `~/.local/share/breeze/worktrees/<repo-key>/`, or `<folder>/<repo-key>/` under a folder
//! the caller names (`[worktree] root`). `<repo-key>` is the checkout folder's name and a
//! short hash of the repository's git directory: the same on every run (an agent CLI keys
//! its sessions by working folder), another for a second clone of the same name.
//!
//! Why not in the checkout: the project's own tools look everywhere under it. `node --test`
//! collects test files in any dot folder (`.git/` included) and follows links to folders;
//! vitest and tsc follow linked folders too. A lane in the checkout, or a link to one, is
//! seen by them. So the checkout keeps only `.harness-worktrees/README`, a plain file
//! naming the folder, and `.breeze/worktree-root` records it for the commands that only
//! look at lanes (`breeze status`, `clean`, `attach`), whatever their environment.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use crate::error::{GitError, WorktreeRootProblem};
use crate::names::{STATE_DIR, WORKTREES_NOTE_DIR};
use crate::paths::normalize;
use crate::untrusted::{ensure_dir, read_small, replace_file};

/// The file under `.breeze/` that records the folder this repository's worktrees are in.
pub(crate) const ROOT_RECORD: &str = "worktree-root";

/// The note in `.harness-worktrees/` that names that folder for a person.
pub const WORKTREES_NOTE: &str = "README";

/// Where a repository's worktrees are kept (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum WorktreeRoot {
    /// Where this repository's worktrees are: the folder breeze last made one in (recorded
    /// in `.breeze/worktree-root`), else [`WorktreeRoot::Default`]. For the commands that
    /// look at lanes without making them.
    #[default]
    Recorded,
    /// `$XDG_DATA_HOME/breeze/worktrees/<repo-key>`, else
    /// `$HOME/.local/share/breeze/worktrees/<repo-key>`.
    Default,
    /// `<folder>/<repo-key>`: the folder must be absolute.
    Under(PathBuf),
}

/// The name of this repository's folder under a worktree folder: the checkout folder's
/// name (letters, digits, `.`, `_`, `-`; at most 40) and the first 10 hex digits of the
/// SHA-1 of the canonical path of its git common directory.
pub fn repo_key(workdir: &Path, common_dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt as _;
    let name: String = workdir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' })
        .take(40)
        .collect();
    let name = name.trim_start_matches(['.', '-']);
    let name = if name.is_empty() { "repository" } else { name };
    let hash = git2::Oid::hash_object(git2::ObjectType::Blob, common_dir.as_os_str().as_bytes())
        .map(|oid| oid.to_string())
        .unwrap_or_default();
    format!("{name}-{}", &hash[..hash.len().min(10)])
}

/// The folder the default location is under: `$XDG_DATA_HOME/breeze/worktrees`, else
/// `$HOME/.local/share/breeze/worktrees` (relative values are ignored, as the XDG
/// specification says); `None` when neither is set.
pub fn default_worktrees_folder(var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let absolute = |name: &str| var(name).map(PathBuf::from).filter(|path| path.is_absolute());
    let data = absolute("XDG_DATA_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".local").join("share")))?;
    Some(data.join("breeze").join("worktrees"))
}

/// The folder of this repository's worktrees, as `choice` says, or why there is none
/// (no `HOME`; a folder inside the checkout or its git directory, or a relative one).
pub(crate) fn resolve(
    choice: &WorktreeRoot,
    workdir: &Path,
    common_dir: &Path,
    var: impl Fn(&str) -> Option<OsString>,
) -> Result<PathBuf, WorktreeRootProblem> {
    let key = repo_key(workdir, common_dir);
    let root = match choice {
        WorktreeRoot::Under(folder) if !folder.is_absolute() => {
            return Err(WorktreeRootProblem::NotAbsolute { folder: folder.clone() });
        }
        WorktreeRoot::Under(folder) => folder.join(&key),
        WorktreeRoot::Recorded => match recorded(workdir) {
            Some(root) => root,
            None => return resolve(&WorktreeRoot::Default, workdir, common_dir, var),
        },
        WorktreeRoot::Default => default_worktrees_folder(var)
            .map(|folder| folder.join(&key))
            .ok_or(WorktreeRootProblem::NoHome)?,
    };
    let root = canonical_as_far_as_exists(&root);
    for (inside, place) in [(workdir, "the checkout"), (common_dir, "its git directory")] {
        if root.starts_with(inside) {
            return Err(WorktreeRootProblem::Inside { root, place, inside: inside.to_path_buf() });
        }
    }
    Ok(root)
}

/// The folder `.breeze/worktree-root` of the checkout at `workdir` names, when it names an
/// absolute one.
fn recorded(workdir: &Path) -> Option<PathBuf> {
    let text = read_small(&workdir.join(STATE_DIR).join(ROOT_RECORD)).ok().flatten()?;
    let path = PathBuf::from(text.trim_end_matches('\n'));
    (path.is_absolute() && path.components().all(|c| c != Component::ParentDir)).then_some(path)
}

/// `path` with its longest existing ancestor resolved (links, `..`), the rest as written:
/// the same folder however it is reached, before it exists.
fn canonical_as_far_as_exists(path: &Path) -> PathBuf {
    let path = normalize(path);
    let mut rest = Vec::new();
    let mut existing = path.as_path();
    loop {
        if let Ok(found) = std::fs::canonicalize(existing) {
            return rest.iter().rev().fold(found, |acc, part| acc.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return path,
        }
    }
}

/// What `.harness-worktrees/README` says for the worktree folder `root`.
fn note_text(root: &Path) -> String {
    format!(
        "breeze keeps this repository's worktrees (its lanes `lane-<n>` and its checkouts \
         `integration`, `review` and `advice`) outside this checkout, in\n\n    {}\n\n\
         where the project's own tools (test runners, compilers, linters, indexers) never \
         look. `breeze status` lists the lanes kept there, `breeze attach <task>` opens one, \
         and `breeze clean` removes them. `[worktree] root` in breeze.toml names another \
         folder.\n",
        root.display()
    )
}

/// Makes the worktree folder `root` of the checkout at `workdir` when missing, records it
/// in `.breeze/worktree-root` and names it in `.harness-worktrees/README` (each rewritten
/// only when it says otherwise). `.breeze` and `.harness-worktrees` are made real folders:
/// a link planted there is replaced, never followed.
pub(crate) fn prepare(root: &Path, workdir: &Path) -> Result<(), GitError> {
    std::fs::create_dir_all(root).map_err(|e| GitError::io("create directory", root, e))?;
    let record = format!("{}\n", root.display());
    let note = note_text(root);
    for (dir, file, text) in [
        (workdir.join(STATE_DIR), ROOT_RECORD, record),
        (workdir.join(WORKTREES_NOTE_DIR), WORKTREES_NOTE, note),
    ] {
        ensure_dir(&dir)?;
        let path = dir.join(file);
        if read_small(&path).ok().flatten().as_deref() != Some(text.as_str()) {
            replace_file(&path, text.as_bytes())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| OsString::from(v))
    }

    #[test]
    fn the_default_folder_follows_xdg_data_home_then_home() {
        let xdg = vars(&[("XDG_DATA_HOME", "/data"), ("HOME", "/home/me")]);
        assert_eq!(default_worktrees_folder(xdg), Some(PathBuf::from("/data/breeze/worktrees")));
        let home = vars(&[("XDG_DATA_HOME", "relative/ignored"), ("HOME", "/home/me")]);
        assert_eq!(
            default_worktrees_folder(home),
            Some(PathBuf::from("/home/me/.local/share/breeze/worktrees"))
        );
        assert_eq!(default_worktrees_folder(vars(&[])), None);
    }

    #[test]
    fn the_key_is_the_folder_name_and_a_hash_of_the_git_directory() {
        let one = repo_key(Path::new("/a/my app"), Path::new("/a/my app/.git"));
        let two = repo_key(Path::new("/b/my app"), Path::new("/b/my app/.git"));
        assert!(one.starts_with("my_app-") && two.starts_with("my_app-"), "{one} {two}");
        assert_ne!(one, two, "two clones of the same name get two folders");
        assert_eq!(one, repo_key(Path::new("/a/my app"), Path::new("/a/my app/.git")));
        assert_eq!(one.len(), "my_app-".len() + 10);
        assert!(repo_key(Path::new("/"), Path::new("/.git")).starts_with("repository-"));
    }

    #[test]
    fn no_home_and_no_folder_is_an_error_naming_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let err = resolve(&WorktreeRoot::Default, dir.path(), &dir.path().join(".git"), vars(&[]))
            .unwrap_err();
        let err = err.to_string();
        assert!(err.contains("`[worktree] root`") && err.contains("HOME"), "{err}");
        let under = WorktreeRoot::Under(PathBuf::from("/lanes"));
        let root = resolve(&under, dir.path(), &dir.path().join(".git"), vars(&[])).unwrap();
        assert!(root.starts_with("/lanes"), "{}", root.display());
    }

    #[test]
    fn a_folder_inside_the_checkout_or_relative_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let workdir = std::fs::canonicalize(dir.path()).unwrap();
        let inside = WorktreeRoot::Under(workdir.join("lanes"));
        let err = resolve(&inside, &workdir, &workdir.join(".git"), vars(&[])).unwrap_err();
        assert!(err.to_string().contains("inside the checkout"), "{err}");
        let relative = WorktreeRoot::Under(PathBuf::from("lanes"));
        let err = resolve(&relative, &workdir, &workdir.join(".git"), vars(&[])).unwrap_err();
        assert!(err.to_string().contains("not an absolute path"), "{err}");
    }
}
