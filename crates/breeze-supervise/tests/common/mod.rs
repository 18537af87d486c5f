//! Helpers shared by the integration tests: running the fake role and checking `/proc`.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use breeze_supervise::{ActivityProbe, Outcome, ProcessSpec, Supervisor, scrubbed_env};
use tokio_util::sync::CancellationToken;

pub const FAKE_ROLE: &str = env!("CARGO_BIN_EXE_breeze-fake-role");

/// A spec running the fake role with `actions` in `dir`, with the engine's PATH & co.
pub fn fake_spec(dir: &Path, actions: &[&str]) -> ProcessSpec {
    let mut argv = vec![FAKE_ROLE.to_owned()];
    argv.extend(actions.iter().map(|a| a.to_string()));
    let mut spec = ProcessSpec::new(argv, dir, dir.join("logs/role"));
    spec.env = scrubbed_env(std::env::vars(), &[], &[]);
    // A safety net so that a broken test cannot hang forever.
    spec.timeout = Some(Duration::from_secs(120));
    spec
}

/// Short intervals so process tests finish quickly (they use real time).
pub fn quick_supervisor() -> Supervisor {
    Supervisor::new()
        .with_watchdog_interval(Duration::from_millis(50))
        .with_leak_timeout(Duration::from_millis(300))
}

/// What a run reported besides its outcome.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    pub spawned: Option<(u32, Option<u64>)>,
    pub lines: Vec<String>,
}

impl Seen {
    /// The pid a `grandchild=`/`grandchild-quiet=` action printed.
    pub fn grandchild_pid(&self) -> u32 {
        self.lines
            .iter()
            .find_map(|l| l.strip_prefix("grandchild-pid="))
            .expect("the fake role printed its grandchild's pid")
            .parse()
            .unwrap()
    }
}

pub async fn run_with(
    supervisor: &Supervisor,
    spec: ProcessSpec,
    activity: Option<Arc<dyn ActivityProbe>>,
    cancel: CancellationToken,
) -> (Outcome, Seen) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (on_spawn_seen, on_line_seen) = (seen.clone(), seen.clone());
    let outcome = supervisor
        .run(
            spec,
            activity,
            cancel,
            move |pid, ticks| on_spawn_seen.lock().unwrap().spawned = Some((pid, ticks)),
            move |line| on_line_seen.lock().unwrap().lines.push(line.to_owned()),
        )
        .await
        .expect("the fake role starts");
    let seen = seen.lock().unwrap().clone();
    (outcome, seen)
}

pub async fn run(spec: ProcessSpec) -> (Outcome, Seen) {
    run_with(&quick_supervisor(), spec, None, CancellationToken::new()).await
}

/// `(state, pgrp)` of a process from `/proc/<pid>/stat`.
fn stat(pid: u32) -> Option<(char, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = text[text.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    Some((state, fields.next()?.parse().ok()?))
}

/// The process exists and has not exited (zombies, which init may never reap here, are dead).
pub fn is_alive(pid: u32) -> bool {
    stat(pid).is_some_and(|(state, _)| !matches!(state, 'Z' | 'X'))
}

/// Live processes whose process group is `pgid`, read independently of the crate with `ps`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let out = std::process::Command::new("ps")
        .args(["-e", "-o", "pid=,pgid=,stat="])
        .output()
        .expect("`ps` is installed");
    assert!(out.status.success(), "ps failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let pid: u32 = parts.next()?.parse().ok()?;
            let group: u32 = parts.next()?.parse().ok()?;
            let state = parts.next()?;
            (group == pgid && !state.starts_with('Z')).then_some(pid)
        })
        .collect()
}

/// Asserts nothing of the run's group, nor the listed extra pids, is alive.
pub fn assert_nothing_survives(outcome: &Outcome, extra: &[u32]) {
    assert_eq!(
        group_members(outcome.pid),
        Vec::<u32>::new(),
        "group {} has survivors",
        outcome.pid
    );
    assert!(outcome.survivors.is_empty(), "{:?}", outcome.survivors);
    for &pid in extra {
        assert!(!is_alive(pid), "process {pid} outlived the run");
    }
}
