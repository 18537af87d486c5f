//! When the backend fails rather than the task: rate limits and quotas are waited out,
//! transient API errors (5xx, a cut stream) are retried after a growing pause with jitter,
//! a login problem stops the run at once. None of these spends an attempt; each has a bound
//! after which the run stops resumably, saying why.

use std::time::Duration;

use crate::error::EngineError;

/// The backend, not the task, failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trouble {
    /// Rate limited or out of quota: wait (as long as the backend said, if it did).
    Limited {
        /// When to retry, if the backend said.
        retry_after: Option<Duration>,
        /// The backend's words.
        message: String,
    },
    /// The model API failed in a way that passes (5xx, a cut stream, a reset connection).
    Transient {
        /// The backend's words.
        message: String,
    },
    /// No valid login or key: every call would fail the same way.
    Auth {
        /// The backend's words, with what to do.
        message: String,
    },
}

impl Trouble {
    /// `rate-limited`, `transient` or `auth` (journal and log).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Limited { .. } => "rate-limited",
            Self::Transient { .. } => "transient",
            Self::Auth { .. } => "auth",
        }
    }

    /// The backend's words.
    pub fn message(&self) -> &str {
        match self {
            Self::Limited { message, .. }
            | Self::Transient { message }
            | Self::Auth { message } => message,
        }
    }
}

/// How long and how often breeze waits out a backend's trouble.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackoffSettings {
    /// The first wait after a rate limit that named no time (then doubled, ≤ 15 minutes).
    pub limit_wait: Duration,
    /// Waits for one call's consecutive rate limits before the run stops.
    pub limit_waits: u32,
    /// The first wait after a transient error (then doubled).
    pub transient_wait: Duration,
    /// Waits for one call's consecutive transient errors before the run stops.
    pub transient_waits: u32,
}

impl Default for BackoffSettings {
    fn default() -> Self {
        BackoffSettings {
            limit_wait: Duration::from_secs(30),
            limit_waits: 3,
            transient_wait: Duration::from_secs(2),
            transient_waits: 5,
        }
    }
}

/// The longest single wait.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(15 * 60);

/// Consecutive troubles of one role call.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    settings: BackoffSettings,
    limited: u32,
    transient: u32,
}

impl Backoff {
    pub fn new(settings: BackoffSettings) -> Backoff {
        Backoff { settings, limited: 0, transient: 0 }
    }

    /// The wait before trying `who` again, or the error that stops the run: `Auth` at once,
    /// limits and transient errors once their bound is used up.
    pub fn next_wait(&mut self, trouble: &Trouble, who: &str) -> Result<Duration, EngineError> {
        let (count, bound, first, what) = match trouble {
            Trouble::Auth { message } => {
                return Err(EngineError::usage(
                    format!("{who} cannot reach its model: {message}"),
                    "log the CLI in as the user breeze runs as (or set pass_credentials = true for the role and export the key), then `breeze resume`",
                ));
            }
            Trouble::Limited { retry_after, .. } => {
                self.limited += 1;
                let first = retry_after.unwrap_or(self.settings.limit_wait);
                (self.limited, self.settings.limit_waits, first, "rate limited")
            }
            Trouble::Transient { .. } => {
                self.transient += 1;
                (
                    self.transient,
                    self.settings.transient_waits,
                    self.settings.transient_wait,
                    "failed with a passing API error",
                )
            }
        };
        if count > bound {
            return Err(EngineError::usage(
                format!(
                    "{who} was {what} {count} times in a row (after waiting {bound} times): {}",
                    crate::advice::signature_line(trouble.message())
                ),
                "wait until the backend recovers (or its limit resets), then `breeze resume`",
            ));
        }
        // A stated retry time is kept; otherwise the wait doubles with each try.
        let base = match trouble {
            Trouble::Limited { retry_after: Some(after), .. } => *after,
            _ => first.saturating_mul(1 << (count - 1).min(10)),
        };
        Ok(jitter(base.min(MAX_WAIT)))
    }
}

/// `wait` ± 20 %, so lanes hit by the same limit do not retry in step.
fn jitter(wait: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    // A cheap spread from the clock; not for anything but spreading retries.
    let spread = (nanos.wrapping_mul(2_654_435_761) % 4001) as f64 / 10_000.0; // 0.0..=0.4
    wait.mul_f64(0.8 + spread)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> BackoffSettings {
        BackoffSettings {
            limit_wait: Duration::from_secs(10),
            limit_waits: 2,
            transient_wait: Duration::from_secs(1),
            transient_waits: 3,
        }
    }

    #[test]
    fn transient_errors_wait_longer_each_time_then_stop_the_run() {
        let mut backoff = Backoff::new(settings());
        let trouble = Trouble::Transient { message: "HTTP 503".into() };
        let waits: Vec<Duration> =
            (0..3).map(|_| backoff.next_wait(&trouble, "the worker").unwrap()).collect();
        for (wait, expected) in waits.iter().zip([1.0, 2.0, 4.0]) {
            let secs = wait.as_secs_f64();
            assert!(secs >= expected * 0.8 && secs <= expected * 1.2, "{waits:?}");
        }
        let err = backoff.next_wait(&trouble, "the worker").unwrap_err();
        assert!(err.to_string().contains("4 times in a row (after waiting 3 times)"), "{err}");
        assert!(err.stops_the_run());
    }

    #[test]
    fn a_stated_retry_time_is_kept_and_a_login_problem_stops_at_once() {
        let mut backoff = Backoff::new(settings());
        let limited =
            Trouble::Limited { retry_after: Some(Duration::from_secs(100)), message: "429".into() };
        let wait = backoff.next_wait(&limited, "the reviewer").unwrap().as_secs_f64();
        assert!((80.0..=120.0).contains(&wait), "{wait}");
        let auth = Trouble::Auth { message: "Not logged in".into() };
        let err = Backoff::new(settings()).next_wait(&auth, "the worker of task 1").unwrap_err();
        assert!(err.to_string().contains("Not logged in") && err.stops_the_run(), "{err}");
        assert!(err.hints()[0].contains("breeze resume"));
    }
}
