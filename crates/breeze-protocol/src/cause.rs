//! Why a task was sent back, held or given up: one structured [`Cause`], shown as one line
//! everywhere ([`Cause::line`]) — the journal's `reason`, `breeze status`, the report, the
//! live view and the notifications all print that line.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Longest last line of a command's output shown in [`Cause::line`], in characters.
const LAST_LINE_CHARS: usize = 160;
/// Longest command shown in [`Cause::line`], in characters (`…` when cut).
const COMMAND_CHARS: usize = 80;
/// Paths named in [`Cause::line`] before "and N more".
const SHOWN_PATHS: usize = 3;

/// What kind of thing stopped the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CauseKind {
    /// A mechanical gate failed (`name`: `write-set`, `symlink-escape`, `nested-repo`,
    /// `plans-markers`, `file-size`, `file-type`; `paths`: the offending paths).
    Gate,
    /// A `[review] checks` command failed (`command`, `exit_code`, `log_tail`).
    Check,
    /// `land.verify` failed on the merged tree (`command`, `exit_code`, `log_tail`).
    Verify,
    /// A repository hook refused the landing (`name`: `pre-commit` or `commit-msg`).
    Hook,
    /// The change does not merge onto main (`paths`: the conflicted files).
    Conflict,
    /// The reviewer requested changes in every allowed round.
    Reviewer,
    /// The Advisor answered STOP (`detail`: its reason).
    AdvisorStop,
    /// Worker attempts failed in a row (`detail`: the last failure).
    Attempts,
    /// The worker stalled twice.
    Stall,
    /// The worker gave up, kept asking for advice, or its self-review did not hold.
    Worker,
    /// The landing waits for the user's checkout (a dirty file, a lock, a merge going on).
    Checkout,
    /// The landing waits for the remote (`[land] to = "remote"` or `"pull-request"`): it
    /// cannot be reached, it refused the push, a branch is in the way, or the pull-request
    /// command failed (`detail` says which, and what to do).
    Remote,
    /// Reviewed work waits for `breeze approve`.
    Approval,
    /// A dependency will not land.
    Dependency,
    /// An error outside the task's control (git, configuration, I/O).
    Error,
    /// The run stopped before the task finished; `breeze resume` continues it.
    Stopped,
    /// A person decided (`breeze reject`, `breeze retry`, `breeze abort`).
    Person,
    /// A `[budget]` cap was reached (`detail`: what was spent against which cap; `hint`: the
    /// setting to raise).
    Budget,
    /// Pushed as a pull request (`[land] to = "pull-request"`); it lands when the team
    /// merges it (`detail`: the pull request and what it waits for).
    PullRequest,
}

impl CauseKind {
    /// Wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Gate => "gate",
            Self::Check => "check",
            Self::Verify => "verify",
            Self::Hook => "hook",
            Self::Conflict => "conflict",
            Self::Reviewer => "reviewer",
            Self::AdvisorStop => "advisor-stop",
            Self::Attempts => "attempts",
            Self::Stall => "stall",
            Self::Worker => "worker",
            Self::Checkout => "checkout",
            Self::Remote => "remote",
            Self::Approval => "approval",
            Self::Dependency => "dependency",
            Self::Error => "error",
            Self::Stopped => "stopped",
            Self::Person => "person",
            Self::Budget => "budget",
            Self::PullRequest => "pull-request",
        }
    }
}

/// The concrete cause of an escalation, a send-back, a deferral or a failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Cause {
    /// What kind of thing it was.
    pub kind: CauseKind,
    /// What failed, by name: the gate(s) (`write-set`; several joined by `, `), the hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What happened, in one line. For a command: how it ended (`exited 1`, `timed out`).
    pub detail: String,
    /// The files concerned (the gate's offending paths, the conflicted files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// The command that failed (argv).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Its exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The last lines of its output (bounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_tail: Option<String>,
    /// The line of its output that says what failed, as breeze read it (the failing test,
    /// the first error the runner marks as such); [`Cause::line`] shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<String>,
    /// How many times in a row it happened, when that is why the task escalated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,
    /// What to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Cause {
    /// A cause with only a kind and its one-line detail.
    pub fn new(kind: CauseKind, detail: impl Into<String>) -> Cause {
        Cause {
            kind,
            name: None,
            detail: detail.into(),
            paths: Vec::new(),
            command: Vec::new(),
            exit_code: None,
            log_tail: None,
            headline: None,
            times: None,
            hint: None,
        }
    }

    /// The same cause, escalated after happening `times` times in a row.
    pub fn times(mut self, times: u32) -> Cause {
        self.times = Some(times);
        self
    }

    /// The same cause with what to do about it.
    pub fn hint(mut self, hint: impl Into<String>) -> Cause {
        self.hint = Some(hint.into());
        self
    }

    /// The cause as one line a person reads: the gate and its paths, the command and the
    /// last line of its output, the conflicted files, or the detail.
    pub fn line(&self) -> String {
        let hint = self.hint.as_deref().map(|hint| format!(" ({hint})")).unwrap_or_default();
        let in_a_row = self.times.map(|n| format!(" {n} times in a row")).unwrap_or_default();
        let repeated = self.times.map(|n| format!(" {n} times")).unwrap_or_default();
        let detail = one_line(&self.detail);
        match self.kind {
            CauseKind::Gate => {
                let name = self.name.as_deref().unwrap_or("mechanical");
                let noun = if name.contains(", ") { "gates" } else { "gate" };
                format!("the {name} {noun} failed{in_a_row}: {detail}{hint}")
            }
            CauseKind::Check => {
                format!("the check `{}` failed{in_a_row} ({}){hint}", self.command(), self.ended())
            }
            CauseKind::Verify => format!(
                "landing: verify failed{repeated} (`{}` {}){hint}",
                self.command(),
                self.ended()
            ),
            CauseKind::Hook => format!(
                "landing: the {} hook failed{repeated} ({}){hint}",
                self.name.as_deref().unwrap_or("repository"),
                self.ended()
            ),
            CauseKind::Conflict => match self.times {
                Some(n) => format!(
                    "landing: conflict with main {n} times; the last in {}{hint}",
                    self.shown_paths()
                ),
                None => format!("landing: conflict with main in {}{hint}", self.shown_paths()),
            },
            // The figure, then the setting to raise (as the run's stop says it).
            CauseKind::Budget => match self.hint.as_deref() {
                Some(raise) => format!("{detail}; {raise}"),
                None => detail.to_string(),
            },
            _ => format!("{detail}{hint}"),
        }
    }

    /// The command as it would be typed (argv joined by spaces), cut at
    /// [`COMMAND_CHARS`] characters.
    fn command(&self) -> String {
        let command = self.command.join(" ");
        if command.chars().count() <= COMMAND_CHARS {
            return command;
        }
        format!("{}…", command.chars().take(COMMAND_CHARS - 1).collect::<String>())
    }

    /// How the command ended, and the line of its output that tells why: its
    /// [`Cause::headline`], else [`telling_line`] of its tail.
    fn ended(&self) -> String {
        let ending = match (self.exit_code, one_line(&self.detail)) {
            (Some(code), "") => format!("exited {code}"),
            (_, detail) => detail.to_string(),
        };
        let telling = match &self.headline {
            Some(headline) => Some(bounded(headline)),
            None => self.log_tail.as_deref().and_then(telling_line),
        };
        match telling {
            Some(last) => format!("{ending}: {last}"),
            None => ending,
        }
    }

    fn shown_paths(&self) -> String {
        if self.paths.is_empty() {
            return one_line(&self.detail).to_string();
        }
        let mut shown = self.paths.iter().take(SHOWN_PATHS).cloned().collect::<Vec<_>>().join(", ");
        if self.paths.len() > SHOWN_PATHS {
            shown.push_str(&format!(" and {} more", self.paths.len() - SHOWN_PATHS));
        }
        shown
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line())
    }
}

/// The first line of `text`, trimmed.
fn one_line(text: &str) -> &str {
    text.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or("")
}

/// The last non-empty line of a command's output, trimmed and bounded (`…` when cut).
pub fn last_line(output: &str) -> Option<String> {
    let line = output.lines().map(str::trim).rfind(|line| !line.is_empty())?;
    Some(bounded(line))
}

/// The line of a failed command's output that says what failed: the first that names a
/// failure (`not ok 2 - subtracts`, `test tests::sub ... FAILED`, `--- FAIL: TestSub`,
/// `AssertionError: 2 == 3`), leaving out banners and counters (`=== FAILURES ===`,
/// `# fail 1`, `1 failing`); else the last line. Test runners end with a summary (`#
/// duration_ms 130.9`), which says nothing of the cause.
pub fn telling_line(output: &str) -> Option<String> {
    output
        .lines()
        .map(str::trim)
        .find(|line| names_a_failure(line))
        .map(bounded)
        .or_else(|| last_line(output))
}

/// Whether `line` of a command's output names a failure (see [`telling_line`]).
pub fn names_a_failure(line: &str) -> bool {
    let text = line.trim_matches(|c: char| "=-_*#>! ".contains(c));
    let lower = text.to_lowercase();
    let named = lower.starts_with("not ok ")
        || ["fail", "error", "panicked"].iter().any(|word| lower.contains(word));
    let words: Vec<&str> = text.split_whitespace().collect();
    let counter = words.len() == 2 && words.iter().any(|word| word.parse::<u64>().is_ok());
    named && words.len() >= 2 && !counter
}

fn bounded(line: &str) -> String {
    if line.chars().count() > LAST_LINE_CHARS {
        format!("{}…", line.chars().take(LAST_LINE_CHARS - 1).collect::<String>())
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_names_itself_its_paths_and_how_often() {
        let mut gate =
            Cause::new(CauseKind::Gate, "package-lock.json is outside the task's writes")
                .hint("add it to the task's writes, or revert it");
        gate.name = Some("write-set".into());
        gate.paths = vec!["package-lock.json".into()];
        assert_eq!(
            gate.line(),
            "the write-set gate failed: package-lock.json is outside the task's writes (add it to the task's writes, or revert it)"
        );
        assert!(
            gate.clone()
                .times(3)
                .line()
                .starts_with("the write-set gate failed 3 times in a row: ")
        );
        gate.name = Some("write-set, file-size".into());
        assert!(gate.line().starts_with("the write-set, file-size gates failed: "), "{gate}");
    }

    #[test]
    fn a_command_shows_how_it_ended_and_its_last_line() {
        let mut verify = Cause::new(CauseKind::Verify, "");
        verify.command = vec!["npm".into(), "test".into()];
        verify.exit_code = Some(1);
        verify.log_tail = Some("> test\n1 failing\n  AssertionError: 2 == 3\n\n".into());
        assert_eq!(
            verify.line(),
            "landing: verify failed (`npm test` exited 1: AssertionError: 2 == 3)"
        );
        verify.detail = "timed out".into();
        verify.exit_code = None;
        verify.log_tail = None;
        assert_eq!(
            verify.clone().times(3).line(),
            "landing: verify failed 3 times (`npm test` timed out)"
        );
        let mut check = verify.clone();
        check.kind = CauseKind::Check;
        check.command = vec!["cargo".into(), "test".into()];
        check.log_tail = Some("x".repeat(500));
        let line = check.line();
        assert!(line.starts_with("the check `cargo test` failed (timed out: xxx"), "{line}");
        assert!(line.chars().count() < 220 && line.ends_with("…)"), "{line}");
    }

    #[test]
    fn a_failed_command_is_told_by_the_line_that_names_the_failure() {
        let told = |output: &str| telling_line(output).unwrap();
        // node --test: the failing test, not the closing duration.
        let node = "TAP version 13\nok 1 - adds\nnot ok 2 - subtracts\n  ---\n  failureType: 'testCodeFailure'\n  ...\n1..2\n# tests 2\n# pass 1\n# fail 1\n# duration_ms 130.98\n";
        assert_eq!(told(node), "not ok 2 - subtracts");
        let cargo = "running 2 tests\ntest tests::add ... ok\ntest tests::sub ... FAILED\n\nfailures:\n\n---- tests::sub stdout ----\nthread 'tests::sub' panicked at src/lib.rs:9:5\n\ntest result: FAILED. 1 passed; 1 failed\nerror: test failed, to rerun pass `--lib`\n";
        assert_eq!(told(cargo), "test tests::sub ... FAILED");
        let pytest = "=================================== FAILURES ===================================\n___ test_sub ___\n>       assert sub(3, 2) == 1\nE       assert 5 == 1\ntests/test_math.py:6: AssertionError\n=== 1 failed, 1 passed in 0.02s ===\n";
        assert_eq!(told(pytest), "tests/test_math.py:6: AssertionError");
        let go = "--- FAIL: TestSub (0.00s)\n    math_test.go:8: got 5, want 1\nFAIL\nFAIL\texample.com/m\t0.002s\n";
        assert_eq!(told(go), "--- FAIL: TestSub (0.00s)");
        // Nothing names a failure: the last line, as before.
        assert_eq!(told("compiling\nsomething went wrong\n"), "something went wrong");
    }

    #[test]
    fn conflicts_name_their_files_and_other_kinds_their_detail() {
        let mut conflict = Cause::new(CauseKind::Conflict, "");
        conflict.paths = ["a", "b", "c", "d", "e"].map(String::from).to_vec();
        assert_eq!(conflict.line(), "landing: conflict with main in a, b, c and 2 more");
        assert_eq!(
            Cause::new(CauseKind::AdvisorStop, "the Advisor said STOP: out of scope\nmore").line(),
            "the Advisor said STOP: out of scope"
        );
        let json = serde_json::to_value(Cause::new(CauseKind::AdvisorStop, "x")).unwrap();
        assert_eq!(json, serde_json::json!({"kind": "advisor-stop", "detail": "x"}));
    }
}
