//! Reading run files as they grow, cheaply: the journal followed line by line from where
//! the last read stopped, and the last line of a role's log from its last few kilobytes.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use breeze_protocol::BreezeEvent;

/// How much of a log's end is read for its last line.
const LOG_TAIL: u64 = 4096;
/// How much of the journal one [`JournalTail::poll`] reads at most.
const JOURNAL_CHUNK: usize = 256 * 1024;

/// Follows a journal (`events.jsonl`): each poll parses the lines appended since the last
/// one; a line still being written waits for its newline.
#[derive(Debug)]
pub struct JournalTail {
    file: File,
    pending: Vec<u8>,
}

impl JournalTail {
    /// Opens the journal at its start.
    pub fn open(path: &Path) -> std::io::Result<JournalTail> {
        Ok(JournalTail { file: File::open(path)?, pending: Vec::new() })
    }

    /// The events of the complete lines appended since the last poll (reading at most a
    /// chunk; poll again while it returns events). Lines that do not parse are skipped.
    pub fn poll(&mut self) -> std::io::Result<Vec<BreezeEvent>> {
        let mut chunk = vec![0; JOURNAL_CHUNK];
        let read = self.file.read(&mut chunk)?;
        self.pending.extend_from_slice(&chunk[..read]);
        let Some(last_newline) = self.pending.iter().rposition(|&b| b == b'\n') else {
            return Ok(Vec::new());
        };
        let rest = self.pending.split_off(last_newline + 1);
        let complete = std::mem::replace(&mut self.pending, rest);
        let events = complete
            .split(|&b| b == b'\n')
            .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
            .filter_map(|line| serde_json::from_slice::<BreezeEvent>(line).ok())
            .collect();
        Ok(events)
    }

    /// Hands every event appended since the last poll to `apply`, a chunk at a time (a
    /// long journal is never held whole); how many there were.
    pub fn follow(&mut self, mut apply: impl FnMut(&BreezeEvent)) -> std::io::Result<usize> {
        let mut count = 0;
        loop {
            let before = self.pending.len();
            let events = self.poll()?;
            if events.is_empty() && self.pending.len() == before {
                return Ok(count);
            }
            count += events.len();
            events.iter().for_each(&mut apply);
        }
    }
}

/// The last non-blank line a role process wrote (its stdout or stderr log, whichever
/// changed last), read from the last few kilobytes of the file only. A JSON line (an agent
/// CLI's event stream) is shown by its text, when it has one.
pub fn last_output_line(log: &Path) -> Option<String> {
    let (stdout, stderr) = breeze_supervise::stream_log_paths(log);
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let mut candidates = [stdout, stderr];
    candidates.sort_by_key(|path| std::cmp::Reverse(modified(path)));
    candidates.iter().find_map(|path| last_line(path)).map(|line| readable(&line))
}

/// The last non-blank line of the last [`LOG_TAIL`] bytes of `path`.
fn last_line(path: &Path) -> Option<String> {
    let mut file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(LOG_TAIL))).ok()?;
    let mut tail = Vec::with_capacity(LOG_TAIL as usize);
    file.take(LOG_TAIL).read_to_end(&mut tail).ok()?;
    let text = String::from_utf8_lossy(&tail);
    let line = text.lines().rev().map(str::trim).find(|line| !line.is_empty())?;
    Some(line.replace('\t', " "))
}

/// A JSON line shown by the first text it holds (`text`, `result`, `summary`, `message`),
/// else by its `type`; any other line as it is.
fn readable(line: &str) -> String {
    if !line.starts_with('{') {
        return line.to_string();
    }
    let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
        return line.to_string();
    };
    fn text_in(value: &serde_json::Value, depth: u32) -> Option<String> {
        if depth > 4 {
            return None;
        }
        match value {
            serde_json::Value::Object(map) => {
                for key in ["text", "result", "summary", "message"] {
                    if let Some(serde_json::Value::String(text)) = map.get(key)
                        && !text.trim().is_empty()
                    {
                        return Some(text.lines().rev().find(|l| !l.trim().is_empty())?.into());
                    }
                }
                map.values().find_map(|inner| text_in(inner, depth + 1))
            }
            serde_json::Value::Array(items) => items.iter().find_map(|i| text_in(i, depth + 1)),
            _ => None,
        }
    }
    text_in(&value, 0)
        .or_else(|| value.get("type").and_then(|t| t.as_str()).map(|t| format!("({t})")))
        .unwrap_or_else(|| line.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn the_journal_is_followed_line_by_line_and_a_torn_line_waits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let line = |seq: u64| {
            format!(
                r#"{{"schema_version":"breeze-event.v1","seq":{seq},"at":"2026-11-30T12:00:00.000Z","event":{{"kind":"run_finished","state":"succeeded"}}}}"#
            )
        };
        std::fs::write(&path, format!("{}\n", line(1))).unwrap();
        let mut tail = JournalTail::open(&path).unwrap();
        assert_eq!(tail.follow(|_| {}).unwrap(), 1);
        assert_eq!(tail.follow(|_| {}).unwrap(), 0);
        let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        let second = line(2);
        let (head, rest) = second.split_at(20);
        write!(file, "{head}").unwrap();
        assert!(tail.poll().unwrap().is_empty(), "half a line is not an event yet");
        writeln!(file, "{rest}\n{}", line(3)).unwrap();
        let mut seqs = Vec::new();
        tail.follow(|event| seqs.push(event.seq)).unwrap();
        assert_eq!(seqs, [2, 3]);
    }

    #[test]
    fn the_last_line_comes_from_the_end_of_the_newer_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("1.worker.1.log");
        let (stdout, stderr) = breeze_supervise::stream_log_paths(&log);
        std::fs::write(&stderr, "warming up\n").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let big = "x".repeat(100_000);
        std::fs::write(&stdout, format!("{big}\nstep 1\nstep 2: compiling\n\n")).unwrap();
        assert_eq!(last_output_line(&log).as_deref(), Some("step 2: compiling"));
        assert_eq!(last_output_line(&dir.path().join("none.log")), None);
        assert_eq!(
            readable(
                r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Reading src/lib.rs"}]}}"#
            ),
            "Reading src/lib.rs"
        );
        assert_eq!(readable(r#"{"type":"system","subtype":"init"}"#), "(system)");
    }
}
