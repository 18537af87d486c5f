//! The person's own tools in their checkout see no lane: after a run that kept its lanes
//! (and while one waits, before its work lands), `node --test` run in the checkout finds
//! exactly the checkout's own tests, `tsc --listFilesOnly` lists no lane file, `rg --files`
//! neither, and `git status` is clean. breeze's worktrees live outside the checkout; the
//! checkout's `.harness-worktrees/` holds only a note naming where.
//!
//! `node` (and `npm`, to install typescript once into the target folder) are needed: a
//! machine without them skips, loudly — unless `BREEZE_REQUIRE_TOOLS` is set (CI).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{both, git, repo_with, run_in, status_json, stdout, task_state, toml_task};

/// The worker: adds a test and a TypeScript file, as the task says.
const WORKER: &str = r#"#!/bin/sh
cat > /dev/null
mkdir -p test src
printf "require('node:test')('b', () => {});\n" > test/b.test.js
printf 'export const b: number = 2;\n' > src/b.ts
printf '{"schema_version":"worker-report.v1","status":"completed","summary":"added b"}' > "$BREEZE_OUTPUT"
"#;

/// Whether `program --version` runs; else the test is skipped, loudly, unless
/// `BREEZE_REQUIRE_TOOLS` is set.
fn tool_or_skip(program: &str) -> bool {
    let found = Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("BREEZE_REQUIRE_TOOLS").is_none(),
            "BREEZE_REQUIRE_TOOLS is set but `{program}` does not run here"
        );
        eprintln!("skipped: `{program}` does not run on this machine");
    }
    found
}

/// `tsc`, installed once with npm into the target folder; `None` (said loudly) when npm
/// cannot install it — a failure when `BREEZE_REQUIRE_TOOLS` is set.
fn tsc() -> Option<PathBuf> {
    let prefix = Path::new(env!("CARGO_TARGET_TMPDIR")).join("typescript");
    let tsc = prefix.join("node_modules/.bin/tsc");
    if !tsc.exists() {
        let installed = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
            .arg(&prefix)
            .arg("typescript@5")
            .output();
        let said = match &installed {
            Ok(output) => String::from_utf8_lossy(&output.stderr).into_owned(),
            Err(err) => err.to_string(),
        };
        if !tsc.exists() {
            assert!(
                std::env::var_os("BREEZE_REQUIRE_TOOLS").is_none(),
                "BREEZE_REQUIRE_TOOLS is set but npm could not install typescript: {said}"
            );
            eprintln!("SKIPPED the tsc check: npm could not install typescript: {said}");
            return None;
        }
    }
    Some(tsc)
}

/// `node --test` run in `dir` as a person would, with no argument: how many tests it ran
/// (its `# tests N` line), and its output.
fn node_tests(dir: &Path) -> (usize, String) {
    let output = Command::new("node").arg("--test").current_dir(dir).output().unwrap();
    let text = format!("{}{}", stdout(&output), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "node --test failed in {}:\n{text}", dir.display());
    let count = text
        .lines()
        .find_map(|line| line.trim_start_matches(['#', 'ℹ', ' ']).strip_prefix("tests "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no test count in node's output:\n{text}"));
    (count, text)
}

/// What the person's tools see in `root` holds nothing of `lanes` (the worktree folder):
/// `tsc --listFilesOnly` and, when there is ripgrep, `rg --files` (hidden files, ignore
/// files off, links followed) list `expected_ts` / `expected_tests` and no lane's file.
fn no_lane_seen(root: &Path, lanes: &Path, expected_ts: &[&str], expected_tests: usize) {
    if let Some(tsc) = tsc() {
        let output = Command::new(&tsc)
            .args(["--listFilesOnly", "-p", "."])
            .current_dir(root)
            .output()
            .unwrap();
        let listed = stdout(&output);
        assert!(
            output.status.success(),
            "tsc: {listed}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let ours: Vec<&str> =
            listed.lines().filter(|line| !line.contains("/node_modules/")).collect();
        let wanted: Vec<String> =
            expected_ts.iter().map(|ts| root.join(ts).display().to_string()).collect();
        assert_eq!(ours, wanted, "tsc lists the checkout's files and nothing else:\n{listed}");
        assert!(!listed.contains(&lanes.display().to_string()), "{listed}");
    }
    match Command::new("rg")
        .args(["--files", "--hidden", "--no-ignore", "--follow"])
        .current_dir(root)
        .output()
    {
        Ok(output) => {
            let files = stdout(&output);
            let tests = files.lines().filter(|file| file.ends_with(".test.js")).count();
            assert_eq!(
                tests, expected_tests,
                "rg --files lists the checkout's tests only:\n{files}"
            );
            assert!(!files.contains(&lanes.display().to_string()), "{files}");
        }
        Err(_) => eprintln!("note: no ripgrep on this machine; `rg --files` not checked"),
    }
}

#[test]
fn the_persons_own_tools_in_the_checkout_never_see_a_lane() {
    if !tool_or_skip("node") {
        return;
    }
    let plan = toml_task("1", "Add b", &["test/b.test.js", "src/b.ts"], "");
    let (temp, root) = repo_with(&[
        ("package.json", "{\"name\":\"demo\",\"private\":true}\n"),
        ("test/a.test.js", "require('node:test')('a', () => {});\n"),
        ("src/a.ts", "export const a: number = 1;\n"),
        ("tsconfig.json", "{\"compilerOptions\":{\"strict\":true,\"noEmit\":true}}\n"),
        ("plan.toml", &plan),
    ]);
    let root = std::fs::canonicalize(root).unwrap();
    let worker = breeze_test_support::role::shell_script(temp.path(), "worker.sh", WORKER);
    let config = breeze_test_support::role::shell_worker_config(&worker, "")
        + "[land]\nrequire_approval = true\n";
    crate::support::write(&root, "breeze.toml", &config);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "config"]);
    assert_eq!(node_tests(&root).0, 1, "the checkout's own test, before any run");

    // Reviewed, waiting for approval: the lane holds the task's new test and both of the
    // checkout's; the person's tools see the checkout's own.
    let waiting = run_in(&root, &["run"]);
    assert_eq!(waiting.status.code(), Some(3), "{}", both(&waiting));
    let lanes = crate::support::worktree_folder(&root);
    assert!(!lanes.starts_with(&root), "the lanes are outside the checkout: {}", lanes.display());
    let lane = lanes.join("lane-1");
    assert!(lane.join("test/b.test.js").is_file() && lane.join("src/b.ts").is_file());
    assert_eq!(node_tests(&lane).0, 2, "the lane does hold two tests");
    let (count, text) = node_tests(&root);
    assert_eq!(count, 1, "node --test in the checkout runs its own test only:\n{text}");
    no_lane_seen(&root, &lanes, &["src/a.ts"], 1);

    // Landed; the lanes are kept for the next run: still only the checkout's own files.
    assert_eq!(run_in(&root, &["approve", "1"]).status.code(), Some(0));
    let landed = run_in(&root, &["resume"]);
    assert_eq!(landed.status.code(), Some(0), "{}", both(&landed));
    assert_eq!(task_state(&status_json(&root), "1"), "landed");
    let status = run_in(&root, &["status"]);
    assert!(
        stdout(&status).contains(&format!("lane-1 ({})", lane.display())),
        "status names the kept lane where it is: {}",
        stdout(&status)
    );
    assert!(lane.join("test/b.test.js").is_file(), "the lane is kept, with its files");
    let (count, text) = node_tests(&root);
    assert_eq!(count, 2, "the checkout's two tests, never the lane's copies:\n{text}");
    no_lane_seen(&root, &lanes, &["src/a.ts", "src/b.ts"], 2);

    // The checkout holds no folder or link of breeze's worktrees: a note naming them.
    let note_dir = root.join(".harness-worktrees");
    let entries: Vec<String> = std::fs::read_dir(&note_dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries, ["README"]);
    let note = std::fs::read_to_string(note_dir.join("README")).unwrap();
    assert!(
        note.contains(&lanes.display().to_string()) && note.contains("breeze status"),
        "{note}"
    );
    assert_eq!(git(&root, &["status", "--porcelain", "--untracked-files=all"]), "");
}
