//! The plan model both formats parse into.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::commit_type::CommitType;
use crate::error::PlanWarning;
use crate::id::TaskId;
use crate::risk::RiskFlag;
use crate::shared::SharedFiles;
use crate::writeset::WriteSet;

/// Which file format a plan came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlanFormat {
    /// The original harness's Plans.md task table (or heading form).
    PlansMd,
    /// `plan.toml` with `[[task]]` tables.
    Toml,
}

impl PlanFormat {
    /// `plans-md` or `toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanFormat::PlansMd => "plans-md",
            PlanFormat::Toml => "toml",
        }
    }
}

/// A parsed plan: the tasks still to run, and what is already done.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The plan file as given.
    pub path: PathBuf,
    /// Its format.
    pub format: PlanFormat,
    /// The tasks to do, in file order: runnable ones, and those held back by a dependency
    /// on an id the plan does not have ([`Task::blocked`]; a run blocks them with that
    /// reason).
    pub tasks: Vec<Task>,
    /// Done tasks and archived ids (dependencies a Plans.md's archives show done): they
    /// satisfy dependencies.
    pub done: BTreeSet<TaskId>,
    /// Tasks not scheduled because they are marked blocked (or have a status breeze
    /// does not know), and tasks that depend on them.
    pub blocked: BTreeSet<TaskId>,
    /// Things breeze read around: unknown dependencies treated as done, checklist items
    /// not scheduled, misaligned rows, blocked tasks.
    pub warnings: Vec<PlanWarning>,
    /// Extension tables of plan.toml tasks (`[task.<name>]`, as JSON) for the names the
    /// caller accepted; the planner does not interpret them. The engine accepts `sim`, the
    /// scripted simulator's steering.
    pub extensions: BTreeMap<TaskId, BTreeMap<String, serde_json::Value>>,
    /// Lines of to-do items written without a task id (Plans.md): `breeze plan --fill-ids`
    /// numbers them, and `breeze run` refuses to start until it has.
    pub unnumbered: Vec<usize>,
    /// Tasks to do that the branch work lands on already has (found by their trailers by a
    /// caller that knows the repository): a run does not run them again, and `breeze plan`
    /// counts them apart. Empty when read.
    pub on_main: BTreeSet<TaskId>,
    /// The files at most one task may own, else only the Lead writes them: the standard
    /// names when read ([`SharedFiles::default`]); a caller that knows the repository sets
    /// its own (its changelog's name, which files it has).
    pub shared_files: SharedFiles,
}

impl Plan {
    /// Task `id`'s extension table `name`, if the plan has one.
    pub fn extension(&self, id: &TaskId, name: &str) -> Option<&serde_json::Value> {
        self.extensions.get(id)?.get(name)
    }

    /// The index in [`Plan::tasks`] of the task with this id.
    pub fn index_of(&self, id: &TaskId) -> Option<usize> {
        self.tasks.iter().position(|t| &t.id == id)
    }

    /// The task to do with this id.
    pub fn task(&self, id: &TaskId) -> Option<&Task> {
        self.tasks.iter().find(|t| &t.id == id)
    }

    /// How many tasks can run: those not held back ([`Task::blocked`]).
    pub fn runnable_count(&self) -> usize {
        self.tasks.iter().filter(|t| t.blocked.is_none()).count()
    }

    /// How many tasks cannot run: blocked in the plan, or held back by a dependency.
    pub fn blocked_count(&self) -> usize {
        self.blocked.len() + self.tasks.len() - self.runnable_count()
    }

    /// Every id the plan names: tasks to do, done and blocked ones.
    pub fn ids(&self) -> BTreeSet<TaskId> {
        let tasks = self.tasks.iter().map(|t| t.id.clone());
        tasks.chain(self.done.iter().cloned()).chain(self.blocked.iter().cloned()).collect()
    }
}

/// One runnable task.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// Its id.
    pub id: TaskId,
    /// Title (the Plans.md content cell); HTML comments removed.
    pub title: String,
    /// Definition of done, as written.
    pub dod: String,
    /// The paths it may change; empty = not declared (runs alone).
    pub writes: WriteSet,
    /// Runnable tasks it depends on: phases and id prefixes expanded, done and archived
    /// ids removed. In id order.
    pub depends_on: Vec<TaskId>,
    /// Explicit and detected risk flags, deduplicated, in [`RiskFlag::ALL`] order.
    pub risk: Vec<RiskFlag>,
    /// `<!-- advisor:required -->` (or `advisor_required = true` in plan.toml).
    pub advisor_required: bool,
    /// The status marker as written, e.g. `cc:TODO`; `None` in plan.toml.
    pub marker: Option<String>,
    /// 1-based line in the plan file.
    pub line: usize,
    /// Why the task cannot run although it is to do — it depends on an id the plan does not
    /// have (`depends on `X`, which is not in the plan`), or on a task held back so — or
    /// `None`. A run blocks it with this reason; every other task goes on.
    pub blocked: Option<String>,
    /// The type of its landing commit as the plan writes it (`type = "fix"`, a `[fix]` tag,
    /// a `fix:` title); `None`: inferred at landing from the paths it changed.
    pub commit_type: Option<CommitType>,
}

impl Task {
    /// Whether the task must consult the Advisor before its first attempt.
    pub fn is_high_risk(&self) -> bool {
        self.advisor_required || !self.risk.is_empty()
    }
}
