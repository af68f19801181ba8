//! The names a JavaScript file declares at its top level (its module's
//! bindings), so `debug_memory` can read them while the program runs:
//! `instrument.rs` writes a reader for them into the file's probed copy.
//!
//! Listed: `var`/`let`/`const` (each name a destructuring binds),
//! function and class declarations, `export`ed ones alike, and the local
//! names of `import`s. Not listed: a `var` inside a top-level block (it is
//! hoisted, but rare enough not to be worth a walk), TypeScript-only
//! declarations and `declare`d ones (nothing at run time), and in
//! TypeScript the imports: one may name only a type, which the compiler
//! drops, and a reader that named it would keep the import and fail to
//! link.

use oxc_ast::ast::{
    Declaration, ExportDefaultDeclarationKind, Program, Statement, VariableDeclaration,
    VariableDeclarationKind,
};
use oxc_span::GetSpan;

/// One top-level binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopBinding {
    /// Its name.
    pub name: String,
    /// It can be assigned (`var`, `let`, a function); `const`, a class
    /// and an import cannot (V8 throws, or the parser refuses).
    pub writable: bool,
}

/// The top-level bindings of `program`, each name once, in source order,
/// and the byte offset a statement can be inserted at before the rest of
/// the program runs: after the directives (`"use strict"` must stay
/// first), else at the first statement. `None` when there is none.
pub fn top_level(program: &Program<'_>) -> (Vec<TopBinding>, Option<u32>) {
    let mut out: Vec<TopBinding> = Vec::new();
    let mut add = |name: &str, writable: bool| {
        if !out.iter().any(|b| b.name == name) {
            out.push(TopBinding {
                name: name.to_string(),
                writable,
            });
        }
    };
    let typescript = program.source_type.is_typescript();
    for st in &program.body {
        match st {
            Statement::VariableDeclaration(v) if !v.declare => variables(v, &mut add),
            Statement::FunctionDeclaration(f) if !f.declare => {
                if let Some(id) = &f.id {
                    add(&id.name, true);
                }
            }
            Statement::ClassDeclaration(c) if !c.declare => {
                if let Some(id) = &c.id {
                    add(&id.name, false);
                }
            }
            Statement::ImportDeclaration(i) if !typescript => {
                for s in i.specifiers.iter().flatten() {
                    add(&s.local().name, false);
                }
            }
            Statement::ExportDeclaration(e) => match &e.declaration {
                Declaration::VariableDeclaration(v) if !v.declare => variables(v, &mut add),
                Declaration::FunctionDeclaration(f) if !f.declare => {
                    if let Some(id) = &f.id {
                        add(&id.name, true);
                    }
                }
                Declaration::ClassDeclaration(c) if !c.declare => {
                    if let Some(id) = &c.id {
                        add(&id.name, false);
                    }
                }
                _ => {}
            },
            Statement::ExportDefaultDeclaration(e) => match &e.declaration {
                ExportDefaultDeclarationKind::FunctionDeclaration(f) => {
                    if let Some(id) = &f.id {
                        add(&id.name, true);
                    }
                }
                ExportDefaultDeclarationKind::ClassDeclaration(c) => {
                    if let Some(id) = &c.id {
                        add(&id.name, false);
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    let at = match program.directives.last() {
        Some(d) => Some(d.span.end),
        None => program.body.first().map(|st| st.span().start),
    };
    (out, at)
}

/// The names a declaration binds (`using` ones are not assignable).
fn variables(v: &VariableDeclaration<'_>, add: &mut impl FnMut(&str, bool)) {
    let writable = matches!(
        v.kind,
        VariableDeclarationKind::Var | VariableDeclarationKind::Let
    );
    for d in &v.declarations {
        for id in d.id.get_binding_identifiers() {
            add(&id.name, writable);
        }
    }
}
