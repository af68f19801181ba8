//! The resolver against a fixture project, with CPython itself as the
//! judge of qualnames, first lines and argument order.

use super::*;
use std::collections::BTreeSet;
use std::process::Command;

/// The `python3` on PATH. Strobe's own set-up needs one (its Frida venv), so a
/// machine without it fails these tests rather than passing them untried.
fn python3() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join("python3"))
                .find(|p| p.is_file())
        })
        .expect("no python3 on PATH: install Python 3 (apt-get install python3)")
}

const INVENTORY: &str = r#"import functools

def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper

def apply_discount(price, /, rate, *, floor=0, **opts):
    def clamp(x):
        return max(x, floor)
    return clamp(price * (1 - rate))

class Bin:
    """A storage bin."""

    def __init__(self, name, *items):
        self.name = name
        self.__items = list(items)

    @property
    def size(self):
        return len(self.__items)

    @staticmethod
    @logged
    def parse(
        text,
        sep=",",
    ):
        return text.split(sep)

    @logged
    def __private(self, __secret, *__rest, __key=None, **__more):
        return __secret

    async def fetch(self, url, *, timeout=1.0):
        return url

    def items(self):
        for i in self.__items:
            yield i

    async def stream(self):
        yield self.name

    class Label:
        def render(self, fmt="{}"):
            return fmt.format(self)

def make_counter(start):
    count = start

    class Counter:
        def bump(self, by=1):
            nonlocal count
            count += by
            return count

        def reset(self):
            def inner():
                pass
            return inner

    return Counter

def factory():
    global promoted
    def promoted(a, b):
        return a + b
    return lambda x: x

@(
    logged
)
def paren_decorated(z):
    return [y for y in range(z)]
"#;

const APP: &str = r#"import sys
from shop import inventory

def main(argv):
    print(inventory.apply_discount(10, 0.1))

if __name__ == "__main__":
    main(sys.argv)
"#;

const INIT: &str = "def version():\n    return '1.0'\n";

const BROKEN: &str =
    "def fine(a, b):\n    return a\n\ndef broken(:\n    pass\n\ndef after():\n    pass\n";

/// A project: `app.py`, package `shop` (with a broken module), a
/// virtualenv and a hidden directory whose code is not the user's.
fn fixture() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path();
    let write = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write("app.py", APP);
    write("shop/__init__.py", INIT);
    write("shop/inventory.py", INVENTORY);
    write("shop/broken.py", BROKEN);
    write("venv/pyvenv.cfg", "home = /usr/bin\n");
    write(
        "venv/lib/python3.11/site-packages/vendored.py",
        "def vendored():\n    pass\n",
    );
    write(".hidden/secret.py", "def secret():\n    pass\n");
    write("shop/__pycache__/stale.py", "def stale():\n    pass\n");
    tmp
}

fn open(python: &Path, root: &Path, args: &[&str]) -> PythonResolver {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    PythonResolver::open(&Image {
        path: python,
        kind: ImageKind::Program,
        project_root: root,
        args: &args,
        env: &[],
    })
}

fn resolve(r: &PythonResolver, pattern: &str) -> Vec<String> {
    let p = Pattern::parse(pattern).expect("valid pattern");
    let mut names: Vec<String> = r
        .resolve_pattern(&p, Path::new("/"))
        .targets
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    names
}

/// (qualname, co_firstlineno, argument names) of every function CPython
/// compiles from `file`: code objects found through `co_consts`, without
/// lambdas, comprehensions and class bodies.
fn cpython_functions(python: &Path, file: &Path) -> BTreeSet<(String, u32, Vec<String>)> {
    let script = r#"
import sys
path = sys.argv[1]
code = compile(open(path, encoding="utf-8").read(), path, "exec")
def walk(c):
    for k in c.co_consts:
        if hasattr(k, "co_code"):
            is_function = k.co_flags & 0x2 and not k.co_name.startswith("<")
            if is_function:
                n = k.co_argcount + k.co_kwonlyargcount + bool(k.co_flags & 0x4) + bool(k.co_flags & 0x8)
                print(k.co_qualname, k.co_firstlineno, *k.co_varnames[:n], sep="\t")
            walk(k)
walk(code)
"#;
    let out = Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(file)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let mut f = l.split('\t');
            let q = f.next().unwrap().to_string();
            let line = f.next().unwrap().parse().unwrap();
            (q, line, f.map(str::to_string).collect())
        })
        .collect()
}

fn ours(r: &PythonResolver, file: &Path) -> BTreeSet<(String, u32, Vec<String>)> {
    let file = file.to_string_lossy();
    r.functions()
        .map(|(_, f)| f)
        .filter(|f| f.file == file)
        .map(|f| (f.qualname.clone(), f.line, f.parameters.clone()))
        .collect()
}

#[test]
fn functions_match_what_cpython_compiles() {
    let python = python3();
    let tmp = fixture();
    let root = canonical(tmp.path());
    let r = open(&python, &root, &["-u", "app.py", "--verbose"]);
    assert_eq!(r.program(), &Program::Script("app.py".into()));
    for rel in ["app.py", "shop/__init__.py", "shop/inventory.py"] {
        let file = root.join(rel);
        let expected = cpython_functions(&python, &file);
        assert!(!expected.is_empty());
        assert_eq!(ours(&r, &file), expected, "{rel}");
    }
    // What the agent is given for one of them.
    let i = r
        .functions()
        .find(|(_, f)| f.name == "shop.inventory.Bin.parse")
        .map(|(i, _)| i)
        .expect("indexed");
    let info = r.function(i).unwrap();
    assert_eq!(info.name_raw, Some("Bin.parse"));
    assert_eq!(
        info.file,
        Some(root.join("shop/inventory.py").to_str().unwrap())
    );
    assert_eq!(r.parameters(i), ["text", "sep"]);
    let f = r.python_function(i).unwrap();
    assert_eq!((f.line, f.def_line), (25, 27));
    let flags = |name: &str| {
        let f = r.functions().find(|(_, f)| f.name == name).unwrap().1;
        (f.is_async, f.is_generator)
    };
    assert_eq!(flags("shop.inventory.Bin.fetch"), (true, false));
    assert_eq!(flags("shop.inventory.Bin.items"), (false, true));
    assert_eq!(flags("shop.inventory.Bin.stream"), (true, true));
    assert!(r.function(r.functions().count()).is_none());
}

#[test]
fn patterns_use_dotted_names() {
    let python = python3();
    let tmp = fixture();
    let r = open(&python, tmp.path(), &["app.py"]);
    assert_eq!(resolve(&r, "app.main"), ["app.main"], "the script is `app`");
    assert_eq!(resolve(&r, "shop.version"), ["shop.version"]);
    assert_eq!(
        resolve(&r, "shop.inventory.Bin.*"),
        [
            "shop.inventory.Bin.__init__",
            "shop.inventory.Bin.__private",
            "shop.inventory.Bin.fetch",
            "shop.inventory.Bin.items",
            "shop.inventory.Bin.parse",
            "shop.inventory.Bin.size",
            "shop.inventory.Bin.stream",
        ]
    );
    assert_eq!(
        resolve(&r, "shop.inventory.make_counter.<locals>.Counter.*"),
        [
            "shop.inventory.make_counter.<locals>.Counter.bump",
            "shop.inventory.make_counter.<locals>.Counter.reset",
        ]
    );
    assert_eq!(
        resolve(&r, "shop.**.inner"),
        ["shop.inventory.make_counter.<locals>.Counter.reset.<locals>.inner"]
    );
    assert_eq!(
        resolve(&r, "*.main"),
        ["app.main"],
        "`*` stays in one segment"
    );
    assert_eq!(
        resolve(&r, "shop.inventory.promoted"),
        ["shop.inventory.promoted"]
    );
    assert!(resolve(&r, "shop::inventory::apply_discount").is_empty());
    assert_eq!(resolve(&r, "@file:app.py"), ["app.main"]);

    let user = resolve(&r, "@usercode");
    assert!(user.contains(&"shop.broken.fine".to_string()));
    assert!(user.contains(&"shop.inventory.Bin.Label.render".to_string()));
    for outside in ["vendored", "secret", "stale"] {
        assert!(
            !user.iter().any(|n| n.contains(outside)),
            "{outside} is not user code: {user:?}"
        );
    }
}

#[test]
fn a_syntax_error_costs_only_the_broken_functions() {
    let python = python3();
    let tmp = fixture();
    let r = open(&python, tmp.path(), &["app.py"]);
    assert_eq!(
        resolve(&r, "shop.broken.*"),
        ["shop.broken.after", "shop.broken.fine"]
    );
    let warnings = r.warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("broken.py") && w.contains("line 4")),
        "{warnings:?}"
    );
}

#[test]
fn modules_outside_the_project_load_when_named() {
    let python = python3();
    let tmp = fixture();
    let r = open(&python, tmp.path(), &["-m", "app"]);
    assert_eq!(r.program(), &Program::Module("app".into()));
    // Globs without a module prefix see only what is parsed: no stdlib.
    assert!(resolve(&r, "**").iter().all(|n| !n.starts_with("json.")));
    assert!(resolve(&r, "**.decode").is_empty());

    assert_eq!(
        resolve(&r, "json.decoder.JSONDecoder.decode"),
        ["json.decoder.JSONDecoder.decode"]
    );
    let out = Command::new(&python)
        .args([
            "-c",
            "import json.decoder as d; c = d.JSONDecoder.decode.__code__; print(c.co_filename, c.co_firstlineno)",
        ])
        .output()
        .unwrap();
    let answer = String::from_utf8(out.stdout).unwrap();
    let (file, line) = answer.trim().rsplit_once(' ').unwrap();
    let i = r
        .functions()
        .find(|(_, f)| f.name == "json.decoder.JSONDecoder.decode")
        .unwrap()
        .0;
    let info = r.function(i).unwrap();
    assert_eq!(
        info.file,
        Some(canonical(Path::new(file)).to_str().unwrap())
    );
    assert_eq!(info.line, Some(line.parse().unwrap()));
    assert_eq!(r.parameters(i), ["self", "s", "_w"]);

    let package = resolve(&r, "json.**");
    for name in [
        "json.dumps",
        "json.encoder.JSONEncoder.encode",
        "json.scanner.py_make_scanner.<locals>._scan_once",
    ] {
        assert!(package.contains(&name.to_string()), "{name}: {package:?}");
    }
    let user = resolve(&r, "@usercode");
    assert!(!user.is_empty());
    assert!(user.iter().all(|n| !n.starts_with("json.")), "{user:?}");
    assert!(resolve(&r, "nosuchmodule.**").is_empty());
}

#[test]
fn without_an_answer_from_the_interpreter_names_follow_the_script() {
    let tmp = fixture();
    let missing = tmp.path().join("bin/python3");
    let r = open(&missing, tmp.path(), &["shop/inventory.py"]);
    let root = canonical(tmp.path());
    assert_eq!(r.search_path(), [root.join("shop"), root.clone()]);
    assert!(r.warnings()[0].contains("cannot run"), "{:?}", r.warnings());
    // The script's directory comes first, as `python shop/inventory.py` has it.
    assert_eq!(resolve(&r, "inventory.Bin.size"), ["inventory.Bin.size"]);
    assert_eq!(resolve(&r, "app.main"), ["app.main"]);
}

#[test]
fn the_registry_opens_it_on_interpreters_only() {
    let tmp = fixture();
    let image = |path: &'static str, kind| Image {
        path: Path::new(path),
        kind,
        project_root: tmp.path(),
        args: &[],
        env: &[],
    };
    let python = |path, kind| {
        crate::resolvers::open(&image(path, kind), None, Some(Language::Python))
            .into_iter()
            .map(|r| r.expect("opens").name())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        python("/nonexistent/python3.11", ImageKind::Program),
        ["python-source"]
    );
    assert!(python("/nonexistent/python3.11", ImageKind::Library).is_empty());
    assert!(python("/nonexistent/libpython3.11.so", ImageKind::Program).is_empty());
}

#[test]
fn interpreter_names() {
    for yes in ["python", "python3", "python3.11", "/usr/bin/python3.12"] {
        assert!(is_interpreter(Path::new(yes)), "{yes}");
    }
    for no in [
        "pythonw",
        "python3.",
        "python3-config",
        "ipython",
        "python3.11d",
        "node",
    ] {
        assert!(!is_interpreter(Path::new(no)), "{no}");
    }
}

#[test]
fn arguments_name_the_program() {
    let parse = |args: &[&str]| parse_args(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>());
    let script = |p: &str| Program::Script(p.into());
    assert_eq!(parse(&["app.py", "-m", "x"]).0, script("app.py"));
    assert_eq!(parse(&["-u", "-W", "ignore", "app.py"]).0, script("app.py"));
    assert_eq!(parse(&["-Wignore", "-X", "dev", "dir"]).0, script("dir"));
    assert_eq!(
        parse(&["-m", "pkg.main", "a.py"]).0,
        Program::Module("pkg.main".into())
    );
    assert_eq!(
        parse(&["-uBmpkg.main"]).0,
        Program::Module("pkg.main".into())
    );
    assert_eq!(parse(&["-c", "print(1)", "a.py"]).0, Program::Command);
    assert_eq!(
        parse(&["--check-hash-based-pycs", "always", "a.py"]).0,
        script("a.py")
    );
    assert_eq!(parse(&["-", "a.py"]).0, Program::Interactive);
    assert_eq!(parse(&["-i"]).0, Program::Interactive);
    assert_eq!(parse(&["--", "-odd.py"]).0, script("-odd.py"));
    let (p, flags) = parse(&["-Is", "-E", "app.py", "-S"]);
    assert_eq!(p, script("app.py"));
    assert_eq!(flags, ["-I", "-s", "-E"]);
}

#[test]
fn dotted_patterns_keep_star_within_a_segment() {
    let m = |p: &str, name: &str| {
        dotted_pattern(p).is_some_and(|p| p.matches(&name.replace('.', "::"), None, Path::new("/")))
    };
    assert!(m("inventory.apply", "inventory.apply"));
    assert!(m("inventory.Bin.*", "inventory.Bin.add"));
    assert!(!m("inventory.Bin.*", "inventory.Bin.Label.render"));
    assert!(m("inventory.**", "inventory.Bin.Label.render"));
    assert!(m("app.**.g", "app.f.<locals>.g"));
    assert!(m("app.f.<locals>.*", "app.f.<locals>.g"));
    assert!(!m("app.f.*", "app.f.<locals>.g"));
    assert!(m("*", "main") && !m("*", "app.main"));
    assert!(dotted_pattern("a::b").is_none());
    assert!(dotted_pattern(".a").is_none());
}

#[test]
fn native_syntax_is_pointed_out() {
    assert_eq!(
        native_syntax_hint("inventory::apply").as_deref(),
        Some(
            "\"inventory::apply\" is native (C/C++/Rust) syntax; Python functions are named with dots: \"inventory.apply\""
        )
    );
    assert_eq!(native_syntax_hint("inventory.apply"), None);
    assert_eq!(native_syntax_hint("@file:a::b"), None);
}

#[test]
fn module_names_come_from_the_longest_search_path_entry() {
    let sp = [
        PathBuf::from("/p/src"),
        PathBuf::from("/usr/lib/python3.11"),
    ];
    let root = Path::new("/p");
    let name = |f: &str| module_name(Path::new(f), &sp, root);
    assert_eq!(name("/p/src/app.py"), "app");
    assert_eq!(name("/p/src/pkg/__init__.py"), "pkg");
    assert_eq!(name("/p/src/pkg/sub/mod.py"), "pkg.sub.mod");
    assert_eq!(name("/p/tests/test_x.py"), "tests.test_x");
    assert_eq!(name("/usr/lib/python3.11/json/decoder.py"), "json.decoder");
}
