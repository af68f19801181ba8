//! The Python tracer reads CPython's internal structures at offsets written
//! in agent/src/tracers/python/cpython.ts (TinyCC has no Python headers).
//! This compiles `offsetof()` for each of them against the system's
//! CPython 3.11 headers (python3-dev, installed by the set-up) and compares,
//! so a wrong offset fails here instead of misreading a live interpreter.

use std::path::Path;
use std::process::Command;

/// `(key, offset, struct, field)` for each `key: N, // Struct.field` line
/// of the 3.11 table; a `// .field` line is of the struct above it.
fn table() -> Vec<(String, i64, String, String)> {
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../agent/src/tracers/python/cpython.ts"),
    )
    .unwrap();
    let body = src
        .split("const LAYOUT_3_11")
        .nth(1)
        .and_then(|s| s.split("};").next())
        .expect("the 3.11 layout table");
    let mut out = Vec::new();
    let mut last_struct = String::new();
    for line in body.lines() {
        let Some((entry, comment)) = line.split_once("//") else {
            continue;
        };
        let Some((key, value)) = entry.trim().trim_end_matches(',').split_once(':') else {
            continue;
        };
        let offset: i64 = value.trim().parse().unwrap();
        let comment = comment.trim();
        let Some((st, field)) = comment.split_once('.') else {
            continue; // e.g. _PyObject_ManagedDictPointer: checked below
        };
        if st.starts_with("sizeof(") {
            continue; // checked below
        }
        let st = if st.is_empty() {
            last_struct.clone()
        } else {
            st.to_string()
        };
        last_struct = st.clone();
        out.push((key.trim().to_string(), offset, st, field.to_string()));
    }
    out
}

#[test]
fn the_agents_cpython_311_offsets_match_the_headers() {
    let include = Path::new("/usr/include/python3.11");
    assert!(
        include.join("Python.h").is_file(),
        "the test set-up installs python3-dev (Debian's CPython 3.11 headers)"
    );
    let rows = table();
    assert!(rows.len() >= 20, "{rows:?}");
    let mut c = String::from(
        "#define Py_BUILD_CORE 1\n#include <Python.h>\n#include <internal/pycore_frame.h>\n\
         #include <internal/pycore_dict.h>\n#include <internal/pycore_object.h>\n#include <stddef.h>\n\
         #include <stdio.h>\nint main(void) {\n",
    );
    for (key, _, st, field) in &rows {
        c.push_str(&format!(
            "printf(\"{key} %zu\\n\", offsetof({st}, {field}));\n"
        ));
    }
    // The managed dict and its values sit before the object (3.11).
    c.push_str("PyObject o; printf(\"managedDict %td\\n\", (char *)_PyObject_ManagedDictPointer(&o) - (char *)&o);\n");
    c.push_str(
        "printf(\"managedValues %td\\n\", (char *)_PyObject_ValuesPointer(&o) - (char *)&o);\n",
    );
    c.push_str("printf(\"strAsciiData %zu\\n\", sizeof(PyASCIIObject));\n");
    // The state bits the fast path reads: compact (5) and ascii (6).
    c.push_str("PyASCIIObject a = {0}; a.state.compact = 1; a.state.ascii = 1;\n");
    c.push_str("printf(\"stateBits %u\\n\", (*(unsigned int *)&a.state >> 5) & 3);\n");
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
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let out = String::from_utf8(Command::new(&exe).output().unwrap().stdout).unwrap();
    let actual: std::collections::HashMap<&str, i64> = out
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k, v.parse().unwrap()))
        .collect();
    for (key, offset, st, field) in &rows {
        assert_eq!(actual[key.as_str()], *offset, "{key}: {st}.{field}");
    }
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../agent/src/tracers/python/cpython.ts"),
    )
    .unwrap();
    assert_eq!(
        actual["stateBits"], 3,
        "compact and ascii are state bits 5 and 6"
    );
    for key in ["managedDict", "managedValues", "strAsciiData"] {
        assert!(
            src.contains(&format!("{key}: {},", actual[key])),
            "{key} is {} in the headers",
            actual[key]
        );
    }
}
