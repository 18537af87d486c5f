//! Keeping every role process in its lane: what each role may write (enforced by the kernel
//! where it can be, with Landlock: a worker its lane and its private git directory, nothing
//! under `.git`), and what breeze checks after every role process — always main and a
//! worker's lane links, and without kernel confinement also the shared `.git` (config,
//! hooks, refs, objects, the lanes' admin folders), the user's checkout and the lanes that
//! were quiet while the role ran.
//!
//! The threat model and what is enforced versus detected: docs/SECURITY.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use breeze_git::{AdvanceOutcome, Fingerprint, GitError, Oid, Repo, Worktree};
use breeze_protocol::Role;
use breeze_supervise::{Confinement, KernelSupport};

use crate::backend::Runs;
use crate::config::{Config, NetworkPolicy, SandboxMode};
use crate::error::EngineError;
use crate::read_policy::{ReadPolicy, RepositoryPlaces};

/// How this run confines its roles, decided once at run start.
#[derive(Debug, Clone)]
pub struct Containment {
    /// What the kernel offers.
    pub kernel: KernelSupport,
    /// Roles are confined by the kernel.
    pub enforced: bool,
    /// The configured mode.
    pub mode: SandboxMode,
    /// Extra paths workers and project commands may write (`sandbox.writable`, `~` expanded).
    pub extra_writable: Vec<PathBuf>,
    /// Single files the tools of those folders need writable beside them: cargo's
    /// package-cache locks ([`crate::tool_caches::lock_files`]).
    pub extra_writable_files: Vec<PathBuf>,
    /// Where confined roles and commands may read ([`Containment::reading`]); `None`:
    /// everywhere.
    pub reads: Option<ReadPolicy>,
    /// Where roles and commands may connect; [`NetworkPolicy::Open`] when not enforced.
    pub network: NetworkPolicy,
}

impl Containment {
    /// Decides from `sandbox.mode` and the kernel. `require` without kernel support is a
    /// configuration error (exit 2) naming the cause. A `sandbox.writable` folder that does
    /// not exist yet is created (a tool's cache on a fresh machine: its first run would
    /// otherwise be refused the folder it creates).
    pub fn decide(config: &Config, home: Option<&Path>) -> Result<Containment, EngineError> {
        let kernel = breeze_supervise::kernel_support();
        let enforced = match config.sandbox_mode {
            SandboxMode::Detect => false,
            SandboxMode::Auto => kernel.is_available(),
            SandboxMode::Require => {
                if let KernelSupport::Unavailable { reason } = &kernel {
                    return Err(EngineError::usage(
                        format!(
                            "sandbox.mode is \"require\" but this machine cannot confine role processes: {reason}"
                        ),
                        "run on a Linux kernel with Landlock (5.13 or later), or set sandbox.mode = \"auto\" in breeze.toml to run with detection only (docs/SECURITY.md)",
                    ));
                }
                true
            }
        };
        let network = match config.sandbox_mode {
            SandboxMode::Detect => NetworkPolicy::Open,
            _ => config.network.clone(),
        };
        if matches!(network, NetworkPolicy::AllowList(_)) {
            refuse_without_kernel_support(&kernel)?;
        }
        let extra_writable = writable_paths(config, home)?;
        for path in &extra_writable {
            create_missing_folder(path);
        }
        let extra_writable_files = crate::tool_caches::existing_lock_files(&extra_writable);
        Ok(Containment {
            kernel,
            enforced,
            mode: config.sandbox_mode,
            extra_writable,
            extra_writable_files,
            reads: None,
            network,
        })
    }

    /// How roles working on `repo` are confined, with the person's `HOME`.
    pub fn for_repository(config: &Config, repo: &Repo) -> Result<Containment, EngineError> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let worktrees = repo.worktree_root().ok();
        let places = RepositoryPlaces {
            checkout: repo.workdir(),
            git_dir: repo.common_dir(),
            worktrees: worktrees.as_deref(),
        };
        Containment::decide(config, home.as_deref())?.reading(config, home.as_deref(), &places)
    }

    /// Where confined roles and commands of the repository at `places` may read (nothing
    /// changes when they are not confined).
    pub fn reading(
        mut self,
        config: &Config,
        home: Option<&Path>,
        places: &RepositoryPlaces<'_>,
    ) -> Result<Containment, EngineError> {
        if self.enforced {
            let path_var = std::env::var_os("PATH");
            self.reads = Some(ReadPolicy::decide(config, home, places, path_var.as_deref())?);
        }
        Ok(self)
    }

    /// The paths a confined process with working folder `cwd` may read (`None`: all).
    fn readable(&self, cwd: &Path) -> Option<Vec<PathBuf>> {
        let reads = self.reads.as_ref()?;
        let mut readable = reads.readable.clone();
        readable.push(cwd.to_path_buf());
        Some(readable)
    }

    /// One line for the run start and `breeze status`.
    pub fn summary(&self) -> String {
        let mut text = if self.enforced {
            format!(
                "roles confined by the kernel ({}); a worker writes only its lane, its private git directory, its scratch folder and its own CLI home, a project command only its checkout and scratch folder",
                self.kernel
            )
        } else {
            format!(
                "NO kernel confinement ({}): breeze checks after every role what it changed outside its lane and stops the run if it finds anything",
                self.unconfined_reason()
            )
        };
        match &self.network {
            NetworkPolicy::Open => text.push_str(
                "; network OPEN: roles and commands reach whatever this machine can (sandbox.network = \"open\" or sandbox.mode = \"detect\")",
            ),
            NetworkPolicy::AllowList(hosts) => {
                let hosts: Vec<String> = hosts.iter().map(ToString::to_string).collect();
                let listed = if hosts.is_empty() { "nothing else".to_string() } else { hosts.join(", ") };
                text.push_str(&format!(
                    "; network allow-listed: each role reaches its model API and {listed}; everything else is refused and recorded"
                ));
            }
        }
        if self.reads.is_some() {
            text.push_str("; your home folder and checkout are unreadable to them but for toolchains, caches and the repository's .git (`breeze doctor` lists them)");
        }
        if !self.extra_writable.is_empty() {
            let paths: Vec<String> =
                self.extra_writable.iter().map(|p| p.display().to_string()).collect();
            text.push_str(&format!(
                "; workers and project commands may also write {}",
                paths.join(", ")
            ));
        }
        text
    }

    /// Why roles are not confined by the kernel (meaningful when `enforced` is false).
    pub fn unconfined_reason(&self) -> String {
        match (&self.kernel, self.mode) {
            (_, SandboxMode::Detect) => "sandbox.mode = \"detect\"".to_string(),
            (KernelSupport::Unavailable { reason }, _) => reason.clone(),
            (KernelSupport::Landlock { .. }, _) => "not enforced".to_string(),
        }
    }

    /// What one role process may write, or `None` when roles are not confined (or its
    /// backend runs inside breeze). `runs` is what runs the role (its backend's
    /// description says). `lane_git` is what the lane's own git needs — its private git
    /// directory (`Repo::lane_git_writable`) — for workers.
    pub fn confinement(
        &self,
        role: Role,
        runs: Runs,
        cwd: &Path,
        lane_git: &[PathBuf],
        scratch: &Path,
        env: &[(String, String)],
    ) -> Result<Option<Confinement>, EngineError> {
        if !self.enforced || matches!(runs, Runs::InProcess) {
            return Ok(None);
        }
        let mut confinement =
            Confinement { readable: self.readable(cwd), ..Confinement::default() };
        confinement.writable_dirs.push(scratch.to_path_buf());
        if role == Role::Worker {
            confinement.writable_dirs.push(cwd.to_path_buf());
            confinement.writable_dirs.extend(lane_git.iter().cloned());
            confinement.writable_dirs.extend(self.extra_writable.iter().cloned());
            confinement.writable_files.extend(self.extra_writable_files.iter().cloned());
        }
        if let Some(home) = cli_home(runs, env)? {
            confinement.writable_dirs.push(home);
        }
        // A configured path that does not exist (yet) cannot carry a rule; say so once per
        // call rather than failing the role.
        confinement.writable_dirs.retain(|path| {
            let exists = path.exists();
            if !exists {
                tracing::warn!(path = %path.display(), "sandbox.writable: no such path; ignored");
            }
            exists
        });
        Ok(Some(confinement))
    }
}

/// The CLI state a role on an agent CLI may write: its own home, named by its environment
/// (`CLAUDE_CONFIG_DIR` / `CODEX_HOME`, see [`crate::role_home`]) and created if missing (a
/// Landlock rule needs an existing path) — never the person's `~/.claude`, `~/.claude.json`
/// or `~/.codex`, whose hooks and settings would reach every later role and the person's own
/// sessions. `None` for the other backends; Err for an agent role without a home.
fn cli_home(runs: Runs, env: &[(String, String)]) -> Result<Option<PathBuf>, EngineError> {
    let Runs::Agent(cli) = runs else { return Ok(None) };
    let kind = cli.kind;
    let Some(home) = kind.home_in(env) else {
        return Err(EngineError::usage(
            format!("the {kind} role has no CLI home of its own ({} is not set)", kind.home_var()),
            "this is a bug in breeze: report it with the command you ran",
        ));
    };
    std::fs::create_dir_all(&home).map_err(|err| {
        EngineError::io(format!("cannot create the role's CLI home {}", home.display()), err)
    })?;
    Ok(Some(home))
}

// What the project's own commands may write.
impl Containment {
    /// What a project command (`worktree.setup` and `[review] checks` in a lane, `land.verify`
    /// and the hooks of `land.run_hooks` in the integration checkout) may write, or `None`
    /// when roles are not confined: the checkout it runs in, `also_writable` (more folders
    /// its checkout needs, such as a lane's private git directory), `files` (single files,
    /// such as the commit-msg hook's message), its scratch folder and `sandbox.writable`.
    /// Of `/dev`, what roles get. These commands run code that agents wrote.
    pub fn project_confinement(
        &self,
        checkout: &Path,
        also_writable: &[PathBuf],
        files: &[PathBuf],
        scratch: &Path,
    ) -> Option<Confinement> {
        if !self.enforced {
            return None;
        }
        let mut confinement =
            Confinement { readable: self.readable(checkout), ..Confinement::default() };
        confinement.writable_dirs.push(checkout.to_path_buf());
        confinement.writable_dirs.push(scratch.to_path_buf());
        confinement.writable_dirs.extend(also_writable.iter().cloned());
        confinement.writable_dirs.extend(self.extra_writable.iter().filter(|path| {
            let exists = path.exists();
            if !exists {
                tracing::warn!(path = %path.display(), "sandbox.writable: no such path; ignored");
            }
            exists
        }).cloned());
        confinement.writable_files.extend(files.iter().cloned());
        confinement.writable_files.extend(self.extra_writable_files.iter().cloned());
        Some(confinement)
    }
}

/// `sandbox.writable` as paths (`~/` expanded with `home`). Err: a path that is relative, or
/// starts with `~/` while there is no `home`.
pub(crate) fn writable_paths(
    config: &Config,
    home: Option<&Path>,
) -> Result<Vec<PathBuf>, EngineError> {
    crate::read_policy::expand_home_paths(&config.sandbox_writable, home, "sandbox.writable")
}

/// Roles on an allow-listed network need a network namespace each, and confinement by the
/// kernel; without either the run does not start (unless the person opens the network or
/// says `sandbox.mode = "detect"`).
fn refuse_without_kernel_support(kernel: &KernelSupport) -> Result<(), EngineError> {
    let missing = match (kernel, breeze_supervise::network_namespace_support()) {
        (KernelSupport::Unavailable { reason }, _) => Some(format!("no Landlock: {reason}")),
        (_, Err(reason)) => Some(reason),
        _ => match breeze_supervise::isolation_support() {
            breeze_supervise::IsolationSupport::SessionOnly { reason } => Some(reason),
            _ => None,
        },
    };
    match missing {
        None => Ok(()),
        Some(missing) => Err(EngineError::usage(
            format!(
                "roles cannot be kept to the run's network allow-list and read list here: {missing}"
            ),
            "set network = \"open\" under [sandbox] in breeze.toml to run with the network open (reads then stay confined where Landlock is), or sandbox.mode = \"detect\" to run with detection only (docs/SECURITY.md)",
        )),
    }
}

/// Creates the `sandbox.writable` folder `path` when nothing is there yet: a rule needs an
/// existing path, and a tool run confined (an install's first download into its cache)
/// could not create it itself. A failure is said, and the path is then left out.
fn create_missing_folder(path: &Path) {
    if std::fs::symlink_metadata(path).is_ok() {
        return;
    }
    match std::fs::create_dir_all(path) {
        Ok(()) => tracing::info!(path = %path.display(), "sandbox.writable: created the folder"),
        Err(err) => {
            tracing::warn!(path = %path.display(), "sandbox.writable: cannot create it ({err}); ignored");
        }
    }
}

/// What breeze remembers of the repository around role processes.
pub(crate) struct RoleGuard {
    pub containment: Containment,
    repo: Arc<Repo>,
    /// main as breeze last knew it: where the run started, its own landings, and moves
    /// by the user that were checked — and the commit a landing under way moves it to.
    known_main: Mutex<KnownMain>,
    /// Held while breeze moves main and updates the person's checkout, so a print of that
    /// checkout never sees half of one of breeze's own updates. Never taken inside
    /// `known_main`.
    person_checkout: Mutex<()>,
    /// The remote branch landings go to (`land.to` `remote`/`pull-request`): lanes start
    /// from its tip, so what it holds is known too.
    known_remote: Option<breeze_git::RemoteBranch>,
    /// Lanes with a writer (their worker, or breeze itself) and a counter of changes to
    /// that, so a lane's files are compared only while nobody may change them.
    lanes: Mutex<BTreeMap<PathBuf, LaneState>>,
}

/// main's tip as the guard knows it.
#[derive(Debug, Clone, Copy)]
struct KnownMain {
    tip: Oid,
    /// Where a landing under way is moving main: known before main is there, so a check
    /// meanwhile neither waits for the landing (its checkout update takes tens of
    /// milliseconds on a large repository) nor blames the next task, whose branch may
    /// already start at it.
    landing: Option<Oid>,
}

#[derive(Debug, Default, Clone, Copy)]
struct LaneState {
    writers: u32,
    epoch: u64,
}

/// The state taken before a role process started.
pub(crate) struct Watch {
    shared: Option<Fingerprint>,
    objects: Option<Fingerprint>,
    checkout: Option<Fingerprint>,
    quiet_lanes: Vec<(PathBuf, u64, Fingerprint)>,
}

/// While alive, the lane has a writer: its files are not compared.
pub(crate) struct LaneWriter {
    guard: Arc<RoleGuard>,
    path: PathBuf,
}

impl Drop for LaneWriter {
    fn drop(&mut self) {
        let mut lanes = self.guard.lanes.lock().unwrap_or_else(|p| p.into_inner());
        let state = lanes.entry(self.path.clone()).or_default();
        state.writers = state.writers.saturating_sub(1);
        state.epoch += 1;
    }
}

impl RoleGuard {
    pub fn new(containment: Containment, repo: Arc<Repo>, known_main: Oid) -> RoleGuard {
        RoleGuard {
            containment,
            repo,
            known_main: Mutex::new(KnownMain { tip: known_main, landing: None }),
            person_checkout: Mutex::new(()),
            known_remote: None,
            lanes: Mutex::new(BTreeMap::new()),
        }
    }

    /// The guard, knowing what the remote branch landings go to holds.
    pub fn knowing_remote(mut self, target: Option<breeze_git::RemoteBranch>) -> RoleGuard {
        self.known_remote = target;
        self
    }

    /// Marks `path` (a lane worktree) as being written by its task until the returned
    /// value is dropped.
    pub fn lane_writer(self: &Arc<Self>, path: &Path) -> LaneWriter {
        let mut lanes = self.lanes.lock().unwrap_or_else(|p| p.into_inner());
        let state = lanes.entry(path.to_path_buf()).or_default();
        state.writers += 1;
        state.epoch += 1;
        LaneWriter { guard: self.clone(), path: path.to_path_buf() }
    }

    /// Runs `advance`, breeze moving main to `commit` (a landing, or main following the
    /// remote). `commit` is known as where main is going before `advance` starts, so a
    /// check of main meanwhile never takes breeze's own commit for lane work (a lane
    /// sealed or a branch made at the new tip would look like it) and never waits for
    /// the landing. When main moved, `commit` is its known tip.
    pub fn moving_main(
        &self,
        commit: Oid,
        advance: impl FnOnce() -> Result<AdvanceOutcome, GitError>,
    ) -> Result<AdvanceOutcome, GitError> {
        let _checkout = self.person_checkout.lock().unwrap_or_else(|p| p.into_inner());
        self.known().landing = Some(commit);
        let outcome = advance();
        let mut known = self.known();
        known.landing = None;
        if let Ok(AdvanceOutcome::Advanced { .. }) = outcome {
            known.tip = commit;
        }
        outcome
    }

    fn known(&self) -> std::sync::MutexGuard<'_, KnownMain> {
        self.known_main.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Checks that main has not moved onto a commit made inside a lane. Ok: main is fine
    /// (and, if the user moved it, that move is now known). Err: a message naming the
    /// commit and where it came from, with what to do. Main's known tip is held throughout,
    /// so a landing of breeze's is either all before the check or all after it.
    pub fn check_main(&self) -> Result<(), EngineError> {
        let mut known = self.known();
        let since = known.tip;
        let remote = match &self.known_remote {
            Some(target) => self.repo.tracking_tip(target)?,
            None => None,
        };
        let also_known: Vec<Oid> = remote.into_iter().chain(known.landing).collect();
        match self.repo.lane_commit_on_main_beyond(since, &also_known)? {
            Some(found) => Err(EngineError::usage(
                format!(
                    "{} was moved to {}, which contains commit {} made in {} and never reviewed; breeze will not land anything on it",
                    self.repo.main_ref(),
                    found.main,
                    found.commit,
                    found.source
                ),
                format!(
                    "put main back where breeze left it with `git update-ref {} {since} {}` (or move it where you want it yourself), then run `breeze resume`",
                    self.repo.main_ref(),
                    found.main
                ),
            )),
            None => {
                // A move by the user (or none): accepted as the new known main.
                if let Ok(tip) = self.repo.main_tip() {
                    known.tip = tip;
                }
                Ok(())
            }
        }
    }

    /// Takes the state a role process must leave alone. Blocking (git status passes when
    /// roles are not confined by the kernel).
    pub fn before(&self) -> Result<Watch, EngineError> {
        if self.containment.enforced {
            // The kernel keeps roles out of all of it; main is still checked afterwards.
            return Ok(Watch {
                shared: None,
                objects: None,
                checkout: None,
                quiet_lanes: Vec::new(),
            });
        }
        let shared = Some(self.repo.shared_git_print()?);
        let objects = Some(self.repo.shared_objects_print()?);
        let checkout = Some(self.person_checkout_print()?);
        let mut quiet_lanes = Vec::new();
        for (path, epoch) in self.quiet_lanes() {
            if let Ok(print) = self.repo.checkout_print(&path) {
                quiet_lanes.push((path, epoch, print));
            }
        }
        Ok(Watch { shared, objects, checkout, quiet_lanes })
    }

    /// The person's checkout as it is (ignored files too), never half-way through one of
    /// breeze's own updates of it (`moving_main` holds the same lock), so the files a
    /// landing writes are not taken for a role's.
    fn person_checkout_print(&self) -> Result<Fingerprint, EngineError> {
        let _landing_done = self.person_checkout.lock().unwrap_or_else(|p| p.into_inner());
        Ok(self.repo.checkout_print_with_ignored(self.repo.workdir())?)
    }

    /// What changed since `watch` that the role may not change, as display paths. Blocking.
    pub fn after(&self, watch: Watch) -> Result<Vec<String>, EngineError> {
        let mut changed = Vec::new();
        if let Some(before) = &watch.shared {
            changed.extend(
                self.repo
                    .shared_git_print()?
                    .changes_since(before)
                    .into_iter()
                    .map(|path| format!("`{path}` in the shared git directory")),
            );
        }
        if let Some(before) = &watch.objects {
            let damaged = self.repo.damaged_objects_since(before)?;
            if !damaged.is_empty() {
                let shown: Vec<String> =
                    damaged.iter().take(5).map(|path| format!("`{path}`")).collect();
                let more = damaged.len().saturating_sub(shown.len());
                changed.push(format!(
                    "{} object file(s) of the shared repository overwritten or deleted ({}{}; check with `git fsck --full`; if you ran `git gc` yourself, nothing is lost)",
                    damaged.len(),
                    shown.join(", "),
                    if more > 0 { format!(" and {more} more") } else { String::new() }
                ));
            }
            // Without the kernel any role could have planted links in any lane's admin
            // folder: those without a writer are checked here (a worker's own lane was
            // checked first, as its attempt's problem; a lane whose worker still runs is
            // checked when it ends), and the integration worktree's.
            let mut names: Vec<String> = self
                .quiet_lanes()
                .into_iter()
                .filter_map(|(path, _)| Some(path.file_name()?.to_string_lossy().into_owned()))
                .collect();
            names.extend(
                (0..breeze_git::MAX_INTEGRATION_CHECKOUTS)
                    .map(breeze_git::integration_checkout_name),
            );
            for name in names {
                changed.extend(self.repo.check_admin_folder(&name)?);
            }
        }
        if let Some(before) = &watch.checkout {
            let now = self.person_checkout_print()?;
            changed.extend(
                now.changes_since(before)
                    .into_iter()
                    .map(|path| format!("`{path}` in your checkout")),
            );
        }
        let epochs: BTreeMap<PathBuf, u64> = self.quiet_lanes().into_iter().collect();
        for (path, epoch, before) in &watch.quiet_lanes {
            // A lane that got a writer in the meantime cannot be judged.
            if epochs.get(path) != Some(epoch) {
                continue;
            }
            if let Ok(now) = self.repo.checkout_print(path) {
                let lane = path.file_name().map(|n| n.to_string_lossy().into_owned());
                changed.extend(
                    now.changes_since(before).into_iter().map(|file| {
                        format!("`{file}` in lane {}", lane.clone().unwrap_or_default())
                    }),
                );
            }
        }
        if let Err(EngineError::Usage { message, .. }) = self.check_main() {
            changed.push(message);
        }
        Ok(changed)
    }

    /// Lane worktrees without a writer, with their epochs. A read-only role's own lane
    /// counts (its task has no writer while it is reviewed): it may change nothing there.
    fn quiet_lanes(&self) -> Vec<(PathBuf, u64)> {
        let Ok(root) = self.repo.worktree_root() else { return Vec::new() };
        let Ok(entries) = std::fs::read_dir(&root) else { return Vec::new() };
        let lanes = self.lanes.lock().unwrap_or_else(|p| p.into_inner());
        let mut quiet = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            // The preflight's throwaway checkout (a `breeze doctor` beside the run) is no lane.
            let trial = name.to_string_lossy().starts_with(breeze_git::TRIAL_CHECKOUT_PREFIX);
            let integration = breeze_git::is_integration_checkout(&name.to_string_lossy());
            if integration || trial || !path.join(".git").is_file() {
                continue;
            }
            // A lane with a writer — another lane's worker, breeze, or this role's own task
            // while it works — cannot be judged.
            let state = lanes.get(&path).copied().unwrap_or_default();
            if state.writers == 0 {
                quiet.push((path, state.epoch));
            }
        }
        quiet
    }

    /// The error that stops the run after `who` (e.g. "the worker of task 2, attempt 1")
    /// changed `escaped` outside its lane: nothing of the attempt lands, `breeze resume`
    /// continues once the user has looked.
    pub fn escape_error(&self, who: &str, escaped: &[String]) -> EngineError {
        let why = if self.containment.enforced {
            "despite the kernel confinement".to_string()
        } else {
            format!(
                "(roles are not confined by the kernel here: {}; breeze can only detect this)",
                self.containment.unconfined_reason()
            )
        };
        EngineError::usage(
            format!(
                "{who} changed what it may not {why}: {}; the run is stopped so that none of it lands",
                escaped.join(", ")
            ),
            "look at these changes and undo what you did not make yourself (breeze cannot tell who made them without kernel confinement), then run `breeze resume`",
        )
    }

    /// What the lane's own git needs to write, for a worker in `wt`: its private git
    /// directory.
    pub fn lane_git_writable(&self, wt: &Worktree) -> Vec<PathBuf> {
        self.repo.lane_git_writable(wt)
    }

    /// Prepares lane `wt` for its worker: its private git directory brought up to date and
    /// named by the lane's `.git` (`Repo::seal_lane`). Undone by
    /// [`RoleGuard::check_lane_links`].
    pub fn seal_lane(&self, wt: &Worktree) -> Result<PathBuf, EngineError> {
        Ok(self.repo.seal_lane(wt)?)
    }

    /// Checks (and repairs) the links of lane `wt` and points its `.git` back at its admin
    /// folder; the problems found.
    pub fn check_lane_links(&self, wt: &Worktree) -> Result<Vec<String>, EngineError> {
        Ok(self.repo.check_lane_links(wt)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_of_main_during_a_landing_neither_waits_for_it_nor_blames_the_next_task() {
        // A landing moves main to B; before it is done, the next task's branch is made at
        // B. A check of main in that window would find B on a task branch ("made in
        // task/2") if the guard did not know where main is going; and it must not wait for
        // the landing, whose checkout update on a large repository holds up the task.
        use breeze_test_support::git::{git, git_line};
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q", "-b", "main"]);
        std::fs::write(root.join("a.txt"), "a\n").unwrap();
        git(root, &["add", "a.txt"]);
        git(root, &["-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "-m", "a"]);
        let oid = |rev: &str| Oid::from_str(&git_line(root, &["rev-parse", rev])).unwrap();
        let a = oid("main");
        let tree = git_line(root, &["rev-parse", "main^{tree}"]);
        let landing = git_line(
            root,
            &[
                "-c",
                "user.name=u",
                "-c",
                "user.email=u@x",
                "commit-tree",
                &tree,
                "-p",
                "main",
                "-m",
                "landing",
            ],
        );
        let b = Oid::from_str(&landing).unwrap();
        let repo = Arc::new(Repo::open(root).unwrap());
        let home = tempfile::tempdir().unwrap();
        let containment = Containment::decide(&Config::defaults(), Some(home.path())).unwrap();
        let guard = RoleGuard::new(containment, repo.clone(), a);

        let (moved_tx, moved_rx) = std::sync::mpsc::channel();
        let (checked_tx, checked_rx) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            let guard = &guard;
            scope.spawn(move || {
                moved_rx.recv().unwrap();
                checked_tx.send(guard.check_main().map_err(|e| e.to_string())).unwrap();
            });
            let outcome = guard
                .moving_main(b, || {
                    let outcome = repo.advance_main(a, b)?;
                    git(root, &["branch", "task/2", &landing]);
                    moved_tx.send(()).unwrap();
                    // The check runs while this landing is still under way.
                    let checked = checked_rx.recv_timeout(std::time::Duration::from_secs(10));
                    assert!(checked.is_ok(), "the check waited for the landing");
                    let checked = checked.unwrap();
                    assert!(checked.is_ok(), "{:?}", checked.err());
                    Ok(outcome)
                })
                .unwrap();
            assert!(matches!(outcome, AdvanceOutcome::Advanced { .. }), "{outcome:?}");
        });
        assert!(guard.check_main().is_ok(), "main is known at the landing");
        // Without the landing, the same branch on main is found.
        let found = repo.lane_commit_on_main_beyond(a, &[]).unwrap();
        assert!(found.is_some(), "the window the guard closes is real");
    }

    #[test]
    fn an_agent_role_may_write_its_own_cli_home_and_never_the_persons_cli_state() {
        let dir = tempfile::tempdir().unwrap();
        let person = dir.path().join("person");
        let containment = Containment::decide(&Config::defaults(), Some(&person)).unwrap();
        let enforced = Containment { enforced: true, ..containment };
        let home = dir.path().join("run/homes/1.reviewer");
        let scratch = dir.path().join("scratch");
        std::fs::create_dir_all(&scratch).unwrap();
        let var = |name: &str, value: &Path| (name.to_string(), value.display().to_string());
        use crate::backend::BackendKind;
        for (backend, name) in
            [(BackendKind::Claude, "CLAUDE_CONFIG_DIR"), (BackendKind::Codex, "CODEX_HOME")]
        {
            let backend = backend.describe().runs;
            let env = vec![var("HOME", &person), var(name, &home)];
            let rules = enforced
                .confinement(Role::Reviewer, backend, dir.path(), &[], &scratch, &env)
                .unwrap()
                .unwrap();
            assert_eq!(rules.writable_dirs, [scratch.clone(), home.clone()], "{name}");
            assert!(rules.writable_files.is_empty(), "{:?}", rules.writable_files);
            assert!(home.is_dir(), "created for its rule");
            // Without a home of its own an agent role does not start.
            let env = vec![var("HOME", &person)];
            let err =
                enforced.confinement(Role::Reviewer, backend, dir.path(), &[], &scratch, &env);
            assert!(err.unwrap_err().to_string().contains(name));
        }
        assert!(!person.join(".claude").exists() && !person.join(".claude.json").exists());
        assert!(!person.join(".codex").exists());
    }

    #[test]
    fn a_writable_folder_that_does_not_exist_yet_is_created_and_granted() {
        let home = tempfile::tempdir().unwrap();
        let mut config = Config::defaults();
        config.sandbox_writable = vec!["~/.npm".into(), "~/.cache/pip".into()];
        let containment = Containment::decide(&config, Some(home.path())).unwrap();
        let npm = home.path().join(".npm");
        assert!(npm.is_dir() && home.path().join(".cache/pip").is_dir());
        assert_eq!(containment.extra_writable, [npm.clone(), home.path().join(".cache/pip")]);
        // What a project command may write includes it (when roles are confined at all).
        let enforced = Containment { enforced: true, ..containment };
        let scratch = home.path().join("scratch");
        let rules = enforced.project_confinement(home.path(), &[], &[], &scratch).unwrap();
        assert!(rules.writable_dirs.contains(&npm), "{:?}", rules.writable_dirs);
        // An existing file is left as it is.
        std::fs::write(home.path().join(".npmrc"), "x").unwrap();
        config.sandbox_writable = vec!["~/.npmrc".into()];
        Containment::decide(&config, Some(home.path())).unwrap();
        assert!(home.path().join(".npmrc").is_file());
    }

    #[test]
    fn without_landlock_an_allow_listed_run_refuses_and_says_how_to_run_anyway() {
        let kernel = KernelSupport::Unavailable { reason: "this kernel has no Landlock".into() };
        let err = refuse_without_kernel_support(&kernel).unwrap_err();
        assert!(err.to_string().contains("no Landlock: this kernel has no Landlock"), "{err}");
        let hints = err.hints().join(" ");
        assert!(
            hints.contains("network = \"open\"") && hints.contains("sandbox.mode = \"detect\""),
            "{hints}"
        );
        // With the network open (or detect), the same machine runs.
        let mut config = Config::defaults();
        config.network = NetworkPolicy::Open;
        assert!(Containment::decide(&config, None).is_ok());
        config.network = NetworkPolicy::AllowList(Vec::new());
        config.sandbox_mode = SandboxMode::Detect;
        let detect = Containment::decide(&config, None).unwrap();
        assert_eq!(detect.network, NetworkPolicy::Open, "detect confines nothing");
    }
}
