//! Claude Desktop: `~/.config/Claude/claude_desktop_config.json`,
//! `mcpServers`; it has no project scope.

use crate::{Agent, ConfigFile, Env, Format, Scope};
use serde_json::Value;
use std::path::Path;

pub(crate) struct ClaudeDesktop;

impl Agent for ClaudeDesktop {
    fn id(&self) -> &'static str {
        "claude-desktop"
    }
    fn title(&self) -> &'static str {
        "Claude Desktop"
    }
    fn detect(&self, env: &Env) -> Option<String> {
        super::evidence(env, &[env.config_home.join("Claude")], &["claude-desktop"])
    }
    fn config(&self, env: &Env, scope: Scope) -> Option<ConfigFile> {
        (scope == Scope::User).then(|| ConfigFile {
            path: env.config_home.join("Claude/claude_desktop_config.json"),
            format: Format::Json,
            table: &["mcpServers"],
        })
    }
    fn entry(&self, strobe: &Path) -> Value {
        super::command_entry(strobe)
    }
}
