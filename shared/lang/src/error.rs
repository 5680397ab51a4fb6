//! `LangError`: every problem with a `.stm` file, located and rendered for a person.
//!
//! Rendering (`Display`):
//!
//! ```text
//! order.stm:4:12: unbound action handlers: send (add a `bind` or pass actions=)
//!     on enter send
//!              ^
//! expected ...        (syntax errors only)
//! hint: ...           (when one applies)
//! ```
//!
//! Every error names its file (the `origin` given to the loader); an error with no source
//! position (e.g. "no machine declared") renders as `file: message`.

use std::fmt;

/// A 1-based (line, column) in the source; columns count characters, as harel's do.
pub type Pos = (usize, usize);

/// A source line longer than this (in characters) is shown cut around the caret.
pub const LINE_SHOWN: usize = 100;

/// What of `line` to show for a caret at the 1-based column `col`, and the caret's 0-based
/// offset in it: the whole line when it fits in [`LINE_SHOWN`] characters, else a window of
/// that many around the caret with `…` where it was cut (a generated file's one 100 KB line
/// would otherwise be printed whole, twice over with the padding).
pub fn window(line: &str, col: usize) -> (String, usize) {
    let caret = col.saturating_sub(1);
    let len = line.chars().count();
    if len <= LINE_SHOWN {
        return (line.to_string(), caret);
    }
    // the caret a third of the way in: what led to it, and a little of what follows
    let start = caret
        .saturating_sub(LINE_SHOWN / 3)
        .min(len.saturating_sub(LINE_SHOWN));
    let end = (start + LINE_SHOWN).min(len);
    let mut shown = String::new();
    if start > 0 {
        shown.push('…');
    }
    shown.extend(line.chars().skip(start).take(end - start));
    if end < len {
        shown.push('…');
    }
    (shown, caret - start + usize::from(start > 0))
}

/// The kind of problem, for callers that branch on it (tests, the CLI).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The text does not follow the grammar.
    Syntax,
    /// The text parses but says something the language refuses (namespaces, `ttl` on a
    /// state, a duplicate state, an unbound handler, an unknown target...).
    Semantic,
    /// A construct the grammar knows but this implementation does not run yet.
    Unsupported,
    /// The machine asked for is not there (none declared, several, unknown name).
    Selection,
    /// The file could not be read.
    Io,
}

/// A located language error. Its data sits behind a box (read it through `Deref`) so a
/// `Result<_, LangError>` stays small.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct LangError(Box<ErrorData>);

/// What a [`LangError`] holds; `Display` renders it as the module doc shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorData {
    /// What kind of problem it is.
    pub kind: ErrorKind,
    /// The file (or other origin) the text came from.
    pub origin: String,
    /// The problem, in harel's words where harel reports it.
    pub message: String,
    /// Where in `origin` it is; None for a problem with the file as a whole.
    pub pos: Option<Pos>,
    /// The offending source line, when the position is known.
    pub source_line: Option<String>,
    /// What the grammar would have accepted at `pos` (syntax errors).
    pub expected: Option<String>,
    /// A suggested fix, rendered as a last `hint:` line.
    pub hint: Option<String>,
}

impl LangError {
    /// An error with no position in the text (it renders as `origin: message`).
    pub fn new(kind: ErrorKind, origin: &str, message: impl Into<String>) -> Self {
        LangError(Box::new(ErrorData {
            kind,
            origin: origin.to_string(),
            message: message.into(),
            pos: None,
            source_line: None,
            expected: None,
            hint: None,
        }))
    }

    /// An error at `pos` in `text`: the source line is captured for the caret.
    pub fn at(
        kind: ErrorKind,
        origin: &str,
        text: &str,
        pos: Pos,
        message: impl Into<String>,
    ) -> Self {
        let mut err = LangError::new(kind, origin, message);
        err.0.pos = Some(pos);
        // past the last line (an empty text, the end after a final newline) the line is
        // empty: the caret still shows where
        err.0.source_line = Some(
            text.lines()
                .nth(pos.0.saturating_sub(1))
                .unwrap_or_default()
                .to_string(),
        );
        err
    }

    /// This error with `hint` as its hint (None removes one).
    pub fn with_hint(mut self, hint: Option<String>) -> Self {
        self.0.hint = hint;
        self
    }

    /// This error with `expected` as what the grammar would have accepted (None removes it).
    pub fn with_expected(mut self, expected: Option<String>) -> Self {
        self.0.expected = expected;
        self
    }
}

impl std::ops::Deref for LangError {
    type Target = ErrorData;

    fn deref(&self) -> &ErrorData {
        &self.0
    }
}

impl fmt::Display for LangError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pos {
            Some((line, col)) => write!(f, "{}:{}:{}: {}", self.origin, line, col, self.message)?,
            None => write!(f, "{}: {}", self.origin, self.message)?,
        }
        if let (Some((_, col)), Some(src)) = (self.pos, &self.source_line) {
            let (shown, caret) = window(src, col);
            // tabs are kept in the padding so the caret lines up under a tab-indented line
            let pad: String = shown
                .chars()
                .take(caret)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            write!(f, "\n    {shown}\n    {pad}^")?;
        }
        if let Some(expected) = &self.expected {
            write!(f, "\nexpected {expected}")?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_line_is_shown_whole() {
        assert_eq!(
            window("  on enter send", 12),
            ("  on enter send".into(), 11)
        );
    }

    #[test]
    fn a_long_line_is_cut_around_the_caret() {
        let line = format!("{}X{}", "a".repeat(50_000), "b".repeat(50_000));
        let (shown, caret) = window(&line, 50_001);
        assert_eq!(shown.chars().count(), LINE_SHOWN + 2);
        assert!(shown.starts_with('…') && shown.ends_with('…'), "{shown}");
        assert_eq!(shown.chars().nth(caret), Some('X'));
        // near the start: cut at the end only; near the end: at the start only
        let (shown, caret) = window(&line, 3);
        assert!(!shown.starts_with('…') && shown.ends_with('…'));
        assert_eq!(caret, 2);
        let (shown, caret) = window(&line, 100_001);
        assert!(shown.starts_with('…') && !shown.ends_with('…'));
        assert_eq!(shown.chars().nth(caret), Some('b'));
        assert_eq!(caret, LINE_SHOWN);
    }

    #[test]
    fn the_rendered_error_shows_the_window_and_its_caret() {
        let states = "state A {} ".repeat(5_000);
        let text = format!("machine M {{ {states} ! {states} }}");
        let col = text.find('!').expect("the mark") + 1;
        let e = LangError::at(
            ErrorKind::Syntax,
            "long.stm",
            &text,
            (1, col),
            "unexpected `!`",
        );
        let shown = e.to_string();
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines[0], format!("long.stm:1:{col}: unexpected `!`"));
        assert!(lines[1].len() < 4 * LINE_SHOWN, "{shown}");
        assert!(
            lines[1].starts_with("    …") && lines[1].ends_with('…'),
            "{shown}"
        );
        let caret = lines[2].chars().count() - 1;
        assert_eq!(lines[2].chars().last(), Some('^'));
        assert_eq!(lines[1].chars().nth(caret), Some('!'), "{shown}");
    }
}
