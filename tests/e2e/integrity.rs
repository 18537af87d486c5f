//! Nothing lost, nothing misleading: regressions of the integrity issue (#10), each named
//! after what a user lost or was told wrongly, checked with the git CLI and `breeze status`.

use crate::support::{
    SCRIPTED_CONFIG, both, breeze, git, repo_with, run_in, status_json, stdout, task_state,
    toml_task, write,
};

/// A plan of two scripted tasks writing `src/a.txt` and `src/b.txt`.
fn two_tasks() -> String {
    toml_task("1", "Change a", &["src/a.txt"], "") + &toml_task("2", "Change b", &["src/b.txt"], "")
}

/// Adds a commit on `branch` (as a user would, from anywhere): the same tree, a new message.
fn user_commit_on(root: &std::path::Path, branch: &str) -> String {
    let tree = git(root, &["rev-parse", &format!("{branch}^{{tree}}")]);
    let commit = git(root, &["commit-tree", tree.trim(), "-p", branch, "-m", "my own follow-up"]);
    git(root, &["update-ref", &format!("refs/heads/{branch}"), commit.trim()]);
    commit.trim().to_string()
}

#[test]
fn a_commit_the_user_added_on_a_task_branch_survives_resume_and_clean() {
    let (_temp, root) = repo_with(&[
        ("breeze.toml", SCRIPTED_CONFIG),
        ("plan.toml", &two_tasks()),
        ("src/a.txt", "a\n"),
        ("src/b.txt", "b\n"),
    ]);
    write(&root, "src/a.txt", "a\nmy uncommitted edit\n");
    let output = run_in(&root, &["run"]);
    assert_eq!(output.status.code(), Some(3), "deferred: {}", both(&output));
    assert_eq!(task_state(&status_json(&root), "1"), "deferred");

    // While the landing waits, the user adds a commit on the task's branch.
    let mine = user_commit_on(&root, "task/1");
    git(&root, &["stash"]);
    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    assert!(
        stdout(&resumed).contains("kept branch task/1"),
        "the kept branch is listed: {}",
        both(&resumed)
    );
    assert_eq!(git(&root, &["rev-parse", "task/1"]).trim(), mine, "the user's commit is kept");
    // Task 2's branch held nothing more and is gone.
    assert_eq!(git(&root, &["branch", "--list", "task/2"]), "");

    let clean = run_in(&root, &["clean"]);
    assert_eq!(clean.status.code(), Some(0), "{}", both(&clean));
    assert!(stdout(&clean).contains("kept task/1"), "{}", stdout(&clean));
    assert_eq!(git(&root, &["rev-parse", "task/1"]).trim(), mine, "clean keeps it too");
}

/// Runs one shell worker task (`writes = ["notes/"]`) with `sandbox_mode`, and returns root.
fn shell_task(worker: &str, sandbox_mode: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let plan = toml_task("1", "Notes", &["notes/"], "");
    let (temp, root) = repo_with(&[("README.md", "r\n"), ("plan.toml", &plan)]);
    let script = temp.path().join("worker.sh");
    std::fs::write(&script, worker).unwrap();
    let config = crate::support::shell_worker_config(&script, "")
        + &format!("[sandbox]\nmode = \"{sandbox_mode}\"\n");
    std::fs::write(root.join("breeze.toml"), config).unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "config"]);
    (temp, root)
}

/// `notes/café.txt` spelled in Latin-1: not valid UTF-8.
const LATIN1_NAME: &[u8] = b"notes/caf\xe9.txt";

fn latin1_file_landed_and_checkout_clean(root: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let listed =
        breeze_test_support::git_output(root, &["ls-tree", "-r", "-z", "--name-only", "main"])
            .stdout;
    assert!(
        listed.split(|&b| b == 0).any(|name| name == LATIN1_NAME),
        "the file landed under its own name: {:?}",
        String::from_utf8_lossy(&listed)
    );
    let on_disk = root.join(std::ffi::OsStr::from_bytes(LATIN1_NAME));
    assert_eq!(std::fs::read_to_string(on_disk).unwrap(), "bonjour\n");
    assert_eq!(git(root, &["status", "--porcelain"]), "", "nothing staged as a deletion");
}

#[test]
fn a_file_whose_name_is_not_utf8_left_uncommitted_lands_under_its_own_name() {
    let worker = "cat > /dev/null\nmkdir -p notes\nprintf 'bonjour\\n' > \"$(printf 'notes/caf\\351.txt')\"\nprintf '{\"schema_version\":\"worker-report.v1\",\"status\":\"completed\",\"summary\":\"ok\"}' > \"$BREEZE_OUTPUT\"\n";
    let (_temp, root) = shell_task(worker, "auto");
    let output = run_in(&root, &["run"]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    latin1_file_landed_and_checkout_clean(&root);
}

#[test]
fn a_file_whose_name_is_not_utf8_committed_by_the_worker_reaches_the_checkout() {
    // Unconfined, so the worker's own commit works.
    let worker = "cat > /dev/null\nmkdir -p notes\nprintf 'bonjour\\n' > \"$(printf 'notes/caf\\351.txt')\"\ngit add -A && git -c user.name=W -c user.email=w@x commit -qm notes\nprintf '{\"schema_version\":\"worker-report.v1\",\"status\":\"completed\",\"summary\":\"ok\"}' > \"$BREEZE_OUTPUT\"\n";
    let (_temp, root) = shell_task(worker, "detect");
    let output = run_in(&root, &["run"]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    latin1_file_landed_and_checkout_clean(&root);
}

/// One scripted task writing `src/a.txt`.
fn one_scripted_task() -> (tempfile::TempDir, std::path::PathBuf) {
    let plan = toml_task("1", "Change a", &["src/a.txt"], "");
    repo_with(&[("breeze.toml", SCRIPTED_CONFIG), ("plan.toml", &plan), ("src/a.txt", "a\n")])
}

#[test]
fn a_landing_waits_for_an_index_another_git_process_holds_and_then_lands() {
    let (_temp, root) = one_scripted_task();
    let lock = root.join(".git/index.lock");
    std::fs::write(&lock, "").unwrap();
    let engine = breeze()
        .current_dir(&root)
        .args(["run"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    std::fs::remove_file(&lock).unwrap();
    let output = engine.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert_eq!(git(&root, &["status", "--porcelain"]), "", "the checkout is clean");
    assert_eq!(
        git(&root, &["show", "HEAD:src/a.txt"]),
        std::fs::read_to_string(root.join("src/a.txt")).unwrap()
    );
}

#[test]
fn a_landing_that_cannot_get_the_index_leaves_the_checkout_as_it_found_it() {
    let (_temp, root) = one_scripted_task();
    let before = git(&root, &["rev-parse", "main"]);
    std::fs::write(root.join(".git/index.lock"), "").unwrap();
    let output = run_in(&root, &["run"]);
    let text = both(&output);
    assert_eq!(output.status.code(), Some(3), "stopped resumably: {text}");
    assert!(
        text.contains("index.lock") && text.contains("locked by another git process"),
        "{text}"
    );
    assert!(!text.contains("uncommitted changes"), "breeze does not blame its own files: {text}");
    assert_eq!(std::fs::read_to_string(root.join("src/a.txt")).unwrap(), "a\n", "untouched");
    assert_eq!(git(&root, &["rev-parse", "main"]), before);
    std::fs::remove_file(root.join(".git/index.lock")).unwrap();
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
}

#[test]
fn task_ids_that_look_alike_as_file_names_keep_their_own_run_files() {
    let ids = ["auth/login", "auth_login", ".", ".."];
    let plan: String = ids
        .iter()
        .enumerate()
        .map(|(i, id)| toml_task(id, &format!("Task {id}"), &[&format!("f{i}.txt")], ""))
        .collect();
    let (_temp, root) = repo_with(&[("breeze.toml", SCRIPTED_CONFIG), ("plan.toml", &plan)]);
    let output = run_in(&root, &["run"]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let status = status_json(&root);
    let run_dir = root.join(".breeze/runs").join(status["run_id"].as_str().unwrap());
    let contracts: Vec<String> = std::fs::read_dir(run_dir.join("contracts"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(contracts.len(), ids.len(), "one contract per task");
    for id in ids {
        assert_eq!(task_state(&status, id), "landed");
        let quoted = serde_json::to_string(id).unwrap();
        assert_eq!(
            contracts.iter().filter(|c| c.contains(&format!("\"task_id\": {quoted}"))).count(),
            1,
            "task {id} has its own contract"
        );
        // Each worker was briefed on its own task.
        let logs = run_in(&root, &["logs", id]);
        assert_eq!(logs.status.code(), Some(0), "{}", both(&logs));
    }
}

#[test]
fn an_untracked_plans_md_is_warned_about_and_landed_tasks_are_not_run_twice() {
    let (_temp, root) = repo_with(&[("breeze.toml", SCRIPTED_CONFIG), ("src/a.txt", "a\n")]);
    let plans = "| Task | Content | DoD | Writes | Depends | Status |\n|---|---|---|---|---|---|\n\
                 | 1 | Touch a | a | `src/a.txt` | - | cc:todo |\n\
                 | 2 | Touch b | b | `src/b.txt` | - | cc:todo |\n";
    write(&root, "Plans.md", plans); // never added to git
    let first = run_in(&root, &["run", "Plans.md"]);
    assert_eq!(first.status.code(), Some(0), "{}", both(&first));
    assert!(stdout(&first).contains("is not tracked by git"), "{}", stdout(&first));
    assert_eq!(std::fs::read_to_string(root.join("Plans.md")).unwrap(), plans, "left alone");
    let after_first = git(&root, &["rev-parse", "main"]);

    let second = run_in(&root, &["run", "Plans.md"]);
    assert_eq!(second.status.code(), Some(0), "{}", both(&second));
    assert!(stdout(&second).contains("task 1 is already on main"), "{}", stdout(&second));
    assert_eq!(git(&root, &["rev-parse", "main"]), after_first, "nothing landed a second time");
    let landed = git(&root, &["log", "--format=%(trailers:key=Breeze-Task,valueonly)", "main"]);
    assert_eq!(landed.lines().filter(|l| *l == "1").count(), 1, "{landed}");
    let status = status_json(&root);
    assert_eq!(task_state(&status, "1"), "landed");
    assert_eq!(task_state(&status, "2"), "landed");
}

#[test]
fn a_task_that_replaces_a_tracked_file_with_a_directory_lands() {
    let worker = "cat > /dev/null\nrm docs/guide.md\nmkdir -p docs/guide.md\nprintf '# guide\\n' > docs/guide.md/index.md\nprintf '{\"schema_version\":\"worker-report.v1\",\"status\":\"completed\",\"summary\":\"ok\"}' > \"$BREEZE_OUTPUT\"\n";
    let plan = toml_task("1", "Split the guide", &["docs/"], "");
    let (temp, root) =
        repo_with(&[("README.md", "r\n"), ("docs/guide.md", "guide\n"), ("plan.toml", &plan)]);
    let script = temp.path().join("worker.sh");
    std::fs::write(&script, worker).unwrap();
    std::fs::write(root.join("breeze.toml"), crate::support::shell_worker_config(&script, ""))
        .unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "config"]);
    let output = run_in(&root, &["run"]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert_eq!(git(&root, &["show", "main:docs/guide.md/index.md"]), "# guide\n");
    assert_eq!(std::fs::read_to_string(root.join("docs/guide.md/index.md")).unwrap(), "# guide\n");
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
}

#[test]
fn an_approval_breeze_normalized_says_so_in_the_trailer_and_the_status() {
    let reviewer = "cat > /dev/null\necho '{\"schema_version\":\"review-result.v1\",\"verdict\":\"REQUEST_CHANGES\",\"gaps\":[{\"severity\":\"minor\",\"location\":\"a.txt:1\",\"issue\":\"naming\",\"suggestion\":\"rename\"}]}'\n";
    let plan = toml_task("1", "Change a", &["a.txt"], "");
    let (temp, root) = repo_with(&[("README.md", "r\n"), ("plan.toml", &plan)]);
    let script = temp.path().join("reviewer.sh");
    std::fs::write(&script, reviewer).unwrap();
    let config = format!(
        "[roles.worker]\nbackend = \"scripted\"\n[roles.reviewer]\nbackend = \"command\"\ncommand = [\"sh\", \"{}\"]\n[roles.advisor]\nbackend = \"scripted\"\n",
        script.display()
    );
    std::fs::write(root.join("breeze.toml"), config).unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "config"]);
    let output = run_in(&root, &["run"]);
    assert_eq!(output.status.code(), Some(0), "minor gaps only land: {}", both(&output));
    let trailer =
        git(&root, &["log", "-1", "--format=%(trailers:key=Breeze-Review,valueonly)", "main"]);
    assert_eq!(
        trailer.trim(),
        "APPROVE (round 1; reviewer said REQUEST_CHANGES, minor gaps only; normalized by breeze)"
    );
    let status = status_json(&root);
    assert_eq!(status["tasks"][0]["review"], trailer.trim());
    let table = stdout(&run_in(&root, &["status"]));
    assert!(table.contains("normalized by breeze"), "{table}");
}

#[test]
fn escape_sequences_from_a_role_are_shown_escaped_in_run_status_report_and_logs() {
    // The worker fails with a fake green "landed" line and a window-title change on stderr
    // and in its report; the reviewer (a shell, failing) writes the same to stderr.
    let worker = "cat > /dev/null\nprintf '\\033[32m\\342\\227\\217 [1] landed abc1234\\033[0m\\n\\033]0;pwned\\007' >&2\nprintf '{\"schema_version\":\"worker-report.v1\",\"status\":\"failed\",\"summary\":\"\\\\u001b[32mok\",\"escalation_reason\":\"\\\\u001b]0;pwned\\\\u0007 gave up\"}' > \"$BREEZE_OUTPUT\"\nexit 0\n";
    let plan = toml_task("1", "Fails", &["a.txt"], "");
    let (temp, root) = repo_with(&[("README.md", "r\n"), ("plan.toml", &plan)]);
    let script = temp.path().join("worker.sh");
    std::fs::write(&script, worker).unwrap();
    std::fs::write(root.join("breeze.toml"), crate::support::shell_worker_config(&script, ""))
        .unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "config"]);
    let output = run_in(&root, &["run"]);
    assert_eq!(output.status.code(), Some(1), "{}", both(&output));
    let status = run_in(&root, &["status"]);
    let report = run_in(&root, &["report"]);
    let logs = run_in(&root, &["logs", "1"]);
    for (what, out) in [("run", &output), ("status", &status), ("report", &report), ("logs", &logs)]
    {
        for stream in [&out.stdout, &out.stderr] {
            assert!(
                !stream.contains(&0x1b) && !stream.contains(&0x07),
                "{what} printed raw control characters: {}",
                both(out)
            );
        }
    }
    assert!(stdout(&status).contains("\\x1b]0;pwned\\x07"), "shown escaped: {}", stdout(&status));
    assert!(stdout(&logs).contains("\\x1b[32m"), "{}", stdout(&logs));
}

#[test]
fn a_plans_md_run_resumed_after_landings_still_reports_its_landed_tasks() {
    let plans = "| Task | Content | DoD | Writes | Depends | Status |\n|---|---|---|---|---|---|\n\
                 | 1 | Touch a | a | `src/a.txt` | - | cc:todo |\n\
                 | 2 | Touch b | b | `src/b.txt` | - | cc:todo |\n";
    let (_temp, root) = repo_with(&[
        ("breeze.toml", SCRIPTED_CONFIG),
        ("Plans.md", plans),
        ("src/a.txt", "a\n"),
        ("src/b.txt", "b\n"),
    ]);
    write(&root, "src/b.txt", "b\nmine\n");
    let first = run_in(&root, &["run", "Plans.md"]);
    assert_eq!(first.status.code(), Some(3), "{}", both(&first));
    assert!(
        std::fs::read_to_string(root.join("Plans.md"))
            .unwrap()
            .contains("| 1 | Touch a | a | `src/a.txt` | - | cc:done |")
    );
    git(&root, &["stash"]);
    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    let status = status_json(&root);
    assert_eq!(status["tasks"].as_array().unwrap().len(), 2, "{status}");
    assert_eq!(task_state(&status, "1"), "landed");
    assert_eq!(task_state(&status, "2"), "landed");
    let report = stdout(&run_in(&root, &["report"]));
    assert!(report.contains("| 1 | Touch a | landed"), "{report}");
    let clean = stdout(&run_in(&root, &["clean", "--dry-run"]));
    assert!(!clean.contains("never landed"), "{clean}");
    assert_eq!(git(&root, &["branch", "--list", "task/*"]), "", "landed branches are gone");
}

#[test]
fn abort_commits_what_the_lane_holds_says_where_it_is_and_refuses_to_abort_a_finished_run() {
    let (temp, root) = repo_with(&[("README.md", "r\n")]);
    let signal = temp.path().join("signal");
    std::fs::create_dir(&signal).unwrap();
    let worker = format!(
        "cat > /dev/null\necho half-done > a.txt\ntouch {started}\nsleep 300\n",
        started = signal.join("started").display()
    );
    let script = temp.path().join("worker.sh");
    std::fs::write(&script, worker).unwrap();
    let config = crate::support::shell_worker_config(&script, "")
        + &format!("[sandbox]\nwritable = [{:?}]\n", signal.display().to_string());
    std::fs::write(root.join("breeze.toml"), config).unwrap();
    std::fs::write(root.join("plan.toml"), crate::support::one_task_plan()).unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "config"]);
    let engine = breeze()
        .current_dir(&root)
        .args(["run"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !signal.join("started").exists() {
        assert!(std::time::Instant::now() < deadline, "the worker never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let aborted = run_in(&root, &["abort"]);
    assert_eq!(aborted.status.code(), Some(0), "{}", both(&aborted));
    let engine = engine.wait_with_output().unwrap();
    assert!(!stdout(&engine).contains("continue with `breeze resume`"), "{}", both(&engine));

    let status = status_json(&root);
    assert_eq!(status["state"], "aborted");
    let reason = status["tasks"][0]["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("on branch `task/1`"), "{reason}");
    assert_eq!(
        git(&root, &["show", "task/1:a.txt"]),
        "half-done\n",
        "the lane's work is on the branch"
    );

    // clean removes the (now clean) lane and keeps the branch with the work, without --force.
    let clean = run_in(&root, &["clean"]);
    assert_eq!(clean.status.code(), Some(0), "{}", both(&clean));
    assert!(stdout(&clean).contains("kept task/1"), "{}", stdout(&clean));
    assert_eq!(git(&root, &["show", "task/1:a.txt"]), "half-done\n");

    let again = run_in(&root, &["abort"]);
    assert_eq!(again.status.code(), Some(0), "{}", both(&again));
    let text = stdout(&again);
    assert!(
        text.contains("already finished (aborted)") || text.contains("there is nothing to abort"),
        "{text}"
    );

    let (_t2, done) = one_scripted_task();
    assert_eq!(run_in(&done, &["run"]).status.code(), Some(0));
    let finished = run_in(&done, &["abort"]);
    assert!(
        stdout(&finished).contains("already finished (succeeded); there is nothing to abort"),
        "{}",
        both(&finished)
    );
    assert_eq!(status_json(&done)["state"], "succeeded", "a finished run stays as it was");
}

#[test]
fn a_lane_left_dirty_is_kept_and_listed_and_clean_handles_it_and_the_verify_worktree() {
    // The worker leaves a file and puts its lane in the middle of a merge (a `MERGE_HEAD` in
    // the lane's admin folder, which only an unconfined worker can write; its own git works
    // on its private git directory): breeze cannot commit it (the attempt fails), so the
    // lane ends the run dirty. One lane: without confinement breeze cannot tell another
    // task's landing from a role's change to the user's checkout.
    // The fine task lands first (the verify worktree is made), then the wreck takes the lane.
    let plan = toml_task("1", "Fine", &["b.txt"], "") + &toml_task("2", "Wreck", &["a.txt"], "");
    let (temp, root) = repo_with(&[("README.md", "r\n"), ("plan.toml", &plan)]);
    let root = std::fs::canonicalize(root).unwrap();
    let worker = format!(
        "cat > /dev/null\necho stray > a.txt\ntouch \"{}/.git/worktrees/$(basename \"$PWD\")/MERGE_HEAD\"\nprintf '{{\"schema_version\":\"worker-report.v1\",\"status\":\"completed\",\"summary\":\"ok\"}}' > \"$BREEZE_OUTPUT\"\n",
        root.display()
    );
    let script = temp.path().join("worker.sh");
    std::fs::write(&script, worker).unwrap();
    let config = format!(
        "[run]\nmax_workers = 1\n[roles.worker]\nbackend = \"command\"\ncommand = [\"sh\", \"-c\", \"if [ $BREEZE_TASK_ID = 2 ]; then exec sh {}; fi; cat >/dev/null; echo ok > b.txt; printf '{{\\\"schema_version\\\":\\\"worker-report.v1\\\",\\\"status\\\":\\\"completed\\\",\\\"summary\\\":\\\"ok\\\"}}' > $BREEZE_OUTPUT\"]\n[roles.reviewer]\nbackend = \"scripted\"\n[roles.advisor]\nbackend = \"scripted\"\n[land]\nverify = [\"true\"]\n[sandbox]\nmode = \"detect\"\n",
        script.display()
    );
    std::fs::write(root.join("breeze.toml"), config).unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "config"]);
    let output = run_in(&root, &["run"]);
    assert_eq!(output.status.code(), Some(1), "{}", both(&output));
    let text = stdout(&output);
    assert!(text.contains("⚑ kept lane") && text.contains("in the middle of a merge"), "{text}");
    assert!(
        !crate::support::lane(&root, "integration").exists(),
        "the verify worktree is removed at the end of the run"
    );

    let clean = run_in(&root, &["clean"]);
    assert_eq!(clean.status.code(), Some(0), "{}", both(&clean));
    assert!(stdout(&clean).contains("uncommitted changes"), "{}", stdout(&clean));
    let forced = run_in(&root, &["clean", "--force"]);
    assert_eq!(forced.status.code(), Some(0), "{}", both(&forced));
    let again = run_in(&root, &["clean", "--force"]);
    assert_eq!(again.status.code(), Some(0), "{}", both(&again));
    assert_eq!(git(&root, &["worktree", "list", "--porcelain"]).matches("worktree ").count(), 1);
}

#[test]
fn a_lane_folder_an_interrupted_clean_left_behind_is_still_seen() {
    // A run that stops (a deferred landing) keeps its lane; the user aborts it.
    let (_temp, root) = one_scripted_task();
    write(&root, "src/a.txt", "mine\n");
    assert_eq!(run_in(&root, &["run"]).status.code(), Some(3));
    assert_eq!(run_in(&root, &["abort"]).status.code(), Some(0));
    // A `clean --force` killed half-way: git forgot the lane, its folder is still there.
    let lane = crate::support::lane(&root, "lane-1");
    assert!(lane.is_dir());
    let _ = std::fs::remove_dir_all(root.join(".git/worktrees/lane-1"));
    git(&root, &["worktree", "prune"]);
    let clean = run_in(&root, &["clean"]);
    assert_eq!(clean.status.code(), Some(0), "{}", both(&clean));
    assert!(stdout(&clean).contains("no longer a git worktree"), "{}", stdout(&clean));
    assert!(lane.exists());
    let forced = run_in(&root, &["clean", "--force"]);
    assert_eq!(forced.status.code(), Some(0), "{}", both(&forced));
    assert!(!lane.exists(), "{}", stdout(&forced));
}

#[test]
fn main_renamed_mid_run_stops_resumably_and_says_so() {
    let plan = toml_task("1", "Slow", &["a.txt"], "[task.sim]\ndelay_ms = 1500")
        + &toml_task("2", "After", &["b.txt"], "depends_on = [\"1\"]");
    let (_temp, root) = repo_with(&[("breeze.toml", SCRIPTED_CONFIG), ("plan.toml", &plan)]);
    let engine = breeze()
        .current_dir(&root)
        .args(["run"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    git(&root, &["branch", "-m", "main", "trunk"]);
    let output = engine.wait_with_output().unwrap();
    let text = both(&output);
    assert_eq!(output.status.code(), Some(3), "stopped resumably: {text}");
    assert!(text.contains("branch `main` does not exist"), "{text}");
    assert!(text.contains("breeze resume"), "{text}");
    let status = status_json(&root);
    for task in status["tasks"].as_array().unwrap() {
        assert_ne!(task["state"], "failed", "{task}");
    }
    git(&root, &["branch", "-m", "trunk", "main"]);
    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    assert_eq!(task_state(&status_json(&root), "2"), "landed");
}

/// A repository whose worker is scripted and whose reviewer is `sh REVIEWER`, which fails
/// while the file `fail` next to it exists and otherwise approves after `delay` seconds.
fn with_shell_reviewer(delay: &str) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let plan = toml_task("1", "Change a", &["a.txt"], "");
    let (temp, root) = repo_with(&[("README.md", "r\n"), ("plan.toml", &plan)]);
    let fail = temp.path().join("fail");
    let reviewer = temp.path().join("reviewer.sh");
    std::fs::write(
        &reviewer,
        format!(
            "cat > /dev/null\nif [ -f {fail} ]; then echo 'reviewer broke' >&2; exit 1; fi\nsleep {delay}\necho '{{\"schema_version\":\"review-result.v1\",\"verdict\":\"APPROVE\",\"gaps\":[]}}'\n",
            fail = fail.display()
        ),
    )
    .unwrap();
    let config = format!(
        "[roles.worker]\nbackend = \"scripted\"\n[roles.reviewer]\nbackend = \"command\"\ncommand = [\"sh\", \"{}\"]\n[roles.advisor]\nbackend = \"scripted\"\n",
        reviewer.display()
    );
    std::fs::write(root.join("breeze.toml"), config).unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "config"]);
    (temp, root, fail)
}

fn one_attempt_one_round(root: &std::path::Path) {
    let status = status_json(root);
    let task = &status["tasks"][0];
    assert_eq!(task["state"], "landed", "{task}");
    assert_eq!(task["attempts"], 1, "the worker was not run again: {task}");
    assert_eq!(task["rounds"], 1, "one verdict, one round: {task}");
    let trailer =
        git(root, &["log", "-1", "--format=%(trailers:key=Breeze-Review,valueonly)", "main"]);
    assert_eq!(trailer.trim(), "APPROVE (round 1)");
}

#[test]
fn a_task_stopped_while_waiting_for_its_review_is_reviewed_on_resume_not_redone() {
    let (_temp, root, _fail) = with_shell_reviewer("30");
    let engine = breeze()
        .current_dir(&root)
        .args(["run"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !std::fs::read_dir(root.join(".breeze/runs"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|run| run.path().join("logs/1.reviewer.round-1.try-1.log.stdout").exists())
    {
        assert!(std::time::Instant::now() < deadline, "the reviewer never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::process::Command::new("kill").args(["-INT", &engine.id().to_string()]).status().unwrap();
    let output = engine.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", both(&output));
    // The next review answers at once.
    let reviewer = root.parent().unwrap().join("reviewer.sh");
    let text = std::fs::read_to_string(&reviewer).unwrap().replace("sleep 30", "sleep 0");
    std::fs::write(&reviewer, text).unwrap();
    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    one_attempt_one_round(&root);
}

#[test]
fn after_a_failing_reviewer_resume_reviews_the_same_work_in_the_same_round() {
    let (_temp, root, fail) = with_shell_reviewer("0");
    std::fs::write(&fail, "").unwrap();
    let output = run_in(&root, &["run"]);
    assert_eq!(output.status.code(), Some(3), "{}", both(&output));
    assert!(stdout(&output).contains("the reviewer failed"), "{}", both(&output));
    std::fs::remove_file(&fail).unwrap();
    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    one_attempt_one_round(&root);
}

#[test]
fn errors_point_at_what_the_user_can_fix() {
    // `.breeze` that is a file, not a folder: not "another run is active".
    let (_t1, root) = one_scripted_task();
    std::fs::write(root.join(".breeze"), "oops").unwrap();
    let out = run_in(&root, &["run"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    let text = both(&out);
    assert!(!text.contains("another breeze run") && text.contains("must be a folder"), "{text}");

    // run.main_branch that git refuses: named as the config key, no internal API.
    let (_t2, root) = one_scripted_task();
    let config = SCRIPTED_CONFIG.replace("[run]\n", "[run]\nmain_branch = \"no such\"\n");
    std::fs::write(root.join("breeze.toml"), config).unwrap();
    let out = run_in(&root, &["run"]);
    let text = both(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("run.main_branch") && !text.contains("breeze_git"), "{text}");

    // worktree.include outside the repository: a config error for plan and run alike.
    let (_t3, root) = one_scripted_task();
    let config = std::fs::read_to_string(root.join("breeze.toml")).unwrap();
    std::fs::write(
        root.join("breeze.toml"),
        format!("{config}\n[worktree]\ninclude = [\"../secrets/*\"]\n"),
    )
    .unwrap();
    for args in [&["plan"][..], &["run"][..]] {
        let out = run_in(&root, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", both(&out));
        assert!(both(&out).contains("points outside the repository"), "{}", both(&out));
    }

    // plan --max-workers 0 is refused as run refuses it.
    let (_t4, root) = one_scripted_task();
    let out = run_in(&root, &["plan", "--max-workers", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(both(&out).contains("out of range"), "{}", both(&out));
}

#[test]
fn a_damaged_run_json_is_given_up_by_abort_and_report_agrees_with_status() {
    let (_temp, root) = one_scripted_task();
    assert_eq!(run_in(&root, &["run"]).status.code(), Some(0));
    let run_dir =
        std::fs::read_dir(root.join(".breeze/runs")).unwrap().next().unwrap().unwrap().path();
    // A run left "running" by a killed engine: report says interrupted, like status.
    let snapshot = std::fs::read_to_string(run_dir.join("run.json")).unwrap();
    std::fs::write(
        run_dir.join("run.json"),
        snapshot.replace("\"state\": \"succeeded\"", "\"state\": \"running\""),
    )
    .unwrap();
    assert!(stdout(&run_in(&root, &["report"])).contains("- state: **interrupted**"));
    assert_eq!(status_json(&root)["state"], "interrupted");

    std::fs::write(run_dir.join("run.json"), "{ not json").unwrap();
    let status = run_in(&root, &["status"]);
    assert_eq!(status.status.code(), Some(1), "{}", both(&status));
    assert!(both(&status).contains("breeze abort"), "{}", both(&status));
    let aborted = run_in(&root, &["abort"]);
    assert_eq!(aborted.status.code(), Some(0), "{}", both(&aborted));
    assert!(stdout(&aborted).contains("given up"), "{}", both(&aborted));
    // A new run can start.
    write(&root, "plan.toml", &toml_task("2", "Next", &["src/b.txt"], ""));
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "next plan"]);
    let next = run_in(&root, &["run"]);
    assert_eq!(next.status.code(), Some(0), "{}", both(&next));
}

#[test]
fn with_run_hooks_the_repository_hooks_judge_each_landing_before_main_moves() {
    let (temp, root) = one_scripted_task();
    // Hooks are confined like verify: the hook's state lives in a folder breeze.toml lets
    // it write.
    let state = temp.path().join("hook-state");
    std::fs::create_dir(&state).unwrap();
    let marker = state.join("pre-commit-failed-once");
    let hooks = root.join(".git/hooks");
    // pre-commit: sees the landing staged; fails the first landing like a linter would.
    std::fs::write(
        hooks.join("pre-commit"),
        format!(
            "#!/bin/sh\ngit diff --cached --name-only | grep -q src/a.txt || {{ echo 'nothing staged' >&2; exit 2; }}\nif [ ! -f {m} ]; then touch {m}; echo 'lint: trailing whitespace in src/a.txt' >&2; exit 1; fi\n",
            m = marker.display()
        ),
    )
    .unwrap();
    // commit-msg: adds a trailer to the message, as sign-off hooks do — through a temporary
    // file renamed over the message, as `git interpret-trailers --in-place` does.
    std::fs::write(
        hooks.join("commit-msg"),
        "#!/bin/sh\ngit interpret-trailers --in-place --trailer 'Signed-off-by: Hook <hook@example.com>' \"$1\"\n",
    )
    .unwrap();
    for hook in ["pre-commit", "commit-msg"] {
        std::process::Command::new("chmod").arg("+x").arg(hooks.join(hook)).status().unwrap();
    }
    let config = std::fs::read_to_string(root.join("breeze.toml")).unwrap();
    std::fs::write(
        root.join("breeze.toml"),
        format!(
            "{config}\n[land]\nrun_hooks = true\n[sandbox]\nwritable = [\"{}\"]\n",
            state.display()
        ),
    )
    .unwrap();
    git(&root, &["commit", "--no-verify", "-qam", "run hooks"]);

    let output = run_in(&root, &["run"]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert!(marker.exists(), "the pre-commit hook ran");
    let status = status_json(&root);
    let run_dir = root.join(".breeze/runs").join(status["run_id"].as_str().unwrap());
    let second = std::fs::read_to_string(run_dir.join("io/1.worker.2.input.json")).unwrap();
    assert!(second.contains("lint: trailing whitespace"), "the worker was told: {second}");
    let message = git(&root, &["log", "-1", "--format=%B", "main"]);
    assert!(message.contains("Signed-off-by: Hook"), "{message}");
    assert!(message.contains("Breeze-Task: 1"), "{message}");
}
