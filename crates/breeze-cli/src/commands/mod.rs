//! One module per subcommand.

pub mod decide;
pub mod demo;
pub mod doctor;
pub mod init;
pub mod logs;
pub mod maintenance;
pub mod mcp;
pub mod plan;
pub mod run;
pub mod schema;
pub mod status;
pub mod step_in;
pub mod validate;
pub mod watch;
mod watch_approvals;
