//! Test instrumentation: which framework a project uses, how to run its
//! suite, one test or one level, and what its output means.
//!
//! Each framework is one [`TestAdapter`] in its own file under `adapters/`,
//! registered in [`adapters()`]. An adapter builds commands and hands out an
//! [`OutputParser`] that reads the run's output line by line as it arrives,
//! so a failure's file:line and message are known even when a later test
//! hangs and the run never finishes. The parsed result is the universal
//! [`TestResult`].
//!
//! This crate runs nothing itself: the session layer spawns the commands
//! and feeds the parser.

pub mod adapter;
pub mod adapters;
pub mod project;
pub mod result;
pub mod walk;

pub use adapter::{
    Ecosystem, OutputParser, Stream, TestAdapter, TestCommand, TestLevel, TestTarget,
};
pub use result::{Progress, Summary, TestCase, TestFailure, TestResult, TestStatus};

/// Errors choosing an adapter.
#[derive(Debug, thiserror::Error)]
pub enum TestingError {
    /// `framework` named no known adapter.
    #[error("unknown test framework {name:?}; known: {known}")]
    UnknownFramework {
        /// What was asked for.
        name: String,
        /// The adapters there are, comma-separated.
        known: String,
    },
    /// No adapter recognized the project.
    #[error(
        "no test framework detected under {root} (looked for: {known}); pass `framework` to choose one"
    )]
    NotDetected {
        /// The project root searched.
        root: String,
        /// The adapters there are, comma-separated.
        known: String,
    },
}

/// Every built-in adapter (the registry is [`adapters::all`]).
pub fn adapters() -> Vec<Box<dyn TestAdapter>> {
    adapters::all()
}

/// The `framework` names `debug_test` takes, in registration order.
pub fn framework_names() -> Vec<&'static str> {
    adapters().iter().map(|a| a.name()).collect()
}

/// The names of the frameworks of `ecosystem`.
pub fn framework_names_of(ecosystem: Ecosystem) -> Vec<&'static str> {
    adapters()
        .iter()
        .filter(|a| a.ecosystem() == ecosystem)
        .map(|a| a.name())
        .collect()
}

/// The adapter for `target`: the one named by `framework`, else the
/// one detecting the project with the highest confidence.
pub fn choose(
    target: &TestTarget,
    framework: Option<&str>,
) -> Result<Box<dyn TestAdapter>, TestingError> {
    let all = adapters();
    let known = all.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ");
    if let Some(name) = framework {
        return all
            .into_iter()
            .find(|a| a.name() == name)
            .ok_or(TestingError::UnknownFramework {
                name: name.to_string(),
                known,
            });
    }
    all.into_iter()
        .map(|a| (a.detect(target), a))
        .filter(|(confidence, _)| *confidence > 0)
        .max_by_key(|(confidence, _)| *confidence)
        .map(|(_, a)| a)
        .ok_or(TestingError::NotDetected {
            root: target.root.display().to_string(),
            known,
        })
}

#[cfg(test)]
mod registry_tests {
    use super::*;

    /// What registering an adapter gives it: a unique name `choose` finds,
    /// a place in the README's `debug_test` row, and a title and ecosystem
    /// the hints use. Fails for a framework registered but not documented.
    #[test]
    fn every_registered_adapter_is_chosen_by_name_and_documented() {
        let readme = include_str!("../../../README.md");
        let row = readme
            .lines()
            .find(|l| l.starts_with("| `debug_test` |"))
            .expect("README has a debug_test row");
        let names = framework_names();
        for (i, name) in names.iter().enumerate() {
            assert!(!names[..i].contains(name), "{name} registered twice");
            let chosen = choose(&TestTarget::new("/nonexistent"), Some(name)).unwrap();
            assert_eq!(chosen.name(), *name);
            assert!(
                row.contains(chosen.title()),
                "README's debug_test row does not name {} ({name})",
                chosen.title()
            );
        }
        let unknown = choose(&TestTarget::new("/"), Some("nope")).err().unwrap();
        for name in &names {
            assert!(unknown.to_string().contains(name), "{unknown}");
        }
    }
}
