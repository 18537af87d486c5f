//! A small model of repository trees and of the changes tasks make to them, written to
//! real commits with git2: the ground the merge property test and its named regression
//! cases stand on.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use breeze_git::Oid;
use git2::{FileMode, Repository, Signature, build::TreeUpdateBuilder};

/// What sits at one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A regular file, possibly executable.
    File { text: String, exec: bool },
    /// A symbolic link with this target.
    Link(String),
}

impl Entry {
    pub fn file(text: &str) -> Entry {
        Entry::File { text: text.to_string(), exec: false }
    }
}

/// A tree: path → entry, never a path under another path that holds an entry.
pub type Tree = BTreeMap<String, Entry>;

/// Eight lines that are recognisably `seed`'s and share nothing with another seed's: a
/// one-line edit keeps a file far above the rename-similarity threshold of git and libgit2
/// (50%), a file of another seed is far below it. (Near the threshold the two measure
/// similarity differently and may pair renames differently; see the crate README.)
pub fn text(seed: &str) -> String {
    use std::hash::{Hash, Hasher};
    (1..=8)
        .map(|k| {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            (seed, k).hash(&mut hasher);
            let h = hasher.finish();
            format!(
                "{seed}: line {k} {h:016x} {:016x}\n",
                h.rotate_left(17) ^ 0x9e37_79b9_7f4a_7c15
            )
        })
        .collect()
}

/// `text` with line `line` (0-based, modulo 8) replaced.
pub fn edited(text: &str, line: usize, with: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        return format!("{with}\n");
    }
    let at = line % lines.len();
    lines[at] = with.to_string();
    lines.into_iter().map(|l| l + "\n").collect()
}

/// Paths in `tree` at or under `path` (as a folder).
pub fn under<'t>(tree: &'t Tree, path: &str) -> Vec<&'t String> {
    let prefix = format!("{path}/");
    tree.keys().filter(|p| *p == path || p.starts_with(&prefix)).collect()
}

/// Folders of `tree` (every proper ancestor of an entry), sorted.
pub fn folders(tree: &Tree) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for path in tree.keys() {
        let mut at = path.as_str();
        while let Some((parent, _)) = at.rsplit_once('/') {
            out.push(parent.to_string());
            at = parent;
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Puts `entry` at `path`, first removing whatever stands in the way: a file or link at
/// an ancestor of `path` (a file turns into a folder) and everything under `path` (a
/// folder turns into a file).
pub fn put(tree: &mut Tree, path: &str, entry: Entry) {
    let mut at = path;
    while let Some((parent, _)) = at.rsplit_once('/') {
        tree.remove(parent);
        at = parent;
    }
    let inside = format!("{path}/");
    tree.retain(|p, _| !p.starts_with(&inside));
    tree.insert(path.to_string(), entry);
}

/// One line per entry: `path  file|exec|link  what`, where `what` names the text's seed
/// and its edited lines (or the link's target).
pub fn show(tree: &Tree) -> String {
    let mut out = String::new();
    for (path, entry) in tree {
        let (kind, what) = match entry {
            Entry::File { text, exec } => {
                let seed = text.lines().next().and_then(|l| l.split(": line").next()).unwrap_or("");
                let edits: Vec<&str> = text.lines().filter(|l| !l.contains(": line ")).collect();
                let what = if edits.is_empty() {
                    format!("{seed:?}")
                } else {
                    format!("{seed:?} + {edits:?}")
                };
                (if *exec { "exec" } else { "file" }, what)
            }
            Entry::Link(target) => ("link", format!("-> {target}")),
        };
        out.push_str(&format!("  {path:<8} {kind} {what}\n"));
    }
    out
}

/// A repository for model trees: an empty git repository (main has one commit) that
/// commits trees without touching any ref.
pub struct ModelRepo {
    pub dir: tempfile::TempDir,
}

impl ModelRepo {
    pub fn new() -> ModelRepo {
        let dir = tempfile::tempdir().unwrap();
        breeze_test_support::git(dir.path(), &["init", "-q", "-b", "main"]);
        breeze_test_support::git(dir.path(), &["commit", "-q", "--allow-empty", "-m", "root"]);
        ModelRepo { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn git2(&self) -> Repository {
        Repository::open(self.path()).unwrap()
    }

    /// The tree object of `tree`.
    pub fn write_tree(&self, tree: &Tree) -> Oid {
        let repo = self.git2();
        let empty = repo.find_tree(repo.treebuilder(None).unwrap().write().unwrap()).unwrap();
        let mut update = TreeUpdateBuilder::new();
        for (path, entry) in tree {
            let (bytes, mode) = match entry {
                Entry::File { text, exec } => {
                    (text.as_bytes(), if *exec { FileMode::BlobExecutable } else { FileMode::Blob })
                }
                Entry::Link(target) => (target.as_bytes(), FileMode::Link),
            };
            let blob = repo.blob(bytes).unwrap();
            update.upsert(path, blob, mode);
        }
        update.create_updated(&repo, &empty).unwrap()
    }

    /// A commit of tree object `tree` with `parents`.
    pub fn commit_tree(&self, tree: Oid, parents: &[Oid], message: &str) -> Oid {
        let repo = self.git2();
        let tree = repo.find_tree(tree).unwrap();
        let parents: Vec<git2::Commit<'_>> =
            parents.iter().map(|p| repo.find_commit(*p).unwrap()).collect();
        let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
        let who = Signature::new("Model", "model@example.com", &git2::Time::new(1_700_000_000, 0))
            .unwrap();
        repo.commit(None, &who, &who, message, &tree, &parents).unwrap()
    }

    /// A commit of `tree` with `parents`.
    pub fn commit(&self, tree: &Tree, parents: &[Oid], message: &str) -> Oid {
        let oid = self.write_tree(tree);
        self.commit_tree(oid, parents, message)
    }

    /// The model of the tree of commit `oid`.
    pub fn read_commit_tree(&self, oid: Oid) -> Tree {
        let tree = self.git2().find_commit(oid).unwrap().tree_id();
        self.read_tree(tree)
    }

    /// The model of tree object `oid`.
    pub fn read_tree(&self, oid: Oid) -> Tree {
        let repo = self.git2();
        let tree = repo.find_tree(oid).unwrap();
        let mut out = Tree::new();
        tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(git2::ObjectType::Blob) {
                let blob = repo.find_blob(entry.id()).unwrap();
                let content = String::from_utf8_lossy(blob.content()).into_owned();
                let path = format!("{dir}{}", entry.name().unwrap());
                let value = match entry.filemode() {
                    0o120000 => Entry::Link(content),
                    mode => Entry::File { text: content, exec: mode == 0o100755 },
                };
                out.insert(path, value);
            }
            git2::TreeWalkResult::Ok
        })
        .unwrap();
        out
    }
}

/// What `git merge-tree --write-tree` said about one merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitMerge {
    /// Merged cleanly into this tree.
    Clean(Oid),
    /// Conflicts; git's messages.
    Conflicts(String),
    /// git failed (neither clean nor conflicts): its status and stderr.
    Failed(String),
}

/// `git merge-tree --write-tree --merge-base=<base> <onto> <head>` in `repo`: main's side
/// is "ours", the task's "theirs", as in breeze's merge. `None` when this git cannot do it
/// (older than 2.40: it prints its usage).
pub fn git_merge_tree(repo: &Path, base: Oid, onto: Oid, head: Oid) -> Option<GitMerge> {
    let out = breeze_test_support::git_output(
        repo,
        &[
            "merge-tree",
            "--write-tree",
            &format!("--merge-base={base}"),
            &onto.to_string(),
            &head.to_string(),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    match out.status.code() {
        Some(0) => Some(GitMerge::Clean(Oid::from_str(stdout.lines().next()?.trim()).ok()?)),
        Some(1) => Some(GitMerge::Conflicts(stdout)),
        _ if stdout.is_empty() && out.stderr.starts_with(b"usage:") => None,
        _ => Some(GitMerge::Failed(format!(
            "{}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
    }
}

/// The `CONFLICT` lines git prints for a merge it nevertheless calls clean (exit 0): git
/// 2.47 can say "CONFLICT (file location)" for a path it moved along a folder's move and
/// still exit 0 (`git_prints_a_conflict_yet_merges_a_path_moved_along_two_folders`).
/// Empty when it prints none or does not merge cleanly.
pub fn git_conflict_lines_of_a_clean_merge(
    repo: &Path,
    base: Oid,
    onto: Oid,
    head: Oid,
) -> Vec<String> {
    let out = breeze_test_support::git_output(
        repo,
        &[
            "merge-tree",
            "--write-tree",
            "--messages",
            &format!("--merge-base={base}"),
            &onto.to_string(),
            &head.to_string(),
        ],
    );
    if out.status.code() != Some(0) {
        return Vec::new();
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|line| line.starts_with("CONFLICT ("))
        .map(str::to_string)
        .collect()
}

/// Whether the machine's git has `git merge-tree --write-tree --merge-base`; prints why
/// not when it does not.
pub fn git_can_merge_tree() -> bool {
    let repo = ModelRepo::new();
    let root = breeze_test_support::git_line(repo.path(), &["rev-parse", "HEAD"]);
    let root = Oid::from_str(&root).unwrap();
    let ok = matches!(git_merge_tree(repo.path(), root, root, root), Some(GitMerge::Clean(_)));
    if !ok {
        eprintln!(
            "skipped: this git has no `git merge-tree --write-tree --merge-base` (git 2.40 or newer has it)"
        );
    }
    ok
}
