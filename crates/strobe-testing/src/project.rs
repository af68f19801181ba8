//! What a project is written in and built with, for answers that find no
//! tests: the agent gets told how to add a first one.

use crate::adapter::Ecosystem;
use serde::Serialize;
use std::path::Path;

/// A project's language and build system, as far as its files tell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectInfo {
    /// "Rust", "Python", "JavaScript/TypeScript", "Go", "C/C++" or "unknown".
    pub language: &'static str,
    /// "cargo", "npm", "pip", "go", "cmake", "meson", "make" or "none found".
    pub build_system: &'static str,
    /// How to add a first test that Strobe can run, and the frameworks
    /// `debug_test` knows for the language (from the adapter registry).
    pub hint: String,
}

/// Marker file → (language, build system, hint, the adapters' ecosystem),
/// most specific first.
const MARKERS: [(&str, &str, &str, &str, Ecosystem); 9] = [
    (
        "Cargo.toml",
        "Rust",
        "cargo",
        "add `#[cfg(test)] mod tests { #[test] fn works() { … } }` to a source file, or a file under `tests/`; then debug_test runs `cargo test`",
        Ecosystem::Rust,
    ),
    (
        "pyproject.toml",
        "Python",
        "pip",
        "add `tests/test_*.py` files: plain `def test_…(): assert …` functions run with pytest (debug_test runs `python3 -m pytest` when pytest is configured or imported), `unittest.TestCase` classes with `python3 -m unittest`",
        Ecosystem::Python,
    ),
    (
        "setup.py",
        "Python",
        "pip",
        "add `tests/test_*.py` files: plain `def test_…(): assert …` functions run with pytest (debug_test runs `python3 -m pytest` when pytest is configured or imported), `unittest.TestCase` classes with `python3 -m unittest`",
        Ecosystem::Python,
    ),
    (
        "requirements.txt",
        "Python",
        "pip",
        "add `tests/test_*.py` files: plain `def test_…(): assert …` functions run with pytest (debug_test runs `python3 -m pytest` when pytest is configured or imported), `unittest.TestCase` classes with `python3 -m unittest`",
        Ecosystem::Python,
    ),
    (
        "package.json",
        "JavaScript/TypeScript",
        "npm",
        "add a test runner to package.json (vitest, jest or mocha; or use `bun test` / `deno test`) and a `*.test.js` file; debug_test detects the runner from package.json, its config file or the lockfile",
        Ecosystem::JavaScript,
    ),
    (
        "go.mod",
        "Go",
        "go",
        "add `*_test.go` files with `func TestX(t *testing.T)`; debug_test runs `go test -json ./...`",
        Ecosystem::Go,
    ),
    (
        "CMakeLists.txt",
        "C/C++",
        "cmake",
        "add a Google Test executable (`find_package(GTest)`, link `GTest::gtest_main`): debug_test builds it with CMake and runs it; or pass a Catch2 test binary as `command` (framework catch2), or any test command with framework \"generic\"",
        Ecosystem::Cpp,
    ),
    (
        "meson.build",
        "C/C++",
        "meson",
        "build a Google Test or Catch2 test binary and pass it as `command` (framework gtest or catch2), or run any test command with framework \"generic\" and `command`; a plain program can be run with debug_launch",
        Ecosystem::Cpp,
    ),
    (
        "Makefile",
        "C/C++",
        "make",
        "build a Google Test or Catch2 test binary and pass it as `command` (framework gtest or catch2), or run any test command with framework \"generic\" and `command`; a plain program can be run with debug_launch",
        Ecosystem::Cpp,
    ),
];

/// Looks at `root`'s marker files.
pub fn describe(root: &Path) -> ProjectInfo {
    for (file, language, build_system, hint, ecosystem) in MARKERS {
        if root.join(file).exists() {
            let mut known = crate::framework_names_of(ecosystem);
            known.extend(crate::framework_names_of(Ecosystem::Any));
            return ProjectInfo {
                language,
                build_system,
                hint: format!(
                    "{hint} (debug_test's frameworks for {language}: {})",
                    known.join(", ")
                ),
            };
        }
    }
    ProjectInfo {
        language: "unknown",
        build_system: "none found",
        hint: format!(
            "no marker file (Cargo.toml, package.json, pyproject.toml, go.mod, CMakeLists.txt, …) found: pass `framework` (one of {}) and, for generic, `command`",
            crate::framework_names().join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_files_name_language_and_build() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(describe(dir.path()).language, "unknown");
        std::fs::write(dir.path().join("Makefile"), "all:\n").unwrap();
        let info = describe(dir.path());
        assert_eq!((info.language, info.build_system), ("C/C++", "make"));
        std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
        assert_eq!(
            describe(dir.path()).build_system,
            "cargo",
            "most specific first"
        );
    }

    #[test]
    fn hints_name_the_registered_frameworks_of_the_language() {
        let dir = tempfile::tempdir().unwrap();
        let unknown = describe(dir.path()).hint;
        for name in crate::framework_names() {
            assert!(unknown.contains(name), "{name} missing from {unknown}");
        }
        std::fs::write(dir.path().join("setup.py"), "").unwrap();
        let python = describe(dir.path()).hint;
        assert!(
            python.ends_with(
                "(debug_test's frameworks for Python: unittest, pytest, scenario, generic)"
            ),
            "{python}"
        );
    }
}
