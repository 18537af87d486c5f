//! What `[review] checks` said about main's trees in this run, by tree and command: main's
//! tip is judged once, not once per task (`task/checks.rs` asks it). It lives beside the
//! run's context because every lane shares it.

use std::collections::HashMap;
use std::sync::Mutex;

use breeze_git::Oid;

use crate::verify_cache::Verdict;

/// The checks' verdicts on main's trees in this run, by tree and command.
#[derive(Debug, Default)]
pub(crate) struct MainChecks {
    known: Mutex<HashMap<(Oid, Vec<String>), Verdict>>,
    /// Held while a lane judges main: lanes that failed a check on the same base wait for
    /// its verdict rather than run it again.
    pub(crate) judging: tokio::sync::Mutex<()>,
}

impl MainChecks {
    pub(crate) fn known(&self, tree: Oid, argv: &[String]) -> Option<Verdict> {
        self.known.lock().unwrap_or_else(|p| p.into_inner()).get(&(tree, argv.to_vec())).cloned()
    }

    /// Remembers a verdict; `true` when it is new.
    pub(crate) fn record(&self, tree: Oid, argv: &[String], verdict: &Verdict) -> bool {
        self.known
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((tree, argv.to_vec()), verdict.clone())
            .is_none()
    }
}
