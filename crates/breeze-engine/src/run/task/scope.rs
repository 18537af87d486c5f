//! Scope requests: a worker that needs to write outside its write set asks instead of
//! writing. The Lead grants the paths when no other task in flight or waiting to land can
//! write them or a path they would make a folder of (the same exact collision rule the
//! planner uses), makes the task wait while one can,
//! and denies what no waiting would make safe: a shared file another task owns, a path
//! outside the repository or inside breeze's and git's own folders.
//! What is granted widens the task's entry in the run's write sets (`run/write_sets.rs`).

use std::collections::BTreeSet;

use breeze_plan::{Analysis, Plan, TaskId, WriteSet};

use breeze_protocol::{EventKind, ScopeAnswer, ScopeDecision, ScopeRequest};

use crate::error::EngineError;
use crate::progress::ProgressEvent;
use crate::snapshot::TaskPhase;

/// Scope requests a task may make.
pub(crate) const MAX_SCOPE_REQUESTS: u32 = 3;

/// How often a waiting scope request looks again.
const SCOPE_POLL: std::time::Duration = std::time::Duration::from_millis(500);

/// Folders no task may be granted: git's, breeze's state and its worktrees.
const RESERVED: [&str; 3] = [".git", breeze_git::STATE_DIR, breeze_git::WORKTREES_NOTE_DIR];

/// What the Lead answers a scope request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ScopeVerdict {
    /// Granted now.
    Grant,
    /// These tasks (in flight or waiting to land) may write the paths: wait until they are
    /// done, then ask again.
    Wait(Vec<usize>),
    /// Never, and why.
    Deny(String),
}

/// What a scope decision looks at.
pub(crate) struct ScopeDesk<'a> {
    pub plan: &'a Plan,
    pub analysis: &'a Analysis,
    /// Every task's write set now.
    pub sets: &'a [WriteSet],
    /// Every task's phase now.
    pub phases: &'a [TaskPhase],
    /// Tasks waiting for a grant themselves (two tasks waiting on each other would wait
    /// forever).
    pub waiting: &'a BTreeSet<usize>,
}

impl ScopeDesk<'_> {
    /// The answer to task `index` asking for `paths`.
    pub fn decide(&self, index: usize, paths: &[String]) -> ScopeVerdict {
        let requested = match WriteSet::new(paths) {
            Ok(set) if !set.is_empty() => set,
            Ok(_) => return ScopeVerdict::Deny("the request names no path".into()),
            Err(err) => return ScopeVerdict::Deny(format!("`{}`: {}", err.entry, err.reason)),
        };
        if let Some(path) = paths.iter().find(|path| reserved(path)) {
            return ScopeVerdict::Deny(format!(
                "`{path}` is inside git's or breeze's own folders, which no task may write"
            ));
        }
        if let Some(reason) = self.owned_elsewhere(index, &requested) {
            return ScopeVerdict::Deny(reason);
        }
        let blocking: Vec<usize> = (0..self.phases.len())
            .filter(|&other| other != index && in_flight(self.phases[other]))
            .filter(|&other| {
                self.sets[other].is_empty() || requested.collision(&self.sets[other]).is_some()
            })
            .collect();
        if blocking.is_empty() {
            return ScopeVerdict::Grant;
        }
        if let Some(&other) = blocking.iter().find(|other| self.waiting.contains(other)) {
            return ScopeVerdict::Deny(format!(
                "task {} may write these paths and is itself waiting for a grant; waiting for each other would never end",
                self.plan.tasks[other].id
            ));
        }
        ScopeVerdict::Wait(blocking)
    }

    /// A shared file of the plan that another task owns and the request covers.
    fn owned_elsewhere(&self, index: usize, requested: &WriteSet) -> Option<String> {
        let me = &self.plan.tasks[index].id;
        self.analysis.shared_file_owners.iter().find_map(|(file, owner)| {
            let owner: &TaskId = owner.as_ref()?;
            (owner != me && requested.matches(file)).then(|| {
                format!("`{file}` is a shared file owned by task {owner}; ask that task's owner, or change it after both land")
            })
        })
    }
}

/// Whether a task holds a lane or waits to land (its write set is in use).
fn in_flight(phase: TaskPhase) -> bool {
    matches!(
        phase,
        TaskPhase::Working
            | TaskPhase::Reviewing
            | TaskPhase::Approved
            | TaskPhase::Deferred
            | TaskPhase::AwaitingApproval
    )
}

/// Whether a requested path lies in a reserved folder.
fn reserved(path: &str) -> bool {
    let first = path.trim_start_matches("./").split('/').next().unwrap_or_default();
    RESERVED.contains(&first)
}

impl super::driver::TaskDriver {
    /// Answers the worker's scope request: granted (the write set widens and the contract
    /// says so), denied (with why), or — while another busy task may write the paths —
    /// waits until it is done. `false` when the run stopped while waiting.
    pub(super) async fn ask_for_scope(
        &mut self,
        request: ScopeRequest,
    ) -> Result<bool, EngineError> {
        let asked = self
            .change(|record| {
                record.scope_requests += 1;
                record.scope_requests
            })
            .await?;
        let decision = if asked > MAX_SCOPE_REQUESTS {
            self.scope_decided(&request, false, Some(format!("at most {MAX_SCOPE_REQUESTS} scope requests per task; finish within the write set, or report failed"))).await?
        } else {
            match self.wait_for_scope(&request).await? {
                Some(decision) => decision,
                None => return Ok(false),
            }
        };
        self.change(|record| record.scope_decision = Some(decision)).await?;
        Ok(true)
    }

    /// Decides, waiting (polling, cut short by the stop) while busy tasks may write the
    /// paths. `None` when the run stopped.
    async fn wait_for_scope(
        &mut self,
        request: &ScopeRequest,
    ) -> Result<Option<ScopeDecision>, EngineError> {
        let mut told_waiting = false;
        let decision = loop {
            match self.scope_verdict(&request.paths) {
                ScopeVerdict::Grant => {
                    self.ctx
                        .write_sets
                        .grant(self.index, &request.paths)
                        .map_err(EngineError::internal("widening a write set"))?;
                    let paths = request.paths.clone();
                    self.change(|record| record.granted_writes.extend(paths)).await?;
                    self.write_contract_now()?;
                    break self.scope_decided(request, true, None).await?;
                }
                ScopeVerdict::Deny(reason) => {
                    break self.scope_decided(request, false, Some(reason)).await?;
                }
                ScopeVerdict::Wait(on) => {
                    if !told_waiting {
                        told_waiting = true;
                        self.waiting_for_scope(true);
                        let ids: Vec<String> =
                            on.iter().map(|&i| self.ctx.task(i).id.to_string()).collect();
                        self.scope_told(
                            request,
                            ScopeAnswer::Waiting,
                            Some(format!("waits for task {} to land", ids.join(", "))),
                        )
                        .await?;
                    }
                    tokio::select! {
                        () = tokio::time::sleep(SCOPE_POLL) => {}
                        () = self.ctx.cancel.cancelled() => {
                            self.waiting_for_scope(false);
                            return Ok(None);
                        }
                    }
                }
            }
        };
        self.waiting_for_scope(false);
        Ok(Some(decision))
    }

    fn scope_verdict(&self, paths: &[String]) -> ScopeVerdict {
        let phases = self.ctx.book.phases();
        let sets = self.ctx.write_sets.all();
        let waiting = self.ctx.scope_waiting.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let desk = ScopeDesk {
            plan: &self.ctx.plan,
            analysis: &self.ctx.analysis,
            sets: &sets,
            phases: &phases,
            waiting: &waiting,
        };
        desk.decide(self.index, paths)
    }

    fn waiting_for_scope(&self, waiting: bool) {
        let mut set = self.ctx.scope_waiting.lock().unwrap_or_else(|p| p.into_inner());
        if waiting {
            set.insert(self.index);
        } else {
            set.remove(&self.index);
        }
    }

    /// Journals and reports a decision, and returns it for the worker.
    async fn scope_decided(
        &self,
        request: &ScopeRequest,
        granted: bool,
        reason: Option<String>,
    ) -> Result<ScopeDecision, EngineError> {
        let answer = if granted { ScopeAnswer::Granted } else { ScopeAnswer::Denied };
        self.scope_told(request, answer, reason.clone()).await?;
        Ok(ScopeDecision { paths: request.paths.clone(), granted, reason })
    }

    async fn scope_told(
        &self,
        request: &ScopeRequest,
        decision: ScopeAnswer,
        reason: Option<String>,
    ) -> Result<(), EngineError> {
        self.ctx
            .book
            .journal(EventKind::ScopeDecided {
                task: self.id.clone(),
                paths: request.paths.clone(),
                decision,
                reason: reason.clone(),
            })
            .await?;
        self.ctx.book.report(ProgressEvent::Scope {
            id: self.id.clone(),
            paths: request.paths.clone(),
            granted: decision == ScopeAnswer::Granted,
            reason,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> (Plan, Analysis) {
        let plan = breeze_plan::parse_plan_toml(text, std::path::Path::new("plan.toml")).unwrap();
        let analysis = breeze_plan::analyze(&plan, 3).unwrap();
        (plan, analysis)
    }

    const PLAN: &str = "[[task]]\nid = \"a\"\ntitle = \"A\"\nwrites = [\"src/a/\", \"CHANGELOG.md\"]\n\
        [[task]]\nid = \"b\"\ntitle = \"B\"\nwrites = [\"src/b/\"]\n\
        [[task]]\nid = \"c\"\ntitle = \"C\"\nwrites = [\"src/c/\"]\n";

    fn decide(phases: &[TaskPhase], waiting: &[usize], paths: &[&str]) -> ScopeVerdict {
        let (plan, analysis) = plan(PLAN);
        let sets: Vec<WriteSet> = plan.tasks.iter().map(|task| task.writes.clone()).collect();
        let waiting = waiting.iter().copied().collect();
        let desk =
            ScopeDesk { plan: &plan, analysis: &analysis, sets: &sets, phases, waiting: &waiting };
        let paths: Vec<String> = paths.iter().map(ToString::to_string).collect();
        desk.decide(2, &paths)
    }

    use TaskPhase::{Landed, Queued, Working};

    #[test]
    fn a_path_no_busy_task_can_write_is_granted() {
        assert_eq!(
            decide(&[Working, Working, Working], &[], &["src/c2/mod.rs"]),
            ScopeVerdict::Grant
        );
        // A task that has not started does not hold its paths yet.
        assert_eq!(decide(&[Queued, Landed, Working], &[], &["src/a/x.rs"]), ScopeVerdict::Grant);
    }

    #[test]
    fn a_path_a_busy_task_may_write_waits_for_it() {
        assert_eq!(
            decide(&[Working, Queued, Working], &[], &["src/a/x.rs"]),
            ScopeVerdict::Wait(vec![0])
        );
        assert_eq!(
            decide(&[Working, Working, Working], &[], &["src/**"]),
            ScopeVerdict::Wait(vec![0, 1])
        );
        assert_eq!(
            decide(&[Queued, Working, Working], &[], &["src/b/x.rs"]),
            ScopeVerdict::Wait(vec![1])
        );
    }

    #[test]
    fn waiting_on_a_task_that_waits_is_denied() {
        let verdict = decide(&[Working, Queued, Working], &[0], &["src/a/x.rs"]);
        assert!(
            matches!(verdict, ScopeVerdict::Deny(reason) if reason.contains("waiting for each other"))
        );
    }

    #[test]
    fn shared_files_owned_elsewhere_and_reserved_or_outside_paths_are_denied() {
        let owned = decide(&[Queued, Queued, Working], &[], &["CHANGELOG.md"]);
        assert!(
            matches!(owned, ScopeVerdict::Deny(reason) if reason.contains("shared file owned by task"))
        );
        for path in [".git/config", ".breeze/runs/x", ".harness-worktrees/lane-1/a"] {
            let verdict = decide(&[Queued, Queued, Working], &[], &[path]);
            assert!(matches!(verdict, ScopeVerdict::Deny(_)), "{path}: {verdict:?}");
        }
        for path in ["../outside.rs", "/etc/passwd"] {
            let verdict = decide(&[Queued, Queued, Working], &[], &[path]);
            assert!(matches!(verdict, ScopeVerdict::Deny(_)), "{path}: {verdict:?}");
        }
    }
}
