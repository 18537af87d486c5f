//! Where the time went: each task's time in each phase (work, gates, review, advisor,
//! landing, waiting), summed over its stays on the lanes and off them, and the same for
//! the whole run.

use std::collections::BTreeMap;

use super::timeline::{Phase, Timeline};

/// Milliseconds per phase, in [`Phase::ALL`] order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spent {
    by_phase: [i64; Phase::ALL.len()],
}

impl Spent {
    /// The time in `phase`.
    pub fn of(&self, phase: Phase) -> i64 {
        self.by_phase[index(phase)]
    }

    /// The time in every phase.
    pub fn total(&self) -> i64 {
        self.by_phase.iter().sum()
    }

    /// `phase`'s share of the total, in whole percent (0 when there is no time at all).
    pub fn percent(&self, phase: Phase) -> i64 {
        let total = self.total();
        if total == 0 { 0 } else { (self.of(phase) * 100 + total / 2) / total }
    }

    fn add(&mut self, phase: Phase, millis: i64) {
        self.by_phase[index(phase)] += millis.max(0);
    }
}

fn index(phase: Phase) -> usize {
    Phase::ALL.iter().position(|p| *p == phase).unwrap_or(0)
}

/// The time of the whole run and of each task (by id) that spent any.
pub fn spent(timeline: &Timeline) -> (Spent, BTreeMap<&str, Spent>) {
    let mut run = Spent::default();
    let mut tasks: BTreeMap<&str, Spent> = BTreeMap::new();
    for stay in &timeline.stays {
        let task = tasks.entry(stay.task.as_str()).or_default();
        for piece in &stay.pieces {
            task.add(piece.phase, piece.end - piece.start);
            run.add(piece.phase, piece.end - piece.start);
        }
    }
    (run, tasks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report_html::timeline::{Piece, Stay};

    fn stay(task: &str, lane: Option<u32>, pieces: &[(i64, i64, Phase)]) -> Stay {
        Stay {
            task: task.into(),
            lane,
            start: pieces[0].0,
            end: pieces[pieces.len() - 1].1,
            pieces: pieces
                .iter()
                .map(|&(start, end, phase)| Piece::new(start, end, phase))
                .collect(),
            ended: "landed".into(),
        }
    }

    #[test]
    fn each_phase_is_summed_per_task_and_for_the_run() {
        let timeline = Timeline {
            sessions: vec![(0, 10_000)],
            stays: vec![
                stay("1", Some(1), &[(0, 3_000, Phase::Work), (3_000, 4_000, Phase::Review)]),
                stay("2", Some(2), &[(0, 1_000, Phase::Waiting), (1_000, 5_000, Phase::Work)]),
                // A deferred landing off the lanes, then the landing itself.
                stay("1", None, &[(4_000, 6_000, Phase::Waiting)]),
                stay("1", Some(1), &[(6_000, 8_000, Phase::Landing)]),
            ],
            skipped: 0,
        };
        let (run, tasks) = spent(&timeline);
        assert_eq!(run.of(Phase::Work), 7_000);
        assert_eq!(run.of(Phase::Waiting), 3_000);
        assert_eq!(run.total(), 13_000);
        assert_eq!(run.percent(Phase::Work), 54);
        let first = tasks["1"];
        assert_eq!(
            Phase::ALL.map(|phase| first.of(phase)),
            [3_000, 0, 1_000, 0, 2_000, 2_000],
            "work, gates, review, advisor, landing, waiting"
        );
        assert_eq!(first.percent(Phase::Landing), 25);
        assert_eq!(Spent::default().percent(Phase::Work), 0);
    }
}
