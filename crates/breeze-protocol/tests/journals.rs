//! Journals written by earlier versions of breeze (`tests/fixtures/journals/`) still read,
//! and every line is written back as the same JSON: the typed outcomes did not change the
//! words on disk.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use breeze_protocol::{
    AttemptOutcome, BreezeEvent, CommandEnding, EventKind, FoundBy, PersonOutcome, ProcessEnding,
    ScopeAnswer, VerifyOutcome,
};
use serde_json::Value;

fn journals() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/journals");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(".events.jsonl"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 3, "journal fixtures went missing: {files:?}");
    files
}

/// Every line of `path`, read, with the JSON it was read from.
fn lines_of(path: &Path) -> Vec<(BreezeEvent, Value)> {
    let text = std::fs::read_to_string(path).unwrap();
    let lines = text.lines().filter(|line| !line.trim().is_empty()).enumerate();
    lines
        .map(|(number, line)| {
            let event = serde_json::from_str::<BreezeEvent>(line).unwrap_or_else(|err| {
                panic!("{}:{}: does not read: {err}\n{line}", path.display(), number + 1)
            });
            (event, serde_json::from_str(line).unwrap())
        })
        .collect()
}

#[test]
fn every_line_of_an_earlier_versions_journal_reads_and_is_written_back_unchanged() {
    for path in journals() {
        for (event, written) in lines_of(&path) {
            let again = serde_json::to_value(&event).unwrap();
            assert_eq!(again, written, "{} is written back differently", path.display());
        }
    }
}

/// The words of each outcome field the journals hold.
#[derive(Default)]
struct Words {
    attempts: BTreeSet<&'static str>,
    scopes: BTreeSet<&'static str>,
    persons: BTreeSet<&'static str>,
    found_by: BTreeSet<&'static str>,
    verified: BTreeSet<&'static str>,
    processes: BTreeSet<&'static str>,
    commands: Vec<CommandEnding>,
}

impl Words {
    fn add(&mut self, event: EventKind) {
        let (words, word) = match event {
            EventKind::Attempt { outcome, .. } => (&mut self.attempts, outcome.as_str()),
            EventKind::ScopeDecided { decision, .. } => (&mut self.scopes, decision.as_str()),
            EventKind::PersonAttempt { outcome, .. } => (&mut self.persons, outcome.as_str()),
            EventKind::PullRequestMerged { found_by, .. } => {
                (&mut self.found_by, found_by.as_str())
            }
            EventKind::Verified { outcome, .. } => (&mut self.verified, outcome.as_str()),
            EventKind::ProcessEnded { outcome, .. } => (&mut self.processes, outcome.as_str()),
            EventKind::CommandEnded { outcome, .. } => return self.commands.push(outcome),
            _ => return,
        };
        words.insert(word);
    }
}

fn all_words<T: Copy>(all: &[T], word: impl Fn(T) -> &'static str) -> BTreeSet<&'static str> {
    all.iter().map(|value| word(*value)).collect()
}

#[test]
fn the_journals_hold_every_outcome_word_and_read_each_as_its_value() {
    let mut words = Words::default();
    for path in journals() {
        for (event, _) in lines_of(&path) {
            words.add(event.event);
        }
    }
    assert_eq!(words.attempts, all_words(AttemptOutcome::ALL, AttemptOutcome::as_str));
    assert_eq!(words.scopes, all_words(ScopeAnswer::ALL, ScopeAnswer::as_str));
    assert_eq!(words.persons, all_words(PersonOutcome::ALL, PersonOutcome::as_str));
    assert_eq!(words.found_by, all_words(FoundBy::ALL, FoundBy::as_str));
    assert_eq!(words.verified, all_words(VerifyOutcome::ALL, VerifyOutcome::as_str));
    assert_eq!(words.processes, all_words(ProcessEnding::ALL, ProcessEnding::as_str));
    let killed = CommandEnding::Killed { signal: 9, name: Some("SIGKILL".into()) };
    for known in [
        CommandEnding::Exited(101),
        killed,
        CommandEnding::TimedOut,
        CommandEnding::Stalled,
        CommandEnding::Cancelled,
    ] {
        assert!(words.commands.contains(&known), "{known:?} in {:?}", words.commands);
    }
    let other = CommandEnding::Other("exited 0".into());
    assert!(words.commands.contains(&other), "{:?}", words.commands);
}

#[test]
fn a_journal_line_with_an_unknown_outcome_word_is_refused() {
    let line = r#"{"schema_version":"breeze-event.v1","seq":1,"at":"2026-12-01T10:00:00.000Z","event":{"kind":"verified","tasks":[],"commit":"c","tree":"t","outcome":"skipped","known":false}}"#;
    let err = serde_json::from_str::<BreezeEvent>(line).unwrap_err();
    assert!(err.to_string().contains("unknown variant `skipped`"), "{err}");
}
