//! Cursor: `~/.cursor/mcp.json` (user) or `.cursor/mcp.json` (project),
//! `mcpServers`.

use crate::{Agent, ConfigFile, Env, Format, Scope};
use serde_json::Value;
use std::path::Path;

pub(crate) struct Cursor;

impl Agent for Cursor {
    fn id(&self) -> &'static str {
        "cursor"
    }
    fn title(&self) -> &'static str {
        "Cursor"
    }
    fn detect(&self, env: &Env) -> Option<String> {
        super::evidence(env, &[env.home.join(".cursor")], &["cursor"])
    }
    fn config(&self, env: &Env, scope: Scope) -> Option<ConfigFile> {
        let path = match scope {
            Scope::User => env.home.join(".cursor/mcp.json"),
            Scope::Project => env.project.join(".cursor/mcp.json"),
        };
        Some(ConfigFile {
            path,
            format: Format::Json,
            table: &["mcpServers"],
        })
    }
    fn entry(&self, strobe: &Path) -> Value {
        super::command_entry(strobe)
    }
}
