//! Killed engines, stuck roles and cleaning up: what a user needs to trust a long run.

use std::time::{Duration, Instant};

use breeze_test_support::process::{HeldCheckouts, alive};

use crate::support::{
    SCRIPTED_CONFIG, both, breeze, git, one_task_plan, repo_with, run_in, shell_worker_config,
    status_json, stdout, toml_task,
};

/// The pid breeze journaled for the run's last worker process (its process group, as this
/// process sees it). A worker's own `$$` would not do: in its PID namespace it is that
/// namespace's pid.
fn journaled_worker_pid(root: &std::path::Path) -> i32 {
    let runs = root.join(".breeze/runs");
    let run = std::fs::read_dir(runs).unwrap().next().unwrap().unwrap().path();
    let journal = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    journal
        .lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|entry| {
            entry["event"]["kind"] == "process_started" && entry["event"]["role"] == "worker"
        })
        .find_map(|entry| entry["event"]["pid"].as_i64())
        .expect("the worker's start is journaled") as i32
}

fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_run_killed_with_sigkill_resumes_ends_the_orphan_and_lands_once() {
    let (temp, root) = repo_with(&[("README.md", "r\n")]);
    // The worker says it started (with its pid in its own namespace) through a folder the
    // configuration lets it write; its pid as breeze sees it is in the journal.
    let signal = temp.path().join("signal");
    std::fs::create_dir(&signal).unwrap();
    let pid_file = signal.join("worker.pid");
    let hold = temp.path().join("hold");
    std::fs::write(&hold, "").unwrap();
    let worker = format!(
        "cat > /dev/null\necho $$ > {pid}\nif [ -f {hold} ]; then sleep 300; fi\necho done > a.txt\nprintf '{{\"schema_version\":\"worker-report.v1\",\"status\":\"completed\",\"summary\":\"ok\"}}' > \"$BREEZE_OUTPUT\"\n",
        pid = pid_file.display(),
        hold = hold.display()
    );
    let script = temp.path().join("worker.sh");
    std::fs::write(&script, worker).unwrap();
    let config = shell_worker_config(&script, "")
        + &format!("[sandbox]\nwritable = [{:?}]\n", signal.display().to_string());
    std::fs::write(root.join("breeze.toml"), config).unwrap();
    std::fs::write(root.join("plan.toml"), one_task_plan()).unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "config"]);

    let mut engine = breeze()
        .current_dir(&root)
        .args(["run"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the worker to start", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|p| !p.trim().is_empty())
    });
    let worker_pid = journaled_worker_pid(&root);
    engine.kill().unwrap(); // SIGKILL: no cleanup at all
    engine.wait().unwrap();
    assert!(
        alive(worker_pid),
        "the worker outlived the killed engine (that is what resume must clean up)"
    );

    let status = status_json(&root);
    assert_eq!(
        status["state"], "interrupted",
        "a dead engine's run reads as interrupted: {status}"
    );
    assert_eq!(
        status["tasks"][0]["state"], "interrupted",
        "so does the task its worker was on (nothing runs it now): {status}"
    );
    let table = stdout(&run_in(&root, &["status"]));
    assert!(
        table.contains("interrupted") && !table.contains("running"),
        "the table says the same: {table}"
    );

    std::fs::remove_file(&hold).unwrap();
    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    assert!(!alive(worker_pid), "resume ended the orphaned worker");
    let landed = git(&root, &["log", "--format=%(trailers:key=Breeze-Task,valueonly)", "main"]);
    assert_eq!(landed.lines().filter(|l| *l == "1").count(), 1, "{landed}");
    assert_eq!(git(&root, &["show", "main:a.txt"]), "done\n");
    git(&root, &["fsck", "--strict"]);
}

#[test]
fn a_silent_worker_process_is_killed_respawned_once_then_escalated() {
    let (temp, root) = repo_with(&[("README.md", "r\n")]);
    let script = temp.path().join("silent.sh");
    // Ignores SIGTERM and leaves a grandchild holding stdout: it must still end.
    std::fs::write(&script, "trap '' TERM\ncat > /dev/null\nsleep 300 &\nsleep 300\n").unwrap();
    std::fs::write(
        root.join("breeze.toml"),
        shell_worker_config(&script, "stall_timeout = \"1s\""),
    )
    .unwrap();
    std::fs::write(root.join("plan.toml"), one_task_plan()).unwrap();
    let output = breeze().current_dir(&root).args(["run"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", both(&output));
    let status = status_json(&root);
    assert_eq!(status["tasks"][0]["state"], "escalated");
    assert_eq!(status["tasks"][0]["attempts"], 2);
    assert!(status["tasks"][0]["reason"].as_str().unwrap().contains("stalled"), "{status}");
    let leftovers = std::process::Command::new("pgrep")
        .args(["-f", &script.display().to_string()])
        .output()
        .unwrap();
    assert!(
        leftovers.stdout.is_empty(),
        "no role process outlives the run: {}",
        String::from_utf8_lossy(&leftovers.stdout)
    );
}

#[test]
fn clean_removes_only_what_breeze_created_and_keeps_unlanded_work() {
    let plan = toml_task("1", "Rejected", &["a.txt"], "[task.sim]\nrequest_changes = 3")
        + &toml_task("2", "Fine", &["b.txt"], "");
    let (_temp, root) = repo_with(&[("breeze.toml", SCRIPTED_CONFIG), ("plan.toml", &plan)]);
    git(&root, &["branch", "task/user-owned"]);
    let output = run_in(&root, &["run"]);
    assert_eq!(output.status.code(), Some(1), "{}", both(&output));
    assert!(git(&root, &["branch", "--list", "task/1"]).contains("task/1"));

    let dry = run_in(&root, &["clean", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "{}", both(&dry));
    assert!(stdout(&dry).contains("kept task/1"), "{}", stdout(&dry));
    let kept = run_in(&root, &["clean"]);
    assert!(stdout(&kept).contains("kept task/1"), "{}", stdout(&kept));
    assert!(
        git(&root, &["branch", "--list", "task/1"]).contains("task/1"),
        "unlanded work is kept"
    );

    let forced = run_in(&root, &["clean", "--force"]);
    assert_eq!(forced.status.code(), Some(0), "{}", both(&forced));
    assert!(stdout(&forced).contains("removed task/1"), "{}", stdout(&forced));
    let branches = git(&root, &["branch", "--list"]);
    assert!(!branches.contains("task/1"), "{branches}");
    assert!(
        branches.contains("task/user-owned"),
        "a branch breeze did not create survives --force: {branches}"
    );
}

#[test]
fn abort_stops_a_live_run_and_a_new_run_keeps_the_old_branch() {
    let (temp, root) = repo_with(&[("README.md", "r\n")]);
    let signal = temp.path().join("signal");
    std::fs::create_dir(&signal).unwrap();
    let pid_file = signal.join("worker.pid");
    let slow = temp.path().join("slow.sh");
    std::fs::write(
        &slow,
        format!("cat > /dev/null\necho $$ > {}\nsleep 300\n", pid_file.display()),
    )
    .unwrap();
    let config = shell_worker_config(&slow, "")
        + &format!("[sandbox]\nwritable = [{:?}]\n", signal.display().to_string());
    std::fs::write(root.join("breeze.toml"), config).unwrap();
    std::fs::write(root.join("plan.toml"), one_task_plan()).unwrap();

    let engine = breeze()
        .current_dir(&root)
        .args(["run"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the worker to start", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|p| !p.trim().is_empty())
    });
    let worker_pid = journaled_worker_pid(&root);
    let aborted = run_in(&root, &["abort"]);
    assert_eq!(aborted.status.code(), Some(0), "{}", both(&aborted));
    assert!(stdout(&aborted).contains("stopped the running engine"), "{}", both(&aborted));
    let engine = engine.wait_with_output().unwrap();
    assert_eq!(engine.status.code(), Some(1), "the engine says it was aborted: {}", both(&engine));
    assert!(!both(&engine).contains("breeze resume"), "no resume is offered: {}", both(&engine));
    assert!(!alive(worker_pid), "the worker's process group was ended");
    let status = status_json(&root);
    assert_eq!(status["state"], "aborted");
    assert_eq!(status["tasks"][0]["state"], "failed");
    // The engine's own summary says the same: the person's abort failed the task.
    let summary = stdout(&engine);
    let task_line = summary.lines().find(|line| line.starts_with("1 ")).unwrap_or_default();
    assert!(
        task_line.contains(" failed ") && task_line.contains("run aborted with `breeze abort`"),
        "{summary}"
    );
    assert!(!summary.contains("interrupted"), "{summary}");
    let resume = run_in(&root, &["resume"]);
    assert_eq!(resume.status.code(), Some(2), "an aborted run is not resumed: {}", both(&resume));

    // The old task branch stays; the next run works on a branch of its own.
    let fast = temp.path().join("fast.sh");
    std::fs::write(&fast, "cat > /dev/null\necho done > a.txt\nprintf '{\"schema_version\":\"worker-report.v1\",\"status\":\"completed\",\"summary\":\"ok\"}' > \"$BREEZE_OUTPUT\"\n").unwrap();
    std::fs::write(root.join("breeze.toml"), shell_worker_config(&fast, "")).unwrap();
    let second = run_in(&root, &["run"]);
    assert_eq!(second.status.code(), Some(0), "{}", both(&second));
    assert_eq!(git(&root, &["show", "main:a.txt"]), "done\n");
    assert!(
        git(&root, &["branch", "--list", "task/1"]).contains("task/1"),
        "the aborted run's branch is kept"
    );
}

/// `breeze ARGS` started in `root`, its output kept for [`exit_of`].
fn started(root: &std::path::Path, args: &[&str]) -> std::process::Child {
    breeze()
        .current_dir(root)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// How `engine` ended, waiting (`what`: for the message when it does not end).
fn exit_of(engine: std::process::Child, what: &str) -> std::process::Output {
    let output = std::sync::Arc::new(std::sync::Mutex::new(None));
    let waiter = {
        let output = output.clone();
        std::thread::spawn(move || *output.lock().unwrap() = Some(engine.wait_with_output()))
    };
    wait_for(what, || output.lock().unwrap().is_some());
    waiter.join().unwrap();
    output.lock().unwrap().take().unwrap().unwrap()
}

/// Sends `signal` (e.g. `-INT`) to `pid` with kill(1).
fn send(signal: &str, pid: u32) {
    let status = std::process::Command::new("kill").args([signal, &pid.to_string()]).status();
    assert!(status.unwrap().success(), "kill {signal} {pid}");
}

#[test]
fn a_second_ctrl_c_stops_at_once_and_the_run_stays_resumable() {
    let (temp, root) = repo_with(&[("README.md", "r\n")]);
    // A worker that ignores SIGTERM; a grace of ten minutes before SIGKILL. The first Ctrl-C
    // asks it to stop (it will not); the second must not wait for the grace to end.
    let signal = temp.path().join("signal");
    std::fs::create_dir(&signal).unwrap();
    let pid_file = signal.join("worker.pid");
    let term_file = signal.join("got-term");
    let worker = format!(
        "trap 'echo term > {term}' TERM\necho $$ > {pid}\nwhile true; do sleep 0.1; done\n",
        term = term_file.display(),
        pid = pid_file.display()
    );
    let script = temp.path().join("worker.sh");
    std::fs::write(&script, worker).unwrap();
    let config = shell_worker_config(&script, "stop_grace = \"10m\"")
        + &format!("[sandbox]\nwritable = [{:?}]\n", signal.display().to_string());
    std::fs::write(root.join("breeze.toml"), config).unwrap();
    std::fs::write(root.join("plan.toml"), one_task_plan()).unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "config"]);

    let engine = started(&root, &["run"]);
    wait_for("the worker to start", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|p| !p.trim().is_empty())
    });
    let worker_pid = journaled_worker_pid(&root);
    send("-INT", engine.id());
    wait_for("the worker to get SIGTERM", || term_file.exists());
    assert!(alive(worker_pid), "the worker ignores SIGTERM and is in its grace period");
    send("-INT", engine.id());
    // Ten minutes of grace are not waited out: wait_for gives up after 30 s.
    let output = exit_of(engine, "breeze to stop after the second Ctrl-C");
    assert_eq!(output.status.code(), Some(3), "{}", both(&output));
    assert!(crate::support::stderr(&output).contains("stopping now"), "{}", both(&output));
    assert!(!alive(worker_pid), "the worker was killed");
    let status = status_json(&root);
    assert_eq!(status["state"], "interrupted", "{status}");
}

#[test]
fn sigterm_ends_a_slow_checkout_at_once_and_resume_finishes_the_run() {
    // Every checkout of `*.dat` waits in a filter process while the test holds it: creating
    // the lane's worktree (`git read-tree -u`) is a step that would not end by itself.
    let (temp, root) = repo_with(&[
        ("README.md", "r\n"),
        ("data.dat", "payload\n"),
        (".gitattributes", "*.dat filter=slow\n"),
        ("breeze.toml", SCRIPTED_CONFIG),
        ("plan.toml", &one_task_plan()),
    ]);
    let held = HeldCheckouts::configure(&root, temp.path());
    let engine = started(&root, &["run"]);
    let filter = held.wait_until_held();
    let asked = Instant::now();
    send("-TERM", engine.id());
    let output = exit_of(engine, "breeze to stop after SIGTERM");
    eprintln!("breeze stopped {:?} after SIGTERM, in the middle of a checkout", asked.elapsed());
    assert_eq!(output.status.code(), Some(3), "{}", both(&output));
    assert!(!alive(filter), "the checkout's filter was ended with it");
    assert!(held.is_holding(), "it stopped while the step was still waiting");
    assert_eq!(status_json(&root)["state"], "interrupted");

    held.release();
    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    let status = status_json(&root);
    assert_eq!(status["tasks"][0]["state"], "landed", "{status}");
    assert_eq!(git(&root, &["show", "main:data.dat"]), "payload\n");
    git(&root, &["fsck", "--strict"]);
}

#[test]
fn a_task_killed_in_a_lane_resume_does_not_adopt_goes_on_there_when_resumed() {
    // The worker writes its task's file, says it started, and waits for `go` to finish.
    let (temp, root) = repo_with(&[("README.md", "r\n")]);
    let signal = temp.path().join("signal");
    std::fs::create_dir(&signal).unwrap();
    let worker = format!(
        "cat > /dev/null\necho \"work of $BREEZE_TASK_ID\" > \"$BREEZE_TASK_ID.txt\"\ntouch {dir}/started-$BREEZE_TASK_ID\nwhile [ ! -f {dir}/go ]; do sleep 0.05; done\nprintf '{{\"schema_version\":\"worker-report.v1\",\"status\":\"completed\",\"summary\":\"ok\"}}' > \"$BREEZE_OUTPUT\"\n",
        dir = signal.display()
    );
    let script = temp.path().join("worker.sh");
    std::fs::write(&script, worker).unwrap();
    let config = shell_worker_config(&script, "")
        + &format!(
            "[run]\nmax_workers = 1\n[sandbox]\nwritable = [{:?}]\n",
            signal.display().to_string()
        );
    std::fs::write(root.join("breeze.toml"), config).unwrap();
    let killed_at_work = |id: &str| {
        let mut engine = breeze()
            .current_dir(&root)
            .args(["run"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        wait_for("the worker to start", || signal.join(format!("started-{id}")).exists());
        engine.kill().unwrap();
        engine.wait().unwrap();
    };

    // A first run killed and aborted leaves lane-1 on task/1; the user keeps a note there,
    // so the next run works in a worktree of another name, lane-1-2 — and is killed.
    std::fs::write(root.join("plan.toml"), toml_task("1", "One", &["1.txt"], "")).unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "config"]);
    killed_at_work("1");
    let aborted = run_in(&root, &["abort"]);
    assert_eq!(aborted.status.code(), Some(0), "{}", both(&aborted));
    std::fs::write(crate::support::lane(&root, "lane-1").join("notes.txt"), "mine\n").unwrap();
    std::fs::write(root.join("plan.toml"), toml_task("2", "Two", &["2.txt"], "")).unwrap();
    git(&root, &["commit", "-qam", "plan 2"]);
    killed_at_work("2");
    let second = crate::support::lane(&root, "lane-1-2");
    assert_eq!(git(&second, &["branch", "--show-current"]), "task/2\n");

    // The resume takes lane-1 back for lane 1 (resume adopts `lane-<n>`); task 2 goes on in
    // lane-1-2, where its branch is checked out, and lands what its worker wrote there.
    std::fs::write(signal.join("go"), "").unwrap();
    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    assert_eq!(status_json(&root)["tasks"][0]["state"], "landed");
    assert_eq!(git(&root, &["show", "main:2.txt"]), "work of 2\n");
    git(&root, &["fsck", "--strict"]);
}
