//! Running breeze on the replay: `breeze run`, SIGKILLed at random times when asked, each
//! time followed by `breeze resume`, until a run ends.

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::setup::Prepared;
use super::{Git, ReplayError, ReplayOptions};

/// The longest a replay may take before it is called stuck.
const GIVE_UP: Duration = Duration::from_secs(3600);

/// How breeze was driven.
#[derive(Debug, Clone)]
pub struct Driven {
    /// From the first start to the last exit.
    pub wall_seconds: f64,
    /// Seconds after its start each killed invocation was killed.
    pub kills: Vec<f64>,
}

/// Runs breeze until a run ends with exit 0, killing it `options.kills` times, each after
/// a random delay up to `kill_window` seconds. After each kill, main must not hold any task
/// twice.
pub fn drive(
    git: Git,
    options: &ReplayOptions,
    prepared: &Prepared,
    base: &str,
    kill_window: f64,
) -> Result<Driven, ReplayError> {
    let mut rng = Rng::new(options.seed);
    let started = Instant::now();
    let mut kills = Vec::new();
    let mut resume = false;
    for invocation in 1.. {
        let name = format!("{invocation:02}-{}", if resume { "resume" } else { "run" });
        let mut child = spawn(git, options, prepared, resume, &prepared.logs.join(&name))?;
        if kills.len() < options.kills {
            let delay = rng.between(0.2, kill_window.max(0.5));
            if wait_until(&mut child, Instant::now() + Duration::from_secs_f64(delay))?.is_none() {
                // SIGKILL: the engine gets no chance to clean up.
                child
                    .kill()
                    .map_err(|err| ReplayError::new(format!("cannot kill breeze: {err}")))?;
                let _ = child.wait();
                kills.push(delay);
                no_task_twice(git, &prepared.repo, base)?;
                resume = true;
                continue;
            }
        }
        let status = wait_until(&mut child, started + GIVE_UP)?.ok_or_else(|| {
            let _ = child.kill();
            ReplayError::new(format!("breeze did not finish within {} s", GIVE_UP.as_secs()))
        })?;
        if status.success() {
            break;
        }
        let stderr = std::fs::read_to_string(prepared.logs.join(format!("{name}.stderr")))
            .unwrap_or_default();
        if resume && stderr.contains("no run to resume") {
            // Killed before the run had a folder: start it again.
            resume = false;
            continue;
        }
        let stdout = std::fs::read_to_string(prepared.logs.join(format!("{name}.stdout")))
            .unwrap_or_default();
        return Err(ReplayError::new(format!(
            "breeze {} ended with {status}:\n{}\n{}",
            if resume { "resume" } else { "run" },
            tail(&stdout, 20),
            tail(&stderr, 20)
        )));
    }
    Ok(Driven { wall_seconds: started.elapsed().as_secs_f64(), kills })
}

/// `breeze run PLAN` (or `breeze resume`) in the repository, its output in `log.stdout`
/// and `log.stderr`.
fn spawn(
    git: Git,
    options: &ReplayOptions,
    prepared: &Prepared,
    resume: bool,
    log: &Path,
) -> Result<Child, ReplayError> {
    let file = |suffix: &str| {
        let path = log.with_extension(suffix);
        std::fs::File::create(&path).map_err(ReplayError::io(&path))
    };
    let mut command = Command::new(&options.breeze);
    git.prepare(&mut command);
    if resume {
        command.arg("resume");
    } else {
        command.arg("run").arg(&prepared.plan);
    }
    command
        .current_dir(&prepared.repo)
        .stdin(Stdio::null())
        .stdout(file("stdout")?)
        .stderr(file("stderr")?)
        .spawn()
        .map_err(|err| ReplayError::new(format!("cannot run {}: {err}", options.breeze.display())))
}

/// The child's exit status, or `None` if it still runs at `deadline`.
fn wait_until(child: &mut Child, deadline: Instant) -> Result<Option<ExitStatus>, ReplayError> {
    loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|err| ReplayError::new(format!("waiting for breeze: {err}")))?
        {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Fails when a task landed twice on main.
fn no_task_twice(git: Git, repo: &Path, base: &str) -> Result<(), ReplayError> {
    let twice: Vec<String> = super::trailers(git, repo, base)?
        .into_iter()
        .filter(|(_, count)| *count > 1)
        .map(|(id, count)| format!("task {id} landed {count} times"))
        .collect();
    if twice.is_empty() {
        Ok(())
    } else {
        Err(ReplayError::new(format!("after a kill: {}", twice.join("; "))))
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// xorshift64*: reproducible kill times from a seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// Uniform in `[low, high)`.
    fn between(&mut self, low: f64, high: f64) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let unit = (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
        low + unit * (high - low).max(0.0)
    }
}
