//! The plan's own history: the archive files a Plans.md points to.
//!
//! Long-lived plans move finished work out of the file — the harness into
//! `.claude/memory/archive/Plans-<date>.md`, others into `docs/archive/` — and say where:
//! `` 最終アーカイブ: … → `.claude/memory/archive/Plans-2026-05-29-phase80-84.md` ``,
//! `[§51〜§76](docs/archive/Plans-s51-s76.md)`, `[older](docs/archive/)`. A dependency on
//! an id the plan no longer has is archived work exactly when one of those files shows it
//! done; otherwise its dependent is blocked.

use std::path::{Path, PathBuf};

use super::deps::{Index, Target};
use super::marker::MarkerState;
use super::scan::{Scan, scan};

/// Archive files read at most.
const MAX_FILES: usize = 64;
/// Archive files larger than this are not read.
const MAX_BYTES: u64 = 4 << 20;

/// The archives of a plan, scanned.
#[derive(Default)]
pub(crate) struct History {
    archives: Vec<(String, Scan)>,
}

impl History {
    /// The archives `text` (the plan at `path`) points to: relative links and backticked
    /// paths to Markdown files or folders whose path says `archive` or `plans`, read
    /// relative to the plan's folder. Missing or unreadable ones are skipped.
    pub fn read(path: &Path, text: &str) -> History {
        let base = path.parent().unwrap_or(Path::new(""));
        let mut files: Vec<(String, PathBuf)> = Vec::new();
        for reference in references(text) {
            let full = base.join(&reference);
            if reference.ends_with('/') {
                let Ok(entries) = std::fs::read_dir(&full) else { continue };
                let mut names: Vec<String> = entries
                    .filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .filter(|name| name.ends_with(".md"))
                    .collect();
                names.sort();
                files.extend(names.into_iter().map(|n| (format!("{reference}{n}"), full.join(n))));
            } else {
                files.push((reference, full));
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        let archives = files
            .into_iter()
            .filter(|(name, _)| seen.insert(name.clone()))
            .take(MAX_FILES)
            .filter_map(|(name, file)| {
                let size = std::fs::metadata(&file).ok()?.len();
                if size > MAX_BYTES {
                    return None;
                }
                let text = std::fs::read_to_string(&file).ok()?;
                Some((name, scan(&text)))
            })
            .collect();
        History { archives }
    }

    /// The archives, indexed for resolving dependency tokens.
    pub fn index(&self) -> Archives<'_> {
        Archives {
            indexed: self
                .archives
                .iter()
                .map(|(name, scanned)| {
                    (name.as_str(), scanned, Index::new(&scanned.tasks, &scanned.checklist))
                })
                .collect(),
        }
    }
}

/// The archives of a plan, indexed once.
pub(crate) struct Archives<'a> {
    indexed: Vec<(&'a str, &'a Scan, Index<'a>)>,
}

impl Archives<'_> {
    /// The archive that shows `token` done: an id (or a phase, range or prefix all of whose
    /// tasks are) marked done there, or a checked checklist item.
    pub fn shows_done(&self, token: &str) -> Option<&str> {
        self.indexed.iter().find_map(|(name, scanned, index)| {
            let done = match index.resolve(token, usize::MAX) {
                Target::Tasks(found) => {
                    !found.is_empty()
                        && found.iter().all(|&i| scanned.tasks[i].state == MarkerState::Done)
                }
                Target::Checklist { done } => done,
                Target::Satisfied => true,
                Target::Unknown => false,
            };
            done.then_some(*name)
        })
    }
}

/// Relative paths of archives named in `text`: link targets and backticked spans that end
/// in `.md` (a file) or `/` (a folder) and say `archive` or `plans`.
fn references(text: &str) -> Vec<String> {
    let links = text.split("](").skip(1).filter_map(|rest| rest.split(')').next());
    let ticked = text.split('`').skip(1).step_by(2);
    links
        .chain(ticked)
        .map(|r| r.trim().split('#').next().unwrap_or_default().trim_start_matches("./"))
        .filter(|r| {
            let lower = r.to_lowercase();
            (lower.ends_with(".md") || lower.ends_with('/'))
                && (lower.contains("archive") || lower.contains("plans"))
                && !lower.contains("://")
                && !r.starts_with('/')
                && !r.split('/').any(|part| part == "..")
                && !r.contains(char::is_whitespace)
        })
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_references() {
        let text = "最終アーカイブ: 2026-05-29（→ `.claude/memory/archive/Plans-2026-05-29.md`）\n\
                    - [§51〜§76](docs/archive/Plans-s51-s76.md) | [older](docs/archive/)\n\
                    See [the spec](spec.md), `src/plans.rs`, [web](https://x.io/archive.md), `../archive/x.md`\n";
        assert_eq!(
            references(text),
            [
                "docs/archive/Plans-s51-s76.md",
                "docs/archive/",
                ".claude/memory/archive/Plans-2026-05-29.md"
            ]
        );
    }
}
