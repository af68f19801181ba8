//! Claude Code: `~/.claude.json` (user) or `.mcp.json` (project),
//! `mcpServers`; skills in `~/.claude/skills` or `.claude/skills`.

use crate::{Agent, ConfigFile, Env, Format, Scope};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub(crate) struct ClaudeCode;

impl Agent for ClaudeCode {
    fn id(&self) -> &'static str {
        "claude-code"
    }
    fn title(&self) -> &'static str {
        "Claude Code"
    }
    fn detect(&self, env: &Env) -> Option<String> {
        super::evidence(
            env,
            &[env.home.join(".claude.json"), env.home.join(".claude")],
            &["claude"],
        )
    }
    fn config(&self, env: &Env, scope: Scope) -> Option<ConfigFile> {
        let path = match scope {
            Scope::User => env.home.join(".claude.json"),
            Scope::Project => env.project.join(".mcp.json"),
        };
        Some(ConfigFile {
            path,
            format: Format::Json,
            table: &["mcpServers"],
        })
    }
    fn entry(&self, strobe: &Path) -> Value {
        let mut e = super::command_entry(strobe);
        e["type"] = "stdio".into();
        e
    }
    fn skills_dir(&self, env: &Env, scope: Scope) -> Option<PathBuf> {
        Some(match scope {
            Scope::User => env.home.join(".claude/skills"),
            Scope::Project => env.project.join(".claude/skills"),
        })
    }
}
