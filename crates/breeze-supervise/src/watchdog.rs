//! The stall clock: a role is stalled when neither its output nor its activity probe has
//! changed for `stall_timeout`. Uses `tokio::time::Instant` so tests can pause time.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior, interval};

use crate::ActivityProbe;

/// `stalled ⇔ now − max(last output, last activity) ≥ timeout`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StallClock {
    timeout: Duration,
    last_output: Instant,
}

impl StallClock {
    pub fn new(timeout: Duration, start: Instant) -> Self {
        Self { timeout, last_output: start }
    }

    pub fn output_seen(&mut self, at: Instant) {
        self.last_output = self.last_output.max(at);
    }

    pub fn is_stalled(&self, now: Instant, last_activity: Instant) -> bool {
        let last_sign_of_life = self.last_output.max(last_activity);
        now.saturating_duration_since(last_sign_of_life) >= self.timeout
    }
}

/// Aborts a spawned task when dropped, so that no helper task outlives its run (even when
/// the run's future itself is dropped).
#[derive(Debug)]
pub(crate) struct AbortOnDrop(pub JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Polls `probe` every `every` on a blocking thread and publishes the instant of the last
/// fingerprint change (initially `start`). One poll at a time: a slow walk delays the next.
pub(crate) fn watch_activity(
    probe: Arc<dyn ActivityProbe>,
    every: Duration,
    start: Instant,
) -> (watch::Receiver<Instant>, AbortOnDrop) {
    let (tx, rx) = watch::channel(start);
    let task = tokio::spawn(async move {
        let poll = |probe: Arc<dyn ActivityProbe>| async move {
            tokio::task::spawn_blocking(move || probe.fingerprint()).await.ok()
        };
        let mut last = poll(probe.clone()).await;
        let mut ticks = interval(every);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        ticks.tick().await; // the first tick is immediate; the baseline was just taken
        loop {
            ticks.tick().await;
            let now = poll(probe.clone()).await;
            if now.is_some() && now != last {
                last = now;
                if tx.send(Instant::now()).is_err() {
                    return; // the run is over
                }
            }
        }
    });
    (rx, AbortOnDrop(task))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use tokio::time::{advance, sleep};

    #[tokio::test(start_paused = true)]
    async fn output_and_activity_both_reset_the_stall_clock() {
        let start = Instant::now();
        let mut clock = StallClock::new(Duration::from_secs(600), start);
        advance(Duration::from_secs(599)).await;
        assert!(!clock.is_stalled(Instant::now(), start));
        advance(Duration::from_secs(1)).await;
        assert!(clock.is_stalled(Instant::now(), start), "600 s of silence is a stall");

        clock.output_seen(Instant::now());
        advance(Duration::from_secs(300)).await;
        let activity = Instant::now();
        advance(Duration::from_secs(599)).await;
        assert!(!clock.is_stalled(Instant::now(), activity), "activity 599 s ago");
        advance(Duration::from_secs(1)).await;
        assert!(clock.is_stalled(Instant::now(), activity));

        // An older output instant never moves the clock back.
        clock.output_seen(start);
        assert!(clock.is_stalled(Instant::now(), activity));
    }

    struct Counter(AtomicU64);
    impl ActivityProbe for Counter {
        fn fingerprint(&self) -> u64 {
            self.0.load(Ordering::SeqCst)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_monitor_reports_when_the_fingerprint_changes() {
        let probe = Arc::new(Counter(AtomicU64::new(0)));
        let start = Instant::now();
        let (rx, _task) = watch_activity(probe.clone(), Duration::from_secs(2), start);

        sleep(Duration::from_secs(10)).await;
        assert_eq!(*rx.borrow(), start, "no change, no activity");

        probe.0.store(1, Ordering::SeqCst);
        let changed_at = Instant::now();
        sleep(Duration::from_secs(3)).await;
        let seen = *rx.borrow();
        assert!(seen >= changed_at && seen <= changed_at + Duration::from_secs(2), "{seen:?}");

        sleep(Duration::from_secs(10)).await;
        assert_eq!(*rx.borrow(), seen, "no further change");
    }
}
