//! The run files of each task the page links to — its contract, the diff and review of
//! each round, the Advisor's answers, its logs, the diff of its commit on main (written
//! to `diffs/` when the page is) — with links relative to the page.

use std::collections::BTreeMap;
use std::path::{Component, Path};

use breeze_engine::run_dir::file_slug;
use breeze_protocol::{BreezeEvent, EventKind};

/// A link to one run file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Relative to the page (percent-encoded; HTML-escape it in an attribute).
    pub href: String,
    /// What the reader sees.
    pub label: String,
}

/// The files of one review round.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Round {
    /// 1-based round.
    pub round: u32,
    /// The verdict the journal recorded, if any.
    pub verdict: Option<String>,
    /// The round's files (`diff`, `review-result.json`, …).
    pub files: Vec<Link>,
}

/// One Advisor consult.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Consult {
    /// Why it was asked (`needs-advice`, `retry-threshold`, …).
    pub reason: String,
    /// Its number among the consults of that reason.
    pub n: u32,
    /// The decision the journal recorded (`PLAN`, `CORRECTION`, `STOP`), if any.
    pub decision: Option<String>,
    /// The request and the response files.
    pub files: Vec<Link>,
}

/// Every file of one task.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFiles {
    /// The sprint contract.
    pub contract: Option<Link>,
    /// The diff of the task's commit on main.
    pub landed: Option<Link>,
    /// Review rounds in order.
    pub rounds: Vec<Round>,
    /// Advisor consults in order.
    pub consults: Vec<Consult>,
    /// Role, check, verify and hook logs.
    pub logs: Vec<Link>,
}

impl TaskFiles {
    /// Whether the task has no file at all.
    pub fn is_empty(&self) -> bool {
        self.contract.is_none()
            && self.landed.is_none()
            && self.rounds.is_empty()
            && self.consults.is_empty()
            && self.logs.is_empty()
    }
}

/// Builds links from the page's folder to files of the run folder.
pub struct Linker {
    /// The run folder as the page reaches it (`""` when the page is in it, `../x`, or a
    /// `file://` URL when no relative path exists), percent-encoded.
    base: String,
}

impl Linker {
    /// Links from pages in `page_dir` to files under `run_root`.
    pub fn new(page_dir: &Path, run_root: &Path) -> Linker {
        let base = match relative(page_dir, run_root) {
            Some(parts) => parts.iter().map(|part| encode(part)).collect::<Vec<_>>().join("/"),
            None => {
                let absolute = run_root.canonicalize().unwrap_or_else(|_| run_root.to_path_buf());
                let parts: Vec<String> = absolute
                    .components()
                    .filter_map(|c| match c {
                        Component::Normal(part) => Some(encode(&part.to_string_lossy())),
                        _ => None,
                    })
                    .collect();
                format!("file:///{}", parts.join("/"))
            }
        };
        Linker { base }
    }

    /// The link to `<run folder>/<folder>/<name>`.
    pub fn href(&self, folder: &str, name: &str) -> String {
        let tail = format!("{}/{}", encode(folder), encode(name));
        if self.base.is_empty() { tail } else { format!("{}/{tail}", self.base) }
    }
}

/// The path from `from_dir` to `to` as folder names (`..` to go up), both resolved; `None`
/// when either cannot be resolved or a name is not UTF-8.
fn relative(from_dir: &Path, to: &Path) -> Option<Vec<String>> {
    let (from, to) = (from_dir.canonicalize().ok()?, to.canonicalize().ok()?);
    let from: Vec<Component<'_>> = from.components().collect();
    let to: Vec<Component<'_>> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts = vec!["..".to_string(); from.len() - common];
    for component in &to[common..] {
        parts.push(component.as_os_str().to_str()?.to_string());
    }
    Some(parts)
}

/// A path segment as a URL segment: unreserved bytes kept, every other byte `%XX` (a task
/// slug's own `%` becomes `%25`).
pub fn encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The folder of the run where the page writes the diffs of landed commits.
pub const DIFFS: &str = "diffs";

/// Writes `diffs/<slug>.landed.diff` in the run folder — what the task's commit changed
/// on main — unless it is there already. `None` when the commit cannot be read.
pub fn write_landed_diff(
    repo: &breeze_git::Repo,
    run_root: &Path,
    task: &str,
    commit: &str,
) -> Option<String> {
    let name = format!("{}.landed.diff", file_slug(task));
    let path = run_root.join(DIFFS).join(&name);
    if path.is_file() {
        return Some(name);
    }
    let commit = breeze_git::Oid::from_str(commit).ok()?;
    let parent = repo.first_parent(commit).ok()??;
    let patch = repo.diff_patch(parent, commit).ok()?;
    std::fs::create_dir_all(run_root.join(DIFFS)).ok()?;
    std::fs::write(&path, patch).ok()?;
    Some(name)
}

/// Every task's files, found in the run folder and labelled with what the journal says;
/// `landed` maps task ids to the name of their landed diff in `diffs/`.
pub fn gather(
    run_root: &Path,
    tasks: &[&str],
    landed: &BTreeMap<String, String>,
    events: &[BreezeEvent],
    linker: &Linker,
) -> BTreeMap<String, TaskFiles> {
    let listing = |folder: &str| -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(run_root.join(folder)) else { return Vec::new() };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        names
    };
    let (contracts, reviews) = (listing("contracts"), listing("reviews"));
    let (advisor, logs) = (listing("advisor"), listing("logs"));
    let mut all = BTreeMap::new();
    for &task in tasks {
        let slug = file_slug(task);
        let contract = format!("{slug}.sprint-contract.json");
        let files = TaskFiles {
            contract: contracts.contains(&contract).then(|| Link {
                href: linker.href("contracts", &contract),
                label: "sprint contract".into(),
            }),
            landed: landed
                .get(task)
                .map(|name| Link { href: linker.href(DIFFS, name), label: "landed diff".into() }),
            rounds: rounds(&slug, &reviews, task, events, linker),
            consults: consults(&slug, &advisor, events, linker),
            logs: logs
                .iter()
                .filter_map(|name| {
                    let rest = own_log(name, &slug)?;
                    Some(Link { href: linker.href("logs", name), label: rest.to_string() })
                })
                .collect(),
        };
        all.insert(task.to_string(), files);
    }
    all
}

/// `<slug>.round-<k>.<suffix>` files, grouped by round, with the journal's verdicts.
fn rounds(
    slug: &str,
    names: &[String],
    task: &str,
    events: &[BreezeEvent],
    linker: &Linker,
) -> Vec<Round> {
    let mut rounds: BTreeMap<u32, Round> = BTreeMap::new();
    let prefix = format!("{slug}.round-");
    for name in names {
        let Some(rest) = name.strip_prefix(&prefix) else { continue };
        let Some((round, suffix)) = rest.split_once('.') else { continue };
        let Ok(round) = round.parse::<u32>() else { continue };
        let entry = rounds.entry(round).or_insert_with(|| Round { round, ..Round::default() });
        entry.files.push(Link { href: linker.href("reviews", name), label: suffix.to_string() });
    }
    for event in events {
        if let EventKind::Reviewed { task: id, round, verdict, .. } = &event.event
            && id == task
            && let Some(entry) = rounds.get_mut(round)
        {
            entry.verdict = Some(verdict.as_str().to_string());
        }
    }
    for round in rounds.values_mut() {
        // The diff first, then the review, then anything else.
        round.files.sort_by_key(|link| match link.label.as_str() {
            "diff" => 0,
            "review-result.json" => 1,
            _ => 2,
        });
    }
    rounds.into_values().collect()
}

/// `<slug>.<reason>.<n>.advisor-{request,response}.json` files, by consult, with the
/// journal's decisions.
fn consults(slug: &str, names: &[String], events: &[BreezeEvent], linker: &Linker) -> Vec<Consult> {
    let mut consults: BTreeMap<(u32, String), Consult> = BTreeMap::new();
    for name in names {
        let Some(rest) = name.strip_prefix(slug).and_then(|rest| rest.strip_prefix('.')) else {
            continue;
        };
        let parts: Vec<&str> = rest.split('.').collect();
        let [reason, n, kind, "json"] = parts.as_slice() else { continue };
        let (Ok(n), Some(kind)) = (n.parse::<u32>(), kind.strip_prefix("advisor-")) else {
            continue;
        };
        let decision = decision_of(name, events);
        let entry = consults.entry((n, reason.to_string())).or_insert_with(|| Consult {
            reason: reason.to_string(),
            n,
            ..Consult::default()
        });
        entry.decision = entry.decision.take().or(decision);
        entry.files.push(Link { href: linker.href("advisor", name), label: kind.to_string() });
    }
    consults.into_values().collect()
}

/// The decision of the consult whose response is saved as `name`.
fn decision_of(name: &str, events: &[BreezeEvent]) -> Option<String> {
    events.iter().find_map(|event| match &event.event {
        EventKind::AdvisorConsulted { response_path, decision, .. }
            if Path::new(response_path).file_name().is_some_and(|file| file == name) =>
        {
            Some(decision.as_str().to_string())
        }
        _ => None,
    })
}

/// What follows `<slug>.` in the name of one of the task's logs, never a log of a task
/// whose id continues the slug (`1` and `1.2`).
fn own_log<'a>(name: &'a str, slug: &str) -> Option<&'a str> {
    const KINDS: [&str; 9] = [
        "worker.",
        "advisor.",
        "reviewer.",
        "scaffolder.",
        "verify.",
        "check-",
        "hook-",
        "round-",
        "COMMIT_EDITMSG",
    ];
    let rest = name.strip_prefix(slug)?.strip_prefix('.')?;
    KINDS.iter().any(|kind| rest.starts_with(kind)).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_relative_and_encoded() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join(".breeze/runs/r1");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::create_dir_all(dir.path().join("out")).unwrap();
        let inside = Linker::new(&run, &run);
        assert_eq!(
            inside.href("reviews", "auth%2Flogin.round-1.diff"),
            "reviews/auth%252Flogin.round-1.diff"
        );
        let beside = Linker::new(&dir.path().join("out"), &run);
        assert_eq!(beside.href("logs", "a b.log"), "../.breeze/runs/r1/logs/a%20b.log");
        assert_eq!(encode("認"), "%E8%AA%8D");
    }

    #[test]
    fn a_task_s_logs_are_told_from_a_longer_id_s() {
        assert_eq!(own_log("1.worker.attempt-1.log", "1"), Some("worker.attempt-1.log"));
        assert_eq!(own_log("1.2.worker.attempt-1.log", "1"), None);
        assert_eq!(own_log("1.check-1.round-2.stdout", "1"), Some("check-1.round-2.stdout"));
        assert_eq!(own_log("12.worker.attempt-1.log", "1"), None);
    }
}
