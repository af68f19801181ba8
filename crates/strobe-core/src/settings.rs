//! Settings: built-in defaults ← `$STROBE_HOME/settings.json` ←
//! `<projectRoot>/.strobe/settings.json`.
//!
//! Files are flat JSON objects with dotted keys (`"events.maxPerSession"`).
//! They are re-read on every tool call, so there is no cache to invalidate.
//! A bad value never fails a call: it falls back to the default and yields a
//! [`SettingsWarning`] naming the key, which the tool response carries.

use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Effective settings after merging all layers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    /// `events.maxPerSession`: function-call events (enter/exit) kept per session; older
    /// ones are evicted first (counted).
    pub max_events_per_session: u64,
    /// `events.maxOutputPerSession`: the program's other events (output, crashes, exits,
    /// snapshots, logpoints) kept per session, apart from the calls, so trace load never
    /// evicts them; older ones are evicted (counted).
    pub max_output_events_per_session: u64,
    /// `test.statusRetryMs`: base polling delay suggested for test status.
    pub test_status_retry_ms: u64,
    /// `daemon.idleTimeoutMs`: idle time (no clients, no live sessions) before the daemon exits.
    pub daemon_idle_timeout_ms: u64,
    /// `storage.retentionDays`: retained sessions older than this are purged.
    pub retention_days: u64,
    /// `storage.maxTotalBytes`: cap on stored event bytes; oldest retained sessions go first.
    pub max_total_bytes: u64,
    /// `bridge.requestTimeoutMs`: how long a Frida bridge may take to answer before it is
    /// declared hung and its session failed.
    pub bridge_request_timeout_ms: u64,
    /// `trace.hotCallsPerSecond`: a traced function called more often than this is sampled.
    pub hot_calls_per_second: u64,
    /// `trace.libraryWaitMs`: how long a thread loading a library waits for its hooks
    /// while patterns are active (so its functions are traced from their first call);
    /// past it the load goes on and the hooks go in when they come.
    pub library_wait_ms: u64,
    /// `trace.sharedRing`: the daemon maps each target's record ring (a memfd)
    /// and drains it itself; off, the agent ships records in messages
    /// through the Frida bridge (slower; for comparison and as a fallback).
    pub shared_ring: bool,
    /// `frida.venv`: the Python venv holding the pinned `frida` (None = `$STROBE_HOME/venv`).
    pub frida_venv: Option<PathBuf>,
    /// `ui.http`: serve the web UI on loopback from daemon start (`strobe ui` turns it on
    /// for the running daemon either way).
    pub ui_http: bool,
    /// `ui.port`: its port on 127.0.0.1; 0 = any free port.
    pub ui_port: u64,
    /// `vision.enabled`: debug_ui runs the vision pipeline (OCR, shapes) on
    /// every screenshot without being asked.
    pub vision_enabled: bool,
    /// `vision.confidenceThreshold`: vision results below this are left out.
    pub vision_confidence_threshold: f64,
    /// `vision.iouMergeThreshold`: a shape overlapping a node this much
    /// (intersection over union) is that node.
    pub vision_iou_merge_threshold: f64,
    /// `vision.sidecarIdleTimeoutSeconds`: the vision sidecar exits after
    /// this long unused.
    pub vision_idle_timeout_s: u64,
    /// `ui.allowInputOnUserDisplay`: debug_ui_action may send input
    /// (clicks, keys) to a display the session inherited (a person's
    /// desktop), while the session's own window is the target. Off by
    /// default: a virtual display always takes input.
    pub ui_allow_input_on_user_display: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            max_events_per_session: 200_000,
            max_output_events_per_session: 200_000,
            test_status_retry_ms: 5_000,
            daemon_idle_timeout_ms: 30 * 60 * 1000,
            retention_days: 7,
            max_total_bytes: 10 * 1024 * 1024 * 1024,
            bridge_request_timeout_ms: 30_000,
            hot_calls_per_second: 100_000,
            library_wait_ms: 10_000,
            shared_ring: true,
            frida_venv: None,
            ui_http: false,
            ui_port: 0,
            vision_enabled: false,
            vision_confidence_threshold: 0.3,
            vision_iou_merge_threshold: 0.5,
            vision_idle_timeout_s: 300,
            ui_allow_input_on_user_display: false,
        }
    }
}

/// A setting that could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SettingsWarning {
    /// The key (or file) concerned.
    pub key: String,
    /// What was wrong and what was used instead.
    pub message: String,
}

impl std::fmt::Display for SettingsWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "setting '{}': {}", self.key, self.message)
    }
}

/// Integer settings: key, accessor, allowed range.
type IntField = (&'static str, fn(&mut Settings) -> &mut u64, u64, u64);

const INT_FIELDS: &[IntField] = &[
    ("ui.port", |s| &mut s.ui_port, 0, 65_535),
    (
        "vision.sidecarIdleTimeoutSeconds",
        |s| &mut s.vision_idle_timeout_s,
        1,
        86_400,
    ),
    (
        "trace.hotCallsPerSecond",
        |s| &mut s.hot_calls_per_second,
        1_000,
        100_000_000,
    ),
    (
        "trace.libraryWaitMs",
        |s| &mut s.library_wait_ms,
        0,
        600_000,
    ),
    (
        "events.maxPerSession",
        |s| &mut s.max_events_per_session,
        1,
        10_000_000,
    ),
    (
        "events.maxOutputPerSession",
        |s| &mut s.max_output_events_per_session,
        1,
        10_000_000,
    ),
    (
        "test.statusRetryMs",
        |s| &mut s.test_status_retry_ms,
        500,
        60_000,
    ),
    (
        "daemon.idleTimeoutMs",
        |s| &mut s.daemon_idle_timeout_ms,
        100,
        7 * 24 * 3_600_000,
    ),
    ("storage.retentionDays", |s| &mut s.retention_days, 1, 3650),
    (
        "storage.maxTotalBytes",
        |s| &mut s.max_total_bytes,
        1 << 20,
        1 << 50,
    ),
    (
        "bridge.requestTimeoutMs",
        |s| &mut s.bridge_request_timeout_ms,
        500,
        600_000,
    ),
];

/// Settings that are fractions in 0..=1: key, accessor, default.
type FractionField = (&'static str, fn(&mut Settings) -> &mut f64, f64);

const FRACTION_FIELDS: &[FractionField] = &[
    (
        "vision.confidenceThreshold",
        |s| &mut s.vision_confidence_threshold,
        0.3,
    ),
    (
        "vision.iouMergeThreshold",
        |s| &mut s.vision_iou_merge_threshold,
        0.5,
    ),
];

impl Settings {
    /// Loads defaults, then the global file, then the project file (if a
    /// project root is given). Missing files are fine; everything else that is
    /// wrong becomes a warning.
    pub fn load(
        global_file: &Path,
        project_root: Option<&Path>,
    ) -> (Settings, Vec<SettingsWarning>) {
        let mut settings = Settings::default();
        let mut warnings = Vec::new();
        settings.apply_file(global_file, &mut warnings);
        if let Some(root) = project_root {
            settings.apply_file(&root.join(".strobe").join("settings.json"), &mut warnings);
        }
        (settings, warnings)
    }

    fn apply_file(&mut self, path: &Path, warnings: &mut Vec<SettingsWarning>) {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                warnings.push(SettingsWarning {
                    key: path.display().to_string(),
                    message: format!("could not read the file ({e}); its settings were ignored"),
                });
                return;
            }
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => {
                for (key, value) in &map {
                    self.apply_value(key, value, warnings);
                }
            }
            Ok(_) => warnings.push(SettingsWarning {
                key: path.display().to_string(),
                message: "must be a JSON object of \"key\": value pairs; file ignored".into(),
            }),
            Err(e) => warnings.push(SettingsWarning {
                key: path.display().to_string(),
                message: format!("is not valid JSON ({e}); file ignored"),
            }),
        }
    }

    fn apply_value(&mut self, key: &str, value: &Value, warnings: &mut Vec<SettingsWarning>) {
        if let Some((_, field, min, max)) = INT_FIELDS.iter().find(|(k, ..)| *k == key) {
            let default = *field(&mut Settings::default());
            match value.as_u64() {
                Some(v) if (*min..=*max).contains(&v) => *field(self) = v,
                _ => {
                    *field(self) = default;
                    warnings.push(SettingsWarning {
                        key: key.to_string(),
                        message: format!(
                            "{value} is not an integer in {min}..={max}; using the default {default}"
                        ),
                    });
                }
            }
            return;
        }
        if let Some((_, field, default)) = FRACTION_FIELDS.iter().find(|(k, ..)| *k == key) {
            match value.as_f64() {
                Some(v) if (0.0..=1.0).contains(&v) => *field(self) = v,
                _ => {
                    *field(self) = *default;
                    warnings.push(SettingsWarning {
                        key: key.to_string(),
                        message: format!(
                            "{value} is not a number in 0..=1; using the default {default}"
                        ),
                    });
                }
            }
            return;
        }
        match key {
            "vision.enabled" => match value.as_bool() {
                Some(b) => self.vision_enabled = b,
                None => {
                    self.vision_enabled = false;
                    warnings.push(SettingsWarning {
                        key: key.into(),
                        message: format!("{value} is not true or false; vision stays off unless a call asks for it"),
                    });
                }
            },
            "ui.allowInputOnUserDisplay" => match value.as_bool() {
                Some(b) => self.ui_allow_input_on_user_display = b,
                None => {
                    self.ui_allow_input_on_user_display = false;
                    warnings.push(SettingsWarning {
                        key: key.into(),
                        message: format!(
                            "{value} is not true or false; input stays refused on displays the session did not start"
                        ),
                    });
                }
            },
            "trace.sharedRing" => match value.as_bool() {
                Some(b) => self.shared_ring = b,
                None => {
                    self.shared_ring = true;
                    warnings.push(SettingsWarning {
                        key: key.into(),
                        message: format!(
                            "{value} is not true or false; the daemon drains the shared ring"
                        ),
                    });
                }
            },
            "ui.http" => match value.as_bool() {
                Some(b) => self.ui_http = b,
                None => {
                    self.ui_http = false;
                    warnings.push(SettingsWarning {
                        key: key.into(),
                        message: format!("{value} is not true or false; the web UI stays off"),
                    });
                }
            },
            "frida.venv" => match value.as_str() {
                Some(p) if Path::new(p).is_absolute() => self.frida_venv = Some(PathBuf::from(p)),
                _ => {
                    self.frida_venv = None;
                    warnings.push(SettingsWarning {
                        key: key.into(),
                        message: format!(
                            "{value} is not an absolute path; using the default venv location"
                        ),
                    });
                }
            },
            _ => warnings.push(SettingsWarning {
                key: key.into(),
                message: "unknown setting; ignored".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn layers_override_and_bad_values_warn() {
        let tmp = tempfile::tempdir().unwrap();
        let global = tmp.path().join("settings.json");
        fs::write(
            &global,
            r#"{"events.maxPerSession": 1000, "daemon.idleTimeoutMs": 5000, "bogus": 1}"#,
        )
        .unwrap();
        let project = tmp.path().join("proj");
        fs::create_dir_all(project.join(".strobe")).unwrap();
        fs::write(
            project.join(".strobe/settings.json"),
            r#"{"events.maxPerSession": 0, "test.statusRetryMs": 700}"#,
        )
        .unwrap();
        let (s, w) = Settings::load(&global, Some(&project));
        assert_eq!(
            s.max_events_per_session, 200_000,
            "invalid value falls back to default"
        );
        assert_eq!(s.daemon_idle_timeout_ms, 5000);
        assert_eq!(s.test_status_retry_ms, 700);
        let keys: Vec<_> = w.iter().map(|w| w.key.as_str()).collect();
        assert!(keys.contains(&"bogus"));
        assert!(keys.contains(&"events.maxPerSession"));
    }

    #[test]
    fn vision_settings_take_fractions_and_refuse_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let global = tmp.path().join("settings.json");
        fs::write(
            &global,
            r#"{"vision.enabled": true, "vision.confidenceThreshold": 0.6, "vision.iouMergeThreshold": 2, "vision.sidecarIdleTimeoutSeconds": 30}"#,
        )
        .unwrap();
        let (s, w) = Settings::load(&global, None);
        assert!(s.vision_enabled);
        assert_eq!(s.vision_confidence_threshold, 0.6);
        assert_eq!(
            s.vision_iou_merge_threshold, 0.5,
            "out of range: the default"
        );
        assert_eq!(s.vision_idle_timeout_s, 30);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].key, "vision.iouMergeThreshold");
    }

    #[test]
    fn broken_file_is_a_warning_not_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let global = tmp.path().join("settings.json");
        fs::write(&global, "{not json").unwrap();
        let (s, w) = Settings::load(&global, None);
        assert_eq!(s, Settings::default());
        assert_eq!(w.len(), 1);
        assert!(w[0].message.contains("not valid JSON"));
    }
}
