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

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorData {
    pub kind: ErrorKind,
    /// The file (or other origin) the text came from.
    pub origin: String,
    pub message: String,
    pub pos: Option<Pos>,
    /// The offending source line, when the position is known.
    pub source_line: Option<String>,
    /// What the grammar would have accepted at `pos` (syntax errors).
    pub expected: Option<String>,
    pub hint: Option<String>,
}

impl LangError {
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
        err.0.source_line = text
            .lines()
            .nth(pos.0.saturating_sub(1))
            .map(str::to_string);
        err
    }

    pub fn with_hint(mut self, hint: Option<String>) -> Self {
        self.0.hint = hint;
        self
    }

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
            // tabs are kept in the padding so the caret lines up under a tab-indented line
            let pad: String = src
                .chars()
                .take(col.saturating_sub(1))
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            write!(f, "\n    {src}\n    {pad}^")?;
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
