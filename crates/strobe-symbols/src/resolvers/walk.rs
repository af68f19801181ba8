//! Walking a project tree for the files a source-level resolver parses.

use std::path::{Path, PathBuf};

/// Most files one walk collects.
pub const MAX_FILES: usize = 20_000;

/// Most directories one walk reads: a project root set to `/` or a home
/// directory must not stall the session.
pub const MAX_DIRS: usize = 50_000;

/// Appends to `out` the files under `root` that `keep` accepts: in name
/// order, depth first (a directory's files before its subdirectories), not
/// following directory links, and not entering a subdirectory `enter`
/// refuses. At most [`MAX_FILES`] files from [`MAX_DIRS`] directories;
/// true when it stopped at a limit.
pub fn walk_files(
    root: &Path,
    out: &mut Vec<PathBuf>,
    enter: impl Fn(&Path) -> bool,
    keep: impl Fn(&Path) -> bool,
) -> bool {
    let mut stack = vec![root.to_path_buf()];
    let mut dirs = 0;
    while let Some(dir) = stack.pop() {
        dirs += 1;
        if dirs > MAX_DIRS {
            return true;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        let mut subdirs = Vec::new();
        for e in entries {
            let Ok(kind) = e.file_type() else { continue };
            let path = e.path();
            if kind.is_dir() {
                if enter(&path) {
                    subdirs.push(path);
                }
            } else if keep(&path) && path.is_file() {
                if out.len() >= MAX_FILES {
                    return true;
                }
                out.push(path);
            }
        }
        stack.extend(subdirs.into_iter().rev());
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_come_in_name_order_a_directorys_own_first() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for f in ["b/x.txt", "a.txt", "c/skip/y.txt", "c/z.txt", "d.bin"] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let mut out = Vec::new();
        let stopped = walk_files(
            root,
            &mut out,
            |d| !d.ends_with("skip"),
            |f| f.extension().is_some_and(|e| e == "txt"),
        );
        assert!(!stopped);
        let rel: Vec<String> = out
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect();
        assert_eq!(rel, ["a.txt", "b/x.txt", "c/z.txt"]);
    }
}
