//! `breeze init`: a starter `breeze.toml` set to the project's test command, a `Plans.md`
//! template in the project's own paths (marked: `breeze run` refuses it until the tasks are
//! the user's), copies of the role definitions to customize, and a `.gitignore` for what the
//! project's install writes when there is none — never over an existing file (`--force`
//! replaces breeze.toml and Plans.md, never a role definition nor `.gitignore`).

mod detect;
mod layout;
mod starter;

use std::io::Write as _;
use std::path::Path;

use breeze_engine::roles::definition;
use breeze_protocol::{ExitCode, Role};

use crate::args::InitArgs;
use crate::error::{CliError, CliResult};
use crate::output;

/// The starter Plans.md (also what `breeze draft` starts a new plan from).
pub const PLANS_TEMPLATE: &str = include_str!("../../../../templates/Plans.md");

/// The built-in role definitions, copied to `.claude/agents/breeze-<role>.md`.
const DEFINITIONS: [(Role, &str); 4] = [
    (Role::Worker, include_str!("../../../../agents/worker.md")),
    (Role::Reviewer, include_str!("../../../../agents/reviewer.md")),
    (Role::Advisor, include_str!("../../../../agents/advisor.md")),
    (Role::Scaffolder, include_str!("../../../../agents/scaffolder.md")),
];

/// A role definition as `breeze init` writes it: the built-in one with a comment line
/// in its front matter saying what the file is.
fn definition_copy(role: Role, builtin: &str) -> String {
    let note = format!(
        "# Written by `breeze init` from breeze's built-in {role} definition. breeze reads this file instead: edit it to change the role (its instructions, tools, model, maxTurns); delete it to go back to the built-in one.",
        role = role.as_str()
    );
    match builtin.split_once('\n') {
        Some((first, rest)) => format!("{first}\n{note}\n{rest}"),
        None => builtin.to_string(),
    }
}

/// What happened to one file.
enum Written {
    New,
    Replaced,
    Kept,
}

/// Writes `text` to `path` unless a file (or a link) is there; with `replace`, over it.
fn write_new(path: &Path, text: &str, replace: bool) -> Result<Written, CliError> {
    let cannot =
        |err: std::io::Error| CliError::io(format!("cannot write {}", path.display()), err);
    let exists = path.symlink_metadata().is_ok();
    if exists && replace {
        std::fs::write(path, text).map_err(cannot)?;
        return Ok(Written::Replaced);
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(cannot)?;
    }
    // create_new: a file that appears meanwhile is kept, not truncated.
    match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(mut file) => {
            file.write_all(text.as_bytes()).map_err(cannot)?;
            Ok(Written::New)
        }
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(Written::Kept),
        Err(err) => Err(cannot(err)),
    }
}

/// One line per project found.
fn detection_lines(detection: &detect::Detection) -> Vec<String> {
    let Some(primary) = detection.primary() else {
        let mut lines: Vec<String> = detection
            .projects
            .iter()
            .map(|project| format!("found {}: {}", project.name, project.why))
            .collect();
        lines.push(
            "no test command found: set [land] verify and [review] checks in breeze.toml".into(),
        );
        return lines;
    };
    let mut lines = vec![format!(
        "detected {}: {} → test command `{}`",
        primary.name,
        primary.why,
        primary.test_line().unwrap_or_default()
    )];
    for other in detection.others() {
        let test =
            other.test_line().map(|test| format!(" → `{test}` (not used)")).unwrap_or_default();
        lines.push(format!("also found {}: {}{test}", other.name, other.why));
    }
    lines
}

/// What the project's install or build writes that git should ignore: a new `.gitignore`
/// when there is none; a suggestion when the existing one does not say it (never changed).
fn ignore_lines(root: &Path, outputs: &[&str]) -> Result<Vec<String>, CliError> {
    if outputs.is_empty() {
        return Ok(Vec::new());
    }
    let path = root.join(".gitignore");
    let Ok(existing) = std::fs::read_to_string(&path) else {
        let text: String = outputs.iter().map(|output| format!("{output}\n")).collect();
        return Ok(match write_new(&path, &text, false)? {
            Written::New => vec![format!(
                "wrote .gitignore ({}): your build writes it in every lane, and git must not see it as work",
                outputs.join(", ")
            )],
            _ => Vec::new(),
        });
    };
    let listed = |output: &str| {
        let bare = output.trim_end_matches('/');
        existing.lines().map(str::trim).any(|line| {
            let line = line.trim_start_matches('/').trim_end_matches('/');
            line == bare || line == format!("{bare}/*") || line == format!("**/{bare}")
        })
    };
    let missing: Vec<&str> = outputs.iter().copied().filter(|output| !listed(output)).collect();
    Ok(match missing.as_slice() {
        [] => Vec::new(),
        missing => vec![format!(
            "suggestion: add {} to .gitignore (kept as it is): your build writes it in every lane",
            missing.join(", ")
        )],
    })
}

pub fn run(args: &InitArgs) -> CliResult {
    if args.print_config {
        // What the config error's hint points at: the user has the binary, not the sources.
        output::print(breeze_engine::config::DEFAULT_CONFIG)?;
        return Ok(ExitCode::Success);
    }
    let repo = breeze_git::Repo::open(&crate::workdir::here())?;
    repo.ensure_excluded()?;
    let root = repo.workdir();
    let detection = detect::detect(root);
    // A remote to offer the remote landing modes for: `origin`, else the first one.
    let remotes = repo.remote_names().unwrap_or_default();
    let remote = remotes.iter().find(|name| *name == "origin").or(remotes.first()).cloned();
    output::println(&format!("in {}", root.display()))?;
    for line in detection_lines(&detection) {
        output::println(&line)?;
    }

    // (name, text, whether --force replaces it)
    let mut files: Vec<(String, String, bool)> = vec![
        (
            "breeze.toml".into(),
            starter::render(&detection, remote.as_deref(), repo.main_branch()),
            true,
        ),
        (
            "Plans.md".into(),
            layout::render_plan(PLANS_TEMPLATE, &layout::layout(root, &detection)),
            true,
        ),
    ];
    for (role, builtin) in DEFINITIONS {
        let path = definition::override_path(Path::new(""), role);
        files.push((path.display().to_string(), definition_copy(role, builtin), false));
    }
    for (name, text, forceable) in files {
        let line = match write_new(&root.join(&name), &text, forceable && args.force)? {
            Written::New => format!("wrote {name}"),
            Written::Replaced => format!("wrote {name} (replaced the existing one: --force)"),
            Written::Kept if forceable => format!("kept existing {name} (--force replaces it)"),
            Written::Kept => format!("kept existing {name}"),
        };
        output::println(&line)?;
    }
    for line in ignore_lines(root, &layout::ignored_outputs(&detection))? {
        output::println(&line)?;
    }
    output::println(
        "next: describe your tasks in Plans.md and remove its `<!-- breeze:template` line (breeze run refuses the template), check them with `breeze plan`, then `breeze doctor` checks what a run needs and `breeze run`",
    )?;
    output::println(
        "from Claude Code: `claude plugin marketplace add <breeze checkout or repo>` then `claude plugin install breeze@breeze` (the breeze tools and the /breeze skill); from Codex: `codex mcp add breeze -- breeze mcp` (README: \"From Claude Code or Codex\")",
    )?;
    Ok(ExitCode::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copies_are_the_built_in_definitions() {
        for (role, builtin) in DEFINITIONS {
            let copy = definition::parse(&definition_copy(role, builtin), "copy").unwrap();
            assert_eq!(
                copy,
                definition::RoleDefinition { source: "copy".into(), ..definition::builtin(role) }
            );
        }
    }
}
