//! What the live view shows, as a pure model: fed one `breeze-event.v1` at a time (from the
//! engine in `breeze run`, from the journal file in `breeze watch`), never touching a
//! terminal, so a sequence of events can be checked against the rows it yields.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::time::SystemTime;

use breeze_protocol::{BreezeEvent, BreezeStatus, EventKind, RunState, TaskState, Usage, Verdict};

/// How many milestones the model keeps (the view shows the latest few).
const MILESTONES: usize = 8;

/// The state of a run as the live view shows it.
#[derive(Debug, Clone, Default)]
pub struct LiveModel {
    /// Run id, once known.
    pub run_id: String,
    /// Lanes.
    pub workers: u32,
    /// The latest start (or resume) of the run.
    pub started_at: Option<SystemTime>,
    /// How the run ended, once it did (a later resume clears it).
    pub finished: Option<RunState>,
    /// When it ended: its clocks stop there.
    pub finished_at: Option<SystemTime>,
    /// The task on each lane (index 0 is lane 1).
    pub lanes: Vec<Option<String>>,
    /// Tasks in plan order.
    pub tasks: Vec<TaskView>,
    index: HashMap<String, usize>,
    /// Cost and tokens of every role call that ended (as the budget counted them).
    pub usage: Usage,
    /// The caps the run's spend is held to, if any.
    pub budget: Option<breeze_protocol::BudgetCaps>,
    /// The latest milestones, oldest first.
    pub milestones: VecDeque<Milestone>,
    /// How many milestones there were in all.
    pub milestones_seen: u64,
}

/// One task as the view shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskView {
    /// Task id.
    pub id: String,
    /// Title.
    pub title: String,
    /// State.
    pub state: TaskState,
    /// What it is doing now: `worker`, `reviewer`, `land.verify`, `reviewing`, ...
    pub phase: String,
    /// When it got its lane (for the elapsed time).
    pub since: Option<SystemTime>,
    /// Attempt in progress (or the last one).
    pub attempt: u32,
    /// Review round in progress (or the last one).
    pub round: u32,
    /// Worker attempts finished.
    attempts_done: u32,
    /// Review rounds finished.
    rounds_done: u32,
    /// The log of its latest role process (without the `.stdout`/`.stderr` suffix).
    pub log: Option<PathBuf>,
    /// The last line its role process wrote, as last read.
    pub last_output: Option<String>,
    /// Why it is held or done, when it is not landed.
    pub reason: Option<String>,
}

/// A line of the run's history: its time (`HH:MM:SS`, UTC) and what happened.
#[derive(Debug, Clone, PartialEq)]
pub struct Milestone {
    /// `HH:MM:SS`.
    pub time: String,
    /// The line, with progress glyphs as `breeze run` prints them.
    pub text: String,
}

impl TaskView {
    fn new(id: &str) -> TaskView {
        TaskView {
            id: id.to_string(),
            title: String::new(),
            state: TaskState::Pending,
            phase: "pending".into(),
            since: None,
            attempt: 0,
            round: 0,
            attempts_done: 0,
            rounds_done: 0,
            log: None,
            last_output: None,
            reason: None,
        }
    }
}

/// Which events a view applies after [`LiveModel::seed`]: what the status report must
/// supply itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// Only the events from now on (`breeze run`, `breeze resume`): the report's counts of
    /// attempts and rounds, and its cost and tokens, are the run's past.
    FromNow,
    /// The journal from its first line (`breeze watch`): the events count every attempt,
    /// round and token themselves; the report gives only titles, order and states.
    WholeJournal,
}

impl LiveModel {
    /// Adds the tasks of a status report the model does not know yet (their titles and
    /// states, and — when the events to come are not the whole journal — their counts and
    /// the run's cost), in the report's order.
    pub fn seed(&mut self, status: &BreezeStatus, replay: Replay) {
        if self.run_id.is_empty() {
            self.run_id = status.run_id.clone();
        }
        if self.workers == 0 {
            self.set_workers(status.workers);
        }
        let past_counts = replay == Replay::FromNow;
        if past_counts {
            self.usage = status.usage;
        }
        self.budget = status.budget;
        let mut order: Vec<TaskView> = Vec::with_capacity(status.tasks.len());
        let mut known = std::mem::take(&mut self.tasks);
        for task in &status.tasks {
            let view = match self.index.get(&task.id) {
                Some(&at) => {
                    let mut view = known[at].clone();
                    if view.title.is_empty() {
                        view.title = task.title.clone();
                    }
                    view
                }
                None => {
                    let mut view = TaskView::new(&task.id);
                    view.title = task.title.clone();
                    view.state = task.state;
                    view.phase = task.state.as_str().into();
                    view.reason = task.reason.clone();
                    // Replayed from the journal's start, the events count them (taken
                    // from the report too, a task would be counted twice: attempt 2 of 1).
                    if past_counts {
                        view.attempts_done = task.attempts;
                        view.attempt = task.attempts;
                        view.rounds_done = task.rounds;
                        view.round = task.rounds;
                    }
                    view
                }
            };
            order.push(view);
        }
        // Tasks the events named that the report does not (none in practice) stay, after.
        for view in known.drain(..) {
            if !status.tasks.iter().any(|task| task.id == view.id) {
                order.push(view);
            }
        }
        self.tasks = order;
        self.reindex();
    }

    /// The time the view's clocks read at `now`: the run's end once it ended (a finished
    /// run's clock stops there), else `now`.
    pub fn clock_time(&self, now: SystemTime) -> SystemTime {
        match (self.finished, self.finished_at) {
            (Some(_), Some(end)) => end.min(now),
            _ => now,
        }
    }

    /// Applies one journal event.
    pub fn apply(&mut self, event: &BreezeEvent) {
        let at = humantime::parse_rfc3339_weak(&event.at).ok();
        let time = clock_time(&event.at);
        let mut note: Option<String> = None;
        match &event.event {
            EventKind::RunStarted { workers, resumed, .. } => {
                note = Some(if *resumed { "run resumed".into() } else { "run started".into() });
                self.set_workers(*workers);
                self.started_at = at;
                self.finished = None;
                self.finished_at = None;
            }
            EventKind::RunFinished { state } => {
                note = Some(format!("run ended: {}", state.as_str()));
                self.finished = Some(*state);
                self.finished_at = at;
            }
            EventKind::TaskStarted { task, title, lane } => {
                note = Some(format!("▶ [{task}] {title} (lane {lane})"));
                for slot in &mut self.lanes {
                    if slot.as_deref() == Some(task) {
                        *slot = None;
                    }
                }
                let slot = (*lane as usize).saturating_sub(1);
                if slot >= self.lanes.len() {
                    self.lanes.resize(slot + 1, None);
                }
                self.lanes[slot] = Some(task.clone());
                let view = self.task(task);
                view.title = title.clone();
                view.state = TaskState::Running;
                view.phase = "started".into();
                view.since = at;
                view.reason = None;
            }
            EventKind::TaskState { task, state, reason, .. } => {
                let first = reason.as_deref().and_then(|r| r.lines().next()).unwrap_or("");
                match state {
                    TaskState::AwaitingApproval => {
                        note = Some(format!("⧗ [{task}] awaiting approval"));
                    }
                    TaskState::Deferred => {
                        note = Some(format!("⏸ [{task}] landing deferred: {first}"));
                    }
                    TaskState::PrOpen => {
                        note = Some(format!("⇡ [{task}] {first}"));
                    }
                    TaskState::Escalated | TaskState::Blocked | TaskState::Failed => {
                        note = Some(format!("■ [{task}] {}: {first}", state.as_str()));
                    }
                    _ => {}
                }
                let view = self.task(task);
                view.state = *state;
                view.phase = state.as_str().into();
                view.reason = reason.clone();
                // In-process roles (the scripted backend) start no process to count from.
                if *state == TaskState::Running && view.attempt <= view.attempts_done {
                    view.attempt = view.attempts_done + 1;
                    view.round = view.rounds_done + 1;
                }
                if state.is_terminal() {
                    self.free_lane_of(task);
                }
            }
            EventKind::ProcessStarted { task, role, log, .. } => {
                let view = self.task(task);
                view.phase = role.as_str().into();
                view.log = Some(PathBuf::from(log));
                if *role == breeze_protocol::Role::Worker {
                    view.attempt = view.attempts_done + 1;
                    view.round = view.rounds_done + 1;
                }
            }
            EventKind::Spent { usage, .. } => self.usage.add(usage),
            EventKind::CommandStarted { task, purpose, .. } => {
                self.task(task).phase = purpose.clone();
            }
            EventKind::CheckoutUpdate { task, .. } => {
                self.task(task).phase = "updating your checkout".into();
            }
            EventKind::BackendTrouble { task, role, trouble, wait_ms, .. } => {
                note = Some(format!(
                    "… [{task}] {role} backend {trouble}; trying again in {}s",
                    wait_ms.div_ceil(1000)
                ));
            }
            EventKind::SentBack { task, reason, .. } => {
                note = Some(crate::render::sent_back_line(task, reason));
                let view = self.task(task);
                view.state = TaskState::Running;
                view.phase = "sent back".into();
                view.reason = Some(reason.clone());
            }
            EventKind::Attempt { task, attempt, round, outcome, error, .. } => {
                // A sent-back attempt is told by its `sent_back` event.
                if outcome != "completed" && outcome != "sent-back" {
                    let why = error.as_deref().and_then(|e| e.lines().next()).unwrap_or(outcome);
                    note = Some(format!("✗ [{task}] attempt {attempt} {outcome}: {why}"));
                }
                let view = self.task(task);
                view.attempts_done = view.attempts_done.max(*attempt);
                view.attempt = *attempt;
                view.round = *round;
            }
            EventKind::Attached { task, lane, .. } => {
                let lane = lane.map(|lane| format!(" in lane {lane}")).unwrap_or_default();
                note = Some(format!("✋ [{task}] paused{lane}: a person is attached"));
                self.task(task).phase = "attached".into();
            }
            EventKind::PersonAttempt { task, outcome, error, .. } => {
                note = Some(match outcome.as_str() {
                    "changed" => format!("✋ [{task}] the person left a change: to review"),
                    "unchanged" => format!("✋ [{task}] the person left; no change"),
                    _ => format!(
                        "✋ [{task}] the person's change cannot be committed: {}",
                        error.as_deref().and_then(|e| e.lines().next()).unwrap_or(outcome)
                    ),
                });
            }
            EventKind::AdvisorConsulted { task, decision, .. } => {
                note = Some(format!("? [{task}] Advisor: {}", decision.as_str()));
            }
            EventKind::Reviewed { task, round, verdict, .. } => {
                note = Some(match verdict {
                    Verdict::Approve => format!("✓ [{task}] round {round}: APPROVE"),
                    Verdict::RequestChanges => format!("↺ [{task}] round {round}: REQUEST_CHANGES"),
                });
                let view = self.task(task);
                view.rounds_done = view.rounds_done.max(*round);
                view.round = *round;
            }
            EventKind::ScopeDecided { task, paths, decision, .. } => {
                let paths = paths.join(", ");
                note = Some(match decision.as_str() {
                    "granted" => format!("+ [{task}] write set widened: {paths}"),
                    other => format!("⊘ [{task}] scope request for {paths}: {other}"),
                });
            }
            EventKind::Landed { task, commit, .. } => {
                note = Some(format!("● [{task}] landed {}", crate::render::short(commit)));
                let view = self.task(task);
                view.state = TaskState::Landed;
                view.phase = "landed".into();
                self.free_lane_of(task);
            }
            EventKind::LandingBatch { tasks, .. } => {
                note = Some(format!("⇉ landing {} together: {}", tasks.len(), tasks.join(", ")));
            }
            EventKind::Verified { tasks, outcome, .. } if outcome == "flaky" => {
                note = Some(format!(
                    "≈ [{}] verify failed once and passed on a retry: flaky, not the task's",
                    tasks.join(", ")
                ));
            }
            EventKind::Verified { tasks, commit, outcome, .. } if outcome != "passed" => {
                note = Some(match tasks.as_slice() {
                    [] => format!("✗ main itself fails verify at {}", crate::render::short(commit)),
                    [last] => format!("✗ [{last}] verify {outcome}"),
                    [first, .., last] => format!("✗ [{first}…{last}] verify {outcome} together"),
                });
            }
            EventKind::PushRejected { task, target, reason, .. } => {
                note = Some(format!(
                    "↻ [{task}] push to {target} refused ({reason}): someone pushed first; landing again"
                ));
            }
            EventKind::PullRequestUpdated { task, branch, .. } => {
                note = Some(format!("⇡ [{task}] {branch} rebuilt on the new tip and pushed"));
            }
            EventKind::IgnoredWritesRemoved { task, paths } => {
                note = Some(format!(
                    "⌫ [{task}] removed what its worker wrote that git ignores: {}",
                    crate::render::quoted_cut(paths, 3)
                ));
            }
            EventKind::WorktreeCreated { .. }
            | EventKind::WorktreeRemoved { .. }
            | EventKind::ProcessEnded { .. }
            | EventKind::Verified { .. }
            | EventKind::CommandEnded { .. }
            | EventKind::PullRequestOpened { .. }
            | EventKind::PullRequestMerged { .. }
            | EventKind::MainFollowed { .. } => {}
        }
        if let Some(text) = note {
            self.milestones.push_back(Milestone { time, text });
            self.milestones_seen += 1;
            while self.milestones.len() > MILESTONES {
                self.milestones.pop_front();
            }
        }
    }

    /// The engine is gone without ending the run (killed): what it was working on is
    /// interrupted, as `breeze status` says, until `breeze resume`.
    pub fn engine_gone(&mut self) {
        for task in &mut self.tasks {
            if matches!(task.state, TaskState::Running | TaskState::Reviewing | TaskState::Landing)
            {
                task.state = TaskState::Interrupted;
                task.phase = TaskState::Interrupted.as_str().into();
            }
        }
    }

    /// Reads the last line of output of every task on a lane with `read` (given the log
    /// of its latest role process).
    pub fn refresh_output(&mut self, read: impl Fn(&std::path::Path) -> Option<String>) {
        let on_lanes: Vec<usize> =
            self.lanes.iter().flatten().filter_map(|id| self.index.get(id).copied()).collect();
        for at in on_lanes {
            let view = &mut self.tasks[at];
            if let Some(log) = &view.log
                && let Some(line) = read(log)
            {
                view.last_output = Some(line);
            }
        }
    }

    /// The task on lane `lane` (from 1), if any.
    pub fn on_lane(&self, lane: usize) -> Option<&TaskView> {
        let id = self.lanes.get(lane.checked_sub(1)?)?.as_ref()?;
        self.index.get(id).map(|&at| &self.tasks[at])
    }

    /// Tasks waiting for a lane, in plan order.
    pub fn queue(&self) -> impl Iterator<Item = &TaskView> {
        self.tasks.iter().filter(|task| task.state == TaskState::Pending && !self.is_on_lane(task))
    }

    /// Tasks held for a person or the checkout (awaiting approval, deferred, an open pull
    /// request) and off lane.
    pub fn held(&self) -> impl Iterator<Item = &TaskView> {
        self.tasks.iter().filter(|task| {
            matches!(
                task.state,
                TaskState::AwaitingApproval | TaskState::Deferred | TaskState::PrOpen
            ) && !self.is_on_lane(task)
        })
    }

    /// How many tasks are in `state`.
    pub fn count(&self, state: TaskState) -> usize {
        self.tasks.iter().filter(|task| task.state == state).count()
    }

    fn is_on_lane(&self, task: &TaskView) -> bool {
        self.lanes.iter().any(|slot| slot.as_deref() == Some(task.id.as_str()))
    }

    fn set_workers(&mut self, workers: u32) {
        self.workers = workers;
        if self.lanes.len() < workers as usize {
            self.lanes.resize(workers as usize, None);
        }
    }

    fn free_lane_of(&mut self, task: &str) {
        for slot in &mut self.lanes {
            if slot.as_deref() == Some(task) {
                *slot = None;
            }
        }
    }

    fn task(&mut self, id: &str) -> &mut TaskView {
        let at = match self.index.get(id) {
            Some(&at) => at,
            None => {
                self.tasks.push(TaskView::new(id));
                self.index.insert(id.to_string(), self.tasks.len() - 1);
                self.tasks.len() - 1
            }
        };
        &mut self.tasks[at]
    }

    fn reindex(&mut self) {
        self.index =
            self.tasks.iter().enumerate().map(|(at, task)| (task.id.clone(), at)).collect();
    }
}

/// `HH:MM:SS` of an RFC 3339 time (as written, UTC), or empty.
fn clock_time(at: &str) -> String {
    at.split_once('T').map(|(_, time)| time.chars().take(8).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use breeze_protocol::{BreezeStatusV1, TaskStatus};

    /// The journal of a real run: three tasks on two lanes, every one landed.
    const THREE_TASKS: &str = include_str!("../../tests/fixtures/three-tasks.events.jsonl");

    /// The journal of a run whose engine was killed right after main moved onto its
    /// landing (`BREEZE_TEST_KILL_AT=landing:main-moved`), then resumed.
    const KILLED_AFTER_MAIN_MOVED: &str =
        include_str!("../../tests/fixtures/killed-after-main-moved.events.jsonl");

    fn journal(text: &str) -> Vec<BreezeEvent> {
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }

    fn pending(ids: &[&str]) -> BreezeStatus {
        BreezeStatus {
            schema_version: BreezeStatusV1,
            lands_on: None,
            run_id: "r".into(),
            state: RunState::Running,
            workers: 2,
            plan: None,
            started_at: None,
            updated_at: None,
            tasks: ids
                .iter()
                .map(|id| TaskStatus {
                    id: (*id).into(),
                    title: format!("Task {id}"),
                    state: TaskState::Pending,
                    attempts: 0,
                    rounds: 0,
                    gate_failures: 0,
                    advisor_consults: 0,
                    commit: None,
                    reason: None,
                    cause: None,
                    group: None,
                    usage: Usage::default(),
                    review: None,
                    granted_writes: Vec::new(),
                    pull_request: None,
                    branch: None,
                    earlier_branches: Vec::new(),
                })
                .collect(),
            usage: Usage { cost_usd: Some(0.5), ..Usage::default() },
            budget: None,
            containment: None,
        }
    }

    fn lane_ids(model: &LiveModel) -> Vec<Option<&str>> {
        (1..=model.lanes.len()).map(|lane| model.on_lane(lane).map(|t| t.id.as_str())).collect()
    }

    #[test]
    fn a_landing_recognized_after_a_kill_shows_as_landed() {
        let events = journal(KILLED_AFTER_MAIN_MOVED);
        let mut model = LiveModel::default();
        model.seed(&pending(&["1"]), Replay::WholeJournal);
        let update = events
            .iter()
            .position(|e| matches!(e.event, EventKind::CheckoutUpdate { .. }))
            .unwrap();
        for event in &events[..=update] {
            model.apply(event);
        }
        assert_eq!(model.on_lane(1).unwrap().phase, "updating your checkout");
        for event in &events[update + 1..] {
            model.apply(event);
        }
        assert_eq!(model.tasks[0].state, TaskState::Landed);
        assert!(lane_ids(&model).iter().all(Option::is_none), "the lane is free");
        assert_eq!(model.finished, Some(RunState::Succeeded));
        assert!(model.milestones.iter().any(|m| m.text.starts_with("● [1] landed")));
    }

    #[test]
    fn lanes_queue_and_totals_follow_the_journal() {
        let events = journal(THREE_TASKS);
        let mut model = LiveModel::default();
        model.seed(&pending(&["1", "2", "3"]), Replay::WholeJournal);
        assert_eq!(model.queue().count(), 3);
        assert!(model.usage.is_empty(), "a view replaying the journal sums usage itself");

        // Up to both workers running (seq 11).
        for event in &events[..11] {
            model.apply(event);
        }
        assert_eq!(lane_ids(&model), [Some("1"), Some("2")]);
        let first = model.on_lane(1).unwrap();
        assert_eq!((first.phase.as_str(), first.attempt, first.round), ("worker", 1, 1));
        assert_eq!(first.title, "Write the first note", "the event's title wins");
        assert!(first.log.as_ref().unwrap().ends_with("logs/1.worker.1.log"));
        assert_eq!(model.queue().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["3"]);

        // Task 2 landed, task 3 took its lane (seq 30).
        for event in &events[11..30] {
            model.apply(event);
        }
        assert_eq!(lane_ids(&model), [None, Some("3")]);
        assert_eq!(model.count(TaskState::Landed), 2);
        assert_eq!(model.queue().count(), 0);
        let texts: Vec<&str> = model.milestones.iter().map(|m| m.text.as_str()).collect();
        assert!(texts.contains(&"● [2] landed bd5dfc3"), "{texts:?}");
        assert_eq!(model.milestones.back().unwrap().time, "04:38:32");

        for event in &events[30..] {
            model.apply(event);
        }
        assert_eq!(model.finished, Some(RunState::Succeeded));
        assert_eq!(lane_ids(&model), [None, None]);
        assert_eq!(model.count(TaskState::Landed), 3);
        assert_eq!(model.milestones.back().unwrap().text, "run ended: succeeded");
        assert!(model.milestones.len() <= MILESTONES);
    }

    #[test]
    fn a_watch_replaying_the_journal_counts_each_attempt_once() {
        // `breeze watch` mid-run: the report already counts the attempt in progress, and
        // the journal it replays from the start holds that attempt's worker too.
        let mut status = pending(&["1", "2", "3"]);
        for task in &mut status.tasks[..2] {
            task.state = TaskState::Running;
            task.attempts = 1;
        }
        let mut model = LiveModel::default();
        model.seed(&status, Replay::WholeJournal);
        for event in &journal(THREE_TASKS)[..11] {
            model.apply(event);
        }
        for lane in [1, 2] {
            let task = model.on_lane(lane).unwrap();
            assert_eq!((task.attempt, task.round), (1, 1), "lane {lane}: {task:?}");
        }
        assert!(model.usage.is_empty(), "tokens come from the journal only");

        // `breeze resume`'s view sees the events from now on: the report's counts are the past.
        let mut resumed = LiveModel::default();
        resumed.seed(&status, Replay::FromNow);
        let next = r#"{"schema_version":"breeze-event.v1","seq":40,"at":"2026-12-01T04:40:00.000Z","event":{"kind":"process_started","task":"1","role":"worker","pid":7,"log":"logs/1.worker.2.log"}}"#;
        resumed.apply(&serde_json::from_str(next).unwrap());
        let task = resumed.tasks.iter().find(|t| t.id == "1").unwrap();
        assert_eq!((task.attempt, task.round), (2, 1), "{task:?}");
    }

    #[test]
    fn tasks_a_killed_engine_was_working_on_read_as_interrupted() {
        let mut model = LiveModel::default();
        model.seed(&pending(&["1", "2", "3"]), Replay::WholeJournal);
        for event in &journal(THREE_TASKS)[..11] {
            model.apply(event);
        }
        model.engine_gone();
        let states: Vec<TaskState> = model.tasks.iter().map(|task| task.state).collect();
        assert_eq!(states, [TaskState::Interrupted, TaskState::Interrupted, TaskState::Pending]);
        assert_eq!(model.on_lane(1).unwrap().phase, "interrupted", "still on its lane, stopped");
    }

    #[test]
    fn a_view_joining_late_takes_usage_from_the_report_and_adds_what_ends_after() {
        let events = journal(THREE_TASKS);
        let mut model = LiveModel::default();
        // `breeze run`: the journal's first line comes before the report is read.
        model.apply(&events[0]);
        model.seed(&pending(&["1", "2", "3"]), Replay::FromNow);
        assert_eq!(model.run_id, "r");
        // A process's own report is not what the budget counted (the simulator starts no
        // process; codex's tokens are priced): the view adds what was counted.
        let ended = r#"{"schema_version":"breeze-event.v1","seq":9,"at":"2026-12-01T04:38:40.000Z","event":{"kind":"process_ended","task":"1","role":"worker","pid":1,"exit_code":0,"outcome":"exited","usage":{"cost_usd":null,"input_tokens":100,"output_tokens":20,"cached_input_tokens":0}}}"#;
        model.apply(&serde_json::from_str(ended).unwrap());
        let spent = r#"{"schema_version":"breeze-event.v1","seq":10,"at":"2026-12-01T04:38:40.000Z","event":{"kind":"spent","task":"1","role":"worker","usage":{"cost_usd":0.25,"input_tokens":100,"output_tokens":20,"cached_input_tokens":0}}}"#;
        model.apply(&serde_json::from_str(spent).unwrap());
        assert_eq!(model.usage.cost_usd, Some(0.75));
        assert_eq!(model.usage.input_tokens, 100);
    }

    #[test]
    fn held_tasks_leave_the_queue_and_escalations_are_milestones() {
        let mut model = LiveModel::default();
        model.seed(&pending(&["1", "2"]), Replay::WholeJournal);
        let event = |seq: u64, kind: &str| -> BreezeEvent {
            serde_json::from_str(&format!(
                r#"{{"schema_version":"breeze-event.v1","seq":{seq},"at":"2026-12-01T10:00:0{seq}.000Z","event":{kind}}}"#
            ))
            .unwrap()
        };
        model.apply(&event(1, r#"{"kind":"task_started","task":"1","title":"A","lane":1}"#));
        model.apply(&event(2, r#"{"kind":"task_state","task":"1","state":"awaiting-approval","reason":"see the diff"}"#));
        model.apply(&event(3, r#"{"kind":"task_started","task":"2","title":"B","lane":1}"#));
        model.apply(&event(4, r#"{"kind":"task_state","task":"2","state":"running"}"#));
        let second = model.tasks.iter().find(|t| t.id == "2").unwrap();
        assert_eq!((second.attempt, second.round), (1, 1), "counted without a process");
        model.apply(&event(5, r#"{"kind":"task_state","task":"2","state":"escalated","reason":"3 failed attempts\nmore"}"#));
        assert_eq!(model.held().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["1"]);
        assert_eq!(model.queue().count(), 0);
        assert_eq!(lane_ids(&model), [None, None]);
        let texts: Vec<&str> = model.milestones.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "▶ [1] A (lane 1)",
                "⧗ [1] awaiting approval",
                "▶ [2] B (lane 1)",
                "■ [2] escalated: 3 failed attempts"
            ]
        );
    }

    #[test]
    fn a_send_back_is_one_milestone_that_says_why() {
        let mut model = LiveModel::default();
        model.seed(&pending(&["1"]), Replay::WholeJournal);
        let event = |seq: u64, kind: &str| -> BreezeEvent {
            serde_json::from_str(&format!(
                r#"{{"schema_version":"breeze-event.v1","seq":{seq},"at":"2026-12-01T10:00:0{seq}.000Z","event":{kind}}}"#
            ))
            .unwrap()
        };
        let why = "landing: verify failed (`npm test` exited 1: not ok 2 - subtracts)";
        model.apply(&event(1, r#"{"kind":"task_started","task":"1","title":"A","lane":1}"#));
        model.apply(&event(2, r#"{"kind":"reviewed","task":"1","round":1,"verdict":"APPROVE","head":"h","result_path":"r"}"#));
        model.apply(&event(
            3,
            &format!(r#"{{"kind":"sent_back","task":"1","reason":"{why}","cause":{{"kind":"verify","detail":"exited 1","command":["npm","test"],"exit_code":1}}}}"#),
        ));
        model.apply(&event(4, r#"{"kind":"attempt","task":"1","attempt":2,"round":2,"outcome":"sent-back","error":"x"}"#));
        let only = &model.tasks[0];
        assert_eq!((only.state, only.reason.as_deref()), (TaskState::Running, Some(why)));
        let texts: Vec<&str> = model.milestones.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "▶ [1] A (lane 1)",
                "✓ [1] round 1: APPROVE",
                "↺ [1] landing: verify failed (`npm test` exited 1: not ok 2 - subtracts) — back to the worker",
            ]
        );
    }
}
