//! What roles and the project's commands may read where the kernel confines them: the
//! machine's system and toolchain folders, but not the person's home (their keys, cloud and
//! forge credentials, other repositories — and a checkout kept there, but for its `.git`
//! and `.breeze`), not the machine's password and host-key files — and inside those only
//! what a role's job needs: the repository's `.git`, breeze's own folder, the worktrees,
//! the toolchains and caches in the home, and what the person adds (`sandbox.read`).

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::error::EngineError;

/// Folders of a home that hold toolchains and caches, never credentials: readable.
pub const HOME_TOOLCHAINS: &[&str] = &[
    ".cargo",
    ".rustup",
    ".nvm",
    ".volta",
    ".fnm",
    ".bun",
    ".deno",
    ".npm",
    ".yarn",
    ".pnpm-store",
    ".local/share/pnpm",
    ".pyenv",
    ".rye",
    ".rbenv",
    ".asdf",
    ".sdkman",
    ".ghcup",
    ".elan",
    ".opam",
    ".m2/repository",
    ".gradle/caches",
    ".gradle/wrapper",
    ".pub-cache",
    ".nuget/packages",
    "go",
    ".local/bin",
    ".local/lib",
    ".local/share/uv",
    ".cache/pip",
    ".cache/uv",
    ".cache/pypoetry",
    ".cache/go-build",
    ".cache/yarn",
    ".cache/pnpm",
    ".cache/node",
    ".cache/node-gyp",
    ".cache/typescript",
    ".cache/ms-playwright",
    ".cache/pre-commit",
    ".cache/deno",
    ".cache/bazel",
    ".cache/sccache",
    ".cache/ruff",
    ".cache/mypy",
    ".cache/breeze",
    ".gitconfig",
    ".config/git",
];

/// System files no role needs and that hold secrets (readable to a root user otherwise).
pub const SYSTEM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssh",
    "/etc/sudoers",
    "/etc/sudoers.d",
];

/// Where this run's roles may read, decided once at the run start.
#[derive(Debug, Clone, Default)]
pub struct ReadPolicy {
    /// Hidden, but for `allowed`.
    pub hidden: Vec<PathBuf>,
    /// Readable again inside the hidden folders.
    pub allowed: Vec<PathBuf>,
    /// The Landlock read rules that say it ([`breeze_supervise::readable_except`]).
    pub readable: Vec<PathBuf>,
}

/// The places of one repository a role's reading depends on.
pub struct RepositoryPlaces<'a> {
    /// The person's checkout (its `.git` and `.breeze` readable when it is in the home).
    pub checkout: &'a Path,
    /// The repository's git folder (the objects every lane shares).
    pub git_dir: &'a Path,
    /// Where breeze's worktrees of this repository go.
    pub worktrees: Option<&'a Path>,
}

impl ReadPolicy {
    /// The policy for `places`, with the person's `home` and `sandbox.read`.
    pub fn decide(
        config: &Config,
        home: Option<&Path>,
        places: &RepositoryPlaces<'_>,
        path_var: Option<&std::ffi::OsStr>,
    ) -> Result<ReadPolicy, EngineError> {
        let mut hidden: Vec<PathBuf> =
            [Path::new("/home"), Path::new("/root")].into_iter().map(Path::to_path_buf).collect();
        let account_home = account_home();
        hidden.extend(home.map(Path::to_path_buf));
        hidden.extend(account_home.clone());
        hidden.extend(SYSTEM_SECRETS.iter().map(PathBuf::from));
        hidden.retain(|path| path.exists());
        hidden.sort();
        hidden.dedup();
        let mut allowed = vec![
            places.git_dir.to_path_buf(),
            places.checkout.join(".git"),
            places.checkout.join(crate::run_dir::STATE_DIR),
        ];
        allowed.extend(places.worktrees.map(Path::to_path_buf));
        // Breeze's own folders must exist for their rules (a first run makes them later).
        for own in allowed.iter().skip(2) {
            let _ = std::fs::create_dir_all(own);
        }
        // The toolchains of `HOME` and of the account's own home (they differ where HOME was
        // changed for a session, as tests and sudo do).
        for home in home.into_iter().chain(account_home.as_deref()) {
            allowed.extend(HOME_TOOLCHAINS.iter().map(|entry| home.join(entry)));
        }
        // The folders programs are found in (a `~/.local/bin`, an nvm node's `bin`), and
        // the packages the agent CLIs are installed in.
        if let Some(path_var) = path_var {
            allowed.extend(std::env::split_paths(path_var).filter(|dir| dir.is_absolute()));
        }
        allowed.extend(agent_cli_packages(path_var));
        allowed.extend(expand_home_paths(&config.sandbox_read, home, "sandbox.read")?);
        allowed.retain(|path| path.exists() && !hidden.contains(path));
        allowed.sort();
        allowed.dedup();
        let nested: Vec<PathBuf> = allowed
            .iter()
            .filter(|path| allowed.iter().any(|other| other != *path && path.starts_with(other)))
            .cloned()
            .collect();
        allowed.retain(|path| !nested.contains(path));
        let readable = breeze_supervise::readable_except(&hidden, &allowed);
        Ok(ReadPolicy { hidden, allowed, readable })
    }

    /// Lines for `breeze doctor`: what is hidden and what of it stays readable.
    pub fn describe(&self) -> Vec<String> {
        let list = |paths: &[PathBuf]| {
            paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        };
        let inside: Vec<PathBuf> = self
            .allowed
            .iter()
            .filter(|path| self.hidden.iter().any(|hidden| path.starts_with(hidden)))
            .cloned()
            .collect();
        vec![
            format!("unreadable to roles and project commands: {}", list(&self.hidden)),
            format!("  readable inside them: {}", list(&inside)),
            "  add more with read = [...] under [sandbox] in breeze.toml".to_string(),
        ]
    }
}

/// The home folder of the account breeze runs as (`/etc/passwd`), whatever `HOME` says.
fn account_home() -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt as _;
    let uid = std::fs::metadata("/proc/self").ok()?.uid().to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.len() >= 6 && fields[2] == uid).then(|| PathBuf::from(fields[5]))
    })
}

/// The packages `claude` and `codex` run from: the `node_modules` folder their programs
/// resolve into (a global npm prefix, an nvm node, a project's own install).
fn agent_cli_packages(path_var: Option<&std::ffi::OsStr>) -> Vec<PathBuf> {
    let Some(path_var) = path_var else { return Vec::new() };
    let mut packages = Vec::new();
    for dir in std::env::split_paths(path_var) {
        for name in ["claude", "codex", "node"] {
            let Ok(real) = dir.join(name).canonicalize() else { continue };
            let package =
                real.ancestors().find(|a| a.file_name().is_some_and(|n| n == "node_modules"));
            if let Some(package) = package {
                packages.push(package.to_path_buf());
            }
        }
    }
    packages
}

/// `~/`-expanded absolute paths of a `sandbox.*` list.
pub(crate) fn expand_home_paths(
    entries: &[String],
    home: Option<&Path>,
    key: &str,
) -> Result<Vec<PathBuf>, EngineError> {
    let mut paths = Vec::new();
    for entry in entries {
        let path = match (entry.strip_prefix("~/"), home) {
            (Some(rest), Some(home)) => home.join(rest),
            (Some(_), None) => {
                return Err(EngineError::usage(
                    format!("{key}: `{entry}` starts with ~/ but HOME is not set"),
                    "write the path out in full",
                ));
            }
            (None, _) => PathBuf::from(entry),
        };
        if !path.is_absolute() {
            return Err(EngineError::usage(
                format!("{key}: `{entry}` is not an absolute path"),
                format!("write absolute paths (or ~/...) in {key}"),
            ));
        }
        paths.push(path);
    }
    Ok(paths)
}
