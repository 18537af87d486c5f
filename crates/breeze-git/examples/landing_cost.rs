//! What landing many new files into the checked-out main costs: `Repo::advance_main` of a
//! landing commit that adds FILES files (one line each) under `big/`, into a clean
//! checkout of main, timed over RUNS rounds; between rounds main and the checkout are put
//! back (not timed). Prints the median, the fastest and the slowest round.
//!
//! ```text
//! cargo run --release -p breeze-git --example landing_cost [FILES=3000] [RUNS=9]
//! BENCH_DIR=/dev/shm cargo run --release -p breeze-git --example landing_cost   # tmpfs
//! ```
//!
//! It uses only `Repo::open` and `advance_main` of the crate (and libgit2 to set up and put
//! back), so the same file measures any version of the landing.

use std::path::Path;
use std::time::{Duration, Instant};

use breeze_git::{AdvanceOutcome, Repo};
use git2::{Oid, Repository, Signature};

fn main() {
    let mut args = std::env::args().skip(1);
    let files: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3000);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(9);
    let base = std::env::var_os("BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
    let dir = tempfile::tempdir_in(base).expect("a temporary folder");
    let (old, new) = set_up(dir.path(), files);
    let repo = Repository::open(dir.path()).expect("the repository");
    let breeze = Repo::open(dir.path()).expect("breeze opens it");
    let mut times: Vec<Duration> = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let outcome = breeze.advance_main(old, new).expect("the landing");
        times.push(started.elapsed());
        assert!(matches!(outcome, AdvanceOutcome::Advanced { .. }), "{outcome:?}");
        put_back(&repo, dir.path(), old);
    }
    times.sort();
    println!(
        "{files} new files, {runs} rounds in {}: median {:.1} ms, fastest {:.1} ms, slowest {:.1} ms",
        dir.path().display(),
        ms(times[times.len() / 2]),
        ms(times[0]),
        ms(times[times.len() - 1])
    );
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// A repository on main with one small commit checked out, and a landing commit on top
/// that adds `files` files. Returns (main, landing).
fn set_up(dir: &Path, files: usize) -> (Oid, Oid) {
    let repo = Repository::init(dir).expect("init");
    repo.set_head("refs/heads/main").expect("HEAD names main");
    let who = Signature::now("bench", "bench@localhost").expect("a signature");
    std::fs::write(dir.join("README.md"), "bench\n").expect("README.md");
    let mut index = repo.index().expect("the index");
    index.add_path(Path::new("README.md")).expect("add README.md");
    index.write().expect("write the index");
    let tree = repo.find_tree(index.write_tree().expect("a tree")).expect("the tree");
    let old = repo.commit(Some("HEAD"), &who, &who, "initial", &tree, &[]).expect("commit");

    let mut big = repo.treebuilder(None).expect("a tree builder");
    for n in 0..files {
        let blob = repo.blob(format!("file {n}\n").as_bytes()).expect("a blob");
        big.insert(format!("{n:05}.txt"), blob, 0o100644).expect("an entry");
    }
    let big = big.write().expect("the folder");
    let mut root = repo.treebuilder(Some(&tree)).expect("a tree builder");
    root.insert("big", big, 0o040000).expect("the folder entry");
    let landed = repo.find_tree(root.write().expect("the root")).expect("the root");
    let parent = repo.find_commit(old).expect("main");
    let new = repo.commit(None, &who, &who, "land", &landed, &[&parent]).expect("the landing");
    (old, new)
}

/// main back on `old`, `big/` gone from the checkout and the index.
fn put_back(repo: &Repository, dir: &Path, old: Oid) {
    repo.reference("refs/heads/main", old, true, "bench: put back").expect("main back");
    std::fs::remove_dir_all(dir.join("big")).expect("big/ removed");
    let tree = repo.find_commit(old).and_then(|c| c.tree()).expect("the old tree");
    let mut index = repo.index().expect("the index");
    index.read_tree(&tree).expect("the old index");
    index.write().expect("write the index");
}
