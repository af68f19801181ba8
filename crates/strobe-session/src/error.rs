//! The session layer's errors, by what went wrong, and the one place where
//! they become the codes and messages an agent sees
//! ([`strobe_core::ToolError`]: MCP replies, and through them the web API's
//! statuses).

use strobe_core::error::excerpt;
use strobe_core::{ErrorCode, ToolError};

/// Why a session operation failed. Each message says what went wrong and
/// what to do next; the variant says which kind of failure it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// The request's arguments are wrong: which one and why.
    #[error("{0}")]
    Invalid(String),
    /// A trace pattern is malformed: which and why.
    #[error("{0}")]
    Pattern(String),
    /// No live or retained session has this id.
    #[error("no session '{}'", excerpt(.0))]
    UnknownSession(String),
    /// The target has exited; what it recorded can still be queried.
    #[error("{0}")]
    Exited(String),
    /// The target is stopped by a signal or a debugger, so its agent cannot
    /// act until it is continued.
    #[error("{0}")]
    Stopped(String),
    /// Frida could not spawn or instrument the target.
    #[error("{0}")]
    Attach(String),
    /// Frida's Python package (or Python) is missing or broken.
    #[error("{0}")]
    FridaUnavailable(String),
    /// Something inside Strobe failed (the store, a bridge): which part.
    #[error("{0}")]
    Internal(String),
}

impl SessionError {
    /// Invalid arguments, with the message saying which and why.
    pub fn validation(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }

    /// An internal failure, naming the part.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::Internal(message.into())
    }

    /// No session `id`.
    pub fn session_not_found(id: &str) -> Self {
        Self::UnknownSession(id.to_string())
    }

    /// A malformed trace pattern.
    pub fn pattern(message: impl Into<String>) -> Self {
        Self::Pattern(message.into())
    }

    /// The target has exited.
    pub fn exited(message: impl Into<String>) -> Self {
        Self::Exited(message.into())
    }

    /// The target is stopped by a signal or a debugger.
    pub fn stopped(message: impl Into<String>) -> Self {
        Self::Stopped(message.into())
    }

    /// Frida could not spawn or instrument the target.
    pub fn attach(message: impl Into<String>) -> Self {
        Self::Attach(message.into())
    }

    /// Frida or Python is missing or broken.
    pub fn frida_unavailable(message: impl Into<String>) -> Self {
        Self::FridaUnavailable(message.into())
    }

    /// The same kind of failure with its message rewritten by `f` (an
    /// unknown session's message is its id).
    pub fn map(self, f: impl FnOnce(String) -> String) -> Self {
        match self {
            Self::Invalid(m) => Self::Invalid(f(m)),
            Self::Pattern(m) => Self::Pattern(f(m)),
            Self::UnknownSession(id) => Self::UnknownSession(id),
            Self::Exited(m) => Self::Exited(f(m)),
            Self::Stopped(m) => Self::Stopped(f(m)),
            Self::Attach(m) => Self::Attach(f(m)),
            Self::FridaUnavailable(m) => Self::FridaUnavailable(f(m)),
            Self::Internal(m) => Self::Internal(f(m)),
        }
    }

    /// The message alone, as the agent reads it.
    pub fn message(&self) -> String {
        ToolError::from(self.clone()).message
    }
}

/// The one mapping of session errors to what agents see: a code from the
/// spec's table and a message with the next step.
impl From<SessionError> for ToolError {
    fn from(e: SessionError) -> ToolError {
        match e {
            SessionError::Invalid(m) => ToolError::new(ErrorCode::ValidationError, m),
            SessionError::Pattern(m) => ToolError::new(ErrorCode::InvalidPattern, m),
            SessionError::UnknownSession(id) => ToolError::session_not_found(&id),
            SessionError::Exited(m) => ToolError::new(ErrorCode::ProcessExited, m),
            SessionError::Stopped(m) => ToolError::new(ErrorCode::ProcessStopped, m),
            SessionError::Attach(m) => ToolError::new(ErrorCode::FridaAttachFailed, m),
            SessionError::FridaUnavailable(m) => ToolError::new(ErrorCode::FridaUnavailable, m),
            SessionError::Internal(m) => ToolError::new(ErrorCode::InternalError, m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_maps_to_its_code_with_the_next_step() {
        let cases = [
            (SessionError::validation("bad"), ErrorCode::ValidationError),
            (SessionError::Pattern("p".into()), ErrorCode::InvalidPattern),
            (
                SessionError::session_not_found("s1"),
                ErrorCode::SessionNotFound,
            ),
            (
                SessionError::Exited("gone".into()),
                ErrorCode::ProcessExited,
            ),
            (
                SessionError::Stopped("kill -CONT 4".into()),
                ErrorCode::ProcessStopped,
            ),
            (
                SessionError::Attach("spawn".into()),
                ErrorCode::FridaAttachFailed,
            ),
            (
                SessionError::FridaUnavailable("venv".into()),
                ErrorCode::FridaUnavailable,
            ),
            (SessionError::internal("store"), ErrorCode::InternalError),
        ];
        for (e, code) in cases {
            assert_eq!(ToolError::from(e).code, code);
        }
        // The agent is told how to find the sessions there are.
        let m = SessionError::session_not_found("s1").message();
        assert!(m.contains("debug_session") && m.contains("'list'"), "{m}");
        // Long messages are capped where they become the agent's.
        let long = SessionError::validation("x ".repeat(1 << 20)).message();
        assert!(long.len() < 4_000, "{}", long.len());
    }
}
