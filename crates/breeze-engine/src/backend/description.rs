//! The shape of a backend's description: what runs a role on it, how the role answers,
//! which model it runs, what it reports of its spend, what makes two roles on it the same
//! pair of eyes — and, for an agent CLI, its login check, its CLI home and a person's
//! session on it.

use breeze_agents::AgentKind;

use super::login::{Login, LoginQuestion};

/// What a backend is, as the engine asks it.
#[derive(Debug)]
pub struct Description {
    /// Its name in `breeze.toml` (`roles.<role>.backend`).
    pub name: &'static str,
    /// What runs a role on it.
    pub runs: Runs,
    /// How the role hands its answer back.
    pub answers: Answers,
    /// Which model a role runs on it.
    pub model: ModelChoice,
    /// What it reports of what a call spends.
    pub spend: Spend,
    /// What makes the worker and another role on it one pair of eyes.
    pub identity: Identity,
    /// The backend suggested instead when a pairing on this one is not independent.
    pub suggested_instead: &'static str,
}

impl Description {
    /// The agent CLI that runs its roles, if one does.
    pub fn agent(&self) -> Option<&'static AgentCli> {
        match self.runs {
            Runs::Agent(cli) => Some(cli),
            Runs::InProcess | Runs::Program => None,
        }
    }
}

/// What runs a role.
#[derive(Debug, Clone, Copy)]
pub enum Runs {
    /// breeze itself (the simulator): no program to find, nothing to confine or log in.
    InProcess,
    /// The program of the role's `command` argv, following the role process protocol.
    Program,
    /// An agent CLI, with its own home, login and interactive session.
    Agent(&'static AgentCli),
}

/// How a role hands its answer back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answers {
    /// In the file `$BREEZE_OUTPUT` names, or as the last JSON object on stdout.
    OutputFile,
    /// As its final message, checked against its message type's JSON schema.
    FinalMessage,
}

/// Which model a role runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelChoice {
    /// None that breeze knows of.
    None,
    /// `model` of the role's settings (empty: the CLI's default).
    Setting,
    /// `model` of the role's settings, else its role definition's.
    SettingElseDefinition,
}

/// What a backend reports of what a call spends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spend {
    /// Nothing: every call is of unknown cost.
    Nothing,
    /// Its cost and its tokens.
    CostAndTokens,
    /// Tokens; a cost only through `[budget.prices]` for its model.
    TokensPricedByModel,
    /// What each task's `[task.sim]` sets.
    Simulated,
}

/// What makes the worker and another role on the same backend one pair of eyes.
#[derive(Debug, Clone, Copy)]
pub enum Identity {
    /// The same argv (breeze cannot see what model a program calls).
    Program,
    /// The same model, as `same` tells two names of it apart; both on the CLI's default.
    Model {
        /// Whether two model names can mean one model.
        same: fn(&str, &str) -> bool,
    },
    /// None: a simulator is no model, so it is exempt.
    Simulator,
}

/// An agent CLI roles run on: what the engine knows of it beyond `breeze-agents`' argv
/// and stream.
#[derive(Debug)]
pub struct AgentCli {
    /// The CLI, as `breeze-agents` runs it (its program's name is `kind.as_str()`).
    pub kind: AgentKind,
    /// What it calls the id of a session a later call continues.
    pub session_id_name: &'static str,
    /// How to install it.
    pub install: &'static str,
    /// What to do when it is not logged in.
    pub log_in: &'static str,
    /// Whether it is logged in for a role, told from files and variables only.
    pub login: fn(&LoginQuestion<'_>) -> Login,
    /// What a role's CLI home holds of the person's state, and what leaves it.
    pub home: HomeLayout,
    /// The command line of a person's session on a worker's behalf (`breeze attach`).
    pub attach: fn(&Attach<'_>) -> Vec<String>,
}

/// What a role's CLI home gets from the person's own state before each call, and what
/// leaves it when the call ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HomeLayout {
    /// Copied as they are from the person's state folder.
    pub copied: &'static [&'static str],
    /// The CLI's own instructions file: the person's, then main's under a header.
    pub memory: &'static str,
    /// A file the CLI reads instead of `memory` when it exists: the person's is read in its
    /// place, and the home never has one.
    pub memory_override: Option<&'static str>,
    /// The project's instructions the CLI would read at the project's root, in order.
    pub project_files: &'static [&'static str],
    /// The login and what holds copies of it: removed when the call ends.
    pub login: &'static [&'static str],
    /// The person's account file beside the state folder, copied in under this name.
    pub account: Option<&'static str>,
    /// The CLI's TOML configuration, copied without its `[projects]` table (so no project's
    /// own configuration is trusted).
    pub config_without_projects: Option<&'static str>,
}

/// A person's session on a worker's behalf, as the CLI is asked to open it.
#[derive(Debug, Clone, Copy)]
pub struct Attach<'a> {
    /// The worker's session to continue; `None`: a new one.
    pub session: Option<&'a str>,
    /// The worker's model ("": the CLI's default).
    pub model: &'a str,
    /// `roles.worker.args`.
    pub args: &'a [String],
    /// Whether breeze confines the session.
    pub confined: bool,
}
