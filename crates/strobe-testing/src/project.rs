//! What a project is written in and built with, for answers that find no
//! tests: the agent gets told how to add a first one.

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
    /// How to add a first test that Strobe can run.
    pub hint: &'static str,
}

/// Marker file → (language, build system, hint), most specific first.
const MARKERS: [(&str, &str, &str, &str); 9] = [
    (
        "Cargo.toml",
        "Rust",
        "cargo",
        "add `#[cfg(test)] mod tests { #[test] fn works() { … } }` to a source file, or a file under `tests/`; then debug_test runs `cargo test`",
    ),
    (
        "pyproject.toml",
        "Python",
        "pip",
        "add `tests/test_*.py` files: plain `def test_…(): assert …` functions run with pytest (debug_test runs `python3 -m pytest` when pytest is configured or imported), `unittest.TestCase` classes with `python3 -m unittest`",
    ),
    (
        "setup.py",
        "Python",
        "pip",
        "add `tests/test_*.py` files: plain `def test_…(): assert …` functions run with pytest (debug_test runs `python3 -m pytest` when pytest is configured or imported), `unittest.TestCase` classes with `python3 -m unittest`",
    ),
    (
        "requirements.txt",
        "Python",
        "pip",
        "add `tests/test_*.py` files: plain `def test_…(): assert …` functions run with pytest (debug_test runs `python3 -m pytest` when pytest is configured or imported), `unittest.TestCase` classes with `python3 -m unittest`",
    ),
    (
        "package.json",
        "JavaScript/TypeScript",
        "npm",
        "add a test runner to package.json (vitest, jest or mocha; or use `bun test` / `deno test`) and a `*.test.js` file; debug_test detects the runner from package.json, its config file or the lockfile",
    ),
    (
        "go.mod",
        "Go",
        "go",
        "add `*_test.go` files with `func TestX(t *testing.T)`; debug_test runs `go test -json ./...`",
    ),
    (
        "CMakeLists.txt",
        "C/C++",
        "cmake",
        "add a Google Test executable (`find_package(GTest)`, link `GTest::gtest_main`): debug_test builds it with CMake and runs it; or pass a Catch2 test binary as `command` (framework catch2), or any test command with framework \"generic\"",
    ),
    (
        "meson.build",
        "C/C++",
        "meson",
        "build a Google Test or Catch2 test binary and pass it as `command` (framework gtest or catch2), or run any test command with framework \"generic\" and `command`; a plain program can be run with debug_launch",
    ),
    (
        "Makefile",
        "C/C++",
        "make",
        "build a Google Test or Catch2 test binary and pass it as `command` (framework gtest or catch2), or run any test command with framework \"generic\" and `command`; a plain program can be run with debug_launch",
    ),
];

/// Looks at `root`'s marker files.
pub fn describe(root: &Path) -> ProjectInfo {
    for (file, language, build_system, hint) in MARKERS {
        if root.join(file).exists() {
            return ProjectInfo {
                language,
                build_system,
                hint,
            };
        }
    }
    ProjectInfo {
        language: "unknown",
        build_system: "none found",
        hint: "debug_test supports cargo (Rust) and Python unittest so far: pass `framework` if the project uses one of them",
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
}
