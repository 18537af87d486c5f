//! The plan a new run would take: it loads, and it is not `breeze init`'s untouched
//! template.

use std::path::Path;

use breeze_protocol::CheckOutcome;

use super::found::{Preflight, PreflightOptions, Stage};
use super::template;

/// The plan loads and is not init's template; the plan, when it loads.
pub(super) fn plan_checks(
    found: &mut Preflight,
    root: &Path,
    options: &PreflightOptions,
) -> Option<breeze_plan::Plan> {
    let path = match &options.plan {
        Some(path) => Some(path.clone()),
        None => {
            ["plan.toml", "Plans.md"].into_iter().map(|name| root.join(name)).find(|p| p.is_file())
        }
    };
    let Some(path) = path.filter(|path| path.is_file()) else {
        // `breeze run` says what to do about a missing plan itself.
        if options.stage == Stage::Doctor {
            found.push(
                "plan",
                "plan",
                CheckOutcome::Warning,
                "no plan: neither plan.toml nor Plans.md is at the repository root",
                Some("write one with `breeze init` or `breeze draft \"GOAL\"`".into()),
            );
        }
        return None;
    };
    let shown = path.strip_prefix(root).unwrap_or(&path).display().to_string();
    if let Some((line, _)) =
        std::fs::read_to_string(&path).ok().as_deref().and_then(template::template_marker)
    {
        let (message, hint) = template::template_message(&shown, line);
        found.push("plan", &shown, CheckOutcome::Problem, message, Some(hint));
        return None;
    }
    match breeze_plan::load_with_extensions(&path, crate::plan_extensions::PLAN_EXTENSIONS) {
        Ok(plan) => {
            let message = format!("{shown}: {} tasks", plan.tasks.len());
            found.push("plan", &shown, CheckOutcome::Ok, message, None);
            Some(plan)
        }
        Err(err) => {
            let message = err.to_string().lines().next().unwrap_or_default().to_string();
            let hint = Some("fix the plan, then check it with `breeze plan`".to_string());
            found.push("plan", &shown, CheckOutcome::Problem, message, hint);
            None
        }
    }
}
