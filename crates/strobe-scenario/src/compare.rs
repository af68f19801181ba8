//! Value conditions: a bare value (equal to it) or `{"<": 0.01}` with one
//! of `<`, `<=`, `>`, `>=`, `==`, `!=`.

use serde_json::Value;
use std::fmt;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// A condition on one value.
#[derive(Debug, Clone, PartialEq)]
pub struct Compare {
    /// How.
    pub op: Op,
    /// Against what.
    pub value: Value,
}

impl Compare {
    /// Parses `5`, `"ok"`, `true`, or `{"<": 5}`.
    pub fn parse(v: &Value) -> Result<Compare, String> {
        let Some(obj) = v.as_object() else {
            if v.is_null() {
                return Err("a condition is a value or {\"<\": n} (null compares nothing)".into());
            }
            return Ok(Compare {
                op: Op::Eq,
                value: v.clone(),
            });
        };
        let mut it = obj.iter();
        let (Some((op, value)), None) = (it.next(), it.next()) else {
            return Err("a condition object has one operator: {\"<\": 5}".into());
        };
        let op = match op.as_str() {
            "==" => Op::Eq,
            "!=" => Op::Ne,
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            other => {
                return Err(format!(
                    "{other:?} is not an operator (==, !=, <, <=, >, >=)"
                ));
            }
        };
        if !matches!(op, Op::Eq | Op::Ne) && !value.is_number() {
            return Err(format!("{} compares numbers, not {value}", op_text(op)));
        }
        Ok(Compare {
            op,
            value: value.clone(),
        })
    }

    /// Whether `actual` satisfies the condition. Numbers compare as
    /// numbers (1 == 1.0); anything else by equality only.
    pub fn holds(&self, actual: &Value) -> bool {
        if let (Some(a), Some(b)) = (actual.as_f64(), self.value.as_f64()) {
            return match self.op {
                Op::Eq => a == b,
                Op::Ne => a != b,
                Op::Lt => a < b,
                Op::Le => a <= b,
                Op::Gt => a > b,
                Op::Ge => a >= b,
            };
        }
        match self.op {
            Op::Eq => actual == &self.value,
            Op::Ne => actual != &self.value,
            _ => false,
        }
    }

    /// `count: 0` or `{"==": 0}` or `{"<": 1}`: it asks that nothing happened.
    pub fn is_zero(&self) -> bool {
        let n = self.value.as_f64();
        match self.op {
            Op::Eq | Op::Le => n == Some(0.0),
            Op::Lt => n == Some(1.0),
            _ => false,
        }
    }
}

fn op_text(op: Op) -> &'static str {
    match op {
        Op::Eq => "==",
        Op::Ne => "!=",
        Op::Lt => "<",
        Op::Le => "<=",
        Op::Gt => ">",
        Op::Ge => ">=",
    }
}

impl fmt::Display for Compare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", op_text(self.op), self.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conditions_compare_numbers_as_numbers_and_the_rest_by_equality() {
        let c = |v: Value| Compare::parse(&v).unwrap();
        assert!(c(json!({"<": 0.01})).holds(&json!(0.005)));
        assert!(!c(json!({"<": 0.01})).holds(&json!(0.5)));
        assert!(c(json!(1)).holds(&json!(1.0)));
        assert!(c(json!("ok")).holds(&json!("ok")));
        assert!(c(json!({"!=": "ok"})).holds(&json!("no")));
        assert!(
            !c(json!({">": 1})).holds(&json!("2")),
            "a string is not a number"
        );
        assert!(
            Compare::parse(&json!({"<": "a"}))
                .unwrap_err()
                .contains("compares numbers")
        );
        assert!(
            Compare::parse(&json!({"~": 1}))
                .unwrap_err()
                .contains("not an operator")
        );
        assert!(Compare::parse(&json!({"<": 1, ">": 0})).is_err());
        assert!(
            c(json!(0)).is_zero() && c(json!({"<": 1})).is_zero() && !c(json!({">=": 0})).is_zero()
        );
        assert_eq!(c(json!({">=": 2})).to_string(), ">= 2");
    }
}
