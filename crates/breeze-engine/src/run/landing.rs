//! Landing an approved task on main: serial, in memory, verified, compare-and-swap, never
//! over the user's uncommitted work.

use std::path::{Path, PathBuf};

use breeze_git::{AdvanceOutcome, MergeOutcome, Oid};
use breeze_protocol::{EventKind, VerifyFailure};
use breeze_supervise::Ending;

use super::context::{ProjectCommand, ProjectRun, RunContext};
use super::driver::TaskDriver;
use crate::error::EngineError;
use crate::run_dir::file_slug;
use crate::snapshot::ObjectId;

/// How often a landing is retried when main moves underneath it.
const RACE_RETRIES: u32 = 5;
/// Bytes of verify output sent back to the worker.
const VERIFY_TAIL_BYTES: usize = 4096;
/// The largest landing message a commit-msg hook may leave (a longer one is ignored).
const MAX_MESSAGE_BYTES: u64 = 1024 * 1024;

/// How a landing attempt ended.
pub(crate) enum Landing {
    /// On main.
    Landed { commit: ObjectId },
    /// Waits for the user's checkout; `reason` names the file and what to do.
    Deferred { reason: String },
    /// The change does not merge onto the current main.
    Conflict { files: Vec<String>, onto: ObjectId },
    /// The verify command (or a hook) failed on the merged tree.
    VerifyFailed(VerifyFailure),
}

/// One try at landing on the main tip of the moment.
enum Try {
    /// It ended (landed, deferred, conflict, failed check).
    Done(Landing),
    /// main moved between the merge and the compare-and-swap: merge again.
    Raced,
}

impl TaskDriver {
    /// Lands the approved task (its record holds base, head and the approving round).
    pub(super) async fn try_landing(&self) -> Result<Landing, EngineError> {
        let _serial = self.ctx.land_lock.lock().await;
        let record = self.record();
        // A landing that happened before a crash is recognized by its trailers.
        let (run_id, task_id, stop_at) =
            (self.ctx.run_id.clone(), self.id.clone(), self.ctx.main_tip_at_start.0);
        if let Some(commit) =
            self.ctx.git(move |repo| repo.find_landing(&run_id, &task_id, Some(stop_at))).await?
        {
            return Ok(Landing::Landed { commit: commit.into() });
        }
        let (Some(base), Some(head)) = (record.base, record.head) else {
            return Err(EngineError::Internal {
                context: format!("landing task {}", self.id),
                message: "the approved task has no base or head commit in run.json".into(),
            });
        };
        let review = record
            .review_trailer()
            .unwrap_or_else(|| breeze_git::ReviewTrailer::from(record.rounds));
        let title = &self.ctx.task(self.index).title;
        let message = breeze_git::landing_message(title, None, &self.id, &self.ctx.run_id, review);
        let changelog = record.changelog.as_deref();
        for _ in 0..RACE_RETRIES {
            match self.land_once(base.0, head.0, &message, changelog).await? {
                Try::Done(landing) => return Ok(landing),
                Try::Raced => continue,
            }
        }
        Err(EngineError::usage(
            format!("main kept moving while task {} was landing ({RACE_RETRIES} tries)", self.id),
            "stop whatever is committing to main, then `breeze resume`",
        ))
    }

    /// Merges onto main's tip, runs the hooks and the verify command on the result, and
    /// moves main to it if main is still where it was.
    async fn land_once(
        &self,
        base: Oid,
        head: Oid,
        message: &str,
        changelog: Option<&str>,
    ) -> Result<Try, EngineError> {
        let ctx = &self.ctx;
        // main moved onto a commit made in a lane (a role moved it): land nothing on it.
        let guard = ctx.roles.guard.clone();
        ctx.blocking(move || guard.check_main()).await?;
        let main = ctx.git(|repo| repo.main_tip()).await?;
        let tree = match ctx.git(move |repo| repo.merge_task(base, head, main)).await? {
            MergeOutcome::Clean { tree } => tree,
            MergeOutcome::Conflicts { paths } => {
                return Ok(Try::Done(Landing::Conflict { files: paths, onto: main.into() }));
            }
        };
        let tree = flip_plans_marker(ctx, &self.id, tree).await?;
        let tree = match changelog {
            Some(entry) => add_changelog_entry(ctx, tree, entry).await?,
            None => tree,
        };
        let mut message = message.to_string();
        if ctx.config.run_hooks {
            match run_hooks(ctx, &self.id, main, tree, &message).await? {
                Hooks::Failed(failure) => return Ok(Try::Done(Landing::VerifyFailed(failure))),
                Hooks::Passed { message: Some(edited) } => message = edited,
                Hooks::Passed { message: None } => {}
            }
        }
        let commit =
            ctx.git(move |repo| repo.write_landing_commit(tree, main, head, &message)).await?;
        if !ctx.config.verify.is_empty()
            && let Some(failure) = verify(ctx, &self.id, commit).await?
        {
            return Ok(Try::Done(Landing::VerifyFailed(failure)));
        }
        let advanced = match ctx.git(move |repo| repo.advance_main(main, commit)).await {
            // The user's checkout is mid-merge/rebase, or another git process holds its
            // lock: the landing waits for the user like a dirty file does.
            Err(EngineError::Git(
                err @ (breeze_git::GitError::MidOperation { .. }
                | breeze_git::GitError::Locked { .. }),
            )) => return Ok(Try::Done(Landing::Deferred { reason: err.to_string() })),
            other => other?,
        };
        match advanced {
            AdvanceOutcome::Advanced { .. } => {
                ctx.roles.guard.landed(commit);
                ctx.book
                    .journal(EventKind::Landed {
                        task: self.id.clone(),
                        commit: commit.to_string(),
                        previous_main: main.to_string(),
                    })
                    .await?;
                Ok(Try::Done(Landing::Landed { commit: commit.into() }))
            }
            AdvanceOutcome::Raced { actual } => {
                tracing::info!(task = %self.id, %actual, "main moved during landing; merging again");
                Ok(Try::Raced)
            }
            AdvanceOutcome::Deferred { paths, .. } => Ok(Try::Done(Landing::Deferred {
                reason: format!(
                    "landing touches {} with uncommitted changes in your checkout; commit or stash them, then run `breeze resume`",
                    paths.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
                ),
            })),
        }
    }
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

/// Adds the worker's changelog line under `Unreleased` in `CHANGELOG.md` of the landing
/// tree (creating the file when the repository has none).
async fn add_changelog_entry(ctx: &RunContext, tree: Oid, entry: &str) -> Result<Oid, EngineError> {
    use crate::changelog::{CHANGELOG_FILE, updated_changelog};
    let current = ctx.git(move |repo| repo.read_blob_at(tree, CHANGELOG_FILE)).await?;
    let updated = updated_changelog(current.as_deref(), entry);
    ctx.git(move |repo| repo.replace_in_tree(tree, CHANGELOG_FILE, updated.as_bytes())).await
}

/// What the repository's hooks said about a landing.
enum Hooks {
    /// They passed; `commit-msg` may have edited the message.
    Passed { message: Option<String> },
    /// One failed: the task goes back to its worker like a failed verify.
    Failed(VerifyFailure),
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
    let worktree = integration_worktree(ctx, move |repo, changes| {
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
        let log = logs.join(format!("{}.hook-{name}", file_slug(id)));
        let purpose = format!("land.run_hooks ({name})");
        let mut command =
            ProjectCommand::new(id, &purpose, &argv, &worktree, &log, ctx.config.verify_timeout);
        if name == "commit-msg" {
            command.also_writable.push(message_dir.clone());
        }
        let run = ctx.run_project_command(command).await?;
        if run.outcome.ending == Ending::Cancelled {
            return Err(EngineError::Cancelled);
        }
        if !run.outcome.ending.is_success() {
            return Ok(Hooks::Failed(failure_of(argv, &run)));
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

/// A failed check on the merged tree, as the worker is told about it.
fn failure_of(command: Vec<String>, run: &ProjectRun) -> VerifyFailure {
    let outcome = &run.outcome;
    let combined = format!("{}{}", outcome.stdout_tail, outcome.stderr_tail);
    let tail_start = combined.len().saturating_sub(VERIFY_TAIL_BYTES);
    let tail_start =
        (tail_start..=combined.len()).find(|i| combined.is_char_boundary(*i)).unwrap_or(0);
    let mut log_tail = format!("({}) {}", outcome.ending, &combined[tail_start..]);
    if let Some(hint) = &run.refused {
        log_tail.push_str(&format!("\n(breeze: {hint})"));
    }
    VerifyFailure {
        command,
        exit_code: match outcome.ending {
            Ending::Exited(code) => Some(code),
            _ => None,
        },
        log_tail,
    }
}

/// The integration worktree put in place by `place`, told where the worktree changed since
/// breeze last placed it: its file-system watch's paths (what the last verify or hook
/// wrote), so that placing it again does not look at every file. The watch starts once the
/// worktree agrees with git (after the first placing, a full pass or a fresh checkout).
async fn integration_worktree(
    ctx: &RunContext,
    place: impl FnOnce(
        &breeze_git::Repo,
        breeze_git::WorkdirChanges<'_>,
    ) -> Result<PathBuf, breeze_git::GitError>
    + Send
    + 'static,
) -> Result<PathBuf, EngineError> {
    let path = ctx.repo.worktree_root().join(breeze_git::INTEGRATION_WORKTREE);
    let watches = ctx.roles.watches.clone();
    let watch = watches.get(&path);
    let placed = ctx
        .git(move |repo| {
            let changes = watch
                .as_ref()
                .map_or_else(breeze_supervise::TreeChanges::unknown, |watch| watch.changes());
            let placed = place(repo, crate::roles::workdir_changes(&changes))?;
            if let Some(watch) = &watch {
                watch.settle(&changes);
            }
            Ok(placed)
        })
        .await?;
    let at = placed.clone();
    ctx.blocking(move || Ok(watches.watch(&at, true))).await?;
    Ok(placed)
}

/// Runs `land.verify` on the landing commit in the integration worktree.
async fn verify(
    ctx: &RunContext,
    id: &str,
    commit: Oid,
) -> Result<Option<VerifyFailure>, EngineError> {
    let worktree = integration_worktree(ctx, move |repo, changes| {
        repo.integration_worktree_changed(commit, changes)
    })
    .await?;
    let log = ctx.run_dir.root().join("logs").join(format!(
        "{}.verify.{}",
        file_slug(id),
        &commit.to_string()[..12]
    ));
    let run = ctx
        .run_project_command(ProjectCommand::new(
            id,
            "land.verify",
            &ctx.config.verify,
            &worktree,
            &log,
            ctx.config.verify_timeout,
        ))
        .await?;
    if run.outcome.ending.is_success() {
        return Ok(None);
    }
    if run.outcome.ending == Ending::Cancelled {
        return Err(EngineError::Cancelled);
    }
    Ok(Some(failure_of(ctx.config.verify.clone(), &run)))
}
