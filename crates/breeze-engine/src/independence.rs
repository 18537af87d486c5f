//! A second pair of eyes, really second: whether the reviewer and the Advisor run on
//! another backend or another model than the worker (`[review] independent`).
//!
//! A pairing breaks independence when both roles run the same model the same way: the same
//! agent CLI with the same model (Claude Code's `sonnet` and `claude-sonnet-4-5` count as
//! one — an alias names every model of its family), Codex with no model set on both (its
//! default), or `command` with the same argv. Another backend, or another model on the
//! same CLI, is independent; a `command` role is taken at its word (breeze cannot see what
//! model a program calls). The simulator (`scripted`) is exempt: it is no model.
//!
//! [`pairings`] says what is in force — `breeze plan` and the run start print it
//! ([`describe`], [`report`]); the preflight (`breeze run`, `breeze resume`, `breeze
//! doctor`) turns each pairing into a check, and refuses one that breaks independence under
//! `"require"` before the run creates anything (exit 2).

use std::path::Path;

use breeze_protocol::Role;

use crate::backend::{BackendKind, Identity};
use crate::config::{Config, Independence, RoleConfig};

/// What runs a role, as far as independence goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runner {
    /// The backend.
    pub backend: BackendKind,
    /// The model (claude, codex; `None`: the CLI's default), or the argv (`command`).
    pub what: Option<String>,
}

impl Runner {
    /// What runs `role` in the repository at `repo_root` (its definition gives claude's
    /// default model).
    pub fn of(repo_root: &Path, role: Role, settings: &RoleConfig) -> Runner {
        let what = match settings.backend.describe().identity {
            Identity::Program => Some(settings.command.join(" ")),
            Identity::Model { .. } | Identity::Simulator => {
                crate::roles::definition::model_of(repo_root, role, settings)
            }
        };
        Runner { backend: settings.backend, what }
    }

    /// What makes two roles on its backend one pair of eyes.
    fn identity(&self) -> Identity {
        self.backend.describe().identity
    }
}

impl std::fmt::Display for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let backend = self.backend.as_str();
        match (self.identity(), &self.what) {
            (Identity::Simulator, _) => write!(f, "{backend} (the simulator)"),
            (Identity::Program, Some(argv)) => write!(f, "{backend} `{argv}`"),
            (_, Some(model)) => write!(f, "{backend} ({model})"),
            (_, None) => write!(f, "{backend} (its default model)"),
        }
    }
}

/// How one role pairs with the worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Another backend, model or program; why.
    Independent(&'static str),
    /// The worker's own backend and model; why.
    Same(&'static str),
    /// The simulator on either side.
    Exempt,
}

/// The worker and one role that judges or advises its work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pairing {
    /// The reviewer or the Advisor.
    pub role: Role,
    /// What runs the worker.
    pub worker: Runner,
    /// What runs `role`.
    pub other: Runner,
    /// Whether `role` is a second pair of eyes.
    pub verdict: Verdict,
}

impl Pairing {
    /// Whether the pairing breaks independence.
    pub fn breaks(&self) -> bool {
        matches!(self.verdict, Verdict::Same(_))
    }

    /// `worker claude (sonnet) → reviewer codex (gpt-5): independent (another backend)`.
    pub fn line(&self) -> String {
        let verdict = match &self.verdict {
            Verdict::Independent(why) => format!("independent ({why})"),
            Verdict::Same(why) => format!("NOT independent ({why})"),
            Verdict::Exempt => "exempt (the simulator is no model)".to_string(),
        };
        format!("worker {} → {} {}: {verdict}", self.worker, self.role.as_str(), self.other)
    }

    /// What to change so the pairing is independent.
    pub fn remedy(&self) -> String {
        let role = self.role.as_str();
        let other_backend = self.worker.backend.describe().suggested_instead;
        match self.worker.identity() {
            Identity::Program => format!(
                "give roles.{role} another command (or another backend, e.g. backend = \"{other_backend}\")"
            ),
            _ => format!(
                "give roles.{role} another backend (e.g. backend = \"{other_backend}\") or another model (model = \"...\")"
            ),
        }
    }
}

/// The pairings in force: the reviewer's, and the Advisor's when it is enabled — each
/// also with the fallbacks (`[roles.<role>] fallback`) that may take either side's calls.
pub fn pairings(config: &Config, repo_root: &Path) -> Vec<Pairing> {
    let sides = |role: Role| {
        let settings = config.role(role);
        let mut runners = vec![Runner::of(repo_root, role, settings)];
        runners.extend(settings.on_fallback().map(|on| Runner::of(repo_root, role, &on)));
        runners
    };
    let workers = sides(Role::Worker);
    let mut pairings = Vec::new();
    for role in config.run_roles().into_iter().filter(|role| *role != Role::Worker) {
        for other in sides(role) {
            for worker in &workers {
                let verdict = judge(worker, &other);
                pairings.push(Pairing {
                    role,
                    verdict,
                    worker: worker.clone(),
                    other: other.clone(),
                });
            }
        }
    }
    pairings
}

/// Whether `other` is a second pair of eyes on `worker`'s work.
pub fn judge(worker: &Runner, other: &Runner) -> Verdict {
    let simulated = |runner: &Runner| matches!(runner.identity(), Identity::Simulator);
    if simulated(worker) || simulated(other) {
        return Verdict::Exempt;
    }
    if worker.backend != other.backend {
        return Verdict::Independent("another backend");
    }
    match (worker.identity(), &worker.what, &other.what) {
        (Identity::Program, a, b) if a == b => Verdict::Same("the same command"),
        (Identity::Program, _, _) => Verdict::Independent("another command"),
        (_, None, None) => Verdict::Same("the same backend and its default model"),
        (Identity::Model { same }, Some(a), Some(b)) if same(a, b) => {
            Verdict::Same("the same backend and model")
        }
        _ => Verdict::Independent("another model"),
    }
}

/// What the run start says: one line per pairing, and
/// whether each is independent. Nothing under `"off"`.
pub fn report(config: &Config, repo_root: &Path) -> Vec<(String, bool)> {
    if config.independent == Independence::Off {
        return Vec::new();
    }
    pairings(config, repo_root)
        .iter()
        .map(|pairing| {
            let mut line = pairing.line();
            if pairing.breaks() {
                line.push_str(&format!(
                    " — {} ([review] independent = \"{}\")",
                    pairing.remedy(),
                    config.independent.as_str()
                ));
            }
            (line, !pairing.breaks())
        })
        .collect()
}

/// The pairings as `breeze plan` prints them: a heading naming the
/// mode, then one line per pairing (`!` before one that is not independent).
pub fn describe(config: &Config, repo_root: &Path) -> String {
    let mode = config.independent.as_str();
    if config.independent == Independence::Off {
        return format!("review independence: not checked ([review] independent = \"{mode}\")\n");
    }
    let mut out = format!("review independence ([review] independent = \"{mode}\"):\n");
    for (line, independent) in report(config, repo_root) {
        out.push_str(&format!("  {} {line}\n", if independent { "⇄" } else { "!" }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runner(backend: BackendKind, what: Option<&str>) -> Runner {
        Runner { backend, what: what.map(str::to_string) }
    }

    #[test]
    fn the_same_backend_and_model_breaks_independence_and_another_of_either_keeps_it() {
        use BackendKind::*;
        let verdict = |a: Runner, b: Runner| judge(&a, &b);
        assert_eq!(
            verdict(runner(Claude, Some("sonnet")), runner(Claude, Some("opus"))),
            Verdict::Independent("another model")
        );
        assert!(matches!(
            verdict(runner(Claude, Some("sonnet")), runner(Claude, Some("claude-sonnet-4-5"))),
            Verdict::Same(_)
        ));
        assert!(matches!(
            verdict(
                runner(Claude, Some("claude-sonnet-4-5")),
                runner(Claude, Some("claude-sonnet-4-5-20250929"))
            ),
            Verdict::Same(_)
        ));
        assert_eq!(
            verdict(
                runner(Claude, Some("claude-sonnet-4-5")),
                runner(Claude, Some("claude-sonnet-4"))
            ),
            Verdict::Independent("another model")
        );
        assert!(matches!(verdict(runner(Codex, None), runner(Codex, None)), Verdict::Same(_)));
        assert_eq!(
            verdict(runner(Codex, None), runner(Codex, Some("gpt-5"))),
            Verdict::Independent("another model")
        );
        assert_eq!(
            verdict(runner(Claude, Some("opus")), runner(Codex, None)),
            Verdict::Independent("another backend")
        );
        assert!(matches!(
            verdict(runner(Command, Some("sh w.sh")), runner(Command, Some("sh w.sh"))),
            Verdict::Same(_)
        ));
        assert_eq!(
            verdict(runner(Command, Some("sh w.sh")), runner(Command, Some("sh r.sh"))),
            Verdict::Independent("another command")
        );
        assert_eq!(verdict(runner(Scripted, None), runner(Scripted, None)), Verdict::Exempt);
    }

    #[test]
    fn the_defaults_pair_sonnet_with_opus_and_a_shared_model_is_said_with_its_remedy() {
        let root = tempfile::tempdir().unwrap();
        let mut config = Config::defaults();
        let report = report(&config, root.path());
        assert_eq!(
            report,
            [
                (
                    "worker claude (sonnet) → reviewer claude (opus): independent (another model)"
                        .to_string(),
                    true
                ),
                (
                    "worker claude (sonnet) → advisor claude (opus): independent (another model)"
                        .to_string(),
                    true
                ),
            ]
        );
        config.reviewer.model = "sonnet".into();
        let pairings = pairings(&config, root.path());
        assert!(pairings[0].breaks() && !pairings[1].breaks(), "{pairings:?}");
        assert_eq!(
            pairings[0].remedy(),
            "give roles.reviewer another backend (e.g. backend = \"codex\") or another model (model = \"...\")"
        );
        config.independent = Independence::Warn;
        assert_eq!(
            describe(&config, root.path()).lines().nth(1),
            Some(
                "  ! worker claude (sonnet) → reviewer claude (sonnet): NOT independent (the same backend and model) — give roles.reviewer another backend (e.g. backend = \"codex\") or another model (model = \"...\") ([review] independent = \"warn\")"
            )
        );
        config.independent = Independence::Off;
        assert!(super::report(&config, root.path()).is_empty());
        assert_eq!(
            describe(&config, root.path()),
            "review independence: not checked ([review] independent = \"off\")\n"
        );
    }

    #[test]
    fn a_fallback_is_paired_with_the_worker_too() {
        let root = tempfile::tempdir().unwrap();
        let mut config = Config::defaults();
        config.worker.backend = BackendKind::Codex;
        config.worker.model = "gpt-5".into();
        config.reviewer.fallback = Some(crate::config::Fallback {
            backend: BackendKind::Codex,
            model: "gpt-5".into(),
            args: Vec::new(),
            env: Vec::new(),
            pass_credentials: false,
        });
        let lines: Vec<String> = pairings(&config, root.path()).iter().map(Pairing::line).collect();
        assert!(
            lines.contains(
                &"worker codex (gpt-5) → reviewer codex (gpt-5): NOT independent (the same backend and model)"
                    .to_string()
            ),
            "the reviewer's fallback on the worker's model is found: {lines:?}"
        );
        assert!(
            lines.contains(
                &"worker codex (gpt-5) → reviewer claude (opus): independent (another backend)"
                    .to_string()
            )
        );
    }
}
