//! Property tests: glob overlap and file/folder collisions against brute force, groups
//! against connected components, cycle reports against reachability.

// The reference computations index an adjacency matrix; index loops read clearest.
#![allow(clippy::needless_range_loop)]

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;

use breeze_plan::{Collision, Plan, PlanFormat, ProblemKind, Task, TaskId, WriteSet, analyze};
use proptest::prelude::*;

/// Path components the generators build entries from: literals, `*`, `?`, classes,
/// alternations and `**`, over the letters `a` and `b`.
const COMPONENTS: &[&str] =
    &["a", "b", "ab", ".a", "*", "a*", "*b", "?", "[ab]", "[!a]", "{a,b}", "a?b", "**"];

fn entry() -> impl Strategy<Value = String> {
    (prop::collection::vec(prop::sample::select(COMPONENTS), 1..=3), any::<bool>()).prop_map(
        |(parts, dir)| {
            let mut e = parts.join("/");
            if dir {
                e.push('/');
            }
            e
        },
    )
}

/// Reference matcher built from globset alone (not from breeze's automata).
enum Reference {
    Exact(String),
    Dir(String),
    Glob(globset::GlobMatcher),
}

impl Reference {
    fn new(entry: &str) -> Reference {
        let meta = entry.contains(['*', '?', '[', '{']);
        let glob = match entry.strip_suffix('/') {
            Some(_) if !meta => return Reference::Dir(entry.to_owned()),
            Some(body) => format!("{body}/**"),
            None if !meta => return Reference::Exact(entry.to_owned()),
            None => entry.to_owned(),
        };
        Reference::Glob(
            globset::GlobBuilder::new(&glob)
                .literal_separator(true)
                .build()
                .expect("generated globs are valid")
                .compile_matcher(),
        )
    }

    fn matches(&self, path: &str) -> bool {
        match self {
            Reference::Exact(e) => path == e,
            Reference::Dir(d) => path.starts_with(d.as_str()) && path.len() > d.len(),
            Reference::Glob(g) => g.is_match(path),
        }
    }
}

fn reference_match(entry: &str, path: &str) -> bool {
    Reference::new(entry).matches(path)
}

/// A repository path: non-empty components, none `.` or `..`.
fn valid_path(path: &str) -> bool {
    !path.is_empty() && path.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
}

/// Every string over {a, b, ., /} up to `max` bytes.
fn all_strings(max: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut layer = vec![String::new()];
    for _ in 0..max {
        let mut next = Vec::new();
        for s in &layer {
            for c in ['a', 'b', '.', '/'] {
                let mut t = s.clone();
                t.push(c);
                next.push(t);
            }
        }
        out.extend(next.iter().cloned());
        layer = next;
    }
    out
}

fn strings() -> &'static [String] {
    static ALL: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| all_strings(6))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn overlap_agrees_with_brute_force(x in entry(), y in entry()) {
        let a = WriteSet::new([&x]).unwrap();
        let b = WriteSet::new([&y]).unwrap();
        let (rx, ry) = (Reference::new(&x), Reference::new(&y));
        let brute = strings().iter().find(|p| valid_path(p) && rx.matches(p) && ry.matches(p));
        match a.overlap(&b) {
            Some(witness) => {
                prop_assert!(valid_path(&witness), "witness {witness:?} for {x} / {y}");
                prop_assert!(reference_match(&x, &witness), "{x} does not match witness {witness:?}");
                prop_assert!(reference_match(&y, &witness), "{y} does not match witness {witness:?}");
            }
            None => prop_assert!(brute.is_none(), "{x} and {y} both match {brute:?}"),
        }
        prop_assert_eq!(a.overlap(&b).is_some(), b.overlap(&a).is_some());
    }

    /// A file and a folder cannot share a name: two write sets collide exactly when one
    /// may write a path and the other that path or a path under it.
    #[test]
    fn collision_agrees_with_brute_force(x in entry(), y in entry()) {
        let (a, b) = (WriteSet::new([&x]).unwrap(), WriteSet::new([&y]).unwrap());
        let (rx, ry) = (Reference::new(&x), Reference::new(&y));
        let matched = |r: &Reference| -> Vec<&String> {
            strings().iter().filter(|p| valid_path(p) && r.matches(p)).collect()
        };
        let (px, py) = (matched(&rx), matched(&ry));
        let above = |paths: &[&String]| -> HashSet<String> {
            paths.iter().flat_map(|p| {
                p.match_indices('/').map(|(i, _)| p[..i].to_owned()).collect::<Vec<_>>()
            }).collect()
        };
        let (folders_x, folders_y) = (above(&px), above(&py));
        let brute = px.iter().find(|p| py.contains(p) || folders_y.contains(**p))
            .or_else(|| py.iter().find(|q| folders_x.contains(**q)));
        match a.collision(&b) {
            Some(Collision::Shared(path)) => {
                prop_assert!(valid_path(&path), "witness {path:?} for {x} / {y}");
                prop_assert!(rx.matches(&path) && ry.matches(&path), "{x} / {y} do not both match {path:?}");
            }
            Some(Collision::FileAndFolder { file, inside, file_in_first }) => {
                let (file_side, folder_side) = if file_in_first { (&rx, &ry) } else { (&ry, &rx) };
                prop_assert!(valid_path(&file) && valid_path(&inside), "{file:?} / {inside:?}");
                prop_assert!(inside.starts_with(&format!("{file}/")), "{inside:?} is not under {file:?}");
                prop_assert!(file_side.matches(&file), "{file:?} not matched ({x} / {y})");
                prop_assert!(folder_side.matches(&inside), "{inside:?} not matched ({x} / {y})");
                prop_assert!(a.overlap(&b).is_none(), "a shared path comes first");
            }
            None => prop_assert!(brute.is_none(), "{x} and {y} collide at {brute:?}"),
        }
        prop_assert_eq!(a.collision(&b).is_some(), b.collision(&a).is_some());
    }

    #[test]
    fn matches_agrees_with_globset(x in entry()) {
        let set = WriteSet::new([&x]).unwrap();
        let reference = Reference::new(&x);
        for p in strings() {
            prop_assert_eq!(set.matches(p), reference.matches(p), "{} on {:?}", x, p);
        }
    }

    #[test]
    fn groups_are_the_connected_components(
        sets in prop::collection::vec(prop::collection::vec(entry(), 0..=3), 1..=10)
    ) {
        let tasks: Vec<Task> = sets
            .iter()
            .enumerate()
            .map(|(i, entries)| task(i, WriteSet::new(entries).unwrap(), Vec::new()))
            .collect();
        let plan = make_plan(tasks);
        let n = plan.tasks.len();
        let owners_clash = breeze_plan::SHARED_FILES.iter().any(|f| {
            plan.tasks.iter().filter(|t| !t.writes.is_empty() && t.writes.matches(f)).count() > 1
        });
        let a = match analyze(&plan, 3) {
            Ok(a) => a,
            Err(err) => {
                prop_assert!(owners_clash, "unexpected error: {}", err);
                prop_assert!(err.problems().iter().all(|p| p.kind == ProblemKind::SharedFileOwners));
                return Ok(());
            }
        };
        prop_assert!(!owners_clash);

        // Reference conflict relation: pairwise, no prefilter; a shared path or a file where
        // the other needs a folder.
        let mut adjacent = vec![vec![false; n]; n];
        for i in 0..n {
            for j in 0..n {
                let (wi, wj) = (&plan.tasks[i].writes, &plan.tasks[j].writes);
                adjacent[i][j] =
                    i != j && (wi.is_empty() || wj.is_empty() || wi.collision(wj).is_some());
                prop_assert_eq!(a.conflicts_between(i, j), adjacent[i][j], "pair {} {}", i, j);
            }
        }
        let listed: HashSet<(usize, usize)> =
            a.conflicts.iter().map(|c| (c.a.min(c.b), c.a.max(c.b))).collect();
        prop_assert_eq!(listed.len(), a.conflicts.len(), "a pair listed twice");
        for i in 0..n {
            for j in i + 1..n {
                prop_assert_eq!(listed.contains(&(i, j)), adjacent[i][j]);
            }
        }

        // Reference components by depth-first search.
        let mut component = vec![usize::MAX; n];
        let mut expected: BTreeSet<BTreeSet<usize>> = BTreeSet::new();
        for start in 0..n {
            if component[start] != usize::MAX {
                continue;
            }
            let mut members = BTreeSet::new();
            let mut stack = vec![start];
            component[start] = start;
            while let Some(v) = stack.pop() {
                members.insert(v);
                for w in 0..n {
                    if adjacent[v][w] && component[w] == usize::MAX {
                        component[w] = start;
                        stack.push(w);
                    }
                }
            }
            expected.insert(members);
        }
        let actual: BTreeSet<BTreeSet<usize>> =
            a.groups.iter().map(|g| g.iter().copied().collect()).collect();
        prop_assert_eq!(&actual, &expected);
        for (g, members) in a.groups.iter().enumerate() {
            for &m in members {
                prop_assert_eq!(a.group_of(m), g);
            }
        }
        // Lanes follow the widest set of tasks that can run together (no dependencies
        // here: a largest set of pairwise non-conflicting tasks), not the groups.
        let widest = (0u32..1 << n)
            .filter(|mask| (0..n).all(|i| (0..n).all(|j| {
                mask & (1 << i) == 0 || mask & (1 << j) == 0 || !adjacent[i][j]
            })))
            .map(u32::count_ones)
            .max()
            .unwrap_or(0);
        prop_assert_eq!(a.parallelism.widest.len() as u32, widest);
        prop_assert_eq!(a.workers, widest.min(3));
    }

    #[test]
    fn the_widest_set_and_the_critical_path_are_exact(
        sets in prop::collection::vec(prop::collection::vec(entry(), 0..=2), 1..=9),
        edges in prop::collection::vec((0usize..9, 0usize..9), 0..12)
    ) {
        let n = sets.len();
        // Dependencies only on earlier tasks: acyclic.
        let edges: BTreeSet<(usize, usize)> =
            edges.into_iter().filter(|&(x, y)| x < n && y < x).collect();
        let tasks: Vec<Task> = sets
            .iter()
            .enumerate()
            .map(|(i, entries)| {
                let deps = edges.iter().filter(|e| e.0 == i).map(|e| id(e.1)).collect();
                task(i, WriteSet::new(entries).unwrap(), deps)
            })
            .collect();
        let plan = make_plan(tasks);
        let Ok(a) = analyze(&plan, 3) else { return Ok(()) }; // shared-file owners clash
        // Reference: i reaches j through dependencies, and pairs that cannot run together.
        let mut reaches = vec![vec![false; n]; n];
        for &(x, y) in &edges {
            reaches[x][y] = true;
        }
        for k in 0..n {
            for i in 0..n {
                for j in 0..n {
                    reaches[i][j] |= reaches[i][k] && reaches[k][j];
                }
            }
        }
        let mut apart = vec![vec![false; n]; n];
        for i in 0..n {
            for j in 0..n {
                let (wi, wj) = (&plan.tasks[i].writes, &plan.tasks[j].writes);
                let conflict = wi.is_empty() || wj.is_empty() || wi.collision(wj).is_some();
                apart[i][j] = i != j && (conflict || reaches[i][j] || reaches[j][i]);
            }
        }
        let together = |members: &[usize]| {
            members.iter().all(|&i| members.iter().all(|&j| !apart[i][j]))
        };
        let widest = (0u32..1 << n)
            .map(|mask| (0..n).filter(|i| mask & (1 << i) != 0).collect::<Vec<usize>>())
            .filter(|members| together(members))
            .map(|members| members.len())
            .max()
            .unwrap_or(0);
        prop_assert!(a.parallelism.exact);
        prop_assert!(together(&a.parallelism.widest), "{:?} cannot run together", a.parallelism.widest);
        prop_assert_eq!(a.parallelism.widest.len(), widest);
        prop_assert_eq!(a.workers as usize, widest.min(3));

        // The critical path is a chain of dependencies as long as the longest one.
        let path = &a.parallelism.critical_path;
        let longest = (0..n).map(|v| longest_dependent_chain(v, &edges)).max().unwrap_or(0);
        prop_assert_eq!(path.len() as u32, longest + 1);
        for step in path.windows(2) {
            prop_assert!(edges.contains(&(step[1], step[0])), "{:?} is not a chain", path);
        }
    }

    #[test]
    fn every_cycle_is_reported(
        n in 1usize..9,
        edges in prop::collection::vec((0usize..9, 0usize..9), 0..14)
    ) {
        let edges: BTreeSet<(usize, usize)> =
            edges.into_iter().filter(|&(x, y)| x < n && y < n).collect();
        let tasks: Vec<Task> = (0..n)
            .map(|i| {
                let deps = edges.iter().filter(|e| e.0 == i).map(|e| id(e.1)).collect();
                task(i, WriteSet::new([format!("t{i}/")]).unwrap(), deps)
            })
            .collect();
        let plan = make_plan(tasks);

        // v is on a cycle when it reaches itself through at least one edge.
        let reach = |from: usize| -> Vec<bool> {
            let mut seen = vec![false; n];
            let mut stack: Vec<usize> = edges.iter().filter(|e| e.0 == from).map(|e| e.1).collect();
            while let Some(v) = stack.pop() {
                if !seen[v] {
                    seen[v] = true;
                    stack.extend(edges.iter().filter(|e| e.0 == v).map(|e| e.1));
                }
            }
            seen
        };
        let on_cycle: BTreeSet<String> =
            (0..n).filter(|&v| reach(v)[v]).map(|v| id(v).to_string()).collect();

        match analyze(&plan, 3) {
            Ok(a) => {
                prop_assert!(on_cycle.is_empty());
                // Priority = longest chain of dependents.
                for v in 0..n {
                    prop_assert_eq!(a.priority(v), longest_dependent_chain(v, &edges));
                }
            }
            Err(err) => {
                prop_assert!(err.problems().iter().all(|p| p.kind == ProblemKind::DependencyCycle));
                let reported: BTreeSet<String> = err
                    .problems()
                    .iter()
                    .flat_map(|p| p.ids.iter().map(ToString::to_string))
                    .collect();
                prop_assert_eq!(&reported, &on_cycle);
                for cycle in err.cycles() {
                    prop_assert!(!cycle.is_empty());
                    for k in 0..cycle.len() {
                        let from: usize = cycle[k].as_str()[1..].parse().unwrap();
                        let to: usize = cycle[(k + 1) % cycle.len()].as_str()[1..].parse().unwrap();
                        prop_assert!(edges.contains(&(from, to)), "{:?} is not a cycle", cycle);
                    }
                }
                let shown = err.to_string();
                prop_assert!(shown.contains(" -> "), "{}", shown);
            }
        }
    }
}

fn longest_dependent_chain(v: usize, edges: &BTreeSet<(usize, usize)>) -> u32 {
    edges
        .iter()
        .filter(|e| e.1 == v)
        .map(|e| 1 + longest_dependent_chain(e.0, edges))
        .max()
        .unwrap_or(0)
}

fn id(i: usize) -> TaskId {
    TaskId::new(format!("t{i}"))
}

fn task(i: usize, writes: WriteSet, depends_on: Vec<TaskId>) -> Task {
    Task {
        id: id(i),
        title: format!("task {i}"),
        dod: "done".into(),
        writes,
        depends_on,
        risk: Vec::new(),
        advisor_required: false,
        marker: None,
        line: i + 1,
        blocked: None,
        commit_type: None,
    }
}

fn make_plan(tasks: Vec<Task>) -> Plan {
    Plan {
        path: PathBuf::from("plan.toml"),
        format: PlanFormat::Toml,
        tasks,
        done: BTreeSet::new(),
        blocked: BTreeSet::new(),
        warnings: Vec::new(),
        extensions: Default::default(),
        unnumbered: Vec::new(),
        on_main: Default::default(),
        shared_files: Default::default(),
    }
}

/// Fragments real Plans.md files are made of, for "never panics" checks.
const FRAGMENTS: &[&str] = &[
    "| Task | 内容 | DoD | Depends | Status |\n",
    "| Task | 内容 | DoD | Writes | Depends | Status |\n",
    "|------|------|-----|---------|--------|\n",
    "| 1.1 | 作業 | ok | - | cc:TODO |\n",
    "| 1.2 | x | ok | 1.1、Phase 1 | `cc:完了` [abc] |\n",
    "| 2 | x \\| y | ok | `src/**` | 1.1, GEO-3 | cc:WIP (手動) |\n",
    "| 3 | ü | | | |\n",
    "| ",
    " | ",
    "cc:",
    "cc:완료",
    "blocked",
    "`",
    "**",
    "## Phase 1: 段階\n",
    "#### 4.1: heading task `cc:todo`\n",
    "Depends: 4.1, 9.9\n",
    "Writes: `a/`, b/*.rs\n",
    "- [ ] 5.1 checklist `cc:TODO`\n",
    "- [x] Task 5.2: done\n",
    "- [ ] `cc:TODO` **W3-001**: text\n",
    "- [ ] T910: text `cc:WIP` depends:T909\n",
    "  - nested DoD\n",
    "## Phase 2: marked `cc:TODO`\n",
    "### 2.1 inherits\n",
    "> depends:Phase 1\n",
    "| ID | タスク | 優先度 | 状態 |\n",
    "| Task | Content | Status | Completion marker |\n",
    "| 63.4 | x | 63.1–63.3, all above | cc:TODO |\n",
    "| 6 | x | 1 or 2, 8-12 | pm:TODO |\n",
    "## Marker legend\n",
    "- [ ] polish without an id `cc:TODO`\n",
    "- `cc:WIP` fix without an id\n",
    "|  | no id | ok | - | cc:TODO |\n",
    "### Refactor without an id `cc:TODO`\n",
    "| 1.1 | again | ok | 1.1 | cc:TODO |\n",
    "- `cc:TODO` — not started\n",
    "```\n",
    "<!--\n",
    "-->\n",
    "\r\n",
    "\n",
    "é",
    "[",
    "](",
    "(",
    "\\",
];

/// Checks that reading `text` does not panic, that every task status_markers lists can
/// be edited without losing a task, and that numbering to-do items without ids numbers
/// them all at once (a second run writes nothing).
fn read_and_edit(text: &str) -> Result<(), TestCaseError> {
    let path = std::path::Path::new("Plans.md");
    if let Ok(plan) = breeze_plan::parse_plans_md(text, path) {
        let _ = analyze(&plan, 3);
    }
    if let Ok((numbered, _)) = breeze_plan::plans_md::fill_ids(text) {
        let (again, more) =
            breeze_plan::plans_md::fill_ids(&numbered).expect("a numbered text numbers again");
        prop_assert!(more.is_empty(), "{:?}", more);
        prop_assert_eq!(again, numbered);
    }
    let markers = breeze_plan::plans_md::status_markers(text);
    for id in markers.keys() {
        let edited = breeze_plan::plans_md::set_status(text, &TaskId::from(id.as_str()), "cc:done")
            .expect("a task status_markers lists can be edited");
        let after = breeze_plan::plans_md::status_markers(&edited);
        prop_assert_eq!(after.keys().collect::<Vec<_>>(), markers.keys().collect::<Vec<_>>());
    }
    Ok(())
}

/// Line shapes Markdown is made of, with holes filled by arbitrary text.
fn markdown_line() -> impl Strategy<Value = String> {
    let text = "\\PC{0,24}";
    prop_oneof![
        text.prop_map(|t| t),
        (1usize..7, text).prop_map(|(n, t)| format!("{} {t}", "#".repeat(n))),
        (prop::sample::select(&["- ", "* ", "1. ", "- [ ] ", "- [x] ", "  - "][..]), text)
            .prop_map(|(b, t)| format!("{b}{t}")),
        prop::collection::vec(text, 1..6).prop_map(|cells| format!("| {} |", cells.join(" | "))),
        (prop::sample::select(&["cc:", "pm:", "`cc:", "**cc:"][..]), text)
            .prop_map(|(m, t)| format!("x {m}{t}")),
        prop::sample::select(FRAGMENTS).prop_map(str::to_owned),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Arbitrary text and arbitrary Markdown-shaped lines never make the reader panic,
    /// and status edits never lose a task.
    #[test]
    fn arbitrary_markdown_never_panics(
        raw in "\\PC{0,200}",
        lines in prop::collection::vec(markdown_line(), 0..30),
        crlf in any::<bool>(),
    ) {
        read_and_edit(&raw)?;
        let text = lines.join(if crlf { "\r\n" } else { "\n" });
        read_and_edit(&text)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn plans_md_never_panics_and_status_edits_round_trip(
        parts in prop::collection::vec(prop::sample::select(FRAGMENTS), 0..40)
    ) {
        let text: String = parts.concat();
        let path = std::path::Path::new("Plans.md");
        if let Ok(plan) = breeze_plan::parse_plans_md(&text, path) {
            let _ = analyze(&plan, 3);
        }
        let markers = breeze_plan::plans_md::status_markers(&text);
        for id in markers.keys() {
            let edited = breeze_plan::plans_md::set_status(&text, &TaskId::from(id.as_str()), "cc:done [0000000]")
                .expect("a task status_markers lists can be edited");
            // Only the status changed: the same tasks are still there.
            let after = breeze_plan::plans_md::status_markers(&edited);
            prop_assert_eq!(after.keys().collect::<Vec<_>>(), markers.keys().collect::<Vec<_>>());
            let unique = text.matches(id.as_str()).count() == 1;
            if unique {
                prop_assert!(after[id].contains("cc:done [0000000]"), "{:?} -> {:?}", markers[id], after[id]);
                for (other, status) in &markers {
                    if other != id {
                        prop_assert_eq!(&after[other], status);
                    }
                }
            }
        }
    }
}
