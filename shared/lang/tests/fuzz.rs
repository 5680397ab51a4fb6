//! The `.stm` front end on input nobody wrote by hand: the parser, the loader (imports
//! included), the validator, the renderers, the formatter and the language server's
//! analysis never panic and never hang
//! (each case under `harel_fuzzing`'s deadline, on a 2 MiB stack), and every refusal is
//! located: `file:line:col: message`, the line, a caret under the column (but for the
//! choice of machine: none declared, several and no name, which name the machines).
//!
//! Inputs: random bytes, soup of the grammar's tokens, and the real machines (examples/,
//! the differential corpus, this crate's corpus) mutated. The fast tier runs a few hundred
//! cases per property; `scripts/fuzz.sh` runs more.

use std::path::{Path, PathBuf};

use harel_fuzzing::strategies::{mutated, random_bytes, seeds_in, token_soup, Bytes};
use harel_fuzzing::{check, proptest::prelude::*};
use harel_lang::{load_text_with, parse, validate, ErrorKind, LangError, LoadOptions};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where a fuzzed text claims to live: the differential corpus's directory, so its
/// `import "lib/..."` lines resolve to the real fragment files.
fn origin() -> PathBuf {
    root().join("tests/differential/machines/fuzzed.stm")
}

/// The grammar's terminals (stm.pest), and a few names, strings and numbers to go with them.
const TOKENS: &[&str] = &[
    "import",
    "as",
    "bind",
    "guard",
    "event",
    "machine",
    "fragment",
    "final",
    "initial",
    "on",
    "enter",
    "exit",
    "activity",
    "timeout",
    "context",
    "ttl",
    "outcome",
    "carry",
    "defer",
    "no",
    "history",
    "cancel_on_failure",
    "invoke",
    "for",
    "in",
    "with",
    "use",
    "from",
    "to",
    "choose",
    "select",
    "join",
    "all",
    "any",
    "else",
    "returns",
    "when",
    "set",
    "where",
    "or",
    "and",
    "not",
    "state",
    "orthogonal",
    "action",
    "value",
    "string",
    "int",
    "float",
    "bool",
    "true",
    "false",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "=",
    ":",
    ",",
    ".",
    "|",
    "?",
    "+",
    "-",
    "*",
    "/",
    "==",
    "!=",
    "<=",
    ">=",
    "<",
    ">",
    "#",
    "//",
    "\"",
    "\"x\"",
    "\"a\\\"b\"",
    "A",
    "B",
    "Idle",
    "Go",
    "M",
    "a.b",
    "ctx.n",
    "event.x",
    "data.amount",
    "1",
    "0",
    "-3",
    "2.5",
    "1e9",
    "99999999999999999999",
    "\"lib/gate.stm\"",
    "\"fuzzed.stm\"",
    "done",
    "failed",
];

fn seeds() -> Vec<Vec<u8>> {
    let mut seeds = seeds_in(&root().join("examples"), ".stm");
    seeds.extend(seeds_in(
        &root().join("tests/differential/machines"),
        ".stm",
    ));
    seeds.extend(seeds_in(&root().join("shared/lang/tests/corpus"), ".stm"));
    seeds
}

/// A refusal says where: `origin:line:col: message`, then the line, then a caret.
fn located(e: &LangError) -> Result<(), String> {
    let shown = e.to_string();
    let (Some((line, col)), Some(_)) = (e.pos, &e.source_line) else {
        return Err(format!("a refusal without a location: {shown}"));
    };
    let head = format!("{}:{line}:{col}: ", e.origin);
    let mut lines = shown.lines();
    if !lines.next().is_some_and(|l| l.starts_with(&head)) {
        return Err(format!(
            "the first line does not start with {head:?}: {shown}"
        ));
    }
    let source = lines.next().unwrap_or_default();
    let caret = lines.next().unwrap_or_default();
    if caret.trim() != "^" {
        return Err(format!("no caret line: {shown}"));
    }
    // a long line is shown as a window around the caret, `…` where cut
    if source.chars().count() > "    ".len() + harel_lang::error::LINE_SHOWN + 2 {
        return Err(format!("the line is shown whole: {} chars", source.len()));
    }
    Ok(())
}

/// Everything the front end does with a text: parse, load, validate, render, format. Each
/// refusal must be located.
fn front_end(text: String) -> Result<(), String> {
    let path = origin();
    let shown = path.display().to_string();
    let parsed = parse(&text, &shown);
    if let Err(e) = &parsed {
        located(e)?;
    }
    // each machine by name (two at most), so a file of several is loaded, not refused for
    // it; harel's strict check of unbound handlers or our leniency, by the input's length
    // (both are covered over the cases, at the cost of one load per machine)
    let names: Vec<Option<String>> = match &parsed {
        Ok(program) if program.machines.len() > 1 => {
            program.machines.keys().take(2).cloned().map(Some).collect()
        }
        _ => vec![None],
    };
    let options = LoadOptions {
        allow_unbound_actions: text.len() % 2 == 1,
        ..LoadOptions::default()
    };
    for name in &names {
        match load_text_with(&text, &path, name.as_deref(), &options) {
            Ok(loaded) => {
                validate(&loaded.definition);
                let _ = harel_lang::render::plantuml::render(&loaded.definition);
                let _ = harel_lang::render::mermaid::render(&loaded.definition);
            }
            // which machine (none declared, several): the caller's choice, named
            Err(e) if e.kind == ErrorKind::Selection => {}
            Err(e) => located(&e)?,
        }
    }
    if parsed.is_ok() {
        harel_lang::fmt::format(&text, &shown).map_err(|e| format!("fmt: {e}"))?;
    }
    Ok(())
}

/// An editor's buffer: the language server's diagnostics and symbols.
fn editor(text: String) -> Result<(), String> {
    let path = origin();
    harel_lang::ide::analyze(&text, Some(&path));
    harel_lang::ide::index(&text, Some(&path));
    Ok(())
}

#[test]
fn random_bytes_are_refused_with_a_location() {
    check("stm random bytes", 300, random_bytes(200), |b: Bytes| {
        front_end(b.text())
    });
}

#[test]
fn token_soup_is_refused_or_loaded() {
    check("stm token soup", 300, token_soup(TOKENS, 60), front_end);
}

#[test]
fn mutated_machines_are_refused_or_loaded() {
    check(
        "stm mutated machines",
        300,
        mutated(seeds(), TOKENS, 6, 64),
        |b: Bytes| front_end(b.text()),
    );
}

#[test]
fn mutated_machines_in_an_editor_are_analyzed() {
    check(
        "stm mutated machines in the language server",
        200,
        mutated(seeds(), TOKENS, 6, 64),
        |b: Bytes| editor(b.text()),
    );
}

#[test]
fn a_machine_with_soup_inside_is_refused_or_loaded() {
    // soup between a machine's braces: the item rules rather than the top level's
    let strategy = token_soup(TOKENS, 40)
        .prop_map(|soup| format!("machine M {{\n  initial A\n  state A {{ {soup} }}\n}}\n"));
    check("stm soup in a machine", 300, strategy, front_end);
}

// --- pathological inputs: nesting, long lines, sheer size --------------------------------

/// `front_end` on `text` under the case deadline, on the case stack.
fn survives(what: &str, text: String) {
    let buffer = text.clone();
    match harel_fuzzing::within(harel_fuzzing::CASE_DEADLINE, move || editor(buffer)) {
        Ok(Ok(())) => {}
        Ok(Err(why)) => panic!("{what} in an editor: {why}"),
        Err(failure) => panic!("{what} in an editor: {failure}"),
    }
    match harel_fuzzing::within(harel_fuzzing::CASE_DEADLINE, move || front_end(text)) {
        Ok(Ok(())) => {}
        Ok(Err(why)) => panic!("{what}: {why}"),
        Err(failure) => panic!("{what}: {failure}"),
    }
}

/// Found by this file: 128 nested states, or 64 nested inline invokes, overflowed a 2 MiB
/// stack in pest's recursion (an abort, not an error). Deeper than 64 levels is refused,
/// located at the opener; up to it, the whole front end runs on such a stack.
#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let deep = |n: usize| {
        let states = format!(
            "machine M {{\n initial S0\n{}{}\n}}\n",
            (0..n)
                .map(|i| format!("state S{i} {{ initial S{} ", i + 1))
                .collect::<String>()
                + &format!("state S{n} {{}}"),
            "}".repeat(n)
        );
        let invokes = format!(
            "machine M {{ initial A state A {{ {}{} }} }}\n",
            "invoke { initial A state A { ".repeat(n / 2),
            "} }".repeat(n / 2)
        );
        let list = format!(
            "machine M {{ context {{ x: any = {}1{} }} initial A state A {{}} }}\n",
            "[".repeat(n),
            "]".repeat(n)
        );
        let parens = format!(
            "machine M {{ initial A state A {{}} from A to A on E where {}x == 1{} }}\n",
            "(".repeat(n),
            ")".repeat(n)
        );
        let nots = format!(
            "machine M {{ initial A state A {{}} from A to A on E where {} x == 1 }}\n",
            "not ".repeat(n)
        );
        [
            ("nested states", states),
            ("nested inline invokes", invokes),
            ("nested lists", list),
            ("nested parentheses", parens),
            ("a chain of not", nots),
        ]
    };
    // at the limit (the machine's brace is a level): loaded
    for (what, text) in deep(62) {
        let (outcome, text) = harel_fuzzing::within(harel_fuzzing::CASE_DEADLINE, move || {
            (
                harel_lang::load_str(&text, None, "deep.stm").map(|_| ()),
                text,
            )
        })
        .unwrap_or_else(|f| panic!("{what} at the limit: {f}"));
        if let Err(e) = outcome {
            // only the nesting matters here: `E` and `x` are undeclared on purpose
            assert!(
                !e.message.contains("nested more than"),
                "{what}: {e}\n{text}"
            );
        }
        survives(what, text);
    }
    // far past it: refused where it goes past, quickly
    for (what, text) in deep(10_000) {
        let parsed = text.clone();
        let e = harel_fuzzing::within(harel_fuzzing::CASE_DEADLINE, move || {
            harel_lang::parse(&parsed, "deep.stm").map(|_| ())
        })
        .unwrap_or_else(|f| panic!("{what}: {f}"))
        .expect_err(what);
        assert!(
            e.message.contains("nested more than 64 levels deep"),
            "{what}: {e}"
        );
        located(&e).unwrap_or_else(|why| panic!("{what}: {why}"));
        survives(what, text);
    }
}

/// A generated file's one long line: a refusal on it is shown as a window around the caret
/// with `…` at each cut, not 100 KB of text (`located` bounds the line shown).
#[test]
fn a_refusal_on_a_long_line_shows_a_window_around_the_caret() {
    let pad = "p".repeat(50_000);
    let cases = [
        // a syntax error in the middle of the line
        format!("machine M {{ context {{ pad: string = \"{pad}\" }} initial A state A {{}} ! }} # {pad}\n"),
        // a semantic one: a transition to a state nobody declared
        format!("machine M {{ context {{ pad: string = \"{pad}\" }} initial A state A {{}} from A to Nowhere on Go }} # {pad}\n"),
    ];
    for text in cases {
        assert!(text.len() > 100_000, "{}", text.len());
        let shown = harel_fuzzing::within(harel_fuzzing::CASE_DEADLINE, move || {
            let e = harel_lang::load_str(&text, None, "long.stm").expect_err("refused");
            located(&e).map(|()| e.to_string())
        })
        .unwrap_or_else(|f| panic!("{f}"))
        .unwrap_or_else(|why| panic!("{why}"));
        let lines: Vec<&str> = shown.lines().collect();
        assert!(
            lines[1].starts_with("    …") && lines[1].ends_with('…'),
            "{shown}"
        );
        assert!(shown.len() < 2_000, "{} bytes shown:\n{shown}", shown.len());
    }
}

/// Found by the long-line test: the transformer asked pest for each declaration's
/// `line_col`, which counts from the text's start, so parsing took time quadratic in the
/// file's size (4,000 states: 6 s; 8,000: 25 s). Positions now come from a line index.
#[test]
fn a_large_file_parses_in_time_linear_in_its_size() {
    let states: String = (0..4_000).map(|i| format!("  state S{i} {{}}\n")).collect();
    let one_line = states.replace('\n', " ");
    for body in [states, one_line] {
        let text = format!("machine M {{\n  initial S0\n{body}}}\n");
        let parsed = harel_fuzzing::within(harel_fuzzing::CASE_DEADLINE, move || {
            harel_lang::parse(&text, "large.stm").map(|p| p.machines.len())
        });
        assert_eq!(parsed, Ok(Ok(1)));
    }
}
