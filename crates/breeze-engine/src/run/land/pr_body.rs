//! The description of a task's pull request, in Markdown: what the task had to do (its
//! contract), how the review went round by round, what the Advisor said, how the landing
//! was checked, and the landing's trailers last — so that a forge's squash merge that
//! takes the description as the commit message keeps them as trailers.

use std::path::Path;

use breeze_protocol::{AdvisorResponse, EventKind, ReviewResult, Verdict};

use crate::journal::for_each_event;

/// One review round as the description tells it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Round {
    pub round: u32,
    pub verdict: Verdict,
    /// `[severity] location: issue` of each gap.
    pub gaps: Vec<String>,
}

/// One Advisor answer as the description tells it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Advice {
    pub decision: String,
    pub summary: String,
    pub instructions: Vec<String>,
}

/// Everything the description says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Description {
    pub title: String,
    pub dod: String,
    pub writes: Vec<String>,
    pub rounds: Vec<Round>,
    pub advice: Vec<Advice>,
    /// `land.verify`, when it ran on the pushed commit.
    pub verify: Option<Vec<String>>,
    /// The task this pull request is stacked on, with its branch.
    pub stacked_on: Option<(String, String)>,
    /// The follow-up rounds: what the forge's checks and reviewers sent back, one line
    /// each (`Round 1: check `test` failed …`).
    pub follow_ups: Vec<String>,
    /// The landing commit's message: its trailers end the description.
    pub message: String,
}

/// The rounds and Advisor answers of task `task`, from the run's journal and the files it
/// names (a file that cannot be read is left out).
pub(crate) fn history(journal: &Path, task: &str) -> (Vec<Round>, Vec<Advice>) {
    let (mut rounds, mut advice) = (Vec::new(), Vec::new());
    let _ = for_each_event(journal, |event| match event.event {
        EventKind::Reviewed { task: id, round, verdict, result_path, .. } if id == task => {
            let gaps = std::fs::read(&result_path)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<ReviewResult>(&bytes).ok())
                .map(|result| {
                    result
                        .gaps
                        .iter()
                        .map(|gap| {
                            let at = if gap.location.is_empty() {
                                String::new()
                            } else {
                                format!(" {}:", gap.location)
                            };
                            let severity = match gap.severity {
                                breeze_protocol::Severity::Critical => "critical",
                                breeze_protocol::Severity::Major => "major",
                                breeze_protocol::Severity::Minor => "minor",
                            };
                            format!("[{severity}]{at} {}", one_line(&gap.issue))
                        })
                        .collect()
                })
                .unwrap_or_default();
            rounds.push(Round { round, verdict, gaps });
        }
        EventKind::AdvisorConsulted { task: id, response_path, .. } if id == task => {
            if let Some(response) = std::fs::read(&response_path)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<AdvisorResponse>(&bytes).ok())
            {
                advice.push(Advice {
                    decision: response.decision.as_str().to_string(),
                    summary: one_line(&response.summary),
                    instructions: response
                        .executor_instructions
                        .iter()
                        .map(|i| one_line(i))
                        .collect(),
                });
            }
        }
        _ => {}
    });
    (rounds, advice)
}

/// Line breaks flattened: list items stay one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Description {
    /// The Markdown text.
    pub fn render(&self) -> String {
        let mut out = format!("{}\n\n", one_line(&self.title));
        if let Some((task, branch)) = &self.stacked_on {
            out.push_str(&format!(
                "Stacked on task {task} (`{branch}`): merge that one first; this one's change is the last commit.\n\n"
            ));
        }
        out.push_str("## Definition of done\n\n");
        out.push_str(self.dod.trim());
        out.push_str("\n\n");
        if !self.writes.is_empty() {
            out.push_str("## Write set\n\n");
            for path in &self.writes {
                out.push_str(&format!("- `{path}`\n"));
            }
            out.push('\n');
        }
        out.push_str("## Review\n\n");
        if self.rounds.is_empty() {
            out.push_str("(no review rounds recorded)\n");
        }
        for round in &self.rounds {
            let verdict = match round.verdict {
                Verdict::Approve => "APPROVE",
                Verdict::RequestChanges => "REQUEST_CHANGES",
            };
            out.push_str(&format!("- Round {}: **{verdict}**\n", round.round));
            for gap in &round.gaps {
                out.push_str(&format!("  - {gap}\n"));
            }
        }
        out.push('\n');
        if !self.advice.is_empty() {
            out.push_str("## Advisor\n\n");
            for advice in &self.advice {
                out.push_str(&format!("- **{}**: {}\n", advice.decision, advice.summary));
                for instruction in &advice.instructions {
                    out.push_str(&format!("  - {instruction}\n"));
                }
            }
            out.push('\n');
        }
        if !self.follow_ups.is_empty() {
            out.push_str("## Follow-up rounds\n\n");
            for round in &self.follow_ups {
                out.push_str(&format!("- {}\n", one_line(round)));
            }
            out.push_str("\nEach was fixed by the worker, reviewed again and pushed here.\n\n");
        }
        out.push_str("## Checks\n\n");
        match &self.verify {
            Some(argv) => out.push_str(&format!(
                "`{}` passed on this commit (the change merged onto the target branch) before it was pushed.\n\n",
                argv.join(" ")
            )),
            None => out.push_str("No `land.verify` command is configured.\n\n"),
        }
        out.push_str("Opened by breeze.\n\n");
        out.push_str(&trailers(&self.message));
        out
    }
}

/// The trailer block of a landing message (its last paragraph).
fn trailers(message: &str) -> String {
    let block = message.trim_end().rsplit("\n\n").next().unwrap_or("");
    format!("{block}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_ends_with_the_trailers_and_tells_every_round() {
        let message = breeze_git::landing_message("Add login", None, "3", "run-9", 2);
        let description = Description {
            title: "feat: Add login".into(),
            dod: "Users can log in.".into(),
            writes: vec!["src/login.rs".into()],
            rounds: vec![
                Round {
                    round: 1,
                    verdict: Verdict::RequestChanges,
                    gaps: vec!["[major] src/login.rs:3: no test".into()],
                },
                Round { round: 2, verdict: Verdict::Approve, gaps: vec![] },
            ],
            advice: vec![Advice {
                decision: "PLAN".into(),
                summary: "hash first".into(),
                instructions: vec!["use argon2".into()],
            }],
            verify: Some(vec!["cargo".into(), "test".into()]),
            stacked_on: None,
            follow_ups: vec!["Round 1: check `test` failed (its log: https://ci/1)".into()],
            message,
        };
        let text = description.render();
        assert!(text.starts_with("feat: Add login\n"), "{text}");
        assert!(
            text.contains("- Round 1: **REQUEST_CHANGES**\n  - [major] src/login.rs:3: no test"),
            "{text}"
        );
        assert!(text.contains("- Round 2: **APPROVE**"), "{text}");
        assert!(text.contains("- **PLAN**: hash first\n  - use argon2"), "{text}");
        assert!(text.contains("`cargo test` passed"), "{text}");
        assert!(
            text.contains(
                "## Follow-up rounds\n\n- Round 1: check `test` failed (its log: https://ci/1)\n"
            ),
            "{text}"
        );
        assert!(
            text.ends_with("Breeze-Task: 3\nBreeze-Run: run-9\nBreeze-Review: APPROVE (round 2)\n"),
            "{text}"
        );
        let trailers = git2_trailers(&text);
        assert!(trailers.contains(&("Breeze-Task".to_string(), "3".to_string())), "{trailers:?}");
    }

    fn git2_trailers(text: &str) -> Vec<(String, String)> {
        // What a squash merge with this description as its message carries.
        let mut found = Vec::new();
        for line in text.trim_end().rsplit("\n\n").next().unwrap_or("").lines() {
            if let Some((key, value)) = line.split_once(": ") {
                found.push((key.to_string(), value.to_string()));
            }
        }
        found
    }
}
