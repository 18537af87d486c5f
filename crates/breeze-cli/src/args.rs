//! Command-line arguments as clap parses them. Commands turn these raw values into
//! validated domain objects (plans, configs) once, before doing any work.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// breeze runs a team of AI coding agents on one git repository: it splits a plan into
/// non-overlapping write groups, runs 1–3 workers in isolated worktrees, reviews every
/// task, and lands approved work on `main`.
#[derive(Debug, Parser)]
#[command(name = "breeze", version, propagate_version = true)]
pub struct Cli {
    /// Flags every command accepts.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command accepts.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Run as if breeze was started in DIR (like `git -C`).
    #[arg(short = 'C', long = "repo", global = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a starter breeze.toml with the project's test command, Plans.md and role definitions.
    Init(InitArgs),
    /// Analyse a plan: write groups, lanes, conflicts with witness paths, dependencies.
    Plan(PlanArgs),
    /// Turn a goal (or an issue's text) into new tasks of the plan, with the scaffolder role.
    Draft(DraftArgs),
    /// Run a plan: work, review and land every task.
    Run(RunArgs),
    /// Show the state of the latest run.
    Status(StatusArgs),
    /// Continue an interrupted run.
    Resume(ResumeArgs),
    /// Show the run in progress, live, from any terminal (`q` leaves; the run goes on).
    Watch(WatchArgs),
    /// Give up on the current run: stop its processes and mark it aborted.
    Abort,
    /// Let reviewed tasks held by `land.require_approval` land (also while the run is live).
    Approve(ApproveArgs),
    /// Send a reviewed task held by `land.require_approval` back to its worker with a note.
    Reject(RejectArgs),
    /// Give escalated or failed tasks of the latest run a fresh start; `breeze resume` runs them.
    Retry(RetryArgs),
    /// Print a task's change so far against its base (its worktree with what is not committed yet, else its branch).
    Diff(DiffArgs),
    /// Pause a task at its next safe point and work in its worktree, in the worker's own session (or a shell); the task goes on when you leave.
    Attach(AttachArgs),
    /// Open a task's worktree in $VISUAL or $EDITOR, pausing nothing.
    Open(OpenArgs),
    /// Remove worktrees and branches breeze created (dirty ones only with --force).
    Clean(CleanArgs),
    /// Show the logs of a task's role processes.
    Logs(LogsArgs),
    /// Summarize the latest run as Markdown, or as one HTML page (`--html`).
    Report(ReportArgs),
    /// Run a sample plan on built-in scripted agents in a fresh repository.
    Demo(DemoArgs),
    /// Check what a run needs, as `breeze run` does first: confinement, agent CLIs, breeze.toml, the plan, programs, the lane setup.
    Doctor(DoctorArgs),
    /// Print the JSON Schema of a message type.
    Schema(SchemaArgs),
    /// Check a JSON message file against its schema and rules.
    Validate(ValidateArgs),
    /// Serve breeze's commands as the tools of an MCP server on stdio (for Claude Code, Codex).
    Mcp,
}

/// `breeze init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Overwrite existing breeze.toml / Plans.md (never a role definition).
    #[arg(long)]
    pub force: bool,
    /// Print every breeze.toml key with its default and what it does, and write nothing.
    #[arg(long, conflicts_with = "force")]
    pub print_config: bool,
}

/// `breeze plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Plan file (Plans.md or plan.toml); default: plan.toml, then Plans.md in the repository root.
    pub plan: Option<PathBuf>,
    /// Print the analysis as JSON.
    #[arg(long, conflicts_with = "dot")]
    pub json: bool,
    /// Print Graphviz of the conflict and dependency graphs.
    #[arg(long)]
    pub dot: bool,
    /// Ask the scaffolder role for the write sets of tasks that have none, and write them
    /// into the plan (shows the analysis before and after; runs no worker).
    #[arg(long, conflicts_with_all = ["json", "dot", "fill_ids"])]
    pub fill_writes: bool,
    /// Give every to-do item written without a task id one, following the plan's own
    /// numbering, and write it into the plan (every other byte kept); later holders of an id
    /// repeated in one section get new ones. Running it again changes nothing.
    #[arg(long, conflicts_with_all = ["json", "dot"])]
    pub fill_ids: bool,
    /// Lanes to plan for (1–3); default: run.max_workers from breeze.toml.
    #[arg(long, value_name = "N")]
    pub max_workers: Option<u32>,
}

/// `breeze approve`.
#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// Task ids (all must await approval, or none is approved).
    #[arg(required = true, value_name = "TASK")]
    pub tasks: Vec<String>,
}

/// `breeze reject`.
#[derive(Debug, Args)]
pub struct RejectArgs {
    /// Task id.
    pub task: String,
    /// What is wrong: it reaches the worker as a critical finding.
    #[arg(long, required = true)]
    pub note: String,
}

/// `breeze retry`.
#[derive(Debug, Args)]
pub struct RetryArgs {
    /// Task ids (all must be escalated or failed, or none is retried).
    #[arg(required = true, value_name = "TASK")]
    pub tasks: Vec<String>,
    /// A note for the worker's next briefing.
    #[arg(long)]
    pub note: Option<String>,
    /// Start over from main's tip on a new branch; the earlier branch is kept as it is.
    #[arg(long)]
    pub fresh: bool,
}

/// `breeze diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Task id.
    pub task: String,
    /// One line per changed file with its added and removed lines, and the totals.
    #[arg(long)]
    pub stat: bool,
}

/// `breeze attach`.
#[derive(Debug, Args)]
pub struct AttachArgs {
    /// Task id.
    pub task: String,
    /// Open $SHELL rather than the worker's agent session.
    #[arg(long)]
    pub shell: bool,
    /// Run the session with your own rights rather than the worker's confinement: it may
    /// write anything you may (your checkout, other lanes, the shared .git), and breeze
    /// cannot tell what it changed outside the task's worktree.
    #[arg(long)]
    pub unconfined: bool,
}

/// `breeze open`.
#[derive(Debug, Args)]
pub struct OpenArgs {
    /// Task id.
    pub task: String,
}

/// `breeze draft`.
#[derive(Debug, Args)]
pub struct DraftArgs {
    /// The goal, in a sentence or a few lines (one task per line with the scripted backend).
    #[arg(required_unless_present = "from")]
    pub goal: Option<String>,
    /// Read the goal from FILE (an issue's text; `-` for stdin).
    #[arg(long, value_name = "FILE", conflicts_with = "goal")]
    pub from: Option<PathBuf>,
    /// The plan file to add the tasks to; default: the repository's plan.toml or Plans.md,
    /// else a new Plans.md.
    #[arg(short = 'o', long = "out", value_name = "PLAN")]
    pub out: Option<PathBuf>,
}

/// `breeze run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Plan file (Plans.md or plan.toml); default: plan.toml, then Plans.md in the repository root.
    pub plan: Option<PathBuf>,
    /// Lanes (1–3); default: run.max_workers from breeze.toml.
    #[arg(long, value_name = "N")]
    pub max_workers: Option<u32>,
    /// Print the run's events (breeze-event.v1) as JSON lines on stdout, and nothing else there.
    #[arg(long)]
    pub json: bool,
    /// Do not try worktree.setup once in a throwaway checkout of main before the run (the preflight's slowest check; its result is cached until the setup's inputs change).
    #[arg(long)]
    pub skip_setup_check: bool,
    /// Whether the run waits for approvals and pull requests.
    #[command(flatten)]
    pub wait: WaitArgs,
}

/// `--wait` / `--no-wait` of `breeze run` and `breeze resume`.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// When only people and forges can move the run (approvals, pull requests to merge, a
    /// checkout to clean), wait for them — `breeze approve` from another terminal is taken
    /// up at once — rather than stop (exit 3). Default on a terminal.
    #[arg(long, conflicts_with = "no_wait")]
    pub wait: bool,
    /// Stop (exit 3, `waiting`) when only people and forges can move the run; `breeze
    /// resume` goes on once they have decided. Default without a terminal.
    #[arg(long)]
    pub no_wait: bool,
}

impl WaitArgs {
    /// Whether the run waits: as asked, else when stdin and stdout are a terminal (a
    /// person is there to decide; a script or CI gets exit 3, as before).
    pub fn waits(&self) -> bool {
        use std::io::IsTerminal;
        if self.wait || self.no_wait {
            return self.wait;
        }
        std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
    }
}

/// `breeze doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the report as JSON (breeze-doctor.v1) on stdout, for CI.
    #[arg(long)]
    pub json: bool,
    /// Do not try worktree.setup in a throwaway checkout of main (a cached result is still used when nothing changed).
    #[arg(long)]
    pub no_setup: bool,
}

/// `breeze resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// Print the run's events (breeze-event.v1) as JSON lines on stdout, and nothing else there.
    #[arg(long)]
    pub json: bool,
    /// Raise the run's cost cap to USD dollars in all (`[budget] run_usd`; kept for later
    /// resumes): a run stopped at its budget goes on.
    #[arg(long, value_name = "USD", value_parser = positive_dollars)]
    pub budget_usd: Option<f64>,
    /// Raise the run's token cap to N input + output tokens in all (`[budget] run_tokens`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub budget_tokens: Option<u64>,
    /// A run stopped for a usage window or a rate limit: wait for the reset it was given
    /// (the windows in run.json, else its last rate-limit wait), then resume.
    #[arg(long)]
    pub at_reset: bool,
    /// Whether the run waits for approvals and pull requests.
    #[command(flatten)]
    pub wait: WaitArgs,
}

/// `breeze watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {}

/// `breeze status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print breeze-status.v1 JSON.
    #[arg(long)]
    pub json: bool,
    /// A specific run id (default: the latest).
    #[arg(long, value_name = "RUN_ID")]
    pub run: Option<String>,
}

/// `breeze report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Write one self-contained HTML page instead (timeline, conflict graph, tasks, links
    /// to their diffs, reviews and logs) and print its path.
    #[arg(long)]
    pub html: bool,
    /// Where to write the page; default: report.html in the run's folder (`.breeze/runs/<run-id>/`).
    #[arg(long, value_name = "FILE", requires = "html")]
    pub out: Option<PathBuf>,
}

/// `breeze clean`.
#[derive(Debug, Args)]
pub struct CleanArgs {
    /// Show what would be removed without removing anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Also remove worktrees with uncommitted changes.
    #[arg(long)]
    pub force: bool,
}

/// `breeze logs`.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Task id.
    pub task: String,
    /// A specific run id (default: the latest).
    #[arg(long, value_name = "RUN_ID")]
    pub run: Option<String>,
    /// Keep printing what the task's roles write until the task (or the run) ends.
    #[arg(short, long)]
    pub follow: bool,
}

/// `breeze demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Create the sample repository in DIR (must be empty or absent) instead of a temporary folder.
    #[arg(long = "dir", value_name = "DIR")]
    pub target: Option<PathBuf>,
}

/// `breeze schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Message type, e.g. `advisor-response` or `review-result.v1`; omit to list them.
    pub name: Option<String>,
}

/// `breeze validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// JSON files to check (`-` for stdin).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Check as this type instead of reading `schema_version`.
    #[arg(long = "as", value_name = "TYPE")]
    pub kind: Option<String>,
}

/// A dollar amount above zero.
fn positive_dollars(text: &str) -> Result<f64, NotDollars> {
    match text.trim().trim_start_matches('$').parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd > 0.0 => Ok(usd),
        _ => Err(NotDollars { given: text.to_string() }),
    }
}

/// A `--budget-usd` that is not a dollar amount above zero (clap shows it as the reason the
/// value is refused).
#[derive(Debug, thiserror::Error)]
#[error("{given:?} is not a dollar amount above zero (write it like 7.50)")]
pub struct NotDollars {
    /// What was given.
    given: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("breeze").chain(args.iter().copied()))
    }

    fn waits(args: &[&str]) -> bool {
        match parse(args).unwrap().command {
            Command::Run(run) => run.wait.waits(),
            Command::Resume(resume) => resume.wait.waits(),
            other => panic!("not a run: {other:?}"),
        }
    }

    #[test]
    fn run_and_resume_take_wait_or_no_wait_but_not_both() {
        assert!(waits(&["run", "--wait"]));
        assert!(waits(&["resume", "--wait"]));
        assert!(!waits(&["run", "--no-wait"]));
        assert!(!waits(&["resume", "--no-wait"]));
        let both = parse(&["run", "--wait", "--no-wait"]).unwrap_err();
        assert_eq!(both.kind(), clap::error::ErrorKind::ArgumentConflict, "{both}");
    }
}
