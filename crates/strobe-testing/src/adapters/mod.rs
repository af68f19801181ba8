//! The built-in adapters, one file each, and the registry listing them.
//!
//! Adding a framework is a new file here plus one line in [`registered!`]'s
//! call below: that line declares the module and registers the adapter, and
//! every list of framework names (the `framework` enum of `debug_test`'s
//! schema, the hints for projects without tests, the JavaScript runners a
//! `test` script is matched against, the README check) is derived from
//! [`all`].

use crate::adapter::TestAdapter;

/// Declares each adapter's module and lists the adapters in [`all`], in
/// the order detection ties are broken (earlier wins).
macro_rules! registered {
    ($($module:ident :: $adapter:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// Every built-in adapter, in registration order.
        pub fn all() -> Vec<Box<dyn TestAdapter>> {
            vec![$(Box::new($module::$adapter)),*]
        }
    };
}

registered! {
    cargo::CargoAdapter,
    gtest::GtestAdapter,
    catch2::Catch2Adapter,
    unittest::UnittestAdapter,
    pytest::PytestAdapter,
    go::GoAdapter,
    jest::JestAdapter,
    vitest::VitestAdapter,
    mocha::MochaAdapter,
    bun::BunAdapter,
    deno::DenoAdapter,
    nextest::NextestAdapter,
    scenario::ScenarioAdapter,
    generic::GenericAdapter,
}

/// The JavaScript runners' shared parser and detection (not an adapter).
pub mod js;
