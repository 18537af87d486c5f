//! Any output — made up, or a real one cut anywhere, as breeze keeps only its end — is read
//! without a panic, and a failure always fails the same way as itself.

use breeze_failures::{Judgement, flaky, judge, read};
use proptest::prelude::*;

const REAL: [&str; 12] = [
    include_str!("fixtures/cargo/main-cold.txt"),
    include_str!("fixtures/cargo/main-colour.txt"),
    include_str!("fixtures/nextest/libtest-json.txt"),
    include_str!("fixtures/pytest/plus.txt"),
    include_str!("fixtures/unittest/plus.txt"),
    include_str!("fixtures/go/json.txt"),
    include_str!("fixtures/node/tap-plus.txt"),
    include_str!("fixtures/node/spec-plus.txt"),
    include_str!("fixtures/jest/json.txt"),
    include_str!("fixtures/vitest/plus.txt"),
    include_str!("fixtures/mocha/json.txt"),
    include_str!("fixtures/generic/run-cold.txt"),
];

/// `text` from byte `start` on, moved forward to a character's start.
fn from(text: &str, start: usize) -> &str {
    let start = (start.min(text.len())..=text.len())
        .find(|at| text.is_char_boundary(*at))
        .unwrap_or(text.len());
    &text[start..]
}

proptest! {
    #[test]
    fn any_output_is_read_without_a_panic(output in "\\PC{0,300}|[\\x00-\\x7f]{0,300}", command in "\\PC{0,30}") {
        let argv: Vec<String> = command.split(' ').map(String::from).collect();
        let reading = read(&argv, &output);
        prop_assert_eq!(judge(&reading.failure, &reading.failure), Judgement::Same);
    }

    #[test]
    fn a_real_output_cut_anywhere_is_read_and_fails_as_itself(which in 0..REAL.len(), start in 0usize..20_000) {
        let cut = from(REAL[which], start);
        let reading = read(&[], cut);
        prop_assert_eq!(judge(&reading.failure, &reading.failure), Judgement::Same);
        prop_assert!(flaky(&reading.failure, Some(&reading.failure)).is_empty());
        prop_assert!(!reading.failure.keys().is_empty());
    }
}
