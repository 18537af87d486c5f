//! The values landing hands back — how a landing ended, what it is built on, how moving
//! main went, what following the target found — in a file of their own, so that every
//! landing mode and their callers (a task's driver, the dispatcher) share them without
//! importing one another.

use breeze_git::{GitError, Oid};
use breeze_protocol::{Cause, CauseKind, VerifyFailure};

use crate::error::EngineError;
use crate::snapshot::ObjectId;

/// How a landing attempt ended.
pub(crate) enum Landing {
    /// On the target.
    Landed { commit: ObjectId },
    /// Waits for the user's checkout or for the remote (`waits_for`: `Checkout` or
    /// `Remote`); `reason` names the file or the refusal, and what to do.
    Deferred { waits_for: CauseKind, reason: String },
    /// The change does not merge onto the target's tip.
    Conflict { files: Vec<String>, onto: ObjectId },
    /// The verify command (or a hook) failed on the merged tree: what the worker is told,
    /// and the cause.
    VerifyFailed(VerifyFailure, Box<Cause>),
    /// Published where others take it in (a pull request): it lands when the target takes
    /// it, which the run follows ([`Followed`]). The cause says where it waits.
    Published(Cause),
}

impl Landing {
    /// Waits for the user's checkout.
    pub(crate) fn waits_for_checkout(reason: String) -> Landing {
        Landing::Deferred { waits_for: CauseKind::Checkout, reason }
    }

    /// Waits for the remote.
    pub(crate) fn waits_for_remote(reason: String) -> Landing {
        Landing::Deferred { waits_for: CauseKind::Remote, reason }
    }
}

/// One try at landing on the target's tip of the moment.
pub(crate) enum Try {
    /// It ended (landed, deferred, conflict, failed check, published).
    Done(Landing),
    /// The target moved between the merge and the publishing: merge again.
    Raced,
}

/// What a landing is built on.
pub(crate) enum Onto {
    /// This commit; `expected` is where the target branch must still be when the landing
    /// is published (`None`: the remote has no such branch yet).
    Tip { onto: Oid, expected: Option<Oid> },
    /// Nothing to build: the landing ended already (found landed, or it must wait).
    Done(Landing),
}

/// A remote that cannot be reached defers the landing (other tasks go on); anything else
/// is an error.
pub(crate) fn deferral(err: EngineError) -> Result<Landing, EngineError> {
    match err {
        EngineError::Git(err @ (GitError::Remote { .. } | GitError::NoSuchRemote { .. })) => {
            Ok(Landing::waits_for_remote(err.to_string()))
        }
        other => Err(other),
    }
}

/// What a batch did with one of its tasks.
pub(crate) enum Settled {
    /// It landed, was deferred, was published or goes back to its worker.
    Landing(Landing),
    /// Not judged in this batch (after the culprit, or behind a task it conflicts with):
    /// it waits for the next one.
    Again,
}

/// What following the published landings found.
#[derive(Debug, Default)]
pub(crate) struct Followed {
    /// Tasks whose change reached the target branch, with the commit that brought it.
    pub landed: Vec<(usize, ObjectId)>,
    /// Tasks whose published landing no longer merges cleanly onto the target: landed
    /// again (rebuilt, verified, published again).
    pub again: Vec<usize>,
    /// Why the target could not be looked at (the published landings stay as they are).
    pub unreachable: Option<String>,
    /// Tasks sent back to their workers by what the forge said (a failed check, review
    /// comments): a follow-up round; their phase is `working` already.
    pub sent_back: Vec<usize>,
    /// Tasks whose follow-up rounds are used up: escalated with the cause.
    pub escalated: Vec<(usize, Cause)>,
}
