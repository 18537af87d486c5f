//! Whether a failing `[review] checks` command is main's own failure. A check that fails on
//! a task's change is run once more on the task's base — main's tip the task started from —
//! in the task's own lane, parked there for the purpose with its setup and build outputs
//! intact, and the lane then goes back to the task's branch. A check whose failing tests all
//! fail on the base too (read by name, `breeze_failures`) is main's, not the task's: it does
//! not send the task back. What would be charged to the task is run once more on the same
//! tree first: a test that passes then is flaky, not the task's. The land step's
//! `land.verify` judges main's failures on its own terms.
//!
//! Verdicts are remembered by tree for the run (main's tip is judged once, not once per
//! task); a tree that passed `land.verify` with the same command passes.

use std::collections::BTreeSet;

use breeze_git::{Oid, Worktree};
use breeze_protocol::{Cause, CauseKind, GateResult, GateStatus};

use super::driver::TaskDriver;
use crate::error::EngineError;
use crate::kill_points;
use crate::progress::ProgressEvent;
use crate::run::land::{failure_of, short};
use crate::verify_cache::{Verdict, VerifyFailed};

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

/// What a failing check of a task's change is charged with, once main's verdict on the
/// task's base is known and the check was tried again where the task would be charged.
#[derive(Debug, Clone)]
pub(super) enum Charge {
    /// Nothing: main's tip fails it the same way (no failing test but main's).
    MainsOwn { base: Oid, main: Box<VerifyFailed> },
    /// Nothing: what the change alone failed passed on a retry of the same tree.
    Flaky { tests: BTreeSet<String> },
    /// These failing tests (or failure lines), which main's tip does not fail; `main`: what
    /// main's tip fails, when it fails the check too; `flaky`: what passed on the retry.
    Task {
        task_only: BTreeSet<String>,
        main: Option<(Oid, Box<VerifyFailed>)>,
        flaky: BTreeSet<String>,
    },
}

/// The charge of `mine` (the check's failure on the change) against main's verdict on the
/// task's base (`main_said`), before any retry.
pub(super) fn charge(mine: &VerifyFailed, main_said: Option<(Oid, Verdict)>) -> Charge {
    let Some((base, Verdict::Failed(main))) = main_said else {
        return Charge::Task { task_only: mine.what.keys(), main: None, flaky: BTreeSet::new() };
    };
    match mine.against_main(&main) {
        breeze_failures::Judgement::Same => Charge::MainsOwn { base, main },
        judgement => Charge::Task {
            task_only: judgement.task_only().cloned().unwrap_or_default(),
            main: Some((base, main)),
            flaky: BTreeSet::new(),
        },
    }
}

impl Charge {
    /// `self` (charged on the first run) once the check was run again on the same tree:
    /// `retry` its failure there (`None`: it passed). What the task is charged with must
    /// have failed both times; what failed only the first time is flaky.
    pub(super) fn after_retry(self, retry: Option<&VerifyFailed>) -> Charge {
        let Charge::Task { task_only, main, .. } = self else { return self };
        let Some(retry) = retry else { return Charge::Flaky { tests: task_only } };
        let again = match charge(retry, main.clone().map(|(base, m)| (base, Verdict::Failed(m)))) {
            // The retry failed only as main does: what the first run failed beyond was flaky.
            mains @ Charge::MainsOwn { .. } => return mains,
            Charge::Task { task_only, .. } => task_only,
            Charge::Flaky { tests } => tests,
        };
        let kept: BTreeSet<String> = task_only.intersection(&again).cloned().collect();
        let flaky: BTreeSet<String> = task_only.symmetric_difference(&again).cloned().collect();
        if kept.is_empty() {
            return Charge::Flaky { tests: flaky };
        }
        Charge::Task { task_only: kept, main, flaky }
    }

    /// Whether the task is charged (and so whether a retry could change that).
    pub(super) fn charges(&self) -> bool {
        matches!(self, Charge::Task { .. })
    }
}

/// At most this many failing tests (or lines) are named in a gate or a cause.
const NAMED: usize = 5;

/// Up to [`NAMED`] of `keys`, joined, and how many more.
fn named(keys: &BTreeSet<String>) -> String {
    let shown: Vec<&str> = keys.iter().take(NAMED).map(String::as_str).collect();
    match keys.len().saturating_sub(NAMED) {
        0 => shown.join(" | "),
        more => format!("{} and {more} more", shown.join(" | ")),
    }
}

/// The gate of check `argv` (`gate`, from its run on the change) and the cause that sends
/// the task back, if any, from its [`Charge`]: a failure main has the same way is
/// `inherited`; one that passed on a retry is flaky (the gate passes, naming it); else the
/// task is charged with what main's tip does not fail, and its worker is told which
/// failing tests are main's.
pub(super) fn judged(
    mut gate: GateResult,
    mine: &VerifyFailed,
    charge: Charge,
) -> (GateResult, Option<Cause>) {
    if gate.status != GateStatus::Failed {
        return (gate, None);
    }
    match charge {
        Charge::MainsOwn { base, main } => {
            gate.status = GateStatus::Inherited;
            gate.detail = format!(
                "fails on main's tip {}, which the change starts from, as it does here ({}): main's failure, not the change's — {}",
                short(base),
                named(&main.what.keys()),
                gate.detail
            );
            (gate, None)
        }
        Charge::Flaky { tests } => {
            gate.status = GateStatus::Passed;
            gate.detail = format!(
                "failed once and passed when run again on the same tree: flaky, not the change's ({}) — {}",
                named(&tests),
                gate.detail
            );
            (gate, None)
        }
        Charge::Task { task_only, main, flaky } => {
            let mut cause = mine.cause.clone();
            // A test runner's failing test names what failed; a plain command's output line
            // stays as its output said it.
            if let Some(first) = task_only.iter().next().filter(|_| mine.what.runner().is_some()) {
                cause.headline = Some(first.clone());
            }
            if let Some((base, main)) = &main {
                cause.detail.push_str(&format!(
                    "; main's tip {} fails {} too, not this change's",
                    short(*base),
                    named(&main.what.keys())
                ));
                gate.detail.push_str(&format!(
                    "\n(main's tip {} fails this check too — {} — which is not this change's; this change's: {})",
                    short(*base),
                    named(&main.what.keys()),
                    named(&task_only)
                ));
            }
            if !flaky.is_empty() {
                gate.detail.push_str(&format!(
                    "\n(passed on a retry of the same tree, so flaky and not charged: {})",
                    named(&flaky)
                ));
            }
            (gate, Some(cause))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cargo_test_output(failing: &[&str], noise: &str) -> String {
        let mut out = format!("{noise}\nrunning {} tests\n", failing.len() + 1);
        for name in failing {
            out.push_str(&format!("test {name} ... FAILED\n"));
        }
        out.push_str("test passes ... ok\n\nfailures:\n\n");
        for name in failing {
            out.push_str(&format!(
                "---- {name} stdout ----\nthread '{name}' ({}) panicked at src/lib.rs:3:5:\nleft: 0x7f{:x}\n",
                noise.len() * 7 + 11,
                noise.len() * 4099
            ));
        }
        out.push_str("\nfailures:\n");
        for name in failing {
            out.push_str(&format!("    {name}\n"));
        }
        out.push_str("\ntest result: FAILED. 1 passed; 1 failed\n");
        out
    }

    fn failed(failing: &[&str], noise: &str) -> VerifyFailed {
        let argv = vec!["cargo".to_string(), "test".to_string()];
        let output = cargo_test_output(failing, noise);
        VerifyFailed {
            failure: breeze_protocol::VerifyFailure {
                command: argv.clone(),
                exit_code: Some(101),
                log_tail: output.clone(),
            },
            ending: crate::verify_cache::EndingKind::Exited,
            what: breeze_failures::identify(&argv, &output),
            cause: Cause::new(CauseKind::Check, "exited 101"),
        }
    }

    fn failing_gate() -> GateResult {
        GateResult {
            id: "check: cargo test".into(),
            status: GateStatus::Failed,
            detail: "exited with code 101".into(),
            paths: Vec::new(),
        }
    }

    fn base() -> Oid {
        Oid::from_str("d190730aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").unwrap()
    }

    #[test]
    fn mains_failing_test_with_other_build_noise_and_addresses_is_never_charged() {
        // A cold lane compiles and downloads; main's run was warm. Same failing test.
        let cold = "   Compiling anyhow v1.0.86\n  Downloaded thiserror-impl v1.0.65";
        let mine = failed(&["test_fmt"], cold);
        let main = failed(&["test_fmt"], "    Finished `test` profile");
        let charge = charge(&mine, Some((base(), Verdict::Failed(Box::new(main)))));
        assert!(!charge.charges(), "{charge:?}");
        let (gate, cause) = judged(failing_gate(), &mine, charge);
        assert_eq!(gate.status, GateStatus::Inherited, "{gate:?}");
        assert!(gate.detail.contains("test_fmt") && gate.detail.contains("d190730"), "{gate:?}");
        assert!(cause.is_none());
    }

    #[test]
    fn a_test_main_passes_is_the_changes_and_the_worker_is_told_which_are_mains() {
        let mine = failed(&["test_fmt", "test_new"], "");
        let main = failed(&["test_fmt"], "x");
        let charge = charge(&mine, Some((base(), Verdict::Failed(Box::new(main)))));
        assert!(charge.charges());
        let (gate, cause) = judged(failing_gate(), &mine, charge);
        assert_eq!(gate.status, GateStatus::Failed);
        assert!(gate.detail.contains("test_fmt") && gate.detail.contains("test_new"), "{gate:?}");
        let cause = cause.unwrap();
        assert_eq!(cause.headline.as_deref(), Some("test_new"), "the line names the change's test");
        assert!(cause.line().contains("test_new"), "{}", cause.line());
    }

    #[test]
    fn a_test_that_passes_on_a_retry_of_the_same_tree_is_flaky_not_the_tasks() {
        let mine = failed(&["test_flaky"], "");
        let charged = charge(&mine, None);
        let after = charged.clone().after_retry(None);
        let (gate, cause) = judged(failing_gate(), &mine, after);
        assert_eq!(gate.status, GateStatus::Passed, "{gate:?}");
        assert!(gate.detail.contains("flaky") && gate.detail.contains("test_flaky"));
        assert!(cause.is_none());
        // Failing again the same way, it is the task's.
        let again = failed(&["test_flaky"], "y");
        assert!(charged.clone().after_retry(Some(&again)).charges());
        // Of two failing tests, the one that passed on the retry is named flaky.
        let two = failed(&["test_flaky", "test_real"], "");
        let retry = failed(&["test_real"], "z");
        let after = charge(&two, None).after_retry(Some(&retry));
        let (gate, cause) = judged(failing_gate(), &two, after);
        assert!(gate.detail.contains("flaky and not charged: test_flaky"), "{gate:?}");
        assert_eq!(cause.unwrap().headline.as_deref(), Some("test_real"));
    }
}
