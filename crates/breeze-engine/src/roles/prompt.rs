//! Rendering the prompt a role process reads on stdin: the role definition followed by
//! a briefing rendered from `templates/prompts/<role>.md`.
//!
//! Advisor text only ever reaches worker prompts; reviewer prompts are rendered from
//! `review-input.v1`, which has no field for it.

use breeze_protocol::{
    AdvisorRequest, ReviewInput, Role, ScaffoldInput, ScaffoldMode, WorkerInput,
};

use super::definition::RoleDefinition;
use crate::backend::{Answers, BackendKind};

const WORKER_TEMPLATE: &str = include_str!("../../../../templates/prompts/worker.md");
const SCAFFOLDER_TEMPLATE: &str = include_str!("../../../../templates/prompts/scaffolder.md");
const ADVISOR_TEMPLATE: &str = include_str!("../../../../templates/prompts/advisor.md");
const REVIEWER_TEMPLATE: &str = include_str!("../../../../templates/prompts/reviewer.md");

/// Replaces `{{name}}` placeholders in one pass over `template`: values are copied
/// verbatim (a `{{title}}` inside an inserted text stays as written) and unknown
/// placeholders are left as they are.
fn render(template: &str, values: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let inner = &rest[open + 2..];
        let known = inner.find("}}").and_then(|close| {
            let name = &inner[..close];
            let value = values.iter().find(|(known, _)| *known == name)?;
            Some((&value.1, close))
        });
        match known {
            Some((value, close)) => {
                out.push_str(value);
                rest = &inner[close + 2..];
            }
            // Not a placeholder: keep the brace and look again from the next one.
            None => {
                out.push('{');
                rest = &rest[open + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.iter().map(|item| format!("`{item}`")).collect::<Vec<_>>().join(", ")
    }
}

fn bullets(items: impl IntoIterator<Item = String>) -> String {
    let lines: Vec<String> = items.into_iter().map(|item| format!("- {item}")).collect();
    if lines.is_empty() { "- none".into() } else { lines.join("\n") }
}

fn with_definition(definition: &RoleDefinition, briefing: String) -> String {
    format!("{}\n\n---\n\n{}", definition.body, briefing.trim_end())
}

/// The note of the person who sent the task back to work, if any.
fn note_section(note: Option<&str>) -> String {
    match note.map(str::trim).filter(|note| !note.is_empty()) {
        Some(note) => format!("\n## A note from the person who sent this task back\n\n{note}\n"),
        None => String::new(),
    }
}

/// The answer to the worker's scope request, if it made one.
fn scope_section(decision: Option<&breeze_protocol::ScopeDecision>) -> String {
    let Some(decision) = decision else { return String::new() };
    let paths =
        decision.paths.iter().map(|path| format!("`{path}`")).collect::<Vec<_>>().join(", ");
    if decision.granted {
        format!(
            "\n## Your scope request was granted\n\nYour write set now includes {paths}; go on with the task.\n"
        )
    } else {
        format!(
            "\n## Your scope request was denied\n\n{paths}: {}. Finish the task within your write set, or report failed.\n",
            decision.reason.as_deref().unwrap_or("no reason given")
        )
    }
}

/// One review finding as the worker reads it: `[major] `src/a.rs:3` the issue — the fix`.
fn gap_line(gap: &breeze_protocol::Gap) -> String {
    let location =
        if gap.location.is_empty() { String::new() } else { format!("`{}` ", gap.location) };
    let suggestion =
        if gap.suggestion.is_empty() { String::new() } else { format!(" — {}", gap.suggestion) };
    format!("[{}] {location}{}{suggestion}", severity(gap.severity), gap.issue)
}

/// The worker's prompt. Advisor guidance goes at the very top, before the task.
pub fn worker(definition: &RoleDefinition, input: &WorkerInput) -> String {
    let guidance = match &input.advisor_guidance {
        Some(guidance) => format!(
            "## Advisor guidance ({}) — apply this first\n\n{}\n\n{}\n\n",
            guidance.decision.as_str(),
            guidance.summary,
            bullets(guidance.instructions.iter().cloned())
        ),
        None => String::new(),
    };
    let feedback = match &input.review_feedback {
        Some(feedback) => format!(
            "\n## Fix these critical/major review findings (round {})\n\n{}\n\nCommit the fixes (or leave them uncommitted) and report completion.\n",
            feedback.round,
            bullets(feedback.gaps.iter().map(gap_line))
        ),
        None => String::new(),
    };
    let conflict = match &input.conflict {
        Some(conflict) => format!(
            "\n## Resolve the merge conflict with the new main\n\nYour worktree was moved onto the current `main`; these paths conflict (text files hold conflict markers):\n\n{}\n\nWhere one side has a file or link and the other a folder of the same name, the folder stays and the file is kept beside it as `<path>~<branch>`: move what you need into place and delete that copy.\n",
            bullets(conflict.files.iter().map(|file| format!("`{file}`")))
        ),
        None => String::new(),
    };
    let verify_failure = match &input.verify_failure {
        Some(failure) => format!(
            "\n## The verify command failed on the merged tree\n\n`{}` exited with {}:\n\n```\n{}\n```\n",
            failure.command.join(" "),
            failure.exit_code.map_or("no exit code".to_string(), |code| code.to_string()),
            failure.log_tail
        ),
        None => String::new(),
    };
    let last_failure = match &input.last_failure {
        Some(text) => format!("\n## The previous attempt failed\n\n```\n{text}\n```\n"),
        None => String::new(),
    };
    let violations = if input.universal_violations.is_empty() {
        String::new()
    } else {
        format!(
            "\n## Mistakes already found in this run — do not repeat them\n\n{}\n",
            bullets(input.universal_violations.iter().cloned())
        )
    };
    let task = &input.task;
    let briefing = render(
        WORKER_TEMPLATE,
        &[
            ("guidance", guidance),
            ("task_id", task.id.clone()),
            ("title", task.title.clone()),
            ("dod", task.dod.clone()),
            ("writes", list_or_none(&task.writes)),
            ("depends_on", list_or_none(&task.depends_on)),
            ("risk", list_or_none(&task.risk)),
            ("attempt", input.attempt.to_string()),
            ("round", input.round.to_string()),
            ("base", input.base.clone()),
            ("contract_path", input.contract_path.clone()),
            (
                "scope",
                format!(
                    "{}{}",
                    note_section(input.note.as_deref()),
                    scope_section(input.scope_decision.as_ref())
                ),
            ),
            ("feedback", feedback),
            ("conflict", conflict),
            ("verify_failure", format!("{verify_failure}{last_failure}")),
            ("universal_violations", violations),
        ],
    );
    with_definition(definition, briefing)
}

/// The closing section of every prompt: where the role may write and how its answer comes
/// back, which depends on what the backend can deliver. Agent CLIs answer with their final
/// message (its shape forced by a JSON schema); `command` roles write `$BREEZE_OUTPUT` or
/// print the object last. Read-only roles are never asked to write a file.
pub fn answer_instructions(role: Role, backend: BackendKind) -> String {
    let message = match role {
        Role::Worker => "worker-report.v1",
        Role::Reviewer => "review-result.v1",
        Role::Advisor => "advisor-response.v1",
        Role::Scaffolder => "plan-draft.v1",
    };
    let mut text = String::from("\n\n## Where you may write, and your answer\n\n");
    if role == Role::Worker {
        text.push_str(
            "Write only inside this worktree and your scratch folder `$TMPDIR`; everything else \
             (the user's checkout, other worktrees, the shared `.git`) is read-only to you. Git \
             works here as usual (`git status`, `git diff main`, `git add`, `git stash`) on a \
             private git directory of this worktree. Leave your changes in the files: breeze \
             commits the files you leave; what you commit or stash yourself stays private and \
             is not used.\n\n",
        );
    } else {
        text.push_str(
            "You change nothing: every file is read-only to you except your scratch folder \
             `$TMPDIR`.\n\n",
        );
    }
    match backend.describe().answers {
        Answers::OutputFile => text.push_str(&format!(
            "Write exactly one `{message}` JSON object to the file named by `$BREEZE_OUTPUT`, or \
             print it as the last JSON object on stdout."
        )),
        Answers::FinalMessage => {
            text.push_str(&format!(
                "End with exactly one `{message}` JSON object as your final answer (it is checked \
             against its JSON schema); do not write it to a file."
            ));
        }
    }
    text.push('\n');
    text
}

fn severity(severity: breeze_protocol::Severity) -> &'static str {
    match severity {
        breeze_protocol::Severity::Critical => "critical",
        breeze_protocol::Severity::Major => "major",
        breeze_protocol::Severity::Minor => "minor",
    }
}

/// The advisor's prompt.
pub fn advisor(definition: &RoleDefinition, request: &AdvisorRequest) -> String {
    let briefing = render(
        ADVISOR_TEMPLATE,
        &[
            ("task_id", request.task_id.clone()),
            ("reason_code", request.reason_code.as_str().to_string()),
            ("trigger_hash", request.trigger_hash.clone()),
            ("attempt", request.attempt.to_string()),
            ("question", request.question.clone()),
            (
                "last_error",
                if request.last_error.is_empty() {
                    "(none)".into()
                } else {
                    request.last_error.clone()
                },
            ),
            ("context_summary", bullets(request.context_summary.iter().cloned())),
        ],
    );
    with_definition(definition, briefing)
}

/// The scaffolder's prompt: propose write sets, or draft tasks from a goal.
pub fn scaffolder(definition: &RoleDefinition, input: &ScaffoldInput) -> String {
    let task_line = |task: &breeze_protocol::DraftTask| {
        let writes = if task.writes.is_empty() {
            String::new()
        } else {
            format!(" — writes {}", task.writes.join(", "))
        };
        format!(
            "`{}` {} (done when: {}){writes}",
            task.id,
            task.title,
            if task.dod.is_empty() { "-" } else { &task.dod }
        )
    };
    let (job, tasks) = match input.mode {
        ScaffoldMode::FillWrites => (
            "Propose write sets".to_string(),
            format!(
                "These tasks have no write set; propose one for each (answer with the same ids, titles and DoDs):\n\n{}\n",
                bullets(input.tasks.iter().map(task_line))
            ),
        ),
        ScaffoldMode::Draft => ("Draft tasks for a goal".to_string(), String::new()),
    };
    let others = if input.other_tasks.is_empty() {
        String::new()
    } else {
        format!(
            "\nThe plan's other tasks (do not reuse their ids; avoid their write sets):\n\n{}\n",
            bullets(input.other_tasks.iter().map(task_line))
        )
    };
    let goal = match &input.goal {
        Some(goal) => format!(
            "Break this goal into tasks, each small enough for one worker, with an id, a title, a definition of done, a write set and the ids it depends on:\n\n{goal}\n{others}"
        ),
        None => others,
    };
    let problems = if input.problems.is_empty() {
        String::new()
    } else {
        format!(
            "\nYour previous answer was refused; fix these:\n\n{}\n",
            bullets(input.problems.iter().cloned())
        )
    };
    let conflicts = if input.conflicts.is_empty() {
        String::new()
    } else {
        format!(
            "\nTwo independent groups mean two workers: do not fold them into one. Your previous proposal makes these tasks conflict; narrow their write sets so they do not, where the work allows:\n\n{}\n",
            bullets(
                input
                    .conflicts
                    .iter()
                    .map(|c| format!("`{}` × `{}`: both may write `{}`", c.a, c.b, c.witness))
            )
        )
    };
    let briefing = render(
        SCAFFOLDER_TEMPLATE,
        &[
            ("job", job),
            ("plan_path", input.plan_path.clone()),
            ("total_files", input.repository.total_files.to_string()),
            (
                "truncated",
                if input.repository.truncated { ", cut short".into() } else { String::new() },
            ),
            ("tasks", tasks),
            ("goal", goal),
            ("problems", problems),
            ("conflicts", conflicts),
        ],
    );
    with_definition(definition, briefing)
}

/// The reviewer's prompt.
pub fn reviewer(definition: &RoleDefinition, input: &ReviewInput) -> String {
    let task = &input.task;
    let briefing = render(
        REVIEWER_TEMPLATE,
        &[
            ("task_id", task.id.clone()),
            ("title", task.title.clone()),
            ("round", input.round.to_string()),
            ("dod", task.dod.clone()),
            ("writes", list_or_none(&task.writes)),
            ("base", input.base.clone()),
            ("head", input.head.clone()),
            ("changed_paths", bullets(input.changed_paths.iter().map(|p| format!("`{p}`")))),
            (
                "gates",
                bullets(input.gates.iter().map(|gate| {
                    format!(
                        "{} {}: {}",
                        gate.id,
                        match gate.status {
                            breeze_protocol::GateStatus::Passed => "passed",
                            breeze_protocol::GateStatus::Inherited => "fails on main too",
                            breeze_protocol::GateStatus::Failed => "FAILED",
                            breeze_protocol::GateStatus::Attention => "LOOK AT THIS",
                        },
                        gate.detail
                    )
                })),
            ),
            ("diff_path", input.diff_path.clone()),
            ("contract_path", input.contract_path.clone().unwrap_or_else(|| "(none)".into())),
            (
                "changelog",
                input
                    .changelog
                    .as_ref()
                    .map_or_else(|| "(none)".into(), |line| format!("`{line}`")),
            ),
        ],
    );
    with_definition(definition, briefing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roles::definition::builtin;
    use breeze_protocol::{
        AdvisorGuidance, Decision, Gap, ReviewFeedback, Role, Severity, TaskBrief, WorkerInputV1,
    };

    fn input() -> WorkerInput {
        WorkerInput {
            schema_version: WorkerInputV1,
            run_id: "r".into(),
            task: TaskBrief {
                id: "2.1".into(),
                title: "Harden login".into(),
                dod: "constant-time compare".into(),
                writes: vec!["src/auth/".into()],
                depends_on: vec![],
                risk: vec!["security-sensitive".into()],
            },
            attempt: 2,
            round: 2,
            base: "abc".into(),
            contract_path: "/c.json".into(),
            scope_decision: None,
            note: None,
            advisor_guidance: Some(AdvisorGuidance {
                decision: Decision::Plan,
                summary: "isolate the comparison".into(),
                instructions: vec!["write the failing test first".into()],
            }),
            review_feedback: Some(ReviewFeedback {
                round: 1,
                gaps: vec![Gap {
                    severity: Severity::Major,
                    location: "src/auth/login.rs:42".into(),
                    issue: "== on secrets".into(),
                    suggestion: "use constant_time_eq".into(),
                }],
            }),
            conflict: None,
            verify_failure: None,
            last_failure: None,
            universal_violations: vec!["never log passwords".into()],
        }
    }

    #[test]
    fn worker_prompt_starts_with_guidance_and_lists_gaps() {
        let prompt = worker(&builtin(Role::Worker), &input());
        let briefing = prompt.split("\n---\n").nth(1).unwrap().trim_start();
        assert!(briefing.starts_with("## Advisor guidance (PLAN)"), "{briefing}");
        assert!(
            prompt.contains("[major] `src/auth/login.rs:42` == on secrets — use constant_time_eq")
        );
        assert!(prompt.contains("`src/auth/`"));
        assert!(prompt.contains("never log passwords"));
        assert!(!prompt.contains("{{"), "unrendered placeholder in {prompt}");
    }

    #[test]
    fn inserted_text_is_copied_verbatim() {
        let mut input = input();
        input.task.dod = "the page shows {{writes}} and {{title}}".into();
        if let Some(guidance) = &mut input.advisor_guidance {
            guidance.summary = "keep {{title}} and {{dod}} in the template".into();
        }
        let prompt = worker(&builtin(Role::Worker), &input);
        assert!(prompt.contains("keep {{title}} and {{dod}} in the template"), "{prompt}");
        assert!(prompt.contains("the page shows {{writes}} and {{title}}"), "{prompt}");
    }

    #[test]
    fn a_gate_asking_for_attention_is_marked_for_the_reviewer() {
        let worker = input();
        let review = ReviewInput {
            schema_version: breeze_protocol::ReviewInputV1,
            run_id: "r".into(),
            task: worker.task,
            round: 1,
            base: "abc".into(),
            head: "def".into(),
            changed_paths: vec!["CLAUDE.md".into()],
            diff_path: "/d.diff".into(),
            gates: vec![breeze_protocol::GateResult {
                id: "agent-config".into(),
                status: breeze_protocol::GateStatus::Attention,
                detail: "agent configuration changed: `CLAUDE.md`".into(),
                paths: vec!["CLAUDE.md".into()],
            }],
            contract_path: None,
            changelog: None,
        };
        let prompt = reviewer(&builtin(Role::Reviewer), &review);
        assert!(
            prompt.contains("agent-config LOOK AT THIS: agent configuration changed: `CLAUDE.md`"),
            "{prompt}"
        );
        // Both the briefing and the role definition say what such a gate asks for.
        assert!(prompt.contains("A gate marked **LOOK AT THIS** (status `attention`)"), "{prompt}");
        assert!(prompt.contains("Gates with status `attention` did not send the task back"));
        assert!(prompt.contains("`\\0`, `\\x1b`"), "{prompt}");
    }

    #[test]
    fn render_leaves_unknown_placeholders_and_stray_braces() {
        let values = [("dod", "{{title}}".to_string()), ("title", "T".to_string())];
        assert_eq!(render("{{title}}: {{dod}}", &values), "T: {{title}}");
        assert_eq!(render("{{other}} {{title}}", &values), "{{other}} T");
        assert_eq!(render("{{{title}}} {{ {{title", &values), "{T} {{ {{title");
        assert_eq!(render("{{unclosed {{title}}", &values), "{{unclosed T");
    }
}
