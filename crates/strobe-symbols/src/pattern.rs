//! The trace pattern language.
//!
//! | pattern | matches |
//! | --- | --- |
//! | `foo::bar` | exactly `foo::bar` |
//! | `foo::*` | one segment below `foo` (`*` never crosses `::`) |
//! | `foo::**` | anything below `foo` (`**` crosses `::`) |
//! | `auth::**::validate` | `auth::validate`, `auth::user::validate` (`**` may be empty) |
//! | `@usercode` | functions whose source file is under the project root |
//! | `@file:parser.c` | functions whose source path contains `parser.c` |

use std::path::Path;

/// A parsed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// A name glob.
    Glob {
        /// The text as given.
        text: String,
        /// Compiled tokens.
        tokens: Vec<Token>,
    },
    /// `@usercode`.
    UserCode,
    /// `@file:<part>`.
    File(String),
}

/// A glob token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// Literal text.
    Lit(String),
    /// `*`: any run of characters without `::`.
    Star,
    /// `**`: any run of characters.
    GlobStar,
    /// `**::` — zero or more whole segments.
    Segments,
}

/// Why a pattern is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid pattern {pattern:?}: {reason}")]
pub struct PatternError {
    /// The pattern.
    pub pattern: String,
    /// What is wrong and how to write it instead.
    pub reason: String,
}

/// Longest pattern accepted.
pub const MAX_PATTERN_LEN: usize = 512;

impl Pattern {
    /// Parses a pattern.
    pub fn parse(text: &str) -> Result<Pattern, PatternError> {
        let err = |reason: &str| PatternError {
            pattern: text.to_string(),
            reason: reason.to_string(),
        };
        if text.trim().is_empty() {
            return Err(err(
                "empty pattern; give a function name like \"parser::parse\" or \"parser::*\"",
            ));
        }
        if text.len() > MAX_PATTERN_LEN {
            return Err(err("longer than 512 characters"));
        }
        if text != text.trim() {
            return Err(err("leading or trailing whitespace"));
        }
        if let Some(rest) = text.strip_prefix('@') {
            if rest == "usercode" {
                return Ok(Pattern::UserCode);
            }
            if let Some(part) = rest.strip_prefix("file:") {
                if part.is_empty() {
                    return Err(err(
                        "@file: needs part of a source path, e.g. @file:parser.c",
                    ));
                }
                return Ok(Pattern::File(part.to_string()));
            }
            return Err(err(
                "unknown selector; the selectors are @usercode and @file:<path part>",
            ));
        }
        if text.contains("***") {
            return Err(err(
                "'***' is not a wildcard; use '*' (one segment) or '**' (any depth)",
            ));
        }
        if text.chars().any(|c| c.is_control()) {
            return Err(err("contains control characters"));
        }
        if text.starts_with("::") && !text.starts_with("::*") {
            return Err(err("starts with '::'; drop the leading separator"));
        }
        let mut tokens = Vec::new();
        let mut lit = String::new();
        let mut rest = text;
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix("**::") {
                flush(&mut lit, &mut tokens);
                tokens.push(Token::Segments);
                rest = r;
            } else if let Some(r) = rest.strip_prefix("**") {
                flush(&mut lit, &mut tokens);
                tokens.push(Token::GlobStar);
                rest = r;
            } else if let Some(r) = rest.strip_prefix('*') {
                flush(&mut lit, &mut tokens);
                tokens.push(Token::Star);
                rest = r;
            } else {
                let c = rest.chars().next().expect("non-empty");
                lit.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
        flush(&mut lit, &mut tokens);
        Ok(Pattern::Glob {
            text: text.to_string(),
            tokens,
        })
    }

    /// The pattern as written.
    pub fn text(&self) -> String {
        match self {
            Pattern::Glob { text, .. } => text.clone(),
            Pattern::UserCode => "@usercode".into(),
            Pattern::File(p) => format!("@file:{p}"),
        }
    }

    /// Does a function with this name and source file match?
    pub fn matches(&self, name: &str, file: Option<&str>, project_root: &Path) -> bool {
        match self {
            Pattern::Glob { tokens, .. } => glob_match(tokens, name),
            Pattern::UserCode => file.is_some_and(|f| Path::new(f).starts_with(project_root)),
            Pattern::File(part) => file.is_some_and(|f| f.contains(part.as_str())),
        }
    }
}

fn flush(lit: &mut String, tokens: &mut Vec<Token>) {
    if !lit.is_empty() {
        tokens.push(Token::Lit(std::mem::take(lit)));
    }
}

/// Backtracking glob match; patterns are short, names are short.
fn glob_match(tokens: &[Token], s: &str) -> bool {
    match tokens.split_first() {
        None => s.is_empty(),
        Some((Token::Lit(l), rest)) => s
            .strip_prefix(l.as_str())
            .is_some_and(|r| glob_match(rest, r)),
        Some((Token::Star, rest)) => {
            // Any prefix of `s` without "::".
            let limit = s.find("::").unwrap_or(s.len());
            (0..=limit)
                .filter(|i| s.is_char_boundary(*i))
                .any(|i| glob_match(rest, &s[i..]))
        }
        Some((Token::GlobStar, rest)) => (0..=s.len())
            .filter(|i| s.is_char_boundary(*i))
            .any(|i| glob_match(rest, &s[i..])),
        Some((Token::Segments, rest)) => {
            // Zero segments, or any prefix ending in "::".
            glob_match(rest, s)
                || s.match_indices("::")
                    .any(|(i, _)| glob_match(rest, &s[i + 2..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, name: &str) -> bool {
        Pattern::parse(p)
            .unwrap()
            .matches(name, None, Path::new("/"))
    }

    #[test]
    fn spec_table() {
        assert!(m("foo::bar", "foo::bar"));
        assert!(!m("foo::bar", "foo::baz"));
        assert!(m("foo::*", "foo::bar") && m("foo::*", "foo::baz"));
        assert!(!m("foo::*", "foo::bar::qux"));
        assert!(m("foo::**", "foo::bar") && m("foo::**", "foo::bar::baz"));
        assert!(!m("foo::**", "other::bar"));
        assert!(m("*::validate", "auth::validate") && m("*::validate", "form::validate"));
        assert!(!m("*::validate", "auth::deep::validate"));
        assert!(m("auth::**::validate", "auth::validate"));
        assert!(m("auth::**::validate", "auth::user::validate"));
        assert!(m("auth::**::validate", "auth::a::b::validate"));
        assert!(!m("auth::**::validate", "form::validate"));
        assert!(m("**::validate", "validate") && m("**::validate", "x::y::validate"));
        assert!(m("process_*", "process_request") && !m("process_*", "ns::process_request"));
        assert!(m("*", "main") && !m("*", "a::b"));
        assert!(m("**", "a::b"));
        assert!(m("std::vector<int>::*", "std::vector<int>::push_back"));
    }

    #[test]
    fn selectors() {
        let root = Path::new("/home/me/proj");
        let u = Pattern::parse("@usercode").unwrap();
        assert!(u.matches("f", Some("/home/me/proj/src/a.c"), root));
        assert!(!u.matches("f", Some("/usr/include/stdio.h"), root));
        assert!(
            !u.matches("f", Some("/home/me/project2/a.c"), root),
            "path prefix, not string prefix"
        );
        assert!(!u.matches("f", None, root));
        let f = Pattern::parse("@file:parser.c").unwrap();
        assert!(f.matches("f", Some("/x/src/parser.c"), root));
        assert!(!f.matches("f", Some("/x/src/lexer.c"), root));
    }

    #[test]
    fn invalid_patterns_say_why() {
        for (p, needle) in [
            ("", "empty"),
            ("  ", "empty"),
            ("a***b", "'***'"),
            ("@nope", "selectors"),
            ("@file:", "@file:"),
            (" foo", "whitespace"),
            ("::foo", "'::'"),
        ] {
            let e = Pattern::parse(p).unwrap_err();
            assert!(e.reason.contains(needle), "{p:?}: {}", e.reason);
        }
        assert!(Pattern::parse(&"a".repeat(600)).is_err());
    }
}
