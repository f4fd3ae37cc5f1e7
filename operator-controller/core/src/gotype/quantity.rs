//! Kubernetes `resource.Quantity` text: parsed and written back as apimachinery does.
//!
//! Input: the text of a quantity (`"500m"`, `"1.5Gi"`, `"2000"`). Output: the text Go's
//! `json.Marshal` of the parsed `Quantity` produces, or apimachinery's parse error. No IO.
//!
//! A quantity is `<sign><digits>[.<digits>]<suffix>` with the suffixes `n u m "" k M G T P E`
//! (decimal SI), `Ki Mi Gi Ti Pi Ei` (binary SI) or `e<int>`/`E<int>` (decimal exponent).
//! Go keeps the original text when it is already canonical and otherwise writes the canonical
//! form: no fractional digits, the largest suffix of the same family that loses nothing, values
//! below one nano rounded up to `1n`:
//!
//! | input   | output  | why                                                  |
//! |---------|---------|------------------------------------------------------|
//! | `100m`  | `100m`  | already canonical: kept                              |
//! | `0.5`   | `500m`  | fractional digits become a smaller suffix            |
//! | `1000m` | `1`     | trailing zeros move into the suffix                  |
//! | `2000`  | `2k`    | likewise                                             |
//! | `1.5Gi` | `1536Mi`| binary SI: largest power of 1024 that keeps an integer |
//! | `512`   | `512`   |                                                      |
//! | `0.5Ki` | `512`   | binary values below 1024 are written in decimal SI   |
//!
//! Magnitudes are held in `i128` with a decimal exponent; quantities beyond that (over about
//! 10^38) are refused with an error instead of Go's arbitrary precision (none occur in practice).

/// apimachinery's `ErrFormatWrong` text.
pub const ERR_FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// apimachinery's `ErrNumeric` text.
pub const ERR_NUMERIC: &str = "unable to parse numeric part of quantity";
/// apimachinery's `ErrSuffix` text.
pub const ERR_SUFFIX: &str = "unable to parse quantity's suffix";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    DecimalSi,
    BinarySi,
    DecimalExponent,
}

/// Parses `text` (already trimmed and unquoted) and returns what `json.Marshal` writes for it,
/// without the quotes.
pub fn canonical(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err(ERR_FORMAT_WRONG.into());
    }
    if text == "0" {
        return Ok("0".into());
    }
    let parts = split(text)?;
    let (base, exponent, format) = interpret_suffix(parts.suffix).ok_or(ERR_SUFFIX)?;

    // Go's fast path keeps the original text when it is already canonical.
    if let Some(kept) = kept_text(text, &parts, exponent, format) {
        return Ok(kept);
    }

    // value = mantissa * 10^scale, exact, in i128.
    let digits = format!("{}{}", parts.num, parts.denom);
    let mut mantissa: i128 = digits.parse().map_err(|_| ERR_NUMERIC.to_string())?;
    let mut scale: i32 = -(parts.denom.len() as i32);
    let mut format = format;
    if base == 10 {
        scale += exponent;
    } else {
        let factor = 1i128
            .checked_shl(exponent as u32)
            .ok_or_else(|| too_large(text))?;
        mantissa = mantissa
            .checked_mul(factor)
            .ok_or_else(|| too_large(text))?;
    }
    // Round anything finer than one nano up to the next nano.
    if scale < -9 && mantissa != 0 {
        let shift = (-9 - scale) as u32;
        let div = 10i128.checked_pow(shift).ok_or_else(|| too_large(text))?;
        let rounded_up = mantissa / div + i128::from(mantissa % div != 0);
        mantissa = rounded_up;
        scale = -9;
    }
    if format == Format::BinarySi {
        // Binary values are capped at 2^63-1 and below one become decimal SI.
        let max = i128::from(i64::MAX);
        if compare_scaled(mantissa, scale, max, 0) == std::cmp::Ordering::Greater {
            mantissa = max;
            scale = 0;
        }
        if mantissa > 0 && compare_scaled(mantissa, scale, 1, 0) == std::cmp::Ordering::Less {
            format = Format::DecimalSi;
        }
    }
    if !parts.positive {
        mantissa = -mantissa;
    }
    Ok(write_canonical(mantissa, scale, format))
}

fn too_large(text: &str) -> String {
    format!("quantity {text:?} is too large to be represented")
}

struct Parts<'a> {
    positive: bool,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

/// apimachinery's `parseQuantityString`.
fn split(s: &str) -> Result<Parts<'_>, String> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok(Parts {
            positive,
            num: "0",
            denom: "",
            suffix: "",
        });
    }
    let num_start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let mut num = &s[num_start..pos];
    if num.is_empty() {
        num = "0";
    }
    let mut denom = "";
    if pos < end && b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[start..pos];
    }
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(ERR_FORMAT_WRONG.into());
    }
    Ok(Parts {
        positive,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// apimachinery's suffixer: (base, exponent, format).
fn interpret_suffix(suffix: &str) -> Option<(u32, i32, Format)> {
    let dec = |e| Some((10, e, Format::DecimalSi));
    let bin = |e| Some((2, e, Format::BinarySi));
    match suffix {
        "n" => dec(-9),
        "u" => dec(-6),
        "m" => dec(-3),
        "" => dec(0),
        "k" => dec(3),
        "M" => dec(6),
        "G" => dec(9),
        "T" => dec(12),
        "P" => dec(15),
        "E" => dec(18),
        "Ki" => bin(10),
        "Mi" => bin(20),
        "Gi" => bin(30),
        "Ti" => bin(40),
        "Pi" => bin(50),
        "Ei" => bin(60),
        _ if suffix.len() > 1 && (suffix.starts_with('e') || suffix.starts_with('E')) => {
            let exp: i64 = suffix[1..].parse().ok()?;
            Some((10, i32::try_from(exp).ok()?, Format::DecimalExponent))
        }
        _ => None,
    }
}

/// The original text when Go's fast path keeps it (`ParseQuantity` caching `s`).
fn kept_text(text: &str, parts: &Parts<'_>, exponent: i32, format: Format) -> Option<String> {
    let precision: i32 = match format {
        Format::DecimalSi | Format::DecimalExponent => {
            18 - (parts.num.len() + parts.denom.len()) as i32
        }
        Format::BinarySi => {
            if exponent >= 0 && parts.denom.is_empty() {
                15 - parts.num.len() as i32 - ((exponent as f32) * 3.0 / 10.0) as i32 - 1
            } else {
                -1
            }
        }
    };
    if precision < 0 {
        return None;
    }
    let mut scale = match format {
        Format::BinarySi => 0,
        _ => exponent,
    };
    scale -= parts.denom.len() as i32;
    if scale < -9 {
        return None;
    }
    let shifted = format!("{}{}", parts.num, parts.denom);
    let value: i64 = shifted.parse().ok()?;
    let mantissa: i64 = match format {
        Format::BinarySi => 1i64.checked_shl(exponent as u32)?,
        _ => 1,
    };
    value.checked_mul(mantissa)?;
    let keep = match format {
        Format::BinarySi => exponent % 10 == 0 && (value & 0x07) != 0,
        _ => scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0'),
    };
    keep.then(|| text.to_owned())
}

/// Compares `a * 10^sa` with `b * 10^sb`.
fn compare_scaled(a: i128, sa: i32, b: i128, sb: i32) -> std::cmp::Ordering {
    let (mut a, mut b) = (a, b);
    if sa > sb {
        for _ in 0..(sa - sb) {
            a = a.saturating_mul(10);
        }
    } else {
        for _ in 0..(sb - sa) {
            b = b.saturating_mul(10);
        }
    }
    a.cmp(&b)
}

/// `CanonicalizeBytes` for `mantissa * 10^scale`.
fn write_canonical(mantissa: i128, scale: i32, format: Format) -> String {
    if mantissa == 0 {
        return "0".into();
    }
    let mut format = format;
    let mut integer: Option<i128> = None;
    if format == Format::BinarySi {
        let small = compare_scaled(mantissa, scale, -1024, 0) == std::cmp::Ordering::Greater
            && compare_scaled(mantissa, scale, 1024, 0) == std::cmp::Ordering::Less;
        if small {
            format = Format::DecimalSi;
        } else {
            match to_integer(mantissa, scale) {
                Some(v) => integer = Some(v),
                None => format = Format::DecimalSi,
            }
        }
    }
    match (format, integer) {
        (Format::BinarySi, Some(mut v)) => {
            let mut exp = 0;
            while v != 0 && v % 1024 == 0 {
                v /= 1024;
                exp += 10;
            }
            let suffix = match exp {
                0 => "",
                10 => "Ki",
                20 => "Mi",
                30 => "Gi",
                40 => "Ti",
                50 => "Pi",
                60 => "Ei",
                _ => "",
            };
            format!("{v}{suffix}")
        }
        _ => {
            let mut m = mantissa;
            let mut e = scale;
            while m % 10 == 0 {
                m /= 10;
                e += 1;
            }
            while e.rem_euclid(3) != 0 {
                m = m.saturating_mul(10);
                e -= 1;
            }
            let suffix = if format == Format::DecimalExponent {
                if e == 0 {
                    String::new()
                } else {
                    format!("e{e}")
                }
            } else {
                match e {
                    -9 => "n".into(),
                    -6 => "u".into(),
                    -3 => "m".into(),
                    3 => "k".into(),
                    6 => "M".into(),
                    9 => "G".into(),
                    12 => "T".into(),
                    15 => "P".into(),
                    18 => "E".into(),
                    // Go writes no suffix for exponents it has no letter for (a known quirk).
                    _ => String::new(),
                }
            };
            format!("{m}{suffix}")
        }
    }
}

/// `mantissa * 10^scale` as an integer, when it is one.
fn to_integer(mantissa: i128, scale: i32) -> Option<i128> {
    if scale >= 0 {
        let mut v = mantissa;
        for _ in 0..scale {
            v = v.checked_mul(10)?;
        }
        Some(v)
    } else {
        let div = 10i128.checked_pow((-scale) as u32)?;
        (mantissa % div == 0).then_some(mantissa / div)
    }
}

#[cfg(test)]
mod tests {
    use super::canonical;

    /// Expected outputs are what apimachinery v0.36 writes (`resource.MustParse(x)` marshalled).
    #[test]
    fn quantities_are_written_as_apimachinery_writes_them() {
        for (input, want) in [
            ("100m", "100m"),
            ("0.5", "500m"),
            ("1000m", "1"),
            ("2000", "2k"),
            ("1.5Gi", "1536Mi"),
            ("128Mi", "128Mi"),
            ("2048Mi", "2Gi"),
            ("1024", "1024"),
            ("1Ki", "1Ki"),
            ("0.5Ki", "512"),
            ("10", "10"),
            ("1", "1"),
            ("1e3", "1e3"),
            ("1.0", "1"),
            ("0.1m", "100u"),
            ("0.0000000001", "1n"),
            ("500M", "500M"),
            ("1G", "1G"),
            ("0", "0"),
            ("00", "0"),
            ("-100m", "-100m"),
            ("1.5", "1500m"),
            ("250Mi", "250Mi"),
            ("64Mi", "64Mi"),
            ("3.5", "3500m"),
        ] {
            assert_eq!(canonical(input).as_deref(), Ok(want), "input {input}");
        }
    }

    #[test]
    fn malformed_quantities_get_apimachinery_errors() {
        assert_eq!(canonical("abc"), Err(super::ERR_FORMAT_WRONG.to_string()));
        assert_eq!(canonical("1Zi"), Err(super::ERR_FORMAT_WRONG.to_string()));
        assert_eq!(canonical("1ki"), Err(super::ERR_SUFFIX.to_string()));
        assert_eq!(canonical(""), Err(super::ERR_FORMAT_WRONG.to_string()));
    }
}
