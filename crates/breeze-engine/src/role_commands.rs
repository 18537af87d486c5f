//! Role commands come from the person's checkout, fixed for the run.
//!
//! Roles start in their lane (or the review checkout), so a relative script in a role's
//! `command` (`["bash", "tools/review.sh"]`, the pattern docs/BACKENDS.md shows) would be
//! the lane's copy — and a task that may write `tools/` would replace its own reviewer. So
//! when a run starts, every word of a role's command that names a file of the repository
//! root the run started in (a relative path, not an option) is copied into the run's
//! folder (`.breeze/runs/<id>/commands/<path>`) and the command names that copy by its
//! absolute path: what the person's checkout held at the start is what every call of the
//! run executes, whatever a landing or a lane does to the file later. A resumed run keeps
//! the copies its start made. A program looked up on `PATH` (`claude`, `bash`) is left as
//! it is.

use std::path::{Component, Path, PathBuf};

use crate::config::{Config, RoleConfig};
use crate::error::EngineError;

/// Where a run keeps the role commands it fixed, under its folder.
pub const COMMANDS_DIR: &str = "commands";

/// The largest file taken as a role's script (a role command is a script, not data).
const MAX_SCRIPT_BYTES: u64 = 8 * 1024 * 1024;

/// Makes every role command of `config` name the run's copies (under `run_root`) of the
/// files of `repo_root` it names (see the module docs). Copies already there (a resumed
/// run) are kept as they are.
pub(crate) fn fix_for_run(
    config: &mut Config,
    repo_root: &Path,
    run_root: &Path,
) -> Result<(), EngineError> {
    let keep = run_root.join(COMMANDS_DIR);
    for role in roles_mut(config) {
        for word in role.command.iter_mut() {
            let Some(rel) = repo_file(repo_root, word) else { continue };
            let copy = keep.join(&rel);
            if std::fs::symlink_metadata(&copy).is_err() {
                copy_script(&repo_root.join(&rel), &copy)?;
            }
            *word = copy.display().to_string();
        }
    }
    Ok(())
}

/// `argv` as a run started now would run it: each word naming a file of `repo_root`
/// (see the module docs) as that file's absolute path — what `breeze doctor` shows.
pub fn resolved(argv: &[String], repo_root: &Path) -> Vec<String> {
    argv.iter()
        .map(|word| match repo_file(repo_root, word) {
            Some(rel) => repo_root.join(rel).display().to_string(),
            None => word.clone(),
        })
        .collect()
}

fn roles_mut(config: &mut Config) -> [&mut RoleConfig; 4] {
    [&mut config.worker, &mut config.advisor, &mut config.reviewer, &mut config.scaffolder]
}

/// The repository-relative path `word` names, when it is a relative path (not an option,
/// not leaving the root) to a regular file of the checkout at `repo_root`.
fn repo_file(repo_root: &Path, word: &str) -> Option<PathBuf> {
    if word.is_empty() || word.starts_with('-') || word.contains('\0') {
        return None;
    }
    let path = Path::new(word);
    if !path.components().all(|part| matches!(part, Component::Normal(_) | Component::CurDir)) {
        return None;
    }
    let rel: PathBuf = path.components().filter(|part| *part != Component::CurDir).collect();
    let meta = std::fs::metadata(repo_root.join(&rel)).ok()?;
    let inside = std::fs::canonicalize(repo_root.join(&rel))
        .ok()
        .zip(std::fs::canonicalize(repo_root).ok())
        .is_some_and(|(file, root)| file.starts_with(root));
    (meta.is_file() && inside).then_some(rel)
}

/// Copies the script `from` to `to`, its mode with it.
fn copy_script(from: &Path, to: &Path) -> Result<(), EngineError> {
    let failed = |err: std::io::Error| {
        EngineError::io(format!("cannot keep a copy of the role command {}", from.display()), err)
    };
    let size = std::fs::metadata(from).map_err(failed)?.len();
    if size > MAX_SCRIPT_BYTES {
        return Err(EngineError::usage(
            format!(
                "the role command names {} ({size} bytes), which is too big to be a script",
                from.display()
            ),
            "name a script (or a program on PATH) as the role's command in breeze.toml",
        ));
    }
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(failed)?;
    }
    std::fs::copy(from, to).map_err(failed)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_relative_script_is_the_run_copy_of_the_persons_file_and_a_program_on_path_stays() {
        let root = tempfile::tempdir().unwrap();
        let run = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("tools")).unwrap();
        let script = root.path().join("tools/review.sh");
        std::fs::write(&script, "echo reviewed\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut config = Config::defaults();
        config.reviewer.command = vec!["bash".into(), "./tools/review.sh".into(), "-x".into()];
        config.worker.command =
            vec!["tools/review.sh".into(), "--flag".into(), "missing.sh".into()];
        fix_for_run(&mut config, root.path(), run.path()).unwrap();
        let copy = run.path().join("commands/tools/review.sh");
        assert_eq!(
            config.reviewer.command,
            ["bash".to_string(), copy.display().to_string(), "-x".to_string()]
        );
        assert_eq!(config.worker.command[0], copy.display().to_string());
        assert_eq!(&config.worker.command[1..], ["--flag", "missing.sh"]);
        assert_eq!(std::fs::read_to_string(&copy).unwrap(), "echo reviewed\n");
        assert_eq!(std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777, 0o755);
        // The person's file changing later changes nothing for the run: a resumed run keeps
        // the copy its start made.
        std::fs::write(&script, "echo replaced\n").unwrap();
        let mut again = Config::defaults();
        again.reviewer.command = vec!["bash".into(), "tools/review.sh".into()];
        fix_for_run(&mut again, root.path(), run.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&again.reviewer.command[1]).unwrap(), "echo reviewed\n");
    }

    #[test]
    fn a_path_leaving_the_root_or_an_absolute_one_is_not_taken() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.sh"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("x.sh"), root.path().join("link.sh"))
            .unwrap();
        assert_eq!(repo_file(root.path(), "../x.sh"), None);
        assert_eq!(
            repo_file(root.path(), &outside.path().join("x.sh").display().to_string()),
            None
        );
        assert_eq!(repo_file(root.path(), "link.sh"), None, "a link out of the checkout");
        assert_eq!(
            resolved(&["sh".into(), "link.sh".into()], root.path()),
            ["sh".to_string(), "link.sh".to_string()]
        );
    }
}
