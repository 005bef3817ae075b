//! Durations as the command line and configs write them: a number and a
//! unit.

use std::time::Duration;

/// `250us`, `10ms`, `30s`, `2m`, `1h` (also `µs`, `min`); a bare number is
/// refused for want of a unit, and so is nothing (zero or less).
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().map_err(|_| {
        format!("`{text}` is not a duration: a number and a unit, like 60s or 10ms")
    })?;
    let seconds = match unit.trim() {
        "ns" => number / 1e9,
        "us" | "µs" => number / 1e6,
        "ms" => number / 1e3,
        "s" => number,
        "m" | "min" => number * 60.0,
        "h" => number * 3600.0,
        "" => {
            return Err(format!(
                "`{text}` needs a unit: {text}s, {text}ms or {text}us"
            ))
        }
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{text}`: ns, us, ms, s, m or h"
            ))
        }
    };
    if !(seconds > 0.0 && seconds.is_finite()) {
        return Err(format!("`{text}`: a duration is more than nothing"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_needs_its_unit() {
        assert_eq!(parse_duration("10ms").unwrap(), Duration::from_millis(10));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
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
    }
}
