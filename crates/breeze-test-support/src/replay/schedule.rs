//! The bound a replay is measured against: greedy list scheduling of the plan on the same
//! lanes, in breeze's own priority order (the longest chain of dependents first, then plan
//! order), where a task starts once its dependencies are done and no running task
//! conflicts with it — breeze's rules with landing and review taking no time.

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::setup::Prepared;
use super::{Git, ReplayError};

/// One task of the plan, as `breeze plan --json` reports it.
#[derive(Debug, Clone)]
pub struct PlanTask {
    /// Its id.
    pub id: String,
    /// Indices of the tasks it depends on.
    pub depends_on: Vec<usize>,
    /// breeze's priority: the longest chain of tasks depending on it.
    pub priority: u64,
}

/// The plan as breeze analysed it.
#[derive(Debug, Clone)]
pub struct PlanShape {
    /// Tasks in plan order.
    pub tasks: Vec<PlanTask>,
    /// Conflicting pairs (indices, smaller first).
    pub conflicts: HashSet<(usize, usize)>,
    /// Write groups.
    pub groups: usize,
    /// The lanes `breeze plan` says a run uses.
    pub workers: u64,
    /// The widest set of tasks that can run together, when this breeze reports it.
    pub widest: Option<usize>,
}

/// A schedule's length and its lower bounds.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    /// Greedy list scheduling's makespan.
    pub list: f64,
    /// The longest chain of dependencies, by task times (a lower bound).
    pub critical_path: f64,
    /// All task time over the lanes (a lower bound).
    pub work_per_lane: f64,
    /// The mean task time used.
    pub task_seconds: f64,
}

impl PlanShape {
    /// `breeze plan PLAN --json`, read.
    pub(super) fn read(
        git: Git,
        breeze: &Path,
        prepared: &Prepared,
    ) -> Result<PlanShape, ReplayError> {
        let mut command = Command::new(breeze);
        git.prepare(&mut command);
        let output = command
            .current_dir(&prepared.repo)
            .arg("plan")
            .arg(&prepared.plan)
            .arg("--json")
            .output()
            .map_err(|err| ReplayError::new(format!("cannot run {}: {err}", breeze.display())))?;
        if !output.status.success() {
            return Err(ReplayError::new(format!(
                "breeze plan refuses the replay's plan: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        let json: Value = serde_json::from_slice(&output.stdout)
            .map_err(|err| ReplayError::new(format!("breeze plan --json: {err}")))?;
        PlanShape::from_json(&json)
    }

    fn from_json(json: &Value) -> Result<PlanShape, ReplayError> {
        let listed = json["tasks"].as_array().cloned().unwrap_or_default();
        let ids: Vec<String> =
            listed.iter().map(|t| t["id"].as_str().unwrap_or_default().to_string()).collect();
        let index = |id: &Value| {
            let id = id.as_str().unwrap_or_default();
            ids.iter().position(|known| known == id).ok_or_else(|| {
                ReplayError::new(format!("breeze plan --json names an unknown task {id}"))
            })
        };
        let mut tasks = Vec::with_capacity(listed.len());
        for (task, id) in listed.iter().zip(&ids) {
            let depends_on = (task["depends_on"].as_array().into_iter().flatten())
                .map(index)
                .collect::<Result<Vec<usize>, ReplayError>>()?;
            let priority = task["priority"].as_u64().unwrap_or(0);
            tasks.push(PlanTask { id: id.clone(), depends_on, priority });
        }
        let mut conflicts = HashSet::new();
        for pair in json["conflicts"].as_array().into_iter().flatten() {
            let (a, b) = (index(&pair["a"])?, index(&pair["b"])?);
            conflicts.insert((a.min(b), a.max(b)));
        }
        Ok(PlanShape {
            tasks,
            conflicts,
            groups: json["groups"].as_array().map_or(0, Vec::len),
            workers: json["workers"].as_u64().unwrap_or(0),
            widest: json["parallelism"]["widest"].as_array().map(Vec::len),
        })
    }

    /// The length of the longest chain of dependencies, in tasks.
    pub fn critical_path_tasks(&self) -> usize {
        self.chain_lengths(&vec![1.0; self.tasks.len()]).into_iter().fold(0.0, f64::max) as usize
    }

    /// For each task, the longest chain of dependencies ending with it, in task time.
    fn chain_lengths(&self, times: &[f64]) -> Vec<f64> {
        let mut done: Vec<Option<f64>> = vec![None; self.tasks.len()];
        fn length(shape: &PlanShape, times: &[f64], done: &mut [Option<f64>], i: usize) -> f64 {
            if let Some(known) = done[i] {
                return known;
            }
            let before = (shape.tasks[i].depends_on.iter())
                .map(|&d| length(shape, times, done, d))
                .fold(0.0, f64::max);
            let total = before + times[i];
            done[i] = Some(total);
            total
        }
        (0..self.tasks.len()).map(|i| length(self, times, &mut done, i)).collect()
    }

    fn conflict(&self, a: usize, b: usize) -> bool {
        self.conflicts.contains(&(a.min(b), a.max(b)))
    }

    /// Greedy list scheduling on `lanes` with task `i` taking `times[i]` seconds, and its
    /// lower bounds.
    pub fn bound(&self, times: &[f64], lanes: u32) -> Schedule {
        let n = self.tasks.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(self.tasks[i].priority), i));
        let mut finished = vec![false; n];
        let mut started = vec![false; n];
        let mut running: Vec<(f64, usize)> = Vec::new();
        let mut now = 0.0;
        loop {
            for &i in &order {
                if running.len() >= lanes.max(1) as usize {
                    break;
                }
                let ready = !started[i]
                    && self.tasks[i].depends_on.iter().all(|&d| finished[d])
                    && running.iter().all(|&(_, other)| !self.conflict(i, other));
                if ready {
                    started[i] = true;
                    running.push((now + times[i], i));
                }
            }
            let Some(next) = running.iter().map(|&(end, _)| end).reduce(f64::min) else { break };
            now = next;
            running.retain(|&(end, i)| {
                let ends = end <= now;
                finished[i] |= ends;
                !ends
            });
        }
        let total: f64 = times.iter().sum();
        Schedule {
            list: now,
            critical_path: self.chain_lengths(times).into_iter().fold(0.0, f64::max),
            work_per_lane: total / lanes.max(1) as f64,
            task_seconds: total / n.max(1) as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> PlanShape {
        // 0 conflicts with 1, 2, 3 (one write group); 4 depends on 0.
        let json = serde_json::json!({
            "workers": 3,
            "groups": [{"id": 1, "tasks": ["1", "2", "3", "4", "5"]}],
            "tasks": [
                {"id": "1", "depends_on": [], "priority": 1},
                {"id": "2", "depends_on": [], "priority": 0},
                {"id": "3", "depends_on": [], "priority": 0},
                {"id": "4", "depends_on": [], "priority": 0},
                {"id": "5", "depends_on": ["1"], "priority": 0},
            ],
            "conflicts": [{"a": "1", "b": "2"}, {"a": "1", "b": "3"}, {"a": "1", "b": "4"}],
        });
        PlanShape::from_json(&json).unwrap()
    }

    #[test]
    fn list_scheduling_follows_breezes_priority_and_conflicts() {
        let shape = shape();
        // 1 first (it heads a chain); 2, 3, 4 conflict with it and wait; then they take
        // the three lanes, 5 follows on the first free one.
        let one_lane = shape.bound(&[2.0; 5], 1);
        assert_eq!(one_lane.list, 10.0);
        let three = shape.bound(&[2.0; 5], 3);
        assert_eq!(three.list, 6.0, "1 | 2 3 4 | 5");
        assert_eq!(three.critical_path, 4.0);
        assert!((three.work_per_lane - 10.0 / 3.0).abs() < 1e-9);
        assert_eq!(shape.critical_path_tasks(), 2);
        assert_eq!(shape.widest, None, "an older breeze does not report it");
    }
}
