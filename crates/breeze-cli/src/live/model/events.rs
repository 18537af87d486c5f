//! How each journal event changes the live model: one handler per event kind, each making
//! its change and returning the milestone line it adds, if the event is news. The
//! dispatch in [`LiveModel::apply`] reads as a table of event kind → handler.

use std::path::PathBuf;
use std::time::SystemTime;

use breeze_protocol::{
    AttemptOutcome, BreezeEvent, Decision, EventKind, PersonOutcome, PrChecks, PrFollowUp,
    PrReview, Role, RunState, ScopeAnswer, TaskState, Usage, Verdict, VerifyOutcome,
};

use super::LiveModel;
use crate::render::{pull_request_line, quoted_cut, sent_back_line, short};

/// A milestone line, or none when the event is not news.
type Note = Option<String>;

impl LiveModel {
    /// Applies one journal event: the model follows it, and a milestone tells it when it
    /// is news.
    pub fn apply(&mut self, event: &BreezeEvent) {
        let at = humantime::parse_rfc3339_weak(&event.at).ok();
        if let Some(text) = self.follow(&event.event, at) {
            self.add_milestone(clock_time(&event.at), text);
        }
    }

    /// The handler of each event kind; `at` is when the event happened.
    fn follow(&mut self, event: &EventKind, at: Option<SystemTime>) -> Note {
        use EventKind as E;
        match event {
            E::RunStarted { workers, resumed, .. } => self.run_started(*workers, *resumed, at),
            E::RunFinished { state } => self.run_finished(*state, at),
            E::RunWaiting { waits } => self.run_waiting(waits),
            E::TaskStarted { task, title, lane } => self.task_started(task, title, *lane, at),
            E::TaskState { task, state, reason, .. } => self.task_state(task, *state, reason),
            E::ProcessStarted { task, role, log, .. } => self.process_started(task, *role, log),
            E::Spent { usage, .. } => self.spent(usage),
            E::CommandStarted { task, purpose, .. } => self.phase(task, purpose),
            E::CheckoutUpdate { task, .. } => self.phase(task, "updating your checkout"),
            E::BackendTrouble { task, role, trouble, wait_ms, .. } => {
                backend_trouble(task, *role, trouble, *wait_ms)
            }
            E::SentBack { task, reason, .. } => self.sent_back(task, reason),
            E::Attempt { task, attempt, round, outcome, error, .. } => {
                self.attempt(task, (*attempt, *round), *outcome, error.as_deref())
            }
            E::Attached { task, lane, .. } => self.attached(task, *lane),
            E::PersonAttempt { task, outcome, error, .. } => {
                person_attempt(task, *outcome, error.as_deref())
            }
            E::AdvisorConsulted { task, decision, .. } => advisor_consulted(task, *decision),
            E::Reviewed { task, round, verdict, .. } => self.reviewed(task, *round, *verdict),
            E::ScopeDecided { task, paths, decision, .. } => scope_decided(task, paths, *decision),
            E::Landed { task, commit, .. } => self.landed(task, commit),
            E::LandingBatch { tasks, .. } => landing_batch(tasks),
            E::Verified { tasks, commit, outcome, .. } => verified(tasks, commit, *outcome),
            E::PushRejected { task, target, reason, .. } => push_rejected(task, target, reason),
            E::PullRequestUpdated { task, branch, .. } => pull_request_updated(task, branch),
            E::PullRequestFollowed { task, checks, review, failed, action, detail, .. } => self
                .pull_request_followed(
                    task,
                    (*checks, *review),
                    failed,
                    *action,
                    detail.as_deref(),
                ),
            E::IgnoredWritesRemoved { task, paths } => ignored_writes_removed(task, paths),
            E::NetworkRefused { task, by, host, port, .. } => {
                network_refused(task, by, host, *port)
            }
            E::UsageWindows { windows, .. } => usage_windows(windows),
            E::QuotaPaused { task, role, backend, window, until, .. } => {
                let until = breeze_protocol::clock_of(*until);
                self.phase(
                    task,
                    &format!("{role} waits for {backend}'s {window} window ({until})"),
                );
                Some(format!(
                    "⏸ [{task}] {role} waits for {backend}'s {window} window to reset at {until}"
                ))
            }
            E::FellBack { task, role, from, to } => {
                Some(format!("⇆ [{task}] {role} runs on {to}: {from} is paused for a usage window"))
            }
            E::WorktreeCreated { .. }
            | E::WorktreeRemoved { .. }
            | E::ProcessEnded { .. }
            | E::CommandEnded { .. }
            | E::PullRequestOpened { .. }
            | E::PullRequestMerged { .. }
            | E::MainFollowed { .. } => None,
        }
    }

    /// The run started (or resumed): its clock starts again, and it has not ended.
    fn run_started(&mut self, workers: u32, resumed: bool, at: Option<SystemTime>) -> Note {
        self.set_workers(workers);
        self.started_at = at;
        self.finished = None;
        self.finished_at = None;
        self.waiting.clear();
        Some(if resumed { "run resumed" } else { "run started" }.into())
    }

    /// The run ended: its clocks stop here.
    fn run_finished(&mut self, state: RunState, at: Option<SystemTime>) -> Note {
        self.finished = Some(state);
        self.finished_at = at;
        Some(format!("run ended: {}", state.as_str()))
    }

    /// The run waits for people or forges: what for, and since when.
    fn run_waiting(&mut self, waits: &[breeze_protocol::RunWait]) -> Note {
        self.waiting = waits.to_vec();
        let lines: Vec<String> = waits.iter().map(|wait| wait.line()).collect();
        Some(format!("⧗ {}", lines.join("; ")))
    }

    /// The task took `lane` (leaving any other it was shown on).
    fn task_started(&mut self, task: &str, title: &str, lane: u32, at: Option<SystemTime>) -> Note {
        self.free_lane_of(task);
        let slot = (lane as usize).saturating_sub(1);
        if slot >= self.lanes.len() {
            self.lanes.resize(slot + 1, None);
        }
        self.lanes[slot] = Some(task.to_string());
        let view = self.task(task);
        view.title = title.to_string();
        view.state = TaskState::Running;
        view.phase = "started".into();
        view.since = at;
        view.reason = None;
        Some(format!("▶ [{task}] {title} (lane {lane})"))
    }

    /// A look at the task's pull request on the forge: its phase says what its checks and
    /// reviews say.
    fn pull_request_followed(
        &mut self,
        task: &str,
        (checks, review): (PrChecks, PrReview),
        failed: &[String],
        action: PrFollowUp,
        detail: Option<&str>,
    ) -> Note {
        self.task(task).phase = format!("checks {}, review {}", checks.as_str(), review.as_str());
        Some(pull_request_line(task, (checks, review), failed, action, detail))
    }

    /// The task changed state; a task that is done, or waits to land (in the landing
    /// queue, for a person, a pull request's merge, the checkout), leaves its lane.
    fn task_state(&mut self, task: &str, state: TaskState, reason: &Option<String>) -> Note {
        let note = state_line(task, state, reason.as_deref());
        let view = self.task(task);
        view.state = state;
        view.phase = state.as_str().into();
        view.reason = reason.clone();
        // In-process roles (the scripted backend) start no process to count from.
        if state == TaskState::Running && view.attempt <= view.attempts_done {
            view.attempt = view.attempts_done + 1;
            view.round = view.rounds_done + 1;
        }
        // Done, or waiting to land (in the landing queue, for a person, a pull request's
        // merge, the checkout): either way it holds no lane.
        let off_lane = matches!(
            state,
            TaskState::Landing
                | TaskState::AwaitingApproval
                | TaskState::PrOpen
                | TaskState::Deferred
        );
        if state.is_terminal() || off_lane {
            self.free_lane_of(task);
        }
        self.leave_waits(task, state);
        note
    }

    /// A task in `state` no longer waits for what the run said it waited for (approved,
    /// merged, sent back): the waits forget it, and those left without a task go.
    fn leave_waits(&mut self, task: &str, state: TaskState) {
        use breeze_protocol::WaitingFor;
        let still = |what: WaitingFor| match what {
            WaitingFor::Approval => state == TaskState::AwaitingApproval,
            WaitingFor::PullRequests => state == TaskState::PrOpen,
            // A deferred landing tried again is the same wait.
            WaitingFor::Checkout => matches!(state, TaskState::Deferred | TaskState::Landing),
        };
        for wait in &mut self.waiting {
            if !still(wait.waiting_for) {
                wait.tasks.retain(|id| id != task);
            }
        }
        self.waiting.retain(|wait| !wait.tasks.is_empty());
    }

    /// A role process started: the task's phase is its role, its log the one to read; a
    /// worker starts the next attempt.
    fn process_started(&mut self, task: &str, role: Role, log: &str) -> Note {
        let view = self.task(task);
        view.phase = role.as_str().into();
        view.log = Some(PathBuf::from(log));
        if role == Role::Worker {
            view.attempt = view.attempts_done + 1;
            view.round = view.rounds_done + 1;
        }
        None
    }

    /// A role call's cost, as the budget counted it.
    fn spent(&mut self, usage: &Usage) -> Note {
        self.usage.add(usage);
        None
    }

    /// The task is doing `phase` (a project command, updating the checkout).
    fn phase(&mut self, task: &str, phase: &str) -> Note {
        self.task(task).phase = phase.into();
        None
    }

    /// The task went back to its worker.
    fn sent_back(&mut self, task: &str, reason: &str) -> Note {
        let view = self.task(task);
        view.state = TaskState::Running;
        view.phase = "sent back".into();
        view.reason = Some(reason.to_string());
        Some(sent_back_line(task, reason))
    }

    /// A worker attempt ended (`tried`: its attempt and round).
    fn attempt(
        &mut self,
        task: &str,
        tried: (u32, u32),
        outcome: AttemptOutcome,
        error: Option<&str>,
    ) -> Note {
        let (attempt, round) = tried;
        let view = self.task(task);
        view.attempts_done = view.attempts_done.max(attempt);
        view.attempt = attempt;
        view.round = round;
        if !attempt_is_news(outcome) {
            return None;
        }
        let why = error.and_then(|e| e.lines().next()).unwrap_or(outcome.as_str());
        Some(format!("✗ [{task}] attempt {attempt} {outcome}: {why}"))
    }

    /// A person stepped into the task's lane.
    fn attached(&mut self, task: &str, lane: Option<u32>) -> Note {
        self.task(task).phase = "attached".into();
        let lane = lane.map(|lane| format!(" in lane {lane}")).unwrap_or_default();
        Some(format!("✋ [{task}] paused{lane}: a person is attached"))
    }

    /// A reviewer round ended.
    fn reviewed(&mut self, task: &str, round: u32, verdict: Verdict) -> Note {
        let view = self.task(task);
        view.rounds_done = view.rounds_done.max(round);
        view.round = round;
        Some(match verdict {
            Verdict::Approve => format!("✓ [{task}] round {round}: APPROVE"),
            Verdict::RequestChanges => format!("↺ [{task}] round {round}: REQUEST_CHANGES"),
        })
    }

    /// The task landed and left its lane.
    fn landed(&mut self, task: &str, commit: &str) -> Note {
        let view = self.task(task);
        view.state = TaskState::Landed;
        view.phase = "landed".into();
        self.free_lane_of(task);
        Some(format!("● [{task}] landed {}", short(commit)))
    }
}

/// The milestone of a task's new state, when it is held for a person or the checkout, or
/// done without landing; `reason`'s first line says why.
fn state_line(task: &str, state: TaskState, reason: Option<&str>) -> Note {
    let first = reason.and_then(|r| r.lines().next()).unwrap_or("");
    match state {
        TaskState::AwaitingApproval => Some(format!("⧗ [{task}] awaiting approval")),
        TaskState::Deferred => Some(format!("⏸ [{task}] landing deferred: {first}")),
        TaskState::PrOpen => Some(format!("⇡ [{task}] {first}")),
        TaskState::Escalated | TaskState::Blocked | TaskState::Failed => {
            Some(format!("■ [{task}] {}: {first}", state.as_str()))
        }
        _ => None,
    }
}

/// A backend failed rather than the task; the call is tried again.
/// A backend reported where its usage windows stand, and they moved.
fn usage_windows(windows: &[breeze_protocol::UsageWindow]) -> Note {
    let lines: Vec<String> = windows.iter().map(|window| window.line()).collect();
    Some(format!("◔ {}", lines.join("; ")))
}

fn backend_trouble(task: &str, role: Role, trouble: &str, wait_ms: u64) -> Note {
    let wait = wait_ms.div_ceil(1000);
    Some(format!("… [{task}] {role} backend {trouble}; trying again in {wait}s"))
}

/// A role or command asked for a host off the allow-list.
fn network_refused(task: &str, by: &str, host: &str, port: u16) -> Note {
    Some(format!(
        "⛔ [{task}] {by} was refused {host}:{port}: not on the run's network allow-list ([sandbox] network)"
    ))
}

/// The person left the task's lane.
fn person_attempt(task: &str, outcome: PersonOutcome, error: Option<&str>) -> Note {
    Some(match outcome {
        PersonOutcome::Changed => format!("✋ [{task}] the person left a change: to review"),
        PersonOutcome::Unchanged => format!("✋ [{task}] the person left; no change"),
        PersonOutcome::NotCommitted => format!(
            "✋ [{task}] the person's change cannot be committed: {}",
            error.and_then(|e| e.lines().next()).unwrap_or(outcome.as_str())
        ),
    })
}

/// The Advisor answered.
fn advisor_consulted(task: &str, decision: Decision) -> Note {
    Some(format!("? [{task}] Advisor: {}", decision.as_str()))
}

/// The Lead answered a scope request.
fn scope_decided(task: &str, paths: &[String], decision: ScopeAnswer) -> Note {
    let paths = paths.join(", ");
    Some(if decision == ScopeAnswer::Granted {
        format!("+ [{task}] write set widened: {paths}")
    } else {
        format!("⊘ [{task}] scope request for {paths}: {decision}")
    })
}

/// Several tasks land in one batch.
fn landing_batch(tasks: &[String]) -> Note {
    Some(format!("⇉ landing {} together: {}", tasks.len(), tasks.join(", ")))
}

/// `land.verify`'s verdict: news when it did not simply pass.
fn verified(tasks: &[String], commit: &str, outcome: VerifyOutcome) -> Note {
    match outcome {
        VerifyOutcome::Passed => None,
        VerifyOutcome::Flaky => Some(format!(
            "≈ [{}] verify failed once and passed on a retry: flaky, not the task's",
            tasks.join(", ")
        )),
        VerifyOutcome::Failed | VerifyOutcome::FailsLikeMain => Some(match tasks {
            [] => format!("✗ main itself fails verify at {}", short(commit)),
            [last] => format!("✗ [{last}] verify {outcome}"),
            [first, .., last] => format!("✗ [{first}…{last}] verify {outcome} together"),
        }),
    }
}

/// Someone pushed to the target first: the task lands again.
fn push_rejected(task: &str, target: &str, reason: &str) -> Note {
    Some(format!(
        "↻ [{task}] push to {target} refused ({reason}): someone pushed first; landing again"
    ))
}

/// The task's pull request was rebuilt on the new tip.
fn pull_request_updated(task: &str, branch: &str) -> Note {
    Some(format!("⇡ [{task}] {branch} rebuilt on the new tip and pushed"))
}

/// What the worker wrote that git ignores was removed.
fn ignored_writes_removed(task: &str, paths: &[String]) -> Note {
    Some(format!(
        "⌫ [{task}] removed what its worker wrote that git ignores: {}",
        quoted_cut(paths, 3)
    ))
}

/// `HH:MM:SS` of an RFC 3339 time (as written, UTC), or empty.
fn clock_time(at: &str) -> String {
    at.split_once('T').map(|(_, time)| time.chars().take(8).collect()).unwrap_or_default()
}

/// Whether a worker attempt's end is news: a completed attempt is not, and a sent-back
/// one is told by its `sent_back` event.
fn attempt_is_news(outcome: AttemptOutcome) -> bool {
    !matches!(outcome, AttemptOutcome::Completed | AttemptOutcome::SentBack)
}
