//! Limits on an action map's text, checked before serde reads it: its size, and how deep its
//! JSON or YAML nests (`harel_model::nesting`: libyaml's scan of deep flow collections is
//! quadratic in their depth, `tests/fuzz.rs`). Block nesting needs indentation that grows
//! with the depth, so its text, not its time, is quadratic: the size limit ([`MAX_BYTES`])
//! bounds it.

/// An action map larger than this is refused unread: a map of a thousand actions is a few
/// tens of kilobytes.
pub(crate) const MAX_BYTES: usize = 1024 * 1024;

/// Refuse `text` past [`MAX_BYTES`], or nested past `harel_model::nesting::MAX_DEPTH`
/// levels (saying where).
pub(crate) fn check(text: &str) -> Result<(), String> {
    if text.len() > MAX_BYTES {
        return Err(format!(
            "{} bytes: an action map is at most {MAX_BYTES} bytes",
            text.len()
        ));
    }
    harel_model::nesting::check(text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use harel_model::nesting::MAX_DEPTH;

    #[test]
    fn past_the_depth_is_refused_with_the_place() {
        let flow = format!("x: 1\na: {}1", "[".repeat(MAX_DEPTH + 1));
        assert_eq!(
            check(&flow),
            Err(format!(
                "nested more than 128 levels deep at line 2, column {}",
                4 + MAX_DEPTH
            ))
        );
    }

    #[test]
    fn a_huge_map_is_refused_unread() {
        let text = format!("a: \"{}\"", "x".repeat(MAX_BYTES));
        assert!(check(&text).is_err_and(|e| e.contains("at most")));
    }
}
