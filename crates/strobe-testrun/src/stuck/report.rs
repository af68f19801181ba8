//! What a stuck verdict reports: the threads' frames, the test each stack
//! belongs to and its place in the project, where the threads wait, and
//! trace patterns worth trying.

use super::{ProcessStacks, REPORT_FRAMES, ThreadWait};
use crate::stacks::{self, StackSampler, ThreadStack};
use serde::Serialize;

/// Names the frames of a sample that is going into a report.
pub fn name_frames(samplers: &[Box<dyn StackSampler>], p: &mut ProcessStacks) {
    if let Ok(threads) = p.threads.as_mut() {
        stacks::name_frames(samplers, p.sampler, threads);
    }
}

/// A stuck process's threads as the report shows them.
pub fn report_threads(p: &ProcessStacks) -> serde_json::Value {
    match &p.threads {
        Ok(threads) => serde_json::Value::Array(
            threads
                .iter()
                .map(|t| {
                    let wait = p.waits.get(&t.tid);
                    serde_json::json!({
                        "tid": t.tid,
                        "name": t.name,
                        "state": wait.map(|w| w.state.as_str()),
                        "stack": t.frames.iter().take(REPORT_FRAMES).map(|f| f.display()).collect::<Vec<_>>(),
                    })
                })
                .collect(),
        ),
        Err(e) => {
            // No stacks: what each thread waits in still shows.
            let mut waits: Vec<(&u32, &ThreadWait)> = p.waits.iter().collect();
            waits.sort_by_key(|(tid, _)| **tid);
            serde_json::json!({
                "error": e,
                "waits": waits
                    .into_iter()
                    .map(|(tid, w)| serde_json::json!({"tid": tid, "state": w.state}))
                    .collect::<Vec<_>>(),
            })
        }
    }
}

/// The functions of the project's own code on the stuck threads, innermost
/// first: trace patterns for an instrumented rerun.
pub fn suggested_traces(p: &ProcessStacks, project_root: &std::path::Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let Ok(threads) = &p.threads else {
        return out;
    };
    for t in threads {
        for f in &t.frames {
            let (Some(function), Some(file)) = (&f.function, &f.file) else {
                continue;
            };
            let own = std::path::Path::new(file).starts_with(project_root)
                || (!file.starts_with('/') && !file.starts_with('<'));
            if own && !out.contains(function) && out.len() < 8 {
                out.push(function.clone());
            }
        }
    }
    out
}

/// A function name without the closures it ends in
/// (`a::b::{{closure}}`, `a::b::{closure#0}` → `a::b`).
pub(crate) fn without_closures(function: &str) -> &str {
    let mut f = function;
    while let Some((head, last)) = f.rsplit_once("::") {
        if !last.starts_with('{') {
            break;
        }
        f = head;
    }
    f
}

/// The tests running in a process of a harness that names each test's
/// thread after the test (Rust's libtest), read from its stacks: Linux
/// keeps 15 bytes of a thread's name (`bank::tests::op`), and the
/// thread's frames hold the test function itself
/// (`ledger::bank::tests::opposite_transfers_complete`, the crate first),
/// whose path past the crate starts with that name. Threads the test
/// spawned inherit its name or have their own (`transfer-a-b`): they name
/// no test of their own.
pub fn tests_in_stacks(p: &ProcessStacks) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let Ok(threads) = &p.threads else {
        return out;
    };
    for t in threads {
        if t.tid == p.pid || t.name.is_empty() {
            continue;
        }
        // Outermost first: the test function, not a helper whose name
        // shares the truncated prefix.
        let found = t.frames.iter().rev().find_map(|f| {
            let function = without_closures(f.function.as_deref()?);
            let (_crate, path) = function.split_once("::")?;
            let complete = t.name.len() < 15;
            let matches = if complete {
                path == t.name
            } else {
                path.starts_with(&t.name)
            };
            matches.then(|| path.to_string())
        });
        if let Some(name) = found
            && !out.contains(&name)
        {
            out.push(name);
        }
    }
    out.sort();
    out
}

/// A place in a stack: file (relative to the project when in it), line
/// and function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Place {
    /// The source file.
    pub file: String,
    /// The line.
    pub line: Option<u32>,
    /// The function.
    pub function: String,
}

impl Place {
    fn of(f: &crate::stacks::StackFrame, project_root: &std::path::Path) -> Option<Place> {
        let file = f.file.as_deref()?;
        let file = std::path::Path::new(file)
            .strip_prefix(project_root)
            .map_or_else(|_| file.to_string(), |p| p.display().to_string());
        Some(Place {
            file,
            line: f.line,
            function: f.function.clone()?,
        })
    }

    /// `file:line (function)`.
    pub fn display(&self) -> String {
        match self.line {
            Some(l) => format!("{}:{l} ({})", self.file, self.function),
            None => format!("{} ({})", self.file, self.function),
        }
    }
}

/// Whether a frame's file is the project's own code: under its root, or
/// a relative path (Rust's DWARF names the crate's files relative to it);
/// not the standard library, a toolchain or an installed package.
pub(crate) fn own_frame(file: &str, project_root: &std::path::Path) -> bool {
    let own = std::path::Path::new(file).starts_with(project_root)
        || (!file.starts_with('/') && !file.starts_with('<'));
    own && !file.contains("site-packages") && !file.contains("/.cargo/registry/")
}

/// The last part of a test's or function's name: `tests::x` → `x`,
/// `mod.Class.test_x` → `test_x`, `file.py::test_x[1-2]` → `test_x`.
pub(crate) fn short_name(name: &str) -> &str {
    let name = name.split('[').next().unwrap_or(name);
    let name = without_closures(name);
    name.rsplit(['.', ':', '/']).next().unwrap_or(name)
}

/// Where the stuck test `test` is in its stacks: the innermost frame of
/// the test's own function (the call it waits in, as `join()` in the
/// test), else the outermost frame in the project's code.
pub fn test_place(
    processes: &[ProcessStacks],
    test: &str,
    project_root: &std::path::Path,
) -> Option<Place> {
    let threads: Vec<&ThreadStack> = processes
        .iter()
        .filter_map(|p| p.threads.as_ref().ok())
        .flatten()
        .collect();
    let want = short_name(test);
    threads
        .iter()
        .flat_map(|t| t.frames.iter())
        .find(|f| f.function.as_deref().is_some_and(|n| short_name(n) == want))
        .and_then(|f| Place::of(f, project_root))
        .or_else(|| {
            threads.iter().find_map(|t| {
                t.frames
                    .iter()
                    .rev()
                    .filter(|f| {
                        f.file
                            .as_deref()
                            .is_some_and(|x| own_frame(x, project_root))
                    })
                    .find_map(|f| Place::of(f, project_root))
            })
        })
}

/// Where each stuck thread is in the project's own code: its innermost
/// frame there (the lock it waits for, the loop it spins in), one per
/// place.
pub fn wait_sites(processes: &[ProcessStacks], project_root: &std::path::Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in processes {
        let Ok(threads) = &p.threads else { continue };
        for t in threads {
            let site = t
                .frames
                .iter()
                .filter(|f| {
                    f.file
                        .as_deref()
                        .is_some_and(|x| own_frame(x, project_root))
                })
                .find_map(|f| Place::of(f, project_root));
            if let Some(site) = site.map(|s| s.display())
                && !out.contains(&site)
            {
                out.push(site);
            }
        }
    }
    out
}
