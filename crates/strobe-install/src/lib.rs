//! `strobe install`: registers Strobe's MCP server with the coding agents a
//! person has, in each agent's own config file and format (JSON, JSONC with
//! its comments kept, TOML), and installs Strobe's skills where the agent
//! reads skills.
//!
//! Each agent is one file under `agents/` implementing [`Agent`] (where
//! its config lives, what its entry looks like, how to tell it is
//! installed) plus its line in [`agents::all`]. The edits are
//! format-preserving (`json_edit.rs`, `toml_file.rs`), and every read and
//! write goes through `write.rs`: a backup first (always a new file), then
//! a temporary file renamed over the original with its permissions and
//! owner; a file that cannot be parsed, is nested absurdly deep, is
//! read-only or someone else's, or is not a regular file, is refused and
//! never overwritten. A project's files are reached without following any
//! link (a cloned repository can commit links); a person's own linked
//! config is followed only inside their home.

pub mod agents;
mod at;
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
    /// The file (or its folder) is the person's own, but its mode does not
    /// let it be written.
    #[error(
        "{path} is read-only; it was left as it is (make it writable, e.g. chmod u+w, and run again)"
    )]
    ReadOnly {
        /// The file or folder.
        path: String,
    },
    /// The file is the person's own, but its mode does not let it be read.
    #[error(
        "{path} cannot be read: its permissions ({mode:04o}) do not let you; it was left as it is (chmod u+r it and run again)"
    )]
    Unreadable {
        /// The file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// The file (or folder) belongs to another user, who has not let this
    /// one read or change it: no chmod of ours can fix that.
    #[error(
        "{path} belongs to another user (uid {owner}; you are uid {me}), so Strobe cannot {doing} it; it was left as it is (run strobe install as that user, or ask them to add Strobe)"
    )]
    NotYours {
        /// The file or folder.
        path: String,
        /// Its owner.
        owner: u32,
        /// This process's user.
        me: u32,
        /// What could not be done ("read", "change", "write in").
        doing: &'static str,
    },
    /// A symbolic link in a project: a repository can commit one that
    /// points anywhere (`~/.bashrc`), so it is never followed.
    #[error(
        "{path} is a symbolic link (to {target}); in a project Strobe never reads or writes through a link, since a repository can commit one that points anywhere; it was left as it is (replace it with a regular file, or add Strobe by hand)"
    )]
    ProjectLink {
        /// The link.
        path: String,
        /// Where it points.
        target: String,
    },
    /// A symbolic link in the person's own config that leads out of their
    /// home.
    #[error(
        "{path} is a symbolic link to {target}, which is outside your home; Strobe edits a linked config only when it stays inside your home, so it was left as it is (edit {target} by hand, or replace the link with a file)"
    )]
    LinkOutsideHome {
        /// The link.
        path: String,
        /// Its target, resolved.
        target: String,
    },
    /// A symbolic link to nothing.
    #[error(
        "{path} is a symbolic link to {target}, which does not exist; Strobe does not create files through links, so it was left as it is (create the target, or remove the link)"
    )]
    DanglingLink {
        /// The link.
        path: String,
        /// Where it points.
        target: String,
    },
    /// Not a regular file (a FIFO, device, socket or folder): never opened
    /// in a way that could block, never replaced.
    #[error(
        "{path} is {kind}, not a regular file; Strobe edits only regular files, so it was left as it is (remove it, or add Strobe by hand)"
    )]
    NotRegular {
        /// The file.
        path: String,
        /// What it is ("a FIFO (named pipe)").
        kind: &'static str,
    },
    /// A folder on the way to the file is something else.
    #[error(
        "{path} is {kind}, not a folder, so nothing can be written under it; it was left as it is"
    )]
    NotAFolder {
        /// The path.
        path: String,
        /// What it is.
        kind: &'static str,
    },
    /// Nested deeper than any agent writes (and than a recursive parser's
    /// stack allows).
    #[error(
        "{path} nests more than {limit} levels deep; Strobe does not parse a config that deep (no agent writes one), so it was left as it is: check the file, or add Strobe by hand"
    )]
    TooDeep {
        /// The file.
        path: String,
        /// The most levels read.
        limit: usize,
    },
    /// Not UTF-8 text.
    #[error("{path} is not UTF-8 text; it was left as it is")]
    NotText {
        /// The file.
        path: String,
    },
    /// The file changed between reading and writing (another program
    /// edited or replaced it).
    #[error(
        "{path} changed while Strobe was editing it; it was left as it is: run strobe install again"
    )]
    Changed {
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
