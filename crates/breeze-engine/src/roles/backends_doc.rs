//! Keeps docs/BACKENDS.md true: every command line it shows is the one
//! [`agent::agent_call`] and `breeze_agents::command_line` build, every `toml` example in it
//! loads, and the environment it describes is the one roles get.
//!
//! A block is checked when an HTML comment names the call just above its fence:
//!
//! ````text
//! <!-- argv: codex worker confined resume model=gpt-5 args=-c,model_provider=x budget=2.5 -->
//! ```sh
//! codex exec ...
//! ```
//! ````
//!
//! `BREEZE_BLESS_DOCS=1 cargo test -p breeze-engine backends_doc` rewrites the blocks from
//! the code (then read the diff).

use std::path::{Path, PathBuf};

use breeze_protocol::Role;

use super::call::RoleCall;
use super::invocation::Invocation;
use super::{agent, definition};
use crate::backend::{AgentCli, BackendKind};
use crate::config::Config;

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/BACKENDS.md");

/// The paths the doc's command lines show.
const REPO: &str = "/home/me/app";
const WORKTREE: &str = "/home/me/.local/share/breeze/worktrees/app-3f2a9c41d0/lane-1";
const SCRATCH: &str = "/tmp/breeze-41207-Xq3v9T";
const PRIVATE_GIT: &str = "/home/me/app/.breeze/lanes/lane-1/git";

/// One `<!-- argv: ... -->` marker, parsed.
#[derive(Debug)]
struct Marker {
    /// The backend, one that runs an agent CLI.
    backend: BackendKind,
    cli: &'static AgentCli,
    role: Role,
    confined: bool,
    resume: bool,
    model: String,
    args: Vec<String>,
    /// What is left of the budget for the call (`--max-budget-usd`).
    budget: Option<f64>,
}

fn parse_marker(text: &str) -> Marker {
    let mut words = text.split_whitespace();
    let name = words.next();
    let Some((backend, cli)) = BackendKind::ALL.into_iter().find_map(|backend| {
        let cli = backend.describe().agent()?;
        (Some(backend.as_str()) == name).then_some((backend, cli))
    }) else {
        panic!("argv marker {text:?}: backend {name:?} runs no agent CLI");
    };
    let role = match words.next() {
        Some("worker") => Role::Worker,
        Some("reviewer") => Role::Reviewer,
        Some("advisor") => Role::Advisor,
        Some("scaffolder") => Role::Scaffolder,
        other => panic!("argv marker {text:?}: role {other:?}"),
    };
    let mut marker = Marker {
        backend,
        cli,
        role,
        confined: true,
        resume: false,
        model: String::new(),
        args: Vec::new(),
        budget: None,
    };
    for word in words {
        match word {
            "confined" => marker.confined = true,
            "unconfined" => marker.confined = false,
            "resume" => marker.resume = true,
            word if word.starts_with("model=") => marker.model = word["model=".len()..].into(),
            word if word.starts_with("budget=") => {
                let usd = word["budget=".len()..].parse().expect("budget=<US dollars>");
                marker.budget = Some(usd);
            }
            word if word.starts_with("args=") => {
                marker.args = word["args=".len()..].split(',').map(String::from).collect();
            }
            other => panic!("argv marker {text:?}: unknown word {other:?}"),
        }
    }
    marker
}

/// The argv breeze builds for the marker's call, from the built-in role definitions and
/// the default settings.
fn argv(marker: &Marker, repo: &Path) -> Vec<String> {
    let mut settings = Config::defaults().role(marker.role).clone();
    settings.backend = marker.backend;
    settings.model.clone_from(&marker.model);
    settings.args.clone_from(&marker.args);
    let cwd = if marker.role == Role::Scaffolder { REPO } else { WORKTREE };
    let call = RoleCall {
        role: marker.role,
        task_id: "2".into(),
        attempt: 1,
        round: 1,
        cwd: cwd.into(),
        base: String::new(),
        input: serde_json::Value::Null,
        prompt: "the prompt".into(),
        resume_session: marker.resume.then(|| marker.cli.session_id_name.to_uppercase()),
        label: "attempt-1".into(),
        resume_baseline: None,
        lane: None,
        lane_env: None,
    };
    let scratch = PathBuf::from(SCRATCH);
    let run = Invocation {
        call: &call,
        settings,
        env: Vec::new(),
        output_path: scratch.join("output.json"),
        record_path: scratch.join("record.json"),
        log_path: scratch.join("worker"),
        scratch,
        confinement: marker.confined.then(Default::default),
        network: None,
        private_git: (marker.role == Role::Worker).then(|| PathBuf::from(PRIVATE_GIT)),
        marker: "run/1".into(),
        activity: None,
        max_budget_usd: marker.budget,
    };
    let call = agent::agent_call(marker.cli.kind, repo, &[], &run);
    assert_eq!(definition::load(repo, marker.role).unwrap(), definition::builtin(marker.role));
    breeze_agents::command_line(&call)
}

/// Shell quoting, for the reader's eyes: bare when nothing needs quoting.
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./,=:@%+".contains(c));
    if plain { word.to_string() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

/// The argv as the doc shows it: the schema as a placeholder, one option per line.
fn render(marker: &Marker, argv: &[String]) -> String {
    let schema = agent::answer_kind(marker.role).map(|kind| kind.schema_version());
    let mut words: Vec<String> = Vec::new();
    let mut previous = "";
    for word in argv {
        let shown = if previous == "--json-schema" {
            format!("'<the {} JSON schema>'", schema.unwrap_or("answer"))
        } else if previous == "--output-schema" {
            let name = Path::new(word).file_name().and_then(|n| n.to_str()).unwrap_or_default();
            let hash = name.rsplit_once('-').map_or("", |(_, tail)| tail);
            let name = name.replace(hash.trim_end_matches(".json"), "<hash>");
            quote(&format!("{SCRATCH}/{name}"))
        } else {
            quote(word)
        };
        previous = word;
        words.push(shown);
    }
    let mut text = String::new();
    for (at, word) in words.iter().enumerate() {
        let option = word.starts_with("--") && !["--verbose", "--json"].contains(&word.as_str());
        let breaks = at > 2 && (option || word == "-c" || word == "resume");
        text.push_str(if at == 0 {
            ""
        } else if breaks {
            " \\\n  "
        } else {
            " "
        });
        text.push_str(word);
    }
    text
}

/// A command line with its continuations joined and its spaces collapsed.
fn normalize(text: &str) -> String {
    text.replace("\\\n", " ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The marked blocks: (marker text, byte range of the block's body).
fn marked_blocks(doc: &str) -> Vec<(String, std::ops::Range<usize>)> {
    let mut blocks = Vec::new();
    let mut from = 0;
    while let Some(at) = doc[from..].find("<!-- argv:") {
        let start = from + at;
        let end = start + doc[start..].find("-->").expect("an argv marker ends with -->");
        let marker = doc[start + "<!-- argv:".len()..end].trim().to_string();
        let after = end + 3;
        let fence = "\n```sh\n";
        assert!(doc[after..].starts_with(fence), "a ```sh block follows <!-- argv: {marker} -->");
        let body = after + fence.len();
        let body_end = if doc[body..].starts_with("```") {
            body // an empty block
        } else {
            body + doc[body..].find("\n```").expect("the block is closed")
        };
        blocks.push((marker, body..body_end));
        from = body_end;
    }
    blocks
}

#[test]
fn the_command_lines_in_backends_md_are_the_ones_breeze_builds() {
    let doc = std::fs::read_to_string(DOC).expect("docs/BACKENDS.md");
    let repo = tempfile::tempdir().unwrap();
    let blocks = marked_blocks(&doc);
    let mut covered = Vec::new();
    let mut blessed = doc.clone();
    let mut wrong = Vec::new();
    for (text, range) in blocks.iter().rev() {
        let marker = parse_marker(text);
        covered.push((marker.cli.kind, marker.role));
        let expected = render(&marker, &argv(&marker, repo.path()));
        if normalize(&doc[range.clone()]) != normalize(&expected) {
            wrong.push(format!("<!-- argv: {text} -->\n```sh\n{expected}\n```"));
        }
        if doc[range.clone()] != expected {
            let newline = if range.is_empty() { "\n" } else { "" };
            blessed.replace_range(range.clone(), &format!("{expected}{newline}"));
        }
    }
    for kind in crate::backend::agent_clis().map(|cli| cli.kind) {
        for role in [Role::Worker, Role::Reviewer, Role::Advisor, Role::Scaffolder] {
            assert!(covered.contains(&(kind, role)), "docs/BACKENDS.md shows no {kind} {role:?}");
        }
    }
    if std::env::var_os("BREEZE_BLESS_DOCS").is_some() {
        if blessed != doc {
            std::fs::write(DOC, blessed).unwrap();
        }
        return;
    }
    assert!(
        wrong.is_empty(),
        "docs/BACKENDS.md shows command lines breeze does not build; they are now \
         (BREEZE_BLESS_DOCS=1 rewrites them):\n\n{}",
        wrong.join("\n\n")
    );
}

#[test]
fn the_toml_examples_in_backends_md_load() {
    let doc = std::fs::read_to_string(DOC).expect("docs/BACKENDS.md");
    let mut examples = 0;
    for block in doc.split("```toml\n").skip(1) {
        let text = &block[..block.find("\n```").expect("the block is closed")];
        if let Err(err) = Config::parse(text, "docs/BACKENDS.md") {
            panic!("a toml example does not load: {err}\n{text}");
        }
        examples += 1;
    }
    assert!(examples >= 4, "{examples} examples");
}

#[test]
fn the_environment_backends_md_describes_is_the_one_roles_get() {
    let doc = std::fs::read_to_string(DOC).expect("docs/BACKENDS.md");
    for name in breeze_supervise::ENV_ALLOW_LIST {
        assert!(doc.contains(&format!("`{name}`")), "docs/BACKENDS.md does not name `{name}`");
    }
    for kind in crate::backend::agent_clis().map(|cli| cli.kind) {
        for pattern in kind.credential_patterns() {
            assert!(doc.contains(&format!("`{pattern}`")), "no `{pattern}` in docs/BACKENDS.md");
        }
    }
    for denied in
        breeze_agents::CLAUDE_HEADLESS_DENIED.iter().chain(breeze_agents::CLAUDE_WRITE_TOOLS)
    {
        assert!(doc.contains(denied), "docs/BACKENDS.md does not mention {denied}");
    }
}

#[test]
fn quoting_and_rendering() {
    assert_eq!(quote("Edit(//a/**)"), "'Edit(//a/**)'");
    assert_eq!(quote("it's"), r"'it'\''s'");
    assert_eq!(quote("Read,Grep"), "Read,Grep");
    assert_eq!(normalize("a \\\n  --b c\n"), "a --b c");
    let marker = parse_marker("codex reviewer unconfined model=m args=-c,x=1 budget=0.5");
    assert!(!marker.confined && marker.model == "m" && marker.args == ["-c", "x=1"]);
    assert_eq!(marker.budget, Some(0.5));
}
