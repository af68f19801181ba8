//! Symbol indexing time, cold (parse) and warm (cache), for a large binary.
//! Run: `cargo bench -p strobe-symbols --bench index [-- PATH]` (default: the
//! `strobe` debug binary, which must be built first).

use std::time::Instant;
use strobe_symbols::resolvers::dwarf::{DwarfResolver, build_index};

fn main() {
    let path = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/debug/strobe")
        });
    assert!(
        path.is_file(),
        "{} not found: build it first (cargo build -p strobe)",
        path.display()
    );
    let size = std::fs::metadata(&path).unwrap().len();
    let runs = 5;
    let mut cold = Vec::new();
    let mut n = 0;
    let mut inl = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let idx = build_index(&path).unwrap();
        cold.push(t.elapsed().as_secs_f64());
        n = idx.functions.len();
        inl = idx.inlined.len();
    }
    let cache = tempfile::tempdir().unwrap();
    DwarfResolver::open(&path, Some(cache.path())).unwrap();
    let mut warm = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let r = DwarfResolver::open(&path, Some(cache.path())).unwrap();
        warm.push(t.elapsed().as_secs_f64());
        assert_eq!(r.index().functions.len(), n);
    }
    cold.sort_by(|a, b| a.partial_cmp(b).unwrap());
    warm.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "symbol index of {} ({:.1} MiB): {n} functions, {inl} inlined call sites",
        path.display(),
        size as f64 / 1048576.0
    );
    println!(
        "  cold (parse DWARF + symtab, {} threads): median {:.0} ms",
        rayon::current_num_threads(),
        cold[runs / 2] * 1e3
    );
    println!(
        "  warm (on-disk cache):                    median {:.1} ms",
        warm[runs / 2] * 1e3
    );
    println!(
        "  ratio cold/warm:                         {:.0}x",
        cold[runs / 2] / warm[runs / 2]
    );
}
