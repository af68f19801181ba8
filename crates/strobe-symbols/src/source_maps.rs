//! Generated JavaScript back to its sources (TypeScript, a bundle's
//! modules) through the source map its last `//# sourceMappingURL=` comment
//! names: a file beside it or an inline `data:` URL. Maps are read once per
//! file and kept.

use sourcemap::DecodedMap;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where a position of generated code came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Original {
    /// The source file (absolute when the map names it relative to itself).
    pub file: PathBuf,
    /// 1-based line in it.
    pub line: u32,
    /// 1-based column in it.
    pub column: u32,
    /// The name the map gives that position, when it gives one.
    pub name: Option<String>,
}

/// Source maps by generated file, read on first use (`None`: the file has
/// no usable map).
#[derive(Default)]
pub struct SourceMaps {
    maps: HashMap<PathBuf, Option<(DecodedMap, PathBuf)>>,
}

impl SourceMaps {
    /// The original of 1-based `line`:`column` in generated `file`; `None`
    /// when the file has no map or the map says nothing of that place.
    pub fn original(&mut self, file: &Path, line: u32, column: u32) -> Option<Original> {
        let entry = self
            .maps
            .entry(file.to_path_buf())
            .or_insert_with(|| load(file));
        let (map, dir) = entry.as_ref()?;
        let token = map.lookup_token(line.checked_sub(1)?, column.saturating_sub(1))?;
        let source = token.get_source()?;
        let path = Path::new(source.strip_prefix("file://").unwrap_or(source));
        let path = dir.join(path);
        Some(Original {
            file: path.canonicalize().unwrap_or(path),
            line: token.get_src_line() + 1,
            column: token.get_src_col() + 1,
            name: token.get_name().map(str::to_string),
        })
    }
}

impl SourceMaps {
    /// Where 1-based `line` of `source` runs in generated `file`, or the
    /// first line after it that has code there: `(generated line, source
    /// line)`, 1-based. `None` when the file's map (a regular one) does not
    /// cover `source` from that line on.
    pub fn generated(&mut self, file: &Path, source: &Path, line: u32) -> Option<(u32, u32)> {
        let entry = self
            .maps
            .entry(file.to_path_buf())
            .or_insert_with(|| load(file));
        let (DecodedMap::Regular(map), dir) = entry.as_ref()? else {
            return None;
        };
        let ours: Vec<bool> = (0..map.get_source_count())
            .map(|i| {
                map.get_source(i).is_some_and(|s| {
                    let p = dir.join(Path::new(s.strip_prefix("file://").unwrap_or(s)));
                    p.canonicalize().unwrap_or(p) == source
                })
            })
            .collect();
        let wanted = line.checked_sub(1)?;
        // The earliest source line at or after `line`, then its earliest
        // generated line.
        map.tokens()
            .filter(|t| ours.get(t.get_src_id() as usize) == Some(&true))
            .filter(|t| t.get_src_line() >= wanted)
            .map(|t| (t.get_src_line(), t.get_dst_line()))
            .min()
            .map(|(src, dst)| (dst + 1, src + 1))
    }

    /// The original of generated `file`'s 1-based `line` (its last mapped
    /// position on that line); `None` when the map says nothing of it.
    pub fn original_line(&mut self, file: &Path, line: u32) -> Option<Original> {
        let entry = self
            .maps
            .entry(file.to_path_buf())
            .or_insert_with(|| load(file));
        let (map, _) = entry.as_ref()?;
        let token = map.lookup_token(line.checked_sub(1)?, u32::MAX)?;
        if token.get_dst_line() + 1 != line {
            return None;
        }
        let column = token.get_dst_col() + 1;
        self.original(file, line, column)
    }
}

/// The map a generated file names, and the directory its sources are
/// relative to.
fn load(file: &Path) -> Option<(DecodedMap, PathBuf)> {
    let text = std::fs::read_to_string(file).ok()?;
    let url = text
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("//# sourceMappingURL="))?
        .trim();
    let dir = file.parent()?.to_path_buf();
    if url.starts_with("data:") {
        return Some((sourcemap::decode_data_url(url).ok()?, dir));
    }
    let map_file = dir.join(url);
    let bytes = std::fs::read(&map_file).ok()?;
    let map_dir = map_file.parent()?.to_path_buf();
    Some((sourcemap::decode_slice(&bytes).ok()?, map_dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_map_back_through_a_map_file_and_unmapped_files_give_none() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("dist")).unwrap();
        std::fs::write(root.join("src/a.ts"), "// one\nexport function f() {}\n").unwrap();
        // dist/a.js line 1 col 1 ← src/a.ts line 2 col 1, named "f".
        std::fs::write(
            root.join("dist/a.js"),
            "function f() {}\n//# sourceMappingURL=a.js.map\n",
        )
        .unwrap();
        std::fs::write(
            root.join("dist/a.js.map"),
            r#"{"version":3,"file":"a.js","sources":["../src/a.ts"],"names":["f"],"mappings":"AACA"}"#,
        )
        .unwrap();
        std::fs::write(root.join("dist/plain.js"), "function g() {}\n").unwrap();
        let mut maps = SourceMaps::default();
        let o = maps.original(&root.join("dist/a.js"), 1, 1).unwrap();
        assert_eq!(o.file, root.join("src/a.ts").canonicalize().unwrap());
        assert_eq!((o.line, o.column), (2, 1));
        assert_eq!(maps.original(&root.join("dist/plain.js"), 1, 1), None);
        assert_eq!(maps.original(&root.join("dist/missing.js"), 1, 1), None);
        // And the other way: a source line (or the next one with code) to
        // where it runs; a whole line back to its source.
        let (js, ts) = (
            root.join("dist/a.js"),
            root.join("src/a.ts").canonicalize().unwrap(),
        );
        assert_eq!(maps.generated(&js, &ts, 1), Some((1, 2)));
        assert_eq!(maps.generated(&js, &ts, 2), Some((1, 2)));
        assert_eq!(maps.generated(&js, &ts, 3), None);
        assert_eq!(maps.generated(&js, &root.join("src/b.ts"), 1), None);
        assert_eq!(maps.original_line(&js, 1).map(|o| o.line), Some(2));
        assert_eq!(maps.original_line(&js, 2), None);
    }
}
