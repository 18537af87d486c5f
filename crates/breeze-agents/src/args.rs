//! The command lines of the two CLIs: pure functions of an [`AgentCall`].

use std::path::PathBuf;

use serde_json::Value;

use crate::call::{AgentCall, AgentKind};

/// Claude tools that write files: denied to read-only roles whatever their definition
/// says, and watched in a worker's stream.
pub const CLAUDE_WRITE_TOOLS: &[&str] = &["Write", "Edit", "MultiEdit", "NotebookEdit"];

/// Denied to every role: nobody can answer a question in a headless run, so the agent
/// must decide (or, as a worker, ask the Advisor through its report).
pub const CLAUDE_HEADLESS_DENIED: &[&str] = &["AskUserQuestion"];

/// The full argv: the program, then [`claude_args`] or [`codex_args`].
pub fn command_line(call: &AgentCall) -> Vec<String> {
    let mut argv = vec![call.program.clone()];
    argv.extend(match call.kind {
        AgentKind::Claude => claude_args(call),
        AgentKind::Codex => codex_args(call),
    });
    argv
}

/// Arguments for `claude` (after the program name).
///
/// ```text
/// -p --output-format stream-json --verbose
/// --permission-mode acceptEdits|plan        worker, scaffolder | advisor, reviewer
/// [--model M] [--max-turns N]
/// [--json-schema '<schema>']                 advisor, reviewer: answer in `structured_output`
/// [--resume <session_id>]                    a worker's fix round continues its session
/// [extra args from the config]
/// [--allowedTools T...] --disallowedTools T...
/// ```
///
/// The prompt is not in argv: `claude -p` reads it from stdin when no prompt argument
/// is given. `--dangerously-skip-permissions` is never used (claude refuses it as root,
/// and it would lift the read-only roles' limits); `acceptEdits` lets a worker edit and
/// `plan` keeps the advisor and reviewer read-only. Read-only roles also get
/// [`CLAUDE_WRITE_TOOLS`] denied, every role gets [`CLAUDE_HEADLESS_DENIED`]. The tool
/// lists come last because their options take several values: nothing positional may
/// follow them.
pub fn claude_args(call: &AgentCall) -> Vec<String> {
    let mut args: Vec<String> =
        ["-p", "--output-format", "stream-json", "--verbose"].map(String::from).to_vec();
    args.push("--permission-mode".into());
    args.push(if call.writes() { "acceptEdits" } else { "plan" }.into());
    if !call.model.is_empty() {
        args.extend(["--model".into(), call.model.clone()]);
    }
    if let Some(turns) = call.max_turns {
        args.extend(["--max-turns".into(), turns.to_string()]);
    }
    if let Some(schema) = &call.output_schema {
        args.extend(["--json-schema".into(), claude_json_schema(schema).to_string()]);
    }
    if let Some(session) = &call.resume_session {
        args.extend(["--resume".into(), session.clone()]);
    }
    args.extend(call.extra_args.iter().cloned());
    if !call.allowed_tools.is_empty() {
        args.push("--allowedTools".into());
        args.extend(call.allowed_tools.iter().cloned());
    }
    let mut denied: Vec<String> = call.disallowed_tools.clone();
    let forced = CLAUDE_HEADLESS_DENIED.iter().chain(if call.writes() {
        &[][..]
    } else {
        CLAUDE_WRITE_TOOLS
    });
    for tool in forced {
        if !denied.iter().any(|t| t == tool) {
            denied.push((*tool).to_owned());
        }
    }
    args.push("--disallowedTools".into());
    args.extend(denied);
    args
}

/// `schema` in the form `claude --json-schema` accepts: without a root `$schema`.
///
/// Claude 2.1.332 compiles the schema with a draft-07 validator that knows no other
/// meta-schema: `"$schema": "https://json-schema.org/draft/2020-12/schema"` (what breeze's
/// generated schemas declare) makes it exit 1 before the run, with "--json-schema is not
/// a valid JSON Schema: no schema with key or ref ...". The keywords breeze's schemas use
/// (`$defs`, `anyOf`, `oneOf`, `const`, type lists) mean the same in both drafts, so
/// dropping the declaration changes nothing else.
pub fn claude_json_schema(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
    }
    schema
}

/// Arguments for `codex` (after the program name).
///
/// ```text
/// exec --json --sandbox workspace-write|read-only   worker, scaffolder | advisor, reviewer
/// [--output-schema <file>]                         advisor, reviewer (see codex_schema_path)
/// [--model M] [extra args from the config]
/// -                                                a new session, or
/// resume <thread_id> -                             a worker's fix round
/// ```
///
/// `-` makes codex read the prompt from stdin (it would otherwise append piped stdin to
/// an argv prompt). Resume does not remember flags, so they are all passed again, before
/// the `resume` subcommand where the `exec` parser takes them. The role definition's tool
/// lists and turn limit have no codex equivalent and are not passed.
pub fn codex_args(call: &AgentCall) -> Vec<String> {
    let mut args: Vec<String> = ["exec", "--json", "--sandbox"].map(String::from).to_vec();
    args.push(if call.writes() { "workspace-write" } else { "read-only" }.into());
    if let Some(path) = codex_schema_path(call) {
        args.extend(["--output-schema".into(), path.display().to_string()]);
    }
    if !call.model.is_empty() {
        args.extend(["--model".into(), call.model.clone()]);
    }
    args.extend(call.extra_args.iter().cloned());
    if let Some(thread) = &call.resume_session {
        args.extend(["resume".into(), thread.clone()]);
    }
    args.push("-".into());
    args
}

/// Where the codex `--output-schema` file goes: `<scratch_dir>/codex-<role>-schema-<hash>.json`,
/// named by a hash of the schema so that concurrent calls sharing a scratch directory
/// never see each other's half-written file. `None` without a schema (or for claude).
pub fn codex_schema_path(call: &AgentCall) -> Option<PathBuf> {
    let schema = call.output_schema.as_ref().filter(|_| call.kind == AgentKind::Codex)?;
    let hash = fnv1a(schema.to_string().as_bytes());
    Some(call.scratch_dir.join(format!("codex-{}-schema-{hash:016x}.json", call.role.as_str())))
}

/// FNV-1a, 64 bits: stable across builds, unlike `DefaultHasher`.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use breeze_protocol::Role;
    use serde_json::json;

    fn call(kind: AgentKind, role: Role) -> AgentCall {
        let mut call = AgentCall::new(kind, role, "/wt/task-1", "prompt", "/run/logs/1-worker-1");
        call.scratch_dir = "/run/scratch".into();
        call
    }

    #[test]
    fn a_claude_worker_accepts_edits_and_resumes_its_session() {
        let mut worker = call(AgentKind::Claude, Role::Worker);
        worker.model = "sonnet".into();
        worker.max_turns = Some(100);
        worker.resume_session = Some("5f1c-session".into());
        worker.extra_args = vec!["--add-dir".into(), "/shared".into()];
        worker.allowed_tools = vec!["Read".into(), "Write".into(), "Bash(git diff:*)".into()];
        worker.disallowed_tools = vec!["Agent".into()];
        assert_eq!(
            claude_args(&worker),
            [
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-mode",
                "acceptEdits",
                "--model",
                "sonnet",
                "--max-turns",
                "100",
                "--resume",
                "5f1c-session",
                "--add-dir",
                "/shared",
                "--allowedTools",
                "Read",
                "Write",
                "Bash(git diff:*)",
                "--disallowedTools",
                "Agent",
                "AskUserQuestion",
            ]
        );
        assert_eq!(command_line(&worker)[0], "claude");
    }

    #[test]
    fn a_claude_reviewer_is_read_only_with_a_forced_schema() {
        let mut reviewer = call(AgentKind::Claude, Role::Reviewer);
        reviewer.output_schema = Some(json!({"type": "object", "required": ["verdict"]}));
        reviewer.disallowed_tools = vec!["Write".into(), "Bash".into()];
        let args = claude_args(&reviewer);
        let schema: serde_json::Value = serde_json::from_str(&args[7]).unwrap();
        assert_eq!(Some(schema), reviewer.output_schema);
        assert_eq!(
            args,
            [
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-mode",
                "plan",
                "--json-schema",
                args[7].as_str(),
                "--disallowedTools",
                "Write",
                "Bash",
                "AskUserQuestion",
                "Edit",
                "MultiEdit",
                "NotebookEdit",
            ]
        );
        assert!(!args.iter().any(|a| a.contains("dangerously")));
        assert!(!args.iter().any(|a| a == "prompt"), "the prompt never goes into argv");
    }

    #[test]
    fn claude_gets_the_schema_without_its_draft_declaration() {
        // claude refuses the 2020-12 meta-schema URI; the rest of the schema is kept.
        let mut reviewer = call(AgentKind::Claude, Role::Reviewer);
        let schema = breeze_protocol::MessageKind::ReviewResult.schema().clone();
        assert!(schema.get("$schema").is_some());
        reviewer.output_schema = Some(schema.clone());
        let args = claude_args(&reviewer);
        let position = args.iter().position(|a| a == "--json-schema").unwrap();
        let passed: Value = serde_json::from_str(&args[position + 1]).unwrap();
        assert_eq!(passed.get("$schema"), None);
        let mut expected = schema;
        expected.as_object_mut().unwrap().remove("$schema");
        assert_eq!(passed, expected);
        assert_eq!(passed["$defs"], breeze_protocol::MessageKind::ReviewResult.schema()["$defs"]);
    }

    #[test]
    fn codex_workers_write_and_resume_by_thread_id() {
        let mut worker = call(AgentKind::Codex, Role::Worker);
        worker.model = "gpt-5.4".into();
        worker.extra_args = vec!["-c".into(), "model_provider=mock".into()];
        worker.max_turns = Some(5); // no codex equivalent
        assert_eq!(
            codex_args(&worker),
            [
                "exec",
                "--json",
                "--sandbox",
                "workspace-write",
                "--model",
                "gpt-5.4",
                "-c",
                "model_provider=mock",
                "-"
            ]
        );
        worker.resume_session = Some("0199a213-81c0".into());
        assert_eq!(
            codex_args(&worker)[7..],
            ["model_provider=mock", "resume", "0199a213-81c0", "-"]
        );
        assert_eq!(codex_schema_path(&worker), None);
    }

    #[test]
    fn codex_advisors_are_read_only_with_a_schema_file() {
        let mut advisor = call(AgentKind::Codex, Role::Advisor);
        advisor.output_schema = Some(json!({"type": "object"}));
        let path = codex_schema_path(&advisor).unwrap();
        assert!(path.starts_with("/run/scratch"));
        assert!(path.file_name().unwrap().to_str().unwrap().starts_with("codex-advisor-schema-"));
        assert_eq!(
            codex_args(&advisor),
            [
                "exec",
                "--json",
                "--sandbox",
                "read-only",
                "--output-schema",
                path.to_str().unwrap(),
                "-"
            ]
        );
        // Another schema gets another file.
        advisor.output_schema = Some(json!({"type": "object", "properties": {}}));
        assert_ne!(codex_schema_path(&advisor).unwrap(), path);
        // Claude takes the schema inline.
        advisor.kind = AgentKind::Claude;
        assert_eq!(codex_schema_path(&advisor), None);
    }

    #[test]
    fn the_scaffolder_writes_like_a_worker() {
        let scaffolder = call(AgentKind::Claude, Role::Scaffolder);
        assert!(claude_args(&scaffolder).contains(&"acceptEdits".to_owned()));
        let scaffolder = call(AgentKind::Codex, Role::Scaffolder);
        assert!(codex_args(&scaffolder).contains(&"workspace-write".to_owned()));
    }
}
