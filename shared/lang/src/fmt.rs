//! The canonical `.stm` layout (harel 0.9.0's `harel/fmt.py`, the language's `gofmt`).
//!
//! Like harel's, this is a reindenter, not a reflow: each line keeps its content and
//! its place, comments included; only its leading indentation (two spaces per open
//! `{`, `[` or `(`), its trailing whitespace and runs of blank lines (collapsed to one,
//! none at either end) change. A block an author wrote on one line stays on one line.
//! Reflowing would give one layout for every way of writing a machine, but it would
//! have to place comments itself and would part from harel's output on every file.
//!
//! Two differences from harel's `format_text`, both where harel's would change the
//! machine: lines end at `\n` only (Python's `splitlines` also breaks at `\r`, `\x0c`,
//! `\u2028`..., which the grammar reads inside a comment or a string, so harel's could
//! turn the rest of a comment into code), and only the grammar's whitespace (space,
//! tab, `\r`) is trimmed. On every file made of ordinary lines the output is harel's.
//!
//! [`format()`] is the safe entry point: it refuses text that does not parse (with the
//! parser's located error) and checks that the formatted text parses to the same
//! program, positions aside, before handing it back.

use serde_json::Value;

use crate::error::{ErrorKind, LangError};
use crate::parser::{parse, Program};

/// Two spaces a level, as harel's formatter and the project's files indent.
const INDENT: &str = "  ";

/// Brackets on one trimmed line: `(opens, closes, leading_closes)`, ignoring those in a
/// string or a comment. `leading_closes` is the run of closing brackets before anything
/// else, so a line starting with `}` dedents itself.
fn scan(line: &str) -> (usize, usize, usize) {
    let (mut opens, mut closes, mut leading) = (0, 0, 0);
    let mut seen_other = false;
    let mut in_str = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if in_str {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_str = true;
                seen_other = true;
            }
            '#' => break,
            '/' if chars.peek() == Some(&'/') => break,
            '{' | '[' | '(' => {
                opens += 1;
                seen_other = true;
            }
            '}' | ']' | ')' => {
                closes += 1;
                if !seen_other {
                    leading += 1;
                }
            }
            c if c.is_whitespace() => {}
            _ => seen_other = true,
        }
    }
    (opens, closes, leading)
}

/// The grammar's whitespace (`WHITESPACE` in stm.pest), the only characters trimmed.
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r')
}

/// `src` reindented (see the module doc). Pure text: it neither needs nor checks that
/// `src` parses; [`format()`] does.
pub fn format_text(src: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut level: usize = 0;
    let mut pending_blank = false;
    for raw in src.split('\n') {
        let stripped = raw.trim_matches(is_blank);
        if stripped.is_empty() {
            // collapse runs, and none before the first line
            pending_blank = !out.is_empty();
            continue;
        }
        if pending_blank {
            out.push(String::new());
            pending_blank = false;
        }
        let (opens, closes, leading) = scan(stripped);
        let indent = level.saturating_sub(leading);
        out.push(format!("{}{stripped}", INDENT.repeat(indent)));
        level = (level + opens).saturating_sub(closes);
    }
    if out.is_empty() {
        return String::new();
    }
    let mut text = out.join("\n");
    text.push('\n');
    text
}

/// `src` (from `origin`) formatted, or the parser's located error when it does not
/// parse. The result is checked to parse to the same program as `src` (positions aside):
/// an error here would be a bug in the formatter, reported rather than written.
pub fn format(src: &str, origin: &str) -> Result<String, LangError> {
    let before = parse(src, origin)?;
    let out = format_text(src);
    let after = parse(&out, origin).map_err(|e| {
        LangError::new(
            ErrorKind::Semantic,
            origin,
            format!("the formatted text no longer parses (a formatter bug; file left as is): {e}"),
        )
    })?;
    if without_positions(before) != without_positions(after) {
        return Err(LangError::new(
            ErrorKind::Semantic,
            origin,
            "formatting would change the machine (a formatter bug; file left as is)",
        ));
    }
    Ok(out)
}

/// `program` with every source position removed: reindenting and dropping blank lines
/// move declarations, and nothing else may differ.
pub fn without_positions(mut program: Program) -> Program {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.shift_remove("__pos__");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    for import in &mut program.imports {
        import.pos = (0, 0);
    }
    program.positions.clear();
    for objects in [
        &mut program.guards,
        &mut program.events,
        &mut program.machines,
        &mut program.fragments,
    ] {
        for obj in objects.values_mut() {
            obj.shift_remove("__pos__");
            obj.values_mut().for_each(strip);
        }
    }
    program
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reindents_by_bracket_depth() {
        let src = "machine M {\ninitial A\n      state A {\non enter f\n}\n}\n";
        assert_eq!(
            format_text(src),
            "machine M {\n  initial A\n  state A {\n    on enter f\n  }\n}\n"
        );
    }

    #[test]
    fn brackets_in_strings_and_comments_do_not_count() {
        let src = "machine M { # a { in a comment\ninitial \"A{\" // and }\nstate \"A{\" {}\n}\n";
        assert_eq!(
            format_text(src),
            "machine M { # a { in a comment\n  initial \"A{\" // and }\n  state \"A{\" {}\n}\n"
        );
    }

    #[test]
    fn blank_lines_collapse_and_trailing_space_goes() {
        let src = "\n\n# head  \n\n\n\nmachine M {   \n\tinitial A\n\n\n  state A {}\n}\n\n\n";
        assert_eq!(
            format_text(src),
            "# head\n\nmachine M {\n  initial A\n\n  state A {}\n}\n"
        );
    }

    #[test]
    fn a_line_of_closers_dedents_by_its_leading_run() {
        let src = "machine M {\ninitial A\nstate A {\nstate B {\non enter f } }\n}\n";
        // `on enter f } }` starts with a word: it is indented at its depth, then closes two
        assert_eq!(
            format_text(src),
            "machine M {\n  initial A\n  state A {\n    state B {\n      on enter f } }\n}\n"
        );
        assert_eq!(format_text("a {\nb {\n} }\nc\n"), "a {\n  b {\n} }\nc\n");
    }

    #[test]
    fn a_comment_after_a_carriage_return_stays_a_comment() {
        // harel's splitlines would make `initial B` a line of code
        let src = "machine M {\n  initial A # note\rinitial B\n  state A {}\n}\n";
        let out = format(src, "t.stm").expect("formats");
        assert_eq!(out, src);
    }

    #[test]
    fn empty_and_blank_input_formats_to_nothing() {
        assert_eq!(format_text(""), "");
        assert_eq!(format_text("\n \n\t\n"), "");
    }

    #[test]
    fn a_file_that_does_not_parse_is_refused_with_its_location() {
        let err = format("machine M {\n  initial\n}\n", "bad.stm").expect_err("refused");
        assert_eq!(err.kind, ErrorKind::Syntax);
        assert_eq!(err.pos.map(|p| p.0), Some(3));
        assert!(err.to_string().starts_with("bad.stm:3:"), "{err}");
    }
}
