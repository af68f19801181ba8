//! `strobe install`: registers Strobe's MCP server with the coding agents a
//! person has, in each agent's own config file and format (JSON, JSONC with
//! its comments kept, TOML), and installs Strobe's skills where the agent
//! reads skills.
//!
//! Each agent is one file under `agents/` implementing [`Agent`] (where
//! its config lives, what its entry looks like, how to tell it is
//! installed) plus its line in [`agents::all`]. The edits are
//! format-preserving (`json_edit.rs`, `toml_edit.rs`), and every write goes
//! through `write.rs`: a backup first, then a temporary file renamed over
//! the original with its permissions; a file that cannot be parsed, or
//! that is read-only, is refused and never overwritten.

pub mod agents;
mod diff;
mod json_edit;
mod plan;
mod skills;
mod toml_file;
mod write;

pub use plan::{Action, Options, Outcome, Report, run};

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The name Strobe's server is registered under in every agent's config.
pub const SERVER_NAME: &str = "strobe";

/// Suffix of the backup written next to a file before it is changed.
pub const BACKUP_SUFFIX: &str = ".strobe-backup";

/// Where a registration is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The person's own config (every project).
    User,
    /// The project in the current directory (files meant to be committed).
    Project,
}

/// A config file's syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON, or JSON with comments and trailing commas (JSONC): edited as
    /// a concrete syntax tree, so comments and spacing stay.
    Json,
    /// TOML, edited with `toml_edit` (comments and layout stay).
    Toml,
}

/// One agent's config file for a scope, and where Strobe's entry goes in it.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigFile {
    /// The file.
    pub path: PathBuf,
    /// Its syntax.
    pub format: Format,
    /// The keys of the table the servers are in (`["mcpServers"]`); the
    /// entry is [`SERVER_NAME`] inside it.
    pub table: &'static [&'static str],
}

/// The machine as the installer sees it: where home, the config home and
/// the project are, and which programs are on `PATH`.
#[derive(Debug, Clone)]
pub struct Env {
    /// `$HOME`.
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    pub config_home: PathBuf,
    /// The project (the current directory) for `Scope::Project`.
    pub project: PathBuf,
    /// The `PATH` directories.
    pub path: Vec<PathBuf>,
}

impl Env {
    /// The environment of this process (`HOME`, `XDG_CONFIG_HOME`, `PATH`,
    /// the current directory); `None` without a `HOME`.
    pub fn from_process() -> Option<Env> {
        let home = PathBuf::from(std::env::var_os("HOME").filter(|h| !h.is_empty())?);
        let config_home = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|c| !c.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".config"));
        let path = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        let project = std::env::current_dir().ok()?;
        Some(Env {
            home,
            config_home,
            project,
            path,
        })
    }

    /// The first `name` on `PATH` that is a file.
    pub fn on_path(&self, name: &str) -> Option<PathBuf> {
        self.path.iter().map(|d| d.join(name)).find(|p| p.is_file())
    }

    /// `path` with the home directory written `~`, for messages.
    pub fn show(&self, path: &Path) -> String {
        match path.strip_prefix(&self.home) {
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => path.display().to_string(),
        }
    }
}

/// An agent Strobe can register with.
pub trait Agent: Send + Sync {
    /// Its `--agent` name (`claude-code`).
    fn id(&self) -> &'static str;
    /// Its name for people (`Claude Code`).
    fn title(&self) -> &'static str;
    /// Why it looks installed (a folder, a program on `PATH`), or `None`.
    fn detect(&self, env: &Env) -> Option<String>;
    /// Its config file for `scope`; `None` when it has none there.
    fn config(&self, env: &Env, scope: Scope) -> Option<ConfigFile>;
    /// Strobe's entry, for the `strobe` binary at `strobe`.
    fn entry(&self, strobe: &Path) -> Value;
    /// The folder its skills live in for `scope` (one subfolder per
    /// skill, each with a `SKILL.md`); `None` when it reads no skills.
    fn skills_dir(&self, _env: &Env, _scope: Scope) -> Option<PathBuf> {
        None
    }
}

/// Why the installer stopped short for a file.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The file is not valid JSON/JSONC or TOML.
    #[error(
        "{path} cannot be parsed ({why}); it was left as it is: fix it, or add Strobe by hand (README, \"Registering Strobe with an agent\")"
    )]
    Unparseable {
        /// The file.
        path: String,
        /// The parser's message.
        why: String,
    },
    /// The servers' key holds something else than a table.
    #[error(
        "{path}: \"{key}\" is not an object/table, so Strobe's entry cannot go in it; it was left as it is"
    )]
    NotATable {
        /// The file.
        path: String,
        /// The key.
        key: String,
    },
    /// The file (or its folder) cannot be written.
    #[error(
        "{path} is read-only; it was left as it is (make it writable, e.g. chmod u+w, and run again)"
    )]
    ReadOnly {
        /// The file.
        path: String,
    },
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}
