//! The last passing traced run of each test, per trace patterns: the
//! baseline `debug_test {rerun: "compare"}` diffs a failing run with. Kept
//! in the database, so a daemon restarted between the passing run and the
//! failing one still finds it (while its session is retained).

use rusqlite::{Connection, OptionalExtension, params};

/// A traced test run that passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracedPass {
    /// The project (absolute).
    pub project_root: String,
    /// The test the run named; `None` when it ran the whole suite.
    pub test: Option<String>,
    /// The trace patterns, in any order (stored sorted).
    pub patterns: Vec<String>,
    /// The run's session: what a later failing run is diffed with.
    pub session_id: String,
    /// When it finished, ms since the epoch.
    pub finished_at: i64,
}

/// The key a run's patterns are stored under: sorted, one per line.
fn patterns_key(patterns: &[String]) -> String {
    let mut sorted = patterns.to_vec();
    sorted.sort();
    sorted.join("\n")
}

/// Stores `p` as its test's newest passing traced run (replacing an older
/// one of the same test and patterns).
pub(crate) fn record(conn: &Connection, p: &TracedPass) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO traced_passes (project_root, test, patterns, session_id, finished_at)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(project_root, test, patterns) DO UPDATE SET
             session_id = excluded.session_id, finished_at = excluded.finished_at
         WHERE excluded.finished_at >= traced_passes.finished_at",
        params![
            p.project_root,
            p.test.as_deref().unwrap_or(""),
            patterns_key(&p.patterns),
            p.session_id,
            p.finished_at
        ],
    )?;
    Ok(())
}

/// The newest passing traced run of this test with these patterns.
pub(crate) fn find(
    conn: &Connection,
    project_root: &str,
    test: Option<&str>,
    patterns: &[String],
) -> rusqlite::Result<Option<TracedPass>> {
    conn.query_row(
        "SELECT session_id, finished_at FROM traced_passes
         WHERE project_root = ?1 AND test = ?2 AND patterns = ?3",
        params![project_root, test.unwrap_or(""), patterns_key(patterns)],
        |r| {
            Ok(TracedPass {
                project_root: project_root.to_string(),
                test: test.map(str::to_string),
                patterns: patterns.to_vec(),
                session_id: r.get(0)?,
                finished_at: r.get(1)?,
            })
        },
    )
    .optional()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(test: Option<&str>, patterns: &[&str], session: &str, at: i64) -> TracedPass {
        TracedPass {
            project_root: "/p".into(),
            test: test.map(str::to_string),
            patterns: patterns.iter().map(|p| p.to_string()).collect(),
            session_id: session.into(),
            finished_at: at,
        }
    }

    #[test]
    fn the_newest_pass_of_a_test_and_its_patterns_in_any_order_is_found() {
        let c = Connection::open_in_memory().unwrap();
        crate::schema::migrate(&c).unwrap();
        let pats = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(find(&c, "/p", Some("t"), &pats(&["a"])).unwrap(), None);
        record(&c, &pass(Some("t"), &["b", "a"], "s1", 10)).unwrap();
        record(&c, &pass(Some("t"), &["a", "b"], "s2", 20)).unwrap();
        // An older run finishing late does not replace a newer one.
        record(&c, &pass(Some("t"), &["a", "b"], "s0", 5)).unwrap();
        record(&c, &pass(None, &["a", "b"], "whole", 30)).unwrap();
        record(&c, &pass(Some("t"), &["a"], "only-a", 40)).unwrap();
        let found = find(&c, "/p", Some("t"), &pats(&["b", "a"]))
            .unwrap()
            .unwrap();
        assert_eq!((found.session_id.as_str(), found.finished_at), ("s2", 20));
        assert_eq!(
            find(&c, "/p", None, &pats(&["a", "b"]))
                .unwrap()
                .unwrap()
                .session_id,
            "whole"
        );
        assert_eq!(
            find(&c, "/p", Some("t"), &pats(&["a"]))
                .unwrap()
                .unwrap()
                .session_id,
            "only-a"
        );
        assert_eq!(find(&c, "/q", Some("t"), &pats(&["a"])).unwrap(), None);
    }
}
