//! Conflicts, groups, lanes, priorities, rendering and sprint contracts.

use std::path::{Path, PathBuf};

use breeze_plan::{
    ConflictReason, ContractOptions, Plan, TaskId, analyze, load, parse_plans_md, render,
    sprint_contract,
};
use breeze_protocol::ContractStatus;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn plan(rows: &[(&str, &str, &str)]) -> Plan {
    let mut text =
        String::from("| Task | Content | DoD | Writes | Depends | Status |\n|-|-|-|-|-|-|\n");
    for (id, writes, deps) in rows {
        text.push_str(&format!("| {id} | task {id} | done | {writes} | {deps} | cc:todo |\n"));
    }
    parse_plans_md(&text, Path::new("Plans.md")).unwrap()
}

fn idx(plan: &Plan, id: &str) -> usize {
    plan.index_of(&TaskId::from(id)).unwrap()
}

#[test]
fn template_groups_lanes_and_priorities() {
    let plan = load(&fixture("template.md")).unwrap();
    let a = analyze(&plan, 3).unwrap();
    let groups: Vec<Vec<&str>> =
        a.groups.iter().map(|g| g.iter().map(|&i| plan.tasks[i].id.as_str()).collect()).collect();
    assert_eq!(
        groups,
        [vec!["1.1"], vec!["1.2", "1.5"], vec!["1.3"], vec!["1.4"], vec!["1.6"], vec!["1.10"]]
    );
    assert_eq!(a.workers, 3);
    assert_eq!(analyze(&plan, 2).unwrap().workers, 2);
    assert_eq!(analyze(&plan, 0).unwrap().workers, 1, "clamped to at least 1");
    assert_eq!(analyze(&plan, 9).unwrap().max_workers, 3, "clamped to at most 3");
    assert_eq!(a.conflicts.len(), 1);
    assert_eq!(
        a.conflicts[0].reason,
        ConflictReason::Overlap { witness: "src/auth/refresh.rs".into() }
    );
    let (t11, t12, t15, t110) =
        (idx(&plan, "1.1"), idx(&plan, "1.2"), idx(&plan, "1.5"), idx(&plan, "1.10"));
    assert!(a.conflicts_between(t12, t15) && a.conflicts_between(t15, t12));
    assert!(!a.conflicts_between(t11, t12));
    assert_eq!(a.group_of(t12), a.group_of(t15));
    assert_eq!(a.priority(t11), 3, "1.1 -> 1.2 -> 1.5 -> 1.10");
    assert_eq!(a.priority(t12), 2);
    assert_eq!(a.priority(t110), 0);
    assert_eq!(a.shared_file_owners["CHANGELOG.md"], Some(TaskId::from("1.6")));
    assert_eq!(
        a.dependencies(t110).iter().map(|&i| plan.tasks[i].id.as_str()).collect::<Vec<_>>(),
        ["1.5", "1.6"]
    );
}

#[test]
fn a_task_without_write_set_conflicts_with_every_task() {
    let p = plan(&[("1", "`a/x.rs`", "-"), ("2", "-", "-"), ("3", "`b/`", "-"), ("4", "-", "-")]);
    let a = analyze(&p, 3).unwrap();
    assert_eq!(a.groups.len(), 1);
    // One group through the tasks without a write set, yet 1 and 3 can run together.
    assert_eq!(a.workers, 2);
    for x in 0..4 {
        for y in 0..4 {
            if x != y {
                let alone = [1, 3].contains(&x) || [1, 3].contains(&y);
                assert_eq!(a.conflicts_between(x, y), alone, "{x} {y}");
            }
        }
    }
    // 2 with 1, 3, 4; 4 with 1, 3 (2–4 listed once).
    assert_eq!(a.conflicts.len(), 5);
    assert!(a.conflicts.iter().all(|c| matches!(&c.reason, ConflictReason::NoWriteSet { task } if task.as_str() == "2" || task.as_str() == "4")));
    let table = render::table(&p, &a);
    assert!(
        table.contains(
            "2 tasks have no write set (2, 4): each conflicts with every other task and runs alone"
        ),
        "{table}"
    );
    assert!(table.contains("(none: runs alone)"), "{table}");
}

/// Tasks writing globs of every kind.
const GLOB_TASKS: [(&str, &str, &str); 8] = [
    ("1", "`src/**/*.rs`", "-"),
    ("2", "`src/git/mod.rs`", "-"),
    ("3", "`docs/**`", "-"),
    ("4", "`src/*.md`", "-"),
    ("5", "`tests/*.snap`", "-"),
    ("6", "`tests/**/*.rs`", "-"),
    ("7", "`**/Cargo.toml`", "-"),
    ("8", "`crates/*/Cargo.toml`", "-"),
];

#[test]
fn glob_conflicts_are_exact_with_witnesses() {
    let p = plan(&GLOB_TASKS);
    let a = analyze(&p, 3).unwrap();
    let pairs: Vec<(String, String, String)> = a
        .conflicts
        .iter()
        .map(|c| {
            let ConflictReason::Overlap { witness } = &c.reason else { panic!() };
            (p.tasks[c.a].id.to_string(), p.tasks[c.b].id.to_string(), witness.clone())
        })
        .collect();
    // Shared paths, and files where the other may need a folder of that name: a glob names
    // files too (`src/*.md` may write a file `src/a.md`, under which `src/**/*.rs` may
    // write `src/a.md/a.rs`).
    let file_in = |file: &str, f: &str, d: &str, inside: &str| {
        format!("{file} — a file in task {f}, a folder in task {d} ({inside})")
    };
    assert_eq!(
        pairs,
        [
            ("1".into(), "2".into(), "src/git/mod.rs".into()),
            ("1".into(), "4".into(), file_in("src/a.md", "4", "1", "src/a.md/a.rs")),
            ("1".into(), "7".into(), file_in("src/Cargo.toml", "7", "1", "src/Cargo.toml/a.rs")),
            (
                "2".into(),
                "7".into(),
                file_in("src/git/mod.rs", "2", "7", "src/git/mod.rs/Cargo.toml")
            ),
            ("3".into(), "7".into(), "docs/Cargo.toml".into()),
            ("4".into(), "7".into(), file_in("src/a.md", "4", "7", "src/a.md/Cargo.toml")),
            ("5".into(), "6".into(), file_in("tests/a.snap", "5", "6", "tests/a.snap/a.rs")),
            ("5".into(), "7".into(), file_in("tests/a.snap", "5", "7", "tests/a.snap/Cargo.toml")),
            (
                "6".into(),
                "7".into(),
                file_in("tests/Cargo.toml", "7", "6", "tests/Cargo.toml/a.rs")
            ),
            ("7".into(), "8".into(), "crates/a/Cargo.toml".into()),
        ]
    );
    assert_eq!(a.groups.len(), 1, "`**/Cargo.toml` may write in every folder of the others");
    assert!(a.stats.candidate_pairs < a.stats.task_pairs);

    // Without it, the shared paths and the file/folder pairs make four groups.
    let without_7: Vec<_> = GLOB_TASKS.into_iter().filter(|t| t.0 != "7").collect();
    let p = plan(&without_7);
    assert_eq!(analyze(&p, 3).unwrap().groups.len(), 4, "{{1,2,4}} {{3}} {{5,6}} {{8}}");
}

#[test]
fn a_file_where_another_task_needs_a_folder_is_a_conflict() {
    // Issue 23: task A turns the folder `d/` into a file, task B adds `d/three`. No path is
    // in both write sets, yet they cannot both land.
    let p =
        plan(&[("A", "`d`, `d/one`, `d/two`", "-"), ("B", "`d/three`", "-"), ("C", "`e/`", "-")]);
    let a = analyze(&p, 3).unwrap();
    assert_eq!(a.conflicts.len(), 1);
    assert_eq!(
        a.conflicts[0].reason,
        ConflictReason::Overlap {
            witness: "d — a file in task A, a folder in task B (d/three)".into()
        }
    );
    assert_eq!(a.groups.len(), 2);
    let table = render::table(&p, &a);
    assert!(
        table.contains("A × B  both may write d — a file in task A, a folder in task B (d/three)"),
        "{table}"
    );
    // The same with the folder written as a directory entry, or claimed by a glob.
    for (a_writes, b_writes, witness) in [
        ("`d`", "`d/`", "d — a file in task A, a folder in task B (d/a)"),
        ("`a/*`", "`a/b/c`", "a/b — a file in task A, a folder in task B (a/b/c)"),
        (
            "`src/*`",
            "`src/*/mod.rs`",
            "src/a — a file in task A, a folder in task B (src/a/mod.rs)",
        ),
    ] {
        let p = plan(&[("A", a_writes, "-"), ("B", b_writes, "-")]);
        let a = analyze(&p, 3).unwrap();
        assert_eq!(
            a.conflicts.iter().map(|c| c.reason.clone()).collect::<Vec<_>>(),
            [ConflictReason::Overlap { witness: witness.into() }],
            "{a_writes} / {b_writes}"
        );
    }
}

#[test]
fn table_json_and_dot_output() {
    let plan = load(&fixture("template.md")).unwrap();
    let a = analyze(&plan, 3).unwrap();
    let table = render::table(&plan, &a);
    assert!(table.contains("7 tasks to run, 1 done, 0 blocked"), "{table}");
    assert!(table.contains("Write groups: 6 · lanes: 3 (max_workers 3)"), "{table}");
    assert!(table.contains("1.2 × 1.5  both may write src/auth/refresh.rs"), "{table}");
    assert!(table.contains("CHANGELOG.md → task 1.6"), "{table}");
    let body: Vec<&str> =
        table.lines().skip_while(|l| !l.starts_with("ID")).skip(1).take(7).collect();
    let first_cells: Vec<&str> =
        body.iter().map(|l| l.split_whitespace().next().unwrap()).collect();
    assert_eq!(
        first_cells,
        ["1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.10"],
        "numeric order:\n{table}"
    );
    let row_14 = body[3];
    assert!(row_14.contains("state-migration,advisor-required"), "{row_14}");

    let json = render::json(&plan, &a);
    assert_eq!(json["schema_version"], "breeze-plan.v1");
    assert_eq!(json["workers"], 3);
    assert_eq!(json["groups"].as_array().unwrap().len(), 6);
    assert_eq!(json["groups"][1]["tasks"], serde_json::json!(["1.2", "1.5"]));
    assert_eq!(json["tasks"][1]["id"], "1.2");
    assert_eq!(json["tasks"][1]["risk"], serde_json::json!(["security-sensitive"]));
    assert_eq!(json["tasks"][1]["dependents"], serde_json::json!(["1.5", "1.6"]));
    assert_eq!(
        json["conflicts"][0],
        serde_json::json!({"a": "1.2", "b": "1.5", "reason": "overlap", "witness": "src/auth/refresh.rs"})
    );
    assert_eq!(json["shared_files"]["CHANGELOG.md"], "1.6");
    assert_eq!(json["shared_files"]["Plans.md"], serde_json::Value::Null);
    // Stable: the same input renders the same bytes, keys sorted.
    let again = serde_json::to_string(&render::json(&plan, &analyze(&plan, 3).unwrap())).unwrap();
    let text = serde_json::to_string(&json).unwrap();
    assert_eq!(text, again);
    assert!(text.starts_with("{\"blocked\":[],\"conflicts\":"), "{text}");

    let dot = render::dot(&plan, &a);
    assert!(dot.starts_with("digraph plan {"));
    assert!(dot.contains("subgraph cluster_group_2 {"));
    assert!(dot.contains("\"1.1\" -> \"1.2\";"), "dependency edge: {dot}");
    assert!(dot.contains("\"1.2\" -> \"1.5\" [dir=none, style=dashed, color=red, constraint=false, label=\"src/auth/refresh.rs\"];"), "{dot}");
    assert!(dot.trim_end().ends_with('}'));
}

#[test]
fn sprint_contract_from_a_task() {
    let plan = load(&fixture("template.md")).unwrap();
    let options = ContractOptions {
        plans_file: "Plans.md".into(),
        verify: Some(vec!["cargo".into(), "test".into(), "--workspace".into()]),
        checks: Vec::new(),
        advisor_enabled: true,
        max_consults: 3,
        retry_threshold: 2,
        generated_at: "2026-01-02T03:04:05Z".into(),
        shared_files: vec!["Plans.md".into(), "CHANGES.rst".into()],
    };
    let c = sprint_contract(plan.task(&TaskId::from("1.4")).unwrap(), &options);
    let non_goals = serde_json::to_string(&c.contract.non_goals).unwrap();
    assert!(
        non_goals.contains("Do not edit Plans.md, CHANGES.rst: this task does not own them"),
        "the repository's own changelog is the Lead's: {non_goals}"
    );
    assert_eq!(c.task.id, "1.4");
    assert_eq!(c.task.status_at_generation, "cc:wip");
    assert_eq!(c.task.depends_on, ["1.1"]);
    assert_eq!(c.task.declared_scope, ["migrations/**"]);
    assert_eq!(c.contract.checks[0].id, "dod-primary");
    assert_eq!(c.contract.checks[0].source, "Plans.md.DoD");
    assert_eq!(c.contract.checks[0].description, "migration runs up and down");
    assert!(
        c.contract
            .checks
            .iter()
            .any(|k| k.id == "write-scope" && k.description.contains("migrations/**"))
    );
    assert_eq!(c.contract.risk_flags, ["state-migration"]);
    assert_eq!(c.advisor.triggers, ["state-migration", "<!-- advisor:required -->"]);
    assert_eq!(c.review.max_iterations, 3);
    assert_eq!(c.review.status, ContractStatus::Approved);
    assert_eq!(c.review.reviewer_profile, "runtime");
    assert_eq!(c.contract.runtime_validation[0].command, "cargo test --workspace");
    assert_eq!(c.generated_at, "2026-01-02T03:04:05Z");

    let c12 =
        sprint_contract(plan.task(&TaskId::from("1.2")).unwrap(), &ContractOptions::default());
    let dod_items: Vec<&str> = c12
        .contract
        .checks
        .iter()
        .filter(|k| k.id.starts_with("dod-") && k.id != "dod-primary")
        .map(|k| k.description.as_str())
        .collect();
    assert_eq!(dod_items, ["POST /login sets the cookie", "RED test first", "GREEN"]);
    assert!(c12.contract.runtime_validation.is_empty());
    assert_eq!(c12.review.reviewer_profile, "static");
    // The contract validates against the protocol's schema types.
    let value = serde_json::to_value(&c12).unwrap();
    assert_eq!(value["schema_version"], "sprint-contract.v1");
    let back: breeze_protocol::SprintContract = serde_json::from_value(value).unwrap();
    assert_eq!(back, c12);
}

#[test]
fn lanes_follow_the_widest_set_that_can_run_together_not_the_groups() {
    // A replayed history in miniature: 1 touches every file, chaining all tasks into one
    // write group; 2, 3 and 4 each change one file after it, 5 follows 2 and 3, and 6
    // changes d.py without waiting for 1.
    let p = plan(&[
        ("1", "`a.py`, `b.py`, `c.py`, `d.py`", "-"),
        ("2", "`a.py`", "1"),
        ("3", "`b.py`", "1"),
        ("4", "`c.py`", "1"),
        ("5", "`a.py`, `b.py`", "2, 3"),
        ("6", "`d.py`", "-"),
    ]);
    let a = analyze(&p, 3).unwrap();
    assert_eq!(a.groups.len(), 1, "one connected write group");
    let ids = |list: &[usize]| list.iter().map(|&i| p.tasks[i].id.to_string()).collect::<Vec<_>>();
    // 6 conflicts only with 1, which 2, 3 and 4 wait for: four tasks can run together.
    assert_eq!(ids(&a.parallelism.widest), ["2", "3", "4", "6"]);
    assert!(a.parallelism.exact);
    assert_eq!(ids(&a.parallelism.critical_path), ["1", "2", "5"]);
    assert_eq!(a.workers, 3, "capped by max_workers");
    assert_eq!(analyze(&p, 2).unwrap().workers, 2);

    let table = render::table(&p, &a);
    assert!(table.contains("Write groups: 1 · lanes: 3 (max_workers 3)"), "{table}");
    assert!(
        table.contains(
            "Run together: at most 4 tasks (2, 3, 4, 6) — pairwise without conflict or dependency"
        ),
        "{table}"
    );
    assert!(table.contains("Critical path: 3 tasks (1 → 2 → 5)"), "{table}");
    let json = render::json(&p, &a);
    assert_eq!(json["workers"], 3);
    assert_eq!(
        json["parallelism"],
        serde_json::json!({"widest": ["2", "3", "4", "6"], "exact": true, "critical_path": ["1", "2", "5"]})
    );
}

#[test]
fn a_task_held_back_by_an_unknown_dependency_takes_no_lane() {
    // 2 and 3 neither conflict nor depend on each other, but 3 waits for an id the plan
    // does not have: it never runs, so only one lane can be busy.
    let p = plan(&[("1", "`a.py`", "-"), ("2", "`b.py`", "1"), ("3", "`c.py`", "99")]);
    assert!(p.tasks[idx(&p, "3")].blocked.is_some(), "3 is held back");
    let a = analyze(&p, 3).unwrap();
    let ids = |list: &[usize]| list.iter().map(|&i| p.tasks[i].id.to_string()).collect::<Vec<_>>();
    assert_eq!(ids(&a.parallelism.widest).len(), 1, "{:?}", ids(&a.parallelism.widest));
    assert!(!ids(&a.parallelism.widest).contains(&"3".to_string()));
    assert_eq!(a.workers, 1);
}

#[test]
fn a_large_plan_gets_a_greedy_bound_and_every_lane() {
    // Over the exact limit: independent pairs (2k, 2k+1) sharing a file, no dependencies.
    let rows: Vec<(String, String)> = (0..breeze_plan::EXACT_TASKS + 2)
        .map(|i| (i.to_string(), format!("`pair{}.py`", i / 2)))
        .collect();
    let rows: Vec<(&str, &str, &str)> =
        rows.iter().map(|(id, writes)| (id.as_str(), writes.as_str(), "-")).collect();
    let p = plan(&rows);
    let a = analyze(&p, 3).unwrap();
    assert!(!a.parallelism.exact);
    // One task of each pair: the greedy bound is the true width here.
    assert_eq!(a.parallelism.widest.len(), rows.len() / 2);
    assert!(
        a.parallelism.widest.iter().all(|&i| a
            .parallelism
            .widest
            .iter()
            .all(|&j| !a.conflicts_between(i, j)))
    );
    assert_eq!(a.workers, 3);
    let table = render::table(&p, &a);
    assert!(table.contains(&format!("Run together: at least {} tasks", rows.len() / 2)), "{table}");
}

#[test]
fn empty_plan_has_no_workers() {
    let p = parse_plans_md(
        "| Task | C | DoD | Depends | Status |\n|-|-|-|-|-|\n| 1 | a | b | - | cc:done |\n",
        Path::new("Plans.md"),
    )
    .unwrap();
    let a = analyze(&p, 3).unwrap();
    assert_eq!(a.workers, 0);
    assert!(a.groups.is_empty());
    assert!(a.parallelism.widest.is_empty() && a.parallelism.critical_path.is_empty());
    assert!(render::table(&p, &a).contains("nothing left to run — 1 done, 0 blocked"));
}

#[test]
fn a_file_and_a_folder_of_one_name_keep_their_tasks_apart_in_the_lanes() {
    // Issue 23's pair alone: no shared path, but never side by side, so one lane.
    let p = plan(&[("A", "`d`, `d/one`, `d/two`", "-"), ("B", "`d/three`", "-")]);
    let a = analyze(&p, 3).unwrap();
    assert_eq!(a.parallelism.widest.len(), 1, "{:?}", a.parallelism.widest);
    assert!(a.parallelism.exact);
    assert_eq!(a.workers, 1);
    assert!(a.conflicts_between(0, 1));
    let table = render::table(&p, &a);
    assert!(table.contains("lanes: 1 (max_workers 3)"), "{table}");

    // The file `d` keeps A out of the widest set: B and C write under `d/` side by side.
    let p = plan(&[
        ("A", "`d`, `d/one`", "-"),
        ("B", "`d/three`", "-"),
        ("C", "`d/four`", "-"),
        ("D", "`e/`", "-"),
    ]);
    let a = analyze(&p, 3).unwrap();
    let ids = |list: &[usize]| list.iter().map(|&i| p.tasks[i].id.to_string()).collect::<Vec<_>>();
    assert_eq!(ids(&a.parallelism.widest), ["B", "C", "D"]);
    assert_eq!(a.workers, 3);
    assert_eq!(analyze(&p, 2).unwrap().workers, 2);
}

#[test]
fn the_repositorys_changelog_is_a_shared_file_under_its_own_name() {
    let mut plan = plan(&[("1", "`src/`", "-"), ("2", "`CHANGES.rst`, `NEWS`", "-")]);
    plan.shared_files = breeze_plan::SharedFiles::of_repository(Some("CHANGES.rst"), |_| true);
    let a = analyze(&plan, 3).unwrap();
    let table = render::table(&plan, &a);
    assert!(
        table.contains("Shared files: CHANGES.rst → task 2 · Plans.md → Lead · spec.md → Lead\n"),
        "the repository's changelog takes CHANGELOG.md's place:\n{table}"
    );
    // Two tasks claiming it is the plan error it is for CHANGELOG.md.
    let mut two = self::plan(&[("1", "`*.rst`", "-"), ("2", "`CHANGES.rst`", "-")]);
    two.shared_files = breeze_plan::SharedFiles::of_repository(Some("CHANGES.rst"), |_| true);
    let err = analyze(&two, 3).unwrap_err().to_string();
    assert!(err.contains("the shared file `CHANGES.rst` is claimed by 2 tasks"), "{err}");
}

#[test]
fn only_the_shared_files_the_repository_has_or_a_task_claims_are_listed() {
    let mut plan = plan(&[("1", "`src/`", "-"), ("2", "`CHANGES.rst`, `NEWS`", "-")]);
    // A repository with Plans.md and CHANGES.rst (its changelog), without spec.md.
    plan.shared_files = breeze_plan::SharedFiles::of_repository(Some("CHANGES.rst"), |path| {
        path == "Plans.md" || path == "CHANGES.rst"
    });
    let a = analyze(&plan, 3).unwrap();
    let table = render::table(&plan, &a);
    assert!(
        table.contains("Shared files: CHANGES.rst → task 2 · Plans.md → Lead\n"),
        "spec.md, which the repository does not have, is not listed:\n{table}"
    );
    // A changelog the repository does not have yet, claimed by a task, is listed.
    plan.shared_files = breeze_plan::SharedFiles::of_repository(Some("NEWS"), |_| false);
    let a = analyze(&plan, 3).unwrap();
    let table = render::table(&plan, &a);
    assert!(table.contains("Shared files: NEWS → task 2\n"), "{table}");
    // None there and none claimed: no line.
    plan.shared_files = breeze_plan::SharedFiles::of_repository(Some("CHANGELOG.md"), |_| false);
    plan.tasks.truncate(1);
    let table = render::table(&plan, &analyze(&plan, 3).unwrap());
    assert!(!table.contains("Shared files"), "{table}");
}

#[test]
fn a_plan_whose_tasks_are_all_landed_says_nothing_is_left_to_run() {
    let mut plan = plan(&[("1", "`a`", "-"), ("2", "`b`", "-"), ("3", "`c`", "-")]);
    plan.on_main = ["1", "2"].into_iter().map(TaskId::from).collect();
    let table = render::table(&plan, &analyze(&plan, 3).unwrap());
    assert!(
        table.starts_with("Plan Plans.md (Plans.md): 1 task to run, 0 done, 2 already on main (by their Breeze-Task trailers), 0 blocked\n"),
        "{table}"
    );
    assert!(table.contains("\n1 (on main)  "), "{table}");
    plan.on_main.insert(TaskId::from("3"));
    let table = render::table(&plan, &analyze(&plan, 3).unwrap());
    assert!(
        table.starts_with("Plan Plans.md (Plans.md): nothing left to run — 0 done, 3 already on main (by their Breeze-Task trailers), 0 blocked\n"),
        "{table}"
    );
    // Every task marked done in the plan.
    let text = "| Task | Content | DoD | Depends | Status |\n|-|-|-|-|-|\n| 1 | a | d | - | cc:done |\n| 2 | b | d | - | cc:done |\n";
    let done = parse_plans_md(text, Path::new("Plans.md")).unwrap();
    let table = render::table(&done, &analyze(&done, 3).unwrap());
    assert!(
        table.starts_with("Plan Plans.md (Plans.md): nothing left to run — 2 done, 0 blocked\n"),
        "{table}"
    );
}
