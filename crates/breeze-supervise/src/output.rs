//! Bounded views of a role's output: the tail of a stream, and its lines cut to a maximum
//! length. Both keep a fixed amount of memory whatever the role prints.

/// The last `keep` bytes of a stream. Memory stays below `2 * keep` plus one chunk.
#[derive(Debug)]
pub(crate) struct TailBuffer {
    buf: Vec<u8>,
    keep: usize,
}

impl TailBuffer {
    pub fn new(keep: usize) -> Self {
        Self { buf: Vec::new(), keep }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        if self.keep == 0 {
            return;
        }
        if chunk.len() >= self.keep {
            self.buf.clear();
            self.buf.extend_from_slice(&chunk[chunk.len() - self.keep..]);
            return;
        }
        self.buf.extend_from_slice(chunk);
        // Trim only once the buffer has doubled, so the copy is amortized over `keep` bytes.
        if self.buf.len() > 2 * self.keep {
            let excess = self.buf.len() - self.keep;
            self.buf.drain(..excess);
        }
    }

    /// The last `n` bytes kept (fewer if less was pushed or kept).
    pub fn last(&self, n: usize) -> &[u8] {
        let kept = &self.buf[self.buf.len().saturating_sub(self.keep)..];
        &kept[kept.len().saturating_sub(n)..]
    }
}

/// Lossy UTF-8 of a tail that may start in the middle of a character: leading continuation
/// bytes of a cut character are dropped instead of becoming U+FFFD.
pub(crate) fn lossy_tail(bytes: &[u8], was_cut: bool) -> String {
    let start = if was_cut {
        bytes.iter().take(3).take_while(|&&b| b & 0b1100_0000 == 0b1000_0000).count()
    } else {
        0
    };
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

/// Splits a byte stream into lines (without `\n` or a trailing `\r`). A line longer than
/// `max` bytes is cut at `max` (on a character boundary) and marked with
/// `… [line truncated: N bytes]`; only `max` bytes of it are ever held.
#[derive(Debug)]
pub(crate) struct LineSplitter {
    pending: Vec<u8>,
    max: usize,
    /// Bytes of the current line that did not fit.
    dropped: u64,
}

impl LineSplitter {
    pub fn new(max: usize) -> Self {
        Self { pending: Vec::new(), max, dropped: 0 }
    }

    pub fn push(&mut self, mut chunk: &[u8], emit: &mut impl FnMut(&str)) {
        while let Some(newline) = chunk.iter().position(|&b| b == b'\n') {
            let (line, rest) = (&chunk[..newline], &chunk[newline + 1..]);
            if self.pending.is_empty() && self.dropped == 0 && line.len() <= self.max {
                // Common case: a whole line inside one chunk, no copy.
                emit_line(line, 0, emit);
            } else {
                self.append(line);
                emit_line(&self.pending, self.dropped, emit);
                self.pending.clear();
                self.dropped = 0;
            }
            chunk = rest;
        }
        self.append(chunk);
    }

    /// Emits a last line that had no newline.
    pub fn finish(&mut self, emit: &mut impl FnMut(&str)) {
        if !self.pending.is_empty() || self.dropped > 0 {
            emit_line(&self.pending, self.dropped, emit);
            self.pending.clear();
            self.dropped = 0;
        }
    }

    fn append(&mut self, bytes: &[u8]) {
        let room = self.max.saturating_sub(self.pending.len());
        let take = room.min(bytes.len());
        self.pending.extend_from_slice(&bytes[..take]);
        self.dropped += (bytes.len() - take) as u64;
    }
}

fn emit_line(line: &[u8], dropped: u64, emit: &mut impl FnMut(&str)) {
    if dropped == 0 {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        match std::str::from_utf8(line) {
            Ok(text) => emit(text),
            Err(_) => emit(&String::from_utf8_lossy(line)),
        }
        return;
    }
    // Cut at a character boundary: drop an incomplete sequence at the end of the kept part.
    let kept = match std::str::from_utf8(line) {
        Err(err) if err.error_len().is_none() => &line[..err.valid_up_to()],
        _ => line,
    };
    let total = line.len() as u64 + dropped;
    emit(&format!("{}… [line truncated: {total} bytes]", String::from_utf8_lossy(kept)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(max: usize, chunks: &[&[u8]]) -> Vec<String> {
        let mut lines = Vec::new();
        let mut splitter = LineSplitter::new(max);
        for chunk in chunks {
            splitter.push(chunk, &mut |l: &str| lines.push(l.to_owned()));
        }
        splitter.finish(&mut |l: &str| lines.push(l.to_owned()));
        lines
    }

    #[test]
    fn lines_across_chunks_crlf_and_a_final_line_without_newline() {
        assert_eq!(
            split(100, &[b"one\r\ntw", b"o\n\nthr", b"ee"]),
            ["one", "two", "", "three"].map(String::from)
        );
    }

    #[test]
    fn long_lines_are_cut_and_marked_and_the_next_line_is_still_seen() {
        let long = vec![b'a'; 1000];
        let lines = split(12, &[&long[..500], &long[500..], b"\n{\"ok\":true}\n"]);
        assert_eq!(lines, ["aaaaaaaaaaaa… [line truncated: 1000 bytes]", "{\"ok\":true}"]);
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        // "é" is two bytes; a cut after 3 bytes would split the second one.
        let lines = split(3, &["aéé\n".as_bytes()]);
        assert_eq!(lines, ["aé… [line truncated: 5 bytes]"]);
    }

    #[test]
    fn an_endless_line_holds_only_max_bytes() {
        let mut splitter = LineSplitter::new(16);
        let chunk = vec![b'y'; 64 * 1024];
        for _ in 0..100 {
            splitter.push(&chunk, &mut |_| panic!("no newline yet"));
        }
        assert_eq!(splitter.pending.len(), 16);
        let mut lines = Vec::new();
        splitter.finish(&mut |l: &str| lines.push(l.to_owned()));
        assert_eq!(lines, [format!("{}… [line truncated: 6553600 bytes]", "y".repeat(16))]);
    }

    #[test]
    fn tail_keeps_exactly_the_last_bytes() {
        let mut tail = TailBuffer::new(5);
        for chunk in [&b"abc"[..], b"defg", b"h", b"ijklmnopqrstuvwxyz", b"12"] {
            tail.push(chunk);
            assert!(tail.buf.len() <= 2 * 5 + chunk.len());
        }
        assert_eq!(tail.last(5), b"xyz12");
        assert_eq!(tail.last(2), b"12");
        assert_eq!(tail.last(100), b"xyz12");
        let mut empty = TailBuffer::new(0);
        empty.push(b"anything");
        assert_eq!(empty.last(10), b"");
    }

    #[test]
    fn lossy_tail_drops_a_cut_character() {
        let bytes = "é!".as_bytes();
        assert_eq!(lossy_tail(&bytes[1..], true), "!");
        assert_eq!(lossy_tail(b"plain", true), "plain");
        assert_eq!(lossy_tail(&bytes[1..], false), "\u{FFFD}!");
    }
}
