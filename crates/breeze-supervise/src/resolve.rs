//! Finding the program to run: `argv[0]` is looked up in the *role's* PATH (not the engine's),
//! so that a spawn failure can say precisely what was searched.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::SpawnError;

/// Resolves `program` the way a shell would for the role: a name containing `/` is a path
/// (relative paths are taken from `cwd`, where the role runs); a bare name is searched in the
/// `PATH` of `env`.
pub fn resolve_program(
    program: &str,
    cwd: &Path,
    env: &[(String, String)],
) -> Result<PathBuf, SpawnError> {
    if program.is_empty() {
        return Err(SpawnError::EmptyCommand);
    }
    if !cwd.is_dir() {
        return Err(SpawnError::CwdMissing { program: program.to_owned(), cwd: cwd.to_owned() });
    }
    if program.contains('/') {
        let path = cwd.join(program);
        return match classify(&path) {
            Candidate::Executable => Ok(path),
            Candidate::NotExecutable => {
                Err(SpawnError::NotExecutable { program: program.to_owned(), path })
            }
            Candidate::Missing => Err(SpawnError::ProgramNotFound {
                program: program.to_owned(),
                searched: format!("at {}", path.display()),
            }),
        };
    }

    // The last definition wins, as it would in a real environment block built by appending.
    let Some(path_var) = env.iter().rev().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_str())
    else {
        return Err(SpawnError::ProgramNotFound {
            program: program.to_owned(),
            searched: "because the role's environment has no PATH".to_owned(),
        });
    };
    let mut not_executable = None;
    for dir in path_var.split(':') {
        // POSIX: an empty PATH entry means the current directory.
        let dir = if dir.is_empty() { cwd.to_owned() } else { cwd.join(dir) };
        let candidate = dir.join(program);
        match classify(&candidate) {
            Candidate::Executable => return Ok(candidate),
            Candidate::NotExecutable => {
                not_executable.get_or_insert(candidate);
            }
            Candidate::Missing => {}
        }
    }
    match not_executable {
        Some(path) => Err(SpawnError::NotExecutable { program: program.to_owned(), path }),
        None => Err(SpawnError::ProgramNotFound {
            program: program.to_owned(),
            searched: format!("in PATH={path_var}"),
        }),
    }
}

enum Candidate {
    Executable,
    NotExecutable,
    Missing,
}

fn classify(path: &Path) -> Candidate {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o111 != 0 => {
            Candidate::Executable
        }
        Ok(_) => Candidate::NotExecutable,
        Err(_) => Candidate::Missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with_path(path: &str) -> Vec<(String, String)> {
        vec![("PATH".to_owned(), path.to_owned())]
    }

    #[test]
    fn bare_names_are_searched_in_the_roles_path_not_the_engines() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let tool = bin.join("my-tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();

        let found =
            resolve_program("my-tool", dir.path(), &env_with_path(bin.to_str().unwrap())).unwrap();
        assert_eq!(found, tool);

        let err = resolve_program("my-tool", dir.path(), &env_with_path("/nonexistent"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`my-tool`") && err.contains("PATH=/nonexistent"), "{err}");

        let err = resolve_program("sh", dir.path(), &[]).unwrap_err().to_string();
        assert!(err.contains("has no PATH"), "{err}");
    }

    #[test]
    fn a_file_without_exec_bits_is_reported_as_not_executable() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("run.sh");
        std::fs::write(&script, "echo hi\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();

        let err = resolve_program("./run.sh", dir.path(), &[]).unwrap_err();
        assert!(
            matches!(err, SpawnError::NotExecutable { ref path, .. } if *path == dir.path().join("./run.sh"))
        );
        let text = err.to_string();
        assert!(text.contains("chmod +x") && text.contains("bash"), "{text}");

        let err =
            resolve_program("run.sh", dir.path(), &env_with_path(dir.path().to_str().unwrap()))
                .unwrap_err();
        assert!(matches!(err, SpawnError::NotExecutable { .. }), "{err}");
    }

    #[test]
    fn relative_paths_are_taken_from_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        let err = resolve_program("scripts/missing.sh", dir.path(), &[]).unwrap_err().to_string();
        assert!(err.contains(&format!("at {}", dir.path().join("scripts/missing.sh").display())));
    }

    #[test]
    fn a_missing_working_directory_is_named() {
        let err = resolve_program("sh", Path::new("/nonexistent/worktree"), &env_with_path("/bin"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent/worktree") && err.contains("`sh`"), "{err}");
    }
}
