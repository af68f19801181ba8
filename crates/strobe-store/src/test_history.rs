//! How long each test took in its recent runs: the baseline `debug_test`
//! shows beside the elapsed time of the test running now, so an agent can
//! tell "slow as always" from "slower than it has ever been".
//!
//! A test is known by (project root, framework, name); only its last
//! [`RUNS_KEPT`] durations are kept, so the mean over what is stored is the
//! mean of its last runs.

use rusqlite::{Connection, params};

/// Durations kept per test.
pub const RUNS_KEPT: i64 = 10;

/// The durations of one finished test run.
#[derive(Debug, Clone)]
pub struct TestDurations {
    /// The project (absolute).
    pub project_root: String,
    /// The adapter that ran it ("cargo", "pytest"…).
    pub framework: String,
    /// When the run finished, ms since the epoch.
    pub finished_at: i64,
    /// (test name, duration in ms) of every test that finished.
    pub tests: Vec<(String, f64)>,
}

/// A test's usual duration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TestBaseline {
    /// Mean duration over the stored runs, ms.
    pub mean_ms: f64,
    /// How many runs the mean is over (1 to [`RUNS_KEPT`]).
    pub runs: u32,
}

/// Inserts a run's durations and drops each test's runs beyond the newest
/// [`RUNS_KEPT`], in one transaction.
pub(crate) fn record(conn: &mut Connection, d: &TestDurations) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO test_durations (project_root, framework, name, finished_at, duration_ms)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        let mut prune = tx.prepare_cached(
            "DELETE FROM test_durations
             WHERE project_root = ?1 AND framework = ?2 AND name = ?3 AND rowid NOT IN (
                 SELECT rowid FROM test_durations
                 WHERE project_root = ?1 AND framework = ?2 AND name = ?3
                 ORDER BY finished_at DESC, rowid DESC LIMIT ?4)",
        )?;
        for (name, ms) in &d.tests {
            if !ms.is_finite() || *ms < 0.0 {
                continue;
            }
            insert.execute(params![
                d.project_root,
                d.framework,
                name,
                d.finished_at,
                ms
            ])?;
            prune.execute(params![d.project_root, d.framework, name, RUNS_KEPT])?;
        }
    }
    tx.commit()
}

/// The baseline of one test, `None` when it never finished before.
pub(crate) fn baseline(
    conn: &Connection,
    project_root: &str,
    framework: &str,
    name: &str,
) -> rusqlite::Result<Option<TestBaseline>> {
    let mut stmt = conn.prepare_cached(
        "SELECT AVG(duration_ms), COUNT(*) FROM test_durations
         WHERE project_root = ?1 AND framework = ?2 AND name = ?3",
    )?;
    stmt.query_row(params![project_root, framework, name], |r| {
        let mean: Option<f64> = r.get(0)?;
        let runs: u32 = r.get(1)?;
        Ok(mean.map(|mean_ms| TestBaseline { mean_ms, runs }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        crate::schema::migrate(&c).unwrap();
        c
    }

    fn run(at: i64, tests: &[(&str, f64)]) -> TestDurations {
        TestDurations {
            project_root: "/p".into(),
            framework: "cargo".into(),
            finished_at: at,
            tests: tests.iter().map(|(n, ms)| (n.to_string(), *ms)).collect(),
        }
    }

    #[test]
    fn the_baseline_is_the_mean_of_the_last_ten_runs() {
        let mut c = conn();
        assert_eq!(baseline(&c, "/p", "cargo", "a").unwrap(), None);
        // Runs 1..=12 took 100, 200, …, 1200 ms: the last ten are 300..=1200.
        for i in 1..=12 {
            record(&mut c, &run(i, &[("a", i as f64 * 100.0)])).unwrap();
        }
        let b = baseline(&c, "/p", "cargo", "a").unwrap().unwrap();
        assert_eq!(b.runs, 10);
        assert!((b.mean_ms - 750.0).abs() < 1e-9, "{b:?}");
    }

    #[test]
    fn tests_are_told_apart_by_project_framework_and_name() {
        let mut c = conn();
        record(&mut c, &run(1, &[("a", 10.0), ("b", 30.0)])).unwrap();
        let mut other = run(1, &[("a", 1000.0)]);
        other.project_root = "/q".into();
        record(&mut c, &other).unwrap();
        let mut pytest = run(1, &[("a", 5000.0)]);
        pytest.framework = "pytest".into();
        record(&mut c, &pytest).unwrap();
        assert_eq!(
            baseline(&c, "/p", "cargo", "a").unwrap(),
            Some(TestBaseline {
                mean_ms: 10.0,
                runs: 1
            })
        );
        assert_eq!(
            baseline(&c, "/p", "cargo", "b").unwrap().unwrap().mean_ms,
            30.0
        );
        assert_eq!(
            baseline(&c, "/q", "cargo", "a").unwrap().unwrap().mean_ms,
            1000.0
        );
    }

    #[test]
    fn durations_that_are_not_real_times_are_skipped() {
        let mut c = conn();
        record(&mut c, &run(1, &[("a", f64::NAN), ("a", -1.0), ("a", 4.0)])).unwrap();
        assert_eq!(
            baseline(&c, "/p", "cargo", "a").unwrap(),
            Some(TestBaseline {
                mean_ms: 4.0,
                runs: 1
            })
        );
    }
}
