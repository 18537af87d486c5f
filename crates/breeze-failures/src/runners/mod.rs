//! The test runners read by name: which one ran (the command says, else its output), and
//! each runner's reader of the failing tests and of the errors outside any test.

mod cargo;
mod go;
mod jest;
mod mocha;
mod nextest;
mod node;
mod pytest;
mod unittest;
mod vitest;

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::normalize::normalize;
use crate::text::collapse_spaces;

/// A test runner whose failing tests are read by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Runner {
    /// `cargo test` (libtest, doc tests, and the compile errors before them).
    Cargo,
    /// `cargo nextest run`.
    Nextest,
    /// pytest.
    Pytest,
    /// Python's unittest (`python -m unittest`).
    Unittest,
    /// `go test`.
    GoTest,
    /// `node --test` (TAP and spec reporters).
    NodeTest,
    /// Jest.
    Jest,
    /// Vitest.
    Vitest,
    /// Mocha.
    Mocha,
}

impl Runner {
    /// Every runner, in the order an output is tried when its command does not say: a
    /// runner whose output holds another's (nextest shows libtest's) comes first.
    pub const ALL: [Runner; 9] = [
        Runner::Nextest,
        Runner::Cargo,
        Runner::GoTest,
        Runner::Pytest,
        Runner::Unittest,
        Runner::Jest,
        Runner::Vitest,
        Runner::Mocha,
        Runner::NodeTest,
    ];

    /// How people call it.
    pub fn as_str(self) -> &'static str {
        match self {
            Runner::Cargo => "cargo test",
            Runner::Nextest => "cargo nextest",
            Runner::Pytest => "pytest",
            Runner::Unittest => "unittest",
            Runner::GoTest => "go test",
            Runner::NodeTest => "node --test",
            Runner::Jest => "jest",
            Runner::Vitest => "vitest",
            Runner::Mocha => "mocha",
        }
    }

    /// The runner `argv` names, when it names one: `cargo test`, `cargo nextest run`,
    /// `pytest`, `python -m pytest`, `python -m unittest`, `go test ./...`, `node --test`,
    /// `npx jest`, `vitest run`, `mocha`, also inside `sh -c "…"`. `npm test` and `make
    /// check` name none: their output decides.
    pub fn of_command(argv: &[String]) -> Option<Runner> {
        let words: Vec<&str> = argv
            .iter()
            .flat_map(|arg| arg.split(|c: char| c.is_whitespace() || c == ';' || c == '&'))
            .map(|word| word.rsplit('/').next().unwrap_or(word))
            .filter(|word| !word.is_empty())
            .collect();
        let has = |word: &str| words.contains(&word);
        let follows = |first: &str, second: &str| {
            words.windows(2).any(|pair| pair[0] == first && pair[1] == second)
        };
        let named = [
            (has("nextest") || has("cargo-nextest"), Runner::Nextest),
            (follows("cargo", "test"), Runner::Cargo),
            (has("pytest") || has("py.test"), Runner::Pytest),
            (has("unittest"), Runner::Unittest),
            (follows("go", "test"), Runner::GoTest),
            (has("node") && has("--test"), Runner::NodeTest),
            (has("jest"), Runner::Jest),
            (has("vitest"), Runner::Vitest),
            (has("mocha") || has("_mocha"), Runner::Mocha),
        ];
        named.into_iter().find(|(named, _)| *named).map(|(_, runner)| runner)
    }

    fn reader(self) -> fn(&Text<'_>, bool) -> Found {
        match self {
            Runner::Cargo => cargo::read,
            Runner::Nextest => nextest::read,
            Runner::Pytest => pytest::read,
            Runner::Unittest => unittest::read,
            Runner::GoTest => go::read,
            Runner::NodeTest => node::read,
            Runner::Jest => jest::read,
            Runner::Vitest => vitest::read,
            Runner::Mocha => mocha::read,
        }
    }
}

impl std::fmt::Display for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A cleaned output as the readers see it: its lines, and the JSON objects among them.
pub(crate) struct Text<'a> {
    pub(crate) lines: Vec<&'a str>,
    pub(crate) json: Vec<Map<String, Value>>,
}

impl<'a> Text<'a> {
    pub(crate) fn new(cleaned: &'a str) -> Text<'a> {
        Text { lines: cleaned.lines().collect(), json: crate::json::objects(cleaned) }
    }

    /// Whether a line, trimmed, satisfies `test`.
    pub(crate) fn any(&self, test: impl Fn(&str) -> bool) -> bool {
        self.lines.iter().any(|line| test(line.trim()))
    }
}

/// What a runner's reader found, in the order the output shows it.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// Failing tests: the name, and the line that shows it failed.
    pub(crate) tests: Vec<(String, String)>,
    /// Errors outside any test: the normalized line, and the line itself.
    pub(crate) errors: Vec<(String, String)>,
    /// The names in `tests` and the keys in `errors` (a runner names a test more than once).
    test_names: BTreeSet<String>,
    error_keys: BTreeSet<String>,
}

impl Found {
    /// Records that test `name` failed, shown by `line` (a test named twice keeps its first
    /// line).
    pub(crate) fn test(&mut self, name: &str, line: &str) {
        let name = collapse_spaces(name);
        if !name.is_empty() && self.test_names.insert(name.clone()) {
            self.tests.push((name, line.trim().to_string()));
        }
    }

    /// Records an error outside any test: `line`, compared without what varies run to run.
    pub(crate) fn error(&mut self, line: &str) {
        let key = normalize(line);
        if !key.is_empty() && self.error_keys.insert(key.clone()) {
            self.errors.push((key, line.trim().to_string()));
        }
    }

    /// Forgets test `name` (it passed in the end: a retry within the run).
    pub(crate) fn forget(&mut self, name: &str) {
        if self.test_names.remove(name) {
            self.tests.retain(|(known, _)| known != name);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.tests.is_empty() && self.errors.is_empty()
    }

    /// Leaves out a test whose failure is only that of a test inside it (`TestX` when
    /// `TestX/sub` failed; `math` when `math > subtracts` failed).
    pub(crate) fn without_parents(mut self, separator: &str) -> Found {
        let names = &self.test_names;
        let parents: BTreeSet<String> = self
            .tests
            .iter()
            .map(|(name, _)| name)
            .filter(|name| {
                let prefix = format!("{name}{separator}");
                names.range(prefix.clone()..).next().is_some_and(|next| next.starts_with(&prefix))
            })
            .cloned()
            .collect();
        self.tests.retain(|(name, _)| !parents.contains(name));
        self.test_names.retain(|name| !parents.contains(name));
        self
    }

    /// The line that says what failed: the first failing test's, else the first error's.
    pub(crate) fn headline(&self) -> Option<String> {
        self.tests.first().or(self.errors.first()).map(|(_, line)| line.clone())
    }
}

/// The runner that ran, and what it says failed: the runner `argv` names if its reader
/// finds a failure, else the first of [`Runner::ALL`] whose reader does.
pub(crate) fn read(argv: &[String], text: &Text<'_>) -> Option<(Runner, Found)> {
    let named = Runner::of_command(argv);
    let others = Runner::ALL.into_iter().filter(|runner| Some(*runner) != named);
    named.into_iter().chain(others).find_map(|runner| {
        let found = runner.reader()(text, Some(runner) == named);
        (!found.is_empty()).then_some((runner, found))
    })
}

/// `name` without a trailing duration: `subtracts (1.649192ms)`, `adds (4 ms)`, `formats
/// 6ms` → the name.
pub(crate) fn without_duration(name: &str) -> &str {
    let name = name.trim_end();
    if let Some((head, tail)) = name.rsplit_once(" (")
        && tail.ends_with("s)")
        && tail.starts_with(|c: char| c.is_ascii_digit())
    {
        return head.trim_end();
    }
    if let Some((head, tail)) = name.rsplit_once(' ')
        && tail.ends_with('s')
        && tail.starts_with(|c: char| c.is_ascii_digit())
        && tail
            .trim_end_matches(char::is_alphabetic)
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.')
    {
        return head.trim_end();
    }
    name
}

/// `name` without a retry mark: `subtracts (retry x2)` → `subtracts`.
pub(crate) fn without_retry(name: &str) -> &str {
    match name.trim_end().rsplit_once(" (retry x") {
        Some((head, tail)) if tail.ends_with(')') => head.trim_end(),
        _ => name.trim_end(),
    }
}
