//! Landing as pull requests (`land.to = "pull-request"`). An approved task is merged onto
//! the target branch's fetched tip and verified as any landing; the landing commit —
//! the task's change, its Plans.md row flipped to done, its changelog line, its trailers —
//! is pushed to the task's own branch (`breeze/<task>`, with a lease on breeze's last push
//! there) and `land.pr_command` opens the pull request, its description from the contract,
//! the review rounds, the Advisor's answers and the trailers. The task is then `pr-open`.
//!
//! The dispatcher follows the open pull requests ([`follow_pull_requests`]): it fetches the
//! target branch and looks for each task's change there — the pushed commit, a commit with
//! its trailers, or one with its patch id (squash and rebase merges write new commits). A
//! change found there is landed: the Plans.md flip reached the branch with it, exactly
//! once, because it is part of that one change. A pull request whose commit no longer
//! merges cleanly onto the branch (another merged first: their Plans.md rows or changelog
//! lines sit side by side) is landed again: rebuilt on the new tip, verified, and pushed to
//! its branch; the pull request shows the new commit.

use breeze_git::{MergeOutcome, Oid, PushOutcome, RemoteBranch, TaskChange};
use breeze_protocol::{EventKind, FoundBy};

use std::time::Duration;

use breeze_protocol::{Cause, CauseKind};

use super::candidate::landing_subject;
use super::forge_command::{command_line, run_forge_command};
use super::journal::landing_journaled;
use super::main_moves::follow_main;
use super::mode::{LandFuture, LandMode, Publish};
use super::outcome::{Followed, Landing, Onto, Try, deferral};
use super::pr_body::{Description, history};
use super::pr_follow::{FollowUp, follow_forge};
use super::target;
use crate::error::EngineError;
use crate::run::context::{ProjectCommand, RunContext};
use crate::run_dir::file_slug;
use crate::snapshot::{PullRequestRecord, TaskPhase};

/// How much of the pull-request command's output is searched for its address.
const URL_SEARCH_BYTES: u64 = 64 * 1024;

/// Why nothing can merge into `target`: the remote lacks that branch, and what to do.
fn no_target_branch(target: &RemoteBranch) -> String {
    format!(
        "{} has no branch {} for pull requests to merge into; push it first (`git push {} {}`), then `breeze resume`",
        target.remote, target.branch, target.remote, target.branch
    )
}

/// The first `http://` or `https://` address in `text`.
pub(crate) fn first_url(text: &str) -> Option<String> {
    let start = text.find("https://").or_else(|| text.find("http://"))?;
    let url: String = text[start..]
        .chars()
        .take_while(|c| !c.is_whitespace() && !"\"'<>()[]".contains(*c))
        .collect();
    Some(url.trim_end_matches(['.', ',', ';']).to_string())
}

/// The pull-request branch of task `id`: `land.pr_branch` with `{task}` its slug.
pub(crate) fn branch_of(pattern: &str, id: &str) -> String {
    pattern.replace("{task}", &breeze_git::Repo::slug(id))
}

/// Why a `pr-open` task waits, for `breeze status`.
fn waiting(pr: &PullRequestRecord) -> Landing {
    let at = pr.url.clone().unwrap_or_else(|| format!("branch {}", pr.branch));
    Landing::Published(Cause::new(
        CauseKind::PullRequest,
        format!(
            "pull request {at} ({} → {}/{}) waits to be merged",
            pr.branch, pr.remote, pr.base_branch
        ),
    ))
}

/// Landings are pushed to a branch of their own with a pull request opened for each;
/// `poll`: how often the target branch is looked at for the merged ones.
pub(crate) struct PullRequest {
    pub poll: Duration,
}

impl LandMode for PullRequest {
    /// The commit of the open pull request a stacked task builds on, else the target
    /// branch's tip as last fetched.
    fn work_base<'a>(&'a self, ctx: &'a RunContext, index: usize) -> LandFuture<'a, Oid> {
        Box::pin(async move {
            match stacked_on(ctx, index) {
                Some((_, pull_request)) => Ok(pull_request.commit.0),
                None => target::last_fetched_tip(ctx).await,
            }
        })
    }

    fn onto<'a>(&'a self, ctx: &'a RunContext, index: usize) -> LandFuture<'a, Onto> {
        Box::pin(pull_request_onto(ctx, index))
    }

    fn publish<'a>(&'a self, ctx: &'a RunContext, landing: Publish<'a>) -> LandFuture<'a, Try> {
        Box::pin(push_pull_request(ctx, landing.link.index, landing.onto, landing.link.commit))
    }

    fn follow_every(&self) -> Option<Duration> {
        Some(self.poll)
    }

    fn follow<'a>(
        &'a self,
        ctx: &'a RunContext,
        published: &'a [usize],
    ) -> LandFuture<'a, Followed> {
        Box::pin(follow_pull_requests(ctx, published))
    }

    fn waiting_reason(
        &self,
        ctx: &RunContext,
        published: &[usize],
        unreachable: Option<&str>,
    ) -> String {
        let open: Vec<String> = published
            .iter()
            .map(|&index| {
                let record = ctx.book.record(index);
                let at =
                    record.pull_request.map(|pr| pr.url.unwrap_or(pr.branch)).unwrap_or_default();
                format!("{} ({at})", record.id)
            })
            .collect();
        let unreachable = match unreachable {
            Some(why) => format!(" (the remote could not be looked at: {why})"),
            None => String::new(),
        };
        format!(
            "{} task(s) wait for their pull requests to be merged: {}{unreachable}; once merged, `breeze resume` lands them and goes on with what depends on them",
            open.len(),
            open.join(", ")
        )
    }
}

/// The open pull request task `index` builds on (`land.stack`): its only dependency that
/// has not landed, when that one's pull request is open.
fn stacked_on(ctx: &RunContext, index: usize) -> Option<(String, PullRequestRecord)> {
    if !ctx.config.land.stack {
        return None;
    }
    let mut unlanded = ctx.task(index).depends_on.iter().filter_map(|dep| {
        let dep_index = ctx.plan.index_of(dep)?;
        let record = ctx.book.record(dep_index);
        (record.phase != TaskPhase::Landed).then_some(record)
    });
    let only = unlanded.next()?;
    if unlanded.next().is_some() || only.phase != TaskPhase::PrOpen {
        return None;
    }
    let pull_request = only.pull_request?;
    Some((only.id, pull_request))
}

/// The files breeze edits while landing, left out of a change's patch id: the tracked
/// Plans.md and the changelog the line goes to.
#[derive(Clone)]
struct BreezeFiles {
    plans_file: Option<String>,
    changelog: crate::changelog::Changelog,
}

impl BreezeFiles {
    /// The files breeze edits while landing in this run.
    fn of(ctx: &RunContext) -> BreezeFiles {
        BreezeFiles {
            plans_file: ctx.tracked_plans_file.clone(),
            changelog: ctx.config.land.changelog.clone(),
        }
    }

    /// Those files for a landing on `onto` (the changelog `land.changelog` names in its tree).
    fn on(&self, repo: &breeze_git::Repo, onto: Oid) -> Result<Vec<String>, breeze_git::GitError> {
        let mut files: Vec<String> = self.plans_file.iter().cloned().collect();
        files.extend(self.changelog.file_in_tree(repo, onto)?);
        Ok(files)
    }
}

/// Builds on the target branch's fetched tip, or on the open pull request this task is
/// stacked on.
async fn pull_request_onto(ctx: &RunContext, index: usize) -> Result<Onto, EngineError> {
    if let Some((_, pull_request)) = stacked_on(ctx, index) {
        return Ok(Onto::Tip { onto: pull_request.commit.0, expected: None });
    }
    match target::fetch(ctx).await {
        Ok(Some(tip)) => match merged_meanwhile(ctx, index, tip).await? {
            Some(landing) => Ok(Onto::Done(landing)),
            None => Ok(Onto::Tip { onto: tip, expected: Some(tip) }),
        },
        Ok(None) => {
            Ok(Onto::Done(Landing::waits_for_remote(no_target_branch(&target::remote_branch(ctx)))))
        }
        Err(err) => deferral(err).map(Onto::Done),
    }
}

/// The task's open pull request merged while the task was back at work (a follow-up
/// round, a rebuild): the work since is dropped and the task counted landed, with the
/// commit that brought its change.
async fn merged_meanwhile(
    ctx: &RunContext,
    index: usize,
    tip: Oid,
) -> Result<Option<Landing>, EngineError> {
    let record = ctx.book.record(index);
    let Some(pr) = record.pull_request.clone().filter(|pr| pr.opened) else {
        return Ok(None);
    };
    let Some((commit, by)) = look_for(ctx, &record.id, pr, tip, BreezeFiles::of(ctx)).await?.0
    else {
        return Ok(None);
    };
    if !landing_journaled(&ctx.run_dir, &record.id, commit)? {
        journal_merged(ctx, &record, commit, by).await?;
    }
    follow_main(ctx, &record.id, tip).await?;
    Ok(Some(Landing::Landed { commit: commit.into() }))
}

/// Pushes the landing commit to the task's branch and opens its pull request (or, when
/// it is open already, updates its branch).
async fn push_pull_request(
    ctx: &RunContext,
    index: usize,
    onto: Oid,
    commit: Oid,
) -> Result<Try, EngineError> {
    let land = &ctx.config.land;
    let id = ctx.task(index).id.to_string();
    let branch = branch_of(&land.pr_branch, &id);
    let previous = ctx.book.record(index).pull_request.filter(|pr| pr.branch == branch);
    let expected = match push_branch(ctx, &id, &branch, previous.as_ref(), commit).await? {
        Ok(expected) => expected,
        Err(landing) => return Ok(Try::Done(landing)),
    };
    crate::kill_points::reached("landing:pr-pushed");
    let (base_branch, stacked_on) = match stacked_on(ctx, index) {
        Some((dep, pr)) => (pr.branch, Some(dep)),
        None => (target::remote_branch(ctx).branch, None),
    };
    let mut pr = PullRequestRecord {
        remote: land.remote.clone(),
        branch: branch.clone(),
        base_branch,
        stacked_on,
        commit: commit.into(),
        onto: onto.into(),
        url: previous.as_ref().and_then(|pr| pr.url.clone()),
        command_started: previous.as_ref().is_some_and(|pr| pr.command_started),
        opened: previous.as_ref().is_some_and(|pr| pr.opened),
        follow: previous.as_ref().map(|pr| pr.follow.clone()).unwrap_or_default(),
    };
    if pr.opened {
        let replaced = expected.map(|oid| oid.to_string()).unwrap_or_default();
        save_pull_request(ctx, index, &pr).await?;
        let (commit, task) = (commit.to_string(), id);
        let updated = EventKind::PullRequestUpdated { task, branch, commit, previous: replaced };
        ctx.book.journal(updated).await?;
        if !pr.follow.history.is_empty() {
            edit_description(ctx, index, &pr).await?;
        }
        return Ok(Try::Done(waiting(&pr)));
    }
    let started_before = pr.command_started;
    pr.command_started = true;
    save_pull_request(ctx, index, &pr).await?;
    let opened = open_pull_request(ctx, index, &pr).await?;
    let url = match opened {
        Opened::Yes { url } => url,
        Opened::No { url: Some(url), .. } if started_before => Some(url),
        Opened::No { failure, .. } => {
            return Ok(Try::Done(Landing::waits_for_remote(format!(
                "{failure}; the branch {branch} is pushed to {}: fix land.pr_command (or open the pull request yourself), then `breeze resume`",
                land.remote
            ))));
        }
    };
    pr.opened = true;
    pr.url = url.clone();
    save_pull_request(ctx, index, &pr).await?;
    ctx.book
        .journal(EventKind::PullRequestOpened {
            task: id.clone(),
            branch,
            target: format!("{}/{}", pr.remote, pr.base_branch),
            commit: commit.to_string(),
            url,
        })
        .await?;
    Ok(Try::Done(waiting(&pr)))
}

/// Pushes `commit` to the task's pull-request `branch` with a lease on breeze's last push
/// there (`previous`), taking over a push of this very task a kill kept from being
/// recorded. The commit it replaced there, or how the landing ends when the branch is
/// someone else's or the remote cannot be reached.
async fn push_branch(
    ctx: &RunContext,
    id: &str,
    branch: &str,
    previous: Option<&PullRequestRecord>,
    commit: Oid,
) -> Result<Result<Option<Oid>, Landing>, EngineError> {
    let remote = &ctx.config.land.remote;
    let mut expected = previous.map(|pr| pr.commit.0);
    let to = RemoteBranch::new(remote.clone(), branch.to_string());
    let access = target::remote_access(ctx);
    let push = |expected: Option<Oid>| {
        let (to, access) = (to.clone(), access.clone());
        ctx.git(move |repo| repo.push_with_lease(&to, commit, expected, false, &access))
    };
    let mut pushed = push(expected).await;
    if matches!(pushed, Ok(PushOutcome::Rejected { .. })) && previous.is_none() {
        // Pushed by this very task before a kill kept it from being recorded: taken
        // over rather than left for the user to delete.
        if let Some(ours) = unrecorded_push(ctx, id, &to).await? {
            expected = Some(ours);
            pushed = push(expected).await;
        }
    }
    match pushed {
        Ok(PushOutcome::Pushed) => Ok(Ok(expected)),
        Ok(PushOutcome::Rejected { reason }) => Ok(Err(Landing::waits_for_remote(format!(
            "{remote} has a branch {branch} breeze did not push last ({reason}): someone pushed to it, or an earlier run left it; delete it (`git push {remote} --delete {branch}`) or change land.pr_branch, then `breeze resume`"
        )))),
        Err(err) => deferral(err).map(Err),
    }
}

async fn save_pull_request(
    ctx: &RunContext,
    index: usize,
    pr: &PullRequestRecord,
) -> Result<(), EngineError> {
    let pr = pr.clone();
    ctx.book.change(index, move |record| record.pull_request = Some(pr)).await
}

/// Writes the description and runs `land.pr_command` in the repository.
async fn open_pull_request(
    ctx: &RunContext,
    index: usize,
    pr: &PullRequestRecord,
) -> Result<Opened, EngineError> {
    let id = ctx.task(index).id.to_string();
    let slug = file_slug(&id);
    let (title, body_file) = write_description(ctx, index, pr).await?;
    let body = body_file.display().to_string();
    let commit = pr.commit.to_string();
    let argv = command_line(
        &ctx.config.land.pr_command,
        &[
            ("{target}", &pr.base_branch),
            ("{branch}", &pr.branch),
            ("{title}", &title),
            ("{body_file}", &body),
            ("{task}", &id),
            ("{remote}", &pr.remote),
            ("{commit}", &commit),
        ],
    );
    let log = ctx.run_dir.unused_log(&format!("{slug}.pr-command"));
    let mut command = ProjectCommand::new(
        &id,
        "land.pr_command",
        &argv,
        // In the user's checkout, in no lane: the integration's lane variables.
        (ctx.repo.workdir(), crate::lane_env::LaneEnv::integration(&ctx.config)),
        &log,
        ctx.config.land.remote_timeout,
    );
    // The user's forge CLI, from their breeze.toml, running no code of the agents': it
    // keeps its own credentials and state where it likes, as in the user's shell.
    command.confined = false;
    let outcome = ctx.run_project_command(command).await?.outcome;
    if outcome.ending == breeze_supervise::Ending::Cancelled {
        return Err(EngineError::Cancelled);
    }
    let url = first_url(&head_of(&outcome.stdout_log));
    if outcome.ending.is_success() {
        return Ok(Opened::Yes { url });
    }
    let stderr = outcome.stderr_tail.trim();
    let url = url.or_else(|| first_url(stderr));
    let last = stderr.lines().last().unwrap_or("").trim();
    Ok(Opened::No { url, failure: format!("`{}` {}: {last}", argv[0], outcome.ending) })
}

/// After a follow-up round: the description, which now tells the rounds, written again
/// and put on the pull request by `land.pr_edit_command` (a failure is logged: the
/// pull request keeps its old description).
async fn edit_description(
    ctx: &RunContext,
    index: usize,
    pr: &PullRequestRecord,
) -> Result<(), EngineError> {
    let template = &ctx.config.land.pr_follow.edit_command;
    if template.is_empty() {
        return Ok(());
    }
    let id = ctx.task(index).id.to_string();
    let (_, body_file) = write_description(ctx, index, pr).await?;
    let (body, commit) = (body_file.display().to_string(), pr.commit.to_string());
    let url = pr.url.clone().unwrap_or_default();
    let number = super::forge::number(&url).unwrap_or_default();
    let argv = command_line(
        template,
        &[
            ("{branch}", &pr.branch),
            ("{url}", &url),
            ("{number}", &number),
            ("{target}", &pr.base_branch),
            ("{remote}", &pr.remote),
            ("{task}", &id),
            ("{commit}", &commit),
            ("{body_file}", &body),
        ],
    );
    let log = ctx.run_dir.root().join("logs").join(format!("{}.pr-edit-command", file_slug(&id)));
    let timeout = ctx.config.land.remote_timeout;
    let ran = run_forge_command(ctx, &id, "land.pr_edit_command", &argv, &log, timeout).await?;
    if let Some(failure) = ran.failure {
        tracing::warn!("land.pr_edit_command: {failure}; the pull request keeps its description");
    }
    Ok(())
}

/// The first bytes of the file at `path`, where the pull-request command printed its
/// address (empty when it cannot be read).
fn head_of(path: &std::path::Path) -> String {
    use std::io::Read as _;
    let mut text = String::new();
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.take(URL_SEARCH_BYTES).read_to_string(&mut text);
    }
    text
}

/// Writes the pull request's description — from the contract, the review rounds, the
/// Advisor's answers and the trailers — to the run folder: its title, and the file.
async fn write_description(
    ctx: &RunContext,
    index: usize,
    pr: &PullRequestRecord,
) -> Result<(String, std::path::PathBuf), EngineError> {
    let record = ctx.book.record(index);
    let task = ctx.task(index);
    let id = task.id.to_string();
    let folder = ctx.run_dir.root().join("pull-requests");
    std::fs::create_dir_all(&folder)
        .map_err(|err| EngineError::io(format!("cannot create {}", folder.display()), err))?;
    let body_file = folder.join(format!("{}.md", file_slug(&id)));
    let (Some(base), Some(head)) = (record.base, record.head) else {
        return Err(EngineError::Internal {
            context: format!("opening the pull request of task {id}"),
            message: "the approved task has no base or head commit in run.json".into(),
        });
    };
    let title = landing_subject(ctx, index, base.0, head.0).await?;
    let review = record.review_trailer().unwrap_or_else(|| record.rounds.into());
    let message = breeze_git::landing_commit_message(&title, None, &id, &ctx.run_id, review);
    let (rounds, advice) = history(&ctx.run_dir.events(), &id);
    let description = Description {
        title: title.clone(),
        dod: task.dod.clone(),
        writes: ctx.write_sets.get(index).entries().to_vec(),
        rounds,
        advice,
        verify: (!ctx.config.verify.is_empty()).then(|| ctx.config.verify.clone()),
        stacked_on: pr.stacked_on.clone().map(|dep| (dep, pr.base_branch.clone())),
        follow_ups: pr.follow.history.clone(),
        message,
    };
    crate::snapshot::write_atomically(&body_file, description.render().as_bytes())
        .map_err(|err| EngineError::io(format!("cannot write {}", body_file.display()), err))?;
    Ok((title, body_file))
}

/// The tip of the pull-request branch `to` when this task of this run pushed it
/// (its trailers name both) and nothing is on top of it: a push a kill kept from being
/// recorded. `None` when the branch is someone else's, or cannot be fetched.
async fn unrecorded_push(
    ctx: &RunContext,
    id: &str,
    to: &RemoteBranch,
) -> Result<Option<Oid>, EngineError> {
    let Ok(Some(tip)) = target::fetch_branch(ctx, to.clone()).await else {
        return Ok(None);
    };
    let (run_id, task_id) = (ctx.run_id.clone(), id.to_string());
    let found = ctx.git(move |repo| repo.find_landing_from(tip, &run_id, &task_id, &[])).await?;
    Ok((found == Some(tip)).then_some(tip))
}

/// What the pull-request command did.
enum Opened {
    /// It succeeded; `url` is the first address it printed.
    Yes { url: Option<String> },
    /// It failed; a retry after a kill accepts the address it printed (the pull request
    /// was there already).
    No { url: Option<String>, failure: String },
}

/// Fetches the target branch and looks there for the change of each task in `open`.
async fn follow_pull_requests(ctx: &RunContext, open: &[usize]) -> Result<Followed, EngineError> {
    let _serial = ctx.land_lock.lock().await;
    let mut followed = Followed::default();
    let tip = match target::fetch(ctx).await {
        Ok(Some(tip)) => tip,
        Ok(None) => {
            followed.unreachable = Some(no_target_branch(&target::remote_branch(ctx)));
            return Ok(followed);
        }
        Err(err) => {
            followed.unreachable = Some(deferral(err).map(|landing| match landing {
                Landing::Deferred { reason, .. } => reason,
                _ => String::new(),
            })?);
            return Ok(followed);
        }
    };
    let breeze_files = BreezeFiles::of(ctx);
    for &index in open {
        let record = ctx.book.record(index);
        let Some(pr) = record.pull_request.clone().filter(|pr| pr.command_started) else {
            continue;
        };
        match look_for(ctx, &record.id, pr.clone(), tip, breeze_files.clone()).await? {
            (Some((commit, _)), _) if landing_journaled(&ctx.run_dir, &record.id, commit)? => {
                followed.landed.push((index, commit.into()));
            }
            (Some((commit, by)), _) => {
                journal_merged(ctx, &record, commit, by).await?;
                followed.landed.push((index, commit.into()));
            }
            (None, false) => followed.again.push(index),
            (None, true) if pr.opened => match follow_forge(ctx, index, &pr, tip).await? {
                FollowUp::Waits => {}
                FollowUp::SentBack => followed.sent_back.push(index),
                FollowUp::Escalate(cause) => followed.escalated.push((index, cause)),
            },
            (None, true) => {}
        }
    }
    if let Some(&(index, _)) = followed.landed.first() {
        follow_main(ctx, ctx.task(index).id.as_str(), tip).await?;
    }
    Ok(followed)
}

/// Looks for task `id`'s change (its pull request `pr`) on the target branch at `tip`:
/// the commit that brought it and how it was found, and whether the pull request still
/// merges cleanly there.
async fn look_for(
    ctx: &RunContext,
    id: &str,
    pr: PullRequestRecord,
    tip: Oid,
    breeze_files: BreezeFiles,
) -> Result<(Option<(Oid, breeze_git::FoundBy)>, bool), EngineError> {
    // A pull request stacked on one still open merges into that one's branch, which
    // breeze keeps up to date: it is compared with the target only once that landed.
    let stacked_open = pr.stacked_on.as_ref().is_some_and(|dep| {
        ctx.plan
            .index_of(&breeze_plan::TaskId::new(dep))
            .is_some_and(|dep| ctx.book.record(dep).phase != TaskPhase::Landed)
    });
    let (run_id, task_id) = (ctx.run_id.clone(), id.to_string());
    ctx.git(move |repo| {
        let files = breeze_files.on(repo, pr.onto.0)?;
        let refs: Vec<&str> = files.iter().map(String::as_str).collect();
        let (patch_id, paths) = repo.change_identity(pr.commit.0, &refs)?;
        let change = TaskChange { run_id, task_id, commit: pr.commit.0, patch_id, paths };
        let found = repo.find_change(tip, &[pr.onto.0], &change)?;
        let clean = match found {
            _ if stacked_open || pr.onto.0 == tip => true,
            Some(_) => true,
            None => {
                matches!(repo.merge_task(pr.onto.0, pr.commit.0, tip)?, MergeOutcome::Clean { .. })
            }
        };
        Ok((found, clean))
    })
    .await
}

/// Journals that the pull request of the task of `record` merged: its change reached the
/// target branch at `commit` (found `by` its commit, trailers or patch id), so it landed.
async fn journal_merged(
    ctx: &RunContext,
    record: &crate::snapshot::TaskRecord,
    commit: Oid,
    by: breeze_git::FoundBy,
) -> Result<(), EngineError> {
    let task = record.id.clone();
    let found_by = match by {
        breeze_git::FoundBy::Commit => FoundBy::Commit,
        breeze_git::FoundBy::Trailers => FoundBy::Trailers,
        breeze_git::FoundBy::PatchId => FoundBy::PatchId,
    };
    let merged = EventKind::PullRequestMerged { task, commit: commit.to_string(), found_by };
    ctx.book.journal(merged).await?;
    let previous_main = record.pull_request.as_ref().map(|pr| pr.onto.to_string());
    ctx.book
        .journal(EventKind::Landed {
            task: record.id.clone(),
            commit: commit.to_string(),
            previous_main: previous_main.unwrap_or_default(),
            target: Some(target::remote_branch(ctx).to_string()),
        })
        .await?;
    crate::kill_points::reached("landing:pr-merged-journaled");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_address_printed_is_the_pull_requests() {
        let gh = "Creating pull request for breeze/1 into main in o/r\n\nhttps://github.com/o/r/pull/7\n";
        assert_eq!(first_url(gh).as_deref(), Some("https://github.com/o/r/pull/7"));
        let glab = "!merge request created: https://gitlab.com/o/r/-/merge_requests/3.";
        assert_eq!(first_url(glab).as_deref(), Some("https://gitlab.com/o/r/-/merge_requests/3"));
        assert_eq!(first_url("(see <http://x.test/1>)").as_deref(), Some("http://x.test/1"));
        assert_eq!(first_url("no address"), None);
    }

    #[test]
    fn a_tasks_branch_is_its_slug_in_the_pattern() {
        assert_eq!(
            branch_of("breeze/{task}", "3.1 x"),
            format!("breeze/{}", breeze_git::Repo::slug("3.1 x"))
        );
    }
}
