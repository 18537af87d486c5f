//! The check of every landing merge before main moves. libgit2's in-memory merge can report
//! a clean merge that drops one side's change (a file where the other side made a folder of
//! the same name merges to the folder alone), and sees no conflict in some shapes git does,
//! so its tree is held against what each side changed (the rules in detail, and how they
//! were checked against `git merge-tree`: the crate README):
//!
//! - each side's changes since the base (renames followed, as the merge follows them) are
//!   grouped by the paths they touch; a group of one side must come out exactly as that
//!   side left it; a group of both is the content merge's, unless a change of kind or a
//!   guessed link move in it makes git see a conflict;
//! - a file one side wrote where the other wrote under a folder of that name, and a path
//!   created in a folder the other side moved away, are conflicts;
//! - a moved file, and a file both sides wrote in place, gets the three-way merge of the
//!   executable bits: where libgit2 merged the bit otherwise the caller sets it, as git
//!   has it (the same file added with two bits is a conflict); untouched paths keep the
//!   base's entry.
//!
//! A failing path is a conflict, named with the paths colliding with it.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use git2::{Delta, Diff, DiffFindOptions, DiffOptions, Index, Oid, Repository, Tree};

use crate::diff::only_what_differs;
use crate::error::{Context as _, GitError};
use crate::libgit2_checkout::tree_diff_paths;
use crate::paths::{RepoPath, bytes_path, path_string};

/// Which side of a merge changed something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Side {
    /// main since the task's base (`base..onto`).
    Main,
    /// The task (`base..head`).
    Task,
}

impl Side {
    pub(crate) fn other(self) -> Side {
        match self {
            Side::Main => Side::Task,
            Side::Task => Side::Main,
        }
    }
}

/// One change of one side: the paths it touches (both sides of a rename), how, and whether
/// its path is new to the base (an addition, or a rename's destination).
struct Change {
    side: Side,
    paths: Vec<Vec<u8>>,
    status: Delta,
    /// A link's move guessed among several (links of one target gone and new at several
    /// paths of one side): git may pair them otherwise than libgit2.
    guessed: bool,
}

impl Change {
    /// The path it created, if any: an added path or where a rename went.
    fn created(&self) -> Option<&[u8]> {
        match self.status {
            Delta::Added | Delta::Copied => self.paths.last().map(Vec::as_slice),
            Delta::Renamed => self.paths.get(1).map(Vec::as_slice),
            _ => None,
        }
    }

    /// The path whose file or link it wrote (added, changed or moved there), if any.
    fn written(&self) -> Option<&[u8]> {
        match self.status {
            Delta::Deleted => None,
            _ => self.paths.last().map(Vec::as_slice),
        }
    }

    /// Source and destination of a rename.
    fn renamed(&self) -> Option<(&[u8], &[u8])> {
        match (self.status, self.paths.as_slice()) {
            (Delta::Renamed, [from, to]) => Some((from, to)),
            _ => None,
        }
    }
}

/// What sits at a path of a tree: mode and object, or nothing.
type Slot = Option<(i32, Oid)>;

/// Entries of trees by path, each folder read once per merge (keyed by its object id, so
/// the folders the trees share are read once for all): `Tree::get_path` reads every folder
/// on the way again, which made the check of a landing moving a thousand files take half
/// a second.
struct Lookup<'r> {
    repo: &'r Repository,
    folders: RefCell<HashMap<Oid, Rc<FolderEntries>>>,
}

/// The entries of one folder: name → mode and object.
type FolderEntries = HashMap<Vec<u8>, (i32, Oid)>;

impl<'r> Lookup<'r> {
    fn new(repo: &'r Repository) -> Lookup<'r> {
        Lookup { repo, folders: RefCell::new(HashMap::new()) }
    }

    /// The entries of the folder (tree object) `id`, by name.
    fn folder(&self, id: Oid) -> Result<Rc<FolderEntries>, GitError> {
        if let Some(found) = self.folders.borrow().get(&id) {
            return Ok(found.clone());
        }
        let tree = self
            .repo
            .find_tree(id)
            .map_err(|_| GitError::MissingObject { what: "tree", oid: id })?;
        let entries: FolderEntries =
            tree.iter().map(|e| (e.name_bytes().to_vec(), (e.filemode(), e.id()))).collect();
        let entries = Rc::new(entries);
        self.folders.borrow_mut().insert(id, entries.clone());
        Ok(entries)
    }

    /// The entry (mode and object) at `path` of `tree`, folders included; `None` when
    /// there is none, or a file stands where a folder of the path would be.
    fn entry(&self, tree: &Tree<'_>, path: &[u8]) -> Result<Option<(i32, Oid)>, GitError> {
        let mut folder = tree.id();
        let mut parts = path.split(|&b| b == b'/').peekable();
        while let Some(part) = parts.next() {
            let Some(&(mode, id)) = self.folder(folder)?.get(part) else { return Ok(None) };
            if parts.peek().is_none() {
                return Ok(Some((mode, id)));
            }
            if mode != FOLDER_MODE {
                return Ok(None);
            }
            folder = id;
        }
        Ok(None)
    }

    /// The file, link or submodule at `path` in `tree`; `None` when there is none: nothing,
    /// a folder, or a file where a folder of the path would be.
    fn slot(&self, tree: &Tree<'_>, path: &[u8]) -> Result<Slot, GitError> {
        Ok(self.entry(tree, path)?.filter(|(mode, _)| *mode != FOLDER_MODE))
    }

    /// Whether `path` is a folder in `tree`.
    fn is_folder(&self, tree: &Tree<'_>, path: &[u8]) -> Result<bool, GitError> {
        Ok(matches!(self.entry(tree, path)?, Some((mode, _)) if mode == FOLDER_MODE))
    }
}

/// The diff of two trees with kind changes kept as such and renames paired, as the merge
/// pairs them.
fn renamed_diff<'r>(
    repo: &'r Repository,
    old: &Tree<'_>,
    new: &Tree<'_>,
) -> Result<Diff<'r>, GitError> {
    let mut options = DiffOptions::new();
    options.include_typechange(true);
    only_what_differs(repo, old, new, &mut options)?;
    let mut diff = repo
        .diff_tree_to_tree(Some(old), Some(new), Some(&mut options))
        .ctx(|| format!("could not diff {}..{}", old.id(), new.id()))?;
    // Identical files first (cheap: by id), then similar ones among the rest, as the merge
    // pairs them; one pass over all of them compares every deleted file with every added one.
    let context = || format!("could not detect renames in {}..{}", old.id(), new.id());
    diff.find_similar(Some(DiffFindOptions::new().renames(true).exact_match_only(true)))
        .ctx(context)?;
    diff.find_similar(Some(DiffFindOptions::new().renames(true))).ctx(context)?;
    Ok(diff)
}

/// Adds the changes of `diff` to `into`. libgit2's diff pairs renames of regular files
/// only; the merge (libgit2's and git's) follows a symbolic link's move too (the same target
/// deleted at one path and added at another), so those are paired here.
///
/// Like git, a move only goes to a new path: libgit2's diff also pairs a file with a path of
/// the base whose kind changed (a link replaced by the moved file), which git and the merge
/// see as a deletion and a change of that path.
fn changes_of(
    diff: &Diff<'_>,
    side: Side,
    in_base: &dyn Fn(&[u8]) -> Result<bool, GitError>,
    into: &mut Vec<Change>,
) -> Result<(), GitError> {
    let mut gone_links: Vec<(Oid, Vec<u8>)> = Vec::new();
    let mut new_links: Vec<(Oid, Vec<u8>)> = Vec::new();
    for delta in diff.deltas() {
        let link = |file: git2::DiffFile<'_>| file.mode() == git2::FileMode::Link;
        if delta.status() == Delta::Renamed
            && let (Some(from), Some(to)) =
                (delta.old_file().path_bytes(), delta.new_file().path_bytes())
            && in_base(to)?
        {
            let status = match link(delta.new_file()) == link(delta.old_file()) {
                true => Delta::Modified,
                false => Delta::Typechange,
            };
            into.push(Change {
                side,
                paths: vec![from.to_vec()],
                status: Delta::Deleted,
                guessed: false,
            });
            into.push(Change { side, paths: vec![to.to_vec()], status, guessed: false });
            continue;
        }
        match delta.status() {
            Delta::Deleted if link(delta.old_file()) => {
                if let Some(path) = delta.old_file().path_bytes() {
                    gone_links.push((delta.old_file().id(), path.to_vec()));
                    continue;
                }
            }
            Delta::Added if link(delta.new_file()) => {
                if let Some(path) = delta.new_file().path_bytes()
                    && !in_base(path)?
                {
                    new_links.push((delta.new_file().id(), path.to_vec()));
                    continue;
                }
            }
            _ => {}
        }
        let mut paths = Vec::with_capacity(2);
        for file in [delta.old_file(), delta.new_file()] {
            if let Some(path) = file.path_bytes()
                && !paths.iter().any(|p: &Vec<u8>| p.as_slice() == path)
            {
                paths.push(path.to_vec());
            }
        }
        if !paths.is_empty() {
            into.push(Change { side, paths, status: delta.status(), guessed: false });
        }
    }
    pair_link_moves(side, &gone_links, &new_links, into);
    Ok(())
}

/// The changes of the symbolic links `side` deleted (`gone_links`) and added (`new_links`),
/// each with its target's id: a link deleted at one path and added at another is a move.
/// When several links of one target moved at once, which went where is git's guess (it
/// weighs names and what the other side did); every pairing counts, so no guess of git's
/// is missed.
fn pair_link_moves(
    side: Side,
    gone_links: &[(Oid, Vec<u8>)],
    new_links: &[(Oid, Vec<u8>)],
    into: &mut Vec<Change>,
) {
    for (id, from) in gone_links {
        if !new_links.iter().any(|(other, _)| other == id) {
            into.push(Change {
                side,
                paths: vec![from.clone()],
                status: Delta::Deleted,
                guessed: false,
            });
        }
    }
    for (id, to) in new_links {
        let sources: Vec<&Vec<u8>> =
            gone_links.iter().filter(|(other, _)| other == id).map(|(_, from)| from).collect();
        if sources.is_empty() {
            into.push(Change {
                side,
                paths: vec![to.clone()],
                status: Delta::Added,
                guessed: false,
            });
        }
        let guessed =
            sources.len() > 1 || new_links.iter().filter(|(other, _)| other == id).count() > 1;
        for from in sources {
            into.push(Change {
                side,
                paths: vec![from.clone(), to.clone()],
                status: Delta::Renamed,
                guessed,
            });
        }
    }
}

/// Union-find over change indices.
struct Groups(Vec<usize>);

impl Groups {
    fn find(&mut self, mut at: usize) -> usize {
        while self.0[at] != at {
            self.0[at] = self.0[self.0[at]];
            at = self.0[at];
        }
        at
    }

    fn join(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.0[rb] = ra;
        }
    }
}

/// The trees of one merge.
pub(crate) struct MergeTrees<'a, 'r> {
    pub base: &'a Tree<'r>,
    pub onto: &'a Tree<'r>,
    pub head: &'a Tree<'r>,
}

impl<'a, 'r> MergeTrees<'a, 'r> {
    /// The tree of one side: main's tip, or the task's head.
    fn of(&self, side: Side) -> &'a Tree<'r> {
        match side {
            Side::Main => self.onto,
            Side::Task => self.head,
        }
    }
}

/// What the check found wrong with a merge.
#[derive(Debug, Default)]
pub(crate) struct Unsound {
    /// Every path in conflict, with the paths colliding with it.
    pub paths: BTreeSet<Vec<u8>>,
    /// Files or links one side wrote where the other side wrote inside a folder of that
    /// name, with the side that wrote the file.
    pub files_in_the_way: Vec<(Vec<u8>, Side)>,
    /// Files whose executable bit libgit2 merged wrong, with the right one (the three-way
    /// merge of the bits, as git has it): not a conflict, but the merged tree must be
    /// corrected ([`set_exec_bits`]) before it is used.
    pub exec_bits: Vec<(Vec<u8>, bool)>,
}

impl Unsound {
    /// Whether the merge is sound (once its executable bits are set).
    pub(crate) fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// The paths for messages, sorted.
    pub(crate) fn path_strings(&self) -> Vec<String> {
        self.paths.iter().map(|p| path_string(p)).collect()
    }
}

/// The check of one merge's sides: what each side changed (rename-aware diffs, made once),
/// against which merged trees are judged ([`MergeCheck::judge`]) — the first one libgit2
/// wrote, and the same with its executable bits set right.
pub(crate) struct MergeCheck<'a, 'r> {
    trees: &'a MergeTrees<'a, 'r>,
    repo: &'r Repository,
    look: Lookup<'r>,
    changes: Vec<Change>,
}

impl<'a, 'r> MergeCheck<'a, 'r> {
    /// Diffs both sides of `trees` against their base.
    pub(crate) fn new(
        repo: &'r Repository,
        trees: &'a MergeTrees<'a, 'r>,
    ) -> Result<MergeCheck<'a, 'r>, GitError> {
        let look = Lookup::new(repo);
        let mut changes = Vec::new();
        let in_base = |path: &[u8]| Ok(look.slot(trees.base, path)?.is_some());
        changes_of(
            &renamed_diff(repo, trees.base, trees.onto)?,
            Side::Main,
            &in_base,
            &mut changes,
        )?;
        changes_of(
            &renamed_diff(repo, trees.base, trees.head)?,
            Side::Task,
            &in_base,
            &mut changes,
        )?;
        Ok(MergeCheck { trees, repo, look, changes })
    }

    /// What is wrong with libgit2's merge by the rules above. `merged` is its merged tree
    /// when it reported no conflict; without it (libgit2 reported conflicts, which the
    /// caller handles) only the rules that need no merged tree run: files in the way of
    /// folders, and paths created in a folder the other side moved away.
    pub(crate) fn judge(&self, merged: Option<&Tree<'_>>) -> Result<Unsound, GitError> {
        let (repo, look, trees, changes) = (self.repo, &self.look, self.trees, &self.changes);
        let mut unsound: BTreeSet<Vec<u8>> = BTreeSet::new();
        let mut exec_bits = Vec::new();
        if let Some(merged) = merged {
            unsound.extend(misplaced_entries(repo, look, trees, merged, changes)?);
            for (path, bit) in wrong_exec_bits(look, trees, merged, changes)? {
                match bit {
                    Some(bit) => exec_bits.push((path, bit)),
                    None => {
                        unsound.insert(path);
                    }
                }
            }
        }
        let files_in_the_way = file_folder_collisions(changes);
        for (file, _, inside) in &files_in_the_way {
            unsound.insert(file.clone());
            unsound.extend(inside.iter().cloned());
        }
        unsound.extend(moved_folder_collisions(look, trees, changes)?);

        if unsound.is_empty() {
            return Ok(Unsound { exec_bits, ..Unsound::default() });
        }
        // Name what collides with each unsound path: a path either side wrote under it or
        // above it.
        let mut paths = unsound.clone();
        for path in changes.iter().filter_map(Change::written) {
            if unsound.iter().any(|u| nested(u, path) || nested(path, u)) {
                paths.insert(path.to_vec());
            }
        }
        Ok(Unsound {
            paths,
            files_in_the_way: files_in_the_way
                .into_iter()
                .map(|(file, side, _)| (file, side))
                .collect(),
            exec_bits,
        })
    }
}

/// Sets the executable bits the check found merged wrong ([`Unsound::exec_bits`]) in the
/// merge's index.
pub(crate) fn set_exec_bits(index: &mut Index, bits: &[(Vec<u8>, bool)]) -> Result<(), GitError> {
    for (path, executable) in bits {
        // The check read the file from the tree written from this index: it is there.
        if let Some(mut entry) = index.get_path(bytes_path(path), 0) {
            entry.mode = if *executable { 0o100755 } else { 0o100644 };
            index
                .add(&entry)
                .ctx(|| format!("could not set the executable bit of `{}`", path_string(path)))?;
        }
    }
    Ok(())
}

/// The paths where `merged` does not hold what each side's groups of changes require, and
/// the paths neither side touched that differ from the base.
fn misplaced_entries(
    repo: &Repository,
    look: &Lookup<'_>,
    trees: &MergeTrees<'_, '_>,
    merged: &Tree<'_>,
    changes: &[Change],
) -> Result<BTreeSet<Vec<u8>>, GitError> {
    let mut groups = Groups((0..changes.len()).collect());
    let mut first_with: HashMap<&[u8], usize> = HashMap::new();
    for (i, change) in changes.iter().enumerate() {
        for path in &change.paths {
            match first_with.get(path.as_slice()) {
                Some(&j) => groups.join(i, j),
                None => {
                    first_with.insert(path, i);
                }
            }
        }
    }
    // Per group: whether main and the task are in it, and whether git may see it otherwise
    // than libgit2: a path one side changed the kind of (git takes a file that became a
    // link for a deletion and an addition) is one the other side touched too, or a link's
    // move is a guess.
    let mut touched: [HashSet<&[u8]>; 2] = [HashSet::new(), HashSet::new()];
    for change in changes {
        touched[change.side as usize].extend(change.paths.iter().map(Vec::as_slice));
    }
    let mut sides: HashMap<usize, (bool, bool, bool)> = HashMap::new();
    for (i, change) in changes.iter().enumerate() {
        let mut doubtful = change.guessed;
        for path in &change.paths {
            doubtful |= touched[change.side.other() as usize].contains(path.as_slice())
                && kind_changed(
                    look.slot(trees.base, path)?,
                    look.slot(trees.of(change.side), path)?,
                );
        }
        let group = sides.entry(groups.find(i)).or_default();
        match change.side {
            Side::Main => group.0 = true,
            Side::Task => group.1 = true,
        }
        group.2 |= doubtful;
    }

    let mut unsound = BTreeSet::new();
    for (i, change) in changes.iter().enumerate() {
        let (main, task, doubtful) = sides[&groups.find(i)];
        let own = trees.of(change.side);
        for path in &change.paths {
            let sound = if main && task {
                // Both sides changed it: the content merge decides, unless git may see a
                // conflict libgit2 does not (a change of kind, a guessed link move) and the
                // sides left it differently.
                !doubtful || look.slot(trees.onto, path)? == look.slot(trees.head, path)?
            } else {
                look.slot(merged, path)? == look.slot(own, path)?
            };
            if !sound {
                unsound.insert(path.clone());
            }
        }
    }

    // Nothing else may differ from the base.
    for RepoPath(path) in tree_diff_paths(repo, trees.base, merged)? {
        if !first_with.contains_key(path.as_slice()) {
            unsound.insert(path);
        }
    }
    Ok(unsound)
}

/// The executable bit of a file: `Some(true)` for 755, `Some(false)` for 644, `None` for
/// anything else (nothing, a link, a submodule).
fn exec_bit(slot: Slot) -> Option<bool> {
    match slot {
        Some((0o100755, _)) => Some(true),
        Some((0o100644, _)) => Some(false),
        _ => None,
    }
}

/// The three-way merge of executable bits; `None` when both sides changed it differently
/// (or added the file with different bits).
fn merged_bit(base: Option<bool>, main: bool, task: bool) -> Option<bool> {
    match () {
        _ if main == task => Some(main),
        _ if base == Some(main) => Some(task),
        _ if base == Some(task) => Some(main),
        _ => None,
    }
}

/// A file whose merged executable bit is wrong, with the right one (`None`: a conflict).
type ExecBit = (Vec<u8>, Option<bool>);

/// Files whose merged executable bit is not the three-way merge of the base's and the
/// sides', with that merge (`None`: both sides set it differently, a conflict): moved
/// files ([`lost_modes`]) and files both sides wrote in place ([`mixed_modes`]).
fn wrong_exec_bits(
    look: &Lookup<'_>,
    trees: &MergeTrees<'_, '_>,
    merged: &Tree<'_>,
    changes: &[Change],
) -> Result<Vec<ExecBit>, GitError> {
    let mut found = lost_modes(look, trees, merged, changes)?;
    found.extend(mixed_modes(look, trees, merged, changes)?);
    Ok(found)
}

/// Files both sides wrote in place (added or changed at the same path, not moved there)
/// whose merged executable bit is not the three-way merge of the base's and the sides'.
/// libgit2 merges the same content added on both sides with different bits cleanly, to
/// main's; git calls it an add/add conflict.
fn mixed_modes(
    look: &Lookup<'_>,
    trees: &MergeTrees<'_, '_>,
    merged: &Tree<'_>,
    changes: &[Change],
) -> Result<Vec<ExecBit>, GitError> {
    let in_place = |side: Side| -> HashSet<&[u8]> {
        changes
            .iter()
            .filter(|c| c.side == side && matches!(c.status, Delta::Added | Delta::Modified))
            .filter_map(Change::written)
            .collect()
    };
    let (main, task) = (in_place(Side::Main), in_place(Side::Task));
    let mut found = Vec::new();
    for &path in main.intersection(&task) {
        let (Some(on_main), Some(on_task)) =
            (exec_bit(look.slot(trees.onto, path)?), exec_bit(look.slot(trees.head, path)?))
        else {
            continue;
        };
        let expected = merged_bit(exec_bit(look.slot(trees.base, path)?), on_main, on_task);
        let result = exec_bit(look.slot(merged, path)?);
        if result.is_some() && result != expected {
            found.push((path.to_vec(), expected));
        }
    }
    Ok(found)
}

/// Moved files whose merged executable bit is not the three-way merge of the base's and the
/// two sides' (libgit2 can drop one side's mode change when the file moved on the other,
/// e.g. when both sides made the same edit).
fn lost_modes(
    look: &Lookup<'_>,
    trees: &MergeTrees<'_, '_>,
    merged: &Tree<'_>,
    changes: &[Change],
) -> Result<Vec<ExecBit>, GitError> {
    let mut moved_to: HashMap<(Side, &[u8]), &[u8]> = HashMap::new();
    for change in changes {
        if let Some((from, to)) = change.renamed() {
            moved_to.insert((change.side, from), to);
        }
    }
    let mut found = Vec::new();
    for change in changes {
        let Some((from, to)) = change.renamed() else { continue };
        let other = change.side.other();
        let other_at = moved_to.get(&(other, from)).copied().unwrap_or(from);
        let (Some(base), Some(mine), Some(theirs), Some(result)) = (
            exec_bit(look.slot(trees.base, from)?),
            exec_bit(look.slot(trees.of(change.side), to)?),
            exec_bit(look.slot(trees.of(other), other_at)?),
            exec_bit(look.slot(merged, to)?),
        ) else {
            continue;
        };
        let expected = merged_bit(Some(base), mine, theirs);
        if expected != Some(result) {
            found.push((to.to_vec(), expected));
        }
    }
    Ok(found)
}

/// A file or link one side wrote (added, changed or moved there) at a path under which the
/// other side wrote something: a file and a folder cannot share a name, so git calls it a
/// conflict; libgit2 keeps one of them. Both the file and the paths under it are named.
///
/// A change to a file the other side moved away follows the move (`d/f` edited on one
/// side and moved to `d` on the other merges into `d`), so it does not count.
fn file_folder_collisions(changes: &[Change]) -> Vec<(Vec<u8>, Side, Vec<Vec<u8>>)> {
    let mut written: [BTreeSet<&[u8]>; 2] = [BTreeSet::new(), BTreeSet::new()];
    let mut moved_from: [BTreeSet<&[u8]>; 2] = [BTreeSet::new(), BTreeSet::new()];
    for change in changes {
        if let Some(path) = change.written() {
            written[change.side as usize].insert(path);
        }
        if let Some((from, _)) = change.renamed() {
            moved_from[change.side as usize].insert(from);
        }
    }
    let mut found = Vec::new();
    for (side, me, them) in [(Side::Main, 0, 1), (Side::Task, 1, 0)] {
        for &file in written[me].iter().filter(|p| !moved_from[them].contains(*p)) {
            let mut inside = file.to_vec();
            inside.push(b'/');
            let under: Vec<Vec<u8>> = written[them]
                .range(inside.as_slice()..)
                .take_while(|p| p.starts_with(&inside))
                .filter(|p| !moved_from[me].contains(*p))
                .map(|p| p.to_vec())
                .collect();
            if !under.is_empty() {
                found.push((file.to_vec(), side, under));
            }
        }
    }
    found
}

/// A move that took a folder away, with the folder it took it to.
type FolderMove<'c> = (&'c Change, &'c [u8]);

/// Paths one side created directly inside a folder the other side moved away (git's
/// directory rename detection, on by default as `merge.directoryRenames=conflict`, calls
/// such a path a conflict and suggests moving it along; libgit2 leaves it behind), with the
/// moves that emptied the folder.
///
/// As git (`diffcore-rename.c`, `merge-ort.c`): the created path's folder existed in the
/// base and is gone on the moving side, and it or a folder above it, gone too, is where one
/// of that side's moves came from: the move's source folder, and the folders above it as
/// long as the source's and destination's folders end alike (`d/b/f` → `x/b/f` moves `d/b`
/// and, when the other side created something directly in `d`, `d`). The folder's
/// destination is where most of its moves went (git's choice; a tie is git's "directory
/// rename split", a conflict too). As git (`check_for_directory_rename`), a move is not
/// applied to a path of a side that itself moved the destination folder away, when git
/// weighs that move (the other side created something directly in the folder): two sides
/// moving files crosswise between two folders (`d/a/x` → `d/d/y` on one, `d/d/z` → `d/a/w`
/// on the other) merge; nor to a path one of its own side's folder moves takes a path of
/// the moving side onto (git's "dual rename" rule).
fn moved_folder_collisions(
    look: &Lookup<'_>,
    trees: &MergeTrees<'_, '_>,
    changes: &[Change],
) -> Result<Vec<Vec<u8>>, GitError> {
    if !changes.iter().any(|c| c.renamed().is_some()) {
        return Ok(Vec::new());
    }
    let folders = FolderMoves::of(look, trees, changes)?;
    let mut found = Vec::new();
    for change in changes {
        let Some(created) = change.created() else { continue };
        let (creator, mover) = (change.side, change.side.other());
        let Some((_, moves)) = folders.nearest_move(mover, creator, created)? else { continue };
        if folders.left_in_place(changes, creator, created, moves)? {
            continue;
        }
        found.push(created.to_vec());
        for (rename, _) in moves {
            found.extend(rename.paths.iter().cloned());
        }
    }
    Ok(found)
}

/// A folder a side moved away, with its moves ([`FolderMoves::nearest_move`]).
type NearestMove<'m, 'c> = Option<(&'c [u8], &'m [FolderMove<'c>])>;

/// What git's folder-move rules look up ([`moved_folder_collisions`]): the folders each
/// side moved away, with the moves and where each took the folder, and the folders each
/// side created something directly in.
struct FolderMoves<'a, 'r, 'c> {
    look: &'a Lookup<'r>,
    trees: &'a MergeTrees<'a, 'r>,
    created_dirs: HashSet<(Side, &'c [u8])>,
    moved: HashMap<(Side, &'c [u8]), Vec<FolderMove<'c>>>,
}

impl<'a, 'r, 'c> FolderMoves<'a, 'r, 'c> {
    /// The folder moves of `changes` (both sides'), in the trees `trees`.
    fn of(
        look: &'a Lookup<'r>,
        trees: &'a MergeTrees<'a, 'r>,
        changes: &'c [Change],
    ) -> Result<FolderMoves<'a, 'r, 'c>, GitError> {
        let created_dirs =
            changes.iter().filter_map(|c| Some((c.side, c.created().and_then(parent)?))).collect();
        let mut folders = FolderMoves { look, trees, created_dirs, moved: HashMap::new() };
        for change in changes {
            if let Some((from, to)) = change.renamed() {
                folders.record(change, from, to)?;
            }
        }
        Ok(folders)
    }

    /// Records the folders that `change`, a move of `from` to `to`, moved away: its source
    /// folder, and the folders above it as long as the source's and destination's folders
    /// end alike and the other side created something directly in them.
    fn record(&mut self, change: &'c Change, from: &'c [u8], to: &'c [u8]) -> Result<(), GitError> {
        let other = change.side.other();
        let (mut old, mut new) = (from, to);
        let mut first = true;
        loop {
            let (old_dir, old_name) = split_last(old);
            if !self.removed(change.side, old_dir)? {
                break;
            }
            let (new_dir, new_name) = split_last(new);
            if !first && old_name != new_name {
                break;
            }
            if first || self.created_in(other, old_dir) {
                self.moved.entry((change.side, old_dir)).or_default().push((change, new_dir));
            }
            first = false;
            if new_dir.is_empty() {
                break;
            }
            (old, new) = (old_dir, new_dir);
        }
        Ok(())
    }

    /// Whether `folder` was a folder in the base and is none on `side`.
    fn removed(&self, side: Side, folder: &[u8]) -> Result<bool, GitError> {
        Ok(!folder.is_empty()
            && self.look.is_folder(self.trees.base, folder)?
            && !self.look.is_folder(self.trees.of(side), folder)?)
    }

    /// Whether `side` created something directly in `folder`.
    fn created_in(&self, side: Side, folder: &[u8]) -> bool {
        self.created_dirs.contains(&(side, folder))
    }

    /// The nearest folder at or above `path` (created by `creator`) that `mover` moved
    /// away, as git looks it up, with its moves; a folder above counts only when `creator`
    /// created something directly in it too (git weighs the moves of a folder only then).
    fn nearest_move(
        &self,
        mover: Side,
        creator: Side,
        path: &'c [u8],
    ) -> Result<NearestMove<'_, 'c>, GitError> {
        let folder = parent(path).unwrap_or(b"");
        if !self.removed(mover, folder)? {
            return Ok(None);
        }
        let mut at = folder;
        loop {
            if let Some(moves) = self.moved.get(&(mover, at))
                && (at == folder || self.created_in(creator, at))
            {
                return Ok(Some((at, moves.as_slice())));
            }
            match parent(at) {
                Some(up) => at = up,
                None => return Ok(None),
            }
        }
    }

    /// Whether git leaves `created` (a path `creator` created in a folder the other side
    /// moved away with `moves`) where it is, rather than moving it along.
    fn left_in_place(
        &self,
        changes: &'c [Change],
        creator: Side,
        created: &[u8],
        moves: &[FolderMove<'c>],
    ) -> Result<bool, GitError> {
        let mover = creator.other();
        // git leaves the path where it is when the folder went where this side moved a
        // folder away from, a move git weighs: the moving side created something directly
        // in that folder (else git does not look for its move).
        if destination(moves)
            .is_some_and(|to| self.moved.contains_key(&(creator, to)) && self.created_in(mover, to))
        {
            return Ok(true);
        }
        // It also leaves it where one of this side's folder moves takes a path the moving
        // side created (git turns off a folder move whose result is the other's target).
        let mut taken = false;
        for other in changes.iter().filter(|c| c.side == mover) {
            let Some(theirs) = other.created() else { continue };
            if let Some((at, moves)) = self.nearest_move(creator, mover, theirs)?
                && let Some(to) = destination(moves)
            {
                taken |= moved_along(theirs, at, to) == created;
            }
        }
        Ok(taken)
    }
}

/// `path` (under the folder `from`) as the move of `from` to `to` takes it (`to` empty: the
/// top of the tree).
fn moved_along(path: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let rest = &path[from.len() + 1..];
    let mut out = to.to_vec();
    if !out.is_empty() {
        out.push(b'/');
    }
    out.extend_from_slice(rest);
    out
}

/// Where a folder moved: the destination most of its moves went to; `None` on a tie.
fn destination<'c>(moves: &[FolderMove<'c>]) -> Option<&'c [u8]> {
    let mut counts: HashMap<&[u8], usize> = HashMap::new();
    for (_, to) in moves {
        *counts.entry(to).or_default() += 1;
    }
    let most = counts.values().copied().max()?;
    let mut best = counts.into_iter().filter(|(_, n)| *n == most);
    match (best.next(), best.next()) {
        (Some((to, _)), None) => Some(to),
        _ => None,
    }
}

/// Whether an entry changed kind (a file became a link or a submodule, or the reverse); an
/// executable bit is no change of kind.
fn kind_changed(before: Slot, after: Slot) -> bool {
    let kind = |mode: i32| match mode {
        0o120000 => 1,
        0o160000 => 2,
        _ => 0,
    };
    matches!((before, after), (Some((a, _)), Some((b, _))) if kind(a) != kind(b))
}

/// Mode of a folder in a tree.
const FOLDER_MODE: i32 = 0o040000;

/// The folder of `path`; `None` at the top.
fn parent(path: &[u8]) -> Option<&[u8]> {
    path.iter().rposition(|&b| b == b'/').map(|end| &path[..end])
}

/// `path` as its folder (empty at the top) and its last component.
fn split_last(path: &[u8]) -> (&[u8], &[u8]) {
    match path.iter().rposition(|&b| b == b'/') {
        Some(end) => (&path[..end], &path[end + 1..]),
        None => (b"", path),
    }
}

/// Whether `inner` lies under the folder `outer`.
fn nested(outer: &[u8], inner: &[u8]) -> bool {
    inner.len() > outer.len() && inner.starts_with(outer) && inner[outer.len()] == b'/'
}
