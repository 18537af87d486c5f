//! Task id → a name that is safe as a directory name and as a branch-name component.

/// Longest readable part of a slug (the hash suffix comes on top).
const MAX_READABLE: usize = 40;

/// Turns any task id into a slug usable in `task-<slug>` (a worktree directory) and
/// `task/<slug>` (a branch).
///
/// The slug uses only ASCII letters, digits, `.`, `_` and `-`; it never starts or ends with
/// `.` or `-`, never contains `..`, never ends in `.lock`, and is at most 49 bytes. So it can
/// never escape the worktree folder and is always a valid ref component. An id that is
/// already such a name is kept as it is (`2.1` → `2.1`); any other id keeps its readable part
/// and gets the first 8 hex digits of its SHA-1 appended, so distinct ids stay distinct
/// (`../../x` → `x-…`, `タスク 1` → `1-…`, `` → `…`).
pub fn slug(task_id: &str) -> String {
    let mut readable = String::with_capacity(task_id.len().min(MAX_READABLE));
    for ch in task_id.chars() {
        let keep = ch.is_ascii_alphanumeric() || ch == '_' || ch == '-' || ch == '.';
        let ch = if keep { ch } else { '-' };
        // Collapse runs of separators; `..` is not allowed in ref names.
        if (ch == '-' && readable.ends_with('-')) || (ch == '.' && readable.ends_with('.')) {
            continue;
        }
        readable.push(ch);
    }
    let trim = |s: &str| s.trim_matches(|c| c == '-' || c == '.').to_string();
    let mut readable = trim(&readable);
    if readable.len() > MAX_READABLE {
        readable.truncate(MAX_READABLE);
        readable = trim(&readable);
    }
    while readable.ends_with(".lock") {
        readable.truncate(readable.len() - ".lock".len());
        readable = trim(&readable);
    }
    if readable == task_id && !readable.is_empty() {
        return readable;
    }
    let hash = git2::Oid::hash_object(git2::ObjectType::Blob, task_id.as_bytes())
        .map(|oid| oid.to_string()[..8].to_string())
        // Hashing bytes in memory cannot fail; a constant keeps the slug valid regardless.
        .unwrap_or_else(|_| "00000000".to_string());
    if readable.is_empty() { hash } else { format!("{readable}-{hash}") }
}

#[cfg(test)]
mod tests {
    use super::slug;

    fn assert_safe(s: &str) {
        assert!(!s.is_empty());
        assert!(s.len() <= 49, "{s} too long");
        assert!(s.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)), "{s}");
        assert!(!s.starts_with(['.', '-']) && !s.ends_with(['.', '-']), "{s}");
        assert!(!s.contains(".."), "{s}");
        assert!(!s.ends_with(".lock"), "{s}");
        assert!(git2::Reference::is_valid_name(&format!("refs/heads/task/{s}")), "{s}");
    }

    #[test]
    fn plain_ids_are_kept() {
        for id in ["1", "2.1", "41.1.10", "auth-login", "GEO-3.1", "a_b"] {
            assert_eq!(slug(id), id);
        }
    }

    #[test]
    fn hostile_ids_become_safe_and_distinct() {
        let ids = [
            "../../x",
            "../x",
            "x/..",
            "/etc/passwd",
            "a b",
            "a  b",
            "a/b",
            "タスク 1",
            "タスク 2",
            "",
            ".",
            "..",
            "-",
            "x.lock",
            "x.lock.lock",
            "refs/heads/main",
            "a\nb",
            "@{-1}",
            "~^:?*[\\",
            &"very-long-id-".repeat(10),
        ];
        let mut seen = std::collections::BTreeSet::new();
        for id in ids {
            let s = slug(id);
            assert_safe(&s);
            assert!(seen.insert(s.clone()), "{id:?} collided as {s}");
            assert_ne!(s, id, "{id:?} must be marked lossy");
        }
        assert!(slug("../../x").starts_with("x-"));
        assert!(slug("タスク 1").starts_with("1-"));
    }
}
