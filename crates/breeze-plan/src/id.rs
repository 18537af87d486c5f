//! Task ids and their order.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

/// A task id as written in the plan (`1.2`, `41.1.10`, `GEO-3.1`, `S78-A01`).
///
/// Ids order by their dotted parts, each part compared "naturally" (runs of digits by
/// value), so `2` < `10` and `41.1.2` < `41.1.10`; ids that compare equal that way
/// (`01` and `1`) fall back to plain byte order, so the order is total and agrees
/// with equality.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TaskId(String);

impl TaskId {
    /// Wraps an id. The planner trims ids when it reads them; this does not.
    pub fn new(id: impl Into<String>) -> Self {
        TaskId(id.into())
    }

    /// The id as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskId({:?})", self.0)
    }
}

impl From<&str> for TaskId {
    fn from(id: &str) -> Self {
        TaskId(id.to_owned())
    }
}

impl From<String> for TaskId {
    fn from(id: String) -> Self {
        TaskId(id)
    }
}

impl AsRef<str> for TaskId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialOrd for TaskId {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TaskId {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_ids(&self.0, &other.0).then_with(|| self.0.cmp(&other.0))
    }
}

/// Compares two ids by dotted parts, each part in natural order.
fn compare_ids(a: &str, b: &str) -> Ordering {
    let mut left = a.split('.');
    let mut right = b.split('.');
    loop {
        match (left.next(), right.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => match compare_natural(x, y) {
                Ordering::Equal => continue,
                unequal => return unequal,
            },
        }
    }
}

/// Natural order of one part: digit runs by numeric value, other runs by bytes, and a
/// digit run before a non-digit run.
fn compare_natural(a: &str, b: &str) -> Ordering {
    let mut left = Chunks::new(a);
    let mut right = Chunks::new(b);
    loop {
        match (left.next(), right.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let order = match (is_digits(x), is_digits(y)) {
                    (true, true) => compare_numbers(x, y),
                    (true, false) => Ordering::Less,
                    (false, true) => Ordering::Greater,
                    (false, false) => x.cmp(y),
                };
                if order != Ordering::Equal {
                    return order;
                }
            }
        }
    }
}

fn is_digits(chunk: &str) -> bool {
    chunk.bytes().next().is_some_and(|b| b.is_ascii_digit())
}

/// Compares two ASCII digit strings by value, without overflow for long runs.
fn compare_numbers(a: &str, b: &str) -> Ordering {
    let a = a.trim_start_matches('0');
    let b = b.trim_start_matches('0');
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// Splits a string into maximal runs of ASCII digits and of everything else.
struct Chunks<'a> {
    rest: &'a str,
}

impl<'a> Chunks<'a> {
    fn new(s: &'a str) -> Self {
        Chunks { rest: s }
    }
}

impl<'a> Iterator for Chunks<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let first = self.rest.bytes().next()?;
        let digits = first.is_ascii_digit();
        let end =
            self.rest.bytes().position(|b| b.is_ascii_digit() != digits).unwrap_or(self.rest.len());
        // The split point is at an ASCII/non-ASCII-digit boundary: ASCII digits are
        // single bytes, so `end` is always a char boundary.
        let (chunk, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(ids: &[&str]) -> Vec<String> {
        let mut v: Vec<TaskId> = ids.iter().map(|s| TaskId::from(*s)).collect();
        v.sort();
        v.into_iter().map(|t| t.0).collect()
    }

    #[test]
    fn numbers_order_by_value() {
        assert_eq!(sorted(&["10", "2", "1"]), ["1", "2", "10"]);
        assert_eq!(sorted(&["41.1.10", "41.1.2", "41.1"]), ["41.1", "41.1.2", "41.1.10"]);
        assert_eq!(sorted(&["5.15.0b", "5.15.1", "5.15.0"]), ["5.15.0", "5.15.0b", "5.15.1"]);
    }

    #[test]
    fn prefixed_ids_order_naturally() {
        assert_eq!(
            sorted(&["GEO-3.10", "GEO-3.2", "GEO-10.1", "H-1"]),
            ["GEO-3.2", "GEO-3.10", "GEO-10.1", "H-1"]
        );
        assert_eq!(sorted(&["S78-A02", "S78-A01", "S78-B01"]), ["S78-A01", "S78-A02", "S78-B01"]);
    }

    #[test]
    fn order_is_total_and_agrees_with_equality() {
        let a = TaskId::from("01");
        let b = TaskId::from("1");
        assert_ne!(a.cmp(&b), Ordering::Equal);
        assert_eq!(a.cmp(&a.clone()), Ordering::Equal);
        // Huge numbers do not overflow.
        assert!(TaskId::from("99999999999999999999999") > TaskId::from("9999999999999999999999"));
    }
}
