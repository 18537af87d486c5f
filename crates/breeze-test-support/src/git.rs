//! The `git` CLI, hermetic: no user or system configuration reaches it — the global
//! configuration is the tests' own (an identity, nothing else), dates are fixed, and git
//! variables of the calling environment are removed. A repository's own configuration still
//! wins, as it would on a user's machine.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The author and committer of every commit a test makes with [`git`].
pub const IDENTITY: (&str, &str) = ("Test Author", "author@example.com");

/// The date of every commit a test makes with [`git`] (reproducible commit ids).
pub const DATE: &str = "1700000000 +0000";

/// Variables of the calling environment that would point git elsewhere.
const INHERITED: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "XDG_CONFIG_HOME",
    // breeze's worktrees go under the tests' HOME (`.local/share/breeze/worktrees`), not
    // the machine's data folder.
    "XDG_DATA_HOME",
];

/// What the name of a test process's `HOME` starts with, before its pid.
const HOME_PREFIX: &str = "breeze-test-home-";

/// The folder used as `HOME` by every hermetic command of this test process: empty but for
/// `.gitconfig`, the global configuration (the test identity) — and what breeze keeps in a
/// person's data folder: the worktrees of the runs the tests start
/// (`.local/share/breeze/worktrees`). A static is never dropped, so the folder outlives the
/// process: the next test process removes those of processes that are gone.
pub fn empty_home() -> &'static Path {
    static HOME: OnceLock<tempfile::TempDir> = OnceLock::new();
    HOME.get_or_init(|| {
        remove_homes_of_ended_processes();
        let home = tempfile::Builder::new()
            .prefix(&format!("{HOME_PREFIX}{}-", std::process::id()))
            .tempdir()
            .expect("a temporary HOME");
        let config = format!("[user]\n\tname = {}\n\temail = {}\n", IDENTITY.0, IDENTITY.1);
        std::fs::write(home.path().join(".gitconfig"), config).expect("the tests' .gitconfig");
        home
    })
    .path()
}

/// Removes the `HOME` folders ([`empty_home`]) of test processes that have ended (their pid
/// is in the name; a pid that is alive again keeps its folder).
fn remove_homes_of_ended_processes() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(HOME_PREFIX).and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        let ended =
            pid.parse::<u32>().is_ok_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
        if ended {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Makes `command` hermetic: the tests' `HOME` and global configuration (the test
/// identity), no system configuration, fixed dates, and none of the caller's git variables.
/// Works for `git` and for anything that runs git (the `breeze` binary).
pub fn hermetic(command: &mut Command) -> &mut Command {
    for name in INHERITED {
        command.env_remove(name);
    }
    let home = empty_home();
    command
        .env("HOME", home)
        .env("GIT_CONFIG_GLOBAL", home.join(".gitconfig"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_DATE", DATE)
        .env("GIT_COMMITTER_DATE", DATE)
}

/// Runs `git args…` in `dir` and returns its output, successful or not.
pub fn git_output(dir: &Path, args: &[&str]) -> Output {
    let mut command = Command::new("git");
    hermetic(&mut command).arg("-C").arg(dir).args(args);
    command.output().expect("the git CLI runs")
}

/// Runs `git args…` in `dir`; panics with git's stderr if it fails. Returns stdout as git
/// printed it (file contents keep their last newline).
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = git_output(dir, args);
    assert!(
        output.status.success(),
        "git {args:?} in {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// [`git`], with the trailing newline removed: for one-line answers (`rev-parse`).
pub fn git_line(dir: &Path, args: &[&str]) -> String {
    git(dir, args).trim_end().to_string()
}

/// What landed on `main` since `start`, oldest first: each commit's `Breeze-Task` trailer
/// and the files it changed, read with the `git` CLI.
pub fn landings_since(dir: &Path, start: &str) -> Vec<(String, Vec<String>)> {
    let format = "--format=%H %(trailers:key=Breeze-Task,valueonly,separator=)";
    let log = git(dir, &["log", "--reverse", format, &format!("{start}..main")]);
    log.lines()
        .filter(|line| !line.is_empty())
        .map(|line| {
            let (commit, id) = line.split_once(' ').unwrap_or((line, ""));
            let files = git(dir, &["show", "--format=", "--name-only", commit]);
            (id.to_string(), files.lines().map(str::to_string).collect())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_do_not_depend_on_the_machine() {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q", "-b", "main"]);
        std::fs::write(dir.path().join("a"), "a\n").unwrap();
        git(dir.path(), &["add", "a"]);
        git(dir.path(), &["commit", "-q", "-m", "one"]);
        let author = git_line(dir.path(), &["log", "-1", "--format=%an <%ae> %at"]);
        assert_eq!(author, "Test Author <author@example.com> 1700000000");
        // The global configuration is the tests' own: the identity, nothing of the machine's.
        let global = git_line(dir.path(), &["config", "--global", "--list"]);
        assert_eq!(global, "user.name=Test Author\nuser.email=author@example.com");
        // A repository's own identity wins over it.
        git(dir.path(), &["config", "user.name", "Repo Owner"]);
        git(dir.path(), &["commit", "-q", "--allow-empty", "-m", "two"]);
        assert_eq!(git_line(dir.path(), &["log", "-1", "--format=%an"]), "Repo Owner");
    }
}
