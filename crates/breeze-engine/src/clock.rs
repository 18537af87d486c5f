//! Wall-clock timestamps for run files.

use std::time::SystemTime;

/// Now, as RFC 3339 UTC with seconds (`2026-11-30T12:00:00Z`).
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// Now, as RFC 3339 UTC with milliseconds (`2026-11-30T12:00:00.123Z`), for events.
pub fn now_rfc3339_millis() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}
