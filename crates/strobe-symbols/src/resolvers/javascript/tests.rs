use super::*;

fn names(path: &str, text: &str) -> Vec<(String, u32)> {
    parse_source(Path::new(path), text)
        .functions
        .into_iter()
        .map(|f| (f.qualname, f.line))
        .collect()
}

#[test]
fn declarations_classes_and_bound_functions_are_named_like_v8() {
    let src = r#"
function top(a, { b }, [c], d = 1, ...rest) {
  function inner() {}
  [1].map(function () { function deep() {} });
}
class Router {
  constructor(routes) {}
  handle(req) {}
  static create() {}
  get size() { return 0; }
  set size(v) {}
  #check() {}
  onError = (e) => {};
  count = 3;
}
const arrow = async (x) => x;
let expr = function named() {};
const api = { list() {}, get one() { return 1; }, post: () => 1, value: 2 };
exports.exported = function () {};
module.exports.alsoExported = () => {};
Router.prototype.legacy = function () {};
const Anon = class { run() {} };
function* gen() {}
"#;
    let got = names("/p/router.js", src);
    let want = [
        ("top", 2),
        ("top.inner", 3),
        ("top.deep", 4),
        ("Router.constructor", 7),
        ("Router.handle", 8),
        ("Router.create", 9),
        ("Router.get size", 10),
        ("Router.set size", 11),
        ("Router.#check", 12),
        ("Router.onError", 13),
        ("arrow", 16),
        ("expr", 17),
        ("api.list", 18),
        ("api.get one", 18),
        ("api.post", 18),
        ("exported", 19),
        ("alsoExported", 20),
        ("Router.legacy", 21),
        ("Anon.run", 22),
        ("gen", 23),
    ];
    let want: Vec<(String, u32)> = want.iter().map(|(n, l)| (n.to_string(), *l)).collect();
    assert_eq!(got, want);
    let parsed = parse_source(Path::new("/p/router.js"), src);
    assert_eq!(
        parsed.functions[0].parameters,
        ["a", "{…}", "[…]", "d", "rest"]
    );
    assert!(parsed.functions[10].is_async, "{:?}", parsed.functions[10]);
    assert!(parsed.functions.last().unwrap().is_generator);
}

#[test]
fn typescript_esm_and_default_exports() {
    let src = r#"
export interface Opts { n: number }
export function overloaded(x: string): string;
export function overloaded(x: number): number;
export function overloaded(x: any): any { return x; }
export default function (o: Opts): void {}
export class Service<T> {
  private cache = new Map<string, T>();
  public async load(id: string): Promise<T | undefined> { return this.cache.get(id); }
  abstract?(): void;
}
export const typed = ((n: number) => n * 2) satisfies (n: number) => number;
"#;
    let got: Vec<String> = names("/p/src/svc.ts", src)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        got,
        ["overloaded", "default", "Service.load", "typed"],
        "overload signatures and bodiless members are left out"
    );
}

#[test]
fn syntax_errors_are_reported_and_compiled_output_is_marked() {
    let broken = parse_source(Path::new("/p/a.js"), "function ok() {}\nfunction bad( {\n");
    let (first, _) = broken.syntax_error.expect("an error");
    assert!(first.starts_with("line "), "{first}");
    let compiled = parse_source(
        Path::new("/p/dist/a.js"),
        "function f() {}\n//# sourceMappingURL=a.js.map\n",
    );
    assert!(compiled.has_source_map);
    assert_eq!(compiled.functions.len(), 1);
}

#[test]
fn the_resolver_indexes_the_project_and_matches_dotted_patterns() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src/api")).unwrap();
    std::fs::create_dir_all(root.join("node_modules/dep")).unwrap();
    std::fs::create_dir_all(root.join("dist")).unwrap();
    std::fs::write(
        root.join("src/auth.ts"),
        "export function validate(t: string) {}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/api/users.ts"),
        "export class Router { handle() {} list() {} }\n",
    )
    .unwrap();
    std::fs::write(
        root.join("node_modules/dep/index.js"),
        "function hidden() {}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("dist/auth.js"),
        "function validate(t) {}\n//# sourceMappingURL=auth.js.map\n",
    )
    .unwrap();
    std::fs::write(root.join("main.mjs"), "function main() {}\n").unwrap();
    let node = Path::new("/usr/bin/node");
    let args = vec!["main.mjs".to_string()];
    let image = Image {
        path: node,
        kind: ImageKind::Program,
        project_root: root,
        args: &args,
        env: &[],
    };
    let r = JavaScriptResolver::open(&image);
    let all: Vec<&str> = r.functions().iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        all,
        [
            "main.main",
            "auth.validate",
            "api.users.Router.handle",
            "api.users.Router.list"
        ],
        "a directory's files before its subdirectories; node_modules and compiled output left out"
    );
    let resolve = |p: &str| -> Vec<String> {
        r.resolve_pattern(&Pattern::parse(p).unwrap(), root)
            .targets
            .into_iter()
            .map(|t| t.name)
            .collect()
    };
    assert_eq!(
        resolve("api.users.Router.*"),
        ["api.users.Router.handle", "api.users.Router.list"]
    );
    assert_eq!(
        resolve("api.**"),
        ["api.users.Router.handle", "api.users.Router.list"]
    );
    assert_eq!(resolve("auth.validate"), ["auth.validate"]);
    assert!(
        resolve("Router::handle").is_empty(),
        "native syntax names nothing here"
    );
    assert_eq!(resolve("@file:auth.ts"), ["auth.validate"]);
    assert_eq!(resolve("@usercode").len(), 4);
    let f = r.function(1).unwrap();
    assert!(f.file.unwrap().ends_with("src/auth.ts"));
    assert_eq!(f.line, Some(1));
    assert_eq!(r.parameters(1), ["t"]);
    // A package is indexed when a pattern names it, named from
    // node_modules, numbered after the project's functions; `@usercode`
    // still means the project's own code.
    assert_eq!(resolve("dep.*"), ["dep.hidden"]);
    let hidden = r.function(4).unwrap();
    assert_eq!(hidden.name, "dep.hidden");
    assert!(hidden.file.unwrap().ends_with("node_modules/dep/index.js"));
    assert_eq!(resolve("@usercode").len(), 4);
    assert_eq!(resolve("dep.hidden"), ["dep.hidden"], "indexed once");
    assert!(resolve("nodep.*").is_empty());
    assert!(
        super::super::open(&image, None, None).iter().any(|o| o
            .as_ref()
            .is_ok_and(|r| r.language() == Language::JavaScript)),
        "registered"
    );
}

mod instrumentation {
    use super::super::instrument::{MAX_PROBES, instrument};
    use super::*;
    use std::process::Command;

    /// Every shape of function the namer lists, and the ways out of one.
    const SHAPES: &str = r#"#!/usr/bin/env node
"use strict";
function add(a, b) { return a + b; }
function early(x) { if (x) return; return "late" }
function bare(x) {
  if (x) return
  ;(x)
  return 'no'
}
function strictBody() { "use strict"; return typeof this; }
const arrow = (x) => x * 2;
const obj = ({ a, b: [c] }) => ({ a, c });
const later = async (ms) => { await null; return ms + 1; };
function* gen(n) { for (let i = 0; i < n; i++) yield i; return "done"; }
class Shape {
  constructor(n) { this.n = n; }
  get twice() { return this.n * 2; }
  static of(n) { return new Shape(n); }
  area = () => this.n * this.n;
}
class Square extends Shape { constructor(n) { super(n); this.kind = "sq"; } }
function thrower(m) { throw new Error(m); }
function outer(v) {
  const inner = (w) => { return w + 1; };
  [1].forEach(function () { return 99; });
  return inner(v);
}
function restArgs(first, ...more) { return more.length; }
function withDefault(x = 4, { y } = { y: 5 }) { return x + y; }
const api = { list() { return [1, 2]; }, get one() { return 1; } };
function hoisted() { return helper(); function helper() { return "h"; } }
function finallyOverride() { try { return 1; } finally { return 2; } }
Shape.prototype.noop = function () {};
const empty = () => {};
async function main() {
  const out = [add(1, 2), early(1), early(0), bare(1), bare(0), strictBody(), arrow(4),
    obj({ a: 1, b: [3] }), await later(1), empty(), new Shape(1).noop(), [...gen(3)], Square.of(3).twice, new Square(2).area(),
    outer(1), restArgs(1, 2, 3), withDefault(), api.list(), api.one, hoisted(), finallyOverride()];
  try { thrower("boom"); } catch (e) { out.push(e.message); }
  console.log(JSON.stringify(out));
}
main();
"#;

    /// A runtime that logs each probe's calls (the preload's stand-in).
    const LOGGING_RUNTIME: &str = r#"
let token = 0; const log = [];
const T = {};
globalThis.__strobe = { m: new Int32Array(8192).fill(-1), T,
  e(i, a) { log.push(`> ${i} ${JSON.stringify(a)}`); return ++token; },
  a(i, a) { log.push(`>> ${i}`); return ++token; },
  f(i, t, v) { log.push(v === T ? `! ${i}` : `< ${i} ${typeof v === "object" ? JSON.stringify(v) : String(v)}`); },
  fa(i, t, v) { this.f(i, t, v); },
  xa(i, t, e) { log.push(`!! ${i} ${e.message}`); },
  c(e) { log.push(`c ${e && e.message}`); } };
process.on("exit", () => console.error(log.join("\n")));
"#;

    #[test]
    fn instrumented_source_parses_and_keeps_every_line() {
        let path = Path::new("/p/shapes.js");
        let done = instrument(path, SHAPES, 7);
        assert_eq!(done.skipped, None);
        assert_eq!(
            done.functions.len(),
            26,
            "{:#?}",
            done.functions
                .iter()
                .map(|f| &f.qualname)
                .collect::<Vec<_>>()
        );
        assert_eq!(done.text.lines().count(), SHAPES.lines().count());
        let again = parse_source(path, &done.text);
        assert_eq!(again.syntax_error, None, "{}", done.text);
        assert!(
            done.text
                .starts_with("#!/usr/bin/env node\n\"use strict\";\n")
        );
        assert!(
            done.text
                .contains(r#"function strictBody() { "use strict";var __sc=__strobe.m[0]&"#)
        );
        assert!(
            done.text.contains("const arrow = (x) => {var __sc"),
            "{}",
            done.text
        );
        assert!(done.text.contains("return __sv=(x * 2)"));
        assert!(
            done.text.contains("if (x) return __sv=void 0;\n  ;(x)"),
            "{}",
            done.text
        );
        // The anonymous callback's return is its own.
        assert!(done.text.contains("function () { return 99; }"));
    }

    #[test]
    fn a_file_with_a_syntax_error_or_too_many_probes_is_left_alone() {
        let bad = instrument(Path::new("/p/bad.js"), "function f( {", 0);
        assert_eq!(bad.text, "function f( {");
        assert!(bad.skipped.unwrap().starts_with("syntax error"));
        let full = instrument(Path::new("/p/ok.js"), "function f() {}", MAX_PROBES);
        assert!(full.skipped.unwrap().contains("functions probed"));
    }

    /// The instrumented program prints what the original prints, and each
    /// probe saw its call: run on the machine's Node.
    #[test]
    fn instrumented_program_behaves_like_the_original_under_node() {
        let dir = std::env::temp_dir().join(format!("strobe-instrument-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (plain, probed, runtime) = (
            dir.join("plain.js"),
            dir.join("probed.js"),
            dir.join("rt.js"),
        );
        let done = instrument(&probed, SHAPES, 0);
        std::fs::write(&plain, SHAPES).unwrap();
        std::fs::write(&probed, &done.text).unwrap();
        std::fs::write(&runtime, LOGGING_RUNTIME).unwrap();
        let run = |script: &Path| {
            Command::new("node")
                .arg("--require")
                .arg(&runtime)
                .arg(script)
                .output()
                .expect("node runs (the test set-up installs Node 20)")
        };
        let (a, b) = (run(&plain), run(&probed));
        std::fs::remove_dir_all(&dir).ok();
        assert!(
            a.status.success() && b.status.success(),
            "{}",
            String::from_utf8_lossy(&b.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&a.stdout),
            String::from_utf8_lossy(&b.stdout)
        );
        let log = String::from_utf8_lossy(&b.stderr);
        let index = |name: &str| {
            done.functions
                .iter()
                .position(|f| f.qualname == name)
                .unwrap()
        };
        for want in [
            format!("> {} [1,2]", index("add")),
            format!("< {} 3", index("add")),
            format!("> {} [{{\"a\":1,\"c\":3}}]", index("obj")),
            format!("< {} undefined", index("early")),
            format!("< {} late", index("early")),
            format!(">> {}", index("later")),
            format!("< {} 2", index("later")),
            format!("< {} done", index("gen")),
            format!("! {}", index("thrower")),
            "c boom".to_string(),
            format!("< {} 2", index("finallyOverride")),
            format!("< {} 4", index("Shape.area")),
            format!("> {} [1,[2,3]]", index("restArgs")),
            format!("> {} [4,{{\"y\":5}}]", index("withDefault")),
            format!("< {} h", index("hoisted.helper")),
        ] {
            assert!(log.lines().any(|l| l == want), "no {want:?} in\n{log}");
        }
    }
}

mod probed_program {
    use super::super::probes::{ProbedProgram, package_of, utf16_fnv};
    use std::path::{Path, PathBuf};

    fn project() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let w = |p: &str, text: &str| {
            let f = root.join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, text).unwrap();
        };
        w("app.js", "function main(a) { return a; }\n");
        w(
            "src/util.mjs",
            "export function twice(x) { return 2 * x; }\n",
        );
        w(
            "src/types.ts",
            "export function typed(x: number) { return x; }\n",
        );
        w("plain.js", "console.log('no functions, no catch');\n");
        w(
            "node_modules/pkg/index.js",
            "function inside(v) { return v; }\nmodule.exports = inside;\n",
        );
        w(
            "node_modules/pkg/node_modules/dep/index.js",
            "function deeper() {}\n",
        );
        (dir, root)
    }

    #[test]
    fn the_project_is_probed_with_a_manifest_and_packages_only_when_named() {
        let (_dir, root) = project();
        let out = root.join(".strobe-out");
        let mut p = ProbedProgram::write(&out, &root, None, &out, &[], false).unwrap();
        let app = root.join("app.js").display().to_string();
        let util = root.join("src/util.mjs").display().to_string();
        assert_eq!(p.probe_of(&app, "main", 1), Some(0));
        assert_eq!(p.probe_of(&util, "twice", 1), Some(1));
        assert!(
            !p.has_file(&root.join("src/types.ts").display().to_string()),
            "Node cannot load .ts"
        );
        assert!(
            !p.has_file(&root.join("plain.js").display().to_string()),
            "nothing to probe"
        );
        let manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap())
                .unwrap();
        assert_eq!(manifest["esm"], true, "an ES module was probed");
        let entry = &manifest["files"][&app];
        let text = std::fs::read_to_string(root.join("app.js")).unwrap();
        assert_eq!(entry["len"], text.encode_utf16().count());
        assert_eq!(entry["hash"], utf16_fnv(&text));
        assert_eq!(entry["names"], serde_json::json!([["a"]]));
        let copy = std::fs::read_to_string(out.join(entry["probed"].as_str().unwrap())).unwrap();
        assert!(copy.contains("__strobe.e(0,[a])"), "{copy}");

        // A package: its own files, not its dependencies'; numbered after.
        let pkg = root.join("node_modules/pkg");
        assert!(!p.has_package(&pkg));
        assert_eq!(p.add_package(&pkg).unwrap(), 1);
        assert!(p.has_package(&pkg));
        let inside = pkg.join("index.js").display().to_string();
        assert_eq!(p.probe_of(&inside, "inside", 1), Some(2));
        let manifest = std::fs::read_to_string(out.join("manifest.json")).unwrap();
        assert!(
            manifest.contains(&inside) && !manifest.contains("deeper"),
            "{manifest}"
        );
    }

    #[test]
    fn a_file_is_in_the_package_nearest_it() {
        let p = |s: &str| package_of(Path::new(s));
        assert_eq!(
            p("/a/node_modules/ms/index.js"),
            Some(PathBuf::from("/a/node_modules/ms"))
        );
        assert_eq!(
            p("/a/node_modules/@scope/name/lib/x.js"),
            Some(PathBuf::from("/a/node_modules/@scope/name"))
        );
        assert_eq!(
            p("/a/node_modules/x/node_modules/y/i.js"),
            Some(PathBuf::from("/a/node_modules/x/node_modules/y"))
        );
        assert_eq!(p("/a/src/app.js"), None);
    }
}

#[test]
fn a_script_starts_at_its_first_statement_that_runs() {
    let first = |text: &str, name: &str| parse_source(Path::new(name), text).first_statement_line;
    // Directives, function declarations and imports do not run there.
    assert_eq!(
        first(
            "\"use strict\";\nfunction f() {\n  return 1;\n}\nconst x = f();\n",
            "a.js"
        ),
        Some(5)
    );
    assert_eq!(
        first("import fs from \"fs\";\n\nexport const n = 1;\n", "a.mjs"),
        Some(3)
    );
    assert_eq!(
        first(
            "interface A { n: number }\ntype B = A;\nclass C {}\n",
            "a.ts"
        ),
        Some(3)
    );
    assert_eq!(first("function only() {}\n", "a.js"), None);
}

mod module_bindings {
    use super::super::instrument::probe_text;
    use super::*;
    use std::process::Command;

    #[test]
    fn top_level_bindings_are_listed_with_whether_they_can_be_set() {
        let listed = |text: &str, name: &str| {
            let p = parse_source(Path::new(name), text);
            let names: Vec<(String, bool)> = p
                .bindings
                .into_iter()
                .map(|b| (b.name, b.writable))
                .collect();
            (names, p.bindings_at)
        };
        let src = "\"use strict\";\nvar a = 1, { b, c: [d] } = {};\nlet e;\nconst f = 2;\nfunction g() { let inner; }\nclass H {}\nif (a) { let nested; }\nvar a;\n";
        let (names, at) = listed(src, "a.js");
        let want: Vec<(String, bool)> = [
            ("a", true),
            ("b", true),
            ("d", true),
            ("e", true),
            ("f", false),
            ("g", true),
            ("H", false),
        ]
        .iter()
        .map(|(n, w)| (n.to_string(), *w))
        .collect();
        assert_eq!(names, want);
        assert_eq!(
            at,
            Some("\"use strict\";".len() as u32),
            "after the directive"
        );
        let (names, at) = listed(
            "import fs, { join as j } from \"x\";\nimport * as ns from \"y\";\nexport let n = 1;\nexport default class K {}\n",
            "m.mjs",
        );
        let names: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["fs", "j", "ns", "n", "K"]);
        assert_eq!(at, Some(0));
        assert_eq!(listed("// only a comment\n", "e.js"), (vec![], None));
        // TypeScript: no imports (one may name only a type the compiler
        // drops), nothing `declare`d, no types.
        let (names, _) = listed(
            "import { Pair } from './pair';\ndeclare const g: number;\ninterface I {}\ntype T = I;\nexport const n: number = 1;\nenum E { A }\n",
            "m.ts",
        );
        let names: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["n"]);
    }

    /// A module's bindings are read and set through the reader written into
    /// its probed copy, after its code ran, on the machine's Node; a `let`
    /// not reached yet throws V8's ReferenceError.
    #[test]
    fn the_bindings_reader_reads_and_sets_a_modules_bindings_under_node() {
        let src = "\"use strict\";\nlet count = 1;\nconst limit = 5;\nfunction bump() { count++; }\nbump();\nglobalThis.early = globalThis.__strobe.read(\"late\");\nlet late = 3;\n";
        let done = probe_text(
            parse_source(Path::new("/p/counter.js"), src),
            src,
            0,
            Some("api.counter"),
        );
        assert_eq!(done.text.lines().count(), src.lines().count());
        let dir = tempfile::tempdir().unwrap();
        let (probed, runtime) = (dir.path().join("probed.js"), dir.path().join("rt.js"));
        std::fs::write(&probed, &done.text).unwrap();
        std::fs::write(
        &runtime,
        r#"const mods = {};
globalThis.__strobe = { m: new Int32Array(8), T: {}, e() { return 0; }, f() {},
  b(module, names, read, write) { mods[module] = { names, read, write }; },
  read(name) { const m = mods["api.counter"]; try { return m.read(m.names.indexOf(name)); } catch (e) { return e.name; } } };
process.on("exit", () => {
  const m = mods["api.counter"];
  const at = (n) => m.names.indexOf(n);
  const before = m.read(at("count"));
  m.write(at("count"), 41);
  m.write(at("limit"), 9);
  console.log(JSON.stringify([m.names, before, m.read(at("count")), m.read(at("limit")), m.read(at("late")), globalThis.early]));
});
"#,
    )
    .unwrap();
        let out = Command::new("node")
            .arg("--require")
            .arg(&runtime)
            .arg(&probed)
            .output()
            .expect("node runs (the test set-up installs Node 20)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            r#"[["count","limit","bump","late"],2,41,5,3,"ReferenceError"]"#,
            "{}",
            done.text
        );
    }
}
