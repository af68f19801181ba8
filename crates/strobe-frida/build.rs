//! Embeds every agent source file (`agent/src/**/*.ts`) into the crate, so the
//! `strobe` binary carries the agent and compiles it with Frida at run time.
//! And finds pyenv's CPython 3.12 and 3.13 headers, so that python_layout's
//! checks against them show as ignored where there are none: libtest cannot
//! mark a test ignored at run time, and one that returned early would pass.

#[path = "tests/support/pyenv.rs"]
mod pyenv;

use std::fs;
use std::path::{Path, PathBuf};

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "ts") {
            out.push(p);
        }
    }
}

fn main() {
    probe_pyenv_headers();
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let agent = manifest.join("../../agent");
    let src = agent.join("src");
    println!("cargo:rerun-if-changed={}", src.display());
    let mut files = Vec::new();
    collect(&src, &mut files);
    files.sort();
    let mut code = String::from(
        "/// Agent sources: (path relative to `agent/`, contents).\npub const AGENT_SOURCES: &[(&str, &str)] = &[\n",
    );
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let rel = f
            .strip_prefix(&agent)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        code.push_str(&format!(
            "    ({rel:?}, include_str!({:?})),\n",
            f.canonicalize().unwrap()
        ));
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("agent_sources.rs");
    fs::write(out, code).unwrap();
}

/// Sets `strobe_cpython_3XX_headers` for each of 3.12 and 3.13 whose headers
/// pyenv has. Reprobes when a header found goes, when `pyenv install` or
/// `uninstall` rewrites the shims (not the versions folder, which cargo
/// would scan whole: over 100,000 files), or when pyenv's root moves.
fn probe_pyenv_headers() {
    println!("cargo::rerun-if-changed=tests/support/pyenv.rs");
    println!("cargo::rerun-if-env-changed=PYENV_ROOT");
    println!("cargo::rerun-if-env-changed=HOME");
    for minor in ["3.12", "3.13"] {
        let cfg = format!("strobe_cpython_{}_headers", minor.replace('.', ""));
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        let includes = pyenv::includes(minor);
        for include in &includes {
            println!(
                "cargo::rerun-if-changed={}",
                include.join("Python.h").display()
            );
        }
        if !includes.is_empty() {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
    if let Some(shims) = pyenv::root()
        .map(|r| r.join("shims"))
        .filter(|s| s.is_dir())
    {
        println!("cargo::rerun-if-changed={}", shims.display());
    }
}
