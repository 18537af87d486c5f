//! The region on a terminal stand-in that does what the region relies on: text wraps at
//! its width, `\r`, `\n`, cursor up (`ESC [ n A`) and erase below (`ESC [ J`) — and, made
//! narrower, it wraps again what it shows, as terminals that reflow do.

use super::*;

/// A terminal: the lines it shows (each as written, wrapped when shown) and its width.
struct Terminal {
    /// Lines ended by a newline.
    lines: Vec<String>,
    /// The line the cursor is on, written so far.
    current: String,
    columns: usize,
}

impl Terminal {
    fn new(columns: usize) -> Terminal {
        Terminal { lines: Vec::new(), current: String::new(), columns }
    }

    /// Rows of one line at the terminal's width.
    fn rows_of(&self, line: &str) -> Vec<String> {
        let chars: Vec<char> = line.chars().collect();
        if chars.is_empty() {
            return vec![String::new()];
        }
        chars.chunks(self.columns).map(|row| row.iter().collect()).collect()
    }

    /// What it shows, row by row (the cursor's row last when it holds text).
    fn rows(&self) -> Vec<String> {
        let mut rows: Vec<String> = self.lines.iter().flat_map(|line| self.rows_of(line)).collect();
        if !self.current.is_empty() {
            rows.extend(self.rows_of(&self.current));
        }
        rows
    }

    /// Takes what the region wrote.
    fn feed(&mut self, bytes: &[u8]) {
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        let mut chars = text.chars().peekable();
        // Rows the cursor went up since the last erase (it is at a row's start then).
        let mut up = 0;
        while let Some(c) = chars.next() {
            match c {
                '\n' => self.lines.push(std::mem::take(&mut self.current)),
                '\r' => {
                    assert!(
                        self.current.chars().count().is_multiple_of(self.columns),
                        "\\r is only sent at the start of a row: {:?}",
                        self.current
                    );
                }
                '\x1b' => {
                    assert_eq!(chars.next(), Some('['));
                    let mut number = String::new();
                    let command = loop {
                        match chars.next().unwrap() {
                            digit @ '0'..='9' => number.push(digit),
                            command => break command,
                        }
                    };
                    match command {
                        'A' => up += number.parse::<usize>().unwrap(),
                        'J' => {
                            self.erase_from(up);
                            up = 0;
                        }
                        other => panic!("unexpected escape {other}"),
                    }
                }
                c => self.current.push(c),
            }
        }
    }

    /// Erases from the start of the row `up` rows above the cursor's down.
    fn erase_from(&mut self, up: usize) {
        let mut rows = self.rows();
        if !self.current.is_empty() {
            // The cursor is at the start of the row after the text on its line.
            rows.pop();
        }
        let keep = rows.len().saturating_sub(up);
        let mut kept_rows = 0;
        let mut lines = Vec::new();
        for line in &self.lines {
            let count = self.rows_of(line).len();
            if kept_rows + count <= keep {
                lines.push(line.clone());
                kept_rows += count;
            } else {
                // Part of a wrapped line stays: the cursor goes on after it.
                let chars = (keep - kept_rows) * self.columns;
                self.current = line.chars().take(chars).collect();
                self.lines = lines;
                return;
            }
        }
        self.lines = lines;
        self.current.clear();
    }
}

fn frame(tag: &str, width: usize) -> Vec<String> {
    (1..=4).map(|n| format!("{tag} line {n} {}", "·".repeat(width.saturating_sub(16)))).collect()
}

/// Draws and prints on `screen`, passing what it writes on to `terminal`.
fn drawn(screen: &Screen, terminal: &mut Terminal) {
    terminal.feed(&screen.take_written());
}

#[test]
fn a_line_printed_above_leaves_the_region_whole_below_it() {
    let screen = Screen::in_buffer(30, 80);
    let mut terminal = Terminal::new(80);
    terminal.feed(b"$ breeze run\n");
    screen.draw(&frame("first", 70));
    screen.print_above("2026-12-01T10:00:00Z  WARN the notify command exited with code 3");
    screen.draw(&frame("second", 70));
    drawn(&screen, &mut terminal);
    let rows = terminal.rows();
    assert_eq!(rows[0], "$ breeze run");
    assert!(rows[1].contains("WARN the notify command"), "{rows:#?}");
    assert_eq!(&rows[2..], frame("second", 70).as_slice(), "{rows:#?}");
}

#[test]
fn after_the_terminal_narrows_a_line_printed_above_erases_the_whole_wrapped_region() {
    let screen = Screen::in_buffer(30, 100);
    let mut terminal = Terminal::new(100);
    screen.draw(&frame("wide", 95));
    drawn(&screen, &mut terminal);
    // The pane is split: the region's lines now take two rows each.
    terminal.columns = 50;
    screen.resize(50);
    screen.print_above("WARN lane 1 cannot be reused");
    drawn(&screen, &mut terminal);
    let rows = terminal.rows();
    assert_eq!(rows[0], "WARN lane 1 cannot be reused", "{rows:#?}");
    assert!(rows.iter().skip(1).all(|row| !row.contains("WARN")), "{rows:#?}");
    assert_eq!(rows.len(), 1 + 4 * 2, "the old frame redrawn once below it: {rows:#?}");
    screen.draw(&frame("narrow", 45));
    drawn(&screen, &mut terminal);
    assert_eq!(terminal.rows()[0], "WARN lane 1 cannot be reused");
    assert_eq!(&terminal.rows()[1..], frame("narrow", 45).as_slice());
}

#[test]
fn a_tracing_warning_during_a_live_view_is_printed_above_the_region() {
    let screen = Screen::in_buffer(30, 80);
    let mut terminal = Terminal::new(80);
    let _active = ActiveRegion::new(screen.clone());
    screen.draw(&frame("before", 70));
    let subscriber = crate::log_subscriber(tracing_subscriber::EnvFilter::new("warn"), false);
    tracing::subscriber::with_default(subscriber, || {
        tracing::warn!(task = "1", "lane 1: the worktree cannot be reused\nsecond line");
        tracing::info!("not shown at the default level");
    });
    screen.draw(&frame("after", 70));
    drawn(&screen, &mut terminal);
    let rows = terminal.rows();
    assert!(
        rows[0].contains(" WARN ") && rows[0].ends_with("lane 1: the worktree cannot be reused"),
        "{rows:#?}"
    );
    assert!(rows[1].starts_with("second line"), "{rows:#?}");
    assert_eq!(
        &rows[2..],
        frame("after", 70).as_slice(),
        "nothing of it inside the region: {rows:#?}"
    );
}
