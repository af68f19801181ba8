//! `stdio`: text into the program's stdin, and EOF. Its output (stdout and
//! stderr) is captured by every session already, as `stdout`/`stderr`
//! events, so the channel has no observation half.

use crate::{
    ChannelError, ChannelKind, ChannelSpec, InputChannel, OpenChannel, SessionTarget, StdinPort,
};
use serde_json::{Value, json};
use std::time::Duration;

/// How long a write waits for a program that does not read its stdin.
const WRITE_PATIENCE: Duration = Duration::from_secs(2);

/// The `stdio` kind.
pub struct Stdio;

struct StdioChannel {
    stdin: Option<StdinPort>,
}

impl ChannelKind for Stdio {
    fn kind(&self) -> &'static str {
        "stdio"
    }

    fn stimulus_fields(&self) -> &'static [&'static str] {
        &["line", "text", "eof"]
    }

    fn describe(&self) -> &'static str {
        "the program's stdin: send {line} (one line, \\n added), {text} (raw) or {eof: true}; stdout/stderr are its events already"
    }

    fn event_type(&self) -> &'static str {
        "stdin"
    }

    fn always_present(&self) -> bool {
        true
    }

    fn open(
        &self,
        spec: &ChannelSpec,
        session: &SessionTarget,
    ) -> Result<OpenChannel, ChannelError> {
        if let Some(t) = &spec.target {
            return Err(ChannelError::BadSpec(format!("stdio:{t}")));
        }
        Ok(OpenChannel {
            input: Some(Box::new(StdioChannel {
                stdin: session.stdin.clone(),
            })),
            output: None,
            ..Default::default()
        })
    }
}

impl InputChannel for StdioChannel {
    fn name(&self) -> &str {
        "stdio"
    }

    fn preview(&self, action: &Value) -> String {
        let text = match (action.get("line"), action.get("text")) {
            (Some(Value::String(l)), _) => Some(format!("{l}\n")),
            (_, Some(Value::String(t))) => Some(t.clone()),
            _ => None,
        };
        let eof = action.get("eof") == Some(&Value::Bool(true));
        match (text, eof) {
            (Some(t), false) => format!("wrote {:?}", super::clip(&t, 80)),
            (Some(t), true) => format!("wrote {:?}, then EOF", super::clip(&t, 80)),
            (None, true) => "EOF".into(),
            (None, false) => action.to_string(),
        }
    }

    fn send(&self, action: &Value) -> Result<Value, ChannelError> {
        let bad = |why: &str| ChannelError::BadAction {
            channel: "stdio".into(),
            why: why.into(),
        };
        let obj = action
            .as_object()
            .ok_or_else(|| bad("send an object: {line}, {text} or {eof: true}"))?;
        for key in obj.keys() {
            if !["line", "text", "eof"].contains(&key.as_str()) {
                return Err(bad(&format!(
                    "unknown field {key:?}: stdio takes line, text and eof"
                )));
            }
        }
        let text = match (obj.get("line"), obj.get("text")) {
            (Some(_), Some(_)) => return Err(bad("give line or text, not both")),
            // One line is one command: an embedded break would make it two
            // (`"a\nquit"` runs quit), which the agent did not ask for.
            (Some(Value::String(l)), None) if l.contains(['\n', '\r']) => {
                return Err(bad(
                    "'line' is one line and this one holds a line break (\\n or \\r), which would send \
                     several commands: send each line on its own, or give 'text', the raw form, \
                     written exactly as given",
                ));
            }
            (Some(Value::String(l)), None) => Some(format!("{l}\n")),
            (None, Some(Value::String(t))) => Some(t.clone()),
            (None, None) => None,
            _ => return Err(bad("line and text are strings")),
        };
        let eof = match obj.get("eof") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(bad("eof is true or false")),
        };
        if text.is_none() && !eof {
            return Err(bad("nothing to send: give line, text or eof: true"));
        }
        let port = self.stdin.as_ref().ok_or_else(|| ChannelError::Unavailable {
            channel: "stdio".into(),
            why: "this session's stdin is not a pipe: launch with debug_launch {stdin: \"pipe\"} to write to it \
                  (an attached process keeps its own stdin)"
                .into(),
        })?;
        let unavailable = |e: crate::stdin_port::StdinError| ChannelError::Unavailable {
            channel: "stdio".into(),
            why: e.to_string(),
        };
        let mut written = 0;
        if let Some(t) = &text {
            written = port
                .write(t.as_bytes(), WRITE_PATIENCE)
                .map_err(unavailable)?;
        }
        if eof && !port.close() {
            return Err(unavailable(crate::stdin_port::StdinError::Closed));
        }
        let summary = self.preview(action);
        Ok(json!({"written": written, "eof": eof, "text": text, "summary": summary}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_line_with_a_break_is_refused_and_text_is_the_raw_form() {
        let (mut r, w) = std::io::pipe().unwrap();
        let ch = StdioChannel {
            stdin: Some(StdinPort::new(std::fs::File::from(
                std::os::fd::OwnedFd::from(w),
            ))),
        };
        for line in ["a\nquit", "a\rquit", "a\r\n"] {
            let e = ch.send(&json!({"line": line})).unwrap_err().to_string();
            assert!(e.contains("line break") && e.contains("'text'"), "{e}");
        }
        ch.send(&json!({"text": "a\nb\n", "eof": true})).unwrap();
        let mut got = String::new();
        r.read_to_string(&mut got).unwrap();
        assert_eq!(got, "a\nb\n", "only the raw text reached stdin");
    }
}
