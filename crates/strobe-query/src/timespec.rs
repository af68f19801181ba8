//! Time bounds for `debug_query`: absolute nanoseconds or relative strings.

use serde_json::Value;

/// Resolves a `timeFrom`/`timeTo` value. Numbers are nanoseconds since the
/// session started; strings like `"-5s"`, `"-250ms"`, `"-1m"`, `"-10us"`,
/// `"-100ns"` are relative to `latest_ns` (the newest recorded event), and
/// plain digit strings are absolute nanoseconds.
pub fn resolve(field: &str, v: &Value, latest_ns: u64) -> Result<u64, String> {
    match v {
        Value::Number(n) => match n.as_u64() {
            Some(ns) => Ok(ns),
            None => Err(format!("'{field}' must be a non-negative number of nanoseconds or a relative time like \"-5s\", got {n}")),
        },
        Value::String(s) => parse_str(s.trim(), latest_ns).ok_or_else(|| {
            format!(
                "'{field}' {s:?} is not understood: use nanoseconds since session start (e.g. 1500000) or a time \
                 relative to the newest event: \"-5s\", \"-250ms\", \"-1m\", \"-10us\", \"-100ns\""
            )
        }),
        other => Err(format!("'{field}' must be a number or a string, got {other}")),
    }
}

fn parse_str(s: &str, latest_ns: u64) -> Option<u64> {
    if let Ok(ns) = s.parse::<u64>() {
        return Some(ns);
    }
    let rest = s.strip_prefix('-')?;
    let split = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = rest.split_at(split);
    let num: f64 = num.parse().ok()?;
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" => 60e9,
        "h" => 3600e9,
        _ => return None,
    };
    if !num.is_finite() || num < 0.0 {
        return None;
    }
    Some(latest_ns.saturating_sub((num * scale) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absolute_and_relative() {
        let latest = 10_000_000_000;
        assert_eq!(resolve("t", &json!(42), latest), Ok(42));
        assert_eq!(resolve("t", &json!("42"), latest), Ok(42));
        assert_eq!(resolve("t", &json!("-5s"), latest), Ok(5_000_000_000));
        assert_eq!(resolve("t", &json!("-500ms"), latest), Ok(9_500_000_000));
        assert_eq!(
            resolve("t", &json!("-1m"), latest),
            Ok(0),
            "clamped at session start"
        );
        assert_eq!(resolve("t", &json!("-1.5s"), latest), Ok(8_500_000_000));
        assert!(
            resolve("t", &json!("5 seconds ago"), latest)
                .unwrap_err()
                .contains("-5s")
        );
        assert!(resolve("t", &json!(-3), latest).is_err());
        assert!(resolve("t", &json!(true), latest).is_err());
    }
}
