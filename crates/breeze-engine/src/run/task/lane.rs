//! A task's worktree: its lane's worktree moved to the task (checking out only the paths
//! that differ), or a new one the first time; provisioning (ignored files, the setup
//! command); and moving a conflicted task onto the main tip it conflicted with.

use breeze_protocol::{ConflictInfo, EventKind};

use super::driver::TaskDriver;
use crate::error::EngineError;
use crate::lane_record::{LaneRecord, SetupDone};
use crate::run::book::Transition;
use crate::run::context::{ProjectCommand, ProjectRun};
use crate::run::lane_removal::{files, late_writes, remove_lane};
use crate::run_dir::file_slug;

impl TaskDriver {
    /// Gives the task a worktree on its branch and marks the lane as written by it.
    pub(super) async fn take_lane(&mut self) -> Result<(), EngineError> {
        // Preparing the lane changes its files: no other role may be blamed for that.
        let current = self.ctx.lane(self.lane).map(|wt| wt.path);
        let preparing = current.map(|path| self.ctx.roles.guard.lane_writer(&path));
        let worktree = self.prepare_worktree().await?;
        // The lane's watch (started when the worktree was created; here for a worktree
        // adopted from an interrupted run, whose first look is then a full pass).
        let (watches, path) = (self.ctx.roles.watches.clone(), worktree.path.clone());
        self.ctx.blocking(move || Ok(watches.watch(&path, false))).await?;
        self.worktree = Some(worktree);
        self.hold_lane();
        drop(preparing);
        let phase = self.record().phase;
        if phase == crate::snapshot::TaskPhase::Queued {
            self.ctx.book.transition(self.index, Transition::Work).await?;
        }
        Ok(())
    }

    /// The branch the task works on: its own from an earlier attempt, or a new
    /// `task/<slug>` — `task/<slug>-2`, … when an earlier run left one with work.
    async fn branch_and_base(&self) -> Result<(String, Option<breeze_git::Oid>), EngineError> {
        if let Some(branch) = self.record().branch {
            return Ok((branch, None));
        }
        // main's tip, or the remote branch's: the landing mode says.
        let base = self.land.work_base(&self.ctx, self.index).await?;
        let slug = breeze_git::Repo::slug(&self.id);
        let branch = self
            .ctx
            .git(move |repo| {
                let mut name = format!("task/{slug}");
                let mut n = 1;
                while repo.branch_exists(&name)? {
                    n += 1;
                    name = format!("task/{slug}-{n}");
                }
                Ok(name)
            })
            .await?;
        Ok((branch, Some(base)))
    }

    /// The lane's worktree moved to the task — the lane a finished run kept, the first
    /// time a lane is used in this run — or a new lane worktree, or when the lane's
    /// worktree cannot be reused (a worker left it in a state breeze will not discard; it
    /// stays on disk for the user and `breeze clean`). Then set up as its inputs ask.
    async fn prepare_worktree(&self) -> Result<breeze_git::Worktree, EngineError> {
        let (branch, fresh_base) = self.branch_and_base().await?;
        let interrupted = match fresh_base {
            None => self.take_interrupted_attempt(&branch).await,
            Some(_) => None,
        };
        let (current, adopted) = match (interrupted, self.ctx.lane(self.lane)) {
            (Some(wt), _) => (Some(wt), true),
            (None, Some(wt)) => (Some(wt), false),
            (None, None) => {
                let kept = self.adopt_kept_lane().await;
                let adopted = kept.is_some();
                (kept, adopted)
            }
        };
        let reused = match current {
            // Resuming on the lane that already holds this task's worktree: keep it exactly
            // as the interrupted attempt left it.
            Some(wt) if fresh_base.is_none() && wt.branch == branch => Some(wt),
            Some(wt) => {
                let moved = self.move_lane(wt, &branch, fresh_base).await;
                if moved.is_none() && adopted {
                    // Not this run's lane after all: it stays for the user, said as such.
                    self.ctx.release_lane(self.lane, None);
                }
                moved
            }
            None => None,
        };
        let (worktree, created) = match reused {
            Some(wt) => (wt, false),
            None => (self.create_lane_worktree(&branch, fresh_base).await?, true),
        };
        if let Some(base) = fresh_base {
            self.change(|record| {
                record.branch = Some(branch.clone());
                record.base = Some(base.into());
                record.head = Some(base.into());
            })
            .await?;
        }
        self.ctx
            .book
            .journal(EventKind::WorktreeCreated {
                task: self.id.clone(),
                path: worktree.path.display().to_string(),
                branch,
                base: worktree.base.to_string(),
            })
            .await?;
        if created {
            // A fresh checkout agrees with git: from now on only what changes is looked at,
            // what provisioning and the setup command leave included.
            let (watches, path) = (self.ctx.roles.watches.clone(), worktree.path.clone());
            self.ctx.blocking(move || Ok(watches.watch(&path, true))).await?;
        }
        if created || (adopted && !self.ctx.config.worktree_include.is_empty()) {
            self.provision(&worktree).await?;
        }
        self.set_up(&worktree, created).await?;
        self.ctx.set_lane(self.lane, worktree.clone());
        Ok(worktree)
    }

    /// The lane a finished run kept for this one (`lane-<n>`, else `lane-<n>-<k>`), watched
    /// from now on and marked as this run's: a parked lane is first compared with how it
    /// was parked — its top folder's times; the recorded folders that are gone — and what
    /// changed is saved on a branch and put back ([`breeze_git::Repo::save_lane_leftovers`]);
    /// a lane its run did not park (killed, aborted) gets a full look when it moves. `None`
    /// when there is none to take.
    async fn adopt_kept_lane(&self) -> Option<breeze_git::Worktree> {
        let root = self.ctx.repo.worktree_root().ok()?;
        for name in crate::lane_record::lane_names(self.lane) {
            if !root.join(&name).exists() {
                return None;
            }
            let found = {
                let name = name.clone();
                self.ctx.git(move |repo| repo.find_worktree(&name)).await
            };
            let Ok(Some(worktree)) = found else { continue };
            // Another task's interrupted attempt is left for that task to take up
            // ([`Self::take_interrupted_attempt`]): moved away, its branch would be checked
            // out nowhere breeze looks, or still here while that task makes a new lane.
            if self.holds_another_tasks_attempt(&worktree) {
                continue;
            }
            // A lane of this run that took up its task's interrupted attempt here has it.
            let Some(before) = self.ctx.claim_lane(self.lane, &worktree) else { continue };
            if self.take_kept(&worktree).await {
                return Some(worktree);
            }
            self.ctx.release_lane(self.lane, before);
        }
        None
    }

    /// Whether `worktree` has the branch of another task of this run checked out whose
    /// attempt was interrupted there (working or being reviewed: a change request sends it
    /// back to that worktree).
    fn holds_another_tasks_attempt(&self, worktree: &breeze_git::Worktree) -> bool {
        use crate::snapshot::TaskPhase as Phase;
        self.ctx.book.read(|snapshot| {
            snapshot.tasks.iter().enumerate().any(|(index, task)| {
                index != self.index
                    && task.branch.as_deref() == Some(worktree.branch.as_str())
                    && matches!(task.phase, Phase::Working | Phase::Reviewing)
            })
        })
    }

    /// The worktree an interrupted run left with the task's `branch` checked out (killed
    /// mid-attempt, its lane kept), taken up by this lane when another lane of the earlier
    /// run held it: the attempt goes on there as the kill left it, as it does on its own
    /// lane. `None` when this lane holds the branch already, or no kept lane of breeze's
    /// that no lane of this run holds has it.
    async fn take_interrupted_attempt(&self, branch: &str) -> Option<breeze_git::Worktree> {
        if self.ctx.lane(self.lane).is_some_and(|wt| wt.branch == branch) {
            return None;
        }
        let root = self.ctx.repo.worktree_root().ok()?;
        let wanted = branch.to_string();
        let holding = self
            .ctx
            .git(move |repo| {
                for path in repo.branch_checkouts(&wanted)? {
                    let name = path.file_name().and_then(|name| name.to_str()).unwrap_or("");
                    if path.parent() != Some(root.as_path()) || !name.starts_with("lane-") {
                        continue;
                    }
                    if let Some(wt) = repo.find_worktree(name)?.filter(|wt| wt.branch == wanted) {
                        crate::run::session::repair_interrupted_lane(repo, &wt)?;
                        return Ok(Some(wt));
                    }
                }
                Ok(None)
            })
            .await
            .ok()
            .flatten()?;
        let before = self.ctx.claim_lane(self.lane, &holding)?;
        if self.take_kept(&holding).await {
            tracing::info!(lane = self.lane, worktree = %holding.name, branch, "took up the task's interrupted attempt in its kept lane");
            return Some(holding);
        }
        self.ctx.release_lane(self.lane, before);
        None
    }

    /// Makes the kept lane `worktree` this run's (see [`Self::adopt_kept_lane`]); whether
    /// it can be.
    async fn take_kept(&self, worktree: &breeze_git::Worktree) -> bool {
        let repo_root = self.ctx.repo.workdir().to_path_buf();
        let record = crate::lane_record::load(&repo_root, &worktree.name);
        let parked = record.clone().filter(|record| record.parks(worktree));
        let (watches, path) = (self.ctx.roles.watches.clone(), worktree.path.clone());
        let watched = match parked {
            Some(record) => match self.take_parked(worktree, record).await {
                Ok(()) => Ok(()),
                Err(err) => {
                    tracing::warn!(
                        "{}: cannot put it back as it was parked ({err}); it is left as it is",
                        worktree.path.display()
                    );
                    watches.forget(&path);
                    return false;
                }
            },
            // Not parked by its run: the first look is a full pass.
            None => {
                self.ctx
                    .blocking(move || {
                        watches.watch(&path, false);
                        Ok(())
                    })
                    .await
            }
        };
        let (run_id, name) = (self.ctx.run_id.clone(), worktree.name.clone());
        let recorded = self
            .ctx
            .blocking(move || {
                crate::lane_record::save(&repo_root, &name, &LaneRecord::in_use(&run_id, record));
                Ok(())
            })
            .await;
        tracing::info!(lane = %worktree.name, "took a lane kept from an earlier run");
        watched.is_ok() && recorded.is_ok()
    }

    /// Watches the parked lane `worktree` from the folders its run recorded when its top
    /// folder is as parked (one `stat`, no listing; see `lane_record` for what this does
    /// not see), else from a listing after a full look; what changed since it was parked
    /// — the recorded folders that are gone, or anything on a full look — is saved on a
    /// branch and put back, said to the user.
    async fn take_parked(
        &self,
        worktree: &breeze_git::Worktree,
        record: LaneRecord,
    ) -> Result<(), EngineError> {
        let (watches, path) = (self.ctx.roles.watches.clone(), worktree.path.clone());
        let known = self.ctx.blocking(move || Ok(record.known_folders(&path))).await?;
        let path = worktree.path.clone();
        let Some(known) = known else {
            self.repair_parked(worktree, breeze_supervise::TreeChanges::unknown(), &[]).await?;
            self.ctx
                .blocking(move || {
                    watches.watch(&path, true);
                    Ok(())
                })
                .await?;
            return Ok(());
        };
        let skipped = known.skipped.clone();
        let watch = self.ctx.blocking(move || Ok(watches.watch_known(&path, &known))).await?;
        let changes = watch.changes();
        self.repair_parked(worktree, changes.clone(), &skipped).await?;
        watch.settle(&changes);
        Ok(())
    }

    /// Saves what differs from git in the parked lane `worktree` at `changes` (not looking
    /// into the skipped folders `skipped`, build outputs a parked lane keeps) on a branch
    /// and puts it back, said to the user.
    async fn repair_parked(
        &self,
        worktree: &breeze_git::Worktree,
        changes: breeze_supervise::TreeChanges,
        skipped: &[std::path::PathBuf],
    ) -> Result<(), EngineError> {
        let paths: Option<Vec<std::path::PathBuf>> = changes
            .paths()
            .map(|paths| paths.iter().filter(|path| !skipped.contains(path)).cloned().collect());
        if paths.as_ref().is_some_and(Vec::is_empty) {
            return Ok(());
        }
        let wt = worktree.clone();
        let saved = self
            .ctx
            .git(move |repo| {
                let changes = match &paths {
                    Some(paths) => breeze_git::WorkdirChanges::Only(paths),
                    None => breeze_git::WorkdirChanges::Unknown,
                };
                repo.save_lane_leftovers(&wt, changes)
            })
            .await?;
        if let Some((branch, paths)) = saved {
            self.ctx.book.report(crate::progress::ProgressEvent::Kept {
                what: format!("branch {branch}"),
                reason: format!(
                    "{} changed in the kept lane {} since the last run; saved there and put back before the lane was reused",
                    files(&paths),
                    worktree.path.display()
                ),
            });
        }
        Ok(())
    }

    /// Runs `worktree.setup` in the lane when it was not set up for what its HEAD holds
    /// now — a new lane, a kept lane whose inputs (manifests, lockfiles, a setup script)
    /// changed, a lane moved to a base that changed them — and records what it left as the
    /// lane's baseline.
    async fn set_up(
        &self,
        worktree: &breeze_git::Worktree,
        created: bool,
    ) -> Result<(), EngineError> {
        let argv = self.ctx.config.worktree_setup.clone();
        let root = self.ctx.repo.workdir().to_path_buf();
        // A new worktree starts a new record (one an earlier lane of that name left says
        // nothing of it).
        let mut record = match created {
            true => LaneRecord::in_use(&self.ctx.run_id, None),
            false => crate::lane_record::load(&root, &worktree.name)
                .unwrap_or_else(|| LaneRecord::in_use(&self.ctx.run_id, None)),
        };
        let mut changed = false;
        if !argv.is_empty() {
            let (branch, base) = (worktree.branch.clone(), worktree.base);
            let key = self
                .ctx
                .git(move |repo| {
                    let head = repo.branch_tip(&branch)?.unwrap_or(base);
                    crate::preflight::setup_trial::setup_inputs(repo, head, &argv)
                })
                .await
                .map(|(_, key)| key)
                .unwrap_or_default();
            if record.setup.as_ref().is_none_or(|done| done.key != key || key.is_empty()) {
                self.run_setup(worktree).await?;
                record.setup = Some(SetupDone { key, ran_at: crate::clock::now_rfc3339() });
                changed = true;
            }
        }
        // A new lane's disk use is not measured here (one `stat` per file, more than the
        // rest of a run's own calls): `breeze doctor` measures it, `breeze status` says so.
        changed |= created;
        if changed {
            let name = worktree.name.clone();
            self.ctx
                .blocking(move || {
                    crate::lane_record::save(&root, &name, &record);
                    Ok(())
                })
                .await?;
        }
        Ok(())
    }

    /// The lane's worktree moved to `branch` (at `base` for a new branch), or `None` when
    /// it cannot be.
    async fn move_lane(
        &self,
        wt: breeze_git::Worktree,
        branch: &str,
        base: Option<breeze_git::Oid>,
    ) -> Option<breeze_git::Worktree> {
        let path = wt.path.clone();
        let target = branch.to_string();
        // The check for work left behind looks at what the lane's watch saw change since
        // the last commit; the move writes only the paths the two trees differ in.
        let placed = match base {
            Some(base) => {
                self.ctx
                    .git_watched(&path, move |repo, changes| {
                        // Nothing writes a lane between its task's last step and this move:
                        // what git ignores that was written since goes (see `late_writes`).
                        late_writes(
                            &wt,
                            repo.remove_ignored_writes(&wt, changes, &breeze_git::is_agent_config)?,
                        );
                        repo.move_worktree_changed(&wt, &target, base, changes)
                    })
                    .await
            }
            None => self.ctx.git(move |repo| repo.switch_worktree(&wt, &target)).await,
        };
        match placed {
            Ok(wt) => Some(wt),
            Err(err) => {
                // A new worktree replaces it; this one is no longer watched.
                self.ctx.roles.watches.forget(&path);
                tracing::warn!(
                    "lane {}: {} cannot be reused ({err}); it is left as it is and a new worktree is created",
                    self.lane,
                    path.display()
                );
                None
            }
        }
    }

    /// A new worktree for the lane: `lane-<n>` — a clean worktree an earlier run left
    /// under that name is removed first (nothing is lost: all of it is committed) — or
    /// `lane-<n>-<k>` when that name holds work or is not breeze's.
    async fn create_lane_worktree(
        &self,
        branch: &str,
        base: Option<breeze_git::Oid>,
    ) -> Result<breeze_git::Worktree, EngineError> {
        let lane = self.lane;
        let lock_reason = format!("breeze run {} (lane {lane})", self.ctx.run_id);
        let plain = format!("lane-{lane}");
        if self.ctx.repo.worktree_root()?.join(&plain).exists() {
            self.reclaim(&plain).await;
        }
        let branch = branch.to_string();
        self.ctx
            .git(move |repo| {
                // A name another worktree still holds — here, or kept with work where an
                // earlier breeze made it — is left to it.
                let (free, name) = crate::lane_record::lane_names(lane)
                    .map(|name| (repo.worktree_name_free(&name), name))
                    .find(|(free, _)| !matches!(free, Ok(false)))
                    .unwrap_or_else(|| (Ok(true), plain.clone()));
                free?;
                match base {
                    Some(base) => repo.create_worktree(&name, &branch, base, &lock_reason),
                    None => repo.create_worktree_on_branch(&name, &branch, &lock_reason),
                }
            })
            .await
    }

    /// Removes the worktree `name` when breeze created it and it holds no uncommitted
    /// work (a lane an aborted or failed run left, or one this run could not move); one
    /// with work stays, and the user is told where it is.
    async fn reclaim(&self, name: &str) {
        let found = {
            let name = name.to_string();
            self.ctx.git(move |repo| repo.find_worktree(&name)).await
        };
        // Not breeze's, not a worktree, or not on a branch: left alone; and another lane's.
        let Ok(Some(worktree)) = found else { return };
        if self.ctx.held_by_another_lane(self.lane, &worktree.path) {
            return;
        }
        // This lane's own worktree, which could not be moved: said already (and at the end).
        let own = self.ctx.lane(self.lane).is_some_and(|wt| wt.path == worktree.path);
        match remove_lane(&self.ctx, &worktree.path).await {
            Ok(breeze_git::RemoveOutcome::KeptDirty { paths }) if !own => {
                self.ctx.book.report(crate::progress::ProgressEvent::Kept {
                    what: format!("lane {}", worktree.path.display()),
                    reason: format!(
                        "an earlier run left uncommitted changes in it: {}; lane {} gets a worktree of another name (`breeze clean --force` discards them)",
                        files(&paths),
                        self.lane
                    ),
                });
            }
            Ok(_) => {}
            Err(err) => tracing::warn!("cannot remove {}: {err}", worktree.path.display()),
        }
    }

    /// Copies the declared ignored files (`worktree.include`) into the lane.
    pub(super) async fn provision(
        &self,
        worktree: &breeze_git::Worktree,
    ) -> Result<(), EngineError> {
        let config = &self.ctx.config;
        if !config.worktree_include.is_empty() {
            let include = config.worktree_include.clone();
            let wt = worktree.clone();
            let report = self.ctx.git(move |repo| repo.provision(&wt, &include)).await?;
            tracing::info!(task = %self.id, copied = ?report.copied, "provisioned {}", worktree.path.display());
            if !report.unmatched.is_empty() {
                tracing::warn!(
                    "worktree.include: {} matched nothing in {}; workers will not have it",
                    report.unmatched.join(", "),
                    self.ctx.repo.workdir().display()
                );
            }
            if !report.not_ignored.is_empty() {
                tracing::warn!(
                    "worktree.include: {} are tracked or not ignored by git; they reach worktrees by checkout, not by copying",
                    report.not_ignored.join(", ")
                );
            }
        }
        Ok(())
    }

    /// Runs `worktree.setup` in the lane, then records what it left there as the lane's
    /// baseline (the paths the lane's watch saw written since the lane last agreed with
    /// git that are now uncommitted): never the task's change.
    async fn run_setup(&self, worktree: &breeze_git::Worktree) -> Result<(), EngineError> {
        // Setup's git (a build that stamps its version, a hook installer) reads the lane's
        // index file, which the move left behind HEAD.
        self.settle_lane_index(worktree).await?;
        let config = &self.ctx.config;
        let name = worktree.path.file_name().and_then(|n| n.to_str()).unwrap_or("worktree");
        let log = self.ctx.run_dir.unused_log(&format!("{}.setup.{name}", file_slug(&self.id)));
        let ProjectRun { outcome, refused } = self
            .ctx
            .run_project_command(ProjectCommand::new(
                &self.id,
                "worktree.setup",
                &config.worktree_setup,
                (&worktree.path, self.lane_env()),
                &log,
                config.setup_timeout,
            ))
            .await?;
        if outcome.ending.is_success() {
            return self.record_baseline(worktree).await;
        }
        let see_log = format!("see the setup log {}.stderr", log.display());
        Err(EngineError::usage(
            format!(
                "worktree.setup {} in {}: {}",
                outcome.ending,
                worktree.path.display(),
                outcome.stderr_tail.lines().last().unwrap_or("")
            ),
            match refused {
                Some(hint) => format!("{hint}; {see_log}"),
                None => see_log,
            },
        ))
    }

    /// Writes the lane's index file when a commit or the lane's move left it behind HEAD
    /// (`breeze_git::Repo::settle_lane_index`): before a git that is not breeze's reads the
    /// lane.
    pub(super) async fn settle_lane_index(
        &self,
        worktree: &breeze_git::Worktree,
    ) -> Result<(), EngineError> {
        let wt = worktree.clone();
        self.ctx.git(move |repo| repo.settle_lane_index(&wt)).await
    }

    /// Records what breeze's own step that just ran in the lane (setup, a review check)
    /// left there as the lane's baseline, from the lane's watch; the watch is settled.
    pub(super) async fn record_baseline(
        &self,
        worktree: &breeze_git::Worktree,
    ) -> Result<(), EngineError> {
        let wt = worktree.clone();
        let recorded = self
            .ctx
            .git_watched(&worktree.path, move |repo, changes| repo.record_baseline(&wt, changes))
            .await?;
        if !recorded.is_empty() {
            tracing::info!(
                task = %self.id,
                "{}: breeze's own steps left {} there; they are not the task's change",
                worktree.path.display(),
                recorded.join(", ")
            );
        }
        Ok(())
    }

    /// After a landing conflict, moves the worktree onto the main tip it conflicted with,
    /// its change re-applied and the conflicts left in the files for the worker. Done once:
    /// afterwards the task's base is that tip.
    pub(super) async fn rebase_onto_conflict(&mut self) -> Result<(), EngineError> {
        let record = self.record();
        let (Some(onto), Some(base), Some(head)) = (record.conflict_onto, record.base, record.head)
        else {
            return Ok(());
        };
        if base == onto {
            return Ok(());
        }
        let Some(wt) = self.worktree.clone() else { return Ok(()) };
        let rebased = self
            .ctx
            .git(move |repo| repo.rebase_worktree_with_conflicts(&wt, base.0, head.0, onto.0))
            .await?;
        self.ctx.set_lane(self.lane, rebased.worktree.clone());
        self.worktree = Some(rebased.worktree);
        self.change(|record| {
            record.base = Some(onto);
            record.head = Some(onto);
            record.conflict = Some(ConflictInfo { files: rebased.conflicts });
        })
        .await
    }
}
