//! The preflight's review check: whether the reviewer and the Advisor are a second pair
//! of eyes on the worker's work ([`crate::independence`]). Under `[review] independent =
//! "require"` a pairing on the worker's own backend and model is a problem — `breeze run`
//! and `breeze resume` stop before anything is created; under "warn" it is a warning (the
//! run start says every pairing again); "off" checks nothing.

use std::path::Path;

use breeze_protocol::CheckOutcome;

use super::found::Preflight;
use crate::config::{Config, Independence};

/// One check per pairing: the reviewer's, and the Advisor's when it is enabled.
pub(super) fn review_checks(found: &mut Preflight, root: &Path, config: &Config) {
    let mode = config.independent;
    if mode == Independence::Off {
        found.push(
            "review",
            "review.independent",
            CheckOutcome::Skipped,
            "review independence is not checked ([review] independent = \"off\")",
            None,
        );
        return;
    }
    for pairing in crate::independence::pairings(config, root) {
        let role = pairing.role.as_str();
        let (outcome, message, hint) = match (pairing.breaks(), mode) {
            (false, _) => (CheckOutcome::Ok, pairing.line(), None),
            (true, Independence::Require) => (
                CheckOutcome::Problem,
                format!(
                    "[review] independent = \"require\", but the {role} runs on the worker's own backend and model: {}",
                    pairing.line()
                ),
                Some(format!(
                    "{}; or set [review] independent = \"warn\" in breeze.toml to run anyway",
                    pairing.remedy()
                )),
            ),
            (true, _) => (
                CheckOutcome::Warning,
                pairing.line(),
                Some(format!(
                    "{} ([review] independent = \"{}\": the run goes on)",
                    pairing.remedy(),
                    mode.as_str()
                )),
            ),
        };
        found.push("review", format!("roles.{role}"), outcome, message, hint);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preflight::found::line;

    fn checks(config: &Config) -> Vec<breeze_protocol::DoctorCheck> {
        let root = tempfile::tempdir().unwrap();
        let mut found = Preflight::default();
        review_checks(&mut found, root.path(), config);
        found.checks
    }

    #[test]
    fn require_makes_a_shared_model_a_problem_warn_a_warning_and_off_checks_nothing() {
        let mut config = Config::defaults();
        let lines: Vec<(CheckOutcome, String)> =
            checks(&config).into_iter().map(|check| (check.outcome, check.message)).collect();
        assert_eq!(
            lines,
            [
                (
                    CheckOutcome::Ok,
                    "worker claude (sonnet) → reviewer claude (opus): independent (another model)"
                        .to_string()
                ),
                (
                    CheckOutcome::Ok,
                    "worker claude (sonnet) → advisor claude (opus): independent (another model)"
                        .to_string()
                ),
            ]
        );
        config.reviewer.model = "sonnet".into();
        config.independent = Independence::Require;
        let found = checks(&config);
        let broken = &found[0];
        assert_eq!(
            (broken.outcome, broken.subject.as_str()),
            (CheckOutcome::Problem, "roles.reviewer")
        );
        assert!(
            broken.message.contains("the reviewer runs on the worker's own backend and model"),
            "{}",
            broken.message
        );
        assert!(
            broken
                .message
                .contains("worker claude (sonnet) → reviewer claude (sonnet): NOT independent"),
            "{}",
            broken.message
        );
        let hint = broken.hint.as_deref().unwrap();
        assert!(
            hint.contains("give roles.reviewer another backend (e.g. backend = \"codex\")"),
            "{hint}"
        );
        assert!(
            hint.ends_with("or set [review] independent = \"warn\" in breeze.toml to run anyway"),
            "{hint}"
        );
        assert_eq!(found[1].outcome, CheckOutcome::Ok, "the Advisor is on opus");
        // The error `breeze run` stops with names the pairing and the remedy.
        let err = Preflight { checks: found, ..Preflight::default() }.into_error().unwrap_err();
        assert_eq!(err.exit_code(), breeze_protocol::ExitCode::Usage);
        assert!(err.to_string().contains("NOT independent (the same backend and model)"), "{err}");

        config.independent = Independence::Warn;
        let warned = &checks(&config)[0];
        assert_eq!(warned.outcome, CheckOutcome::Warning);
        assert_eq!(
            line(warned),
            "worker claude (sonnet) → reviewer claude (sonnet): NOT independent (the same backend and model): give roles.reviewer another backend (e.g. backend = \"codex\") or another model (model = \"...\") ([review] independent = \"warn\": the run goes on)"
        );
        config.independent = Independence::Off;
        let off = checks(&config);
        assert_eq!(off.len(), 1);
        assert_eq!(off[0].outcome, CheckOutcome::Skipped);
    }
}
