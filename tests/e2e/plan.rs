//! `breeze plan` through the binary.

use crate::support::{both, run_in, stderr, stdout};

#[test]
fn a_dependency_cycle_exits_two_and_prints_the_cycle() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plan.toml"),
        r#"
[[task]]
id = "a"
title = "A"
dod = "-"
writes = ["a"]
depends_on = ["c"]
[[task]]
id = "b"
title = "B"
dod = "-"
writes = ["b"]
depends_on = ["a"]
[[task]]
id = "c"
title = "C"
dod = "-"
writes = ["c"]
depends_on = ["b"]
"#,
    )
    .unwrap();
    let output = run_in(dir.path(), &["plan", "plan.toml"]);
    assert_eq!(output.status.code(), Some(2), "{}", both(&output));
    let err = stderr(&output);
    // `a` (its id on line 3) depends on `c`, which depends on `b`, which depends on `a`.
    assert!(err.contains("plan.toml:3: dependency cycle: a -> c -> b -> a"), "{err}");
    assert!(err.contains("hint: fix the plan"), "{err}");
}

#[test]
fn plan_json_names_groups_lanes_and_conflict_witnesses() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plan.toml"),
        r#"
[[task]]
id = "1"
title = "All Rust sources"
dod = "-"
writes = ["src/**/*.rs"]
[[task]]
id = "2"
title = "The git module"
dod = "-"
writes = ["src/git/mod.rs"]
[[task]]
id = "3"
title = "Docs"
dod = "-"
writes = ["docs/"]
"#,
    )
    .unwrap();
    let output = run_in(dir.path(), &["plan", "plan.toml", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["workers"], 2, "{json}");
    assert_eq!(json["groups"].as_array().unwrap().len(), 2, "{json}");
    let conflicts = json["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 1, "{json}");
    assert_eq!(conflicts[0]["witness"], "src/git/mod.rs", "{json}");

    let table = run_in(dir.path(), &["plan", "plan.toml"]);
    assert!(stdout(&table).contains("src/git/mod.rs"), "{}", stdout(&table));
}

#[test]
fn status_piped_into_a_closed_reader_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    let output = run_in(dir.path(), &["demo", "--dir", demo.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let mut child = crate::support::breeze()
        .current_dir(&demo)
        .args(["report"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end at once, like `| head -0`.
    drop(child.stdout.take());
    let result = child.wait_with_output().unwrap();
    assert_eq!(result.status.code(), Some(0), "{}", String::from_utf8_lossy(&result.stderr));
    assert!(!String::from_utf8_lossy(&result.stderr).contains("panicked"));
}

#[test]
fn plan_warnings_are_printed_once_by_plan_and_by_run() {
    use crate::support::{SCRIPTED_CONFIG, git, repo_with};
    let plans = "# Plans\n\n| Task | 内容 | DoD | Writes | Depends | Status |\n|---|---|---|---|---|---|\n| 1 | Add a | a.txt exists | a.txt | - | cc:TODO |\n\n## Later\n\n- [ ] polish the docs `cc:TODO`\n";
    let (_temp, root) = repo_with(&[("Plans.md", plans), ("breeze.toml", SCRIPTED_CONFIG)]);
    let planned = run_in(&root, &["plan"]);
    assert_eq!(planned.status.code(), Some(0), "{}", both(&planned));
    let text = format!("{}{}", stdout(&planned), stderr(&planned));
    let count = text.matches("has no task id").count();
    assert_eq!(count, 1, "the unreadable item is named once: {}", both(&planned));
    assert!(text.contains("Plans.md:9"), "with its line: {}", both(&planned));

    let ran = run_in(&root, &["run"]);
    assert_eq!(ran.status.code(), Some(0), "{}", both(&ran));
    let text = format!("{}{}", stdout(&ran), stderr(&ran));
    assert_eq!(text.matches("has no task id").count(), 1, "`breeze run` says it too, once: {text}");
    assert!(git(&root, &["show", "main:Plans.md"]).contains("cc:done"));
}
