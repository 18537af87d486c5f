//! `worktree.include`: copying ignored files such as `.env` from the primary checkout into a
//! task worktree, never overwriting anything.

use std::path::{Component, Path};

use git2::{Status, StatusOptions};
use globset::{Glob, GlobBuilder, GlobMatcher};

use crate::error::{Context as _, GitError};
use crate::names::{STATE_DIR, WORKTREES_NOTE_DIR};
use crate::paths::path_string;
use crate::repo::Repo;
use crate::worktree::Worktree;

/// What [`Repo::provision`] did, path by path (repository-relative).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProvisionReport {
    /// Files and symlinks copied into the worktree.
    pub copied: Vec<String>,
    /// Matched, but the worktree already has something at that path: left as it is.
    pub kept_existing: Vec<String>,
    /// Matched, but not ignored by git: skipped, because the engine commits every
    /// non-ignored file a worker leaves, so copying it would put it into the task's commit.
    pub not_ignored: Vec<String>,
    /// Patterns that matched nothing in the primary checkout (worth a warning: a missing
    /// `.env` is the first thing users of worktree tools complain about).
    pub unmatched: Vec<String>,
}

/// One `worktree.include` pattern, with gitignore-like anchoring.
struct Pattern {
    text: String,
    matcher: GlobMatcher,
    /// Literal text before the first glob character, for anchored patterns: decides
    /// whether an ignored directory must be searched.
    anchored_prefix: Option<String>,
}

impl Pattern {
    fn parse(text: &str) -> Result<Pattern, GitError> {
        let bad = |problem: &str| GitError::BadPath {
            path: text.to_string(),
            problem: format!("invalid `worktree.include` pattern: {problem}"),
        };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(bad("it is empty"));
        }
        if trimmed.starts_with('!') {
            return Err(bad("negated patterns are not supported; list only what to copy"));
        }
        let body = trimmed.trim_end_matches('/');
        let (anchored, body) = match body.strip_prefix('/') {
            Some(rest) => (true, rest),
            None => (body.contains('/'), body),
        };
        if body.is_empty() || body.split('/').any(|part| part == ".." || part == ".") {
            return Err(bad("it must name paths inside the repository (no `.` or `..` parts)"));
        }
        let glob_text = if anchored { body.to_string() } else { format!("**/{body}") };
        let glob: Glob = GlobBuilder::new(&glob_text)
            .literal_separator(true)
            .build()
            .map_err(|e| bad(&e.to_string()))?;
        let anchored_prefix = anchored.then(|| {
            let end = body.find(['*', '?', '[', '{', '\\']).unwrap_or(body.len());
            body[..end].to_string()
        });
        Ok(Pattern { text: text.to_string(), matcher: glob.compile_matcher(), anchored_prefix })
    }

    /// Matches the path itself or one of its ancestor directories (like .gitignore).
    fn matches(&self, path: &str) -> bool {
        let mut candidate = path;
        loop {
            if self.matcher.is_match(candidate) {
                return true;
            }
            match candidate.rfind('/') {
                Some(i) => candidate = &candidate[..i],
                None => return false,
            }
        }
    }

    /// Whether a match may lie inside ignored directory `dir` (given without slash).
    fn may_enter(&self, dir: &str) -> bool {
        match &self.anchored_prefix {
            None => false,
            Some(prefix) => {
                let dir_slash = format!("{dir}/");
                prefix.starts_with(&dir_slash) || dir_slash.starts_with(prefix.as_str())
            }
        }
    }
}

fn is_breeze_path(path: &str) -> bool {
    [WORKTREES_NOTE_DIR, STATE_DIR]
        .iter()
        .any(|dir| path == *dir || path.strip_prefix(dir).is_some_and(|rest| rest.starts_with('/')))
}

fn is_plain_relative(path: &str) -> bool {
    Path::new(path).components().all(|c| matches!(c, Component::Normal(_)))
}

impl Repo {
    /// Copies the ignored files of the primary checkout that match `include` into `wt`,
    /// never overwriting and never following symlinks (a symlink is copied as a symlink).
    ///
    /// Patterns work like .gitignore lines: `.env` matches at any depth, `/config/dev.json`
    /// and `config/*.local` are anchored at the root, `secrets/` takes the whole ignored
    /// directory. Unanchored patterns do not search inside ignored directories (so `.env`
    /// does not crawl `node_modules/`); name such a file with an anchored pattern.
    /// Nothing under `.harness-worktrees/` or `.breeze/` is ever copied.
    pub fn provision(
        &self,
        wt: &Worktree,
        include: &[String],
    ) -> Result<ProvisionReport, GitError> {
        let mut report = ProvisionReport::default();
        if include.is_empty() {
            return Ok(report);
        }
        let patterns = include.iter().map(|p| Pattern::parse(p)).collect::<Result<Vec<_>, _>>()?;
        if !wt.path.is_dir() {
            return Err(GitError::io(
                "provision worktree",
                &wt.path,
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "the worktree directory is missing",
                ),
            ));
        }
        let mut used = vec![false; patterns.len()];
        let files = self.ignored_matches(&patterns, &mut used, &mut report.not_ignored)?;
        for file in files {
            if copy_new(&self.workdir.join(&file), &wt.path.join(&file))? {
                report.copied.push(file);
            } else {
                report.kept_existing.push(file);
            }
        }
        report.unmatched = patterns
            .iter()
            .zip(&used)
            .filter(|(_, used)| !**used)
            .map(|(p, _)| p.text.clone())
            .collect();
        report.copied.sort();
        report.kept_existing.sort();
        report.not_ignored.sort();
        tracing::info!(
            worktree = %wt.name,
            copied = report.copied.len(),
            kept = report.kept_existing.len(),
            "provisioned worktree"
        );
        Ok(report)
    }

    /// The ignored files and symlinks of the primary checkout that match `patterns`,
    /// marking in `used` the patterns that matched something. Matching files that are
    /// untracked but not ignored go to `not_ignored` instead.
    fn ignored_matches(
        &self,
        patterns: &[Pattern],
        used: &mut [bool],
        not_ignored: &mut Vec<String>,
    ) -> Result<Vec<String>, GitError> {
        let mut mark = |path: &str| -> bool {
            let mut any = false;
            for (i, pattern) in patterns.iter().enumerate() {
                if pattern.matches(path) {
                    used[i] = true;
                    any = true;
                }
            }
            any
        };
        let repo = self.git()?;
        let mut options = StatusOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(true)
            .recurse_ignored_dirs(false)
            .exclude_submodules(true);
        let statuses = repo
            .statuses(Some(&mut options))
            .ctx(|| format!("could not read the status of {}", self.workdir.display()))?;
        let mut files: Vec<String> = Vec::new();
        for entry in statuses.iter() {
            let path = path_string(entry.path_bytes());
            if is_breeze_path(path.trim_end_matches('/')) || !is_plain_relative(&path) {
                continue;
            }
            let status = entry.status();
            if status.contains(Status::IGNORED) {
                if let Some(dir) = path.strip_suffix('/') {
                    if mark(dir) {
                        self.walk_ignored_dir(dir, &mut |file| files.push(file))?;
                    } else if patterns.iter().any(|p| p.may_enter(dir)) {
                        self.walk_ignored_dir(dir, &mut |file| {
                            if mark(&file) {
                                files.push(file);
                            }
                        })?;
                    }
                } else if mark(&path) {
                    files.push(path);
                }
            } else if status.contains(Status::WT_NEW) && mark(path.trim_end_matches('/')) {
                not_ignored.push(path);
            }
        }
        Ok(files)
    }

    /// Calls `found` with every file and symlink under ignored directory `dir` (relative),
    /// without following symlinks.
    fn walk_ignored_dir(&self, dir: &str, found: &mut dyn FnMut(String)) -> Result<(), GitError> {
        let mut stack = vec![dir.to_string()];
        while let Some(rel) = stack.pop() {
            let absolute = self.workdir.join(&rel);
            let entries = std::fs::read_dir(&absolute)
                .map_err(|e| GitError::io("read directory", &absolute, e))?;
            for entry in entries {
                let entry = entry.map_err(|e| GitError::io("read directory", &absolute, e))?;
                let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                    tracing::warn!(dir = %absolute.display(), "skipping a non-UTF-8 file name");
                    continue;
                };
                let child = format!("{rel}/{name}");
                let kind = entry.file_type().map_err(|e| GitError::io("read", &entry.path(), e))?;
                if kind.is_dir() {
                    if name != ".git" {
                        stack.push(child);
                    }
                } else if kind.is_file() || kind.is_symlink() {
                    found(child);
                }
            }
        }
        Ok(())
    }
}

/// Copies `source` to `dest`, a symlink as a symlink, creating missing parent directories.
/// `Ok(false)` when something is at `dest` already: it is left as it is.
fn copy_new(source: &Path, dest: &Path) -> Result<bool, GitError> {
    if dest.symlink_metadata().is_ok() {
        return Ok(false);
    }
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(|e| GitError::io("create directory", parent, e))?;
    }
    let meta = source.symlink_metadata().map_err(|e| GitError::io("read", source, e))?;
    if meta.file_type().is_symlink() {
        let target =
            std::fs::read_link(source).map_err(|e| GitError::io("read link", source, e))?;
        std::os::unix::fs::symlink(&target, dest)
            .map_err(|e| GitError::io("create symlink", dest, e))?;
    } else {
        std::fs::copy(source, dest).map_err(|e| GitError::io("copy to", dest, e))?;
    }
    Ok(true)
}
