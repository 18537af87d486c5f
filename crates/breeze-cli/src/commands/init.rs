//! `breeze init`: starter breeze.toml and Plans.md.

use breeze_protocol::ExitCode;

use crate::args::InitArgs;
use crate::commands::run::engine_error;
use crate::error::{CliError, CliResult};
use crate::output;

const CONFIG: &str = include_str!("../../../../templates/breeze.toml");
/// The starter Plans.md (also what `breeze draft` starts a new plan from).
pub const PLANS_TEMPLATE: &str = include_str!("../../../../templates/Plans.md");

pub fn run(args: &InitArgs) -> CliResult {
    let repo = breeze_git::Repo::open(&crate::here()).map_err(|err| engine_error(err.into()))?;
    repo.ensure_excluded().map_err(|err| engine_error(err.into()))?;
    let root = repo.workdir();
    for (name, text) in [("breeze.toml", CONFIG), ("Plans.md", PLANS_TEMPLATE)] {
        let path = root.join(name);
        if path.exists() && !args.force {
            output::println(&format!("kept {} (it exists; --force overwrites)", path.display()))?;
            continue;
        }
        std::fs::write(&path, text)
            .map_err(|err| CliError::usage(format!("cannot write {}: {err}", path.display())))?;
        output::println(&format!("wrote {}", path.display()))?;
    }
    output::println(
        "next: describe your tasks in Plans.md, check them with `breeze plan`, then `breeze run`",
    )?;
    Ok(ExitCode::Success)
}
