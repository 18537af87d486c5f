//! Reading real-world Plans.md shapes (fixtures in `tests/fixtures/`).

use std::path::{Path, PathBuf};

use breeze_plan::{Plan, ProblemKind, RiskFlag, TaskId, analyze, load};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn ids(plan: &Plan) -> Vec<&str> {
    plan.tasks.iter().map(|t| t.id.as_str()).collect()
}

fn deps(plan: &Plan, id: &str) -> Vec<String> {
    let task = plan.task(&TaskId::from(id)).unwrap_or_else(|| panic!("no task {id}"));
    task.depends_on.iter().map(ToString::to_string).collect()
}

fn warning_lines(plan: &Plan) -> Vec<String> {
    plan.warnings.iter().map(ToString::to_string).collect()
}

#[test]
fn template_table_with_writes_column() {
    let plan = load(&fixture("template.md")).unwrap();
    assert_eq!(ids(&plan), ["1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.10"]);
    assert!(plan.done.contains(&TaskId::from("1.0")));
    let t12 = plan.task(&TaskId::from("1.2")).unwrap();
    assert_eq!(t12.title, "Login endpoint with auth cookie");
    assert_eq!(t12.writes.entries(), ["src/auth/", "tests/auth/*.rs"]);
    assert_eq!(t12.risk, [RiskFlag::SecuritySensitive]);
    assert_eq!(t12.line, 10);
    assert_eq!(t12.marker.as_deref(), Some("cc:todo"));
    assert_eq!(deps(&plan, "1.2"), ["1.1"]);
    // "author" is not "auth".
    assert!(plan.task(&TaskId::from("1.3")).unwrap().risk.is_empty());
    let t14 = plan.task(&TaskId::from("1.4")).unwrap();
    assert_eq!(t14.risk, [RiskFlag::StateMigration]);
    assert!(t14.advisor_required);
    assert_eq!(t14.title, "Users table migration", "HTML comment is not part of the title");
    assert_eq!(plan.task(&TaskId::from("1.5")).unwrap().risk, [RiskFlag::NeedsSpike]);
    // `、` separates dependencies like `,`.
    assert_eq!(deps(&plan, "1.10"), ["1.5", "1.6"]);
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
}

#[test]
fn other_tables_code_blocks_and_comments_are_not_tasks() {
    let plan = load(&fixture("other-tables.md")).unwrap();
    // `| Task | 내용 | 구현 가능성 | Status |` is a task table (a Task and a Status
    // column; the others are optional): 1.1 is done, 1.2 runs. The legend, the phase
    // summary, the template in a code fence, the commented-out table and the
    // `Reviewer | Verdict` table hold no tasks.
    assert_eq!(ids(&plan), ["1.2", "17.1", "17.2"]);
    assert!(plan.done.contains(&TaskId::from("1.1")));
    assert_eq!(deps(&plan, "17.2"), ["17.1"]);
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
}

#[test]
fn markers_in_backticks_with_suffixes_and_in_several_languages() {
    let plan = load(&fixture("markers.md")).unwrap();
    assert_eq!(ids(&plan), ["1.2", "1.3", "1.6", "1.9"]);
    for done in ["0.1", "0.2", "0.3", "0.4", "0.5", "1.1"] {
        assert!(plan.done.contains(&TaskId::from(done)), "{done} should be done");
    }
    for blocked in ["1.4", "1.5", "1.7", "1.8"] {
        assert!(plan.blocked.contains(&TaskId::from(blocked)), "{blocked} should be blocked");
    }
    assert_eq!(plan.task(&TaskId::from("1.2")).unwrap().marker.as_deref(), Some("cc:TODO"));
    assert_eq!(plan.task(&TaskId::from("1.3")).unwrap().title, "セッション管理");
    assert_eq!(plan.task(&TaskId::from("1.3")).unwrap().marker.as_deref(), Some("cc:WIP"));
    assert_eq!(deps(&plan, "1.2"), Vec::<String>::new(), "0.3 is done");
    assert_eq!(deps(&plan, "1.9"), ["1.2", "1.6"]);
    assert_eq!(plan.task(&TaskId::from("1.6")).unwrap().risk, [RiskFlag::SecuritySensitive]);

    let warnings = warning_lines(&plan).join("\n");
    assert!(
        warnings.contains("markers.md:19: row has 6 cells but the header of its table (`| Task | 内容 | DoD | Depends | Status |`) has 5; it is finished"),
        "{warnings}"
    );
    assert!(
        warnings
            .contains("markers.md:22: task `1.4` is marked `blocked(API 키 대기)`; not scheduled"),
        "{warnings}"
    );
    assert!(
        warnings.contains("markers.md:23: task `1.5` depends on blocked task `1.4`; not scheduled"),
        "{warnings}"
    );
    assert!(warnings.contains("markers.md:25: task `1.7` is marked `cc:保留`"), "{warnings}");
    assert!(
        warnings.contains("markers.md:26: task `1.8` has the status `maybe later`, which breeze does not know; not scheduled — write `cc:todo`"),
        "{warnings}"
    );
}

#[test]
fn checklists_with_markers_are_tasks() {
    let plan = load(&fixture("checklist.md")).unwrap();
    // `- [ ] Task 1.3: … | Status: cc:TODO` and `- [ ] 2.1 … `cc:TODO`` are tasks now.
    assert_eq!(ids(&plan), ["1.3", "2.1", "3.1", "3.2"]);
    assert!(plan.done.contains(&TaskId::from("1.1")));
    assert!(plan.done.contains(&TaskId::from("1.2")));
    assert_eq!(plan.task(&TaskId::from("1.3")).unwrap().title, "Establish automated TDD pipeline.");
    assert_eq!(plan.task(&TaskId::from("2.1")).unwrap().title, "Add alert rules");
    assert_eq!(plan.task(&TaskId::from("2.1")).unwrap().line, 9);
    assert_eq!(deps(&plan, "3.1"), Vec::<String>::new());
    assert_eq!(deps(&plan, "3.2"), ["1.3", "2.1"]);
    // An item without an id and without a marker is not a task, and not a problem.
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
}

#[test]
fn a_file_with_only_checklists_is_an_error_that_says_why() {
    let err = load(&fixture("checklist-only.md")).unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.contains("checklist-only.md: no task table found — add a table with the header"),
        "{shown}"
    );
    assert!(
        shown.contains("the 3 checklist item(s) found (first at line 5) are not scheduled"),
        "{shown}"
    );
    assert!(err.has(ProblemKind::Syntax));
}

#[test]
fn heading_form_with_depends_lines() {
    let plan = load(&fixture("headings.md")).unwrap();
    assert_eq!(ids(&plan), ["41.2", "H-1", "41.10"]);
    assert!(plan.done.contains(&TaskId::from("41.1")));
    let t = plan.task(&TaskId::from("41.2")).unwrap();
    assert_eq!(t.title, "Resume after crash");
    assert_eq!(t.writes.entries(), ["src/loop/resume.rs", "tests/resume.rs"]);
    assert!(t.dod.starts_with("resume picks up the last cycle; no job runs twice"), "{}", t.dod);
    assert!(t.advisor_required);
    assert_eq!(t.line, 9);
    assert_eq!(deps(&plan, "41.2"), Vec::<String>::new());
    assert_eq!(deps(&plan, "H-1"), ["41.2"]);
    assert_eq!(plan.task(&TaskId::from("H-1")).unwrap().writes.entries(), ["docs/loop.md"]);
    assert_eq!(deps(&plan, "41.10"), ["41.2", "H-1"]);
    assert_eq!(
        plan.task(&TaskId::from("41.10")).unwrap().dod,
        "`status --json` prints the cycle count"
    );
}

#[test]
fn phase_and_prefix_dependencies_and_archived_ids() {
    let plan = load(&fixture("phases.md")).unwrap();
    assert_eq!(deps(&plan, "5.15.0"), ["5.14.2"], "Phase 5.14 = its unfinished tasks");
    assert_eq!(deps(&plan, "5.15.1"), ["5.15.0"], "8a.7 is archived");
    assert_eq!(deps(&plan, "GEO-4.1"), ["GEO-3.1"], "GEO-3 = GEO-3.x, not GEO-31.x");
    assert_eq!(deps(&plan, "6.1"), ["5.15.0", "5.15.0b", "5.15.1"]);
    // The archive the plan links to shows 8a.7 done; nothing shows S12.3.
    assert!(plan.done.contains(&TaskId::from("8a.7")));
    assert!(!plan.done.contains(&TaskId::from("S12.3")));
    let task = |id: &str| plan.task(&TaskId::from(id)).unwrap();
    assert_eq!(task("5.15.1").blocked, None);
    assert_eq!(
        task("6.1").blocked.as_deref(),
        Some("depends on `S12.3`, which is not in the plan")
    );
    let warnings = warning_lines(&plan).join("\n");
    assert!(
        warnings.contains("phases.md:18: task `5.15.1` depends on `8a.7`, which the plan's archive `archive/Plans-phase8.md` shows done; treated as done"),
        "{warnings}"
    );
    assert!(
        warnings.contains("phases.md:28: task `6.1` depends on `S12.3`, which matches no task, phase, range or id prefix here or in an archive the plan names, so `6.1` is blocked"),
        "{warnings}"
    );
    // Without the archive (the text alone), 5.15.1 is held back too.
    let text = std::fs::read_to_string(fixture("phases.md")).unwrap();
    let alone = breeze_plan::parse_plans_md(&text, Path::new("phases.md")).unwrap();
    let held = alone.tasks.iter().find(|t| t.id.as_str() == "5.15.1").unwrap();
    assert_eq!(held.blocked.as_deref(), Some("depends on `8a.7`, which is not in the plan"));
    let analysis = analyze(&plan, 3).unwrap();
    let order: Vec<&str> = analysis.order().iter().map(|&i| plan.tasks[i].id.as_str()).collect();
    assert_eq!(
        order,
        ["5.14.2", "5.15.0", "5.15.0b", "5.15.1", "6.1", "GEO-3.1", "GEO-4.1", "GEO-31.1"]
    );
    let table = breeze_plan::render::table(&plan, &analysis);
    assert!(table.contains("7 tasks to run, 3 done, 1 blocked"), "{table}");
}

#[test]
fn duplicate_ids_are_an_error_naming_both_lines() {
    let err = load(&fixture("duplicate.md")).unwrap_err();
    let problems = err.problems();
    assert_eq!(problems.len(), 1, "{err}");
    let shown = problems[0].to_string();
    assert!(
        shown.ends_with("duplicate.md:7: task id `1` is used 2 times in one section (lines 5, 7) — `breeze plan --fill-ids` gives the later ones new ids; or give each task its own id, e.g. `1` and `1b`"),
        "{shown}"
    );
    assert_eq!(problems[0].kind, ProblemKind::DuplicateId);
}

#[test]
fn dependency_cycles_in_plans_md() {
    let plan = load(&fixture("cycle.md")).unwrap();
    let err = analyze(&plan, 3).unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.contains(
            "cycle.md:5: dependency cycle: 1 -> 3 -> 2 -> 1 (each task depends on the next)"
        ),
        "{shown}"
    );
    assert_eq!(err.cycles(), vec![vec![TaskId::from("1"), TaskId::from("3"), TaskId::from("2")]]);
}

#[test]
fn two_owners_of_a_shared_file() {
    let plan = load(&fixture("two-owners.md")).unwrap();
    let err = analyze(&plan, 3).unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.contains("two-owners.md:6: the shared file `CHANGELOG.md` is claimed by 2 tasks: `1` (line 5), `2` (line 6)"),
        "{shown}"
    );
    // `*.md` also claims Plans.md, but only task 1 does: one owner is fine.
    assert_eq!(err.problems().len(), 1, "{shown}");
    assert!(err.has(ProblemKind::SharedFileOwners));
}

#[test]
fn bad_write_entries_name_file_line_and_fix() {
    let err = load(&fixture("bad-write.md")).unwrap_err();
    let lines: Vec<String> = err.problems().iter().map(ToString::to_string).collect();
    assert_eq!(lines.len(), 2, "done rows are not checked: {lines:?}");
    assert!(lines[0].ends_with("bad-write.md:6: task `2`: write-set entry `../other-repo/x.rs`: `..` leaves the directory it names and may leave the repository — write the path from the repository root without `..`"), "{}", lines[0]);
    assert!(lines[1].ends_with("bad-write.md:7: task `3`: write-set entry `/usr/local/bin/tool`: absolute path — write it relative to the repository root, e.g. `usr/local/bin/tool`"), "{}", lines[1]);
}

#[test]
fn directory_named_without_slash_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src/auth")).unwrap();
    let plan_path = dir.path().join("Plans.md");
    std::fs::write(
        &plan_path,
        "| Task | x | DoD | Writes | Depends | Status |\n|-|-|-|-|-|-|\n| 1 | a | b | src/auth | - | cc:todo |\n",
    )
    .unwrap();
    let plan = load(&plan_path).unwrap();
    let w = warning_lines(&plan).join("\n");
    assert!(w.contains("Plans.md:3: task `1`: `src/auth` is a directory; as written it claims only a file of that name — write `src/auth/`"), "{w}");
}

#[test]
fn a_folder_replaced_by_a_file_must_have_its_files_claimed() {
    // Issue 23's task A turns the folder `d/` into a file: it must claim `d/one` and
    // `d/two`, whose deletion is part of the change.
    let dir = tempfile::tempdir().unwrap();
    for file in ["d/one", "d/two"] {
        std::fs::create_dir_all(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join(file), "x\n").unwrap();
    }
    let plan_path = dir.path().join("Plans.md");
    let rows = |writes: &str| {
        format!(
            "| Task | x | DoD | Writes | Depends | Status |\n|-|-|-|-|-|-|\n| A | a | b | {writes} | - | cc:todo |\n"
        )
    };
    std::fs::write(&plan_path, rows("`d`, `d/one`")).unwrap();
    let w = warning_lines(&load(&plan_path).unwrap()).join("\n");
    assert!(w.contains("task `A`: `d` is a directory; as written it claims only a file of that name — write `d/` to claim what is inside, or, to replace the folder with a file, claim its files too (`d/two`)"), "{w}");
    // Claiming the folder's files too is a folder replaced by a file, as meant.
    std::fs::write(&plan_path, rows("`d`, `d/one`, `d/two`")).unwrap();
    assert_eq!(warning_lines(&load(&plan_path).unwrap()), Vec::<String>::new());
    std::fs::write(&plan_path, rows("`d`, `d/`")).unwrap();
    assert_eq!(warning_lines(&load(&plan_path).unwrap()), Vec::<String>::new());
}

#[test]
fn unreadable_and_non_utf8_files() {
    let err = load(&fixture("does-not-exist.md")).unwrap_err();
    assert!(err.has(ProblemKind::Io));
    assert!(err.to_string().contains("does-not-exist.md: cannot read the plan"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("Plans.md");
    std::fs::write(&p, b"# ok\n\n| Task \xff |\n").unwrap();
    let err = load(&p).unwrap_err();
    assert!(err.to_string().contains("Plans.md:3: the plan is not UTF-8 text"), "{err}");
}

#[test]
fn odd_input_never_panics() {
    let samples = [
        "",
        "|",
        "||||",
        "| Task | DoD | Depends | Status |\n|--|--|--|--|\n| | | | |\n| x |\n",
        "| Task | C | DoD | Depends | Status |\n| 1 | a | b | - | cc:",
        "```\n| Task | C | DoD | Depends | Status |\n",
        "<!--\n| Task | C | DoD | Depends | Status |",
        "#### 1: `cc:TODO`\nDepends:\n",
        "| Task | C | DoD | Depends | Status |\n|-|-|-|-|-|\n| 1 | a | b | Phase | cc:todo |\n| 2 | a | b | 1 (, | cc:todo |\n",
        "\u{feff}| Task | C | DoD | Depends | Status |\r\n|-|-|-|-|-|\r\n| 1 | ü | b | - | cc:todo |\r\n",
    ];
    for s in samples {
        let _ = breeze_plan::parse_plans_md(s, Path::new("Plans.md"));
        let _ = breeze_plan::plans_md::status_markers(s);
    }
    let plan = breeze_plan::parse_plans_md(samples[9], Path::new("Plans.md")).unwrap();
    assert_eq!(plan.tasks[0].title, "ü");
}

#[test]
fn status_edits_on_real_shapes_touch_only_the_marker() {
    use breeze_plan::plans_md::{set_status, status_markers};
    let text = std::fs::read_to_string(fixture("markers.md")).unwrap();
    let before = status_markers(&text);
    assert_eq!(before["1.2"], "cc:TODO (手動)");
    assert_eq!(before["0.3"], "cc:完了 [c386c57]");
    assert_eq!(before["1.3"], "**cc:WIP**");

    let edited = set_status(&text, &TaskId::from("1.2"), "cc:done [1a2b3c4]").unwrap();
    let diff: Vec<(&str, &str)> =
        text.lines().zip(edited.lines()).filter(|(a, b)| a != b).collect();
    assert_eq!(
        diff,
        [(
            "| 1.2 | 手動で DNS を設定 | `dig` が IP を返す | 0.3 | cc:TODO (手動) |",
            "| 1.2 | 手動で DNS を設定 | `dig` が IP を返す | 0.3 | cc:done [1a2b3c4] (手動) |"
        )]
    );
    let after = status_markers(&edited);
    let changed: Vec<&String> = before.keys().filter(|k| before[*k] != after[*k]).collect();
    assert_eq!(changed, ["1.2"], "a worker's marker edit is visible by comparing snapshots");
    // The edited plan no longer schedules 1.2, and 1.3 still waits for nothing else.
    let plan = breeze_plan::parse_plans_md(&edited, Path::new("Plans.md")).unwrap();
    assert!(plan.done.contains(&TaskId::from("1.2")));
    assert_eq!(deps(&plan, "1.3"), Vec::<String>::new());

    let bold = set_status(&text, &TaskId::from("1.3"), "cc:done").unwrap();
    assert!(bold.contains("| **cc:done** |"));

    let headings = std::fs::read_to_string(fixture("headings.md")).unwrap();
    let edited = set_status(&headings, &TaskId::from("H-1"), "cc:done [ffff000]").unwrap();
    assert!(edited.contains("### H-1: Hyphenated heading id `cc:done [ffff000]`"), "{edited}");
    assert_eq!(edited.len(), headings.len() + "cc:done [ffff000]".len() - "cc:WIP".len());

    let err = set_status(&text, &TaskId::from("9.9"), "cc:done").unwrap_err();
    assert!(
        err.to_string().contains("task `9.9` is not in a task table, task heading or checklist"),
        "{err}"
    );
}
