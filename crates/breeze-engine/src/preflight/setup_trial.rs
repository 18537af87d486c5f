//! `worktree.setup` once, before a run, in a throwaway checkout of main's tip: whether it
//! works, how long it takes, and what it creates — the paths every lane will have besides
//! the task's change. The checkout is no lane (no branch, no lock, nothing journaled), lives
//! in the worktree folder beside the lanes (outside the checkout: `breeze_git::Repo::trial_checkout`)
//! and is removed afterwards. It runs as in a lane: the engine's environment, the same confinement
//! (its checkout, a scratch folder, `sandbox.writable`), `worktree.setup_timeout`, the
//! `worktree.include` files copied first.
//!
//! A success is cached in `.breeze/preflight/setup.json` by its inputs — the setup argv and
//! the content ids (git blob ids on main) of the files its result depends on:
//! [`SETUP_INPUT_FILES`] at the root and every argv word naming a file tracked on main — so
//! a second run does not redo it. A failure is not cached: the next run tries again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use breeze_git::{Oid, Repo};
use breeze_protocol::{SetupInput, SetupPath, SetupTrial};
use breeze_supervise::{ProcessSpec, Supervisor};
use tokio_util::sync::CancellationToken;

use super::found::join_and;
use crate::config::Config;
use crate::containment::Containment;

/// Root files whose contents decide what an install creates (manifests and lockfiles of
/// the common ecosystems). `requirements*.txt` matches by prefix and suffix.
pub const SETUP_INPUT_FILES: &[&str] = &[
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "pnpm-lock.yaml",
    "pnpm-workspace.yaml",
    "yarn.lock",
    ".yarnrc.yml",
    "bun.lock",
    "bun.lockb",
    ".npmrc",
    "Cargo.toml",
    "Cargo.lock",
    "rust-toolchain",
    "rust-toolchain.toml",
    "pyproject.toml",
    "uv.lock",
    "poetry.lock",
    "Pipfile",
    "Pipfile.lock",
    "setup.py",
    "setup.cfg",
    ".python-version",
    "go.mod",
    "go.sum",
    "Gemfile",
    "Gemfile.lock",
    "composer.json",
    "composer.lock",
];

/// Whether a root file is one of the setup's inputs.
pub fn is_setup_input(name: &str) -> bool {
    SETUP_INPUT_FILES.contains(&name)
        || (name.starts_with("requirements") && name.ends_with(".txt"))
}

/// Where the preflight keeps its files, under the repository's `.breeze/`.
fn preflight_dir(root: &Path) -> PathBuf {
    root.join(breeze_git::STATE_DIR).join("preflight")
}

/// The cache file.
pub fn cache_path(root: &Path) -> PathBuf {
    preflight_dir(root).join("setup.json")
}

/// The inputs of `argv` on `commit`, and their key.
pub fn setup_inputs(
    repo: &Repo,
    commit: Oid,
    argv: &[String],
) -> Result<(Vec<SetupInput>, String), breeze_git::GitError> {
    let mut files = repo.root_files(commit, is_setup_input)?;
    // A script the setup runs (`sh scripts/setup.sh`) is an input too.
    let named: Vec<&str> = argv.iter().skip(1).map(|arg| arg.trim_start_matches("./")).collect();
    for path in named.into_iter().filter(|arg| arg.contains('/') || arg.contains('.')) {
        if let Ok(Some(id)) = repo.blob_id_at(commit, path) {
            files.insert(path.to_string(), id);
        }
    }
    let inputs: Vec<SetupInput> =
        files.into_iter().map(|(path, id)| SetupInput { path, id: id.to_string() }).collect();
    let mut canonical = argv.join("\u{0}");
    for input in &inputs {
        canonical.push_str(&format!("\n{} {}", input.path, input.id));
    }
    Ok((inputs, format!("{:016x}", fnv1a(canonical.as_bytes()))))
}

/// A stable 64-bit hash (FNV-1a): the key only names a cache entry, the entry holds the
/// inputs themselves.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The cached result for `key`, if it is a success with these inputs.
pub fn cached(
    root: &Path,
    key: &str,
    argv: &[String],
    inputs: &[SetupInput],
) -> Option<SetupTrial> {
    let text = std::fs::read_to_string(cache_path(root)).ok()?;
    let trial: SetupTrial = serde_json::from_str(&text).ok()?;
    (trial.succeeded && trial.key == key && trial.argv == argv && trial.inputs == inputs)
        .then_some(SetupTrial { cached: true, ..trial })
}

/// The cached result of `worktree.setup` for main's tip as it is now, if there is one.
pub fn cached_trial(repo: &Repo, config: &Config) -> Option<SetupTrial> {
    let argv = &config.worktree_setup;
    let (inputs, key) = setup_inputs(repo, repo.main_tip().ok()?, argv).ok()?;
    cached(repo.workdir(), &key, argv, &inputs)
}

/// Keeps a successful trial for the next run.
fn remember(root: &Path, trial: &SetupTrial) {
    let Ok(text) = serde_json::to_string_pretty(trial) else { return };
    let path = cache_path(root);
    let written = std::fs::create_dir_all(preflight_dir(root))
        .and_then(|()| crate::snapshot::write_atomically(&path, text.as_bytes()));
    if let Err(err) = written {
        tracing::warn!("cannot keep the setup check's result in {}: {err}", path.display());
    }
}

/// Why `worktree.setup` could not be tried.
#[derive(Debug, thiserror::Error)]
pub enum TrialNotRun {
    /// Main's tip, the setup's inputs or the throwaway checkout could not be read or made.
    #[error(transparent)]
    Git(#[from] breeze_git::GitError),
    /// The folder of the trial's files cannot be made.
    #[error("cannot create {}: {source}", path.display())]
    Folder {
        /// `.breeze/preflight/`.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// No scratch folder for the setup.
    #[error("cannot create a scratch folder: {0}")]
    Scratch(#[source] std::io::Error),
    /// The setup's program did not start.
    #[error("it could not start: {0}")]
    CouldNotStart(#[source] breeze_supervise::SpawnError),
}

/// Runs `worktree.setup` in a throwaway checkout of main's tip and reports what it did
/// (`starting` is called first, unless the result is cached), and — when it failed confined
/// and its output shows a write refused — the hint naming the paths and `sandbox.writable`.
pub async fn run_trial(
    repo: &Repo,
    config: &Config,
    containment: &Containment,
    (supervisor, env): (&Supervisor, &[(String, String)]),
    cancel: &CancellationToken,
    starting: impl FnOnce(),
) -> Result<(SetupTrial, Option<String>), TrialNotRun> {
    let root = repo.workdir().to_path_buf();
    let argv = config.worktree_setup.clone();
    let tip = repo.main_tip()?;
    let (inputs, key) = setup_inputs(repo, tip, &argv)?;
    if let Some(trial) = cached(&root, &key, &argv, &inputs) {
        return Ok((trial, None));
    }
    starting();
    let dir = preflight_dir(&root);
    std::fs::create_dir_all(&dir)
        .map_err(|source| TrialNotRun::Folder { path: dir.clone(), source })?;
    let checkout = throwaway_checkout(repo, config, tip)?;
    let path = checkout.path().to_path_buf();
    let before = walk(&path);
    let scratch = crate::scratch::scratch_folder().map_err(TrialNotRun::Scratch)?;
    let spec = setup_spec(config, containment, env, &path, &dir.join("setup"), scratch.path());
    let confinement = spec.confinement.clone();
    let started = Instant::now();
    let ran_at = crate::clock::now_rfc3339();
    let outcome = supervisor
        .run(spec, None, cancel.clone(), |_, _| {}, |_| {})
        .await
        .map_err(TrialNotRun::CouldNotStart)?;
    let seconds = started.elapsed().as_secs_f64();
    let succeeded = outcome.ending.is_success();
    let after = walk(&path);
    let (created, changed, removed) = differences(&before, &after);
    let ignored = checkout.ignored(&created).unwrap_or_else(|_| vec![false; created.len()]);
    let created: Vec<SetupPath> = created
        .iter()
        .zip(ignored)
        .map(|(entry, ignored)| SetupPath {
            path: entry.clone(),
            files: if entry.ends_with('/') { count_under(&after, entry) } else { 1 },
            ignored,
        })
        .collect();
    drop(checkout);
    let output_tail = (!succeeded).then(|| tail_lines(&outcome.stdout_tail, &outcome.stderr_tail));
    let refused = match &confinement {
        Some(confinement) if !succeeded => {
            let output = format!("{}\n{}", outcome.stdout_tail, outcome.stderr_tail);
            crate::sandbox_hint::sandbox_refusal_hint(&output, confinement)
        }
        _ => None,
    };
    let mut trial = SetupTrial {
        argv,
        inputs,
        key,
        cached: false,
        ran_at,
        seconds,
        succeeded,
        ending: outcome.ending.to_string(),
        output_tail,
        created,
        changed,
        removed,
        summary: String::new(),
    };
    trial.summary = summary(&trial);
    if succeeded {
        remember(&root, &trial);
    }
    Ok((trial, refused))
}

/// A throwaway checkout of `tip` in the worktree folder, beside the lanes (outside the
/// checkout), with the `worktree.include` files copied in as into a lane.
fn throwaway_checkout(
    repo: &Repo,
    config: &Config,
    tip: Oid,
) -> Result<breeze_git::TrialCheckout, TrialNotRun> {
    let checkout = repo.trial_checkout(tip)?;
    if !config.worktree_include.is_empty() {
        let lane = breeze_git::Worktree {
            name: "setup-check".into(),
            path: checkout.path().to_path_buf(),
            branch: String::new(),
            base: tip,
        };
        repo.provision(&lane, &config.worktree_include)?;
    }
    Ok(checkout)
}

/// The setup's process in the checkout at `path` as in a lane: the engine's environment
/// `env` (no shared build folder, the integration checkout's port values — in no lane — so
/// a setup that names its lane's ports runs in the trial as in a lane), its timeout, and
/// confined as project commands are, with `scratch` as its temporary folder.
fn setup_spec(
    config: &Config,
    containment: &Containment,
    env: &[(String, String)],
    path: &Path,
    log: &Path,
    scratch: &Path,
) -> ProcessSpec {
    let mut spec = ProcessSpec::new(config.worktree_setup.clone(), path, log);
    let lane_vars = crate::lane_env::LaneEnv::integration(config).vars();
    spec.env = crate::network_policy::command_env(config, env.iter().cloned(), &lane_vars);
    crate::tool_caches::without_output_dirs(&mut spec.env);
    let refusals = crate::network_policy::Refusals {
        store: None,
        task: "preflight".into(),
        by: "worktree.setup".into(),
    };
    spec.network = crate::network_policy::for_command(&containment.network, refusals);
    if let Some(network) = &spec.network {
        spec.env.extend(network.proxy_env());
    }
    spec.timeout = Some(config.setup_timeout);
    spec.confinement = containment.project_confinement(path, &[], &[], scratch);
    if spec.confinement.is_some() {
        spec.env.retain(|(name, _)| !matches!(name.as_str(), "TMPDIR" | "TMP" | "TEMP"));
        for name in ["TMPDIR", "TMP", "TEMP"] {
            spec.env.push((name.into(), scratch.display().to_string()));
        }
    }
    spec
}

/// The last few lines of a failed setup's output.
fn tail_lines(stdout: &str, stderr: &str) -> String {
    let text = if stderr.trim().is_empty() { stdout } else { stderr };
    let lines: Vec<&str> = text.lines().filter(|line| !line.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

/// Every file under `root` (not following links; `.git` at the root left out), with its
/// size and modification time.
fn walk(root: &Path) -> BTreeMap<String, (u64, Option<std::time::SystemTime>)> {
    let mut files = BTreeMap::new();
    let mut pending = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let Ok(name) = entry.file_name().into_string() else { continue };
            if prefix.is_empty() && name == ".git" {
                continue;
            }
            let relative = format!("{prefix}{name}");
            let Ok(meta) = entry.path().symlink_metadata() else { continue };
            if meta.is_dir() {
                pending.push((entry.path(), format!("{relative}/")));
            } else {
                files.insert(relative, (meta.len(), meta.modified().ok()));
            }
        }
    }
    files
}

type Listing = BTreeMap<String, (u64, Option<std::time::SystemTime>)>;

/// What changed between two walks: the new paths (summarised: the outermost folder that did
/// not exist before, ending in `/`, else the file), the files changed, the files removed.
fn differences(before: &Listing, after: &Listing) -> (Vec<String>, Vec<String>, Vec<String>) {
    let dirs_before: std::collections::HashSet<&str> = before
        .keys()
        .flat_map(|path| path.match_indices('/').map(move |(at, _)| &path[..=at]))
        .collect();
    let existed = |dir: &str| dirs_before.contains(dir);
    let mut created: Vec<String> = Vec::new();
    for path in after.keys().filter(|path| !before.contains_key(*path)) {
        // The outermost folder of `path` that is new.
        let mut entry = path.clone();
        let mut end = 0;
        while let Some(slash) = path[end..].find('/') {
            let dir = &path[..end + slash + 1];
            if !existed(dir) {
                entry = dir.to_string();
                break;
            }
            end += slash + 1;
        }
        if created.last() != Some(&entry) && !created.contains(&entry) {
            created.push(entry);
        }
    }
    let changed =
        after.iter().filter(|(path, seen)| before.get(*path).is_some_and(|was| was != *seen));
    let changed = changed.map(|(path, _)| path.clone()).collect();
    let removed = before.keys().filter(|path| !after.contains_key(*path)).cloned().collect();
    (created, changed, removed)
}

fn count_under(listing: &Listing, dir: &str) -> u64 {
    listing.keys().filter(|path| path.starts_with(dir)).count() as u64
}

/// `1,234`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One line: `npm install creates package-lock.json and node_modules/ (2,345 files) in 12 s`.
pub fn summary(trial: &SetupTrial) -> String {
    let command = trial.argv.join(" ");
    if !trial.succeeded {
        return format!("`{command}` {} after {:.0} s", trial.ending, trial.seconds);
    }
    let mut parts = Vec::new();
    let shown: Vec<String> = trial
        .created
        .iter()
        .take(6)
        .map(|path| match path.files {
            1 if !path.path.ends_with('/') => path.path.clone(),
            1 => format!("{} (1 file)", path.path),
            n => format!("{} ({} files)", path.path, thousands(n)),
        })
        .collect();
    if !shown.is_empty() {
        let more = trial.created.len().saturating_sub(shown.len());
        let mut list = join_and(&shown);
        if more > 0 {
            list.push_str(&format!(" and {more} more"));
        }
        parts.push(format!("creates {list}"));
    }
    if !trial.changed.is_empty() {
        parts.push(format!("changes {}", join_and(&trial.changed)));
    }
    if !trial.removed.is_empty() {
        parts.push(format!("removes {}", join_and(&trial.removed)));
    }
    if parts.is_empty() {
        parts.push("creates nothing in the checkout".into());
    }
    let tracked_by_git: Vec<&str> =
        trial.created.iter().filter(|path| !path.ignored).map(|path| path.path.as_str()).collect();
    let mut line = format!("`{command}` {} in {:.0} s", parts.join("; "), trial.seconds);
    if !tracked_by_git.is_empty() {
        line.push_str(&format!(
            " (not ignored by git: {}; each lane keeps it as its baseline, never a task's change)",
            tracked_by_git.join(", ")
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(paths: &[(&str, u64)]) -> Listing {
        paths.iter().map(|(path, len)| (path.to_string(), (*len, None))).collect()
    }

    #[test]
    fn new_folders_are_summarised_and_files_named() {
        let before = listing(&[("package.json", 10), ("src/a.js", 1), ("gone.txt", 1)]);
        let after = listing(&[
            ("package.json", 12),
            ("package-lock.json", 5),
            ("node_modules/a/index.js", 1),
            ("node_modules/b/index.js", 1),
            ("src/a.js", 1),
            ("src/gen/x.js", 1),
            ("src/y.js", 1),
        ]);
        let (created, changed, removed) = differences(&before, &after);
        assert_eq!(created, ["node_modules/", "package-lock.json", "src/gen/", "src/y.js"]);
        assert_eq!(changed, ["package.json"]);
        assert_eq!(removed, ["gone.txt"]);
        assert_eq!(count_under(&after, "node_modules/"), 2);
    }

    #[test]
    fn the_summary_says_what_the_setup_creates() {
        let trial = SetupTrial {
            argv: vec!["npm".into(), "install".into()],
            inputs: Vec::new(),
            key: String::new(),
            cached: false,
            ran_at: String::new(),
            seconds: 4.2,
            succeeded: true,
            ending: "exited with code 0".into(),
            output_tail: None,
            created: vec![
                SetupPath { path: "node_modules/".into(), files: 2345, ignored: true },
                SetupPath { path: "package-lock.json".into(), files: 1, ignored: false },
            ],
            changed: Vec::new(),
            removed: Vec::new(),
            summary: String::new(),
        };
        assert_eq!(
            summary(&trial),
            "`npm install` creates node_modules/ (2,345 files) and package-lock.json in 4 s (not ignored by git: package-lock.json; each lane keeps it as its baseline, never a task's change)"
        );
        assert_eq!(thousands(1_234_567), "1,234,567");
        // A failed setup is told by the line the causes use (`breeze_protocol::telling_line`).
        let telling = |tail: &str| breeze_protocol::telling_line(tail).unwrap_or_default();
        assert_eq!(
            telling("resolving\nnpm error code EACCES\nnpm error see the log\n"),
            "npm error code EACCES"
        );
        assert_eq!(telling("one\n  two  \n\n"), "two");
        assert!(is_setup_input("requirements-dev.txt") && !is_setup_input("README.md"));
    }
}
