//! What a forge's commands print about a pull request, read into typed values: its checks
//! (`land.pr_checks_command`, and the target branch's through `pr_main_checks_command`)
//! and its reviews and comments (`land.pr_reviews_command`). Pure: no process, no git.
//!
//! The readers take the shapes the forges' CLIs print and ignore every field they do not
//! know: `gh pr checks --json name,state,bucket,link` (a list), GitHub's check-runs API
//! (`{"check_runs": [...]}` with `status`/`conclusion`/`html_url`), `glab ci get -F json`
//! (`{"jobs": [...]}` with `status`/`web_url`); `gh pr view --json reviews,comments`, and
//! GitLab's notes API (a list of notes, `system` ones left out).

use breeze_protocol::{PrChecks, PrReview};
use serde_json::Value;

/// Why a command's output could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ForgeOutputError {
    /// It printed nothing.
    #[error("it printed nothing")]
    Empty,
    /// It printed something that is not JSON.
    #[error("it printed no JSON ({0})")]
    NotJson(String),
    /// It printed JSON without the list breeze reads.
    #[error("its JSON has no list of {0}")]
    NoList(&'static str),
}

/// How one check stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CheckState {
    /// Queued or running.
    Pending,
    /// Passed, or skipped or neutral: nothing to fix.
    Passed,
    /// Failed, errored or timed out.
    Failed,
    /// Cancelled (not a verdict on the change).
    Cancelled,
}

/// One check of a pull request (or of a commit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Check {
    pub name: String,
    pub state: CheckState,
    /// Where its log is.
    pub link: Option<String>,
    /// The forge's one-line summary of it.
    pub description: Option<String>,
}

/// What a review or a comment says about the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoteKind {
    Approved,
    ChangesRequested,
    /// A comment, or a review that only comments.
    Commented,
    /// A review dismissed, or still pending: says nothing.
    Dismissed,
}

/// One review or comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Note {
    /// What tells it apart from every other (the forge's id, else its author, time and
    /// text): a note handed to the worker once is never handed again.
    pub key: String,
    pub author: String,
    pub body: String,
    pub kind: NoteKind,
}

impl Note {
    /// Whether it asks the worker for something: changes requested, or a comment with text.
    pub fn asks(&self) -> bool {
        match self.kind {
            NoteKind::ChangesRequested => true,
            NoteKind::Commented => !self.body.trim().is_empty(),
            NoteKind::Approved | NoteKind::Dismissed => false,
        }
    }
}

/// The checks in `text`.
pub(crate) fn read_checks(text: &str) -> Result<Vec<Check>, ForgeOutputError> {
    let value = json(text)?;
    let list = match &value {
        Value::Array(list) => list,
        Value::Object(map) => ["check_runs", "jobs", "checks"]
            .iter()
            .find_map(|key| map.get(*key).and_then(Value::as_array))
            .ok_or(ForgeOutputError::NoList("checks"))?,
        _ => return Err(ForgeOutputError::NoList("checks")),
    };
    Ok(list.iter().filter_map(check).collect())
}

/// The reviews and comments in `text`.
pub(crate) fn read_notes(text: &str) -> Result<Vec<Note>, ForgeOutputError> {
    let value = json(text)?;
    let lists: Vec<&Vec<Value>> = match &value {
        Value::Array(list) => vec![list],
        Value::Object(map) => {
            let lists: Vec<&Vec<Value>> = ["reviews", "comments", "notes"]
                .iter()
                .filter_map(|key| map.get(*key).and_then(Value::as_array))
                .collect();
            if lists.is_empty() {
                return Err(ForgeOutputError::NoList("reviews or comments"));
            }
            lists
        }
        _ => return Err(ForgeOutputError::NoList("reviews or comments")),
    };
    Ok(lists.into_iter().flatten().filter_map(note).collect())
}

/// The checks taken together.
pub(crate) fn checks_summary(checks: &[Check]) -> PrChecks {
    let has = |state| checks.iter().any(|check| check.state == state);
    if checks.is_empty() {
        PrChecks::None
    } else if has(CheckState::Failed) {
        PrChecks::Failed
    } else if has(CheckState::Pending) {
        PrChecks::Pending
    } else {
        PrChecks::Passed
    }
}

/// The reviews taken together: each reviewer's latest approval or change request counts.
pub(crate) fn review_summary(notes: &[Note]) -> PrReview {
    let mut latest: Vec<(&str, NoteKind)> = Vec::new();
    for note in notes {
        if matches!(
            note.kind,
            NoteKind::Approved | NoteKind::ChangesRequested | NoteKind::Dismissed
        ) {
            latest.retain(|(author, _)| *author != note.author);
            latest.push((&note.author, note.kind));
        }
    }
    let has = |kind| latest.iter().any(|(_, k)| *k == kind);
    if has(NoteKind::ChangesRequested) {
        PrReview::ChangesRequested
    } else if has(NoteKind::Approved) {
        PrReview::Approved
    } else if notes.is_empty() {
        PrReview::None
    } else {
        PrReview::Commented
    }
}

/// The run id in a check's link (`…/actions/runs/<id>/job/<job>`), for `{run}`.
pub(crate) fn run_id(link: &str) -> Option<String> {
    let (_, after) = link.split_once("/runs/")?;
    let id: String = after.chars().take_while(char::is_ascii_digit).collect();
    (!id.is_empty()).then_some(id)
}

/// The pull request's number: the last path segment of its address made of digits.
pub(crate) fn number(url: &str) -> Option<String> {
    url.trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|last| !last.is_empty() && last.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_string)
}

fn json(text: &str) -> Result<Value, ForgeOutputError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(ForgeOutputError::Empty);
    }
    serde_json::from_str(text).map_err(|err| ForgeOutputError::NotJson(err.to_string()))
}

fn text_of(value: &Value, keys: &[&str]) -> Option<String> {
    keys.iter().filter_map(|key| value.get(*key)).find_map(|v| match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

fn check(value: &Value) -> Option<Check> {
    let name = text_of(value, &["name", "context"])?;
    // gh's `bucket` first (it sorts `state` already), then a finished run's conclusion,
    // then its state or status.
    let word = text_of(value, &["bucket", "conclusion", "state", "status"])?;
    Some(Check {
        name,
        state: check_state(&word)?,
        link: text_of(value, &["link", "html_url", "web_url", "details_url", "target_url", "url"]),
        description: text_of(value, &["description"]),
    })
}

/// A forge's word for a check's state; `None` for a word breeze does not know (that check
/// is left out rather than guessed).
fn check_state(word: &str) -> Option<CheckState> {
    Some(match word.to_ascii_lowercase().as_str() {
        "pass" | "success" | "passed" | "successful" | "skipping" | "skipped" | "neutral"
        | "manual" => CheckState::Passed,
        "fail" | "failure" | "failed" | "error" | "timed_out" | "startup_failure"
        | "action_required" => CheckState::Failed,
        "pending"
        | "queued"
        | "in_progress"
        | "running"
        | "waiting"
        | "requested"
        | "expected"
        | "created"
        | "preparing"
        | "scheduled"
        | "waiting_for_resource" => CheckState::Pending,
        "cancel" | "cancelled" | "canceled" | "stale" => CheckState::Cancelled,
        _ => return None,
    })
}

fn note(value: &Value) -> Option<Note> {
    if value.get("system").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let author = value
        .get("author")
        .or_else(|| value.get("user"))
        .and_then(|who| match who {
            Value::String(name) => Some(name.clone()),
            other => text_of(other, &["login", "username", "name"]),
        })
        .unwrap_or_default();
    let body = text_of(value, &["body"]).unwrap_or_default();
    let kind = match text_of(value, &["state"]).map(|s| s.to_ascii_uppercase()).as_deref() {
        Some("APPROVED") => NoteKind::Approved,
        Some("CHANGES_REQUESTED") => NoteKind::ChangesRequested,
        Some("DISMISSED" | "PENDING") => NoteKind::Dismissed,
        _ => NoteKind::Commented,
    };
    if body.is_empty() && kind == NoteKind::Commented {
        return None;
    }
    let at = text_of(value, &["submittedAt", "createdAt", "created_at", "submitted_at"]);
    let key = match text_of(value, &["id"]) {
        Some(id) => id,
        None => format!("{author}@{}:{}", at.unwrap_or_default(), body),
    };
    Some(Note { key, author, body, kind })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gh_pr_checks_json_is_read_by_its_bucket_and_unknown_fields_are_ignored() {
        let text = r#"[
          {"name":"build","state":"SUCCESS","bucket":"pass","link":"https://x/actions/runs/11/job/1","workflow":"ci"},
          {"name":"test","state":"FAILURE","bucket":"fail","link":"https://x/actions/runs/12/job/2","description":"3 failed"},
          {"name":"lint","state":"IN_PROGRESS","bucket":"pending","link":""},
          {"name":"odd","state":"SOMETHING_NEW"}
        ]"#;
        let checks = read_checks(text).unwrap();
        let states: Vec<(&str, CheckState)> =
            checks.iter().map(|c| (c.name.as_str(), c.state)).collect();
        assert_eq!(
            states,
            [
                ("build", CheckState::Passed),
                ("test", CheckState::Failed),
                ("lint", CheckState::Pending)
            ]
        );
        assert_eq!(checks[1].description.as_deref(), Some("3 failed"));
        assert_eq!(checks[2].link, None);
        assert_eq!(run_id(checks[1].link.as_deref().unwrap()).as_deref(), Some("12"));
        assert_eq!(checks_summary(&checks), PrChecks::Failed);
        assert_eq!(checks_summary(&checks[..1]), PrChecks::Passed);
        assert_eq!(checks_summary(&[]), PrChecks::None);
    }

    #[test]
    fn github_check_runs_and_gitlab_jobs_are_read_too() {
        let runs = r#"{"total_count":2,"check_runs":[
          {"name":"test","status":"completed","conclusion":"failure","html_url":"https://x/runs/5"},
          {"name":"build","status":"in_progress","conclusion":null}]}"#;
        let checks = read_checks(runs).unwrap();
        assert_eq!(checks[0].state, CheckState::Failed);
        assert_eq!(checks[1].state, CheckState::Pending);
        let jobs = r#"{"id":9,"status":"failed","jobs":[{"name":"rspec","status":"failed","web_url":"https://gl/-/jobs/3"}]}"#;
        let checks = read_checks(jobs).unwrap();
        assert_eq!((checks[0].name.as_str(), checks[0].state), ("rspec", CheckState::Failed));
        assert_eq!(checks[0].link.as_deref(), Some("https://gl/-/jobs/3"));
    }

    #[test]
    fn garbage_is_an_error_that_says_what_was_printed() {
        assert_eq!(read_checks("  "), Err(ForgeOutputError::Empty));
        assert!(matches!(read_checks("no checks reported"), Err(ForgeOutputError::NotJson(_))));
        assert_eq!(read_checks(r#"{"a":1}"#), Err(ForgeOutputError::NoList("checks")));
        assert_eq!(read_notes("42"), Err(ForgeOutputError::NoList("reviews or comments")));
    }

    #[test]
    fn gh_reviews_and_comments_are_read_and_each_reviewers_latest_verdict_counts() {
        let text = r#"{"reviews":[
          {"id":"R1","author":{"login":"ana"},"state":"CHANGES_REQUESTED","body":"rename x","submittedAt":"t1"},
          {"id":"R2","author":{"login":"bo"},"state":"APPROVED","body":""},
          {"id":"R3","author":{"login":"ana"},"state":"COMMENTED","body":""}
        ],"comments":[{"id":"C1","author":{"login":"cy"},"body":"why 3?","createdAt":"t2","url":"u"}]}"#;
        let notes = read_notes(text).unwrap();
        let keys: Vec<&str> = notes.iter().map(|n| n.key.as_str()).collect();
        assert_eq!(keys, ["R1", "R2", "C1"], "an empty comment-only review says nothing");
        let asking: Vec<&str> = notes.iter().filter(|n| n.asks()).map(|n| n.key.as_str()).collect();
        assert_eq!(asking, ["R1", "C1"]);
        assert_eq!(review_summary(&notes), PrReview::ChangesRequested);
        let approved_after = r#"{"reviews":[
          {"author":{"login":"ana"},"state":"CHANGES_REQUESTED","body":"x"},
          {"author":{"login":"ana"},"state":"APPROVED","body":""}],"comments":[]}"#;
        assert_eq!(review_summary(&read_notes(approved_after).unwrap()), PrReview::Approved);
        assert_eq!(
            review_summary(&read_notes(r#"{"reviews":[],"comments":[]}"#).unwrap()),
            PrReview::None
        );
    }

    #[test]
    fn gitlab_notes_are_comments_without_the_system_notes() {
        let text = r#"[{"id":7,"body":"added 1 commit","system":true,"author":{"username":"bot"}},
                       {"id":8,"body":"please add a test","system":false,"author":{"username":"dee"}}]"#;
        let notes = read_notes(text).unwrap();
        assert_eq!(notes.len(), 1);
        assert_eq!((notes[0].key.as_str(), notes[0].author.as_str()), ("8", "dee"));
        assert_eq!(review_summary(&notes), PrReview::Commented);
        assert_eq!(number("https://gitlab.com/o/r/-/merge_requests/3").as_deref(), Some("3"));
        assert_eq!(number("https://github.com/o/r/pull/41/").as_deref(), Some("41"));
        assert_eq!(number(""), None);
        assert_eq!(number("https://forge.test/o/r/tree/main"), None);
    }
}
