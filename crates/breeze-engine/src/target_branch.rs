//! The branch a run lands on: the branch the checkout is on when the run starts — the one
//! its plan is read from. A plan read on `feature` never lands on `main`: `run.main_branch`
//! may name the branch, but naming another than the one checked out is refused before
//! anything is created, and so is a detached HEAD (no branch to land on). The branch is
//! recorded in the run (`run.json`'s `main_branch`): a resumed run keeps landing there.

use breeze_git::{CheckedOut, GitError, Repo};

/// Why a run cannot start on the checkout as it is, with what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Refused {
    /// What is wrong.
    pub message: String,
    /// What to do.
    pub hint: String,
}

/// Why there is no branch for a new run to land on.
#[derive(Debug, thiserror::Error)]
pub enum NoLandingBranch {
    /// The checkout's HEAD cannot be read.
    #[error(transparent)]
    Git(#[from] GitError),
    /// The checkout is on no branch, or on another than `run.main_branch` names.
    #[error(transparent)]
    Refused(#[from] Refused),
}

/// The repository at `root` opened on the branch a run started there would land on (see
/// [`landing_branch`]; the default branch when the checkout decides none), for looking at
/// what a run would see — `breeze plan`'s shared files and tasks already landed. `None`
/// when it cannot be opened.
pub fn open_on_landing_branch(root: &std::path::Path, configured: &str) -> Option<Repo> {
    let repo = Repo::open(root).ok()?;
    match landing_branch(&repo, configured) {
        Ok(branch) if branch != repo.main_branch() => {
            let options =
                breeze_git::OpenOptions { main_branch: Some(branch), ..Default::default() };
            Repo::open_with(repo.workdir(), &options).ok()
        }
        _ => Some(repo),
    }
}

/// The branch a new run of `repo` lands on, `configured` being `run.main_branch` ("" for the
/// branch the checkout is on). Err: a detached HEAD, or `configured` names another branch
/// than the checked-out one.
pub fn landing_branch(repo: &Repo, configured: &str) -> Result<String, NoLandingBranch> {
    let checked_out = repo.checked_out()?;
    Ok(decide(&checked_out, configured)?)
}

/// [`landing_branch`] once the checkout's HEAD is known.
pub fn decide(checked_out: &CheckedOut, configured: &str) -> Result<String, Refused> {
    match checked_out {
        CheckedOut::Detached(at) => {
            let at = at.map(|oid| format!(" at {}", &oid.to_string()[..7])).unwrap_or_default();
            Err(Refused {
                message: format!(
                    "the checkout's HEAD is detached{at}: a run lands its work on the branch it starts from, and its plan is read there"
                ),
                hint: "check out the branch the work should land on (`git switch main`), then start the run again".into(),
            })
        }
        CheckedOut::Branch(branch) if configured.is_empty() || configured == branch => {
            Ok(branch.clone())
        }
        CheckedOut::Branch(branch) => Err(Refused {
            message: format!(
                "run.main_branch in breeze.toml is {configured:?} but the checkout is on {branch:?}: the plan would be read from {branch} and its work land on {configured}"
            ),
            hint: format!(
                "switch to {configured} (`git switch {configured}`) to land there, or set run.main_branch = {branch:?} — or leave it empty to land on the branch the checkout is on"
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_lands_on_the_branch_it_starts_from() {
        let on = |branch: &str| CheckedOut::Branch(branch.into());
        assert_eq!(decide(&on("feature"), ""), Ok("feature".into()));
        assert_eq!(decide(&on("main"), "main"), Ok("main".into()));
        let refused = decide(&on("feature"), "main").unwrap_err();
        assert!(refused.message.contains("\"main\"") && refused.message.contains("\"feature\""));
        assert!(refused.hint.contains("git switch main"), "{}", refused.hint);
    }

    #[test]
    fn a_detached_head_is_refused_with_what_to_do() {
        let oid = breeze_git::Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap();
        let refused = decide(&CheckedOut::Detached(Some(oid)), "").unwrap_err();
        assert!(refused.message.contains("detached at 0123456"), "{}", refused.message);
        assert!(refused.hint.contains("git switch"), "{}", refused.hint);
    }
}
