//! Error codes that reach the agent.
//!
//! Libraries keep their own typed errors; at the MCP boundary each is mapped
//! to one of these codes plus a message that says what to do next.

use serde::Serialize;
use std::borrow::Cow;

/// How many characters of a caller's value an error message quotes.
pub const ECHO_CHARS: usize = 200;

/// The longest error message, in bytes: past it, [`cap_message`] cuts.
pub const MAX_MESSAGE_BYTES: usize = 2_000;

/// `value` as an error message may quote it: whole when short, else its
/// first [`ECHO_CHARS`] characters and how long it was. A bad value is
/// echoed for recognition, and a megabyte of it helps nobody.
pub fn excerpt(value: &str) -> Cow<'_, str> {
    if value.len() <= ECHO_CHARS {
        return Cow::Borrowed(value);
    }
    match value.char_indices().nth(ECHO_CHARS) {
        None => Cow::Borrowed(value),
        Some((end, _)) => Cow::Owned(format!("{}… ({} bytes in all)", &value[..end], value.len())),
    }
}

/// A message no longer than about [`MAX_MESSAGE_BYTES`]: each overlong word
/// (a quoted value, a path) is cut to an [`excerpt`], and if that is not
/// enough, the middle goes, keeping the start (what is wrong) and the end
/// (what to do).
pub fn cap_message(message: &str) -> String {
    if message.len() <= MAX_MESSAGE_BYTES {
        return message.to_string();
    }
    let mut out = String::with_capacity(MAX_MESSAGE_BYTES);
    for (i, word) in message.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&excerpt(word));
    }
    if out.len() <= MAX_MESSAGE_BYTES {
        return out;
    }
    let head = floor_char(&out, MAX_MESSAGE_BYTES / 2);
    let tail = ceil_char(&out, out.len() - MAX_MESSAGE_BYTES / 4);
    format!(
        "{} … ({} bytes cut) … {}",
        &out[..head],
        tail - head,
        &out[tail..]
    )
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

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
    /// Builds an error with the given code; the message is capped
    /// ([`cap_message`]), since it may quote what the caller sent.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            code,
            message: if message.len() > MAX_MESSAGE_BYTES {
                cap_message(&message)
            } else {
                message
            },
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
                "no session '{}'. Call debug_session with action 'list' to see live and retained sessions.",
                excerpt(id)
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_quoted_whole_and_long_ones_cut() {
        assert_eq!(excerpt("abc"), "abc");
        let long = "é".repeat(1000);
        let e = excerpt(&long);
        assert!(e.starts_with(&"é".repeat(ECHO_CHARS)), "{e}");
        assert!(e.ends_with("… (2000 bytes in all)"), "{e}");
    }

    #[test]
    fn messages_echoing_a_megabyte_stay_short() {
        let big = "y".repeat(1 << 20);
        let e = ToolError::validation(format!(
            "'command' {big:?} was not found on PATH; give an absolute path"
        ));
        assert!(e.message.len() < 400, "{}", e.message.len());
        assert!(e.message.starts_with("'command' \"yyy"), "{}", e.message);
        assert!(
            e.message.ends_with("give an absolute path"),
            "{}",
            e.message
        );
        // A value with spaces in it: the middle goes, both ends stay.
        let spaced = "ab ".repeat(1 << 19);
        let e = ToolError::validation(format!("bad value {spaced}; do this instead"));
        assert!(
            e.message.len() <= MAX_MESSAGE_BYTES + 100,
            "{}",
            e.message.len()
        );
        assert!(e.message.starts_with("bad value ab ab"));
        assert!(
            e.message.ends_with("; do this instead"),
            "{}",
            &e.message[e.message.len() - 50..]
        );
        let id = ToolError::session_not_found(&big);
        assert!(id.message.len() < 400);
        // Short messages are untouched.
        assert_eq!(ToolError::validation("plain").message, "plain");
    }
}
