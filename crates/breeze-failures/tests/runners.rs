//! Every runner, on real outputs (`fixtures/`, see its README): the failing tests are read by
//! name; the same failure with other noise judges `Same`; a task failing main's test and more
//! is charged only the more; another failing test judges `Different`; a test that passed on
//! the retry is flaky; the headline is the failing test's line.

use std::collections::BTreeSet;

use breeze_failures::{Failure, Judgement, Runner, flaky, headline, identify, judge};

/// One runner's four captured runs and what they say.
struct Runs {
    command: &'static str,
    runner: Runner,
    main: &'static str,
    main_again: &'static str,
    plus: &'static str,
    other: &'static str,
    /// What main's tip fails.
    mains: &'static [&'static str],
    /// What the task of `plus` fails besides.
    extra: &'static [&'static str],
    /// What the task of `other` fails.
    others: &'static [&'static str],
    /// The headline of `plus`.
    plus_headline: &'static str,
}

macro_rules! fixture {
    ($path:literal) => {
        include_str!(concat!("fixtures/", $path))
    };
}

fn runs() -> Vec<Runs> {
    vec![
        Runs {
            command: "cargo test",
            runner: Runner::Cargo,
            main: fixture!("cargo/main-cold.txt"),
            main_again: fixture!("cargo/main-warm.txt"),
            plus: fixture!("cargo/plus.txt"),
            other: fixture!("cargo/other.txt"),
            mains: &["tests::test_fmt"],
            extra: &["tests::subtracts"],
            others: &["tests::subtracts"],
            plus_headline: "test tests::subtracts ... FAILED",
        },
        Runs {
            command: "cargo nextest run",
            runner: Runner::Nextest,
            main: fixture!("nextest/main.txt"),
            main_again: fixture!("nextest/main-again.txt"),
            plus: fixture!("nextest/plus.txt"),
            other: fixture!("nextest/other.txt"),
            mains: &["demo tests::test_fmt"],
            extra: &["demo tests::subtracts"],
            others: &["demo tests::subtracts"],
            plus_headline: "FAIL [   0.265s] (2/3) demo tests::test_fmt",
        },
        Runs {
            command: "pytest",
            runner: Runner::Pytest,
            main: fixture!("pytest/main.txt"),
            main_again: fixture!("pytest/main-again.txt"),
            plus: fixture!("pytest/plus.txt"),
            other: fixture!("pytest/other.txt"),
            mains: &["tests/test_calc.py::CalcTest::test_signature"],
            extra: &["tests/test_calc.py::CalcTest::test_subtracts"],
            others: &["tests/test_calc.py::CalcTest::test_subtracts"],
            plus_headline: "FAILED tests/test_calc.py::CalcTest::test_signature - ValueError: bad signatu...",
        },
        Runs {
            command: "python3 -m unittest discover -s tests",
            runner: Runner::Unittest,
            main: fixture!("unittest/main.txt"),
            main_again: fixture!("unittest/main-again.txt"),
            plus: fixture!("unittest/plus.txt"),
            other: fixture!("unittest/other.txt"),
            mains: &["test_calc.CalcTest.test_signature"],
            extra: &["test_calc.CalcTest.test_subtracts"],
            others: &["test_calc.CalcTest.test_subtracts"],
            plus_headline: "ERROR: test_signature (test_calc.CalcTest.test_signature)",
        },
        Runs {
            command: "go test ./...",
            runner: Runner::GoTest,
            main: fixture!("go/main.txt"),
            main_again: fixture!("go/main-again.txt"),
            plus: fixture!("go/plus.txt"),
            other: fixture!("go/other.txt"),
            mains: &["example.com/calc.TestFormat/float"],
            // A test of the same name in another package is another test.
            extra: &[
                "example.com/calc.TestSubtracts",
                "example.com/calc/internal/parse.TestFormat",
            ],
            others: &["example.com/calc.TestSubtracts"],
            plus_headline: "--- FAIL: TestSubtracts (0.00s)",
        },
        Runs {
            command: "node --test --test-reporter=tap node/",
            runner: Runner::NodeTest,
            main: fixture!("node/tap-main.txt"),
            main_again: fixture!("node/tap-main-again.txt"),
            plus: fixture!("node/tap-plus.txt"),
            other: fixture!("node/tap-other.txt"),
            mains: &["math > formats"],
            extra: &["math > subtracts"],
            others: &["math > subtracts"],
            plus_headline: "not ok 2 - subtracts",
        },
        Runs {
            command: "node --test --test-reporter=spec node/",
            runner: Runner::NodeTest,
            main: fixture!("node/spec-main.txt"),
            main_again: fixture!("node/spec-main-again.txt"),
            plus: fixture!("node/spec-plus.txt"),
            other: fixture!("node/spec-other.txt"),
            mains: &["formats"],
            extra: &["subtracts"],
            others: &["subtracts"],
            plus_headline: "✖ subtracts (1.372269ms)",
        },
        Runs {
            command: "npx jest jest/",
            runner: Runner::Jest,
            main: fixture!("jest/main.txt"),
            main_again: fixture!("jest/main-again.txt"),
            plus: fixture!("jest/plus.txt"),
            other: fixture!("jest/other.txt"),
            mains: &["math › formats"],
            extra: &["math › subtracts"],
            others: &["math › subtracts"],
            plus_headline: "● math › subtracts",
        },
        Runs {
            command: "npx vitest run vitest/",
            runner: Runner::Vitest,
            main: fixture!("vitest/main.txt"),
            main_again: fixture!("vitest/main-again.txt"),
            plus: fixture!("vitest/plus.txt"),
            other: fixture!("vitest/other.txt"),
            mains: &["vitest/math.test.js > math > formats"],
            extra: &["vitest/math.test.js > math > subtracts"],
            others: &["vitest/math.test.js > math > subtracts"],
            plus_headline: "FAIL  vitest/math.test.js > math > subtracts",
        },
        Runs {
            command: "npx mocha mocha/",
            runner: Runner::Mocha,
            main: fixture!("mocha/main.txt"),
            main_again: fixture!("mocha/main-again.txt"),
            plus: fixture!("mocha/plus.txt"),
            other: fixture!("mocha/other.txt"),
            mains: &["math formats"],
            extra: &["math subtracts"],
            others: &["math subtracts"],
            plus_headline: "1) math subtracts",
        },
    ]
}

fn argv(command: &str) -> Vec<String> {
    command.split_whitespace().map(String::from).collect()
}

fn names(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| name.to_string()).collect()
}

fn tests(runner: Runner, failing: &[&str]) -> Failure {
    Failure::Tests { runner, failing: names(failing), errors: BTreeSet::new() }
}

#[test]
fn every_runner_names_its_failing_tests_with_or_without_the_command() {
    for runs in runs() {
        let union: Vec<&str> = runs.mains.iter().chain(runs.extra).copied().collect();
        for (output, failing) in [
            (runs.main, runs.mains),
            (runs.main_again, runs.mains),
            (runs.plus, &union[..]),
            (runs.other, runs.others),
        ] {
            assert_eq!(
                identify(&argv(runs.command), output),
                tests(runs.runner, failing),
                "{}",
                runs.command
            );
            // `npm test` does not say which runner runs: the output does.
            assert_eq!(
                identify(&argv("npm test"), output),
                tests(runs.runner, failing),
                "{}",
                runs.command
            );
        }
    }
}

#[test]
fn the_same_failure_with_other_noise_fails_the_same_way() {
    for runs in runs() {
        assert_ne!(runs.main, runs.main_again, "{}: two real runs differ", runs.command);
        let command = argv(runs.command);
        let (main, again) = (identify(&command, runs.main), identify(&command, runs.main_again));
        assert_eq!(judge(&again, &main), Judgement::Same, "{}", runs.command);
        assert_eq!(judge(&main, &again), Judgement::Same, "{}", runs.command);
    }
}

#[test]
fn a_task_failing_mains_test_and_more_is_charged_only_the_more() {
    for runs in runs() {
        let command = argv(runs.command);
        let (task, main) = (identify(&command, runs.plus), identify(&command, runs.main_again));
        assert_eq!(
            judge(&task, &main),
            Judgement::MainsPlus { task_only: names(runs.extra) },
            "{}",
            runs.command
        );
        // The other way round, the task fails less than main: main's failure, not the task's.
        assert_eq!(judge(&main, &task), Judgement::Same, "{}", runs.command);
    }
}

#[test]
fn a_task_failing_another_test_than_main_fails_differently() {
    for runs in runs() {
        let command = argv(runs.command);
        let (task, main) = (identify(&command, runs.other), identify(&command, runs.main));
        let judgement = judge(&task, &main);
        assert_eq!(
            judgement,
            Judgement::Different { task_only: names(runs.others) },
            "{}",
            runs.command
        );
        assert_eq!(judgement.task_only(), Some(&names(runs.others)));
    }
}

#[test]
fn a_test_that_passed_on_the_retry_of_the_same_tree_is_flaky() {
    for runs in runs() {
        let command = argv(runs.command);
        let (first, retry) = (identify(&command, runs.plus), identify(&command, runs.main));
        assert_eq!(flaky(&first, Some(&retry)), names(runs.extra), "{}", runs.command);
        assert_eq!(flaky(&retry, Some(&first)), BTreeSet::new(), "{}", runs.command);
        assert_eq!(flaky(&retry, None), names(runs.mains), "{}: the retry passed", runs.command);
    }
}

#[test]
fn the_headline_is_the_first_failing_tests_line() {
    for runs in runs() {
        assert_eq!(headline(runs.plus).as_deref(), Some(runs.plus_headline), "{}", runs.command);
    }
}
