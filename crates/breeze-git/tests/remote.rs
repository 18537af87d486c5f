//! Remotes through the `git` CLI with the user's setup: fetching a branch, pushing with a
//! lease (never over someone else's push, not even one that lands between the lease check
//! and the ref update), over the file system and over smart HTTP with a credential helper;
//! and finding a task's change on a branch however it was merged.

use std::time::Duration;

use breeze_git::{
    FoundBy, GitError, Oid, PushOutcome, RemoteAccess, RemoteBranch, Repo, TaskChange,
    landing_message,
};
use breeze_test_support::remote::{BareRemote, HttpRemote, MergeStyle, merge_branch, push_work};
use breeze_test_support::{TestRepo, git, git_line, write};

fn oid(text: &str) -> Oid {
    Oid::from_str(text.trim()).unwrap()
}

/// The tests' access: the hermetic environment the test-support git uses.
fn access() -> RemoteAccess {
    let mut command = std::process::Command::new("true");
    breeze_test_support::hermetic(&mut command);
    let mut env: Vec<(String, String)> =
        std::env::vars().filter(|(name, _)| !name.starts_with("GIT_") && name != "HOME").collect();
    for (name, value) in command.get_envs() {
        if let Some(value) = value {
            env.push((name.to_string_lossy().into(), value.to_string_lossy().into()));
        }
    }
    RemoteAccess { env, timeout: Duration::from_secs(60), run_hooks: false, stop: None }
}

/// A repository with `origin` at `url` (the bare remote) and its main pushed there.
fn repo_with_remote(remote: &BareRemote, url: &str) -> TestRepo {
    let repo = TestRepo::with_files(&[("a.txt", "a\n"), ("README.md", "readme\n")]);
    remote.add_to(&repo.root, "origin", url);
    repo
}

/// A commit on `parent` changing `files`, made with the git CLI (no ref moves).
fn commit_on(repo: &TestRepo, parent: &str, files: &[(&str, &str)], message: &str) -> Oid {
    git(&repo.root, &["checkout", "-q", "--detach", parent]);
    for (path, text) in files {
        write(&repo.root, path, text);
    }
    git(&repo.root, &["add", "-A"]);
    git(&repo.root, &["commit", "-q", "-m", message]);
    let made = oid(&git_line(&repo.root, &["rev-parse", "HEAD"]));
    git(&repo.root, &["checkout", "-q", "main"]);
    made
}

#[test]
fn a_push_with_a_lease_lands_and_a_stale_lease_is_rejected_without_forcing() {
    let remote = BareRemote::new();
    let repo = repo_with_remote(&remote, remote.path.to_str().unwrap());
    let handle = Repo::open(&repo.root).unwrap();
    let target = RemoteBranch::new("origin", "main");
    let start = handle.fetch_branch(&target, &access()).unwrap().unwrap();
    assert_eq!(start.to_string(), remote.tip("main").unwrap());

    let first = commit_on(&repo, &start.to_string(), &[("b.txt", "b\n")], "first");
    let pushed = handle.push_with_lease(&target, first, Some(start), true, &access()).unwrap();
    assert_eq!(pushed, PushOutcome::Pushed);
    assert_eq!(remote.tip("main").unwrap(), first.to_string());

    // A teammate pushes; breeze still believes the branch is at `first`.
    let teammate = remote.clone_as("teammate");
    let theirs = push_work(&teammate, &[("t.txt", "theirs\n")], "teammate's work");
    let second = commit_on(&repo, &first.to_string(), &[("c.txt", "c\n")], "second");
    let outcome = handle.push_with_lease(&target, second, Some(first), true, &access()).unwrap();
    assert!(
        matches!(&outcome, PushOutcome::Rejected { reason } if reason.contains("stale info")),
        "{outcome:?}"
    );
    assert_eq!(remote.tip("main").unwrap(), theirs, "the teammate's push stays");

    // A commit that does not descend from the expected tip is refused before git runs.
    let fetched = handle.fetch_branch(&target, &access()).unwrap().unwrap();
    assert_eq!(fetched.to_string(), theirs);
    let refused = handle.push_with_lease(&target, second, Some(fetched), true, &access());
    assert!(matches!(refused, Err(GitError::NotFastForward { .. })), "{refused:?}");
    assert_eq!(remote.tip("main").unwrap(), theirs);
    assert!(remote.only_fast_forwards("main"), "{:?}", remote.ref_history("main"));
}

#[test]
fn a_push_raced_at_the_remote_between_the_lease_check_and_the_update_is_rejected() {
    let remote = BareRemote::new();
    let repo = repo_with_remote(&remote, remote.path.to_str().unwrap());
    let teammate = remote.clone_as("teammate");
    // The remote's pre-receive hook lets the teammate push first, once: the branch moves
    // after breeze's push was checked against its lease and before the remote updates it.
    let marker = remote.root.join("raced");
    let hook = format!(
        "#!/bin/sh\nif [ ! -e '{marker}' ]; then\n  touch '{marker}'\n  unset GIT_DIR GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_QUARANTINE_PATH GIT_PUSH_OPTION_COUNT\n  cd '{teammate}' && echo raced > race.txt && git add race.txt && git commit -q -m 'pushed during the race' && git push -q origin HEAD:main\nfi\nexit 0\n",
        marker = marker.display(),
        teammate = teammate.display()
    );
    let hook_path = remote.path.join("hooks/pre-receive");
    std::fs::write(&hook_path, hook).unwrap();
    std::fs::set_permissions(&hook_path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap();

    let handle = Repo::open(&repo.root).unwrap();
    let target = RemoteBranch::new("origin", "main");
    let start = handle.fetch_branch(&target, &access()).unwrap().unwrap();
    let ours = commit_on(&repo, &start.to_string(), &[("b.txt", "b\n")], "ours");
    let outcome = handle.push_with_lease(&target, ours, Some(start), true, &access()).unwrap();
    assert!(matches!(outcome, PushOutcome::Rejected { .. }), "{outcome:?}");
    let tip = remote.tip("main").unwrap();
    assert_ne!(tip, ours.to_string(), "breeze's push did not win over the teammate's");
    let subject = git_line(&remote.path, &["log", "-1", "--format=%s", "main"]);
    assert_eq!(subject, "pushed during the race");
    assert!(remote.only_fast_forwards("main"), "{:?}", remote.ref_history("main"));
}

#[test]
fn over_smart_http_the_users_credential_helper_is_used_and_no_password_is_asked_for() {
    let remote = BareRemote::new();
    let server = HttpRemote::serve(&remote.root, Some("tester:secret"));
    // The remote is populated over the file system; the repository uses HTTP.
    let seed = TestRepo::with_files(&[("a.txt", "a\n")]);
    git(&seed.root, &["push", "-q", remote.path.to_str().unwrap(), "main"]);
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    git(&repo.root, &["remote", "add", "origin", &server.url("remote.git")]);
    let handle = Repo::open(&repo.root).unwrap();
    let target = RemoteBranch::new("origin", "main");

    // No credentials anywhere: git fails at once with its message (nothing prompts).
    let failed = handle.fetch_branch(&target, &access());
    let Err(GitError::Remote { remote: name, action, detail }) = failed else {
        panic!("{failed:?}")
    };
    assert_eq!((name.as_str(), action), ("origin", "fetch from"));
    assert!(detail.contains("terminal prompts disabled") || detail.contains("401"), "{detail}");

    // The user's own git setup: a credential helper in the repository's configuration.
    let helper = repo.outside().join("helper.sh");
    std::fs::write(&helper, "#!/bin/sh\necho username=tester\necho password=secret\n").unwrap();
    std::fs::set_permissions(&helper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    git(&repo.root, &["config", "credential.helper", &helper.display().to_string()]);
    let tip = handle.fetch_branch(&target, &access()).unwrap().unwrap();
    assert_eq!(tip.to_string(), remote.tip("main").unwrap());
    assert_eq!(handle.remote_branch_tip(&target, &access()).unwrap(), Some(tip));
    git(&repo.root, &["reset", "-q", "--hard", &tip.to_string()]);
    let ours = commit_on(&repo, &tip.to_string(), &[("b.txt", "over http\n")], "over http");
    let pushed = handle.push_with_lease(&target, ours, Some(tip), true, &access()).unwrap();
    assert_eq!(pushed, PushOutcome::Pushed);
    assert_eq!(remote.tip("main").unwrap(), ours.to_string());
    // A branch the remote does not have yet: created only if it still does not exist.
    let branch = RemoteBranch::new("origin", "breeze/7");
    assert_eq!(handle.fetch_branch(&branch, &access()).unwrap(), None);
    let created = handle.push_with_lease(&branch, ours, None, false, &access()).unwrap();
    assert_eq!(created, PushOutcome::Pushed);
    let again = handle.push_with_lease(&branch, tip, None, false, &access()).unwrap();
    assert!(matches!(again, PushOutcome::Rejected { .. }), "{again:?}");
    assert_eq!(remote.tip("breeze/7").unwrap(), ours.to_string());
}

#[test]
fn a_remote_that_never_answers_fails_after_the_time_limit_and_unknown_remotes_are_named() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    git(&repo.root, &["remote", "add", "origin", &format!("http://127.0.0.1:{port}/r.git")]);
    let handle = Repo::open(&repo.root).unwrap();
    let mut quick = access();
    quick.timeout = Duration::from_secs(1);
    let failed = handle.remote_branch_tip(&RemoteBranch::new("origin", "main"), &quick);
    let Err(GitError::Remote { detail, .. }) = failed else { panic!("{failed:?}") };
    assert!(detail.contains("no answer within"), "{detail}");
    // breeze stopping meanwhile is a stop, not a problem with the remote.
    let mut stopping = access();
    stopping.stop = Some(std::sync::Arc::new(|| true));
    let stopped = handle.remote_branch_tip(&RemoteBranch::new("origin", "main"), &stopping);
    assert!(matches!(stopped, Err(GitError::Cancelled { .. })), "{stopped:?}");
    drop(silent);

    let unknown = handle.fetch_branch(&RemoteBranch::new("upstream", "main"), &access());
    let Err(err @ GitError::NoSuchRemote { .. }) = unknown else { panic!("{unknown:?}") };
    assert!(err.to_string().contains("it has: origin"), "{err}");
    let option =
        handle.fetch_branch(&RemoteBranch::new("--upload-pack=touch x", "main"), &access());
    assert!(matches!(option, Err(GitError::NoSuchRemote { .. })), "{option:?}");
}

/// A task's landing commit as breeze builds it for a pull request: the change, the Plans.md
/// flip, the trailers.
fn pull_request_commit(repo: &TestRepo, parent: &str, task: &str, file: &str) -> Oid {
    let plans = git(&repo.root, &["show", &format!("{parent}:Plans.md")]);
    let flipped = plans.replace(&format!("| {task} | todo |"), &format!("| {task} | done |"));
    let message = landing_message(&format!("task {task}"), None, task, "run-1", 1);
    commit_on(repo, parent, &[(file, &format!("{task} work\n")), ("Plans.md", &flipped)], &message)
}

#[test]
fn a_change_is_found_however_it_was_merged() {
    let remote = BareRemote::new();
    // Rows apart: each pull request flips its own, and the merges do not conflict.
    let plans = "| 1 | todo |\n\none\n\n| 2 | todo |\n\ntwo\n\n| 3 | todo |\n";
    let repo = TestRepo::with_files(&[("Plans.md", plans)]);
    remote.add_to(&repo.root, "origin", remote.path.to_str().unwrap());
    let handle = Repo::open(&repo.root).unwrap();
    let start = git_line(&repo.root, &["rev-parse", "main"]);
    let queue = remote.clone_as("queue");
    let mut changes = Vec::new();
    for (task, style) in
        [("1", MergeStyle::Squash), ("2", MergeStyle::Merge), ("3", MergeStyle::Rebase)]
    {
        let commit = pull_request_commit(&repo, &start, task, &format!("{task}.txt"));
        let branch = format!("breeze/{task}");
        git(&repo.root, &["push", "-q", "origin", &format!("{commit}:refs/heads/{branch}")]);
        let (patch_id, paths) = handle.change_identity(commit, &["Plans.md"]).unwrap();
        assert_eq!(paths, [format!("{task}.txt")]);
        let change =
            TaskChange { run_id: "run-1".into(), task_id: task.into(), commit, patch_id, paths };
        changes.push((change, style, branch));
    }
    let target = RemoteBranch::new("origin", "main");
    let since = [oid(&start)];
    for (change, style, branch) in &changes {
        let before = handle.fetch_branch(&target, &access()).unwrap().unwrap();
        assert_eq!(handle.find_change(before, &since, change).unwrap(), None, "not merged yet");
        merge_branch(&queue, branch, *style);
        let tip = handle.fetch_branch(&target, &access()).unwrap().unwrap();
        let (found, by) = handle.find_change(tip, &since, change).unwrap().expect("merged");
        let expected = match style {
            // The squash commit has neither the commit nor the trailers: only the change.
            MergeStyle::Squash => FoundBy::PatchId,
            // The merge commit makes the same change to the task's file.
            MergeStyle::Merge => FoundBy::PatchId,
            MergeStyle::Rebase => FoundBy::Trailers,
        };
        assert_eq!(by, expected, "{style:?}");
        let subject = git_line(&repo.root, &["log", "-1", "--format=%s", &found.to_string()]);
        match style {
            MergeStyle::Squash => assert_eq!(subject, format!("Squashed {branch}")),
            MergeStyle::Merge => assert!(subject.starts_with("Merge pull request"), "{subject}"),
            MergeStyle::Rebase => assert_eq!(subject, format!("feat: task {}", change.task_id)),
        }
    }
    // Each task's file is on main once.
    let tip = handle.tracking_tip(&target).unwrap().unwrap();
    for task in ["1", "2", "3"] {
        let log = git(
            &repo.root,
            &["log", "--format=%H", &tip.to_string(), "--", &format!("{task}.txt")],
        );
        assert!(!log.trim().is_empty(), "{task}");
    }
}
