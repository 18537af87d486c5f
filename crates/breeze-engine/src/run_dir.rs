//! Where a run keeps its files: `.breeze/runs/<run-id>/`.

use std::path::{Path, PathBuf};

/// breeze's state directory at the repository root.
pub const STATE_DIR: &str = ".breeze";

/// The files of one run.
#[derive(Debug, Clone)]
pub struct RunDir {
    root: PathBuf,
}

impl RunDir {
    /// The run directory of `run_id` under `repo_root`.
    pub fn new(repo_root: &Path, run_id: &str) -> RunDir {
        RunDir { root: runs_dir(repo_root).join(run_id) }
    }

    /// Creates the directory tree.
    pub fn create(&self) -> std::io::Result<()> {
        for sub in ["contracts", "advisor", "reviews", "logs", "io"] {
            std::fs::create_dir_all(self.root.join(sub))?;
        }
        Ok(())
    }

    /// The run directory.
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// `run.json`: the atomic snapshot.
    pub fn snapshot(&self) -> PathBuf {
        self.root.join("run.json")
    }
    /// `events.jsonl`: the append-only journal.
    pub fn events(&self) -> PathBuf {
        self.root.join("events.jsonl")
    }
    /// `cycles.jsonl`: one line per worker attempt (seed-compatible).
    pub fn cycles(&self) -> PathBuf {
        self.root.join("cycles.jsonl")
    }
    /// The sprint contract of a task.
    pub fn contract(&self, task_slug: &str) -> PathBuf {
        self.root.join("contracts").join(format!("{task_slug}.sprint-contract.json"))
    }
    /// An advisor request or response file: `<task>.<reason>.<n>.advisor-{request,response}.json`.
    pub fn advisor_file(&self, task_slug: &str, reason: &str, n: u32, kind: &str) -> PathBuf {
        self.root.join("advisor").join(format!("{task_slug}.{reason}.{n}.advisor-{kind}.json"))
    }
    /// A review file of a round: `<task>.round-<k>.<suffix>`.
    pub fn review_file(&self, task_slug: &str, round: u32, suffix: &str) -> PathBuf {
        self.root.join("reviews").join(format!("{task_slug}.round-{round}.{suffix}"))
    }
    /// The log of one role process.
    pub fn log(&self, task_slug: &str, role: &str, label: &str) -> PathBuf {
        self.root.join("logs").join(format!("{task_slug}.{role}.{label}.log"))
    }
    /// Input/output files handed to a role process.
    pub fn io_file(&self, task_slug: &str, role: &str, label: &str, kind: &str) -> PathBuf {
        self.root.join("io").join(format!("{task_slug}.{role}.{label}.{kind}.json"))
    }
}

/// `.breeze/runs/`.
pub fn runs_dir(repo_root: &Path) -> PathBuf {
    repo_root.join(STATE_DIR).join("runs")
}

/// Run ids under `.breeze/runs/`, oldest first (uuid v7 ids sort by time).
pub fn list_runs(repo_root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(runs_dir(repo_root)) else { return Vec::new() };
    let mut ids: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("run.json").is_file())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect();
    ids.sort();
    ids
}

/// The newest run id, if any.
pub fn latest_run(repo_root: &Path) -> Option<String> {
    list_runs(repo_root).pop()
}

/// Turns a task id into a file-name-safe slug for run files (not for git names).
pub fn file_slug(task_id: &str) -> String {
    let slug: String = task_id
        .chars()
        .map(|c| if c.is_alphanumeric() || c == '.' || c == '-' || c == '_' { c } else { '_' })
        .collect();
    let slug = slug.trim_matches('.').to_string();
    if slug.is_empty() { "task".into() } else { slug }
}
