//! The tools' caches and build folders the environment names: what confined commands
//! could not write, and what each checkout builds in its own folder instead.

use std::path::Path;

use breeze_protocol::CheckOutcome;

use super::found::Preflight;
use crate::config::Config;

/// The tools' caches and build folders the environment names: a cache confined commands
/// could not write is a warning (with the `sandbox.writable` line that fixes it); a build
/// folder outside the checkouts is said to be left for each checkout's own
/// ([`crate::tool_caches`]).
pub(super) fn cache_checks(
    found: &mut Preflight,
    root: &Path,
    config: &Config,
    env: &[(String, String)],
) {
    let mut dropped = env.to_vec();
    for var in crate::tool_caches::without_output_dirs(&mut dropped) {
        found.push(
            "caches",
            &var,
            CheckOutcome::Ok,
            format!("{var} is not passed on: each lane and checkout builds in its own folder, which lanes never share"),
            None,
        );
    }
    let confined = config.sandbox_mode != crate::config::SandboxMode::Detect
        && breeze_supervise::kernel_support().is_available();
    let home = env.iter().find(|(name, _)| name == "HOME").map(|(_, home)| Path::new(home));
    let Ok(writable) = crate::containment::writable_paths(config, home) else { return };
    if !confined {
        return;
    }
    for cache in crate::tool_caches::unwritable_caches(env, root, &writable) {
        let folder = cache.folder.display().to_string();
        found.push(
            "caches",
            cache.name,
            CheckOutcome::Warning,
            format!(
                "{} names {folder}, which confined workers and project commands may not write: a download into that cache fails there",
                cache.name
            ),
            Some(format!(
                "add \"{folder}\" to writable under [sandbox] in breeze.toml, or unset {}",
                cache.name
            )),
        );
    }
}
