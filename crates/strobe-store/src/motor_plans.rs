//! What `debug_ui_action` learned about setting widgets that have no
//! native route: per (application, role, signature), the plan that worked
//! (JSON, owned by the motor layer) and how often it was used. Kept across
//! sessions and restarts, so a knob is learned once.

use rusqlite::{Connection, OptionalExtension, params};

/// A widget's learned plan.
#[derive(Debug, Clone, PartialEq)]
pub struct MotorPlan {
    /// The program ("gtk_demo.py", "synth").
    pub app: String,
    /// The widget's role ("knob", "slider").
    pub role: String,
    /// Its name, or for an unnamed widget its visual signature.
    pub signature: String,
    /// The plan, as the motor layer serialized it.
    pub plan: String,
    /// Times it was used after it was learned.
    pub uses: i64,
    /// When it was learned or last corrected, ms since the epoch.
    pub updated_at: i64,
}

/// Stores (or replaces) a plan.
pub(crate) fn put(conn: &Connection, p: &MotorPlan) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO motor_plans (app, role, signature, plan, uses, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT(app, role, signature) DO UPDATE SET
             plan = excluded.plan, uses = excluded.uses, updated_at = excluded.updated_at",
        params![p.app, p.role, p.signature, p.plan, p.uses, p.updated_at],
    )?;
    Ok(())
}

/// The plan for exactly this widget; failing that, the newest for a widget
/// of the same role in the same program ("one like it"), flagged `false`.
pub(crate) fn find(
    conn: &Connection,
    app: &str,
    role: &str,
    signature: &str,
) -> rusqlite::Result<Option<(MotorPlan, bool)>> {
    let row = |r: &rusqlite::Row<'_>| {
        Ok(MotorPlan {
            app: r.get(0)?,
            role: r.get(1)?,
            signature: r.get(2)?,
            plan: r.get(3)?,
            uses: r.get(4)?,
            updated_at: r.get(5)?,
        })
    };
    let exact = conn
        .query_row(
            "SELECT app, role, signature, plan, uses, updated_at FROM motor_plans
             WHERE app = ?1 AND role = ?2 AND signature = ?3",
            params![app, role, signature],
            row,
        )
        .optional()?;
    if let Some(p) = exact {
        return Ok(Some((p, true)));
    }
    Ok(conn
        .query_row(
            "SELECT app, role, signature, plan, uses, updated_at FROM motor_plans
             WHERE app = ?1 AND role = ?2 ORDER BY updated_at DESC LIMIT 1",
            params![app, role],
            row,
        )
        .optional()?
        .map(|p| (p, false)))
}
