//! `breeze mcp`: breeze's commands as the tools of an MCP server on stdio, for the agent
//! sessions people already work in (Claude Code, Codex).
//!
//! Every tool runs the `breeze` command line itself (the program the server was started
//! from) in the repository the server serves, so a tool does exactly what the command does:
//! the same preflight, repository lock, confinement and approvals, and on failure the same
//! error with its hints, returned as an MCP tool error (`isError`). `run` and `resume`
//! start the engine as a detached process and return with the run id at once; `wait`
//! follows the run until it ends or a task changes phase. The latest run's status, journal
//! and report are also resources, for clients that read them.
//!
//! Built on the official Rust MCP SDK (`rmcp`): server side, stdio transport, tool schemas
//! from `schemars`.
#![forbid(unsafe_code)]

pub mod background;
pub mod bounded;
pub mod cli;
pub mod follow;
pub mod params;
pub mod resources;
mod server;

pub use cli::Breeze;
pub use server::BreezeServer;

/// Serves `server` on this process's stdin and stdout until the client closes them.
pub async fn serve_stdio(server: BreezeServer) -> Result<(), ServeError> {
    use rmcp::ServiceExt as _;
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|err| ServeError(format!("the MCP session did not start: {err}")))?;
    running
        .waiting()
        .await
        .map_err(|err| ServeError(format!("the MCP session ended abnormally: {err}")))?;
    Ok(())
}

/// Why the MCP server stopped serving.
#[derive(Debug)]
pub struct ServeError(String);

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ServeError {}
