//! Where each role and project command may connect: the run's allow-list
//! (`sandbox.network`) and, for a role on an agent CLI, its vendor's API — plus every
//! endpoint the role's own settings name (a base URL in its environment or arguments: the
//! person wrote it in `breeze.toml`). Refusals are journaled (`network_refused`).

use std::sync::Arc;

use breeze_protocol::EventKind;
use breeze_supervise::{HostRule, NetworkAccess};

use breeze_agents::AgentKind;

use crate::backend::Runs;
use crate::config::NetworkPolicy;
use crate::journal::RunStore;

/// The hosts each agent CLI needs for its model API and its login's refresh.
fn vendor_hosts(kind: AgentKind) -> &'static [&'static str] {
    match kind {
        AgentKind::Claude => &["api.anthropic.com", "console.anthropic.com", "claude.ai"],
        AgentKind::Codex => &["api.openai.com", "chatgpt.com", "auth.openai.com"],
    }
}

/// The endpoints named in a role's environment values and arguments (`http://…`,
/// `https://…`).
fn named_endpoints<'a>(texts: impl Iterator<Item = &'a str>) -> Vec<HostRule> {
    let mut rules = Vec::new();
    for text in texts {
        for (start, _) in text.match_indices("http") {
            let rest = &text[start..];
            if !(rest.starts_with("http://") || rest.starts_with("https://")) {
                continue;
            }
            let end = rest
                .find(|c: char| c.is_whitespace() || "\"',;}]".contains(c))
                .unwrap_or(rest.len());
            if let Ok(rule) = HostRule::parse(&rest[..end])
                && !rules.contains(&rule)
            {
                rules.push(rule);
            }
        }
    }
    rules
}

/// The network a role gets: `None` with `sandbox.network = "open"` or for a role run inside
/// breeze.
pub(crate) fn for_role(
    policy: &NetworkPolicy,
    runs: Runs,
    argv: &[String],
    env: &[(String, String)],
    refusals: Refusals,
) -> Option<NetworkAccess> {
    let NetworkPolicy::AllowList(hosts) = policy else { return None };
    let mut allow = hosts.clone();
    match runs {
        Runs::InProcess => return None,
        Runs::Agent(cli) => {
            allow.extend(
                vendor_hosts(cli.kind).iter().filter_map(|host| HostRule::parse(host).ok()),
            );
        }
        Runs::Program => {}
    }
    let texts = argv.iter().map(String::as_str).chain(env.iter().map(|(_, value)| value.as_str()));
    allow.extend(named_endpoints(texts));
    Some(NetworkAccess { allow, on_refused: refusals.sink() })
}

/// A project command's environment: the roles' allow-list, the toolchains' variables and
/// `sandbox.env` of `engine_env`, then `set`.
pub(crate) fn command_env(
    config: &crate::config::Config,
    engine_env: impl IntoIterator<Item = (String, String)>,
    set: &[(String, String)],
) -> Vec<(String, String)> {
    let names: Vec<String> = breeze_supervise::TOOLCHAIN_VARS
        .iter()
        .map(|name| name.to_string())
        .chain(config.command_env.iter().cloned())
        .collect();
    breeze_supervise::scrubbed_env(engine_env, &names, set)
}

/// The network a project command gets: the run's allow-list only.
pub(crate) fn for_command(policy: &NetworkPolicy, refusals: Refusals) -> Option<NetworkAccess> {
    let NetworkPolicy::AllowList(hosts) = policy else { return None };
    Some(NetworkAccess { allow: hosts.clone(), on_refused: refusals.sink() })
}

/// Who journals a process's refusals, and as whom.
pub(crate) struct Refusals {
    /// Where they are journaled (`None`: a preflight trial, logged only).
    pub store: Option<RunStore>,
    pub task: String,
    /// The role or the command's config key.
    pub by: String,
}

impl Refusals {
    fn sink(self) -> breeze_supervise::RefusalSink {
        Arc::new(move |refusal: breeze_supervise::Refusal| {
            tracing::warn!(task = %self.task, by = %self.by, "network refused: {}:{}", refusal.host, refusal.port);
            if let Some(store) = &self.store {
                store.record_later(EventKind::NetworkRefused {
                    task: self.task.clone(),
                    by: self.by.clone(),
                    host: refusal.host,
                    port: refusal.port,
                    method: refusal.method,
                });
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_in_settings_are_reachable() {
        let argv = [
            "-c".to_string(),
            "model_providers.mock={name=\"mock\",base_url=\"http://127.0.0.1:4000/v1\"}"
                .to_string(),
        ];
        let rules = named_endpoints(
            argv.iter().map(String::as_str).chain(["https://bedrock.example.com/x"]),
        );
        assert_eq!(
            rules,
            vec![
                HostRule { host: "127.0.0.1".into(), port: Some(4000) },
                HostRule { host: "bedrock.example.com".into(), port: Some(443) },
            ]
        );
    }
}
