//! Gemini CLI: `~/.gemini/settings.json` (user) or
//! `.gemini/settings.json` (project), `mcpServers`.

use crate::{Agent, ConfigFile, Env, Format, Scope};
use serde_json::Value;
use std::path::Path;

pub(crate) struct Gemini;

impl Agent for Gemini {
    fn id(&self) -> &'static str {
        "gemini"
    }
    fn title(&self) -> &'static str {
        "Gemini CLI"
    }
    fn detect(&self, env: &Env) -> Option<String> {
        super::evidence(env, &[env.home.join(".gemini")], &["gemini"])
    }
    fn config(&self, env: &Env, scope: Scope) -> Option<ConfigFile> {
        let path = match scope {
            Scope::User => env.home.join(".gemini/settings.json"),
            Scope::Project => env.project.join(".gemini/settings.json"),
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
