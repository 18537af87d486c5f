//! The plan analysis: dependency DAG, conflict graph, write groups, parallelism, lanes.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use petgraph::algo::{tarjan_scc, toposort};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::unionfind::UnionFind;

use crate::conflicts::{AnalysisStats, find_overlaps};
use crate::error::{PlanError, Problem, ProblemKind};
use crate::id::TaskId;
use crate::model::{Plan, Task};
use crate::parallelism::{self, Parallelism};
use rustc_hash::FxHashSet;

/// Most workers breeze runs at once.
pub const MAX_WORKERS: u32 = 3;

/// Why two tasks conflict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConflictReason {
    /// Both write sets claim this path.
    Overlap {
        /// A repository path both tasks may write.
        witness: String,
    },
    /// This task declared no write set, so it conflicts with every task.
    NoWriteSet {
        /// The task without a write set.
        task: TaskId,
    },
}

/// Two tasks that must never run at the same time. `a` has the smaller id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// Index into [`Plan::tasks`].
    pub a: usize,
    /// Index into [`Plan::tasks`].
    pub b: usize,
    /// Why.
    pub reason: ConflictReason,
}

/// The result of [`analyze`].
#[derive(Debug, Clone)]
pub struct Analysis {
    /// Lanes a run can use: `min(max_workers clamped to 1..=3, widest set of tasks that can
    /// run together)` — `max_workers` when that set is only a greedy lower bound (an unused
    /// lane costs nothing: lanes are created when a task first takes one); 0 without tasks.
    pub workers: u32,
    /// The worker cap asked for, clamped to 1..=3.
    pub max_workers: u32,
    /// Write groups: connected components of the conflict graph, as indices into
    /// [`Plan::tasks`]; each group in id order, groups ordered by their first id.
    pub groups: Vec<Vec<usize>>,
    /// Every conflicting pair once, ordered by ids.
    pub conflicts: Vec<Conflict>,
    /// How much of the plan can run at once: the widest set of tasks that can run
    /// together, and the critical path.
    pub parallelism: Parallelism,
    /// The plan's shared files ([`Plan::shared_files`]: `Plans.md`, the changelog,
    /// `spec.md`) that the repository has or a task claims → the task whose write set
    /// claims it, or `None` (the Lead writes it).
    pub shared_file_owners: BTreeMap<String, Option<TaskId>>,
    /// How much work the conflict search did.
    pub stats: AnalysisStats,
    group_index: Vec<usize>,
    conflict_pairs: FxHashSet<(u32, u32)>,
    runs_alone: Vec<bool>,
    priority: Vec<u32>,
    order: Vec<usize>,
    dependencies: Vec<Vec<usize>>,
    dependents: Vec<Vec<usize>>,
}

impl Analysis {
    /// The index in [`Analysis::groups`] of the task's write group.
    pub fn group_of(&self, task: usize) -> usize {
        self.group_index[task]
    }

    /// Whether two tasks must not run at the same time (constant time).
    pub fn conflicts_between(&self, a: usize, b: usize) -> bool {
        if a == b {
            return false;
        }
        self.runs_alone[a]
            || self.runs_alone[b]
            || self.conflict_pairs.contains(&(a.min(b) as u32, a.max(b) as u32))
    }

    /// Length of the longest chain of tasks that (transitively) depend on this one;
    /// among ready tasks, the highest goes first.
    pub fn priority(&self, task: usize) -> u32 {
        self.priority[task]
    }

    /// Whether the task has no write set (conflicts with every other task).
    pub fn runs_alone(&self, task: usize) -> bool {
        self.runs_alone[task]
    }

    /// Tasks this one depends on (indices), in id order.
    pub fn dependencies(&self, task: usize) -> &[usize] {
        &self.dependencies[task]
    }

    /// Tasks that depend on this one directly (indices), in id order.
    pub fn dependents(&self, task: usize) -> &[usize] {
        &self.dependents[task]
    }

    /// All task indices in id order (`2` before `10`).
    pub fn order(&self) -> &[usize] {
        &self.order
    }
}

/// Checks a plan (dependency cycles, unknown dependencies, shared-file owners) and
/// computes conflicts, write groups, lanes and priorities.
///
/// Fails with every cycle (printed `a -> b -> c -> a`, each task depending on the
/// next) and every shared file with more than one owner.
pub fn analyze(plan: &Plan, max_workers: u32) -> Result<Analysis, PlanError> {
    let tasks = &plan.tasks;
    let n = tasks.len();

    // Every check runs before failing, so one error lists every problem of the plan.
    let mut problems = Vec::new();
    let index = index_ids(plan, &mut problems);
    let (order, rank) = id_order(tasks);
    let (dependencies, dependents) = link_dependencies(plan, &index, &rank, &mut problems);
    let graph = dependency_graph(&dependencies);
    problems.extend(cycle_problems(plan, &graph, &dependencies, &rank));
    let (shared_file_owners, owner_problems) = shared_owners(plan);
    problems.extend(owner_problems);
    if !problems.is_empty() {
        problems.sort_by_key(|p| p.line);
        return Err(PlanError::new(problems));
    }

    let priority = priorities(plan, &graph, &dependencies)?;
    let runs_alone: Vec<bool> = tasks.iter().map(|t| t.writes.is_empty()).collect();
    let conflict_graph = ConflictGraph::build(tasks, &order, &rank, &runs_alone);
    let (groups, group_index) = write_groups(conflict_graph.components, &order, &rank);

    // Pairs with a task without a write set are told apart by `runs_alone`; every other
    // conflict, whatever its reason, keeps its pair apart.
    let overlaps: Vec<(usize, usize)> = (conflict_graph.conflicts.iter())
        .filter(|c| !matches!(c.reason, ConflictReason::NoWriteSet { .. }))
        .map(|c| (c.a, c.b))
        .collect();
    // A task held back (a dependency on an id the plan does not have) never takes a lane:
    // for the widest set it is as if it could only run alone.
    let alone_or_held: Vec<bool> =
        tasks.iter().zip(&runs_alone).map(|(t, alone)| *alone || t.blocked.is_some()).collect();
    let parallelism = parallelism::compute(&parallelism::Graphs {
        dependencies: &dependencies,
        dependents: &dependents,
        priority: &priority,
        rank: &rank,
        runs_alone: &alone_or_held,
        overlaps: &overlaps,
    });

    let max_workers = max_workers.clamp(1, MAX_WORKERS);
    let workers = match n {
        0 => 0,
        _ if parallelism.exact => max_workers.min(parallelism.widest.len() as u32),
        _ => max_workers,
    };

    Ok(Analysis {
        workers,
        max_workers,
        groups,
        conflicts: conflict_graph.conflicts,
        parallelism,
        shared_file_owners,
        stats: conflict_graph.stats,
        group_index,
        conflict_pairs: conflict_graph.pairs,
        runs_alone,
        priority,
        order,
        dependencies,
        dependents,
    })
}

/// Task index by id (the first task holding it), and a problem for each id used again.
fn index_ids<'p>(plan: &'p Plan, problems: &mut Vec<Problem>) -> HashMap<&'p TaskId, usize> {
    let tasks = &plan.tasks;
    let mut index: HashMap<&TaskId, usize> = HashMap::with_capacity(tasks.len());
    for (i, t) in tasks.iter().enumerate() {
        if let Some(&first) = index.get(&t.id) {
            problems.push(
                Problem::new(
                    &plan.path,
                    Some(t.line),
                    ProblemKind::DuplicateId,
                    format!(
                        "task id `{}` is used twice (lines {} and {})",
                        t.id, tasks[first].line, t.line
                    ),
                    "give each task its own id",
                )
                .with_ids(vec![t.id.clone()]),
            );
        } else {
            index.insert(&t.id, i);
        }
    }
    index
}

/// Task indices in id order (`2` before `10`), and each task's position in that order.
fn id_order(tasks: &[Task]) -> (Vec<usize>, Vec<usize>) {
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    order.sort_by(|&a, &b| tasks[a].id.cmp(&tasks[b].id));
    let mut rank = vec![0usize; tasks.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i] = r;
    }
    (order, rank)
}

/// Each task's dependencies and dependents (indices, once each, in id order), and a
/// problem for each dependency that is neither a task of the plan nor done.
fn link_dependencies(
    plan: &Plan,
    index: &HashMap<&TaskId, usize>,
    rank: &[usize],
    problems: &mut Vec<Problem>,
) -> (Vec<Vec<usize>>, Vec<Vec<usize>>) {
    let n = plan.tasks.len();
    let mut dependencies: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, t) in plan.tasks.iter().enumerate() {
        for d in &t.depends_on {
            match index.get(d) {
                Some(&j) => {
                    if !dependencies[i].contains(&j) {
                        dependencies[i].push(j);
                        dependents[j].push(i);
                    }
                }
                None if plan.done.contains(d) => {}
                None => problems.push(
                    Problem::new(
                        &plan.path,
                        Some(t.line),
                        ProblemKind::UnknownDependency,
                        format!(
                            "task `{}` depends on `{d}`, which is not a task of this plan",
                            t.id
                        ),
                        "name a task of this plan, or remove the dependency",
                    )
                    .with_ids(vec![t.id.clone(), d.clone()]),
                ),
            }
        }
    }
    for list in dependencies.iter_mut().chain(dependents.iter_mut()) {
        list.sort_by_key(|&j| rank[j]);
    }
    (dependencies, dependents)
}

/// The dependency graph: an edge from each task to each task it depends on.
fn dependency_graph(dependencies: &[Vec<usize>]) -> DiGraph<(), ()> {
    let mut graph: DiGraph<(), ()> = DiGraph::with_capacity(dependencies.len(), 0);
    for _ in 0..dependencies.len() {
        graph.add_node(());
    }
    for (i, deps) in dependencies.iter().enumerate() {
        for &j in deps {
            graph.add_edge(NodeIndex::new(i), NodeIndex::new(j), ());
        }
    }
    graph
}

/// Each task's priority: the longest chain of tasks that depend on it. Walks tasks so
/// every task comes before what it depends on; the graph must be acyclic.
fn priorities(
    plan: &Plan,
    graph: &DiGraph<(), ()>,
    dependencies: &[Vec<usize>],
) -> Result<Vec<u32>, PlanError> {
    let mut priority = vec![0u32; dependencies.len()];
    let topo = toposort(graph, None).map_err(|_| {
        // Cycles were reported above; reaching this is a bug, not a user error.
        PlanError::single(Problem::new(
            &plan.path,
            None,
            ProblemKind::DependencyCycle,
            "dependency cycle",
            "remove a dependency",
        ))
    })?;
    for node in topo {
        let i = node.index();
        for &j in &dependencies[i] {
            priority[j] = priority[j].max(priority[i] + 1);
        }
    }
    Ok(priority)
}

/// Every conflicting pair of tasks, and the connected components they form.
struct ConflictGraph {
    /// Every conflicting pair once, ordered by ids.
    conflicts: Vec<Conflict>,
    /// The overlapping pairs `(smaller index, larger index)`; pairs involving a task
    /// without a write set are not stored (see [`Analysis::runs_alone`]).
    pairs: FxHashSet<(u32, u32)>,
    components: UnionFind<usize>,
    stats: AnalysisStats,
}

impl ConflictGraph {
    /// The pairs whose write sets overlap, then those with a task without a write set;
    /// conflicts ordered by ids.
    fn build(tasks: &[Task], order: &[usize], rank: &[usize], runs_alone: &[bool]) -> Self {
        let overlaps = find_overlaps(tasks);
        let mut conflicts: Vec<Conflict> = Vec::with_capacity(overlaps.pairs.len());
        let mut components = UnionFind::<usize>::new(tasks.len());
        for (a, b, witness) in overlaps.pairs {
            components.union(a, b);
            let (a, b) = if rank[a] < rank[b] { (a, b) } else { (b, a) };
            conflicts.push(Conflict { a, b, reason: ConflictReason::Overlap { witness } });
        }
        let mut graph =
            ConflictGraph { conflicts, pairs: overlaps.set, components, stats: overlaps.stats };
        graph.add_tasks_without_write_set(tasks, order, runs_alone);
        graph.conflicts.sort_by_key(|c| (rank[c.a], rank[c.b]));
        graph
    }

    /// A task without a write set conflicts with every other task.
    fn add_tasks_without_write_set(
        &mut self,
        tasks: &[Task],
        order: &[usize],
        runs_alone: &[bool],
    ) {
        for (r, &i) in order.iter().enumerate() {
            if !runs_alone[i] {
                continue;
            }
            for (s, &j) in order.iter().enumerate() {
                // A pair of tasks that both lack a write set is listed once, under the
                // first of them.
                if i == j || (runs_alone[j] && s < r) {
                    continue;
                }
                self.components.union(i, j);
                let (a, b) = if r < s { (i, j) } else { (j, i) };
                self.conflicts.push(Conflict {
                    a,
                    b,
                    reason: ConflictReason::NoWriteSet { task: tasks[i].id.clone() },
                });
            }
        }
    }
}

/// Write groups (the connected components, each in id order, ordered by their first
/// id) and each task's group.
fn write_groups(
    components: UnionFind<usize>,
    order: &[usize],
    rank: &[usize],
) -> (Vec<Vec<usize>>, Vec<usize>) {
    let labels = components.into_labeling();
    let mut by_label: HashMap<usize, Vec<usize>> = HashMap::new();
    for &i in order {
        by_label.entry(labels[i]).or_default().push(i);
    }
    let mut groups: Vec<Vec<usize>> = by_label.into_values().collect();
    groups.sort_by_key(|g| rank[g[0]]);
    let mut group_index = vec![0usize; order.len()];
    for (g, members) in groups.iter().enumerate() {
        for &i in members {
            group_index[i] = g;
        }
    }
    (groups, group_index)
}

/// One problem per strongly connected component with a cycle, naming every member
/// and printing one concrete cycle through the smallest id.
fn cycle_problems(
    plan: &Plan,
    graph: &DiGraph<(), ()>,
    dependencies: &[Vec<usize>],
    rank: &[usize],
) -> Vec<Problem> {
    let mut problems = Vec::new();
    for scc in tarjan_scc(graph) {
        let looped = scc.len() > 1 || dependencies[scc[0].index()].contains(&scc[0].index());
        if !looped {
            continue;
        }
        let mut members: Vec<usize> = scc.iter().map(|n| n.index()).collect();
        members.sort_by_key(|&i| rank[i]);
        let cycle = shortest_cycle_through(members[0], &members, dependencies);
        problems.push(cycle_problem(plan, &members, &cycle));
    }
    problems
}

/// The shortest cycle through `start` inside the component `members`, starting at
/// `start` (not repeated at the end), each task depending on the next.
fn shortest_cycle_through(
    start: usize,
    members: &[usize],
    dependencies: &[Vec<usize>],
) -> Vec<usize> {
    let inside: HashSet<usize> = members.iter().copied().collect();

    // Breadth-first from `start` along dependencies inside the component, until an
    // edge leads back to `start`: the shortest cycle through it.
    let mut parent: HashMap<usize, usize> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    let mut last = start;
    'search: while let Some(at) = queue.pop_front() {
        for &next in &dependencies[at] {
            if next == start {
                last = at;
                break 'search;
            }
            if inside.contains(&next) && !parent.contains_key(&next) && next != start {
                parent.insert(next, at);
                queue.push_back(next);
            }
        }
    }
    let mut cycle = vec![last];
    while let Some(&p) = parent.get(cycle.last().unwrap_or(&start)) {
        cycle.push(p);
    }
    if *cycle.last().unwrap_or(&start) != start {
        cycle.push(start);
    }
    cycle.reverse();
    cycle
}

/// The problem reporting `cycle`, which runs through the first (smallest id) of
/// `members`, the component it lies in.
fn cycle_problem(plan: &Plan, members: &[usize], cycle: &[usize]) -> Problem {
    let tasks = &plan.tasks;
    let start = members[0];
    let ids: Vec<TaskId> = cycle.iter().map(|&i| tasks[i].id.clone()).collect();
    let mut arrow: Vec<String> = ids.iter().map(ToString::to_string).collect();
    arrow.push(tasks[start].id.to_string());
    let mut what =
        format!("dependency cycle: {} (each task depends on the next)", arrow.join(" -> "));
    let others: Vec<String> =
        members.iter().filter(|i| !cycle.contains(i)).map(|&i| tasks[i].id.to_string()).collect();
    if !others.is_empty() {
        what.push_str(&format!("; also caught in it: {}", others.join(", ")));
    }
    let closing = tasks[*cycle.last().unwrap_or(&start)].id.clone();
    let mut problem = Problem::new(
        &plan.path,
        Some(tasks[start].line),
        ProblemKind::DependencyCycle,
        what,
        format!("remove one dependency of the cycle, e.g. `{closing}` on `{}`", tasks[start].id),
    )
    .with_ids(members.iter().map(|&i| tasks[i].id.clone()).collect());
    problem.cycle = ids;
    problem
}

/// Owners of the shared files the repository has or a task claims, and a problem for each
/// file with several.
fn shared_owners(plan: &Plan) -> (BTreeMap<String, Option<TaskId>>, Vec<Problem>) {
    let mut owners = BTreeMap::new();
    let mut problems = Vec::new();
    for shared in plan.shared_files.iter() {
        let file = shared.path.as_str();
        let mut claimants: Vec<&Task> =
            plan.tasks.iter().filter(|t| !t.writes.is_empty() && t.writes.matches(file)).collect();
        claimants.sort_by(|a, b| a.id.cmp(&b.id));
        if claimants.len() > 1 {
            let listed: Vec<String> =
                claimants.iter().map(|t| format!("`{}` (line {})", t.id, t.line)).collect();
            let mut by_line = claimants.clone();
            by_line.sort_by_key(|t| t.line);
            problems.push(
                Problem::new(
                    &plan.path,
                    Some(by_line[1].line),
                    ProblemKind::SharedFileOwners,
                    format!(
                        "the shared file `{file}` is claimed by {} tasks: {}; at most one task may own it in a run",
                        claimants.len(),
                        listed.join(", ")
                    ),
                    format!(
                        "keep `{file}` in one task's write set (or in none: then only the Lead writes it) and narrow the others, e.g. `docs/*.md` instead of `*.md`"
                    ),
                )
                .with_ids(claimants.iter().map(|t| t.id.clone()).collect()),
            );
        }
        if shared.exists || !claimants.is_empty() {
            owners.insert(file.to_owned(), claimants.first().map(|t| t.id.clone()));
        }
    }
    (owners, problems)
}
