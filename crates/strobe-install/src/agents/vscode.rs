//! VS Code: the user profile's `mcp.json` (`~/.config/Code/User/mcp.json`)
//! or the workspace's `.vscode/mcp.json`, both JSONC, under `servers`.

use crate::{Agent, ConfigFile, Env, Format, Scope};
use serde_json::Value;
use std::path::Path;

pub(crate) struct VsCode;

impl Agent for VsCode {
    fn id(&self) -> &'static str {
        "vscode"
    }
    fn title(&self) -> &'static str {
        "VS Code"
    }
    fn detect(&self, env: &Env) -> Option<String> {
        super::evidence(env, &[env.config_home.join("Code")], &["code"])
    }
    fn config(&self, env: &Env, scope: Scope) -> Option<ConfigFile> {
        let path = match scope {
            Scope::User => env.config_home.join("Code/User/mcp.json"),
            Scope::Project => env.project.join(".vscode/mcp.json"),
        };
        Some(ConfigFile {
            path,
            format: Format::Json,
            table: &["servers"],
        })
    }
    fn entry(&self, strobe: &Path) -> Value {
        let mut e = super::command_entry(strobe);
        e["type"] = "stdio".into();
        e
    }
}
