//! `breeze diff`, `breeze attach`, `breeze open`: a person stepping into a task of the
//! latest run (see `breeze_engine::step_in`).

use std::path::Path;
use std::time::Duration;

use breeze_engine::step_in::request::{AttachFiles, Paused};
use breeze_engine::step_in::session::{self, SessionOptions};
use breeze_engine::step_in::stopped::{PersonAttempt, StoppedAttach};
use breeze_engine::step_in::{TaskAt, diff};
use breeze_git::ChangeView;
use breeze_protocol::ExitCode;
use tokio::signal::unix::{SignalKind, signal};

use crate::args::{AttachArgs, DiffArgs, OpenArgs};
use crate::commands::run::runtime;
use crate::error::{CliError, CliResult, ErrorKind};
use crate::output;

/// How often `breeze attach` looks whether the live run paused the task, or took what the
/// person left.
const POLL: Duration = Duration::from_millis(200);

pub fn diff(args: &DiffArgs) -> CliResult {
    let view = if args.stat { ChangeView::Stat } else { ChangeView::Patch };
    let change = diff::task_change(&crate::workdir::here(), &args.task, view)?;
    let from = match &change.source {
        diff::ChangeSource::Worktree(path) => {
            format!("its worktree {} (with what is not committed yet)", path.display())
        }
        diff::ChangeSource::Branch(branch) => format!("its branch `{branch}`"),
        diff::ChangeSource::Landing(commit) => format!("its landing commit {commit}"),
    };
    if change.text.is_empty() {
        output::eprint(&format!(
            "task {} has no change yet: {from} is as its base {}\n",
            args.task, change.base
        ));
        return Ok(ExitCode::Success);
    }
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal() {
        output::eprint(&format!("task {}: {from} against its base {}\n", args.task, change.base));
    }
    output::print(&change.text)?;
    Ok(ExitCode::Success)
}

pub fn open(args: &OpenArgs) -> CliResult {
    let open = breeze_engine::step_in::open_place(&crate::workdir::here(), &args.task)?;
    let place = open.worktree.clone();
    let editor = ["VISUAL", "EDITOR"]
        .into_iter()
        .find_map(|name| std::env::var(name).ok().filter(|value| !value.trim().is_empty()))
        .ok_or_else(|| {
            CliError::usage("neither $VISUAL nor $EDITOR is set: breeze does not know your editor")
                .hint(format!(
                    "set one (`export EDITOR=vim`), or open {} yourself",
                    place.display()
                ))
        })?;
    output::eprint(&format!(
        "opening {} in `{editor}`; nothing is paused: while a worker works there, what you change is part of its attempt (`breeze attach {}` pauses the task first)\n",
        place.display(),
        args.task
    ));
    // As git runs an editor: through the shell, so `code --wait` works.
    let spec = breeze_supervise::InteractiveSpec {
        argv: vec![
            "sh".into(),
            "-c".into(),
            format!("{editor} \"$@\""),
            editor.clone(),
            place.display().to_string(),
        ],
        cwd: place.clone(),
        // The editor's git reads the repository's configuration, never what a worker wrote
        // in its private git directory.
        env: std::env::vars()
            .filter(|(name, _)| !breeze_engine::step_in::OpenPlace::sets(name))
            .chain(open.git_env())
            .collect(),
        confinement: None,
    };
    let status = runtime()?
        .block_on(breeze_supervise::run_interactive(spec))
        .map_err(|err| CliError::new(ErrorKind::Io, err.to_string()).caused_by(err))?;
    if !status.success() {
        return Err(CliError::usage(format!("`{editor}` ended with {status}")));
    }
    Ok(ExitCode::Success)
}

pub fn attach(args: &AttachArgs) -> CliResult {
    let options = SessionOptions { shell: args.shell, unconfined: args.unconfined };
    runtime()?.block_on(attach_to(&crate::workdir::here(), &args.task, options))
}

async fn attach_to(here: &Path, id: &str, options: SessionOptions) -> CliResult {
    let task = TaskAt::find(here, id)?;
    task.check_attachable()?;
    if task.live {
        let files = AttachFiles::new(&task.run_dir, id);
        match wait_for_pause(here, id, &files).await? {
            Waited::Paused(paused) => {
                return attached_live(here, &task, &files, &paused, options).await;
            }
            Waited::GaveUp => return Ok(ExitCode::Interrupted),
            // The run ended before the task paused: no run is live now.
            Waited::RunEnded => {}
        }
    }
    let stopped = StoppedAttach::open(here, id, None)?;
    // Said before anything can fail: the branch is there whatever happens next.
    if let Some(saved) = &stopped.saved_leftovers {
        say(&format!(
            "what changed in the task's kept lane since its run parked it is saved on branch `{saved}` (`git log {saved}` shows it)"
        ));
    }
    // A session that cannot be prepared (its confinement, say) journals nothing, and a
    // worktree made for it alone goes (see `StoppedAttach::abandon`).
    let session = match prepare_session(&task, &stopped.paused, options) {
        Ok(session) => session,
        Err(err) => {
            stopped.abandon();
            return Err(err);
        }
    };
    stopped.record_start()?;
    say(&format!(
        "no run is live: task {id} is checked out in {}",
        stopped.paused.worktree.display()
    ));
    let branch = stopped.paused.branch.clone();
    let opened = open_session(session).await;
    let report = stopped.finish()?;
    opened?;
    let mut lines = Vec::new();
    if report.retried {
        lines.push(format!("task {id} was escalated or failed: it is taken up again with a fresh budget, as `breeze retry` does"));
    }
    if !report.unblocked.is_empty() {
        lines.push(format!("tasks waiting on it again: {}", report.unblocked.join(", ")));
    }
    lines.push(match &report.attempt {
        PersonAttempt::Changed { head } => format!(
            "your change is committed on `{branch}` ({}); `breeze resume` reviews it like a worker's change and goes on",
            &head[..12]
        ),
        PersonAttempt::Unchanged => "you changed nothing; `breeze resume` continues the task".into(),
        PersonAttempt::NotCommitted(why) => format!(
            "what you left cannot be committed ({why}); it stays in the worktree for the task's next attempt; `breeze resume` continues"
        ),
    });
    if let Some(kept) = &report.kept {
        lines.push(format!("the worktree {} stays", kept.display()));
    }
    say(&lines.join("\n"));
    Ok(ExitCode::Success)
}

/// How waiting for the live run's pause ended.
enum Waited {
    Paused(Paused),
    /// Ctrl-C: the request is withdrawn.
    GaveUp,
    RunEnded,
}

/// Leaves the attach request and waits until the live run pauses the task, Ctrl-C or the
/// run's end.
async fn wait_for_pause(here: &Path, id: &str, files: &AttachFiles) -> Result<Waited, CliError> {
    let mut interrupt =
        signal(SignalKind::interrupt()).map_err(|err| CliError::io("cannot catch Ctrl-C", err))?;
    files.request()?;
    say(&format!(
        "waiting for task {id} to reach a safe point (before its next worker attempt, review or landing: the step it is in now finishes first); Ctrl-C gives up"
    ));
    loop {
        if let Some(paused) = files.paused() {
            return Ok(Waited::Paused(paused));
        }
        if !breeze_engine::run::engine_alive(here) {
            files.withdraw();
            return Ok(Waited::RunEnded);
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            _ = interrupt.recv() => {
                files.withdraw();
                say(&format!("gave up waiting; task {id} goes on as it was"));
                return Ok(Waited::GaveUp);
            }
        }
    }
}

/// The session of a task the live run paused, and the hand-back once the person leaves.
async fn attached_live(
    here: &Path,
    task: &TaskAt,
    files: &AttachFiles,
    paused: &Paused,
    options: SessionOptions,
) -> CliResult {
    let id = &task.record.id;
    let lane = paused.lane.map(|lane| format!(" in lane {lane}")).unwrap_or_default();
    let session = match prepare_session(task, paused, options) {
        Ok(session) => session,
        Err(err) => {
            // The task must not wait for a session that never opens.
            let _ = files.leave();
            return Err(err);
        }
    };
    say(&format!("task {id} is paused{lane}"));
    let opened = open_session(session).await;
    files.leave()?;
    opened?;
    loop {
        if files.taken() {
            let outcome = breeze_engine::step_in::last_person_attempt(&task.run_dir, id);
            say(&match outcome {
                Some(PersonAttempt::Changed { .. }) => format!(
                    "task {id} goes on: your change goes through the gates and review like a worker's change"
                ),
                Some(PersonAttempt::NotCommitted(why)) => format!(
                    "task {id} goes on, without your change: it cannot be committed ({why}); it stays in {} for the task's next attempt — `breeze attach {id}` again to fix it yourself",
                    paused.worktree.display()
                ),
                _ => format!("task {id} goes on where it paused: you changed nothing"),
            });
            return Ok(ExitCode::Success);
        }
        if !breeze_engine::run::engine_alive(here) {
            // The run stopped while the person worked: their attempt is recorded for resume.
            let stopped = StoppedAttach::open(here, id, Some(paused))?;
            let report = stopped.finish()?;
            say(&format!(
                "the run stopped meanwhile; your attempt is recorded ({}): `breeze resume` goes on",
                report.attempt.outcome()
            ));
            return Ok(ExitCode::Success);
        }
        tokio::time::sleep(POLL).await;
    }
}

fn prepare_session(
    task: &TaskAt,
    paused: &Paused,
    options: SessionOptions,
) -> Result<session::Session, CliError> {
    let config =
        breeze_engine::Config::load(&task.root).map_err(breeze_engine::EngineError::from)?;
    session::prepare(&task.root, &task.run_dir, &config, &task.record.id, paused, options)
        .map_err(CliError::from)
}

/// Opens the session in this terminal and waits until the person leaves it.
async fn open_session(session: session::Session) -> Result<(), CliError> {
    say(&format!(
        "opening {} in {}\n{}\nleave it (exit) and the task goes on: what you changed there is reviewed like a worker's change",
        session.what,
        session.spec.cwd.display(),
        session.confinement
    ));
    let status = breeze_supervise::run_interactive(session.spec.clone()).await;
    for repair in session.hand_back()? {
        say(&format!("{repair} (repaired)"));
    }
    let status = status.map_err(|err| {
        CliError::new(ErrorKind::Io, format!("the session could not open: {err}")).caused_by(err)
    })?;
    if !status.success() {
        say(&format!("the session ended with {status}"));
    }
    Ok(())
}

/// A message for the person, on stderr (stdout stays the session's).
fn say(text: &str) {
    output::eprint(&format!("breeze: {}\n", output::shown(text).replace('\n', "\nbreeze: ")));
}
