//! The scratch folders of role processes and project commands: short paths under the
//! system's temporary folder (CLIs put sockets there, whose paths are limited to 108
//! bytes), removed with everything in them when the process is done — and, when the
//! engine that made them was killed first, by the next engine: each is named after its
//! engine's pid (`breeze-<pid>-<random>`).

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// A new scratch folder of this engine's.
pub(crate) fn scratch_folder() -> io::Result<tempfile::TempDir> {
    tempfile::Builder::new().prefix(&format!("breeze-{}-", std::process::id())).tempdir()
}

/// Removes the scratch folders that engines no longer running left in the system's
/// temporary folder; how many.
pub(crate) fn remove_those_of_ended_engines() -> usize {
    remove_those_of_ended_engines_in(&std::env::temp_dir())
}

/// How long a folder must have been left as it is before it is taken for an ended engine's:
/// an engine in another PID namespace sharing this temporary folder (two containers) has
/// pids this one cannot see, and its running roles' folders must stay.
const UNTOUCHED_FOR: Duration = Duration::from_secs(60 * 60);

/// [`remove_those_of_ended_engines`] in `root`: folders named `breeze-<pid>-<random>` that
/// this user owns, whose pid no process has, untouched for [`UNTOUCHED_FOR`]. A pid taken
/// again by another process keeps its folders (until that process ends); folders of
/// breeze before this naming, without a pid, are left alone.
fn remove_those_of_ended_engines_in(root: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(root) else { return 0 };
    let me = nix::unistd::geteuid().as_raw();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(engine_of) else { continue };
        let Ok(meta) = entry.path().symlink_metadata() else { continue };
        let untouched =
            meta.modified().ok().and_then(|at| SystemTime::now().duration_since(at).ok());
        if !meta.is_dir()
            || meta.uid() != me
            || untouched.is_none_or(|age| age < UNTOUCHED_FOR)
            || !crate::lock::has_ended(pid)
        {
            continue;
        }
        match std::fs::remove_dir_all(entry.path()) {
            Ok(()) => removed += 1,
            Err(err) => {
                tracing::debug!(folder = %entry.path().display(), %err, "could not remove a scratch folder");
            }
        }
    }
    if removed > 0 {
        tracing::debug!(removed, "removed the scratch folders of engines that ended");
    }
    removed
}

/// The pid in a scratch folder's name `breeze-<pid>-<random>`.
fn engine_of(name: &str) -> Option<&str> {
    let (pid, random) = name.strip_prefix("breeze-")?.split_once('-')?;
    let valid = !random.is_empty() && pid.parse::<u32>().is_ok_and(|pid| pid > 0);
    valid.then_some(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_folders_of_engines_that_ended_are_removed() {
        let root = tempfile::tempdir().unwrap();
        let mut ended = std::process::Command::new("true").spawn().unwrap();
        let ended_pid = ended.id();
        ended.wait().unwrap();
        let two_hours_ago = SystemTime::now() - Duration::from_secs(2 * 60 * 60);
        let folder = |name: &str, left_at: SystemTime| {
            let path = root.path().join(name);
            std::fs::create_dir(&path).unwrap();
            std::fs::write(path.join("output.json"), "{}").unwrap();
            std::fs::File::open(&path).unwrap().set_modified(left_at).unwrap();
            path
        };
        let killed = folder(&format!("breeze-{ended_pid}-Ab3xYz"), two_hours_ago);
        let just_left = folder(&format!("breeze-{ended_pid}-Nm4bVc"), SystemTime::now());
        let running = folder(&format!("breeze-{}-Qw9rTy", std::process::id()), two_hours_ago);
        let older = folder("breeze-Zx81Kp", two_hours_ago);
        let demo = folder(&format!("breeze-demo-{ended_pid}"), two_hours_ago);
        let file = root.path().join(format!("breeze-{ended_pid}-file"));
        std::fs::write(&file, "not a folder").unwrap();

        assert_eq!(remove_those_of_ended_engines_in(root.path()), 1);
        assert!(!killed.exists(), "the folder of an engine that ended is gone");
        for kept in [&just_left, &running, &older, &demo, &file] {
            assert!(kept.exists(), "{} was kept", kept.display());
        }
        let made = scratch_folder().unwrap();
        let name = made.path().file_name().unwrap().to_str().unwrap().to_owned();
        assert_eq!(engine_of(&name), Some(std::process::id().to_string().as_str()), "{name}");
    }
}
