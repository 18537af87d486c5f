//! What each backend is — everything breeze knows of it besides running a role on it — in
//! one place per backend: `command.rs`, `claude.rs`, `codex.rs`, `scripted.rs`, each a
//! [`Description`] of plain data and functions (its login check, what it reports of its
//! spend, what makes two roles on it one pair of eyes, what it needs confined, its CLI
//! home, its person's session for `breeze attach`).
//!
//! The rest of the engine asks a backend's description and never matches on
//! [`BackendKind`]: [`BackendKind::describe`] is the one place that knows which backends
//! there are. A new backend is a variant here, its arm in `describe`, and its own file (an
//! agent CLI also its argv and stream in `breeze-agents`). How a role runs on it is
//! `crate::roles`' business, picked by what the description says runs it ([`Runs`]).

mod claude;
mod codex;
mod command;
mod description;
mod login;
mod scripted;

use serde::Deserialize;

pub use description::{
    AgentCli, Answers, Attach, Description, HomeLayout, Identity, ModelChoice, Runs, Spend,
};
pub use login::{Login, LoginQuestion};

/// How a role is run (`roles.<role>.backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// Any program following the breeze role protocol (JSON in on stdin, one JSON answer
    /// back).
    Command,
    /// Claude Code in print mode with stream-json output.
    Claude,
    /// `codex exec --json`.
    Codex,
    /// The built-in deterministic simulator (demo and tests).
    Scripted,
}

impl BackendKind {
    /// Every backend, in the order `breeze.toml`'s messages list them.
    pub const ALL: [BackendKind; 4] =
        [BackendKind::Command, BackendKind::Claude, BackendKind::Codex, BackendKind::Scripted];

    /// What the backend is.
    pub fn describe(self) -> &'static Description {
        match self {
            Self::Command => &command::COMMAND,
            Self::Claude => &claude::CLAUDE,
            Self::Codex => &codex::CODEX,
            Self::Scripted => &scripted::SCRIPTED,
        }
    }

    /// Config spelling.
    pub fn as_str(self) -> &'static str {
        self.describe().name
    }
}

/// The agent CLIs roles run on, each once (claude, codex).
pub fn agent_clis() -> impl Iterator<Item = &'static AgentCli> {
    BackendKind::ALL.into_iter().filter_map(|kind| kind.describe().agent())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_backend_is_spelled_in_breeze_toml_as_its_description_names_it() {
        for kind in BackendKind::ALL {
            let read = BackendKind::deserialize(serde_json::Value::from(kind.as_str())).unwrap();
            assert_eq!(read, kind);
        }
    }

    #[test]
    fn each_agent_cli_is_the_one_its_backend_names() {
        let names: Vec<&str> = agent_clis().map(|cli| cli.kind.as_str()).collect();
        assert_eq!(names, ["claude", "codex"]);
        for kind in BackendKind::ALL {
            if let Some(cli) = kind.describe().agent() {
                assert_eq!(cli.kind.as_str(), kind.as_str());
            }
        }
    }
}
