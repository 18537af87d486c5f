//! Pull requests that finish themselves, against a bare remote and a scripted forge: the
//! checks and reviews commands are a small script printing files the test writes (the
//! test plays CI and the reviewer), keyed by the pushed commit. A failed check or review
//! comments go back to the worker (a `sh` worker that keeps each input it gets), the fix is
//! reviewed and pushed to the same branch with a lease, and the run says what the forge
//! said at each look.

use std::path::{Path, PathBuf};

use breeze_engine::config::LandTo;
use breeze_engine::journal::read_events;
use breeze_engine::{BackendKind, RunOptions, RunOutcome};
use breeze_protocol::{EventKind, PrChecks, PrFollowUp, PrReview, RunState, TaskState};
use breeze_test_support::plan::toml_task;
use breeze_test_support::remote::{MergeStyle, merge_branch};
use breeze_test_support::{git, git_line};
use tokio_util::sync::CancellationToken;

use super::landing_modes::{Remoted, events, state};

/// A failing `test` check with its log's address and the forge's summary.
const FAILED: &str = r#"[{"name":"test","state":"FAILURE","bucket":"fail","link":"https://ci.test/actions/runs/77/job/1","description":"2 tests failed","workflow":"ci"}]"#;
const PASSED: &str = r#"[{"name":"test","state":"SUCCESS","bucket":"pass","link":"https://ci.test/actions/runs/78/job/1"}]"#;

/// The test's forge: a folder of files its script prints, and the worker's inputs.
struct Forge {
    remoted: Remoted,
    dir: PathBuf,
}

impl Forge {
    fn new() -> Forge {
        let remoted = Remoted::new("plan.toml", &toml_task("1", "First", &["a.txt"], ""));
        let dir = remoted.repo.outside().join("forge");
        std::fs::create_dir_all(&dir).unwrap();
        let forge = Forge { remoted, dir };
        forge.write_scripts();
        forge
    }

    /// The forge's script — checks of a commit from `checks-<commit>.json`, else
    /// `checks.json`, else one pending check; reviews from `reviews.json`; main's checks
    /// from `main-checks.json`; a rerun copies `after-rerun.json` over the commit's checks;
    /// an edit keeps the description — and the worker, which keeps each input and waits
    /// on the follow-up attempt while `hold` exists.
    fn write_scripts(&self) {
        let dir = self.dir.display();
        let forge = format!(
            "#!/bin/sh\nd='{dir}'\nwhat=$1; shift\necho \"$what $*\" >> \"$d/calls\"\ncase $what in\n  checks) if [ -f \"$d/checks-$1.json\" ]; then cat \"$d/checks-$1.json\"; elif [ -f \"$d/checks.json\" ]; then cat \"$d/checks.json\"; else echo '[{{\"name\":\"test\",\"bucket\":\"pending\"}}]'; fi ;;\n  reviews) cat \"$d/reviews.json\" 2>/dev/null || echo '{{\"reviews\":[],\"comments\":[]}}' ;;\n  main) cat \"$d/main-checks.json\" 2>/dev/null || echo '[]' ;;\n  rerun) if [ -f \"$d/after-rerun.json\" ]; then cp \"$d/after-rerun.json\" \"$d/checks-$2.json\"; fi ;;\n  edit) cp \"$1\" \"$d/description.md\" ;;\nesac\nexit 0\n"
        );
        std::fs::write(self.dir.join("forge.sh"), forge).unwrap();
        let worker = format!(
            "#!/bin/sh\nd='{dir}'\nn=$(ls \"$d\" | grep -c '^input-')\nn=$((n + 1))\ncp \"$BREEZE_INPUT\" \"$d/input-$n.json\"\nif [ $n -gt 1 ] && [ -f \"$d/hold\" ]; then\n  touch \"$d/held\"\n  while [ ! -f \"$d/go\" ]; do sleep 0.05; done\nfi\necho \"attempt $n\" > a.txt\nprintf '{{\"schema_version\":\"worker-report.v1\",\"status\":\"completed\",\"summary\":\"ok\"}}' > \"$BREEZE_OUTPUT\"\n"
        );
        std::fs::write(self.dir.join("worker.sh"), worker).unwrap();
    }

    fn options(&self, tweak: impl FnOnce(&mut breeze_engine::Config)) -> RunOptions {
        let script = |what: &str, arg: &str| -> Vec<String> {
            let forge = self.dir.join("forge.sh").display().to_string();
            ["sh", &forge, what, arg].map(String::from).to_vec()
        };
        self.remoted.options(LandTo::PullRequest, |config| {
            config.worker.backend = BackendKind::Command;
            let worker = self.dir.join("worker.sh").display().to_string();
            config.worker.command = vec!["sh".into(), worker];
            config.sandbox_writable.push(self.dir.display().to_string());
            let follow = &mut config.land.pr_follow;
            follow.checks_command = script("checks", "{commit}");
            follow.reviews_command = script("reviews", "{number}");
            follow.main_checks_command = script("main", "{target_commit}");
            follow.rerun_command = Vec::new();
            follow.edit_command = script("edit", "{body_file}");
            tweak(config);
        })
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.dir.join(name), text).unwrap();
    }

    /// The pull request's commit on the remote.
    fn pushed(&self) -> String {
        self.remoted.remote.tip("breeze/1").expect("the pull request's branch is pushed")
    }

    /// The inputs the worker got, in order.
    fn inputs(&self) -> Vec<serde_json::Value> {
        (1..)
            .map(|n| self.dir.join(format!("input-{n}.json")))
            .take_while(|path| path.exists())
            .map(|path| serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap())
            .collect()
    }

    fn calls(&self, what: &str) -> usize {
        std::fs::read_to_string(self.dir.join("calls"))
            .unwrap_or_default()
            .lines()
            .filter(|line| line.split(' ').next() == Some(what))
            .count()
    }

    async fn run(&self, options: RunOptions) -> RunOutcome {
        self.remoted.run(options).await
    }

    async fn resume(&self, options: RunOptions) -> RunOutcome {
        self.remoted.resume(options).await
    }

    /// Merges the pull request as the team's merge queue would.
    fn merge(&self) {
        let queue = self.remoted.remote.clone_as("queue");
        merge_branch(&queue, "breeze/1", MergeStyle::Squash);
    }
}

/// Every event of the run, all sessions.
fn all_events(outcome: &RunOutcome) -> Vec<EventKind> {
    read_events(&outcome.run_dir.join("events.jsonl"))
        .unwrap()
        .into_iter()
        .map(|e| e.event)
        .collect()
}

/// What each look at the pull request said: checks, review, action.
fn looks(journal: &[EventKind]) -> Vec<(PrChecks, PrReview, PrFollowUp, Option<String>)> {
    journal
        .iter()
        .filter_map(|e| match e {
            EventKind::PullRequestFollowed { checks, review, action, detail, .. } => {
                Some((*checks, *review, *action, detail.clone()))
            }
            _ => None,
        })
        .collect()
}

fn sent_back(journal: &[EventKind]) -> Vec<String> {
    journal
        .iter()
        .filter_map(|e| match e {
            EventKind::SentBack { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

fn updates(journal: &[EventKind]) -> Vec<(String, String)> {
    journal
        .iter()
        .filter_map(|e| match e {
            EventKind::PullRequestUpdated { commit, previous, .. } => {
                Some((previous.clone(), commit.clone()))
            }
            _ => None,
        })
        .collect()
}

fn follow_ups(outcome: &RunOutcome) -> u32 {
    let task = outcome.status.tasks.iter().find(|t| t.id == "1").unwrap();
    task.pull_request.as_ref().map_or(0, |pr| pr.follow_ups)
}

/// Opens the pull request: the first run ends waiting for it, its checks pending.
async fn opened(forge: &Forge) -> (RunOutcome, String) {
    let first = forge.run(forge.options(|_| {})).await;
    assert_eq!(first.state, RunState::Waiting, "{first:?}");
    assert_eq!(state(&first, "1"), TaskState::PrOpen);
    let looked = looks(&events(&first));
    assert_eq!(looked.len(), 1, "{looked:?}");
    assert_eq!((looked[0].0, looked[0].2), (PrChecks::Pending, PrFollowUp::Waits));
    (first, forge.pushed())
}

fn wait_for(path: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !path.exists() {
        assert!(std::time::Instant::now() < deadline, "{} never appeared", path.display());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[tokio::test]
async fn a_failed_check_goes_back_to_the_worker_and_the_fixed_pull_request_lands_once_merged() {
    let forge = Forge::new();
    let (_, first_commit) = opened(&forge).await;
    forge.write(&format!("checks-{first_commit}.json"), FAILED);

    let second = forge.resume(forge.options(|_| {})).await;
    assert_eq!(second.state, RunState::Waiting, "{second:?}");
    assert_eq!(state(&second, "1"), TaskState::PrOpen, "the fix is pushed; its checks run");
    let journal = events(&second);
    let looked = looks(&journal);
    assert_eq!(looked[0].0, PrChecks::Failed);
    assert_eq!(looked[0].2, PrFollowUp::BackToWorker);
    let back = sent_back(&journal);
    assert_eq!(back.len(), 1, "{back:?}");
    assert!(back[0].contains("check `test` failed") && back[0].contains("runs/77"), "{back:?}");
    // The worker was told which check failed, where its log is and what the forge said.
    let inputs = forge.inputs();
    assert_eq!(inputs.len(), 2);
    let feedback = inputs[1]["review_feedback"]["gaps"][0]["issue"].as_str().unwrap().to_string();
    assert!(feedback.contains("`test` failed"), "{feedback}");
    assert!(feedback.contains("https://ci.test/actions/runs/77/job/1"), "{feedback}");
    assert!(feedback.contains("2 tests failed"), "{feedback}");
    // Reviewed again, then pushed over breeze's own last push (the lease), once.
    let rounds: Vec<u32> = journal
        .iter()
        .filter_map(|e| match e {
            EventKind::Reviewed { round, .. } => Some(*round),
            _ => None,
        })
        .collect();
    assert_eq!(rounds, [2]);
    let fixed = forge.pushed();
    assert_eq!(updates(&journal), [(first_commit.clone(), fixed.clone())]);
    assert_eq!(
        git(&forge.remoted.remote.path, &["show", &format!("{fixed}:a.txt")]),
        "attempt 2\n"
    );
    assert_eq!(forge.remoted.pr_calls().len(), 1, "the pull request is not opened again");
    let description = std::fs::read_to_string(forge.dir.join("description.md")).unwrap();
    assert!(description.contains("## Follow-up rounds"), "{description}");
    assert!(description.contains("Round 1: check `test` failed"), "{description}");
    assert_eq!(looked.last().map(|l| (l.0, l.2)), Some((PrChecks::Pending, PrFollowUp::Waits)));
    assert_eq!(follow_ups(&second), 1);

    // Green on the fix, merged by the team: landed, the follow-up counted once.
    forge.write(&format!("checks-{fixed}.json"), PASSED);
    forge.merge();
    let last = forge.resume(forge.options(|_| {})).await;
    assert_eq!(last.state, RunState::Succeeded, "{last:?}");
    assert_eq!(state(&last, "1"), TaskState::Landed);
    assert_eq!(forge.remoted.changes_on_remote("a.txt"), 1);
    let on_main = git(&forge.remoted.remote.path, &["show", "main:a.txt"]);
    assert_eq!(on_main, "attempt 2\n");
    assert_eq!(follow_ups(&last), 1);
    assert_eq!(sent_back(&all_events(&last)).len(), 1);
}

#[tokio::test]
async fn a_check_that_fails_on_mains_tip_too_is_mains_failure_and_not_charged() {
    let forge = Forge::new();
    let (_, first_commit) = opened(&forge).await;
    let lint = FAILED.replace("\"test\"", "\"lint\"");
    forge.write(&format!("checks-{first_commit}.json"), &lint);
    forge.write("main-checks.json", &lint);
    let second = forge.resume(forge.options(|_| {})).await;
    assert_eq!(second.state, RunState::Waiting, "{second:?}");
    assert_eq!(state(&second, "1"), TaskState::PrOpen);
    let journal = events(&second);
    let looked = looks(&journal);
    assert_eq!(looked.len(), 1, "said once: {looked:?}");
    let (checks, _, action, detail) = &looked[0];
    assert_eq!((*checks, *action), (PrChecks::Failed, PrFollowUp::MainFails));
    let detail = detail.clone().unwrap();
    assert!(detail.contains("`lint`") && detail.contains("main's failure"), "{detail}");
    assert!(sent_back(&journal).is_empty());
    assert_eq!(forge.inputs().len(), 1, "the worker was not called");
    assert_eq!(forge.pushed(), first_commit);
    // The target branch's tip was asked about, by its commit.
    let tip = forge.remoted.remote.tip("main").unwrap();
    let calls = std::fs::read_to_string(forge.dir.join("calls")).unwrap();
    assert!(calls.contains(&format!("main {tip}")), "{calls}");
}

#[tokio::test]
async fn a_flaky_check_that_passes_when_run_again_is_not_charged() {
    let forge = Forge::new();
    let (_, first_commit) = opened(&forge).await;
    forge.write(&format!("checks-{first_commit}.json"), FAILED);
    forge
        .write("after-rerun.json", r#"[{"name":"test","state":"IN_PROGRESS","bucket":"pending"}]"#);
    let options = || {
        forge.options(|config| {
            let script = forge.dir.join("forge.sh").display().to_string();
            config.land.pr_follow.rerun_command =
                ["sh", &script, "rerun", "{check}", "{commit}"].map(String::from).to_vec();
        })
    };
    let second = forge.resume(options()).await;
    assert_eq!(second.state, RunState::Waiting, "{second:?}");
    let looked = looks(&events(&second));
    assert_eq!(looked.iter().map(|l| l.2).collect::<Vec<_>>(), [PrFollowUp::Rerun]);
    assert_eq!(forge.calls("rerun"), 1);
    let calls = std::fs::read_to_string(forge.dir.join("calls")).unwrap();
    assert!(calls.contains(&format!("rerun test {first_commit}")), "{calls}");

    // Pending again after failing: it waits.
    let third = forge.resume(options()).await;
    let looked = looks(&events(&third));
    assert_eq!(
        looked.iter().map(|l| (l.0, l.2)).collect::<Vec<_>>(),
        [(PrChecks::Pending, PrFollowUp::Waits)]
    );

    // It passes on the re-run, and is merged: nothing was charged to the task.
    forge.write(&format!("checks-{first_commit}.json"), PASSED);
    forge.merge();
    let last = forge.resume(options()).await;
    assert_eq!(last.state, RunState::Succeeded, "{last:?}");
    let journal = all_events(&last);
    assert!(sent_back(&journal).is_empty(), "{journal:#?}");
    assert_eq!(forge.inputs().len(), 1, "the worker was called once");
    assert_eq!(forge.calls("rerun"), 1, "asked once for the commit");
    assert_eq!(follow_ups(&last), 0);
}

#[tokio::test]
async fn review_comments_go_back_to_the_worker_with_the_comments_and_only_once() {
    let forge = Forge::new();
    opened(&forge).await;
    forge.write(
        "reviews.json",
        r#"{"reviews":[{"id":"PRR_1","author":{"login":"ana"},"state":"CHANGES_REQUESTED","body":"Please rename `x` to `count`.","submittedAt":"2026-01-01T10:00:00Z"}],
            "comments":[{"id":"IC_2","author":{"login":"bo"},"body":"Why does a.txt say attempt?","createdAt":"2026-01-01T10:05:00Z"}]}"#,
    );
    let second = forge.resume(forge.options(|_| {})).await;
    assert_eq!(second.state, RunState::Waiting, "{second:?}");
    let journal = events(&second);
    let looked = looks(&journal);
    assert_eq!((looked[0].1, looked[0].2), (PrReview::ChangesRequested, PrFollowUp::BackToWorker));
    let inputs = forge.inputs();
    assert_eq!(inputs.len(), 2);
    let gaps = inputs[1]["review_feedback"]["gaps"].to_string();
    assert!(
        gaps.contains("@ana requests changes") && gaps.contains("Please rename `x` to `count`."),
        "{gaps}"
    );
    assert!(gaps.contains("@bo") && gaps.contains("Why does a.txt say attempt?"), "{gaps}");
    assert_eq!(updates(&journal).len(), 1);
    // The same reviews at the next look: handed over already, nothing goes back again.
    assert_eq!(sent_back(&journal).len(), 1);
    assert_eq!(looked.last().map(|l| l.2), Some(PrFollowUp::Waits));
    let third = forge.resume(forge.options(|_| {})).await;
    assert!(sent_back(&events(&third)).is_empty());
    assert_eq!(forge.inputs().len(), 2);
    assert_eq!(follow_ups(&third), 1);
}

#[tokio::test]
async fn follow_up_rounds_are_capped_and_then_the_task_escalates_with_the_last_failure() {
    let forge = Forge::new();
    opened(&forge).await;
    // Red whatever the worker pushes.
    forge.write("checks.json", FAILED);
    let options = || forge.options(|config| config.land.pr_follow.rounds = 1);
    let second = forge.resume(options()).await;
    assert_eq!(state(&second, "1"), TaskState::Escalated, "{second:?}");
    let journal = events(&second);
    assert_eq!(sent_back(&journal).len(), 1, "one round");
    assert_eq!(updates(&journal).len(), 1);
    let actions: Vec<PrFollowUp> = looks(&journal).iter().map(|l| l.2).collect();
    assert_eq!(actions, [PrFollowUp::BackToWorker, PrFollowUp::Escalated]);
    let task = second.status.tasks.iter().find(|t| t.id == "1").unwrap();
    let reason = task.reason.clone().unwrap();
    assert!(
        reason.contains("1 follow-up round(s)") && reason.contains("land.pr_rounds"),
        "{reason}"
    );
    assert!(reason.contains("check `test` failed"), "{reason}");
    assert_eq!(task.pull_request.as_ref().unwrap().checks, Some(PrChecks::Failed));
}

#[tokio::test]
async fn a_run_stopped_during_a_follow_up_round_is_finished_once_by_resume() {
    let forge = Forge::new();
    let (_, first_commit) = opened(&forge).await;
    forge.write(&format!("checks-{first_commit}.json"), FAILED);
    forge.write("hold", "");
    let cancel = CancellationToken::new();
    let run = tokio::spawn(breeze_engine::resume(forge.options(|_| {}), cancel.clone()));
    let held = forge.dir.join("held");
    tokio::task::spawn_blocking(move || wait_for(&held)).await.unwrap();
    cancel.cancel();
    let stopped = run.await.unwrap().unwrap();
    assert_eq!(stopped.state, RunState::Interrupted, "{stopped:?}");
    assert_eq!(forge.pushed(), first_commit, "nothing pushed yet");

    std::fs::remove_file(forge.dir.join("hold")).unwrap();
    let resumed = forge.resume(forge.options(|_| {})).await;
    assert_eq!(state(&resumed, "1"), TaskState::PrOpen, "{resumed:?}");
    let journal = all_events(&resumed);
    assert_eq!(sent_back(&journal).len(), 1, "one round, not two");
    let pushed = updates(&journal);
    assert_eq!(pushed.len(), 1, "pushed once: {pushed:?}");
    assert_eq!(pushed[0].0, first_commit);
    assert_eq!(forge.pushed(), pushed[0].1);
    assert_eq!(follow_ups(&resumed), 1);
    // The round's feedback reached the worker that finished it.
    let last_input = forge.inputs().pop().unwrap();
    assert!(last_input["review_feedback"].to_string().contains("`test` failed"));
}

#[tokio::test]
async fn a_pull_request_merged_during_its_follow_up_round_lands_and_the_round_is_dropped() {
    let forge = Forge::new();
    let (_, first_commit) = opened(&forge).await;
    forge.write(&format!("checks-{first_commit}.json"), FAILED);
    forge.write("hold", "");
    let run = tokio::spawn(breeze_engine::resume(forge.options(|_| {}), CancellationToken::new()));
    let held = forge.dir.join("held");
    tokio::task::spawn_blocking(move || wait_for(&held)).await.unwrap();
    // The team merges the pull request as it is while the worker fixes it.
    forge.merge();
    let merged = forge.remoted.remote.tip("main").unwrap();
    forge.write("go", "");
    let outcome = run.await.unwrap().unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");
    assert_eq!(state(&outcome, "1"), TaskState::Landed);
    let journal = events(&outcome);
    assert!(updates(&journal).is_empty(), "the round's fix is not pushed: {journal:#?}");
    assert_eq!(forge.pushed(), first_commit);
    let landed: Vec<&String> = journal
        .iter()
        .filter_map(|e| match e {
            EventKind::Landed { commit, .. } => Some(commit),
            _ => None,
        })
        .collect();
    assert_eq!(landed, [&merged]);
    assert_eq!(forge.remoted.remote.tip("main").unwrap(), merged, "main is as the team left it");
    assert_eq!(git_line(forge.remoted.root(), &["rev-parse", "main"]), merged);
}
