//! Python's unittest: its `FAIL: test_x (module.Class.test_x)` and `ERROR: …` headers, named
//! `module.Class.test_x` whichever Python wrote them (before 3.11 the method was not in the
//! parentheses), a subtest's parameters kept (`… (i=1)`).

use super::{Found, Text};

pub(super) fn read(text: &Text<'_>, named: bool) -> Found {
    let unittest = named
        || text.any(|line| {
            (line.starts_with("Ran ") && line.contains(" test")) || line.starts_with("FAILED (")
        });
    let mut found = Found::default();
    if !unittest {
        return found;
    }
    for line in &text.lines {
        let header = line.strip_prefix("FAIL: ").or_else(|| line.strip_prefix("ERROR: "));
        if let Some(name) = header.and_then(test_name) {
            found.test(&name, line);
        }
    }
    found
}

/// `test_x (module.Class.test_x)`, `test_x (module.Class)`, `test_x (module.Class.test_x)
/// (i=1)` → `module.Class.test_x`, with ` (i=1)` when there.
fn test_name(header: &str) -> Option<String> {
    let (method, rest) = header.split_once(" (")?;
    let (id, parameters) = rest.split_once(')')?;
    let qualified = if id == method || id.ends_with(&format!(".{method}")) {
        id.to_string()
    } else {
        format!("{id}.{method}")
    };
    let parameters = parameters.trim();
    Some(if parameters.is_empty() { qualified } else { format!("{qualified} {parameters}") })
}
