//! `breeze resume --at-reset`: when the reset a stopped run waits for comes — the latest
//! reset of a window that paused one of its backends (`run.json`'s windows, `[quota]
//! pause_at`), else the end of the last rate-limit wait its journal names.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use breeze_protocol::EventKind;

use crate::config::Config;
use crate::error::EngineError;
use crate::quota::{Pause, Quotas};
use crate::run_dir::{RunDir, latest_run};

/// The reset ahead that the latest run of the repository at `repo_dir` waits for, if one
/// is known.
pub fn reset_ahead(repo_dir: &Path) -> Result<Option<Pause>, EngineError> {
    let snapshot = super::load_run(repo_dir, None)?;
    let repo = breeze_git::Repo::open(repo_dir)?;
    let root = repo.workdir();
    // A configuration that does not read is refused by the resume itself, with why.
    let config = Config::load(root).unwrap_or_else(|_| Config::defaults());
    let now = SystemTime::now();
    let quotas = Quotas::new(config.pause_at, snapshot.windows.clone());
    let paused = snapshot
        .windows
        .iter()
        .filter_map(|window| quotas.pause(&window.backend, now))
        .max_by_key(|pause| pause.until);
    if paused.is_some() {
        return Ok(paused);
    }
    let Some(run_id) = latest_run(root) else { return Ok(None) };
    let journal = RunDir::new(root, &run_id).events();
    let events = crate::journal::read_events(&journal)
        .map_err(|err| EngineError::io(format!("cannot read {}", journal.display()), err))?;
    Ok(events.iter().rev().find_map(|event| {
        let EventKind::BackendTrouble { role, trouble, wait_ms, .. } = &event.event else {
            return None;
        };
        let at = humantime::parse_rfc3339_weak(&event.at).ok()?;
        let until = at + Duration::from_millis(*wait_ms);
        (trouble == "rate-limited" && until > now).then(|| Pause {
            backend: config.role(*role).backend.as_str().to_string(),
            window: crate::quota::STATED_RESET.to_string(),
            used: 1.0,
            until: until.duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs()),
        })
    }))
}
