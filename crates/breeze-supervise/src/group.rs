//! Process groups: reading `/proc`, signalling a whole group, waiting until it is empty, and
//! ending the orphaned groups of an engine that was killed.
//!
//! Membership is read from `/proc/<pid>/stat` rather than probed with `kill(-pgid, 0)`,
//! because the probe also succeeds for zombies, and on machines whose init does not reap
//! (containers, micro-VMs) an orphan's zombie can stay forever. A zombie holds no resources
//! and runs no code, so it does not count as a survivor.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::time::{Instant, sleep};
use tokio_util::sync::CancellationToken;

/// How often group membership is re-read while waiting for a group to empty.
const GROUP_POLL: Duration = Duration::from_millis(20);

/// How long to wait for SIGKILLed processes to disappear before giving up and reporting them.
pub(crate) const SIGKILL_WAIT: Duration = Duration::from_secs(5);

/// The fields of `/proc/<pid>/stat` this crate needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    /// One-letter state: `R`, `S`, `D`, `T`, `Z` (zombie), `X` (dead)...
    pub state: char,
    /// Process group id.
    pub pgrp: u32,
    /// Start time in clock ticks since boot (field 22).
    pub start_ticks: u64,
}

impl ProcStat {
    /// A zombie or dead entry: it has exited and only waits to be reaped.
    pub fn has_exited(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Parses the contents of `/proc/<pid>/stat`. The command name (field 2) is in parentheses
/// and may itself contain spaces and `)`, so fields are counted from the *last* `)`.
pub(crate) fn parse_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    // Fields 6..=21 sit between pgrp (5) and starttime (22).
    let start_ticks = fields.nth(16)?.parse().ok()?;
    Some(ProcStat { state, pgrp, start_ticks })
}

pub(crate) fn proc_stat(pid: u32) -> Option<ProcStat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Start time of `pid` in clock ticks since boot, from `/proc/<pid>/stat` (field 22).
///
/// Journal it next to the pid: a later check that the start time still matches tells the
/// same process from a new one that reused its pid. `None` if the process does not exist
/// or `/proc` is not available (not Linux).
pub fn process_start_ticks(pid: u32) -> Option<u64> {
    proc_stat(pid).map(|stat| stat.start_ticks)
}

/// Whether the group `leader` heads is a role in a PID namespace of its own, read right
/// after its start (`sandbox/isolation.rs`): the leader still runs `image`, the program it
/// was started as (the launcher, or the engine itself for a fork — the role never ran as
/// it), and a child of it is in another PID namespace (that namespace's init). Then, once
/// the group is empty, nothing the role started is left anywhere: the kernel ends a
/// namespace's processes with its init. `false` when anything cannot be read (a kernel
/// without `/proc/<pid>/task/<pid>/children`): strays are then looked for as without a
/// namespace.
pub(crate) fn leads_own_pid_namespace(leader: u32, image: &Path) -> bool {
    let link = |path: &str| std::fs::read_link(path).ok();
    let (Ok(image), Some(own_pid_ns)) = (std::fs::canonicalize(image), link("/proc/self/ns/pid"))
    else {
        return false;
    };
    if link(&format!("/proc/{leader}/exe")) != Some(image) {
        return false;
    }
    let children = std::fs::read_to_string(format!("/proc/{leader}/task/{leader}/children"));
    children.is_ok_and(|children| {
        children
            .split_whitespace()
            .any(|child| link(&format!("/proc/{child}/ns/pid")).is_some_and(|ns| ns != own_pid_ns))
    })
}

/// Pids of the processes in group `pgid` that have not exited (zombies excluded).
pub(crate) fn live_group_members(pgid: u32) -> Vec<u32> {
    // No process in the group at all, exited or not (a role that ended with its helpers,
    // its leader reaped): no look through every process of the machine is needed.
    if pgid > 1 && killpg(as_pid(pgid), None) == Err(Errno::ESRCH) {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        // No /proc: fall back to the kill(2) probe, which cannot tell zombies apart.
        return match killpg(as_pid(pgid), None) {
            Ok(()) | Err(Errno::EPERM) => vec![pgid],
            Err(_) => Vec::new(),
        };
    };
    let mut members: Vec<u32> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| proc_stat(pid).is_some_and(|stat| stat.pgrp == pgid && !stat.has_exited()))
        .collect();
    members.sort_unstable();
    members
}

fn as_pid(pid: u32) -> Pid {
    // Pids fit in i32 on every platform this crate builds for (pid_t is i32).
    Pid::from_raw(pid as i32)
}

/// Sends `signal` to every process of group `pgid`. "No such group" is not an error: it
/// means there is nothing left to signal.
pub(crate) fn signal_group(pgid: u32, signal: Signal) -> Result<(), Errno> {
    if pgid <= 1 {
        // Never signal "all processes" (-1) or our own group (0) by accident.
        return Err(Errno::EINVAL);
    }
    match killpg(as_pid(pgid), signal) {
        Ok(()) | Err(Errno::ESRCH) => Ok(()),
        Err(err) => {
            tracing::warn!(pgid, %signal, %err, "could not signal the process group");
            Err(err)
        }
    }
}

/// What happened while emptying a group.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Sweep {
    /// Live members were found (at the first look).
    pub had_members: bool,
    /// SIGKILL had to be sent.
    pub sigkilled: bool,
    /// Members still alive after SIGKILL and [`SIGKILL_WAIT`] (uninterruptible sleep, or
    /// processes of another user that could not be signalled).
    pub survivors: Vec<u32>,
}

/// Waits until group `pgid` has no live member. Members still there at `sigkill_at` get
/// SIGKILL; after that the wait is bounded by `kill_wait`. Once `hurry` is cancelled (a hard
/// stop), the SIGKILL is sent without waiting for `sigkill_at`.
pub(crate) async fn empty_group(
    pgid: u32,
    sigkill_at: Instant,
    kill_wait: Duration,
    hurry: Option<&CancellationToken>,
) -> Sweep {
    let mut sweep = Sweep::default();
    let mut give_up_at = None;
    let mut first = true;
    loop {
        let members = live_group_members(pgid);
        if first {
            sweep.had_members = !members.is_empty();
            first = false;
        }
        if members.is_empty() {
            return sweep;
        }
        let now = Instant::now();
        match give_up_at {
            None if now >= sigkill_at || hurry.is_some_and(|t| t.is_cancelled()) => {
                tracing::debug!(pgid, ?members, "sending SIGKILL to the process group");
                let _ = signal_group(pgid, Signal::SIGKILL);
                sweep.sigkilled = true;
                give_up_at = Some(now + kill_wait);
            }
            Some(limit) if now >= limit => {
                tracing::warn!(pgid, ?members, "processes survived SIGKILL");
                sweep.survivors = members;
                return sweep;
            }
            _ => {}
        }
        sleep(GROUP_POLL).await;
    }
}

/// What [`end_orphan_group`] found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrphanOutcome {
    /// Neither the leader nor any member of its group is alive: nothing to do.
    Gone,
    /// A different process now has the pid (its start time differs from the journaled one);
    /// nothing was signalled.
    PidReused {
        /// The pid that was checked.
        pid: u32,
    },
    /// A process with the pid exists but no start time was journaled, so it cannot be told
    /// apart from a new process that reused the pid; nothing was signalled.
    Unverified {
        /// The pid that was checked.
        pid: u32,
    },
    /// The group was ended: SIGTERM, then SIGKILL if needed.
    Ended {
        /// The live processes found (the leader and its group members).
        members: Vec<u32>,
        /// SIGKILL was needed after the grace period.
        sigkilled: bool,
    },
    /// Some processes could not be ended (signals refused, or still alive after SIGKILL).
    Survivors {
        /// The processes still alive.
        pids: Vec<u32>,
    },
}

impl fmt::Display for OrphanOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Gone => f.write_str("no process of the group is left"),
            Self::PidReused { pid } => {
                write!(f, "pid {pid} now belongs to another process; left alone")
            }
            Self::Unverified { pid } => write!(
                f,
                "pid {pid} exists but no start time was recorded to prove it is ours; left alone"
            ),
            Self::Ended { members, sigkilled } => write!(
                f,
                "ended {} process(es) ({}) with SIGTERM{}",
                members.len(),
                join_pids(members),
                if *sigkilled { ", then SIGKILL" } else { "" }
            ),
            Self::Survivors { pids } => write!(
                f,
                "processes {} could not be ended; end them by hand (kill -9)",
                join_pids(pids)
            ),
        }
    }
}

fn join_pids(pids: &[u32]) -> String {
    pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// Asks one process to stop (SIGTERM), as `breeze abort` asks a running engine: it
/// finishes its run's bookkeeping itself. Err when there is no such process or it is not
/// ours to signal.
pub fn ask_to_stop(pid: u32) -> std::io::Result<()> {
    // 0 and negative pids mean process groups to kill(2): never what is asked here.
    if pid == 0 || pid > i32::MAX as u32 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{pid} is not a process id"),
        ));
    }
    kill(as_pid(pid), Signal::SIGTERM).map_err(std::io::Error::from)
}

/// Ends the orphaned process group of a role started by an engine that was killed.
///
/// `pid` is the journaled leader pid (= the group id) and `start_ticks` its journaled
/// [`process_start_ticks`]. The group is signalled only when it is provably ours:
/// - the leader is alive and its start time matches `start_ticks`; or
/// - the leader is gone but processes with group id `pid` remain. A group id stays reserved
///   while any member lives, so no other process can have taken that pid since.
///
/// Then: SIGTERM to the group, up to `grace` for it to exit, SIGKILL for what is left.
pub async fn end_orphan_group(
    pid: u32,
    start_ticks: Option<u64>,
    grace: Duration,
) -> OrphanOutcome {
    if pid <= 1 {
        return OrphanOutcome::Gone;
    }
    // A zombie leader still shows its start time, so it still proves (or disproves) identity.
    let leader = proc_stat(pid);
    if let Some(stat) = leader {
        match start_ticks {
            Some(ticks) if ticks != stat.start_ticks => return OrphanOutcome::PidReused { pid },
            Some(_) => {}
            None => return OrphanOutcome::Unverified { pid },
        }
    }

    let mut members = live_group_members(pid);
    // The leader may have moved itself to another group; it is still ours to end.
    let stray_leader = leader.filter(|stat| !stat.has_exited() && stat.pgrp != pid).map(|_| pid);
    if let Some(leader) = stray_leader {
        members.push(leader);
    }
    if members.is_empty() {
        return OrphanOutcome::Gone;
    }

    tracing::info!(pgid = pid, ?members, "ending an orphaned role process group");
    let _ = signal_group(pid, Signal::SIGTERM);
    if stray_leader.is_some() {
        let _ = kill(as_pid(pid), Signal::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    let mut sweep = empty_group(pid, deadline, SIGKILL_WAIT, None).await;
    if let Some(leader) = stray_leader {
        // Not in the group, so the sweep did not wait for it: handle it the same way.
        while proc_stat(leader).is_some_and(|s| !s.has_exited()) && Instant::now() < deadline {
            sleep(GROUP_POLL).await;
        }
        if proc_stat(leader).is_some_and(|s| !s.has_exited()) {
            let _ = kill(as_pid(leader), Signal::SIGKILL);
            sweep.sigkilled = true;
            sleep(GROUP_POLL).await;
            if proc_stat(leader).is_some_and(|s| !s.has_exited()) {
                sweep.survivors.push(leader);
            }
        }
    }
    if sweep.survivors.is_empty() {
        OrphanOutcome::Ended { members, sigkilled: sweep.sigkilled }
    } else {
        OrphanOutcome::Survivors { pids: sweep.survivors }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        // A command name with spaces and a ')' must not shift the fields.
        let line = "4242 (evil) name (x) S 1 4240 4240 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200 18446744073709551615";
        assert_eq!(
            parse_stat(line),
            Some(ProcStat { state: 'S', pgrp: 4240, start_ticks: 987654 })
        );
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) S 1"), None);
    }

    #[test]
    fn our_own_start_time_is_stable_and_our_group_is_listed() {
        let me = std::process::id();
        let first = process_start_ticks(me).expect("/proc is available on Linux");
        assert_eq!(process_start_ticks(me), Some(first));
        let own_group = proc_stat(me).unwrap().pgrp;
        assert!(live_group_members(own_group).contains(&me));
        assert_eq!(process_start_ticks(u32::MAX), None);
    }

    #[test]
    fn orphan_outcomes_read_as_sentences() {
        let ended = OrphanOutcome::Ended { members: vec![10, 11], sigkilled: true };
        assert_eq!(ended.to_string(), "ended 2 process(es) (10, 11) with SIGTERM, then SIGKILL");
        assert!(OrphanOutcome::PidReused { pid: 7 }.to_string().contains("another process"));
    }

    #[test]
    fn refuses_to_signal_pid_one_or_zero() {
        assert_eq!(signal_group(0, Signal::SIGTERM), Err(Errno::EINVAL));
        assert_eq!(signal_group(1, Signal::SIGTERM), Err(Errno::EINVAL));
    }
}
