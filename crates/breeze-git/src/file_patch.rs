//! One file's change as a person reads it, written by breeze from the bytes of its two
//! sides — never by git's patch printing, which follows `.gitattributes` (a `-diff` or
//! `binary` attribute hides a file as "Binary files differ"; a `diff=` driver changes what
//! is shown) and calls anything with a NUL binary. What each side is comes from its bytes
//! alone (`content.rs`): text is diffed as text, text with a few odd bytes is diffed as text
//! with them escaped, binary content and files above the size limit are named by a line of
//! their own. The header follows git's (`diff --git`, modes, renames, `index`).

use std::fmt::Write as _;

use git2::{DiffOptions, Oid, Patch};

use crate::content::{Escapes, Shape, binary_kind, display_path, escape, shape};
use crate::error::{Context as _, GitError};

/// What one side of a file's change holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Body {
    /// Nothing: the old side of an addition, the new side of a deletion.
    Absent,
    /// The content (a link's target, `Subproject commit <id>` for a gitlink).
    Bytes(Vec<u8>),
    /// Above the size limit, not read: its size.
    TooBig(u64),
}

/// One side of a file's change.
#[derive(Debug, Clone)]
pub(crate) struct Side {
    /// Repository-relative path, as git stores it.
    pub(crate) path: Vec<u8>,
    /// Git's mode (`0o100644`, `0o120000`, …; 0 when absent).
    pub(crate) mode: u32,
    /// The object id (zero for a file of a working tree not hashed yet, or absent).
    pub(crate) id: Oid,
    /// What it holds.
    pub(crate) body: Body,
}

/// How the file changed, for the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum How {
    Added,
    Deleted,
    Modified,
    Renamed,
    Copied,
}

/// Content that lands and that the diff cannot show plainly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Opaque {
    /// Text but for these bytes, shown escaped.
    Escaped(Escapes),
    /// Binary content of this kind and size: not shown.
    Binary { kind: &'static str, size: u64 },
}

impl Opaque {
    /// For the reviewer.
    pub(crate) fn describe(&self) -> String {
        match self {
            Opaque::Escaped(escapes) => format!(
                "text with {}, shown escaped in the diff (`\\0`, `\\x1b`, `\\u{{202e}}`, …)",
                escapes.describe()
            ),
            Opaque::Binary { kind, size } => {
                format!("{kind}, {size} bytes: binary, the diff cannot show it")
            }
        }
    }
}

/// One file's line of `--stat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileStat {
    /// The path (`old => new` for a rename or copy).
    pub(crate) name: String,
    /// Lines added.
    pub(crate) added: usize,
    /// Lines removed.
    pub(crate) removed: usize,
    /// Sizes of the two sides when either is not shown as text.
    pub(crate) binary: Option<(u64, u64)>,
}

/// One file's change, rendered.
#[derive(Debug, Clone)]
pub(crate) struct FilePatch {
    /// The patch text.
    pub(crate) text: String,
    /// Its `--stat` line.
    pub(crate) stat: FileStat,
    /// What of the new side the diff cannot show plainly.
    pub(crate) opaque: Option<Opaque>,
}

/// How one side is shown.
enum View<'a> {
    /// Nothing there.
    Nothing,
    /// Shown as text (escaped where needed).
    Text(&'a [u8]),
    /// Binary: named by a line (its kind and size), not shown.
    Binary(String),
    /// Above the size limit: its size, not read.
    Unread(u64),
}

fn view(body: &Body) -> (View<'_>, Option<Shape>) {
    match body {
        Body::Absent => (View::Nothing, None),
        Body::TooBig(size) => (View::Unread(*size), None),
        Body::Bytes(bytes) => match shape(bytes) {
            Shape::Binary(kind) => (View::Binary(format!("{kind}, {} bytes", bytes.len())), None),
            text => (View::Text(bytes), Some(text)),
        },
    }
}

fn size(body: &Body) -> u64 {
    match body {
        Body::Absent => 0,
        Body::Bytes(bytes) => bytes.len() as u64,
        Body::TooBig(size) => *size,
    }
}

/// The change of one file from `old` to `new`; files above `max` bytes were not read.
pub(crate) fn file_patch(
    how: How,
    old: &Side,
    new: &Side,
    max: u64,
) -> Result<FilePatch, GitError> {
    let (old_path, new_path) = match how {
        How::Added => (&new.path, &new.path),
        How::Deleted => (&old.path, &old.path),
        _ => (&old.path, &new.path),
    };
    let a = display_path(&[b"a/", old_path.as_slice()].concat());
    let b = display_path(&[b"b/", new_path.as_slice()].concat());
    let mut text = header(how, old, new, &a, &b);
    let name = match how {
        How::Renamed | How::Copied => {
            format!("{} => {}", display_path(old_path), display_path(new_path))
        }
        _ => display_path(new_path),
    };
    let mut stat = FileStat { name, added: 0, removed: 0, binary: None };
    let (old_view, _) = view(&old.body);
    let (new_view, new_shape) = view(&new.body);
    let opaque = match (&new.body, new_shape) {
        (Body::Bytes(bytes), None) => {
            Some(Opaque::Binary { kind: binary_kind(bytes), size: bytes.len() as u64 })
        }
        (_, Some(Shape::Escaped(escapes))) => Some(Opaque::Escaped(escapes)),
        _ => None,
    };
    if same_content(old, new) {
        return Ok(FilePatch { text, stat, opaque });
    }
    for (label, side) in [(&a, &old_view), (&b, &new_view)] {
        let _ = match side {
            View::Binary(what) => writeln!(text, "Binary file {label}: {what}; not shown"),
            View::Unread(size) => writeln!(
                text,
                "File {label}: {size} bytes, above the size limit ({max} bytes); not read"
            ),
            View::Nothing | View::Text(_) => Ok(()),
        };
    }
    let hidden = |side: &View<'_>| matches!(side, View::Binary(_) | View::Unread(_));
    if hidden(&old_view) || hidden(&new_view) {
        stat.binary = Some((size(&old.body), size(&new.body)));
    }
    if as_text(&old_view).is_some() || as_text(&new_view).is_some() {
        let old_label = if old.body == Body::Absent { "/dev/null".to_string() } else { a.clone() };
        let new_label = if new.body == Body::Absent { "/dev/null".to_string() } else { b.clone() };
        let before = as_text(&old_view).unwrap_or_default();
        let after = as_text(&new_view).unwrap_or_default();
        hunks(&mut text, (&old_label, before), (&new_label, after), &mut stat)?;
    }
    Ok(FilePatch { text, stat, opaque })
}

/// The bytes of a side shown as text.
fn as_text<'a>(side: &View<'a>) -> Option<&'a [u8]> {
    match side {
        View::Text(bytes) => Some(bytes),
        _ => None,
    }
}

/// Whether both sides hold the same content (a pure rename or mode change).
fn same_content(old: &Side, new: &Side) -> bool {
    match (&old.body, &new.body) {
        (Body::Absent, _) | (_, Body::Absent) => false,
        _ if !old.id.is_zero() && !new.id.is_zero() => old.id == new.id,
        (Body::Bytes(before), Body::Bytes(after)) => before == after,
        _ => false,
    }
}

/// `diff --git`, the mode, rename and copy lines, and `index`, as git writes them.
fn header(how: How, old: &Side, new: &Side, a: &str, b: &str) -> String {
    let mut text = format!("diff --git {a} {b}\n");
    match how {
        How::Added => {
            let _ = writeln!(text, "new file mode {:06o}", new.mode);
        }
        How::Deleted => {
            let _ = writeln!(text, "deleted file mode {:06o}", old.mode);
        }
        How::Modified | How::Renamed | How::Copied => {
            if old.mode != new.mode {
                let _ = write!(text, "old mode {:06o}\nnew mode {:06o}\n", old.mode, new.mode);
            }
        }
    }
    let (from, to) = (display_path(&old.path), display_path(&new.path));
    match how {
        How::Renamed => {
            let _ = write!(text, "rename from {from}\nrename to {to}\n");
        }
        How::Copied => {
            let _ = write!(text, "copy from {from}\ncopy to {to}\n");
        }
        _ => {}
    }
    if !same_content(old, new) {
        let short = |id: Oid| id.to_string()[..7].to_string();
        let _ = write!(text, "index {}..{}", short(old.id), short(new.id));
        if old.mode == new.mode {
            let _ = write!(text, " {:06o}", new.mode);
        }
        text.push('\n');
    }
    text
}

/// The hunks (3 lines of context) turning `before` into `after`, headed by `---`/`+++`
/// when there is any; every line escaped where it needs it. Counts the lines into `stat`.
fn hunks(
    out: &mut String,
    (old_label, before): (&str, &[u8]),
    (new_label, after): (&str, &[u8]),
    stat: &mut FileStat,
) -> Result<(), GitError> {
    let mut options = DiffOptions::new();
    // Our own classification decided these are text; libgit2 must not decide again.
    options.force_text(true);
    let patch = Patch::from_buffers(before, None, after, None, Some(&mut options))
        .ctx(|| format!("could not diff {new_label}"))?;
    if patch.num_hunks() == 0 {
        return Ok(());
    }
    let _ = write!(out, "--- {old_label}\n+++ {new_label}\n");
    for index in 0..patch.num_hunks() {
        let (hunk, lines) = patch.hunk(index).ctx(|| format!("could not diff {new_label}"))?;
        out.push_str(&escape(hunk.header()));
        for at in 0..lines {
            let line =
                patch.line_in_hunk(index, at).ctx(|| format!("could not diff {new_label}"))?;
            match line.origin() {
                origin @ ('+' | '-' | ' ') => {
                    stat.added += usize::from(origin == '+');
                    stat.removed += usize::from(origin == '-');
                    out.push(origin);
                    out.push_str(&escape(line.content()));
                }
                // libgit2's own `\ No newline at end of file`.
                _ => out.push_str(&String::from_utf8_lossy(line.content())),
            }
        }
    }
    Ok(())
}

/// The `--stat` text of `files`, as git prints it: one line per file with its changed
/// lines and a bar scaled to `width` columns, then the totals; nothing for no file (as
/// the patch of no change is empty, and as `git diff --stat` prints nothing).
pub(crate) fn stat_text(files: &[FileStat], width: usize) -> String {
    if files.is_empty() {
        return String::new();
    }
    let name_width = files.iter().map(|file| file.name.chars().count()).max().unwrap_or(0);
    let most = files.iter().map(|file| file.added + file.removed).max().unwrap_or(0);
    let count_width = most.to_string().len();
    let bar_room = width.saturating_sub(name_width + count_width + 6).max(10);
    let scale = |n: usize| {
        if most <= bar_room || n == 0 { n } else { (n * bar_room).div_ceil(most).max(1) }
    };
    let mut out = String::new();
    for file in files {
        let pad = name_width - file.name.chars().count();
        let _ = write!(out, " {}{} | ", file.name, " ".repeat(pad));
        match file.binary {
            Some((before, after)) => {
                let _ = writeln!(out, "Bin {before} -> {after} bytes");
            }
            None => {
                let changed = file.added + file.removed;
                let bar =
                    format!("{}{}", "+".repeat(scale(file.added)), "-".repeat(scale(file.removed)));
                let _ = writeln!(out, "{changed:>count_width$} {bar}");
            }
        }
    }
    out.push_str(&summary(files));
    out
}

/// `3 files changed, 3 insertions(+), 1 deletion(-)`, worded as git words it.
fn summary(files: &[FileStat]) -> String {
    let added: usize = files.iter().map(|file| file.added).sum();
    let removed: usize = files.iter().map(|file| file.removed).sum();
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut line = format!(" {}", plural(files.len(), "file changed", "files changed"));
    if added > 0 || removed == 0 {
        let _ = write!(line, ", {}", plural(added, "insertion(+)", "insertions(+)"));
    }
    if removed > 0 || added == 0 {
        let _ = write!(line, ", {}", plural(removed, "deletion(-)", "deletions(-)"));
    }
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(path: &str, mode: u32, body: Body) -> Side {
        let id = match &body {
            Body::Bytes(bytes) => Oid::hash_object(git2::ObjectType::Blob, bytes).unwrap(),
            _ => Oid::ZERO_SHA1,
        };
        Side { path: path.as_bytes().to_vec(), mode, id, body }
    }

    #[test]
    fn a_new_script_with_a_nul_is_shown_whole_with_the_nul_escaped() {
        let old = side("tools/x.sh", 0, Body::Absent);
        let new = side("tools/x.sh", 0o100755, Body::Bytes(b"#!/bin/sh\n\0curl x | sh\n".to_vec()));
        let patch = file_patch(How::Added, &old, &new, 1024).unwrap();
        assert!(
            patch.text.starts_with("diff --git a/tools/x.sh b/tools/x.sh\nnew file mode 100755\n"),
            "{}",
            patch.text
        );
        assert!(
            patch.text.ends_with(
                "--- /dev/null\n+++ b/tools/x.sh\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+\\0curl x | sh\n"
            ),
            "{}",
            patch.text
        );
        let Some(Opaque::Escaped(escapes)) = patch.opaque else { panic!("{:?}", patch.opaque) };
        assert_eq!((escapes.nul, escapes.lines), (1, vec![2]));
        assert_eq!((patch.stat.added, patch.stat.removed), (2, 0));
    }

    #[test]
    fn binary_and_unread_sides_are_named_and_a_text_side_still_shown() {
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.extend([0u8; 40]);
        let old = side("logo", 0o100644, Body::Bytes(png.clone()));
        let new = side("logo", 0o100644, Body::Bytes(b"echo replaced\n".to_vec()));
        let patch = file_patch(How::Modified, &old, &new, 1024).unwrap();
        assert!(patch.text.contains("Binary file a/logo: PNG image, 48 bytes; not shown\n"));
        assert!(patch.text.contains("+echo replaced\n"), "{}", patch.text);
        assert_eq!(patch.stat.binary, Some((48, 14)));
        assert_eq!(patch.opaque, None);

        let big = side("big.bin", 0o100644, Body::TooBig(4096));
        let added = file_patch(How::Added, &side("big.bin", 0, Body::Absent), &big, 1024).unwrap();
        assert!(
            added.text.contains(
                "File b/big.bin: 4096 bytes, above the size limit (1024 bytes); not read"
            ),
            "{}",
            added.text
        );
        let image = file_patch(How::Added, &side("a.png", 0, Body::Absent), &old, 1024).unwrap();
        assert_eq!(image.opaque, Some(Opaque::Binary { kind: "PNG image", size: 48 }));
    }

    #[test]
    fn a_pure_rename_has_no_index_line_and_no_hunks() {
        let body = Body::Bytes(b"same\n".to_vec());
        let old = side("a.txt", 0o100644, body.clone());
        let new = side("b.txt", 0o100755, body);
        let patch = file_patch(How::Renamed, &old, &new, 1024).unwrap();
        assert_eq!(
            patch.text,
            "diff --git a/a.txt b/b.txt\nold mode 100644\nnew mode 100755\nrename from a.txt\nrename to b.txt\n"
        );
        assert_eq!(patch.stat.name, "a.txt => b.txt");
    }

    #[test]
    fn stats_read_like_git() {
        let files = [
            FileStat { name: "edit.txt".into(), added: 2, removed: 1, binary: None },
            FileStat { name: "new/file.txt".into(), added: 1, removed: 0, binary: None },
            FileStat { name: "logo.png".into(), added: 0, removed: 0, binary: Some((0, 48)) },
        ];
        assert_eq!(
            stat_text(&files, 80),
            " edit.txt     | 3 ++-\n new/file.txt | 1 +\n logo.png     | Bin 0 -> 48 bytes\n 3 files changed, 3 insertions(+), 1 deletion(-)\n"
        );
        assert_eq!(stat_text(&[], 80), "", "no change, no stats: the patch is empty too");
        let mode_only = FileStat { name: "run.sh".into(), added: 0, removed: 0, binary: None };
        assert_eq!(summary(&[mode_only]), " 1 file changed, 0 insertions(+), 0 deletions(-)\n");
    }
}
