//! The reader's time zone, so the page shows local times with their UTC offset
//! (`2026-12-01 23:14:05 +01:00`): from `TZ` as the C library reads it — a POSIX rule
//! (`CET-1CEST,M3.5.0,M10.5.0/3`), a zone name looked up in the system's tz database
//! (`Europe/Berlin`, a TZif file) or a file path — else `/etc/localtime`, else UTC.
//!
//! No time crate is in the dependency tree, and the page needs only "which offset at this
//! instant": a TZif file's transitions and its footer rule, and the POSIX rule itself.

use std::path::{Path, PathBuf};

use super::time::{civil_from_days, days_from_civil};

/// A time zone: the UTC offset at any instant.
#[derive(Debug, Clone, PartialEq)]
pub enum Zone {
    /// One offset at all times (UTC, `TZ=UTC0`, `TZ=<+0530>-5:30`).
    Fixed(i64),
    /// A POSIX rule: standard time, and daylight saving time between two dates a year.
    Rule(PosixRule),
    /// A TZif file: offsets that took effect at given instants, then its footer's rule.
    Table(Table),
}

/// Seconds east of UTC from an instant on.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// (instant in Unix seconds, offset from then on), in order.
    transitions: Vec<(i64, i64)>,
    /// The offset before the first transition.
    initial: i64,
    /// After the last transition: the footer's rule, if the file has one.
    after: Option<Box<Zone>>,
}

/// `std offset [dst [offset] [,start[/time],end[/time]]]`, offsets in seconds east of UTC.
#[derive(Debug, Clone, PartialEq)]
pub struct PosixRule {
    standard: i64,
    dst: Option<Dst>,
}

#[derive(Debug, Clone, PartialEq)]
struct Dst {
    offset: i64,
    /// When daylight saving starts, in local standard time.
    start: (Day, i64),
    /// When it ends, in local daylight time.
    end: (Day, i64),
}

/// A day of the year in a POSIX rule.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Day {
    /// `Jn`: 1..=365, February 29 never counted.
    Julian(i64),
    /// `n`: 0..=365, February 29 counted.
    Zero(i64),
    /// `Mm.w.d`: day `d` (0 = Sunday) of week `w` (5 = the last) of month `m`.
    Month(i64, i64, i64),
}

/// Where the tz database is, unless `TZDIR` says.
const ZONEINFO: &str = "/usr/share/zoneinfo";
/// No TZif file is this large; a bigger file is not one.
const MAX_TZIF: u64 = 1 << 20;

impl Zone {
    /// UTC.
    pub const UTC: Zone = Zone::Fixed(0);

    /// The zone of this process's environment (`TZ`, `TZDIR`, `/etc/localtime`).
    pub fn from_env() -> Zone {
        let tz = std::env::var("TZ").ok();
        let dir = std::env::var_os("TZDIR").map_or_else(|| PathBuf::from(ZONEINFO), PathBuf::from);
        Zone::from_tz(tz.as_deref(), &dir, read_small)
    }

    /// The zone `TZ` names (`None`: unset), reading TZif files with `read` from the tz
    /// database in `dir`.
    pub fn from_tz(tz: Option<&str>, dir: &Path, read: impl Fn(&Path) -> Option<Vec<u8>>) -> Zone {
        let file = |path: &Path| read(path).and_then(|bytes| parse_tzif(&bytes));
        let Some(tz) = tz else {
            return file(Path::new("/etc/localtime")).unwrap_or(Zone::UTC);
        };
        let tz = tz.strip_prefix(':').unwrap_or(tz);
        if tz.is_empty() {
            return Zone::UTC;
        }
        if tz.starts_with('/') {
            return file(Path::new(tz)).unwrap_or(Zone::UTC);
        }
        if let Some(rule) = parse_posix(tz) {
            return rule;
        }
        // A zone name: no `..`, so it stays inside the database.
        if tz.split('/').any(|part| part == ".." || part.is_empty()) {
            return Zone::UTC;
        }
        file(&dir.join(tz)).unwrap_or(Zone::UTC)
    }

    /// The zone of a POSIX `TZ` rule (`CET-1CEST,M3.5.0,M10.5.0/3`, `UTC0`), if `rule` is one.
    pub fn posix(rule: &str) -> Option<Zone> {
        parse_posix(rule)
    }

    /// Seconds east of UTC at `unix` seconds.
    pub fn offset_at(&self, unix: i64) -> i64 {
        match self {
            Zone::Fixed(offset) => *offset,
            Zone::Rule(rule) => rule.offset_at(unix),
            Zone::Table(table) => match table.transitions.iter().rposition(|&(at, _)| at <= unix) {
                None => table.initial,
                Some(last) if last + 1 == table.transitions.len() => match &table.after {
                    Some(rule) => rule.offset_at(unix),
                    None => table.transitions[last].1,
                },
                Some(at) => table.transitions[at].1,
            },
        }
    }

    /// `2026-12-01 23:14:05 +01:00`: the local time of `millis` since the Unix epoch.
    pub fn date_time(&self, millis: i64) -> String {
        let (local, offset) = self.local(millis);
        let (year, month, day) = civil_from_days(local.div_euclid(86_400_000));
        let in_day = local.rem_euclid(86_400_000) / 1_000;
        format!(
            "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} {}",
            in_day / 3_600,
            in_day / 60 % 60,
            in_day % 60,
            offset_text(offset)
        )
    }

    /// `23:14:05.123`: the local time of day of `millis`, to the millisecond.
    pub fn clock(&self, millis: i64) -> String {
        let in_day = self.local(millis).0.rem_euclid(86_400_000);
        let (hours, minutes) = (in_day / 3_600_000, in_day / 60_000 % 60);
        format!("{hours:02}:{minutes:02}:{:02}.{:03}", in_day / 1_000 % 60, in_day % 1_000)
    }

    /// `+01:00`: the UTC offset at `millis`.
    pub fn offset_text(&self, millis: i64) -> String {
        offset_text(self.local(millis).1)
    }

    /// Local milliseconds (as if UTC) and the offset in seconds.
    fn local(&self, millis: i64) -> (i64, i64) {
        let offset = self.offset_at(millis.div_euclid(1_000));
        (millis + offset * 1_000, offset)
    }
}

/// `+05:30`, `-03:00`, `+00:00`.
fn offset_text(seconds: i64) -> String {
    let sign = if seconds < 0 { '-' } else { '+' };
    let minutes = seconds.abs() / 60;
    format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60)
}

impl PosixRule {
    fn offset_at(&self, unix: i64) -> i64 {
        let Some(dst) = &self.dst else { return self.standard };
        let year = civil_from_days((unix + self.standard).div_euclid(86_400)).0;
        let start = day_start(year, dst.start.0) + dst.start.1 - self.standard;
        let end = day_start(year, dst.end.0) + dst.end.1 - dst.offset;
        let summer = if start < end {
            start <= unix && unix < end
        } else {
            // The southern hemisphere: daylight time spans the new year.
            !(end <= unix && unix < start)
        };
        if summer { dst.offset } else { self.standard }
    }
}

/// Unix seconds of the local midnight (as if UTC) starting `day` of `year`.
fn day_start(year: i64, day: Day) -> i64 {
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let jan1 = days_from_civil(year, 1, 1);
    let days = match day {
        Day::Julian(n) => jan1 + n - 1 + i64::from(leap && n >= 60),
        Day::Zero(n) => jan1 + n,
        Day::Month(month, week, weekday) => {
            let first = days_from_civil(year, month, 1);
            let next = if month == 12 {
                days_from_civil(year + 1, 1, 1)
            } else {
                days_from_civil(year, month + 1, 1)
            };
            // 1970-01-01 was a Thursday (4).
            let first_weekday = (first + 4).rem_euclid(7);
            let mut day = first + (weekday - first_weekday).rem_euclid(7) + (week - 1) * 7;
            while day >= next {
                day -= 7;
            }
            day
        }
    };
    days * 86_400
}

/// A POSIX `TZ` rule, or `None` when `text` is not one (a zone name, a typo).
fn parse_posix(text: &str) -> Option<Zone> {
    let mut rest = text;
    name(&mut rest)?;
    let standard = -hms(&mut rest, false)?;
    if rest.is_empty() {
        return Some(Zone::Fixed(standard));
    }
    name(&mut rest)?;
    let offset = if rest.is_empty() || rest.starts_with(',') {
        standard + 3_600
    } else {
        -hms(&mut rest, false)?
    };
    // Without rules, the C library's default: the United States' since 2007.
    let rules = rest.strip_prefix(',').unwrap_or("M3.2.0,M11.1.0");
    let (start, end) = rules.split_once(',')?;
    let dst = Dst { offset, start: transition(start)?, end: transition(end)? };
    Some(Zone::Rule(PosixRule { standard, dst: Some(dst) }))
}

/// A zone abbreviation: three or more letters, or `<…>` of letters, digits, `+`, `-`.
fn name(rest: &mut &str) -> Option<()> {
    let text = *rest;
    let length = if let Some(quoted) = text.strip_prefix('<') {
        let close = quoted.find('>')?;
        let inner = &quoted[..close];
        if inner.len() < 3
            || !inner.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-')
        {
            return None;
        }
        close + 2
    } else {
        text.bytes().take_while(u8::is_ascii_alphabetic).count()
    };
    if length < 3 {
        return None;
    }
    *rest = &text[length..];
    Some(())
}

/// `[+-]hh[:mm[:ss]]` in seconds; `hours_past_day`: up to 167 hours (transition times).
fn hms(rest: &mut &str, hours_past_day: bool) -> Option<i64> {
    let text = *rest;
    let (sign, digits) = match text.as_bytes().first()? {
        b'-' => (-1, &text[1..]),
        b'+' => (1, &text[1..]),
        _ => (1, text),
    };
    let mut used = text.len() - digits.len();
    let mut parts = [0_i64; 3];
    for (n, part) in parts.iter_mut().enumerate() {
        let tail = &text[used..];
        let tail = if n > 0 {
            match tail.strip_prefix(':') {
                Some(tail) => tail,
                None => break,
            }
        } else {
            tail
        };
        let count = tail.bytes().take_while(u8::is_ascii_digit).count();
        if count == 0 || count > 3 {
            return None;
        }
        *part = tail[..count].parse().ok()?;
        used = text.len() - tail.len() + count;
    }
    let [hours, minutes, seconds] = parts;
    let max_hours = if hours_past_day { 167 } else { 24 };
    if hours > max_hours || minutes > 59 || seconds > 59 {
        return None;
    }
    *rest = &text[used..];
    Some(sign * (hours * 3_600 + minutes * 60 + seconds))
}

/// `date[/time]` of a rule; the time is 02:00 unless given.
fn transition(text: &str) -> Option<(Day, i64)> {
    let (date, time) = match text.split_once('/') {
        Some((date, time)) => {
            let mut rest = time;
            let seconds = hms(&mut rest, true)?;
            (date, if rest.is_empty() { seconds } else { return None })
        }
        None => (text, 7_200),
    };
    let number = |text: &str| text.parse::<i64>().ok();
    let day = if let Some(julian) = date.strip_prefix('J') {
        Day::Julian(number(julian).filter(|n| (1..=365).contains(n))?)
    } else if let Some(month) = date.strip_prefix('M') {
        let mut parts = month.split('.');
        let (m, w, d) = (number(parts.next()?)?, number(parts.next()?)?, number(parts.next()?)?);
        if parts.next().is_some()
            || !(1..=12).contains(&m)
            || !(1..=5).contains(&w)
            || !(0..=6).contains(&d)
        {
            return None;
        }
        Day::Month(m, w, d)
    } else {
        Day::Zero(number(date).filter(|n| (0..=365).contains(n))?)
    };
    Some((day, time))
}

/// A TZif file (RFC 8536, versions 1 to 4), or `None` when `bytes` are not one.
fn parse_tzif(bytes: &[u8]) -> Option<Zone> {
    let header = Header::read(bytes)?;
    if header.version == 0 {
        return header.table(bytes.get(44..)?, 4);
    }
    // Version 2 and later repeat the data with 64-bit times, then a footer rule.
    let second = bytes.get(44 + header.v1_length()..)?;
    let long = Header::read(second)?;
    let mut zone = long.table(second.get(44..)?, 8)?;
    let footer = second.get(44 + long.length(8)..)?;
    let rule = std::str::from_utf8(footer).ok()?.strip_prefix('\n')?.split('\n').next()?;
    if let Zone::Table(table) = &mut zone
        && !rule.is_empty()
    {
        table.after = parse_posix(rule).map(Box::new);
    }
    Some(zone)
}

/// The counts of a TZif header.
struct Header {
    version: u8,
    isutcnt: usize,
    isstdcnt: usize,
    leapcnt: usize,
    timecnt: usize,
    typecnt: usize,
    charcnt: usize,
}

impl Header {
    fn read(bytes: &[u8]) -> Option<Header> {
        if bytes.get(..4)? != b"TZif" {
            return None;
        }
        let version = match *bytes.get(4)? {
            0 => 0,
            digit @ b'2'..=b'9' => digit - b'0',
            _ => return None,
        };
        let count = |n: usize| -> Option<usize> {
            let at = 20 + n * 4;
            Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?) as usize)
        };
        Some(Header {
            version,
            isutcnt: count(0)?,
            isstdcnt: count(1)?,
            leapcnt: count(2)?,
            timecnt: count(3)?,
            typecnt: count(4)?,
            charcnt: count(5)?,
        })
    }

    fn v1_length(&self) -> usize {
        self.length(4)
    }

    /// Length of the data block with `time_size`-byte times.
    fn length(&self, time_size: usize) -> usize {
        self.timecnt * (time_size + 1)
            + self.typecnt * 6
            + self.charcnt
            + self.leapcnt * (time_size + 4)
            + self.isstdcnt
            + self.isutcnt
    }

    /// The transitions and offsets of the data block `data`.
    fn table(&self, data: &[u8], time_size: usize) -> Option<Zone> {
        if self.typecnt == 0 || data.len() < self.length(time_size) {
            return None;
        }
        let time = |n: usize| -> Option<i64> {
            let bytes = data.get(n * time_size..(n + 1) * time_size)?;
            Some(match time_size {
                4 => i64::from(i32::from_be_bytes(bytes.try_into().ok()?)),
                _ => i64::from_be_bytes(bytes.try_into().ok()?),
            })
        };
        let indices = self.timecnt * time_size;
        let types = indices + self.timecnt;
        let offset = |index: usize| -> Option<i64> {
            if index >= self.typecnt {
                return None;
            }
            let at = types + index * 6;
            Some(i64::from(i32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?)))
        };
        let mut transitions = Vec::with_capacity(self.timecnt);
        for n in 0..self.timecnt {
            transitions.push((time(n)?, offset(usize::from(*data.get(indices + n)?))?));
        }
        Some(Zone::Table(Table { transitions, initial: offset(0)?, after: None }))
    }
}

/// A file's bytes, if it is a regular file of at most [`MAX_TZIF`] bytes.
fn read_small(path: &Path) -> Option<Vec<u8>> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_TZIF {
        return None;
    }
    std::fs::read(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report_html::time::parse_rfc3339;

    fn millis(text: &str) -> i64 {
        parse_rfc3339(text).unwrap()
    }

    fn no_files(_: &Path) -> Option<Vec<u8>> {
        None
    }

    fn zone(tz: &str) -> Zone {
        Zone::from_tz(Some(tz), Path::new("/nowhere"), no_files)
    }

    #[test]
    fn posix_rules_give_the_offset_on_each_side_of_a_change() {
        let berlin = zone("CET-1CEST,M3.5.0,M10.5.0/3");
        // 2026: summer time from March 29 01:00 UTC to October 25 01:00 UTC.
        assert_eq!(berlin.date_time(millis("2026-03-29T00:59:59Z")), "2026-03-29 01:59:59 +01:00");
        assert_eq!(berlin.date_time(millis("2026-03-29T01:00:00Z")), "2026-03-29 03:00:00 +02:00");
        assert_eq!(berlin.date_time(millis("2026-10-25T00:59:59Z")), "2026-10-25 02:59:59 +02:00");
        assert_eq!(berlin.date_time(millis("2026-10-25T01:00:00Z")), "2026-10-25 02:00:00 +01:00");
        assert_eq!(berlin.date_time(millis("2026-12-01T22:14:05Z")), "2026-12-01 23:14:05 +01:00");
        // The southern hemisphere: daylight time over the new year.
        let sydney = zone("AEST-10AEDT,M10.1.0,M4.1.0/3");
        assert_eq!(sydney.offset_text(millis("2026-01-15T00:00:00Z")), "+11:00");
        assert_eq!(sydney.offset_text(millis("2026-07-15T00:00:00Z")), "+10:00");
        // West of Greenwich, the default US rule, half hours, a year's last minute.
        let new_york = zone("EST5EDT");
        assert_eq!(
            new_york.date_time(millis("2026-07-04T16:00:00Z")),
            "2026-07-04 12:00:00 -04:00"
        );
        assert_eq!(
            new_york.date_time(millis("2027-01-01T04:59:59Z")),
            "2026-12-31 23:59:59 -05:00"
        );
        assert_eq!(
            zone("<+0530>-5:30").date_time(millis("2026-12-01T00:00:00Z")),
            "2026-12-01 05:30:00 +05:30"
        );
        assert_eq!(zone("UTC0").clock(millis("2026-12-01T12:00:01.123Z")), "12:00:01.123");
        assert_eq!(zone("J60/0,J300/0").offset_at(0), 0, "a rule without a zone name is no rule");
    }

    #[test]
    fn names_are_looked_up_in_the_database_and_anything_unreadable_is_utc() {
        let seen = std::sync::Mutex::new(Vec::new());
        let zone = Zone::from_tz(Some(":Europe/Nowhere"), Path::new("/db"), |path| {
            seen.lock().unwrap().push(path.to_path_buf());
            None
        });
        assert_eq!(zone, Zone::UTC);
        assert_eq!(*seen.lock().unwrap(), [PathBuf::from("/db/Europe/Nowhere")]);
        for tz in ["", "../../etc/passwd", "Nope"] {
            assert_eq!(Zone::from_tz(Some(tz), Path::new("/db"), no_files), Zone::UTC, "{tz:?}");
        }
        assert_eq!(Zone::from_tz(None, Path::new("/db"), no_files), Zone::UTC);
    }

    /// A version 2 TZif file: +01:00, then +02:00 from 2026-03-29T01:00Z, then the footer
    /// rule after its last transition (2026-10-25T01:00Z, back to +01:00).
    fn tzif() -> Vec<u8> {
        let header = |timecnt: u32, typecnt: u32, charcnt: u32| {
            let mut bytes = b"TZif2".to_vec();
            bytes.extend([0; 15]);
            for count in [0, 0, 0, timecnt, typecnt, charcnt] {
                bytes.extend(u32::to_be_bytes(count));
            }
            bytes
        };
        let transitions =
            [millis("2026-03-29T01:00:00Z") / 1_000, millis("2026-10-25T01:00:00Z") / 1_000];
        let mut file = header(0, 1, 4);
        file.extend(i32::to_be_bytes(3_600));
        file.extend([0, 0]);
        file.extend(b"CET\0");
        file.extend(header(2, 2, 9));
        for at in transitions {
            file.extend(i64::to_be_bytes(at));
        }
        file.extend([1, 0]);
        for (offset, dst, abbreviation) in [(3_600_i32, 0_u8, 0_u8), (7_200, 1, 4)] {
            file.extend(i32::to_be_bytes(offset));
            file.extend([dst, abbreviation]);
        }
        file.extend(b"CET\0CEST\0");
        file.extend(b"\nCET-1CEST,M3.5.0,M10.5.0/3\n");
        file
    }

    #[test]
    fn a_tzif_file_gives_its_transitions_then_its_footer_rule() {
        let bytes = tzif();
        let zone = Zone::from_tz(Some("Europe/Berlin"), Path::new("/db"), |path| {
            (path == Path::new("/db/Europe/Berlin")).then(|| bytes.clone())
        });
        assert_eq!(zone.offset_text(millis("2026-01-01T00:00:00Z")), "+01:00", "before the first");
        assert_eq!(zone.offset_text(millis("2026-06-01T00:00:00Z")), "+02:00", "a transition");
        assert_eq!(zone.offset_text(millis("2026-12-01T00:00:00Z")), "+01:00", "the last one");
        assert_eq!(zone.offset_text(millis("2027-07-01T00:00:00Z")), "+02:00", "the footer rule");
        assert_eq!(parse_tzif(&bytes[..bytes.len() - 40]), None, "a cut file is not read");
        assert_eq!(parse_tzif(b"not a zone"), None);
    }
}
