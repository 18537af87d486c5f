//! Landing where the team lands, with the real binary and real remotes the tests start: a
//! bare repository on the file system (with a teammate pushing between breeze's fetch and
//! its push, and a kill right after breeze's push), the same served by git's smart-HTTP
//! backend behind a password (the user's credential helper answers; no role ever sees a
//! credential variable), and pull requests opened by a recording command and merged by a
//! merge queue in another clone. Checked with the git CLI on the remote.

use std::path::Path;

use breeze_test_support::remote::{BareRemote, HttpRemote, MergeStyle, merge_branch, push_work};

use crate::support::{
    SCRIPTED_CONFIG, both, breeze, git, killed_at, repo_with, run_in, shell_worker_config,
    status_json, stdout, task_state, toml_task, write,
};

/// The journal of the repository's only run, as text.
fn journal(root: &Path) -> String {
    let runs = root.join(".breeze/runs");
    let run = std::fs::read_dir(runs).unwrap().next().unwrap().unwrap().path();
    std::fs::read_to_string(run.join("events.jsonl")).unwrap()
}

/// How many commits of `branch` on the remote carry `Breeze-Task: <id>`.
fn landings_on(remote: &BareRemote, branch: &str, id: &str) -> usize {
    git(&remote.path, &["log", "--format=%B", branch])
        .matches(&format!("Breeze-Task: {id}\n"))
        .count()
}

fn is_ancestor(dir: &Path, ancestor: &str, of: &str) -> bool {
    breeze_test_support::git_output(dir, &["merge-base", "--is-ancestor", ancestor, of])
        .status
        .success()
}

/// A repository with task 1 (`a.txt`) to land through pull requests on the bare remote
/// `origin`, opened by `pr_command` (a TOML array), committed.
fn pull_request_repo(pr_command: &str) -> (tempfile::TempDir, std::path::PathBuf, BareRemote) {
    let remote = BareRemote::new();
    let (temp, root) = repo_with(&[("README.md", "readme\n")]);
    let config =
        format!("{SCRIPTED_CONFIG}\n[land]\nto = \"pull-request\"\npr_command = {pr_command}\n");
    write(&root, "breeze.toml", &config);
    write(&root, "plan.toml", &toml_task("1", "First", &["a.txt"], ""));
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "plan"]);
    remote.add_to(&root, "origin", remote.path.to_str().unwrap());
    (temp, root, remote)
}

/// A pull-request command that prints an address and counts its calls in `calls`.
fn counting_pr_script(dir: &Path, calls: &Path) -> String {
    std::fs::create_dir_all(calls).unwrap();
    let script = breeze_test_support::role::shell_script(
        dir,
        "open-pr.sh",
        &format!(
            "n=$(ls '{calls}' | wc -l); touch '{calls}/'$((n + 1))\necho https://forge.test/team/repo/pull/1\n",
            calls = calls.display()
        ),
    );
    format!("[\"sh\", \"{}\"]", script.display())
}

#[test]
fn landing_on_a_bare_remote_survives_a_concurrent_push_and_a_kill_right_after_its_push() {
    let remote = BareRemote::new();
    let teammate = remote.root.join("teammate");
    let marker = remote.root.join("pushed-once");
    let verify = remote.root.join("verify.sh");
    std::fs::write(
        &verify,
        format!(
            "#!/bin/sh\nif [ ! -e '{marker}' ]; then\n  touch '{marker}'\n  cd '{teammate}' && echo theirs > t.txt && git add t.txt && git commit -q -m \"teammate's work\" && git push -q origin HEAD:main\nfi\n",
            marker = marker.display(),
            teammate = teammate.display()
        ),
    )
    .unwrap();
    // land.verify is confined: the remote's folder (the teammate's clone, the marker) is
    // opened to it.
    let config = format!(
        "{SCRIPTED_CONFIG}\n[land]\nto = \"remote\"\nverify = [\"sh\", \"{}\"]\n[sandbox]\nwritable = [\"{}\"]\n",
        verify.display(),
        remote.root.display()
    );
    let plan = toml_task("1", "First", &["a.txt"], "")
        + &toml_task("2", "Second", &["b.txt"], "depends_on = [\"1\"]");
    let (_temp, root) = repo_with(&[("breeze.toml", &config), ("plan.toml", &plan)]);
    git(&root, &["remote", "add", "origin", remote.path.to_str().unwrap()]);
    git(&root, &["push", "-q", "origin", "main"]);
    assert_eq!(remote.clone_as("teammate"), teammate);
    git(&root, &["branch", "feature"]);
    let feature = git(&root, &["rev-parse", "feature"]);

    // Killed right after the first successful push, before anything was journaled of it.
    killed_at(&root, &["run"], "landing:pushed");
    assert_eq!(landings_on(&remote, "main", "1"), 1, "the push happened");
    let text = journal(&root);
    assert!(text.contains("\"kind\":\"push_rejected\""), "{text}");
    assert!(text.contains("\"reason\":\"stale info\""), "{text}");

    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    for id in ["1", "2"] {
        assert_eq!(landings_on(&remote, "main", id), 1, "task {id} once on the remote");
    }
    let tip = remote.tip("main").unwrap();
    let theirs = git(&remote.path, &["log", "--format=%H", "--grep=teammate", "main"]);
    assert!(is_ancestor(&remote.path, theirs.trim(), &tip), "the teammate's commit is kept");
    assert!(remote.only_fast_forwards("main"), "{:?}", remote.ref_history("main"));
    let text = journal(&root);
    assert_eq!(text.matches("\"kind\":\"landed\"").count(), 2, "{text}");
    assert!(text.contains("\"target\":\"origin/main\""), "{text}");
    // The user's main followed, their checkout with it; their other branches are untouched.
    assert_eq!(git(&root, &["rev-parse", "main"]).trim(), tip);
    assert_eq!(std::fs::read_to_string(root.join("t.txt")).unwrap(), "theirs\n");
    assert!(git(&root, &["status", "--porcelain"]).trim().is_empty());
    assert_eq!(git(&root, &["rev-parse", "feature"]), feature);
    let status = status_json(&root);
    assert_eq!(task_state(&status, "1"), "landed", "{status}");
}

#[test]
fn landing_over_smart_http_uses_the_users_credential_helper_and_no_role_sees_a_credential() {
    let remote = BareRemote::new();
    let server = HttpRemote::serve(&remote.root, Some("tester:secret"));
    // A worker that writes its whole environment into the file it lands.
    let (_temp, root) = repo_with(&[("README.md", "readme\n")]);
    let worker = breeze_test_support::role::shell_script(
        root.parent().unwrap(),
        "worker.sh",
        "cat > /dev/null\nenv | sort > env.txt\nprintf '{\"schema_version\":\"worker-report.v1\",\"status\":\"completed\",\"summary\":\"ok\"}' > \"$BREEZE_OUTPUT\"\n",
    );
    let config = shell_worker_config(&worker, "env = [\"SSH_*\", \"GIT_*\"]")
        + "[roles.scaffolder]\nbackend = \"scripted\"\n[land]\nto = \"remote\"\n";
    write(&root, "breeze.toml", &config);
    write(&root, "plan.toml", &toml_task("1", "Environment", &["env.txt"], ""));
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "config"]);
    git(&root, &["push", "-q", remote.path.to_str().unwrap(), "main"]);
    git(&root, &["remote", "add", "origin", &server.url("remote.git")]);
    let helper = root.parent().unwrap().join("credential-helper.sh");
    std::fs::write(&helper, "#!/bin/sh\necho username=tester\necho password=secret\n").unwrap();
    std::fs::set_permissions(&helper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

    // The user's git setup comes from their environment here (as in CI): a credential
    // helper given to git through GIT_CONFIG_*, an ssh agent, an askpass program, a token.
    let ran = breeze()
        .current_dir(&root)
        .arg("run")
        .env("SSH_AUTH_SOCK", "/tmp/agent.sock")
        .env("GIT_ASKPASS", "/usr/local/bin/ask-for-a-password")
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "credential.helper")
        .env("GIT_CONFIG_VALUE_0", &helper)
        .env("GH_TOKEN", "gho_secret")
        .output()
        .unwrap();
    assert_eq!(ran.status.code(), Some(0), "{}", both(&ran));
    assert_eq!(landings_on(&remote, "main", "1"), 1);
    let env = git(&remote.path, &["show", "main:env.txt"]);
    assert!(env.contains("BREEZE_ROLE=worker"), "{env}");
    for secret in [
        "SSH_AUTH_SOCK",
        "GIT_ASKPASS",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_KEY",
        "GIT_CONFIG_VALUE",
        "GH_TOKEN",
        "secret",
        "credential-helper",
    ] {
        assert!(!env.contains(secret), "{secret} reached the worker:\n{env}");
    }
    // Naming one outright is refused while landings go to a remote.
    let named =
        shell_worker_config(&worker, "env = [\"SSH_AUTH_SOCK\"]") + "[land]\nto = \"remote\"\n";
    write(&root, "breeze.toml", &named);
    let refused = run_in(&root, &["run"]);
    assert_eq!(refused.status.code(), Some(2), "{}", both(&refused));
    assert!(
        both(&refused).contains("`roles.worker.env` names SSH_AUTH_SOCK"),
        "{}",
        both(&refused)
    );
}

#[test]
fn pull_requests_are_opened_by_the_command_and_land_as_the_merge_queue_merges_them() {
    let remote = BareRemote::new();
    let (_temp, root) = repo_with(&[("README.md", "readme\n")]);
    let calls = root.parent().unwrap().join("calls");
    std::fs::create_dir_all(&calls).unwrap();
    let script = breeze_test_support::role::shell_script(
        root.parent().unwrap(),
        "open-pr.sh",
        &format!(
            "n=$(ls '{calls}' | wc -l); n=$((n + 1))\nprintf '%s\\n' \"$@\" > '{calls}/'$n\necho \"https://forge.test/team/repo/pull/$n\"\n",
            calls = calls.display()
        ),
    );
    let config = format!(
        "{SCRIPTED_CONFIG}\n[land]\nto = \"pull-request\"\npr_command = [\"sh\", \"{}\", \"--base\", \"{{target}}\", \"--head\", \"{{branch}}\", \"--title\", \"{{title}}\", \"--body-file\", \"{{body_file}}\"]\n",
        script.display()
    );
    let plan = toml_task("1", "First", &["a.txt"], "")
        + &toml_task("2", "Second", &["b.txt"], "")
        + &toml_task("3", "Third", &["c.txt"], "depends_on = [\"1\"]");
    write(&root, "breeze.toml", &config);
    write(&root, "plan.toml", &plan);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "plan"]);
    remote.add_to(&root, "origin", remote.path.to_str().unwrap());
    let start = remote.tip("main").unwrap();

    let ran = run_in(&root, &["run"]);
    assert_eq!(ran.status.code(), Some(3), "{}", both(&ran));
    assert!(stdout(&ran).contains("wait for their pull requests to be merged"), "{}", both(&ran));
    assert!(
        stdout(&ran).contains("⇡ [1] pull request https://forge.test/team/repo/pull/"),
        "{}",
        both(&ran)
    );
    assert_eq!(remote.tip("main").unwrap(), start);
    let status = status_json(&root);
    for id in ["1", "2"] {
        assert_eq!(task_state(&status, id), "pr-open", "{status}");
    }
    let pr = status["tasks"][0]["pull_request"].clone();
    assert_eq!(pr["branch"], "breeze/1", "{status}");
    assert_eq!(pr["target"], "origin/main", "{status}");
    assert_eq!(pr["merged"], false, "{status}");
    assert!(pr["url"].as_str().unwrap().starts_with("https://forge.test/team/repo/pull/"));
    let args = std::fs::read_to_string(calls.join("1")).unwrap();
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(args[..2], ["--base", "main"], "{args:?}");
    assert_eq!(
        args[4..6],
        // The landing's subject; the tasks change only text files: `docs`.
        ["--title", &format!("docs: {}", if args[3] == "breeze/1" { "First" } else { "Second" })],
        "{args:?}"
    );
    let body = std::fs::read_to_string(args[7]).unwrap();
    assert!(body.contains("## Definition of done") && body.contains("Breeze-Task: "), "{body}");

    let queue = remote.clone_as("queue");
    merge_branch(&queue, "breeze/1", MergeStyle::Squash);
    merge_branch(&queue, "breeze/2", MergeStyle::Merge);
    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(3), "task 3's pull request waits: {}", both(&resumed));
    let status = status_json(&root);
    assert_eq!(task_state(&status, "1"), "landed", "{status}");
    assert_eq!(task_state(&status, "2"), "landed", "{status}");
    assert_eq!(status["tasks"][0]["pull_request"]["merged"], true, "{status}");
    assert_eq!(task_state(&status, "3"), "pr-open", "{status}");
    let table = stdout(&run_in(&root, &["status"]));
    assert!(table.contains("merged: pull request https://forge.test/team/repo/pull/"), "{table}");

    push_work(&queue, &[("d.txt", "someone else's\n")], "unrelated work");
    merge_branch(&queue, "breeze/3", MergeStyle::Rebase);
    let last = run_in(&root, &["resume"]);
    assert_eq!(last.status.code(), Some(0), "{}", both(&last));
    let tip = remote.tip("main").unwrap();
    for path in ["a.txt", "b.txt", "c.txt"] {
        let changes =
            git(&remote.path, &["log", "--first-parent", "--format=%H", "main", "--", path]);
        assert_eq!(changes.lines().count(), 1, "{path} changed once on main");
    }
    assert!(remote.only_fast_forwards("main"), "{:?}", remote.ref_history("main"));
    assert_eq!(git(&root, &["rev-parse", "main"]).trim(), tip, "the local main followed");
    assert_eq!(std::fs::read_dir(&calls).unwrap().count(), 3, "one pull request per task");
    let text = journal(&root);
    for kind in ["pull_request_opened", "pull_request_merged", "main_followed"] {
        assert!(text.contains(&format!("\"kind\":\"{kind}\"")), "{kind}: {text}");
    }
}

#[test]
fn a_merged_pull_request_killed_while_it_lands_is_landed_once_by_resume() {
    for step in ["pr-merged-journaled", "state-saved"] {
        let outside = tempfile::tempdir().unwrap();
        let pr_command = counting_pr_script(outside.path(), &outside.path().join("calls"));
        let (_temp, root, remote) = pull_request_repo(&pr_command);
        let ran = run_in(&root, &["run"]);
        assert_eq!(ran.status.code(), Some(3), "{}", both(&ran));

        // The team merges it; breeze is killed while it records the landing.
        merge_branch(&remote.clone_as("queue"), "breeze/1", MergeStyle::Squash);
        killed_at(&root, &["resume"], &format!("landing:{step}"));

        let resumed = run_in(&root, &["resume"]);
        assert_eq!(resumed.status.code(), Some(0), "{step}: {}", both(&resumed));
        assert_eq!(task_state(&status_json(&root), "1"), "landed", "{step}");
        let text = journal(&root);
        for kind in ["pull_request_merged", "landed"] {
            let times = text.matches(&format!("{{\"kind\":\"{kind}\",\"task\":\"1\"")).count();
            assert_eq!(times, 1, "{step}: one `{kind}` for task 1:\n{text}");
        }
        let landed_states = text
            .lines()
            .filter(|line| {
                line.contains("\"kind\":\"task_state\"") && line.contains("\"state\":\"landed\"")
            })
            .count();
        assert_eq!(landed_states, 1, "{step}: one `task_state landed`:\n{text}");
        let changes =
            git(&remote.path, &["log", "--first-parent", "--format=%H", "main", "--", "a.txt"]);
        assert_eq!(changes.lines().count(), 1, "{step}: a.txt changed once on main");
        assert_eq!(
            git(&root, &["rev-parse", "main"]).trim(),
            remote.tip("main").unwrap(),
            "{step}"
        );
    }
}

#[test]
fn a_kill_between_pushing_a_pull_request_branch_and_recording_it_is_taken_over_by_resume() {
    let outside = tempfile::tempdir().unwrap();
    let calls = outside.path().join("calls");
    let (_temp, root, remote) = pull_request_repo(&counting_pr_script(outside.path(), &calls));
    killed_at(&root, &["run"], "landing:pr-pushed");
    let pushed = remote.tip("breeze/1").expect("the branch was pushed before the kill");
    // The team's main moves meanwhile: resume builds the landing anew, on the new tip.
    push_work(&remote.clone_as("team"), &[("team.txt", "team\n")], "team work");

    // Resume finds its own push (its trailers name the run and the task) and replaces it.
    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(3), "{}", both(&resumed));
    let status = status_json(&root);
    assert_eq!(task_state(&status, "1"), "pr-open", "{status}");
    let recorded = status["tasks"][0]["pull_request"]["commit"].as_str().unwrap().to_string();
    assert_eq!(remote.tip("breeze/1").unwrap(), recorded, "the recorded commit is on the branch");
    assert!(is_ancestor(&remote.path, "main", &recorded), "built on the team's new main");
    assert_ne!(recorded, pushed);
    assert_eq!(std::fs::read_dir(&calls).unwrap().count(), 1, "one pull request opened");
    assert!(journal(&root).contains("\"kind\":\"pull_request_opened\""));
}

#[test]
fn a_pull_request_branch_someone_else_pushed_is_left_alone_with_what_to_do() {
    let (_temp, root, remote) = pull_request_repo("[\"true\"]");
    let queue = remote.clone_as("queue");
    push_work(&queue, &[("theirs.txt", "theirs\n")], "someone's work");
    git(&queue, &["push", "-q", "origin", "HEAD:refs/heads/breeze/1"]);
    let theirs = remote.tip("breeze/1").unwrap();

    let ran = run_in(&root, &["run"]);
    assert_eq!(ran.status.code(), Some(3), "{}", both(&ran));
    let status = status_json(&root);
    assert_eq!(task_state(&status, "1"), "deferred", "{status}");
    assert_eq!(status["tasks"][0]["cause"]["kind"], "remote", "{status}");
    let reason = status["tasks"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("git push origin --delete breeze/1"), "{reason}");
    assert_eq!(remote.tip("breeze/1").unwrap(), theirs, "their branch is untouched");
}

/// A repository whose task 1 lands through a pull request on a bare remote, with a scripted
/// forge in `forge` (a commit's checks are `checks-<commit>.json` there, else one pending
/// check; no reviews; an edited description lands in `description.md`) and a `sh` worker
/// writing `attempt <n>` to `a.txt`.
struct ForgeRepo {
    _outside: tempfile::TempDir,
    _temp: tempfile::TempDir,
    forge: std::path::PathBuf,
    root: std::path::PathBuf,
    remote: BareRemote,
}

fn forge_repo() -> ForgeRepo {
    let outside = tempfile::tempdir().unwrap();
    let forge = outside.path().join("forge");
    std::fs::create_dir_all(&forge).unwrap();
    // The forge: a commit's checks are `checks-<commit>.json` the test writes, else pending.
    let forge_script = breeze_test_support::role::shell_script(
        outside.path(),
        "forge.sh",
        &format!(
            "d='{d}'\nwhat=$1; shift\ncase $what in\n  checks) cat \"$d/checks-$1.json\" 2>/dev/null || echo '[{{\"name\":\"test\",\"bucket\":\"pending\"}}]' ;;\n  reviews) echo '{{\"reviews\":[],\"comments\":[]}}' ;;\n  main) echo '[]' ;;\n  edit) cp \"$1\" \"$d/description.md\" ;;\nesac\n",
            d = forge.display()
        ),
    );
    let worker = breeze_test_support::role::shell_script(
        outside.path(),
        "worker.sh",
        "cat > /dev/null\nn=$(sed 's/attempt //' a.txt 2>/dev/null || echo 0)\necho \"attempt $((n + 1))\" > a.txt\nprintf '{\"schema_version\":\"worker-report.v1\",\"status\":\"completed\",\"summary\":\"ok\"}' > \"$BREEZE_OUTPUT\"\n",
    );
    let pr_command = counting_pr_script(outside.path(), &outside.path().join("calls"));
    let (temp, root, remote) = pull_request_repo(&pr_command);
    let forge_argv = |what: &str, arg: &str| {
        format!("[\"sh\", \"{}\", \"{what}\", \"{arg}\"]", forge_script.display())
    };
    let config = format!(
        "{}\n[land]\nto = \"pull-request\"\npr_command = {pr_command}\npr_checks_command = {}\npr_reviews_command = {}\npr_main_checks_command = {}\npr_rerun_command = []\npr_edit_command = {}\n",
        shell_worker_config(&worker, ""),
        forge_argv("checks", "{commit}"),
        forge_argv("reviews", "{number}"),
        forge_argv("main", "{target_commit}"),
        forge_argv("edit", "{body_file}"),
    );
    write(&root, "breeze.toml", &config);
    git(&root, &["commit", "-q", "-am", "forge"]);
    git(&root, &["push", "-q", "origin", "main"]);
    ForgeRepo { _outside: outside, _temp: temp, forge, root, remote }
}

#[test]
fn a_pull_request_that_goes_red_goes_back_to_its_worker_and_lands_green_once_merged() {
    let ForgeRepo { _outside, _temp, forge, root, remote } = forge_repo();
    let mut transcript = Vec::new();

    let opened = run_in(&root, &["run"]);
    assert_eq!(opened.status.code(), Some(3), "{}", both(&opened));
    assert!(
        stdout(&opened).contains("⇡ [1] pull request: checks pending, review none — waits"),
        "{}",
        both(&opened)
    );
    transcript.push(("$ breeze run", stdout(&opened)));

    // CI fails the pull request.
    let red = remote.tip("breeze/1").unwrap();
    let failed = r#"[{"name":"test","state":"FAILURE","bucket":"fail","link":"https://ci.test/actions/runs/77/job/1","description":"2 tests failed"}]"#;
    std::fs::write(forge.join(format!("checks-{red}.json")), failed).unwrap();
    let fixed = run_in(&root, &["resume"]);
    assert_eq!(fixed.status.code(), Some(3), "{}", both(&fixed));
    let text = stdout(&fixed);
    for line in [
        "⇡ [1] pull request: checks failed (test), review none — back to the worker",
        "↺ [1] pull request: check `test` failed (its log: https://ci.test/actions/runs/77/job/1): 2 tests failed — back to the worker",
        "✓ [1] round 2: APPROVE",
        "⇡ [1] pull request: checks pending, review none — waits",
    ] {
        assert!(text.contains(line), "{line}\n{}", both(&fixed));
    }
    transcript.push(("# CI fails `test` on the pull request\n$ breeze resume", text));
    let green = remote.tip("breeze/1").unwrap();
    assert_ne!(green, red, "the fix is pushed to the same branch");
    assert_eq!(git(&remote.path, &["show", &format!("{green}:a.txt")]), "attempt 2\n");
    let description = std::fs::read_to_string(forge.join("description.md")).unwrap();
    assert!(description.contains("- Round 1: check `test` failed"), "{description}");
    let status = status_json(&root);
    assert_eq!(status["tasks"][0]["pull_request"]["follow_ups"], 1, "{status}");
    assert_eq!(status["tasks"][0]["pull_request"]["checks"], "pending", "{status}");
    let table = stdout(&run_in(&root, &["status"]));
    assert!(table.contains("checks pending, review none, 1 follow-up round"), "{table}");
    transcript.push(("$ breeze status", table));

    // Green on the fix; the team merges it.
    let passed = r#"[{"name":"test","state":"SUCCESS","bucket":"pass","link":"https://ci.test/actions/runs/78/job/1"}]"#;
    std::fs::write(forge.join(format!("checks-{green}.json")), passed).unwrap();
    merge_branch(&remote.clone_as("queue"), "breeze/1", MergeStyle::Squash);
    let landed = run_in(&root, &["resume"]);
    assert_eq!(landed.status.code(), Some(0), "{}", both(&landed));
    assert!(stdout(&landed).contains("● [1] landed"), "{}", both(&landed));
    transcript.push((
        "# CI passes on the fix; the team squash-merges it\n$ breeze resume",
        stdout(&landed),
    ));
    let changes =
        git(&remote.path, &["log", "--first-parent", "--format=%H", "main", "--", "a.txt"]);
    assert_eq!(changes.lines().count(), 1, "a.txt changed once on main");
    assert_eq!(git(&remote.path, &["show", "main:a.txt"]), "attempt 2\n");
    // `--nocapture` shows the session as a person saw it.
    for (command, output) in transcript {
        println!("{command}\n{output}");
    }
}

#[test]
fn a_kill_as_a_follow_up_round_starts_is_finished_once_by_resume() {
    let ForgeRepo { _outside, _temp, forge, root, remote } = forge_repo();
    let opened = run_in(&root, &["run"]);
    assert_eq!(opened.status.code(), Some(3), "{}", both(&opened));
    let red = remote.tip("breeze/1").unwrap();
    let failed =
        r#"[{"name":"test","bucket":"fail","link":"https://ci.test/actions/runs/77/job/1"}]"#;
    std::fs::write(forge.join(format!("checks-{red}.json")), failed).unwrap();
    // Killed once the round is saved, before the task is sent back.
    killed_at(&root, &["resume"], "landing:pr-round-saved");
    assert_eq!(remote.tip("breeze/1").unwrap(), red);

    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(3), "{}", both(&resumed));
    let status = status_json(&root);
    assert_eq!(task_state(&status, "1"), "pr-open", "{status}");
    assert_eq!(status["tasks"][0]["pull_request"]["follow_ups"], 1, "one round: {status}");
    let text = journal(&root);
    assert_eq!(text.matches("\"kind\":\"sent_back\"").count(), 1, "{text}");
    assert_eq!(text.matches("\"kind\":\"pull_request_updated\"").count(), 1, "pushed once: {text}");
    let green = remote.tip("breeze/1").unwrap();
    assert_ne!(green, red);
    assert_eq!(git(&remote.path, &["show", &format!("{green}:a.txt")]), "attempt 2\n");
}
