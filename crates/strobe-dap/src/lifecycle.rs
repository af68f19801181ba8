//! A DAP connection's program, from `launch` or `attach` to its end.
//!
//! What a connection launched is its own (`owned`): it ends with the
//! connection, however that ends — `disconnect` (whatever its
//! `terminateDebuggee`), stdin's end, a malformed message, or the adapter
//! killed, which the daemon sees as its MCP connection closing
//! (`debug_launch {endWithConnection: true}`). A session the client
//! attached to by id is someone else's (an agent's): leaving it running is
//! the default, and stopping it (`terminateDebuggee: true`, `terminate`)
//! keeps its recorded data: an editor never deletes what an agent
//! recorded. One program per connection: a second `launch` or `attach` is
//! refused.

use crate::Tools;
use crate::adapter::Adapter;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

impl<T: Tools> Adapter<T> {
    /// Refuses a second program on this connection.
    fn one_program(&self, command: &str) -> Result<(), String> {
        match &self.session {
            Some(id) => Err(format!(
                "{command}: this connection already debugs session {id} (pid {}); a DAP connection \
                 debugs one program: start another debug session for another one",
                self.pid
            )),
            None => Ok(()),
        }
    }

    pub(crate) async fn launch(&mut self, args: &Value) -> Result<Value, String> {
        self.one_program("launch")?;
        let program = args["program"]
            .as_str()
            .filter(|p| !p.is_empty())
            .ok_or("launch needs 'program': the path of the program to debug")?;
        let given_cwd = args["cwd"].as_str().filter(|c| !c.is_empty());
        if let Some(c) = given_cwd
            && !Path::new(c).is_dir()
        {
            return Err(format!(
                "launch: 'cwd' {c} is not an existing folder; give the folder the program runs in"
            ));
        }
        // A bare name (`python3`, `node`) is looked up on PATH, as a shell
        // would; the program then runs in the adapter's folder unless
        // `cwd` says otherwise (a path runs in its own folder).
        let bare = !program.contains('/');
        let resolved = if bare {
            on_path(program).ok_or_else(|| {
                format!("launch: '{program}' is not on PATH; give its full path as 'program'")
            })?
        } else {
            absolute(program, given_cwd)?
        };
        check_program(&resolved)?;
        let program = resolved.display().to_string();
        let cwd = match given_cwd {
            Some(c) => c.to_string(),
            None if bare => adapter_folder("launch")?,
            None => resolved
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "/".into()),
        };
        if let Some(patterns) = args.get("tracePatterns").filter(|p| p.is_array()) {
            self.tools
                .call("debug_trace", json!({"add": patterns}))
                .await?;
        }
        let mut launch = json!({"command": program, "projectRoot": cwd, "cwd": cwd,
                                "stopOnEntry": true, "endWithConnection": true});
        if let Some(a) = args.get("args").filter(|a| a.is_array()) {
            launch["args"] = a.clone();
        }
        if let Some(e) = args.get("env").filter(|e| e.is_object()) {
            launch["env"] = e.clone();
        }
        let v = self.tools.call("debug_launch", launch).await?;
        self.session = v["sessionId"].as_str().map(str::to_string);
        self.pid = v["pid"].as_u64().unwrap_or(0);
        self.owned = true;
        self.stop_on_entry = args["stopOnEntry"] == true;
        // The launch answers once the main thread is paused, naming it.
        let entry = match v.get("paused").filter(|p| p.is_object()) {
            Some(p) => p.clone(),
            None => self.status().await?["pausedThreads"][0].clone(),
        };
        self.entry_thread = entry["threadId"].as_u64();
        self.entry_breakpoint = entry["breakpointId"].as_str().map(str::to_string);
        Ok(json!({}))
    }

    pub(crate) async fn attach(&mut self, args: &Value) -> Result<Value, String> {
        self.one_program("attach")?;
        if let Some(id) = args["sessionId"].as_str().filter(|s| !s.is_empty()) {
            self.session = Some(id.to_string());
            let s = match self.status().await {
                Ok(s) => s,
                Err(e) => {
                    self.session = None;
                    return Err(format!("attach to session {id}: {e}"));
                }
            };
            self.pid = s["pid"].as_u64().unwrap_or(0);
            // What was paused before the editor came is shown at once.
            return Ok(json!({}));
        }
        const WHAT: &str = "attach needs 'sessionId' (a Strobe session to join, as `debug_session \
             list` shows: it goes on running when the editor leaves) or 'pid' (a running process \
             to instrument: it is detached, not killed, when the editor leaves)";
        let pid = match args.get("pid").or_else(|| args.get("processId")) {
            None | Some(Value::Null) => return Err(WHAT.into()),
            Some(p) => p
                .as_u64()
                .filter(|p| (1..=i32::MAX as u64).contains(p))
                .ok_or_else(|| format!("{WHAT}; 'pid' {p} is not a process id"))?,
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return Err(format!("attach: no process has pid {pid}"));
        }
        let root = match args["cwd"].as_str().filter(|c| !c.is_empty()) {
            Some(c) if Path::new(c).is_dir() => c.to_string(),
            Some(c) => return Err(format!("attach: 'cwd' {c} is not an existing folder")),
            None => adapter_folder("attach")?,
        };
        let v = self
            .tools
            .call(
                "debug_launch",
                json!({"attachPid": pid, "projectRoot": root, "endWithConnection": true}),
            )
            .await
            .map_err(|e| format!("attach to pid {pid}: {e}"))?;
        self.session = v["sessionId"].as_str().map(str::to_string);
        self.pid = pid;
        self.owned = true;
        Ok(json!({}))
    }

    /// `disconnect` (and `terminate`, which always asks for the end).
    pub(crate) async fn disconnect(
        &mut self,
        args: &Value,
        terminate: bool,
    ) -> Result<Value, String> {
        let Some(id) = self.session.clone() else {
            return Ok(json!({}));
        };
        if self.ended {
            return Ok(json!({}));
        }
        if self.owned {
            // What this connection launched ends with it, even when asked
            // to leave it (`terminateDebuggee: false`): nothing would be
            // left to end it.
            self.stop_session(&id, false).await?;
        } else if terminate || args["terminateDebuggee"] == true {
            // Someone else's session, stopped at the user's word: the
            // program ends, what it recorded stays theirs.
            self.stop_session(&id, true).await?;
        }
        self.ended = true;
        Ok(json!({}))
    }

    /// Ends what this connection launched, whatever ended the connection.
    pub(crate) async fn end_owned(&mut self) {
        if !self.owned || self.ended {
            return;
        }
        if let Some(id) = self.session.clone() {
            let _ = self.stop_session(&id, false).await;
        }
        self.ended = true;
    }

    async fn stop_session(&mut self, id: &str, retain: bool) -> Result<(), String> {
        self.tools
            .call(
                "debug_session",
                json!({"action": "stop", "sessionId": id, "retain": retain}),
            )
            .await
            .map(|_| ())
    }
}

/// `program` made absolute against `cwd`, else the adapter's folder.
fn absolute(program: &str, cwd: Option<&str>) -> Result<PathBuf, String> {
    let p = PathBuf::from(program);
    if p.is_absolute() {
        return Ok(p);
    }
    Ok(match cwd {
        Some(c) => Path::new(c).join(p),
        None => PathBuf::from(adapter_folder("launch")?).join(p),
    })
}

/// The adapter's own folder, for a program given no other.
fn adapter_folder(command: &str) -> Result<String, String> {
    std::env::current_dir()
        .map(|d| d.display().to_string())
        .map_err(|e| format!("{command}: no 'cwd' given and the adapter's folder is unknown: {e}"))
}

/// Refuses a `program` that is missing, a folder or not executable, in
/// the words of the launch request.
fn check_program(p: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let shown = p.display();
    match std::fs::metadata(p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "launch: 'program' {shown} does not exist; give the path of the program to debug \
             (absolute, relative to 'cwd', or a name on PATH)"
        )),
        Err(e) => Err(format!("launch: 'program' {shown} cannot be read: {e}")),
        Ok(m) if m.is_dir() => Err(format!(
            "launch: 'program' {shown} is a folder; give the program inside it"
        )),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => Err(format!(
            "launch: 'program' {shown} is not executable; make it so (chmod +x), or give its \
             interpreter as 'program' and the script in 'args'"
        )),
        Ok(_) => Ok(()),
    }
}

/// `name` in a folder of PATH, as an executable file.
fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}
