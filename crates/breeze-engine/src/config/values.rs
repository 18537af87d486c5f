//! Every value of a `breeze.toml` breeze cannot take, not only the first: `breeze doctor`
//! names each bad key. toml stops at the first value it cannot deserialize, and the checks
//! after it at the first that fails, so the file is parsed again with each refused key left
//! out (its default in its place) — at most [`MAX_VALUE_PROBLEMS`] times — and what parses
//! in the end is the configuration the other checks go on with.

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::keys::unknown_in;
use super::raw::RawConfig;
use super::settings::Config;
use super::tables::{DEFAULT_CONFIG, inherit_worker_keys, merge};

/// Most refused values named (a file with more is named up to there).
pub const MAX_VALUE_PROBLEMS: usize = 20;

/// One value breeze cannot take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueProblem {
    /// The key, dotted (`run.max_workers`), when the problem is with one.
    pub key: Option<String>,
    /// Where it is written (from 1).
    pub line: Option<usize>,
    /// What is wrong, on one line.
    pub message: String,
}

impl std::fmt::Display for ValueProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = self.line.map(|line| format!(" (line {line})")).unwrap_or_default();
        match &self.key {
            // A check's own message names its key already.
            Some(key) if self.message.contains(&format!("`{key}`")) => {
                write!(f, "{}{at}", self.message)
            }
            Some(key) => write!(f, "{key}{at}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// The values of `text` breeze cannot take, each once, and the configuration with them
/// (and any unknown key, which `unknown_keys` names) left at their defaults —
/// `None` when the file is no TOML, or a problem names no key that can be left out.
pub fn value_problems(text: &str) -> (Vec<ValueProblem>, Option<Config>) {
    let mut user = match DeTable::parse(text) {
        Ok(user) => user.into_inner(),
        Err(err) => return (vec![problem(None, text, &err.to_string())], None),
    };
    let Ok(mut known) = DeTable::parse(DEFAULT_CONFIG) else { return (Vec::new(), None) };
    inherit_worker_keys(known.get_mut());
    for unknown in unknown_in(known.get_ref(), &user, "", text) {
        let path: Vec<&str> = unknown.key.split('.').collect();
        remove(&mut user, &path);
    }
    let mut problems = Vec::new();
    while problems.len() < MAX_VALUE_PROBLEMS {
        let (message, span) = match typed_over(user.clone()) {
            Ok(config) => return (by_line(problems), Some(config)),
            Err(refused) => refused,
        };
        let path =
            span.and_then(|span| key_at(&user, span.start)).or_else(|| key_named(&user, &message));
        problems.push(problem(path.as_deref(), text, &message));
        let Some(path) = path else { return (by_line(problems), None) };
        let parts: Vec<&str> = path.iter().map(String::as_str).collect();
        if !remove(&mut user, &parts) {
            return (by_line(problems), None);
        }
    }
    (by_line(problems), None)
}

/// `problems` in the order of their lines in the file.
fn by_line(mut problems: Vec<ValueProblem>) -> Vec<ValueProblem> {
    problems.sort_by_key(|problem| problem.line.unwrap_or(usize::MAX));
    problems
}

/// The defaults with `user` laid over, deserialized and checked; a refusal with where in
/// the user's file it is, when toml says.
fn typed_over(user: DeTable<'_>) -> Result<Config, (String, Option<Range<usize>>)> {
    let mut tables = DeTable::parse(DEFAULT_CONFIG).map_err(|err| (err.to_string(), None))?;
    inherit_worker_keys(tables.get_mut());
    merge(tables.get_mut(), user);
    let deserializer = toml::de::Deserializer::from(tables);
    let raw = RawConfig::deserialize(deserializer)
        .map_err(|err| (err.message().to_string(), err.span()))?;
    raw.validate().map_err(|bad| (bad.to_string(), None))
}

/// The path of the key whose value holds byte `at` of the file. A table's span is only its
/// header, so tables are always looked into.
fn key_at(table: &DeTable<'_>, at: usize) -> Option<Vec<String>> {
    for (key, value) in table {
        let name = key.get_ref().to_string();
        if let DeValue::Table(inner) = value.get_ref()
            && let Some(mut rest) = key_at(inner, at)
        {
            rest.insert(0, name);
            return Some(rest);
        }
        let span = value.span();
        if span.start <= at && at < span.end.max(span.start + 1) {
            return Some(vec![name]);
        }
    }
    None
}

/// The first `` `a.b` `` the message names that is a key of the file.
fn key_named(table: &DeTable<'_>, message: &str) -> Option<Vec<String>> {
    message.split('`').skip(1).step_by(2).find_map(|named| {
        let path: Vec<String> = named.split('.').map(str::to_string).collect();
        let parts: Vec<&str> = path.iter().map(String::as_str).collect();
        lookup(table, &parts).then_some(path)
    })
}

/// Whether `path` is a key of `table`.
fn lookup(table: &DeTable<'_>, path: &[&str]) -> bool {
    match path {
        [] => false,
        [last] => table.contains_key(*last),
        [first, rest @ ..] => match table.get(*first).map(Spanned::get_ref) {
            Some(DeValue::Table(inner)) => lookup(inner, rest),
            _ => false,
        },
    }
}

/// Removes `path` from `table`; whether it was there.
fn remove(table: &mut DeTable<'_>, path: &[&str]) -> bool {
    match path {
        [] => false,
        [last] => table.remove(*last).is_some(),
        [first, rest @ ..] => match table.get_mut(*first).map(Spanned::get_mut) {
            Some(DeValue::Table(inner)) => remove(inner, rest),
            _ => false,
        },
    }
}

/// A problem with the key at `path` (if any): its line, and toml's message on one line.
fn problem(path: Option<&[String]>, text: &str, message: &str) -> ValueProblem {
    // toml's messages show the line between their first and last lines.
    let lines: Vec<&str> = message.lines().filter(|l| !l.trim().is_empty()).collect();
    let message = match (lines.first(), lines.last()) {
        (Some(first), Some(last)) if lines.len() > 1 && path.is_none() => {
            format!("{}: {}", first.trim(), last.trim())
        }
        (_, Some(last)) => last.trim().to_string(),
        _ => message.to_string(),
    };
    let line = path.and_then(|path| line_of(text, path));
    ValueProblem { key: path.map(|path| path.join(".")), line, message }
}

/// The line where the key at `path` is written.
fn line_of(text: &str, path: &[String]) -> Option<usize> {
    let user = DeTable::parse(text).ok()?;
    let mut table = user.get_ref();
    for (n, part) in path.iter().enumerate() {
        let (key, value) = table.get_key_value(part.as_str())?;
        if n + 1 == path.len() {
            let at = key.span().start.min(text.len());
            return Some(text[..at].matches('\n').count() + 1);
        }
        let DeValue::Table(inner) = value.get_ref() else { return None };
        table = inner;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const BAD: &str = "[run]\nmax_workers = \"three\"\n[review]\nmax_rounds = 9\n[land]\nverify = \"cargo test\"\nchangelog = \"../x\"\nremote_timeout = \"soon\"\n[roles.worker]\nstall_timeout = 5\nmodel = \"opus\"\n";

    #[test]
    fn every_bad_value_is_named_with_its_key_and_line_and_the_rest_parses() {
        let (problems, config) = value_problems(BAD);
        let named: Vec<(Option<&str>, Option<usize>)> =
            problems.iter().map(|p| (p.key.as_deref(), p.line)).collect();
        for wanted in [
            (Some("run.max_workers"), Some(2)),
            (Some("review.max_rounds"), Some(4)),
            (Some("land.verify"), Some(6)),
            (Some("land.changelog"), Some(7)),
            (Some("land.remote_timeout"), Some(8)),
            (Some("roles.worker.stall_timeout"), Some(10)),
        ] {
            assert!(named.contains(&wanted), "{wanted:?} in {problems:#?}");
        }
        assert_eq!(problems.len(), 6, "each once: {problems:#?}");
        let lines: Vec<usize> = problems.iter().filter_map(|p| p.line).collect();
        assert!(lines.is_sorted(), "in the file's order: {lines:?}");
        assert_eq!(
            problems[1].to_string(),
            "`review.max_rounds` is 9; it must be between 1 and 3 (line 4)",
            "a message naming its key is not prefixed with it again"
        );
        let config = config.expect("what is left parses");
        assert_eq!(config.worker.model, "opus", "a good value is kept");
        assert_eq!(config.max_rounds, 3, "a bad one has its default");
    }

    #[test]
    fn a_file_that_is_no_toml_is_one_problem_and_no_configuration() {
        let (problems, config) = value_problems("[run\nmax_workers = 2\n");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].key.is_none() && problems[0].message.contains("line 1"),
            "{problems:?}"
        );
        assert!(config.is_none());
        let (problems, config) = value_problems("[run]\nmax_workers = 2\n");
        assert!(problems.is_empty() && config.is_some(), "{problems:?}");
    }
}
