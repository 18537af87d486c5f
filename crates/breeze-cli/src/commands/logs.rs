//! `breeze logs TASK [--follow]`: the role logs of a task, streamed (a log is never read
//! into memory whole); with `--follow`, what the roles write next too, until the task or
//! the run ends.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use breeze_protocol::ExitCode;

use crate::args::LogsArgs;
use crate::error::{CliError, CliResult};
use crate::output;

/// How often `--follow` looks for new output.
const POLL: Duration = Duration::from_millis(250);
/// How often `--follow` looks for new log files and whether the task is done.
const CHECK: Duration = Duration::from_secs(1);
/// How much of a log is read (and printed) at a time.
const CHUNK: usize = 64 * 1024;

pub fn run(args: &LogsArgs) -> CliResult {
    let here = crate::workdir::here();
    let run_id = breeze_engine::load_run(&here, args.run.as_deref())?.run_id;
    let list = || {
        breeze_engine::maintenance::task_logs(&here, Some(&run_id), &args.task)
            .map_err(CliError::from)
    };
    let mut logs: Vec<Log> = list()?.into_iter().map(Log::new).collect();
    if logs.is_empty() && !args.follow {
        output::println(&format!("task {} has no logs yet", args.task))?;
        return Ok(ExitCode::Success);
    }
    let mut shown = Shown { path: None, at_line_start: true };
    for log in &mut logs {
        log.pump(&mut shown)?;
    }
    if !args.follow {
        if !shown.at_line_start {
            output::println("")?;
        }
        return Ok(ExitCode::Success);
    }
    let mut checked = Instant::now();
    loop {
        std::thread::sleep(POLL);
        let mut done = false;
        if checked.elapsed() >= CHECK {
            checked = Instant::now();
            done = task_done(&here, &run_id, &args.task);
            for path in list()? {
                if !logs.iter().any(|log| log.path == path) {
                    logs.push(Log::new(path));
                }
            }
        }
        for log in &mut logs {
            log.pump(&mut shown)?;
        }
        if done {
            if !shown.at_line_start {
                output::println("")?;
            }
            return Ok(ExitCode::Success);
        }
    }
}

/// Whether nothing more will be written for `task` in this run: it is done, or no engine
/// runs (then a later `breeze resume` goes on, and `breeze logs` again with it).
fn task_done(here: &Path, run_id: &str, task: &str) -> bool {
    if !breeze_engine::run::engine_alive(here) {
        return true;
    }
    breeze_engine::load_run(here, Some(run_id))
        .ok()
        .and_then(|snapshot| snapshot.status().tasks.into_iter().find(|t| t.id == task))
        .is_some_and(|status| status.state.is_terminal())
}

/// What was printed last.
struct Shown {
    /// The file it came from.
    path: Option<PathBuf>,
    /// It ended a line.
    at_line_start: bool,
}

/// One log file and how much of it was printed.
struct Log {
    path: PathBuf,
    offset: u64,
    /// The start of a UTF-8 character cut by the end of the last chunk.
    carry: Vec<u8>,
}

impl Log {
    fn new(path: PathBuf) -> Log {
        Log { path, offset: 0, carry: Vec::new() }
    }

    /// Prints what was appended since the last call, under a `==> path <==` header when
    /// the previous output came from another file.
    fn pump(&mut self, shown: &mut Shown) -> std::io::Result<()> {
        let Ok(mut file) = File::open(&self.path) else { return Ok(()) };
        if file.metadata().is_ok_and(|m| m.len() < self.offset) {
            // Truncated (not done by breeze): start again.
            self.offset = 0;
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut chunk = vec![0; CHUNK];
        loop {
            let read = file.read(&mut chunk)?;
            if read == 0 {
                return Ok(());
            }
            self.offset += read as u64;
            let mut bytes = std::mem::take(&mut self.carry);
            bytes.extend_from_slice(&chunk[..read]);
            let cut = complete_utf8(&bytes);
            self.carry = bytes.split_off(cut);
            if bytes.is_empty() {
                continue;
            }
            if shown.path.as_deref() != Some(self.path.as_path()) {
                if !shown.at_line_start {
                    output::println("")?;
                }
                output::println(&format!("==> {} <==", self.path.display()))?;
                shown.path = Some(self.path.clone());
            }
            output::print(&String::from_utf8_lossy(&bytes))?;
            shown.at_line_start = bytes.ends_with(b"\n");
        }
    }
}

/// How many leading bytes of `bytes` end on a character boundary (invalid bytes count as
/// characters: they are shown as `�`); only an incomplete last character is held back.
fn complete_utf8(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(err) if err.error_len().is_none() => err.valid_up_to(),
        Err(err) => {
            let next = err.valid_up_to() + err.error_len().unwrap_or(1);
            next + complete_utf8(&bytes[next..])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_cut_last_character_is_held_back() {
        let text = "née ✓".as_bytes();
        assert_eq!(complete_utf8(text), text.len());
        assert_eq!(complete_utf8(&text[..text.len() - 1]), text.len() - 3);
        assert_eq!(complete_utf8(b"a\xffb"), 3);
        assert_eq!(complete_utf8(b"a\xffb\xe2\x9c"), 3);
    }
}
