//! Every task's effective write set: the plan's, plus what scope requests granted
//! (`task/scope.rs`). The gates, the agents' stream checks, the scheduler and the briefings
//! all read it; it lives beside the run's context because every part of a run shares it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use breeze_plan::{Plan, WriteEntryError, WriteSet};

use crate::snapshot::TaskRecord;

/// Every task's effective write set, in plan order.
pub(crate) struct WriteSets {
    sets: Mutex<Vec<WriteSet>>,
    /// Tasks whose set was widened (their conflicts are no longer the plan's).
    widened: Mutex<BTreeSet<usize>>,
}

impl WriteSets {
    /// The plan's write sets, widened by what earlier sessions of the run granted.
    pub fn new(plan: &Plan, records: &[TaskRecord]) -> WriteSets {
        let mut widened = BTreeSet::new();
        let sets = plan
            .tasks
            .iter()
            .zip(records)
            .enumerate()
            .map(|(index, (task, record))| {
                if record.granted_writes.is_empty() {
                    return task.writes.clone();
                }
                widened.insert(index);
                widen(&task.writes, &record.granted_writes).unwrap_or_else(|_| task.writes.clone())
            })
            .collect();
        WriteSets { sets: Mutex::new(sets), widened: Mutex::new(widened) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<WriteSet>> {
        self.sets.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Task `index`'s write set now.
    pub fn get(&self, index: usize) -> WriteSet {
        self.lock()[index].clone()
    }

    /// Every task's write set now.
    pub fn all(&self) -> Vec<WriteSet> {
        self.lock().clone()
    }

    /// The widened tasks and their sets (for the scheduler).
    pub fn widened(&self) -> BTreeMap<usize, WriteSet> {
        let sets = self.lock();
        let widened = self.widened.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        widened.iter().map(|&index| (index, sets[index].clone())).collect()
    }

    /// Adds `paths` to task `index`'s write set.
    pub fn grant(&self, index: usize, paths: &[String]) -> Result<(), WidenError> {
        let mut sets = self.lock();
        sets[index] = widen(&sets[index], paths)?;
        self.widened.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(index);
        Ok(())
    }

    /// Each task's id with its check ([`WriteSets::check`]), for the role runner.
    pub fn checks(self: &Arc<Self>, plan: &Plan) -> BTreeMap<String, breeze_agents::WriteSetCheck> {
        let ids = plan.tasks.iter().map(|task| task.id.to_string());
        ids.enumerate().map(|(index, id)| (id, self.check(index))).collect()
    }

    /// A check of task `index`'s write set as it is when called (grants included).
    pub fn check(self: &Arc<Self>, index: usize) -> breeze_agents::WriteSetCheck {
        let sets = self.clone();
        Arc::new(move |path: &str| {
            let set = &sets.lock()[index];
            set.is_empty() || set.matches(path)
        })
    }
}

/// Why a write set cannot be widened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum WidenError {
    /// A path asked for is not a valid write-set entry: the entry, and why.
    #[error("`{}`: {}", .0.entry, .0.reason)]
    InvalidEntry(#[source] WriteEntryError),
}

/// `set` with `paths` added.
fn widen(set: &WriteSet, paths: &[String]) -> Result<WriteSet, WidenError> {
    let entries = set.entries().iter().chain(paths).cloned().collect::<Vec<_>>();
    WriteSet::new(entries).map_err(WidenError::InvalidEntry)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "[[task]]\nid = \"a\"\ntitle = \"A\"\nwrites = [\"src/a/\", \"CHANGELOG.md\"]\n\
        [[task]]\nid = \"b\"\ntitle = \"B\"\nwrites = [\"src/b/\"]\n\
        [[task]]\nid = \"c\"\ntitle = \"C\"\nwrites = [\"src/c/\"]\n";

    /// The write sets of [`PLAN`]'s tasks, none widened yet.
    fn sets_of_plan() -> WriteSets {
        let plan = breeze_plan::parse_plan_toml(PLAN, std::path::Path::new("plan.toml")).unwrap();
        let records: Vec<TaskRecord> = plan
            .tasks
            .iter()
            .map(|task| TaskRecord::new(task.id.as_str(), &task.title, None))
            .collect();
        WriteSets::new(&plan, &records)
    }

    #[test]
    fn grants_widen_the_effective_write_set() {
        let sets = Arc::new(sets_of_plan());
        let check = sets.check(2);
        assert!(!check("src/lib.rs"));
        sets.grant(2, &["src/lib.rs".to_string()]).unwrap();
        assert!(check("src/lib.rs"), "a check made before the grant sees it");
        assert_eq!(sets.widened().keys().copied().collect::<Vec<_>>(), [2]);
    }

    #[test]
    fn a_grant_of_an_invalid_entry_is_refused_naming_the_entry_and_why() {
        let sets = sets_of_plan();
        let err = sets.grant(1, &["../outside".to_string()]).unwrap_err();
        let WidenError::InvalidEntry(entry) = &err;
        assert_eq!(entry.entry, "../outside");
        assert_eq!(err.to_string(), format!("`../outside`: {}", entry.reason));
        assert!(sets.widened().is_empty(), "nothing was widened");
        assert!(!sets.get(1).matches("../outside"));
    }
}
