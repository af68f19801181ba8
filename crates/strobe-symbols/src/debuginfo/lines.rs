//! Line tables: the source line at an address, and the statement
//! addresses of a source line (files matched by whole path components).

use super::*;

impl DebugInfo {
    /// The source line of an image offset (`None` outside code with line info).
    pub fn line_at(&mut self, offset: u64) -> Option<SourceLine> {
        let i = self.ranges.partition_point(|r| r.0 <= offset);
        let unit = self.ranges[..i]
            .iter()
            .rev()
            .take(64)
            .find(|r| r.0 <= offset && offset < r.1)?
            .2;
        let address = offset.wrapping_add(self.load_bias);
        let rows = self.rows(unit)?;
        let mut best: Option<LineRow> = None;
        let mut prev: Option<LineRow> = None;
        for row in rows {
            if let Some(p) = prev
                && !p.end_sequence
                && p.address <= address
                && address < row.address
                && best.is_none_or(|b| p.address >= b.address)
            {
                best = Some(p);
            }
            prev = Some(*row);
        }
        let best = best?;
        let files = &self.units[&unit].files;
        Some(SourceLine {
            file: files.get(best.file as usize).cloned().flatten()?,
            line: best.line,
        })
    }

    /// Image offsets of the first statement of `line` in files whose path
    /// ends with `file` as whole components ("main.c" or "src/main.c", not
    /// glibc's "w_lgamma_main.c"); one per place the line has code, empty
    /// when it has none.
    pub fn addresses_of_line(&mut self, file: &str, line: u32) -> Vec<u64> {
        let units: Vec<u64> = {
            let mut u: Vec<u64> = self.ranges.iter().map(|r| r.2).collect();
            u.sort_unstable();
            u.dedup();
            u
        };
        let mut out = Vec::new();
        for unit in units {
            let Some(rows) = self.rows(unit).map(<[LineRow]>::to_vec) else {
                continue;
            };
            let files = &self.units[&unit].files;
            let mut last_line_in_seq: Option<u32> = None;
            for row in rows {
                if row.end_sequence {
                    last_line_in_seq = None;
                    continue;
                }
                let matches_file = files
                    .get(row.file as usize)
                    .cloned()
                    .flatten()
                    .is_some_and(|f| path_ends_with(&f, file));
                if matches_file && row.line == line && last_line_in_seq != Some(line) {
                    out.push(row.address.wrapping_sub(self.load_bias));
                }
                last_line_in_seq = Some(row.line);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    pub(crate) fn rows(&mut self, unit: u64) -> Option<&[LineRow]> {
        let err_path = self.path.clone();
        let data = self.unit(unit).ok()?;
        if data.rows.is_none() {
            let mut rows = Vec::new();
            if let Some(program) = data.unit.line_program.clone() {
                let mut it = program.rows();
                loop {
                    match it.next_row() {
                        Ok(Some((_, row))) => rows.push(LineRow {
                            address: row.address(),
                            file: row.file_index() as u32,
                            line: row.line().map_or(0, |l| l.get() as u32),
                            end_sequence: row.end_sequence(),
                            is_stmt: row.is_stmt(),
                            prologue_end: row.prologue_end(),
                        }),
                        Ok(None) => break,
                        Err(e) => {
                            tracing::warn!("bad line table in {}: {e}", err_path.display());
                            break;
                        }
                    }
                }
            }
            data.rows = Some(rows);
        }
        data.rows.as_deref()
    }
}

/// Does `path` end with `tail` at a component boundary?
pub(super) fn path_ends_with(path: &str, tail: &str) -> bool {
    path.strip_suffix(tail)
        .is_some_and(|rest| rest.is_empty() || rest.ends_with('/') || tail.starts_with('/'))
}
