//! Replaying a real repository's history as a breeze run — the project's benchmark of the
//! Lead (`scripts/bench/replay-bench.sh`) and the test that keeps it working on a synthetic
//! history (`tests/e2e/replay.rs`).
//!
//! The last N first-parent changes of a local clone become a plan: one task per change,
//! its write set the paths the change touched, its dependencies the previous change to
//! each of those paths. Each task's worker (a `command` shell role, no AI) waits the
//! configured work time, then applies exactly that upstream change in its lane — deletions,
//! then the changed entries copied from the upstream commit with their modes and symbolic
//! links. The reviewer is breeze's scripted one, which approves. Then breeze runs (SIGKILLed
//! at random times and resumed, if asked), and the replay reports what the journal says —
//! tasks landed, makespan, lanes used, verify time per landing — beside the list-scheduling
//! bound of the plan on the same lanes, and checks that main ends with exactly upstream's
//! tree and every task landed exactly once.

mod drive;
mod history;
mod journal;
mod schedule;
mod setup;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

pub use history::{After, Change, History, Touched};
pub use journal::RunFacts;
pub use schedule::{PlanShape, Schedule};

/// What to replay and how.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// The `breeze` binary.
    pub breeze: PathBuf,
    /// A local clone of the repository to replay (read only).
    pub upstream: PathBuf,
    /// The newest change to replay (`HEAD` of the clone by default).
    pub rev: String,
    /// How many first-parent changes that change the tree to replay.
    pub changes: usize,
    /// A folder for the replay (created; the breeze repository is `work/repo`).
    pub work: PathBuf,
    /// How long each worker takes before applying its change, in seconds.
    pub worker_seconds: f64,
    /// `run.max_workers`.
    pub lanes: u32,
    /// A shell command run as `land.verify` on every landing (`sh -c CMD`).
    pub verify: Option<String>,
    /// How many times the engine is SIGKILLed and resumed.
    pub kills: usize,
    /// Seed of the kill times.
    pub seed: u64,
    /// Runs git and breeze without the machine's git configuration (tests).
    pub hermetic: bool,
}

impl ReplayOptions {
    /// Options with the benchmark's defaults: 30 changes up to `HEAD`, 2 s per worker, 3
    /// lanes, no verify, no kills.
    pub fn new(breeze: &Path, upstream: &Path, work: &Path) -> ReplayOptions {
        ReplayOptions {
            breeze: breeze.to_path_buf(),
            upstream: upstream.to_path_buf(),
            rev: "HEAD".into(),
            changes: 30,
            work: work.to_path_buf(),
            worker_seconds: 2.0,
            lanes: 3,
            verify: None,
            kills: 0,
            seed: 1,
            hermetic: false,
        }
    }
}

/// What went wrong, in words for the person running the replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayError(pub String);

impl ReplayError {
    fn new(message: impl Into<String>) -> ReplayError {
        ReplayError(message.into())
    }

    fn io(path: &Path) -> impl Fn(std::io::Error) -> ReplayError + '_ {
        move |err| ReplayError(format!("{}: {err}", path.display()))
    }
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReplayError {}

/// The `git` CLI, hermetic or with the machine's configuration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Git {
    hermetic: bool,
}

impl Git {
    /// Applies the environment to any command that runs git (git itself, breeze).
    fn prepare(self, command: &mut Command) {
        if self.hermetic {
            crate::git::hermetic(command);
        }
    }

    fn bytes(self, dir: &Path, args: &[&str]) -> Result<Vec<u8>, ReplayError> {
        let mut command = Command::new("git");
        self.prepare(&mut command);
        let output = command
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .map_err(|err| ReplayError::new(format!("cannot run git: {err}")))?;
        if !output.status.success() {
            return Err(ReplayError::new(format!(
                "git {} in {}: {}",
                args.join(" "),
                dir.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        Ok(output.stdout)
    }

    fn text(self, dir: &Path, args: &[&str]) -> Result<String, ReplayError> {
        Ok(String::from_utf8_lossy(&self.bytes(dir, args)?).into_owned())
    }

    fn line(self, dir: &Path, args: &[&str]) -> Result<String, ReplayError> {
        Ok(self.text(dir, args)?.trim().to_string())
    }
}

/// What one replay found.
#[derive(Debug, Clone)]
pub struct ReplayReport {
    /// The replayed changes.
    pub history: History,
    /// The plan as `breeze plan --json` analysed it.
    pub plan: PlanShape,
    /// What the journal says about the run.
    pub facts: RunFacts,
    /// Wall-clock seconds from the first `breeze run` to the last exit.
    pub wall_seconds: f64,
    /// The list-scheduling bound with each task's measured worker time.
    pub bound: Schedule,
    /// The same with every task taking the configured worker time.
    pub nominal_bound: Schedule,
    /// Lanes the bound was computed for.
    pub lanes: u32,
    /// When the engine was SIGKILLed (seconds after each start), in order; fewer than asked
    /// when the run ended first.
    pub kills: Vec<f64>,
    /// `Breeze-Task` trailers on main since the base, by task id.
    pub trailers: BTreeMap<String, usize>,
    /// main's tree at the end.
    pub main_tree: String,
    /// The upstream tree of the newest replayed change.
    pub upstream_tree: String,
}

impl ReplayReport {
    /// Whether main ends with upstream's tree and every task landed exactly once.
    pub fn faithful(&self) -> bool {
        self.main_tree == self.upstream_tree && self.problems().is_empty()
    }

    /// Tasks not landed exactly once (by trailers on main), as readable lines.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for change in &self.history.changes {
            match self.trailers.get(&change.id).copied().unwrap_or(0) {
                1 => {}
                n => problems.push(format!("task {} landed {n} times", change.id)),
            }
        }
        for id in self.trailers.keys() {
            if !self.history.changes.iter().any(|c| &c.id == id) {
                problems.push(format!("main has a landing of unknown task {id}"));
            }
        }
        problems
    }

    /// Tasks on main whose landing the journal does not tell (no `task_state landed`
    /// event): what follows the journal (`watch`, `--json` readers, the HTML timeline) would
    /// see them stuck. Issue 23 asks for none after any kill.
    pub fn journal_gaps(&self) -> Vec<String> {
        self.trailers
            .keys()
            .filter(|id| {
                !self.facts.states.get(*id).is_some_and(|states| states.contains_key("landed"))
            })
            .cloned()
            .collect()
    }

    /// The journal's makespan over the list-scheduling bound.
    pub fn ratio(&self) -> f64 {
        self.facts.makespan() / self.bound.list
    }
}

impl fmt::Display for ReplayReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = &self.history;
        let widest = self.plan.widest.map_or("-".to_string(), |w| w.to_string());
        let touched = h.changes.iter().map(|c| c.touched.len()).max().unwrap_or(0);
        writeln!(
            f,
            "replayed {} changes {}..{} ({} empty skipped; the largest touches {touched} paths)",
            h.changes.len(),
            short(&h.base),
            short(&h.last),
            h.empty.len()
        )?;
        writeln!(
            f,
            "plan: {} write group(s), lanes {}, widest {widest}, critical path {} tasks, {} conflicting pairs",
            self.plan.groups,
            self.plan.workers,
            self.plan.critical_path_tasks(),
            self.plan.conflicts.len()
        )?;
        let landed = self.facts.landed.len();
        writeln!(
            f,
            "landed {}/{} tasks on main ({landed} `landed` events in the journal) · makespan {:.1} s (journal), {:.1} s wall · lanes used {:?}",
            self.trailers.len(),
            h.changes.len(),
            self.facts.makespan(),
            self.wall_seconds,
            self.facts.lanes
        )?;
        writeln!(
            f,
            "bound on {} lanes: list scheduling {:.1} s (critical path {:.1} s, work/lanes {:.1} s) with measured worker times; {:.1} s with {:.1} s each · ratio makespan/bound {:.2}",
            self.lanes,
            self.bound.list,
            self.bound.critical_path,
            self.bound.work_per_lane,
            self.nominal_bound.list,
            self.nominal_bound.task_seconds,
            self.ratio()
        )?;
        let stages = self.facts.stage_seconds();
        writeln!(
            f,
            "per task (mean): worker {:.2} s · until review {:.2} s · review {:.2} s · landing {:.2} s (from approval to landed)",
            self.facts.mean_worker_seconds(),
            stages.working,
            stages.reviewing,
            stages.landing
        )?;
        match self.facts.verify.len() {
            0 => writeln!(f, "verify: none")?,
            runs => writeln!(
                f,
                "verify: {runs} runs, {:.1} s in all, {:.2} s per landed task",
                self.facts.verify.iter().sum::<f64>(),
                self.facts.verify.iter().sum::<f64>() / self.trailers.len().max(1) as f64
            )?,
        }
        if !self.kills.is_empty() {
            let at: Vec<String> = self.kills.iter().map(|s| format!("{s:.2}")).collect();
            writeln!(
                f,
                "kills: {} (SIGKILL after {} s), each followed by `breeze resume`",
                at.len(),
                at.join(", ")
            )?;
        }
        let gaps = self.journal_gaps();
        if !gaps.is_empty() {
            writeln!(
                f,
                "journal: no `task_state landed` event for task(s) {} although on main (issue 23)",
                gaps.join(", ")
            )?;
        }
        let problems = self.problems();
        writeln!(
            f,
            "main's tree {} upstream's at {} ({}); every task landed exactly once: {}",
            if self.main_tree == self.upstream_tree { "equals" } else { "DIFFERS FROM" },
            short(&h.last),
            short(&self.main_tree),
            if problems.is_empty() { "yes".to_string() } else { problems.join("; ") }
        )
    }
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// Replays the history: prepares the repository and plan, runs breeze (with kills and
/// resumes), and measures.
pub fn replay(options: &ReplayOptions) -> Result<ReplayReport, ReplayError> {
    let git = Git { hermetic: options.hermetic };
    let history = history::read(git, &options.upstream, &options.rev, options.changes)?;
    let prepared = setup::prepare(git, options, &history)?;
    let plan = PlanShape::read(git, &options.breeze, &prepared)?;
    let nominal = plan.bound(&vec![options.worker_seconds; plan.tasks.len()], options.lanes);
    // Kills spread over the first half of the time the run should take (on average), so
    // every one of them comes before the run ends.
    let kill_window = (nominal.list + 1.0) / (options.kills + 1) as f64;
    let driven = drive::drive(git, options, &prepared, &history.base, kill_window)?;
    let facts = RunFacts::read(&prepared.repo)?;
    let measured: Vec<f64> = (plan.tasks.iter())
        .map(|t| facts.worker.get(&t.id).copied().unwrap_or(options.worker_seconds))
        .collect();
    let bound = plan.bound(&measured, options.lanes);
    let main_tree = git.line(&prepared.repo, &["rev-parse", "main^{tree}"])?;
    let upstream_tree =
        git.line(&options.upstream, &["rev-parse", &format!("{}^{{tree}}", history.last)])?;
    let trailers = trailers(git, &prepared.repo, &history.base)?;
    Ok(ReplayReport {
        history,
        plan,
        facts,
        wall_seconds: driven.wall_seconds,
        bound,
        nominal_bound: nominal,
        lanes: options.lanes,
        kills: driven.kills,
        trailers,
        main_tree,
        upstream_tree,
    })
}

/// `Breeze-Task` trailers of main's commits since `base`, counted by task id.
fn trailers(git: Git, repo: &Path, base: &str) -> Result<BTreeMap<String, usize>, ReplayError> {
    let log = git.text(
        repo,
        &["log", "--format=%(trailers:key=Breeze-Task,valueonly)", &format!("{base}..main")],
    )?;
    let mut counts = BTreeMap::new();
    for id in log.lines().map(str::trim).filter(|l| !l.is_empty()) {
        *counts.entry(id.to_string()).or_insert(0) += 1;
    }
    Ok(counts)
}
