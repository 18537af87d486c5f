//! The `command` backend: any program following the role process protocol. breeze sees
//! no model and no spend of it; its argv is what two roles on it share or not.

use super::description::{Answers, Description, Identity, ModelChoice, Runs, Spend};

/// What `backend = "command"` is.
pub(super) static COMMAND: Description = Description {
    name: "command",
    runs: Runs::Program,
    answers: Answers::OutputFile,
    model: ModelChoice::None,
    spend: Spend::Nothing,
    identity: Identity::Program,
    suggested_instead: "codex",
};
