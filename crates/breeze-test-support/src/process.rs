//! What a test asks of processes: whether one is alive, how much this one has read, and a
//! checkout held open by a filter process (a git step that does not end by itself).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Whether process `pid` is alive (a zombie is not: `/proc` says so).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
        .unwrap_or(false)
}

/// Bytes this process has read through `read(2)` and friends (`rchar` of `/proc/self/io`):
/// what a library under test read from files.
pub fn bytes_read_by_this_process() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").expect("/proc/self/io");
    io.lines()
        .find_map(|line| line.strip_prefix("rchar: "))
        .and_then(|n| n.trim().parse().ok())
        .expect("rchar in /proc/self/io")
}

/// The smudge filter `slow` of a repository (name it in `.gitattributes`: `*.dat
/// filter=slow`): every checkout of such a file waits, in a filter process, while the hold
/// file exists.
pub struct HeldCheckouts {
    pids: PathBuf,
    hold: PathBuf,
}

impl HeldCheckouts {
    /// Configures the filter in the repository at `repo`, held from now on; its files go
    /// in `dir` (outside the repository).
    pub fn configure(repo: &Path, dir: &Path) -> HeldCheckouts {
        let held = HeldCheckouts { pids: dir.join("filter.pids"), hold: dir.join("hold") };
        std::fs::write(&held.hold, "").expect("the hold file");
        let smudge = format!(
            "echo $$ >> {pids}; while [ -e {hold} ]; do sleep 0.05; done; cat",
            pids = held.pids.display(),
            hold = held.hold.display()
        );
        crate::git(repo, &["config", "filter.slow.smudge", &smudge]);
        crate::git(repo, &["config", "filter.slow.clean", "cat"]);
        held
    }

    /// Waits until a checkout reached the filter; the filter process's pid.
    pub fn wait_until_held(&self) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let pids = std::fs::read_to_string(&self.pids).unwrap_or_default();
            if let Some(pid) = pids.lines().next().and_then(|line| line.trim().parse().ok()) {
                return pid;
            }
            assert!(Instant::now() < deadline, "no checkout reached the filter");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether checkouts are still held.
    pub fn is_holding(&self) -> bool {
        self.hold.exists()
    }

    /// Lets every checkout go on.
    pub fn release(&self) {
        std::fs::remove_file(&self.hold).expect("the hold file");
    }
}
