//! The landings of this run seen on main so far, read commit by commit as main grows.
//!
//! Before a task is landed the engine asks whether a run cut short landed it already (its
//! landing commit found by its trailers). Walking main's history back to the run's start
//! for each task read every landing of the run again: O(tasks) per landing, O(tasks²) a
//! run. Here each commit main gains is read once, when it is first asked about; a main that
//! was rewritten under the run (the tip read before is no longer on its first-parent
//! history) is read again from its tip.

use std::collections::HashMap;
use std::sync::Mutex;

use breeze_git::{GitError, Oid, Repo};

/// Main's landings of one run, as far as main was read.
#[derive(Debug, Default)]
pub(crate) struct LandingsSeen {
    read: Mutex<Read>,
}

/// The run whose landings were read, the tip main was read from, and the newest landing
/// commit of each task below it.
#[derive(Debug, Default)]
struct Read {
    run_id: String,
    tip: Option<Oid>,
    landed: HashMap<String, Oid>,
}

impl LandingsSeen {
    /// The newest commit on main's first-parent history, down to `stop_at` (main when the
    /// run started), whose trailers say task `task_id` of run `run_id` landed — what
    /// [`Repo::find_landing`] says — reading only the commits main gained since it was last
    /// asked.
    pub fn find(
        &self,
        repo: &Repo,
        run_id: &str,
        task_id: &str,
        stop_at: Oid,
    ) -> Result<Option<Oid>, GitError> {
        let Some(tip) = main_tip(repo)? else { return Ok(None) };
        let mut read = self.read.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if read.run_id != run_id {
            *read = Read { run_id: run_id.to_string(), ..Read::default() };
        }
        if read.tip != Some(tip) {
            let mut since = repo.run_landings_since(tip, run_id, read.tip, &[stop_at])?;
            if read.tip.is_some() && !since.reached_known {
                // Rewritten: what was read before may be gone from main.
                read.landed.clear();
                since = repo.run_landings_since(tip, run_id, None, &[stop_at])?;
            }
            // Newest first: a task's newest landing is the first one read.
            let mut newer: HashMap<String, Oid> = HashMap::new();
            for (task, commit) in since.landings {
                newer.entry(task).or_insert(commit);
            }
            read.landed.extend(newer);
            read.tip = Some(tip);
        }
        Ok(read.landed.get(task_id.trim()).copied())
    }
}

/// Main's tip; `None` when main does not exist (nothing landed on it).
fn main_tip(repo: &Repo) -> Result<Option<Oid>, GitError> {
    match repo.main_tip() {
        Ok(tip) => Ok(Some(tip)),
        Err(_) if !repo.branch_exists(repo.main_branch())? => Ok(None),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository whose main holds `landings` (task ids landed by run `r`, one commit
    /// each, after a first commit); its first commit.
    fn repo_with_landings(dir: &std::path::Path, landings: &[&str]) -> (Repo, Oid) {
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git").arg("-C").arg(dir).args(args).output();
            assert!(out.unwrap().status.success(), "git {args:?}");
        };
        git(&["init", "-q", "-b", "main"]);
        git(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "start",
        ]);
        let repo = Repo::open(dir).unwrap();
        let start = repo.main_tip().unwrap();
        for task in landings {
            land(dir, task);
        }
        (repo, start)
    }

    fn land(dir: &std::path::Path, task: &str) {
        let message = format!("Task {task}\n\nBreeze-Task: {task}\nBreeze-Run: r\n");
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                &message,
            ])
            .output()
            .unwrap();
        assert!(out.status.success());
    }

    #[test]
    fn a_landing_is_found_as_the_walk_of_mains_history_finds_it() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, start) = repo_with_landings(dir.path(), &["1", "2"]);
        let seen = LandingsSeen::default();
        for task in ["1", "2", "3"] {
            assert_eq!(
                seen.find(&repo, "r", task, start).unwrap(),
                repo.find_landing("r", task, Some(start)).unwrap(),
                "task {task}"
            );
        }
        assert_eq!(seen.find(&repo, "other", "1", start).unwrap(), None, "another run's");
        // Main moves on: the new landings are read, a task landed again is its newest.
        land(dir.path(), "3");
        land(dir.path(), "1");
        for task in ["1", "2", "3"] {
            let found = seen.find(&repo, "r", task, start).unwrap();
            assert!(found.is_some(), "task {task}");
            assert_eq!(found, repo.find_landing("r", task, Some(start)).unwrap(), "task {task}");
        }
    }

    #[test]
    fn a_main_rewritten_under_the_run_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, start) = repo_with_landings(dir.path(), &["1", "2"]);
        let seen = LandingsSeen::default();
        assert!(seen.find(&repo, "r", "2", start).unwrap().is_some());
        // main reset to its start and landed anew without task 2.
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir.path())
            .args(["reset", "-q", "--hard", &start.to_string()])
            .output()
            .unwrap();
        assert!(out.status.success());
        land(dir.path(), "3");
        assert_eq!(seen.find(&repo, "r", "2", start).unwrap(), None);
        assert_eq!(seen.find(&repo, "r", "1", start).unwrap(), None);
        assert!(seen.find(&repo, "r", "3", start).unwrap().is_some());
    }
}
