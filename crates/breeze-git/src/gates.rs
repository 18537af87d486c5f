//! Mechanical gates run on base..head before any reviewer sees the task. Five fail and
//! send the task back; two (`agent-config`, `opaque-content`) ask the reviewer to look
//! (`attention`) at what is easy to wave through: agent configuration, and content the
//! diff cannot show plainly.

use std::collections::{BTreeMap, BTreeSet};

use breeze_protocol::{GateResult, GateStatus};
use git2::{ObjectType, Oid, Repository, Tree};

use crate::agent_config::agent_config_place;
use crate::content::display_path;
use crate::diff::{
    ChangeKind, ChangeView, EntryMode, NewSides, PathChange, path_changes, render, task_diff,
};
use crate::error::{
    Context as _, GitError, SpecialNode, file_size_detail, list_paths, special_node_detail,
};
use crate::file_patch::Opaque;
use crate::objects::commit_tree;
use crate::repo::Repo;

/// Gate id: every changed path lies in the task's write set.
pub const GATE_WRITE_SET: &str = "write-set";
/// Gate id: no added or changed symlink points outside the repository.
pub const GATE_SYMLINK_ESCAPE: &str = "symlink-escape";
/// Gate id: no nested repository, gitlink or submodule configuration added.
pub const GATE_NESTED_REPO: &str = "nested-repo";
/// Gate id: the worker did not change Plans.md status markers.
pub const GATE_PLANS_MARKERS: &str = "plans-markers";
/// Gate id: no added or changed file above the size limit.
pub const GATE_FILE_SIZE: &str = "file-size";
/// Gate id: only files, symlinks and folders are committed (a FIFO, socket or device node
/// fails it before anything is staged).
pub const GATE_FILE_TYPE: &str = "file-type";

/// Gate id (`attention`): the change adds, edits, removes or renames agent configuration —
/// instructions, settings, hooks or tool servers an agent CLI loads
/// ([`crate::agent_config`]).
pub const GATE_AGENT_CONFIG: &str = "agent-config";
/// Gate id (`attention`): the change holds what the diff cannot show plainly — a changed
/// `.gitattributes`, text with NUL or other control bytes (shown escaped), binary content
/// (named by type and size).
pub const GATE_OPAQUE_CONTENT: &str = "opaque-content";

/// What the gates check against; the closures come from the planner.
pub struct GateConfig<'a> {
    /// Whether a repository-relative path lies in the task's write set
    /// (the planner's `WriteSet::matches`).
    pub in_write_set: &'a dyn Fn(&str) -> bool,
    /// Largest allowed file, in bytes ([`DEFAULT_MAX_FILE_BYTES`](crate::bounds::DEFAULT_MAX_FILE_BYTES) by default).
    pub max_file_bytes: u64,
    /// Repository-relative path of the tracked Plans.md, when the plan is one.
    pub plans_file: Option<&'a str>,
    /// Task id → status marker of a Plans.md text (the planner's `plans_md::status_markers`).
    pub status_markers: &'a dyn Fn(&str) -> BTreeMap<String, String>,
}

fn passed(id: &str, detail: String) -> GateResult {
    GateResult { id: id.to_string(), status: GateStatus::Passed, detail, paths: Vec::new() }
}

fn failed(id: &str, detail: String, paths: Vec<String>) -> GateResult {
    GateResult { id: id.to_string(), status: GateStatus::Failed, detail, paths }
}

fn attention(id: &str, detail: String, paths: Vec<String>) -> GateResult {
    GateResult { id: id.to_string(), status: GateStatus::Attention, detail, paths }
}

/// At most this many symlinks are followed while resolving one target (as Linux does).
const MAX_SYMLINK_HOPS: u32 = 40;

/// Why a symlink target leaves the repository.
enum Escape {
    Absolute,
    AboveRoot,
    IntoGitDir,
}

/// Where a symlink target ends up inside the tree.
enum Resolution {
    /// Inside the repository at these components.
    Inside(Vec<String>),
    /// Outside, and why.
    Escapes(Escape),
    /// Too many links (a loop): it resolves nowhere, so it cannot escape either.
    Loop,
}

/// Resolves `target` (relative to directory `dir`) inside `tree`, following symlinks found
/// in the tree itself, the way the kernel would once the tree is checked out.
fn resolve(
    repo: &Repository,
    tree: &Tree<'_>,
    dir: Vec<String>,
    target: &str,
    hops: &mut u32,
) -> Result<Resolution, GitError> {
    if target.starts_with('/') {
        return Ok(Resolution::Escapes(Escape::Absolute));
    }
    let mut current = dir;
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if current.pop().is_none() {
                    return Ok(Resolution::Escapes(Escape::AboveRoot));
                }
            }
            name => {
                current.push(name.to_string());
                if current.len() == 1 && current[0].eq_ignore_ascii_case(".git") {
                    return Ok(Resolution::Escapes(Escape::IntoGitDir));
                }
                let joined = current.join("/");
                let Ok(entry) = tree.get_path(std::path::Path::new(&joined)) else {
                    continue;
                };
                if entry.filemode() != i32::from(git2::FileMode::Link) {
                    continue;
                }
                if *hops == 0 {
                    return Ok(Resolution::Loop);
                }
                *hops -= 1;
                let blob = repo
                    .find_blob(entry.id())
                    .map_err(|_| GitError::MissingObject { what: "blob", oid: entry.id() })?;
                let next = String::from_utf8_lossy(blob.content()).into_owned();
                current.pop();
                match resolve(repo, tree, current, &next, hops)? {
                    Resolution::Inside(resolved) => current = resolved,
                    other => return Ok(other),
                }
            }
        }
    }
    Ok(Resolution::Inside(current))
}

fn blob_text(repo: &Repository, tree: &Tree<'_>, path: &str) -> Result<Option<String>, GitError> {
    match tree.get_path(std::path::Path::new(path)) {
        Ok(entry) if entry.kind() == Some(ObjectType::Blob) => {
            let blob = repo
                .find_blob(entry.id())
                .map_err(|_| GitError::MissingObject { what: "blob", oid: entry.id() })?;
            Ok(Some(String::from_utf8_lossy(blob.content()).into_owned()))
        }
        _ => Ok(None),
    }
}

/// What the reviewer of `base..head` is given, from one diff: the changed paths, the patch
/// ([`Repo::diff_patch`]) and the gates ([`Repo::run_gates`]).
#[derive(Debug, Clone)]
pub struct ChangeForReview {
    /// Every changed path, renames paired, sorted ([`Repo::changed_paths`]).
    pub changes: Vec<PathChange>,
    /// The unified diff.
    pub patch: String,
    /// One result per gate.
    pub gates: Vec<GateResult>,
}

impl Repo {
    /// Runs the gates on `base..head` and returns one result per gate, in the order
    /// `write-set`, `symlink-escape`, `nested-repo`, `plans-markers`, `file-size` (each
    /// `passed` or `failed`: a failed one lists the offending paths and says what to do),
    /// then `agent-config` and `opaque-content` (each `passed` or `attention`: what the
    /// reviewer must look at, with its paths).
    pub fn run_gates(
        &self,
        base: Oid,
        head: Oid,
        gates: &GateConfig<'_>,
    ) -> Result<Vec<GateResult>, GitError> {
        Ok(self.change_for_review(base, head, gates)?.gates)
    }

    /// The changed paths, the patch and the gates of `base..head` from one diff (what a
    /// review round needs; each alone diffs again).
    pub fn change_for_review(
        &self,
        base: Oid,
        head: Oid,
        gates: &GateConfig<'_>,
    ) -> Result<ChangeForReview, GitError> {
        let repo = self.objects()?;
        let diff = task_diff(&repo, base, head, self.bounds.max_file_bytes)?;
        let changes = path_changes(&diff);
        let doing = "write the diff for the reviewer";
        let rendered =
            render(&repo, &diff, ChangeView::Patch, NewSides::Objects, &self.bounds, doing)?;
        let mut results = gates_of(&repo, &changes, base, head, gates)?;
        results.push(agent_config_gate(&changes));
        results.push(opaque_gate(&changes, &rendered.opaque));
        Ok(ChangeForReview { changes, patch: rendered.text, gates: results })
    }
}

/// The five gates that fail of `base..head`, whose changes are `changes`.
fn gates_of(
    repo: &Repository,
    changes: &[PathChange],
    base: Oid,
    head: Oid,
    gates: &GateConfig<'_>,
) -> Result<Vec<GateResult>, GitError> {
    let base_tree = commit_tree(repo, base)?;
    let head_tree = commit_tree(repo, head)?;
    Ok(vec![
        write_set_gate(changes, gates),
        symlink_gate(repo, &head_tree, changes)?,
        nested_repo_gate(changes),
        plans_gate(repo, &base_tree, &head_tree, gates)?,
        size_gate(repo, changes, gates.max_file_bytes)?,
    ])
}

impl GitError {
    /// The gates a [`GitError::FilesRefused`] failed before anything was staged, worded as
    /// the gates on the diff word them: `file-size` for files above the limit, `file-type`
    /// for FIFOs, sockets and device nodes. Empty for any other error.
    pub fn refused_gates(&self) -> Vec<GateResult> {
        let GitError::FilesRefused { too_big, max_file_bytes, nodes, .. } = self else {
            return Vec::new();
        };
        let mut gates = Vec::new();
        if !too_big.is_empty() {
            let paths = too_big.iter().map(|(path, _)| path.clone()).collect();
            gates.push(failed(GATE_FILE_SIZE, file_size_detail(*max_file_bytes, too_big), paths));
        }
        if !nodes.is_empty() {
            let detail = nodes.iter().map(special_node_detail).collect::<Vec<_>>().join("; ");
            let paths = nodes.iter().map(|node: &SpecialNode| node.path.clone()).collect();
            gates.push(failed(GATE_FILE_TYPE, detail, paths));
        }
        gates
    }
}

fn write_set_gate(changes: &[PathChange], gates: &GateConfig<'_>) -> GateResult {
    let mut outside = BTreeSet::new();
    for change in changes {
        for path in change.touched_paths() {
            if !(gates.in_write_set)(path) {
                outside.insert(path.to_string());
            }
        }
    }
    if outside.is_empty() {
        return passed(
            GATE_WRITE_SET,
            format!("all {} changed path(s) are inside the task's write set", changes.len()),
        );
    }
    let paths: Vec<String> = outside.into_iter().collect();
    let example = paths[0]
        .rsplit_once('/')
        .map(|(dir, _)| format!("{dir}/**"))
        .unwrap_or_else(|| paths[0].clone());
    failed(
        GATE_WRITE_SET,
        format!(
            "changed outside the task's write set: {}. Revert those changes, or add them to the \
             task's writes (for example `{example}`) if the task really needs them",
            list_paths(&paths)
        ),
        paths,
    )
}

fn symlink_gate(
    repo: &Repository,
    head_tree: &Tree<'_>,
    changes: &[PathChange],
) -> Result<GateResult, GitError> {
    let mut escaping: Vec<(String, String, &'static str)> = Vec::new();
    let mut checked = 0usize;
    for change in changes.iter().filter(|c| c.new_mode == EntryMode::Symlink) {
        let (Some(path), Some(id)) = (change.new_path.as_deref(), change.new_id) else { continue };
        checked += 1;
        let blob =
            repo.find_blob(id).map_err(|_| GitError::MissingObject { what: "blob", oid: id })?;
        let target = String::from_utf8_lossy(blob.content()).into_owned();
        let mut dir: Vec<String> = path.split('/').map(str::to_string).collect();
        dir.pop();
        let mut hops = MAX_SYMLINK_HOPS;
        if let Resolution::Escapes(why) = resolve(repo, head_tree, dir, &target, &mut hops)? {
            let why = match why {
                Escape::Absolute => "absolute target",
                Escape::AboveRoot => "leads above the repository root",
                Escape::IntoGitDir => "leads into the .git directory",
            };
            escaping.push((path.to_string(), target, why));
        }
    }
    if escaping.is_empty() {
        return Ok(passed(
            GATE_SYMLINK_ESCAPE,
            format!("{checked} added or changed symlink(s), none pointing outside the repository"),
        ));
    }
    let detail = escaping
        .iter()
        .map(|(path, target, why)| format!("`{path}` -> `{target}` ({why})"))
        .collect::<Vec<_>>()
        .join(", ");
    Ok(failed(
        GATE_SYMLINK_ESCAPE,
        format!(
            "symlinks pointing outside the repository: {detail}. Remove them or point them at a \
             path inside the repository with a relative target"
        ),
        escaping.into_iter().map(|(path, _, _)| path).collect(),
    ))
}

fn nested_repo_gate(changes: &[PathChange]) -> GateResult {
    let mut offending = BTreeSet::new();
    for change in changes {
        let Some(path) = change.new_path.as_deref() else { continue };
        let has_git_dir = path.split('/').any(|part| part.eq_ignore_ascii_case(".git"));
        if change.new_mode == EntryMode::Gitlink || has_git_dir || path == ".gitmodules" {
            offending.insert(path.to_string());
        }
    }
    if offending.is_empty() {
        return passed(
            GATE_NESTED_REPO,
            "no nested repository, gitlink or submodule added".to_string(),
        );
    }
    let paths: Vec<String> = offending.into_iter().collect();
    failed(
        GATE_NESTED_REPO,
        format!(
            "nested repositories or submodules added: {}. Do not create repositories inside the \
             task (remove the inner `.git` and commit the files themselves) or change \
             `.gitmodules`; submodules need a human decision",
            list_paths(&paths)
        ),
        paths,
    )
}

fn plans_gate(
    repo: &Repository,
    base_tree: &Tree<'_>,
    head_tree: &Tree<'_>,
    gates: &GateConfig<'_>,
) -> Result<GateResult, GitError> {
    let Some(plans) = gates.plans_file else {
        return Ok(passed(GATE_PLANS_MARKERS, "the plan is not a tracked Plans.md".to_string()));
    };
    let before = blob_text(repo, base_tree, plans)?;
    let after = blob_text(repo, head_tree, plans)?;
    if before == after {
        return Ok(passed(GATE_PLANS_MARKERS, format!("{plans} unchanged")));
    }
    let (Some(before), Some(after)) = (before, after) else {
        return Ok(failed(
            GATE_PLANS_MARKERS,
            format!(
                "{plans} was deleted or replaced by something that is not a file; restore it: \
                 only the Lead edits the plan's status"
            ),
            vec![plans.to_string()],
        ));
    };
    let old = (gates.status_markers)(&before);
    let new = (gates.status_markers)(&after);
    let changed: Vec<String> = old
        .keys()
        .chain(new.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|id| old.get(*id) != new.get(*id))
        .map(|id| {
            let show = |v: Option<&String>| v.map(String::as_str).unwrap_or("(no row)").to_string();
            format!("{id}: {} -> {}", show(old.get(id)), show(new.get(id)))
        })
        .collect();
    if changed.is_empty() {
        return Ok(passed(GATE_PLANS_MARKERS, format!("{plans} changed, but no status marker")));
    }
    Ok(failed(
        GATE_PLANS_MARKERS,
        format!(
            "the worker changed status markers in {plans} ({}); revert those cells: only the Lead \
             marks tasks done (it flips the row to cc:done when the task lands)",
            changed.join(", ")
        ),
        vec![plans.to_string()],
    ))
}

fn size_gate(repo: &Repository, changes: &[PathChange], max: u64) -> Result<GateResult, GitError> {
    let odb = repo.odb().ctx(|| "could not open the object database".to_string())?;
    let mut too_big: Vec<(String, u64)> = Vec::new();
    for change in changes {
        let (Some(path), Some(id)) = (change.new_path.as_deref(), change.new_id) else { continue };
        if !matches!(change.new_mode, EntryMode::File | EntryMode::Executable | EntryMode::Symlink)
        {
            continue;
        }
        if change.kind == ChangeKind::Deleted {
            continue;
        }
        let (size, _) =
            odb.read_header(id).map_err(|_| GitError::MissingObject { what: "blob", oid: id })?;
        if size as u64 > max {
            too_big.push((path.to_string(), size as u64));
        }
    }
    if too_big.is_empty() {
        return Ok(passed(GATE_FILE_SIZE, format!("no added or changed file above {max} bytes")));
    }
    Ok(failed(
        GATE_FILE_SIZE,
        file_size_detail(max, &too_big),
        too_big.into_iter().map(|(path, _)| path).collect(),
    ))
}

/// What an agent CLI loads, named for the reviewer: every touched path (both sides of a
/// rename; deletions too) that is agent configuration.
fn agent_config_gate(changes: &[PathChange]) -> GateResult {
    let mut found = BTreeMap::new();
    for change in changes {
        for path in change.touched_paths() {
            if let Some(place) = agent_config_place(path) {
                found.insert(path.to_string(), place.what);
            }
        }
    }
    if found.is_empty() {
        return passed(GATE_AGENT_CONFIG, "no agent configuration changed".to_string());
    }
    let named: Vec<String> = found
        .iter()
        .map(|(path, what)| format!("`{}` ({what})", display_path(path.as_bytes())))
        .collect();
    attention(
        GATE_AGENT_CONFIG,
        format!(
            "agent configuration changed: {}. These are instructions or settings an agent CLI \
             loads — hooks run commands; review them as code: an instruction to approve, a \
             hook, an MCP server or a permission rule acts on every later agent",
            named.join(", ")
        ),
        found.into_keys().collect(),
    )
}

/// What the diff cannot show plainly, named for the reviewer: `.gitattributes` changed
/// anywhere (it decides how git shows, filters and merges files), and each new side that
/// is text with escaped bytes or binary.
fn opaque_gate(changes: &[PathChange], opaque: &[(String, Opaque)]) -> GateResult {
    let mut found: BTreeMap<String, String> = BTreeMap::new();
    for change in changes {
        for path in change.touched_paths() {
            let name = path.rsplit('/').next().unwrap_or(path);
            if name.eq_ignore_ascii_case(".gitattributes") {
                found.insert(
                    path.to_string(),
                    "changed: it decides how git shows, filters and merges files (a `-diff` or \
                     `binary` line hides files from git's diffs, a `filter=` runs a command)"
                        .to_string(),
                );
            }
        }
    }
    for (path, what) in opaque {
        found
            .entry(path.clone())
            .and_modify(|said| *said = format!("{said}; {}", what.describe()))
            .or_insert_with(|| what.describe());
    }
    if found.is_empty() {
        return passed(
            GATE_OPAQUE_CONTENT,
            "no .gitattributes change, control bytes or binary content".to_string(),
        );
    }
    let named: Vec<String> = found
        .iter()
        .map(|(path, what)| format!("`{}`: {what}", display_path(path.as_bytes())))
        .collect();
    attention(
        GATE_OPAQUE_CONTENT,
        format!(
            "content the diff cannot show plainly: {}. Look at each before approving: bytes \
             shown escaped are in the file as raw bytes, and binary content is not shown at all",
            named.join("; ")
        ),
        found.into_keys().collect(),
    )
}
