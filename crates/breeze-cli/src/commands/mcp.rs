//! `breeze mcp`: serves breeze's commands as MCP tools on stdio (`breeze-mcp` does the
//! work; its tools run this same program, in this directory).

use breeze_protocol::ExitCode;

use crate::commands::run::runtime;
use crate::error::{CliError, CliResult, ErrorKind};

pub fn run() -> CliResult {
    let program = std::env::current_exe()
        .map_err(|err| CliError::io("cannot find the breeze program to run the tools with", err))?;
    let breeze = breeze_mcp::Breeze::new(program, crate::workdir::here());
    let server = breeze_mcp::BreezeServer::new(breeze);
    runtime()?.block_on(breeze_mcp::serve_stdio(server)).map_err(|err| {
        CliError::new(ErrorKind::Io, err.to_string())
            .hint("`breeze mcp` is started by an MCP client (Claude Code, Codex), which talks to it on stdin and stdout")
    })?;
    Ok(ExitCode::Success)
}
