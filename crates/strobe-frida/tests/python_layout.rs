//! The Python tracer reads CPython's internal structures at offsets written
//! in agent/src/tracers/python/cpython.ts (TinyCC has no Python headers).
//! This compiles `offsetof()` for each of them against the version's
//! headers and compares, so a wrong offset fails here instead of misreading
//! a live interpreter: 3.11's from python3-dev (installed by the set-up),
//! 3.12's and 3.13's from this machine's pyenv (no registry here ships them
//! for Debian 12), ignored, saying so, where the build found none.

#[path = "support/pyenv.rs"]
mod pyenv;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

fn cpython_ts() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../agent/src/tracers/python/cpython.ts"),
    )
    .unwrap()
}

/// The body of version `minor`'s table (`const LAYOUT_3_12 = { … };`).
fn block<'a>(src: &'a str, minor: &str) -> &'a str {
    src.split(&format!("const LAYOUT_{}", minor.replace('.', "_")))
        .nth(1)
        .and_then(|s| s.split("};").next())
        .unwrap_or_else(|| panic!("the {minor} layout table"))
}

/// `key -> (offset, struct, field)` for each `key: N, // Struct.field` line
/// of version `minor`'s table (a `// .field` line is of the struct above
/// it; `...LAYOUT_3_X` takes that table's rows first). Rows of -1 (a field
/// the version lacks) and rows checked by [`extras`] are left out.
fn table(src: &str, minor: &str) -> HashMap<String, (i64, String, String)> {
    let body = block(src, minor);
    let mut out = HashMap::new();
    let mut last_struct = String::new();
    for line in body.lines() {
        if let Some(base) = line.trim().strip_prefix("...LAYOUT_") {
            out = table(src, &base.trim_end_matches(',').replace('_', "."));
            continue;
        }
        let Some((entry, comment)) = line.split_once("//") else {
            continue;
        };
        let Some((key, value)) = entry.trim().trim_end_matches(',').split_once(':') else {
            continue;
        };
        let key = key.trim().to_string();
        let offset: i64 = value.trim().parse().unwrap();
        out.remove(&key);
        let comment = comment.trim();
        if offset == -1 {
            continue;
        }
        let Some((st, field)) = comment.split_once('.') else {
            continue; // e.g. _PyObject_ManagedDictPointer: see extras()
        };
        if st.starts_with("sizeof(") {
            continue; // see extras()
        }
        let st = if st.is_empty() {
            last_struct.clone()
        } else {
            st.to_string()
        };
        last_struct = st.clone();
        let field = field.split_whitespace().next().unwrap().to_string();
        out.insert(key, (offset, st, field));
    }
    out
}

/// C printing what the table cannot say as `struct.field`: where a managed
/// dict (and, in 3.11, its values) sits before the object, the size of an
/// ASCII string's header, and the string state bits the fast path reads.
fn extras(minor: &str) -> String {
    let dict = match minor {
        "3.11" => {
            "printf(\"managedDict %td\\n\", (char *)_PyObject_ManagedDictPointer(&o) - (char *)&o);\n\
             printf(\"managedValues %td\\n\", (char *)_PyObject_ValuesPointer(&o) - (char *)&o);\n"
        }
        "3.12" => {
            "printf(\"managedDict %td\\n\", (char *)_PyObject_DictOrValuesPointer(&o) - (char *)&o);\n"
        }
        _ => {
            "printf(\"managedDict %td\\n\", (char *)_PyObject_ManagedDictPointer(&o) - (char *)&o);\n"
        }
    };
    format!(
        "PyObject o; {dict}printf(\"strAsciiData %zu\\n\", sizeof(PyASCIIObject));\n\
         PyASCIIObject a = {{0}}; a.state.compact = 1; a.state.ascii = 1;\n\
         printf(\"stateBits %u\\n\", (*(unsigned int *)&a.state >> 5) & 3);\n"
    )
}

/// Compiles and runs the offset printer against `include`; its output by key.
fn measure(
    include: &Path,
    rows: &HashMap<String, (i64, String, String)>,
    minor: &str,
) -> HashMap<String, i64> {
    let mut c = String::from(
        "#define Py_BUILD_CORE 1\n#include <Python.h>\n#include <internal/pycore_frame.h>\n\
         #include <internal/pycore_dict.h>\n#include <internal/pycore_object.h>\n#include <stddef.h>\n\
         #include <stdio.h>\nint main(void) {\n",
    );
    for (key, (_, st, field)) in rows {
        c.push_str(&format!(
            "printf(\"{key} %zu\\n\", offsetof({st}, {field}));\n"
        ));
    }
    c.push_str(&extras(minor));
    c.push_str("return 0; }\n");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("off.c"), c).unwrap();
    let exe = dir.path().join("off");
    let cc = Command::new("gcc")
        .args(["-w", "-DNDEBUG"])
        .arg("-I")
        .arg(include)
        .arg(dir.path().join("off.c"))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "{minor}: {}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let out = String::from_utf8(Command::new(&exe).output().unwrap().stdout).unwrap();
    out.lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
        .collect()
}

/// Every offset of version `minor`'s table against the headers in `include`.
fn check(minor: &str, include: &Path) {
    let src = cpython_ts();
    let rows = table(&src, minor);
    assert!(rows.len() >= 20, "{minor}: {rows:?}");
    let actual = measure(include, &rows, minor);
    for (key, (offset, st, field)) in &rows {
        assert_eq!(actual[key], *offset, "{minor} {key}: {st}.{field}");
    }
    assert_eq!(
        actual["stateBits"], 3,
        "compact and ascii are state bits 5 and 6"
    );
    let text = table_text(&src, minor);
    for key in ["managedDict", "managedValues", "strAsciiData"] {
        if let Some(value) = actual.get(key) {
            assert!(
                text.contains(&format!("{key}: {value},")),
                "{minor}: {key} is {value} in the headers"
            );
        }
    }
}

/// The text of `minor`'s table and of the table it spreads, if any.
fn table_text(src: &str, minor: &str) -> String {
    let body = block(src, minor).to_string();
    match body
        .lines()
        .find_map(|l| l.trim().strip_prefix("...LAYOUT_"))
    {
        Some(base) => table_text(src, &base.trim_end_matches(',').replace('_', ".")) + &body,
        None => body,
    }
}

#[test]
fn the_agents_cpython_311_offsets_match_the_headers() {
    let include = Path::new("/usr/include/python3.11");
    assert!(
        include.join("Python.h").is_file(),
        "the test set-up installs python3-dev (Debian's CPython 3.11 headers)"
    );
    check("3.11", include);
}

#[test]
#[cfg_attr(
    not(strobe_cpython_312_headers),
    ignore = "needs CPython 3.12's headers (pyenv install 3.12): not found when the tests were built"
)]
fn the_agents_cpython_312_offsets_match_the_headers() {
    check_pyenv("3.12");
}

#[test]
#[cfg_attr(
    not(strobe_cpython_313_headers),
    ignore = "needs CPython 3.13's headers (pyenv install 3.13): not found when the tests were built"
)]
fn the_agents_cpython_313_offsets_match_the_headers() {
    check_pyenv("3.13");
}

/// [`check`] against each of pyenv's `minor` releases, which the build
/// found (else the test is ignored): none now is a failure.
fn check_pyenv(minor: &str) {
    let includes = pyenv::includes(minor);
    assert!(
        !includes.is_empty(),
        "no CPython {minor} headers in pyenv, though the build found some: `pyenv install {minor}`"
    );
    for include in includes {
        check(minor, &include);
    }
}
