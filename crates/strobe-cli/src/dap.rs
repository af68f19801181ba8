//! `strobe dap`: the Debug Adapter Protocol on stdin/stdout for editors
//! (`strobe-dap` does the work), driving the daemon (started if need be)
//! through its MCP tools like an agent, so editor and agent share sessions.

use crate::mcp_client::Mcp;
use serde_json::Value;
use std::process::ExitCode;
use strobe_core::StrobeHome;

impl strobe_dap::Tools for Mcp {
    async fn call(&mut self, tool: &str, args: Value) -> Result<Value, String> {
        match self.tool(tool, args).await {
            Ok(r) => r,
            Err(e) => Err(format!("the daemon did not answer {tool}: {e}")),
        }
    }
}

/// Serves DAP on stdin/stdout until the client disconnects.
pub(crate) fn run(home: &StrobeHome) -> ExitCode {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let code = rt.block_on(async {
        let mcp = match crate::mcp_client::connect(home, "strobe-dap").await {
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
