//! The Advisor rules made mechanical: failure signatures, trigger hashes and plateau
//! detection (docs/ARCHITECTURE.md, step 5).

use std::collections::BTreeSet;

use breeze_protocol::ReasonCode;

/// Longest signature kept in a trigger hash, in characters.
const SIGNATURE_CHARS: usize = 80;

/// Normalizes failure text into a signature: lower-case, every run of characters that
/// are not letters or digits (in any script) collapsed to `-`, trimmed, at most 80
/// characters, `none` if nothing is left.
///
/// Unlike the original harness's ASCII-only rule, Japanese or Korean error text keeps its letters,
/// so two different non-English failures do not collide on `none`.
pub fn normalize_signature(text: &str) -> String {
    normalize(text, SIGNATURE_CHARS)
}

/// [`normalize_signature`] with at most `limit` characters.
fn normalize(text: &str, limit: usize) -> String {
    let mut out = String::new();
    let mut pending_dash = false;
    for ch in text.chars().flat_map(char::to_lowercase) {
        if ch.is_alphanumeric() {
            if pending_dash && !out.is_empty() {
                out.push('-');
            }
            pending_dash = false;
            out.push(ch);
        } else {
            pending_dash = true;
        }
    }
    let truncated: String = out.chars().take(limit).collect();
    let trimmed = truncated.trim_end_matches('-');
    if trimmed.is_empty() { "none".to_string() } else { trimmed.to_string() }
}

/// Longest line kept in an output signature, in characters.
const OUTPUT_LINE_CHARS: usize = 240;

/// What a failing check's output is compared by, to tell whether two runs fail the same
/// way (a landing and main's own tip, `land.on_main_failure`): the lines that name a
/// failure or an error, each normalized like [`normalize_signature`] (up to 240
/// characters) with durations read as one word, sorted, without repeats. Lines that count
/// passed tests are left out — a task that adds a passing test does not change a failure;
/// when no line names a failure, the last three lines are the signature.
pub fn output_signature(output: &str) -> Vec<String> {
    let lines: Vec<&str> = output.lines().map(str::trim).filter(|line| !line.is_empty()).collect();
    let naming: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|line| {
            let lower = line.to_lowercase();
            (lower.contains("fail") || lower.contains("error")) && !lower.contains("passed")
        })
        .collect();
    let chosen =
        if naming.is_empty() { lines[lines.len().saturating_sub(3)..].to_vec() } else { naming };
    let mut signature: Vec<String> = chosen
        .into_iter()
        .map(|line| normalize(&without_durations(line), OUTPUT_LINE_CHARS))
        .collect();
    signature.sort();
    signature.dedup();
    signature
}

/// Units a duration in test output is written with.
const DURATION_UNITS: [&str; 6] = ["seconds", "second", "secs", "sec", "ms", "s"];

/// `line` with every duration (`2.31s`, `15ms`, `0.5 sec`) written as `<time>`: the same
/// failure takes a different time on every run.
fn without_durations(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    let mut after_word = false;
    while let Some(ch) = rest.chars().next() {
        if ch.is_ascii_digit() && !after_word {
            let number = rest
                .char_indices()
                .find(|(_, c)| !(c.is_ascii_digit() || *c == '.'))
                .map_or(rest.len(), |(i, _)| i);
            let unit_start = rest[number..].trim_start_matches(' ');
            let unit = DURATION_UNITS.iter().find(|unit| {
                unit_start.starts_with(*unit)
                    && !unit_start[unit.len()..].starts_with(|c: char| c.is_alphanumeric())
            });
            if let Some(unit) = unit {
                out.push_str("<time>");
                rest = &unit_start[unit.len()..];
                after_word = false;
                continue;
            }
        }
        out.push(ch);
        after_word = ch.is_alphanumeric();
        rest = &rest[ch.len_utf8()..];
    }
    out
}

/// `<task_id>:<reason_code>:<signature>`.
pub fn trigger_hash(task_id: &str, reason: ReasonCode, failure_text: &str) -> String {
    format!("{task_id}:{}:{}", reason.as_str(), normalize_signature(failure_text))
}

/// The line of a failure text that identifies it: the first non-empty line.
pub fn signature_line(text: &str) -> &str {
    text.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or("")
}

/// Jaccard similarity of two file sets; both empty counts as identical.
pub fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let shared = a.intersection(b).count() as f64;
    let union = a.union(b).count() as f64;
    shared / union
}

/// Whether review rounds plateaued: the last three rounds' gap file sets have a mean
/// pairwise Jaccard similarity above 0.7 (the original harness's rule). Fewer than three rounds
/// never plateau.
pub fn is_plateau(rounds: &[BTreeSet<String>]) -> bool {
    plateau_score(rounds).is_some_and(|score| score > 0.7)
}

/// Mean pairwise Jaccard of the last three rounds, if there are three.
pub fn plateau_score(rounds: &[BTreeSet<String>]) -> Option<f64> {
    let [a, b, c] = rounds.get(rounds.len().checked_sub(3)?..)? else { return None };
    Some((jaccard(a, b) + jaccard(a, c) + jaccard(b, c)) / 3.0)
}

/// Bounds text to `limit` bytes keeping the head and the tail, as the original harness does for
/// `last_error`.
pub fn bound_text(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let marker = "\n…[truncated]…\n";
    let keep = limit.saturating_sub(marker.len()) / 2;
    let head_end = floor_char_boundary(text, keep);
    let tail_start = ceil_char_boundary(text, text.len() - keep);
    format!("{}{marker}{}", &text[..head_end], &text[tail_start..])
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while index > 0 && !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn ceil_char_boundary(text: &str, mut index: usize) -> usize {
    while index < text.len() && !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn signatures_are_lowercase_dashed_and_bounded() {
        assert_eq!(
            normalize_signature("Error: test `auth::login` FAILED!"),
            "error-test-auth-login-failed"
        );
        assert_eq!(normalize_signature("  ---  "), "none");
        assert_eq!(normalize_signature(""), "none");
        let long = "x".repeat(200);
        assert_eq!(normalize_signature(&long).chars().count(), 80);
        assert!(!normalize_signature(&format!("{} y", "x".repeat(79))).ends_with('-'));
    }

    #[test]
    fn output_signatures_keep_the_failures_and_drop_times_and_pass_counts() {
        let main = "collected 297 items\n...F....\nFAILED tests/test_a.py::test_x - AssertionError: 1 != 2\n==== 1 failed, 296 passed in 2.31s ====\n";
        let same = "collected 298 items\n....F....\nFAILED tests/test_a.py::test_x - AssertionError: 1 != 2\n==== 1 failed, 297 passed in 3.5s ====\n";
        let worse = format!("{same}FAILED tests/test_b.py::test_y - KeyError\n");
        assert_eq!(output_signature(main), ["failed-tests-test-a-py-test-x-assertionerror-1-2"]);
        assert_eq!(output_signature(main), output_signature(same));
        assert_ne!(output_signature(main), output_signature(&worse));
        assert_eq!(
            output_signature("ok\nerror: build took 12 ms\nerror: build took 3.2 seconds\n"),
            ["error-build-took-time"]
        );
        assert_eq!(output_signature("a\nb\nc\nd\n"), ["b", "c", "d"], "no failure named");
        assert_eq!(without_durations("test3s 40s x2 5ms"), "test3s <time> x2 <time>");
    }

    #[test]
    fn non_ascii_failures_keep_their_letters() {
        assert_eq!(normalize_signature("テストが失敗: status JSON"), "テストが失敗-status-json");
        assert_ne!(normalize_signature("설정 파일 없음"), normalize_signature("권한 거부"));
        assert_eq!(normalize_signature("ÄRGER über Ümlaute"), "ärger-über-ümlaute");
    }

    #[test]
    fn trigger_hash_has_task_reason_and_signature() {
        assert_eq!(
            trigger_hash("43.3.1", ReasonCode::RetryThreshold, "tests failed: 3"),
            "43.3.1:retry-threshold:tests-failed-3"
        );
        assert_eq!(signature_line("\n\n  first line \nsecond"), "first line");
    }

    #[test]
    fn plateau_needs_three_similar_rounds() {
        let same = set(&["src/a.rs", "src/b.rs"]);
        assert!(!is_plateau(&[same.clone(), same.clone()]));
        assert!(is_plateau(&[same.clone(), same.clone(), same.clone()]));
        let moving = [set(&["a"]), set(&["b"]), set(&["c"])];
        assert!(!is_plateau(&moving));
        assert_eq!(plateau_score(&moving), Some(0.0));
        // Both empty = identical, one empty = disjoint.
        assert_eq!(jaccard(&set(&[]), &set(&[])), 1.0);
        assert_eq!(jaccard(&set(&["a"]), &set(&[])), 0.0);
        // 0.7 exactly is not above the threshold.
        let near = [set(&["a", "b", "c"]), set(&["a", "b", "c"]), set(&["a", "b", "c", "d"])];
        let score = plateau_score(&near).unwrap();
        assert!(score > 0.7, "{score}");
    }

    #[test]
    fn bound_text_keeps_head_and_tail_on_char_boundaries() {
        let text = format!("HEAD{}TAIL", "é".repeat(10_000));
        let bounded = bound_text(&text, 200);
        assert!(bounded.len() <= 200);
        assert!(bounded.starts_with("HEAD") && bounded.ends_with("TAIL"));
        assert!(bounded.contains("[truncated]"));
        assert_eq!(bound_text("short", 200), "short");
    }
}
