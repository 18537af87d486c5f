//! Exact path-set questions on glob automata.
//!
//! Every glob is compiled by globset (with `literal_separator(true)`, so `*` does
//! not cross `/`) into a regex, and that regex into an anchored dense DFA over bytes.
//! Two patterns overlap exactly when the product of their DFAs and a small automaton
//! for *valid repository paths* (non-empty components, no `.` or `..` component, no
//! NUL byte, no leading or trailing `/`) accepts some string. The search over the
//! product is a Dijkstra search whose cost prefers short, readable paths, so the
//! witness it returns reads like a file name (`src/git/a.rs`, not `src/git/.rs`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use regex_automata::Anchored;
use regex_automata::dfa::{Automaton, StartKind, dense};
use regex_automata::nfa::thompson;
use regex_automata::util::primitives::StateID;
use regex_automata::util::{start, syntax};

// The Fx hash: fast for the small integer keys (automaton states, task-index pairs) of the
// conflict search. No outside party chooses those keys, so hash flooding is not a concern.
use rustc_hash::FxHashMap;

/// Size cap for one glob's DFA (and its determinization). Hand-written globs need a
/// few kilobytes; the cap only stops pathological input.
const DFA_SIZE_LIMIT: usize = 4 << 20;

/// Cap on product states explored in one search. Past it the answer is "unknown",
/// which callers treat as an overlap: a false conflict only costs parallelism.
const MAX_SEARCH_STATES: usize = 250_000;

/// An anchored DFA for one glob.
pub(crate) struct GlobDfa {
    dfa: dense::DFA<Vec<u32>>,
    start: StateID,
    /// Unique in the process (never reused), so caches may key on it.
    id: u64,
}

static NEXT_DFA_ID: AtomicU64 = AtomicU64::new(0);

/// Per-analysis memory for searches: the readable byte per joint byte class, for each
/// pair of automata (there are few distinct DFAs, and many searches).
#[derive(Default)]
pub(crate) struct SearchCache {
    representatives: FxHashMap<(u64, u64), Rc<[u8]>>,
}

impl std::fmt::Debug for GlobDfa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GlobDfa").field("bytes", &self.dfa.memory_usage()).finish()
    }
}

/// Why a glob has no DFA (it would be too large, or the regex is not one the DFA builder
/// takes): its write set is then compared conservatively.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoDfa {
    /// Building the DFA failed (above the size cap, most often).
    #[error(transparent)]
    Build(Box<dense::BuildError>),
    /// The built DFA has no anchored start state.
    #[error(transparent)]
    Start(#[from] regex_automata::dfa::StartError),
}

impl GlobDfa {
    /// Compiles a globset regex (`(?-u)^...$`).
    pub(crate) fn build(regex: &str) -> Result<GlobDfa, NoDfa> {
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .start_kind(StartKind::Anchored)
                    .accelerate(false)
                    .dfa_size_limit(Some(DFA_SIZE_LIMIT))
                    .determinize_size_limit(Some(DFA_SIZE_LIMIT)),
            )
            // globset renders `(?-u)` byte patterns; with UTF-8 mode on they would be
            // rejected.
            .syntax(syntax::Config::new().utf8(false).unicode(false))
            .thompson(thompson::Config::new().utf8(false))
            .build(regex)
            .map_err(|e| NoDfa::Build(Box::new(e)))?;
        let start = dfa.start_state(&start::Config::new().anchored(Anchored::Yes))?;
        Ok(GlobDfa { dfa, start, id: NEXT_DFA_ID.fetch_add(1, Ordering::Relaxed) })
    }

    /// Whether the glob matches the whole of `path`.
    pub(crate) fn is_match(&self, path: &[u8]) -> bool {
        self.feed(self.start, path).is_some_and(|s| self.accepts_at_end(s))
    }

    /// Runs `bytes` from `state`; `None` once the DFA is dead (no match possible).
    pub(crate) fn feed(&self, mut state: StateID, bytes: &[u8]) -> Option<StateID> {
        for &b in bytes {
            state = self.dfa.next_state(state, b);
            if self.dfa.is_dead_state(state) {
                return None;
            }
        }
        Some(state)
    }

    pub(crate) fn start(&self) -> StateID {
        self.start
    }

    fn accepts_at_end(&self, state: StateID) -> bool {
        self.dfa.is_match_state(self.dfa.next_eoi_state(state))
    }
}

/// One side of a product search.
#[derive(Clone, Copy)]
pub(crate) enum Side<'a> {
    /// A glob DFA, currently in the given state.
    Glob(&'a GlobDfa, StateID),
    /// Accepts every path (the inside of a claimed directory).
    Any,
    /// Accepts the paths *under* a path the glob matches (`p/…` for every match `p`):
    /// where another entry would need a folder of a name this glob may give a file. In
    /// the given state of the glob's DFA, or [`PAST`] once a match and a `/` were read.
    Beneath(&'a GlobDfa, StateID),
}

/// The state of a [`Side::Beneath`] that has read a match of its glob and a `/`: from
/// there every path is accepted. (Dense DFA state ids stay far below it.)
pub(crate) const PAST: StateID = StateID::MAX;

impl Side<'_> {
    fn id(&self) -> u64 {
        match self {
            // Same byte classes as the glob itself ('/' is told apart by the valid-path
            // automaton anyway).
            Side::Glob(g, _) | Side::Beneath(g, _) => g.id,
            Side::Any => u64::MAX,
        }
    }

    fn state(&self) -> StateID {
        match self {
            Side::Glob(_, s) | Side::Beneath(_, s) => *s,
            Side::Any => StateID::ZERO,
        }
    }

    fn class(&self, byte: u8) -> u8 {
        match self {
            Side::Glob(g, _) | Side::Beneath(g, _) => g.dfa.byte_classes().get(byte),
            Side::Any => 0,
        }
    }

    /// `None` when the step leads to the dead state.
    fn step(&self, state: StateID, byte: u8) -> Option<StateID> {
        match self {
            Side::Glob(g, _) => {
                let next = g.dfa.next_state(state, byte);
                (!g.dfa.is_dead_state(next)).then_some(next)
            }
            Side::Any => Some(StateID::ZERO),
            // Past a match and its `/`, everything follows. A `/` right after a match gets
            // there (whatever else the glob could still match accepts less).
            Side::Beneath(g, _) => {
                if state == PAST || (byte == b'/' && g.accepts_at_end(state)) {
                    return Some(PAST);
                }
                let next = g.dfa.next_state(state, byte);
                (!g.dfa.is_dead_state(next)).then_some(next)
            }
        }
    }

    fn accepts_at_end(&self, state: StateID) -> bool {
        match self {
            Side::Glob(g, _) => g.accepts_at_end(state),
            Side::Any => true,
            Side::Beneath(..) => state == PAST,
        }
    }

    /// This side after reading `bytes` from its current state; `None` once it is dead.
    pub(crate) fn fed(self, bytes: &[u8]) -> Option<Self> {
        let mut state = self.state();
        for &b in bytes {
            state = self.step(state, b)?;
        }
        Some(match self {
            Side::Glob(g, _) => Side::Glob(g, state),
            Side::Beneath(g, _) => Side::Beneath(g, state),
            Side::Any => Side::Any,
        })
    }
}

/// The valid-path automaton: where we are inside the current path component.
pub(crate) mod valid {
    /// At the start of a component (start of the path or just after `/`).
    pub const COMPONENT_START: u8 = 0;
    /// The component so far is `.`.
    pub const DOT: u8 = 1;
    /// The component so far is `..`.
    pub const DOT_DOT: u8 = 2;
    /// Inside a proper component name.
    pub const NAME: u8 = 3;

    /// `None` when the byte makes the path invalid.
    pub fn step(state: u8, byte: u8) -> Option<u8> {
        match (state, byte) {
            (_, 0) => None,
            (COMPONENT_START | DOT | DOT_DOT, b'/') => None,
            (NAME, b'/') => Some(COMPONENT_START),
            (COMPONENT_START, b'.') => Some(DOT),
            (DOT, b'.') => Some(DOT_DOT),
            _ => Some(NAME),
        }
    }

    /// A path may only end inside a proper name.
    pub fn accepts_at_end(state: u8) -> bool {
        state == NAME
    }

    /// The automaton only tells these bytes apart.
    pub fn class(byte: u8) -> u8 {
        match byte {
            0 => 0,
            b'/' => 1,
            b'.' => 2,
            _ => 3,
        }
    }

    /// Runs `bytes` from `state`.
    pub fn feed(mut state: u8, bytes: &[u8]) -> Option<u8> {
        for &b in bytes {
            state = step(state, b)?;
        }
        Some(state)
    }
}

/// Outcome of a product search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Search {
    /// Both sides accept this path (the prefix included).
    Found(Vec<u8>),
    /// No valid path is accepted by both sides.
    Disjoint,
    /// The search gave up (state cap); treat as overlapping.
    TooComplex,
}

/// How unreadable a byte is in a witness, and its rank among equals.
fn byte_rank(byte: u8) -> (u64, u16) {
    match byte {
        b'a'..=b'z' => (0, u16::from(byte - b'a')),
        b'0'..=b'9' => (0, 26 + u16::from(byte - b'0')),
        b'A'..=b'Z' => (0, 36 + u16::from(byte - b'A')),
        b'_' => (0, 62),
        b'-' => (0, 63),
        b'.' => (0, 64),
        b'/' => (0, 65),
        0x21..=0x7e => (1, 100 + u16::from(byte)),
        b' ' => (2, 300),
        _ => (4, 400 + u16::from(byte)),
    }
}

/// Ugliness weighs more than any length difference a hand-written glob can force.
const UGLY: u64 = 1 << 32;

/// One byte per joint byte class of both sides and the valid-path automaton: bytes
/// that no side can tell apart behave the same, so the most readable one stands for
/// all. Sorted by readability.
fn joint_representatives(a: &Side<'_>, b: &Side<'_>) -> Rc<[u8]> {
    let mut keyed: Vec<(u32, (u64, u16), u8)> = (0..=255u8)
        .map(|byte| {
            let key = u32::from(a.class(byte)) << 16
                | u32::from(b.class(byte)) << 8
                | u32::from(valid::class(byte));
            (key, byte_rank(byte), byte)
        })
        .collect();
    keyed.sort_unstable();
    keyed.dedup_by_key(|k| k.0);
    let mut representatives: Vec<u8> = keyed.into_iter().map(|k| k.2).collect();
    representatives.sort_by_key(|&byte| byte_rank(byte));
    representatives.into()
}

/// A product state reached by the search, with the step that reached it most cheaply.
#[derive(Clone, Copy)]
struct Node {
    a: StateID,
    b: StateID,
    v: u8,
    parent: u32,
    byte: u8,
}

/// The parent of the start node.
const ROOT: u32 = u32::MAX;

/// `prefix`, then the bytes of the steps from the start node to node `end`.
fn witness(nodes: &[Node], end: u32, prefix: &[u8]) -> Vec<u8> {
    let mut path = Vec::new();
    let mut at = end;
    while at != ROOT {
        let n = nodes[at as usize];
        if n.parent != ROOT {
            path.push(n.byte);
        }
        at = n.parent;
    }
    path.reverse();
    let mut witness = prefix.to_vec();
    witness.extend_from_slice(&path);
    witness
}

/// How unreadable stepping over `byte` is, in valid-path state `v`: the byte's own
/// ugliness, plus one when it starts a hidden file or directory.
fn step_ugliness(byte: u8, v: u8) -> u64 {
    let mut ugliness = byte_rank(byte).0;
    if byte == b'.' && v == valid::COMPONENT_START {
        ugliness += 1;
    }
    ugliness
}

impl SearchCache {
    /// [`joint_representatives`] of the pair, computed once per pair of automata.
    fn representatives(&mut self, a: &Side<'_>, b: &Side<'_>) -> Rc<[u8]> {
        self.representatives
            .entry((a.id(), b.id()))
            .or_insert_with(|| joint_representatives(a, b))
            .clone()
    }
}

/// Finds the cheapest valid path that starts with `prefix` and then drives both sides
/// (already advanced over `prefix`) and the valid-path automaton (in state `valid_at`)
/// to acceptance. Cost: ugliness first (hidden-file dots, punctuation, non-ASCII), then
/// length; so the witness is a short path that reads like a file name.
pub(crate) fn find_common(
    a: Side<'_>,
    b: Side<'_>,
    valid_at: u8,
    prefix: &[u8],
    cache: &mut SearchCache,
) -> Search {
    let representatives = cache.representatives(&a, &b);

    let mut nodes = vec![Node { a: a.state(), b: b.state(), v: valid_at, parent: ROOT, byte: 0 }];
    let mut best: Vec<u64> = vec![0];
    let mut index: FxHashMap<(StateID, StateID, u8), u32> = FxHashMap::default();
    index.insert((a.state(), b.state(), valid_at), 0);
    let mut heap = BinaryHeap::new();
    heap.push(Reverse((0u64, 0u32)));

    while let Some(Reverse((cost, id))) = heap.pop() {
        let node = nodes[id as usize];
        if cost > best[id as usize] {
            continue;
        }
        if valid::accepts_at_end(node.v) && a.accepts_at_end(node.a) && b.accepts_at_end(node.b) {
            return Search::Found(witness(&nodes, id, prefix));
        }
        for &byte in representatives.iter() {
            let Some(v) = valid::step(node.v, byte) else { continue };
            let Some(na) = a.step(node.a, byte) else { continue };
            let Some(nb) = b.step(node.b, byte) else { continue };
            let next_cost = cost + step_ugliness(byte, node.v) * UGLY + 1;
            let key = (na, nb, v);
            let next_id = match index.get(&key) {
                Some(&existing) => {
                    if next_cost >= best[existing as usize] {
                        continue;
                    }
                    best[existing as usize] = next_cost;
                    nodes[existing as usize].parent = id;
                    nodes[existing as usize].byte = byte;
                    existing
                }
                None => {
                    if nodes.len() >= MAX_SEARCH_STATES {
                        return Search::TooComplex;
                    }
                    let new_id = nodes.len() as u32;
                    nodes.push(Node { a: na, b: nb, v, parent: id, byte });
                    best.push(next_cost);
                    index.insert(key, new_id);
                    new_id
                }
            };
            heap.push(Reverse((next_cost, next_id)));
        }
    }
    Search::Disjoint
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dfa(glob: &str) -> GlobDfa {
        let g = globset::GlobBuilder::new(glob).literal_separator(true).build().unwrap();
        GlobDfa::build(g.regex()).unwrap()
    }

    fn common(x: &str, y: &str) -> Option<String> {
        let (a, b) = (dfa(x), dfa(y));
        match find_common(
            Side::Glob(&a, a.start()),
            Side::Glob(&b, b.start()),
            valid::COMPONENT_START,
            b"",
            &mut SearchCache::default(),
        ) {
            Search::Found(w) => Some(String::from_utf8(w).unwrap()),
            Search::Disjoint => None,
            Search::TooComplex => panic!("too complex"),
        }
    }

    #[test]
    fn verified_pairs_from_the_reference() {
        assert_eq!(common("src/**", "src/git/*.rs").as_deref(), Some("src/git/a.rs"));
        assert_eq!(common("src/**/*.rs", "src/git/mod.rs").as_deref(), Some("src/git/mod.rs"));
        assert_eq!(
            common("**/Cargo.toml", "crates/*/Cargo.toml").as_deref(),
            Some("crates/a/Cargo.toml")
        );
        assert!(common("src/a*.rs", "src/*b.rs").is_some());
        assert_eq!(common("src/*.rs", "src/git/*.rs"), None);
        assert_eq!(common("src/{a,b}.rs", "src/c.rs"), None);
        assert_eq!(common("docs/**", "src/**"), None);
        assert_eq!(common("tests/*.snap", "tests/**/*.rs"), None);
    }

    #[test]
    fn witnesses_are_valid_paths() {
        // `*/b` could match `/b` as a string, but that is not a repository path.
        assert_eq!(common("*/b", "**/b").as_deref(), Some("a/b"));
        // Hidden directories are used only when nothing else works.
        assert_eq!(common(".github/**", "**/*.yml").as_deref(), Some(".github/a.yml"));
        assert_eq!(common("a/*/b", "a/./b"), None);
    }

    #[test]
    fn matching_is_anchored_and_star_stops_at_slash() {
        let d = dfa("src/*.rs");
        assert!(d.is_match(b"src/lib.rs"));
        assert!(!d.is_match(b"src/git/lib.rs"));
        assert!(!d.is_match(b"x/src/lib.rs"));
        assert!(!d.is_match(b"src/lib.rsx"));
    }
}
