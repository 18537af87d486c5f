//! Landing an approved task on main: serial, in memory, verified, compare-and-swap, never
//! over the user's uncommitted work. The pieces — a candidate's landing commit on a parent
//! (`prepare`) and moving main onto verified landings (`move_main`) — serve one landing
//! here and a batch of them (`land_batch.rs`); `verify_queue.rs` judges them.

use breeze_git::{AdvanceOutcome, CheckoutObserver, CheckoutUpdate, MergeOutcome, Oid};
use breeze_protocol::{EventKind, VerifyFailure};
use breeze_supervise::Ending;

use super::book::Transition;
use super::context::RunContext;
use super::driver::TaskDriver;
use super::verify_queue::{Link, failure_of, integration_worktree, judge_chain};
use crate::error::EngineError;
use crate::journal::RunStore;
use crate::kill_points;
use crate::run_dir::file_slug;
use crate::snapshot::ObjectId;

/// How often a landing is retried when main moves underneath it.
pub(super) const RACE_RETRIES: u32 = 5;

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
        let candidate = Candidate::of(&self.ctx, self.index)?;
        // A landing that happened before a crash is recognized by its trailers.
        if let Some(commit) = candidate.landed_before(&self.ctx).await? {
            return Ok(Landing::Landed { commit: commit.into() });
        }
        for _ in 0..RACE_RETRIES {
            match land_once(&self.ctx, &candidate).await? {
                Try::Done(landing) => return Ok(landing),
                Try::Raced => continue,
            }
        }
        Err(kept_moving(&self.id))
    }
}

/// The error when main moved under every try of a landing.
pub(super) fn kept_moving(what: &str) -> EngineError {
    EngineError::usage(
        format!("main kept moving while task {what} was landing ({RACE_RETRIES} tries)"),
        "stop whatever is committing to main, then `breeze resume`",
    )
}

/// Merges onto main's tip, runs the hooks and the verify command on the result, and moves
/// main to it if main is still where it was.
async fn land_once(ctx: &RunContext, candidate: &Candidate) -> Result<Try, EngineError> {
    let main = main_to_land_on(ctx).await?;
    let link = match prepare(ctx, candidate, main).await? {
        Prepared::Link(link) => link,
        Prepared::Conflict { files } => {
            return Ok(Try::Done(Landing::Conflict { files, onto: main.into() }));
        }
        Prepared::HookFailed(failure) => return Ok(Try::Done(Landing::VerifyFailed(failure))),
    };
    if !ctx.config.verify.is_empty()
        && let Some(failure) = judge_chain(ctx, main, std::slice::from_ref(&link)).await?.culprit
    {
        return Ok(Try::Done(Landing::VerifyFailed(failure)));
    }
    kill_points::reached("landing:verified");
    Ok(match move_main(ctx, main, std::slice::from_ref(&link)).await? {
        Moved::Advanced => Try::Done(Landing::Landed { commit: link.commit.into() }),
        Moved::Raced => Try::Raced,
        Moved::Deferred { reason, .. } => Try::Done(Landing::Deferred { reason }),
    })
}

/// main's tip, once it is known that no role moved main onto a commit made in a lane.
pub(super) async fn main_to_land_on(ctx: &RunContext) -> Result<Oid, EngineError> {
    let guard = ctx.roles.guard.clone();
    ctx.blocking(move || guard.check_main()).await?;
    ctx.git(|repo| repo.main_tip()).await
}

/// An approved task ready to land: what its landing commit is made of.
pub(super) struct Candidate {
    pub index: usize,
    pub id: String,
    base: Oid,
    head: Oid,
    message: String,
    changelog: Option<String>,
}

impl Candidate {
    /// The approved task at `index`, from its record.
    pub(super) fn of(ctx: &RunContext, index: usize) -> Result<Candidate, EngineError> {
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
        let title = &ctx.task(index).title;
        let message = breeze_git::landing_message(title, None, &id, &ctx.run_id, review);
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
    pub(super) async fn landed_before(&self, ctx: &RunContext) -> Result<Option<Oid>, EngineError> {
        let (run_id, task_id, stop_at) =
            (ctx.run_id.clone(), self.id.clone(), ctx.main_tip_at_start.0);
        ctx.git(move |repo| repo.find_landing(&run_id, &task_id, Some(stop_at))).await
    }
}

/// A candidate's landing commit on a parent, or why there is none.
pub(super) enum Prepared {
    /// Written (no ref moved).
    Link(Link),
    /// The change does not merge onto the parent.
    Conflict { files: Vec<String> },
    /// A repository hook refused it (`land.run_hooks`).
    HookFailed(VerifyFailure),
}

/// Merges the candidate onto `parent` in memory, flips its Plans.md marker, adds its
/// changelog line, runs the hooks and writes its landing commit on `parent`.
pub(super) async fn prepare(
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
            Hooks::Failed(failure) => return Ok(Prepared::HookFailed(failure)),
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

/// How moving main onto verified landings went.
pub(super) enum Moved {
    /// main is at the last of them; each has its `landed` event.
    Advanced,
    /// main moved meanwhile: nothing moved.
    Raced,
    /// Waits for the user's checkout: `paths` are the dirty ones the landings touch (empty
    /// when the checkout is mid-merge or locked); `reason` says what to do.
    Deferred { reason: String, paths: Vec<String> },
}

/// Moves main from `main` to the last of `landed` (a chain on `main`) by compare-and-swap,
/// fast-forwarding the user's clean checkout, and journals each landing.
pub(super) async fn move_main(
    ctx: &RunContext,
    main: Oid,
    landed: &[Link],
) -> Result<Moved, EngineError> {
    let Some(last) = landed.last() else { return Ok(Moved::Advanced) };
    let commit = last.commit;
    let mut journaled = JournaledUpdates { store: ctx.book.store().clone(), task: last.id.clone() };
    let advance =
        move |repo: &breeze_git::Repo| repo.advance_main_observed(main, commit, &mut journaled);
    let advanced = match ctx.git(advance).await {
        // The user's checkout is mid-merge/rebase, or another git process holds its
        // lock: the landing waits for the user like a dirty file does.
        Err(EngineError::Git(
            err @ (breeze_git::GitError::MidOperation { .. } | breeze_git::GitError::Locked { .. }),
        )) => return Ok(Moved::Deferred { reason: err.to_string(), paths: Vec::new() }),
        other => other?,
    };
    match advanced {
        AdvanceOutcome::Advanced { .. } => {
            kill_points::reached("landing:main-moved");
            ctx.roles.guard.landed(commit);
            for link in landed {
                ctx.book
                    .journal(EventKind::Landed {
                        task: link.id.clone(),
                        commit: link.commit.to_string(),
                        previous_main: link.parent.to_string(),
                    })
                    .await?;
            }
            kill_points::reached("landing:landed-journaled");
            Ok(Moved::Advanced)
        }
        AdvanceOutcome::Raced { actual } => {
            tracing::info!(task = %last.id, %actual, "main moved during landing; merging again");
            Ok(Moved::Raced)
        }
        AdvanceOutcome::Deferred { paths, .. } => Ok(Moved::Deferred {
            reason: format!(
                "landing touches {} with uncommitted changes in your checkout; commit or stash them, then run `breeze resume`",
                paths.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
            ),
            paths,
        }),
    }
}

/// A landing that sent its task back (a conflict, a failed check): counts the bounce and
/// gives the task back to its worker with why — `Some(reason)` when it escalates instead,
/// after `land.max_bounces`.
pub(super) async fn send_back(
    ctx: &RunContext,
    index: usize,
    landing: Landing,
) -> Result<Option<String>, EngineError> {
    let bounces = ctx
        .book
        .change(index, |record| {
            record.land_bounces += 1;
            record.land_bounces
        })
        .await?;
    let escalation = match &landing {
        Landing::Conflict { files, .. } => format!(
            "landing failed {} times; the last conflict was in {}",
            bounces - 1,
            files.join(", ")
        ),
        Landing::VerifyFailed(failure) => format!(
            "`{}` failed on the merged tree {} times",
            failure.command.join(" "),
            bounces - 1
        ),
        Landing::Landed { .. } | Landing::Deferred { .. } => return Ok(None),
    };
    if bounces > ctx.config.max_land_bounces {
        return Ok(Some(escalation));
    }
    ctx.book
        .change(index, |record| match landing {
            Landing::Conflict { files, onto } => {
                record.conflict = Some(breeze_protocol::ConflictInfo { files });
                record.conflict_onto = Some(onto);
            }
            Landing::VerifyFailed(failure) => record.verify_failure = Some(failure),
            Landing::Landed { .. } | Landing::Deferred { .. } => {}
        })
        .await?;
    ctx.book.transition(index, Transition::Work).await?;
    Ok(None)
}

/// Journals each update of a checkout of main before its first file is written, so that
/// `breeze resume` can finish or undo one a kill cut short.
struct JournaledUpdates {
    store: RunStore,
    task: String,
}

impl CheckoutObserver for JournaledUpdates {
    fn updating(&mut self, update: &CheckoutUpdate) -> std::io::Result<()> {
        self.store.record_blocking(EventKind::CheckoutUpdate {
            task: self.task.clone(),
            checkout: update.checkout.display().to_string(),
            from: update.from.to_string(),
            to: update.to.to_string(),
            paths: update.paths as u64,
        })?;
        kill_points::reached("landing:checkout-journaled");
        Ok(())
    }

    fn placed(&mut self, done: usize, total: usize) {
        if done == total.div_ceil(2) {
            kill_points::reached("landing:checkout-half");
        }
    }

    fn updated(&mut self, _update: &CheckoutUpdate) {
        kill_points::reached("landing:checkout-written");
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
    use crate::changelog::{CHANGELOG_FILE, add_unreleased};
    let current = ctx.git(move |repo| repo.read_blob_at(tree, CHANGELOG_FILE)).await?;
    let text = current.map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    let updated = add_unreleased(text.as_deref(), entry);
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
    let message_file = logs.join(format!("{}.COMMIT_EDITMSG", file_slug(id)));
    std::fs::write(&message_file, message)
        .map_err(|err| EngineError::io(format!("cannot write {}", message_file.display()), err))?;
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
        let outcome = ctx
            .run_project_command(id, &purpose, &argv, &worktree, &log, ctx.config.verify_timeout)
            .await?;
        if outcome.ending == Ending::Cancelled {
            return Err(EngineError::Cancelled);
        }
        if !outcome.ending.is_success() {
            return Ok(Hooks::Failed(failure_of(argv, &outcome).failure));
        }
    }
    let edited = std::fs::read_to_string(&message_file).unwrap_or_default();
    Ok(Hooks::Passed {
        message: (!edited.trim().is_empty() && edited != message).then_some(edited),
    })
}
