//! `end_orphan_group`: what `breeze resume` does with the process groups of a killed engine.
//! The "orphans" here are fake roles started in their own group outside the supervisor.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use breeze_supervise::{OrphanOutcome, end_orphan_group, process_start_ticks};
use common::*;

/// Starts the fake role as a group leader and waits for its first stdout line.
fn start_group(actions: &[&str]) -> (Child, String) {
    let mut child = Command::new(FAKE_ROLE)
        .args(actions)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first_line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut first_line).unwrap();
    (child, first_line.trim().to_owned())
}

fn grandchild_of(line: &str) -> u32 {
    line.strip_prefix("grandchild-pid=").unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_live_group_with_matching_start_time_is_ended_even_if_it_ignores_sigterm() {
    let (mut leader, line) = start_group(&["ignore-term", "grandchild-quiet=600000", "stall"]);
    let pid = leader.id();
    let grandchild = grandchild_of(&line);
    let ticks = process_start_ticks(pid);

    let outcome = end_orphan_group(pid, ticks, Duration::from_millis(300)).await;
    let OrphanOutcome::Ended { members, sigkilled } = &outcome else {
        panic!("unexpected: {outcome:?}")
    };
    assert!(members.contains(&pid) && members.contains(&grandchild), "{members:?}");
    assert!(sigkilled, "the leader ignores SIGTERM");
    leader.wait().unwrap();
    assert!(group_members(pid).is_empty() && !is_alive(grandchild));
}

#[tokio::test]
async fn a_reused_pid_or_an_unknown_start_time_is_left_alone() {
    let (mut stranger, _) = start_group(&["print=started", "stall"]);
    let pid = stranger.id();
    let ticks = process_start_ticks(pid).unwrap();

    let outcome = end_orphan_group(pid, Some(ticks + 1), Duration::from_millis(100)).await;
    assert_eq!(outcome, OrphanOutcome::PidReused { pid });
    let outcome = end_orphan_group(pid, None, Duration::from_millis(100)).await;
    assert_eq!(outcome, OrphanOutcome::Unverified { pid });
    assert!(is_alive(pid), "an unproven process must not be signalled");

    stranger.kill().unwrap();
    stranger.wait().unwrap();
}

#[tokio::test]
async fn members_left_behind_by_a_dead_leader_are_ended() {
    let (mut leader, line) = start_group(&["grandchild-quiet=600000"]);
    let pid = leader.id();
    let ticks = process_start_ticks(pid);
    let grandchild = grandchild_of(&line);
    leader.wait().unwrap(); // reaped: /proc/<pid> is gone, the group lives on
    assert!(is_alive(grandchild));

    let outcome = end_orphan_group(pid, ticks, Duration::from_secs(5)).await;
    assert_eq!(outcome, OrphanOutcome::Ended { members: vec![grandchild], sigkilled: false });
    assert!(!is_alive(grandchild));
    assert_eq!(end_orphan_group(pid, ticks, Duration::from_secs(1)).await, OrphanOutcome::Gone);
}
