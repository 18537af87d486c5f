//! Running the user's forge commands (`land.pr_command` and the commands that follow a
//! pull request): their placeholders filled in, run in the user's checkout, unconfined —
//! the user's forge CLI keeps its own credentials and state, as in their shell, and runs
//! no code of the agents'.

use std::time::Duration;

use crate::error::EngineError;
use crate::run::context::{ProjectCommand, RunContext};

/// How much of a forge command's output is read.
const OUTPUT_BYTES: u64 = 1024 * 1024;

/// `template` with its placeholders filled in, in one pass: a value that contains a
/// placeholder's name (a title with `{branch}` in it) is left as it is, and so is a
/// placeholder `values` does not name (`{owner}` for `gh api`).
pub(crate) fn command_line(template: &[String], values: &[(&str, &str)]) -> Vec<String> {
    template
        .iter()
        .map(|arg| {
            let mut out = String::new();
            let mut rest = arg.as_str();
            while !rest.is_empty() {
                match values.iter().find(|(key, _)| rest.starts_with(key)) {
                    Some((key, value)) => {
                        out.push_str(value);
                        rest = &rest[key.len()..];
                    }
                    None => {
                        let next = rest.chars().next().map_or(1, char::len_utf8);
                        out.push_str(&rest[..next]);
                        rest = &rest[next..];
                    }
                }
            }
            out
        })
        .collect()
}

/// What a forge command did.
pub(crate) struct ForgeRun {
    /// The start of what it printed on stdout.
    pub stdout: String,
    /// How it ended and its last line on stderr, when it did not exit 0 (or could not
    /// start): `` `gh` exited 1: no pull requests found ``.
    pub failure: Option<String>,
}

/// Runs `argv` for task `task` (`purpose`: the config key), its logs at `logs/<log>`;
/// a program that cannot start is a failed run, not an error of the run.
pub(crate) async fn run_forge_command(
    ctx: &RunContext,
    task: &str,
    purpose: &str,
    argv: &[String],
    log: &std::path::Path,
    timeout: Duration,
) -> Result<ForgeRun, EngineError> {
    let mut command = ProjectCommand::new(
        task,
        purpose,
        argv,
        // In the user's checkout, in no lane: the integration's lane variables.
        (ctx.repo.workdir(), crate::lane_env::LaneEnv::integration(&ctx.config)),
        log,
        timeout,
    );
    command.confined = false;
    let outcome = match ctx.run_project_command(command).await {
        Ok(run) => run.outcome,
        Err(_) if ctx.cancel.is_cancelled() => return Err(EngineError::Cancelled),
        Err(EngineError::Usage { message, .. }) => {
            return Ok(ForgeRun { stdout: String::new(), failure: Some(message) });
        }
        Err(err) => return Err(err),
    };
    if outcome.ending == breeze_supervise::Ending::Cancelled {
        return Err(EngineError::Cancelled);
    }
    let stdout = head_of(&outcome.stdout_log);
    let success = outcome.ending.is_success();
    let failure = (!success).then(|| {
        let stderr = outcome.stderr_tail.trim();
        let last = stderr.lines().last().unwrap_or("").trim();
        let program = argv.first().map(String::as_str).unwrap_or_default();
        format!("`{program}` {}: {last}", outcome.ending)
    });
    Ok(ForgeRun { stdout, failure })
}

/// The first bytes of the file at `path` (empty when it cannot be read).
fn head_of(path: &std::path::Path) -> String {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.take(OUTPUT_BYTES).read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_in_every_argument_and_unknown_ones_are_left() {
        let template: Vec<String> = [
            "gh",
            "pr",
            "create",
            "--base",
            "{target}",
            "--head",
            "{branch}",
            "--title={title}",
            "repos/{owner}/{repo}",
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        let argv = command_line(
            &template,
            &[("{target}", "main"), ("{branch}", "breeze/1"), ("{title}", "feat: A {branch}")],
        );
        assert_eq!(
            argv,
            [
                "gh",
                "pr",
                "create",
                "--base",
                "main",
                "--head",
                "breeze/1",
                "--title=feat: A {branch}",
                "repos/{owner}/{repo}"
            ]
        );
    }
}
