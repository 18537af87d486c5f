//! How much of a plan can run at once: the widest set of tasks that can run together and
//! the critical path.
//!
//! Tasks run together only when no two of them conflict and none depends (directly or
//! through others) on another: the set is an antichain of the dependency order that is
//! independent in the conflict graph. Its size, capped by `max_workers`, is the number of
//! lanes a run can use — a plan whose conflict graph is one connected group can still keep
//! three lanes busy.
//!
//! Finding the widest such set is a maximum independent set problem (NP-hard in general),
//! so it is solved exactly for plans up to [`EXACT_TASKS`] tasks with a branch-and-bound
//! search under a work budget, and bounded greedily for larger plans (or when the budget
//! runs out): tasks at the same dependency depth never depend on one another, so each depth
//! level is an antichain; the widest conflict-free subset picked greedily from one level
//! is a set that really can run together — a lower bound on the widest.

/// Plans up to this many tasks get an exact widest set (unless the search budget runs
/// out); larger ones a greedy lower bound.
pub const EXACT_TASKS: usize = 128;

/// Work units (roughly: candidate tasks looked at) the exact search may spend.
const SEARCH_BUDGET: u64 = 300_000;

/// What [`compute`] needs of the analysis: the dependency order and the conflicts.
pub(crate) struct Graphs<'a> {
    /// Each task's dependencies (indices).
    pub dependencies: &'a [Vec<usize>],
    /// Each task's dependents (indices), in id order.
    pub dependents: &'a [Vec<usize>],
    /// Each task's longest chain of dependents.
    pub priority: &'a [u32],
    /// Each task's position in id order.
    pub rank: &'a [usize],
    /// Tasks without a write set (they conflict with every task).
    pub runs_alone: &'a [bool],
    /// Conflicting pairs of tasks with write sets.
    pub overlaps: &'a [(usize, usize)],
}

/// How much of the plan can run at once.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Parallelism {
    /// The widest set of tasks that can run together (indices, in id order): pairwise
    /// without conflict and without dependency between them.
    pub widest: Vec<usize>,
    /// Whether [`Parallelism::widest`] is proven widest; `false`: a greedy lower bound
    /// (plans over [`EXACT_TASKS`] tasks, or a search that ran out of budget).
    pub exact: bool,
    /// The longest chain of dependencies (indices, each task depending on the one before);
    /// no run can take fewer steps than its length.
    pub critical_path: Vec<usize>,
}

/// The plan's parallelism; the graph must be acyclic.
pub(crate) fn compute(graphs: &Graphs<'_>) -> Parallelism {
    let n = graphs.dependencies.len();
    let depth = depths(graphs);
    let greedy = greedy_widest(graphs, &depth);
    let (mut widest, exact) =
        if n <= EXACT_TASKS { exact_widest(graphs, &depth, greedy) } else { (greedy, false) };
    widest.sort_by_key(|&i| graphs.rank[i]);
    Parallelism { widest, exact, critical_path: critical_path(graphs) }
}

/// Each task's longest chain of dependencies (0 without any).
fn depths(graphs: &Graphs<'_>) -> Vec<usize> {
    let n = graphs.dependencies.len();
    let mut waiting: Vec<usize> = graphs.dependencies.iter().map(Vec::len).collect();
    let mut depth = vec![0usize; n];
    let mut ready: Vec<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
    while let Some(i) = ready.pop() {
        for &j in &graphs.dependents[i] {
            depth[j] = depth[j].max(depth[i] + 1);
            waiting[j] -= 1;
            if waiting[j] == 0 {
                ready.push(j);
            }
        }
    }
    depth
}

/// The widest conflict-free set picked greedily from one dependency depth (each depth is
/// an antichain), tasks taken in the scheduler's order: longest chain of dependents first,
/// then id order. Linear in tasks and conflicts.
fn greedy_widest(graphs: &Graphs<'_>, depth: &[usize]) -> Vec<usize> {
    let n = depth.len();
    let mut neighbours: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(a, b) in graphs.overlaps {
        neighbours[a].push(b);
        neighbours[b].push(a);
    }
    let mut by_level: Vec<usize> = (0..n).collect();
    by_level.sort_by_key(|&i| (depth[i], std::cmp::Reverse(graphs.priority[i]), graphs.rank[i]));
    let mut blocked = vec![false; n];
    let mut best: Vec<usize> = Vec::new();
    for level in by_level.chunk_by(|&a, &b| depth[a] == depth[b]) {
        let mut picked: Vec<usize> = Vec::new();
        for &i in level.iter().filter(|&&i| !graphs.runs_alone[i]) {
            if !blocked[i] {
                picked.push(i);
                for &j in &neighbours[i] {
                    blocked[j] = true;
                }
            }
        }
        if picked.is_empty() {
            // Only tasks without a write set here: one of them runs alone.
            picked.extend(level.first());
        }
        for &i in &picked {
            for &j in &neighbours[i] {
                blocked[j] = false;
            }
        }
        if picked.len() > best.len() {
            best = picked;
        }
    }
    best
}

/// A set of task indices, one bit each.
#[derive(Clone, PartialEq, Eq)]
struct Bits(Vec<u64>);

impl Bits {
    fn empty(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }

    fn full(n: usize) -> Bits {
        let mut bits = Bits::empty(n);
        for i in 0..n {
            bits.insert(i);
        }
        bits
    }

    fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    fn remove(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }

    fn contains(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }

    fn union_with(&mut self, other: &Bits) {
        self.0.iter_mut().zip(&other.0).for_each(|(a, b)| *a |= b);
    }

    fn and_not(&self, other: &Bits) -> Bits {
        Bits(self.0.iter().zip(&other.0).map(|(a, b)| a & !b).collect())
    }

    fn and(&self, other: &Bits) -> Bits {
        Bits(self.0.iter().zip(&other.0).map(|(a, b)| a & b).collect())
    }

    fn count(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    fn count_and(&self, other: &Bits) -> usize {
        self.0.iter().zip(&other.0).map(|(a, b)| (a & b).count_ones() as usize).sum()
    }

    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    w * 64 + bit
                })
            })
        })
    }
}

/// The widest set by branch and bound over the graph of pairs that cannot run together
/// (a conflict, or one depending on the other through any chain), starting from the
/// greedy set; `false` when the budget ran out first (the best set found is returned).
fn exact_widest(graphs: &Graphs<'_>, depth: &[usize], greedy: Vec<usize>) -> (Vec<usize>, bool) {
    let n = depth.len();
    let apart = apart(graphs, depth);
    let mut search = Search { apart: &apart, best: greedy, budget: SEARCH_BUDGET };
    let complete = search.widest_in(Bits::full(n), &mut Vec::new());
    (search.best, complete)
}

/// For each task, the tasks it cannot run together with: conflicts, ancestors and
/// descendants in the dependency order.
fn apart(graphs: &Graphs<'_>, depth: &[usize]) -> Vec<Bits> {
    let n = depth.len();
    let mut by_depth: Vec<usize> = (0..n).collect();
    by_depth.sort_by_key(|&i| depth[i]);
    // Ancestors first: a dependency is always shallower than its dependent.
    let mut ancestors: Vec<Bits> = vec![Bits::empty(n); n];
    for &i in &by_depth {
        let mut mine = Bits::empty(n);
        for &d in &graphs.dependencies[i] {
            mine.union_with(&ancestors[d]);
            mine.insert(d);
        }
        ancestors[i] = mine;
    }
    let mut apart = ancestors.clone();
    for (i, mine) in ancestors.iter().enumerate() {
        for a in mine.iter() {
            apart[a].insert(i);
        }
    }
    for &(a, b) in graphs.overlaps {
        apart[a].insert(b);
        apart[b].insert(a);
    }
    for i in (0..n).filter(|&i| graphs.runs_alone[i]) {
        for (j, others) in apart.iter_mut().enumerate() {
            if j != i {
                others.insert(i);
            }
        }
        apart[i] = Bits::full(n);
        apart[i].remove(i);
    }
    apart
}

/// A maximum independent set search in the "cannot run together" graph.
struct Search<'a> {
    apart: &'a [Bits],
    best: Vec<usize>,
    budget: u64,
}

impl Search<'_> {
    /// Extends `chosen` with the widest set within `candidates` (none of which is apart
    /// from a chosen task); `false` when the budget ran out.
    fn widest_in(&mut self, candidates: Bits, chosen: &mut Vec<usize>) -> bool {
        let count = candidates.count();
        let Some(spent) = self.budget.checked_sub(1 + count as u64) else { return false };
        self.budget = spent;
        if count == 0 {
            if chosen.len() > self.best.len() {
                self.best = chosen.clone();
            }
            return true;
        }
        if chosen.len() + self.clique_cover(&candidates) <= self.best.len() {
            return true;
        }
        // Some widest set holds the candidate with the fewest neighbours or one of those
        // neighbours (else that candidate could be added); try each, excluding the ones
        // already tried.
        let pivot = (candidates.iter())
            .min_by_key(|&v| (self.apart[v].count_and(&candidates), v))
            .unwrap_or_default();
        let branches: Vec<usize> = std::iter::once(pivot)
            .chain(self.apart[pivot].and(&candidates).iter().filter(|&w| w != pivot))
            .collect();
        let mut rest = candidates;
        for w in branches {
            chosen.push(w);
            let mut inner = rest.and_not(&self.apart[w]);
            inner.remove(w);
            let complete = self.widest_in(inner, chosen);
            chosen.pop();
            if !complete {
                return false;
            }
            rest.remove(w);
        }
        true
    }

    /// An upper bound on the widest set within `candidates`: the number of groups in a
    /// greedy split into groups of pairwise-apart tasks (a set that can run together has at
    /// most one task of each).
    fn clique_cover(&self, candidates: &Bits) -> usize {
        let mut cliques: Vec<Bits> = Vec::new();
        for v in candidates.iter() {
            match cliques.iter_mut().find(|common| common.contains(v)) {
                Some(common) => *common = common.and(&self.apart[v]),
                None => cliques.push(self.apart[v].clone()),
            }
        }
        cliques.len()
    }
}

/// The longest chain of dependencies: from the task with the longest chain of dependents
/// (ties: id order), each step the dependent continuing the longest chain.
fn critical_path(graphs: &Graphs<'_>) -> Vec<usize> {
    let n = graphs.priority.len();
    let Some(mut at) =
        (0..n).min_by_key(|&i| (std::cmp::Reverse(graphs.priority[i]), graphs.rank[i]))
    else {
        return Vec::new();
    };
    let mut path = vec![at];
    while graphs.priority[at] > 0 {
        let next = graphs.dependents[at]
            .iter()
            .copied()
            .filter(|&j| graphs.priority[j] + 1 == graphs.priority[at])
            .min_by_key(|&j| graphs.rank[j]);
        let Some(next) = next else { break };
        path.push(next);
        at = next;
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tasks 0..n with `deps` (task, dependency) and conflicting `pairs`.
    fn run(n: usize, deps: &[(usize, usize)], pairs: &[(usize, usize)]) -> Parallelism {
        let mut dependencies = vec![Vec::new(); n];
        let mut dependents = vec![Vec::new(); n];
        for &(t, d) in deps {
            dependencies[t].push(d);
            dependents[d].push(t);
        }
        let mut priority = vec![0u32; n];
        // Tasks are numbered so a dependency has the smaller number.
        for i in (0..n).rev() {
            for &d in &dependencies[i] {
                priority[d] = priority[d].max(priority[i] + 1);
            }
        }
        let rank: Vec<usize> = (0..n).collect();
        let runs_alone = vec![false; n];
        compute(&Graphs {
            dependencies: &dependencies,
            dependents: &dependents,
            priority: &priority,
            rank: &rank,
            runs_alone: &runs_alone,
            overlaps: pairs,
        })
    }

    #[test]
    fn a_star_of_conflicts_still_lets_its_leaves_run_together() {
        // 0 conflicts with 1, 2, 3: one write group, yet 1, 2 and 3 can run together.
        let p = run(4, &[], &[(0, 1), (0, 2), (0, 3)]);
        assert_eq!(p.widest, [1, 2, 3]);
        assert!(p.exact);
    }

    #[test]
    fn tasks_on_one_chain_never_run_together_even_without_conflicts() {
        let p = run(4, &[(1, 0), (2, 1), (3, 2)], &[]);
        assert_eq!(p.widest.len(), 1);
        assert_eq!(p.critical_path, [0, 1, 2, 3]);
    }

    #[test]
    fn the_exact_search_beats_a_greedy_level_pick() {
        // Level 0 holds 0..4; 0 (picked first greedily: it heads the longest chain)
        // conflicts with 1, 2, 3, which do not conflict with one another.
        let p = run(5, &[(4, 0)], &[(0, 1), (0, 2), (0, 3)]);
        assert_eq!(p.widest, [1, 2, 3, 4], "4 depends only on 0, so it runs beside 1..3");
        assert_eq!(p.critical_path, [0, 4]);
    }

    #[test]
    fn a_dependency_through_a_chain_keeps_tasks_apart() {
        // 2 depends on 0 through 1; 3 is free.
        let p = run(4, &[(1, 0), (2, 1)], &[]);
        assert_eq!(p.widest, [0, 3]);
    }

    #[test]
    fn an_empty_plan_has_no_parallelism() {
        let p = run(0, &[], &[]);
        assert!(p.widest.is_empty() && p.critical_path.is_empty());
    }
}
