//! Pull requests that finish themselves: each look at an open pull request (every
//! `land.pr_poll`) asks the forge for its checks and its reviews (`land.pr_checks_command`,
//! `land.pr_reviews_command`), says what changed (`pull_request_followed`), and acts:
//!
//! - a failed check the target branch's tip fails too (`pr_main_checks_command`) is
//!   main's failure — said, not charged;
//! - a failed check is first asked to run again (`pr_rerun_command`, once per check and
//!   pushed commit): pending again means wait, passing then means it was flaky;
//! - a check that fails again, a review requesting changes or a comment not handed over
//!   yet goes back to the task's worker as a follow-up round (feedback, send-back): the fix
//!   goes through the gates and the reviewer and is pushed to the same branch with a lease;
//! - past `land.pr_rounds` rounds the task is escalated with the last failure.
//!
//! A command that fails or prints what breeze cannot read is a state too (`unknown`),
//! said once and asked again at the next look. What lasts between looks is the pull
//! request's [`PrFollowRecord`] in the task's record.

use breeze_git::Oid;
use breeze_protocol::{
    Cause, CauseKind, EventKind, Gap, PrChecks, PrFollowUp, PrReview, ReviewFeedback, Severity,
};

use super::forge::{
    Check, CheckState, ForgeOutputError, Note, checks_summary, number, read_checks, read_notes,
    review_summary, run_id,
};
use super::forge_command::{command_line, run_forge_command};
use crate::error::EngineError;
use crate::progress::ProgressEvent;
use crate::run::book::Transition;
use crate::run::context::RunContext;
use crate::run_dir::file_slug;
use crate::snapshot::{PrFollowRecord, PullRequestRecord};

/// What a look at a pull request decided for its task.
pub(crate) enum FollowUp {
    /// Nothing for the worker: the pull request waits.
    Waits,
    /// Sent back to its worker (its phase is `working` now).
    SentBack,
    /// The follow-up rounds are used up: escalate with this cause.
    Escalate(Cause),
}

/// What the forge said at one look, as read.
struct Look {
    checks: Option<Result<Vec<Check>, String>>,
    notes: Option<Result<Vec<Note>, String>>,
}

/// What one look found to hand back, and what it says about it.
#[derive(Default)]
struct Findings {
    gaps: Vec<Gap>,
    /// One line per thing handed back (the round's history line).
    lines: Vec<String>,
    /// The failed checks charged to the task.
    charged: Vec<String>,
    /// The reviews and comments handed over, by key.
    handed: Vec<String>,
    action: Option<PrFollowUp>,
    detail: Option<String>,
}

/// Looks at task `index`'s open pull request `pr` on the forge (`target_tip`: the target
/// branch's tip just fetched) and acts on what it says.
pub(crate) async fn follow_forge(
    ctx: &RunContext,
    index: usize,
    pr: &PullRequestRecord,
    target_tip: Oid,
) -> Result<FollowUp, EngineError> {
    let id = ctx.task(index).id.to_string();
    if ctx.book.record(index).feedback.is_some() {
        // A round saved but not yet sent back (a kill between the two): send it now.
        return send_back(ctx, index, pr, None).await;
    }
    let values = Placeholders::of(&id, pr, target_tip);
    let look = look(ctx, &id, &values).await?;
    let mut follow = pr.follow.clone();
    if follow.rerun_on != Some(pr.commit) {
        follow.rerun_on = Some(pr.commit);
        follow.reruns.clear();
    }
    let mut findings = Findings::default();
    if let Some(Ok(checks)) = &look.checks {
        judge_checks(ctx, &id, &values, pr, checks, &mut follow, &mut findings).await?;
    }
    if let Some(Ok(notes)) = &look.notes {
        take_notes(notes, &follow, &mut findings);
    }
    follow.checks = look.checks.as_ref().map(|checks| match checks {
        Ok(checks) => checks_summary(checks),
        Err(_) => PrChecks::Unknown,
    });
    follow.review = look.notes.as_ref().map(|notes| match notes {
        Ok(notes) => review_summary(notes),
        Err(_) => PrReview::Unknown,
    });
    let unknown = [
        look.checks.as_ref().and_then(|c| c.as_ref().err()),
        look.notes.as_ref().and_then(|n| n.as_ref().err()),
    ];
    let unknown: Vec<&String> = unknown.into_iter().flatten().collect();
    if findings.detail.is_none() && !unknown.is_empty() {
        findings.detail = Some(unknown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("; "));
    }
    let failed = match &look.checks {
        Some(Ok(checks)) => failed_names(checks),
        _ => Vec::new(),
    };
    if findings.gaps.is_empty() {
        let action = findings.action.unwrap_or(PrFollowUp::Waits);
        say(ctx, index, pr, &mut follow, failed, action, findings.detail.take()).await?;
        save(ctx, index, follow).await?;
        return Ok(FollowUp::Waits);
    }
    let round_line = findings.lines.join("; ");
    if follow.rounds >= ctx.config.land.pr_follow.rounds {
        say(ctx, index, pr, &mut follow, failed, PrFollowUp::Escalated, Some(round_line.clone()))
            .await?;
        save(ctx, index, follow.clone()).await?;
        let at = pr.url.clone().unwrap_or_else(|| format!("branch {}", pr.branch));
        return Ok(FollowUp::Escalate(Cause::new(
            CauseKind::PullRequest,
            format!(
                "{} follow-up round(s) on pull request {at} did not make it pass (land.pr_rounds); the last: {round_line}",
                follow.rounds
            ),
        )));
    }
    follow.rounds += 1;
    follow.history.push(format!("Round {}: {round_line}", follow.rounds));
    follow.handed.extend(findings.handed);
    if !findings.charged.is_empty() {
        follow.charged = Some(pr.commit);
    }
    say(ctx, index, pr, &mut follow, failed, PrFollowUp::BackToWorker, None).await?;
    let gaps = findings.gaps;
    let pr = PullRequestRecord { follow, ..pr.clone() };
    send_back(ctx, index, &pr, Some((gaps, round_line))).await
}

/// Saves the round (`round`: its findings and line, `None` when saved before) and sends
/// the task back to its worker.
async fn send_back(
    ctx: &RunContext,
    index: usize,
    pr: &PullRequestRecord,
    round: Option<(Vec<Gap>, String)>,
) -> Result<FollowUp, EngineError> {
    let pr = pr.clone();
    let line = match &round {
        Some((_, line)) => line.clone(),
        None => pr.follow.history.last().cloned().unwrap_or_default(),
    };
    ctx.book
        .change(index, move |record| {
            if let Some((gaps, _)) = round {
                record.feedback = Some(ReviewFeedback { round: record.rounds, gaps });
            }
            record.pull_request = Some(pr);
        })
        .await?;
    crate::kill_points::reached("landing:pr-round-saved");
    let cause = Cause::new(CauseKind::PullRequest, format!("pull request: {line}"));
    ctx.book.transition(index, Transition::SendBack { cause }).await?;
    Ok(FollowUp::SentBack)
}

/// Runs the checks and the reviews commands that are configured.
async fn look(ctx: &RunContext, id: &str, values: &Placeholders) -> Result<Look, EngineError> {
    let follow = &ctx.config.land.pr_follow;
    let checks = match follow.checks_command.is_empty() {
        true => None,
        false => Some(
            read(ctx, id, "land.pr_checks_command", &follow.checks_command, values, read_checks)
                .await?,
        ),
    };
    let notes = match follow.reviews_command.is_empty() {
        true => None,
        false => Some(
            read(ctx, id, "land.pr_reviews_command", &follow.reviews_command, values, read_notes)
                .await?,
        ),
    };
    Ok(Look { checks, notes })
}

/// Runs `argv` and reads what it printed with `reader`: what it says, or why it cannot be
/// read. Its exit code counts only when its output cannot be read (`gh pr checks` exits 8
/// while checks are pending, 1 when one failed, and prints them all the same).
async fn read<T>(
    ctx: &RunContext,
    id: &str,
    key: &str,
    argv: &[String],
    values: &Placeholders,
    reader: fn(&str) -> Result<T, ForgeOutputError>,
) -> Result<Result<T, String>, EngineError> {
    let argv = command_line(argv, &values.pairs());
    let run = run_forge(ctx, id, key, &argv).await?;
    Ok(match reader(&run.stdout) {
        Ok(read) => Ok(read),
        Err(err) => Err(match run.failure {
            Some(failure) => format!("{key}: {failure}"),
            None => format!("{key}: {err}"),
        }),
    })
}

async fn run_forge(
    ctx: &RunContext,
    id: &str,
    key: &str,
    argv: &[String],
) -> Result<super::forge_command::ForgeRun, EngineError> {
    let name = key.trim_start_matches("land.").replace('_', "-");
    let log = ctx.run_dir.root().join("logs").join(format!("{}.{name}", file_slug(id)));
    run_forge_command(ctx, id, key, argv, &log, ctx.config.land.remote_timeout).await
}

/// Judges the failed checks of the pull request's commit not charged yet: main's own,
/// asked to run again, or charged.
async fn judge_checks(
    ctx: &RunContext,
    id: &str,
    values: &Placeholders,
    pr: &PullRequestRecord,
    checks: &[Check],
    follow: &mut PrFollowRecord,
    findings: &mut Findings,
) -> Result<(), EngineError> {
    let failed: Vec<&Check> =
        checks.iter().filter(|check| check.state == CheckState::Failed).collect();
    if failed.is_empty() || follow.charged == Some(pr.commit) {
        return Ok(());
    }
    let mains = main_failures(ctx, id, values).await?;
    let (main_fails, own): (Vec<&Check>, Vec<&Check>) =
        failed.into_iter().partition(|check| mains.contains(&check.name));
    if own.is_empty() {
        let names: Vec<String> = main_fails.iter().map(|c| format!("`{}`", c.name)).collect();
        findings.action = Some(PrFollowUp::MainFails);
        findings.detail = Some(format!(
            "{} fail(s) on {}'s tip too: main's failure, not the task's",
            names.join(", "),
            values.target
        ));
        return Ok(());
    }
    if rerun(ctx, id, values, &own, follow).await? {
        findings.action = Some(PrFollowUp::Rerun);
        return Ok(());
    }
    for check in own {
        let at =
            check.link.as_deref().map(|link| format!(" (its log: {link})")).unwrap_or_default();
        let about = check.description.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
        findings.lines.push(format!("check `{}` failed{at}{about}", check.name));
        findings.charged.push(check.name.clone());
        findings.gaps.push(Gap {
            severity: Severity::Critical,
            location: String::new(),
            issue: format!(
                "the pull request's check `{}` failed on the forge{at}{about}",
                check.name
            ),
            suggestion: format!("make `{}` pass: read its log, fix the change", check.name),
        });
    }
    Ok(())
}

/// The names of the checks the target branch's tip fails (`pr_main_checks_command`);
/// none when it is not configured or cannot be read.
async fn main_failures(
    ctx: &RunContext,
    id: &str,
    values: &Placeholders,
) -> Result<Vec<String>, EngineError> {
    let argv = &ctx.config.land.pr_follow.main_checks_command;
    if argv.is_empty() {
        return Ok(Vec::new());
    }
    let key = "land.pr_main_checks_command";
    Ok(match read(ctx, id, key, argv, values, read_checks).await? {
        Ok(checks) => failed_names(&checks),
        Err(why) => {
            tracing::warn!("{why}: failed checks are charged to the task");
            Vec::new()
        }
    })
}

/// Asks the forge to run each failed check of `own` again that was not asked yet on this
/// commit; whether any was (the look then waits for them).
async fn rerun(
    ctx: &RunContext,
    id: &str,
    values: &Placeholders,
    own: &[&Check],
    follow: &mut PrFollowRecord,
) -> Result<bool, EngineError> {
    let template = &ctx.config.land.pr_follow.rerun_command;
    if template.is_empty() {
        return Ok(false);
    }
    let mut asked = false;
    let not_asked: Vec<&&Check> =
        own.iter().filter(|check| !follow.reruns.contains(&check.name)).collect();
    for check in not_asked {
        let link = check.link.clone().unwrap_or_default();
        let run = run_id(&link).unwrap_or_default();
        if template.iter().any(|arg| arg.contains("{run}")) && run.is_empty() {
            continue;
        }
        let mut pairs = values.pairs();
        pairs.extend([("{check}", check.name.as_str()), ("{link}", &link), ("{run}", &run)]);
        let argv = command_line(template, &pairs);
        let ran = run_forge(ctx, id, "land.pr_rerun_command", &argv).await?;
        follow.reruns.push(check.name.clone());
        match ran.failure {
            None => asked = true,
            Some(failure) => tracing::warn!("land.pr_rerun_command: {failure}"),
        }
    }
    Ok(asked)
}

/// Hands over the reviews and comments that ask for something and were not handed yet.
fn take_notes(notes: &[Note], follow: &PrFollowRecord, findings: &mut Findings) {
    for note in notes.iter().filter(|note| note.asks() && !follow.handed.contains(&note.key)) {
        let who =
            if note.author.is_empty() { "someone".into() } else { format!("@{}", note.author) };
        let what = match note.kind {
            super::forge::NoteKind::ChangesRequested => format!("review by {who} requests changes"),
            _ => format!("comment by {who}"),
        };
        let body = crate::causes::flat(note.body.trim());
        findings.lines.push(format!("{what}: {body}"));
        findings.handed.push(note.key.clone());
        findings.gaps.push(Gap {
            severity: Severity::Major,
            location: String::new(),
            issue: format!("{what} on the pull request: {}", note.body.trim()),
            suggestion: String::new(),
        });
    }
}

/// Journals (and tells) what the look found, when it differs from what was said last.
async fn say(
    ctx: &RunContext,
    index: usize,
    pr: &PullRequestRecord,
    follow: &mut PrFollowRecord,
    failed: Vec<String>,
    action: PrFollowUp,
    detail: Option<String>,
) -> Result<(), EngineError> {
    let task = ctx.task(index).id.to_string();
    let event = EventKind::PullRequestFollowed {
        task: task.clone(),
        commit: pr.commit.to_string(),
        checks: follow.checks.unwrap_or(PrChecks::None),
        review: follow.review.unwrap_or(PrReview::None),
        failed: failed.clone(),
        action,
        detail: detail.clone(),
    };
    let said = serde_json::to_string(&event).map_err(EngineError::internal("the event"))?;
    if follow.said.as_deref() == Some(said.as_str()) {
        return Ok(());
    }
    follow.said = Some(said);
    ctx.book.journal(event).await?;
    ctx.book.report(ProgressEvent::PullRequestFollowed {
        id: task,
        checks: follow.checks.unwrap_or(PrChecks::None),
        review: follow.review.unwrap_or(PrReview::None),
        failed,
        action,
        detail,
    });
    Ok(())
}

async fn save(ctx: &RunContext, index: usize, follow: PrFollowRecord) -> Result<(), EngineError> {
    ctx.book
        .change(index, move |record| {
            if let Some(pr) = record.pull_request.as_mut() {
                pr.follow = follow;
            }
        })
        .await
}

fn failed_names(checks: &[Check]) -> Vec<String> {
    checks.iter().filter(|c| c.state == CheckState::Failed).map(|c| c.name.clone()).collect()
}

/// The values of the placeholders of the commands following a pull request.
struct Placeholders {
    branch: String,
    url: String,
    number: String,
    target: String,
    remote: String,
    task: String,
    commit: String,
    target_commit: String,
}

impl Placeholders {
    fn of(id: &str, pr: &PullRequestRecord, target_tip: Oid) -> Placeholders {
        let url = pr.url.clone().unwrap_or_default();
        Placeholders {
            branch: pr.branch.clone(),
            number: number(&url).unwrap_or_default(),
            url,
            target: pr.base_branch.clone(),
            remote: pr.remote.clone(),
            task: id.to_string(),
            commit: pr.commit.to_string(),
            target_commit: target_tip.to_string(),
        }
    }

    fn pairs(&self) -> Vec<(&'static str, &str)> {
        vec![
            ("{branch}", &self.branch),
            ("{url}", &self.url),
            ("{number}", &self.number),
            ("{target}", &self.target),
            ("{remote}", &self.remote),
            ("{task}", &self.task),
            ("{commit}", &self.commit),
            ("{target_commit}", &self.target_commit),
        ]
    }
}
