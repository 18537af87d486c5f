//! Landings in the run's journal: whether a landing's `landed` event is there, and the
//! event of a landing a kill kept out of it (found on the target by its trailers).

use breeze_git::Oid;
use breeze_protocol::{BreezeEvent, EventKind};

use super::target;
use crate::error::EngineError;
use crate::journal::for_each_event;
use crate::run::context::RunContext;
use crate::run_dir::RunDir;

/// Reads the run's journal (none yet: nothing to read).
pub(crate) fn read_journal(
    run_dir: &RunDir,
    visit: impl FnMut(BreezeEvent),
) -> Result<(), EngineError> {
    let path = run_dir.events();
    match for_each_event(&path, visit) {
        Ok(_) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(EngineError::io(format!("cannot read {}", path.display()), err)),
    }
}

/// Whether the journal has the `landed` event of task `task` at `commit` already: a
/// merged pull request a kill kept from being recorded as landed is found merged again on
/// resume, and must not be journaled twice.
pub(crate) fn landing_journaled(
    run_dir: &RunDir,
    task: &str,
    commit: Oid,
) -> Result<bool, EngineError> {
    let commit = commit.to_string();
    let mut found = false;
    read_journal(run_dir, |event| {
        if let EventKind::Landed { task: landed, commit: at, .. } = event.event {
            found |= landed == task && at == commit;
        }
    })?;
    Ok(found)
}

/// Journals the landing of task `task` that a kill kept out of the journal: `commit` is
/// on the target already, on its first parent; the remote branch is named in the remote
/// modes.
pub(crate) async fn journal_found_landing(
    ctx: &RunContext,
    task: &str,
    commit: Oid,
) -> Result<(), EngineError> {
    let previous = ctx.git(move |repo| repo.first_parent(commit)).await?;
    let target = ctx.config.land.is_remote().then(|| target::remote_branch(ctx).to_string());
    ctx.book
        .journal(EventKind::Landed {
            task: task.to_string(),
            commit: commit.to_string(),
            previous_main: previous.map(|oid| oid.to_string()).unwrap_or_default(),
            target,
        })
        .await
}
