//! `strobe dap`: the Debug Adapter Protocol on stdin/stdout for editors
//! (`strobe-dap` does the work), driving the daemon (started if need be)
//! through its MCP tools like an agent, so editor and agent share sessions.
//! With `--port`, on a loopback port instead: a client per connection, each
//! proving itself with the daemon's token in its launch or attach within
//! [`strobe_dap::AUTH_WAIT`], at most [`MAX_CLIENTS`] at once; a client's
//! MCP connection to the daemon is opened only once it proved itself.

use crate::mcp_client::Mcp;
use serde_json::Value;
use std::process::ExitCode;
use strobe_core::StrobeHome;

/// Clients served at once on a port; one more is told so and closed.
const MAX_CLIENTS: usize = 16;

impl strobe_dap::Tools for Mcp {
    async fn call(&mut self, tool: &str, args: Value) -> Result<Value, String> {
        match self.tool(tool, args).await {
            Ok(r) => r,
            Err(e) => Err(format!("the daemon did not answer {tool}: {e}")),
        }
    }
}

/// A port client's MCP connection, opened at its first tool call (after it
/// proved itself: the adapter calls no tool before), so that connections
/// that never do cost the daemon nothing.
struct LazyMcp {
    home: StrobeHome,
    mcp: Option<Mcp>,
}

impl strobe_dap::Tools for LazyMcp {
    async fn call(&mut self, tool: &str, args: Value) -> Result<Value, String> {
        if self.mcp.is_none() {
            let mcp =
                crate::mcp_client::connect(&self.home, strobe_core::caller::EDITOR_CLIENT).await?;
            self.mcp = Some(mcp);
        }
        let mcp = self.mcp.as_mut().expect("connected above");
        strobe_dap::Tools::call(mcp, tool, args).await
    }
}

/// Serves DAP on stdin/stdout until the client disconnects, or on a
/// loopback `port` until stopped.
pub(crate) fn run(home: &StrobeHome, port: Option<u16>) -> ExitCode {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let code = rt.block_on(async {
        if let Some(port) = port {
            return listen(home, port).await;
        }
        let mcp = match crate::mcp_client::connect(home, strobe_core::caller::EDITOR_CLIENT).await {
            Ok(m) => m,
            Err(e) => {
                eprintln!("strobe dap: {e}");
                return ExitCode::from(2);
            }
        };
        let stdin = tokio::io::BufReader::new(tokio::io::stdin());
        match strobe_dap::serve(mcp, stdin, tokio::io::stdout()).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("strobe dap: {e}");
                ExitCode::FAILURE
            }
        }
    });
    // The stdin reader may still be blocked on a read the client will never
    // answer (it waits for the adapter to exit after disconnect): do not
    // wait for it.
    rt.shutdown_background();
    code
}

/// The daemon's access token (the web endpoint's, which `strobe ui`
/// prints in its URL), starting both if need be.
async fn daemon_token(home: &StrobeHome) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find my own executable: {e}"))?;
    let reply =
        strobe_daemon::proxy::control(home, &exe, serde_json::json!({"strobeControl": "ui"}))
            .await
            .map_err(|e| format!("cannot reach the daemon: {e}"))?;
    reply["url"]
        .as_str()
        .and_then(|u| u.split_once("token=").map(|(_, t)| t.to_string()))
        .ok_or_else(|| {
            format!(
                "the daemon gave no token: {}",
                reply["error"].as_str().unwrap_or("no reason given")
            )
        })
}

/// Accepts DAP clients on 127.0.0.1:`port` until stopped.
async fn listen(home: &StrobeHome, port: u16) -> ExitCode {
    let token = match daemon_token(home).await {
        Ok(t) => t,
        Err(e) => {
            eprintln!("strobe dap: {e}");
            return ExitCode::from(2);
        }
    };
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("strobe dap: cannot listen on 127.0.0.1:{port}: {e}");
            return ExitCode::from(2);
        }
    };
    let at = listener.local_addr().map(|a| a.port()).unwrap_or(port);
    // The one line on stdout: what a script waits for.
    println!("listening on 127.0.0.1:{at}");
    eprintln!(
        "strobe dap: each client's launch or attach must carry \"token\": the daemon's, the \
         `token=` of the URL `strobe ui` prints. Ctrl-C stops."
    );
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_CLIENTS));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("strobe dap: accept failed: {e}");
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tokio::spawn(refuse(stream));
            continue;
        };
        let home = home.clone();
        let token = token.clone();
        tokio::spawn(async move {
            let (r, mut w) = stream.into_split();
            let r = tokio::io::BufReader::new(r);
            let mcp = LazyMcp { home, mcp: None };
            if let Err(e) = strobe_dap::serve_with_token(mcp, r, &mut w, Some(token)).await {
                eprintln!("strobe dap: client {peer}: {e}");
            }
            // The slot is free before the client sees its connection end.
            drop(slot);
            drop(w);
        });
    }
}

/// Tells a client past [`MAX_CLIENTS`] why it is closed (a DAP `output`
/// event), and closes it.
async fn refuse(mut stream: tokio::net::TcpStream) {
    let why = serde_json::json!({"seq": 1, "type": "event", "event": "output", "body": {
        "category": "important",
        "output": format!("strobe dap: {MAX_CLIENTS} clients are connected already; closing this connection (try again once one has left)\n"),
    }});
    let write = strobe_dap::wire::write_message(&mut stream, &why);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), write).await;
}
