//! What `[land] to` needs of the remote before a run starts, checked by the preflight
//! before anything is created (check `remote`): the remote is configured and answers
//! (`git ls-remote` within `land.remote_timeout`, with the user's own git setup), and the
//! branch pull requests merge into exists there. (The pull-request command's program is
//! looked up with the project's other commands: the preflight's `program` check.)

use breeze_git::{RemoteAccess, Repo};
use breeze_protocol::{CheckOutcome, DoctorCheck};

use crate::config::{Config, LandTo};

/// A check of the landing target that holds.
fn ok(check: &str, subject: &str, message: String) -> DoctorCheck {
    found(check, subject, CheckOutcome::Ok, message, None)
}

/// A check of the landing target that stops the run, with what to do.
fn problem(check: &str, subject: &str, message: String, hint: String) -> DoctorCheck {
    found(check, subject, CheckOutcome::Problem, message, Some(hint))
}

fn found(
    check: &str,
    subject: &str,
    outcome: CheckOutcome,
    message: String,
    hint: Option<String>,
) -> DoctorCheck {
    DoctorCheck {
        check: check.to_string(),
        subject: subject.to_string(),
        outcome,
        message,
        hint,
        searched: Vec::new(),
    }
}

/// The checks `config.land` needs in `repo` (none for `to = "local"`). `env` is the
/// environment git will reach the remote with: the engine's.
pub fn landing_checks(repo: &Repo, config: &Config, env: &[(String, String)]) -> Vec<DoctorCheck> {
    let land = &config.land;
    if land.to == LandTo::Local {
        return Vec::new();
    }
    let mut checks = Vec::new();
    let target = land.target(repo.main_branch());
    let remote = target.remote.as_str();
    let access = RemoteAccess {
        env: env.to_vec(),
        timeout: land.remote_timeout,
        run_hooks: false,
        stop: None,
    };
    match repo.remote_url(remote) {
        Ok(None) => {
            let known = repo.remote_names().unwrap_or_default();
            checks.push(problem(
                "remote",
                remote,
                format!(
                    "`land.remote` is {remote:?}, but the repository has no such remote (it has: {})",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                ),
                format!(
                    "add it (`git remote add {remote} <url>`) or name one of those in [land] remote in breeze.toml"
                ),
            ));
        }
        Err(err) => checks.push(problem(
            "remote",
            remote,
            err.to_string(),
            "check the repository's configuration (`git remote -v`)".to_string(),
        )),
        Ok(Some(url)) => match repo.remote_branch_tip(&target, &access) {
            Err(err) => checks.push(problem(
                "remote",
                remote,
                err.to_string(),
                format!(
                    "make `git ls-remote {remote}` work from this shell (ssh agent, credential helper), or land locally (`[land] to = \"local\"`)"
                ),
            )),
            Ok(Some(tip)) => checks.push(ok(
                "remote",
                remote,
                format!("{remote} ({url}) answers; {target} is at {}", &tip.to_string()[..12]),
            )),
            Ok(None) if land.to == LandTo::Remote => checks.push(ok(
                "remote",
                remote,
                format!("{remote} ({url}) answers; it has no branch {}: the first landing creates it", target.branch),
            )),
            Ok(None) => checks.push(problem(
                "remote",
                remote,
                format!("{remote} ({url}) has no branch {} for pull requests to merge into", target.branch),
                format!("push it first (`git push {remote} {}`), or name the branch in [land] target_branch", target.branch),
            )),
        },
    }
    checks
}
