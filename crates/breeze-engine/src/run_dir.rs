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

    /// The files of one planning session (`breeze plan --fill-writes`, `breeze draft`):
    /// `.breeze/planning/<id>/`, apart from runs.
    pub fn planning(repo_root: &Path, id: &str) -> RunDir {
        RunDir { root: repo_root.join(STATE_DIR).join("planning").join(id) }
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

    /// The run id (the folder's name).
    pub fn run_id(&self) -> &str {
        self.root.file_name().and_then(|name| name.to_str()).unwrap_or_default()
    }

    /// `run.json`: the atomic snapshot.
    pub fn snapshot(&self) -> PathBuf {
        self.root.join("run.json")
    }
    /// `events.jsonl`: the append-only journal.
    pub fn events(&self) -> PathBuf {
        self.root.join("events.jsonl")
    }
    /// `cycles.jsonl`: one line per worker attempt (in the original harness's format).
    pub fn cycles(&self) -> PathBuf {
        self.root.join("cycles.jsonl")
    }
    /// The plan as the run started with it (`plan.md` or `plan.toml`): `resume` reads the
    /// same tasks however the plan file changed since (landings flip its rows to done).
    pub fn plan_copy(&self, original: &Path) -> PathBuf {
        let is_toml = original.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"));
        self.root.join(if is_toml { "plan.toml" } else { "plan.md" })
    }
    /// The plan the run started with: its [copy](Self::plan_copy) (the plan file itself
    /// has changed since — every landing flips its row to done), else the file (older runs).
    pub fn plan_of_run(
        &self,
        original: &Path,
    ) -> Result<breeze_plan::Plan, breeze_plan::PlanError> {
        let Ok(text) = std::fs::read_to_string(self.plan_copy(original)) else {
            return breeze_plan::load_with_extensions(
                original,
                crate::plan_extensions::PLAN_EXTENSIONS,
            );
        };
        let is_toml = original.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"));
        Ok(if is_toml {
            breeze_plan::parse_plan_toml_with_extensions(
                &text,
                original,
                crate::plan_extensions::PLAN_EXTENSIONS,
            )?
        } else {
            breeze_plan::parse_plans_md_with_archives(&text, original)?
        })
    }
    /// Written by `breeze abort` before it stops a live engine: the engine then records
    /// the run as aborted instead of interrupted.
    pub fn abort_marker(&self) -> PathBuf {
        self.root.join("abort-requested")
    }
    /// The sprint contract of a task.
    pub fn contract(&self, task_slug: &str) -> PathBuf {
        self.root.join("contracts").join(format!("{task_slug}.sprint-contract.json"))
    }
    /// Where people's decisions are left: `decisions/`.
    pub fn decisions(&self) -> PathBuf {
        self.root.join("decisions")
    }

    /// A person's decision about a task awaiting approval: `decisions/<task>.json`.
    pub fn decision(&self, task_slug: &str) -> PathBuf {
        self.decisions().join(format!("{task_slug}.json"))
    }
    /// A file of a person's attach to a task (`breeze attach`): `attach/<task>.<kind>.json`,
    /// `kind` one of `request`, `paused`, `left`.
    pub fn attach(&self, task_slug: &str, kind: &str) -> PathBuf {
        self.root.join("attach").join(format!("{task_slug}.{kind}.json"))
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
    /// Sets task `slug`'s round and role files aside — `reviews/<slug>.round-…` and
    /// `io/<slug>.<role>.…` become `<slug>.earlier-<k>.…`, `k` the first number no earlier
    /// set holds — so that a task started again from attempt 1, round 1 (`breeze retry
    /// --fresh`) overwrites none of them. `k`, when a file was moved.
    pub fn set_aside_task_files(&self, slug: &str) -> std::io::Result<Option<u32>> {
        let folders = [self.root.join("reviews"), self.root.join("io")];
        let mut names: Vec<(PathBuf, String)> = Vec::new();
        for folder in &folders {
            let Ok(entries) = std::fs::read_dir(folder) else { continue };
            for entry in entries {
                let name = entry?.file_name().to_string_lossy().into_owned();
                names.push((folder.clone(), name));
            }
        }
        let earlier = |k: u32| format!("{slug}.earlier-{k}.");
        let k = (1..).find(|&k| !names.iter().any(|(_, name)| name.starts_with(&earlier(k))));
        let Some(k) = k else { return Ok(None) };
        let mut moved = false;
        for (folder, name) in &names {
            let Some(rest) = name.strip_prefix(slug).filter(|_| is_task_file(name, slug)) else {
                continue;
            };
            if rest.starts_with(".earlier-") {
                continue;
            }
            std::fs::rename(folder.join(name), folder.join(format!("{slug}.earlier-{k}{rest}")))?;
            moved = true;
        }
        Ok(moved.then_some(k))
    }
    /// The log stem `logs/<name>` of a command or role process, or `<name>.again-<k>` when
    /// an earlier process of that name left its logs there (a step done again after a
    /// resume, a check run again in the same round): no log is ever overwritten.
    pub fn unused_log(&self, name: &str) -> PathBuf {
        let logs = self.root.join("logs");
        unused_log_stem(logs.join(name), |k| logs.join(format!("{name}.again-{k}")))
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

/// Every folder under `.breeze/runs/`, with or without a readable `run.json`, oldest first.
pub fn list_run_folders(repo_root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(runs_dir(repo_root)) else { return Vec::new() };
    let mut ids: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.path().is_dir())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect();
    ids.sort();
    ids
}

/// The newest run id, if any.
pub fn latest_run(repo_root: &Path) -> Option<String> {
    list_runs(repo_root).pop()
}

/// Turns a task id into the file-name-safe slug of its run files (not for git names).
///
/// One-to-one, so two tasks never share a file: letters, digits, `-`, `_` and inner dots
/// stay; every other character — `/`, `%`, spaces, and leading dots (so `.` and `..` are
/// names) — becomes `%XX` per UTF-8 byte. `auth/login` is `auth%2Flogin`, `auth_login`
/// stays `auth_login`, `..` is `%2E%2E`.
pub fn file_slug(task_id: &str) -> String {
    let mut slug = String::with_capacity(task_id.len());
    let mut leading = true;
    for c in task_id.chars() {
        let keep = c.is_alphanumeric() || c == '-' || c == '_' || (c == '.' && !leading);
        leading &= c == '.';
        if keep {
            slug.push(c);
        } else {
            let mut buf = [0u8; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                slug.push_str(&format!("%{byte:02X}"));
            }
        }
    }
    if slug.is_empty() { "%".into() } else { slug }
}

/// Whether `file_name` is a run file of the task whose slug is `slug`:
/// `<slug>.<role or kind>.…` (`<slug>.earlier-<k>.…` for the files of its work before a
/// fresh retry), never a file of task `<slug>.<more>` (`1` vs `1.2`).
pub fn is_task_file(file_name: &str, slug: &str) -> bool {
    const KINDS: &[&str] = &[
        "worker",
        "advisor",
        "reviewer",
        "scaffolder",
        "verify",
        "round-",
        "check-",
        "setup",
        "hook-",
        "pr-command",
        "earlier-",
    ];
    file_name
        .strip_prefix(slug)
        .and_then(|rest| rest.strip_prefix('.'))
        .is_some_and(|rest| KINDS.iter().any(|kind| rest.starts_with(kind)))
}

/// `first`, unless a process already logged under that stem (its `.stdout` exists), then
/// the first `again(k)` (k = 2, 3, …) that is free.
pub(crate) fn unused_log_stem(first: PathBuf, again: impl Fn(u32) -> PathBuf) -> PathBuf {
    let taken = |stem: &Path| breeze_supervise::stream_log_paths(stem).0.exists();
    if !taken(&first) {
        return first;
    }
    (2..).map(again).find(|stem| !taken(stem)).unwrap_or(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_one_to_one_and_safe_file_names() {
        let ids =
            ["auth/login", "auth_login", "auth%2Flogin", ".", "..", "1.2", "1", "a b", "認証"];
        let slugs: Vec<String> = ids.iter().map(|id| file_slug(id)).collect();
        let unique: std::collections::BTreeSet<&String> = slugs.iter().collect();
        assert_eq!(unique.len(), ids.len(), "{slugs:?}");
        for slug in &slugs {
            assert!(!slug.contains('/') && slug != "." && slug != ".." && !slug.is_empty());
        }
        assert_eq!(file_slug("auth/login"), "auth%2Flogin");
        assert_eq!(file_slug(".."), "%2E%2E");
        assert_eq!(file_slug("41.1.2"), "41.1.2");
        assert_eq!(file_slug("認証"), "認証");
    }

    #[test]
    fn a_log_is_never_overwritten_by_a_process_of_the_same_name() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path(), "r");
        std::fs::create_dir_all(run.root().join("logs")).unwrap();
        let first = run.unused_log("1.check-1.attempt-2.round-1");
        assert_eq!(first, run.root().join("logs/1.check-1.attempt-2.round-1"));
        std::fs::write(breeze_supervise::stream_log_paths(&first).0, "first").unwrap();
        let second = run.unused_log("1.check-1.attempt-2.round-1");
        assert_eq!(second, run.root().join("logs/1.check-1.attempt-2.round-1.again-2"));
        std::fs::write(breeze_supervise::stream_log_paths(&second).0, "second").unwrap();
        let third = run.unused_log("1.check-1.attempt-2.round-1");
        assert_eq!(third, run.root().join("logs/1.check-1.attempt-2.round-1.again-3"));
    }

    #[test]
    fn every_command_a_task_runs_logs_as_the_tasks() {
        for name in [
            "1.check-1.attempt-1.round-1.stdout",
            "1.setup.lane-1.stderr",
            "1.hook-pre-commit.stdout",
            "1.pr-command.stdout",
        ] {
            assert!(is_task_file(name, "1"), "{name}");
        }
        assert!(!is_task_file("2.check-1.attempt-1.round-1.stdout", "1"));
    }

    #[test]
    fn a_fresh_start_sets_the_tasks_round_files_aside_and_leaves_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir { root: dir.path().to_path_buf() };
        run.create().unwrap();
        let files = [
            "reviews/1.round-1.diff",
            "io/1.worker.1.input.json",
            "io/1.reviewer.round-1.try-1.output.json",
            "reviews/1.2.round-1.diff",
            "reviews/2.round-1.diff",
        ];
        for file in files {
            std::fs::write(run.root().join(file), file).unwrap();
        }
        assert_eq!(run.set_aside_task_files("1").unwrap(), Some(1));
        let exists = |file: &str| run.root().join(file).exists();
        assert!(exists("reviews/1.earlier-1.round-1.diff") && !exists("reviews/1.round-1.diff"));
        assert!(exists("io/1.earlier-1.worker.1.input.json"));
        assert!(exists("io/1.earlier-1.reviewer.round-1.try-1.output.json"));
        assert!(exists("reviews/1.2.round-1.diff") && exists("reviews/2.round-1.diff"));
        // A second fresh start sets the new files aside as the second earlier set.
        std::fs::write(run.root().join("reviews/1.round-1.diff"), "again").unwrap();
        assert_eq!(run.set_aside_task_files("1").unwrap(), Some(2));
        assert!(exists("reviews/1.earlier-2.round-1.diff"));
        assert!(exists("reviews/1.earlier-1.round-1.diff"));
        assert_eq!(run.set_aside_task_files("1").unwrap(), None, "nothing left to move");
    }

    #[test]
    fn a_task_s_files_are_told_from_a_longer_id_s() {
        assert!(is_task_file("1.worker.2.log.stdout", "1"));
        assert!(is_task_file("1.verify.0123456789ab.stderr", "1"));
        assert!(!is_task_file("1.2.worker.1.log.stdout", "1"));
        assert!(is_task_file("1.2.worker.1.log.stdout", "1.2"));
    }
}
