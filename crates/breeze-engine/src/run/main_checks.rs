//! Whether a failing `[review] checks` command is main's own failure. A check that fails on
//! a task's change is run once more on the task's base — main's tip the task started from —
//! in the task's own lane, parked there for the purpose with its setup and build outputs
//! intact, and the lane then goes back to the task's branch. A check that fails on the base
//! the same way (the same failing lines, `advice::output_signature`) is main's, not the
//! task's: it does not send the task back. The land step's `land.verify` judges main's
//! failures on its own terms.
//!
//! Verdicts are remembered by tree for the run (main's tip is judged once, not once per
//! task); a tree that passed `land.verify` with the same command passes.

use std::collections::HashMap;
use std::sync::Mutex;

use breeze_git::{Oid, Worktree};
use breeze_protocol::{Cause, CauseKind, GateResult, GateStatus};

use super::context::ProjectRun;
use super::driver::TaskDriver;
use super::verify_queue::{failure_of, short};
use crate::error::EngineError;
use crate::kill_points;
use crate::progress::ProgressEvent;
use crate::verify_cache::Verdict;

/// The checks' verdicts on main's trees in this run, by tree and command.
#[derive(Debug, Default)]
pub(crate) struct MainChecks {
    known: Mutex<HashMap<(Oid, Vec<String>), Verdict>>,
    /// Held while a lane judges main: lanes that failed a check on the same base wait for
    /// its verdict rather than run it again.
    judging: tokio::sync::Mutex<()>,
}

impl MainChecks {
    fn known(&self, tree: Oid, argv: &[String]) -> Option<Verdict> {
        self.known.lock().unwrap_or_else(|p| p.into_inner()).get(&(tree, argv.to_vec())).cloned()
    }

    /// Remembers a verdict; `true` when it is new.
    fn record(&self, tree: Oid, argv: &[String], verdict: &Verdict) -> bool {
        self.known
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((tree, argv.to_vec()), verdict.clone())
            .is_none()
    }
}

/// What the task's base said to the checks that failed on its change.
pub(super) struct OnBase {
    /// main's tip the task started from.
    base: Oid,
    /// One verdict per failing check, in the order asked; `None` when it could not be
    /// judged (the lane could not be parked).
    verdicts: Vec<Option<Verdict>>,
    /// The failing checks, in that order.
    asked: Vec<Vec<String>>,
}

impl OnBase {
    /// The base and what check `argv` said there, when it was judged.
    pub(super) fn said(&self, argv: &[String]) -> Option<(Oid, Verdict)> {
        let at = self.asked.iter().position(|asked| asked == argv)?;
        Some((self.base, self.verdicts[at].clone()?))
    }
}

impl TaskDriver {
    /// Judges each of `failing` (check commands that failed on the task's change in
    /// `worktree`) on the task's base: known from the tree, or run there now.
    pub(super) async fn checks_on_base(
        &mut self,
        worktree: &Worktree,
        failing: Vec<Vec<String>>,
        round: u32,
    ) -> Result<Option<OnBase>, EngineError> {
        let record = self.record();
        let (Some(base), Some(branch)) = (record.base.map(|base| base.0), record.branch) else {
            return Ok(None);
        };
        let tree = self.ctx.git(move |repo| repo.tree_of(base)).await?;
        let ctx = self.ctx.clone();
        let _judging = ctx.main_checks.judging.lock().await;
        let mut verdicts: Vec<Option<Verdict>> = failing
            .iter()
            .map(|argv| {
                ctx.main_checks.known(tree, argv).or_else(|| {
                    (*argv == ctx.config.verify)
                        .then(|| ctx.verify_cache.known(tree))
                        .flatten()
                        .filter(|verdict| *verdict == Verdict::Passed)
                })
            })
            .collect();
        if verdicts.iter().all(Option::is_some) {
            return Ok(Some(OnBase { base, verdicts, asked: failing }));
        }
        let Some(parked) = self.park_at(worktree, base).await else {
            return Ok(Some(OnBase { base, verdicts, asked: failing }));
        };
        kill_points::reached("review:lane-at-base");
        let ran = self.run_on_base(&parked, &failing, &mut verdicts, tree, base, round).await;
        // Back to the task's branch whatever the checks did: the lane is the task's.
        self.record_baseline(&parked).await?;
        let back = parked.clone();
        let to = branch.clone();
        let switched = self.ctx.git(move |repo| repo.switch_worktree(&back, &to)).await?;
        self.ctx.set_lane(self.lane, switched.clone());
        self.worktree = Some(switched);
        ran?;
        Ok(Some(OnBase { base, verdicts, asked: failing }))
    }

    /// The lane parked at `base` (detached, only the differing paths written), or `None`
    /// when it cannot be (a warning is logged; the checks are then the task's).
    async fn park_at(&self, worktree: &Worktree, base: Oid) -> Option<Worktree> {
        let wt = worktree.clone();
        let parked = self
            .ctx
            .git_watched(&worktree.path, move |repo, changes| {
                repo.park_worktree(&wt, base, changes)
            })
            .await;
        match parked {
            Ok(parked) => Some(parked),
            Err(err) => {
                tracing::warn!(
                    task = %self.id,
                    "cannot move {} to the task's base to tell main's check failures apart: {err}",
                    worktree.path.display()
                );
                None
            }
        }
    }

    /// Runs the checks not judged yet in the lane parked at `base`, remembering each verdict.
    async fn run_on_base(
        &self,
        parked: &Worktree,
        failing: &[Vec<String>],
        verdicts: &mut [Option<Verdict>],
        tree: Oid,
        base: Oid,
        round: u32,
    ) -> Result<(), EngineError> {
        let short = &base.to_string()[..7];
        for (n, argv) in failing.iter().enumerate() {
            if verdicts[n].is_some() {
                continue;
            }
            let number = self.ctx.config.review_checks.iter().position(|check| check == argv);
            let log = format!("check-{}.on-main-{short}.round-{round}", number.unwrap_or(n) + 1);
            let run = self.run_check(argv, &parked.path, &log).await?;
            let verdict = if run.outcome.ending.is_success() {
                Verdict::Passed
            } else {
                Verdict::Failed(Box::new(failure_of(CauseKind::Check, argv.clone(), &run)))
            };
            if self.ctx.main_checks.record(tree, argv, &verdict)
                && matches!(verdict, Verdict::Failed(_))
            {
                self.ctx.book.report(ProgressEvent::Notice {
                    message: format!(
                        "`{}` ([review] checks) fails on main's tip {short} too: a task that fails it the same way is not sent back for it; fix main to have it check the tasks again",
                        argv.join(" ")
                    ),
                });
            }
            verdicts[n] = Some(verdict);
        }
        Ok(())
    }
}

/// The gate of check `argv` (`gate`, from its run on the change, `run`) once main's verdict
/// on the task's base is known (`main_said`: the base and what the check said there), with
/// the cause that sends the task back, if any. A failure main has the same way is
/// `inherited`; another one is the task's, and its worker is told which failing lines are
/// main's.
pub(super) fn judged(
    mut gate: GateResult,
    argv: &[String],
    run: &ProjectRun,
    main_said: Option<(Oid, Verdict)>,
) -> (GateResult, Option<Cause>) {
    if gate.status != GateStatus::Failed {
        return (gate, None);
    }
    let mine = failure_of(CauseKind::Check, argv.to_vec(), run);
    let (base, main) = match main_said {
        Some((base, Verdict::Failed(main))) => (base, main),
        _ => return (gate, Some(mine.cause)),
    };
    if main.signature == mine.signature {
        gate.status = GateStatus::Inherited;
        gate.detail = format!(
            "fails the same way on main's tip {}, which the change starts from: main's failure, not the change's — {}",
            short(base),
            gate.detail
        );
        return (gate, None);
    }
    let mut cause = mine.cause;
    cause
        .detail
        .push_str(&format!("; main's tip {} fails it too, but not the same way", short(base)));
    // Main's tail begins with how it ended: `(exited with code 1) `.
    let tail = &main.failure.log_tail;
    let tail = tail
        .split_once(") ")
        .filter(|(ending, _)| ending.starts_with('(') && !ending.contains('\n'))
        .map_or(tail.as_str(), |(_, rest)| rest);
    let mains: Vec<&str> = tail
        .lines()
        .map(str::trim)
        .filter(|line| breeze_protocol::names_a_failure(line))
        .take(5)
        .collect();
    gate.detail.push_str(&format!(
        "\n(main's tip {} fails this check too; its failing lines, which are not this change's: {})",
        short(base),
        mains.join(" | ")
    ));
    (gate, Some(cause))
}
