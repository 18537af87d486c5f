//! `sprint-contract.v1` for a task.

use breeze_protocol::{
    ContractAdvisor, ContractBody, ContractCheck, ContractReview, ContractSource, ContractStatus,
    ContractTask, ModelPolicy, NonGoal, RuntimeValidation, SprintContract, SprintContractV1,
};

use crate::model::Task;
use crate::risk::RiskFlag;
use crate::shared::SHARED_FILES;

/// Settings the contract takes from the run and its configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractOptions {
    /// The plan file, relative to the repository root (e.g. `Plans.md`).
    pub plans_file: String,
    /// `[land] verify` argv, if configured: becomes the runtime validation command.
    pub verify: Option<Vec<String>>,
    /// `[review] checks` argvs: run in the task's worktree before the reviewer.
    pub checks: Vec<Vec<String>>,
    /// `[advisor] enabled`.
    pub advisor_enabled: bool,
    /// `[advisor] max_consults_per_task`.
    pub max_consults: u32,
    /// `[advisor] retry_threshold`.
    pub retry_threshold: u32,
    /// RFC 3339 UTC time of generation.
    pub generated_at: String,
    /// The shared files ([`Plan::shared_files`](crate::model::Plan::shared_files)): those
    /// the task does not own are its non-goals (the Lead writes them).
    pub shared_files: Vec<String>,
}

impl Default for ContractOptions {
    fn default() -> Self {
        ContractOptions {
            plans_file: "Plans.md".to_owned(),
            verify: None,
            checks: Vec::new(),
            advisor_enabled: true,
            max_consults: 3,
            retry_threshold: 2,
            generated_at: String::new(),
            shared_files: SHARED_FILES.iter().map(|file| file.to_string()).collect(),
        }
    }
}

/// Review rounds before escalation.
pub const MAX_REVIEW_ITERATIONS: u32 = 3;

/// The literal trigger the original harness records for `<!-- advisor:required -->`.
const ADVISOR_REQUIRED_TRIGGER: &str = "<!-- advisor:required -->";

/// Builds the task's `sprint-contract.v1`: checks from the DoD, the write set as
/// declared scope, risk flags, advisor settings and triggers, runtime validation from
/// the verify command, and review with at most 3 rounds. The contract is generated
/// by the Lead from the plan, so it is born `approved`.
pub fn sprint_contract(task: &Task, options: &ContractOptions) -> SprintContract {
    let contract = contract_body(task, options);
    let reviewer_profile =
        if contract.runtime_validation.is_empty() { "static" } else { "runtime" };
    SprintContract {
        schema_version: SprintContractV1,
        generated_at: options.generated_at.clone(),
        source: contract_source(task, options),
        task: contract_task(task),
        contract,
        advisor: contract_advisor(task, options),
        review: contract_review(options, reviewer_profile),
    }
}

/// `source`: the plan file and the task it came from.
fn contract_source(task: &Task, options: &ContractOptions) -> ContractSource {
    ContractSource {
        plans_file: options.plans_file.clone(),
        task_id: task.id.to_string(),
        authorization_refs: Vec::new(),
    }
}

/// `task`: the task as the plan states it.
fn contract_task(task: &Task) -> ContractTask {
    ContractTask {
        id: task.id.to_string(),
        title: task.title.clone(),
        definition_of_done: task.dod.clone(),
        depends_on: task.depends_on.iter().map(ToString::to_string).collect(),
        status_at_generation: task.marker.clone().unwrap_or_else(|| "cc:todo".to_owned()),
        declared_scope: task.writes.entries().to_vec(),
    }
}

/// `contract`: what the worker must satisfy and must leave alone.
fn contract_body(task: &Task, options: &ContractOptions) -> ContractBody {
    let (tdd_required, skip_tdd_reason) = tdd(task);
    ContractBody {
        checks: checks(task, options),
        non_goals: non_goals(task, options),
        runtime_validation: runtime_validation(options),
        browser_validation: Vec::new(),
        risk_flags: task.risk.iter().map(|f| f.as_str().to_owned()).collect(),
        tdd_required,
        test_framework: test_framework(options),
        test_todo_list: if tdd_required {
            vec!["normal".to_owned(), "boundary".to_owned(), "error".to_owned()]
        } else {
            Vec::new()
        },
        skip_tdd_reason,
    }
}

/// The DoD as one check, then (when it has several) each of its items, then the write
/// scope.
fn checks(task: &Task, options: &ContractOptions) -> Vec<ContractCheck> {
    let plan_source =
        if options.plans_file.ends_with(".toml") { "plan.toml.dod" } else { "Plans.md.DoD" };
    let mut checks = vec![ContractCheck {
        id: "dod-primary".to_owned(),
        source: plan_source.to_owned(),
        description: task.dod.clone(),
    }];
    let items = dod_items(&task.dod);
    if items.len() > 1 {
        for (k, item) in items.iter().enumerate() {
            checks.push(ContractCheck {
                id: format!("dod-{}", k + 1),
                source: plan_source.to_owned(),
                description: item.clone(),
            });
        }
    }
    if !task.writes.is_empty() {
        checks.push(ContractCheck {
            id: "write-scope".to_owned(),
            source: "plan.writes".to_owned(),
            description: format!(
                "every changed path is inside the write set: {}",
                task.writes.entries().join(", ")
            ),
        });
    }
    checks
}

/// Status markers, and the shared files the task does not own, are the Lead's.
fn non_goals(task: &Task, options: &ContractOptions) -> Vec<NonGoal> {
    let mut non_goals = vec![NonGoal::Text(
        "Do not change Plans.md status markers; the Lead updates them when the task lands"
            .to_owned(),
    )];
    let not_owned: Vec<&str> = (options.shared_files.iter())
        .map(String::as_str)
        .filter(|f| !task.writes.matches(f))
        .collect();
    if !not_owned.is_empty() {
        non_goals.push(NonGoal::Text(format!(
            "Do not edit {}: this task does not own them (the Lead writes them)",
            not_owned.join(", ")
        )));
    }
    non_goals
}

/// The configured verify command, if any (an empty argv counts as none).
fn runtime_validation(options: &ContractOptions) -> Vec<RuntimeValidation> {
    let checks = options.checks.iter().enumerate().map(|(n, argv)| RuntimeValidation {
        id: Some(format!("check-{}", n + 1)),
        label: "review check".to_owned(),
        command: shell_join(argv),
        description: Some(
            "a review check; it runs in the task's worktree before the reviewer, and a failure sends the work back"
                .to_owned(),
        ),
        required_artifacts: Vec::new(),
    });
    let verify =
        options.verify.iter().filter(|argv| !argv.is_empty()).map(|argv| RuntimeValidation {
            id: Some("verify".to_owned()),
            label: "verify".to_owned(),
            command: shell_join(argv),
            description: Some(
                "the configured verify command; it runs on the merged tree before main moves"
                    .to_owned(),
            ),
            required_artifacts: Vec::new(),
        });
    checks.filter(|check| !check.command.is_empty()).chain(verify).collect()
}

/// Whether the title or DoD asks for `[tdd:required]`; if not, the reason given by
/// `[tdd:skip:<reason>]` (or `unspecified`).
fn tdd(task: &Task) -> (bool, Option<String>) {
    let text = format!("{}\n{}", task.title, task.dod);
    let lower = text.to_lowercase();
    let tdd_required = lower.contains("[tdd:required]");
    let skip_tdd_reason = if tdd_required {
        None
    } else {
        Some(tag_value(&lower, "[tdd:skip:").unwrap_or_else(|| "unspecified".to_owned()))
    };
    (tdd_required, skip_tdd_reason)
}

/// The verify command's program name (`/usr/bin/cargo` → `cargo`), or `none`.
fn test_framework(options: &ContractOptions) -> String {
    options
        .verify
        .as_ref()
        .and_then(|argv| argv.first())
        .map(|program| program.rsplit('/').next().unwrap_or(program).to_owned())
        .unwrap_or_else(|| "none".to_owned())
}

/// `advisor`: the configured settings, triggered by the task's risk flags and
/// `<!-- advisor:required -->`.
fn contract_advisor(task: &Task, options: &ContractOptions) -> ContractAdvisor {
    let mut triggers: Vec<String> = task
        .risk
        .iter()
        .filter(|f| RiskFlag::ALL.contains(f))
        .map(|f| f.as_str().to_owned())
        .collect();
    if task.advisor_required {
        triggers.push(ADVISOR_REQUIRED_TRIGGER.to_owned());
    }
    ContractAdvisor {
        enabled: options.advisor_enabled,
        mode: "on-demand".to_owned(),
        max_consults: options.max_consults,
        retry_threshold: options.retry_threshold,
        pre_escalation_consult: true,
        triggers,
        model_policy: ModelPolicy {
            claude_default: "opus".to_owned(),
            codex_default: "gpt-5.4".to_owned(),
        },
    }
}

/// `review`: approved by the Lead at generation, at most [`MAX_REVIEW_ITERATIONS`]
/// rounds.
fn contract_review(options: &ContractOptions, reviewer_profile: &str) -> ContractReview {
    ContractReview {
        status: ContractStatus::Approved,
        reviewer_profile: reviewer_profile.to_owned(),
        max_iterations: MAX_REVIEW_ITERATIONS,
        reviewer_notes: vec![
            "Generated by the breeze Lead from the plan; approval here is not a user authorization."
                .to_owned(),
        ],
        gaps: Vec::new(),
        followups: Vec::new(),
        approved_at: Some(options.generated_at.clone()).filter(|s| !s.is_empty()),
    }
}

/// `[tdd:skip:docs-only]` → `docs-only`.
fn tag_value(lower: &str, open: &str) -> Option<String> {
    let start = lower.find(open)? + open.len();
    let end = lower[start..].find(']')?;
    let value = lower[start..start + end].trim();
    (!value.is_empty()).then(|| value.to_owned())
}

/// Splits a DoD into separately checkable items: `(a) … (b) …`, `;`, `・` or `<br>`.
fn dod_items(dod: &str) -> Vec<String> {
    let mut text = dod.replace("<br>", ";").replace("<br/>", ";").replace('・', ";");
    text = text.replace('；', ";");
    // `(a) x, (b) y` → `; x; y`
    for letter in 'a'..='h' {
        text = text.replace(&format!("({letter})"), ";");
    }
    text.split(';')
        .map(|s| s.trim().trim_end_matches([',', '、']).trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Joins argv into one shell command line, quoting what the shell would split.
fn shell_join(argv: &[String]) -> String {
    argv.iter()
        .map(|arg| {
            let plain = !arg.is_empty()
                && arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain { arg.clone() } else { format!("'{}'", arg.replace('\'', "'\\''")) }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dod_splits_into_items() {
        assert_eq!(dod_items("tests pass"), ["tests pass"]);
        assert_eq!(dod_items("(a) RED first, (b) GREEN after"), ["RED first", "GREEN after"]);
        assert_eq!(dod_items("build ok・lint 0"), ["build ok", "lint 0"]);
        assert_eq!(dod_items("a; b;"), ["a", "b"]);
    }

    #[test]
    fn shell_quoting() {
        let argv: Vec<String> = ["cargo", "test", "--", "it's here"].map(String::from).to_vec();
        assert_eq!(shell_join(&argv), "cargo test -- 'it'\\''s here'");
    }
}
