//! How deep a JSON, YAML or TOML text nests, checked before a parser reads it.
//!
//! The files operators write (action maps, hooks and schedules files) are JSON, TOML or YAML.
//! serde_yaml_ng refuses nesting past 128 levels, but only after libyaml has scanned it: flow
//! collections (`[[[[...` or `{a: {a: ...`) cost time quadratic in their depth there (8,000
//! levels, 16 KB of text: 1.6 s; 100,000 levels: minutes). This scan is linear and refuses
//! the same texts, with the place, before the parser sees them. serde_json stops at 128
//! levels on its own; JSON is YAML's flow syntax, so the same scan gives it the same message;
//! TOML's arrays and inline tables (`a = [[[`, `a = {b = {b =`) are counted the same way.
//! Block nesting needs indentation that grows with the depth, so its text, not its time, is
//! quadratic: a size limit on the file bounds it.

/// The deepest nesting accepted, serde_json's and serde_yaml_ng's own recursion limit.
pub const MAX_DEPTH: usize = 128;

/// Where a text first nests past [`MAX_DEPTH`] (1-based line and column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("nested more than {MAX_DEPTH} levels deep at line {line}, column {column}")]
pub struct TooDeep {
    /// The 1-based line of the opener that went too deep.
    pub line: usize,
    /// The 1-based column of that opener, in characters.
    pub column: usize,
}

/// Refuse `text` where a flow collection first opens past [`MAX_DEPTH`] levels. Quoted
/// scalars and comments are skipped; a `[` or `{` counts where a collection can start (after
/// `:`, `=`, `-`, `?`, `,`, an opener or the line's indentation), not inside a plain scalar
/// (`x[1]`).
pub fn check(text: &str) -> Result<(), TooDeep> {
    let mut depth = 0usize;
    let (mut line, mut col) = (1usize, 0usize);
    // the last character that was not a blank, on this line (None at its start)
    let mut previous: Option<char> = None;
    // whether the character before this one was a blank or the line's start
    let mut after_blank = true;
    let opens = |previous: Option<char>| {
        matches!(
            previous,
            None | Some(':' | '=' | '-' | '?' | ',' | '[' | '{')
        )
    };
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
            '[' | '{' if opens(previous) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(TooDeep { line, column: col });
                }
            }
            // inside a plain scalar (`x[1`): part of the text, and so is what follows
            '[' | '{' => {
                previous = Some('x');
                continue;
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            '#' if blank_before => {
                // a comment (YAML's and TOML's start after a blank): to the line's end
                while chars.next_if(|n| *n != '\n').is_some() {}
            }
            '"' | '\'' if opens(previous) => {
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
        let toml = format!(
            "a = {}1{}",
            "{b = ".repeat(MAX_DEPTH),
            "}".repeat(MAX_DEPTH)
        );
        assert_eq!(check(&toml), Ok(()));
    }

    #[test]
    fn past_it_is_refused_with_the_place() {
        let flow = format!("x: 1\na: {}1", "[".repeat(MAX_DEPTH + 1));
        let e = check(&flow).unwrap_err();
        assert_eq!(
            (e.line, e.column),
            (2, 4 + MAX_DEPTH),
            "the last opener's place"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "nested more than 128 levels deep at line 2, column {}",
                4 + MAX_DEPTH
            )
        );
        let maps = format!("a: {}", "{b: ".repeat(MAX_DEPTH + 1));
        assert!(check(&maps).is_err());
        // TOML's inline tables open after `=`
        let toml = format!("a = {}1", "{b = ".repeat(MAX_DEPTH + 1));
        assert!(check(&toml).is_err());
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
            format!("a = \"{deep}\""),
        ] {
            assert_eq!(check(&text), Ok(()), "{text}");
        }
    }
}
