//! What breeze remembers of each lane between runs, in `.breeze/lanes/<lane>/lane.json`
//! (breeze's folder for the lane, beside the worker's private git directory and the
//! lane's baseline, removed with the lane): whether the lane is in use by a run or parked
//! at main's tip, the `worktree.setup` inputs it was last set up for, and — for a parked
//! lane — the folders its run's watch knew and its top folder's times. The review
//! checkouts (`review`, `advice`) have such a record too, for the same reason. A lane's disk
//! use is in `disk.json` beside it: measured by `breeze doctor` (one `stat` per file, so
//! never by a run), again for a lane parked since; `breeze status` shows the last measure
//! and walks nothing.
//!
//! A run's watch of a lane ends with the run; parking records the folders it watched and
//! the times of the lane's top folder. The next run takes a parked lane at one `stat`: if
//! the top folder's modification and change times are as parked, it watches the recorded
//! folders (no listing) and looks only at those that are gone; otherwise it looks at the
//! whole lane once (a full status pass, and a listing for the watch). Nothing per folder
//! is compared (issue 36: a later run's file-system calls do not grow with the folders).
//!
//! What a later run therefore does not see: a change a person makes in a parked lane
//! *below its top folder* between runs — a file created, removed, renamed or rewritten in
//! `src/…`, or a folder made there (which then goes unwatched for that run). Only a
//! change of the top folder's own entries (or of its mode or owner) is seen. Why that is
//! safe enough: a parked lane is breeze's own, in breeze's data folder outside the
//! person's checkout, and nothing of breeze's writes it between runs; what a *role* changes
//! is seen by the run's watch, from the recorded folders and every folder made since; a
//! file a person changed unseen is committed only if a worker also writes that very path,
//! and then it is in the reviewer's diff like the rest of the worker's change. A rewrite in
//! place was never seen (no folder time moves). A lane that was in use when its run stopped
//! (killed, aborted) has no such promise: its first look is a full status pass, as after
//! lost notifications; so has a lane whose run could not say its folders (notifications
//! lost, a folder it could not watch) or whose record an older breeze wrote.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use breeze_supervise::KnownFolders;
use serde::{Deserialize, Serialize};

/// Format of `lane.json`.
const FORMAT: u32 = 1;

/// The record's file name in the lane's folder.
const RECORD_FILE: &str = "lane.json";

/// Where a lane is between its uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LaneState {
    /// A run took it and has not parked it (it may hold a task's branch and work).
    InUse,
    /// A finished run left it clean at main's tip, detached, for the next run.
    Parked,
}

/// The `worktree.setup` a lane was last set up with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetupDone {
    /// Its key (`preflight::setup_trial::setup_inputs`: the argv and the content ids of
    /// its input files at the lane's HEAD).
    pub key: String,
    /// When it ran (RFC 3339).
    pub ran_at: String,
}

/// What a lane takes on disk, and when that was measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskUse {
    /// Bytes of the blocks its files take (build outputs included).
    pub bytes: u64,
    /// Files (not folders).
    pub files: u64,
    /// When (RFC 3339).
    pub measured_at: String,
}

/// `lane.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneRecord {
    format: u32,
    /// In use or parked.
    pub state: LaneState,
    /// The run that last took or parked it.
    pub run_id: String,
    /// Where a parked lane's HEAD is (main's tip when it was parked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// When it was parked (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked_at: Option<String>,
    /// The setup it was last set up with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<SetupDone>,
    /// A parked lane's top folder's modification and change times (nanoseconds), taken
    /// right after it was parked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_times: Option<[i128; 2]>,
    /// The folders the run's watch of a parked lane watched (relative, `""` the root), and
    /// the skipped ones it found (`target`, …): the next run's watch starts from them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folders: Option<RecordedFolders>,
}

/// The folders of a parked lane as its run's watch knew them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedFolders {
    /// The folders watched.
    pub watched: Vec<String>,
    /// The skipped folders found (always looked at).
    pub skipped: Vec<String>,
}

impl RecordedFolders {
    /// The folders a watch knew, `None` when one has a name that is not UTF-8 (then the
    /// next run lists the lane).
    pub fn of(known: &KnownFolders) -> Option<RecordedFolders> {
        let strings = |paths: &[PathBuf]| -> Option<Vec<String>> {
            paths.iter().map(|path| path.to_str().map(str::to_string)).collect()
        };
        Some(RecordedFolders {
            watched: strings(&known.watched)?,
            skipped: strings(&known.skipped)?,
        })
    }

    fn known(&self) -> KnownFolders {
        let paths = |names: &[String]| names.iter().map(PathBuf::from).collect();
        KnownFolders { watched: paths(&self.watched), skipped: paths(&self.skipped) }
    }
}

impl LaneRecord {
    /// Whether it says `worktree` is parked as it is now: detached at the commit its run
    /// parked it at.
    pub fn parks(&self, worktree: &breeze_git::Worktree) -> bool {
        self.state == LaneState::Parked
            && worktree.branch.is_empty()
            && self.head.as_deref() == Some(worktree.base.to_string().as_str())
    }

    /// The folders of the parked lane at `path` to watch without listing it, when its top
    /// folder's times are as they were parked (one `stat`); `None`: look at the whole lane
    /// (its top folder changed, or nothing was recorded). See the module's docs for what
    /// this does not see.
    pub fn known_folders(&self, path: &Path) -> Option<KnownFolders> {
        let folders = self.folders.as_ref()?;
        let parked = self.root_times?;
        (root_times(path)? == parked).then(|| folders.known())
    }

    /// Saves and undoes everything that differs from git in the lane `worktree` it parks (a
    /// full status pass: for a person attaching to a stopped task, not a run's per-task
    /// path), then [`breeze_git::Repo::save_lane_leftovers`]: the branch it was saved on
    /// and its paths, `None` when nothing changed.
    pub fn save_leftovers(
        &self,
        repo: &breeze_git::Repo,
        worktree: &breeze_git::Worktree,
    ) -> Result<Option<(String, Vec<String>)>, breeze_git::GitError> {
        repo.save_lane_leftovers(worktree, breeze_git::WorkdirChanges::Unknown)
    }

    /// The record of a lane parked by run `run_id` at `head`, with its folders as the
    /// run's watch knew them (`None`: unknown) and its top folder's times now.
    pub fn parked(
        run_id: &str,
        before: Option<LaneRecord>,
        head: String,
        path: &Path,
        known: Option<&KnownFolders>,
    ) -> LaneRecord {
        let mut record = LaneRecord::in_use(run_id, before);
        record.state = LaneState::Parked;
        record.head = Some(head);
        record.parked_at = Some(crate::clock::now_rfc3339());
        record.folders = known.and_then(RecordedFolders::of);
        record.root_times = root_times(path);
        record
    }

    /// A lane taken by run `run_id`, with what is known of it from before.
    pub fn in_use(run_id: &str, before: Option<LaneRecord>) -> LaneRecord {
        let before = before.unwrap_or_else(|| LaneRecord::empty(run_id));
        LaneRecord {
            state: LaneState::InUse,
            run_id: run_id.to_string(),
            head: None,
            parked_at: None,
            root_times: None,
            folders: None,
            ..before
        }
    }

    fn empty(run_id: &str) -> LaneRecord {
        LaneRecord {
            format: FORMAT,
            state: LaneState::InUse,
            run_id: run_id.to_string(),
            head: None,
            parked_at: None,
            setup: None,
            root_times: None,
            folders: None,
        }
    }
}

/// The names lane `lane` of a run may have, in the order a run takes or makes them:
/// `lane-<n>`, then `lane-<n>-2`, `lane-<n>-3`, … (when a name is held by another worktree).
pub fn lane_names(lane: u32) -> impl Iterator<Item = String> {
    (1..).map(move |k: u32| match k {
        1 => format!("lane-{lane}"),
        k => format!("lane-{lane}-{k}"),
    })
}

/// `.breeze/lanes/<lane>/lane.json` of the repository at `root`.
pub fn record_path(root: &Path, lane: &str) -> PathBuf {
    root.join(breeze_git::STATE_DIR).join("lanes").join(lane).join(RECORD_FILE)
}

/// The record of lane `lane`, if there is a readable one.
pub fn load(root: &Path, lane: &str) -> Option<LaneRecord> {
    let text = std::fs::read(record_path(root, lane)).ok()?;
    serde_json::from_slice::<LaneRecord>(&text).ok().filter(|record| record.format == FORMAT)
}

/// Writes the record of lane `lane` (atomically; a failure is logged: the record only
/// saves work, and without it the next run looks at the whole lane once).
pub fn save(root: &Path, lane: &str, record: &LaneRecord) {
    write_json(&record_path(root, lane), record);
}

/// `.breeze/lanes/<lane>/disk.json`.
fn disk_path(root: &Path, lane: &str) -> PathBuf {
    record_path(root, lane).with_file_name("disk.json")
}

/// The last measure of lane `lane`'s disk use.
pub fn load_disk_use(root: &Path, lane: &str) -> Option<DiskUse> {
    serde_json::from_slice(&std::fs::read(disk_path(root, lane)).ok()?).ok()
}

/// Writes `value` as JSON at `path` (atomically; a failure is logged: these files only save
/// work).
fn write_json(path: &Path, value: &impl Serialize) {
    let written =
        serde_json::to_vec_pretty(value).map_err(std::io::Error::other).and_then(|bytes| {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            crate::snapshot::write_atomically(path, &bytes)
        });
    if let Err(err) = written {
        tracing::warn!("cannot write {}: {err}", path.display());
    }
}

/// The modification and change times (nanoseconds) of the folder at `path`, `None` when it
/// is gone or no folder (links are not followed).
fn root_times(path: &Path) -> Option<[i128; 2]> {
    let meta = std::fs::symlink_metadata(path).ok().filter(|meta| meta.is_dir())?;
    let nanos = |secs: i64, nsec: i64| i128::from(secs) * 1_000_000_000 + i128::from(nsec);
    Some([nanos(meta.mtime(), meta.mtime_nsec()), nanos(meta.ctime(), meta.ctime_nsec())])
}

/// What the files of the tree at `root` take on disk (blocks, not following links; every
/// folder, build outputs and `.git` included) and how many there are: one `stat` per file.
pub fn measure_disk_use(root: &Path) -> DiskUse {
    let (mut bytes, mut files) = (0u64, 0u64);
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(listing) = std::fs::read_dir(&dir) else { continue };
        for entry in listing.flatten() {
            let Ok(meta) = entry.path().symlink_metadata() else { continue };
            bytes += meta.blocks() * 512;
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                files += 1;
            }
        }
    }
    DiskUse { bytes, files, measured_at: crate::clock::now_rfc3339() }
}

/// A lane kept between runs, as `breeze status` and `breeze doctor` show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptLane {
    /// `lane-1`.
    pub name: String,
    /// Its worktree.
    pub path: PathBuf,
    /// What the record says (`None`: no readable record).
    pub record: Option<LaneRecord>,
    /// Its disk use as last measured.
    pub disk: Option<DiskUse>,
}

/// The lanes in `repo`'s worktree folder (outside the checkout), with what their records
/// say (parked or in use), by name.
pub fn kept_lanes(repo: &breeze_git::Repo) -> Vec<KeptLane> {
    let root = repo.workdir();
    let Ok(lanes_dir) = repo.worktree_root() else { return Vec::new() };
    let Ok(listing) = std::fs::read_dir(&lanes_dir) else { return Vec::new() };
    let mut lanes: Vec<KeptLane> = listing
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            if !name.starts_with("lane-") || !entry.file_type().ok()?.is_dir() {
                return None;
            }
            let record = load(root, &name);
            let disk = load_disk_use(root, &name);
            Some(KeptLane { path: entry.path(), record, disk, name })
        })
        .collect();
    lanes.sort_by(|a, b| a.name.cmp(&b.name));
    lanes
}

impl KeptLane {
    /// Its disk use, measured again when the lane was parked since the last measure (a
    /// walk of its files: once per run that used it, at most).
    pub fn disk_use_refreshed(&mut self, root: &Path) -> Option<&DiskUse> {
        let parked_at = self.record.as_ref().and_then(|record| record.parked_at.clone());
        let stale = match (&self.disk, parked_at) {
            (None, _) => true,
            (Some(disk), Some(parked_at)) => disk.measured_at < parked_at,
            (Some(_), None) => false,
        };
        if stale && self.path.is_dir() {
            let used = measure_disk_use(&self.path);
            write_json(&disk_path(root, &self.name), &used);
            self.disk = Some(used);
        }
        self.disk.as_ref()
    }

    /// One line: `lane-1 (/home/me/.local/share/breeze/worktrees/app-0123456789/lane-1):
    /// parked at abc123def456 since …; 12.3 MB in 20,012 files (measured …)`.
    pub fn describe(&self) -> String {
        let lane = format!("{} ({})", self.name, self.path.display());
        let Some(record) = &self.record else {
            return format!("{lane}: no record of it (made by an older breeze?)");
        };
        let state = match (record.state, &record.head, &record.parked_at) {
            (LaneState::Parked, Some(head), Some(at)) => {
                format!("parked at {} since {at}", &head[..head.len().min(12)])
            }
            _ => format!("in use by run {} (not parked: it stopped first)", record.run_id),
        };
        let disk = match &self.disk {
            Some(disk) => format!(
                "{} in {} files (measured {})",
                human_bytes(disk.bytes),
                disk.files,
                disk.measured_at
            ),
            None => "disk use not measured yet (`breeze doctor` measures it)".to_string(),
        };
        format!("{lane}: {state}; {disk}")
    }
}

/// `12.3 MB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parked_with_folders(root: &Path) -> (LaneRecord, KnownFolders) {
        for rel in ["src/a", "src/b", "node_modules/x"] {
            std::fs::create_dir_all(root.join(rel)).unwrap();
        }
        let known = breeze_supervise::TreeWatch::start(root).folders().unwrap();
        let record = LaneRecord::parked("r", None, "abc".into(), root, Some(&known));
        (record, known)
    }

    #[test]
    fn a_parked_lanes_folders_are_known_while_its_top_folder_is_as_parked() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let (record, known) = parked_with_folders(root);
        assert_eq!(known.skipped, [PathBuf::from("node_modules")]);
        // Through its file (in the repository's `.breeze`, not in the lane), as the next
        // run reads it.
        let repo = tempfile::tempdir().unwrap();
        save(repo.path(), "lane-1", &record);
        let record = load(repo.path(), "lane-1").expect("a readable record");
        assert_eq!(record.known_folders(root), Some(known.clone()));
        // Below the top folder nothing is compared (the module's docs say what that misses).
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(root.join("src/a/new.txt"), "x").unwrap();
        assert_eq!(record.known_folders(root), Some(known));
        // A change of the top folder's entries: the whole lane is looked at.
        std::fs::write(root.join("top.txt"), "x").unwrap();
        assert_eq!(record.known_folders(root), None);
    }

    #[test]
    fn a_top_folder_whose_mode_changed_since_parking_is_looked_at_whole() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let (record, _) = parked_with_folders(root);
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(record.known_folders(root), None, "its change time moved");
    }

    #[test]
    fn a_lane_parked_without_known_folders_is_looked_at_whole() {
        let dir = tempfile::tempdir().unwrap();
        let record = LaneRecord::parked("r", None, "abc".into(), dir.path(), None);
        assert_eq!(record.known_folders(dir.path()), None);
        assert_eq!(LaneRecord::in_use("r", Some(record)).folders, None, "in use: nothing kept");
    }

    #[test]
    fn disk_use_counts_every_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("target/debug")).unwrap();
        std::fs::write(dir.path().join("target/debug/app"), vec![1u8; 100_000]).unwrap();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        let used = measure_disk_use(dir.path());
        assert_eq!(used.files, 2);
        assert!(used.bytes >= 100_000, "{used:?}");
        assert_eq!(human_bytes(12_345_678), "12.3 MB");
        assert_eq!(human_bytes(999), "999 B");
    }
}
