//! The `scripted` backend: the built-in simulator (`crate::roles::scripted`), run inside
//! breeze — nothing to find, confine or log in — reporting what `[task.sim]` sets.

use super::description::{Answers, Description, Identity, ModelChoice, Runs, Spend};

/// What `backend = "scripted"` is.
pub(super) static SCRIPTED: Description = Description {
    name: "scripted",
    runs: Runs::InProcess,
    answers: Answers::FinalMessage,
    model: ModelChoice::None,
    spend: Spend::Simulated,
    identity: Identity::Simulator,
    suggested_instead: "codex",
};
