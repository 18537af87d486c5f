//! `breeze validate` and `breeze schema` through the real binary.

use crate::support::{breeze, project_root, run_in, stderr, stdout};

fn protocol_fixture(name: &str) -> String {
    project_root().join("crates/breeze-protocol/tests/fixtures").join(name).display().to_string()
}

#[test]
fn valid_seed_examples_exit_zero() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        protocol_fixture("original/advisor-request.definition.json"),
        protocol_fixture("original/advisor-response.example.json"),
        protocol_fixture("valid/review-result.json"),
    ];
    let mut args = vec!["validate"];
    args.extend(files.iter().map(String::as_str));
    let output = run_in(dir.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}{}", stdout(&output), stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("valid advisor-request.v1"), "{text}");
    assert!(text.contains("valid advisor-response.v1"), "{text}");
    assert!(text.contains("valid review-result.v1"), "{text}");
}

#[test]
fn invalid_message_exits_one_listing_every_problem() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("advice.json");
    std::fs::write(
        &file,
        r#"{"schema_version":"advisor-response.v1","decision":"STOP","summary":"x",
            "executor_instructions":["a","b","c","d","e"],"confidence":7,"stop_reason":null}"#,
    )
    .unwrap();
    let output = run_in(dir.path(), &["validate", "advice.json"]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(text.contains("invalid advisor-response.v1 (3 problems)"), "{text}");
    assert!(text.contains("executor_instructions: must have 1 to 4 items, found 5"), "{text}");
    assert!(text.contains("confidence: must be at most 1, found 7"), "{text}");
    assert!(
        text.contains("stop_reason: must be a non-empty string when decision is STOP"),
        "{text}"
    );
}

#[test]
fn not_json_exits_two_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("garbage.json"), "Sure! Here is the review: {oops").unwrap();
    let output = run_in(dir.path(), &["validate", "garbage.json"]);
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(err.contains("garbage.json is not JSON"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let missing = run_in(dir.path(), &["validate", "nope.json"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("cannot read nope.json"));
}

#[test]
fn json_without_schema_version_is_invalid_not_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plain.json"), r#"{"verdict":"APPROVE"}"#).unwrap();
    let output = run_in(dir.path(), &["validate", "plain.json"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("missing field `schema_version`"));
    let forced = run_in(dir.path(), &["validate", "--as", "review-result", "plain.json"]);
    assert_eq!(forced.status.code(), Some(1));
    assert!(stdout(&forced).contains("missing required field `schema_version`"));
}

#[test]
fn schema_prints_the_committed_schema() {
    let output = breeze().args(["schema", "advisor-response"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let committed =
        std::fs::read_to_string(project_root().join("schemas/advisor-response.v1.schema.json"))
            .unwrap();
    assert_eq!(stdout(&output), committed);

    let unknown = breeze().args(["schema", "nonsense"]).output().unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("known types: advisor-request.v1"));
}
