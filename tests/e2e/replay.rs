//! The replay benchmark's machinery (`breeze_test_support::replay`, run for real by
//! `scripts/bench/replay-bench.sh`) on a small synthetic history made here: overlapping
//! paths, a rename, a deletion, a mode change, symbolic links, a folder turned into a
//! file, a binary file and one change touching many paths. main must end with exactly the
//! synthetic upstream's tree, every task landed once.

use std::path::Path;

use breeze_test_support::replay::{ReplayOptions, replay};
use breeze_test_support::{git, write};

/// A repository whose first commit is the base and whose next 8 first-parent commits are
/// the changes to replay.
fn synthetic_upstream(root: &Path) {
    std::fs::create_dir_all(root).unwrap();
    git(root, &["init", "-q", "-b", "main"]);
    let commit = |message: &str| {
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", message]);
    };
    for (path, text) in [
        ("README.md", "readme\n"),
        ("src/a.py", "a = 1\n"),
        ("src/b.py", "b = 1\n"),
        ("src/c.py", "c = 1\n"),
        ("docs/x.md", "x\n"),
        ("d/one", "one\n"),
        ("d/two", "two\n"),
        ("tools/run.sh", "echo run\n"),
    ] {
        write(root, path, text);
    }
    commit("base");

    write(root, "src/a.py", "a = 2\n");
    write(root, "src/new.py", "new = 1\n");
    commit("1: change a, add new");

    std::fs::create_dir(root.join("lib")).unwrap();
    git(root, &["mv", "src/b.py", "lib/b.py"]);
    write(root, "docs/x.md", "x, with b moved\n");
    commit("2: move b into lib");

    git(root, &["rm", "-q", "src/c.py"]);
    git(root, &["update-index", "--chmod=+x", "tools/run.sh"]);
    std::fs::set_permissions(
        root.join("tools/run.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    commit("3: drop c, make run.sh executable");

    std::os::unix::fs::symlink("docs/x.md", root.join("latest")).unwrap();
    write(root, "src/a.py", "a = 3\n");
    commit("4: link the latest doc");

    git(root, &["rm", "-q", "-r", "d"]);
    write(root, "d", "d is a file now\n");
    commit("5: the folder d becomes a file");

    for (path, text) in [
        ("README.md", "readme, reworked\n"),
        ("src/a.py", "a = 4\n"),
        ("lib/b.py", "b = 2\n"),
        ("docs/x.md", "x, reworked\n"),
        ("src/new.py", "new = 2\n"),
        ("docs/guide/intro.md", "intro\n"),
    ] {
        write(root, path, text);
    }
    commit("6: one large change");

    write(root, "tools/run.sh", "echo run twice\n");
    write(root, "docs/y.md", "y\n");
    std::fs::write(root.join("logo.bin"), (0..=255u8).collect::<Vec<u8>>()).unwrap();
    commit("7: a binary logo");

    std::fs::remove_file(root.join("latest")).unwrap();
    std::os::unix::fs::symlink("docs/y.md", root.join("latest")).unwrap();
    git(root, &["rm", "-q", "docs/guide/intro.md"]);
    commit("8: point latest at y");
}

fn options(temp: &Path, work: &str) -> ReplayOptions {
    let upstream = temp.join("upstream");
    if !upstream.exists() {
        synthetic_upstream(&upstream);
    }
    let mut options =
        ReplayOptions::new(Path::new(env!("CARGO_BIN_EXE_breeze")), &upstream, &temp.join(work));
    options.changes = 8;
    options.worker_seconds = 0.0;
    options.hermetic = true;
    options
}

#[test]
fn a_replayed_history_ends_with_upstreams_tree_each_change_landed_once() {
    let temp = tempfile::tempdir().unwrap();
    let report = replay(&options(temp.path(), "work")).unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(report.history.changes.len(), 8);
    assert_eq!(report.main_tree, report.upstream_tree, "{report}");
    assert!(report.problems().is_empty(), "{report}");
    assert_eq!(report.facts.landed.len(), 8, "{report}");
    // 1, 2, 3 and 5 share no path and wait for nothing: three of them take the three lanes
    // at once.
    assert_eq!(report.facts.lanes, [1, 2, 3].into(), "{report}");
    // The plan: dependencies on the previous change to each path.
    let plan = std::fs::read_to_string(temp.path().join("work/plan.toml")).unwrap();
    assert!(plan.contains("id = \"6\"\ntitle = \"6: one large change\""), "{plan}");
    assert!(plan.contains("depends_on = [\"1\", \"2\", \"4\"]"), "6 follows 1, 2 and 4:\n{plan}");
}

#[test]
fn a_replay_killed_twice_and_resumed_still_ends_with_upstreams_tree() {
    let temp = tempfile::tempdir().unwrap();
    let mut options = options(temp.path(), "work");
    options.kills = 2;
    options.seed = 7;
    // The chain 1 → 4 → 6 → 8 alone takes 2 s of work, plus the engine's own time: both
    // kills (each at most 1 s after a start) come before the run can end.
    options.worker_seconds = 0.5;
    let report = replay(&options).unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(report.kills.len(), 2, "{report}");
    assert!(report.faithful(), "{report}");
}
