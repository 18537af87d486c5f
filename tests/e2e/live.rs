//! Watching a run: `breeze run --json`, `breeze watch` from another process (and on a
//! terminal, under `script`), `breeze logs --follow`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use breeze_protocol::{BreezeEvent, EventKind};

use crate::support::{
    Collected, SCRIPTED_CONFIG, Terminal, both, breeze, repo_with, run_in, status_json, stderr,
    stdout, task_state, toml_task,
};

/// A repository whose two tasks run a shell worker printing `step N of STEPS` a second
/// apart.
fn slow_run(steps: u32) -> (tempfile::TempDir, PathBuf) {
    let plan = toml_task("1", "First note", &["notes/1.txt"], "")
        + &toml_task("2", "Second note", &["notes/2.txt"], "");
    let (temp, root) = repo_with(&[("plan.toml", &plan)]);
    let script = temp.path().join("worker.sh");
    std::fs::write(
        &script,
        format!(
            "cat > /dev/null\nfor i in $(seq {steps}); do echo \"step $i of {steps}\"; sleep 1; done\nmkdir -p notes && echo hi > notes/$BREEZE_TASK_ID.txt\nprintf '{{\"schema_version\":\"worker-report.v1\",\"status\":\"completed\",\"summary\":\"ok\"}}' > \"$BREEZE_OUTPUT\"\n"
        ),
    )
    .unwrap();
    let config = crate::support::shell_worker_config(&script, "") + "[run]\nmax_workers = 2\n";
    std::fs::write(root.join("breeze.toml"), config).unwrap();
    crate::support::git(&root, &["add", "-A"]);
    crate::support::git(&root, &["commit", "-qm", "config"]);
    (temp, root)
}

/// Starts `breeze run` in the background (stdout not a terminal).
fn start_run(root: &Path) -> Child {
    breeze()
        .current_dir(root)
        .arg("run")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("breeze runs")
}

/// Waits until the run's journal names a started task (the engine holds the repository).
fn wait_for_a_task(root: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let started =
            std::fs::read_dir(root.join(".breeze/runs")).into_iter().flatten().flatten().any(
                |run| {
                    std::fs::read_to_string(run.path().join("events.jsonl"))
                        .is_ok_and(|text| text.contains("\"task_started\""))
                },
            );
        if started {
            return;
        }
        assert!(Instant::now() < deadline, "the run did not start a task");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn run_json_prints_only_breeze_events_with_millisecond_times() {
    let plan = toml_task("1", "A", &["a.txt"], "") + &toml_task("2", "B", &["b.txt"], "");
    let (_temp, root) = repo_with(&[("breeze.toml", SCRIPTED_CONFIG), ("plan.toml", &plan)]);
    let output = run_in(&root, &["run", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let text = stdout(&output);
    let events: Vec<BreezeEvent> = text
        .lines()
        .map(|line| {
            breeze_protocol::validate::parse_str::<BreezeEvent>(line)
                .unwrap_or_else(|err| panic!("not a breeze-event.v1 line: {line}\n{err}"))
        })
        .collect();
    assert!(matches!(events.first().map(|e| &e.event), Some(EventKind::RunStarted { .. })));
    assert!(matches!(events.last().map(|e| &e.event), Some(EventKind::RunFinished { .. })));
    let landed = events.iter().filter(|e| matches!(e.event, EventKind::Landed { .. })).count();
    assert_eq!(landed, 2, "{text}");
    for (n, event) in events.iter().enumerate() {
        assert_eq!(event.seq, n as u64 + 1, "one line per event, in order");
        let millis = event.at.strip_suffix('Z').and_then(|t| t.rsplit_once('.')).map(|(_, ms)| ms);
        assert!(millis.is_some_and(|ms| ms.len() == 3), "milliseconds in {}", event.at);
    }
    // The journal says the same.
    let runs = root.join(".breeze/runs");
    let run = std::fs::read_dir(&runs).unwrap().next().unwrap().unwrap().path();
    assert_eq!(std::fs::read_to_string(run.join("events.jsonl")).unwrap(), text);
    assert!(stderr(&output).contains("2 of 2 tasks landed"), "the summary goes to stderr");

    // A reader that goes away does not stop the run.
    let plan3 = plan + &toml_task("3", "C", &["c.txt"], "");
    std::fs::write(root.join("plan.toml"), plan3).unwrap();
    crate::support::git(&root, &["commit", "-qam", "task 3"]);
    let mut child = breeze()
        .current_dir(&root)
        .args(["run", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_eq!(task_state(&status_json(&root), "3"), "landed");
}

#[test]
fn watch_and_logs_follow_a_run_from_another_process_until_it_ends() {
    let (_temp, root) = slow_run(3);
    let mut run = start_run(&root);
    wait_for_a_task(&root);
    let watch = breeze().current_dir(&root).arg("watch").stdin(Stdio::null()).spawn_output();
    let follow = Collected::start(breeze().current_dir(&root).args(["logs", "1", "--follow"]));
    follow.wait_for("step 1 of 3", Duration::from_secs(20));
    assert!(run.try_wait().unwrap().is_none(), "the worker's output is shown while it runs");
    assert_eq!(run.wait().unwrap().code(), Some(0));
    let watch = watch.join().unwrap();
    let follow = follow.finish();

    assert_eq!(watch.status.code(), Some(0), "{}", both(&watch));
    let text = stdout(&watch);
    assert!(text.starts_with("watching run "), "{text}");
    assert!(text.contains("● [1] landed") && text.contains("● [2] landed"), "{text}");
    assert!(text.trim_end().ends_with("ended: succeeded"), "{text}");

    let (code, text) = follow;
    assert_eq!(code, Some(0), "{text}");
    let steps: Vec<&str> = text.lines().filter(|line| line.starts_with("step ")).collect();
    assert_eq!(steps, ["step 1 of 3", "step 2 of 3", "step 3 of 3"], "{text}");
    assert!(text.contains("1.worker.1.log.stdout <=="), "{text}");

    // After the run: its final state, and that nothing is in progress.
    let after = run_in(&root, &["watch"]);
    assert_eq!(after.status.code(), Some(0), "{}", both(&after));
    let text = stdout(&after);
    assert!(text.contains("totals: 2 of 2 landed"), "{text}");
    assert!(text.contains("no run in progress") && text.contains("ended succeeded"), "{text}");
}

#[test]
fn watch_without_any_run_says_how_to_start_one() {
    let (_temp, root) = repo_with(&[("plan.toml", &toml_task("1", "A", &["a.txt"], ""))]);
    let output = run_in(&root, &["watch"]);
    assert_eq!(output.status.code(), Some(2), "{}", both(&output));
    assert!(stderr(&output).contains("no run to watch"), "{}", both(&output));
    assert!(stderr(&output).contains("breeze run"), "a hint: {}", both(&output));
}

#[test]
fn on_a_terminal_watch_draws_the_lanes_and_q_leaves_the_run_going() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` (util-linux) to give breeze a terminal");
        return;
    }
    let (_temp, root) = slow_run(4);
    let mut run = start_run(&root);
    wait_for_a_task(&root);
    let mut watch = Terminal::start(&root, "watch");
    let frame = watch.wait_for("step 1 of 4", Duration::from_secs(20));
    assert!(frame.contains("lane  task") && frame.contains("[1] First note"), "{frame}");
    assert!(frame.contains("  worker  "), "the phase: {frame}");
    assert!(frame.contains("q: leave"), "{frame}");
    watch.type_key(b'q');
    let (code, text) = watch.finish();
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("left the view"), "{text}");
    assert!(run.try_wait().unwrap().is_none(), "the run goes on after q");
    assert_eq!(run.wait().unwrap().code(), Some(0));

    // `breeze run` on a terminal: the view, then the summary as before.
    let (_temp, root) = slow_run(1);
    let (code, text) = Terminal::start(&root, "run").finish();
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("lane  task") && text.contains("\x1b[J"), "redrawn in place: {text}");
    assert!(text.contains("2 of 2 tasks landed"), "{text}");
}

#[test]
fn closing_the_terminal_of_a_live_run_leaves_the_run_going() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` (util-linux) to give breeze a terminal");
        return;
    }
    let (_temp, root) = slow_run(3);
    let mut terminal = Terminal::start(&root, "run");
    terminal.wait_for("step 1 of 3", Duration::from_secs(30));
    // The terminal goes away: the kernel hangs up on breeze, the session's leader.
    terminal.child.kill().unwrap();
    let _ = terminal.child.wait();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        let status = status_json(&root);
        if status["state"] != "running" || Instant::now() > deadline {
            break status;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(status["state"], "succeeded", "the run went on without its terminal: {status}");
    assert_eq!(task_state(&status, "2"), "landed", "{status}");
}

#[test]
fn watch_stopped_by_sigterm_gives_the_terminal_back() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` (util-linux) to give breeze a terminal");
        return;
    }
    let (_temp, root) = slow_run(6);
    let mut run = start_run(&root);
    wait_for_a_task(&root);
    let watch = Terminal::start(&root, "watch; stty -a");
    watch.wait_for("q: leave", Duration::from_secs(20));
    // script → sh → breeze watch
    let breeze_watch = descendants(watch.child.id()).into_iter().find(|pid| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|cmd| String::from_utf8_lossy(&cmd).contains("watch"))
            && std::fs::read_link(format!("/proc/{pid}/exe"))
                .is_ok_and(|exe| exe.ends_with("breeze"))
    });
    let pid = breeze_watch.expect("breeze watch runs under script");
    assert!(Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap().success());
    let (code, text) = watch.finish();
    assert_eq!(code, Some(0), "{text}");
    assert!(run.try_wait().unwrap().is_none(), "watch left at once, the run goes on");
    let settings = text.rsplit("speed").next().unwrap_or_default();
    assert!(settings.contains(" echo ") && settings.contains(" icanon "), "echo restored: {text}");
    assert_eq!(run.wait().unwrap().code(), Some(0), "the run goes on");
}

/// Every process below `pid`.
fn descendants(pid: u32) -> Vec<u32> {
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    let mut all = Vec::new();
    for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
        all.push(child);
        all.extend(descendants(child));
    }
    all
}

/// Runs a command to its end on a thread of its own.
trait SpawnOutput {
    fn spawn_output(&mut self) -> std::thread::JoinHandle<std::process::Output>;
}

impl SpawnOutput for Command {
    fn spawn_output(&mut self) -> std::thread::JoinHandle<std::process::Output> {
        let child = self.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        std::thread::spawn(move || child.wait_with_output().unwrap())
    }
}

#[test]
fn resume_json_prints_the_resumed_run_s_events() {
    let config = format!("{SCRIPTED_CONFIG}\n[land]\nrequire_approval = true\n");
    let (_temp, root) =
        repo_with(&[("breeze.toml", &config), ("plan.toml", &toml_task("1", "A", &["a.txt"], ""))]);
    let ran = run_in(&root, &["run", "--json"]);
    assert_eq!(ran.status.code(), Some(3), "{}", both(&ran));
    assert_eq!(run_in(&root, &["approve", "1"]).status.code(), Some(0));
    let resumed = run_in(&root, &["resume", "--json"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    let events: Vec<BreezeEvent> = stdout(&resumed)
        .lines()
        .map(|line| breeze_protocol::validate::parse_str::<BreezeEvent>(line).unwrap())
        .collect();
    assert!(matches!(events[0].event, EventKind::RunStarted { resumed: true, .. }), "{events:?}");
    assert!(events.iter().any(|e| matches!(e.event, EventKind::Landed { .. })), "{events:?}");
    assert!(events.windows(2).all(|w| w[1].seq == w[0].seq + 1), "the journal's numbering");
}
