//! What a forge says about a pull request breeze opened, as breeze reads it from the
//! commands `land.pr_checks_command` and `land.pr_reviews_command`: its checks, its
//! reviews, and what breeze does about them. Closed sets of words, shared by the journal
//! (`pull_request_followed`) and `breeze status`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A pull request's checks, taken together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PrChecks {
    /// The forge reports no checks.
    None,
    /// At least one check runs or waits to run, and none failed.
    Pending,
    /// Every check passed (or was skipped).
    Passed,
    /// At least one check failed.
    Failed,
    /// The checks command failed or printed nothing breeze can read (asked again at the
    /// next look).
    Unknown,
}

impl PrChecks {
    /// Wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Pending => "pending",
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::Unknown => "unknown",
        }
    }
}

/// A pull request's reviews on the forge, taken together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PrReview {
    /// No review and no comment.
    None,
    /// Comments, or reviews that neither approve nor request changes.
    Commented,
    /// A reviewer's latest review requests changes.
    ChangesRequested,
    /// Approved, and no reviewer's latest review requests changes.
    Approved,
    /// The reviews command failed or printed nothing breeze can read.
    Unknown,
}

impl PrReview {
    /// Wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Commented => "commented",
            Self::ChangesRequested => "changes-requested",
            Self::Approved => "approved",
            Self::Unknown => "unknown",
        }
    }
}

/// What breeze does about what the forge says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PrFollowUp {
    /// Nothing to act on: the pull request waits (for its checks, for a merge).
    Waits,
    /// A failed check was asked to run again (`land.pr_rerun_command`): a flaky one that
    /// passes then is not the task's.
    Rerun,
    /// The failed checks fail on the target branch's tip too: main's failure, not the
    /// task's; nothing goes back to the worker.
    MainFails,
    /// The failed checks or the new review comments go back to the task's worker (a
    /// follow-up round).
    BackToWorker,
    /// The follow-up rounds are used up (`land.pr_rounds`): the task is escalated.
    Escalated,
}

impl PrFollowUp {
    /// Wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Waits => "waits",
            Self::Rerun => "rerun",
            Self::MainFails => "main-fails",
            Self::BackToWorker => "back-to-worker",
            Self::Escalated => "escalated",
        }
    }
}
