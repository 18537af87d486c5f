//! The dispatcher: asks the scheduler what may start, starts a task driver per task on a
//! lane, and records how each task leaves its lane — until every task is done, or the run
//! stops.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;

use breeze_protocol::EventKind;

use super::book::Transition;
use super::context::RunContext;
use super::driver::{TaskDriver, TaskExit};
use super::schedule::{Busy, LanePool, Scheduler, lane_holding};
use crate::error::EngineError;
use crate::progress::ProgressEvent;
use crate::snapshot::TaskPhase;

/// How long a deferred landing waits before it is tried again.
const DEFERRED_RETRY: Duration = Duration::from_secs(2);
/// How often decisions about tasks awaiting approval are looked for.
const DECISION_POLL: Duration = Duration::from_millis(500);

/// How the dispatch loop ended.
pub(crate) enum DispatchEnd {
    /// Every task reached a final state.
    Finished,
    /// Stopped early; `breeze resume` continues. The reason is shown to the user.
    Interrupted(String),
}

/// What the dispatcher must do after a task left its lane.
enum ExitEffect {
    /// Nothing more: the task's phase says it all.
    Settled,
    /// Its landing waits: retry it later.
    Deferred,
    /// Its landing waits for a person.
    Awaiting,
    /// Something every task would hit: stop the run resumably.
    Fatal(String),
}

type Joined = (usize, u32, Result<TaskExit, EngineError>);

/// The dispatch loop's state.
pub(crate) struct Dispatcher {
    ctx: Arc<RunContext>,
    lanes: LanePool,
    running: JoinSet<Joined>,
    in_flight: BTreeSet<usize>,
    /// Deferred landings and when each is tried again.
    deferred: BTreeMap<usize, Instant>,
    /// Reviewed tasks waiting for a person's approval.
    awaiting: BTreeSet<usize>,
    /// The one last try of every deferred landing when nothing else can move was made.
    idle_retry_done: bool,
    fatal: Option<String>,
    /// The run reached its budget: no task starts, the running ones finish their step.
    budget_told: bool,
}

impl Dispatcher {
    pub fn new(ctx: Arc<RunContext>) -> Dispatcher {
        let workers = ctx.book.read(|snapshot| snapshot.workers);
        let phases = ctx.book.phases();
        let with = |wanted: TaskPhase| {
            phases.iter().enumerate().filter(move |(_, phase)| **phase == wanted).map(|(i, _)| i)
        };
        let deferred = with(TaskPhase::Deferred).map(|index| (index, Instant::now())).collect();
        let awaiting = with(TaskPhase::AwaitingApproval).collect();
        Dispatcher {
            ctx,
            lanes: LanePool::new(workers),
            running: JoinSet::new(),
            in_flight: BTreeSet::new(),
            deferred,
            awaiting,
            idle_retry_done: false,
            fatal: None,
            budget_told: false,
        }
    }

    /// Runs every task to a final state, or until the run stops.
    pub async fn run(mut self) -> Result<DispatchEnd, EngineError> {
        loop {
            if self.ctx.cancel.is_cancelled() || self.fatal.is_some() {
                return self.shut_down().await;
            }
            self.take_decisions().await?;
            self.block_unreachable().await?;
            if self.budget_allows() {
                self.fill_lanes();
            }
            if self.running.is_empty() {
                if let Some(end) = self.when_idle().await? {
                    return Ok(end);
                }
                continue;
            }
            let next_due = self.deferred.values().min().copied();
            tokio::select! {
                joined = self.running.join_next() => {
                    if let Some(joined) = joined {
                        let joined = joined.map_err(EngineError::internal("running a task"))?;
                        self.on_exit(joined).await?;
                    }
                }
                () = sleep_until(next_due), if next_due.is_some() => {}
                () = tokio::time::sleep(DECISION_POLL), if !self.awaiting.is_empty() => {}
                () = self.ctx.cancel.cancelled() => {}
            }
        }
    }

    /// Starts tasks on free lanes: due deferred landings first, then what the scheduler
    /// says is ready.
    fn fill_lanes(&mut self) {
        while self.lanes.has_free() {
            let Some(index) = self.next_task() else { break };
            let branch = self.ctx.book.record(index).branch;
            let held: Vec<Option<String>> = self
                .ctx
                .lanes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .map(|lane| lane.as_ref().map(|wt| wt.branch.clone()))
                .collect();
            let Some(lane) = self.lanes.take(lane_holding(branch.as_deref(), &held)) else { break };
            self.start(index, lane);
        }
    }

    fn next_task(&self) -> Option<usize> {
        let now = Instant::now();
        if let Some((&index, _)) = self.deferred.iter().find(|(_, due)| **due <= now) {
            return Some(index);
        }
        // Tasks waiting to land keep conflicting tasks out, whatever they wait for.
        let deferred: BTreeSet<usize> =
            self.deferred.keys().chain(&self.awaiting).copied().collect();
        let phases = self.ctx.book.phases();
        Scheduler::new(&self.ctx.plan, &self.ctx.analysis)
            .with_widened(self.ctx.write_sets.widened())
            .next_ready(&phases, Busy { in_flight: &self.in_flight, deferred: &deferred })
    }

    fn start(&mut self, index: usize, lane: u32) {
        self.in_flight.insert(index);
        self.deferred.remove(&index);
        let task = self.ctx.task(index);
        // One line per event: a title written over several lines shows its first.
        let title = task.title.lines().next().unwrap_or_default().to_string();
        self.ctx.book.store().record_later(EventKind::TaskStarted {
            task: task.id.to_string(),
            title: title.clone(),
            lane,
        });
        self.ctx.book.report(ProgressEvent::TaskStarted { id: task.id.to_string(), title, lane });
        let ctx = self.ctx.clone();
        self.running.spawn(async move {
            let exit = match TaskDriver::new(ctx.clone(), index, lane).run().await {
                // Whatever broke off because the run is stopping resumes later.
                Err(_) if ctx.cancel.is_cancelled() => Ok(TaskExit::Interrupted),
                exit => exit,
            };
            (index, lane, exit)
        });
    }

    /// Nothing runs: the run is over, or the deferred landings get one last try, or what
    /// is left waits on something that will never land.
    async fn when_idle(&mut self) -> Result<Option<DispatchEnd>, EngineError> {
        let phases = self.ctx.book.phases();
        if phases.iter().all(|phase| phase.is_terminal()) {
            return Ok(Some(DispatchEnd::Finished));
        }
        if let Some(over) = self.ctx.roles.budget.run_reached() {
            return Ok(Some(DispatchEnd::Interrupted(over.reason())));
        }
        if !self.deferred.is_empty() {
            if self.idle_retry_done {
                return Ok(Some(DispatchEnd::Interrupted(self.deferred_reason())));
            }
            self.idle_retry_done = true;
            for due in self.deferred.values_mut() {
                *due = Instant::now();
            }
            return Ok(None);
        }
        if !self.awaiting.is_empty() {
            return Ok(Some(DispatchEnd::Interrupted(self.awaiting_reason())));
        }
        let stuck = Scheduler::new(&self.ctx.plan, &self.ctx.analysis).stuck(&phases);
        for index in stuck {
            let reason = "a dependency never landed".to_string();
            self.ctx.book.transition(index, Transition::Block { reason }).await?;
        }
        Ok(Some(DispatchEnd::Finished))
    }

    /// Whether the run's budget lets tasks start; the first time it does not, the user is
    /// told that the tasks at work finish their current step and the run then stops.
    fn budget_allows(&mut self) -> bool {
        let Some(over) = self.ctx.roles.budget.run_reached() else { return true };
        if !self.budget_told {
            self.budget_told = true;
            self.ctx.book.report(ProgressEvent::Notice {
                message: format!(
                    "{over}: no new role call starts; tasks at work stop before their next one (a landing finishes), then the run stops"
                ),
            });
        }
        false
    }

    async fn block_unreachable(&self) -> Result<(), EngineError> {
        let phases = self.ctx.book.phases();
        let unreachable = Scheduler::new(&self.ctx.plan, &self.ctx.analysis).unreachable(&phases);
        for (index, reason) in unreachable {
            self.ctx.book.transition(index, Transition::Block { reason }).await?;
        }
        Ok(())
    }

    /// A task left its lane: the lane goes back to the pool and its exit is recorded.
    async fn on_exit(&mut self, (index, lane, exit): Joined) -> Result<(), EngineError> {
        self.in_flight.remove(&index);
        self.lanes.give_back(lane);
        // Only real progress earns the deferred landings another last try.
        if !matches!(exit, Ok(TaskExit::Deferred(_))) {
            self.idle_retry_done = false;
        }
        match self.record_exit(index, exit).await? {
            ExitEffect::Deferred => {
                self.deferred.insert(index, Instant::now() + DEFERRED_RETRY);
            }
            ExitEffect::Awaiting => {
                self.awaiting.insert(index);
            }
            ExitEffect::Fatal(reason) => {
                self.fatal = Some(reason);
                self.ctx.cancel.cancel();
            }
            ExitEffect::Settled => {}
        }
        Ok(())
    }

    /// Records how a task left its lane.
    async fn record_exit(
        &self,
        index: usize,
        exit: Result<TaskExit, EngineError>,
    ) -> Result<ExitEffect, EngineError> {
        let book = &self.ctx.book;
        match exit {
            Ok(TaskExit::Landed { commit }) => {
                book.transition(index, Transition::Land { commit }).await?;
                Ok(ExitEffect::Settled)
            }
            Ok(TaskExit::Escalated(reason)) => {
                book.transition(index, Transition::Escalate { reason }).await?;
                Ok(ExitEffect::Settled)
            }
            Ok(TaskExit::Deferred(reason)) => {
                book.transition(index, Transition::Defer { reason }).await?;
                Ok(ExitEffect::Deferred)
            }
            Ok(TaskExit::AwaitingApproval(reason)) => {
                book.transition(index, Transition::AwaitApproval { reason }).await?;
                Ok(ExitEffect::Awaiting)
            }
            Ok(TaskExit::Interrupted) => {
                if !book.record(index).phase.is_terminal() {
                    let reason = "interrupted; `breeze resume` continues".to_string();
                    book.transition(index, Transition::Stop { reason }).await?;
                }
                Ok(ExitEffect::Settled)
            }
            Err(EngineError::OverBudget(over)) if over.stops_the_run() => {
                // The dispatcher stops the run once the tasks at work are done.
                book.transition(index, Transition::Stop { reason: over.reason() }).await?;
                Ok(ExitEffect::Settled)
            }
            Err(EngineError::OverBudget(over)) => {
                book.transition(index, Transition::Escalate { reason: over.reason() }).await?;
                Ok(ExitEffect::Settled)
            }
            Err(err) if err.stops_the_run() => {
                // Resumable: the task starts again once the user has acted.
                let message = err.to_string();
                book.transition(index, Transition::Stop { reason: message.clone() }).await?;
                Ok(ExitEffect::Fatal(format!("{message}; {}", next_step(&err))))
            }
            Err(err) => {
                book.transition(index, Transition::Fail { reason: err.to_string() }).await?;
                Ok(ExitEffect::Settled)
            }
        }
    }

    /// Stopping: role processes get SIGTERM through the shared token; every task records
    /// where it stopped.
    async fn shut_down(mut self) -> Result<DispatchEnd, EngineError> {
        while let Some(joined) = self.running.join_next().await {
            if let Ok((index, _, exit)) = joined
                && let ExitEffect::Fatal(reason) = self.record_exit(index, exit).await?
            {
                self.fatal.get_or_insert(reason);
            }
        }
        Ok(DispatchEnd::Interrupted(self.fatal.unwrap_or_else(|| "interrupted".into())))
    }

    /// Acts on what people decided about tasks awaiting approval: an approved task lands
    /// next (without a review round more); a rejected one goes back to its worker with the
    /// note as a critical finding.
    async fn take_decisions(&mut self) -> Result<(), EngineError> {
        for index in self.awaiting.clone() {
            let id = self.ctx.task(index).id.to_string();
            let Some(decision) = crate::decision::take(&self.ctx.run_dir, &id) else { continue };
            self.awaiting.remove(&index);
            let book = &self.ctx.book;
            match decision {
                crate::decision::HumanDecision::Approve => {
                    book.change(index, |record| record.human_approved = true).await?;
                    book.transition(index, Transition::Approve).await?;
                    self.deferred.insert(index, Instant::now());
                }
                crate::decision::HumanDecision::Reject { note } => {
                    book.change(index, |record| {
                        record.human_approved = false;
                        record.feedback = Some(breeze_protocol::ReviewFeedback {
                            round: record.rounds,
                            gaps: vec![breeze_protocol::Gap {
                                severity: breeze_protocol::Severity::Critical,
                                location: String::new(),
                                issue: format!("rejected by a person before landing: {note}"),
                                suggestion: String::new(),
                            }],
                        });
                    })
                    .await?;
                    book.transition(index, Transition::Work).await?;
                }
            }
        }
        Ok(())
    }

    fn awaiting_reason(&self) -> String {
        let ids: Vec<String> =
            self.awaiting.iter().map(|&index| self.ctx.task(index).id.to_string()).collect();
        format!(
            "{} task(s) await approval ({}): `breeze approve ID` lets one land, `breeze reject ID --note \"…\"` sends it back; then `breeze resume`",
            ids.len(),
            ids.join(", ")
        )
    }

    fn deferred_reason(&self) -> String {
        self.ctx.book.read(|snapshot| {
            self.deferred
                .keys()
                .map(|&index| {
                    format!(
                        "task {} is approved but cannot land: {}",
                        self.ctx.task(index).id,
                        snapshot.tasks[index].reason.clone().unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
    }
}

/// What to do after an error that stops the run.
fn next_step(err: &EngineError) -> String {
    let hint = err.hints().join("; ");
    if hint.contains("breeze resume") {
        hint
    } else if hint.is_empty() {
        "then run `breeze resume`".to_string()
    } else {
        format!("{hint}, then run `breeze resume`")
    }
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}
