//! The landing commit's message: its subject and body, and the trailers that name the
//! task, the run and the review verdict (`Breeze-Task`, `Breeze-Run`, `Breeze-Review`), by
//! which a landing is found again on resume and on a branch others merge into.

/// Trailer naming the task of a landing commit.
pub const TRAILER_TASK: &str = "Breeze-Task";
/// Trailer naming the run of a landing commit.
pub const TRAILER_RUN: &str = "Breeze-Run";
/// Trailer with the review verdict of a landing commit.
pub const TRAILER_REVIEW: &str = "Breeze-Review";

/// What the `Breeze-Review` trailer of a landing says: the approving round and, when
/// breeze normalized the reviewer's verdict (a REQUEST_CHANGES with minor gaps only), what
/// the reviewer said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewTrailer {
    /// The round whose verdict approved the landed head.
    pub round: u32,
    /// The reviewer's own verdict when it differed (`REQUEST_CHANGES`).
    pub reviewer_said: Option<String>,
}

impl From<u32> for ReviewTrailer {
    fn from(round: u32) -> ReviewTrailer {
        ReviewTrailer { round, reviewer_said: None }
    }
}

impl std::fmt::Display for ReviewTrailer {
    /// `APPROVE (round 2)`, or `APPROVE (round 1; reviewer said REQUEST_CHANGES, minor gaps
    /// only; normalized by breeze)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.reviewer_said {
            None => write!(f, "APPROVE (round {})", self.round),
            Some(said) => write!(
                f,
                "APPROVE (round {}; reviewer said {said}, minor gaps only; normalized by breeze)",
                self.round
            ),
        }
    }
}

/// The landing commit message with the subject `feat: <title>` ([`landing_commit_message`]).
pub fn landing_message(
    title: &str,
    body: Option<&str>,
    task_id: &str,
    run_id: &str,
    review: impl Into<ReviewTrailer>,
) -> String {
    landing_commit_message(&format!("feat: {title}"), body, task_id, run_id, review)
}

/// The landing commit message: `subject` (its type and title, as the engine's
/// `land.message` makes it), an optional body, and the trailers `Breeze-Task`, `Breeze-Run`
/// and `Breeze-Review` ([`ReviewTrailer`]). Line breaks in the subject and ids are
/// flattened so the trailers stay parseable.
pub fn landing_commit_message(
    subject: &str,
    body: Option<&str>,
    task_id: &str,
    run_id: &str,
    review: impl Into<ReviewTrailer>,
) -> String {
    let review = review.into();
    let mut message = format!("{}\n\n", flat(subject));
    if let Some(body) = body.map(str::trim).filter(|b| !b.is_empty()) {
        message.push_str(body);
        message.push_str("\n\n");
    }
    message.push_str(&format!(
        "{TRAILER_TASK}: {}\n{TRAILER_RUN}: {}\n{TRAILER_REVIEW}: {review}\n",
        flat(task_id),
        flat(run_id)
    ));
    message
}

/// `text` on one line, its runs of white space one space.
pub(crate) fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `message`'s trailers name `task_id` and `run_id`.
pub(crate) fn trailers_name(message: &str, task_id: &str, run_id: &str) -> bool {
    let Ok(trailers) = git2::message_trailers_strs(message) else { return false };
    let (mut task_ok, mut run_ok) = (false, false);
    for (key, value) in trailers.iter() {
        if key.eq_ignore_ascii_case(TRAILER_TASK) && value.trim() == task_id.trim() {
            task_ok = true;
        }
        if key.eq_ignore_ascii_case(TRAILER_RUN) && value.trim() == run_id.trim() {
            run_ok = true;
        }
    }
    task_ok && run_ok
}

/// The tasks `message`'s trailers say landed when they name run `run_id` (none else).
pub(crate) fn tasks_landed_by(message: &str, run_id: &str) -> Vec<String> {
    let Ok(trailers) = git2::message_trailers_strs(message) else { return Vec::new() };
    let of_run = trailers
        .iter()
        .any(|(key, value)| key.eq_ignore_ascii_case(TRAILER_RUN) && value.trim() == run_id.trim());
    if !of_run {
        return Vec::new();
    }
    trailers
        .iter()
        .filter(|(key, _)| key.eq_ignore_ascii_case(TRAILER_TASK))
        .map(|(_, value)| value.trim().to_string())
        .collect()
}

/// How many commits of a branch's first-parent history a search for landings (by their
/// trailers, or by their change) reads.
pub const LANDED_SCAN_LIMIT: usize = 20_000;
