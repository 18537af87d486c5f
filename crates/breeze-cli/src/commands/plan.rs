//! `breeze plan`: write groups, lanes, conflicts and dependencies of a plan.

use std::path::{Path, PathBuf};

use breeze_protocol::ExitCode;
use tokio_util::sync::CancellationToken;

use crate::args::PlanArgs;
use crate::error::{CliError, CliResult, ErrorKind};
use crate::output;

pub fn run(args: &PlanArgs) -> CliResult {
    if args.fill_writes {
        return fill_writes(args);
    }
    if args.fill_ids {
        fill_ids(args)?;
    }
    let root = breeze_git::Repo::open(&crate::workdir::here())
        .map(|repo| repo.workdir().to_path_buf())
        .ok();
    let plan_path = resolve(args.plan.as_deref(), root.as_deref())?;
    // The configuration is checked as `breeze run` would check it, so what `plan` accepts
    // runs.
    let config = match &root {
        Some(root) => breeze_engine::Config::load(root).map_err(|err| {
            CliError::new(ErrorKind::Config, err.to_string())
                .caused_by(err)
                .hint("fix breeze.toml, then run `breeze plan` again")
        })?,
        None => breeze_engine::Config::defaults(),
    };
    let max_workers = match args.max_workers {
        Some(n) if (1..=3).contains(&n) => n,
        Some(n) => {
            return Err(CliError::usage(format!("--max-workers {n} is out of range"))
                .hint("use 1, 2 or 3 lanes"));
        }
        None => config.max_workers,
    };
    let mut plan = breeze_plan::load_with_extensions(&plan_path, breeze_engine::PLAN_EXTENSIONS)
        .map_err(plan_error)?;
    // The shared files as the run would see them: the project's own changelog, and only
    // the files the repository has.
    if let Some(root) = &root {
        plan.shared_files = breeze_engine::changelog::shared_files_in(
            root,
            &config.main_branch,
            &config.land.changelog,
        );
        plan.on_main = landed_on_main(root, &config, &plan);
    }
    let analysis = breeze_plan::analyze(&plan, max_workers).map_err(plan_error)?;
    warn_if_template(&plan_path);
    if args.json {
        let text = serde_json::to_string_pretty(&breeze_plan::render::json(&plan, &analysis))
            .unwrap_or_default();
        output::println(&text)?;
    } else if args.dot {
        // Warnings go where each form has room for them, once: in the JSON, in the table,
        // and — as DOT has none — on stderr.
        for warning in &plan.warnings {
            eprintln!("warning: {warning}");
        }
        output::print(&breeze_plan::render::dot(&plan, &analysis))?;
    } else {
        output::print(&breeze_plan::render::table(&plan, &analysis))?;
        // Who would review and advise the work, as `breeze run` would pair them.
        let root = root.as_deref().unwrap_or(Path::new("."));
        output::print(&format!("\n{}", breeze_engine::independence::describe(&config, root)))?;
    }
    Ok(ExitCode::Success)
}

/// The plan's tasks already on the branch a run would land on, found by their trailers as
/// the run finds them (it would not run them again); none when that cannot be read.
fn landed_on_main(
    root: &Path,
    config: &breeze_engine::Config,
    plan: &breeze_plan::Plan,
) -> std::collections::BTreeSet<breeze_plan::TaskId> {
    let Some(repo) =
        breeze_engine::target_branch::open_on_landing_branch(root, &config.main_branch)
    else {
        return Default::default();
    };
    let template = &config.land.message;
    match breeze_engine::landing_message::landed_on_main(&repo, plan, template) {
        Ok(landed) => landed.into_keys().map(breeze_plan::TaskId::new).collect(),
        Err(_) => Default::default(),
    }
}

/// `breeze init`'s untouched template is analysed, with a warning on stderr (every output
/// form keeps its shape): `breeze run` would refuse it.
fn warn_if_template(plan_path: &Path) {
    use breeze_engine::preflight::template;
    let Some((line, _)) =
        std::fs::read_to_string(plan_path).ok().as_deref().and_then(template::template_marker)
    else {
        return;
    };
    let shown = plan_path.file_name().unwrap_or(plan_path.as_os_str()).to_string_lossy();
    let (message, hint) = template::template_message(&shown, line);
    output::eprint(&format!("warning: {message}; `breeze run` refuses it: {hint}\n"));
}

/// `breeze plan --fill-writes`: the scaffolder proposes write sets; the plan file gets them.
fn fill_writes(args: &PlanArgs) -> CliResult {
    let mut options = breeze_engine::scaffold::ScaffoldOptions::new(crate::workdir::here());
    options.plan = args.plan.clone();
    let runtime = crate::commands::run::runtime()?;
    let report = runtime
        .block_on(breeze_engine::scaffold::fill_writes(options, CancellationToken::new()))?;
    let (plan, analysis) = &report.before;
    output::println("Before:")?;
    output::print(&breeze_plan::render::table(plan, analysis))?;
    output::println("")?;
    output::println(&format!(
        "Write sets proposed by the scaffolder ({} task(s)):",
        report.filled.len()
    ))?;
    for (id, writes) in &report.filled {
        output::println(&format!("  {id}: {}", writes.join(", ")))?;
    }
    if !report.unfilled.is_empty() {
        output::println(&format!(
            "Still without a write set ({} task(s); each runs alone until it has one — run `breeze plan --fill-writes` again or write them by hand):",
            report.unfilled.len()
        ))?;
        for (id, why) in &report.unfilled {
            output::println(&format!("  {id}: {why}"))?;
        }
    }
    for asked in &report.asked_again {
        output::println(&format!("  (asked again: {asked})"))?;
    }
    if let Some(notes) = &report.notes {
        output::println(&format!("  notes: {notes}"))?;
    }
    output::println("")?;
    output::println(&format!("After (written to {}):", report.plan_path.display()))?;
    let (plan, analysis) = &report.after;
    output::print(&breeze_plan::render::table(plan, analysis))?;
    Ok(ExitCode::Success)
}

/// `breeze plan --fill-ids`: ids for the plan's to-do items that have none, written into
/// the plan (the analysis of the plan as it now reads follows, as for `breeze plan`).
fn fill_ids(args: &PlanArgs) -> Result<(), CliError> {
    let mut options = breeze_engine::scaffold::ScaffoldOptions::new(crate::workdir::here());
    options.plan = args.plan.clone();
    let report = breeze_engine::scaffold::fill_ids(&options)?;
    let path = report.plan_path.display();
    if report.numbered.is_empty() {
        output::println(&format!("Every to-do item of {path} has a task id; nothing to number."))?;
    } else {
        output::println(&format!("Numbered {} item(s) in {path}:", report.numbered.len()))?;
        for proposal in &report.numbered {
            let what = match &proposal.replaces {
                Some(old) => format!("{} (was `{old}`, used twice in its section)", proposal.id),
                None => proposal.id.clone(),
            };
            output::println(&format!("  line {}: {what}  {}", proposal.line, proposal.title))?;
        }
        output::println("Commit the plan before `breeze run`.")?;
    }
    output::println("")?;
    Ok(())
}

/// `breeze draft`: the scaffolder turns a goal into tasks appended to the plan.
pub fn draft(args: &crate::args::DraftArgs) -> CliResult {
    let goal = match (&args.goal, &args.from) {
        (Some(goal), _) => goal.clone(),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .map_err(|err| CliError::io("cannot read the goal from stdin", err))?;
            text
        }
        (None, Some(path)) => std::fs::read_to_string(path).map_err(|err| {
            CliError::named_path(format!("cannot read {}", path.display()), err)
                .hint("pass the goal as an argument, or a readable file with --from")
        })?,
        (None, None) => {
            return Err(
                CliError::usage("no goal given").hint("`breeze draft \"GOAL\"` or `--from FILE`")
            );
        }
    };
    if goal.trim().is_empty() {
        return Err(
            CliError::usage("the goal is empty").hint("describe what the tasks should achieve")
        );
    }
    let options = breeze_engine::scaffold::ScaffoldOptions::new(crate::workdir::here());
    let runtime = crate::commands::run::runtime()?;
    let report = runtime.block_on(breeze_engine::scaffold::draft(
        options,
        &goal,
        args.out.as_deref(),
        crate::commands::init::PLANS_TEMPLATE,
        CancellationToken::new(),
    ))?;
    let verb = if report.created { "created" } else { "added to" };
    let ids: Vec<String> = report.added.iter().map(ToString::to_string).collect();
    output::println(&format!(
        "{} task(s) {verb} {}: {}",
        ids.len(),
        report.plan_path.display(),
        ids.join(", ")
    ))?;
    if !report.renumbered.is_empty() {
        let renames: Vec<String> =
            report.renumbered.iter().map(|(old, new)| format!("{old} → {new}")).collect();
        output::println(&format!(
            "  (renumbered after the plan's own ids: {})",
            renames.join(", ")
        ))?;
    }
    for asked in &report.asked_again {
        output::println(&format!("  (asked again: {asked})"))?;
    }
    if let Some(notes) = &report.notes {
        output::println(&format!("  notes: {notes}"))?;
    }
    output::println("")?;
    let (plan, analysis) = &report.after;
    output::print(&breeze_plan::render::table(plan, analysis))?;
    Ok(ExitCode::Success)
}

/// A plan that cannot be analysed, with what to do.
pub fn plan_error(err: breeze_plan::PlanError) -> CliError {
    CliError::new(ErrorKind::Plan, err.to_string())
        .caused_by(err)
        .hint("fix the plan, then run `breeze plan` again")
}

fn resolve(given: Option<&Path>, root: Option<&Path>) -> Result<PathBuf, CliError> {
    if let Some(path) = given {
        return Ok(path.to_path_buf());
    }
    let here = crate::workdir::here();
    let dir = root.unwrap_or(&here);
    for name in ["plan.toml", "Plans.md"] {
        if dir.join(name).is_file() {
            return Ok(dir.join(name));
        }
    }
    Err(CliError::usage(format!(
        "no plan given and neither plan.toml nor Plans.md exists in {}",
        dir.display()
    ))
    .hint("pass a plan (`breeze plan PLAN`) or write one with `breeze init`"))
}
