//! The embedded agent and its compile cache.
//!
//! The cache key hashes every source file (path and contents) and the Frida
//! version, so an edited source or a new Frida always triggers a rebuild and
//! a stale compiled agent can never be picked up.

use sha2::{Digest, Sha256};
use std::io;
use std::path::{Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/agent_sources.rs"));

/// Where one version of the agent lives in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentBuild {
    /// `<cache>/<hash>`: holds `src/` (the sources) and `agent.js` once compiled.
    pub dir: PathBuf,
    /// The compiler's entry point (`src/index.ts`).
    pub entry: PathBuf,
    /// The compiled agent.
    pub js: PathBuf,
}

impl AgentBuild {
    /// True once the compiled agent exists.
    pub fn is_compiled(&self) -> bool {
        self.js.is_file()
    }
}

/// Content hash of the embedded sources for a given Frida version.
pub fn source_hash(frida_version: &str) -> String {
    let mut h = Sha256::new();
    h.update(frida_version.as_bytes());
    for (path, text) in AGENT_SOURCES {
        h.update((path.len() as u64).to_le_bytes());
        h.update(path.as_bytes());
        h.update((text.len() as u64).to_le_bytes());
        h.update(text.as_bytes());
    }
    h.finalize()
        .iter()
        .take(12)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Writes the sources into the cache (if not already there) and returns the
/// paths; compiling is the bridge's job ([`crate::Bridge::ensure_agent`]).
pub fn prepare(cache_root: &Path, frida_version: &str) -> io::Result<AgentBuild> {
    let dir = cache_root.join(source_hash(frida_version));
    for (rel, text) in AGENT_SOURCES {
        let path = dir.join(rel);
        if path.is_file() {
            continue;
        }
        std::fs::create_dir_all(path.parent().expect("source paths have a parent"))?;
        strobe_core::files::write_atomically(&path, text.as_bytes())?;
    }
    Ok(AgentBuild {
        entry: dir.join("src/index.ts"),
        js: dir.join("agent.js"),
        dir,
    })
}

/// Strobe's runtime inside a Node.js program, by file name: written next to
/// a session's probed sources and loaded by Node with `--require` (see
/// agent/node/preload.cjs; `bindings.cjs` reads modules' top-level
/// bindings for `debug_memory`, `sources.cjs` swaps in the probed copies,
/// `hooks.mjs` are its ES module loader hooks, `debugger.cjs` the worker
/// that sets breakpoints through the V8 inspector, `liveprobe.cjs` its
/// probing of scripts an attached program loaded before Strobe came).
pub const NODE_RUNTIME: [(&str, &str); 6] = [
    (
        "preload.cjs",
        include_str!("../../../agent/node/preload.cjs"),
    ),
    (
        "bindings.cjs",
        include_str!("../../../agent/node/bindings.cjs"),
    ),
    (
        "sources.cjs",
        include_str!("../../../agent/node/sources.cjs"),
    ),
    ("hooks.mjs", include_str!("../../../agent/node/hooks.mjs")),
    (
        "debugger.cjs",
        include_str!("../../../agent/node/debugger.cjs"),
    ),
    (
        "liveprobe.cjs",
        include_str!("../../../agent/node/liveprobe.cjs"),
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_embedded_and_hash_depends_on_version() {
        assert!(AGENT_SOURCES.iter().any(|(p, _)| *p == "src/index.ts"));
        assert_ne!(source_hash("1"), source_hash("2"));
        let tmp = tempfile::tempdir().unwrap();
        let b = prepare(tmp.path(), "x").unwrap();
        assert!(b.entry.is_file());
        assert!(!b.is_compiled());
    }
}
