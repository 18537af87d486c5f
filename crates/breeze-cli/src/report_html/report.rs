//! What the page shows: the run's parts read once (from its folder, or built by hand in
//! tests), then read by the page and its drawings.

use std::collections::BTreeMap;
use std::path::PathBuf;

use breeze_engine::snapshot::RunSnapshot;
use breeze_plan::{Analysis, Plan, PlanError};
use breeze_protocol::BreezeStatus;

use super::files::TaskFiles;
use super::timeline::Timeline;
use super::zone::Zone;

/// What the page shows, read from the run folder (or, in tests, built by hand).
pub struct Report<'a> {
    pub(super) snapshot: &'a RunSnapshot,
    pub(super) status: &'a BreezeStatus,
    pub(super) timeline: Timeline,
    /// Why the journal could not be read (the page shows the rest).
    pub(super) journal_problem: Option<String>,
    /// The plan as the run started with it, analysed; or why it could not be read.
    pub(super) plan: Result<(Plan, Analysis), PlanUnreadable>,
    /// Each task's files, by task id.
    pub(super) files: BTreeMap<String, TaskFiles>,
    pub(super) written_at: String,
    /// The reader's time zone: the page's times are local, with their UTC offset.
    pub(super) zone: Zone,
}

/// Why the plan the run started with could not be shown: the page says so where the
/// conflict graph would be.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct PlanUnreadable {
    /// The plan file read (the run's copy, or the plan itself).
    pub path: PathBuf,
    /// What is wrong with it.
    #[source]
    pub source: PlanError,
}
