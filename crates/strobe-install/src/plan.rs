//! What `strobe install` does for each agent: pick the agents (those asked
//! for, or every one detected), edit each one's config and skills, and say
//! what happened to each file.

use crate::json_edit::Edited;
use crate::write::{self, Fence, Found, Written};
use crate::{
    Agent, ConfigFile, Env, Format, InstallError, SERVER_NAME, Scope, agents, diff, json_edit,
    skills, toml_file,
};
use std::path::{Path, PathBuf};

/// What to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--agent` names; empty or `all`: every agent that is detected.
    pub agents: Vec<String>,
    /// `--scope`.
    pub scope: Scope,
    /// `--dry-run`: print the diffs, write nothing.
    pub dry_run: bool,
    /// `--uninstall`: remove Strobe's entries and skills.
    pub uninstall: bool,
    /// The `strobe` binary the entries point at.
    pub strobe: PathBuf,
}

/// What happened to one file (or one agent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Strobe's entry or skill was written into a new or existing file.
    Added,
    /// An older entry or skill was replaced.
    Updated,
    /// Strobe's entry or skill was removed.
    Removed,
    /// Already as wanted: nothing written.
    Unchanged,
    /// `--dry-run`: this would change (the diff is in the outcome).
    WouldChange,
    /// Not touched (no such scope, someone else's file).
    Skipped,
    /// Not on this machine, so not written (all agents were asked for).
    NotDetected,
    /// Refused or failed (unparseable, read-only, I/O).
    Failed,
}

/// One line of the report.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The agent's id.
    pub agent: &'static str,
    /// What happened.
    pub action: Action,
    /// The file, when there is one.
    pub path: Option<PathBuf>,
    /// The rest of the line.
    pub detail: String,
    /// `--dry-run`'s diff.
    pub diff: Option<String>,
}

/// Everything `run` did.
#[derive(Debug, Default)]
pub struct Report {
    /// One outcome per file or skipped agent.
    pub outcomes: Vec<Outcome>,
    /// The run was a dry run.
    pub dry_run: bool,
}

impl Report {
    /// Something failed.
    pub fn failed(&self) -> bool {
        self.outcomes.iter().any(|o| o.action == Action::Failed)
    }

    /// The text the command prints: a line per outcome (dry runs with
    /// their diffs), then the counts.
    pub fn render(&self, env: &Env) -> String {
        let mut out = String::new();
        for o in self
            .outcomes
            .iter()
            .filter(|o| o.action != Action::NotDetected)
        {
            let path = o.path.as_deref().map(|p| env.show(p)).unwrap_or_default();
            let line = match o.action {
                Action::Added => format!("added to {path}"),
                Action::Updated => format!("updated in {path}"),
                Action::Removed => format!("removed from {path}"),
                Action::Unchanged => format!("{path}: nothing to change"),
                Action::WouldChange => format!("would change {path}"),
                Action::Skipped | Action::NotDetected => "skipped".to_string(),
                Action::Failed => "FAILED".to_string(),
            };
            let sep = if o.detail.is_empty() { "" } else { ": " };
            out.push_str(&format!("{}: {line}{sep}{}\n", o.agent, o.detail));
            if let Some(d) = &o.diff {
                out.push_str(d);
            }
        }
        let absent: Vec<&str> = self
            .outcomes
            .iter()
            .filter(|o| o.action == Action::NotDetected)
            .map(|o| o.agent)
            .collect();
        if !absent.is_empty() {
            out.push_str(&format!(
                "not found on this machine, so not written: {} (--agent NAME writes one anyway)\n",
                absent.join(", ")
            ));
        }
        let n = |a: Action| self.outcomes.iter().filter(|o| o.action == a).count();
        let changed = n(Action::Added) + n(Action::Updated) + n(Action::Removed);
        out.push_str(&if self.dry_run {
            format!(
                "dry run: {} file(s) would change, {} unchanged, {} skipped, {} failed; nothing was written\n",
                n(Action::WouldChange),
                n(Action::Unchanged),
                n(Action::Skipped) + n(Action::NotDetected),
                n(Action::Failed)
            )
        } else {
            format!(
                "{changed} changed, {} unchanged, {} skipped, {} failed\n",
                n(Action::Unchanged),
                n(Action::Skipped) + n(Action::NotDetected),
                n(Action::Failed),
            )
        });
        out
    }
}

/// Registers (or with `uninstall`, unregisters) Strobe with the agents
/// `opts` names. Errors only on an unknown agent name; everything that
/// goes wrong with a file is an outcome.
pub fn run(opts: &Options, env: &Env) -> Result<Report, String> {
    let all = agents::all();
    let every = opts.agents.is_empty() || opts.agents.iter().any(|a| a == "all");
    for name in &opts.agents {
        if name != "all" && !all.iter().any(|a| a.id() == name) {
            return Err(format!(
                "no agent {name:?}; known: {}, or all",
                agents::ids().join(", ")
            ));
        }
    }
    let cx = Cx {
        opts,
        env,
        fence: Fence::of(env, opts.scope),
    };
    let mut report = Report {
        outcomes: Vec::new(),
        dry_run: opts.dry_run,
    };
    for agent in all
        .iter()
        .filter(|a| every || opts.agents.iter().any(|n| n == a.id()))
    {
        let detected = agent.detect(env);
        let mut note = String::new();
        match (&detected, every) {
            (None, true) => {
                report.outcomes.push(Outcome {
                    agent: agent.id(),
                    action: Action::NotDetected,
                    path: None,
                    detail: String::new(),
                    diff: None,
                });
                continue;
            }
            (None, false) => note = format!("{} not detected; written as asked", agent.title()),
            _ => {}
        }
        match agent.config(env, opts.scope) {
            Some(file) => {
                let mut o = config_outcome(agent.as_ref(), &file, &cx);
                if !note.is_empty() && o.action != Action::Failed {
                    o.detail = if o.detail.is_empty() {
                        note.clone()
                    } else {
                        format!("{}; {note}", o.detail)
                    };
                }
                report.outcomes.push(o);
            }
            None => report.outcomes.push(Outcome {
                agent: agent.id(),
                action: Action::Skipped,
                path: None,
                detail: format!("{} has no {:?}-scope config", agent.title(), opts.scope)
                    .to_lowercase(),
                diff: None,
            }),
        }
        if let Some(dir) = agent.skills_dir(env, opts.scope) {
            for (name, text) in skills::skills() {
                report.outcomes.push(skill_outcome(
                    agent.id(),
                    &dir.join(name).join("SKILL.md"),
                    &text,
                    &cx,
                ));
            }
        }
    }
    Ok(report)
}

/// What every file's step needs.
struct Cx<'a> {
    opts: &'a Options,
    env: &'a Env,
    /// Where the scope's files may be, and which links may be followed.
    fence: Fence,
}

fn outcome(agent: &'static str, action: Action, path: &Path, detail: String) -> Outcome {
    Outcome {
        agent,
        action,
        path: Some(path.to_path_buf()),
        detail,
        diff: None,
    }
}

fn failed(agent: &'static str, path: &Path, e: InstallError) -> Outcome {
    outcome(agent, Action::Failed, path, e.to_string())
}

/// `file`'s text with Strobe's entry set to `entry`, or without it (`None`);
/// `None` when that changes nothing.
fn edit(
    file: &ConfigFile,
    text: &str,
    entry: Option<&serde_json::Value>,
    shown: &str,
) -> Result<Option<Edited>, InstallError> {
    let toml = |r: Result<Option<String>, InstallError>| {
        r.map(|t| {
            t.map(|text| Edited {
                text,
                notes: vec![],
            })
        })
    };
    match (file.format, entry) {
        (Format::Json, Some(e)) => json_edit::set_entry(text, file.table, SERVER_NAME, e, shown),
        (Format::Json, None) => json_edit::remove_entry(text, file.table, SERVER_NAME, shown),
        (Format::Toml, Some(e)) => toml(toml_file::set_entry(
            text,
            file.table,
            SERVER_NAME,
            e,
            shown,
        )),
        (Format::Toml, None) => toml(toml_file::remove_entry(
            text,
            file.table,
            SERVER_NAME,
            shown,
        )),
    }
}

/// A UTF-8 byte order mark: some editors on Windows start files with it.
/// It is not JSON or TOML, so it is set aside for the edit and put back.
const BOM: &str = "\u{feff}";

/// Strobe's entry in one agent's config file.
fn config_outcome(agent: &dyn Agent, file: &ConfigFile, cx: &Cx) -> Outcome {
    let (opts, env) = (cx.opts, cx.env);
    let id = agent.id();
    let shown = env.show(&file.path);
    let found = match write::read(&file.path, &cx.fence) {
        Ok(f) => f,
        Err(e) => return failed(id, &file.path, e),
    };
    let full = found.text.as_deref().unwrap_or("");
    let (bom, text) = match full.strip_prefix(BOM) {
        Some(rest) => (BOM, rest),
        None => ("", full),
    };
    let entry = (!opts.uninstall).then(|| agent.entry(&opts.strobe));
    let edited = edit(file, text, entry.as_ref(), &shown);
    let key = format!("{}.{SERVER_NAME}", file.table.join("."));
    // Install over an entry that is there: an update.
    let had = !opts.uninstall && edit(file, text, None, &shown).is_ok_and(|r| r.is_some());
    let action = match (opts.uninstall, had) {
        (true, _) => Action::Removed,
        (false, true) => Action::Updated,
        (false, false) => Action::Added,
    };
    let edited = match edited {
        Err(e) => return failed(id, &file.path, e),
        Ok(None) => {
            let why = if opts.uninstall {
                format!("no {key}")
            } else {
                format!("{key} already points at this strobe")
            };
            return outcome(id, Action::Unchanged, &file.path, why);
        }
        Ok(Some(edited)) => edited,
    };
    let mut what = key;
    for note in &edited.notes {
        what.push_str(&format!("; {note}"));
    }
    let new = format!("{bom}{}", edited.text);
    finish(id, &found, &new, &what, action, cx)
}

/// Writes `new` over `found`'s file (or with `--dry-run`, says it would).
fn finish(
    id: &'static str,
    found: &Found,
    new: &str,
    what: &str,
    action: Action,
    cx: &Cx,
) -> Outcome {
    let (opts, env) = (cx.opts, cx.env);
    let path = found.path.as_path();
    if let Err(e) = write::check_writable(found, &cx.fence) {
        return failed(id, path, e);
    }
    let what = if found.via_link {
        format!(
            "{what} (edited through the link, in {}: it is inside your home)",
            env.show(&found.real)
        )
    } else {
        what.to_string()
    };
    if opts.dry_run {
        let mut o = outcome(id, Action::WouldChange, path, what);
        o.diff = Some(diff::unified(
            &found.real.display().to_string(),
            found.text.as_deref().unwrap_or(""),
            new,
        ));
        return o;
    }
    match write::replace(found, &cx.fence, new) {
        Ok(Written::Changed { backup }) => outcome(
            id,
            action,
            path,
            format!("{what} (backup: {})", env.show(&backup)),
        ),
        Ok(Written::Created) => outcome(id, action, path, format!("{what} (new file)")),
        Err(e) => failed(id, path, e),
    }
}

/// One skill's `SKILL.md`.
fn skill_outcome(id: &'static str, path: &Path, text: &str, cx: &Cx) -> Outcome {
    let (opts, env) = (cx.opts, cx.env);
    let found = match write::read(path, &cx.fence) {
        Ok(f) => f,
        Err(e) => return failed(id, path, e),
    };
    let old = found.text.as_deref();
    let name = path
        .parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let what = format!("skill {name}");
    let ours = old.is_some_and(|o| o.contains(skills::MARK));
    match (old, opts.uninstall) {
        (Some(_), _) if !ours => outcome(
            id,
            Action::Skipped,
            path,
            format!(
                "{what}: {} is not Strobe's (no install mark); left as it is",
                env.show(path)
            ),
        ),
        (None, true) => outcome(id, Action::Unchanged, path, format!("no {what}")),
        (Some(o), true) => {
            if let Err(e) = write::check_writable(&found, &cx.fence) {
                return failed(id, path, e);
            }
            if opts.dry_run {
                let mut o = outcome(id, Action::WouldChange, path, format!("{what} removed"));
                o.diff = Some(diff::unified(
                    &path.display().to_string(),
                    old.unwrap_or(""),
                    "",
                ));
                return o;
            }
            // As installed: nothing of the person's is lost without a
            // backup. Edited since: backed up first.
            match write::remove(&found, &cx.fence, o != text) {
                Ok(backup) => {
                    // The skill's folder goes too when nothing else is in it.
                    if let Some(dir) = found.real.parent() {
                        write::remove_empty_dir(dir, &cx.fence);
                    }
                    let kept = backup
                        .map(|b| format!(" (it had been edited; backup: {})", env.show(&b)))
                        .unwrap_or_default();
                    outcome(id, Action::Removed, path, format!("{what}{kept}"))
                }
                Err(e) => failed(id, path, e),
            }
        }
        (Some(o), false) if o == text => {
            outcome(id, Action::Unchanged, path, format!("{what} is current"))
        }
        (old, false) => {
            let action = if old.is_some() {
                Action::Updated
            } else {
                Action::Added
            };
            finish(id, &found, text, &what, action, cx)
        }
    }
}
