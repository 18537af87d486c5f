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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_python_names_a_test_the_same_way() {
        assert_eq!(
            test_name("test_x (pkg.mod.Class.test_x)").as_deref(),
            Some("pkg.mod.Class.test_x")
        );
        assert_eq!(test_name("test_x (pkg.mod.Class)").as_deref(), Some("pkg.mod.Class.test_x"));
        assert_eq!(
            test_name("test_x (mod.Class.test_x) (i=1)").as_deref(),
            Some("mod.Class.test_x (i=1)")
        );
        assert_eq!(test_name("no parentheses"), None);
    }

    #[test]
    fn headers_count_only_in_unittests_output() {
        let lint = "ERROR: cannot lint (config.toml)\n";
        assert!(read(&Text::new(lint), false).is_empty());
        let unittest = format!("{lint}Ran 3 tests in 0.001s\n\nFAILED (errors=1)\n");
        assert_eq!(read(&Text::new(&unittest), false).tests[0].0, "config.toml.cannot lint");
    }
}
