//! `breeze logs TASK`: the role logs of a task.

use std::io::Read as _;
use std::path::Path;

use breeze_protocol::ExitCode;

use crate::args::LogsArgs;
use crate::commands::run::engine_error;
use crate::error::CliResult;
use crate::output;

/// Bytes of a log read and printed at once: a log of any size is shown in this much memory.
const CHUNK: usize = 64 * 1024;

pub fn run(args: &LogsArgs) -> CliResult {
    let files =
        breeze_engine::maintenance::task_logs(&crate::here(), args.run.as_deref(), &args.task)
            .map_err(engine_error)?;
    if files.is_empty() {
        output::println(&format!("task {} has no logs yet", args.task))?;
        return Ok(ExitCode::Success);
    }
    for file in files {
        show_log(&file)?;
    }
    Ok(ExitCode::Success)
}

/// Prints one log under its header (nothing for an empty or unreadable one), streamed in
/// [`CHUNK`]s: invalid UTF-8 shown as U+FFFD, a character split between two reads kept
/// whole, control characters escaped as [`output::print`] does.
fn show_log(file: &Path) -> std::io::Result<()> {
    let Ok(mut reader) = std::fs::File::open(file) else { return Ok(()) };
    let mut buffer = vec![0u8; CHUNK];
    let mut pending: Vec<u8> = Vec::with_capacity(CHUNK + 4);
    let mut started = false;
    let mut last = b'\n';
    loop {
        let read = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if !started {
            output::println(&format!("==> {} <==", file.display()))?;
            started = true;
        }
        pending.extend_from_slice(&buffer[..read]);
        let whole = pending.len() - split_char_len(&pending);
        output::print(&String::from_utf8_lossy(&pending[..whole]))?;
        if whole > 0 {
            last = pending[whole - 1];
        }
        pending.drain(..whole);
    }
    if !pending.is_empty() {
        output::print(&String::from_utf8_lossy(&pending))?;
        last = pending[pending.len() - 1];
    }
    if started && last != b'\n' {
        output::println("")?;
    }
    Ok(())
}

/// How many bytes at the end of `bytes` begin a UTF-8 character that the next read
/// completes (0 when the text ends on a whole character or on bytes that are invalid
/// anyway).
fn split_char_len(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let byte = bytes[bytes.len() - back];
        if byte & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back for the lead
        }
        let needed = match byte {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return 0,
        };
        return if needed > back { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::split_char_len;

    #[test]
    fn a_character_split_at_the_end_is_kept_for_the_next_read() {
        assert_eq!(split_char_len(b"plain"), 0);
        let euro = "€".as_bytes(); // 3 bytes
        assert_eq!(split_char_len(&[b'a', euro[0]]), 1);
        assert_eq!(split_char_len(&[b'a', euro[0], euro[1]]), 2);
        assert_eq!(split_char_len(&[b'a', euro[0], euro[1], euro[2]]), 0);
        let emoji = "🦀".as_bytes(); // 4 bytes
        assert_eq!(split_char_len(&emoji[..3]), 3);
        assert_eq!(split_char_len(emoji), 0);
        assert_eq!(split_char_len(&[0xFF]), 0, "invalid bytes are not held back");
        assert_eq!(split_char_len(&[0x80, 0x80, 0x80]), 0);
    }
}
