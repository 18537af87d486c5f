//! Stepping into a task from a terminal: `breeze attach` driven on a pseudo-terminal
//! (`script`) against a live run — Ctrl-C while it waits gives up, then a shell opens in
//! the paused lane, the test types a fix and leaves, and the fix is reviewed and lands — and
//! between runs, with `breeze diff` and `breeze open` around it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{
    Terminal, both, breeze, git, repo_with, run_in, shell_worker_config, status_json, stderr,
    stdout, task_state, toml_task,
};

/// Whether `script` (util-linux) is here to give breeze a terminal; the test is skipped
/// (loudly) without it.
fn have_script() -> bool {
    let here = Command::new("script").arg("--version").output().is_ok();
    if !here {
        eprintln!("skipped: no `script` (util-linux) to give breeze a terminal");
    }
    here
}

/// A repository whose task 1 (`a.txt`) has a `command` worker that fails every attempt; its
/// first attempt waits until the test creates `go` (in a folder the worker may write).
fn failing_task() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (temp, root) = repo_with(&[("plan.toml", &toml_task("1", "Fix a", &["a.txt"], ""))]);
    let handshake = temp.path().join("handshake");
    std::fs::create_dir_all(&handshake).unwrap();
    let script = temp.path().join("worker.sh");
    let dir = handshake.display();
    std::fs::write(
        &script,
        format!(
            "cat > /dev/null\nif [ ! -f {dir}/started ]; then touch {dir}/started; while [ ! -f {dir}/go ]; do sleep 0.05; done; fi\necho 'the build is broken' >&2\nexit 1\n"
        ),
    )
    .unwrap();
    let config = shell_worker_config(&script, "")
        + &format!("[run]\nmax_workers = 1\n[sandbox]\nwritable = [\"{dir}\"]\n");
    std::fs::write(root.join("breeze.toml"), config).unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "plan"]);
    (temp, root, handshake)
}

fn wait_for_file(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        assert!(Instant::now() < deadline, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn the_run_folder(root: &Path) -> PathBuf {
    let runs = root.join(".breeze/runs");
    let mut ids: Vec<PathBuf> =
        std::fs::read_dir(runs).unwrap().flatten().map(|entry| entry.path()).collect();
    ids.sort();
    ids.pop().expect("a run")
}

#[test]
fn attach_from_a_terminal_pauses_a_live_task_opens_a_shell_and_the_typed_fix_lands() {
    if !have_script() {
        return;
    }
    let (_temp, root, handshake) = failing_task();
    let mut run = breeze()
        .current_dir(&root)
        .arg("run")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("breeze runs");
    wait_for_file(&handshake.join("started"));
    let shell = [("SHELL", "/bin/sh")];

    // Attempt 1 is running: attach waits for a safe point, and Ctrl-C gives up.
    let mut gave_up = Terminal::start_with(&root, "attach 1", &shell);
    gave_up.wait_for("Ctrl-C gives up", Duration::from_secs(30));
    let request = the_run_folder(&root).join("attach/1.request.json");
    assert!(request.exists(), "the request is left for the live run");
    gave_up.type_key(3);
    let (code, text) = gave_up.finish();
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("gave up waiting; task 1 goes on as it was"), "{text}");
    assert!(!request.exists(), "the request was withdrawn");

    // Again, to the end: the task pauses once attempt 1 has failed, the shell opens in its
    // lane, and what the person types there is the change reviewed and landed.
    let mut person = Terminal::start_with(&root, "attach 1", &shell);
    person.wait_for("Ctrl-C gives up", Duration::from_secs(30));
    std::fs::write(handshake.join("go"), "").unwrap();
    person.wait_for("opening /bin/sh (a shell)", Duration::from_secs(60));
    person.type_text(b"echo \"lane $BREEZE_LANE\"; echo fixed > a.txt; exit\n");
    let (code, transcript) = person.finish();
    println!("--- the person's terminal ---\n{transcript}--- end ---");
    assert_eq!(code, Some(0), "{transcript}");
    for line in [
        "task 1 is paused in lane 1",
        "confined like the worker",
        "lane 1",
        "task 1 goes on: your change goes through the gates and review like a worker's change",
    ] {
        assert!(transcript.contains(line), "{line:?} in {transcript}");
    }
    assert_eq!(run.wait().unwrap().code(), Some(0));
    assert_eq!(git(&root, &["show", "main:a.txt"]), "fixed\n");
    let status = status_json(&root);
    assert_eq!(task_state(&status, "1"), "landed", "{status}");
    let one = status["tasks"].as_array().unwrap().iter().find(|t| t["id"] == "1").unwrap();
    assert_eq!(one["attempts"], 1, "the person's attempt is no worker attempt: {one}");
    let cycles = std::fs::read_to_string(the_run_folder(&root).join("cycles.jsonl")).unwrap();
    assert!(
        cycles.lines().any(|l| l.contains("\"executor\":\"person\"") && l.contains("APPROVE")),
        "{cycles}"
    );
}

#[test]
fn between_runs_diff_attach_and_open_work_on_the_tasks_worktree() {
    if !have_script() {
        return;
    }
    let (_temp, root, handshake) = failing_task();
    std::fs::write(handshake.join("started"), "").unwrap();
    let output = run_in(&root, &["run"]);
    assert_eq!(output.status.code(), Some(1), "{}", both(&output));
    assert_eq!(task_state(&status_json(&root), "1"), "escalated");

    let output = run_in(&root, &["diff", "9"]);
    assert_eq!(output.status.code(), Some(2), "{}", both(&output));
    assert!(stderr(&output).contains("has no task 9") && stderr(&output).contains("hint:"));
    let output = run_in(&root, &["diff", "1"]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert!(stderr(&output).contains("task 1 has no change yet"), "{}", both(&output));
    let output = run_in(&root, &["diff", "1", "--stat"]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert!(
        stderr(&output).contains("task 1 has no change yet"),
        "the same words: {}",
        both(&output)
    );
    assert_eq!(stdout(&output), "", "no `0 files changed`");
    let output = run_in(&root, &["open", "1"]);
    assert_eq!(output.status.code(), Some(2), "{}", both(&output));
    assert!(stderr(&output).contains("is not checked out anywhere now"), "{}", both(&output));

    // No run is live: attach checks the task out in its lane and opens the shell at once.
    let mut person = Terminal::start_with(&root, "attach 1", &[("SHELL", "/bin/sh")]);
    person.wait_for("opening /bin/sh", Duration::from_secs(30));
    person.type_text(b"echo fixed > a.txt; exit\n");
    let (code, transcript) = person.finish();
    assert_eq!(code, Some(0), "{transcript}");
    assert!(transcript.contains("no run is live: task 1 is checked out in"), "{transcript}");
    assert!(transcript.contains("taken up again with a fresh budget"), "{transcript}");
    assert!(transcript.contains("`breeze resume` reviews it"), "{transcript}");

    // diff: from the lane, with what is not committed yet.
    let lane = crate::support::lane(&root, "lane-1");
    std::fs::write(lane.join("a.txt"), "fixed\nand more\n").unwrap();
    let output = run_in(&root, &["diff", "1"]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let patch = stdout(&output);
    assert!(patch.contains("+++ b/a.txt") && patch.contains("+fixed\n+and more\n"), "{patch}");
    let output = run_in(&root, &["diff", "1", "--stat"]);
    assert!(stdout(&output).contains("1 file changed, 2 insertions(+)"), "{}", both(&output));
    git(&lane, &["checkout", "a.txt"]);

    // open: $VISUAL or $EDITOR in the lane, nothing paused.
    let output = breeze()
        .current_dir(&root)
        .env_remove("VISUAL")
        .env_remove("EDITOR")
        .args(["open", "1"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", both(&output));
    assert!(stderr(&output).contains("neither $VISUAL nor $EDITOR is set"), "{}", both(&output));
    let opened = root.parent().unwrap().join("opened");
    let editor = format!("sh -c 'pwd > {0}; echo \"$0\" >> {0}'", opened.display());
    let output = breeze()
        .current_dir(&root)
        .env_remove("VISUAL")
        .env("EDITOR", &editor)
        .args(["open", "1"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert!(stderr(&output).contains("nothing is paused"), "{}", both(&output));
    // Run in the lane, given the lane.
    let lane = std::fs::canonicalize(&lane).unwrap();
    let said = std::fs::read_to_string(&opened).unwrap();
    let said: Vec<PathBuf> =
        said.lines().map(|line| std::fs::canonicalize(line).unwrap()).collect();
    assert_eq!(said, [lane.clone(), lane]);

    let output = run_in(&root, &["resume"]);
    assert_eq!(task_state(&status_json(&root), "1"), "landed", "{}", both(&output));
    assert_eq!(git(&root, &["show", "main:a.txt"]), "fixed\n");
}
