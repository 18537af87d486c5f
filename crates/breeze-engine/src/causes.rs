//! The concrete causes the engine meets — failed gates and checks, a failed verify or
//! hook, a landing conflict — made into one [`Cause`] each (`Cause::line` shows it), and
//! the findings a failed gate sends back to the worker.

use breeze_protocol::{Cause, CauseKind, Gap, GateResult, Severity};
use breeze_supervise::{Ending, Outcome};

/// Lines of a command's output a cause keeps.
const TAIL_LINES: usize = 20;
/// Bytes of a command's output a cause keeps.
const TAIL_BYTES: usize = 2048;
/// Paths named in one gate's summary before "and N more".
const SHOWN_PATHS: usize = 3;

/// The cause of a failed set of gates: their names, what each found (its paths), and what
/// to do.
pub(crate) fn of_gates(failed: &[&GateResult]) -> Cause {
    let name = failed.iter().map(|gate| gate.id.as_str()).collect::<Vec<_>>().join(", ");
    let detail = failed.iter().map(|gate| summary(gate)).collect::<Vec<_>>().join("; ");
    let hints: Vec<String> = failed.iter().filter_map(|gate| user_hint(gate)).collect();
    let mut paths: Vec<String> = Vec::new();
    for path in failed.iter().flat_map(|gate| &gate.paths) {
        if !paths.contains(path) {
            paths.push(path.clone());
        }
    }
    Cause {
        name: Some(name),
        paths,
        hint: (!hints.is_empty()).then(|| hints.join("; ")),
        ..Cause::new(CauseKind::Gate, detail)
    }
}

/// The cause of a project command that failed (`review.checks`, `land.verify`, a hook):
/// the command, how it ended and the last lines of its output.
pub(crate) fn of_command(
    kind: CauseKind,
    argv: &[String],
    outcome: &Outcome,
    refused: Option<&str>,
) -> Cause {
    let output = format!("{}{}", outcome.stdout_tail, outcome.stderr_tail);
    let mut cause = of_ending(kind, argv, &outcome.ending, &output, refused);
    cause.headline = breeze_failures::headline(&output);
    cause
}

fn of_ending(
    kind: CauseKind,
    argv: &[String],
    ending: &Ending,
    output: &str,
    refused: Option<&str>,
) -> Cause {
    let (exit_code, detail) = match ending {
        Ending::Exited(code) => (Some(*code), format!("exited {code}")),
        other => (None, other.to_string()),
    };
    Cause {
        command: argv.to_vec(),
        exit_code,
        log_tail: tail(output),
        hint: refused.map(|hint| format!("breeze: {hint}")),
        ..Cause::new(kind, detail)
    }
}

/// The cause of a landing that does not merge onto main.
pub(crate) fn of_conflict(files: &[String]) -> Cause {
    Cause {
        paths: files.to_vec(),
        ..Cause::new(CauseKind::Conflict, format!("conflict with main in {}", files.join(", ")))
    }
}

/// `text` on one line: every run of whitespace (line breaks included) a single space.
pub(crate) fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The last lines of a command's output (at most [`TAIL_LINES`] and [`TAIL_BYTES`]). When
/// none of them names a failure and an earlier line does (a test runner's failing test,
/// then its stack and summary), the first such line comes first, then `…`: the cause line
/// shows it ([`breeze_protocol::telling_line`]).
fn tail(output: &str) -> Option<String> {
    let lines: Vec<&str> = output.trim_end().lines().collect();
    let from = lines.len().saturating_sub(TAIL_LINES);
    let kept = lines[from..].join("\n");
    let start = kept.len().saturating_sub(TAIL_BYTES);
    let start = (start..=kept.len()).find(|i| kept.is_char_boundary(*i)).unwrap_or(0);
    let kept = kept[start..].trim();
    if kept.is_empty() {
        return None;
    }
    let named = |line: &&str| breeze_protocol::names_a_failure(line);
    let earlier = if kept.lines().any(|line| named(&line)) {
        None
    } else {
        lines[..from].iter().map(|line| line.trim()).find(named)
    };
    Some(match earlier {
        Some(line) => {
            format!("{}\n…\n{kept}", breeze_protocol::last_line(line).unwrap_or_default())
        }
        None => kept.to_string(),
    })
}

/// The finding a failed gate sends back to the worker.
pub(crate) fn gate_gap(gate: &GateResult) -> Gap {
    Gap {
        severity: Severity::Major,
        location: gate.paths.first().cloned().unwrap_or_default(),
        issue: format!("gate `{}` failed: {}", gate.id, gate.detail),
        suggestion: worker_suggestion(&gate.id),
    }
}

/// What the worker should do about a failed gate.
fn worker_suggestion(gate: &str) -> String {
    if let Some(command) = gate.strip_prefix("check: ") {
        return format!("make `{command}` pass in your worktree (it runs before every review)");
    }
    match gate {
        "write-set" => "revert the changes outside the task's write set, or ask for them with status needs-scope",
        "symlink-escape" => "remove the symlink or make it point inside the repository",
        "nested-repo" => "remove the nested repository or submodule",
        "plans-markers" => "leave Plans.md status markers alone: breeze flips them when the task lands",
        "file-size" => "do not add files above the size limit (gates.max_file_size)",
        "file-type" => "remove the FIFO, socket or device node: only files, symlinks and folders can be committed",
        _ => "fix the gate failure",
    }
    .to_string()
}

/// What a gate found, in a clause that names its paths.
fn summary(gate: &GateResult) -> String {
    let (paths, one) = (shown(&gate.paths), gate.paths.len() == 1);
    let verb = |singular: &'static str, plural: &'static str| if one { singular } else { plural };
    match gate.id.as_str() {
        "write-set" => format!("{paths} {} outside the task's writes", verb("is", "are")),
        "symlink-escape" => {
            format!("{paths} {} outside the repository", verb("points", "point"))
        }
        "nested-repo" => {
            format!("{paths} {} a nested repository or submodule", verb("adds", "add"))
        }
        "plans-markers" => format!("the worker changed the status markers in {paths}"),
        "file-size" => {
            format!("{paths} {} above the size limit (`gates.max_file_size`)", verb("is", "are"))
        }
        "file-type" => {
            format!("{paths} {} not a file, symlink or folder", verb("is", "are"))
        }
        _ => first_sentence(&gate.detail),
    }
}

/// What the user can do about a gate that keeps failing.
fn user_hint(gate: &GateResult) -> Option<String> {
    let them = if gate.paths.len() == 1 { "it" } else { "them" };
    Some(match gate.id.as_str() {
        "write-set" => {
            format!("add {them} to the task's writes if the task needs {them}, or revert {them}")
        }
        "symlink-escape" => format!("remove {them}, or point {them} inside the repository"),
        "nested-repo" => "commit the files themselves, not a repository".into(),
        "plans-markers" => "breeze flips the markers when the task lands".into(),
        "file-size" => {
            format!("remove {them} or ignore {them} in .gitignore, or raise `gates.max_file_size`")
        }
        "file-type" => "only files, symlinks and folders can be committed".into(),
        _ => return None,
    })
}

/// Paths for a summary: the first few, then how many more.
fn shown(paths: &[String]) -> String {
    if paths.is_empty() {
        return "a path".into();
    }
    let mut out = paths.iter().take(SHOWN_PATHS).cloned().collect::<Vec<_>>().join(", ");
    if paths.len() > SHOWN_PATHS {
        out.push_str(&format!(" and {} more", paths.len() - SHOWN_PATHS));
    }
    out
}

/// The first sentence of a gate's detail (up to `. `), on one line.
fn first_sentence(detail: &str) -> String {
    let line = detail.lines().next().unwrap_or("");
    line.split_once(". ").map_or(line, |(first, _)| first).trim_end_matches('.').to_string()
}

/// Whether a git error after an attempt is the worker's doing (and so a failed attempt the
/// worker can fix) rather than a problem of the repository.
pub(crate) fn worker_caused(err: &breeze_git::GitError) -> bool {
    use breeze_git::GitError;
    matches!(
        err,
        GitError::HeadMoved { .. }
            | GitError::NotFromBase { .. }
            | GitError::UnresolvedConflicts { .. }
            | GitError::MidOperation { .. }
            | GitError::FilesRefused { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use breeze_protocol::GateStatus;

    #[test]
    fn a_tail_that_starts_after_the_failing_test_still_names_it() {
        // node --test: the failing test, then more than a tail of its details and summary.
        let mut output = String::from("TAP version 13\nok 1 - adds\nnot ok 2 - subtracts\n");
        for n in 0..TAIL_LINES {
            output.push_str(&format!("    at frame {n}\n"));
        }
        output.push_str("# pass 1\n# fail 1\n# duration_ms 130.98\n");
        let cause = of_ending(
            CauseKind::Check,
            &["npm".into(), "test".into()],
            &Ending::Exited(1),
            &output,
            None,
        );
        let tail = cause.log_tail.clone().unwrap();
        assert!(tail.starts_with("not ok 2 - subtracts\n…\n"), "{tail}");
        assert!(tail.ends_with("# duration_ms 130.98"), "{tail}");
        assert_eq!(cause.line(), "the check `npm test` failed (exited 1: not ok 2 - subtracts)");
        // A tail that names its failure itself is kept as it is.
        let short = of_ending(
            CauseKind::Check,
            &["make".into()],
            &Ending::Exited(2),
            "cc -c a.c\na.c:3: error: expected ';'\nmake: *** [a.o] Error 1\n",
            None,
        );
        assert_eq!(
            short.log_tail.as_deref(),
            Some("cc -c a.c\na.c:3: error: expected ';'\nmake: *** [a.o] Error 1")
        );
    }

    fn failed(id: &str, paths: &[&str]) -> GateResult {
        GateResult {
            id: id.into(),
            status: GateStatus::Failed,
            detail: format!("{id} found something. Do this"),
            paths: paths.iter().map(|p| p.to_string()).collect(),
        }
    }

    #[test]
    fn a_gate_cause_names_the_gate_its_paths_and_what_to_do() {
        let cause = of_gates(&[&failed("write-set", &["package-lock.json"])]);
        assert_eq!(
            cause.clone().times(3).line(),
            "the write-set gate failed 3 times in a row: package-lock.json is outside the task's writes (add it to the task's writes if the task needs it, or revert it)"
        );
        assert_eq!(cause.paths, ["package-lock.json"]);
        let both = of_gates(&[
            &failed("write-set", &["a", "b", "c", "d"]),
            &failed("file-size", &["big.bin"]),
        ]);
        let line = both.line();
        assert!(
            line.starts_with("the write-set, file-size gates failed: a, b, c and 1 more are outside the task's writes; big.bin is above the size limit"),
            "{line}"
        );
        assert_eq!(both.paths.len(), 5);
        assert_eq!(summary(&failed("new-gate", &[])), "new-gate found something");
    }

    #[test]
    fn a_command_cause_keeps_how_it_ended_and_the_end_of_its_output() {
        let output = format!("{}\n  1 failing\nnpm ERR! Test failed.\n", "line\n".repeat(100));
        let argv = vec!["npm".to_string(), "test".to_string()];
        let cause = of_ending(CauseKind::Verify, &argv, &Ending::Exited(1), &output, None);
        assert_eq!(cause.exit_code, Some(1));
        assert_eq!(cause.log_tail.as_deref().unwrap().lines().count(), TAIL_LINES);
        assert_eq!(
            cause.line(),
            "landing: verify failed (`npm test` exited 1: npm ERR! Test failed.)"
        );
    }
}
