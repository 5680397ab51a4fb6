//! How deep a text nests, checked before pest sees it.
//!
//! pest's generated parser and the transformer recurse once (and more) per level of `{`,
//! `[`, `(` and `not`, and so do the loader and the builder per level of states: a text
//! nested a few hundred levels deep overflows a 2 MiB stack (a tokio worker thread's, a
//! spawned thread's), which aborts the process instead of returning an error. A machine
//! nested [`MAX_NESTING`] levels deep is far past any a person writes, and well inside what
//! the front end handles on such a stack (`tests/fuzz.rs` loads one at the limit).

use crate::error::{ErrorKind, LangError};

/// The deepest nesting accepted: brackets of any kind, plus a run of `not`s.
pub(crate) const MAX_NESTING: usize = 64;

/// Refuse `text` where it first nests deeper than [`MAX_NESTING`], pointing at the opener
/// that went past. Strings and comments are skipped as the grammar reads them (a string
/// ends at its closing quote or at the end of the line).
pub(crate) fn check(text: &str, origin: &str) -> Result<(), LangError> {
    let mut brackets = 0usize;
    // consecutive `not`s (a `(` between them does not end the run: `not (not x)`)
    let mut nots = 0usize;
    let (mut line, mut col) = (1usize, 0usize);
    let mut chars = text.chars().peekable();
    let mut word = String::new();
    while let Some(c) = chars.next() {
        if c == '\n' {
            line += 1;
            col = 0;
        } else {
            col += 1;
        }
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
            if chars
                .peek()
                .is_some_and(|n| n.is_ascii_alphanumeric() || *n == '_')
            {
                continue;
            }
            if word == "not" {
                nots += 1;
            } else {
                nots = 0;
            }
            word.clear();
            if brackets + nots > MAX_NESTING {
                return Err(too_deep(text, origin, (line, col + 1 - "not".len())));
            }
            continue;
        }
        match c {
            '{' | '[' | '(' => {
                brackets += 1;
                if c != '(' {
                    nots = 0;
                }
                if brackets + nots > MAX_NESTING {
                    return Err(too_deep(text, origin, (line, col)));
                }
            }
            '}' | ']' | ')' => {
                brackets = brackets.saturating_sub(1);
                nots = 0;
            }
            '"' => {
                nots = 0;
                // to the closing quote (an escape skips the next char) or the line's end
                while let Some(&n) = chars.peek() {
                    if n == '\n' {
                        break;
                    }
                    chars.next();
                    col += 1;
                    if n == '\\' {
                        if chars.peek().is_some_and(|e| *e != '\n') {
                            chars.next();
                            col += 1;
                        }
                    } else if n == '"' {
                        break;
                    }
                }
            }
            '#' => skip_line(&mut chars),
            '/' if chars.peek() == Some(&'/') => skip_line(&mut chars),
            c if c.is_whitespace() => {}
            _ => nots = 0,
        }
    }
    Ok(())
}

/// A comment: everything up to (not including) the line break.
fn skip_line(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while chars.next_if(|n| *n != '\n').is_some() {}
}

fn too_deep(text: &str, origin: &str, pos: (usize, usize)) -> LangError {
    LangError::at(
        ErrorKind::Semantic,
        origin,
        text,
        pos,
        format!(
            "nested more than {MAX_NESTING} levels deep (braces, brackets, parentheses and `not`s together)"
        ),
    )
    .with_hint(Some(
        "flatten the machine: a fragment or a submachine can hold a deep part".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_up_to_the_limit_is_accepted() {
        let text = format!("{}{}", "{".repeat(MAX_NESTING), "}".repeat(MAX_NESTING));
        assert!(check(&text, "f.stm").is_ok());
        // closed brackets do not add up
        assert!(check(&"{}".repeat(10 * MAX_NESTING), "f.stm").is_ok());
        let nots = format!("({}x)", "not ".repeat(MAX_NESTING - 1));
        assert!(check(&nots, "f.stm").is_ok());
    }

    #[test]
    fn one_level_past_it_is_refused_at_the_opener() {
        let text = format!("machine M {{\n  {}", "[".repeat(MAX_NESTING));
        let e = check(&text, "f.stm").expect_err("too deep");
        assert_eq!(e.pos, Some((2, MAX_NESTING + 2)));
        assert!(e.message.contains("nested more than 64 levels"), "{e}");
        let nots = format!("machine M {{ {}x }}", "not ".repeat(MAX_NESTING));
        let e = check(&nots, "f.stm").expect_err("too many nots");
        assert_eq!(e.pos, Some((1, 13 + 4 * (MAX_NESTING - 1))));
    }

    #[test]
    fn strings_and_comments_do_not_count() {
        let deep = "{".repeat(3 * MAX_NESTING);
        for text in [
            format!("x = \"{deep}\""),
            format!("x = \"\\\"{deep}\""),
            format!("# {deep}\n"),
            format!("// {deep}\n"),
        ] {
            assert!(check(&text, "f.stm").is_ok(), "{text}");
        }
        // a string ends at the line's end, as the grammar's does
        let text = format!("x = \"open\n{deep}");
        assert!(check(&text, "f.stm").is_err());
    }
}
