//! Processes that left their role's process group (`setsid`, a double fork) are found by a
//! marker in their environment, which every descendant inherits, and ended with the role.
//! In a role's own PID namespace they end with the namespace and are never found here; on
//! a machine without PID namespaces this is the net, and a process that also clears its
//! environment slips through it.

use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::time::{Instant, sleep};
use tokio_util::sync::CancellationToken;

use crate::group::proc_stat;

/// The environment variable that marks every process of one role invocation.
pub const MARKER_VAR: &str = "BREEZE_PROCESS_MARKER";

const POLL: Duration = Duration::from_millis(20);

/// Live processes (zombies excluded, this process excluded) whose environment holds
/// `name=value` exactly.
pub fn processes_with_env(name: &str, value: &str) -> Vec<u32> {
    let entry = format!("{name}={value}");
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut pids: Vec<u32> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|&pid| {
            // Unreadable (another user's process, or it just exited): not ours.
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|environ| environ.split(|&b| b == 0).any(|e| e == entry.as_bytes()))
        })
        .filter(|&pid| proc_stat(pid).is_some_and(|stat| !stat.has_exited()))
        .collect();
    pids.sort_unstable();
    pids
}

/// Ends every process whose environment holds `name=value`: SIGTERM, up to `grace`, then
/// SIGKILL. Returns the pids that were found; processes still alive after SIGKILL (stuck in
/// the kernel) are logged.
pub async fn end_processes_with_env(name: &str, value: &str, grace: Duration) -> Vec<u32> {
    end_marked_processes(name, value, grace, None).await
}

/// [`end_processes_with_env`], with the grace cut short once `hurry` is cancelled (a hard
/// stop).
pub(crate) async fn end_marked_processes(
    name: &str,
    value: &str,
    grace: Duration,
    hurry: Option<&CancellationToken>,
) -> Vec<u32> {
    let hurried = || hurry.is_some_and(|t| t.is_cancelled());
    let found = processes_with_env(name, value);
    if found.is_empty() {
        return found;
    }
    tracing::info!(pids = ?found, "ending processes that left their role's process group");
    for &pid in &found {
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    let alive = |pids: &[u32]| -> Vec<u32> {
        pids.iter()
            .copied()
            .filter(|&pid| proc_stat(pid).is_some_and(|s| !s.has_exited()))
            .collect()
    };
    let mut left = alive(&found);
    while !left.is_empty() && Instant::now() < deadline && !hurried() {
        sleep(POLL).await;
        left = alive(&left);
    }
    for &pid in &left {
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
    }
    let kill_deadline = Instant::now() + Duration::from_secs(2);
    while !left.is_empty() && Instant::now() < kill_deadline {
        sleep(POLL).await;
        left = alive(&left);
    }
    if !left.is_empty() {
        tracing::warn!(pids = ?left, "processes survived SIGKILL");
    }
    found
}
