//! Budgets and review independence through the `breeze` binary, on the scripted backend
//! (`[task.sim] cost_usd` is what each role call of a task reports).

use crate::support::{
    SCRIPTED_CONFIG, both, git, repo_with, run_in, status_json, stdout, task_state, toml_task,
};

/// A run stopped at `run_usd` exits 3 with the figure and what to raise, `status`,
/// `report` and `--json` show spend against the cap, a raise below the spend is refused,
/// and `breeze resume --budget-usd` lands the rest.
#[test]
fn a_run_at_its_budget_exits_3_and_resume_budget_usd_lands_the_rest() {
    let plan = toml_task("1", "First", &["a.txt"], "[task.sim]\ncost_usd = 0.5")
        + &toml_task("2", "Second", &["b.txt"], "depends_on = [\"1\"]\n[task.sim]\ncost_usd = 0.5");
    let config = format!("{SCRIPTED_CONFIG}\n[budget]\nrun_usd = 1.0\n");
    let (_temp, root) = repo_with(&[("breeze.toml", &config), ("plan.toml", &plan)]);
    let start = git(&root, &["rev-parse", "main"]).trim().to_string();

    let stopped = run_in(&root, &["run", "plan.toml"]);
    let text = both(&stopped);
    assert_eq!(stopped.status.code(), Some(3), "{text}");
    assert!(text.contains("$ budget: run_usd = 1.00 ($0.00 spent)"), "{text}");
    assert!(
        text.contains("stopped: the run spent $1.00 of its run_usd = 1.00; no new role call was started; raise the cap to go on: `breeze resume --budget-usd X` with X above 1.00, or raise [budget] run_usd in breeze.toml and `breeze resume`"),
        "{text}"
    );
    let status = status_json(&root);
    assert_eq!(status["budget"]["run_usd"], 1.0, "{status}");
    assert_eq!(status["usage"]["cost_usd"], 1.0, "{status}");
    assert_eq!(
        (task_state(&status, "1"), task_state(&status, "2")),
        ("landed".into(), "pending".into())
    );
    let table = stdout(&run_in(&root, &["status"]));
    assert!(table.contains("budget: $1.00 of run_usd = 1.00"), "{table}");
    let report = stdout(&run_in(&root, &["report"]));
    assert!(report.contains("- budget: $1.00 of run_usd = 1.00"), "{report}");
    // main holds task 1, whole, and nothing of task 2.
    let landed = git(
        &root,
        &[
            "log",
            "--format=%(trailers:key=Breeze-Task,valueonly,separator=)",
            &format!("{start}..main"),
        ],
    );
    assert_eq!(landed.trim(), "1");
    assert_eq!(git(&root, &["ls-tree", "--name-only", "main", "a.txt", "b.txt"]).trim(), "a.txt");

    let low = run_in(&root, &["resume", "--budget-usd", "0.75"]);
    assert_eq!(low.status.code(), Some(2), "{}", both(&low));
    assert!(
        both(&low).contains("--budget-usd 0.75 is not above what the run has spent ($1.00)"),
        "{}",
        both(&low)
    );
    let nonsense = run_in(&root, &["resume", "--budget-usd", "lots"]);
    assert_eq!(nonsense.status.code(), Some(2), "{}", both(&nonsense));

    let resumed = run_in(&root, &["resume", "--budget-usd", "2.50", "--json"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    // Each role call's spend is an event; the budget line went to stderr.
    let spent: Vec<serde_json::Value> = stdout(&resumed)
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|event| event["event"]["kind"] == "spent")
        .collect();
    assert_eq!(spent.len(), 2, "task 2's worker and reviewer");
    assert!(
        spent.iter().all(|e| e["event"]["task"] == "2" && e["event"]["usage"]["cost_usd"] == 0.5)
    );
    let status = status_json(&root);
    assert_eq!(status["budget"]["run_usd"], 2.5, "{status}");
    assert_eq!(task_state(&status, "2"), "landed");
    assert_eq!(git(&root, &["ls-tree", "--name-only", "main", "a.txt", "b.txt"]), "a.txt\nb.txt\n");
}

/// `task_usd` escalates the task that reaches it, with the figure; the others land.
#[test]
fn a_task_at_its_budget_escalates_with_the_figure() {
    let plan =
        toml_task("1", "Costly", &["a.txt"], "[task.sim]\ncost_usd = 0.6\nrequest_changes = 1")
            + &toml_task("2", "Cheap", &["b.txt"], "[task.sim]\ncost_usd = 0.1");
    let config = format!("{SCRIPTED_CONFIG}\n[budget]\ntask_usd = 1.0\n");
    let (_temp, root) = repo_with(&[("breeze.toml", &config), ("plan.toml", &plan)]);
    let output = run_in(&root, &["run", "plan.toml"]);
    let text = both(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("■ [1] escalated: task 1 spent $1.20 of its task_usd = 1.00;"), "{text}");
    let status = status_json(&root);
    assert_eq!(
        (task_state(&status, "1"), task_state(&status, "2")),
        ("escalated".into(), "landed".into())
    );
}

/// A backend that reports no cost is named at the start, and its calls are counted as of
/// unknown cost.
#[test]
fn a_backend_without_a_cost_is_named_when_a_cap_needs_one() {
    let config = format!("{SCRIPTED_CONFIG}\n[budget]\nrun_usd = 3.0\nrun_tokens = 1000\n");
    let (_temp, root) =
        repo_with(&[("breeze.toml", &config), ("plan.toml", &toml_task("1", "T", &["a.txt"], ""))]);
    // `breeze doctor` warns of it before any run, as the run's preflight does.
    let doctor = stdout(&run_in(&root, &["doctor", "--no-setup"]));
    assert!(
        doctor.contains("  ! the worker's backend `scripted` reports no cost or tokens for task(s) 1 (their [task.sim] sets no cost_usd / tokens): run_usd and run_tokens cannot cap it"),
        "{doctor}"
    );
    let output = run_in(&root, &["run", "plan.toml"]);
    let text = both(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.contains("! the worker's backend `scripted` reports no cost or tokens for task(s) 1 (their [task.sim] sets no cost_usd / tokens): run_usd and run_tokens cannot cap it"),
        "{text}"
    );
    let status = status_json(&root);
    assert_eq!(status["usage"]["unpriced_calls"], 2, "{status}");
    assert!(stdout(&run_in(&root, &["status"])).contains("2 role calls of unknown cost"));
}

/// `breeze plan`, `breeze doctor` and the run start say which pairing is in force; under
/// "require" a reviewer on the worker's own model is refused before anything is created;
/// "off" checks nothing.
#[test]
fn the_review_pairing_is_said_and_require_refuses_the_workers_own_model() {
    let plan = toml_task("1", "T", &["a.txt"], "");
    let shared = "[roles.worker]\nbackend = \"claude\"\nmodel = \"claude-sonnet-4-5\"\n[roles.reviewer]\nbackend = \"claude\"\nmodel = \"sonnet\"\n[roles.advisor]\nbackend = \"codex\"\n";
    for (mode, exit) in [("warn", 0), ("require", 2), ("off", 0)] {
        let config = format!("{shared}[review]\nindependent = \"{mode}\"\n");
        let (_temp, root) = repo_with(&[("breeze.toml", &config), ("plan.toml", &plan)]);
        let planned = stdout(&run_in(&root, &["plan", "plan.toml"]));
        let doctor = stdout(&run_in(&root, &["doctor"]));
        let same = "worker claude (claude-sonnet-4-5) → reviewer claude (sonnet): NOT independent (the same backend and model)";
        let other = "worker claude (claude-sonnet-4-5) → advisor codex (its default model): independent (another backend)";
        if mode == "off" {
            assert!(
                planned
                    .contains("review independence: not checked ([review] independent = \"off\")"),
                "{planned}"
            );
            assert!(
                doctor.contains(
                    "  - review independence is not checked ([review] independent = \"off\")"
                ),
                "{doctor}"
            );
            for text in [&planned, &doctor] {
                assert!(!text.contains(same), "{text}");
            }
        } else {
            assert!(
                planned
                    .contains(&format!("review independence ([review] independent = \"{mode}\"):")),
                "{planned}"
            );
            assert!(
                planned.contains(&format!("  ! {same} — give roles.reviewer another backend")),
                "{planned}"
            );
            assert!(planned.contains(&format!("  ⇄ {other}")), "{planned}");
            // The doctor's preflight: a problem under "require" (what `breeze run` stops
            // with), a warning under "warn".
            let broken = match mode {
                "require" => format!(
                    "  ✗ [review] independent = \"require\", but the reviewer runs on the worker's own backend and model: {same}: give roles.reviewer another backend"
                ),
                _ => format!("  ! {same}: give roles.reviewer another backend"),
            };
            assert!(doctor.contains(&broken), "{doctor}");
            assert!(doctor.contains(&format!("  ✓ {other}")), "{doctor}");
        }
        // `breeze doctor --json` carries the same checks for CI.
        let json: serde_json::Value =
            serde_json::from_str(&stdout(&run_in(&root, &["doctor", "--json", "--no-setup"])))
                .expect("breeze-doctor.v1");
        let reviewer = json["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|check| check["check"] == "review")
            .unwrap_or_else(|| panic!("a review check: {json}"));
        let (subject, outcome) = match mode {
            "warn" => ("roles.reviewer", "warning"),
            "require" => ("roles.reviewer", "problem"),
            _ => ("review.independent", "skipped"),
        };
        assert_eq!(
            (reviewer["subject"].as_str(), reviewer["outcome"].as_str()),
            (Some(subject), Some(outcome)),
            "{json}"
        );
        if mode == "require" {
            assert_eq!(json["ok"], false, "{json}");
        }
        if exit == 2 {
            let refused = run_in(&root, &["run", "plan.toml"]);
            let text = both(&refused);
            assert_eq!(refused.status.code(), Some(2), "{text}");
            assert!(text.contains("[review] independent = \"require\", but the reviewer runs on the worker's own backend and model"), "{text}");
            assert!(text.contains("or set [review] independent = \"warn\""), "{text}");
            assert!(!root.join(".breeze/runs").exists(), "nothing is created");
            assert!(!root.join(".harness-worktrees").exists());
        }
    }
}
