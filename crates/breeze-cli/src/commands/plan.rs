//! `breeze plan`: write groups, lanes, conflicts and dependencies of a plan.

use std::path::{Path, PathBuf};

use breeze_protocol::ExitCode;

use crate::args::PlanArgs;
use crate::error::{CliError, CliResult};
use crate::output;

pub fn run(args: &PlanArgs) -> CliResult {
    let root = breeze_git::Repo::open(&crate::here()).map(|repo| repo.workdir().to_path_buf()).ok();
    let plan_path = resolve(args.plan.as_deref(), root.as_deref())?;
    // The configuration is checked as `breeze run` would check it, so what `plan` accepts
    // runs.
    let config = match &root {
        Some(root) => breeze_engine::Config::load(root).map_err(|err| {
            CliError::usage(err.to_string()).hint("fix breeze.toml, then run `breeze plan` again")
        })?,
        None => breeze_engine::Config::defaults(),
    };
    let max_workers = match args.max_workers {
        Some(n) if (1..=3).contains(&n) => n,
        Some(n) => {
            return Err(CliError::usage(format!("--max-workers {n} is out of range"))
                .hint("use 1, 2 or 3 lanes"));
        }
        None => config.max_workers,
    };
    let plan = breeze_plan::load_with_extensions(&plan_path, breeze_engine::PLAN_EXTENSIONS)
        .map_err(plan_error)?;
    let analysis = breeze_plan::analyze(&plan, max_workers).map_err(plan_error)?;
    if args.json {
        let text = serde_json::to_string_pretty(&breeze_plan::render::json(&plan, &analysis))
            .unwrap_or_default();
        output::println(&text)?;
    } else if args.dot {
        // Warnings go where each form has room for them, once: in the JSON, in the table,
        // and — as DOT has none — on stderr.
        for warning in &plan.warnings {
            eprintln!("warning: {warning}");
        }
        output::print(&breeze_plan::render::dot(&plan, &analysis))?;
    } else {
        output::print(&breeze_plan::render::table(&plan, &analysis))?;
    }
    Ok(ExitCode::Success)
}

/// A plan that cannot be analysed, with what to do.
pub fn plan_error(err: impl std::fmt::Display) -> CliError {
    CliError::usage(err.to_string()).hint("fix the plan, then run `breeze plan` again")
}

fn resolve(given: Option<&Path>, root: Option<&Path>) -> Result<PathBuf, CliError> {
    if let Some(path) = given {
        return Ok(path.to_path_buf());
    }
    let here = crate::here();
    let dir = root.unwrap_or(&here);
    for name in ["plan.toml", "Plans.md"] {
        if dir.join(name).is_file() {
            return Ok(dir.join(name));
        }
    }
    Err(CliError::usage(format!(
        "no plan given and neither plan.toml nor Plans.md exists in {}",
        dir.display()
    ))
    .hint("pass a plan (`breeze plan PLAN`) or write one with `breeze init`"))
}
