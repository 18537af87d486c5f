//! plan.toml parsing and its errors.

use std::path::{Path, PathBuf};

use breeze_plan::{
    PlanFormat, ProblemKind, RiskFlag, TaskId, analyze, load, load_with_extensions, parse_plan_toml,
};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

#[test]
fn full_plan_with_sim_tables() {
    // Extension tables are an error unless the caller accepts them by name.
    let err = load(&fixture("plan.toml")).unwrap_err();
    assert!(err.has(ProblemKind::UnknownKey), "{err}");
    let plan = load_with_extensions(&fixture("plan.toml"), &["sim"]).unwrap();
    assert_eq!(plan.format, PlanFormat::Toml);
    let ids: Vec<&str> = plan.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["1", "2", "10", "3"], "file order; integer ids become strings");
    let t2 = &plan.tasks[1];
    assert_eq!(t2.depends_on, [TaskId::from("1")]);
    assert_eq!(t2.risk, [RiskFlag::NeedsSpike, RiskFlag::SecuritySensitive], "explicit + detected");
    assert!(t2.advisor_required);
    assert_eq!(t2.marker, None);
    assert_eq!(
        plan.extension(&t2.id, "sim"),
        Some(&serde_json::json!({"fail_attempts": 1, "request_changes": 1, "ask_advisor": true}))
    );
    assert_eq!(t2.line, 10);
    let t10 = &plan.tasks[2];
    assert_eq!(t10.dod, "Admin API docs", "dod defaults to the title");
    assert_eq!(plan.extension(&t10.id, "sim"), None);

    let analysis = analyze(&plan, 3).unwrap();
    // 1 and 3 share src/config/reload.rs; 2 and 10 are alone.
    let groups: Vec<Vec<&str>> = analysis
        .groups
        .iter()
        .map(|g| g.iter().map(|&i| plan.tasks[i].id.as_str()).collect())
        .collect();
    assert_eq!(groups, [vec!["1", "3"], vec!["2"], vec!["10"]]);
    // Three groups, but 2 waits for 1 and 10 for 2: at most two tasks run at once.
    assert_eq!(analysis.workers, 2);
    assert_eq!(analysis.shared_file_owners["CHANGELOG.md"], Some(TaskId::from("10")));
    assert_eq!(analysis.shared_file_owners["Plans.md"], None);
    assert_eq!(analysis.priority(0), 2, "1 -> 2 -> 10");
}

#[test]
fn unknown_dependency_is_an_error_with_line() {
    let err = load(&fixture("unknown-dep.toml")).unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.ends_with("unknown-dep.toml:10: task `b` depends on `zz`, which is not a task in this file — `depends_on` must name tasks in this file; remove it if that work is already done"),
        "{shown}"
    );
    assert!(err.has(ProblemKind::UnknownDependency));
}

#[test]
fn unknown_key_names_the_key_and_line() {
    let err = load(&fixture("unknown-key.toml")).unwrap_err();
    let shown = err.to_string();
    assert!(shown.contains("unknown-key.toml:5: unknown field `owner`"), "{shown}");
    assert!(
        shown.contains(
            "— remove the key; a task table takes only these keys: id, title, dod, writes"
        ),
        "{shown}"
    );
    assert!(err.has(ProblemKind::UnknownKey));
    let err = parse_plan_toml("version = 2\n", Path::new("plan.toml")).unwrap_err();
    assert!(err.to_string().contains("plan.toml:1: unknown field `version`"), "{err}");
    assert!(err.to_string().ends_with("— a plan.toml holds only `[[task]]` tables"), "{err}");
}

#[test]
fn bad_write_entries_are_all_reported() {
    let err = load(&fixture("bad-write.toml")).unwrap_err();
    let lines: Vec<String> = err.problems().iter().map(ToString::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].ends_with("bad-write.toml:4: task `a`: write-set entry `../secrets.env`: `..` leaves the directory it names and may leave the repository — write the path from the repository root without `..`"), "{}", lines[0]);
    assert!(
        lines[1]
            .contains("bad-write.toml:9: task `b`: write-set entry `/etc/hosts`: absolute path"),
        "{}",
        lines[1]
    );
}

#[test]
fn every_cycle_is_reported_with_all_ids() {
    let plan = load(&fixture("cycle.toml")).unwrap();
    let err = analyze(&plan, 3).unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.contains("cycle.toml:8: dependency cycle: api -> db -> ui -> api (each task depends on the next) — remove one dependency of the cycle, e.g. `ui` on `api`"),
        "{shown}"
    );
    assert!(shown.contains("cycle.toml:20: dependency cycle: solo -> solo"), "{shown}");
    assert_eq!(err.cycles().len(), 2);
    assert!(!shown.contains("`ok`"));
}

#[test]
fn duplicate_ids_and_bad_values() {
    let text = "[[task]]\nid = 1\ntitle = \"a\"\n\n[[task]]\nid = \"1\"\ntitle = \"b\"\nrisk = [\"scary\"]\n\n[[task]]\nid = 1.5\ntitle = \"c\"\n";
    let err = parse_plan_toml(text, Path::new("plan.toml")).unwrap_err();
    let lines: Vec<String> = err.problems().iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "plan.toml:6: task id `1` is used 2 times (lines 2, 6) — give each task its own id, e.g. `1` and `1b`",
            "plan.toml:8: task `1`: unknown risk flag `scary` — use `needs-spike`, `security-sensitive` or `state-migration`",
            "plan.toml:11: `id` must be a non-empty string without spaces, or an integer — write e.g. `id = \"1.2\"` or `id = 3`",
        ]
    );
}

#[test]
fn missing_fields_and_syntax_errors_have_lines() {
    let err = parse_plan_toml("[[task]]\nid = \"a\"\n", Path::new("plan.toml")).unwrap_err();
    assert!(err.to_string().contains("missing field `title`"), "{err}");
    assert!(err.has(ProblemKind::InvalidValue));
    let err =
        parse_plan_toml("[[task]]\nid = \"a\"\ntitle = \n", Path::new("plan.toml")).unwrap_err();
    assert!(err.to_string().starts_with("plan.toml:3:"), "{err}");
    let err = parse_plan_toml("", Path::new("plan.toml")).unwrap_err();
    assert!(err.to_string().contains("plan.toml: no tasks — add `[[task]]` tables"), "{err}");
}

#[test]
fn the_json_report_is_a_valid_breeze_plan_message() {
    let plan = load_with_extensions(&fixture("plan.toml"), &["sim"]).unwrap();
    let analysis = analyze(&plan, 3).unwrap();
    let json = breeze_plan::render::json(&plan, &analysis);
    let report = breeze_protocol::validate::parse::<breeze_protocol::PlanReport>(json.clone())
        .unwrap_or_else(|err| panic!("{err}\n{json:#}"));
    assert_eq!(report.tasks.len(), 4);
    let two = report.tasks.iter().find(|task| task.id == "2").unwrap();
    assert_eq!(two.extensions["sim"]["fail_attempts"], 1, "extension tables are kept");
    assert_eq!(
        breeze_protocol::MessageKind::detect(&json).unwrap(),
        breeze_protocol::MessageKind::BreezePlan
    );
}
