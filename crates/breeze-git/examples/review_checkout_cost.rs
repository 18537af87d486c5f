//! What a review checkout costs per review round: `Repo::review_checkout` moved to the head
//! of each of TASKS one-file tasks (each on the tip the previous one landed), in a
//! repository of FILES files made by `scripts/bench/git-gen-repo.sh`; beside it, the git CLI
//! doing the same (`git checkout -f --detach HEAD_i` and `git clean -fdxq` in a worktree of
//! its own). Prints the first placing (a full checkout), the median round when the
//! checkout's watch says nothing changed there (within a run), the median round without a
//! watch (the first round of a later run: one status pass), and the CLI's median round.
//!
//! ```text
//! cargo run --release -p breeze-git --example review_checkout_cost [FILES=20000] [TASKS=12]
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use breeze_git::{Oid, REVIEW_CHECKOUT, Repo, WorkdirChanges};

fn main() {
    let mut args = std::env::args().skip(1);
    let files: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let tasks: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(12);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let root = dir.path().join("repo");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/bench/git-gen-repo.sh");
    run(Command::new("bash").arg(script).arg(&root).arg(files.to_string()));
    let heads = task_heads(&root, tasks);
    let repo = Repo::open(&root).expect("breeze opens it");

    let started = Instant::now();
    repo.review_checkout(REVIEW_CHECKOUT, heads[0], WorkdirChanges::Unknown).expect("placed");
    let first = started.elapsed();
    let nothing: Vec<PathBuf> = Vec::new();
    let watched = rounds(&heads[1..], |head| {
        repo.review_checkout(REVIEW_CHECKOUT, head, WorkdirChanges::Only(&nothing)).expect("moved");
    });
    let unwatched = rounds(&heads[1..], |head| {
        repo.review_checkout(REVIEW_CHECKOUT, head, WorkdirChanges::Unknown).expect("moved");
    });
    let cli_dir = dir.path().join("cli-checkout");
    run(git(&root)
        .args(["worktree", "add", "-q", "--detach"])
        .arg(&cli_dir)
        .arg(heads[0].to_string()));
    let cli = rounds(&heads[1..], |head| {
        run(git(&cli_dir).args(["checkout", "-q", "-f", "--detach", &head.to_string()]));
        run(git(&cli_dir).args(["clean", "-q", "-f", "-d", "-x"]));
    });
    println!(
        "{files} files, {tasks} task heads: first placing {:.1} ms; a round with the watch {:.1} ms, \
         without it {:.1} ms; git CLI (checkout + clean) {:.1} ms — {:.2}× and {:.2}× the CLI",
        ms(first),
        ms(watched),
        ms(unwatched),
        ms(cli),
        watched.as_secs_f64() / cli.as_secs_f64(),
        unwatched.as_secs_f64() / cli.as_secs_f64(),
    );
}

/// The median time of `round` over the heads.
fn rounds(heads: &[Oid], mut round: impl FnMut(Oid)) -> Duration {
    let mut times: Vec<Duration> = heads
        .iter()
        .map(|head| {
            let started = Instant::now();
            round(*head);
            started.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// `tasks` commits, each changing one file on top of the previous one (a task's head on
/// the tip the task before it landed).
fn task_heads(root: &Path, tasks: usize) -> Vec<Oid> {
    (0..tasks)
        .map(|n| {
            let path = format!("src/d000/d00/f{n:06}.txt");
            std::fs::write(root.join(&path), format!("task {n}\n")).expect("a task's change");
            run(git(root).args(["add", &path]));
            run(git(root).args(["commit", "-qm", &format!("task {n}")]));
            let head = git(root).args(["rev-parse", "HEAD"]).output().expect("git runs");
            Oid::from_str(String::from_utf8_lossy(&head.stdout).trim()).expect("an id")
        })
        .collect()
}

fn git(dir: &Path) -> Command {
    let mut command = Command::new("git");
    command.arg("-C").arg(dir);
    command
}

fn run(command: &mut Command) {
    let status = command.status().expect("the command runs");
    assert!(status.success(), "{command:?} failed");
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
