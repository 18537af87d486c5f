//! A lane's baseline as the repository keeps it (what it is: `baseline.rs`): found from a
//! checkout's path, recorded after breeze's own steps ran in the lane, thinned when the
//! worker changed a path of it, put back before the lane moves, and forgotten with the lane.

use std::collections::BTreeSet;
use std::path::Path;

use git2::{Repository, Tree};

use crate::baseline::{BASELINE_FILE, Baseline, in_scope};
use crate::error::GitError;
use crate::lane_files;
use crate::libgit2_checkout::{IndexFile, Mode, checkout_paths, tree_diff_paths};
use crate::names::is_detached_checkout;
use crate::paths::{RepoPath, WorkdirChanges};
use crate::repo::Repo;
use crate::untrusted::remove_entry;
use crate::worktree::Worktree;

impl Repo {
    /// The baseline of the checkout at `path`: a lane's (from its file), or none.
    pub(crate) fn baseline_of(&self, path: &Path) -> Baseline {
        let name = match path.file_name().and_then(|name| name.to_str()) {
            Some(name) if !is_detached_checkout(name) && self.lane_admin_of(path).is_some() => {
                name.to_string()
            }
            _ => return Baseline::none(),
        };
        Baseline::load(self.lane_home(&name).join(BASELINE_FILE), self.bounds.max_file_bytes)
    }

    /// The paths of lane `wt`'s baseline (what breeze's own steps left in it), sorted.
    pub fn baseline_paths(&self, wt: &Worktree) -> Vec<String> {
        self.baseline_of(&wt.path).paths().map(str::to_string).collect()
    }

    /// Records what breeze's own step that just ran in lane `wt` (`worktree.setup`, a
    /// review check) left there as the lane's baseline: every uncommitted path among
    /// `changes` (the paths the lane's watch saw written while it ran; all of them when
    /// unknown), with the state it has now. A baseline path among `changes` that agrees
    /// with the lane's index again leaves the baseline. Returns the paths recorded.
    ///
    /// Call it only while the lane holds nothing of the worker's uncommitted (after the
    /// worker's files were committed, or in a fresh lane): what is uncommitted then is the
    /// step's.
    pub fn record_baseline(
        &self,
        wt: &Worktree,
        changes: WorkdirChanges<'_>,
    ) -> Result<Vec<String>, GitError> {
        let mut baseline = self.baseline_of(&wt.path);
        if !baseline.is_kept() {
            return Ok(Vec::new());
        }
        let wrepo = self.handle(&wt.path)?;
        let at = wt.path.as_path();
        let mut uncommitted: BTreeSet<String> =
            lane_files::find_unreadable(&wrepo, at, changes, &self.bounds)?
                .paths()
                .into_iter()
                .collect();
        uncommitted.extend(self.checkout_tool()?.status_paths(&wrepo, at, changes)?);
        drop(wrepo);
        let mut recorded = Vec::new();
        for path in &uncommitted {
            if !baseline.holds(at, path) && baseline.record(at, path) {
                recorded.push(path.clone());
            }
        }
        let settled: Vec<String> = baseline
            .paths()
            .filter(|path| in_scope(changes, path) && !uncommitted.contains(*path))
            .map(str::to_string)
            .collect();
        for path in &settled {
            baseline.forget(path);
        }
        if !recorded.is_empty() || !settled.is_empty() {
            baseline.save()?;
            tracing::info!(lane = %wt.name, recorded = ?recorded, "recorded the lane's baseline");
        }
        Ok(recorded)
    }

    /// Drops from lane `wt`'s baseline the paths the worker changed since they were
    /// recorded (among `changes`): from now on they are its work. Returns the baseline
    /// left.
    pub(crate) fn baseline_for_commit(
        &self,
        wt: &Worktree,
        changes: WorkdirChanges<'_>,
    ) -> Result<Baseline, GitError> {
        let mut baseline = self.baseline_of(&wt.path);
        let changed = baseline.changed(&wt.path, changes);
        if !changed.is_empty() {
            for path in &changed {
                baseline.forget(path);
            }
            baseline.save()?;
            tracing::info!(lane = %wt.name, paths = ?changed, "the worker changed files breeze's own steps left; they are its work now");
        }
        Ok(baseline)
    }

    /// Before the clean lane at `at` moves from tree `from` to tree `to`: puts every
    /// baseline path that the move writes (a path the two trees differ in, or one inside
    /// or above such a path) back to what `from` has — removed when `from` has nothing
    /// there — and drops it from the baseline, so that the move finds nothing of
    /// breeze's own in its way.
    pub(crate) fn put_back_baseline_in_way(
        &self,
        wrepo: &Repository,
        at: &Path,
        from: &Tree<'_>,
        to: &Tree<'_>,
    ) -> Result<(), GitError> {
        let mut baseline = self.baseline_of(at);
        if baseline.is_empty() {
            return Ok(());
        }
        let touched: BTreeSet<String> =
            tree_diff_paths(wrepo, from, to)?.iter().map(RepoPath::display).collect();
        let in_way: Vec<String> = baseline
            .paths()
            .filter(|rel| {
                let below = format!("{rel}/");
                Path::new(rel)
                    .ancestors()
                    .any(|up| up.to_str().is_some_and(|up| touched.contains(up)))
                    || touched.range(below.clone()..).next().is_some_and(|t| t.starts_with(&below))
            })
            .map(str::to_string)
            .collect();
        if in_way.is_empty() {
            return Ok(());
        }
        for rel in &in_way {
            if baseline.holds(at, rel) {
                if from.get_path(Path::new(rel)).is_ok() {
                    let path = [RepoPath(rel.as_bytes().to_vec())];
                    if let Err(conflicts) =
                        checkout_paths(wrepo, from, &path, (Mode::Force, IndexFile::Written), at)?
                    {
                        return Err(GitError::Dirty { path: at.to_path_buf(), paths: conflicts });
                    }
                } else {
                    remove_entry(&at.join(rel))?;
                }
            }
            baseline.forget(rel);
        }
        baseline.save()?;
        tracing::info!(checkout = %at.display(), paths = ?in_way, "put breeze's own files back before moving the lane");
        Ok(())
    }

    /// Forgets lane `name`'s baseline (a new worktree of that name starts without one).
    pub(crate) fn forget_baseline(&self, name: &str) -> Result<(), GitError> {
        remove_entry(&self.lane_home(name).join(BASELINE_FILE))
    }
}
