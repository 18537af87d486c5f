//! Protocol tests: seed examples validate, committed schemas match the types, and every
//! validation rule rejects an invalid variant with a message naming the field.

use std::path::{Path, PathBuf};

use breeze_protocol::validate::{parse, validate};
use breeze_protocol::{
    AdvisorRequest, AdvisorResponse, BreezeStatus, Decision, MessageKind, Problem, ReasonCode,
    ReviewResult, Severity, SprintContract, Verdict, WorkerReport, WorkerStatus,
};
use serde_json::{Value, json};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
}

fn problems_of(kind: MessageKind, value: &Value) -> Vec<String> {
    validate(kind, value).iter().map(Problem::to_string).collect()
}

/// Asserts exactly one problem, at `path`, whose message contains `needle`.
#[track_caller]
fn assert_single_problem(kind: MessageKind, value: &Value, path: &str, needle: &str) {
    let problems = validate(kind, value);
    assert_eq!(problems.len(), 1, "expected one problem, got {problems:#?}");
    assert_eq!(problems[0].path, path, "{problems:#?}");
    assert!(problems[0].message.contains(needle), "{:?} lacks {needle:?}", problems[0].message);
}

#[test]
fn seed_examples_validate_and_parse() {
    let files = json_files(&fixtures().join("original"));
    assert_eq!(files.len(), 4, "seed fixtures went missing: {files:?}");
    for path in files {
        let value = read_json(&path);
        let kind = MessageKind::detect(&value).unwrap();
        assert_eq!(problems_of(kind, &value), Vec::<String>::new(), "{}", path.display());
    }
    let request: AdvisorRequest =
        parse(read_json(&fixtures().join("original/advisor-request.definition.json"))).unwrap();
    assert_eq!(request.reason_code, ReasonCode::RetryThreshold);
    assert_eq!(request.run_id.as_deref(), Some("codex-loop-example"));
    let prior = request.prior_advisor_response.expect("prior response kept");
    assert_eq!(prior.response.decision, Decision::Plan);
    assert_eq!(prior.response.confidence, 0.9);

    let response: AdvisorResponse =
        parse(read_json(&fixtures().join("original/advisor-response.example.json"))).unwrap();
    assert_eq!(response.executor_instructions.len(), 2);
    assert_eq!(response.stop_reason, None);
}

#[test]
fn hand_written_examples_of_every_kind_validate() {
    let files = json_files(&fixtures().join("valid"));
    let mut kinds: Vec<MessageKind> = Vec::new();
    for path in &files {
        let value = read_json(path);
        let kind = MessageKind::detect(&value).unwrap();
        assert_eq!(problems_of(kind, &value), Vec::<String>::new(), "{}", path.display());
        kinds.push(kind);
    }
    for kind in [
        MessageKind::ReviewResult,
        MessageKind::ReviewInput,
        MessageKind::WorkerReport,
        MessageKind::WorkerInput,
        MessageKind::SprintContract,
        MessageKind::BreezeStatus,
    ] {
        assert!(kinds.contains(&kind), "no valid fixture for {kind}");
    }

    let review: ReviewResult =
        parse(read_json(&fixtures().join("valid/review-result.json"))).unwrap();
    assert_eq!(review.verdict, Verdict::RequestChanges);
    assert_eq!(review.blocking_gaps().count(), 1);
    assert_eq!(review.gaps[0].file(), Some("src/auth/login.rs"));
    assert_eq!(review.memory_updates[1].text(), "legacy lesson");

    let report: WorkerReport =
        parse(read_json(&fixtures().join("valid/worker-report.needs-advice.json"))).unwrap();
    assert_eq!(report.status, WorkerStatus::NeedsAdvice);
    assert_eq!(report.advisor_request.unwrap().reason_code, ReasonCode::StateMigration);

    let contract: SprintContract =
        parse(read_json(&fixtures().join("valid/sprint-contract.json"))).unwrap();
    assert_eq!(contract.review.max_iterations, 3);

    let status: BreezeStatus =
        parse(read_json(&fixtures().join("valid/breeze-status.json"))).unwrap();
    assert_eq!(status.tasks.len(), 2);
}

#[test]
fn committed_schemas_match_the_types() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas");
    let bless = std::env::var_os("BREEZE_BLESS").is_some();
    let mut stale = Vec::new();
    for kind in MessageKind::ALL {
        let path = dir.join(kind.schema_file_name());
        let expected = kind.schema_text();
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &expected).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(actual) if actual == expected => {}
            _ => stale.push(path.display().to_string()),
        }
    }
    assert!(
        stale.is_empty(),
        "schemas/ is out of date with the Rust types: {stale:?}\n\
         run `BREEZE_BLESS=1 cargo test -p breeze-protocol --test protocol` and commit schemas/"
    );
    let committed = json_files(&dir).len();
    assert_eq!(
        committed,
        MessageKind::ALL.len(),
        "schemas/ holds a file for a kind that no longer exists"
    );
}

fn good_response() -> Value {
    json!({
        "schema_version": "advisor-response.v1",
        "decision": "CORRECTION",
        "summary": "the fixture path is wrong",
        "executor_instructions": ["point the test at tests/fixtures"],
        "confidence": 0.5,
        "stop_reason": null
    })
}

fn with(mut value: Value, key: &str, field: Value) -> Value {
    value[key] = field;
    value
}

fn without(mut value: Value, key: &str) -> Value {
    value.as_object_mut().unwrap().remove(key);
    value
}

#[test]
fn advisor_response_decision_must_be_plan_correction_or_stop() {
    let kind = MessageKind::AdvisorResponse;
    assert!(validate(kind, &good_response()).is_empty());
    assert_single_problem(
        kind,
        &with(good_response(), "decision", json!("MAYBE")),
        "decision",
        "PLAN, CORRECTION, STOP",
    );
    assert_single_problem(
        kind,
        &with(good_response(), "decision", json!("APPROVE")),
        "decision",
        "found \"APPROVE\"",
    );
}

#[test]
fn advisor_response_needs_one_to_four_non_empty_instructions() {
    let kind = MessageKind::AdvisorResponse;
    assert_single_problem(
        kind,
        &with(good_response(), "executor_instructions", json!([])),
        "executor_instructions",
        "1 to 4 items, found 0",
    );
    let five = json!(["a", "b", "c", "d", "e"]);
    assert_single_problem(
        kind,
        &with(good_response(), "executor_instructions", five),
        "executor_instructions",
        "1 to 4 items, found 5",
    );
    let four = json!(["a", "b", "c", "d"]);
    assert!(validate(kind, &with(good_response(), "executor_instructions", four)).is_empty());
    assert_single_problem(
        kind,
        &with(good_response(), "executor_instructions", json!(["ok", ""])),
        "executor_instructions[1]",
        "must not be empty",
    );
    assert_single_problem(
        kind,
        &with(good_response(), "executor_instructions", json!(["  "])),
        "executor_instructions[0]",
        "blank",
    );
    assert_single_problem(
        kind,
        &with(good_response(), "executor_instructions", json!("do it")),
        "executor_instructions",
        "must be an array",
    );
}

#[test]
fn advisor_response_confidence_is_between_zero_and_one() {
    let kind = MessageKind::AdvisorResponse;
    assert_single_problem(
        kind,
        &with(good_response(), "confidence", json!(1.5)),
        "confidence",
        "at most 1",
    );
    assert_single_problem(
        kind,
        &with(good_response(), "confidence", json!(-0.01)),
        "confidence",
        "at least 0",
    );
    assert_single_problem(
        kind,
        &with(good_response(), "confidence", json!("high")),
        "confidence",
        "must be a number",
    );
    for edge in [0, 1] {
        assert!(validate(kind, &with(good_response(), "confidence", json!(edge))).is_empty());
    }
}

#[test]
fn advisor_response_stop_reason_is_set_exactly_when_stop() {
    let kind = MessageKind::AdvisorResponse;
    let stop = with(good_response(), "decision", json!("STOP"));
    assert_single_problem(kind, &stop, "stop_reason", "non-empty string when decision is STOP");
    assert_single_problem(
        kind,
        &with(stop.clone(), "stop_reason", json!("")),
        "stop_reason",
        "decision is STOP",
    );
    assert!(
        validate(kind, &with(stop, "stop_reason", json!("needs a product decision"))).is_empty()
    );
    let plan = with(good_response(), "decision", json!("PLAN"));
    assert_single_problem(
        kind,
        &with(plan, "stop_reason", json!("why")),
        "stop_reason",
        "must be null when decision is PLAN",
    );
    assert_single_problem(
        kind,
        &without(good_response(), "stop_reason"),
        "(root)",
        "missing required field `stop_reason`",
    );
}

#[test]
fn advisor_response_rejects_unknown_fields_and_lists_every_problem() {
    let kind = MessageKind::AdvisorResponse;
    assert_single_problem(
        kind,
        &with(good_response(), "verdict", json!("APPROVE")),
        "(root)",
        "unknown field `verdict`",
    );
    let bad = json!({
        "schema_version": "advisor-response.v2",
        "decision": "STOP",
        "summary": "",
        "executor_instructions": [],
        "confidence": 2,
        "stop_reason": null,
        "extra": 1
    });
    let problems = problems_of(kind, &bad);
    for expected in [
        "schema_version: must be \"advisor-response.v1\"",
        "summary: must not be empty",
        "executor_instructions: must have 1 to 4 items",
        "confidence: must be at most 1",
        "(root): unknown field `extra`",
        "stop_reason: must be a non-empty string when decision is STOP",
    ] {
        assert!(
            problems.iter().any(|p| p.starts_with(expected)),
            "missing {expected:?} in {problems:#?}"
        );
    }
    assert_eq!(problems.len(), 6, "{problems:#?}");
}

fn good_review() -> Value {
    read_json(&fixtures().join("valid/review-result.json"))
}

#[test]
fn review_result_verdict_and_gap_severities_are_checked() {
    let kind = MessageKind::ReviewResult;
    assert_single_problem(
        kind,
        &with(good_review(), "verdict", json!("LGTM")),
        "verdict",
        "APPROVE, REQUEST_CHANGES",
    );
    let mut high = good_review();
    high["gaps"][1]["severity"] = json!("high");
    assert_single_problem(kind, &high, "gaps[1].severity", "critical, major, minor");
    assert_single_problem(
        kind,
        &without(good_review(), "verdict"),
        "(root)",
        "missing required field `verdict`",
    );
}

#[test]
fn review_result_implied_verdict_follows_blocking_gaps() {
    let mut review: ReviewResult = parse(good_review()).unwrap();
    assert_eq!(review.implied_verdict(), Verdict::RequestChanges);
    review.gaps.retain(|gap| gap.severity == Severity::Minor);
    assert_eq!(review.implied_verdict(), Verdict::Approve);
}

#[test]
fn advisor_request_trigger_hash_starts_with_task_and_reason() {
    let kind = MessageKind::AdvisorRequest;
    let good = read_json(&fixtures().join("original/advisor-request.card.json"));
    assert_single_problem(
        kind,
        &with(good.clone(), "trigger_hash", json!("43.3.2:retry-threshold:abc")),
        "trigger_hash",
        "must begin with \"43.3.1:retry-threshold:\"",
    );
    assert_single_problem(
        kind,
        &with(good.clone(), "trigger_hash", json!("43.3.1:needs-spike:abc")),
        "trigger_hash",
        "<task_id>:<reason_code>:",
    );
    assert_single_problem(
        kind,
        &with(good.clone(), "trigger_hash", json!("43.3.1:retry-threshold")),
        "trigger_hash",
        "must begin with",
    );
    assert_single_problem(
        kind,
        &with(good.clone(), "reason_code", json!("because")),
        "reason_code",
        "retry-threshold",
    );
    // The loop implementation's codes are read too.
    let loop_code = with(
        with(good, "reason_code", json!("high-risk-preflight")),
        "trigger_hash",
        json!("43.3.1:high-risk-preflight:needs-spike"),
    );
    assert!(validate(kind, &loop_code).is_empty());
}

#[test]
fn embedded_messages_are_checked_with_their_own_rules() {
    let mut request = read_json(&fixtures().join("original/advisor-request.definition.json"));
    request["prior_advisor_response"]["response"]["decision"] = json!("STOP");
    assert_single_problem(
        MessageKind::AdvisorRequest,
        &request,
        "prior_advisor_response.response.stop_reason",
        "decision is STOP",
    );

    let report = read_json(&fixtures().join("valid/worker-report.needs-advice.json"));
    assert_single_problem(
        MessageKind::WorkerReport,
        &without(report.clone(), "advisor_request"),
        "advisor_request",
        "required when status is needs-advice",
    );
    let mut bad_hash = report;
    bad_hash["advisor_request"]["trigger_hash"] = json!("x");
    assert_single_problem(
        MessageKind::WorkerReport,
        &bad_hash,
        "advisor_request.trigger_hash",
        "must begin with \"3:state-migration:\"",
    );
}

#[test]
fn detection_names_the_known_versions() {
    assert_eq!(
        MessageKind::detect(&json!({"schema_version": "review-result.v1"})).unwrap(),
        MessageKind::ReviewResult
    );
    let missing = MessageKind::detect(&json!({"verdict": "APPROVE"})).unwrap_err().to_string();
    assert!(
        missing.contains("missing field `schema_version`")
            && missing.contains("advisor-response.v1"),
        "{missing}"
    );
    let unknown = MessageKind::detect(&json!({"schema_version": "review-result.v9"}))
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("\"review-result.v9\""), "{unknown}");
    assert!(
        MessageKind::detect(&json!([1, 2])).unwrap_err().to_string().contains("not a JSON object")
    );
    assert_eq!(MessageKind::from_name("advisor-request"), Some(MessageKind::AdvisorRequest));
    assert_eq!(MessageKind::from_name("advisor-request.v1"), Some(MessageKind::AdvisorRequest));
    assert_eq!(MessageKind::from_name("advisor"), None);
}

#[test]
fn typed_messages_round_trip_through_json() {
    for path in json_files(&fixtures().join("valid"))
        .into_iter()
        .chain(json_files(&fixtures().join("original")))
    {
        let value = read_json(&path);
        let kind = MessageKind::detect(&value).unwrap();
        let reserialized = match kind {
            MessageKind::AdvisorRequest => {
                serde_json::to_value(parse::<AdvisorRequest>(value).unwrap())
            }
            MessageKind::AdvisorResponse => {
                serde_json::to_value(parse::<AdvisorResponse>(value).unwrap())
            }
            MessageKind::ReviewResult => {
                serde_json::to_value(parse::<ReviewResult>(value).unwrap())
            }
            MessageKind::WorkerReport => {
                serde_json::to_value(parse::<WorkerReport>(value).unwrap())
            }
            MessageKind::SprintContract => {
                serde_json::to_value(parse::<SprintContract>(value).unwrap())
            }
            MessageKind::BreezeStatus => {
                serde_json::to_value(parse::<BreezeStatus>(value).unwrap())
            }
            _ => continue,
        }
        .unwrap();
        assert!(
            validate(kind, &reserialized).is_empty(),
            "{} does not re-validate",
            path.display()
        );
    }
}
