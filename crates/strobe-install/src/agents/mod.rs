//! The agents Strobe registers with: one file each, one line each in
//! [`all`].

mod claude_code;
mod claude_desktop;
mod codex;
mod cursor;
mod gemini;
mod opencode;
mod vscode;

use crate::Agent;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Every agent, in the order they are reported.
pub fn all() -> Vec<Box<dyn Agent>> {
    vec![
        Box::new(claude_code::ClaudeCode),
        Box::new(codex::Codex),
        Box::new(cursor::Cursor),
        Box::new(vscode::VsCode),
        Box::new(claude_desktop::ClaudeDesktop),
        Box::new(opencode::OpenCode),
        Box::new(gemini::Gemini),
    ]
}

/// The `--agent` names, for help and errors.
pub fn ids() -> Vec<&'static str> {
    all().iter().map(|a| a.id()).collect()
}

/// The common entry: `{command, args: ["mcp"]}`.
pub(crate) fn command_entry(strobe: &Path) -> Value {
    json!({"command": strobe.display().to_string(), "args": ["mcp"]})
}

/// The first of `dirs` that exists and the first of `programs` on `PATH`,
/// as the reason an agent looks installed.
pub(crate) fn evidence(env: &crate::Env, dirs: &[PathBuf], programs: &[&str]) -> Option<String> {
    let mut why = Vec::new();
    if let Some(d) = dirs.iter().find(|d| d.exists()) {
        why.push(env.show(d));
    }
    if let Some(p) = programs.iter().find_map(|p| env.on_path(p)) {
        why.push(format!("{} on PATH", p.display()));
    }
    (!why.is_empty()).then(|| why.join(", "))
}
