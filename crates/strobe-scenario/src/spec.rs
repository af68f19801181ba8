//! A scenario as written (JSON) turned into checked steps. Everything is
//! validated before a step runs: a step with a field the runner does not
//! know, a channel kind that does not exist or a malformed condition is
//! refused naming the step (numbered from 1) and the field.

use crate::checks::check;
use crate::compare::Compare;
use serde_json::{Map, Value, json};
use std::fmt;

/// Longest fixed wait, and longest `until` timeout.
pub const MAX_WAIT_MS: u64 = 600_000;
/// How long a positive assertion may take to come true by default.
pub const DEFAULT_WITHIN_MS: u64 = 1_000;
/// A `wait.until`'s timeout when none is given.
pub const DEFAULT_UNTIL_MS: u64 = 5_000;
/// The most steps a scenario may have. A scenario is a test an agent
/// reads: a thousand steps is far past any written by hand, and a longer
/// one (generated, or hostile) is refused before it runs rather than
/// holding the session for minutes. Repetition belongs in the program or
/// in several scenario files.
pub const MAX_STEPS: usize = 1_000;

/// A scenario: the channels it needs and its steps, in order.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Its name (the file's stem for a scenario file).
    pub name: String,
    /// Channels opened before the first step ("net:8080", "file:*.ini").
    pub channels: Vec<String>,
    /// The steps.
    pub steps: Vec<Step>,
}

/// One step: its number (from 1), its text as written, what it does.
#[derive(Debug, Clone)]
pub struct Step {
    /// 1-based.
    pub number: usize,
    /// The step as written (compact JSON), for replies and events.
    pub text: String,
    /// What it does.
    pub kind: StepKind,
}

/// What a step does.
#[derive(Debug, Clone)]
pub enum StepKind {
    /// Sends `data` to `channel` (`"stdio.send"` → channel `stdio`).
    Do {
        /// The channel's name.
        channel: String,
        /// The stimulus.
        data: Value,
    },
    /// Waits a fixed time.
    Sleep(u64),
    /// Waits until `check` holds (checked server-side), at most `timeout_ms`.
    Until {
        /// The condition.
        check: Check,
        /// How long to wait for it.
        timeout_ms: u64,
    },
    /// Checks a condition; the scenario stops at the first that fails.
    Assert(Check),
}

/// A condition over what the session recorded (or the file system).
#[derive(Debug, Clone)]
pub struct Check {
    /// What it looks at.
    pub on: On,
    /// Look at everything since the session started, not since the
    /// previous `do` step.
    pub since_start: bool,
    /// How long a positive check may take to come true.
    pub within_ms: u64,
}

/// What a check looks at.
#[derive(Debug, Clone)]
pub enum On {
    /// Calls of function `func` (a name, or a glob with `*`).
    Trace {
        /// The function.
        func: String,
        /// Whether it was called at all.
        called: Option<bool>,
        /// How many calls.
        count: Option<Compare>,
        /// Conditions on arguments, by index ("0") or name.
        args: Vec<(String, Compare)>,
        /// A condition on the return value.
        returns: Option<Compare>,
        /// Argument and return conditions need one call, not every call.
        any: bool,
    },
    /// The program's output.
    Output {
        /// "stdout" or "stderr".
        stream: &'static str,
        /// Text a line contains.
        contains: Option<String>,
        /// A regex a line matches.
        matches: Option<regex::Regex>,
        /// False: no such line.
        present: bool,
    },
    /// The answer to the latest request a net channel sent.
    Net {
        /// Only this channel ("net:8080").
        channel: Option<String>,
        /// Its HTTP status.
        status: Option<Compare>,
        /// Text its body contains.
        body_contains: Option<String>,
    },
    /// A file, relative to the project root.
    File {
        /// The path.
        path: String,
        /// Whether it exists (default true).
        exists: bool,
        /// Text it contains.
        contains: Option<String>,
    },
    /// A node of the program's GUI.
    Ui {
        /// Its id, from debug_ui.
        id: String,
        /// A condition on its value.
        value: Option<Compare>,
        /// Text its name contains.
        name: Option<String>,
        /// Whether it is in the tree (default true).
        exists: bool,
    },
    /// MIDI messages the program sent (a midi channel's `seen` events).
    Midi {
        /// Only this channel ("midi:synth").
        channel: Option<String>,
        /// The message's fields that must match (type, note, velocity…).
        want: Map<String, Value>,
        /// False: no such message.
        present: bool,
    },
    /// The program's sound: the latest window an audio channel measured.
    Audio {
        /// Only this channel.
        channel: Option<String>,
        /// Conditions on rms, peak and frequency.
        levels: Vec<(&'static str, Compare)>,
        /// Whether it is silent.
        silence: Option<bool>,
        /// Whether it clips.
        clipping: Option<bool>,
    },
    /// Events of a channel's type: `stdin`, `file` (what a file channel
    /// saw), `net`.
    Events {
        /// The event type.
        event_type: &'static str,
        /// Only this channel.
        channel: Option<String>,
        /// Text the event contains.
        contains: Option<String>,
        /// False: no such event.
        present: bool,
    },
}

impl Check {
    /// A check that something did not happen: evaluated once (after the
    /// settle), since waiting cannot prove an absence.
    pub fn is_negative(&self) -> bool {
        match &self.on {
            On::Trace { called, count, .. } => {
                *called == Some(false) || count.as_ref().is_some_and(Compare::is_zero)
            }
            On::Output { present, .. } | On::Events { present, .. } => !present,
            On::File { exists, .. } => !exists,
            On::Midi { present, .. } => !present,
            On::Ui { exists, .. } => !exists,
            On::Net { .. } | On::Audio { .. } => false,
        }
    }
}

/// Why a scenario is refused before it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecError {
    /// The step (1-based), or `None` for the scenario's own fields.
    pub step: Option<usize>,
    /// What is wrong and what it takes.
    pub why: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.step {
            Some(n) => write!(f, "step {n}: {}", self.why),
            None => write!(f, "scenario: {}", self.why),
        }
    }
}

impl std::error::Error for SpecError {}

/// The channel kinds a `do` step may name, with their stimulus fields, and
/// the GUI driver `ui.*` steps go through (none: they are refused).
pub struct Kinds(
    pub Vec<(String, Vec<String>)>,
    pub Option<std::sync::Arc<dyn crate::UiDriver>>,
);

impl Kinds {
    /// The registered channel kinds.
    pub fn registered() -> Kinds {
        Kinds(
            strobe_channels::channels::all()
                .iter()
                .map(|k| {
                    (
                        k.kind().to_string(),
                        k.stimulus_fields().iter().map(|f| f.to_string()).collect(),
                    )
                })
                .collect(),
            None,
        )
    }

    /// The registered kinds, with `ui` steps going through `driver`.
    pub fn with_ui(driver: std::sync::Arc<dyn crate::UiDriver>) -> Kinds {
        let mut k = Kinds::registered();
        k.1 = Some(driver);
        k
    }

    fn fields(&self, kind: &str) -> Option<&[String]> {
        self.0
            .iter()
            .find(|(k, _)| k == kind)
            .map(|(_, f)| f.as_slice())
    }

    fn names(&self) -> String {
        self.0
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Parses and checks a scenario document named `name`.
pub fn parse(name: &str, doc: &Value, kinds: &Kinds) -> Result<Scenario, SpecError> {
    let top = |why: String| SpecError { step: None, why };
    let obj = doc
        .as_object()
        .ok_or_else(|| top("a scenario is an object: {channels?, steps: [...]}".into()))?;
    for key in obj.keys() {
        if !["name", "channels", "steps", "description", "launch"].contains(&key.as_str()) {
            return Err(top(format!(
                "unknown field {key:?} (a scenario has name, description, launch, channels, steps)"
            )));
        }
    }
    let name = match obj.get("name") {
        None => name.to_string(),
        Some(Value::String(n)) if !n.is_empty() => n.clone(),
        Some(_) => return Err(top("'name' is a non-empty string".into())),
    };
    let channels = match obj.get("channels") {
        None => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|c| {
                let c = c
                    .as_str()
                    .ok_or_else(|| top("'channels' lists strings (\"net:8080\")".into()))?;
                let kind = c.split(':').next().unwrap_or("");
                if kinds.fields(kind).is_none() && kind != "ui" {
                    return Err(top(format!(
                        "channel {c:?}: no kind {kind:?}; available: {}",
                        kinds.names()
                    )));
                }
                Ok(c.to_string())
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(top("'channels' is a list of strings".into())),
    };
    let steps = obj
        .get("steps")
        .and_then(Value::as_array)
        .ok_or_else(|| top("'steps' (a list) is required".into()))?;
    if steps.is_empty() {
        return Err(top("'steps' is empty: nothing to run".into()));
    }
    if steps.len() > MAX_STEPS {
        return Err(top(format!(
            "'steps' has {} steps, over the limit of {MAX_STEPS}: nothing ran; split it into \
             several scenarios (each a file in .strobe/scenarios/), or repeat in the program",
            steps.len()
        )));
    }
    let steps = steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            step(s, i + 1, kinds).map_err(|why| SpecError {
                step: Some(i + 1),
                why,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Scenario {
        name,
        channels,
        steps,
    })
}

fn step(v: &Value, number: usize, kinds: &Kinds) -> Result<Step, String> {
    let obj = v
        .as_object()
        .ok_or("a step is an object with \"do\", \"wait\" or \"assert\"")?;
    let which: Vec<&str> = ["do", "wait", "assert"]
        .into_iter()
        .filter(|k| obj.contains_key(*k))
        .collect();
    let kind = match which.as_slice() {
        [one] => *one,
        [] => {
            return Err(format!(
                "no \"do\", \"wait\" or \"assert\" (fields: {})",
                obj.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        _ => {
            return Err(format!(
                "one of do, wait, assert per step, not {}",
                which.join(" and ")
            ));
        }
    };
    let kind = match kind {
        "do" => do_step(obj, kinds)?,
        "wait" => wait_step(obj)?,
        _ => {
            let what = obj["assert"]
                .as_str()
                .ok_or("\"assert\" names what to check: trace, stdout, stderr, net, file, stdin")?;
            StepKind::Assert(check(obj, what, "assert")?)
        }
    };
    Ok(Step {
        number,
        text: v.to_string(),
        kind,
    })
}

fn do_step(obj: &Map<String, Value>, kinds: &Kinds) -> Result<StepKind, String> {
    let target = obj["do"]
        .as_str()
        .ok_or("\"do\" is \"<channel>.send\" (\"stdio.send\", \"net:8080.send\")")?;
    let (channel, verb) = target
        .rsplit_once('.')
        .ok_or_else(|| format!("\"do\": {target:?} is not <channel>.<verb> (\"stdio.send\")"))?;
    let kind = channel.split(':').next().unwrap_or("");
    if kind == "ui" {
        let driver = kinds
            .1
            .as_ref()
            .ok_or("ui steps need a GUI driver (debug_test_scenario gives one)")?;
        let mut data: Map<String, Value> = obj
            .iter()
            .filter(|(k, _)| *k != "do")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        data.insert("type".into(), json!(verb));
        let data = Value::Object(data);
        driver.check(&data)?;
        return Ok(StepKind::Do {
            channel: "ui".into(),
            data,
        });
    }
    let fields = kinds.fields(kind).ok_or_else(|| {
        format!(
            "\"do\": no channel kind {kind:?}; available: {}",
            kinds.names()
        )
    })?;
    if verb != "send" {
        return Err(format!("\"do\": {channel} takes \"send\", not {verb:?}"));
    }
    if fields.is_empty() {
        return Err(format!(
            "\"do\": {channel} takes no stimulus (it only observes)"
        ));
    }
    let mut data = Map::new();
    for (k, v) in obj {
        if k == "do" {
            continue;
        }
        if !fields.iter().any(|f| f == k) {
            return Err(format!(
                "unknown field {k:?} for {channel} (it takes {})",
                fields.join(", ")
            ));
        }
        data.insert(k.clone(), v.clone());
    }
    Ok(StepKind::Do {
        channel: channel.to_string(),
        data: Value::Object(data),
    })
}

fn wait_step(obj: &Map<String, Value>) -> Result<StepKind, String> {
    if let Some(k) = obj.keys().find(|k| *k != "wait") {
        return Err(format!(
            "unknown field {k:?} (a wait step is {{\"wait\": ms}} or {{\"wait\": {{until, timeoutMs}}}})"
        ));
    }
    match &obj["wait"] {
        Value::Number(n) => {
            let ms = n
                .as_u64()
                .filter(|ms| *ms <= MAX_WAIT_MS)
                .ok_or_else(|| format!("\"wait\" is 0 to {MAX_WAIT_MS} ms"))?;
            Ok(StepKind::Sleep(ms))
        }
        Value::Object(w) => {
            if let Some(k) = w
                .keys()
                .find(|k| !["until", "timeoutMs"].contains(&k.as_str()))
            {
                return Err(format!(
                    "unknown field \"wait.{k}\" (it takes until, timeoutMs)"
                ));
            }
            let timeout_ms = match w.get("timeoutMs") {
                None => DEFAULT_UNTIL_MS,
                Some(v) => v
                    .as_u64()
                    .filter(|ms| (1..=MAX_WAIT_MS).contains(ms))
                    .ok_or_else(|| format!("\"wait.timeoutMs\" is 1 to {MAX_WAIT_MS}"))?,
            };
            let until = w.get("until").and_then(Value::as_object).ok_or(
                "\"wait.until\" is a condition: {\"assert\": \"stdout\", \"contains\": \"ready\"}",
            )?;
            let what = match (until.get("assert"), until.get("channel")) {
                (Some(Value::String(a)), _) => a.clone(),
                (None, Some(Value::String(c))) => c.split(':').next().unwrap_or("").to_string(),
                _ => return Err("\"wait.until\" names what to check with \"assert\" (trace, stdout, net…) or \"channel\"".into()),
            };
            let check = check(until, &what, "wait.until")?;
            Ok(StepKind::Until { check, timeout_ms })
        }
        _ => Err("\"wait\" is a number of ms or {until, timeoutMs}".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds() -> Kinds {
        Kinds::registered()
    }

    #[test]
    fn a_scenario_parses_into_numbered_steps() {
        let s = parse(
            "s",
            &json!({"channels": ["net:8080"], "steps": [
                {"do": "net:8080.send", "path": "/x"},
                {"wait": 100},
                {"wait": {"until": {"assert": "stdout", "contains": "done"}, "timeoutMs": 500}},
                {"assert": "trace", "fn": "handle", "called": true},
                {"assert": "trace", "fn": "handle", "returns": {"<": 0}, "any": true, "since": "start"},
                {"do": "file:conf.ini.send", "op": "write", "text": "x"},
            ]}),
            &kinds(),
        )
        .unwrap();
        assert_eq!(s.steps.len(), 6);
        assert!(matches!(&s.steps[0].kind, StepKind::Do { channel, .. } if channel == "net:8080"));
        assert!(matches!(s.steps[1].kind, StepKind::Sleep(100)));
        assert!(matches!(
            &s.steps[2].kind,
            StepKind::Until {
                timeout_ms: 500,
                ..
            }
        ));
        assert!(
            matches!(&s.steps[5].kind, StepKind::Do { channel, .. } if channel == "file:conf.ini")
        );
        assert_eq!(s.steps[3].number, 4);
    }

    #[test]
    fn malformed_steps_name_the_step_and_the_field() {
        let e = |doc: Value| parse("s", &doc, &kinds()).unwrap_err().to_string();
        assert_eq!(
            e(json!({"steps": [{"wait": 1}, {"assert": "trace", "fn": "f", "caled": true}]})),
            "step 2: unknown field \"caled\" for a trace check (it takes fn, called, count, args, returns, any, since, withinMs)"
        );
        assert!(
            e(json!({"steps": [{"do": "stdio.send", "lin": "x"}]}))
                .starts_with("step 1: unknown field \"lin\" for stdio (it takes line, text, eof)")
        );
        assert!(e(json!({"steps": [{"do": "bogus.send"}]})).contains(
            "no channel kind \"bogus\"; available: stdio, trace, file, net, midi, audio"
        ));
        assert!(
            e(json!({"steps": [{"do": "midi.send", "note": 60, "velo": 1}]}))
                .contains("unknown field \"velo\" for midi")
        );
        assert!(
            e(json!({"steps": [{"assert": "audio", "loud": true}]}))
                .contains("unknown field \"loud\" for a audio check")
        );
        assert!(e(json!({"steps": [{"do": "x", "wait": 1}]})).contains("one of do, wait, assert"));
        assert!(
            e(json!({"steps": [{"assert": "stdout"}]}))
                .contains("needs \"contains\" or \"matches\"")
        );
        assert!(
            e(json!({"steps": [{"assert": "stdout", "matches": "("}]})).contains("\"matches\"")
        );
        assert!(e(json!({"stepz": []})).starts_with("scenario: unknown field \"stepz\""));
        assert!(
            e(json!({"channels": ["bogus:1"], "steps": [{"wait": 1}]}))
                .contains("no kind \"bogus\"")
        );
        assert!(e(json!({"steps": [{"wait": {"until": {"assert": "trace", "fn": "f", "called": true}, "timeout": 1}}]})).contains("unknown field \"wait.timeout\""));
        let many: Vec<Value> = (0..=MAX_STEPS).map(|_| json!({"wait": 0})).collect();
        assert!(
            e(json!({"steps": many}))
                .starts_with("scenario: 'steps' has 1001 steps, over the limit of 1000")
        );
        let most: Vec<Value> = (0..MAX_STEPS).map(|_| json!({"wait": 0})).collect();
        assert!(parse("s", &json!({"steps": most}), &kinds()).is_ok());
    }

    #[test]
    fn negative_checks_are_known() {
        let s = parse(
            "s",
            &json!({"steps": [
                {"assert": "trace", "fn": "f", "called": false},
                {"assert": "trace", "fn": "f", "count": 0},
                {"assert": "stdout", "contains": "x", "present": false},
                {"assert": "trace", "fn": "f", "count": {">=": 1}},
            ]}),
            &kinds(),
        )
        .unwrap();
        let neg: Vec<bool> = s
            .steps
            .iter()
            .map(|st| match &st.kind {
                StepKind::Assert(c) => c.is_negative(),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(neg, [true, true, true, false]);
    }
}
