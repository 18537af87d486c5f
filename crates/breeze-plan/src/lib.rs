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
//!
//! # Modules
//!
//! Each imports only the ones listed before it. The leaves: `id` (task ids), `text`,
//! `commit_type`, `risk`, `shared` (the shared files), `parallelism` (the widest set and
//! the critical path over a conflict graph), `overlap` (glob automata); then `error` (plan
//! errors, warnings, and why an edit is refused), `writeset`, `model` (the [`Plan`]),
//! `conflicts` (every colliding pair, found without comparing all pairs), `contract`;
//! the two forms, `plans_md` and `toml_plan`, read into the model; `load` (a plan file);
//! `analysis` (dependencies, groups, parallelism), `edit` (writing into a plan's text), and
//! `render` (`breeze plan`'s output). This file only names what the crate offers.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod analysis;
mod commit_type;
mod conflicts;
mod contract;
pub mod edit;
mod error;
mod id;
mod load;
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

pub use analysis::{Analysis, Conflict, ConflictReason, MAX_WORKERS, analyze};
pub use commit_type::{CommitType, subject_title};
pub use conflicts::AnalysisStats;
pub use contract::{ContractOptions, MAX_REVIEW_ITERATIONS, sprint_contract};
pub use error::{PlanError, PlanWarning, Problem, ProblemKind};
pub use id::TaskId;
pub use load::{
    load, load_with_extensions, parse_plan_toml, parse_plan_toml_with_extensions, parse_plans_md,
    parse_plans_md_with_archives,
};
pub use model::{Plan, PlanFormat, Task};
pub use parallelism::{EXACT_TASKS, Parallelism};
pub use risk::{RiskFlag, advisor_required, detect as detect_risk};
pub use shared::{SHARED_FILES, SharedFile, SharedFiles};
pub use writeset::{Collision, WriteEntryError, WriteSet};
