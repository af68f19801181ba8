//! `strobe`: the command-line entry point (no Tauri, no GTK).
//!
//! - `strobe mcp`    stdio MCP endpoint for coding agents (starts the daemon)
//! - `strobe daemon` the per-user daemon, in the foreground
//! - `strobe setup`  creates the Python venv with the pinned frida and py-spy
//! - `strobe ui`     turns on the daemon's loopback web UI and prints its URL
//! - `strobe export` writes a stored session as a Perfetto / chrome://tracing trace
//! - `strobe dap`    the Debug Adapter Protocol on stdio, for editors (shares the daemon's sessions)
//! - `strobe install` registers `strobe mcp` (and its skills) with the coding agents installed
//! - `strobe completions SHELL` prints a shell completion script
//!
//! Arguments are parsed by clap before anything runs, so `--help`, a usage
//! error or `--version` never starts a daemon, builds a venv or serves MCP.
//! Exit codes: 0 success, 1 the command failed, 2 a usage error (clap's
//! convention, also used for an unusable STROBE_HOME).

mod dap;
mod export;
mod install;
mod mcp_client;
mod scenarios;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::process::ExitCode;
use strobe_core::{Settings, StrobeHome};
use strobe_frida::{FridaPython, PINNED_FRIDA_VERSION, PINNED_PY_SPY_VERSION};

/// Printed after the top-level help: what the environment changes.
const ENVIRONMENT: &str = "\
Environment:
  STROBE_HOME    Data directory (default ~/.strobe)
  STROBE_VENV    Python venv holding frida and py-spy (default $STROBE_HOME/venv)
  STROBE_PY_SPY  py-spy for the stacks of hung Python tests (default: the venv's, then PATH)
  STROBE_LOG     Log filter, e.g. debug (default info)";

/// strobe — an LLM-native debugger
#[derive(Parser)]
#[command(name = "strobe", after_help = ENVIRONMENT)]
struct Cli {
    #[command(subcommand)]
    command: Option<Verb>,
}

#[derive(Subcommand)]
enum Verb {
    /// Serve MCP on stdin/stdout (register this with your coding agent)
    ///
    /// Relays newline-delimited JSON-RPC between stdin/stdout and the per-user
    /// daemon, starting the daemon when none runs and restarting it if it dies.
    Mcp,
    /// Run the daemon in the foreground (normally started by `strobe mcp`)
    ///
    /// One daemon per STROBE_HOME; it exits after `daemon.idleTimeoutMs` with no
    /// clients and no running sessions, and on SIGTERM/SIGINT.
    Daemon,
    /// Install the Python venv with the pinned frida and py-spy (needs python3)
    ///
    /// Creates the venv named by STROBE_VENV, else the `frida.venv` setting,
    /// else $STROBE_HOME/venv, and prints its path. py-spy shows a hung
    /// Python test's stacks in debug_test. $PYTHON picks the
    /// interpreter (default python3).
    Setup,
    /// Start the web UI on loopback (starting the daemon if needed) and print its URL
    ///
    /// The URL carries the daemon's access token: keep it to yourself.
    Ui,
    /// Write a stored session as a trace: Chrome trace-event JSON or Perfetto protobuf
    ///
    /// Reads the store directly, so it works with or without the daemon. Open
    /// the file in https://ui.perfetto.dev (either format) or chrome://tracing (JSON).
    Export {
        /// The session id (see `debug_session {action: "list"}` or the web UI)
        session: String,
        /// Where to write (default: SESSION.trace.json, or SESSION.pftrace for perfetto); `-` for stdout
        #[arg(short, long, value_name = "FILE")]
        output: Option<String>,
        /// chrome: trace-event JSON; perfetto: protobuf TrackEvent, with call arguments and
        /// return values, and flows from the agent's calls to what they caused
        #[arg(long, value_enum, default_value = "chrome")]
        format: export::Format,
    },
    /// Run a project's scenario files (.strobe/scenarios/*.json) as a test suite
    ///
    /// Each file's `launch` section starts its program through the daemon,
    /// its steps run as debug_test_scenario runs them, and one SCENARIO
    /// PASS/FAIL line is printed per file (debug_test {framework: "scenario"}
    /// runs this). Exits 1 when one failed; a failed one's session is kept.
    Scenarios {
        /// The project (default: the current directory)
        #[arg(long, value_name = "DIR", default_value = ".")]
        project_root: std::path::PathBuf,
        /// Only the scenario of this name (its file's stem)
        #[arg(long, value_name = "NAME")]
        only: Option<String>,
    },
    /// Serve the Debug Adapter Protocol on stdin/stdout (for editors)
    ///
    /// Each DAP session is a Strobe session the agent sees over MCP (and the
    /// web UI shows); `attach` with a `sessionId` joins a session an agent
    /// started. Starts the daemon when none runs.
    Dap {
        /// Listen on this loopback port instead (0: any free one, printed):
        /// each connection is a DAP client whose launch or attach carries
        /// "token", the daemon's (the `token=` of the URL `strobe ui` prints)
        #[arg(long, value_name = "PORT")]
        port: Option<u16>,
    },
    /// Register `strobe mcp` (and Strobe's skills) with the coding agents you have
    ///
    /// Writes each agent's own MCP config (Claude Code, Codex, Cursor, VS Code,
    /// Claude Desktop, opencode, Gemini CLI) in its own format, keeping comments
    /// and other servers; every changed file is backed up as
    /// <file>.strobe-backup first, and a file that cannot be parsed or is
    /// read-only is left alone. Without --agent, only agents found on this
    /// machine are written. Exits 1 when a file was refused.
    Install {
        /// The agents (repeatable): claude-code, codex, cursor, vscode, claude-desktop, opencode, gemini, all
        #[arg(long = "agent", value_name = "AGENT")]
        agents: Vec<String>,
        /// Print what would change (diffs), write nothing
        #[arg(long)]
        dry_run: bool,
        /// Remove Strobe's entries and skills instead
        #[arg(long)]
        uninstall: bool,
        /// user: your own configs; project: the current directory's (to commit)
        #[arg(long, value_enum, default_value = "user")]
        scope: install::ScopeArg,
    },
    /// Print a shell completion script (e.g. `source <(strobe completions bash)`)
    Completions {
        /// The shell to complete for
        shell: clap_complete::Shell,
    },
}

/// The command's clap description, with the version line `--version` prints.
fn command() -> clap::Command {
    Cli::command().version(format!(
        "{} (frida {PINNED_FRIDA_VERSION})",
        env!("CARGO_PKG_VERSION")
    ))
}

fn home_or_exit() -> Result<StrobeHome, ExitCode> {
    StrobeHome::from_env().map_err(|e| {
        eprintln!("strobe: {e}");
        ExitCode::from(2)
    })
}

fn main() -> ExitCode {
    // Parsing happens first and touches nothing: --help, --version and usage
    // errors (exit 2, with a suggestion for a mistyped flag) end here.
    let mut cmd = command();
    let cli = match Cli::from_arg_matches(&cmd.get_matches_mut()) {
        Ok(cli) => cli,
        Err(e) => e.format(&mut cmd).exit(),
    };
    let Some(verb) = cli.command else {
        // Bare `strobe`: the overview, as before clap.
        let _ = cmd.print_help();
        return ExitCode::SUCCESS;
    };
    if let Verb::Completions { shell } = verb {
        clap_complete::generate(shell, &mut cmd, "strobe", &mut std::io::stdout());
        return ExitCode::SUCCESS;
    }
    if let Verb::Install {
        agents,
        dry_run,
        uninstall,
        scope,
    } = verb
    {
        return install::install(agents, dry_run, uninstall, scope);
    }
    let home = match home_or_exit() {
        Ok(h) => h,
        Err(c) => return c,
    };
    match verb {
        Verb::Mcp => {
            let exe = match std::env::current_exe() {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("strobe mcp: cannot find my own executable to start the daemon: {e}");
                    return ExitCode::from(1);
                }
            };
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            match rt.block_on(strobe_daemon::run_proxy(home, &exe)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("strobe mcp: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Verb::Daemon => {
            strobe_daemon::init_logging();
            // Everything the daemon creates (database, WAL, logs, caches) is owner-only.
            // SAFETY: umask(2) cannot fail.
            unsafe { libc::umask(0o077) };
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            let result = rt.block_on(strobe_daemon::run_daemon(home));
            // The daemon has shut down what it owns; a request's blocking
            // work still going (a tool call mid-way) must not keep the
            // process alive, as dropping the runtime would wait for it.
            rt.shutdown_timeout(std::time::Duration::from_secs(2));
            match result {
                Ok(_) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("strobe daemon: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Verb::Setup => {
            let (settings, _) = Settings::load(&home.settings_file(), None);
            let py = FridaPython::locate(settings.frida_venv.as_deref(), &home.default_venv());
            let python3 = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
            eprintln!(
                "strobe setup: frida=={PINNED_FRIDA_VERSION}, py-spy=={PINNED_PY_SPY_VERSION} (Python stacks for debug_test's stuck tests) and {} (debug_ui's vision) in {}",
                strobe_frida::PINNED_VISION_PACKAGES
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(", "),
                py.venv.display()
            );
            match py.install(&python3) {
                Ok(()) => {
                    println!("{}", py.venv.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("strobe setup: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Verb::Export {
            session,
            output,
            format,
        } => export::run(&home, &session, output, format),
        Verb::Ui => ui(home),
        Verb::Dap { port } => dap::run(&home, port),
        Verb::Scenarios { project_root, only } => {
            scenarios::run(&home, &project_root, only.as_deref())
        }
        Verb::Completions { .. } | Verb::Install { .. } => {
            unreachable!("handled before STROBE_HOME is read")
        }
    }
}

/// `strobe ui`: asks the daemon (started if need be) to serve the web UI.
fn ui(home: StrobeHome) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("strobe ui: cannot find my own executable to start the daemon: {e}");
            return ExitCode::from(1);
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match rt.block_on(strobe_daemon::proxy::control(
        &home,
        &exe,
        serde_json::json!({"strobeControl": "ui"}),
    )) {
        Ok(reply) => match reply["url"].as_str() {
            Some(url) => {
                println!("{url}");
                eprintln!(
                    "strobe ui: open that URL in a browser or an editor webview; it carries this \
                     daemon's access token, so keep it to yourself"
                );
                ExitCode::SUCCESS
            }
            None => {
                eprintln!(
                    "strobe ui: the daemon could not start the web UI: {}",
                    reply["error"].as_str().unwrap_or("no reason given")
                );
                ExitCode::from(1)
            }
        },
        Err(e) => {
            eprintln!("strobe ui: {e}");
            ExitCode::from(1)
        }
    }
}
