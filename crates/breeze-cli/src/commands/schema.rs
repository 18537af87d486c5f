//! `breeze schema NAME`: print a message type's JSON Schema.

use breeze_protocol::{ExitCode, MessageKind};

use crate::args::SchemaArgs;
use crate::error::{CliError, CliResult};
use crate::output;

pub fn run(args: &SchemaArgs) -> CliResult {
    let Some(name) = &args.name else {
        for kind in MessageKind::ALL {
            output::println(kind.schema_version())?;
        }
        return Ok(ExitCode::Success);
    };
    let kind = MessageKind::from_name(name).ok_or_else(|| {
        CliError::usage(format!("unknown message type `{name}`"))
            .hint(format!("known types: {}", known_names()))
    })?;
    output::print(&kind.schema_text())?;
    Ok(ExitCode::Success)
}

pub fn known_names() -> String {
    MessageKind::ALL.map(MessageKind::schema_version).join(", ")
}
