//! One fixture per real-world Plans.md form (`tests/fixtures/forms/`): every open item
//! is planned with the right id and dependencies, done items are not, nothing is
//! warned about that should not be, and status edits keep every other byte.

use std::path::PathBuf;

use breeze_plan::plans_md::{set_status, status_markers};
use breeze_plan::{Plan, TaskId, load, parse_plans_md};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/forms").join(name)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

fn ids(plan: &Plan) -> Vec<&str> {
    plan.tasks.iter().map(|t| t.id.as_str()).collect()
}

fn deps(plan: &Plan, id: &str) -> Vec<String> {
    let task = plan.task(&TaskId::from(id)).unwrap_or_else(|| panic!("no task {id}"));
    task.depends_on.iter().map(ToString::to_string).collect()
}

fn done(plan: &Plan) -> Vec<&str> {
    plan.done.iter().map(TaskId::as_str).collect()
}

fn warnings(plan: &Plan) -> Vec<String> {
    plan.warnings.iter().map(|w| format!("{}: {}", w.line.unwrap_or(0), w.message)).collect()
}

/// Flips `id` to `cc:done` and checks that exactly one line changed, to `expected`,
/// and that the re-read plan has `id` done.
fn flip(text: &str, id: &str, expected: &str) {
    let edited = set_status(text, &TaskId::from(id), "cc:done").unwrap();
    let changed: Vec<(&str, &str)> =
        text.lines().zip(edited.lines()).filter(|(a, b)| a != b).collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert_eq!(changed[0].1, expected);
    assert_eq!(text.lines().count(), edited.lines().count());
    let plan = parse_plans_md(&edited, std::path::Path::new("Plans.md")).unwrap();
    assert!(plan.done.contains(&TaskId::from(id)), "{id} is done after the edit");
    let before = status_markers(text);
    let after = status_markers(&edited);
    assert_eq!(before.keys().collect::<Vec<_>>(), after.keys().collect::<Vec<_>>());
    let others_changed: Vec<&String> =
        before.keys().filter(|k| *k != id && before[*k] != after[*k]).collect();
    assert!(others_changed.is_empty(), "{others_changed:?}");
}

#[test]
fn checklists_with_markers_ids_and_depends() {
    let plan = load(&fixture("checklists.md")).unwrap();
    assert_eq!(
        ids(&plan),
        ["T910", "W3-001", "W3-002", "1.1", "1.2", "T911", "#58", "#59", "T912"]
    );
    assert_eq!(done(&plan), ["0.9", "1.0", "T909"]);
    assert_eq!(deps(&plan, "T910"), Vec::<String>::new(), "T909 is done");
    assert_eq!(deps(&plan, "W3-002"), ["W3-001"]);
    assert_eq!(deps(&plan, "1.2"), ["1.1"]);
    assert_eq!(deps(&plan, "#59"), ["#58"]);
    assert_eq!(deps(&plan, "T912"), ["T910", "T911"]);
    let t910 = plan.task(&TaskId::from("T910")).unwrap();
    assert_eq!(t910.title, "Resize uploads on the server");
    assert_eq!(t910.dod, "keep EXIF orientation; thumbnails at 256 px");
    assert_eq!((t910.line, t910.marker.as_deref()), (7, Some("cc:WIP")));
    assert_eq!(plan.task(&TaskId::from("W3-001")).unwrap().title, "Album sharing links");
    assert_eq!(plan.task(&TaskId::from("T911")).unwrap().title, "Dark mode");
    assert_eq!(plan.task(&TaskId::from("#59")).unwrap().title, "E5.2a: Retry failed uploads");
    assert_eq!(
        plan.task(&TaskId::from("T912")).unwrap().title,
        "Offline queue — needs a design note first"
    );
    // The legend at the end is not a list of tasks.
    assert!(plan.warnings.is_empty(), "{:?}", warnings(&plan));

    let text = read("checklists.md");
    flip(&text, "T910", "- [ ] T910: Resize uploads on the server `cc:done` depends:T909");
    flip(
        &text,
        "W3-002",
        "- [ ] `cc:done [feature:tdd]` **W3-002**: Revoke a sharing link depends:W3-001",
    );
    flip(&text, "1.2", "- [ ] 1.2 Session refresh `cc:done` depends:1.1");
}

#[test]
fn tables_with_any_subset_of_columns() {
    let plan = load(&fixture("tables.md")).unwrap();
    assert_eq!(ids(&plan), ["1.2", "STK-01", "STK-02", "STK-04", "3.2", "3.3", "4.1", "5.1"]);
    assert_eq!(done(&plan), ["1.1", "3.1", "4.2", "STK-03"]);
    assert_eq!(deps(&plan, "STK-02"), ["STK-01"]);
    assert_eq!(deps(&plan, "4.1"), ["3.2"]);
    assert_eq!(deps(&plan, "5.1"), ["4.1"]);
    let stk = plan.task(&TaskId::from("STK-02")).unwrap();
    assert_eq!((stk.title.as_str(), stk.dod.as_str()), ("入荷 API", "入荷 API"));
    let t41 = plan.task(&TaskId::from("4.1")).unwrap();
    assert_eq!(t41.title, "Stock can go negative");
    assert_eq!(t41.dod, "Reject the update; test added");
    // A status in the marker column after Status.
    assert_eq!(plan.task(&TaskId::from("3.2")).unwrap().marker.as_deref(), Some("cc:TODO"));
    assert_eq!(plan.task(&TaskId::from("5.1")).unwrap().title, "Reports — Monthly stock report");
    assert!(plan.warnings.is_empty(), "{:?}", warnings(&plan));

    let text = read("tables.md");
    flip(&text, "STK-02", "| STK-02 | 入荷 API | 🔴 High | STK-01 | `cc:done` |");
    flip(&text, "3.2", "| 3.2 | Checkout | order stored | Pending | cc:done |");
    flip(&text, "3.3", "| 3.3 | Invoices | PDF rendered | cc:done | |");
}

#[test]
fn phase_headings_carry_the_status_of_the_tasks_below() {
    let plan = load(&fixture("phase-headings.md")).unwrap();
    assert_eq!(ids(&plan), ["1.1", "1.2", "2.1", "2.2"]);
    assert_eq!(done(&plan), ["1.3", "2.3", "3.1", "3.2"]);
    let t11 = plan.task(&TaskId::from("1.1")).unwrap();
    assert_eq!((t11.title.as_str(), t11.marker.as_deref()), ("プロジェクト構成", Some("cc:TODO")));
    assert_eq!(t11.dod, "モノレポ作成; lint 設定");
    assert_eq!(deps(&plan, "1.2"), ["1.1"]);
    // `> depends:Phase 1` under the フェーズ2 heading applies to every task in it.
    assert_eq!(deps(&plan, "2.1"), ["1.1", "1.2"]);
    assert_eq!(deps(&plan, "2.2"), ["1.1", "1.2", "2.1"]);
    assert!(plan.warnings.is_empty(), "{:?}", warnings(&plan));

    let text = read("phase-headings.md");
    flip(&text, "1.1", "### 1.1 プロジェクト構成 `cc:done`");
    flip(&text, "2.2", "- [ ] 2.2 入力欄 depends:2.1 `cc:done`");
    let markers = status_markers(&text);
    assert_eq!(markers["1.1"], "cc:TODO");
    assert_eq!(markers["1.3"], "cc:完了");
    assert_eq!(markers["2.3"], "[x]");
    assert_eq!(markers["3.1"], "cc:完了");
}

#[test]
fn dependency_ranges_lists_and_alternatives_resolve_to_real_ids() {
    let plan = load(&fixture("dependencies.md")).unwrap();
    assert_eq!(deps(&plan, "63.4"), ["63.1", "63.2"], "63.1–63.3, 63.3 done");
    assert_eq!(deps(&plan, "5.7"), ["5.1", "5.2"], "5.1-5.3, 5.3 done");
    assert_eq!(deps(&plan, "5.8"), ["5.1", "5.2", "5.7"], "all above");
    assert_eq!(deps(&plan, "111.6"), ["111.5.2a", "111.5.2b"], "either: waits for both");
    assert_eq!(deps(&plan, "111.7"), Vec::<String>::new(), "111.5.1a is done");
    assert_eq!(deps(&plan, "OPT-04"), ["OPT-01", "OPT-02", "OPT-03"], "OPT-01〜03");
    assert_eq!(deps(&plan, "OPT-05"), ["OPT-02", "OPT-03"], "space-separated");
    assert_eq!(deps(&plan, "OPT-06"), Vec::<String>::new());
    // Ids the plan does not have, and no archive shows done: OPT-06 is held back.
    let w = warnings(&plan);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].contains("task `OPT-06` depends on `9.1`, which matches no task"), "{w:?}");
    assert!(w[1].contains("task `OPT-06` depends on `9.3-9.5`, which matches no task"), "{w:?}");
    assert!(!plan.done.contains(&TaskId::from("9.1")));
    let opt06 = plan.task(&TaskId::from("OPT-06")).unwrap();
    assert_eq!(opt06.blocked.as_deref(), Some("depends on `9.1`, which is not in the plan"));
    assert_eq!(plan.runnable_count(), plan.tasks.len() - 1, "everything else runs");
    let order: Vec<&str> = {
        let analysis = breeze_plan::analyze(&plan, 3).unwrap();
        analysis.order().iter().map(|&i| plan.tasks[i].id.as_str()).collect()
    };
    let pos = |id: &str| order.iter().position(|x| *x == id).unwrap();
    assert!(pos("63.1") < pos("63.4") && pos("63.2") < pos("63.4"));
    assert!(pos("5.7") < pos("5.8"));
}

#[test]
fn notations_parallel_flags_and_status_spellings() {
    let plan = load(&fixture("notations.md")).unwrap();
    assert_eq!(ids(&plan), ["1.1", "1.2", "1.3", "1.6", "1.7", "2.1", "3.1"]);
    assert_eq!(done(&plan), ["1.4", "1.5", "3.2"]);
    assert_eq!(deps(&plan, "1.3"), ["1.1", "1.2"]);
    assert_eq!(deps(&plan, "1.7"), ["1.6"]);
    assert_eq!(deps(&plan, "2.1"), Vec::<String>::new(), "1.4 is confirmed");
    assert_eq!(plan.task(&TaskId::from("1.1")).unwrap().marker.as_deref(), Some("cc:IN_PROGRESS"));
    assert_eq!(plan.task(&TaskId::from("2.1")).unwrap().title, "Telemetry");
    assert_eq!(plan.task(&TaskId::from("3.1")).unwrap().title, "Metrics endpoint");
    assert!(plan.blocked.contains(&TaskId::from("1.8")));
    let w = warnings(&plan);
    assert_eq!(w, ["12: task `1.8` is marked `cc:deferred (after launch)`; not scheduled"]);

    let text = read("notations.md");
    flip(&text, "1.1", "| 1.1 [P] | Parser | parses | - | cc:done |");
    flip(&text, "2.1", "### 2.1 [P]: Telemetry `cc:done`");
    flip(&text, "3.1", "- [ ] 3.1 [P] Metrics endpoint `cc:done`");
}

#[test]
fn lines_that_cannot_be_read_are_named() {
    let plan = load(&fixture("unreadable.md")).unwrap();
    assert!(plan.tasks.is_empty());
    assert_eq!(
        warnings(&plan),
        [
            "5: the table `| フェーズ | 状態 | 進捗 |` has a status column but no task id column, so its rows are not tasks (line 8 is marked to do) — add a `Task` column with ids",
            "12: 2 items marked to do have no task id (lines 12, 13), so breeze cannot schedule them — `breeze plan --fill-ids` numbers them, or start each with an id, e.g. `- [ ] 1.1 text `cc:TODO``",
            "16: `📦 将来的な拡張` is marked `cc:TODO` but nothing below it has a task id, so breeze cannot schedule it — `breeze plan --fill-ids` gives the heading an id; or number its items (`- [ ] 1.1 …`) or sub-headings (`### 1.1 …`)",
        ]
    );
    assert_eq!(plan.unnumbered, [12, 13, 16], "what `--fill-ids` numbers");
}

#[test]
fn rows_cut_off_from_their_table() {
    let plan = load(&fixture("resumed-table.md")).unwrap();
    assert_eq!(ids(&plan), ["160-003", "160-004"]);
    assert_eq!(done(&plan), ["160-001", "160-002"]);
    assert_eq!(deps(&plan, "160-004"), ["160-003"]);
    assert!(plan.warnings.is_empty(), "{:?}", warnings(&plan));
    flip(
        &read("resumed-table.md"),
        "160-004",
        "| 160-004 | Production check | logs clean for a day | 160-003 | cc:done |",
    );
}

#[test]
fn a_file_of_unreadable_items_only_is_an_error_naming_them() {
    let text = "# Plans\n\n- [ ] Write docs `cc:TODO`\n- [ ] Ship it `cc:WIP`\n";
    let err = parse_plans_md(text, std::path::Path::new("Plans.md")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Plans.md: no task table found — add a table with the header `| Task | Content | DoD | Depends | Status |`, task headings `#### 1.1: title `cc:TODO`` or checklist items `- [ ] 1.1 title `cc:TODO``; 2 to-do item(s) without a task id (lines 3, 4): `breeze plan --fill-ids` numbers them"
    );
}

#[test]
fn the_unmarked_checklist_hint_is_for_open_items_only() {
    let text = "\
| Task | 内容 | Depends | Status |
|------|------|---------|--------|
| 1 | Build | 7.2 | cc:TODO |

- [ ] 7.1 Write docs
- [x] 7.2 Ship the beta
- [ ] 7.3 Old prototype `cc:完了`
";
    let plan = parse_plans_md(text, std::path::Path::new("Plans.md")).unwrap();
    assert_eq!(ids(&plan), ["1"]);
    assert_eq!(deps(&plan, "1"), Vec::<String>::new(), "7.2 is checked");
    assert_eq!(
        warnings(&plan),
        [
            "5: checklist item `7.1` has no status marker, so it is not scheduled — add `cc:TODO` to run it"
        ]
    );
}

/// `fill_ids` on a fixture: the numbered text, which must read back and number nothing more.
fn numbered(name: &str) -> (String, Vec<breeze_plan::plans_md::IdProposal>) {
    let text = read(name);
    let (out, proposals) = breeze_plan::plans_md::fill_ids(&text).unwrap();
    let (again, more) = breeze_plan::plans_md::fill_ids(&out).unwrap();
    assert!(more.is_empty() && again == out, "numbering twice changes nothing: {more:?}");
    assert_eq!(out.lines().count(), text.lines().count(), "ids go inside lines");
    (out, proposals)
}

#[test]
fn to_do_items_without_ids_get_ids_following_the_plan_own_numbering() {
    let plan = load(&fixture("unnumbered.md")).unwrap();
    assert_eq!(ids(&plan), ["4.1", "T7", "R-02"], "as written, only the numbered run");
    assert_eq!(plan.unnumbered, [6, 7, 13, 14, 16, 27]);

    let text = read("unnumbered.md");
    let (out, proposals) = numbered("unnumbered.md");
    let written: Vec<(usize, &str)> = proposals.iter().map(|p| (p.line, p.id.as_str())).collect();
    assert_eq!(
        written,
        [(6, "4.2"), (7, "4.3"), (13, "T8"), (14, "T9"), (16, "T10"), (27, "R-03")],
        "the section's own family, past the highest the file uses"
    );
    assert_eq!(
        out,
        text.replace("- [ ] バランス調整", "- [ ] 4.2 バランス調整")
            .replace("- [ ] パフォーマンス", "- [ ] 4.3 パフォーマンス")
            .replace("- `cc:TODO` Add a level", "- `cc:TODO` T8 Add a level")
            .replace("- [ ] Add login", "- [ ] T9 Add login")
            .replace("### Refactor the parser", "### T10 Refactor the parser")
            .replace("|  | Screenshots |", "| R-03 | Screenshots |"),
        "only the ids are written"
    );
    let plan = parse_plans_md(&out, std::path::Path::new("Plans.md")).unwrap();
    assert_eq!(ids(&plan), ["4.1", "4.2", "4.3", "T7", "T8", "T9", "T10", "R-03", "R-02"]);
    assert!(plan.unnumbered.is_empty());
    assert_eq!(deps(&plan, "T9"), ["T7"]);
    assert_eq!(deps(&plan, "R-03"), Vec::<String>::new(), "R-01 is done");
    let t10 = plan.task(&TaskId::from("T10")).unwrap();
    assert_eq!(
        (t10.title.as_str(), t10.dod.as_str()),
        ("Refactor the parser", "keep the old format readable")
    );
    assert_eq!(plan.task(&TaskId::from("4.3")).unwrap().marker.as_deref(), Some("cc:WIP"));
    flip(&out, "4.2", "- [ ] 4.2 バランス調整 `cc:done`");
    flip(&out, "T8", "- `cc:done` T8 Add a level validator");
    flip(&out, "R-03", "| R-03 | Screenshots | five shots | R-01 | cc:done |");
}

#[test]
fn a_file_breeze_finds_no_task_table_in_reads_once_numbered() {
    let (out, proposals) = numbered("no-task-table-en.md");
    assert_eq!(proposals.len(), 1);
    assert!(out.contains("- [ ] T1 Publish the docs `cc:TODO`"), "{out}");
    let plan = parse_plans_md(&out, std::path::Path::new("Plans.md")).unwrap();
    assert_eq!(ids(&plan), ["T1"]);
}

#[test]
fn ids_repeated_under_different_headings_are_told_apart_by_their_section() {
    let plan = load(&fixture("repeated-ids.md")).unwrap();
    assert_eq!(
        ids(&plan),
        ["Phase 1/1.1", "Phase 1/1.2", "Phase 2/1.1", "Phase 2/1.2", "Phase 2/1.3", "2.1"]
    );
    assert_eq!(done(&plan), ["Completed/1.3"]);
    // `1.1` means the `1.1` of the dependent's own section.
    assert_eq!(deps(&plan, "Phase 1/1.2"), ["Phase 1/1.1"]);
    assert_eq!(deps(&plan, "Phase 2/1.2"), ["Phase 2/1.1"]);
    // Written with its section, an id names that one.
    assert_eq!(deps(&plan, "Phase 2/1.3"), ["Phase 1/1.2"]);
    // From a section holding neither, both: breeze cannot tell which, so it waits for both.
    assert_eq!(deps(&plan, "2.1"), ["Phase 1/1.2", "Phase 2/1.2"]);
    assert!(plan.warnings.is_empty(), "{:?}", warnings(&plan));

    let text = read("repeated-ids.md");
    flip(&text, "Phase 2/1.1", "- [ ] 1.1 Syntax colours `cc:done`");
    flip(&text, "Phase 1/1.1", "| 1.1 | Parser | parses | - | cc:done |");
    let markers = status_markers(&text);
    assert_eq!(markers["Completed/1.3"], "cc:完了");
    assert_eq!(markers["Phase 2/1.3"], "cc:TODO");
    let (same, proposals) = breeze_plan::plans_md::fill_ids(&text).unwrap();
    assert!(proposals.is_empty() && same == text, "told apart: nothing to renumber");
}

#[test]
fn an_id_repeated_in_one_section_is_an_error_and_fill_ids_renumbers_the_later_one() {
    let err = load(&fixture("same-section-repeat.md")).unwrap_err();
    let shown: Vec<String> = err.problems().iter().map(ToString::to_string).collect();
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(
        shown[0].ends_with("same-section-repeat.md:9: task id `3.2` is used 2 times in one section (lines 8, 9) — `breeze plan --fill-ids` gives the later ones new ids; or give each task its own id, e.g. `3.2` and `3.2b`"),
        "{shown:?}"
    );
    let text = read("same-section-repeat.md");
    let (out, proposals) = numbered("same-section-repeat.md");
    assert_eq!(proposals.len(), 1);
    assert_eq!((proposals[0].line, proposals[0].id.as_str()), (9, "3.4"));
    assert_eq!(proposals[0].replaces.as_deref(), Some("3.2"));
    assert_eq!(out, text.replace("| 3.2 | Share links |", "| 3.4 | Share links |"));
    let plan = parse_plans_md(&out, std::path::Path::new("Plans.md")).unwrap();
    assert_eq!(ids(&plan), ["3.1", "3.2", "3.4", "3.3"]);
}

#[test]
fn a_task_listed_before_the_held_task_it_depends_on_through_another_is_held_too() {
    // 1 depends on 2, 2 on 3, 3 on an id the plan does not have: all three are held back,
    // whatever order the rows are in.
    let text = "| Task | Content | DoD | Depends | Status |\n|---|---|---|---|---|\n\
                | 1 | a | ok | 2 | cc:TODO |\n\
                | 2 | b | ok | 3 | cc:TODO |\n\
                | 3 | c | ok | 9.9 | cc:TODO |\n";
    let plan = parse_plans_md(text, std::path::Path::new("Plans.md")).unwrap();
    let blocked = |id: &str| plan.task(&TaskId::from(id)).unwrap().blocked.clone();
    let held = "depends on `9.9`, which is not in the plan";
    assert_eq!(blocked("3").as_deref(), Some(held));
    let through_3 = format!("depends on `3`, which cannot run: {held}");
    assert_eq!(blocked("2"), Some(through_3.clone()));
    assert_eq!(blocked("1"), Some(format!("depends on `2`, which cannot run: {through_3}")));
    assert_eq!((plan.runnable_count(), plan.blocked_count()), (0, 3));
    assert_eq!(
        warnings(&plan)[..2],
        [
            format!("3: task `1` depends on `2`, which cannot run: {through_3}; not run"),
            format!("4: task `2` {through_3}; not run"),
        ]
    );
}

#[test]
fn a_dependency_on_an_unknown_id_holds_its_dependents_back_unless_an_archive_shows_it_done() {
    let plan = load(&fixture("unknown-dependency.md")).unwrap();
    assert_eq!(ids(&plan), ["9.1", "9.2", "9.3", "9.4", "9.5"]);
    let blocked = |id: &str| plan.task(&TaskId::from(id)).unwrap().blocked.clone();
    // `8a.7` is done in `archive/Plans-phase8.md`, `7.2` in the `archive/` folder's plans.
    assert_eq!(blocked("9.1"), None);
    assert_eq!(blocked("9.5"), None);
    assert_eq!(done(&plan), ["7.2", "8a.7"]);
    // `7.4` is nowhere: 9.2 and what depends on it are held back; 9.4 runs.
    assert_eq!(blocked("9.2").as_deref(), Some("depends on `7.4`, which is not in the plan"));
    assert_eq!(
        blocked("9.3").as_deref(),
        Some("depends on `9.2`, which cannot run: depends on `7.4`, which is not in the plan")
    );
    assert_eq!(blocked("9.4"), None);
    assert_eq!((plan.runnable_count(), plan.blocked_count()), (3, 2));
    assert_eq!(
        warnings(&plan),
        [
            "9: task `9.1` depends on `8a.7`, which the plan's archive `archive/Plans-phase8.md` shows done; treated as done",
            "10: task `9.2` depends on `7.4`, which matches no task, phase, range or id prefix here or in an archive the plan names, so `9.2` is blocked (and so is what depends on it) — name a task of the plan, or remove the dependency if `7.4` is done",
            "11: task `9.3` depends on `9.2`, which cannot run: depends on `7.4`, which is not in the plan; not run",
            "13: task `9.5` depends on `7.2`, which the plan's archive `archive/Plans-2025.md` shows done; treated as done",
        ]
    );
    let analysis = breeze_plan::analyze(&plan, 3).unwrap();
    let table = breeze_plan::render::table(&plan, &analysis);
    assert!(table.contains("3 tasks to run, 2 done, 2 blocked"), "{table}");
    assert!(table.contains("9.2 (blocked)"), "{table}");
}

#[test]
fn rows_with_too_few_or_too_many_cells_are_errors_with_their_lines() {
    let err = load(&fixture("misaligned-rows.md")).unwrap_err();
    let shown: Vec<String> = err
        .problems()
        .iter()
        .map(|p| format!("{}: {} — {}", p.line.unwrap_or(0), p.what, p.fix))
        .collect();
    let header = "`| Task | Content | DoD | Writes | Depends | Status |`";
    let fix = "write one cell per column — `|  |` for an empty cell, `\\|` for a `|` inside a cell";
    assert_eq!(
        shown,
        [
            format!("8: row has 2 cells but the header of its table ({header}) has 6 — {fix}"),
            format!("9: row has 7 cells but the header of its table ({header}) has 6 — {fix}"),
        ]
    );
    // Without those two rows: a `|` in a code span keeps the row whole, and a finished
    // row with a cell too many is read by position, with a warning.
    let text: String = read("misaligned-rows.md")
        .lines()
        .filter(|l| !l.starts_with("| 8 ") && !l.starts_with("| 9 "))
        .map(|l| format!("{l}\n"))
        .collect();
    let plan = parse_plans_md(&text, std::path::Path::new("Plans.md")).unwrap();
    assert_eq!(ids(&plan), ["3", "10"]);
    assert_eq!(done(&plan), ["1", "2"]);
    let three = plan.task(&TaskId::from("3")).unwrap();
    assert_eq!(three.title, "Add `mode: \"a\" | \"b\"` to the config");
    assert_eq!(three.writes.entries(), ["src/config.rs"]);
    assert_eq!(
        warnings(&plan),
        [format!(
            "6: row has 7 cells but the header of its table ({header}) has 6; it is finished, so breeze read its task id from the first cell and its status from the last cell with a marker"
        )]
    );
}

#[test]
fn the_no_task_table_message_quotes_the_file_and_speaks_its_language() {
    let err = load(&fixture("no-task-table-en.md")).unwrap_err();
    assert!(
        err.to_string().ends_with("no-task-table-en.md: no task table found — the table at line 3 (`| Step | Owner | Notes |`) needs a task id column and a status column; add a table with the header `| Task | Content | DoD | Depends | Status |`, task headings `#### 1.1: title `cc:TODO`` or checklist items `- [ ] 1.1 title `cc:TODO``; 1 to-do item(s) without a task id (lines 8): `breeze plan --fill-ids` numbers them"),
        "{err}"
    );
    let err = load(&fixture("no-task-table-ja.md")).unwrap_err();
    assert!(err.to_string().contains("(`| 項目 | 担当 | メモ |`)"), "{err}");
    assert!(err.to_string().contains("`| Task | 内容 | DoD | Depends | Status |`"), "{err}");
}

#[test]
fn an_item_is_numbered_in_its_own_sections_family_not_in_a_later_tables() {
    let text = "# Plan\n\n## Sprint 1\n\n- [ ] Set up CI cc:TODO\n- [ ] Write the parser cc:TODO\n\n## Now\n\n- [ ] Pick a name cc:TODO\n\n## Backlog\n\n| Task | Content | DoD | Depends | Status |\n|------|---------|-----|---------|--------|\n| B1 | A later thing | done | - | cc:TODO |\n";
    let (out, proposals) = breeze_plan::plans_md::fill_ids(text).unwrap();
    let written: Vec<(usize, &str)> = proposals.iter().map(|p| (p.line, p.id.as_str())).collect();
    assert_eq!(
        written,
        [(5, "1.1"), (6, "1.2"), (10, "1.3")],
        "Sprint 1's number, then the numbering above; never the Backlog's B family below:\n{out}"
    );
    // An item with no family above it and none in its section starts the plan's own.
    let alone = "## Now\n\n- [ ] Pick a name cc:TODO\n\n## Backlog\n\n| Task | Content | DoD | Depends | Status |\n|------|---------|-----|---------|--------|\n| B1 | A later thing | done | - | cc:TODO |\n";
    let (_, proposals) = breeze_plan::plans_md::fill_ids(alone).unwrap();
    assert_eq!(proposals[0].id, "T1", "{proposals:?}");
}
