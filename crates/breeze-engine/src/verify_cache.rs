//! What `land.verify` said before, by tree: a tree that passed once passes (kept across
//! runs in `.breeze/verify-passed.jsonl`, one line per tree and verify command), and a tree
//! that failed fails for the rest of this engine session (kept in memory only: a resume
//! usually follows a fix, perhaps outside the tree, so it checks again).
//!
//! The key is the tree, not the commit: main's tip after a landing has the tree the
//! landing's verify passed, so main's own verdict is known without running anything.

use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use breeze_git::Oid;
use serde::{Deserialize, Serialize};

/// The file of passed trees, under `.breeze/`.
pub const PASSED_FILE: &str = "verify-passed.jsonl";

/// A failed verify run (or check): what the worker is told, and what it is compared by.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifyFailed {
    /// The command, its exit code and the end of its output.
    pub failure: breeze_protocol::VerifyFailure,
    /// How it ended, as compared: a run that timed out does not fail "the same way" as one
    /// that exited.
    pub ending: EndingKind,
    /// What failed, read from its output ([`breeze_failures::identify`]): the failing tests
    /// by name, or the failure lines without what changes from run to run.
    pub what: breeze_failures::Failure,
    /// The cause a task sent back for it is given.
    pub cause: breeze_protocol::Cause,
}

/// How a failed command ended, as two failures are compared by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndingKind {
    /// It exited (with any code: a cold build and a warm one exit alike).
    Exited,
    /// It timed out, stalled or was killed by a signal.
    Otherwise,
}

impl VerifyFailed {
    /// What of this failure is main's: `Same` when it fails nothing main's `main` does not
    /// (never charged), else what it fails beyond main.
    pub fn against_main(&self, main: &VerifyFailed) -> breeze_failures::Judgement {
        if self.ending != main.ending {
            return breeze_failures::Judgement::Different { task_only: self.what.keys() };
        }
        breeze_failures::judge(&self.what, &main.what)
    }
}

/// What verify said about a tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// It passed.
    Passed,
    /// It failed.
    Failed(Box<VerifyFailed>),
}

/// One line of [`PASSED_FILE`].
#[derive(Debug, Serialize, Deserialize)]
struct PassedLine {
    verify: Vec<String>,
    tree: String,
}

/// The verdicts known for one verify command.
#[derive(Debug)]
pub struct VerifyCache {
    /// `.breeze/verify-passed.jsonl`.
    file: PathBuf,
    verify: Vec<String>,
    passed: Mutex<HashSet<Oid>>,
    failed: Mutex<HashMap<Oid, VerifyFailed>>,
}

impl VerifyCache {
    /// The verdicts on `verify` (the argv) kept in the repository at `repo_root`. An
    /// unreadable file or line is skipped: it only costs verify runs.
    pub fn open(repo_root: &Path, verify: &[String]) -> VerifyCache {
        let file = repo_root.join(crate::run_dir::STATE_DIR).join(PASSED_FILE);
        let passed = std::fs::read_to_string(&file)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str::<PassedLine>(line).ok())
            .filter(|line| line.verify == verify)
            .filter_map(|line| Oid::from_str(&line.tree).ok())
            .collect();
        VerifyCache {
            file,
            verify: verify.to_vec(),
            passed: Mutex::new(passed),
            failed: Mutex::default(),
        }
    }

    /// What verify said about `tree` before (a failure: in this session), if anything.
    pub fn known(&self, tree: Oid) -> Option<Verdict> {
        if self.passed.lock().unwrap_or_else(|p| p.into_inner()).contains(&tree) {
            return Some(Verdict::Passed);
        }
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&tree)
            .cloned()
            .map(|failed| Verdict::Failed(Box::new(failed)))
    }

    /// Remembers a verdict: a pass for good (appended to the file; a write that fails is
    /// logged and costs a verify run later), a failure for this session.
    pub fn record(&self, tree: Oid, verdict: &Verdict) {
        match verdict {
            Verdict::Failed(failed) => {
                self.failed
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(tree, (**failed).clone());
            }
            Verdict::Passed => {
                let new = self.passed.lock().unwrap_or_else(|p| p.into_inner()).insert(tree);
                if new && let Err(err) = self.append(tree) {
                    tracing::warn!(
                        "cannot remember a passing tree in {}: {err}",
                        self.file.display()
                    );
                }
            }
        }
    }

    fn append(&self, tree: Oid) -> std::io::Result<()> {
        let line = PassedLine { verify: self.verify.clone(), tree: tree.to_string() };
        let mut text = serde_json::to_string(&line).map_err(std::io::Error::other)?;
        text.push('\n');
        if let Some(parent) = self.file.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&self.file)?;
        file.write_all(text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(byte: u8) -> Oid {
        Oid::from_bytes(&[byte; 20]).unwrap()
    }

    fn failed(text: &str) -> VerifyFailed {
        VerifyFailed {
            failure: breeze_protocol::VerifyFailure {
                command: vec!["make".into(), "test".into()],
                exit_code: Some(1),
                log_tail: text.into(),
            },
            ending: EndingKind::Exited,
            what: breeze_failures::identify(&["make".into(), "test".into()], text),
            cause: breeze_protocol::Cause::new(breeze_protocol::CauseKind::Verify, "exited 1"),
        }
    }

    #[test]
    fn passes_outlive_the_session_and_failures_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let verify = vec!["make".to_string(), "test".to_string()];
        let cache = VerifyCache::open(dir.path(), &verify);
        assert_eq!(cache.known(tree(1)), None);
        cache.record(tree(1), &Verdict::Passed);
        cache.record(tree(1), &Verdict::Passed);
        cache.record(tree(2), &Verdict::Failed(Box::new(failed("boom"))));
        assert_eq!(cache.known(tree(1)), Some(Verdict::Passed));
        assert_eq!(cache.known(tree(2)), Some(Verdict::Failed(Box::new(failed("boom")))));

        let file = dir.path().join(".breeze").join(PASSED_FILE);
        assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 1, "one line a tree");
        let next_session = VerifyCache::open(dir.path(), &verify);
        assert_eq!(
            next_session.known(tree(1)),
            Some(Verdict::Passed),
            "a tree that passed once passes"
        );
        assert_eq!(next_session.known(tree(2)), None, "a failure is checked again");
        let other_command = VerifyCache::open(dir.path(), &["make".to_string()]);
        assert_eq!(other_command.known(tree(1)), None, "verdicts belong to their command");
    }
}
