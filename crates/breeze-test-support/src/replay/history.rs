//! The upstream history to replay: the last N first-parent changes that change the tree,
//! each with the entries it touched, and each change's new entries exported to a folder
//! its worker copies from.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use super::{Git, ReplayError};

/// How one path ends up after a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum After {
    /// Removed.
    Deleted,
    /// A file (`100644`, `100755`) or symbolic link (`120000`) with this blob.
    Entry {
        /// The git mode, as git prints it.
        mode: String,
        /// The blob's id.
        blob: String,
    },
}

/// One path a change touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Touched {
    /// Repository path.
    pub path: String,
    /// What the change left there.
    pub after: After,
}

/// One first-parent change of the upstream history.
#[derive(Debug, Clone)]
pub struct Change {
    /// The task id: `1` for the oldest replayed change, counting up.
    pub id: String,
    /// The upstream commit.
    pub commit: String,
    /// Its subject line.
    pub subject: String,
    /// Every path it touched (renames are a deletion and an addition), in git's order.
    pub touched: Vec<Touched>,
}

/// The changes to replay, oldest first.
#[derive(Debug, Clone)]
pub struct History {
    /// The commit main starts at: the first parent of the oldest replayed change.
    pub base: String,
    /// The newest replayed commit: main's tree must end equal to its tree.
    pub last: String,
    /// The replayed changes, oldest first.
    pub changes: Vec<Change>,
    /// First-parent commits newer than the base that change nothing (merges of work
    /// already on the first parent), oldest first: not replayed.
    pub empty: Vec<String>,
}

/// The last `count` first-parent changes up to `rev` that change the tree.
pub fn read(git: Git, upstream: &Path, rev: &str, count: usize) -> Result<History, ReplayError> {
    if count == 0 {
        return Err(ReplayError::new("nothing to replay: --changes must be at least 1"));
    }
    let listing = git.text(upstream, &["rev-list", "--first-parent", "--parents", rev])?;
    let mut changes: Vec<Change> = Vec::new();
    let mut empty = Vec::new();
    let mut base = None;
    for line in listing.lines() {
        let mut ids = line.split(' ');
        let (Some(commit), parent) = (ids.next(), ids.next()) else { continue };
        let Some(parent) = parent else {
            return Err(ReplayError::new(format!(
                "{rev} has only {} changes on its first-parent line before the root commit; ask for fewer",
                changes.len()
            )));
        };
        let touched = touched(git, upstream, parent, commit)?;
        if touched.is_empty() {
            empty.push(commit.to_string());
            continue;
        }
        let subject = git.text(upstream, &["log", "-1", "--format=%s", commit])?;
        changes.push(Change {
            id: String::new(),
            commit: commit.to_string(),
            subject: subject.trim().to_string(),
            touched,
        });
        if changes.len() == count {
            base = Some(parent.to_string());
            break;
        }
    }
    let Some(base) = base else {
        return Err(ReplayError::new(format!(
            "{rev} has only {} changes on its first-parent line; ask for fewer",
            changes.len()
        )));
    };
    changes.reverse();
    for (n, change) in changes.iter_mut().enumerate() {
        change.id = (n + 1).to_string();
    }
    empty.reverse();
    let last = changes.last().map(|c| c.commit.clone()).unwrap_or_default();
    Ok(History { base, last, changes, empty })
}

/// The paths `commit` changed against `parent`, without rename detection.
fn touched(
    git: Git,
    upstream: &Path,
    parent: &str,
    commit: &str,
) -> Result<Vec<Touched>, ReplayError> {
    let raw = git.bytes(upstream, &["diff-tree", "-r", "-z", "--no-renames", parent, commit])?;
    // `:oldmode newmode oldblob newblob status\0path\0`, repeated.
    let mut fields = raw.split(|&b| b == 0).filter(|f| !f.is_empty());
    let mut out = Vec::new();
    while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
        let meta = String::from_utf8_lossy(meta);
        let path = String::from_utf8(path.to_vec()).map_err(|_| {
            ReplayError::new(format!(
                "{commit} touches a path that is not UTF-8; pick another range"
            ))
        })?;
        let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        let [_, new_mode, _, new_blob, status] = parts[..] else {
            return Err(ReplayError::new(format!("unexpected `git diff-tree` line: {meta}")));
        };
        if path.contains('\n') {
            return Err(ReplayError::new(format!(
                "{commit} touches {path:?}, a path with a line break; pick another range"
            )));
        }
        let after = if status.starts_with('D') {
            After::Deleted
        } else if new_mode == "160000" {
            return Err(ReplayError::new(format!(
                "{commit} changes the submodule {path}; breeze refuses nested repositories, pick another range"
            )));
        } else {
            After::Entry { mode: new_mode.to_string(), blob: new_blob.to_string() }
        };
        out.push(Touched { path, after });
    }
    Ok(out)
}

/// Writes what each change leaves behind into `changes/<id>/`: `tree/` holds every entry
/// it added or changed (modes and symbolic links as upstream has them), `touched` every
/// path it touched, one per line.
pub fn export(
    git: Git,
    upstream: &Path,
    history: &History,
    changes_dir: &Path,
) -> Result<(), ReplayError> {
    let mut blobs = BlobReader::start(git, upstream)?;
    for change in &history.changes {
        let dir = changes_dir.join(&change.id);
        let tree = dir.join("tree");
        std::fs::create_dir_all(&tree).map_err(ReplayError::io(&tree))?;
        let mut paths = String::new();
        for touched in &change.touched {
            paths.push_str(&touched.path);
            paths.push('\n');
            if let After::Entry { mode, blob } = &touched.after {
                let content = blobs.read(blob)?;
                write_entry(&tree.join(&touched.path), mode, &content)?;
            }
        }
        let list = dir.join("touched");
        std::fs::write(&list, paths).map_err(ReplayError::io(&list))?;
    }
    Ok(())
}

/// Writes one entry: a symbolic link for mode `120000`, else a file, executable for
/// `100755`.
fn write_entry(path: &Path, mode: &str, content: &[u8]) -> Result<(), ReplayError> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(ReplayError::io(parent))?;
    }
    if mode == "120000" {
        let target = String::from_utf8_lossy(content).into_owned();
        return std::os::unix::fs::symlink(target, path).map_err(ReplayError::io(path));
    }
    std::fs::write(path, content).map_err(ReplayError::io(path))?;
    let bits = if mode == "100755" { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(bits))
        .map_err(ReplayError::io(path))
}

/// `git cat-file --batch`: blobs by id, one process for the whole export.
struct BlobReader {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: BufReader<std::process::ChildStdout>,
}

impl BlobReader {
    fn start(git: Git, upstream: &Path) -> Result<BlobReader, ReplayError> {
        let mut command = Command::new("git");
        git.prepare(&mut command);
        let mut child = command
            .arg("-C")
            .arg(upstream)
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|err| ReplayError::new(format!("cannot run git cat-file: {err}")))?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ReplayError::new("git cat-file has no pipes"));
        };
        Ok(BlobReader { child, input, output: BufReader::new(output) })
    }

    fn read(&mut self, blob: &str) -> Result<Vec<u8>, ReplayError> {
        let broken = |err: std::io::Error| ReplayError::new(format!("git cat-file: {err}"));
        writeln!(self.input, "{blob}").map_err(broken)?;
        self.input.flush().map_err(broken)?;
        let mut header = String::new();
        self.output.read_line(&mut header).map_err(broken)?;
        // `<id> blob <size>`, or `<id> missing`.
        let size: usize = header
            .trim_end()
            .rsplit(' ')
            .next()
            .and_then(|size| size.parse().ok())
            .filter(|_| header.contains(" blob "))
            .ok_or_else(|| {
                ReplayError::new(format!("git cat-file cannot read {blob}: {header}"))
            })?;
        let mut content = vec![0; size + 1];
        self.output.read_exact(&mut content).map_err(broken)?;
        content.pop();
        Ok(content)
    }
}

impl Drop for BlobReader {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
