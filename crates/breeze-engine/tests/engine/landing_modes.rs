//! `[land] to = "remote"` and `"pull-request"` against real bare remotes: pushes with a
//! lease that survive a concurrent push, pull requests opened by a recording command and
//! merged by a merge queue in another clone (merge, squash and rebase), rebuilt when
//! another merge made them conflict, stacked on their dependency's — each checked with the
//! git CLI on the remote.

use std::path::{Path, PathBuf};

use breeze_engine::config::LandTo;
use breeze_engine::journal::read_events;
use breeze_engine::step_in::request::AttachFiles;
use breeze_engine::{BackendKind, Config, RunOptions, RunOutcome};
use breeze_protocol::{EventKind, RunState, TaskState, WaitingFor};
use breeze_test_support::plan::toml_task;
use breeze_test_support::remote::{BareRemote, MergeStyle, merge_branch};
use breeze_test_support::{TestRepo, git, git_line};
use tokio_util::sync::CancellationToken;

/// A repository whose main is on a bare remote `origin`, a teammate's clone of that remote,
/// and the folder of the test's scripts.
pub(crate) struct Remoted {
    pub(crate) repo: TestRepo,
    pub(crate) remote: BareRemote,
    pub(crate) teammate: PathBuf,
    pub(crate) plan: PathBuf,
}

impl Remoted {
    pub(crate) fn new(plan_name: &str, plan: &str) -> Remoted {
        let repo = TestRepo::with_files(&[(plan_name, plan), ("README.md", "readme\n")]);
        let remote = BareRemote::new();
        remote.add_to(&repo.root, "origin", remote.path.to_str().unwrap());
        let teammate = remote.clone_as("teammate");
        let plan = repo.root.join(plan_name);
        Remoted { repo, remote, teammate, plan }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.repo.root
    }

    pub(crate) fn options(&self, to: LandTo, tweak: impl FnOnce(&mut Config)) -> RunOptions {
        let mut config = Config::defaults();
        config.set_all_backends(BackendKind::Scripted);
        config.worktree_root = Some(self.repo.worktrees());
        config.land.to = to;
        config.land.pr_command = vec!["sh".into(), self.pr_script().display().to_string()]
            .into_iter()
            .chain(["{target}", "{branch}", "{title}", "{body_file}"].map(String::from))
            .collect();
        tweak(&mut config);
        let mut options = RunOptions::new(self.root());
        options.plan = Some(self.plan.clone());
        options.config = Some(config);
        options
    }

    /// A pull-request command that records its arguments, one file per call, and prints
    /// an address as `gh pr create` does.
    pub(crate) fn pr_script(&self) -> PathBuf {
        let dir = self.repo.outside();
        let script = dir.join("open-pr.sh");
        if !script.exists() {
            let text = format!(
                "#!/bin/sh\nn=$(ls '{dir}' | grep -c '^pr-call-')\nn=$((n + 1))\nprintf '%s\\n' \"$@\" > '{dir}/pr-call-'$n\necho \"Creating pull request for $2 into $1\"\necho \"https://forge.test/team/repo/pull/$n\"\n",
                dir = dir.display()
            );
            std::fs::write(&script, text).unwrap();
        }
        script
    }

    /// The arguments of every pull-request command call, in order.
    pub(crate) fn pr_calls(&self) -> Vec<Vec<String>> {
        (1..)
            .map(|n| self.repo.outside().join(format!("pr-call-{n}")))
            .take_while(|path| path.exists())
            .map(|path| std::fs::read_to_string(path).unwrap().lines().map(String::from).collect())
            .collect()
    }

    pub(crate) async fn run(&self, options: RunOptions) -> RunOutcome {
        breeze_engine::run(options, CancellationToken::new()).await.expect("the run starts")
    }

    pub(crate) async fn resume(&self, options: RunOptions) -> RunOutcome {
        breeze_engine::resume(options, CancellationToken::new()).await.expect("the run resumes")
    }

    /// How many commits of the remote main's first-parent history change `path`.
    pub(crate) fn changes_on_remote(&self, path: &str) -> usize {
        git(&self.remote.path, &["log", "--first-parent", "--format=%H", "main", "--", path])
            .lines()
            .count()
    }
}

/// The journal of the run's last session (since it last started or resumed).
pub(crate) fn events(outcome: &RunOutcome) -> Vec<EventKind> {
    let all: Vec<EventKind> = read_events(&outcome.run_dir.join("events.jsonl"))
        .unwrap()
        .into_iter()
        .map(|e| e.event)
        .collect();
    let start = all.iter().rposition(|e| matches!(e, EventKind::RunStarted { .. })).unwrap_or(0);
    all[start..].to_vec()
}

pub(crate) fn state(outcome: &RunOutcome, id: &str) -> TaskState {
    outcome.status.tasks.iter().find(|t| t.id == id).map(|t| t.state).unwrap()
}

#[tokio::test]
async fn landing_on_a_remote_pushes_with_a_lease_and_lands_again_after_a_concurrent_push() {
    let plan = toml_task("1", "First", &["a.txt"], "")
        + &toml_task("2", "Second", &["b.txt"], "depends_on = [\"1\"]");
    let remoted = Remoted::new("plan.toml", &plan);
    git(remoted.root(), &["branch", "feature"]);
    let feature = git_line(remoted.root(), &["rev-parse", "feature"]);
    // The verify command pushes a teammate's commit the first time it runs: between
    // breeze's fetch and its push.
    let marker = remoted.repo.outside().join("pushed-once");
    let verify = remoted.repo.outside().join("verify.sh");
    std::fs::write(
        &verify,
        format!(
            "#!/bin/sh\nif [ ! -e '{marker}' ]; then\n  touch '{marker}'\n  cd '{teammate}' && echo theirs > t.txt && git add t.txt && git commit -q -m \"teammate's work\" && git push -q origin HEAD:main\nfi\n",
            marker = marker.display(),
            teammate = remoted.teammate.display()
        ),
    )
    .unwrap();
    let options = remoted.options(LandTo::Remote, |config| {
        config.verify = vec!["sh".into(), verify.display().to_string()];
        // land.verify is confined: the teammate's clone, the remote and the marker are
        // opened to it here.
        let outside = remoted.repo.outside().display().to_string();
        config.sandbox_writable.extend([remoted.remote.root.display().to_string(), outside]);
    });
    let outcome = remoted.run(options).await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");

    let journal = events(&outcome);
    let rejected: Vec<&EventKind> =
        journal.iter().filter(|e| matches!(e, EventKind::PushRejected { .. })).collect();
    assert_eq!(rejected.len(), 1, "{journal:#?}");
    let EventKind::PushRejected { task, target, reason, attempt, expected, actual, .. } =
        rejected[0]
    else {
        unreachable!()
    };
    assert_eq!((task.as_str(), target.as_str(), *attempt), ("1", "origin/main", 1));
    assert!(reason.contains("stale info"), "{reason}");
    assert_ne!(expected, actual);
    let landed: Vec<(&str, Option<&str>)> = journal
        .iter()
        .filter_map(|e| match e {
            EventKind::Landed { task, target, .. } => Some((task.as_str(), target.as_deref())),
            _ => None,
        })
        .collect();
    assert_eq!(landed, [("1", Some("origin/main")), ("2", Some("origin/main"))]);

    // The remote holds each task once, on top of the teammate's commit, never forced over.
    let log = git(&remoted.remote.path, &["log", "--format=%B", "main"]);
    for id in ["1", "2"] {
        assert_eq!(log.matches(&format!("Breeze-Task: {id}\n")).count(), 1, "{log}");
    }
    let theirs = git_line(&remoted.remote.path, &["log", "--format=%H", "--grep=teammate", "main"]);
    let tip = remoted.remote.tip("main").unwrap();
    assert!(
        breeze_test_support::git_output(
            &remoted.remote.path,
            &["merge-base", "--is-ancestor", &theirs, &tip]
        )
        .status
        .success()
    );
    assert!(remoted.remote.only_fast_forwards("main"), "{:?}", remoted.remote.ref_history("main"));
    // The local main followed (its checkout with it); other branches are as they were.
    assert_eq!(git_line(remoted.root(), &["rev-parse", "main"]), tip);
    assert_eq!(std::fs::read_to_string(remoted.root().join("t.txt")).unwrap(), "theirs\n");
    assert!(git(remoted.root(), &["status", "--porcelain"]).trim().is_empty());
    assert_eq!(git_line(remoted.root(), &["rev-parse", "feature"]), feature);
}

#[tokio::test]
async fn a_push_the_remote_refuses_defers_the_landing_as_the_remotes_and_resume_lands_it() {
    let remoted = Remoted::new("plan.toml", &toml_task("1", "First", &["a.txt"], ""));
    // A protected branch: the remote refuses every push, whoever makes it.
    let hook = remoted.remote.path.join("hooks").join("pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh
echo 'main is protected' >&2
exit 1
",
    )
    .unwrap();
    let mode = |path: &Path, mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    mode(&hook, 0o755);
    let before = remoted.remote.tip("main");
    let outcome = remoted.run(remoted.options(LandTo::Remote, |_| {})).await;
    assert_eq!(outcome.state, RunState::Waiting, "{outcome:?}");
    let task = outcome.status.tasks.iter().find(|t| t.id == "1").unwrap();
    assert_eq!(task.state, TaskState::Deferred);
    let cause = task.cause.as_ref().expect("a deferral says why");
    assert_eq!(cause.kind, breeze_protocol::CauseKind::Remote, "{cause:?}");
    assert!(
        cause.detail.contains("origin refused the push to origin/main")
            && cause.detail.contains("[land] to = \"pull-request\""),
        "{}",
        cause.detail
    );
    // Refused while the branch did not move: each try (the run tries a deferred landing
    // again before it stops) pushes once, never rebuilt and pushed again, never forced.
    let attempts: Vec<u32> = events(&outcome)
        .iter()
        .filter_map(|e| match e {
            EventKind::PushRejected { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect();
    assert!(!attempts.is_empty() && attempts.iter().all(|&n| n == 1), "{attempts:?}");
    assert_eq!(remoted.remote.tip("main"), before);

    // The branch is opened up: resume lands the reviewed work without redoing it.
    mode(&hook, 0o644);
    let outcome = remoted.resume(remoted.options(LandTo::Remote, |_| {})).await;
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(state(&outcome, "1"), TaskState::Landed);
    assert_eq!(remoted.changes_on_remote("a.txt"), 1);
    assert!(remoted.remote.only_fast_forwards("main"), "{:?}", remoted.remote.ref_history("main"));
}

#[tokio::test]
async fn pull_requests_are_opened_followed_and_land_however_the_queue_merges_them() {
    let plan = toml_task("1", "First", &["a.txt"], "")
        + &toml_task("2", "Second", &["b.txt"], "")
        + &toml_task("3", "Third", &["c.txt"], "depends_on = [\"1\"]");
    let remoted = Remoted::new("plan.toml", &plan);
    let start = remoted.remote.tip("main").unwrap();
    let options = || remoted.options(LandTo::PullRequest, |_| {});

    let first = remoted.run(options()).await;
    assert_eq!(first.state, RunState::Waiting, "{first:?}");
    assert_eq!(first.exit_code(), breeze_protocol::ExitCode::Interrupted);
    let reason = first.stop_reason.clone().unwrap();
    assert!(reason.contains("2 task(s) wait for their pull requests to be merged"), "{reason}");
    assert!(reason.contains("https://forge.test/team/repo/pull/"), "{reason}");
    assert_eq!((state(&first, "1"), state(&first, "2")), (TaskState::PrOpen, TaskState::PrOpen));
    assert_eq!(state(&first, "3"), TaskState::Pending, "3 waits for 1's pull request");
    assert_eq!(remoted.remote.tip("main").unwrap(), start, "nothing was pushed to main");
    let calls = remoted.pr_calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    let mut heads: Vec<&str> = calls.iter().map(|c| c[1].as_str()).collect();
    heads.sort();
    assert_eq!(heads, ["breeze/1", "breeze/2"]);
    for call in &calls {
        assert_eq!(call[0], "main", "{call:?}");
        let body = std::fs::read_to_string(&call[3]).unwrap();
        let id = call[1].trim_start_matches("breeze/");
        // The pull request's title is the landing's subject (text files only: `docs`).
        assert!(call[2].starts_with("docs: "), "{call:?}");
        assert!(body.contains("## Review") && body.contains("Round 1: **APPROVE**"), "{body}");
        assert!(
            body.ends_with(&format!(
                "Breeze-Task: {id}\nBreeze-Run: {}\nBreeze-Review: APPROVE (round 1)\n",
                first.run_id
            )),
            "{body}"
        );
    }
    let pr = |outcome: &RunOutcome, id: &str| {
        outcome.status.tasks.iter().find(|t| t.id == id).unwrap().pull_request.clone().unwrap()
    };
    assert!(!pr(&first, "1").merged && pr(&first, "1").url.is_some());

    // The merge queue: task 1 squashed (a new commit, its own message), task 2 merged.
    let queue = remoted.remote.clone_as("queue");
    merge_branch(&queue, "breeze/1", MergeStyle::Squash);
    merge_branch(&queue, "breeze/2", MergeStyle::Merge);
    let second = remoted.resume(options()).await;
    assert_eq!(second.state, RunState::Waiting, "{second:?}");
    assert_eq!((state(&second, "1"), state(&second, "2")), (TaskState::Landed, TaskState::Landed));
    assert!(pr(&second, "1").merged && pr(&second, "2").merged);
    assert_eq!(state(&second, "3"), TaskState::PrOpen, "3 started from the new tip");
    let merged_by: Vec<(String, String)> = events(&second)
        .into_iter()
        .filter_map(|e| match e {
            EventKind::PullRequestMerged { task, found_by, .. } => {
                Some((task, found_by.to_string()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(merged_by, [("1".into(), "patch-id".into()), ("2".into(), "patch-id".into())]);
    let after_merges = git_line(&queue, &["rev-parse", "HEAD"]);
    let third = remoted.remote.tip("breeze/3").unwrap();
    assert_eq!(git_line(&remoted.remote.path, &["rev-parse", &format!("{third}^")]), after_merges);
    // The local main followed the remote.
    assert_eq!(git_line(remoted.root(), &["rev-parse", "main"]), after_merges);

    // Someone else's work goes in first: the rebase writes a new commit.
    breeze_test_support::remote::push_work(&queue, &[("d.txt", "d\n")], "unrelated work");
    merge_branch(&queue, "breeze/3", MergeStyle::Rebase);
    let last = remoted.resume(options()).await;
    assert_eq!(last.state, RunState::Succeeded, "{last:?}");
    assert!(pr(&last, "3").merged);
    let found: Vec<String> = events(&last)
        .into_iter()
        .filter_map(|e| match e {
            EventKind::PullRequestMerged { found_by, .. } => Some(found_by.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(found, ["trailers"], "a rebase merge keeps the message");
    for path in ["a.txt", "b.txt", "c.txt"] {
        assert_eq!(remoted.changes_on_remote(path), 1, "{path}");
    }
    assert_eq!(remoted.pr_calls().len(), 3, "one pull request per task");
    assert!(remoted.remote.only_fast_forwards("main"));
}

#[tokio::test]
async fn a_pull_request_made_to_conflict_by_another_merge_is_rebuilt_and_each_row_flips_once() {
    let plans = "# Plans\n\n| Task | Content | DoD | Writes | Depends | Status |\n|---|---|---|---|---|---|\n| 1 | Add a | a exists | `a.txt` | - | cc:todo |\n| 2 | Add b | b exists | `b.txt` | - | cc:todo |\n";
    let remoted = Remoted::new("Plans.md", plans);
    let options = || remoted.options(LandTo::PullRequest, |_| {});
    let first = remoted.run(options()).await;
    assert_eq!(first.state, RunState::Waiting, "{first:?}");
    let queue = remoted.remote.clone_as("queue");
    merge_branch(&queue, "breeze/1", MergeStyle::Merge);
    // Task 2's row sits next to task 1's: its pull request no longer merges cleanly.
    git(&queue, &["fetch", "-q", "origin", "breeze/2"]);
    let conflicts = breeze_test_support::git_output(
        &queue,
        &["merge-tree", "--write-tree", "HEAD", "FETCH_HEAD"],
    );
    assert!(!conflicts.status.success(), "the old pull request conflicts");
    let before = remoted.remote.tip("breeze/2").unwrap();

    let second = remoted.resume(options()).await;
    assert_eq!(second.state, RunState::Waiting, "{second:?}");
    assert_eq!((state(&second, "1"), state(&second, "2")), (TaskState::Landed, TaskState::PrOpen));
    let updated: Vec<(String, String)> = events(&second)
        .into_iter()
        .filter_map(|e| match e {
            EventKind::PullRequestUpdated { task, previous, .. } => Some((task, previous)),
            _ => None,
        })
        .collect();
    assert_eq!(updated, [("2".to_string(), before.clone())]);
    assert_eq!(remoted.pr_calls().len(), 2, "the open pull request is updated, not opened again");
    let after = remoted.remote.tip("breeze/2").unwrap();
    assert_ne!(after, before);
    assert!(remoted.remote.only_fast_forwards("main"));

    merge_branch(&queue, "breeze/2", MergeStyle::Merge);
    let last = remoted.resume(options()).await;
    assert_eq!(last.state, RunState::Succeeded, "{last:?}");
    let on_main = git(&remoted.remote.path, &["show", "main:Plans.md"]);
    assert!(on_main.contains("| 1 | Add a | a exists | `a.txt` | - | cc:done |"), "{on_main}");
    assert!(on_main.contains("| 2 | Add b | b exists | `b.txt` | - | cc:done |"), "{on_main}");
    let history =
        git(&remoted.remote.path, &["log", "--first-parent", "-p", "main", "--", "Plans.md"]);
    for id in ["1", "2"] {
        let flip = history
            .lines()
            .filter(|line| line.starts_with(&format!("+| {id} | ")) && line.ends_with("cc:done |"))
            .count();
        assert_eq!(flip, 1, "row {id} flipped once:\n{history}");
    }
}

#[tokio::test]
async fn a_stacked_task_builds_on_its_dependencys_open_pull_request() {
    let plan = toml_task("1", "First", &["a.txt"], "")
        + &toml_task("2", "Second", &["a.txt", "b.txt"], "depends_on = [\"1\"]");
    let remoted = Remoted::new("plan.toml", &plan);
    let options = || remoted.options(LandTo::PullRequest, |config| config.land.stack = true);
    let first = remoted.run(options()).await;
    assert_eq!(first.state, RunState::Waiting, "{first:?}");
    assert_eq!((state(&first, "1"), state(&first, "2")), (TaskState::PrOpen, TaskState::PrOpen));
    let calls = remoted.pr_calls();
    assert_eq!(calls[1][..2], ["breeze/1".to_string(), "breeze/2".to_string()], "{calls:?}");
    let one = remoted.remote.tip("breeze/1").unwrap();
    let two = remoted.remote.tip("breeze/2").unwrap();
    assert_eq!(git_line(&remoted.remote.path, &["rev-parse", &format!("{two}^")]), one);
    let body = std::fs::read_to_string(&calls[1][3]).unwrap();
    assert!(body.contains("Stacked on task 1 (`breeze/1`)"), "{body}");

    let queue = remoted.remote.clone_as("queue");
    merge_branch(&queue, "breeze/1", MergeStyle::Merge);
    merge_branch(&queue, "breeze/2", MergeStyle::Merge);
    let last = remoted.resume(options()).await;
    assert_eq!(last.state, RunState::Succeeded, "{last:?}");
    assert_eq!(remoted.changes_on_remote("b.txt"), 1);
}

#[tokio::test]
async fn an_unknown_remote_or_a_missing_pull_request_command_stops_before_anything_runs() {
    let plan = toml_task("1", "First", &["a.txt"], "");
    let remoted = Remoted::new("plan.toml", &plan);
    let options = remoted.options(LandTo::Remote, |config| config.land.remote = "upstream".into());
    let err = breeze_engine::run(options, CancellationToken::new()).await.unwrap_err();
    assert_eq!(err.exit_code(), breeze_protocol::ExitCode::Usage);
    assert!(err.to_string().contains("no such remote (it has: origin)"), "{err}");
    assert!(err.to_string().contains("git remote add upstream"), "{err}");

    let options = remoted.options(LandTo::PullRequest, |config| {
        config.land.pr_command = vec!["no-such-forge-cli".into(), "pr".into()];
    });
    let err = breeze_engine::run(options, CancellationToken::new()).await.unwrap_err();
    assert_eq!(err.exit_code(), breeze_protocol::ExitCode::Usage);
    assert!(err.to_string().contains("no-such-forge-cli"), "{err}");
    assert!(!remoted.root().join(".breeze/runs").exists(), "no run was created");

    let config = Config::parse(
        "[land]\nto = \"remote\"\n[roles.worker]\nenv = [\"SSH_AUTH_SOCK\"]\n",
        "breeze.toml",
    );
    let err = config.unwrap_err().to_string();
    assert!(err.contains("`roles.worker.env` names SSH_AUTH_SOCK"), "{err}");
}

#[tokio::test]
async fn a_person_attaching_to_a_task_whose_pull_request_is_open_gets_it_and_updates_the_pull_request()
 {
    let plan = toml_task("1", "First", &["a.txt"], "") + &toml_task("2", "Second", &["b.txt"], "");
    let remoted = Remoted::new("plan.toml", &plan);
    // Task 2's worker holds the run open (the test's go) while task 1's pull request is open.
    let gate = remoted.repo.outside().join("gate");
    std::fs::create_dir_all(&gate).unwrap();
    let worker = breeze_test_support::role::shell_script(
        remoted.repo.outside(),
        "worker.sh",
        &format!(
            "cat > /dev/null\nif [ \"$BREEZE_TASK_ID\" = 2 ]; then\n  touch '{gate}/started'\n  while [ ! -f '{gate}/go' ]; do sleep 0.05; done\n  echo b > b.txt\nelse\n  echo a > a.txt\nfi\nprintf '{{\"schema_version\":\"worker-report.v1\",\"status\":\"completed\",\"summary\":\"ok\"}}' > \"$BREEZE_OUTPUT\"\n",
            gate = gate.display()
        ),
    );
    let options = remoted.options(LandTo::PullRequest, |config| {
        config.worker.backend = BackendKind::Command;
        config.worker.command = vec!["sh".into(), worker.display().to_string()];
        config.sandbox_writable.push(gate.display().to_string());
    });
    let run = tokio::spawn(breeze_engine::run(options, CancellationToken::new()));
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    while remoted.pr_calls().is_empty() || !gate.join("started").exists() {
        assert!(tokio::time::Instant::now() < deadline, "task 1's pull request never opened");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    // The person steps into task 1: it leaves the followed pull requests and takes a lane.
    let id = breeze_engine::run_dir::latest_run(remoted.root()).unwrap();
    let run_dir = breeze_engine::run_dir::RunDir::new(remoted.root(), &id);
    let files = AttachFiles::new(&run_dir, "1");
    files.request().unwrap();
    let paused = loop {
        if let Some(paused) = files.paused() {
            break paused;
        }
        assert!(tokio::time::Instant::now() < deadline, "the attach was never taken up");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    std::fs::write(paused.worktree.join("a.txt"), "fixed by a person\n").unwrap();
    files.leave().unwrap();
    while !files.taken() {
        assert!(tokio::time::Instant::now() < deadline, "the person's change was never taken");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    std::fs::write(gate.join("go"), "").unwrap();
    let outcome = run.await.unwrap().unwrap();

    // Reviewed and pushed to the same pull request, which is followed again.
    assert_eq!(outcome.state, RunState::Waiting, "{outcome:?}");
    assert_eq!(state(&outcome, "1"), TaskState::PrOpen);
    let journal = events(&outcome);
    let updated: Vec<&EventKind> = journal
        .iter()
        .filter(|e| matches!(e, EventKind::PullRequestUpdated { task, .. } if task == "1"))
        .collect();
    assert_eq!(updated.len(), 1, "{updated:#?}");
    let EventKind::PullRequestUpdated { branch, commit, .. } = updated[0] else { unreachable!() };
    assert_eq!(remoted.remote.tip(branch).as_deref(), Some(commit.as_str()));
    assert_eq!(
        git(&remoted.remote.path, &["show", &format!("{branch}:a.txt")]),
        "fixed by a person\n"
    );
    assert_eq!(remoted.pr_calls().len(), 2, "task 1's pull request was not opened twice");
}

#[tokio::test]
async fn a_waiting_run_follows_its_pull_request_until_the_team_merges_it_and_succeeds() {
    let remoted = Remoted::new("plan.toml", &toml_task("1", "First", &["a.txt"], ""));
    let mut options = remoted.options(LandTo::PullRequest, |config| {
        config.land.pr_poll = std::time::Duration::from_millis(100);
    });
    options.wait = true;
    let run = tokio::spawn(breeze_engine::run(options, CancellationToken::new()));
    // The person at another terminal: once the run says it waits for the pull request,
    // the team merges it on the forge.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let waits = breeze_engine::load_run(remoted.root(), None)
            .map(|snapshot| snapshot.status_seen(true).waiting)
            .unwrap_or_default();
        if waits.iter().any(|wait| wait.waiting_for == WaitingFor::PullRequests) {
            assert_eq!(waits[0].tasks, ["1"], "{waits:?}");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the run never waited for the merge");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let queue = remoted.remote.clone_as("queue");
    merge_branch(&queue, "breeze/1", MergeStyle::Squash);

    let outcome = run.await.unwrap().unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(state(&outcome, "1"), TaskState::Landed);
    let said: Vec<EventKind> = events(&outcome)
        .into_iter()
        .filter(|event| {
            matches!(event, EventKind::RunWaiting { .. } | EventKind::PullRequestMerged { .. })
        })
        .collect();
    assert!(
        matches!(&said[..], [EventKind::RunWaiting { waits }, EventKind::PullRequestMerged { .. }]
            if waits[0].waiting_for == WaitingFor::PullRequests),
        "{said:?}"
    );
    assert_eq!(remoted.changes_on_remote("a.txt"), 1);
}
