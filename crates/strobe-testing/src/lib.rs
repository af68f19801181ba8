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

pub use adapter::{OutputParser, Stream, TestAdapter, TestCommand, TestLevel, TestTarget};
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

/// Every built-in adapter.
pub fn adapters() -> Vec<Box<dyn TestAdapter>> {
    vec![
        Box::new(adapters::cargo::CargoAdapter),
        Box::new(adapters::gtest::GtestAdapter),
        Box::new(adapters::catch2::Catch2Adapter),
        Box::new(adapters::unittest::UnittestAdapter),
        Box::new(adapters::pytest::PytestAdapter),
        Box::new(adapters::go::GoAdapter),
        Box::new(adapters::jest::JestAdapter),
        Box::new(adapters::vitest::VitestAdapter),
        Box::new(adapters::mocha::MochaAdapter),
        Box::new(adapters::bun::BunAdapter),
        Box::new(adapters::deno::DenoAdapter),
        Box::new(adapters::nextest::NextestAdapter),
        Box::new(adapters::generic::GenericAdapter),
    ]
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
