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
    let w = warnings(&plan);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].contains("task `OPT-06` depends on `9.1`, which matches no task"), "{w:?}");
    assert!(w[1].contains("task `OPT-06` depends on `9.3-9.5`, which matches no task"), "{w:?}");
    assert!(plan.done.contains(&TaskId::from("9.1")));
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
            "5: this table has a Status column but no Task or ID column, so its rows are not tasks (line 8 is marked to do) — add a `Task` column with ids",
            "12: 2 items marked to do have no task id (lines 12, 13), so breeze cannot schedule them — start each with an id, e.g. `- [ ] 1.1 text `cc:TODO``",
            "16: `📦 将来的な拡張` is marked `cc:TODO` but nothing below it has a task id, so breeze cannot schedule it — number its items (`- [ ] 1.1 …`) or sub-headings (`### 1.1 …`), or give the heading an id (`## 1: …`)",
        ]
    );
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
    assert!(err.to_string().contains("no task table found"), "{err}");
    assert!(err.to_string().contains("lines marked to do without a task id: 3, 4"), "{err}");
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
