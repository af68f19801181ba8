//! Codex: `~/.codex/config.toml` (user) or `.codex/config.toml`
//! (project), `[mcp_servers.strobe]`.

use crate::{Agent, ConfigFile, Env, Format, Scope};
use serde_json::Value;
use std::path::Path;

pub(crate) struct Codex;

impl Agent for Codex {
    fn id(&self) -> &'static str {
        "codex"
    }
    fn title(&self) -> &'static str {
        "Codex"
    }
    fn detect(&self, env: &Env) -> Option<String> {
        super::evidence(env, &[env.home.join(".codex")], &["codex"])
    }
    fn config(&self, env: &Env, scope: Scope) -> Option<ConfigFile> {
        let path = match scope {
            Scope::User => env.home.join(".codex/config.toml"),
            Scope::Project => env.project.join(".codex/config.toml"),
        };
        Some(ConfigFile {
            path,
            format: Format::Toml,
            table: &["mcp_servers"],
        })
    }
    fn entry(&self, strobe: &Path) -> Value {
        super::command_entry(strobe)
    }
}
