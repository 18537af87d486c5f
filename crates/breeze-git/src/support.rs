//! What libgit2 cannot handle, found when a repository is opened and refused with what to
//! do: SHA-256 and reftable repositories, repository extensions it lacks (partial clones),
//! sparse checkouts, and sparse or split indexes.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use git2::{ErrorCode, Repository};

use crate::error::{Context as _, GitError};
use crate::file_stamp::{Stamp, stamp};

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
    let mandatory = || {
        unsupported(
            "an index with an extension libgit2 cannot read (a sparse or split index)",
            "run `git update-index --no-split-index` (split index) or \
             `git sparse-checkout disable` (sparse index) and run again",
        )
    };
    let index_file = repo.path().join("index");
    // The same file, unchanged, was found readable by this process already (a run opens
    // its repository twice: for itself and for its preflight).
    let before = stamp(&index_file);
    if let Some(before) = before
        && found_readable()
            .as_ref()
            .is_some_and(|(file, found)| *file == index_file && *found == before)
    {
        return Ok(());
    }
    match std::fs::read(&index_file).map(|bytes| index_extensions(&bytes)) {
        // No index yet (a fresh repository), or one without what libgit2 refuses.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Ok(Some(Extensions::Readable)) => {
            if let Some(stamp) = before.filter(|stamp| Some(*stamp) == self::stamp(&index_file)) {
                *found_readable() = Some((index_file, stamp));
            }
            return Ok(());
        }
        Ok(Some(Extensions::Mandatory)) => return Err(mandatory()),
        // An index this scan does not know (version 4, or damaged): libgit2 says.
        Ok(None) | Err(_) => {}
    }
    match repo.index() {
        Ok(_) => Ok(()),
        Err(e) if e.message().contains("unsupported mandatory extension") => Err(mandatory()),
        Err(e) => Err(e).ctx(|| format!("could not read the index of {}", workdir.display())),
    }
}

/// The index file this process last found readable by libgit2, as it was then.
fn found_readable() -> std::sync::MutexGuard<'static, Option<(PathBuf, Stamp)>> {
    static FOUND: Mutex<Option<(PathBuf, Stamp)>> = Mutex::new(None);
    FOUND.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What an index file's extensions are to libgit2.
#[derive(Debug, PartialEq, Eq)]
enum Extensions {
    /// None, or only optional ones (upper-case names: a reader may skip them).
    Readable,
    /// One whose name is lower-case (`link`: a split index, `sdir`: a sparse one): a reader
    /// that does not know it must refuse the index, and libgit2 does.
    Mandatory,
}

/// The extensions of an index file of version 2 or 3, found by stepping over its entries
/// (no entry is parsed, nothing hashed: the whole read by libgit2 costs about 50 ms at
/// 100,000 files, and `Repo::open` runs twice a run). `None` for another version or a file
/// that does not hold together.
fn index_extensions(bytes: &[u8]) -> Option<Extensions> {
    const HEADER: usize = 12;
    const CHECKSUM: usize = 20;
    /// Where an entry's flags are, and its name after them (version 2).
    const FLAGS_AT: usize = 60;
    const EXTENDED: u16 = 0x4000;
    const NAME_MASK: u16 = 0x0fff;
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    if bytes.get(..4)? != b"DIRC" || !matches!(u32_at(4)?, 2 | 3) {
        return None;
    }
    let end = bytes.len().checked_sub(CHECKSUM)?;
    let mut at = HEADER;
    for _ in 0..u32_at(8)? {
        let flags =
            u16::from_be_bytes(bytes.get(at + FLAGS_AT..at + FLAGS_AT + 2)?.try_into().ok()?);
        let name_at = at + FLAGS_AT + 2 + if flags & EXTENDED != 0 { 2 } else { 0 };
        let name_len = match flags & NAME_MASK {
            NAME_MASK => bytes.get(name_at..end)?.iter().position(|b| *b == 0)?,
            len => usize::from(len),
        };
        // The entry and one to eight NULs, to a multiple of eight bytes.
        at += (name_at + name_len - at + 8) & !7;
    }
    while at < end {
        let name = bytes.get(at..at + 4)?;
        let size = usize::try_from(u32_at(at + 4)?).ok()?;
        if !name[0].is_ascii_uppercase() {
            return Some(Extensions::Mandatory);
        }
        at = at.checked_add(8 + size)?;
    }
    (at == end).then_some(Extensions::Readable)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{Extensions, index_extensions};

    use crate::git_cli::git_for_test as git;

    fn extensions(dir: &Path) -> Option<Extensions> {
        index_extensions(&std::fs::read(dir.join(".git/index")).unwrap())
    }

    /// Indexes git writes, stepped over to their extensions: a name longer than the flags
    /// can say (found by its NUL), version 3's extended entries, optional extensions after
    /// them; a split index is refused, version 4 and a cut file are left to libgit2.
    #[test]
    fn the_extensions_of_indexes_git_writes_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        std::fs::write(root.join("a.txt"), "a\n").unwrap();
        git(root, &["add", "a.txt"]);
        let blob = git(root, &["hash-object", "-w", "a.txt"]);
        let long = format!("{}x.txt", "folder/".repeat(600));
        assert!(long.len() > 0xfff);
        git(
            root,
            &["update-index", "--add", "--cacheinfo", &format!("100644,{},{long}", blob.trim())],
        );
        git(root, &["write-tree"]);
        git(root, &["update-index", "--untracked-cache"]);
        git(root, &["status", "--porcelain"]);
        let file = std::fs::read(root.join(".git/index")).unwrap();
        assert!(file.windows(4).any(|w| w == b"TREE") && file.windows(4).any(|w| w == b"UNTR"));
        assert_eq!(extensions(root), Some(Extensions::Readable));

        // Eight bytes of name: the two of the extended flags change the entry's padding.
        std::fs::write(root.join("b123.txt"), "b\n").unwrap();
        git(root, &["add", "-N", "b123.txt"]);
        assert_eq!(git(root, &["ls-files", "--debug"]).matches("flags: 20004000").count(), 1);
        assert_eq!(extensions(root), Some(Extensions::Readable), "version 3");

        let cut = std::fs::read(root.join(".git/index")).unwrap();
        assert_eq!(index_extensions(&cut[..cut.len() / 2]), None);

        git(root, &["update-index", "--split-index"]);
        assert_eq!(extensions(root), Some(Extensions::Mandatory));
        git(root, &["update-index", "--no-split-index"]);
        assert_eq!(extensions(root), Some(Extensions::Readable));

        git(root, &["update-index", "--index-version", "4"]);
        assert_eq!(extensions(root), None);
    }
}
