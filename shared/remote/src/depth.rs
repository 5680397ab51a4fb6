//! How deep an action map's JSON or YAML nests, checked before serde reads it.
//!
//! serde_yaml_ng refuses nesting past 128 levels, but only after libyaml has scanned it:
//! flow collections (`[[[[...` or `{a: {a: ...`) cost time quadratic in their depth there
//! (8,000 levels, 16 KB of text: 1.6 s; `tests/fuzz.rs`). This scan is linear and refuses
//! the same files, with the place, before the parser sees them. serde_json stops at 128
//! levels on its own; JSON is YAML's flow syntax, so the same scan gives it the same message.
//! Block nesting needs indentation that grows with the depth, so its text, not its time,
//! is quadratic: the size limit ([`MAX_BYTES`]) bounds it.

/// The deepest nesting accepted, serde_json's and serde_yaml_ng's own recursion limit.
pub const MAX_DEPTH: usize = 128;

/// An action map larger than this is refused unread: a map of a thousand actions is a few
/// tens of kilobytes.
pub const MAX_BYTES: usize = 1024 * 1024;

/// Refuse `text` (JSON or YAML) where a flow collection first opens past [`MAX_DEPTH`]
/// levels, saying where (1-based line and column). Quoted scalars and comments are
/// skipped; a `[` or `{` counts where a collection can start (after `:`, `-`, `?`, `,`, an
/// opener or the line's indentation), not inside a plain scalar (`x[1]`).
pub fn check(text: &str) -> Result<(), String> {
    if text.len() > MAX_BYTES {
        return Err(format!(
            "{} bytes: an action map is at most {MAX_BYTES} bytes",
            text.len()
        ));
    }
    let mut depth = 0usize;
    let (mut line, mut col) = (1usize, 0usize);
    // the last character that was not a blank, on this line (None at its start)
    let mut previous: Option<char> = None;
    // whether the character before this one was a blank or the line's start
    let mut after_blank = true;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        col += 1;
        let blank_before = std::mem::replace(&mut after_blank, matches!(c, ' ' | '\t' | '\r'));
        match c {
            '\n' => {
                line += 1;
                col = 0;
                previous = None;
                after_blank = true;
                continue;
            }
            ' ' | '\t' | '\r' => continue,
            '[' | '{' if matches!(previous, None | Some(':' | '-' | '?' | ',' | '[' | '{')) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(format!(
                        "nested more than {MAX_DEPTH} levels deep at line {line}, column {col}"
                    ));
                }
            }
            // inside a plain scalar (`x[1`): part of the text, and so is what follows
            '[' | '{' => {
                previous = Some('x');
                continue;
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            '#' if blank_before => {
                // a comment (YAML's start after a blank): to the line's end
                while chars.next_if(|n| *n != '\n').is_some() {}
            }
            '"' | '\'' if matches!(previous, None | Some(':' | '-' | '?' | ',' | '[' | '{')) => {
                // a quoted scalar, line breaks included: `\` escapes in "…", `''` in '…'
                while let Some(n) = chars.next() {
                    col += 1;
                    if n == '\n' {
                        line += 1;
                        col = 0;
                    } else if c == '"' && n == '\\' {
                        chars.next();
                        col += 1;
                    } else if n == c {
                        if c == '\'' && chars.peek() == Some(&'\'') {
                            chars.next();
                            col += 1;
                        } else {
                            break;
                        }
                    }
                }
            }
            _ => {}
        }
        previous = Some(c);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_up_to_the_limit_is_accepted() {
        let flow = format!("a: {}1{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert_eq!(check(&flow), Ok(()));
        let json = format!("{}{}", "{\"a\": ".repeat(MAX_DEPTH), "}".repeat(MAX_DEPTH));
        assert_eq!(check(&json), Ok(()));
    }

    #[test]
    fn past_it_is_refused_with_the_place() {
        let flow = format!("x: 1\na: {}1", "[".repeat(MAX_DEPTH + 1));
        assert_eq!(
            check(&flow),
            Err(format!(
                "nested more than 128 levels deep at line 2, column {}",
                4 + MAX_DEPTH
            ))
        );
        let maps = format!("a: {}", "{b: ".repeat(MAX_DEPTH + 1));
        assert!(check(&maps).is_err());
    }

    #[test]
    fn scalars_and_comments_do_not_count() {
        let deep = "[".repeat(2 * MAX_DEPTH);
        for text in [
            format!("a: \"{deep}\""),
            format!("a: '{deep}'"),
            format!("a: 'it''s {deep}'"),
            format!("a: \"\\\" {deep}\""),
            format!("a: x{deep}"),
            format!("# {deep}\na: 1"),
            format!("a: 1 # {deep}"),
        ] {
            assert_eq!(check(&text), Ok(()), "{text}");
        }
    }

    #[test]
    fn a_huge_map_is_refused_unread() {
        let text = format!("a: \"{}\"", "x".repeat(MAX_BYTES));
        assert!(check(&text).is_err_and(|e| e.contains("at most")));
    }
}
