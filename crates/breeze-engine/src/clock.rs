//! Wall-clock timestamps for run files.

use std::time::SystemTime;

/// Now, as RFC 3339 UTC with seconds (`2026-11-30T12:00:00Z`).
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}
