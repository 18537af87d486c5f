//! Role definitions: Markdown with YAML front matter in Claude Code's subagent format
//! (`name`, `description`, `tools`, `disallowedTools`, `model`, `maxTurns`).
//!
//! The defaults in `agents/` are embedded; a repository overrides one by committing
//! `.claude/agents/breeze-<role>.md` (the same file Claude Code itself would read).

use std::path::{Path, PathBuf};

use breeze_protocol::Role;

const WORKER: &str = include_str!("../../../../agents/worker.md");
const ADVISOR: &str = include_str!("../../../../agents/advisor.md");
const REVIEWER: &str = include_str!("../../../../agents/reviewer.md");
const SCAFFOLDER: &str = include_str!("../../../../agents/scaffolder.md");

/// A parsed role definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleDefinition {
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: String,
    /// `tools`.
    pub tools: Vec<String>,
    /// `disallowedTools`.
    pub disallowed_tools: Vec<String>,
    /// `model` (empty if absent).
    pub model: String,
    /// `maxTurns`.
    pub max_turns: Option<u32>,
    /// The instructions after the front matter.
    pub body: String,
    /// Where it came from (`(built-in)` or a path).
    pub source: String,
}

/// Why a role definition cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DefinitionError {
    /// The repository's override cannot be read.
    #[error("cannot read {}: {error}", path.display())]
    Read {
        /// The override.
        path: PathBuf,
        /// Why.
        #[source]
        error: std::io::Error,
    },
    /// No front matter.
    #[error("{file}: a role definition starts with a `---` front matter line")]
    NoFrontMatter {
        /// Where the definition comes from.
        file: String,
    },
    /// A front matter line that is no `key: value`.
    #[error("{file}:{line}: expected `key: value` in the front matter")]
    NotKeyValue {
        /// Where the definition comes from.
        file: String,
        /// The line, from 1.
        line: usize,
    },
    /// `maxTurns` that is no whole number.
    #[error("{file}:{line}: maxTurns must be a whole number, found {value:?}")]
    MaxTurns {
        /// Where the definition comes from.
        file: String,
        /// The line, from 1.
        line: usize,
        /// As written.
        value: String,
    },
    /// The front matter never ends.
    #[error("{file}: the front matter has no closing `---` line")]
    Unclosed {
        /// Where the definition comes from.
        file: String,
    },
    /// No `name`.
    #[error("{file}: the front matter needs a `name`")]
    NoName {
        /// Where the definition comes from.
        file: String,
    },
}

/// A definition's error as its message, where the caller says it in its own words.
impl From<DefinitionError> for String {
    fn from(err: DefinitionError) -> String {
        err.to_string()
    }
}

/// The override path of a role in a repository.
pub fn override_path(repo_root: &Path, role: Role) -> PathBuf {
    repo_root.join(".claude").join("agents").join(format!("breeze-{}.md", role.as_str()))
}

/// The role's definition: the repository's override if present, else the built-in one.
pub fn load(repo_root: &Path, role: Role) -> Result<RoleDefinition, DefinitionError> {
    let path = override_path(repo_root, role);
    match std::fs::read_to_string(&path) {
        Ok(text) => parse(&text, &path.display().to_string()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(builtin(role)),
        Err(error) => Err(DefinitionError::Read { path, error }),
    }
}

/// The built-in definition of a role.
pub fn builtin(role: Role) -> RoleDefinition {
    let text = match role {
        Role::Worker => WORKER,
        Role::Advisor => ADVISOR,
        Role::Reviewer => REVIEWER,
        Role::Scaffolder => SCAFFOLDER,
    };
    // The embedded files are checked by a test; a parse failure is a build defect.
    parse(text, "(built-in)").expect("built-in role definitions parse")
}

/// The model a role runs, as its backend's description chooses it: `model` from its
/// settings, else (Claude Code) its definition's; `None` for the CLI's own default, and for
/// backends without models (`command`, `scripted`). Codex is never given the definition's
/// model: its aliases (`opus`, `sonnet`) mean nothing to it.
pub fn model(definition: &RoleDefinition, settings: &crate::config::RoleConfig) -> Option<String> {
    chosen_model(settings, || definition.model.clone())
}

/// [`model`] of `role` in the repository at `repo_root` (an unreadable definition is the
/// built-in one, as when the role runs). The definition is read only when it decides (a
/// Claude Code role without a `model` setting): this runs after every unpriced call.
pub fn model_of(
    repo_root: &Path,
    role: Role,
    settings: &crate::config::RoleConfig,
) -> Option<String> {
    chosen_model(settings, || load(repo_root, role).unwrap_or_else(|_| builtin(role)).model)
}

/// [`model`], with the definition's model asked for only when it is the one.
fn chosen_model(
    settings: &crate::config::RoleConfig,
    definition_model: impl FnOnce() -> String,
) -> Option<String> {
    use crate::backend::ModelChoice;
    let model = match settings.backend.describe().model {
        ModelChoice::SettingElseDefinition if settings.model.is_empty() => definition_model(),
        ModelChoice::SettingElseDefinition | ModelChoice::Setting => settings.model.clone(),
        ModelChoice::None => return None,
    };
    (!model.is_empty()).then_some(model)
}

/// Parses a definition. The front matter is the subset of YAML these files use:
/// `key: value` lines, lists written `a, b` or `[a, b]` or as `- item` lines.
pub fn parse(text: &str, source: &str) -> Result<RoleDefinition, DefinitionError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    let file = || source.to_string();
    if lines.next().map(str::trim) != Some("---") {
        return Err(DefinitionError::NoFrontMatter { file: file() });
    }
    let mut definition = RoleDefinition {
        name: String::new(),
        description: String::new(),
        tools: Vec::new(),
        disallowed_tools: Vec::new(),
        model: String::new(),
        max_turns: None,
        body: String::new(),
        source: source.to_string(),
    };
    let mut current_list: Option<&'static str> = None;
    let mut closed = false;
    // The first line was the opening `---`.
    for (line_no, line) in (2..).zip(lines.by_ref()) {
        if line.trim() == "---" {
            closed = true;
            break;
        }
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if let Some(item) = line.trim_start().strip_prefix("- ") {
            match current_list {
                Some("tools") => definition.tools.push(unquote(item)),
                Some("disallowedTools") => definition.disallowed_tools.push(unquote(item)),
                _ => {}
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(DefinitionError::NotKeyValue { file: file(), line: line_no });
        };
        let (key, value) = (key.trim(), value.trim());
        current_list = None;
        match key {
            "name" => definition.name = unquote(value),
            "description" => definition.description = unquote(value),
            "model" => definition.model = unquote(value),
            "maxTurns" => {
                definition.max_turns = Some(value.parse().map_err(|_| {
                    let value = value.to_string();
                    DefinitionError::MaxTurns { file: file(), line: line_no, value }
                })?);
            }
            "tools" => {
                definition.tools = split_list(value);
                current_list = Some("tools");
            }
            "disallowedTools" => {
                definition.disallowed_tools = split_list(value);
                current_list = Some("disallowedTools");
            }
            // Other Claude Code keys (color, effort, memory, ...) are allowed and ignored.
            _ => {}
        }
    }
    if !closed {
        return Err(DefinitionError::Unclosed { file: file() });
    }
    if definition.name.is_empty() {
        return Err(DefinitionError::NoName { file: file() });
    }
    definition.body = lines.collect::<Vec<_>>().join("\n").trim().to_string();
    Ok(definition)
}

fn unquote(value: &str) -> String {
    let value = value.trim();
    value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
        .unwrap_or(value)
        .to_string()
}

fn split_list(value: &str) -> Vec<String> {
    let value = value.trim().trim_start_matches('[').trim_end_matches(']');
    value.split(',').map(unquote).filter(|item| !item.is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_definitions_parse_with_read_only_advisor_and_reviewer() {
        for role in [Role::Worker, Role::Advisor, Role::Reviewer, Role::Scaffolder] {
            let definition = builtin(role);
            assert_eq!(definition.name, format!("breeze-{}", role.as_str()));
            assert!(!definition.body.is_empty());
            assert!(definition.max_turns.is_some());
        }
        for role in [Role::Advisor, Role::Reviewer] {
            let definition = builtin(role);
            for tool in ["Write", "Edit", "Bash", "Agent"] {
                assert!(definition.disallowed_tools.iter().any(|t| t == tool), "{role} may {tool}");
            }
        }
        assert!(builtin(Role::Worker).disallowed_tools.contains(&"Agent".to_string()));
    }

    #[test]
    fn yaml_list_forms_and_errors() {
        let text = "---\nname: x\ntools:\n  - Read\n  - Grep\ndisallowedTools: [Write, \"Bash\"]\nmaxTurns: 7\ncolor: red\n---\nBody\n";
        let definition = parse(text, "x.md").unwrap();
        assert_eq!(definition.tools, ["Read", "Grep"]);
        assert_eq!(definition.disallowed_tools, ["Write", "Bash"]);
        assert_eq!(definition.max_turns, Some(7));
        assert_eq!(definition.body, "Body");
        let err = |text: &str| parse(text, "y.md").unwrap_err().to_string();
        assert!(err("no front matter").contains("starts with a `---`"));
        assert!(err("---\nname: x\n").contains("no closing"));
        assert!(err("---\nname: x\nmaxTurns: many\n---\n").contains("y.md:3"));
    }

    #[test]
    fn a_repository_override_wins() {
        let dir = tempfile::tempdir().unwrap();
        let path = override_path(dir.path(), Role::Reviewer);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "---\nname: strict-reviewer\n---\nBe strict.\n").unwrap();
        let definition = load(dir.path(), Role::Reviewer).unwrap();
        assert_eq!(definition.name, "strict-reviewer");
        assert_eq!(load(dir.path(), Role::Worker).unwrap().name, "breeze-worker");
    }
}
