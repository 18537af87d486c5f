//! The shared files: files at most one task of a run may own — its write set names the
//! file — and that only the Lead writes when no task does: the plan (its status markers),
//! the project's changelog (the workers' lines) and `spec.md`. The changelog is named as
//! the repository names it (`CHANGES.rst`, `NEWS`, …: the engine finds it); which of the
//! files the repository has decides what `breeze plan` lists.

/// The plan file, the changelog and the spec as the planner names them when it does not
/// know the repository.
pub const SHARED_FILES: [&str; 3] = ["Plans.md", "CHANGELOG.md", "spec.md"];

/// One shared file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedFile {
    /// Its path, relative to the repository root.
    pub path: String,
    /// Whether the repository has it (on the branch work lands on).
    pub exists: bool,
}

/// The repository's shared files, in [`SHARED_FILES`]' order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedFiles {
    files: Vec<SharedFile>,
}

impl Default for SharedFiles {
    /// [`SHARED_FILES`], each taken to exist (the repository is not known).
    fn default() -> SharedFiles {
        SharedFiles {
            files: SHARED_FILES
                .iter()
                .map(|path| SharedFile { path: path.to_string(), exists: true })
                .collect(),
        }
    }
}

impl SharedFiles {
    /// `Plans.md`, the repository's changelog (`None`: none is kept, then the changelog
    /// is a file like any other) and `spec.md`; `exists` says which the repository has.
    pub fn of_repository(changelog: Option<&str>, exists: impl Fn(&str) -> bool) -> SharedFiles {
        let paths = [Some(SHARED_FILES[0]), changelog, Some(SHARED_FILES[2])];
        let mut files: Vec<SharedFile> = Vec::new();
        for path in paths.into_iter().flatten() {
            if !files.iter().any(|file| file.path == path) {
                files.push(SharedFile { path: path.to_string(), exists: exists(path) });
            }
        }
        SharedFiles { files }
    }

    /// Every shared file, in order.
    pub fn iter(&self) -> impl Iterator<Item = &SharedFile> {
        self.files.iter()
    }

    /// Their paths, in order.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|file| file.path.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repositorys_changelog_takes_the_place_of_changelog_md() {
        let files = SharedFiles::of_repository(Some("CHANGES.rst"), |path| path != "spec.md");
        let listed: Vec<(&str, bool)> =
            files.iter().map(|file| (file.path.as_str(), file.exists)).collect();
        assert_eq!(listed, [("Plans.md", true), ("CHANGES.rst", true), ("spec.md", false)]);
        let off = SharedFiles::of_repository(None, |_| true);
        assert_eq!(off.paths().collect::<Vec<_>>(), ["Plans.md", "spec.md"]);
    }
}
