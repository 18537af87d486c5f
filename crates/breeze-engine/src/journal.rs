//! The append-only journal (`events.jsonl`) and the seed-compatible `cycles.jsonl`.
//!
//! Every event is one JSON line, written and fsynced before the engine acts on it, so
//! a run killed at any point can be resumed from what the journal says.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use breeze_protocol::{BreezeEvent, BreezeEventV1, EventKind};
use serde::Serialize;

use crate::clock;

/// Appends events to `events.jsonl`.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    inner: Mutex<JournalInner>,
}

#[derive(Debug)]
struct JournalInner {
    file: File,
    next_seq: u64,
}

impl Journal {
    /// Opens (or creates) the journal, continuing the sequence after existing events.
    pub fn open(path: &Path) -> std::io::Result<Journal> {
        let existing = read_events(path).map(|events| events.len() as u64).unwrap_or(0);
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Journal {
            path: path.to_path_buf(),
            inner: Mutex::new(JournalInner { file, next_seq: existing + 1 }),
        })
    }

    /// Appends one event and fsyncs it.
    pub fn record(&self, event: EventKind) -> std::io::Result<()> {
        let mut inner = self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let line = BreezeEvent {
            schema_version: BreezeEventV1,
            seq: inner.next_seq,
            at: clock::now_rfc3339(),
            event,
        };
        let mut text = serde_json::to_string(&line).map_err(std::io::Error::other)?;
        text.push('\n');
        inner.file.write_all(text.as_bytes())?;
        inner.file.sync_data()?;
        inner.next_seq += 1;
        Ok(())
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Reads every event of a journal. A torn last line (the engine was killed mid-write)
/// is skipped; earlier lines that do not parse are an error.
pub fn read_events(path: &Path) -> std::io::Result<Vec<BreezeEvent>> {
    let file = File::open(path)?;
    let lines: Vec<String> = BufReader::new(file).lines().collect::<Result<_, _>>()?;
    let mut events = Vec::with_capacity(lines.len());
    let last = lines.len().saturating_sub(1);
    for (index, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<BreezeEvent>(line) {
            Ok(event) => events.push(event),
            Err(_) if index == last => break,
            Err(err) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{}:{}: unreadable event: {err}", path.display(), index + 1),
                ));
            }
        }
    }
    Ok(events)
}

/// One line of `cycles.jsonl` per worker attempt, with the seeds' field names.
#[derive(Debug, Clone, Serialize)]
pub struct CycleRecord {
    /// Run id.
    pub run_id: String,
    /// 1-based cycle (attempt) number within the run.
    pub cycle: u64,
    /// Task id.
    pub task_id: String,
    /// Always `breezing`.
    pub executor: &'static str,
    /// `completed`, `failed`, ...
    pub job_status: String,
    /// Verdict of the round, if the attempt reached review.
    pub verdict: Option<String>,
    /// Short commit after the attempt.
    pub commit_hash: Option<String>,
    /// Bounded summary.
    pub summary: String,
    /// Attempt number of the task.
    pub attempts: u32,
    /// Advisor consults of the task so far.
    pub consultations: u32,
    /// RFC 3339.
    pub started_at: String,
    /// RFC 3339.
    pub finished_at: String,
}

/// Appends to `cycles.jsonl`.
#[derive(Debug)]
pub struct Cycles {
    inner: Mutex<(File, u64)>,
}

impl Cycles {
    /// Opens (or creates) the file.
    pub fn open(path: &Path) -> std::io::Result<Cycles> {
        let existing = std::fs::read_to_string(path).map(|t| t.lines().count() as u64).unwrap_or(0);
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Cycles { inner: Mutex::new((file, existing)) })
    }

    /// Appends one record, numbering its cycle.
    pub fn append(&self, mut record: CycleRecord) -> std::io::Result<()> {
        let mut inner = self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        inner.1 += 1;
        record.cycle = inner.1;
        let mut text = serde_json::to_string(&record).map_err(std::io::Error::other)?;
        text.push('\n');
        inner.0.write_all(text.as_bytes())?;
        inner.0.sync_data()
    }
}
