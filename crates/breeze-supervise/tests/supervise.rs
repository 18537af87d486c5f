//! Real role processes (the fake role binary) under the supervisor: endings, output,
//! stdin, environment, timeouts, stalls, cancellation, leaks — and nothing left alive.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use breeze_supervise::{
    DirActivity, Ending, MARKER_VAR, SpawnError, Supervisor, processes_with_env, scrubbed_env,
};
use common::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn exit_code_tails_logs_and_lines() {
    let dir = tempfile::tempdir().unwrap();
    let spec =
        fake_spec(dir.path(), &["print=hello", "eprint=warning: x", "print=world", "exit=3"]);
    let (outcome, seen) = run(spec).await;

    assert_eq!(outcome.ending, Ending::Exited(3));
    assert_eq!(outcome.stdout_tail, "hello\nworld\n");
    assert_eq!(outcome.stderr_tail, "warning: x\n");
    assert_eq!((outcome.stdout_bytes, outcome.stderr_bytes), (12, 11));
    assert_eq!(seen.lines, ["hello", "world"]);
    let (pid, ticks) = seen.spawned.expect("on_spawn was called");
    assert_eq!(pid, outcome.pid);
    assert!(ticks.is_some(), "start ticks are read from /proc");
    assert!(!outcome.leaked && !outcome.sigkilled);

    // Byte-exact logs next to the given stem.
    assert_eq!(outcome.stdout_log, dir.path().join("logs/role.stdout"));
    assert_eq!(std::fs::read_to_string(&outcome.stdout_log).unwrap(), "hello\nworld\n");
    assert_eq!(std::fs::read_to_string(&outcome.stderr_log).unwrap(), "warning: x\n");
    assert_eq!(outcome.log_error, None);
    assert_nothing_survives(&outcome, &[]);
}

#[tokio::test]
async fn the_prompt_arrives_on_a_pipe_that_is_then_closed() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = fake_spec(dir.path(), &["stdin-info", "count-stdin"]);
    // Larger than a pipe buffer, so writing and reading must overlap.
    spec.stdin = vec![b'p'; 300_000];
    let (outcome, seen) = run(spec).await;
    assert_eq!(outcome.ending, Ending::Exited(0));
    assert!(seen.lines[0].starts_with("stdin=pipe:"), "{:?}", seen.lines);
    // count-stdin reads to EOF: it returns only because stdin was closed after the prompt.
    assert_eq!(seen.lines[1], "stdin-bytes=300000");
}

#[tokio::test]
async fn without_a_prompt_stdin_is_dev_null_never_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, seen) = run(fake_spec(dir.path(), &["stdin-info", "count-stdin"])).await;
    assert_eq!(outcome.ending, Ending::Exited(0));
    assert_eq!(seen.lines, ["stdin=/dev/null", "stdin-bytes=0"]);
}

#[tokio::test]
async fn a_role_that_never_reads_its_prompt_still_ends_normally() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = fake_spec(dir.path(), &["print=ignoring you"]);
    spec.stdin = vec![b'p'; 1 << 20];
    let (outcome, seen) = run(spec).await;
    assert_eq!(outcome.ending, Ending::Exited(0));
    assert_eq!(seen.lines, ["ignoring you"]);
}

#[tokio::test]
async fn the_last_json_object_is_found_in_prose_and_pretty_printing() {
    let dir = tempfile::tempdir().unwrap();
    let report = json!({"schema_version": "worker-report.v1", "status": "completed",
                        "summary": "done {really}", "changed": ["src/a.rs"]});
    let spec = fake_spec(
        dir.path(),
        &[
            "print={\"type\":\"progress\"}",
            "print=All done. Here is my report:",
            &format!("print-pretty={report}"),
            "print=Let me know if you need anything else.",
        ],
    );
    let (outcome, seen) = run(spec).await;
    assert_eq!(outcome.last_json, Some(report));
    assert!(seen.lines.len() > 5, "pretty-printed over several lines");
}

#[tokio::test]
async fn malformed_json_is_not_a_result_and_does_not_hide_an_earlier_one() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, _) = run(fake_spec(dir.path(), &["print-malformed"])).await;
    assert_eq!(outcome.ending, Ending::Exited(0));
    assert_eq!(outcome.last_json, None);

    let (outcome, _) =
        run(fake_spec(dir.path(), &["print={\"status\":\"failed\"}", "print-malformed"])).await;
    assert_eq!(outcome.last_json, Some(json!({"status": "failed"})));
}

#[tokio::test]
async fn a_crash_by_signal_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    for isolation in ISOLATIONS {
        for signal in [libc::SIGKILL, libc::SIGTERM] {
            let raise = format!("raise={signal}");
            let mut spec = fake_spec(dir.path(), &["print=about to die", &raise]);
            spec.isolation = isolation;
            let (outcome, _) = run(spec).await;
            assert_eq!(outcome.ending, Ending::Signaled(signal), "{isolation:?}");
            assert_eq!(outcome.stdout_tail, "about to die\n");
            assert!(!outcome.sigkilled && !outcome.leaked, "{isolation:?}");
            assert_nothing_survives(&outcome, &[]);
        }
        let mut spec = fake_spec(dir.path(), &["exit=255"]);
        spec.isolation = isolation;
        assert_eq!(run(spec).await.0.ending, Ending::Exited(255), "{isolation:?}");
    }
}

#[tokio::test]
async fn the_wall_clock_timeout_ends_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    for isolation in ISOLATIONS {
        let mut spec = fake_spec(dir.path(), &["grandchild-quiet=600000", "stall"]);
        spec.timeout = Some(Duration::from_millis(500));
        spec.grace = Duration::from_secs(10);
        spec.isolation = isolation;
        let (outcome, seen) = run(spec).await;
        assert_eq!(outcome.ending, Ending::TimedOut);
        // Both obeyed SIGTERM, so the grace period did not have to run out.
        assert!(!outcome.sigkilled, "{isolation:?}");
        assert_nothing_survives(&outcome, &[seen.grandchild_pid()]);
    }
}

#[tokio::test]
async fn a_role_ignoring_sigterm_gets_sigkill_after_the_grace_period() {
    let dir = tempfile::tempdir().unwrap();
    for isolation in ISOLATIONS {
        let mut spec = fake_spec(dir.path(), &["ignore-term", "print=ready", "stall"]);
        spec.timeout = Some(Duration::from_millis(300));
        spec.grace = Duration::from_millis(300);
        spec.isolation = isolation;
        let (outcome, seen) = run(spec).await;
        assert_eq!(outcome.ending, Ending::TimedOut);
        assert!(outcome.sigkilled, "{isolation:?}");
        assert_eq!(seen.lines, ["ready"]);
        assert_nothing_survives(&outcome, &[]);
    }
}

#[tokio::test]
async fn a_grandchild_holding_stdout_neither_blocks_the_run_nor_outlives_it() {
    let dir = tempfile::tempdir().unwrap();
    for isolation in ISOLATIONS {
        let mut spec = fake_spec(dir.path(), &["grandchild=600000", "print=leader done"]);
        spec.isolation = isolation;
        let (outcome, seen) = run(spec).await;
        // The leader's own exit decides the ending; the leak is reported besides it.
        assert_eq!(outcome.ending, Ending::Exited(0));
        assert!(outcome.leaked && outcome.sigkilled, "{isolation:?}");
        // Found in the role's group while it ran.
        let grandchild = seen.grandchild_pid();
        // The grandchild's own output (through the inherited pipe) was captured too: its
        // pid and group as it sees them (in a PID namespace, its namespace's pid and no
        // group id, the group's leader being outside).
        let own_line = match in_pid_namespace(isolation) {
            true => "pgid=0".to_owned(),
            false => format!("pid={grandchild} pgid={}", outcome.pid),
        };
        assert!(seen.lines.iter().any(|l| l.contains(&own_line)), "{isolation:?}: {seen:?}");
        assert_nothing_survives(&outcome, &[grandchild]);
    }
}

#[tokio::test]
async fn a_grandchild_left_in_the_group_without_pipes_is_ended_too() {
    let dir = tempfile::tempdir().unwrap();
    for isolation in ISOLATIONS {
        let mut spec = fake_spec(dir.path(), &["grandchild-quiet=600000"]);
        spec.isolation = isolation;
        let (outcome, seen) = run(spec).await;
        assert_eq!(outcome.ending, Ending::Exited(0));
        assert!(outcome.leaked, "{isolation:?}");
        assert_nothing_survives(&outcome, &[seen.grandchild_pid()]);
    }
}

#[tokio::test]
async fn silence_without_activity_is_a_stall() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = fake_spec(dir.path(), &["print=thinking", "grandchild-quiet=600000", "stall"]);
    spec.stall_timeout = Some(Duration::from_millis(500));
    let probe = Arc::new(DirActivity::new(dir.path().join("worktree")));
    let (outcome, seen) =
        run_with(&quick_supervisor(), spec, Some(probe), CancellationToken::new()).await;
    assert_eq!(outcome.ending, Ending::Stalled);
    assert_nothing_survives(&outcome, &[seen.grandchild_pid()]);
}

#[tokio::test]
async fn file_changes_in_the_watched_tree_keep_a_silent_role_alive() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("worktree")).unwrap();
    std::fs::create_dir_all(dir.path().join("elsewhere")).unwrap();
    let stall = Duration::from_millis(1500);
    // Touches every 100 ms for 4 s: 15 touches per stall period, silent on stdout/stderr.
    let role = |path: &str| {
        let mut spec = fake_spec(dir.path(), &[&format!("touch-every=100:40:{path}")]);
        spec.stall_timeout = Some(stall);
        spec
    };
    let probe = Arc::new(DirActivity::new(dir.path().join("worktree")));

    let (outcome, seen) = run_with(
        &quick_supervisor(),
        role("worktree/src/file.rs"),
        Some(probe.clone()),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(outcome.ending, Ending::Exited(0), "{seen:?}");
    assert_eq!(outcome.stdout_bytes + outcome.stderr_bytes, 0);

    // The same behaviour outside the watched tree is no sign of life.
    let (outcome, _) = run_with(
        &quick_supervisor(),
        role("elsewhere/file.rs"),
        Some(probe),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(outcome.ending, Ending::Stalled);
}

#[tokio::test]
async fn regular_output_keeps_a_role_alive() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = fake_spec(dir.path(), &["tick-every=100:40"]);
    spec.stall_timeout = Some(Duration::from_millis(1500));
    let (outcome, seen) = run(spec).await;
    assert_eq!(outcome.ending, Ending::Exited(0));
    assert_eq!(seen.lines.len(), 40);
}

#[tokio::test]
async fn cancellation_terminates_the_group() {
    let dir = tempfile::tempdir().unwrap();
    for isolation in ISOLATIONS {
        let mut spec = fake_spec(dir.path(), &["grandchild-quiet=600000", "print=ready", "stall"]);
        spec.isolation = isolation;
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (spawn_seen, line_seen) = (seen.clone(), seen.clone());
        let outcome = quick_supervisor()
            .run(
                spec,
                None,
                cancel,
                move |pid, ticks| spawn_seen.lock().unwrap().spawned = Some((pid, ticks)),
                move |line| {
                    line_seen.lock().unwrap().saw_line(line);
                    if line == "ready" {
                        trigger.cancel();
                    }
                },
            )
            .await
            .unwrap();
        assert_eq!(outcome.ending, Ending::Cancelled, "{isolation:?}");
        assert_nothing_survives(&outcome, &[seen.lock().unwrap().grandchild_pid()]);
    }
}

#[tokio::test]
async fn dropping_the_run_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let spec = fake_spec(dir.path(), &["grandchild-quiet=600000", "print=ready", "stall"]);
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let (spawn_seen, line_seen) = (seen.clone(), seen.clone());
    let ready = Arc::new(tokio::sync::Notify::new());
    let ready_tx = ready.clone();
    let supervisor = quick_supervisor();
    let run = supervisor.run(
        spec,
        None,
        CancellationToken::new(),
        move |pid, ticks| spawn_seen.lock().unwrap().spawned = Some((pid, ticks)),
        move |line| {
            line_seen.lock().unwrap().saw_line(line);
            if line == "ready" {
                ready_tx.notify_one();
            }
        },
    );
    tokio::select! {
        _ = run => panic!("the role stalls forever"),
        () = ready.notified() => {} // drops the run future
    }
    let seen = seen.lock().unwrap().clone();
    let pid = seen.spawned.unwrap().0;
    let grandchild = seen.grandchild_pid();
    // SIGKILL was sent synchronously on drop; give the kernel a moment to tear down.
    for _ in 0..500 {
        if group_members(pid).is_empty() && !is_alive(grandchild) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("group {pid} survived dropping its run: {:?}", group_members(pid));
}

#[tokio::test]
async fn the_role_gets_exactly_the_scrubbed_environment() {
    let dir = tempfile::tempdir().unwrap();
    let engine_env = vec![
        ("PATH".to_owned(), std::env::var("PATH").unwrap()),
        ("GITHUB_TOKEN".to_owned(), "ghp_secret".to_owned()),
        ("AWS_SECRET_ACCESS_KEY".to_owned(), "aws_secret".to_owned()),
        ("BREEZE_RUN_ID".to_owned(), "run-1".to_owned()),
        ("MODEL_URL".to_owned(), "http://localhost:8080".to_owned()),
    ];
    let mut spec = fake_spec(dir.path(), &["env-all"]);
    spec.env = scrubbed_env(
        engine_env,
        &["MODEL_URL".to_owned()],
        &[("BREEZE_ROLE".to_owned(), "worker".to_owned())],
    );
    let (outcome, seen) = run(spec).await;
    assert_eq!(outcome.ending, Ending::Exited(0));
    assert_eq!(
        seen.lines,
        [
            "BREEZE_ROLE=worker".to_owned(),
            "BREEZE_RUN_ID=run-1".to_owned(),
            "MODEL_URL=http://localhost:8080".to_owned(),
            format!("PATH={}", std::env::var("PATH").unwrap()),
        ]
    );
}

#[tokio::test]
async fn spawn_failures_name_the_program_and_what_to_check() {
    for (start, supervisor) in both_starts() {
        spawn_failures_name_the_program_and_what_to_check_with(supervisor)
            .await
            .unwrap_or_else(|failure| panic!("{start}: {failure}"));
    }
}

async fn spawn_failures_name_the_program_and_what_to_check_with(
    supervisor: Supervisor,
) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let start = |argv: Vec<&str>, cwd: &std::path::Path| {
        let mut spec = fake_spec(dir.path(), &[]);
        spec.argv = argv.into_iter().map(String::from).collect();
        spec.cwd = cwd.to_owned();
        supervisor.run(spec, None, CancellationToken::new(), |_, _| panic!("not spawned"), |_| {})
    };

    let err = start(vec!["no-such-agent-cli"], dir.path()).await.unwrap_err();
    assert!(matches!(err, SpawnError::ProgramNotFound { .. }), "{err:?}");
    assert!(err.to_string().contains("`no-such-agent-cli`") && err.to_string().contains("PATH="));

    let script = dir.path().join("worker.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    let err = start(vec!["./worker.sh"], dir.path()).await.unwrap_err();
    assert!(matches!(err, SpawnError::NotExecutable { .. }), "{err:?}");
    assert!(err.to_string().contains("chmod +x"), "{err}");

    let err = start(vec![FAKE_ROLE], &dir.path().join("removed-worktree")).await.unwrap_err();
    assert!(matches!(err, SpawnError::CwdMissing { .. }), "{err:?}");
    assert!(err.to_string().contains("removed-worktree"), "{err}");

    let err = start(vec![], dir.path()).await.unwrap_err();
    assert!(matches!(err, SpawnError::EmptyCommand), "{err:?}");

    // An executable file the kernel cannot run (no #! line, not a binary).
    let garbage = dir.path().join("garbage");
    std::fs::write(&garbage, [0u8, 1, 2, 3]).unwrap();
    std::fs::set_permissions(&garbage, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap();
    let err = start(vec!["./garbage"], dir.path()).await.unwrap_err();
    if !matches!(err, SpawnError::Exec { .. }) || !err.to_string().contains("#!") {
        return Err(format!("{err:?}: {err}"));
    }
    Ok(())
}

#[tokio::test]
async fn a_role_starts_with_no_signal_ignored_or_blocked_either_way() {
    let dir = tempfile::tempdir().unwrap();
    for (start, supervisor) in both_starts() {
        // The engine (a Rust program) ignores SIGPIPE, a test harness may ignore more, and
        // glibc's posix_spawn ignores its internal signals in the launcher: a role inherits
        // none of it.
        let mut spec = fake_spec(dir.path(), &[]);
        spec.argv =
            ["sh", "-c", "grep -E '^Sig(Ign|Blk)' /proc/self/status"].map(String::from).to_vec();
        let (outcome, seen) = run_with(&supervisor, spec, None, CancellationToken::new()).await;
        assert_eq!(outcome.ending, Ending::Exited(0), "{start}: {}", outcome.stderr_tail);
        for line in &seen.lines {
            let mask = line.split_whitespace().nth(1).unwrap();
            assert_eq!(u64::from_str_radix(mask, 16), Ok(0), "{start}: {line}");
        }
        assert_eq!(seen.lines.len(), 2, "{start}: {:?}", seen.lines);
    }
}

#[tokio::test]
async fn the_fake_role_writes_its_output_file_and_files_outside_any_write_set() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out/worker-report.json");
    std::fs::create_dir_all(output.parent().unwrap()).unwrap();
    let mut spec = fake_spec(
        dir.path(),
        &["output={\"status\":\"completed\"}", "write=../outside-the-worktree.txt=oops"],
    );
    spec.cwd = dir.path().join("worktree");
    std::fs::create_dir_all(&spec.cwd).unwrap();
    spec.env.push(("BREEZE_OUTPUT".to_owned(), output.display().to_string()));
    let (outcome, _) = run(spec).await;
    assert_eq!(outcome.ending, Ending::Exited(0));
    assert_eq!(std::fs::read_to_string(&output).unwrap(), "{\"status\":\"completed\"}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("outside-the-worktree.txt")).unwrap(),
        "oops"
    );
}

/// Whether `signal` is pending for the whole process `pid` (`ShdPnd` in `/proc/<pid>/status`):
/// a blocked SIGTERM stays there, which shows the supervisor has sent it.
fn signal_pending(pid: u32, signal: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("ShdPnd:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (signal - 1)) != 0)
}

/// Far below the 30 s grace these tests use, far above what a SIGKILL takes.
const PROMPTLY: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_hard_stop_through_a_clone_cuts_the_grace_period_short() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = fake_spec(dir.path(), &["ignore-term", "print=ready", "stall"]);
    spec.grace = Duration::from_secs(30);
    let supervisor = quick_supervisor();
    let stopper = supervisor.clone();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let pid = Arc::new(Mutex::new(None));
    let spawn_seen = pid.clone();
    let run = tokio::spawn(async move {
        supervisor
            .run(
                spec,
                None,
                cancel,
                move |pid, _| *spawn_seen.lock().unwrap() = Some(pid),
                move |line| {
                    if line == "ready" {
                        trigger.cancel();
                    }
                },
            )
            .await
            .unwrap()
    });

    // Wait until the run is in its grace period: the SIGTERM (blocked) is pending.
    let mut pid_seen = None;
    for _ in 0..500 {
        pid_seen = *pid.lock().unwrap();
        if pid_seen.is_some_and(|pid| signal_pending(pid, libc::SIGTERM)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = pid_seen.expect("the role was spawned");
    assert!(signal_pending(pid, libc::SIGTERM), "the cancel sent SIGTERM to the role");
    assert!(!run.is_finished(), "the role ignores SIGTERM, so the grace period runs");
    assert!(!stopper.is_stopping_hard());

    let stopped_at = std::time::Instant::now();
    stopper.stop_hard();
    let outcome = tokio::time::timeout(PROMPTLY, run)
        .await
        .expect("the hard stop ended the run without waiting out the grace")
        .unwrap();
    assert!(stopped_at.elapsed() < PROMPTLY);
    assert_eq!(outcome.ending, Ending::Cancelled);
    assert!(outcome.sigkilled);
    assert!(stopper.is_stopping_hard());
    assert_nothing_survives(&outcome, &[pid]);
}

#[tokio::test]
async fn a_hard_stop_sigkills_a_running_role_and_its_strays_without_grace() {
    let dir = tempfile::tempdir().unwrap();
    for isolation in ISOLATIONS {
        let marker = format!("test-{}-{}-{isolation:?}", std::process::id(), line!());
        // The leader would obey SIGTERM; the stray (out of the group) would not.
        let argv = [
            "sh",
            "-c",
            "setsid sh -c 'trap \"\" TERM; sleep 300' </dev/null >/dev/null 2>&1 & sleep 0.3; echo started; exec sleep 300",
        ];
        let mut spec = fake_spec(dir.path(), &[]);
        spec.argv = argv.iter().map(|a| a.to_string()).collect();
        spec.grace = Duration::from_secs(30);
        spec.marker = Some(marker.clone());
        spec.isolation = isolation;
        let supervisor = quick_supervisor();
        let stopper = supervisor.clone();
        let run = supervisor.run(
            spec,
            None,
            CancellationToken::new(),
            |_, _| {},
            move |line| {
                if line == "started" {
                    stopper.stop_hard();
                }
            },
        );
        let outcome = tokio::time::timeout(PROMPTLY, run)
            .await
            .expect("neither the group nor the stray got a grace period")
            .unwrap();
        assert_eq!(outcome.ending, Ending::Cancelled);
        // SIGKILL, not SIGTERM: the leader would have obeyed a SIGTERM.
        assert!(outcome.sigkilled);
        if in_pid_namespace(isolation) {
            // The SIGKILL of the group ended the namespace, and the stray with it.
            assert_eq!(outcome.strays, Vec::<u32>::new(), "nothing was left to find");
        } else {
            assert!(!outcome.strays.is_empty(), "the stray was found by its marker");
        }
        assert!(processes_with_env(MARKER_VAR, &marker).is_empty(), "a stray outlived the run");
        assert_nothing_survives(&outcome, &outcome.strays);
    }
}

#[tokio::test]
async fn a_run_after_a_hard_stop_is_killed_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = fake_spec(dir.path(), &["ignore-term", "print=ready", "stall"]);
    spec.grace = Duration::from_secs(30);
    let supervisor = quick_supervisor();
    supervisor.clone().stop_hard();
    // Clones made after the stop, with other settings, stop hard too.
    let clone = supervisor.clone().with_leak_timeout(Duration::from_millis(100));
    assert!(clone.is_stopping_hard());
    assert!(!Supervisor::new().is_stopping_hard(), "a new supervisor is not stopping");

    let (outcome, seen) =
        tokio::time::timeout(PROMPTLY, run_with(&clone, spec, None, CancellationToken::new()))
            .await
            .expect("the stopped supervisor's run did not keep running");
    assert_eq!(outcome.ending, Ending::Cancelled);
    assert!(outcome.sigkilled);
    assert_eq!(seen.spawned.map(|(pid, _)| pid), Some(outcome.pid), "on_spawn was called");
    assert_nothing_survives(&outcome, &[outcome.pid]);
}

#[tokio::test]
async fn a_hard_stop_ends_the_grace_given_to_what_outlived_the_leader() {
    let dir = tempfile::tempdir().unwrap();
    // The leader obeys SIGTERM; a member of its group, holding no pipe, ignores it.
    // The leader says "ready" only once the member ignores SIGTERM.
    let script = "sh -c 'trap \"\" TERM; touch member-ready; exec sleep 300' \
                  </dev/null >/dev/null 2>&1 & \
                  while [ ! -e member-ready ]; do sleep 0.05; done; echo ready; exec sleep 300";
    let mut spec = fake_spec(dir.path(), &[]);
    spec.argv = ["sh", "-c", script].iter().map(|a| a.to_string()).collect();
    spec.grace = Duration::from_secs(30);
    let supervisor = quick_supervisor();
    let stopper = supervisor.clone();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let pid = Arc::new(Mutex::new(None));
    let spawn_seen = pid.clone();
    let run = tokio::spawn(async move {
        let on_line = move |line: &str| {
            if line == "ready" {
                trigger.cancel();
            }
        };
        let on_spawn = move |pid, _| *spawn_seen.lock().unwrap() = Some(pid);
        supervisor.run(spec, None, cancel, on_spawn, on_line).await.unwrap()
    });

    // The leader died of the SIGTERM; the member waits out the 30 s grace.
    let mut leader = None;
    for _ in 0..500 {
        leader = *pid.lock().unwrap();
        if leader.is_some_and(|pid| !is_alive(pid) && !group_members(pid).is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let leader = leader.expect("the role was spawned");
    assert!(!is_alive(leader), "the leader obeyed SIGTERM");
    assert!(!group_members(leader).is_empty(), "the member ignoring SIGTERM is still alive");
    assert!(!run.is_finished(), "the group is given its grace period");

    stopper.stop_hard();
    let outcome = tokio::time::timeout(PROMPTLY, run)
        .await
        .expect("the hard stop ended the grace period")
        .unwrap();
    assert_eq!(outcome.ending, Ending::Cancelled);
    assert!(outcome.sigkilled);
    assert_nothing_survives(&outcome, &[]);
}

#[test]
fn a_launcher_refuses_a_damaged_plan_and_says_why() {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    // Run on its own, it says what it is and starts nothing.
    let alone = std::process::Command::new(LAUNCHER)
        .arg(breeze_supervise::LAUNCHER_ARG)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(alone.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&alone.stderr).contains("cannot run on its own"));
    // A plan without the role's stdin and with a magic of no version of breeze's.
    let (mut engine, launcher_end) = UnixStream::pair().unwrap();
    let launcher = std::process::Command::new(LAUNCHER)
        .arg(breeze_supervise::LAUNCHER_ARG)
        .stdin(std::process::Stdio::from(std::os::fd::OwnedFd::from(launcher_end)))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    engine.write_all(&5u32.to_le_bytes()).unwrap();
    engine.write_all(b"BRZL9").unwrap();
    let mut report = Vec::new();
    engine.read_to_end(&mut report).unwrap();
    assert_eq!(report, libc::EPROTO.to_le_bytes(), "the refusal, as an errno");
    let output = launcher.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("refused") && said.contains("no stdin was sent"), "{said}");
}
