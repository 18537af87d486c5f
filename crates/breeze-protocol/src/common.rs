//! Types that more than one message carries: the task as roles see it, a reviewer's
//! finding (gap) and its severity, and the lessons roles ask to be remembered.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The task as roles see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TaskBrief {
    /// Task id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Definition of done.
    pub dod: String,
    /// Write set: files, directories (`src/auth/`) and globs (`src/**/*.rs`).
    pub writes: Vec<String>,
    /// Ids of tasks this one depends on.
    pub depends_on: Vec<String>,
    /// Risk flags, e.g. `security-sensitive`.
    pub risk: Vec<String>,
}

/// How bad a gap is. Any `critical` or `major` gap means `REQUEST_CHANGES`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Security hole, data loss, outage.
    Critical,
    /// Breaks behaviour, contradicts the spec, failing tests.
    Major,
    /// Naming, comments, style: never blocks.
    Minor,
}

impl Severity {
    /// Whether a gap of this severity blocks landing.
    pub fn blocks(self) -> bool {
        matches!(self, Self::Critical | Self::Major)
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Gap {
    /// `critical`, `major` or `minor`.
    pub severity: Severity,
    /// `file:line`, or a file.
    #[serde(default)]
    pub location: String,
    /// What is wrong.
    pub issue: String,
    /// What to do about it.
    #[serde(default)]
    pub suggestion: String,
}

impl Gap {
    /// The file part of `location` (before the first `:`), if any.
    pub fn file(&self) -> Option<&str> {
        let file = self.location.split(':').next().unwrap_or("").trim();
        (!file.is_empty()).then_some(file)
    }
}

/// Scope of a memory update.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryScope {
    /// Injected into every later worker briefing of the run.
    Universal,
    /// Relevant to this task only.
    TaskSpecific,
}

/// A lesson the reviewer wants remembered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MemoryUpdate {
    /// `{text, scope}`.
    Entry {
        /// The lesson.
        text: String,
        /// Where it applies.
        scope: MemoryScope,
    },
    /// Legacy plain string, read as task-specific.
    Legacy(String),
}

impl MemoryUpdate {
    /// The lesson text.
    pub fn text(&self) -> &str {
        match self {
            Self::Entry { text, .. } | Self::Legacy(text) => text,
        }
    }
    /// The scope (legacy strings are task-specific).
    pub fn scope(&self) -> MemoryScope {
        match self {
            Self::Entry { scope, .. } => *scope,
            Self::Legacy(_) => MemoryScope::TaskSpecific,
        }
    }
}
