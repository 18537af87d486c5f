//! How the supervisor's [`Ending`] of a process is written in the journal: a role
//! process's as a word (`process_ended`), a project command's as the supervisor's own
//! sentence (`command_ended`). The protocol crate knows nothing of the supervisor, so the
//! mapping lives here.

use breeze_protocol::{CommandEnding, ProcessEnding};
use breeze_supervise::Ending;

/// The word a `process_ended` event says for `ending`.
pub(crate) fn process_ending(ending: Ending) -> ProcessEnding {
    match ending {
        Ending::Exited(_) => ProcessEnding::Exited,
        Ending::Signaled(_) => ProcessEnding::Signaled,
        Ending::TimedOut => ProcessEnding::Timeout,
        Ending::Stalled => ProcessEnding::Stalled,
        Ending::Cancelled => ProcessEnding::Cancelled,
    }
}

/// What a `command_ended` event says for `ending`: written, the supervisor's sentence for it.
pub(crate) fn command_ending(ending: Ending) -> CommandEnding {
    match ending {
        Ending::Exited(code) => CommandEnding::Exited(code),
        Ending::Signaled(signal) => CommandEnding::Killed {
            signal,
            name: nix::sys::signal::Signal::try_from(signal).ok().map(|name| name.to_string()),
        },
        Ending::TimedOut => CommandEnding::TimedOut,
        Ending::Stalled => CommandEnding::Stalled,
        Ending::Cancelled => CommandEnding::Cancelled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commands_ending_is_journaled_in_the_supervisors_words() {
        let endings = [
            Ending::Exited(0),
            Ending::Exited(101),
            Ending::Exited(-1),
            Ending::Signaled(9),
            Ending::Signaled(15),
            Ending::Signaled(77),
            Ending::TimedOut,
            Ending::Stalled,
            Ending::Cancelled,
        ];
        for ending in endings {
            let journaled = command_ending(ending);
            assert_eq!(journaled.to_string(), ending.to_string(), "{ending:?}");
            let json = serde_json::to_string(&journaled).unwrap();
            assert_eq!(json, serde_json::to_string(&ending.to_string()).unwrap());
            assert_eq!(serde_json::from_str::<CommandEnding>(&json).unwrap(), journaled);
            assert_ne!(journaled, CommandEnding::Other(ending.to_string()), "{ending:?} is known");
        }
    }

    #[test]
    fn a_role_process_ending_is_journaled_as_the_word_earlier_versions_wrote() {
        let words = [
            (Ending::Exited(3), "exited"),
            (Ending::Signaled(9), "signaled"),
            (Ending::TimedOut, "timeout"),
            (Ending::Stalled, "stalled"),
            (Ending::Cancelled, "cancelled"),
        ];
        for (ending, word) in words {
            assert_eq!(process_ending(ending).as_str(), word, "{ending:?}");
        }
    }
}
