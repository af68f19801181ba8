//! Load-time instrumentation of one JavaScript file: every named function
//! (as `parse.rs` names them) gets a probe, so tracing it later only flips
//! a bit, with no reload (agent/src/tracers/javascript/ has the other end).
//!
//! A probed function, with probe index `P` (bit `B` of word `W` of the
//! enabled bitmap):
//!
//! ```js
//! function f(a, {b}) {var __sc=__strobe.m[W]&B?__strobe.e(P,[a, {b}]):0,__sv=__sc&&__strobe.T;try{
//!     …body, each own `return X` written `return __sv=(X)`…
//! ;__sv=void 0;}finally{if(__sc)__strobe.f(P,__sc,__sv)}}
//! ```
//!
//! Why this shape:
//! - An untraced call costs one typed-array load and a test; the arguments
//!   array is only built when the bit is set. `arguments` is never touched:
//!   a function that mentions it allocates it on every call.
//! - `try`/`finally` sees every way out: a return (`__sv` holds what was
//!   returned without evaluating it twice), falling off the end, and a
//!   throw (`__sv` still holds the runtime's marker `__strobe.T`), and for
//!   a generator its end after the last `yield`.
//! - A synchronous function has no `catch`: rethrowing moves the place V8
//!   reports an uncaught exception at (Node prints that source line), so
//!   the program's own error output would change. What was thrown is
//!   recorded where the program catches it instead: every `catch` clause
//!   of a probed file starts with `__strobe.c(e);` (`catch {` gets a
//!   binding for it), and the runtime watches uncaught exceptions.
//! - An async function does catch (a rejection is reported from the
//!   error's stack, not from where it was thrown): `__strobe.xa` records
//!   the rejection with its value when the promise settles. Async
//!   functions and generators call `__strobe.a` and `fa`: their enter and
//!   exit pair by the call's token, not by the thread's stack.
//! - Text is only inserted, never on a new line: line numbers in stack
//!   traces stay those of the file (columns move on the probed lines).
//! - The probe goes after a body's directives (`"use strict"` must stay
//!   first) and turns an expression body into a block.

use super::bindings::TopBinding;
use super::parse::{ParsedFile, ParsedFunction, ProbeSite, parse_source};
use std::path::Path;

/// The global the probes call: the Node runtime (the preload) defines it.
pub const RUNTIME_GLOBAL: &str = "__strobe";
/// Probe indices per session (bits of the enabled bitmap).
pub const MAX_PROBES: u32 = 1 << 18;

/// A file with its probes written in.
#[derive(Debug)]
pub struct Instrumented {
    /// The new text (the original when nothing was probed).
    pub text: String,
    /// The probed functions: function `i` has probe index `first + i`.
    pub functions: Vec<ParsedFunction>,
    /// Why the file was left as it was, when it was.
    pub skipped: Option<String>,
}

/// One insertion: at byte `at`, `text`; `len` is the length of the
/// construct the text opens or closes (the order at one offset: see
/// `probe_text`).
struct Insert {
    at: u32,
    opens: bool,
    len: u32,
    text: String,
}

/// Writes probes into `text` (the file at `path`; its extension says
/// JavaScript or TypeScript), numbering them from `first`. A file with a
/// syntax error, or whose probes would pass [`MAX_PROBES`], is left as it
/// is.
pub fn instrument(path: &Path, text: &str, first: u32) -> Instrumented {
    probe_text(parse_source(path, text), text, first, None)
}

/// [`instrument`] on a file already parsed (`parsed` is `text`'s); with
/// `module`, the file also tells the runtime its top-level bindings under
/// that module name ([`bindings_reader`]).
pub fn probe_text(
    parsed: ParsedFile,
    text: &str,
    first: u32,
    module: Option<&str>,
) -> Instrumented {
    let left = |why: String| Instrumented {
        text: text.to_string(),
        functions: Vec::new(),
        skipped: Some(why),
    };
    if let Some((error, _)) = parsed.syntax_error {
        return left(format!("syntax error ({error})"));
    }
    if first as usize + parsed.functions.len() > MAX_PROBES as usize {
        return left(format!(
            "more than {MAX_PROBES} functions probed in one session"
        ));
    }
    let mut inserts = Vec::new();
    for (i, f) in parsed.functions.iter().enumerate() {
        probe(first + i as u32, f, text, &mut inserts);
    }
    for c in &parsed.catches {
        let name = match (&c.binding, c.has_binding) {
            (Some(name), _) => name.clone(),
            // A destructured binding: the value itself is not at hand.
            (None, true) => continue,
            (None, false) => {
                inserts.push(Insert {
                    at: c.keyword_end,
                    opens: true,
                    len: 0,
                    text: " (__sce)".into(),
                });
                "__sce".into()
            }
        };
        inserts.push(Insert {
            at: c.body_start,
            opens: true,
            len: 0,
            text: format!("{RUNTIME_GLOBAL}.c({name});"),
        });
    }
    if let (Some(module), Some(at)) = (module, parsed.bindings_at)
        && !parsed.bindings.is_empty()
    {
        inserts.push(Insert {
            at,
            opens: true,
            len: 0,
            text: bindings_reader(module, &parsed.bindings),
        });
    }
    // At one offset: what closes there (innermost first), then what is
    // empty there (an empty body `{}`: its own opening before its closing,
    // as pushed; the sort is stable), then what opens there (outermost
    // first).
    let rank = |i: &Insert| match (i.len, i.opens) {
        (0, _) => 1,
        (_, false) => 0,
        (_, true) => 2,
    };
    inserts.sort_by(|a, b| {
        a.at.cmp(&b.at)
            .then(rank(a).cmp(&rank(b)))
            .then(if a.opens {
                b.len.cmp(&a.len)
            } else {
                a.len.cmp(&b.len)
            })
    });
    let extra: usize = inserts.iter().map(|i| i.text.len()).sum();
    let mut out = String::with_capacity(text.len() + extra);
    let mut from = 0usize;
    for i in &inserts {
        let at = i.at as usize;
        out.push_str(&text[from..at]);
        out.push_str(&i.text);
        from = at;
    }
    out.push_str(&text[from..]);
    Instrumented {
        text: out,
        functions: parsed.functions,
        skipped: None,
    }
}

/// The statement that gives the runtime a module's top-level bindings:
///
/// ```js
/// ;__strobe.b("orders",["a","b"],function(__sb){switch(__sb){case 0:return a;case 1:return b}},
///   function(__sb,__sbv){switch(__sb){case 0:a=__sbv;return}});
/// ```
///
/// `debug_memory` reads `orders.a` while the program runs through the
/// reader (a `let` not reached yet throws V8's ReferenceError, which the
/// runtime reports as such); the writer sets only the writable ones. The
/// closures keep the bindings alive (V8 allocates them in the module's
/// context rather than on the stack): that is what makes them readable
/// after the module's code returned, and all it costs.
fn bindings_reader(module: &str, bindings: &[TopBinding]) -> String {
    let g = RUNTIME_GLOBAL;
    let quote = |s: &str| serde_json::to_string(s).expect("a string serializes");
    let names: Vec<String> = bindings.iter().map(|b| quote(&b.name)).collect();
    let mut read = String::new();
    let mut write = String::new();
    for (i, b) in bindings.iter().enumerate() {
        read.push_str(&format!("case {i}:return {};", b.name));
        if b.writable {
            write.push_str(&format!("case {i}:{}=__sbv;return;", b.name));
        }
    }
    format!(
        ";{g}.b({},[{}],function(__sb){{switch(__sb){{{read}}}}},function(__sb,__sbv){{switch(__sb){{{write}}}}});",
        quote(module),
        names.join(",")
    )
}

/// The insertions of one function's probe.
fn probe(index: u32, f: &ParsedFunction, text: &str, out: &mut Vec<Insert>) {
    let ProbeSite {
        body_start,
        body_end,
        expression_body,
        returns,
        arguments,
    } = &f.site;
    let g = RUNTIME_GLOBAL;
    let (word, bit) = (index / 32, (1u32 << (index % 32)) as i32);
    let (enter, exit) = if f.is_async || f.is_generator {
        ("a", "fa")
    } else {
        ("e", "f")
    };
    let mut open = format!(
        "var __sc={g}.m[{word}]&{bit}?{g}.{enter}({index},{arguments}):0,__sv=__sc&&{g}.T;try{{"
    );
    let catch = if f.is_async {
        format!("catch(__sx){{if(__sc){{{g}.xa({index},__sc,__sx);__sc=0}}throw __sx}}")
    } else {
        String::new()
    };
    let mut close =
        format!(";__sv=void 0;}}{catch}finally{{if(__sc){g}.{exit}({index},__sc,__sv)}}");
    if *expression_body {
        open = format!("{{{open}return __sv=(");
        close = format!(")}}{catch}finally{{if(__sc){g}.{exit}({index},__sc,__sv)}}}}");
    }
    let len = body_end.saturating_sub(*body_start);
    out.push(Insert {
        at: *body_start,
        opens: true,
        len,
        text: open,
    });
    out.push(Insert {
        at: *body_end,
        opens: false,
        len,
        text: close,
    });
    for r in returns {
        match r.argument {
            Some((start, end)) => {
                let len = end - start;
                out.push(Insert {
                    at: start,
                    opens: true,
                    len,
                    text: "__sv=(".into(),
                });
                out.push(Insert {
                    at: end,
                    opens: false,
                    len,
                    text: ")".into(),
                });
            }
            None => {
                // `return;` keeps its `;`; `return` ended by a newline or a
                // `}` gets one, so what follows is never read as its value
                // (oxc's span of `return⏎;` reaches the `;` on the next line).
                let keyword_end = r.start as usize + "return".len();
                let with_semicolon = text.as_bytes().get(r.end as usize - 1) == Some(&b';')
                    && !text[keyword_end..r.end as usize].contains('\n');
                let (at, text) = if with_semicolon {
                    (r.end - 1, " __sv=void 0")
                } else {
                    (keyword_end as u32, " __sv=void 0;")
                };
                out.push(Insert {
                    at,
                    opens: false,
                    len: 0,
                    text: text.into(),
                });
            }
        }
    }
}
