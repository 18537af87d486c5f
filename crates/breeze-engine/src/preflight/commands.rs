//! The programs of the project's commands — `worktree.setup`, `[review] checks`,
//! `land.verify`, `land.pr_command` — found on the PATH they run with, and the module of a
//! `python -m MODULE` command importable by that python.

use std::path::Path;

use breeze_protocol::CheckOutcome;

use super::found::{Preflight, join_and, push_lookup};
use super::programs;
use crate::config::Config;

/// The programs of `worktree.setup`, `[review] checks` and `land.verify`, one line per
/// program with every key naming it.
pub(super) fn program_checks(
    found: &mut Preflight,
    root: &Path,
    config: &Config,
    engine_env: &[(String, String)],
) {
    let mut commands: Vec<(String, &[String])> = Vec::new();
    if !config.worktree_setup.is_empty() {
        commands.push(("worktree.setup".into(), &config.worktree_setup));
    }
    for (index, check) in config.review_checks.iter().enumerate() {
        let key = if config.review_checks.len() == 1 {
            "review.checks".to_string()
        } else {
            format!("review.checks[{index}]")
        };
        commands.push((key, check));
    }
    if !config.verify.is_empty() {
        commands.push(("land.verify".into(), &config.verify));
    }
    if config.land.to == crate::config::LandTo::PullRequest && !config.land.pr_command.is_empty() {
        commands.push(("land.pr_command".into(), &config.land.pr_command));
    }
    let mut by_program: Vec<(String, Vec<String>)> = Vec::new();
    for (key, argv) in &commands {
        for program in programs::programs_of(argv) {
            match by_program.iter_mut().find(|(seen, _)| *seen == program) {
                Some((_, keys)) => keys.push(key.clone()),
                None => by_program.push((program, vec![key.clone()])),
            }
        }
    }
    // One probe per python and module, whichever commands run it (`python -m pytest` in
    // both `[review] checks` and `land.verify`).
    let mut modules: Vec<((String, String), Vec<String>)> = Vec::new();
    for (key, argv) in &commands {
        if let Some((python, module)) = programs::python_module_of(argv) {
            let wanted = (python.to_string(), module.to_string());
            match modules.iter_mut().find(|(seen, _)| *seen == wanted) {
                Some((_, keys)) => keys.push(key.clone()),
                None => modules.push((wanted, vec![key.clone()])),
            }
        }
    }
    let mut missing_programs = Vec::new();
    for (program, keys) in by_program {
        let lookup = programs::find(&program, root, engine_env);
        if lookup.found.is_err() {
            missing_programs.push(program);
        }
        push_lookup(found, "program", &keys.join(", "), &join_and(&keys), lookup);
    }
    // `python -m pytest` without pytest fails every check and verify, on main as in any
    // lane: found here, before a task is worked on. With a setup, which may install it in
    // each lane, it is worth knowing only.
    for ((python, module), keys) in modules {
        let key = join_and(&keys);
        if missing_programs.contains(&python)
            || programs::python_has_module(&python, &module, root, engine_env) != Some(false)
        {
            continue;
        }
        let setup = !config.worktree_setup.is_empty();
        let outcome = if setup { CheckOutcome::Warning } else { CheckOutcome::Problem };
        let also = if setup { " (unless worktree.setup installs it in each lane)" } else { "" };
        found.push(
            "program",
            keys.join(", "),
            outcome,
            format!("`{python} -m {module}` for {key}: {python} has no module {module}{also}"),
            Some(format!(
                "install it (`{python} -m pip install {module}`, or in the project's virtual environment and name that python), or change {key} in breeze.toml"
            )),
        );
    }
}
