//! opencode: `~/.config/opencode/opencode.json` (user) or `opencode.json`
//! (project), JSONC, under `mcp`, with the command and its arguments in
//! one array.

use crate::{Agent, ConfigFile, Env, Format, Scope};
use serde_json::{Value, json};
use std::path::Path;

pub(crate) struct OpenCode;

impl Agent for OpenCode {
    fn id(&self) -> &'static str {
        "opencode"
    }
    fn title(&self) -> &'static str {
        "opencode"
    }
    fn detect(&self, env: &Env) -> Option<String> {
        super::evidence(env, &[env.config_home.join("opencode")], &["opencode"])
    }
    fn config(&self, env: &Env, scope: Scope) -> Option<ConfigFile> {
        let dir = match scope {
            Scope::User => env.config_home.join("opencode"),
            Scope::Project => env.project.clone(),
        };
        // It reads either name; an existing .jsonc is the one to edit.
        let jsonc = dir.join("opencode.jsonc");
        let path = if jsonc.exists() {
            jsonc
        } else {
            dir.join("opencode.json")
        };
        Some(ConfigFile {
            path,
            format: Format::Json,
            table: &["mcp"],
        })
    }
    fn entry(&self, strobe: &Path) -> Value {
        json!({"type": "local", "command": [strobe.display().to_string(), "mcp"], "enabled": true})
    }
}
