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
fn plan_warnings_are_printed_once_and_run_refuses_items_without_ids_until_fill_ids() {
    use crate::support::{SCRIPTED_CONFIG, git, repo_with};
    let plans = "# Plans\n\n| Task | 内容 | DoD | Writes | Depends | Status |\n|---|---|---|---|---|---|\n| 1 | Add a | a.txt exists | a.txt | - | cc:TODO |\n\n## Later\n\n- [ ] polish the docs `cc:TODO`\n";
    let (_temp, root) = repo_with(&[("Plans.md", plans), ("breeze.toml", SCRIPTED_CONFIG)]);
    let planned = run_in(&root, &["plan"]);
    assert_eq!(planned.status.code(), Some(0), "{}", both(&planned));
    let text = format!("{}{}", stdout(&planned), stderr(&planned));
    let count = text.matches("has no task id").count();
    assert_eq!(count, 1, "the unreadable item is named once: {}", both(&planned));
    assert!(text.contains("Plans.md:9"), "with its line: {}", both(&planned));

    // `breeze run` does not run without the item: it refuses, with a one-line hint.
    let refused = run_in(&root, &["run"]);
    assert_eq!(refused.status.code(), Some(2), "{}", both(&refused));
    let err = stderr(&refused);
    assert!(err.contains("1 to-do item has no task id in") && err.contains("(line 9)"), "{err}");
    let hints: Vec<&str> = err.lines().filter(|l| l.starts_with("hint:")).collect();
    assert_eq!(
        hints,
        [
            "hint: run `breeze plan --fill-ids` to number the 1 item(s), commit the plan, then `breeze run` again"
        ],
        "{err}"
    );
    assert!(!root.join(".breeze/runs").exists(), "no run started: {err}");

    let numbered = run_in(&root, &["plan", "--fill-ids"]);
    assert_eq!(numbered.status.code(), Some(0), "{}", both(&numbered));
    assert!(stdout(&numbered).contains("line 9: 2  polish the docs"), "{}", both(&numbered));
    let after = std::fs::read_to_string(root.join("Plans.md")).unwrap();
    assert_eq!(after, plans.replace("- [ ] polish", "- [ ] 2 polish"), "only the id was written");
    // Stable: numbering a numbered plan changes nothing.
    let again = run_in(&root, &["plan", "--fill-ids"]);
    assert_eq!(again.status.code(), Some(0), "{}", both(&again));
    assert!(stdout(&again).contains("nothing to number"), "{}", both(&again));
    assert_eq!(std::fs::read_to_string(root.join("Plans.md")).unwrap(), after);

    git(&root, &["commit", "-qam", "number the plan"]);
    let ran = run_in(&root, &["run"]);
    let text = both(&ran);
    assert!(!text.contains("has no task id"), "{text}");
    assert!(text.contains("polish the docs"), "the numbered item ran: {text}");
    let on_main = git(&root, &["show", "main:Plans.md"]);
    assert!(on_main.contains("| 1 | Add a | a.txt exists | a.txt | - | cc:done |"), "{on_main}");
}

#[test]
fn fill_ids_numbers_each_form_by_its_section_and_renumbers_a_repeat() {
    let plans = "# Plans\n\n## Phase 4: Polish `cc:TODO`\n\n- [ ] 4.1 Tune colours\n- [ ] Balance the levels `cc:TODO`\n\n## Backlog\n\n| Task | Content | Status |\n|------|---------|--------|\n| T7 | Export | cc:TODO |\n|  | Import | cc:TODO |\n| T7 | Print | cc:TODO |\n\n### Refactor the parser `cc:TODO`\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Plans.md"), plans).unwrap();
    let refused = run_in(dir.path(), &["plan", "Plans.md"]);
    assert_eq!(refused.status.code(), Some(2), "{}", both(&refused));
    assert!(
        stderr(&refused).contains("Plans.md:14: task id `T7` is used 2 times in one section (lines 12, 14) — `breeze plan --fill-ids` gives the later ones new ids"),
        "{}",
        both(&refused)
    );
    let numbered = run_in(dir.path(), &["plan", "Plans.md", "--fill-ids"]);
    assert_eq!(numbered.status.code(), Some(0), "{}", both(&numbered));
    let after = std::fs::read_to_string(dir.path().join("Plans.md")).unwrap();
    assert_eq!(
        after,
        plans
            .replace("- [ ] Balance", "- [ ] 4.2 Balance")
            .replace("|  | Import |", "| T8 | Import |")
            .replace("| T7 | Print |", "| T9 | Print |")
            .replace("### Refactor", "### T10 Refactor")
    );
    let out = stdout(&numbered);
    assert!(out.contains("line 14: T9 (was `T7`, used twice in its section)  Print"), "{out}");
    assert!(out.contains("6 tasks to run, 0 done, 0 blocked"), "{out}");
}

#[test]
fn draft_renumbers_clashing_ids_after_the_plans_own_and_keeps_its_dependencies() {
    use crate::support::{SCRIPTED_CONFIG, git, repo_with};
    let plans = "# Plans\n\n| Task | Content | DoD | Writes | Depends | Status |\n|------|---------|-----|--------|---------|--------|\n| 1 | Add a | a exists | `a.txt` | - | cc:done |\n| 2 | Add b | b exists | `b.txt` | 1 | cc:TODO |\n| 3 | Add c | c exists | `c.txt` | - | cc:TODO |\n";
    let (temp, root) = repo_with(&[("Plans.md", plans), ("breeze.toml", SCRIPTED_CONFIG)]);
    // A scaffolder that numbers its tasks from 1, the second depending on the first.
    let script = temp.path().join("scaffolder.sh");
    std::fs::write(
        &script,
        "cat > /dev/null\nprintf '{\"schema_version\":\"plan-draft.v1\",\"tasks\":[{\"id\":\"1\",\"title\":\"Add metrics\",\"dod\":\"metrics served\",\"writes\":[\"src/metrics.rs\"]},{\"id\":\"2\",\"title\":\"Document metrics\",\"dod\":\"page written\",\"writes\":[\"docs/metrics.md\"],\"depends_on\":[\"1\"]}]}'\n",
    )
    .unwrap();
    let config = SCRIPTED_CONFIG.replace(
        "[roles.scaffolder]\nbackend = \"scripted\"\n",
        &format!(
            "[roles.scaffolder]\nbackend = \"command\"\ncommand = [\"sh\", \"{}\"]\n",
            script.display()
        ),
    );
    std::fs::write(root.join("breeze.toml"), config).unwrap();
    git(&root, &["commit", "-qam", "scaffolder"]);
    let drafted = run_in(&root, &["draft", "Metrics"]);
    assert_eq!(drafted.status.code(), Some(0), "{}", both(&drafted));
    let out = stdout(&drafted);
    assert!(out.contains("2 task(s) added to"), "{out}");
    assert!(out.contains("(renumbered after the plan's own ids: 1 → 4, 2 → 5)"), "{out}");
    assert!(!out.contains("asked again"), "renumbered, not refused: {out}");
    let after = std::fs::read_to_string(root.join("Plans.md")).unwrap();
    assert!(after.starts_with(plans.trim_end()), "the plan's own rows are kept:\n{after}");
    assert!(
        after.ends_with("| 4 | Add metrics | metrics served | `src/metrics.rs` | - | cc:TODO |\n| 5 | Document metrics | page written | `docs/metrics.md` | 4 | cc:TODO |\n"),
        "{after}"
    );
}

#[test]
fn fill_writes_writes_what_was_proposed_and_lists_the_tasks_still_without() {
    use crate::support::{SCRIPTED_CONFIG, repo_with};
    // The scripted scaffolder proposes the paths a task's text names: task 3 names none.
    let plans = "# Plans\n\n| Task | Content | DoD | Depends | Status |\n|------|---------|-----|---------|--------|\n| 1 | Add the model in `src/model.rs` | model works | - | cc:TODO |\n| 2 | Document it in `docs/model.md` | page written | 1 | cc:TODO |\n| 3 | Think about naming | a decision | - | cc:TODO |\n";
    let (_temp, root) = repo_with(&[("Plans.md", plans), ("breeze.toml", SCRIPTED_CONFIG)]);
    let filled = run_in(&root, &["plan", "--fill-writes"]);
    assert_eq!(filled.status.code(), Some(0), "written, with a list: {}", both(&filled));
    let out = stdout(&filled);
    assert!(out.contains("Write sets proposed by the scaffolder (2 task(s)):"), "{out}");
    assert!(out.contains("Still without a write set (1 task(s);"), "{out}");
    assert!(out.contains("  3: an empty proposal"), "{out}");
    let after = std::fs::read_to_string(root.join("Plans.md")).unwrap();
    assert!(
        after.contains(
            "| 1 | Add the model in `src/model.rs` | model works | `src/model.rs` | - | cc:TODO |"
        ),
        "{after}"
    );
    assert!(after.contains("| 3 | Think about naming | a decision | | - | cc:TODO |"), "{after}");
    let plan = breeze_plan::load(&root.join("Plans.md")).unwrap();
    let writes =
        |id: &str| plan.task(&breeze_plan::TaskId::from(id)).unwrap().writes.entries().to_vec();
    assert_eq!(writes("2"), ["docs/model.md"]);
    assert!(writes("3").is_empty(), "still runs alone");
}

#[test]
fn plan_names_the_projects_own_changelog_and_lists_only_the_shared_files_it_has() {
    let plan = "[[task]]\nid = \"1\"\ntitle = \"Sign\"\ndod = \"-\"\nwrites = [\"src/sign.py\"]\n";
    let (_temp, root) = crate::support::repo_with(&[
        ("plan.toml", plan),
        ("CHANGES.rst", "Version 1.0\n-----------\n\nUnreleased\n"),
    ]);
    let output = run_in(&root, &["plan"]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let out = stdout(&output);
    assert!(
        out.contains("Shared files: CHANGES.rst → Lead\n"),
        "the project's changelog, no Plans.md, CHANGELOG.md or spec.md it does not have:\n{out}"
    );
    let json = stdout(&run_in(&root, &["plan", "--json"]));
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["shared_files"], serde_json::json!({"CHANGES.rst": null}), "{json}");
}

#[test]
fn plan_after_a_run_that_landed_everything_says_nothing_is_left_to_run() {
    let plan = crate::support::one_task_plan();
    let (_temp, root) = crate::support::repo_with(&[
        ("breeze.toml", crate::support::SCRIPTED_CONFIG),
        ("plan.toml", &plan),
    ]);
    let ran = run_in(&root, &["run"]);
    assert_eq!(ran.status.code(), Some(0), "{}", both(&ran));
    let output = run_in(&root, &["plan"]);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let out = stdout(&output);
    assert!(
        out.starts_with("Plan ")
            && out.lines().next().unwrap().ends_with(
                "nothing left to run — 0 done, 1 already on main (by their Breeze-Task trailers), 0 blocked"
            ),
        "{out}"
    );
}
