//! One JavaScript or TypeScript source file → its named functions, with
//! oxc's parser. A function's name within its module (its "qualname") is
//! the chain of named scopes around it:
//!
//! - declarations: `function f` → `f`, nested in `g` → `g.f`;
//! - classes: `class Router { handle() {} }` → `Router.handle` (static
//!   methods, the constructor, private methods `Router.#check` alike);
//!   accessors take the name JavaScript gives them (`Router.get size`,
//!   `Router.set size`); a class field holding a function
//!   (`onError = () => {}`) is `Router.onError`;
//! - functions bound to a name: `const f = () => {}` and `let f =
//!   function () {}` → `f` (the binding, as V8 names them), object literal
//!   members `const api = { get() {} }` → `api.get`, assignments
//!   `exports.f = …` and `module.exports.f = …` → `f`, `X.prototype.m = …`
//!   → `X.m`, `obj.m = …` → `obj.m`;
//! - `export default function () {}` → `default`.
//!
//! Anonymous functions (callbacks) are not listed, and add no level to the
//! names of the functions inside them. Overload signatures and other
//! declarations without a body are left out.

use super::bindings::{TopBinding, top_level};
use oxc_allocator::Allocator;
use oxc_ast::ast::{
    ArrowFunctionBody, ArrowFunctionExpression, AssignmentExpression, AssignmentTarget,
    BindingPattern, CatchClause, Class, ExportDefaultDeclaration, ExportDefaultDeclarationKind,
    Expression, FormalParameters, Function, FunctionBody, MethodDefinition, MethodDefinitionKind,
    ObjectProperty, PropertyDefinition, PropertyKey, PropertyKind, ReturnStatement, Statement,
    VariableDeclarator,
};
use oxc_ast_visit::{Visit, walk};
use oxc_parser::Parser;
use oxc_span::GetSpan;
use oxc_span::{SourceType, Span};
use oxc_syntax::scope::ScopeFlags;
use std::path::Path;

/// A named function of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedFunction {
    /// Its name within the module (`Router.handle`).
    pub qualname: String,
    /// 1-based line where it starts (for a method, its name's line).
    pub line: u32,
    /// 1-based column there (bytes).
    pub column: u32,
    /// `async`.
    pub is_async: bool,
    /// A generator (`function*`).
    pub is_generator: bool,
    /// Its parameters' names (`{…}`/`[…]` for a destructured one, the
    /// rest parameter's name for `...rest`).
    pub parameters: Vec<String>,
    /// Where a probe goes in its source (`instrument.rs`).
    pub site: ProbeSite,
}

/// The places in a function's source a probe is written into: byte
/// offsets into the file's text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProbeSite {
    /// Where the body's code starts: after `{` and any directives (`"use
    /// strict"` must stay first), or an arrow's expression body.
    pub body_start: u32,
    /// Where it ends: the closing `}`, or the end of the expression.
    pub body_end: u32,
    /// The body is an expression (`x => x + 1`).
    pub expression_body: bool,
    /// The `return` statements of this function (not of functions inside it).
    pub returns: Vec<ReturnSite>,
    /// A JavaScript array literal of the parameters' values as the body
    /// sees them: `[a, {b, c}, rest]` (a destructured parameter as an
    /// object or array of the names it binds).
    pub arguments: String,
}

/// A `return` statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReturnSite {
    /// The statement's span.
    pub start: u32,
    /// Its end (after the `;` when it has one).
    pub end: u32,
    /// The returned expression's span, when there is one.
    pub argument: Option<(u32, u32)>,
}

/// A `catch` clause: where a thrown value is seen (`instrument.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatchSite {
    /// Just after the `catch` keyword (where `catch {` gets a binding).
    pub keyword_end: u32,
    /// Just after the body's `{`.
    pub body_start: u32,
    /// The name the clause binds the thrown value to; `None` for `catch
    /// {` and for a destructured binding.
    pub binding: Option<String>,
    /// The clause has a binding (`catch (e)` or `catch ({ message })`).
    pub has_binding: bool,
}

/// What a file gave.
#[derive(Debug, Default)]
pub struct ParsedFile {
    /// Its named functions, in source order.
    pub functions: Vec<ParsedFunction>,
    /// Its `catch` clauses, in source order.
    pub catches: Vec<CatchSite>,
    /// The first syntax error (`line N: message`) and how many there were.
    pub syntax_error: Option<(String, usize)>,
    /// It ends with a `//# sourceMappingURL=` comment: compiled output.
    pub has_source_map: bool,
    /// It is an ES module (`import`/`export` declarations).
    pub is_module: bool,
    /// The 1-based line of its first top-level statement that runs (not a
    /// function declaration, an import or a type): where it starts.
    pub first_statement_line: Option<u32>,
    /// Its top-level bindings (`bindings.rs`).
    pub bindings: Vec<TopBinding>,
    /// Where a statement goes that runs before the rest of the file.
    pub bindings_at: Option<u32>,
}

/// Parses `text`, a file named `path` (its extension decides JavaScript
/// or TypeScript, script or module, JSX or not).
pub fn parse_source(path: &Path, text: &str) -> ParsedFile {
    let source_type = SourceType::from_path(path).unwrap_or_else(|_| SourceType::mjs());
    let allocator = Allocator::default();
    let ret = Parser::new(&allocator, text, source_type).parse();
    let lines = LineIndex::new(text);
    let mut namer = Namer {
        lines: &lines,
        scopes: Vec::new(),
        pending: None,
        frames: Vec::new(),
        out: Vec::new(),
        catches: Vec::new(),
    };
    namer.visit_program(&ret.program);
    let errors: Vec<_> = ret.diagnostics.errors().collect();
    let syntax_error = errors.first().map(|e| {
        let at = e.labels.first().map(|l| lines.line(l.offset()));
        let place = at.map_or(String::new(), |l| format!("line {l}: "));
        (format!("{place}{}", e.message), errors.len())
    });
    let (bindings, bindings_at) = top_level(&ret.program);
    let first_statement_line = ret
        .program
        .body
        .iter()
        .find(|st| {
            !matches!(
                st,
                Statement::FunctionDeclaration(_)
                    | Statement::ImportDeclaration(_)
                    | Statement::EmptyStatement(_)
                    | Statement::TSInterfaceDeclaration(_)
                    | Statement::TSTypeAliasDeclaration(_)
            )
        })
        .map(|st| lines.line(st.span().start));
    ParsedFile {
        first_statement_line,
        bindings,
        bindings_at,
        is_module: ret.module_record.has_module_syntax,
        functions: namer.out,
        catches: namer.catches,
        syntax_error,
        has_source_map: text
            .trim_end()
            .lines()
            .next_back()
            .is_some_and(|l| l.starts_with("//# sourceMappingURL=")),
    }
}

/// Byte offset → 1-based line.
struct LineIndex {
    starts: Vec<u32>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i as u32 + 1),
        );
        LineIndex { starts }
    }

    fn line(&self, offset: u32) -> u32 {
        self.starts.partition_point(|s| *s <= offset) as u32
    }

    /// Byte offset → 1-based column.
    fn column(&self, offset: u32) -> u32 {
        let line = self.line(offset) as usize;
        offset - self.starts[line - 1] + 1
    }
}

/// Walks a file keeping the chain of named scopes.
struct Namer<'l> {
    lines: &'l LineIndex,
    /// Names of the enclosing named functions and classes.
    scopes: Vec<String>,
    /// The name (and where it was given) for the function or class the
    /// walk reaches next, from the binding, property or assignment that
    /// holds it.
    pending: Option<(String, Span)>,
    /// The functions the walk is in, innermost last: the index in `out`
    /// of a listed one, `None` for an anonymous one (its `return`s are
    /// its own).
    frames: Vec<Option<usize>>,
    out: Vec<ParsedFunction>,
    catches: Vec<CatchSite>,
}

impl Namer<'_> {
    fn qualify(&self, name: &str) -> String {
        let mut q = self.scopes.join(".");
        if !q.is_empty() {
            q.push('.');
        }
        q.push_str(name);
        q
    }

    /// Lists a function; returns its index in `out`.
    fn add(
        &mut self,
        name: &str,
        at: Span,
        is_async: bool,
        is_generator: bool,
        params: &FormalParameters<'_>,
        site: ProbeSite,
    ) -> usize {
        let qualname = self.qualify(name);
        self.out.push(ParsedFunction {
            qualname,
            line: self.lines.line(at.start),
            column: self.lines.column(at.start),
            is_async,
            is_generator,
            parameters: parameter_names(params),
            site: ProbeSite {
                arguments: argument_values(params),
                ..site
            },
        });
        self.out.len() - 1
    }

    /// Names the function or class an expression is, if it is one.
    fn name_next(&mut self, value: &Expression<'_>, name: String, at: Span) {
        if is_named_target(value) {
            self.pending = Some((name, at));
        }
    }
}

/// A function or class expression (through parentheses and TypeScript's
/// `as`/`satisfies`).
fn is_named_target(e: &Expression<'_>) -> bool {
    match e.without_parentheses() {
        Expression::FunctionExpression(_)
        | Expression::ArrowFunctionExpression(_)
        | Expression::ClassExpression(_) => true,
        Expression::TSAsExpression(x) => is_named_target(&x.expression),
        Expression::TSSatisfiesExpression(x) => is_named_target(&x.expression),
        _ => false,
    }
}

fn key_name(key: &PropertyKey<'_>) -> Option<String> {
    match key {
        PropertyKey::PrivateIdentifier(id) => Some(format!("#{}", id.name)),
        _ => key.static_name().map(|n| n.into_owned()),
    }
}

/// A block body's probe site (after its directives).
fn block_site(body: &FunctionBody<'_>) -> ProbeSite {
    let start = body
        .directives
        .last()
        .map_or(body.span.start + 1, |d| d.span.end);
    ProbeSite {
        body_start: start,
        body_end: body.span.end.saturating_sub(1),
        ..ProbeSite::default()
    }
}

/// An arrow function's probe site.
fn arrow_site(it: &ArrowFunctionExpression<'_>) -> ProbeSite {
    match &it.body {
        ArrowFunctionBody::FunctionBody(body) => block_site(body),
        e => ProbeSite {
            body_start: e.span().start,
            body_end: e.span().end,
            expression_body: true,
            ..ProbeSite::default()
        },
    }
}

/// See [`ProbeSite::arguments`].
fn argument_values(params: &FormalParameters<'_>) -> String {
    fn value(p: &BindingPattern<'_>) -> String {
        match p {
            BindingPattern::BindingIdentifier(id) => id.name.to_string(),
            BindingPattern::AssignmentPattern(a) => value(&a.left),
            BindingPattern::ObjectPattern(_) | BindingPattern::ArrayPattern(_) => {
                let names: Vec<String> = p
                    .get_binding_identifiers()
                    .iter()
                    .map(|id| id.name.to_string())
                    .collect();
                let (open, close) = match p {
                    BindingPattern::ArrayPattern(_) => ('[', ']'),
                    _ => ('{', '}'),
                };
                format!("{open}{}{close}", names.join(", "))
            }
        }
    }
    let mut values: Vec<String> = params.items.iter().map(|p| value(&p.pattern)).collect();
    if let Some(rest) = &params.rest {
        values.push(value(&rest.rest.argument));
    }
    format!("[{}]", values.join(", "))
}

fn parameter_names(params: &FormalParameters<'_>) -> Vec<String> {
    let one = |p: &BindingPattern<'_>| match p {
        BindingPattern::BindingIdentifier(id) => id.name.to_string(),
        BindingPattern::ObjectPattern(_) => "{…}".into(),
        BindingPattern::ArrayPattern(_) => "[…]".into(),
        BindingPattern::AssignmentPattern(a) => match &a.left {
            BindingPattern::BindingIdentifier(id) => id.name.to_string(),
            _ => "{…}".into(),
        },
    };
    let mut names: Vec<String> = params.items.iter().map(|p| one(&p.pattern)).collect();
    if let Some(rest) = &params.rest {
        names.push(one(&rest.rest.argument));
    }
    names
}

/// The name an assignment's target gives a function: `exports.f` and
/// `module.exports.f` → `f`, `X.prototype.m` → `X.m`, `a.b.c` → `a.b.c`,
/// `f` → `f`.
fn assigned_name(target: &AssignmentTarget<'_>) -> Option<String> {
    if let AssignmentTarget::AssignmentTargetIdentifier(id) = target {
        return Some(id.name.to_string());
    }
    let member = target.as_member_expression()?;
    let mut parts = vec![member.static_property_name()?.to_string()];
    let mut object = member.object();
    loop {
        match object.without_parentheses() {
            Expression::Identifier(id) => {
                parts.push(id.name.to_string());
                break;
            }
            Expression::StaticMemberExpression(m) => {
                parts.push(m.property.name.to_string());
                object = &m.object;
            }
            _ => return None,
        }
    }
    parts.reverse();
    if parts.first().is_some_and(|p| p == "module") && parts.get(1).is_some_and(|p| p == "exports")
    {
        parts.drain(..2);
    } else if parts.first().is_some_and(|p| p == "exports") {
        parts.drain(..1);
    }
    parts.retain(|p| p != "prototype");
    (!parts.is_empty()).then(|| parts.join("."))
}

impl<'a> Visit<'a> for Namer<'_> {
    fn visit_function(&mut self, it: &Function<'a>, flags: ScopeFlags) {
        let pending = self.pending.take();
        let name = pending
            .as_ref()
            .map(|(n, _)| n.clone())
            .or_else(|| it.id.as_ref().map(|id| id.name.to_string()));
        let Some(name) = name else {
            self.frames.push(None);
            walk::walk_function(self, it, flags);
            self.frames.pop();
            return;
        };
        let index = it.body.as_ref().map(|body| {
            let at = pending.map_or(it.span, |(_, s)| s);
            self.add(
                &name,
                at,
                it.r#async,
                it.generator,
                &it.params,
                block_site(body),
            )
        });
        self.scopes.push(name);
        self.frames.push(index);
        walk::walk_function(self, it, flags);
        self.frames.pop();
        self.scopes.pop();
    }

    fn visit_arrow_function_expression(&mut self, it: &ArrowFunctionExpression<'a>) {
        let Some((name, at)) = self.pending.take() else {
            self.frames.push(None);
            walk::walk_arrow_function_expression(self, it);
            self.frames.pop();
            return;
        };
        let index = self.add(&name, at, it.r#async, false, &it.params, arrow_site(it));
        self.scopes.push(name);
        self.frames.push(Some(index));
        walk::walk_arrow_function_expression(self, it);
        self.frames.pop();
        self.scopes.pop();
    }

    fn visit_catch_clause(&mut self, it: &CatchClause<'a>) {
        let binding = it.param.as_ref().and_then(|p| match &p.pattern {
            BindingPattern::BindingIdentifier(id) => Some(id.name.to_string()),
            _ => None,
        });
        self.catches.push(CatchSite {
            keyword_end: it.span.start + "catch".len() as u32,
            body_start: it.body.span.start + 1,
            binding,
            has_binding: it.param.is_some(),
        });
        walk::walk_catch_clause(self, it);
    }

    fn visit_return_statement(&mut self, it: &ReturnStatement<'a>) {
        if let Some(Some(index)) = self.frames.last() {
            self.out[*index].site.returns.push(ReturnSite {
                start: it.span.start,
                end: it.span.end,
                argument: it.argument.as_ref().map(|a| (a.span().start, a.span().end)),
            });
        }
        walk::walk_return_statement(self, it);
    }

    fn visit_class(&mut self, it: &Class<'a>) {
        let pending = self.pending.take().map(|(n, _)| n);
        let Some(name) = pending.or_else(|| it.id.as_ref().map(|id| id.name.to_string())) else {
            walk::walk_class(self, it);
            return;
        };
        self.scopes.push(name);
        walk::walk_class(self, it);
        self.scopes.pop();
    }

    fn visit_method_definition(&mut self, it: &MethodDefinition<'a>) {
        if let Some(key) = key_name(&it.key) {
            let name = match it.kind {
                MethodDefinitionKind::Get => format!("get {key}"),
                MethodDefinitionKind::Set => format!("set {key}"),
                MethodDefinitionKind::Constructor | MethodDefinitionKind::Method => key,
            };
            self.pending = Some((name, it.key.span()));
        }
        walk::walk_method_definition(self, it);
    }

    fn visit_property_definition(&mut self, it: &PropertyDefinition<'a>) {
        if let (Some(value), Some(key)) = (&it.value, key_name(&it.key)) {
            self.name_next(value, key, it.key.span());
        }
        walk::walk_property_definition(self, it);
    }

    fn visit_object_property(&mut self, it: &ObjectProperty<'a>) {
        if let Some(key) = key_name(&it.key) {
            let name = match it.kind {
                PropertyKind::Get => format!("get {key}"),
                PropertyKind::Set => format!("set {key}"),
                PropertyKind::Init => key,
            };
            self.name_next(&it.value, name, it.key.span());
        }
        walk::walk_object_property(self, it);
    }

    fn visit_variable_declarator(&mut self, it: &VariableDeclarator<'a>) {
        if let (BindingPattern::BindingIdentifier(id), Some(init)) = (&it.id, &it.init) {
            if is_named_target(init) {
                self.pending = Some((id.name.to_string(), it.span));
            } else if matches!(init.without_parentheses(), Expression::ObjectExpression(_)) {
                // An object literal's methods are named under the binding.
                self.scopes.push(id.name.to_string());
                walk::walk_variable_declarator(self, it);
                self.scopes.pop();
                return;
            }
        }
        walk::walk_variable_declarator(self, it);
    }

    fn visit_assignment_expression(&mut self, it: &AssignmentExpression<'a>) {
        if let Some(name) = assigned_name(&it.left) {
            if is_named_target(&it.right) {
                self.pending = Some((name, it.span));
            } else if let Expression::ObjectExpression(_) = it.right.without_parentheses() {
                // `api.routes = { list() {} }` → `api.routes.list`.
                self.scopes.push(name);
                walk::walk_assignment_expression(self, it);
                self.scopes.pop();
                return;
            }
        }
        walk::walk_assignment_expression(self, it);
    }

    fn visit_export_default_declaration(&mut self, it: &ExportDefaultDeclaration<'a>) {
        let unnamed = match &it.declaration {
            ExportDefaultDeclarationKind::FunctionDeclaration(f) => f.id.is_none(),
            ExportDefaultDeclarationKind::ClassDeclaration(c) => c.id.is_none(),
            ExportDefaultDeclarationKind::ArrowFunctionExpression(_) => true,
            _ => false,
        };
        if unnamed {
            self.pending = Some(("default".into(), it.span));
        }
        walk::walk_export_default_declaration(self, it);
    }
}
