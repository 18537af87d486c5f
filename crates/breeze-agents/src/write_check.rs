//! Checking the files an agent writes against the task's write set, as the writes appear
//! in its stream.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use crate::call::WriteSetCheck;

/// At most this many violations are kept; more are counted only.
pub(crate) const MAX_VIOLATIONS: usize = 200;

/// Maps the paths an agent writes (absolute, or relative to its working directory) to
/// worktree-relative `/`-separated paths and checks them.
pub(crate) struct WriteCheck {
    worktree: PathBuf,
    /// The worktree's canonical path, when it differs (the worktree reached through a
    /// symlink): the CLI may report either spelling.
    worktree_canonical: Option<PathBuf>,
    in_write_set: WriteSetCheck,
    seen: HashSet<String>,
    violations: Vec<String>,
    dropped: u64,
}

impl WriteCheck {
    /// A check for writes made in `worktree`.
    pub(crate) fn new(worktree: &Path, in_write_set: WriteSetCheck) -> WriteCheck {
        let worktree = normalize(worktree);
        let worktree_canonical =
            std::fs::canonicalize(&worktree).ok().filter(|canonical| *canonical != worktree);
        WriteCheck {
            worktree,
            worktree_canonical,
            in_write_set,
            seen: HashSet::new(),
            violations: Vec::new(),
            dropped: 0,
        }
    }

    /// Checks one written path; records it if it is outside the write set (once).
    pub(crate) fn check(&mut self, raw: &str) {
        if raw.is_empty() {
            return;
        }
        let violation = match self.relative(raw) {
            Some(relative) if relative.is_empty() => return,
            Some(relative) => (!(self.in_write_set)(&relative)).then_some(relative),
            // Outside the worktree: never in a write set.
            None => Some(normalize(&self.worktree.join(raw)).display().to_string()),
        };
        let Some(violation) = violation else { return };
        if self.seen.contains(&violation) {
            return;
        }
        tracing::warn!(path = %violation, "agent wrote outside the task's write set");
        if self.violations.len() < MAX_VIOLATIONS {
            self.seen.insert(violation.clone());
            self.violations.push(violation);
        } else {
            self.dropped += 1;
        }
    }

    /// The worktree-relative form of `raw`, or `None` if it lies outside the worktree.
    fn relative(&self, raw: &str) -> Option<String> {
        let absolute = normalize(&self.worktree.join(raw));
        let roots = std::iter::once(&self.worktree).chain(self.worktree_canonical.as_ref());
        for root in roots {
            if let Ok(relative) = absolute.strip_prefix(root) {
                let parts: Vec<&str> = relative
                    .components()
                    .filter_map(|c| match c {
                        Component::Normal(part) => part.to_str(),
                        _ => None,
                    })
                    .collect();
                return Some(parts.join("/"));
            }
        }
        None
    }

    /// The violations in order of first appearance, and how many more were not kept.
    pub(crate) fn finish(self) -> (Vec<String>, u64) {
        (self.violations, self.dropped)
    }
}

/// Lexical normalization: `.` dropped, `..` pops (never above the root). Symlinks are not
/// resolved: the agent's own spelling is what it wrote through.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn check_in(worktree: &str) -> WriteCheck {
        WriteCheck::new(
            Path::new(worktree),
            Arc::new(|path: &str| path.starts_with("src/") || path == "README.md"),
        )
    }

    #[test]
    fn paths_are_made_relative_and_checked_once() {
        let mut check = check_in("/nonexistent/wt/task-1");
        check.check("/nonexistent/wt/task-1/src/lib.rs");
        check.check("src/main.rs");
        check.check("./README.md");
        check.check("/nonexistent/wt/task-1/docs/guide.md");
        check.check("docs/guide.md");
        check.check("/nonexistent/wt/task-1/src/../Cargo.toml");
        check.check("../task-2/src/lib.rs");
        check.check("/etc/passwd");
        check.check("/nonexistent/wt/task-1");
        check.check("");
        let (violations, dropped) = check.finish();
        assert_eq!(
            violations,
            ["docs/guide.md", "Cargo.toml", "/nonexistent/wt/task-2/src/lib.rs", "/etc/passwd"]
        );
        assert_eq!(dropped, 0);
    }

    #[test]
    fn a_worktree_reached_through_a_symlink_matches_both_spellings() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let mut check = check_in(link.to_str().unwrap());
        check.check(real.join("src/a.rs").to_str().unwrap());
        check.check(real.join("other.txt").to_str().unwrap());
        let (violations, _) = check.finish();
        assert_eq!(violations, ["other.txt"]);
    }

    #[test]
    fn violations_are_bounded() {
        let mut check = check_in("/nonexistent/wt");
        for i in 0..MAX_VIOLATIONS + 5 {
            check.check(&format!("out/{i}.txt"));
        }
        let (violations, dropped) = check.finish();
        assert_eq!(violations.len(), MAX_VIOLATIONS);
        assert_eq!(dropped, 5);
    }
}
