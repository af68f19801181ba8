//! debug_trace's arguments checked: patterns parsed, watch requests
//! validated into what they target.

use crate::SessionError;
use crate::trace::{self, WatchTarget};

/// Parses trace pattern texts, each error naming the pattern.
pub fn parse_patterns(texts: &[String]) -> Result<Vec<strobe_symbols::Pattern>, SessionError> {
    texts
        .iter()
        .map(|t| {
            strobe_symbols::Pattern::parse(t).map_err(|e| SessionError::pattern(e.to_string()))
        })
        .collect()
}

/// Checks a watch request's fields and what it targets.
pub(in crate::manager) fn watch_target(
    w: &trace::WatchRequest,
) -> Result<WatchTarget, SessionError> {
    if let Some(l) = &w.label
        && (l.is_empty() || l.len() > 256)
    {
        return Err(SessionError::validation(
            "a watch 'label' must be 1–256 characters",
        ));
    }
    if let Some(e) = &w.expr {
        if w.variable.is_some() || w.address.is_some() || w.type_hint.is_some() {
            return Err(SessionError::validation(
                "a watch has one of 'variable', 'address' (with 'type') or 'expr'",
            ));
        }
        let e = e.trim();
        if e.is_empty() || e.len() > 256 {
            return Err(SessionError::validation(
                "a watch 'expr' is a JavaScript expression of 1–256 characters, e.g. \"args[0].readCString()\" \
                 or \"ptr('0x5678').readU32()\"",
            ));
        }
        return Ok(WatchTarget::Expr(e.to_string()));
    }
    match (&w.variable, &w.address) {
        (Some(_), Some(_)) => Err(SessionError::validation(
            "a watch has either 'variable' or 'address' (with 'type'), not both",
        )),
        (Some(v), None) => {
            trace::parse_chain(v).map_err(SessionError::validation)?;
            if w.type_hint.is_some() {
                return Err(SessionError::validation(
                    "'type' is only for 'address' watches; a variable's type comes from its debug info",
                ));
            }
            Ok(WatchTarget::Variable(v.trim().to_string()))
        }
        (None, Some(a)) => {
            let address = trace::parse_hex_address(a).ok_or_else(|| {
                SessionError::validation(format!(
                    "watch 'address' {a:?} is not a hex address like \"0x7ffd1234\""
                ))
            })?;
            let hint = w.type_hint.clone().unwrap_or_else(|| "u64".into());
            if strobe_values::hint_size(&hint).is_none() {
                return Err(SessionError::validation(format!(
                    "watch 'type' {hint:?} is not one of i8, u8, i16, u16, i32, u32, i64, u64, f32, f64, pointer"
                )));
            }
            Ok(WatchTarget::Address { address, hint })
        }
        (None, None) => Err(SessionError::validation(
            "a watch needs 'variable' (e.g. \"gCounter\" or \"gConfig->level\") or 'address' + 'type'",
        )),
    }
}
