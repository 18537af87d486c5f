//! Benchmark driver: breeze's landing path for N one-file tasks through `breeze-git`,
//! the way the engine runs it (at most 3 lane worktrees moved between tasks).
//!
//! ```text
//! team_land <repo> [--tasks 12] [--lanes 3]     # the team run; prints its wall time
//! team_land <repo> --create-vs-move             # one fresh worktree vs one lane move
//! team_land <repo> --seal-lane [--tasks 50]     # what a worker's start adds: its lane's
//!                                               # private git directory synced (and undone)
//! ```
//!
//! Task `i` appends a line to the `(i * 997)`-th tracked file (1-based, `git ls-files`
//! order), the same file the git-CLI script (`scripts/bench/land-cli.sh`) edits, so both
//! runs must end with the same tree on main. Used by `scripts/bench/land-bench.sh`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use breeze_git::{
    AdvanceOutcome, MergeOutcome, OpenOptions, RemoveOutcome, Repo, Worktree, landing_message,
};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("team_land: {message}");
            ExitCode::FAILURE
        }
    }
}

struct Args {
    repo: PathBuf,
    tasks: usize,
    lanes: usize,
    create_vs_move: bool,
    seal_lane: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let mut parsed =
        Args { repo: PathBuf::new(), tasks: 12, lanes: 3, create_vs_move: false, seal_lane: false };
    let number = |flag: &str, value: Option<String>| -> Result<usize, String> {
        value
            .and_then(|v| v.parse().ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("{flag} needs a positive number"))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--tasks" => parsed.tasks = number("--tasks", args.next())?,
            "--lanes" => parsed.lanes = number("--lanes", args.next())?,
            "--create-vs-move" => parsed.create_vs_move = true,
            "--seal-lane" => parsed.seal_lane = true,
            other if other.starts_with('-') => return Err(format!("unknown option {other}")),
            other => parsed.repo = PathBuf::from(other),
        }
    }
    if parsed.repo.as_os_str().is_empty() {
        return Err(
            "usage: team_land <repo> [--tasks N] [--lanes N] [--create-vs-move | --seal-lane]"
                .into(),
        );
    }
    Ok(parsed)
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    if args.create_vs_move {
        return create_vs_move(&args.repo);
    }
    if args.seal_lane {
        return seal_lane(&args.repo, args.tasks);
    }
    let started = Instant::now();
    let repo = Repo::open(&args.repo).map_err(|e| e.to_string())?;
    let files = tracked_files(&repo)?;
    let mut lanes: Vec<Option<Worktree>> = vec![None; args.lanes];
    // TEAM_LAND_PHASES=1 prints where the time goes.
    let verbose = std::env::var_os("TEAM_LAND_PHASES").is_some();
    let mut phases: Vec<(&'static str, f64)> = Vec::new();
    let mut mark = Instant::now();
    let mut phase = |name: &'static str| {
        if verbose {
            let now = Instant::now();
            match phases.iter_mut().find(|(n, _)| *n == name) {
                Some((_, total)) => *total += (now - mark).as_secs_f64(),
                None => phases.push((name, (now - mark).as_secs_f64())),
            }
            mark = now;
        }
    };
    phase("open");
    for i in 1..=args.tasks {
        let target = files
            .get(i * 997 - 1)
            .ok_or_else(|| format!("the repository has fewer than {} files", i * 997))?;
        let lane = (i - 1) % args.lanes;
        let branch = format!("task/{i}");
        let base = repo.main_tip().map_err(|e| e.to_string())?;
        let wt = match lanes[lane].take() {
            None => repo
                .create_worktree(&format!("lane-{lane}"), &branch, base, "team_land benchmark")
                .map_err(|e| e.to_string())?,
            Some(previous) => {
                let moved =
                    repo.move_worktree(&previous, &branch, base).map_err(|e| e.to_string())?;
                repo.delete_branch(&previous.branch).map_err(|e| e.to_string())?;
                moved
            }
        };
        phase("worktree");
        append(&wt.path.join(target), &format!("task {i} was here\n"))?;
        let head =
            repo.commit_worktree(&wt, &format!("task {i}")).map_err(|e| e.to_string())?.head();
        phase("commit");
        let onto = repo.main_tip().map_err(|e| e.to_string())?;
        let tree = match repo.merge_task(wt.base, head, onto).map_err(|e| e.to_string())? {
            MergeOutcome::Clean { tree } => tree,
            MergeOutcome::Conflicts { paths } => {
                return Err(format!("task {i} conflicts: {paths:?}"));
            }
        };
        let message = landing_message(&format!("task {i}"), None, &i.to_string(), "bench", 1);
        let commit =
            repo.write_landing_commit(tree, onto, head, &message).map_err(|e| e.to_string())?;
        phase("merge+landing commit");
        match repo.advance_main(onto, commit).map_err(|e| e.to_string())? {
            AdvanceOutcome::Advanced { .. } => {}
            other => return Err(format!("task {i} did not land: {other:?}")),
        }
        phase("advance main");
        lanes[lane] = Some(wt);
    }
    for wt in lanes.into_iter().flatten() {
        match repo.remove_worktree(&wt.path, Some(&wt.branch), false).map_err(|e| e.to_string())? {
            RemoveOutcome::Removed { .. } => {}
            other => return Err(format!("lane {} not removed: {other:?}", wt.name)),
        }
    }
    phase("remove");
    if verbose {
        for (name, secs) in &phases {
            println!("  {name}: {secs:.3} s");
        }
    }
    println!(
        "breeze-git: {} tasks, {} lanes: {:.3} s",
        args.tasks,
        args.lanes,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Tracked files in `git ls-files` order (the index order).
fn tracked_files(repo: &Repo) -> Result<Vec<String>, String> {
    let git = git2::Repository::open(repo.workdir()).map_err(|e| e.to_string())?;
    let index = git.index().map_err(|e| e.to_string())?;
    Ok(index.iter().map(|entry| String::from_utf8_lossy(&entry.path).into_owned()).collect())
}

fn append(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write as _;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.write_all(text.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))
}

/// One fresh worktree (libgit2 checkout and `git` CLI checkout) against one lane move to a
/// commit that differs in one file.
fn create_vs_move(path: &Path) -> Result<(), String> {
    let only =
        |min: usize| OpenOptions { cli_checkout_min_files: Some(min), ..OpenOptions::default() };
    let libgit2 = Repo::open_with(path, &only(usize::MAX)).map_err(|e| e.to_string())?;
    let cli = Repo::open_with(path, &only(0)).map_err(|e| e.to_string())?;
    let base = libgit2.main_tip().map_err(|e| e.to_string())?;
    let files = tracked_files(&libgit2)?.len();

    // A commit one file away from base, made in a scratch worktree.
    let scratch = cli
        .create_worktree("bench-scratch", "bench/scratch", base, "bench")
        .map_err(|e| e.to_string())?;
    let first = tracked_files(&libgit2)?.into_iter().next().ok_or("empty repository")?;
    append(&scratch.path.join(&first), "one more line\n")?;
    let next = cli.commit_worktree(&scratch, "one file").map_err(|e| e.to_string())?.head();

    let timed = |label: &str, f: &mut dyn FnMut() -> Result<(), String>| -> Result<f64, String> {
        let start = Instant::now();
        f()?;
        let secs = start.elapsed().as_secs_f64();
        println!("{label}: {secs:.3} s");
        Ok(secs)
    };
    println!("repository: {files} tracked files");
    let mut lib_wt = None;
    let create_lib = timed("create_worktree (libgit2 checkout)", &mut || {
        lib_wt = Some(
            libgit2
                .create_worktree("bench-lib", "bench/lib", base, "bench")
                .map_err(|e| e.to_string())?,
        );
        Ok(())
    })?;
    let mut cli_wt = None;
    let create_cli = timed("create_worktree (git CLI checkout)", &mut || {
        cli_wt = Some(
            cli.create_worktree("bench-cli", "bench/cli", base, "bench")
                .map_err(|e| e.to_string())?,
        );
        Ok(())
    })?;
    let lib_wt = lib_wt.ok_or("no worktree")?;
    let move_secs = timed("move_worktree (1 file differs)", &mut || {
        libgit2.move_worktree(&lib_wt, "bench/moved", next).map(|_| ()).map_err(|e| e.to_string())
    })?;
    println!(
        "move / create: {:.3} (vs libgit2 checkout), {:.3} (vs git CLI checkout)",
        move_secs / create_lib,
        move_secs / create_cli
    );
    for (wt, branch) in [
        (&scratch, "bench/scratch"),
        (&lib_wt, "bench/moved"),
        (&cli_wt.ok_or("no worktree")?, "bench/cli"),
    ] {
        cli.remove_worktree(&wt.path, Some(branch), true).map_err(|e| e.to_string())?;
    }
    cli.delete_branch("bench/lib").map_err(|e| e.to_string())?;
    Ok(())
}

/// What each worker start adds (`Repo::seal_lane`: the lane's private git directory brought
/// up to date — HEAD, two refs, the index copied, config, alternate, `.git` pointed at it)
/// and what the lane check after it costs now (`Repo::check_lane_links`, which also points
/// `.git` back), `rounds` times on one lane with one changed file; prints min and median.
fn seal_lane(path: &Path, rounds: usize) -> Result<(), String> {
    let repo = Repo::open(path).map_err(|e| e.to_string())?;
    let base = repo.main_tip().map_err(|e| e.to_string())?;
    let files = tracked_files(&repo)?;
    let wt = repo
        .create_worktree("bench-seal", "bench/seal", base, "bench")
        .map_err(|e| e.to_string())?;
    append(&wt.path.join(files.first().ok_or("empty repository")?), "a worker's change\n")?;
    let index =
        std::fs::metadata(repo.lane_admin_dir(&wt).join("index")).map(|m| m.len()).unwrap_or(0);
    let (mut seal, mut check) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let start = Instant::now();
        repo.seal_lane(&wt).map_err(|e| e.to_string())?;
        seal.push(start.elapsed().as_secs_f64() * 1000.0);
        let start = Instant::now();
        let problems = repo.check_lane_links(&wt).map_err(|e| e.to_string())?;
        check.push(start.elapsed().as_secs_f64() * 1000.0);
        if !problems.is_empty() {
            return Err(format!("the lane check found problems: {problems:?}"));
        }
    }
    let summary = |label: &str, times: &mut Vec<f64>| {
        times.sort_by(f64::total_cmp);
        println!(
            "{label}: min {:.2} ms, median {:.2} ms ({} rounds)",
            times[0],
            times[times.len() / 2],
            times.len()
        );
    };
    println!("repository: {} tracked files, lane index {index} bytes", files.len());
    summary("seal_lane (before each worker)", &mut seal);
    summary("check_lane_links (after each worker)", &mut check);
    repo.remove_worktree(&wt.path, Some("bench/seal"), true).map_err(|e| e.to_string())?;
    Ok(())
}
