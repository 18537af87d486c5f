//! Deciding what runs where: pure functions of the tasks' phases and the plan analysis, with
//! no clock, no git and no async — each rule is tested on its own below.
//!
//! - A task starts when all its dependencies have landed and no task it conflicts with holds
//!   a lane or waits to land.
//! - Among ready tasks, the one with the longest chain of dependents goes first, then plan
//!   order.
//! - A task whose dependency escalated, failed or was blocked (or is blocked in the plan) is
//!   blocked itself, transitively; so is a task the plan holds back (`Task::blocked`: a
//!   dependency on an id the plan does not have), with the plan's reason.
//! - A resumed task gets back the lane whose worktree holds its branch.
//! - The lanes are one pool: a task takes a lane to start and gives it back when it leaves
//!   (landed, escalated, deferred), which caps how many work at once.

use std::collections::{BTreeMap, BTreeSet};

use breeze_plan::{Analysis, Plan, WriteSet};

use crate::snapshot::TaskPhase;

/// The plan and its analysis, asked what may run.
pub(crate) struct Scheduler<'a> {
    plan: &'a Plan,
    analysis: &'a Analysis,
    /// Write sets widened by scope grants (their conflicts are no longer the plan's).
    widened: BTreeMap<usize, WriteSet>,
    /// `land.stack`: a task whose only unlanded dependency has an open pull request starts
    /// on it.
    stacking: bool,
}

/// Tasks that keep conflicting tasks out: those holding a lane, and approved ones waiting
/// for their landing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Busy<'a> {
    pub in_flight: &'a BTreeSet<usize>,
    pub deferred: &'a BTreeSet<usize>,
}

impl Busy<'_> {
    fn contains(&self, index: usize) -> bool {
        self.in_flight.contains(&index) || self.deferred.contains(&index)
    }

    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.in_flight.iter().chain(self.deferred.iter()).copied()
    }
}

impl<'a> Scheduler<'a> {
    pub fn new(plan: &'a Plan, analysis: &'a Analysis) -> Scheduler<'a> {
        Scheduler { plan, analysis, widened: BTreeMap::new(), stacking: false }
    }

    /// The scheduler, seeing the write sets scope grants widened.
    pub fn with_widened(mut self, widened: BTreeMap<usize, WriteSet>) -> Scheduler<'a> {
        self.widened = widened;
        self
    }

    /// The scheduler, stacking tasks on their dependency's open pull request (`land.stack`).
    pub fn with_stacking(mut self, stacking: bool) -> Scheduler<'a> {
        self.stacking = stacking;
        self
    }

    /// Whether every dependency of `index` has landed — or, stacking, all but one whose
    /// pull request is open (the task builds on it).
    fn dependencies_met(&self, index: usize, phases: &[TaskPhase]) -> bool {
        let mut unlanded = self.dependencies(index).filter(|&dep| phases[dep] != TaskPhase::Landed);
        match (unlanded.next(), unlanded.next()) {
            (None, _) => true,
            (Some(dep), None) => self.stacking && phases[dep] == TaskPhase::PrOpen,
            _ => false,
        }
    }

    /// Whether `index` builds on `other`'s open pull request: their conflict does not keep
    /// it out (its change is in the stacked task's base).
    fn stacked_on(&self, index: usize, other: usize, phases: &[TaskPhase]) -> bool {
        self.stacking
            && phases[other] == TaskPhase::PrOpen
            && self.dependencies(index).any(|dep| dep == other)
    }

    /// Whether two tasks may not run at the same time: the plan's conflicts, and the
    /// collisions of write sets widened since.
    fn conflict(&self, a: usize, b: usize) -> bool {
        if self.analysis.conflicts_between(a, b) {
            return true;
        }
        if !self.widened.contains_key(&a) && !self.widened.contains_key(&b) {
            return false;
        }
        let set = |index: usize| self.widened.get(&index).unwrap_or(&self.plan.tasks[index].writes);
        set(a).collision(set(b)).is_some()
    }

    fn dependencies(&self, index: usize) -> impl Iterator<Item = usize> + '_ {
        self.plan.tasks[index].depends_on.iter().filter_map(|dep| self.plan.index_of(dep))
    }

    /// The next task to start, if any: not finished, not busy, all dependencies landed (or,
    /// stacking, all but one with an open pull request), no conflict with a busy task; the longest chain of dependents first, then plan order.
    pub fn next_ready(&self, phases: &[TaskPhase], busy: Busy<'_>) -> Option<usize> {
        (0..phases.len())
            .filter(|&index| !busy.contains(index))
            .filter(|&index| !phases[index].is_terminal() && !phases[index].waits_to_land())
            .filter(|&index| self.dependencies_met(index, phases))
            .filter(|&index| {
                busy.iter().all(|other| {
                    self.stacked_on(index, other, phases) || !self.conflict(index, other)
                })
            })
            .min_by_key(|&index| (std::cmp::Reverse(self.analysis.priority(index)), index))
    }

    /// The tasks that can no longer run, each with why: the plan holds them back (a
    /// dependency on an id it does not have), a dependency is blocked in the plan, or
    /// escalated, failed or blocked in this run — transitively, in one pass.
    pub fn unreachable(&self, phases: &[TaskPhase]) -> Vec<(usize, String)> {
        let mut phases = phases.to_vec();
        let mut found = Vec::new();
        loop {
            let newly: Vec<(usize, String)> = (0..phases.len())
                .filter(|&index| phases[index] == TaskPhase::Queued)
                .filter_map(|index| self.why_unreachable(index, &phases).map(|why| (index, why)))
                .collect();
            if newly.is_empty() {
                return found;
            }
            for (index, _) in &newly {
                phases[*index] = TaskPhase::Blocked;
            }
            found.extend(newly);
        }
    }

    fn why_unreachable(&self, index: usize, phases: &[TaskPhase]) -> Option<String> {
        let task = &self.plan.tasks[index];
        // Held back by the plan: a dependency on an id it does not have.
        if let Some(reason) = &task.blocked {
            return Some(reason.clone());
        }
        if let Some(dep) = task.depends_on.iter().find(|dep| self.plan.blocked.contains(*dep)) {
            return Some(format!("dependency {dep} is blocked in the plan"));
        }
        self.dependencies(index).find_map(|dep| {
            let word = match phases[dep] {
                TaskPhase::Escalated => "escalated",
                TaskPhase::Failed => "failed",
                TaskPhase::Blocked => "blocked",
                _ => return None,
            };
            Some(format!("dependency {} is {word}", self.plan.tasks[dep].id))
        })
    }

    /// When nothing runs and nothing can start: the unfinished tasks (not deferred ones),
    /// which wait on something that will never land.
    pub fn stuck(&self, phases: &[TaskPhase]) -> Vec<usize> {
        (0..phases.len())
            .filter(|&index| !phases[index].is_terminal() && !phases[index].waits_to_land())
            .collect()
    }
}

/// The lane whose worktree holds `branch` (a resumed task finds its own worktree again).
pub(crate) fn lane_holding(branch: Option<&str>, lane_branches: &[Option<String>]) -> Option<u32> {
    let branch = branch?;
    lane_branches
        .iter()
        .position(|held| held.as_deref() == Some(branch))
        .map(|position| position as u32 + 1)
}

/// The free lanes: the one mechanism that caps how many tasks work at once.
#[derive(Debug, Clone)]
pub(crate) struct LanePool {
    free: BTreeSet<u32>,
}

impl LanePool {
    /// Lanes `1..=workers`, all free.
    pub fn new(workers: u32) -> LanePool {
        LanePool { free: (1..=workers.max(1)).collect() }
    }

    /// Whether a task could start now.
    pub fn has_free(&self) -> bool {
        !self.free.is_empty()
    }

    /// Takes `preferred` if it is free, else the lowest free lane not `kept` for another
    /// task, else the lowest free lane.
    pub fn take(&mut self, preferred: Option<u32>, kept: &[u32]) -> Option<u32> {
        let lane = preferred
            .filter(|lane| self.free.contains(lane))
            .or_else(|| self.free.iter().find(|lane| !kept.contains(lane)).copied())
            .or_else(|| self.free.first().copied())?;
        self.free.remove(&lane);
        Some(lane)
    }

    /// A task left its lane.
    pub fn give_back(&mut self, lane: u32) {
        self.free.insert(lane);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TaskPhase::*;

    /// Tasks: 1 (a.txt), 2 (b.txt, after 1), 3 (a.txt: conflicts with 1), 4 (d.txt, after 2).
    fn plan() -> (Plan, Analysis) {
        let text = r#"
[[task]]
id = "1"
title = "one"
dod = "x"
writes = ["a.txt"]
[[task]]
id = "2"
title = "two"
dod = "x"
writes = ["b.txt"]
depends_on = ["1"]
[[task]]
id = "3"
title = "three"
dod = "x"
writes = ["a.txt"]
[[task]]
id = "4"
title = "four"
dod = "x"
writes = ["d.txt"]
depends_on = ["2"]
"#;
        let plan = breeze_plan::parse_plan_toml(text, std::path::Path::new("plan.toml")).unwrap();
        let analysis = breeze_plan::analyze(&plan, 3).unwrap();
        (plan, analysis)
    }

    fn busy<'a>(in_flight: &'a BTreeSet<usize>, deferred: &'a BTreeSet<usize>) -> Busy<'a> {
        Busy { in_flight, deferred }
    }

    #[test]
    fn the_longest_chain_of_dependents_goes_first() {
        let (plan, analysis) = plan();
        let scheduler = Scheduler::new(&plan, &analysis);
        let none = BTreeSet::new();
        // 1 heads the chain 1 → 2 → 4; 3 has no dependents.
        assert_eq!(scheduler.next_ready(&[Queued; 4], busy(&none, &none)), Some(0));
    }

    #[test]
    fn a_task_waits_until_its_dependencies_have_landed() {
        let (plan, analysis) = plan();
        let scheduler = Scheduler::new(&plan, &analysis);
        let none = BTreeSet::new();
        let only_2_and_4 = [Approved, Queued, Landed, Queued];
        // 2 depends on 1, which is approved but not landed; 4 depends on 2.
        let in_flight = BTreeSet::from([0]);
        assert_eq!(scheduler.next_ready(&only_2_and_4, busy(&in_flight, &none)), None);
        let landed = [Landed, Queued, Landed, Queued];
        assert_eq!(scheduler.next_ready(&landed, busy(&none, &none)), Some(1));
    }

    #[test]
    fn conflicting_tasks_never_run_side_by_side_nor_beside_a_waiting_landing() {
        let (plan, analysis) = plan();
        let scheduler = Scheduler::new(&plan, &analysis);
        let none = BTreeSet::new();
        let one = BTreeSet::from([0]);
        let phases = [Working, Queued, Queued, Queued];
        assert_eq!(scheduler.next_ready(&phases, busy(&one, &none)), None, "3 conflicts with 1");
        let deferred_phases = [Deferred, Queued, Queued, Queued];
        assert_eq!(scheduler.next_ready(&deferred_phases, busy(&none, &one)), None);
    }

    #[test]
    fn a_task_starts_beside_busy_tasks_of_its_own_write_group_it_does_not_conflict_with() {
        // 1 writes a and b, 2 writes a, 3 writes b: one write group, but 2 and 3 can run
        // together (and 1 beside neither).
        let text = r#"
[[task]]
id = "1"
title = "both"
dod = "x"
writes = ["a", "b"]
[[task]]
id = "2"
title = "a"
dod = "x"
writes = ["a"]
[[task]]
id = "3"
title = "b"
dod = "x"
writes = ["b"]
"#;
        let plan = breeze_plan::parse_plan_toml(text, std::path::Path::new("plan.toml")).unwrap();
        let analysis = breeze_plan::analyze(&plan, 3).unwrap();
        assert_eq!(analysis.groups.len(), 1);
        let scheduler = Scheduler::new(&plan, &analysis);
        let none = BTreeSet::new();
        let two = BTreeSet::from([1]);
        let phases = [Queued, Working, Queued];
        assert_eq!(scheduler.next_ready(&phases, busy(&two, &none)), Some(2), "3 beside 2");
        let waiting = [Queued, Deferred, Queued];
        assert_eq!(
            scheduler.next_ready(&waiting, busy(&none, &two)),
            Some(2),
            "3 beside 2 waiting"
        );
        let both = BTreeSet::from([1, 2]);
        let phases = [Queued, Working, Working];
        assert_eq!(
            scheduler.next_ready(&phases, busy(&both, &none)),
            None,
            "1 conflicts with both"
        );
    }

    #[test]
    fn resumed_tasks_are_started_again_whatever_their_phase() {
        let (plan, analysis) = plan();
        let scheduler = Scheduler::new(&plan, &analysis);
        let none = BTreeSet::new();
        for phase in [Working, Reviewing, Approved] {
            assert_eq!(
                scheduler.next_ready(&[phase, Queued, Queued, Queued], busy(&none, &none)),
                Some(0)
            );
        }
        assert_eq!(
            scheduler.next_ready(&[Deferred, Landed, Landed, Landed], busy(&none, &none)),
            None
        );
    }

    #[test]
    fn dependents_of_a_task_that_gave_up_are_blocked_transitively() {
        let (plan, analysis) = plan();
        let scheduler = Scheduler::new(&plan, &analysis);
        let blocked = scheduler.unreachable(&[Escalated, Queued, Queued, Queued]);
        assert_eq!(
            blocked,
            [
                (1, "dependency 1 is escalated".to_string()),
                (3, "dependency 2 is blocked".to_string())
            ]
        );
        assert!(scheduler.unreachable(&[Landed, Queued, Queued, Queued]).is_empty());
    }

    #[test]
    fn what_is_left_when_nothing_can_move_is_stuck() {
        let (plan, analysis) = plan();
        let scheduler = Scheduler::new(&plan, &analysis);
        assert_eq!(scheduler.stuck(&[Landed, Queued, Deferred, Working]), [1, 3]);
    }

    #[test]
    fn a_resumed_task_gets_its_own_lane_back_and_lanes_cap_the_work() {
        let lanes = [Some("task/1".to_string()), None, Some("task/3".to_string())];
        assert_eq!(lane_holding(Some("task/3"), &lanes), Some(3));
        assert_eq!(lane_holding(Some("task/9"), &lanes), None);
        let mut pool = LanePool::new(2);
        assert_eq!(pool.take(Some(2), &[]), Some(2));
        assert_eq!(pool.take(Some(2), &[]), Some(1), "taken: the lowest free one");
        assert_eq!(pool.take(None, &[]), None, "two lanes, two tasks");
        pool.give_back(2);
        assert!(pool.has_free());
        assert_eq!(pool.take(None, &[]), Some(2));
    }

    #[test]
    fn a_task_without_a_lane_of_its_own_leaves_the_lanes_kept_for_others_free() {
        let mut pool = LanePool::new(3);
        assert_eq!(pool.take(None, &[1, 3]), Some(2), "lanes 1 and 3 hold others' work");
        assert_eq!(pool.take(Some(3), &[1, 3]), Some(3), "its own lane");
        assert_eq!(pool.take(None, &[1]), Some(1), "kept, but the only lane free");
    }
}
