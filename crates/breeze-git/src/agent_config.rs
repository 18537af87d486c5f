//! The paths an agent CLI reads as instructions, settings, hooks or tool servers. A task
//! that writes one changes what the next agent is told or runs — a hook is a command, an
//! MCP server is a program, an instruction can tell a reviewer to approve — so such a change
//! is code to review as code: the `agent-config` gate names it, and the engine keeps
//! task-written agent configuration out of the checkout a reviewer runs in.
//!
//! A place matches a path when its components appear in the path in a row, anywhere
//! (`.claude` matches `.claude/settings.json` and `web/.claude/skills/x.md`; `CLAUDE.md`
//! matches `docs/CLAUDE.md`), compared without case (a checkout on a case-insensitive
//! file system reads `.Claude/` as `.claude/`). Anywhere, because an agent can be started
//! in any folder of a repository and most of these CLIs read the folders above and below
//! it; matching too much costs the reviewer a look, matching too little a hidden hook.

/// One place agent configuration lives, with who reads it and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentConfigPlace {
    /// Path components, `/`-separated: a file name or a folder name, or a short run of them
    /// (`.github/prompts`).
    pub place: &'static str,
    /// What it is and who loads it, for the reviewer.
    pub what: &'static str,
}

const fn place(place: &'static str, what: &'static str) -> AgentConfigPlace {
    AgentConfigPlace { place, what }
}

/// Every place of agent configuration breeze knows, by CLI.
pub const AGENT_CONFIG_PLACES: &[AgentConfigPlace] = &[
    // Claude Code: project settings (permissions, hooks that run commands, MCP servers,
    // environment), subagents, slash commands, skills — and breeze's own role overrides
    // `.claude/agents/breeze-<role>.md`.
    place(".claude", "Claude Code settings, hooks, agents, commands and skills"),
    place("CLAUDE.md", "instructions Claude Code loads (in any folder it reads)"),
    place("CLAUDE.local.md", "personal instructions Claude Code loads"),
    place(".mcp.json", "MCP servers (programs) Claude Code starts for the project"),
    // Codex (and many others that read AGENTS.md): instructions per folder, their
    // overrides, project configuration (sandbox, approvals, MCP servers, hooks), skills.
    place("AGENTS.md", "instructions Codex and other agents load (in any folder)"),
    place("AGENTS.override.md", "instructions that replace AGENTS.md for Codex"),
    place(".codex", "Codex project configuration: sandbox, approvals, MCP servers, hooks"),
    place(".agents", "agent skills Codex and other CLIs load"),
    // Cursor: rules, MCP servers, hooks; the legacy rules file; what it may not read.
    place(".cursor", "Cursor rules, MCP servers and hooks"),
    place(".cursorrules", "instructions Cursor loads"),
    place(".cursorignore", "what Cursor's agent may not read"),
    // GitHub Copilot: repository instructions, path instructions, prompt files, chat
    // modes, custom agents, and the coding agent's setup steps (commands it runs).
    place(".github/copilot-instructions.md", "instructions GitHub Copilot loads"),
    place(".github/instructions", "path-specific instructions GitHub Copilot loads"),
    place(".github/prompts", "prompt files GitHub Copilot offers"),
    place(".github/chatmodes", "GitHub Copilot chat modes"),
    place(".github/agents", "GitHub Copilot custom agents"),
    place(
        ".github/workflows/copilot-setup-steps.yml",
        "commands the GitHub Copilot coding agent runs before it starts",
    ),
    // Gemini CLI: instructions per folder, settings (hooks, MCP servers, tools), commands.
    place("GEMINI.md", "instructions Gemini CLI loads (in any folder)"),
    place(".gemini", "Gemini CLI settings, MCP servers and commands"),
    // Windsurf, Cline, Aider, Continue, Roo Code: rules, configuration, modes.
    place(".windsurfrules", "instructions Windsurf loads"),
    place(".windsurf", "Windsurf rules and workflows"),
    place(".clinerules", "instructions Cline loads (a file or a folder)"),
    place(".aider.conf.yml", "Aider configuration (it can name commands to run)"),
    place(".continue", "Continue configuration, rules and MCP servers"),
    place(".roo", "Roo Code rules and MCP servers"),
    place(".roomodes", "Roo Code modes"),
    // Editors agents run in: settings (which can point at programs), tasks that run when
    // a folder opens, MCP servers, and dev containers (images and commands).
    place(".vscode/settings.json", "VS Code settings (can name programs agents run)"),
    place(".vscode/tasks.json", "VS Code tasks (can run when the folder opens)"),
    place(".vscode/mcp.json", "MCP servers (programs) VS Code agents start"),
    place(".devcontainer", "dev container definition: the image and commands it runs"),
    place(".devcontainer.json", "dev container definition: the image and commands it runs"),
    // breeze itself: the commands it runs as roles, checks, verification and hooks.
    place("breeze.toml", "breeze's configuration: role commands, checks and hooks it runs"),
];

/// Whether `path` (repository-relative, `/`-separated) is agent configuration.
pub fn is_agent_config(path: &str) -> bool {
    agent_config_place(path).is_some()
}

/// The first place of [`AGENT_CONFIG_PLACES`] that `path` lies in.
pub fn agent_config_place(path: &str) -> Option<&'static AgentConfigPlace> {
    let components: Vec<&str> = path.split('/').filter(|part| !part.is_empty()).collect();
    AGENT_CONFIG_PLACES.iter().find(|known| {
        let wanted: Vec<&str> = known.place.split('/').collect();
        components
            .windows(wanted.len())
            .any(|run| run.iter().zip(&wanted).all(|(have, want)| have.eq_ignore_ascii_case(want)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_configuration_is_found_at_any_depth_and_in_any_case() {
        for path in [
            ".claude/settings.json",
            ".claude/agents/breeze-reviewer.md",
            "CLAUDE.md",
            "docs/CLAUDE.md",
            "web/CLAUDE.local.md",
            "AGENTS.md",
            "services/api/AGENTS.override.md",
            ".codex/config.toml",
            ".mcp.json",
            ".cursor/rules/style.mdc",
            ".cursorrules",
            ".github/copilot-instructions.md",
            ".github/instructions/rust.instructions.md",
            ".github/prompts/ship.prompt.md",
            "GEMINI.md",
            ".gemini/settings.json",
            ".clinerules/01-rules.md",
            ".vscode/tasks.json",
            ".devcontainer/devcontainer.json",
            ".Claude/Settings.json",
            "breeze.toml",
        ] {
            assert!(is_agent_config(path), "{path}");
        }
    }

    #[test]
    fn other_paths_are_not_agent_configuration() {
        for path in [
            "src/claude.rs",
            "docs/CLAUDE.md.bak",
            "notes/agents.markdown",
            ".github/workflows/ci.yml",
            ".vscode/extensions.json",
            "prompts/x.md",
            "my.claude/x",
        ] {
            assert!(!is_agent_config(path), "{path}");
        }
    }

    #[test]
    fn each_place_says_what_it_holds() {
        let found = agent_config_place("a/b/.mcp.json").unwrap();
        assert_eq!(found.place, ".mcp.json");
        assert!(AGENT_CONFIG_PLACES.iter().all(|p| !p.what.is_empty() && !p.place.is_empty()));
    }
}
