//! Approved tasks waiting to land, and the ones landing now: the dispatcher's landing
//! queue, the way merge queues hold approved changes. Every approved task leaves its lane
//! for it. It hands the mode up to `queue_takes()` waiting tasks at a time — a batch
//! (`land.batch`), a speculative train (`land.queue_depth`), one pull request — and the
//! mode lands them.

use std::sync::Arc;

use tokio::task::JoinHandle;

use super::mode::LandMode;
use super::outcome::Settled;
use crate::error::EngineError;
use crate::run::context::RunContext;

/// How a batch ended: each task's outcome, in the batch's order.
pub(crate) type BatchEnd = Result<Vec<(usize, Settled)>, EngineError>;

/// Approved tasks waiting to land, and the batch landing now.
#[derive(Default)]
pub(crate) struct LandingQueue {
    waiting: Vec<usize>,
    landing: Option<(Vec<usize>, JoinHandle<BatchEnd>)>,
}

impl LandingQueue {
    /// An approved task joins the queue.
    pub fn push(&mut self, index: usize) {
        if !self.waiting.contains(&index) {
            self.waiting.push(index);
        }
    }

    /// Every task waiting or landing: they keep conflicting tasks out.
    pub fn tasks(&self) -> impl Iterator<Item = usize> + '_ {
        self.waiting.iter().chain(self.landing.iter().flat_map(|(batch, _)| batch)).copied()
    }

    /// Whether a batch is landing.
    pub fn is_landing(&self) -> bool {
        self.landing.is_some()
    }

    /// Starts the next batch when none is landing and a task waits: as many as the mode
    /// takes at once, the longest chain of dependents first, then plan order.
    pub fn start(&mut self, ctx: &Arc<RunContext>, mode: &Arc<dyn LandMode>) {
        if self.landing.is_some() || self.waiting.is_empty() {
            return;
        }
        self.waiting.sort_by_key(|&index| (std::cmp::Reverse(ctx.analysis.priority(index)), index));
        let take = self.waiting.len().min(mode.queue_takes(&ctx.config).max(1));
        let batch: Vec<usize> = self.waiting.drain(..take).collect();
        let (ctx, mode, indices) = (ctx.clone(), mode.clone(), batch.clone());
        let handle = tokio::spawn(async move { mode.land_batch(&ctx, indices).await });
        self.landing = Some((batch, handle));
    }

    /// Waits for the landing batch to end (pending while none lands): its tasks and how it
    /// ended. Tasks it did not judge are back in the queue.
    pub async fn landed(&mut self) -> (Vec<usize>, BatchEnd) {
        let Some((_, handle)) = &mut self.landing else { return std::future::pending().await };
        let end = match handle.await {
            Ok(end) => end,
            Err(err) => Err(EngineError::internal("landing a batch")(err)),
        };
        let batch = self.landing.take().map(|(batch, _)| batch).unwrap_or_default();
        if let Ok(settled) = &end {
            let again = settled.iter().filter(|(_, s)| matches!(s, Settled::Again));
            let again: Vec<usize> = again.map(|(index, _)| *index).collect();
            self.waiting.splice(0..0, again);
        }
        (batch, end)
    }
}
