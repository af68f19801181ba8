//! Human-readable session ids: `{binary}-{YYYY-MM-DD}-{HHhMM}` with `-2`,
//! `-3`, … appended on collision.

use chrono::{DateTime, Local};

/// Builds a session id for `binary_name` at `now`, skipping ids for which
/// `taken` returns true.
pub fn make_session_id(
    binary_name: &str,
    now: DateTime<Local>,
    taken: impl Fn(&str) -> bool,
) -> String {
    let stem: String = binary_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let stem = if stem.is_empty() {
        "session".to_string()
    } else {
        stem
    };
    let base = format!("{stem}-{}", now.format("%Y-%m-%d-%Hh%M"));
    if !taken(&base) {
        return base;
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|id| !taken(id))
        .expect("an unbounded range always yields a free id")
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn formats_and_suffixes() {
        let t = Local.with_ymd_and_hms(2026, 2, 5, 14, 32, 0).unwrap();
        assert_eq!(
            make_session_id("myapp", t, |_| false),
            "myapp-2026-02-05-14h32"
        );
        let taken = ["myapp-2026-02-05-14h32", "myapp-2026-02-05-14h32-2"];
        assert_eq!(
            make_session_id("myapp", t, |id| taken.contains(&id)),
            "myapp-2026-02-05-14h32-3"
        );
        assert_eq!(
            make_session_id("my app", t, |_| false),
            "my_app-2026-02-05-14h32"
        );
    }
}
