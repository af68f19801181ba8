//! Tidy checks of the embedded agent's module layout (agent/src): the tracer
//! extension point stays real. Code outside `tracers/` reaches a tracer only
//! through the registry (`tracers/index.ts`) and the interface
//! (`tracers/tracer.ts`); the shared native helpers (`native/`) import no
//! tracer; a tracer imports no other tracer; and every tracer under
//! `tracers/` is registered. Every relative import must name an embedded
//! source (the Frida compiler resolves `./x.js` to `./x.ts`, nested folders
//! included).

use std::collections::{BTreeMap, BTreeSet};
use strobe_frida::agent::AGENT_SOURCES;

/// Agent sources by path under `src/` (e.g. `tracers/native/index.ts`).
fn sources() -> BTreeMap<&'static str, &'static str> {
    AGENT_SOURCES
        .iter()
        .map(|(path, text)| {
            (
                path.strip_prefix("src/").expect("sources live under src/"),
                *text,
            )
        })
        .collect()
}

/// The module specifiers `text` imports: `import … from "x"` on one line,
/// or the `} from "x";` line that ends a multi-line import.
fn specifiers(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("import ") || l.starts_with("} from "))
        .filter_map(|l| l.split(" from \"").nth(1)?.split('"').next())
        .collect()
}

/// `spec` imported from `file`, as a path under `src/` with `.ts`.
fn resolve(file: &str, spec: &str) -> String {
    assert!(
        spec.starts_with("./") || spec.starts_with("../"),
        "{file} imports {spec:?}: the agent imports only its own modules, by relative path"
    );
    let stem = spec.strip_suffix(".js").unwrap_or_else(|| {
        panic!("{file} imports {spec:?}: module paths end in .js, as the Frida compiler expects")
    });
    let mut parts: Vec<&str> = file.split('/').collect();
    parts.pop();
    for seg in stem.split('/') {
        match seg {
            "." => {}
            ".." => {
                assert!(
                    parts.pop().is_some(),
                    "{file} imports {spec:?}, outside agent/src"
                );
            }
            s => parts.push(s),
        }
    }
    format!("{}.ts", parts.join("/"))
}

/// (file, imported file) for every import of every source.
fn imports() -> Vec<(&'static str, String)> {
    let sources = sources();
    let mut out = Vec::new();
    for (file, text) in &sources {
        for spec in specifiers(text) {
            let target = resolve(file, spec);
            assert!(
                sources.contains_key(target.as_str()),
                "{file} imports {spec:?}, which is no agent source ({target})"
            );
            out.push((*file, target));
        }
    }
    out
}

/// The tracer a source belongs to: `tracers/<name>.ts` or
/// `tracers/<name>/…`, apart from the registry, the interface, and the
/// record ring and its clock every tracer shares (`ring.ts`, `clock.ts`,
/// which import no tracer).
fn tracer_of(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("tracers/")?;
    if matches!(rest, "index.ts" | "tracer.ts" | "ring.ts" | "clock.ts") {
        return None;
    }
    Some(rest.split('/').next().unwrap().trim_end_matches(".ts"))
}

#[test]
fn only_the_registry_and_the_interface_reach_the_tracers() {
    let all = imports();
    assert!(
        all.iter()
            .any(|(f, t)| *f == "index.ts" && t == "tracers/index.ts"),
        "the agent's entry point goes through the tracer registry"
    );
    for (file, target) in &all {
        let from = tracer_of(file);
        let to = tracer_of(target);
        if file.starts_with("native/") {
            assert!(
                target.starts_with("native/"),
                "{file} (shared native helpers) imports {target}: helpers breakpoints and \
                 lifecycle use must not depend on tracers or on their users"
            );
        }
        match (from, to) {
            (None, Some(_)) if *file != "tracers/index.ts" => panic!(
                "{file} imports {target}: outside a tracer, use the registry \
                 (tracers/index.ts) and the interface (tracers/tracer.ts)"
            ),
            (Some(a), Some(b)) if a != b => {
                panic!("tracer {a} imports tracer {b} ({file} → {target})")
            }
            (Some(_), _) if target == "tracers/index.ts" || target == "index.ts" => {
                panic!(
                    "{file} imports {target}: a tracer must not depend on what registers or runs it"
                )
            }
            _ => {}
        }
    }
}

#[test]
fn every_tracer_is_registered() {
    let sources = sources();
    let tracers: BTreeSet<&str> = sources.keys().filter_map(|p| tracer_of(p)).collect();
    assert!(
        tracers.contains("native"),
        "the native tracer is under tracers/: {tracers:?}"
    );
    let registered: BTreeSet<String> = imports()
        .into_iter()
        .filter(|(file, _)| *file == "tracers/index.ts")
        .map(|(_, target)| target)
        .collect();
    for name in tracers {
        let module = [
            format!("tracers/{name}.ts"),
            format!("tracers/{name}/index.ts"),
        ];
        assert!(
            module.iter().any(|m| registered.contains(m)),
            "tracer {name} is not in the registry: tracers/index.ts must import {} and list it",
            module
                .iter()
                .find(|m| sources.contains_key(m.as_str()))
                .unwrap_or(&module[0])
        );
    }
}
