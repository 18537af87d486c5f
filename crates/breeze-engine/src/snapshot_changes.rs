//! `run-changes.jsonl`: the task records changed since `run.json` was last written whole
//! (the layout is described in [`crate::snapshot`]), and when the engine writes `run.json`
//! whole again.
//!
//! Rewriting `run.json` whole after each change made a run of n tasks write O(n²) bytes; a
//! change line holds one task's record, so a change costs the same in a plan of 3,000 as
//! in a plan of 30. The lines are folded into the snapshot when it is read.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::snapshot::{RunSnapshot, TaskRecord, write_atomically};

/// The change lines' file, beside `run.json`.
pub const CHANGES_FILE: &str = "run-changes.jsonl";

/// Change lines are written until they outweigh the last whole `run.json` or this many
/// bytes, whichever is more; then `run.json` is written whole again. Tied to the whole
/// file's size, the whole writes cost a fixed share of the change lines: O(1) per change.
const LEAST_CHANGES_BYTES: u64 = 64 * 1024;

/// The change lines of the snapshot at `snapshot`.
pub fn changes_path(snapshot: &Path) -> PathBuf {
    snapshot.with_file_name(CHANGES_FILE)
}

/// One write of the run's state.
#[derive(Debug, Clone, PartialEq)]
pub enum SnapshotWrite {
    /// `run.json` whole (pretty JSON); the change lines before it are set aside.
    Whole(Vec<u8>),
    /// One line appended to `run-changes.jsonl`.
    Change(Vec<u8>),
}

/// Writes a run of writes in order, durably: only the newest whole write of the run (it
/// holds every change before it), then the change lines after it with one fsync.
pub fn write_snapshot(path: &Path, writes: Vec<SnapshotWrite>) -> std::io::Result<()> {
    let newest_whole = writes.iter().rposition(|write| matches!(write, SnapshotWrite::Whole(_)));
    let mut lines = Vec::new();
    for write in writes.into_iter().skip(newest_whole.unwrap_or(0)) {
        match write {
            SnapshotWrite::Whole(bytes) => {
                write_atomically(path, &bytes)?;
                // Tidiness only: lines of an older generation are never applied.
                let _ = std::fs::remove_file(changes_path(path));
            }
            SnapshotWrite::Change(line) => lines.extend_from_slice(&line),
        }
    }
    if lines.is_empty() { Ok(()) } else { append_changes(&changes_path(path), &lines) }
}

/// Appends change lines and fsyncs them (and the folder, when the file is new). A write
/// that fails is cut off again, so that no half line is followed by later ones.
fn append_changes(path: &Path, lines: &[u8]) -> std::io::Result<()> {
    let created = !path.exists();
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    let before = file.metadata()?.len();
    if let Err(err) = file.write_all(lines).and_then(|()| file.sync_data()) {
        let _ = file.set_len(before);
        return Err(err);
    }
    if created && let Some(dir) = path.parent().and_then(|dir| File::open(dir).ok()) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// One line of `run-changes.jsonl`, as read.
#[derive(Deserialize)]
struct ChangeLine {
    /// The whole `run.json` it changes.
    generation: u64,
    updated_at: String,
    /// The run's own fields (tasks left out), when they changed.
    #[serde(default)]
    run: Option<RunSnapshot>,
    #[serde(default)]
    tasks: Vec<ChangedTask>,
}

/// A task's new record, at its place in plan order.
#[derive(Deserialize)]
struct ChangedTask {
    index: usize,
    record: TaskRecord,
}

impl RunSnapshot {
    /// Writes the snapshot whole (already serialized as `bytes`) and sets the change
    /// lines before it aside.
    pub(crate) fn write_whole(&self, path: &Path, bytes: Vec<u8>) -> std::io::Result<()> {
        write_snapshot(path, vec![SnapshotWrite::Whole(bytes)])
    }

    /// Applies the change lines of this generation beside the `run.json` at `snapshot`. A
    /// torn last line (a kill mid-write) is skipped; an earlier line that does not parse,
    /// or one about a task this snapshot does not hold there, is an error.
    pub(crate) fn fold_changes(&mut self, snapshot: &Path) -> Result<(), String> {
        let path = changes_path(snapshot);
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(format!("{}: {err}", path.display())),
        };
        let mut reader = BufReader::new(file);
        let (mut line, mut number) = (String::new(), 0);
        let mut unreadable: Option<String> = None;
        loop {
            line.clear();
            if reader.read_line(&mut line).map_err(|err| format!("{}: {err}", path.display()))? == 0
            {
                return Ok(());
            }
            number += 1;
            if line.trim().is_empty() {
                continue;
            }
            if let Some(err) = unreadable.take() {
                return Err(err);
            }
            match serde_json::from_str::<ChangeLine>(&line) {
                Ok(change) if change.generation == self.generation => self
                    .apply(change)
                    .map_err(|err| format!("{}:{number}: {err}", path.display()))?,
                Ok(_) => {}
                Err(err) => {
                    unreadable =
                        Some(format!("{}:{number}: unreadable change: {err}", path.display()));
                }
            }
        }
    }

    fn apply(&mut self, change: ChangeLine) -> Result<(), String> {
        if let Some(mut run) = change.run {
            run.tasks = std::mem::take(&mut self.tasks);
            run.generation = self.generation;
            *self = run;
        }
        self.updated_at = change.updated_at;
        for ChangedTask { index, record } in change.tasks {
            match self.tasks.get_mut(index) {
                Some(task) if task.id == record.id => *task = record,
                held => {
                    let held =
                        held.map_or("no task".to_string(), |task| format!("task {}", task.id));
                    return Err(format!(
                        "a change to task {} at place {index}, where run.json holds {held}",
                        record.id
                    ));
                }
            }
        }
        Ok(())
    }

    /// The run's own fields as JSON: the tasks and the time of the change left out.
    fn own_fields_json(&mut self) -> Result<Vec<u8>, serde_json::Error> {
        let tasks = std::mem::take(&mut self.tasks);
        let updated_at = std::mem::take(&mut self.updated_at);
        let json = serde_json::to_vec(self);
        self.tasks = tasks;
        self.updated_at = updated_at;
        json
    }
}

/// What the engine last wrote of the run's state, to decide what the next change writes.
#[derive(Debug, Default)]
pub(crate) struct ChangeLog {
    /// The run's own fields as last written.
    own_fields: Vec<u8>,
    /// Bytes of change lines since the last whole write.
    logged: u64,
    /// The last whole write's size; none yet by this engine (its first write is whole: a
    /// resume may have reordered the tasks or recognized landings).
    whole: Option<u64>,
}

impl ChangeLog {
    /// The write that records the change just made to `snapshot`: a change line when only
    /// the task at `task` (and the run's own fields) changed and the lines do not yet
    /// outweigh the whole file; else the whole file, as a new generation.
    pub fn next_write(
        &mut self,
        snapshot: &mut RunSnapshot,
        task: Option<usize>,
    ) -> Result<SnapshotWrite, serde_json::Error> {
        let own_fields = snapshot.own_fields_json()?;
        if let (Some(index), Some(whole)) = (task, self.whole) {
            let changed = (own_fields != self.own_fields).then_some(own_fields.as_slice());
            let line = change_line(snapshot, changed, index)?;
            let logged = self.logged + line.len() as u64;
            if logged <= whole.max(LEAST_CHANGES_BYTES) {
                self.logged = logged;
                self.own_fields = own_fields;
                return Ok(SnapshotWrite::Change(line));
            }
        }
        snapshot.generation += 1;
        let bytes = snapshot.to_json()?;
        self.whole = Some(bytes.len() as u64);
        self.logged = 0;
        self.own_fields = snapshot.own_fields_json()?;
        Ok(SnapshotWrite::Whole(bytes))
    }
}

/// `{"generation":…,"updated_at":…,"run":…,"tasks":[{"index":…,"record":…}]}` and a newline.
fn change_line(
    snapshot: &RunSnapshot,
    own_fields: Option<&[u8]>,
    index: usize,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut line = format!("{{\"generation\":{},\"updated_at\":", snapshot.generation).into_bytes();
    serde_json::to_writer(&mut line, &snapshot.updated_at)?;
    if let Some(own_fields) = own_fields {
        line.extend_from_slice(b",\"run\":");
        line.extend_from_slice(own_fields);
    }
    line.extend_from_slice(format!(",\"tasks\":[{{\"index\":{index},\"record\":").as_bytes());
    serde_json::to_writer(&mut line, &snapshot.tasks[index])?;
    line.extend_from_slice(b"}]}\n");
    Ok(line)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use breeze_protocol::RunState;

    use super::*;
    use crate::snapshot::{BudgetRecord, FORMAT_VERSION, ObjectId, TaskPhase};

    fn run_of(tasks: usize) -> RunSnapshot {
        let oid = breeze_git::Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap();
        RunSnapshot {
            format_version: FORMAT_VERSION,
            run_id: "r".into(),
            plan: "plan.toml".into(),
            state: RunState::Running,
            workers: 3,
            main_branch: "main".into(),
            main_tip_at_start: ObjectId(oid),
            started_at: "2026-01-01T00:00:00Z".into(),
            updated_at: "2026-01-01T00:00:00Z".into(),
            stop_reason: None,
            tasks: (0..tasks).map(|n| TaskRecord::new(&n.to_string(), "a task", None)).collect(),
            consulted: BTreeMap::new(),
            universal_violations: Vec::new(),
            containment: None,
            budget: BudgetRecord::default(),
            generation: 0,
            waiting: Vec::new(),
            windows: Vec::new(),
        }
    }

    /// Changes task `index` (and the run's fields when `lesson` is given) as the engine
    /// does, writes what [`ChangeLog`] says; the write.
    fn change(
        path: &Path,
        run: &mut RunSnapshot,
        log: &mut ChangeLog,
        index: usize,
        lesson: Option<&str>,
    ) -> SnapshotWrite {
        run.tasks[index].attempts += 1;
        run.tasks[index].phase = TaskPhase::Working;
        run.universal_violations.extend(lesson.map(str::to_string));
        run.updated_at = format!("2026-01-01T00:00:{:02}Z", run.tasks[index].attempts % 60);
        let write = log.next_write(run, Some(index)).unwrap();
        write_snapshot(path, vec![write.clone()]).unwrap();
        write
    }

    #[test]
    fn a_change_writes_one_task_and_reading_folds_it_in() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        let mut run = run_of(200);
        run.save(&path).unwrap();
        let mut log = ChangeLog::default();
        // The engine's first write is whole; then only the task that changed is written.
        assert!(matches!(change(&path, &mut run, &mut log, 5, None), SnapshotWrite::Whole(_)));
        let whole = std::fs::metadata(&path).unwrap().len() as usize;
        let SnapshotWrite::Change(line) = change(&path, &mut run, &mut log, 7, Some("no secrets"))
        else {
            panic!("a change of one task is a change line")
        };
        assert!(line.len() * 50 < whole, "{} bytes of a {whole}-byte state", line.len());
        assert!(matches!(change(&path, &mut run, &mut log, 9, None), SnapshotWrite::Change(_)));
        assert_eq!(RunSnapshot::load(&path).unwrap(), run);
        assert_eq!(std::fs::metadata(&path).unwrap().len() as usize, whole, "run.json untouched");
    }

    #[test]
    fn lines_of_an_older_generation_or_torn_by_a_kill_are_not_applied() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        let mut run = run_of(3);
        let mut log = ChangeLog::default();
        change(&path, &mut run, &mut log, 0, None);
        change(&path, &mut run, &mut log, 1, None);
        let older_lines = std::fs::read(changes_path(&path)).unwrap();
        // A person's change written whole (a new generation); a kill before the older lines
        // were removed leaves them: they are not this file's.
        let mut stopped = RunSnapshot::load(&path).unwrap();
        stopped.tasks[1].phase = TaskPhase::Failed;
        stopped.save(&path).unwrap();
        std::fs::write(changes_path(&path), &older_lines).unwrap();
        assert_eq!(RunSnapshot::load(&path).unwrap(), stopped);

        // A torn last line is skipped; a bad line with a line after it is an error.
        let torn = [older_lines.as_slice(), b"{\"generation\":1,\"upd"].concat();
        std::fs::write(changes_path(&path), &torn).unwrap();
        assert_eq!(RunSnapshot::load(&path).unwrap(), stopped);
        std::fs::write(changes_path(&path), [b"{\"bad\n".as_slice(), &older_lines].concat())
            .unwrap();
        let err = RunSnapshot::load(&path).unwrap_err();
        assert!(err.message.contains("run-changes.jsonl:1: unreadable change"), "{err}");
    }

    #[test]
    fn a_change_to_a_task_the_snapshot_holds_elsewhere_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        let mut run = run_of(3);
        let mut log = ChangeLog::default();
        change(&path, &mut run, &mut log, 0, None);
        change(&path, &mut run, &mut log, 2, None);
        let mut reordered = RunSnapshot::load(&path).unwrap();
        reordered.tasks.swap(0, 2);
        let bytes = reordered.to_json().unwrap();
        write_atomically(&path, &bytes).unwrap();
        // A line written against the plan order before: task 2 at place 2.
        assert_eq!(run.generation, reordered.generation);
        std::fs::write(changes_path(&path), change_line(&run, None, 2).unwrap()).unwrap();
        let err = RunSnapshot::load(&path).unwrap_err();
        assert!(
            err.message.contains("a change to task 2 at place 2, where run.json holds task 0"),
            "{err}"
        );
    }

    #[test]
    fn the_bytes_written_per_change_do_not_grow_with_the_plan() {
        // The same changes per task in a plan of 100 and one of 1,000: the whole rewrites
        // cost a fixed share of the change lines, so the bytes per change stay the same.
        let per_change = |tasks: usize| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("run.json");
            let (mut run, mut log) = (run_of(tasks), ChangeLog::default());
            let (mut bytes, mut changes) = (0, 0);
            for round in 0..8 {
                for index in 0..tasks {
                    let write = change(&path, &mut run, &mut log, index, None);
                    bytes += match write {
                        SnapshotWrite::Whole(b) | SnapshotWrite::Change(b) => b.len(),
                    };
                    changes += 1;
                }
                assert_eq!(RunSnapshot::load(&path).unwrap(), run, "round {round}");
            }
            bytes / changes
        };
        let (small, large) = (per_change(100), per_change(1000));
        assert!(
            large * 10 < small * 13,
            "{small} bytes a change with 100 tasks, {large} with 1,000"
        );
    }
}
