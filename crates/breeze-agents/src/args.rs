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

/// Tools a role gets when its definition names none: reading, searching and, for the
/// roles that write, the shell (editing tools are approved by path, below).
const CLAUDE_DEFAULT_READ_TOOLS: &[&str] = &["Read", "Grep", "Glob"];

/// Arguments for `claude` (after the program name).
///
/// ```text
/// -p --output-format stream-json --verbose
/// --permission-mode dontAsk                  nothing runs unless an allow rule approves it
/// --setting-sources user                     no settings, hooks, CLAUDE.md of the worktree
/// [--model M] [--max-turns N]
/// [--max-budget-usd USD]                     what is left of the task's and the run's budget
/// [--json-schema '<schema>']                 the answer, in `structured_output`
/// [--resume <session_id>]                    a worker's fix round continues its session
/// [extra args from the config]
/// [--tools T,T,...]                          the role definition's `tools`: all it is offered
/// --allowedTools Edit(//<worktree>/**) Edit(//<scratch>/**) Read Grep Glob Bash ...
/// --disallowedTools T...
/// ```
///
/// No blanket pre-approval: a bare `Write` or `Edit` in `--allowedTools` means "for any
/// path" to Claude Code, so editing is approved only by path-scoped rules — inside the
/// worktree and the role's scratch folder, for the roles that write. Read-only roles get
/// no editing rule and [`CLAUDE_WRITE_TOOLS`] denied. The definition's other tools (Read,
/// Grep, Glob, Bash) are approved as they are; what the shell may write is the kernel's
/// business (breeze's Landlock confinement). `dontAsk` denies everything else without
/// waiting for a prompt nobody would answer. `--dangerously-skip-permissions` is never
/// used. `--setting-sources user` keeps out what a task could have written in the worktree
/// ([`AgentKind::no_project_config_args`]): only the role's home (`CLAUDE_CONFIG_DIR`)
/// configures the CLI. The prompt is not in argv: `claude -p` reads it from stdin. The tool
/// lists come last because their options take several values.
pub fn claude_args(call: &AgentCall) -> Vec<String> {
    let mut args: Vec<String> =
        ["-p", "--output-format", "stream-json", "--verbose"].map(String::from).to_vec();
    args.extend(["--permission-mode".into(), "dontAsk".into()]);
    args.extend(AgentKind::Claude.no_project_config_args().iter().map(|arg| arg.to_string()));
    if !call.model.is_empty() {
        args.extend(["--model".into(), call.model.clone()]);
    }
    if let Some(turns) = call.max_turns {
        args.extend(["--max-turns".into(), turns.to_string()]);
    }
    if let Some(usd) = call.max_budget_usd {
        args.extend(["--max-budget-usd".into(), usd_argument(usd)]);
    }
    if let Some(schema) = &call.output_schema {
        args.extend(["--json-schema".into(), claude_json_schema(schema).to_string()]);
    }
    if let Some(session) = &call.resume_session {
        args.extend(["--resume".into(), session.clone()]);
    }
    args.extend(call.extra_args.iter().cloned());

    let is_edit = |tool: &str| CLAUDE_WRITE_TOOLS.contains(&tool);
    let offered: Vec<String> =
        call.allowed_tools.iter().filter(|tool| call.writes() || !is_edit(tool)).cloned().collect();
    if !offered.is_empty() {
        args.extend(["--tools".into(), offered.join(",")]);
    }
    let mut approved: Vec<String> = Vec::new();
    if call.writes() {
        for root in [&call.cwd, &call.scratch_dir] {
            if !root.as_os_str().is_empty() {
                // `//` starts an absolute path in Claude Code's permission rules.
                approved.push(format!("Edit(/{}/**)", root.display()));
            }
        }
    }
    let defaults = CLAUDE_DEFAULT_READ_TOOLS
        .iter()
        .chain(if call.writes() { &["Bash"][..] } else { &[][..] })
        .map(|tool| (*tool).to_owned());
    let plain: Vec<String> = if offered.is_empty() {
        defaults.collect()
    } else {
        offered.iter().filter(|tool| !is_edit(tool)).cloned().collect()
    };
    approved.extend(plain);
    args.push("--allowedTools".into());
    args.extend(approved);

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

/// A dollar amount as `--max-budget-usd` takes it: at most six decimals, rounded down (a
/// cap is never passed higher than it is, beyond the float's own error), without trailing
/// zeros.
pub fn usd_argument(usd: f64) -> String {
    let micros = (usd.max(0.0) * 1e6 + 1e-6).floor() / 1e6;
    let text = format!("{micros:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
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
/// exec --json
/// --sandbox danger-full-access                     breeze confines codex itself (Landlock), or
/// --sandbox workspace-write|read-only              worker | advisor, reviewer, scaffolder,
///   -c sandbox_workspace_write.exclude_slash_tmp=true     with /tmp and $TMPDIR taken out
///   -c sandbox_workspace_write.exclude_tmpdir_env_var=true
///   -c sandbox_workspace_write.writable_roots=["<scratch>","<private git dir>"]
/// -c project_doc_max_bytes=0                       no AGENTS.md of the worktree
/// -c skills.include_instructions=false             no skills list (the worktree's included)
/// [--output-schema <file>]                         the answer (see codex_schema_path)
/// [--model M] [extra args from the config]
/// -                                                a new session, or
/// resume <thread_id> -                             a worker's fix round
/// ```
///
/// Inside breeze's own Landlock ruleset codex's sandboxes run no command at all (silently,
/// exit 0), so a confined codex runs without one: the outer ruleset is what keeps its
/// commands' writes in the lane. Unconfined, codex's `workspace-write` would also allow all
/// of `/tmp` — where a repository may live — so that is taken out and only the role's
/// scratch folder added (and a worker's private git directory, where its git writes).
/// What a task could have written in the worktree does not configure codex
/// ([`AgentKind::no_project_config_args`]); its project `.codex/config.toml` is not loaded
/// either, as long as the role's home trusts no project.
/// `-` makes codex read the prompt from stdin. Resume does not
/// remember flags, so they are all passed again, before the `resume` subcommand.
pub fn codex_args(call: &AgentCall) -> Vec<String> {
    let mut args: Vec<String> = ["exec", "--json", "--sandbox"].map(String::from).to_vec();
    if call.confined() {
        args.push("danger-full-access".into());
    } else if call.writes() {
        args.push("workspace-write".into());
        args.extend([
            "-c".into(),
            "sandbox_workspace_write.exclude_slash_tmp=true".into(),
            "-c".into(),
            "sandbox_workspace_write.exclude_tmpdir_env_var=true".into(),
        ]);
        let roots: Vec<String> = [Some(&call.scratch_dir), call.private_git.as_ref()]
            .into_iter()
            .flatten()
            .filter(|root| !root.as_os_str().is_empty())
            .map(|root| Value::String(root.display().to_string()).to_string())
            .collect();
        if !roots.is_empty() {
            let roots = roots.join(",");
            args.extend(["-c".into(), format!("sandbox_workspace_write.writable_roots=[{roots}]")]);
        }
    } else {
        args.push("read-only".into());
    }
    args.extend(AgentKind::Codex.no_project_config_args().iter().map(|arg| arg.to_string()));
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
    fn a_claude_worker_may_edit_only_its_worktree_and_scratch_and_resumes_its_session() {
        let mut worker = call(AgentKind::Claude, Role::Worker);
        worker.model = "sonnet".into();
        worker.max_turns = Some(100);
        worker.resume_session = Some("5f1c-session".into());
        worker.extra_args = vec!["--add-dir".into(), "/shared".into()];
        worker.allowed_tools =
            vec!["Read".into(), "Write".into(), "Edit".into(), "Bash".into(), "Grep".into()];
        worker.disallowed_tools = vec!["Agent".into()];
        assert_eq!(
            claude_args(&worker),
            [
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-mode",
                "dontAsk",
                "--setting-sources",
                "user",
                "--model",
                "sonnet",
                "--max-turns",
                "100",
                "--resume",
                "5f1c-session",
                "--add-dir",
                "/shared",
                "--tools",
                "Read,Write,Edit,Bash,Grep",
                "--allowedTools",
                "Edit(//wt/task-1/**)",
                "Edit(//run/scratch/**)",
                "Read",
                "Bash",
                "Grep",
                "--disallowedTools",
                "Agent",
                "AskUserQuestion",
            ]
        );
        assert_eq!(command_line(&worker)[0], "claude");
        // No bare editing tool is ever pre-approved: that would mean "any path".
        let args = claude_args(&worker);
        let approved = &args[args.iter().position(|a| a == "--allowedTools").unwrap()..];
        assert!(!approved.iter().any(|a| CLAUDE_WRITE_TOOLS.contains(&a.as_str())));
        assert!(!args.iter().any(|a| a.contains("dangerously") || a == "acceptEdits"));
    }

    #[test]
    fn a_claude_call_with_a_budget_caps_itself_and_codex_has_no_such_option() {
        let mut worker = call(AgentKind::Claude, Role::Worker);
        worker.max_turns = Some(100);
        worker.max_budget_usd = Some(1.2345678);
        let args = claude_args(&worker);
        let at = args.iter().position(|a| a == "--max-budget-usd").unwrap();
        assert_eq!(args[at - 2..at + 2], ["--max-turns", "100", "--max-budget-usd", "1.234567"]);
        let mut codex = call(AgentKind::Codex, Role::Worker);
        codex.max_budget_usd = Some(1.0);
        assert!(!codex_args(&codex).iter().any(|a| a.contains("budget")));
        assert_eq!(usd_argument(2.0), "2");
        assert_eq!(usd_argument(0.0028), "0.0028");
        assert_eq!(usd_argument(0.57), "0.57");
        assert_eq!(usd_argument(0.0000001), "0");
    }

    #[test]
    fn a_claude_role_without_a_tool_list_gets_the_defaults_approved_by_path() {
        let worker = call(AgentKind::Claude, Role::Worker);
        let args = claude_args(&worker);
        assert!(!args.contains(&"--tools".to_string()));
        let at = args.iter().position(|a| a == "--allowedTools").unwrap();
        assert_eq!(
            args[at + 1..at + 7],
            ["Edit(//wt/task-1/**)", "Edit(//run/scratch/**)", "Read", "Grep", "Glob", "Bash"]
        );
    }

    #[test]
    fn a_claude_reviewer_is_read_only_with_a_forced_schema() {
        let mut reviewer = call(AgentKind::Claude, Role::Reviewer);
        reviewer.output_schema = Some(json!({"type": "object", "required": ["verdict"]}));
        reviewer.allowed_tools = vec!["Read".into(), "Write".into(), "Grep".into(), "Glob".into()];
        reviewer.disallowed_tools = vec!["Write".into(), "Bash".into()];
        let args = claude_args(&reviewer);
        let schema: Value = serde_json::from_str(&args[9]).unwrap();
        assert_eq!(Some(schema), reviewer.output_schema);
        assert_eq!(
            args,
            [
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-mode",
                "dontAsk",
                "--setting-sources",
                "user",
                "--json-schema",
                args[9].as_str(),
                "--tools",
                "Read,Grep,Glob",
                "--allowedTools",
                "Read",
                "Grep",
                "Glob",
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
    fn a_confined_codex_worker_runs_without_its_own_sandbox_and_resumes_by_thread_id() {
        let mut worker = call(AgentKind::Codex, Role::Worker);
        worker.confinement = Some(Default::default());
        worker.model = "gpt-5.4".into();
        worker.extra_args = vec!["-c".into(), "model_provider=mock".into()];
        worker.max_turns = Some(5); // no codex equivalent
        assert_eq!(
            codex_args(&worker),
            [
                "exec",
                "--json",
                "--sandbox",
                "danger-full-access",
                "-c",
                "project_doc_max_bytes=0",
                "-c",
                "skills.include_instructions=false",
                "--model",
                "gpt-5.4",
                "-c",
                "model_provider=mock",
                "-"
            ]
        );
        worker.resume_session = Some("0199a213-81c0".into());
        assert_eq!(
            codex_args(&worker)[11..],
            ["model_provider=mock", "resume", "0199a213-81c0", "-"]
        );
        assert_eq!(codex_schema_path(&worker), None);
    }

    #[test]
    fn an_unconfined_codex_worker_keeps_its_sandbox_without_tmp() {
        let worker = call(AgentKind::Codex, Role::Worker);
        assert_eq!(
            codex_args(&worker),
            [
                "exec",
                "--json",
                "--sandbox",
                "workspace-write",
                "-c",
                "sandbox_workspace_write.exclude_slash_tmp=true",
                "-c",
                "sandbox_workspace_write.exclude_tmpdir_env_var=true",
                "-c",
                "sandbox_workspace_write.writable_roots=[\"/run/scratch\"]",
                "-c",
                "project_doc_max_bytes=0",
                "-c",
                "skills.include_instructions=false",
                "-"
            ]
        );
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
                "-c",
                "project_doc_max_bytes=0",
                "-c",
                "skills.include_instructions=false",
                "--output-schema",
                path.to_str().unwrap(),
                "-"
            ]
        );
        // Confined by breeze, its own sandbox is off (the outer ruleset is read-only).
        advisor.confinement = Some(Default::default());
        assert_eq!(codex_args(&advisor)[3], "danger-full-access");
        // Another schema gets another file.
        advisor.output_schema = Some(json!({"type": "object", "properties": {}}));
        assert_ne!(codex_schema_path(&advisor).unwrap(), path);
        // Claude takes the schema inline.
        advisor.kind = AgentKind::Claude;
        assert_eq!(codex_schema_path(&advisor), None);
    }

    #[test]
    fn the_scaffolder_is_read_only() {
        let scaffolder = call(AgentKind::Claude, Role::Scaffolder);
        let args = claude_args(&scaffolder);
        assert!(!args.iter().any(|a| a.starts_with("Edit(")), "{args:?}");
        assert!(args.contains(&"Write".to_string()), "denied: {args:?}");
        let scaffolder = call(AgentKind::Codex, Role::Scaffolder);
        assert!(codex_args(&scaffolder).contains(&"read-only".to_owned()));
    }

    #[test]
    fn state_paths_follow_the_home_and_the_overrides() {
        let env = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let claude = AgentKind::Claude.state_paths(&env(&[("HOME", "/home/u")]));
        assert_eq!(claude.dirs, [PathBuf::from("/home/u/.claude")]);
        assert_eq!(claude.files, [PathBuf::from("/home/u/.claude.json")]);
        let moved = AgentKind::Claude
            .state_paths(&env(&[("HOME", "/home/u"), ("CLAUDE_CONFIG_DIR", "/cfg/claude")]));
        assert_eq!(moved.dirs, [PathBuf::from("/cfg/claude")]);
        assert!(moved.files.is_empty());
        let codex = AgentKind::Codex.state_paths(&env(&[("HOME", "/home/u")]));
        assert_eq!(codex.dirs, [PathBuf::from("/home/u/.codex")]);
        assert!(AgentKind::Codex.state_paths(&[]).dirs.is_empty());
    }
}
