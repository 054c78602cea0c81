//! Calendar dates: day counts since 1970-01-01 to and from (year, month, day) in the
//! proleptic Gregorian calendar, for Deribit's expiry codes and hl-node's timestamps and file
//! names.
//!
//! Owns: the two conversions (Howard Hinnant's public-domain `days_from_civil` and
//! `civil_from_days`: whole 400-year eras of 146 097 days, then the year and the day within a
//! year that starts on 1 March, so the leap day falls last).
//! Must not: read a clock or check its input: a day count of any size has a date, and a
//! month/day out of range gives the day count its arithmetic carries to.

/// Days in a 400-year era.
const ERA_DAYS: i64 = 146_097;
/// Days from 0000-03-01 to 1970-01-01.
const EPOCH_SHIFT: i64 = 719_468;

/// Days since 1970-01-01 of `y`-`m`-`d` (month 1–12, day 1–31).
pub const fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let (m, d) = (m as i64, d as i64);
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * ERA_DAYS + doe - EPOCH_SHIFT
}

/// (year, month 1–12, day 1–31) of a day count since 1970-01-01.
pub const fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + EPOCH_SHIFT;
    let era = z.div_euclid(ERA_DAYS);
    let doe = z - era * ERA_DAYS;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = (if mp < 10 { mp + 3 } else { mp - 9 }) as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn is_leap(y: i64) -> bool {
        (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
    }

    fn month_len(y: i64, m: u32) -> u32 {
        match m {
            2 if is_leap(y) => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        }
    }

    fn next(y: i64, m: u32, d: u32) -> (i64, u32, u32) {
        if d < month_len(y, m) {
            (y, m, d + 1)
        } else if m < 12 {
            (y, m + 1, 1)
        } else {
            (y + 1, 1, 1)
        }
    }

    fn prev(y: i64, m: u32, d: u32) -> (i64, u32, u32) {
        if d > 1 {
            (y, m, d - 1)
        } else if m > 1 {
            (y, m - 1, month_len(y, m - 1))
        } else {
            (y - 1, 12, 31)
        }
    }

    /// Both conversions agree with a calendar walked one day at a time, ±2 700 years around
    /// 1970 (every leap rule: 4, 100 and 400 years, and negative years).
    #[test]
    fn agrees_with_a_day_by_day_walk() {
        const SPAN: i64 = 1_000_000;
        let (mut fwd, mut back) = ((1970, 1, 1), (1970, 1, 1));
        for day in 0..=SPAN {
            assert_eq!(civil_from_days(day), fwd, "day {day}");
            assert_eq!(days_from_civil(fwd.0, fwd.1, fwd.2), day, "{fwd:?}");
            assert_eq!(civil_from_days(-day), back, "day {}", -day);
            assert_eq!(days_from_civil(back.0, back.1, back.2), -day, "{back:?}");
            fwd = next(fwd.0, fwd.1, fwd.2);
            back = prev(back.0, back.1, back.2);
        }
        assert_eq!(fwd.0, 4707);
        assert_eq!(back.0, -768);
    }

    #[test]
    fn known_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(2024, 12, 27), 20_084);
        assert_eq!(days_from_civil(2000, 2, 29), 11_016);
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    proptest! {
        /// Far outside the walked span, a date still round-trips and its day is valid.
        #[test]
        fn round_trips_far_away(day in -1_000_000_000i64..1_000_000_000) {
            let (y, m, d) = civil_from_days(day);
            prop_assert!((1..=12).contains(&m) && d >= 1 && d <= month_len(y, m));
            prop_assert_eq!(days_from_civil(y, m, d), day);
        }
    }
}
