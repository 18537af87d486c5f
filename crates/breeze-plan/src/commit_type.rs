//! A task's commit type — the type of its landing commit's subject (`fix: …`,
//! `docs: …`). Written in plan.toml as `type = "fix"`, in a Plans.md as a `[fix]` tag (as
//! risk tags are written) or a conventional prefix on the title (`fix: the parser`, `fix(cli):
//! …`). A task without one gets its type when it lands, from the paths it changed (the
//! engine's rule).

use std::fmt;

use serde::{Serialize, Serializer};

/// The type of a landing commit, as conventional commits name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CommitType {
    /// A new feature.
    Feat,
    /// A bug fix.
    Fix,
    /// Documentation only.
    Docs,
    /// Tests only.
    Test,
    /// A change that neither fixes a bug nor adds a feature.
    Refactor,
    /// Maintenance: tooling, dependencies, housekeeping.
    Chore,
    /// A change that makes the code faster.
    Perf,
    /// The build system or dependencies.
    Build,
    /// Continuous integration.
    Ci,
    /// Formatting, no change in meaning.
    Style,
}

impl CommitType {
    /// Every type, in listing order.
    pub const ALL: [CommitType; 10] = [
        CommitType::Feat,
        CommitType::Fix,
        CommitType::Docs,
        CommitType::Test,
        CommitType::Refactor,
        CommitType::Chore,
        CommitType::Perf,
        CommitType::Build,
        CommitType::Ci,
        CommitType::Style,
    ];

    /// The type's name: `feat`, `fix`, `docs`, …
    pub fn as_str(self) -> &'static str {
        match self {
            CommitType::Feat => "feat",
            CommitType::Fix => "fix",
            CommitType::Docs => "docs",
            CommitType::Test => "test",
            CommitType::Refactor => "refactor",
            CommitType::Chore => "chore",
            CommitType::Perf => "perf",
            CommitType::Build => "build",
            CommitType::Ci => "ci",
            CommitType::Style => "style",
        }
    }

    /// Parses a name as [`CommitType::as_str`] writes it, in any case.
    pub fn from_name(name: &str) -> Option<CommitType> {
        CommitType::ALL.into_iter().find(|t| t.as_str().eq_ignore_ascii_case(name.trim()))
    }

    /// Every name, for messages: `feat, fix, docs, …`.
    pub fn names() -> String {
        CommitType::ALL.map(CommitType::as_str).join(", ")
    }

    /// The type a Plans.md task names: a conventional prefix on its title (`fix: …`,
    /// `docs(api): …`), else the first `[type]` tag in the title or `text` (its other cells).
    pub fn written_in(title: &str, text: &str) -> Option<CommitType> {
        if let Some((prefix, _)) = conventional_prefix(title) {
            return Some(prefix);
        }
        let lower = format!("{title}\n{text}").to_lowercase();
        CommitType::ALL
            .into_iter()
            .filter_map(|t| lower.find(&format!("[{}]", t.as_str())).map(|at| (at, t)))
            .min()
            .map(|(_, t)| t)
    }
}

/// The type and the rest of a title that starts with a conventional prefix (`fix: x`,
/// `Docs(api): x`, `feat!: x`).
fn conventional_prefix(title: &str) -> Option<(CommitType, &str)> {
    let (head, rest) = title.trim_start().split_once(':')?;
    let name = head.split('(').next().unwrap_or(head).trim_end_matches('!');
    let kind = CommitType::from_name(name)?;
    let scope_ok = match head.find('(') {
        Some(open) => head.trim_end_matches('!').ends_with(')') && open > 0,
        None => !head.contains(' '),
    };
    (scope_ok && !name.is_empty() && name == name.trim()).then_some((kind, rest.trim_start()))
}

/// The title as a commit subject says it: without a conventional prefix (the subject
/// writes the type itself) and without `[type]` tags, spaces collapsed.
pub fn subject_title(title: &str) -> String {
    let mut rest = conventional_prefix(title).map_or(title, |(_, rest)| rest).to_string();
    for kind in CommitType::ALL {
        let tag = format!("[{}]", kind.as_str());
        while let Some(at) = rest.to_lowercase().find(&tag) {
            rest.replace_range(at..at + tag.len(), " ");
        }
    }
    rest.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl fmt::Display for CommitType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for CommitType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CommitType::*;

    #[test]
    fn a_plans_md_task_names_its_type_by_prefix_or_tag() {
        assert_eq!(CommitType::written_in("fix: the parser crash", ""), Some(Fix));
        assert_eq!(CommitType::written_in("Docs(api): the guide", ""), Some(Docs));
        assert_eq!(CommitType::written_in("Write the guide [docs]", ""), Some(Docs));
        assert_eq!(CommitType::written_in("Speed up", "a [perf] change"), Some(Perf));
        assert_eq!(CommitType::written_in("Add login", "done: users log in"), None);
        assert_eq!(CommitType::written_in("Note: fix this", ""), None, "not a type");
        assert_eq!(CommitType::written_in("the fix: a b", ""), None, "a prefix is one word");
    }

    #[test]
    fn the_subject_title_drops_the_prefix_and_tags() {
        assert_eq!(subject_title("fix: the parser  crash"), "the parser crash");
        assert_eq!(subject_title("Write the guide [DOCS]"), "Write the guide");
        assert_eq!(subject_title("Add login [needs-spike]"), "Add login [needs-spike]");
        assert_eq!(subject_title("Note: x"), "Note: x");
    }
}
