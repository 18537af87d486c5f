//! The worktrees an earlier breeze made inside the person's checkout
//! (`.harness-worktrees/<name>`, where the project's own tools saw them): retired when a
//! run starts — a clean one removed with its branch kept, one holding uncommitted work
//! kept and said, once, at the start — and the run's lanes made outside the checkout.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use breeze_engine::ProgressEvent;
use breeze_protocol::RunState;
use tokio_util::sync::CancellationToken;

use super::Fixture;
use breeze_test_support::git;
use breeze_test_support::plan::toml_task;

/// What an earlier breeze left: worktree `name` at `<checkout>/.harness-worktrees/<name>`
/// (on a new `branch`, else detached at main), locked, marked as breeze's.
fn earlier_worktree(root: &Path, name: &str, branch: Option<&str>) -> PathBuf {
    let path = root.join(".harness-worktrees").join(name);
    let shown = path.to_str().unwrap();
    match branch {
        Some(branch) => git(root, &["worktree", "add", "-q", "-b", branch, shown]),
        None => git(root, &["worktree", "add", "-q", "--detach", shown]),
    };
    git(root, &["worktree", "lock", "--reason", "breeze run old (lane 1)", shown]);
    let marker = root.join(".git/worktrees").join(name).join("breeze-created");
    std::fs::write(marker, "created by breeze\n").unwrap();
    path
}

#[tokio::test]
async fn a_run_retires_the_worktrees_an_earlier_breeze_made_in_the_checkout() {
    let plan = toml_task("1", "A", &["a.txt"], "") + &toml_task("2", "B", &["b.txt"], "");
    let fixture = Fixture::new(&plan, &[]);
    let root = &fixture.root;
    let clean = earlier_worktree(root, "lane-1", Some("task/old"));
    std::fs::write(clean.join("old.txt"), "committed work\n").unwrap();
    git(&clean, &["add", "old.txt"]);
    git(&clean, &["commit", "-qm", "old work"]);
    let old_tip = git(root, &["rev-parse", "task/old"]);
    let dirty = earlier_worktree(root, "lane-2", None);
    std::fs::write(dirty.join("notes.txt"), "the person's notes\n").unwrap();
    let integration = earlier_worktree(root, "integration", None);
    std::fs::write(integration.join("left-by-verify.txt"), "scratch\n").unwrap();

    let mut options = fixture.options();
    options.max_workers = Some(2);
    let told = Arc::new(Mutex::new(Vec::new()));
    let sink = told.clone();
    options.progress = Arc::new(move |event: &ProgressEvent| {
        if let ProgressEvent::Notice { message } = event {
            sink.lock().unwrap().push(message.clone());
        }
    });
    let outcome = breeze_engine::run(options, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.state, RunState::Succeeded, "{outcome:?}");

    // Said at the start, once: what went and what stays.
    let told = told.lock().unwrap().clone();
    let about: Vec<&String> =
        told.iter().filter(|line| line.contains("breeze made before")).collect();
    assert_eq!(about.len(), 2, "{told:?}");
    let (removed, kept) = (about[0], about[1]);
    for gone in [&clean, &integration] {
        assert!(removed.contains(&gone.display().to_string()), "{removed}");
    }
    assert!(
        removed.contains("outside the checkout") && removed.contains("branches stay"),
        "{removed}"
    );
    assert!(kept.contains(&dirty.display().to_string()) && kept.contains("notes.txt"), "{kept}");
    assert!(kept.contains("breeze clean --force"), "{kept}");

    // The clean ones are gone, their branch with its work kept; the other is as it was.
    assert!(!clean.exists() && !integration.exists());
    assert_eq!(git(root, &["rev-parse", "task/old"]), old_tip);
    assert_eq!(std::fs::read_to_string(dirty.join("notes.txt")).unwrap(), "the person's notes\n");
    let mut left: Vec<String> = std::fs::read_dir(root.join(".harness-worktrees"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["README", "lane-2"], "the note, and the kept worktree");

    // The run's lanes are outside the checkout; lane 2's name is still held, so its lane
    // has another.
    for (lane, name) in [(1, "lane-1"), (2, "lane-2-2")] {
        let path = fixture.lane(name);
        assert!(path.is_dir() && !path.starts_with(root), "lane {lane}: {}", path.display());
    }
    assert_eq!(git(root, &["status", "--porcelain", "--untracked-files=all"]), "");
}
