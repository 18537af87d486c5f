//! An approved task's landing commit on a parent: its change merged in memory, its
//! Plans.md row flipped to done, its reviewed changelog line added, the repository's hooks
//! run, and the commit written with its trailers — the same for one landing and for a
//! batch, whatever the landing mode. No ref moves here; a mode publishes the commit.

use std::path::Path;

use breeze_git::{MergeOutcome, Oid};
use breeze_protocol::{Cause, CauseKind, VerifyFailure};
use breeze_supervise::Ending;

use super::verify::{Link, failure_of, integration_worktree};
use crate::error::EngineError;
use crate::kill_points;
use crate::lane_env::LaneEnv;
use crate::run::context::{ProjectCommand, RunContext};
use crate::run_dir::file_slug;

/// How often a landing is retried when main moves underneath it.
pub(crate) const RACE_RETRIES: u32 = 5;
/// The largest landing message a commit-msg hook may leave (a longer one is ignored).
const MAX_MESSAGE_BYTES: u64 = 1024 * 1024;

/// The error when main moved under every one of `tries` tries of a landing.
pub(crate) fn kept_moving(what: &str, tries: u32) -> EngineError {
    EngineError::usage(
        format!("main kept moving while task {what} was landing ({tries} tries)"),
        "stop whatever is committing to main, then `breeze resume`",
    )
}

/// main's tip, once it is known that no role moved main onto a commit made in a lane.
pub(crate) async fn main_to_land_on(ctx: &RunContext) -> Result<Oid, EngineError> {
    let guard = ctx.roles.guard.clone();
    ctx.blocking(move || guard.check_main()).await?;
    ctx.git(|repo| repo.main_tip()).await
}

/// An approved task ready to land: what its landing commit is made of.
pub(crate) struct Candidate {
    pub index: usize,
    pub id: String,
    base: Oid,
    head: Oid,
    message: String,
    changelog: Option<String>,
}

impl Candidate {
    /// The approved task at `index`, from its record.
    pub(crate) async fn of(ctx: &RunContext, index: usize) -> Result<Candidate, EngineError> {
        let record = ctx.book.record(index);
        let id = ctx.task(index).id.to_string();
        let (Some(base), Some(head)) = (record.base, record.head) else {
            return Err(EngineError::Internal {
                context: format!("landing task {id}"),
                message: "the approved task has no base or head commit in run.json".into(),
            });
        };
        let review = record
            .review_trailer()
            .unwrap_or_else(|| breeze_git::ReviewTrailer::from(record.rounds));
        let subject = landing_subject(ctx, index, base.0, head.0).await?;
        let message = breeze_git::landing_commit_message(&subject, None, &id, &ctx.run_id, review);
        Ok(Candidate {
            index,
            id,
            base: base.0,
            head: head.0,
            message,
            changelog: record.changelog,
        })
    }

    /// Its landing commit on main, when a run cut short landed it already (found by its
    /// trailers since the run started).
    pub(crate) async fn landed_before(&self, ctx: &RunContext) -> Result<Option<Oid>, EngineError> {
        ctx.landed_on_main(self.index).await
    }
}

/// The subject of task `index`'s landing commit (`land.message`): its type — the plan's,
/// else inferred from the paths it changed between `base` and `head` — and its title.
pub(crate) async fn landing_subject(
    ctx: &RunContext,
    index: usize,
    base: Oid,
    head: Oid,
) -> Result<String, EngineError> {
    let changes = ctx.git(move |repo| repo.changed_paths(base, head)).await?;
    let paths: Vec<&str> = changes.iter().flat_map(|change| change.touched_paths()).collect();
    let task = ctx.task(index);
    let kind = crate::landing_message::commit_type(task, &paths);
    Ok(ctx.config.land.message.subject(kind, &task.title, task.id.as_str()))
}

/// A candidate's landing commit on a parent, or why there is none.
pub(crate) enum Prepared {
    /// Written (no ref moved).
    Link(Link),
    /// The change does not merge onto the parent.
    Conflict { files: Vec<String> },
    /// A repository hook refused it (`land.run_hooks`): what the worker is told, the cause.
    HookFailed(VerifyFailure, Cause),
}

/// Merges the candidate onto `parent` in memory, flips its Plans.md marker, adds its
/// reviewed changelog line, runs the hooks and writes its landing commit on `parent`.
pub(crate) async fn prepare(
    ctx: &RunContext,
    candidate: &Candidate,
    parent: Oid,
) -> Result<Prepared, EngineError> {
    let (base, head) = (candidate.base, candidate.head);
    let tree = match ctx.git(move |repo| repo.merge_task(base, head, parent)).await? {
        MergeOutcome::Clean { tree } => tree,
        MergeOutcome::Conflicts { paths } => return Ok(Prepared::Conflict { files: paths }),
    };
    let tree = flip_plans_marker(ctx, &candidate.id, tree).await?;
    let tree = match &candidate.changelog {
        Some(entry) => add_changelog_entry(ctx, tree, entry).await?,
        None => tree,
    };
    kill_points::reached("landing:merged");
    let mut message = candidate.message.clone();
    if ctx.config.run_hooks {
        match run_hooks(ctx, &candidate.id, parent, tree, &message).await? {
            Hooks::Failed(failed) => {
                let (failure, cause) = *failed;
                return Ok(Prepared::HookFailed(failure, cause));
            }
            Hooks::Passed { message: Some(edited) } => message = edited,
            Hooks::Passed { message: None } => {}
        }
    }
    let commit =
        ctx.git(move |repo| repo.write_landing_commit(tree, parent, head, &message)).await?;
    kill_points::reached("landing:committed");
    let (index, id) = (candidate.index, candidate.id.clone());
    Ok(Prepared::Link(Link { index, id, parent, commit, tree }))
}

/// Flips the task's row in a tracked Plans.md to `cc:done` in the landing tree.
async fn flip_plans_marker(ctx: &RunContext, id: &str, tree: Oid) -> Result<Oid, EngineError> {
    let Some(plans_file) = ctx.tracked_plans_file.clone() else { return Ok(tree) };
    let path = plans_file.clone();
    let Some(bytes) = ctx.git(move |repo| repo.read_blob_at(tree, &path)).await? else {
        return Ok(tree);
    };
    let Ok(text) = String::from_utf8(bytes) else { return Ok(tree) };
    let task_id = breeze_plan::TaskId::new(id);
    match breeze_plan::plans_md::set_status(&text, &task_id, "cc:done") {
        Ok(updated) if updated != text => {
            ctx.git(move |repo| repo.replace_in_tree(tree, &plans_file, updated.as_bytes())).await
        }
        Ok(_) => Ok(tree),
        Err(err) => {
            tracing::warn!(task = %id, "cannot flip the Plans.md marker: {err}");
            Ok(tree)
        }
    }
}

/// Adds the worker's changelog line to the project's changelog in the landing tree
/// (`land.changelog`: found at the tree's root, or named; the file created when the
/// repository has none), in the file's own format. Off: the tree as it is.
async fn add_changelog_entry(ctx: &RunContext, tree: Oid, entry: &str) -> Result<Oid, EngineError> {
    let setting = ctx.config.land.changelog.clone();
    let entry = entry.to_string();
    ctx.git(move |repo| {
        let Some(file) = setting.file_in_tree(repo, tree)? else { return Ok(tree) };
        let current = repo.read_blob_at(tree, &file)?;
        let updated = crate::changelog::updated_changelog(&file, current.as_deref(), &entry);
        repo.replace_in_tree(tree, &file, updated.as_bytes())
    })
    .await
}

/// What the repository's hooks said about a landing.
enum Hooks {
    /// They passed; `commit-msg` may have edited the message.
    Passed { message: Option<String> },
    /// One failed: the task goes back to its worker like a failed verify.
    Failed(Box<(VerifyFailure, Cause)>),
}

/// Runs the repository's `pre-commit` (with the landing staged on main's tip, as `git
/// commit` would) and `commit-msg` (on the landing message) hooks, when `land.run_hooks`.
async fn run_hooks(
    ctx: &RunContext,
    id: &str,
    parent: Oid,
    tree: Oid,
    message: &str,
) -> Result<Hooks, EngineError> {
    use std::os::unix::fs::PermissionsExt;
    let hooks = ctx.git(|repo| repo.hooks_dir()).await?;
    let runnable = |name: &str| {
        let path = hooks.join(name);
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .then_some(path)
    };
    let (pre_commit, commit_msg) = (runnable("pre-commit"), runnable("commit-msg"));
    if pre_commit.is_none() && commit_msg.is_none() {
        return Ok(Hooks::Passed { message: None });
    }
    let worktree = integration_worktree(ctx, 0, move |repo, changes| {
        repo.integration_worktree_staged_changed(parent, tree, changes)
    })
    .await?;
    let logs = ctx.run_dir.root().join("logs");
    // A folder of its own: commit-msg may edit the message, and tools such as
    // `git interpret-trailers --in-place` replace the file through a temporary one next to it.
    let message_dir = logs.join(format!("{}.commit-msg", file_slug(id)));
    let message_file = message_dir.join("COMMIT_EDITMSG");
    // The message as the hooks got it, then as they left it, next to their logs.
    let message_log = logs.join(format!("{}.COMMIT_EDITMSG", file_slug(id)));
    let write = |path: &Path, text: &str| {
        std::fs::write(path, text)
            .map_err(|err| EngineError::io(format!("cannot write {}", path.display()), err))
    };
    // Fresh each time: nothing a hook left there (a link, say) is written through.
    let _ = std::fs::remove_dir_all(&message_dir);
    std::fs::create_dir(&message_dir)
        .map_err(|err| EngineError::io(format!("cannot create {}", message_dir.display()), err))?;
    write(&message_file, message)?;
    write(&message_log, message)?;
    let steps = [
        (pre_commit, "pre-commit", Vec::new()),
        (commit_msg, "commit-msg", vec![message_file.display().to_string()]),
    ];
    for (hook, name, args) in steps {
        let Some(hook) = hook else { continue };
        let mut argv = vec![hook.display().to_string()];
        argv.extend(args);
        let log = ctx.run_dir.unused_log(&format!("{}.hook-{name}", file_slug(id)));
        let purpose = format!("land.run_hooks ({name})");
        let integration = (worktree.as_path(), LaneEnv::integration(&ctx.config));
        let mut command =
            ProjectCommand::new(id, &purpose, &argv, integration, &log, ctx.config.verify_timeout);
        if name == "commit-msg" {
            command.also_writable.push(message_dir.clone());
        }
        let run = ctx.run_project_command(command).await?;
        if run.outcome.ending == Ending::Cancelled {
            return Err(EngineError::Cancelled);
        }
        if !run.outcome.ending.is_success() {
            let mut failed = failure_of(CauseKind::Hook, argv, &run);
            failed.cause.name = Some(name.to_string());
            return Ok(Hooks::Failed(Box::new((failed.failure, failed.cause))));
        }
    }
    // Written by a hook that may run agents' code: no link followed, bounded.
    let edited = breeze_supervise::read_role_file(&message_file, MAX_MESSAGE_BYTES)
        .ok()
        .flatten()
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default();
    let _ = std::fs::remove_dir_all(&message_dir);
    let edited_message = !edited.trim().is_empty() && edited != message;
    if edited_message {
        write(&message_log, &edited)?;
    }
    Ok(Hooks::Passed { message: edited_message.then_some(edited) })
}
