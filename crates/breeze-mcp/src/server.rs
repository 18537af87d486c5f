//! The MCP server: one tool per breeze command, each running that command.

use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};

use crate::bounded::bounded;
use crate::cli::{Breeze, failure};
use crate::params::{
    ApproveParams, DiffParams, DraftParams, LogsParams, PlanFileParams, PlanParams, RejectParams,
    ResumeParams, RetryParams, RunParams, StatusParams, WaitParams,
};

/// How much of a diff or a log a tool returns unless asked for another size.
const DEFAULT_MAX_BYTES: usize = 64 * 1024;
/// The most a tool returns however it is asked.
const MOST_BYTES: usize = 1024 * 1024;

/// What the server tells the session about its tools.
const INSTRUCTIONS: &str = "breeze runs a team of AI coding agents on this git repository: \
workers in separate worktrees, a reviewer that approves before anything lands on main. \
Write the plan (tasks with write sets) into Plans.md or plan.toml, check it with `plan`, \
start it with `run` (it returns at once with the run id), follow it with `wait` and `status`, \
show what landed with `report`, and hand escalated or awaiting-approval tasks to the person \
(`approve`, `reject`, `retry` are their decisions).";

/// breeze's MCP server: the `breeze` command line as tools, in one repository.
#[derive(Debug, Clone)]
pub struct BreezeServer {
    breeze: Breeze,
    tool_router: ToolRouter<Self>,
}

impl BreezeServer {
    /// A server whose tools run `breeze` (`program`) in `repo`.
    pub fn new(breeze: Breeze) -> BreezeServer {
        BreezeServer { breeze, tool_router: Self::tool_router() }
    }
}

/// `args` followed by `--flag=value` when a value is given (one word: a value starting with
/// `-` stays a value).
fn with_option(mut args: Vec<String>, flag: &str, value: Option<impl ToString>) -> Vec<String> {
    if let Some(value) = value {
        args.push(format!("{flag}={}", value.to_string()));
    }
    args
}

/// `args` followed by `--` and the positional `values`: a task id or a path given by the
/// session is never read as an option.
fn with_positional(mut args: Vec<String>, values: impl IntoIterator<Item = String>) -> Vec<String> {
    let values: Vec<String> = values.into_iter().collect();
    if !values.is_empty() {
        args.push("--".to_string());
        args.extend(values);
    }
    args
}

fn json_result(value: &impl serde::Serialize) -> CallToolResult {
    match serde_json::to_string_pretty(value) {
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(err) => failure(format!("error: cannot write the result as JSON: {err}")),
    }
}

fn max_bytes(asked: Option<usize>) -> usize {
    asked.unwrap_or(DEFAULT_MAX_BYTES).clamp(1, MOST_BYTES)
}

#[tool_router(router = tool_router)]
impl BreezeServer {
    /// `breeze plan --json`.
    #[tool(
        description = "Analyse a plan as `breeze plan --json` does: its tasks with write sets, write groups, lanes, conflicts with witness paths, dependencies, warnings and what is missing. Run it before `run`."
    )]
    async fn plan(&self, Parameters(params): Parameters<PlanParams>) -> CallToolResult {
        let args = vec!["plan".to_string(), "--json".to_string()];
        let args = with_option(args, "--max-workers", params.max_workers);
        self.breeze.tool(&with_positional(args, params.plan)).await
    }

    /// `breeze draft`.
    #[tool(
        description = "Turn a goal into new tasks of the plan with the scaffolder role (`breeze draft`); writes them into the plan file. Check the result with `plan`."
    )]
    async fn draft(&self, Parameters(params): Parameters<DraftParams>) -> CallToolResult {
        let args = with_option(vec!["draft".to_string()], "--out", params.out);
        self.breeze.tool(&with_positional(args, [params.goal])).await
    }

    /// `breeze plan --fill-ids`.
    #[tool(
        description = "Give every to-do item of the plan written without a task id one, following the plan's own numbering, and write it into the plan (`breeze plan --fill-ids`)."
    )]
    async fn fill_ids(&self, Parameters(params): Parameters<PlanFileParams>) -> CallToolResult {
        let args = vec!["plan".to_string(), "--fill-ids".to_string()];
        self.breeze.tool(&with_positional(args, params.plan)).await
    }

    /// `breeze plan --fill-writes`.
    #[tool(
        description = "Ask the scaffolder role for the write sets of tasks that have none and write them into the plan (`breeze plan --fill-writes`); shows the analysis before and after."
    )]
    async fn fill_writes(&self, Parameters(params): Parameters<PlanFileParams>) -> CallToolResult {
        let args = vec!["plan".to_string(), "--fill-writes".to_string()];
        self.breeze.tool(&with_positional(args, params.plan)).await
    }

    /// `breeze run`, in the background.
    #[tool(
        description = "Start a run of the plan in the background (`breeze run`, with its preflight and the repository lock) and return at once with the run id; follow it with `wait` and `status`. A second run while one is live is refused."
    )]
    async fn run(&self, Parameters(params): Parameters<RunParams>) -> CallToolResult {
        let mut args = with_option(vec!["run".to_string()], "--max-workers", params.max_workers);
        if params.skip_setup_check {
            args.push("--skip-setup-check".to_string());
        }
        self.start(&with_positional(args, params.plan)).await
    }

    /// `breeze resume`, in the background.
    #[tool(
        description = "Continue the latest interrupted run in the background (`breeze resume`): after `approve`, `reject` or `retry`, or a stop. Returns at once with the run id."
    )]
    async fn resume(&self, Parameters(params): Parameters<ResumeParams>) -> CallToolResult {
        let args = with_option(vec!["resume".to_string()], "--budget-usd", params.budget_usd);
        let args = with_option(args, "--budget-tokens", params.budget_tokens);
        self.start(&args).await
    }

    /// `breeze status --json`.
    #[tool(
        description = "The run's state and every task's phase, attempts, rounds, commit and reason, as breeze-status.v1 JSON (`breeze status --json`)."
    )]
    async fn status(&self, Parameters(params): Parameters<StatusParams>) -> CallToolResult {
        let args = with_option(vec!["status".into(), "--json".into()], "--run", params.run);
        self.breeze.tool(&args).await
    }

    /// Follows the run.
    #[tool(
        description = "Wait until the latest run ends or one of its tasks changes phase, at most timeout_seconds. Returns the outcome (ended, task-changed, timed-out), the changes, and the status (breeze-status.v1). Call it again to keep following."
    )]
    async fn wait(&self, Parameters(params): Parameters<WaitParams>) -> CallToolResult {
        let seconds = params.timeout_seconds.unwrap_or(120).clamp(1, 600);
        match crate::follow::wait(&self.breeze, Duration::from_secs(seconds)).await {
            Ok(waited) => json_result(&waited),
            Err(failed) => failed,
        }
    }

    /// `breeze approve`.
    #[tool(
        description = "Let reviewed tasks held by land.require_approval land (`breeze approve`). The person decides this: ask them first."
    )]
    async fn approve(&self, Parameters(params): Parameters<ApproveParams>) -> CallToolResult {
        self.breeze.tool(&with_positional(vec!["approve".to_string()], params.tasks)).await
    }

    /// `breeze reject`.
    #[tool(
        description = "Send a reviewed task held by land.require_approval back to its worker with a note (`breeze reject --note`). The person decides this: ask them first."
    )]
    async fn reject(&self, Parameters(params): Parameters<RejectParams>) -> CallToolResult {
        let args = with_option(vec!["reject".to_string()], "--note", Some(params.note));
        self.breeze.tool(&with_positional(args, [params.task])).await
    }

    /// `breeze retry`.
    #[tool(
        description = "Give escalated or failed tasks of the latest run a fresh start (`breeze retry`); `resume` then runs them."
    )]
    async fn retry(&self, Parameters(params): Parameters<RetryParams>) -> CallToolResult {
        let mut args = with_option(vec!["retry".to_string()], "--note", params.note);
        if params.fresh {
            args.push("--fresh".to_string());
        }
        self.breeze.tool(&with_positional(args, params.tasks)).await
    }

    /// `breeze abort`.
    #[tool(
        description = "Give up on the current run: stop its processes and mark it aborted (`breeze abort`); task work stays on the task branches."
    )]
    async fn abort(&self) -> CallToolResult {
        self.breeze.tool(&["abort"]).await
    }

    /// `breeze diff`, bounded.
    #[tool(
        description = "A task's change so far against its base (`breeze diff`), cut at max_bytes with a line saying so."
    )]
    async fn diff(&self, Parameters(params): Parameters<DiffParams>) -> CallToolResult {
        let mut args = vec!["diff".to_string()];
        if params.stat {
            args.push("--stat".to_string());
        }
        let args = with_positional(args, [params.task]);
        self.bounded_tool(&args, max_bytes(params.max_bytes), false).await
    }

    /// `breeze logs`, bounded.
    #[tool(
        description = "The logs of a task's role processes (`breeze logs`), keeping the last max_bytes with a line saying what was cut."
    )]
    async fn logs(&self, Parameters(params): Parameters<LogsParams>) -> CallToolResult {
        let args = with_option(vec!["logs".to_string()], "--run", params.run);
        let args = with_positional(args, [params.task]);
        self.bounded_tool(&args, max_bytes(params.max_bytes), true).await
    }

    /// `breeze report`.
    #[tool(
        description = "The latest run as Markdown (`breeze report`): what landed with its commits, what needs attention and why, send-backs, lessons from review. Show it to the person."
    )]
    async fn report(&self) -> CallToolResult {
        self.breeze.tool(&["report"]).await
    }
}

impl BreezeServer {
    async fn start(&self, args: &[String]) -> CallToolResult {
        match crate::background::start(&self.breeze, args).await {
            Ok(started) => json_result(&started),
            Err(failed) => failed,
        }
    }

    async fn bounded_tool(&self, args: &[String], max: usize, keep_end: bool) -> CallToolResult {
        let ran = match self.breeze.run(args).await {
            Ok(ran) => ran,
            Err(failed) => return failed,
        };
        if !ran.succeeded() {
            return ran.into_result();
        }
        let whole = format!("breeze {}", args.join(" "));
        let text = bounded(&ran.stdout, max, keep_end, &whole);
        CallToolResult::success(vec![ContentBlock::text(text)])
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for BreezeServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("breeze", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(crate::resources::list()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        crate::resources::read(&self.breeze, &request.uri).await.map(Into::into)
    }
}
