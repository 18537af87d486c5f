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

/// How an activity probe is read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProbeSchedule {
    /// A walking probe's period (see `Supervisor::probe_interval`).
    pub walk_every: Duration,
    /// A notified probe's period: the watchdog interval.
    pub tick: Duration,
    /// The stall timeout, for a notified probe's fallback walk.
    pub stall_timeout: Duration,
}

/// Publishes the instant of the last activity change (initially `start`).
///
/// - A walking probe is polled every `walk_every` on a blocking thread, after a baseline
///   taken now; one poll at a time, so a slow walk delays the next.
/// - A notified probe is read every `tick`, with no baseline walk. When it has lost
///   notifications, it is walked only at the stall decision (quiet for nearly the stall
///   timeout; the first time notifications are found lost, a walk gives the baseline), so
///   at most about once per stall timeout.
pub(crate) fn watch_activity(
    probe: Arc<dyn ActivityProbe>,
    schedule: ProbeSchedule,
    start: Instant,
) -> (watch::Receiver<Instant>, AbortOnDrop) {
    let (tx, rx) = watch::channel(start);
    let task = if probe.is_notified() {
        tokio::spawn(watch_notified(probe, schedule, start, tx))
    } else {
        tokio::spawn(watch_walking(probe, schedule.walk_every, tx))
    };
    (rx, AbortOnDrop(task))
}

async fn walk(probe: &Arc<dyn ActivityProbe>) -> Option<u64> {
    let probe = probe.clone();
    tokio::task::spawn_blocking(move || probe.walk_fingerprint()).await.ok()
}

async fn watch_walking(probe: Arc<dyn ActivityProbe>, every: Duration, tx: watch::Sender<Instant>) {
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
}

async fn watch_notified(
    probe: Arc<dyn ActivityProbe>,
    schedule: ProbeSchedule,
    start: Instant,
    tx: watch::Sender<Instant>,
) {
    let mut last = probe.fingerprint();
    let mut last_change = start;
    // The fallback: the last walk's fingerprint and when it was taken.
    let mut walked: Option<(Option<u64>, Instant)> = None;
    let mut ticks = interval(schedule.tick);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        let mut changed = false;
        let now = probe.fingerprint();
        if now != last {
            last = now;
            changed = true;
        }
        if !changed && probe.needs_walk() {
            // Decide early enough that the walk is done before the stall clock runs out.
            let margin = schedule.tick * 2;
            let decision = schedule.stall_timeout.saturating_sub(margin);
            match walked {
                None => walked = Some((walk(&probe).await, Instant::now())),
                Some((before, at))
                    if last_change.elapsed() >= decision && at.elapsed() >= decision =>
                {
                    let after = walk(&probe).await;
                    changed = after.is_some() && after != before;
                    walked = Some((after, Instant::now()));
                }
                Some(_) => {}
            }
        }
        if changed {
            last_change = Instant::now();
            if tx.send(last_change).is_err() {
                return; // the run is over
            }
        }
    }
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

    fn schedule(walk_every: u64, tick: u64, stall: u64) -> ProbeSchedule {
        ProbeSchedule {
            walk_every: Duration::from_secs(walk_every),
            tick: Duration::from_secs(tick),
            stall_timeout: Duration::from_secs(stall),
        }
    }

    /// A notified probe that counts what it is asked.
    #[derive(Default)]
    struct Notified {
        events: AtomicU64,
        lost: std::sync::atomic::AtomicBool,
        tree: AtomicU64,
        walks: AtomicU64,
        reads: AtomicU64,
    }
    impl ActivityProbe for Notified {
        fn fingerprint(&self) -> u64 {
            self.reads.fetch_add(1, Ordering::SeqCst);
            self.events.load(Ordering::SeqCst)
        }
        fn is_notified(&self) -> bool {
            true
        }
        fn needs_walk(&self) -> bool {
            self.lost.load(Ordering::SeqCst)
        }
        fn walk_fingerprint(&self) -> u64 {
            self.walks.fetch_add(1, Ordering::SeqCst);
            self.tree.load(Ordering::SeqCst)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_notified_probe_is_read_at_every_tick_and_never_walked() {
        let probe = Arc::new(Notified::default());
        let start = Instant::now();
        let (rx, _task) = watch_activity(probe.clone(), schedule(30, 2, 600), start);
        sleep(Duration::from_secs(1)).await;
        assert_eq!(probe.walks.load(Ordering::SeqCst), 0, "no walk at the start");
        probe.events.store(5, Ordering::SeqCst);
        let changed_at = Instant::now();
        sleep(Duration::from_secs(3)).await;
        let seen = *rx.borrow();
        assert!(seen >= changed_at && seen <= changed_at + Duration::from_secs(2), "{seen:?}");
        sleep(Duration::from_secs(1200)).await;
        assert_eq!(probe.walks.load(Ordering::SeqCst), 0, "no walk while notifications work");
        assert!(probe.reads.load(Ordering::SeqCst) > 100, "read at every tick");
    }

    #[tokio::test(start_paused = true)]
    async fn lost_notifications_are_backed_by_a_walk_at_the_stall_decision_only() {
        let probe = Arc::new(Notified::default());
        probe.lost.store(true, Ordering::SeqCst);
        let start = Instant::now();
        let (rx, _task) = watch_activity(probe.clone(), schedule(30, 2, 600), start);
        sleep(Duration::from_secs(3)).await;
        assert_eq!(probe.walks.load(Ordering::SeqCst), 1, "the baseline");
        // A change only a walk can see (a folder that was not watched).
        probe.tree.store(1, Ordering::SeqCst);
        sleep(Duration::from_secs(500)).await;
        assert_eq!(probe.walks.load(Ordering::SeqCst), 1, "no walk before the stall decision");
        assert_eq!(*rx.borrow(), start);
        sleep(Duration::from_secs(100)).await;
        assert_eq!(probe.walks.load(Ordering::SeqCst), 2, "one walk at the stall decision");
        assert!(*rx.borrow() > start, "the walk found the change: activity");
        // Nothing changes any more: one walk per stall timeout at most, and no activity.
        let seen = *rx.borrow();
        sleep(Duration::from_secs(1200)).await;
        assert!(probe.walks.load(Ordering::SeqCst) <= 4);
        assert_eq!(*rx.borrow(), seen);
    }

    #[tokio::test(start_paused = true)]
    async fn the_monitor_reports_when_the_fingerprint_changes() {
        let probe = Arc::new(Counter(AtomicU64::new(0)));
        let start = Instant::now();
        let (rx, _task) = watch_activity(probe.clone(), schedule(2, 2, 600), start);

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
