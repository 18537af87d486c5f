//! Helpers shared by the integration tests: running the fake role and checking `/proc`.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use breeze_supervise::{
    ActivityProbe, Isolation, IsolationSupport, Outcome, ProcessSpec, Supervisor,
    isolation_support, scrubbed_env,
};
use tokio_util::sync::CancellationToken;

pub const FAKE_ROLE: &str = env!("CARGO_BIN_EXE_breeze-fake-role");

/// A binary that starts roles as `breeze` does (module `sandbox::launcher`).
pub const LAUNCHER: &str = env!("CARGO_BIN_EXE_breeze-role-launcher");

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

/// Short intervals so process tests finish quickly (they use real time); roles start
/// through the launcher, as `breeze` starts them.
pub fn quick_supervisor() -> Supervisor {
    Supervisor::new()
        .with_launcher(Some(LAUNCHER.into()))
        .with_watchdog_interval(Duration::from_millis(50))
        .with_leak_timeout(Duration::from_millis(300))
}

/// What a run reported besides its outcome.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    pub spawned: Option<(u32, Option<u64>)>,
    pub lines: Vec<String>,
    /// The grandchildren the fake role reported (`grandchild-pid=`), as this process sees
    /// them: looked up while the line arrived, since in the role's PID namespace the pid
    /// it printed is that namespace's.
    pub grandchildren: Vec<u32>,
}

impl Seen {
    /// The pid, as this process sees it, of the grandchild a `grandchild=` or
    /// `grandchild-quiet=` action started.
    pub fn grandchild_pid(&self) -> u32 {
        *self.grandchildren.first().expect("the fake role printed its grandchild's pid")
    }

    /// Records a stdout line (and the grandchild it names, while it is alive).
    pub fn saw_line(&mut self, line: &str) {
        if let (Some(ns_pid), Some((leader, _))) =
            (line.strip_prefix("grandchild-pid="), self.spawned)
        {
            let ns_pid = ns_pid.parse().expect("a pid");
            let pid = pid_in_group(leader, ns_pid).unwrap_or_else(|| {
                panic!("no process {ns_pid} (in its namespace) in group {leader}")
            });
            self.grandchildren.push(pid);
        }
        self.lines.push(line.to_owned());
    }
}

/// The pid, as this process sees it, of the live member of group `pgid` that has pid
/// `ns_pid` in its own PID namespace (the same number outside one), from the `NSpid` line
/// of `/proc/<pid>/status`.
pub fn pid_in_group(pgid: u32, ns_pid: u32) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|&pid| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let innermost = status
                .lines()
                .find_map(|line| line.strip_prefix("NSpid:"))
                .and_then(|pids| pids.split_whitespace().last()?.parse::<u32>().ok());
            innermost == Some(ns_pid) && stat(pid).is_some_and(|(_, group)| group == pgid)
        })
}

/// The two ways a role starts: through the launcher, as `breeze` starts it, and as a
/// forked child of the engine (a binary that registered no launcher).
pub fn both_starts() -> [(&'static str, Supervisor); 2] {
    [("launched", quick_supervisor()), ("forked", quick_supervisor().with_launcher(None))]
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
            move |line| on_line_seen.lock().unwrap().saw_line(line),
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

/// Both ways a role can be isolated.
pub const ISOLATIONS: [Isolation; 2] =
    [Isolation::PidNamespaceWherePossible, Isolation::SessionOnly];

/// Whether roles run in PID namespaces here; says so (loudly) when they do not, and fails
/// when `BREEZE_REQUIRE_PID_NAMESPACE` says they must.
pub fn pid_namespaces_or_say_so() -> bool {
    let support = isolation_support();
    if let IsolationSupport::SessionOnly { reason } = &support {
        assert!(
            std::env::var_os("BREEZE_REQUIRE_PID_NAMESPACE").is_none(),
            "BREEZE_REQUIRE_PID_NAMESPACE is set but {reason}"
        );
        eprintln!("no PID namespaces here: {support}");
        return false;
    }
    true
}

/// Whether a run with `isolation` is in a PID namespace of its own on this machine.
pub fn in_pid_namespace(isolation: Isolation) -> bool {
    isolation == Isolation::PidNamespaceWherePossible && isolation_support().is_pid_namespace()
}
