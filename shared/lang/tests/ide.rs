//! `harel_lang::ide`, what `harel lsp` answers with: diagnostics as `harel validate` finds
//! them, symbols across imports, and what the cursor is on.

use std::path::Path;

use harel_lang::ide::{self, SymbolKind};
use harel_lang::Severity;

mod common;

fn fixture(rel: &str) -> (std::path::PathBuf, String) {
    let path = common::manifest_dir().join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
    (path, text)
}

/// 0-based (line, column) of the `nth` occurrence of `needle` in `text`.
fn cursor(text: &str, needle: &str, nth: usize) -> (usize, usize) {
    let mut seen = 0;
    for (i, line) in text.split('\n').enumerate() {
        for (b, _) in line.match_indices(needle) {
            if seen == nth {
                return (i, line[..b].chars().count());
            }
            seen += 1;
        }
    }
    panic!("`{needle}` #{nth} not in the text");
}

#[test]
fn a_syntax_error_is_one_located_diagnostic() {
    let text = "machine M {\n  initial A\n  state A { on enter }\n}\n";
    let diags = ide::analyze(text, Some(Path::new("m.stm")));
    assert_eq!(diags.len(), 1, "{diags:?}");
    let d = &diags[0];
    let err = harel_lang::parse(text, "m.stm").expect_err("does not parse");
    assert_eq!((d.line, d.column), err.pos.expect("located"));
    assert_eq!(d.severity, Severity::Error);
    assert_eq!(d.code, None);
    assert!(d.message.starts_with(&err.message), "{}", d.message);
    assert_eq!(d.end_line, d.line);
    assert!(d.end_column > d.column);
}

#[test]
fn validation_issues_are_at_their_state_with_validates_codes_and_messages() {
    let (path, text) = fixture("tests/validate/structure.stm");
    let diags = ide::analyze(&text, Some(&path));
    let defn = harel_lang::load_file(&path, Some("Structure")).expect("loads");
    let issues = harel_lang::validate(&defn);
    assert_eq!(diags.len(), issues.len());
    for (d, issue) in diags.iter().zip(&issues) {
        assert_eq!(d.code, Some(issue.code));
        assert_eq!(d.severity, issue.severity);
        assert!(d
            .message
            .starts_with(&format!("{}: {}", issue.code, issue.message)));
    }
    // `timeout_malformed at Bad.P`: the line declaring P
    let p = diags
        .iter()
        .find(|d| d.code == Some("timeout_malformed"))
        .expect("timeout_malformed");
    let (line, col) = cursor(&text, "state P", 0);
    assert_eq!((p.line, p.column), (line + 1, col + 1));
}

#[test]
fn an_unbound_handler_is_the_loaders_error_at_the_machine() {
    let text = "machine M {\n  initial A\n  state A { on enter charge }\n}\n";
    let diags = ide::analyze(text, None);
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!((diags[0].line, diags[0].column), (1, 1));
    assert!(
        diags[0].message.contains("unbound action handlers: charge"),
        "{}",
        diags[0].message
    );
    assert!(
        diags[0].message.contains("\nhint: "),
        "{}",
        diags[0].message
    );
}

#[test]
fn what_the_cursor_is_on_and_what_the_keyword_before_it_expects() {
    let text = "machine M {\n  from \"Place Order\" to B on Go | Stop where ok set context.n = 1\n  state X { on enter notify }\n}\n";
    let at = |needle: &str| {
        let (l, c) = cursor(text, needle, 0);
        ide::word_at(text, l, c + 1).expect("a word")
    };
    let quoted = at("Place");
    assert_eq!(
        (quoted.word.as_str(), quoted.kind),
        ("Place Order", Some(SymbolKind::State))
    );
    assert_eq!(at("B on").kind, Some(SymbolKind::State));
    assert_eq!(at("Go").kind, Some(SymbolKind::Event));
    assert_eq!(at("Stop").kind, Some(SymbolKind::Event));
    assert_eq!(at("ok").kind, Some(SymbolKind::Guard));
    assert_eq!(at("notify").kind, Some(SymbolKind::Action));
    let ctx = at("context.n");
    assert_eq!(ctx.word, "context.n");
    // completion right after a keyword, on no word yet
    let (l, c) = cursor(text, "Go", 0);
    assert_eq!(ide::category_at(text, l, c), Some(SymbolKind::Event));
    assert_eq!(
        ide::category_at("  where context.am", 0, 18),
        Some(SymbolKind::Context)
    );
    // a comment is not a reference
    assert_eq!(ide::word_at("  # state A", 0, 10), None);
}

#[test]
fn imports_bring_their_declarations_with_their_file() {
    let (path, text) = fixture("tests/fragments/imports.stm");
    let idx = ide::index(&text, Some(&path));
    let shared = std::fs::canonicalize(path.parent().unwrap().join("lib/shared.stm")).unwrap();
    let steps = std::fs::canonicalize(path.parent().unwrap().join("lib/steps.stm")).unwrap();

    let approve = idx
        .lookup("Approve", Some(SymbolKind::Event))
        .expect("Approve");
    assert_eq!(approve.file.as_deref(), Some(shared.as_path()));
    assert_eq!(
        (approve.line, approve.detail.as_str()),
        (2, "**event Approve**\n\nfields: by: string")
    );
    let review = idx
        .lookup("steps.Review", Some(SymbolKind::Fragment))
        .expect("steps.Review");
    assert_eq!(review.file.as_deref(), Some(steps.as_path()));
    assert_eq!(
        review.detail,
        "**fragment Review**(approved: state, rejected: state)"
    );
    let stamp = idx
        .lookup("stamp", Some(SymbolKind::Action))
        .expect("stamp");
    assert_eq!(stamp.file.as_deref(), Some(shared.as_path()));
    assert_eq!(stamp.detail, "**action stamp** = `pkg.audit.stamp`");
    let signed = idx
        .lookup("signed", Some(SymbolKind::Guard))
        .expect("signed");
    assert!(
        signed.detail.starts_with("**guard signed**"),
        "{}",
        signed.detail
    );
    // the local declaration is in the document itself
    let submit = idx
        .lookup("Submit", Some(SymbolKind::Event))
        .expect("Submit");
    assert_eq!(submit.file, None);

    // a state spliced from an imported fragment points into that fragment's file
    let published = idx
        .lookup("Published", Some(SymbolKind::State))
        .expect("Published");
    assert_eq!(published.file, None);
    assert!(
        published.detail.contains("on enter: `pkg.audit.stamp`"),
        "{}",
        published.detail
    );
}

#[test]
fn a_state_reference_resolves_from_its_scope() {
    let text = "\
machine M {
  initial A
  state A {
    initial X
    state X {}
    state Y {}
    from X to Y
  }
  state B {
    initial Y
    state Y {}
  }
  from A to B
}
";
    let idx = ide::index(text, None);
    let (l, c) = cursor(text, "to Y", 0);
    let at = ide::word_at(text, l, c + 3).expect("Y");
    let target = ide::resolve(&idx, text, &at).expect("resolves");
    assert_eq!((target.line, target.column), (6, 11), "A's Y, not B's");
    assert!(target.detail.starts_with("**state Y** (State)"));
}

#[test]
fn context_fields_complete_even_mid_edit() {
    let text = "machine M {\n  context { amount: float = 0\n  who: string? }\n  from A to B where context.";
    let idx = ide::index(text, None);
    let names: Vec<&str> = idx
        .names(Some(SymbolKind::Context))
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(names, ["amount", "who"]);
}

#[test]
fn the_outline_nests_states_under_their_machine() {
    let (path, text) = fixture("tests/fragments/imports.stm");
    let idx = ide::index(&text, Some(&path));
    let outline = ide::outline(&idx);
    let names: Vec<&str> = outline.iter().map(|o| o.symbol.name.as_str()).collect();
    assert_eq!(names, ["Submit", "Imports"]);
    let states: Vec<&str> = outline[1]
        .children
        .iter()
        .map(|o| o.symbol.name.as_str())
        .collect();
    assert!(
        states.starts_with(&["Draft", "Published", "Archived"]),
        "{states:?}"
    );
}
