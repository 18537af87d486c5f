//! Gates and review of a finished attempt (DESIGN §4 steps 4–5).

use std::collections::BTreeSet;

use breeze_protocol::{
    EventKind, Gap, GateStatus, MemoryScope, ReviewInput, ReviewInputV1, ReviewResult,
    ReviewResultV1, Role, Severity, TaskState, Verdict, validate,
};

use super::context::RunContext;
use crate::clock;
use crate::error::EngineError;
use crate::progress::ProgressEvent;
use crate::roles::{RoleCall, RoleEnding, definition, prompt};
use crate::run_dir::file_slug;

/// Reviewer invocations per round before the task is marked failed.
const REVIEWER_TRIES: u32 = 2;

/// The normalized outcome of one round.
pub(crate) struct Round {
    pub verdict: Verdict,
    /// The critical and major gaps.
    pub blocking: Vec<Gap>,
    /// What the reviewer itself said, when breeze normalized it to `verdict`.
    pub reviewer_said: Option<Verdict>,
}

/// Runs the gates, then (if they pass) the reviewer, for `base..head` of task `index`.
pub(crate) async fn review(
    ctx: &RunContext,
    index: usize,
    worktree: &std::path::Path,
    base: &str,
    head: &str,
) -> Result<Round, EngineError> {
    let task = ctx.task(index);
    let id = task.id.to_string();
    let slug = file_slug(&id);
    // A round counts once it has a verdict: a review cut off by a stop or a failing
    // reviewer is done again as the same round.
    let round = ctx.record(index).rounds + 1;
    ctx.set_state(index, TaskState::Reviewing, None)?;
    let (base_oid, head_oid) = (parse_oid(base)?, parse_oid(head)?);

    let changes = ctx.git(move |repo| repo.changed_paths(base_oid, head_oid)).await?;
    let mut changed_paths: BTreeSet<String> = BTreeSet::new();
    for change in &changes {
        changed_paths.extend(change.touched_paths().into_iter().map(str::to_string));
    }
    let patch = ctx.git(move |repo| repo.diff_patch(base_oid, head_oid)).await?;
    let diff_path = ctx.run_dir.review_file(&slug, round, "diff");
    std::fs::write(&diff_path, patch)
        .map_err(|err| EngineError::io(format!("cannot write {}", diff_path.display()), err))?;

    let writes = task.writes.clone();
    let max_file_bytes = ctx.config.max_file_bytes;
    let plans_file = ctx.tracked_plans_file.clone();
    let gates = ctx
        .git(move |repo| {
            let in_write_set = |path: &str| writes.is_empty() || writes.matches(path);
            let markers = |text: &str| breeze_plan::plans_md::status_markers(text);
            repo.run_gates(
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

    let failed_gates: Vec<_> =
        gates.iter().filter(|gate| gate.status == GateStatus::Failed).collect();
    let (result, by_gates) = if !failed_gates.is_empty() {
        // The engine's own REQUEST_CHANGES: the reviewer is not asked about a change
        // that breaks the mechanical rules.
        let gaps = failed_gates
            .iter()
            .map(|gate| Gap {
                severity: Severity::Major,
                location: gate.paths.first().cloned().unwrap_or_default(),
                issue: format!("gate `{}` failed: {}", gate.id, gate.detail),
                suggestion: gate_suggestion(&gate.id),
            })
            .collect();
        (engine_review(gaps), true)
    } else {
        let _serial = ctx.review_lock.lock().await;
        let input = ReviewInput {
            schema_version: ReviewInputV1,
            run_id: ctx.run_id.clone(),
            task: ctx.brief(index),
            round,
            base: base.to_string(),
            head: head.to_string(),
            changed_paths: changed_paths.iter().cloned().collect(),
            diff_path: diff_path.display().to_string(),
            gates: gates.clone(),
            contract_path: Some(ctx.contract_path(index).display().to_string()),
        };
        (run_reviewer(ctx, index, worktree, &input).await?, false)
    };

    let reviewer_verdict = result.verdict;
    let normalized = normalize(&id, result, head);
    let reviewer_said = (reviewer_verdict != normalized.verdict).then_some(reviewer_verdict);
    let result_path = ctx.run_dir.review_file(&slug, round, "review-result.json");
    std::fs::write(&result_path, serde_json::to_vec_pretty(&normalized).unwrap_or_default())
        .map_err(|err| EngineError::io(format!("cannot write {}", result_path.display()), err))?;
    let blocking: Vec<Gap> = normalized.blocking_gaps().cloned().collect();
    ctx.journal(EventKind::Reviewed {
        task: id.clone(),
        round,
        verdict: normalized.verdict,
        head: head.to_string(),
        result_path: result_path.display().to_string(),
    })?;
    ctx.report(ProgressEvent::Reviewed {
        id,
        round,
        verdict: normalized.verdict,
        blocking_gaps: blocking.len(),
        by_gates,
    });
    // Universal lessons reach every later worker briefing of the run.
    let lessons: Vec<String> = normalized
        .memory_updates
        .iter()
        .filter(|update| update.scope() == MemoryScope::Universal)
        .map(|update| update.text().to_string())
        .collect();
    let gap_files: BTreeSet<String> =
        blocking.iter().filter_map(|gap| gap.file().map(str::to_string)).collect();
    ctx.update(|snapshot| {
        for lesson in lessons {
            if !snapshot.universal_violations.contains(&lesson) {
                snapshot.universal_violations.push(lesson);
            }
        }
        snapshot.tasks[index].rounds = round;
        if normalized.verdict == Verdict::RequestChanges {
            snapshot.tasks[index].gap_files.push(gap_files);
        }
    })?;
    Ok(Round { verdict: normalized.verdict, blocking, reviewer_said })
}

async fn run_reviewer(
    ctx: &RunContext,
    index: usize,
    worktree: &std::path::Path,
    input: &ReviewInput,
) -> Result<ReviewResult, EngineError> {
    let id = input.task.id.clone();
    let definition = definition::load(ctx.roles.repo_root(), Role::Reviewer)
        .map_err(|message| EngineError::usage(message, "fix the role definition file"))?;
    let input_value = serde_json::to_value(input)
        .map_err(|err| EngineError::io("review input", std::io::Error::other(err)))?;
    let mut problem = String::new();
    let mut backoff = crate::roles::backoff::Backoff::new(ctx.backoff);
    let mut retries = 0;
    let mut try_number = 0;
    while try_number < REVIEWER_TRIES {
        try_number += 1;
        let reply = ctx
            .roles
            .invoke(
                RoleCall {
                    lane: None,
                    role: Role::Reviewer,
                    task_id: id.clone(),
                    attempt: input.round,
                    round: input.round,
                    cwd: worktree.to_path_buf(),
                    base: input.base.clone(),
                    input: input_value.clone(),
                    prompt: prompt::reviewer(&definition, input),
                    resume_session: None,
                    label: if retries == 0 {
                        format!("round-{}.try-{try_number}", input.round)
                    } else {
                        format!("round-{}.try-{try_number}.retry-{retries}", input.round)
                    },
                    resume_baseline: None,
                },
                &ctx.cancel,
            )
            .await;
        ctx.update_task(index, |record| record.usage.add(&reply.usage))?;
        if !reply.escaped.is_empty() {
            let who = format!("the reviewer of task {id} (round {})", input.round);
            return Err(ctx.roles.guard.escape_error(&who, &reply.escaped));
        }
        if let Some(trouble) = &reply.trouble {
            retries += 1;
            ctx.wait_out(&mut backoff, trouble, &id, Role::Reviewer).await?;
            try_number -= 1;
            continue;
        }
        retries = 0;
        problem = match (&reply.ending, reply.result) {
            (RoleEnding::Cancelled, _) => {
                return Err(EngineError::io(
                    "review cancelled",
                    std::io::Error::from(std::io::ErrorKind::Interrupted),
                ));
            }
            (RoleEnding::SpawnFailed(message), _) => {
                return Err(EngineError::usage(
                    format!("the reviewer of task {id} could not start: {message}"),
                    "check roles.reviewer in breeze.toml (backend, command) and that the program is installed",
                ));
            }
            (RoleEnding::Exited(0), Some(value)) => match validate::parse::<ReviewResult>(value) {
                Ok(result) => return Ok(result),
                Err(invalid) => format!("invalid review result: {invalid}"),
            },
            (RoleEnding::Exited(0), None) => {
                format!("no review result: {}", reply.result_error.unwrap_or_default())
            }
            (ending, _) => format!("reviewer {ending}: {}", reply.diagnostics),
        };
        tracing::warn!(task = %id, try_number, "{problem}");
    }
    Err(EngineError::usage(
        format!("the reviewer failed {REVIEWER_TRIES} times on task {id}: {problem}"),
        format!(
            "see the reviewer log with `breeze logs {id}`; fix roles.reviewer, then `breeze resume`"
        ),
    ))
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

fn engine_review(gaps: Vec<Gap>) -> ReviewResult {
    ReviewResult {
        schema_version: ReviewResultV1,
        verdict: Verdict::RequestChanges,
        review_type: Some(breeze_protocol::ReviewType::Scope),
        reviewer_profile: Some(breeze_protocol::ReviewerProfile::Static),
        checks: Vec::new(),
        gaps,
        followups: Vec::new(),
        memory_updates: Vec::new(),
        task: None,
        commit_hash: None,
        generated_at: None,
    }
}

fn gate_suggestion(gate: &str) -> String {
    match gate {
        "write-set" => "revert the changes outside the task's write set (or ask for the plan's write set to include them)",
        "symlink-escape" => "remove the symlink or make it point inside the repository",
        "nested-repo" => "remove the nested repository or submodule",
        "plans-markers" => "leave Plans.md status markers alone: breeze flips them when the task lands",
        "file-size" => "do not add files above the size limit (gates.max_file_size)",
        _ => "fix the gate failure",
    }
    .to_string()
}

pub(crate) fn parse_oid(text: &str) -> Result<breeze_git::Oid, EngineError> {
    breeze_git::Oid::from_str(text).map_err(|err| {
        EngineError::io(
            format!("the run state holds an invalid commit id {text:?}"),
            std::io::Error::other(err),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(verdict: Verdict, gaps: Vec<Gap>) -> ReviewResult {
        ReviewResult { verdict, gaps, ..engine_review(Vec::new()) }
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
