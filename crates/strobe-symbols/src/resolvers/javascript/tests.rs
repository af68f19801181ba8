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
    assert!(
        super::super::open(&image, None, None).iter().any(|o| o
            .as_ref()
            .is_ok_and(|r| r.language() == Language::JavaScript)),
        "registered"
    );
}
