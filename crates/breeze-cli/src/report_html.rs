//! `breeze report --html`: the run as one self-contained HTML page — a timeline of its
//! lanes (inline SVG), the plan's conflict graph (inline SVG), the task table, and links
//! to each task's diffs, reviews, Advisor answers, contract and logs.
//!
//! Nothing on the page is fetched (no script, stylesheet, font or image), it needs no
//! JavaScript (tooltips are SVG `<title>`s), and every text from run files is escaped.

mod files;
mod graph;
mod html;
mod page;
mod report;
mod spent;
mod time;
mod timeline;
mod timeline_svg;
mod zone;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use breeze_engine::run_dir::RunDir;
use breeze_engine::snapshot::RunSnapshot;
use breeze_plan::{Analysis, Plan};
use breeze_protocol::BreezeStatus;

pub use self::report::{PlanUnreadable, Report};
pub use self::zone::Zone;

/// The file name of the page in the run folder.
pub const FILE_NAME: &str = "report.html";

/// Why the page could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// `--out` names no path breeze can make absolute (it is empty).
    #[error("{}: {source}", path.display())]
    Out {
        /// The path given.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The page's folder could not be created.
    #[error("cannot create {}: {source}", path.display())]
    Folder {
        /// The folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The page could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Page {
        /// The page's path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl<'a> Report<'a> {
    /// What the page shows of a run given its parts rather than its folder: the status,
    /// the journal's events, the plan (or why it could not be read), the time the page is
    /// written and the zone its times are shown in. It links no files.
    pub fn from_parts(
        snapshot: &'a RunSnapshot,
        status: &'a BreezeStatus,
        events: &[breeze_protocol::BreezeEvent],
        plan: Result<(Plan, Analysis), PlanUnreadable>,
        written_at: &str,
        zone: Zone,
    ) -> Report<'a> {
        Report {
            snapshot,
            status,
            timeline: timeline::derive(events),
            journal_problem: None,
            plan,
            files: BTreeMap::new(),
            written_at: written_at.to_string(),
            zone,
        }
    }

    /// The whole page.
    pub fn render(&self) -> String {
        page::render(self)
    }
}

/// Writes the page of the run to `out` (default: `report.html` in the run folder) and
/// returns where it is.
pub fn write(
    repo_root: &Path,
    snapshot: &RunSnapshot,
    status: &BreezeStatus,
    out: Option<&Path>,
) -> Result<PathBuf, WriteError> {
    let run_dir = RunDir::new(repo_root, &snapshot.run_id);
    let path = match out {
        Some(out) => std::path::absolute(out)
            .map_err(|source| WriteError::Out { path: out.to_path_buf(), source })?,
        None => run_dir.root().join(FILE_NAME),
    };
    let page_dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
    std::fs::create_dir_all(&page_dir)
        .map_err(|source| WriteError::Folder { path: page_dir.clone(), source })?;
    let report = gather(repo_root, &run_dir, snapshot, status, &page_dir);
    std::fs::write(&path, page::render(&report))
        .map_err(|source| WriteError::Page { path: path.clone(), source })?;
    Ok(path)
}

/// Reads the journal, the plan copy and the file listing of the run.
fn gather<'a>(
    repo_root: &Path,
    run_dir: &RunDir,
    snapshot: &'a RunSnapshot,
    status: &'a BreezeStatus,
    page_dir: &Path,
) -> Report<'a> {
    let (events, journal_problem) = match breeze_engine::journal::read_events(&run_dir.events()) {
        Ok(events) => (events, None),
        Err(err) => (Vec::new(), Some(format!("{}: {err}", run_dir.events().display()))),
    };
    let ids: Vec<&str> = snapshot.tasks.iter().map(|task| task.id.as_str()).collect();
    let linker = files::Linker::new(page_dir, run_dir.root());
    let mut landed = BTreeMap::new();
    if let Ok(repo) = breeze_git::Repo::open(repo_root) {
        for task in &status.tasks {
            let Some(commit) = &task.commit else { continue };
            if let Some(name) = files::write_landed_diff(&repo, run_dir.root(), &task.id, commit) {
                landed.insert(task.id.clone(), name);
            }
        }
    }
    Report {
        snapshot,
        status,
        timeline: timeline::derive(&events),
        journal_problem,
        plan: load_plan(repo_root, run_dir, snapshot),
        files: files::gather(run_dir.root(), &ids, &landed, &events, &linker),
        written_at: breeze_engine::clock::now_rfc3339(),
        zone: Zone::from_env(),
    }
}

/// The run's copy of its plan (the plan file itself when the copy is missing), analysed.
fn load_plan(
    repo_root: &Path,
    run_dir: &RunDir,
    snapshot: &RunSnapshot,
) -> Result<(Plan, Analysis), PlanUnreadable> {
    let original = repo_root.join(&snapshot.plan);
    let copy = run_dir.plan_copy(&original);
    let path = if copy.is_file() { copy } else { original };
    let unreadable = |source| PlanUnreadable { path: path.clone(), source };
    let plan = breeze_plan::load_with_extensions(&path, breeze_engine::PLAN_EXTENSIONS)
        .map_err(unreadable)?;
    let analysis = breeze_plan::analyze(&plan, snapshot.workers.max(1)).map_err(unreadable)?;
    Ok((plan, analysis))
}

#[cfg(test)]
mod tests;
