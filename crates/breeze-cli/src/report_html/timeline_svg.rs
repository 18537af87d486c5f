//! The timeline as inline SVG: one row per lane used (and rows for deferred landings and
//! approval waits, which hold no lane), time running left to right over the run's sessions; the time
//! between two sessions (the engine stopped, then `breeze resume`) is a narrow break.

use crate::render::first_line;
use std::collections::HashMap;
use std::fmt::Write;

use super::html::esc;
use super::time::{duration, tick_label, tick_step};
use super::timeline::{Phase, Piece, SentBack, Stay, Timeline};
use super::zone::Zone;

/// Width of the drawing.
pub const WIDTH: f64 = 1200.0;
const LABEL_W: f64 = 78.0;
const RIGHT: f64 = 14.0;
const AXIS_H: f64 = 28.0;
const ROW_H: f64 = 34.0;
const BAR_Y: f64 = 6.0;
const BAR_H: f64 = 22.0;
const BREAK_W: f64 = 46.0;
/// Pixels per character of the 12px labels, a little generous.
const CHAR_W: f64 = 7.2;

/// The mark on a worker attempt that ended without a result.
pub const FAILED: &str = "#c53030";

/// The fill of a phase.
pub fn colour(phase: Phase) -> &'static str {
    match phase {
        Phase::Work => "#2b6cb0",
        Phase::Gates => "#e69f00",
        Phase::Review => "#b5489a",
        Phase::Advisor => "#0f9d76",
        Phase::Landing => "#63b3ed",
        Phase::Waiting => "url(#waiting)",
    }
}

/// One time period drawn at full scale.
struct Band {
    start: i64,
    end: i64,
    x: f64,
}

/// Time → x: the sessions side by side, the same milliseconds per pixel in each, a break
/// between two.
struct Scale {
    bands: Vec<Band>,
    px_per_ms: f64,
}

impl Scale {
    fn new(sessions: &[(i64, i64)]) -> Scale {
        let active: i64 = sessions.iter().map(|(start, end)| (end - start).max(0)).sum();
        let breaks = sessions.len().saturating_sub(1) as f64;
        let width = WIDTH - LABEL_W - RIGHT - breaks * BREAK_W;
        let px_per_ms = width / active.max(1) as f64;
        let mut x = LABEL_W;
        let mut bands = Vec::with_capacity(sessions.len());
        for &(start, end) in sessions {
            bands.push(Band { start, end: end.max(start), x });
            x += (end - start).max(0) as f64 * px_per_ms + BREAK_W;
        }
        Scale { bands, px_per_ms }
    }

    fn x(&self, at: i64) -> f64 {
        let band = self.bands.iter().rev().find(|band| band.start <= at).or(self.bands.first());
        let Some(band) = band else { return LABEL_W };
        band.x + (at.clamp(band.start, band.end) - band.start) as f64 * self.px_per_ms
    }
}

/// A row of the drawing.
struct Row {
    label: String,
    lane: Option<u32>,
}

/// The timeline SVG; `titles` maps task ids to titles for the tooltips, whose times are
/// in `zone`.
pub fn render(timeline: &Timeline, titles: &HashMap<&str, &str>, zone: &Zone) -> String {
    let Some((run_start, _)) = timeline.extent() else {
        return "<p class=\"note\">The journal has no events: nothing to draw.</p>\n".into();
    };
    let scale = Scale::new(&timeline.sessions);
    let (rows, tracks) = rows(timeline);
    let height = AXIS_H + rows.len() as f64 * ROW_H + 8.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg id=\"timeline\" class=\"timeline\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" aria-label=\"timeline of the run: lanes over time\">"
    );
    out.push_str(
        "<defs><pattern id=\"waiting\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#d9dde3\"/><rect width=\"2.2\" height=\"6\" fill=\"#9aa3ae\"/></pattern></defs>\n",
    );
    for (n, row) in rows.iter().enumerate() {
        let y = AXIS_H + n as f64 * ROW_H;
        let (class, data) = match row.lane {
            Some(lane) => ("lane-row", format!(" data-lane=\"{lane}\"")),
            None => ("deferred-row", String::new()),
        };
        let _ = writeln!(
            out,
            "<g class=\"{class}\"{data}><rect x=\"0\" y=\"{y}\" width=\"{WIDTH}\" height=\"{}\" fill=\"{}\"/><text class=\"row-label\" x=\"8\" y=\"{}\">{}</text></g>",
            ROW_H - 2.0,
            if n % 2 == 0 { "#f4f6f9" } else { "#eceff4" },
            y + BAR_Y + BAR_H / 2.0 + 4.0,
            esc(&row.label)
        );
    }
    axis(&mut out, &scale, run_start, height);
    breaks(&mut out, &scale, height);
    for stay in &timeline.stays {
        let row = match stay.lane {
            Some(lane) => rows.iter().position(|row| row.lane == Some(lane)),
            None => tracks.get(&(stay.task.as_str(), stay.start)).copied(),
        };
        if let Some(row) = row {
            let y = AXIS_H + row as f64 * ROW_H + BAR_Y;
            let title = titles.get(stay.task.as_str()).copied();
            draw_stay(&mut out, stay, &scale, y, title, zone);
            if stay.lane.is_some() {
                let within = timeline.sent_back.iter().filter(|sent| {
                    sent.task == stay.task && sent.at >= stay.start && sent.at <= stay.end
                });
                for sent in within {
                    draw_sent_back(&mut out, sent, &scale, y, zone);
                }
            }
        }
    }
    out.push_str("</svg>\n");
    out
}

/// One row per lane used, then as many rows as off-lane waits (deferred landings,
/// approvals) overlap; the row of each such wait, by (task, start).
fn rows(timeline: &Timeline) -> (Vec<Row>, HashMap<(&str, i64), usize>) {
    let mut rows: Vec<Row> = timeline
        .lanes()
        .into_iter()
        .map(|lane| Row { label: format!("lane {lane}"), lane: Some(lane) })
        .collect();
    let mut off: Vec<&Stay> = timeline.stays.iter().filter(|stay| stay.lane.is_none()).collect();
    off.sort_by_key(|stay| (stay.start, stay.end));
    let mut track_ends: Vec<i64> = Vec::new();
    let mut tracks = HashMap::new();
    for stay in off {
        let track = match track_ends.iter().position(|&end| end <= stay.start) {
            Some(track) => track,
            None => {
                track_ends.push(i64::MIN);
                track_ends.len() - 1
            }
        };
        track_ends[track] = stay.end;
        tracks.insert((stay.task.as_str(), stay.start), rows.len() + track);
    }
    for n in 0..track_ends.len() {
        let label = if n == 0 { "off lane" } else { "" };
        rows.push(Row { label: label.into(), lane: None });
    }
    (rows, tracks)
}

/// Ticks and grid lines, labelled with the time since the run started.
fn axis(out: &mut String, scale: &Scale, run_start: i64, height: f64) {
    let step = tick_step(scale.px_per_ms, 84.0);
    let _ = writeln!(out, "<g class=\"axis\">");
    for band in &scale.bands {
        let first = (band.start - run_start + step - 1).div_euclid(step) * step;
        let mut elapsed = first;
        while run_start + elapsed <= band.end {
            let x = scale.x(run_start + elapsed);
            let _ = writeln!(
                out,
                "<line x1=\"{x:.1}\" y1=\"{}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#c5ccd6\" stroke-width=\"1\"/><text class=\"tick\" x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                AXIS_H - 6.0,
                height - 8.0,
                AXIS_H - 10.0,
                tick_label(elapsed, step)
            );
            elapsed += step;
        }
    }
    out.push_str("</g>\n");
}

/// The gaps between sessions: the engine was stopped.
fn breaks(out: &mut String, scale: &Scale, height: f64) {
    for pair in scale.bands.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        let x = scale.x(before.end);
        let gap = duration(after.start - before.end);
        let _ = writeln!(
            out,
            "<g class=\"break\"><rect x=\"{:.1}\" y=\"{}\" width=\"{}\" height=\"{:.1}\" fill=\"#ffffff\" stroke=\"#9aa3ae\" stroke-dasharray=\"3 3\"><title>the engine was stopped for {gap}; breeze resume continued the run</title></rect><text class=\"break-label\" x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">resumed</text></g>",
            x + 3.0,
            AXIS_H - 4.0,
            BREAK_W - 6.0,
            height - AXIS_H - 4.0,
            x + BREAK_W / 2.0,
            AXIS_H - 10.0
        );
    }
}

/// One stay: its phases (each worker attempt apart: a white cut before a retry, a red
/// edge on one that failed), an outline, and the task id when it fits.
fn draw_stay(
    out: &mut String,
    stay: &Stay,
    scale: &Scale,
    y: f64,
    title: Option<&str>,
    zone: &Zone,
) {
    let name = stay_name(stay, title);
    let _ = writeln!(
        out,
        "<g class=\"stay\" data-task=\"{}\" data-ended=\"{}\">",
        esc(&stay.task),
        esc(&stay.ended)
    );
    let mut previous: Option<&Piece> = None;
    for piece in &stay.pieces {
        draw_piece(out, piece, previous, scale, y, &name, zone);
        previous = Some(piece);
    }
    draw_outline(out, stay, scale, y, title, zone);
    out.push_str("</g>\n");
}

/// One phase of a stay, named `name` in its tooltip; after `previous`, the stay's piece
/// before it.
fn draw_piece(
    out: &mut String,
    piece: &Piece,
    previous: Option<&Piece>,
    scale: &Scale,
    y: f64,
    name: &str,
    zone: &Zone,
) {
    let (px0, px1) = (scale.x(piece.start), scale.x(piece.end));
    let attempt = piece.attempt.map_or_else(String::new, |mark| {
        let ended = mark.shown_outcome().map(|word| format!(" ({word})")).unwrap_or_default();
        format!(", attempt {}{ended}", mark.number)
    });
    let data = piece.attempt.map_or_else(String::new, |mark| {
        let outcome =
            mark.shown_outcome().map(|o| format!(" data-outcome=\"{o}\"")).unwrap_or_default();
        format!(" data-attempt=\"{}\"{outcome}", mark.number)
    });
    let _ = writeln!(
        out,
        "<rect class=\"piece phase-{}\"{data} x=\"{px0:.1}\" y=\"{y}\" width=\"{:.1}\" height=\"{BAR_H}\" fill=\"{}\"><title>{}\n{}{attempt}: {} ({})</title></rect>",
        piece.phase.name(),
        (px1 - px0).max(1.0),
        colour(piece.phase),
        esc(name),
        piece.phase.name(),
        duration(piece.end - piece.start),
        span(zone, piece.start, piece.end)
    );
    let Some(mark) = piece.attempt else { return };
    if mark.failed() {
        let _ = writeln!(
            out,
            "<rect class=\"attempt-failed\" x=\"{px0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"3\" fill=\"{FAILED}\"/>",
            y + BAR_H - 3.0,
            (px1 - px0).max(1.0)
        );
    }
    let retry = previous.and_then(|p| p.attempt).is_some_and(|p| p.number != mark.number);
    if retry && previous.is_some_and(|p| p.end == piece.start) {
        let _ = writeln!(
            out,
            "<line class=\"attempt-cut\" x1=\"{px0:.1}\" y1=\"{y}\" x2=\"{px0:.1}\" y2=\"{}\" stroke=\"#ffffff\" stroke-width=\"2\"/>",
            y + BAR_H
        );
    }
}

/// `task 3 — Parser`: a stay's task, as its tooltips name it.
fn stay_name(stay: &Stay, title: Option<&str>) -> String {
    match title {
        Some(title) => format!("task {} — {}", stay.task, first_line(title)),
        None => format!("task {}", stay.task),
    }
}

/// A stay's outline, its tooltip saying how it ended, and its label when one fits: why
/// it ended, for a stay that ended for a reason, else the task's title.
fn draw_outline(
    out: &mut String,
    stay: &Stay,
    scale: &Scale,
    y: f64,
    title: Option<&str>,
    zone: &Zone,
) {
    let (x0, x1) = (scale.x(stay.start), scale.x(stay.end));
    let width = (x1 - x0).max(2.0);
    let ended = match &stay.why {
        Some(why) => format!("{}: {}", stay.ended, first_line(why)),
        None => stay.ended.clone(),
    };
    let _ = writeln!(
        out,
        "<rect class=\"outline\" x=\"{x0:.1}\" y=\"{y}\" width=\"{width:.1}\" height=\"{BAR_H}\" fill=\"none\" stroke=\"#1f2933\" stroke-width=\"1\"><title>{}\n{} on {}, {} ({})</title></rect>",
        esc(&stay_name(stay, title)),
        esc(&ended),
        stay.lane.map_or_else(|| "no lane".to_string(), |lane| format!("lane {lane}")),
        duration(stay.end - stay.start),
        span(zone, stay.start, stay.end)
    );
    let words = match stay.ended.as_str() {
        "escalated" | "failed" | "blocked" | "deferred" => stay.why.as_deref().or(title),
        _ => title,
    };
    if let Some(label) = fitted_label(stay, width, words.map(first_line)) {
        let _ = writeln!(
            out,
            "<text class=\"stay-label\" x=\"{:.1}\" y=\"{}\">{}</text>",
            x0 + 4.0,
            y + BAR_H / 2.0 + 4.0,
            esc(&label)
        );
    }
}

/// A send-back within a stay: a red tick at its time, its cause in the tooltip.
fn draw_sent_back(out: &mut String, sent: &SentBack, scale: &Scale, y: f64, zone: &Zone) {
    let x = scale.x(sent.at);
    let _ = writeln!(
        out,
        "<g class=\"sent-back\" data-task=\"{}\"><line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"{FAILED}\" stroke-width=\"3\"><title>task {} sent back to its worker ({} {}):\n{}</title></line></g>",
        esc(&sent.task),
        y - 3.0,
        y + BAR_H + 3.0,
        esc(&sent.task),
        zone.clock(sent.at),
        zone.offset_text(sent.at),
        esc(first_line(&sent.reason))
    );
}

/// `23:14:05.123 → 23:14:07.001 +01:00`: two instants in local time.
fn span(zone: &Zone, start: i64, end: i64) -> String {
    format!("{} → {} {}", zone.clock(start), zone.clock(end), zone.offset_text(end))
}

/// The task id, how its stay ended (`3 ✓`) and as much of its title (or of why it ended)
/// as fits `width`;
/// `None` when not even two characters fit (the tooltip still names it).
fn fitted_label(stay: &Stay, width: f64, title: Option<&str>) -> Option<String> {
    let mark = match stay.ended.as_str() {
        "landed" => " ✓",
        "escalated" | "failed" => " ✗",
        "blocked" => " ⊘",
        "deferred" => " ‖",
        "awaiting-approval" => " ?",
        _ => "",
    };
    let label = format!("{}{mark}", stay.task);
    let fits = ((width - 8.0) / CHAR_W).floor().max(0.0) as usize;
    let chars = label.chars().count();
    if chars <= fits {
        // The title too, if a few of its words fit.
        let room = fits - chars;
        match title.map(str::trim).filter(|title| !title.is_empty()) {
            Some(title) if title.chars().count() + 2 <= room => Some(format!("{label}  {title}")),
            Some(title) if room >= 10 => {
                let kept: String = title.chars().take(room - 3).collect();
                Some(format!("{label}  {}…", kept.trim_end()))
            }
            _ => Some(label),
        }
    } else if fits >= 2 {
        Some(format!("{}…", label.chars().take(fits - 1).collect::<String>()))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stay(task: &str, lane: Option<u32>, start: i64, end: i64) -> Stay {
        let pieces = vec![Piece::new(start, end, Phase::Work)];
        Stay { task: task.into(), lane, start, end, pieces, ended: "landed".into(), why: None }
    }

    #[test]
    fn the_drawing_has_a_row_per_lane_and_scales_to_the_run() {
        let timeline = Timeline {
            sessions: vec![(0, 1_000), (5_000, 6_000)],
            stays: vec![
                stay("1", Some(1), 0, 500),
                stay("2<b>", Some(3), 100, 900),
                stay("9", None, 200, 5_100),
                stay("8", None, 300, 400),
            ],
            sent_back: Vec::new(),
            skipped: 0,
        };
        let svg = render(&timeline, &HashMap::from([("2<b>", "Title <script>")]), &Zone::UTC);
        assert_eq!(svg.matches("class=\"lane-row\"").count(), 2, "{svg}");
        assert_eq!(svg.matches("class=\"deferred-row\"").count(), 2, "{svg}");
        assert!(svg.contains("data-task=\"2&lt;b&gt;\""), "{svg}");
        assert!(svg.contains("Title &lt;script&gt;") && !svg.contains("<script"), "{svg}");
        assert!(svg.contains("class=\"break\""), "{svg}");
        let scale = Scale::new(&timeline.sessions);
        assert_eq!(scale.x(0), LABEL_W);
        assert!((scale.x(6_000) - (WIDTH - RIGHT)).abs() < 0.01, "{}", scale.x(6_000));
        assert!((scale.x(3_000) - scale.x(1_000)).abs() < 0.01, "a gap takes no time");
    }

    #[test]
    fn each_attempt_is_a_bar_of_its_own_and_a_failed_one_is_marked() {
        use crate::report_html::timeline::AttemptMark;
        use breeze_protocol::AttemptOutcome::{Completed, Failed};
        let attempt = |number, outcome| Some(AttemptMark { number, outcome: Some(outcome) });
        let mut stay = stay("5", Some(1), 0, 3_000);
        stay.pieces = vec![
            Piece { attempt: attempt(1, Failed), ..Piece::new(0, 1_000, Phase::Work) },
            Piece { attempt: attempt(2, Completed), ..Piece::new(1_000, 2_000, Phase::Work) },
            Piece::new(2_000, 3_000, Phase::Review),
        ];
        let timeline =
            Timeline { sessions: vec![(0, 3_000)], stays: vec![stay], ..Timeline::default() };
        let zone = Zone::Fixed(3_600);
        let svg = render(&timeline, &HashMap::new(), &zone);
        assert_eq!(svg.matches("class=\"piece phase-work\"").count(), 2, "{svg}");
        assert!(svg.contains("data-attempt=\"1\" data-outcome=\"failed\""), "{svg}");
        assert!(
            svg.contains("work, attempt 1 (failed): 1.0 s (01:00:00.000 → 01:00:01.000 +01:00)"),
            "{svg}"
        );
        assert!(svg.contains("work, attempt 2 (completed)"), "{svg}");
        assert_eq!(svg.matches("class=\"attempt-failed\"").count(), 1, "{svg}");
        assert_eq!(
            svg.matches("class=\"attempt-cut\"").count(),
            1,
            "the retry starts apart: {svg}"
        );
    }

    #[test]
    fn a_send_back_is_a_red_tick_at_its_time_with_its_cause_in_local_time() {
        let mut escalated = stay("5", Some(1), 0, 3_000);
        escalated.ended = "escalated".into();
        escalated.why = Some("the write-set gate failed 3 times in a row: x.md".into());
        let timeline = Timeline {
            sessions: vec![(0, 3_000)],
            stays: vec![escalated],
            sent_back: vec![
                SentBack {
                    task: "5".into(),
                    at: 1_000,
                    reason: "the write-set gate failed".into(),
                },
                // Another task's, and one outside the stay: not drawn on this bar.
                SentBack { task: "6".into(), at: 1_500, reason: "x".into() },
                SentBack { task: "5".into(), at: 4_000, reason: "y".into() },
            ],
            ..Timeline::default()
        };
        let svg = render(&timeline, &HashMap::new(), &Zone::Fixed(3_600));
        assert_eq!(svg.matches("class=\"sent-back\"").count(), 1, "{svg}");
        assert!(
            svg.contains(
                "task 5 sent back to its worker (01:00:01.000 +01:00):\nthe write-set gate failed</title>"
            ),
            "{svg}"
        );
        assert!(
            svg.contains("escalated: the write-set gate failed 3 times in a row: x.md on lane 1"),
            "the bar says why it ended: {svg}"
        );
        assert!(
            svg.contains(">5 ✗  the write-set gate failed 3 times in a row: x.md</text>"),
            "{svg}"
        );
    }

    #[test]
    fn labels_are_cut_to_their_stay() {
        let short = stay("task-with-a-long-id", Some(1), 0, 10);
        assert_eq!(fitted_label(&short, 200.0, None).as_deref(), Some("task-with-a-long-id ✓"));
        assert_eq!(fitted_label(&short, 40.0, Some("Parse")).as_deref(), Some("tas…"));
        assert_eq!(fitted_label(&short, 12.0, None), None);
        let titled = stay("7", Some(1), 0, 10);
        assert_eq!(fitted_label(&titled, 120.0, Some("Parse")).as_deref(), Some("7 ✓  Parse"));
        assert_eq!(
            fitted_label(&titled, 150.0, Some("Write the integration tests")).as_deref(),
            Some("7 ✓  Write the int…")
        );
    }
}
