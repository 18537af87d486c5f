//! The run's timeline, derived from its journal: which task held which lane when, and what
//! it was doing there — work, gates, review, advisor, landing or waiting.
//!
//! A task's stay on a lane runs from `task_started` until a state takes it off (landed,
//! escalated, blocked, failed, deferred, awaiting-approval), another task takes the lane,
//! or the engine stops. A deferred landing and an approval wait off the lanes until the
//! task takes a lane again (or the engine stops); they are drawn on rows of their own.
//! Its task states give the base (running → work, reviewing → review, landing → landing,
//! anything else → waiting); the role processes, project commands, Advisor consults and
//! scope waits of the journal are painted over it, as they are more precise. Work is cut
//! where a worker attempt started (a `running` state or a worker process after the last
//! attempt ended): each attempt is a piece of its own, numbered and marked with how it
//! ended (its `attempt` event). A send-back is a moment of its own, with its cause; a
//! send-back or an escalation during review caused by a gate or check means that review
//! time was the gates'.

use std::collections::{BTreeMap, HashMap};

use breeze_protocol::{
    AttemptOutcome, BreezeEvent, Cause, CauseKind, EventKind, Role, ScopeAnswer, TaskState,
};

use super::time::parse_rfc3339;

/// What a task was doing during a piece of its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// A worker attempt.
    Work,
    /// The mechanical gates and `review.checks`, before the reviewer.
    Gates,
    /// The reviewer.
    Review,
    /// An Advisor consult.
    Advisor,
    /// Approved: rebase, `land.verify`, hooks and the merge onto main.
    Landing,
    /// On a lane but not working: its setup, a scope grant, the landing queue; off any
    /// lane: a deferred landing or `breeze approve`.
    Waiting,
}

impl Phase {
    /// Every phase, in legend order.
    pub const ALL: [Phase; 6] =
        [Phase::Work, Phase::Gates, Phase::Review, Phase::Advisor, Phase::Landing, Phase::Waiting];

    /// Its name (also its CSS class suffix).
    pub fn name(self) -> &'static str {
        match self {
            Phase::Work => "work",
            Phase::Gates => "gates",
            Phase::Review => "review",
            Phase::Advisor => "advisor",
            Phase::Landing => "landing",
            Phase::Waiting => "waiting",
        }
    }

    /// What it covers, for the legend.
    pub fn meaning(self) -> &'static str {
        match self {
            Phase::Work => "a worker attempt",
            Phase::Gates => "gates and review checks",
            Phase::Review => "the reviewer",
            Phase::Advisor => "an Advisor consult",
            Phase::Landing => "rebase, verify, merge",
            Phase::Waiting => "lane setup, scope grant, deferred landing, approval",
        }
    }

    /// The phase a task state stands for while the task holds a lane; `pending` and
    /// states a later version may add are waiting.
    fn of_state(state: &str) -> Phase {
        match state {
            "running" => Phase::Work,
            "reviewing" => Phase::Review,
            "landing" => Phase::Landing,
            _ => Phase::Waiting,
        }
    }
}

/// A stretch of time in one phase; times are milliseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// Start.
    pub start: i64,
    /// End (not before the start).
    pub end: i64,
    /// What the task was doing.
    pub phase: Phase,
    /// For work: the worker attempt it belongs to (`None` when the journal names none).
    pub attempt: Option<AttemptMark>,
}

impl Piece {
    /// A piece of `phase` that belongs to no attempt (yet).
    pub fn new(start: i64, end: i64, phase: Phase) -> Piece {
        Piece { start, end, phase, attempt: None }
    }
}

/// Which worker attempt a piece of work belongs to, and how that attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptMark {
    /// 1-based.
    pub number: u32,
    /// How it ended; `None` while it had not ended (or the journal does not say).
    pub outcome: Option<AttemptOutcome>,
}

impl AttemptMark {
    /// It ended without a result (failed, stalled, timed out, sent back by a gate or for a
    /// self-review that does not hold, …). Asking for advice or for scope is not a failure:
    /// the attempt goes on once answered.
    pub fn failed(self) -> bool {
        self.outcome.is_some_and(|outcome| {
            !matches!(
                outcome,
                AttemptOutcome::Completed
                    | AttemptOutcome::NeedsAdvice
                    | AttemptOutcome::NeedsScope
            )
        })
    }

    /// How it ended, in the journal's own word; `None` while it had not ended.
    pub fn shown_outcome(self) -> Option<&'static str> {
        self.outcome.map(AttemptOutcome::as_str)
    }
}

/// A worker attempt as the journal tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AttemptSpan {
    /// When it started.
    start: i64,
    /// Its number and how it ended.
    mark: AttemptMark,
    /// No `attempt` event has ended it yet (and the engine has not stopped).
    open: bool,
}

/// One stay of a task on a lane, or off every lane while its landing was deferred.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stay {
    /// Task id.
    pub task: String,
    /// The lane, from 1; `None` while the task waited off the lanes (deferred, or
    /// awaiting approval).
    pub lane: Option<u32>,
    /// When it took the lane.
    pub start: i64,
    /// When it left it.
    pub end: i64,
    /// Its phases, in order, covering `start..end` without gaps.
    pub pieces: Vec<Piece>,
    /// What ended it: the state that took it off the lane (`landed`, `deferred`, …),
    /// `stopped` when the engine stopped, `replaced` when another task took the lane.
    pub ended: String,
    /// Why it ended, when the journal says (the cause of an escalation, a deferral, …).
    pub why: Option<String>,
}

/// A task sent back to its worker (a gate, a check, the landing, a person), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentBack {
    /// Task id.
    pub task: String,
    /// When.
    pub at: i64,
    /// The cause as one line.
    pub reason: String,
}

/// The derived timeline of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    /// The periods an engine ran the run (one per `run_started`), in order.
    pub sessions: Vec<(i64, i64)>,
    /// Every stay, in the order they ended.
    pub stays: Vec<Stay>,
    /// Every send-back, in journal order.
    pub sent_back: Vec<SentBack>,
    /// Events whose time could not be read (left out).
    pub skipped: usize,
}

impl Timeline {
    /// The lanes tasks used, in order.
    pub fn lanes(&self) -> Vec<u32> {
        let mut lanes: Vec<u32> = self.stays.iter().filter_map(|stay| stay.lane).collect();
        lanes.sort_unstable();
        lanes.dedup();
        lanes
    }

    /// First and last moment of the journal.
    pub fn extent(&self) -> Option<(i64, i64)> {
        Some((self.sessions.first()?.0, self.sessions.last()?.1))
    }
}

/// Derives the timeline from a journal's events, in journal order.
pub fn derive(events: &[BreezeEvent]) -> Timeline {
    let mut walk = Walk::default();
    for event in events {
        match parse_rfc3339(&event.at) {
            Some(at) => walk.step(at, &event.event),
            None => walk.skipped += 1,
        }
    }
    walk.finish()
}

/// Paint order of what is drawn over the states: later ranks win.
const RANK_COMMAND: u8 = 1;
const RANK_PROCESS: u8 = 2;
const RANK_CONSULT: u8 = 3;
const RANK_SCOPE: u8 = 4;

/// A task on its lane, its stay still open.
struct Open {
    lane: u32,
    start: i64,
    /// Base phases from its task states: (since, phase).
    states: Vec<(i64, Phase)>,
}

/// The walk through the journal.
#[derive(Default)]
struct Walk {
    now: i64,
    first: Option<i64>,
    session_start: Option<i64>,
    sessions: Vec<(i64, i64)>,
    open: BTreeMap<String, Open>,
    /// Tasks that wait off the lanes (a deferred landing, an approval): since, what for,
    /// and the journal's reason.
    deferred: BTreeMap<String, (i64, &'static str, Option<String>)>,
    /// Running role processes and project commands: pid → (task, phase, since).
    running: HashMap<u32, (String, Phase, i64)>,
    /// Tasks waiting for a scope grant, since.
    scope_waits: BTreeMap<String, i64>,
    /// Each task's last event before the current one.
    marks: HashMap<String, i64>,
    /// What is painted over the states: (rank, task, piece).
    overlays: Vec<(u8, String, Piece)>,
    /// Each task's worker attempts, in order.
    attempts: HashMap<String, Vec<AttemptSpan>>,
    stays: Vec<Stay>,
    sent_back: Vec<SentBack>,
    skipped: usize,
}

impl Walk {
    fn step(&mut self, at: i64, event: &EventKind) {
        // The journal's order is the truth; a clock stepping back does not reorder it.
        let at = at.max(self.now);
        self.now = at;
        self.first.get_or_insert(at);
        match event {
            EventKind::RunStarted { .. } => {
                self.end_session(at);
                self.session_start = Some(at);
            }
            EventKind::TaskState { task, state: TaskState::Running, reason, .. } => {
                self.attempt_started(at, task);
                self.task_state(at, task, "running", reason.as_deref());
            }
            EventKind::RunFinished { .. } => self.end_session(at),
            EventKind::TaskStarted { task, lane, .. } => self.task_started(at, task, *lane),
            EventKind::TaskState { task, state, reason, cause } => {
                self.gates_failed(task, cause.as_ref());
                self.task_state(at, task, state.as_str(), reason.as_deref());
            }
            EventKind::SentBack { task, reason, cause } => {
                self.gates_failed(task, Some(cause));
                self.sent_back.push(SentBack { task: task.clone(), at, reason: reason.clone() });
            }
            EventKind::ProcessStarted { task, role, pid, .. } => {
                if *role == Role::Worker {
                    self.attempt_started(at, task);
                }
                let phase = match role.as_str() {
                    "reviewer" => Phase::Review,
                    "advisor" => Phase::Advisor,
                    _ => Phase::Work,
                };
                self.running.insert(*pid, (task.clone(), phase, at));
            }
            EventKind::CommandStarted { task, purpose, pid, .. } => {
                if let Some(phase) = command_phase(purpose) {
                    self.running.insert(*pid, (task.clone(), phase, at));
                }
            }
            EventKind::ProcessEnded { pid, .. } | EventKind::CommandEnded { pid, .. } => {
                self.process_ended(at, *pid);
            }
            EventKind::AdvisorConsulted { task, .. } => self.consulted(at, task),
            EventKind::Attempt { task, attempt, outcome, .. } => {
                let mark = AttemptMark { number: *attempt, outcome: Some(*outcome) };
                let attempts = self.attempts.entry(task.clone()).or_default();
                match attempts.last_mut() {
                    Some(last) if last.open => {
                        last.mark = mark;
                        last.open = false;
                    }
                    // Its start is not in the journal: it ran since the task's last event.
                    _ => {
                        let start = self.marks.get(task).copied().unwrap_or(at);
                        attempts.push(AttemptSpan { start, mark, open: false });
                    }
                }
            }
            EventKind::ScopeDecided { task, decision, .. } => self.scope(at, task, *decision),
            _ => {}
        }
        if let Some(task) = task_of(event) {
            self.marks.insert(task.to_string(), at);
        }
    }

    /// A worker attempt of `task` starts at `at`, unless one is going on.
    fn attempt_started(&mut self, at: i64, task: &str) {
        let attempts = self.attempts.entry(task.to_string()).or_default();
        if attempts.last().is_some_and(|last| last.open) {
            return;
        }
        let number = attempts.last().map_or(1, |last| last.mark.number + 1);
        let mark = AttemptMark { number, outcome: None };
        attempts.push(AttemptSpan { start: at, mark, open: true });
    }

    /// A task sent back or escalated during review because a gate or check failed: no
    /// reviewer ran, the review's time so far went to the gates.
    fn gates_failed(&mut self, task: &str, cause: Option<&Cause>) {
        let by_gates =
            cause.is_some_and(|cause| matches!(cause.kind, CauseKind::Gate | CauseKind::Check));
        if by_gates
            && let Some(open) = self.open.get_mut(task)
            && let Some(last) = open.states.last_mut()
            && last.1 == Phase::Review
        {
            last.1 = Phase::Gates;
        }
    }

    fn task_started(&mut self, at: i64, task: &str, lane: u32) {
        self.close(task, at, "restarted", None);
        let holder = self.open.iter().find(|(_, open)| open.lane == lane).map(|(id, _)| id.clone());
        if let Some(holder) = holder {
            self.close(&holder, at, "replaced", None);
        }
        self.end_deferral(task, at, "restarted");
        let open = Open { lane, start: at, states: vec![(at, Phase::Waiting)] };
        self.open.insert(task.to_string(), open);
    }

    fn task_state(&mut self, at: i64, task: &str, state: &str, reason: Option<&str>) {
        let leaves = matches!(
            state,
            "landed" | "escalated" | "blocked" | "failed" | "deferred" | "awaiting-approval"
        );
        if leaves {
            if state == "landed" && !self.open.contains_key(task) {
                self.landed_after_stop(task);
            }
            self.close(task, at, state, reason);
            self.end_deferral(task, at, state);
            let why = reason.map(str::to_string);
            if state == "deferred" {
                self.deferred.insert(task.to_string(), (at, "deferred", why));
            } else if state == "awaiting-approval" {
                self.deferred.insert(task.to_string(), (at, "awaiting-approval", why));
            }
        } else if let Some(open) = self.open.get_mut(task) {
            open.states.push((at, Phase::of_state(state)));
        } else if state == "landing" {
            // Landing from the queue, off every lane (an approval taken up, a resumed
            // run's approved task): a stay off the lanes, ended by what follows.
            self.end_deferral(task, at, "restarted");
            self.deferred.insert(task.to_string(), (at, "landing", None));
        }
    }

    /// A task recognized as landed when its run resumed (the engine was killed while it
    /// landed): its last stay, cut off as `stopped`, ended with the landing.
    fn landed_after_stop(&mut self, task: &str) {
        if let Some(stay) = self.stays.iter_mut().rev().find(|stay| stay.task == task)
            && stay.ended == "stopped"
        {
            stay.ended = "landed".into();
        }
    }

    fn process_ended(&mut self, at: i64, pid: u32) {
        if let Some((task, phase, since)) = self.running.remove(&pid) {
            let rank = if phase == Phase::Gates || phase == Phase::Landing {
                RANK_COMMAND
            } else {
                RANK_PROCESS
            };
            self.overlays.push((rank, task, Piece::new(since, at, phase)));
        }
    }

    /// The Advisor answered. Without a journaled advisor process (the in-process scripted
    /// backend), the consult took the time since the task's previous event.
    fn consulted(&mut self, at: i64, task: &str) {
        let since = self.marks.get(task).copied().unwrap_or(at);
        let seen = self.running.values().any(|(t, phase, _)| t == task && *phase == Phase::Advisor)
            || self.overlays.iter().any(|(_, t, piece)| {
                t == task && piece.phase == Phase::Advisor && piece.end >= since
            });
        if !seen {
            let piece = Piece::new(since, at, Phase::Advisor);
            self.overlays.push((RANK_CONSULT, task.to_string(), piece));
        }
    }

    fn scope(&mut self, at: i64, task: &str, decision: ScopeAnswer) {
        if decision == ScopeAnswer::Waiting {
            self.scope_waits.entry(task.to_string()).or_insert(at);
        } else {
            self.scope_wait_ended(at, task);
        }
    }

    /// The wait of `task` for a scope answer, if it waited, ended at `at`.
    fn scope_wait_ended(&mut self, at: i64, task: &str) {
        if let Some(since) = self.scope_waits.remove(task) {
            let piece = Piece::new(since, at, Phase::Waiting);
            self.overlays.push((RANK_SCOPE, task.to_string(), piece));
        }
    }

    /// Ends the open stay of `task`, if any; `why` is the journal's reason.
    fn close(&mut self, task: &str, at: i64, ended: &str, why: Option<&str>) {
        let Some(open) = self.open.remove(task) else { return };
        let mut pieces = Vec::with_capacity(open.states.len());
        for (n, &(since, phase)) in open.states.iter().enumerate() {
            let until = open.states.get(n + 1).map_or(at, |next| next.0);
            if until > since {
                pieces.push(Piece::new(since, until, phase));
            }
        }
        self.stays.push(Stay {
            task: task.to_string(),
            lane: Some(open.lane),
            start: open.start,
            end: at,
            pieces,
            ended: ended.to_string(),
            why: why.map(str::to_string),
        });
    }

    /// Ends the off-lane wait of a task, if any, because of `by` (a state, `restarted`,
    /// `stopped`); the stay is named after what it waited for (`deferred`,
    /// `awaiting-approval`), a landing from the queue after how it ended (`landed`, …).
    fn end_deferral(&mut self, task: &str, at: i64, by: &str) {
        let Some((since, what, why)) = self.deferred.remove(task) else { return };
        let landing = what == "landing";
        let phase = if landing { Phase::Landing } else { Phase::Waiting };
        let piece = Piece::new(since, at, phase);
        let pieces = if at > since { vec![piece] } else { Vec::new() };
        let ended = if landing { by.to_string() } else { what.to_string() };
        self.stays.push(Stay {
            task: task.into(),
            lane: None,
            start: since,
            end: at,
            pieces,
            ended,
            why,
        });
    }

    /// The engine stopped (or started again): everything open ends now.
    fn end_session(&mut self, at: i64) {
        if let Some(start) = self.session_start.take() {
            self.sessions.push((start, at));
        }
        let tasks: Vec<String> = self.open.keys().cloned().collect();
        for task in tasks {
            self.close(&task, at, "stopped", None);
        }
        let deferred: Vec<String> = self.deferred.keys().cloned().collect();
        for task in deferred {
            self.end_deferral(&task, at, "stopped");
        }
        let pids: Vec<u32> = self.running.keys().copied().collect();
        for pid in pids {
            self.process_ended(at, pid);
        }
        let waits: Vec<String> = self.scope_waits.keys().cloned().collect();
        for task in waits {
            self.scope_wait_ended(at, &task);
        }
        // An attempt the engine stopped in is over: after a resume the next one starts.
        for attempt in self.attempts.values_mut().flat_map(|attempts| attempts.last_mut()) {
            attempt.open = false;
        }
    }

    fn finish(mut self) -> Timeline {
        let now = self.now;
        self.end_session(now);
        if self.sessions.is_empty()
            && let Some(first) = self.first
        {
            self.sessions.push((first, now));
        }
        self.overlays.sort_by_key(|(rank, _, _)| *rank);
        let mut by_task: HashMap<&str, Vec<Piece>> = HashMap::new();
        for (_, task, piece) in &self.overlays {
            by_task.entry(task.as_str()).or_default().push(*piece);
        }
        let mut stays = std::mem::take(&mut self.stays);
        for stay in stays.iter_mut().filter(|stay| stay.lane.is_some()) {
            let overlays = by_task.get(stay.task.as_str()).map(Vec::as_slice).unwrap_or_default();
            refine(stay, overlays);
            let attempts = self.attempts.get(&stay.task).map(Vec::as_slice).unwrap_or_default();
            stay.pieces = split_attempts(&stay.pieces, attempts);
        }
        Timeline {
            sessions: self.sessions,
            stays,
            sent_back: self.sent_back,
            skipped: self.skipped,
        }
    }
}

/// The phase a project command stands for (`review.checks` are gates; `land.verify` and
/// the landing hooks are landing); others (the lane's setup) keep the state's phase.
fn command_phase(purpose: &str) -> Option<Phase> {
    if purpose.starts_with("review.") {
        Some(Phase::Gates)
    } else if purpose.starts_with("land.") {
        Some(Phase::Landing)
    } else {
        None
    }
}

/// The task an event is about, if it names one.
fn task_of(event: &EventKind) -> Option<&str> {
    match event {
        EventKind::TaskStarted { task, .. }
        | EventKind::TaskState { task, .. }
        | EventKind::SentBack { task, .. }
        | EventKind::ProcessStarted { task, .. }
        | EventKind::ProcessEnded { task, .. }
        | EventKind::CommandStarted { task, .. }
        | EventKind::Attempt { task, .. }
        | EventKind::AdvisorConsulted { task, .. }
        | EventKind::Reviewed { task, .. }
        | EventKind::ScopeDecided { task, .. }
        | EventKind::Landed { task, .. }
        | EventKind::CheckoutUpdate { task, .. }
        | EventKind::Attached { task, .. }
        | EventKind::PersonAttempt { task, .. }
        | EventKind::BackendTrouble { task, .. }
        | EventKind::Spent { task, .. } => Some(task),
        _ => None,
    }
}

/// Paints the task's processes, commands, consults and scope waits over the phases of
/// its states. In a review whose reviewer process is journaled, the time before the
/// reviewer started went to the gates.
fn refine(stay: &mut Stay, overlays: &[Piece]) {
    let mut pieces = stay.pieces.clone();
    for base in stay.pieces.iter().filter(|piece| piece.phase == Phase::Review) {
        let reviewer = overlays
            .iter()
            .filter(|o| o.phase == Phase::Review && o.start >= base.start && o.start < base.end)
            .map(|o| o.start)
            .min();
        if let Some(reviewer) = reviewer {
            pieces = paint(&pieces, Piece::new(base.start, reviewer, Phase::Gates));
        }
    }
    for overlay in overlays {
        let clipped =
            Piece::new(overlay.start.max(stay.start), overlay.end.min(stay.end), overlay.phase);
        pieces = paint(&pieces, clipped);
    }
    stay.pieces = merge(pieces);
}

/// `pieces` with `over` painted over them.
fn paint(pieces: &[Piece], over: Piece) -> Vec<Piece> {
    if over.end <= over.start {
        return pieces.to_vec();
    }
    let mut out = Vec::with_capacity(pieces.len() + 2);
    for piece in pieces {
        if piece.end <= over.start || piece.start >= over.end {
            out.push(*piece);
            continue;
        }
        if piece.start < over.start {
            out.push(Piece { end: over.start, ..*piece });
        }
        if piece.end > over.end {
            out.push(Piece { start: over.end, ..*piece });
        }
    }
    out.push(over);
    out.sort_by_key(|piece| piece.start);
    out
}

/// The work pieces cut where an attempt started, each marked with its attempt: the last
/// one that started by the piece's start (work before the first start is the first's).
fn split_attempts(pieces: &[Piece], attempts: &[AttemptSpan]) -> Vec<Piece> {
    let Some(first) = attempts.first() else { return pieces.to_vec() };
    let mut out = Vec::with_capacity(pieces.len() + attempts.len());
    for piece in pieces {
        if piece.phase != Phase::Work {
            out.push(*piece);
            continue;
        }
        let mut start = piece.start;
        for attempt in attempts.iter().filter(|a| a.start > piece.start && a.start < piece.end) {
            out.push(Piece::new(start, attempt.start, Phase::Work));
            start = attempt.start;
        }
        out.push(Piece::new(start, piece.end, Phase::Work));
    }
    for piece in out.iter_mut().filter(|piece| piece.phase == Phase::Work) {
        let attempt = attempts.iter().rev().find(|a| a.start <= piece.start).unwrap_or(first);
        piece.attempt = Some(attempt.mark);
    }
    out
}

/// Neighbouring pieces of one phase joined.
fn merge(pieces: Vec<Piece>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::with_capacity(pieces.len());
    for piece in pieces {
        match out.last_mut() {
            Some(last) if last.phase == piece.phase && last.end == piece.start => {
                last.end = piece.end;
            }
            _ => out.push(piece),
        }
    }
    out
}

#[cfg(test)]
mod tests;
