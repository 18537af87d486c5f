//! Running one role process to its end: spawn in a new session (and PID namespace where
//! possible), feed stdin, stream output to logs while keeping bounded tails, watch the
//! clock, terminate the whole group.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::fs::File;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio::sync::watch;
use tokio::time::{Instant, Interval, MissedTickBehavior, interval_at, sleep_until};
use tokio_util::sync::CancellationToken;

use crate::group::{
    SIGKILL_WAIT, Sweep, empty_group, leads_own_pid_namespace, proc_stat, process_start_ticks,
    signal_group,
};
use crate::json::last_json_object;
use crate::network::NetworkAccess;
use crate::output::{LineSplitter, TailBuffer, lossy_tail};
use crate::resolve::resolve_program;
use crate::sandbox::launcher::{Launch, registered_launcher};
use crate::sandbox::{ChildSetup, Exec, ListenerHandover};
use crate::strays::{MARKER_VAR, end_marked_processes};
use crate::watchdog::{AbortOnDrop, ProbeSchedule, StallClock, watch_activity};
use crate::{ActivityProbe, Ending, Outcome, ProcessSpec, SpawnError, stream_log_paths};

/// Size of one read from a pipe.
const READ_CHUNK: usize = 64 * 1024;

/// Runs role processes. Cheap to clone; holds the settings shared by every run, and the
/// hard stop, which every clone shares.
#[derive(Debug, Clone)]
pub struct Supervisor {
    watchdog_interval: Duration,
    leak_timeout: Duration,
    json_window: usize,
    /// Cancelled by [`stop_hard`](Self::stop_hard). Clones of a token share one state, so
    /// a hard stop through any clone reaches the runs of all of them.
    hard_stop: CancellationToken,
    /// The binary roles are started through (module `sandbox::launcher`); `None`: as
    /// forked children of this process.
    launcher: Option<PathBuf>,
}

impl Default for Supervisor {
    fn default() -> Self {
        Self::new()
    }
}

impl Supervisor {
    /// Default period of the stall watchdog (and of activity probing).
    pub const DEFAULT_WATCHDOG_INTERVAL: Duration = Duration::from_secs(2);
    /// Default time the output pipes may stay open after the leader exited.
    pub const DEFAULT_LEAK_TIMEOUT: Duration = Duration::from_secs(1);
    /// Default size of the stdout window searched for the last JSON object.
    pub const DEFAULT_JSON_WINDOW: usize = 1024 * 1024;

    /// A supervisor with the default settings.
    pub fn new() -> Self {
        Self {
            watchdog_interval: Self::DEFAULT_WATCHDOG_INTERVAL,
            leak_timeout: Self::DEFAULT_LEAK_TIMEOUT,
            json_window: Self::DEFAULT_JSON_WINDOW,
            hard_stop: CancellationToken::new(),
            launcher: registered_launcher(),
        }
    }

    /// Starts roles through `launcher` — a binary whose `main` calls
    /// [`start_roles_through_this_binary`](crate::start_roles_through_this_binary) first —
    /// rather than as forked children of this process (`None`). The default is this
    /// process's own binary when its `main` made that call, else `None`. The role runs the
    /// same either way; a launcher spares it a copy of this process's memory.
    pub fn with_launcher(mut self, launcher: Option<PathBuf>) -> Self {
        self.launcher = launcher;
        self
    }

    /// Sets how often the stall condition is checked (and the lower bound of
    /// [`probe_interval`](Self::probe_interval)).
    pub fn with_watchdog_interval(mut self, interval: Duration) -> Self {
        // A zero period would make `tokio::time::interval` panic.
        self.watchdog_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// Sets how long, after the leader exited, the group may keep the output pipes open (or
    /// stay alive) before it is SIGKILLed and the outcome marked `leaked`.
    pub fn with_leak_timeout(mut self, timeout: Duration) -> Self {
        self.leak_timeout = timeout;
        self
    }

    /// Sets how many trailing bytes of stdout are kept and searched for the last JSON object.
    /// A result object larger than this (or starting before it) is not found.
    pub fn with_json_window(mut self, bytes: usize) -> Self {
        self.json_window = bytes;
        self
    }

    /// How often a walking activity probe is polled for a given stall timeout: the watchdog
    /// interval, but no more often than 20 times per stall timeout. Walking a worktree
    /// every 2 s would cost far more than a 600 s stall decision needs; a change is then
    /// noticed at most 5% of the stall timeout late, which only ever delays a stall. A
    /// notified probe ([`crate::TreeWatch`]) costs nothing to read and is read at every
    /// watchdog tick.
    pub fn probe_interval(&self, stall_timeout: Duration) -> Duration {
        self.watchdog_interval.max(stall_timeout / 20)
    }

    /// The watchdog period.
    pub fn watchdog_interval(&self) -> Duration {
        self.watchdog_interval
    }

    /// The leak timeout.
    pub fn leak_timeout(&self) -> Duration {
        self.leak_timeout
    }

    /// The JSON search window in bytes.
    pub fn json_window(&self) -> usize {
        self.json_window
    }

    /// Stops hard (the second Ctrl-C): from now on every process group run by this
    /// supervisor or any clone of it, running now or started later, gets SIGKILL at once.
    ///
    /// - A run in its grace period (after a timeout, stall or cancel) is SIGKILLed now; its
    ///   ending stays `TimedOut`, `Stalled` or `Cancelled`.
    /// - A run not yet terminating is SIGKILLed without SIGTERM first and ends as
    ///   [`Ending::Cancelled`], as after a cancel.
    /// - A run whose leader already exited no longer waits out the leak timeout: what is
    ///   left of its group is SIGKILLed now, and its ending stays the leader's exit status.
    /// - A [`run`](Self::run) called afterwards still spawns its process (so `on_spawn` can
    ///   journal the pid), SIGKILLs it right after `on_spawn`, and returns its outcome:
    ///   [`Ending::Cancelled`], `sigkilled`.
    /// - Strays of a run (its [`ProcessSpec::marker`]) are ended with zero grace.
    ///
    /// It cannot be undone. Sweeps outside a run, such as [`crate::end_processes_with_env`]
    /// and [`crate::end_orphan_group`], take their grace as an argument: pass zero when
    /// [`is_stopping_hard`](Self::is_stopping_hard).
    pub fn stop_hard(&self) {
        if !self.hard_stop.is_cancelled() {
            tracing::warn!("stopping hard: every role process group gets SIGKILL");
        }
        self.hard_stop.cancel();
    }

    /// Whether [`stop_hard`](Self::stop_hard) was called on this supervisor or on a clone.
    pub fn is_stopping_hard(&self) -> bool {
        self.hard_stop.is_cancelled()
    }

    /// Runs `spec` to its end and returns when no live process of its group is left.
    ///
    /// - The process starts as the leader of a new session and process group (no
    ///   controlling terminal; in a PID namespace of its own as `spec.isolation` says), with
    ///   the complete environment `spec.env`, stdin fed from `spec.stdin` then closed (or
    ///   `/dev/null`).
    /// - `on_spawn(pid, start_ticks)` is called right after the spawn, before anything
    ///   else happens, so the caller can journal the pid (= pgid) and its start time.
    /// - Both streams go byte-exact to [`stream_log_paths`]`(spec.log_path)`; only bounded
    ///   tails stay in memory. `on_line` gets every stdout line, cut at
    ///   `spec.max_line_bytes`.
    /// - On timeout, stall (no output and no activity change, checked every watchdog
    ///   interval) or `cancel`: SIGTERM to the group, `spec.grace`, SIGKILL.
    /// - After the leader exits, the pipes get the leak timeout; what still holds them or
    ///   is still alive in the group then gets SIGKILL (`Outcome::leaked`).
    /// - If this future is dropped before it completes, the group gets SIGKILL.
    ///
    /// A cancellation that fires after the leader exited only cuts the leak wait short;
    /// the ending stays the leader's exit status.
    ///
    /// After [`stop_hard`](Self::stop_hard) (before or during the run) there is no grace:
    /// see there.
    pub async fn run(
        &self,
        spec: ProcessSpec,
        activity: Option<Arc<dyn ActivityProbe>>,
        cancel: CancellationToken,
        on_spawn: impl FnOnce(u32, Option<u64>) + Send,
        mut on_line: impl FnMut(&str) + Send,
    ) -> Result<Outcome, SpawnError> {
        let Some(name) = spec.argv.first().cloned() else { return Err(SpawnError::EmptyCommand) };
        let program = resolve_program(&name, &spec.cwd, &spec.env)?;
        let logs = stream_log_paths(&spec.log_path);
        let out_cap =
            StreamCapture::create(&logs.0, spec.tail_bytes.max(self.json_window), &name).await?;
        let err_cap = StreamCapture::create(&logs.1, spec.tail_bytes, &name).await?;

        let (spawned, handover) =
            spawn_leader(&spec, &name, &program, self.launcher.as_deref()).await?;
        // The namespace's listeners are served while the run lasts, not a moment longer.
        let _network = serve_network(&spec, handover);
        on_spawn(spawned.pid, process_start_ticks(spawned.pid));
        tracing::debug!(pid = spawned.pid, program = %program.display(), cwd = %spec.cwd.display(), "role process started");

        let mut run = Running::new(self, spec, spawned, [out_cap, err_cap], activity, cancel);
        if self.is_stopping_hard() {
            // Stopped before this run began: it gets no time at all.
            run.stop_hard();
        }
        run.watch(&mut on_line).await;
        let (sweep, strays) = run.sweep().await;
        Ok(run.into_outcome(sweep, strays, logs).await)
    }
}

/// A process just spawned as the leader of its own session and group, and the guard that
/// kills the group if the run is dropped.
struct Spawned {
    child: Child,
    pid: u32,
    started: Instant,
    guard: GroupGuard,
    /// In a PID namespace of its own ([`leads_own_pid_namespace`]).
    own_pid_namespace: bool,
    /// Where its stdin is fed, when it has one to feed.
    stdin: Option<Box<dyn AsyncWrite + Unpin + Send>>,
}

/// Starts `spec` (its program already resolved) as the leader of a new session and so of a
/// new process group (pgid = pid), isolated and confined as the spec says: through
/// `launcher` where there is one, else as a forked child.
async fn spawn_leader(
    spec: &ProcessSpec,
    name: &str,
    program: &Path,
    launcher: Option<&Path>,
) -> Result<(Spawned, Option<ListenerHandover>), SpawnError> {
    let env = || {
        let marker = spec.marker.iter().map(|value| (MARKER_VAR, value.as_str()));
        spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).chain(marker)
    };
    let args = std::iter::once(name).chain(spec.argv[1..].iter().map(String::as_str));
    let exec =
        Exec::new(program, args, env()).map_err(|source| exec_error(name, program, source))?;
    let ports = spec.network.as_ref().map(NetworkAccess::listening_ports);
    let (setup, handover) =
        ChildSetup::for_role(spec.confinement.as_ref(), spec.isolation, exec, ports.as_deref())
            .map_err(|source| SpawnError::Sandbox { program: name.to_owned(), source })?;
    let namespace_planned = setup.plans_pid_namespace();
    let output = |command: &mut Command| {
        command
            .current_dir(&spec.cwd)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Last resort only: it reaches the leader, not its descendants.
            .kill_on_drop(true);
    };
    let pid_of = |child: &Child| {
        // None only after the child has been awaited.
        child.id().ok_or_else(|| exec_error(name, program, io::Error::other("no pid")))
    };
    // What the leader runs until the role's `exec`: the launcher, or (a fork) this program.
    let (child, guard, stdin, image) = match launcher.filter(|_| setup.launchable()) {
        Some(launcher) => {
            let (mut launch, stdin) = Launch::prepare(setup, !spec.stdin.is_empty())
                .map_err(|source| exec_error(name, program, source))?;
            let mut command = launch.command(launcher);
            output(&mut command);
            let child = command.spawn().map_err(|source| exec_error(name, launcher, source))?;
            drop(command);
            // Armed from here: a failed or abandoned start ends whatever the launcher made.
            let guard = GroupGuard { pgid: pid_of(&child)?, armed: true };
            launch.hand_over().await.map_err(|source| exec_error(name, program, source))?;
            let stdin = stdin.map(|pipe| Box::new(pipe) as Box<dyn AsyncWrite + Unpin + Send>);
            (child, guard, stdin, launcher)
        }
        None => {
            let mut command = Command::new(program);
            command
                .arg0(name)
                .args(&spec.argv[1..])
                // The child makes its own execve with this environment (`Exec`); std's
                // copy is kept the same.
                .env_clear()
                .envs(env())
                // Never the terminal: the role has none.
                .stdin(if spec.stdin.is_empty() { Stdio::null() } else { Stdio::piped() });
            output(&mut command);
            // `setsid` in the child: a session of its own, so no controlling terminal, and
            // a process group whose id is its pid.
            setup.install(&mut command);
            let mut child = command.spawn().map_err(|source| exec_error(name, program, source))?;
            let guard = GroupGuard { pgid: pid_of(&child)?, armed: true };
            let stdin =
                child.stdin.take().map(|pipe| Box::new(pipe) as Box<dyn AsyncWrite + Unpin + Send>);
            (child, guard, stdin, Path::new("/proc/self/exe"))
        }
    };
    let pid = guard.pgid;
    let own_pid_namespace = namespace_planned && leads_own_pid_namespace(pid, image);
    let spawned = Spawned { child, pid, started: Instant::now(), guard, own_pid_namespace, stdin };
    Ok((spawned, handover))
}

/// Serves the listeners of a process's network namespace once they are handed over; they
/// close when the returned guard drops (the run ended).
fn serve_network(
    spec: &ProcessSpec,
    handover: Option<ListenerHandover>,
) -> Option<tokio_util::sync::DropGuard> {
    let (Some(handover), Some(access)) = (handover, spec.network.clone()) else { return None };
    let stop = CancellationToken::new();
    let serving = stop.clone();
    tokio::spawn(async move {
        let ports = access.listening_ports();
        match tokio::task::spawn_blocking(move || handover.receive()).await {
            Ok(Ok(listeners)) => {
                crate::network::serve(access, ports.into_iter().zip(listeners).collect(), serving);
            }
            Ok(Err(err)) => tracing::warn!("a role has no network: {err}"),
            Err(err) => tracing::warn!("a role's network listeners were not received: {err}"),
        }
    });
    Some(stop.drop_guard())
}

/// Writes the prompt from its own task, so that a role reading slowly (or not at all)
/// never blocks the output loop.
fn feed_stdin(
    pid: u32,
    mut pipe: impl AsyncWrite + Unpin + Send + 'static,
    stdin: Vec<u8>,
) -> AbortOnDrop {
    AbortOnDrop(tokio::spawn(async move {
        // A role that exits without reading its prompt makes this fail (EPIPE): fine.
        if let Err(err) = pipe.write_all(&stdin).await {
            tracing::debug!(pid, %err, "role did not read all of its stdin");
        }
    }))
}

/// One run from spawn to outcome: the process, its pipes and captures, its clocks and
/// deadlines, and how its termination stands.
struct Running {
    pid: u32,
    started: Instant,
    leak_timeout: Duration,
    json_window: usize,
    tail_bytes: usize,
    marker: Option<String>,
    /// In a PID namespace of its own: nothing of it outlives an empty group.
    own_pid_namespace: bool,
    child: Child,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    out_cap: StreamCapture,
    err_cap: StreamCapture,
    out_buf: Vec<u8>,
    err_buf: Vec<u8>,
    lines: LineSplitter,
    clock: Option<StallClock>,
    /// Last activity change seen by the probe, and the task polling it.
    activity: Option<(watch::Receiver<Instant>, AbortOnDrop)>,
    watchdog: Interval,
    deadline: Option<Instant>,
    state: RunState,
    /// The leader's exit status, once it has been reaped.
    exit: Option<io::Result<ExitStatus>>,
    /// When the group gets SIGKILL for holding the pipes after the leader exited.
    leak_at: Option<Instant>,
    /// When pipes held by a process outside the group stop being read.
    abandon_at: Option<Instant>,
    cancel: CancellationToken,
    cancel_seen: bool,
    hard_stop: CancellationToken,
    hard_stop_seen: bool,
    guard: GroupGuard,
    _stdin_task: Option<AbortOnDrop>,
}

impl Running {
    fn new(
        supervisor: &Supervisor,
        spec: ProcessSpec,
        spawned: Spawned,
        [out_cap, err_cap]: [StreamCapture; 2],
        activity: Option<Arc<dyn ActivityProbe>>,
        cancel: CancellationToken,
    ) -> Self {
        let Spawned { mut child, pid, started, guard, own_pid_namespace, stdin } = spawned;
        let stdin_task = stdin.map(|pipe| feed_stdin(pid, pipe, spec.stdin));
        let activity = match (spec.stall_timeout, activity) {
            (Some(stall), Some(probe)) => {
                let schedule = ProbeSchedule {
                    walk_every: supervisor.probe_interval(stall),
                    tick: supervisor.watchdog_interval,
                    stall_timeout: stall,
                };
                Some(watch_activity(probe, schedule, started))
            }
            _ => None,
        };
        let every = supervisor.watchdog_interval;
        let mut watchdog = interval_at(started + every, every);
        watchdog.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Self {
            pid,
            started,
            leak_timeout: supervisor.leak_timeout,
            json_window: supervisor.json_window,
            tail_bytes: spec.tail_bytes,
            marker: spec.marker,
            own_pid_namespace,
            stdout: child.stdout.take(),
            stderr: child.stderr.take(),
            child,
            out_cap,
            err_cap,
            out_buf: vec![0u8; READ_CHUNK],
            err_buf: vec![0u8; READ_CHUNK],
            lines: LineSplitter::new(spec.max_line_bytes),
            clock: spec.stall_timeout.map(|timeout| StallClock::new(timeout, started)),
            activity,
            watchdog,
            deadline: spec.timeout.map(|t| started + t),
            state: RunState { pgid: pid, grace: spec.grace, ..RunState::default() },
            exit: None,
            leak_at: None,
            abandon_at: None,
            cancel,
            cancel_seen: false,
            hard_stop: supervisor.hard_stop.clone(),
            hard_stop_seen: false,
            guard,
            _stdin_task: stdin_task,
        }
    }

    fn pipes_open(&self) -> bool {
        self.stdout.is_some() || self.stderr.is_some()
    }

    /// Reads output and reacts to exits, signals and clocks until the leader has exited and
    /// both pipes are closed (or abandoned).
    async fn watch(&mut self, on_line: &mut impl FnMut(&str)) {
        while self.exit.is_none() || self.pipes_open() {
            let running = self.exit.is_none();
            let pipes_open = self.pipes_open();
            // The leader runs and nothing is ending it yet: the clocks may still end it.
            let undisturbed = running && self.state.reason.is_none();
            let leak_pending =
                !running && pipes_open && self.state.kill_at.is_none() && self.abandon_at.is_none();
            tokio::select! {
                read = read_opt(&mut self.stdout, &mut self.out_buf) => self.stdout_read(read, on_line).await,
                read = read_opt(&mut self.stderr, &mut self.err_buf) => self.stderr_read(read).await,
                status = self.child.wait(), if running => self.leader_exited(status),
                () = self.cancel.cancelled(), if !self.cancel_seen => self.cancelled(),
                () = self.hard_stop.cancelled(), if !self.hard_stop_seen => self.stop_hard(),
                () = sleep_opt(self.deadline), if undisturbed => self.state.terminate(Ending::TimedOut),
                _ = self.watchdog.tick(), if undisturbed && self.clock.is_some() => self.check_stall(),
                () = sleep_opt(self.state.kill_at) => self.grace_over(),
                () = sleep_opt(self.leak_at), if leak_pending => self.leaked(),
                () = sleep_opt(self.abandon_at), if pipes_open => self.abandon_pipes(),
            }
        }
        self.lines.finish(on_line);
    }

    fn output_seen(&mut self) {
        if let Some(clock) = self.clock.as_mut() {
            clock.output_seen(Instant::now());
        }
    }

    async fn stdout_read(&mut self, read: io::Result<usize>, on_line: &mut impl FnMut(&str)) {
        match read {
            Ok(n) if n > 0 => {
                self.output_seen();
                self.out_cap.record(&self.out_buf[..n]).await;
                self.lines.push(&self.out_buf[..n], on_line);
            }
            result => {
                if let Err(err) = result {
                    tracing::warn!(pid = self.pid, %err, "reading the role's stdout failed");
                }
                self.stdout = None;
            }
        }
    }

    async fn stderr_read(&mut self, read: io::Result<usize>) {
        match read {
            Ok(n) if n > 0 => {
                self.output_seen();
                self.err_cap.record(&self.err_buf[..n]).await;
            }
            result => {
                if let Err(err) = result {
                    tracing::warn!(pid = self.pid, %err, "reading the role's stderr failed");
                }
                self.stderr = None;
            }
        }
    }

    fn leader_exited(&mut self, status: io::Result<ExitStatus>) {
        tracing::debug!(pid = self.pid, ?status, "role process exited");
        self.exit = Some(status);
        self.state.leader_reaped = true;
        let now = Instant::now();
        // After a cancel or a hard stop, nothing left in the group is worth waiting for.
        let hurry = self.cancel_seen || self.hard_stop_seen;
        self.leak_at = Some(if hurry { now } else { now + self.leak_timeout });
        self.activity = None;
    }

    fn cancelled(&mut self) {
        self.cancel_seen = true;
        if self.exit.is_none() {
            // Already terminating (timeout, stall): the SIGKILL is scheduled.
            if self.state.reason.is_none() {
                self.state.terminate(Ending::Cancelled);
            }
        } else {
            self.leak_at = Some(Instant::now());
        }
    }

    fn stop_hard(&mut self) {
        self.hard_stop_seen = true;
        let running = self.exit.is_none();
        self.state.stop_hard(running);
        if !running {
            // What still holds the pipes gets SIGKILL now rather than after the leak timeout.
            self.leak_at = Some(Instant::now());
        }
    }

    fn check_stall(&mut self) {
        let last_activity = self.activity.as_ref().map_or(self.started, |(rx, _)| *rx.borrow());
        if self.clock.is_some_and(|c| c.is_stalled(Instant::now(), last_activity)) {
            self.state.terminate(Ending::Stalled);
        }
    }

    fn grace_over(&mut self) {
        tracing::info!(pid = self.pid, "grace period over; sending SIGKILL to the process group");
        self.state.kill_now();
    }

    fn leaked(&mut self) {
        tracing::info!(
            pid = self.pid,
            "the leader exited but its output is still held open; sending SIGKILL to the process group"
        );
        self.state.leaked = true;
        self.state.kill_now();
        self.abandon_at = Some(Instant::now() + self.leak_timeout);
    }

    fn abandon_pipes(&mut self) {
        tracing::warn!(
            pid = self.pid,
            "a process outside the role's group holds its output open; no longer reading it"
        );
        self.stdout = None;
        self.stderr = None;
    }

    /// Empties the group, then ends the strays that left it. Returns the group's sweep and
    /// the strays found.
    async fn sweep(&mut self) -> (Sweep, Vec<u32>) {
        // Whatever is still alive in the group outlived the leader: give it until the grace
        // (if terminating) or the leak timeout is over, then SIGKILL; a hard stop cuts the
        // wait short.
        let sigkill_at = self.state.kill_at.or(self.leak_at).unwrap_or_else(Instant::now);
        let sweep = empty_group(self.pid, sigkill_at, SIGKILL_WAIT, Some(&self.hard_stop)).await;
        if sweep.sigkilled {
            self.state.sigkilled = true;
            if self.state.reason.is_none() {
                self.state.leaked = true;
            }
        }
        if sweep.survivors.is_empty() {
            self.guard.armed = false;
        }
        // Descendants that left the group (setsid, double fork) end with it too: in a PID
        // namespace of its own, with its init, which was in the group (no look through
        // every process's environment then).
        let strays = match &self.marker {
            Some(_) if self.own_pid_namespace && sweep.survivors.is_empty() => Vec::new(),
            Some(value) => {
                end_marked_processes(MARKER_VAR, value, self.state.grace, Some(&self.hard_stop))
                    .await
            }
            None => Vec::new(),
        };
        (sweep, strays)
    }

    /// Flushes the logs and reports how the run went.
    async fn into_outcome(
        mut self,
        sweep: Sweep,
        strays: Vec<u32>,
        (stdout_log, stderr_log): (PathBuf, PathBuf),
    ) -> Outcome {
        let duration = self.started.elapsed();
        let mut log_error = None;
        for cap in [&mut self.out_cap, &mut self.err_cap] {
            cap.finish().await;
            log_error = log_error.or(cap.error.take());
        }
        let pid = self.pid;
        let ending = self.state.reason.unwrap_or_else(|| match self.exit.take() {
            Some(Ok(status)) => ending_of(status),
            Some(Err(err)) => {
                tracing::error!(pid, %err, "could not read the role's exit status");
                Ending::Exited(-1)
            }
            None => Ending::Exited(-1), // unreachable: watching ends only after the exit
        });
        tracing::debug!(pid, %ending, ?duration, "role process group gone");
        Outcome {
            ending,
            pid,
            stdout_tail: self.out_cap.tail_string(self.tail_bytes),
            stderr_tail: self.err_cap.tail_string(self.tail_bytes),
            stdout_bytes: self.out_cap.bytes,
            stderr_bytes: self.err_cap.bytes,
            last_json: last_json_object(self.out_cap.tail.last(self.json_window)),
            duration,
            leaked: self.state.leaked,
            sigkilled: self.state.sigkilled,
            survivors: sweep.survivors,
            stdout_log,
            stderr_log,
            log_error,
            strays,
            own_pid_namespace: self.own_pid_namespace,
        }
    }
}

/// Termination bookkeeping of one run.
#[derive(Debug, Default)]
struct RunState {
    pgid: u32,
    grace: Duration,
    /// Why the supervisor is ending the group, once it is.
    reason: Option<Ending>,
    /// When the pending SIGKILL is due.
    kill_at: Option<Instant>,
    sigkilled: bool,
    leaked: bool,
    /// The leader has been waited for; from then on its pid may be reused.
    leader_reaped: bool,
}

impl RunState {
    fn terminate(&mut self, reason: Ending) {
        tracing::info!(pgid = self.pgid, %reason, "terminating the role's process group");
        self.reason = Some(reason);
        if self.grace.is_zero() {
            self.kill_now();
        } else {
            self.signal(Signal::SIGTERM);
            self.kill_at = Some(Instant::now() + self.grace);
        }
    }

    /// A hard stop: no grace any more. A pending SIGKILL is sent now; a leader that is not
    /// being terminated yet is SIGKILLed directly, as after a cancel.
    fn stop_hard(&mut self, leader_running: bool) {
        self.grace = Duration::ZERO;
        if leader_running && self.reason.is_none() {
            self.terminate(Ending::Cancelled);
        } else if self.kill_at.is_some() {
            tracing::info!(pgid = self.pgid, "stopping hard; sending SIGKILL to the process group");
            self.kill_now();
        }
    }

    fn kill_now(&mut self) {
        self.signal(Signal::SIGKILL);
        self.sigkilled = true;
        self.kill_at = None;
    }

    fn signal(&self, signal: Signal) {
        let _ = signal_group(self.pgid, signal);
        // A leader that moved itself to another group is still ours while it is unreaped
        // (its pid cannot be reused before that), so it is signalled directly.
        if !self.leader_reaped && proc_stat(self.pgid).is_some_and(|s| s.pgrp != self.pgid) {
            let _ = kill(Pid::from_raw(self.pgid as i32), signal);
        }
    }
}

/// SIGKILLs the group if the run's future is dropped before the group is known to be gone.
struct GroupGuard {
    pgid: u32,
    armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            tracing::debug!(
                pgid = self.pgid,
                "run abandoned; sending SIGKILL to the process group"
            );
            let _ = signal_group(self.pgid, Signal::SIGKILL);
        }
    }
}

/// One output stream: the raw log file, a bounded tail and a byte count.
struct StreamCapture {
    path: PathBuf,
    /// `None` once writing failed; the run goes on without the log.
    log: Option<BufWriter<File>>,
    tail: TailBuffer,
    bytes: u64,
    error: Option<String>,
}

impl StreamCapture {
    async fn create(path: &Path, keep: usize, program: &str) -> Result<Self, SpawnError> {
        let log_error =
            |source| SpawnError::Log { program: program.to_owned(), path: path.to_owned(), source };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            tokio::fs::create_dir_all(parent).await.map_err(log_error)?;
        }
        let file = File::create(path).await.map_err(log_error)?;
        Ok(Self {
            path: path.to_owned(),
            log: Some(BufWriter::with_capacity(READ_CHUNK, file)),
            tail: TailBuffer::new(keep),
            bytes: 0,
            error: None,
        })
    }

    /// Appends what the pipe gave to the log and flushes it, so the log shows what the role
    /// wrote while it runs (`breeze logs --follow`, the live view's last line).
    async fn record(&mut self, chunk: &[u8]) {
        self.bytes += chunk.len() as u64;
        self.tail.push(chunk);
        if let Some(log) = self.log.as_mut()
            && let Err(err) = async {
                log.write_all(chunk).await?;
                log.flush().await
            }
            .await
        {
            self.fail(err);
        }
    }

    async fn finish(&mut self) {
        if let Some(log) = self.log.as_mut()
            && let Err(err) = log.flush().await
        {
            self.fail(err);
        }
        self.log = None;
    }

    fn fail(&mut self, err: io::Error) {
        tracing::warn!(path = %self.path.display(), %err, "writing the role's log failed; the log is incomplete");
        self.error = Some(format!("writing {} failed: {err}", self.path.display()));
        self.log = None;
    }

    fn tail_string(&self, tail_bytes: usize) -> String {
        lossy_tail(self.tail.last(tail_bytes), self.bytes > tail_bytes as u64)
    }
}

/// Reads from a pipe that may already be closed (then never completes).
async fn read_opt<R: AsyncRead + Unpin>(pipe: &mut Option<R>, buf: &mut [u8]) -> io::Result<usize> {
    match pipe {
        Some(pipe) => pipe.read(buf).await,
        None => std::future::pending().await,
    }
}

/// Sleeps until `at`, or forever if there is no `at`.
async fn sleep_opt(at: Option<Instant>) {
    match at {
        Some(at) => sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn ending_of(status: ExitStatus) -> Ending {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Ending::Exited(code),
        (None, Some(signal)) => Ending::Signaled(signal),
        (None, None) => Ending::Exited(-1),
    }
}

fn exec_error(program: &str, path: &Path, source: io::Error) -> SpawnError {
    if source.kind() == io::ErrorKind::PermissionDenied {
        return SpawnError::NotExecutable { program: program.to_owned(), path: path.to_owned() };
    }
    SpawnError::Exec { program: program.to_owned(), path: path.to_owned(), source }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine spawns runs as tasks, so the future must be `Send`.
    #[allow(dead_code)]
    fn run_future_is_send(supervisor: &Supervisor, spec: ProcessSpec) {
        fn assert_send<T: Send>(_: T) {}
        assert_send(supervisor.run(spec, None, CancellationToken::new(), |_, _| {}, |_| {}));
    }

    #[test]
    fn the_worktree_is_probed_no_more_often_than_a_stall_decision_needs() {
        let supervisor = Supervisor::new();
        assert_eq!(supervisor.probe_interval(Duration::from_secs(600)), Duration::from_secs(30));
        assert_eq!(supervisor.probe_interval(Duration::from_secs(10)), Duration::from_secs(2));
        let fast = supervisor.with_watchdog_interval(Duration::ZERO);
        assert_eq!(fast.watchdog_interval(), Duration::from_millis(1));
    }
}
