//! Telling the user what to widen when a confined project command fails: its output is
//! searched for a write the kernel refused (`Permission denied`, `EACCES`, `Read-only file
//! system`) naming a path outside what the command may write.

use std::path::Path;

use breeze_supervise::Confinement;

/// Words with which programs report a write the kernel refused.
const REFUSAL_MARKERS: [&str; 4] =
    ["Permission denied", "permission denied", "EACCES", "Read-only file system"];

/// How many lines around a refusal may name its path, when its own line names none: before
/// it in `Caused by:` chains (cargo), after it in `code`/`syscall`/`path` blocks (npm).
const REFUSAL_CONTEXT_LINES: usize = 3;

/// The hint for a confined command that failed with `output`: when the output reports a
/// refused write (`Permission denied`, `EACCES`, `Read-only file system`) naming a path
/// outside what `confinement` allows, a sentence naming those paths and `sandbox.writable`.
/// `None` when nothing in the output looks like the sandbox's doing.
pub fn sandbox_refusal_hint(output: &str, confinement: &Confinement) -> Option<String> {
    let lines: Vec<&str> = output.lines().collect();
    let mut refused: Vec<String> = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        if !REFUSAL_MARKERS.iter().any(|marker| line.contains(marker)) {
            continue;
        }
        let end = (at + REFUSAL_CONTEXT_LINES).min(lines.len() - 1);
        let context = &lines[at.saturating_sub(REFUSAL_CONTEXT_LINES)..=end];
        // The line's own paths first; the lines around it only when it names none.
        let own = absolute_paths(line);
        let candidates = if own.is_empty() {
            context.iter().flat_map(|l| absolute_paths(l)).collect()
        } else {
            own
        };
        for path in candidates {
            let allowed =
                confinement.writable().any(|allowed| Path::new(&path).starts_with(allowed));
            if !allowed && !refused.contains(&path) && refused.len() < 3 {
                refused.push(path);
            }
        }
    }
    if refused.is_empty() {
        return None;
    }
    let named: Vec<String> = refused.iter().map(|path| format!("`{path}`")).collect();
    Some(format!(
        "the sandbox refused writing {}, outside what this command may write; if it needs that, add the folder (a cache, say) to sandbox.writable in breeze.toml (`writable = [...]` under `[sandbox]`; docs/SECURITY.md)",
        named.join(", ")
    ))
}

/// The absolute paths a line of output names: words starting with `/`, without the quotes
/// and punctuation around them.
fn absolute_paths(line: &str) -> Vec<String> {
    line.split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '(' | '[' | '='))
        .map(|word| word.trim_end_matches([':', ',', ';', '.', ')', ']']))
        .filter(|word| word.starts_with('/') && word.len() > 1 && !word.starts_with("//"))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn lane() -> Confinement {
        Confinement {
            writable_dirs: vec![
                PathBuf::from("/home/u/.local/share/breeze/worktrees/repo-0123456789/lane-1"),
                PathBuf::from("/tmp/breeze-x"),
            ],
            ..Confinement::default()
        }
    }

    #[test]
    fn refusals_outside_the_confinement_are_named_with_the_setting() {
        let outputs = [
            ("touch: cannot touch '/root/.cache/x': Permission denied", "`/root/.cache/x`"),
            (
                "sh: 1: cannot create /home/u/checkout/README.md: Permission denied",
                "`/home/u/checkout/README.md`",
            ),
            (
                "npm ERR! Error: EACCES: permission denied, mkdir '/root/.npm/_cacache'",
                "`/root/.npm/_cacache`",
            ),
            (
                "PermissionError: [Errno 13] Permission denied: '/root/.cache/pip'",
                "`/root/.cache/pip`",
            ),
            (
                "error: failed to open: /root/.cargo/.package-cache\n\nCaused by:\n  Permission denied (os error 13)",
                "`/root/.cargo/.package-cache`",
            ),
            ("mkdir: cannot create directory '/srv/x': Read-only file system", "`/srv/x`"),
            (
                "npm error code EACCES\nnpm error syscall mkdir\nnpm error path /root/.npm/_cacache\nnpm error errno -13",
                "`/root/.npm/_cacache`",
            ),
        ];
        for (output, named) in outputs {
            let hint = sandbox_refusal_hint(output, &lane()).unwrap_or_else(|| panic!("{output}"));
            assert!(hint.contains(named), "{hint}");
            assert!(hint.contains("sandbox.writable in breeze.toml"), "{hint}");
        }
    }

    #[test]
    fn refusals_inside_and_ordinary_failures_get_no_hint() {
        let inside = "touch: cannot touch '/home/u/.local/share/breeze/worktrees/repo-0123456789/lane-1/a': Permission denied";
        assert_eq!(sandbox_refusal_hint(inside, &lane()), None);
        let failed_test = "test tests::adds ... FAILED\nassertion failed: /src/lib.rs:3";
        assert_eq!(sandbox_refusal_hint(failed_test, &lane()), None);
        assert_eq!(sandbox_refusal_hint("Permission denied", &lane()), None);
    }
}
