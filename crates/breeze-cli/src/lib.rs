//! The `breeze` command line: argument parsing, dispatch to the engine, rendering, and
//! exit codes. The binary is a one-line call to [`main`]; tests drive [`run`] directly.
#![forbid(unsafe_code)]

pub mod args;
// Public only so the snapshot tests reach what commands print; not an API.
#[doc(hidden)]
pub mod commands;
pub mod error;
pub mod escape;
pub mod live;
pub mod output;
pub mod render;
pub mod report_html;
mod workdir;

use breeze_protocol::ExitCode;
use clap::Parser;

use crate::args::{Cli, Command};
use crate::error::CliError;

/// Parses the process arguments, runs the command and returns its exit code.
pub fn main() -> std::process::ExitCode {
    // Before anything else: a role's launcher never gets further (it becomes the role).
    breeze_supervise::start_roles_through_this_binary();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // clap prints help/version to stdout (exit 0) and usage errors to stderr (exit 2).
            let _ = err.print();
            return if err.use_stderr() { ExitCode::Usage } else { ExitCode::Success }.into();
        }
    };
    init_logging(cli.global.verbose);
    match run(cli) {
        Ok(code) => code.into(),
        Err(err) => {
            report(&err);
            err.exit_code().into()
        }
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode, CliError> {
    if let Some(dir) = &cli.global.dir {
        std::env::set_current_dir(dir).map_err(|err| {
            CliError::named_path(format!("cannot change to directory {}", dir.display()), err)
        })?;
    }
    match &cli.command {
        Command::Init(args) => commands::init::run(args),
        Command::Plan(args) => commands::plan::run(args),
        Command::Draft(args) => commands::plan::draft(args),
        Command::Run(args) => commands::run::run(args),
        Command::Status(args) => commands::status::status(args),
        Command::Resume(args) => commands::run::resume(args),
        Command::Watch(_) => commands::watch::run(),
        Command::Abort => commands::maintenance::abort(),
        Command::Approve(args) => commands::decide::approve(args),
        Command::Reject(args) => commands::decide::reject(args),
        Command::Retry(args) => commands::decide::retry(args),
        Command::Diff(args) => commands::step_in::diff(args),
        Command::Attach(args) => commands::step_in::attach(args),
        Command::Open(args) => commands::step_in::open(args),
        Command::Clean(args) => commands::maintenance::clean(args),
        Command::Logs(args) => commands::logs::run(args),
        Command::Report(args) => commands::status::report(args),
        Command::Demo(args) => commands::demo::run(args),
        Command::Doctor(args) => commands::doctor::run(args),
        Command::Schema(args) => commands::schema::run(args),
        Command::Validate(args) => commands::validate::run(args),
        Command::Mcp => commands::mcp::run(),
    }
}

fn report(err: &CliError) {
    output::eprint(&error::render_error(err));
}

fn init_logging(verbose: u8) {
    use std::io::IsTerminal;
    use tracing_subscriber::util::SubscriberInitExt;
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = log_subscriber(filter, std::io::stderr().is_terminal()).try_init();
}

/// How breeze prints its log lines: fields (role text among them) escaped before the
/// formatter adds its own colours (`ansi`, for a terminal), each line written above the
/// live view when one is drawn (so it never lands inside the redrawn region), else on
/// stderr.
pub fn log_subscriber(
    filter: tracing_subscriber::EnvFilter,
    ansi: bool,
) -> impl tracing::Subscriber + Send + Sync {
    use tracing_subscriber::field::MakeExt;
    let fields = tracing_subscriber::fmt::format::debug_fn(|writer, field, value| {
        let text = format!("{value:?}");
        let text = escape::escape_controls(&text);
        if field.name() == "message" {
            write!(writer, "{text}")
        } else {
            write!(writer, "{}={text}", field.name())
        }
    })
    .delimited(" ");
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(live::terminal::log_writer)
        .with_ansi(ansi)
        .with_target(false)
        .fmt_fields(fields)
        .finish()
}
