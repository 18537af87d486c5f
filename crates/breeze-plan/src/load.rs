//! Reading a plan into the one model: a file (`*.toml` as plan.toml, anything else as
//! Plans.md, with the archives a Plans.md points to and a warning for a file entry that
//! names a folder), or the text of either form.

use std::path::Path;

use crate::error::{PlanError, PlanWarning, Problem, ProblemKind};
use crate::model::Plan;
use crate::{plans_md, toml_plan};

/// Reads a plan file: `*.toml` as plan.toml, anything else as Plans.md. Extension tables
/// (`[task.<name>]`) are refused; [`load_with_extensions`] accepts named ones.
///
/// Besides parsing, reads the archives a Plans.md points to (a dependency they show done
/// counts as done, see [`parse_plans_md`]) and warns about exact-file entries that name a
/// directory next to the plan (`src/auth` where `src/auth/` was meant), unless the task
/// claims every file in it too (it replaces the folder with a file, which deletes them).
pub fn load(path: &Path) -> Result<Plan, PlanError> {
    load_with_extensions(path, &[])
}

/// [`load`], accepting the plan.toml extension tables `extensions` (kept in
/// [`Plan::extensions`]; any other unknown key is still an error).
pub fn load_with_extensions(path: &Path, extensions: &[&str]) -> Result<Plan, PlanError> {
    let bytes = std::fs::read(path).map_err(|e| {
        PlanError::single(Problem::new(
            path,
            None,
            ProblemKind::Io,
            format!("cannot read the plan: {e}"),
            "check the path; `breeze plan` reads a Plans.md or a plan.toml",
        ))
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        PlanError::single(Problem::new(
            path,
            Some(line),
            ProblemKind::Syntax,
            "the plan is not UTF-8 text",
            "save the file as UTF-8",
        ))
    })?;
    let is_toml = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    let mut plan = if is_toml {
        toml_plan::parse(&text, path, extensions)?
    } else {
        plans_md::parse_with_history(&text, path)?
    };
    if let Some(root) = path.parent() {
        let root = if root.as_os_str().is_empty() { Path::new(".") } else { root };
        for task in &plan.tasks {
            for entry in task.writes.entries() {
                if entry.ends_with('/')
                    || entry.contains(['*', '?', '[', '{'])
                    || !root.join(entry).is_dir()
                {
                    continue;
                }
                // A task may replace the folder with a file only if it claims what the folder
                // holds: deleting those files is a change too.
                let files = files_under(root, entry);
                let unclaimed: Vec<&String> =
                    files.iter().filter(|f| !task.writes.matches(f)).collect();
                if !files.is_empty() && unclaimed.is_empty() {
                    continue;
                }
                let mut message = format!(
                    "task `{}`: `{entry}` is a directory; as written it claims only a file of that name — write `{entry}/` to claim what is inside",
                    task.id
                );
                if let Some(first) = unclaimed.first() {
                    let more = if unclaimed.len() > 1 { ", …" } else { "" };
                    message.push_str(&format!(
                        ", or, to replace the folder with a file, claim its files too (`{first}`{more})"
                    ));
                }
                plan.warnings.push(PlanWarning::new(path, Some(task.line), message));
            }
        }
    }
    Ok(plan)
}

/// The files (and links) under the folder `dir` of `root`, as repository paths (`dir/a`),
/// sorted; `.git` is skipped. At most [`MAX_FILES_LISTED`] are looked at.
fn files_under(root: &Path, dir: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(folder) = pending.pop() {
        let Ok(read) = std::fs::read_dir(root.join(&folder)) else { continue };
        for item in read.flatten() {
            let name = item.file_name().to_string_lossy().into_owned();
            if name == ".git" {
                continue;
            }
            let rel = format!("{folder}/{name}");
            match item.file_type() {
                Ok(kind) if kind.is_dir() => pending.push(rel),
                Ok(_) => found.push(rel),
                Err(_) => {}
            }
            if found.len() >= MAX_FILES_LISTED {
                found.sort();
                return found;
            }
        }
    }
    found.sort();
    found
}

/// How many files of a folder named as a file the plan warning looks at.
const MAX_FILES_LISTED: usize = 10_000;

/// Parses Plans.md text. `path` is only used in messages and [`Plan::path`]; no archive is
/// read, so a dependency on an id the text does not have holds its dependent back
/// ([`Task::blocked`](crate::model::Task::blocked)).
pub fn parse_plans_md(text: &str, path: &Path) -> Result<Plan, PlanError> {
    plans_md::parse(text, path)
}

/// [`parse_plans_md`], reading the archives the plan points to relative to `path`'s folder
/// (as [`load`] does): a dependency they show done counts as done. For a Plans.md whose
/// text was read elsewhere (a run's copy of its plan).
pub fn parse_plans_md_with_archives(text: &str, path: &Path) -> Result<Plan, PlanError> {
    plans_md::parse_with_history(text, path)
}

/// Parses plan.toml text. `path` is only used in messages and [`Plan::path`].
pub fn parse_plan_toml(text: &str, path: &Path) -> Result<Plan, PlanError> {
    toml_plan::parse(text, path, &[])
}

/// [`parse_plan_toml`], accepting the extension tables `extensions`.
pub fn parse_plan_toml_with_extensions(
    text: &str,
    path: &Path,
    extensions: &[&str],
) -> Result<Plan, PlanError> {
    toml_plan::parse(text, path, extensions)
}
