//! The closed sets of words journal events use for how something came out: an attempt's
//! outcome, the Lead's answer to a scope request, how a process ended, `land.verify`'s
//! verdict. Each is an enum whose serde form is exactly the word `events.jsonl` has always
//! held, so run files of earlier versions read as they did.
//!
//! An unknown word is an error, as an unknown event kind is: the journal's reader refuses
//! a line it cannot read (a torn last line aside) rather than guess what it meant. The one
//! exception is [`CommandEnding`], which is free text by nature: a text it does not know
//! the shape of is kept as written.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Declares an enum of journal words: each variant's serde form and its `as_str` are the
/// same literal, so the two cannot drift apart.
macro_rules! journal_words {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$variant_meta:meta])* $variant:ident = $word:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash,
            serde::Serialize, serde::Deserialize, schemars::JsonSchema,
        )]
        pub enum $name {
            $( $(#[$variant_meta])* #[serde(rename = $word)] $variant, )+
        }

        impl $name {
            /// Every value, in the order declared.
            pub const ALL: &'static [$name] = &[$(Self::$variant),+];

            /// Its word, as the journal writes it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $word, )+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

journal_words! {
    /// How a worker attempt ended (`attempt` events).
    pub enum AttemptOutcome {
        /// The worker reported its task done; the change goes to review.
        Completed = "completed",
        /// The attempt failed (no or an invalid report, a failed commit, a timeout, the
        /// worker reporting `failed`): `error` says why.
        Failed = "failed",
        /// The worker asked for the Advisor's help.
        NeedsAdvice = "needs-advice",
        /// The worker asked to write more paths than its write set.
        NeedsScope = "needs-scope",
        /// The worker escalated the task.
        Escalated = "escalated",
        /// The worker stalled: no output and no file changes for the stall timeout.
        Stalled = "stalled",
        /// A gate refused the attempt's files before anything was staged.
        SentBack = "sent-back",
        /// The worker reported completed, but its self-review did not hold.
        SelfReview = "self-review",
        /// Named by this event's documentation from the start; breeze writes `failed` for a
        /// worker that ran out of time. Read so that a journal saying it still parses.
        Timeout = "timeout",
    }
}

journal_words! {
    /// The Lead's answer to a worker's scope request (`scope_decided` events).
    pub enum ScopeAnswer {
        /// The paths were added to the task's write set.
        Granted = "granted",
        /// Other busy tasks may write the paths; granted once they are done.
        Waiting = "waiting",
        /// Refused (`reason` says why).
        Denied = "denied",
    }
}

journal_words! {
    /// What a person's attempt came to when they left a task's lane (`person_attempt`
    /// events).
    pub enum PersonOutcome {
        /// They changed the task: their commit goes to review.
        Changed = "changed",
        /// They changed nothing: the task goes on where it paused.
        Unchanged = "unchanged",
        /// What they left cannot be committed (`error` says why).
        NotCommitted = "not-committed",
    }
}

journal_words! {
    /// How a merged pull request's change was recognized on the target branch
    /// (`pull_request_merged` events).
    pub enum FoundBy {
        /// The pushed commit itself is on the branch (a merge commit, a fast-forward).
        Commit = "commit",
        /// A commit with the task's and the run's trailers.
        Trailers = "trailers",
        /// A commit with the same change to the task's files.
        PatchId = "patch-id",
    }
}

journal_words! {
    /// `land.verify`'s verdict on a commit (`verified` events).
    pub enum VerifyOutcome {
        /// It passed.
        Passed = "passed",
        /// It failed.
        Failed = "failed",
        /// It fails exactly the way main itself does, and `land.on_main_failure = "land"`.
        FailsLikeMain = "fails-like-main",
        /// It failed once and passed when run again on the same tree: flaky, not the task's.
        Flaky = "flaky",
    }
}

journal_words! {
    /// How a role process ended (`process_ended` events).
    pub enum ProcessEnding {
        /// It exited on its own (`exit_code` says with which code).
        Exited = "exited",
        /// A signal it did not get from breeze ended it (it crashed).
        Signaled = "signaled",
        /// Its wall-clock timeout expired; breeze ended it.
        Timeout = "timeout",
        /// No output and no file changes for the stall timeout; breeze ended it.
        Stalled = "stalled",
        /// breeze ended it because the run stopped.
        Cancelled = "cancelled",
    }
}

/// How one of the project's commands ended (`command_ended` events), written as the
/// sentence breeze's process supervisor says it: `exited with code 1`, `killed by signal 9
/// (SIGKILL)`, `timed out`, `stalled (no output and no file changes)`, `cancelled`.
///
/// Its serde form is that sentence. A text of none of these shapes reads as
/// [`Other`](Self::Other) and is written back unchanged, so every journal line reads and
/// keeps its words.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CommandEnding {
    /// It exited on its own with this code.
    Exited(i32),
    /// A signal ended it: its number, and its name when it has one (`SIGKILL`).
    Killed {
        /// The signal's number.
        signal: i32,
        /// Its name, when the supervisor knew it.
        name: Option<String>,
    },
    /// The wall-clock timeout expired.
    TimedOut,
    /// No output and no activity for the stall timeout.
    Stalled,
    /// The run stopped and ended it.
    Cancelled,
    /// Any other text, kept as written.
    Other(String),
}

impl CommandEnding {
    /// What `text` says: one of the known shapes when it is exactly one (written back, it
    /// gives the same text), else [`Other`](Self::Other) holding it.
    pub fn from_text(text: &str) -> CommandEnding {
        match Self::known_shape(text) {
            Some(known) if known.to_string() == text => known,
            _ => Self::Other(text.to_string()),
        }
    }

    fn known_shape(text: &str) -> Option<CommandEnding> {
        match text {
            "timed out" => return Some(Self::TimedOut),
            "stalled (no output and no file changes)" => return Some(Self::Stalled),
            "cancelled" => return Some(Self::Cancelled),
            _ => {}
        }
        if let Some(code) = text.strip_prefix("exited with code ") {
            return code.parse().ok().map(Self::Exited);
        }
        let killed = text.strip_prefix("killed by signal ")?;
        let (number, name) = match killed.split_once(" (") {
            Some((number, rest)) => (number, Some(rest.strip_suffix(')')?.to_string())),
            None => (killed, None),
        };
        Some(Self::Killed { signal: number.parse().ok()?, name })
    }

    /// Whether it exited with code 0.
    pub fn is_success(&self) -> bool {
        *self == Self::Exited(0)
    }
}

impl fmt::Display for CommandEnding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exited(code) => write!(f, "exited with code {code}"),
            Self::Killed { signal, name: Some(name) } => {
                write!(f, "killed by signal {signal} ({name})")
            }
            Self::Killed { signal, name: None } => write!(f, "killed by signal {signal}"),
            Self::TimedOut => f.write_str("timed out"),
            Self::Stalled => f.write_str("stalled (no output and no file changes)"),
            Self::Cancelled => f.write_str("cancelled"),
            Self::Other(text) => f.write_str(text),
        }
    }
}

impl Serialize for CommandEnding {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CommandEnding {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(Self::from_text(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trips<T>(value: &T, word: &str)
    where
        T: Serialize + for<'de> Deserialize<'de> + PartialEq + fmt::Debug + fmt::Display,
    {
        let json = serde_json::to_string(value).unwrap();
        assert_eq!(json, format!("\"{word}\""), "{value:?} is written as its word");
        assert_eq!(&serde_json::from_str::<T>(&json).unwrap(), value, "{word} reads back");
        assert_eq!(value.to_string(), word, "{value:?} is shown as its word");
    }

    #[test]
    fn every_attempt_outcome_is_written_read_and_shown_as_its_word() {
        let words = [
            "completed",
            "failed",
            "needs-advice",
            "needs-scope",
            "escalated",
            "stalled",
            "sent-back",
            "self-review",
            "timeout",
        ];
        assert_eq!(AttemptOutcome::ALL.len(), words.len());
        for (outcome, word) in AttemptOutcome::ALL.iter().zip(words) {
            round_trips(outcome, word);
        }
    }

    #[test]
    fn every_scope_answer_is_written_read_and_shown_as_its_word() {
        let words = ["granted", "waiting", "denied"];
        assert_eq!(ScopeAnswer::ALL.len(), words.len());
        for (answer, word) in ScopeAnswer::ALL.iter().zip(words) {
            round_trips(answer, word);
        }
    }

    #[test]
    fn every_person_outcome_is_written_read_and_shown_as_its_word() {
        let words = ["changed", "unchanged", "not-committed"];
        assert_eq!(PersonOutcome::ALL.len(), words.len());
        for (outcome, word) in PersonOutcome::ALL.iter().zip(words) {
            round_trips(outcome, word);
        }
    }

    #[test]
    fn every_found_by_is_written_read_and_shown_as_its_word() {
        let words = ["commit", "trailers", "patch-id"];
        assert_eq!(FoundBy::ALL.len(), words.len());
        for (found_by, word) in FoundBy::ALL.iter().zip(words) {
            round_trips(found_by, word);
        }
    }

    #[test]
    fn every_verify_outcome_is_written_read_and_shown_as_its_word() {
        let words = ["passed", "failed", "fails-like-main", "flaky"];
        assert_eq!(VerifyOutcome::ALL.len(), words.len());
        for (outcome, word) in VerifyOutcome::ALL.iter().zip(words) {
            round_trips(outcome, word);
        }
    }

    #[test]
    fn every_process_ending_is_written_read_and_shown_as_its_word() {
        let words = ["exited", "signaled", "timeout", "stalled", "cancelled"];
        assert_eq!(ProcessEnding::ALL.len(), words.len());
        for (ending, word) in ProcessEnding::ALL.iter().zip(words) {
            round_trips(ending, word);
        }
    }

    #[test]
    fn an_unknown_word_is_refused_like_an_unknown_event() {
        let err = serde_json::from_str::<AttemptOutcome>("\"abandoned\"").unwrap_err();
        assert!(err.to_string().contains("unknown variant `abandoned`"), "{err}");
        assert!(serde_json::from_str::<VerifyOutcome>("\"Passed\"").is_err(), "words are exact");
    }

    #[test]
    fn every_command_ending_is_written_read_and_shown_as_the_supervisors_sentence() {
        let killed = |signal, name: Option<&str>| CommandEnding::Killed {
            signal,
            name: name.map(str::to_string),
        };
        let cases = [
            (CommandEnding::Exited(0), "exited with code 0"),
            (CommandEnding::Exited(101), "exited with code 101"),
            (CommandEnding::Exited(-1), "exited with code -1"),
            (killed(9, Some("SIGKILL")), "killed by signal 9 (SIGKILL)"),
            (killed(77, None), "killed by signal 77"),
            (CommandEnding::TimedOut, "timed out"),
            (CommandEnding::Stalled, "stalled (no output and no file changes)"),
            (CommandEnding::Cancelled, "cancelled"),
        ];
        for (ending, text) in &cases {
            round_trips(ending, text);
        }
        assert!(CommandEnding::Exited(0).is_success());
        assert!(!CommandEnding::Exited(1).is_success() && !CommandEnding::TimedOut.is_success());
    }

    #[test]
    fn a_command_ending_of_no_known_shape_keeps_its_text() {
        for text in [
            "exited 0",
            "exited with code 007",
            "exited with code x",
            "killed by signal 9 (SIGKILL",
            "killed by signal nine",
            "timed out after 5m",
            "",
        ] {
            let ending: CommandEnding = serde_json::from_str(&format!("{text:?}")).unwrap();
            assert_eq!(ending, CommandEnding::Other(text.to_string()));
            assert_eq!(serde_json::to_string(&ending).unwrap(), format!("{text:?}"));
        }
    }
}
