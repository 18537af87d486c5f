//! A test hook: named points where the engine kills itself with SIGKILL, so that tests can
//! stop a landing at each of its steps and check what `breeze resume` makes of it.
//!
//! `BREEZE_TEST_KILL_AT=landing:<step>` names the point (the steps are listed in the
//! engine's README, "Kill points"). The variable is read once; unset, a point costs one
//! comparison with nothing.

use std::sync::OnceLock;

/// The variable that names the point.
pub(crate) const KILL_AT_VAR: &str = "BREEZE_TEST_KILL_AT";

/// The point named by [`KILL_AT_VAR`], read once.
static KILL_AT: OnceLock<Option<String>> = OnceLock::new();

/// Kills this process with SIGKILL if `point` is the one [`KILL_AT_VAR`] names.
pub(crate) fn reached(point: &str) {
    let wanted = KILL_AT.get_or_init(|| std::env::var(KILL_AT_VAR).ok().filter(|v| !v.is_empty()));
    if wanted.as_deref() == Some(point) {
        tracing::warn!(point, "{KILL_AT_VAR}: killing the engine");
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
}
