//! harel's `_unquote`: `bytes(s[1:-1], "utf-8").decode("unicode_escape")`.
//!
//! That decodes the UTF-8 bytes of the literal as Latin-1 while processing Python's
//! backslash escapes, so a non-ASCII character in a quoted name comes out mangled
//! (`"café"` -> `cafÃ©`). That is a harel bug; we match it so both sides name the same
//! states, events and outcomes.

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum UnquoteError {
    #[error("truncated \\{0} escape in a string")]
    Truncated(char),
    #[error("illegal Unicode character in a string escape")]
    IllegalCodepoint,
    #[error("`\\N{{...}}` (a Unicode character by name) is not supported in strings")]
    NamedEscape,
}

/// Decode the body of an `ESCAPED_STRING` token, quotes included.
pub(crate) fn unquote(token: &str) -> Result<String, UnquoteError> {
    let inner = token
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(token);
    let bytes = inner.as_bytes();
    let mut out = String::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        i += 1;
        if b != b'\\' {
            out.push(char::from(b));
            continue;
        }
        let Some(&esc) = bytes.get(i) else {
            // the grammar never ends a string on a lone backslash; keep it as Python would not
            out.push('\\');
            break;
        };
        i += 1;
        match esc {
            b'\n' => {}
            b'\\' => out.push('\\'),
            b'\'' => out.push('\''),
            b'"' => out.push('"'),
            b'a' => out.push('\u{07}'),
            b'b' => out.push('\u{08}'),
            b'f' => out.push('\u{0c}'),
            b'n' => out.push('\n'),
            b'r' => out.push('\r'),
            b't' => out.push('\t'),
            b'v' => out.push('\u{0b}'),
            b'0'..=b'7' => {
                let mut code = u32::from(esc - b'0');
                for _ in 0..2 {
                    match bytes.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            code = code * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(char::from_u32(code).ok_or(UnquoteError::IllegalCodepoint)?);
            }
            b'x' | b'u' | b'U' => {
                let width = match esc {
                    b'x' => 2,
                    b'u' => 4,
                    _ => 8,
                };
                let digits = bytes
                    .get(i..i + width)
                    .filter(|d| d.iter().all(u8::is_ascii_hexdigit))
                    .ok_or(UnquoteError::Truncated(char::from(esc)))?;
                i += width;
                let text = std::str::from_utf8(digits).expect("hex digits are ASCII");
                let code = u32::from_str_radix(text, 16).expect("validated hex digits");
                out.push(char::from_u32(code).ok_or(UnquoteError::IllegalCodepoint)?);
            }
            b'N' => return Err(UnquoteError::NamedEscape),
            other => {
                // an unknown escape is kept verbatim (Python warns, and keeps it)
                out.push('\\');
                out.push(char::from(other));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_python_decodes_them() {
        assert_eq!(unquote(r#""a\"b\\c\n""#).unwrap(), "a\"b\\c\n");
        assert_eq!(unquote(r#""\x41\u00e9\101\q""#).unwrap(), "Aé\u{41}\\q");
        assert_eq!(unquote("\"café\"").unwrap(), "cafÃ©");
        assert_eq!(unquote(r#""\x4""#), Err(UnquoteError::Truncated('x')));
    }
}
