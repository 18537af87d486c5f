//! Gates and review of a finished attempt: the mechanical gates and `[review] checks`
//! first — a failure goes back to the worker without being a round — then the reviewer,
//! whose verdict the gap severities decide.

use std::collections::BTreeSet;

use breeze_protocol::{
    CauseKind, EventKind, Gap, GateResult, GateStatus, MemoryScope, ReviewInput, ReviewInputV1,
    ReviewResult, Role, Severity, Verdict, validate,
};

use super::checks;
use super::consult::write_json;
use super::driver::TaskDriver;
use super::outcome::{GateFailure, Judged, PERSON_SUMMARY, Round};
use super::review_checkout::{self, ReviewCheckout};
use crate::clock;
use crate::error::EngineError;
use crate::progress::ProgressEvent;
use crate::roles::backoff::Backoff;
use crate::roles::{RoleCall, RoleOutcome, definition, prompt};
use crate::run::context::{ProjectCommand, ProjectRun};
use crate::run::land::failure_of;
use crate::run_dir::file_slug;
use crate::snapshot::ObjectId;

/// Reviewer invocations per round before the run stops for the user.
const REVIEWER_TRIES: u32 = 2;

/// What the reviewer of one round looks at.
struct Change {
    round: u32,
    base: ObjectId,
    head: ObjectId,
    changed_paths: Vec<String>,
    diff_path: std::path::PathBuf,
    gates: Vec<GateResult>,
    /// The changelog line the landing adds, shown to the reviewer in the input and the diff.
    changelog: Option<String>,
}

impl TaskDriver {
    /// Runs the gates, then the checks, then (if they pass) the reviewer, on `base..head`.
    /// A round counts once the reviewer gave a verdict: a review cut off by a stop is done
    /// again as the same round; a failed gate or check is no round at all.
    pub(super) async fn review(
        &mut self,
        base: ObjectId,
        head: ObjectId,
    ) -> Result<Judged, EngineError> {
        let mut change = self.change_under_review(base, head).await?;
        let failed: Vec<&GateResult> =
            change.gates.iter().filter(|gate| gate.status == GateStatus::Failed).collect();
        if !failed.is_empty() {
            let failure = GateFailure::of_gates(&failed);
            self.end_pending_cycle(&change, &failure.cause.line());
            return Ok(Judged::GatesFailed(failure));
        }
        let (checks, failed_check) = self.run_checks(change.round).await?;
        change.gates.extend(checks);
        if let Some(cause) = failed_check {
            let failed: Vec<&GateResult> =
                change.gates.iter().filter(|gate| gate.status == GateStatus::Failed).collect();
            let failure = GateFailure::new(cause, &failed);
            self.end_pending_cycle(&change, &failure.cause.line());
            return Ok(Judged::GatesFailed(failure));
        }
        // The gates passed: gate failures in a row start again from none.
        if self.record().gate_failures_in_row > 0 {
            self.change(|record| record.gate_failures_in_row = 0).await?;
        }
        let result = {
            let _serial = self.ctx.review_lock.lock().await;
            self.run_reviewer(&change).await?
        };
        self.record_verdict(&change, result).await.map(Judged::Reviewed)
    }

    /// Runs `review.checks` in the task's worktree, each as a gate; with the cause of the
    /// first that failed. The lane is held while they run: they may build or write caches
    /// there, which become the lane's baseline. A check that fails is asked whether main
    /// fails it too (`checks.rs`): failing the same way, it is main's.
    async fn run_checks(
        &mut self,
        round: u32,
    ) -> Result<(Vec<GateResult>, Option<breeze_protocol::Cause>), EngineError> {
        let checks = self.ctx.config.review_checks.clone();
        let Some(worktree) = self.worktree.clone() else { return Ok((Vec::new(), None)) };
        if checks.is_empty() {
            return Ok((Vec::new(), None));
        }
        self.hold_lane();
        // The checks' git: a linter's `git diff`, a test runner's changed files.
        self.settle_lane_index(&worktree).await?;
        let mut runs = Vec::new();
        for (n, argv) in checks.iter().enumerate() {
            let attempt = self.record().attempts;
            let log = format!("check-{}.attempt-{attempt}.round-{round}", n + 1);
            runs.push(self.run_check(argv, &worktree.path, &log).await?);
        }
        // What the checks left (a `Cargo.lock`, caches) is the lane's baseline: never the
        // task's change unless its worker changes it later.
        self.record_baseline(&worktree).await?;
        // A check refused for writing where it may not is the check's own doing.
        let failing: Vec<Vec<String>> = checks
            .iter()
            .zip(&runs)
            .filter(|(_, run)| !run.outcome.ending.is_success() && run.refused.is_none())
            .map(|(argv, _)| argv.clone())
            .collect();
        let on_base = if failing.is_empty() {
            None
        } else {
            self.checks_on_base(&worktree, failing, round).await?
        };
        let mut gates = Vec::new();
        let mut failed = None;
        for (argv, run) in checks.iter().zip(&runs) {
            let gate = check_gate(argv, run);
            if gate.status == GateStatus::Passed {
                gates.push(gate);
                continue;
            }
            let mine = failure_of(CauseKind::Check, argv.clone(), run);
            let main_said = on_base.as_ref().and_then(|on_base| on_base.said(argv));
            let mut charge = checks::charge(&mine, main_said);
            if charge.charges() && run.refused.is_none() {
                charge = self.retried(argv, charge, round).await?;
            }
            let (gate, cause) = checks::judged(gate, &mine, charge);
            failed = failed.or(cause);
            gates.push(gate);
        }
        self.writer = None;
        Ok((gates, failed))
    }

    /// `charge` once check `argv` ran again on the same tree, in the task's lane: what
    /// passes then is flaky, not the task's.
    async fn retried(
        &mut self,
        argv: &[String],
        charge: checks::Charge,
        round: u32,
    ) -> Result<checks::Charge, EngineError> {
        let Some(worktree) = self.worktree.clone() else { return Ok(charge) };
        self.hold_lane();
        let number = self.ctx.config.review_checks.iter().position(|c| c == argv).unwrap_or(0);
        let attempt = self.record().attempts;
        let log = format!("check-{}.attempt-{attempt}.round-{round}.retry", number + 1);
        let run = self.run_check(argv, &worktree.path, &log).await?;
        self.record_baseline(&worktree).await?;
        let retry = (!run.outcome.ending.is_success())
            .then(|| failure_of(CauseKind::Check, argv.to_vec(), &run));
        let charge = charge.after_retry(retry.as_ref());
        if let checks::Charge::Flaky { tests } = &charge {
            tracing::warn!(
                task = %self.id,
                "`{}` failed once and passed on a retry of the same tree: flaky, not the task's ({})",
                argv.join(" "),
                tests.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
            );
        }
        Ok(charge)
    }

    /// Runs the check `argv` in the lane checkout `dir`, logged as `<task>.<log>`; a stop
    /// while it runs is [`EngineError::Cancelled`].
    pub(super) async fn run_check(
        &self,
        argv: &[String],
        dir: &std::path::Path,
        log: &str,
    ) -> Result<ProjectRun, EngineError> {
        let log = self.ctx.run_dir.unused_log(&format!("{}.{log}", file_slug(&self.id)));
        let run = self
            .ctx
            .run_project_command(ProjectCommand::new(
                &self.id,
                "review.checks",
                argv,
                (dir, self.lane_env()),
                &log,
                self.ctx.config.check_timeout,
            ))
            .await?;
        if run.outcome.ending == breeze_supervise::Ending::Cancelled {
            return Err(EngineError::Cancelled);
        }
        Ok(run)
    }

    /// The diff (kept in the run files), the changed paths and the gates of `base..head`.
    async fn change_under_review(
        &self,
        base: ObjectId,
        head: ObjectId,
    ) -> Result<Change, EngineError> {
        let round = self.record().rounds + 1;
        let (base_oid, head_oid) = (base.0, head.0);
        let writes = self.ctx.write_sets.get(self.index);
        let max_file_bytes = self.ctx.config.max_file_bytes;
        let plans_file = self.ctx.tracked_plans_file.clone();
        let breeze_git::ChangeForReview { changes, mut patch, gates } = self
            .ctx
            .git(move |repo| {
                let in_write_set = |path: &str| writes.is_empty() || writes.matches(path);
                let markers = |text: &str| breeze_plan::plans_md::status_markers(text);
                repo.change_for_review(
                    base_oid,
                    head_oid,
                    &breeze_git::GateConfig {
                        in_write_set: &in_write_set,
                        max_file_bytes,
                        plans_file: plans_file.as_deref(),
                        status_markers: &markers,
                    },
                )
            })
            .await?;
        let changed_paths: BTreeSet<String> = changes
            .iter()
            .flat_map(|change| change.touched_paths().into_iter().map(str::to_string))
            .collect();
        // The line the landing adds, if any: with `land.changelog = "off"` nothing lands,
        // and the reviewer is shown nothing.
        let mut changelog =
            self.record().changelog.as_deref().and_then(crate::changelog::landing_line);
        if let Some(line) = changelog.clone() {
            let setting = self.ctx.config.land.changelog.clone();
            match self.ctx.git(move |repo| changelog_patch(repo, &setting, &line)).await? {
                Some(hunk) => patch.push_str(&hunk),
                None => changelog = None,
            }
        }
        let diff_path = self.ctx.run_dir.review_file(&file_slug(&self.id), round, "diff");
        std::fs::write(&diff_path, patch)
            .map_err(|err| EngineError::io(format!("cannot write {}", diff_path.display()), err))?;
        Ok(Change {
            round,
            base,
            head,
            changed_paths: changed_paths.into_iter().collect(),
            diff_path,
            gates,
            changelog,
        })
    }

    /// Normalizes the reviewer's verdict and records it: the result file, the journal, the
    /// progress stream, the round count and the lessons for later workers.
    async fn record_verdict(
        &self,
        change: &Change,
        result: ReviewResult,
    ) -> Result<Round, EngineError> {
        let said = result.verdict;
        let normalized = normalize(&self.id, result, &change.head.to_string());
        let reviewer_said = (said != normalized.verdict).then_some(said);
        let slug = file_slug(&self.id);
        let result_path = self.ctx.run_dir.review_file(&slug, change.round, "review-result.json");
        let value = serde_json::to_value(&normalized)
            .map_err(EngineError::internal("the review result"))?;
        write_json(&result_path, &value)?;
        let blocking: Vec<Gap> = normalized.blocking_gaps().cloned().collect();
        self.ctx
            .book
            .journal(EventKind::Reviewed {
                task: self.id.clone(),
                round: change.round,
                verdict: normalized.verdict,
                head: change.head.to_string(),
                result_path: result_path.display().to_string(),
            })
            .await?;
        self.ctx.book.report(ProgressEvent::Reviewed {
            id: self.id.clone(),
            round: change.round,
            verdict: normalized.verdict,
            blocking_gaps: blocking.len(),
        });
        self.end_cycle(change, Some(normalized.verdict), None);
        // Universal lessons reach every later worker briefing of the run.
        let lessons: Vec<String> = normalized
            .memory_updates
            .iter()
            .filter(|update| update.scope() == MemoryScope::Universal)
            .map(|update| update.text().to_string())
            .collect();
        let gap_files: BTreeSet<String> =
            blocking.iter().filter_map(|gap| gap.file().map(str::to_string)).collect();
        let (index, round, verdict) = (self.index, change.round, normalized.verdict);
        self.ctx
            .book
            .update_task(index, |snapshot| {
                for lesson in lessons {
                    if !snapshot.universal_violations.contains(&lesson) {
                        snapshot.universal_violations.push(lesson);
                    }
                }
                snapshot.tasks[index].rounds = round;
                if verdict == Verdict::RequestChanges {
                    snapshot.tasks[index].gap_files.push(gap_files);
                }
            })
            .await?;
        Ok(Round { verdict, blocking, reviewer_said })
    }

    /// The `cycles.jsonl` line of an attempt the gates or a check sent back: no verdict,
    /// the cause as its summary.
    fn end_pending_cycle(&self, change: &Change, cause: &str) {
        self.end_cycle(change, None, Some(cause));
    }

    /// The `cycles.jsonl` line of the judged attempt: the reviewer's verdict, or why the
    /// gates sent it back.
    fn end_cycle(&self, change: &Change, verdict: Option<Verdict>, sent_back: Option<&str>) {
        let pending = self.pending_cycle.lock().unwrap_or_else(|p| p.into_inner()).take();
        let record = self.record();
        let now = clock::now_rfc3339();
        // After a resume the attempt's own line is gone with the engine that made it.
        let by_person = record.person_head == Some(change.head);
        let mut cycle = pending.unwrap_or_else(|| crate::journal::CycleRecord {
            run_id: self.ctx.run_id.clone(),
            cycle: 0,
            task_id: self.id.clone(),
            executor: if by_person { "person" } else { "breezing" },
            job_status: "completed".into(),
            verdict: None,
            commit_hash: None,
            summary: if by_person { PERSON_SUMMARY } else { "completed" }.into(),
            attempts: record.attempts,
            consultations: record.advisor_consults,
            started_at: now.clone(),
            finished_at: now.clone(),
        });
        cycle.verdict = verdict.map(|verdict| verdict.as_str().to_string());
        if let Some(cause) = sent_back {
            cycle.job_status = "sent-back".into();
            cycle.summary = crate::advice::bound_text(cause, 8192);
        }
        cycle.commit_hash = Some(change.head.to_string().chars().take(7).collect());
        cycle.finished_at = now;
        self.ctx.book.cycle(cycle);
    }

    /// Runs the reviewer: up to [`REVIEWER_TRIES`] calls that give no valid result (the
    /// backend's trouble is waited out and not counted); then the run stops for the user.
    async fn run_reviewer(&self, change: &Change) -> Result<ReviewResult, EngineError> {
        let input = ReviewInput {
            schema_version: ReviewInputV1,
            run_id: self.ctx.run_id.clone(),
            task: self.ctx.brief(self.index),
            round: change.round,
            base: change.base.to_string(),
            head: change.head.to_string(),
            changed_paths: change.changed_paths.clone(),
            diff_path: change.diff_path.display().to_string(),
            gates: change.gates.clone(),
            contract_path: Some(self.ctx.contract_path(self.index).display().to_string()),
            changelog: change.changelog.clone(),
        };
        let definition = definition::load(self.ctx.roles.repo_root(), Role::Reviewer)
            .map_err(|message| EngineError::usage(message, "fix the role definition file"))?;
        // The reviewed commit and nothing else: never the worker's lane.
        let cwd = review_checkout::place(&self.ctx, ReviewCheckout::Review, change.head).await?;
        let input_value =
            serde_json::to_value(&input).map_err(EngineError::internal("the review input"))?;
        let mut problem = String::new();
        let mut backoff = Backoff::new(self.ctx.backoff);
        let (mut tries, mut retries) = (0, 0);
        while tries < REVIEWER_TRIES {
            let label = match retries {
                0 => format!("round-{}.try-{}", input.round, tries + 1),
                n => format!("round-{}.try-{}.retry-{n}", input.round, tries + 1),
            };
            let call = RoleCall {
                input: input_value.clone(),
                prompt: prompt::reviewer(&definition, &input),
                label,
                ..self.reviewer_call(&input, cwd.clone())
            };
            let reply = self.ctx.call_role(call).await?;
            self.change(|record| record.usage.add(&reply.usage)).await?;
            if !reply.escaped.is_empty() {
                let who = format!("the reviewer of task {} (round {})", self.id, input.round);
                return Err(self.ctx.roles.guard.escape_error(&who, &reply.escaped));
            }
            problem = match reply.outcome {
                RoleOutcome::Trouble(trouble) => {
                    retries += 1;
                    let (roles, cancel) = (&self.ctx.roles, &self.ctx.cancel);
                    roles
                        .wait_out(&mut backoff, &trouble, &self.id, Role::Reviewer, cancel)
                        .await?;
                    continue;
                }
                RoleOutcome::Cancelled => return Err(EngineError::Cancelled),
                RoleOutcome::OverBudget(over) => return Err(EngineError::OverBudget(over)),
                RoleOutcome::CouldNotStart(message) => {
                    return Err(EngineError::usage(
                        format!("the reviewer of task {} could not start: {message}", self.id),
                        "check roles.reviewer in breeze.toml (backend, command) and that the program is installed",
                    ));
                }
                RoleOutcome::Answered(value) => match validate::parse::<ReviewResult>(value) {
                    Ok(result) => return Ok(result),
                    Err(invalid) => format!("invalid review result: {invalid}"),
                },
                RoleOutcome::NoAnswer(why) => format!("no review result: {why}"),
                RoleOutcome::Ended(ending) => format!("reviewer {ending}: {}", reply.diagnostics),
            };
            tries += 1;
            retries = 0;
            tracing::warn!(task = %self.id, try_number = tries, "{problem}");
        }
        Err(EngineError::usage(
            format!("the reviewer failed {REVIEWER_TRIES} times on task {}: {problem}", self.id),
            format!(
                "see the reviewer log with `breeze logs {}`; fix roles.reviewer, then `breeze resume`",
                self.id
            ),
        ))
    }
}

impl TaskDriver {
    /// The reviewer's call of a round in `cwd`, the review checkout (input, prompt and
    /// label are the caller's).
    fn reviewer_call(&self, input: &ReviewInput, cwd: std::path::PathBuf) -> RoleCall {
        RoleCall {
            role: Role::Reviewer,
            task_id: self.id.clone(),
            attempt: input.round,
            round: input.round,
            cwd,
            base: input.base.clone(),
            input: serde_json::Value::Null,
            prompt: String::new(),
            resume_session: None,
            label: String::new(),
            resume_baseline: None,
            lane: None,
            lane_env: Some(self.lane_env()),
        }
    }
}

/// The change breeze makes to the project's changelog when the task lands with `line`,
/// computed as the landing computes it (`land.changelog`) on main's tip as it is now,
/// marked as breeze's for the end of the review diff. `None` when no line is added.
fn changelog_patch(
    repo: &breeze_git::Repo,
    setting: &crate::changelog::Changelog,
    line: &str,
) -> Result<Option<String>, breeze_git::GitError> {
    let tip = repo.main_tip()?;
    let Some(file) = setting.file_in_tree(repo, tip)? else { return Ok(None) };
    let current = repo.read_blob_at(tip, &file)?;
    let updated = crate::changelog::updated_changelog(&file, current.as_deref(), line);
    let patch = breeze_git::text_patch(&file, current.as_deref(), updated.as_bytes())?;
    Ok(Some(format!(
        "# ---- Added by breeze when the task lands, not by the task's commits ----\n\
         # The worker's report (`changelog`) asks for this line; breeze adds it to {file}\n\
         # in the landing commit (shown here on main's {file} as it is now).\n\
         {patch}"
    )))
}

/// A review check's outcome as a gate (`check: cargo test`).
fn check_gate(argv: &[String], run: &ProjectRun) -> GateResult {
    let outcome = &run.outcome;
    let passed = outcome.ending.is_success();
    let detail = if passed {
        "passed".to_string()
    } else {
        let tail = format!("{}{}", outcome.stdout_tail, outcome.stderr_tail);
        let mut detail =
            format!("{} — {}", outcome.ending, crate::advice::bound_text(tail.trim(), 2048));
        if let Some(hint) = &run.refused {
            detail.push_str(&format!(" (breeze: {hint})"));
        }
        detail
    };
    GateResult {
        id: format!("check: {}", argv.join(" ")),
        status: if passed { GateStatus::Passed } else { GateStatus::Failed },
        detail,
        paths: Vec::new(),
    }
}

/// Any critical or major gap means REQUEST_CHANGES; minor-only means APPROVE. A
/// REQUEST_CHANGES without any gap keeps its verdict with a synthesized major gap, so
/// the worker gets something to act on. Disagreements are logged.
fn normalize(id: &str, mut result: ReviewResult, head: &str) -> ReviewResult {
    if result.verdict == Verdict::RequestChanges && result.gaps.is_empty() {
        let detail = if result.followups.is_empty() {
            "the reviewer requested changes without listing any gap".to_string()
        } else {
            result.followups.join("; ")
        };
        result.gaps.push(Gap {
            severity: Severity::Major,
            location: String::new(),
            issue: detail,
            suggestion: String::new(),
        });
    }
    let implied = result.implied_verdict();
    if implied != result.verdict {
        tracing::info!(
            task = %id,
            reviewer = result.verdict.as_str(),
            engine = implied.as_str(),
            "the reviewer's verdict disagrees with its gaps; the gaps decide"
        );
        result.followups.push(format!(
            "breeze normalized the verdict {} to {} from the gap severities",
            result.verdict.as_str(),
            implied.as_str()
        ));
        result.verdict = implied;
    }
    result.task = Some(id.to_string());
    result.commit_hash = Some(head.to_string());
    result.generated_at = Some(clock::now_rfc3339());
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(verdict: Verdict, gaps: Vec<Gap>) -> ReviewResult {
        ReviewResult {
            schema_version: breeze_protocol::ReviewResultV1,
            verdict,
            review_type: None,
            reviewer_profile: None,
            checks: Vec::new(),
            gaps,
            followups: Vec::new(),
            memory_updates: Vec::new(),
            task: None,
            commit_hash: None,
            generated_at: None,
        }
    }

    fn gap(severity: Severity) -> Gap {
        Gap {
            severity,
            location: "src/a.rs:1".into(),
            issue: "x".into(),
            suggestion: String::new(),
        }
    }

    #[test]
    fn the_gaps_decide_the_verdict() {
        let minor_only =
            normalize("1", result(Verdict::RequestChanges, vec![gap(Severity::Minor)]), "h");
        assert_eq!(minor_only.verdict, Verdict::Approve);
        assert!(
            minor_only.followups.iter().any(|f| f.contains("normalized")),
            "the disagreement is recorded"
        );
        let major = normalize("1", result(Verdict::Approve, vec![gap(Severity::Major)]), "h");
        assert_eq!(major.verdict, Verdict::RequestChanges);
        assert_eq!((major.task.as_deref(), major.commit_hash.as_deref()), (Some("1"), Some("h")));
    }

    #[test]
    fn a_rejection_without_gaps_stays_a_rejection_with_something_to_fix() {
        let mut bare = result(Verdict::RequestChanges, Vec::new());
        bare.followups.push("the tests do not run".into());
        let normalized = normalize("1", bare, "h");
        assert_eq!(normalized.verdict, Verdict::RequestChanges);
        assert_eq!(normalized.blocking_gaps().count(), 1);
        assert!(normalized.gaps[0].issue.contains("the tests do not run"));
    }
}
