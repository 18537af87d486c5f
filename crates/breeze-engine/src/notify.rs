//! `[notify] command`: a command the user's way of being told (`notify-send`, a webhook
//! script) runs when a task escalates, fails, is deferred or awaits approval, when a
//! `--wait` run starts waiting on something new (once per wait, not at each look), and
//! when the run ends — with the journal event as JSON on stdin (its `cause` says what happened). Commands that take text in their
//! arguments (`notify-send`) get it from placeholders: `{summary}` (one line a person
//! reads), `{task}`, `{state}`; the same three are in `BREEZE_NOTIFY_SUMMARY`,
//! `BREEZE_NOTIFY_TASK` and `BREEZE_NOTIFY_STATE`. A notification never holds the run up:
//! they run in the background, one after another in the journal's order (so "the run
//! failed" never comes before the escalation that failed it), each bounded in time; the
//! run's end waits a little for them.

use std::path::PathBuf;
use std::time::Duration;

use breeze_protocol::{BreezeEvent, EventKind, RunState, TaskState};
use breeze_supervise::{ProcessSpec, Supervisor};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// How long one notification may run.
const TIMEOUT: Duration = Duration::from_secs(30);
/// How long the run's end waits for notifications still running.
const FLUSH: Duration = Duration::from_secs(10);

/// Runs the notify command for the events worth telling.
pub(crate) struct Notifier {
    argv: Vec<String>,
    cwd: PathBuf,
    logs: PathBuf,
    queue: mpsc::UnboundedSender<Queued>,
    sent: std::sync::atomic::AtomicU32,
    /// The deferral last told for each task deferred now: a landing tried again and
    /// deferred for the same reason is the same wait, told once.
    deferrals: std::sync::Mutex<std::collections::HashMap<String, Option<String>>>,
}

/// What the background teller is handed, in order.
enum Queued {
    /// A notification to run.
    Tell(Box<ProcessSpec>),
    /// Answered once every notification queued before it has run.
    Flush(oneshot::Sender<()>),
}

impl Notifier {
    /// A notifier running `argv` in `cwd`, logging to `logs`; `None` when no command is set.
    /// Must be made inside the run's tokio runtime.
    pub fn new(
        argv: &[String],
        cwd: PathBuf,
        logs: PathBuf,
        supervisor: Supervisor,
    ) -> Option<Notifier> {
        if argv.is_empty() {
            return None;
        }
        let (queue, queued) = mpsc::unbounded_channel();
        tokio::spawn(tell_in_order(queued, supervisor));
        Some(Notifier {
            argv: argv.to_vec(),
            cwd,
            logs,
            queue,
            sent: Default::default(),
            deferrals: Default::default(),
        })
    }

    /// Whether an event is one the user asked to be told about.
    pub fn worth_telling(event: &EventKind) -> bool {
        match event {
            EventKind::TaskState { state, .. } => matches!(
                state,
                TaskState::Escalated
                    | TaskState::Failed
                    | TaskState::Deferred
                    | TaskState::AwaitingApproval
            ),
            EventKind::RunWaiting { .. } | EventKind::RunFinished { .. } => true,
            _ => false,
        }
    }

    /// Whether `event` repeats a deferral already told: the same task deferred again for
    /// the same reason, its landing only tried in between.
    fn told_before(&self, event: &EventKind) -> bool {
        let EventKind::TaskState { task, state, reason, .. } = event else { return false };
        let mut deferrals = self.deferrals.lock().unwrap_or_else(|p| p.into_inner());
        match state {
            TaskState::Deferred => {
                deferrals.insert(task.clone(), reason.clone()).is_some_and(|told| told == *reason)
            }
            TaskState::Landing => false,
            _ => {
                deferrals.remove(task);
                false
            }
        }
    }

    /// Queues the command for `event` (if it is worth telling), behind those before it, and
    /// returns at once. Called from any thread.
    pub fn tell(&self, event: &BreezeEvent) {
        if self.told_before(&event.event) || !Self::worth_telling(&event.event) {
            return;
        }
        let Ok(mut stdin) = serde_json::to_vec(event) else { return };
        stdin.push(b'\n');
        let n = self.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let told = Told::of(&event.event);
        let argv = self.argv.iter().map(|arg| told.fill(arg)).collect();
        let mut spec = ProcessSpec::new(argv, &self.cwd, self.logs.join(format!("notify.{n}")));
        // The user's own command, like `land.verify`: it gets the engine's environment.
        spec.env = std::env::vars().collect();
        spec.env.extend([
            ("BREEZE_NOTIFY_SUMMARY".to_owned(), told.summary),
            ("BREEZE_NOTIFY_TASK".to_owned(), told.task),
            ("BREEZE_NOTIFY_STATE".to_owned(), told.state.to_owned()),
        ]);
        spec.stdin = stdin;
        spec.timeout = Some(TIMEOUT);
        // Only gone when the runtime is, and then nobody waits for it.
        let _ = self.queue.send(Queued::Tell(Box::new(spec)));
    }

    /// Waits (a bounded time) for the notifications still queued or running.
    pub async fn flush(&self) {
        let (done, told) = oneshot::channel();
        if self.queue.send(Queued::Flush(done)).is_ok() {
            let _ = tokio::time::timeout(FLUSH, told).await;
        }
    }
}

/// Runs the queued notifications one at a time until the notifier is gone.
async fn tell_in_order(mut queued: mpsc::UnboundedReceiver<Queued>, supervisor: Supervisor) {
    while let Some(next) = queued.recv().await {
        let spec = match next {
            Queued::Tell(spec) => spec,
            Queued::Flush(done) => {
                let _ = done.send(());
                continue;
            }
        };
        let outcome =
            supervisor.run(*spec, None, CancellationToken::new(), |_, _| {}, |_| {}).await;
        match outcome {
            Ok(outcome) if outcome.ending.is_success() => {}
            Ok(outcome) => tracing::warn!(
                "the notify command {}: {}",
                outcome.ending,
                outcome.stderr_tail.trim()
            ),
            Err(err) => tracing::warn!("the notify command could not start: {err}"),
        }
    }
}

/// What a notification says, for commands that take it as arguments.
#[derive(Debug, PartialEq)]
struct Told {
    /// One line a person reads.
    summary: String,
    /// The task's id; empty for the run's end.
    task: String,
    /// The task's or the run's new state.
    state: &'static str,
}

impl Told {
    fn of(event: &EventKind) -> Told {
        match event {
            EventKind::TaskState { task, state, reason, .. } => {
                let summary = match (state, reason) {
                    (TaskState::AwaitingApproval, _) => {
                        format!("task {task} awaits approval: `breeze approve {task}` lands it")
                    }
                    (_, Some(reason)) => {
                        format!("task {task} {state}: {reason}", state = state.as_str())
                    }
                    (_, None) => format!("task {task} {}", state.as_str()),
                };
                Told { summary, task: task.clone(), state: state.as_str() }
            }
            EventKind::RunWaiting { waits } => {
                let lines: Vec<String> = waits.iter().map(|wait| wait.line()).collect();
                let tasks: Vec<&str> =
                    waits.iter().flat_map(|wait| wait.tasks.iter().map(String::as_str)).collect();
                Told {
                    summary: format!("the run is {}", lines.join("; ")),
                    task: tasks.join(" "),
                    state: RunState::Waiting.as_str(),
                }
            }
            EventKind::RunFinished { state } => Told {
                summary: format!("the run {}", state.as_str()),
                task: String::new(),
                state: state.as_str(),
            },
            _ => Told { summary: String::new(), task: String::new(), state: "" },
        }
    }

    /// `arg` with its placeholders filled in.
    fn fill(&self, arg: &str) -> String {
        arg.replace("{summary}", &self.summary)
            .replace("{task}", &self.task)
            .replace("{state}", self.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_carry_a_line_a_person_reads() {
        let escalated = EventKind::TaskState {
            task: "3".into(),
            state: TaskState::Escalated,
            reason: Some("three review rounds".into()),
            cause: None,
        };
        let told = Told::of(&escalated);
        assert_eq!(told.fill("{summary}"), "task 3 escalated: three review rounds");
        assert_eq!(told.fill("breeze {task} is {state}"), "breeze 3 is escalated");
        let waiting = EventKind::TaskState {
            task: "4".into(),
            state: TaskState::AwaitingApproval,
            reason: None,
            cause: None,
        };
        assert!(Told::of(&waiting).summary.contains("breeze approve 4"));
        let ended = Told::of(&EventKind::RunFinished { state: RunState::Failed });
        assert_eq!(ended.fill("{summary} ({task})"), "the run failed ()");
        let waits = vec![breeze_protocol::RunWait {
            waiting_for: breeze_protocol::WaitingFor::Approval,
            tasks: vec!["2".into(), "4".into()],
            since: "2026-12-01T12:03:10Z".into(),
        }];
        let waiting = Told::of(&EventKind::RunWaiting { waits });
        assert_eq!(
            waiting.fill("{state}: {summary} ({task})"),
            "waiting: the run is waiting for approval of 2, 4 since 12:03:10 (2 4)"
        );
    }
}
