//! Named merges breeze's landing must get right, each compared with `git merge-tree
//! --write-tree` on the same commits: the file/folder collisions of issue 23 and the cases
//! the property test (`merge_properties.rs`) found. Where breeze is deliberately stricter
//! than git, or git itself fails, the test says so.

mod common;
mod merge_model;

use breeze_git::{MergeOutcome, Oid, Repo};
use merge_model::{
    Entry, GitMerge, ModelRepo, Tree, edited, git_can_merge_tree,
    git_conflict_lines_of_a_clean_merge, git_merge_tree, text,
};

fn file(seed: &str) -> Entry {
    Entry::file(&text(seed))
}

fn exec(seed: &str) -> Entry {
    Entry::File { text: text(seed), exec: true }
}

fn link(target: &str) -> Entry {
    Entry::Link(target.to_string())
}

fn tree(entries: &[(&str, Entry)]) -> Tree {
    entries.iter().map(|(p, e)| ((*p).to_string(), e.clone())).collect()
}

/// One landing: the task's change `base..task` merged onto `main` (whose parent is the
/// base), by breeze and by git.
struct Landing {
    repo: ModelRepo,
    /// The base, main and task commits.
    commits: [Oid; 3],
    breeze: MergeOutcome,
    git: Option<GitMerge>,
}

impl Landing {
    fn of(base: &Tree, main: &Tree, task: &Tree) -> Landing {
        let repo = ModelRepo::new();
        let root = common::rev(repo.path(), "HEAD");
        let base = repo.commit(base, &[root], "base");
        let onto = repo.commit(main, &[base], "main");
        let head = repo.commit(task, &[base], "task");
        let handle = Repo::open(repo.path()).unwrap();
        let breeze = handle.merge_task(base, head, onto).unwrap();
        let git =
            git_can_merge_tree().then(|| git_merge_tree(repo.path(), base, onto, head)).flatten();
        Landing { repo, commits: [base, onto, head], breeze, git }
    }

    /// breeze reports a conflict naming at least `paths`; so does git.
    fn conflicts(&self, paths: &[&str]) {
        let MergeOutcome::Conflicts { paths: found } = &self.breeze else {
            panic!("breeze merged cleanly: {:?}", self.breeze)
        };
        for path in paths {
            assert!(found.iter().any(|f| f == path), "`{path}` not named in {found:?}");
        }
        if let Some(git) = &self.git {
            assert!(matches!(git, GitMerge::Conflicts(_)), "git merges cleanly: {git:?}");
        }
    }

    /// breeze merges cleanly to `expected`, and to git's tree.
    fn merges_to(&self, expected: &Tree) {
        let MergeOutcome::Clean { tree } = &self.breeze else {
            panic!("breeze reports conflicts: {:?}", self.breeze)
        };
        assert_eq!(&self.repo.read_tree(*tree), expected);
        if let Some(git) = &self.git {
            assert_eq!(git, &GitMerge::Clean(*tree), "git's tree differs");
        }
    }

    /// breeze reports a conflict where git merges cleanly (to a tree other than `lost`
    /// would be, when given: git's tree drops that side's work).
    fn stricter_than_git(&self) -> Option<Oid> {
        assert!(
            matches!(self.breeze, MergeOutcome::Conflicts { .. }),
            "breeze merged cleanly: {:?}",
            self.breeze
        );
        match &self.git {
            Some(GitMerge::Clean(tree)) => Some(*tree),
            Some(other) => panic!(
                "git no longer merges this cleanly: {other:?}; make it a plain conflict case"
            ),
            None => None,
        }
    }
}

fn folder_d() -> Tree {
    tree(&[("d/one", file("one")), ("d/two", file("two")), ("keep", file("keep"))])
}

/// Task A of issue 23: the folder `d/` becomes a file (or link) `d`.
fn folder_d_replaced_by(entry: Entry) -> Tree {
    tree(&[("d", entry), ("keep", file("keep"))])
}

/// Task B of issue 23: a new file in `d/`.
fn folder_d_with_three() -> Tree {
    let mut t = folder_d();
    t.insert("d/three".into(), file("three"));
    t
}

#[test]
fn folder_turned_into_a_file_meets_a_new_file_in_it() {
    // B landed first; A's file `d` cannot join B's `d/three`.
    let a = folder_d_replaced_by(file("d as a file"));
    Landing::of(&folder_d(), &folder_d_with_three(), &a).conflicts(&["d", "d/three"]);
}

#[test]
fn new_file_in_a_folder_meets_the_folder_turned_into_a_file() {
    // A landed first; B's `d/three` cannot join A's file `d`.
    let a = folder_d_replaced_by(file("d as a file"));
    Landing::of(&folder_d(), &a, &folder_d_with_three()).conflicts(&["d", "d/three"]);
}

#[test]
fn folder_turned_into_a_link_meets_a_new_file_in_it() {
    let a = folder_d_replaced_by(link("elsewhere"));
    Landing::of(&folder_d(), &folder_d_with_three(), &a).conflicts(&["d", "d/three"]);
}

#[test]
fn new_file_in_a_folder_meets_the_folder_turned_into_a_link() {
    let a = folder_d_replaced_by(link("elsewhere"));
    Landing::of(&folder_d(), &a, &folder_d_with_three()).conflicts(&["d", "d/three"]);
}

#[test]
fn folder_turned_into_a_file_merges_when_nothing_else_touches_it() {
    let a = folder_d_replaced_by(file("d as a file"));
    let mut main = folder_d();
    main.insert("other".into(), file("other"));
    let mut expected = a.clone();
    expected.insert("other".into(), file("other"));
    Landing::of(&folder_d(), &main, &a).merges_to(&expected);
}

#[test]
fn file_moved_onto_a_name_the_other_side_made_a_folder() {
    // Found by the property test: main moves `b` into a new folder `a/`; the task moves
    // `d` (which main edited) to `a`. libgit2 merged "cleanly" and dropped `a` entirely.
    let base = tree(&[("b", exec("b")), ("d", exec("d"))]);
    let main = tree(&[
        ("a/a", exec("b")),
        ("d", Entry::File { text: edited(&text("d"), 0, "main"), exec: true }),
    ]);
    let task = tree(&[("a", exec("d")), ("b", exec("b"))]);
    Landing::of(&base, &main, &task).conflicts(&["a", "a/a"]);
}

#[test]
fn file_moved_into_a_folder_the_other_side_moved_away() {
    // git's directory rename detection: the task moved `d/b/a` to `x/b/a`, emptying
    // `d/b`; main's new `d/b/new` belongs in `x/b/`, git says, and calls it a conflict.
    let base = tree(&[("d/b/a", file("a")), ("keep", file("keep"))]);
    let mut main = base.clone();
    main.insert("d/b/new".into(), file("new"));
    let task = tree(&[("x/b/a", file("a")), ("keep", file("keep"))]);
    Landing::of(&base, &main, &task).conflicts(&["d/b/new", "x/b/a"]);
}

#[test]
fn file_created_in_a_new_subfolder_of_a_moved_folder_merges() {
    // git moves only paths created directly in the moved folder: `d/b/b/new` stays.
    let base = tree(&[("d/b/a", file("a")), ("keep", file("keep"))]);
    let mut main = base.clone();
    main.insert("d/b/b/new".into(), file("new"));
    let task = tree(&[("x/b/a", file("a")), ("keep", file("keep"))]);
    let expected =
        tree(&[("d/b/b/new", file("new")), ("keep", file("keep")), ("x/b/a", file("a"))]);
    Landing::of(&base, &main, &task).merges_to(&expected);
}

#[test]
fn link_moved_out_of_a_folder_the_other_side_adds_to() {
    // Found by the property test: the task moves the link `a/d` to `b/a/a`, emptying `a/`;
    // main adds `a/b`. git follows the link's move (libgit2 does not) and calls it an
    // implicit directory rename conflict.
    let base = tree(&[("a/d", link("b/b")), ("b/a/b", link("d/a"))]);
    let main = tree(&[("a/b", link("a")), ("a/d", link("b/b")), ("b/a/b", link("d/a"))]);
    let task = tree(&[("b/a/a", link("b/b")), ("b/a/b", link("d/a"))]);
    Landing::of(&base, &main, &task).conflicts(&["a/b"]);
}

#[test]
fn file_turned_into_a_link_meets_its_move() {
    // Found by the property test: main turns `d/a/a` into a link, the task moves the folder
    // `d/` to `a/` (over the link `a`). git: the file was deleted on main and moved by the
    // task; libgit2 moved main's link along and merged.
    let base = tree(&[("a", link("d/a")), ("d/a/a", exec("a"))]);
    let main = tree(&[("a", link("d/a")), ("d/a/a", link("a"))]);
    let task = tree(&[("a/a/a", exec("a"))]);
    Landing::of(&base, &main, &task).conflicts(&["a/a/a"]);
}

#[test]
fn file_moved_onto_its_own_folder_merges_with_an_edit() {
    // The task moves `a/b/b` to `a/b` (the folder becomes the file); main edits the file.
    let base = tree(&[("a/b/b", exec("b")), ("k", link("x"))]);
    let edit = Entry::File { text: edited(&text("b"), 0, "main"), exec: true };
    let main = tree(&[("a/b/b", edit.clone()), ("k", link("x"))]);
    let task = tree(&[("a/b", exec("b")), ("k", link("x"))]);
    Landing::of(&base, &main, &task).merges_to(&tree(&[("a/b", edit), ("k", link("x"))]));
}

#[test]
fn git_merge_tree_aborts_where_breeze_merges() {
    // git 2.47's merge-ort aborts on this merge (`process_renames: Assertion `newinfo &&
    // !newinfo->merged.clean' failed`): the task deletes `a/` (files in two subfolders)
    // and moves `b` to `a`; main edits `b`. `git merge -s recursive` merges it to `a` =
    // `b` with main's edit; so does breeze.
    let base = tree(&[("a/a/a", file("aa")), ("a/b/a", file("ba")), ("b", file("b"))]);
    let edit = Entry::file(&edited(&text("b"), 0, "main"));
    let main = tree(&[("a/a/a", file("aa")), ("a/b/a", file("ba")), ("b", edit.clone())]);
    let task = tree(&[("a", file("b"))]);
    let landing = Landing::of(&base, &main, &task);
    let MergeOutcome::Clean { tree: merged } = landing.breeze else {
        panic!("{:?}", landing.breeze)
    };
    assert_eq!(landing.repo.read_tree(merged), tree(&[("a", edit)]));
    if let Some(git) = &landing.git {
        // Once git no longer aborts, it must agree.
        if !matches!(git, GitMerge::Failed(_)) {
            assert_eq!(git, &GitMerge::Clean(merged));
        }
    }
}

#[test]
fn git_drops_a_moved_file_whose_source_became_a_link() {
    // git 2.47 merges this "cleanly" and loses the task's file: main turns `a/a/b` into a
    // link and adds `a/b/b`; the task moves `a/a/b` to `a/b/b`. Its content is nowhere in
    // git's tree. libgit2 sees the rename/add conflict, and breeze reports it.
    let base = tree(&[("a/a/b", exec("moved")), ("k", link("x"))]);
    let main = tree(&[("a/a/b", link("a")), ("a/b/b", exec("pool")), ("k", link("x"))]);
    let task = tree(&[("a/b/b", exec("moved")), ("k", link("x"))]);
    let landing = Landing::of(&base, &main, &task);
    if let Some(git_tree) = landing.stricter_than_git() {
        let merged = landing.repo.read_tree(git_tree);
        assert!(
            !merged.values().any(|e| e == &exec("moved")),
            "git kept the moved file: {merged:?}"
        );
    }
}

#[test]
fn link_moved_on_one_side_and_retargeted_on_the_other_merges() {
    // The merge follows a link's move (libgit2's diff alone would not pair it): `y` gets
    // the new target, as git has it.
    let base = tree(&[("x", link("old")), ("k", file("k"))]);
    let main = tree(&[("y", link("old")), ("k", file("k"))]);
    let task = tree(&[("x", link("new")), ("k", file("k"))]);
    Landing::of(&base, &main, &task).merges_to(&tree(&[("k", file("k")), ("y", link("new"))]));
}

#[test]
fn file_moved_into_a_new_folder_of_its_name_merges_with_an_edit() {
    // Main moves `a` into a new folder `a/` (`a/a`), the task edits `a`: the edit follows.
    let base = tree(&[("a", exec("a")), ("k", file("k"))]);
    let main = tree(&[("a/a", exec("a")), ("k", file("k"))]);
    let edit = Entry::File { text: edited(&text("a"), 2, "task"), exec: true };
    let task = tree(&[("a", edit.clone()), ("k", file("k"))]);
    Landing::of(&base, &main, &task).merges_to(&tree(&[("a/a", edit), ("k", file("k"))]));
}

#[test]
fn file_moved_and_edited_into_a_folder_of_its_name_meets_an_edit() {
    // Deliberately stricter (libgit2's own conflict, found by the property test): main
    // moves `a` into a new folder `a/` with an edit and deletes the link `b`; the task
    // edits another line of `a`. git follows the move and merges both edits into `a/a`;
    // libgit2 reports a conflict, and the worker merges by hand.
    let base = tree(&[("a", exec("a")), ("b", link("d/a"))]);
    let main = tree(&[("a/a", Entry::File { text: edited(&text("a"), 0, "main"), exec: true })]);
    let task = tree(&[
        ("a", Entry::File { text: edited(&text("a"), 2, "task"), exec: true }),
        ("b", link("d/a")),
    ]);
    Landing::of(&base, &main, &task).stricter_than_git();
}

#[test]
fn links_moved_crosswise_between_two_folders_merge() {
    // Found by the property test (5,000 cases): main moves the link `d/d/a` into `d/a/`
    // (emptying `d/d/`), the task moves `d/a/a` into `d/d/` (emptying `d/a/`). Each side
    // creates a path in a folder the other moved away, but into the folder it emptied
    // itself, so git applies neither folder move ("Avoiding applying d/d -> d/a rename to
    // d/a/b, because d/a itself was renamed") and merges.
    let base = tree(&[
        ("a/b/a", link("d/a")),
        ("a/b/b", exec("base a/b/b")),
        ("d/a/a", link("d/a")),
        ("d/d/a", link("d/a")),
    ]);
    let main = tree(&[
        ("a/b/a", link("d/a")),
        ("a/b/b", exec("base a/b/b")),
        ("d/a/a", link("d/a")),
        ("d/a/b", link("d/a")),
    ]);
    let task = tree(&[
        ("a/b/a", link("d/a")),
        ("a/b/b", exec("base a/b/b")),
        ("d/d/a", link("d/a")),
        ("d/d/b", link("d/a")),
    ]);
    let merged = tree(&[
        ("a/b/a", link("d/a")),
        ("a/b/b", exec("base a/b/b")),
        ("d/a/b", link("d/a")),
        ("d/d/b", link("d/a")),
    ]);
    Landing::of(&base, &main, &task).merges_to(&merged);
    Landing::of(&base, &task, &main).merges_to(&merged);
}

#[test]
fn files_moved_crosswise_between_two_folders_merge() {
    // The same with files: `x/one` → `y/one` on main, `y/two` → `x/two` in the task.
    let base = tree(&[("x/one", file("one")), ("y/two", file("two"))]);
    let main = tree(&[("y/one", file("one")), ("y/two", file("two"))]);
    let task = tree(&[("x/one", file("one")), ("x/two", file("two"))]);
    let merged = tree(&[("x/two", file("two")), ("y/one", file("one"))]);
    Landing::of(&base, &main, &task).merges_to(&merged);
    Landing::of(&base, &task, &main).merges_to(&merged);
}

#[test]
fn same_file_added_with_two_executable_bits_conflicts() {
    // Found by the property test (10,000 cases): both sides add `d/d/a` with the same
    // content, main as an executable, the task not. libgit2 merges it cleanly to main's
    // bit and drops the task's; git reports an add/add conflict.
    let base = tree(&[("k", link("x"))]);
    let main = tree(&[("d/d/a", exec("pool")), ("k", link("x"))]);
    let task = tree(&[("d/d/a", file("pool")), ("k", link("x"))]);
    Landing::of(&base, &main, &task).conflicts(&["d/d/a"]);
    Landing::of(&base, &task, &main).conflicts(&["d/d/a"]);
}

#[test]
fn executable_bit_set_on_one_side_merges_with_an_edit_on_the_other() {
    // The three-way merge of the bits: main makes `a` executable, the task edits it.
    let base = tree(&[("a", file("a")), ("k", link("x"))]);
    let main = tree(&[("a", exec("a")), ("k", link("x"))]);
    let edit = edited(&text("a"), 3, "task");
    let task = tree(&[("a", Entry::file(&edit)), ("k", link("x"))]);
    let merged = tree(&[("a", Entry::File { text: edit, exec: true }), ("k", link("x"))]);
    Landing::of(&base, &main, &task).merges_to(&merged);
    Landing::of(&base, &task, &main).merges_to(&merged);
}

#[test]
fn git_prints_a_conflict_yet_merges_a_path_moved_along_two_folders() {
    // Found by the property test (10,000 cases, after the merge with main): main deletes
    // `d/d/` and the link `a/d/b`, and adds `d/b/d`; the task moves `d/b/a` to `d/d/a`
    // (emptying `d/b/`) and `d/d/d` to `a/d/d`. git moves main's new `d/b/d` along the
    // task's folder move to `d/d/d`, follows that path's move to `a/d/d`, and lands main's
    // new file there in place of the task's moved one: it prints "CONFLICT (file location)"
    // and still exits 0. libgit2 reports a conflict; so does breeze.
    let base = tree(&[
        ("a/d/b", link("d/a")),
        ("b/a", link("b/b")),
        ("d/b/a", link("d/a")),
        ("d/d/d", exec("base d/d/d")),
    ]);
    let main = tree(&[("b/a", link("b/b")), ("d/b/a", link("d/a")), ("d/b/d", exec("pool 0"))]);
    let task = tree(&[
        ("a/d/b", link("d/a")),
        ("a/d/d", exec("base d/d/d")),
        ("b/a", link("b/b")),
        ("d/d/a", link("d/a")),
    ]);
    let landing = Landing::of(&base, &main, &task);
    if let Some(git_tree) = landing.stricter_than_git() {
        let merged = landing.repo.read_tree(git_tree);
        assert_eq!(merged.get("a/d/d"), Some(&exec("pool 0")), "{merged:?}");
        let [b, m, t] = landing.commits;
        let lines = git_conflict_lines_of_a_clean_merge(landing.repo.path(), b, m, t);
        assert!(
            lines.iter().any(|l| l.starts_with("CONFLICT (file location): d/b/d")),
            "{lines:?}"
        );
    }
}

#[test]
fn link_moved_into_a_folder_the_other_side_moved_onto_its_old_folder_conflicts() {
    // Found by the property test (20,000 cases): main moves `d/d/a` to `a/d/a` (the folder
    // `d/` goes to `a/`), the task moves `a/a` to `d/a` (emptying `a/`). The task's `d/a`
    // is new in a folder main moved away; its destination `a/` is one the task moved away,
    // but git only weighs that move when main created something directly in `a/` (main's
    // `a/d/a` is one level down), so git moves `d/a` along to `a/a` and reports the
    // conflict.
    let base = tree(&[("a/a", link("b/b")), ("b", link("d/a")), ("d/d/a", link("d/a"))]);
    let main = tree(&[("a/a", link("b/b")), ("a/d/a", link("d/a")), ("b", link("d/a"))]);
    let task = tree(&[("b", link("d/a")), ("d/a", link("b/b")), ("d/d/a", link("d/a"))]);
    Landing::of(&base, &main, &task).conflicts(&["d/a"]);
}

#[test]
fn moved_file_with_the_same_edit_on_both_sides_keeps_the_other_sides_executable_bit() {
    // Found by the property test (20,000 cases, a chain of three): main moves the
    // executable `a/a` to `a/b` with an edit; the task makes the same edit and clears the
    // executable bit. libgit2 takes the identical content as main's file and keeps its bit;
    // git merges the bits three ways and clears it. breeze sets git's bit and lands.
    let edit = edited(&text("a"), 7, "edited line 7, version 1");
    let base = tree(&[("a/a", exec("a")), ("d/d", link("b/b"))]);
    let moved =
        tree(&[("a/b", Entry::File { text: edit.clone(), exec: true }), ("d/d", link("b/b"))]);
    let cleared =
        tree(&[("a/a", Entry::File { text: edit.clone(), exec: false }), ("d/d", link("b/b"))]);
    let merged = tree(&[("a/b", Entry::file(&edit)), ("d/d", link("b/b"))]);
    Landing::of(&base, &moved, &cleared).merges_to(&merged);
    Landing::of(&base, &cleared, &moved).merges_to(&merged);
}

#[test]
fn a_path_one_side_moved_where_the_others_folder_move_would_put_a_new_file_stays() {
    // Found by the property test (20,000 cases): main moves `b/a/a` to `a/a/a` (`b/` goes to
    // `a/`) and adds `a/b/d`; the task moves `a/b/a` to `b/d` (`a/b/` goes to `b/`). main's
    // folder move would take the task's `b/d` to `a/d`, but the task's own folder move takes
    // main's new `a/b/d` exactly to `b/d`: git turns folder moves off for such a path
    // ("dual rename", merge-ort's check_for_directory_rename) and merges.
    let base = tree(&[("a/b/a", link("d/a")), ("a/d", link("b/b")), ("b/a/a", link("d/a"))]);
    let main = tree(&[
        ("a/a/a", link("d/a")),
        ("a/b/a", link("d/a")),
        ("a/b/d", link("a")),
        ("a/d", link("b/b")),
    ]);
    let task = tree(&[
        ("a/d", link("b/b")),
        ("b/a/a", link("d/a")),
        ("b/d", link("d/a")),
        ("d", link("a")),
    ]);
    let merged = tree(&[
        ("a/a/a", link("d/a")),
        ("a/b/d", link("a")),
        ("a/d", link("b/b")),
        ("b/d", link("d/a")),
        ("d", link("a")),
    ]);
    Landing::of(&base, &main, &task).merges_to(&merged);
    Landing::of(&base, &task, &main).merges_to(&merged);
}
