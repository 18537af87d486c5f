//! What a killed engine left half-done, set right when its run resumes: updates of a
//! checkout of main that a kill cut short are finished or undone before anything looks at
//! the checkout, and tasks that ended landed get the journal events the kill kept them
//! from (`landed`, `task_state landed`), so that everything following the journal
//! (`breeze watch`, `--json` readers, the HTML timeline) sees them land.

use std::collections::{BTreeMap, HashMap};

use breeze_git::{CheckoutUpdate, Oid, Repo};
use breeze_protocol::{EventKind, TaskState};

use super::context::RunContext;
use super::land::{journal_found_landing, read_journal};
use crate::error::EngineError;
use crate::progress::ProgressEvent;
use crate::run_dir::RunDir;
use crate::snapshot::TaskPhase;

/// Finishes or undoes every checkout update the journal records without the `landed`
/// event of its commit: breeze's paths follow the checkout's HEAD, the user's files are
/// kept (see [`Repo::finish_checkout_update`]); then removes what killed landings left in
/// the git folders. Returns what the user should know.
pub(crate) fn finish_checkout_updates(
    repo: &Repo,
    run_dir: &RunDir,
) -> Result<Vec<String>, EngineError> {
    // The last update of each checkout; a landing that followed finished it.
    let mut pending: BTreeMap<String, (String, CheckoutUpdate)> = BTreeMap::new();
    read_journal(run_dir, |event| match event.event {
        EventKind::CheckoutUpdate { task, checkout, from, to, paths } => {
            if let (Ok(from), Ok(to)) = (Oid::from_str(&from), Oid::from_str(&to)) {
                let update = CheckoutUpdate {
                    checkout: checkout.clone().into(),
                    from,
                    to,
                    paths: paths as usize,
                };
                pending.insert(checkout, (task, update));
            }
        }
        EventKind::Landed { commit, .. } | EventKind::MainFollowed { commit, .. } => {
            pending.retain(|_, (_, update)| update.to.to_string() != commit);
        }
        _ => {}
    })?;
    let mut notices = Vec::new();
    for (task, update) in pending.into_values() {
        let recovery = repo.finish_checkout_update(&update)?;
        tracing::info!(
            task,
            checkout = %update.checkout.display(),
            target = %recovery.target,
            rewritten = recovery.rewritten,
            kept = recovery.kept.len(),
            "finished a checkout update a kill cut short"
        );
        if !recovery.kept.is_empty() {
            let paths: Vec<String> = recovery.kept.iter().map(|p| format!("`{p}`")).collect();
            notices.push(format!(
                "the landing of task {task} was cut short while it updated {}; your changes to {} were kept as they are",
                update.checkout.display(),
                paths.join(", ")
            ));
        }
    }
    repo.remove_landing_leftovers()?;
    Ok(notices)
}

/// Journals the landing of every task that ended landed while the journal still shows it
/// elsewhere (its last `task_state` is not `landed`): a landing recognized on main by its
/// trailers, or one the engine was killed in the middle of recording. The `landed` event
/// comes first when it is missing, then one `task_state landed`, as a landing in one
/// piece writes them. Tasks with no state in this journal (on main before the run) are
/// left alone.
pub(super) async fn journal_landings(ctx: &RunContext) -> Result<(), EngineError> {
    let mut last_state: HashMap<String, TaskState> = HashMap::new();
    let mut landed: HashMap<String, String> = HashMap::new();
    read_journal(&ctx.run_dir, |event| match event.event {
        EventKind::TaskState { task, state, .. } => {
            last_state.insert(task, state);
        }
        EventKind::Landed { task, commit, .. } => {
            landed.insert(task, commit);
        }
        _ => {}
    })?;
    let records: Vec<_> = ctx.book.read(|snapshot| {
        snapshot
            .tasks
            .iter()
            .filter(|record| record.phase == TaskPhase::Landed && record.commit.is_some())
            .filter(|record| last_state.get(&record.id).is_some_and(|s| *s != TaskState::Landed))
            .cloned()
            .collect()
    });
    if !records.is_empty() {
        // The landings recognized on main are saved before the journal tells them: the
        // state a later resume reads never lags what the journal says landed.
        ctx.book.update(|_| ()).await?;
    }
    for record in records {
        let Some(commit) = record.commit else { continue };
        if landed.get(&record.id) != Some(&commit.to_string()) {
            journal_found_landing(ctx, &record.id, commit.0).await?;
        }
        ctx.book
            .journal(EventKind::TaskState {
                task: record.id.clone(),
                state: TaskState::Landed,
                reason: None,
                cause: None,
            })
            .await?;
        ctx.book.report(ProgressEvent::TaskFinished {
            id: record.id.clone(),
            state: TaskState::Landed,
            commit: Some(commit.to_string()),
            reason: None,
        });
    }
    Ok(())
}
