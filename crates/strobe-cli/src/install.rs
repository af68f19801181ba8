//! `strobe install`: registers this `strobe` binary's MCP server (and
//! Strobe's skills) with the coding agents a person has
//! (`strobe-install` does the work; this is the command's face).

use std::process::ExitCode;
use strobe_install::{Env, Options, Scope};

/// `--scope`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum ScopeArg {
    /// Your own configs (every project).
    User,
    /// The current directory's configs (files to commit).
    Project,
}

pub(crate) fn install(
    agents: Vec<String>,
    dry_run: bool,
    uninstall: bool,
    scope: ScopeArg,
) -> ExitCode {
    let Some(env) = Env::from_process() else {
        eprintln!(
            "strobe install: HOME is not set (or the current directory is gone); set HOME and run again"
        );
        return ExitCode::from(2);
    };
    let strobe = match std::env::current_exe().and_then(|p| p.canonicalize()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("strobe install: cannot tell where this strobe binary is ({e})");
            return ExitCode::FAILURE;
        }
    };
    let opts = Options {
        agents,
        scope: match scope {
            ScopeArg::User => Scope::User,
            ScopeArg::Project => Scope::Project,
        },
        dry_run,
        uninstall,
        strobe,
    };
    match strobe_install::run(&opts, &env) {
        Ok(report) => {
            print!("{}", report.render(&env));
            if report.failed() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("strobe install: {e}");
            ExitCode::from(2)
        }
    }
}
