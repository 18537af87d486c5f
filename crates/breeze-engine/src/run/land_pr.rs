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
use breeze_protocol::EventKind;

use super::context::{ProjectCommand, RunContext};
use super::driver::TaskDriver;
use super::land_target::{Onto, deferral, follow_main};
use super::landing::{Landing, Try};
use super::pr_body::{Description, history};
use crate::error::EngineError;
use crate::run_dir::file_slug;
use crate::snapshot::{ObjectId, PullRequestRecord, TaskPhase};

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

/// `land.pr_command` with its placeholders filled in, in one pass: a value that contains
/// a placeholder's name (a title with `{branch}` in it) is left as it is.
fn command_line(template: &[String], values: &[(&str, &str)]) -> Vec<String> {
    template
        .iter()
        .map(|arg| {
            let mut out = String::new();
            let mut rest = arg.as_str();
            while !rest.is_empty() {
                match values.iter().find(|(key, _)| rest.starts_with(key)) {
                    Some((key, value)) => {
                        out.push_str(value);
                        rest = &rest[key.len()..];
                    }
                    None => {
                        let next = rest.chars().next().map_or(1, char::len_utf8);
                        out.push_str(&rest[..next]);
                        rest = &rest[next..];
                    }
                }
            }
            out
        })
        .collect()
}

/// The pull-request branch of task `id`: `land.pr_branch` with `{task}` its slug.
pub(crate) fn branch_of(pattern: &str, id: &str) -> String {
    pattern.replace("{task}", &breeze_git::Repo::slug(id))
}

/// Why a `pr-open` task waits, for `breeze status`.
fn waiting_reason(pr: &PullRequestRecord) -> String {
    let at = pr.url.clone().unwrap_or_else(|| format!("branch {}", pr.branch));
    format!(
        "pull request {at} ({} → {}/{}) waits to be merged",
        pr.branch, pr.remote, pr.base_branch
    )
}

impl RunContext {
    /// The open pull request task `index` builds on (`land.stack`): its only dependency
    /// that has not landed, when that one's pull request is open.
    pub fn stacked_on(&self, index: usize) -> Option<(String, PullRequestRecord)> {
        if !self.config.land.stack {
            return None;
        }
        let mut unlanded = self.task(index).depends_on.iter().filter_map(|dep| {
            let dep_index = self.plan.index_of(dep)?;
            let record = self.book.record(dep_index);
            (record.phase != TaskPhase::Landed).then_some(record)
        });
        let only = unlanded.next()?;
        if unlanded.next().is_some() || only.phase != TaskPhase::PrOpen {
            return None;
        }
        let pull_request = only.pull_request?;
        Some((only.id, pull_request))
    }

    /// What tells the files breeze edits while landing ([`BreezeFiles`]).
    fn breeze_files(&self) -> BreezeFiles {
        BreezeFiles {
            plans_file: self.tracked_plans_file.clone(),
            changelog: self.config.land.changelog.clone(),
        }
    }
}

/// The files breeze edits while landing, left out of a change's patch id: the tracked
/// Plans.md and the changelog the line goes to.
#[derive(Clone)]
struct BreezeFiles {
    plans_file: Option<String>,
    changelog: crate::changelog::Changelog,
}

impl BreezeFiles {
    /// Those files for a landing on `onto` (the changelog `land.changelog` names in its tree).
    fn on(&self, repo: &breeze_git::Repo, onto: Oid) -> Result<Vec<String>, breeze_git::GitError> {
        let mut files: Vec<String> = self.plans_file.iter().cloned().collect();
        files.extend(self.changelog.file_in_tree(repo, onto)?);
        Ok(files)
    }
}

impl TaskDriver {
    /// Builds on the target branch's fetched tip, or on the open pull request this task is
    /// stacked on.
    pub(super) async fn pull_request_onto(&self) -> Result<Onto, EngineError> {
        if let Some((_, pull_request)) = self.ctx.stacked_on(self.index) {
            return Ok(Onto::Tip { onto: pull_request.commit.0, expected: None });
        }
        match self.ctx.fetch_target().await {
            Ok(Some(tip)) => Ok(Onto::Tip { onto: tip, expected: Some(tip) }),
            Ok(None) => {
                Ok(Onto::Done(Landing::waits_for_remote(no_target_branch(&self.ctx.land_target()))))
            }
            Err(err) => deferral(err).map(Onto::Done),
        }
    }

    /// Pushes the landing commit to the task's branch and opens its pull request (or, when
    /// it is open already, updates its branch).
    pub(super) async fn push_pull_request(
        &self,
        onto: Oid,
        commit: Oid,
    ) -> Result<Try, EngineError> {
        let ctx = &self.ctx;
        let land = &ctx.config.land;
        let branch = branch_of(&land.pr_branch, &self.id);
        let previous = self.record().pull_request.filter(|pr| pr.branch == branch);
        let mut expected = previous.as_ref().map(|pr| pr.commit.0);
        let to = RemoteBranch::new(land.remote.clone(), branch.clone());
        let access = ctx.remote_access();
        let push = |expected: Option<Oid>| {
            let (to, access) = (to.clone(), access.clone());
            ctx.git(move |repo| repo.push_with_lease(&to, commit, expected, false, &access))
        };
        let mut pushed = push(expected).await;
        if matches!(pushed, Ok(PushOutcome::Rejected { .. })) && previous.is_none() {
            // Pushed by this very task before a kill kept it from being recorded: taken
            // over rather than left for the user to delete.
            if let Some(ours) = self.unrecorded_push(&to).await? {
                expected = Some(ours);
                pushed = push(expected).await;
            }
        }
        match pushed {
            Ok(PushOutcome::Pushed) => {}
            Ok(PushOutcome::Rejected { reason }) => {
                return Ok(Try::Done(Landing::waits_for_remote(format!(
                    "{remote} has a branch {branch} breeze did not push last ({reason}): someone pushed to it, or an earlier run left it; delete it (`git push {remote} --delete {branch}`) or change land.pr_branch, then `breeze resume`",
                    remote = land.remote
                ))));
            }
            Err(err) => return deferral(err).map(Try::Done),
        }
        crate::kill_points::reached("landing:pr-pushed");
        let (base_branch, stacked_on) = match ctx.stacked_on(self.index) {
            Some((dep, pr)) => (pr.branch, Some(dep)),
            None => (ctx.land_target().branch, None),
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
        };
        if pr.opened {
            let replaced = expected.map(|oid| oid.to_string()).unwrap_or_default();
            self.save_pull_request(&pr).await?;
            ctx.book
                .journal(EventKind::PullRequestUpdated {
                    task: self.id.clone(),
                    branch,
                    commit: commit.to_string(),
                    previous: replaced,
                })
                .await?;
            return Ok(Try::Done(Landing::PullRequestOpen { reason: waiting_reason(&pr) }));
        }
        let started_before = pr.command_started;
        pr.command_started = true;
        self.save_pull_request(&pr).await?;
        let opened = self.open_pull_request(&pr).await?;
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
        self.save_pull_request(&pr).await?;
        ctx.book
            .journal(EventKind::PullRequestOpened {
                task: self.id.clone(),
                branch,
                target: format!("{}/{}", pr.remote, pr.base_branch),
                commit: commit.to_string(),
                url,
            })
            .await?;
        Ok(Try::Done(Landing::PullRequestOpen { reason: waiting_reason(&pr) }))
    }

    async fn save_pull_request(&self, pr: &PullRequestRecord) -> Result<(), EngineError> {
        let pr = pr.clone();
        self.change(move |record| record.pull_request = Some(pr)).await
    }

    /// Writes the description and runs `land.pr_command` in the repository.
    async fn open_pull_request(&self, pr: &PullRequestRecord) -> Result<Opened, EngineError> {
        let ctx = &self.ctx;
        let record = self.record();
        let task = ctx.task(self.index);
        let slug = file_slug(&self.id);
        let folder = ctx.run_dir.root().join("pull-requests");
        std::fs::create_dir_all(&folder)
            .map_err(|err| EngineError::io(format!("cannot create {}", folder.display()), err))?;
        let body_file = folder.join(format!("{slug}.md"));
        let (Some(base), Some(head)) = (record.base, record.head) else {
            return Err(EngineError::Internal {
                context: format!("opening the pull request of task {}", self.id),
                message: "the approved task has no base or head commit in run.json".into(),
            });
        };
        let title = super::landing::landing_subject(ctx, self.index, base.0, head.0).await?;
        let review = record.review_trailer().unwrap_or_else(|| record.rounds.into());
        let message =
            breeze_git::landing_commit_message(&title, None, &self.id, &ctx.run_id, review);
        let (rounds, advice) = history(&ctx.run_dir.events(), &self.id);
        let description = Description {
            title: title.clone(),
            dod: task.dod.clone(),
            writes: ctx.write_sets.get(self.index).entries().to_vec(),
            rounds,
            advice,
            verify: (!ctx.config.verify.is_empty()).then(|| ctx.config.verify.clone()),
            stacked_on: pr.stacked_on.clone().map(|dep| (dep, pr.base_branch.clone())),
            message,
        };
        crate::snapshot::write_atomically(&body_file, description.render().as_bytes())
            .map_err(|err| EngineError::io(format!("cannot write {}", body_file.display()), err))?;
        let body = body_file.display().to_string();
        let commit = pr.commit.to_string();
        let argv = command_line(
            &ctx.config.land.pr_command,
            &[
                ("{target}", &pr.base_branch),
                ("{branch}", &pr.branch),
                ("{title}", &title),
                ("{body_file}", &body),
                ("{task}", &self.id),
                ("{remote}", &pr.remote),
                ("{commit}", &commit),
            ],
        );
        let log = ctx.run_dir.unused_log(&format!("{slug}.pr-command"));
        let mut command = ProjectCommand::new(
            &self.id,
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
        let head = |path: &std::path::Path| {
            use std::io::Read as _;
            let mut text = String::new();
            if let Ok(file) = std::fs::File::open(path) {
                let _ = file.take(URL_SEARCH_BYTES).read_to_string(&mut text);
            }
            text
        };
        let url = first_url(&head(&outcome.stdout_log));
        if outcome.ending.is_success() {
            return Ok(Opened::Yes { url });
        }
        let stderr = outcome.stderr_tail.trim();
        let url = url.or_else(|| first_url(stderr));
        let last = stderr.lines().last().unwrap_or("").trim();
        Ok(Opened::No { url, failure: format!("`{}` {}: {last}", argv[0], outcome.ending) })
    }

    /// The tip of the pull-request branch `to` when this task of this run pushed it
    /// (its trailers name both) and nothing is on top of it: a push a kill kept from being
    /// recorded. `None` when the branch is someone else's, or cannot be fetched.
    async fn unrecorded_push(&self, to: &RemoteBranch) -> Result<Option<Oid>, EngineError> {
        let (to, access) = (to.clone(), self.ctx.remote_access());
        let Ok(Some(tip)) = self.ctx.git(move |repo| repo.fetch_branch(&to, &access)).await else {
            return Ok(None);
        };
        let (run_id, task_id) = (self.ctx.run_id.clone(), self.id.clone());
        let found =
            self.ctx.git(move |repo| repo.find_landing_from(tip, &run_id, &task_id, &[])).await?;
        Ok((found == Some(tip)).then_some(tip))
    }
}

/// What the pull-request command did.
enum Opened {
    /// It succeeded; `url` is the first address it printed.
    Yes { url: Option<String> },
    /// It failed; a retry after a kill accepts the address it printed (the pull request
    /// was there already).
    No { url: Option<String>, failure: String },
}

/// What following the open pull requests found.
#[derive(Debug, Default)]
pub(crate) struct Followed {
    /// Tasks whose change reached the target branch, with the commit that brought it.
    pub merged: Vec<(usize, ObjectId)>,
    /// Tasks whose pull request no longer merges cleanly onto the target branch: landed
    /// again (rebuilt, verified, pushed to their branch).
    pub stale: Vec<usize>,
    /// Why the remote could not be looked at (the pull requests stay open).
    pub unreachable: Option<String>,
}

/// Fetches the target branch and looks there for the change of each task in `open`.
pub(crate) async fn follow_pull_requests(
    ctx: &RunContext,
    open: &[usize],
) -> Result<Followed, EngineError> {
    let _serial = ctx.land_lock.lock().await;
    let mut followed = Followed::default();
    let tip = match ctx.fetch_target().await {
        Ok(Some(tip)) => tip,
        Ok(None) => {
            followed.unreachable = Some(no_target_branch(&ctx.land_target()));
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
    let target = ctx.land_target();
    let breeze_files = ctx.breeze_files();
    for &index in open {
        let record = ctx.book.record(index);
        let Some(pr) = record.pull_request.clone().filter(|pr| pr.command_started) else {
            continue;
        };
        // A pull request stacked on one still open merges into that one's branch, which
        // breeze keeps up to date: it is compared with the target only once that landed.
        let stacked_open = pr.stacked_on.as_ref().is_some_and(|dep| {
            ctx.plan
                .index_of(&breeze_plan::TaskId::new(dep))
                .is_some_and(|dep| ctx.book.record(dep).phase != TaskPhase::Landed)
        });
        let (run_id, task_id, breeze_files) =
            (ctx.run_id.clone(), record.id.clone(), breeze_files.clone());
        let found = ctx
            .git(move |repo| {
                let files = breeze_files.on(repo, pr.onto.0)?;
                let refs: Vec<&str> = files.iter().map(String::as_str).collect();
                let (patch_id, paths) = repo.change_identity(pr.commit.0, &refs)?;
                let change = TaskChange { run_id, task_id, commit: pr.commit.0, patch_id, paths };
                let found = repo.find_change(tip, &[pr.onto.0], &change)?;
                let clean = match found {
                    _ if stacked_open || pr.onto.0 == tip => true,
                    Some(_) => true,
                    None => matches!(
                        repo.merge_task(pr.onto.0, pr.commit.0, tip)?,
                        MergeOutcome::Clean { .. }
                    ),
                };
                Ok((found, clean))
            })
            .await?;
        match found {
            (Some((commit, _)), _)
                if super::recovery::landing_journaled(&ctx.run_dir, &record.id, commit)? =>
            {
                followed.merged.push((index, commit.into()));
            }
            (Some((commit, by)), _) => {
                ctx.book
                    .journal(EventKind::PullRequestMerged {
                        task: record.id.clone(),
                        commit: commit.to_string(),
                        found_by: by.as_str().to_string(),
                    })
                    .await?;
                ctx.book
                    .journal(EventKind::Landed {
                        task: record.id.clone(),
                        commit: commit.to_string(),
                        previous_main: record
                            .pull_request
                            .as_ref()
                            .map(|pr| pr.onto.to_string())
                            .unwrap_or_default(),
                        target: Some(target.to_string()),
                    })
                    .await?;
                crate::kill_points::reached("landing:pr-merged-journaled");
                followed.merged.push((index, commit.into()));
            }
            (None, false) => followed.stale.push(index),
            (None, true) => {}
        }
    }
    if let Some(&(index, _)) = followed.merged.first() {
        follow_main(ctx, ctx.task(index).id.as_str(), tip).await?;
    }
    Ok(followed)
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
    fn placeholders_are_filled_in_every_argument() {
        let template: Vec<String> =
            ["gh", "pr", "create", "--base", "{target}", "--head", "{branch}", "--title={title}"]
                .iter()
                .map(ToString::to_string)
                .collect();
        let argv = command_line(
            &template,
            &[("{target}", "main"), ("{branch}", "breeze/1"), ("{title}", "feat: A {branch}")],
        );
        assert_eq!(
            argv,
            [
                "gh",
                "pr",
                "create",
                "--base",
                "main",
                "--head",
                "breeze/1",
                "--title=feat: A {branch}"
            ]
        );
        assert_eq!(
            branch_of("breeze/{task}", "3.1 x"),
            format!("breeze/{}", breeze_git::Repo::slug("3.1 x"))
        );
    }
}
