//! The keys of a `breeze.toml` breeze does not know, each with its line and the known key
//! it is probably a typo of.

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::tables::{DEFAULT_CONFIG, inherit_worker_keys};

/// A key of a `breeze.toml` that breeze does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    /// Dotted: `run.max_worker`.
    pub key: String,
    /// Where it is written (from 1).
    pub line: usize,
    /// The known key of the same table it is probably a typo of.
    pub suggestion: Option<String>,
}

impl std::fmt::Display for UnknownKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown key {} at line {}", self.key, self.line)?;
        match &self.suggestion {
            Some(known) => write!(f, " (did you mean {known}?)"),
            None => Ok(()),
        }
    }
}

/// The keys of `text` (a `breeze.toml`) that breeze does not know; empty when there are
/// none or the text is not TOML (parsing says why then).
pub fn unknown_keys(text: &str) -> Vec<UnknownKey> {
    let (Ok(mut known), Ok(user)) = (DeTable::parse(DEFAULT_CONFIG), DeTable::parse(text)) else {
        return Vec::new();
    };
    inherit_worker_keys(known.get_mut());
    unknown_in(known.get_ref(), user.get_ref(), "", text)
}

/// Tables whose keys the user names (model names in `[budget.prices]`), not breeze: a check
/// for unknown keys does not look into them.
pub const OPEN_TABLES: &[&str] = &["budget.prices"];

/// The keys of `user` not in `known`, recursively through the tables both have but the
/// [`OPEN_TABLES`], whose keys the user names.
pub(super) fn unknown_in(
    known: &DeTable<'_>,
    user: &DeTable<'_>,
    prefix: &str,
    text: &str,
) -> Vec<UnknownKey> {
    let mut unknown = Vec::new();
    for (key, value) in user {
        let name = key.get_ref().as_ref();
        let dotted = format!("{prefix}{name}");
        match known.get(name).map(Spanned::get_ref) {
            Some(DeValue::Table(_)) if OPEN_TABLES.contains(&dotted.as_str()) => {}
            Some(DeValue::Table(known_table)) => {
                if let DeValue::Table(user_table) = value.get_ref() {
                    unknown.extend(unknown_in(
                        known_table,
                        user_table,
                        &format!("{dotted}."),
                        text,
                    ));
                }
            }
            Some(_) => {}
            None => {
                let at = key.span().start.min(text.len());
                unknown.push(UnknownKey {
                    key: dotted,
                    line: text[..at].matches('\n').count() + 1,
                    suggestion: closest(name, known.keys().map(|k| k.get_ref().as_ref())),
                });
            }
        }
    }
    unknown.sort_by_key(|key| key.line);
    unknown
}

/// The candidate `word` is most likely a typo of: within two edits, or one containing it.
fn closest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    candidates
        .map(|candidate| (edit_distance(word, candidate), candidate))
        .filter(|(distance, candidate)| {
            *distance <= 2 || (word.len() >= 4 && candidate.contains(word))
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate.to_string())
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}
