//! Date and time for the DateTime* functions: parsing and formatting the service's ISO 8601
//! form `YYYY-MM-DDThh:mm:ss.fffffffZ` (always UTC), and calendar arithmetic on ticks.
//!
//! A tick is 100 nanoseconds; moments are counted in ticks since 0001-01-01T00:00:00Z, the
//! range of the service's .NET DateTime (years 1 to 9999). Anything outside that range, or
//! text that is not of that form, is `None` (undefined to the caller). Nothing here reads the
//! clock: the current time is the caller's `now_ms`.

pub const TICKS_PER_SECOND: i64 = 10_000_000;
const TICKS_PER_MINUTE: i64 = 60 * TICKS_PER_SECOND;
const TICKS_PER_HOUR: i64 = 60 * TICKS_PER_MINUTE;
const TICKS_PER_DAY: i64 = 24 * TICKS_PER_HOUR;
/// Ticks from 0001-01-01 to 1970-01-01.
pub const UNIX_EPOCH_TICKS: i64 = 621_355_968_000_000_000;
/// The default origin of DateTimeBin.
pub const UNIX_EPOCH_TEXT: &str = "1970-01-01T00:00:00.0000000Z";
/// Ticks of 9999-12-31T23:59:59.9999999Z, the last representable moment.
const TICKS_MAX: i64 = 3_155_378_975_999_999_999;

/// Days from 1970-01-01 to the given civil date (proleptic Gregorian calendar).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The civil date of a day counted from 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Broken-down parts of a moment: year, month, day, hour, minute, second, ticks of the second.
fn parts(ticks: i64) -> [i64; 7] {
    let unix = ticks - UNIX_EPOCH_TICKS;
    let days = unix.div_euclid(TICKS_PER_DAY);
    let in_day = unix.rem_euclid(TICKS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    [
        year,
        month,
        day,
        in_day / TICKS_PER_HOUR,
        in_day % TICKS_PER_HOUR / TICKS_PER_MINUTE,
        in_day % TICKS_PER_MINUTE / TICKS_PER_SECOND,
        in_day % TICKS_PER_SECOND,
    ]
}

/// The moment of the given parts, or `None` if any is out of its range.
pub fn from_parts([year, month, day, hour, minute, second, fraction]: [i64; 7]) -> Option<i64> {
    let valid = (1..=9999).contains(&year)
        && (1..=12).contains(&month)
        && day >= 1
        && day <= days_in_month(year, month)
        && (0..24).contains(&hour)
        && (0..60).contains(&minute)
        && (0..60).contains(&second)
        && (0..TICKS_PER_SECOND).contains(&fraction);
    if !valid {
        return None;
    }
    Some(
        UNIX_EPOCH_TICKS
            + days_from_civil(year, month, day) * TICKS_PER_DAY
            + hour * TICKS_PER_HOUR
            + minute * TICKS_PER_MINUTE
            + second * TICKS_PER_SECOND
            + fraction,
    )
}

fn digits(bytes: &[u8]) -> Option<i64> {
    if bytes.is_empty() || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        bytes
            .iter()
            .fold(0i64, |total, digit| total * 10 + i64::from(digit - b'0')),
    )
}

/// Parses `YYYY-MM-DDThh:mm:ss[.f{1,7}]Z`.
pub fn parse(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if bytes.len() < 20
        || bytes[4] != b'-'
        || bytes[7] != b'-'
        || bytes[10] != b'T'
        || bytes[13] != b':'
        || bytes[16] != b':'
    {
        return None;
    }
    if *bytes.last()? != b'Z' {
        return None;
    }
    let fraction = match &bytes[19..bytes.len() - 1] {
        [] => 0,
        [b'.', fraction @ ..] if (1..=7).contains(&fraction.len()) => {
            digits(fraction)? * 10i64.pow(7 - fraction.len() as u32)
        }
        _ => return None,
    };
    from_parts([
        digits(&bytes[0..4])?,
        digits(&bytes[5..7])?,
        digits(&bytes[8..10])?,
        digits(&bytes[11..13])?,
        digits(&bytes[14..16])?,
        digits(&bytes[17..19])?,
        fraction,
    ])
}

/// Formats as `YYYY-MM-DDThh:mm:ss.fffffffZ`, the way the service writes every date.
pub fn format(ticks: i64) -> Option<String> {
    if !(0..=TICKS_MAX).contains(&ticks) {
        return None;
    }
    let [year, month, day, hour, minute, second, fraction] = parts(ticks);
    Some(format!(
        "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{fraction:07}Z"
    ))
}

pub fn ticks_from_unix_ms(ms: i64) -> i64 {
    UNIX_EPOCH_TICKS.saturating_add(ms.saturating_mul(10_000))
}

/// Ticks since 1970-01-01, as DateTimeToTicks and GetCurrentTicks count them.
pub fn unix_ticks(ticks: i64) -> i64 {
    ticks - UNIX_EPOCH_TICKS
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Part {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Millisecond,
    Microsecond,
    Nanosecond,
}

/// The part names and abbreviations the service accepts, case-insensitively.
fn part_named(name: &str) -> Option<Part> {
    Some(match name.to_ascii_lowercase().as_str() {
        "year" | "yyyy" | "yy" => Part::Year,
        "month" | "mm" | "m" => Part::Month,
        "day" | "dd" | "d" => Part::Day,
        "hour" | "hh" => Part::Hour,
        "minute" | "mi" | "n" => Part::Minute,
        "second" | "ss" | "s" => Part::Second,
        "millisecond" | "ms" => Part::Millisecond,
        "microsecond" | "mcs" => Part::Microsecond,
        "nanosecond" | "ns" => Part::Nanosecond,
        _ => return None,
    })
}

/// The length of a fixed-size part in ticks; years and months vary and have none. A
/// nanosecond is a hundredth of a tick and is handled by the callers.
fn part_ticks(part: Part) -> Option<i64> {
    match part {
        Part::Day => Some(TICKS_PER_DAY),
        Part::Hour => Some(TICKS_PER_HOUR),
        Part::Minute => Some(TICKS_PER_MINUTE),
        Part::Second => Some(TICKS_PER_SECOND),
        Part::Millisecond => Some(10_000),
        Part::Microsecond => Some(10),
        Part::Year | Part::Month | Part::Nanosecond => None,
    }
}

fn add_months(ticks: i64, months: i64) -> Option<i64> {
    let [year, month, day, hour, minute, second, fraction] = parts(ticks);
    let total = year
        .checked_mul(12)?
        .checked_add(month - 1)?
        .checked_add(months)?;
    let (year, month) = (total.div_euclid(12), total.rem_euclid(12) + 1);
    if !(1..=9999).contains(&year) {
        return None;
    }
    // Adding a month to January 31st lands on the last day of February.
    let day = day.min(days_in_month(year, month));
    from_parts([year, month, day, hour, minute, second, fraction])
}

/// DateTimeAdd: calendar arithmetic for years and months, exact arithmetic otherwise.
pub fn add(part: &str, amount: i64, moment: &str) -> Option<i64> {
    let ticks = parse(moment)?;
    let result = match part_named(part)? {
        Part::Year => add_months(ticks, amount.checked_mul(12)?)?,
        Part::Month => add_months(ticks, amount)?,
        Part::Nanosecond => ticks.checked_add(amount / 100)?,
        other => ticks.checked_add(amount.checked_mul(part_ticks(other)?)?)?,
    };
    (0..=TICKS_MAX).contains(&result).then_some(result)
}

/// DateTimeDiff: how many part boundaries lie between the two moments (negative when the
/// end is earlier), as SQL's DATEDIFF counts them.
pub fn diff(part: &str, start: &str, end: &str) -> Option<i64> {
    let (start, end) = (parse(start)?, parse(end)?);
    let (start_parts, end_parts) = (parts(start), parts(end));
    Some(match part_named(part)? {
        Part::Year => end_parts[0] - start_parts[0],
        Part::Month => (end_parts[0] * 12 + end_parts[1]) - (start_parts[0] * 12 + start_parts[1]),
        Part::Nanosecond => (end - start).checked_mul(100)?,
        other => {
            let unit = part_ticks(other)?;
            end.div_euclid(unit) - start.div_euclid(unit)
        }
    })
}

/// DateTimePart: one part of a moment; the sub-second parts count within the second.
pub fn part(part: &str, moment: &str) -> Option<i64> {
    let [year, month, day, hour, minute, second, fraction] = parts(parse(moment)?);
    Some(match part_named(part)? {
        Part::Year => year,
        Part::Month => month,
        Part::Day => day,
        Part::Hour => hour,
        Part::Minute => minute,
        Part::Second => second,
        Part::Millisecond => fraction / 10_000,
        Part::Microsecond => fraction / 10,
        Part::Nanosecond => fraction * 100,
    })
}

/// DateTimeBin: the start of the bin of `size` parts, counted from `origin`, that holds the
/// moment. Years and months have no fixed length and are not binned.
pub fn bin(moment: &str, part: &str, size: i64, origin: &str) -> Option<i64> {
    let (ticks, origin) = (parse(moment)?, parse(origin)?);
    if size <= 0 {
        return None;
    }
    let width = match part_named(part)? {
        Part::Nanosecond => size / 100,
        other => part_ticks(other)?.checked_mul(size)?,
    };
    if width <= 0 {
        return None;
    }
    let result = origin.checked_add((ticks - origin).div_euclid(width).checked_mul(width)?)?;
    (0..=TICKS_MAX).contains(&result).then_some(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_format_round_trip() {
        let text = "2016-05-29T08:30:00.1301617Z";
        assert_eq!(parse(text).and_then(format).as_deref(), Some(text));
        assert_eq!(
            parse("2020-02-29T00:00:00Z").and_then(format).as_deref(),
            Some("2020-02-29T00:00:00.0000000Z")
        );
        assert_eq!(parse("2021-02-29T00:00:00Z"), None);
        assert_eq!(parse("2021-01-01"), None);
        assert_eq!(parse("2021-01-01T00:00:00.12345678Z"), None);
        assert_eq!(parse(UNIX_EPOCH_TEXT), Some(UNIX_EPOCH_TICKS));
        assert_eq!(format(0).as_deref(), Some("0001-01-01T00:00:00.0000000Z"));
        assert_eq!(format(TICKS_MAX + 1), None);
    }

    #[test]
    fn calendar_arithmetic() {
        let add_text =
            |part: &str, amount: i64, moment: &str| add(part, amount, moment).and_then(format);
        assert_eq!(
            add_text("mm", 1, "2020-01-31T00:00:00.0000000Z").as_deref(),
            Some("2020-02-29T00:00:00.0000000Z")
        );
        assert_eq!(
            add_text("yyyy", -1, "2020-02-29T00:00:00.0000000Z").as_deref(),
            Some("2019-02-28T00:00:00.0000000Z")
        );
        assert_eq!(
            add_text("hh", 25, "2020-12-31T00:00:00.0000000Z").as_deref(),
            Some("2021-01-01T01:00:00.0000000Z")
        );
        assert_eq!(
            diff("day", "2020-01-01T23:59:59Z", "2020-01-02T00:00:00Z"),
            Some(1)
        );
        assert_eq!(
            diff("year", "2020-12-31T00:00:00Z", "2021-01-01T00:00:00Z"),
            Some(1)
        );
        assert_eq!(
            part("ns", "2016-05-29T08:30:00.1301617Z"),
            Some(130_161_700)
        );
    }
}
