//! The DWARF index against real binaries built here with gcc, g++ and rustc
//! at -O0 and -O2, DWARF 4 and 5, compressed, split into a debug file, and
//! without DWARF at all.

use std::path::{Path, PathBuf};
use std::process::Command;
use strobe_symbols::resolvers::dwarf::{DwarfResolver, build_index};
use strobe_symbols::{Pattern, SymbolIndex, SymbolResolver};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn build(out_dir: &Path, compiler: &str, src: &str, out: &str, flags: &[&str]) -> PathBuf {
    let exe = out_dir.join(out);
    let mut cmd = Command::new(compiler);
    cmd.args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(fixtures().join(src));
    let st = cmd.status().unwrap();
    assert!(st.success(), "{compiler} {flags:?} {src} failed");
    exe
}

fn names(idx: &SymbolIndex) -> Vec<&str> {
    idx.functions.iter().map(|f| f.name.as_str()).collect()
}

fn get<'a>(idx: &'a SymbolIndex, name: &str) -> &'a strobe_symbols::FunctionSymbol {
    idx.functions
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("{name} not in index: {:?}", names(idx)))
}

#[test]
fn c_at_o0_has_names_files_lines_and_offsets() {
    let tmp = tempfile::tempdir().unwrap();
    for dwarf in ["-gdwarf-4", "-gdwarf-5"] {
        let exe = build(tmp.path(), "gcc", "trace_c.c", "c0", &[dwarf, "-O0"]);
        let idx = build_index(&exe).unwrap();
        let add = get(&idx, "add");
        assert!(
            add.file
                .as_deref()
                .unwrap()
                .ends_with("tests/fixtures/trace_c.c"),
            "{:?}",
            add.file
        );
        assert_eq!(add.line, Some(11));
        assert!(!add.from_symtab);
        assert!(add.size() > 0);
        for f in [
            "scale",
            "fib",
            "process_point",
            "greet",
            "checked_div",
            "main",
        ] {
            get(&idx, f);
        }
        assert!(idx.build_id.is_some());
        // Entry offsets are relative to the lowest load address (PIE: 0).
        let sym = Command::new("nm").arg(&exe).output().unwrap();
        let nm = String::from_utf8_lossy(&sym.stdout);
        let line = nm.lines().find(|l| l.ends_with(" T add")).unwrap();
        let addr = u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap();
        assert_eq!(add.entry_offset, addr - idx.load_bias);
    }
}

#[test]
fn c_at_o2_keeps_split_functions_and_reports_inlined_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(tmp.path(), "gcc", "trace_c.c", "c2", &["-g", "-O2"]);
    let idx = build_index(&exe).unwrap();
    let div = get(&idx, "checked_div");
    assert!(
        div.ranges.len() >= 2,
        "hot/cold split function keeps all its ranges: {:?}",
        div.ranges
    );
    assert!(div.entry_offset >= div.ranges.iter().map(|r| r.0).min().unwrap());
    let r = DwarfResolver::from_index(idx.clone());
    let res = r.resolve_pattern(&Pattern::parse("tiny_inline").unwrap(), Path::new("/"));
    assert!(res.targets.is_empty());
    assert!(
        res.inlined_only
            .iter()
            .any(|m| m.contains("tiny_inline inlined into main") && m.contains("trace_c.c:")),
        "{:?}",
        res.inlined_only
    );
}

#[test]
fn cpp_names_are_fully_qualified_without_parameters() {
    let tmp = tempfile::tempdir().unwrap();
    for opt in ["-O0", "-O2"] {
        let exe = build(
            tmp.path(),
            "g++",
            "trace_cpp.cpp",
            &format!("cpp{opt}"),
            &["-g", opt],
        );
        let idx = build_index(&exe).unwrap();
        let n = names(&idx);
        for want in ["audio::dsp::LowPass::process", "main"] {
            assert!(n.contains(&want), "{opt}: {want} missing from {n:?}");
        }
        // At -O2 the throwing path of open_device is split into
        // `open_device.cold`: part of the function (its DWARF ranges), not a
        // second entry point to hook.
        let opens: Vec<_> = idx
            .functions
            .iter()
            .filter(|f| f.name == "audio::io::open_device")
            .collect();
        assert_eq!(opens.len(), 1, "{opt}: {opens:?}");
        assert!(
            idx.functions
                .iter()
                .all(|f| !f.name_raw.as_deref().unwrap_or("").contains(".cold")),
            "{opt}: a .cold block is listed as a function"
        );
        if opt == "-O2" {
            assert!(opens[0].ranges.len() >= 2, "hot and cold ranges: {opens:?}");
        }
        if opt == "-O0" {
            for want in [
                "audio::Mixer::mix",
                "audio::dsp::Filter::process",
                "audio::clamp_value<float>",
                "audio::clamp_value<int>",
            ] {
                assert!(n.contains(&want), "{want} missing from {n:?}");
            }
            let mix = get(&idx, "audio::Mixer::mix");
            assert!(mix.name_raw.as_deref().unwrap().starts_with("_ZN"));
            let r = DwarfResolver::from_index(idx.clone());
            let hits = r.resolve_pattern(
                &Pattern::parse("audio::dsp::*::process").unwrap(),
                Path::new("/"),
            );
            let mut got: Vec<_> = hits.targets.iter().map(|t| t.name.as_str()).collect();
            got.sort();
            assert_eq!(
                got,
                [
                    "audio::dsp::Filter::process",
                    "audio::dsp::LowPass::process"
                ]
            );
            let deep = r.resolve_pattern(&Pattern::parse("audio::**").unwrap(), Path::new("/"));
            assert!(deep.targets.len() >= 5);
        }
    }
}

#[test]
fn rust_names_are_demangled_without_hash() {
    let tmp = tempfile::tempdir().unwrap();
    for opt in ["0", "2"] {
        let exe = build(
            tmp.path(),
            "rustc",
            "trace_rust.rs",
            &format!("rs{opt}"),
            &["-g", "-C", &format!("opt-level={opt}"), "--edition", "2021"],
        );
        let idx = build_index(&exe).unwrap();
        let n = names(&idx);
        assert!(
            !n.iter().any(|f| f.contains("::h")
                && f.len() > 17
                && f.rsplit("::h").next().is_some_and(|h| h.len() == 16)),
            "hash suffixes stripped"
        );
        for want in ["trace_rust::parser::deep::validate", "trace_rust::main"] {
            assert!(n.contains(&want), "opt {opt}: {want} missing");
        }
        assert!(
            n.iter()
                .any(|f| f.contains("Square as trace_rust::Shape>::area")),
            "trait method: {:?}",
            n.iter().filter(|f| f.contains("area")).collect::<Vec<_>>()
        );
        if opt == "0" {
            assert!(n.contains(&"trace_rust::parser::tokenize"));
            assert!(
                n.iter().any(|f| f.starts_with("trace_rust::largest")),
                "generic instance"
            );
            assert!(n.iter().any(|f| f.contains("{{closure}}")), "closures");
            let r = DwarfResolver::from_index(idx.clone());
            let hits = r.resolve_pattern(
                &Pattern::parse("trace_rust::parser::*").unwrap(),
                Path::new("/"),
            );
            assert!(
                hits.targets
                    .iter()
                    .any(|t| t.name == "trace_rust::parser::tokenize")
            );
            assert!(
                !hits
                    .targets
                    .iter()
                    .any(|t| t.name == "trace_rust::parser::deep::validate"),
                "* stops at ::"
            );
            let user = r.resolve_pattern(&Pattern::UserCode, &fixtures().canonicalize().unwrap());
            assert!(user.targets.iter().any(|t| t.name == "trace_rust::main"));
            assert!(
                !user
                    .targets
                    .iter()
                    .any(|t| t.name.starts_with("std::") || t.name.starts_with("core::")),
                "std is not user code"
            );
        }
    }
}

#[test]
fn compressed_split_and_symtab_only_images() {
    let tmp = tempfile::tempdir().unwrap();
    let z = build(tmp.path(), "gcc", "trace_c.c", "cz", &["-g", "-gz"]);
    let idx = build_index(&z).unwrap();
    assert_eq!(get(&idx, "add").line, Some(11), "compressed debug sections");

    let split = build(tmp.path(), "gcc", "trace_c.c", "csplit", &["-g"]);
    let dbg = tmp.path().join("csplit.debug");
    assert!(
        Command::new("objcopy")
            .arg("--only-keep-debug")
            .arg(&split)
            .arg(&dbg)
            .status()
            .unwrap()
            .success()
    );
    assert!(
        Command::new("strip")
            .arg("--strip-debug")
            .arg(&split)
            .status()
            .unwrap()
            .success()
    );
    assert!(
        Command::new("objcopy")
            .arg(format!("--add-gnu-debuglink={}", dbg.display()))
            .arg(&split)
            .status()
            .unwrap()
            .success()
    );
    let idx = build_index(&split).unwrap();
    assert_eq!(
        idx.debug_file.as_deref(),
        Some(dbg.as_path()),
        "found through .gnu_debuglink"
    );
    assert_eq!(get(&idx, "add").line, Some(11));

    let bare = build(tmp.path(), "gcc", "trace_c.c", "cbare", &["-O0"]);
    let idx = build_index(&bare).unwrap();
    assert!(idx.debug_file.is_none());
    let add = get(&idx, "add");
    assert!(add.from_symtab && add.file.is_none());
    get(&idx, "fib");
}

#[test]
fn the_cache_returns_the_same_index_and_notices_rebuilds() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let exe = build(tmp.path(), "gcc", "trace_c.c", "cc", &["-g"]);
    let a = DwarfResolver::open(&exe, Some(&cache)).unwrap();
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 1);
    let b = DwarfResolver::open(&exe, Some(&cache)).unwrap();
    assert_eq!(a.index(), b.index());
    std::thread::sleep(std::time::Duration::from_millis(20));
    build(tmp.path(), "gcc", "trace_c.c", "cc", &["-g", "-O2"]);
    let c = DwarfResolver::open(&exe, Some(&cache)).unwrap();
    assert_ne!(a.index(), c.index(), "a rebuilt binary is re-indexed");
}

#[test]
fn signatures_types_globals_and_lines_are_read_on_demand() {
    use strobe_symbols::{DebugInfo, Type};
    let tmp = tempfile::tempdir().unwrap();
    for flags in [&["-g", "-O0"][..], &["-gdwarf-4", "-O2"][..]] {
        let exe = build(tmp.path(), "gcc", "typed.c", "typed", flags);
        let idx = build_index(&exe).unwrap();
        let mut di = DebugInfo::open(&idx).unwrap();

        let sig = di.signature(get(&idx, "configure").die.unwrap()).unwrap();
        let t = di.types();
        let params: Vec<(String, String)> = sig
            .params
            .iter()
            .map(|(n, ty)| (n.clone(), t.name(*ty)))
            .collect();
        assert_eq!(
            params,
            [
                ("cfg".to_string(), "config *".to_string()),
                ("label".into(), "char *".into()),
                ("c".into(), "color".into()),
                ("on".into(), "bool".into()),
            ],
            "{flags:?}"
        );
        assert_eq!(t.name(sig.ret.unwrap()), "int");
        // Where each parameter is at entry: -O0 only describes stack slots
        // (valid after the prologue); -O2 says rdi, rsi, rdx, rcx.
        use strobe_symbols::EntryLoc;
        let want = if flags.contains(&"-O0") {
            vec![EntryLoc::Unknown; 4]
        } else {
            [5, 4, 1, 2].map(EntryLoc::Register).to_vec()
        };
        assert_eq!(sig.entry_locs, want, "{flags:?}");
        assert!(!sig.nocall);
        let Type::Pointer { target, .. } = t.get(sig.params[0].1) else {
            panic!("cfg is not a pointer")
        };
        let Type::Struct { members, size, .. } = t.get(t.strip(*target)) else {
            panic!("config is not a struct")
        };
        assert_eq!(*size, 40);
        let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "name", "level", "verbose", "tint", "weights", "flags", "mode"
            ]
        );
        assert!(members[5].bits.is_some() && members[6].bits.is_some());
        let Type::Enum { variants, .. } = t.get(t.strip(sig.params[2].1)) else {
            panic!("color is not an enum")
        };
        assert!(variants.contains(&(4, "BLUE".to_string())));

        // A self-referential type is tied to itself, not expanded forever.
        let walk = di.signature(get(&idx, "walk").die.unwrap()).unwrap();
        let t = di.types();
        let Type::Pointer { target: node, .. } = t.get(walk.params[0].1) else {
            panic!()
        };
        let Type::Struct { members, .. } = t.get(t.strip(*node)) else {
            panic!()
        };
        assert_eq!(
            t.get(members[1].ty),
            &Type::Pointer {
                target: *node,
                reference: false
            }
        );

        let mix = di.signature(get(&idx, "mix").die.unwrap()).unwrap();
        let t = di.types();
        let kinds: Vec<String> = mix.params.iter().map(|(_, ty)| t.name(*ty)).collect();
        assert_eq!(kinds, ["double", "float", "int", "char"]);

        // Globals with fixed addresses, and their types.
        let g = idx.globals.iter().find(|g| g.name == "g_config").unwrap();
        let ty = di.variable_type(g.die).unwrap();
        assert_eq!(di.types().name(ty), "config");
        assert!(idx.globals.iter().any(|g| g.name == "g_counter"));
        assert!(idx.globals.iter().any(|g| g.name == "g_config_ptr"));

        // Every address of a function maps to a line of its source file.
        let touch = get(&idx, "touch");
        let line = di.line_at(touch.entry_offset).unwrap();
        assert!(line.file.ends_with("typed.c"), "{line:?}");
        assert!((70..=73).contains(&line.line), "{flags:?} {line:?}");
        let body = di.addresses_of_line("typed.c", 71);
        assert!(!body.is_empty(), "{flags:?}: line 71 has code");
        assert!(
            touch
                .ranges
                .iter()
                .any(|(a, b)| body.iter().any(|x| a <= x && x < b)),
            "{flags:?}: line 71 lies in touch"
        );
    }
}

#[test]
fn frames_see_their_variables_frame_address_and_statements() {
    use strobe_symbols::{DebugInfo, FrameBase, FrameTable, Place};
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(
        tmp.path(),
        "gcc",
        "debugee.c",
        "dbg",
        &["-g", "-O0", "-pthread"],
    );
    let idx = build_index(&exe).unwrap();
    let compute = get(&idx, "compute").clone();
    let mut di = DebugInfo::open(&idx).unwrap();
    let die = compute.die.unwrap();
    let body = di.body_start(die.unit, &compute.ranges, compute.entry_offset);
    assert!(body > compute.entry_offset, "past the prologue");
    let stmts = di.statements(die.unit, &compute.ranges);
    assert_eq!(stmts[0].offset, compute.entry_offset);
    assert!(stmts.iter().any(|s| s.offset == body));
    assert!(stmts.windows(2).all(|w| w[0].offset < w[1].offset));

    let vars = di.scope_at(die, body).unwrap();
    let names: Vec<&str> = vars.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["x", "doubled", "sq", "total"]);
    assert!(vars[0].parameter && !vars[1].parameter);
    assert!(
        matches!(vars[0].place, Place::FrameBase(_)),
        "{:?}",
        vars[0]
    );
    assert_eq!(di.frame_base(die).unwrap(), FrameBase::Cfa);
    // After `push rbp; mov rbp, rsp` the CFA is rbp + 16.
    let cfa = di.cfa_at(body).unwrap();
    assert_eq!((cfa.register, cfa.offset), (6, 16));
    let unwind = FrameTable::open(&exe).unwind_at(body).unwrap();
    assert_eq!(unwind.rbp_saved_at, Some(-16));
    // At the entry, before the prologue: rsp + 8.
    let at_entry = di.cfa_at(compute.entry_offset).unwrap();
    assert_eq!((at_entry.register, at_entry.offset), (7, 8));
    assert_eq!(
        idx.function_containing(body)
            .map(|i| idx.functions[i].name.as_str()),
        Some("compute")
    );
}

#[test]
fn type_info_names_demangle() {
    use strobe_symbols::resolvers::dwarf::demangle_type_name;
    assert_eq!(
        demangle_type_name("St13runtime_error"),
        "std::runtime_error"
    );
    assert_eq!(
        demangle_type_name("N5audio10DeviceLostE"),
        "audio::DeviceLost"
    );
    assert_eq!(demangle_type_name("i"), "int");
    assert_eq!(
        demangle_type_name("*N12_GLOBAL__N_15LocalE"),
        "(anonymous namespace)::Local"
    );
    assert_eq!(demangle_type_name("not a name!"), "not a name!");
}

#[test]
fn char_pointers_resolve_through_qualifiers_typedefs_and_deep_type_graphs() {
    use strobe_symbols::{DebugInfo, Type};
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(tmp.path(), "gcc", "cstrings.c", "cstrings", &["-g", "-O0"]);
    let idx = build_index(&exe).unwrap();
    let mut di = DebugInfo::open(&idx).unwrap();
    // Is `ty` a pointer whose target is, under qualifiers and typedefs, a
    // one-byte character type?
    let char_pointer = |di: &DebugInfo, ty| {
        let t = di.types();
        let Type::Pointer { target, .. } = t.get(t.strip(ty)) else {
            return false;
        };
        matches!(
            t.get(t.strip(*target)),
            Type::Int {
                size: 1,
                is_char: true,
                ..
            }
        )
    };
    // `db`'s type is read first and nests 40 structs deep; every one holds
    // a `const char *`, the same DIE as `sql`'s.
    let sig = di.signature(get(&idx, "prepare").die.unwrap()).unwrap();
    let t = di.types();
    assert_eq!(t.name(sig.params[1].1), "char *");
    assert!(char_pointer(&di, sig.params[1].1), "sql: {:?}", sig.params);
    // The last struct of the chain is complete too, not cut to void.
    let mut ty = sig.params[0].1;
    for level in 0..40 {
        let t = di.types();
        let Type::Pointer { target, .. } = t.get(t.strip(ty)) else {
            panic!("level {level}: {:?}", t.get(ty))
        };
        let Type::Struct { members, .. } = t.get(t.strip(*target)) else {
            panic!("level {level}: {:?}", t.get(*target))
        };
        assert!(char_pointer(&di, members[1].ty), "level {level}");
        assert_eq!(t.name(members[1].ty), "char *", "level {level}");
        ty = members[0].ty;
    }
    let sig = di.signature(get(&idx, "spellings").die.unwrap()).unwrap();
    for (name, ty) in &sig.params {
        assert!(char_pointer(&di, *ty), "{name}: {}", di.types().name(*ty));
    }
    let names: Vec<String> = sig.params.iter().map(|p| di.types().name(p.1)).collect();
    assert_eq!(
        names,
        [
            "char *",
            "char *",
            "char *",
            "char *",
            "mychar *",
            "cstr",
            "const_mystr",
            "unsigned char *",
            "signed char *",
            "unsigned char *"
        ]
    );
}

#[test]
fn symtab_functions_go_by_their_public_name() {
    // Without DWARF, a function exported under several names at one address
    // (libc's `__getpid` and `getpid`) is indexed once, by its public name,
    // so a pattern naming `total` finds it.
    let dir = tempfile::tempdir().unwrap();
    let lib = build(
        dir.path(),
        "gcc",
        "aliases.c",
        "libaliases.so",
        &["-shared", "-fPIC", "-O1"],
    );
    let idx = build_index(&lib).unwrap();
    let f = get(&idx, "total");
    assert!(f.from_symtab);
    let at: Vec<&str> = idx
        .functions
        .iter()
        .filter(|g| g.entry_offset == f.entry_offset)
        .map(|g| g.name.as_str())
        .collect();
    assert_eq!(at, ["total"], "one function per address");
}

#[test]
fn functions_known_from_dwarf_by_an_internal_name_go_by_their_exported_one() {
    // glibc's DWARF calls malloc `__libc_malloc` and pthread_getspecific
    // `__pthread_getspecific`; with its debug info installed (libc6-dbg, in
    // the machine image) the index must still answer to the public names.
    let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
    let idx = build_index(libc).unwrap();
    for name in [
        "malloc",
        "pthread_getspecific",
        "getpid",
        "mmap",
        "clock_gettime",
    ] {
        get(&idx, name);
    }
    assert!(
        !names(&idx).contains(&"__libc_malloc"),
        "one name per function"
    );
}

#[test]
fn the_registry_opens_the_native_resolver_of_an_elf_image() {
    use strobe_symbols::Language;
    use strobe_symbols::resolvers::{self, Image, ImageKind};
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(tmp.path(), "gcc", "trace_c.c", "c0", &["-g", "-O0"]);
    let image = Image {
        path: &exe,
        kind: ImageKind::Program,
        project_root: Path::new("/"),
        args: &[],
        env: &[],
    };
    let mut opened = resolvers::open(&image, Some(&tmp.path().join("cache")), None);
    assert_eq!(opened.len(), 1);
    let r = opened.pop().unwrap().unwrap();
    assert_eq!(
        (r.name(), r.language(), r.path()),
        ("dwarf", Language::Native, exe.as_path())
    );
    let res = r.resolve_pattern(&Pattern::parse("add").unwrap(), Path::new("/"));
    assert_eq!(res.targets.len(), 1);
    let t = &res.targets[0];
    let f = r.function(t.function).unwrap();
    assert_eq!((f.name, f.line), ("add", Some(11)));
    assert!(f.file.unwrap().ends_with("tests/fixtures/trace_c.c"));
    let index = r.native().expect("native code has an index");
    assert_eq!(index.functions[t.function].entry_offset, t.entry_offset);
    assert!(r.function(index.functions.len()).is_none());
}
