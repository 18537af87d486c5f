//! Roles that misbehave: a shell worker that writes the user's checkout (by absolute path),
//! the lanes' folder (by `cd ..`), another lane, `.git/config` and `.git/hooks`, moves main onto its own
//! commit, leaves a `setsid` daemon and turns `$BREEZE_OUTPUT` into a link to `/dev/zero`;
//! a reviewer that writes. With kernel confinement every attack is refused and the run
//! lands only reviewed work; without it, breeze detects the changes and stops the run
//! before any of it lands. Checked with the git CLI and the file system.

use std::path::Path;

use crate::support::{both, breeze, git, repo_with, status_json, stderr, stdout, toml_task};

/// The attacker: attacks on its first attempt, then does its task and reports.
fn attacker(root: &Path) -> String {
    format!(
        r#"#!/bin/sh
cat > /dev/null
root={root}
lanes={lanes}
if [ "$BREEZE_ATTEMPT" = 1 ]; then
  # Wait for the other lane to exist, then write into it.
  for i in $(seq 100); do [ -d "$lanes/lane-2" ] && break; sleep 0.05; done
  echo hijacked > "$lanes/lane-2/b.txt"
  echo evil > "$root/README.md"
  (cd .. && echo evil > planted.txt)
  echo evil > "$root/../next-to-the-repo.txt"
  # A commit of its own (inside its write set, so no gate would notice) moved onto main:
  # its git commits into its private git directory, so main is moved in the shared
  # repository by path.
  echo unreviewed > a.txt
  git add a.txt && git -c user.name=Evil -c user.email=e@x commit -qm unreviewed
  git --git-dir="$root/.git" fetch -q --update-head-ok "$PWD" +HEAD:refs/heads/main
  printf '[core]\n\tfsmonitor = "touch $root/../fsmonitor-ran"\n' >> "$root/.git/config"
  printf '#!/bin/sh\ntouch %s/../hook-ran\n' "$root" > "$root/.git/hooks/pre-commit"
  chmod +x "$root/.git/hooks/pre-commit"
  setsid sh -c 'sleep 300' </dev/null >/dev/null 2>&1 &
  echo $! > "$TMPDIR/daemon.pid"
  touch "/dev/shm/{shm}"
fi
echo work > a.txt
printf '{{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}}' > "$BREEZE_OUTPUT"
"#,
        root = root.display(),
        lanes = crate::support::worktree_folder(root).display(),
        shm = shm_name(root, "worker"),
    )
}

/// A name in `/dev/shm` that a role of the test repository at `root` tries to create.
fn shm_name(root: &Path, who: &str) -> String {
    let temp = root.parent().and_then(Path::file_name).unwrap_or_default();
    format!("breeze-e2e-{}-{who}", temp.to_string_lossy())
}

/// A worker that does its task and nothing else.
const GOOD_WORKER: &str = r#"#!/bin/sh
cat > /dev/null
sleep 1
echo "$BREEZE_TASK_ID" > "b.txt"
printf '{"schema_version":"worker-report.v1","status":"completed","summary":"ok"}' > "$BREEZE_OUTPUT"
"#;

/// A reviewer that tries to write, then approves.
fn writing_reviewer(root: &Path) -> String {
    format!(
        r#"#!/bin/sh
cat > /dev/null
echo reviewed > reviewer-was-here.txt 2>/dev/null
echo reviewed > {root}/reviewer-was-here.txt 2>/dev/null
touch "/dev/shm/{shm}" 2>/dev/null
echo '{{"schema_version":"review-result.v1","verdict":"APPROVE","gaps":[]}}'
"#,
        root = root.display(),
        shm = shm_name(root, "reviewer"),
    )
}

/// A reviewer that approves and writes nothing.
const QUIET_REVIEWER: &str = r#"#!/bin/sh
cat > /dev/null
echo '{"schema_version":"review-result.v1","verdict":"APPROVE","gaps":[]}'
"#;

fn setup(mode: &str, reviewer_writes: bool) -> (tempfile::TempDir, std::path::PathBuf) {
    let plan = toml_task("1", "Attack", &["a.txt"], "") + &toml_task("2", "Honest", &["b.txt"], "");
    let (temp, root) = repo_with(&[("README.md", "mine\n"), ("plan.toml", &plan)]);
    let root = std::fs::canonicalize(&root).unwrap();
    crate::support::write(
        &root,
        "breeze.toml",
        &crate::support::shell_roles_config(&root, mode, 2),
    );
    crate::support::write(&root, "roles/1.sh", &attacker(&root));
    crate::support::write(&root, "roles/2.sh", GOOD_WORKER);
    let reviewer = if reviewer_writes { writing_reviewer(&root) } else { QUIET_REVIEWER.into() };
    crate::support::write(&root, "roles/reviewer.sh", &reviewer);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "roles"]);
    (temp, root)
}

fn landed_tasks(root: &Path) -> Vec<String> {
    git(root, &["log", "--format=%(trailers:key=Breeze-Task,valueonly)", "main"])
        .lines()
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}

fn nothing_escaped(root: &Path) {
    assert_eq!(std::fs::read_to_string(root.join("README.md")).unwrap(), "mine\n");
    assert!(!root.join("planted.txt").exists());
    let lanes = crate::support::worktree_folder(root);
    assert!(!lanes.join("planted.txt").exists(), "the worker wrote beside its lane");
    assert!(!root.join("reviewer-was-here.txt").exists());
    assert!(!root.join("../next-to-the-repo.txt").exists());
    assert!(!git(root, &["config", "--list", "--local"]).contains("fsmonitor"));
    assert!(!root.join(".git/hooks/pre-commit").exists());
    assert!(!root.join("../fsmonitor-ran").exists(), "a planted fsmonitor ran");
    assert!(!root.join("../hook-ran").exists(), "a planted hook ran");
    // /dev/shm is the role's own tmpfs, or not writable: never the machine's.
    for who in ["worker", "reviewer"] {
        let shm = Path::new("/dev/shm").join(shm_name(root, who));
        assert!(!shm.exists(), "the {who} wrote {}", shm.display());
    }
}

fn no_daemon_left(root: &Path) {
    let leftovers = std::process::Command::new("pgrep").args(["-f", "sleep 300"]).output().unwrap();
    for pid in String::from_utf8_lossy(&leftovers.stdout).lines() {
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let text = String::from_utf8_lossy(&environ);
        assert!(
            !text.contains(&root.display().to_string()),
            "a setsid daemon of the run outlived it (pid {pid})"
        );
    }
}

#[test]
fn confined_roles_cannot_write_outside_their_lane_and_only_reviewed_work_lands() {
    if !crate::support::landlock_or_skip() {
        return;
    }
    let (_temp, root) = setup("require", true);
    let start = git(&root, &["rev-parse", "main"]);
    let output = breeze().current_dir(&root).args(["run", "plan.toml"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert!(stdout(&output).contains("roles confined by the kernel"), "{}", both(&output));

    nothing_escaped(&root);
    no_daemon_left(&root);
    // main holds exactly the two landings on top of the start, no worker commit.
    let history = git(&root, &["log", "--format=%an %s", &format!("{}..main", start.trim())]);
    assert_eq!(history.lines().count(), 2, "{history}");
    assert!(!history.contains("Evil") && !history.contains("unreviewed"), "{history}");
    assert!(
        !git(&root, &["log", "--all", "--format=%an"]).contains("Evil"),
        "the worker's own commit was refused"
    );
    let mut landed = landed_tasks(&root);
    landed.sort();
    assert_eq!(landed, ["1", "2"]);
    // The honest task's file is its own, not the attacker's.
    assert_eq!(git(&root, &["show", "main:b.txt"]), "2\n");
    assert_eq!(git(&root, &["show", "main:a.txt"]), "work\n");
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
    git(&root, &["fsck", "--strict"]);
    let status = status_json(&root);
    assert_eq!(status["containment"]["kernel"], true, "{status}");
}

#[test]
fn without_kernel_confinement_escapes_are_detected_and_the_run_stops_before_they_land() {
    let (_temp, root) = setup("detect", false);
    let start = git(&root, &["rev-parse", "main"]).trim().to_string();
    let output = breeze().current_dir(&root).args(["run", "plan.toml"]).output().unwrap();
    let text = both(&output);
    assert_eq!(output.status.code(), Some(3), "stopped resumably: {text}");
    assert!(stdout(&output).contains("NO kernel confinement"), "{text}");
    for named in ["`README.md` in your checkout", "`.git/config`", "`.git/hooks/pre-commit`"] {
        assert!(text.contains(named), "{named} is named: {text}");
    }
    assert!(text.contains("refs/heads/main was moved to"), "{text}");
    assert!(text.contains("breeze resume"), "{text}");
    assert!(!landed_tasks(&root).contains(&"1".to_string()), "the attacker did not land");
    assert!(!root.join("../fsmonitor-ran").exists(), "breeze's own git never ran the fsmonitor");
    assert!(!root.join("../hook-ran").exists(), "breeze's own git never ran the hook");
    no_daemon_left(&root);
    // Unconfined, the worker's file reached the machine's /dev/shm.
    let _ = std::fs::remove_file(Path::new("/dev/shm").join(shm_name(&root, "worker")));

    // The user undoes what the role did and resumes: the attack is not repeated (attempt 2),
    // and everything lands on the main the user restored.
    std::fs::write(root.join("README.md"), "mine\n").unwrap();
    let _ = std::fs::remove_file(crate::support::worktree_folder(&root).join("planted.txt"));
    let _ = std::fs::remove_file(root.join("reviewer-was-here.txt"));
    git(&root, &["config", "--unset", "core.fsmonitor"]);
    std::fs::remove_file(root.join(".git/hooks/pre-commit")).unwrap();
    git(&root, &["update-ref", "refs/heads/main", &start]);
    git(&root, &["checkout", "-q", "--", "."]);
    let resumed = breeze().current_dir(&root).args(["resume"]).output().unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    let mut landed = landed_tasks(&root);
    landed.sort();
    assert_eq!(landed, ["1", "2"]);
    assert_eq!(git(&root, &["show", "main:b.txt"]), "2\n");
    assert_eq!(git(&root, &["show", "main:a.txt"]), "work\n", "reviewed work, not the attack");
    assert!(
        !git(&root, &["log", "--format=%an", "main"]).contains("Evil"),
        "the unreviewed commit is not on main"
    );
}

#[test]
fn a_result_file_that_is_a_link_to_dev_zero_or_a_huge_sparse_file_is_refused_not_read() {
    let worker = r#"#!/bin/sh
cat > /dev/null
echo work > a.txt
if [ "$BREEZE_ATTEMPT" = 1 ]; then
  ln -s /dev/zero "$BREEZE_OUTPUT"
else
  truncate -s 2G "$BREEZE_OUTPUT"
fi
"#;
    let (temp, root) = repo_with(&[("README.md", "r\n")]);
    let script = temp.path().join("worker.sh");
    std::fs::write(&script, worker).unwrap();
    let config = crate::support::shell_worker_config(&script, "");
    std::fs::write(root.join("breeze.toml"), config).unwrap();
    std::fs::write(root.join("plan.toml"), crate::support::one_task_plan()).unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "config"]);
    let output = breeze().current_dir(&root).args(["run"]).output().unwrap();
    let text = both(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("is not a regular file (a symbolic link)"), "{text}");
    assert!(text.contains("2147483648 bytes, more than the"), "{text}");
    assert_eq!(status_json(&root)["tasks"][0]["state"], "escalated");
}

/// A project command that writes its own checkout, tries the user's checkout, `$HOME` and
/// `~/.cache`, reads its checkout's git and tries to write a ref, and prints what worked.
/// `extra` runs last and decides the exit status.
fn probing_command(name: &str, root: &Path, extra: &str) -> String {
    format!(
        "mkdir -p .marks && echo {name} > .marks/{name} && echo {name}-own-ok; \
         echo x > {root}/{name}-escaped.txt && echo {name}-escaped-checkout; \
         echo x > $HOME/{name}-escaped.txt && echo {name}-escaped-home; \
         echo x > $HOME/.cache/{name}.txt && echo {name}-cache-ok; \
         echo x > $TMPDIR/{name} && echo {name}-tmp-ok; \
         git status --porcelain > /dev/null && git diff HEAD > /dev/null && \
         git log -1 --format=%H > /dev/null && echo {name}-git-read-ok; \
         git update-ref refs/heads/{name}-was-here HEAD && echo {name}-git-write-ok; {extra}",
        root = root.display()
    )
}

/// A repository with one scripted task whose `worktree.setup`, `[review] checks` and
/// `land.verify` are probing commands; `HOME` of the run is `<temp>/home`.
fn project_commands_repo(
    check_extra: &str,
    sandbox: &str,
) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let (temp, root) = repo_with(&[
        ("README.md", "mine\n"),
        (".gitignore", ".marks/\n"),
        ("plan.toml", &breeze_test_support::plan::one_task("")),
    ]);
    let root = std::fs::canonicalize(&root).unwrap();
    let home = std::fs::canonicalize(temp.path()).unwrap().join("home");
    std::fs::create_dir_all(home.join(".cache")).unwrap();
    let argv = |script: String| format!("[\"sh\", \"-c\", {script:?}]");
    let config = format!(
        "{}\n[worktree]\nsetup = {}\n[review]\nmax_rounds = 1\nchecks = [{}]\n[land]\nverify = {}\n[sandbox]\nmode = \"require\"\n{sandbox}\n",
        crate::support::SCRIPTED_CONFIG,
        argv(probing_command("setup", &root, "true")),
        argv(probing_command("check", &root, check_extra)),
        argv(probing_command("verify", &root, "true")),
    );
    crate::support::write(&root, "breeze.toml", &config);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "config"]);
    (temp, root, home)
}

/// What the project commands of the repository's latest run printed.
fn project_command_output(root: &Path) -> String {
    let status = status_json(root);
    let logs = root.join(".breeze/runs").join(status["run_id"].as_str().unwrap()).join("logs");
    let mut text = String::new();
    for entry in std::fs::read_dir(logs).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if ["setup.", ".check-", ".verify."].iter().any(|kind| name.contains(kind))
            && name.ends_with(".stdout")
        {
            text.push_str(&std::fs::read_to_string(entry.path()).unwrap());
        }
    }
    text
}

fn nothing_of_the_commands_escaped(root: &Path, home: &Path) {
    for name in ["setup", "check", "verify"] {
        assert!(!root.join(format!("{name}-escaped.txt")).exists(), "{name} wrote the checkout");
        assert!(!home.join(format!("{name}-escaped.txt")).exists(), "{name} wrote $HOME");
    }
    assert_eq!(git(root, &["status", "--porcelain"]), "");
    assert_eq!(git(root, &["branch", "--list", "*-was-here"]), "", "no command wrote a ref");
}

#[test]
fn project_commands_write_only_their_checkout_and_what_sandbox_writable_adds() {
    if !crate::support::landlock_or_skip() {
        return;
    }
    // Without sandbox.writable: the check needs ~/.cache, is refused, and says what to widen.
    let (_temp, root, home) = project_commands_repo("test -f $HOME/.cache/check.txt", "");
    let output = breeze().current_dir(&root).env("HOME", &home).args(["run"]).output().unwrap();
    let printed = project_command_output(&root);
    for name in ["setup", "check"] {
        // Their git reads the lane (its `.git` names the admin folder, not the worker's
        // private git directory) and writes nothing under `.git`.
        for ok in ["own-ok", "tmp-ok", "git-read-ok"] {
            assert!(printed.contains(&format!("{name}-{ok}")), "{name}: {printed}");
        }
        for refused in ["escaped-checkout", "escaped-home", "cache-ok", "git-write-ok"] {
            assert!(!printed.contains(&format!("{name}-{refused}")), "{name}: {printed}");
        }
    }
    nothing_of_the_commands_escaped(&root, &home);
    assert!(!home.join(".cache/check.txt").exists());
    let status = status_json(&root);
    assert_eq!(crate::support::task_state(&status, "1"), "escalated", "{}", both(&output));
    let run_dir = root.join(".breeze/runs").join(status["run_id"].as_str().unwrap());
    // The worker was told the check's refused write (a failed check goes back as a gate's
    // finding), and the escalation names the hint.
    let input = std::fs::read_to_string(run_dir.join("io/1.worker.2.input.json")).unwrap();
    let refused = format!("`{}/.cache/check.txt`", home.display());
    assert!(input.contains(&refused) && input.contains("sandbox.writable"), "{input}");
    let reason = status["tasks"][0]["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("the check `") && reason.contains("sandbox.writable"), "{status}");
    assert!(stderr(&output).contains("sandbox.writable"), "{}", both(&output));

    // With ~/.cache in sandbox.writable the same check passes, and verify (in the
    // integration checkout) is held the same way.
    let (_temp, root, home) =
        project_commands_repo("test -f $HOME/.cache/check.txt", "writable = [\"~/.cache\"]");
    let output = breeze().current_dir(&root).env("HOME", &home).args(["run"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let printed = project_command_output(&root);
    for name in ["setup", "check", "verify"] {
        for ok in ["own-ok", "tmp-ok", "cache-ok", "git-read-ok"] {
            assert!(printed.contains(&format!("{name}-{ok}")), "{name}: {printed}");
        }
        for refused in ["escaped-checkout", "escaped-home", "git-write-ok"] {
            assert!(!printed.contains(&format!("{name}-{refused}")), "{name}: {printed}");
        }
    }
    nothing_of_the_commands_escaped(&root, &home);
    assert!(home.join(".cache/verify.txt").exists());
    assert_eq!(crate::support::task_state(&status_json(&root), "1"), "landed");
}
