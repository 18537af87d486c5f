//! The breeze planner.
//!
//! Reads a plan — a `Plans.md` task table (or its heading form) or a
//! `plan.toml` — into one model, then works out which tasks may run side by side:
//!
//! 1. **Write sets** ([`WriteSet`]): exact files, directories (`src/auth/`) and globs
//!    (`src/**/*.rs`, `*` not crossing `/`).
//! 2. **Conflicts**: two tasks conflict exactly when some path matches both write sets,
//!    or when one may write a file `d` and the other a path under `d/` (a file and a
//!    folder cannot share a name). Glob against glob is decided exactly by a product
//!    search over the globs' DFAs, and every conflict comes with a *witness*: the path, or
//!    which task has the file and which the folder. A task without a write set
//!    conflicts with every task. Pairs whose literal prefixes cannot overlap are never
//!    compared, so large plans analyse in near-linear time.
//! 3. **Write groups**: connected components of the conflict graph (what conflicts,
//!    directly or through others) — reported, not a lane count.
//! 4. **Dependencies**: a DAG checked for cycles (every cycle printed `a -> b -> a`),
//!    with each task's priority (the longest chain of dependents).
//! 5. **Parallelism** ([`Parallelism`]): the widest set of tasks that can run together
//!    (pairwise without conflict or dependency) and the critical path; `workers =
//!    min(max_workers ≤ 3, widest)`.
//!
//! ```
//! use std::path::Path;
//! let text = "\
//! | Task | Content | DoD | Writes | Depends | Status |
//! |------|---------|-----|--------|---------|--------|
//! | 1 | Login API | tests pass | `src/auth/` | - | cc:todo |
//! | 2 | Session store | tests pass | `src/auth/session.rs` | - | cc:todo |
//! | 3 | Docs | page written | `docs/**` | 1 | cc:todo |
//! ";
//! let plan = breeze_plan::parse_plans_md(text, Path::new("Plans.md")).unwrap();
//! let analysis = breeze_plan::analyze(&plan, 3).unwrap();
//! assert_eq!(analysis.groups.len(), 2); // {1, 2} share src/auth/session.rs; {3}
//! // 2 and 3 can run together: 1 conflicts with 2, and 3 waits for 1 to land.
//! assert_eq!(analysis.parallelism.widest, [1, 2]);
//! assert_eq!(analysis.workers, 2);
//! assert!(analysis.conflicts_between(0, 1));
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod analysis;
mod commit_type;
mod conflicts;
mod contract;
pub mod edit;
mod error;
mod id;
mod model;
mod overlap;
mod parallelism;
pub mod plans_md;
pub mod render;
mod risk;
mod shared;
mod text;
mod toml_plan;
mod writeset;

// `crate::fxhash::FxHashMap`/`FxHashSet`: the Fx hash, fast for the small integer keys
// (automaton states, task-index pairs) of the conflict search. No outside party
// chooses those keys, so hash flooding is not a concern.
use rustc_hash as fxhash;

use std::path::Path;

pub use analysis::{Analysis, Conflict, ConflictReason, MAX_WORKERS, analyze};
pub use commit_type::{CommitType, subject_title};
pub use conflicts::AnalysisStats;
pub use contract::{ContractOptions, MAX_REVIEW_ITERATIONS, sprint_contract};
pub use error::{PlanError, PlanWarning, Problem, ProblemKind};
pub use id::TaskId;
pub use model::{Plan, PlanFormat, Task};
pub use parallelism::{EXACT_TASKS, Parallelism};
pub use risk::{RiskFlag, advisor_required, detect as detect_risk};
pub use shared::{SHARED_FILES, SharedFile, SharedFiles};
pub use writeset::{Collision, WriteEntryError, WriteSet};

/// Reads a plan file: `*.toml` as plan.toml, anything else as Plans.md. Extension tables
/// (`[task.<name>]`) are refused; [`load_with_extensions`] accepts named ones.
///
/// Besides parsing, reads the archives a Plans.md points to (a dependency they show done
/// counts as done, see [`parse_plans_md`]) and warns about exact-file entries that name a
/// directory next to the plan (`src/auth` where `src/auth/` was meant), unless the task
/// claims every file in it too (it replaces the folder with a file, which deletes them).
pub fn load(path: &Path) -> Result<Plan, PlanError> {
    load_with_extensions(path, &[])
}

/// [`load`], accepting the plan.toml extension tables `extensions` (kept in
/// [`Plan::extensions`]; any other unknown key is still an error).
pub fn load_with_extensions(path: &Path, extensions: &[&str]) -> Result<Plan, PlanError> {
    let bytes = std::fs::read(path).map_err(|e| {
        PlanError::single(Problem::new(
            path,
            None,
            ProblemKind::Io,
            format!("cannot read the plan: {e}"),
            "check the path; `breeze plan` reads a Plans.md or a plan.toml",
        ))
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        PlanError::single(Problem::new(
            path,
            Some(line),
            ProblemKind::Syntax,
            "the plan is not UTF-8 text",
            "save the file as UTF-8",
        ))
    })?;
    let is_toml = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    let mut plan = if is_toml {
        toml_plan::parse(&text, path, extensions)?
    } else {
        plans_md::parse_with_history(&text, path)?
    };
    if let Some(root) = path.parent() {
        let root = if root.as_os_str().is_empty() { Path::new(".") } else { root };
        for task in &plan.tasks {
            for entry in task.writes.entries() {
                if entry.ends_with('/')
                    || entry.contains(['*', '?', '[', '{'])
                    || !root.join(entry).is_dir()
                {
                    continue;
                }
                // A task may replace the folder with a file only if it claims what the folder
                // holds: deleting those files is a change too.
                let files = files_under(root, entry);
                let unclaimed: Vec<&String> =
                    files.iter().filter(|f| !task.writes.matches(f)).collect();
                if !files.is_empty() && unclaimed.is_empty() {
                    continue;
                }
                let mut message = format!(
                    "task `{}`: `{entry}` is a directory; as written it claims only a file of that name — write `{entry}/` to claim what is inside",
                    task.id
                );
                if let Some(first) = unclaimed.first() {
                    let more = if unclaimed.len() > 1 { ", …" } else { "" };
                    message.push_str(&format!(
                        ", or, to replace the folder with a file, claim its files too (`{first}`{more})"
                    ));
                }
                plan.warnings.push(PlanWarning::new(path, Some(task.line), message));
            }
        }
    }
    Ok(plan)
}

/// The files (and links) under the folder `dir` of `root`, as repository paths (`dir/a`),
/// sorted; `.git` is skipped. At most [`MAX_FILES_LISTED`] are looked at.
fn files_under(root: &Path, dir: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(folder) = pending.pop() {
        let Ok(read) = std::fs::read_dir(root.join(&folder)) else { continue };
        for item in read.flatten() {
            let name = item.file_name().to_string_lossy().into_owned();
            if name == ".git" {
                continue;
            }
            let rel = format!("{folder}/{name}");
            match item.file_type() {
                Ok(kind) if kind.is_dir() => pending.push(rel),
                Ok(_) => found.push(rel),
                Err(_) => {}
            }
            if found.len() >= MAX_FILES_LISTED {
                found.sort();
                return found;
            }
        }
    }
    found.sort();
    found
}

/// How many files of a folder named as a file the plan warning looks at.
const MAX_FILES_LISTED: usize = 10_000;

/// Parses Plans.md text. `path` is only used in messages and [`Plan::path`]; no archive is
/// read, so a dependency on an id the text does not have holds its dependent back
/// ([`Task::blocked`]).
pub fn parse_plans_md(text: &str, path: &Path) -> Result<Plan, PlanError> {
    plans_md::parse(text, path)
}

/// [`parse_plans_md`], reading the archives the plan points to relative to `path`'s folder
/// (as [`load`] does): a dependency they show done counts as done. For a Plans.md whose
/// text was read elsewhere (a run's copy of its plan).
pub fn parse_plans_md_with_archives(text: &str, path: &Path) -> Result<Plan, PlanError> {
    plans_md::parse_with_history(text, path)
}

/// Parses plan.toml text. `path` is only used in messages and [`Plan::path`].
pub fn parse_plan_toml(text: &str, path: &Path) -> Result<Plan, PlanError> {
    toml_plan::parse(text, path, &[])
}

/// [`parse_plan_toml`], accepting the extension tables `extensions`.
pub fn parse_plan_toml_with_extensions(
    text: &str,
    path: &Path,
    extensions: &[&str],
) -> Result<Plan, PlanError> {
    toml_plan::parse(text, path, extensions)
}
