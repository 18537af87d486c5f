//! `breeze demo`: a sample repository and plan, run on the scripted backend.

use std::path::{Path, PathBuf};

use crate::error::EngineError;

/// The demo plan (nine tasks: four steered to show retries, consults, review rounds and a
/// gate, one without a write set for the scaffolder to fill).
pub const DEMO_PLAN: &str = include_str!("../../../templates/demo/plan.toml");
/// The demo's `breeze.toml` (scripted backend for every role).
pub const DEMO_CONFIG: &str = include_str!("../../../templates/demo/breeze.toml");

const FILES: &[(&str, &str)] = &[
    ("README.md", "# calc\n\nA tiny calculator, built by a breeze demo team.\n"),
    ("CHANGELOG.md", "# Changelog\n\n## Unreleased\n"),
    ("src/main.rs", "fn main() {\n    println!(\"calc\");\n}\n"),
    (".gitignore", "/target\n"),
];

/// Creates the sample repository in `dir` (absent or empty) with one commit on
/// `main` holding the project, `plan.toml` and `breeze.toml`. Returns the plan path.
pub fn create_sample_repo(dir: &Path) -> Result<PathBuf, EngineError> {
    if dir.exists() {
        let mut entries = std::fs::read_dir(dir)
            .map_err(|err| EngineError::io(format!("cannot read {}", dir.display()), err))?;
        if entries.next().is_some() {
            return Err(EngineError::usage(
                format!("{} is not empty", dir.display()),
                "pass an empty or new directory to `breeze demo --dir`, or omit --dir to use a temporary one",
            ));
        }
    }
    let io = |err: std::io::Error| {
        EngineError::io(format!("cannot write the demo repository in {}", dir.display()), err)
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut files: Vec<(&str, &str)> = FILES.to_vec();
    files.push(("plan.toml", DEMO_PLAN));
    files.push(("breeze.toml", DEMO_CONFIG));
    for (path, text) in &files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(path, text).map_err(io)?;
    }
    let paths: Vec<&str> = files.iter().map(|(path, _)| *path).collect();
    breeze_git::init_with_commit(
        dir,
        "main",
        &paths,
        ("breeze demo", "demo@breeze.invalid"),
        "Initial commit: calc skeleton and breeze plan",
    )?;
    Ok(dir.join("plan.toml"))
}

/// Commits the demo plan after the scaffolder filled its write sets, so the run starts
/// from a clean checkout.
pub fn commit_plan(dir: &Path) -> Result<(), EngineError> {
    breeze_git::commit_on_head(
        dir,
        &["plan.toml"],
        ("breeze demo", "demo@breeze.invalid"),
        "Plan: write sets proposed by the scaffolder",
    )?;
    Ok(())
}
