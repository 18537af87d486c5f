//! What the run's journals (`.breeze/runs/<id>/events.jsonl`) say: when tasks started,
//! on which lanes, how long workers and verify commands took, when tasks landed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::ReplayError;

/// Facts of every run in the repository, read from the journals.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    /// The first `run_started`, in seconds since the epoch.
    pub first_start: f64,
    /// The last `run_finished` (or, after a kill, the last event), in seconds since the
    /// epoch.
    pub last_end: f64,
    /// Lanes named by `task_started` events.
    pub lanes: BTreeSet<u32>,
    /// `landed` events by task id, with their time.
    pub landed: BTreeMap<String, f64>,
    /// Seconds of worker processes, summed per task.
    pub worker: BTreeMap<String, f64>,
    /// Seconds of each `land.verify` command.
    pub verify: Vec<f64>,
    /// How many times a run started or resumed.
    pub starts: usize,
    /// Per task, the times it entered each state (`running`, `reviewing`, `landing`,
    /// `landed`; the last time for each).
    pub states: BTreeMap<String, BTreeMap<String, f64>>,
}

/// Mean seconds per landed task spent in each stage.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stages {
    /// From the last `running` to `reviewing`: the worker and the engine's commit.
    pub working: f64,
    /// From `reviewing` to `landing`: gates and the reviewer (serial).
    pub reviewing: f64,
    /// From `landing` to `landed`: waiting for and doing the landing (serial).
    pub landing: f64,
}

impl RunFacts {
    /// Reads every run's journal in `repo/.breeze/runs/`.
    pub fn read(repo: &Path) -> Result<RunFacts, ReplayError> {
        let runs = repo.join(".breeze/runs");
        let mut journals: Vec<_> = std::fs::read_dir(&runs)
            .map_err(ReplayError::io(&runs))?
            .filter_map(Result::ok)
            .map(|entry| entry.path().join("events.jsonl"))
            .filter(|path| path.exists())
            .collect();
        // Run ids are uuid v7: in time order by name.
        journals.sort();
        let mut facts = RunFacts { first_start: f64::MAX, ..RunFacts::default() };
        for journal in journals {
            let text = std::fs::read_to_string(&journal).map_err(ReplayError::io(&journal))?;
            facts.add_journal(&text);
        }
        if facts.starts == 0 {
            return Err(ReplayError::new(format!("no run started in {}", runs.display())));
        }
        Ok(facts)
    }

    fn add_journal(&mut self, text: &str) {
        let mut processes: BTreeMap<u64, (String, f64)> = BTreeMap::new();
        let mut commands: BTreeMap<u64, f64> = BTreeMap::new();
        // A line cut short by a kill is not JSON: skipped.
        for event in text.lines().filter_map(|line| serde_json::from_str::<Value>(line).ok()) {
            let Some(at) = event["at"].as_str().and_then(seconds_since_epoch) else { continue };
            let e = &event["event"];
            let task = e["task"].as_str().unwrap_or_default().to_string();
            let pid = e["pid"].as_u64().unwrap_or_default();
            self.last_end = self.last_end.max(at);
            match e["kind"].as_str().unwrap_or_default() {
                "run_started" => {
                    self.starts += 1;
                    self.first_start = self.first_start.min(at);
                }
                "task_started" => {
                    self.lanes.extend(e["lane"].as_u64().map(|lane| lane as u32));
                }
                "process_started" if e["role"] == "worker" => {
                    processes.insert(pid, (task, at));
                }
                "process_ended" => {
                    if let Some((task, start)) = processes.remove(&pid) {
                        *self.worker.entry(task).or_default() += at - start;
                    }
                }
                "command_started" if e["purpose"] == "land.verify" => {
                    commands.insert(pid, at);
                }
                "command_ended" => {
                    if let Some(start) = commands.remove(&pid) {
                        self.verify.push(at - start);
                    }
                }
                "task_state" => {
                    let state = e["state"].as_str().unwrap_or_default().to_string();
                    self.states.entry(task).or_default().insert(state, at);
                }
                "landed" => {
                    self.landed.insert(task, at);
                }
                _ => {}
            }
        }
    }

    /// From the first start to the last event, in seconds.
    pub fn makespan(&self) -> f64 {
        (self.last_end - self.first_start).max(0.0)
    }

    /// Mean worker seconds per task that ran a worker.
    pub fn mean_worker_seconds(&self) -> f64 {
        self.worker.values().sum::<f64>() / self.worker.len().max(1) as f64
    }

    /// Mean seconds per landed task in each stage (tasks whose stages are all known).
    pub fn stage_seconds(&self) -> Stages {
        let mut sum = Stages::default();
        let mut count = 0.0;
        for states in self.states.values() {
            let time = |state: &str| states.get(state).copied();
            let (Some(running), Some(reviewing), Some(landing), Some(landed)) =
                (time("running"), time("reviewing"), time("landing"), time("landed"))
            else {
                continue;
            };
            sum.working += reviewing - running;
            sum.reviewing += landing - reviewing;
            sum.landing += landed - landing;
            count += 1.0;
        }
        if count > 0.0 {
            sum.working /= count;
            sum.reviewing /= count;
            sum.landing /= count;
        }
        sum
    }
}

/// A journal time (`2026-11-30T12:00:00.123Z`, UTC) as seconds since the epoch.
fn seconds_since_epoch(at: &str) -> Option<f64> {
    let time = humantime::parse_rfc3339(at).ok()?;
    Some(time.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_times_are_seconds_since_the_epoch() {
        assert_eq!(seconds_since_epoch("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(seconds_since_epoch("2023-11-14T22:13:20.500Z"), Some(1_700_000_000.5));
        assert_eq!(seconds_since_epoch("yesterday"), None);
    }

    #[test]
    fn facts_pair_processes_and_commands_by_pid() {
        let lines = [
            r#"{"at":"2023-11-14T22:13:20Z","event":{"kind":"run_started"}}"#,
            r#"{"at":"2023-11-14T22:13:20.100Z","event":{"kind":"task_started","task":"1","lane":2}}"#,
            r#"{"at":"2023-11-14T22:13:20.200Z","event":{"kind":"process_started","task":"1","role":"worker","pid":7}}"#,
            r#"{"at":"2023-11-14T22:13:22.200Z","event":{"kind":"process_ended","task":"1","role":"worker","pid":7}}"#,
            r#"{"at":"2023-11-14T22:13:22.500Z","event":{"kind":"command_started","task":"1","purpose":"land.verify","pid":8}}"#,
            r#"{"at":"2023-11-14T22:13:23.500Z","event":{"kind":"command_ended","pid":8}}"#,
            r#"{"at":"2023-11-14T22:13:24Z","event":{"kind":"landed","task":"1"}}"#,
            r#"{"at":"2023-11-14T22:13:24.5"#,
        ];
        let mut facts = RunFacts { first_start: f64::MAX, ..RunFacts::default() };
        facts.add_journal(&lines.join("\n"));
        assert_eq!(facts.lanes, BTreeSet::from([2]));
        assert!((facts.worker["1"] - 2.0).abs() < 1e-6);
        assert_eq!(facts.verify.len(), 1);
        assert!((facts.verify[0] - 1.0).abs() < 1e-6);
        assert!((facts.makespan() - 4.0).abs() < 1e-6);
        assert!(facts.landed.contains_key("1"));
    }
}
