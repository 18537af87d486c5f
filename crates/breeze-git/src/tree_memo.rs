//! The trees of main as index files need them, folder by folder, by tree id: the
//! cache-tree extension (`TREE`) of every index file breeze writes (`index_file.rs`), and
//! the `.gitattributes` files whose filters decide who checks out (`checkout_tool.rs`).
//! A folder's part depends only on its tree, so a task's new root reads only the folders
//! it changed, and one walk of main's trees serves both: when the repository is opened
//! where a filter command is configured (the `.gitattributes` are looked for then), else
//! ahead of a run's first index file (`preload.rs`).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use git2::{ObjectType, Odb, Oid, Repository};

use crate::error::{Context as _, GitError};

/// Walks the trees of `commit` into the memo ([`TREES`]), ahead of the first index file
/// written at (or near) that tree.
pub(crate) fn warm(repo: &Repository, commit: Oid) -> Result<(), GitError> {
    let context = || format!("could not read the trees of {commit}");
    let tree = repo.find_commit(commit).and_then(|commit| commit.tree()).ctx(context)?;
    TREES.extension(repo, tree.id()).map(drop).ctx(context)
}

/// The `.gitattributes` blobs of the tree `root`, in the order of a walk of it: one walk
/// of every folder the first time (about 30 ms at 100,000 files), which the cache-trees of
/// the run's index files then take from the memo.
pub(crate) fn gitattributes(repo: &Repository, root: Oid) -> Result<Vec<Oid>, git2::Error> {
    TREES.attributes(repo, root)
}

/// The cache-tree extension of a tree, folder by folder, by tree id: a folder's part
/// depends only on its tree, so a task's new root reads only the folders it changed.
pub(crate) struct TreeMemo {
    nodes: Mutex<MemoNodes>,
}

#[derive(Default)]
struct MemoNodes {
    by_tree: HashMap<Oid, (Arc<Node>, u64)>,
    generation: u64,
}

/// One folder of the extension: how many index entries are below it, how many folders
/// directly in it, and its folders' records (name, counts, id, and theirs in turn); and
/// the `.gitattributes` blobs in it and below it, in the order of a walk of the tree.
struct Node {
    entries: usize,
    subtrees: usize,
    body: Vec<u8>,
    attributes: Vec<Oid>,
}

/// Folders kept when the memo is pruned: those used by the last few extensions.
const MEMO_KEEP_GENERATIONS: u64 = 16;
/// The memo is pruned once it holds this many folders.
const MEMO_MAX_NODES: usize = 200_000;

pub(crate) static TREES: LazyLock<TreeMemo> =
    LazyLock::new(|| TreeMemo { nodes: Mutex::new(MemoNodes::default()) });

impl TreeMemo {
    /// The `TREE` extension's data for an index whose tree is `root`.
    pub(crate) fn extension(&self, repo: &Repository, root: Oid) -> Result<Vec<u8>, git2::Error> {
        let mut nodes = self.nodes.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        nodes.generation += 1;
        let node = nodes.node(repo, root)?;
        if nodes.by_tree.len() > MEMO_MAX_NODES {
            let oldest = nodes.generation.saturating_sub(MEMO_KEEP_GENERATIONS);
            nodes.by_tree.retain(|_, (_, used)| *used >= oldest);
        }
        let mut out = Vec::with_capacity(node.body.len() + 64);
        record(&mut out, b"", root, &node);
        Ok(out)
    }

    /// The `.gitattributes` blobs of the tree `root` (see [`gitattributes`]).
    fn attributes(&self, repo: &Repository, root: Oid) -> Result<Vec<Oid>, git2::Error> {
        let mut nodes = self.nodes.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        nodes.generation += 1;
        Ok(nodes.node(repo, root)?.attributes.clone())
    }

    /// Whether the folder of tree `root` was walked (and not pruned since).
    #[cfg(test)]
    pub(crate) fn holds(&self, root: Oid) -> bool {
        self.nodes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .by_tree
            .contains_key(&root)
    }

    /// The `TREE` extension's data for an index whose tree is `root`, made in `trees`:
    /// folders whose trees `known` lacks are invalid (`-1` entries, no id), their folders'
    /// records after them (every folder of a tree `known` has is in `known` too).
    pub(crate) fn extension_known(
        &self,
        trees: &Repository,
        known: &Odb<'_>,
        root: Oid,
    ) -> Result<Vec<u8>, git2::Error> {
        if known.exists(root) {
            return self.extension(trees, root);
        }
        let mut nodes = self.nodes.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        nodes.generation += 1;
        let mut out = Vec::new();
        nodes.unknown_record(&mut out, trees, known, b"", root)?;
        Ok(out)
    }
}

impl MemoNodes {
    /// The record of a folder whose tree `known` lacks (see [`TreeMemo::extension_known`]).
    fn unknown_record(
        &mut self,
        out: &mut Vec<u8>,
        trees: &Repository,
        known: &Odb<'_>,
        name: &[u8],
        id: Oid,
    ) -> Result<(), git2::Error> {
        let tree = trees.find_tree(id)?;
        let mut body = Vec::new();
        let mut subtrees = 0;
        for entry in tree.iter() {
            if entry.kind() != Some(ObjectType::Tree) {
                continue;
            }
            subtrees += 1;
            if known.exists(entry.id()) {
                let child = self.node(trees, entry.id())?;
                record(&mut body, entry.name_bytes(), entry.id(), &child);
            } else {
                self.unknown_record(&mut body, trees, known, entry.name_bytes(), entry.id())?;
            }
        }
        out.extend_from_slice(name);
        out.push(0);
        out.extend_from_slice(format!("-1 {subtrees}\n").as_bytes());
        out.extend_from_slice(&body);
        Ok(())
    }

    fn node(&mut self, repo: &Repository, id: Oid) -> Result<Arc<Node>, git2::Error> {
        let generation = self.generation;
        if let Some((node, used)) = self.by_tree.get_mut(&id) {
            *used = generation;
            return Ok(Arc::clone(node));
        }
        let tree = repo.find_tree(id)?;
        let mut node = Node { entries: 0, subtrees: 0, body: Vec::new(), attributes: Vec::new() };
        for entry in tree.iter() {
            if entry.kind() == Some(ObjectType::Tree) {
                let child = self.node(repo, entry.id())?;
                record(&mut node.body, entry.name_bytes(), entry.id(), &child);
                node.attributes.extend_from_slice(&child.attributes);
                node.entries += child.entries;
                node.subtrees += 1;
            } else {
                if entry.name_bytes() == b".gitattributes" && entry.kind() == Some(ObjectType::Blob)
                {
                    node.attributes.push(entry.id());
                }
                node.entries += 1;
            }
        }
        let node = Arc::new(node);
        self.by_tree.insert(id, (Arc::clone(&node), generation));
        Ok(node)
    }
}

/// One folder's record in git's format: name, NUL, entry count, space, folder count,
/// newline, tree id; then its folders' records.
fn record(out: &mut Vec<u8>, name: &[u8], id: Oid, node: &Node) {
    out.extend_from_slice(name);
    out.push(0);
    out.extend_from_slice(format!("{} {}\n", node.entries, node.subtrees).as_bytes());
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(&node.body);
}
