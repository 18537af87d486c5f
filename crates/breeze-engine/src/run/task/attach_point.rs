//! A person stepping into a task's lane while the run is live (`breeze attach`). The task's
//! driver looks for an attach request at its safe points — before each worker attempt,
//! before each review, before landing — never in the middle of a role call or a landing.
//! There it pauses: it says where the person may work, holds the lane (no other role is
//! blamed for what changes in it) and waits until they leave. Then it commits what they
//! left, which is their attempt: a change goes through the gates and review like a
//! worker's, without counting as a worker attempt; no change lets the task go on where it
//! paused.

use std::time::Duration;

use breeze_protocol::EventKind;

use super::driver::TaskDriver;
use super::outcome::{PERSON_SUMMARY, SafePoint};
use crate::clock;
use crate::error::EngineError;
use crate::journal::CycleRecord;
use crate::progress::ProgressEvent;
use crate::snapshot::ObjectId;
use crate::step_in::request::{AttachFiles, Paused};
use crate::step_in::stopped::PersonAttempt;

/// How often a paused task looks whether the person left.
const LEFT_POLL: Duration = Duration::from_millis(200);

impl TaskDriver {
    /// The task's attach files.
    pub(super) fn attach_files(&self) -> AttachFiles {
        AttachFiles::new(&self.ctx.run_dir, &self.id)
    }

    /// A safe point: pauses the task for a person who asked to step in, until they leave.
    pub(super) async fn safe_point(&mut self) -> Result<SafePoint, EngineError> {
        let files = self.attach_files();
        let Some(request) = files.pending() else { return Ok(SafePoint::Passed) };
        let Some(worktree) = self.worktree.clone() else { return Ok(SafePoint::Passed) };
        let held_before = self.writer.is_some();
        // The person writes the lane: nobody else is blamed for it.
        self.hold_lane();
        let record = self.record();
        let base = record.base.unwrap_or(self.ctx.main_tip_at_start);
        let before = record.head.unwrap_or(base);
        let paused = Paused {
            lane: Some(self.lane),
            worktree: worktree.path.clone(),
            branch: worktree.branch.clone(),
            base: base.to_string(),
            head: before.to_string(),
            session: record.session_id.clone(),
        };
        // The person's git.
        self.settle_lane_index(&worktree).await?;
        files.pause(&paused)?;
        self.ctx
            .book
            .journal(EventKind::Attached {
                task: self.id.clone(),
                lane: Some(self.lane),
                worktree: worktree.path.display().to_string(),
            })
            .await?;
        self.ctx.book.report(ProgressEvent::Notice {
            message: format!(
                "task {} is paused in lane {}: a person is attached (`breeze attach`); it goes on when they leave",
                self.id, self.lane
            ),
        });
        let started_at = clock::now_rfc3339();
        loop {
            if files.ended(&request).is_some() {
                break;
            }
            tokio::select! {
                () = tokio::time::sleep(LEFT_POLL) => {}
                () = self.ctx.cancel.cancelled() => {
                    // The files stay: the person's `breeze attach` finishes on its own.
                    return Ok(SafePoint::Interrupted);
                }
            }
        }
        let step = self.take_what_the_person_left(before, started_at).await;
        files.clear();
        if !held_before {
            self.writer = None;
        }
        step
    }

    /// Commits what the person left and records their attempt.
    async fn take_what_the_person_left(
        &self,
        before: ObjectId,
        started_at: String,
    ) -> Result<SafePoint, EngineError> {
        let message = format!("breeze: task {}, changes by a person (breeze attach)", self.id);
        let (head, problem) = self.commit_lane(message, before).await?;
        let attempt = match problem {
            Some(problem) => PersonAttempt::NotCommitted(problem.line()),
            None if head == before => PersonAttempt::Unchanged,
            None => PersonAttempt::Changed { head: head.to_string() },
        };
        self.ctx.book.journal(attempt.event(&self.id)).await?;
        let (step, message) = match &attempt {
            PersonAttempt::Changed { .. } => (
                SafePoint::Changed { head },
                format!("task {}: the person left a change; it goes to review", self.id),
            ),
            PersonAttempt::Unchanged => (
                SafePoint::Unchanged,
                format!("task {}: the person left without a change; the task goes on", self.id),
            ),
            PersonAttempt::NotCommitted(why) => (
                SafePoint::Unchanged,
                format!(
                    "task {}: what the person left cannot be committed ({why}); the task goes on and its next attempt meets it",
                    self.id
                ),
            ),
        };
        self.ctx.book.report(ProgressEvent::Notice { message });
        if let SafePoint::Changed { head } = step {
            self.change(|record| record.take_person_change(head)).await?;
            let record = self.record();
            // Its line waits for the verdict of the review it goes to.
            *self.pending_cycle.lock().unwrap_or_else(|p| p.into_inner()) = Some(CycleRecord {
                run_id: self.ctx.run_id.clone(),
                cycle: 0,
                task_id: self.id.clone(),
                executor: "person",
                job_status: "completed".into(),
                verdict: None,
                commit_hash: Some(head.to_string().chars().take(7).collect()),
                summary: PERSON_SUMMARY.into(),
                attempts: record.attempts,
                consultations: record.advisor_consults,
                started_at,
                finished_at: clock::now_rfc3339(),
            });
        }
        Ok(step)
    }
}
