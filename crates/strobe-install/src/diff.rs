//! The diff `--dry-run` prints: unified, with the file's path.

use similar::TextDiff;

/// A unified diff from `old` (empty for a new file) to `new`.
pub(crate) fn unified(path: &str, old: &str, new: &str) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(2)
        .header(&format!("{path} (now)"), &format!("{path} (after)"))
        .to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_change_and_its_context_are_shown() {
        let d = super::unified("f", "a\nb\nc\nd\ne\nf\n", "a\nb\nc\nd\ne\nX\n");
        assert!(d.starts_with("--- f (now)\n+++ f (after)\n"), "{d}");
        assert!(d.contains("-f\n+X\n") && !d.contains(" a\n"), "{d}");
    }
}
