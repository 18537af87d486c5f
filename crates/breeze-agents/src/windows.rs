//! Where a subscription's usage windows stand, as the CLIs report them.
//!
//! - **claude** prints a `rate_limit_event` whenever the API's `anthropic-ratelimit-unified-*`
//!   headers change what it knows: `rate_limit_info.unifiedWindows` holds each window
//!   (`five_hour`, `seven_day`, …) with its `utilization` and `resetsAt`; older CLIs give
//!   only the representative window (`rateLimitType`, `utilization`, `resetsAt`). A
//!   `rejected` status means that window is spent.
//! - **codex** keeps them out of `exec --json`: its session file
//!   (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-<thread id>.jsonl`) records a `token_count`
//!   event after every answer — and after a refused request — whose `rate_limits` hold the
//!   `primary` and `secondary` windows (`used_percent`, `window_minutes`, `resets_at` or
//!   `resets_in_seconds`).
//!
//! API-key sessions report no windows; nothing here is then found.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use breeze_protocol::UsageWindow;
use serde_json::Value;

/// The windows a claude `rate_limit_info` names (empty when it names none).
pub(crate) fn claude_windows(info: &Value) -> Vec<UsageWindow> {
    let rejected = info.get("status").and_then(Value::as_str) == Some("rejected");
    let kind = info.get("rateLimitType").and_then(Value::as_str);
    let mut windows: Vec<UsageWindow> = info
        .get("unifiedWindows")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, window)| {
            let spent = window.get("status").and_then(Value::as_str) == Some("rejected")
                || (rejected && kind == Some(name.as_str()));
            claude_window(name, window, spent)
        })
        .collect();
    // An older CLI names only the window its status is about.
    if windows.is_empty()
        && let Some(kind) = kind
    {
        windows.extend(claude_window(kind, info, rejected));
    }
    windows
}

/// One claude window: its share used (all of it when `spent`) and its reset.
fn claude_window(name: &str, window: &Value, spent: bool) -> Option<UsageWindow> {
    let used = window.get("utilization").and_then(Value::as_f64);
    if used.is_none() && !spent {
        return None;
    }
    Some(UsageWindow {
        backend: "claude".into(),
        window: name.to_owned(),
        used: if spent { 1.0 } else { used.unwrap_or(0.0).clamp(0.0, 1.0) },
        resets_at: window.get("resetsAt").and_then(Value::as_u64),
        minutes: None,
    })
}

/// The windows of codex's last `token_count` event in the session file of `thread` under
/// `codex_home` (empty when there is none).
pub(crate) fn codex_windows(codex_home: &Path, thread: &str, now: SystemTime) -> Vec<UsageWindow> {
    let Some(file) = session_file(codex_home, thread) else { return Vec::new() };
    let Ok(text) = std::fs::read_to_string(&file) else { return Vec::new() };
    text.lines()
        .rev()
        .filter(|line| line.contains("\"rate_limits\""))
        .find_map(|line| {
            let value: Value = serde_json::from_str(line).ok()?;
            let limits = value.pointer("/payload/rate_limits")?;
            Some(codex_limits(limits, now))
        })
        .unwrap_or_default()
}

/// The `primary` and `secondary` windows of a codex `rate_limits` object.
pub(crate) fn codex_limits(limits: &Value, now: SystemTime) -> Vec<UsageWindow> {
    let now = now.duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs());
    ["primary", "secondary"]
        .into_iter()
        .filter_map(|name| {
            let window = limits.get(name)?;
            let percent = window.get("used_percent").and_then(Value::as_f64)?;
            let resets_at = window.get("resets_at").and_then(Value::as_u64).or_else(|| {
                window.get("resets_in_seconds").and_then(Value::as_u64).map(|after| now + after)
            });
            Some(UsageWindow {
                backend: "codex".into(),
                window: name.to_owned(),
                used: (percent / 100.0).clamp(0.0, 1.0),
                resets_at,
                minutes: window.get("window_minutes").and_then(Value::as_u64),
            })
        })
        .collect()
}

/// The newest `rollout-…-<thread>.jsonl` under `codex_home/sessions` (year, month, day
/// folders).
fn session_file(codex_home: &Path, thread: &str) -> Option<PathBuf> {
    let suffix = format!("-{thread}.jsonl");
    let mut found: Option<(SystemTime, PathBuf)> = None;
    let mut folders = vec![codex_home.join("sessions")];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                folders.push(path);
            } else if path
                .file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("rollout-") && name.ends_with(&suffix))
            {
                let modified = entry.metadata().and_then(|m| m.modified()).unwrap_or(UNIX_EPOCH);
                if found.as_ref().is_none_or(|(newest, _)| modified > *newest) {
                    found = Some((modified, path));
                }
            }
        }
    }
    found.map(|(_, path)| path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claude_unified_windows_are_read_with_their_share_and_reset() {
        let info = json!({"status": "allowed", "resetsAt": 1_800_000_000u64,
            "rateLimitType": "five_hour", "unifiedWindows": {
                "five_hour": {"utilization": 0.95, "resetsAt": 1_800_000_000u64, "status": "allowed_warning"},
                "seven_day": {"utilization": 0.2, "resetsAt": 1_800_500_000u64, "status": "allowed"}}});
        let windows = claude_windows(&info);
        let five = windows.iter().find(|w| w.window == "five_hour").unwrap();
        assert_eq!((five.used, five.resets_at), (0.95, Some(1_800_000_000)));
        let week = windows.iter().find(|w| w.window == "seven_day").unwrap();
        assert_eq!((week.used, week.backend.as_str()), (0.2, "claude"));
    }

    #[test]
    fn a_rejected_claude_window_is_spent_even_from_an_older_cli() {
        let info = json!({"status": "rejected", "resetsAt": 1_800_000_000u64,
            "rateLimitType": "seven_day"});
        let windows = claude_windows(&info);
        assert_eq!(windows.len(), 1);
        assert_eq!((windows[0].window.as_str(), windows[0].used), ("seven_day", 1.0));
        assert!(claude_windows(&json!({"status": "allowed"})).is_empty());
    }

    #[test]
    fn codex_windows_come_from_the_last_token_count_of_the_thread_session_file() {
        let home = tempfile::tempdir().unwrap();
        let day = home.path().join("sessions/2026/12/06");
        std::fs::create_dir_all(&day).unwrap();
        let limits = |percent: f64| {
            json!({"type": "event_msg", "payload": {"type": "token_count", "rate_limits": {
                "primary": {"used_percent": percent, "window_minutes": 300, "resets_at": 1_800_000_000u64},
                "secondary": {"used_percent": 20.0, "window_minutes": 10080, "resets_in_seconds": 60}}}})
        };
        let lines = [limits(40.0).to_string(), limits(95.0).to_string()].join("\n");
        std::fs::write(day.join("rollout-2026-12-06T10-00-00-thread-1.jsonl"), lines).unwrap();
        let now = UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        let windows = codex_windows(home.path(), "thread-1", now);
        assert_eq!(windows.len(), 2, "{windows:?}");
        assert_eq!((windows[0].window.as_str(), windows[0].used), ("primary", 0.95));
        assert_eq!(windows[0].minutes, Some(300));
        assert_eq!(windows[1].resets_at, Some(1_700_000_060));
        assert!(codex_windows(home.path(), "another-thread", now).is_empty());
    }
}
