//! Editing plan files: write sets filled in, tasks appended — every other byte kept.

use std::collections::BTreeMap;
use std::path::Path;

use breeze_plan::edit::{NewTask, append_tasks, set_writes};
use breeze_plan::{PlanFormat, TaskId, parse_plan_toml, parse_plans_md};

fn writes(pairs: &[(&str, &[&str])]) -> BTreeMap<TaskId, Vec<String>> {
    pairs
        .iter()
        .map(|(id, entries)| (TaskId::new(*id), entries.iter().map(ToString::to_string).collect()))
        .collect()
}

fn md(text: &str) -> breeze_plan::Plan {
    parse_plans_md(text, Path::new("Plans.md")).unwrap()
}

/// The lines of `after` that are not in `before`, in order.
fn added(before: &str, after: &str) -> Vec<String> {
    let mut old = before.lines().peekable();
    let mut out = Vec::new();
    for line in after.lines() {
        if old.peek() == Some(&line) {
            old.next();
        } else {
            out.push(line.to_string());
        }
    }
    assert!(old.next().is_none(), "a line of the original is gone:\n{after}");
    out
}

const TABLE: &str = "# Plans\n\nIntro text.\n\n| Task | 内容 | DoD | Depends | Status |\n|------|------|-----|---------|--------|\n| 1 | Parser | parses | - | cc:TODO |\n| 2 | Lexer | lexes | - | cc:TODO |\n| 3 | Done one | - | - | cc:done |\n\nTrailing prose.\n";

#[test]
fn a_writes_column_is_added_where_the_table_has_none() {
    let plan = md(TABLE);
    let out = set_writes(
        &plan,
        TABLE,
        &writes(&[("1", &["src/parser.rs"]), ("2", &["src/lexer/"])]),
        &[],
    )
    .unwrap();
    assert_eq!(
        out,
        "# Plans\n\nIntro text.\n\n| Task | 内容 | DoD | Writes | Depends | Status |\n|------|------|-----|--------|---------|--------|\n| 1 | Parser | parses | `src/parser.rs` | - | cc:TODO |\n| 2 | Lexer | lexes | `src/lexer/` | - | cc:TODO |\n| 3 | Done one | - | | - | cc:done |\n\nTrailing prose.\n"
    );
    let again = md(&out);
    assert_eq!(again.task(&TaskId::new("1")).unwrap().writes.entries(), ["src/parser.rs"]);
    assert_eq!(again.task(&TaskId::new("2")).unwrap().writes.entries(), ["src/lexer/"]);
}

#[test]
fn an_existing_writes_cell_is_filled() {
    let text = "| Task | Content | DoD | Writes | Depends | Status |\n|---|---|---|---|---|---|\n| 1 | A | a | - | - | cc:TODO |\n| 2 | B | b | `b.rs` | - | cc:TODO |\n";
    let plan = md(text);
    let out = set_writes(&plan, text, &writes(&[("1", &["a.rs", "tests/a_*.rs"])]), &[]).unwrap();
    assert_eq!(out, text.replace("| A | a | - |", "| A | a | `a.rs`, `tests/a_*.rs` |"));
}

#[test]
fn heading_and_list_item_tasks_get_a_writes_line() {
    let text = "# Plans\n\n### 1.1 Session store `cc:TODO`\n\nKeep sessions.\n\n## Phase 2 `cc:TODO`\n\n- [ ] 2.1 Chat screen\n  - shows messages\n- [ ] 2.2 Settings\n";
    let plan = md(text);
    assert_eq!(plan.tasks.len(), 3, "{plan:?}");
    let out = set_writes(
        &plan,
        text,
        &writes(&[
            ("1.1", &["src/session.rs"]),
            ("2.1", &["src/chat/"]),
            ("2.2", &["src/settings.rs"]),
        ]),
        &[],
    )
    .unwrap();
    assert_eq!(
        added(text, &out),
        ["Writes: `src/session.rs`", "  - Writes: `src/chat/`", "  - Writes: `src/settings.rs`"]
    );
    let again = md(&out);
    for (id, entry) in [("1.1", "src/session.rs"), ("2.1", "src/chat/"), ("2.2", "src/settings.rs")]
    {
        assert_eq!(again.task(&TaskId::new(id)).unwrap().writes.entries(), [entry], "{id}");
    }
    assert_eq!(
        again.task(&TaskId::new("2.1")).unwrap().dod,
        "shows messages",
        "the DoD bullet stays the DoD"
    );
}

#[test]
fn a_misaligned_row_is_a_plan_error_so_nothing_is_written() {
    let text = "| Task | Content | Status |\n|---|---|---|\n| 1 | A | extra | cc:TODO |\n";
    let err = parse_plans_md(text, Path::new("Plans.md")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Plans.md:3: row has 4 cells but the header of its table (`| Task | Content | Status |`) has 3 — write one cell per column — `|  |` for an empty cell, `\\|` for a `|` inside a cell"
    );
}

#[test]
fn plan_toml_gets_a_writes_key_or_its_empty_one_replaced() {
    let text = "# plan\n[[task]]\nid = \"1\"\ntitle = \"A\"\n[task.sim]\nfail_attempts = 1\n\n[[task]]\nid = \"2\"\ntitle = \"B\"\nwrites = [\n  # none yet\n]\ndepends_on = [\"1\"]\n";
    let plan = breeze_plan::parse_plan_toml_with_extensions(text, Path::new("plan.toml"), &["sim"])
        .unwrap();
    let out =
        set_writes(&plan, text, &writes(&[("1", &["a.rs"]), ("2", &["b/"])]), &["sim"]).unwrap();
    assert_eq!(
        out,
        "# plan\n[[task]]\nid = \"1\"\nwrites = [\"a.rs\"]\ntitle = \"A\"\n[task.sim]\nfail_attempts = 1\n\n[[task]]\nid = \"2\"\ntitle = \"B\"\nwrites = [\"b/\"]\ndepends_on = [\"1\"]\n"
    );
}

fn new_task(id: &str, title: &str, writes: &[&str], depends: &[&str]) -> NewTask {
    NewTask {
        id: id.into(),
        title: title.into(),
        dod: format!("{title} works"),
        writes: writes.iter().map(ToString::to_string).collect(),
        depends_on: depends.iter().map(ToString::to_string).collect(),
        risk: Vec::new(),
    }
}

#[test]
fn drafted_tasks_join_a_final_template_table_or_get_their_own() {
    let template = "# Plans\n\n| Task | Content | DoD | Writes | Depends | Status |\n|------|---------|-----|--------|---------|--------|\n| 1 | First | done | `a.rs` | - | cc:todo |\n";
    let tasks = [new_task("2", "Second", &["b.rs"], &["1"])];
    let out =
        append_tasks(Path::new("Plans.md"), PlanFormat::PlansMd, template, &tasks, &[]).unwrap();
    assert_eq!(added(template, &out), ["| 2 | Second | Second works | `b.rs` | 1 | cc:TODO |"]);
    let plan = md(&out);
    assert_eq!(plan.task(&TaskId::new("2")).unwrap().depends_on, [TaskId::new("1")]);

    let prose = "# Plans\n\nNothing yet.\n";
    let out = append_tasks(Path::new("Plans.md"), PlanFormat::PlansMd, prose, &tasks[..], &[]);
    // Task 2 depends on a task this file does not have: a warning, not a refusal.
    let out = out.unwrap();
    assert!(out.starts_with(prose.trim_end()) && out.contains("## Drafted tasks"), "{out}");
}

#[test]
fn drafted_tasks_are_appended_to_plan_toml() {
    let text = "[[task]]\nid = \"1\"\ntitle = \"First\"\nwrites = [\"a.rs\"]\n";
    let tasks = [new_task("2", "Second", &["b.rs"], &["1"])];
    let out = append_tasks(Path::new("plan.toml"), PlanFormat::Toml, text, &tasks, &[]).unwrap();
    let plan = parse_plan_toml(&out, Path::new("plan.toml")).unwrap();
    assert_eq!(plan.tasks.len(), 2);
    assert!(out.starts_with(text.trim_end()), "{out}");
}

#[test]
fn drafted_tasks_are_renumbered_after_the_plans_own_when_their_ids_clash() {
    let existing: Vec<TaskId> = ["1", "2", "3"].into_iter().map(TaskId::from).collect();
    let mut tasks =
        vec![new_task("1", "A", &["a.rs"], &[]), new_task("2", "B", &["b.rs"], &["1", "3"])];
    let renames = breeze_plan::edit::renumber_new_tasks(&existing, existing.last(), &mut tasks);
    assert_eq!(renames, [("1".to_string(), "4".to_string()), ("2".to_string(), "5".to_string())]);
    assert_eq!((tasks[0].id.as_str(), tasks[1].id.as_str()), ("4", "5"));
    // A drafted task's dependency follows its renumbering; one on the plan's own stays.
    assert_eq!(tasks[1].depends_on, ["4", "3"]);

    let mut fresh = vec![new_task("7", "C", &["c.rs"], &["3"])];
    assert!(breeze_plan::edit::renumber_new_tasks(&existing, None, &mut fresh).is_empty());
    assert_eq!(fresh[0].id, "7", "no clash, no renumbering");

    // Ids told apart by their section are written bare: `1.1` is taken.
    let qualified: Vec<TaskId> =
        ["Phase 1/1.1", "Phase 2/1.1"].into_iter().map(TaskId::from).collect();
    let mut tasks = vec![new_task("1.1", "E", &[], &[])];
    breeze_plan::edit::renumber_new_tasks(&qualified, qualified.last(), &mut tasks);
    assert_eq!(tasks[0].id, "1.2");

    let dotted: Vec<TaskId> = ["1.1", "2.1", "2.3", "T4"].into_iter().map(TaskId::from).collect();
    let mut tasks = vec![new_task("T4", "D", &[], &[])];
    breeze_plan::edit::renumber_new_tasks(&dotted, Some(&TaskId::from("2.3")), &mut tasks);
    assert_eq!(tasks[0].id, "2.4", "in the family of the plan's last task");
}

#[test]
fn fill_ids_keeps_every_other_byte_and_refuses_a_plan_toml() {
    let text = "# Plans\r\n\r\n- [ ] T1 First `cc:done`\r\n- [ ] Second `cc:TODO` <!-- why -->\r\n";
    let (out, written) =
        breeze_plan::edit::fill_ids(Path::new("Plans.md"), PlanFormat::PlansMd, text).unwrap();
    assert_eq!(out, text.replace("- [ ] Second", "- [ ] T2 Second"));
    assert_eq!(written.len(), 1);
    let err =
        breeze_plan::edit::fill_ids(Path::new("plan.toml"), PlanFormat::Toml, "").unwrap_err();
    assert!(err.to_string().contains("a plan.toml task always has an id"), "{err}");
}
