//! The dispatcher: asks the scheduler what may start, starts a task driver per task on a
//! lane, and records how each task leaves its lane — until every task is done, or the run
//! stops.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;

use breeze_protocol::{Cause, CauseKind, EventKind, WaitingFor};

use super::book::Transition;
use super::context::RunContext;
use super::land::{BatchEnd, LandMode, Landing, LandingQueue, Settled};
use super::schedule::{Busy, LanePool, Scheduler, lane_holding};
use super::task::{TaskDriver, TaskExit, exit_after_landing};
use super::waiting::Waiting;
use crate::error::EngineError;
use crate::progress::ProgressEvent;
use crate::snapshot::TaskPhase;

/// How long a deferred landing waits before it is tried again.
const DEFERRED_RETRY: Duration = Duration::from_secs(2);
/// How long a deferred landing waits before it is tried again once the run only waits
/// (`--wait`): the user's checkout changes at a person's pace.
const WAITING_DEFERRED_RETRY: Duration = Duration::from_secs(10);
/// How often decisions about tasks awaiting approval, and requests to attach to a task no
/// driver holds, are looked for.
const DECISION_POLL: Duration = Duration::from_millis(500);

/// How the dispatch loop ended.
pub(crate) enum DispatchEnd {
    /// Every task reached a final state.
    Finished,
    /// Stopped early; `breeze resume` continues. The reason is shown to the user.
    Interrupted(String),
    /// Stopped while every unfinished task waits for a person or a forge; `breeze resume`
    /// continues once they have decided. The reason says what for.
    Waiting(String),
}

/// What the dispatcher must do after a task left its lane.
enum ExitEffect {
    /// Nothing more: the task's phase says it all.
    Settled,
    /// Its landing waits: retry it later.
    Deferred,
    /// Its landing waits for a person.
    Awaiting,
    /// It waits in the landing queue.
    Queued,
    /// Published where the target takes it in later: followed until it lands.
    Published,
    /// Something every task would hit: stop the run resumably.
    Fatal(String),
}

type Joined = (usize, u32, Result<TaskExit, EngineError>);

/// The dispatch loop's state.
pub(crate) struct Dispatcher {
    ctx: Arc<RunContext>,
    /// Where and how approved tasks land.
    land: Arc<dyn LandMode>,
    lanes: LanePool,
    running: JoinSet<Joined>,
    in_flight: BTreeSet<usize>,
    /// Deferred landings and when each is tried again.
    deferred: BTreeMap<usize, Instant>,
    /// Reviewed tasks waiting for a person's approval.
    awaiting: BTreeSet<usize>,
    /// Approved tasks waiting to land, and the ones landing (a batch, a speculative train).
    queue: LandingQueue,
    /// Tasks published where the target takes them in later (pull requests).
    published: BTreeSet<usize>,
    /// When the published landings are looked for on the target next.
    next_follow: Option<Instant>,
    /// Why the target could not be looked at, the last time it could not.
    unreachable: Option<String>,
    /// The one last try of every deferred landing when nothing else can move was made.
    idle_retry_done: bool,
    /// The one last look at the published landings when nothing else can move was made.
    idle_follow_done: bool,
    fatal: Option<String>,
    /// The run reached its budget: no task starts, the running ones finish their step.
    budget_told: bool,
    /// Whether the run waits for people and forges (`--wait`), and what it said it waits for.
    waiting: Waiting,
}

impl Dispatcher {
    pub fn new(ctx: Arc<RunContext>, land: Arc<dyn LandMode>) -> Dispatcher {
        let workers = ctx.book.read(|snapshot| snapshot.workers);
        let phases = ctx.book.phases();
        let with = |wanted: TaskPhase| {
            phases.iter().enumerate().filter(move |(_, phase)| **phase == wanted).map(|(i, _)| i)
        };
        let deferred = with(TaskPhase::Deferred).map(|index| (index, Instant::now())).collect();
        let awaiting = with(TaskPhase::AwaitingApproval).collect();
        let published: BTreeSet<usize> = with(TaskPhase::PrOpen).collect();
        // A resumed run looks for landings taken in while no engine ran, first thing.
        let next_follow = (!published.is_empty()).then(Instant::now);
        // An approved task of a resumed run waits in the landing queue, as it did before the
        // stop: it takes no lane (the lanes go to the tasks at work, each to the one holding
        // its branch).
        let mut queue = LandingQueue::default();
        for index in with(TaskPhase::Approved) {
            queue.push(index);
        }
        Dispatcher {
            ctx,
            land,
            lanes: LanePool::new(workers),
            running: JoinSet::new(),
            in_flight: BTreeSet::new(),
            deferred,
            awaiting,
            queue,
            published,
            next_follow,
            unreachable: None,
            idle_retry_done: false,
            idle_follow_done: false,
            fatal: None,
            budget_told: false,
            waiting: Waiting::off(),
        }
    }

    /// Journals `landing` for each approved task a resumed run starts with in its landing
    /// queue. A task's approval is saved in the run's state before it is journaled: a kill
    /// between the two left the journal without the task's `landing`, and the journal must
    /// tell every landing (a task that already had it gets it again, for this run).
    async fn journal_resumed_landings(&self) -> Result<(), EngineError> {
        let approved: Vec<String> = self.ctx.book.read(|snapshot| {
            let tasks = snapshot.tasks.iter();
            tasks.filter(|task| task.phase == TaskPhase::Approved).map(|t| t.id.clone()).collect()
        });
        for task in approved {
            let state = TaskPhase::Approved.visible(true);
            let event = EventKind::TaskState { task, state, reason: None, cause: None };
            self.ctx.book.journal(event).await?;
        }
        Ok(())
    }

    /// `--wait`: when only people and forges can move the run, it waits for them (decisions
    /// taken up as they are left, pull requests followed, deferred landings tried again)
    /// rather than stopping.
    pub fn waiting_for_people(mut self, wait: bool) -> Dispatcher {
        if wait {
            self.waiting = Waiting::on(&self.ctx);
        }
        self
    }

    /// Runs every task to a final state, or until the run stops.
    pub async fn run(mut self) -> Result<DispatchEnd, EngineError> {
        self.journal_resumed_landings().await?;
        loop {
            if self.ctx.cancel.is_cancelled() || self.fatal.is_some() {
                return self.shut_down().await;
            }
            self.waiting.prune(&self.ctx);
            self.take_decisions().await?;
            self.take_attach_requests().await?;
            self.block_unreachable().await?;
            if self.budget_allows() {
                self.fill_lanes();
            }
            if !self.approved_in_flight() {
                self.queue.start(&self.ctx, &self.land);
            }
            if self.running.is_empty() && !self.queue.is_landing() {
                if let Some(end) = self.when_idle().await? {
                    return Ok(end);
                }
                continue;
            }
            let next_due = self.deferred.values().min().copied();
            let next_follow = self.next_follow.filter(|_| !self.published.is_empty());
            tokio::select! {
                joined = self.running.join_next(), if !self.running.is_empty() => {
                    if let Some(joined) = joined {
                        let joined = joined.map_err(EngineError::internal("running a task"))?;
                        self.on_exit(joined).await?;
                    }
                }
                (batch, end) = self.queue.landed(), if self.queue.is_landing() => {
                    self.on_batch(batch, end).await?;
                }
                () = sleep_until(next_due), if next_due.is_some() => {}
                () = sleep_until(next_follow), if next_follow.is_some() => {
                    self.follow().await?;
                }
                // Decisions, and attach requests for tasks no driver holds.
                () = self.waiting.decision_left() => {}
                () = tokio::time::sleep(DECISION_POLL) => {}
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
            let reserved = self.lanes_kept_for_others(index, &held);
            let preferred = lane_holding(branch.as_deref(), &held);
            let Some(lane) = self.lanes.take(preferred, &reserved) else { break };
            self.start(index, lane);
        }
    }

    /// The lanes whose worktree holds the branch of a task other than `index` that will work
    /// on it again (a resumed run's interrupted attempts): a task of its own is started
    /// elsewhere when it can be, so that the lane's task finds its work where it left it.
    fn lanes_kept_for_others(&self, index: usize, held: &[Option<String>]) -> Vec<u32> {
        if held.iter().flatten().all(|branch| branch.is_empty()) {
            return Vec::new();
        }
        let working: BTreeSet<String> = self.ctx.book.read(|snapshot| {
            snapshot
                .tasks
                .iter()
                .enumerate()
                .filter(|(other, task)| {
                    *other != index && !task.phase.is_terminal() && !task.phase.waits_to_land()
                })
                .filter_map(|(_, task)| task.branch.clone())
                .collect()
        });
        (1..)
            .zip(held)
            .filter(|(_, branch)| branch.as_ref().is_some_and(|branch| working.contains(branch)))
            .map(|(lane, _)| lane)
            .collect()
    }

    fn next_task(&self) -> Option<usize> {
        let now = Instant::now();
        if let Some((&index, _)) = self.deferred.iter().find(|(_, due)| **due <= now) {
            return Some(index);
        }
        // Tasks waiting to land keep conflicting tasks out, whatever they wait for.
        let deferred: BTreeSet<usize> = self
            .deferred
            .keys()
            .chain(&self.awaiting)
            .chain(&self.published)
            .copied()
            .chain(self.queue.tasks())
            .collect();
        let phases = self.ctx.book.phases();
        Scheduler::new(&self.ctx.plan, &self.ctx.analysis)
            .with_widened(self.ctx.write_sets.widened())
            .with_stacking(self.ctx.config.land.stack)
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
        let (ctx, land) = (self.ctx.clone(), self.land.clone());
        self.running.spawn(async move {
            let exit = match TaskDriver::new(ctx.clone(), land, index, lane).run().await {
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
            return Ok(Some(DispatchEnd::Interrupted(over.cause().line())));
        }
        if !self.published.is_empty() && !self.idle_follow_done {
            // One last look: a landing taken in meanwhile lets its dependents start.
            self.idle_follow_done = true;
            self.follow().await?;
            return Ok(None);
        }
        if !self.deferred.is_empty() {
            if self.idle_retry_done {
                return self.stop_or_wait().await;
            }
            self.idle_retry_done = true;
            for due in self.deferred.values_mut() {
                *due = Instant::now();
            }
            return Ok(None);
        }
        if self.waiting_reason().is_some() {
            return self.stop_or_wait().await;
        }
        let stuck = Scheduler::new(&self.ctx.plan, &self.ctx.analysis).stuck(&phases);
        for index in stuck {
            let cause = Cause::new(CauseKind::Dependency, "a dependency never landed");
            self.ctx.book.transition(index, Transition::Block { cause }).await?;
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
            let cause = Cause::new(CauseKind::Dependency, reason);
            self.ctx.book.transition(index, Transition::Block { cause }).await?;
        }
        Ok(())
    }

    /// A task left its lane: the lane goes back to the pool and its exit is recorded.
    async fn on_exit(&mut self, (index, lane, exit): Joined) -> Result<(), EngineError> {
        self.in_flight.remove(&index);
        self.lanes.give_back(lane);
        // Only real progress earns the deferred landings another last try (a task joining
        // the landing queue is none yet: its landing is).
        if !matches!(exit, Ok(TaskExit::Deferred(_) | TaskExit::QueuedToLand)) {
            self.idle_retry_done = false;
        }
        self.idle_follow_done = false;
        self.apply(index, exit).await
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
            Ok(TaskExit::Escalated(cause)) => {
                book.transition(index, Transition::Escalate { cause }).await?;
                Ok(ExitEffect::Settled)
            }
            Ok(TaskExit::Deferred(cause)) => {
                book.transition(index, Transition::Defer { cause }).await?;
                Ok(ExitEffect::Deferred)
            }
            Ok(TaskExit::AwaitingApproval(cause)) => {
                book.transition(index, Transition::AwaitApproval { cause }).await?;
                Ok(ExitEffect::Awaiting)
            }
            Ok(TaskExit::QueuedToLand) => Ok(ExitEffect::Queued),
            Ok(TaskExit::Published(cause)) => {
                book.transition(index, Transition::Publish { cause }).await?;
                Ok(ExitEffect::Published)
            }
            Ok(TaskExit::Interrupted) => {
                if !book.record(index).phase.is_terminal() {
                    let cause =
                        Cause::new(CauseKind::Stopped, "interrupted; `breeze resume` continues");
                    book.transition(index, Transition::Stop { cause }).await?;
                }
                Ok(ExitEffect::Settled)
            }
            Err(EngineError::OverBudget(over)) if over.stops_the_run() => {
                // The dispatcher stops the run once the tasks at work are done.
                book.transition(index, Transition::Stop { cause: over.cause() }).await?;
                Ok(ExitEffect::Settled)
            }
            Err(EngineError::OverBudget(over)) => {
                book.transition(index, Transition::Escalate { cause: over.cause() }).await?;
                Ok(ExitEffect::Settled)
            }
            Err(err) if err.stops_the_run() => {
                // Resumable: the task starts again once the user has acted.
                let message = err.to_string();
                let cause = Cause::new(CauseKind::Stopped, message.clone());
                book.transition(index, Transition::Stop { cause }).await?;
                Ok(ExitEffect::Fatal(format!("{message}; {}", next_step(&err))))
            }
            Err(err) => {
                let cause = error_cause(&err);
                book.transition(index, Transition::Fail { cause }).await?;
                Ok(ExitEffect::Settled)
            }
        }
    }

    /// Whether a task on a lane is approved and about to join the landing queue: the next
    /// batch waits for it (it costs nothing — the task leaves its lane at once), so that
    /// tasks approved together land together.
    fn approved_in_flight(&self) -> bool {
        let phases = self.ctx.book.phases();
        self.in_flight
            .iter()
            .any(|&index| matches!(phases[index], TaskPhase::Approved | TaskPhase::Deferred))
    }

    /// A batch ended: each of its tasks is recorded as if it left a lane; those it did not
    /// judge are back in the queue.
    async fn on_batch(&mut self, batch: Vec<usize>, end: BatchEnd) -> Result<(), EngineError> {
        let settled = match end {
            Ok(settled) => settled,
            Err(err) => {
                // Whatever broke off because the run is stopping resumes later.
                if self.ctx.cancel.is_cancelled() {
                    for index in batch {
                        self.apply(index, Ok(TaskExit::Interrupted)).await?;
                    }
                    return Ok(());
                }
                let reason = err.to_string();
                let stops = err.stops_the_run();
                let next = next_step(&err);
                for index in batch {
                    let book = &self.ctx.book;
                    if stops {
                        let cause = Cause::new(CauseKind::Stopped, reason.clone());
                        book.transition(index, Transition::Stop { cause }).await?;
                    } else {
                        book.transition(index, Transition::Fail { cause: error_cause(&err) })
                            .await?;
                    }
                }
                if stops {
                    self.fatal = Some(format!("{reason}; {next}"));
                    self.ctx.cancel.cancel();
                }
                return Ok(());
            }
        };
        for (index, outcome) in settled {
            // Only real progress earns the deferred landings another last try.
            if !matches!(outcome, Settled::Again | Settled::Landing(Landing::Deferred { .. })) {
                self.idle_retry_done = false;
            }
            let exit = match outcome {
                Settled::Again => continue,
                Settled::Landing(landing) => {
                    match exit_after_landing(&self.ctx, index, landing).await? {
                        Some(exit) => exit,
                        // Back to work: the scheduler starts it again on a lane.
                        None => continue,
                    }
                }
            };
            self.apply(index, Ok(exit)).await?;
        }
        Ok(())
    }

    /// Records how a task left its lane or the landing queue, and what follows.
    async fn apply(
        &mut self,
        index: usize,
        exit: Result<TaskExit, EngineError>,
    ) -> Result<(), EngineError> {
        match self.record_exit(index, exit).await? {
            ExitEffect::Deferred => {
                self.deferred.insert(index, Instant::now() + self.deferred_retry());
            }
            ExitEffect::Awaiting => {
                self.awaiting.insert(index);
            }
            ExitEffect::Queued => self.queue.push(index),
            ExitEffect::Published => {
                self.published.insert(index);
                if let Some(every) = self.land.follow_every() {
                    self.next_follow.get_or_insert(Instant::now() + every);
                }
            }
            ExitEffect::Fatal(reason) => {
                self.fatal = Some(reason);
                self.ctx.cancel.cancel();
            }
            ExitEffect::Settled => {}
        }
        Ok(())
    }

    /// Stopping: role processes get SIGTERM through the shared token; every task records
    /// where it stopped.
    async fn shut_down(mut self) -> Result<DispatchEnd, EngineError> {
        if self.queue.is_landing() {
            let (batch, end) = self.queue.landed().await;
            self.on_batch(batch, end).await?;
        }
        while let Some(joined) = self.running.join_next().await {
            if let Ok((index, _, exit)) = joined
                && let ExitEffect::Fatal(reason) = self.record_exit(index, exit).await?
            {
                self.fatal.get_or_insert(reason);
            }
        }
        if self.fatal.is_none() && self.only_waits_left() {
            return Ok(DispatchEnd::Waiting(self.stop_reason_waiting()));
        }
        Ok(DispatchEnd::Interrupted(self.fatal.unwrap_or_else(|| "interrupted".into())))
    }

    /// Nothing else can move and tasks wait for a person or a forge. Without `--wait` the
    /// run stops `waiting`. With it, the run says what it waits for (when that is new) and
    /// sleeps until a decision is left (or the periodic look), a deferred landing is due
    /// again, the pull requests are due for a look, or the run is stopped.
    async fn stop_or_wait(&mut self) -> Result<Option<DispatchEnd>, EngineError> {
        let now = vec![
            (WaitingFor::Approval, self.awaiting.iter().copied().collect()),
            (WaitingFor::PullRequests, self.published.iter().copied().collect()),
            (WaitingFor::Checkout, self.deferred.keys().copied().collect()),
        ];
        self.waiting.say(&self.ctx, now).await?;
        if !self.waiting.is_on() {
            return Ok(Some(DispatchEnd::Waiting(self.stop_reason_waiting())));
        }
        let next_due = self.deferred.values().min().copied();
        let next_follow = self.next_follow.filter(|_| !self.published.is_empty());
        tokio::select! {
            () = sleep_until(next_due), if next_due.is_some() => {}
            () = sleep_until(next_follow), if next_follow.is_some() => {
                self.follow().await?;
            }
            () = self.waiting.decision_left() => {}
            () = tokio::time::sleep(DECISION_POLL) => {}
            () = self.ctx.cancel.cancelled() => {}
        }
        Ok(None)
    }

    /// Whether every unfinished task waits for a person or a forge (none was stopped at
    /// work).
    fn only_waits_left(&self) -> bool {
        let phases = self.ctx.book.phases();
        let unfinished: Vec<TaskPhase> =
            phases.into_iter().filter(|phase| !phase.is_terminal()).collect();
        !unfinished.is_empty() && unfinished.iter().all(|phase| phase.waits_to_land())
    }

    /// Why the run stopped waiting: each deferred landing, then what people and forges
    /// are to decide.
    fn stop_reason_waiting(&self) -> String {
        let deferred = (!self.deferred.is_empty()).then(|| self.deferred_reason());
        [deferred, self.waiting_reason()].into_iter().flatten().collect::<Vec<_>>().join("\n")
    }

    /// When a deferred landing is tried again: soon, and at a person's pace once the run
    /// only waits.
    fn deferred_retry(&self) -> Duration {
        if self.waiting.is_on() && self.idle_retry_done {
            WAITING_DEFERRED_RETRY
        } else {
            DEFERRED_RETRY
        }
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
                    // Approved work lands from the queue, as a resumed run's does: it
                    // takes no lane.
                    self.queue.push(index);
                }
                crate::decision::HumanDecision::Reject { note } => {
                    let issue = format!("rejected by a person before landing: {note}");
                    let cause = Cause::new(CauseKind::Person, crate::causes::flat(&issue));
                    book.change(index, |record| {
                        record.human_approved = false;
                        record.feedback = Some(breeze_protocol::ReviewFeedback {
                            round: record.rounds,
                            gaps: vec![breeze_protocol::Gap {
                                severity: breeze_protocol::Severity::Critical,
                                location: String::new(),
                                issue,
                                suggestion: String::new(),
                            }],
                        });
                    })
                    .await?;
                    book.transition(index, Transition::SendBack { cause }).await?;
                }
            }
        }
        Ok(())
    }

    /// A person asked to step into a task no driver holds (`breeze attach`): a task waiting
    /// to land goes back on a lane, approved as it was, and pauses before its landing; an
    /// escalated or failed one is taken up again with a fresh budget, as `breeze retry`
    /// would, and pauses before its next attempt (tasks it blocked wait again).
    async fn take_attach_requests(&mut self) -> Result<(), EngineError> {
        let phases = self.ctx.book.phases();
        for (index, phase) in phases.into_iter().enumerate() {
            let waiting = phase.waits_to_land();
            let given_up = matches!(phase, TaskPhase::Escalated | TaskPhase::Failed);
            if self.in_flight.contains(&index) || !(waiting || given_up) {
                continue;
            }
            let id = self.ctx.task(index).id.to_string();
            if crate::step_in::request::AttachFiles::new(&self.ctx.run_dir, &id).pending().is_none()
            {
                continue;
            }
            let book = &self.ctx.book;
            if waiting {
                self.awaiting.remove(&index);
                self.deferred.remove(&index);
                self.published.remove(&index);
                book.transition(index, Transition::Approve).await?;
                continue;
            }
            book.change(index, |record| crate::decision::fresh_budget(record, None)).await?;
            book.transition(index, Transition::Work).await?;
            for (other, phase) in self.ctx.book.phases().into_iter().enumerate() {
                if phase == TaskPhase::Blocked {
                    let cause = Cause::new(
                        CauseKind::Person,
                        format!("task {id} is taken up again (breeze attach)"),
                    );
                    book.transition(other, Transition::Requeue { cause }).await?;
                }
            }
        }
        Ok(())
    }

    /// Asks the landing mode about the published landings: the ones the target took in
    /// land, the ones that no longer merge cleanly are landed again. Whether anything
    /// changed.
    async fn follow(&mut self) -> Result<bool, EngineError> {
        let published: Vec<usize> = self.published.iter().copied().collect();
        let followed = self.land.follow(&self.ctx, &published).await?;
        self.next_follow = self.land.follow_every().map(|every| Instant::now() + every);
        self.unreachable = followed.unreachable;
        let changed = !followed.landed.is_empty()
            || !followed.again.is_empty()
            || !followed.sent_back.is_empty()
            || !followed.escalated.is_empty();
        self.follow_ups(&followed.sent_back, followed.escalated).await?;
        let book = &self.ctx.book;
        for (index, commit) in followed.landed {
            self.published.remove(&index);
            book.transition(index, Transition::Land { commit }).await?;
        }
        for index in followed.again {
            self.published.remove(&index);
            book.transition(index, Transition::Approve).await?;
            self.deferred.insert(index, Instant::now());
        }
        if changed {
            self.idle_follow_done = false;
        }
        Ok(changed)
    }

    /// What the forge said sent these published tasks back to their workers (the
    /// scheduler starts them again, as a bounced landing) or used up their follow-up
    /// rounds.
    async fn follow_ups(
        &mut self,
        sent_back: &[usize],
        escalated: Vec<(usize, Cause)>,
    ) -> Result<(), EngineError> {
        for index in sent_back {
            self.published.remove(index);
        }
        for (index, cause) in escalated {
            self.published.remove(&index);
            self.ctx.book.transition(index, Transition::Escalate { cause }).await?;
        }
        Ok(())
    }

    /// Why the run stops while tasks wait for a person: an approval, a pull request's merge.
    fn waiting_reason(&self) -> Option<String> {
        let mut reasons = Vec::new();
        if !self.awaiting.is_empty() {
            reasons.push(self.awaiting_reason());
        }
        if !self.published.is_empty() {
            let published: Vec<usize> = self.published.iter().copied().collect();
            let unreachable = self.unreachable.as_deref();
            reasons.push(self.land.waiting_reason(&self.ctx, &published, unreachable));
        }
        (!reasons.is_empty()).then(|| reasons.join("\n"))
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

/// The cause of an error outside the task's control, with its hints.
fn error_cause(err: &EngineError) -> Cause {
    let cause = Cause::new(CauseKind::Error, crate::causes::flat(&err.to_string()));
    let hints = err.hints().join("; ");
    if hints.is_empty() { cause } else { cause.hint(hints) }
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
