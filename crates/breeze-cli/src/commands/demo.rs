//! `breeze demo`: a sample repository and a nine-task plan, run on the built-in
//! scripted agents, then a summary of what happened and where to look.

use std::path::PathBuf;

use breeze_engine::RunOptions;

use crate::args::DemoArgs;
use crate::commands::run::{Mode, drive};
use crate::error::{CliError, CliResult};
use crate::output;

pub fn run(args: &DemoArgs) -> CliResult {
    let dir: PathBuf = match &args.target {
        Some(dir) => std::path::absolute(dir).unwrap_or_else(|_| dir.clone()),
        None => tempfile::Builder::new()
            .prefix("breeze-demo-")
            .tempdir()
            .map_err(|err| CliError::io("cannot create a temporary directory", err))?
            // The demo repository is the point of the demo: keep it for the user to look at.
            .keep(),
    };
    let plan = breeze_engine::demo::create_sample_repo(&dir)?;
    output::println(&format!("breeze demo: sample repository in {}", dir.display()))?;
    output::println(
        "nine tasks on scripted agents: retries, Advisor consults, review rounds and a gate\n",
    )?;
    fill_write_sets(&dir, &plan)?;
    let mut options = RunOptions::new(&dir);
    options.plan = Some(plan);
    let code = drive(options, Mode::Start)?;
    let breeze = invocation();
    let lines = [
        format!("  cd {}", dir.display()),
        "  git log --format='%h %s%n%(trailers:only,unfold)'   # one commit per task, with its review trailers".into(),
        format!("  {breeze} status   # the run, task by task"),
        format!("  {breeze} report   # the same as Markdown"),
        format!("  {breeze} report --html   # a page: the timeline of the lanes, the conflict graph, every task's files"),
        format!("  {breeze} logs 5   # the role logs of task 5 (two failures, an Advisor consult)"),
        "  ls .breeze/runs/*/   # contracts, reviews, advisor answers, events.jsonl".into(),
    ];
    output::println("\nwhere to look:")?;
    for line in lines {
        output::println(&line)?;
    }
    Ok(code)
}

/// Task 9 has no write set: the scaffolder proposes one (as `breeze plan --fill-writes`
/// would), and the plan is committed with it.
fn fill_write_sets(dir: &std::path::Path, plan: &std::path::Path) -> Result<(), CliError> {
    let mut options = breeze_engine::scaffold::ScaffoldOptions::new(dir);
    options.plan = Some(plan.to_path_buf());
    let runtime = crate::commands::run::runtime()?;
    let report = runtime.block_on(breeze_engine::scaffold::fill_writes(
        options,
        tokio_util::sync::CancellationToken::new(),
    ))?;
    for (id, writes) in &report.filled {
        output::println(&format!(
            "scaffolder: task {id} had no write set; proposed {} (breeze plan --fill-writes)",
            writes.join(", ")
        ))?;
    }
    breeze_engine::demo::commit_plan(dir)?;
    output::println("")?;
    Ok(())
}

/// How to call this binary again: `breeze` when it is the one on PATH, else its full path
/// (after `cargo run`, for example).
fn invocation() -> String {
    let Ok(exe) = std::env::current_exe() else { return "breeze".into() };
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    let on_path = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path)
            .any(|dir| std::fs::canonicalize(dir.join("breeze")).is_ok_and(|found| found == exe))
    });
    if on_path { "breeze".into() } else { exe.display().to_string() }
}
