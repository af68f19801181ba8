//! Every MCP tool call an agent made on a session: the audit trail the web
//! UI draws beside the session's own events, so a human can follow how the
//! agent reached its conclusion.
//!
//! A call is stored under the session it named (its `sessionId` argument,
//! or the session a `debug_launch` created). Arguments are kept as JSON text
//! up to [`MAX_ARGS_CHARS`]; the reply only as its size and a short summary,
//! since the reply's content is the session's own data.

use rusqlite::{Connection, params};
use serde::Serialize;

/// Characters of a call's arguments kept; longer ones are cut and marked.
pub const MAX_ARGS_CHARS: usize = 4096;
/// Characters of a reply's text kept as its summary.
pub const SUMMARY_CHARS: usize = 200;

/// One tool call, as the MCP layer reports it.
#[derive(Debug, Clone)]
pub struct AgentCall {
    /// When the call arrived, µs since the epoch.
    pub started_us: i64,
    /// How long it took, µs.
    pub duration_us: i64,
    /// The tool's name.
    pub tool: String,
    /// Its arguments (JSON text).
    pub args: String,
    /// Size of the serialized reply.
    pub response_bytes: u64,
    /// Whether the reply was an error.
    pub is_error: bool,
    /// The start of the reply's text, already cut by the caller (see [`clip`]
    /// and [`SUMMARY_CHARS`]), which should not copy a long reply to cut it here.
    pub summary: String,
    /// Who called: the MCP client's name from its `initialize` (an agent's,
    /// or `strobe-dap` for an editor); empty when it gave none.
    pub client: String,
}

/// A stored call.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCallRow {
    /// Increasing per store; pass the last one seen to read only newer calls.
    pub seq: i64,
    /// When the call arrived, µs since the epoch.
    pub started_us: i64,
    /// How long it took, µs.
    pub duration_us: i64,
    /// The tool's name.
    pub tool: String,
    /// Its arguments (JSON text, possibly cut; see [`MAX_ARGS_CHARS`]).
    pub args: String,
    /// Size of the serialized reply.
    pub response_bytes: u64,
    /// Whether the reply was an error.
    pub is_error: bool,
    /// The start of the reply's text.
    pub summary: String,
    /// Who called (the MCP client's name; empty for calls stored before
    /// it was recorded).
    pub client: String,
}

/// Cuts `text` to at most `max` characters on a character boundary, saying so.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((at, _)) => format!(
            "{}… ({} characters in all)",
            &text[..at],
            text.chars().count()
        ),
    }
}

/// Stores `calls` under the session `id`; false when no such session is stored.
pub(crate) fn record(
    conn: &mut Connection,
    id: &str,
    calls: &[AgentCall],
) -> rusqlite::Result<bool> {
    let tx = conn.transaction()?;
    let key: Option<i64> = tx
        .query_row("SELECT key FROM sessions WHERE id = ?1", [id], |r| r.get(0))
        .ok();
    let Some(key) = key else {
        return Ok(false);
    };
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO agent_calls
                (session, started_us, duration_us, tool, args, response_bytes, is_error, summary, client)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?;
        for c in calls {
            insert.execute(params![
                key,
                c.started_us,
                c.duration_us,
                c.tool,
                clip(&c.args, MAX_ARGS_CHARS),
                c.response_bytes as i64,
                c.is_error,
                c.summary,
                c.client,
            ])?;
        }
    }
    tx.commit()?;
    Ok(true)
}

/// The calls on session `key` after `after_seq`, oldest first, at most `limit`.
pub(crate) fn list(
    conn: &Connection,
    key: i64,
    after_seq: i64,
    limit: usize,
) -> rusqlite::Result<Vec<AgentCallRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, started_us, duration_us, tool, args, response_bytes, is_error, summary, client
         FROM agent_calls WHERE session = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
    )?;
    let rows = stmt.query_map(params![key, after_seq, limit as i64], |r| {
        Ok(AgentCallRow {
            seq: r.get(0)?,
            started_us: r.get(1)?,
            duration_us: r.get(2)?,
            tool: r.get(3)?,
            args: r.get(4)?,
            response_bytes: r.get::<_, i64>(5)? as u64,
            is_error: r.get(6)?,
            summary: r.get(7)?,
            client: r.get(8)?,
        })
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        crate::schema::migrate(&c).unwrap();
        c.execute(
            "INSERT INTO sessions (key, id, binary_path, project_root, launch_json, started_at, status)
             VALUES (7, 's1', '/bin/x', '/p', '{}', 0, 'running')",
            [],
        )
        .unwrap();
        c
    }

    fn call(tool: &str, args: &str) -> AgentCall {
        AgentCall {
            started_us: 1,
            duration_us: 2,
            tool: tool.into(),
            args: args.into(),
            response_bytes: 3,
            is_error: false,
            summary: "ok".into(),
            client: "claude-code".into(),
        }
    }

    #[test]
    fn calls_are_stored_per_session_and_read_after_a_seq() {
        let mut c = conn();
        assert!(
            record(
                &mut c,
                "s1",
                &[call("debug_launch", "{}"), call("debug_query", "{\"a\":1}")]
            )
            .unwrap()
        );
        assert!(
            !record(&mut c, "nope", &[call("debug_query", "{}")]).unwrap(),
            "unknown session"
        );
        let all = list(&c, 7, 0, 100).unwrap();
        assert_eq!(
            all.iter().map(|r| r.tool.as_str()).collect::<Vec<_>>(),
            ["debug_launch", "debug_query"]
        );
        let newer = list(&c, 7, all[0].seq, 100).unwrap();
        assert_eq!(newer.len(), 1);
        assert_eq!(newer[0].args, "{\"a\":1}");
        assert_eq!(newer[0].client, "claude-code");
    }

    #[test]
    fn long_arguments_are_cut_and_say_so() {
        let mut c = conn();
        let long = "é".repeat(MAX_ARGS_CHARS + 10);
        record(&mut c, "s1", &[call("debug_memory", &long)]).unwrap();
        let row = &list(&c, 7, 0, 1).unwrap()[0];
        assert!(row.args.starts_with(&"é".repeat(MAX_ARGS_CHARS)));
        assert!(
            row.args
                .ends_with(&format!("({} characters in all)", MAX_ARGS_CHARS + 10)),
            "{}",
            &row.args[row.args.len() - 40..]
        );
    }
}
