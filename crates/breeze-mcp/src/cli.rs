//! Runs the `breeze` command line for a tool and turns what it printed into the tool's
//! result: its output on success, its error (with hints) as a tool error otherwise.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use rmcp::model::{CallToolResult, ContentBlock};

/// The `breeze` program and the repository it works in.
#[derive(Debug, Clone)]
pub struct Breeze {
    program: PathBuf,
    repo: PathBuf,
}

/// What one `breeze` command did.
#[derive(Debug)]
pub struct Ran {
    /// Its exit code (`None`: ended by a signal).
    pub code: Option<i32>,
    /// What it printed on stdout.
    pub stdout: String,
    /// What it printed on stderr (its error and hints, when it failed).
    pub stderr: String,
}

impl Breeze {
    /// `program` (the `breeze` executable) run in `repo` (as `breeze -C repo`).
    pub fn new(program: impl Into<PathBuf>, repo: impl Into<PathBuf>) -> Breeze {
        Breeze { program: program.into(), repo: repo.into() }
    }

    /// The repository served.
    pub fn repo(&self) -> &Path {
        &self.repo
    }

    /// `breeze -C <repo> <args>`, reading nothing from stdin.
    pub fn command<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.program);
        command.arg("-C").arg(&self.repo).args(args).stdin(Stdio::null());
        command
    }

    /// Runs `breeze <args>` to its end.
    pub async fn run<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> Result<Ran, CallToolResult> {
        let output = self.command(args).output().await.map_err(|err| {
            failure(format!("error: cannot start {}: {err}", self.program.display()))
        })?;
        Ok(Ran {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        })
    }

    /// Runs `breeze <args>`: its stdout as the result, or its error as a tool error.
    pub async fn tool<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> CallToolResult {
        match self.run(args).await {
            Ok(ran) => ran.into_result(),
            Err(failed) => failed,
        }
    }
}

impl Ran {
    /// Whether the command succeeded (exit code 0).
    pub fn succeeded(&self) -> bool {
        self.code == Some(0)
    }

    /// Its stdout (and warnings) on success; its error, hints and any output as a tool
    /// error otherwise.
    pub fn into_result(self) -> CallToolResult {
        if self.succeeded() {
            let mut text = self.stdout;
            if !self.stderr.trim().is_empty() {
                text.push_str(&format!("\n{}", self.stderr.trim_end()));
            }
            return CallToolResult::success(vec![ContentBlock::text(text)]);
        }
        failure(self.failure_text())
    }

    /// The error as the command line printed it, with its exit code.
    pub fn failure_text(&self) -> String {
        let mut text = self.stderr.trim_end().to_string();
        if !self.stdout.trim().is_empty() {
            text = format!("{}\n{text}", self.stdout.trim_end());
        }
        let code = self.code.map_or("a signal".to_string(), |code| format!("exit code {code}"));
        format!("{text}\n(breeze ended with {code})")
    }
}

/// A tool error (`isError`) saying `text`.
pub fn failure(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.into())])
}
