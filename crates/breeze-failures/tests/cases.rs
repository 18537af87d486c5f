//! The cases that sent tasks back on real projects, and what each runner says outside its
//! failing tests: compile and collection errors, files that did not load, JSON reports, cut
//! outputs; and commands that are no test runner.

use std::collections::BTreeSet;

use breeze_failures::{Failure, Judgement, Runner, flaky, headline, identify, judge, read};

macro_rules! fixture {
    ($path:literal) => {
        include_str!(concat!("fixtures/", $path))
    };
}

fn argv(command: &str) -> Vec<String> {
    command.split_whitespace().map(String::from).collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|item| item.to_string()).collect()
}

fn failing(failure: &Failure) -> BTreeSet<String> {
    match failure {
        Failure::Tests { failing, .. } => failing.clone(),
        Failure::Output(lines) => panic!("no runner recognized: {lines:?}"),
    }
}

fn errors(failure: &Failure) -> BTreeSet<String> {
    match failure {
        Failure::Tests { errors, .. } => errors.clone(),
        Failure::Output(lines) => panic!("no runner recognized: {lines:?}"),
    }
}

/// The stdout and stderr parts of a cargo fixture (stderr starts with cargo's first status).
fn streams(output: &str, stderr_opening: &str) -> (String, String) {
    let at = output.find(stderr_opening).expect("the fixture has its stderr");
    (output[..at].to_string(), output[at..].to_string())
}

#[test]
fn a_cold_lane_and_a_warm_one_fail_mains_test_the_same_way() {
    let (cold, warm) = (fixture!("cargo/main-cold.txt"), fixture!("cargo/main-warm.txt"));
    // What made them differ on the anyhow crate: build noise, addresses, thread ids.
    assert!(cold.contains("  Downloaded thiserror-impl") && !warm.contains("Downloaded"));
    let address =
        |output: &str| output.split("value at ").nth(1).map(|rest| rest[..14].to_string());
    assert_ne!(address(cold), address(warm));
    let cargo_test = argv("cargo test");
    let (task, main) = (identify(&cargo_test, warm), identify(&cargo_test, cold));
    assert_eq!(judge(&task, &main), Judgement::Same);
    let colour = identify(&cargo_test, fixture!("cargo/main-colour.txt"));
    assert!(fixture!("cargo/main-colour.txt").contains("\u{1b}[31mFAILED"));
    assert_eq!(judge(&colour, &main), Judgement::Same, "colours change no name");
}

#[test]
fn a_cargo_failure_is_headed_by_its_test_never_by_download_lines() {
    let cold = fixture!("cargo/main-cold.txt");
    let (stdout, stderr) = streams(cold, "    Updating crates.io index");
    let expected = Some("test tests::test_fmt ... FAILED".to_string());
    assert_eq!(headline(cold), expected);
    // stderr first, and an output whose last line is a download.
    assert_eq!(headline(&format!("{stderr}{stdout}")), expected);
    let downloaded = stderr.find("  Downloaded thiserror-impl").unwrap();
    let last_line_end = downloaded + stderr[downloaded..].find('\n').unwrap();
    let ends_downloading = format!("{stdout}{}", &stderr[..last_line_end]);
    assert!(ends_downloading.ends_with("Downloaded thiserror-impl v1.0.69"));
    assert_eq!(headline(&ends_downloading), expected);
}

#[test]
fn an_output_cut_at_its_start_is_read_from_what_remains() {
    let plus = fixture!("cargo/plus.txt");
    let after_first_section = plus.find("---- tests::subtracts stdout ----\n").unwrap() + 34;
    let cut = &plus[after_first_section..];
    assert!(!cut.contains("test tests::subtracts ... FAILED"), "only the closing list names it");
    let cargo_test = argv("cargo test");
    assert_eq!(identify(&cargo_test, cut), identify(&cargo_test, plus));
    assert_eq!(headline(cut).as_deref(), Some("tests::test_fmt"));
}

#[test]
fn a_doc_test_is_named_without_the_line_it_starts_on() {
    let output = fixture!("cargo/doctest.txt");
    let main = identify(&argv("cargo test --doc"), output);
    assert_eq!(failing(&main), set(&["src/lib.rs - add"]));
    // The task added lines above the doc test main's tip fails.
    let moved = output.replace("(line 10)", "(line 14)");
    assert_eq!(judge(&identify(&argv("cargo test --doc"), &moved), &main), Judgement::Same);
    assert_eq!(headline(output).as_deref(), Some("test src/lib.rs - add (line 10) ... FAILED"));
}

#[test]
fn a_compile_error_is_the_runners_error_and_is_the_tasks() {
    let output = fixture!("cargo/compile-error.txt");
    let task = identify(&argv("cargo test"), output);
    let error = "error[E0425]: cannot find value `c` in this scope";
    assert_eq!(
        task,
        Failure::Tests { runner: Runner::Cargo, failing: set(&[]), errors: set(&[error]) }
    );
    assert_eq!(headline(output).as_deref(), Some(error));
    let main = identify(&argv("cargo test"), fixture!("cargo/main-cold.txt"));
    assert_eq!(judge(&task, &main), Judgement::Different { task_only: set(&[error]) });
}

#[test]
fn pytests_failed_line_heads_the_failure_not_the_tracebacks_source_line() {
    let output = fixture!("pytest/main.txt");
    let source = output.find("    if sig_error is not None:").unwrap();
    assert!(source < output.find("FAILED tests/").unwrap(), "the source line comes first");
    assert_eq!(
        headline(output).as_deref(),
        Some("FAILED tests/test_calc.py::CalcTest::test_signature - ValueError: bad signatu...")
    );
}

#[test]
fn a_test_module_that_does_not_import_is_a_collection_error() {
    let output = fixture!("pytest/collection-error.txt");
    let task = identify(&argv("pytest"), output);
    assert_eq!(errors(&task), set(&["ERROR tests/test_broken.py"]));
    assert_eq!(headline(output).as_deref(), Some("ERROR tests/test_broken.py"));
    let main = identify(&argv("pytest"), fixture!("pytest/main.txt"));
    assert!(matches!(judge(&task, &main), Judgement::Different { .. }));
}

#[test]
fn a_test_file_that_does_not_load_is_an_error_of_jest_and_vitest() {
    let jest = identify(&argv("npx jest"), fixture!("jest/suite-error.txt"));
    assert_eq!(errors(&jest), set(&["Test suite failed to run: jest/broken.test.js"]));
    assert_eq!(failing(&jest), set(&["math › formats"]));
    let vitest = identify(&argv("npx vitest run"), fixture!("vitest/suite-error.txt"));
    assert_eq!(errors(&vitest), set(&["FAIL vitest/broken.test.js"]));
    let main = identify(&argv("npx vitest run"), fixture!("vitest/main.txt"));
    assert_eq!(
        judge(&vitest, &main),
        Judgement::MainsPlus { task_only: set(&["FAIL vitest/broken.test.js"]) }
    );
}

#[test]
fn json_reports_name_the_same_tests_as_the_text_ones() {
    let jest = identify(&argv("npx jest --json"), fixture!("jest/json.txt"));
    assert_eq!(jest, identify(&argv("npx jest"), fixture!("jest/plus.txt")));
    let jest_main = identify(&argv("npx jest"), fixture!("jest/main.txt"));
    assert_eq!(
        judge(&jest, &jest_main),
        Judgement::MainsPlus { task_only: set(&["math › subtracts"]) }
    );
    let mocha = identify(&argv("npx mocha --reporter json"), fixture!("mocha/json.txt"));
    assert_eq!(mocha, identify(&argv("npx mocha"), fixture!("mocha/plus.txt")));
    let vitest = identify(&argv("npx vitest run --reporter=json"), fixture!("vitest/json.txt"));
    assert_eq!(failing(&vitest), set(&["math > formats", "math > subtracts"]));
    let go = identify(&argv("go test -json ./..."), fixture!("go/json.txt"));
    assert_eq!(
        failing(&go),
        set(&["example.com/calc.TestFormat/float", "example.com/calc.TestSubtracts"])
    );
    let go_main = identify(&argv("go test ./..."), fixture!("go/main.txt"));
    assert_eq!(
        judge(&go, &go_main),
        Judgement::MainsPlus { task_only: set(&["example.com/calc.TestSubtracts"]) }
    );
}

#[test]
fn nextests_json_events_name_the_failing_tests() {
    let output = fixture!("nextest/libtest-json.txt");
    let nextest = identify(&argv("cargo nextest run --message-format libtest-json"), output);
    assert_eq!(
        failing(&nextest),
        set(&["demo::demo tests::subtracts", "demo::demo tests::test_fmt"])
    );
    assert_eq!(nextest.runner(), Some(Runner::Nextest));
}

#[test]
fn a_go_package_that_does_not_build_is_headed_by_the_compilers_error() {
    let output = fixture!("go/build-failed.txt");
    let failure = identify(&argv("go test ./..."), output);
    assert_eq!(
        errors(&failure),
        set(&["./calc_test.go:_: undefined: Multiply", "FAIL example.com/calc [build failed]"])
    );
    assert_eq!(headline(output).as_deref(), Some("./calc_test.go:8:9: undefined: Multiply"));
    assert_eq!(
        headline(fixture!("go/other.txt")).as_deref(),
        Some("--- FAIL: TestSubtracts (0.00s)")
    );
}

#[test]
fn another_commands_noise_only_differences_fail_the_same_way() {
    let cargo_run = argv("cargo run");
    let cold = identify(&cargo_run, fixture!("generic/run-cold.txt"));
    let warm = identify(&cargo_run, fixture!("generic/run-warm.txt"));
    assert_eq!(cold.runner(), None);
    assert_eq!(judge(&warm, &cold), Judgement::Same, "{cold:?}\n{warm:?}");
    assert_eq!(judge(&cold, &warm), Judgement::Same, "{cold:?}\n{warm:?}");
    let check = argv("python3 check.py schema.json");
    let main = identify(&check, fixture!("generic/python-main.txt"));
    let again = identify(&check, fixture!("generic/python-again.txt"));
    assert_eq!(judge(&again, &main), Judgement::Same, "{main:?}\n{again:?}");
    assert_eq!(
        headline(fixture!("generic/run-cold.txt"))
            .map(|line| line.starts_with("thread '<unnamed>' (")),
        Some(true)
    );
    // A command that fails saying nothing after a cold build, and after a warm one.
    let quiet_cold = identify(&cargo_run, fixture!("generic/quiet-cold.txt"));
    let quiet_warm = identify(&cargo_run, fixture!("generic/quiet-warm.txt"));
    assert!(fixture!("generic/quiet-cold.txt").contains("   Compiling tool v0.1.0"));
    assert_eq!(judge(&quiet_warm, &quiet_cold), Judgement::Same, "{quiet_cold:?}\n{quiet_warm:?}");
    assert_eq!(judge(&quiet_cold, &quiet_warm), Judgement::Same, "{quiet_cold:?}\n{quiet_warm:?}");
}

#[test]
fn another_commands_different_error_line_fails_differently() {
    let cargo_run = argv("cargo run");
    let main = identify(&cargo_run, fixture!("generic/run-cold.txt"));
    let task = identify(&cargo_run, fixture!("generic/run-other.txt"));
    assert_eq!(
        judge(&task, &main),
        Judgement::Different { task_only: set(&["no settings in <tmp>/_ (read at 0x_)"]) }
    );
    let check = argv("python3 check.py");
    let main = identify(&check, fixture!("generic/python-main.txt"));
    let task = identify(&check, fixture!("generic/python-other.txt"));
    assert_eq!(
        judge(&task, &main),
        Judgement::Different { task_only: set(&["<time> [_] ERROR schema schema.yaml not found"]) }
    );
}

#[test]
fn failures_read_from_different_runners_or_none_are_never_the_same() {
    let cargo = identify(&argv("cargo test"), fixture!("cargo/main-cold.txt"));
    let generic = identify(&argv("cargo run"), fixture!("generic/run-cold.txt"));
    assert_eq!(judge(&generic, &cargo), Judgement::Different { task_only: generic.keys() });
    assert_eq!(judge(&cargo, &generic), Judgement::Different { task_only: cargo.keys() });
    assert_eq!(flaky(&cargo, Some(&generic)), BTreeSet::new(), "nothing is known to have passed");
    let pytest = identify(&argv("pytest"), fixture!("pytest/main.txt"));
    let unittest = identify(&argv("python3 -m unittest"), fixture!("unittest/main.txt"));
    assert!(matches!(judge(&pytest, &unittest), Judgement::Different { .. }));
}

#[test]
fn an_empty_output_is_the_same_only_as_another_empty_one() {
    let empty = identify(&argv("make check"), "");
    assert_eq!(empty, Failure::Output(set(&["(no output)"])));
    assert_eq!(judge(&empty, &identify(&argv("make check"), "\n\n")), Judgement::Same);
    let main = identify(&argv("make check"), "error: lint failed\n");
    assert_eq!(judge(&empty, &main), Judgement::Different { task_only: set(&["(no output)"]) });
    assert_eq!(headline(""), None);
}

#[test]
fn one_reading_gives_the_failure_and_its_headline() {
    let reading = read(&argv("pytest"), fixture!("pytest/plus.txt"));
    assert_eq!(reading.failure, identify(&argv("pytest"), fixture!("pytest/plus.txt")));
    assert_eq!(reading.headline, headline(fixture!("pytest/plus.txt")));
}

#[test]
fn the_command_names_its_runner_even_inside_a_shell() {
    let cases = [
        ("cargo test --workspace", Some(Runner::Cargo)),
        ("cargo nextest run", Some(Runner::Nextest)),
        ("python -m pytest -q", Some(Runner::Pytest)),
        ("/venv/bin/pytest", Some(Runner::Pytest)),
        ("python3 -m unittest discover", Some(Runner::Unittest)),
        ("go test ./...", Some(Runner::GoTest)),
        ("node --test test/", Some(Runner::NodeTest)),
        ("npx jest --ci", Some(Runner::Jest)),
        ("pnpm vitest run", Some(Runner::Vitest)),
        ("./node_modules/.bin/mocha", Some(Runner::Mocha)),
        ("npm test", None),
        ("make check", None),
    ];
    for (command, runner) in cases {
        assert_eq!(Runner::of_command(&argv(command)), runner, "{command}");
    }
    let shell = vec!["sh".to_string(), "-c".to_string(), "cd app && go test ./...".to_string()];
    assert_eq!(Runner::of_command(&shell), Some(Runner::GoTest));
}
