//! `breeze-doctor.v1`: what `breeze doctor --json` prints — what this machine gives breeze
//! and the preflight's verdict on the repository (the same checks `breeze run` makes before
//! it creates anything), for CI.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::version::BreezeDoctorV1;

/// The doctor's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DoctorReport {
    /// Always `breeze-doctor.v1`.
    pub schema_version: BreezeDoctorV1,
    /// No check found a problem: `breeze run` would start.
    pub ok: bool,
    /// Kernel confinement of role processes, as one line (`Landlock ABI 7: ...`).
    pub confinement: String,
    /// Whether unprivileged user namespaces are allowed (`null`: could not tell).
    pub user_namespaces: Option<bool>,
    /// The agent CLIs and git found on PATH.
    pub tools: Vec<DoctorTool>,
    /// The repository's root, when run inside one.
    pub repository: Option<String>,
    /// Every preflight check, in the order made.
    pub checks: Vec<DoctorCheck>,
    /// The lane setup's trial run, when `worktree.setup` is set and it was not skipped.
    pub setup: Option<SetupTrial>,
}

/// A program found (or not) on PATH.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DoctorTool {
    /// `claude`, `codex`, `git`.
    pub name: String,
    /// Where it was found.
    pub path: Option<String>,
    /// The first line of its `--version`.
    pub version: Option<String>,
    /// Why it was not found or its version could not be read.
    pub error: Option<String>,
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CheckOutcome {
    /// Passed.
    Ok,
    /// Worth knowing; the run goes on.
    Warning,
    /// The run would not start (exit 2).
    Problem,
    /// Cannot be told cheaply and offline (e.g. a login held by a helper program).
    NotChecked,
    /// Skipped on request (`--no-setup`, `--skip-setup-check`, `[review] independent =
    /// "off"`).
    Skipped,
}

impl CheckOutcome {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warning => "warning",
            Self::Problem => "problem",
            Self::NotChecked => "not-checked",
            Self::Skipped => "skipped",
        }
    }
}

/// One preflight check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DoctorCheck {
    /// What was checked: `config`, `plan`, `backend`, `login`, `program`, `review` (the
    /// reviewer's and the Advisor's pairing with the worker), `budget` (a backend a cap cannot
    /// hold), `setup`, and any later kind (a consumer should accept new ones).
    pub check: String,
    /// What it was checked for: `breeze.toml`, `roles.worker`, `worktree.setup`,
    /// `review.checks[0]`, `land.verify`, `Plans.md`, `review.independent`.
    pub subject: String,
    /// How it came out.
    pub outcome: CheckOutcome,
    /// One line: what was found.
    pub message: String,
    /// What to do, for a problem or a warning.
    pub hint: Option<String>,
    /// The folders searched for a program (the PATH it will run with), in order.
    pub searched: Vec<String>,
}

/// The lane setup run once in a throwaway checkout of main's tip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetupTrial {
    /// `worktree.setup`.
    pub argv: Vec<String>,
    /// What the result is cached by: the argv and these files' content ids on main.
    pub inputs: Vec<SetupInput>,
    /// The cache key (a hash of the argv and the inputs).
    pub key: String,
    /// Whether this result was read from the cache (`.breeze/preflight/setup.json`).
    pub cached: bool,
    /// When it ran (RFC 3339).
    pub ran_at: String,
    /// How long it took, in seconds.
    pub seconds: f64,
    /// Whether it succeeded.
    pub succeeded: bool,
    /// How it ended (`exited with code 0`, `timed out`).
    pub ending: String,
    /// The last lines of its output, when it failed.
    pub output_tail: Option<String>,
    /// What it added or changed in the checkout, summarised by top-level entry.
    pub created: Vec<SetupPath>,
    /// Tracked files it changed.
    pub changed: Vec<String>,
    /// Tracked files it removed.
    pub removed: Vec<String>,
    /// One line: `npm install creates package-lock.json and node_modules/ (2,345 files)`.
    pub summary: String,
}

/// One file the setup's result depends on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetupInput {
    /// Repository-relative path.
    pub path: String,
    /// Its git blob id on main.
    pub id: String,
}

/// A path the setup created: a file, or a folder with the files in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetupPath {
    /// Repository-relative; a folder ends in `/`.
    pub path: String,
    /// Files in it (1 for a file).
    pub files: u64,
    /// Whether git ignores it (an ignored path never reaches a commit).
    pub ignored: bool,
}
