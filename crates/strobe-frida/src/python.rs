//! Finding (and installing) the Python venv that holds the pinned `frida`,
//! and the pinned `py-spy` the stuck detector reads Python stacks with.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `frida` version Strobe is built and tested against (`FRIDA_VERSION`).
pub const PINNED_FRIDA_VERSION: &str = include_str!("../FRIDA_VERSION").trim_ascii();

/// The `py-spy` version `strobe setup` installs beside frida (the same as
/// `./dev`'s test tools): the stuck detector samples a hung Python test's
/// stacks with it, which a deadlocked interpreter cannot give itself
/// (`PY_SPY_VERSION`, which `./dev` reads too).
pub const PINNED_PY_SPY_VERSION: &str = include_str!("../PY_SPY_VERSION").trim_ascii();

/// What debug_ui's vision sidecar loads, pinned (`VISION_PACKAGES`, which
/// `./dev` reads too): onnxruntime's library from its wheel and the PP-OCR
/// models from rapidocr's. Installed without their dependencies: Strobe
/// runs neither package's Python code.
pub const PINNED_VISION_PACKAGES: &str = include_str!("../VISION_PACKAGES");

/// A venv that should hold `frida` (and `py-spy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FridaPython {
    /// The venv directory.
    pub venv: PathBuf,
}

impl FridaPython {
    /// Picks the venv: `$STROBE_VENV`, else the `frida.venv` setting, else
    /// `default` (`$STROBE_HOME/venv`).
    pub fn locate(setting: Option<&Path>, default: &Path) -> Self {
        let venv = std::env::var_os("STROBE_VENV")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| setting.map(Path::to_path_buf))
            .unwrap_or_else(|| default.to_path_buf());
        Self { venv }
    }

    /// The venv's interpreter.
    pub fn interpreter(&self) -> PathBuf {
        self.venv.join("bin").join("python")
    }

    /// Checks that the interpreter exists; the error says how to fix it.
    pub fn check(&self) -> Result<PathBuf, String> {
        let py = self.interpreter();
        if py.is_file() {
            Ok(py)
        } else {
            Err(format!(
                "Frida's Python package is not installed: no interpreter at {}. Run `strobe setup` \
                 (or `./dev setup` in a checkout) to create that venv with frida=={PINNED_FRIDA_VERSION}; \
                 by hand: `python3 -m venv {venv} && {venv}/bin/pip install frida=={PINNED_FRIDA_VERSION}`. \
                 To use another venv set STROBE_VENV or the `frida.venv` setting.",
                py.display(),
                venv = self.venv.display()
            ))
        }
    }

    /// True when the venv already imports the pinned frida.
    pub fn has_pinned_frida(&self) -> bool {
        let py = self.interpreter();
        Command::new(py)
            .args([
                "-c",
                "import frida,sys; sys.stdout.write(frida.__version__)",
            ])
            .output()
            .map(|o| {
                o.status.success()
                    && String::from_utf8_lossy(&o.stdout).trim() == PINNED_FRIDA_VERSION
            })
            .unwrap_or(false)
    }

    /// The venv's `py-spy`.
    pub fn py_spy(&self) -> PathBuf {
        self.venv.join("bin").join("py-spy")
    }

    /// True when the venv's py-spy is the pinned one.
    pub fn has_pinned_py_spy(&self) -> bool {
        Command::new(self.py_spy())
            .arg("--version")
            .output()
            .map(|o| {
                o.status.success()
                    && String::from_utf8_lossy(&o.stdout).trim()
                        == format!("py-spy {PINNED_PY_SPY_VERSION}")
            })
            .unwrap_or(false)
    }

    /// True when the venv holds the pinned vision packages.
    pub fn has_pinned_vision(&self) -> bool {
        let check = PINNED_VISION_PACKAGES
            .split_whitespace()
            .filter_map(|p| p.split_once("=="))
            .map(|(name, version)| format!("m.version({name:?}) == {version:?}"))
            .collect::<Vec<_>>()
            .join(" and ");
        Command::new(self.interpreter())
            .args([
                "-c",
                &format!("import importlib.metadata as m, sys; sys.exit(0 if {check} else 1)"),
            ])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    }

    /// Creates the venv with `python3` and installs the pinned frida,
    /// py-spy and vision packages into it, whichever are missing.
    pub fn install(&self, python3: &str) -> Result<(), String> {
        self.install_core(python3)?;
        if !self.has_pinned_vision() {
            run(Command::new(self.interpreter())
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "--no-deps",
                ])
                .args(PINNED_VISION_PACKAGES.split_whitespace()))
            .map_err(|e| {
                format!(
                    "{e}; debug_ui works without them, but vision (OCR, shapes) then cannot run"
                )
            })?;
        }
        Ok(())
    }

    fn install_core(&self, python3: &str) -> Result<(), String> {
        let mut wanted = Vec::new();
        if !self.has_pinned_frida() {
            wanted.push(format!("frida=={PINNED_FRIDA_VERSION}"));
        }
        if !self.has_pinned_py_spy() {
            wanted.push(format!("py-spy=={PINNED_PY_SPY_VERSION}"));
        }
        if wanted.is_empty() {
            return Ok(());
        }
        if let Some(parent) = self.venv.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        if !self.interpreter().is_file() {
            run(Command::new(python3).args(["-m", "venv"]).arg(&self.venv))?;
        }
        run(Command::new(self.interpreter())
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(&wanted))?;
        if !self.has_pinned_frida() {
            return Err(format!(
                "frida=={PINNED_FRIDA_VERSION} was installed but does not import in {}",
                self.venv.display()
            ));
        }
        if !self.has_pinned_py_spy() {
            return Err(format!(
                "py-spy=={PINNED_PY_SPY_VERSION} was installed but {} does not run; tracing works \
                 without it, but a hung Python test is then reported without its stacks",
                self.py_spy().display()
            ));
        }
        Ok(())
    }
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_interpreter_error_says_how_to_fix() {
        let p = FridaPython {
            venv: PathBuf::from("/nonexistent/venv"),
        };
        let e = p.check().unwrap_err();
        assert!(e.contains("strobe setup"));
        assert!(e.contains(PINNED_FRIDA_VERSION));
        assert!(e.contains("STROBE_VENV"));
    }
}
