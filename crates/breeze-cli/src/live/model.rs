//! What the live view shows, as a pure model: fed one `breeze-event.v1` at a time (from the
//! engine in `breeze run`, from the journal file in `breeze watch`), never touching a
//! terminal, so a sequence of events can be checked against the rows it yields. What each
//! event kind changes is in `events.rs`; here are the state and what the frame asks of it.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::time::SystemTime;

use breeze_protocol::{BreezeStatus, RunState, TaskState, Usage};

mod events;

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
    /// What the run waits for (`run_waiting`), with the tasks still waiting; empty while it
    /// does not wait.
    pub waiting: Vec<breeze_protocol::RunWait>,
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

    /// Approved tasks in the landing queue (waiting, or being verified and landed), off
    /// lane.
    pub fn landing(&self) -> impl Iterator<Item = &TaskView> {
        self.tasks.iter().filter(|task| task.state == TaskState::Landing && !self.is_on_lane(task))
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

    /// Adds a line to the history, keeping the latest [`MILESTONES`].
    fn add_milestone(&mut self, time: String, text: String) {
        self.milestones.push_back(Milestone { time, text });
        self.milestones_seen += 1;
        while self.milestones.len() > MILESTONES {
            self.milestones.pop_front();
        }
    }

    fn reindex(&mut self) {
        self.index =
            self.tasks.iter().enumerate().map(|(at, task)| (task.id.clone(), at)).collect();
    }
}

#[cfg(test)]
mod tests;
