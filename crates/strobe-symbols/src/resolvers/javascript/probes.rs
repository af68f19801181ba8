//! The probed copy of a Node.js program: each JavaScript file Node may
//! load, with probes written in (`instrument.rs`), in one directory with a
//! manifest the program's runtime reads (agent/node/preload.cjs). Probe
//! indices are the session's: one numbering over every file, so a function
//! keeps its index for the whole session whatever process loads it.
//!
//! `manifest.json`: `{"version": 1, "esm": <an ES module was probed>,
//! "files": {"<absolute path>": {"probed":
//! "<n>.js", "len": <UTF-16 length>, "hash": <FNV-1a of the UTF-16 units>,
//! "first": <probe index of its first function>, "names": [[parameter
//! names] per function], "module": <an ES module>}}}`. The runtime uses a probed copy only when the
//! text Node loads has that length and hash: a file edited since is loaded
//! as it is.
//!
//! Compiled JavaScript with a source map (TypeScript through `tsc`) is
//! probed as Node runs it, and its functions are also found by their
//! source's file, name and line (through the map), which is how the
//! resolver lists them: a pattern on a TypeScript name traces the
//! compiled function.

use super::instrument::{MAX_PROBES, probe_text};
use super::parse::parse_source;
use super::program::{module_name, walk_sources};
use crate::source_maps::SourceMaps;
use rayon::prelude::*;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Extensions Node loads as JavaScript (TypeScript and JSX need a loader
/// that compiles them first; their compiled output is probed instead).
const LOADABLE: [&str; 3] = ["js", "mjs", "cjs"];
/// TypeScript sources, probed as they are for a runner that reads and
/// compiles them itself (Vitest's Vite: the probes are JavaScript, which
/// its compiler keeps).
const TYPESCRIPT: [&str; 4] = ["ts", "mts", "cts", "tsx"];

/// The probed files of a program, and which function has which probe.
#[derive(Debug, Default)]
pub struct ProbedProgram {
    /// The directory the copies and the manifest are in.
    pub dir: PathBuf,
    /// The project root (module names of its files are from it).
    root: PathBuf,
    /// Probe index by (file, qualname, line).
    index: HashMap<(String, String, u32), u32>,
    /// The files probed (absolute paths), and the sources (TypeScript) of
    /// probed compiled files.
    probed_files: HashSet<String>,
    /// A compiled file's functions by their source's (file, qualname):
    /// (line in the source, probe index).
    by_source: HashMap<(String, String), Vec<(u32, u32)>>,
    /// What was left unprobed and why.
    pub warnings: Vec<String>,
    /// The manifest's `files`.
    manifest: serde_json::Map<String, Value>,
    /// The next probe index, and the next probed copy's number.
    next: u32,
    copies: usize,
    /// An ES module was probed.
    esm: bool,
    /// The probes from this index on are in files probed after the program
    /// started (`add_package` while it runs).
    late_from: u32,
    /// The packages (`node_modules/<name>`) files were probed in.
    packages: HashSet<PathBuf>,
    /// TypeScript sources are probed too ([`TYPESCRIPT`]).
    typescript: bool,
}

/// The package directory (`…/node_modules/<name>`, or
/// `…/node_modules/@scope/<name>`) a file is in, if any.
pub fn package_of(file: &Path) -> Option<PathBuf> {
    let parts: Vec<_> = file.components().collect();
    let at = parts
        .iter()
        .rposition(|c| c.as_os_str() == "node_modules")?;
    let first = parts.get(at + 1)?;
    let take = if first.as_os_str().to_string_lossy().starts_with('@') {
        at + 3
    } else {
        at + 2
    };
    (take < parts.len()).then(|| parts[..take].iter().collect())
}

/// The FNV-1a hash of `text`'s UTF-16 units (what the runtime computes of
/// the text Node hands it).
pub fn utf16_fnv(text: &str) -> u32 {
    text.encode_utf16().fold(0x811c_9dc5u32, |h, u| {
        (h ^ u32::from(u)).wrapping_mul(0x0100_0193)
    })
}

impl ProbedProgram {
    /// Probes every loadable source under `root` (never `node_modules`, nor
    /// anything under `exclude`: Strobe's own home, where earlier sessions'
    /// probed copies are), `script` wherever it is, and the packages in
    /// `packages` (directories under `node_modules` a pattern named), into
    /// `dir` (created; emptied first). Files are read and probed in
    /// parallel. With `typescript`, TypeScript sources are probed as they
    /// are, for a runner that compiles them itself (Vitest).
    pub fn write(
        dir: &Path,
        root: &Path,
        script: Option<&Path>,
        exclude: &Path,
        packages: &[PathBuf],
        typescript: bool,
    ) -> std::io::Result<ProbedProgram> {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let exclude = exclude
            .canonicalize()
            .unwrap_or_else(|_| exclude.to_path_buf());
        let mut sources = Vec::new();
        walk_sources(&root, &mut sources);
        if let Some(s) = script.and_then(|s| s.canonicalize().ok())
            && !sources.contains(&s)
        {
            sources.push(s);
        }
        sources.retain(|f| !f.starts_with(&exclude));
        if dir.exists() {
            std::fs::remove_dir_all(dir)?;
        }
        std::fs::create_dir_all(dir)?;
        let mut out = ProbedProgram {
            dir: dir.to_path_buf(),
            root: root.clone(),
            typescript,
            ..ProbedProgram::default()
        };
        out.add_files(sources)?;
        for p in packages {
            out.add_package(p)?;
        }
        out.late_from = out.next;
        Ok(out)
    }

    /// Probes the loadable sources of a package (`node_modules/<name>`,
    /// not its own `node_modules`) not probed yet, and rewrites the
    /// manifest. Node loads the probed copy of a file it has not loaded
    /// yet; a file it already loaded runs as it was until the program
    /// restarts. Returns how many files were added.
    pub fn add_package(&mut self, package: &Path) -> std::io::Result<usize> {
        let package = package
            .canonicalize()
            .unwrap_or_else(|_| package.to_path_buf());
        let mut files = Vec::new();
        walk_sources(&package, &mut files);
        files.retain(|f| !self.probed_files.contains(f.to_string_lossy().as_ref()));
        self.packages.insert(package);
        self.add_files(files)
    }

    /// Has the package at `dir` been probed?
    pub fn has_package(&self, dir: &Path) -> bool {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        self.packages.contains(&dir)
    }

    /// Probes `sources` (the loadable ones) and rewrites the manifest.
    fn add_files(&mut self, mut sources: Vec<PathBuf>) -> std::io::Result<usize> {
        let typescript = self.typescript;
        sources.retain(|f| {
            f.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| LOADABLE.contains(&e) || (typescript && TYPESCRIPT.contains(&e)))
        });
        sources.sort();
        // Parsing is the cost, done in parallel; numbering needs each
        // file's function count, so it goes in order between the parse and
        // the (parallel) writing of the probes.
        let parsed: Vec<_> = sources
            .par_iter()
            .map(|file| {
                std::fs::read_to_string(file).map(|text| {
                    let parsed = parse_source(file, &text);
                    (text, parsed)
                })
            })
            .collect();
        let mut numbered = Vec::new();
        for (file, result) in sources.iter().zip(parsed) {
            let (text, parsed) = match result {
                Ok(r) => r,
                Err(e) => {
                    self.warnings.push(format!("{}: {e}", file.display()));
                    continue;
                }
            };
            if let Some((error, _)) = &parsed.syntax_error {
                self.warnings.push(format!(
                    "{} is not traced: syntax error ({error})",
                    file.display()
                ));
                continue;
            }
            if parsed.functions.is_empty()
                && parsed.catches.is_empty()
                && parsed.bindings.is_empty()
            {
                continue;
            }
            if self.next as usize + parsed.functions.len() > MAX_PROBES as usize {
                self.warnings.push(format!(
                    "{} is not traced: more than {MAX_PROBES} functions probed in one session",
                    file.display()
                ));
                continue;
            }
            let first = self.next;
            self.next += parsed.functions.len() as u32;
            let module = parsed.is_module || file.extension().is_some_and(|e| e == "mjs");
            self.esm |= module;
            numbered.push((self.copies, file, text, parsed, first, module));
            self.copies += 1;
        }
        let written: Vec<_> = numbered
            .into_par_iter()
            .map(|(n, file, text, parsed, first, module)| {
                let compiled = parsed.has_source_map;
                let module_name = match package_of(file) {
                    Some(p) => module_name(file, p.parent().unwrap_or(&p)),
                    None => module_name(file, &self.root),
                };
                let done = probe_text(parsed, &text, first, Some(&module_name));
                (n, file, text, done, first, compiled, module)
            })
            .collect();
        let added = written.len();
        let mut maps = SourceMaps::default();
        for (n, file, text, done, first, compiled, module) in written {
            let probed = format!("{n}.js");
            std::fs::write(self.dir.join(&probed), &done.text)?;
            let path = file.to_string_lossy().into_owned();
            let names: Vec<Value> = done.functions.iter().map(|f| json!(f.parameters)).collect();
            self.manifest.insert(
                path.clone(),
                json!({
                    "probed": probed,
                    "len": text.encode_utf16().count(),
                    "hash": utf16_fnv(&text),
                    "first": first,
                    "names": names,
                    "module": module,
                }),
            );
            for (i, f) in done.functions.iter().enumerate() {
                let probe = first + i as u32;
                self.index
                    .insert((path.clone(), f.qualname.clone(), f.line), probe);
                // Compiled code: its functions under their source's names,
                // which are the ones patterns match.
                if let Some(o) = compiled
                    .then(|| maps.original(file, f.line, f.column))
                    .flatten()
                {
                    let source = o.file.to_string_lossy().into_owned();
                    self.by_source
                        .entry((source.clone(), f.qualname.clone()))
                        .or_default()
                        .push((o.line, probe));
                    self.probed_files.insert(source);
                }
            }
            self.probed_files.insert(path);
            if let Some(package) = package_of(file) {
                self.packages.insert(package);
            }
        }
        self.save_manifest()?;
        Ok(added)
    }

    /// Writes the manifest whole, then renames it into place: the runtime
    /// (which reads it again when it meets an unknown package file) never
    /// sees half of it.
    fn save_manifest(&self) -> std::io::Result<()> {
        // Node's loader hooks cost a thread and ~30 ms to start: the
        // runtime registers them only when an ES module was probed.
        let manifest = json!({"version": 1, "esm": self.esm, "files": self.manifest});
        let tmp = self.dir.join("manifest.json.tmp");
        std::fs::write(&tmp, manifest.to_string())?;
        std::fs::rename(tmp, self.dir.join("manifest.json"))
    }

    /// The probe of the function `qualname` at `line` of `file`, if that
    /// file was probed.
    pub fn probe_of(&self, file: &str, qualname: &str, line: u32) -> Option<u32> {
        if let Some(p) = self
            .index
            .get(&(file.to_string(), qualname.to_string(), line))
        {
            return Some(*p);
        }
        // A source compiled to a probed file: the compiled function of that
        // name the map puts nearest the line (a map places a function at
        // its name, or the line a decorator or modifier starts).
        let candidates = self
            .by_source
            .get(&(file.to_string(), qualname.to_string()))?;
        candidates
            .iter()
            .min_by_key(|(l, _)| l.abs_diff(line))
            .map(|(_, p)| *p)
    }

    /// Is `probe` in a file probed after the program started (which Node
    /// may have loaded before it was probed)?
    pub fn probed_late(&self, probe: u32) -> bool {
        probe >= self.late_from
    }

    /// Was `file` probed?
    pub fn has_file(&self, file: &str) -> bool {
        self.probed_files.contains(file)
    }

    /// How many files were probed.
    pub fn file_count(&self) -> usize {
        self.probed_files.len()
    }
}
