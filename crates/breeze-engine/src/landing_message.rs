//! The landing commit's subject: `land.message` (`{type}: {title}` by default) filled with
//! the task's commit type and title. The type is the plan's (`type = "fix"`, a `[fix]` tag,
//! a `fix:` title); else it is inferred from the paths the task changed: only
//! documentation → `docs`, only tests → `test`, anything else → `feat`, or `fix` when the
//! title starts with Fix, Correct or Repair. The trailers follow as `breeze-git` writes
//! them; a run finds earlier landings by them and by the subjects this module could have
//! made ([`MessageTemplate::recognized_subjects`]).

use breeze_plan::{CommitType, Task};

/// The placeholders `land.message` may use.
pub const PLACEHOLDERS: [&str; 3] = ["{type}", "{title}", "{id}"];

/// `land.message` when not configured.
pub const DEFAULT_TEMPLATE: &str = "{type}: {title}";

/// The subject template (`land.message`), checked: one line, known placeholders,
/// `{title}` among them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageTemplate(String);

impl Default for MessageTemplate {
    fn default() -> MessageTemplate {
        MessageTemplate(DEFAULT_TEMPLATE.to_string())
    }
}

/// Why `land.message` cannot be a landing's subject.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`land.message` is {text:?}: {fault}; write one line with {{title}}, e.g. \"{default}\"",
    default = DEFAULT_TEMPLATE
)]
pub struct TemplateRefused {
    /// As written.
    pub text: String,
    /// What is wrong with it.
    pub fault: TemplateFault,
}

/// What is wrong with a `land.message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateFault {
    /// It spans lines.
    #[error("it is the commit's subject, one line")]
    MoreThanOneLine,
    /// It names a placeholder breeze does not fill in.
    #[error("breeze does not fill in {0} (the placeholders are {list})", list = PLACEHOLDERS.join(", "))]
    UnknownPlaceholder(String),
    /// It has no `{title}`.
    #[error(
        "without {{title}}, a task's landing cannot be told from another plan's task of the same id"
    )]
    NoTitle,
}

impl MessageTemplate {
    /// The template as written in `breeze.toml`, or why it is refused.
    pub fn parse(text: &str) -> Result<MessageTemplate, TemplateRefused> {
        let refused = |fault| Err(TemplateRefused { text: text.to_string(), fault });
        if text.contains(['\n', '\r']) {
            return refused(TemplateFault::MoreThanOneLine);
        }
        for placeholder in placeholders(text) {
            if !PLACEHOLDERS.contains(&placeholder) {
                return refused(TemplateFault::UnknownPlaceholder(placeholder.to_string()));
            }
        }
        if !text.contains("{title}") {
            return refused(TemplateFault::NoTitle);
        }
        Ok(MessageTemplate(text.to_string()))
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The subject of a landing of the task `id` titled `title`, of type `kind`: the title
    /// without its own type prefix or `[type]` tags ([`breeze_plan::subject_title`]), on one
    /// line. Each placeholder is filled once: a title holding `{id}` keeps it as written.
    pub fn subject(&self, kind: CommitType, title: &str, id: &str) -> String {
        let title = breeze_plan::subject_title(title);
        let mut out = String::new();
        let mut rest = self.0.as_str();
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open..];
            let filled = [("{type}", kind.as_str()), ("{title}", title.as_str()), ("{id}", id)]
                .into_iter()
                .find(|(placeholder, _)| after.starts_with(placeholder));
            match filled {
                Some((placeholder, value)) => {
                    out.push_str(value);
                    rest = &after[placeholder.len()..];
                }
                None => {
                    out.push('{');
                    rest = &after[1..];
                }
            }
        }
        out.push_str(rest);
        out.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// Every subject a landing of the task may carry, for finding it on main: each type
    /// with this template and with the default one (landings made before `land.message`
    /// changed, or before types were inferred).
    pub fn recognized_subjects(&self, title: &str, id: &str) -> Vec<String> {
        let templates = [self.clone(), MessageTemplate::default()];
        let mut subjects: Vec<String> = Vec::new();
        for template in &templates {
            for kind in CommitType::ALL {
                let subject = template.subject(kind, title, id);
                if !subjects.contains(&subject) {
                    subjects.push(subject);
                }
            }
        }
        subjects
    }
}

/// The tasks of `plan` already on `repo`'s main — the branch work lands on — found as a run
/// finds them: by their `Breeze-Task` trailer and a subject their landing may have had
/// ([`MessageTemplate::recognized_subjects`]). Each with its landing commit.
pub fn landed_on_main(
    repo: &breeze_git::Repo,
    plan: &breeze_plan::Plan,
    template: &MessageTemplate,
) -> Result<std::collections::BTreeMap<String, breeze_git::Oid>, breeze_git::GitError> {
    repo.find_landed_tasks(&subjects_of(plan, template))
}

/// Each task of `plan` with the subjects its landing may have had.
pub(crate) fn subjects_of<'p>(
    plan: &'p breeze_plan::Plan,
    template: &MessageTemplate,
) -> Vec<(&'p str, Vec<String>)> {
    (plan.tasks.iter())
        .map(|task| (task.id.as_str(), template.recognized_subjects(&task.title, task.id.as_str())))
        .collect()
}

/// The `{…}` placeholders of `text`.
fn placeholders(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else { break };
        found.push(&rest[open..open + close + 1]);
        rest = &rest[open + close + 1..];
    }
    found
}

/// The type of `task`'s landing: the plan's, else inferred from `paths`, the paths it
/// changed ([`infer`]).
pub fn commit_type(task: &Task, paths: &[&str]) -> CommitType {
    task.commit_type.unwrap_or_else(|| infer(&task.title, paths))
}

/// The type of a change to `paths` titled `title`: `docs` when every path is
/// documentation ([`is_docs`]), `test` when every path is a test ([`is_test`]), else `fix`
/// when the title's first word is Fix, Correct or Repair (any form: Fixes, Corrected), else
/// `feat`.
pub fn infer(title: &str, paths: &[&str]) -> CommitType {
    if !paths.is_empty() && paths.iter().all(|path| is_docs(path)) {
        return CommitType::Docs;
    }
    if !paths.is_empty() && paths.iter().all(|path| is_test(path)) {
        return CommitType::Test;
    }
    let first = breeze_plan::subject_title(title)
        .split(|c: char| !c.is_alphanumeric())
        .find(|word| !word.is_empty())
        .unwrap_or_default()
        .to_lowercase();
    let fixing = [
        "fix",
        "fixes",
        "fixed",
        "correct",
        "corrects",
        "corrected",
        "repair",
        "repairs",
        "repaired",
    ];
    if fixing.contains(&first.as_str()) { CommitType::Fix } else { CommitType::Feat }
}

/// Documentation: Markdown, reStructuredText, AsciiDoc and text files (not the text files
/// builds read: `requirements*.txt`, `CMakeLists.txt`), anything under `docs/` or `doc/`,
/// and the README, changelog, license and contributing files whatever their extension.
pub fn is_docs(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let first = path.split('/').next().unwrap_or_default().to_ascii_lowercase();
    if path.contains('/') && (first == "docs" || first == "doc") {
        return true;
    }
    let build_text = name == "cmakelists.txt"
        || name.starts_with("requirements")
        || name.starts_with("constraints");
    let extension = name.rsplit_once('.').map(|(_, ext)| ext).unwrap_or_default();
    if ["md", "markdown", "rst", "adoc", "asciidoc"].contains(&extension)
        || (extension == "txt" && !build_text)
    {
        return true;
    }
    let stem = name.split('.').next().unwrap_or_default();
    [
        "readme",
        "changelog",
        "changes",
        "history",
        "news",
        "license",
        "licence",
        "copying",
        "authors",
        "contributing",
        "notice",
    ]
    .contains(&stem)
}

/// Tests: anything under a `tests/`, `test/`, `__tests__/` or `spec/` folder, and files
/// named as tests are (`*_test.*`, `*.test.*`, `*_spec.*`, `*.spec.*`, `test_*.py`,
/// `*Test.java`, `*_tests.rs`).
pub fn is_test(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop().unwrap_or_default();
    if parts.iter().any(|folder| ["tests", "test", "__tests__", "spec", "specs"].contains(folder)) {
        return true;
    }
    let (stem, extension) = name.rsplit_once('.').unwrap_or((name, ""));
    let lower = stem.to_ascii_lowercase();
    lower.ends_with("_test")
        || lower.ends_with("_tests")
        || lower.ends_with(".test")
        || lower.ends_with("_spec")
        || lower.ends_with(".spec")
        || (lower.starts_with("test_") && extension == "py")
        || (stem.ends_with("Test") && ["java", "kt", "scala"].contains(&extension))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_follows_the_paths_then_the_title() {
        assert_eq!(
            infer("Write the guide", &["docs/guide/intro.html", "README.md"]),
            CommitType::Docs
        );
        assert_eq!(
            infer("Cover the parser", &["tests/parser.rs", "src/lexer_test.go"]),
            CommitType::Test
        );
        assert_eq!(
            infer("Cover the parser", &["tests/test_sign.py", "web/app.test.ts"]),
            CommitType::Test
        );
        assert_eq!(
            infer("Add the parser", &["src/parser.rs", "tests/parser.rs"]),
            CommitType::Feat
        );
        assert_eq!(infer("Fix the crash on empty input", &["src/parser.rs"]), CommitType::Fix);
        assert_eq!(infer("Correct the rounding", &["src/round.rs"]), CommitType::Fix);
        assert_eq!(infer("Repairs the index", &["src/index.rs"]), CommitType::Fix);
        assert_eq!(infer("Fixture loader", &["src/fixture.rs"]), CommitType::Feat, "a whole word");
        assert_eq!(infer("Pin the deps", &["requirements.txt"]), CommitType::Feat, "not docs");
        assert_eq!(infer("Nothing", &[]), CommitType::Feat);
    }

    #[test]
    fn the_plans_type_wins_over_the_paths() {
        let plan = breeze_plan::parse_plans_md(
            "| Task | Content | DoD | Depends | Status |\n|-|-|-|-|-|\n| 1 | refactor: split the parser | d | - | cc:TODO |\n",
            std::path::Path::new("Plans.md"),
        )
        .unwrap();
        assert_eq!(commit_type(&plan.tasks[0], &["docs/a.md"]), CommitType::Refactor);
    }

    #[test]
    fn the_template_fills_each_placeholder_once() {
        let default = MessageTemplate::default();
        assert_eq!(default.subject(CommitType::Fix, "fix: the  parser", "3"), "fix: the parser");
        let custom = MessageTemplate::parse("[{id}] {title} ({type})").unwrap();
        assert_eq!(custom.subject(CommitType::Docs, "Say {id}", "7"), "[7] Say {id} (docs)");
    }

    #[test]
    fn a_template_without_title_or_with_unknown_placeholders_is_refused() {
        for bad in ["{type}: {id}", "{kind}: {title}", "{title}\nbody"] {
            let err = MessageTemplate::parse(bad).unwrap_err().to_string();
            assert!(err.contains("land.message"), "{err}");
        }
    }

    #[test]
    fn a_landing_is_recognized_whatever_type_it_got() {
        let subjects =
            MessageTemplate::parse("{title} [{type}]").unwrap().recognized_subjects("Add x", "1");
        for wanted in ["Add x [docs]", "feat: Add x", "test: Add x"] {
            assert!(subjects.contains(&wanted.to_string()), "{wanted}: {subjects:?}");
        }
    }
}
