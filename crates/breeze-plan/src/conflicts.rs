//! Finding every pair of tasks whose write sets collide, without comparing all pairs.
//!
//! Every path an entry matches starts with the entry's literal prefix (`src/auth/`
//! for `src/auth/**/*.rs`, the whole path for an exact file). Two entries can
//! therefore only overlap when one prefix is a prefix of the other. The search works
//! on *distinct* entries (equal entries of different tasks are one entry held by
//! several tasks): sorting them by prefix and walking the sorted list with a stack of
//! "prefixes of the current prefix" lists exactly the entry pairs whose prefixes are
//! compatible. Each such pair is decided once, exactly; an overlap then makes every
//! pair of their holders conflict. A pair sharing no path is then checked for a file one
//! may write and a path under it the other may write (a file and a folder cannot share a
//! name); such a pair is prefix-compatible too, since both prefixes are prefixes of the
//! path under the file.

use std::collections::HashMap;

use rustc_hash::FxHashSet;

use crate::model::Task;
use crate::overlap::SearchCache;
use crate::writeset::{
    Collision, DfaCache, FileUnder, Overlap, Pattern, PatternKind, file_under, needs_automaton,
    overlap,
};

/// How much work the conflict search did (for `--json` and the benchmark).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AnalysisStats {
    /// Tasks analysed.
    pub tasks: usize,
    /// Write-set entries over all tasks.
    pub entries: usize,
    /// Distinct entries (by text).
    pub distinct_entries: usize,
    /// All task pairs: n·(n−1)/2, what a naive comparison would look at.
    pub task_pairs: u64,
    /// Distinct-entry pairs whose prefixes are compatible (an entry held by several
    /// tasks is paired with itself): the only pairs looked at.
    pub candidate_pairs: u64,
    /// Candidate pairs skipped because all their tasks already conflicted.
    pub skipped_known: u64,
    /// Pairs decided by comparing strings (exact files and directories).
    pub string_checks: u64,
    /// Pairs that needed an automaton: a glob run over a path, or a product search.
    pub automaton_checks: u64,
    /// Of those, product searches (glob against glob or directory).
    pub product_searches: u64,
    /// Glob DFAs built (globs that differ only in their literal directories share one).
    pub dfas_built: usize,
}

/// Overlapping task pairs `(a, b, witness)` with `a < b` (task indices), sorted.
pub(crate) struct Overlaps {
    pub pairs: Vec<(usize, usize, String)>,
    /// The same pairs `(a, b)`, for constant-time lookups.
    pub set: FxHashSet<(u32, u32)>,
    pub stats: AnalysisStats,
}

/// Finds every overlapping pair of tasks (tasks without a write set are not handled
/// here: they conflict with everything).
pub(crate) fn find_overlaps(tasks: &[Task]) -> Overlaps {
    let mut stats = AnalysisStats {
        tasks: tasks.len(),
        task_pairs: (tasks.len() as u64) * (tasks.len().saturating_sub(1) as u64) / 2,
        ..AnalysisStats::default()
    };
    let (patterns, holders) = distinct_entries(tasks, &mut stats);
    let sorted = by_prefix(&patterns);

    let mut search = PairSearch {
        tasks,
        patterns: &patterns,
        holders: &holders,
        conflicting: FxHashSet::default(),
        pairs: Vec::new(),
        dfas: DfaCache::default(),
        searches: SearchCache::default(),
        stats: &mut stats,
    };
    search.walk(&sorted);

    let built = search.dfas.built;
    let (mut pairs, set) = (search.pairs, search.conflicting);
    pairs.sort_unstable_by_key(|&(a, b, _)| (a, b));
    stats.dfas_built = built;
    Overlaps { pairs, set, stats }
}

/// Distinct entries and the tasks holding each, in ascending order (a write set lists
/// an entry once).
fn distinct_entries<'t>(
    tasks: &'t [Task],
    stats: &mut AnalysisStats,
) -> (Vec<&'t Pattern>, Vec<Vec<u32>>) {
    let mut interned: HashMap<&str, usize> = HashMap::new();
    let mut patterns: Vec<&Pattern> = Vec::new();
    let mut holders: Vec<Vec<u32>> = Vec::new();
    for (t, task) in tasks.iter().enumerate() {
        for p in task.writes.patterns() {
            stats.entries += 1;
            let id = *interned.entry(p.text.as_str()).or_insert_with(|| {
                patterns.push(p);
                holders.push(Vec::new());
                patterns.len() - 1
            });
            holders[id].push(t as u32);
        }
    }
    stats.distinct_entries = patterns.len();
    (patterns, holders)
}

/// Indices of `patterns` sorted by prefix, then text.
fn by_prefix(patterns: &[&Pattern]) -> Vec<usize> {
    let mut sorted: Vec<usize> = (0..patterns.len()).collect();
    sorted.sort_unstable_by(|&a, &b| {
        patterns[a]
            .prefix
            .cmp(&patterns[b].prefix)
            .then_with(|| patterns[a].text.cmp(&patterns[b].text))
    });
    sorted
}

struct PairSearch<'a, 'p> {
    tasks: &'a [Task],
    patterns: &'a [&'p Pattern],
    holders: &'a [Vec<u32>],
    conflicting: FxHashSet<(u32, u32)>,
    pairs: Vec<(usize, usize, String)>,
    dfas: DfaCache,
    searches: SearchCache,
    stats: &'a mut AnalysisStats,
}

impl PairSearch<'_, '_> {
    /// Checks every pair of distinct entries whose prefixes are compatible, walking
    /// `sorted` (entry indices sorted by prefix).
    fn walk(&mut self, sorted: &[usize]) {
        let patterns = self.patterns;
        // `chain` holds runs of `sorted` with one prefix, each run's prefix a prefix of
        // the next; in sorted order, a prefix that is not a prefix of the current one
        // is not a prefix of any later one either, so it can be dropped for good.
        let mut chain: Vec<(usize, usize)> = Vec::new();
        let mut start = 0;
        while start < sorted.len() {
            let prefix = &patterns[sorted[start]].prefix;
            let end = start
                + sorted[start..].iter().take_while(|&&p| patterns[p].prefix == *prefix).count();
            while chain
                .last()
                .is_some_and(|&(s, _)| !prefix.starts_with(patterns[sorted[s]].prefix.as_str()))
            {
                chain.pop();
            }
            for x in start..end {
                for y in x..end {
                    self.check(sorted[x], sorted[y]);
                }
            }
            for &(s, e) in &chain {
                for &a in &sorted[s..e] {
                    for &b in &sorted[start..end] {
                        self.check(a, b);
                    }
                }
            }
            chain.push((start, end));
            start = end;
        }
    }

    /// Decides the distinct entries `x` and `y` (possibly equal) and records every
    /// newly conflicting pair of their holders.
    fn check(&mut self, x: usize, y: usize) {
        let (hx, hy) = (&self.holders[x], &self.holders[y]);
        if x == y && hx.len() < 2 {
            return;
        }
        self.stats.candidate_pairs += 1;
        let known = &self.conflicting;
        if holder_pairs(hx, hy, x == y).all(|key| known.contains(&key)) {
            self.stats.skipped_known += 1;
            return;
        }
        let (pa, pb) = (self.patterns[x], self.patterns[y]);
        if needs_automaton(pa, pb) {
            self.dfas.warm(pa);
            self.dfas.warm(pb);
            self.stats.automaton_checks += 1;
            let exact =
                matches!(pa.kind, PatternKind::Exact) || matches!(pb.kind, PatternKind::Exact);
            if !exact {
                self.stats.product_searches += 1;
            }
        } else {
            self.stats.string_checks += 1;
        }
        if let Some(witness) = overlap(pa, pb, &mut self.searches).into_witness(pa, pb) {
            for key in holder_pairs(hx, hy, x == y) {
                self.record(key, || witness.clone());
            }
            return;
        }
        // No shared path: a file one may write where the other needs a folder of that name.
        // (An entry never collides so with itself: it would share the path.)
        for (file_entry, folder_entry) in [(x, y), (y, x)] {
            let (pf, pd) = (self.patterns[file_entry], self.patterns[folder_entry]);
            let (file, inside) = match file_under(pf, pd, &mut self.searches) {
                FileUnder::No => continue,
                FileUnder::Found { file, inside } => (file, inside),
                FileUnder::Unknown => {
                    let witness = Overlap::Unknown.into_witness(pf, pd).unwrap_or_default();
                    for key in holder_pairs(hx, hy, x == y) {
                        self.record(key, || witness.clone());
                    }
                    return;
                }
            };
            let holders = self.holders;
            for &f in &holders[file_entry] {
                for &d in holders[folder_entry].iter().filter(|&&d| d != f) {
                    let collision = Collision::FileAndFolder {
                        file: file.clone(),
                        inside: inside.clone(),
                        file_in_first: true,
                    };
                    let tasks = self.tasks;
                    self.record((f.min(d), f.max(d)), || {
                        let (file_task, folder_task) =
                            (&tasks[f as usize].id, &tasks[d as usize].id);
                        collision.witness(file_task.as_str(), folder_task.as_str())
                    });
                }
            }
        }
    }

    /// Records the pair `key` as conflicting with the witness `witness()`, unless it
    /// already is.
    fn record(&mut self, key: (u32, u32), witness: impl FnOnce() -> String) {
        if self.conflicting.insert(key) {
            self.pairs.push((key.0 as usize, key.1 as usize, witness()));
        }
    }
}

/// Every pair of different tasks, one holding `hx` and the other `hy`, as `(smaller,
/// larger)`. For one entry (`same`, `hx` = `hy`, holders in ascending order) each pair
/// comes once; otherwise a pair may come twice (tasks holding both entries).
fn holder_pairs<'h>(
    hx: &'h [u32],
    hy: &'h [u32],
    same: bool,
) -> impl Iterator<Item = (u32, u32)> + 'h {
    hx.iter().enumerate().flat_map(move |(i, &a)| {
        let others = if same { &hy[i + 1..] } else { hy };
        others.iter().filter(move |&&b| b != a).map(move |&b| (a.min(b), a.max(b)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::TaskId;
    use crate::writeset::WriteSet;

    fn tasks(write_sets: &[&[&str]]) -> Vec<Task> {
        write_sets
            .iter()
            .enumerate()
            .map(|(i, entries)| Task {
                id: TaskId::new(format!("t{i}")),
                title: String::new(),
                dod: String::new(),
                writes: WriteSet::new(*entries).unwrap(),
                depends_on: Vec::new(),
                risk: Vec::new(),
                advisor_required: false,
                marker: None,
                line: i + 1,
                blocked: None,
                commit_type: None,
            })
            .collect()
    }

    #[test]
    fn file_and_folder_pairs_are_found_across_interleaved_prefixes() {
        // Sorted by prefix, `d-x/`, `d.txt` and `d0/` come between `d` and `d/three`; the
        // walk must still pair the file `d` with what lies under `d/`.
        let found = find_overlaps(&tasks(&[
            &["d"],
            &["d-x/"],
            &["d.txt"],
            &["d0/**"],
            &["d/three"],
            &["e*"],
            &["e1/x/*.rs"],
        ]));
        let pairs: Vec<(usize, usize, &str)> =
            found.pairs.iter().map(|(a, b, w)| (*a, *b, w.as_str())).collect();
        assert_eq!(
            pairs,
            [
                (0, 4, "d — a file in task t0, a folder in task t4 (d/three)"),
                (5, 6, "e1 — a file in task t5, a folder in task t6 (e1/x/a.rs)"),
            ]
        );
    }
}
