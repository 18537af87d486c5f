//! What a failing command's output says failed — the failing tests by name when a test
//! runner ran, else its failure lines without what changes from run to run — and whether a
//! task's failure is main's own.
//!
//! A check or `land.verify` that fails on a task's tree and on main's tip fails "the same
//! way" when the same tests fail, whatever else the output shows: a cold lane's build lines,
//! a backtrace's addresses, a thread id, colours, durations. [`identify`] reads a failure;
//! [`judge`] compares a task's to main's (a test main fails is never the task's);
//! [`flaky`] names what passed on a retry of the same tree; [`headline`] picks the line a
//! person reads first: the failing test, or the first error the runner marks as such.
//!
//! Pure functions over text: no I/O. Outputs may be cut (breeze keeps their last 64 KiB):
//! what is there is read.

mod generic;
mod json;
mod normalize;
mod runners;
mod text;

use std::collections::BTreeSet;

pub use runners::Runner;

/// What a failing command's output says failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A test runner ran and named what failed: the failing tests (sorted, deduplicated)
    /// and the errors outside any test (a compile error, a module that did not import, a
    /// package that did not build), normalized as [`Failure::Output`]'s lines. At least one
    /// of the two is not empty.
    Tests {
        /// The runner that ran.
        runner: Runner,
        /// The failing tests by name.
        failing: BTreeSet<String>,
        /// The runner's errors outside any test.
        errors: BTreeSet<String>,
    },
    /// No test runner was recognized: the output's lines that name a failure (else its last
    /// lines; `(no output)` for an empty one), with build and download noise, backtrace
    /// frames and a traceback's source lines left out, and addresses, thread and process
    /// ids, temporary paths, timestamps, durations and line numbers written as placeholders.
    Output(BTreeSet<String>),
}

impl Failure {
    /// What the failure is compared by: the failing tests and the errors, or the lines.
    pub fn keys(&self) -> BTreeSet<String> {
        match self {
            Failure::Tests { failing, errors, .. } => failing.union(errors).cloned().collect(),
            Failure::Output(lines) => lines.clone(),
        }
    }

    /// The runner that ran, when one was recognized.
    pub fn runner(&self) -> Option<Runner> {
        match self {
            Failure::Tests { runner, .. } => Some(*runner),
            Failure::Output(_) => None,
        }
    }

    /// Whether `self` and `other` can be compared key by key: read from the same runner,
    /// or both from output no runner wrote.
    fn comparable(&self, other: &Failure) -> bool {
        self.runner() == other.runner()
    }
}

/// A failing command's output read once: what failed and the line that tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// What failed ([`identify`]).
    pub failure: Failure,
    /// The line a person reads first ([`headline`]).
    pub headline: Option<String>,
}

/// Reads the output of failing command `argv`: its runner (the command names it — `cargo
/// test`, `pytest`, `go test` — else the output shows it: `npm test` may run jest, vitest,
/// mocha or `node --test`), what failed, and the line that says so.
pub fn read(argv: &[String], output: &str) -> Reading {
    let cleaned = text::clean(output);
    let text = runners::Text::new(&cleaned);
    match runners::read(argv, &text) {
        Some((runner, found)) => Reading {
            headline: found.headline(),
            failure: Failure::Tests {
                runner,
                failing: found.tests.into_iter().map(|(name, _)| name).collect(),
                errors: found.errors.into_iter().map(|(key, _)| key).collect(),
            },
        },
        None => Reading {
            failure: Failure::Output(generic::failure_lines(&text.lines)),
            headline: generic::headline(&text.lines),
        },
    }
}

/// What the output of failing command `argv` says failed (see [`Failure`]).
pub fn identify(argv: &[String], output: &str) -> Failure {
    read(argv, output).failure
}

/// The line of a failed command's output that says what failed: the first failing test's
/// (`test tests::test_fmt ... FAILED`, `FAILED tests/x.py::test_y - AssertionError: …`,
/// `--- FAIL: TestSub/float (0.00s)`, `not ok 2 - subtracts`, `● math › subtracts`), else
/// the runner's first error (`error[E0425]: …`), else the first line marked as an error or
/// naming a failure, else the last line. Never build or download noise, a backtrace frame
/// or a traceback's source line. Colours removed; not cut to any length.
pub fn headline(output: &str) -> Option<String> {
    read(&[], output).headline
}

/// How a task's failure compares to main's tip's failure of the same command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// Everything the task fails, main's tip fails too: the failure is main's, not the
    /// task's.
    Same,
    /// The task fails all that main's tip fails, and these more.
    MainsPlus {
        /// What only the task fails: its tests (or errors, or lines).
        task_only: BTreeSet<String>,
    },
    /// The task fails these that main's tip does not (and does not fail all that main's
    /// does); or the two cannot be compared (another runner ran, or none on one side): then
    /// all the task fails.
    Different {
        /// What only the task fails.
        task_only: BTreeSet<String>,
    },
}

impl Judgement {
    /// What the task is charged with: nothing when [`Judgement::Same`].
    pub fn task_only(&self) -> Option<&BTreeSet<String>> {
        match self {
            Judgement::Same => None,
            Judgement::MainsPlus { task_only } | Judgement::Different { task_only } => {
                Some(task_only)
            }
        }
    }
}

/// Compares the failure of a command on a task's tree to its failure on main's tip. The
/// task is charged only with what main's tip does not fail: a test failing on main's tip is
/// never the task's, whatever the environment adds to the output.
pub fn judge(task: &Failure, main: &Failure) -> Judgement {
    if !task.comparable(main) {
        return Judgement::Different { task_only: task.keys() };
    }
    let (task_keys, main_keys) = (task.keys(), main.keys());
    let task_only: BTreeSet<String> = task_keys.difference(&main_keys).cloned().collect();
    if task_only.is_empty() {
        Judgement::Same
    } else if main_keys.is_subset(&task_keys) {
        Judgement::MainsPlus { task_only }
    } else {
        Judgement::Different { task_only }
    }
}

/// What failed on the first run and not on a retry of the same tree: flaky, not the
/// task's. `retry` is `None` when the retry passed (then all that failed first is flaky).
/// Nothing is named when the retry's output cannot be compared to the first's (another
/// runner, or none).
pub fn flaky(first: &Failure, retry: Option<&Failure>) -> BTreeSet<String> {
    match retry {
        None => first.keys(),
        Some(retry) if first.comparable(retry) => {
            first.keys().difference(&retry.keys()).cloned().collect()
        }
        Some(_) => BTreeSet::new(),
    }
}
