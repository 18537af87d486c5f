//! `land.verify` like a merge queue: the verdict on a chain of landing commits built on
//! main's tip (one task's, or a batch's), with the failing task found by bisection, and a
//! failure main itself already has told apart from the task's.
//!
//! - A commit is verified in the integration worktree; a tree that passed before is known
//!   to pass (`verify_cache.rs`), so main's tip after a landing is known for free.
//! - The landing queue's chains are verified speculatively instead ([`judge_prefixes`]):
//!   every prefix at once, each in an integration checkout of its own, the verdicts then
//!   taken in order by the same rules.
//! - A chain that fails is bisected over its prefixes (verify the first half, …): the
//!   longest prefix that passes may land, the task after it is the culprit.
//! - When the first task's landing fails, main's own tip is checked (once per tip): if it
//!   fails too, the failure is main's — the run stops (`land.on_main_failure = "stop"`),
//!   or, with `"land"`, a landing that fails exactly the way main does counts as passing.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::task::Poll;

use breeze_git::Oid;
use breeze_protocol::{CauseKind, EventKind, VerifyFailure, VerifyOutcome};
use breeze_supervise::Ending;

use crate::config::OnMainFailure;
use crate::error::EngineError;
use crate::lane_env::LaneEnv;
use crate::progress::ProgressEvent;
use crate::run::context::{ProjectCommand, ProjectRun, RunContext};
use crate::run_dir::file_slug;
use crate::verify_cache::{EndingKind, Verdict, VerifyFailed};

/// Bytes of verify output sent back to the worker.
const VERIFY_TAIL_BYTES: usize = 4096;
/// Lines of main's failing output shown when the run stops for it.
const MAIN_TAIL_LINES: usize = 15;

/// A landing commit in a chain built on main's tip: the task's change on top of the
/// landings before it.
#[derive(Debug, Clone)]
pub(crate) struct Link {
    /// The task.
    pub index: usize,
    pub id: String,
    /// main's tip, or the landing commit before this one.
    pub parent: Oid,
    pub commit: Oid,
    pub tree: Oid,
}

/// What verify said about a chain.
#[derive(Debug)]
pub(crate) struct ChainVerdict {
    /// How many of the chain's first landings may move main: their last commit passed
    /// (or failed only the way main does).
    pub passed: usize,
    /// The landing after them failed: its task's failure and its cause. `None` when all
    /// passed.
    pub culprit: Option<VerifyFailed>,
}

/// Verifies the chain of landings built on `main`, bisecting a failure to its task.
///
/// Runs of verify: one when the chain passes; else one more per halving
/// (`⌈log2 n⌉` for a chain of `n`), and one for main's tip when the first landing fails
/// (unless main's tip is known). Each verdict is journaled (`verified`).
pub(crate) async fn judge_chain(
    ctx: &RunContext,
    main: Oid,
    chain: &[Link],
) -> Result<ChainVerdict, EngineError> {
    let mut judge = Judge { ctx, main, main_verdict: None };
    let Some(mut failed) = judge.check(chain).await? else {
        return Ok(ChainVerdict { passed: chain.len(), culprit: None });
    };
    // The empty prefix (main) is taken to pass and the whole chain fails: halve.
    let (mut passing, mut failing) = (0, chain.len());
    while failing - passing > 1 {
        let middle = passing + (failing - passing) / 2;
        match judge.check(&chain[..middle]).await? {
            None => passing = middle,
            Some(failure) => {
                failing = middle;
                failed = failure;
            }
        }
    }
    if passing == 0 {
        judge.first_fails(&chain[0].id, &mut failed).await?;
    }
    Ok(ChainVerdict { passed: passing, culprit: Some(failed) })
}

/// Verifies every prefix of the chain of landings built on `main` side by side — main+A,
/// main+A+B, … — integration checkout `n` verifying the prefix of `n + 1` landings (a
/// tree known before is not verified again). The verdicts are then taken in order, by the
/// same rules as [`judge_chain`]'s: the first prefix that fails (unlike main, and not
/// flaky) names its last landing the culprit; the prefixes before it passed.
///
/// Runs of verify: one per prefix, at once (the chain is as long as `land.queue_depth`
/// allows); one more on the culprit's tree (a flake?), and one for main's tip when the
/// first landing fails (unless main's tip is known).
pub(crate) async fn judge_prefixes(
    ctx: &RunContext,
    main: Oid,
    chain: &[Link],
) -> Result<ChainVerdict, EngineError> {
    let verifies: Vec<Pending<'_, _>> = chain
        .iter()
        .enumerate()
        .map(|(slot, link)| {
            Box::pin(verdict_on(ctx, slot, &link.id, link.commit, link.tree)) as Pending<'_, _>
        })
        .collect();
    let verdicts = side_by_side(verifies).await;
    let mut judge = Judge { ctx, main, main_verdict: None };
    for (slot, verdict) in verdicts.into_iter().enumerate() {
        let (verdict, known) = verdict?;
        let prefix = &chain[..=slot];
        if let Some(mut failed) = judge.settle(prefix, slot, verdict, known).await? {
            if slot == 0 {
                judge.first_fails(&chain[0].id, &mut failed).await?;
            }
            return Ok(ChainVerdict { passed: slot, culprit: Some(failed) });
        }
    }
    Ok(ChainVerdict { passed: chain.len(), culprit: None })
}

/// A future of one verify run side by side with others.
type Pending<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Runs `futures` at once, on this task: their outputs, in their order.
async fn side_by_side<T>(futures: Vec<Pending<'_, T>>) -> Vec<T> {
    let mut running: Vec<Option<Pending<'_, T>>> = futures.into_iter().map(Some).collect();
    let mut outputs: Vec<Option<T>> = running.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        for (future, output) in running.iter_mut().zip(outputs.iter_mut()) {
            if let Some(pending) = future
                && let Poll::Ready(value) = pending.as_mut().poll(cx)
            {
                *output = Some(value);
                *future = None;
            }
        }
        if running.iter().all(Option::is_none) { Poll::Ready(()) } else { Poll::Pending }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

/// The verdicts of one chain, with main's tip's asked once.
struct Judge<'a> {
    ctx: &'a RunContext,
    main: Oid,
    main_verdict: Option<Verdict>,
}

impl Judge<'_> {
    /// Whether the prefix ending at its last landing may land: `None` when it passes (or
    /// fails exactly like main, with `on_main_failure = "land"`), else its failure.
    async fn check(&mut self, prefix: &[Link]) -> Result<Option<VerifyFailed>, EngineError> {
        let Some(last) = prefix.last() else { return Ok(None) };
        let (verdict, known) = verdict_on(self.ctx, 0, &last.id, last.commit, last.tree).await?;
        self.settle(prefix, 0, verdict, known).await
    }

    /// What `verdict` (verify's on the prefix's last landing, run in integration checkout
    /// `slot`; `known` from its tree) means for the prefix, journaled: `None` when it may
    /// land, else its failure.
    async fn settle(
        &mut self,
        prefix: &[Link],
        slot: usize,
        mut verdict: Verdict,
        known: bool,
    ) -> Result<Option<VerifyFailed>, EngineError> {
        let Some(last) = prefix.last() else { return Ok(None) };
        let outcome = match &verdict {
            Verdict::Passed => VerifyOutcome::Passed,
            Verdict::Failed(failed) if self.fails_like_main(failed, &last.id).await? => {
                VerifyOutcome::FailsLikeMain
            }
            // A failure charged to the landing is run once more on the same tree first:
            // what passes then is flaky, not the task's. (Where main's own tip fails and
            // the run stops for it, nothing is charged: no retry.)
            Verdict::Failed(failed) if !known && self.charges_landings(&last.id).await? => {
                let tree = (last.commit, last.tree);
                match retried(self.ctx, slot, &last.id, tree, failed).await? {
                    None => VerifyOutcome::Flaky,
                    Some(kept) => {
                        verdict = Verdict::Failed(Box::new(kept));
                        VerifyOutcome::Failed
                    }
                }
            }
            Verdict::Failed(_) => VerifyOutcome::Failed,
        };
        self.ctx
            .book
            .journal(EventKind::Verified {
                tasks: prefix.iter().map(|link| link.id.clone()).collect(),
                commit: last.commit.to_string(),
                tree: last.tree.to_string(),
                outcome,
                known,
            })
            .await?;
        match verdict {
            Verdict::Failed(failed) if outcome == VerifyOutcome::Failed => Ok(Some(*failed)),
            _ => Ok(None),
        }
    }

    /// Whether a landing's failure is charged to its task: with `on_main_failure = "land"`
    /// (a failure unlike main's is), or when main's own tip passes (with "stop", main
    /// failing stops the run instead).
    async fn charges_landings(&mut self, id: &str) -> Result<bool, EngineError> {
        Ok(self.ctx.config.on_main_failure == OnMainFailure::Land
            || self.main_verdict(id).await? == Verdict::Passed)
    }

    /// With `on_main_failure = "land"`: whether main's own tip fails exactly this way.
    async fn fails_like_main(
        &mut self,
        failed: &VerifyFailed,
        id: &str,
    ) -> Result<bool, EngineError> {
        if self.ctx.config.on_main_failure != OnMainFailure::Land {
            return Ok(false);
        }
        Ok(matches!(
            self.main_verdict(id).await?,
            Verdict::Failed(main) if failed.against_main(&main) == breeze_failures::Judgement::Same
        ))
    }

    /// The first landing of the chain (task `id`'s) fails on its own: main may be what
    /// fails. When it does, the run stops (`on_main_failure = "stop"`), or the worker is
    /// told that main fails too (`"land"`).
    async fn first_fails(
        &mut self,
        id: &str,
        failed: &mut VerifyFailed,
    ) -> Result<(), EngineError> {
        let Verdict::Failed(main_failed) = self.main_verdict(id).await? else { return Ok(()) };
        match self.ctx.config.on_main_failure {
            OnMainFailure::Stop => Err(main_fails(self.ctx, self.main, id, &main_failed)),
            OnMainFailure::Land => {
                failed.failure.log_tail.push_str(&format!(
                    "\n(main itself fails `{}` too, at {}; only what differs from main's failure is this task's)",
                    self.ctx.config.verify.join(" "),
                    short(self.main)
                ));
                Ok(())
            }
        }
    }

    /// main's tip's verdict: known, or verified now (and journaled) — once per chain and,
    /// through the cache, once per tree.
    async fn main_verdict(&mut self, id: &str) -> Result<Verdict, EngineError> {
        if let Some(verdict) = &self.main_verdict {
            return Ok(verdict.clone());
        }
        let main = self.main;
        let tree = self.ctx.git(move |repo| repo.tree_of(main)).await?;
        let (verdict, known) = verdict_on(self.ctx, 0, id, main, tree).await?;
        self.ctx
            .book
            .journal(EventKind::Verified {
                tasks: Vec::new(),
                commit: main.to_string(),
                tree: tree.to_string(),
                outcome: if verdict == Verdict::Passed {
                    VerifyOutcome::Passed
                } else {
                    VerifyOutcome::Failed
                },
                known,
            })
            .await?;
        self.main_verdict = Some(verdict.clone());
        Ok(verdict)
    }
}

/// The error that stops the run when main's own tip fails verify.
fn main_fails(ctx: &RunContext, main: Oid, id: &str, failed: &VerifyFailed) -> EngineError {
    let lines: Vec<&str> = failed.failure.log_tail.lines().collect();
    let tail = lines[lines.len().saturating_sub(MAIN_TAIL_LINES)..].join("\n");
    EngineError::usage(
        format!(
            "main itself fails `{}` at {} — main's failure, not task {id}'s, which waits to land:\n{tail}",
            ctx.config.verify.join(" "),
            short(main)
        ),
        "fix main (commit the fix on it), then `breeze resume` lands the waiting work; or set `[land] on_main_failure = \"land\"` to land work that fails only the way main does",
    )
}

/// A commit as people read it.
pub(crate) fn short(commit: Oid) -> String {
    commit.to_string()[..7].to_string()
}

/// verify's verdict on `commit` (whose tree is `tree`): known from the tree, or run now in
/// integration checkout `slot` (and remembered). `true` with a known verdict.
async fn verdict_on(
    ctx: &RunContext,
    slot: usize,
    id: &str,
    commit: Oid,
    tree: Oid,
) -> Result<(Verdict, bool), EngineError> {
    if let Some(verdict) = ctx.verify_cache.known(tree) {
        return Ok((verdict, true));
    }
    let verdict = run_verify(ctx, slot, id, commit).await?;
    ctx.verify_cache.record(tree, &verdict);
    Ok((verdict, false))
}

/// `failed` (verify's failure on `commit`, whose tree is `tree`) once verify ran again on
/// the same tree: `None` when nothing failed both times (flaky: the tree is remembered as
/// passing), else what failed both times.
async fn retried(
    ctx: &RunContext,
    slot: usize,
    id: &str,
    (commit, tree): (Oid, Oid),
    failed: &VerifyFailed,
) -> Result<Option<VerifyFailed>, EngineError> {
    let again = run_verify(ctx, slot, id, commit).await?;
    let kept = match again {
        Verdict::Passed => None,
        Verdict::Failed(again) => failed_both_times(failed, *again),
    };
    let verdict = kept.clone().map_or(Verdict::Passed, |kept| Verdict::Failed(Box::new(kept)));
    ctx.verify_cache.record(tree, &verdict);
    if kept.is_none() {
        ctx.book.report(ProgressEvent::Notice {
            message: format!(
                "`{}` failed once on task {id}'s landing and passed when run again on the same tree: flaky, not the task's ({})",
                ctx.config.verify.join(" "),
                failed.what.keys().into_iter().take(5).collect::<Vec<_>>().join(", ")
            ),
        });
    }
    Ok(kept)
}

/// What failed in both runs of one tree (`retry` as it failed, its tests or lines cut to
/// those `first` failed too); `None` when nothing did.
pub(crate) fn failed_both_times(
    first: &VerifyFailed,
    mut retry: VerifyFailed,
) -> Option<VerifyFailed> {
    use breeze_failures::Failure;
    let both = |a: &std::collections::BTreeSet<String>, b: &std::collections::BTreeSet<String>| {
        a.intersection(b).cloned().collect::<std::collections::BTreeSet<String>>()
    };
    retry.what = match (&first.what, retry.what) {
        (
            Failure::Tests { runner: r1, failing: f1, errors: e1 },
            Failure::Tests { runner, failing, errors },
        ) if *r1 == runner => {
            Failure::Tests { runner, failing: both(f1, &failing), errors: both(e1, &errors) }
        }
        (Failure::Output(a), Failure::Output(b)) => Failure::Output(both(a, &b)),
        (_, other) => other,
    };
    if retry.what.keys().is_empty() {
        return None;
    }
    // A test runner's failing test names what failed; a plain command's lines are kept as
    // its output said them.
    if retry.what.runner().is_some() {
        retry.cause.headline = retry.what.keys().into_iter().next();
    }
    Some(retry)
}

/// Runs verify on `commit` in integration checkout `slot`, with that checkout's lane and
/// ports: what it said.
async fn run_verify(
    ctx: &RunContext,
    slot: usize,
    id: &str,
    commit: Oid,
) -> Result<Verdict, EngineError> {
    let worktree = integration_worktree(ctx, slot, move |repo, changes| {
        repo.integration_checkout(slot, commit, changes)
    })
    .await?;
    let log =
        ctx.run_dir.unused_log(&format!("{}.verify.{}", file_slug(id), &commit.to_string()[..12]));
    let run = ctx
        .run_project_command(ProjectCommand::new(
            id,
            "land.verify",
            &ctx.config.verify,
            (&worktree, LaneEnv::integration_slot(&ctx.config, slot)),
            &log,
            ctx.config.verify_timeout,
        ))
        .await?;
    if run.outcome.ending == Ending::Cancelled {
        return Err(EngineError::Cancelled);
    }
    Ok(if run.outcome.ending.is_success() {
        Verdict::Passed
    } else {
        Verdict::Failed(Box::new(failure_of(CauseKind::Verify, ctx.config.verify.clone(), &run)))
    })
}

/// A failed check on a merged tree (`land.verify`, a hook: `kind`) or on a lane (`[review]
/// checks`), as the worker is told about it, with what failed and its cause.
pub(crate) fn failure_of(kind: CauseKind, command: Vec<String>, run: &ProjectRun) -> VerifyFailed {
    let outcome = &run.outcome;
    let combined = format!("{}{}", outcome.stdout_tail, outcome.stderr_tail);
    let tail_start = combined.len().saturating_sub(VERIFY_TAIL_BYTES);
    let tail_start =
        (tail_start..=combined.len()).find(|i| combined.is_char_boundary(*i)).unwrap_or(0);
    // A stream cut at its start begins mid-line: that line is left out of the signature.
    let whole_lines = |tail: &str, bytes: u64| -> String {
        if bytes as usize > tail.len() {
            tail.split_once('\n').map_or("", |(_, rest)| rest).to_string()
        } else {
            tail.to_string()
        }
    };
    let output = format!(
        "{}\n{}",
        whole_lines(&outcome.stdout_tail, outcome.stdout_bytes),
        whole_lines(&outcome.stderr_tail, outcome.stderr_bytes)
    );
    let what = breeze_failures::identify(&command, &output);
    let ending = match outcome.ending {
        Ending::Exited(_) => EndingKind::Exited,
        _ => EndingKind::Otherwise,
    };
    let mut log_tail = format!("({}) {}", outcome.ending, &combined[tail_start..]);
    if let Some(hint) = &run.refused {
        log_tail.push_str(&format!("\n(breeze: {hint})"));
    }
    let cause = crate::causes::of_command(kind, &command, outcome, run.refused.as_deref());
    VerifyFailed {
        failure: VerifyFailure {
            command,
            exit_code: match outcome.ending {
                Ending::Exited(code) => Some(code),
                _ => None,
            },
            log_tail,
        },
        ending,
        what,
        cause,
    }
}

/// Integration checkout `slot` put in place by `place` ([`RunContext::placed_checkout`]).
pub(crate) async fn integration_worktree(
    ctx: &RunContext,
    slot: usize,
    place: impl FnOnce(
        &breeze_git::Repo,
        breeze_git::WorkdirChanges<'_>,
    ) -> Result<PathBuf, breeze_git::GitError>
    + Send
    + 'static,
) -> Result<PathBuf, EngineError> {
    let path = ctx.repo.worktree_root()?.join(breeze_git::integration_checkout_name(slot));
    ctx.placed_checkout(&path, place).await
}
