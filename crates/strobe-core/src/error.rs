//! Error codes that reach the agent.
//!
//! Libraries keep their own typed errors; at the MCP boundary each is mapped
//! to one of these codes plus a message that says what to do next.

use serde::Serialize;

/// Machine-readable error code of a failed tool call (the spec's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// The request's arguments are invalid; the message says which and why.
    ValidationError,
    /// No session with that id exists (live or retained).
    SessionNotFound,
    /// The target process has exited; the session can still be queried.
    ProcessExited,
    /// The target is stopped by a signal (SIGSTOP, SIGTSTP, …) or a debugger,
    /// so its agent cannot act until it is continued (SIGCONT).
    ProcessStopped,
    /// Frida could not spawn or instrument the target.
    FridaAttachFailed,
    /// Frida's Python package (or Python itself) is missing or broken.
    FridaUnavailable,
    /// A trace pattern is malformed; the message says why.
    InvalidPattern,
    /// Something inside Strobe failed; the message names the part.
    InternalError,
}

impl ErrorCode {
    /// The wire spelling, e.g. `VALIDATION_ERROR`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::ValidationError => "VALIDATION_ERROR",
            ErrorCode::SessionNotFound => "SESSION_NOT_FOUND",
            ErrorCode::ProcessExited => "PROCESS_EXITED",
            ErrorCode::ProcessStopped => "PROCESS_STOPPED",
            ErrorCode::FridaAttachFailed => "FRIDA_ATTACH_FAILED",
            ErrorCode::FridaUnavailable => "FRIDA_UNAVAILABLE",
            ErrorCode::InvalidPattern => "INVALID_PATTERN",
            ErrorCode::InternalError => "INTERNAL_ERROR",
        }
    }
}

/// A tool failure as the agent sees it: a code and an actionable message.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct ToolError {
    /// What kind of failure this is.
    pub code: ErrorCode,
    /// What went wrong and what to do about it.
    pub message: String,
}

impl ToolError {
    /// Builds an error with the given code.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// Shorthand for [`ErrorCode::ValidationError`].
    pub fn validation(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ValidationError, message)
    }

    /// Shorthand for [`ErrorCode::InternalError`].
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InternalError, message)
    }

    /// The "unknown session" error, with the hint every caller wants.
    pub fn session_not_found(id: &str) -> Self {
        Self::new(
            ErrorCode::SessionNotFound,
            format!(
                "no session '{id}'. Call debug_session with action 'list' to see live and retained sessions."
            ),
        )
    }
}
