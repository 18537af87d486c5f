//! Kills during a landing. A landing writes the user's checkout of main and moves main; a
//! SIGKILL at any moment of it must leave a run that `breeze resume` finishes: main holding
//! the task once, the checkout equal to main with the user's own edits kept, no stray files,
//! and a journal that tells the whole story (one `task_state landed` per landed task).
//! Also the one kill point outside a landing: a lane parked at main's tip to see whether a
//! failing `[review] checks` command is main's own.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use breeze_protocol::{BreezeEvent, EventKind, TaskState};

use crate::support::{
    SCRIPTED_CONFIG, both, breeze, git, killed_at, repo_with, run_in, shell_worker_config,
    status_json, stdout, task_state, toml_task, write,
};

/// New files the big task lands.
const FILES: usize = 3000;
/// Killed landings in a default (CI) run; `BREEZE_LANDING_KILLS=n` asks for a longer stress.
const DEFAULT_KILLS: usize = 5;
/// The file of the big task the user writes while the engine is dead.
const USER_FILE: &str = "big/0007";

/// A small random generator (xorshift64*). Seeded with `BREEZE_KILL_SEED` when set, else
/// with a fixed seed, so that CI draws the same kill points every time; the seed is printed
/// and named in the failure messages of the tests that take one.
struct Rng(u64);

/// The seeds a test draws its kill points from when `BREEZE_KILL_SEED` is not set.
const DEFAULT_SEEDS: &[u64] = &[0x5eed_0001, 0x5eed_0002];

impl Rng {
    /// `BREEZE_KILL_SEED` (one seed), else [`DEFAULT_SEEDS`].
    fn seeds() -> Vec<u64> {
        match std::env::var("BREEZE_KILL_SEED") {
            Ok(seed) => vec![seed.parse().expect("BREEZE_KILL_SEED is a number")],
            Err(_) => DEFAULT_SEEDS.to_vec(),
        }
    }

    fn from_env() -> Rng {
        Rng::seeded(Rng::seeds()[0])
    }

    fn seeded(seed: u64) -> Rng {
        eprintln!("landing kills: BREEZE_KILL_SEED={seed}");
        Rng(seed | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Waits until `ready` holds or `child` exits (`false` then); 60 s at most.
fn wait_until(child: &mut Child, what: &str, mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if ready() {
            return true;
        }
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The journal of the repository's only run.
fn journal_path(root: &Path) -> Option<PathBuf> {
    let runs = root.join(".breeze/runs");
    let run = std::fs::read_dir(runs).ok()?.next()?.ok()?.path();
    Some(run.join("events.jsonl"))
}

fn journal(root: &Path) -> Vec<BreezeEvent> {
    let path = journal_path(root).expect("the run has a journal");
    breeze_engine::journal::read_events(&path).expect("the journal reads")
}

/// The journal's text after its first `from` bytes.
fn journal_text_after(root: &Path, from: usize) -> String {
    let text = journal_path(root).and_then(|p| std::fs::read(p).ok()).unwrap_or_default();
    String::from_utf8_lossy(text.get(from..).unwrap_or_default()).into_owned()
}

/// Commits on main whose `Breeze-Task` trailer is `task`.
fn landings_of(root: &Path, task: &str) -> usize {
    git(root, &["log", "--format=%(trailers:key=Breeze-Task,valueonly)", "main"])
        .lines()
        .filter(|line| *line == task)
        .count()
}

/// What the journal says about `task`'s landing: the events after its last `landing`
/// state must hold exactly one `landed` and one `task_state landed`; the landed commit.
fn journal_tells_the_landing(root: &Path, task: &str) -> String {
    let events = journal(root);
    let kinds: Vec<&EventKind> = events.iter().map(|e| &e.event).collect();
    let is_state = |kind: &EventKind, wanted: TaskState| matches!(kind, EventKind::TaskState { task: t, state, .. } if t == task && *state == wanted);
    let last_landing = kinds
        .iter()
        .rposition(|kind| is_state(kind, TaskState::Landing))
        .unwrap_or_else(|| panic!("no `landing` state for task {task}: {kinds:#?}"));
    let after = &kinds[last_landing..];
    let states_landed = after.iter().filter(|kind| is_state(kind, TaskState::Landed)).count();
    assert_eq!(states_landed, 1, "one `task_state landed` after the last landing: {after:#?}");
    let all_landed = kinds.iter().filter(|kind| is_state(kind, TaskState::Landed)).count();
    assert_eq!(all_landed, 1, "one `task_state landed` in all: {kinds:#?}");
    let landed: Vec<&String> = kinds
        .iter()
        .filter_map(|kind| match kind {
            EventKind::Landed { task: t, commit, .. } if t == task => Some(commit),
            _ => None,
        })
        .collect();
    assert_eq!(landed.len(), 1, "one `landed` event: {kinds:#?}");
    let last_state = kinds
        .iter()
        .rev()
        .find_map(|kind| match kind {
            EventKind::TaskState { task: t, state, .. } if t == task => Some(*state),
            _ => None,
        })
        .unwrap();
    assert_eq!(last_state, TaskState::Landed, "the task's last state is landed");
    landed[0].clone()
}

/// Nothing breeze wrote is left in the checkout or its git folder: every untracked or
/// ignored file is breeze's own state (`.breeze/`, `.harness-worktrees/`), no index lock,
/// no scratch folder in `.git`.
fn assert_no_stray_files(root: &Path, changed: &str) {
    let every = git(root, &["status", "--porcelain", "--ignored", "--untracked-files=normal"]);
    let strays: Vec<&str> = every
        .lines()
        .filter(|line| {
            !line.starts_with("!! .breeze/") && !line.starts_with("!! .harness-worktrees/")
        })
        .filter(|line| *line != changed)
        .collect();
    assert!(strays.is_empty(), "stray files in the checkout: {strays:?}\n{every}");
    assert!(!root.join(".git/index.lock").exists(), "a stale .git/index.lock");
    let leftovers: Vec<String> = std::fs::read_dir(root.join(".git"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("breeze"))
        .collect();
    assert!(leftovers.is_empty(), "scratch files left in .git: {leftovers:?}");
}

/// The repository every killed landing starts from: a shell worker adds [`FILES`] files
/// under `big/`; the user has main checked out.
fn big_landing_template() -> (tempfile::TempDir, PathBuf) {
    let (temp, root) = repo_with(&[("README.md", "r\n"), ("notes.txt", "the user's notes\n")]);
    // One line per file, big/0000 … big/2999, written by one process.
    let worker = format!(
        "cat > /dev/null\nmkdir -p big\nseq 1 {FILES} | split -l 1 -a 4 -d - big/\nprintf '{{\"schema_version\":\"worker-report.v1\",\"status\":\"completed\",\"summary\":\"ok\"}}' > \"$BREEZE_OUTPUT\"\n"
    );
    let script = temp.path().join("worker.sh");
    std::fs::write(&script, worker).unwrap();
    std::fs::write(root.join("breeze.toml"), shell_worker_config(&script, "")).unwrap();
    std::fs::write(root.join("plan.toml"), toml_task("1", "Many files", &["big/**"], "")).unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "plan"]);
    (temp, root)
}

/// When a kill comes.
#[derive(Debug, Clone, Copy)]
enum KillAt {
    /// After this long once the task's landing started (its `landing` state).
    Landing(Duration),
    /// After this long once the landing's first file is in the user's checkout.
    Writing(Duration),
}

/// Starts `breeze args`, kills it with SIGKILL as `kill` says; whether it was killed (it
/// may have ended first).
fn run_and_kill(root: &Path, args: &[&str], kill: KillAt) -> bool {
    let journal_len =
        journal_path(root).and_then(|p| std::fs::metadata(p).ok()).map_or(0, |m| m.len()) as usize;
    let mut child = breeze()
        .current_dir(root)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = match kill {
        KillAt::Landing(_) => wait_until(&mut child, "the landing", || {
            journal_text_after(root, journal_len).contains("\"state\":\"landing\"")
        }),
        KillAt::Writing(_) => {
            wait_until(&mut child, "the checkout update", || root.join("big").exists())
        }
    };
    if started {
        let (KillAt::Landing(delay) | KillAt::Writing(delay)) = kill;
        std::thread::sleep(delay);
    }
    let killed = child.try_wait().unwrap().is_none();
    if killed {
        child.kill().unwrap(); // SIGKILL
    }
    let status = child.wait().unwrap();
    // It may have ended by itself between the look and the kill (the signal then meets a
    // process that is already gone): an exit of its own is not a kill, a crash is a failure.
    let killed = killed && status.signal() == Some(9);
    assert!(
        killed || status.code().is_some(),
        "the engine died of SIGKILL or ended by itself, not of a crash: {status:?}"
    );
    killed
}

/// How long a landing took, from its `landing` state to `landed`, in the journal.
fn landing_took(root: &Path) -> Option<Duration> {
    let events = journal(root);
    let millis = |event: &BreezeEvent| {
        let time = event.at.rsplit('T').next()?.trim_end_matches('Z').to_string();
        let mut parts = time.split(':');
        let (h, m, s): (u64, u64, f64) =
            (parts.next()?.parse().ok()?, parts.next()?.parse().ok()?, parts.next()?.parse().ok()?);
        Some((h * 3_600_000 + m * 60_000) as f64 + s * 1000.0)
    };
    let landed = events.iter().rposition(|e| matches!(e.event, EventKind::Landed { .. }))?;
    let landing = events[..landed]
        .iter()
        .rposition(|e| matches!(e.event, EventKind::TaskState { state: TaskState::Landing, .. }))?;
    // Only a landing one engine made from start to end tells how long one takes.
    if events[landing..landed].iter().any(|e| matches!(e.event, EventKind::RunStarted { .. })) {
        return None;
    }
    let took = millis(&events[landed])? - millis(&events[landing])?;
    (took > 0.0).then(|| Duration::from_micros((took * 1000.0) as u64))
}

/// One landing of the big task killed one to three times at random moments (the first
/// in `breeze run`, the others in the `breeze resume`s that land it again), the user
/// writing one of its files while the engine is dead, then resumed until done.
fn one_killed_landing(template: &Path, root: &Path, rng: &mut Rng, window: &mut Duration) {
    let status = std::process::Command::new("cp").arg("-a").arg(template).arg(root).status();
    assert!(status.unwrap().success());
    let notes = "the user's notes\nan uncommitted edit of the user's\n";
    write(root, "notes.txt", notes);

    let kills = 1 + rng.below(3);
    let mut args = ["run"];
    let mut killed = 0;
    while killed < kills {
        let delay = Duration::from_micros(rng.below(window.as_micros() as u64 + 1));
        let kill = if killed == 0 && rng.below(2) == 0 {
            KillAt::Writing(delay / 3)
        } else {
            KillAt::Landing(delay)
        };
        eprintln!("  kill {} at {kill:?}", killed + 1);
        if !run_and_kill(root, &args, kill) {
            break;
        }
        killed += 1;
        args = ["resume"];
    }

    // While no engine runs, the user writes a file the landing adds.
    write(root, USER_FILE, "mine\n");
    let mut resumed = run_in(root, &["resume"]);
    if status_json(root)["state"] == "succeeded" && resumed.status.code() == Some(2) {
        // The engine finished before any kill: there was nothing to resume.
        resumed = run_in(root, &["status"]);
    }
    match resumed.status.code() {
        Some(0) => {
            // main moved before the kill: the landing is done, the user's file is kept.
            assert_eq!(std::fs::read_to_string(root.join(USER_FILE)).unwrap(), "mine\n");
            git(root, &["checkout", "--", USER_FILE]);
        }
        Some(3) => {
            // main had not moved: the landing waits for the user's file, and names only it.
            let text = stdout(&resumed);
            assert!(
                text.contains(&format!("landing touches `{USER_FILE}` with uncommitted changes")),
                "the deferral names the user's file and nothing of breeze's: {}",
                both(&resumed)
            );
            assert_eq!(std::fs::read_to_string(root.join(USER_FILE)).unwrap(), "mine\n");
            std::fs::rename(root.join(USER_FILE), root.join("../mine.txt")).unwrap();
            let done = run_in(root, &["resume"]);
            assert_eq!(done.status.code(), Some(0), "{}", both(&done));
        }
        _ => panic!("resume after the kills: {}", both(&resumed)),
    }

    assert_eq!(landings_of(root, "1"), 1, "main holds the task once");
    let files = git(root, &["ls-tree", "-r", "--name-only", "main", "big/"]);
    assert_eq!(files.lines().count(), FILES);
    assert_eq!(std::fs::read_to_string(root.join("notes.txt")).unwrap(), notes);
    assert_eq!(git(root, &["status", "--porcelain"]), " M notes.txt\n");
    assert_eq!(git(root, &["diff", "main", "--name-only"]), "notes.txt\n");
    assert_no_stray_files(root, " M notes.txt");
    journal_tells_the_landing(root, "1");
    if let Some(took) = landing_took(root) {
        *window = (*window).max(took);
    }
}

#[test]
fn a_landing_killed_at_random_moments_is_finished_by_resume() {
    let kills: usize = std::env::var("BREEZE_LANDING_KILLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_KILLS);
    let (temp, template) = big_landing_template();
    let mut rng = Rng::from_env();
    // How long a landing takes, learnt from the landings seen (the kills fall inside it).
    let mut window = Duration::from_millis(600);
    for n in 0..kills {
        eprintln!("landing {} of {kills} (window {window:?})", n + 1);
        let root = temp.path().join(format!("landing-{n}"));
        let started = Instant::now();
        one_killed_landing(&template, &root, &mut rng, &mut window);
        eprintln!("  finished in {:?}", started.elapsed());
        std::fs::remove_dir_all(&root).unwrap();
    }
    git(&template, &["fsck", "--strict"]);
}

/// The named steps of a landing where `BREEZE_TEST_KILL_AT=landing:<step>` kills the engine.
const KILL_STEPS: &[&str] = &[
    "merged",
    "committed",
    "verified",
    "checkout-journaled",
    "checkout-half",
    "checkout-written",
    "main-moved",
    "landed-journaled",
    "state-saved",
    "state-journaled",
];

#[test]
fn a_landing_killed_at_each_step_is_finished_and_journaled_once() {
    let config = format!("{SCRIPTED_CONFIG}\n[land]\nverify = [\"true\"]\n");
    let plan =
        toml_task("1", "Four files", &["src/a.txt", "src/b.txt", "src/c.txt", "src/d.txt"], "");
    for step in KILL_STEPS {
        let (_temp, root) = repo_with(&[
            ("breeze.toml", &config),
            ("plan.toml", &plan),
            ("src/a.txt", "a\n"),
            ("src/b.txt", "b\n"),
        ]);
        let killed = breeze()
            .current_dir(&root)
            .args(["run"])
            .env("BREEZE_TEST_KILL_AT", format!("landing:{step}"))
            .output()
            .unwrap();
        assert_eq!(
            killed.status.signal(),
            Some(9),
            "the engine kills itself at landing:{step}: {}",
            both(&killed)
        );
        let resumed = run_in(&root, &["resume"]);
        assert_eq!(resumed.status.code(), Some(0), "killed at {step}: {}", both(&resumed));
        assert_eq!(landings_of(&root, "1"), 1, "killed at {step}: main holds the task once");
        let commit = journal_tells_the_landing(&root, "1");

        // `breeze status --json` and the journal agree.
        let status = status_json(&root);
        assert_eq!(status["state"], "succeeded", "killed at {step}: {status}");
        assert_eq!(status["tasks"][0]["state"], "landed", "killed at {step}: {status}");
        assert_eq!(status["tasks"][0]["commit"], commit.as_str(), "killed at {step}: {status}");
        let events = journal(&root);
        assert!(
            matches!(
                events.last().map(|e| &e.event),
                Some(EventKind::RunFinished { state: breeze_protocol::RunState::Succeeded })
            ),
            "killed at {step}: the journal ends with the run's success"
        );

        // The checkout is main, and nothing of the landing's is left over.
        assert_eq!(git(&root, &["status", "--porcelain"]), "", "killed at {step}");
        assert_eq!(git(&root, &["diff", "main"]), "", "killed at {step}");
        assert_no_stray_files(&root, "");

        // What follows the journal sees the task landed: `breeze watch`'s model and the
        // timeline of `breeze report --html`.
        let mut model = breeze_cli::live::model::LiveModel::default();
        for event in &events {
            model.apply(event);
        }
        let view = model.tasks.iter().find(|task| task.id == "1").unwrap();
        assert_eq!(view.state, TaskState::Landed, "killed at {step}: the live view");
        let report = run_in(&root, &["report", "--html"]);
        assert_eq!(report.status.code(), Some(0), "{}", both(&report));
        let page = std::fs::read_to_string(stdout(&report).trim()).unwrap();
        assert!(
            page.contains("data-task=\"1\" data-ended=\"landed\""),
            "killed at {step}: the timeline shows the landing"
        );
    }
}

#[test]
fn abort_after_a_kill_half_way_through_the_checkout_puts_it_back() {
    let plan =
        toml_task("1", "Four files", &["src/a.txt", "src/b.txt", "src/c.txt", "src/d.txt"], "");
    let (_temp, root) = repo_with(&[
        ("breeze.toml", SCRIPTED_CONFIG),
        ("plan.toml", &plan),
        ("src/a.txt", "a\n"),
        ("src/b.txt", "b\n"),
    ]);
    let main = git(&root, &["rev-parse", "main"]);
    killed_at(&root, &["run"], "landing:checkout-half");
    assert_ne!(git(&root, &["status", "--porcelain"]), "", "the kill left the update half done");

    let aborted = run_in(&root, &["abort"]);
    assert_eq!(aborted.status.code(), Some(0), "{}", both(&aborted));
    assert_eq!(git(&root, &["rev-parse", "main"]), main, "main never moved");
    assert_eq!(git(&root, &["status", "--porcelain"]), "", "the checkout is main again");
    assert_no_stray_files(&root, "");
}

/// Steps of a batch landing (`land.batch`) where a kill cuts it short: before it is
/// verified, after (a failing task found by bisection), while the user's checkout is
/// written, once main moved, once the first landing is recorded.
const BATCH_KILL_STEPS: &[&str] =
    &["batch-merged", "batch-verified", "checkout-half", "main-moved", "state-saved"];

/// The batch test's verify: fails while task 3's first attempt is in the tree.
const BATCH_VERIFY: &str = "if [ -f src/three.txt ] && ! grep -q 'attempt 2' src/three.txt; then echo 'FAILED test_three: three is broken'; exit 1; fi";

/// Whether `root`'s main, exported with the git CLI, passes [`BATCH_VERIFY`].
fn main_passes_batch_verify(root: &Path) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let export =
        format!("git -C {} archive main | tar -x -C {}", root.display(), dir.path().display());
    assert!(std::process::Command::new("sh").args(["-c", &export]).status().unwrap().success());
    let mut verify = std::process::Command::new("sh");
    verify.args(["-c", BATCH_VERIFY]).current_dir(dir.path());
    verify.status().unwrap().success()
}

#[test]
fn a_batch_killed_at_each_step_lands_every_task_once() {
    let config = format!(
        "{SCRIPTED_CONFIG}\n[land]\nbatch = 3\nrequire_approval = true\nverify = [\"sh\", \"-c\", {BATCH_VERIFY:?}]\n"
    );
    let plan = toml_task("1", "One", &["src/one.txt"], "")
        + &toml_task("2", "Two", &["src/two.txt"], "")
        + &toml_task("3", "Three", &["src/three.txt"], "");
    for step in BATCH_KILL_STEPS {
        let (_temp, root) =
            repo_with(&[("breeze.toml", &config), ("plan.toml", &plan), ("README.md", "r\n")]);
        // The three wait for a person, who approves them at once: one batch of three, in
        // which bisection finds task 3.
        let reviewed = run_in(&root, &["run"]);
        assert_eq!(reviewed.status.code(), Some(3), "{}", both(&reviewed));
        assert_eq!(run_in(&root, &["approve", "1", "2", "3"]).status.code(), Some(0));
        killed_at(&root, &["resume"], &format!("landing:{step}"));

        // Resumed: tasks 1 and 2 land (once), task 3 goes back, is reworked and waits for
        // the person again.
        let resumed = run_in(&root, &["resume"]);
        assert_eq!(resumed.status.code(), Some(3), "killed at {step}: {}", both(&resumed));
        let status = status_json(&root);
        for (id, state) in [("1", "landed"), ("2", "landed"), ("3", "awaiting-approval")] {
            assert_eq!(task_state(&status, id), state, "killed at {step}: {status}");
        }
        assert_eq!(run_in(&root, &["approve", "3"]).status.code(), Some(0));
        let done = run_in(&root, &["resume"]);
        assert_eq!(done.status.code(), Some(0), "killed at {step}: {}", both(&done));

        for id in ["1", "2", "3"] {
            assert_eq!(landings_of(&root, id), 1, "killed at {step}: task {id} once on main");
            journal_tells_the_landing(&root, id);
        }
        assert!(main_passes_batch_verify(&root), "killed at {step}: main passes verify");
        assert_eq!(git(&root, &["status", "--porcelain"]), "", "killed at {step}");
        assert_no_stray_files(&root, "");
    }
}

/// Steps of a speculative train (`land.queue_depth`, the default) where a kill cuts it
/// short: while its landings are built, once they are verified side by side (task 2 the
/// culprit), while the user's checkout is written, once main moved onto the first landing,
/// once that landing is journaled and recorded.
const TRAIN_KILL_STEPS: &[&str] = &[
    "merged",
    "committed",
    "verified",
    "checkout-half",
    "main-moved",
    "landed-journaled",
    "state-saved",
];

/// The train test's verify: fails while task 2's first attempt is in the tree.
const TRAIN_VERIFY: &str = "if [ -f src/two.txt ] && ! grep -q 'attempt 2' src/two.txt; then echo 'FAILED test_two: two is broken'; exit 1; fi";

#[test]
fn a_speculative_train_killed_at_each_step_lands_every_task_once_in_order() {
    let config = format!(
        "{SCRIPTED_CONFIG}\n[land]\nrequire_approval = true\nverify = [\"sh\", \"-c\", {TRAIN_VERIFY:?}]\n"
    );
    let plan = toml_task("1", "One", &["src/one.txt"], "")
        + &toml_task("2", "Two", &["src/two.txt"], "")
        + &toml_task("3", "Three", &["src/three.txt"], "");
    for step in TRAIN_KILL_STEPS {
        let (_temp, root) =
            repo_with(&[("breeze.toml", &config), ("plan.toml", &plan), ("README.md", "r\n")]);
        // The three wait for a person, who approves them at once: one train, main+1,
        // main+1+2 and main+1+2+3 verified side by side; task 2 is the culprit.
        let reviewed = run_in(&root, &["run"]);
        assert_eq!(reviewed.status.code(), Some(3), "{}", both(&reviewed));
        assert_eq!(run_in(&root, &["approve", "1", "2", "3"]).status.code(), Some(0));
        killed_at(&root, &["resume"], &format!("landing:{step}"));

        // Resumed: tasks 1 and 3 land (once), task 2 goes back, is reworked and waits for
        // the person again.
        let resumed = run_in(&root, &["resume"]);
        assert_eq!(resumed.status.code(), Some(3), "killed at {step}: {}", both(&resumed));
        let status = status_json(&root);
        for (id, state) in [("1", "landed"), ("2", "awaiting-approval"), ("3", "landed")] {
            assert_eq!(task_state(&status, id), state, "killed at {step}: {status}");
        }
        assert_eq!(run_in(&root, &["approve", "2"]).status.code(), Some(0));
        let done = run_in(&root, &["resume"]);
        assert_eq!(done.status.code(), Some(0), "killed at {step}: {}", both(&done));

        for id in ["1", "2", "3"] {
            assert_eq!(landings_of(&root, id), 1, "killed at {step}: task {id} once on main");
            journal_tells_the_landing(&root, id);
        }
        let order = git(
            &root,
            &[
                "log",
                "--first-parent",
                "--reverse",
                "--format=%(trailers:key=Breeze-Task,valueonly)",
                "main",
            ],
        );
        let order: Vec<&str> = order.split_whitespace().collect();
        assert_eq!(order, ["1", "3", "2"], "killed at {step}: main moved in the queue's order");
        assert_eq!(git(&root, &["status", "--porcelain"]), "", "killed at {step}");
        assert_no_stray_files(&root, "");
    }
}

#[test]
fn a_batched_run_killed_with_approved_tasks_waiting_resumes_without_taking_their_lanes() {
    // Two lanes, five tasks, batches of three, a verify that takes a second: while the
    // first batch is verified, the other approved task waits to land and a third task
    // works in the lane it left. Killed then, the resumed run must put the approved task
    // back in the landing queue — not give it a lane, where another task's branch is
    // checked out ("branch task/N is checked out in lane-M") — and land every task once.
    // Reviews are serial and take 0.3 s each: the first approved task's batch is under way
    // (verify takes a second) when the second is approved.
    let reviewer = "sleep 0.3; cat >/dev/null; printf '{\"schema_version\":\"review-result.v1\",\"verdict\":\"APPROVE\",\"checks\":[],\"gaps\":[]}' > \"$BREEZE_OUTPUT\"";
    let config = SCRIPTED_CONFIG.replace("max_workers = 3", "max_workers = 2").replace(
        "[roles.reviewer]\nbackend = \"scripted\"",
        &format!(
            "[roles.reviewer]\nbackend = \"command\"\ncommand = [\"sh\", \"-c\", {reviewer:?}]"
        ),
    ) + "[land]\nbatch = 3\nverify = [\"sleep\", \"1\"]\n";
    assert!(config.contains("backend = \"command\""));
    let plan: String = ["one", "two", "three", "four", "five"]
        .iter()
        .enumerate()
        .map(|(n, name)| toml_task(&(n + 1).to_string(), name, &[&format!("src/{name}.txt")], ""))
        .collect();
    // The moment is one of timing (a verdict taken in while a batch is verified): on a
    // loaded machine the kill may come once the approval is journaled already, and the
    // scenario is played again on a fresh repository, at most three times.
    let killed_waiting = || {
        let (temp, root) =
            repo_with(&[("breeze.toml", &config), ("plan.toml", &plan), ("README.md", "r\n")]);
        let mut child = breeze()
            .current_dir(&root)
            .args(["run"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let count = |kind: &str| journal_text_after(&root, 0).matches(kind).count();
        let waiting =
            wait_until(&mut child, "an approved task waiting while a batch lands", || {
                count("\"kind\":\"landing_batch\"") == 1
                    && count("\"kind\":\"reviewed\"") >= 2
                    && count("\"kind\":\"task_started\"") >= 3
                    && count("\"kind\":\"landed\"") == 0
            });
        assert!(waiting, "the run ended before the moment to kill it");
        child.kill().unwrap(); // SIGKILL
        assert_eq!(child.wait().unwrap().signal(), Some(9));
        let text = journal_text_after(&root, 0);
        let approved_waiting = journal(&root).iter().any(|event| {
            matches!(&event.event, EventKind::Reviewed { task, .. }
                if !text.contains(&format!("\"task\":\"{task}\",\"state\":\"landing\"")))
        });
        approved_waiting.then_some((temp, root))
    };
    let (_temp, root) = (0..3)
        .find_map(|_| killed_waiting())
        .expect("killed with an approved task waiting to land (3 tries)");

    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    for id in ["1", "2", "3", "4", "5"] {
        assert_eq!(landings_of(&root, id), 1, "task {id} once on main");
        journal_tells_the_landing(&root, id);
    }
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
    assert_no_stray_files(&root, "");
}

#[test]
fn a_kill_between_saving_an_approval_and_journaling_it_still_journals_the_landing() {
    // The run's state says the task is approved; the journal has its verdict but not yet
    // its `landing` state. The resumed run lands it from the queue and says so.
    let (_temp, root) = repo_with(&[
        ("breeze.toml", SCRIPTED_CONFIG),
        ("plan.toml", &toml_task("1", "Parser", &["src/parser.txt"], "")),
    ]);
    killed_at(&root, &["run"], "approve:state-saved");
    let said = journal_text_after(&root, 0);
    assert!(said.contains("\"kind\":\"reviewed\""), "killed after the verdict: {said}");
    assert!(!said.contains("\"state\":\"landing\""), "killed before `landing`: {said}");

    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    assert_eq!(landings_of(&root, "1"), 1, "task 1 once on main");
    journal_tells_the_landing(&root, "1");
}

#[test]
fn a_kill_while_a_lane_looks_at_mains_failing_check_resumes_on_the_tasks_branch() {
    // main fails the check already: the lane is parked at the task's base to see it, and
    // the engine is killed there.
    let config = format!("{SCRIPTED_CONFIG}[review]\nchecks = [[\"sh\", \"check.sh\"]]\n");
    let (_temp, root) = repo_with(&[
        ("breeze.toml", &config),
        ("plan.toml", &toml_task("1", "Parser", &["src/parser.txt"], "")),
        ("check.sh", "echo 'FAIL: legacy test'; exit 1\n"),
    ]);
    killed_at(&root, &["run"], "review:lane-at-base");
    let lane = crate::support::lane(&root, "lane-1");
    assert!(!lane.join("src/parser.txt").exists(), "killed with the lane at main's tip");

    let resumed = run_in(&root, &["resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    assert_eq!(task_state(&status_json(&root), "1"), "landed");
    assert_eq!(landings_of(&root, "1"), 1);
    let landed = git(&root, &["show", "--name-only", "--format=", "main"]);
    assert_eq!(landed.trim(), "src/parser.txt", "the task's work, and nothing else, landed");
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
    assert_no_stray_files(&root, "");
}

/// Tasks of the large run killed at random points.
const LARGE_RUN_TASKS: usize = 120;
/// Kills of the large run (each in the `breeze run` or `breeze resume` after the last).
const LARGE_RUN_KILLS: usize = 6;

/// The state a resume starts from (`run.json` with its change lines folded in) agrees with
/// the journal: each task the journal says landed is landed in it, each task landed in it
/// has its landing commit on main — the journal's `landed` commit when it has one (a
/// landing recognized on main by a resume is journaled after it is saved). How many tasks
/// it holds landed.
fn snapshot_agrees_with_journal(root: &Path, at: &str) -> usize {
    let run_dir = journal_path(root).unwrap().parent().unwrap().to_path_buf();
    let snapshot = breeze_engine::snapshot::RunSnapshot::load(&run_dir.join("run.json"))
        .unwrap_or_else(|err| panic!("{at}: the state does not read: {err}"));
    let on_main: std::collections::HashSet<String> =
        git(root, &["rev-list", "main"]).lines().map(str::to_string).collect();
    let mut landed_commits = std::collections::HashMap::new();
    let mut said_landed = Vec::new();
    for event in journal(root) {
        match event.event {
            EventKind::Landed { task, commit, .. } => {
                landed_commits.insert(task, commit);
            }
            EventKind::TaskState { task, state: TaskState::Landed, .. } => said_landed.push(task),
            _ => {}
        }
    }
    for id in &said_landed {
        let task = snapshot.task(id).unwrap_or_else(|| panic!("task {id} is in the state"));
        assert_eq!(
            task.phase,
            breeze_engine::snapshot::TaskPhase::Landed,
            "{at}: the journal says task {id} landed"
        );
    }
    let mut landed = 0;
    for task in &snapshot.tasks {
        if task.phase != breeze_engine::snapshot::TaskPhase::Landed {
            continue;
        }
        landed += 1;
        let commit = task.commit.expect("a landed task has its commit").to_string();
        if let Some(journaled) = landed_commits.get(&task.id) {
            assert_eq!(
                journaled, &commit,
                "{at}: task {} landed as the journal's `landed` says",
                task.id
            );
        }
        assert!(on_main.contains(&commit), "{at}: {commit} is on main");
    }
    landed
}

#[test]
fn a_large_run_killed_at_random_points_resumes_from_a_state_that_agrees_with_its_journal() {
    for seed in Rng::seeds() {
        large_run_killed_at_random_points(seed);
    }
}

/// [`a_large_run_killed_at_random_points_resumes_from_a_state_that_agrees_with_its_journal`]
/// with the kill points drawn from `seed`; every failure message names the seed.
fn large_run_killed_at_random_points(seed: u64) {
    let mut plan = String::new();
    let mut files = vec![("breeze.toml".to_string(), SCRIPTED_CONFIG.to_string())];
    for n in 1..=LARGE_RUN_TASKS {
        let path = format!("src/{n:04}.txt");
        plan += &toml_task(&n.to_string(), &format!("Task {n}"), &[&path], "");
        files.push((path, format!("file {n}\n")));
    }
    files.push(("plan.toml".into(), plan));
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
    let (_temp, root) = repo_with(&files);
    let mut rng = Rng::seeded(seed);

    let mut args = ["run"];
    let mut landed_before = 0;
    for kill in 1..=LARGE_RUN_KILLS {
        let at = format!("BREEZE_KILL_SEED={seed}, kill {kill}");
        // A kill once the journal grew by a random amount: anywhere in a task's way.
        let from =
            journal_path(&root).and_then(|p| std::fs::metadata(p).ok()).map_or(0, |m| m.len());
        let grow = 1 + rng.below(40_000);
        let mut child = breeze()
            .current_dir(&root)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let reached = wait_until(&mut child, "the journal to grow", || {
            journal_path(&root)
                .and_then(|p| std::fs::metadata(p).ok())
                .is_some_and(|m| m.len() >= from + grow)
        });
        if !reached || child.try_wait().unwrap().is_some() {
            let _ = child.wait();
            break; // the run finished first
        }
        child.kill().unwrap(); // SIGKILL
        assert_eq!(child.wait().unwrap().signal(), Some(9), "{at}");
        eprintln!("  {at} after {grow} journal bytes");
        let landed = snapshot_agrees_with_journal(&root, &at);
        assert!(landed >= landed_before, "{at}: landed tasks stay landed");
        landed_before = landed;
        args = ["resume"];
    }

    // One resume finishes the run, whatever the kills interrupted.
    let at = format!("BREEZE_KILL_SEED={seed}, after the kills");
    if status_json(&root)["state"] != "succeeded" {
        let resumed = run_in(&root, &["resume"]);
        assert_eq!(resumed.status.code(), Some(0), "{at}: {}", both(&resumed));
    }
    let status = status_json(&root);
    assert_eq!(status["state"], "succeeded", "{at}: {status}");
    for n in 1..=LARGE_RUN_TASKS {
        let id = n.to_string();
        assert_eq!(task_state(&status, &id), "landed", "{at}: {status}");
        assert_eq!(landings_of(&root, &id), 1, "{at}: task {id} once on main");
    }
    assert_eq!(snapshot_agrees_with_journal(&root, &at), LARGE_RUN_TASKS);
    assert_eq!(git(&root, &["status", "--porcelain"]), "", "{at}");
}
