//! Finding the programs a run will start, the way it will start them: a bare name in the
//! PATH the process gets (roles and the project's commands both get the engine's PATH), a
//! name with a `/` relative to the checkout it runs in (a lane or the integration checkout:
//! checkouts of main, so the repository root stands for them).
//!
//! For a shell line (`sh -c "npm ci && npm test"`) the first word of each simple command is
//! checked too, where it can be told without running a shell: words split at `&&`, `||`,
//! `;`, `|`, `&` and newlines, leading `NAME=value` assignments skipped, builtins and
//! keywords skipped, and any word with quotes, `$`, backquotes, globs or redirections left
//! unchecked (a shell would expand it). Functions, aliases and subshells are not followed.

use std::path::{Path, PathBuf};

use breeze_supervise::SpawnError;

/// Where a program was looked for and what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lookup {
    /// The program as written.
    pub program: String,
    /// Where it is, or why it cannot run.
    pub found: Result<PathBuf, Missing>,
    /// The folders searched (a bare name), or the one path tried.
    pub searched: Vec<String>,
}

/// Why a program cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Missing {
    /// Not on PATH (a bare name).
    NotOnPath,
    /// No such file (a path).
    NoFile(PathBuf),
    /// Found, but not executable.
    NotExecutable(PathBuf),
    /// Anything else (no PATH at all).
    Other(String),
}

impl std::fmt::Display for Lookup {
    /// `npm not found on PATH`, `./run.sh not found at /repo/run.sh`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let program = &self.program;
        match &self.found {
            Ok(path) => write!(f, "{program} ({})", path.display()),
            Err(Missing::NotOnPath) => write!(f, "{program} not found on PATH"),
            Err(Missing::NoFile(path)) => write!(f, "{program} not found at {}", path.display()),
            Err(Missing::NotExecutable(path)) => {
                write!(f, "{program} is not executable ({})", path.display())
            }
            Err(Missing::Other(why)) => write!(f, "{program}: {why}"),
        }
    }
}

/// Looks `program` up as a process started in `checkout` with `env` would find it.
pub(crate) fn find(program: &str, checkout: &Path, env: &[(String, String)]) -> Lookup {
    let path_var = env.iter().rev().find(|(name, _)| name == "PATH").map(|(_, value)| value);
    let searched = if program.contains('/') {
        vec![checkout.join(program).display().to_string()]
    } else {
        let mut dirs: Vec<String> = Vec::new();
        for dir in path_var.map(|path| path.split(':')).into_iter().flatten() {
            if !dirs.iter().any(|seen| seen == dir) {
                dirs.push(dir.to_string());
            }
        }
        dirs
    };
    let found =
        breeze_supervise::resolve_program(program, checkout, env).map_err(|err| match err {
            SpawnError::NotExecutable { path, .. } => Missing::NotExecutable(path),
            SpawnError::ProgramNotFound { .. } if program.contains('/') => {
                Missing::NoFile(checkout.join(program))
            }
            SpawnError::ProgramNotFound { .. } if path_var.is_some() => Missing::NotOnPath,
            other => Missing::Other(other.to_string()),
        });
    Lookup { program: program.to_string(), found, searched }
}

/// Shells whose `-c` script is looked into.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash"];

/// Words before the program of a command (`if make`, `exec npm`, `env CI=1 npm`).
const PREFIXES: &[&str] = &[
    "!", "{", "}", "do", "done", "elif", "else", "env", "esac", "exec", "fi", "if", "then", "time",
    "until", "while",
];

/// Builtins and keywords that start a command without naming a program.
const NOT_PROGRAMS: &[&str] = &[
    ".", ":", "[", "[[", "alias", "case", "cd", "command", "echo", "eval", "exit", "export",
    "false", "for", "function", "in", "local", "printf", "pwd", "read", "return", "set", "shift",
    "source", "test", "trap", "true", "type", "ulimit", "umask", "unset", "wait",
];

/// The programs an argv starts: `argv[0]`, and for `sh -c SCRIPT` the first word of each
/// simple command of the script that can be told without a shell (see the module's doc).
pub(crate) fn programs_of(argv: &[String]) -> Vec<String> {
    let Some(first) = argv.first() else { return Vec::new() };
    let mut programs = vec![first.clone()];
    let name = first.rsplit('/').next().unwrap_or(first);
    if !SHELLS.contains(&name) {
        return programs;
    }
    // Options before the script: `-c`, `-ec`, `-e -c`, `-lc`.
    let mut rest = argv[1..].iter();
    let mut script = None;
    for arg in rest.by_ref() {
        let Some(flags) = arg.strip_prefix('-') else { break };
        if !flags.starts_with('-') && flags.contains('c') {
            script = rest.next();
            break;
        }
    }
    let Some(script) = script else { return programs };
    for word in first_words(script) {
        if !programs.contains(&word) {
            programs.push(word);
        }
    }
    programs
}

/// The module a `python -m MODULE` command runs (`python`, `python3`, `python3.12`, or a
/// path to one), top-level part only: `pytest` for `python -m pytest -q`. `None` for any
/// other command (a shell line is not looked into).
pub(crate) fn python_module_of(argv: &[String]) -> Option<(&str, &str)> {
    let [program, flag, module, ..] = argv else { return None };
    let name = program.rsplit('/').next().unwrap_or(program);
    let python = name == "python"
        || name.strip_prefix("python3").is_some_and(|rest| {
            rest.is_empty()
                || rest
                    .strip_prefix('.')
                    .is_some_and(|minor| minor.bytes().all(|b| b.is_ascii_digit()))
        });
    if !python || flag != "-m" || module.starts_with('-') {
        return None;
    }
    Some((program, module.split('.').next().unwrap_or(module)))
}

/// Whether `python` (started in `checkout` with `env`) can import `module`: `Some(false)`
/// when it says it cannot, `None` when that could not be told (it did not run, or took
/// more than a few seconds).
pub(crate) fn python_has_module(
    python: &str,
    module: &str,
    checkout: &Path,
    env: &[(String, String)],
) -> Option<bool> {
    const PROBE: &str =
        "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 3)";
    let mut child = std::process::Command::new(python)
        .args(["-c", PROBE, module])
        .current_dir(checkout)
        .env_clear()
        .envs(env.iter().map(|(name, value)| (name, value)))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    match wait_within(&mut child, std::time::Duration::from_secs(10)).ok()??.code() {
        Some(0) => Some(true),
        Some(3) => Some(false),
        _ => None,
    }
}

/// Waits up to `limit` for `child` to end; `Ok(None)` when it did not (it is killed).
pub(crate) fn wait_within(
    child: &mut std::process::Child,
    limit: std::time::Duration,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The first word of each simple command of a shell script, where it is plain.
fn first_words(script: &str) -> Vec<String> {
    let mut words = Vec::new();
    // `&` separates commands, but not in a redirection (`>&2`, `2>&1`, `&>log`).
    let chars: Vec<char> = script.chars().collect();
    let separated: String = chars
        .iter()
        .enumerate()
        .map(|(at, c)| {
            let redirection = *c == '&'
                && (matches!(at.checked_sub(1).map(|p| chars[p]), Some('>' | '<'))
                    || chars.get(at + 1) == Some(&'>'));
            if redirection { ' ' } else { *c }
        })
        .collect();
    for command in separated.split(['\n', ';', '|', '&', '(', ')']) {
        let mut tokens = command.split_whitespace();
        let word = tokens.find(|token| !is_assignment(token) && !PREFIXES.contains(token));
        let Some(word) = word else { continue };
        let plain = !word.contains(['$', '`', '"', '\'', '*', '?', '<', '>', '~', '\\', '=']);
        if plain && !NOT_PROGRAMS.contains(&word) {
            words.push(word.to_string());
        }
    }
    words
}

/// `NAME=value` before a command.
fn is_assignment(token: &str) -> bool {
    token.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|word| (*word).to_string()).collect()
    }

    #[test]
    fn a_shell_line_names_the_first_word_of_each_command() {
        assert_eq!(programs_of(&argv(&["npm", "install"])), ["npm"]);
        assert_eq!(
            programs_of(&argv(&["sh", "-c", "npm install && npm test"])),
            ["sh", "npm"],
            "each program once"
        );
        assert_eq!(
            programs_of(&argv(&[
                "bash",
                "-ec",
                "cd web; CI=1 pnpm i --frozen-lockfile | tee log || env X=1 uv sync"
            ])),
            ["bash", "pnpm", "tee", "uv"]
        );
        // Redirections are not commands.
        assert_eq!(
            programs_of(&argv(&["sh", "-c", "echo x >&2 &>/dev/null; make 2>&1 & wait"])),
            ["sh", "make"]
        );
        // What a shell would expand is not guessed at.
        assert_eq!(programs_of(&argv(&["sh", "-c", "$HOME/bin/x && \"my tool\" a"])), ["sh"]);
        assert_eq!(
            programs_of(&argv(&["/bin/sh", "-e", "-c", "if make; then go test; fi"])),
            ["/bin/sh", "make", "go"]
        );
        // Not a `-c` script: only the shell itself.
        assert_eq!(programs_of(&argv(&["sh", "scripts/setup.sh"])), ["sh"]);
        assert!(programs_of(&[]).is_empty());
    }

    #[test]
    fn the_module_of_python_dash_m_is_told_apart() {
        let module = |words: &[&str]| python_module_of(&argv(words)).map(|(_, m)| m.to_string());
        assert_eq!(module(&["python", "-m", "pytest", "-q"]).as_deref(), Some("pytest"));
        assert_eq!(module(&["/venv/bin/python3.12", "-m", "mypkg.cli"]).as_deref(), Some("mypkg"));
        assert_eq!(module(&["python3", "-m", "-x"]), None);
        assert_eq!(module(&["pytest", "-q"]), None);
        assert_eq!(module(&["python3x", "-m", "pytest"]), None);
        let python = match find(
            "python3",
            Path::new("/"),
            &[("PATH".into(), std::env::var("PATH").unwrap_or_default())],
        )
        .found
        {
            Ok(path) => path,
            Err(_) => return, // no python here: nothing more to check
        };
        let env = [("PATH".to_string(), std::env::var("PATH").unwrap_or_default())];
        let python = python.display().to_string();
        assert_eq!(python_has_module(&python, "json", Path::new("/"), &env), Some(true));
        let absent = "breeze_no_such_module_at_all";
        assert_eq!(python_has_module(&python, absent, Path::new("/"), &env), Some(false));
    }

    #[test]
    fn programs_are_found_as_the_process_would_find_them() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(bin.join("tool"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(bin.join("tool"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.path().join("plain.sh"), "echo\n").unwrap();
        let env = vec![("PATH".to_string(), format!("/nonexistent:{}", bin.display()))];
        let found = find("tool", dir.path(), &env);
        assert_eq!(found.found, Ok(bin.join("tool")));
        assert_eq!(found.searched, ["/nonexistent".to_string(), bin.display().to_string()]);
        let missing = find("npm", dir.path(), &env);
        assert_eq!(missing.found, Err(Missing::NotOnPath));
        assert_eq!(missing.to_string(), "npm not found on PATH");
        let not_executable = find("./plain.sh", dir.path(), &env);
        assert!(matches!(not_executable.found, Err(Missing::NotExecutable(_))));
        let no_file = find("./absent.sh", dir.path(), &env);
        assert!(no_file.to_string().starts_with("./absent.sh not found at "), "{no_file}");
    }
}
