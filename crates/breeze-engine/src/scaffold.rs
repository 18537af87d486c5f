//! The Scaffolder at plan time: `breeze plan --fill-writes` proposes write sets for the
//! tasks that have none, `breeze draft` turns a goal into new tasks. The role only reads;
//! the Lead validates its `plan-draft.v1` (paths inside the repository, one owner per shared
//! file, no cycles), asks once more with the problems when it is invalid, pushes back once
//! when conflicts remain that narrower write sets would remove, and only then edits the
//! plan file — every other byte kept. `--fill-writes` writes what is usable and lists the
//! tasks still without a write set; `draft` renumbers its tasks after the plan's own when
//! their ids clash. `breeze plan --fill-ids` (no role) numbers the plan's to-do items that
//! have no id.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use breeze_git::Repo;
use breeze_plan::edit::NewTask;
use breeze_plan::{Analysis, Plan, PlanFormat, TaskId, WriteSet};
use breeze_protocol::{
    DraftConflict, DraftTask, PlanDraft, RepositoryView, Role, ScaffoldInput, ScaffoldInputV1,
    ScaffoldMode, validate,
};
use breeze_supervise::Supervisor;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::containment::{Containment, RoleGuard};
use crate::error::EngineError;
use crate::journal::RunStore;
use crate::lock::RepoLock;
use crate::roles::backoff::{Backoff, BackoffSettings};
use crate::roles::{RoleCall, RoleOutcome, RoleRunner, RoleRunnerParts, definition, prompt};
use crate::run_dir::RunDir;

/// Files of the repository shown to the Scaffolder, at most.
const REPOSITORY_VIEW_FILES: usize = 2000;
/// Folders no write set may name.
const RESERVED: [&str; 3] = [".git", breeze_git::STATE_DIR, breeze_git::WORKTREES_NOTE_DIR];

/// What a planning command works on.
#[derive(Clone)]
pub struct ScaffoldOptions {
    /// A directory inside the repository.
    pub repo_dir: PathBuf,
    /// The plan file; default: `plan.toml`, then `Plans.md`, at the repository root.
    pub plan: Option<PathBuf>,
    /// Use this configuration instead of reading `breeze.toml`.
    pub config: Option<Config>,
    /// Process supervisor settings.
    pub supervisor: Supervisor,
    /// How backend troubles are waited out.
    pub backoff: BackoffSettings,
}

impl ScaffoldOptions {
    /// Options for the repository containing `repo_dir`, with defaults for the rest.
    pub fn new(repo_dir: impl Into<PathBuf>) -> ScaffoldOptions {
        ScaffoldOptions {
            repo_dir: repo_dir.into(),
            plan: None,
            config: None,
            supervisor: Supervisor::new(),
            backoff: BackoffSettings::default(),
        }
    }
}

/// What `--fill-writes` did.
#[derive(Debug)]
pub struct FillReport {
    /// The plan file.
    pub plan_path: PathBuf,
    /// The plan and its analysis before.
    pub before: (Plan, Analysis),
    /// After (the file as written).
    pub after: (Plan, Analysis),
    /// The write sets written, by task.
    pub filled: BTreeMap<TaskId, Vec<String>>,
    /// The tasks asked about that still have no write set, each with why (no proposal, an
    /// empty one, or a refused one).
    pub unfilled: Vec<(TaskId, String)>,
    /// What the Lead asked again, and why (refused answers, pushback).
    pub asked_again: Vec<String>,
    /// The Scaffolder's notes for the user.
    pub notes: Option<String>,
}

/// What `breeze plan --fill-ids` did.
#[derive(Debug)]
pub struct FillIdsReport {
    /// The plan file.
    pub plan_path: PathBuf,
    /// The ids written (none: the file was left as it was).
    pub numbered: Vec<breeze_plan::plans_md::IdProposal>,
}

/// What `breeze draft` did.
#[derive(Debug)]
pub struct DraftReport {
    /// The plan file.
    pub plan_path: PathBuf,
    /// Whether it was created (or replaced `breeze init`'s untouched template).
    pub created: bool,
    /// The tasks added.
    pub added: Vec<TaskId>,
    /// The drafted ids renumbered after the plan's own (old → new): the scaffolder's clashed
    /// with the plan's.
    pub renumbered: Vec<(String, String)>,
    /// The plan and its analysis after.
    pub after: (Plan, Analysis),
    /// What the Lead asked again, and why.
    pub asked_again: Vec<String>,
    /// The Scaffolder's notes for the user.
    pub notes: Option<String>,
}

/// Proposes write sets for the plan's tasks that have none and writes them into the plan:
/// every usable proposal, even when some tasks get none (they are listed in
/// [`FillReport::unfilled`]). Fails, the plan untouched, only when nothing usable was
/// proposed.
pub async fn fill_writes(
    options: ScaffoldOptions,
    cancel: CancellationToken,
) -> Result<FillReport, EngineError> {
    let session = Session::open(&options)?;
    let plan_path = session.plan_path(options.plan.as_deref())?;
    let plan = session.load_plan(&plan_path)?;
    let analysis = breeze_plan::analyze(&plan, session.config.max_workers)?;
    let empty: Vec<&breeze_plan::Task> =
        plan.tasks.iter().filter(|t| t.writes.is_empty()).collect();
    if empty.is_empty() {
        return Err(EngineError::usage(
            format!("every task of {} has a write set", plan_path.display()),
            "nothing to fill; `breeze plan` shows the write groups",
        ));
    }
    let mut input = session.input(ScaffoldMode::FillWrites, &plan, None)?;
    input.tasks = empty.iter().map(|task| draft_task(task, &[])).collect();
    input.other_tasks = plan
        .tasks
        .iter()
        .filter(|t| !t.writes.is_empty())
        .map(|t| draft_task(t, t.writes.entries()))
        .collect();
    let max_workers = session.config.max_workers;
    let check = |draft: &PlanDraft| fill_problems(&plan, &input.tasks, draft, max_workers);
    let (draft, mut asked_again, refused) =
        session.ask_until_valid(input.clone(), &check, true, &cancel).await?;
    let (mut chosen, mut unfilled) = usable_fills(&plan, &input.tasks, &draft, max_workers);
    if chosen.is_empty() {
        let why = if refused.is_empty() {
            let reasons: Vec<String> =
                unfilled.iter().map(|(id, why)| format!("task `{id}`: {why}")).collect();
            format!("the scaffolder proposed no usable write set ({})", reasons.join("; "))
        } else {
            format!("the scaffolder's proposal was refused twice: {}", refused.join("; "))
        };
        return Err(EngineError::usage(
            format!("{why}; the plan is unchanged"),
            "see its log under .breeze/planning/, fix roles.scaffolder in breeze.toml, or write the write sets by hand",
        ));
    }
    let mut notes = draft.notes.clone();
    let narrowable = narrowable_conflicts(&plan, &chosen, max_workers);
    if !narrowable.is_empty() {
        asked_again
            .push(format!("{} conflict(s) narrower write sets may remove", narrowable.len()));
        let mut pushback = input.clone();
        pushback.conflicts = narrowable.clone();
        if let Ok(second) = session.ask(&pushback, &cancel).await
            && check(&second).is_empty()
        {
            let (narrowed, still) = usable_fills(&plan, &input.tasks, &second, max_workers);
            if narrowed.len() >= chosen.len()
                && narrowable_conflicts(&plan, &narrowed, max_workers).len() < narrowable.len()
            {
                (chosen, unfilled) = (narrowed, still);
                notes = second.notes.clone();
            }
        }
    }
    let text = read_plan(&plan_path)?;
    let edited = breeze_plan::edit::set_writes(
        &plan,
        &text,
        &chosen,
        crate::plan_extensions::PLAN_EXTENSIONS,
    )?;
    write_plan(&plan_path, &edited)?;
    let after_plan = session.load_plan(&plan_path)?;
    let after_analysis = breeze_plan::analyze(&after_plan, max_workers)?;
    Ok(FillReport {
        plan_path,
        before: (plan, analysis),
        after: (after_plan, after_analysis),
        filled: chosen,
        unfilled,
        asked_again,
        notes,
    })
}

/// Numbers the to-do items of the plan that have no task id, and later holders of an id
/// repeated in one section (`breeze plan --fill-ids`), every other byte kept. Inside a
/// repository it holds the repository's lock while it edits (not while a run goes on);
/// it asks no role.
pub fn fill_ids(options: &ScaffoldOptions) -> Result<FillIdsReport, EngineError> {
    let (root, _lock) = match Repo::open(&options.repo_dir) {
        Ok(repo) => {
            let root = repo.workdir().to_path_buf();
            let lock = RepoLock::acquire(&root)?;
            (root, Some(lock))
        }
        Err(_) => (options.repo_dir.clone(), None),
    };
    let plan_path = resolve_plan_path(&root, options.plan.as_deref())?;
    let text = read_plan(&plan_path)?;
    let (edited, numbered) =
        breeze_plan::edit::fill_ids(&plan_path, plan_format(&plan_path), &text)?;
    if !numbered.is_empty() {
        write_plan(&plan_path, &edited)?;
    }
    Ok(FillIdsReport { plan_path, numbered })
}

/// A plan file's format by its name: `*.toml` is a plan.toml.
fn plan_format(path: &Path) -> PlanFormat {
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml")) {
        PlanFormat::Toml
    } else {
        PlanFormat::PlansMd
    }
}

/// Turns `goal` into new tasks appended to the plan (`out`, else the repository's plan,
/// else a new `Plans.md` from `template`).
pub async fn draft(
    options: ScaffoldOptions,
    goal: &str,
    out: Option<&Path>,
    template: &str,
    cancel: CancellationToken,
) -> Result<DraftReport, EngineError> {
    let session = Session::open(&options)?;
    let plan_path = match out {
        Some(path) => std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
        None => session.plan_path(None).unwrap_or_else(|_| session.root.join("Plans.md")),
    };
    // `breeze init`'s untouched template holds placeholders, not tasks: a draft replaces it.
    let created = !plan_path.exists()
        || std::fs::read_to_string(&plan_path)
            .is_ok_and(|text| crate::preflight::template::template_marker(&text).is_some());
    let format = plan_format(&plan_path);
    let text = if created {
        match format {
            PlanFormat::PlansMd => template_without_examples(template),
            PlanFormat::Toml => String::new(),
        }
    } else {
        read_plan(&plan_path)?
    };
    let existing = match created {
        true => None,
        false => Some(breeze_plan::load_with_extensions(
            &plan_path,
            crate::plan_extensions::PLAN_EXTENSIONS,
        )?),
    };
    let mut input = session.input(
        ScaffoldMode::Draft,
        existing.as_ref().unwrap_or(&empty_plan(&plan_path, format)),
        Some(goal),
    )?;
    input.other_tasks = existing
        .iter()
        .flat_map(|plan| plan.tasks.iter().map(|t| draft_task(t, t.writes.entries())))
        .collect();
    let existing_ids: Vec<TaskId> =
        existing.iter().flat_map(|plan| plan.ids()).collect::<BTreeSet<_>>().into_iter().collect();
    let last = existing.as_ref().and_then(|plan| plan.tasks.last()).map(|t| t.id.clone());
    let renumber = |draft: &PlanDraft| -> (Vec<NewTask>, Vec<(String, String)>) {
        let mut tasks: Vec<NewTask> = draft.tasks.iter().map(new_task).collect();
        let renames =
            breeze_plan::edit::renumber_new_tasks(&existing_ids, last.as_ref(), &mut tasks);
        (tasks, renames)
    };
    let check = |draft: &PlanDraft| {
        let (tasks, _) = renumber(draft);
        draft_problems(existing.as_ref(), &plan_path, format, &tasks, session.config.max_workers)
    };
    let (draft, asked_again, _) = session.ask_until_valid(input, &check, false, &cancel).await?;
    let (tasks, renumbered) = renumber(&draft);
    let edited = breeze_plan::edit::append_tasks(
        &plan_path,
        format,
        &text,
        &tasks,
        crate::plan_extensions::PLAN_EXTENSIONS,
    )?;
    write_plan(&plan_path, &edited)?;
    let after_plan = session.load_plan(&plan_path)?;
    let after_analysis = breeze_plan::analyze(&after_plan, session.config.max_workers)?;
    Ok(DraftReport {
        plan_path,
        created,
        added: tasks.iter().map(|t| TaskId::new(t.id.as_str())).collect(),
        renumbered,
        after: (after_plan, after_analysis),
        asked_again,
        notes: draft.notes,
    })
}

/// A planning session: the repository, its lock, and the role runner for the Scaffolder.
struct Session {
    root: PathBuf,
    config: Config,
    roles: RoleRunner,
    backoff: BackoffSettings,
    main_tip: String,
    repository: RepositoryView,
    calls: std::sync::atomic::AtomicU32,
    _lock: RepoLock,
}

impl Session {
    /// The plan at `path`, with the repository's shared files (its changelog's name, the
    /// files it has).
    fn load_plan(&self, path: &Path) -> Result<Plan, EngineError> {
        let mut plan =
            breeze_plan::load_with_extensions(path, crate::plan_extensions::PLAN_EXTENSIONS)?;
        plan.shared_files = crate::changelog::shared_files_in(
            &self.root,
            &self.config.main_branch,
            &self.config.land.changelog,
        );
        Ok(plan)
    }

    fn open(options: &ScaffoldOptions) -> Result<Session, EngineError> {
        let repo = Repo::open(&options.repo_dir)?;
        let root = repo.workdir().to_path_buf();
        let config = match options.config.clone() {
            Some(config) => config,
            None => Config::load(&root)?,
        };
        let containment = Containment::for_repository(&config, &repo)?;
        repo.ensure_excluded()?;
        let lock = RepoLock::acquire(&root)?;
        let listing = repo.files_on_main(REPOSITORY_VIEW_FILES)?;
        let repository = RepositoryView {
            truncated: listing.total > listing.files.len() as u64,
            files: listing.files,
            total_files: listing.total,
        };
        let main_tip = repo.main_tip()?;
        let id = format!("plan-{}", uuid::Uuid::now_v7());
        let run_dir = RunDir::planning(&root, &id);
        run_dir.create().map_err(|err| {
            EngineError::io(format!("cannot create {}", run_dir.root().display()), err)
        })?;
        let store = RunStore::open(&run_dir.events(), &run_dir.cycles(), &run_dir.snapshot())
            .map_err(|err| {
                EngineError::io(
                    format!("cannot open the files in {}", run_dir.root().display()),
                    err,
                )
            })?;
        let repo = Arc::new(repo);
        let guard = Arc::new(RoleGuard::new(containment, repo, main_tip));
        let roles = RoleRunner::new(RoleRunnerParts {
            config: config.clone(),
            run_dir,
            run_id: id,
            repo_root: root.clone(),
            store,
            supervisor: options.supervisor.clone(),
            engine_env: std::env::vars().collect(),
            guard,
            write_sets: BTreeMap::new(),
            sims: BTreeMap::new(),
            // Planning is not a run: no run's budget holds it.
            budget: Arc::new(crate::budget::Budget::unlimited(crate::budget::Prices::of(&config))),
            windows: Vec::new(),
            // Planning calls the scaffolder without a run's gate.
            calls_pass_the_gate: false,
            watches: Default::default(),
        });
        Ok(Session {
            root,
            config,
            roles,
            backoff: options.backoff,
            main_tip: main_tip.to_string(),
            repository,
            calls: Default::default(),
            _lock: lock,
        })
    }

    /// The plan file: the given path, else `plan.toml`, else `Plans.md` at the root.
    fn plan_path(&self, given: Option<&Path>) -> Result<PathBuf, EngineError> {
        resolve_plan_path(&self.root, given)
    }

    fn input(
        &self,
        mode: ScaffoldMode,
        plan: &Plan,
        goal: Option<&str>,
    ) -> Result<ScaffoldInput, EngineError> {
        Ok(ScaffoldInput {
            schema_version: ScaffoldInputV1,
            mode,
            plan_path: plan.path.display().to_string(),
            goal: goal.map(str::to_string),
            tasks: Vec::new(),
            other_tasks: Vec::new(),
            repository: self.repository.clone(),
            problems: Vec::new(),
            conflicts: Vec::new(),
        })
    }

    /// Asks, and once more with the problems when the answer is refused. Then, when the
    /// second answer is refused too: with `partial`, returns it with its problems (the
    /// caller keeps what is usable); else gives up with the problems, the plan untouched.
    async fn ask_until_valid(
        &self,
        mut input: ScaffoldInput,
        check: &dyn Fn(&PlanDraft) -> Vec<String>,
        partial: bool,
        cancel: &CancellationToken,
    ) -> Result<(PlanDraft, Vec<String>, Vec<String>), EngineError> {
        let mut asked_again = Vec::new();
        for try_number in 1..=2 {
            let (draft, problems) = match self.ask(&input, cancel).await {
                Ok(draft) => match check(&draft) {
                    problems if problems.is_empty() => return Ok((draft, asked_again, problems)),
                    problems => (Some(draft), problems),
                },
                Err(Refused::Answer(why)) => (None, vec![why]),
                Err(Refused::Stop(err)) => return Err(err),
            };
            if try_number == 2 {
                if let Some(draft) = draft.filter(|_| partial) {
                    return Ok((draft, asked_again, problems));
                }
                return Err(EngineError::usage(
                    format!(
                        "the scaffolder's proposal was refused twice: {}; the plan is unchanged",
                        problems.join("; ")
                    ),
                    "see its log under .breeze/planning/, fix roles.scaffolder in breeze.toml, or write the write sets by hand",
                ));
            }
            asked_again.push(format!("its answer was refused: {}", problems.join("; ")));
            input.problems = problems;
        }
        unreachable!("the loop returns on its second try")
    }

    /// One Scaffolder call (backend trouble waited out).
    async fn ask(
        &self,
        input: &ScaffoldInput,
        cancel: &CancellationToken,
    ) -> Result<PlanDraft, Refused> {
        let definition = definition::load(&self.root, Role::Scaffolder).map_err(|err| {
            Refused::Stop(EngineError::usage(err.to_string(), "fix the role definition file"))
        })?;
        let value = serde_json::to_value(input)
            .map_err(|err| Refused::Stop(EngineError::internal("the scaffold input")(err)))?;
        let mut backoff = Backoff::new(self.backoff);
        loop {
            let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            let call = RoleCall {
                role: Role::Scaffolder,
                task_id: "plan".into(),
                attempt: n,
                round: 1,
                cwd: self.root.clone(),
                base: self.main_tip.clone(),
                input: value.clone(),
                prompt: prompt::scaffolder(&definition, input),
                resume_session: None,
                label: n.to_string(),
                resume_baseline: None,
                lane: None,
                lane_env: None,
            };
            let reply = self.roles.invoke(call, cancel).await;
            if !reply.escaped.is_empty() {
                return Err(Refused::Stop(
                    self.roles.guard.escape_error("the scaffolder", &reply.escaped),
                ));
            }
            return match reply.outcome {
                RoleOutcome::Answered(value) => {
                    validate::parse::<PlanDraft>(value).map_err(|invalid| {
                        Refused::Answer(format!("not a valid plan-draft.v1: {invalid}"))
                    })
                }
                RoleOutcome::Trouble(trouble) => {
                    self.roles
                        .wait_out(&mut backoff, &trouble, "plan", Role::Scaffolder, cancel)
                        .await
                        .map_err(Refused::Stop)?;
                    continue;
                }
                RoleOutcome::Cancelled => Err(Refused::Stop(EngineError::Cancelled)),
                RoleOutcome::OverBudget(over) => Err(Refused::Stop(EngineError::OverBudget(over))),
                RoleOutcome::CouldNotStart(why) => Err(Refused::Stop(EngineError::usage(
                    format!("the scaffolder could not start: {why}"),
                    "check roles.scaffolder in breeze.toml (backend, command) and that the program is installed",
                ))),
                RoleOutcome::NoAnswer(why) => Err(Refused::Answer(format!("no answer: {why}"))),
                RoleOutcome::Ended(ending) => {
                    Err(Refused::Answer(format!("the scaffolder {ending}: {}", reply.diagnostics)))
                }
            };
        }
    }
}

/// The plan file: the given path, else `plan.toml`, else `Plans.md` at `root`.
fn resolve_plan_path(root: &Path, given: Option<&Path>) -> Result<PathBuf, EngineError> {
    if let Some(path) = given {
        return Ok(std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()));
    }
    ["plan.toml", "Plans.md"].iter().map(|name| root.join(name)).find(|p| p.is_file()).ok_or_else(
        || {
            EngineError::usage(
                format!(
                    "no plan given and neither plan.toml nor Plans.md exists in {}",
                    root.display()
                ),
                "pass a plan, or start one with `breeze draft \"GOAL\"` or `breeze init`",
            )
        },
    )
}

/// Why a Scaffolder call gave no draft.
enum Refused {
    /// Its answer is unusable: ask again.
    Answer(String),
    /// Asking again would not help.
    Stop(EngineError),
}

fn draft_task(task: &breeze_plan::Task, writes: &[String]) -> DraftTask {
    DraftTask {
        id: task.id.to_string(),
        title: task.title.clone(),
        dod: task.dod.clone(),
        writes: writes.to_vec(),
        depends_on: task.depends_on.iter().map(ToString::to_string).collect(),
        risk: task.risk.iter().map(|flag| flag.as_str().to_string()).collect(),
    }
}

fn new_task(task: &DraftTask) -> NewTask {
    NewTask {
        id: task.id.trim().to_string(),
        title: task.title.trim().to_string(),
        dod: task.dod.trim().to_string(),
        writes: task.writes.clone(),
        depends_on: task.depends_on.clone(),
        risk: task.risk.clone(),
    }
}

/// The proposed write sets, by task.
fn fills(draft: &PlanDraft) -> BTreeMap<TaskId, Vec<String>> {
    draft.tasks.iter().map(|task| (TaskId::new(task.id.trim()), task.writes.clone())).collect()
}

/// What is wrong with one write set: an entry that does not parse, points outside the
/// repository or into git's and breeze's own folders.
fn write_set_problems(id: &str, writes: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    if let Err(err) = WriteSet::new(writes) {
        problems.push(format!("task `{id}`: write-set entry `{}`: {}", err.entry, err.reason));
    }
    for entry in writes {
        let first = entry.trim_start_matches("./").split('/').next().unwrap_or_default();
        if RESERVED.contains(&first) {
            problems
                .push(format!("task `{id}`: `{entry}` is inside git's or breeze's own folders"));
        }
    }
    problems
}

/// Why a `fill-writes` draft is asked again: a bad write set, ids not asked about, and what
/// the plan analysis finds with the proposal (shared files with two owners, and the like).
/// A task without a proposal (or with an empty one) is no reason: it stays without.
fn fill_problems(
    plan: &Plan,
    asked: &[DraftTask],
    draft: &PlanDraft,
    max_workers: u32,
) -> Vec<String> {
    let asked_ids: BTreeSet<&str> = asked.iter().map(|t| t.id.as_str()).collect();
    let mut problems: Vec<String> = draft
        .tasks
        .iter()
        .map(|t| t.id.trim())
        .filter(|id| !asked_ids.contains(*id))
        .map(|id| {
            format!(
                "task `{id}` was not asked about (answer only for: {})",
                asked_ids.iter().copied().collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    for task in draft.tasks.iter().filter(|t| asked_ids.contains(t.id.trim())) {
        problems.extend(write_set_problems(task.id.trim(), &task.writes));
    }
    if problems.is_empty()
        && let Err(err) = breeze_plan::analyze(&with_writes(plan, &fills(draft)), max_workers)
    {
        problems.extend(err.problems().iter().map(|p| p.what.clone()));
    }
    problems
}

/// Write sets by task.
type Fills = BTreeMap<TaskId, Vec<String>>;

/// The usable write sets of a `fill-writes` draft, and the tasks asked about that get none,
/// each with why. A proposal with a bad entry is dropped; so are those the plan analysis
/// refuses together (two owners of a shared file), until the rest analyses.
fn usable_fills(
    plan: &Plan,
    asked: &[DraftTask],
    draft: &PlanDraft,
    max_workers: u32,
) -> (Fills, Vec<(TaskId, String)>) {
    let proposed: BTreeMap<&str, &DraftTask> =
        draft.tasks.iter().map(|t| (t.id.trim(), t)).collect();
    let mut chosen = BTreeMap::new();
    let mut unfilled = Vec::new();
    for task in asked {
        let id = TaskId::new(task.id.as_str());
        match proposed.get(task.id.as_str()) {
            None => unfilled.push((id, "no proposal".to_string())),
            Some(t) if t.writes.is_empty() => unfilled.push((id, "an empty proposal".to_string())),
            Some(t) => match write_set_problems(&task.id, &t.writes).first() {
                Some(problem) => unfilled.push((id, format!("refused: {problem}"))),
                None => {
                    chosen.insert(id, t.writes.clone());
                }
            },
        }
    }
    while !chosen.is_empty() {
        let Err(err) = breeze_plan::analyze(&with_writes(plan, &chosen), max_workers) else {
            break;
        };
        let before = chosen.len();
        for problem in err.problems() {
            for id in &problem.ids {
                if chosen.remove(id).is_some() {
                    unfilled.push((id.clone(), format!("refused: {}", problem.what)));
                }
            }
        }
        if chosen.len() == before {
            // A problem that names none of the proposals: keep none of them.
            let what = err.problems().first().map(|p| p.what.clone()).unwrap_or_default();
            unfilled.extend(chosen.keys().map(|id| (id.clone(), format!("refused: {what}"))));
            chosen.clear();
        }
    }
    unfilled.sort();
    (chosen, unfilled)
}

/// Why a `draft` is refused: no tasks, ids repeated, bad write sets, and what the analysis
/// of the plan with the new tasks (renumbered after the plan's own) finds: unknown
/// dependencies, cycles, shared files with two owners.
fn draft_problems(
    existing: Option<&Plan>,
    path: &Path,
    format: PlanFormat,
    tasks: &[NewTask],
    max_workers: u32,
) -> Vec<String> {
    if tasks.is_empty() {
        return vec!["the draft has no tasks".into()];
    }
    let known: BTreeSet<TaskId> = existing.map(Plan::ids).unwrap_or_default();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for task in tasks {
        let id = task.id.as_str();
        if id.is_empty() || id.chars().any(char::is_whitespace) {
            problems.push(format!("`{id}` is not a task id (no spaces, not empty)"));
        } else if known.contains(&TaskId::new(id)) || !seen.insert(id) {
            problems.push(format!("task id `{id}` is already used"));
        }
        if task.title.is_empty() {
            problems.push(format!("task `{id}` has no title"));
        }
        problems.extend(write_set_problems(id, &task.writes));
    }
    if !problems.is_empty() {
        return problems;
    }
    let base = existing.map_or_else(String::new, |plan| read_plan(&plan.path).unwrap_or_default());
    match breeze_plan::edit::append_tasks(
        path,
        format,
        &base,
        tasks,
        crate::plan_extensions::PLAN_EXTENSIONS,
    ) {
        Err(err) => problems.extend(err.problems().iter().map(|p| p.what.clone())),
        Ok(text) => {
            let parsed = match format {
                PlanFormat::Toml => breeze_plan::parse_plan_toml_with_extensions(
                    &text,
                    path,
                    crate::plan_extensions::PLAN_EXTENSIONS,
                ),
                PlanFormat::PlansMd => breeze_plan::parse_plans_md_with_archives(&text, path),
            };
            let analysed =
                parsed.and_then(|plan| breeze_plan::analyze(&plan, max_workers).map(|_| ()));
            if let Err(err) = analysed {
                problems.extend(err.problems().iter().map(|p| p.what.clone()));
            }
            let ids: BTreeSet<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
            for task in tasks {
                for dep in &task.depends_on {
                    if !ids.contains(dep.as_str()) && !known.contains(&TaskId::new(dep.as_str())) {
                        problems.push(format!("task `{}` depends on `{dep}`, which is neither drafted nor in the plan", task.id));
                    }
                }
            }
        }
    }
    problems
}

/// `plan` with the write sets of `writes` in place.
fn with_writes(plan: &Plan, writes: &BTreeMap<TaskId, Vec<String>>) -> Plan {
    let mut plan = plan.clone();
    for task in &mut plan.tasks {
        if let Some(entries) = writes.get(&task.id)
            && let Ok(set) = WriteSet::new(entries)
        {
            task.writes = set;
        }
    }
    plan
}

/// The conflicts of the plan with the proposal that involve a proposed write set and come
/// from a directory or a glob — narrower write sets may remove them. A file both tasks
/// name exactly is a real shared edit, not something narrowing fixes.
fn narrowable_conflicts(
    plan: &Plan,
    writes: &BTreeMap<TaskId, Vec<String>>,
    max_workers: u32,
) -> Vec<DraftConflict> {
    let candidate = with_writes(plan, writes);
    let Ok(analysis) = breeze_plan::analyze(&candidate, max_workers) else { return Vec::new() };
    analysis
        .conflicts
        .iter()
        .filter_map(|conflict| {
            let breeze_plan::ConflictReason::Overlap { witness } = &conflict.reason else {
                return None;
            };
            let (a, b) = (&candidate.tasks[conflict.a], &candidate.tasks[conflict.b]);
            if !writes.contains_key(&a.id) && !writes.contains_key(&b.id) {
                return None;
            }
            // Exact on both sides: one path both name, or a file one names with a path under
            // it the other names.
            let names = |task: &breeze_plan::Task, path: &str| {
                task.writes.entries().iter().any(|entry| entry == path)
            };
            let exact = match a.writes.collision(&b.writes) {
                Some(breeze_plan::Collision::FileAndFolder { file, inside, file_in_first }) => {
                    let (file_task, folder_task) = if file_in_first { (a, b) } else { (b, a) };
                    names(file_task, &file) && names(folder_task, &inside)
                }
                // The analysis's witness is a sentence for a file and a folder, and may name
                // another collision of the pair: the shared path is asked for again.
                Some(breeze_plan::Collision::Shared(path)) => names(a, &path) && names(b, &path),
                None => false,
            };
            (!exact).then(|| DraftConflict {
                a: a.id.to_string(),
                b: b.id.to_string(),
                witness: witness.clone(),
            })
        })
        .collect()
}

fn read_plan(path: &Path) -> Result<String, EngineError> {
    std::fs::read_to_string(path)
        .map_err(|err| EngineError::io(format!("cannot read {}", path.display()), err))
}

fn write_plan(path: &Path, text: &str) -> Result<(), EngineError> {
    crate::snapshot::write_atomically(path, text.as_bytes())
        .map_err(|err| EngineError::io(format!("cannot write {}", path.display()), err))
}

/// An empty plan at `path`, for a draft into a new file.
fn empty_plan(path: &Path, format: PlanFormat) -> Plan {
    Plan {
        path: path.to_path_buf(),
        format,
        tasks: Vec::new(),
        done: BTreeSet::new(),
        blocked: BTreeSet::new(),
        warnings: Vec::new(),
        extensions: BTreeMap::new(),
        unnumbered: Vec::new(),
        on_main: Default::default(),
        shared_files: Default::default(),
    }
}

/// The Plans.md template without its example rows (a drafted plan holds only its own).
fn template_without_examples(template: &str) -> String {
    let mut out = String::new();
    let mut rows = 0;
    for line in template.split_inclusive('\n') {
        if crate::preflight::template::template_marker(line).is_some() {
            continue;
        }
        if line.trim_start().starts_with('|') {
            rows += 1;
            if rows > 2 {
                continue;
            }
        }
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use breeze_plan::TaskId;

    use super::narrowable_conflicts;

    #[test]
    fn a_file_both_tasks_name_exactly_is_no_narrowable_conflict_whatever_else_collides() {
        // A may write `d` and `e`, B `d/three` and `e`: the pair collides on the file
        // `e` both name (a real shared edit) and on `d`, a file where B needs a folder.
        let plan = breeze_plan::parse_plan_toml(
            "[[task]]\nid = \"A\"\ntitle = \"a\"\ndod = \"x\"\nwrites = [\"x\"]\n\n\
             [[task]]\nid = \"B\"\ntitle = \"b\"\ndod = \"y\"\nwrites = [\"y\"]\n",
            Path::new("plan.toml"),
        )
        .unwrap();
        let writes = BTreeMap::from([
            (TaskId::new("A"), vec!["d".to_string(), "e".to_string()]),
            (TaskId::new("B"), vec!["d/three".to_string(), "e".to_string()]),
        ]);
        assert_eq!(narrowable_conflicts(&plan, &writes, 2), []);
    }
}
