//! Journal times: RFC 3339 read into milliseconds, and durations and clock times written
//! back for people.

/// Milliseconds since the Unix epoch of an RFC 3339 time (`2026-11-30T12:00:00.123Z`,
/// any number of fraction digits, `Z` or an offset); `None` if it is not one.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let separators = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if bytes.len() < 20 || separators.iter().any(|&(at, c)| bytes[at] != c) {
        return None;
    }
    if !matches!(bytes[10], b'T' | b't' | b' ') {
        return None;
    }
    let number = |from: usize, to: usize| -> Option<i64> {
        let digits = text.get(from..to)?;
        digits.bytes().all(|b| b.is_ascii_digit()).then(|| digits.parse().ok())?
    };
    let (year, month, day) = (number(0, 4)?, number(5, 7)?, number(8, 10)?);
    let (hour, minute, second) = (number(11, 13)?, number(14, 16)?, number(17, 19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    let (millis, zone) = fraction(&text[19..])?;
    let offset = offset_minutes(zone)?;
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second.min(60) - offset * 60;
    Some(seconds * 1_000 + millis)
}

/// The milliseconds of an optional `.fff…` fraction, and what follows it.
fn fraction(rest: &str) -> Option<(i64, &str)> {
    let Some(digits) = rest.strip_prefix('.') else { return Some((0, rest)) };
    let count = digits.bytes().take_while(u8::is_ascii_digit).count();
    if count == 0 {
        return None;
    }
    let millis = digits[..count.min(3)].parse::<i64>().ok()? * 10_i64.pow(3 - count.min(3) as u32);
    Some((millis, &digits[count..]))
}

/// `Z` is 0; `+hh:mm` / `-hh:mm` in minutes.
fn offset_minutes(zone: &str) -> Option<i64> {
    if zone.eq_ignore_ascii_case("z") {
        return Some(0);
    }
    let (sign, rest) = match zone.as_bytes().first()? {
        b'+' => (1, &zone[1..]),
        b'-' => (-1, &zone[1..]),
        _ => return None,
    };
    let (hours, minutes) = rest.split_once(':')?;
    if hours.len() != 2 || minutes.len() != 2 {
        return None;
    }
    Some(sign * (hours.parse::<i64>().ok()? * 60 + minutes.parse::<i64>().ok()?))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The proleptic Gregorian date (year, month, day) of a count of days since 1970-01-01;
/// the inverse of [`days_from_civil`].
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// A duration as people read it: `850 ms`, `1.3 s`, `42 s`, `3m 05s`, `2h 07m`.
pub fn duration(millis: i64) -> String {
    let millis = millis.max(0);
    match millis {
        0..1_000 => format!("{millis} ms"),
        1_000..10_000 => format!("{:.1} s", millis as f64 / 1_000.0),
        10_000..60_000 => format!("{} s", millis / 1_000),
        60_000..3_600_000 => format!("{}m {:02}s", millis / 60_000, millis / 1_000 % 60),
        _ => format!("{}h {:02}m", millis / 3_600_000, millis / 60_000 % 60),
    }
}

/// A time-axis label for `millis` after the start, on an axis whose ticks are `step`
/// apart: as precise as the step needs (`0.2 s`, `15 s`, `1m 30s`, `2h 15m`).
pub fn tick_label(millis: i64, step: i64) -> String {
    if millis == 0 {
        return "0".into();
    }
    if step < 1_000 {
        let decimals = if step % 100 == 0 {
            1
        } else if step % 10 == 0 {
            2
        } else {
            3
        };
        return format!("{:.*} s", decimals, millis as f64 / 1_000.0);
    }
    if millis < 60_000 {
        return format!("{} s", millis / 1_000);
    }
    if millis < 3_600_000 {
        let (minutes, seconds) = (millis / 60_000, millis / 1_000 % 60);
        return if seconds == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m {seconds:02}s")
        };
    }
    let (hours, minutes) = (millis / 3_600_000, millis / 60_000 % 60);
    if minutes == 0 { format!("{hours}h") } else { format!("{hours}h {minutes:02}m") }
}

/// The smallest round step (1, 2, 5 × 10ⁿ ms; then seconds, minutes and hours people
/// count in) at which ticks are at least `min_px` apart at `px_per_ms`.
pub fn tick_step(px_per_ms: f64, min_px: f64) -> i64 {
    const STEPS: [i64; 25] = [
        1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000,
        120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 21_600_000,
        43_200_000,
    ];
    STEPS.into_iter().find(|&step| step as f64 * px_per_ms >= min_px).unwrap_or(86_400_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_are_read_to_the_millisecond() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("1970-01-01T00:00:01.5Z"), Some(1_500));
        assert_eq!(parse_rfc3339("2026-11-30T12:00:00.123Z"), Some(1_796_040_000_123));
        assert_eq!(parse_rfc3339("2026-11-30T13:00:00.123+01:00"), Some(1_796_040_000_123));
        assert_eq!(parse_rfc3339("2000-02-29T00:00:00.123456789Z"), Some(951_782_400_123));
        assert_eq!(parse_rfc3339("2026-11-30 12:00:00Z"), Some(1_796_040_000_000));
        for bad in [
            "",
            "yesterday",
            "2026-11-30T12:00:00",
            "2026-13-01T00:00:00Z",
            "2026-11-30T12:00:00.Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn days_and_dates_convert_both_ways() {
        for (date, days) in [((1970, 1, 1), 0), ((2000, 2, 29), 11_016), ((1969, 12, 31), -1)] {
            assert_eq!(days_from_civil(date.0, date.1, date.2), days);
            assert_eq!(civil_from_days(days), date);
        }
        for days in (-800_000..800_000).step_by(997) {
            let (year, month, day) = civil_from_days(days);
            assert_eq!(days_from_civil(year, month, day), days);
        }
    }

    #[test]
    fn durations_and_ticks_read_naturally() {
        assert_eq!(duration(850), "850 ms");
        assert_eq!(duration(1_340), "1.3 s");
        assert_eq!(duration(185_000), "3m 05s");
        assert_eq!(duration(7_620_000), "2h 07m");
        assert_eq!(tick_label(400, 200), "0.4 s");
        assert_eq!(tick_label(90_000, 30_000), "1m 30s");
        assert_eq!(tick_step(0.1, 80.0), 1_000);
        assert_eq!(tick_step(1.0, 80.0), 100);
    }
}
