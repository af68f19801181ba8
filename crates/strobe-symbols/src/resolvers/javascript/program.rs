//! What a Node command runs, where its sources are, and the module names
//! patterns use.

use super::super::walk::walk_files;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Is `path` a Node.js executable (`node`, `nodejs`, `node20`, …)?
pub fn is_node(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let rest = name
        .strip_prefix("nodejs")
        .or_else(|| name.strip_prefix("node"));
    rest.is_some_and(|r| r.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// Source extensions the resolver reads.
pub const EXTENSIONS: [&str; 8] = ["js", "mjs", "cjs", "jsx", "ts", "mts", "cts", "tsx"];

/// Is `path` a JavaScript or TypeScript source (not a `.d.ts` declaration)?
pub fn is_source(path: &Path) -> bool {
    let name = path.file_name().map_or(&[][..], |n| n.as_bytes());
    if name.ends_with(b".d.ts") || name.ends_with(b".d.mts") || name.ends_with(b".d.cts") {
        return false;
    }
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.contains(&e))
}

/// Directories never walked: installed packages (named by a pattern, they
/// are a later slice's work), version control, caches.
fn skipped_dir(name: &[u8]) -> bool {
    name == b"node_modules" || name.starts_with(b".")
}

/// Appends the sources under `root` (see [`walk_files`], skipping
/// [`skipped_dir`]s) to `out`; true when it stopped at a limit.
pub fn walk_sources(root: &Path, out: &mut Vec<PathBuf>) -> bool {
    walk_files(
        root,
        out,
        |dir| dir.file_name().is_none_or(|n| !skipped_dir(n.as_bytes())),
        is_source,
    )
}

/// The module name of source `file` under `project_root`: its path from
/// the root without the extension, dots for slashes, a leading `src/`
/// dropped, and an `index` file named by its directory (`src/auth.ts` →
/// `auth`, `src/api/users.ts` → `api.users`, `lib/api/index.js` →
/// `lib.api`). A file outside the root is named by its file stem.
pub fn module_name(file: &Path, project_root: &Path) -> String {
    let rel = file.strip_prefix(project_root).unwrap_or(file);
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if rel == file {
        parts = file
            .file_name()
            .map(|n| vec![n.to_string_lossy().into_owned()])
            .unwrap_or_default();
    }
    if let Some(last) = parts.last_mut() {
        let stem = Path::new(last.as_str())
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        *last = stem;
    }
    if parts.len() > 1 && parts[0] == "src" {
        parts.remove(0);
    }
    if parts.len() > 1 && parts.last().is_some_and(|p| p == "index") {
        parts.pop();
    }
    parts.join(".")
}

/// The script a `node` command line runs: the first argument that is not
/// an option (nor an option's value); `None` for `-e`/`-p` code, the REPL
/// and `--test` runs with no file.
pub fn script_of(args: &[String]) -> Option<&str> {
    /// Options that take the next argument as their value.
    const WITH_VALUE: [&str; 10] = [
        "-r",
        "--require",
        "--import",
        "--loader",
        "--experimental-loader",
        "--conditions",
        "-C",
        "--input-type",
        "--env-file",
        "--title",
    ];
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-e" | "--eval" | "-p" | "--print" => return None,
            "--" => return it.next().map(String::as_str),
            a if WITH_VALUE.contains(&a) => {
                it.next();
            }
            a if a.starts_with('-') => {}
            a => return Some(a),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_executables_are_recognised_by_name() {
        for n in [
            "/usr/bin/node",
            "/usr/bin/nodejs",
            "/opt/node20",
            "/x/node-22",
        ] {
            assert_eq!(is_node(Path::new(n)), !n.ends_with("node-22"), "{n}");
        }
        assert!(!is_node(Path::new("/usr/bin/python3")));
        assert!(!is_node(Path::new("/usr/bin/nodemon")));
    }

    #[test]
    fn modules_are_named_from_the_project_root() {
        let root = Path::new("/p");
        let m = |f: &str| module_name(Path::new(f), root);
        assert_eq!(m("/p/src/auth.ts"), "auth");
        assert_eq!(m("/p/src/api/users.ts"), "api.users");
        assert_eq!(m("/p/lib/api/index.js"), "lib.api");
        assert_eq!(m("/p/index.mjs"), "index");
        assert_eq!(m("/p/server.cjs"), "server");
        assert_eq!(m("/elsewhere/tool.js"), "tool");
    }

    #[test]
    fn the_script_is_the_first_argument_that_is_not_an_option() {
        let s = |a: &[&str]| {
            let v: Vec<String> = a.iter().map(|s| s.to_string()).collect();
            script_of(&v).map(str::to_string)
        };
        assert_eq!(s(&["app.js", "--port", "1"]).as_deref(), Some("app.js"));
        assert_eq!(
            s(&["--require", "x.js", "--inspect", "main.mjs"]).as_deref(),
            Some("main.mjs")
        );
        assert_eq!(s(&["-e", "1"]), None);
        assert_eq!(s(&[]), None);
        assert!(is_source(Path::new("a/b.tsx")));
        assert!(!is_source(Path::new("a/b.d.ts")));
        assert!(!is_source(Path::new("a/b.json")));
    }
}
