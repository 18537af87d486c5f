//! `breeze.toml` as the preflight sees it: every unknown key and every value breeze cannot
//! take, each a problem of its own; the configuration without them for the other checks.

use std::path::Path;

use breeze_protocol::CheckOutcome;

use super::found::Preflight;
use crate::config::{CONFIG_FILE, Config};

/// `breeze.toml`: every unknown key and every value breeze cannot take a problem of its own
/// ([`crate::config::value_problems`]); the configuration without them (their defaults in
/// their place) for the other checks, `None` when the file is no TOML.
pub(super) fn config_checks(
    found: &mut Preflight,
    root: &Path,
    given: Option<&Config>,
) -> Option<Config> {
    if let Some(config) = given {
        return Some(config.clone());
    }
    let path = root.join(CONFIG_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            found.push(
                "config",
                CONFIG_FILE,
                CheckOutcome::Ok,
                "no breeze.toml: every key has its default (`breeze init` writes one for this project)",
                None,
            );
            return Some(Config::defaults());
        }
        Err(err) => {
            let message = format!("{CONFIG_FILE}: cannot read it: {err}");
            found.push("config", CONFIG_FILE, CheckOutcome::Problem, message, None);
            return None;
        }
    };
    let unknown = crate::config::unknown_keys(&text);
    for key in &unknown {
        let hint = match &key.suggestion {
            Some(_) => "fix its name (every key with its default and what it does: `breeze init --print-config`)".to_string(),
            None => "remove it (every key with its default and what it does: `breeze init --print-config`)".to_string(),
        };
        found.push(
            "config",
            CONFIG_FILE,
            CheckOutcome::Problem,
            format!("{CONFIG_FILE}: {key}"),
            Some(hint),
        );
    }
    // Every value breeze cannot take, each named; the other checks go on with the rest.
    let (refused, config) = crate::config::value_problems(&text);
    for problem in &refused {
        found.push(
            "config",
            CONFIG_FILE,
            CheckOutcome::Problem,
            format!("{CONFIG_FILE}: {problem}"),
            Some("fix it (every key with its default and what it does: `breeze init --print-config`)".into()),
        );
    }
    if unknown.is_empty() && refused.is_empty() {
        found.push(
            "config",
            CONFIG_FILE,
            CheckOutcome::Ok,
            format!("{CONFIG_FILE} is valid"),
            None,
        );
    }
    config
}
