//! Helm's `time.Time` in release records: RFC 3339 with nanoseconds as Go writes it, and `""`
//! for the zero time.
//!
//! Input: a `jiff` timestamp (the caller's clock) or the text of a stored record. Output: the
//! same text Go's `time.Time.MarshalJSON` produces. No IO.
//!
//! | time                              | text                                   |
//! |-----------------------------------|----------------------------------------|
//! | zero (never set)                  | `""`                                   |
//! | UTC                               | `2026-11-23T22:07:19.70758959Z` (trailing fraction zeros cut, no fraction when 0) |
//! | read with an offset (`+02:00`)    | kept with that offset (`Z` for `+00:00`) |

use std::fmt;

use k8s_openapi::jiff::Timestamp;
use k8s_openapi::jiff::tz::TimeZone;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

/// A point in time as a Helm record holds it; [`HelmTime::ZERO`] is Go's zero time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HelmTime(Option<Civil>);

/// Broken-down wall-clock time plus the UTC offset it was written with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Civil {
    year: i32,
    month: u8,
    day: u8,
    hour: u8,
    minute: u8,
    second: u8,
    nanosecond: u32,
    offset_seconds: i32,
}

impl HelmTime {
    /// Go's zero `time.Time`, written as `""`.
    pub const ZERO: HelmTime = HelmTime(None);

    /// `ts` in UTC, as Helm records `time.Now()` in a UTC process.
    pub fn from_timestamp(ts: Timestamp) -> HelmTime {
        let dt = ts.to_zoned(TimeZone::UTC).datetime();
        HelmTime(Some(Civil {
            year: i32::from(dt.year()),
            month: dt.month() as u8,
            day: dt.day() as u8,
            hour: dt.hour() as u8,
            minute: dt.minute() as u8,
            second: dt.second() as u8,
            nanosecond: dt.subsec_nanosecond() as u32,
            offset_seconds: 0,
        }))
    }

    pub fn is_zero(&self) -> bool {
        self.0.is_none()
    }

    /// Parses RFC 3339 text (`YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`); `""` is the zero time.
    pub fn parse(text: &str) -> Result<HelmTime, String> {
        if text.is_empty() {
            return Ok(HelmTime::ZERO);
        }
        let err = || format!("parsing time {text:?} as RFC 3339");
        let b = text.as_bytes();
        let num = |from: usize, len: usize| -> Result<u32, String> {
            let s = text.get(from..from + len).ok_or_else(err)?;
            if !s.bytes().all(|c| c.is_ascii_digit()) {
                return Err(err());
            }
            s.parse().map_err(|_| err())
        };
        if b.len() < 20
            || b[4] != b'-'
            || b[7] != b'-'
            || !matches!(b[10], b'T' | b't')
            || b[13] != b':'
            || b[16] != b':'
        {
            return Err(err());
        }
        let year = num(0, 4)? as i32;
        let (month, day, hour, minute, second) = (
            num(5, 2)?,
            num(8, 2)?,
            num(11, 2)?,
            num(14, 2)?,
            num(17, 2)?,
        );
        let mut i = 19;
        let mut nanosecond = 0u32;
        if b.get(i) == Some(&b'.') {
            let start = i + 1;
            let mut end = start;
            while end < b.len() && b[end].is_ascii_digit() {
                end += 1;
            }
            if end == start || end - start > 9 {
                return Err(err());
            }
            let digits = &text[start..end];
            nanosecond =
                digits.parse::<u32>().map_err(|_| err())? * 10u32.pow(9 - digits.len() as u32);
            i = end;
        }
        let offset_seconds = match b.get(i) {
            Some(b'Z' | b'z') if i + 1 == b.len() => 0,
            Some(sign @ (b'+' | b'-')) if i + 6 == b.len() && b[i + 3] == b':' => {
                let h = num(i + 1, 2)? as i32;
                let m = num(i + 4, 2)? as i32;
                let total = h * 3600 + m * 60;
                if *sign == b'-' { -total } else { total }
            }
            _ => return Err(err()),
        };
        if !(1..=12).contains(&month)
            || !(1..=31).contains(&day)
            || hour > 23
            || minute > 59
            || second > 59
        {
            return Err(err());
        }
        Ok(HelmTime(Some(Civil {
            year,
            month: month as u8,
            day: day as u8,
            hour: hour as u8,
            minute: minute as u8,
            second: second as u8,
            nanosecond,
            offset_seconds,
        })))
    }
}

impl fmt::Display for HelmTime {
    /// Go's RFC 3339 with nanoseconds (`time.RFC3339Nano`); empty for the zero time.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(c) = self.0 else {
            return Ok(());
        };
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            c.year, c.month, c.day, c.hour, c.minute, c.second
        )?;
        if c.nanosecond != 0 {
            let frac = format!("{:09}", c.nanosecond);
            write!(f, ".{}", frac.trim_end_matches('0'))?;
        }
        if c.offset_seconds == 0 {
            f.write_str("Z")
        } else {
            let sign = if c.offset_seconds < 0 { '-' } else { '+' };
            let abs = c.offset_seconds.unsigned_abs();
            write!(f, "{sign}{:02}:{:02}", abs / 3600, (abs % 3600) / 60)
        }
    }
}

impl Serialize for HelmTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HelmTime {
    /// Go reads `null` and `""` as the zero time.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        match text {
            None => Ok(HelmTime::ZERO),
            Some(t) => HelmTime::parse(&t).map_err(de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_round_trip_as_go_formats_them() {
        for (input, output) in [
            (
                "2026-11-23T22:07:19.70758959Z",
                "2026-11-23T22:07:19.70758959Z",
            ),
            ("2026-11-23T22:07:19Z", "2026-11-23T22:07:19Z"),
            ("2026-11-23T22:07:19.100Z", "2026-11-23T22:07:19.1Z"),
            ("2026-11-23T22:07:19+00:00", "2026-11-23T22:07:19Z"),
            ("2026-11-23T22:07:19.5-05:30", "2026-11-23T22:07:19.5-05:30"),
            ("", ""),
        ] {
            assert_eq!(
                HelmTime::parse(input).unwrap().to_string(),
                output,
                "{input}"
            );
        }
        assert!(HelmTime::parse("2026-11-23 22:07:19Z").is_err());
    }

    #[test]
    fn timestamps_are_written_in_utc_with_nanoseconds() {
        let ts = Timestamp::new(1_795_471_639, 707_589_590).unwrap();
        assert_eq!(
            HelmTime::from_timestamp(ts).to_string(),
            "2026-11-23T22:07:19.70758959Z"
        );
    }
}
