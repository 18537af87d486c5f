//! What breeze remembers of each lane between runs, in `.breeze/lanes/<lane>/lane.json`
//! (breeze's folder for the lane, beside the worker's private git directory and the
//! lane's baseline, removed with the lane): whether the lane is in use by a run or parked
//! at main's tip, the `worktree.setup` inputs it was last set up for, and — for a parked
//! lane — the modification times of its folders. Its disk use is in `disk.json` beside it:
//! measured once in the background when the lane is made (while its first worker runs),
//! and again by `breeze doctor` for a lane parked since; `breeze status` shows the last
//! measure and walks nothing.
//!
//! A run's watch of a lane ends with the run. A lane parked by a finished run is known to
//! agree with git at that moment; what changed in it afterwards (someone working in
//! breeze's lanes, a tool writing there) shows in the modification times of its folders —
//! a file created, removed or renamed changes its folder's time — which the next run
//! compares at one `stat` per folder (not per file) before it takes the lane, looking only
//! into the folders that changed. A file rewritten in place changes no folder time and is
//! not seen; a lane that was in use when its run stopped (killed, aborted) has no such
//! promise: its first look is a full status pass, as after lost notifications.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

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
    /// A parked lane's folders (relative, `""` the root) with their modification times
    /// (nanoseconds), taken right after it was parked.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub folders: BTreeMap<String, i128>,
}

impl LaneRecord {
    /// Whether it says `worktree` is parked as it is now: detached at the commit its run
    /// parked it at.
    pub fn parks(&self, worktree: &breeze_git::Worktree) -> bool {
        self.state == LaneState::Parked
            && worktree.branch.is_empty()
            && self.head.as_deref() == Some(worktree.base.to_string().as_str())
    }

    /// Where the parked lane at `path` may have changed since its run parked it: the
    /// folders whose time moved ([`changed_folders`]; empty: nowhere), `None` for the whole
    /// lane. One `stat` per recorded folder, no listing and no file: a folder made, removed
    /// or renamed since moved its parent's time, which stands for all beneath it.
    fn changed_since_parked(&self, path: &Path) -> Option<Vec<PathBuf>> {
        changed_folders(&self.folders, &times_of(path, self.folders.keys()))
    }

    /// Saves and undoes what changed in the lane `worktree` it parks since its run parked
    /// it (where its recorded folder times moved, then
    /// [`breeze_git::Repo::save_lane_leftovers`]): the branch it was saved on and its paths,
    /// `None` when nothing changed.
    pub fn save_leftovers(
        &self,
        repo: &breeze_git::Repo,
        worktree: &breeze_git::Worktree,
    ) -> Result<Option<(String, Vec<String>)>, breeze_git::GitError> {
        let changed = self.changed_since_parked(&worktree.path);
        let changes = match &changed {
            Some(folders) if folders.is_empty() => return Ok(None),
            Some(folders) => breeze_git::WorkdirChanges::Only(folders),
            None => breeze_git::WorkdirChanges::Unknown,
        };
        repo.save_lane_leftovers(worktree, changes)
    }

    /// A lane taken by run `run_id`, with what is known of it from before.
    pub fn in_use(run_id: &str, before: Option<LaneRecord>) -> LaneRecord {
        let before = before.unwrap_or_else(|| LaneRecord::empty(run_id));
        LaneRecord {
            state: LaneState::InUse,
            run_id: run_id.to_string(),
            head: None,
            parked_at: None,
            folders: BTreeMap::new(),
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
            folders: BTreeMap::new(),
        }
    }
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

/// Measures the disk use of the lane `lane` at `path` on a thread of its own (a new lane:
/// its files were all just written, and its first worker is about to run) and keeps it.
pub fn measure_in_background(root: &Path, lane: &str, path: &Path) {
    let (file, path) = (disk_path(root, lane), path.to_path_buf());
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let spawned = std::thread::Builder::new().name("breeze-disk-use".into()).spawn(move || {
        let used = measure_disk_use(&path);
        // The lane may be gone meanwhile (a short run): then nothing is kept.
        if file.parent().is_some_and(Path::is_dir) && path.is_dir() {
            write_json(&file, &used);
        }
    });
    if let Err(err) = spawned {
        tracing::warn!("cannot measure the disk use of {lane}: {err}");
    }
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

/// The modification time of every folder of the tree at `root` that a lane's watch
/// watches (not `.git`, `target`, `node_modules`: [`breeze_supervise::DEFAULT_SKIPPED_DIRS`]),
/// in nanoseconds, by relative path (`""`: the root). One `stat` and one listing per
/// folder; links are not followed.
pub fn folder_times(root: &Path) -> BTreeMap<String, i128> {
    let skipped = |name: &std::ffi::OsStr| {
        breeze_supervise::DEFAULT_SKIPPED_DIRS.iter().any(|skip| name == std::ffi::OsStr::new(skip))
    };
    let mut times = BTreeMap::new();
    let mut pending = vec![String::new()];
    while let Some(rel) = pending.pop() {
        let Some(time) = folder_time(root, &rel) else { continue };
        times.insert(rel.clone(), time);
        let full = if rel.is_empty() { root.to_path_buf() } else { root.join(&rel) };
        let Ok(listing) = std::fs::read_dir(&full) else { continue };
        for entry in listing.flatten() {
            if !entry.file_type().is_ok_and(|kind| kind.is_dir()) || skipped(&entry.file_name()) {
                continue;
            }
            let Some(name) = entry.file_name().to_str().map(str::to_string) else { continue };
            pending.push(if rel.is_empty() { name } else { format!("{rel}/{name}") });
        }
    }
    times
}

/// The modification times of the folders `folders` (relative paths) of the tree at `root`,
/// as [`folder_times`] has them; one that is gone, or no folder now, has none.
fn times_of<'a>(root: &Path, folders: impl Iterator<Item = &'a String>) -> BTreeMap<String, i128> {
    folders.filter_map(|rel| Some((rel.clone(), folder_time(root, rel)?))).collect()
}

/// The modification time (nanoseconds) of the folder `rel` of the tree at `root`; `None`
/// when it is gone or no folder (links are not followed).
fn folder_time(root: &Path, rel: &str) -> Option<i128> {
    let full = if rel.is_empty() { root.to_path_buf() } else { root.join(rel) };
    let meta = std::fs::symlink_metadata(full).ok().filter(|meta| meta.is_dir())?;
    Some(i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()))
}

/// The folders whose time differs between `before` and `now` (new ones included; a folder
/// that went changed its parent), as the paths a lane may have changed at; `None` when the
/// root itself changed or nothing was recorded: look at the whole lane.
pub fn changed_folders(
    before: &BTreeMap<String, i128>,
    now: &BTreeMap<String, i128>,
) -> Option<Vec<PathBuf>> {
    if before.is_empty() || before.get("") != now.get("") {
        return None;
    }
    let changed: Vec<&String> = now
        .iter()
        .filter(|(rel, time)| before.get(*rel) != Some(*time))
        .map(|(rel, _)| rel)
        .collect();
    // A folder stands for everything beneath it: the outermost changed ones suffice.
    let mut outermost: Vec<PathBuf> = Vec::new();
    for rel in changed {
        let path = PathBuf::from(rel);
        if !outermost.iter().any(|outer| path.starts_with(outer)) {
            outermost.retain(|inner| !inner.starts_with(&path));
            outermost.push(path);
        }
    }
    Some(outermost)
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

    #[test]
    fn a_file_created_between_runs_shows_in_its_folders_time_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for rel in ["src/a", "src/b", "docs", "node_modules/x"] {
            std::fs::create_dir_all(root.join(rel)).unwrap();
        }
        let before = folder_times(root);
        assert!(before.contains_key("") && before.contains_key("src/a"));
        assert!(!before.keys().any(|rel| rel.starts_with("node_modules")), "{before:?}");
        assert_eq!(changed_folders(&before, &folder_times(root)), Some(Vec::new()));
        // Folder times have the file system's resolution: make the change visible.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(root.join("src/a/new.txt"), "x").unwrap();
        std::fs::create_dir(root.join("src/b/deep")).unwrap();
        assert_eq!(
            changed_folders(&before, &folder_times(root)),
            Some(vec![PathBuf::from("src/a"), PathBuf::from("src/b")])
        );
        std::fs::write(root.join("top.txt"), "x").unwrap();
        assert_eq!(changed_folders(&before, &folder_times(root)), None, "the root: all of it");
        assert_eq!(changed_folders(&BTreeMap::new(), &before), None);
    }

    #[test]
    fn a_parked_lanes_recorded_folders_alone_tell_what_changed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for rel in ["src/a/x", "src/b", "docs/old"] {
            std::fs::create_dir_all(root.join(rel)).unwrap();
        }
        let record = LaneRecord { folders: folder_times(root), ..LaneRecord::empty("r") };
        assert_eq!(record.changed_since_parked(root), Some(Vec::new()));
        std::thread::sleep(std::time::Duration::from_millis(20));
        // A file deep down, a new folder, a folder removed: each moved a recorded folder.
        std::fs::write(root.join("src/a/x/new.txt"), "x").unwrap();
        std::fs::create_dir(root.join("src/b/new")).unwrap();
        std::fs::remove_dir(root.join("docs/old")).unwrap();
        let changed = record.changed_since_parked(root);
        assert_eq!(
            changed,
            changed_folders(&record.folders, &folder_times(root)),
            "the same as a full walk"
        );
        assert_eq!(
            changed,
            Some(vec![PathBuf::from("docs"), PathBuf::from("src/a/x"), PathBuf::from("src/b")])
        );
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
