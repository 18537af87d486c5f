//! Each role's backend as a run will start it: the built-in simulator, a `command` role's
//! programs found where the role will look, an agent CLI found and logged in (as far as
//! files and variables tell, `login.rs`) — one line for the roles that share a verdict.

use std::collections::BTreeMap;
use std::path::Path;

use breeze_agents::AgentKind;
use breeze_protocol::{CheckOutcome, DoctorCheck, Role};

use super::found::{Preflight, join_and, push_lookup};
use super::{login, programs};
use crate::backend::{AgentCli, Login, Runs};
use crate::config::{Config, RoleConfig};

/// Each role's backend is installed (and logged in, where that can be told).
pub(super) fn backend_checks(
    found: &mut Preflight,
    root: &Path,
    config: &Config,
    engine_env: &[(String, String)],
) {
    let mut agents: BTreeMap<&'static str, (&'static AgentCli, Vec<Role>)> = BTreeMap::new();
    for role in config.run_roles() {
        let settings = config.role(role);
        let subject = format!("roles.{}", role.as_str());
        match settings.backend.describe().runs {
            Runs::InProcess => {
                found.push(
                    "backend",
                    subject,
                    CheckOutcome::Ok,
                    format!(
                        "roles.{}: the built-in {} backend",
                        role.as_str(),
                        settings.backend.as_str()
                    ),
                    None,
                );
            }
            Runs::Program => {
                for program in programs::programs_of(&settings.command) {
                    let lookup = programs::find(&program, root, engine_env);
                    let what = format!("roles.{}.command", role.as_str());
                    push_lookup(found, "backend", &subject, &what, lookup);
                }
            }
            Runs::Agent(cli) => {
                let name = cli.kind.as_str();
                agents.entry(name).or_insert_with(|| (cli, Vec::new())).1.push(role);
            }
        }
    }
    for (name, (cli, roles)) in agents {
        let subject: Vec<String> =
            roles.iter().map(|role| format!("roles.{}", role.as_str())).collect();
        let subject = subject.join(", ");
        let lookup = programs::find(name, root, engine_env);
        if lookup.found.is_err() {
            let tables: Vec<String> =
                roles.iter().map(|role| format!("[roles.{}]", role.as_str())).collect();
            let hint = format!(
                "install {name}: {}, or set another backend in {} of breeze.toml",
                cli.install,
                tables.join(", ")
            );
            found.checks.push(DoctorCheck {
                check: "backend".into(),
                subject,
                outcome: CheckOutcome::Problem,
                message: format!("{lookup} (the backend of {})", role_list(&roles)),
                hint: Some(hint),
                searched: lookup.searched,
            });
            continue;
        }
        found.checks.push(DoctorCheck {
            check: "backend".into(),
            subject: subject.clone(),
            outcome: CheckOutcome::Ok,
            message: format!("{lookup}, for {}", role_list(&roles)),
            hint: None,
            searched: Vec::new(),
        });
        login_checks(found, config, cli, &roles, engine_env);
    }
}

/// One line per verdict: the roles logged in the same way share it.
fn login_checks(
    found: &mut Preflight,
    config: &Config,
    cli: &'static AgentCli,
    roles: &[Role],
    engine_env: &[(String, String)],
) {
    let mut verdicts: Vec<(Login, Vec<Role>)> = Vec::new();
    for role in roles {
        let settings = config.role(*role);
        let role_env = role_env(settings, cli.kind, engine_env);
        let verdict = login::login(cli, &role_env, engine_env, &settings.args);
        match verdicts.iter_mut().find(|(seen, _)| *seen == verdict) {
            Some((_, roles)) => roles.push(*role),
            None => verdicts.push((verdict, vec![*role])),
        }
    }
    let name = cli.kind.as_str();
    for (verdict, roles) in verdicts {
        let subject: Vec<String> =
            roles.iter().map(|role| format!("roles.{}", role.as_str())).collect();
        let (outcome, message, hint) = match verdict {
            Login::Yes(how) => (
                CheckOutcome::Ok,
                format!("{name} is logged in for {} ({how})", role_list(&roles)),
                None,
            ),
            Login::Unknown(why) => (
                CheckOutcome::NotChecked,
                format!("{name}'s login for {} is not checked: {why}", role_list(&roles)),
                None,
            ),
            Login::No(what) => (
                CheckOutcome::Problem,
                format!("{name} is not logged in for {} ({what})", role_list(&roles)),
                Some(cli.log_in.to_string()),
            ),
        };
        found.push("login", subject.join(", "), outcome, message, hint);
    }
}

/// The environment the role's CLI gets, as far as its login is concerned.
fn role_env(
    settings: &RoleConfig,
    kind: AgentKind,
    engine: &[(String, String)],
) -> Vec<(String, String)> {
    let mut env = breeze_supervise::scrubbed_env(engine.iter().cloned(), &settings.env, &[]);
    if settings.pass_credentials {
        let patterns = kind.credential_patterns();
        let passes = |name: &str| {
            patterns.iter().any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == *pattern,
            })
        };
        env.extend(engine.iter().filter(|(name, _)| passes(name)).cloned());
    }
    env
}

/// `roles.worker, roles.reviewer and roles.advisor`.
fn role_list(roles: &[Role]) -> String {
    let names: Vec<String> = roles.iter().map(|role| format!("roles.{}", role.as_str())).collect();
    join_and(&names)
}
