//! Where each backend's usage windows stand, and whether a backend is paused for one
//! (`[quota] pause_at`).
//!
//! Subscriptions come with usage windows (claude's five-hour and weekly limits, codex's
//! primary and secondary windows) that the CLIs report with every call
//! (`breeze_agents::AgentResult::windows`). breeze keeps the last report of each window
//! here, one `Quotas` per run shared by every role call, saved in `run.json` (so `breeze
//! status` shows them and a resumed run pauses as the stopped one did). A backend with a
//! window used beyond `pause_at` whose reset is still ahead is paused: no new role call
//! starts on it until the reset (`crate::run` waits, or hands the call to the role's
//! fallback); calls under way finish. A window without a known reset never pauses — a
//! refusal then goes through the ordinary backoff.

use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use breeze_protocol::UsageWindow;

/// Why a backend takes no new role call now, and until when.
#[derive(Debug, Clone, PartialEq)]
pub struct Pause {
    /// The paused backend (`claude`, `codex`).
    pub backend: String,
    /// The window beyond `pause_at` (the one that resets last, when several are).
    pub window: String,
    /// Its share used.
    pub used: f64,
    /// Its reset (unix seconds): the backend takes calls again from then on.
    pub until: u64,
}

impl Pause {
    /// How long from `now` until the pause ends (none once it has).
    pub fn left(&self, now: SystemTime) -> Duration {
        let until = UNIX_EPOCH + Duration::from_secs(self.until);
        until.duration_since(now).unwrap_or_default()
    }

    /// `claude's five_hour window is 95% used (pause_at 90%)`.
    pub fn why(&self, pause_at: f64) -> String {
        if self.window == STATED_RESET {
            return format!("{} refused calls until a reset it named", self.backend);
        }
        format!(
            "{}'s {} window is {:.0}% used (pause_at {:.0}%)",
            self.backend,
            self.window,
            self.used * 100.0,
            pause_at * 100.0
        )
    }
}

/// The window of a refusal that named its reset but no window (a 429's reset time).
pub const STATED_RESET: &str = "stated-reset";

/// A spent window of `backend` until `reset`: what a refusal naming a reset far ahead
/// (beyond any backoff wait) stands for.
pub fn stated_reset(backend: &str, reset: SystemTime) -> UsageWindow {
    let resets_at = reset.duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs());
    UsageWindow {
        backend: backend.to_string(),
        window: STATED_RESET.to_string(),
        used: 1.0,
        resets_at: Some(resets_at),
        minutes: None,
    }
}

/// The usage windows of one run's backends.
#[derive(Debug)]
pub struct Quotas {
    pause_at: f64,
    windows: Mutex<Vec<UsageWindow>>,
}

impl Quotas {
    /// Quotas pausing a backend beyond `pause_at`, knowing the windows `known` (those a
    /// stopped run saved).
    pub fn new(pause_at: f64, known: Vec<UsageWindow>) -> Quotas {
        Quotas { pause_at, windows: Mutex::new(known) }
    }

    /// `quota.pause_at`.
    pub fn pause_at(&self) -> f64 {
        self.pause_at
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<UsageWindow>> {
        self.windows.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every window as last reported, by backend and window.
    pub fn windows(&self) -> Vec<UsageWindow> {
        let mut windows = self.lock().clone();
        windows.sort_by(|a, b| (&a.backend, &a.window).cmp(&(&b.backend, &b.window)));
        windows
    }

    /// Takes what a call reported: each window replaces the one of its backend and name.
    /// Whether anything moved (then the windows are worth saving and saying).
    pub fn report(&self, reported: &[UsageWindow]) -> bool {
        let mut windows = self.lock();
        let mut moved = false;
        for window in reported {
            let known = windows
                .iter_mut()
                .find(|known| known.backend == window.backend && known.window == window.window);
            match known {
                Some(known) if known == window => {}
                Some(known) => {
                    *known = window.clone();
                    moved = true;
                }
                None => {
                    windows.push(window.clone());
                    moved = true;
                }
            }
        }
        moved
    }

    /// Whether `backend` is paused at `now`: its window beyond `pause_at` that resets last,
    /// of those whose reset is still ahead.
    pub fn pause(&self, backend: &str, now: SystemTime) -> Option<Pause> {
        let now = now.duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs());
        self.lock()
            .iter()
            .filter(|window| window.backend == backend && window.used >= self.pause_at)
            .filter_map(|window| Some((window, window.resets_at.filter(|at| *at > now)?)))
            .max_by_key(|(_, until)| *until)
            .map(|(window, until)| Pause {
                backend: backend.to_string(),
                window: window.window.clone(),
                used: window.used,
                until,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(backend: &str, name: &str, used: f64, resets_at: Option<u64>) -> UsageWindow {
        UsageWindow { backend: backend.into(), window: name.into(), used, resets_at, minutes: None }
    }

    fn at(unix: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(unix)
    }

    #[test]
    fn a_backend_is_paused_beyond_pause_at_until_its_window_resets() {
        let quotas = Quotas::new(0.9, Vec::new());
        assert!(quotas.report(&[window("claude", "five_hour", 0.5, Some(1_000))]));
        assert_eq!(quotas.pause("claude", at(100)), None, "half a window is no pause");
        assert!(quotas.report(&[window("claude", "five_hour", 0.95, Some(1_000))]));
        let pause = quotas.pause("claude", at(100)).unwrap();
        assert_eq!((pause.window.as_str(), pause.until), ("five_hour", 1_000));
        assert_eq!(pause.left(at(400)), Duration::from_secs(600));
        assert_eq!(quotas.pause("codex", at(100)), None, "another backend goes on");
        assert_eq!(quotas.pause("claude", at(1_000)), None, "the window has reset");
    }

    #[test]
    fn the_window_that_resets_last_decides_and_one_without_a_reset_never_pauses() {
        let quotas = Quotas::new(0.9, vec![window("codex", "primary", 1.0, None)]);
        assert_eq!(quotas.pause("codex", at(0)), None);
        quotas.report(&[
            window("codex", "primary", 0.92, Some(500)),
            window("codex", "secondary", 1.0, Some(9_000)),
        ]);
        let pause = quotas.pause("codex", at(0)).unwrap();
        assert_eq!((pause.window.as_str(), pause.until), ("secondary", 9_000));
        assert!(pause.why(0.9).contains("codex's secondary window is 100% used (pause_at 90%)"));
    }

    #[test]
    fn a_refusal_naming_a_reset_pauses_its_backend_until_then() {
        let quotas = Quotas::new(1.0, Vec::new());
        quotas.report(&[stated_reset("codex", at(3_600))]);
        let pause = quotas.pause("codex", at(60)).unwrap();
        assert_eq!(pause.until, 3_600);
        assert_eq!(pause.why(1.0), "codex refused calls until a reset it named");
    }

    #[test]
    fn the_same_report_again_moves_nothing() {
        let quotas = Quotas::new(0.9, Vec::new());
        let report = [window("claude", "seven_day", 0.2, Some(7))];
        assert!(quotas.report(&report));
        assert!(!quotas.report(&report));
        assert_eq!(quotas.windows(), report.to_vec());
    }
}
