//! Write sets: the files, directories and globs a task may change.

use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::overlap::{self, GlobDfa, Search, SearchCache, Side, valid};

/// A write-set entry the planner refuses, with what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("write-set entry `{entry}`: {reason} — {fix}")]
pub struct WriteEntryError {
    /// The entry as written.
    pub entry: String,
    /// What is wrong with it.
    pub reason: String,
    /// What to write instead.
    pub fix: String,
}

impl WriteEntryError {
    fn new(entry: &str, reason: impl Into<String>, fix: impl Into<String>) -> Self {
        WriteEntryError { entry: entry.to_owned(), reason: reason.into(), fix: fix.into() }
    }
}

/// How an entry matches paths.
#[derive(Debug)]
pub(crate) enum PatternKind {
    /// Exactly this path.
    Exact,
    /// Every path under this directory (stored with its trailing `/`).
    Dir,
    /// A glob, split at the last `/` before its first metacharacter into a literal
    /// base (`crates/x/src/`) and the rest (`**/*.rs`). Only the rest is compiled to
    /// a DFA, so globs that differ only in their literal directories share one.
    Glob {
        /// The literal base, ending in `/` (or empty).
        base: String,
        /// globset's regex for the rest.
        rest_regex: String,
    },
}

/// A compiled glob rest; `None` when the DFA could not be built.
pub(crate) type SharedDfa = Option<Arc<GlobDfa>>;

/// One parsed write-set entry.
#[derive(Debug)]
pub(crate) struct Pattern {
    /// The entry, normalized (trimmed).
    pub(crate) text: String,
    pub(crate) kind: PatternKind,
    /// Every path the entry matches starts with this string. Two entries can only
    /// overlap when one's prefix is a prefix of the other's.
    pub(crate) prefix: String,
    /// The DFA of a glob's rest, built (or taken from a cache) on first use.
    dfa: OnceLock<SharedDfa>,
    /// Fallback matcher when the DFA cannot be built (never observed for real globs).
    matcher: OnceLock<Option<globset::GlobMatcher>>,
}

/// DFAs by rest regex, shared by every pattern with the same rest during an analysis.
#[derive(Default)]
pub(crate) struct DfaCache {
    by_regex: std::collections::HashMap<String, SharedDfa>,
    /// DFAs built (not taken from the cache).
    pub(crate) built: usize,
}

impl DfaCache {
    /// Makes sure a glob pattern has its DFA, building it at most once per rest.
    pub(crate) fn warm(&mut self, pattern: &Pattern) {
        let PatternKind::Glob { rest_regex, .. } = &pattern.kind else { return };
        if pattern.dfa.get().is_some() {
            return;
        }
        let shared = match self.by_regex.get(rest_regex) {
            Some(shared) => shared.clone(),
            None => {
                self.built += 1;
                let shared = build_dfa(&pattern.text, rest_regex);
                self.by_regex.insert(rest_regex.clone(), shared.clone());
                shared
            }
        };
        let _ = pattern.dfa.set(shared);
    }
}

fn build_dfa(text: &str, regex: &str) -> SharedDfa {
    match GlobDfa::build(regex) {
        Ok(dfa) => Some(Arc::new(dfa)),
        Err(e) => {
            tracing::warn!(glob = %text, error = %e, "glob too complex for a DFA; comparing conservatively");
            None
        }
    }
}

/// Characters that make an entry a glob.
const GLOB_META: &[char] = &['*', '?', '[', '{'];

fn glob_builder(glob: &str) -> globset::GlobBuilder<'_> {
    let mut builder = globset::GlobBuilder::new(glob);
    // `*` must not cross `/` (globset's default lets it); this is the gitignore
    // meaning users expect from `src/*.rs`.
    builder.literal_separator(true).backslash_escape(true);
    builder
}

/// Refuses an entry (`raw`, trimmed to `entry`) that is empty, spans lines, uses
/// backslashes or is absolute.
fn check_spelling(raw: &str, entry: &str) -> Result<(), WriteEntryError> {
    if entry.is_empty() {
        return Err(WriteEntryError::new(
            raw,
            "empty entry",
            "write a path such as `src/lib.rs`, a directory `src/auth/` or a glob `src/**/*.rs`",
        ));
    }
    if entry.chars().any(|c| c.is_control()) {
        return Err(WriteEntryError::new(
            entry,
            "contains a control character",
            "write the path on one line without control characters",
        ));
    }
    if entry.contains('\\') {
        return Err(WriteEntryError::new(
            entry,
            "backslashes are neither path separators nor escapes here",
            format!(
                "separate directories with `/` (`{}`); to match a literal `*`, `?`, `[` or `{{`, write it in brackets, e.g. `[*]`",
                entry.replace('\\', "/")
            ),
        ));
    }
    if entry.starts_with('/') {
        return Err(WriteEntryError::new(
            entry,
            "absolute path",
            format!(
                "write it relative to the repository root, e.g. `{}`",
                entry.trim_start_matches('/')
            ),
        ));
    }
    Ok(())
}

/// Refuses empty, `.` and `..` components in `body` (the entry without a trailing `/`).
fn check_components(entry: &str, body: &str) -> Result<(), WriteEntryError> {
    for component in body.split('/') {
        match component {
            "" => {
                return Err(WriteEntryError::new(
                    entry,
                    "empty path component (`//` or a lone `/`)",
                    "write each directory once, e.g. `src/auth/`",
                ));
            }
            "." => {
                return Err(WriteEntryError::new(
                    entry,
                    "`.` path component",
                    if body == "." {
                        "write `**` to claim every file in the repository".to_owned()
                    } else {
                        format!("drop the `./`: `{}`", entry.replace("./", ""))
                    },
                ));
            }
            ".." => {
                return Err(WriteEntryError::new(
                    entry,
                    "`..` leaves the directory it names and may leave the repository",
                    "write the path from the repository root without `..`",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

impl Pattern {
    /// Parses and validates one entry.
    pub(crate) fn parse(raw: &str) -> Result<Pattern, WriteEntryError> {
        let entry = raw.trim();
        check_spelling(raw, entry)?;
        let body = entry.strip_suffix('/').unwrap_or(entry);
        check_components(entry, body)?;
        let is_dir = entry.ends_with('/');
        if !entry.contains(GLOB_META) {
            let kind = if is_dir { PatternKind::Dir } else { PatternKind::Exact };
            return Ok(Pattern::new(entry, kind, entry.to_owned()));
        }
        Pattern::parse_glob(entry, body, is_dir)
    }

    /// A glob entry (`body` is `entry` without a trailing `/`), split into its literal
    /// base and the compiled rest.
    fn parse_glob(entry: &str, body: &str, is_dir: bool) -> Result<Pattern, WriteEntryError> {
        // A glob ending in `/` claims everything under what it matches.
        let glob = if !is_dir || body == "**" || body.ends_with("/**") {
            body.to_owned()
        } else {
            format!("{body}/**")
        };
        let first_meta = glob.find(GLOB_META).unwrap_or(glob.len());
        let prefix = glob[..first_meta].to_owned();
        // Split at a component boundary: whether `**` is recursive depends on the `/`
        // before it, so the rest must start a component.
        let base_len = glob[..first_meta].rfind('/').map_or(0, |i| i + 1);
        let (base, rest) = glob.split_at(base_len);
        let compiled = glob_builder(rest).build().map_err(|e| {
            WriteEntryError::new(
                entry,
                format!("not a valid glob: {}", e.kind()),
                "check brackets and braces; globs use `*` (within one directory), `**` (any depth), `?`, `[abc]` and `{a,b}`",
            )
        })?;
        let kind =
            PatternKind::Glob { base: base.to_owned(), rest_regex: compiled.regex().to_owned() };
        Ok(Pattern::new(entry, kind, prefix))
    }

    fn new(text: &str, kind: PatternKind, prefix: String) -> Pattern {
        Pattern {
            text: text.to_owned(),
            kind,
            prefix,
            dfa: OnceLock::new(),
            matcher: OnceLock::new(),
        }
    }

    pub(crate) fn is_glob(&self) -> bool {
        matches!(self.kind, PatternKind::Glob { .. })
    }

    /// The DFA of the glob's rest (built on first use); `None` for non-globs or a
    /// failed build.
    pub(crate) fn dfa(&self) -> Option<&GlobDfa> {
        let PatternKind::Glob { rest_regex, .. } = &self.kind else { return None };
        self.dfa.get_or_init(|| build_dfa(&self.text, rest_regex)).as_deref()
    }

    /// The literal base of a glob (empty for other kinds).
    fn base(&self) -> &str {
        match &self.kind {
            PatternKind::Glob { base, .. } => base,
            _ => "",
        }
    }

    /// Whether the entry claims `path` (repository-relative, `/`-separated).
    pub(crate) fn matches(&self, path: &str) -> bool {
        if !path.starts_with(&self.prefix) {
            return false;
        }
        match &self.kind {
            PatternKind::Exact => path == self.text,
            PatternKind::Dir => path.len() > self.text.len(),
            PatternKind::Glob { base, .. } => match self.dfa() {
                Some(dfa) => dfa.is_match(&path.as_bytes()[base.len()..]),
                None => self
                    .matcher
                    .get_or_init(|| {
                        let glob = self.glob_text();
                        glob_builder(&glob).build().ok().map(|g| g.compile_matcher())
                    })
                    .as_ref()
                    .is_some_and(|m| m.is_match(path)),
            },
        }
    }

    /// The glob as compiled (the entry, with `/**` added for a trailing `/`).
    fn glob_text(&self) -> String {
        match self.text.strip_suffix('/') {
            Some(body) if body == "**" || body.ends_with("/**") => body.to_owned(),
            Some(body) => format!("{body}/**"),
            None => self.text.clone(),
        }
    }
}

/// Whether and where two entries overlap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Overlap {
    /// No path matches both.
    Disjoint,
    /// This path matches both.
    Witness(String),
    /// Too complex to decide; treated as overlapping.
    Unknown,
}

impl Overlap {
    /// The witness to show, or a description when the pair was too complex.
    pub(crate) fn into_witness(self, a: &Pattern, b: &Pattern) -> Option<String> {
        match self {
            Overlap::Disjoint => None,
            Overlap::Witness(w) => Some(w),
            Overlap::Unknown => Some(format!(
                "(`{}` and `{}` are too complex to compare; assumed to overlap)",
                a.text, b.text
            )),
        }
    }
}

/// Whether and where one entry may write a file (or link) at a path under which another
/// may write something: a file and a folder cannot share a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileUnder {
    /// Neither names such a pair.
    No,
    /// The first entry may write the file `file`, the second the path `inside` under it.
    Found { file: String, inside: String },
    /// Too complex to decide; treated as found.
    Unknown,
}

/// Whether `file_side` may write a file at a path under which `folder_side` may write
/// something (exact, also for glob against glob), with a witness. Pairs that share a path
/// are [`overlap`]'s; a directory entry names no file outside itself, so it is never the
/// file side of a pair that does not share a path already.
pub(crate) fn file_under(
    file_side: &Pattern,
    folder_side: &Pattern,
    cache: &mut SearchCache,
) -> FileUnder {
    use PatternKind::*;
    let (a, b) = (file_side, folder_side);
    if !(a.prefix.starts_with(&b.prefix) || b.prefix.starts_with(&a.prefix)) {
        return FileUnder::No;
    }
    let found_above =
        |inside: &str| match strict_ancestors(inside).into_iter().find(|p| a.matches(p)) {
            Some(file) => FileUnder::Found { file, inside: inside.to_owned() },
            None => FileUnder::No,
        };
    match (&a.kind, &b.kind) {
        (Dir, _) => FileUnder::No,
        (Exact, _) => {
            // What the other entry may write under the folder this file would be.
            let folder = Pattern::new(&format!("{}/", a.text), Dir, format!("{}/", a.text));
            match overlap(&folder, b, cache) {
                Overlap::Witness(inside) => FileUnder::Found { file: a.text.clone(), inside },
                Overlap::Unknown => FileUnder::Unknown,
                Overlap::Disjoint => FileUnder::No,
            }
        }
        (Glob { .. }, Exact) => found_above(&b.text),
        (Glob { .. }, Dir) => {
            // Everything under the directory: the glob must name it or a folder above it.
            let dir = b.text.trim_end_matches('/');
            let mut candidates = strict_ancestors(dir);
            candidates.insert(0, dir.to_owned());
            match candidates.into_iter().find(|p| a.matches(p)) {
                Some(file) => FileUnder::Found { file, inside: format!("{}a", b.text) },
                None => FileUnder::No,
            }
        }
        (Glob { .. }, Glob { .. }) => match beneath_search(a, b, cache) {
            Overlap::Witness(inside) => found_above(&inside),
            Overlap::Unknown => FileUnder::Unknown,
            Overlap::Disjoint => FileUnder::No,
        },
    }
}

/// `a/b` and `a` for `a/b/c`, the nearest last.
fn strict_ancestors(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = path;
    while let Some((parent, _)) = at.rsplit_once('/') {
        out.push(parent.to_owned());
        at = parent;
    }
    out.reverse();
    out
}

/// A path `folder_side` matches that lies under a path `file_side` matches: a product
/// search of the folder side's DFA against "under a match" of the file side's, both
/// advanced over the longer literal base.
fn beneath_search(file_side: &Pattern, folder_side: &Pattern, cache: &mut SearchCache) -> Overlap {
    let (Some(f), Some(g)) = (file_side.dfa(), folder_side.dfa()) else { return Overlap::Unknown };
    let (fb, gb) = (file_side.base(), folder_side.base());
    let (beneath, glob, prefix) = if gb.starts_with(fb) {
        (
            Side::Beneath(f, f.start()).fed(&gb.as_bytes()[fb.len()..]),
            Some(Side::Glob(g, g.start())),
            gb,
        )
    } else if fb.starts_with(gb) {
        (
            Some(Side::Beneath(f, f.start())),
            Side::Glob(g, g.start()).fed(&fb.as_bytes()[gb.len()..]),
            fb,
        )
    } else {
        return Overlap::Disjoint;
    };
    let (Some(beneath), Some(glob)) = (beneath, glob) else { return Overlap::Disjoint };
    let Some(valid_at) = valid::feed(valid::COMPONENT_START, prefix.as_bytes()) else {
        return Overlap::Disjoint;
    };
    search(beneath, glob, valid_at, prefix.as_bytes(), cache)
}

/// Whether an entry pair needs an automaton (rather than string comparison) to decide.
pub(crate) fn needs_automaton(a: &Pattern, b: &Pattern) -> bool {
    a.is_glob() || b.is_glob()
}

/// Decides exactly whether two entries claim a common path, with a witness.
pub(crate) fn overlap(a: &Pattern, b: &Pattern, cache: &mut SearchCache) -> Overlap {
    use PatternKind::*;
    // Order the pair: Exact < Dir < Glob.
    let rank = |p: &Pattern| match p.kind {
        Exact => 0,
        Dir => 1,
        Glob { .. } => 2,
    };
    let (a, b) = if rank(a) <= rank(b) { (a, b) } else { (b, a) };
    if !(a.prefix.starts_with(&b.prefix) || b.prefix.starts_with(&a.prefix)) {
        return Overlap::Disjoint;
    }
    match (&a.kind, &b.kind) {
        (Exact, _) => {
            if b.matches(&a.text) {
                Overlap::Witness(a.text.clone())
            } else {
                Overlap::Disjoint
            }
        }
        (Dir, Dir) => {
            // One prefix contains the other (checked above); any file in the deeper
            // directory is claimed by both.
            let deeper = if a.text.len() >= b.text.len() { &a.text } else { &b.text };
            Overlap::Witness(format!("{deeper}a"))
        }
        (Dir, Glob { .. }) => dir_glob_overlap(a, b, cache),
        (Glob { .. }, Glob { .. }) => glob_glob_overlap(a, b, cache),
        // The pair is ordered by rank above.
        (Dir | Glob { .. }, Exact) | (Glob { .. }, Dir) => unreachable!("pair ordered by kind"),
    }
}

/// A directory against a glob whose prefixes are compatible: a product search of the
/// glob against "anything" below the directory.
fn dir_glob_overlap(dir_entry: &Pattern, glob_entry: &Pattern, cache: &mut SearchCache) -> Overlap {
    let Some(glob) = glob_entry.dfa() else { return Overlap::Unknown };
    let (dir, base) = (dir_entry.text.as_str(), glob_entry.base());
    // Both are literal strings and one is a prefix of the other (prefixes are
    // compatible); the search starts after the longer one.
    let (start, from) = if dir.starts_with(base) {
        (glob.feed(glob.start(), &dir.as_bytes()[base.len()..]), dir)
    } else if base.starts_with(dir) {
        (Some(glob.start()), base)
    } else {
        return Overlap::Disjoint;
    };
    let Some(state) = start else { return Overlap::Disjoint };
    let Some(valid_at) = valid::feed(valid::COMPONENT_START, from.as_bytes()) else {
        return Overlap::Disjoint;
    };
    search(Side::Glob(glob, state), Side::Any, valid_at, from.as_bytes(), cache)
}

/// Two globs whose prefixes are compatible: a product search of their DFAs, both
/// advanced over the longer literal base.
fn glob_glob_overlap(a: &Pattern, b: &Pattern, cache: &mut SearchCache) -> Overlap {
    let (Some(x), Some(y)) = (a.dfa(), b.dfa()) else { return Overlap::Unknown };
    // Run the shorter base's DFA over the rest of the longer base.
    let (short, long, ds, dl) =
        if a.base().len() <= b.base().len() { (a, b, x, y) } else { (b, a, y, x) };
    let (short_base, long_base) = (short.base(), long.base());
    if !long_base.starts_with(short_base) {
        return Overlap::Disjoint;
    }
    let Some(ss) = ds.feed(ds.start(), &long_base.as_bytes()[short_base.len()..]) else {
        return Overlap::Disjoint;
    };
    let Some(valid_at) = valid::feed(valid::COMPONENT_START, long_base.as_bytes()) else {
        return Overlap::Disjoint;
    };
    search(Side::Glob(ds, ss), Side::Glob(dl, dl.start()), valid_at, long_base.as_bytes(), cache)
}

fn search(
    a: Side<'_>,
    b: Side<'_>,
    valid_at: u8,
    prefix: &[u8],
    cache: &mut SearchCache,
) -> Overlap {
    match overlap::find_common(a, b, valid_at, prefix, cache) {
        Search::Found(bytes) => Overlap::Witness(String::from_utf8_lossy(&bytes).into_owned()),
        Search::Disjoint => Overlap::Disjoint,
        Search::TooComplex => Overlap::Unknown,
    }
}

/// Why two write sets may not be written side by side ([`WriteSet::collision`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Collision {
    /// Both may write this path (or, for entries too complex to compare, a description
    /// saying so).
    Shared(String),
    /// One may write `file` as a file (or link), the other `inside`, a path under `file/`
    /// that makes it a folder: the two cannot both land.
    FileAndFolder {
        /// The path one write set may make a file.
        file: String,
        /// A path under it the other may write.
        inside: String,
        /// Whether the first write set (the receiver of [`WriteSet::collision`]) is the
        /// one that may write the file.
        file_in_first: bool,
    },
}

impl Collision {
    /// The witness the plan shows, naming the tasks whose write sets collide (`first` is
    /// the receiver of [`WriteSet::collision`]): the shared path, or `d — a file in task
    /// 1, a folder in task 2 (d/three)`.
    pub fn witness(&self, first: &str, second: &str) -> String {
        match self {
            Collision::Shared(path) => path.clone(),
            Collision::FileAndFolder { file, inside, file_in_first } => {
                let (file_task, folder_task) =
                    if *file_in_first { (first, second) } else { (second, first) };
                format!(
                    "{file} — a file in task {file_task}, a folder in task {folder_task} ({inside})"
                )
            }
        }
    }
}

/// The paths a task may change: exact files (`src/lib.rs`), directories (`src/auth/`,
/// everything under it) and globs (`src/**/*.rs`; `*` and `?` do not cross `/`).
///
/// An empty write set means the task did not declare one: it conflicts with every
/// other task and runs alone.
#[derive(Clone, Default)]
pub struct WriteSet {
    entries: Vec<String>,
    patterns: Arc<[Pattern]>,
}

impl WriteSet {
    /// Parses entries, trimming each and dropping repeats. Fails on the first entry that
    /// is absolute, contains `.`/`..`/empty components or a backslash, or is not a
    /// valid glob.
    pub fn new<I, S>(entries: I) -> Result<WriteSet, WriteEntryError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut patterns: Vec<Pattern> = Vec::new();
        for entry in entries {
            let pattern = Pattern::parse(entry.as_ref())?;
            if !patterns.iter().any(|p| p.text == pattern.text) {
                patterns.push(pattern);
            }
        }
        Ok(WriteSet {
            entries: patterns.iter().map(|p| p.text.clone()).collect(),
            patterns: patterns.into(),
        })
    }

    /// The entries, trimmed, in the order written.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Whether the task declared no write set.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether the write set claims `path` (repository-relative, `/`-separated, e.g.
    /// `src/auth/login.rs`). An empty write set claims nothing.
    pub fn matches(&self, path: &str) -> bool {
        self.patterns.iter().any(|p| p.matches(path))
    }

    /// Why the two write sets may not be written side by side, or `None`: a path both
    /// claim ([`Collision::Shared`], preferred), or a file one may write at a path under
    /// which the other may write ([`Collision::FileAndFolder`]): a file and a folder cannot
    /// share a name. Exact, also for glob against glob. (Empty write sets claim nothing
    /// here; the planner handles "no write set" separately.)
    pub fn collision(&self, other: &WriteSet) -> Option<Collision> {
        if let Some(path) = self.overlap(other) {
            return Some(Collision::Shared(path));
        }
        let mut cache = SearchCache::default();
        for a in self.patterns.iter() {
            for b in other.patterns.iter() {
                for (file_side, folder_side, file_in_first) in [(a, b, true), (b, a, false)] {
                    match file_under(file_side, folder_side, &mut cache) {
                        FileUnder::No => {}
                        FileUnder::Found { file, inside } => {
                            return Some(Collision::FileAndFolder { file, inside, file_in_first });
                        }
                        FileUnder::Unknown => {
                            return Some(Collision::Shared(
                                Overlap::Unknown.into_witness(a, b).unwrap_or_default(),
                            ));
                        }
                    }
                }
            }
        }
        None
    }

    /// A path both write sets claim, or `None` if they are disjoint. Exact, also for
    /// glob against glob. (Empty write sets claim nothing here; the planner handles
    /// "no write set" separately.) Two write sets that share no path may still collide:
    /// see [`WriteSet::collision`].
    pub fn overlap(&self, other: &WriteSet) -> Option<String> {
        let mut cache = SearchCache::default();
        for a in self.patterns.iter() {
            for b in other.patterns.iter() {
                if let Some(w) = overlap(a, b, &mut cache).into_witness(a, b) {
                    return Some(w);
                }
            }
        }
        None
    }

    pub(crate) fn patterns(&self) -> &[Pattern] {
        &self.patterns
    }
}

impl fmt::Debug for WriteSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("WriteSet").field(&self.entries).finish()
    }
}

impl PartialEq for WriteSet {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries
    }
}

impl Eq for WriteSet {}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(entries: &[&str]) -> WriteSet {
        WriteSet::new(entries).unwrap()
    }

    fn err(entry: &str) -> WriteEntryError {
        WriteSet::new([entry]).unwrap_err()
    }

    #[test]
    fn entries_match_as_documented() {
        let set = ws(&["src/lib.rs", "src/auth/", "docs/*.md", "tests/**/*.rs"]);
        assert!(set.matches("src/lib.rs"));
        assert!(!set.matches("src/lib.rs.bak"));
        assert!(set.matches("src/auth/login.rs"));
        assert!(set.matches("src/auth/deep/x.rs"));
        assert!(!set.matches("src/auth"));
        assert!(!set.matches("src/authz/x.rs"));
        assert!(set.matches("docs/a.md"));
        assert!(!set.matches("docs/sub/a.md"), "`*` does not cross `/`");
        assert!(set.matches("tests/a.rs"));
        assert!(set.matches("tests/x/y/a.rs"));
        assert!(!ws(&[]).matches("anything"));
    }

    #[test]
    fn glob_with_trailing_slash_claims_contents() {
        let set = ws(&["crates/*/"]);
        assert!(set.matches("crates/x/src/lib.rs"));
        assert!(!set.matches("crates/x"));
    }

    #[test]
    fn bad_entries_are_rejected_with_a_fix() {
        let e = err("/etc/passwd");
        assert!(e.reason.contains("absolute"));
        assert!(e.fix.contains("`etc/passwd`"));
        assert!(err("../outside.rs").reason.contains(".."));
        assert!(err("src/../x").reason.contains(".."));
        assert!(err("./src/a.rs").fix.contains("`src/a.rs`"));
        assert!(err("src//a.rs").reason.contains("empty path component"));
        assert!(err("src\\a.rs").fix.contains("`src/a.rs`"));
        assert!(err("src/[a.rs").reason.contains("not a valid glob"));
        assert!(err("   ").reason.contains("empty"));
        assert!(err(".").fix.contains("`**`"));
        let shown = err("/x").to_string();
        assert!(shown.starts_with("write-set entry `/x`: absolute path — "), "{shown}");
    }

    fn file_and_folder(a: &[&str], b: &[&str]) -> Option<(String, String, bool)> {
        match ws(a).collision(&ws(b))? {
            Collision::FileAndFolder { file, inside, file_in_first } => {
                Some((file, inside, file_in_first))
            }
            Collision::Shared(path) => panic!("{a:?} and {b:?} share {path}"),
        }
    }

    fn found(file: &str, inside: &str, file_in_first: bool) -> Option<(String, String, bool)> {
        Some((file.to_owned(), inside.to_owned(), file_in_first))
    }

    #[test]
    fn a_file_and_a_folder_of_one_name_collide() {
        // Issue 23: the folder `d/` becomes a file; another task adds `d/three`.
        assert_eq!(
            file_and_folder(&["d", "d/one", "d/two"], &["d/three"]),
            found("d", "d/three", true)
        );
        assert_eq!(file_and_folder(&["d/three"], &["d"]), found("d", "d/three", false));
        assert_eq!(file_and_folder(&["docs"], &["docs/"]), found("docs", "docs/a", true));
        assert_eq!(file_and_folder(&["src/**"], &["src"]), found("src", "src/a", false));
        // Globs name files too: `a/*` may make `a/b` a file.
        assert_eq!(file_and_folder(&["a/*"], &["a/b/c"]), found("a/b", "a/b/c", true));
        assert_eq!(file_and_folder(&["*"], &["src/lib.rs"]), found("src", "src/lib.rs", true));
        assert_eq!(
            file_and_folder(&["src/*"], &["src/*/mod.rs"]),
            found("src/a", "src/a/mod.rs", true)
        );
        assert_eq!(file_and_folder(&["src/*"], &["src/git/"]), found("src/git", "src/git/a", true));
        assert_eq!(file_and_folder(&["a*"], &["ab/c/*.rs"]), found("ab", "ab/c/a.rs", true));
        assert_eq!(file_and_folder(&["ab/c/*.rs"], &["a*"]), found("ab", "ab/c/a.rs", false));
        // No such pair.
        assert_eq!(ws(&["a/*.rs"]).collision(&ws(&["a/b/c"])), None);
        assert_eq!(ws(&["src/a.rs"]).collision(&ws(&["src/a.rsx/b"])), None);
        assert_eq!(ws(&["d/"]).collision(&ws(&["e"])), None);
        assert_eq!(ws(&["src/*.rs"]).collision(&ws(&["src/git/*.rs"])), None);
        // A shared path is reported as such.
        assert_eq!(
            ws(&["src/**"]).collision(&ws(&["src/a.rs"])),
            Some(Collision::Shared("src/a.rs".into()))
        );
    }

    #[test]
    fn collision_witness_names_the_tasks() {
        let c = ws(&["d"]).collision(&ws(&["d/three"])).unwrap();
        assert_eq!(c.witness("A", "B"), "d — a file in task A, a folder in task B (d/three)");
        let c = ws(&["d/three"]).collision(&ws(&["d"])).unwrap();
        assert_eq!(c.witness("B", "A"), "d — a file in task A, a folder in task B (d/three)");
        assert_eq!(Collision::Shared("x".into()).witness("A", "B"), "x");
    }

    #[test]
    fn overlap_gives_witnesses() {
        assert_eq!(ws(&["src/a.rs"]).overlap(&ws(&["src/a.rs"])).as_deref(), Some("src/a.rs"));
        assert_eq!(ws(&["src/a.rs"]).overlap(&ws(&["src/b.rs"])), None);
        assert_eq!(ws(&["src/auth/"]).overlap(&ws(&["src/"])).as_deref(), Some("src/auth/a"));
        assert_eq!(ws(&["src/auth/"]).overlap(&ws(&["src/authz/"])), None);
        assert_eq!(
            ws(&["src/auth/"]).overlap(&ws(&["src/**/*.rs"])).as_deref(),
            Some("src/auth/a.rs")
        );
        assert_eq!(ws(&["src/auth/"]).overlap(&ws(&["src/*.rs"])), None);
        assert_eq!(
            ws(&["src/auth/login.rs"]).overlap(&ws(&["src/**/*.rs"])).as_deref(),
            Some("src/auth/login.rs")
        );
        assert_eq!(ws(&["docs/**"]).overlap(&ws(&["**/*.md"])).as_deref(), Some("docs/a.md"));
        assert_eq!(ws(&["src/foo*.rs"]).overlap(&ws(&["src/bar/"])), None);
    }
}
