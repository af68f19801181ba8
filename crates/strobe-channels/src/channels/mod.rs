//! The channel kinds, one file each, and the registry keyed by kind: a new
//! kind is a file here and one line in [`all`].

mod audio;
mod file;
mod midi;
mod net;
mod stdio;
mod trace;

use crate::{ChannelError, ChannelKind, ChannelSpec, OpenChannel, SessionTarget};

/// Every registered channel kind.
pub fn all() -> Vec<Box<dyn ChannelKind>> {
    vec![
        Box::new(stdio::Stdio),
        Box::new(trace::Trace),
        Box::new(file::Files),
        Box::new(net::Net),
        Box::new(midi::Midi),
        Box::new(audio::Audio),
    ]
}

/// The registered spelling of a channel written another way, if there is
/// one: an address (`udp://127.0.0.1:9000`, `tcp://…`, `http://…`) is a
/// `net` channel (`net:udp://127.0.0.1:9000`), so an error can name the
/// exact spec to add.
pub fn respelled(spec: &str) -> Option<String> {
    let (scheme, rest) = spec.split_once("://")?;
    (matches!(scheme, "udp" | "tcp" | "http") && !rest.is_empty()).then(|| format!("net:{spec}"))
}

/// The first `max` characters of `text`, with `…` when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    let mut s: String = text.chars().take(max).collect();
    if text.chars().count() > max {
        s.push('…');
    }
    s
}

/// Opens the channel `spec` names, with the kind registered for it.
pub fn open(
    kinds: &[Box<dyn ChannelKind>],
    spec: &str,
    session: &SessionTarget,
) -> Result<OpenChannel, ChannelError> {
    let spec = ChannelSpec::parse(spec)?;
    let kind = kinds
        .iter()
        .find(|k| k.kind() == spec.kind)
        .ok_or_else(|| ChannelError::UnknownKind {
            kind: spec.kind.clone(),
            known: kinds
                .iter()
                .map(|k| k.kind())
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    kind.open(&spec, session)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InputChannel, Observation, ObservationSink, OutputChannel};
    use serde_json::{Value, json};
    use std::sync::{Arc, Mutex};

    /// A channel double that echoes what it is sent to its observers: the
    /// traits carry a stimulus in and an observation out to the session.
    struct Echo;
    struct EchoChannel {
        name: String,
        sink: Mutex<Option<Arc<dyn ObservationSink>>>,
    }

    impl InputChannel for Arc<EchoChannel> {
        fn name(&self) -> &str {
            &self.name
        }
        fn send(&self, action: &Value) -> Result<Value, ChannelError> {
            if let Some(sink) = self.sink.lock().unwrap().as_ref() {
                sink.observe(Observation {
                    channel: self.name.clone(),
                    at_ns: None,
                    data: action.clone(),
                });
            }
            Ok(json!({"sent": true}))
        }
    }

    impl OutputChannel for Arc<EchoChannel> {
        fn name(&self) -> &str {
            &self.name
        }
        fn start_capture(&self, sink: Arc<dyn ObservationSink>) -> Result<(), ChannelError> {
            *self.sink.lock().unwrap() = Some(sink);
            Ok(())
        }
        fn stop_capture(&self) -> Result<(), ChannelError> {
            *self.sink.lock().unwrap() = None;
            Ok(())
        }
    }

    impl ChannelKind for Echo {
        fn kind(&self) -> &'static str {
            "echo"
        }
        fn describe(&self) -> &'static str {
            "echoes what it is sent"
        }
        fn open(&self, spec: &ChannelSpec, _: &SessionTarget) -> Result<OpenChannel, ChannelError> {
            let name = match &spec.target {
                Some(t) => format!("echo:{t}"),
                None => "echo".into(),
            };
            let ch = Arc::new(EchoChannel {
                name,
                sink: Mutex::new(None),
            });
            Ok(OpenChannel {
                input: Some(Box::new(ch.clone())),
                output: Some(Box::new(ch)),
                ..Default::default()
            })
        }
    }

    #[derive(Default)]
    struct Timeline(Mutex<Vec<Observation>>);
    impl ObservationSink for Timeline {
        fn observe(&self, o: Observation) {
            self.0.lock().unwrap().push(o);
        }
    }

    #[test]
    fn a_registered_kind_is_opened_by_spec_and_its_observations_reach_the_session() {
        let kinds: Vec<Box<dyn ChannelKind>> = vec![Box::new(Echo)];
        let session = SessionTarget::for_tests("/p", vec![1]);
        let ch = open(&kinds, "echo:9", &session).unwrap();
        let timeline = Arc::new(Timeline::default());
        let output = ch.output.unwrap();
        output.start_capture(timeline.clone()).unwrap();
        let input = ch.input.unwrap();
        assert_eq!(input.name(), "echo:9");
        input.send(&json!({"note": 60})).unwrap();
        output.stop_capture().unwrap();
        input.send(&json!({"note": 61})).unwrap();
        let seen = timeline.0.lock().unwrap();
        assert_eq!(seen.len(), 1, "nothing after stop_capture");
        assert_eq!(seen[0].data["note"], 60);
        let e = open(&kinds, "midi", &session).err().unwrap().to_string();
        assert!(e.contains("known: echo"), "{e}");
        let e = open(&kinds, "Net:1", &session).err().unwrap().to_string();
        assert!(e.contains("is not a channel"), "{e}");
        assert_eq!(
            respelled("udp://127.0.0.1:9000").as_deref(),
            Some("net:udp://127.0.0.1:9000")
        );
        assert_eq!(respelled("net:udp://127.0.0.1:9000"), None);
        assert_eq!(respelled("ftp://127.0.0.1:21"), None);
        let names: Vec<_> = all().iter().map(|k| k.kind()).collect();
        assert_eq!(names, ["stdio", "trace", "file", "net", "midi", "audio"]);
    }
}
