//! `breeze validate FILE...`: check JSON messages against their schema and rules.
//!
//! Exit 0 when every file is valid, 1 when any has problems (all of them listed),
//! 2 when a file is not there or is not JSON at all, 4 when one cannot be read.

use std::io::Read;
use std::path::Path;

use breeze_protocol::{ExitCode, MessageKind, validate};
use serde_json::Value;

use crate::args::ValidateArgs;
use crate::commands::schema::known_names;
use crate::error::{CliError, CliResult};
use crate::output;

pub fn run(args: &ValidateArgs) -> CliResult {
    let forced = match &args.kind {
        Some(name) => Some(MessageKind::from_name(name).ok_or_else(|| {
            CliError::usage(format!("unknown message type `{name}`"))
                .hint(format!("known types: {}", known_names()))
        })?),
        None => None,
    };
    let mut worst = ExitCode::Success;
    for file in &args.files {
        let verdict = check_file(file, forced)?;
        if verdict != ExitCode::Success && worst == ExitCode::Success {
            worst = verdict;
        }
    }
    Ok(worst)
}

fn check_file(file: &Path, forced: Option<MessageKind>) -> CliResult {
    let label = file.display().to_string();
    let text =
        read(file).map_err(|err| CliError::named_path(format!("cannot read {label}"), err))?;
    let value: Value = serde_json::from_str(&text).map_err(|err| {
        CliError::usage(format!("{label} is not JSON: {err}"))
            .caused_by(err)
            .hint("breeze validate checks JSON message files such as a saved review-result.v1")
    })?;
    let kind = match forced {
        Some(kind) => kind,
        None => match MessageKind::detect(&value) {
            Ok(kind) => kind,
            Err(err) => {
                output::println(&format!("{label}: invalid: {err}"))?;
                output::println("  hint: add the `schema_version` field, or pass --as TYPE")?;
                return Ok(ExitCode::Unfinished);
            }
        },
    };
    let problems = validate::validate(kind, &value);
    if problems.is_empty() {
        output::println(&format!("{label}: valid {kind}"))?;
        return Ok(ExitCode::Success);
    }
    let count = problems.len();
    let noun = if count == 1 { "problem" } else { "problems" };
    output::println(&format!("{label}: invalid {kind} ({count} {noun})"))?;
    for problem in problems {
        output::println(&format!("  - {problem}"))?;
    }
    Ok(ExitCode::Unfinished)
}

fn read(file: &Path) -> std::io::Result<String> {
    if file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        Ok(text)
    } else {
        std::fs::read_to_string(file)
    }
}
