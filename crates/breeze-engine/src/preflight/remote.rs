//! What `[land] to` needs of the remote before a run starts (check `remote`): the remote is
//! configured and answers (`git ls-remote` within `land.remote_timeout`, with the user's own
//! git setup), and the branch pull requests merge into exists there. (The pull-request
//! command's program is looked up with the project's other commands: the `program` check.)

use breeze_git::{RemoteAccess, Repo};
use breeze_protocol::CheckOutcome;

use super::found::Preflight;
use crate::config::{Config, LandTo};

impl Preflight {
    fn push_ok(&mut self, check: &str, subject: &str, message: String) {
        self.push(check, subject, CheckOutcome::Ok, message, None);
    }

    fn push_problem(&mut self, check: &str, subject: &str, message: String, hint: String) {
        self.push(check, subject, CheckOutcome::Problem, message, Some(hint));
    }
}

/// The checks `config.land` needs in `repo` (none for `to = "local"`). `env` is the
/// environment git will reach the remote with: the engine's.
pub(super) fn landing_target_checks(
    found: &mut Preflight,
    repo: &Repo,
    config: &Config,
    env: &[(String, String)],
) {
    let land = &config.land;
    if land.to == LandTo::Local {
        return;
    }
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
            found.push_problem(
                "remote",
                remote,
                format!(
                    "`land.remote` is {remote:?}, but the repository has no such remote (it has: {})",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                ),
                format!(
                    "add it (`git remote add {remote} <url>`) or name one of those in [land] remote in breeze.toml"
                ),
            );
        }
        Err(err) => found.push_problem(
            "remote",
            remote,
            err.to_string(),
            "check the repository's configuration (`git remote -v`)".to_string(),
        ),
        Ok(Some(url)) => match repo.remote_branch_tip(&target, &access) {
            Err(err) => found.push_problem(
                "remote",
                remote,
                err.to_string(),
                format!(
                    "make `git ls-remote {remote}` work from this shell (ssh agent, credential helper), or land locally (`[land] to = \"local\"`)"
                ),
            ),
            Ok(Some(tip)) => found.push_ok(
                "remote",
                remote,
                format!("{remote} ({url}) answers; {target} is at {}", &tip.to_string()[..12]),
            ),
            Ok(None) if land.to == LandTo::Remote => found.push_ok(
                "remote",
                remote,
                format!("{remote} ({url}) answers; it has no branch {}: the first landing creates it", target.branch),
            ),
            Ok(None) => found.push_problem(
                "remote",
                remote,
                format!("{remote} ({url}) has no branch {} for pull requests to merge into", target.branch),
                format!("push it first (`git push {remote} {}`), or name the branch in [land] target_branch", target.branch),
            ),
        },
    }
}
