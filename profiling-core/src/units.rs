//! The values a command line or a config writes with a unit, or as a count:
//! durations (`250us`, `30s`, `2m`), rates (queries a second), sizes
//! (`2 GiB`) and counts. One family, one set of rules: each parser takes
//! text, refuses what is not a value of its kind or is outside what the
//! tool can honour (saying the range), and never panics, never wraps and
//! never rounds a value into another one.

use std::time::Duration;

/// The longest duration any option or key takes: a week. Longer ones are
/// refused rather than carried into time arithmetic that would overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);

/// The highest rate: a query every nanosecond.
pub const MAX_RATE: f64 = 1e9;

/// `250us`, `10ms`, `30s`, `2m`, `1h` (also `ns`, `µs`, `min`), more than
/// nothing and at most [`MAX_DURATION`]; a bare number is refused for want
/// of a unit.
///
/// ```
/// use profiling_core::units::parse_duration;
/// use std::time::Duration;
///
/// assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
/// assert!(parse_duration("100000000000000000000s").unwrap_err().contains("at most"));
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().map_err(|_| {
        format!("`{text}` is not a duration: a number and a unit, like 60s or 10ms")
    })?;
    let seconds_per_unit = match (unit.trim(), nanos_per_unit(unit.trim())) {
        (_, Some(nanos)) => nanos / 1e9,
        ("", None) => {
            return Err(format!(
                "`{text}` needs a unit: {text}s, {text}ms or {text}us"
            ))
        }
        (other, None) => return Err(format!("unknown unit `{other}` in `{text}`: {TIME_UNITS}")),
    };
    let seconds = number * seconds_per_unit;
    if seconds.is_nan() || seconds <= 0.0 {
        return Err(format!("`{text}`: a duration is more than nothing"));
    }
    if seconds > MAX_DURATION.as_secs_f64() {
        return Err(format!(
            "`{text}` is too long: a duration is at most {} h (a week)",
            MAX_DURATION.as_secs() / 3600
        ));
    }
    let duration = Duration::try_from_secs_f64(seconds)
        .map_err(|_| format!("`{text}` is not a duration this tool can hold"))?;
    if duration.is_zero() {
        return Err(format!(
            "`{text}` is less than a nanosecond, the finest duration this tool keeps"
        ));
    }
    Ok(duration)
}

/// The time units every duration this tool reads may have, in words.
pub const TIME_UNITS: &str = "ns, us, ms, s, m or h";

/// The size units every size this tool reads may have, in words.
pub const SIZE_UNITS: &str = "B, KiB, MiB, GiB, TiB (or KB, MB, GB, TB in powers of 1000)";

/// Nanoseconds in one `unit` of time: `ns`, `us` (`µs`), `ms`, `s`,
/// `m` (`min`), `h`; the one table of time units, for durations and the
/// gates' thresholds.
pub fn nanos_per_unit(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return None,
    })
}

/// Bytes in one `unit` of size, any case: `B`, `KB`, `MB`, `GB`, `TB` in
/// powers of 1000, `KiB`, `MiB`, `GiB`, `TiB` in powers of 1024; the one
/// table of size units, for sizes and the gates' thresholds.
pub fn bytes_per_unit(unit: &str) -> Option<u64> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => return None,
    })
}

/// A duration in the unit that reads best: `950 ns`, `1.20 µs`, `3.40 ms`,
/// `2.00 s`.
///
/// ```
/// assert_eq!(profiling_core::units::format_ns(1_204_000), "1.20 ms");
/// ```
pub fn format_ns(ns: u64) -> String {
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=999_999 => format!("{:.2} µs", ns as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.2} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// A number of bytes in the binary unit that reads best, one decimal
/// (`512 B`, `1.5 KiB`, `2.0 GiB`): the one byte formatter of the
/// terminal, the pages and the gates. Fractions of a byte (a mean) are
/// rounded below a KiB.
///
/// ```
/// use profiling_core::units::format_bytes;
///
/// assert_eq!(format_bytes(512.0), "512 B");
/// assert_eq!(format_bytes(1536.0), "1.5 KiB");
/// assert_eq!(format_bytes(3.5 * 1024.0 * 1024.0 * 1024.0), "3.5 GiB");
/// ```
pub fn format_bytes(bytes: f64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024.0 {
        return format!("{bytes:.0} B");
    }
    let mut value = bytes / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A duration as whole nanoseconds, saturating at `u64::MAX` (584 years;
/// never reached by a parsed duration, which is at most a week).
pub fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// A rate in queries a second: a number above 0 (`50`, `0.5`, `2e3`), at
/// most [`MAX_RATE`].
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let rate: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a rate: a number of queries a second, like 50"))?;
    check_rate(rate)
}

/// A rate given as a number (a config's value): above 0, finite, at most
/// [`MAX_RATE`].
pub fn check_rate(rate: f64) -> Result<f64, String> {
    if !(rate.is_finite() && rate > 0.0) {
        return Err(format!(
            "the offered rate must be above 0 queries a second (got {rate})"
        ));
    }
    if rate > MAX_RATE {
        return Err(format!(
            "{rate} queries a second is more than one a nanosecond (at most {MAX_RATE:e})"
        ));
    }
    Ok(rate)
}

/// A whole number, `0` or more, with `_` allowed between digits
/// (`270_336`); refused when it does not fit `T`.
pub fn parse_count<T: TryFrom<u64>>(text: &str) -> Result<T, String> {
    let text = text.trim();
    let digits: String = text.chars().filter(|&c| c != '_').collect();
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || text.starts_with('_')
        || text.ends_with('_')
    {
        return Err(format!("`{text}` is not a count: a whole number, like 100"));
    }
    let value: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is too large a count"))?;
    T::try_from(value)
        .map_err(|_| format!("`{text}` is too large a count (at most {})", max_of::<T>()))
}

/// A count of at least 1 ([`parse_count`] otherwise).
pub fn parse_nonzero_count<T: TryFrom<u64>>(text: &str) -> Result<T, String> {
    if parse_count::<u64>(text)? == 0 {
        return Err(format!("`{}`: at least 1", text.trim()));
    }
    parse_count(text)
}

/// The largest `u64` that fits `T`.
fn max_of<T: TryFrom<u64>>() -> u64 {
    // A binary search over the bits: `T` is an integer type.
    let (mut low, mut high) = (0u64, u64::MAX);
    while low < high {
        let middle = low + (high - low).div_ceil(2);
        if T::try_from(middle).is_ok() {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    low
}

/// A size in bytes: a whole number, or a number with a unit (`B`, `KB`,
/// `MB`, `GB`, `TB` in powers of 1000, `KiB`, `MiB`, `GiB`, `TiB` in powers
/// of 1024, any case); 0 is the caller's to refuse or take.
///
/// ```
/// use profiling_core::units::parse_size;
///
/// assert_eq!(parse_size("2 GiB"), Ok(2 << 30));
/// assert_eq!(parse_size("1.5MB"), Ok(1_500_000));
/// assert!(parse_size("99999999 TiB").is_err());
/// ```
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let expected = || {
        format!(
            "expected a size: a whole number of bytes, or a number with a unit (`2 GiB`, `500 MB`), got `{text}`"
        )
    };
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = (&text[..split], text[split..].trim());
    let scale: u64 = match unit {
        "" => 1,
        unit => bytes_per_unit(unit).ok_or_else(expected)?,
    };
    // Whole numbers exactly; a fraction through a float, rounded.
    if let Ok(whole) = number.parse::<u64>() {
        return whole
            .checked_mul(scale)
            .ok_or_else(|| format!("`{text}` is more bytes than this tool can count"));
    }
    let number: f64 = number.parse().map_err(|_| expected())?;
    let bytes = (number * scale as f64).round();
    // `u64::MAX as f64` rounds up to 2^64, which does not fit.
    if !(bytes >= 0.0 && bytes < u64::MAX as f64) {
        return Err(format!("`{text}` is more bytes than this tool can count"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_duration_needs_its_unit_and_fits_a_week() {
        assert_eq!(parse_duration("10ms").unwrap(), Duration::from_millis(10));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("168h").unwrap(), MAX_DURATION);
        assert_eq!(
            parse_duration("10").unwrap_err(),
            "`10` needs a unit: 10s, 10ms or 10us"
        );
        assert!(parse_duration("0s")
            .unwrap_err()
            .contains("more than nothing"));
        assert!(parse_duration("5 parsecs")
            .unwrap_err()
            .contains("unknown unit"));
        assert!(parse_duration("0.1ns")
            .unwrap_err()
            .contains("less than a nanosecond"));
        for absurd in [
            "100000000000000000000s",
            "18446744073.71s",
            "169h",
            "1e400s",
        ] {
            assert!(parse_duration(absurd).is_err(), "{absurd}");
        }
    }

    #[test]
    fn nanoseconds_saturate_rather_than_wrap() {
        assert_eq!(nanos(Duration::from_secs(2)), 2_000_000_000);
        assert_eq!(nanos(Duration::MAX), u64::MAX);
        // The bound that once became 0.447 ms.
        assert_eq!(nanos(Duration::from_secs_f64(18446744073.71)), u64::MAX);
    }

    #[test]
    fn a_rate_is_above_nothing_and_at_most_one_a_nanosecond() {
        assert_eq!(parse_rate("2e3"), Ok(2000.0));
        assert_eq!(parse_rate(" 0.5 "), Ok(0.5));
        for bad in ["0", "-1", "nan", "inf", "1e12", "fast", ""] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_count_is_whole_and_fits_its_type() {
        assert_eq!(parse_count::<u64>("270_336"), Ok(270_336));
        assert_eq!(parse_count::<u32>("0"), Ok(0));
        assert_eq!(
            parse_count::<u32>("4294967296").unwrap_err(),
            "`4294967296` is too large a count (at most 4294967295)"
        );
        assert!(parse_count::<u64>("99999999999999999999").is_err());
        for bad in ["-1", "1.5", "1e3", "", "_1", "1_", "ten"] {
            assert!(parse_count::<u64>(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_nonzero_count::<u32>("0"),
            Err("`0`: at least 1".to_owned())
        );
        assert_eq!(parse_nonzero_count::<u32>("3"), Ok(3));
    }

    #[test]
    fn a_size_is_counted_exactly_or_refused() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("16 EiB").is_err());
        assert_eq!(
            parse_size("16777216 TiB"),
            Err("`16777216 TiB` is more bytes than this tool can count".to_owned())
        );
        assert_eq!(parse_size("0.5 KiB"), Ok(512));
    }

    proptest! {
        // Whatever the text, every parser answers: a value or a reason.
        #[test]
        fn no_text_makes_a_parser_panic(text in "\\PC*") {
            let _ = parse_duration(&text);
            let _ = parse_rate(&text);
            let _ = parse_count::<u64>(&text);
            let _ = parse_count::<u32>(&text);
            let _ = parse_nonzero_count::<u32>(&text);
            let _ = parse_size(&text);
        }

        #[test]
        fn numbers_with_any_unit_are_in_range_or_refused(
            number in "[0-9]{0,30}(\\.[0-9]{0,30})?",
            unit in "(ns|us|µs|ms|s|m|min|h|B|KiB|GiB|TB|)",
        ) {
            let text = format!("{number}{unit}");
            if let Ok(duration) = parse_duration(&text) {
                prop_assert!(!duration.is_zero() && duration <= MAX_DURATION);
            }
            if let Ok(rate) = parse_rate(&number) {
                prop_assert!(rate > 0.0 && rate <= MAX_RATE);
            }
            let _ = parse_size(&text);
        }
    }
}
