//! The append-only journal (`events.jsonl`) and `cycles.jsonl` (in the original harness's format).
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
use crate::snapshot_changes::SnapshotWrite;

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
        let existing = for_each_event(path, |_| {}).unwrap_or(0);
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Journal {
            path: path.to_path_buf(),
            inner: Mutex::new(JournalInner { file, next_seq: existing + 1 }),
        })
    }

    /// Appends one event and fsyncs it; the line written.
    pub fn record(&self, event: EventKind) -> std::io::Result<BreezeEvent> {
        let line = self.append(event)?;
        self.sync()?;
        Ok(line)
    }

    /// Appends one event without waiting for the disk: not durable before [`Journal::sync`].
    fn append(&self, event: EventKind) -> std::io::Result<BreezeEvent> {
        let mut inner = self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let line = BreezeEvent {
            schema_version: BreezeEventV1,
            seq: inner.next_seq,
            at: clock::now_rfc3339_millis(),
            event,
        };
        let mut text = serde_json::to_string(&line).map_err(std::io::Error::other)?;
        text.push('\n');
        inner.file.write_all(text.as_bytes())?;
        inner.next_seq += 1;
        Ok(line)
    }

    /// Waits until every appended event is on disk.
    fn sync(&self) -> std::io::Result<()> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).file.sync_data()
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Reads every event of a journal. A torn last line (the engine was killed mid-write)
/// is skipped; earlier lines that do not parse are an error. Holds the whole journal:
/// callers that only look at each event in turn use [`for_each_event`].
pub fn read_events(path: &Path) -> std::io::Result<Vec<BreezeEvent>> {
    let mut events = Vec::new();
    for_each_event(path, |event| events.push(event))?;
    Ok(events)
}

/// Gives each event of a journal to `visit`, in order, holding one line at a time (a
/// journal of any length is read in the memory of its longest line); returns how many.
/// A torn last line (the engine was killed mid-write) is skipped; an earlier line that
/// does not parse is an error, found before any event after it is given.
pub fn for_each_event(path: &Path, mut visit: impl FnMut(BreezeEvent)) -> std::io::Result<u64> {
    let mut reader = BufReader::new(File::open(path)?);
    let mut line = String::new();
    let mut count = 0;
    let mut number = 0;
    // A line that did not parse: an error unless nothing but blank lines follows it.
    let mut unreadable: Option<(usize, serde_json::Error)> = None;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        number += 1;
        if line.trim().is_empty() {
            continue;
        }
        if let Some((at, err)) = unreadable.take() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}:{at}: unreadable event: {err}", path.display()),
            ));
        }
        match serde_json::from_str::<BreezeEvent>(&line) {
            Ok(event) => {
                count += 1;
                visit(event);
            }
            Err(err) => unreadable = Some((number, err)),
        }
    }
    Ok(count)
}

/// How many lines a file has, read in bounded memory (0 when it cannot be read).
fn count_lines(path: &Path) -> u64 {
    let Ok(file) = File::open(path) else { return 0 };
    let mut reader = BufReader::new(file);
    let (mut lines, mut last) = (0, b'\n');
    while let Ok(buffer) = reader.fill_buf() {
        let Some(&end) = buffer.last() else { break };
        lines += buffer.iter().filter(|&&b| b == b'\n').count() as u64;
        last = end;
        let len = buffer.len();
        reader.consume(len);
    }
    // A last line without its newline counts too.
    if last == b'\n' { lines } else { lines + 1 }
}

/// One line of `cycles.jsonl` per worker attempt, with the original harness's field names (docs/PROTOCOL.md).
#[derive(Debug, Clone, Serialize)]
pub struct CycleRecord {
    /// Run id.
    pub run_id: String,
    /// 1-based cycle (attempt) number within the run.
    pub cycle: u64,
    /// Task id.
    pub task_id: String,
    /// `breezing` (a worker's attempt) or `person` (a person's, through `breeze attach`).
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
        let existing = count_lines(path);
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

/// Told of every journal line once it is on disk.
pub(crate) type EventListener = Box<dyn Fn(&BreezeEvent) + Send>;

/// The run's files, written by one thread of their own and in order: the journal (each
/// event fsynced), the snapshot (a change line, or `run.json` whole, atomically) and
/// `cycles.jsonl`. The async threads
/// hand writes over and, where the order matters to them, wait for the write without
/// blocking.
///
/// Writes that queue up while the thread waits for the disk are written together (a group
/// commit): a run of events with one fsync, a run of snapshot writes from the newest whole
/// one (which holds every change before it), its change lines with one fsync. Every waiting caller still hears only once its write is
/// on disk; lanes working at once then share fsyncs instead of queueing for one each.
#[derive(Debug, Clone)]
pub struct RunStore {
    writes: std::sync::mpsc::Sender<StoreWrite>,
    journal_path: PathBuf,
}

/// One write for the store's thread; `done` hears how it went.
enum StoreWrite {
    Event(EventKind, Option<tokio::sync::oneshot::Sender<std::io::Result<()>>>),
    Snapshot(SnapshotWrite, tokio::sync::oneshot::Sender<std::io::Result<()>>),
    Cycle(CycleRecord),
}

impl std::fmt::Debug for StoreWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StoreWrite::Event(..) => "Event",
            StoreWrite::Snapshot(..) => "Snapshot",
            StoreWrite::Cycle(..) => "Cycle",
        })
    }
}

impl RunStore {
    /// Opens the journal and `cycles.jsonl` and starts the writer thread; the snapshot goes
    /// to `snapshot`.
    pub fn open(journal: &Path, cycles: &Path, snapshot: &Path) -> std::io::Result<RunStore> {
        Self::open_with(journal, cycles, snapshot, None)
    }

    /// [`RunStore::open`], with `listener` told of every journal line once it is on disk
    /// (the notifier).
    pub(crate) fn open_with(
        journal: &Path,
        cycles: &Path,
        snapshot: &Path,
        listener: Option<EventListener>,
    ) -> std::io::Result<RunStore> {
        let files = StoreFiles {
            journal: Journal::open(journal)?,
            cycles: Cycles::open(cycles)?,
            snapshot: snapshot.to_path_buf(),
            listener,
        };
        let (writes, inbox) = std::sync::mpsc::channel::<StoreWrite>();
        std::thread::Builder::new().name("breeze-run-files".into()).spawn(move || {
            while let Ok(first) = inbox.recv() {
                let mut group = vec![first];
                group.extend(inbox.try_iter().take(MAX_GROUP - 1));
                files.write(group);
            }
        })?;
        Ok(RunStore { writes, journal_path: journal.to_path_buf() })
    }

    /// Appends an event and waits (without blocking a thread) until it is on disk.
    pub async fn record(&self, event: EventKind) -> std::io::Result<()> {
        let (done, heard) = tokio::sync::oneshot::channel();
        self.writes.send(StoreWrite::Event(event, Some(done))).map_err(|_| stopped())?;
        heard.await.map_err(|_| stopped())?
    }

    /// Appends an event and blocks this thread until it is on disk (for work already off
    /// the async threads: a landing journals its checkout update from its git thread).
    pub fn record_blocking(&self, event: EventKind) -> std::io::Result<()> {
        let (done, heard) = tokio::sync::oneshot::channel();
        self.writes.send(StoreWrite::Event(event, Some(done))).map_err(|_| stopped())?;
        heard.blocking_recv().map_err(|_| stopped())?
    }

    /// Appends an event without waiting (its place in the order is kept).
    pub fn record_later(&self, event: EventKind) {
        let _ = self.writes.send(StoreWrite::Event(event, None));
    }

    /// Writes the snapshot (whole, or a change line); the future ends once it is on disk. The write
    /// takes its place in the order when this is called, not when the future is awaited:
    /// a caller holding the snapshot's lock while calling keeps the writes in the order of
    /// the snapshot's changes.
    pub fn save_snapshot(
        &self,
        write: SnapshotWrite,
    ) -> impl Future<Output = std::io::Result<()>> + use<> {
        let (done, heard) = tokio::sync::oneshot::channel();
        let sent = self.writes.send(StoreWrite::Snapshot(write, done)).map_err(|_| stopped());
        async move {
            sent?;
            heard.await.map_err(|_| stopped())?
        }
    }

    /// Appends a line to `cycles.jsonl` without waiting.
    pub fn cycle(&self, record: CycleRecord) {
        let _ = self.writes.send(StoreWrite::Cycle(record));
    }

    /// The journal file.
    pub fn journal_path(&self) -> &Path {
        &self.journal_path
    }
}

fn stopped() -> std::io::Error {
    std::io::Error::other("the run files' writer thread stopped")
}

/// Most queued writes written together.
const MAX_GROUP: usize = 256;

/// What the writer thread writes to.
struct StoreFiles {
    journal: Journal,
    cycles: Cycles,
    snapshot: PathBuf,
    listener: Option<EventListener>,
}

impl StoreFiles {
    /// Writes a group of queued writes in order: each run of events with one fsync, each
    /// run of snapshot writes from its newest whole one.
    fn write(&self, group: Vec<StoreWrite>) {
        let mut writes = group.into_iter().peekable();
        while let Some(write) = writes.next() {
            match write {
                StoreWrite::Event(event, done) => {
                    let mut run = vec![(event, done)];
                    while let Some(StoreWrite::Event(..)) = writes.peek() {
                        if let Some(StoreWrite::Event(event, done)) = writes.next() {
                            run.push((event, done));
                        }
                    }
                    self.record_events(run);
                }
                StoreWrite::Snapshot(first, done) => {
                    let (mut run, mut waiting) = (vec![first], vec![done]);
                    while let Some(StoreWrite::Snapshot(..)) = writes.peek() {
                        if let Some(StoreWrite::Snapshot(next, done)) = writes.next() {
                            run.push(next);
                            waiting.push(done);
                        }
                    }
                    let written = crate::snapshot_changes::write_snapshot(&self.snapshot, run);
                    for done in waiting {
                        let _ = done.send(copy_result(&written));
                    }
                }
                StoreWrite::Cycle(record) => {
                    let _ = self.cycles.append(record);
                }
            }
        }
    }

    /// Appends the events, fsyncs once, then tells the listener and the waiting callers.
    fn record_events(&self, run: Vec<EventWrite>) {
        let mut appended = Vec::with_capacity(run.len());
        for (event, done) in run {
            match self.journal.append(event) {
                Ok(line) => appended.push((line, done)),
                Err(err) => {
                    tracing::error!("cannot append to {}: {err}", self.journal.path().display());
                    if let Some(done) = done {
                        let _ = done.send(Err(err));
                    }
                }
            }
        }
        if appended.is_empty() {
            return;
        }
        let synced = self.journal.sync();
        if let Err(err) = &synced {
            tracing::error!("cannot fsync {}: {err}", self.journal.path().display());
        }
        for (line, done) in appended {
            if let (Ok(()), Some(listener)) = (&synced, &self.listener) {
                listener(&line);
            }
            if let Some(done) = done {
                let _ = done.send(copy_result(&synced));
            }
        }
    }
}

/// An event to append, and who waits for it to be on disk.
type EventWrite = (EventKind, Option<tokio::sync::oneshot::Sender<std::io::Result<()>>>);

/// The same outcome for another waiting caller (`io::Error` is not `Clone`).
fn copy_result(result: &std::io::Result<()>) -> std::io::Result<()> {
    match result {
        Ok(()) => Ok(()),
        Err(err) => Err(std::io::Error::new(err.kind(), err.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64) -> String {
        format!(
            "{{\"schema_version\":\"breeze-event.v1\",\"seq\":{seq},\"at\":\"2026-01-01T00:00:00.000Z\",\"event\":{{\"kind\":\"task_started\",\"task\":\"{seq}\",\"title\":\"t\",\"lane\":1}}}}\n"
        )
    }

    #[test]
    fn events_are_streamed_a_torn_last_line_skipped_an_earlier_bad_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, format!("{}\n{}{{\"torn", event(1), event(2))).unwrap();
        let mut seen = Vec::new();
        assert_eq!(for_each_event(&path, |e| seen.push(e.seq)).unwrap(), 2);
        assert_eq!(seen, [1, 2]);
        assert_eq!(read_events(&path).unwrap().len(), 2);
        // Reopened, the journal continues the sequence after the events it holds.
        let journal = Journal::open(&path).unwrap();
        assert_eq!(journal.inner.lock().unwrap().next_seq, 3);

        std::fs::write(&path, format!("{}{{\"bad\n{}", event(1), event(3))).unwrap();
        let err = for_each_event(&path, |_| {}).unwrap_err();
        assert!(err.to_string().contains("events.jsonl:2: unreadable event"), "{err}");
    }

    fn started(task: &str) -> EventKind {
        EventKind::TaskStarted { task: task.into(), title: "t".into(), lane: 1 }
    }

    #[test]
    fn a_group_of_writes_keeps_its_order_and_tells_every_waiting_caller() {
        let dir = tempfile::tempdir().unwrap();
        let heard = std::sync::Arc::new(Mutex::new(Vec::new()));
        let told = heard.clone();
        let files = StoreFiles {
            journal: Journal::open(&dir.path().join("events.jsonl")).unwrap(),
            cycles: Cycles::open(&dir.path().join("cycles.jsonl")).unwrap(),
            snapshot: dir.path().join("run.json"),
            listener: Some(Box::new(move |line: &BreezeEvent| told.lock().unwrap().push(line.seq))),
        };
        let (done_a, mut heard_a) = tokio::sync::oneshot::channel();
        let (done_s1, mut heard_s1) = tokio::sync::oneshot::channel();
        let (done_s2, mut heard_s2) = tokio::sync::oneshot::channel();
        let (done_c, mut heard_c) = tokio::sync::oneshot::channel();
        files.write(vec![
            StoreWrite::Event(started("a"), Some(done_a)),
            StoreWrite::Event(started("b"), None),
            StoreWrite::Snapshot(SnapshotWrite::Whole(b"first".to_vec()), done_s1),
            StoreWrite::Snapshot(SnapshotWrite::Whole(b"second".to_vec()), done_s2),
            StoreWrite::Event(started("c"), Some(done_c)),
        ]);
        for heard in [&mut heard_a, &mut heard_s1, &mut heard_s2, &mut heard_c] {
            assert!(matches!(heard.try_recv(), Ok(Ok(()))));
        }
        // Two snapshots in a row: the newer one is what is on disk.
        assert_eq!(std::fs::read(dir.path().join("run.json")).unwrap(), b"second");
        let tasks: Vec<(u64, String)> = read_events(&dir.path().join("events.jsonl"))
            .unwrap()
            .into_iter()
            .map(|e| match e.event {
                EventKind::TaskStarted { task, .. } => (e.seq, task),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(tasks, [(1, "a".into()), (2, "b".into()), (3, "c".into())]);
        assert_eq!(*heard.lock().unwrap(), [1, 2, 3], "told once each, in order");
    }

    #[tokio::test]
    async fn snapshots_queued_in_order_leave_the_last_one_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let (events, cycles, snapshot) = (
            dir.path().join("events.jsonl"),
            dir.path().join("cycles.jsonl"),
            dir.path().join("run.json"),
        );
        let store = RunStore::open(&events, &cycles, &snapshot).unwrap();
        let saves: Vec<_> = (0..50)
            .map(|n| {
                store.save_snapshot(SnapshotWrite::Whole(format!("snapshot {n}").into_bytes()))
            })
            .collect();
        for save in saves {
            save.await.unwrap();
        }
        assert_eq!(std::fs::read_to_string(&snapshot).unwrap(), "snapshot 49");
        let recorded: Vec<_> = (0..20).map(|n| store.record(started(&n.to_string()))).collect();
        for record in recorded {
            record.await.unwrap();
        }
        let seqs: Vec<u64> = read_events(&events).unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=20).collect::<Vec<u64>>());
    }

    #[test]
    fn cycles_count_their_lines_a_last_one_without_newline_too() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cycles.jsonl");
        assert_eq!(count_lines(&path), 0);
        std::fs::write(&path, "a\nb\n").unwrap();
        assert_eq!(count_lines(&path), 2);
        std::fs::write(&path, "a\nb\nc").unwrap();
        assert_eq!(count_lines(&path), 3);
    }
}
