//! breeze's landing merge against `git merge-tree --write-tree`: tasks from a common base
//! with random adds, deletes, edits, renames, executable-bit changes, symlinks and
//! file↔folder swaps are landed one after another through `Repo::merge_task`, and every
//! outcome is compared with git's on the same commits. Where git merges cleanly, breeze's
//! tree must be git's tree; where git reports a conflict, breeze must report one.
//!
//! `PROPTEST_CASES` sets the number of cases (default 96).

mod common;
mod merge_model;

use breeze_git::{MergeOutcome, Oid, Repo};
use merge_model::{
    Entry, GitMerge, ModelRepo, Tree, edited, folders, git_can_merge_tree,
    git_conflict_lines_of_a_clean_merge, git_merge_tree, put, show, text,
};
use proptest::prelude::*;

/// Names paths are made of; three levels deep at most.
const NAMES: &[&str] = &["a", "b", "d"];
const LINK_TARGETS: &[&str] = &["a", "d/a", "../a", "b/b"];

fn universe() -> Vec<String> {
    let mut out = Vec::new();
    for x in NAMES {
        out.push((*x).to_string());
        for y in NAMES {
            out.push(format!("{x}/{y}"));
            for z in NAMES {
                out.push(format!("{x}/{y}/{z}"));
            }
        }
    }
    out
}

/// One change a task makes. Indices pick among what exists when the change is applied.
#[derive(Debug, Clone)]
enum Op {
    /// A file (or link) at a path, replacing what is in the way (file↔folder swaps).
    Add {
        path: usize,
        content: u8,
        kind: u8,
    },
    Delete {
        pick: usize,
    },
    /// One line changed; the same `variant` on both sides is the same edit.
    Edit {
        pick: usize,
        line: usize,
        variant: u8,
    },
    Rewrite {
        pick: usize,
    },
    /// Moved, with a one-line edit when `edit`.
    Rename {
        pick: usize,
        to: usize,
        edit: bool,
    },
    ToggleExec {
        pick: usize,
    },
    /// A file becomes a symlink (or a link's target changes).
    ToLink {
        pick: usize,
        target: usize,
    },
    /// A folder becomes a file or link of its name (`link`).
    FolderToFile {
        pick: usize,
        link: bool,
    },
    DeleteFolder {
        pick: usize,
    },
    /// A whole folder moves.
    RenameFolder {
        pick: usize,
        to: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let n = 39usize;
    prop_oneof![
        3 => (0..n, 0u8..6, 0u8..6).prop_map(|(path, content, kind)| Op::Add { path, content, kind }),
        2 => any::<usize>().prop_map(|pick| Op::Delete { pick }),
        3 => (any::<usize>(), 0usize..8, 0u8..2).prop_map(|(pick, line, variant)| Op::Edit { pick, line, variant }),
        1 => any::<usize>().prop_map(|pick| Op::Rewrite { pick }),
        3 => (any::<usize>(), 0..n, any::<bool>()).prop_map(|(pick, to, edit)| Op::Rename { pick, to, edit }),
        2 => any::<usize>().prop_map(|pick| Op::ToggleExec { pick }),
        1 => (any::<usize>(), 0usize..4).prop_map(|(pick, target)| Op::ToLink { pick, target }),
        2 => (any::<usize>(), any::<bool>()).prop_map(|(pick, link)| Op::FolderToFile { pick, link }),
        1 => any::<usize>().prop_map(|pick| Op::DeleteFolder { pick }),
        1 => (any::<usize>(), 0..n).prop_map(|(pick, to)| Op::RenameFolder { pick, to }),
    ]
}

fn pick<T: Clone>(list: &[T], at: usize) -> Option<T> {
    (!list.is_empty()).then(|| list[at % list.len()].clone())
}

fn files(tree: &Tree) -> Vec<String> {
    tree.iter().filter(|(_, e)| matches!(e, Entry::File { .. })).map(|(p, _)| p.clone()).collect()
}

/// Applies `op` of task `task` to `tree`.
fn apply(tree: &mut Tree, op: &Op, task: usize) {
    let universe = universe();
    match *op {
        Op::Add { path, content, kind } => {
            let path = &universe[path % universe.len()];
            // Contents 0–2 come from a pool both tasks draw from (identical adds).
            let seed = if content < 3 {
                format!("pool {content}")
            } else {
                format!("task {task} new {path}")
            };
            let entry = match kind {
                0 => Entry::Link(LINK_TARGETS[content as usize % LINK_TARGETS.len()].to_string()),
                1 => Entry::File { text: text(&seed), exec: true },
                _ => Entry::File { text: text(&seed), exec: false },
            };
            put(tree, path, entry);
        }
        Op::Delete { pick: at } => {
            if let Some(path) = pick(&tree.keys().cloned().collect::<Vec<_>>(), at) {
                tree.remove(&path);
            }
        }
        Op::Edit { pick: at, line, variant } => {
            if let Some(path) = pick(&files(tree), at)
                && let Some(Entry::File { text, .. }) = tree.get_mut(&path)
            {
                *text = edited(text, line, &format!("edited line {line}, version {variant}"));
            }
        }
        Op::Rewrite { pick: at } => {
            if let Some(path) = pick(&files(tree), at)
                && let Some(Entry::File { text: old, .. }) = tree.get_mut(&path)
            {
                *old = text(&format!("task {task} rewrote {path}"));
            }
        }
        Op::Rename { pick: at, to, edit } => {
            let Some(from) = pick(&tree.keys().cloned().collect::<Vec<_>>(), at) else { return };
            let to = universe[to % universe.len()].clone();
            if to == from || to.starts_with(&format!("{from}/")) {
                return;
            }
            let mut entry = tree.remove(&from).unwrap_or_else(|| unreachable!());
            if edit && let Entry::File { text, .. } = &mut entry {
                *text = edited(text, task, &format!("task {task} edited while moving"));
            }
            put(tree, &to, entry);
        }
        Op::ToggleExec { pick: at } => {
            if let Some(path) = pick(&files(tree), at)
                && let Some(Entry::File { exec, .. }) = tree.get_mut(&path)
            {
                *exec = !*exec;
            }
        }
        Op::ToLink { pick: at, target } => {
            if let Some(path) = pick(&tree.keys().cloned().collect::<Vec<_>>(), at) {
                tree.insert(path, Entry::Link(LINK_TARGETS[target].to_string()));
            }
        }
        Op::FolderToFile { pick: at, link } => {
            if let Some(folder) = pick(&folders(tree), at) {
                let entry = if link {
                    Entry::Link("a".to_string())
                } else {
                    Entry::file(&text(&format!("task {task} file instead of {folder}/")))
                };
                put(tree, &folder, entry);
            }
        }
        Op::DeleteFolder { pick: at } => {
            if let Some(folder) = pick(&folders(tree), at) {
                let inside = format!("{folder}/");
                tree.retain(|p, _| !p.starts_with(&inside));
            }
        }
        Op::RenameFolder { pick: at, to } => {
            let Some(folder) = pick(&folders(tree), at) else { return };
            let to = universe[to % universe.len()].clone();
            if to == folder || to.starts_with(&format!("{folder}/")) {
                return;
            }
            let inside = format!("{folder}/");
            let moved: Vec<(String, Entry)> = tree
                .iter()
                .filter(|(p, _)| p.starts_with(&inside))
                .map(|(p, e)| (format!("{to}/{}", &p[inside.len()..]), e.clone()))
                .collect();
            tree.retain(|p, _| !p.starts_with(&inside));
            for (path, entry) in moved {
                put(tree, &path, entry);
            }
        }
    }
}

fn base_tree() -> impl Strategy<Value = Tree> {
    prop::collection::vec((0usize..39, 0u8..10), 2..9).prop_map(|picks| {
        let universe = universe();
        let mut tree = Tree::new();
        for (path, kind) in picks {
            let path = &universe[path];
            let entry = match kind {
                0 => Entry::Link(LINK_TARGETS[path.len() % LINK_TARGETS.len()].to_string()),
                1 => Entry::File { text: text(&format!("base {path}")), exec: true },
                _ => Entry::file(&text(&format!("base {path}"))),
            };
            put(&mut tree, path, entry);
        }
        tree
    })
}

/// How the landings of a run of the property compared, for the summary it prints.
#[derive(Debug, Default)]
struct Tally {
    /// Both merged cleanly, to the same tree.
    clean: usize,
    /// Both report conflicts.
    conflicts: usize,
    /// Of those, conflicts libgit2's merge did not see and breeze's check did.
    caught_by_check: usize,
    /// breeze reports a conflict where git merges, by documented reason ([`why_stricter`]).
    stricter: std::collections::BTreeMap<&'static str, usize>,
    /// git merge-tree aborted (a bug of git's), so there was nothing to compare with.
    git_failed: usize,
    /// git exited 0 yet printed a `CONFLICT` line for the merge, and breeze reports a
    /// conflict: git's own messages agree with breeze.
    git_prints_conflict_on_clean_exit: usize,
}

/// Whether one side moved a symbolic link (its target gone from a path of the base and
/// present at a path that did not hold it) while the other side changed the link's old
/// path: git follows the move and may merge; libgit2 pairs link moves by rules of its own
/// (with several links of one target it may pick another) and can report a conflict.
fn link_move_meets_change(base: &Tree, one: &Tree, other: &Tree) -> bool {
    let moved_and_changed = |mover: &Tree, changer: &Tree| {
        base.iter().any(|(path, entry)| {
            matches!(entry, Entry::Link(_))
                && mover.get(path) != Some(entry)
                && changer.get(path) != Some(entry)
                && mover
                    .iter()
                    .any(|(to, e)| to != path && e == entry && base.get(to) != Some(entry))
        })
    };
    moved_and_changed(one, other) || moved_and_changed(other, one)
}

/// Whether one side moved (or deleted) a file of the base that the other side turned into
/// a link. git 2.47 treats the link as a change of the file and, when the move's new path
/// is taken on the other side too, merges "cleanly" by dropping the moved file (checked
/// with the git CLI: `git_drops_a_moved_file_whose_source_became_a_link`); libgit2 and
/// breeze report the conflict.
fn moved_source_became_link(base: &Tree, main: &Tree, task: &Tree) -> bool {
    let became_link = |mover: &Tree, linker: &Tree| {
        base.iter().any(|(path, entry)| {
            matches!(entry, Entry::File { .. })
                && !mover.contains_key(path)
                && matches!(linker.get(path), Some(Entry::Link(_)))
        })
    };
    became_link(main, task) || became_link(task, main)
}

/// Whether a side moved several links of one target at once (links of that target gone
/// from some paths and new at others, three or more in all): which went where is a guess,
/// and breeze counts every pairing where git picks one, so it may see a conflict git does
/// not.
fn ambiguous_link_moves(base: &Tree, side: &Tree) -> bool {
    let links = |tree: &Tree, other: &Tree| -> Vec<String> {
        tree.iter()
            .filter(|(path, entry)| {
                matches!(entry, Entry::Link(_)) && other.get(*path) != Some(*entry)
            })
            .map(|(_, entry)| format!("{entry:?}"))
            .collect()
    };
    let (gone, new) = (links(base, side), links(side, base));
    gone.iter().any(|target| {
        let count = |list: &[String]| list.iter().filter(|t| *t == target).count();
        let (g, n) = (count(&gone), count(&new));
        g >= 1 && n >= 1 && g + n >= 3
    })
}

/// Whether both sides added the same entry at one new path, one of them by moving it there
/// from a path of the base: libgit2 follows the move and reports rename/add; git does not
/// look for the move (the other side left its source alone) and merges the identical adds.
fn same_entry_moved_and_added(base: &Tree, main: &Tree, task: &Tree) -> bool {
    main.iter().any(|(path, entry)| {
        !base.contains_key(path)
            && task.get(path) == Some(entry)
            && base.iter().any(|(from, e)| {
                e == entry && from != path && (!main.contains_key(from) || !task.contains_key(from))
            })
    })
}

/// Whether one side turned a file of the base into a folder of the same name, or a folder
/// into a file or link, while the other side changed that file or something in that
/// folder: git follows moves across the swap (`a` → `a/a`, `a/b/f` → `a/d/f` with `a/b`
/// now a link) and may merge; libgit2 reports a file/folder conflict.
fn kind_swap_meets_change(base: &Tree, main: &Tree, task: &Tree) -> bool {
    let changed_at = |side: &Tree, path: &str| {
        let inside = format!("{path}/");
        side.get(path) != base.get(path)
            || base
                .keys()
                .chain(side.keys())
                .any(|p| p.starts_with(&inside) && side.get(p) != base.get(p))
    };
    let swapped = |side: &Tree, path: &str| {
        let inside = format!("{path}/");
        let folder_in = |tree: &Tree| tree.keys().any(|p| p.starts_with(&inside));
        (base.contains_key(path) && folder_in(side)) || (folder_in(base) && side.contains_key(path))
    };
    let paths: Vec<String> = base.keys().chain(main.keys()).chain(task.keys()).cloned().collect();
    let mut candidates: Vec<String> = paths.iter().flat_map(|p| ancestors_and_self(p)).collect();
    candidates.sort();
    candidates.dedup();
    candidates.iter().any(|path| {
        (swapped(main, path) && changed_at(task, path))
            || (swapped(task, path) && changed_at(main, path))
    })
}

/// `a/b/c`, `a/b` and `a` for `a/b/c`.
fn ancestors_and_self(path: &str) -> Vec<String> {
    let mut out = vec![path.to_string()];
    let mut at = path;
    while let Some((parent, _)) = at.rsplit_once('/') {
        out.push(parent.to_string());
        at = parent;
    }
    out
}

/// Whether both sides moved a file of the base to one new path (the base's path gone on
/// both, the new path on both), changing it differently: git merges the two changes;
/// libgit2 reports a conflict when one side changed the mode and the other the content.
fn same_move_on_both_sides(base: &Tree, main: &Tree, task: &Tree) -> bool {
    let gone_on_both = base.keys().any(|p| !main.contains_key(p) && !task.contains_key(p));
    gone_on_both
        && main.iter().any(|(p, e)| !base.contains_key(p) && task.get(p).is_some_and(|t| t != e))
}

/// Why breeze may report a conflict where git merges cleanly, if this landing is one of
/// the documented cases; `libgit2` says whether libgit2's merge itself reported it (else
/// breeze's check did).
fn why_stricter(base: &Tree, main: &Tree, task: &Tree, libgit2: bool) -> Option<&'static str> {
    let reasons: &[(&'static str, bool)] = if libgit2 {
        &[
            ("libgit2: link moved and changed", link_move_meets_change(base, main, task)),
            ("libgit2: a move's source became a link", moved_source_became_link(base, main, task)),
            ("libgit2: same entry moved and added", same_entry_moved_and_added(base, main, task)),
            ("libgit2: file/folder swap meets a change", kind_swap_meets_change(base, main, task)),
            ("libgit2: same move on both sides", same_move_on_both_sides(base, main, task)),
        ]
    } else {
        &[(
            "check: several links of one target moved",
            ambiguous_link_moves(base, main) || ambiguous_link_moves(base, task),
        )]
    };
    reasons.iter().find_map(|(why, holds)| holds.then_some(*why))
}

/// Lands the tasks one after another, each onto the previous result (a task that
/// conflicts is skipped, as if sent back), comparing every landing with git. Returns a
/// description of the first disagreement.
fn land_in_order(
    repo: &ModelRepo,
    handle: &Repo,
    base: Oid,
    heads: &[Oid],
    order: &[usize],
    tally: &mut Tally,
) -> Result<(), String> {
    let base_tree = repo.read_commit_tree(base);
    let mut main = base;
    for &t in order {
        let head = heads[t];
        let breeze = handle.merge_task(base, head, main).map_err(|e| e.to_string())?;
        let git = git_merge_tree(repo.path(), base, main, head).ok_or("git merge-tree failed")?;
        match (&breeze, &git) {
            // git 2.47 aborts on some merges (an assertion in merge-ort's process_renames);
            // there is nothing to compare with, and the named regression test
            // `git_merge_tree_aborts_where_breeze_merges` pins breeze's answer.
            (MergeOutcome::Clean { tree }, GitMerge::Failed(_)) => {
                tally.git_failed += 1;
                main = repo.commit_tree(*tree, &[main], &format!("landed {t}"));
            }
            (MergeOutcome::Conflicts { .. }, GitMerge::Failed(_)) => tally.git_failed += 1,
            (MergeOutcome::Clean { tree }, GitMerge::Clean(expected)) => {
                if tree != expected {
                    return Err(format!(
                        "task {t}: breeze merged to\n{}but git to\n{}",
                        show(&repo.read_tree(*tree)),
                        show(&repo.read_tree(*expected))
                    ));
                }
                tally.clean += 1;
                main = repo.commit_tree(*tree, &[main], &format!("landed {t}"));
            }
            (MergeOutcome::Clean { tree }, GitMerge::Conflicts(messages)) => {
                return Err(format!(
                    "task {t}: git reports conflicts:\n{messages}\nbreeze merged cleanly to\n{}",
                    show(&repo.read_tree(*tree))
                ));
            }
            (MergeOutcome::Conflicts { paths }, GitMerge::Clean(expected)) => {
                if !git_conflict_lines_of_a_clean_merge(repo.path(), base, main, head).is_empty() {
                    tally.git_prints_conflict_on_clean_exit += 1;
                    continue;
                }
                let (main_tree, task_tree) =
                    (repo.read_commit_tree(main), repo.read_commit_tree(head));
                let libgit2 = libgit2_sees_conflicts(repo, base, main, head);
                let Some(why) = why_stricter(&base_tree, &main_tree, &task_tree, libgit2) else {
                    return Err(format!(
                        "task {t}: breeze reports conflicts in {paths:?} (libgit2 alone: {}), git merges cleanly to\n{}",
                        if libgit2 { "conflicts" } else { "clean" },
                        show(&repo.read_tree(*expected))
                    ));
                };
                *tally.stricter.entry(why).or_default() += 1;
            }
            (MergeOutcome::Conflicts { .. }, GitMerge::Conflicts(_)) => {
                tally.conflicts += 1;
                if !libgit2_sees_conflicts(repo, base, main, head) {
                    tally.caught_by_check += 1;
                }
            }
        }
    }
    Ok(())
}

/// Whether libgit2's merge alone (renames followed, as breeze merges) reports conflicts.
fn libgit2_sees_conflicts(repo: &ModelRepo, base: Oid, onto: Oid, head: Oid) -> bool {
    let git2 = repo.git2();
    let tree = |oid: Oid| git2.find_commit(oid).unwrap().tree().unwrap();
    let mut options = git2::MergeOptions::new();
    options.find_renames(true);
    git2.merge_trees(&tree(base), &tree(onto), &tree(head), Some(&options)).unwrap().has_conflicts()
}

/// Writes the base and one commit per task (each task's ops applied to the base).
fn commit_tasks(repo: &ModelRepo, base: &Tree, tasks: &[Vec<Op>]) -> (Oid, Vec<Oid>, Vec<Tree>) {
    let root = common::rev(repo.path(), "HEAD");
    let base_commit = repo.commit(base, &[root], "base");
    let mut heads = Vec::new();
    let mut trees = Vec::new();
    for (t, ops) in tasks.iter().enumerate() {
        let mut tree = base.clone();
        for op in ops {
            apply(&mut tree, op, t);
        }
        heads.push(repo.commit(&tree, &[base_commit], &format!("task {t}")));
        trees.push(tree);
    }
    (base_commit, heads, trees)
}

/// Cases to run: `PROPTEST_CASES`, else 96.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(96)
}

/// Two tasks in both landing orders, or three in a chain (both orders), from a common
/// base; every landing compared with git's.
#[test]
fn landings_agree_with_git_merge_tree() {
    if !git_can_merge_tree() {
        return;
    }
    let repo = ModelRepo::new();
    let handle = Repo::open(repo.path()).unwrap();
    let config =
        ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let tally = std::cell::RefCell::new(Tally::default());
    let started = std::time::Instant::now();
    let strategy = (base_tree(), prop::collection::vec(prop::collection::vec(op(), 1..4), 2..4));
    let result = runner.run(&strategy, |(base, tasks)| {
        let (base_commit, heads, trees) = commit_tasks(&repo, &base, &tasks);
        let orders: Vec<Vec<usize>> = if heads.len() == 2 {
            vec![vec![0, 1], vec![1, 0]]
        } else {
            vec![vec![0, 1, 2], vec![2, 1, 0]]
        };
        for order in orders {
            let landed =
                land_in_order(&repo, &handle, base_commit, &heads, &order, &mut tally.borrow_mut());
            if let Err(problem) = landed {
                let tasks: Vec<String> = trees
                    .iter()
                    .enumerate()
                    .map(|(t, tree)| format!("task {t}:\n{}", show(tree)))
                    .collect();
                prop_assert!(
                    false,
                    "order {order:?}\nbase:\n{}{}\n{problem}",
                    show(&base),
                    tasks.concat()
                );
            }
        }
        Ok(())
    });
    eprintln!(
        "{} cases in {:.1} s; landings: {:?}",
        cases(),
        started.elapsed().as_secs_f64(),
        tally.borrow()
    );
    if let Err(failure) = result {
        panic!("{failure}");
    }
}
