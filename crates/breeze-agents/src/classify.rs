//! Classifying an agent CLI's error text: rate limit, quota, authentication — or none of
//! these (then the caller decides between an API error and a task failure).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::call::AgentFailure;

/// What kind of limit or refusal an error text describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorClass {
    RateLimited,
    Quota,
    Auth,
}

/// Phrases that mean a usage allowance or billing quota is exhausted.
const QUOTA_PHRASES: &[&str] = &[
    "insufficient_quota",
    "quota exceeded",
    "exceeded your current quota",
    "quota",
    "usage limit",
    "hit your limit",
    "credit balance",
    "out of credits",
    "purchase more credits",
    "billing",
    "spending limit",
];

/// Phrases that mean requests are being throttled.
const RATE_PHRASES: &[&str] =
    &["rate limit", "rate-limit", "rate_limit", "ratelimit", "too many requests", "overloaded"];

/// Phrases that mean the CLI has no valid credentials.
const AUTH_PHRASES: &[&str] = &[
    "not logged in",
    "please run /login",
    "authentication_failed",
    "authentication failed",
    "authentication_error",
    "invalid api key",
    "invalid x-api-key",
    "incorrect api key",
    "unauthorized",
    "oauth token has expired",
    "missing environment variable",
    "no api key",
];

/// The class of an error text, if it is a limit or an authentication problem. Quota wins
/// over rate limit ("429: you exceeded your current quota" is a quota), both win over
/// authentication.
pub(crate) fn classify_text(text: &str) -> Option<ErrorClass> {
    let lower = text.to_lowercase();
    let has = |phrases: &[&str]| phrases.iter().any(|p| lower.contains(p));
    if has(QUOTA_PHRASES) {
        Some(ErrorClass::Quota)
    } else if has(RATE_PHRASES) || has_number_word(&lower, "429") || has_number_word(&lower, "529")
    {
        Some(ErrorClass::RateLimited)
    } else if has(AUTH_PHRASES) || has_number_word(&lower, "401") {
        Some(ErrorClass::Auth)
    } else {
        None
    }
}

/// Whether `number` occurs as a whole word: "429 Too Many Requests" and "status: 429" do,
/// "line 4291" and "v1.429" do not.
fn has_number_word(text: &str, number: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices(number).any(|(at, _)| {
        let end = at + number.len();
        let at_byte = |i: Option<usize>| i.and_then(|i| bytes.get(i).copied());
        let digit = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_digit());
        let before = at_byte(at.checked_sub(1));
        let after = at_byte(Some(end));
        // A dot joins only between digits ("1.429", "429.5"), not at a sentence end.
        let joined_before = before.is_some_and(|b| b.is_ascii_alphanumeric())
            || (before == Some(b'.') && digit(at_byte(at.checked_sub(2))));
        let joined_after = after.is_some_and(|b| b.is_ascii_alphanumeric())
            || (after == Some(b'.') && digit(at_byte(Some(end + 1))));
        !joined_before && !joined_after
    })
}

/// The failure for a class and message.
pub(crate) fn failure_for(
    class: ErrorClass,
    message: String,
    retry_after: Option<Duration>,
) -> AgentFailure {
    match class {
        ErrorClass::RateLimited => AgentFailure::RateLimited { message, retry_after },
        ErrorClass::Quota => AgentFailure::Quota { message, retry_after },
        ErrorClass::Auth => AgentFailure::Auth { message },
    }
}

/// The class an HTTP status implies: 429 and 529 (overloaded) throttle, 402 is billing,
/// 401 and 403 are credentials.
pub(crate) fn class_of_status(status: u16) -> Option<ErrorClass> {
    match status {
        429 | 529 => Some(ErrorClass::RateLimited),
        402 => Some(ErrorClass::Quota),
        401 | 403 => Some(ErrorClass::Auth),
        _ => None,
    }
}

/// A retry delay stated in an error text, relative to `now`:
/// - claude's `usage limit reached|<unix seconds>`;
/// - `try again in 3 days 6 hours 57 minutes`, `try again in 20s`, `in 1m30s`,
///   `retry after 30 seconds`, `retry-after: 30` (bare number = seconds).
///
/// Wall-clock forms (`try again at 3:28 PM`, `resets 5pm`) carry no time zone the engine
/// can trust and give `None`.
pub(crate) fn retry_after_in_text(text: &str, now: SystemTime) -> Option<Duration> {
    let lower = text.to_lowercase();
    if let Some(at) = lower.find("limit reached|") {
        let digits: String =
            lower[at + "limit reached|".len()..].chars().take_while(char::is_ascii_digit).collect();
        if let Ok(unix) = digits.parse::<u64>() {
            return Some(until_unix(unix, now));
        }
    }
    for marker in ["try again in ", "retry after ", "retry-after: ", "retry-after ", "retry in "] {
        if let Some(at) = lower.find(marker)
            && let Some(delay) = parse_duration_words(&lower[at + marker.len()..])
        {
            return Some(delay);
        }
    }
    None
}

/// The time from `now` until a unix timestamp (zero if it has passed).
pub(crate) fn until_unix(unix_seconds: u64, now: SystemTime) -> Duration {
    let now = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    Duration::from_secs(unix_seconds).saturating_sub(now)
}

/// Parses a leading duration such as `3 days 6 hours 57 minutes`, `1m30s`, `2.5s`,
/// `45 minutes`, `30` (seconds). Stops at the first word that is not part of it.
fn parse_duration_words(text: &str) -> Option<Duration> {
    let mut rest = text.trim_start();
    let mut total = 0.0_f64;
    let mut found = false;
    loop {
        let number_len =
            rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if number_len == 0 {
            break;
        }
        let Ok(number) = rest[..number_len].parse::<f64>() else { break };
        rest = rest[number_len..].trim_start();
        let unit_len = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        let seconds = match unit {
            "ms" | "msec" | "millisecond" | "milliseconds" => 0.001,
            "" | "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3600.0,
            "d" | "day" | "days" => 86_400.0,
            _ => break,
        };
        total += number * seconds;
        found = true;
        rest = rest[unit_len..].trim_start_matches([' ', ',']);
        if let Some(after_and) = rest.strip_prefix("and ") {
            rest = after_and;
        }
        if unit.is_empty() {
            break;
        }
    }
    (found && total.is_finite() && total >= 0.0).then(|| Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(unix: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(unix)
    }

    #[test]
    fn texts_are_classified_with_quota_first() {
        let cases = [
            ("Claude AI usage limit reached|1760000000", Some(ErrorClass::Quota)),
            ("You've hit your usage limit. Try again later.", Some(ErrorClass::Quota)),
            ("You've hit your limit · resets 5pm (Europe/Berlin)", Some(ErrorClass::Quota)),
            (
                "429: You exceeded your current quota, please check your plan and billing details",
                Some(ErrorClass::Quota),
            ),
            ("Credit balance is too low", Some(ErrorClass::Quota)),
            (
                "exceeded retry limit, last status: 429 Too Many Requests",
                Some(ErrorClass::RateLimited),
            ),
            ("API Error: 529 {\"type\":\"overloaded_error\"}", Some(ErrorClass::RateLimited)),
            ("Rate limit reached for requests", Some(ErrorClass::RateLimited)),
            ("status 429", Some(ErrorClass::RateLimited)),
            ("the server answered 429.", Some(ErrorClass::RateLimited)),
            ("HTTP 401", Some(ErrorClass::Auth)),
            ("Not logged in · Please run /login", Some(ErrorClass::Auth)),
            ("Invalid API key · Fix external API key", Some(ErrorClass::Auth)),
            (
                "unexpected status 401 Unauthorized: Missing bearer authentication",
                Some(ErrorClass::Auth),
            ),
            ("cargo test failed: 3 tests failed", None),
            // A number inside another word or number is not a status code.
            ("wrote 14290 bytes to line 4291 of v1.429", None),
            ("", None),
        ];
        for (text, expected) in cases {
            assert_eq!(classify_text(text), expected, "{text:?}");
        }
    }

    #[test]
    fn statuses_map_to_classes() {
        assert_eq!(class_of_status(429), Some(ErrorClass::RateLimited));
        assert_eq!(class_of_status(529), Some(ErrorClass::RateLimited));
        assert_eq!(class_of_status(402), Some(ErrorClass::Quota));
        assert_eq!(class_of_status(401), Some(ErrorClass::Auth));
        assert_eq!(class_of_status(500), None);
        assert_eq!(class_of_status(400), None);
    }

    #[test]
    fn retry_delays_are_read_from_the_text() {
        let now = at(1_760_000_000);
        let cases = [
            ("Claude AI usage limit reached|1760003600", Some(3600)),
            ("Claude AI usage limit reached|1750000000", Some(0)),
            (
                "You've hit your usage limit. To get more access now, send a request to your \
                 admin or try again in 3 days 6 hours 57 minutes.",
                Some(3 * 86_400 + 6 * 3600 + 57 * 60),
            ),
            ("Rate limit reached. Please try again in 20s.", Some(20)),
            ("Please try again in 1m30s", Some(90)),
            ("Please try again in 2.5s", Some(2)),
            ("retry after 45 seconds", Some(45)),
            ("Retry-After: 30", Some(30)),
            ("try again in 1 hour and 5 minutes", Some(3900)),
            ("try again at 3:28 PM.", None),
            ("You've hit your limit · resets 5pm", None),
            ("try again in a moment", None),
            ("no delay here", None),
        ];
        for (text, expected) in cases {
            assert_eq!(retry_after_in_text(text, now).map(|d| d.as_secs()), expected, "{text:?}");
        }
    }

    #[test]
    fn failures_carry_the_class() {
        let failure = failure_for(ErrorClass::Quota, "q".into(), Some(Duration::from_secs(5)));
        assert!(failure.is_limit());
        assert_eq!(failure.retry_after(), Some(Duration::from_secs(5)));
        assert_eq!(failure.code(), "quota");
        let failure = failure_for(ErrorClass::Auth, "a".into(), None);
        assert!(!failure.is_limit());
        assert!(failure.to_string().contains("pass_credentials"));
    }
}
