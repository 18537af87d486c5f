//! Plan errors (exit 2) and warnings, each naming the file and line, and why an edit of a
//! plan's text is refused.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::id::TaskId;

/// What kind of problem a [`Problem`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProblemKind {
    /// The plan file could not be read.
    Io,
    /// The file is not valid Markdown table / TOML for a plan.
    Syntax,
    /// A key a plan.toml must not have.
    UnknownKey,
    /// A value of the wrong type or out of range.
    InvalidValue,
    /// Two tasks with the same id.
    DuplicateId,
    /// A dependency on a task that does not exist (plan.toml).
    UnknownDependency,
    /// A dependency cycle.
    DependencyCycle,
    /// A write-set entry the planner refuses (absolute, `..`, bad glob, ...).
    BadWriteEntry,
    /// More than one task owns a shared file (`Plans.md`, `CHANGELOG.md`, `spec.md`).
    SharedFileOwners,
}

/// One problem in a plan: where, what, and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The plan file.
    pub file: PathBuf,
    /// 1-based line, when the problem has one.
    pub line: Option<usize>,
    /// The kind of problem.
    pub kind: ProblemKind,
    /// What is wrong.
    pub what: String,
    /// What to write instead.
    pub fix: String,
    /// Every task id involved (all members of a cycle, all holders of a duplicate id).
    pub ids: Vec<TaskId>,
    /// For [`ProblemKind::DependencyCycle`]: one cycle, each task depending on the next;
    /// the first id is not repeated at the end.
    pub cycle: Vec<TaskId>,
}

impl Problem {
    pub(crate) fn new(
        file: &Path,
        line: Option<usize>,
        kind: ProblemKind,
        what: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Problem {
            file: file.to_path_buf(),
            line,
            kind,
            what: what.into(),
            fix: fix.into(),
            ids: Vec::new(),
            cycle: Vec::new(),
        }
    }

    pub(crate) fn with_ids(mut self, ids: Vec<TaskId>) -> Self {
        self.ids = ids;
        self
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {}", self.what)?;
        if !self.fix.is_empty() {
            write!(f, " — {}", self.fix)?;
        }
        Ok(())
    }
}

/// A plan that cannot be run (the `breeze` command exits 2).
///
/// Holds every problem found, not just the first: all duplicate ids, all cycles, all
/// bad write-set entries. Display prints one problem per line as
/// `<file>:<line>: <what> — <what to write instead>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render(.problems))]
pub struct PlanError {
    problems: Vec<Problem>,
}

fn render(problems: &[Problem]) -> String {
    problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
}

impl PlanError {
    /// An error made of these problems (at least one).
    pub fn new(problems: Vec<Problem>) -> Self {
        debug_assert!(!problems.is_empty());
        PlanError { problems }
    }

    pub(crate) fn single(problem: Problem) -> Self {
        PlanError { problems: vec![problem] }
    }

    /// Every problem, in file order where they have lines.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// Whether any problem has this kind.
    pub fn has(&self, kind: ProblemKind) -> bool {
        self.problems.iter().any(|p| p.kind == kind)
    }

    /// The cycles reported, each as a list of ids (each depends on the next).
    pub fn cycles(&self) -> Vec<Vec<TaskId>> {
        self.problems
            .iter()
            .filter(|p| p.kind == ProblemKind::DependencyCycle)
            .map(|p| p.cycle.clone())
            .collect()
    }
}

/// Something odd in the plan that does not stop it from running: an unknown
/// dependency treated as done, a checklist item not scheduled, a misaligned row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanWarning {
    /// The plan file.
    pub file: PathBuf,
    /// 1-based line, when the warning has one.
    pub line: Option<usize>,
    /// What happened and what breeze did about it.
    pub message: String,
}

impl PlanWarning {
    pub(crate) fn new(file: &Path, line: Option<usize>, message: impl Into<String>) -> Self {
        PlanWarning { file: file.to_path_buf(), line, message: message.into() }
    }
}

impl fmt::Display for PlanWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Why breeze will not write an edit of a plan's text (write sets filled in, ids given,
/// tasks appended): it cannot place it, or the result would not read back as asked. The
/// text stays as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EditRefused {
    /// No task of the plan has this id.
    #[error("task `{id}` is not in the plan")]
    NotInPlan {
        /// The id asked for.
        id: String,
    },
    /// The task's line is none of the forms a write set can be written into.
    #[error("task `{id}` (line {line}) is not a table row, heading or list item")]
    NotATaskLine {
        /// The task.
        id: String,
        /// Its line (1-based).
        line: usize,
    },
    /// The task's table row is not under a table header.
    #[error("task `{id}`: the table of line {line} has no header")]
    NoTableHeader {
        /// The task.
        id: String,
        /// Its row's line.
        line: usize,
    },
    /// The header of the task's table is not a task table's.
    #[error("task `{id}`: line {header} is not a task table header")]
    NotATaskHeader {
        /// The task.
        id: String,
        /// The header's line.
        header: usize,
    },
    /// The task's row has another number of cells than its header.
    #[error(
        "task `{id}`: line {line} has {cells} cells where its header has {columns}; align \
         the row, then try again"
    )]
    MisalignedRow {
        /// The task.
        id: String,
        /// Its row's line.
        line: usize,
        /// Cells in the row.
        cells: usize,
        /// Cells in the header.
        columns: usize,
    },
    /// An id written for a to-do item would not be read as its id.
    #[error("line {line}: `{id}` would not be read as the id of `{title}`")]
    IdNotRead {
        /// The item's line.
        line: usize,
        /// The id written.
        id: String,
        /// The item's title.
        title: String,
    },
    /// A task of the plan would be gone after the edit.
    #[error("task `{id}` would be lost")]
    TaskLost {
        /// The task.
        id: String,
    },
    /// A task the edit should leave alone would read back changed.
    #[error("task `{id}` would read back differently")]
    TaskChanged {
        /// The task.
        id: String,
    },
    /// A task the edit should leave alone would read back changed (`line`: where it is).
    #[error("task `{id}` (line {line}) would read back differently")]
    TaskAtLineChanged {
        /// The task.
        id: String,
        /// Its line.
        line: usize,
    },
    /// An appended task is not read back from the result.
    #[error("task `{id}` was not read back")]
    AppendedNotRead {
        /// The task.
        id: String,
    },
    /// An appended task reads back otherwise than it was given.
    #[error("task `{id}` reads back differently")]
    AppendedChanged {
        /// The task.
        id: String,
    },
}
