//! Key names as an agent writes them (`"enter"`, `"ctrl"`, `"a"`, `"é"`),
//! checked and made [`Key`]s. The names are platform-independent; each
//! backend maps them to its own codes (X keysyms on Linux).

use crate::Key;

/// Every named key, with the aliases that mean it.
pub const NAMED: &[(&str, &[&str])] = &[
    ("enter", &["return"]),
    ("tab", &[]),
    ("escape", &["esc"]),
    ("backspace", &[]),
    ("delete", &["del"]),
    ("insert", &[]),
    ("home", &[]),
    ("end", &[]),
    ("pageup", &["page_up", "pgup"]),
    ("pagedown", &["page_down", "pgdn"]),
    ("up", &[]),
    ("down", &[]),
    ("left", &[]),
    ("right", &[]),
    ("space", &[]),
    ("menu", &[]),
    ("f1", &[]),
    ("f2", &[]),
    ("f3", &[]),
    ("f4", &[]),
    ("f5", &[]),
    ("f6", &[]),
    ("f7", &[]),
    ("f8", &[]),
    ("f9", &[]),
    ("f10", &[]),
    ("f11", &[]),
    ("f12", &[]),
    ("ctrl", &["control"]),
    ("shift", &[]),
    ("alt", &["option"]),
    ("super", &["cmd", "meta", "win"]),
];

/// The modifier keys, in the order they are pressed.
pub const MODIFIERS: [&str; 4] = ["ctrl", "shift", "alt", "super"];

/// The key `name` means: a single character types itself, anything else
/// must be a named key (case aside).
pub fn parse(name: &str) -> Result<Key, String> {
    let mut chars = name.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        return Ok(match c {
            ' ' => Key::Named("space"),
            '\n' => Key::Named("enter"),
            '\t' => Key::Named("tab"),
            c if c.is_control() => {
                return Err(format!(
                    "key {name:?} is a control character: name it instead (\"enter\", \"tab\", \"escape\")"
                ));
            }
            c => Key::Char(c),
        });
    }
    let lower = name.to_ascii_lowercase();
    NAMED
        .iter()
        .find(|(n, aliases)| *n == lower || aliases.contains(&lower.as_str()))
        .map(|(n, _)| Key::Named(n))
        .ok_or_else(|| {
            format!(
                "unknown key {name:?}: give one character (\"a\", \"é\") or a key name: {}",
                NAMED.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            )
        })
}

/// The modifier `name` means.
pub fn modifier(name: &str) -> Result<&'static str, String> {
    match parse(name) {
        Ok(Key::Named(n)) if MODIFIERS.contains(&n) => Ok(n),
        _ => Err(format!(
            "unknown modifier {name:?}: use {}",
            MODIFIERS.join(", ")
        )),
    }
}

/// How a chord reads: `ctrl+shift+a`.
pub fn describe(key: &Key, modifiers: &[&str]) -> String {
    let k = match key {
        Key::Named(n) => (*n).to_string(),
        Key::Char(c) => c.to_string(),
    };
    modifiers
        .iter()
        .map(|m| (*m).to_string())
        .chain(std::iter::once(k))
        .collect::<Vec<_>>()
        .join("+")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_characters_or_known_names() {
        assert_eq!(parse("a"), Ok(Key::Char('a')));
        assert_eq!(parse("é"), Ok(Key::Char('é')));
        assert_eq!(parse("Return"), Ok(Key::Named("enter")));
        assert_eq!(parse("PgDn"), Ok(Key::Named("pagedown")));
        assert_eq!(parse(" "), Ok(Key::Named("space")));
        let e = parse("hyper").unwrap_err();
        assert!(e.contains("enter, tab"), "{e}");
        assert!(parse("\u{7}").unwrap_err().contains("control character"));
        assert_eq!(modifier("Control"), Ok("ctrl"));
        assert_eq!(modifier("cmd"), Ok("super"));
        assert!(
            modifier("a")
                .unwrap_err()
                .contains("ctrl, shift, alt, super")
        );
        assert_eq!(describe(&Key::Char('c'), &["ctrl"]), "ctrl+c");
    }
}
